"""The self-check a student runs in the notebook: the catalogue's diagnosis while they work, not a week later.

Every task's visible test cell of an exercise starts with (:func:`cell_lines`)::

    try: from attn_grader.selfcheck import check as self_check  # ...
    except Exception: self_check = lambda *args: print("No self-check here; to get it: pip install ...")
    self_check('ps05_matrix_form', 'project', project)  # ...

:func:`check` runs the student's function on *fresh* inputs from the task's own case generator
(several shapes and the task's edge cases: large scores, masks, one element), seeded from the
operating system's entropy: never the hidden tests' fixed seed, never the course's secret, so it
reveals none of the graded inputs.  It compares with the reference and prints one paragraph to
stdout (never stderr, never an exception): one short line when the function is right, the
catalogued mistake it matches (:func:`attn_grader.checking.core.examine`: the same sentence as the graded
feedback), what differs (shape, dtype, which entries) when no mistake matches, or "not attempted
yet" for ``raise NotImplementedError()``.  The student's arguments never reach the reference.

It imports NumPy, the reference and the catalogue only (no nbgrader, PyTorch or matplotlib:
``pip install "self-attention-step-by-step[student]"`` is all it needs; tests/test_selfcheck.py and
the import contracts in pyproject.toml hold it to that).  Grading does not read what it prints: a
submitted notebook is graded by the hidden tests and the sandboxed re-check, whatever the
self-check says or whether it runs at all.
"""

from __future__ import annotations

import builtins
import contextlib
import dis
import functools
import sys
import types
import warnings
from collections.abc import Callable

import numpy as np

from .checking.core import Finding, Task, examine, get_task

#: How to get the self-check where the package is missing (the notebook's fallback prints the same).
HOW_TO_GET_IT = ('pip install "self-attention-step-by-step[student] @ '
                 'git+https://github.com/self-attention-step-by-step/student-edition@main"')


def cell_lines(assignment: str, func_name: str) -> list[str]:
    """The lines that start each task's visible test cell (after its docstring) in solutions/ and exercises/:
    the guarded import (where the package is missing, one line saying how to get it) and the call."""
    fallback = repr(f"No self-check here; to get it: {HOW_TO_GET_IT}")
    return ["try: from attn_grader.selfcheck import check as self_check  # your function on fresh random inputs",
            f"except Exception: self_check = lambda *args: print({fallback})",
            f"self_check({assignment!r}, {func_name!r}, {func_name})  # runs first: it names a common mistake, "
            "then the asserts below run"]


def _fingerprint(args) -> str:
    """A case's inputs as one digest (arrays by shape, dtype and bytes; a stream's source by its arrays)."""
    import hashlib

    h = hashlib.sha256()
    for a in args:
        if hasattr(a, "arrays") and hasattr(a, "size"):
            a = (*a.arrays, a.size)
        for x in (a if isinstance(a, tuple | list) else (a,)):
            arr = np.asarray(x) if not callable(x) else np.asarray(repr(x))
            h.update(repr((arr.shape, arr.dtype.str)).encode())
            h.update(arr.tobytes() if arr.dtype.kind != "O" else repr(x).encode())
    return h.hexdigest()


#: The self-check draws again (new seeds) until it has this many fresh cases, for a task whose generator is
#: mostly fixed cases (at most FRESH_DRAWS draws).  It leaves out cases of more than LARGEST bytes (ps12's long
#: streams, there for the graded tests' memory check): it answers in a moment, on every catalogued mistake.
FRESH_AT_LEAST, FRESH_DRAWS, LARGEST = 6, 8, 1 << 20


def _nbytes(args) -> int:
    return sum(sum(x.nbytes for x in a.arrays) if hasattr(a, "arrays") else getattr(a, "nbytes", 0) for a in args)


@functools.lru_cache(maxsize=64)
def _hidden(task: Task) -> frozenset:
    """The fingerprints of the hidden tests' cases (computed once per task and session)."""
    return frozenset(_fingerprint(args) for args in task.hidden_cases())


