"""Issue 17, numerical stability: every task that normalises scores with a softmax is graded on large scores.

Each catalogue lists its normalising tasks in ``NORMALISING``; the list must hold every task whose solution
calls ``np.exp`` or a softmax.  Each such task has hidden cases whose scores are computed here from the
inputs: a *narrow* slice (every allowed score above exp's overflow limit, 709.78, but within 709.78 of each
other: a softmax without the max-shift gives NaN, a shift by the minimum still works) and a *wide* one (a
spread beyond 709.78: the minimum-shift overflows too), and the mistakes ``not_stabilised`` (or its
existing equivalent) and ``shifted_by_min``.  Masked tasks also have a fully masked row, with
``nan_on_masked_row`` (and, for the graph tasks, ``filled_with_minus_9e15``).  Issue 33: every such task also
has a slice whose allowed scores all lie far below 0 (masked entries beside them where the task masks, and
there a slice all far above 0 beside masked entries too), in the hidden cases and in the re-check's draws,
and the masking tasks name ``masked_by_multiplying`` (softmax(scores * mask)).
That each mistake is then named by check() is tests/test_catalogues.py's proof.
"""

import copy
import importlib
import warnings

import numpy as np
import pytest

from attn_grader.catalogue.ps12_efficient import _whole
from attn_grader.checking import harness
from attn_grader.checking.core import Mistake, load_mistake, to_numpy
from solutions import ASSIGNMENTS, other_answers, solution

MODULES = {a: importlib.import_module(f"attn_grader.catalogue.{a}") for a in ASSIGNMENTS}
TASKS = {t.key: (m, t) for m in MODULES.values() for t in m.TASKS}
EXP_LIMIT = float(np.log(np.finfo(np.float64).max))  # 709.78: exp of anything larger is inf

#: The unshifted mistake's name where a catalogue had one before issue 17 (default ``not_stabilised``).
UNSHIFTED = {"ps12_efficient.online_softmax": "max_not_subtracted"}

#: What the issue named as normalising; the catalogues' lists must hold at least these.
EXPECTED = {
    "ps03_relevance.softmax", "ps03_relevance.masked_weights", "ps04_step_by_step.output_for_query",
    "ps05_matrix_form.attention_matrix", "ps05_matrix_form.self_attention_rows", "ps05_matrix_form.peak_weights",
    "ps06_multi_head.multi_head_attention", "ps08_speech_images.truncated_attention",
    "ps11_graphs.masked_softmax", "ps11_graphs.graph_attention", "ps12_efficient.online_softmax",
    "ps12_efficient.online_step", "ps12_efficient.blocked_attention",
}

#: Tasks that take a mask and so can meet a fully masked row.
MASKED = {"ps03_relevance.softmax", "ps03_relevance.masked_weights", "ps11_graphs.masked_softmax",
          "ps11_graphs.graph_attention"}


def _listed() -> set[str]:
    return {f"{a}.{name}" for a, m in MODULES.items() for name in getattr(m, "NORMALISING", ())}


def _found() -> set[str]:
    return {key for key, (m, t) in TASKS.items()
            if "np.exp" in solution(t.assignment, t.func_name) or "softmax" in solution(t.assignment, t.func_name)}


def test_the_list_of_normalising_tasks_is_complete():
    listed, found = _listed(), _found()
    assert not found - listed, f"normalising tasks missing from a catalogue's NORMALISING: {sorted(found - listed)}"
    assert not listed - set(TASKS), f"NORMALISING names no task: {sorted(listed - set(TASKS))}"
    assert EXPECTED <= listed, sorted(EXPECTED - listed)
    assert "ps09_cnn.attention_as_conv" not in found  # one-hot heads: no exp, decided not normalising


# --- the scores each task normalises, from its inputs: one row per softmax, NaN where masked ----------------

def _rows(s, axis=-1):
    s = np.moveaxis(np.asarray(s, dtype=float), axis, -1)
    return s.reshape(-1, s.shape[-1])


