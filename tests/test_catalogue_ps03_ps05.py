"""Catalogues ps03_relevance and ps05_matrix_form: the solutions pass, every mistake is caught and named.

In-process (no nbgrader): each mistake's answer cell, loaded after the task's setup, must fail
:func:`check` with its own name in the message; the source notebooks' setup and answer cells must be
the catalogue's; the references agree with PyTorch and with the formulas written out here.
"""

import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
import torch
import torch.nn.functional as F

from attn_ref.grading import GradingError, check
from attn_ref.grading import ps03_relevance as ps03
from attn_ref.grading import ps05_matrix_form as ps05
from attn_ref.grading.core import Mistake, load_mistake

ROOT = Path(__file__).resolve().parents[1]
MODULES = [ps03, ps05]
TASKS = [(m, t) for m in MODULES for t in m.TASKS]


def _ids(item):
    return f"{item[1].assignment}.{item[1].func_name}"


@pytest.mark.parametrize("item", TASKS, ids=_ids)
def test_solution_passes(item):
    module, task = item
    all_answers = "\n".join(module.SOLUTIONS.values())
    check(task.assignment, task.func_name, load_mistake(task, Mistake("solution", "", all_answers)))


@pytest.mark.parametrize("item", TASKS, ids=_ids)
def test_every_mistake_is_caught_and_named(item):
    _, task = item
    assert len(task.mistakes) >= 3
    assert len({m.name for m in task.mistakes}) == len(task.mistakes)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # the unstabilised softmax overflows on purpose
        for mistake in task.mistakes:
            with pytest.raises(GradingError, match=rf"\[{mistake.name}\]"):
                check(task.assignment, task.func_name, load_mistake(task, mistake))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_source_notebook_matches_catalogue(module):
    path = ROOT / "solutions" / module.ASSIGNMENT / f"{module.ASSIGNMENT}.ipynb"
    nb = nbformat.read(path, as_version=4)
    cells = {c.metadata["nbgrader"]["grade_id"]: c for c in nb.cells}
    assert cells["setup"].source.strip() == module.SETUP.strip()
    for task in module.TASKS:
        assert task.setup.strip() == module.SETUP.strip()
        assert cells[f"{task.func_name}_answer"].source.strip() == module.SOLUTIONS[task.func_name].strip()
        test_src = cells[f"{task.func_name}_test"].source
        assert f'check("{module.ASSIGNMENT}", "{task.func_name}", {task.func_name})' in test_src
    released = ROOT / "exercises" / module.ASSIGNMENT / f"{module.ASSIGNMENT}.ipynb"
    text = released.read_text()
    assert "BEGIN SOLUTION" not in text and "attn_ref" not in text


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
