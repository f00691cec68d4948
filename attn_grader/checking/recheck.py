"""Re-check each answer outside the student's kernel, on inputs the student cannot know.

The notebook's own tests run in the student's kernel, which the student's code controls (it can patch
``np.allclose``, ``attn_grader.check`` or IPython itself, and it can read the catalogue and its hidden
inputs).  So every answer is run again:

1. :func:`cases_for` draws each task's inputs from the course's secret (:mod:`attn_grader.files.secret`):
   the grades are deterministic for a given secret, and the inputs differ from the notebook's hidden tests;
2. :func:`run` starts the harness (:mod:`attn_grader.checking.harness`, bound alone into the sandbox of
   :mod:`attn_grader.isolation.sandbox`: no ``attn_ref``, no ``attn_grader``, no course) with the
   assignment's setup cell *from the source*, the answers and those inputs; PyTorch's attention is blocked
   at the dispatcher;
3. :func:`compare` reads the outputs as untrusted data (regular ``.npy`` files, no pickles, size-capped)
   and compares them with the references computed here, naming a catalogued mistake where one
   matches (:func:`attn_grader.checking.core.diagnose`).

A task scores only when its notebook test and this re-check both pass (:mod:`.scores`).
"""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

from ..files.safeio import Refused, clean_data, clean_text, read_regular
from ..isolation import sandbox
from . import feed
from .core import NOT_ATTEMPTED, Raised, Task, describe_difference, diagnose, raised_note, to_numpy

HARNESS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "harness.py")
HARNESS_IN_BOX = "/grader/harness.py"
MAX_OUTPUT = 64 << 20  # bytes of one output array
MAX_READ = 256 << 20  # bytes of output arrays read for one whole re-check (the size of its working folder)


@dataclass
class Recheck:
    """The verdict of the re-check for one task: passed, and if not, why (naming the mistake where known).

    ``mistake``: the catalogued mistake's name, or ``unrecognised`` (a wrong output no catalogued mistake
    reproduces), ``error`` (the answer raised), ``not attempted yet`` (it raised NotImplementedError, as the
    released stub does) or ``unfinished``; ``example``: the first wrong output
    and the expected one, in brief (numbers only: nothing that names the student).
    """

    passed: bool
    reason: str = ""
    mistake: str = ""
    message: str = ""
    example: dict | None = None


