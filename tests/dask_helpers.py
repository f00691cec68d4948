"""A real Dask cluster for the tests: a scheduler and workers started with Dask's own command-line
tools (``dask scheduler``, ``dask worker``) as separate processes on 127.0.0.1."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

BIN = os.path.dirname(sys.executable)


def _wait_for(what, predicate, seconds=120):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        got = predicate()
        if got:
            return got
        time.sleep(0.3)
    raise TimeoutError(f"no {what} after {seconds} s")


@contextlib.contextmanager
def dask_cluster(folder: str, workers: int = 2, worker_env: dict | None = None, scheduler_env: dict | None = None):
    """Yield (scheduler address, [worker processes]) of a cluster running in separate processes."""
    folder = str(folder)
    os.makedirs(folder, exist_ok=True)
    sfile = os.path.join(folder, "scheduler.json")
    logs = []
    procs = []

    def start(argv, env, name):
        log = open(os.path.join(folder, name + ".log"), "w")  # noqa: SIM115 - closed below
        logs.append(log)
        p = subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=log, stderr=subprocess.STDOUT,
                             cwd=folder, start_new_session=True)
        procs.append(p)
        return p

    try:
        start([os.path.join(BIN, "dask"), "scheduler", "--host", "127.0.0.1", "--port", "0",
               "--no-dashboard", "--scheduler-file", sfile], scheduler_env, "scheduler")
        address = _wait_for("scheduler file", lambda: os.path.exists(sfile) and os.path.getsize(sfile) and
                            json.load(open(sfile)).get("address"))
        ws = [start([os.path.join(BIN, "dask"), "worker", "--scheduler-file", sfile, "--nthreads", "1",
                     "--nworkers", "1", "--memory-limit", "0", "--no-dashboard", "--name", f"w{k}",
                     "--preload", "attn_grader.run.cluster"],
                    worker_env, f"worker{k}") for k in range(workers)]
        from distributed import Client

        with Client(address, timeout="60s") as c:
            c.wait_for_workers(workers, timeout=120)
        yield address, ws
    finally:
        for p in reversed(procs):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(p.pid, signal.SIGKILL)
                p.wait()
        for log in logs:
            log.close()


def busy_worker(address: str) -> int | None:
    """The pid of a worker process that is grading now (the scheduler says it has tasks)."""
    from distributed import Client

    with Client(address, timeout="30s") as c:
        pids = c.run(os.getpid)
        busy = [w for w, keys in c.processing().items() if keys]
    return pids[busy[0]] if busy else None
