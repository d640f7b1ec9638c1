#!/bin/sh
# Runs the whole test suite from a clean checkout: installs dependencies, checks the formatting
# and clang-tidy's checks, builds under AddressSanitizer+UndefinedBehaviorSanitizer and runs the
# tests there, then builds the optimised tree, builds and installs its Debian package (which the
# e2e Package tests use), and runs every test again (its summary is the last line).
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/check-format.sh
cmake --preset default
./scripts/check-tidy.sh build

cmake --preset asan
cmake --build --preset asan
ctest --preset asan

cmake --preset default
cmake --build --preset default
./scripts/install-package.sh build
ctest --preset default
