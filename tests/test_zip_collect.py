"""Submissions downloaded from an LMS (issue 39, item 11): the LMS's zip in ``downloaded/<ps>/archive/``,
``nbgrader zip_collect`` with a ``FileNameCollectorPlugin.named_regexp`` that finds the student and the time in
each file name, then ``make grade``'s grader: every row graded, none flagged for the files nbgrader wrote, the
late one's lateness from the time in its file name (docs/grading.md, "Submissions downloaded from an LMS")."""

import csv
import datetime
import io
import json
import os
import shutil
import subprocess
import sys
import zipfile

import nbformat
import pytest

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.run.autograde import Options, grade
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
BIN = os.path.dirname(sys.executable)
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("zip_collect")]
# Canvas's download names: <name>_<id>_<submission id>_<file>; here the time is in it too, written as ISO 8601's
# basic format (20260301T103015), which nbgrader's parse_utc reads right (its documentation's example
# "2016-01-30-15-00-00" is read as another time: 2026-03-01-10-30-15 becomes 2026-03-02 01:00); nbgrader matches
# the expression against the extracted file's whole path, hence the leading ".*/"
REGEXP = (r".*/(?P<student_id>[a-z]+)_\d+_(?P<timestamp>\d{8}T\d{6})"
          r"_(?P<file_id>ps04_step_by_step\.ipynb)")


def test_an_lms_download_collected_by_zip_collect_is_graded_as_collected(tmp_path):
    root = tmp_path / "course"
    for folder in ("solutions", "exercises"):
        shutil.copytree(os.path.join(REPO, folder, A), root / folder / A)
    due = datetime.datetime(2026, 3, 1, 12, 0, 0)
    config = open(os.path.join(REPO, "nbgrader_config.py"), encoding="utf-8").read()
    config += (f"\nc.FileNameCollectorPlugin.named_regexp = {REGEXP!r}\n"
               "c.LatePenalty.penalty_method = 'per_day'\nc.LatePenalty.per_day = 0.25\n")
    (root / "nbgrader_config.py").write_text(config)
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    nbgrader = os.path.join(BIN, "nbgrader")
    for cmd in (["generate_assignment", "--force", A], ["db", "assignment", "add", A, f"--duedate={due} UTC"]):
        proc = subprocess.run([nbgrader, *cmd], cwd=root, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-2000:]

    solution = json.loads((root / "solutions" / A / (A + ".ipynb")).read_text())
    src = nbformat.reads(json.dumps(solution), as_version=4)
    right = answers_of(src)
    task = tasks_of(A)[0]
    wrong = {**right, f"{task.func_name}_answer": task.mistakes[0].source}
    release = nbformat.read(str(root / "exercises" / A / (A + ".ipynb")), as_version=4)
    archive = root / "downloaded" / A / "archive"
    archive.mkdir(parents=True)
    with zipfile.ZipFile(archive / "submissions.zip", "w") as z:  # as the LMS hands it out: one zip
        for name, uid, when, answers in (("ann", 1001, due - datetime.timedelta(hours=2, minutes=17), right),
                                         ("ben", 1002, due - datetime.timedelta(minutes=1, seconds=42), wrong),
                                         ("cy", 1003, due + datetime.timedelta(hours=30, minutes=30, seconds=15),
                                          right)):
            z.writestr(f"{name}_{uid}_{when:%Y%m%dT%H%M%S}_{A}.ipynb",
                       nbformat.writes(with_answers(release, answers)))
    proc = subprocess.run([nbgrader, "zip_collect", A], cwd=root, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    for student in ("ann", "ben", "cy"):
        assert (root / "submitted" / student / A / (A + ".ipynb")).is_file(), proc.stderr[-2000:]
        assert (root / "submitted" / student / A / "timestamp.txt").is_file()  # the time from the file name

    results = grade(str(root), opts=OPTS, verbose=False)
    assert len(results) == 3 and not [f for r in results.values() for f in r.flags], \
        {k: r.flags for k, r in results.items()}
    rows = {r["student"]: r for r in csv.DictReader(io.StringIO((root / "grades.csv").read_text()))}
    full = float(rows["ann"]["max"]) - points_by_hand(A)  # every automatic point; the written answer by hand
    assert {s: r["status"] for s, r in rows.items()} == {"ann": "ok", "ben": "ok", "cy": "ok"}
    assert float(rows["ann"]["total"]) == full and float(rows["ben"]["total"]) < full
    assert rows["ann"]["hours_late"] in ("", "0", "0.0") and rows["ben"]["hours_late"] in ("", "0", "0.0"), rows
    assert float(rows["cy"]["hours_late"]) == pytest.approx(30 + 30 / 60 + 15 / 3600, abs=0.01), rows["cy"]
    # per_day 0.25: 30.5 hours late is two days begun, half the score taken
    assert float(rows["cy"]["late_penalty"]) == pytest.approx(full / 2) and \
        float(rows["cy"]["total"]) == pytest.approx(full / 2), rows["cy"]
