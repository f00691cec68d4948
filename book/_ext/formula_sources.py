"""Where the book's formulas are and which symbols they write (notation_formulas.py checks them).

* :func:`page_formulas`: a chapter's ``$…$``, ``$$…$$``, ``{math}`` blocks and roles, and the captions and
  alt texts of its figures (the options of its code cells);
* :func:`figure_formulas`: the figures' texts, the messages of ``figures.po`` with the pages that draw them;
* :func:`exercise_formulas`: the text cells of the exercise sets, ``solutions/psNN_<chapter>/*.ipynb``;
* :func:`symbols`: each symbol a formula writes, a letter (Latin, Greek, calligraphic, accented, or a short
  upright name with a script such as $\\mathrm{Id}_n$) with its scripts and primes.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[2]
BOOK = ROOT / "book"
PAGE = BOOK / "notation.md"
FIGURES_PO = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "figures.po"


@dataclass(frozen=True)
class Formula:
    where: str  # file:line, or "figures.po: msgid"
    chapter: str
    tex: str
    context: str = ""  # the text around an inline formula (the layout rule reads "$Q$, $(n, d)$")


# --- where the formulas are ----------------------------------------------------------------------------

_FENCE = re.compile(r"^\s*(`{3,}|~{3,}|:{3,})\s*(\{[\w-]+\})?")
_INLINE = re.compile(r"(?<![\\$])\$(?!\$)((?:\\\$|[^$])+?)(?<!\\)\$(?!\$)")
_DISPLAY = re.compile(r"\$\$(.+?)\$\$", re.S)
_ROLE = re.compile(r"\{math\}`([^`]+)`")


def page_formulas(path: Path) -> list[Formula]:
    """The formulas of a MyST page: prose, {math} blocks, and the options of code cells (captions, alt)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    chapter, rel = path.stem, path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else str(path)
    text_lines: list[tuple[int, str]] = []
    out: list[Formula] = []
    fence, kind, math_block = None, None, []
    for k, line in enumerate(lines, 1):
        m = _FENCE.match(line)
        if fence:
            if m and line.strip().startswith(fence) and line.strip().rstrip(fence[0]) == "":
                if kind == "{math}":
                    out.append(Formula(f"{rel}:{k - len(math_block)}", chapter, "\n".join(math_block)))
                fence, kind, math_block = None, None, []
            elif kind == "{math}":
                if not line.strip().startswith(":"):
                    math_block.append(line)
            elif kind == "{code-cell}" and line.lstrip().startswith(":"):
                text_lines.append((k, line))  # a figure's caption and alt text
            elif kind not in ("{code-cell}", None) and kind != "code":
                text_lines.append((k, line))  # a note, a figure, an admonition: prose
            continue
        if m and (m.group(1)[0] != ":" or m.group(2)):
            fence, kind = m.group(1), m.group(2) or "code"
            continue
        text_lines.append((k, line))
    text = "\n".join(t for _, t in text_lines)
    starts, pos = [], 0
    for number, t in text_lines:
        starts.append((pos, number))
        pos += len(t) + 1

    def where(offset: int) -> str:
        return f"{rel}:{max(n for p, n in starts if p <= offset)}"

    for m in _DISPLAY.finditer(text):
        out.append(Formula(where(m.start()), chapter, m.group(1)))
    blanked = _DISPLAY.sub(lambda m: " " * len(m.group(0)), text)
    for rx in (_INLINE, _ROLE):
        for m in rx.finditer(blanked):
            out.append(Formula(where(m.start()), chapter, m.group(1),
                               blanked[max(0, m.start() - 160):m.end() + 160]))
    return out


def figure_formulas(po: Path = FIGURES_PO) -> list[Formula]:
    """The figures' texts (the messages of figures.po, each with the pages that draw it): their mathtext,
    and the bounds their plain text writes (a label such as "O(n² d)")."""
    from babel.messages.pofile import read_po

    if not po.is_file():
        return []
    with po.open("rb") as f:
        catalog = read_po(f)
    out = []
    for msg in catalog:
        if not msg.id:
            continue
        text = msg.id.replace("{#}", "1")  # a number of the message
        tex = " ".join(_INLINE.findall(text))
        bounds = " ".join(re.findall(r"(?:O|Θ|Ω)\([^()]*(?:\([^()]*\))?[^()]*\)", _INLINE.sub(" ", text)))
        for page, _ in msg.locations:
            for found in (tex, _unicode_math(bounds)):
                if found.strip():
                    out.append(Formula(f"figures.po: {msg.id!r}", Path(page).stem, found))
    return out


