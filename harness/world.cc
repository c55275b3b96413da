// The harness's world: MPI's exchanges under mpiexec, else a communicator of its own made
// from zcclrun's environment.
#include "harness/world.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace zccl_harness {
namespace {

// The harness's exchanges over a communicator of its own (under zcclrun).
class CommExchange final : public Exchange {
 public:
  explicit CommExchange(zcclComm_t comm) : comm_(comm) {
    zcclCommUserRank(comm_, &rank_);
    zcclCommCount(comm_, &ranks_);
  }
  ~CommExchange() override { zcclCommDestroy(comm_); }

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }
  void barrier() override {
    int token = 0;
    check(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, comm_, nullptr), "barrier");
  }
  void allReduce(double* values, int count, zcclRedOp_t op) override {
    check(
        zcclAllReduce(values, values, static_cast<size_t>(count), zcclFloat64, op, comm_, nullptr),
        "combining numbers across ranks");
  }
  void broadcastBytes(void* data, size_t bytes, int root) override {
    check(zcclBroadcast(data, data, bytes, zcclUint8, root, comm_, nullptr), "broadcast");
  }
  void allGatherBytes(const void* mine, size_t bytes, void* all) override {
    check(zcclAllGather(mine, all, bytes, zcclUint8, comm_, nullptr), "all-gather");
  }

 private:
  void check(zcclResult_t result, const char* what) const {
    if (result == zcclSuccess) return;
    std::fprintf(stderr, "harness: %s: %s\n", what, zcclGetLastError(comm_));
    std::exit(1);
  }

  zcclComm_t comm_;
  int rank_ = 0;
  int ranks_ = 1;
};

}  // namespace

bool World::start(int* argc, char*** argv) {
  mpi_ = std::getenv("ZCCL_RANK") == nullptr && mpi::available();
  if (mpi_) {
    exchange_ = mpi::start(argc, argv);
    return exchange_ != nullptr;
  }
  // The harness's own communicator ignores the environment's emulated nodes and algorithm;
  // a broken program fails instead of hanging its job.
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.ranksPerNode = 0;
  config.algorithm = zcclAlgoAuto;
  config.timeoutSeconds = 900;
  zcclComm_t comm = nullptr;
  if (zcclCommInitFromEnv(&comm, &config) != zcclSuccess) {
    std::fprintf(stderr,
                 "harness: no communicator from the environment (run under zcclrun%s): %s\n",
                 mpi::available() ? " or mpiexec" : "", zcclGetLastError(nullptr));
    return false;
  }
  exchange_ = std::make_unique<CommExchange>(comm);
  return true;
}

void World::finish() {
  exchange_.reset();
  if (mpi_) mpi::finish();
}

zcclResult_t World::makeComm(const zcclConfig* config, Engine engine, zcclComm_t* comm) const {
  return mpi_ ? mpi::worldComm(config, engine, comm) : zcclCommInitFromEnv(comm, config);
}

double World::combine(double value, Combine how) const {
  const zcclRedOp_t op = how == Combine::kMin ? zcclMin : how == Combine::kMax ? zcclMax : zcclSum;
  exchange_->allReduce(&value, 1, op);
  return value;
}

std::vector<std::string> World::gatherNames(const std::string& text) const {
  char mine[64] = {};
  std::strncpy(mine, text.c_str(), sizeof(mine) - 1);
  std::vector<char> all(sizeof(mine) * static_cast<size_t>(ranks()));
  exchange_->allGatherBytes(mine, sizeof(mine), all.data());
  std::vector<std::string> names;
  for (int r = 0; r < ranks(); ++r) names.emplace_back(&all[sizeof(mine) * static_cast<size_t>(r)]);
  return names;
}

World& world() {
  static World theWorld;
  return theWorld;
}

}  // namespace zccl_harness
