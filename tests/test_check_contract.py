"""attn_grader.core: what a student's feedback says, on a task defined here."""

import numpy as np
import pytest

from attn_grader.core import GradingError, Mistake, Task, describe_difference, diagnose
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
    from attn_grader import core

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


def test_a_float32_computation_is_accepted_whatever_dtype_it_returns():
    positions = np.arange(600)[:, None] / 10000 ** (np.arange(0, 8, 2) / 8)
    exact = np.sin(positions)
    in_float32 = np.sin(positions.astype(np.float32))
    assert not np.allclose(in_float32, exact, rtol=1e-5, atol=1e-6)  # the task's own tolerance is too strict
    assert describe_difference(in_float32, exact, 1e-5, 1e-6) is None
    assert describe_difference(in_float32.astype(np.float64), exact, 1e-5, 1e-6) is None  # promoted: the same
    msg = describe_difference((exact + 1e-3).astype(np.float32), exact, 1e-5, 1e-6)
    assert msg is not None and "float32" in msg  # a real error still fails, and the dtype is named
    assert describe_difference(exact.astype(np.float16), exact, 1e-5, 1e-6) is None


@pytest.mark.parametrize("mistake", [UNSTABLE, WRONG_AXIS])
def test_check_names_each_mistake(monkeypatch, mistake):
    from attn_grader import core

    monkeypatch.setattr(core, "get_task", lambda a, f: TASK)
    with np.errstate(over="ignore", invalid="ignore"), pytest.raises(GradingError, match=rf"\[{mistake.name}\]"):
        core.check("demo", "f", core.load_mistake(TASK, mistake))
    core.check("demo", "f", lambda x: softmax(x))  # the right answer passes


def test_check_reports_unanswered_and_exceptions(monkeypatch):
    from attn_grader import core

    monkeypatch.setattr(core, "get_task", lambda a, f: TASK)

    def unanswered(x):
        raise NotImplementedError

    with pytest.raises(GradingError, match="not attempted yet"):
        core.check("demo", "f", unanswered)
    with pytest.raises(GradingError, match=r"raised ZeroDivisionError.*shapes \(\(3, 4\)\)"):
        core.check("demo", "f", lambda x: 1 / 0)
