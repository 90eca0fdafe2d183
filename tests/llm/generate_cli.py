"""generate_cli.py GWR: `gwr generate` on a decoder whose greedy ids are known
by arithmetic, and on bad input.

toy.onnx is a one-layer "decoder" of the Hugging Face interface (input_ids,
attention_mask, past_key_values.0.key/.value [1, 2, P, 4]; logits [1, S, 16],
present.0.key/.value) whose logits are one-hot at (id + 1) mod 16 and whose
present is Concat(past, the ids widened): greedy decoding from a prompt
ending in t gives t+1, t+2, ... mod 16, exactly. Bad input (a model that is
not such a decoder, ids that are not integers or not below the vocabulary,
--max-new < 1, options missing) exits 2 with one line on stderr naming the
file or the option. Runs on Debian's python3 (onnx 1.12, numpy). Exit 0 when
every check passes.
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

V = 16
fails = 0


def toy(path, kv_heads=2, key_name="present.0.key", mask=True, extra_input=False):
    i64 = lambda n, s: h.make_tensor_value_info(n, TP.INT64, s)
    f32 = lambda n, s: h.make_tensor_value_info(n, TP.FLOAT, s)
    inits = [nh.from_array(np.eye(V, dtype=np.float32), "eye"), nh.from_array(np.array(1, np.int64), "one"),
             nh.from_array(np.array(V, np.int64), "v"), nh.from_array(np.array([1, 3], np.int64), "axes"),
             nh.from_array(np.array([1, 2, 1, 4], np.int64), "shape")]
    nodes = [h.make_node("Add", ["input_ids", "one"], ["n1"]), h.make_node("Mod", ["n1", "v"], ["nx"]),
             h.make_node("Gather", ["eye", "nx"], ["logits"]), h.make_node("Cast", ["input_ids"], ["f"], to=TP.FLOAT),
             h.make_node("Unsqueeze", ["f", "axes"], ["u"]), h.make_node("Expand", ["u", "shape"], ["e"]),
             h.make_node("Concat", ["past_key_values.0.key", "e"], [key_name], axis=2),
             h.make_node("Concat", ["past_key_values.0.value", "e"], ["present.0.value"], axis=2)]
    ins = [i64("input_ids", [1, "S"])]
    if mask:
        ins.append(i64("attention_mask", [1, "T"]))
    ins += [f32("past_key_values.0.key", [1, kv_heads, "P", 4]), f32("past_key_values.0.value", [1, 2, "P", 4])]
    if extra_input:
        ins.append(i64("token_type_ids", [1, "S"]))
    outs = [f32("logits", [1, "S", V]), f32(key_name, [1, 2, "T", 4]), f32("present.0.value", [1, 2, "T", 4])]
    m = h.make_model(h.make_graph(nodes, "toy", ins, outs, inits), opset_imports=[h.make_opsetid("", 13)])
    onnx.save(m, path)


def run(gwr, *args):
    r = subprocess.run([gwr, "generate", *args], capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def check(what, cond, detail=""):
    global fails
    if not cond:
        fails += 1
        print(f"FAIL: {what} {detail}")


def refused(gwr, what, names, *args, code=2):
    rc, out, err = run(gwr, *args)
    lines = err.strip().split("\n")
    check(what + ": exit", rc == code, f"exit {rc}, expected {code}: {err}")
    check(what + ": one line", len(lines) == 1 and err.startswith("gwr: "), repr(err))
    check(what + ": names " + names, names in err, repr(err))
    check(what + ": nothing on stdout", out == "", repr(out))


def main(gwr):
    with tempfile.TemporaryDirectory() as d:
        m = os.path.join(d, "toy.onnx")
        toy(m)
        # the ids follow by arithmetic: the prompt ends in 14 -> 15, 0, 1, ...
        rc, out, err = run(gwr, m, "--tokens", "3,9,14", "--max-new", "5")
        check("toy: exit 0", rc == 0, err)
        check("toy: ids", "tokens: 15,0,1,2,3\n" in out, repr(out))
        check("toy: prefill speed", "prefill: 3 tokens in " in out and "tokens/s" in out, repr(out))
        check("toy: decode speed", "decode: 4 tokens in " in out, repr(out))
        for threads in ("1", "2"):
            rc, out, err = run(gwr, m, "--tokens", "7", "--max-new", "20", "--json", "--threads", threads)
            check("toy --json: exit 0", rc == 0, err)
            j = json.loads(out) if rc == 0 else {}
            check("toy --json: ids", j.get("tokens") == [(8 + k) % V for k in range(20)], out)
            check("toy --json: counts", j.get("prompt_tokens") == 1 and j.get("new_tokens") == 20
                  and len(j.get("decode_step_ms", [])) == 19 and len(j.get("rss_kb", [])) == 20
                  and len(j.get("peak_rss_kb", [])) == 20 and not j.get("stopped_at_eos"), out)
            check("toy --json: speeds", j.get("prefill_tokens_per_s", 0) > 0 and j.get("decode_tokens_per_s", 0) > 0, out)
        # --logits: the last logits row of each run, one-hot at the next id
        npy = os.path.join(d, "l.npy")
        rc, out, err = run(gwr, m, "--tokens", "3,9,14", "--max-new", "5", "--logits", npy)
        a = np.load(npy) if rc == 0 else None
        check("toy --logits", a is not None and a.dtype == np.float32 and a.shape == (5, V)
              and (a == np.eye(V, dtype=np.float32)[[15, 0, 1, 2, 3]]).all(), repr(a) + err)
        # --warmup: untimed runs first in the same session; the timed run's ids are the same
        rc, out, err = run(gwr, m, "--tokens", "1,2", "--max-new", "10", "--eos", "5", "--warmup", "2")
        check("toy --warmup 2: ids", rc == 0 and "tokens: 3,4,5 (eos)\n" in out, repr(out) + err)
        # --eos: stops after generating it, which is returned
        rc, out, err = run(gwr, m, "--tokens", "1,2", "--max-new", "10", "--eos", "5")
        check("toy --eos: ids", rc == 0 and "tokens: 3,4,5 (eos)\n" in out, repr(out) + err)
        rc, out, err = run(gwr, m, "--tokens", "4", "--max-new", "1", "--json", "--eos", "5")
        j = json.loads(out) if rc == 0 else {}
        check("toy --eos on the prefill's token", j.get("tokens") == [5] and j.get("stopped_at_eos") is True
              and j.get("decode_step_ms") == [] and j.get("decode_tokens_per_s") == 0, out + err)
        # a toy without attention_mask runs too
        nomask = os.path.join(d, "nomask.onnx")
        toy(nomask, mask=False)
        rc, out, err = run(gwr, nomask, "--tokens", "0", "--max-new", "3")
        check("no attention_mask: ids", rc == 0 and "tokens: 1,2,3\n" in out, repr(out) + err)

        # bad input: exit 2, one line naming the file or the option
        refused(gwr, "token id = vocab", m, m, "--tokens", "1,16", "--max-new", "2")
        refused(gwr, "token id = vocab (message)", "vocabulary size 16", m, "--tokens", "1,16", "--max-new", "2")
        refused(gwr, "token id past int64", "--tokens", m, "--tokens", "99999999999999999999", "--max-new", "2")
        refused(gwr, "negative token id", "--tokens", m, "--tokens", "1,-2", "--max-new", "2")
        refused(gwr, "token id not an integer", "--tokens", m, "--tokens", "1,x", "--max-new", "2")
        refused(gwr, "empty token id", "--tokens", m, "--tokens", "1,,2", "--max-new", "2")
        refused(gwr, "no token ids", "--tokens", m, "--tokens", "", "--max-new", "2")
        refused(gwr, "--max-new 0", "--max-new", m, "--tokens", "1", "--max-new", "0")
        refused(gwr, "no --max-new", "--max-new", m, "--tokens", "1")
        refused(gwr, "no --tokens", "--tokens", m, "--max-new", "3")
        refused(gwr, "--threads 0", "--threads", m, "--tokens", "1", "--max-new", "3", "--threads", "0")
        refused(gwr, "--eos x", "--eos", m, "--tokens", "1", "--max-new", "3", "--eos", "x")
        refused(gwr, "--warmup -1", "--warmup", m, "--tokens", "1", "--max-new", "3", "--warmup", "-1")
        refused(gwr, "no model", "MODEL", "--tokens", "1", "--max-new", "3")
        refused(gwr, "missing file", "nope.onnx", os.path.join(d, "nope.onnx"), "--tokens", "1", "--max-new", "3",
                code=1)
        # not a decoder with a KV cache
        mm = os.path.join(d, "matmul.onnx")
        g = h.make_graph([h.make_node("MatMul", ["x", "w"], ["y"])], "mm",
                         [h.make_tensor_value_info("x", TP.FLOAT, [1, 4])], [h.make_tensor_value_info("y", TP.FLOAT, [1, 4])],
                         [nh.from_array(np.eye(4, dtype=np.float32), "w")])
        onnx.save(h.make_model(g, opset_imports=[h.make_opsetid("", 13)]), mm)
        refused(gwr, "not a decoder", mm, mm, "--tokens", "1", "--max-new", "3")
        refused(gwr, "not a decoder (message)", "input 'x' is not one of a KV-cache decoder's", mm, "--tokens", "1",
                "--max-new", "3")
        for name, kw, msg in [("unknown kv heads", dict(kv_heads="H"), "number of kv heads (dim 1) is not known"),
                              ("no present.0.key", dict(key_name="kv0"), "no output 'present.0.key'"),
                              ("token_type_ids", dict(extra_input=True), "input 'token_type_ids' is not one of")]:
            p = os.path.join(d, name.replace(" ", "_").replace(".", "_") + ".onnx")
            toy(p, **kw)
            refused(gwr, name, p, p, "--tokens", "1", "--max-new", "3")
            refused(gwr, name + " (message)", msg, p, "--tokens", "1", "--max-new", "3")
    print("generate_cli: %s" % ("ok" if not fails else f"{fails} failed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
