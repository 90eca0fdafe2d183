#!/bin/sh
# Installs the Debian packages gwr needs to build and test, and only those
# missing. Safe to run again: with everything present it does nothing.
set -eu

PKGS="build-essential cmake clang libclang-rt-14-dev pkg-config graphviz python3 python3-onnx"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "setup: installing missing packages:$missing"
if [ "$(id -u)" != 0 ]; then
    echo "setup: not root; please run: apt-get install -y$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
# shellcheck disable=SC2086
apt-get install -y -q $missing
