"""The notation page against the formulas themselves (issue 42): notation_check.py reads the sentences that
define a symbol; this module reads every symbol every formula writes, per chapter.

Where the formulas are (formula_sources.py): a chapter's ``$…$``, ``$$…$$``, ``{math}`` blocks and roles
and its figures' captions (:func:`page_formulas`); its figures' texts (the messages of ``figures.po``
located on its page, :func:`figure_formulas`); its exercise set's text cells (:func:`exercise_formulas`).
Each symbol is a letter (Latin, Greek or calligraphic) with its scripts and primes (:func:`symbols`).  The rules
(:func:`check_formula`, :func:`check_registry`):

* **listed**: every symbol is on the notation page (its exact spelling, its form with generic indices,
  or its letter alone);
* **one chapter**: a symbol of the page's table "Symbols of one chapter" appears only in the chapters
  of its row (efficient's running sum $s$ is not speech_images' slot, graphs' $\\mathcal N(i)$ is not
  efficient's Gaussian);
* **a function's form**: a letter written as a function, $O(n^2)$ or $\\Theta(n)$, must be listed so
  ($\\mathcal O(\\cdot)$ is big-O; $O$ is the outputs, $\\Theta$ GAT's transformation), and a listed
  function form is used with its arguments ($\\mathcal N(i)$, one node);
* **parameters**: a formula that defines a function, ``f(x) = …``, defines its weights and biases: each
  $W$ or $\\beta$ on its right must be one the page gives to this chapter;
* **layout**: a symbol the page gives one column per position ($I$, $Q$, $K$, $V$, $O$) is never computed
  from one with a row per position ($X$) without a transpose, nor said to be $n \\times \\dots$; a
  transposed symbol has the other layout ($Q^\\top = X (W^q)^\\top$ is right, $Q^\\top = W^q I$ is not);
* **counted from 1**: a position, head or pixel index is never 0 ($e^0$, $i = 0$, $(0, 0)$);
* **the page's claims** (:func:`check_registry`): each chapter a row says defines a symbol writes it, and
  names it with the first word of the row's meaning.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from formula_sources import (  # noqa: E402
    PAGE,
    Formula,
    exercise_formulas,
    figure_formulas,
    page_formulas,
    symbols,
)

# --- the registry: the notation page's rows ------------------------------------------------------------

def norm(sym: str) -> str:
    """One spelling of a symbol (notation_check.canon, and \\mathcal N, \\hat c written \\mathcal{N}, \\hat{c})."""
    from notation_check import canon

    s = canon(sym)
    return re.sub(r"\\(mathcal|hat|bar|tilde)\{?(\\[A-Za-z]+|[A-Za-z])\}?", r"\\\1{\2}", s)


def letter(sym: str) -> str:
    """A symbol without its scripts and arguments, primes and accents kept: $\\alpha'_{i,j}$ → $\\alpha'$."""
    s = norm(sym).split("(")[0]
    while True:
        t = re.sub(r"[\^_](\{[^{}]*\}|\\[A-Za-z]+|.)", "", s)
        if t == s:
            return s
        s = t


def generic(sym: str) -> str:
    from notation_check import shape

    return shape(norm(sym))


@dataclass
class Row:
    symbols: list[str]  # normalised
    meaning: str
    chapters: set[str]
    local: bool  # in the table "Symbols of one chapter"


def rows(page: Path = PAGE) -> list[Row]:
    """The rows of the notation page's tables; "$(y, x)$" lists $y$ and $x$ too."""
    from notation_check import _split_cell

    out, local = [], False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            local = "one chapter" in line.lower()
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 3 or set(cells[0]) <= set("-: ") or cells[0] == "symbol":
            continue
        syms = [norm(s) for s in _split_cell(cells[0])]
        syms += [norm(p) for s in syms if s.startswith("(") for p in s.strip("()").split(",")]
        syms += [s.strip("|") for s in syms if s.startswith("|")]  # |V| lists V
        out.append(Row(syms, cells[1], set(re.findall(r"\]\(([\w-]+)\.md\)", cells[-1])), local))
    return out


def lookup(sym: str, table: list[Row]) -> list[Row]:
    """The rows that list ``sym``: by its spelling, its form with generic indices, else by its letter."""
    n, g = norm(sym), generic(sym)
    exact = [r for r in table if n in r.symbols or g in {generic(s) for s in r.symbols}]
    return exact or [r for r in table if letter(sym) in {letter(s) for s in r.symbols}]


