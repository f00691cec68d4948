"""Copies of known code in the class report (issue 39): the reference is public by design, so an answer that
is the reference's code (or the catalogue's reference answer, a book cell, PyTorch's attention) is listed
with that source beside the pairs of students (attn_grader/reports/similarity.py, compare_known); an
independently written answer is not.
"""

import inspect
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup

sys.path.insert(0, str(Path(__file__).resolve().parent))

from similarity_cases import independent, release, renamed

from attn_grader.catalogue import ps09_cnn
from attn_grader.reports import classreport, similarity
from attn_grader.reports.result import Result
from attn_ref.softmax import softmax as ref_softmax

pytestmark = pytest.mark.slow  # fingerprinting every known source takes a second or more


def _answer(starter: str, body: str) -> str:
    """A starter cell with its ``raise NotImplementedError()`` replaced by ``body``."""
    return starter.replace("    # YOUR CODE HERE\n    raise NotImplementedError()", body)


def test_the_known_code_is_the_reference_the_catalogue_the_book_and_pytorch():
    where = [w for w, _ in similarity.known_code()]
    assert "attn_ref/softmax.py: softmax" in where and "attn_ref/attention.py: self_attention" in where
    assert "catalogue ps09_cnn: _ref_receptive_field" in where
    assert any(w.startswith("book/step_by_step.md, code cell") for w in where)
    assert any("scaled_dot_product_attention" in w for w in where)  # torch is installed here (requirements.txt)
    assert not any("_cases_" in w or "MISTAKES" in w for w in where)  # mistakes and inputs are not answers


def test_a_copied_reference_function_is_listed_with_its_source():
    a = "ps03_relevance"
    starters = similarity.starters_of(release(a))
    copied = inspect.getsource(ref_softmax)  # pasted whole, def line and docstring included
    found = similarity.compare_known({"ann": {"softmax_answer": copied},
                                      "ben": {"softmax_answer": renamed(copied)}}, starters)
    assert [(m.student, m.cell, m.source) for m in found] == [
        ("ann", "softmax_answer", "attn_ref/softmax.py: softmax"),
        ("ben", "softmax_answer", "attn_ref/softmax.py: softmax")]
    ann = found[0]
    assert ann.score >= similarity.THRESHOLD and ann.shared >= similarity.MIN_SHARED
    marked = [ann.code.splitlines()[n - 1] for n in ann.lines]
    assert any("np.exp(x - m)" in ln for ln in marked)
    assert any("np.exp(x - m)" in ann.known.splitlines()[n - 1] for n in ann.known_lines)


def test_a_copied_catalogue_reference_answer_is_listed():
    a = "ps09_cnn"
    starters = similarity.starters_of(release(a))
    body = inspect.getsource(ps09_cnn._ref_receptive_field).split(":\n", 1)[1]
    cell = _answer(starters["receptive_field_answer"], body)
    found = similarity.compare_known({"cy": {"receptive_field_answer": cell}}, starters)
    assert [(m.student, m.source) for m in found] == [("cy", "catalogue ps09_cnn: _ref_receptive_field")]


def test_a_verbatim_copy_of_a_catalogue_answer_string_is_listed():
    """Issue 41 (i): the student edition ships the catalogue, whose answer strings are whole right answers."""
    from attn_grader.catalogue import ps12_efficient

    where = dict(similarity.known_code())
    assert where["catalogue ps12_efficient: _ONLINE_SOFTMAX"] == ps12_efficient._ONLINE_SOFTMAX
    assert "catalogue _ps12_linear_io: _LINEAR" in where and "catalogue ps12_efficient: SETUP" not in where
    assert "catalogue ps11_graphs: _MASKED" not in where  # a fragment, not an answer
    a = "ps12_efficient"
    found = similarity.compare_known({"eve": {"online_softmax_answer": ps12_efficient._ONLINE_SOFTMAX}},
                                     similarity.starters_of(release(a)))
    assert [(m.student, m.source) for m in found] == [("eve", "catalogue ps12_efficient: _ONLINE_SOFTMAX")]


def test_independent_answers_are_not_listed():
    """The demo students' own ps04 answers and other code bases' re-implementations (tests/others_answers.py)
    of ps04, ps05 and ps06; and a textbook softmax written otherwise than the reference's."""
    for a in ("ps04_step_by_step", "ps05_matrix_form", "ps06_multi_head"):
        others = {who: cells for who, cells in independent()[a].items() if who != "solution"}
        assert others
        assert similarity.compare_known(others, similarity.starters_of(release(a))) == [], a
    starters = similarity.starters_of(release("ps03_relevance"))
    own = _answer(starters["softmax_answer"], "    z = np.asarray(x, dtype=float)\n"
                  "    z = np.moveaxis(z, axis, -1)\n    z = z - z.max(-1, keepdims=True)\n"
                  "    w = np.exp(z)\n    w /= w.sum(-1, keepdims=True)\n    return np.moveaxis(w, -1, axis)")
    assert similarity.compare_known({"dee": {"softmax_answer": own}}, starters) == []


def test_the_class_report_shows_copies_of_known_code_beside_the_pairs(tmp_path):
    a = "ps03_relevance"
    script = "s_ = '<script>alert(1)</script>'\n    m = np.max"
    copied = inspect.getsource(ref_softmax).replace("m = np.max", script)
    found = similarity.find({a: {"ann": {"softmax_answer": copied}}}, {a: release(a)})
    assert [m.source for m in found[a]["known"]] == ["attn_ref/softmax.py: softmax"]
    (tmp_path / ".grader").mkdir(mode=0o700)
    similarity.save(str(tmp_path), found)
    back = similarity.load(str(tmp_path))
    assert back[a]["known"] == found[a]["known"]
    res = {f"ann/{a}": Result("ann", a, tasks=["softmax_answer"], max={"softmax_answer": 2.0},
                              scores={"softmax_answer": 2.0}, total=2.0, max_total=2.0)}
    page = classreport.render(res, None, back)
    assert "<script" not in page.lower() and "&lt;script&gt;" in page
    section = BeautifulSoup(page, "html.parser").find("section", attrs={"aria-labelledby": f"sim-{a}"})
    assert section.find("h4", id=f"sim-{a}-known").get_text() == "Copies of known code"
    row = section.find_all("table", class_="similar")[-1].tbody.find("tr")
    assert [td.get_text() for td in row.find_all("td")[:3]] == ["ann", "softmax_answer",
                                                               "attn_ref/softmax.py: softmax"]
    side = section.find_all("table", class_="side")[-1]
    assert [th.get_text() for th in side.thead.find_all("th")] == ["ann", "attn_ref/softmax.py: softmax"]
    assert any("np.exp(x - m)" in mark.get_text() for mark in side.find_all("mark"))
