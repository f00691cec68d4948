"""The figures of ``make bench``: each function returns table rows (see :class:`bench.Row`)."""

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

from attn_ref.attention import attend_one, scaled_dot_product_attention, self_attention
from attn_ref.efficient import blocked_attention, compare_times, peak_bytes

from . import Row, ratio, skipped

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
D = 64  # head dimension of every attention figure


def _ms(seconds: float) -> str:
    return f"{1e3 * seconds:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


@contextlib.contextmanager
def threads(n: int):
    """NumPy's BLAS (threadpoolctl) and PyTorch both on ``n`` threads."""
    import torch
    from threadpoolctl import threadpool_limits

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        torch.set_num_threads(old)


def _qkv(n: int, d: int = D, seed: int = 0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))  # (n, d) each


def _sdpa_4d(q, k, v):
    """torch's SDPA on (1, 1, n, d) views: the only form that takes the fused CPU kernel."""
    import torch
    import torch.nn.functional as F

    tq, tk, tv = (torch.from_numpy(a)[None, None] for a in (q, k, v))  # (1, 1, n, d)
    return lambda: F.scaled_dot_product_attention(tq, tk, tv)


def _repeat(n: int) -> int:
    return 15 if n <= 256 else 7 if n <= 1024 else 3 if n <= 4096 else 2


def fig_sdpa(quick: bool, sizes: list[int] | None = None, thread_counts=(1, 2)) -> list[Row]:
    """attn_ref's matrix form on pre-projected q, k, v against torch's fused SDPA."""
    rows = []
    sizes = sizes or ([256, 1024] if quick else [256, 1024, 4096])
    for t in thread_counts:
        with threads(t):
            for n in sizes:
                q, k, v = _qkv(n)
                med = compare_times({"numpy": lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v),
                                     "torch": _sdpa_4d(q, k, v)}, repeat=_repeat(n))
                r = med["numpy"] / med["torch"]
                target = n == 1024
                rows.append(Row(TITLES["sdpa"], f"attn_ref.scaled_dot_product_attention, n = {n}, d = {D}, "
                                f"float32, {t} thread{'s' if t > 1 else ''}", ratio(r), "≤ 1.5×" if target else "",
                                (r <= 1.5) if target else None,
                                f"{_ms(med['numpy'])} vs {_ms(med['torch'])} (SDPA 4-D, fused)"))
    return rows


def fig_loop(quick: bool) -> list[Row]:
    """The lecture's per-query loop (attend_one for each i) against the matrix form."""
    rows = []
    rng = np.random.default_rng(1)
    W = [rng.standard_normal((D, D)).astype(np.float32) for _ in range(3)]
    with threads(1):
        for n in [64, 128, 256] if quick else [64, 128, 256, 512, 1024]:
            x = rng.standard_normal((n, D)).astype(np.float32)  # (n, d_in): rows; the loop reads columns a^i
            a = np.ascontiguousarray(x.T)  # (d_in, n)

            def loop(a=a, n=n):
                return np.stack([attend_one(a, i, *W).b for i in range(n)])  # (n, d_v)

            med = compare_times({"loop": loop, "matrix": lambda x=x: self_attention(x, *W)},
                                repeat=3 if n <= 256 else 1, warmup=1 if n <= 256 else 0)
            rows.append(Row(TITLES["loop"], f"attend_one for each i vs self_attention, n = {n}, d = {D}, "
                            "1 thread", ratio(med["loop"] / med["matrix"]), "", None,
                            f"{_ms(med['loop'])} vs {_ms(med['matrix'])}"))
    return rows


def fig_banded(quick: bool) -> list[Row]:
    """Truncated attention (band width w = 64): time and peak memory as n grows 16-fold."""
    try:
        from attn_ref.local import banded_attention
    except ImportError:
        return [skipped(TITLES["banded"], "attn_ref.local.banded_attention not present")]
    w = 64
    sizes = [1024, 2048, 4096] if quick else [1024, 2048, 4096, 8192, 16384]
    times, peaks = {}, {}
    with threads(1):
        for n in sizes:
            q, k, v = _qkv(n)
            times[n] = compare_times({"band": lambda q=q, k=k, v=v: banded_attention(q, k, v, w)}, repeat=3)["band"]
            peaks[n] = peak_bytes(banded_attention, q, k, v, w)
    lo, hi = sizes[0], sizes[-1]
    grow = hi // lo
    t_ratio, m_ratio = times[hi] / times[lo], peaks[hi] / peaks[lo]
    t_target = 20 * grow / 16  # 20x for 16x n, scaled in --quick
    per = ", ".join(f"{n}: {_ms(times[n])}" for n in sizes)
    return [
        Row(TITLES["banded"], f"banded_attention time, w = {w}, n {lo} → {hi} ({grow}× n), 1 thread",
            ratio(t_ratio), f"≤ {t_target:.0f}×", t_ratio <= t_target, per),
        Row(TITLES["banded"], f"banded_attention peak memory, w = {w}, n {lo} → {hi} ({grow}× n)",
            ratio(m_ratio), f"≤ {1.25 * grow:.0f}× (O(n·w))", m_ratio <= 1.25 * grow,
            f"{peaks[hi] / 2**20:.1f} MiB at n = {hi}: {peaks[hi] / (hi * (2 * w + 1)):.1f} bytes per n·(2w+1)"),
    ]


