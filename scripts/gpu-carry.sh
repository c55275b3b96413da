#!/usr/bin/env bash
# What the GPU test machine lacks, into .carry/ for the device tool to send (`carry: [".carry"]`):
# GoogleTest's sources, and UCX's headers with a pkg-config file (that machine has UCX's
# libraries, which Open MPI uses, but not its development files; without them zccl builds no
# UCX transport, and zcclrun's communicators have no host transport).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
carry=$root/.carry
mkdir -p "$carry"
rm -rf "$carry/googletest" "$carry/ucx"
cp -r /usr/src/googletest "$carry/googletest"
mkdir -p "$carry/ucx/include" "$carry/ucx/lib/pkgconfig"
for part in ucp uct ucs ucm; do
  cp -r "/usr/include/$part" "$carry/ucx/include/"
  # The runtime library by its soname, where both machines keep it (Debian's and Ubuntu's
  # libucx0), linked as -l$part from here.
  ln -s "/usr/lib/x86_64-linux-gnu/lib$part.so.0" "$carry/ucx/lib/lib$part.so"
done
cat >"$carry/ucx/lib/pkgconfig/ucx.pc" <<PC
prefix=\${pcfiledir}/../..
Name: ucx
Description: UCX's headers (from $(pkg-config --modversion ucx)) over the machine's libraries
Version: $(pkg-config --modversion ucx)
Cflags: -I\${prefix}/include
Libs: -L\${prefix}/lib -lucp -luct -lucs -lucm
PC
echo "gpu-carry: $(du -sh "$carry" | cut -f1) in $carry"
