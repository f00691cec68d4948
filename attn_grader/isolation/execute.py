"""nbgrader's Execute preprocessor, contained: a kernel that dies or hangs costs only its own remaining cells.

nbgrader's own ``Execute`` lets nbclient raise when the kernel dies (``os._exit``, a segfault, the memory
limit) or ignores an interrupt (a loop that swallows ``KeyboardInterrupt``): the whole notebook then
fails to autograde.  :class:`ContainedExecute` instead

* gives every cell ``timeout`` seconds (nbclient interrupts it) and the whole notebook ``budget`` seconds;
* when the kernel dies or cannot be interrupted, kills its process group and writes an error output
  (``KernelDied: <reason>``) into the cell that was running and every later code cell, so nbgrader's
  SaveAutoGrades scores those test cells zero and the autograded notebook and feedback still exist;
* starts a second kernel when the first fails before any cell was sent to it (it did not start:
  nothing of the student's has run), and says so in the report (``restarted``);
* keeps at most ``max_output_bytes`` of output per notebook (a flood of prints cannot fill the
  grader's memory); beyond ``kill_output_bytes`` the kernel is killed;
* runs every kernel in the sandbox (:mod:`.sandbox`, through the kernelspec's argv) with its own
  working folder (a size-limited tmpfs when the grader is root) that holds the connection file and
  the kernel's IPC sockets (``transport = "ipc"``: no TCP port, nothing on the network); the folder
  is removed with everything in it after the notebook;
* records what happened in ``ContainedExecute.reports`` for the grader's report.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import tempfile
import time

from jupyter_core.utils import run_sync
from nbclient.exceptions import CellTimeoutError, DeadKernelError
from nbformat.notebooknode import NotebookNode
from nbgrader.preprocessors import Execute
from traitlets import Integer, Unicode

from ..files.safeio import read_regular
from . import sandbox
from .kernel import AUDIT_FILE
from .outputs import AFTER_HIDDEN, _is_test

MAX_MESSAGE = 8 << 20  # bytes of one message (one frame) from a kernel, refused by zmq before it is decoded
QUEUED_MESSAGES = 64  # messages zmq holds for the grader at most (per socket): with MAX_MESSAGE, 512 MB


def _capped_messages(km, max_bytes: int) -> None:
    """Every socket the grader opens to this kernel refuses a message larger than ``max_bytes`` (zmq's
    ZMQ_MAXMSGSIZE: checked on the frame's length before anything is allocated; the connection is
    dropped and made again) and queues at most :data:`QUEUED_MESSAGES`.  The output cap of
    :meth:`ContainedExecute.output` measures a message only once jupyter_client has decoded it whole:
    3 × 350 MB of stdout took the grader to 2.4 GB before it could say no."""
    import zmq

    def capped(context) -> None:  # the defaults of every socket the context makes from now on
        context.setsockopt(zmq.MAXMSGSIZE, int(max_bytes))
        context.setsockopt(zmq.RCVHWM, QUEUED_MESSAGES)

    make_client = km.client

    def client(**kw):
        kc = make_client(**kw)
        capped(kc.context)  # the client's own context (it destroys it), before its channels open sockets
        return kc

    capped(km.context)
    km.client = client


def _error_output(ename: str, evalue: str) -> NotebookNode:
    return NotebookNode(output_type="error", ename=ename, evalue=evalue,
                        traceback=[f"{ename}: {evalue}"])


class ContainedExecute(Execute):
    reports: dict = {}  # noqa: RUF012 - notebook folder -> what happened while executing it
    on_done = None  # the grader's progress: called with each notebook's folder once it has run
    budget = Integer(600, help="seconds for the whole notebook").tag(config=True)
    max_output_bytes = Integer(2_000_000, help="output kept per notebook").tag(config=True)
    kill_output_bytes = Integer(50_000_000, help="output after which the kernel is killed").tag(config=True)
    max_message_bytes = Integer(MAX_MESSAGE, help="a larger message from a kernel is dropped unread").tag(config=True)
    boxes = Unicode("", help="folder (private to the grader) that holds the kernels' working folders").tag(config=True)
    box_bytes = Integer(256 << 20, help="size of a kernel's working folder (a tmpfs when root)").tag(config=True)

    def create_kernel_manager(self):
        """A kernel manager whose kernel talks over IPC sockets in a fresh working folder of its own:
        the kernel started ahead for this notebook (:meth:`_start_ahead`) when there is one."""
        warm, ContainedExecute._ahead = ContainedExecute._ahead, None
        if warm is not None:
            if self._ahead_usable(warm):
                self._box, self._box_mounted, self.km, self._context = warm
                self._started_ahead = True
                return self.km
            self._discard(warm)
        self._box, self._box_mounted, self.km, self._context = self._new_box_and_manager()
        self._started_ahead = False
        return self.km

    def _new_box_and_manager(self) -> tuple:
        box = tempfile.mkdtemp(prefix="k-", dir=self.boxes or None)
        if len(os.path.join(box, "kernel-ipc-99").encode()) > 100:  # sun_path holds 108 bytes
            shutil.rmtree(box, ignore_errors=True)
            raise RuntimeError(f"the kernels' folder {self.boxes!r} is too long a path for IPC sockets")
        mounted = sandbox.mount_tmpfs(box, self.box_bytes)
        km = self.kernel_manager_class(kernel_name=self.kernel_name, config=self.config, transport="ipc",
                                       connection_file=os.path.join(box, "kernel.json"))
        _capped_messages(km, self.max_message_bytes)
        return box, mounted, km, km.context  # the context is destroyed with the box: see _close_box

    # A kernel started ahead: while one notebook runs, the next notebook's kernel starts (in a box and a
    # sandbox of its own, with nothing of anyone's run in it) so that its ~0.6 s of start-up is not
    # waited for.  One at most per worker process; only for the same kernel spec, box folder and limits;
    # discarded (shut down, box removed) by :meth:`discard_ahead` when the batch's notebooks are done.
    _ahead = None
    to_come = 0  # notebooks of the batch not yet started (set by the grader): no kernel ahead for none

    def _ahead_key(self) -> tuple:
        return (self.kernel_name, self.boxes, self.box_bytes, os.environ.get("JUPYTER_PATH", ""),
                tuple(self.extra_arguments))

    def _ahead_usable(self, warm) -> bool:
        km = warm[2]
        return getattr(km, "_attn_ahead_key", None) == self._ahead_key() and run_sync(km.is_alive)()

    def _start_ahead(self) -> None:
        if ContainedExecute._ahead is not None or ContainedExecute.to_come <= 0:
            return
        try:
            warm = self._new_box_and_manager()
        except Exception:  # noqa: BLE001 - no kernel ahead: the next notebook starts its own
            return
        try:
            warm[2]._attn_ahead_key = self._ahead_key()
            run_sync(warm[2].start_kernel)(extra_arguments=self.extra_arguments)
        except Exception:  # noqa: BLE001
            self._discard(warm)
            return
        ContainedExecute._ahead = warm

    @classmethod
    def discard_ahead(cls) -> None:
        """Shut down the kernel started ahead, if any (the end of a batch's notebooks)."""
        warm, cls._ahead = cls._ahead, None
        if warm is not None:
            cls._discard(warm)

    @staticmethod
    def _discard(warm) -> None:
        box, mounted, km, context = warm
        try:
            if km.has_kernel:
                run_sync(km.shutdown_kernel)(now=True)
        except Exception:  # noqa: BLE001 - it is killed with its process group below in any case
            pid = getattr(getattr(getattr(km, "provisioner", None), "process", None), "pid", None)
            if pid:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
        if context is not None and not context.closed:
            context.destroy(linger=0)
        if mounted:
            sandbox.unmount(box)
        shutil.rmtree(box, ignore_errors=True)

    def _close_box(self, report: dict) -> None:
        box = getattr(self, "_box", None)
        if not box:
            return
        data = read_regular(os.path.join(box, AUDIT_FILE), 64 << 10)
        if data:
            watched = [line for line in data.decode("utf-8", "replace").splitlines() if line.strip()]
            report["watched"] = list(dict.fromkeys(report.get("watched", []) + watched))[:20]
        context = getattr(self, "_context", None)
        if context is not None and not context.closed:
            # A kernel that died or timed out leaves sockets with unsent messages: without linger=0
            # the context's term() (now, or when it is collected) waits for them for ever
            # (jupyter/jupyter_client#482).
            context.destroy(linger=0)
        self._context = None
        if self._box_mounted:
            sandbox.unmount(box)
        shutil.rmtree(box, ignore_errors=True)
        self._box = None

    def _kill_kernel(self) -> None:
        prov = getattr(self.km, "provisioner", None) if self.km is not None else None
        pid = getattr(getattr(prov, "process", None), "pid", None)
        pgid = getattr(prov, "pgid", None) or pid
        for target in (pgid,):
            if target:
                try:
                    os.killpg(target, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    #: what a message costs at least (a flood of empty ``clear_output`` messages is still a flood)
    MESSAGE_COST = 200
    #: messages that carry no output of the student's (the kernel's state, the echo of the cell sent)
    NOT_OUTPUT = frozenset({"status", "execute_input", "execute_reply", "shutdown_reply"})

    def _message_cost(self, msg) -> int:
        """Bytes a message adds to the notebook: its content and binary buffers, times the outputs a
        display-id update writes it into (nbclient copies an update into every output with that id)."""
        content = msg.get("content", {})
        try:
            size = len(json.dumps(content, default=str))
        except (TypeError, ValueError, RecursionError):
            size = self.kill_output_bytes
        size += sum(len(b) for b in msg.get("buffers") or [] if isinstance(b, (bytes, bytearray, memoryview)))
        transient = content.get("transient") if isinstance(content, dict) else None
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if display_id:
            targets = sum(len(v) for v in self._display_id_map.get(display_id, {}).values())
            size *= max(1, targets + (msg.get("msg_type") != "update_display_data"))
        return size + self.MESSAGE_COST

    def process_message(self, msg, cell, cell_index):
        """Every iopub message that can carry output (a stream, a display and its updates, a result, an
        error, a comm's data, ``clear_output``) counts against the caps here, before nbclient applies it
        (it applies display-id updates and comm messages without calling :meth:`output`)."""
        kind = msg.get("msg_type") or msg.get("header", {}).get("msg_type", "")
        if kind in self.NOT_OUTPUT:
            return super().process_message(msg, cell, cell_index)
        self._output_bytes = getattr(self, "_output_bytes", 0) + self._message_cost(msg)
        if self._output_bytes > self.kill_output_bytes and not getattr(self, "_killed_for_output", False):
            self._killed_for_output = True
            self._kill_kernel()
        if self._output_bytes > self.max_output_bytes:
            if not getattr(self, "_output_truncated", False):
                self._output_truncated = True
                cell.outputs.append(NotebookNode(output_type="stream", name="stdout",
                                                 text="\n[grader: output truncated; more than "
                                                      f"{self.max_output_bytes} bytes]\n"))
            if kind != "error":
                return None
            # An error is kept (nbgrader scores a test cell by it), shortened.
            content = msg.get("content", {})
            msg = {**msg, "content": {"ename": str(content.get("ename", "Error"))[:100],
                                      "evalue": "[grader: output truncated]", "traceback": []}}
        if cell_index >= getattr(self, "_first_test", 1 << 30):
            msg = self._after_tests(msg, kind)
            if msg is None:
                return None
        return super().process_message(msg, cell, cell_index)

    def _after_tests(self, msg, kind: str):
        """A message that arrives while a cell from the first test cell on runs: it may carry the hidden
        tests (a hook reads them), so it may change no earlier cell's output (issue 40, r02).  nbclient
        writes a display-id update, or a display or result with a display id already shown, into every
        output with that id, whichever cell holds it: the update is dropped, a display loses its id, and
        the earlier cells it was aimed at show the fixed line instead (at the end of the notebook)."""
        content = msg.get("content")
        transient = content.get("transient") if isinstance(content, dict) else None
        display_id = transient.get("display_id") if isinstance(transient, dict) else None
        if kind == "update_display_data" or display_id:
            aimed = self._display_id_map.get(display_id, {}) if isinstance(display_id, str) else {}
            self._blank_after_tests.update(i for i in aimed if i < self._first_test)
        if kind == "update_display_data":
            return None
        if display_id:
            msg = {**msg, "content": {**content, "transient": {}}}
        return msg

    def _blank_aimed_at(self) -> None:
        from nbformat.v4 import new_output

        for index in sorted(getattr(self, "_blank_after_tests", ())):
            self.nb.cells[index].outputs = [new_output("stream", name="stdout", text=AFTER_HIDDEN + "\n")]

    def preprocess(self, nb, resources=None, km=None):
        from nbclient.client import NotebookClient

        self._output_bytes = 0
        self._output_truncated = False
        self._killed_for_output = False
        report = {"kernel_died": None, "timeouts": [], "output_truncated": False}
        ContainedExecute.to_come -= 1
        cell_timeout = self.timeout
        start = time.monotonic()
        try:
            for attempt in (1, 2):
                NotebookClient.__init__(self, nb, km)  # a fresh kernel manager and client each attempt
                self.reset_execution_trackers()
                self._check_assign_resources(resources)
                self._sent_a_cell = False
                try:
                    self._run_cells(report, resources, cell_timeout, start)
                    break
                except Exception as exc:  # noqa: BLE001 - the kernel could not even start or shut down cleanly
                    self._kill_kernel()
                    reason = f"the kernel failed ({type(exc).__name__}: {exc})"
                    if attempt == 1 and not self._sent_a_cell:
                        # Before the first cell nothing the student wrote has run: a kernel that did not
                        # start (a loaded machine, a port taken) is the grader's problem; start another.
                        report["restarted"] = reason
                        self._close_box(report)
                        continue
                    if not self._sent_a_cell:  # twice no kernel, nothing of the student's ran: the grader's fault
                        report["not_started"] = reason
                    report["kernel_died"] = report["kernel_died"] or reason
                    for cell in self.nb.cells:
                        if cell.cell_type == "code" and not cell.get("outputs"):
                            cell.outputs = [_error_output("KernelDied", reason)]
                    break
        finally:
            self.timeout = cell_timeout
            self._close_box(report)
            self._blank_aimed_at()
        report["output_truncated"] = self._output_truncated
        report["started_ahead"] = getattr(self, "_started_ahead", False)
        report["seconds"] = round(time.monotonic() - start, 2)
        self.set_widgets_metadata()
        # The grader runs nbgrader in this process: it reads the report back by the notebook's folder.
        path = (resources or {}).get("metadata", {}).get("path", "")
        ContainedExecute.reports[os.path.realpath(path) if path else ""] = report
        if ContainedExecute.on_done is not None:
            ContainedExecute.on_done(os.path.realpath(path) if path else "")
        return self.nb, self.resources

    def _run_cells(self, report: dict, resources, cell_timeout: int, start: float) -> None:
        with self.setup_kernel():
            info_msg = self.wait_for_reply(self.kc.kernel_info())
            self.nb.metadata["language_info"] = info_msg["content"]["language_info"]
            self._start_ahead()
            stop_reason = None
            self._blank_after_tests: set[int] = set()
            self._first_test = next((i for i, c in enumerate(self.nb.cells) if _is_test(c)), len(self.nb.cells))
            for index, cell in enumerate(self.nb.cells):
                if cell.cell_type != "code":
                    continue
                if stop_reason is not None:
                    cell.outputs = [_error_output("KernelDied", stop_reason)]
                    continue
                remaining = self.budget - (time.monotonic() - start)
                if remaining <= 0:
                    stop_reason = f"the notebook's time budget of {self.budget} s was used up"
                    cell.outputs = [_error_output("KernelDied", stop_reason)]
                    continue
                self.timeout = max(1, int(min(cell_timeout, remaining)))
                self._sent_a_cell = True
                try:
                    self.preprocess_cell(cell, resources, index)
                except CellTimeoutError as exc:
                    stop_reason = (f"cell {index}: the kernel's output stopped reaching the grader (a message over "
                                   f"{self.max_message_bytes} bytes is refused unread); the kernel was killed"
                                   if "IOPub" in str(exc) else
                                   f"cell {index} ran longer than {self.timeout} s and ignored the interrupt; "
                                   "the kernel was killed")
                except DeadKernelError:
                    stop_reason = f"the kernel died while running cell {index} (exit, crash or memory limit)"
                except Exception as exc:  # noqa: BLE001 - anything else the kernel does must not abort grading
                    stop_reason = f"the kernel stopped responding in cell {index} ({type(exc).__name__})"
                if self._killed_for_output and stop_reason is None:
                    stop_reason = f"cell {index} flooded the output (> {self.kill_output_bytes} bytes)"
                if any(o.get("ename") == "CellTimeoutError" for o in cell.get("outputs", [])):
                    report["timeouts"].append(index)
                if stop_reason is not None:
                    self._kill_kernel()
                    cell.outputs = [*cell.get("outputs", []), _error_output("KernelDied", stop_reason)]
            report["kernel_died"] = stop_reason
