"""The re-check harness: runs a student's answers on the re-check's inputs, inside the sandbox.

    python -I /grader/harness.py WORK       # in the sandbox (see attn_grader.checking.recheck)

This file is bound read-only *alone* into the sandbox: neither ``attn_ref`` nor ``attn_grader`` nor
``torch_geometric`` is on its file system, so no answer can call the reference, and the inputs in
``job.pkl`` were drawn from the course's secret (the references for them are computed by the grader,
outside).  It uses the standard library, NumPy and, when an answer does, PyTorch.

PyTorch's own attention is blocked at the dispatcher: every ATen attention operator gets a kernel that
raises, registered when PyTorch loads (:class:`TorchGuard`: by what is imported, not by how an answer
spells it) before any student code gets the module, for every backend, so ``torch.ops.aten...`` and
``F.scaled_dot_product_attention`` fail alike.  ``nn.MultiheadAttention`` and
``F.multi_head_attention_forward`` (whose slow path is plain matrix products) are blocked by name, a
second layer.  Each blocked call is noted in the index, and the grader flags it.  That is the policy the
exercises state ("What you may use"): PyTorch's attention functions are blocked; anything built from
tensor operations is graded on its values.  A copy of ``multi_head_attention_forward`` compiled again from
``torch/nn/functional.py`` is such code (matrix products and a softmax, as an honest PyTorch answer):
graded on its values, not flagged (tests/attacks/d07); no check of the computation could tell it from
an answer written by hand.

Outputs go to ``WORK/out`` as ``.npy`` files (no pickles) plus ``index.json``; the grader reads them
as untrusted data.

:class:`Blocks` is here, in the one file the sandbox holds, because the streaming tasks (ps12) take it
as an argument: the catalogue's cases hold it, the in-process check and the self-check call answers
with it, and the job's unpickler (:class:`JobUnpickler`) rebuilds it here from this file's class.
"""

import copy
import json
import os
import pickle
import signal
import sys

import numpy as np

ATTENTION_OPS = ("scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                 "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_fused_attention_overrideable", "_native_multi_head_attention",
                 "_transformer_encoder_layer_fwd", "_scaled_dot_product_attention_math_for_mps",
                 "_flash_attention_forward", "_efficient_attention_forward")
blocked_calls = []


class StreamError(RuntimeError):
    """A second pass over a :class:`Blocks` stream."""


class StreamKept(StreamError):
    """An answer kept (copies of) the blocks it read: the memory it holds grew with the stream."""


#: A stream checks what the answer keeps once it has handed out this many bytes (a small stream's
#: blocks are smaller than the Python objects any answer allocates, so it is not checked).
KEPT_CHECK_FROM = 128 * 1024


class Blocks:
    """A one-pass stream of the blocks of ``size`` rows of ``arrays`` (row-aligned): a streaming task's input.

    ``for b in blocks`` yields each block once, in order: one read-only array, or a tuple of them when
    there are several arrays (``for K_B, V_B in blocks``); the last block may be shorter.  Reading the
    next block overwrites the previous one with NaN (its memory is reused, as a stream's buffer is), so
    an answer that keeps the blocks to use them later (the whole of K at once, a second pass over kept
    blocks) computes with NaN; iterating a second time raises :class:`StreamError`.  Each deep copy is a
    fresh, unread stream (every call of an answer gets its own).

    Copies are caught by their memory: once the stream has handed out ``KEPT_CHECK_FROM`` bytes, before
    each further block it measures (``tracemalloc``) how much more memory is held than when the loop
    began, and if that is more than half the bytes handed out -- an answer that kept a copy of every
    block (``b.copy()``, ``b.tolist()``, ``b + 0``) -- it raises :class:`StreamKept` instead of handing
    out the rest, so the answer never sees the whole stream even if it swallows the exception.  A one-pass
    answer holds one block and its running values (under a third of that bound in the ps12 cases with
    long streams; tests/test_streaming_tasks.py).  Memory that ``tracemalloc`` does not see (copies into
    PyTorch tensors) escapes this check.
    """

    def __init__(self, arrays: tuple, size: int):
        self.__data = tuple(np.array(a, dtype=float if np.asarray(a).dtype.kind not in "f" else None)
                            for a in arrays)
        self.__size = int(size)
        self.__started = False

    def __iter__(self):
        if self.__started:
            raise StreamError("the blocks were iterated a second time: a stream is read in one pass, one "
                              "for loop over the blocks, keeping only the running values")
        self.__started = True
        return self.__blocks()

    def __blocks(self):
        import tracemalloc

        kept = ()
        started = not tracemalloc.is_tracing()
        if started:
            tracemalloc.start()
        base, handed = tracemalloc.get_traced_memory()[0], 0
        try:
            for j0 in range(0, len(self.__data[0]), self.__size):
                for b in kept:
                    b.fill(np.nan)  # the next block reuses the buffer: a kept block is gone
                if handed >= KEPT_CHECK_FROM:
                    held = tracemalloc.get_traced_memory()[0] - base
                    if held > handed / 2:
                        raise StreamKept(
                            f"the answer kept the blocks it read: after {handed} bytes of the stream it held "
                            f"{held} bytes more than when its loop began; a stream is read in one pass, "
                            "keeping only the running values, not a copy of each block")
                handed += sum(a[j0:j0 + self.__size].nbytes for a in self.__data)
                kept = tuple(np.array(a[j0:j0 + self.__size]) for a in self.__data)
                views = []
                for b in kept:
                    v = b.view()
                    v.flags.writeable = False
                    views.append(v)
                yield views[0] if len(views) == 1 else tuple(views)
        finally:
            for b in kept:
                b.fill(np.nan)
            if started:
                tracemalloc.stop()

    def __deepcopy__(self, memo):
        return Blocks(tuple(a.copy() for a in self.__data), self.__size)

    def __reduce__(self):
        return Blocks, (self.__data, self.__size)

    def __repr__(self):
        return f"<{len(self.__data[0])} in blocks of {self.__size}>"

    def astype(self, dtype):
        """A fresh, unread stream of the same blocks in ``dtype`` (the tests' float32 runs)."""
        return Blocks(tuple(a.astype(dtype) for a in self.__data), self.__size)


