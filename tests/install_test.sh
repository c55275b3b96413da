#!/usr/bin/env bash
# Installs zccl into a scratch prefix, then builds a consumer with find_package(zccl) and
# another with pkg-config, and runs both.
set -euo pipefail
source_dir=$1 build_dir=$2 work=$3
rm -rf "$work" && mkdir -p "$work/consumer"
cmake --install "$build_dir" --prefix "$work/prefix" >/dev/null

cat >"$work/consumer/main.c" <<'C'
#include <stdio.h>
#include <zccl/zccl.h>
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
cat >"$work/consumer/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.25)
project(consumer C)
find_package(zccl REQUIRED)
add_executable(consumer main.c)
target_link_libraries(consumer PRIVATE zccl::zccl)
CM
cmake -S "$work/consumer" -B "$work/consumer/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/consumer/build" >/dev/null
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/build/consumer"

export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
cc -o "$work/consumer/with_pkgconfig" "$work/consumer/main.c" $(pkg-config --cflags --libs zccl)
LD_LIBRARY_PATH="$work/prefix/lib" "$work/consumer/with_pkgconfig"