# --- the rules ---------------------------------------------------------------------------------------

_ASYMPTOTIC = {"O", r"\Theta", r"\Omega"}  # letters that read as big-O, big-Theta, big-Omega before "("
_PARAMETER = {"W", r"\beta"}  # the letters of weights and biases
_POSITION_ZERO = [
    re.compile(r"(?<![A-Za-z\\])(?:i|j|t|\\ell|y|x)\s*=\s*0(?![.\d])"),
    re.compile(r"(?<![A-Za-z\\])(?:a|e|q|k|v|b)\^\{?\s*0\s*\}?(?![.\d])"),
    re.compile(r"\(\s*0\s*,\s*0\s*\)"),
    re.compile(r"\\sum_\{\s*s\s*=\s*0"),  # a slot of a window summed from 0
]


def _equations(tex: str) -> list[tuple[str, str]]:
    """(left side, right side) of each equation of a formula (split at \\\\, \\qquad and its first =)."""
    out = []
    for part in re.split(r"\\\\|\\q?quad|;|,\s*(?=[^,]*=)", tex):
        part = part.replace("&", " ")
        if "=" in part and not re.search(r"[<>]=|\\[lg]eq?\b", part.split("=", 1)[0]):
            left, right = part.split("=", 1)
            out.append((left.strip(), right.strip()))
    return out


def _layout(row: Row) -> str | None:
    m = row.meaning.lower()
    if "one position per row" in m or "row per position" in m:
        return "row"
    if "column per position" in m or "as columns" in m or "per column" in m:
        return "column"
    return None


def _transposed(sym: str, after: str) -> bool:
    """Is the symbol transposed: $Q^\\top$, or followed by $^\\top$ or $)^\\top$ ($(W^q)^\\top$)?"""
    top = r"\^\s*\{?\s*(?:\\top|\\intercal|T\b)"
    return bool(re.search(top + r"\s*\}?\s*$", sym) or re.match(r"\s*\)?\s*" + top, after))


def _layouts(sym: str, after: str, table: list[Row]) -> set[str]:
    """The layouts the page gives ``sym`` ("row", "column"), flipped when it is transposed ($X^\\top$ has a
    column per position, $Q^\\top$ a row per position)."""
    kinds = {k for r in lookup(sym, table) if (k := _layout(r))}
    if _transposed(sym, after):
        kinds = {{"row": "column", "column": "row"}[k] for k in kinds}
    return kinds


def _layout_rule(left: str, right: str, lhs: tuple[str, int], table: list[Row]) -> list[str]:
    """$Q = X (W^q)^\\top$ (a column-per-position symbol computed from a row-per-position one) is wrong;
    $Q^\\top = X (W^q)^\\top$ is right (the transpose has a row per position), and then
    $Q^\\top = X^\\top \\dots$ or $Q^\\top = W^q I$ (only columns on the right) is wrong."""
    target = _layouts(lhs[0], left[lhs[1] + len(lhs[0]):], table)
    if len(target) != 1:
        return []
    (want,) = target
    found = []
    for sym, at in symbols(right):
        page = {k for r in lookup(sym, table) if (k := _layout(r))}
        if "row" in page and _transposed(sym, right[at + len(sym):]) == (want == "column"):
            continue
        if "row" in page:
            found.append(f"${left} = {right}$ has a {'column' if want == 'row' else 'row'} per position "
                         f"(${sym}$ is), but the notation page gives ${left}$ a {want} per position")
    effective = [_layouts(sym, right[at + len(sym):], table) for sym, at in symbols(right)]
    columns_only = any(k == {"column"} for k in effective) and not any("row" in k for k in effective)
    if want == "row" and not found and columns_only:
        found.append(f"${left} = {right}$ has a column per position (only columns on the right), but the "
                     f"notation page gives ${left}$ a row per position")
    return found


def _args(tex: str, k: int) -> str | None:
    """The parenthesised argument that starts at ``tex[k]`` (spaces skipped), or None."""
    while k < len(tex) and tex[k] == " ":
        k += 1
    if k >= len(tex) or tex[k] != "(":
        return None
    depth = 0
    for j in range(k, len(tex)):
        depth += {"(": 1, ")": -1}.get(tex[j], 0)
        if depth == 0:
            return tex[k + 1:j]
    return None


