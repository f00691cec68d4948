"""``make bench``'s "regrading one resubmission" row: a class graded once, one student hands in again, and
``make grade`` (which grades only what is new or changed) is timed against grading that one submission
alone, in a course of its own.  Target: at most 3× (before, the whole class ran again: about 100×).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from . import REPO, TITLES, Row, ratio, skipped
from .grading import build_class

A = "ps04_step_by_step"


def _grade(course: str, *extra: str) -> tuple[float, str | None]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "attn_grader.run.autograde", "--course", course, "--quiet",
                           *extra], cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        return wall, f"autograde exited with {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"
    return wall, None


def _resubmit(course: str, student: str) -> None:
    path = os.path.join(course, "submitted", student, A, A + ".ipynb")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    with open(path, "w", encoding="utf-8") as f:  # a changed notebook: one more key in a cell's metadata
        f.write(text.replace('"metadata": {', f'"metadata": {{"resubmitted": {time.time()!r},', 1))


def fig_regrade(quick: bool) -> list[Row]:
    """A class of 100 (20 with --quick) graded once; then, twice over and interleaved, one student resubmits
    and ``make grade`` runs (the class unchanged but for that one), and the same submission is graded alone
    in a course of its own.  The figure is the ratio of the means."""
    figure = TITLES["regrade"]
    n = 20 if quick else 100
    tmp = tempfile.mkdtemp(prefix="bench-regrade-")
    try:
        course = os.path.join(tmp, "class")
        build_class(course, [A], n)
        first, error = _grade(course)
        if error:
            return [skipped(figure, error)]
        student = "student_01"  # one with a catalogued mistake: the re-check names it
        whole, alone = [], []
        for i in range(2):
            _resubmit(course, student)
            seconds, error = _grade(course)
            whole.append(seconds)
            single = os.path.join(tmp, f"alone{i}")
            os.makedirs(os.path.join(single, "submitted", student))
            shutil.copytree(os.path.join(course, "solutions"), os.path.join(single, "solutions"))
            shutil.copytree(os.path.join(course, "submitted", student, A),
                            os.path.join(single, "submitted", student, A))
            seconds_alone, error_alone = _grade(single)
            alone.append(seconds_alone)
            if error or error_alone:
                return [skipped(figure, error or error_alone)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    r = (sum(whole) / len(whole)) / (sum(alone) / len(alone))
    return [Row(figure, f"a class of {n} submissions of {A}, one resubmitted; make grade ÷ that one graded alone",
                ratio(r), "≤ 3×", r <= 3.0,
                f"make grade {sum(whole) / len(whole):.1f} s, alone {sum(alone) / len(alone):.1f} s (means of 2); "
                f"the class's first grading {first:.0f} s")]