def fresh_cases(task: Task) -> list[tuple]:
    """The task's case generator on a seed drawn from the OS, without any case it also makes on the hidden
    tests' seed: the fixed cases (the notebook's own example, the edge cases written out) are the first hidden
    tests, so the self-check never shows a hidden input, nor answers the notebook's question."""
    seen = set(_hidden(task))
    fresh: list[tuple] = []
    for _ in range(FRESH_DRAWS):
        seed = np.random.SeedSequence()
        while seed.entropy == task.seed():  # 128 random bits are never the hidden tests' 32-bit seed; say so
            seed = np.random.SeedSequence()
        for args in task.cases(np.random.default_rng(seed)):
            if _nbytes(args) <= LARGEST and (key := _fingerprint(args)) not in seen:
                seen.add(key)
                fresh.append(args)
        if len(fresh) >= FRESH_AT_LEAST:
            break
    return fresh


OFF_LIMITS = ("attn_ref", "attn_grader")  # absent from the graded re-check's sandbox
STARTS = ("LOAD_GLOBAL", "LOAD_NAME", "IMPORT_NAME")  # where a dotted name starts


def _off_limits(obj) -> str | None:
    """The dotted name of ``obj`` when it is (part of) the reference or the grader, else None."""
    name = getattr(obj, "__name__", None) if isinstance(obj, types.ModuleType) else None
    if name is None:
        module = getattr(obj, "__module__", None)
        qualname = getattr(obj, "__qualname__", None) or getattr(type(obj), "__qualname__", "")
        name = f"{module}.{qualname}" if isinstance(module, str) else None
    return name if isinstance(name, str) and name.split(".")[0] in OFF_LIMITS else None


def uses_reference(fn: Callable) -> str | None:
    """The name of the first part of ``attn_ref`` or ``attn_grader`` that ``fn`` uses (``attn_ref.recurrent.
    path_length_table``), or None: the names its code loads (globals, their attributes, imports, defaults),
    through the functions of the notebook it calls (globals and closures), lambdas and inner functions included."""
    seen: set[int] = set()
    home = getattr(fn, "__globals__", None)  # the notebook's namespace: only its own functions are followed

    def named(chain: list[str], imported: bool, scope: dict) -> str | None:
        if imported:
            return ".".join(chain) if chain[0].split(".")[0] in OFF_LIMITS else None
        obj = scope.get(chain[0], getattr(builtins, chain[0], None))
        if root := _off_limits(obj):
            return ".".join([root, *chain[1:]])
        return follow(obj) if len(chain) == 1 else None

    def walk(code: types.CodeType, scope: dict) -> str | None:
        if id(code) in seen:
            return None
        seen.add(id(code))
        chains, current = [], None  # dotted names loaded: a global or an import, then its attributes
        for ins in dis.get_instructions(code):
            if ins.opname in ("LOAD_ATTR", "LOAD_METHOD", "IMPORT_FROM") and current is not None:
                current[0].append(str(ins.argval))
                continue
            if current is not None:
                chains.append(current)
            current = ([str(ins.argval)], ins.opname == "IMPORT_NAME") if ins.opname in STARTS else None
        for chain, imp in chains + ([current] if current else []):
            if found := named(chain, imp, scope):
                return found
        consts = [c for c in code.co_consts if isinstance(c, types.CodeType)]
        return next((found for c in consts if (found := walk(c, scope))), None)

    def follow(obj) -> str | None:
        obj = getattr(obj, "__func__", obj)  # a bound method: its function
        if not isinstance(obj, types.FunctionType) or obj.__globals__ is not home:
            return None
        cells = [cell.cell_contents for cell in obj.__closure__ or () if _filled(cell)]
        for value in [*cells, *(obj.__defaults__ or ()), *(obj.__kwdefaults__ or {}).values()]:
            if found := _off_limits(value) or follow(value):
                return found
        return walk(obj.__code__, obj.__globals__)

    try:
        return follow(fn)
    except Exception:  # noqa: BLE001 - an odd object: no finding, the comparison still runs
        return None


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