def _unicode_math(text: str) -> str:
    """A figure's plain-text bound read as a formula (O(n² d) is O(n^2 d))."""
    text = re.sub(r"[A-Za-z]{2,}", " ", text).replace("²", "^2").replace("κ", r"\kappa ").replace("Θ", r"\Theta ")
    return text.replace("θ", r"\theta ").replace("α", r"\alpha ").replace("β", r"\beta ")


def exercise_formulas(root: Path = ROOT / "solutions") -> list[Formula]:
    """The formulas of the exercises' text cells (markdown cells of solutions/psNN_<chapter>/*.ipynb)."""
    out = []
    for nb_path in sorted(root.glob("ps*/ps*.ipynb")):
        chapter = re.sub(r"^ps\d+_", "", nb_path.stem)
        nb = json.loads(nb_path.read_text(encoding="utf-8"))
        for c, cell in enumerate(nb["cells"], 1):
            if cell["cell_type"] != "markdown":
                continue
            src = cell["source"] if isinstance(cell["source"], str) else "".join(cell["source"])
            rel = nb_path.relative_to(ROOT).as_posix() if nb_path.is_relative_to(ROOT) else str(nb_path)
            for m in _DISPLAY.finditer(src):
                out.append(Formula(f"{rel}: cell {c}", chapter, m.group(1)))
            for m in _INLINE.finditer(_DISPLAY.sub(" ", src)):
                out.append(Formula(f"{rel}: cell {c}", chapter, m.group(1), src[max(0, m.start() - 160):m.end() + 160]))
    return out


# --- the symbols of a formula --------------------------------------------------------------------------

#: Commands that are operators, functions, spacing or layout, not symbols.
_NOT_SYMBOLS = set("""
sum prod int max min argmax argmin exp log ln tanh sin cos tan sqrt frac dfrac tfrac cdot cdots ldots dots vdots
ddots times div pm mp le leq ge geq lt gt ne neq approx sim simeq equiv propto in notin subset subseteq cup cap
setminus infty partial nabla to mapsto rightarrow leftarrow Rightarrow Leftrightarrow quad qquad left right big
Big bigg Bigg mid lvert rvert lVert rVert vert Vert langle rangle lceil rceil lfloor rfloor top intercal
forall exists land lor lnot neg circ odot oplus otimes star ast bullet mathbb mathrm text operatorname mathbf
boldsymbol mathit mathsf mathtt displaystyle textstyle scriptstyle limits nolimits overset underset stackrel
underbrace overbrace hline begin end label tag nonumber notag phantom hphantom vphantom colon coloneqq prime
softmax rm bf it sf tt hspace vspace kern mkern mathop operatorname* emph textbf textit textrm lim sup inf det
Pr E var Var cov dim ker deg arg exp mod bmod pmod gcd ell_ displaylines aligned align cases matrix pmatrix
bmatrix vmatrix array substack choose binom not widehat widetilde overline underline overrightarrow
""".split())
_ACCENTS = {"hat", "bar", "tilde", "vec", "dot", "ddot", "mathcal", "check", "breve"}
_GREEK = set("""alpha beta gamma delta epsilon varepsilon zeta eta theta vartheta iota kappa lambda mu nu xi pi
varpi rho varrho sigma varsigma tau upsilon phi varphi chi psi omega Gamma Delta Theta Lambda Xi Pi Sigma
Upsilon Phi Psi Omega ell""".split())
_CONSTANTS = {"pi"}
_NAMED = re.compile(r"\\mathrm\{[A-Za-z]{1,3}\}(?=\s*[\^_])")  # \mathrm{Id}_n; not \mathrm{softmax}_k
_WRAPPED = re.compile(r"\\(?:mathrm|text|operatorname\*?|textrm|textit|textbf|mathit|mathsf|mathtt|emph|"
                      r"label|tag|begin|end|hspace|vspace|mathbb)\s*\{[^{}]*\}")


