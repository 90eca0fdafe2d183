#!/usr/bin/env python3
"""Stock decoder exports for the LLM benchmarks (issue 25).

Builds Hugging Face decoders from their configs with random weights (no
download of weights: the machines reach only PyPI, npm and Debian) and
exports each the way users do, with optimum's ONNX exporter and the task
text-generation-with-past: one model taking input_ids, attention_mask,
position_ids (where the architecture has them) and past_key_values.N.key /
.value, returning logits and present.N.key / .value. The same file is the
prefill form (past length 0) and the decode-step form (one new token).

Needs torch, transformers and optimum-onnx: `bench/llm/setup.sh` installs
them into bench/llm/.venv (several GB: never part of `make test`). Models go
to bench/llm/cache/<name>/model.onnx (ignored by git, reused when present).

    bench/llm/.venv/bin/python bench/llm/export.py [--only NAME,...] [--list]
"""
import argparse
import json
import os
import shutil
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CACHE = os.environ.get("GWR_LLM_CACHE", os.path.join(HERE, "cache"))

# name -> (transformers config class, config kwargs, dtype)
SMALL = dict(hidden_size=512, intermediate_size=1408, num_hidden_layers=4, num_attention_heads=8,
             num_key_value_heads=2, vocab_size=8192, max_position_embeddings=4096)
TINY = dict(hidden_size=64, intermediate_size=176, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, vocab_size=512, max_position_embeddings=2048)
MODELS = {
    "llama-gqa": ("LlamaConfig", SMALL, "fp32"),
    "llama-gqa-fp16": ("LlamaConfig", SMALL, "fp16"),
    "qwen2": ("Qwen2Config", SMALL, "fp32"),
    "qwen2-fp16": ("Qwen2Config", SMALL, "fp16"),
    "mistral": ("MistralConfig", dict(SMALL, sliding_window=None), "fp32"),
    "phi3": ("Phi3Config", dict(SMALL, num_key_value_heads=8, pad_token_id=0), "fp32"),
    "gpt2": ("GPT2Config", dict(n_embd=512, n_layer=4, n_head=8, vocab_size=8192, n_positions=4096), "fp32"),
    # interleaved rotary (rotate_every_two), partial (rotary_dim < head size), sin/cos gathered by position_ids
    "gptj": ("GPTJConfig", dict(n_embd=512, n_layer=4, n_head=8, rotary_dim=32, vocab_size=8192, n_positions=4096), "fp32"),
    # the fixtures of `make test` (--skeleton): 2 layers, hidden 64
    "llama-tiny": ("LlamaConfig", TINY, "fp32"),
    "llama-tiny-fp16": ("LlamaConfig", TINY, "fp16"),
    "qwen2-tiny": ("Qwen2Config", TINY, "fp32"),
    "phi3-tiny": ("Phi3Config", dict(TINY, num_key_value_heads=4, pad_token_id=0), "fp32"),
    "gpt2-tiny": ("GPT2Config", dict(n_embd=64, n_layer=2, n_head=4, vocab_size=512, n_positions=2048), "fp32"),
    "gptj-tiny": ("GPTJConfig", dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8, vocab_size=512, n_positions=512), "fp32"),  # its sin|cos table kept: 512 rows
}
FIXTURES = os.path.join(HERE, "..", "..", "tests", "llm", "fixtures")


def skeleton(name):
    """The exported graph of name with its parameters' data removed."""
    import onnx
    m = onnx.load(os.path.join(CACHE, name, "model.onnx"))
    for init in m.graph.initializer:
        is_param = init.name.startswith(("model.", "lm_head", "transformer.", "onnx::MatMul_", "onnx::Gemm_"))
        if is_param and init.data_type in (onnx.TensorProto.FLOAT, onnx.TensorProto.FLOAT16, onnx.TensorProto.BFLOAT16):
            init.ClearField("raw_data")
            init.ClearField("float_data")
            init.ClearField("int32_data")
    os.makedirs(FIXTURES, exist_ok=True)
    out = os.path.join(FIXTURES, name + ".skeleton.onnx")
    onnx.save(m, out)
    print(f"{name}: skeleton {os.path.getsize(out)} bytes at {out}")


def export(name, cls_name, kwargs, dtype):
    import torch
    import transformers
    from optimum.exporters.onnx import main_export

    out = os.path.join(CACHE, name)
    if os.path.exists(os.path.join(out, "model.onnx")):
        print(f"{name}: cached at {out}")
        return
    torch.manual_seed(0)
    cfg = getattr(transformers, cls_name)(**kwargs)
    model = transformers.AutoModelForCausalLM.from_config(cfg)
    with torch.no_grad():  # random weights of a trained model's scale
        for p in model.parameters():
            if p.dim() >= 2:
                p.normal_(0.0, 0.02)
    src = os.path.join(CACHE, name + ".hf")
    model.save_pretrained(src)
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    t = time.time()
    main_export(src, output=tmp, task="text-generation-with-past", device="cpu",
                dtype=dtype if dtype != "fp32" else None, do_validation=False)
    os.replace(tmp, out) if not os.path.exists(out) else (shutil.rmtree(out), os.replace(tmp, out))
    shutil.rmtree(src, ignore_errors=True)
    with open(os.path.join(out, "gwr-export.json"), "w") as f:
        json.dump({"config": cls_name, "kwargs": kwargs, "dtype": dtype, "torch": torch.__version__,
                   "transformers": transformers.__version__}, f, indent=1)
    print(f"{name}: exported in {time.time() - t:.1f} s to {out}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated model names")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--skeleton", action="store_true",
                    help="also write tests/llm/fixtures/NAME.skeleton.onnx (the graph without parameter data)")
    a = ap.parse_args()
    names = a.only.split(",") if a.only else list(MODELS)
    if a.list:
        for n in MODELS:
            print(n, MODELS[n][0], MODELS[n][2])
        return 0
    os.makedirs(CACHE, exist_ok=True)
    bad = [n for n in names if n not in MODELS]
    if bad:
        print(f"export.py: unknown model {bad[0]} (--list shows them)", file=sys.stderr)
        return 2
    for n in names:
        export(n, *MODELS[n])
        if a.skeleton:
            skeleton(n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
