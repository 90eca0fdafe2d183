#!/bin/sh
# `make install`'s copy of the Python package: installs the build into a
# temporary prefix, then imports gwr from another directory with only the
# installed site directory on PYTHONPATH (so neither build/python nor the
# source tree can be what is found), and uses it: a network built, rewritten
# by a Python pattern and run. usage: test_install_python.sh BUILD_DIR
set -u
build=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
cmake --install "$build" --prefix "$tmp/prefix" >"$tmp/log" 2>&1 || { echo "FAIL: cmake --install"; tail -20 "$tmp/log"; exit 1; }
# The directory install.cmake chose: wherever the package landed under the
# prefix (lib/python3.X/dist-packages on Debian).
init=$(find "$tmp/prefix" -path '*/gwr/__init__.py' | head -n 1)
[ -n "$init" ] || { echo "FAIL: no gwr/__init__.py installed under the prefix"; exit 1; }
site=$(dirname "$(dirname "$init")")
echo "installed into ${site#"$tmp/prefix/"}"
for f in __init__.py _gwr*.so; do
    ls "$site"/gwr/$f >/dev/null 2>&1 || { echo "FAIL: $site/gwr/$f not installed"; fail=1; }
done
mkdir "$tmp/elsewhere"
cd "$tmp/elsewhere" || exit 1
env -u PYTHONHOME PYTHONPATH="$site" PYTHONDONTWRITEBYTECODE=1 /usr/bin/python3 - "$site" <<'PY' || fail=1
import os, sys
import numpy as np
import gwr

site = os.path.realpath(sys.argv[1])
where = os.path.realpath(gwr.__file__)
assert where.startswith(site + os.sep), "gwr imported from %s, not from the install (%s)" % (where, site)
assert os.path.realpath(gwr._gwr.__file__).startswith(site + os.sep), gwr._gwr.__file__


class AddToSub(gwr.PatternRewriter):
    def __init__(self):
        super().__init__("add_to_sub", root_layer={gwr.LayerType.ELEMENTWISE})

    def match(self, layer):
        return layer.ew_op == gwr.ElementWiseOperation.SUM

    def rewrite(self, layer):
        with gwr.net_guard(layer.network):
            a, b = layer.get_inputs(0, 1)
            layer.get_outputs(0)[0].replace_all_uses_with(a - b)
            layer.mark_as_removed()


net = gwr.Network("installed")
x = net.add_input("x", gwr.float32, (2, 3))
y = net.add_input("y", gwr.float32, (2, 3))
out = x + y
out.name = "out"
net.mark_output(out)
m = gwr.RewritePatternManager()
m.add("add_to_sub", AddToSub(), 1)
m.rewrite(net)
xv = np.arange(6, dtype=np.float32).reshape(2, 3)
yv = np.full((2, 3), 0.5, dtype=np.float32)
got = gwr.Session(net).run({"x": xv, "y": yv})["out"]
np.testing.assert_allclose(got, xv - yv)
print("installed gwr: imported from", os.path.dirname(where), "and working")
PY
if [ $fail = 0 ]; then echo "install/python_package: passed"; else echo "install/python_package: FAILED"; fi
exit $fail
