"""The pieces of a term with nbgrader's exchange, one at a time (issue 39; the whole term: test_term.py).

What ``nbgrader collect`` leaves beside a notebook, read strictly; the one rule for students' own cells; the late
policy and extensions; the graders' scores in a result's total; the LMS files' columns.
"""

import os
from datetime import datetime, timedelta

import nbformat
import pytest

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.recheck import added_failures, with_added
from attn_grader.isolation.sanitize import sanitize
from attn_grader.reports import lms
from attn_grader.reports.result import Result, empty_result
from attn_grader.run.discover import find_submissions, parse_timestamp
from attn_grader.run.late import ExtensionsError, LatePenalty, read_extensions

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"


@pytest.mark.parametrize(("text", "want"), [
    (b"2026-12-05 23:34:34.123456 UTC", datetime(2026, 12, 5, 23, 34, 34, 123456)),  # nbgrader's own format
    (b"2026-12-05 23:34:34 UTC\n", datetime(2026, 12, 5, 23, 34, 34)),
    (b"2026-12-05T23:34:34+01:00", datetime(2026, 12, 5, 22, 34, 34)),
    (b"2026-12-05 23:34:34.5 CET", datetime(2026, 12, 5, 22, 34, 34, 500000)),
    (b"2026-02-30 10:00:00 UTC", None), (b"yesterday", None), (b"2026-12-05 23:34:34 UTC; rm -rf /", None),
    (b"\xff\xfe2026", None), (b"2026-12-05 23:34:34 NOPE", None), (b"", None),
])
def test_a_timestamp_is_parsed_strictly(text, want):
    assert parse_timestamp(text) == want


def _submission(tmp_path, files: dict[str, bytes], student="ann"):
    d = tmp_path / "submitted" / student / A
    d.mkdir(parents=True)
    for name, data in files.items():
        (d / name).write_bytes(data)
    return d


def test_nbgraders_files_are_expected_and_read_and_other_files_still_flagged(tmp_path):
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    _submission(tmp_path, {A + ".ipynb": nbformat.writes(release).encode(),
                           "timestamp.txt": b"2026-12-05 23:34:34.123456 UTC",
                           "submission_secret.txt": b"0123abcdef\n", "numpy.py": b"x = 1"})
    (s,) = find_submissions(str(tmp_path), [A], {A: A + ".ipynb"})
    assert s.timestamp == "2026-12-05 23:34:34.123456" and s.secret == "0123abcdef"
    assert sorted(e for e, _ in s.entries) == sorted([A + ".ipynb", "numpy.py"])
    flags = sanitize(s, {A + ".ipynb": release}).flags
    assert not any("timestamp" in f or "secret" in f for f in flags), flags
    assert any("numpy.py" in f for f in flags), flags  # any other file is still an extra file


def test_a_hostile_timestamp_is_no_timestamp_said_in_the_row_and_a_link_is_flagged(tmp_path):
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    nb = nbformat.writes(release).encode()
    _submission(tmp_path, {A + ".ipynb": nb, "timestamp.txt": b"9" * 5000,
                           "submission_secret.txt": b"<script>not hex</script>"}, "ann")
    d = _submission(tmp_path, {A + ".ipynb": nb}, "ben")
    os.symlink("/etc/passwd", d / "timestamp.txt")
    ann, ben = find_submissions(str(tmp_path), [A], {A: A + ".ipynb"})
    assert ann.timestamp is None and "no timestamp" in ann.timestamp_note and ann.secret is None
    assert ben.timestamp is None and ("timestamp.txt", "a symbolic link") in ben.entries
    assert any("timestamp.txt" in f for f in sanitize(ben, {A + ".ipynb": release}).flags)


def test_cells_a_student_added_run_before_the_answer_whose_test_follows_them():
    source = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    student = with_answers(release, answers_of(source))
    ids = [c.metadata.get("nbgrader", {}).get("grade_id") for c in student.cells]
    first_answer = next(g for g in ids if g and g.endswith("_answer"))
    first_test = first_answer[: -len("_answer")] + "_test"
    student.cells.insert(ids.index(first_test), nbformat.v4.new_code_cell("def my_helper(x):\n    return x"))
    student.cells.append(nbformat.v4.new_code_cell("print('done')"))
    student.cells.append(nbformat.v4.new_markdown_cell("my notes"))

    class Sub:
        problem, notebook, entries = None, nbformat.writes(student).encode(), [(A + ".ipynb", "file")]

    clean = sanitize(Sub, {A + ".ipynb": release})
    assert clean.added == {first_answer: ["def my_helper(x):\n    return x"], "": ["print('done')"]}
    rebuilt = [c.source for c in clean.notebook.cells]
    assert rebuilt.index("def my_helper(x):\n    return x") == rebuilt.index(clean.answers[first_answer]) - 1
    assert rebuilt[-1] == "print('done')"
    order = list(with_added(clean.answers, clean.added))
    assert order[0] == f"added cell 1 before {first_answer}" and order[1] == first_answer
    assert order[-1] == "added cell 1 at the end" and len(order) == len(clean.answers) + 2
    index = {"answers": {order[0]: "ZeroDivisionError", first_answer: "ok", order[-1]: "ok"}}
    assert added_failures(index) == [f"{order[0]} (ZeroDivisionError)"]


