#!/bin/sh
# clang-tidy (Debian's clang-tidy-16; clang-tidy-14 cannot parse libstdc++ 12) with the
# project's .clang-tidy over the library's sources, using the compile commands of a configured
# build directory. Fails on any finding.
#
#   scripts/check-tidy.sh [BUILD_DIR] [--all]
#
# By default only the files changed since the commit named in .ci/tidy-baseline are checked
# (a .cpp that changed, or whose header beside it changed): every file takes 10-30 s, and the
# whole library is some ten minutes of CI's two cores. `--all` checks every file; run it (and
# then move the baseline to HEAD) when .clang-tidy changes or before recording a new baseline.
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR=build
ALL=no
for arg in "$@"; do
  case "$arg" in
    --all) ALL=yes ;;
    *) BUILD_DIR=$arg ;;
  esac
done
TIDY=${CLANG_TIDY:-clang-tidy-16}
if [ ! -f "$BUILD_DIR/compile_commands.json" ]; then
  echo "check-tidy: $BUILD_DIR/compile_commands.json is missing: configure first (cmake --preset default)" >&2
  exit 2
fi

all_files=$(git ls-files 'src/*.cpp')
files=$all_files
scope="every file"
baseline=$(cat .ci/tidy-baseline 2>/dev/null || true)
if [ "$ALL" = no ] && [ -n "$baseline" ] && git merge-base --is-ancestor "$baseline" HEAD 2>/dev/null; then
  # Committed changes since the baseline, and uncommitted ones.
  changed=$( (git diff --name-only "$baseline" HEAD; git diff --name-only HEAD) | sort -u)
  if printf '%s\n' "$changed" | grep -qx '.clang-tidy'; then
    scope="every file (.clang-tidy changed since ${baseline})"
  else
    files=""
    for f in $all_files; do
      stem=${f%.cpp}
      if printf '%s\n' "$changed" | grep -qxF -e "$f" -e "$stem.hpp" -e "$stem.h"; then
        files="$files $f"
      fi
    done
    scope="changed since $(git rev-parse --short "$baseline")"
  fi
elif [ "$ALL" = no ] && [ -n "$baseline" ]; then
  scope="every file (baseline ${baseline} is not an ancestor of HEAD)"
fi

count=$(printf '%s\n' $files | grep -c . || true)
if [ "$count" -eq 0 ]; then
  echo "check-tidy: no library source changed since $(git rev-parse --short "$baseline")"
  exit 0
fi
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# Two at a time (the CI machine has two cores); each prints only its findings.
if ! printf '%s\n' $files | xargs -P2 -n4 "$TIDY" -p "$BUILD_DIR" --quiet >"$log" 2>&1; then
  grep -E "(warning|error):" "$log" >&2 || cat "$log" >&2
  echo "check-tidy: findings above (checks in .clang-tidy)" >&2
  exit 1
fi
echo "check-tidy: ${count} files clean (${scope})"