def fig_blocked(quick: bool) -> list[Row]:
    """blocked_attention (NumPy, online softmax) against torch's fused SDPA; GFLOP/s and peak memory."""
    rows = []
    sizes = [1024, 4096] if quick else [1024, 4096, 16384]
    peaks = {}
    for t in (1, 2):
        with threads(t):
            for n in sizes:
                q, k, v = _qkv(n)
                if n not in peaks:
                    peaks[n] = peak_bytes(blocked_attention, q, k, v)
                med = compare_times({"blocked": lambda q=q, k=k, v=v: blocked_attention(q, k, v),
                                     "torch": _sdpa_4d(q, k, v)}, repeat=_repeat(n), warmup=1 if n <= 4096 else 0)
                r = med["blocked"] / med["torch"]
                target = n == 4096 and t == 1
                flop = 4 * n * n * D  # the two products q k^T and p v
                rows.append(Row(TITLES["blocked"], f"n = {n}, d = {D}, float32, {t} thread"
                                f"{'s' if t > 1 else ''}", ratio(r), "≤ 1.3×" if target else "",
                                (r <= 1.3) if target else None,
                                f"{flop / med['blocked'] / 1e9:.1f} vs {flop / med['torch'] / 1e9:.1f} GFLOP/s; "
                                f"blocked peak {peaks[n] / 2**20:.1f} MiB (n×n floats: {4 * n * n / 2**20:.0f} MiB)"))
    return rows


def fig_peak(quick: bool) -> list[Row]:
    """Attention kernels' GFLOP/s against a large float32 matmul on the same machine (one thread)."""
    import torch

    m = 1024 if quick else 2048
    rng = np.random.default_rng(2)
    A, B = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    tA, tB = torch.from_numpy(A), torch.from_numpy(B)
    n = 2048 if quick else 4096
    q, k, v = _qkv(n)
    with threads(1):
        med = compare_times({"numpy matmul": lambda: A @ B, "torch matmul": lambda: tA @ tB,
                             "SDPA 4-D (fused)": _sdpa_4d(q, k, v),
                             "blocked_attention": lambda: blocked_attention(q, k, v),
                             "attn_ref matrix form": lambda: scaled_dot_product_attention(q, k, v)}, repeat=3)
    peak = max(2 * m**3 / med["numpy matmul"], 2 * m**3 / med["torch matmul"])
    rows = [Row(TITLES["peak"], f"float32 matmul {m}×{m}×{m}, 1 thread (the reference)",
                f"{peak / 1e9:.1f} GFLOP/s", "", None,
                f"numpy {2 * m**3 / med['numpy matmul'] / 1e9:.1f}, torch {2 * m**3 / med['torch matmul'] / 1e9:.1f}")]
    for name in ("SDPA 4-D (fused)", "blocked_attention", "attn_ref matrix form"):
        gf = 4 * n * n * D / med[name]
        rows.append(Row(TITLES["peak"], f"{name}, n = {n}, d = {D}, 1 thread", f"{100 * gf / peak:.0f}%",
                        "", None, f"{gf / 1e9:.1f} GFLOP/s (counting the two products' 4n²d only)"))
    return rows