def report(task: Task, fn: Callable, cases: list[tuple] | None = None) -> tuple[Finding | None, str]:
    """(what :func:`attn_grader.checking.core.examine` found, the text the self-check prints) for ``fn`` on ``cases``
    (default: :func:`fresh_cases`).  An answer that uses the reference or the grader is told so, and nothing else:
    the graded re-check has neither."""
    if name := uses_reference(fn):
        return (Finding(f"{task.func_name} calls {name}"),
                f"self-check: {task.func_name} calls {name}: the graded re-check has no attn_ref, so this answer "
                "will score 0 — write it yourself")
    cases = fresh_cases(task) if cases is None else cases
    with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(sys.stdout):
        warnings.simplefilter("ignore")
        finding = examine(task, fn, cases, reveal=False)
    if finding is None:
        if not cases:
            return None, f"self-check: no fresh inputs for {task.func_name}; the asserts below check it."
        inputs = "inputs" if len(cases) > 1 else "input"
        if any(hasattr(a, "chunks") for args in cases for a in args):  # a stream task: the long streams are left out
            return None, (f"self-check: {task.func_name} is right on {len(cases)} fresh random short streams; "
                          "one pass and its memory are checked when graded.")
        return None, (f"self-check: {task.func_name} is right on {len(cases)} fresh random {inputs}."
                      + unreadable_note(task, fn, cases[0]))
    text = f"self-check: {finding.message}"
    hint = getattr(finding.mistake, "hint", "")
    if hint:
        text += f"\n  hint: {hint}"
    if finding.attempted and finding.mistake is None:
        text += "\n  (no common mistake of the catalogue matches this; the line above says what differs)"
    return finding, text


def _unreadable(value, expected, depth: int = 0) -> str | None:
    """What in ``value`` NumPy cannot read as the asserts do (``np.allclose``, ``out[0, 0]``) where the
    reference returns ``expected``, or None."""
    if depth > 4:
        return None
    if getattr(value, "requires_grad", False) and hasattr(value, "detach"):
        return ("a tensor that requires grad: NumPy, and so the asserts below, cannot read it; return "
                "`.detach()` of it, or compute under `with torch.no_grad():`")
    if isinstance(value, list) and isinstance(expected, np.ndarray) and value and \
            all(getattr(v, "ndim", 0) >= 1 for v in value):
        return ("a list of arrays where one array is expected: the asserts below index it as one; return "
                "`np.stack(...)` of it")
    if isinstance(value, tuple | list):
        pairs = zip(value, expected if isinstance(expected, tuple | list) else [None] * len(value), strict=False)
        return next((found for v, e in pairs if (found := _unreadable(v, e, depth + 1))), None)
    return None


def unreadable_note(task: Task, fn: Callable, args: tuple) -> str:
    """A line for a right answer whose output the visible asserts cannot read (a PyTorch answer whose tensor
    still requires grad: ``RuntimeError`` in ``np.allclose``; a list of per-head arrays: ``TypeError`` in
    ``w[0, 0]``): the comparison above reads it (it detaches, stacks), the notebook's own test would fail."""
    import copy

    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"), contextlib.redirect_stderr(sys.stdout):
            warnings.simplefilter("ignore")
            what = _unreadable(fn(*copy.deepcopy(args)), task.reference(*copy.deepcopy(args)))
    except Exception:  # noqa: BLE001 - the comparison already passed on these inputs: nothing to add
        return ""
    return f"\n  but it returns {what}." if what else ""


def check(assignment: str, func_name: str, fn: Callable) -> None:
    """Print what the self-check finds in ``fn``, the student's answer to task ``func_name`` of ``assignment``.

    Never raises (but KeyboardInterrupt) and writes to stdout only: the visible asserts after it still run.
    """
    try:
        _, text = report(get_task(assignment, func_name), fn)
    except Exception as exc:  # noqa: BLE001 - an old package, an unknown task: say so, do not fail the cell
        text = f"self-check: could not check {func_name} ({type(exc).__name__}: {exc})"
    print(text, flush=True)
