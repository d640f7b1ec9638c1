#!/bin/sh
# Builds the image of an operator with deploy/Dockerfile:
#   deploy/build-image.sh OPERATOR.cpp [TAG]      (default tag: kopf-operator:latest)
# The Kopf++ package must be built first (scripts/install-package.sh, or cpack -G DEB in
# build/). The builder is $BUILDER, else the first of buildah, podman and docker found; $BASE
# replaces the Dockerfile's base image (e.g. one imported locally where no registry is reachable).
set -eu
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SOURCE="${1:?usage: deploy/build-image.sh OPERATOR.cpp [TAG]}"
TAG="${2:-kopf-operator:latest}"
PACKAGE="$(ls "$ROOT"/build/kopfpp_*.deb 2>/dev/null | head -n 1)"
[ -n "$PACKAGE" ] || { echo "build-image: no build/kopfpp_*.deb; run scripts/install-package.sh" >&2; exit 1; }
BUILDER="${BUILDER:-}"
if [ -z "$BUILDER" ]; then
  for candidate in buildah podman docker; do
    if command -v "$candidate" >/dev/null 2>&1; then BUILDER="$candidate"; break; fi
  done
fi
[ -n "$BUILDER" ] || { echo "build-image: no buildah, podman or docker found" >&2; exit 1; }

CONTEXT="$(mktemp -d)"
trap 'rm -rf "$CONTEXT"' EXIT
mkdir "$CONTEXT/operator"
cp "$PACKAGE" "$CONTEXT/kopfpp.deb"
cp "$SOURCE" "$CONTEXT/operator/handlers.cpp"
cat > "$CONTEXT/operator/main.cpp" <<'MAIN'
#include <kopf/main.hpp>
int main(int argc, char** argv) { return kopf::main(argc, argv); }
MAIN
cat > "$CONTEXT/operator/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.25)
project(operator CXX)
find_package(kopf REQUIRED)
add_executable(operator handlers.cpp main.cpp)
target_link_libraries(operator PRIVATE kopf::kopf)
CMAKE
set -- -t "$TAG" -f "$ROOT/deploy/Dockerfile"
if [ -n "${BASE:-}" ]; then set -- "$@" --build-arg "BASE=$BASE"; fi
case "$BUILDER" in
  buildah) buildah bud --layers "$@" "$CONTEXT" ;;
  *) "$BUILDER" build "$@" "$CONTEXT" ;;
esac
echo "build-image: built $TAG with $BUILDER"