def fig_feedback(quick: bool) -> list[Row]:
    """A student's feedback loop: a released notebook, answered, executed with nbclient."""
    import nbformat
    from nbclient import NotebookClient

    from attn_grader.demo import answers_of, with_answers

    released = os.path.join(REPO, "exercises")
    names = sorted(os.listdir(released)) if os.path.isdir(released) else []
    name = "ps04_step_by_step" if "ps04_step_by_step" in names else (names[0] if names else None)
    if name is None:
        return [skipped(TITLES["feedback"], "no released notebook under exercises/")]
    release = nbformat.read(os.path.join(REPO, "exercises", name, name + ".ipynb"), as_version=4)
    source = nbformat.read(os.path.join(REPO, "solutions", name, name + ".ipynb"), as_version=4)
    answered = with_answers(release, answers_of(source))
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(2 if quick else 3):
            nb = nbformat.from_dict(answered)
            t0 = time.perf_counter()
            NotebookClient(nb, timeout=60, kernel_name="python3", resources={"metadata": {"path": tmp}}).execute()
            times.append(time.perf_counter() - t0)
    t = float(np.median(times))
    return [Row(TITLES["feedback"], f"exercises/{name}, answered, run with nbclient: kernel start to last visible "
                "test", f"{t:.2f} s", "≤ 2 s", t <= 2.0, f"median of {len(times)}")]


def _cache_times(build_dir: str) -> dict[str, float]:
    """Per-chapter execution seconds from the book build's jupyter-cache."""
    from jupyter_cache import get_cache

    out = {}
    for path in glob.glob(os.path.join(build_dir, "**", ".jupyter_cache"), recursive=True):
        for rec in get_cache(path).list_cache_records():
            secs = (rec.data or {}).get("execution_seconds")
            if secs is not None:
                out[os.path.relpath(rec.uri, REPO)] = float(secs)
    return out


def _problems(log: str) -> str:
    """The build log's warnings and errors, counted, with the first two (ANSI colours removed)."""
    import re

    lines = [re.sub(r"\x1b\[[0-9;]*m", "", ln).strip() for ln in log.splitlines()]
    found = [ln for ln in lines if ("WARNING" in ln or "ERROR" in ln) and "Kernel is running over TCP" not in ln]
    if not found:
        return "no warning found in the log"
    short = [ln.replace(REPO + "/", "")[:160] for ln in found[:2]]
    return f"{len(found)} warnings/errors, first: " + " / ".join(short)


