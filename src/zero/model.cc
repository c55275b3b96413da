// The parts of the model interface (zero.hpp) that every model shares: its size and the
// loss the optimizer trains with.
#include <algorithm>
#include <cmath>

#include "zccl/zero.hpp"

namespace zccl::zero {

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
