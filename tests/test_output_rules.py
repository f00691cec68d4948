"""Issue 41, the grader's shared checking code: one rule for outputs that are not arrays, tolerances that never
loosen for a lower precision, the self-check telling an answer that calls the reference it will score 0.

The same answers go through the three places that compare (the self-check, the notebook's hidden test
``attn_grader.check`` and the sandboxed re-check's reading of the harness's files), which must agree.
"""

import os

import numpy as np
import pytest

from attn_grader import GradingError, selfcheck
from attn_grader.checking import harness, recheck
from attn_grader.checking.core import LOW_PRECISION, Mistake, check, describe_difference, get_task, load_mistake
from solutions import all_answers


def _solution(task):
    return load_mistake(task, Mistake("solution", "", all_answers(task.assignment)))


def _rechecked(task, fn, tmp_path):
    """The re-check's verdict on ``fn``: its outputs saved as the sandbox's harness saves them, read back as the
    grader reads them, compared with the reference."""
    out = tmp_path / "out"
    out.mkdir(exist_ok=True)
    cases = task.hidden_cases()
    results = [harness.save(harness.to_plain(harness.call(fn, args)), str(out), f"t0_c{k}")
               for k, args in enumerate(cases)]
    index = {"tasks": {task.func_name: {"results": results}}}
    index["outputs"] = recheck._read_outputs(str(tmp_path), index)
    return recheck.compare([task], {task.func_name: cases}, index)[task.func_name]


# 1. An output that np.asarray turns into an array of numbers is compared as that array, in all three places.

def _heads_as_list(X, h):
    return np.split(np.asarray(X, dtype=float), h, axis=1)


def _frames_as_list(x, frame_len, hop):
    x = np.asarray(x, dtype=float)
    return [x[s:s + frame_len] for s in range(0, len(x) - frame_len + 1, hop)]


@pytest.mark.parametrize(("assignment", "func_name", "fn"), [("ps06_multi_head", "split_heads", _heads_as_list),
                                                             ("ps01_vector_sets", "frame_signal", _frames_as_list)])
def test_a_list_of_equal_shape_arrays_is_compared_as_one_array(assignment, func_name, fn, capsys, tmp_path):
    task = get_task(assignment, func_name)
    args = task.hidden_cases()[0]
    assert isinstance(fn(*args), list)
    assert describe_difference(fn(*args), task.reference(*args), task.rtol, task.atol) is None
    check(assignment, func_name, fn)  # the notebook's hidden test
    selfcheck.check(assignment, func_name, fn)
    said = capsys.readouterr().out
    assert "is right on" in said and "could not check" not in said, said
    verdict = _rechecked(task, fn, tmp_path)
    assert verdict.passed, verdict


def test_a_list_of_many_frames_survives_the_re_check(tmp_path):
    """The harness saves a list of equal-shape arrays as one file: the reader's limit of 16 parts of a tuple does
    not cut a signal's 40 frames to 16."""
    out = tmp_path / "out"
    out.mkdir()
    frames = [np.full(4, float(k)) for k in range(40)]
    entry = harness.save(harness.to_plain(frames), str(out), "t0_c0")
    assert len(os.listdir(out)) == 1
    value = recheck._Outputs(str(tmp_path), 1 << 20).load(entry)
    assert describe_difference(value, np.stack(frames), 1e-5, 1e-6) is None
    pair = harness.save(harness.to_plain((np.ones((2, 3)), np.ones(2))), str(out), "t0_c1")  # (output, weights)
    assert isinstance(recheck._Outputs(str(tmp_path), 1 << 20).load(pair), tuple)


@pytest.mark.parametrize("got", [[np.ones(3), np.ones(2)], {"a": 1}, "abc", None])
def test_anything_else_is_a_clear_message_never_an_attribute_error(got, capsys):
    msg = describe_difference(got, np.zeros((2, 3)), 1e-5, 1e-6)
    assert msg == f"output: returns a {type(got).__name__}; return a NumPy array of shape (2, 3)", msg
    task = get_task("ps06_multi_head", "split_heads")
    selfcheck.check(task.assignment, task.func_name, lambda X, h: [X[:, :1], X[:, 1:]] if got is not None else got)
    said = capsys.readouterr().out
    assert "AttributeError" not in said and "could not check" not in said, said
    with pytest.raises(GradingError, match="split_heads") as err:
        check(task.assignment, task.func_name, lambda X, h: [X[:, :1], X[:, 1:]])
    assert "AttributeError" not in str(err.value)


# 2. The tolerance never gets looser than float32's because the answer chose a lower precision; whole numbers exactly.

