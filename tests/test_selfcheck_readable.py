"""The self-check on a right answer whose output the notebook's asserts cannot read (teacher review, issue 41):
a PyTorch tensor that still requires grad (RuntimeError in np.allclose), per-head weights in a list (TypeError in
w[0, 0]).  The comparison reads both (it detaches, stacks); the self-check, which runs first, says so."""

import numpy as np
import pytest

from attn_grader import selfcheck
from attn_grader.checking import core

TORCH_LINEAR_ROWS = '''
import torch

def self_attention_rows(X, W_q, W_k, W_v):
    """Written the PyTorch way: nn.Linear layers holding the given weights, no torch.no_grad()."""
    layers = []
    for W in (W_q, W_k, W_v):
        lin = torch.nn.Linear(W.shape[1], W.shape[0], bias=False, dtype=torch.float64)
        lin.weight = torch.nn.Parameter(torch.as_tensor(W, dtype=torch.float64))
        layers.append(lin)
    x = torch.as_tensor(X, dtype=torch.float64)
    q, k, v = (lin(x) for lin in layers)
    w = torch.softmax(q @ k.transpose(-1, -2) / W_q.shape[0] ** 0.5, dim=-1)
    return w @ v, w
'''

LIST_OF_HEADS = '''
def multi_head_attention(X, W_q, W_k, W_v, W_O, n_heads):
    """Right, but the per-head weights kept in a list, as a loop over the heads leaves them."""
    n, d_model = X.shape
    d_k = d_model // n_heads
    Q, K, V = X @ W_q.T, X @ W_k.T, X @ W_v.T
    outs, ws = [], []
    for h in range(n_heads):
        cols = slice(h * d_k, (h + 1) * d_k)
        s = Q[:, cols] @ K[:, cols].T / np.sqrt(d_k)
        w = np.exp(s - s.max(axis=-1, keepdims=True))
        w = w / w.sum(axis=-1, keepdims=True)
        outs.append(w @ V[:, cols])
        ws.append(w)
    return np.concatenate(outs, axis=1) @ W_O.T, ws
'''


@pytest.mark.parametrize(("assignment", "func_name", "source", "said"), [
    ("ps05_matrix_form", "self_attention_rows", TORCH_LINEAR_ROWS, "a tensor that requires grad"),
    ("ps06_multi_head", "multi_head_attention", LIST_OF_HEADS, "a list of arrays where one array is expected")])
def test_a_right_answer_the_asserts_cannot_read_is_told_so(assignment, func_name, source, said):
    """Teacher review (issue 41): a right PyTorch answer whose tensor requires grad, or per-head weights in a list,
    is right for the comparison (it detaches, stacks) but the notebook's asserts raise on it (RuntimeError in
    np.allclose, TypeError in w[0, 0]): the self-check, which runs first, says so and how to return it."""
    namespace = {"np": np}
    exec(source, namespace)
    finding, text = selfcheck.report(core.get_task(assignment, func_name), namespace[func_name])
    assert finding is None and "is right on" in text and f"but it returns {said}" in text, text
