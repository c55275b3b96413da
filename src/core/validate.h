// Argument checks shared by the C entry points. Each failure names the argument and value.
#pragma once

#include <cstddef>

#include "common/status.h"
#include "zccl/zccl.h"

namespace zccl {

Status checkType(zcclDataType_t type, const char* name = "datatype");
Status checkOp(zcclRedOp_t op);
// A stream (device memory) needs a device runtime.
Status checkStream(zcclStream_t stream);
Status checkBuffer(const char* name, const void* buffer, const char* countName, size_t count);
// Where a call's buffers must live: on the current device when `stream` is given, in host
// memory otherwise. `name` names the buffer in the error; a NULL buffer passes (its own
// check says what is wrong with it).
Status checkBufferMemory(const char* name, const void* buffer, void* stream);
Status checkPeer(const char* name, int peer, int ranks);
// count * multiplier * elementSize(type) fits in size_t; *bytes gets the product.
Status checkBytes(const char* name, size_t count, size_t multiplier, zcclDataType_t type,
                  size_t* bytes);
// Send [send, send+sendBytes) and receive [recv, recv+recvBytes) may only overlap as the
// in-place layout: send == recv + inPlaceOffset.
Status checkInPlace(const char* operation, const void* send, size_t sendBytes, const void* recv,
                    size_t recvBytes, ptrdiff_t inPlaceOffset, bool* inPlace);
// An options struct's header (size and magic) against what `initializer` writes.
Status checkHeader(const char* owner, unsigned magic, size_t size, unsigned wantMagic,
                   size_t wantSize, const char* initializer);

}  // namespace zccl
