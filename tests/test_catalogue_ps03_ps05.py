"""Catalogues ps03_relevance and ps05_matrix_form: their references agree with PyTorch and the formulas.

(Solutions passing and mistakes named, for every catalogue: test_catalogues.py.)
"""

from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_grader.catalogue import ps03_relevance as ps03
from attn_grader.catalogue import ps05_matrix_form as ps05

ROOT = Path(__file__).resolve().parents[1]
MODULES = [ps03, ps05]
TASKS = [(m, t) for m in MODULES for t in m.TASKS]


def _ids(item):
    return f"{item[1].assignment}.{item[1].func_name}"


def test_ps05_example_is_the_books():
    from attn_ref.examples import lecture_example

    ns = {}
    exec(ps05.SETUP, ns)  # noqa: S102 - our own constant
    for name, value in zip(("I", "W_q", "W_k", "W_v"), lecture_example(), strict=True):
        np.testing.assert_array_equal(ns[name], value)


def test_ps03_softmax_conventions():
    task = next(t for t in ps03.TASKS if t.func_name == "softmax")
    out = task.reference(np.array([[709.0, 709.0, 708.0], [-np.inf, -np.inf, -np.inf]]), -1)
    assert np.isfinite(out).all()
    np.testing.assert_allclose(out[1], 0.0)
    e = np.exp([1.0, 1.0, 0.0])
    np.testing.assert_allclose(out[0], e / e.sum(), rtol=1e-12)


@pytest.mark.parametrize("item", [(m, t) for m in MODULES for t in m.TASKS
                                  if t.func_name in ("attention_weights", "self_attention_rows")], ids=_ids)
def test_row_references_match_torch(item):
    _, task = item
    for args in task.hidden_cases():
        if task.func_name == "attention_weights":
            Q, K = (torch.tensor(a) for a in args)
            expected = torch.softmax(Q @ K.T / Q.shape[-1] ** 0.5, dim=-1).numpy()
            np.testing.assert_allclose(task.reference(*args), expected, rtol=1e-10, atol=1e-12)
        else:
            X, Wq, Wk, Wv = (torch.tensor(a) for a in args)
            out = F.scaled_dot_product_attention(X @ Wq.T, X @ Wk.T, X @ Wv.T)
            np.testing.assert_allclose(task.reference(*args)[0], out.numpy(), rtol=1e-10, atol=1e-12)


def test_ps05_columns_reference_is_the_row_form_transposed():
    task = next(t for t in ps05.TASKS if t.func_name == "self_attention_columns")
    for I, Wq, Wk, Wv in task.hidden_cases():
        O, A_prime = task.reference(I, Wq, Wk, Wv)
        X = torch.tensor(I.T)
        q, k = X @ torch.tensor(Wq).T, X @ torch.tensor(Wk).T
        w = torch.softmax(q @ k.T / Wq.shape[0] ** 0.5, dim=-1).numpy()
        np.testing.assert_allclose(A_prime, w.T, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(O, (Wv @ I) @ w.T, rtol=1e-10, atol=1e-12)
