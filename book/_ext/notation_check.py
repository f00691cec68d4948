"""The notation page is the registry of the book's symbols; this check keeps it true (issues 28 and 29).

    python book/_ext/notation_check.py            # the chapters, the exercises' text, the catalogues, and
                                                  # every formula's symbols (notation_formulas.py)
    python book/_ext/notation_check.py FILE ...   # these files only (.md, .ipynb or a catalogue .py)

``book/notation.md`` lists every symbol with its one meaning and the chapters that may define it.  This
module reads those tables (:func:`registry`) and then looks, in the chapters' prose (not code cells, not
fenced code) and in the exercises' text (the markdown cells of ``solutions/*/*.ipynb`` and the messages of
``attn_grader/catalogue/*.py``), for two things:

* **definitions** (:func:`definitions`): sentences of the forms "$X$ is the/our …", "$X$ denotes …",
  "$X$ stands for …", "$X := …$", "we write $X$ for …", "call it $X$", "let $X$ be …", "where $X$ is …",
  and table rows whose first cell is one symbol.  In a chapter, a definition of a listed symbol (or of a
  new symbol made from a listed letter, e.g. $K$ for a kernel when $K$ is the keys) outside the chapters
  the page allows is a second meaning; a definition of a symbol the page does not list at all is a
  symbol missing from the page.  The exercises restate the book's definitions, so there only the new
  meanings of listed letters count;
* **forbidden uses** (:data:`RULES`): the uses the notation scheme removed from the book — a bare $W$,
  $c$ as a bias, $p$ for a dropout rate or a softmax, $K$/$k$ for a kernel size, $h$ other than $h^t$,
  $e$ other than $e^i$, $b$ as a bias, $L$ as a length, a head index written other than the one rule.

It misses a definition of another form ("the number of heads, $H$, …"), a second meaning never defined,
meanings inside display formulas: a lint of the sentences that define, not a proof.  Findings print as
``file:line: rule: text``; exit code 1 when there is one (tests/test_notation.py runs it).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from notation_rules import RULES, WORD_RULES, _math, forbidden  # noqa: E402,F401 (the rules are this check's API)

ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
PAGE = BOOK / "notation.md"
#: Pages that are not chapters: they define nothing (the glossary names terms, not symbols).
NOT_CHAPTERS = {"notation", "glossary", "bibliography", "accessibility", "for_students", "for_instructors",
                "exercises", "intro"}


@dataclass(frozen=True)
class Finding:
    file: str
    line: int | str
    rule: str
    text: str

    def __str__(self):
        return f"{self.file}:{self.line}: {self.rule}: {self.text}"


# --- symbols ----------------------------------------------------------------------------------------

def canon(sym: str) -> str:
    """A symbol's LaTeX in one spelling: no spaces, no \\mathrm/\\text/\\operatorname wrappers around a
    word kept as the word, braces around one character dropped, ' as ', ``\\lvert`` as |."""
    s = sym.strip().strip("$").strip()
    s = re.sub(r"\\(?:mathrm|text|operatorname|mathbf|boldsymbol)\s*\{([^{}]*)\}", r"\1", s)
    s = s.replace(r"\lvert", "|").replace(r"\rvert", "|").replace(r"\prime", "'").replace("^{'}", "'")
    s = re.sub(r"\s+", "", s)
    s = re.sub(r"([\^_])\{(\\?[A-Za-z0-9]|\\[A-Za-z]+)\}", r"\1\2", s)  # ^{q} -> ^q
    return s


_INDEX = re.compile(r"(?<![A-Za-z\\])(?:[0-9]+|[ijtnm]|\\ell)(?![A-Za-z])")


def shape(sym: str) -> str:
    """A symbol with generic indices: $a^1$, $e^0$, $\\alpha_{1,2}$ are $a^i$, $e^i$, $\\alpha_{i,j}$."""
    return re.sub(r"([\^_])(\{[^{}]*\}|\\?[A-Za-z0-9]+)", lambda m: m.group(1) + _INDEX.sub("#", m.group(2)),
                  canon(sym))


def base(sym: str) -> str:
    """The letter a symbol is made from: sub- and superscripts dropped, accents kept (\\bar M is not M,
    \\alpha' is not \\alpha)."""
    s = canon(sym)
    s = re.sub(r"^(\\(?:hat|bar|tilde|vec|dot)\{?\\?[A-Za-z]+\}?|\\[A-Za-z]+|[A-Za-z]+)('*).*$", r"\1\2", s)
    return s


def _split_cell(cell: str) -> list[str]:
    """The symbols of a table cell: each inline math, and inside one, the comma-separated parts at
    brace depth 0 (``$i$, $j$`` and ``$n_y$, $n_x$, $(y, x)$``)."""
    out = []
    for m in _math(cell):
        depth, part = 0, ""
        for ch in m:
            depth += ch in "{(" and 1 or ch in "})" and -1 or 0
            if ch == "," and depth == 0:
                out.append(part)
                part = ""
            else:
                part += ch
        out.append(part)
    # "$I = [a^1 \\cdots a^n]$" lists $I$
    return [canon(p.split("=", 1)[0]) for p in out if p.strip() and r"\dots" not in p.split("=", 1)[0]]


def registry(page: Path = PAGE) -> dict[str, set[str]]:
    """Every symbol the page's tables list (canonical spelling) → the chapters (stems) allowed to define
    it: the links of the row's last cell."""
    reg: dict[str, set[str]] = {}
    for line in page.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 3 or set(cells[0]) <= set("-: "):
            continue
        chapters = set(re.findall(r"\]\(([\w-]+)\.md\)", cells[-1]))
        for sym in _split_cell(cells[0]):
            reg.setdefault(sym, set()).update(chapters)
    return reg


def bases(reg: dict[str, set[str]]) -> dict[str, set[str]]:
    """Each listed letter → the chapters allowed to define some symbol made from it."""
    out: dict[str, set[str]] = {}
    for sym, chapters in reg.items():
        out.setdefault(base(sym), set()).update(chapters)
    return out


# --- definitions ------------------------------------------------------------------------------------

_M = r"\$([^$\n]+)\$"
_DEFINING = [
    re.compile(_M + r",?\s+(?:is|are)\s+(?:the|our|its|called|short\s+for)\b", re.I),
    re.compile(_M + r"\s+(?:denotes?|stands?\s+for|is\s+defined\s+as|is\s+written\s+for)\b", re.I),
    re.compile(r"\b(?:we|I)\s+(?:write|use|call|denote)\s+(?:it\s+|them\s+|this\s+|the\s+\w+\s+)?" + _M, re.I),
    re.compile(r"\bcall(?:ed)?\s+(?:it|them|this)\s+" + _M, re.I),
    re.compile(r"\blet\s+" + _M + r"\s+be\b", re.I),
    re.compile(r"\bwhere\s+" + _M + r"\s+(?:is|are|denotes?)\b", re.I),
    re.compile(r"\$([^$\n=]+?)\s*(?::=|\\coloneqq|\\equiv|\\stackrel\{\\text\{def\}\}\{=\})", re.I),
]


def definitions(text: str) -> list[str]:
    """The symbols a line of prose defines (canonical spelling)."""
    out = []
    for rx in _DEFINING:
        out += [canon(m.group(1)) for m in rx.finditer(text)]
    if text.lstrip().startswith("|"):
        cells = [c.strip() for c in text.strip().strip("|").split("|")]
        if len(cells) >= 2 and re.fullmatch(r"\$[^$]+\$", cells[0]):
            out += _split_cell(cells[0])
    # a symbol is one letter with scripts, not a formula: "$q^i = W^q a^i$ is the query" defines nothing
    out = [s.split(",")[0] if r"\dots" in s else s for s in out]  # "$a^1, \dots, a^n$ are" defines $a^1$
    return [s for s in out if base(s) and len(s) < 30 and not re.search(r"[=+<>]|\\(?:le|ge|sum|frac)\b", s)]


# --- the texts --------------------------------------------------------------------------------------

def prose_lines(text: str) -> list[tuple[int, str]]:
    """(line number, line) of a MyST page's prose: no code cells, no fenced code, no front matter, no
    display math, no HTML comments."""
    out, fence, display = [], None, False
    lines = text.splitlines()
    start = 0
    if lines and lines[0].strip() == "---":
        start = next((k + 1 for k in range(1, len(lines)) if lines[k].strip() == "---"), 0)
    for k in range(start, len(lines)):
        line = lines[k]
        stripped = line.strip()
        m = re.match(r"^(`{3,}|~{3,})", stripped)
        if fence:
            if m and stripped.startswith(fence) and stripped.rstrip("`~") == "":
                fence = None
            continue
        if m:
            fence = m.group(1)
            # a directive that holds prose (note, admonition, figure caption) is prose
            if re.match(r"^(`{3,}|~{3,})\{(?:note|admonition|tip|warning|important|figure|margin|seealso)\}",
                        stripped):
                fence = None
            continue
        if display or "$$" in stripped:   # display math, which may open or close mid-line
            display = display != (stripped.count("$$") % 2 == 1)
            continue
        if stripped.startswith(("<!--", "+++", ":")) or re.fullmatch(r"\([\w-]+\)=", stripped):
            continue
        out.append((k + 1, line))
    return out


def sentences(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """(line, sentence) of prose lines: consecutive lines form a paragraph (a sentence and a definition may
    cross a line break), a table row is a unit of its own; each sentence carries the line it starts on."""
    out, para = [], []

    def flush():
        if para:
            text = " ".join(t.strip() for _, t in para)
            starts, pos = [], 0
            for number, t in para:
                starts.append((pos, number))
                pos += len(t.strip()) + 1
            for m in re.finditer(r"\S.*?(?:[.;!?](?=\s|$)|[。；！？]|$)", text):
                line = max(n for p, n in starts if p <= m.start())
                out.append((line, m.group(0)))
            para.clear()

    last = None
    for number, line in lines:
        if not line.strip() or line.lstrip().startswith(("|", "#")) or (last is not None and number != last + 1):
            flush()
        if line.lstrip().startswith(("|", "#")):
            out.append((number, line.strip()))
        elif line.strip():
            para.append((number, line))
        last = number
    flush()
    return out


def notebook_lines(path: Path) -> list[tuple[str, str]]:
    """("cell C, line L", sentence) of a notebook's markdown cells."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    out = []
    for c, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "markdown":
            continue
        src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
        out += [(f"cell{c + 1}.{k}", t) for k, t in sentences(prose_lines(src))]
    return out


def catalogue_lines(path: Path) -> list[tuple[int, str]]:
    """(line, message) of each ``Mistake``'s message in a catalogue module, and of its docstrings."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) == "Mistake":
            args = list(node.args[1:2]) + [k.value for k in node.keywords if k.arg == "message"]
            for arg in args:
                try:
                    text = ast.literal_eval(arg)
                except ValueError:  # an f-string: its literal parts
                    text = " ".join(v.value for v in ast.walk(arg) if isinstance(v, ast.Constant)
                                    and isinstance(v.value, str))
                out += [(arg.lineno, t) for _, t in sentences([(1, text)])]
    return out


#: A sentence that gives another text's symbol, "GAT writes $e_{ij}$ for our $\\alpha_{i,j}$", as the
#: notation page asks a chapter to do once: it is neither a definition nor a forbidden use.
_QUOTES_OTHERS = re.compile(r"\bwrites\b|\bfor (?:what )?(?:this book|our)\b|\b(?:is|are) our\b|\bthe paper's\b|"
                            r"\bthe papers'\b|\bin the paper\b|\bcalls?\b.*\bour\b|\bmeans? other things\b|"
                            r"论文.*写作|写作.*论文", re.I)


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)


def chapter_of(path: Path) -> str:
    """The chapter a file belongs to: a page's stem; an exercise set's or a catalogue's chapter
    (``ps03_relevance`` → ``relevance``)."""
    return re.sub(r"^ps\d+_", "", path.stem)


def check_file(path: Path, reg: dict[str, set[str]] | None = None) -> list[Finding]:
    """The findings of one file: a chapter (.md), an exercise notebook (.ipynb) or a catalogue (.py)."""
    reg = registry() if reg is None else reg
    letters = bases(reg)
    exercise = path.suffix in (".ipynb", ".py")
    lines = (notebook_lines(path) if path.suffix == ".ipynb" else catalogue_lines(path) if path.suffix == ".py"
             else sentences(prose_lines(path.read_text(encoding="utf-8"))))
    chapter, out = chapter_of(path), []
    shapes = {shape(k): k for k in reg}
    for number, line in lines:
        line = re.sub(r'"[^"]*"|“[^”]*”', '" "', line)  # a quotation is the quoted text's notation, not ours
        if _QUOTES_OTHERS.search(re.sub(r"\$[^$]*\$", " ", line)):
            continue
        rules = forbidden(line)
        for sym in definitions(line):
            sym = shapes.get(shape(sym), sym)  # $a^1$ is the registry's $a^i$
            letter, where = base(sym), ", ".join(sorted(reg.get(sym, ()) or letters.get(base(sym), ())))
            if sym in reg and not exercise and chapter not in reg[sym]:
                rules.append(f"${sym}$ defined again (the notation page lets {where or 'no chapter'} define it)")
            elif sym not in reg and letter in letters and (exercise or chapter not in letters[letter]):
                rules.append(f"${sym}$ gives the letter ${letter}$ a meaning the notation page does not list "
                             f"(it lists ${letter}$ for {where})")
            elif sym not in reg and letter not in letters and not exercise:
                rules.append(f"${sym}$ is defined here but not on the notation page")
        out += [Finding(_rel(path), number, rule, line.strip()[:160]) for rule in rules]
    return out


def toc_chapters() -> list[Path]:
    """The chapters of ``_toc.yml`` (not the reference and practice pages)."""
    stems = re.findall(r"file:\s*book/([\w-]+)", (ROOT / "_toc.yml").read_text(encoding="utf-8"))
    return [BOOK / f"{s}.md" for s in stems if s not in NOT_CHAPTERS and (BOOK / f"{s}.md").is_file()]


def default_files() -> list[Path]:
    return (toc_chapters() + sorted((ROOT / "solutions").glob("ps*/ps*.ipynb"))
            + sorted((ROOT / "attn_grader" / "catalogue").glob("ps*.py")))


def main(argv: list[str]) -> int:
    files = [Path(a).resolve() for a in argv] or default_files()
    reg = registry()
    findings = [f for path in files for f in check_file(path, reg)]
    if not argv:  # the whole book: the formulas' symbols too (notation_formulas.py, issue 42)
        import notation_formulas

        findings += notation_formulas.check_formulas(notation_formulas.book_formulas())
        findings += notation_formulas.check_registry()
    for f in findings:
        print(f)
    print(f"{len(findings)} finding(s) in {len(files)} file(s); {len(reg)} symbols on the notation page",
          file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
