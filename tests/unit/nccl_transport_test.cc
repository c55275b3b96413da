// Loading NCCL for the NCCL transport (the transport itself needs a GPU per rank: scripts/
// gpu-check.sh). Each case runs in a child: the library is looked for once per process.
#include "transport/nccl/nccl_transport.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

namespace zccl {
namespace {

void loadAndReport(const char* library) {
  if (library != nullptr) setenv("ZCCL_NCCL_LIB", library, 1);
  std::string reason;
  const bool loadable = ncclLoadable(&reason);
  std::fprintf(stderr, "%s\n", loadable ? "loadable" : reason.c_str());
  std::exit(loadable ? 0 : 1);
}

TEST(NcclTransport, ALibraryThatDoesNotLoadIsNamed) {
#ifdef ZCCL_HAVE_CUDA
  EXPECT_EXIT(loadAndReport("/nonexistent/libnccl.so.2"), ::testing::ExitedWithCode(1),
              "ZCCL_NCCL_LIB=/nonexistent/libnccl.so.2: .*cannot open");
#else
  EXPECT_EXIT(loadAndReport("/nonexistent/libnccl.so.2"), ::testing::ExitedWithCode(1),
              "built without CUDA");
#endif
}

TEST(NcclTransport, ALibraryThatIsNotNcclIsRefused) {
#ifdef ZCCL_HAVE_CUDA
  EXPECT_EXIT(loadAndReport("libm.so.6"), ::testing::ExitedWithCode(1),
              "ZCCL_NCCL_LIB=libm.so.6 has no ncclAllReduce: not NCCL");
#else
  GTEST_SKIP() << "built without CUDA";
#endif
}

TEST(NcclTransport, LoadsTheToolkitsNccl) {
#if defined(ZCCL_HAVE_CUDA) && defined(ZCCL_REAL_NCCL)
  EXPECT_EXIT(loadAndReport(ZCCL_REAL_NCCL), ::testing::ExitedWithCode(0), "loadable");
#else
  GTEST_SKIP() << "no CUDA, or no NCCL library found at configure time";
#endif
}

}  // namespace
}  // namespace zccl
