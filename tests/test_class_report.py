"""The class report (class_report.html) and the LMS exports (grades_canvas.csv, grades_moodle.csv).

A class made from the catalogue is graded once (the real path, sandbox and all, with
``--export canvas,moodle``): three students make the first task's first catalogued mistake, one its
second, two the last task's first, two answer right, one hands in a notebook cut in half
(ungradable) and one patches numpy's comparisons (flagged).  Then:

* the report ranks the mistakes by how many made them, counts every submission once, and lists the
  ungradable and the flagged submission with their reasons;
* the page, opened offline in Chromium, loads every image, logs no error, and axe-core's WCAG 2.1 A
  and AA rules find nothing, whatever the impact;
* a student's feedback page (issue 30), opened in Chromium with the network off: every formula of the
  task text drawn (MathML, in the English and the Chinese half of each cell), no raw ``$…$`` left in
  its text, nothing requested from another host, nothing for axe-core's WCAG 2.1 A and AA rules; it
  opens with what to do next (the task, its score, the mistake's name and message, the chapter's
  section that teaches it);
* the Canvas and Moodle files have the layouts those systems document, and read back they give the
  numbers of grades.csv.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from site_helpers import describe_violations, wcag_violations

from attn_grader.authoring.demo import answers_of, with_answers
from attn_grader.checking.core import tasks_of
from attn_grader.reports import classreport, lms
from attn_grader.reports.classreport import CHROMIUM, CHROMIUM_ARGS
from attn_grader.reports.result import Result
from attn_grader.run.autograde import Options, grade
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
ATTACKS = os.path.join(REPO, "tests", "attacks")
OPTS = Options(cell_timeout=60, budget=300, recheck_seconds=120, call_seconds=30)

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("class_report")]

TASKS = tasks_of(A)
FIRST, LAST = TASKS[0], TASKS[-1]
CLASS = {  # student -> (task, mistake index) slips; None: right answers
    "s01": [(FIRST, 0)], "s02": [(FIRST, 0)], "s03": [(FIRST, 0)], "s04": [(FIRST, 1)],
    "s05": [(LAST, 0)], "s06": [(LAST, 0)], "s07": None, "s08": None,
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("class_report"))
    shutil.copytree(os.path.join(REPO, "solutions", A), os.path.join(root, "solutions", A))
    src = nbformat.read(os.path.join(REPO, "solutions", A, A + ".ipynb"), as_version=4)
    rel = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    right = answers_of(src)
    for student, slips in CLASS.items():
        answers = dict(right, **{f"{t.func_name}_answer": t.mistakes[k].source for t, k in slips or []})
        d = os.path.join(root, "submitted", student, A)
        os.makedirs(d)
        nbformat.write(with_answers(rel, answers), os.path.join(d, A + ".ipynb"))
    d = os.path.join(root, "submitted", "s09_broken", A)
    os.makedirs(d)
    text = nbformat.writes(with_answers(rel, right))
    Path(d, A + ".ipynb").write_text(text[: len(text) // 2])
    d = os.path.join(root, "submitted", "s10_flagged", A)
    shutil.copytree(os.path.join(ATTACKS, "a01_patch_comparison"), d)
    # Two students known to the LMS by other identifiers; the others by their folder names.
    Path(root, lms.ROSTER_FILE).write_text("student,name,canvas_id,sis_login_id,section,username,email\n"
                                           "s01,\"Doe, Ann\",101,ann.doe,Sec 1,adoe,ann@example.edu\n"
                                           "s02,=HYPERLINK(1),,,Sec 2,bee,bee@example.edu\n")
    results = grade(root, jobs=2, opts=OPTS, verbose=False, export=["canvas", "moodle"])
    html = Path(root, classreport.REPORT_FILE).read_text()
    with open(os.path.join(root, "grades.csv"), newline="") as f:
        rows = {r["student"]: r for r in csv.DictReader(f)}
    return {"root": root, "results": results, "html": html, "soup": BeautifulSoup(html, "html.parser"), "rows": rows}


def _table(soup, caption: str) -> list[list[str]]:
    cap = next(c for c in soup.find_all("caption") if c.get_text(strip=True) == caption)
    return [[td.get_text(" ", strip=True) for td in tr.find_all(["td", "th"])]
            for tr in cap.parent.tbody.find_all("tr")]


def test_every_submission_is_graded_as_expected(graded):
    rows = graded["rows"]
    assert len(rows) == 10
    assert rows["s09_broken"]["status"] == "ungradable" and rows["s10_flagged"]["status"] == "flagged"
    assert float(rows["s07"]["total"]) == float(rows["s07"]["max"]) - points_by_hand(A) == 10  # the written
    # answer (graded by hand) is the rest


def test_mistakes_ranked_by_how_many_made_them(graded):
    soup = graded["soup"]
    first = _table(soup, f"{FIRST.func_name}_test")
    assert [(r[0], r[1]) for r in first] == [("3", FIRST.mistakes[0].name), ("1", FIRST.mistakes[1].name)]
    assert first[0][2] == FIRST.mistakes[0].message
    assert "output:" in first[0][3] and "expected:" in first[0][3]  # one example, numbers only
    assert not any(s in first[0][3] for s in CLASS)
    last = _table(soup, f"{LAST.func_name}_test")
    assert [(r[0], r[1]) for r in last] == [("2", LAST.mistakes[0].name)]


def test_every_submission_counted_once(graded):
    soup = graded["soup"]
    summary = soup.find("section").find("p").get_text()
    assert summary.startswith("10 submissions: 9 graded (1 of them flagged), 1 ungradable.")
    per_task = _table(soup, "Scores per task")
    assert [r[0] for r in per_task] == [f"{t.func_name}_test" for t in TASKS] + ["written_answer"]
    for _, full, partial, zero in per_task:
        assert int(full) + int(partial) + int(zero) == 9
    assert per_task[-1][1:] == ["0", "0", "9"]  # the written answer left as released: nbgrader's 0
    graded_rows = [r for r in graded["rows"].values() if r["status"] != "ungradable"]
    for k, t in enumerate(TASKS):
        col = f"{t.func_name}_test"
        full = sum(float(r[col]) == float(max(float(x[col]) for x in graded_rows)) for r in graded_rows)
        assert int(per_task[k][1]) == full
    for caption in (f"{t.func_name}_test" for t in TASKS):
        cap = [c for c in soup.find_all("caption") if c.get_text(strip=True) == caption]
        if cap:  # a student is in at most one row of a task's table
            counts = sum(int(r[0]) for r in _table(soup, caption))
            lost = sum(float(r[caption]) < float(graded["rows"]["s07"][caption]) for r in graded_rows)
            assert counts == lost


def test_flagged_and_ungradable_listed_with_reasons(graded):
    soup = graded["soup"]
    head = next(h for h in soup.find_all("h3") if h.get_text() == "Flagged and ungradable submissions")
    rows = [[td.get_text(" ", strip=True) for td in tr.find_all("td")] for tr in head.find_next("table").tbody("tr")]
    assert [(r[0], r[1]) for r in rows] == [("s10_flagged", "flagged"), ("s09_broken", "ungradable")]
    assert "unreadable" in rows[1][2] and "JSON" in rows[1][2] and rows[0][2] != "-"


def test_figures_have_alt_text_that_says_what_they_show(graded):
    imgs = graded["soup"].find_all("img")
    assert len(imgs) == 2 and all(i["src"].startswith("data:image/png;base64,") for i in imgs)
    assert "9 graded totals" in imgs[0]["alt"] and "2 scored 10" in imgs[0]["alt"]
    assert all(f"{t.func_name}_test:" in imgs[1]["alt"] for t in TASKS)


def test_the_page_in_chromium_offline_images_console_and_axe(graded):
    if not Path(CHROMIUM).is_file():
        pytest.fail(f"no chromium at {CHROMIUM} (make system-packages installs it)")
    from playwright.sync_api import sync_playwright

    external, errors = [], []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        page = browser.new_page()
        page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:"))
                   else (external.append(r.request.url), r.abort()))
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(Path(graded["root"], classreport.REPORT_FILE).as_uri())
        broken = page.evaluate("[...document.images].filter(i => !i.complete || i.naturalWidth === 0).length")
        n_images = page.evaluate("document.images.length")
        bad = wcag_violations(page)
        browser.close()
    assert external == [] and errors == []
    assert n_images == 2 and broken == 0
    assert bad == [], describe_violations(bad)


_RAW_TEX = re.compile(r"\$[^$\n]+\$|\\(alpha|frac|sum|cdot|qquad)\b")


def test_a_feedback_page_reads_offline_with_its_formulas_and_passes_wcag(graded):
    """s01 made the first task's first catalogued mistake."""
    from site_helpers import chromium, offline_page

    path = Path(graded["root"], "feedback", "s01", A, A + ".html")
    source = path.read_text(encoding="utf-8")
    assert "$b^1$" not in source and "<math" in source and "<script" not in source
    with chromium() as browser:
        page = offline_page(browser)
        errors = []
        page.on("console", lambda m: m.type == "error" and errors.append(m.text))
        page.goto(path.as_uri(), wait_until="load")
        text = page.evaluate("document.body.innerText")
        drawn = page.evaluate("""() => [...document.querySelectorAll('math')].map(m => ({
            zh: !!m.closest('[lang="zh-CN"]'), w: m.getBoundingClientRect().width}))""")
        first = page.evaluate("""() => { const h = document.querySelector('.text_cell_render h3');
            const list = h.parentElement.querySelector('ol');
            return {heading: h.textContent, item: list.children[0].innerText,
                    links: [...list.children[0].querySelectorAll('a')].map(a => a.href)}; }""")
        bad = wcag_violations(page)
        external = page.external
    assert external == [] and errors == []
    assert _RAW_TEX.findall(text) == [], _RAW_TEX.findall(text)[:5]
    assert len(drawn) > 20 and all(m["w"] > 0 for m in drawn), "a formula is not drawn"
    assert any(m["zh"] for m in drawn) and any(not m["zh"] for m in drawn), "formulas in both languages"
    assert bad == [], describe_violations(bad)
    # the page opens with what to do next: the first task, its mistake, and the section that teaches it
    assert first["heading"].startswith("What to do next")
    mistake = FIRST.mistakes[0]
    assert FIRST.func_name in first["item"] and mistake.name in first["item"] and mistake.message in first["item"]
    assert "0 / " in first["item"] and len(first["links"]) == 2
    assert first["links"][0].endswith("/book/step_by_step.html#step-2-every-score-of-query-1-including-its-own")
    assert "/zh/book/step_by_step.html#" in first["links"][1]


