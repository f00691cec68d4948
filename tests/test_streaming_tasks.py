"""Issue 29: tasks that cannot be passed without doing what they teach.

ps12's streaming tasks receive a one-pass stream of blocks (:class:`attn_grader.checking.harness.Blocks`): a second
pass raises, a block kept past the next read becomes NaN, and the stream crosses the re-check's boundary
(the job's pickle) into the sandbox, where the harness rebuilds it from its own file.  ps09's task 4 receives
the heads' scores and returns their hard-limit attention matrices with the output.  The bypasses the issue
found (a two-pass online softmax, a full-matrix blocked attention, ``return conv2d_single(x, kernel)``) fail
in-process here and in the class run (tests/others_answers.py, graded by tests/test_grading.py).
"""

import copy
import pickle
import tempfile

import numpy as np
import pytest
from others_answers import (
    CONV_NOT_ATTENTION,
    FULL_MATRIX_BLOCKED,
    HEADS_WITHOUT_SCORES,
    TWO_PASS_BLOCKED,
    TWO_PASS_ONLINE_SOFTMAX,
)

from attn_grader.catalogue import ps09_cnn
from attn_grader.catalogue.ps12_efficient import LONG_ROW
from attn_grader.checking import harness, recheck
from attn_grader.checking.core import tasks_of
from attn_grader.checking.harness import Blocks, StreamError, StreamKept
from attn_ref.conv import conv_as_attention_params, relative_attention_conv
from solutions import cells, solutions


def test_a_stream_is_read_once_in_order_and_a_kept_block_becomes_nan():
    x = np.arange(7.0)
    stream = Blocks((x,), 3)
    seen = [b.copy() for b in copy.deepcopy(stream)]  # a deep copy is a fresh stream
    assert [s.tolist() for s in seen] == [[0, 1, 2], [3, 4, 5], [6]]
    kept = list(stream)
    assert all(np.isnan(b).all() for b in kept)  # their memory was reused by the next block
    with pytest.raises(StreamError, match="second time"):
        iter(stream)
    with pytest.raises(ValueError):
        next(iter(Blocks((x,), 2)))[0] = 1.0  # read-only
    pairs = [(k.shape, v.shape) for k, v in Blocks((np.ones((5, 2)), np.zeros((5, 3))), 2)]
    assert pairs == [((2, 2), (2, 3)), ((2, 2), (2, 3)), ((1, 2), (1, 3))]


# The gap of issue 29's first fix: a copy of each block (b.copy()) survives the next read, so an answer could
# keep the whole of K and V and form the full matrix of scores.  The stream's memory check stops it.
COPIED_BLOCKED = '''def blocked_attention(Q, blocks):
    kept = [(K_B.copy(), V_B.copy()) for K_B, V_B in blocks]
    K, V = np.vstack([k for k, _ in kept]), np.vstack([v for _, v in kept])
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''

# ...and one that swallows the stream's exception to keep going with what it copied.
SWALLOWING_BLOCKED = '''def blocked_attention(Q, blocks):
    kept = []
    try:
        for K_B, V_B in blocks:
            kept.append((K_B + 0, V_B * 1))
    except Exception:
        pass
    K, V = np.vstack([k for k, _ in kept]), np.vstack([v for _, v in kept])
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''


def _answer(source: str, name: str):
    ns: dict = {}
    exec(cells("ps12_efficient")["setup"] + "\n" + source, ns)  # noqa: S102
    return ns[name]


def test_a_copy_of_every_block_is_stopped_before_the_end_of_a_long_stream():
    n, size = LONG_ROW, 512
    seen = []
    with pytest.raises(StreamKept, match="kept the blocks"):
        for b in Blocks((np.arange(float(n)),), size):
            seen.append(b.copy())
    assert 0 < len(seen) * size < n  # stopped part-way: what was copied is not the whole stream
    assert len(seen) * size * 8 <= harness.KEPT_CHECK_FROM + 2 * size * 8  # right after the check's threshold


