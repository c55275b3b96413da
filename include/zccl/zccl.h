/*
 * zccl: collective communication for sharded (ZeRO / FSDP) training.
 *
 * NCCL-shaped C API (C99). Every function returns a zcclResult_t; nothing aborts the
 * process. After a failure, zcclGetLastError(comm) says which argument was wrong and why.
 * No MPI is needed: communicators come from a unique id (as in NCCL), from the launcher's
 * environment (zcclrun, torchrun) or from a framework's key-value store; zccl/zccl_mpi.h adds
 * the MPI way in.
 *
 * Memory: stream=NULL means host buffers (moved over MPI or UCX). A CUDA stream means device
 * buffers on the current device, as with NCCL: the call queues the collective on that stream
 * and returns; the collective runs after the work queued on the stream before the call, and
 * the work queued on it after the call sees its result. zccl's algorithms run with the
 * quantization and reduction kernels on the GPU (only compressed bytes leave it on quantized
 * paths); their messages go over NCCL (one rank per GPU) or staged through page-locked host
 * memory over the host transports (ZCCL_DEVICE_BACKEND=auto|nccl|staged).
 * What blocks the calling thread: a call with a stream checks its arguments and queues its
 * work, which the communicator's own thread runs in call order on a stream of zccl's own
 * (the caller's stream waits for it at a gate), so it returns before the stream's earlier
 * work ends. It blocks instead, running the work itself and returning when it has finished,
 * under ZCCL_DEVICE_BLOCKING=1 and where the communicator was made from MPI initialized
 * below MPI_THREAD_MULTIPLE (zccl's thread may not call MPI then); with ZCCL_CHECK=1 it first
 * waits for the work queued before it (the agreement uses the transports). Every call with
 * stream=NULL, and zcclCommSplit*,
 * zcclCommGetStats, zcclCommResetStats and zcclCommDestroy, first waits for the device work
 * queued before on the communicator. A failure of queued work is returned by the calls after
 * it (and by zcclCommGetAsyncError); the communicator must then be aborted.
 * zcclSend/zcclRecv on a stream are queued the same way, per call, or per group at
 * zcclGroupEnd (one communicator's messages in a group share one stream). A host buffer with
 * a stream, a device buffer with stream=NULL, or a buffer on another device is an error
 * naming the buffer, returned by the call itself.
 * NULL always means host memory: CUDA's legacy default stream is ZCCL_STREAM_LEGACY.
 */
#ifndef ZCCL_ZCCL_H_
#define ZCCL_ZCCL_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ZCCL_API __attribute__((visibility("default")))
#else
#define ZCCL_API
#endif

/* Enums are int-sized in C and C++ alike; C++ gives them int as their type, so that a value
 * out of range (a caller's mistake that zccl reports) is still a value, not undefined. */
#ifdef __cplusplus
#define ZCCL_ENUM(name) enum name : int
#else
#define ZCCL_ENUM(name) enum name
#endif

#define ZCCL_MAJOR 0
#define ZCCL_MINOR 1
#define ZCCL_PATCH 0
/* zcclGetVersion returns MAJOR * 10000 + MINOR * 100 + PATCH. */
#define ZCCL_VERSION_CODE (ZCCL_MAJOR * 10000 + ZCCL_MINOR * 100 + ZCCL_PATCH)

typedef ZCCL_ENUM(zcclResult_e){
    zcclSuccess = 0,
    zcclInvalidArgument = 1, /* an argument is wrong: null, out of range, bad layout */
    zcclInvalidUsage = 2,    /* arguments fine, but the call is not allowed now */
    zcclSystemError = 3,     /* the OS or a library below failed (allocation, MPI) */
    zcclInternalError = 4,   /* a bug in zccl */
    zcclRemoteError = 5,     /* a peer failed or the communicator was aborted */
    zcclTimeout = 6,         /* a peer did not answer within the timeout */
    zcclInProgress = 7,      /* a non-blocking operation has not completed yet */
    zcclNumResults = 8} zcclResult_t;

