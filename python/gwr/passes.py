"""gwr.passes: the built-in rewrite passes, by label.

    >>> import gwr
    >>> "fuse_gelu" in gwr.passes.labels()
    True
    >>> gwr.passes.info("fuse_gelu")["level"]
    'extended'
    >>> m = gwr.RewritePatternManager()
    >>> m.add("gelu", gwr.passes.get("fuse_gelu"), 10)

The same table drives ``gwr rewrite --list`` and ``gwr.optimize``.
"""

from gwr import _gwr

__all__ = ["labels", "info", "get"]


def labels():
    """The labels of the built-in passes, in the table's order (a new list)."""
    return _gwr._passes_labels()


def info(label):
    """What the pass ``label`` is: a dict with label, summary, benefit (its
    default, from its table position), phase ('cleanup', 'fold', 'fuse',
    'lower', 'kernel'), level ('basic', 'extended', ...), targets (a list of
    'onnx', 'ort', 'gwr'), numerics ('exact', 'approx', 'changes') and
    tolerance.
    Raises gwr.NotFoundError for an unknown label."""
    return _gwr._passes_info(label)


def get(label):
    """The built-in pass ``label`` as a gwr.BuiltinPattern (.name, .label,
    .benefit, .summary), to add to a RewritePatternManager:
    ``manager.add("my_label", gwr.passes.get("fuse_gelu"), benefit)``.
    Raises gwr.NotFoundError for an unknown label."""
    return _gwr._passes_get(label)
