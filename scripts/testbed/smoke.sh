#!/usr/bin/env bash
# The testbed's short check (ctest label testbed): 2 nodes of 2 ranks in namespaces of their
# own behind a capped link; zccl's collectives suite across them under zcclrun (UCX), the
# bytes the link carried against zccl's inter-node counters, and a perf binary under mpiexec
# (Hydra entering the nodes) with MPI's collective beside it, and the link's facts as make
# sim-validate measures them (link-facts.py). Exits 77 (skipped) where
# namespaces cannot be made.
#   scripts/testbed/smoke.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
preload=$(mktemp -d /tmp/zccl-testbed.XXXXXX)
trap 'rm -rf "$preload"' EXIT
gcc -shared -fPIC -O2 "$here/finalize_progress.c" -o "$preload/finalize_progress.so" \
  $(pkg-config --cflags ucx) -ldl -lpthread

job() {
  set -euo pipefail
  read -r -a addrs <<<"$TESTBED_ADDRS"
  # Every node's zcclrun runs in the background; the job fails if any of them does.
  across() {
    local pids=() status=0
    for i in 0 1; do
      "$TESTBED_EXEC" "$i" "$build/zcclrun" -n 2 --nnodes 2 --node-rank "$i" \
        --root "${addrs[0]}:$1" --timeout 300 "${@:2}" &
      pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid" || status=1; done
    return $status
  }
  echo "== collectives across the nodes (zcclrun, UCX)"
  across 29400 "$build/tests/collectives_test_ucx" --gtest_brief=1
  echo "== bytes on the link against zccl's counters"
  across 29410 "$build/tests/link_bytes" "$TESTBED_IFACE"
  echo "== all-gather under mpiexec across the nodes, MPI beside it"
  "$TESTBED_EXEC" 0 "$MPIEXEC" -launcher ssh -launcher-exec "$TESTBED_SSH" \
    -hosts "${addrs[0]},${addrs[1]}" -n 4 -ppn 2 -genv UCX_TLS sm,self,tcp \
    -genv LD_PRELOAD "$preload/finalize_progress.so" \
    "$build/perf/all_gather_perf" -b 64K -e 4M -f 8 -n 3 -w 1 -d bfloat16 -B
  echo "== the link's facts (link-facts.py)"
  local number='[0-9.]+(e[+-]?[0-9]+)?'
  python3 "$here/link-facts.py" --on-testbed |
    grep -E "^stack-gbps=$number,latency-us=$number,shared-latency-us=$number\$"
}
export -f job
export build here preload MPIEXEC=${MPIEXEC:-mpiexec}
"$here/testbed.sh" --nodes 2 --rate 4gbit -- bash -c job
