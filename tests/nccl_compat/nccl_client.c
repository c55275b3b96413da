/*
 * A program written against NCCL's own header only (the CUDA toolkit's nccl.h, no zccl
 * header), which calls every entry point of the NCCL API that zccl's drop-in implements on
 * host buffers and checks each result against a reference computed here. Built three ways
 * (tests/CMakeLists.txt): linked to the drop-in through its libnccl.so name and started by
 * mpiexec (the first id travels by MPI_Bcast); the same without MPI, started by zcclrun (every
 * rank asks for the first id and gets the launcher's); and linked to the real libnccl, run
 * with LD_PRELOAD of the drop-in. Later ids travel by ncclBroadcast itself.
 *
 * With --device (built with CUDA's runtime), the collectives and the send/receive rings take
 * device buffers and a CUDA stream, as NCCL programs do: each rank on the GPU of its rank
 * modulo the GPUs visible (several ranks on one GPU go through zccl's staged backend), inputs
 * copied in and results copied out around the calls. Without a GPU it exits 77 (skipped).
 * The communicator, memory and error checks stay on host buffers with NULL streams.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, dup2, fileno */
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef NCCL_CLIENT_WITH_MPI
#include <mpi.h>
#endif
#ifdef NCCL_CLIENT_WITH_CUDA
#include <cuda_runtime.h>
#endif

static int myRank = 0;
static int worldSize = 1;
static int failures = 0;
/* --device: the collectives' buffers are on the GPU and the calls get this stream. */
static int onDevice = 0;
static void* stream = NULL; /* a cudaStream_t */

#define CHECK(call)                                                                      \
  do {                                                                                   \
    ncclResult_t checked = (call);                                                       \
    if (checked != ncclSuccess) {                                                        \
      fprintf(stderr, "rank %d: %s:%d: %s: %s: %s\n", myRank, __FILE__, __LINE__, #call, \
              ncclGetErrorString(checked), ncclGetLastError(NULL));                      \
      exit(1);                                                                           \
    }                                                                                    \
  } while (0)