def _read(path) -> list[list[str]]:
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.reader(f))


def test_canvas_file_has_canvas_columns_and_gives_back_grades_csv(graded):
    root, rows = graded["root"], graded["rows"]
    table = _read(os.path.join(root, lms.FILES["canvas"]))
    header, points, body = table[0], table[1], table[2:]
    assert header[:5] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] and header[5:] == [A]
    assert points[0] == "Points Possible" and float(points[5]) == float(rows["s07"]["max"])
    assert len(body) == len(rows)
    by_login = {r[3]: r for r in body}
    assert by_login["ann.doe"][:5] == ["Doe, Ann", "101", "", "ann.doe", "Sec 1"]
    assert by_login["s02"][0] == "'=HYPERLINK(1)"  # no formula reaches a spreadsheet
    back = {}
    for r in body:
        student = {"ann.doe": "s01"}.get(r[3], r[3])
        back[student] = r[5]
    assert set(back) == set(rows)
    for student, row in rows.items():
        assert back[student] == row["total"]  # the same text: "" for the ungradable one
        if row["total"]:
            assert float(back[student]) == float(row["total"])


def test_moodle_file_has_a_user_column_and_gives_back_grades_csv(graded):
    root, rows = graded["root"], graded["rows"]
    table = _read(os.path.join(root, lms.FILES["moodle"]))
    header, body = table[0], table[1:]
    assert header == ["username", "email", A, f"{A} feedback"]  # username and email: what Moodle maps a user
    # from; the feedback column carries lateness and the graders' comments (docs/grading.md)
    by_user = {r[0]: r for r in body}
    assert by_user["adoe"][1] == "ann@example.edu" and by_user["bee"][1] == "bee@example.edu"
    assert by_user["s05"][1] == ""
    back = {{"adoe": "s01", "bee": "s02"}.get(u, u): r[2] for u, r in by_user.items()}
    assert set(back) == set(rows)
    for student, row in rows.items():
        assert back[student] == row["total"]
        assert back[student] == "" or float(back[student]) >= 0  # a number or no grade