typedef ZCCL_ENUM(zcclDataType_e){zcclInt8 = 0,    zcclUint8 = 1,    zcclInt32 = 2,
                                  zcclUint32 = 3,  zcclInt64 = 4,    zcclUint64 = 5,
                                  zcclFloat16 = 6, zcclBfloat16 = 7, zcclFloat32 = 8,
                                  zcclFloat64 = 9, zcclNumTypes = 10} zcclDataType_t;

/*
 * Reductions. Half-precision inputs are accumulated in float32 and rounded once.
 * zcclAvg divides the sum by the number of ranks exactly once (integers: truncating
 * division of the sum, which wraps like the type's own arithmetic).
 * max/min return NaN when any input is NaN.
 */
typedef ZCCL_ENUM(zcclRedOp_e){zcclSum = 0, zcclProd = 1, zcclMax = 2,
                               zcclMin = 3, zcclAvg = 4,  zcclNumOps = 5} zcclRedOp_t;

/* Algorithm families a communicator may use (ZCCL_ALGO in the environment). */
typedef ZCCL_ENUM(zcclAlgorithm_e){
    zcclAlgoAuto = 0,   /* zccl's planner chooses */
    zcclAlgoRing = 1,   /* ring all-gather / reduce-scatter over point-to-point */
    zcclAlgoDirect = 2, /* direct exchange, reduced in rank order (reproducible) */
    zcclAlgoNative = 3, /* the backend's own collective (MPI_Allgather, ...) */
    zcclNumAlgos = 4} zcclAlgorithm_t;

/* Link classes that traffic statistics are split by. */
typedef ZCCL_ENUM(zcclLinkClass_e){zcclLinkSelf = 0,      /* this rank to itself */
                                   zcclLinkIntraNode = 1, /* a peer on the same node */
                                   zcclLinkInterNode = 2, /* a peer on another node */
                                   zcclNumLinkClasses = 3} zcclLinkClass_t;

/*
 * How a collective's payload travels (ZeRO++: INT8 weights for qwZ, INT4 gradients for
 * qgZ). The lossy formats apply to float32, float16 and bfloat16, and for reductions to
 * zcclSum and zcclAvg, and only where the caller asked for them.
 */
typedef ZCCL_ENUM(zcclWireFormat_e){
    zcclWireNone = 0, /* the data type itself: exact */
    zcclWireInt8 = 1, /* blockwise INT8 codes + one float32 scale per group */
    zcclWireInt4 = 2, /* blockwise INT4 codes, two per byte + one float32 scale per group */
    /* Allowed rather than asked for: the planner uses the format only where its cost model
     * (link bandwidths against quantization time) says it is faster than exact. */
    zcclWireAllowInt8 = 3, zcclWireAllowInt4 = 4,
    /* blockwise INT2 codes, four per byte + one float32 scale per group: coarse (3 levels
     * symmetric), meant for weight differences (zcclReference_t), whose error does not add up
     * from call to call; always asked for, never only allowed */
    zcclWireInt2 = 5, zcclNumWireFormats = 6} zcclWireFormat_t;

/* "none", "int8", "int4", "allow-int8", "allow-int4", "int2" (the environment's, the perf
 * binaries', the drop-in's and the torch backend's spelling); NULL for a value out of range. */
ZCCL_API const char* zcclWireFormatName(zcclWireFormat_t format);
/* The format `name` names (case-insensitive); zcclInvalidArgument naming it otherwise. */
ZCCL_API zcclResult_t zcclWireFormatFromName(const char* name, zcclWireFormat_t* format);

/*
 * A wire policy: the format each collective takes where the call names none (the plain calls,
 * and Ex calls whose options leave wireFormat undefined), as ZeRO++ sets one: INT8
 * all-gathers of weights (qwZ), INT4 reduce-scatters of gradients (qgZ). A lossy format
 * applies where it can (float32, float16, bfloat16; sum and avg for reductions) and to calls
 * whose buffer (all-gather's output, reduce-scatter's input) holds at least minBytes; other
 * calls stay exact. A communicator starts with config.wireFormat (ZCCL_QUANT) for all three
 * and minBytes 0; the NCCL drop-in and the torch backend set theirs with
 * zcclCommSetWirePolicy.
 */
