"""Feedback pages a student can read anywhere (issue 30), without grading anyone:

* a formula of a text cell becomes MathML when the page is written; TeX the converter cannot read, or
  MathML that could act (a link), is shown as code; the page has no script, says its language, and
  marks the Chinese half of a bilingual cell as Chinese;
* every text colour of the page is made dark enough for WCAG 2.1 AA (4.5:1), keeping its hue;
* the feedback opens with what to do next: per task the score, the mistake's name and message, and
  a link to the section of the chapter that teaches it, in both languages; every task of every
  assignment has such a section, named as its chapter writes it, whose address the built book has.

The same pages, graded for real and opened in Chromium with the network off (no raw TeX, axe-core's
WCAG 2.1 A and AA rules), are in tests/test_class_report.py.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import nbformat
import pytest
from bs4 import BeautifulSoup
from site_helpers import SITE, need_site

from attn_grader.authoring.bilingual import MARKER
from attn_grader.checking.core import tasks_of
from attn_grader.reports import next_steps
from attn_grader.reports.result import Result
from attn_grader.run import feedback_page

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


# ------------------------------------------------------------------------------------------ formulas

def test_a_formula_becomes_mathml_and_bad_tex_shows_as_code():
    out = feedback_page.mathml(r"q^j = W^q a^j")
    assert out.startswith("<math") and 'display="inline"' in out and "<msup>" in out and "$" not in out
    assert 'display="block"' in feedback_page.mathml(r"\alpha'_{i,j}", display=True)
    # a link inside a formula (latex2mathml writes \href as an href attribute) is not written, nor markup that
    # latex2mathml copies from \text{} (issue 40): the writer's output keeps MathML elements and attributes only
    for tex in (r"\text{<img/src=x onerror=alert(1)>}", r"\text{</math><script>alert(1)</script>}",
                r"\text{<svg onload=alert(1)>} + \mathrm{<a href=javascript:alert(1)>y</a>}"):
        out = feedback_page.mathml(tex)
        assert not set(re.findall(r"<([a-zA-Z]+)", out)) - feedback_page.MATHML_TAGS, out
        assert not re.search(r"\son\w+=|href|script", out), out
    linked = feedback_page.mathml(r"\href{javascript:alert(1)}{x}")
    assert "href" not in linked and "javascript" not in linked and "<mi>x</mi>" in linked
    assert feedback_page.mathml("x^2" * 5000).startswith('<code class="tex">')  # too long to convert
    assert "<b>" not in feedback_page.mathml("<b>x</b>")  # text is escaped, whatever the converter makes of it


def _exporter():
    import nbgrader
    from nbconvert.preprocessors import CSSHTMLHeaderPreprocessor
    from traitlets.config import Config

    base = os.path.join(os.path.dirname(nbgrader.__file__), "server_extensions", "formgrader")
    c = Config()  # as nbgrader's GenerateFeedback configures its exporter
    c.HTMLExporter.template_name = "feedback"
    c.HTMLExporter.extra_template_basedirs = [os.path.join(base, "templates")]
    c.HTMLExporter.extra_template_paths = [os.path.join(base, "static", "node_modules", "bootstrap", "dist", "css")]
    ex = feedback_page.FeedbackHTML(config=c)
    ex.register_preprocessor(CSSHTMLHeaderPreprocessor, enabled=True)
    return ex


@pytest.mark.slow  # nbconvert compiles nbgrader's template stack: about 4 s the first time
def test_the_page_has_mathml_no_script_a_language_and_its_chinese_marked():
    text = "The score $\\alpha_{i,j} = q^i \\cdot k^j$ and\n\n$$b^i = \\sum_j \\alpha'_{i,j} v^j$$"
    zh = "分数 $\\alpha_{i,j}$。"
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell(text + MARKER + zh),
        nbformat.v4.new_code_cell("print(1)", outputs=[nbformat.v4.new_output(
            "stream", name="stdout", text="\x1b[38;5;66mfaint\x1b[0m and \x1b[32mgreen\x1b[0m\n")]),
    ])
    page, _ = _exporter().from_notebook_node(nb, resources={"nbgrader": {"notebook": "x", "score": 1, "max_score": 2,
                                                                         "late_penalty": 0}})
    soup = BeautifulSoup(page, "html.parser")
    assert soup.html.get("lang") == "en"
    assert soup.find_all("script") == [] and "mathjax" not in page.lower()
    assert len(soup.find_all("math")) == 3
    chinese = soup.find_all(attrs={"lang": "zh-CN"})
    assert len(chinese) == 1 and len(chinese[0].find_all("math")) == 1 and "分数" in chinese[0].get_text()
    rendered = "".join(d.get_text() for d in soup.select(".text_cell_render"))
    assert "$" not in rendered and "\\alpha" not in rendered
    # the terminal colours of the output: each at least 4.5:1 on the panels' grey
    colours = re.findall(r'style="color: ?(#[0-9a-f]{6}|rgb\([^)]*\))"', page)
    assert colours, "the output's colours are gone"
    for c in colours:
        rgb = feedback_page._parse(c)
        assert feedback_page.contrast(rgb, feedback_page.BACKGROUND) >= 4.5, c


def test_colours_are_darkened_only_as_far_as_needed():
    for rgb in [(0, 135, 0), (95, 135, 135), (0xBB, 0xBB, 0xBB), (0x33, 0x7A, 0xB7), (255, 255, 0)]:
        out = feedback_page.readable(rgb)
        assert feedback_page.contrast(out, feedback_page.BACKGROUND) >= 4.5
        assert feedback_page.contrast(feedback_page.readable(rgb), feedback_page.BACKGROUND) < 6, rgb
    assert feedback_page.readable((0x33, 0x33, 0x33)) == (0x33, 0x33, 0x33)  # already dark: unchanged
    css = ".highlight .c1 { color: #408080; font-style: italic }\n.btn { color: #fff }"
    out = feedback_page._darken_stylesheet(css)
    assert "#408080" not in out and ".btn { color: #fff }" in out  # a button's white on its colour is kept


# ------------------------------------------------------------------------------------------ what to do next

def _result(**kw) -> Result:
    base = dict(student="s", assignment="ps04_step_by_step",
                tasks=["attention_scores_for_query_test", "output_for_query_test"],
                max={"attention_scores_for_query_test": 3.0, "output_for_query_test": 3.0},
                scores={"attention_scores_for_query_test": 0.0, "output_for_query_test": 3.0}, total=3.0,
                max_total=6.0)
    base.update(kw)
    return Result(**base)


def test_the_feedback_opens_with_the_mistake_its_hint_and_the_section():
    r = _result(mistakes={"attention_scores_for_query_test": {"name": "wq_wk_swapped",
                                                              "message": "W_q and W_k were swapped"}})
    cell = next_steps.next_steps_cell(r)
    lines = cell.source.splitlines()
    assert lines[0] == "### What to do next"
    first = next(ln for ln in lines if ln.startswith("1. "))
    assert "0 / 3" in first and "wq\\_wk\\_swapped" in first and "W\\_q and W\\_k were swapped" in first
    url = ("https://self-attention-step-by-step.github.io/book/book/step_by_step.html"
           "#step-2-every-score-of-query-1-including-its-own")
    assert f"[Step 2: every score of query 1, including its own]({url})" in first
    assert url.replace("/book/book/", "/book/zh/book/") in first
    second = next(ln for ln in lines if ln.startswith("2. "))
    assert "3 / 3" in second and "full marks" in second and "http" not in second


def test_a_written_answer_is_waiting_for_a_grader_not_a_failed_test():
    """A cell graded by hand reads "not graded yet" until a grader scores it, then its score; never "the notebook's
    test failed" and never a lost task."""
    kw = dict(tasks=["output_for_query_test", "written_answer"],
              max={"output_for_query_test": 3.0, "written_answer": 2.0},
              scores={"output_for_query_test": 3.0, "written_answer": 0.0}, auto={"output_for_query_test": 3.0},
              manual_tasks=["written_answer"], total=3.0, max_total=5.0)
    waiting = next_steps.next_steps_cell(_result(**kw)).source
    line = next(ln for ln in waiting.splitlines() if ln.startswith("2. "))
    assert "not graded yet" in line and "failed" not in line and "0 / 2" not in line
    assert "Every task has full marks" not in waiting
    kw["manual"], kw["scores"] = {"written_answer": 1.0}, {"output_for_query_test": 3.0, "written_answer": 1.0}
    graded = next_steps.next_steps_cell(_result(**kw)).source
    assert "1 / 2, graded by hand" in next(ln for ln in graded.splitlines() if ln.startswith("2. "))


