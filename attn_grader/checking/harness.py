"""The re-check harness: runs a student's answers on the re-check's inputs, inside the sandbox.

    python -I /grader/harness.py WORK       # in the sandbox (see attn_grader.checking.recheck)

This file is bound read-only *alone* into the sandbox: neither ``attn_ref`` nor ``attn_grader`` nor
``torch_geometric`` is on its file system, so no answer can call the reference, and the inputs in
``job.pkl`` were drawn from the course's secret (the references for them are computed by the grader,
outside).  It uses the standard library, NumPy and, when an answer does, PyTorch.

PyTorch's own attention is blocked at the dispatcher: every ATen attention operator gets a kernel that
raises, registered when PyTorch loads (:func:`torch_guard`: by what is imported, not by how an answer
spells it) before any student code gets the module, for every backend, so ``torch.ops.aten...`` and
``F.scaled_dot_product_attention`` fail alike.  ``nn.MultiheadAttention`` and
``F.multi_head_attention_forward`` (whose slow path is plain matrix products) are blocked by name, a
second layer.  Each blocked call is noted in the index, and the grader flags it.  That is the policy the
exercises state ("What you may use"): PyTorch's attention functions are blocked; anything built from
tensor operations is graded on its values.  A copy of ``multi_head_attention_forward`` compiled again from
``torch/nn/functional.py`` is such code (matrix products and a softmax, as an honest PyTorch answer):
graded on its values, not flagged (tests/attacks/d07); no check of the computation could tell it from
an answer written by hand.

Outputs go to ``WORK/out`` as ``.npy`` files (no pickles; a list of equal-shape arrays as one) plus ``index.json``;
the grader reads them as untrusted data.

:class:`Stream` is here, in the one file the sandbox holds, because the streaming tasks (ps12) take it as an
argument: a case holds a stream's source (:class:`Blocks`), and an answer is called (:func:`call`) with a one-pass
:class:`Stream` of it, which no copy, pickle or view turns into a second one.  In the re-check the job holds a
:class:`Piped` instead, and the blocks come through a pipe from the grader (:mod:`attn_grader.checking.feed`):
the data is nowhere in this process before the answer reads it.  A stream measures what the answer holds
(:func:`memory`: resident memory, open files, the sandbox's tmpfs) and stops one whose memory grows with the
blocks it has read.
"""

import contextlib
import copy
import errno
import json
import os
import pickle
import signal
import sys
import types

import numpy as np

PAST_THE_GUARD = "PyTorch imported by a name no answer spells (past the grader's guard)"
ATTENTION_OPS = ("scaled_dot_product_attention", "_scaled_dot_product_attention_math",
                 "_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_flash_attention",
                 "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                 "_scaled_dot_product_fused_attention_overrideable", "_native_multi_head_attention",
                 "_transformer_encoder_layer_fwd", "_scaled_dot_product_attention_math_for_mps",
                 "_flash_attention_forward", "_efficient_attention_forward")
blocked_calls = []


class StreamError(RuntimeError):
    """A stream read a second time, copied, or not read to its end."""


class StreamKept(StreamError):
    """An answer kept (copies of) the blocks it read: the memory it holds grew with the stream."""


#: A stream takes its base (:func:`memory`) after WARM_UP bytes (past an answer's set-up), then every CHECK_EVERY
#: bytes, from KEPT_CHECK_FROM past the base, stops an answer holding more than ``keep`` times what it read since.
WARM_UP, KEPT_CHECK_FROM, CHECK_EVERY = 2 << 20, 4 << 20, 256 << 10
#: Private tmpfs folders (the sandbox's /tmp, /dev/shm, box) whose used bytes count; empty outside the sandbox.
MEASURED: list = []


def _malloc_free():
    """Bytes glibc's malloc holds free (``mallinfo2().fordblks``, the 9th of its 10 fields), or None elsewhere."""
    import ctypes

    fn = getattr(ctypes.CDLL(None), "mallinfo2", None)
    if fn is not None:
        fields = [(f"f{i}", ctypes.c_size_t) for i in range(10)]
        fn.restype = type("Mallinfo2", (ctypes.Structure,), {"_fields_": fields})
        return int(fn().f8)
    return None


