// Running a collective (collectives.h): plan (the tuner's choice where the caller allowed a
// lossy format), then the chosen row.
#include "collectives/collectives.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <vector>

#include "collectives/cost_model.h"
#include "collectives/planner.h"
#include "collectives/tuner.h"
#include "common/log.h"

namespace zccl {
namespace {

// The native algorithm on an engine that has no collectives of its own (UCX): zccl's own,
// said once.
CollectiveOptions withoutNative(const Context& ctx, const CollectiveOptions& options) {
  if (options.algorithm != Algorithm::kNative || ctx.transport.engineCollectives() != nullptr) {
    return options;
  }
  static std::atomic<bool> said{false};
  if (!said.exchange(true)) {
    ZCCL_LOG(kInfo,
             "ZCCL_ALGO=native: this transport has no collectives of its own; zccl's "
             "algorithms run instead");
  }
  CollectiveOptions own = options;
  own.algorithm = Algorithm::kAuto;
  return own;
}

Status noAlgorithm(const Context& ctx, Collective collective, const CollectiveArgs& args) {
  return fail(Status::kInvalidUsage, "no algorithm runs %s of %s on %s memory",
              collectiveName(collective), dataTypeName(args.type),
              ctx.memory() == MemoryKind::kHost ? "host" : "device");
}

// The slowest rank's time of each candidate (collective over the call's transport).
Status slowestRanks(Transport& transport, std::vector<double>* seconds) {
  const size_t count = seconds->size();
  std::vector<double> all(count * static_cast<size_t>(transport.size()));
  ZCCL_CHECK(transport.allGatherControl(seconds->data(), count * sizeof(double), all.data()));
  for (size_t r = 0; r < all.size() / count; ++r) {
    for (size_t i = 0; i < count; ++i) (*seconds)[i] = std::max((*seconds)[i], all[r * count + i]);
  }
  return Status::kSuccess;
}

// A call whose candidate paths the tuner times: the caller allowed a lossy format, on host
// memory, with the cost model's choice open.
bool tuned(const Context& ctx, Collective collective, const CollectiveArgs& args,
           const CollectiveOptions& options) {
  return ctx.tuner != nullptr && ctx.cluster != nullptr && ctx.memory() == MemoryKind::kHost &&
         options.algorithm == Algorithm::kAuto && options.wireAllowedOnly &&
         wireApplies(collective, args.type, args.op);
}

Status runTuned(Context& ctx, Collective collective, const CollectiveArgs& args,
                const CollectiveOptions& options, size_t bytes) {
  ClusterModel model = *ctx.cluster;
  model.uniform = model.uniform && ctx.levels != nullptr;
  const Candidates candidates =
      candidatePlans(model, collective, args.type, args.op, bytes, options, ctx.memory());
  const uint64_t key = PlanTuner::keyOf(collective, args.type, args.op, bytes);
  const PlanTuner::Choice choice = ctx.tuner->choose(key, candidates);
  if (choice.plan.row == nullptr) return noAlgorithm(ctx, collective, args);
  if (ctx.ran != nullptr) *ctx.ran = choice.plan;
  if (choice.trial < 0) return choice.plan.row->run(ctx, args, choice.plan);
  const auto start = std::chrono::steady_clock::now();
  ZCCL_CHECK(choice.plan.row->run(ctx, args, choice.plan));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ctx.tuner->finishTrial(
      key, seconds, [&](std::vector<double>* times) { return slowestRanks(ctx.transport, times); });
}

}  // namespace

Status runCollective(Context& ctx, Collective collective, const CollectiveArgs& args,
                     const CollectiveOptions& requested) {
  const CollectiveOptions options = withoutNative(ctx, requested);
  const size_t bytes = args.blocks.count * elementSize(args.type);
  if (tuned(ctx, collective, args, options)) return runTuned(ctx, collective, args, options, bytes);
  const Plan plan = planCollective(collective, args.type, args.op, bytes, options, ctx.levels,
                                   ctx.cluster, ctx.memory());
  if (plan.row == nullptr) return noAlgorithm(ctx, collective, args);
  if (ctx.ran != nullptr) *ctx.ran = plan;
  return plan.row->run(ctx, args, plan);
}

}  // namespace zccl
