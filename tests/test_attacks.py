"""The attack catalogue (tests/attacks/, one submission a folder, outcomes in expected.json from make_attacks.py;
links, a FIFO, hostile names and round4.py's 17 MB files are made here), graded by the real `make grade` path in one
class with honest and blank classmates (JOBS=2, short timeouts): every grade exactly right, no file outside the
grader's outputs changed, nothing left running or on disk; also a resubmission, two runs at once, a killed grader."""

import csv
import glob
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from attn_grader.run.autograde import Options, grade

HERE = os.path.dirname(os.path.abspath(__file__))
ATTACKS = os.path.join(HERE, "attacks")
sys.path.insert(0, ATTACKS)  # its own modules (round4.py: issue 40's files that cannot live in git)
from round4 import LARGE, large_files  # noqa: E402

REPO = os.path.dirname(HERE)
A = "ps04_step_by_step"
VENV = sys.prefix
OPTS = Options(cell_timeout=15, budget=120, recheck_seconds=60, call_seconds=5, memory=3 << 30)
HONEST = os.path.join(ATTACKS, "a00_honest_prints_warns", A + ".ipynb")
OUTPUTS = ("grades.csv", "gradebook.db", "grading_results.json", "grading_report.md", "class_report.html", "feedback",
           "autograded",
           ".grader")
HOSTILE_NAMES = ["*", ".x", "a[1]", "new\nline", "=2+3", "<img src=x onerror=alert(1)>"]
BLANK = os.path.join(REPO, "exercises", A, A + ".ipynb")
SECRET_ENV, SECRET_VALUE = "ATTN_TEST_DB_URL", "postgresql://user:hunter2-in-the-grader@db/course"

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("grading_attacks")]


def _processes_mentioning(text: str) -> list[int]:
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit() and int(pid) != os.getpid():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if text.encode() in f.read():
                        pids.append(int(pid))
            except OSError:
                pass
    return pids


def _snapshot(root: str) -> dict[str, str]:
    """Every file of the course outside the grader's outputs, and the venv's site-packages, hashed."""
    out = {}
    for top in (root, *glob.glob(os.path.join(VENV, "lib", "python3*", "site-packages"))):
        for dirpath, dirnames, filenames in os.walk(top):
            if dirpath == root:
                dirnames[:] = [d for d in dirnames if d not in OUTPUTS]
                filenames = [f for f in filenames if f not in OUTPUTS]
            if top != root:  # the venv: its .pth files (what runs at every start), by name
                out.update({os.path.join(dirpath, f): "" for f in filenames if f.endswith(".pth")})
                dirnames[:] = []
                continue
            for f in filenames:
                p = os.path.join(dirpath, f)
                if os.path.islink(p):
                    out[p] = "link:" + os.readlink(p)
                elif os.path.isfile(p):
                    with open(p, "rb") as fh:
                        out[p] = hashlib.sha256(fh.read()).hexdigest()
                else:
                    out[p] = "special"
    return out


def _submit(root: str, student: str, notebook_path: str | None) -> str:
    d = os.path.join(root, "submitted", student, A)
    os.makedirs(d, exist_ok=True)
    if notebook_path:
        shutil.copy(notebook_path, os.path.join(d, A + ".ipynb"))
    return d


def _fill_placeholders(folder: str, root: str) -> None:
    for fname in os.listdir(folder):
        p = os.path.join(folder, fname)
        with open(p, encoding="utf-8", errors="replace") as f:
            text = f.read()
        if "{COURSE}" in text or "{VENV}" in text:
            with open(p, "w") as f:
                f.write(text.replace("{COURSE}", root).replace("{VENV}", VENV))


def _course(tmp_path_factory, name: str) -> str:
    root = str(tmp_path_factory.mktemp(name))
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(root, "solutions", A))
    return root


