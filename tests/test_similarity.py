"""Who copied from whom (attn_grader/reports/similarity.py): copies are found, independent answers are not.

Fast: copydetect on answer cells, no grading.  The rates over every assignment's independently written
answers are tests/similarity_cases.py's (README, "Who copied from whom"); the class report's section is
checked on a rendered page with a submission that carries ``<script>`` in its code.
"""

import sys
from pathlib import Path

import copydetect  # noqa: F401 - its import (matplotlib's pyplot: about a second) before any test's clock
import numpy as np
import pytest
from bs4 import BeautifulSoup

sys.path.insert(0, str(Path(__file__).resolve().parent))

from similarity_cases import VARIANTS, independent, measure, release, renamed

from attn_grader.authoring.demo import answers_of, disguise
from attn_grader.reports import classreport, similarity
from attn_grader.reports.result import Result

A = "ps04_step_by_step"


@pytest.fixture(scope="module")
def ps04():
    return independent()[A], similarity.starters_of(release(A))


def test_copied_renamed_and_reordered_notebooks_are_found(ps04):
    answers, starters = ps04
    original = answers["demo_partly_wrong"]
    for name, change in VARIANTS.items():
        copy = {g: change(src) for g, src in original.items()}
        assert name == "copied" or copy != original
        pairs = similarity.compare({"alice": original, "bob": copy, **{k: v for k, v in answers.items()
                                                                          if k != "demo_partly_wrong"}}, starters)
        assert [(p.a, p.b) for p in pairs] == [("alice", "bob")], name
        assert pairs[0].score >= similarity.THRESHOLD and pairs[0].shared >= similarity.MIN_SHARED


def test_renamed_changes_only_names_and_disguise_keeps_what_it_computes():
    src = "def f(x, W):\n    y = W @ x  # project\n    z = 2 * x\n    return y + z\n"
    assert renamed(src) == "def f(x, W):\n    my_y = W @ x  # project\n    my_z = 2 * x\n    return my_y + my_z\n"
    out = disguise(src)
    assert "# project" not in out and "my_y" in out and out.index("my_z =") < out.index("my_y =")
    ns_a, ns_b = {}, {}
    exec(src, ns_a)  # noqa: S102 - our own code
    exec(out, ns_b)  # noqa: S102
    assert ns_a["f"](np.arange(3.0), np.eye(3)).tolist() == ns_b["f"](np.arange(3.0), np.eye(3)).tolist()


def test_the_same_correct_one_liner_is_not_a_copy(ps04):
    _, starters = ps04
    gid = "attention_scores_for_query_answer"
    one = starters[gid].replace("    # YOUR CODE HERE\n    raise NotImplementedError()",
                                "    return (W_k @ a).T @ (W_q @ a[:, i])")
    assert one != starters[gid]
    alike = {gid: one}
    every = {g: (one if g == gid else s) for g, s in starters.items()}
    assert similarity.compare({"ann": alike, "ben": dict(alike), "cy": every}, starters) == []
    # even with no threshold: the shared code is under the minimum
    assert similarity.compare({"ann": alike, "ben": dict(alike)}, starters, threshold=0.0) == []


def test_starter_code_and_blank_notebooks_are_never_alike(ps04):
    _, starters = ps04
    assert similarity.compare({"a": dict(starters), "b": dict(starters), "c": {}}, starters, 0.0, 0) == []


@pytest.mark.parametrize("assignment", sorted(independent()))
def test_independent_answers_are_not_reported_and_their_copies_are(assignment):
    m = measure(assignments=[assignment])
    assert m["false_positives"] == []
    n = len(independent()[assignment])
    assert len(m["independent_pairs"]) == n * (n - 1) // 2
    for v in VARIANTS:  # every notebook with enough own code to compare: the solution at least
        assert len(m["caught"][v]) + len(m["missed"][v]) == n - len(m["too_small"]) >= 1, v
    assert m["missed"]["copied"] == m["missed"]["renamed"] == []
    # Winnowing's known limit: two swapped lines break every k-gram across them, so a reordered copy of a short
    # answer (under four times the minimum of shared code: ps10's 219 characters of short functions scored
    # 0.54 against the 0.55 threshold) may share too little to be listed; a longer answer's reordered copy
    # always is.
    long_missed = [(a, who) for a, who, _ in m["missed"]["reordered"]
                   if m["own_code"][(a, who)] >= 4 * similarity.MIN_SHARED]
    assert long_missed == []


