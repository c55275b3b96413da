#!/usr/bin/env bash
# Runs libFuzzer targets of a fuzz build for SECONDS each (all of them, or the one named),
# from their corpus in the tree (tests/fuzz/corpus/NAME, read only: what the fuzzer finds
# goes to a scratch copy). A crash, leak or timeout fails the run and leaves the reproducer
# in the scratch folder it names.
#   scripts/run-fuzzers.sh BUILD_DIR [SECONDS] [NAME]
set -euo pipefail
build=$(cd "$1" && pwd) seconds=${2:-60} only=${3:-}
source_dir=$(cd "$(dirname "$0")/.." && pwd)
scratch=$(mktemp -d /tmp/zccl-fuzz.XXXXXX)
export LSAN_OPTIONS="suppressions=$source_dir/tests/fuzz/lsan.supp"
status=0
for fuzzer in "$build"/tests/fuzz/fuzz_*; do
  name=$(basename "$fuzzer")
  name=${name#fuzz_}
  [ -n "$only" ] && [ "$name" != "$only" ] && continue
  corpus="$scratch/$name"
  mkdir -p "$corpus"
  seeds=("$source_dir/tests/fuzz/corpus/$name")
  [ "$name" = topology_xml ] && seeds+=("$source_dir/tests/fixtures/topology")
  if (cd "$scratch" && "$fuzzer" -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
        -print_final_stats=1 "$corpus" "${seeds[@]}" >"$scratch/$name.log" 2>&1); then
    runs=$(grep -m1 'stat::number_of_executed_units' "$scratch/$name.log" | awk '{print $2}')
    echo "fuzz $name: ${seconds} s, ${runs:-?} inputs, no crash"
  else
    echo "fuzz $name: FAILED (log and reproducer in $scratch)"
    tail -40 "$scratch/$name.log"
    status=1
  fi
done
[ $status -eq 0 ] && rm -rf "$scratch"
exit $status