typedef struct {
  int allGather;     /* zcclWireFormat_t */
  int reduceScatter; /* zcclWireFormat_t */
  int allReduce;     /* zcclWireFormat_t, for zcclReduce too */
  size_t minBytes;
} zcclWirePolicy;
#define ZCCL_WIRE_POLICY_INITIALIZER \
  { zcclWireNone, zcclWireNone, zcclWireNone, 0 }

typedef ZCCL_ENUM(zcclQuantScheme_e){
    zcclQuantSymmetric = 0,  /* scale from the group's absmax */
    zcclQuantAsymmetric = 1, /* scale and midpoint from the group's min and max */
    zcclNumQuantSchemes = 2} zcclQuantScheme_t;

/* Whether a collective runs over all ranks at once or node by node. */
typedef ZCCL_ENUM(zcclHierarchy_e){
    zcclHierarchyAuto = 0,     /* two-level when the job spans several nodes of equal size */
    zcclHierarchyFlat = 1,     /* one level over all ranks */
    zcclHierarchyTwoLevel = 2, /* inter-node among same-local-rank peers, intra-node within */
    zcclNumHierarchies = 3} zcclHierarchy_t;

typedef struct zcclComm* zcclComm_t;
/* A CUDA stream (cudaStream_t) for device memory; NULL for host memory. */
typedef void* zcclStream_t;
/* CUDA's legacy default stream (cudaStreamLegacy, whose value this is): NULL is host memory,
 * so a client whose stream handle is NULL for the legacy default stream passes this instead. */
#define ZCCL_STREAM_LEGACY ((zcclStream_t)0x1)

#define ZCCL_CONFIG_UNDEF_INT (-2147483647 - 1)
#define ZCCL_CONFIG_UNDEF_DOUBLE (-1.0)

/*
 * Communicator configuration. Initialise with ZCCL_CONFIG_INITIALIZER; a field left
 * undefined takes the ZCCL_* environment variable, else the default.
 */
typedef struct {
  size_t size;          /* sizeof(zcclConfig), for ABI checks */
  unsigned int magic;   /* ZCCL_CONFIG_MAGIC */
  unsigned int version; /* ZCCL_VERSION_CODE */
  int algorithm;        /* zcclAlgorithm_t; env ZCCL_ALGO=auto|ring|direct|native */
  int ranksPerNode;     /* >0 emulates nodes of N consecutive ranks; env ZCCL_RANKS_PER_NODE */
  /* (the transport: env ZCCL_TRANSPORT=auto|mpi|ucx; auto: UCX, for zcclCommInitMPI too,
   * set up through MPI) */
  double timeoutSeconds; /* 0 waits forever; env ZCCL_TIMEOUT_S; default 1800 */
  /* Defaults of the plain zcclAllGather / zcclReduceScatter / zcclAllReduce calls: */
  int wireFormat;  /* zcclWireFormat_t; env ZCCL_QUANT=none|int8|int4|allow-int8|allow-int4|int2 */
  int quantScheme; /* zcclQuantScheme_t; env ZCCL_QUANT_SCHEME=sym|asym */
  int quantGroupSize;     /* power of two, 32..4096; env ZCCL_QUANT_GROUP; default 512 */
  int stochasticRounding; /* 0 or 1; env ZCCL_QUANT_STOCHASTIC; default 0 */
  int hierarchy;          /* zcclHierarchy_t; env ZCCL_HIERARCHY=auto|flat|two-level */
  /* 1: before each collective the ranks agree on its operation, count, type, op, root, wire
   * format and in-place form, and a mismatch is zcclInvalidUsage on every rank, naming the
   * ranks and the field; arguments one rank rejects fail the others at once, naming it.
   * Costs one small exchange per call. env ZCCL_CHECK=0|1; default 0 */
  int checkCalls;
  /* 0: non-blocking, as NCCL's config.blocking=0: host-memory collectives and groups of sends
   * and receives are queued on the communicator's own thread and return zcclInProgress at
   * once; zcclCommGetAsyncError says zcclInProgress until all of them have finished (then
   * zcclSuccess, or the first failure), and zcclCommFinalize waits for them. The caller must
   * not touch their buffers meanwhile. env ZCCL_BLOCKING=0|1; default 1 */
  int blocking;
} zcclConfig;