def test_a_bad_roster_or_format_is_refused_before_grading(tmp_path):
    Path(tmp_path, lms.ROSTER_FILE).write_text("name,email\nAnn,a@x\n")
    for export, needle in (("canvas", "no 'student' column"), ("blackboard", "unknown export format")):
        proc = subprocess.run([sys.executable, "-m", "attn_grader.run.autograde", "--course", str(tmp_path),
                               "--export", export], cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and needle in proc.stderr, proc.stderr
    assert not Path(tmp_path, "grades.csv").exists()


def test_export_again_without_grading(graded, tmp_path):
    root = graded["root"]
    before = Path(root, lms.FILES["canvas"]).read_text()
    os.remove(os.path.join(root, lms.FILES["canvas"]))
    proc = subprocess.run([sys.executable, "-m", "attn_grader.reports.lms", "canvas", "--course", root], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and Path(root, lms.FILES["canvas"]).read_text() == before


def test_findings_rank_ties_by_name_and_count_a_student_once():
    def r(student, status="ok", mistake=None, score=0.0):
        res = Result(student, A, tasks=["t"], max={"t": 2.0}, scores={"t": score}, status=status, max_total=2.0)
        if mistake:
            res.mistakes = {"t": {"name": mistake, "message": mistake + "!", "got": "1", "expected": "2"}}
        return res

    results = [r("a", mistake="beta"), r("b", mistake="alpha"), r("c", mistake="beta"), r("d", mistake="alpha"),
               r("e", mistake="error"), r("f", mistake="gamma"), r("g", score=1.0), r("h", score=2.0),
               r("i", status="ungradable", mistake="beta")]
    ranked = classreport.findings(results, "t")
    assert [(f["name"], f["count"]) for f in ranked] == [("alpha", 2), ("beta", 2), ("gamma", 1), ("error", 1),
                                                          ("notebook", 1)]
    assert sum(f["count"] for f in ranked) == 7  # every graded submission that lost points, once
    assert ranked[0]["example"] == {"got": "1", "expected": "2"}


def test_a_cell_graded_by_hand_is_no_mistake_and_waits_outside_the_shares():
    """The instructor trial (issue 39): the written answer, not yet graded, showed as 'zero' for the whole class and
    under 'What went wrong' as 'the notebook's test failed while the re-check passed'."""
    def r(student, manual=None):
        res = Result(student, A, tasks=["t", "written_answer"], max={"t": 2.0, "written_answer": 2.0},
                     manual_tasks=["written_answer"], auto={"t": 2.0}, manual=manual or {}, status="ok",
                     max_total=4.0)
        return res.recount()

    results = [r("a"), r("b"), r("c", manual={"written_answer": 1.0})]
    assert classreport.findings(results, "written_answer") == []
    page = classreport.render({x.key: x for x in results}, {"finished": 0, "seconds": 1, "workers": 1, "graded": 3})
    assert "waiting for a grader: 2" in page
    shares = re.search(r'<th scope="row">written_answer</th>((?:<td>\d+</td>){3})', page)
    assert shares and re.findall(r"\d+", shares.group(1)) == ["0", "1", "0"], page[-3000:]  # c alone: partial


def test_report_escapes_what_students_wrote():
    bad = "<img src=x onerror=alert(1)>"
    res = Result(bad, A, tasks=["t"], max={"t": 2.0}, scores={}, status="ungradable", max_total=2.0,
                 reason=[bad])
    page = classreport.render({f"{bad}/{A}": res}, {"finished": 0, "seconds": 1, "workers": 1, "graded": 1})
    assert bad not in page and "&lt;img src=x" in page
    assert "<script" not in page.lower()
    json.dumps(res.to_dict())  # the new field is stored as JSON


def test_alike_pairs_are_in_the_class_report_and_told_to_no_student(graded):
    """s01..s03 hand in the same notebook (the solution with the same slip), s07 and s08 the solution:
    the class report lists those pairs with score 1, their lines side by side; grades.csv and every
    feedback page say nothing of it."""
    root, soup = graded["root"], graded["soup"]
    section = soup.find("section", attrs={"aria-labelledby": f"sim-{A}"})
    assert section is not None and section.find("h3").get_text() == "Alike answer code"
    rows = [[td.get_text() for td in tr.find_all("td")] for tr in section.find("table", class_="similar").tbody("tr")]
    scores = {frozenset(r[1:3]): float(r[3]) for r in rows}
    for pair in (("s01", "s02"), ("s01", "s03"), ("s02", "s03"), ("s07", "s08")):
        assert scores[frozenset(pair)] == 1.0, pair
    assert not any(s.startswith("s09") for p in scores for s in p)  # ungradable: no answers read
    assert [float(r[3]) for r in rows] == sorted((float(r[3]) for r in rows), reverse=True)
    assert section.find("table", class_="side").find("mark") is not None
    told = [Path(root, "grades.csv"), *Path(root, "feedback").rglob("*.html")]
    assert len(told) > 8
    for path in told:
        text = path.read_text(encoding="utf-8").lower()
        assert "alike" not in text and "similar" not in text and "copied" not in text, path
