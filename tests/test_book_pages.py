"""Book-wide checks of what an expert reader stops at (issue 18), each with a test showing it can fail.

1. Figures: on every built page of _toc.yml, every image a code cell drew is inside a figure with a
   numbered caption ("Fig. N") and has alt text of a few words that is not a file path; every
   other image has such alt text too; figure names (`name: fig-...`) are unique across the book.
2. Accessibility: axe-core's WCAG 2.1 A and AA rules find nothing, whatever the impact, on every page of
   the built book in both languages, with no request leaving the machine (marked `browser`; one
   Chromium, pages in one session; book/accessibility.md states the target).
3. Code lines: no line of a displayed code cell in book/*.md is wider than the code block shows
   (CODE_COLUMNS, measured as its comment says).
4. Quotations of the notes: every Chinese quotation in book/*.md is in the committed registry
   tests/data/notes_quotes.json, whose excerpts contain their quotation and, when the notes are
   on this machine ($ATTN_NOTES or the path in tests/notes_quotes.py), are verbatim in them.

1 and 2 need the built site (tests/site_helpers.py: SITE_HTML); 3 and 4 read the sources only.
"""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import notes_quotes
import pytest
import yaml
from bs4 import BeautifulSoup
from site_helpers import (
    ROOT,
    SITE,
    chromium,
    describe_violations,
    need,
    need_site,
    offline_page,
    toc_pages,
    wcag_violations,
)

PAGES = toc_pages()
BOOK = ROOT / "book"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# ------------------------------------------------------------------------------------------ 1. figures

MIN_ALT_WORDS = 4  # "a few words": "Plot of attention" is not enough to say what a figure shows
_PATHLIKE = re.compile(r"^\S*[/\\]\S*$|\.(png|jpe?g|svg|gif|webp)$", re.I)
_CAPTION_NUMBER = re.compile(r"^Fig\.\s*\d+(\.\d+)*\s*$")


def alt_problem(alt: str | None, src: str = "") -> str | None:
    """Why `alt` does not say what an image shows (None when it may)."""
    if alt is None or not alt.strip():
        return "no alt text"
    alt = alt.strip()
    if _PATHLIKE.search(alt) or alt == src or alt == Path(src).name:
        return f"alt is a file path: {alt[:60]!r}"
    if len(alt.split()) < MIN_ALT_WORDS:
        return f"alt has fewer than {MIN_ALT_WORDS} words: {alt!r}"
    return None


def figure_problems(html: str) -> list[str]:
    """Every image of a page: alt text that says something; a code cell's image also in a
    <figure> whose caption is numbered ("Fig. N" from numfig)."""
    soup = BeautifulSoup(html, "html.parser")
    article = soup.find("article") or soup
    problems = []
    for k, img in enumerate(article.find_all("img"), 1):
        src = img.get("src", "")
        where = f"image {k} ({Path(src).name[:24]})"
        why = alt_problem(img.get("alt"), src)
        if why:
            problems.append(f"{where}: {why}")
        if not any("cell" in (div.get("class") or []) for div in img.find_parents("div")):
            continue  # an image of the prose (markdown), not drawn by a code cell
        figure = img.find_parent("figure")
        if figure is None:
            problems.append(f"{where}: drawn by a code cell but not in a figure (MyST-NB `figure:` cell option)")
            continue
        number = figure.select_one("figcaption .caption-number")
        if number is None or not _CAPTION_NUMBER.match(number.get_text()):
            problems.append(f"{where}: its figure has no numbered caption ('Fig. N'; numfig: true in _config.yml)")
    return problems


def figure_ids(html: str) -> list[str]:
    soup = BeautifulSoup(html, "html.parser")
    return [f["id"] for f in soup.find_all("figure") if f.get("id")]


_NAME = re.compile(r"^\s*:?\s*name:\s*([\w-]+)\s*$", re.M)


def figure_names(markdown: str) -> list[str]:
    """Names given in a chapter to figures (`name: fig-...` in a cell's figure option or a directive)."""
    return [n for n in _NAME.findall(markdown) if n.startswith("fig")]


def _built(page: str) -> str:
    path = need_site() / (page + ".html")
    assert path.is_file(), f"{page} is in the table of contents but {path} was not built"
    return path.read_text()


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_figures_are_numbered_and_described(page):
    problems = figure_problems(_built(page))
    assert not problems, f"{page}: {len(problems)} image(s) without a numbered figure or alt text:\n  " + "\n  ".join(
        problems)


