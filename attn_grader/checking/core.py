"""The contract between the exercise notebooks, the catalogue of mistakes, and the grader.

A :class:`Task` is one graded function of one assignment: the name the student
defines, the reference (from :mod:`attn_ref`), the hidden inputs, and the
catalogue of common :class:`Mistake` s.  Each mistake is the *source of a wrong
answer cell*: the same text serves three uses, so it cannot drift:

1. diagnosis: :func:`check` runs it on the failing inputs and, when the student's
   output equals the mistake's, names the mistake in the feedback;
2. proof: the test suite puts it into the answer cell of a submission and grades it
   with the real nbgrader, expecting less than full marks and the mistake's name;
3. the isolated re-check (:mod:`attn_grader.checking.recheck`) reuses ``cases`` and ``reference``.

A hidden test cell in a notebook is one line::

    from attn_grader import check; check("ps05_matrix_form", "self_attention_columns", self_attention_columns)
"""

from __future__ import annotations

import copy
import importlib
import warnings
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from .counting import describe_count, is_counting
from .harness import call as call_with_streams


class GradingError(AssertionError):
    """A wrong answer; the message names the catalogued mistake or says what differs."""


@dataclass(frozen=True)
class Mistake:
    """One common wrong answer to a task.

    name: short id (``softmax_wrong_axis``); message: what the student did, in words the
    feedback shows (``softmax over the rows instead of each column``); source: a complete
    answer cell that defines the task's function with exactly this mistake.
    """

    name: str
    message: str
    source: str


@dataclass(frozen=True)
class Task:
    """One graded function of an assignment.

    assignment: ``ps05_matrix_form``; func_name: the function the answer cell defines;
    reference: computes the expected output from the same arguments (built on attn_ref);
    cases: ``rng -> list of argument tuples`` (random shapes, seeds and edge cases);
    mistakes: at least three catalogued wrong answers; rtol/atol: comparison tolerances.
    """

    assignment: str
    func_name: str
    reference: Callable
    cases: Callable[[np.random.Generator], Sequence[tuple]]
    mistakes: tuple[Mistake, ...] = ()
    rtol: float = 1e-5
    atol: float = 1e-6
    setup: str = "import numpy as np"  # what the notebook's setup cell imports; mistakes run after it

    @property
    def key(self) -> str:
        return f"{self.assignment}.{self.func_name}"

    def seed(self) -> int:
        """A fixed seed per task, so grading the same class twice gives the same CSV."""
        return zlib.crc32(self.key.encode())

    def hidden_cases(self) -> list[tuple]:
        return list(self.cases(np.random.default_rng(self.seed())))


def to_numpy(x):
    """Student outputs may be torch tensors, lists or scalars: compare them as numpy arrays (a tuple of
    scalars, 0-d arrays among them, as one array)."""
    if isinstance(x, tuple | list) and not all(np.isscalar(v) or getattr(v, "ndim", None) == 0 for v in x):
        return type(x)(to_numpy(v) for v in x) if isinstance(x, tuple) else [to_numpy(v) for v in x]
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


#: The tolerance policy.  A correct answer computed in float32 (torch's default dtype, ``np.float32``
#: inputs, or one float32 step inside) differs from the float64 reference by a few hundred float32
#: roundings at most (float32's epsilon is 1.2e-7; a sinusoidal table at position 500 computed in float32
#: is off by about 3e-5), and it may come back as float32 or, promoted by a float64 scalar such as
#: ``np.sqrt(d)``, as float64.  So every float output is compared with at least rtol = 1e-4 and
#: atol = 1e-4 x the reference's largest finite magnitude (at least 1).  The tolerance never gets looser
#: because the answer chose a lower precision (issue 41): a float16 output is compared at float32's, so
#: it fails where float16's rounding matters, and the message says so.  An integer-valued reference (counts,
#: indices, path lengths, booleans) is compared exactly, up to the task's atol (3.0 for 3 is right, 4.0 is
#: not), whatever dtype the answer returns.  No catalogued mistake hides under these: tests/test_catalogues.py
#: grades every mistake's output cast to float32 and still names it.
FLOAT_TOLERANCE = 1e-4  # rtol, and atol's factor, for every float output
LOW_PRECISION = "computed in float16: compute in float32 or float64"


