#!/bin/sh
# Installs every build and test dependency of Kopf++ from Debian packages.
# Idempotent: re-running it installs nothing new. Needs root (or sudo).
set -eu

PACKAGES="
  build-essential cmake ninja-build ccache git pkg-config clang-format clang-tidy-16
  clang-16 libclang-rt-16-dev llvm
  libboost1.81-dev libboost-json1.81-dev libboost-url1.81-dev libboost-system1.81-dev
  libssl-dev openssl nlohmann-json3-dev libyaml-cpp-dev libspdlog-dev libfmt-dev libcli11-dev
  libsqlite3-dev libmimalloc-dev libgtest-dev libgmock-dev googletest libbenchmark-dev
  prometheus-cpp-dev prometheus
  buildah mmdebstrap uidmap fuse-overlayfs
  python3 python3-kubernetes python3-yaml curl ca-certificates
"

missing=""
for p in $PACKAGES; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing="$missing $p"
  fi
done

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

if [ -n "$missing" ]; then
  echo "setup: installing:$missing"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends $missing
fi

# kubectl: the cpp image ships Google's kubectl with per-minor binaries; it cannot be
# reinstalled from apt here. Debian's kubernetes-client (kubectl 1.20) is the fallback.
if ! command -v kubectl >/dev/null 2>&1; then
  echo "setup: kubectl missing, installing Debian's kubernetes-client"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends kubernetes-client
fi
echo "setup: all dependencies present"
