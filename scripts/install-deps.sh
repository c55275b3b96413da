#!/usr/bin/env bash
# Installs, from Debian packages only, what zccl needs to build and test.
# Idempotent: when every package is present it changes nothing and touches no network.
set -euo pipefail

packages=(
  build-essential g++ make cmake pkg-config
  mpich libmpich-dev
  hwloc libhwloc-dev
  libucx-dev
  libgtest-dev libgmock-dev googletest
  libbenchmark-dev
  python3
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all dependencies present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