#define EXPECT(condition, ...)                                         \
  do {                                                                 \
    if (!(condition)) {                                                \
      fprintf(stderr, "rank %d: %s:%d: ", myRank, __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                                    \
      fprintf(stderr, "\n");                                           \
      ++failures;                                                      \
    }                                                                  \
  } while (0)

/* The call fails with `expected` and its message names `mention`. */
#define EXPECT_ERROR(call, expected, mention)                                            \
  do {                                                                                   \
    ncclResult_t got = (call);                                                           \
    const char* message = ncclGetLastError(NULL);                                        \
    EXPECT(got == (expected) && message != NULL && strstr(message, (mention)) != NULL,   \
           "%s gave %d (%s), expected %d with a message naming \"%s\"", #call, (int)got, \
           message ? message : "(null)", (int)(expected), (mention));                    \
  } while (0)

#ifdef NCCL_CLIENT_WITH_CUDA
#define CUDA_CHECK(call)                                                             \
  do {                                                                               \
    cudaError_t checked = (call);                                                    \
    if (checked != cudaSuccess) {                                                    \
      fprintf(stderr, "rank %d: %s:%d: %s: %s\n", myRank, __FILE__, __LINE__, #call, \
              cudaGetErrorString(checked));                                          \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)
#endif

/* ---- where the calls' buffers live: the host buffers themselves, or device copies ---- */

/* The buffer a call writes, of `bytes`, read back into `host`: `host` itself, or device
 * memory. */
static void* callOutput(void* host, size_t bytes) {
  if (!onDevice) return host;
#ifdef NCCL_CLIENT_WITH_CUDA
  void* device = NULL;
  CUDA_CHECK(cudaMalloc(&device, bytes + 1));
  return device;
#else
  (void)bytes;
  return host;
#endif
}

/* The buffer a call takes, holding the `bytes` of `host`: `host` itself, or a device copy. */
static void* callBuffer(void* host, size_t bytes) {
  void* buffer = callOutput(host, bytes);
#ifdef NCCL_CLIENT_WITH_CUDA
  if (onDevice) {
    CUDA_CHECK(cudaMemcpyAsync(buffer, host, bytes, cudaMemcpyHostToDevice, (cudaStream_t)stream));
  }
#endif
  return buffer;
}

/* After the calls queued on the stream: `bytes` of the call's buffer back into `host`. */
static void readBack(void* host, const void* buffer, size_t bytes) {
  if (!onDevice) return;
#ifdef NCCL_CLIENT_WITH_CUDA
  CUDA_CHECK(cudaMemcpyAsync(host, buffer, bytes, cudaMemcpyDeviceToHost, (cudaStream_t)stream));
  CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
#else
  (void)host;
  (void)buffer;
  (void)bytes;
#endif
}

static void releaseCallBuffer(void* buffer) {
#ifdef NCCL_CLIENT_WITH_CUDA
  if (onDevice) CUDA_CHECK(cudaFree(buffer));
#else
  (void)buffer;
#endif
}

/* --device: this rank's GPU and stream; 0 where there is no GPU to run on. */
static int openDevice(void) {
#ifdef NCCL_CLIENT_WITH_CUDA
  int gpus = 0;
  if (cudaGetDeviceCount(&gpus) != cudaSuccess || gpus == 0) return 0;
  cudaStream_t created = NULL;
  CUDA_CHECK(cudaSetDevice(myRank % gpus));
  CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
  stream = created;
  onDevice = 1;
  return 1;
#else
  return 0;
#endif
}

/* ---- values: small integers, exact in every type, so references are exact ---- */

static size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

static int isUnsigned(ncclDataType_t type) {
  return type == ncclUint8 || type == ncclUint32 || type == ncclUint64;
}

static int isInteger(ncclDataType_t type) { return type <= ncclUint64; }

static uint16_t halfFromSmallInteger(int value) {
  if (value == 0) return 0;
  uint16_t sign = value < 0 ? 0x8000 : 0;
  unsigned magnitude = (unsigned)(value < 0 ? -value : value);
  int exponent = 0;
  while ((magnitude >> (exponent + 1)) != 0) ++exponent;
  unsigned mantissa = (magnitude << (10 - exponent)) & 0x3ffu;
  return (uint16_t)(sign | (unsigned)((exponent + 15) << 10) | mantissa);
}

static double halfToDouble(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f;
  double mantissa = bits & 0x3ff;
  double value = exponent == 0 ? mantissa / 1024.0 / 16384.0
                               : (1.0 + mantissa / 1024.0) * (double)(1 << exponent) / 32768.0;
  return (bits & 0x8000) ? -value : value;
}

static void store(ncclDataType_t type, void* buffer, size_t i, double value) {
  switch (type) {
    case ncclInt8:
      ((int8_t*)buffer)[i] = (int8_t)value;
      break;
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      ((uint8_t*)buffer)[i] = (uint8_t)value;
      break;
    case ncclInt32:
      ((int32_t*)buffer)[i] = (int32_t)value;
      break;
    case ncclUint32:
      ((uint32_t*)buffer)[i] = (uint32_t)value;
      break;
    case ncclInt64:
      ((int64_t*)buffer)[i] = (int64_t)value;
      break;
    case ncclUint64:
      ((uint64_t*)buffer)[i] = (uint64_t)value;
      break;
    case ncclFloat16:
      ((uint16_t*)buffer)[i] = halfFromSmallInteger((int)value);
      break;
    case ncclBfloat16: {
      float single = (float)value;
      uint32_t bits;
      memcpy(&bits, &single, sizeof(bits));
      ((uint16_t*)buffer)[i] = (uint16_t)(bits >> 16);
      break;
    }
    case ncclFloat32:
      ((float*)buffer)[i] = (float)value;
      break;
    default:
      ((double*)buffer)[i] = value;
      break;
  }
}

static double load(ncclDataType_t type, const void* buffer, size_t i) {
  switch (type) {
    case ncclInt8:
      return ((const int8_t*)buffer)[i];
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return ((const uint8_t*)buffer)[i];
    case ncclInt32:
      return ((const int32_t*)buffer)[i];
    case ncclUint32:
      return ((const uint32_t*)buffer)[i];
    case ncclInt64:
      return (double)((const int64_t*)buffer)[i];
    case ncclUint64:
      return (double)((const uint64_t*)buffer)[i];
    case ncclFloat16:
      return halfToDouble(((const uint16_t*)buffer)[i]);
    case ncclBfloat16: {
      uint32_t bits = (uint32_t)((const uint16_t*)buffer)[i] << 16;
      float single;
      memcpy(&single, &bits, sizeof(single));
      return single;
    }
    case ncclFloat32:
      return ((const float*)buffer)[i];
    default:
      return ((const double*)buffer)[i];
  }
}

/* Rank r's element i: small, signed where the type is; in {1, 2} for products. */
static double valueOf(ncclDataType_t type, ncclRedOp_t op, int rank, size_t i) {
  if (op == ncclProd) return (double)(1 + (rank + (int)i) % 2);
  int value = (int)(((size_t)rank * 7 + i * 3) % 23);
  return isUnsigned(type) || type >= ncclFloat8e4m3 ? value : value - 11;
}

static double reference(ncclDataType_t type, ncclRedOp_t op, size_t i) {
  double result = valueOf(type, op, 0, i);
  for (int r = 1; r < worldSize; ++r) {
    double v = valueOf(type, op, r, i);
    if (op == ncclSum || op == ncclAvg) result += v;
    if (op == ncclProd) result *= v;
    if (op == ncclMax && v > result) result = v;
    if (op == ncclMin && v < result) result = v;
  }
  if (op == ncclAvg) {
    result /= worldSize;
    if (isInteger(type)) result = (double)(long long)result; /* truncates, as C does */
  }
  return result;
}

static double tolerance(ncclDataType_t type, double expected) {
  double magnitude = expected < 0 ? -expected : expected;
  if (type == ncclFloat16) return magnitude / 1024.0;
  if (type == ncclBfloat16) return magnitude / 128.0;
  if (type == ncclFloat32) return magnitude * 1e-6;
  return 0;
}

static void* filled(ncclDataType_t type, ncclRedOp_t op, size_t count, int rank) {
  void* buffer = malloc(count * typeSize(type) + 1);
  for (size_t i = 0; i < count; ++i) store(type, buffer, i, valueOf(type, op, rank, i));
  return buffer;
}

static void expectReduced(ncclDataType_t type, ncclRedOp_t op, const void* result, size_t count,
                          size_t offset, const char* what) {
  int wrong = 0;
  for (size_t i = 0; i < count && wrong < 3; ++i) {
    double expected = reference(type, op, offset + i);
    double got = load(type, result, i);
    double difference = got - expected;
    if (difference < 0) difference = -difference;
    if (difference > tolerance(type, expected)) {
      EXPECT(0, "%s type %d op %d: element %zu is %g, expected %g", what, (int)type, (int)op,
             offset + i, got, expected);
      ++wrong;
    }
  }
}

/* ---- collectives ---- */

static const ncclDataType_t kTypes[] = {ncclInt8,    ncclUint8,   ncclInt32,   ncclUint32,
                                        ncclInt64,   ncclUint64,  ncclFloat16, ncclFloat32,
                                        ncclFloat64, ncclBfloat16};
static const int kNumTypes = sizeof(kTypes) / sizeof(kTypes[0]);

static void testAllReduce(ncclComm_t comm) {
  const size_t count = 1003; /* divides by no rank count */
  for (int t = 0; t < kNumTypes; ++t) {
    for (int op = ncclSum; op <= ncclAvg; ++op) {
      ncclDataType_t type = kTypes[t];
      const size_t bytes = count * typeSize(type);
      void* send = filled(type, (ncclRedOp_t)op, count, myRank);
      void* recv = malloc(bytes);
      void* callSend = callBuffer(send, bytes);
      void* callRecv = callOutput(recv, bytes);
      CHECK(ncclAllReduce(callSend, callRecv, count, type, (ncclRedOp_t)op, comm, stream));
      readBack(recv, callRecv, bytes);
      expectReduced(type, (ncclRedOp_t)op, recv, count, 0, "ncclAllReduce");
      CHECK(ncclAllReduce(callSend, callSend, count, type, (ncclRedOp_t)op, comm,
                          stream)); /* in place */
      readBack(send, callSend, bytes);
      expectReduced(type, (ncclRedOp_t)op, send, count, 0, "ncclAllReduce in place");
      releaseCallBuffer(callSend);
      releaseCallBuffer(callRecv);
      free(send);
      free(recv);
    }
  }
  /* The profiling name is the same function. */
  int one = 1, sum = 0;
  CHECK(pncclAllReduce(&one, &sum, 1, ncclInt32, ncclSum, comm, NULL));
  EXPECT(sum == worldSize, "pncclAllReduce: %d", sum);
}

static void testReduceScatter(ncclComm_t comm) {
  const size_t recvcount = 257;
  const ncclDataType_t types[] = {ncclFloat32, ncclBfloat16, ncclInt64, ncclUint8};
  for (int t = 0; t < 4; ++t) {
    for (int op = ncclSum; op <= ncclAvg; op += 2) { /* sum, max, avg */
      ncclDataType_t type = types[t];
      size_t total = recvcount * (size_t)worldSize;
      const size_t block = recvcount * typeSize(type);
      void* send = filled(type, (ncclRedOp_t)op, total, myRank);
      void* recv = malloc(block);
      void* callSend = callBuffer(send, total * typeSize(type));
      void* callRecv = callOutput(recv, block);
      CHECK(ncclReduceScatter(callSend, callRecv, recvcount, type, (ncclRedOp_t)op, comm, stream));
      readBack(recv, callRecv, block);
      expectReduced(type, (ncclRedOp_t)op, recv, recvcount, (size_t)myRank * recvcount,
                    "ncclReduceScatter");
      const size_t at = (size_t)myRank * block;
      CHECK(ncclReduceScatter(callSend, (char*)callSend + at, recvcount, type, (ncclRedOp_t)op,
                              comm, stream));
      readBack((char*)send + at, (char*)callSend + at, block);
      expectReduced(type, (ncclRedOp_t)op, (char*)send + at, recvcount, (size_t)myRank * recvcount,
                    "ncclReduceScatter in place");
      releaseCallBuffer(callSend);
      releaseCallBuffer(callRecv);
      free(send);
      free(recv);
    }
  }
}

static void expectGathered(ncclDataType_t type, const void* result, size_t count,
                           const char* what) {
  for (int r = 0; r < worldSize; ++r) {
    for (size_t i = 0; i < count; ++i) {
      double got = load(type, result, (size_t)r * count + i);
      double expected = valueOf(type, ncclSum, r, i);
      if (got != expected) {
        EXPECT(0, "%s type %d: block %d element %zu is %g, expected %g", what, (int)type, r, i, got,
               expected);
        return;
      }
    }
  }
}

static void testAllGather(ncclComm_t comm) {
  const size_t sendcount = 333;
  const ncclDataType_t types[] = {ncclFloat32, ncclBfloat16, ncclInt8, ncclFloat8e4m3};
  for (int t = 0; t < 4; ++t) {
    ncclDataType_t type = types[t];
    const size_t block = sendcount * typeSize(type), total = block * (size_t)worldSize;
    void* send = filled(type, ncclSum, sendcount, myRank);
    void* recv = malloc(total);
    void* callSend = callBuffer(send, block);
    void* callRecv = callOutput(recv, total);
    CHECK(ncclAllGather(callSend, callRecv, sendcount, type, comm, stream));
    readBack(recv, callRecv, total);
    expectGathered(type, recv, sendcount, "ncclAllGather");
    releaseCallBuffer(callRecv);
    memset(recv, 0, total);
    const size_t at = (size_t)myRank * block;
    memcpy((char*)recv + at, send, block);
    callRecv = callBuffer(recv, total);
    CHECK(ncclAllGather((char*)callRecv + at, callRecv, sendcount, type, comm,
                        stream)); /* in place */
    readBack(recv, callRecv, total);
    expectGathered(type, recv, sendcount, "ncclAllGather in place");
    releaseCallBuffer(callSend);
    releaseCallBuffer(callRecv);
    free(send);
    free(recv);
  }
}

static void testBroadcastAndReduce(ncclComm_t comm) {
  const size_t count = 1001;
  const size_t bytes = count * sizeof(double);
  for (int root = 0; root < worldSize; ++root) {
    double* data = filled(ncclFloat64, ncclSum, count, myRank);
    double* out = malloc(bytes);
    void* callData = callBuffer(data, bytes);
    void* callOut = callOutput(out, bytes);
    CHECK(ncclBroadcast(callData, callOut, count, ncclFloat64, root, comm, stream));
    readBack(out, callOut, bytes);
    for (size_t i = 0; i < count; ++i) {
      if (out[i] != valueOf(ncclFloat64, ncclSum, root, i)) {
        EXPECT(0, "ncclBroadcast root %d: element %zu is %g", root, i, out[i]);
        break;
      }
    }
    CHECK(ncclBcast(callData, count, ncclFloat64, root, comm, stream));
    readBack(data, callData, bytes);
    EXPECT(memcmp(data, out, bytes) == 0, "ncclBcast root %d differs", root);
    releaseCallBuffer(callData);
    releaseCallBuffer(callOut);
    free(data);
    for (int op = ncclSum; op <= ncclMax; op += 2) { /* sum, max */
      const size_t intBytes = count * sizeof(int32_t);
      int32_t* send = filled(ncclInt32, (ncclRedOp_t)op, count, myRank);
      int32_t* recv = malloc(intBytes);
      void* callSend = callBuffer(send, intBytes);
      void* callRecv = callOutput(recv, intBytes);
      CHECK(ncclReduce(callSend, callRecv, count, ncclInt32, (ncclRedOp_t)op, root, comm, stream));
      readBack(recv, callRecv, intBytes);
      if (myRank == root) expectReduced(ncclInt32, (ncclRedOp_t)op, recv, count, 0, "ncclReduce");
      CHECK(ncclReduce(callSend, callSend, count, ncclInt32, (ncclRedOp_t)op, root, comm, stream));
      readBack(send, callSend, intBytes);
      if (myRank == root) {
        expectReduced(ncclInt32, (ncclRedOp_t)op, send, count, 0, "ncclReduce in place");
      }
      releaseCallBuffer(callSend);
      releaseCallBuffer(callRecv);
      free(send);
      free(recv);
    }
    free(out);
  }
}

static void testAllToAllGatherScatter(ncclComm_t comm) {
  const size_t count = 65;
  const size_t total = count * (size_t)worldSize;
  const size_t totalBytes = total * sizeof(int64_t), blockBytes = count * sizeof(int64_t);
  /* Block b of rank r's input is valueOf(r, b * count + i). */
  int64_t* send = filled(ncclInt64, ncclSum, total, myRank);
  int64_t* recv = malloc(totalBytes);
  void* callSend = callBuffer(send, totalBytes);
  void* callRecv = callOutput(recv, totalBytes);
  CHECK(ncclAlltoAll(callSend, callRecv, count, ncclInt64, comm, stream));
  readBack(recv, callRecv, totalBytes);
  for (int r = 0; r < worldSize; ++r) {
    for (size_t i = 0; i < count; ++i) {
      double expected = valueOf(ncclInt64, ncclSum, r, (size_t)myRank * count + i);
      if ((double)recv[(size_t)r * count + i] != expected) {
        EXPECT(0, "ncclAlltoAll: from rank %d element %zu is %lld", r, i,
               (long long)recv[(size_t)r * count + i]);
        break;
      }
    }
  }
  int64_t* block = malloc(blockBytes);
  void* callBlock = callOutput(block, blockBytes);
  for (int root = 0; root < worldSize; ++root) {
    memset(recv, 0, totalBytes);
    releaseCallBuffer(callRecv);
    callRecv = callBuffer(recv, totalBytes);
    CHECK(ncclGather(callSend, callRecv, count, ncclInt64, root, comm, stream));
    readBack(recv, callRecv, totalBytes);
    if (myRank == root) expectGathered(ncclInt64, recv, count, "ncclGather");
    /* Scatter: root's block r goes to rank r. */
    CHECK(ncclScatter(callSend, callBlock, count, ncclInt64, root, comm, stream));
    readBack(block, callBlock, blockBytes);
    for (size_t i = 0; i < count; ++i) {
      double expected = valueOf(ncclInt64, ncclSum, root, (size_t)myRank * count + i);
      if ((double)block[i] != expected) {
        EXPECT(0, "ncclScatter root %d: element %zu is %lld", root, i, (long long)block[i]);
        break;
      }
    }
  }
  releaseCallBuffer(callSend);
  releaseCallBuffer(callRecv);
  releaseCallBuffer(callBlock);
  free(block);
  free(send);
  free(recv);
}

/* Each rank sends to rank + step and receives from rank - step, in one group: a ring that
 * would deadlock if the sends blocked. */
static void testSendRecvRing(ncclComm_t comm, int step) {
  const size_t count = 4099;
  const size_t bytes = count * sizeof(float);
  int to = (myRank + step + worldSize) % worldSize;
  int from = (myRank - step + worldSize) % worldSize;
  float* send = filled(ncclFloat32, ncclSum, count, myRank);
  float* recv = malloc(bytes);
  void* callSend = callBuffer(send, bytes);
  void* callRecv = callOutput(recv, bytes);
  CHECK(ncclGroupStart());
  CHECK(ncclSend(callSend, count, ncclFloat32, to, comm, stream));
  CHECK(ncclRecv(callRecv, count, ncclFloat32, from, comm, stream));
  CHECK(ncclGroupEnd());
  readBack(recv, callRecv, bytes);
  for (size_t i = 0; i < count; ++i) {
    if (recv[i] != valueOf(ncclFloat32, ncclSum, from, i)) {
      EXPECT(0, "ring step %d: element %zu from rank %d is %g", step, i, from, recv[i]);
      break;
    }
  }
  releaseCallBuffer(callSend);
  releaseCallBuffer(callRecv);
  free(send);
  free(recv);
}

static void testGroupedCollectives(ncclComm_t comm) {
  const size_t count = 100;
  const size_t bytes = count * sizeof(float), gatheredBytes = bytes * (size_t)worldSize;
  float* a = filled(ncclFloat32, ncclSum, count, myRank);
  int32_t* b = filled(ncclInt32, ncclMax, count, myRank);
  float* gathered = malloc(gatheredBytes);
  float* copy = filled(ncclFloat32, ncclSum, count, myRank);
  void* callA = callBuffer(a, bytes);
  void* callB = callBuffer(b, count * sizeof(int32_t));
  void* callGathered = callOutput(gathered, gatheredBytes);
  void* callCopy = callBuffer(copy, bytes);
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(callA, callA, count, ncclFloat32, ncclSum, comm, stream));
  CHECK(ncclAllReduce(callB, callB, count, ncclInt32, ncclMax, comm, stream));
  CHECK(ncclAllGather(callCopy, callGathered, count, ncclFloat32, comm, stream));
  CHECK(ncclGroupEnd());
  readBack(a, callA, bytes);
  readBack(b, callB, count * sizeof(int32_t));
  readBack(gathered, callGathered, gatheredBytes);
  expectReduced(ncclFloat32, ncclSum, a, count, 0, "grouped ncclAllReduce");
  expectReduced(ncclInt32, ncclMax, b, count, 0, "grouped ncclAllReduce");
  expectGathered(ncclFloat32, gathered, count, "grouped ncclAllGather");
  releaseCallBuffer(callA);
  releaseCallBuffer(callB);
  releaseCallBuffer(callGathered);
  releaseCallBuffer(callCopy);
  free(a);
  free(b);
  free(gathered);
  free(copy);
}

static void testPreMulSum(ncclComm_t comm) {
  const size_t count = 515;
  float scalar = 0.5f;
  ncclRedOp_t half;
  CHECK(ncclRedOpCreatePreMulSum(&half, &scalar, ncclFloat32, ncclScalarHostImmediate, comm));
  scalar = 7.0f; /* host-immediate: the value at creation counts */
  float* send = filled(ncclFloat32, ncclSum, count, myRank);
  float* recv = malloc(count * sizeof(float));
  CHECK(ncclAllReduce(send, recv, count, ncclFloat32, half, comm, NULL));
  for (size_t i = 0; i < count; ++i) {
    double expected = reference(ncclFloat32, ncclSum, i) * 0.5;
    if (recv[i] != (float)expected) {
      EXPECT(0, "PreMulSum all-reduce: element %zu is %g, expected %g", i, recv[i], expected);
      break;
    }
  }
  /* Per-rank scalars: rank r scales by r + 1. */
  int32_t factor = myRank + 1;
  ncclRedOp_t weighted;
  CHECK(ncclRedOpCreatePreMulSum(&weighted, &factor, ncclInt32, ncclScalarHostImmediate, comm));
  int32_t* ints = filled(ncclInt32, ncclSum, count, myRank);
  int32_t* summed = malloc(count * sizeof(int32_t));
  CHECK(ncclReduce(ints, summed, count, ncclInt32, weighted, 0, comm, NULL));
  if (myRank == 0) {
    for (size_t i = 0; i < count; ++i) {
      double expected = 0;
      for (int r = 0; r < worldSize; ++r) expected += (r + 1) * valueOf(ncclInt32, ncclSum, r, i);
      if (summed[i] != (int32_t)expected) {
        EXPECT(0, "PreMulSum reduce: element %zu is %d, expected %g", i, summed[i], expected);
        break;
      }
    }
  }
  EXPECT_ERROR(ncclAllReduce(send, recv, count, ncclBfloat16, half, comm, NULL),
               ncclInvalidArgument, "was made for ncclFloat32");
  CHECK(ncclRedOpDestroy(half, comm));
  CHECK(ncclRedOpDestroy(weighted, comm));
  EXPECT_ERROR(ncclAllReduce(send, recv, count, ncclFloat32, half, comm, NULL), ncclInvalidArgument,
               "op=");
  EXPECT_ERROR(ncclRedOpDestroy(half, comm), ncclInvalidArgument, "op=");
  free(send);
  free(recv);
  free(ints);
  free(summed);
}

/* ---- communicators ---- */

/* A fresh id from rank 0, handed to the others over `comm` by NCCL's own broadcast. */
static ncclUniqueId idOver(ncclComm_t comm) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  if (myRank == 0) CHECK(ncclGetUniqueId(&id));
  CHECK(ncclBroadcast(&id, &id, sizeof(id), ncclUint8, 0, comm, NULL));
  return id;
}

