#!/bin/sh
# clang-tidy (Debian's clang-tidy-16; clang-tidy-14 cannot parse libstdc++ 12) with the
# project's .clang-tidy over every source file of the library, using the compile commands of a
# configured build directory (default: build). Fails on any finding.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=${1:-build}
TIDY=${CLANG_TIDY:-clang-tidy-16}
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "check-tidy: $BUILD_DIR/compile_commands.json is missing: configure first (cmake --preset default)" >&2
  exit 2
fi
files=$(git ls-files 'src/*.cpp')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Two at a time (the CI machine has two cores); each prints only its findings.
if ! printf '%s\n' $files | xargs -P2 -n4 "$TIDY" -p "$BUILD_DIR" --quiet >"$log" 2>&1; then
  grep -E "(warning|error):" "$log" >&2 || cat "$log" >&2
  echo "check-tidy: findings above (checks in .clang-tidy)" >&2
  exit 1
fi
echo "check-tidy: $(printf '%s\n' $files | wc -l) files clean"