def test_student_text_in_the_next_steps_is_escaped():
    r = _result(mistakes={"attention_scores_for_query_test": {"name": "error",
                                                   "message": "raised <img src=x onerror=alert(1)> [x](javascript:1)"}})
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    page = BeautifulSoup(markdown2html_mistune(next_steps.next_steps_cell(r).source), "html.parser")
    assert page.find("img") is None and "onerror=alert(1)" in page.get_text()
    assert [a["href"] for a in page.find_all("a") if not a["href"].startswith(("https://", "#"))] == []
    source = next_steps.next_steps_cell(r).source
    assert "mistake **error**" not in source  # "error" names no catalogued mistake
    assert "could not be graded" in next_steps.next_steps_cell(_result(status="ungradable", reason=["bad JSON"])).source


@pytest.mark.parametrize("a", ASSIGNMENTS)
def test_every_task_has_a_section_of_its_chapter(a):
    mapped = next_steps.SECTIONS.get(a, {})
    assert {t.func_name for t in tasks_of(a)} <= set(mapped), f"{a}: tasks without a section"
    for func, (chapter, heading) in mapped.items():
        source = (ROOT / "book" / f"{chapter}.md").read_text(encoding="utf-8")
        assert re.search(rf"^#+ {re.escape(heading)}\s*$", source, re.M), f"{a}.{func}: no heading {heading!r}"
        text = next_steps.link_text(heading)
        assert "$" not in text and "\\" not in text, text