@pytest.mark.slow
def test_figure_names_are_unique_across_the_book():
    seen: dict[str, list[str]] = {}
    for path in sorted(BOOK.glob("*.md")):
        for name in figure_names(path.read_text()):
            seen.setdefault(name, []).append(path.name)
    if (SITE / "index.html").is_file():
        for page in PAGES:
            for name in figure_ids(_built(page)):  # a cell with two outputs makes two figures of one name
                if name.startswith("fig-"):
                    seen.setdefault(name, []).append(page + ".html")
    duplicates = {n: where for n, where in seen.items() if len([w for w in where if w.endswith(".md")]) > 1
                  or len([w for w in where if w.endswith(".html")]) > 1}
    assert not duplicates, f"figure names used more than once: {duplicates}"


PATH_ALT = '<img alt="../_images/abc.png" src="../_images/abc.png" />'
GOOD_ALT = "Four arcs from a1 to a1 to a4; the arc to a3 is the thickest."
GOOD_FIGURE = f"""<article><div class="cell docutils container"><div class="cell_output docutils container">
<figure class="align-default" id="fig-x-arcs"><img alt="{GOOD_ALT}" src="../_images/abc.png" />
<figcaption><p><span class="caption-number">Fig. 3 </span><span class="caption-text">Arcs.</span></p></figcaption>
</figure></div></div></article>"""


def test_the_figure_check_fails_on_bad_pages():
    assert figure_problems(GOOD_FIGURE) == []
    # today's pages: a bare cell output whose alt is its path
    bare = f'<article><div class="cell docutils container"><div class="cell_output">{PATH_ALT}</div></div></article>'
    problems = figure_problems(bare)
    assert len(problems) == 2 and "file path" in problems[0] and "not in a figure" in problems[1]
    assert any("numbered caption" in p for p in figure_problems(GOOD_FIGURE.replace("Fig. 3 ", "")))
    assert any("fewer than" in p for p in figure_problems(GOOD_FIGURE.replace(GOOD_ALT, "A plot")))
    assert any("no alt" in p for p in figure_problems(GOOD_FIGURE.replace(f'alt="{GOOD_ALT}"', "")))
    # a markdown image needs alt text but no figure
    assert figure_problems(f"<article><p>{PATH_ALT}</p></article>") == ["image 1 (abc.png): alt is a file path: "
                                                                       "'../_images/abc.png'"]
    assert figure_ids(GOOD_FIGURE + GOOD_FIGURE) == ["fig-x-arcs", "fig-x-arcs"]
    cell = "```{code-cell} ipython3\n:mystnb:\n:  figure:\n:    caption: C.\n:    name: fig-rnn-speed\n```\n"
    assert figure_names(cell + "```{figure} x.png\n:name: fig-rnn-speed\n```\n") == ["fig-rnn-speed"] * 2


# ------------------------------------------------------------------------------------------ 2. axe-core

# index.html is only a redirect (<meta http-equiv="Refresh">) to the first page, checked below.
AXE_PAGES = [*PAGES, "genindex", "search"]
LANGUAGES = ("", "zh/")  # the English site and the Chinese edition beside it


@pytest.fixture(scope="module")
def axe_page():
    need_site()
    try:
        import axe_playwright_python  # noqa: F401
    except ImportError:
        need(False, "axe-playwright-python is not installed (pip install -r requirements.txt)")
    with chromium() as browser:
        # local files only: a request to any host (a CDN font, a theme's analytics) is blocked and fails the page
        page = offline_page(browser)
        yield page
        page.close()


_SETTLE = """
async () => {
  await Promise.all([...document.images].map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
}
"""