class JobUnpickler(pickle.Unpickler):
    """Reads the job: NumPy's and the standard library's classes, and :class:`Blocks` from this file (the
    grader pickles it as ``attn_grader.checking.harness.Blocks``; that package is not in the sandbox)."""

    def find_class(self, module, name):
        if module in ("attn_grader.checking.harness", "__main__") and name == "Blocks":
            return Blocks
        return super().find_class(module, name)


class TorchGuard:
    """A finder first on ``sys.meta_path``: whoever imports PyTorch, however the name is spelled
    (``__import__("to" + "rch")``, importlib, a module of the answer's that imports it), its attention is
    blocked the moment torch has loaded, before the importer gets it.  An answer that takes the finder out
    of ``sys.meta_path`` first is still seen: PyTorch's library mapped into the process without the block
    (:func:`torch_unblocked`) voids every result of the run."""

    blocked = False

    def find_spec(self, name, path=None, target=None):
        if name != "torch" or TorchGuard.blocked:
            return None
        import importlib.machinery

        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None:
            return None
        real = spec.loader.exec_module

        def exec_module(module):
            left = signal.alarm(0)  # loading PyTorch (seconds on a busy machine) is not the answer's time
            try:
                real(module)
                if not TorchGuard.blocked:
                    TorchGuard.blocked = True
                    block_torch_attention()
            finally:
                if left:
                    signal.alarm(left)
        spec.loader.exec_module = exec_module
        return spec


def torch_unblocked() -> bool:
    """PyTorch's library is in this process and its attention was never blocked (the guard bypassed)."""
    if TorchGuard.blocked:
        return False
    try:
        with open("/proc/self/maps") as f:
            return "libtorch" in f.read()
    except OSError:
        return "torch" in sys.modules


def block_torch_attention():
    import ctypes

    import torch
    import torch.nn.functional as F

    def blocked(*args, **kwargs):
        blocked_calls.append("PyTorch's attention")
        raise RuntimeError("PyTorch's built-in attention is not allowed in this answer")

    lib = torch._C._dispatch_library("IMPL", "aten", "", "<re-check>", 0)
    for op in ATTENTION_OPS:
        if not torch._C._dispatch_has_kernel(f"aten::{op}"):
            continue
        for key in ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CPU", "Autograd", "Meta"):
            if torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op}", key):
                lib.impl(op, key, blocked, False)
    # The registration lives as long as its handle: keep the handle alive with no Python name for it,
    # so no answer can find it and reset it.
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(lib))
    del lib

    class BlockedMHA(torch.nn.Module):
        def __init__(self, *a, **k):
            blocked()
    F.multi_head_attention_forward = blocked
    torch.nn.MultiheadAttention = BlockedMHA
    torch.nn.modules.activation.MultiheadAttention = BlockedMHA


class Timeout(BaseException):
    pass


def on_alarm(signum, frame):
    raise Timeout()


def no_exit(*args, **kwargs):
    raise SystemExit("os._exit in an answer")


class FakeIPython:
    def __getattr__(self, name):
        return lambda *a, **k: None


