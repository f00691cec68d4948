"""No English left on the Chinese pages (issue 32): every heading, every entry of the tables of contents
and the footer of the built Chinese edition carry Chinese; numbered headings ("## 1. Get a notebook")
are translated (book/_ext/language_switch.py escapes their number for the parser); the footer names the
authors in Chinese; no reference to a page that does not exist (前言) or doubled (见附录 附录：); the
theme's own strings (search box, sidebar toggles, colour mode, heading links, launch buttons) are Chinese
(issue 42: book/_ext/theme_zh.py)."""

from __future__ import annotations

import re
import sys

import pytest
from bs4 import BeautifulSoup
from site_helpers import ROOT, SITE, need, need_site, toc_pages

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import language_switch  # noqa: E402

ZH = SITE / "zh"
CJK = re.compile(r"[\u4e00-\u9fff]")
#: Names that are the same in both editions: a heading or entry made of these only is not English left.
NAMES = {"Transformer", "BERT", "GAT", "CNN", "RNN", "PyTorch", "NumPy", "FlashAttention", "Softmax", "softmax"}
#: Sentences that point at what the Chinese edition does not have.
DANGLING = [r"见前言", r"见附录\s*附录", r"The Self-Attention, Step by Step team"]


def english_only(text: str) -> bool:
    """Is ``text`` English that a Chinese reader gets untranslated: Latin words (beyond names, symbols and
    numbers) and no Chinese?"""
    text = " ".join(text.replace("#", " ").split())
    words = [w for w in re.findall(r"[A-Za-z]{2,}", text) if w not in NAMES]
    return bool(words) and not CJK.search(text)


def leftovers(html: str) -> list[str]:
    """The English-only headings, table-of-contents entries and footer of a built Chinese page, and the
    dangling references in its text."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.select(".math, code, pre, script, style, .language-switch"):
        tag.decompose()
    out = []
    for sel, what in [("article h1, article h2, article h3, article h4", "heading"),
                      ("nav.bd-links a, .bd-toc-nav a, #bd-toc-nav a", "toc entry"),
                      ("footer .footer-item, .bd-footer-content__inner", "footer")]:
        out += [f"{what}: {t.get_text(' ', strip=True)!r}" for t in soup.select(sel)
                if english_only(t.get_text(" ", strip=True))]
    text = soup.get_text(" ")
    out += [f"dangling: {m.group(0)!r}" for rx in DANGLING for m in re.finditer(rx, text)]
    return out


#: The services the launch buttons name: the same in both editions.
SERVICES = {"Binder", "Colab", "JupyterHub"}


def theme_leftovers(html: str) -> list[str]:
    """The theme's English strings on a built Chinese page: tooltips, labels and placeholders of its
    controls (``title``, ``aria-label``, ``placeholder``, ``data-bs-title``) and the launch buttons' texts;
    not the citations' tooltips (a paper's title stays as published).  Also the print-only contents' label
    (``<nav aria-label="Page">``) and the images' alt texts (the launch menu's "Binder logo")."""
    soup = BeautifulSoup(html, "html.parser")
    for tag in soup.select("a.reference, .language-switch, script, style"):
        tag.decompose()
    found = []
    for tag in soup.find_all(True):
        for attr in ("title", "aria-label", "placeholder", "data-bs-title", "alt"):
            value = tag.get(attr)
            if isinstance(value, str) and english_only(value) and value not in SERVICES:
                found.append(f"{attr}: {value!r}")
    for tag in soup.select(".btn__text-container"):
        text = tag.get_text(" ", strip=True)
        if english_only(text) and text not in SERVICES:
            found.append(f"button: {text!r}")
    return sorted(set(found))


def test_the_themes_english_strings_are_caught():
    """The strings the Chinese pages showed in English before issue 42 (copied from a built page)."""
    html = ('<input type="search" placeholder="Search this book..." aria-label="Search this book..."/>'
            '<button class="sidebar-toggle primary-toggle" title="Toggle primary sidebar"></button>'
            '<button class="theme-switch-button" aria-label="Color mode" data-bs-title="Color mode"></button>'
            '<h2>注意力<a class="headerlink" href="#x" title="Link to this heading">#</a></h2>'
            '<button title="Launch interactive content"></button><a title="Launch on Binder">'
            '<span class="btn__text-container">Binder</span></a>'
            '<a class="reference internal" title="Ashish Vaswani. Attention is all you need.">[1]</a>'
            '<button title="颜色模式"></button>'
            '<div class="onlyprint"><nav aria-label="Page"></nav></div>'
            '<a title="Launch on Colab"><img alt="Colab logo" src="x.png"><img alt="Binder 图标" src="y.svg"></a>')
    found = theme_leftovers(html)
    for text in ("Search this book...", "Toggle primary sidebar", "Color mode", "Link to this heading",
                 "Launch interactive content", "Launch on Binder", "Page", "Colab logo"):
        assert any(repr(text) in f for f in found), (text, found)
    assert not any("Vaswani" in f or "颜色" in f or "图标" in f for f in found), found
    assert "button: 'Binder'" not in found, found


@pytest.mark.slow
@pytest.mark.parametrize("page", toc_pages())
def test_the_themes_strings_on_the_chinese_pages_are_chinese(page):
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    assert theme_leftovers((ZH / f"{page}.html").read_text(encoding="utf-8")) == []


@pytest.mark.parametrize("text, expected", [
    ("1. Get a notebook", True), ("5. Feedback names the mistake #", True),
    ("1. 获取笔记本", False), ("走向 Transformer", False), ("Transformer", False), ("$n$ 3.94", False),
])
def test_english_only(text, expected):
    assert english_only(text) is expected


def test_a_page_with_english_left_is_caught():
    html = ("<article><h2>1. Get a notebook</h2><h2>2. 填写答案单元格</h2><p>见前言。</p></article>"
            "<nav class='bd-links'><a>Exercises</a><a>练习</a></nav>"
            "<footer><div class='footer-item'>作者： The Self-Attention, Step by Step team</div></footer>")
    found = leftovers(html)
    assert "heading: '1. Get a notebook'" in found and "toc entry: 'Exercises'" in found
    assert "dangling: '见前言'" in found and any("Step by Step team" in f for f in found)
    assert not any("填写" in f or "练习" in f for f in found)


def test_a_numbered_title_is_escaped_for_the_parser_and_nothing_else():
    assert language_switch.escape_numbered_title("1. 获取笔记本\n" + "=" * 12) == "1\\. 获取笔记本\n" + "=" * 12
    assert language_switch.escape_numbered_title("1. 获取笔记本") == "1. 获取笔记本"   # a paragraph: a list
    assert language_switch.escape_numbered_title("获取笔记本\n====") == "获取笔记本\n===="


@pytest.mark.slow
@pytest.mark.parametrize("page", toc_pages())
def test_no_english_left_on_the_chinese_page(page):
    need_site()
    need((ZH / "index.html").is_file(), f"no Chinese edition at {ZH}: run make book")
    assert leftovers((ZH / f"{page}.html").read_text(encoding="utf-8")) == []
