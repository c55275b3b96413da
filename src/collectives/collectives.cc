#include "collectives/collectives.h"

#include <atomic>

#include "collectives/planner.h"
#include "common/log.h"

namespace zccl {
namespace {

// The native algorithm on an engine that has no collectives of its own (UCX): zccl's own,
// said once.
CollectiveOptions withoutNative(const Context& ctx, const CollectiveOptions& options) {
  if (options.algorithm != Algorithm::kNative || ctx.transport.hasNativeCollectives()) {
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

}  // namespace

Status runCollective(Context& ctx, Collective collective, const CollectiveArgs& args,
                     const CollectiveOptions& requested) {
  const CollectiveOptions options = withoutNative(ctx, requested);
  const size_t bytes = args.blocks.count * elementSize(args.type);
  const Plan plan = planCollective(collective, args.type, args.op, bytes, options, ctx.levels,
                                   ctx.cluster, ctx.memory());
  if (plan.row == nullptr) {
    return fail(Status::kInvalidUsage, "no algorithm runs %s of %s on %s memory",
                collectiveName(collective), dataTypeName(args.type),
                ctx.memory() == MemoryKind::kHost ? "host" : "device");
  }
  return plan.row->run(ctx, args, plan);
}

}  // namespace zccl
