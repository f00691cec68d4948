"""Re-check each answer outside the student's kernel, where the reference is out of reach.

The notebook's own tests run in the student's kernel, which the student's code controls (it can patch
``np.allclose``, ``attn_grader.check`` or IPython itself).  So every answer is also run again here:

1. the trusted harness (:data:`HARNESS`) starts in a fresh ``python -I`` process with a clean
   environment, in a scratch folder, with limits on memory (``RLIMIT_AS``), CPU time and file size;
2. it loads the hidden inputs (``Task.hidden_cases()``, pickled by the grader: trusted data),
   runs the assignment's setup cell *from the source*, and then installs its guards *before any
   student code runs*: ``attn_ref`` and ``torch_geometric`` cannot be imported; PyTorch's attention
   (``F.scaled_dot_product_attention``, ``F.multi_head_attention_forward``, ``nn.MultiheadAttention``)
   raises; an audit hook refuses opening files outside the Python installation and the scratch
   folder (so ``solutions/`` and the gradebook cannot be read), writing outside the scratch folder,
   starting processes, sockets and ``ctypes``;
3. it executes the student's answer cells and calls each task's function on the hidden inputs,
   writing the outputs as plain arrays (``.npy`` files plus a JSON index: nothing is unpickled
   from the student's side);
4. the grader (:func:`compare`) compares them with ``Task.reference`` computed here, outside, and
   names a catalogued mistake where the output matches one (:func:`attn_grader.core.diagnose`).

A task scores only when its notebook test and this re-check both pass.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import select
import subprocess
import sys
import time
from dataclasses import dataclass

import numpy as np

from .core import Task, describe_difference, diagnose, to_numpy

HARNESS = r'''
import builtins, json, os, pickle, resource, signal, sys
work, limits = sys.argv[1], json.loads(sys.argv[2])
for name, key in (("RLIMIT_AS", "as"), ("RLIMIT_CPU", "cpu"), ("RLIMIT_FSIZE", "fsize")):
    if limits.get(key):
        resource.setrlimit(getattr(resource, name), (limits[key], limits[key]))
os.chdir(work)
with open(os.path.join(work, "job.pkl"), "rb") as f:
    job = pickle.load(f)  # trusted: written by the grader
import copy
import numpy as np

namespace = {"__name__": "__main__"}
exec(compile(job["setup"], "<setup>", "exec"), namespace)
uses_torch = "torch" in sys.modules or any("torch" in s for s in job["answers"].values())
if uses_torch:
    import torch, torch.nn, torch.nn.functional as F
    def _blocked(*a, **k):
        raise RuntimeError("PyTorch's built-in attention is not allowed in this answer")
    class _BlockedMHA(torch.nn.Module):
        def __init__(self, *a, **k):
            _blocked()
    for mod, name in ((F, "scaled_dot_product_attention"), (F, "multi_head_attention_forward"),
                      (torch._C._nn, "scaled_dot_product_attention"), (torch, "_native_multi_head_attention")):
        if hasattr(mod, name):
            setattr(mod, name, _blocked)
    torch.nn.MultiheadAttention = _BlockedMHA
    torch.nn.modules.activation.MultiheadAttention = _BlockedMHA

class _Blocker:
    BLOCKED = ("attn_ref", "attn_grader", "torch_geometric")
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in self.BLOCKED:
            raise ImportError(f"{name} cannot be imported while an answer is re-checked")
        return None
for mod in list(sys.modules):
    if mod.split(".")[0] in _Blocker.BLOCKED:
        del sys.modules[mod]
sys.meta_path.insert(0, _Blocker())

out_dir = os.path.join(work, "out")
index_path = os.path.join(out_dir, "index.json")
index = {"answers": {}, "tasks": {}}
read_ok = [os.path.realpath(p) for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(np.__file__),
                                         "/usr/lib", "/usr/share", "/etc", "/dev/null", "/dev/urandom", "/proc/self"}]
read_ok += [os.path.realpath(p) for p in sys.path if p and os.path.isdir(p) and "site-packages" in p]
write_ok = [os.path.realpath(work), "/dev/null"]
denied = []
_real, _fspath = os.path.realpath, os.fspath
def _inside(path, roots):
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)
def _hook(event, args):
    if event == "open":
        target = args[0]
        if target is None or isinstance(target, int):
            return
        path = _real(_fspath(target))
        mode = args[1] if isinstance(args[1], str) else "r"
        flags = args[2] if isinstance(args[2], int) else 0
        writing = any(c in (mode or "") for c in "wax+") or bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
        blocked_src = any(f"/{p}/" in path + "/" for p in ("attn_ref", "attn_grader", "torch_geometric"))
        if (writing and not _inside(path, write_ok)) or (not writing and (not _inside(path, read_ok + write_ok)
                                                                          or blocked_src)):
            denied.append(path)
            raise PermissionError(f"re-check: access to {path} is not allowed")
    elif event.startswith(("subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork",
                           "os.forkpty", "socket.", "ctypes.", "pty.", "os.kill", "os.killpg")):
        denied.append(event)
        raise PermissionError(f"re-check: {event} is not allowed")
sys.addaudithook(_hook)
def _no_exit(*a, **k):
    raise SystemExit("os._exit is not allowed in a re-check")
os._exit = _no_exit
sys.stdout = sys.stderr = open(os.devnull, "w")

class _Timeout(BaseException):
    pass
def _alarm(signum, frame):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)

class _FakeIPython:
    def run_line_magic(self, *a, **k): return None
    def run_cell_magic(self, *a, **k): return None
    def system(self, *a, **k): return None
    def __getattr__(self, name): return lambda *a, **k: None
namespace["get_ipython"] = lambda: _FakeIPython()

def _to_plain(x, depth=0):
    if depth < 2 and isinstance(x, (tuple, list)) and not all(np.isscalar(v) for v in x):
        return ("tuple", [_to_plain(v, depth + 1) for v in x])
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.array(x)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"expected numbers, got {type(x).__name__}")
    return ("array", arr)

def _save(value, prefix):
    kind, payload = value
    if kind == "tuple":
        return {"tuple": [_save(v, f"{prefix}_{i}") for i, v in enumerate(payload)]}
    np.save(os.path.join(out_dir, prefix + ".npy"), np.asarray(payload, order="C"), allow_pickle=False)
    return {"array": prefix + ".npy"}

def _write_index():
    with open(index_path, "w") as f:
        json.dump(index, f)

def _source(text):
    if any(line.lstrip().startswith(("%", "!")) for line in text.splitlines()):
        try:
            from IPython.core.inputtransformer2 import TransformerManager
            return TransformerManager().transform_cell(text)
        except Exception:
            return text
    return text

for gid, text in job["answers"].items():
    try:
        signal.alarm(job["cell_seconds"])
        exec(compile(_source(text), f"<answer {gid}>", "exec"), namespace)
        signal.alarm(0)
        index["answers"][gid] = "ok"
    except BaseException as exc:
        signal.alarm(0)
        index["answers"][gid] = f"{type(exc).__name__}: {str(exc)[:200]}"
    _write_index()

for ti, task in enumerate(job["tasks"]):
    name = task["func_name"]
    results = []
    fn = namespace.get(name)
    if not callable(fn):
        index["tasks"][name] = {"error": f"{name} is not defined"}
        _write_index()
        continue
    for ci, args in enumerate(task["cases"]):
        try:
            signal.alarm(job["call_seconds"])
            value = fn(*copy.deepcopy(args))
            signal.alarm(0)
            results.append(_save(_to_plain(value), f"t{ti}_c{ci}"))
        except _Timeout:
            signal.alarm(0)
            results.append({"error": f"took longer than {job['call_seconds']} s"})
        except BaseException as exc:
            signal.alarm(0)
            results.append({"error": f"{type(exc).__name__}: {str(exc)[:200]}"})
    index["tasks"][name] = {"results": results}
    _write_index()
index["denied"] = denied[:20]
index["done"] = True
_write_index()
'''


@dataclass
class Recheck:
    """The verdict of the re-check for one task: passed, and if not, why (naming the mistake where known)."""

    passed: bool
    reason: str = ""


def _clean_env() -> dict:
    return {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONHASHSEED": "0",
            "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "MPLBACKEND": "Agg"}


def run(tasks: list[Task], setup: str, answers: dict[str, str], work: str, *, wall_seconds: float = 120,
        memory_bytes: int = 4 << 30, cpu_seconds: int = 120, call_seconds: int = 30,
        python: str = sys.executable, user: tuple[int, int] | None = None) -> dict:
    """Run the harness on ``answers`` in ``work`` (a fresh folder); return its index (or what it wrote)."""
    os.makedirs(os.path.join(work, "out"), exist_ok=True)
    job = {"setup": setup, "answers": answers, "cell_seconds": call_seconds, "call_seconds": call_seconds,
           "tasks": [{"func_name": t.func_name, "cases": t.hidden_cases()} for t in tasks]}
    with open(os.path.join(work, "job.pkl"), "wb") as f:
        pickle.dump(job, f)
    with open(os.path.join(work, "harness.py"), "w") as f:
        f.write(HARNESS)
    limits = {"as": int(memory_bytes), "cpu": int(cpu_seconds), "fsize": 256 << 20}
    preexec = None
    if user is not None and os.geteuid() == 0:
        uid, gid = user
        for root, dirs, _files in os.walk(work):
            for p in [root, *[os.path.join(root, d) for d in dirs]]:
                os.chown(p, uid, gid)
        for p in (os.path.join(work, "job.pkl"), os.path.join(work, "harness.py")):
            os.chmod(p, 0o644)

        def preexec():  # noqa: F811 - runs in the child before exec
            os.setgroups([])
            os.setgid(gid)
            os.setuid(uid)
    start = time.monotonic()
    status = "finished"
    try:
        proc = subprocess.Popen([python, "-I", os.path.join(work, "harness.py"), work, json.dumps(limits)],
                                cwd=work, env=_clean_env(), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True, preexec_fn=preexec)
        try:
            _wait(proc, wall_seconds)
        except subprocess.TimeoutExpired:
            status = f"re-check took longer than {wall_seconds:.0f} s"
        finally:
            try:
                os.killpg(proc.pid, 9)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        if status == "finished" and proc.returncode != 0:
            status = f"re-check process ended with code {proc.returncode}"
    except OSError as exc:
        status = f"re-check could not start ({exc})"
    try:
        with open(os.path.join(work, "out", "index.json")) as f:
            index = json.load(f)
        if not isinstance(index, dict):
            index = {}
    except (OSError, ValueError):
        index = {}
    index["status"] = status
    index["seconds"] = round(time.monotonic() - start, 2)
    return index


def _wait(proc: subprocess.Popen, seconds: float) -> None:
    """proc.wait(timeout=seconds), woken the moment the child ends.

    Popen.wait with a timeout polls, sleeping up to 50 ms between looks: ~25 ms lost per re-check on
    average.  A pidfd (Linux >= 5.3) becomes readable when the process ends.
    """
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # not Linux, or an old kernel
        proc.wait(timeout=seconds)
        return
    try:
        if not select.select([fd], [], [], seconds)[0]:
            raise subprocess.TimeoutExpired(proc.args, seconds)
    finally:
        os.close(fd)
    proc.wait()


def _load(entry, out_dir: str):
    if not isinstance(entry, dict):
        raise ValueError("malformed result")
    if "tuple" in entry:
        return tuple(_load(e, out_dir) for e in entry["tuple"])
    name = os.path.basename(str(entry["array"]))
    return np.load(os.path.join(out_dir, name), allow_pickle=False)


def compare(tasks: list[Task], index: dict, work: str) -> dict[str, Recheck]:
    """Compare the harness's outputs with the references, computed here; one verdict per task."""
    out_dir = os.path.join(work, "out")
    verdicts: dict[str, Recheck] = {}
    task_results = index.get("tasks") if isinstance(index.get("tasks"), dict) else {}
    for task in tasks:
        entry = task_results.get(task.func_name)
        if not isinstance(entry, dict):
            why = index.get("status", "")
            why = why if why and why != "finished" else "the re-check did not reach this task"
            verdicts[task.func_name] = Recheck(False, why)
            continue
        if "error" in entry:
            verdicts[task.func_name] = Recheck(False, str(entry["error"])[:200])
            continue
        results = entry.get("results", [])
        cases = task.hidden_cases()
        verdict = Recheck(True)
        if len(results) != len(cases):
            verdict = Recheck(False, "the re-check did not finish every case")
        for args, res in zip(cases, results, strict=False):
            if not isinstance(res, dict) or "error" in res:
                err = res.get("error", "malformed result") if isinstance(res, dict) else "malformed result"
                verdict = Recheck(False, f"{task.func_name} raised {err}")
                break
            try:
                got = _load(res, out_dir)
            except Exception as exc:  # noqa: BLE001
                verdict = Recheck(False, f"unreadable output ({type(exc).__name__})")
                break
            expected = to_numpy(task.reference(*copy.deepcopy(args)))
            problem = describe_difference(got, expected, task.rtol, task.atol)
            if problem:
                mistake = diagnose(task, got, args)
                verdict = Recheck(False, f"[{mistake.name}] {mistake.message}" if mistake else problem)
                break
        verdicts[task.func_name] = verdict
    return verdicts