def memory() -> tuple:
    """What this process holds, as (resident memory (NumPy, Python objects, PyTorch, an anonymous mmap once
    written) + the files it has open (an unlinked ``tempfile.TemporaryFile`` too) + the used bytes of the
    :data:`MEASURED` folders, the bytes malloc holds free); :func:`held` compares two of them."""
    total = 0
    try:
        with open("/proc/self/statm") as f:
            total += int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        files = {}
        for fd in os.listdir("/proc/self/fd"):
            with contextlib.suppress(OSError):
                if (st := os.stat(int(fd))).st_mode & 0o170000 == 0o100000:  # a regular file
                    files[st.st_dev, st.st_ino] = st.st_blocks * 512
        total += sum(files.values())
    except OSError:  # no /proc (macOS): the peak resident memory
        import resource

        total += resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * (1 if sys.platform == "darwin" else 1024)
    for folder in MEASURED:
        with contextlib.suppress(OSError):
            total += (st := os.statvfs(folder)).f_frsize * (st.f_blocks - st.f_bfree)
    return total, _malloc_free()


def held(base: tuple) -> int:
    """Bytes held now beyond ``base`` (a :func:`memory`): the growth of the resident memory, files and folders,
    plus the memory malloc handed out again from what it held free (resident already, so not in the growth)."""
    now = memory()
    reused = max(0, base[1] - now[1]) if None not in (base[1], now[1]) else 0
    return now[0] - base[0] + reused


class Blocks:
    """A stream's source (a case holds it, the references read ``arrays``); an answer gets a :class:`Stream` of it
    (:func:`call`), the re-check a :class:`Piped`.  ``keep``: the share of the bytes read an answer may hold."""

    def __init__(self, arrays: tuple, size: int, keep: float = 0.5):
        self.arrays = tuple(np.array(a, dtype=float if np.asarray(a).dtype.kind not in "f" else None)
                            for a in arrays)
        self.size, self.keep = int(size), float(keep)

    def describe(self) -> str:
        return describe(len(self.arrays[0]), self.size, [a.shape[1:] for a in self.arrays])
    __repr__ = describe

    def astype(self, dtype) -> "Blocks":
        """The same source in ``dtype`` (the tests' float32 runs)."""
        return Blocks(tuple(a.astype(dtype) for a in self.arrays), self.size, self.keep)

    def chunks(self):
        for j0 in range(0, len(self.arrays[0]), self.size):
            yield tuple(np.array(a[j0:j0 + self.size]) for a in self.arrays)


def describe(rows: int, size: int, shapes) -> str:
    what = " and ".join(f"({rows}, {', '.join(map(str, s))})" if s else f"({rows},)" for s in shapes)
    return f"a stream of {what} in blocks of {size} rows"


class Piped:
    """A stream in the re-check's job: its blocks come through the pipe ``fd`` from the grader (:mod:`.feed`),
    nowhere in this process before the answer reads them."""

    def __init__(self, fd: int, rows: int, size: int, shapes: list, dtypes: list, keep: float):
        self.fd, self.rows, self.size, self.shapes, self.dtypes, self.keep = fd, rows, size, shapes, dtypes, keep

    def describe(self) -> str:
        return describe(self.rows, self.size, self.shapes)

    def chunks(self):
        import io

        pipe = io.FileIO(self.fd, "rb", closefd=True)
        try:
            for j0 in range(0, self.rows, self.size):
                block = tuple(np.empty((min(self.size, self.rows - j0), *s), dtype=d)
                              for s, d in zip(self.shapes, self.dtypes, strict=True))
                for a in block:
                    view, got = memoryview(a).cast("B"), 0
                    while got < a.nbytes:
                        if not (n := pipe.readinto(view[got:])):
                            raise StreamError("the stream ended early: its data was read outside the loop over it")
                        got += n
                yield block
        finally:
            pipe.close()


class Stream:
    """What an answer gets: each block once, in order (read-only arrays; the next read fills the last with NaN); a
    second ``for``, a copy, a pickle raise :class:`StreamError`; keeping copies of the blocks raises StreamKept."""

    __slots__ = ("_blocks", "_what", "finished", "_started")

    def __init__(self, source):
        self._what, self.finished, self._started = source.describe(), False, False
        self._blocks = _hand_out(self, source.chunks(), source.keep)

    def __iter__(self):
        if self._started:
            raise StreamError("the blocks were iterated a second time: a stream is read in one pass, one "
                              "for loop over the blocks, keeping only the running values")
        self._started = True
        return self._blocks

    def _refuse(self, *args):
        raise StreamError("a stream cannot be copied, pickled or converted: it is read once, in one for loop")
    __copy__ = __deepcopy__ = __reduce__ = __reduce_ex__ = __getstate__ = astype = __array__ = _refuse

    def __repr__(self):
        return f"<{self._what}>"