def _split(X, h):
    n, d = X.shape
    return X.reshape(n, h, d // h).transpose(1, 0, 2)


def _band(Q, K, V, w):
    idx = np.arange(len(Q))
    s = Q @ K.T / np.sqrt(Q.shape[1])
    return np.where(np.abs(idx[:, None] - idx[None, :]) <= w, s, np.nan)


def _masks(n, length, causal):
    i = np.arange(n)
    allowed = (i[None, :] < length) & (i[:, None] < length)
    return allowed & (i[None, :] <= i[:, None]) if causal else allowed


def _gat(X, A, W, a_src, a_dst):
    H = X @ W.T
    e = (H @ a_dst)[:, None] + (H @ a_src)[None, :]
    return np.where(A, np.where(e > 0, e, 0.2 * e), np.nan)


SCORES = {
    "ps03_relevance.softmax": lambda x, axis=-1: _rows(x, axis),
    "ps03_relevance.masked_weights": lambda scores, length, causal: np.where(_masks(len(scores), length, causal),
                                                                            scores, np.nan),
    "ps04_step_by_step.output_for_query": lambda a, i, W_q, W_k, W_v: _rows((W_k @ a).T @ (W_q @ a[:, i])),
    "ps05_matrix_form.attention_matrix": lambda Q, K: (K.T @ Q).T / np.sqrt(K.shape[0]),  # a row per query
    "ps05_matrix_form.peak_weights": lambda Q, K: (K.T @ Q).T / np.sqrt(K.shape[0]),  # the scaled; raw: twice
    "ps05_matrix_form.self_attention_rows":
        lambda X, W_q, W_k, W_v: _rows((X @ W_q.T) @ np.swapaxes(X @ W_k.T, -1, -2) / np.sqrt(W_q.shape[0])),
    "ps06_multi_head.multi_head_attention": lambda X, W_q, W_k, W_v, W_o, h: _rows(
        _split(X @ W_q.T, h) @ _split(X @ W_k.T, h).transpose(0, 2, 1) / np.sqrt(X.shape[1] // h)),
    "ps08_speech_images.truncated_attention": _band,
    "ps11_graphs.masked_softmax": lambda scores, mask: np.where(mask, scores, np.nan),
    "ps11_graphs.graph_attention": _gat,
    "ps12_efficient.online_softmax": lambda blocks: _rows(_whole(blocks)[0]),
    "ps12_efficient.online_step": lambda mu, s, acc, scores, V: _rows(scores),
    "ps12_efficient.blocked_attention": lambda Q, blocks: Q @ _whole(blocks)[0].T / np.sqrt(Q.shape[1]),
}


def _extremes(args, key):
    """(lowest, highest) allowed finite score of each softmax slice of one case."""
    s = np.asarray(SCORES[key](*args), dtype=float)
    s = np.where(np.isfinite(s), s, np.nan)
    keep = ~np.isnan(s).all(axis=-1)  # a fully masked slice has no score
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nanmin(s[keep], axis=-1), np.nanmax(s[keep], axis=-1)


def test_every_normalising_task_has_a_score_function():
    assert set(SCORES) == _listed()


def _wrong(module, task, name):
    mistake = next(m for m in task.mistakes if m.name == name)
    others = other_answers(task.assignment, task.func_name)
    return load_mistake(task, Mistake(name, mistake.message, others + "\n" + mistake.source))


def _outputs(fn, args, reference=False):
    args = copy.deepcopy(args)  # ps12: an answer gets a one-pass stream of the source, a reference the source
    out = to_numpy(fn(*args) if reference else harness.call(fn, args))
    return list(out) if isinstance(out, tuple | list) else [out]


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_large_scores_are_graded_and_both_shift_mistakes_are_catalogued(key):
    module, task = TASKS[key]
    names = {m.name for m in task.mistakes}
    assert UNSHIFTED.get(key, "not_stabilised") in names
    assert "shifted_by_min" in names
    cases = task.hidden_cases()
    extremes = [_extremes(args, key) for args in cases]
    assert any(np.max(np.abs(np.r_[lo, hi])) >= 1000 for lo, hi in extremes), "no hidden score reaches 1000"
    assert any(((lo > EXP_LIMIT) & (hi - lo < EXP_LIMIT)).any() for lo, hi in extremes), \
        "no narrow case: a slice whose scores all overflow exp but lie within 709.78 of each other"
    assert any(((hi > EXP_LIMIT) & (hi - lo > EXP_LIMIT)).any() for lo, hi in extremes), \
        "no wide case: a slice whose scores spread over more than 709.78, with the largest above it"
    unshifted = _wrong(module, task, UNSHIFTED.get(key, "not_stabilised"))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        assert any(not np.isfinite(o).all() for args in cases for o in _outputs(unshifted, args)), \
            "the unshifted softmax never overflows on the hidden cases"
        for args in cases:  # the reference itself survives every case
            assert all(np.isfinite(o).all() for o in _outputs(task.reference, args, reference=True))


@pytest.mark.parametrize("key", sorted(MASKED))
def test_a_fully_masked_row_gives_zeros_and_its_nan_is_named(key):
    module, task = TASKS[key]
    names = {m.name for m in task.mistakes}
    assert "nan_on_masked_row" in names
    if key.startswith("ps11_graphs."):
        assert "filled_with_minus_9e15" in names
    nan_row = _wrong(module, task, "nan_on_masked_row")
    found = False
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for args in task.hidden_cases():
            empty = ~np.isfinite(np.asarray(SCORES[key](*args), dtype=float)).any(axis=-1)  # fully masked slices
            if not empty.any():
                continue
            weights = _outputs(task.reference, args)[-1]  # the weights (graph_attention: alpha, the last output)
            assert np.all(_rows(weights, args[1] if key.endswith(".softmax") else -1)[empty.ravel()] == 0)
            found = found or any(np.isnan(o).any() for o in _outputs(nan_row, args))
    assert found, "no hidden case has a fully masked row on which nan_on_masked_row gives NaN"


# --- issue 33: rows whose allowed scores are all far below 0 (and all far above), masked entries beside ----

#: The tasks that mask some scores of a row while keeping others (a band, a graph's edges, -inf entries).
BESIDE_MASKED = MASKED | {"ps08_speech_images.truncated_attention"}


def _kinds(args, key):
    """(all far below 0, all far above 0) for each softmax slice of one case with masked entries beside its
    allowed ones (any slice of two entries or more, where the task masks nothing)."""
    rows = _rows(SCORES[key](*args))
    allowed = np.isfinite(rows)
    keep = allowed.any(axis=1) & (rows.shape[1] > 1)
    if key in BESIDE_MASKED:
        keep &= ~allowed.all(axis=1)
    inside = np.where(allowed, rows, np.nan)[keep]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return np.nanmax(inside, axis=1) < -EXP_LIMIT, np.nanmin(inside, axis=1) > EXP_LIMIT


@pytest.mark.parametrize("key", sorted(EXPECTED))
def test_rows_all_far_below_zero_are_graded_beside_masked_entries(key):
    """A softmax of scores * mask (AllenNLP's masked_softmax: a masked entry counts as a score of 0) is wrong
    only on a row whose allowed scores are all far below 0 while some entry is masked; an epsilon beside the
    sum, or a shift by max(0, max s), too.  Every normalising task's hidden cases, and the re-check's inputs
    (the same generator on the course secret's seeds: here five seeds), hold a slice whose allowed scores are
    all below -709.78 (each exp underflows to 0); a masking task's such slice has masked entries beside it,
    and it also has one whose allowed scores are all above 709.78 with masked entries beside them."""
    _, task = TASKS[key]
    draws = [task.hidden_cases()] + [task.cases(np.random.default_rng(seed)) for seed in range(5)]
    for cases in draws:
        kinds = [_kinds(args, key) for args in cases]
        assert any(low.any() for low, _ in kinds), "no slice whose allowed scores are all far below 0" + (
            " beside masked entries" if key in BESIDE_MASKED else "")
        if key in BESIDE_MASKED:
            assert any(high.any() for _, high in kinds), "no slice of allowed scores all far above 0 beside masked ones"


@pytest.mark.parametrize("key", sorted(BESIDE_MASKED))
def test_a_softmax_of_scores_times_mask_is_named(key):
    """The catalogue names it, on the hidden cases (tests/test_catalogues.py) and on every re-check draw."""
    from attn_grader.checking.core import _outcome, diagnose

    module, task = TASKS[key]
    if key == "ps03_relevance.softmax":  # no mask argument: -inf entries are its mask, nothing multiplies
        assert "masked_by_multiplying" not in {m.name for m in task.mistakes}
        return
    wrong = _wrong(module, task, "masked_by_multiplying")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for seed in range(5):
            cases = task.cases(np.random.default_rng(seed))
            outcomes = [_outcome(wrong, args) for args in cases]
            assert diagnose(task, outcomes, cases).name == "masked_by_multiplying", seed
