"""The glossary is the term base of the Chinese edition; this check holds the catalogues to it (issue 32).

    python book/_ext/term_check.py            # the book's and the exercises' Chinese catalogues
    python book/_ext/term_check.py FILE.po    # these catalogues only

``book/glossary.md``'s "Term base" table gives each English term its one Chinese term and the variants
not used, and so does ``locales/zh_CN/termbase.md``'s, the translators' rows for the tools' words (set-up
cell, Jupyter's kernel, docstring), which the book's glossary does not list (:func:`term_base`).  In
every msgstr of ``locales/zh_CN/LC_MESSAGES/book/*.po`` (but the
glossary's own, which quotes the notes' forms), ``exercises/*.po`` and the figures' ``figures.po``, outside
inline code, math, roles, link targets and HTML, the check finds:

* a **variant** of the table (小块, 空洞率, 习题, …);
* an **English term left in running Chinese text**: in a message with Chinese in it, an English term of
  the table is allowed in a gloss, brackets right after Chinese text, as in 独热（one-hot） or
  因果掩码（causal mask）, once per catalogue (a page) for each gloss; any other use of it (the same gloss
  again, or the term in the running text) is a finding.  Not findings: a Jupyter menu path in bold
  (**Kernel → Restart Kernel**), an English title in quotes (“Self-attention” 一讲), Jupyter Notebook 7.

Every finding is printed as ``file: msgid: what`` (the msgid cut to 60 characters); exit code 1 when
there is one (tests/test_terms.py runs it).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GLOSSARY = ROOT / "book" / "glossary.md"
#: The translators' rows: the words of the tools around the chapters, not in the book's glossary.
TRANSLATORS = ROOT / "locales" / "zh_CN" / "termbase.md"
LOCALE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES"
#: The glossary's catalogue quotes the notes' own forms (element-wise相乘求和, window): it is the base,
#: not a page held to it.
NOT_CHECKED = {"glossary.po"}
#: A variant that has a right use too: it is a finding unless its message matches the pattern.
RIGHT_USE = {"核函数": re.compile(r"φ|\\phi|线性注意力|特征映射")}

_CJK = re.compile(r"[\u4e00-\u9fff]")


@dataclass(frozen=True)
class Term:
    english: str        # "one-hot"
    chinese: str        # "独热"
    variants: tuple     # ("小块",)


@dataclass(frozen=True)
class Finding:
    file: str
    msgid: str
    what: str

    def __str__(self):
        short = " ".join(self.msgid.split())
        return f"{self.file}: {short[:60] + ('…' if len(short) > 60 else '')!r}: {self.what}"


def term_base(glossary: Path = GLOSSARY, translators: Path | None = TRANSLATORS) -> list[Term]:
    """The rows of the "Term base" tables of the glossary and of the translators' term base."""
    terms = _term_table(glossary)
    return terms + (_term_table(translators) if translators is not None else [])


def _term_table(path: Path) -> list[Term]:
    text = path.read_text(encoding="utf-8")
    section = text.split("## Term base", 1)[1].split("\n## ", 1)[0]
    terms = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) != 3 or cells[0] in ("English", "") or set(cells[0]) <= set("-: "):
            continue
        english = re.sub(r"\s*\(.*?\)|\s*\$[^$]*\$", "", cells[0]).strip()
        variants = tuple(v.strip() for v in cells[2].split(",") if v.strip())
        terms.append(Term(english, cells[1], variants))
    return terms


def running_text(msg: str) -> str:
    """What of a message is running text: no inline code, math, roles, link targets, HTML, URLs."""
    msg = re.sub(r"\*\*[^*]*→[^*]*\*\*", " ", msg)   # a menu path of Jupyter's English interface
    msg = re.sub(r"“[^“”\u4e00-\u9fff]*”", " ", msg)       # an English title quoted: “Self-attention” 一讲
    msg = re.sub(r"Jupyter\s*Notebook|Notebook\s*\d", " ", msg)   # the product
    msg = re.sub(r"\{[\w:-]+\}`[^`]*`", " ", msg)
    msg = re.sub(r"`[^`]*`", " ", msg)
    msg = re.sub(r"\$\$.*?\$\$|\$[^$]*\$", " ", msg, flags=re.S)
    msg = re.sub(r"\]\([^)]*\)|<[^>]+>|https?://\S+", " ", msg)
    return msg