#define ZCCL_CONFIG_MAGIC 0x7a63636cu
#define ZCCL_CONFIG_INITIALIZER                                                      \
  {                                                                                  \
    sizeof(zcclConfig), ZCCL_CONFIG_MAGIC, ZCCL_VERSION_CODE, ZCCL_CONFIG_UNDEF_INT, \
        ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_DOUBLE, ZCCL_CONFIG_UNDEF_INT,      \
        ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT,         \
        ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT          \
  }

/*
 * A queued call: the call returns once its work is queued on the communicator's own thread,
 * which runs it in call order while the caller goes on (the transfer advances without the
 * caller's help). zcclTest and zcclWait complete it, returning the call's own result (a
 * failure, a timeout naming the peers, or zcclRemoteError when the communicator was aborted
 * first) and freeing it; zcclGetLastError(NULL) then says why. Until then the call's buffers
 * belong to zccl. Calls without a request on the same communicator run after it.
 */
typedef struct zcclRequest* zcclRequest_t;
/* *done = 1 and the call's result once it has finished (the request is then freed), else
 * *done = 0 and zcclSuccess. Never blocks. */
ZCCL_API zcclResult_t zcclTest(zcclRequest_t request, int* done);
/* Waits until the call has finished; its result. The request is freed. */
ZCCL_API zcclResult_t zcclWait(zcclRequest_t request);

/*
 * Per-call options of the Ex collectives. Initialise with ZCCL_COLL_OPTIONS_INITIALIZER; a
 * field left undefined takes the communicator's configuration. Unlike a configured default,
 * a lossy wireFormat asked for here is an error where it cannot apply (integer types,
 * zcclProd/Max/Min).
 */
typedef struct {
  size_t size;             /* sizeof(zcclCollOptions) */
  unsigned int magic;      /* ZCCL_COLL_OPTIONS_MAGIC */
  unsigned int version;    /* ZCCL_VERSION_CODE */
  int wireFormat;          /* zcclWireFormat_t */
  int quantScheme;         /* zcclQuantScheme_t */
  int quantGroupSize;      /* power of two, 32..4096 */
  int stochasticRounding;  /* 0 or 1 */
  int hierarchy;           /* zcclHierarchy_t */
  unsigned long long seed; /* stochastic rounding: vary it per step; default 0 */
  /* Non-NULL: the call is queued and returns at once with *request to complete it (zcclTest,
   * zcclWait); default NULL (the call returns when its host work has finished). */
  zcclRequest_t* request;
  /* 1: every full group is rotated by a random-sign Walsh-Hadamard transform before it is
   * quantized and back after it is decoded (SDP4Bit's smoothing), which spreads an outlier
   * over its group; the GPU's kernels rotate as the CPU's, to the bit.
   * env ZCCL_QUANT_SMOOTHING=0|1; default 0 */
  int smoothing;
  /* Error feedback of a quantized reduce-scatter or all-reduce (zcclFeedbackCreate), or NULL. */
  struct zcclFeedback* feedback;
  /* The reference of an all-gather of weight differences (zcclReferenceCreate), or NULL. */
  struct zcclReference* reference;
} zcclCollOptions;

#define ZCCL_COLL_OPTIONS_MAGIC 0x7a636f70u
#define ZCCL_COLL_OPTIONS_INITIALIZER                                                           \
  {                                                                                             \
    sizeof(zcclCollOptions), ZCCL_COLL_OPTIONS_MAGIC, ZCCL_VERSION_CODE, ZCCL_CONFIG_UNDEF_INT, \
        ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT, ZCCL_CONFIG_UNDEF_INT,                    \
        ZCCL_CONFIG_UNDEF_INT, 0, NULL, ZCCL_CONFIG_UNDEF_INT, NULL, NULL                       \
  }

/* Bytes and messages this rank sent since creation or the last reset, per link class. */
typedef struct {
  uint64_t bytesSent[zcclNumLinkClasses];
  uint64_t messagesSent[zcclNumLinkClasses];
  /* Bytes moved by the backend's native collectives, whose peers zccl cannot see:
   * counted from the volume a bandwidth-optimal algorithm sends, not per link. */
  uint64_t nativeBytesEstimated;
  uint64_t nativeCalls;
} zcclStats;

