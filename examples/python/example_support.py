"""What the three seed examples share: their checks, and numpy's GPT
attention to check gwr's GPTAttention against.

The attention is written from the plugin's definition (src/exec/kernels/plugins.c), not from
gwr's code: per sequence and head, softmax(q k^T / sqrt(head_size) + causal
mask) v, heads concatenated."""
import numpy as np


def gpt_attention_reference(qkv, num_heads, head_size, qkv_bias=None):
    """Context (batch, seq, hidden) of a (batch, seq, 3*hidden) qkv, float64."""
    qkv = np.asarray(qkv, dtype=np.float64)
    if qkv_bias is not None:
        qkv = qkv + np.asarray(qkv_bias, dtype=np.float64)
    batch, seq, width = qkv.shape
    hidden = num_heads * head_size
    assert width == 3 * hidden, (width, hidden)
    # (batch, seq, 3, heads, head_size) -> three of (batch, heads, seq, head_size)
    q, k, v = qkv.reshape(batch, seq, 3, num_heads, head_size).transpose(2, 0, 3, 1, 4)
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(head_size)
    scores = np.where(np.triu(np.ones((seq, seq), dtype=bool), k=1), -np.inf, scores)
    scores -= scores.max(axis=-1, keepdims=True)
    p = np.exp(scores)
    p /= p.sum(axis=-1, keepdims=True)
    return (p @ v).transpose(0, 2, 1, 3).reshape(batch, seq, hidden)


class Checks:
    """Prints each check's outcome and remembers the failures."""

    def __init__(self):
        self.failures = []

    def __call__(self, ok, what):
        """Prints one check's outcome ('ok:' or 'WRONG:') and remembers a failure."""
        print(('ok:    ' if ok else 'WRONG: ') + what)
        if not ok:
            self.failures.append(what)

    def status(self):
        """Prints the summary; returns the exit status (0 when every check held)."""
        print('as expected' if not self.failures else 'WRONG: %d check(s) failed' % len(self.failures))
        return 1 if self.failures else 0
