// Bytes on the wire against zccl's counters, on the testbed (scripts/testbed): every rank
// counts what its node's interface sent (/sys/class/net/IFACE/statistics/tx_bytes) around a
// run of all-gathers, reduce-scatters and all-reduces, and the node's ranks' inter-node
// counters are compared with it. Prints one line per node and exits non-zero when they differ
// by more than 1%.
//   link_bytes IFACE
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "zccl/zccl.h"

namespace {

double transmitted(const std::string& iface) {
  std::ifstream counter("/sys/class/net/" + iface + "/statistics/tx_bytes");
  double bytes = -1;
  counter >> bytes;
  return bytes;
}

void check(zcclResult_t result, zcclComm_t comm) {
  if (result == zcclSuccess) return;
  std::fprintf(stderr, "link_bytes: %s\n", zcclGetLastError(comm));
  std::exit(1);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: link_bytes IFACE (under zcclrun on the testbed)\n");
    return 2;
  }
  zcclComm_t comm = nullptr;
  check(zcclCommInitFromEnv(&comm, nullptr), nullptr);
  zcclComm_t node = nullptr;
  check(zcclCommSplitNode(comm, &node), comm);
  int rank = 0, ranks = 0, local = 0;
  zcclCommUserRank(comm, &rank);
  zcclCommCount(comm, &ranks);
  zcclCommUserRank(node, &local);
  const size_t count = size_t{4} << 20;  // 16 MiB of bfloat16 per rank and call
  std::vector<uint16_t> send(count * static_cast<size_t>(ranks), 0x3f80), recv(send.size());
  zcclCollOptions int4 = ZCCL_COLL_OPTIONS_INITIALIZER;
  int4.wireFormat = zcclWireInt4;
  int32_t token = 0;
  check(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, comm, nullptr), comm);  // barrier
  check(zcclCommResetStats(comm), comm);
  const double before = transmitted(argv[1]);
  for (int round = 0; round < 3; ++round) {
    check(zcclAllGather(send.data(), recv.data(), count, zcclBfloat16, comm, nullptr), comm);
    check(zcclReduceScatter(send.data(), recv.data(), count, zcclBfloat16, zcclSum, comm, nullptr),
          comm);
    check(zcclReduceScatterEx(send.data(), recv.data(), count, zcclBfloat16, zcclSum, comm, nullptr,
                              &int4),
          comm);
    check(zcclAllReduce(send.data(), recv.data(), count, zcclBfloat16, zcclSum, comm, nullptr),
          comm);
  }
  check(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, comm, nullptr), comm);
  const double wire = transmitted(argv[1]) - before;
  zcclStats stats;
  check(zcclCommGetStats(comm, &stats), comm);
  // The node's ranks' counters together, against what the node's interface sent.
  double counted = static_cast<double>(stats.bytesSent[zcclLinkInterNode]);
  check(zcclAllReduce(&counted, &counted, 1, zcclFloat64, zcclSum, node, nullptr), comm);
  int status = 0;
  if (local == 0) {
    const double difference = wire / counted - 1;
    status = difference > 0.01 || difference < -0.01 ? 1 : 0;
    std::printf(
        "node of rank %d: %s sent %.0f bytes, zccl counted %.0f inter-node bytes: %+.2f%% "
        "%s\n",
        rank, argv[1], wire, counted, 100 * difference, status ? "FAILED" : "ok");
  }
  zcclCommDestroy(comm);
  return status;
}