def tolerances(got: np.ndarray, expected: np.ndarray, rtol: float, atol: float) -> tuple[float, float]:
    """The (rtol, atol) for comparing ``got`` with ``expected``: the task's, widened for float32 rounding."""
    if got.dtype.kind not in "fc":
        return rtol, atol
    with np.errstate(invalid="ignore"):
        finite = np.abs(expected[np.isfinite(expected)]) if expected.dtype.kind in "fc" else np.abs(expected)
    scale = max(1.0, float(finite.max())) if finite.size else 1.0
    return max(rtol, FLOAT_TOLERANCE), max(atol, FLOAT_TOLERANCE * scale)


def as_array(got) -> np.ndarray | None:
    """An output compared with an array: ``np.asarray`` of it (a tensor, a list of equal-shape arrays, a list of
    lists, a tuple), or ``None`` when that is not an array of numbers (a ragged list, a string, a dict)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(to_numpy(got))
    except Exception:  # noqa: BLE001 - any failure to convert is the student's
        return None
    return arr if arr.dtype.kind in "biufc" else None


def describe_difference(got, expected, rtol: float, atol: float, path: str = "output",
                        equal_nan: bool = False) -> str | None:
    """``None`` when ``got`` matches ``expected``; otherwise one sentence saying what differs.

    The tolerances are the task's, widened so that a correct float32 computation passes
    (:func:`tolerances`); an integer-valued ``expected`` is compared exactly.  ``got`` is compared as
    :func:`as_array` of it.  ``equal_nan`` is for diagnosis only: a NaN never matches the reference, but it
    may match a mistake.
    """
    if isinstance(expected, tuple | list):
        if not isinstance(got, tuple | list) or len(got) != len(expected):
            n = len(got) if isinstance(got, tuple | list) else "not a tuple"
            return f"{path}: expected a tuple of {len(expected)} values, got {n}"
        for i, (g, e) in enumerate(zip(got, expected, strict=True)):
            msg = describe_difference(g, e, rtol, atol, f"{path}[{i}]", equal_nan)
            if msg:
                return msg
        return None
    expected = np.asarray(expected)
    arr = as_array(got)
    if arr is None:
        want = "a number" if expected.ndim == 0 else f"a NumPy array of shape {expected.shape}"
        return f"{path}: returns a {type(got).__name__}; return {want}"
    got = arr
    if got.shape != expected.shape:
        return f"{path}: expected shape {expected.shape}, got {got.shape}"
    if expected.dtype.kind in "biu":  # whole numbers: exactly (up to the task's atol), in whatever dtype
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~(np.abs(got.astype(np.float64) - expected) <= min(atol, 0.5))
        rtol, atol = 0.0, min(atol, 0.5)
    else:
        rtol, atol = tolerances(got, expected, rtol, atol)
        with np.errstate(invalid="ignore", over="ignore"):
            bad = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        n_nan = int(np.isnan(got).sum()) if got.dtype.kind in "fc" else 0
        nan_note = f"; {n_nan} NaN values in your output" if n_nan else ""
        low = got.dtype.kind in "fc" and got.dtype.itemsize < 8 and expected.dtype.kind in "fc"
        dtype_note = f" (your output is {got.dtype}, compared with rtol={rtol:g}, atol={atol:g})" if low else ""
        if low and got.dtype.itemsize // (2 if got.dtype.kind == "c" else 1) <= 2:
            dtype_note += f"; {LOW_PRECISION}"
        return (f"{path}: {int(bad.sum())} of {bad.size} values differ; first at index {where}: "
                f"expected {expected[where].item()!r}, got {got[where].item()!r}{nan_note}{dtype_note}")
    return None


def load_mistake(task: Task, mistake: Mistake) -> Callable:
    """The function a mistake's answer cell defines (run after the task's setup imports)."""
    namespace: dict = {}
    exec(compile(task.setup + "\n" + mistake.source, f"<mistake {mistake.name}>", "exec"), namespace)  # noqa: S102
    return namespace[task.func_name]


def _call(fn: Callable, args: tuple, reference: bool = False):
    """``fn`` on a copy of ``args``: a reference gets a stream's source (:class:`.harness.Blocks`), an answer or a
    mistake a one-pass stream of it (:func:`.harness.call`)."""
    return fn(*copy.deepcopy(args)) if reference else call_with_streams(fn, copy.deepcopy(args))


@dataclass(frozen=True)
class Raised:
    """An outcome that is an exception: its type's name (a mistake reproduces it by raising the same)."""

    kind: str


