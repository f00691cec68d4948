"""The class report figure on the instructors' page (issue 42): drawn at every book build from the demo
class's numbers (book/_static/class_report_demo.json, from make grade-demo), in English and in Chinese,
for the tasks the assignment has now (the old screenshot named tasks ps04 no longer had)."""

import json
import sys

from matplotlib.patches import Rectangle
from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import class_report_figure as crf  # noqa: E402

from attn_book.figures import language  # noqa: E402


def _numbers():
    return json.loads(crf.DATA.read_text(encoding="utf-8"))


def test_the_demo_numbers_are_the_assignments_current_tasks():
    from attn_grader.checking.core import tasks_of

    numbers = _numbers()
    assert [t[0] for t in numbers["tasks"]] == [t.func_name for t in tasks_of(numbers["assignment"])]
    graded = len(numbers["totals"])
    assert all(sum(t[1:]) == graded for t in numbers["tasks"]), numbers
    assert all(0 <= x <= numbers["max_total"] for x in numbers["totals"]) and graded <= numbers["students"]


def test_the_figure_draws_the_numbers():
    numbers = {"assignment": "psX", "students": 4, "max_total": 4.0, "totals": [0.0, 2.0, 2.0, 4.0],
               "tasks": [["first", 1, 2, 1], ["second", 4, 0, 0]]}
    fig = crf.draw(numbers)
    hist, shares = fig.axes
    heights = [p.get_height() for p in hist.patches if isinstance(p, Rectangle)]
    assert heights == [1, 0, 2, 0, 1]  # one bar per whole point: 0, 1, 2, 3, 4
    widths = sorted(round(p.get_width(), 2) for p in shares.patches if isinstance(p, Rectangle))
    assert widths == sorted([0.25, 0.5, 0.25, 1.0, 0.0, 0.0])
    assert [t.get_text() for t in shares.get_yticklabels()] == ["second", "first"]


def test_both_languages_are_written_and_every_text_is_translated(tmp_path, monkeypatch):
    monkeypatch.setattr(crf, "IMAGE", tmp_path / "class_report.png")
    en, zh = crf.write(None), crf.write("zh_CN")
    assert en == tmp_path / "class_report.png" and zh == tmp_path / "class_report.zh_CN.png"
    assert en.read_bytes().startswith(b"\x89PNG") and zh.read_bytes() != en.read_bytes()
    catalogue = language.load_catalogue()
    for message in crf.messages():
        assert catalogue.get(message), f"{message!r} is not translated in figures.po"
    fig = crf.draw(_numbers())
    _png, texts, missing = language.render_chinese(fig, catalogue, crf.PRINT)
    assert not missing and language.untranslated(texts, catalogue) == []
    assert any(language.has_chinese(t) for t in texts)


def test_the_build_draws_it_and_the_page_shows_it():
    config = (ROOT / "_config.yml").read_text(encoding="utf-8")
    assert "class_report_figure: book/_ext" in config
    page = (ROOT / "book" / "for_instructors.md").read_text(encoding="utf-8")
    if "class_report" in page:  # the page shows it by this path; Sphinx puts class_report.zh_CN.png on zh
        assert "_static/class_report.png" in page


def test_make_translations_keeps_the_figures_messages(tmp_path):
    """i18n.py figures rebuilds figures.po from the executed chapters; the class report's messages, drawn
    by no chapter cell, stay in it (update_catalogue's extra messages)."""
    import nbformat
    from matplotlib.figure import Figure

    fig = Figure()
    fig.add_subplot().set_title("a chapter figure")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(outputs=[nbformat.v4.new_output(
        "display_data", data={"image/png": ""}, metadata={language.METADATA_KEY: {"figure": language.dumps(fig)}})])])
    (tmp_path / "book").mkdir()
    nbformat.write(nb, tmp_path / "book" / "x.ipynb")
    po = tmp_path / "figures.po"
    extra = {m: [crf.PAGE] for m in crf.messages()}
    todo = language.update_catalogue(tmp_path, po, extra=extra)
    text = po.read_text(encoding="utf-8")
    assert 'msgid "a chapter figure"' in text and 'msgid "share of the graded submissions"' in text
    assert "#: book/for_instructors" in text and "share of the graded submissions" in todo
