// The cross-node traffic of ZeRO-3's collectives against ZeRO++'s, for a model of M bytes in
// bfloat16, measured from zccl's own per-link counters (summed over all ranks):
//   ZCCL_RANKS_PER_NODE=2 mpiexec -n 4 zeropp_volume [megabytes]
// Exits non-zero if a quantized path moves more than its share (qwZ 0.5M, qgZ 0.25M, plus
// the scales' overhead) of what the plain two-level path moves.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "zccl/zccl_mpi.h"

namespace {

#define VOLUME_CHECK(call)                                                       \
  do {                                                                           \
    const zcclResult_t volume_result_ = (call);                                  \
    if (volume_result_ != zcclSuccess) {                                         \
      std::fprintf(stderr, "%s failed: %s\n", #call, zcclGetLastError(nullptr)); \
      MPI_Abort(MPI_COMM_WORLD, 1);                                              \
    }                                                                            \
  } while (0)

struct Traffic {
  double interNode = 0;
  double intraNode = 0;
};

// Runs `call` once and returns the bytes all ranks sent, per link class.
Traffic measure(zcclComm_t comm, const std::function<void()>& call) {
  VOLUME_CHECK(zcclCommResetStats(comm));
  call();
  zcclStats stats;
  VOLUME_CHECK(zcclCommGetStats(comm, &stats));
  double mine[2] = {static_cast<double>(stats.bytesSent[zcclLinkInterNode]),
                    static_cast<double>(stats.bytesSent[zcclLinkIntraNode])};
  double all[2];
  MPI_Allreduce(mine, all, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return Traffic{all[0], all[1]};
}

zcclCollOptions options(zcclWireFormat_t wire, zcclHierarchy_t hierarchy) {
  zcclCollOptions o = ZCCL_COLL_OPTIONS_INITIALIZER;
  o.wireFormat = wire;
  o.hierarchy = hierarchy;
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const double megabytes = argc > 1 ? std::atof(argv[1]) : 64;
  zcclComm_t comm = nullptr;
  VOLUME_CHECK(zcclCommInitMPI(MPI_COMM_WORLD, nullptr, &comm));

  // bfloat16 parameters: M bytes = 2 bytes per parameter, sharded over the ranks.
  const size_t shard = static_cast<size_t>(megabytes * 1048576 / 2 / ranks);
  const double modelBytes = 2.0 * static_cast<double>(shard) * ranks;
  std::vector<uint16_t> mine(shard, 0x3f80), full(shard * ranks, 0x3f80), grads(shard);
  const auto gather = [&](zcclWireFormat_t wire, zcclHierarchy_t hierarchy) {
    const zcclCollOptions o = options(wire, hierarchy);
    return measure(comm, [&] {
      VOLUME_CHECK(
          zcclAllGatherEx(mine.data(), full.data(), shard, zcclBfloat16, comm, nullptr, &o));
    });
  };
  const auto reduce = [&](zcclWireFormat_t wire, zcclHierarchy_t hierarchy) {
    const zcclCollOptions o = options(wire, hierarchy);
    return measure(comm, [&] {
      VOLUME_CHECK(zcclReduceScatterEx(full.data(), grads.data(), shard, zcclBfloat16, zcclAvg,
                                       comm, nullptr, &o));
    });
  };
  const struct Row {
    const char* name;
    Traffic traffic;
  } rows[] = {
      {"all-gather, flat", gather(zcclWireNone, zcclHierarchyFlat)},
      {"all-gather, two-level", gather(zcclWireNone, zcclHierarchyTwoLevel)},
      {"all-gather qwZ INT8, two-level", gather(zcclWireInt8, zcclHierarchyTwoLevel)},
      {"reduce-scatter, flat", reduce(zcclWireNone, zcclHierarchyFlat)},
      {"reduce-scatter, two-level", reduce(zcclWireNone, zcclHierarchyTwoLevel)},
      {"reduce-scatter qgZ INT4, 2-hop", reduce(zcclWireInt4, zcclHierarchyTwoLevel)},
  };
  if (rank == 0) {
    std::printf("# model M = %.1f MiB of bfloat16 parameters, %d ranks\n", modelBytes / 1048576,
                ranks);
    std::printf("%-32s %16s %10s %16s %10s\n", "collective (whole model)", "inter-node B", "x M",
                "intra-node B", "x M");
    for (const Row& row : rows) {
      std::printf("%-32s %16.0f %10.4f %16.0f %10.4f\n", row.name, row.traffic.interNode,
                  row.traffic.interNode / modelBytes, row.traffic.intraNode,
                  row.traffic.intraNode / modelBytes);
    }
  }
  // INT8 carries 1/2 of bf16 and INT4 1/4, plus a float32 scale per 512 elements and headers.
  const double qwz = rows[2].traffic.interNode / rows[1].traffic.interNode;
  const double qgz = rows[5].traffic.interNode / rows[4].traffic.interNode;
  const bool ok = rows[1].traffic.interNode > 0 && qwz < 0.51 && qgz < 0.26;
  if (rank == 0) {
    std::printf("# qwZ / plain inter-node: %.4f   qgZ / plain inter-node: %.4f   %s\n", qwz, qgz,
                ok ? "OK" : "FAILED");
  }
  VOLUME_CHECK(zcclCommDestroy(comm));
  MPI_Finalize();
  return ok ? 0 : 1;
}
