// zcclGroupStart / zcclGroupEnd state of the calling thread.
#pragma once

namespace zccl {

// True between zcclGroupStart and its matching zcclGroupEnd on this thread.
bool insideGroup();

}  // namespace zccl
