"""py_rewrite_vs_ort.py IN OUT [REPEAT]: the Python replace_add_with_sub on an ONNX file.

Times, in this process, gwr.onnx.load(IN), a RewritePatternManager running
the seed example's Python pattern (NaivePatternRewriter_ReplaceAddWithSub
from examples/python/replace_add_with_sub.py: every SUM becomes a SUB, one
Python match() call per elementwise layer and one rewrite() per SUM), and
gwr.onnx.save(OUT); best of REPEAT (default 3) for the sum, each phase
printed from that run. bench/py_rewrite_vs_ort.sh runs it against
onnxruntime's session creation. Run with PYTHONPATH=build/python."""
import os
import sys
import time

import gwr
import gwr.onnx

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples', 'python'))
from replace_add_with_sub import NaivePatternRewriter_ReplaceAddWithSub  # noqa: E402


def once(src, dst):
    """One load + rewrite + save; returns (load, rewrite, save, number of rewrites, live layers)."""
    t0 = time.perf_counter()
    net = gwr.onnx.load(src)
    t1 = time.perf_counter()
    manager = gwr.RewritePatternManager()
    manager.add('replace_add_with_sub', NaivePatternRewriter_ReplaceAddWithSub(), 1)
    manager.rewrite(net)
    t2 = time.perf_counter()
    gwr.onnx.save(net, dst)
    t3 = time.perf_counter()
    rewrites = manager.stats()['replace_add_with_sub']['rewrites']
    layers = net.num_live_layers
    net.close()
    return t1 - t0, t2 - t1, t3 - t2, rewrites, layers



def main(argv):
    if len(argv) < 3:
        sys.exit('usage: py_rewrite_vs_ort.py IN OUT [REPEAT]')
    src, dst = argv[1], argv[2]
    repeat = int(argv[3]) if len(argv) > 3 else 3
    best = None
    for _ in range(repeat):
        r = once(src, dst)
        if best is None or sum(r[:3]) < sum(best[:3]):
            best = r
    load, rewrite, save, rewrites, layers = best
    print('python load+rewrite+save (best of %d): %.4f s, load %.4f + rewrite %.4f + save %.4f; '
          '%d rewrites, %d layers after' % (repeat, load + rewrite + save, load, rewrite, save, rewrites, layers))


if __name__ == '__main__':
    main(sys.argv)