def _outcome(fn: Callable, args: tuple):
    try:
        with np.errstate(all="ignore"):
            return to_numpy(_call(fn, args))
    except Exception as exc:  # noqa: BLE001 - a student's or a mistake's exception is an outcome
        return Raised(type(exc).__name__)


def _same(got, wrong, task: Task) -> bool:
    if isinstance(got, Raised) or isinstance(wrong, Raised):
        return isinstance(got, Raised) and isinstance(wrong, Raised) and got.kind == wrong.kind
    try:
        return describe_difference(got, wrong, task.rtol, task.atol, equal_nan=True) is None
    except Exception:  # noqa: BLE001
        return False


def diagnose(task: Task, outcomes: Sequence, cases: Sequence[tuple]) -> Mistake | None:
    """The catalogued mistake that reproduces the student's outcome on every case where both ran, if any.

    ``outcomes[k]`` is the student's output on ``cases[k]``, or :class:`Raised` when it raised.  A mistake is
    named when, on every case, the two outcomes are the same (NaN matches NaN: a mistake may produce them
    too; an exception matches an exception of the same type), except where only the *student's* function
    raised: such a case is set aside (neither a match nor a mismatch; :func:`raised_note` lists them), so
    an answer that makes the mistake and also fails on, say, an image smaller than its kernel is still told
    its mistake.  Where only the mistake raised, the student's output is not reproduced: no match.

    A mistake that matches on the failing case alone is not named: a right answer with one flaw elsewhere
    (a NaN on a fully masked row) must not be told it made a mistake it did not make.  For the same reason
    a set-aside case never counts in favour: when cases were set aside, the mistake is named only if on
    some case where both ran the student's output is wrong, i.e. the mistake reproduces a wrong output, not
    only the right ones around the student's exceptions (nor only exceptions).
    """
    if len(outcomes) != len(cases) or not cases:
        return None
    for mistake in task.mistakes:
        try:
            fn = load_mistake(task, mistake)
        except Exception:  # noqa: BLE001
            continue
        if _reproduces(task, outcomes, cases, [_outcome(fn, args) for args in cases]):
            return mistake
    return None


def _reproduces(task: Task, outcomes: Sequence, cases: Sequence[tuple], wrongs: Sequence) -> bool:
    """The rule of :func:`diagnose` for one mistake whose outcomes are ``wrongs``."""
    kept = []  # the cases where both ran or both raised
    for k, (got, wrong) in enumerate(zip(outcomes, wrongs, strict=True)):
        if isinstance(got, Raised) and not isinstance(wrong, Raised):
            continue  # only the student's function raised: set aside
        if not _same(got, wrong, task):
            return False
        kept.append(k)
    if len(kept) == len(cases):
        return True  # every case reproduced (and the student's outcome is wrong on one, or check() had passed)
    # cases were set aside: a wrong *output* must be reproduced (exceptions of the same type are no evidence:
    # an answer that raises everywhere would otherwise be told any mistake that raises somewhere)
    return any(not isinstance(outcomes[k], Raised) and _wrong(task, outcomes[k], cases[k]) for k in kept)


def _wrong(task: Task, got, args: tuple) -> bool:
    """The student's output ``got`` on ``args`` differs from the reference's."""
    try:
        with np.errstate(all="ignore"):
            expected = to_numpy(_call(task.reference, args, True))
            return describe_difference(got, expected, task.rtol, task.atol) is not None
    except Exception:  # noqa: BLE001 - an output that cannot be compared is not right
        return True


def raised_note(func_name: str, outcomes: Sequence, cases: Sequence[tuple], limit: int = 3) -> str:
    """A sentence naming the cases on which the student's function raised ('' when none did)."""
    raised = [(o.kind, args) for o, args in zip(outcomes, cases, strict=True) if isinstance(o, Raised)]
    if not raised:
        return ""
    kinds = sorted({kind for kind, _ in raised})
    shapes = "; ".join(f"({_shape_of(args)})" for _, args in raised[:limit])
    more = f" and {len(raised) - limit} more" if len(raised) > limit else ""
    return (f" {func_name} also raised {' or '.join(kinds)} on {len(raised)} of {len(cases)} cases (inputs of "
            f"shapes {shapes}{more}); on the other cases it does what the mistake does.")


