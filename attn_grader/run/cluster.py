"""Spreading the submissions over processes and machines: Dask distributed, the one engine.

``make grade JOBS=N`` starts a :class:`distributed.LocalCluster` of N single-threaded worker
processes on this machine; ``make grade SCHEDULER=tcp://host:8786`` sends the same work to a
cluster that is already running (``dask scheduler`` / ``dask worker``, dask-jobqueue on Slurm or
PBS, dask-kubernetes, Dask Gateway).  Either way:

- **the unit of work** is a batch of at most 8 submissions of one assignment (:func:`batches`):
  nbgrader's set-up of an assignment is paid once per batch, and a worker that dies loses one batch;
- **the notebook's bytes travel with the task** (:func:`grade_batch` runs on a worker, in a scratch
  folder of its own); the scores, the re-check's verdicts and the feedback come back as its result;
  workers write nothing shared: the process that runs ``make grade`` writes every output, each
  result as it arrives (:func:`grade_all` calls ``report``);
- **faults**: a worker that dies in the middle of a batch costs nothing but time: the scheduler runs
  the batch again on another worker (the nanny starts a new one).  A batch that kills every worker it
  lands on is split into single submissions, and a submission that still kills its workers ends as an
  ungradable row that says so (after the scheduler's ``allowed-failures`` tries).  A cluster that
  says nothing for longer than a notebook may take is stuck, not busy: its busy workers are restarted.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import signal
import tempfile
import threading
import time
import uuid

# Ctrl-C: while the assignments are prepared it interrupts at once; while the class is graded it is
# taken at the next turn of grade_all's loop (never inside a call into Dask, which a KeyboardInterrupt
# could leave half done); while the grades are written and the cluster closed, it waits for that.
PHASE = {"now": "prepare"}  # prepare | grading | finishing
STOP = threading.Event()


def on_sigint(signum, frame) -> None:
    if PHASE["now"] == "grading":
        STOP.set()
    elif PHASE["now"] == "finishing":
        print("\nwriting what was graded and closing the workers: a moment", flush=True)
    else:
        raise KeyboardInterrupt


FAULT_ENV = "ATTN_GRADER_FAULT"  # tests only: {"kill": student} or {"stall_once": flag file}, read on a worker
SCRATCH_ENV = "ATTN_GRADER_SCRATCH"  # the grader's scratch folder, shared with the workers it starts
BATCH_CAP = 8  # submissions in one task at most


def batches(items: list, assignments: list[str], workers: int, cap: int = BATCH_CAP) -> list[list]:
    """The tasks: each a run of submissions of one assignment, at most ``cap`` of them, and at least one
    per worker for each assignment (so every worker has work).  Batches of equal size: a worker pays
    nbgrader's set-up once per batch, so fewer, fuller batches are cheaper; the cap keeps a worker that
    dies from taking much work with it, and the batches many enough to share out evenly."""
    groups: dict[str, list] = {}
    for it in items:
        groups.setdefault(it[0].assignment, []).append(it)
    order = {a: i for i, a in enumerate(assignments)}
    out = []
    for a in sorted(groups, key=lambda a: order.get(a, len(order))):
        group = groups[a]
        k = min(len(group), max(max(1, workers), math.ceil(len(group) / cap)))  # tasks for it
        size, extra = divmod(len(group), k)
        start = 0
        for i in range(k):  # k runs whose sizes differ by one at most
            end = start + size + (i < extra)
            out.append(group[start:end])
            start = end
    return out


# ----------------------------------------------------------------------------------------- on a worker

def _fault(batch) -> None:
    """Fault injection for the tests of this module (never set in a real run)."""
    spec = json.loads(os.environ.get(FAULT_ENV) or "{}")
    if spec.get("kill") in {s.student for s, _ in batch}:
        os.kill(os.getpid(), signal.SIGKILL)
    flag = spec.get("stall_once")
    if flag and not os.path.exists(flag):
        open(flag, "w").close()
        time.sleep(3600)


def dask_setup(worker=None) -> None:
    """Run by each worker as it starts (Dask's preload hook; ``dask worker --preload attn_grader.run.cluster``):
    what every batch needs is imported and set up then, while the grading process prepares the
    assignments, not on a worker's first batch (half a second)."""
    from nbgrader.converters import Autograde, GenerateFeedback  # noqa: F401

    from ..isolation import execute  # noqa: F401
    from . import batch  # noqa: F401
    from .patches import nbgrader_setup

    nbgrader_setup()


def grade_batch(course, batch: list, opts, topic: str | None = None) -> list:
    """Grade one batch on this worker, in a scratch folder of its own; return its Results.
    ``topic``: where to log "ran" events (a notebook has run) for the progress lines."""
    from ..isolation import sandbox
    from . import batch as grading_batch
    from .patches import nbgrader_setup

    _fault(batch)
    if opts.sandbox:
        why = sandbox.unusable()
        if why:  # this worker's machine cannot sandbox: no grade from here, and the row says why
            raise RuntimeError(f"this worker cannot run the sandbox: {why}")
    nbgrader_setup()
    ran = None
    if topic:
        with contextlib.suppress(ValueError):
            from distributed import get_worker

            worker = get_worker()
            ran = lambda student, a: worker.log_event(topic, [student, a])  # noqa: E731
    shared = os.environ.get(SCRATCH_ENV, "")
    base = shared if shared and os.path.isdir(shared) else None
    scratch = tempfile.mkdtemp(prefix="attn-batch-", dir=base)  # 0700
    try:
        return grading_batch.grade_items(course, batch, scratch, opts, ran=ran)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


# ----------------------------------------------------------------------------------------- the client

class NoCluster(RuntimeError):
    """The scheduler given with --scheduler could not be reached."""


class Engine:
    """A Dask client, connected in the background: a local cluster's workers start (and import the
    grader) while the grading process prepares the assignments.  :attr:`client` waits for it."""

    def __init__(self, jobs: int, scheduler: str | None, verbose: bool = True):
        from concurrent.futures import ThreadPoolExecutor

        self._scheduler = scheduler
        self._stack = contextlib.ExitStack()
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="attn-dask-start")
        self._future = self._pool.submit(self._open, jobs, scheduler, verbose)

    def _open(self, jobs: int, scheduler: str | None, verbose: bool):
        import logging

        import dask
        from distributed import Client, LocalCluster

        for name in ("distributed", "distributed.worker", "distributed.nanny", "distributed.scheduler"):
            logging.getLogger(name).setLevel(logging.ERROR)
        if scheduler:
            client = Client(scheduler, timeout="30s", set_as_default=False)  # not a `with`: closed by close()
            self._stack.callback(client.close)
            if verbose:
                n = len(client.scheduler_info(n_workers=-1).get("workers", {}))
                print(f"grading on the cluster at {scheduler} ({n} workers now); dashboard: "
                      f"{client.dashboard_link}" + ("" if n else "; waiting for workers to join"), flush=True)
            return client
        self._stack.enter_context(dask.config.set({"distributed.scheduler.allowed-failures": 2,
                                                   # one task at a time per single-threaded worker
                                                   "distributed.scheduler.worker-saturation": 1.0,
                                                   "distributed.admin.system-monitor.gil.enabled": False}))
        cluster = self._stack.enter_context(LocalCluster(
            n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None, host="127.0.0.1",
            memory_limit=0, silence_logs=logging.ERROR,
            preload=["attn_grader.run.cluster"]))  # dask_setup: nbgrader and the grader imported as a worker starts
        client = Client(cluster, set_as_default=False)
        self._stack.callback(client.close)
        return client

    @property
    def client(self):
        try:
            return self._future.result()
        except (OSError, TimeoutError) as exc:
            raise NoCluster(f"no Dask scheduler answered at {self._scheduler} ({type(exc).__name__}: {exc})") from exc

    def close(self, seconds: float = 60) -> None:
        """Close the client and the local cluster; give up waiting after ``seconds`` (the workers die
        with this process anyway: Dask's nanny watches its parent)."""
        def close_all():
            with contextlib.suppress(Exception):
                self._future.result()  # still starting: let it finish, then close what it opened
            with contextlib.suppress(Exception):
                self._stack.close()

        closer = threading.Thread(target=close_all, name="attn-dask-close", daemon=True)
        closer.start()
        closer.join(seconds)
        self._pool.shutdown(wait=False)


