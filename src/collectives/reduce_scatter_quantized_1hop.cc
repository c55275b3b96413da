// Quantized reduce-scatter in one hop (ZeRO++ qgZ without hierarchy): each rank quantizes
// block j of its input for rank j and sends it straight there (an all-to-all of messages),
// then dequantizes the copies of its own block and sums them in float32: its own contribution
// (unquantized) first, then the others in the order they arrive (peer me - 1 sends to me
// first). Each contribution is quantized exactly once.
//
// Pipelined in rows of chunks (PipelineRows): row c + 1 is quantized and sent before row c is
// summed and stored, so that the link carries one row while the CPU works on another. As in
// the two-hop form, each row's receives are posted before any wait that could need them, in
// the same row on every rank (the NCCL transport launches what was posted at each wait).
#include <vector>

#include "collectives/algorithms.h"
#include "collectives/quantized.h"

namespace zccl {
namespace {

class QuantizedOneHop {
 public:
  QuantizedOneHop(Context& ctx, const CollectiveArgs& a, const Plan& plan)
      : ctx_(ctx),
        t_(ctx.transport),
        a_(a),
        params_(plan.quant),
        n_(t_.size()),
        me_(t_.rank()),
        mine_(a.blocks.size(me_)),
        rows_(a.blocks, plan.quant, ctx.kernels),
        sender_(senderParams(plan.quant, me_, 1)),
        arrivals_(2 * static_cast<size_t>(n_)) {}

  Status run() {
    size_t outbox = 0;
    for (int peer = 0; peer < n_; ++peer) {
      sendAt_.push_back(outbox);
      if (peer != me_) outbox += rows_.blockBytes(a_.blocks.size(peer));
    }
    void* buffers[3];
    if (ctx_.residual.values != nullptr) {
      void* work = nullptr;
      ZCCL_CHECK(ctx_.scratch.get(
          kScratchFeedback, std::min(rows_.chunk(), a_.blocks.largest()) * sizeof(float), &work));
      work_ = static_cast<float*>(work);
    }
    ZCCL_CHECK(ctx_.scratch.get(kScratchQuantizedSend, outbox, &buffers[0]));
    ZCCL_CHECK(
        ctx_.scratch.get(kScratchQuantizedReceive, rows_.blockBytes(mine_) * n_, &buffers[1]));
    ZCCL_CHECK(ctx_.scratch.get(kScratchAccumulate, std::min(rows_.chunk(), mine_) * sizeof(float),
                                &buffers[2]));
    outbox_ = static_cast<char*>(buffers[0]);
    inbox_ = static_cast<char*>(buffers[1]);
    acc_ = static_cast<float*>(buffers[2]);
    if (rows_.rows() > 0) ZCCL_CHECK(sendRow(0));
    for (size_t row = 0; row < rows_.rows(); ++row) {
      if (row + 1 < rows_.rows()) ZCCL_CHECK(sendRow(row + 1));
      ZCCL_CHECK(sumRow(row));
    }
    return t_.waitAll();
  }

 private:
  int sender(int distance) const { return (me_ - distance + n_) % n_; }
  char* received(int peer, size_t row) const {
    return inbox_ + peer * rows_.blockBytes(mine_) + rows_.chunkOffset(row);
  }
  Ticket& arrival(size_t row, int distance) {
    return arrivals_[(row % 2) * static_cast<size_t>(n_) + distance];
  }

  Status sendRow(size_t row) {
    const size_t count = rows_.chunkSize(mine_, row);
    for (int distance = 1; distance < n_ && count > 0; ++distance) {
      ZCCL_CHECK(t_.postRecv(received(sender(distance), row), messageBytes(count, params_),
                             sender(distance), ctx_.tag, &arrival(row, distance)));
    }
    const QuantParams params = chunkParams(sender_, row);
    for (int distance = 1; distance < n_; ++distance) {
      const int peer = (me_ + distance) % n_;  // each message leaves as soon as it is quantized
      const size_t chunk = rows_.chunkSize(a_.blocks.size(peer), row);
      if (chunk == 0) continue;
      char* message = outbox_ + sendAt_[static_cast<size_t>(peer)] + rows_.chunkOffset(row);
      ZCCL_CHECK(quantizeWithFeedback(ctx_.kernels, input(peer, row), a_.type, chunk, params,
                                      message, messageBytes(chunk, params_), residual(peer, row),
                                      work_));
      Ticket ticket;
      ZCCL_CHECK(t_.postSend(message, messageBytes(chunk, params_), peer, ctx_.tag, &ticket));
    }
    return Status::kSuccess;
  }

  // Sums row `row` of my block and stores it: the input it overwrites, when the call is in
  // place, is my own block's, read here first.
  Status sumRow(size_t row) {
    const size_t count = rows_.chunkSize(mine_, row);
    if (count == 0) return Status::kSuccess;
    ZCCL_CHECK(ctx_.kernels.convertToFloat(input(me_, row), a_.type, count, acc_));
    for (int distance = 1; distance < n_; ++distance) {
      ZCCL_CHECK(t_.wait(arrival(row, distance)));
      ZCCL_CHECK(ctx_.kernels.dequantizeAccumulate(
          received(sender(distance), row), messageBytes(count, params_), params_, acc_, count));
    }
    return ctx_.kernels.storeFloatAs(
        acc_, count, a_.op == RedOp::kAvg ? n_ : 1, a_.type,
        static_cast<char*>(a_.recv) + row * rows_.chunk() * elementSize(a_.type));
  }

  const char* input(int owner, size_t row) const {
    return static_cast<const char*>(a_.send) +
           (a_.blocks.offset(owner) + row * rows_.chunk()) * elementSize(a_.type);
  }
  // The error feedback of that input chunk (no values without feedback).
  Residuals residual(int owner, size_t row) const {
    return ctx_.residual.at(a_.blocks.offset(owner) + row * rows_.chunk(),
                            static_cast<size_t>(owner));
  }

  Context& ctx_;
  Transport& t_;
  const CollectiveArgs& a_;
  const QuantParams& params_;
  const int n_;
  const int me_;
  const size_t mine_;
  const PipelineRows rows_;
  const QuantParams sender_;
  std::vector<Ticket> arrivals_;  // receives of two rows in flight, by distance
  std::vector<size_t> sendAt_;    // where each peer's chunk messages start in the outbox
  char* outbox_ = nullptr;
  char* inbox_ = nullptr;
  float* acc_ = nullptr;   // the row being summed
  float* work_ = nullptr;  // a chunk compensated by its error feedback
};

Status reduceScatterQuantized1Hop(Context& ctx, const CollectiveArgs& a, const Plan& plan) {
  return QuantizedOneHop(ctx, a, plan).run();
}

}  // namespace

extern const AlgorithmRow kReduceScatterQuantized1Hop =
    AlgorithmRow::of(Collective::kReduceScatter, Algorithm::kDirect, reduceScatterQuantized1Hop)
        .quantizedWire()
        .foldsInRankOrder()
        .costs(reduceScatterDirectCost);

}  // namespace zccl
