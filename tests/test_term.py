"""A whole term on one machine, as an instructor who knows nbgrader runs it (issue 39, "Done when").

nbgrader's exchange in a scratch folder; three students fetch ps04, answer (one right, one wrong, one late) and
submit with ``nbgrader`` as themselves (their own HOME and user name); the instructor collects, runs
``make grade``'s grader, sets a manual score and a comment through the formgrader's own HTTP API, grades again,
grades a resubmission alone, regrades one student with ``--student`` and exports for Canvas and Moodle, and
releases the feedback (the students fetch it).  A fourth submission dropped into ``submitted/`` by hand and then removed
leaves the gradebook.  The formgrader, in Chromium with the network off, lists every submission as graded and
its Manual Grading page shows the graded notebook.
"""

import contextlib
import csv
import datetime
import io
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.reports.next_steps import HEADING
from attn_grader.run.autograde import Options, grade
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
COURSE_ID = "self-attention-step-by-step"
BIN = os.path.dirname(sys.executable)
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)
# six nbgrader commands per student and four grading runs: about 10 minutes on a machine loaded with other work
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("term"), pytest.mark.timeout(2400)]


def _run(cmd, cwd, env=None, ok=True):
    env = {**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", ""), **(env or {})}
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    if ok:
        assert proc.returncode == 0, (cmd, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc.stdout + proc.stderr


def _as_student(term, student, *args):
    """An nbgrader command run by ``student``: their own HOME, user name and working folder (and, since they
    all share this machine's one account, nbgrader's ``--student`` where it would take the account's name)."""
    home = term["homes"] / student
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "USER": student, "LOGNAME": student, "JUPYTER_CONFIG_DIR": str(home / ".jupyter")}
    who = [f"--student={student}"] if args[0] in ("submit", "fetch_feedback") else []  # one OS user for all
    return _run([os.path.join(BIN, "nbgrader"), *args, "--course", COURSE_ID, *who,
                 f"--Exchange.root={term['exchange']}"], home, env)


def _answer(term, student, answers):
    path = term["homes"] / student / A / (A + ".ipynb")
    nb = nbformat.read(str(path), as_version=4)
    nbformat.write(with_answers(nb, answers), str(path))


def _rows(root, name="grades.csv"):
    return {r["student"]: r for r in csv.DictReader(io.StringIO((root / name).read_text()))}


class Formgrader:
    """``jupyter server`` with nbgrader's formgrader on localhost, driven through its REST API."""

    def __init__(self, root):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.token = "term-test-token"
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "jupyter-server"), "--no-browser", "--allow-root", f"--port={self.port}",
             "--ip=127.0.0.1", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={root}"],
            cwd=root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            env={**os.environ, "PATH": BIN + os.pathsep + os.environ.get("PATH", "")})
        for _ in range(600):  # up to a minute on a loaded machine
            with contextlib.suppress(OSError):
                if self.api("GET", "/formgrader/api/status").get("status"):
                    return
            time.sleep(0.1)
        raise AssertionError("the formgrader did not start")

    def api(self, method, path, body=None):
        req = urllib.request.Request(self.url + path, method=method, data=None if body is None else
                                     json.dumps(body).encode(), headers={"Authorization": f"token {self.token}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return json.loads(resp.read() or b"null")

    def notebook_id(self, student):
        subs = self.api("GET", f"/formgrader/api/submitted_notebooks/{A}/{A}")
        ids = [s["id"] for s in subs if s["student"] == student]
        assert ids, (student, subs)
        return ids[0]

    def grades(self, student):
        nb = self.notebook_id(student)
        return {g["name"]: g for g in self.api("GET", f"/formgrader/api/grades?submission_id={nb}")}

    def comments(self, student):
        return {c["name"]: c for c in
                self.api("GET", f"/formgrader/api/comments?submission_id={self.notebook_id(student)}")}

    def close(self):
        self.proc.terminate()
        self.proc.wait(timeout=30)


@pytest.fixture(scope="module")
def term(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("term")
    root, exchange = tmp / "course", tmp / "exchange"
    for folder in ("solutions", "exercises"):
        shutil.copytree(os.path.join(REPO, folder, A), root / folder / A)
    config = open(os.path.join(REPO, "nbgrader_config.py"), encoding="utf-8").read()
    config += (f"\nc.Exchange.root = {str(exchange)!r}\n"
               "c.LatePenalty.penalty_method = 'per_day'\nc.LatePenalty.per_day = 0.25\n"
               f"c.AttnGrader.canvas_ids = {{{A!r}: 4321}}\nc.AttnGrader.canvas_notes_column = 'Notes'\n")
    (root / "nbgrader_config.py").write_text(config)
    term = {"root": root, "exchange": exchange, "homes": tmp / "homes", "log": {}}
    src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
    right = answers_of(src)
    task = tasks_of(A)[2]
    wrong = {**right, f"{task.func_name}_answer": task.mistakes[0].source}
    term.update(right=right, wrong=wrong, task=task)

    _run([os.path.join(BIN, "nbgrader"), "generate_assignment", "--force", A], root)
    _run([os.path.join(BIN, "nbgrader"), "release_assignment", A], root)
    for student, answers in (("ann", right), ("ben", wrong)):
        _as_student(term, student, "fetch_assignment", A)
        _answer(term, student, answers)
        _as_student(term, student, "submit", A)
    due = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    time.sleep(1.5)
    _as_student(term, "cy", "fetch_assignment", A)
    _answer(term, "cy", right)
    _as_student(term, "cy", "submit", A)
    _run([os.path.join(BIN, "nbgrader"), "db", "assignment", "add", A, f"--duedate={due}"], root)
    _run([os.path.join(BIN, "nbgrader"), "collect", A], root)
    # a submission handed in by hand (no nbgrader files), later withdrawn
    (root / "submitted" / "dan" / A).mkdir(parents=True)
    shutil.copy(root / "exercises" / A / (A + ".ipynb"), root / "submitted" / "dan" / A / (A + ".ipynb"))

    term["first"] = grade(str(root), opts=OPTS, verbose=False)
    term["csv1"] = _rows(root)
    fg = Formgrader(root)
    try:
        term["formgrader"] = fg
        test_cell = f"{task.func_name}_test"
        grade_ = fg.grades("ben")[test_cell]
        term["manual"] = float(grade_["max_score"]) - 1  # a grader gives partial credit for the wrong answer
        fg.api("PUT", f"/formgrader/api/grade/{grade_['id']}", {"manual_score": term["manual"]})
        comment = fg.comments("ben")[f"{task.func_name}_answer"]
        fg.api("PUT", f"/formgrader/api/comment/{comment['id']}", {"manual_comment": "Mind the key and query order."})
        term["test_cell"], term["answer_cell"] = test_cell, f"{task.func_name}_answer"

        shutil.rmtree(root / "submitted" / "dan")
        term["second"] = grade(str(root), opts=OPTS, verbose=False)  # nothing changed but dan's withdrawal
        term["csv2"] = _rows(root)
        term["grades_after_second"] = fg.grades("ben")

        _answer(term, "ann", {k: v + "\n# checked again" for k, v in right.items()})
        _as_student(term, "ann", "submit", A)
        _run([os.path.join(BIN, "nbgrader"), "collect", "--update", A], root)
        term["third"] = grade(str(root), opts=OPTS, verbose=False)  # the resubmission, alone
        # make grade STUDENT=ben EXPORT=canvas,moodle
        term["fourth"] = grade(str(root), opts=OPTS, verbose=False, students=["ben"], export=["canvas", "moodle"])
        term["csv4"] = _rows(root)
        term["grades_after_fourth"] = fg.grades("ben")
        term["comments_after_fourth"] = fg.comments("ben")

        term["log"]["release_feedback"] = _run([os.path.join(BIN, "nbgrader"), "release_feedback", A], root)
        for student in ("ann", "ben", "cy"):
            _as_student(term, student, "fetch_feedback", A)
        term["csv5"] = term["csv4"]
        term["report"] = (root / "class_report.html").read_text(encoding="utf-8")
        yield term
    finally:
        fg.close()


def test_no_row_is_flagged_for_nbgraders_own_files(term):
    root = term["root"]
    assert (root / "submitted" / "ann" / A / "timestamp.txt").is_file()
    assert (root / "submitted" / "ann" / A / "submission_secret.txt").is_file()
    for run in ("first", "second"):
        for key, r in term[run].items():
            assert not any("extra" in f for f in r.flags), (run, key, r.flags)
            assert r.timestamp or key.startswith("dan/"), (key, r)
    ann = term["csv1"]["ann"]  # every automatic point; the written answer waits for a person
    assert ann["status"] == "ok" and float(ann["total"]) == float(ann["max"]) - points_by_hand(A), ann


def test_the_late_student_loses_the_policys_penalty_in_grades_csv_and_both_exports(term):
    root = term["root"]
    cy, ben = term["csv5"]["cy"], term["csv5"]["ben"]
    # cy handed in seconds after the due date: hours_late is there (0.00 at two decimals), and so is the penalty
    assert cy["hours_late"] != "" and float(cy["late_penalty"]) > 0, cy
    assert not ben["hours_late"] and not ben["late_penalty"], ben
    assert float(term["csv5"]["ann"]["late_penalty"]) > 0  # her resubmission came after the due date too
    score = float(cy["max"]) - points_by_hand(A)  # a full automatic score, the written answer not graded
    assert float(cy["late_penalty"]) == 0.25 * score, cy  # per_day 0.25, < 1 day late
    assert float(cy["total"]) == score - float(cy["late_penalty"])
    canvas = list(csv.reader((root / "grades_canvas.csv").open()))
    assert f"{A} (4321)" in canvas[0] and "Notes" in canvas[0], canvas[0]
    by = {row[3]: dict(zip(canvas[0], row, strict=True)) for row in canvas[2:]}
    assert float(by["cy"][f"{A} (4321)"]) == float(cy["total"]) and "late penalty" in by["cy"]["Notes"], by["cy"]
    moodle = {r["username"]: r for r in csv.DictReader((root / "grades_moodle.csv").open())}
    assert float(moodle["cy"][A]) == float(cy["total"]) and "late penalty" in moodle["cy"][f"{A} feedback"]


def test_the_manual_grade_and_comment_survive_every_run_and_reach_the_exports(term):
    root, test_cell, answer_cell = term["root"], term["test_cell"], term["answer_cell"]
    assert float(term["grades_after_second"][test_cell]["manual_score"]) == term["manual"]
    assert float(term["grades_after_fourth"][test_cell]["manual_score"]) == term["manual"]
    assert term["comments_after_fourth"][answer_cell]["manual_comment"] == "Mind the key and query order."
    before = float(term["csv1"]["ben"]["total"])
    for run in ("csv2", "csv4", "csv5"):
        ben = term[run]["ben"]
        assert float(ben[test_cell]) == term["manual"], (run, ben)
        assert float(ben["total"]) == before + term["manual"], (run, ben)  # the auto score of that cell was 0
        assert "Mind the key and query order." in ben["comments"], (run, ben)
    canvas = {row[3]: row for row in csv.reader((root / "grades_canvas.csv").open())}
    assert float(canvas["ben"][-1]) == before + term["manual"]
    moodle = {r["username"]: r for r in csv.DictReader((root / "grades_moodle.csv").open())}
    assert float(moodle["ben"][A]) == before + term["manual"]
    assert "Graded by hand in the formgrader: 1" in term["report"] and "Late: 2" in term["report"]
    assert "Mind the key and query order." in moodle["ben"][f"{A} feedback"]


def test_unchanged_submissions_are_not_graded_again_and_student_regrades_one(term):
    assert set(term["first"]) == {f"{s}/{A}" for s in ("ann", "ben", "cy", "dan")}
    assert term["second"] == {}  # nothing changed
    assert set(term["third"]) == {f"ann/{A}"}  # the resubmission alone
    assert set(term["fourth"]) == {f"ben/{A}"}  # STUDENT=ben
    assert term["csv4"]["cy"] == term["csv2"]["cy"]


def test_a_withdrawn_submission_leaves_the_gradebook_and_grades_csv(term):
    from nbgrader.api import Gradebook

    assert "dan" in term["csv1"] and "dan" not in term["csv2"]
    with Gradebook("sqlite:///" + str(term["root"] / "gradebook.db")) as gb:
        assert {s.student.id for s in gb.find_assignment(A).submissions} == {"ann", "ben", "cy"}
    assert not (term["root"] / "autograded" / "dan").exists()


def test_feedback_goes_back_through_the_exchange_with_what_to_do_next(term):
    assert "Releasing feedback for student 'ben'" in term["log"]["release_feedback"]
    for student in ("ann", "ben", "cy"):
        pages = list((term["homes"] / student / A / "feedback").glob(f"*/{A}.html"))
        assert pages, student
        text = pages[-1].read_text(encoding="utf-8")
        assert HEADING in text, student
    ben_page = next((term["homes"] / "ben" / A / "feedback").glob(f"*/{A}.html")).read_text(encoding="utf-8")
    assert term["task"].mistakes[0].name in ben_page


@pytest.mark.browser
def test_the_formgrader_lists_every_submission_graded_and_shows_the_graded_notebook(term):
    from site_helpers import chromium

    fg = term["formgrader"]
    subs = fg.api("GET", f"/formgrader/api/submissions/{A}")
    assert {s["student"] for s in subs} == {"ann", "ben", "cy"}
    assert all(s["autograded"] for s in subs), subs
    with chromium() as browser:
        page = browser.new_page()
        page.set_extra_http_headers({"Authorization": f"token {fg.token}"})  # the pages' own API calls too
        page.route("**/*", lambda route: route.continue_() if route.request.url.startswith(fg.url) else route.abort())
        page.goto(f"{fg.url}/formgrader/manage_submissions/{A}")
        page.wait_for_selector("td:has-text('cy')", timeout=60_000)
        rows = page.locator("tbody tr").all_inner_texts()
        assert len(rows) == 3 and all("\tgraded\t" in row for row in rows), rows
        assert "needs autograding" not in page.inner_text("body")
        page.goto(f"{fg.url}/formgrader/submissions/{fg.notebook_id('ben')}/")
        page.wait_for_selector("text=Grading notes", timeout=60_000)
        assert HEADING in page.inner_text("body")
        assert term["task"].mistakes[0].name in page.inner_text("body")  # this run's graded notebook
