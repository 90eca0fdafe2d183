"""FLayerInfoMemo and record_signature (imported by gwr/__init__.py)."""

import functools
import inspect

from gwr import _gwr

__all__ = ["FLayerInfoMemo", "record_signature"]


class FLayerInfoMemo:
    """The memo of recorded functional calls: layer -> FLayerInfo, kept by each network.

    Use the singleton: ``FLayerInfoMemo.instance().get(layer.name)`` (under ``gwr.net_guard``, or
    inside a pattern the manager runs) or ``.get(layer)``."""

    _instance = None

    @classmethod
    def instance(cls):
        """The singleton."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def get(self, layer_or_name, network=None):
        """get(layer_or_name, network=None) -> FLayerInfo | None.

        A name is looked up in network, else the current network (StateError when none). None when
        the layer has no recorded call (or no such layer exists)."""
        return _gwr._flayer_get(layer_or_name, network)

    def size(self, network=None):
        """size(network=None) -> int: the number of recorded calls of network (else the current one)."""
        return _gwr._flayer_memo_size(network)

    def __repr__(self):
        return "<gwr.FLayerInfoMemo>"


_UNSUPPORTED = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD,
                inspect.Parameter.POSITIONAL_ONLY)


def record_signature(fn=None, *, kind=None):
    """Decorator: calling the function records an FLayerInfo on the last layer it creates.

    ``@record_signature`` or ``@record_signature(kind="name")`` (default: the function's
    __qualname__). The function builds layers with gwr builders and returns a Tensor or a tuple of
    Tensors; its parameters must be representable by gwr (Tensor, None, int, float, str, lists of
    Tensors/ints/floats), defaults included, else TypeError. ``fn(**flayer.clone_inputs())``
    re-creates the layer. Registration is process-wide: another function under a taken kind is a
    DuplicateError (the same function, or its redefinition by a module reload, is allowed)."""

    def decorate(f):
        k = kind or f.__qualname__
        sig = inspect.signature(f)
        params = {}
        for p in sig.parameters.values():
            if p.kind in _UNSUPPORTED:
                raise TypeError(f"record_signature: {k}: parameter {p.name!r} must be a plain or keyword-only one")
            params[p.name] = None if p.default is inspect.Parameter.empty else p.default
        _gwr._register_functional(k, f, params)

        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            bound = sig.bind(*args, **kwargs)  # a missing argument is Python's TypeError
            bound.apply_defaults()
            return _gwr._call(k, dict(bound.arguments))

        wrapper.kind = k
        return wrapper

    if fn is not None:
        return decorate(fn)
    return decorate
