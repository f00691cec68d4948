"""The two languages of an exercise's text cell: the English, then :data:`MARKER`, then the Chinese.

``make release`` writes both (``attn_grader.authoring.bilingual``); ``make release LANG=en`` or
``LANG=zh_CN`` keeps one side.  The grader compares a handed-in text cell with the source's through
:func:`one_of_the_releases`, so a notebook of any of the three releases is the release, not an edit.
"""

from __future__ import annotations

MARKER = "\n\n---\n<!-- 中文 -->\n\n"


def english(source: str) -> str:
    return source.split(MARKER, 1)[0].strip()


def chinese(source: str) -> str:
    """The translation part of a bilingual text cell ("" when it has none)."""
    return source.split(MARKER, 1)[1].strip() if MARKER in source else ""


def one_of_the_releases(handed_in: str, source: str) -> bool:
    """Is a handed-in text cell ``source`` as one of the three releases writes it (both languages,
    English only, Chinese only)?"""
    if MARKER not in source:
        return handed_in.strip() == source.strip()
    return handed_in.strip() in (source.strip(), english(source), chinese(source) or english(source))
