#!/bin/sh
# Runs one libFuzzer target for a bounded time (ctest's fuzz/<name> tests, tests/fuzz/CMakeLists.txt):
#   run_fuzzer.sh FUZZER SECONDS SEED_CORPUS FOUND_CORPUS CRASH_PREFIX
# The committed seeds are read only; what the run finds goes to FOUND_CORPUS in the build tree
# (kept between runs of that tree), a crashing input to CRASH_PREFIX<hash>. One worker, one job:
# CI runs two tests at a time on two cores. The last lines show the executions done.
# A fixed random seed (KOPF_FUZZ_SEED, default 1) makes a run explore the same inputs on every
# machine of the same speed, so that CI's verdict does not depend on luck; set another seed (or
# 0 for a random one) to explore further by hand.
set -eu
fuzzer=$1 seconds=$2 seeds=$3 found=$4 crashes=$5
mkdir -p "$found" "$(dirname "$crashes")"
exec "$fuzzer" -seed="${KOPF_FUZZ_SEED:-1}" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -max_len=8192 \
  -print_final_stats=1 -artifact_prefix="$crashes" "$found" "$seeds"
