"""Every public class, function, method and property of the package has a
docstring (help(gwr.PatternRewriter) is useful), and docs/python.md names
every public name of the package."""
import inspect
import os

import gwr
import gwr.functional
import gwr.onnx
import gwr.passes
import gwr.rules

MODULES = [gwr, gwr.functional, gwr.onnx, gwr.passes, gwr.rules]


def public(obj):
    for name in dir(obj):
        if name.startswith("_"):
            continue
        yield name, getattr(obj, name)


def is_ours(v):
    mod = getattr(v, "__module__", "") or ""
    return mod == "gwr" or mod.startswith("gwr.")


def test_every_public_name_has_a_docstring():
    missing = []
    for mod in MODULES:
        assert (mod.__doc__ or "").strip(), mod.__name__
        for name, v in public(mod):
            if inspect.ismodule(v) or not (inspect.isclass(v) or callable(v)):
                continue
            if not is_ours(v):
                continue
            if not (v.__doc__ or "").strip():
                missing.append(f"{mod.__name__}.{name}")
            if inspect.isclass(v) and not issubclass(v, BaseException) and not issubclass(v, int):
                for mname, m in vars(v).items():
                    if mname.startswith("_") and mname not in ("__enter__", "__exit__", "__init__"):
                        continue
                    if not (callable(m) or isinstance(m, property) or inspect.isdatadescriptor(m)
                            or inspect.ismethoddescriptor(m)):
                        continue
                    if mname == "__init__" and not inspect.isfunction(m):
                        continue  # a C type documents its constructor in the class docstring
                    doc = getattr(m, "__doc__", None)
                    if not (doc or "").strip():
                        missing.append(f"{mod.__name__}.{name}.{mname}")
    assert not missing, "no docstring: " + ", ".join(sorted(set(missing)))


def test_python_md_mentions_the_public_classes():
    here = os.path.dirname(os.path.abspath(__file__))
    text = open(os.path.join(here, "..", "..", "docs", "python.md"), encoding="utf-8").read()
    names = ["Network", "Tensor", "Layer", "net_guard", "FLayerInfo", "FLayerInfoMemo", "record_signature",
             "PatternRewriter", "PatternAnalyzer", "RewritePatternManager", "AnalysisPatternManager", "Session",
             "LifetimeError", "optimize"]
    for n in names:
        assert n in text, n
    # and every builder of gwr.functional
    for name, v in public(gwr.functional):
        if inspect.isfunction(v) and v.__module__ == "gwr.functional":
            assert f"{name}" in text or name in ("Tensor",), f"docs/python.md does not name gwr.functional.{name}"