def _hand_out(stream: Stream, chunks, keep):
    kept, handed, base, since, next_check = (), 0, None, 0, WARM_UP
    try:
        for block in chunks:
            for b in kept:
                b.fill(np.nan)  # the next block reuses the buffer: a kept block is gone
            if keep is not None and handed >= next_check:  # keep None: a piped stream, capped hard (call_capped)
                next_check = handed + CHECK_EVERY
                if base is None:
                    base, since = memory(), handed
                elif handed - since >= KEPT_CHECK_FROM and (grew := held(base)) > keep * (handed - since):
                    raise StreamKept(f"it held {grew >> 10} KiB more after reading {(handed - since) >> 10} KiB: "
                                     "a stream is read in one pass, keeping only the running values")
            handed += sum(a.nbytes for a in block)
            kept = block  # each block is a fresh array the answer owns (writable: in place on it is fine)
            yield block[0] if len(block) == 1 else block
        stream.finished = True
    finally:
        for b in kept:
            b.fill(np.nan)


def call(fn, args: tuple):
    """``fn(*args)`` with each stream source in ``args`` handed out as a :class:`Stream`; an answer that returns
    before reading a stream to its end raises :class:`StreamError` (each streaming task needs every block)."""
    given = tuple(Stream(a) if isinstance(a, Blocks | Piped) else a for a in args)
    value = fn(*given)
    if any(isinstance(s, Stream) and not s.finished for s in given):
        raise StreamError("the function returned before reading the stream to its end (every block is needed, "
                          "read once, in one for loop)")
    return value


#: A call over a piped stream runs in a forked child whose data segment (heap, anonymous mmaps: RLIMIT_DATA,
#: Linux >= 4.7) may grow CAP_ABOVE bytes past what it was at the fork, soft = hard so it cannot be raised, and no
#: file it writes may exceed CAP_ABOVE (RLIMIT_FSIZE): several times less than a long stream (ps12's are 64 MiB).
CAP_ABOVE = 16 << 20
KEPT = ("StreamKept: it kept more than one pass allows (out of memory): a stream is read in one pass, keeping "
        "only the running values")
_exit = os._exit


def _vm_data() -> int:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmData:"))


def _read_to_end(fd: int) -> bool:
    """The grader's feeder wrote the whole stream into ``fd`` and nothing of it is left: the stream was read."""
    import select

    try:
        if not select.select([fd], [], [], 10)[0]:
            return False
        return os.read(fd, 1) == b""
    except OSError:
        return False


def call_capped(fn, args: tuple, out_dir: str, prefix: str) -> dict:
    """:func:`call` in a forked child capped hard at :data:`CAP_ABOVE` bytes more than it holds at the fork; its
    outputs saved to ``out_dir``.  The verdict "read to the end" is this process's: the pipe the grader fed is
    empty and closed (the feeder wrote every byte, the child consumed them); nothing in the child decides it."""
    import resource

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the answer's call, nothing after it
        try:
            os.close(r)
            cap = _vm_data() + CAP_ABOVE
            resource.setrlimit(resource.RLIMIT_DATA, (cap, cap))
            resource.setrlimit(resource.RLIMIT_FSIZE, (CAP_ABOVE, CAP_ABOVE))
            try:
                result = save(to_plain(call(fn, args)), out_dir, prefix)
            except MemoryError:
                result = {"error": KEPT}
            except OSError as exc:  # a file over the cap (Python ignores SIGXFSZ: the write fails with EFBIG)
                result = {"error": KEPT if exc.errno == errno.EFBIG else f"OSError: {str(exc)[:200]}"}
            except BaseException as exc:  # noqa: BLE001
                result = {"error": REFERENCE_CALLED if calls_reference(exc) else
                          f"{type(exc).__name__}: {str(exc)[:200]}"}
            os.write(w, json.dumps(result).encode()[:4096])
        finally:
            _exit(0)
    os.close(w)
    data = b""
    try:
        while len(data) <= 4096 and (chunk := os.read(r, 4096)):
            data += chunk
        os.waitpid(pid, 0)
    except BaseException:  # the time limit (Timeout): the child goes with the call
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
        raise
    finally:
        os.close(r)
    try:
        result = json.loads(data)
        assert isinstance(result, dict)
    except (ValueError, AssertionError):
        return {"error": KEPT}  # killed (a file over the cap, a failed mmap) before it could say anything
    if "error" not in result and not all(_read_to_end(a.fd) for a in args if isinstance(a, Piped)):
        return {"error": "StreamError: the function returned before reading the stream to its end (every block "
                         "is needed, read once, in one for loop)"}
    return result