def test_matching_lines_are_the_students_own_not_the_starter(ps04):
    answers, starters = ps04
    sol = answers["solution"]
    # renamed, not reordered: ps04's answers are short since issue 41 (task 3 is one line), and a reordered copy of
    # so little code is winnowing's known miss (README, "Who copied from whom")
    pairs = similarity.compare({"a": sol, "b": {g: renamed(s) for g, s in sol.items()}}, starters)
    cell = next(c for c in pairs[0].cells if c.cell == "output_for_query_answer")
    lines = cell.code_a.splitlines()
    marked = [lines[n - 1].strip() for n in cell.lines_a]
    assert marked and not any(ln.startswith(("def ", '"""')) for ln in marked)
    assert any("np.exp(alpha - alpha.max())" in ln for ln in marked)


def test_stored_pairs_round_trip(tmp_path, ps04):
    answers, starters = ps04
    (tmp_path / ".grader").mkdir(mode=0o700)
    found = similarity.find({A: {"a": answers["solution"], "b": dict(answers["solution"])}},
                            {A: release(A)})
    similarity.save(str(tmp_path), found)
    similarity.save(str(tmp_path), {"ps99": {"threshold": 0.5, "min_shared": 1, "compared": 0, "pairs": []}})
    back = similarity.load(str(tmp_path))
    assert set(back) == {A, "ps99"} and back[A]["pairs"] == found[A]["pairs"]
    assert (tmp_path / ".grader" / similarity.STORE).stat().st_mode & 0o077 == 0


def test_class_report_shows_the_pairs_side_by_side_escaped(ps04):
    _, starters = ps04
    gid = "output_for_query_answer"
    evil = starters[gid].replace("    # YOUR CODE HERE\n    raise NotImplementedError()",
                                 "    s = '<script>alert(1)</script>'\n"
                                 "    values = W_v @ a\n    keys = W_k @ a\n    scores = keys.T @ (W_q @ a[:, i])\n"
                                 "    e = np.exp(scores - scores.max())\n    weights = e / e.sum()\n"
                                 "    out = np.zeros(values.shape[0])\n    for j in range(values.shape[1]):\n"
                                 "        out += weights[j] * values[:, j]\n    return out")
    bad_name = "<img src=x onerror=alert(2)>"
    found = similarity.find({A: {"ann": {gid: evil}, bad_name: {gid: disguise(evil)}}}, {A: release(A)})
    assert len(found[A]["pairs"]) == 1
    res = {f"{s}/{A}": Result(s, A, tasks=[gid], max={gid: 3.0}, scores={gid: 3.0}, total=3.0, max_total=3.0)
           for s in ("ann", bad_name)}
    page = classreport.render(res, None, found)
    assert "<script" not in page.lower() and bad_name not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    soup = BeautifulSoup(page, "html.parser")
    section = soup.find("section", attrs={"aria-labelledby": f"sim-{A}"})
    assert section.find("h3").get_text() == "Alike answer code"
    rows = section.find("table", class_="similar").tbody.find_all("tr")
    assert len(rows) == 1 and {td.get_text() for td in rows[0].find_all("td")[1:3]} == {"ann", bad_name}
    side = section.find("table", class_="side")
    assert [th.get_text() for th in side.thead.find_all("th")] == sorted(["ann", bad_name])
    marks = [m.get_text() for m in side.find_all("mark")]
    assert marks and all(" = " in m for m in marks) and any("W_k @ a" in m for m in marks)


def test_class_report_without_pairs_says_so():
    page = classreport.render({}, None, {A: {"threshold": 0.55, "min_shared": 60, "compared": 3, "pairs": []}})
    assert "Alike answer code" not in page  # no submission of A: no section for it at all
    res = {f"x/{A}": Result("x", A)}
    page = classreport.render(res, None, {A: {"threshold": 0.55, "min_shared": 60, "compared": 1, "pairs": []}})
    assert "No pair of submissions is alike enough to list." in page


def test_answers_of_the_release_are_the_starters():
    rel = release(A)
    starters = similarity.starters_of(rel)
    # the code answers' starters, and the written answer's stub (issue 41: a copied written answer is found too)
    assert {g: s for g, s in starters.items() if g != "written_answer"} == answers_of(rel)
    assert starters["written_answer"] == "YOUR ANSWER HERE"


def test_a_huge_answer_cell_is_cut_before_the_tokeniser(ps04):
    _, starters = ps04
    gid = "permuted_outputs_answer"
    body = "".join(f"    v{k} = np.exp(alpha - {k}) / np.sum(alpha * {k})\n" for k in range(100_000))
    huge = starters[gid].replace("    # YOUR CODE HERE\n    raise NotImplementedError()", body)
    assert len(huge) > 100 * similarity.MAX_CODE
    pairs = similarity.compare({"a": {gid: huge}, "b": {gid: huge}}, starters)
    assert len(pairs) == 1 and pairs[0].score == 1.0
    assert len(pairs[0].cells[0].code_a) == similarity.MAX_CODE
