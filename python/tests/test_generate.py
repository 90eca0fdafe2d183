"""gwr.generate: greedy decoding over a KV-cache decoder from a path, a
Network or a Session; ids known by arithmetic on the toy decoder of
tests/llm/generate_cli.py (logits one-hot at id + 1 mod 16), ids on the
llama-tiny fixture equal to a greedy loop written here over Session.run
(present fed back as past by hand); refusals as gwr's exceptions. The ids
against onnxruntime's loop are tests/llm/generate_ort.py's."""

import os
import subprocess
import sys

import numpy as np
import pytest

import gwr
import gwr.onnx

LLM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "llm")
sys.path.insert(0, LLM)
import generate_cli  # noqa: E402  (the toy decoder)


@pytest.fixture
def toy(tmp_path):
    p = str(tmp_path / "toy.onnx")
    generate_cli.toy(p)
    return p


def test_toy_ids_by_arithmetic(toy):
    r = gwr.generate(toy, [3, 9, 14], 5)
    assert r["tokens"] == [15, 0, 1, 2, 3]
    assert r["prompt_tokens"] == 3 and r["new_tokens"] == 5 and r["stopped_at_eos"] is False
    assert r["prefill_tokens_per_s"] > 0 and r["decode_tokens_per_s"] > 0
    assert r["prefill_ms"] > 0 and r["decode_ms"] > 0


def test_eos_network_session(toy):
    net = gwr.onnx.load(toy, infer_shapes=True)
    r = gwr.generate(net, [1, 2], 10, eos=5)
    assert r["tokens"] == [3, 4, 5] and r["stopped_at_eos"] is True
    s = gwr.Session(net, threads=2)
    for _ in range(2):  # a session serves several calls
        assert gwr.generate(s, [7], 4)["tokens"] == [8, 9, 10, 11]
    assert gwr.generate(net, [15], 2, optimize=False)["tokens"] == [0, 1]
    one = gwr.generate(net, [4], 1, eos=5)
    assert one["tokens"] == [5] and one["stopped_at_eos"] is True and one["decode_tokens_per_s"] == 0


def test_refusals(toy, tmp_path):
    with pytest.raises(gwr.InvalidArgumentError, match="vocabulary size 16"):
        gwr.generate(toy, [1, 16], 2)
    with pytest.raises(gwr.InvalidArgumentError, match=r"tokens\[1\]"):
        gwr.generate(toy, [1, -1], 2)
    with pytest.raises(gwr.InvalidArgumentError, match=r"tokens\[0\]"):
        gwr.generate(toy, ["a"], 2)
    with pytest.raises(gwr.InvalidArgumentError, match="max_new"):
        gwr.generate(toy, [1], 0)
    with pytest.raises(gwr.InvalidArgumentError, match="empty prompt"):
        gwr.generate(toy, [], 2)
    with pytest.raises(gwr.InvalidArgumentError, match="eos"):
        gwr.generate(toy, [1], 2, eos=-3)
    with pytest.raises(gwr.InvalidArgumentError, match="threads"):
        gwr.generate(toy, [1], 2, threads=0)
    with pytest.raises(gwr.InvalidArgumentError, match="a path, a Network or a Session"):
        gwr.generate(3, [1], 2)
    with pytest.raises(gwr.FileError):
        gwr.generate(str(tmp_path / "nope.onnx"), [1], 2)
    p = str(tmp_path / "tt.onnx")
    generate_cli.toy(p, extra_input=True)
    with pytest.raises(gwr.UnsupportedError, match="input 'token_type_ids' is not one of"):
        gwr.generate(p, [1], 2)


def test_llama_tiny_against_a_loop_over_session_run(tmp_path):
    p = str(tmp_path / "llama.onnx")
    subprocess.run(["/usr/bin/python3", os.path.join(LLM, "decoder_fixture.py"), "llama-tiny", p], check=True)
    net = gwr.onnx.load(p, infer_shapes=True)
    prompt, steps = [5, 77, 300, 12], 12
    s = gwr.Session(net)
    past = {f"past_key_values.{i}.{kv}": np.zeros((1, 2, 0, 16), np.float32) for i in range(2) for kv in ("key", "value")}
    ids, made, n = prompt, [], 0
    for _ in range(steps):
        feed = {"input_ids": np.array([ids], np.int64), "attention_mask": np.ones((1, n + len(ids)), np.int64),
                "position_ids": np.arange(n, n + len(ids), dtype=np.int64)[None]}
        feed.update(past)
        out = s.run(feed)
        made.append(int(np.argmax(out["logits"][0, -1])))
        n += len(ids)
        ids = [made[-1]]
        past = {k: out["present." + k[len("past_key_values."):]] for k in past}
    assert gwr.generate(net, prompt, steps)["tokens"] == made
    assert gwr.generate(s, prompt, steps)["tokens"] == made
