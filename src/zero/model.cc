// The parts of the model interface (zero.hpp) that every model shares: its size and the
// loss the optimizer trains with.
#include <algorithm>
#include <cmath>
#include <string>

#include "zccl/zero.hpp"
#include "zero/working_math.h"

namespace zccl::zero {

namespace {

// Whether [offset, offset + count) lies within `size` elements. The first span that does not
// is kept in *error.
bool spanFits(const char* what, size_t offset, size_t count, size_t size, std::string* error) {
  if (offset <= size && count <= size - offset) return true;
  if (error->empty()) {
    *error = std::string(what) + " [" + std::to_string(offset) + ", " +
             std::to_string(offset + count) + ") of " + std::to_string(size) + " elements";
  }
  return false;
}

}  // namespace

const void* Weights::span(size_t offset, size_t count) const {
  if (!spanFits("read weights", offset, count, count_, &error_)) return nullptr;
  return static_cast<const unsigned char*>(values_) + offset * elementSize(precision_);
}

const float* Weights::read(size_t offset, size_t count, std::vector<float>* scratch) const {
  const void* at = span(offset, count);
  if (at == nullptr) {
    scratch->assign(count, 0.0f);
    return scratch->data();
  }
  if (precision_ == Precision::kFloat32) return static_cast<const float*>(at);
  scratch->resize(count);
  fromWorking(precision_, at, count, scratch->data());
  return scratch->data();
}

void* Gradients::span(size_t offset, size_t count) {
  if (!spanFits("wrote gradients", offset, count, count_, &error_)) return nullptr;
  return static_cast<unsigned char*>(values_) + offset * elementSize(precision_);
}

void Gradients::write(size_t offset, size_t count, const float* values) {
  void* at = span(offset, count);
  if (at != nullptr) toWorking(precision_, values, count, at);
}

size_t Model::numParams() const {
  size_t total = 0;
  for (const auto& m : modules) total += m->numParams();
  return total;
}

double crossEntropy(const Tensor& logits, const std::vector<int>& targets, float scale,
                    Tensor* dlogits) {
  dlogits->resize(logits.rows, logits.cols);
  int counted = 0;
  for (int t : targets) counted += t >= 0 ? 1 : 0;
  double loss = 0;
  for (int r = 0; r < logits.rows; ++r) {
    if (targets[r] < 0) continue;
    const float* z = logits.row(r);
    const float top = *std::max_element(z, z + logits.cols);
    double sum = 0;
    for (int j = 0; j < logits.cols; ++j) sum += std::exp(static_cast<double>(z[j] - top));
    loss += std::log(sum) - (z[targets[r]] - top);
    for (int j = 0; j < logits.cols; ++j) {
      const double p = std::exp(static_cast<double>(z[j] - top)) / sum;
      dlogits->row(r)[j] =
          static_cast<float>((p - (j == targets[r] ? 1.0 : 0.0)) / counted * scale);
    }
  }
  return counted > 0 ? loss / counted : 0.0;
}

}  // namespace zccl::zero
