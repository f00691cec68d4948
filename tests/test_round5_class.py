"""Issue 40's fresh attacker (round 5) in one small class, graded by the real `make grade` path: text no file
can hold raised only in the re-check (r03: the whole run failed, and every later run), a .npy header claiming
petabytes (r07: "the grader failed"), hidden tests written into an earlier cell's display by a hook (r02),
and PyTorch's attention past the guard (r01 and two variants).  The same attacks are in tests/attacks/
(round5.py), graded there with the whole catalogue; this class is small enough to run on its own."""

import csv
import glob
import os
import shutil
import sys

import nbformat
import pytest

from attn_grader.run.autograde import Options, grade

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "attacks"))
from make_attacks import honest  # noqa: E402
from round5 import SDPA, SURROGATE_IN_RECHECK  # noqa: E402

REPO = os.path.dirname(HERE)
A = "ps04_step_by_step"
ATTACKS = os.path.join(HERE, "attacks")
NAMES = ["f01_surrogate_in_recheck_error", "f02_npy_header_claims_petabytes", "f03_display_id_updated_by_a_hook",
         "f04_cleared_and_displayed_again", "f05_torch_guard_told_done", "f06_torch_guard_found_by_gc",
         "f07_torch_meta_path_replaced", "f08_forks_in_the_recheck"]
OPTS = Options(cell_timeout=30, budget=180, recheck_seconds=120, call_seconds=30, memory=3 << 30)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading_attacks")]


def _rows(root: str) -> dict[str, dict]:
    with open(os.path.join(root, "grades.csv"), newline="", encoding="utf-8") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("round5_class"))
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(root, "solutions", A))
    for name in NAMES:
        shutil.copytree(os.path.join(ATTACKS, name), os.path.join(root, "submitted", name, A))
    for student in ("honest_1", "honest_2"):
        os.makedirs(os.path.join(root, "submitted", student, A))
        nbformat.write(honest(), os.path.join(root, "submitted", student, A, A + ".ipynb"))
    first = grade(root, jobs=1, opts=OPTS, verbose=False)
    rows = _rows(root)
    second = grade(root, jobs=1, opts=OPTS, verbose=False)  # from the journal the first one wrote
    return {"root": root, "first": first, "rows": rows, "rows_again": _rows(root), "second": second}


def test_the_payloads_are_the_ones_graded():
    assert "chr(0xD800)" in SURROGATE_IN_RECHECK and "scaled_dot_" in SDPA and "torch" not in SDPA


def test_every_classmate_has_a_row_in_both_runs(graded):
    """r03: the run completes (before the fix: UnicodeEncodeError, no grades.csv for anyone, every run)."""
    for rows in (graded["rows"], graded["rows_again"]):
        assert set(rows) == set(NAMES) | {"honest_1", "honest_2"}
        assert all(float(rows[s]["total"]) == 10 and rows[s]["status"] == "ok" for s in ("honest_1", "honest_2")), rows
    assert os.path.exists(os.path.join(graded["root"], "grading_report.md"))


@pytest.mark.parametrize("name, score, flagged", [
    ("f01_surrogate_in_recheck_error", 7, True), ("f02_npy_header_claims_petabytes", 3, True),
    ("f03_display_id_updated_by_a_hook", 10, False), ("f04_cleared_and_displayed_again", 10, False),
    ("f05_torch_guard_told_done", 0, True), ("f06_torch_guard_found_by_gc", 0, True),
    ("f07_torch_meta_path_replaced", 0, True), ("f08_forks_in_the_recheck", 10, True)])
def test_attack_outcome(graded, name, score, flagged):
    row = graded["rows"][name]
    assert float(row["total"]) == score and (row["status"] == "flagged") == flagged, row
    assert "grader failed" not in row["reason"], row


@pytest.mark.parametrize("name", ["f03_display_id_updated_by_a_hook", "f04_cleared_and_displayed_again"])
def test_nothing_written_while_tests_ran_reaches_an_earlier_cell(graded, name):
    """r02: the hook's copies of every executed cell (hidden tests included) are in no feedback page."""
    [page] = glob.glob(os.path.join(graded["root"], "feedback", name, A, "*.html"))
    text = open(page, encoding="utf-8").read()
    assert "notes-b64: " not in text and "notes-rev: " not in text and "HIDDEN TESTS" not in text
    assert "this ran after hidden tests had run" in text  # the earlier display, written to later: the fixed line