def test_anchors_are_those_docutils_gives():
    from docutils.nodes import make_id

    for sections in next_steps.SECTIONS.values():
        for _, heading in sections.values():
            plain = heading.replace("$", "").replace("\\", "")
            assert next_steps.anchor(heading) == make_id(plain), heading


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_section_address_is_in_the_built_book(lang):
    site = need_site()
    missing = []
    for a, sections in next_steps.SECTIONS.items():
        for func, (chapter, heading) in sections.items():
            path = site / ("zh" if lang == "zh" else "") / "book" / f"{chapter}.html"
            if f'id="{next_steps.anchor(heading)}"' not in path.read_text(encoding="utf-8"):
                missing.append(f"{a}.{func}: {path.relative_to(SITE)}#{next_steps.anchor(heading)}")
    assert not missing, missing


def test_every_formula_of_every_exercise_becomes_mathml():
    """The task texts of all twelve assignments, English and Chinese: no formula falls back to code."""
    from nbconvert.filters.markdown_mistune import MarkdownWithMath

    failed = []
    for a in ASSIGNMENTS:
        for cell in nbformat.read(ROOT / "exercises" / a / f"{a}.ipynb", as_version=4).cells:
            if cell.cell_type != "markdown":
                continue
            out = MarkdownWithMath(renderer=feedback_page.MathMLRenderer(escape=False)).render(cell.source)
            failed += [f"{a}: {m}" for m in re.findall(r'<code class="tex">(.*?)</code>', out)]
    assert not failed, failed


def test_the_constants_the_stages_share_by_value_are_equal():
    """The run and the reports do not import the stages that own these words (import contracts): the copies
    must say the same."""
    from attn_grader.authoring import bilingual
    from attn_grader.checking import core
    from attn_grader.reports import result

    assert feedback_page.MARKER == bilingual.MARKER
    assert result.NOT_ATTEMPTED == core.NOT_ATTEMPTED
