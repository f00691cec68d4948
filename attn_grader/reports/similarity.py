"""Who copied from whom: the pairs of submissions whose answer code is suspiciously alike (instructor only).

Fingerprints are copydetect's (https://github.com/blingenf/copydetect): the winnowing of Schleimer,
Wilkerson and Aiken (SIGMOD 2003) that MOSS uses, on code tokenised with Pygments; comments and
whitespace are dropped, every name becomes ``V`` (``F`` a function, ``O`` a class), every string
``S``, so renamed variables and reformatted lines still match.

Only the answer cells are compared (nbgrader solution cells, ``<task>_answer``), cell by cell, and
each cell's released starter code (the ``def`` line, the docstring, ``raise NotImplementedError()``)
is copydetect's boilerplate for that cell: a fingerprint that occurs in the starter is dropped.  The
task text is never compared (it is in markdown cells).  A pair's score is the larger of the two
students' shares of their own fingerprinted answer code that the other one has too (copydetect's
similarity, summed over the cells); the pair is reported when the score reaches the threshold *and*
the matched code is long enough in both notebooks (``min_shared`` characters of normalised code, a
name counting as one): the same correct one-liner (``return Q @ K.T``) in two notebooks is below it.

Beside the pairs, each student's answer cells are compared the same way with *known code*, public by
design (:func:`known_code`): the reference ``attn_ref`` (the book's code), the catalogue's reference answers
(``_ref_*``), the book's code cells and PyTorch's Python source of its attention (``multi_head_attention_forward``
and the reference implementation in ``scaled_dot_product_attention``'s docstring).  A cell is listed with the
source it matches best when that source holds at least ``threshold`` of the cell's own code and
``min_shared`` characters of it (:func:`compare_known`).

Nothing here reaches a student: the pairs are kept in ``.grader/similarity.json`` and shown in
``class_report.html`` only (:mod:`.classreport`).
"""

from __future__ import annotations

import ast
import functools
import importlib.util
import io
import itertools
import json
import os
import re
import textwrap
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

THRESHOLD = 0.55  # a pair's score (0..1) from which it is reported (tests/similarity_cases.py measures it)
MIN_SHARED = 60  # characters of normalised code both notebooks must share before a pair is reported
NOISE = 25  # copydetect's noise threshold k: shorter matches are never found (its default)
GUARANTEE = 25  # copydetect's guarantee threshold: matches this long are always found (window 1: every k-gram)
MAX_CODE = 20_000  # characters of one answer cell compared (a right answer is a few hundred; the tokeniser is slow)
STORE = "similarity.json"  # in .grader/: the pairs per assignment, for the class report
REPO = Path(__file__).resolve().parents[2]
#: PyTorch's attention in Python (torch/nn/functional.py): what a student could copy instead of writing it.
TORCH_FUNCTIONS = ("multi_head_attention_forward", "_in_projection_packed", "_in_projection")


@dataclass
class CellMatch:
    """One answer cell of a pair: both students' code and the lines (1-based) that match."""

    cell: str  # grade id
    code_a: str
    code_b: str
    lines_a: list[int] = field(default_factory=list)
    lines_b: list[int] = field(default_factory=list)


@dataclass
class Pair:
    a: str  # student folder names, a < b
    b: str
    score: float  # max(share_a, share_b)
    share_a: float  # the share of a's fingerprinted answer code that b has too
    share_b: float
    shared: int  # characters of normalised code that match (the smaller of the two sides)
    cells: list[CellMatch] = field(default_factory=list)

    @classmethod
    def from_dict(cls, d: dict) -> Pair:
        cells = [CellMatch(**c) for c in d.get("cells", [])]
        return cls(**{**d, "cells": cells})