def brief(value, limit: int = 240) -> str:
    """A short text of an output (an array, a tuple of arrays, anything else) for a report."""
    if isinstance(value, tuple | list) and not isinstance(value, np.ndarray):
        return ("(" + ", ".join(brief(v, limit // max(len(value), 1)) for v in value[:4]) +
                (", …" if len(value) > 4 else "") + ")")[:limit]
    try:
        arr = np.asarray(value)
        if arr.dtype.kind in "biuf":
            text = np.array2string(arr, precision=3, threshold=12, edgeitems=2, separator=", ",
                                   suppress_small=True, max_line_width=10_000)
            return (f"shape {arr.shape}: " if arr.ndim else "") + " ".join(text.split())[:limit]
    except Exception:  # noqa: BLE001 - a student's object that is not an array
        pass
    return f"a {type(value).__name__}"[:limit]


def answers_digest(answers: dict[str, str]) -> str:
    """A digest of a submission's answer cells: what its re-check inputs depend on besides the secret."""
    import hashlib
    import json

    return hashlib.sha256(json.dumps(answers, sort_keys=True).encode()).hexdigest()


def with_added(answers: dict[str, str], added: dict[str, list[str]]) -> dict[str, str]:
    """The answers in the order the re-check runs them, the cells the student added included
    (:attr:`attn_grader.isolation.sanitize.Sanitized.added`): each right before the answer it precedes in the
    graded notebook, the rest at the end, as the kernel runs them.  Their keys start with ``added``."""
    out: dict[str, str] = {}
    for gid, text in answers.items():
        for i, src in enumerate(added.get(gid, [])):
            out[f"added cell {i + 1} before {gid}"] = src
        out[gid] = text
    for i, src in enumerate(added.get("", [])):
        out[f"added cell {i + 1} at the end"] = src
    return out


def added_failures(index: dict) -> list[str]:
    """The cells the student added that raised in the re-check, with the exception's name."""
    return [f"{k} ({v})" for k, v in (index.get("answers") or {}).items()
            if isinstance(k, str) and k.startswith("added") and v != "ok"]


def cases_for(task: Task, secret: bytes, answers: dict[str, str] | None = None) -> list[tuple]:
    """The re-check's inputs for ``task``: its case generator driven by a seed from the course secret and,
    given ``answers``, from the submission's answer cells.  The same submission gets the same inputs (a
    regrade gives the same grades); a changed one gets new inputs, so inputs an answer smuggled out in its
    feedback (an error message, a print) are no use to the next submission (a table of their outputs)."""
    from ..files.secret import seed_for

    key = task.key if answers is None else f"{task.key}:{answers_digest(answers)}"
    return list(task.cases(np.random.default_rng(seed_for(secret, key))))


def run(tasks: list[Task], cases: dict[str, list], setup: str, answers: dict[str, str], work: str, *,
        wall_seconds: float = 120, memory_bytes: int = 4 << 30, cpu_seconds: int = 120, call_seconds: int = 30,
        box_bytes: int = 256 << 20, use_sandbox: bool = True, imports: tuple = ((), ())) -> dict:
    """Run the harness on ``answers`` in a fresh working folder under ``work``; return its index.
    ``imports``: the folders its dependencies are imported from beyond the Python installation and the
    folders of our packages to hide (:func:`.course.kernel_mounts` without the packages)."""
    box = tempfile.mkdtemp(prefix="r-", dir=sandbox.boxes_folder(work) if use_sandbox else work)
    mounted = use_sandbox and sandbox.mount_tmpfs(box, box_bytes)
    try:
        job = {"setup": setup, "answers": answers, "call_seconds": call_seconds,
               "tasks": [{"func_name": t.func_name, "cases": cases[t.func_name]} for t in tasks],
               "measured": (["/tmp", "/dev/shm"] + ([box] if mounted else [])) if use_sandbox else []}
        with feed.piped(job) as pass_fds:  # ps12's streams go through pipes from here (attn_grader.checking.feed)
            with open(os.path.join(box, "job.pkl"), "wb") as f:
                pickle.dump(job, f)
            spec = {"work": box, "memory": int(memory_bytes), "cpu": int(cpu_seconds), "fsize": 256 << 20,
                    "nproc": 64}
            if use_sandbox:
                spec["ro_files"] = {HARNESS_IN_BOX: HARNESS}
                spec["ro"], spec["hide"] = list(imports[0]), list(imports[1])
                harness = HARNESS_IN_BOX
            else:
                spec["disabled"] = True
                harness = HARNESS
            argv = sandbox.command(spec, [sys.executable, "-I", "-B", harness, box])
            index = _run(argv, wall_seconds, pass_fds)
        index.update(_read_index(box))
        index["outputs"] = _read_outputs(box, index, budget=box_bytes)
        return index
    finally:
        if mounted:
            sandbox.unmount(box)
        shutil.rmtree(box, ignore_errors=True)


def _run(argv: list[str], wall_seconds: float, pass_fds=()) -> dict:
    start = time.monotonic()
    status = "finished"
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, pass_fds=tuple(pass_fds),
                                stderr=subprocess.DEVNULL, start_new_session=True)
    except OSError as exc:
        return {"status": f"re-check could not start ({exc.strerror})"}
    try:
        _wait(proc, wall_seconds)
    except subprocess.TimeoutExpired:
        status = f"re-check took longer than {wall_seconds:.0f} s"
    finally:
        try:
            os.killpg(proc.pid, 9)  # the sandbox's outer process: its namespace dies with it
        except (ProcessLookupError, PermissionError):
            pass
        proc.wait()
    if status == "finished" and proc.returncode != 0:
        status = f"re-check process ended with code {proc.returncode}"
    return {"status": status, "seconds": round(time.monotonic() - start, 2)}


def _wait(proc: subprocess.Popen, seconds: float) -> None:
    """proc.wait(timeout=seconds), woken the moment the child ends (a pidfd; Popen.wait polls)."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=seconds)
        return
    try:
        if not select.select([fd], [], [], seconds)[0]:
            raise subprocess.TimeoutExpired(proc.args, seconds)
    finally:
        os.close(fd)
    proc.wait()


def _read_index(box: str) -> dict:
    """The harness's index, as untrusted data: anything but a small JSON mapping (too large, too deeply
    nested for the parser, not JSON) is ``{"malformed": why}``, never an exception."""
    try:
        data = read_regular(os.path.join(box, "out", "index.json"), 1 << 20)
        index = json.loads(data) if data else {}
    except Refused as why:
        return {"malformed": f"result index {why}"}
    except (ValueError, RecursionError, MemoryError) as exc:
        return {"malformed": f"result index unreadable ({type(exc).__name__})"}
    if not isinstance(index, dict):
        return {"malformed": "result index is not a mapping"}
    # every string in it is the answer's (an exception's message): made safe here, once (issue 40, r03)
    return clean_data({k: index[k] for k in ("answers", "tasks", "blocked", "done") if k in index})


class _Budget(ValueError):
    """The outputs of one re-check went beyond the bytes the grader reads for it."""


class _Outputs:
    """Reads a re-check's output arrays within one budget of bytes for the whole re-check (an index
    naming one large file a thousand times costs it a thousand times, and then nothing more is read)."""

    def __init__(self, box: str, budget: int):
        self.box, self.left = box, budget

    def load(self, entry, depth: int = 0):
        if not isinstance(entry, dict) or depth > 4:
            raise ValueError("malformed result")
        if "tuple" in entry and isinstance(entry["tuple"], list):
            return tuple(self.load(e, depth + 1) for e in entry["tuple"][:16])
        seq = "seq" in entry  # a list of equal-shape arrays, saved as one: the tuple of its rows
        name = os.path.basename(str(entry["seq" if seq else "array"]))
        cap = min(MAX_OUTPUT, self.left)
        try:
            data = read_regular(os.path.join(self.box, "out", name), cap, missing_ok=False)
        except Refused as why:
            if str(why).startswith("larger") and cap < MAX_OUTPUT:
                self.left = 0
                raise _Budget("outputs beyond the re-check's read budget") from None
            raise
        self.left -= len(data)
        arr = _load_npy(data)
        return tuple(arr) if seq and arr.ndim else arr


def _load_npy(data: bytes) -> np.ndarray:
    """A .npy file the answer may have written itself (it can replace the harness's save): its header is
    checked against the bytes there are before anything is allocated; no object dtype (issue 40, r07)."""
    f = io.BytesIO(data)
    version = np.lib.format.read_magic(f)
    if version not in ((1, 0), (2, 0)):
        raise ValueError(f"a .npy of format {version}")
    read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
    shape, _, dtype = read_header(f, max_header_size=4096)
    if dtype.hasobject or not all(isinstance(n, int) and 0 <= n <= MAX_OUTPUT for n in shape):
        raise ValueError(f"a .npy header of dtype {dtype.str} and shape {shape} (refused)")
    count = 1
    for n in shape:
        count *= n
    if count * dtype.itemsize != len(data) - f.tell() or count * dtype.itemsize > MAX_OUTPUT:
        raise ValueError(f"a .npy header claiming {count * dtype.itemsize} bytes, with {len(data) - f.tell()} there")
    f.seek(0)
    return np.load(f, allow_pickle=False)


def _read_outputs(box: str, index: dict, budget: int = MAX_READ) -> dict:
    """{func: [output or {"error": ...}]}, read while the folder exists, at most ``budget`` bytes in all."""
    tasks = index.get("tasks") if isinstance(index.get("tasks"), dict) else {}
    reader = _Outputs(box, budget)
    out = {}
    for name, entry in tasks.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("results"), list):
            out[name] = entry if isinstance(entry, dict) and "error" in entry else {"error": "malformed result"}
            continue
        results = []
        for res in entry["results"][:1000]:
            if isinstance(res, dict) and "error" in res:
                results.append({"error": str(res["error"])[:200]})
                continue
            try:
                results.append({"value": reader.load(res)})
            except _Budget as exc:
                index["malformed"] = str(exc)
                results.append({"error": str(exc)})
            except Exception as exc:  # noqa: BLE001 - the file is the answer's: it costs this task, never the row
                why = clean_text(exc, 160) if isinstance(exc, (Refused, ValueError)) else type(exc).__name__
                results.append({"error": f"the answer's output could not be read: {why}"})
        out[name] = {"results": results}
    return out


def compare(tasks: list[Task], cases: dict[str, list], index: dict) -> dict[str, Recheck]:
    """Compare the harness's outputs with the references, computed here; one verdict per task."""
    verdicts: dict[str, Recheck] = {}
    outputs = index.get("outputs", {})
    for task in tasks:
        try:
            verdicts[task.func_name] = _compare_task(task, cases, index, outputs)
        except Exception as exc:  # noqa: BLE001 - outputs are the student's: an odd dtype costs that task only
            why = f"the re-check's output could not be compared ({type(exc).__name__})"
            verdicts[task.func_name] = Recheck(False, why, "error", why)
    return verdicts


def _compare_task(task: Task, cases: dict[str, list], index: dict, outputs: dict) -> Recheck:
    entry = outputs.get(task.func_name)
    if not isinstance(entry, dict):
        why = index.get("status", "")
        why = why if why and why != "finished" else "the re-check did not reach this task"
        return Recheck(False, why)
    if "error" in entry:
        why = str(entry["error"])[:200]
        return Recheck(False, why, "error", why)
    results = entry["results"]
    task_cases = cases[task.func_name]
    verdict = Recheck(True)
    if len(results) != len(task_cases):
        why = "the re-check did not finish every case"
        verdict = Recheck(False, why, "unfinished", why)
    first = None
    outcomes = []
    for args, res in zip(task_cases, results, strict=False):
        if "error" in res:
            why = f"{task.func_name} raised {res['error']}"
            outcomes.append(Raised(str(res["error"]).split(":")[0]))
            if first is None:
                first = (None, None, why)
            continue
        outcomes.append(res["value"])
        expected = to_numpy(task.reference(*copy.deepcopy(args)))
        problem = describe_difference(res["value"], expected, task.rtol, task.atol)
        if problem and first is None:
            first = (res["value"], expected, problem)
    if first is not None:
        got, expected, problem = first
        raised = got is None and expected is None
        example = None if raised else {"got": brief(got), "expected": brief(expected)}
        complete = len(results) == len(task_cases)
        mistake = diagnose(task, outcomes, task_cases) if complete else None
        if mistake:
            raised = raised_note(task.func_name, outcomes, task_cases)
            verdict = Recheck(False, f"[{mistake.name}] {mistake.message}" + ("." + raised if raised else ""),
                              mistake.name, mistake.message, example)
        elif any(isinstance(o, Raised) and o.kind == "NotImplementedError" for o in outcomes):
            why = f"{NOT_ATTEMPTED} (it raises NotImplementedError)"  # as attn_grader.checking.core.examine says
            verdict = Recheck(False, why, NOT_ATTEMPTED, why)
        elif raised:
            verdict = Recheck(False, problem, "error", problem)
        else:
            verdict = Recheck(False, problem, "unrecognised", problem, example)
    return verdict