def fig_book(quick: bool) -> list[Row]:
    """The book built cold (empty cache: every chapter executed) and warm (nothing changed), in English
    and then in Chinese from the same execution cache (book/_ext/i18n.py), as `make book` builds it."""
    jb = os.path.join(os.path.dirname(sys.executable), "jupyter-book")
    if not os.path.exists(jb):
        return [skipped(TITLES["book"], "no jupyter-book next to this Python")]
    tmp = tempfile.mkdtemp(prefix="bench-book-")
    try:
        cmd = [jb, "build", REPO, "--path-output", tmp, "-W", "-n", "--keep-going"]
        zh = [sys.executable, os.path.join(REPO, "book", "_ext", "i18n.py"), "zh", os.path.join(tmp, "_build")]
        env = dict(os.environ, MPLBACKEND="Agg", PYTHONHASHSEED="0", PYDEVD_DISABLE_FILE_VALIDATION="1")
        runs = {}
        for kind in ("cold", "warm"):
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
            t1 = time.perf_counter()
            proc_zh = subprocess.run(zh, cwd=REPO, env=env, capture_output=True, text=True)
            runs[kind] = (t1 - t0, time.perf_counter() - t1, proc.returncode or proc_zh.returncode,
                          _problems(proc.stdout + proc.stderr + proc_zh.stdout + proc_zh.stderr))
        chapters = _cache_times(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rows = []
    for kind, limit in (("cold", 300.0), ("warm", 10.0)):
        secs, _, rc, problems = runs[kind]
        rows.append(Row(TITLES["book"], f"{kind}: jupyter-book build -W -n --keep-going "
                        f"({'empty cache, every chapter executed' if kind == 'cold' else 'nothing changed'})",
                        f"{secs:.1f} s", f"≤ {limit:.0f} s", secs <= limit,
                        "build succeeded" if rc == 0 else f"build exited with {rc}; {problems}"))
    en, zh_secs, rc, problems = runs["cold"]
    rows.append(Row(TITLES["book"], "cold, both languages: the English build, then the Chinese one (make book)",
                    f"{en + zh_secs:.1f} s", "≤ 240 s", en + zh_secs <= 240,
                    f"English {en:.1f} s + Chinese {zh_secs:.1f} s" + ("" if rc == 0 else f"; {problems}")))
    zh_warm = runs["warm"][1]
    rows.append(Row(TITLES["book"], "warm: what the Chinese edition adds (its build, nothing executed)",
                    f"{zh_warm:.1f} s", "≤ 30 s", zh_warm <= 30, "from the English build's execution cache"))
    if chapters:
        slowest = max(chapters, key=chapters.get)
        top = sorted(chapters.items(), key=lambda kv: -kv[1])[:3]
        rows.append(Row(TITLES["book"], f"slowest chapter execution of {len(chapters)} (jupyter-cache)",
                        f"{chapters[slowest]:.1f} s", "≤ 60 s", chapters[slowest] <= 60,
                        ", ".join(f"{os.path.basename(p)} {s:.1f} s" for p, s in top)))
    else:
        rows.append(skipped(TITLES["book"], "no per-chapter execution times found in the build's jupyter-cache"))
    return rows


def build_class(root: str, assignments: list[str], n_students: int) -> int:
    """A synthetic class in ``root``: every student hands in every assignment, odd students with a mistake."""
    import nbformat

    from attn_grader.core import tasks_of
    from attn_grader.demo import answers_of, with_answers

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
    """Wall seconds of ``python -m attn_grader.autograde --jobs N`` (what ``make grade`` runs), and the
    cores the machine kept busy meanwhile (everything on it, the grader's processes most)."""
    t0, b0 = time.perf_counter(), _busy_seconds()
    proc = subprocess.run([sys.executable, "-m", "attn_grader.autograde", "--course", course,
                           "--jobs", str(jobs)], cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    cores = (_busy_seconds() - b0) / wall
    if proc.returncode != 0:
        return wall, cores, (f"autograde --jobs {jobs} exited with {proc.returncode}: "
                             f"{proc.stderr.strip().splitlines()[-1:]}")
    return wall, cores, None


def fig_grading(quick: bool) -> list[Row]:
    """A synthetic class through ``python -m attn_grader.autograde`` with 1 and 2 jobs, against bare
    nbclient execution of the same notebooks.

    Rounds are interleaved so that a slow spell of the shared machine falls on both sides: bare
    execution of the first half of the class, grading with 1, 2, 2, 1 jobs (each on a fresh copy of
    the class), bare execution of the second half. Each JOBS figure is the mean of its runs.
    """
    figure = TITLES["grading"]
    try:
        import attn_grader.autograde  # noqa: F401
    except ImportError as exc:
        return [skipped(figure, f"attn_grader.autograde not importable ({exc})")]
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
from attn_grader.course import Course, Options
from attn_grader.discover import Submitted

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
    proc = subprocess.Popen([sys.executable, "-m", "attn_grader.autograde", "--course", course, "--jobs", str(jobs)],
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
                _ms(float(np.median(times))), "reported", None,
                f"first half {_ms(first)}, second half {_ms(last)}; a submission takes about a second to grade")]
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
from attn_grader import sandbox
from attn_grader.course import PACKAGES
from attn_grader.recheck import HARNESS, HARNESS_IN_BOX
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
    """Start-up of the grading sandbox: a program started through attn_grader.sandbox minus the same
    program started bare, as the grader starts a kernel (the packages bound) and a re-check (the
    harness file bound): as root, in a mount namespace of its own with the sources staged once per run
    (attn_grader.sandbox.stage). Interleaved runs; medians."""
    figure = TITLES["sandbox"]
    from attn_grader import sandbox

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
                        f"of {reps})", _ms(extra), "≤ 50 ms", extra <= 0.050,
                        f"{_ms(float(np.median(times[name])))} in the sandbox vs {_ms(bare)} bare; {how}"))
    return rows


FIGURES = {
    "sdpa": fig_sdpa,
    "loop": fig_loop,
    "banded": fig_banded,
    "blocked": fig_blocked,
    "peak": fig_peak,
    "feedback": fig_feedback,
    "book": fig_book,
    "grading": fig_grading,
    "sandbox": fig_sandbox,
    "scale": fig_scale,
}
#: The title each figure gives its rows (``--only`` replaces the rows with these titles in results.md).
TITLES = {
    "sdpa": "numpy attention ÷ SDPA",
    "loop": "loop ÷ matrix form",
    "banded": "truncated attention growth",
    "blocked": "blocked_attention ÷ SDPA (4-D)",
    "peak": "share of the machine's peak",
    "feedback": "student feedback",
    "book": "book build",
    "grading": "grading cost",
    "sandbox": "grading sandbox",
    "scale": "grading a large class",
}
QUICK_SKIPS = {"book"}  # minutes of work: only in the full run (or with --only book)
