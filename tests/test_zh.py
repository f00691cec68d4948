"""The Chinese edition (issue 19): one book in two languages that cannot drift.

* every message of every catalogue (book and exercises) is translated, none fuzzy, markup kept;
* the catalogues hold the book's current English: a changed paragraph is a missing message (slow:
  extracts the messages with Sphinx's gettext builder, from the execution cache);
* the released exercises carry English and Chinese in each text cell, written from the catalogues;
* every glossary term's Chinese is on the Chinese page wherever the English page uses the term;
* in Chromium (browser): every Chinese page loads offline with its Chinese drawn by a real font (no
  missing-glyph boxes), the language switch leads to the same page in the other language and back on
  every page, and the Chinese search finds the chapters for 注意力 and 位置编码.
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pytest
from bs4 import BeautifulSoup
from site_helpers import ROOT, SITE, chromium, need, need_site, offline_page, toc_pages

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import po_check  # noqa: E402

from attn_grader.authoring import bilingual  # noqa: E402

LOCALES = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
CATALOGUES = sorted(LOCALES.rglob("*.po"))
PAGES = toc_pages()
ZH = SITE / "zh"


def test_there_is_a_catalogue_for_every_page_and_every_assignment():
    names = {p.relative_to(LOCALES).with_suffix("").as_posix() for p in CATALOGUES}
    assert {p for p in PAGES} <= names, sorted(set(PAGES) - names)
    assignments = {p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()}
    assert {f"exercises/{a}" for a in assignments} <= names


@pytest.mark.parametrize("po", CATALOGUES, ids=lambda p: p.relative_to(LOCALES).as_posix())
def test_every_message_is_translated_and_none_is_fuzzy(po):
    assert po_check.problems(str(po)) == []


def test_the_checker_fails_on_an_untranslated_a_fuzzy_or_a_broken_message(tmp_path):
    po = tmp_path / "x.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                  'msgid "one `code` and $x$"\nmsgstr "一 `code` 和 $y$"\n\n'
                  'msgid "two"\nmsgstr ""\n\n#, fuzzy\nmsgid "three"\nmsgstr "三"\n', encoding="utf-8")
    found = "\n".join(po_check.problems(str(po)))
    assert "markup differs" in found and "not translated" in found and "fuzzy" in found


@pytest.mark.slow
def test_the_catalogues_hold_the_current_english(tmp_path):
    """A paragraph changed in a chapter is a message no catalogue translates: this fails until
    `make translations` has updated the catalogues and the new message is translated."""
    import i18n
    from babel.messages.pofile import read_po

    assert i18n.build("gettext", tmp_path / "gettext", tmp_path / "doctrees") == 0
    missing = []
    for pot in sorted((tmp_path / "gettext").rglob("*.pot")):
        name = pot.relative_to(tmp_path / "gettext").with_suffix(".po")
        po = LOCALES / name
        if not po.exists():
            missing.append(f"{name}: no catalogue")
            continue
        with open(pot, "rb") as f:
            wanted = {m.id for m in read_po(f) if m.id}
        with open(po, "rb") as f:
            have = {m.id for m in read_po(f) if m.id and m.string and not m.fuzzy}
        missing += [f"{name}: {str(m)[:80]!r}" for m in sorted(wanted - have)]
    assert not missing, "untranslated (run make translations, then translate):\n" + "\n".join(missing[:20])


def test_exercise_text_cells_are_english_then_their_translation(tmp_path):
    """`attn_grader.authoring.bilingual apply` on the committed sources changes nothing and misses nothing."""
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copytree(ROOT / "locales", tmp_path / "locales")
    before = {p: p.read_bytes() for p in (tmp_path / "solutions").rglob("*.ipynb")}
    assert bilingual.apply(tmp_path) == []
    assert {p: p.read_bytes() for p in before} == before, "solutions/ is not up to date: run make translations"
    import nbformat

    for path in sorted((ROOT / "exercises").glob("*/*.ipynb")):
        for cell in nbformat.read(path, as_version=4).cells:
            answer = cell.metadata.get("nbgrader", {}).get("solution")  # a written answer: nbgrader's stub
            if cell.cell_type == "markdown" and cell.source.strip() and not answer:
                en, _, zh = cell.source.partition(bilingual.MARKER)
                assert en.strip() and re.search(r"[\u4e00-\u9fff]", zh), (path.name, cell.source[:80])


def test_a_changed_english_text_is_reported_missing(tmp_path):
    shutil.copytree(ROOT / "solutions" / "ps01_vector_sets", tmp_path / "solutions" / "ps01_vector_sets")
    shutil.copytree(ROOT / "locales", tmp_path / "locales")
    import nbformat

    path = tmp_path / "solutions" / "ps01_vector_sets" / "ps01_vector_sets.ipynb"
    nb = nbformat.read(path, as_version=4)
    cell = next(c for c in nb.cells if c.cell_type == "markdown")
    cell.source = "A new paragraph." + bilingual.MARKER + "旧的翻译。"
    nbformat.write(nb, path)
    assert "ps01_vector_sets: A new paragraph." in bilingual.apply(tmp_path)
    assert "旧的翻译" not in path.read_text(encoding="utf-8")  # a translation never outlives its English


# --------------------------------------------------------------------------------------- the built site

def _text(path: Path) -> str:
    soup = BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")
    article = soup.find("article") or soup
    for tag in article.find_all(["script", "style", "pre", "code", "math"]):
        tag.decompose()
    for tag in article.select(".math"):  # $d_{\mathrm{model}}$ is not the word "model"
        tag.decompose()
    return " ".join(article.get_text(" ").split())


def glossary_terms() -> list[tuple[str, str]]:
    """(English, Chinese) of every glossary row: the first English name, the notes' Chinese word."""
    rows = []
    for line in (ROOT / "book" / "glossary.md").read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 3 or cells[0] in ("中文", "") or set(cells[0]) <= set("-"):
            continue
        zh = cells[0].strip()
        if zh.startswith("（") and zh.endswith("）"):  # the usual Chinese, where the notes have none:
            continue  # not the notes' own word, so not the term base
        zh = re.sub(r"[（(].*?[）)]", "", zh).strip()
        en = " ".join(re.sub(r"\(.*?\)", "", cells[1]).split(",")[0].split())
        if zh and en and re.search(r"[\u4e00-\u9fff]", zh) and len(en) > 3:
            rows.append((en, tuple(z.strip() for z in zh.split("、"))))  # the notes' forms of one term
    return rows