ZCCL_API const char* zcclGetErrorString(zcclResult_t result);
/* The message of the last failure on comm, or of this thread when comm is NULL. */
ZCCL_API const char* zcclGetLastError(zcclComm_t comm);
ZCCL_API zcclResult_t zcclGetVersion(int* version);

/*
 * Creating a communicator. Every call below is collective over the ranks it names and
 * bounded: a rank that does not arrive within ZCCL_BOOTSTRAP_TIMEOUT_S (else ZCCL_TIMEOUT_S)
 * is named in the error every waiting rank gets. A rank whose configuration is wrong fails,
 * and so do the others, naming it. config may be NULL. Bytes then travel over UCX (host
 * memory); ZCCL_SOCKET_IFNAME picks the interface of the rendezvous.
 */
#define ZCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[ZCCL_UNIQUE_ID_BYTES];
} zcclUniqueId;

/* On one rank: starts a rendezvous root in this process and names it in *uniqueId, which
 * that rank then hands to the others (by any means: MPI, a file, the environment). */
ZCCL_API zcclResult_t zcclGetUniqueId(zcclUniqueId* uniqueId);
/* On each of nranks ranks, with its own rank and the same id. */
ZCCL_API zcclResult_t zcclCommInitRank(zcclComm_t* comm, int nranks, zcclUniqueId commId, int rank,
                                       const zcclConfig* config);
/* ndev ranks of one communicator in this process, each on a thread of its own while it is set
 * up (comms[i] is rank i); their calls must then come from different threads too. */
ZCCL_API zcclResult_t zcclCommInitAll(zcclComm_t* comms, int ndev, const zcclConfig* config);
/* From the launcher's environment: ZCCL_RANK, ZCCL_WORLD_SIZE and ZCCL_ROOT_ADDR=host:port
 * (zcclrun sets them, and ZCCL_JOB_ID), else torchrun's RANK, WORLD_SIZE, MASTER_ADDR and
 * MASTER_PORT (the rendezvous then takes port MASTER_PORT + 1, leaving MASTER_PORT to
 * torch's own store). Rank 0 serves the rendezvous. */
ZCCL_API zcclResult_t zcclCommInitFromEnv(zcclComm_t* comm, const zcclConfig* config);

/*
 * A key-value store a framework already has (PyTorch's c10d store), as callbacks. Keys are
 * NUL-terminated strings, values bytes. get is called only for keys wait has seen.
 */
typedef struct {
  void* context;
  /* Stores value (bytes long) under key, replacing what was there. */
  zcclResult_t (*set)(void* context, const char* key, const void* value, size_t bytes);
  /* Copies key's value into value; *bytes holds the capacity and receives the length (a
   * value longer than the capacity: copy nothing, set the length, return zcclInvalidUsage). */
  zcclResult_t (*get)(void* context, const char* key, void* value, size_t* bytes);
  /* Returns zcclSuccess once every key exists, zcclTimeout after timeoutSeconds. */
  zcclResult_t (*wait)(void* context, const char* const* keys, int count, double timeoutSeconds);
} zcclStore;

/* On each of nranks ranks: the rendezvous through store, under keys that start with prefix
 * (one prefix per communicator: keys are not removed). */
ZCCL_API zcclResult_t zcclCommInitStore(zcclComm_t* comm, int nranks, int rank,
                                        const zcclStore* store, const char* prefix,
                                        const zcclConfig* config);
/* Collective over comm. color < 0 (ZCCL_SPLIT_NOCOLOR) gives *newcomm = NULL. */
#define ZCCL_SPLIT_NOCOLOR (-1)
ZCCL_API zcclResult_t zcclCommSplit(zcclComm_t comm, int color, int key, zcclComm_t* newcomm,
                                    const zcclConfig* config);
/* Waits for the device work queued on comm to finish (host calls finish before they return);
 * its first failure. As ncclCommFinalize; the communicator stays usable. */
ZCCL_API zcclResult_t zcclCommFinalize(zcclComm_t comm);
ZCCL_API zcclResult_t zcclCommDestroy(zcclComm_t comm);
/* Frees comm without waiting for peers; pending operations are abandoned. */
ZCCL_API zcclResult_t zcclCommAbort(zcclComm_t comm);
ZCCL_API zcclResult_t zcclCommCount(const zcclComm_t comm, int* count);
ZCCL_API zcclResult_t zcclCommUserRank(const zcclComm_t comm, int* rank);
ZCCL_API zcclResult_t zcclCommGetStats(const zcclComm_t comm, zcclStats* stats);
ZCCL_API zcclResult_t zcclCommResetStats(zcclComm_t comm);
/* Sets comm's wire policy (every rank must set the same: with ZCCL_CHECK=1 a call whose
 * format differs fails on every rank), or reads it. */
