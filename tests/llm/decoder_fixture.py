#!/usr/bin/env python3
"""Decoders exported by torch/optimum for `make test`, without torch.

bench/llm/export.py exports small Hugging Face decoders (2 layers, hidden 64,
KV cache) with optimum; `--skeleton` there keeps each exported graph with
its parameters' data removed (names, dtypes and dims kept) in
tests/llm/fixtures/NAME.skeleton.onnx. This script fills those parameters
with seeded random values of a trained model's scale (norm weights near 1,
the rest N(0, 0.02)), so the tests run the exporter's own graph (its
rotary, repeat-kv, mask and RMSNorm subgraphs exactly as written) without
committing exported weights or installing torch.

    decoder_fixture.py NAME OUT.onnx [--seed N]
    decoder_fixture.py --list
"""
import os
import sys

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")


def fill(model, seed):
    rng = np.random.default_rng(seed)
    for init in model.graph.initializer:
        if init.raw_data or init.float_data or init.int64_data or init.int32_data or init.data_location:
            continue
        if not init.dims and not init.HasField("doc_string"):
            continue
        dt = {onnx.TensorProto.FLOAT: np.float32, onnx.TensorProto.FLOAT16: np.float16}.get(init.data_type)
        if dt is None:
            raise SystemExit(f"decoder_fixture.py: {init.name}: parameter of data type {init.data_type} not filled")
        shape = tuple(init.dims)
        if len(shape) == 1 and ("norm" in init.name or init.name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight"))):
            v = 1.0 + 0.1 * rng.standard_normal(shape)
        else:
            v = 0.02 * rng.standard_normal(shape)
        init.CopyFrom(numpy_helper.from_array(v.astype(dt), init.name))
    return model


def main(argv):
    if argv[1:2] == ["--list"]:
        for f in sorted(os.listdir(FIXTURES)):
            if f.endswith(".skeleton.onnx"):
                print(f[: -len(".skeleton.onnx")])
        return 0
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    seed = int(argv[argv.index("--seed") + 1]) if "--seed" in argv else 0
    src = os.path.join(FIXTURES, argv[1] + ".skeleton.onnx")
    if not os.path.exists(src):
        print(f"decoder_fixture.py: {src}: no such fixture", file=sys.stderr)
        return 2
    m = fill(onnx.load(src), seed)
    tmp = argv[2] + ".tmp"
    onnx.save(m, tmp)
    os.replace(tmp, argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