def axe_violations(page, url: str, has_widgets: bool = False) -> list[dict]:
    """axe-core's WCAG 2.1 A and AA violations of the page at `url` (every impact), once it has settled."""
    page.goto(url, wait_until="load")
    if has_widgets:
        page.wait_for_selector(".jupyter-widgets", state="attached")
        page.wait_for_timeout(300)
    page.evaluate(_SETTLE)
    return wcag_violations(page)


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
class TestAxe:
    @pytest.mark.parametrize("lang", LANGUAGES, ids=("en", "zh"))
    @pytest.mark.parametrize("name", AXE_PAGES)
    def test_wcag_21_aa(self, axe_page, name, lang):
        path = SITE / (lang + name + ".html")
        assert path.is_file(), f"{path} was not built"
        before = len(axe_page.external)
        bad = axe_violations(axe_page, path.as_uri(), WIDGET_VIEW in path.read_text())
        assert axe_page.external[before:] == [], f"{name} tried to reach another host: {axe_page.external[before:]}"
        assert not bad, f"{lang}{name}: axe-core finds WCAG 2.1 A/AA violations:\n{describe_violations(bad)}"

    @pytest.mark.parametrize("name", [p for p in AXE_PAGES if (SITE / (p + ".html")).is_file()
                                      and 'class="cell_input' in (SITE / (p + ".html")).read_text()])
    def test_no_code_block_scrolls_sideways(self, axe_page, name):
        """At 1280 px every code cell shows its longest line whole (CODE_COLUMNS characters)."""
        axe_page.goto((SITE / (name + ".html")).as_uri(), wait_until="load")
        cut = axe_page.evaluate("""() => [...document.querySelectorAll('article div.highlight pre')]
            .filter(p => !p.closest('.cell_output') && p.scrollWidth > p.clientWidth + 1)
            .map(p => p.textContent.split('\\n').reduce((a, b) => b.length > a.length ? b : a, ''))""")
        assert not cut, f"{name}: {len(cut)} code block(s) cut at the right edge, e.g. {cut[0]!r}"

    def test_index_sends_the_reader_to_the_first_page(self, axe_page):
        axe_page.goto((SITE / "index.html").as_uri())
        axe_page.wait_for_url(f"**/{PAGES[0]}.html")
        assert axe_page.evaluate("document.documentElement.lang"), "the first page does not say its language"

    def test_the_axe_check_fails_on_a_bad_page(self, axe_page, tmp_path):
        page = tmp_path / "bad.html"
        page.write_text('<!doctype html><html><head><title>bad</title></head><body><main>'
                        '<img src="x.png"><p style="color:#bbb;background:#fff">faint text</p>'
                        '<p>Text and <a href="#x" style="color:#333;text-decoration:none">a link</a> alike.</p>'
                        '<div style="overflow:auto;height:2em"><p>1</p><p>2</p><p>3</p><p>4</p></div>'
                        '<img src="https://example.org/x.png" alt="an image from another host"></main></body></html>')
        before = len(axe_page.external)
        ids = {v["id"] for v in axe_violations(axe_page, page.as_uri())}
        # the kinds of violation nbgrader's feedback page had (issue 30), and a missing alt text
        assert {"image-alt", "color-contrast", "html-has-lang", "link-in-text-block",
                "scrollable-region-focusable"} <= ids, ids
        assert axe_page.external[before:] == ["https://example.org/x.png"]


# ------------------------------------------------------------------------------------------ 3. code lines

# How many characters of a code line a chapter's code block shows without scrolling sideways.
# Measured in Debian's chromium at 1280 x 900 (tests/test_site.py's viewport) on the built book: with the
# theme's 14 px code font and 16 px padding a code cell's <pre> showed 77 characters; book/_static/code.css
# sets 12.5 px (GitHub's code size) and 8 px padding, so 88 fit.  TestAxe.test_no_code_block_scrolls_sideways
# checks the built pages themselves, so this number and the CSS cannot drift apart unnoticed.
CODE_COLUMNS = 88
# A CJK character takes two columns of a monospace font.
_WIDE = ("W", "F")
_HIDDEN = {"remove-cell", "remove-input"}


def columns(line: str) -> int:
    line = line.expandtabs(4)
    return sum(2 if unicodedata.east_asian_width(c) in _WIDE else 1 for c in line)


def code_cells(markdown: str) -> list[tuple[int, list[str], list[str]]]:
    """(line of the fence, tags, code lines) for every ```{code-cell} of a MyST notebook and every
    plain fenced code block (```python, ```, ```{code-block}); option lines are not code."""
    lines = markdown.split("\n")
    cells, k = [], 0
    while k < len(lines):
        m = re.match(r"^(\s*)(`{3,}|~{3,})\s*(\S*)(.*)$", lines[k])
        if not m:
            k += 1
            continue
        indent, fence, info = m.group(1), m.group(2), m.group(3)
        end = k + 1
        while end < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$", lines[end]):
            end += 1
        body = [line[len(indent):] if line.startswith(indent) else line for line in lines[k + 1:end]]
        code_like = not info.startswith("{") or info in ("{code-cell}", "{code-block}", "{code}", "{sourcecode}")
        if code_like:
            tags: list[str] = []
            if body and body[0].strip() == "---":  # a YAML block of options
                stop = next((j for j in range(1, len(body)) if body[j].strip() == "---"), 0)
                options = yaml.safe_load("\n".join(body[1:stop])) or {}
                tags = list(options.get("tags") or [])
                body = body[stop + 1:]
            else:
                while body and body[0].startswith(":"):
                    t = re.match(r"^:tags:\s*\[(.*)\]", body[0])
                    if t:
                        tags = [s.strip().strip("'\"") for s in t.group(1).split(",")]
                    body = body[1:]
            cells.append((k + 1, tags, body))
        k = end + 1
    return cells


