#!/bin/sh
# Runs the whole test suite from a clean checkout: installs dependencies; checks the formatting
# and clang-tidy's checks (on the library files changed since .ci/tidy-baseline); builds the
# optimised tree (g++) with the tests that need an optimised build (the Debian package's, the
# container image's, the benchmark's smoke run), builds and installs its Debian package and runs
# those tests; builds the library, the libFuzzer targets and the parsers' unit tests with
# clang-16 (ASan+UBSan) and runs them, each fuzz target for a bounded time (ctest label `fuzz`);
# with KOPF_TSAN=1, builds the tests of threads and the loop under ThreadSanitizer (g++) and runs
# them; then builds every test under AddressSanitizer+UndefinedBehaviorSanitizer (g++) and runs
# them all (that summary is the last line). `ctest --preset default` in a tree configured without
# KOPF_TESTS_ONLY runs every test optimised, as developers do.
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
phase cmake --preset default -DKOPF_TEST_DIRS= \
  -DKOPF_TESTS_ONLY="e2e/package_test;image/image_test;integration/bench/smoke_test"
phase ./scripts/check-tidy.sh build
phase cmake --build --preset default
phase ./scripts/install-package.sh build
phase ctest --preset default

phase cmake --preset fuzz
phase cmake --build --preset fuzz
phase ctest --preset fuzz

# ThreadSanitizer's tree (the library again, and the tests of threads and the loop) costs some
# five minutes of CI's two cores, which its 40-minute budget no longer has: it runs when asked
# (KOPF_TSAN=1 scripts/test.sh, or its three commands in docs/testing.md).
if [ "${KOPF_TSAN:-0}" = 1 ]; then
  phase cmake --preset tsan
  phase cmake --build --preset tsan
  phase ctest --preset tsan
fi

phase cmake --preset asan
phase cmake --build --preset asan
ctest --preset asan