/* Polls a non-blocking communicator until its queued calls have completed, as NCCL's
 * documentation has programs do. */
static ncclResult_t settle(ncclComm_t comm) {
  ncclResult_t state = ncclInProgress;
  while (state == ncclInProgress) CHECK(ncclCommGetAsyncError(comm, &state));
  return state;
}

/* config.blocking=0: host calls return ncclInProgress and complete later, in order; a
 * PreMulSum's scaled input outlives the call; a group of calls is in progress too. */
static void testNonBlocking(ncclComm_t comm, int* sum) {
  EXPECT(ncclAllReduce(sum, sum, 1, ncclInt32, ncclSum, comm, NULL) == ncclInProgress,
         "a non-blocking all-reduce did not return ncclInProgress");
  enum { kCount = 100000 };
  static float values[kCount], scaled[kCount];
  for (int i = 0; i < kCount; ++i) values[i] = (float)(myRank + i % 7);
  float half = 0.5f;
  ncclRedOp_t halved;
  CHECK(ncclRedOpCreatePreMulSum(&halved, &half, ncclFloat32, ncclScalarHostImmediate, comm));
  EXPECT(ncclAllReduce(values, scaled, kCount, ncclFloat32, halved, comm, NULL) == ncclInProgress,
         "a non-blocking PreMulSum all-reduce did not return ncclInProgress");
  int grouped[2] = {myRank, 1};
  CHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    CHECK(ncclAllReduce(&grouped[i], &grouped[i], 1, ncclInt32, ncclSum, comm, NULL));
  }
  EXPECT(ncclGroupEnd() == ncclInProgress, "a non-blocking group did not return ncclInProgress");
  EXPECT(settle(comm) == ncclSuccess, "non-blocking calls failed: %s", ncclGetLastError(NULL));
  const double ranksSum = (double)worldSize * (worldSize - 1) / 2;
  for (int i = 0; i < kCount; ++i) {
    const double want = 0.5 * (ranksSum + (double)worldSize * (i % 7));
    if (scaled[i] != (float)want) {
      EXPECT(0, "non-blocking PreMulSum: element %d is %g, expected %g", i, scaled[i], want);
      break;
    }
  }
  EXPECT(grouped[0] == (int)ranksSum && grouped[1] == worldSize, "non-blocking group: %d %d",
         grouped[0], grouped[1]);
  CHECK(ncclRedOpDestroy(halved, comm));
}