def long_lines(markdown: str, limit: int = CODE_COLUMNS) -> list[tuple[int, int]]:
    """(line number in the file, columns) of every displayed code line wider than `limit`."""
    lines = markdown.split("\n")
    found = []
    for fence_line, tags, body in code_cells(markdown):
        if _HIDDEN & set(tags):
            continue
        first = fence_line  # find each body line in the file to report where it is
        for code in body:
            while first < len(lines) and lines[first].strip() != code.strip():
                first += 1
            if columns(code) > limit:
                found.append((first + 1, columns(code)))
    return found


@pytest.mark.parametrize("source", sorted(p.name for p in BOOK.glob("*.md")))
def test_code_lines_fit_the_code_block(source):
    too_long = long_lines((BOOK / source).read_text())
    assert not too_long, (f"book/{source}: {len(too_long)} code line(s) wider than the {CODE_COLUMNS} columns a code "
                          f"block shows (line: columns): {too_long}")


def test_the_line_check_fails_on_long_lines():
    md = ("```{code-cell} ipython3\n:tags: [hide-input]\nx = 1\n" + "y" * 89 + "\n```\n\n"
          "```{code-cell} ipython3\n:tags: [remove-cell]\n" + "z" * 200 + "\n```\n\n"
          "```{code-cell} ipython3\n---\ntags: [remove-input]\n---\n" + "z" * 200 + "\n```\n\n"
          "```python\n" + "w" * 88 + "\n# " + "注" * 44 + "\n```\n\n"
          "```{note}\n" + "prose " * 40 + "\n```\n")
    assert long_lines(md) == [(4, 89), (21, 90)]
    assert columns("注意") == 4


# ------------------------------------------------------------------------------------------ 4. quotations

def test_quotations_of_the_notes_are_registered_and_verbatim():
    found = notes_quotes.book_quotations()
    registry = notes_quotes.load_registry()
    path = notes_quotes.notes_path()
    notes = path.read_text() if path.is_file() else None
    problems = notes_quotes.registry_problems(found, registry, notes)
    assert not problems, "\n".join(problems)


def test_what_counts_as_a_quotation():
    md = ("---\njupytext: x\n---\n# T\n"
          'the notes\' "correlation coefficient" (相关系数), e.g. "sequence labeling (序列标注)".\n\n'
          'The notes ("得到多个head的输出后，\n再通过一次线性计算"), “自注意力” and 「如下图」.\n\n'
          "```{code-cell} ipython3\nprint(\"代码\")\n```\n`\"行内\"` and $\\text{\"公式\"}$\n")
    assert notes_quotes.quotations(md) == [
        (7, "得到多个head的输出后，再通过一次线性计算"), (8, "自注意力"), (8, "如下图")]


def test_the_quotation_check_fails_on_a_new_changed_or_unfaithful_quotation():
    notes = "一、自注意力机制\n得到多个head的输出后，再通过一次\n线性计算，得到最终的输出。"
    quote = "得到多个head的输出后，再通过一次线性计算"
    text = notes_quotes.excerpt(notes, quote, margin=3)
    assert text == "力机制得到多个head的输出后，再通过一次线性计算，得到"
    registry = {quote: text}
    found = [("book/x.md", 3, quote)]
    assert notes_quotes.registry_problems(found, registry, notes) == []
    assert notes_quotes.registry_problems(found, registry, None) == []
    changed = [("book/x.md", 3, quote.replace("一次", "两次"))]
    assert "not in tests/data/notes_quotes.json" in notes_quotes.registry_problems(changed, registry, notes)[0]
    assert "does not contain" in notes_quotes.registry_problems(found, {quote: "机制"}, None)[0]
    other_notes = notes.replace("一次", "两次")
    assert "not verbatim" in notes_quotes.registry_problems(found, registry, other_notes)[0]
    assert notes_quotes.excerpt(other_notes, quote) is None