class _Cell:
    """One answer cell, fingerprinted: the lines handed out in its starter are left out first, so only the
    student's own code is compared (``line_of``: a line of the fingerprinted code -> the cell's line)."""

    def __init__(self, code: str, starter: str, boilerplate: np.ndarray):
        from copydetect import CodeFingerprint

        handed = {ln.strip() for ln in starter.splitlines() if ln.strip()}
        lines = code.splitlines(keepends=True)
        kept = [i for i, ln in enumerate(lines) if ln.strip() and ln.strip() not in handed]
        own = "".join(lines[i] if lines[i].endswith("\n") else lines[i] + "\n" for i in kept)
        self.code = code
        self.line_of = [i + 1 for i in kept]
        self.fp = CodeFingerprint("answer.py", NOISE, GUARANTEE - NOISE + 1, boilerplate, language="python",
                                  fp=io.StringIO(own))

    def lines(self, slices) -> list[int]:
        """The cell's 1-based lines that copydetect's slices (character offsets in the own code) touch."""
        own = self.fp.raw_code
        starts = [0] + [i + 1 for i, ch in enumerate(own) if ch == "\n"]
        out: set[int] = set()
        for s, e in zip(*slices, strict=True):
            first = int(np.searchsorted(starts, int(s), side="right"))
            last = int(np.searchsorted(starts, max(int(s), int(e) - 1), side="right"))
            out.update(range(first, last + 1))
        own_lines = own.splitlines()
        return sorted(self.line_of[k - 1] for k in out
                      if 0 < k <= len(self.line_of) and not own_lines[k - 1].lstrip().startswith("#"))


@functools.lru_cache(maxsize=512)
def _cell(code: str, starter: str) -> _Cell:
    return _Cell(code, starter, _boilerplate(starter))


@functools.lru_cache(maxsize=256)
def _boilerplate(starter: str) -> np.ndarray:
    """Every k-gram hash of a cell's starter code (copydetect's boilerplate: window 1, all of them)."""
    from copydetect import CodeFingerprint

    if not starter.strip():
        return np.array([], dtype=np.int64)
    fp = CodeFingerprint("starter.py", NOISE, 1, language="python", fp=io.StringIO(starter))
    return np.unique(np.array(sorted(fp.hashes), dtype=np.int64))


def compare(answers: dict[str, dict[str, str]], starters: dict[str, str], threshold: float = THRESHOLD,
            min_shared: int = MIN_SHARED) -> list[Pair]:
    """The pairs of ``answers`` ({student: {grade id: answer cell source}}) alike enough to report, highest
    score first.  ``starters``: {grade id: the released starter code of that cell}; only these cells are
    compared."""
    from copydetect import compare_files

    prints: dict[str, dict[str, _Cell]] = {}  # student -> grade id -> fingerprinted cell
    for gid, starter in starters.items():
        for student, cells in answers.items():
            code = cells.get(gid)
            if not isinstance(code, str) or not code.strip() or code.strip() == starter.strip():
                continue
            try:
                cell = _cell(code[:MAX_CODE], starter)
            except Exception:  # noqa: BLE001, S112 - a cell the tokeniser cannot take is not compared
                continue
            if cell.fp.hashes:
                prints.setdefault(student, {})[gid] = cell
    coverage = {s: sum(float(c.fp.token_coverage) for c in cells.values()) for s, cells in prints.items()}
    pairs = []
    for a, b in itertools.combinations(sorted(prints), 2):
        common = [g for g in starters if g in prints[a] and g in prints[b]]  # in the notebook's order
        if not any(prints[a][g].fp.hashes & prints[b][g].fp.hashes for g in common):
            continue
        over_a = over_b = 0
        cells = []
        for gid in common:
            ca, cb = prints[a][gid], prints[b][gid]
            fa, fb = ca.fp, cb.fp
            if not fa.hashes & fb.hashes:
                continue
            _, (sim_a, sim_b), (sa, sb) = compare_files(fa, fb)
            if not len(sa) or not len(sa[0]):
                continue
            # the overlap in normalised characters on each side: copydetect's similarity x the cell's coverage
            over_a += round(sim_a * float(fa.token_coverage))
            over_b += round(sim_b * float(fb.token_coverage))
            cells.append(CellMatch(gid, ca.code, cb.code, ca.lines(sa), cb.lines(sb)))
        share_a = over_a / coverage[a] if coverage[a] else 0.0
        share_b = over_b / coverage[b] if coverage[b] else 0.0
        pair = Pair(a, b, round(max(share_a, share_b), 4), round(share_a, 4), round(share_b, 4),
                    min(over_a, over_b), cells)
        if pair.score >= threshold and pair.shared >= min_shared:
            pairs.append(pair)
    return sorted(pairs, key=lambda p: (-p.score, -p.shared, p.a, p.b))


@dataclass
class KnownMatch:
    """One student's answer cell that is (in large part) a copy of known code."""

    student: str
    cell: str  # grade id
    source: str  # where the known code is, e.g. "attn_ref/attention.py: self_attention"
    score: float  # the share of the cell's own code that the known code has too
    shared: int  # characters of normalised code that match
    code: str
    known: str
    lines: list[int] = field(default_factory=list)
    known_lines: list[int] = field(default_factory=list)


