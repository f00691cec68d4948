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
import stream_bypasses as B
from others_answers import (
    CONV_NOT_ATTENTION,
    FULL_MATRIX_BLOCKED,
    HEADS_WITHOUT_SCORES,
    TWO_PASS_BLOCKED,
    TWO_PASS_ONLINE_SOFTMAX,
)

from attn_grader.catalogue import ps09_cnn
from attn_grader.catalogue.ps12_efficient import LONG_ROW
from attn_grader.checking import feed, harness, recheck
from attn_grader.checking.core import tasks_of
from attn_grader.checking.harness import Blocks, Stream, StreamError, StreamKept
from attn_ref.conv import conv_as_attention_params, relative_attention_conv
from solutions import cells, solutions


def test_a_stream_is_read_once_in_order_and_a_kept_block_becomes_nan():
    x = np.arange(7.0)
    stream = Stream(Blocks((x,), 3))
    for make_another in (copy.deepcopy, copy.copy, pickle.dumps, lambda b: b.astype(float), np.asarray):
        with pytest.raises(StreamError, match="cannot be copied"):
            make_another(stream)  # no copy, pickle or conversion of a stream is another stream
    assert not hasattr(stream, "_Blocks__data") and not hasattr(stream, "arrays")
    kept = list(stream)
    assert all(np.isnan(b).all() for b in kept)  # their memory was reused by the next block
    with pytest.raises(StreamError, match="second time"):
        iter(stream)
    source = Blocks((x,), 2)
    first = next(iter(Stream(source)))
    first -= 1.0  # the answer owns each block it gets (in place on it is fine, as in the notebook's stream())
    assert first.tolist() == [-1.0, 0.0] and source.arrays[0][:2].tolist() == [0.0, 1.0]
    pairs = [(k.shape, v.shape) for k, v in Stream(Blocks((np.ones((5, 2)), np.zeros((5, 3))), 2))]
    assert pairs == [((2, 2), (2, 3)), ((2, 2), (2, 3)), ((1, 2), (1, 3))]
    seen = harness.call(lambda b: [v.copy() for v in b], (Blocks((x,), 3),))
    assert [v.tolist() for v in seen] == [[0, 1, 2], [3, 4, 5], [6]]
    with pytest.raises(StreamError, match="before reading the stream to its end"):
        harness.call(lambda b: next(iter(b)), (Blocks((x,), 3),))


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
    n, size = LONG_ROW, 4096
    seen = []
    with pytest.raises(StreamKept, match="KiB more after reading"):
        for b in Stream(Blocks((np.arange(float(n)),), size)):
            seen.append(b.copy())
    limit = harness.WARM_UP + harness.KEPT_CHECK_FROM + 2 * harness.CHECK_EVERY
    assert 0 < len(seen) * size * 8 <= limit < n * 8 / 2  # stopped early: the copy is not half the stream


@pytest.mark.slow
def test_a_one_pass_answer_holds_far_less_than_the_check_allows():
    """The margin of the check: on the long hidden streams, at every point where the stream checks, the solutions
    hold at most half of what it allows (``keep`` times the bytes handed out since its base)."""
    from attn_grader.catalogue._ps12_linear_io import _cases_linear
    from attn_grader.catalogue.ps12_efficient import _cases_blocked, _cases_online_softmax

    long_cases = {"online_softmax": _cases_online_softmax(np.random.default_rng(0))[-1],
                  "blocked_attention": _cases_blocked(np.random.default_rng(0))[-1],
                  "causal_linear_attention": _cases_linear(np.random.default_rng(0))[-1]}
    for name, args in long_cases.items():
        fn = _answer(solutions("ps12_efficient")[name], name)
        *first, source = copy.deepcopy(args)
        assert sum(a.nbytes for a in source.arrays) >= 2 * (harness.WARM_UP + harness.KEPT_CHECK_FROM), name
        ratios = []

        def watched(blocks, ratios=ratios, keep=source.keep):
            handed, base = 0, None
            for b in blocks:  # what the stream measures, here after each block
                if base is None and handed >= harness.WARM_UP:
                    base, since = harness.memory(), handed
                elif base is not None and handed - since >= harness.KEPT_CHECK_FROM:
                    ratios.append(harness.held(base) / (keep * (handed - since)))
                handed += sum(a.nbytes for a in (b if isinstance(b, tuple) else (b,)))
                yield b

        harness.call(lambda *a, fn=fn: fn(*a[:-1], watched(a[-1])), (*first, source))
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
    (source,) = job["cases"][0]
    assert [b.tolist() for b in harness.call(lambda s: [b.copy() for b in s], (source,))] == [[0, 1], [2, 3]]


