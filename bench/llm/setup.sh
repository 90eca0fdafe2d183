#!/bin/sh
# Installs what bench/llm/export.py needs into bench/llm/.venv: torch (the
# PyPI wheel with its CUDA runtime packages, several GB), transformers and
# optimum-onnx, pinned. Never part of `make test`.
set -e
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install -q --upgrade pip setuptools
.venv/bin/pip install -q torch==2.15.0 transformers==4.57.6 optimum==2.1.0 optimum-onnx==0.1.0 \
    onnx==1.23.2 onnxruntime==1.31.1
