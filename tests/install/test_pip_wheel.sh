#!/bin/sh
# The pip route of pyproject.toml + setup.py, offline: `pip wheel
# --no-build-isolation` (Debian's setuptools, wheel and pip; nothing is
# fetched) builds a wheel of the package, pip installs it into a temporary
# folder, and gwr is imported from there, from another directory. To keep it
# cheap the extension is built in BUILD_DIR (GWR_CMAKE_BUILD_DIR), where it is
# already up to date. usage: test_pip_wheel.sh SOURCE_DIR BUILD_DIR
set -u
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1 PYTHONDONTWRITEBYTECODE=1
cd "$src" || exit 1
if ! GWR_CMAKE_BUILD_DIR="$build" /usr/bin/python3 -m pip wheel --no-build-isolation --no-deps -w "$tmp/wheel" . \
        >"$tmp/log" 2>&1; then
    echo "FAIL: pip wheel --no-build-isolation"; tail -30 "$tmp/log"; exit 1
fi
whl=$(ls "$tmp"/wheel/gwr-*.whl 2>/dev/null | head -n 1)
[ -n "$whl" ] || { echo "FAIL: no wheel written"; ls -la "$tmp/wheel"; exit 1; }
echo "built $(basename "$whl")"
if ! /usr/bin/python3 -m pip install --no-deps --target "$tmp/site" "$whl" >"$tmp/log" 2>&1; then
    echo "FAIL: pip install of the wheel"; tail -30 "$tmp/log"; exit 1
fi
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
PYTHONPATH="$tmp/site" /usr/bin/python3 - "$tmp/site" <<'PY'
import os, sys
import numpy as np
import gwr, gwr.functional, gwr.onnx, gwr.passes

site = os.path.realpath(sys.argv[1])
for mod in (gwr, gwr._gwr, gwr.functional, gwr.onnx, gwr.passes):
    assert os.path.realpath(mod.__file__).startswith(site + os.sep), "%s from %s" % (mod.__name__, mod.__file__)
net = gwr.Network("wheel")
x = net.add_input("x", gwr.float32, (3,))
y = gwr.functional.relu(x * 2.0)
net.mark_output(y)
net = gwr.onnx.load_bytes(gwr.onnx.save_bytes(net))
got = gwr.Session(net).run({"x": np.array([-1, 0.5, 2], np.float32)})
np.testing.assert_allclose(list(got.values())[0], [0, 1, 4])
print("the wheel's gwr: imported from", os.path.dirname(gwr.__file__), "and working")
PY
[ $? -eq 0 ] || exit 1

# The command of the issue, `pip install --no-build-isolation .`, where
# Debian lets pip install (PEP 668 keeps it out of /usr's Python): a venv
# that sees Debian's site packages (numpy, setuptools).
/usr/bin/python3 -m venv --system-site-packages "$tmp/venv" >"$tmp/log" 2>&1 || {
    echo "FAIL: python3 -m venv (package python3-venv)"; tail -5 "$tmp/log"; exit 1; }
cd "$src" || exit 1
if ! GWR_CMAKE_BUILD_DIR="$build" "$tmp/venv/bin/pip" install --no-build-isolation . >"$tmp/log" 2>&1; then
    echo "FAIL: pip install --no-build-isolation . in a venv"; tail -30 "$tmp/log"; exit 1
fi
cd "$tmp/elsewhere" || exit 1
"$tmp/venv/bin/python" - "$tmp/venv" <<'PY'
import os, sys
import numpy as np
import gwr

assert os.path.realpath(gwr.__file__).startswith(os.path.realpath(sys.argv[1]) + os.sep), gwr.__file__
net = gwr.Network("venv")
x = net.add_input("x", gwr.float32, (2,))
net.mark_output(x * 3.0)
np.testing.assert_allclose(list(gwr.Session(net).run({"x": np.array([1, -2], np.float32)}).values())[0], [3, -6])
print("pip install --no-build-isolation . in a venv: gwr imported from", os.path.dirname(gwr.__file__))
PY