def test_the_job_holds_no_stream_data_its_blocks_come_through_pipes():
    x = np.arange(10.0) + 0.5
    job = {"tasks": [{"func_name": "f", "cases": [(Blocks((x,), 4),), (3, Blocks((x, x), 5))]}]}
    original = job["tasks"][0]["cases"]
    with feed.piped(job) as fds:
        data = pickle.dumps(job)
        assert len(fds) == 2 and np.float64(0.5).tobytes() not in data  # no value of the stream in the job
        got = [harness.call(lambda *a: [np.copy(b) for b in a[-1]], args) for args in job["tasks"][0]["cases"]]
    assert [g.tolist() for g in got[0]] == [[0.5, 1.5, 2.5, 3.5], [4.5, 5.5, 6.5, 7.5], [8.5, 9.5]]
    assert [tuple(map(len, g)) for g in got[1]] == [(5, 5), (5, 5)]
    assert isinstance(original[0][0], Blocks)  # the caller's cases keep their sources, for the references


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
    ("ps12_efficient", {"online_softmax_answer": B.DEEPCOPY_TWO_PASS, "blocked_attention_answer": B.MMAP_COPY},
     {"online_softmax": "read_twice", "blocked_attention": "blocks_copied"}),
    ("ps12_efficient", {"online_softmax_answer": B.TEMPFILE_COPY, "blocked_attention_answer": B.ASTYPE_TWO_PASS},
     {"online_softmax": "blocks_copied", "blocked_attention": "read_twice"}),
    ("ps12_efficient", {"online_softmax_answer": B.PIPE_READ_AHEAD, "blocked_attention_answer": B.MANGLED_DATA,
                        "causal_linear_attention_answer": B.KEPT_QUADRATIC_LINEAR},
     {"online_softmax": ("read_twice", "error"),  # its stream ends early: StreamError, named by the timing
      "blocked_attention": "error", "causal_linear_attention": "error"}),
    ("ps12_efficient", {"online_softmax_answer": B.TORCH_ONE_PASS, "causal_linear_attention_answer": B.EPS_LINEAR},
     {"online_softmax": "", "causal_linear_attention": ""}),
    ("ps09_cnn", {}, {"attention_as_conv": ""}),
    ("ps09_cnn", {"attention_as_conv_answer": CONV_NOT_ATTENTION}, {"attention_as_conv": "unrecognised"}),
    ("ps09_cnn", {"attention_as_conv_answer": HEADS_WITHOUT_SCORES}, {"attention_as_conv": "scores_ignored"}),
], ids=["ps12_solution", "ps12_bypasses", "ps12_two_passes", "ps12_copies", "ps12_deepcopy_mmap",
        "ps12_tempfile_astype", "ps12_pipe_mangled_quadratic", "ps12_torch_eps_right", "ps09_solution", "ps09_bypass",
        "ps09_no_scores"])
@pytest.mark.slow
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
        assert verdicts[func].mistake in (mistake if isinstance(mistake, tuple) else (mistake,)), verdicts[func]


@pytest.mark.parametrize(("var", "name"), [
    ("DEEPCOPY_TWO_PASS", "online_softmax"), ("ASTYPE_TWO_PASS", "blocked_attention"),
    ("MANGLED_DATA", "blocked_attention"), ("MMAP_COPY", "blocked_attention"), ("TEMPFILE_COPY", "online_softmax"),
    ("KEPT_QUADRATIC_LINEAR", "causal_linear_attention")])
@pytest.mark.slow
def test_each_bypass_fails_in_process(var, name):
    """Issue 41: each of these got full marks; the notebook's hidden test now fails it too (no disagreement)."""
    from attn_grader.checking.core import GradingError, check

    with pytest.raises(GradingError):
        check("ps12_efficient", name, _answer(getattr(B, var), name))


@pytest.mark.slow
def test_an_eps_in_the_denominator_is_right_on_every_draw(monkeypatch):
    """One verdict for one answer: fast-transformers' eps = 1e-6 in the normaliser passes on 200 draws of the
    task's domain (normalisers >= 1); outside it (the old generator, no _in_domain) some draws fail it."""
    from attn_grader.catalogue import _ps12_linear_io as io
    from attn_grader.checking.core import examine, get_task

    task = get_task("ps12_efficient", "causal_linear_attention")
    eps = _answer(B.EPS_LINEAR, "causal_linear_attention")

    def failures():
        return [seed for seed in range(200) if examine(task, eps, task.cases(np.random.default_rng(seed))[:-1])]

    assert failures() == []
    assert examine(task, eps, task.hidden_cases()) is None  # with the long stream
    monkeypatch.setattr(io, "_in_domain", lambda Q, K: (Q, K))
    assert len(failures()) >= 5


