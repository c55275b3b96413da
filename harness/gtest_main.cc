// The main of every multi-rank GoogleTest suite: starts the world, runs the tests on every
// rank (rank 0 prints the usual report, the others only their failures) and exits with the
// worst status of all ranks.
#include <cstdio>

#include "harness/gtest.h"

namespace zccl_harness {
namespace {

class RankFailurePrinter : public ::testing::EmptyTestEventListener {
 public:
  explicit RankFailurePrinter(int rank) : rank_(rank) {}
  void OnTestPartResult(const ::testing::TestPartResult& result) override {
    if (!result.failed()) return;
    std::fprintf(stderr, "[rank %d] %s:%d: failure\n%s\n", rank_,
                 result.file_name() ? result.file_name() : "?", result.line_number(),
                 result.summary());
  }

 private:
  int rank_;
};

int runAllTests(int rank) {
  if (rank != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
    listeners.Append(new RankFailurePrinter(rank));
  }
  double worst = RUN_ALL_TESTS();
  // The worst status of all ranks: a sum of 0 and 1.
  sumOverRanks(&worst, 1);
  return worst > 0 ? 1 : 0;
}

}  // namespace
}  // namespace zccl_harness

int main(int argc, char** argv) {
  zccl_harness::World& world = zccl_harness::world();
  if (!world.start(&argc, &argv)) return 1;
  ::testing::InitGoogleTest(&argc, argv);
  const int result = zccl_harness::runAllTests(world.rank());
  world.finish();
  return result;
}