def test_a_one_pass_answer_holds_far_less_than_the_check_allows():
    """The margin of the check: on the long hidden streams, at every block where the stream checks, the
    solutions hold at most half of what it allows (half the bytes handed out)."""
    import tracemalloc

    from attn_grader.catalogue.ps12_efficient import _cases_blocked, _cases_online_softmax

    long_cases = {"online_softmax": _cases_online_softmax(np.random.default_rng(0))[-1],
                  "blocked_attention": _cases_blocked(np.random.default_rng(0))[-1]}
    for name, args in long_cases.items():
        fn = _answer(solutions("ps12_efficient")[name], name)
        *first, stream = copy.deepcopy(args)
        _, (arrays, _size) = stream.__reduce__()
        assert sum(a.nbytes for a in arrays) >= 2 * harness.KEPT_CHECK_FROM, name  # checked before the end
        ratios = []

        def watched(blocks, ratios=ratios):
            handed = 0
            base = tracemalloc.get_traced_memory()[0]
            for b in blocks:  # what the stream measures before each block, here after each (no less)
                if handed >= harness.KEPT_CHECK_FROM:
                    ratios.append((tracemalloc.get_traced_memory()[0] - base) / (handed / 2))
                handed += sum(a.nbytes for a in (b if isinstance(b, tuple) else (b,)))
                yield b

        tracemalloc.start()
        try:
            fn(*first, watched(stream))
        finally:
            tracemalloc.stop()
        assert ratios and max(ratios) < 0.5, (name, max(ratios))  # at least 2x below the bound


@pytest.mark.parametrize(("source", "name", "mistake"), [
    (COPIED_BLOCKED, "blocked_attention", "blocks_copied"),
    (SWALLOWING_BLOCKED, "blocked_attention", None),
], ids=["copies", "copies_swallowing_the_error"])
def test_answers_that_copy_the_blocks_fail_in_process(source, name, mistake):
    from attn_grader.checking.core import GradingError, check

    with pytest.raises(GradingError) as caught:
        check("ps12_efficient", name, _answer(source, name))
    if mistake:
        assert f"[{mistake}]" in str(caught.value)


def test_the_job_unpickler_rebuilds_a_stream_from_the_harness_file():
    import io

    data = pickle.dumps({"cases": [(Blocks((np.arange(4.0),), 2),)]})
    job = harness.JobUnpickler(io.BytesIO(data)).load()
    (stream,) = job["cases"][0]
    assert [b.tolist() for b in (b.copy() for b in stream)] == [[0, 1], [2, 3]]


def test_the_task_4_reference_is_the_attention_layer_of_the_reference_in_the_hard_limit():
    rng = np.random.default_rng(0)
    for (H, W), K in [((5, 6), 3), ((4, 3), 5), ((2, 2), 1)]:
        x, kernel = rng.standard_normal((H, W)), rng.standard_normal((K, K))
        out, A = ps09_cnn._ref_attention_as_conv(x, kernel, ps09_cnn._padded_scores(H, W, K))
        ref_out, ref_A = relative_attention_conv(x[:, :, None], conv_as_attention_params(kernel[None, None]), np.inf)
        assert np.allclose(out, ref_out[:, :, 0]) and np.array_equal(A, ref_A)


@pytest.mark.parametrize(("assignment", "answers", "expect"), [
    ("ps12_efficient", {}, {"online_softmax": "", "blocked_attention": ""}),
    ("ps12_efficient",
     {"online_softmax_answer": TWO_PASS_ONLINE_SOFTMAX, "blocked_attention_answer": FULL_MATRIX_BLOCKED},
     {"online_softmax": "blocks_kept", "blocked_attention": "blocks_kept"}),
    ("ps12_efficient", {"blocked_attention_answer": TWO_PASS_BLOCKED}, {"blocked_attention": "read_twice"}),
    ("ps12_efficient", {"blocked_attention_answer": COPIED_BLOCKED}, {"blocked_attention": "blocks_copied"}),
    ("ps09_cnn", {}, {"attention_as_conv": ""}),
    ("ps09_cnn", {"attention_as_conv_answer": CONV_NOT_ATTENTION}, {"attention_as_conv": "unrecognised"}),
    ("ps09_cnn", {"attention_as_conv_answer": HEADS_WITHOUT_SCORES}, {"attention_as_conv": "scores_ignored"}),
], ids=["ps12_solution", "ps12_bypasses", "ps12_two_passes", "ps12_copies", "ps09_solution", "ps09_bypass",
        "ps09_no_scores"])
def test_the_recheck_in_its_sandbox_fails_the_bypasses(assignment, answers, expect):
    """The stream and the scores cross into the sandbox; the verdicts there are the in-process ones."""
    tasks = [t for t in tasks_of(assignment) if t.func_name in expect]
    given = {f"{f}_answer": src for f, src in solutions(assignment).items()} | answers
    cases = {t.func_name: recheck.cases_for(t, b"issue 29" * 4, given) for t in tasks}
    with tempfile.TemporaryDirectory() as work:
        index = recheck.run(tasks, cases, cells(assignment)["setup"], given, work)
    verdicts = recheck.compare(tasks, cases, index)
    for func, mistake in expect.items():
        assert verdicts[func].passed is (mistake == ""), verdicts[func]
        assert verdicts[func].mistake == mistake, verdicts[func]
