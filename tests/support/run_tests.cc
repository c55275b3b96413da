#include <cstdio>

#include "support/comms.h"

namespace zccl_test {
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

}  // namespace

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

}  // namespace zccl_test
