#!/bin/sh
# Runs the whole test suite from a clean checkout: installs dependencies, checks the formatting
# and clang-tidy's checks; builds under AddressSanitizer+UndefinedBehaviorSanitizer (g++) and runs
# every test there; builds the library, the libFuzzer targets and the parsers' unit tests with
# clang-16 (ASan+UBSan) and runs them, each fuzz target for a bounded time (ctest label `fuzz`);
# builds the tests of threads and the loop under ThreadSanitizer (g++) and runs them; then builds
# the optimised tree (g++), builds and installs its Debian package (which the e2e Package and
# image tests use), and runs every test again (its summary is the last line).
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/check-format.sh
cmake --preset default
./scripts/check-tidy.sh build

cmake --preset asan
cmake --build --preset asan
ctest --preset asan

cmake --preset fuzz
cmake --build --preset fuzz
ctest --preset fuzz

cmake --preset tsan
cmake --build --preset tsan
ctest --preset tsan

cmake --preset default
cmake --build --preset default
./scripts/install-package.sh build
ctest --preset default