@pytest.mark.slow
def test_the_chinese_edition_leaves_nothing_in_the_english_site():
    """The zh build's rendered notebooks (MyST-NB writes them beside its outdir) do not stay in the site."""
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    assert not (SITE / "jupyter_execute").exists()
    assert list((ZH / "_images").glob("*.png")), "the Chinese pages' images are their own copies"


@pytest.mark.slow
def test_glossary_terms_are_used_on_the_chinese_pages():
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    missing = []
    terms = glossary_terms()
    assert len(terms) > 50
    for page in PAGES:
        if page.endswith(("glossary", "notation", "bibliography")):
            continue
        en, zh = _text(SITE / f"{page}.html"), _text(ZH / f"{page}.html")
        for term_en, term_zh in terms:
            # "speech" inside "part-of-speech tagging" is that longer term, not this one
            text = en
            for longer, _ in terms:
                if term_en.lower() in longer.lower() and len(longer) > len(term_en):
                    text = re.sub(re.escape(longer), " ", text, flags=re.I)
            if re.search(rf"(?<![\w-]){re.escape(term_en)}(?![\w-])", text, re.I) and \
                    not any(form in zh for form in term_zh):
                missing.append(f"{page}: {term_en} -> {'、'.join(term_zh)}")
    assert not missing, "\n".join(missing)


@pytest.fixture(scope="module")
def browser_page():
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    with chromium() as browser:
        page = offline_page(browser)
        page.errors = []
        page.on("console", lambda m: page.errors.append(m.text) if m.type == "error" else None)
        yield page


# Draws a Chinese character and a code point no font has (the missing-glyph box) in the page's own
# font; tofu is when the two come out the same.
_GLYPHS = """() => {
  const font = getComputedStyle(document.querySelector('article') || document.body).fontFamily;
  const draw = (ch) => { const c = document.createElement('canvas'); c.width = 48; c.height = 48;
    const g = c.getContext('2d'); g.font = '40px ' + font; g.fillText(ch, 2, 40);
    return Array.from(g.getImageData(0, 0, 48, 48).data).join(','); };
  const zh = draw('注'), box = draw('\\u{10FFFD}'), blank = draw(' ');
  return {tofu: zh === box, blank: zh === blank, font};
}"""


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
class TestChineseSite:
    @pytest.mark.parametrize("page_name", PAGES)
    def test_page_loads_offline_in_chinese_and_switches_both_ways(self, browser_page, page_name):
        page = browser_page
        errors = []
        for _attempt in range(2):  # a missing file fails twice; a file being rewritten by a test beside it once
            before_ext, before_err = len(page.external), len(page.errors)
            page.goto((SITE / f"{page_name}.html").as_uri(), wait_until="load")
            page.click("p.language-switch a")
            page.wait_for_load_state("load")
            assert page.url == (ZH / f"{page_name}.html").as_uri()
            assert page.evaluate("document.documentElement.lang") == "zh-CN"
            glyphs = page.evaluate(_GLYPHS)
            assert not glyphs["tofu"] and not glyphs["blank"], glyphs
            if page_name.endswith("relevance"):
                shots = ROOT / "_build" / "screenshots"
                shots.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(shots / "zh_relevance.png"))
            page.click("p.language-switch a")
            page.wait_for_load_state("load")
            assert page.url == (SITE / f"{page_name}.html").as_uri()
            assert page.external[before_ext:] == [], page.external[before_ext:]
            errors = page.errors[before_err:]
            if not errors:
                break
        assert errors == [], errors

    @pytest.mark.parametrize("query, expected", [("注意力", "book/relevance"), ("位置编码", "book/positional")])
    def test_chinese_search_finds_the_chapter(self, browser_page, query, expected):
        page = browser_page
        page.goto((ZH / "search.html").as_uri() + f"?q={query}", wait_until="load")
        # Sphinx shows the results one by one and writes the summary when it has shown them all
        page.wait_for_function("() => { const s = document.querySelector('#search-results .search-summary');"
                               " return s && s.textContent.trim().length > 0; }", timeout=60_000)
        links = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
        assert any(f"{expected}.html" in href for href in links), links[:10]


@pytest.mark.slow
def test_figure_captions_and_alt_texts_are_chinese():
    """The figures' captions and alt texts are translated (their drawn texts: tests/test_zh_figures.py)."""
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    cjk = re.compile(r"[\u4e00-\u9fff]")
    english = []
    for page in PAGES:
        soup = BeautifulSoup((ZH / f"{page}.html").read_text(encoding="utf-8"), "html.parser")
        for figure in soup.select("article figure"):
            caption = figure.find("figcaption")
            if caption is not None and not cjk.search(caption.get_text()):
                english.append(f"{page}: caption {caption.get_text()[:60]!r}")
            for img in figure.find_all("img"):
                if img.get("alt") and not cjk.search(img["alt"]):
                    english.append(f"{page}: alt {img['alt'][:60]!r}")
    assert not english, "\n".join(english[:20])