static void testCommunicators(ncclComm_t world) {
  int count = 0, rank = -1, device = -1, version = 0;
  CHECK(ncclCommCount(world, &count));
  CHECK(ncclCommUserRank(world, &rank));
  EXPECT(count == worldSize && rank == myRank, "count %d rank %d", count, rank);
  CHECK(ncclGetVersion(&version));
  EXPECT(version >= NCCL_VERSION(2, 18, 0), "version %d", version);
  ncclResult_t cuDevice = ncclCommCuDevice(world, &device);
  EXPECT(cuDevice == ncclSuccess || (cuDevice == ncclInvalidUsage &&
                                     strstr(ncclGetLastError(NULL), "no CUDA device") != NULL),
         "ncclCommCuDevice: %d %s", (int)cuDevice, ncclGetLastError(NULL));
  ncclResult_t asyncError = ncclInternalError;
  CHECK(ncclCommGetAsyncError(world, &asyncError));
  EXPECT(asyncError == ncclSuccess, "async error %d", (int)asyncError);

  /* A communicator made with a config struct, and one through the scalable call. */
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.commName = "client-config";
  ncclComm_t configured, scalable;
  CHECK(ncclCommInitRankConfig(&configured, worldSize, idOver(world), myRank, &config));
  ncclUniqueId ids[1];
  ids[0] = idOver(world);
  CHECK(ncclCommInitRankScalable(&scalable, worldSize, myRank, 1, ids, NULL));
  int sum = myRank, expected = worldSize * (worldSize - 1) / 2;
  testNonBlocking(configured, &sum);
  EXPECT(sum == expected, "configured communicator: %d", sum);
  sum = myRank;
  CHECK(ncclAllReduce(&sum, &sum, 1, ncclInt32, ncclSum, scalable, NULL));
  EXPECT(sum == expected, "scalable communicator: %d", sum);
  CHECK(ncclCommFinalize(configured));
  EXPECT_ERROR(ncclAllReduce(&sum, &sum, 1, ncclInt32, ncclSum, configured, NULL), ncclInvalidUsage,
               "finalized");
  CHECK(ncclCommDestroy(configured));
  CHECK(ncclCommAbort(scalable));

  /* Split by parity, highest rank first; rank 0 stays out of the second split. */
  ncclComm_t parity, rest;
  CHECK(ncclCommSplit(world, myRank % 2, -myRank, &parity, NULL));
  int parityCount = 0, parityRank = -1;
  CHECK(ncclCommCount(parity, &parityCount));
  CHECK(ncclCommUserRank(parity, &parityRank));
  int members = (worldSize + (myRank % 2 == 0 ? 1 : 0)) / 2;
  int above = 0;
  for (int r = myRank + 2; r < worldSize; r += 2) ++above;
  EXPECT(parityCount == members && parityRank == above, "parity split: rank %d of %d", parityRank,
         parityCount);
  CHECK(ncclCommDestroy(parity));
  CHECK(ncclCommSplit(world, myRank == 0 ? NCCL_SPLIT_NOCOLOR : 1, myRank, &rest, NULL));
  EXPECT((myRank == 0) == (rest == NULL), "NCCL_SPLIT_NOCOLOR gave %p", (void*)rest);
  if (rest != NULL) {
    int restCount = 0;
    CHECK(ncclCommCount(rest, &restCount));
    EXPECT(restCount == worldSize - 1, "split without rank 0: %d ranks", restCount);
    CHECK(ncclCommDestroy(rest));
  }
}