@contextlib.contextmanager
def connect(jobs: int, scheduler: str | None, verbose: bool = True):
    """An :class:`Engine`: a new LocalCluster of ``jobs`` single-threaded worker processes, or the
    cluster whose scheduler is at ``scheduler``; started now, in the background."""
    engine = Engine(jobs, scheduler, verbose)
    try:
        yield engine
    finally:
        engine.close()


SINGLE_TRIES = 3  # a submission alone whose worker died, before its row says "died every time"


def grade_all(client, course, items: list, opts, report, make_failed, ran=None,
              stall_seconds: float = 0) -> None:
    """Grade ``items`` on the cluster; ``report(result)`` as each arrives (in this process), ``ran``
    as each notebook has run; every item is reported once.  ``make_failed(item, why)``: the row of a
    submission that no worker could grade."""
    from distributed import KilledWorker

    workers = max(1, len(client.scheduler_info(n_workers=-1).get("workers", {})))
    topic = f"attn-ran-{uuid.uuid4().hex}"
    heard = [time.monotonic()]
    lock = threading.Lock()

    def on_event(event):
        heard[0] = time.monotonic()
        if ran is not None:
            with lock:
                ran(*event[1])

    client.subscribe_topic(topic, on_event)
    pending: dict = {}

    tries: dict[int, int] = {}  # a single submission's tries so far (by the item's id)

    def submit(batch):
        fut = client.submit(grade_batch, course, batch, opts, topic, pure=False,
                            key=f"grade-{batch[0][0].assignment}-{uuid.uuid4().hex[:12]}")
        pending[fut] = batch
        if len(batch) == 1:
            tries[id(batch[0])] = tries.get(id(batch[0]), 0) + 1

    for batch in batches(items, course.assignments, workers):
        submit(batch)
    stall = stall_seconds or opts.budget + opts.recheck_seconds + 180
    PHASE["now"] = "grading"
    try:
        while pending:
            if STOP.is_set():
                raise KeyboardInterrupt
            finished = [f for f in pending if f.done()]
            if not finished:
                if time.monotonic() - heard[0] > stall:
                    busy = [w for w, keys in client.processing().items() if keys]
                    with contextlib.suppress(Exception):
                        client.restart_workers(busy, raise_for_error=False)
                    heard[0] = time.monotonic()
                time.sleep(0.2)
                continue
            for fut in finished:
                batch = pending.pop(fut)
                heard[0] = time.monotonic()
                lost = False  # a finished batch's result lives on its worker: one killed since lost it
                if fut.status == "finished":
                    try:
                        results = fut.result()
                    except Exception as error:  # noqa: BLE001 - KilledWorker, a lost key: graded again below
                        exc, lost = error, True
                    else:
                        for r in results:
                            report(r)
                        continue
                else:
                    exc = fut.exception()
                if len(batch) > 1:  # one of them may be the cause: each alone now
                    for item in batch:
                        submit([item])
                    continue
                # A task waiting in the queue of a worker that another task killed counts that death
                # too (a single-threaded worker may hold two: Dask's worker-saturation), so an
                # innocent submission queued behind a poison one can be "killed" as often: alone, it
                # is tried again, up to SINGLE_TRIES times.
                if (lost or isinstance(exc, KilledWorker)) and tries.get(id(batch[0]), 0) < SINGLE_TRIES:
                    fut.release()
                    submit(batch)
                    continue
                why = (f"the grading worker died every time ({exc})" if isinstance(exc, KilledWorker)
                       else f"the grading worker failed ({type(exc).__name__}: {str(exc)[:200]})")
                report(make_failed(batch[0], why))
                fut.release()
    finally:
        PHASE["now"] = "finishing"
        with contextlib.suppress(Exception):
            client.unsubscribe_topic(topic)
        for fut in pending:
            fut.cancel()
