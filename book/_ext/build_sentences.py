"""No sentence about the build or its machine in the book, in either language (issue 28).

    python book/_ext/build_sentences.py            # the chapters, the Chinese catalogues, the built HTML
    python book/_ext/build_sentences.py FILE ...   # these files only (.md, .po or .html)

The book states what was measured ("on one CPU thread, n = 4096"), never when or where it was computed:
"This page executed in 30.1 s", "whatever machine runs `make book`", "in this build", "build machines are
usually shared", "what the HTML page can show" all describe the build, which a reader cannot see and which
changes with every build.  :data:`PHRASES` lists such phrases, English and Chinese; :func:`find` returns
the ones a text contains.  Exit code 1 when any is found (tests/test_build_sentences.py runs it).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "book"
SITE = ROOT / "_build" / "html"

#: Regular expressions (case-insensitive, whitespace-tolerant) of sentences about the build or its machine.
PHRASES = [
    # English
    r"this page (?:was )?executed",
    r"executed (?:to build|while building)",
    r"\bthis build\b",
    r"\bbuild machines?\b",
    r"whatever machine",
    r"machines? (?:is|are) (?:usually|often) shared",
    r"\bmake book\b",
    r"\b(?:page|book) (?:was|is) (?:being )?built\b",
    r"\bthe run that built\b",
    r"\bat build time\b",
    r"\bhtml page can show\b",
    r"\bexecuted in [\d.]+\s*(?:s|seconds?|min)\b",
    # Chinese
    r"构建本(?:页|书)",
    r"生成本(?:页|书)",
    r"本页(?:面)?(?:执行|运行)了",
    r"(?:本次|这次|那次)构建",
    r"那次运行",
    r"共享的?机器|机器(?:往往|通常)是共享",
    r"HTML 页面(?:在没有运行内核时)?所?能(?:够)?(?:显示|展示|呈现)?",
    r"本页(?:面)?的?(?:执行|运行)(?:用时|耗时|花了|共用|时间)",
    r"本页(?:面)?在\s*[\d.]+\s*秒内(?:执行|运行)",
    r"(?:执行|运行|生成)(?:本|这个|此)页(?:面)?(?:用了|花了|耗时)",
    r"(?:无论|不管)(?:是)?哪台机器",
    r"构建(?:用的|所用的|时的)?机器",
]
_RX = [re.compile(p.replace(" ", r"\s+"), re.I) for p in PHRASES]


def find(text: str) -> list[str]:
    """The phrases of :data:`PHRASES` that ``text`` contains, as they appear in it."""
    return [" ".join(m.group(0).split()) for rx in _RX for m in rx.finditer(text)]


def texts(path: Path) -> list[str]:
    """What a reader sees of ``path``: a chapter's whole source, a catalogue's messages (msgid and
    msgstr), an HTML page's text."""
    if path.suffix == ".po":
        from babel.messages.pofile import read_po

        with open(path, "rb") as f:
            return [s for m in read_po(f) if m.id for s in (m.id, m.string) if isinstance(s, str)]
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".html":
        from bs4 import BeautifulSoup

        text = BeautifulSoup(text, "html.parser").get_text(" ")
    return [text]


def problems(paths) -> list[str]:
    """One line per phrase found, ``file: "phrase"``."""
    out = []
    for path in paths:
        for text in texts(Path(path)):
            out += [f'{Path(path).relative_to(ROOT) if Path(path).is_relative_to(ROOT) else path}: "{hit}"'
                    for hit in find(text)]
    return out


def book_files(site: Path = SITE) -> list[Path]:
    """The chapters (book/*.md), their Chinese catalogues and, when a site was built, its pages."""
    html = sorted(p for p in site.rglob("*.html") if "_static" not in p.parts) if site.is_dir() else []
    return sorted((ROOT / "book").glob("*.md")) + sorted(LOCALE.glob("*.po")) + html


if __name__ == "__main__":
    found = problems([Path(a).resolve() for a in sys.argv[1:]] or book_files())
    print("\n".join(found) or "no sentence about the build or its machine")
    sys.exit(1 if found else 0)