def test_late_policies_and_extensions(tmp_path):
    assert LatePenalty(penalty_method="none").late_submission_penalty("a", 8.0, 3600) is None
    assert LatePenalty(penalty_method="zero").late_submission_penalty("a", 8.0, 3600) == 8.0
    per_day = LatePenalty(penalty_method="per_day", per_day=0.25)
    assert per_day.late_submission_penalty("a", 8.0, 1) == 2.0  # any part of a day is a day
    assert per_day.late_submission_penalty("a", 8.0, 86400 * 2 + 1) == 6.0
    assert per_day.late_submission_penalty("a", 8.0, 86400 * 10) == 8.0  # at most the score
    assert read_extensions(str(tmp_path)) == {}
    (tmp_path / "extensions.csv").write_text("student,assignment,hours\nann,ps04_step_by_step,48\n")
    assert read_extensions(str(tmp_path)) == {("ann", A): timedelta(hours=48)}
    (tmp_path / "extensions.csv").write_text("student,assignment,hours\nann,ps04_step_by_step,-3\n")
    with pytest.raises(ExtensionsError, match="line 2"):
        read_extensions(str(tmp_path))


def _result(student, auto, manual=None, penalty=0.0, seconds=0.0, comments=None):
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    r = empty_result(student, A, release)
    r.auto = {g: auto for g in r.tasks}
    r.manual, r.late_penalty, r.seconds_late, r.comments = manual or {}, penalty, seconds, comments or {}
    return r.recount()


def test_a_graders_score_replaces_the_graders_and_the_penalty_comes_off_the_total():
    r = _result("ann", 0.0)
    g = r.tasks[0]
    assert r.total == 0
    r.manual = {g: 1.5}
    r.late_penalty = 0.5
    r.recount()
    assert r.scores[g] == 1.5 and r.total == 1.0
    old = Result.from_dict({**r.to_dict(), "auto": {}, "manual": {}, "late_penalty": 0.0})  # from before 39
    assert old.recount().total == 1.5


def test_lms_files_update_an_existing_canvas_assignment_and_carry_lateness_and_comments():
    ann = _result("ann", 1.0, seconds=7200, penalty=2.0)
    ben = _result("ben", 0.0, manual={"x": 1.0}, comments={"y_answer": "see me"})
    results = {r.key: r for r in (ann, ben)}
    canvas = lms.canvas(results, {}, {"canvas_ids": {A: 77}, "canvas_notes_column": "Notes"}).splitlines()
    assert canvas[0].split(",")[5:] == ["Notes", f"{A} (77)"]
    assert "2.0 h late" in canvas[2] and "late penalty 2" in canvas[2] and "see me" in canvas[3]
    assert "submitted 30 s late" in lms.note(_result("cy", 1.0, seconds=30))
    assert lms.canvas(results, {}).splitlines()[0].endswith(f"Section,{A}")  # no ids, no notes column: as before
    moodle = lms.moodle(results, {}).splitlines()
    assert moodle[0] == f"username,{A},{A} feedback" and "late penalty 2" in moodle[1] and "see me" in moodle[2]


def test_a_hand_score_of_a_cell_no_automatic_run_scores_counts():
    """The instructor trial (issue 39): the written answer has no automatic score at all (a markdown cell graded
    by hand); once a grader scored it in the formgrader, every make grade crashed (KeyError in recount)."""
    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    r = empty_result("ann", A, release)
    assert r.manual_tasks, "ps04 has a cell graded by hand"
    r.auto = {g: r.max[g] for g in r.tasks if g not in r.manual_tasks}
    r.recount()
    assert r.needs_manual == r.manual_tasks and r.total == sum(r.auto.values())
    r.manual = {g: r.max[g] for g in r.manual_tasks}
    r.recount()
    assert r.needs_manual == [] and r.total == sum(r.max.values())
