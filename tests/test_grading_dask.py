"""Grading a class on a real Dask cluster: a scheduler and two workers started as separate processes
with Dask's own command-line tools, on 127.0.0.1 (tests/dask_helpers.py).

* the class graded through them gives the same grades.csv as one local worker (JOBS=1);
* a worker killed (SIGKILL) while it grades costs nothing: every row once, the same grades.csv;
* a submission that kills every worker it lands on ends as a row that says why; the others are right;
* Ctrl-C in the middle of a run, then the same command again: only what was missing is graded, and
  grades.csv is the same as an uninterrupted run's.
"""

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import nbformat
import pytest
from dask_helpers import busy_worker, dask_cluster

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.run import cluster
from attn_grader.run.autograde import Options, grade
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dask")]


def _class(root, extra=()) -> str:
    """ann right, ben blank, cy/eve/fay each with a catalogued mistake, gus/hal/ian/jo right, dee an empty
    folder: 9 notebooks, more than one batch (at most 8) even for one worker."""
    root = str(root)
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(root, "solutions", A))
    src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
    rel = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    right = answers_of(src)
    t = tasks_of(A)
    students = {"ann": right, "ben": {}, "cy": {**right, f"{t[2].func_name}_answer": t[2].mistakes[1].source},
                "eve": {**right, f"{t[0].func_name}_answer": t[0].mistakes[0].source},
                "fay": {**right, f"{t[1].func_name}_answer": t[1].mistakes[0].source}, "gus": right, "hal": right,
                "ian": right, "jo": right}
    students.update({name: right for name in extra})
    for student, answers in students.items():
        d = os.path.join(root, "submitted", student, A)
        os.makedirs(d)
        nbformat.write(with_answers(rel, answers) if answers else rel, os.path.join(d, A + ".ipynb"))
    os.makedirs(os.path.join(root, "submitted", "dee", A))
    return root


def _csv(root) -> str:
    with open(os.path.join(root, "grades.csv")) as f:
        return f.read()


def _rows(text: str) -> dict:
    return {r["student"]: r for r in csv.DictReader(text.splitlines())}


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> str:
    """grades.csv of the class graded by one local worker."""
    root = _class(tmp_path_factory.mktemp("one_job"))
    grade(root, jobs=1, opts=OPTS, verbose=False)
    text = _csv(root)
    rows = _rows(text)
    assert float(rows["ann"]["total"]) == float(rows["ann"]["max"]) - points_by_hand(A) and rows["ben"]["total"] == "0"
    assert rows["dee"]["status"] == "ungradable" and all(float(rows[s]["total"]) < float(rows["ann"]["total"])
                                                         for s in ("cy", "eve", "fay"))
    return text


def test_a_cluster_of_dask_processes_grades_like_one_job(tmp_path, reference):
    root = _class(tmp_path / "course")
    with dask_cluster(tmp_path / "cluster", workers=2) as (address, _):
        out = subprocess.run([sys.executable, "-m", "attn_grader.run.autograde", "--course", root,
                              "--scheduler", address, "--options", json.dumps(OPTS.__dict__)],
                             cwd=REPO, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    assert f"grading on the cluster at {address} (2 workers now)" in out.stdout
    assert _csv(root) == reference
    assert len(re.findall(r"^\[\d+/10\] ", out.stdout, re.M)) == 10  # a progress line per submission


def test_a_worker_killed_while_it_grades_costs_nothing(tmp_path, reference):
    root = _class(tmp_path / "course")
    with dask_cluster(tmp_path / "cluster", workers=2) as (address, _):
        proc = subprocess.Popen([sys.executable, "-m", "attn_grader.run.autograde", "--course", root,
                                 "--scheduler", address, "--options", json.dumps(OPTS.__dict__)],
                                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        killed = None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if killed is None and line.startswith("[ran "):  # kernels are running: kill a busy worker
                killed = busy_worker(address)
                if killed:
                    os.kill(killed, signal.SIGKILL)
        assert proc.wait(timeout=900) == 0, proc.stderr.read()[-3000:]
        proc.stderr.close()
    assert killed, "no worker was caught grading"
    progress = [ln for ln in lines if re.match(r"\[\d+/10\] ", ln)]
    assert len(progress) == 10, lines  # every row reported once
    assert _csv(root) == reference


def test_a_submission_that_kills_every_worker_ends_as_a_row_that_says_why(tmp_path, reference):
    root = _class(tmp_path / "course", extra=("poison",))
    with dask_cluster(tmp_path / "cluster", workers=2,
                      worker_env={cluster.FAULT_ENV: json.dumps({"kill": "poison"})},
                      scheduler_env={"DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}) as (address, _):
        grade(root, opts=OPTS, verbose=False, scheduler=address)
    rows = _rows(_csv(root))
    poison = rows.pop("poison")
    assert poison["status"] == "ungradable" and "died every time" in poison["reason"], poison
    expected = _rows(reference)
    assert rows == expected, {k: rows.get(k) for k in set(rows) | set(expected) if rows.get(k) != expected.get(k)}


def test_interrupted_then_run_again_grades_only_what_is_missing(tmp_path, reference):
    root = _class(tmp_path / "course")
    argv = [sys.executable, "-m", "attn_grader.run.autograde", "--course", root, "--jobs", "1",
            "--options", json.dumps(OPTS.__dict__)]
    proc = subprocess.Popen(argv, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in proc.stdout:
        if re.match(r"\[\d+/10\] (?!dee)\w+ .*: \d", line):  # a graded submission (not the empty folder)
            os.kill(proc.pid, signal.SIGINT)
            break
    t0 = time.monotonic()
    assert proc.wait(timeout=300) == 130, proc.stderr.read()[-3000:]
    assert "run the same command again" in proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert time.monotonic() - t0 < 120
    assert not os.path.exists(os.path.join(root, "grades.csv"))
    again = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stderr[-3000:]
    kept = re.search(r"(\d+) submissions graded by the interrupted run are kept", again.stdout)
    assert kept and int(kept.group(1)) >= 1, again.stdout
    ran = [ln for ln in again.stdout.splitlines() if ln.startswith("[ran ")]
    assert len(ran) == 9 - int(kept.group(1)) > 0, again.stdout  # only the rest ran, and some did
    assert _csv(root) == reference
    assert not os.path.exists(os.path.join(root, ".grader", "journal.jsonl"))
