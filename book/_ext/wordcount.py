"""The English words of the chapters' prose, at a revision and now (issue 28: "a quarter shorter").

    python book/_ext/wordcount.py                 # at ff75f47 (the book when issue 28 was filed) and now
    python book/_ext/wordcount.py --before REV    # at REV and now

A chapter is a page of ``_toc.yml`` that is not a reference or practice page (the same list the notation
check uses).  Its prose is what :func:`notation_check.prose_lines` keeps (no code cells, no fenced code,
no front matter, no display math, no directive options), without inline math, inline code, roles
({cite}`…`, {doc}`…`), link targets and HTML; outputs are not in the sources.  A word is a run of Latin
letters (with ' or - inside): "one-hot" is one word, "3.94" and "多头" are none.

It prints each chapter's words at REV and now, and three totals: the chapters of REV's table of contents,
the same without the pages that have left the book since, and the chapters of today's; with the change
in % of today's total against each of the first two.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notation_check import NOT_CHAPTERS, ROOT, prose_lines  # noqa: E402

BASELINE = "ff75f47"
_WORD = re.compile(r"[A-Za-z]+(?:['’-][A-Za-z]+)*")


def prose(text: str) -> str:
    """The prose of a MyST page, as a reader reads it, without math, code, roles and markup."""
    out = []
    for _, line in prose_lines(text):
        line = re.sub(r"\$[^$]*\$", " ", line)                 # inline math
        line = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", line)        # roles: {cite}`x`, {doc}`x`, {numref}`x`
        line = re.sub(r"`[^`]*`", " ", line)                   # inline code
        line = re.sub(r"\]\([^)]*\)", "]", line)               # link targets
        line = re.sub(r"<[^>]+>", " ", line)                   # html
        out.append(line)
    return "\n".join(out)


def words(text: str) -> int:
    """The English words of a page's prose."""
    return len(_WORD.findall(prose(text)))


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout


def chapters(toc: str) -> list[str]:
    """The chapters of a ``_toc.yml``'s text, in order (stems)."""
    return [s for s in re.findall(r"file:\s*book/([\w-]+)", toc) if s not in NOT_CHAPTERS]


def at(rev: str | None) -> dict[str, int]:
    """Each chapter of the table of contents at ``rev`` (None: the working tree) → its words."""
    if rev is None:
        return {s: words((ROOT / "book" / f"{s}.md").read_text(encoding="utf-8"))
                for s in chapters((ROOT / "_toc.yml").read_text(encoding="utf-8"))}
    return {s: words(_git("show", f"{rev}:book/{s}.md")) for s in chapters(_git("show", f"{rev}:_toc.yml"))}


def change(before: int, now: int) -> str:
    return f"{100 * (now - before) / before:+.1f} %" if before else "n/a"


def report(before: dict[str, int], now: dict[str, int], rev: str) -> str:
    rows = [f"{'chapter':<22}{rev:>10}{'now':>10}{'change':>10}"]
    for s in list(before) + [s for s in now if s not in before]:
        b, n = before.get(s), now.get(s)
        rows.append(f"{s:<22}{b if b is not None else '-':>10}{n if n is not None else '-':>10}"
                    f"{change(b, n) if b is not None and n is not None else ('left' if n is None else 'new'):>10}")
    total_before, total_now = sum(before.values()), sum(now.values())
    staying = sum(v for s, v in before.items() if s in now)
    left = [s for s in before if s not in now]
    rows += ["",
             f"total, the chapters at {rev}: {total_before}; now: {total_now} ({change(total_before, total_now)})",
             f"total at {rev} without the pages that left the book ({', '.join(left) or 'none'}): {staying}; "
             f"now: {total_now} ({change(staying, total_now)})"]
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BASELINE, help=f"the revision to compare with (default {BASELINE})")
    args = parser.parse_args(argv)
    print(report(at(args.before), at(None), args.before))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