/* Two ranks of one communicator in this process, driven from this thread through a group. */
static void testInitAll(void) {
  ncclComm_t comms[2];
  CHECK(ncclCommInitAll(comms, 2, NULL));
  int values[2] = {3, 4};
  CHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    CHECK(ncclAllReduce(&values[i], &values[i], 1, ncclInt32, ncclSum, comms[i], NULL));
  }
  CHECK(ncclGroupEnd());
  EXPECT(values[0] == 7 && values[1] == 7, "ncclCommInitAll: %d %d", values[0], values[1]);
  for (int i = 0; i < 2; ++i) CHECK(ncclCommDestroy(comms[i]));
}

static void testMemory(ncclComm_t comm) {
  void* buffer = NULL;
  int device = 0;
  CHECK(ncclMemAlloc(&buffer, 1 << 16));
  EXPECT(buffer != NULL, "ncclMemAlloc gave NULL");
  if (ncclCommCuDevice(comm, &device) != ncclSuccess) {
    /* No GPU: the memory is host memory, and zccl's calls take it. */
    int* values = buffer;
    values[0] = myRank + 1;
    CHECK(ncclAllReduce(values, values, 1, ncclInt32, ncclSum, comm, NULL));
    EXPECT(values[0] == worldSize * (worldSize + 1) / 2, "on ncclMemAlloc memory: %d", values[0]);
  }
  void* handle = NULL;
  CHECK(ncclCommRegister(comm, buffer, 1 << 16, &handle));
  CHECK(ncclCommDeregister(comm, handle));
  EXPECT_ERROR(ncclCommDeregister(comm, handle), ncclInvalidArgument, "handle=");
  CHECK(ncclMemFree(buffer));
  int local = 0;
  EXPECT_ERROR(ncclMemFree(&local), ncclInvalidArgument, "ptr=");
}

