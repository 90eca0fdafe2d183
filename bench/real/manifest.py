"""The pinned manifest of real models (bench/real/models.txt) and the cache.

Shared by fetch.py (downloads), run.py (the benchmark) and
tests/real/test_real_models.py (make test's subset). Only the standard
library and numpy: fetch.py must run before anything else is known to work.
"""
import hashlib
import os
import re
from dataclasses import dataclass, field

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "models.txt")


def cache_dir():
    """The cache: $GWR_REAL_CACHE, or bench/real/cache/ (gitignored)."""
    return os.environ.get("GWR_REAL_CACHE") or os.path.join(HERE, "cache")


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@dataclass
class InputSpec:
    name: str
    shape: list          # concrete dims; [] is a scalar
    lo: float = None     # range [lo, hi) of the seeded random values
    hi: float = None
    const: float = None  # or one constant value


@dataclass
class Model:
    name: str
    family: str
    package: str
    version: str
    member: str
    sha256: str
    flags: set = field(default_factory=set)
    inputs: list = field(default_factory=list)

    @property
    def path(self):
        return os.path.join(cache_dir(), "models", self.name + ".onnx")

    @property
    def transformer_type(self):
        for f in self.flags:
            if f.startswith("tf="):
                return f[3:]
        return None


def _parse_inputs(text, where):
    specs = []
    for part in text.split(";"):
        m = re.fullmatch(r"([^=]+)=([0-9,]*)(?:@(.*))?", part)
        if not m:
            raise ValueError(f"{where}: bad input spec '{part}'")
        name, dims, rng = m.groups()
        shape = [int(d) for d in dims.split(",")] if dims else []
        spec = InputSpec(name, shape)
        if rng is not None:
            if ":" in rng:
                lo, hi = rng.split(":")
                spec.lo, spec.hi = float(lo), float(hi)
            else:
                spec.const = float(rng)
        specs.append(spec)
    return specs


def load(path=MANIFEST):
    """The manifest's models, in file order."""
    models = []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            cols = line.split()
            where = f"{path}:{lineno}"
            if len(cols) != 7:
                raise ValueError(f"{where}: expected 7 columns, got {len(cols)}")
            name, family, pkg, member, sha, flags, inputs = cols
            if "==" not in pkg:
                raise ValueError(f"{where}: package '{pkg}' is not pinned (PKG==VERSION)")
            package, version = pkg.split("==", 1)
            if not re.fullmatch(r"[0-9a-f]{64}", sha):
                raise ValueError(f"{where}: bad sha256 '{sha}'")
            models.append(Model(name, family, package, version, member, sha,
                                set() if flags == "-" else set(flags.split(",")),
                                _parse_inputs(inputs, where)))
    names = [m.name for m in models]
    if len(set(names)) != len(names):
        raise ValueError(f"{path}: duplicate model names")
    return models


def make_inputs(model, onnx_model, seed=0):
    """Seeded random inputs {name: ndarray} for the graph inputs of onnx_model
    (a ModelProto), shaped and ranged as the manifest says."""
    import numpy as np
    from onnx import helper

    rng = np.random.default_rng(seed)
    inits = {i.name for i in onnx_model.graph.initializer}
    specs = {s.name: s for s in model.inputs}
    feeds = {}
    for vi in onnx_model.graph.input:
        if vi.name in inits:
            continue
        if vi.name not in specs:
            raise ValueError(f"{model.name}: the manifest gives no shape for input '{vi.name}'")
        s = specs[vi.name]
        dtype = helper.tensor_dtype_to_np_dtype(vi.type.tensor_type.elem_type)
        if s.const is not None:
            a = np.full(s.shape, s.const, dtype=dtype)
        elif np.issubdtype(dtype, np.integer):
            lo, hi = (0, 3) if s.lo is None else (int(s.lo), int(s.hi))
            a = rng.integers(lo, hi, size=s.shape).astype(dtype)
        elif dtype == np.bool_:
            a = rng.integers(0, 2, size=s.shape).astype(dtype)
        else:
            lo, hi = (-1.0, 1.0) if s.lo is None else (s.lo, s.hi)
            a = rng.uniform(lo, hi, size=s.shape).astype(dtype)
        feeds[vi.name] = a
    return feeds
