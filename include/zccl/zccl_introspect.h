/*
 * zccl introspection: read-only views of what a communicator knows, for tools such as
 * zccl-topo and for logging in applications. Nothing here changes a communicator, and
 * nothing here is collective: each call answers from what the rank already holds.
 */
#ifndef ZCCL_ZCCL_INTROSPECT_H_
#define ZCCL_ZCCL_INTROSPECT_H_

#include "zccl/zccl.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef ZCCL_ENUM(zcclCollective_e){
    zcclCollAllGather = 0, zcclCollReduceScatter = 1, zcclCollAllReduce = 2,
    zcclCollBroadcast = 3, zcclCollAllToAll = 4,      zcclCollReduce = 5,
    zcclCollGather = 6,    zcclCollScatter = 7,       zcclNumCollectives = 8} zcclCollective_t;

/* The job as the planner models it. Strings are static; link classes are "SHM", "PCIE",
 * "NVLINK", "ETH" or "IB". Each class is the slowest any rank of the job reported. */
typedef struct {
  int nodes;          /* nodes of the job, emulated ones (ZCCL_RANKS_PER_NODE) included */
  int ranksPerNode;   /* 0 when the nodes differ in size */
  int gpusOnThisNode; /* GPUs zccl found on this rank's node */
  const char* intraNodeLink;
  double intraNodeGBps; /* bytes per second / 1e9 */
  const char* interNodeLink;
  double interNodeGBps;
  int lowBandwidth; /* neither NVLink nor InfiniBand: the ZeRO++ papers' slow cluster */
  /* The job's CPU kernel rates (bytes of float32 input per second / 1e9), the slowest rank's:
   * quantizing, dequantizing into an accumulator, reducing one buffer into another. */
  double quantizeGBps;
  double dequantizeGBps;
  double reduceGBps;
  /* This rank's GPU kernel rates, where a GPU is visible (0 otherwise): measured on its
   * current device at the first call that needs them; device calls plan with the slowest
   * rank's. */
  double deviceQuantizeGBps;
  double deviceDequantizeGBps;
  double deviceReduceGBps;
  /* This host's CPU ("model name" of /proc/cpuinfo, "unknown" elsewhere) and the instruction
   * set its quantization kernels run ("avx512", "avx2" or "scalar"; ZCCL_QUANT_ISA lowers it),
   * which benchmarks print beside their figures. */
  const char* cpuModel;
  const char* quantKernels;
} zcclTopologyInfo;

ZCCL_API zcclResult_t zcclCommGetTopologyInfo(zcclComm_t comm, zcclTopologyInfo* info);

/* nodeOfRank[r] = the node of rank r, for every rank of comm (zcclCommCount entries). */
ZCCL_API zcclResult_t zcclCommGetNodeMap(zcclComm_t comm, int* nodeOfRank);

/* What the planner would run for one call. Initialise with ZCCL_PLAN_QUERY_INITIALIZER. */
typedef struct {
  size_t size;          /* sizeof(zcclPlanQuery) */
  unsigned int magic;   /* ZCCL_PLAN_QUERY_MAGIC */
  unsigned int version; /* ZCCL_VERSION_CODE */
  zcclCollective_t collective;
  size_t bytes; /* the whole buffer: all-gather's output, reduce-scatter's input, ... */
  zcclDataType_t datatype;
  zcclRedOp_t op;
  const zcclCollOptions* options; /* NULL: the communicator's defaults */
  /* > 0: plan for a job of this shape on the same links (what-if); 0: comm's own. */
  int nodes;
  int ranksPerNode;
} zcclPlanQuery;

#define ZCCL_PLAN_QUERY_MAGIC 0x7a63706cu
#define ZCCL_PLAN_QUERY_INITIALIZER                                                        \
  {                                                                                        \
    sizeof(zcclPlanQuery), ZCCL_PLAN_QUERY_MAGIC, ZCCL_VERSION_CODE, zcclCollAllReduce, 0, \
        zcclFloat32, zcclSum, NULL, 0, 0                                                   \
  }

typedef struct {
  const char* algorithm;   /* "ring", "direct", "two-level", "native", "pairwise", "pipelined" */
  const char* wire;        /* "none", "int8", "int4", "int2" */
  double estimatedSeconds; /* the cost model's estimate; negative when not modelled */
  size_t chunkBytes;       /* pipelined algorithms' segment; 0 when not chunked */
} zcclPlanInfo;

ZCCL_API zcclResult_t zcclCommGetPlan(zcclComm_t comm, const zcclPlanQuery* query,
                                      zcclPlanInfo* plan);

/* This node's devices (GPUs, NVSwitches, NICs, HCAs), the link matrix between them and the
 * link classes, as text (json = 0) or as one JSON object (json = 1). *bytes holds the
 * buffer's capacity and receives the length needed, terminating NUL included. With
 * buffer = NULL only the length is returned; a buffer too small gets nothing and
 * zcclInvalidArgument. */
ZCCL_API zcclResult_t zcclCommDescribeTopology(zcclComm_t comm, int json, char* buffer,
                                               size_t* bytes);

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_ZCCL_INTROSPECT_H_ */