@pytest.mark.slow
def test_an_answer_that_calls_the_reference_is_told_it_may_not():
    """Issue 41: not "online_step is not defined" but what the student did."""
    tasks = [t for t in tasks_of("ps12_efficient") if t.func_name in ("online_step", "hbm_bytes")]
    given = {f"{f}_answer": src for f, src in solutions("ps12_efficient").items()}
    given["online_step_answer"] = "from attn_ref.efficient import online_step\n"
    given["hbm_bytes_answer"] = ("def hbm_bytes(n, d, sram_bytes, elem_bytes):\n    import attn_ref.io_model as io\n"
                                 "    return io.standard_attention_io(n, d, elem_bytes).total, 0\n")
    cases = {t.func_name: recheck.cases_for(t, b"issue 41" * 4, given) for t in tasks}
    with tempfile.TemporaryDirectory() as work:
        index = recheck.run(tasks, cases, cells("ps12_efficient")["setup"], given, work)
    verdicts = recheck.compare(tasks, cases, index)
    for func in ("online_step", "hbm_bytes"):
        assert not verdicts[func].passed and "the reference `attn_ref` may not be called" in verdicts[func].reason


@pytest.mark.parametrize(("answers", "expect"), [
    ({"online_softmax_answer": B.BALLAST_KEPT, "blocked_attention_answer": B.FRAMES_READ},
     {"online_softmax": False, "blocked_attention": False}),
    ({"online_softmax_answer": B.IN_PLACE_ONE_PASS, "causal_linear_attention_answer": B.TORCH_STACK_LINEAR},
     {"online_softmax": True, "causal_linear_attention": True}),
], ids=["frames_ballast", "in_place_torch_stack"])
@pytest.mark.slow
def test_the_hard_cap_of_the_recheck_stops_what_a_peak_check_missed(answers, expect):
    """Issue 41: the frames cheat (the source reached through generator frames, `finished` set by hand) and the
    ballast cheat (every block kept behind released memory) lose their points in the sandboxed re-check, where each
    long stream is read by a child capped hard below its size; in place on a block and PyTorch's stacked float32
    outputs keep theirs."""
    tasks = [t for t in tasks_of("ps12_efficient") if t.func_name in expect]
    given = {f"{f}_answer": src for f, src in solutions("ps12_efficient").items()} | answers
    cases = {t.func_name: recheck.cases_for(t, b"issue 41" * 4, given) for t in tasks}
    with tempfile.TemporaryDirectory() as work:
        index = recheck.run(tasks, cases, cells("ps12_efficient")["setup"], given, work)
    verdicts = recheck.compare(tasks, cases, index)
    for func, passed in expect.items():
        assert verdicts[func].passed is passed, verdicts[func]
        if not passed:
            assert verdicts[func].mistake in ("blocks_kept", "blocks_copied", "error"), verdicts[func]


def test_a_capped_call_stops_kept_blocks_and_decides_the_end_itself(tmp_path, monkeypatch):
    """Issue 41: a piped stream is read by a forked child capped hard (RLIMIT_DATA) at CAP_ABOVE past its size at
    the fork: keeping the blocks, behind a ballast or not, runs out of memory; one pass passes; whether the stream
    was read to its end is the pipe's state, seen from outside the child (setting ``finished`` changes nothing)."""
    monkeypatch.setattr(harness, "CAP_ABOVE", 4 << 20)
    x = np.random.default_rng(41).standard_normal(2 << 20)  # 16 MiB: four times the cap
    ns = {"np": np}
    exec(B.BALLAST_KEPT.replace("1 << 17", "1 << 15") + B.IN_PLACE_ONE_PASS.replace("online_softmax", "one_pass")
         + "def stop_early(blocks):\n    next(iter(blocks))\n    blocks.finished = True\n    return 0.0, 0.0\n", ns)
    job = {"tasks": [{"func_name": f, "cases": [(Blocks((x,), 1 << 14),)]}
                     for f in ("online_softmax", "one_pass", "stop_early")]}
    with feed.piped(job):
        got = {t["func_name"]: harness.call_capped(ns[t["func_name"]], t["cases"][0], str(tmp_path), t["func_name"])
               for t in job["tasks"]}
    assert got["online_softmax"]["error"].startswith("StreamKept: it kept more than one pass allows"), got
    assert got["one_pass"] == {"array": "one_pass.npy"}, got
    mu, s = np.load(tmp_path / "one_pass.npy")
    assert mu == x.max() and np.isclose(s, np.exp(x - x.max()).sum())
    assert got["stop_early"]["error"].startswith("StreamError"), got


@pytest.mark.parametrize(("var", "name"), [("TORCH_STACK_LINEAR", "causal_linear_attention"),
                                           ("IN_PLACE_ONE_PASS", "online_softmax")])
@pytest.mark.slow
def test_stacked_torch_outputs_and_in_place_blocks_pass_in_process(var, name):
    """Issue 41 (c), (d): one output per position is the answer's result, not kept blocks (PyTorch's float32
    tensors included), and an answer owns the block it gets: the notebook's hidden test passes them, as the
    re-check does."""
    from attn_grader.checking.core import check

    check("ps12_efficient", name, _answer(getattr(B, var), name))