def get_task(assignment: str, func_name: str) -> Task:
    """The registered task ``func_name`` of ``assignment`` (module ``attn_grader.catalogue.<assignment>``)."""
    module = importlib.import_module(f"attn_grader.catalogue.{assignment}")
    for task in module.TASKS:
        if task.func_name == func_name:
            return task
    raise KeyError(f"no task {func_name!r} in {assignment}")


def tasks_of(assignment: str) -> list[Task]:
    return list(importlib.import_module(f"attn_grader.catalogue.{assignment}").TASKS)


def _shape_of(args: tuple) -> str:
    parts = []
    for a in args:
        if hasattr(a, "describe"):  # a stream's source: its shapes, not its repr cut short
            parts.append(a.describe())
            continue
        arr = np.asarray(a) if not callable(a) else None
        parts.append(str(arr.shape) if arr is not None and arr.ndim else _plain(a))
    return ", ".join(parts)


def _plain(a) -> str:
    """A scalar as a person writes it (``-0.76``, not NumPy 2's ``np.float64(-0.76)``), or its type's name."""
    if isinstance(a, np.generic):
        a = a.item()
    return repr(a) if isinstance(a, int | float | bool | str | type(None)) else type(a).__name__


#: What an answer that still raises NotImplementedError is, in the feedback, the class report and the self-check.
NOT_ATTEMPTED = "not attempted yet"


@dataclass(frozen=True)
class Finding:
    """What :func:`examine` found wrong: the sentence the feedback shows, and the catalogued mistake it names
    (``None`` when none matches); ``attempted`` is False for an answer that raises NotImplementedError."""

    message: str
    mistake: Mistake | None = None
    attempted: bool = True


def mistake_sentence(func_name: str, mistake: Mistake) -> str:
    """How the feedback names a catalogued mistake (the graded tests and the self-check say the same)."""
    return f"{func_name}: this looks like the common mistake [{mistake.name}]: {mistake.message}."


def examine(task: Task, student_fn: Callable, cases: Sequence[tuple], reveal: bool = True) -> Finding | None:
    """Compare ``student_fn`` with the reference on ``cases``; ``None`` when it matches on every one.

    The function runs on every case first; a mistake is named only when it reproduces every case where
    both ran (:func:`diagnose`), and the message then says on which cases the function raised; otherwise
    it says what differs on the first case that differs.  ``reveal=False`` (the self-check): a count's
    expected value is never shown, only how the answer differs (:func:`describe_count`).
    """
    func_name = task.func_name
    if not callable(student_fn):
        return Finding(f"{func_name}: expected a function, got {type(student_fn).__name__}")
    outcomes, first = [], None
    for args in cases:
        raw = _call(task.reference, args, True)
        expected = to_numpy(raw)
        try:
            got = _call(student_fn, args)
        except NotImplementedError:
            return Finding(f"{func_name}: {NOT_ATTEMPTED} (it raises NotImplementedError)", attempted=False)
        except Exception as exc:  # noqa: BLE001 - report the student's exception as feedback
            outcomes.append(Raised(type(exc).__name__))
            if first is None:
                first = f"{func_name} raised {type(exc).__name__}: {exc} on inputs of shapes ({_shape_of(args)})"
            continue
        outcomes.append(got)
        problem = describe_difference(got, expected, task.rtol, task.atol)
        if problem is not None and not reveal and is_counting(raw):
            problem = describe_count(got, expected) or problem
        if problem is not None and first is None:
            first = f"{func_name} on inputs of shapes ({_shape_of(args)}): {problem}"
    if first is None:
        return None
    mistake = diagnose(task, outcomes, cases)
    if mistake is not None:
        return Finding(mistake_sentence(func_name, mistake) + raised_note(func_name, outcomes, cases), mistake)
    return Finding(first)


def check(assignment: str, func_name: str, student_fn: Callable) -> None:
    """Compare ``student_fn`` with the reference on every hidden case; raise GradingError naming the mistake
    (:func:`examine`)."""
    task = get_task(assignment, func_name)
    finding = examine(task, student_fn, task.hidden_cases())
    if finding is not None:
        raise GradingError(finding.message)
