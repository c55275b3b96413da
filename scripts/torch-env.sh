#!/usr/bin/env bash
# The PyTorch environment of zccl's torch backend: a venv (created when missing) holding the
# pinned torch from PyPI and zccl_torch built against the given zccl build tree (without one:
# the venv and torch only, which need no build). Reused when present; zccl_torch is rebuilt
# only when its sources or libzccl.so are newer than it, or it links another tree's libzccl.
#   scripts/torch-env.sh VENV TORCH_VERSION [BUILD_DIR]
set -euo pipefail

venv=$1
version=$2
root=$(cd "$(dirname "$0")/.." && pwd)
python=$venv/bin/python

if [ ! -x "$python" ]; then
  echo "torch-env: creating $venv"
  python3 -m venv "$venv"
fi
installed=$("$python" -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || true)
if [ "$installed" != "$version" ]; then
  echo "torch-env: installing torch==$version into $venv (3-4 minutes: 3 GB to download," \
    "5 GB installed, most of it CUDA libraries that torch's import needs)"
  "$python" -m pip install -q --disable-pip-version-check "torch==$version" numpy
fi

[ $# -lt 3 ] && exit 0
build_dir=$(cd "$3" && pwd)
extension=$("$python" -c 'import zccl_torch._zccl as m; print(m.__file__)' 2>/dev/null || true)
# Up to date: built after its sources and this tree's library, and linked against the latter
# (a venv shared by two build trees holds one extension, linked against one of them).
linked=
[ -n "$extension" ] && linked=$(ldd "$extension" | awk '$1 ~ /^libzccl[.]so/ {print $3}')
if [ "$linked" -ef "$build_dir/libzccl.so" ] &&
  [ -z "$(find "$root/python/zccl_torch" "$root/python/setup.py" \
    "$build_dir/libzccl.so" -newer "$extension" -not -name "*.pyc" \
    -type f 2>/dev/null | head -1)" ]; then
  echo "torch-env: zccl_torch is up to date ($extension)"
  exit 0
fi
echo "torch-env: building zccl_torch against $build_dir"
ZCCL_BUILD_DIR=$build_dir "$python" -m pip install -q --disable-pip-version-check \
  --no-build-isolation --no-deps --force-reinstall "$root/python"
