"""The Chinese edition's figures (issue 32): the same executed figure, its text in Chinese.

* fast: the label catalogue's translation keeps numbers and mathtext; the check finds an untranslated
  label in a Chinese figure (and nothing in a translated one); the kernel's hook saves every displayed
  figure beside its PNG; figures.po's messages keep their numbers and are Chinese;
* slow (after make book): every figure of the executed chapters has a Chinese image on its Chinese page,
  whose texts hold no English word, and the English page still shows the English image.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
from types import SimpleNamespace

import matplotlib

matplotlib.use("Agg")
import pytest  # noqa: E402
from bs4 import BeautifulSoup  # noqa: E402
from matplotlib import pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402
from site_helpers import ROOT, SITE, need, need_site  # noqa: E402

from attn_book.figures import language  # noqa: E402

ZH = SITE / "zh"
REPORT = ROOT / "_build" / "figures_zh.json"
CATALOGUE = {"query {#}": "查询 {#}", "key $k^j$": "键 $k^j$", "attention weights": "注意力权重",
             "n = {#} tokens": "n = {#} 个词元"}


@pytest.fixture
def figure():
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.imshow([[0.2, 0.8], [0.6, 0.4]])
    ax.set_xticks([0, 1], labels=["$k^1$", "$k^2$"])
    ax.set_yticks([0, 1], labels=["query 1", "query 2"])
    ax.set_xlabel("key $k^j$")
    ax.set_title("attention weights")
    ax.plot([0, 1], [0, 1], label="n = 8 tokens")
    ax.legend()
    yield fig
    plt.close(fig)


def test_translation_keeps_numbers_and_maths_and_leaves_symbols_alone():
    assert language.translate("query 12", CATALOGUE) == "查询 12"
    assert language.translate("key $k^j$", CATALOGUE) == "键 $k^j$"
    assert language.translate("n = 6000 tokens", CATALOGUE) == "n = 6000 个词元"
    for symbol in ("q", "$\\alpha'_{1,2}$", "0.25", "3×3", "$W^q$", "FCN"):
        assert language.translate(symbol, CATALOGUE) == symbol
    assert language.translate("value 1", CATALOGUE) is None
    # a symbols-only text is no message, unless the catalogue has it (a Chinese colon in a legend)
    assert language.translate("RNN: n", {**CATALOGUE, "RNN: n": "RNN：n"}) == "RNN：n"
    assert language.message("n = 6000, d = 64") == "n = {#}, d = {#}"


def test_the_check_finds_an_untranslated_label_in_a_chinese_figure(figure):
    """A figure whose title the catalogue lacks: the check names it, and nothing else."""
    partial = {k: v for k, v in CATALOGUE.items() if k != "attention weights"}
    fig = language.loads(language.dumps(figure))
    png, texts, missing = language.render_chinese(fig, partial)
    assert png.startswith(b"\x89PNG")
    assert missing == ["attention weights"]
    assert language.untranslated(texts) == ["attention weights"]
    # a single word the catalogue keeps in English on purpose (an example sentence's word) passes
    assert language.untranslated(["cat", "the cat"], {"cat": "cat", "the cat": "the cat"}) == ["the cat"]


def test_a_translated_figure_draws_every_label_in_chinese(figure):
    fig = language.loads(language.dumps(figure))
    _png, texts, missing = language.render_chinese(fig, CATALOGUE)
    assert missing == [] and language.untranslated(texts) == []
    assert {"注意力权重", "查询 1", "查询 2", "键 $k^j$", "n = 8 个词元", "$k^1$"} <= set(texts)
    # the English figure it came from is untouched
    assert figure.axes[0].get_title() == "attention weights"
    assert sorted(language.figure_messages(figure)) == ["attention weights", "key $k^j$", "n = {#} tokens",
                                                       "query {#}"]
    assert "$k^1$" in language.figure_messages(figure, known=["$k^1$"])


def test_a_data_word_is_drawn_as_it_is_even_when_a_message_equals_it():
    """The scatter of word vectors labels a point "train" (the vehicle) beside a legend "train" (the
    training set) that the catalogue translates: the word label is data, drawn as it is, and no message."""
    from attn_book.figures.data_words import is_data
    from attn_book.figures.draw import word_label

    catalogue = {**CATALOGUE, "train": "训练", "vehicle": "交通工具"}
    fig, ax = plt.subplots(figsize=(4, 3))
    ax.scatter([0, 1], [0, 1], label="vehicle")
    ax.plot([0, 1], [1, 0], label="train")
    labels = [word_label(ax, w, xy) for w, xy in (("train", (0, 0)), ("bike", (1, 1)))]
    ax.legend()
    try:
        assert language.figure_messages(fig) == ["vehicle", "train"]  # the legend's, not the points'
        chinese = language.loads(language.dumps(fig))  # the mark travels with the pickled figure
        _png, texts, missing = language.render_chinese(chinese, catalogue)
        words = [t.get_text() for t in chinese.findobj(Text) if is_data(t)]
        assert words == ["train", "bike"], words
        assert "训练" in texts and "交通工具" in texts and "train" not in texts
        assert missing == [] and language.untranslated(texts, catalogue) == []
        assert [t.get_text() for t in labels] == ["train", "bike"]  # the English figure is untouched
    finally:
        plt.close(fig)


def test_the_kernel_hook_saves_each_displayed_figure_beside_its_png(figure):
    """The mimebundle printer adds no data (the English PNG is the inline backend's) and puts the
    figure with the PNG settings in the output's metadata."""
    printer = functools.partial(lambda fig, fmt, base64, bbox_inches: b"", fmt="png", base64=True,
                                bbox_inches="tight")
    png = SimpleNamespace(lookup=lambda obj: printer)
    shell = SimpleNamespace(display_formatter=SimpleNamespace(formatters={"image/png": png}))
    data, metadata = language._figure_metadata(shell, figure)
    assert data == {}
    entry = metadata[language.METADATA_KEY]
    assert entry["print_kwargs"] == {"bbox_inches": "tight"}
    assert language.loads(entry["figure"]).axes[0].get_title() == "attention weights"
    assert language._figure_metadata(shell, plt.figure()) == ({}, {})  # an empty figure has no PNG either


def test_the_label_catalogue_is_chinese_and_keeps_numbers_and_maths():
    """figures.po (po_check, in test_zh.py, finds untranslated messages and lost $maths$)."""
    catalogue = language.load_catalogue()
    assert len(catalogue) > 50
    wrong = [f"{k!r} -> {v!r}" for k, v in catalogue.items()
             if v.count(language.NUMBER) != k.count(language.NUMBER) or language.untranslated([v], catalogue)]
    assert not wrong, "\n".join(wrong)


def _figures() -> list[dict]:
    need_site()
    need(REPORT.is_file(), f"no {REPORT}: run make book (python book/_ext/i18n.py zh writes it)")
    return json.loads(REPORT.read_text(encoding="utf-8"))


def _images(page_html) -> list[str]:
    """The images a page shows: its <img> files, and the PNGs in its interactive figures' saved state
    (named like MyST-NB's files, by the SHA-256 of the PNG)."""
    html = page_html.read_text(encoding="utf-8")
    assert language.METADATA_KEY not in html, f"{page_html}: a pickled figure left in the page"
    soup = BeautifulSoup(html, "html.parser")
    found = [img["src"].rsplit("/", 1)[-1] for img in soup.select("article img[src]")]
    for script in soup.select('script[type="application/vnd.jupyter.widget-state+json"]'):
        for model in json.loads(script.string)["state"].values():
            for output in model.get("state", {}).get("outputs") or []:
                if "image/png" in output.get("data", {}):
                    png = base64.b64decode(output["data"]["image/png"])
                    found.append(hashlib.sha256(png).hexdigest() + ".png")
    return found


@pytest.mark.slow
def test_every_figure_has_a_chinese_image_without_english_text():
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import i18n  # the chapters as the execution cache holds them for their current code

    figures, EXECUTED = _figures(), i18n.executed_from_cache(ROOT / "_build")  # noqa: N806
    executed = [(page, str(cell)) for page, cell, _ in language.executed_figures(EXECUTED)]
    pngs = [(nb.relative_to(EXECUTED).with_suffix("").as_posix(), str(index))
            for nb in sorted(EXECUTED.rglob("*.ipynb"))
            for index, cell in enumerate(json.loads(nb.read_text(encoding="utf-8"))["cells"])
            for output in cell.get("outputs", []) if "image/png" in output.get("data", {})]
    assert set(pngs) <= set(executed), (
        "figures executed without the figure hook (an execution cache older than it: rm -rf "
        f"_build/.jupyter_cache and make book): {sorted(set(pngs) - set(executed))[:10]}")
    assert sorted((f["page"], str(f["cell"])) for f in figures) == sorted(executed)
    catalogue, english = language.load_catalogue(), []
    for f in figures:
        if isinstance(f["cell"], int):  # an interactive figure's PNG is in the page's widget state
            assert (ZH / "_images" / f["image"]).is_file(), f
        english += [f"{f['page']} (cell {f['cell']}): {t!r}" for t in language.untranslated(f["texts"], catalogue)]
    assert not english, (
        "English text in the Chinese figures: run make translations, translate these messages in "
        f"{language.CATALOGUE.relative_to(ROOT)} (numbers written {language.NUMBER}), then "
        "python book/_ext/i18n.py zh:\n" + "\n".join(english))


@pytest.mark.slow
def test_the_english_pages_show_the_english_figures_and_the_chinese_pages_the_chinese():
    by_page: dict[str, list[dict]] = {}
    for f in _figures():
        by_page.setdefault(f["page"], []).append(f)
    assert by_page
    for page, figures in by_page.items():
        en, zh = _images(SITE / f"{page}.html"), _images(ZH / f"{page}.html")
        for f in figures:
            assert f["english"] in en and f["image"] in zh, (page, f["cell"])
            if any(language.has_chinese(t) for t in f["texts"]):  # else: symbols and numbers alone
                assert f["english"] not in zh and f["image"] not in en, (page, f["cell"])


def test_the_extraction_adds_new_figure_texts_untranslated_and_keeps_translations(figure, tmp_path):
    """`make translations` (i18n.py figures): a figure text no catalogue holds becomes an untranslated
    message, named in the list it returns; translations stay, texts no figure draws go obsolete."""
    executed = tmp_path / "jupyter_execute" / "book"
    executed.mkdir(parents=True)
    output = {"output_type": "display_data", "data": {},
              "metadata": {language.METADATA_KEY: {"figure": language.dumps(figure)}}}
    (executed / "chapter.ipynb").write_text(json.dumps(
        {"cells": [{"cell_type": "code", "outputs": [output]}], "metadata": {}}), encoding="utf-8")
    po = tmp_path / "figures.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  'msgid "query {#}"\nmsgstr "查询 {#}"\n\nmsgid "gone"\nmsgstr "没了"\n\n'
                  'msgid "$k^1$"\nmsgstr "$k^1$ 号"\n', encoding="utf-8")
    todo = language.update_catalogue(tmp_path / "jupyter_execute", po)
    assert sorted(todo) == ["attention weights", "key $k^j$", "n = {#} tokens"]
    catalogue = language.load_catalogue(po)  # a symbols-only text drawn and translated on purpose stays
    assert catalogue == {"query {#}": "查询 {#}", "$k^1$": "$k^1$ 号"}
    assert "#~ msgid \"gone\"" in po.read_text(encoding="utf-8")
