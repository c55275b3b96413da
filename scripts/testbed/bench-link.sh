#!/usr/bin/env bash
# make bench-link: the perf binaries across 2 testbed nodes (2 ranks each, then 1) behind a
# link capped at 1 and at 10 Gbit/s: all-gather, reduce-scatter and all-reduce of bfloat16,
# 1 MiB to 64 MiB, plain, INT8, INT4, the planner's own choice with the lossy formats allowed
# (ZCCL_QUANT=allow-*, told the link's rate), and MPI's collective beside them, all under
# mpiexec. With two ranks per node each core holds one rank of each node (-bind-to core per
# node), so that a node's ranks never take turns on one core; they still share the cores with
# the other node and the kernel's TCP, so one run varies by tens of percent: the paths run by
# turns, REPEATS times (default 3), and the table takes each figure's median. Five warm-up
# calls per size, and for the planner the checked call and 61 warm-up calls, which cover its
# trials (ZCCL_TUNE: up to four candidates, at most five rounds of three calls each); the
# planner's runs also time the exact and the allowed format forced, on the same buffers (-P),
# since separate runs drift apart by more than the planner's margin, and at 10 Gbit/s by turns
# with them in five rounds (-R 5), since within one run the machine's speed drifts too (plain
# and MPI alike).
# Writes one JSON per run to OUT (bench/link), then the table and the plot.
#   [REPEATS=N] [LINKS="1gbit:0.125:5:1mb:1 10gbit:1.25:40:256kb:5"] [PPNS="2 1"] \
#     scripts/testbed/bench-link.sh BUILD_DIR [OUT]
# LINKS (rate:GB/s:timed calls:the rate limiter's burst:perf's rounds) and PPNS pick the
# configurations to run again; the others' runs in OUT are kept for the table. The burst is
# the credit a link left idle gets back (as a token bucket's): with 1 MB at 10 Gbit/s a 1 MiB
# call after a pause (perf's rounds, a barrier) crossed at the veth's speed; 256 KB still
# carries 10 Gbit/s. At 1 Gbit/s the burst stays 1 MB (8 ms of the link) and the paths are
# timed in blocks: in rounds of one call, INT4 reduce-scatter forced at 2 x 1 read 10-20%
# above the link's limit for its bytes, the credit's doing.
set -euo pipefail
build=$(cd "$1" && pwd)
out=$(mkdir -p "${2:-bench/link}" && cd "${2:-bench/link}" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
gcc -shared -fPIC -O2 "$here/finalize_progress.c" -o "$out/finalize_progress.so" \
  $(pkg-config --cflags ucx) -ldl -lpthread

runs() {
  set -euo pipefail
  read -r -a addrs <<<"$TESTBED_ADDRS"
  bind=()
  [ "$PPN" -gt 1 ] && bind=(-bind-to core)
  for repeat in $(seq "$REPEATS"); do
    for collective in all_gather reduce_scatter all_reduce; do
      allow=allow-int4
      [ "$collective" = all_gather ] && allow=allow-int8
      for path in plain:none int8:int8 int4:int4 planner:$allow; do
        name=${path%%:*} wire=${path#*:}
        extra=(-w 5)
        [ "$name" = plain ] && extra+=(-B -R "$ROUNDS")
        [ "$name" = planner ] && extra=(-w 61 -P -R "$ROUNDS")
        echo "== $RATE, 2 nodes x $PPN, $collective, $name, run $repeat"
        "$TESTBED_EXEC" 0 "$MPIEXEC" -launcher ssh -launcher-exec "$TESTBED_SSH" \
          -hosts "${addrs[0]},${addrs[1]}" -n $((2 * PPN)) -ppn "$PPN" "${bind[@]}" \
          -genv UCX_TLS sm,self,tcp -genv LD_PRELOAD "$OUT/finalize_progress.so" \
          -genv ZCCL_INTER_NODE_GBPS "$GBPS" -genv ZCCL_TIMEOUT_S 600 \
          "$BUILD/perf/${collective}_perf" -b 1M -e 64M -f 4 -n "$ITERS" -d bfloat16 -q "$wire" \
          "${extra[@]}" -J "$OUT/${RATE}_${PPN}ppn_${collective}_${name}_r${repeat}.json"
      done
    done
  done
}
export -f runs
export BUILD=$build OUT=$out MPIEXEC=${MPIEXEC:-mpiexec} REPEATS=${REPEATS:-3}
# Timed calls per size: at 10 Gbit/s a call takes a tenth as long and the paths, CPU-bound,
# lie within 20% of each other, so more calls keep the figures apart from the noise (with 20,
# the planner's call and the same path forced in its run still differed by 10% at 4 MiB).
for rate in ${LINKS:-1gbit:0.125:5:1mb:1 10gbit:1.25:40:256kb:5}; do
  for ppn in ${PPNS:-2 1}; do
    IFS=: read -r RATE GBPS ITERS BURST ROUNDS <<<"$rate"
    rm -f "$out/${RATE}_${ppn}ppn_"*.json
    RATE=$RATE GBPS=$GBPS ITERS=$ITERS ROUNDS=${ROUNDS:-1} PPN=$ppn \
      "$here/testbed.sh" --nodes 2 --rate "$RATE" --burst "${BURST:-1mb}" -- bash -c runs
  done
done
# The distribution's Python: python3-matplotlib is installed for it.
/usr/bin/python3 "$here/report.py" link "$out"