def _english(term: str) -> re.Pattern:
    """The English term as a word (any case, plural allowed, a hyphen or a space between its words), not
    part of an identifier (``n_heads``, ``mask.sum``)."""
    words = [re.escape(w) for w in re.split(r"[\s-]+", term)]
    return re.compile(r"(?<![\w.])" + r"[\s-]".join(words) + r"(?:e?s)?(?![\w(])", re.I)


def _gloss(text: str, start: int, end: int) -> str | None:
    """If text[start:end] stands in an English gloss right after Chinese text, 独热（one-hot）,
    因果掩码（causal mask，…）, **掩码**（mask）: the gloss (lower case, up to a comma); else None."""
    open_ = max(text.rfind("（", 0, start), text.rfind("(", 0, start))
    if open_ < 0 or re.search(r"[）)]", text[open_:start]) or re.search(r"[\u4e00-\u9fff]", text[open_:start]):
        return None
    close = re.search(r"[）)，,；;]", text[end:])
    if not close or not _CJK.search(text[:open_].rstrip().rstrip("*")[-1:]):
        return None
    return " ".join(text[open_ + 1:end + close.start()].lower().split())


def _around(text: str, start: int, end: int) -> str:
    return " ".join(text[max(0, start - 12):end + 8].split())


def read(path: Path) -> list[tuple[str, str]]:
    """(msgid, msgstr) of a catalogue, in its order; plural forms as their first form."""
    from babel.messages.pofile import read_po

    with open(path, "rb") as f:
        catalog = read_po(f)
    out = []
    for m in catalog:
        if not m.id:
            continue
        msgid = m.id if isinstance(m.id, str) else m.id[0]
        msgstr = m.string if isinstance(m.string, str) else (m.string or ("",))[0]
        out.append((msgid, msgstr or ""))
    return out


def check(messages: list[tuple[str, str]], name: str, terms: list[Term] | None = None) -> list[Finding]:
    """The findings of one catalogue's messages, read in order (the first bracketed use is per page)."""
    terms = term_base() if terms is None else terms
    introduced: set[str] = set()
    out = []
    for msgid, msgstr in messages:
        if not _CJK.search(msgstr):
            continue
        text, here = running_text(msgstr), set()   # the glosses this message introduces
        for term in terms:
            for variant in term.variants:
                if variant in text and not (variant in RIGHT_USE and RIGHT_USE[variant].search(msgstr)):
                    out.append(Finding(name, msgid, f"{variant!r} is a variant: write {term.chinese!r} "
                                                    f"({term.english})"))
            for m in _english(term.english).finditer(text):
                gloss = _gloss(text, m.start(), m.end())
                if gloss is not None and (gloss not in introduced or gloss in here):
                    introduced.add(gloss)
                    here.add(gloss)
                    continue
                what = "glossed again" if gloss is not None else "in Chinese text"
                out.append(Finding(name, msgid, f"English {m.group(0)!r} {what} "
                                                f"(…{_around(text, m.start(), m.end())}…): write "
                                                f"{term.chinese!r} (English once, in brackets, at its first use)"))
    return out


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def default_files() -> list[Path]:
    return ([p for p in sorted((LOCALE / "book").glob("*.po")) if p.name not in NOT_CHECKED]
            + sorted((LOCALE / "exercises").glob("*.po")) + [LOCALE / "figures.po"])


def problems(paths) -> list[Finding]:
    terms = term_base()
    return [f for path in paths for f in check(read(Path(path)), _rel(Path(path)), terms)]


def main(argv: list[str]) -> int:
    paths = [Path(a).resolve() for a in argv] or default_files()
    findings = problems(paths)
    for f in findings:
        print(f)
    print(f"{len(findings)} finding(s) in {len(paths)} catalogue(s)", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