/* What the drop-in cannot do is an error that names the call and says why. */
static void testErrors(ncclComm_t comm) {
  float value = 1.0f;
  EXPECT_ERROR(ncclAllReduce(&value, &value, 1, (ncclDataType_t)99, ncclSum, comm, NULL),
               ncclInvalidArgument, "datatype=99");
  EXPECT_ERROR(ncclAllReduce(NULL, &value, 4, ncclFloat32, ncclSum, comm, NULL),
               ncclInvalidArgument, "sendbuff=NULL");
  EXPECT_ERROR(ncclAllReduce(&value, &value, 1, ncclFloat32, (ncclRedOp_t)42, comm, NULL),
               ncclInvalidArgument, "op=42");
  EXPECT_ERROR(ncclBroadcast(&value, &value, 1, ncclFloat32, worldSize, comm, NULL),
               ncclInvalidArgument, "root=");
  EXPECT_ERROR(ncclSend(&value, 1, ncclFloat32, -1, comm, NULL), ncclInvalidArgument, "peer=-1");
  EXPECT_ERROR(ncclAllReduce(&value, &value, 1, ncclFloat8e4m3, ncclSum, comm, NULL),
               ncclInvalidArgument, "float8");
  EXPECT_ERROR(ncclGroupEnd(), ncclInvalidUsage, "ncclGroupEnd");
  EXPECT_ERROR(ncclCommCount(NULL, &worldSize), ncclInvalidArgument, "comm=");
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.magic = 0x12345678;
  ncclComm_t never = NULL;
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
  EXPECT_ERROR(ncclCommInitRankConfig(&never, worldSize, id, myRank, &config), ncclInvalidArgument,
               "config->magic");
  /* Unsupported entry points. */
#ifdef NCCL_REVOKE_DEFAULT /* an nccl.h before ncclCommRevoke (the GPU machine's) lacks it */
  EXPECT_ERROR(ncclCommRevoke(comm, 0), ncclInvalidUsage, "ncclCommRevoke");
#endif
  int excluded = 0;
  ncclComm_t shrunk = NULL;
  EXPECT_ERROR(ncclCommShrink(comm, &excluded, 1, &shrunk, NULL, NCCL_SHRINK_DEFAULT),
               ncclInvalidUsage, "ncclCommShrink");
  ncclWindow_t window = NULL;
  EXPECT_ERROR(ncclCommWindowRegister(comm, &value, sizeof(value), &window, NCCL_WIN_DEFAULT),
               ncclInvalidUsage, "ncclCommWindowRegister");
  EXPECT_ERROR(ncclCommWindowDeregister(comm, window), ncclInvalidUsage,
               "ncclCommWindowDeregister");
  ncclSimInfo_t simulation = NCCL_SIM_INFO_INITIALIZER;
  CHECK(ncclGroupStart());
  CHECK(ncclAllReduce(&value, &value, 1, ncclFloat32, ncclSum, comm, NULL));
  EXPECT_ERROR(ncclGroupSimulateEnd(&simulation), ncclInvalidUsage, "ncclGroupSimulateEnd");
  EXPECT(value == 1.0f, "a simulated group ran its calls");
  EXPECT(strstr(ncclGetErrorString(ncclInternalError), "zccl") != NULL,
         "this is not zccl's drop-in: %s", ncclGetErrorString(ncclInternalError));
}

