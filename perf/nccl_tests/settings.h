// What a perf binary was asked to do: nccl-tests' flags, and zccl's own (wire format,
// hierarchy, the baselines timed beside zccl).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "nccl_tests/harness.h"
#include "nccl_tests/memory.h"
#include "zccl/zccl.h"

namespace zccl_perf {

struct Settings {
  size_t minBytes = 32 << 20;  // nccl-tests' defaults
  size_t maxBytes = 32 << 20;
  double stepFactor = 1;
  size_t stepBytes = 0;  // additive step, when -i is given
  int iters = 20;
  int warmup = 5;
  // -R: zccl's calls and the baselines timed by turns in this many rounds of the iterations,
  // so that a drift of the machine's speed during the run reaches every column alike.
  int rounds = 1;
  int check = 1;
  int average = 3;  // time across ranks: 0 rank 0, 1 mean, 2 min, 3 max
  int root = 0;
  double timeout = 0;  // seconds, 0: the library's default
  std::vector<zcclDataType_t> types{zcclFloat32};
  std::vector<zcclRedOp_t> ops{zcclSum};
  std::string json;
  zcclWireFormat_t wire = zcclWireNone;
  zcclHierarchy_t hierarchy = zcclHierarchyAuto;
  bool native = false;        // -B: MPI's own collective on the same buffers
  bool mpiTransport = false;  // -U: zccl's algorithms over MPI's point-to-point instead of UCX
  bool paths = false;         // -P: with -q allow-*, the exact and the allowed format forced
  MemoryChoice memory = MemoryChoice::kAuto;  // -M
};

extern const char* const kTypeNames[zcclNumTypes];
extern const char* const kOpNames[zcclNumOps];
extern const char* const kHierarchyNames[3];
extern const char* const kMemoryNames[3];  // by MemoryChoice

const char* collectiveName(Collective c);
bool hasOp(Collective c);
// Broadcast, reduce, gather, scatter: -r names the root.
bool hasRoot(Collective c);
bool quantizable(Collective c);
bool hasInPlace(Collective c);
// nccl-tests' bus bandwidth factor.
double busFactor(Collective c, int n);

bool parseArguments(int argc, char** argv, Settings* s);
void printUsage(const char* program);
// The sizes of the rows, from -b, -e and -f or -i.
std::vector<size_t> sizes(const Settings& s);

}  // namespace zccl_perf