class JobUnpickler(pickle.Unpickler):
    """Reads the job: NumPy's and the standard library's classes, and :class:`Blocks` and :class:`Piped` from
    this file (the grader pickles them as ``attn_grader.checking.harness``; that package is not in the sandbox)."""

    def find_class(self, module, name):
        if module in ("attn_grader.checking.harness", "__main__") and name in ("Blocks", "Piped"):
            return {"Blocks": Blocks, "Piped": Piped}[name]
        return super().find_class(module, name)


def torch_guard():
    """(finder, block_once): a finder for the front of ``sys.meta_path``: whoever imports PyTorch, however
    the name is spelled (``__import__("to" + "rch")``, importlib, a module of the answer's that imports
    it), its attention is blocked the moment torch has loaded, before the importer gets it.  Its one piece
    of state ("blocked already") is in this function's closure, no class attribute or module global an
    answer can set by name (issue 40, r01: ``TorchGuard.blocked = True`` made it step aside).  It is a
    second layer: what decides is :func:`torch_loaded` at the end, which no answer can have told anything."""
    done = []

    def block_once():
        if not done:
            done.append(True)
            block_torch_attention()

    def find_spec(name, path=None, target=None):
        if name != "torch" or done:
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
                block_once()
            finally:
                if left:
                    signal.alarm(left)
        spec.loader.exec_module = exec_module
        return spec

    return types.SimpleNamespace(find_spec=find_spec), block_once


STARTS = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec", "os.system",
                    "subprocess.Popen", "pty.spawn"})
NATIVE_STARTS = frozenset({"fork", "vfork", "clone", "clone3", "posix_spawn", "posix_spawnp", "system", "execve",
                           "execv", "execvp", "popen", "syscall"})


def no_processes(event, args, _capped=call_capped.__code__):
    """An audit hook: no answer starts a process in the re-check (issue 40, a_r11: 60 busy forks slowed the
    whole class, unflagged); each try is refused and noted ("tried: os.fork"), as in the kernel.  One fork is
    the harness's own: :func:`call_capped`'s, made by its code object (one child at a time, waited for, capped;
    like every guard in this process a second layer: the sandbox is the boundary)."""
    if event == "os.fork" and sys._getframe(1).f_code is _capped:
        return
    if event in STARTS or (event == "ctypes.dlsym" and len(args) > 1 and str(args[1]) in NATIVE_STARTS):
        what = event if event != "ctypes.dlsym" else f"ctypes {args[1]}"
        blocked_calls.append(f"tried: {what}")
        raise PermissionError(f"the re-check starts no process ({what})")


def torch_loaded(_open=os.open, _read=os.read, _close=os.close) -> bool:
    """PyTorch's library is mapped into this process: read from the kernel's /proc/self/maps with the
    functions bound when the harness loaded (an answer that rebinds ``open`` or ``os.read`` changes nothing)."""
    try:
        fd = _open("/proc/self/maps", os.O_RDONLY)
    except OSError:
        return True  # cannot tell: as if loaded (a harness always has /proc in its sandbox)
    try:
        chunks = []
        while chunk := _read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        _close(fd)
    return b"libtorch" in b"".join(chunks)


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
    if depth < 2 and isinstance(x, (tuple, list)) and not all(np.isscalar(v) or getattr(v, "ndim", 1) == 0 for v in x):
        parts = [to_plain(v, depth + 1) for v in x]
        same = {(kind, np.shape(p)) for kind, p in parts} == {("array", np.shape(parts[0][1]))}  # one array:
        return ("seq", np.stack([p for _, p in parts])) if same else ("tuple", parts)  # read back as a tuple
    arr = np.array(x.detach().cpu().numpy() if hasattr(x, "detach") else x)
    if arr.dtype.kind not in "biufc":
        raise TypeError(f"expected numbers, got {type(x).__name__}")
    return ("array", arr)


