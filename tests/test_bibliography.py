"""The bibliography prints what the book cites, and references.bib holds nothing else (issue 42)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
CITE = re.compile(r"\{cite(?::[a-z]+)?\}`([^`]+)`")


def cited_keys() -> set[str]:
    """Every key a {cite} role of a page of the book names."""
    keys = set()
    for page in BOOK.glob("*.md"):
        for group in CITE.findall(page.read_text(encoding="utf-8")):
            keys.update(k.strip() for k in group.split(",") if k.strip())
    return keys


def bib_keys() -> list[str]:
    return re.findall(r"^@\w+\{([^,\s]+),", (BOOK / "references.bib").read_text(encoding="utf-8"), re.M)


def test_every_entry_of_the_bibliography_is_cited():
    uncited = sorted(set(bib_keys()) - cited_keys())
    assert not uncited, f"entries of book/references.bib no page cites (cite them or remove them): {uncited}"


def test_every_citation_has_an_entry():
    missing = sorted(cited_keys() - set(bib_keys()))
    assert not missing, f"cited but not in book/references.bib: {missing}"


def test_the_bibliography_page_prints_only_cited_entries():
    page = (BOOK / "bibliography.md").read_text(encoding="utf-8")
    assert "{bibliography}" in page
    assert ":all:" not in page, "book/bibliography.md prints every entry (:all:), cited or not"
