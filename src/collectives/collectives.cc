#include "collectives/collectives.h"

#include "collectives/planner.h"

namespace zccl {

Status runCollective(Context& ctx, Collective collective, const CollectiveArgs& args,
                     const CollectiveOptions& options) {
  const size_t bytes = args.blocks.count * elementSize(args.type);
  const Plan plan = planCollective(collective, args.type, args.op, bytes, options, ctx.levels,
                                   ctx.cluster, ctx.memory);
  if (plan.row == nullptr) {
    return fail(Status::kInvalidUsage, "no algorithm runs %s of %s on %s memory",
                collectiveName(collective), dataTypeName(args.type),
                ctx.memory == MemoryKind::kHost ? "host" : "device");
  }
  return plan.row->run(ctx, args, plan);
}

}  // namespace zccl
