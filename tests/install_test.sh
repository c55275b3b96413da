#!/usr/bin/env bash
# Installs zccl into a scratch prefix, runs its programs from there with a clean environment,
# then builds consumers with find_package(zccl) (an MPI program through zccl::mpi, the ZeRO
# optimizer through zccl::zero) and with pkg-config (a program that knows no MPI, run under
# the installed zcclrun), and runs them.
set -euo pipefail
source_dir=$1 build_dir=$2 work=$3
rm -rf "$work" && mkdir -p "$work/consumer"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

# Every installed program runs from the prefix in a clean environment (its run path finds
# libzccl), alone and as the launcher of itself.
clean_env=(env -i PATH=/usr/bin:/bin HOME="${HOME:-/root}")
"${clean_env[@]}" "$work/prefix/bin/zccl-topo" >"$work/topo.txt"
grep -q . "$work/topo.txt"
"${clean_env[@]}" "$work/prefix/bin/zcclrun" -n 2 --timeout 60 "$work/prefix/bin/zccl-topo" \
  >/dev/null
"${clean_env[@]}" "$work/prefix/bin/zccl-sim" --ranks 4 --collective all_gather --bytes 4K \
  --gpus-per-node 2 2>/dev/null | grep -q "two-level\|ring"
for library in "$work"/prefix/lib/libzccl*.so; do
  if "${clean_env[@]}" ldd "$library" | grep -q "not found"; then
    echo "install test: $library has unresolved libraries" >&2
    exit 1
  fi
done

# Only <zccl/zccl.h>: no MPI anywhere, built with pkg-config alone.
cat >"$work/consumer/plain.c" <<'C'
#include <stdio.h>
#include <zccl/zccl.h>
int main(void) {
  zcclComm_t comm;
  int rank = -1, ranks = 0;
  float value = 1.0f;
  if (zcclCommInitFromEnv(&comm, NULL) != zcclSuccess) {
    fprintf(stderr, "%s\n", zcclGetLastError(NULL));
    return 1;
  }
  zcclCommUserRank(comm, &rank);
  zcclCommCount(comm, &ranks);
  if (zcclAllReduce(&value, &value, 1, zcclFloat32, zcclSum, comm, NULL) != zcclSuccess) return 1;
  zcclCommDestroy(comm);
  if (rank == 0) printf("plain consumer ok: %d ranks, sum %.0f\n", ranks, value);
  return value == (float)ranks ? 0 : 1;
}
C
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -std=c99 -o "$work/consumer/plain" "$work/consumer/plain.c" $(pkg-config --cflags --libs zccl)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/prefix/bin/zcclrun" -n 2 --timeout 60 \
  "$work/consumer/plain"

cat >"$work/consumer/main.c" <<'C'
#include <stdio.h>
#include <zccl/zccl_mpi.h>
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  zcclComm_t comm;
  int rank = -1, version = 0;
  if (zcclCommInitMPI(MPI_COMM_WORLD, NULL, &comm) != zcclSuccess) return 1;
  zcclCommUserRank(comm, &rank);
  zcclGetVersion(&version);
  zcclCommDestroy(comm);
  MPI_Finalize();
  printf("consumer ok: rank %d, zccl %d\n", rank, version);
  return rank == 0 ? 0 : 1;
}
C
# The ZeRO optimizer from the installed zccl::zero: one scalar parameter pulled towards 3 by
# a quadratic loss, on one rank.
cat >"$work/consumer/zero.cc" <<'CXX'
#include <zccl/zccl_mpi.h>
#include <zccl/zero.hpp>
#include <cstdio>
using namespace zccl::zero;
struct Scalar final : Module {
  const char* name() const override { return "scalar"; }
  size_t numParams() const override { return 1; }
  void initParams(float* p, uint64_t) const override { p[0] = 0; }
  void forward(const Weights& p, const Batch&, const Tensor&, Tensor* y) override {
    std::vector<float> scratch;
    y->resize(1, 1);
    y->data[0] = p.read(0, 1, &scratch)[0];
  }
  void backward(const Weights& p, const Batch&, const Tensor&, Tensor*, Gradients* g) override {
    std::vector<float> scratch;
    const float grad = 2 * (p.read(0, 1, &scratch)[0] - 3);
    g->write(0, 1, &grad);
  }
};
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  zcclComm_t comm;
  if (zcclCommInitMPI(MPI_COMM_WORLD, NULL, &comm) != zcclSuccess) return 1;
  Model model;
  model.modules.push_back(std::make_unique<Scalar>());
  ZeroOptions options;
  options.precision = Precision::kFloat32;
  options.learningRate = 0.1f;
  std::unique_ptr<ZeroOptimizer> optimizer;
  if (ZeroOptimizer::create(comm, &model, options, &optimizer) != zcclSuccess) return 1;
  Batch batch;
  batch.size = 1;
  batch.inputs = {0};
  batch.targets = {0};
  StepStats stats;
  for (int i = 0; i < 100; ++i) {
    if (optimizer->step(batch, &stats) != zcclSuccess) return 1;
  }
  std::vector<float> params;
  if (optimizer->gatherMasterParameters(&params) != zcclSuccess) return 1;
  optimizer.reset();
  zcclCommDestroy(comm);
  MPI_Finalize();
  std::printf("zero consumer ok: parameter %.3f\n", params[0]);
  return params[0] > 2.5f && params[0] < 3.5f ? 0 : 1;
}
CXX
cat >"$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(zccl REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE zccl::mpi)
add_executable(zero_consumer zero.cc)
target_link_libraries(zero_consumer PRIVATE zccl::zero zccl::mpi)
CM
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/build/consumer"
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/build/zero_consumer"
