"""The grader's figures of ``make bench``: the cost of grading a submission, the sandbox's start-up
and a large class graded on a Dask cluster.
"""

from __future__ import annotations

import contextlib
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import REPO, TITLES, Row, ms, ratio, skipped


def build_class(root: str, assignments: list[str], n_students: int) -> int:
    """A synthetic class in ``root``: every student hands in every assignment, odd students with a mistake."""
    import nbformat

    from attn_grader.authoring.demo import answers_of, with_answers
    from attn_grader.checking.core import tasks_of

    count = 0
    for a in assignments:
        shutil.copytree(os.path.join(REPO, "solutions", a), os.path.join(root, "solutions", a))
        source = nbformat.read(os.path.join(REPO, "solutions", a, a + ".ipynb"), as_version=4)
        release = nbformat.read(os.path.join(REPO, "exercises", a, a + ".ipynb"), as_version=4)
        solution = answers_of(source)
        mistakes = [(t, mk) for t in tasks_of(a) for mk in t.mistakes]
        for s in range(n_students):
            answers = dict(solution)
            if s % 2:
                task, mistake = mistakes[(s // 2) % len(mistakes)]
                answers[f"{task.func_name}_answer"] = mistake.source
            d = os.path.join(root, "submitted", f"student_{s:02d}", a)
            os.makedirs(d, exist_ok=True)
            nbformat.write(with_answers(release, answers), os.path.join(d, a + ".ipynb"))
            count += 1
    return count


def _bare_execute(paths: list[str]) -> list[float]:
    """Seconds to execute each notebook with nbclient alone (kernel start to shutdown), as it is."""
    import nbformat
    from nbclient import NotebookClient

    times = []
    for path in paths:
        nb = nbformat.read(path, as_version=4)
        t0 = time.perf_counter()
        NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                       resources={"metadata": {"path": os.path.dirname(path)}}).execute()
        times.append(time.perf_counter() - t0)
    return times


def _busy_seconds() -> float:
    """CPU seconds the whole machine has been busy since boot (Linux /proc/stat; 0 elsewhere)."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:8]]
    except (OSError, ValueError):
        return 0.0
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / os.sysconf("SC_CLK_TCK")


def _autograde(course: str, jobs: int) -> tuple[float, float, str | None]:
    """Wall seconds of ``python -m attn_grader.run.autograde --jobs N`` (what ``make grade`` runs), and the
    cores the machine kept busy meanwhile (everything on it, the grader's processes most)."""
    t0, b0 = time.perf_counter(), _busy_seconds()
    proc = subprocess.run([sys.executable, "-m", "attn_grader.run.autograde", "--course", course,
                           "--jobs", str(jobs)], cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cores = (_busy_seconds() - b0) / wall
    if proc.returncode != 0:
        return wall, cores, (f"autograde --jobs {jobs} exited with {proc.returncode}: "
                             f"{proc.stderr.strip().splitlines()[-1:]}")
    return wall, cores, None


def fig_grading(quick: bool) -> list[Row]:
    """A synthetic class through ``python -m attn_grader.run.autograde`` with 1 and 2 jobs, against bare
    nbclient execution of the same notebooks.

    Rounds are interleaved so that a slow spell of the shared machine falls on both sides: bare
    execution of the first half of the class, grading with 1, 2, 2, 1 jobs (each on a fresh copy of
    the class), bare execution of the second half. Each JOBS figure is the mean of its runs.
    """
    figure = TITLES["grading"]
    try:
        import attn_grader.run.autograde  # noqa: F401
    except ImportError as exc:
        return [skipped(figure, f"attn_grader.run.autograde not importable ({exc})")]
    wanted = ["ps04_step_by_step", "ps12_efficient"]
    have = [a for a in wanted if os.path.isfile(os.path.join(REPO, "exercises", a, a + ".ipynb"))]
    if len(have) < 2:
        others = sorted(os.listdir(os.path.join(REPO, "exercises")))
        have = (have + [a for a in others if a not in have])[:2]
    n_students = 2 if quick else 10
    order = [1, 2] if quick else [1, 2, 2, 1]
    tmp = tempfile.mkdtemp(prefix="bench-grading-")
    try:
        template = os.path.join(tmp, "class")
        n_sub = build_class(template, have, n_students)
        subs = sorted(glob.glob(os.path.join(template, "submitted", "*", "*", "*.ipynb")))
        bare = _bare_execute(subs[: len(subs) // 2])
        wall: dict[int, list[float]] = {1: [], 2: []}
        busy: dict[int, list[float]] = {1: [], 2: []}
        csvs: dict[int, list] = {}
        for i, jobs in enumerate(order):
            course = os.path.join(tmp, f"run{i}_jobs{jobs}")
            shutil.copytree(template, course)
            seconds, cores, error = _autograde(course, jobs)
            if error:
                return [skipped(figure, error)]
            wall[jobs].append(seconds)
            busy[jobs].append(cores)
            with open(os.path.join(course, "grades.csv")) as f:
                rows = list(csv.reader(f))
            if csvs.setdefault(jobs, rows) != rows:
                return [skipped(figure, f"two runs with --jobs {jobs} gave different grades.csv")]
        bare += _bare_execute(subs[len(subs) // 2:])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    w1, w2 = float(np.mean(wall[1])), float(np.mean(wall[2]))
    per_sub = w1 / n_sub
    r_cost = per_sub / float(np.mean(bare))
    r_jobs = w1 / w2
    same = csvs[1] == csvs[2]
    runs = "" if quick else "; mean of 2 runs each, in the order 1, 2, 2, 1 jobs"
    return [
        Row(figure, f"per submission, autograde --jobs 1 ÷ bare nbclient execution ({n_sub} submissions of "
            f"{', '.join(have)}, half with a catalogued mistake)", ratio(r_cost), "≤ 1.3×", r_cost <= 1.3,
            f"{per_sub:.2f} s per submission (the whole run: start-up, sanitising, kernel, re-check, feedback, "
            f"gradebook) vs {np.mean(bare):.2f} s bare (each of the {len(bare)} notebooks once){runs}"),
        Row(figure, "speed-up, JOBS=1 ÷ JOBS=2, same class", ratio(r_jobs), "≥ 1.8× and identical grades.csv",
            r_jobs >= 1.8 and same, f"{w1:.1f} s vs {w2:.1f} s; grades.csv "
            f"{'identical' if same else 'DIFFERENT'} ({len(csvs[1]) - 1} rows){runs}; cores busy: "
            f"{np.mean(busy[1]):.2f} with 1 worker, {np.mean(busy[2]):.2f} with 2, of {os.cpu_count()} "
            "(one worker already keeps more than one core busy: its next kernel starts while a notebook "
            "runs and its re-checks run beside nbgrader, so 2 workers gain at most cores ÷ that)"),
    ]


DASK_PROBE = """
import json, sys, time
import nbformat
from distributed import Client, LocalCluster
from attn_grader.run.course import Course, Options
from attn_grader.run.discover import Submitted

def noop(course, batch, opts, topic):
    return []

release = nbformat.read(sys.argv[1], as_version=4)
raw = open(sys.argv[1], "rb").read()
course = Course(root="/nonexistent", assignments=["a"], releases={"a": ("a.ipynb", release)},
                template=b"x" * 300_000, secret=b"s" * 32)
batch = [(Submitted(f"s{i}", "a", f"s{i:05d}", notebook=raw), {"notebook": release, "answers": {}, "flags": [],
          "notes": []}) for i in range(8)]
with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, Client(cl) as c:
    for _ in range(10):
        c.submit(noop, course, batch, Options(), None, pure=False).result()
    times = []
    for _ in range(int(sys.argv[2])):
        t0 = time.perf_counter()
        c.submit(noop, course, batch, Options(), None, pure=False).result()
        times.append(time.perf_counter() - t0)
print(json.dumps(times))
"""


def _grade_watching_memory(course: str, jobs: int) -> tuple[float, list[tuple[int, int]], str | None]:
    """Grade ``course`` with ``--jobs``; sample the grading process's resident memory at each result."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "attn_grader.run.autograde", "--course", course,
                             "--jobs", str(jobs)],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    me = psutil.Process(proc.pid)  # under unshare the grader keeps this pid (exec, no fork)
    samples, count = [], 0
    for line in proc.stdout:
        if line.startswith("[") and not line.startswith("[ran "):
            count += 1
            with contextlib.suppress(psutil.NoSuchProcess):
                samples.append((count, me.memory_info().rss))
    err = proc.stderr.read()
    if proc.wait() != 0:
        return time.perf_counter() - t0, samples, f"autograde exited with {proc.returncode}: {err[-300:]}"
    return time.perf_counter() - t0, samples, None


def fig_scale(quick: bool) -> list[Row]:
    """Dask's cost per task (a real batch's payload, a task that does nothing, on a LocalCluster of 2)
    and the one writer's memory while a class of 500 small submissions is graded with 2 workers: it
    must not grow with the class (results are written as they arrive, not gathered)."""
    figure = TITLES["scale"]
    a = "ps04_step_by_step"
    exercise = os.path.join(REPO, "exercises", a, a + ".ipynb")
    reps = 50 if quick else 200
    out = subprocess.run([sys.executable, "-c", DASK_PROBE, exercise, str(reps)], cwd=REPO, capture_output=True,
                         text=True)
    if out.returncode != 0:
        return [skipped(figure, f"the Dask probe failed: {out.stderr.strip().splitlines()[-1:]}")]
    times = json.loads(out.stdout.strip().splitlines()[-1])
    first, last = float(np.median(times[: reps // 2])), float(np.median(times[reps // 2:]))
    rows = [Row(figure, f"Dask's round trip per task (a batch of 8 notebooks and the course; median of {reps})",
                ms(float(np.median(times))), "reported", None,
                f"first half {ms(first)}, second half {ms(last)}; a submission takes about a second to grade")]
    n = 60 if quick else 500
    tmp = tempfile.mkdtemp(prefix="bench-scale-")
    try:
        n_sub = build_class(tmp, [a], n)
        seconds, samples, error = _grade_watching_memory(tmp, 2)
        with open(os.path.join(tmp, "grades.csv")) as f:
            statuses = [row["status"] for row in csv.DictReader(f)]
        with open(os.path.join(tmp, "grading_report.md")) as f:
            restarted = f.read().count("did not start")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if error:
        return [*rows, skipped(figure, error)]
    bad = sum(s != "ok" for s in statuses)
    early = [rss for k, rss in samples if k <= n_sub // 5]
    late = [rss for k, rss in samples if k > n_sub - n_sub // 5]
    growth = (np.median(late) - np.median(early)) / np.median(early)
    rows.append(Row(figure, f"the one writer's memory, last fifth ÷ first fifth of {n_sub} results (2 workers)",
                    ratio(1 + growth), "≤ 1.05×", bool(growth <= 0.05),
                    f"{np.median(early) / 2**20:.0f} MiB then {np.median(late) / 2**20:.0f} MiB; "
                    f"{n_sub} submissions graded in {seconds:.0f} s, {seconds / n_sub:.2f} s each; "
                    f"{bad} rows not ok, {restarted} kernels started a second time"))
    return rows


SANDBOX_PROBE = """
import json, os, subprocess, sys, tempfile, time
from attn_grader.isolation import sandbox
from attn_grader.run.course import PACKAGES
from attn_grader.checking.recheck import HARNESS, HARNESS_IN_BOX
reps = int(sys.argv[1])
staged = sandbox.stage([*PACKAGES, HARNESS]) is not None
boxes = sandbox.boxes_folder(tempfile.gettempdir())
prog = [sys.executable, "-I", "-S", "-c", "pass"]
specs = {"kernel": {"ro": PACKAGES, "nproc": 256}, "re-check": {"ro_files": {HARNESS_IN_BOX: HARNESS}, "nproc": 64}}
times = {"bare": [], **{k: [] for k in specs}}
for _ in range(reps):
    for name in times:
        box = tempfile.mkdtemp(dir=boxes)
        argv = prog if name == "bare" else sandbox.command({"work": box, **specs[name]}, prog)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True)
        times[name].append(time.perf_counter() - t0)
        os.rmdir(box)
print(json.dumps({"staged": staged, "times": times}))
"""


def fig_sandbox(quick: bool) -> list[Row]:
    """Start-up of the grading sandbox: a program started through attn_grader.isolation.sandbox minus the same
    program started bare, as the grader starts a kernel (the packages bound) and a re-check (the
    harness file bound): as root, in a mount namespace of its own with the sources staged once per run
    (attn_grader.isolation.sandbox.stage). Interleaved runs; medians."""
    figure = TITLES["sandbox"]
    from attn_grader.isolation import sandbox

    why = sandbox.unusable()
    if why:
        return [skipped(figure, why)]
    reps = 7 if quick else 25
    cmd = [sys.executable, "-c", SANDBOX_PROBE, str(reps)]
    env = {**os.environ}
    env.pop(sandbox.STAGED_ENV, None)
    if os.geteuid() == 0 and shutil.which("unshare"):
        cmd = ["unshare", "--mount", "--propagation", "private", *cmd]
        env[sandbox.MOUNTS_ENV] = "1"
    out = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)
    times = out["times"]
    bare = float(np.median(times["bare"]))
    how = ("root: sources staged once per run, then each launcher drops to its uid and runs bwrap" if out["staged"]
           else "unprivileged bwrap" if os.geteuid() else "root: sources staged by each launcher")
    rows = []
    for name in ("kernel", "re-check"):
        extra = float(np.median(times[name])) - bare
        rows.append(Row(figure, f"start-up added per {name} (python -I -S -c pass in the sandbox − bare; median "
                        f"of {reps})", ms(extra), "≤ 50 ms", extra <= 0.050,
                        f"{ms(float(np.median(times[name])))} in the sandbox vs {ms(bare)} bare; {how}"))
    return rows
