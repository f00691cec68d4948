"""No sentence about the build or its machine in the book, English or Chinese (issue 28):
the chapters' sources, the catalogues' messages and, when a site was built, its pages in both
languages (book/_ext/build_sentences.py holds the phrases)."""

from __future__ import annotations

import sys

import pytest
from site_helpers import ROOT, need_site, toc_pages

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import build_sentences  # noqa: E402

SOURCES = [p for p in build_sentences.book_files(site=ROOT / "no site") if p.suffix in (".md", ".po")]


def test_there_are_chapters_and_catalogues_to_check():
    assert {p.suffix for p in SOURCES} == {".md", ".po"} and len(SOURCES) > 30


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_no_sentence_about_the_build_in_the_sources(path):
    assert build_sentences.problems([path]) == []


@pytest.mark.parametrize("page", [f"{lang}{page}" for lang in ("", "zh/") for page in toc_pages()])
def test_no_sentence_about_the_build_in_the_built_pages(page):
    html = need_site() / f"{page}.html"
    assert html.is_file(), html
    assert build_sentences.problems([html]) == []


@pytest.mark.parametrize("bad", [
    'print(f"This page executed in {time.perf_counter() - _start:.1f} s.")',
    "in this build the lazy kernel took 0.9 times",
    "the exact factors depend on (whatever machine runs `make book`, often a shared one)",
    "Build machines are usually shared, so the page reports ratios",
    "(this is what the HTML\npage can show without a running kernel)",
    "median of repeated runs while this page was built",
    "具体倍数取决于机器以及构建本书时的负载（运行 `make book` 的机器往往是共享的）",
    "上面两行输出给出了在生成本页的那次运行中的分界点",
    "在这次构建中，惰性核函数的耗时是",
    # issue 28's five examples as a translation would write them
    "本页执行用时 30.1 秒。", "本页面运行耗时 30.1 秒", "本页在 30.1 秒内执行完毕",
    "无论哪台机器运行 `make book`", "在本次构建中", "构建机器通常是共享的", "构建用的机器往往是共享的",
    "这是 HTML 页面能展示的", "The notebook executed in 30.1 s.",
])
def test_the_checker_finds_a_sentence_about_the_build(bad):
    assert build_sentences.find(bad)


def test_the_checker_fails_on_a_bad_file_and_passes_a_measured_statement(tmp_path):
    bad, good = tmp_path / "bad.md", tmp_path / "good.po"
    bad.write_text("Measured in this build: 3.1 ms.\n", encoding="utf-8")
    good.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=utf-8\\n"\n\n'
                    'msgid "On one CPU thread, n = 4096: 3.1 ms; the code builds the table."\n'
                    'msgstr "在单个 CPU 线程上，n = 4096：3.1 ms；代码构建了这张表。"\n', encoding="utf-8")
    assert build_sentences.problems([bad]) == [f'{bad}: "this build"']
    assert build_sentences.problems([good]) == []
