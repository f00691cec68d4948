"""What a reader and a student wait for: the book build, cold and warm, a student's feedback loop
(a released notebook, answered and run) and the self-check of one task.
"""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

from . import REPO, TITLES, Row, ms, skipped


def fig_feedback(quick: bool) -> list[Row]:
    """A student's feedback loop: a released notebook, answered, executed with nbclient."""
    import nbformat
    from nbclient import NotebookClient

    from attn_grader.authoring.demo import answers_of, with_answers

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


def fig_selfcheck(quick: bool) -> list[Row]:
    """The self-check a test cell runs (attn_grader.selfcheck.report: fresh inputs, the reference, the answer
    and, when it is wrong, every catalogued mistake), per task: the slower of the solution and its slowest
    catalogued mistake, median of repeats; the median over all tasks and the slowest task."""
    import nbformat

    from attn_grader.authoring.demo import answers_of
    from attn_grader.checking.core import load_mistake, tasks_of
    from attn_grader.selfcheck import report

    per_task: dict[str, float] = {}
    repeat = 3 if quick else 5
    for a in sorted(os.listdir(os.path.join(REPO, "solutions"))):
        source = nbformat.read(os.path.join(REPO, "solutions", a, a + ".ipynb"), as_version=4)
        tasks = tasks_of(a)
        ns: dict = {}
        exec(tasks[0].setup + "\n" + "\n".join(answers_of(source).values()), ns)  # noqa: S102
        for task in tasks:
            answers = [ns[task.func_name], *(load_mistake(task, m) for m in task.mistakes)]
            worst = 0.0
            for fn in answers:
                times = []
                for _ in range(repeat):
                    t0 = time.perf_counter()
                    report(task, fn)
                    times.append(time.perf_counter() - t0)
                worst = max(worst, float(np.median(times)))
            per_task[task.key] = worst
    cold = subprocess.run([sys.executable, "-c", "import time; t = time.perf_counter(); "
                           "import attn_grader.selfcheck, attn_grader.catalogue.ps12_efficient; "
                           "print(time.perf_counter() - t)"], capture_output=True, text=True, cwd=REPO)
    first = f"; importing it in a fresh kernel: {ms(float(cold.stdout))} once" if cold.returncode == 0 else ""
    median = float(np.median(list(per_task.values())))
    slowest = max(per_task, key=per_task.get)
    return [Row(TITLES["selfcheck"], f"one task's self-check, the solution or its slowest catalogued mistake "
                f"(median of {repeat}); median over the {len(per_task)} tasks", ms(median), "≤ 0.3 s",
                median <= 0.3, f"slowest task {slowest}: {ms(per_task[slowest])}{first}")]


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


def build_env() -> dict[str, str]:
    """The environment of the bench's book builds: `make book`'s.  No MPLBACKEND: ipykernel sets the inline
    backend only when MPLBACKEND is unset, and a kernel with MPLBACKEND=Agg displays no figure, so a page
    that links another page's figure by its name fails to build (issue 42: "target not found:
    'fig-relevance-dot-product'" in the bench's cold build, where make book succeeded)."""
    env = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    return dict(env, PYTHONHASHSEED="0", PYDEVD_DISABLE_FILE_VALIDATION="1")


def book_rows(runs: dict[str, tuple[float, float, int, str]]) -> list[Row]:
    """The rows of the cold and warm builds: ``runs[kind]`` = (English seconds, Chinese seconds, exit status,
    the log's problems).  A build that exited non-zero is a failed row, never a pass, whatever its time."""
    rows = []
    for kind, limit in (("cold", 300.0), ("warm", 10.0)):
        secs, _, rc, problems = runs[kind]
        rows.append(Row(TITLES["book"], f"{kind}: jupyter-book build -W -n --keep-going "
                        f"({'empty cache, every chapter executed' if kind == 'cold' else 'nothing changed'})",
                        f"{secs:.1f} s", f"≤ {limit:.0f} s", secs <= limit,
                        "build succeeded" if rc == 0 else f"build exited with {rc}; {problems}", failed=rc != 0))
    en, zh_secs, rc, problems = runs["cold"]
    rows.append(Row(TITLES["book"], "cold, both languages: the English build, then the Chinese one (make book)",
                    f"{en + zh_secs:.1f} s", "≤ 240 s", en + zh_secs <= 240,
                    f"English {en:.1f} s + Chinese {zh_secs:.1f} s" + ("" if rc == 0 else f"; {problems}"),
                    failed=rc != 0))
    zh_warm, rc = runs["warm"][1], runs["warm"][2]
    rows.append(Row(TITLES["book"], "warm: what the Chinese edition adds (its build, nothing executed)",
                    f"{zh_warm:.1f} s", "≤ 30 s", zh_warm <= 30,
                    "from the English build's execution cache" + ("" if rc == 0 else f"; {runs['warm'][3]}"),
                    failed=rc != 0))
    return rows


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
        env = build_env()
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
    rows = book_rows(runs)
    if chapters:
        slowest = max(chapters, key=chapters.get)
        top = sorted(chapters.items(), key=lambda kv: -kv[1])[:3]
        rows.append(Row(TITLES["book"], f"slowest chapter execution of {len(chapters)} (jupyter-cache)",
                        f"{chapters[slowest]:.1f} s", "≤ 60 s", chapters[slowest] <= 60,
                        ", ".join(f"{os.path.basename(p)} {s:.1f} s" for p, s in top)))
    else:
        rows.append(skipped(TITLES["book"], "no per-chapter execution times found in the build's jupyter-cache"))
    return rows