static ncclComm_t joinWorld(int* argc, char*** argv) {
  ncclUniqueId id;
  memset(&id, 0, sizeof(id));
#ifdef NCCL_CLIENT_WITH_MPI
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &myRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  if (myRank == 0) CHECK(ncclGetUniqueId(&id));
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
  (void)argc;
  (void)argv;
  /* Under zcclrun every rank's first id is the launcher's; alone, one rank. */
  const char* rank = getenv("ZCCL_RANK");
  const char* size = getenv("ZCCL_WORLD_SIZE");
  if (rank != NULL && size != NULL) {
    myRank = atoi(rank);
    worldSize = atoi(size);
  }
  CHECK(ncclGetUniqueId(&id));
#endif
  ncclComm_t world;
  CHECK(ncclCommInitRank(&world, worldSize, id, myRank));
  return world;
}

/* One thread driving several ranks, as nccl-tests' -g 2: each process is two ranks of a
 * communicator of 2 x worldSize made inside a group, then split inside a group. */
static void testInitInsideGroup(ncclComm_t world) {
  const ncclUniqueId id = idOver(world);
  const int ranks = 2 * worldSize;
  ncclComm_t comms[2], halves[2];
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  CHECK(ncclGroupStart());
  CHECK(ncclCommInitRank(&comms[0], ranks, id, 2 * myRank));
  CHECK(ncclCommInitRankConfig(&comms[1], ranks, id, 2 * myRank + 1, &config));
  CHECK(ncclGroupEnd());
  int sums[2] = {2 * myRank, 2 * myRank + 1};
  CHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    CHECK(ncclAllReduce(&sums[i], &sums[i], 1, ncclInt32, ncclSum, comms[i], NULL));
  }
  CHECK(ncclGroupEnd());
  const int all = ranks * (ranks - 1) / 2;
  EXPECT(sums[0] == all && sums[1] == all, "made inside a group: sums %d %d, want %d", sums[0],
         sums[1], all);
  /* Even ranks and odd ranks: the first of each process's two is even. */
  CHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) CHECK(ncclCommSplit(comms[i], i, myRank, &halves[i], NULL));
  CHECK(ncclGroupEnd());
  int count = 0;
  CHECK(ncclCommCount(halves[0], &count));
  EXPECT(count == worldSize, "split inside a group: %d ranks, want %d", count, worldSize);
  int parity[2] = {2 * myRank, 2 * myRank + 1};
  CHECK(ncclGroupStart());
  for (int i = 0; i < 2; ++i) {
    CHECK(ncclAllReduce(&parity[i], &parity[i], 1, ncclInt32, ncclSum, halves[i], NULL));
  }
  CHECK(ncclGroupEnd());
  const int evens = worldSize * (worldSize - 1); /* 0 + 2 + ... + 2 (worldSize - 1) */
  EXPECT(parity[0] == evens && parity[1] == evens + worldSize,
         "split inside a group: sums %d %d, want %d %d", parity[0], parity[1], evens,
         evens + worldSize);
  for (int i = 0; i < 2; ++i) {
    CHECK(ncclCommDestroy(halves[i]));
    CHECK(ncclCommDestroy(comms[i]));
  }
}

