#!/usr/bin/env bash
# Installs, from the distribution's packages only, what zccl needs to build and test.
# Supported: Debian 12, Ubuntu 22.04 and 24.04. ZCCL_MPI=mpich (default) or openmpi picks
# the MPI; both can be installed side by side (make test builds a second tree with the other).
# Idempotent: when every package is present it changes nothing and touches no network.
set -euo pipefail

mpi=${ZCCL_MPI:-mpich}
case "$mpi" in
  mpich) mpi_packages=(mpich libmpich-dev) ;;
  openmpi) mpi_packages=(openmpi-bin libopenmpi-dev) ;;
  *)
    echo "install-deps: ZCCL_MPI=$mpi is not supported: use mpich or openmpi" >&2
    exit 2
    ;;
esac

distribution=unknown
if [ -r /etc/os-release ]; then
  # shellcheck disable=SC1091
  distribution=$(. /etc/os-release && echo "${ID:-unknown} ${VERSION_ID:-}")
fi
case "$distribution" in
  "debian 12" | "ubuntu 22.04" | "ubuntu 24.04") ;;
  *)
    echo "install-deps: $distribution is not one this script knows (Debian 12, Ubuntu 22.04," \
      "24.04); trying the same package names" >&2
    ;;
esac

# clang and its libFuzzer runtime, for the fuzz targets.
case "$distribution" in
  "ubuntu 22.04") fuzzer_packages=(clang libclang-common-14-dev) ;;
  *) fuzzer_packages=(clang libclang-rt-dev) ;;
esac

packages=(
  build-essential g++ make cmake pkg-config
  "${fuzzer_packages[@]}"
  "${mpi_packages[@]}"
  hwloc libhwloc-dev
  libucx-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  python3
)
# ZCCL_DEPS_EXTRA=bench: what the testbed benchmarks plot with.
[ "${ZCCL_DEPS_EXTRA:-}" = bench ] && packages+=(python3-matplotlib iproute2)
# ZCCL_DEPS_EXTRA=torch: a venv and Python's headers, for the torch backend's extension (torch
# itself comes from PyPI into the venv: scripts/torch-env.sh).
[ "${ZCCL_DEPS_EXTRA:-}" = torch ] && packages+=(python3-venv python3-dev)
# ZCCL_DEPS_EXTRA=docs: make docs's API reference.
[ "${ZCCL_DEPS_EXTRA:-}" = docs ] && packages+=(doxygen)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all dependencies present ($distribution, $mpi)"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-deps: no apt-get here; install by hand: ${missing[*]}" >&2
  exit 2
fi
echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
# Installing a second MPI makes it the machine's mpicc and mpiexec where its alternatives rank
# higher (Open MPI's over MPICH's on Debian): the machine keeps the ones it had.
alternatives=(mpi mpirun)
declare -A before=()
for name in "${alternatives[@]}"; do
  before[$name]=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p' || true)
done
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
for name in "${alternatives[@]}"; do
  now=$(update-alternatives --query "$name" 2>/dev/null | sed -n 's/^Value: //p' || true)
  if [ -n "${before[$name]}" ] && [ "$now" != "${before[$name]}" ]; then
    echo "install-deps: keeping ${before[$name]} as the machine's $name (not $now)"
    "${sudo_cmd[@]}" update-alternatives --set "$name" "${before[$name]}" >/dev/null
  fi
done