def test_a_float16_answer_is_compared_at_float32_tolerance_and_told_why():
    positions = np.arange(600)[:, None] / 10000 ** (np.arange(0, 8, 2) / 8)
    exact = np.sin(positions)
    msg = describe_difference(exact.astype(np.float16), exact, 1e-5, 1e-6)
    assert msg is not None and LOW_PRECISION in msg, msg
    assert describe_difference(np.sin(positions.astype(np.float32)), exact, 1e-5, 1e-6) is None  # float32: right


def test_whole_number_outputs_are_compared_exactly_whatever_their_dtype():
    expected = np.array([[1, 3], [216, -1]])
    assert describe_difference(expected.astype(float), expected, 1e-5, 1e-6) is None  # 3.0 for 3 is right
    assert describe_difference(expected.astype(np.float16), expected, 1e-5, 1e-6) is None
    wrong = np.array([[1, 4], [216, -1]], dtype=np.float16)
    assert "expected 3, got 4.0" in describe_difference(wrong, expected, 1e-5, 1e-6)
    assert describe_difference(np.array([1, 0]), np.array([True, False]), 1e-5, 1e-6) is None  # 0/1 for booleans
    assert describe_difference(np.array([0.3, 0.0]), np.array([True, False]), 1e-5, 1e-6) is not None
    assert describe_difference(np.array(2805761), np.array(2805760), 1e-5, 1e-6) is not None  # a count: exactly


def test_the_float_logarithm_in_float16_is_still_named(capsys):
    """The catalogued float logarithm, returned in float16, on the re-check's (216, 6): 4 layers where 3 is right."""
    task = get_task("ps10_rnn", "path_lengths")
    wrong = load_mistake(task, next(m for m in task.mistakes if m.name == "float_logarithm"))
    half = np.asarray(wrong("dilated_conv", 216, 6)).astype(np.float16)
    msg = describe_difference(half, task.reference("dilated_conv", 216, 6), task.rtol, task.atol)
    assert msg is not None and "expected 3, got 4.0" in msg and LOW_PRECISION not in msg, msg
    with np.errstate(all="ignore"), pytest.raises(GradingError, match=r"\[float_logarithm\]"):
        check(task.assignment, task.func_name, lambda *args: np.asarray(wrong(*args)).astype(np.float16))


def test_a_float16_rnn_is_not_right_for_the_self_check(capsys):
    task = get_task("ps10_rnn", "rnn_forward")
    right = _solution(task)
    half = [lambda *a: np.asarray(right(*a)).astype(np.float16)]
    _, text = selfcheck.report(task, half[0])
    assert "is right" not in text and LOW_PRECISION in text, text
    with pytest.raises(GradingError, match="float16"):
        check(task.assignment, task.func_name, half[0])


# 3. The self-check says, before grading, that an answer calling attn_ref will score 0.

import attn_ref  # noqa: E402 - the notebook's names, as a student would import them
from attn_ref.recurrent import path_length_table  # noqa: E402


def _by_module(kind, n, kappa=3):
    return attn_ref.recurrent.path_length_table(kind, n, kappa)


def _by_name(kind, n, kappa=3):
    return np.asarray(path_length_table(kind, n, kappa))


def _helper(kind, n, kappa):
    return [_by_name(kind, n, kappa)][0]


def _through_a_helper(kind, n, kappa=3):
    return _helper(kind, n, kappa) + 0


def _imported_inside(kind, n, kappa=3):
    from attn_ref import recurrent

    return recurrent.path_length_table(kind, n, kappa)


def _in_a_lambda(kind, n, kappa=3):
    return (lambda: path_length_table(kind, n, kappa))()


@pytest.mark.parametrize("fn", [_by_module, _by_name, _through_a_helper, _imported_inside, _in_a_lambda])
def test_an_answer_that_calls_the_reference_is_told_it_will_score_0(fn, capsys):
    name = selfcheck.uses_reference(fn)  # an import inside the function: the module it imports
    assert name == ("attn_ref.recurrent" if fn is _imported_inside else "attn_ref.recurrent.path_length_table")
    selfcheck.check("ps10_rnn", "path_lengths", fn)
    said = capsys.readouterr().out
    assert said.strip() == (f"self-check: path_lengths calls {name}: the graded re-check has no attn_ref, so this "
                            "answer will score 0 — write it yourself"), said


def test_an_answer_of_its_own_is_not_suspected():
    task = get_task("ps10_rnn", "path_lengths")
    assert selfcheck.uses_reference(_solution(task)) is None
    assert selfcheck.uses_reference(lambda kind, n, kappa=3: np.full((n, n), 1)) is None
    assert selfcheck.uses_reference(np.ones) is None  # not a function of the notebook: not followed