def _count(args: str) -> int:
    depth, n = 0, 1
    for ch in re.sub(r"\\[,;:!]", " ", args):  # \\, is a thin space, not a second argument
        depth += ch in "({[" and 1 or ch in ")}]" and -1 or 0
        n += ch == "," and depth == 0
    return n


def check_formula(f: Formula, table: list[Row]) -> list[str]:
    """The rules a formula of chapter ``f.chapter`` breaks (see the module)."""
    found: list[str] = []
    tex = f.tex
    for sym, at in symbols(tex):
        rows_ = lookup(sym, table)
        name = letter(sym)
        args = _args(tex, at + len(sym)) if "(" not in norm(sym) else None
        if name in _ASYMPTOTIC and args is not None and not any(f"{name}(" in s for r in rows_ for s in r.symbols):
            where = "; ".join(f"{r.meaning[:50]}" for r in rows_) or "nothing"
            found.append(f"${name}(\\cdot)$ as an asymptotic bound, but the notation page gives ${name}$ to: {where}"
                         + (" (big-O is $\\mathcal{O}(\\cdot)$)" if name == "O" else ""))
            continue
        if not rows_:
            found.append(f"${sym}$ is used in a formula but not listed on the notation page")
            continue
        forms = [s for r in rows_ for s in r.symbols if s.startswith(name + "(")]
        if args is not None and forms and all(_count(args) != _count(s[len(name) + 1:-1]) for s in forms):
            found.append(f"${name}({args.strip()})$: the notation page lists ${forms[0]}$ ({rows_[0].meaning[:60]})")
        if all(r.local for r in rows_) and not any(f.chapter in r.chapters for r in rows_):
            owners = ", ".join(sorted({c for r in rows_ for c in r.chapters}))
            found.append(f"${sym}$ is {owners}'s ({rows_[0].meaning[:60]}), a symbol of that chapter only")
    for left, right in _equations(tex):
        lhs = symbols(left)
        if lhs and _args(left, lhs[0][1] + len(lhs[0][0])) is not None or re.match(r"\\operatorname\{", left):
            for sym, _ in symbols(right):  # a function defined here: its weights and biases are this chapter's
                rows_ = lookup(sym, table)
                if letter(sym).rstrip("'") in _PARAMETER and rows_ and not any(f.chapter in r.chapters for r in rows_):
                    owners = ", ".join(sorted({c for r in rows_ for c in r.chapters}))
                    found.append(f"${sym}$ is a parameter of ${left}$ here, but the notation page gives it to "
                                 f"{owners} ({rows_[0].meaning[:50]})")
        if len(lhs) == 1:
            found += _layout_rule(left, right, lhs[0], table)
    if f.context and re.fullmatch(r"\s*[A-Z]\s*", tex):
        kinds = {_layout(r) for r in lookup(tex.strip(), table)}
        after = f.context.split(f"${tex}$", 1)[-1]
        if "column" in kinds and re.match(r"\s*(?:,|is|of shape|has shape)?\s*\$\s*\(?\s*n\s*(?:,|\\times)", after):
            found.append(f"${tex.strip()}$ said to be $n \\times \\dots$ (a row per position), but the notation page "
                         "gives it a column per position")
    for rx in _POSITION_ZERO:
        for m in rx.finditer(tex):
            found.append(f"${m.group(0).strip()}$: positions, heads and pixels are counted from 1 in formulas "
                         "(the notation page)")
    return list(dict.fromkeys(found))


#: A formula that gives another text's symbols ("the paper writes $\\vec h_i$ for our $a^i$",
#: "Katharopoulos et al.'s $S_i$"): notation_check's sentences, and a paper's possessive.
_QUOTES = re.compile(r"\bwrites?\b.*\bfor (?:what )?(?:our|this book)\b|\b(?:is|are) our\b|\bthe paper'?s?\b|"
                     r"\bin the paper\b|\bmeans? other things\b|论文.*写作|写作.*论文", re.I)
_QUOTED = re.compile(r"et al\.'s\s*$|\bthe paper's\s*$|\bPyG's\s*$|\bPyTorch's\s*$")


