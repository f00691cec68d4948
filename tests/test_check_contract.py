"""attn_grader.checking.core: what a student's feedback says, on a task defined here."""

import numpy as np
import pytest

from attn_grader.checking.core import GradingError, Mistake, Task, describe_difference, diagnose
from attn_ref import softmax

UNSTABLE = Mistake("unstable", "exp without subtracting the max",
                   "def f(x):\n    e = np.exp(x)\n    return e / e.sum()\n")
WRONG_AXIS = Mistake("axis0", "softmax over the first axis",
                     "def f(x):\n    e = np.exp(x - x.max(0))\n    return e / e.sum(0)\n")
TASK = Task("demo", "f", lambda x: softmax(x, axis=-1),
            lambda rng: [(rng.normal(size=(3, 4)),), (np.array([[1e4, 0.0, -1e4]]),)], (UNSTABLE, WRONG_AXIS))


def test_describe_difference_says_shape_then_where():
    assert "expected shape (2, 3), got (3, 2)" in describe_difference(np.ones((3, 2)), np.ones((2, 3)), 1e-5, 1e-8)
    msg = describe_difference(np.array([1.0, 2.5]), np.array([1.0, 2.0]), 1e-5, 1e-8)
    assert "1 of 2 values differ" in msg and "index (1,)" in msg
    assert describe_difference((np.ones(2), 1.0), (np.ones(2), 1.0), 1e-5, 1e-8) is None
    assert "tuple of 2" in describe_difference(np.ones(2), (np.ones(2), 1.0), 1e-5, 1e-8)


def test_nan_never_matches_the_reference_but_may_match_a_mistake():
    nan_out = np.array([[np.nan, 0.0, 0.0]])
    assert describe_difference(nan_out, nan_out, 1e-5, 1e-8) is not None
    with np.errstate(over="ignore", invalid="ignore"):
        assert diagnose(TASK, [nan_out], [(np.array([[1e4, 0.0, -1e4]]),)]) is UNSTABLE


def test_a_mistake_is_named_only_when_it_reproduces_every_case(monkeypatch):
    """Issue 17: a right softmax with NaN on one row was told "use the axis argument" because the
    mistake's output matched on the failing case alone (NaN counted equal)."""
    from attn_grader.checking import core

    masked = np.array([[-np.inf, -np.inf]])  # a row that may attend to nothing
    nan_axis = Mistake("axis0", "softmax over the first axis",
                       "def f(x):\n    e = np.exp(x - x.max(0))\n    return e / e.sum(0)\n")
    task = Task("demo", "f", lambda x: softmax(x, axis=-1),
                lambda rng: [(np.array([[1.0, 2.0], [3.0, 5.0]]),), (masked,)], (nan_axis,))
    monkeypatch.setattr(core, "get_task", lambda a, f: task)

    def nan_on_masked_row(x):  # right everywhere except the fully masked row (NaN there)
        e = np.exp(x - x.max(-1, keepdims=True))
        return e / e.sum(-1, keepdims=True)

    with np.errstate(invalid="ignore"):
        out = nan_on_masked_row(masked)
        # on the failing case alone the axis mistake "matches" (NaN = NaN): the old diagnosis named it
        assert describe_difference(out, core.load_mistake(task, nan_axis)(masked), 1e-5, 1e-6,
                                   equal_nan=True) is None
        with pytest.raises(GradingError) as err:
            core.check("demo", "f", nan_on_masked_row)
    assert "[axis0]" not in str(err.value) and "NaN" in str(err.value)
    with np.errstate(all="ignore"):  # the mistake itself is still named
        with pytest.raises(GradingError, match=r"\[axis0\]"):
            core.check("demo", "f", core.load_mistake(task, nan_axis))


def test_a_float32_computation_is_accepted_and_a_float16_one_is_not_given_more():
    positions = np.arange(600)[:, None] / 10000 ** (np.arange(0, 8, 2) / 8)
    exact = np.sin(positions)
    in_float32 = np.sin(positions.astype(np.float32))
    assert not np.allclose(in_float32, exact, rtol=1e-5, atol=1e-6)  # the task's own tolerance is too strict
    assert describe_difference(in_float32, exact, 1e-5, 1e-6) is None
    assert describe_difference(in_float32.astype(np.float64), exact, 1e-5, 1e-6) is None  # promoted: the same
    msg = describe_difference((exact + 1e-3).astype(np.float32), exact, 1e-5, 1e-6)
    assert msg is not None and "float32" in msg  # a real error still fails, and the dtype is named
    half = describe_difference(exact.astype(np.float16), exact, 1e-5, 1e-6)  # issue 41: never looser than float32's
    assert half is not None and "computed in float16: compute in float32 or float64" in half


@pytest.mark.parametrize("mistake", [UNSTABLE, WRONG_AXIS])
def test_check_names_each_mistake(monkeypatch, mistake):
    from attn_grader.checking import core

    monkeypatch.setattr(core, "get_task", lambda a, f: TASK)
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(GradingError, match=rf"\[{mistake.name}\]"):
        core.check("demo", "f", core.load_mistake(TASK, mistake))
    core.check("demo", "f", lambda x: softmax(x))  # the right answer passes


def test_check_reports_unanswered_and_exceptions(monkeypatch):
    from attn_grader.checking import core

    monkeypatch.setattr(core, "get_task", lambda a, f: TASK)

    def unanswered(x):
        raise NotImplementedError

    with pytest.raises(GradingError, match="not attempted yet"):
        core.check("demo", "f", unanswered)
    with pytest.raises(GradingError, match=r"raised ZeroDivisionError.*shapes \(\(3, 4\)\)"):
        core.check("demo", "f", lambda x: 1 / 0)


