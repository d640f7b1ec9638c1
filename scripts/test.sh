#!/bin/sh
# Runs the whole test suite from a clean checkout: installs dependencies; checks the formatting and
# clang-tidy's checks (on the library files changed since .ci/tidy-baseline, with the per-file
# compile commands of a tree configured without unity builds); builds the optimised tree (g++,
# reconfigured as a unity build) with the tests that need an optimised build (the Debian package's,
# the container image's, the benchmark's smoke run), builds and installs its Debian package and runs
# those tests while it builds the tests of threads and the loop under ThreadSanitizer (g++); runs
# those; then builds everything with clang-16 under AddressSanitizer+UndefinedBehaviorSanitizer,
# the libFuzzer targets included, and runs every test there, each fuzz target for a bounded time
# (ctest label `fuzz`; that summary is the last line). `ctest --preset default` in a tree
# configured without KOPF_TESTS_ONLY runs every test optimised, as developers do.
set -eu
cd "$(dirname "$0")/.."
start=$(date +%s)
# Each phase's wall time, so that a slow CI run shows where its time went.
phase() {
  t0=$(date +%s)
  "$@"
  echo "test.sh: [$(( $(date +%s) - t0 )) s, $(( $(date +%s) - start )) s in all] $*"
}
phase ./scripts/setup.sh
phase ./scripts/check-format.sh
phase cmake --preset default -DKOPF_TEST_DIRS= -DCMAKE_UNITY_BUILD=OFF \
  -DKOPF_TESTS_ONLY="e2e/package_test;image/image_test;integration/bench/smoke_test"
phase ./scripts/check-tidy.sh build
# clang-tidy reads the per-file compile commands; the tree is then built as a unity build (a
# few sources per translation unit: the headers' templates compiled once per batch, a quarter
# less compile time), as the sanitizer presets are.
phase cmake --preset default -DCMAKE_UNITY_BUILD=ON
phase cmake --build --preset default
phase ./scripts/install-package.sh build
# The optimised tree's three tests wait on the processes they start more than they compute: they
# run while the TSan tree builds, their output shown once both are done.
default_log=build/ctest-default.log
ctest --preset default > "$default_log" 2>&1 &
default_tests=$!

phase cmake --preset tsan
phase cmake --build --preset tsan
t0=$(date +%s)
if ! wait "$default_tests"; then
  cat "$default_log"
  echo "test.sh: the optimised tree's tests failed (above)"
  exit 1
fi
cat "$default_log"
echo "test.sh: [$(( $(date +%s) - t0 )) s more, $(( $(date +%s) - start )) s in all] ctest --preset default (alongside the TSan build)"
phase ctest --preset tsan

phase cmake --preset asan
phase cmake --build --preset asan
ctest --preset asan
