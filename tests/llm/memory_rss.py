"""memory_rss.py GWR: the resident memory of `gwr generate` over many decode
steps on the llama-tiny fixture (tests/llm/decoder_fixture.py), from the
process's own figures (--json: /proc/self/statm after each new token, and
VmHWM, the peak).

1. The prefill's memory is given back: after a prompt of 1024 tokens (some
   MB of temporaries at the prefill's peak), RSS after 256 decode steps is
   within a quarter of that of a run with a prompt of 8 tokens. (The session's
   pool kept every block of the prefill's sizes for good.)
2. Decoding does not strand memory: over new tokens 16 to 1024 RSS grows by
   at most 2x the bytes the KV cache itself grows by (the session fuses the
   attention, whose kernel appends to the cache values in place; 7x before
   the fusion and the pool's trimming of the size classes the growing
   tensors left behind).
Runs on Debian's python3 (onnx 1.12, numpy). Exit 0 when every check passes,
77 (skipped) for a sanitizer build, whose allocator holds freed memory in
quarantine: its RSS says nothing of gwr's.
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
fails = 0


def check(what, cond, detail=""):
    global fails
    print(("ok   " if cond else "FAIL ") + what + (f": {detail}" if detail else ""))
    fails += not cond


def generate(gwr, model, prompt, max_new):
    ids = ",".join(str(1 + i % 50) for i in range(prompt))
    r = subprocess.run([gwr, "generate", model, "--tokens", ids, "--max-new", str(max_new), "--json"],
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"gwr generate failed ({r.returncode}): {r.stderr.strip()}")
    j = json.loads(r.stdout)
    if j["new_tokens"] != max_new or min(j["rss_kb"]) <= 0:
        sys.exit(f"gwr generate: {j['new_tokens']} new tokens, RSS {j['rss_kb'][:4]}...: no figures to check")
    return j


def main():
    gwr = sys.argv[1]
    with open(gwr, "rb") as f:
        if b"__asan_init" in f.read():
            print("skipped: a sanitizer build (AddressSanitizer keeps freed memory in quarantine)")
            sys.exit(77)
    with tempfile.TemporaryDirectory() as tmp:
        model = os.path.join(tmp, "llama-tiny.onnx")
        subprocess.run([sys.executable, os.path.join(HERE, "decoder_fixture.py"), "llama-tiny", model], check=True)
        # the cache: per token, per layer, a key and a value of [kv_heads, head_size] float32
        import onnx
        m = onnx.load(model)
        past = [i for i in m.graph.input if i.name.startswith("past_key_values.")]
        per_token = sum(i.type.tensor_type.shape.dim[1].dim_value * i.type.tensor_type.shape.dim[3].dim_value * 4
                        for i in past)

        small = generate(gwr, model, 8, 256)
        big = generate(gwr, model, 1024, 256)
        kb = lambda v: f"{v / 1024:.2f} MB"
        prefill = big["peak_rss_kb"][-1] - small["rss_kb"][-1]
        kept = big["rss_kb"][-1] - small["rss_kb"][-1]
        check("the prefill of 1024 tokens used memory to give back", prefill >= 4 * 1024,
              f"peak {kb(big['peak_rss_kb'][-1])} against {kb(small['rss_kb'][-1])} after a prompt of 8")
        check("the prefill's memory is given back", kept <= prefill / 4,
              f"RSS after 256 steps {kb(big['rss_kb'][-1])} (prompt 1024) against {kb(small['rss_kb'][-1])} "
              f"(prompt 8): {kb(kept)} kept of the prefill's {kb(prefill)}")

        long = generate(gwr, model, 8, 1024)
        r = long["rss_kb"]
        grew = (r[1023] - r[15]) * 1024
        cache = (1023 - 15) * per_token
        check("decoding strands no memory", grew <= 2 * cache,
              f"RSS {kb(r[15])} after new token 16, {kb(r[1023])} after 1024: +{grew / 1024 / 1024:.2f} MB, "
              f"{grew / cache:.1f}x the cache's growth ({cache / 1024 / 1024:.2f} MB)")
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
