#!/usr/bin/env bash
# ctest's way into the torch tests: PYTHON NPROC SCRIPT [ARGS] under torchrun; skipped (77)
# where the torch environment has not been made (make torch).
python=$1
nproc=$2
shift 2
if ! "$python" -c 'import zccl_torch' 2>/dev/null; then
  echo "skipped: no zccl_torch in $python (run make torch)"
  exit 77
fi
# torchrun's own warnings (OMP_NUM_THREADS) are not the test's.
exec "$python" -m torch.distributed.run --standalone --nproc-per-node "$nproc" "$@" 2> >(grep -v "^W[0-9]\{4\} " >&2)
