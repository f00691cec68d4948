"""The contract between the exercise notebooks, the catalogue of mistakes, and the grader.

A :class:`Task` is one graded function of one assignment: the name the student
defines, the reference (from :mod:`attn_ref`), the hidden inputs, and the
catalogue of common :class:`Mistake` s.  Each mistake is the *source of a wrong
answer cell*: the same text serves three uses, so it cannot drift:

1. diagnosis: :func:`check` runs it on the failing inputs and, when the student's
   output equals the mistake's, names the mistake in the feedback;
2. proof: the test suite puts it into the answer cell of a submission and grades it
   with the real nbgrader, expecting less than full marks and the mistake's name;
3. the isolated re-check (:mod:`attn_grader.recheck`) reuses ``cases`` and ``reference``.

A hidden test cell in a notebook is one line::

    from attn_grader import check; check("ps05_matrix_form", "self_attention_columns", self_attention_columns)
"""

from __future__ import annotations

import copy
import importlib
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np


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
    description: str = field(default="")

    @property
    def key(self) -> str:
        return f"{self.assignment}.{self.func_name}"

    def seed(self) -> int:
        """A fixed seed per task, so grading the same class twice gives the same CSV."""
        return zlib.crc32(self.key.encode())

    def hidden_cases(self) -> list[tuple]:
        return list(self.cases(np.random.default_rng(self.seed())))


def to_numpy(x):
    """Student outputs may be torch tensors, lists or scalars: compare them as numpy arrays."""
    if isinstance(x, tuple | list) and not all(np.isscalar(v) for v in x):
        return type(x)(to_numpy(v) for v in x) if isinstance(x, tuple) else [to_numpy(v) for v in x]
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    return np.asarray(x)


def describe_difference(got, expected, rtol: float, atol: float, path: str = "output",
                        equal_nan: bool = False) -> str | None:
    """``None`` when ``got`` matches ``expected``; otherwise one sentence saying what differs.

    ``equal_nan`` is for diagnosis only: a NaN never matches the reference, but it may match a mistake.
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
    try:
        got = to_numpy(got)
    except Exception as exc:  # noqa: BLE001 - any failure to convert is the student's
        return f"{path}: expected an array, got {type(got).__name__} ({exc})"
    expected = np.asarray(expected)
    if got.shape != expected.shape:
        return f"{path}: expected shape {expected.shape}, got {got.shape}"
    if got.dtype.kind not in "biufc":
        return f"{path}: expected numbers, got dtype {got.dtype}"
    if expected.dtype.kind == "b":
        bad = got.astype(bool) != expected
    else:
        with np.errstate(invalid="ignore"):
            bad = ~np.isclose(got, expected, rtol=rtol, atol=atol, equal_nan=equal_nan)
    if bad.any():
        where = tuple(int(i) for i in np.argwhere(bad)[0])
        n_nan = int(np.isnan(got).sum()) if got.dtype.kind in "fc" else 0
        nan_note = f"; {n_nan} NaN values in your output" if n_nan else ""
        return (f"{path}: {int(bad.sum())} of {bad.size} values differ; first at index {where}: "
                f"expected {expected[where]!r}, got {got[where]!r}{nan_note}")
    return None


def load_mistake(task: Task, mistake: Mistake) -> Callable:
    """The function a mistake's answer cell defines (run after the task's setup imports)."""
    namespace: dict = {}
    exec(compile(task.setup + "\n" + mistake.source, f"<mistake {mistake.name}>", "exec"), namespace)  # noqa: S102
    return namespace[task.func_name]


def _call(fn: Callable, args: tuple):
    return fn(*copy.deepcopy(args))


def diagnose(task: Task, student_out, args: tuple) -> Mistake | None:
    """The catalogued mistake whose output on ``args`` equals the student's, if any."""
    for mistake in task.mistakes:
        try:
            wrong = to_numpy(_call(load_mistake(task, mistake), args))
        except Exception:  # noqa: BLE001 - a mistake that raises on this input cannot match
            continue
        try:
            if describe_difference(student_out, wrong, task.rtol, task.atol, equal_nan=True) is None:
                return mistake
        except Exception:  # noqa: BLE001
            continue
    return None


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
        arr = np.asarray(a) if not callable(a) else None
        parts.append(str(arr.shape) if arr is not None and arr.ndim else repr(a)[:20])
    return ", ".join(parts)


def check(assignment: str, func_name: str, student_fn: Callable) -> None:
    """Compare ``student_fn`` with the reference on every hidden case; raise GradingError naming the mistake."""
    task = get_task(assignment, func_name)
    if not callable(student_fn):
        raise GradingError(f"{func_name}: expected a function, got {type(student_fn).__name__}")
    for args in task.hidden_cases():
        expected = to_numpy(_call(task.reference, args))
        try:
            got = _call(student_fn, args)
        except NotImplementedError:
            raise GradingError(f"{func_name}: not answered yet (raises NotImplementedError)") from None
        except Exception as exc:  # noqa: BLE001 - report the student's exception as feedback
            raise GradingError(f"{func_name} raised {type(exc).__name__}: {exc} "
                               f"on inputs of shapes ({_shape_of(args)})") from None
        problem = describe_difference(got, expected, task.rtol, task.atol)
        if problem is None:
            continue
        mistake = diagnose(task, got, args)
        if mistake is not None:
            raise GradingError(f"{func_name}: this looks like the common mistake [{mistake.name}]: "
                               f"{mistake.message}.")
        raise GradingError(f"{func_name} on inputs of shapes ({_shape_of(args)}): {problem}")