ZCCL_API zcclResult_t zcclCommSetWirePolicy(zcclComm_t comm, const zcclWirePolicy* policy);
ZCCL_API zcclResult_t zcclCommGetWirePolicy(const zcclComm_t comm, zcclWirePolicy* policy);
/* The first failure of comm's queued device work (zcclSuccess while none), without waiting
 * for it; zcclGetLastError(comm) then says why. As ncclCommGetAsyncError. */
ZCCL_API zcclResult_t zcclCommGetAsyncError(zcclComm_t comm, zcclResult_t* asyncError);

/* In place when sendbuff == recvbuff + rank * sendcount elements. */
ZCCL_API zcclResult_t zcclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                    zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream);
/* In place when recvbuff == sendbuff + rank * recvcount elements. */
ZCCL_API zcclResult_t zcclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                        zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                        zcclStream_t stream);
/* In place when sendbuff == recvbuff. */
ZCCL_API zcclResult_t zcclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                    zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                    zcclStream_t stream);
/* sendbuff is read on root only; in place when sendbuff == recvbuff. */
ZCCL_API zcclResult_t zcclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                    zcclDataType_t datatype, int root, zcclComm_t comm,
                                    zcclStream_t stream);
/* count elements to and from every rank; in place when sendbuff == recvbuff. */
ZCCL_API zcclResult_t zcclAllToAll(const void* sendbuff, void* recvbuff, size_t count,
                                   zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream);
/*
 * Rooted collectives, as NCCL's. The buffer only the root uses (Reduce's and Gather's
 * recvbuff, Scatter's sendbuff) may be anything, NULL included, on the other ranks.
 * Reduce: a reduce-scatter then the blocks gathered at root, so it takes the paths an
 * all-reduce takes (two-level, and quantized: zcclReduceEx below); in place when sendbuff ==
 * recvbuff. Gather: in place when sendbuff == recvbuff + root * sendcount at the root.
 * Scatter: in place when recvbuff == sendbuff + root * recvcount at the root.
 */
ZCCL_API zcclResult_t zcclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                 zcclDataType_t datatype, zcclRedOp_t op, int root, zcclComm_t comm,
                                 zcclStream_t stream);
ZCCL_API zcclResult_t zcclGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                 zcclDataType_t datatype, int root, zcclComm_t comm,
                                 zcclStream_t stream);
ZCCL_API zcclResult_t zcclScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                  zcclDataType_t datatype, int root, zcclComm_t comm,
                                  zcclStream_t stream);
/*
 * The same collectives with per-call options (wire format, hierarchy); options may be NULL.
 * A quantized all-gather (qwZ) quantizes each rank's block once and every rank, its own
 * block included, receives the dequantized values, so all ranks hold identical results.
 * A quantized reduce-scatter (qgZ) quantizes each contribution once per hop (flat: one hop;
 * two-level: intra-node, then inter-node) and reduces in float32; zcclAvg divides by the
 * number of ranks once. A quantized all-reduce is the two in sequence; a quantized reduce is
 * the quantized reduce-scatter, then the reduced blocks gathered at the root exactly.
 */
ZCCL_API zcclResult_t zcclAllGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                                      zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream,
                                      const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclReduceScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                          zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                          zcclStream_t stream, const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclAllReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                                      zcclDataType_t datatype, zcclRedOp_t op, zcclComm_t comm,
                                      zcclStream_t stream, const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclReduceEx(const void* sendbuff, void* recvbuff, size_t count,
                                   zcclDataType_t datatype, zcclRedOp_t op, int root,
                                   zcclComm_t comm, zcclStream_t stream,
                                   const zcclCollOptions* options);
/* The exact collectives with options too (a request, the hierarchy); a lossy wireFormat
 * asked for here is an error. */
