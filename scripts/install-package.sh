#!/bin/sh
# Builds the Debian package of Kopf++ from a configured and built tree (default: build/) and
# installs it with apt-get on top of the project's dependencies (scripts/setup.sh).
set -eu
cd "$(dirname "$0")/.."
BUILD_DIR="${1:-build}"
(cd "$BUILD_DIR" && cpack -G DEB >/dev/null)
VERSION="$(sed -n 's/^project(kopfpp VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)"
PACKAGE="$BUILD_DIR/kopfpp_${VERSION}_$(dpkg --print-architecture).deb"
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
# --reinstall: the same version rebuilt from other sources must replace the installed files.
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --reinstall "./$PACKAGE" >/dev/null
echo "install-package: installed $PACKAGE"
