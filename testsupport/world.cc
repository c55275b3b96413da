#include "testsupport/world.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "zccl/zccl_mpi.h"

namespace zccl_support {
namespace {

void check(zcclResult_t result, zcclComm_t comm, const char* what) {
  if (result == zcclSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, zcclGetLastError(comm));
  std::exit(1);
}

}  // namespace

bool World::start(int* argc, char*** argv) {
  mpi_ = std::getenv("ZCCL_RANK") == nullptr;
  if (mpi_) MPI_Init(argc, argv);
  zcclConfig config = ZCCL_CONFIG_INITIALIZER;
  config.ranksPerNode = 0;  // the harness's own communicator needs no emulated nodes
  config.algorithm = zcclAlgoAuto;
  if (makeComm(config, Engine::kDefault, &control_) != zcclSuccess) {
    std::fprintf(stderr, "no communicator: %s\n", zcclGetLastError(nullptr));
    return false;
  }
  zcclCommUserRank(control_, &rank_);
  zcclCommCount(control_, &ranks_);
  return true;
}

void World::finish() {
  if (control_ != nullptr) zcclCommDestroy(control_);
  control_ = nullptr;
  if (mpi_) MPI_Finalize();
}

zcclResult_t World::makeComm(const zcclConfig& config, Engine engine, zcclComm_t* comm) const {
  if (!mpi_) return zcclCommInitFromEnv(comm, &config);
  if (engine == Engine::kDefault) return zcclCommInitMPI(MPI_COMM_WORLD, &config, comm);
  const char* previous = std::getenv("ZCCL_TRANSPORT");
  const std::string saved = previous != nullptr ? previous : "";
  setenv("ZCCL_TRANSPORT", "ucx", 1);
  const zcclResult_t result = zcclCommInitMPI(MPI_COMM_WORLD, &config, comm);
  if (previous != nullptr) {
    setenv("ZCCL_TRANSPORT", saved.c_str(), 1);
  } else {
    unsetenv("ZCCL_TRANSPORT");
  }
  return result;
}

void World::barrier() const {
  int token = 0;
  check(zcclAllReduce(&token, &token, 1, zcclInt32, zcclSum, control_, nullptr), control_,
        "barrier");
}

double World::combine(double value, Combine how) const {
  const zcclRedOp_t op = how == Combine::kMin ? zcclMin : how == Combine::kMax ? zcclMax : zcclSum;
  check(zcclAllReduce(&value, &value, 1, zcclFloat64, op, control_, nullptr), control_,
        "combining across ranks");
  return value;
}

void World::broadcast(double* value, int root) const {
  check(zcclBroadcast(value, value, 1, zcclFloat64, root, control_, nullptr), control_,
        "broadcast");
}

std::vector<std::string> World::gatherNames(const std::string& text) const {
  char mine[64] = {};
  std::strncpy(mine, text.c_str(), sizeof(mine) - 1);
  std::vector<char> all(sizeof(mine) * static_cast<size_t>(ranks_));
  check(zcclAllGather(mine, all.data(), sizeof(mine), zcclUint8, control_, nullptr), control_,
        "gathering names");
  std::vector<std::string> names;
  for (int r = 0; r < ranks_; ++r) names.emplace_back(&all[sizeof(mine) * static_cast<size_t>(r)]);
  return names;
}

}  // namespace zccl_support