def _group(tex: str, k: int) -> tuple[str, int]:
    """The script at ``tex[k:]``: a braced group (nested braces kept) or one token; (text, end)."""
    while k < len(tex) and tex[k] == " ":
        k += 1
    if k >= len(tex):
        return "", k
    if tex[k] == "{":
        depth, j = 0, k
        while j < len(tex):
            depth += {"{": 1, "}": -1}.get(tex[j], 0)
            if depth == 0:
                return tex[k:j + 1], j + 1
            j += 1
        return tex[k:], len(tex)
    m = re.match(r"\\[A-Za-z]+|.", tex[k:])
    return m.group(0), k + len(m.group(0))


def _variables(script: str, at: int) -> list[tuple[str, int]]:
    """The symbols of a script that computes ($k^{i-r+s}$, $\\sum_{s=0}^{2r}$ write $i$, $r$, $s$); a script
    that names ($W^q$, $d_k$, $q^{i,\\ell}$) is part of its symbol only."""
    inner = script[1:-1] if script.startswith("{") else script
    if not re.search(r"[+\-=<>]|\\(?:le|ge|in)\b", inner):
        return []
    return [(sym, at) for sym, _ in symbols(inner)]


def symbols(tex: str) -> list[tuple[str, int]]:
    """The symbols a formula writes, each as (LaTeX with its scripts and primes, offset): every letter
    outside a word (\\mathrm{…}, \\text{…}, \\operatorname{…}), Greek letters, accented and calligraphic
    letters (a script is part of its symbol: the indices of $q^i$ are not read on their own)."""
    out = []
    work = tex
    for m in _NAMED.finditer(tex):  # an upright name with a script is a symbol: \mathrm{Id}_n, \mathrm{acc}_i
        k = m.end()
        while k < len(tex) and tex[k] in "^_":
            _, k = _group(tex, k + 1)
        out.append((re.sub(r"\s+", "", tex[m.start():k]), m.start()))
        work = work[:m.start()] + " " * (k - m.start()) + work[k:]
    work = _WRAPPED.sub(lambda m: " " * len(m.group(0)), work)
    k = 0
    while k < len(work):
        ch = work[k]
        start, base = k, None
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+)", work[k:])
            if not m:  # \| or \, : a delimiter's scripts belong to its group (\|x\|_F)
                k += 2
                while k < len(work) and work[k] in "^_":
                    _, k = _group(tex, k + 1)
                continue
            name = m.group(1)
            k += len(m.group(0))
            if name in _ACCENTS:
                arg, k = _group(tex, k)
                base = f"\\{name}{{{arg.strip('{}').strip()}}}"
            elif name in _GREEK and name not in _CONSTANTS:
                base = f"\\{name}"
            else:  # an operator or a layout command; its scripts are its range ($\sum_{j'=1}^n$, $\max_c$)
                while True:
                    j = k
                    while j < len(work) and work[j] == " ":
                        j += 1
                    if j < len(work) and work[j] in "^_":
                        arg, k = _group(tex, j + 1)
                        out += _variables(arg, j + 1)
                    else:
                        break
                continue
        elif ch.isalpha() and ch.isascii():
            base = ch
            k += 1
        else:  # a delimiter's scripts belong to its group: (W^q)^\top
            k += 1
            while k < len(work) and work[k] in "^_":
                _, k = _group(tex, k + 1)
            continue
        sym = base
        while k < len(work):
            j = k
            while j < len(work) and work[j] == " ":
                j += 1
            if j < len(work) and work[j] in "^_":
                arg, k = _group(tex, j + 1)  # a script keeps its words: d_{\mathrm{model}}
                sym += work[j] + arg
                out += _variables(arg, j + 1)
            elif j < len(work) and work[j] == "'":
                sym, k = sym + "'", j + 1
            else:
                break
        out.append((sym, start))
    return out


