"""An instructor who knows nbgrader runs its own commands on this course (issue 17).

One prepared command per assignment (``nbgrader generate_assignment --force``) and then the stock
``autograde``, ``generate_feedback`` and ``export`` work, give the same scores as ``make grade``, write
no false "checksum has changed" warning (nbgrader issue 1961) while a really edited test cell still gets
one, and do not overwrite ``make grade``'s grades.csv.  A student's check before handing in can fail.
"""

import csv
import os
import shutil
import subprocess
import sys

import nbformat
import pytest

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.run.autograde import Options, grade
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
BIN = os.path.dirname(sys.executable)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("stock_nbgrader")]


def _nbgrader(course, *args):
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run([os.path.join(BIN, "nbgrader"), *args], cwd=course, env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (args, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout + proc.stderr


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    root = tmp_path_factory.mktemp("stock")
    for folder in ("solutions", "exercises"):
        shutil.copytree(os.path.join(REPO, folder, A), root / folder / A)
    shutil.copy(os.path.join(REPO, "nbgrader_config.py"), root)
    src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
    rel = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    task = tasks_of(A)[2]
    edited = with_answers(rel, answers_of(src))
    test_cell = next(c for c in edited.cells
                     if c.metadata.get("nbgrader", {}).get("grade_id") == "permuted_outputs_test")
    test_cell.source = "pass  # the test, deleted by the student"
    subs = {"ann": with_answers(rel, answers_of(src)), "ben": rel,
            "cy": with_answers(rel, {**answers_of(src), f"{task.func_name}_answer": task.mistakes[0].source}),
            "dee": edited}
    for student, nb in subs.items():
        (root / "submitted" / student / A).mkdir(parents=True)
        nbformat.write(nb, str(root / "submitted" / student / A / (A + ".ipynb")))
    ours = grade(str(root), jobs=1, opts=Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30),
                 verbose=False)
    grades_csv = (root / "grades.csv").read_text()
    logs = {}
    logs["generate"] = _nbgrader(root, "generate_assignment", "--force", A)
    # make grade left autograded/ as nbgrader does: its autograde grades again only with --force
    logs["autograde"] = _nbgrader(root, "autograde", "--force", A)
    logs["feedback"] = _nbgrader(root, "generate_feedback", A)
    logs["export"] = _nbgrader(root, "export")
    return root, ours, grades_csv, logs


def test_generate_assignment_rewrites_the_release_unchanged(course):
    root, *_ = course
    mine = open(os.path.join(REPO, "exercises", A, A + ".ipynb"), encoding="utf-8").read()
    assert (root / "exercises" / A / (A + ".ipynb")).read_text(encoding="utf-8") == mine


def test_stock_scores_equal_make_grades(course):
    root, ours, _, _ = course
    rows = {r["student_id"]: r for r in csv.DictReader((root / "nbgrader_grades.csv").open())}
    assert set(rows) == {"ann", "ben", "cy", "dee"}
    for student, row in rows.items():
        assert float(row["score"]) == ours[f"{student}/{A}"].total, (student, row, ours[f"{student}/{A}"])
    by_hand = points_by_hand(A)  # the written answer (issue 41)
    assert by_hand > 0
    assert float(rows["ann"]["score"]) == float(rows["ann"]["max_score"]) - by_hand > float(rows["cy"]["score"]) > 0
    assert float(rows["ben"]["score"]) == 0
    assert ours[f"dee/{A}"].status == "flagged"  # make grade also says the cell was edited


def test_only_an_edited_test_cell_warns_about_its_checksum(course):
    _, _, _, logs = course
    warnings = [line for line in logs["autograde"].splitlines() if "checksum" in line]
    assert len(warnings) == 1 and "permuted_outputs_test" in warnings[0], warnings


def test_export_keeps_make_grades_csv(course):
    root, _, grades_csv, logs = course
    assert "nbgrader_grades.csv" in logs["export"]
    assert (root / "grades.csv").read_text() == grades_csv
    page = (root / "feedback" / "cy" / A / (A + ".html")).read_text(encoding="utf-8")
    # nbgrader_config.py gives the stock command make grade's feedback page: formulas as MathML, no CDN
    assert "<math" in page and "mathjax" not in page.lower() and '<html lang="en"' in page


def test_a_students_check_before_handing_in_can_fail(course, tmp_path):
    """book/for_students.md: `jupyter nbconvert --to notebook --execute --stdout NOTEBOOK > /dev/null`
    exits non-zero when a visible test fails (nbgrader validate exits 0 either way)."""
    root, *_ = course
    codes = {}
    for student in ("ann", "cy"):
        nb = tmp_path / student / (A + ".ipynb")
        nb.parent.mkdir()
        shutil.copy(root / "submitted" / student / A / (A + ".ipynb"), nb)
        proc = subprocess.run([os.path.join(BIN, "jupyter"), "nbconvert", "--to", "notebook", "--execute",
                               "--stdout", str(nb)], cwd=nb.parent, capture_output=True, timeout=300)
        codes[student] = proc.returncode
    assert codes["ann"] == 0 and codes["cy"] != 0, codes