def _functions(path: Path, label: str, wanted=None) -> list[tuple[str, str]]:
    """(label: name, source) of the top-level functions and classes of a Python file (``wanted``: a
    predicate on the name)."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return []
    return [(f"{label}: {n.name}", ast.get_source_segment(text, n) or "") for n in tree.body
            if isinstance(n, ast.FunctionDef | ast.ClassDef) and (wanted is None or wanted(n.name))]


def _answer_strings(path: Path, label: str) -> list[tuple[str, str]]:
    """A catalogue's private code constants that are answers (``_ONLINE_SOFTMAX = '''def online_softmax(...``): the
    templates its mistakes are edited from, a whole right answer each, shipped with the student edition (the
    self-check needs them).  A fragment (not a module of functions) and the given set-up (``SETUP``) are not."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text)
    except (OSError, SyntaxError, ValueError):
        return []
    out = []
    for n in tree.body:
        if not (isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name)
                and n.targets[0].id.startswith("_") and n.targets[0].id.isupper()
                and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)):
            continue
        try:
            body = ast.parse(n.value.value).body
        except SyntaxError:
            continue
        if body and isinstance(body[0], ast.FunctionDef):
            out.append((f"{label}: {n.targets[0].id}", n.value.value))
    return out


def _package_dir(name: str) -> Path | None:
    spec = importlib.util.find_spec(name)  # finds, never imports (PyTorch is not imported here)
    return Path(spec.origin).parent if spec and spec.origin else None


def _book_cells(book: Path) -> list[tuple[str, str]]:
    out = []
    for md in sorted(book.glob("*.md")):
        blocks = re.findall(r"^```\{code-cell\}[^\n]*\n(.*?)^```", md.read_text(encoding="utf-8"), re.S | re.M)
        for k, block in enumerate(blocks, start=1):
            code = "\n".join(ln for ln in block.splitlines() if not re.match(r"^:\w[\w-]*:", ln))
            out.append((f"book/{md.name}, code cell {k}", code))
    return out


def _torch_sources() -> list[tuple[str, str]]:
    torch = _package_dir("torch")
    functional = torch / "nn" / "functional.py" if torch else None
    if functional is None or not functional.is_file():
        return []
    out = _functions(functional, "torch/nn/functional.py", lambda n: n in TORCH_FUNCTIONS)
    text = functional.read_text(encoding="utf-8")
    at = text.find("    def scaled_dot_product_attention(")  # the docstring's "equivalent to" code
    if at >= 0:
        lines = text[at:].splitlines()
        body = [lines[0]] + list(itertools.takewhile(lambda ln: not ln.strip() or ln.startswith("        "),
                                                       lines[1:]))
        out.append(("torch/nn/functional.py: scaled_dot_product_attention (its docstring's reference code)",
                    textwrap.dedent("\n".join(body))))
    return out


@functools.lru_cache(maxsize=1)
def known_code() -> tuple[tuple[str, str], ...]:
    """(where, source) of the public code an answer could be copied from: every function of ``attn_ref``,
    the catalogue's reference answers (its ``_ref_`` functions and answer strings), the book's code cells,
    PyTorch's attention in Python."""
    out: list[tuple[str, str]] = []
    ref = _package_dir("attn_ref")
    for path in sorted(ref.rglob("*.py")) if ref else []:
        out += _functions(path, f"attn_ref/{path.relative_to(ref).as_posix()}")
    catalogue = REPO / "attn_grader" / "catalogue"
    for path in sorted(catalogue.glob("*.py")):
        out += _functions(path, f"catalogue {path.stem}", lambda n: n.startswith("_ref_"))
        out += _answer_strings(path, f"catalogue {path.stem}")
    if (REPO / "book").is_dir():
        out += _book_cells(REPO / "book")
    out += _torch_sources()
    return tuple((where, code) for where, code in out if len(code.strip()) >= MIN_SHARED)


@functools.lru_cache(maxsize=1)
def _known_prints():
    """The fingerprints of :func:`known_code` and an index: hash -> the sources that have it."""
    from copydetect import CodeFingerprint

    prints, index = [], {}
    empty = np.array([], dtype=np.int64)
    for where, code in known_code():
        try:
            fp = CodeFingerprint("known.py", NOISE, GUARANTEE - NOISE + 1, empty, language="python",
                                 fp=io.StringIO(code))
        except Exception:  # noqa: BLE001, S112 - a source the tokeniser cannot take is not compared
            continue
        for h in fp.hashes:
            index.setdefault(h, set()).add(len(prints))
        prints.append((where, code, fp))
    return prints, index


