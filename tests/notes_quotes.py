"""Quotations of the lecture notes in the book, and the committed registry that vouches for them.

A quotation of the notes is Chinese text inside quotation marks in a chapter's prose: "…", “…” or
「…」 (a quotation may run over a line break, not over a blank line). Text in parentheses inside the
quotes is not counted, so `"sequence labeling (序列标注)"` (an English term with the notes' Chinese
term beside it) is not a quotation, and neither is a bare term in parentheses such as (自注意力机制).
Code cells, fenced blocks, inline code and math are not prose and are skipped.

tests/data/notes_quotes.json maps every quotation (whitespace removed) to an excerpt of the notes
around it: the quotation plus up to MARGIN characters on each side. CI runs without the notes (they
are not in the repository); the registry lets it check that every quotation was verified once, and
a new or changed quotation fails tests/test_book_pages.py until it is registered again:

    PYTHONPATH=$PWD python tests/notes_quotes.py            # list the quotations and whether they are verbatim
    PYTHONPATH=$PWD python tests/notes_quotes.py --update   # rewrite the registry (refuses any not verbatim)

The notes are read from $ATTN_NOTES, else NOTES_DEFAULT.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
REGISTRY = ROOT / "tests" / "data" / "notes_quotes.json"
NOTES_DEFAULT = Path("/work/shared/seed/000_f23cfc41f7d8cea7.txt")
MARGIN = 15  # characters of the notes kept on each side of a quotation in its excerpt

CJK = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]")
QUOTES = re.compile(r'"([^"]*)"|“([^”]*)”|「([^」]*)」')
PARENS = re.compile(r"\([^()]*\)|（[^（）]*）")
FENCE = re.compile(r"^\s*(`{3,}|~{3,})")


def notes_path() -> Path:
    return Path(os.environ.get("ATTN_NOTES") or NOTES_DEFAULT)


def norm(text: str) -> str:
    """Whitespace removed: the chapters wrap Chinese over lines, the notes wrap it elsewhere."""
    return re.sub(r"\s+", "", text)


def prose(markdown: str) -> str:
    """The prose of a MyST page, same lines: front matter, fenced blocks (code cells included),
    inline code and math replaced by blanks so line numbers stay right."""
    lines = markdown.split("\n")
    out, fence, front = [], None, lines[:1] == ["---"]
    for k, line in enumerate(lines):
        if front:
            out.append("")
            if k > 0 and line.strip() == "---":
                front = False
            continue
        m = FENCE.match(line)
        if fence:
            out.append("")
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):]:
                fence = None
            continue
        if m:
            fence = m.group(1)
            out.append("")
            continue
        out.append(line)
    text = "\n".join(out)
    text = re.sub(r"\$\$.*?\$\$", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)
    text = re.sub(r"`[^`\n]*`|\$[^$\n]+\$", lambda m: " " * len(m.group(0)), text)
    return text


def quotations(markdown: str) -> list[tuple[int, str]]:
    """(line, quotation) for every quotation of the notes in a page, quotation whitespace-normalised."""
    text = prose(markdown)
    found = []
    offset = 0
    for paragraph in re.split(r"(\n[ \t]*\n)", text):
        for m in QUOTES.finditer(paragraph):
            inner = next(g for g in m.groups() if g is not None)
            if CJK.search(PARENS.sub("", inner)):
                line = text.count("\n", 0, offset + m.start()) + 1
                found.append((line, norm(inner)))
        offset += len(paragraph)
    return found


def book_quotations(book: Path = BOOK) -> list[tuple[str, int, str]]:
    """(file relative to the repository, line, quotation) over book/*.md."""
    return [(str(path.relative_to(book.parent)), line, quote)
            for path in sorted(book.glob("*.md")) for line, quote in quotations(path.read_text())]


def excerpt(notes: str, quote: str, margin: int = MARGIN) -> str | None:
    """The quotation with up to `margin` characters of the notes each side (whitespace removed),
    or None when it is not verbatim in the notes."""
    flat = norm(notes)
    at = flat.find(quote)
    if at < 0:
        return None
    return flat[max(0, at - margin): at + len(quote) + margin]


def nearest(notes: str, quote: str) -> tuple[float, str]:
    """The stretch of the notes most like `quote` (for reports): (similarity 0..1, text)."""
    flat = norm(notes)
    n = len(quote)
    best = (0.0, "")
    step = max(1, n // 4)
    for start in range(0, max(1, len(flat) - n + 1), step):
        window = flat[start: start + n + n // 2]
        match = difflib.SequenceMatcher(None, quote, window, autojunk=False)
        ratio = match.ratio()
        if ratio > best[0]:
            best = (ratio, window)
    return best


def load_registry(path: Path = REGISTRY) -> dict[str, str]:
    return json.loads(path.read_text()) if path.is_file() else {}


def registry_problems(found: list[tuple[str, int, str]], registry: dict[str, str],
                      notes: str | None) -> list[str]:
    """Why the registry does not vouch for the book's quotations (empty when it does)."""
    problems = [f"{file}:{line}: quotation not in {REGISTRY.relative_to(ROOT)} (new or changed; check it "
                f"against the notes and run tests/notes_quotes.py --update): {quote}"
                for file, line, quote in found if quote not in registry]
    for quote, text in registry.items():
        if quote not in text:
            problems.append(f"registry: the excerpt does not contain its quotation {quote!r}: {text!r}")
        if notes is not None and norm(text) not in norm(notes):
            problems.append(f"registry: the excerpt is not verbatim in the notes: {text!r}")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help=f"rewrite {REGISTRY.relative_to(ROOT)}")
    args = parser.parse_args(argv)
    path = notes_path()
    if not path.is_file():
        print(f"no notes at {path} (set ATTN_NOTES)", file=sys.stderr)
        return 2
    notes = path.read_text()
    found = book_quotations()
    registry, refused = {}, []
    for file, line, quote in found:
        text = excerpt(notes, quote)
        if text is None:
            ratio, near = nearest(notes, quote)
            refused.append(f"{file}:{line}: NOT verbatim: {quote}\n    nearest in the notes ({ratio:.0%}): {near}")
        else:
            registry[quote] = text
            print(f"{file}:{line}: ok: {quote}")
    for message in refused:
        print(message, file=sys.stderr)
    if args.update:
        if refused:
            print(f"registry not written: {len(refused)} quotation(s) not verbatim in the notes", file=sys.stderr)
            return 1
        REGISTRY.parent.mkdir(parents=True, exist_ok=True)
        REGISTRY.write_text(json.dumps(dict(sorted(registry.items())), ensure_ascii=False, indent=1) + "\n")
        print(f"wrote {len(registry)} quotation(s) to {REGISTRY.relative_to(ROOT)}")
    return 1 if refused else 0


if __name__ == "__main__":
    sys.exit(main())