/* Bytes written to stderr while a call fails for a bad argument (a WARN line, if any). */
static long stderrBytesOfFailedCall(ncclComm_t comm) {
  fflush(stderr);
  FILE* capture = tmpfile();
  const int saved = dup(2);
  dup2(fileno(capture), 2);
  EXPECT(ncclCommCount(comm, NULL) == ncclInvalidArgument, "ncclCommCount(count=NULL)");
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  const long bytes = (long)lseek(fileno(capture), 0, SEEK_END);
  fclose(capture);
  return bytes;
}

/* ncclResetDebugInit: a debug level set after the library has read it is read again. */
static void testResetDebugInit(ncclComm_t world) {
  const char* given = getenv("ZCCL_DEBUG");
  char saved[32] = "";
  if (given != NULL) snprintf(saved, sizeof(saved), "%s", given);
  setenv("ZCCL_DEBUG", "NONE", 1);
  ncclResetDebugInit();
  const long quiet = stderrBytesOfFailedCall(world);
  setenv("ZCCL_DEBUG", "WARN", 1);
  ncclResetDebugInit();
  const long warned = stderrBytesOfFailedCall(world);
  if (given != NULL) {
    setenv("ZCCL_DEBUG", saved, 1);
  } else {
    unsetenv("ZCCL_DEBUG");
  }
  ncclResetDebugInit();
  EXPECT(quiet == 0 && warned > 0, "ncclResetDebugInit: %ld bytes logged at NONE, %ld at WARN",
         quiet, warned);
}

int main(int argc, char** argv) {
  ncclComm_t world = joinWorld(&argc, &argv);
  if (argc > 1 && strcmp(argv[argc - 1], "--device") == 0 && !openDevice()) {
    if (myRank == 0) printf("nccl_client --device: no GPU visible (or built without CUDA)\n");
    CHECK(ncclCommDestroy(world));
#ifdef NCCL_CLIENT_WITH_MPI
    MPI_Finalize();
#endif
    return 77;
  }
  testCommunicators(world);
  testAllReduce(world);
  testReduceScatter(world);
  testAllGather(world);
  testBroadcastAndReduce(world);
  testAllToAllGatherScatter(world);
  testSendRecvRing(world, 1);
  testSendRecvRing(world, -1);
  testGroupedCollectives(world);
  testPreMulSum(world);
  testMemory(world);
  testErrors(world);
  testResetDebugInit(world);
  testInitInsideGroup(world);
  testInitAll();
  CHECK(ncclCommDestroy(world));
#ifdef NCCL_CLIENT_WITH_MPI
  MPI_Finalize();
#endif
  if (failures > 0) {
    fprintf(stderr, "rank %d: %d checks failed\n", myRank, failures);
    return 1;
  }
  if (myRank == 0) {
    printf("nccl_client: %d ranks, collectives on %s, every check passed\n", worldSize,
           onDevice ? "device buffers" : "host buffers");
  }
  return 0;
}