def save(value, out_dir, prefix):  # kind "array", "seq" (a list of equal-shape arrays, as one) or "tuple"
    kind, payload = value
    if kind == "tuple":
        return {"tuple": [save(v, out_dir, f"{prefix}_{i}") for i, v in enumerate(payload)]}
    np.save(os.path.join(out_dir, prefix + ".npy"), np.asarray(payload, order="C"), allow_pickle=False)
    return {kind: prefix + ".npy"}


def source_of(text):
    if any(line.lstrip().startswith(("%", "!")) for line in text.splitlines()):
        try:
            from IPython.core.inputtransformer2 import TransformerManager
            return TransformerManager().transform_cell(text)
        except Exception:  # noqa: BLE001
            return text
    return text


REFERENCE = "attn_ref"  # an answer cell's outcome in the index: it imported the reference
REFERENCE_CALLED = "the reference `attn_ref` may not be called: an answer computes its result itself"


def calls_reference(exc: BaseException) -> bool:
    """``exc`` is the import of the reference or the grader (absent from the sandbox)."""
    return isinstance(exc, ImportError) and (exc.name or "").split(".")[0] in ("attn_ref", "attn_grader")


def run_task(ti, task, namespace, job, out_dir, index):
    """Call the task's function on every case; outputs to ``out_dir``, verdicts to ``index``."""
    name = task["func_name"]
    fn = namespace.get(name)
    if not callable(fn):
        refused = index["answers"].get(f"{name}_answer") == REFERENCE
        index["tasks"][name] = {"error": REFERENCE_CALLED if refused else f"{name} is not defined"}
        return
    results = []
    for ci, args in enumerate(task["cases"]):
        try:
            signal.alarm(job["call_seconds"])
            if any(isinstance(a, Piped) for a in args):
                results.append(call_capped(fn, args, out_dir, f"t{ti}_c{ci}"))
                signal.alarm(0)
                continue
            value = call(fn, copy.deepcopy(args))
            signal.alarm(0)
            results.append(save(to_plain(value), out_dir, f"t{ti}_c{ci}"))
        except Timeout:
            signal.alarm(0)
            results.append({"error": f"took longer than {job['call_seconds']} s"})
        except BaseException as exc:  # noqa: BLE001
            signal.alarm(0)
            results.append({"error": REFERENCE_CALLED if calls_reference(exc) else
                            f"{type(exc).__name__}: {str(exc)[:200]}"})
    index["tasks"][name] = {"results": results}


def main(work):
    with open(os.path.join(work, "job.pkl"), "rb") as f:
        job = JobUnpickler(f).load()  # written by the grader for this sandbox
    os.remove(os.path.join(work, "job.pkl"))
    MEASURED[:] = job.get("measured", [])
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
    # The answers run in a module of their own, which is __main__ for them: the harness is no module an
    # answer can fetch by name (sys.modules["__main__"] was the harness, its guard and its save()).
    answers_module = types.ModuleType("__main__")
    namespace = answers_module.__dict__
    namespace["get_ipython"] = lambda: FakeIPython()
    sys.modules["__main__"] = answers_module
    exec(compile(job["setup"], "<setup>", "exec"), namespace)
    guard, block_once = torch_guard()
    spelled = "torch" in sys.modules or any("torch" in s for s in job["answers"].values())
    if spelled:
        block_once()  # imported here, outside the answers' time limit
    sys.meta_path.insert(0, guard)
    sys.addaudithook(no_processes)  # for good: an audit hook cannot be removed
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
            index["answers"][gid] = REFERENCE if calls_reference(exc) else type(exc).__name__
        write_index()
        for ti, task in [t for t in tasks if f"{t[1]['func_name']}_answer" == gid]:
            run_task(ti, task, namespace, job, out_dir, index)
            write_index()
    for ti, task in tasks:  # a task whose answer cell is missing: as the notebook's end left it
        if task["func_name"] not in index["tasks"]:
            run_task(ti, task, namespace, job, out_dir, index)
            write_index()
    if not spelled and torch_loaded():
        # PyTorch loaded though no answer says "torch": imported by a name built at run time, which only
        # hides it (whatever the guard was told or whether it was still there): no result counts
        blocked_calls.append(PAST_THE_GUARD)
        for entry in index["tasks"].values():
            for i, _ in enumerate(entry.get("results", [])):
                entry["results"][i] = {"error": PAST_THE_GUARD}
    index["blocked"] = sorted(set(blocked_calls))
    index["done"] = True
    write_index()


if __name__ == "__main__":
    main(sys.argv[1])