def _line_numbers(code: str, slices) -> list[int]:
    starts = [0] + [i + 1 for i, ch in enumerate(code) if ch == "\n"]
    out: set[int] = set()
    for s, e in zip(*slices, strict=True):
        first = int(np.searchsorted(starts, int(s), side="right"))
        out.update(range(first, int(np.searchsorted(starts, max(int(s), int(e) - 1), side="right")) + 1))
    return sorted(out)


def compare_known(answers: dict[str, dict[str, str]], starters: dict[str, str], threshold: float = THRESHOLD,
                  min_shared: int = MIN_SHARED) -> list[KnownMatch]:
    """The answer cells of ``answers`` ({student: {grade id: code}}) that copy known code (:func:`known_code`),
    each with the source it matches best, highest score first."""
    from copydetect import compare_files

    prints, index = _known_prints()
    found = []
    for student, cells in sorted(answers.items()):
        for gid, starter in starters.items():
            code = cells.get(gid)
            if not isinstance(code, str) or not code.strip() or code.strip() == starter.strip():
                continue
            try:
                cell = _cell(code[:MAX_CODE], starter)
            except Exception:  # noqa: BLE001, S112 - as in compare()
                continue
            coverage = float(cell.fp.token_coverage)
            candidates = set().union(*(index.get(h, ()) for h in cell.fp.hashes)) if cell.fp.hashes else set()
            best = None
            for k in sorted(candidates):
                where, known, fp = prints[k]
                _, (sim, _), (sa, sb) = compare_files(cell.fp, fp)
                shared = round(sim * coverage)
                score = shared / coverage if coverage else 0.0
                if score >= threshold and shared >= min_shared and (best is None or score > best.score):
                    best = KnownMatch(student, gid, where, round(score, 4), shared, cell.code, known,
                                      cell.lines(sa), _line_numbers(fp.raw_code, sb))
            if best is not None:
                found.append(best)
    return sorted(found, key=lambda m: (-m.score, m.student, m.cell))


def starters_of(release) -> dict[str, str]:
    """{grade id: starter code} of a release notebook's answer cells (what every student was handed)."""
    from ..isolation.sanitize import answer_sources

    return answer_sources(release)


# --- kept for the class report ---------------------------------------------------------------------

def store(root: str) -> str:
    from ..files.secret import state_dir

    return os.path.join(state_dir(root), STORE)


def load(root: str) -> dict[str, dict]:
    """{assignment: {"threshold", "min_shared", "compared", "pairs": [Pair]}} of the last runs."""
    try:
        with open(store(root), encoding="utf-8") as f:
            data = json.load(f)
        return {a: {**v, "pairs": [Pair.from_dict(p) for p in v.get("pairs", [])],
                    "known": [KnownMatch(**m) for m in v.get("known", [])]} for a, v in data.items()
                if isinstance(v, dict)}
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}


def save(root: str, found: dict[str, dict]) -> None:
    """Replace the stored pairs of the assignments in ``found`` (the others stay as they were)."""
    from ..files.safeio import write_atomic

    def plain(v: dict) -> dict:
        return {**v, "pairs": [asdict(p) for p in v["pairs"]], "known": [asdict(m) for m in v.get("known", [])]}

    data = {a: plain(v) for a, v in load(root).items()}
    data.update({a: plain(v) for a, v in found.items()})
    write_atomic(store(root), json.dumps(data, sort_keys=True), 0o600)


def find(answers: dict[str, dict[str, dict[str, str]]], releases: dict[str, object], threshold: float = THRESHOLD,
         min_shared: int = MIN_SHARED) -> dict[str, dict]:
    """Per assignment, the pairs of its submissions and its copies of known code: ``answers`` {assignment:
    {student: {grade id: code}}}, ``releases`` {assignment: release notebook}."""
    out = {}
    for a, by_student in answers.items():
        if a not in releases:
            continue
        starters = starters_of(releases[a])
        pairs = compare(by_student, starters, threshold, min_shared)
        known = compare_known(by_student, starters, threshold, min_shared)
        out[a] = {"threshold": threshold, "min_shared": min_shared, "compared": len(by_student), "pairs": pairs,
                  "known": known}
    return out