def _rows(root: str) -> dict[str, dict]:
    with open(os.path.join(root, "grades.csv"), newline="") as f:
        return {r["student"]: r for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = _course(tmp_path_factory, "attack_class")
    with open(os.path.join(ATTACKS, "expected.json")) as f:
        expected = json.load(f)
    for name in expected:
        dst = os.path.join(root, "submitted", name, A)
        shutil.copytree(os.path.join(ATTACKS, name), dst)
        _fill_placeholders(dst, root)
        if os.path.exists(os.path.join(dst, ".keep")):
            os.remove(os.path.join(dst, ".keep"))
    solution = os.path.join(root, "solutions", A, A + ".ipynb")
    os.symlink(solution, os.path.join(_submit(root, "c01_symlink_to_solution", None), A + ".ipynb"))
    os.symlink("/etc/passwd", os.path.join(_submit(root, "c02_symlink_to_passwd", None), A + ".ipynb"))
    os.mkfifo(os.path.join(_submit(root, "c03_fifo", None), A + ".ipynb"))
    os.symlink(os.path.join(root, "submitted", "a00_honest_prints_warns"), os.path.join(root, "submitted", "c04_link"))
    os.link(solution, os.path.join(_submit(root, "c05_hard_link_to_solution", None), A + ".ipynb"))
    ungradable = {"c01_symlink_to_solution": "symbolic link", "c02_symlink_to_passwd": "symbolic link",
                  "c03_fifo": "FIFO", "c04_link": "symbolic link", "c05_hard_link_to_solution": "hard link"}
    many = json.load(open(HONEST))  # 40,000 cells with grade ids the release does not have
    many["cells"] += [{"cell_type": "code", "source": "", "metadata": {"nbgrader": {"grade_id": f"u{i}"}},
                       "outputs": [], "execution_count": None} for i in range(40_000)]
    open(os.path.join(_submit(root, "c06_many_cells", None), A + ".ipynb"), "w").write(json.dumps(many))  # noqa: SIM115
    expected.update(large_files(root, lambda student: _submit(root, student, None), HONEST))  # issue 40's
    os.environ[SECRET_ENV] = SECRET_VALUE  # in the grader's environment: never in a sandbox's (d04)
    for name in HOSTILE_NAMES:
        _submit(root, name, HONEST)
    _submit(root, "zz_honest_last", HONEST)
    _submit(root, "zz_blank_last", BLANK)
    before = _snapshot(root)
    start = time.monotonic()
    try:
        results = grade(root, jobs=2, opts=OPTS, verbose=False)
    finally:
        os.environ.pop(SECRET_ENV, None)
    seconds = time.monotonic() - start
    return {"root": root, "expected": expected, "results": results, "rows": _rows(root), "before": before,
            "after": _snapshot(root), "ungradable": ungradable, "seconds": seconds}


def test_every_submission_has_a_row(graded):
    names = set(graded["expected"]) | set(graded["ungradable"]) | {"zz_honest_last", "zz_blank_last", "c06_many_cells"}
    names |= {("'" + n if n.startswith("=") else n) for n in HOSTILE_NAMES}  # a formula is quoted in the CSV
    assert sorted(graded["rows"]) == sorted(names)


@pytest.mark.parametrize("name", sorted(json.load(open(os.path.join(ATTACKS, "expected.json")))) + LARGE)
def test_attack_outcome(graded, name):
    exp, row = graded["expected"][name], graded["rows"][name]
    assert row["sandbox"] == "on"
    assert exp.get("reason_has", "") in row["reason"] and exp.get("reason_lacks", "\0") not in row["reason"], row
    if exp["score"] is None:
        assert row["status"] == exp["status"], row
        assert row["reason"], "an ungradable submission must say why"
        return
    assert float(row["total"]) == exp["score"], (row["total"], row["reason"])
    assert row["status"] == ("flagged" if exp["flagged"] else "ok"), (row["status"], row["reason"])
    if "marker" in exp:
        assert _processes_mentioning(exp["marker"]) == [], "a process started by the notebook outlived grading"
    feedback = "".join(open(p, encoding="utf-8").read() for p in
                       glob.glob(os.path.join(graded["root"], "feedback", name, "**", "*.html"), recursive=True))
    for text in exp.get("feedback_has", []):  # the graded feedback's own words
        assert text in feedback, text
    assert [t for t in exp.get("feedback_lacks", []) if t in feedback] == [] and \
        len(feedback) < exp.get("feedback_under", 1 << 40), len(feedback)
    if exp.get("no_leak"):  # what the kernel printed reaches the feedback: no instructor's or classmate's file
        assert feedback, "no feedback written"
        secret = open(os.path.join(graded["root"], ".grader", "secret")).read().strip()
        for secret_text in ("cell_type", "&quot;grade_id&quot;", '"grade_id"', "this is a harmless warning",
                            "ps07_positional", secret):
            assert secret_text not in feedback, secret_text[:20]
    if exp.get("no_env"):  # the kernel printed every environment it could read: none is the grader's
        assert "/proc/1/environ" in feedback and SECRET_VALUE not in feedback and "hunter2" not in feedback
    if exp.get("no_hidden"):  # a hook printed each executed cell: no line of the hidden tests shows
        assert feedback and "[grader: the output of the hidden tests is not shown" in feedback
        assert f'check("{A}"' not in feedback and "check(&quot;" not in feedback and "HIDDEN TESTS" not in feedback
    if exp.get("no_script"):  # script from the kernel is inert: no live element carries it
        from bs4 import BeautifulSoup

        soup = BeautifulSoup(feedback, "html.parser")
        assert [s.get_text()[:80] for s in soup.find_all("script") if "XSS" in s.get_text()] == []
        assert [t.name for t in soup.find_all(True) if any(a.lower().startswith("on") for a in t.attrs)] == []
        assert not soup.find_all(["svg", "iframe", "object", "embed"])
        report = open(os.path.join(graded["root"], "grading_report.md")).read()
        assert "<script>" not in report and "&lt;script&gt;" in report


def test_many_unknown_cells_make_one_short_flag(graded):
    """40,000 unknown cells: one counted flag; every grades.csv field within the csv module's default limit."""
    row = graded["rows"]["c06_many_cells"]
    assert (float(row["total"]), row["status"], len(row["reason"]) < 2000) == (10, "flagged", True), row
    assert "40,000 unknown cells (dropped)" in row["reason"]
    with open(os.path.join(graded["root"], "grades.csv"), newline="") as f:
        assert max(len(cell) for r in csv.reader(f) for cell in r) < 10_000


@pytest.mark.parametrize("name", ["c01_symlink_to_solution", "c02_symlink_to_passwd", "c03_fifo", "c04_link",
                                  "c05_hard_link_to_solution"])
def test_links_and_fifos_are_not_read(graded, name):
    row = graded["rows"][name]
    assert row["status"] == "ungradable" and graded["ungradable"][name] in row["reason"], row
    assert "root:" not in row["reason"] and "cells" not in row["reason"]
    assert not os.path.exists(os.path.join(graded["root"], "feedback", name, A))


def test_hostile_folder_names_cost_nobody_a_grade(graded):
    rows = graded["rows"]
    for name in [*HOSTILE_NAMES, "zz_honest_last"]:
        row = rows["'" + name if name.startswith("=") else name]
        assert (float(row["total"]), row["status"]) == (10, "ok"), (name, row)
    assert float(rows["zz_blank_last"]["total"]) == 0
    report = open(os.path.join(graded["root"], "grading_report.md")).read()
    assert "<img" not in report and "&lt;img src=x onerror=alert(1)&gt;" in report
    page = open(os.path.join(graded["root"], "class_report.html")).read()
    assert "<img src=x" not in page and "<script" not in page.lower()  # no student text unescaped there either
    assert os.path.isfile(os.path.join(graded["root"], "feedback", "new\nline", A, A + ".html"))


def test_no_file_outside_the_outputs_changed(graded):
    before, after = graded["before"], graded["after"]
    changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
    assert changed == []
    assert not os.path.exists("/tmp/ATTACK_PTH_RAN")


def test_nothing_left_running_or_on_disk(graded):
    root = graded["root"]
    assert _processes_mentioning(root) == []
    scratch = os.path.join(root, ".grader", "scratch")
    assert os.listdir(scratch) == []
    assert oct(os.stat(os.path.join(root, ".grader")).st_mode & 0o777) == "0o700"
    big = [p for p in glob.glob(os.path.join(root, "**"), recursive=True)
           if os.path.isfile(p) and os.path.getsize(p) > 20 << 20]
    assert big == []


def test_recheck_inputs_come_from_the_course_secret(graded):
    """The secret is private to the grader, and the re-check's inputs differ from the notebook's."""
    import numpy as np

    from attn_grader.checking.core import get_task
    from attn_grader.checking.recheck import cases_for

    secret_file = os.path.join(graded["root"], ".grader", "secret")
    assert oct(os.stat(secret_file).st_mode & 0o777) == "0o600"
    secret = open(secret_file, "rb").read().strip()
    task = get_task(A, "output_for_query")
    mine, notebook = cases_for(task, secret), task.hidden_cases()
    assert len(mine) == len(notebook)
    differ = [any(not np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(m, n, strict=True))
              for m, n in zip(mine, notebook, strict=True)]
    assert sum(differ) >= len(differ) // 2, "most re-check inputs equal the notebook's hidden inputs"
    again = cases_for(task, secret)
    assert all(np.array_equal(np.asarray(x), np.asarray(y)) for m, n in zip(mine, again, strict=True)
               for x, y in zip(m, n, strict=True))


@pytest.mark.browser
def test_no_script_of_a_student_runs_in_the_feedback_page(graded, tmp_path):
    """Script attacks' pages in Chromium, offline: no dialog (a control's opens); before the resubmission test."""
    from site_helpers import chromium, offline_page
    (control := tmp_path / "control.html").write_text("<img src=x onerror=\"alert('control')\">")
    pages = [str(control)] + [p for n, exp in graded["expected"].items() if exp.get("no_script") for p in
                              glob.glob(os.path.join(graded["root"], "feedback", n, "**", "*.html"), recursive=True)]
    dialogs, titles = [], []
    with chromium() as browser:
        page = offline_page(browser)
        page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
        for path in pages:
            page.goto("file://" + path)
            page.wait_for_timeout(500)
            titles.append(page.title())  # student JavaScript sets document.title (e05): never run
    assert len(pages) > 2 and dialogs == ["control"] and not [t for t in titles if "PWNED" in t or t in ("1", "2", "3")]


def test_resubmission_replaces_the_grade(graded):
    root = graded["root"]
    for name in os.listdir(os.path.join(root, "submitted")):
        if name not in ("a00_honest_prints_warns", "a08_tamper_cells"):
            p = os.path.join(root, "submitted", name)
            os.unlink(p) if os.path.islink(p) else shutil.rmtree(p)
    wrong = os.path.join(ATTACKS, "a01_patch_comparison", A + ".ipynb")
    shutil.copy(wrong, os.path.join(root, "submitted", "a00_honest_prints_warns", A, A + ".ipynb"))
    grade(root, jobs=1, opts=OPTS, verbose=False)
    new = _rows(root)
    assert sorted(new) == ["a00_honest_prints_warns", "a08_tamper_cells"]
    assert float(new["a00_honest_prints_warns"]["total"]) == 7, new["a00_honest_prints_warns"]
    import sqlite3

    con = sqlite3.connect(os.path.join(root, "gradebook.db"))
    subs = con.execute("select count(*) from submitted_assignment s join student t on s.student_id = t.id "
                       "where t.id = 'a00_honest_prints_warns'").fetchone()[0]
    con.close()
    assert subs == 1


def _small_class(tmp_path_factory, name: str) -> str:
    root = _course(tmp_path_factory, name)
    _submit(root, "ann", HONEST)
    _submit(root, "ben", BLANK)
    _submit(root, "cy", os.path.join(ATTACKS, "a01_patch_comparison", A + ".ipynb"))
    return root


EXPECTED_SMALL = {"ann": ("10", "ok"), "ben": ("0", "ok"), "cy": ("7", "flagged")}


def test_two_runs_at_once(tmp_path_factory):
    root = _small_class(tmp_path_factory, "two_runs")
    errors = []

    def one():
        try:
            grade(root, jobs=1, opts=OPTS, verbose=False)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
    threads = [threading.Thread(target=one) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert {k: (r["total"], r["status"]) for k, r in _rows(root).items()} == EXPECTED_SMALL
    import sqlite3

    con = sqlite3.connect(os.path.join(root, "gradebook.db"))
    n = con.execute("select count(*) from submitted_assignment").fetchone()[0]
    con.close()
    assert n == 3


def test_a_grader_killed_mid_run_leaves_nothing_and_runs_again(tmp_path_factory):
    root = _small_class(tmp_path_factory, "killed")
    proc = subprocess.Popen([sys.executable, "-m", "attn_grader.run.autograde", "--course", root,
                             "--cell-timeout", "15"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)
    for line in proc.stdout:
        if line.startswith("[ran 1/"):
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    deadline = time.monotonic() + 10
    while _processes_mentioning(root) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _processes_mentioning(root) == [], "a kernel or sandbox outlived the grader"
    assert os.listdir(os.path.join(root, ".grader", "scratch")) == []
    assert not os.path.exists(os.path.join(root, "grades.csv"))
    grade(root, jobs=1, opts=OPTS, verbose=False)
    assert {k: (r["total"], r["status"]) for k, r in _rows(root).items()} == EXPECTED_SMALL


def test_a_stalled_worker_is_replaced(tmp_path_factory, monkeypatch):
    """A worker that stops reporting (a zmq context blocked for ever) is restarted; every row exactly right."""
    import dataclasses

    from attn_grader.run import cluster

    root = _small_class(tmp_path_factory, "stalled")
    flag = os.path.join(root, "stalled-once")
    monkeypatch.setenv(cluster.FAULT_ENV, json.dumps({"stall_once": flag}))  # the first batch sleeps an hour
    t0 = time.monotonic()
    grade(root, jobs=1, opts=dataclasses.replace(OPTS, stall_seconds=10), verbose=False)
    assert os.path.exists(flag) and time.monotonic() - t0 < 600
    assert {k: (r["total"], r["status"]) for k, r in _rows(root).items()} == EXPECTED_SMALL
    assert _processes_mentioning(root) == []


def test_no_sandbox_is_refused_or_said_in_every_row(tmp_path_factory):
    from attn_grader.isolation import sandbox

    root = _small_class(tmp_path_factory, "no_sandbox")
    # Graded just before ann, in the same batch: without the sandbox it finds the kernel started ahead
    # for ann's notebook and breaks np.exp in it (the control for b14's outcome in the sandbox).
    _fill_placeholders(_submit(root, "a_b14", os.path.join(ATTACKS, "b14_reach_the_next_kernel", A + ".ipynb")), root)
    env = {**os.environ, "PATH": "/nonexistent"}
    code = ("import attn_grader.isolation.sandbox as s, sys; s.BWRAP = '/nonexistent/bwrap'; "
            "import attn_grader.run.autograde as a; a.sandbox.BWRAP = s.BWRAP; sys.exit(a.main(sys.argv[1:]))")
    refused = subprocess.run([sys.executable, "-c", code, "--course", root], cwd=REPO, env=env,
                             capture_output=True, text=True)
    assert refused.returncode == 2 and "bubblewrap" in refused.stderr and "--no-sandbox" in refused.stderr
    assert not os.path.exists(os.path.join(root, "grades.csv"))
    import dataclasses

    results = grade(root, jobs=1, opts=dataclasses.replace(OPTS, sandbox=False), verbose=False)
    rows = _rows(root)
    assert {r["sandbox"] for r in rows.values()} == {"off"} and not any(r.sandbox for r in results.values())
    assert "no sandbox" in open(os.path.join(root, "grading_report.md")).read()
    assert all("without the sandbox" in open(p).read()
               for p in glob.glob(os.path.join(root, "feedback", "*", A, "*.html")))
    assert sandbox.unusable() is None  # and on this machine the sandbox itself works
    assert float(rows["a_b14"]["total"]) == 10 and float(rows["ann"]["total"]) < 10, rows["ann"]