def _sentence(context: str, tex: str) -> tuple[str, str]:
    """(the sentence around an inline formula, the text just before it)."""
    before, _, after = context.partition(f"${tex}$")
    before = re.split(r"(?<=[.;!?])\s", before)[-1]
    after = re.split(r"(?<=[.;!?])\s", after)[0]
    return before + f"${tex}$" + after, before


def check_formulas(formulas: list[Formula], table: list[Row] | None = None) -> list:
    """The findings (notation_check.Finding) of a list of formulas."""
    from notation_check import Finding

    table = rows() if table is None else table
    out = []
    for f in formulas:
        if f.context:
            sentence, before = _sentence(f.context, f.tex)
            if _QUOTES.search(re.sub(r"\$[^$]*\$", " ", sentence)) or _QUOTED.search(before):
                continue
            rules = [r for r in check_formula(f, table)
                     if not ("a symbol of that chapter only" in r and _names_owner(sentence, r))]
        else:
            rules = check_formula(f, table)
        file, _, line = f.where.rpartition(":") if re.search(r":\d+$", f.where) else (f.where, "", "")
        out += [Finding(file, line or "-", rule, f.tex.strip().replace("\n", " ")[:120]) for rule in rules]
    return list(dict.fromkeys(out))


def _names_owner(sentence: str, rule: str) -> bool:
    """Does the sentence name the chapter whose symbol it quotes ({doc}`relevance`, relevance.md)?"""
    owners = re.match(r"\$.*?\$ is ([\w, ]+)'s", rule)
    return bool(owners) and any(re.search(rf"`{o}`|\b{o}\.md\b|\({o}\)", sentence)
                                for o in owners.group(1).split(", "))


def check_registry(table: list[Row] | None = None, chapters: list[Path] | None = None) -> list:
    """The page's own claims: each chapter a row names as defining its symbols writes one of them in a
    formula, and names it with the first word of the row's meaning ("query", "biases")."""
    from notation_check import Finding, toc_chapters

    table = rows() if table is None else table
    pages = {p.stem: p for p in (chapters or toc_chapters())}
    out = []
    for row in table:
        word = _first_word(row.meaning)
        for chapter in sorted(row.chapters & set(pages)):
            formulas = page_formulas(pages[chapter])
            written = any(lookup(sym, [row]) for f in formulas for sym, _ in symbols(f.tex)) or any(
                re.sub(r"\\(?:mathrm|operatorname)\{(\w+)\}|\\(\w+)", r"\1\2", letter(x)) in f.tex
                for x in row.symbols if len(letter(x)) > 2 for f in formulas) or any(  # \exp, \mathrm{onehot}
                x in re.sub(r"\s+", "", f.tex) for x in row.symbols if len(x) > 1 for f in formulas)  # \sum_{j'}
            symbols_ = ", ".join(f"${s}$" for s in row.symbols[:3])
            if not written:
                out.append(Finding("book/notation.md", "-", f"{symbols_}: said to be defined in {chapter}, whose "
                                   "formulas never write it", row.meaning[:100]))
            elif word and not re.search(rf"\b{re.escape(word[:max(4, len(word) - 2)])}",
                                        pages[chapter].read_text(encoding="utf-8"), re.I):
                out.append(Finding("book/notation.md", "-", f"{symbols_}: said to be defined in {chapter}, which "
                                   f"never names it ({word!r})", row.meaning[:100]))
    return out


def _first_word(meaning: str) -> str | None:
    """The name a row gives its symbols when its meaning opens with names ("query, key and value of …")."""
    m = re.match(r"([a-z]{4,}), ", meaning)
    return m.group(1) if m else None


def book_formulas(chapters: list[Path] | None = None) -> list[Formula]:
    """Every formula of the chapters, their figures' texts and their exercise sets' text cells."""
    from notation_check import toc_chapters

    pages = chapters or toc_chapters()
    names = {p.stem for p in pages}
    out = [f for p in pages for f in page_formulas(p)]
    out += [f for f in figure_formulas() if f.chapter in names]
    out += [f for f in exercise_formulas() if f.chapter in names]
    return out


def main() -> int:
    findings = check_formulas(book_formulas()) + check_registry()
    for f in findings:
        print(f)
    print(f"{len(findings)} finding(s) in the formulas and the notation page's claims", file=sys.stderr)
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main())