def to_plain(x, depth=0):
    if depth < 2 and isinstance(x, (tuple, list)) and not all(np.isscalar(v) or getattr(v, "ndim", None) == 0
                                                              for v in x):
        return ("tuple", [to_plain(v, depth + 1) for v in x])
    if hasattr(x, "detach"):
        x = x.detach().cpu().numpy()
    arr = np.array(x)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"expected numbers, got {type(x).__name__}")
    return ("array", arr)


def save(value, out_dir, prefix):
    kind, payload = value
    if kind == "tuple":
        return {"tuple": [save(v, out_dir, f"{prefix}_{i}") for i, v in enumerate(payload)]}
    np.save(os.path.join(out_dir, prefix + ".npy"), np.asarray(payload, order="C"), allow_pickle=False)
    return {"array": prefix + ".npy"}


def source_of(text):
    if any(line.lstrip().startswith(("%", "!")) for line in text.splitlines()):
        try:
            from IPython.core.inputtransformer2 import TransformerManager
            return TransformerManager().transform_cell(text)
        except Exception:  # noqa: BLE001
            return text
    return text


def run_task(ti, task, namespace, job, out_dir, index):
    """Call the task's function on every case; outputs to ``out_dir``, verdicts to ``index``."""
    name = task["func_name"]
    fn = namespace.get(name)
    if not callable(fn):
        index["tasks"][name] = {"error": f"{name} is not defined"}
        return
    results = []
    for ci, args in enumerate(task["cases"]):
        try:
            signal.alarm(job["call_seconds"])
            value = fn(*copy.deepcopy(args))
            signal.alarm(0)
            results.append(save(to_plain(value), out_dir, f"t{ti}_c{ci}"))
        except Timeout:
            signal.alarm(0)
            results.append({"error": f"took longer than {job['call_seconds']} s"})
        except BaseException as exc:  # noqa: BLE001
            signal.alarm(0)
            results.append({"error": f"{type(exc).__name__}: {str(exc)[:200]}"})
    index["tasks"][name] = {"results": results}


def main(work):
    with open(os.path.join(work, "job.pkl"), "rb") as f:
        job = JobUnpickler(f).load()  # written by the grader for this sandbox
    os.remove(os.path.join(work, "job.pkl"))
    out_dir = os.path.join(work, "out")
    os.makedirs(out_dir, exist_ok=True)
    index = {"answers": {}, "tasks": {}}

    def write_index():
        with open(os.path.join(out_dir, "index.json"), "w") as f:
            json.dump(index, f)

    # The answers run in a folder of their own on the sandbox's /tmp: an answer that fills it cannot
    # take the room of the outputs; os._exit cannot end the harness before it wrote them.
    os.makedirs("/tmp/answers", exist_ok=True)
    os.chdir("/tmp/answers")
    os._exit = no_exit
    namespace = {"__name__": "__main__", "get_ipython": lambda: FakeIPython()}
    exec(compile(job["setup"], "<setup>", "exec"), namespace)
    if "torch" in sys.modules or any("torch" in s for s in job["answers"].values()):
        TorchGuard.blocked = True  # imported here, outside the answers' time limit
        block_torch_attention()
    sys.meta_path.insert(0, TorchGuard())
    sys.stdout = sys.stderr = open(os.devnull, "w")  # noqa: SIM115
    signal.signal(signal.SIGALRM, on_alarm)
    # Each task is called as it stood when its own test ran in the notebook: right after its answer
    # cell (the release puts every test cell right after its answer cell), before a later cell could
    # redefine a name it uses (a helper `softmax(x)` in task 4's cell must not replace task 3's answer).
    tasks = list(enumerate(job["tasks"]))
    for gid, text in job["answers"].items():
        try:
            signal.alarm(job["call_seconds"])
            exec(compile(source_of(text), f"<answer {gid}>", "exec"), namespace)
            signal.alarm(0)
            index["answers"][gid] = "ok"
        except BaseException as exc:  # noqa: BLE001 - an answer may raise anything, even SystemExit
            signal.alarm(0)
            index["answers"][gid] = type(exc).__name__
        write_index()
        for ti, task in [t for t in tasks if f"{t[1]['func_name']}_answer" == gid]:
            run_task(ti, task, namespace, job, out_dir, index)
            write_index()
    for ti, task in tasks:  # a task whose answer cell is missing: as the notebook's end left it
        if task["func_name"] not in index["tasks"]:
            run_task(ti, task, namespace, job, out_dir, index)
            write_index()
    if torch_unblocked():  # the guard was taken away before PyTorch was imported: no result counts
        blocked_calls.append("PyTorch imported past the grader's guard")
        for entry in index["tasks"].values():
            for i, _ in enumerate(entry.get("results", [])):
                entry["results"][i] = {"error": "PyTorch imported past the grader's guard"}
    index["blocked"] = sorted(set(blocked_calls))
    index["done"] = True
    write_index()


if __name__ == "__main__":
    main(sys.argv[1])