ZCCL_API zcclResult_t zcclBroadcastEx(const void* sendbuff, void* recvbuff, size_t count,
                                      zcclDataType_t datatype, int root, zcclComm_t comm,
                                      zcclStream_t stream, const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclAllToAllEx(const void* sendbuff, void* recvbuff, size_t count,
                                     zcclDataType_t datatype, zcclComm_t comm, zcclStream_t stream,
                                     const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclGatherEx(const void* sendbuff, void* recvbuff, size_t sendcount,
                                   zcclDataType_t datatype, int root, zcclComm_t comm,
                                   zcclStream_t stream, const zcclCollOptions* options);
ZCCL_API zcclResult_t zcclScatterEx(const void* sendbuff, void* recvbuff, size_t recvcount,
                                    zcclDataType_t datatype, int root, zcclComm_t comm,
                                    zcclStream_t stream, const zcclCollOptions* options);

/*
 * Beyond ZeRO++: state that a quantized collective keeps from one call to the next, on host
 * memory, for one buffer of one communicator (the calls that use it run in call order).
 *
 * Error feedback (LoCo, EF21), for a quantized reduce-scatter or all-reduce of `count`
 * elements of input (a reduce-scatter's recvcount x ranks): what quantizing this rank's
 * contribution lost, and in two hops what quantizing the partial sums it sends on lost, is
 * kept per element and added before the next call quantizes them, so that over calls nothing
 * is lost (options.feedback). It holds count residuals, float32 unless options say otherwise.
 */
typedef struct zcclFeedback* zcclFeedback_t;
ZCCL_API zcclResult_t zcclFeedbackCreate(zcclComm_t comm, size_t count, zcclDataType_t datatype,
                                         zcclFeedback_t* feedback);
/* Options of zcclFeedbackCreateEx; initialise with ZCCL_FEEDBACK_OPTIONS_INITIALIZER. */
typedef struct {
  size_t size;        /* sizeof(zcclFeedbackOptions) */
  unsigned int magic; /* ZCCL_FEEDBACK_OPTIONS_MAGIC */
  /* What the residuals are kept in: zcclFloat32 (default); zcclBfloat16, half the memory and
   * half the residuals' memory traffic; or zcclInt8, LoCo's compressed error, about 1.13 bytes
   * an element: int8 codes with a float32 scale per 32 elements of a message (the 32's largest
   * magnitude over 127). A bfloat16 or int8 residual is rounded once as it is kept, and what
   * that rounding loses (at most 2^-8 of it, or half its 32's scale) is not fed back. */
  zcclDataType_t residualType;
} zcclFeedbackOptions;
#define ZCCL_FEEDBACK_OPTIONS_MAGIC 0x7a636662u
#define ZCCL_FEEDBACK_OPTIONS_INITIALIZER \
  { sizeof(zcclFeedbackOptions), ZCCL_FEEDBACK_OPTIONS_MAGIC, zcclFloat32 }
/* zcclFeedbackCreate with options (NULL: the defaults). */
ZCCL_API zcclResult_t zcclFeedbackCreateEx(zcclComm_t comm, size_t count, zcclDataType_t datatype,
                                           const zcclFeedbackOptions* options,
                                           zcclFeedback_t* feedback);
ZCCL_API zcclResult_t zcclFeedbackDestroy(zcclFeedback_t feedback);
/* Zeroes the residuals (a non-finite input leaves non-finite residuals: reset after an
 * overflow, or when the loss scale changes). */
ZCCL_API zcclResult_t zcclFeedbackReset(zcclFeedback_t feedback);
/*
 * Weight differences (SDP4Bit's qWD), for an all-gather of `sendcount` elements per rank:
 * every rank keeps the last gathered values (the reference) and sends its block's difference
 * from it, quantized as options.wireFormat says; every rank adds the same decoded differences
 * to the same reference, so that the references never drift apart, and the result is the
 * updated reference. The first call, and every resyncEvery-th after it (0: none after the
 * first), gathers the exact values instead. It holds sendcount x ranks elements of datatype.
 */
typedef struct zcclReference* zcclReference_t;
ZCCL_API zcclResult_t zcclReferenceCreate(zcclComm_t comm, size_t sendcount,
                                          zcclDataType_t datatype, int resyncEvery,
                                          zcclReference_t* reference);
ZCCL_API zcclResult_t zcclReferenceDestroy(zcclReference_t reference);
/* The bytes a feedback's or a reference's state holds (for memory accounting). */
ZCCL_API zcclResult_t zcclFeedbackBytes(const zcclFeedback_t feedback, size_t* bytes);
ZCCL_API zcclResult_t zcclReferenceBytes(const zcclReference_t reference, size_t* bytes);

/*
 * Sub-communicators for hpZ: the ranks of my node (in rank order), and my local rank on
 * every node (in node order). Collective over comm the first time; later calls return the
 * same communicator. It belongs to comm: it is destroyed with comm, and zcclCommDestroy on
 * it is an error. Its statistics are its own.
 */
ZCCL_API zcclResult_t zcclCommSplitNode(zcclComm_t comm, zcclComm_t* nodeComm);
ZCCL_API zcclResult_t zcclCommSplitCrossNode(zcclComm_t comm, zcclComm_t* crossComm);

/*
 * Host memory that the ranks of a communicator inside one node share (MPI_Win_allocate_shared's
 * role; hpZ's node copy of the weights, read in place instead of gathered): collective over
 * comm, whose ranks must all be on one node (zcclCommSplitNode's communicator, or a one-rank
 * one); every rank maps the same `bytes`, zero-filled, at its own *base. What one rank stores
 * there the others see once both have taken part in a collective on comm after the store (a
 * one-element zcclAllReduce is a barrier). Nothing crosses a wire, so nothing is counted in
 * the statistics. Every rank gets the same outcome: zcclInvalidArgument for bytes = 0 or
 * ranks that asked for different sizes, zcclInvalidUsage for a communicator that spans nodes,
 * zcclSystemError where a rank could not map the segment (ranks that the node map put on one
 * node but that do not share /dev/shm). The memory stays mapped until zcclSharedMemoryDestroy,
 * which is local and may come after comm is destroyed.
 */
typedef struct zcclSharedMemory* zcclSharedMemory_t;
ZCCL_API zcclResult_t zcclSharedMemoryCreate(zcclComm_t comm, size_t bytes, void** base,
                                             zcclSharedMemory_t* shared);
ZCCL_API zcclResult_t zcclSharedMemoryDestroy(zcclSharedMemory_t shared);

/* Outside a group, Send and Recv block until done; inside one they complete at GroupEnd. */
ZCCL_API zcclResult_t zcclSend(const void* sendbuff, size_t count, zcclDataType_t datatype,
                               int peer, zcclComm_t comm, zcclStream_t stream);
ZCCL_API zcclResult_t zcclRecv(void* recvbuff, size_t count, zcclDataType_t datatype, int peer,
                               zcclComm_t comm, zcclStream_t stream);
/*
 * Receives count (> 0) elements from whichever rank sends first (its zcclSend to this rank),
 * as MPI_ANY_SOURCE and gloo's recvAnysource do; *source is the sender's rank. Host memory
 * over the MPI and UCX transports, outside groups; messages from one sender keep their order.
 * Blocks until done; on a non-blocking communicator it is queued (zcclInProgress) and
 * *source is written when it completes.
 */
ZCCL_API zcclResult_t zcclRecvFromAny(void* recvbuff, size_t count, zcclDataType_t datatype,
                                      int* source, zcclComm_t comm);
/*
 * For a framework whose own checks reject this rank's part of the next collective on comm
 * before it calls zccl (a sparse tensor, say): the peers' calls to that collective fail at once
 * with zcclInvalidUsage naming this rank and `reason`, as when zccl rejects a rank's arguments
 * itself, instead of waiting for this rank until the timeout. This rank then skips that
 * collective. Host collectives only; the communicator should be aborted afterwards where a
 * peer's call failed.
 */
ZCCL_API zcclResult_t zcclCommRejectCollective(zcclComm_t comm, const char* reason);
/* Groups point-to-point calls of this thread so they progress together (as in NCCL). */
ZCCL_API zcclResult_t zcclGroupStart(void);
ZCCL_API zcclResult_t zcclGroupEnd(void);

#ifdef __cplusplus
}
#endif

#endif /* ZCCL_ZCCL_H_ */
