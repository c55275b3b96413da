// The collectives as core calls them: plan, then run the chosen registry row.
#pragma once

#include "collectives/context.h"
#include "collectives/paths.h"
#include "collectives/registry.h"

namespace zccl {

// Arguments are already validated (see CollectiveArgs for the layout and in-place forms).
Status runCollective(Context& ctx, Collective collective, const CollectiveArgs& args,
                     const CollectiveOptions& options);

}  // namespace zccl
