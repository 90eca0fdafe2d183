"""gwr.onnx: ONNX model files to and from gwr.Network.

Errors keep gwr's one-line message naming the file: gwr.FileError (cannot open,
write, ...) and gwr.ParseError (not a valid model)."""

import os

from gwr import _gwr

__all__ = ["load", "save", "load_bytes", "save_bytes"]


def load(path, infer_shapes=False):
    """load(path, infer_shapes=False) -> Network: reads an ONNX model (str or os.PathLike).

    External data is memory-mapped from the model's directory. infer_shapes runs gwr's dtype and
    shape inference on layers whose outputs the file leaves untyped."""
    return _gwr._onnx_load(os.fspath(path), bool(infer_shapes))


def save(net, path, external_data=False, provenance=False):
    """save(net, path, external_data=False, provenance=False): writes net as an ONNX model, atomically.

    external_data: large tensors go to "<file>.data" beside the model. provenance: each
    layer's Layer.provenance goes into its node's metadata_props ("gwr.provenance"), as
    `gwr optimize --provenance` writes it; gwr.onnx.load reads it back."""
    _gwr._onnx_save(net, os.fspath(path), bool(external_data), bool(provenance))


def load_bytes(data, name="<bytes>", infer_shapes=False):
    """load_bytes(data, name="<bytes>", infer_shapes=False) -> Network: a serialized model from memory.

    name is used in messages; external data is an error (no directory to find it in)."""
    return _gwr._onnx_load_bytes(bytes(data) if not isinstance(data, (bytes, bytearray, memoryview)) else data,
                                 name, bool(infer_shapes))


def save_bytes(net):
    """save_bytes(net) -> bytes: net serialized as an ONNX model (never external data)."""
    return _gwr._onnx_save_bytes(net)
