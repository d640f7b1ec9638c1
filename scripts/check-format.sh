#!/bin/sh
# Fails when a C++ file of the project differs from what clang-format (.clang-format) makes of it.
# Fix with: git ls-files '*.cpp' '*.hpp' | xargs clang-format -i
set -eu
cd "$(dirname "$0")/.."
if ! git ls-files '*.cpp' '*.hpp' | xargs clang-format --dry-run -Werror; then
    echo "check-format: the files above are not formatted; run:" >&2
    echo "  git ls-files '*.cpp' '*.hpp' | xargs clang-format -i" >&2
    exit 1
fi
echo "check-format: $(git ls-files '*.cpp' '*.hpp' | wc -l) files formatted"