# --- issue 33: a mistake named where both ran, and the cases on which the answer raised ---------------------

def _moving_sum(x):  # the reference: a 'same' moving sum of 3 (zero padding)
    return np.convolve(x, np.ones(3), mode="same")


NO_PADDING = Mistake("no_padding", "no zero padding",
                     "def f(x):\n    return np.array([x[i:i + 3].sum() for i in range(len(x) - 2)])\n")
SHORT_ZEROS = Mistake("short_zeros", "zeros for a sequence shorter than the window",
                      "def f(x):\n    return np.zeros(len(x)) if len(x) < 3 else np.convolve(x, np.ones(3), 'same')\n")
NO_PADDING_RAISING = Mistake("no_padding_raising", "no zero padding (np.zeros of a negative length)",
                             "def f(x):\n    out = np.zeros(len(x) - 2)\n    for i in range(len(out)):\n"
                             "        out[i] = x[i:i + 3].sum()\n    return out\n")
SHORT_CASES = [(np.arange(5.0),), (np.array([2.0, -1.0, 4.0, 0.5, 3.0, 1.0]),), (np.array([7.0]),)]


def _task(*mistakes):
    return Task("demo", "f", _moving_sum, lambda rng: SHORT_CASES, mistakes)


def _no_padding_raising(x):  # written elsewhere: np.zeros(-1) raises on a sequence shorter than the window
    out = np.zeros(len(x) - 2)
    for i in range(len(out)):
        out[i] = x[i:i + 3].sum()
    return out


def _outcomes(fn):
    from attn_grader.checking.core import _outcome

    return [_outcome(fn, args) for args in SHORT_CASES]


def test_a_mistake_is_named_where_both_ran_and_the_raising_cases_are_said(monkeypatch):
    """Issue 33 (ps09's conv2d_single without padding, raising on an image smaller than its kernel): the
    answer raises on one case where the catalogued mistake returns an empty array; it reproduces the mistake
    on every other case, so the mistake is named, and the feedback says on which case it raised."""
    from attn_grader.checking import core

    task = _task(NO_PADDING)
    outcomes = _outcomes(_no_padding_raising)
    assert isinstance(outcomes[2], core.Raised) and outcomes[2].kind == "ValueError"
    assert diagnose(task, outcomes, SHORT_CASES) is NO_PADDING
    monkeypatch.setattr(core, "get_task", lambda a, f: task)
    with pytest.raises(GradingError, match=r"\[no_padding\]") as err:
        core.check("demo", "f", _no_padding_raising)
    assert "f also raised ValueError on 1 of 3 cases (inputs of shapes ((1,)))" in str(err.value)
    with pytest.raises(GradingError) as err:  # the mistake itself: named, and no raising case to report
        core.check("demo", "f", core.load_mistake(task, NO_PADDING))
    assert "[no_padding]" in str(err.value) and "also raised" not in str(err.value)


def test_an_exception_is_never_evidence_for_a_mistake():
    """The other direction: a case set aside because the answer raised does not count as a match.  An answer
    right wherever it ran, raising exactly where a mistake differs from the reference, is not told that
    mistake; an answer that raises on every case is told no mistake."""

    def right_but_raising(x):
        if len(x) < 3:
            raise ValueError("too short")
        return _moving_sum(x)

    task = _task(SHORT_ZEROS)
    outcomes = _outcomes(right_but_raising)
    # where both ran, the mistake and the answer agree (both right): a naive "match where both ran" names it
    assert all(describe_difference(o, _moving_sum(*a), 1e-5, 1e-6) is None
               for o, a in zip(outcomes[:2], SHORT_CASES[:2], strict=True))
    assert diagnose(task, outcomes, SHORT_CASES) is None

    def always_raises(x):
        raise ValueError("no")

    assert diagnose(_task(NO_PADDING, SHORT_ZEROS), _outcomes(always_raises), SHORT_CASES) is None
    # nor is it told a mistake that raises the same exception on some case and runs on the others
    assert diagnose(_task(NO_PADDING_RAISING), _outcomes(always_raises), SHORT_CASES) is None


def test_a_mistake_that_raises_where_the_answer_ran_is_not_named():
    """Only the answer's exceptions are set aside: a mistake that raised where the answer gave an output did
    not reproduce that output (the answer's empty array on the short sequence)."""
    from attn_grader.checking import core

    task = _task(NO_PADDING_RAISING)
    wrong = core.load_mistake(task, NO_PADDING)
    assert diagnose(task, _outcomes(wrong), SHORT_CASES) is None
    assert diagnose(_task(NO_PADDING_RAISING, NO_PADDING), _outcomes(wrong), SHORT_CASES) is NO_PADDING


def test_the_recheck_names_it_too_and_says_which_cases_raised():
    from attn_grader.checking.recheck import compare

    task = _task(NO_PADDING)
    results = [{"value": _no_padding_raising(*a)} for a in SHORT_CASES[:2]] + [{"error": "ValueError: negative"}]
    verdict = compare([task], {"f": SHORT_CASES}, {"outputs": {"f": {"results": results}}})["f"]
    assert not verdict.passed and verdict.mistake == "no_padding", verdict
    assert "also raised ValueError on 1 of 3 cases" in verdict.reason
    raising_only = [{"error": "ValueError: no"}] * 3
    verdict = compare([task], {"f": SHORT_CASES}, {"outputs": {"f": {"results": raising_only}}})["f"]
    assert verdict.mistake == "error", verdict
