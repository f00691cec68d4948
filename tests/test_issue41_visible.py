"""Issue 41 (third pass): answers a lazy or confused student writes fail the visible test cell they run before
handing in, as the source notebook runs it (the answer cells above, then the test cell without its hidden part);
and one task's answer type (a PyTorch tensor where arrays are allowed) never fails another task's visible test."""

import re
import warnings

import numpy as np
import pytest
from others_answers_41 import RENORMALISED_MASKED_WEIGHTS

from solutions import cells, solutions

_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)


def run_visible(assignment: str, func: str, answers: dict[str, str]) -> None:
    """The visible part of ``func``'s test cell after the setup and the answer cells up to ``func``'s, with
    ``answers`` (function name -> source) in place of the solution's."""
    source = cells(assignment)
    ns: dict = {}
    exec(source["setup"], ns)  # noqa: S102 - our own notebook
    for f, src in solutions(assignment).items():
        exec(answers.get(f, src), ns)  # noqa: S102 - the answers below
        if f == func:
            break
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        exec(_HIDDEN.sub("", source[f"{func}_test"]), ns)  # noqa: S102


#: (assignment, function, the wrong answer): each passed its visible test before issue 41.
WRONG = {
    "ps01_abs_cosine": ("ps01_vector_sets", "cosine_similarity_matrix", '''def cosine_similarity_matrix(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    return np.abs(U @ U.T)
'''),
    "ps01_diagonal_zero": ("ps01_vector_sets", "nearest_other", '''def nearest_other(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, 0)
    best = S.max(axis=1, keepdims=True)
    return np.where(np.sum(np.isclose(S, best), axis=1) > 1, -1, S.argmax(axis=1))
'''),
    "ps02_one_sided": ("ps02_sequence_labeling", "stacked_reach", '''def stacked_reach(n, r, L):
    d = np.arange(n)[:, None] - np.arange(n)[None, :]
    return (d >= 0) & (d <= L * r)
'''),
    "ps03_softmax_then_mask": ("ps03_relevance", "masked_weights", RENORMALISED_MASKED_WEIGHTS),
    "ps08_softmax_then_band": ("ps08_speech_images", "truncated_attention", '''def truncated_attention(Q, K, V, w):
    idx = np.arange(len(Q))
    s = Q @ K.T / np.sqrt(Q.shape[1])
    e = np.exp(s - s.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True) * (np.abs(idx[:, None] - idx[None, :]) <= w)
    return p / p.sum(axis=1, keepdims=True) @ V
'''),
    "ps11_multiplied_mask": ("ps11_graphs", "masked_softmax", '''def masked_softmax(scores, mask):
    s = scores * mask
    e = np.exp(s - s.max(1, keepdims=True)) * mask
    t = e.sum(1, keepdims=True)
    return np.divide(e, t, out=np.zeros_like(e), where=t > 0)
'''),
    "ps11_own_self_loops_dropped": ("ps11_graphs", "adjacency_mask",
                                    '''def adjacency_mask(edge_index, n, self_loops=True):
    M = np.zeros((n, n), dtype=bool)
    M[edge_index[1], edge_index[0]] = True
    np.fill_diagonal(M, self_loops)
    return M
'''),
    "ps05_median_peaks": ("ps05_matrix_form", "peak_weights", '''def peak_weights(Q, K):
    A = K.T @ Q
    return (float(np.median(softmax(A, axis=0).max(axis=0))),
            float(np.median(softmax(A / np.sqrt(Q.shape[0]), axis=0).max(axis=0))))
'''),
}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_a_wrong_answer_fails_its_visible_test(name):
    assignment, func, answer = WRONG[name]
    run_visible(assignment, func, {})  # the solution passes the same cell
    with pytest.raises(AssertionError):
        run_visible(assignment, func, {func: answer})


TORCH_ONE_HOT = '''import torch
import torch.nn.functional as F


def one_hot(indices, vocab_size):
    return F.one_hot(torch.as_tensor(indices), vocab_size).float()
'''


@pytest.mark.slow  # imports torch: seconds
def test_a_pytorch_one_hot_passes_its_own_test_and_does_not_fail_nearest_other():
    """The intro allows PyTorch answers: a tensor from one_hot must not break nearest_other's visible test (it
    did: ``'Tensor' object has no attribute 'flat'`` inside a right NumPy nearest_other)."""
    run_visible("ps01_vector_sets", "one_hot", {"one_hot": TORCH_ONE_HOT})
    run_visible("ps01_vector_sets", "nearest_other", {"one_hot": TORCH_ONE_HOT})


def test_the_stacked_reach_self_check_gets_fresh_inputs():
    """Issue 41.2: _cases_reach ignored rng, so the self-check (fresh draws only) had nothing to check and the
    hidden tests and the re-check saw the same eight tuples; now each draw adds sizes of its own."""
    from attn_grader.checking.core import get_task
    from attn_grader.selfcheck import fresh_cases

    task = get_task("ps02_sequence_labeling", "stacked_reach")
    assert len(fresh_cases(task)) >= 6
    assert task.cases(np.random.default_rng(1)) != task.cases(np.random.default_rng(2))
