"""Catalogues ps03_relevance, ps04 and ps05_matrix_form: their references agree with PyTorch and the formulas.

(Solutions passing and mistakes named, for every catalogue: test_catalogues.py.)
"""

from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from attn_grader.catalogue import ps03_relevance as ps03
from attn_grader.catalogue import ps05_matrix_form as ps05

ROOT = Path(__file__).resolve().parents[1]
def test_ps05_example_is_the_books():
    from attn_ref.examples import lecture_example

    ns = {}
    exec(ps05.SETUP, ns)  # noqa: S102 - our own constant
    for name, value in zip(("I", "W_q", "W_k", "W_v"), lecture_example(), strict=True):
        np.testing.assert_array_equal(ns[name], value)


def test_ps04_example_is_the_books():
    from attn_grader.catalogue import ps04_step_by_step as ps04
    from attn_ref.examples import lecture_example

    ns = {}
    exec(ps04.SETUP, ns)  # noqa: S102 - our own constant
    for name, value in zip(("a", "W_q", "W_k", "W_v"), lecture_example(), strict=True):
        np.testing.assert_array_equal(ns[name], value)


def test_ps03_softmax_conventions():
    task = next(t for t in ps03.TASKS if t.func_name == "softmax")
    out = task.reference(np.array([[709.0, 709.0, 708.0], [-np.inf, -np.inf, -np.inf]]), -1)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[1], 0.0)
    e = np.exp([1.0, 1.0, 0.0])
    np.testing.assert_allclose(out[0], e / e.sum(), rtol=1e-12)


def test_row_reference_matches_torch():
    task = next(t for t in ps05.TASKS if t.func_name == "self_attention_rows")
    for args in task.hidden_cases():
        X, Wq, Wk, Wv = (torch.tensor(a) for a in args)
        out = F.scaled_dot_product_attention(X @ Wq.T, X @ Wk.T, X @ Wv.T)
        np.testing.assert_allclose(task.reference(*args)[0], out.numpy(), rtol=1e-10, atol=1e-12)


def test_ps03_masked_weights_reference_matches_torch():
    """masked_weights' reference is PyTorch's softmax over a causal and padding mask (filler rows: zeros)."""
    task = next(t for t in ps03.TASKS if t.func_name == "masked_weights")
    for scores, length, causal in task.hidden_cases():
        n = len(scores)
        keep = torch.zeros(n, n, dtype=torch.bool)
        keep[:length, :length] = True
        if causal:
            keep &= torch.ones(n, n, dtype=torch.bool).tril()
        w = torch.softmax(torch.tensor(scores).masked_fill(~keep, float("-inf")), dim=-1).nan_to_num(0.0)
        np.testing.assert_allclose(task.reference(scores, length, causal), w.numpy(), rtol=1e-10, atol=1e-12)


def test_ps05_attention_matrix_reference_is_the_row_form_transposed():
    task = next(t for t in ps05.TASKS if t.func_name == "attention_matrix")
    for Q, K in task.hidden_cases():
        q, k = torch.tensor(Q.T), torch.tensor(K.T)  # one query / key per row
        w = torch.softmax(q @ k.T / Q.shape[0] ** 0.5, dim=-1).numpy()
        np.testing.assert_allclose(task.reference(Q, K), w.T, rtol=1e-10, atol=1e-12)


def test_ps05_peak_weights_reference_is_torchs_softmax_and_the_experiment_holds():
    """Task 4's reference is PyTorch's softmax over each query's scores, raw and scaled; on random queries and
    keys the raw largest weight grows towards 1 with d_k while the scaled one stays put (what the task measures)."""
    task = next(t for t in ps05.TASKS if t.func_name == "peak_weights")
    rng = np.random.default_rng(1)
    raw, scaled = [], []
    for d_k in (2, 32, 512):
        Q, K = rng.standard_normal((d_k, 400)), rng.standard_normal((d_k, 12))
        scores = torch.tensor(Q.T @ K)  # (m, n): a row per query
        expected = [F.softmax(s, dim=-1).max(dim=-1).values.mean().item() for s in (scores, scores / d_k**0.5)]
        np.testing.assert_allclose(task.reference(Q, K), expected, rtol=1e-12)
        raw.append(expected[0])
        scaled.append(expected[1])
    assert raw[0] < raw[1] < raw[2] and raw[2] > 0.9 and max(scaled) - min(scaled) < 0.05, (raw, scaled)


def test_ps04_permuted_outputs_reference_is_attention_run_on_the_shuffled_input():
    """Issue 41: task 3 gets the outputs only; its reference (moving them) is what PyTorch's attention computes
    on the shuffled input, and its hidden inputs are not outputs of the running example (nothing to recompute)."""
    from attn_grader.catalogue import ps04_step_by_step as ps04

    task = next(t for t in ps04.TASKS if t.func_name == "permuted_outputs")
    rng = np.random.default_rng(4)
    for d_in, d_k, d_v, n in [(3, 2, 2, 4), (5, 4, 3, 7), (2, 3, 4, 1)]:
        a = rng.standard_normal((d_in, n))
        W_q, W_k, W_v = (rng.standard_normal((d, d_in)) for d in (d_k, d_k, d_v))
        perm = rng.permutation(n)

        def outputs(x, W_q=W_q, W_k=W_k, W_v=W_v):  # torch, rows = positions: softmax(q k^T) v, as columns
            x = torch.tensor(x.T)
            q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T
            return (F.softmax(q @ k.T, dim=-1) @ v).numpy().T

        np.testing.assert_allclose(task.reference(outputs(a), perm), outputs(a[:, perm]), rtol=1e-10, atol=1e-12)
    for args in task.hidden_cases():
        assert len(args) == 2 and args[0].ndim == 2 and args[1].shape == (args[0].shape[1],)
