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
from attn_grader.checking import harness, recheck
from attn_grader.checking.core import tasks_of
from attn_grader.checking.harness import Blocks, StreamError
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
    ("ps09_cnn", {}, {"attention_as_conv": ""}),
    ("ps09_cnn", {"attention_as_conv_answer": CONV_NOT_ATTENTION}, {"attention_as_conv": "unrecognised"}),
    ("ps09_cnn", {"attention_as_conv_answer": HEADS_WITHOUT_SCORES}, {"attention_as_conv": "unrecognised"}),
], ids=["ps12_solution", "ps12_bypasses", "ps12_two_passes", "ps09_solution", "ps09_bypass", "ps09_no_scores"])
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
