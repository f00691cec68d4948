"""Sanitise a submission before it is graded: the notebook is rebuilt from the release, keeping only answers.

Only the expected notebook of an assignment is graded. Every other submitted file (a ``numpy.py`` that
would shadow the library, data, a second notebook) is dropped and reported.  The notebook itself is
*rebuilt*: the release notebook's cells (intro, setup, task texts, test cells, their nbgrader metadata
and the kernelspec) are taken as they were released, and only the student's answer cells
(``grade_id`` ending in ``_answer``) are substituted, matched by grade_id.  nbgrader's OverwriteCells
then restores the hidden tests from the gradebook.  So a test cell that was deleted, duplicated,
renamed, moved, edited or stripped of its metadata is simply back, and every such change is reported
as a flag.  A notebook that cannot be read or is missing gets no score and a stated reason.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass, field

import nbformat

from ..files.languages import one_of_the_releases

# What a page may show of the outputs is attn_grader.isolation.outputs (re-exported here for the callers).
from .outputs import (  # noqa: F401
    _HIDDEN,
    AFTER_HIDDEN,
    HIDDEN_LINE,
    HIDDEN_OUTPUT,
    SAFE_MIME,
    _inert,
    _nbg,
    _source,
    _text,
    clear_hidden_tests,
    feedback_safe,
    hidden_lines,
    hide_after_hidden_tests,
    strip_active_outputs,
)

IGNORED = {".ipynb_checkpoints", "__pycache__", ".DS_Store", "Thumbs.db"}


@dataclass
class Sanitized:
    """What :func:`sanitize` found: the rebuilt notebook (None when ungradable), the answers, and why."""

    notebook: nbformat.NotebookNode | None
    answers: dict[str, str] = field(default_factory=dict)  # grade_id -> the student's answer source
    # code cells the student added: answer grade_id ("" for the end) -> the sources that run right before it
    added: dict[str, list[str]] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)  # tampering, reported in grades.csv
    notes: list[str] = field(default_factory=list)  # harmless findings, reported in the report only
    reason: str | None = None  # why the submission cannot be graded at all


def _is_answer(cell) -> bool:
    nbg = _nbg(cell)
    return bool(nbg.get("solution")) and str(nbg.get("grade_id", "")).endswith("_answer")


def answer_sources(nb) -> dict[str, str]:
    """{grade id: source} of a notebook's answer cells (of a release: the starter code every student was handed)."""
    return {str(_nbg(c)["grade_id"]): _source(c) for c in nb.cells if _is_answer(c)}




def _visible(source: str) -> str:
    """A test cell without its hidden part (the release's version of a source cell)."""
    return _HIDDEN.sub("", source).strip()


def _defines(source: str, func: str) -> bool:
    return re.search(rf"^\s*def\s+{re.escape(func)}\s*\(", source, re.MULTILINE) is not None


def _compare_locked(student_cells: list, release_cells: list, flags: list[str]) -> None:
    """Report every change to the release's locked cells (tests, setup, texts) and their metadata."""
    by_id: dict[str, list] = {}
    for cell in student_cells:
        gid = _nbg(cell).get("grade_id")
        if gid:
            by_id.setdefault(str(gid), []).append(cell)
    order = [str(_nbg(c).get("grade_id")) for c in student_cells if _nbg(c).get("grade_id")]
    release_ids = [str(_nbg(c)["grade_id"]) for c in release_cells if _nbg(c).get("grade_id")]
    for cell in release_cells:
        gid = _nbg(cell).get("grade_id")
        if not gid or _is_answer(cell):
            continue
        kind = "test cell" if _nbg(cell).get("grade") else "locked cell"
        found = by_id.get(gid, [])
        if not found:
            flags.append(f"{kind} {gid} missing (restored)")
            continue
        if len(found) > 1:
            flags.append(f"{kind} {gid} duplicated (restored once)")
        got = found[0]
        if _visible(_source(got)) != _visible(_source(cell)) and not (
                cell.get("cell_type") == "markdown" and one_of_the_releases(_source(got), _source(cell))):
            flags.append(f"{kind} {gid} edited (restored)")
        want, have = _nbg(cell), _nbg(got)
        for key in ("grade", "solution", "locked", "points"):
            if want.get(key) != have.get(key):
                flags.append(f"{kind} {gid}: metadata {key} changed from {want.get(key)!r} to {have.get(key)!r} "
                             "(restored)")
    common = [g for g in order if g in release_ids]
    expected = [g for g in release_ids if g in common]
    if list(dict.fromkeys(common)) != expected and len(set(common)) == len(common):
        flags.append("cells reordered (restored to the released order)")
    unknown = sorted({g for g in order if g not in release_ids})
    if unknown:
        flags.append(counted(unknown, "unknown cell", "unknown cells", "dropped"))


def counted(names: list[str], one: str, many: str, what: str, shown: int = 3) -> str:
    """One flag for many findings of a kind: "40,000 unknown cells (dropped): a, b, c, …" (a hostile
    notebook's 40,000 cells must not make a 1 MB reason)."""
    names = [n[:60] for n in names]
    if len(names) == 1:
        return f"{one} {names[0]!r} ({what})"
    listed = ", ".join(repr(n) for n in names[:shown]) + (", …" if len(names) > shown else "")
    return f"{len(names):,} {many} ({what}): {listed}"


def _mapping(value) -> dict:
    return value if isinstance(value, dict) else {}


def rebuild(student, release) -> Sanitized:
    """The release notebook with the student's answer cells substituted; flags for every change."""
    flags: list[str] = []
    notes: list[str] = []
    cells = student.get("cells") if isinstance(student, dict) else None
    if not isinstance(cells, list):
        return Sanitized(None, reason="notebook has no list of cells")
    student_cells = [c for c in cells if isinstance(c, dict)]
    _compare_locked(student_cells, release.cells, flags)
    release_ks = _mapping(release.metadata.get("kernelspec"))
    student_ks = _mapping(student.get("metadata")).get("kernelspec")
    if student_ks is not None and not isinstance(student_ks, dict):
        flags.append("kernelspec is not a mapping (restored)")
    elif student_ks and student_ks.get("name") != release_ks.get("name"):
        flags.append(f"kernelspec changed to {str(student_ks.get('name'))[:60]!r} (restored)")

    rebuilt = copy.deepcopy(release)
    answers: dict[str, str] = {}
    used: set[int] = set()
    for cell in rebuilt.cells:
        if not _is_answer(cell):
            continue
        gid = _nbg(cell)["grade_id"]
        func = gid[: -len("_answer")]
        matches = [i for i, c in enumerate(student_cells) if _nbg(c).get("grade_id") == gid]
        if len(matches) > 1:
            flags.append(f"answer cell {gid} duplicated (the last one is graded)")
        if not matches:
            # Metadata lost (a cell copied into a new one): take the last unlabelled code cell defining the function.
            matches = [i for i, c in enumerate(student_cells)
                       if c.get("cell_type") == "code" and not _nbg(c).get("grade_id")
                       and _defines(_source(c), func)]
            if matches:
                flags.append(f"answer cell {gid} had lost its metadata (found by its function {func})")
        if matches:
            i = matches[-1]
            used.update(matches)
            if student_cells[i].get("cell_type") != cell.cell_type:  # a code answer, or a written (markdown) one
                flags.append(f"answer cell {gid} is not a {cell.cell_type} cell (not graded)")
                continue
            cell.source = _source(student_cells[i])
        else:
            flags.append(f"answer cell {gid} missing (scored as unanswered)")
        answers[gid] = cell.source
    added = _added_cells(student_cells, used, rebuilt)
    if added:
        n = sum(map(len, added.values()))
        notes.append(f"{n} code cell(s) the student added run with the answers (before the answer whose test "
                     "follows them), in the notebook and in the re-check")
    for cell in rebuilt.cells:
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    return Sanitized(rebuilt, answers=answers, flags=flags, notes=notes, added=added)


def _added_cells(student_cells: list, used: set[int], rebuilt) -> dict[str, list[str]]:
    """The student's own code cells (no nbgrader metadata), each placed right before the answer cell of the
    first test cell that follows it in the student's notebook (after the last answer when no test follows):
    both grading paths run them there, so a helper a student defined in a cell of their own is defined when
    the answer that uses it is tested, as in the student's kernel.  Inserted into ``rebuilt`` as fresh cells
    (the student's metadata is not kept)."""
    answer_ids = [_nbg(c)["grade_id"] for c in rebuilt.cells if _is_answer(c)]
    added: dict[str, list[str]] = {}
    pending: list[str] = []
    for i, c in enumerate(student_cells):
        gid = str(_nbg(c).get("grade_id") or "")
        if c.get("cell_type") == "code" and not gid and i not in used and _source(c).strip():
            pending.append(_source(c))
        elif gid.endswith("_test") and gid[: -len("_test")] + "_answer" in answer_ids and pending:
            added.setdefault(gid[: -len("_test")] + "_answer", []).extend(pending)
            pending = []
    if pending:
        added.setdefault("", []).extend(pending)
    for before, sources in added.items():
        at = next((k for k, c in enumerate(rebuilt.cells) if _nbg(c).get("grade_id") == before), None)
        cells = [nbformat.v4.new_code_cell(src) for src in sources]
        if at is None:
            rebuilt.cells.extend(cells)
        else:
            rebuilt.cells[at:at] = cells
    return added


def sanitize(sub, release_notebooks: dict[str, nbformat.NotebookNode]) -> Sanitized:
    """Sanitise a submission read by :func:`attn_grader.run.discover.find_submissions` against its release.

    release_notebooks: notebook file name -> release notebook (one per assignment in this course).
    Nothing of the file's content is quoted into a reason: a notebook that does not parse is
    "unreadable" with the kind of error and where, never with its text.
    """
    name, release = next(iter(release_notebooks.items()))
    flags: list[str] = []
    notes: list[str] = []
    if sub.problem:
        return Sanitized(None, reason=sub.problem)
    extra: dict[str, list[str]] = {}
    for entry, kind in sub.entries:
        if entry == name:
            continue
        if entry in IGNORED:
            notes.append(f"ignored {entry}")
            continue
        extra.setdefault("file" if kind == "file" else kind, []).append(entry)
    for kind, entries in extra.items():
        flags.append(counted(entries, f"extra {kind}", f"extra {kind}s", "dropped"))
    shares, outside = list(getattr(sub, "shares", []) or []), int(getattr(sub, "outside", 0) or 0)
    if shares:  # one file, two students (a hard link): both graded, neither zeroed, a person looks
        listed = ", ".join(repr(o[:60]) for o in shares[:3]) + (", …" if len(shares) > 3 else "")
        flags.append(f"shares a file with {listed}: check by hand (the same notebook file, a hard link)")
    if outside:
        flags.append(f"the notebook file has {outside} other name(s) outside the submissions (a hard link): "
                     "check by hand")
    if sub.notebook is None:
        others = [e for e, _ in sub.entries if e.endswith(".ipynb")]
        hint = f" (found {', '.join(repr(o) for o in others)})" if others else ""
        return Sanitized(None, flags=flags, notes=notes, reason=f"missing notebook {name}{hint}")
    try:
        student = nbformat.reads(sub.notebook.decode("utf-8"), as_version=4)
    except UnicodeDecodeError as exc:
        return Sanitized(None, flags=flags, notes=notes, reason=f"unreadable notebook (not UTF-8 at byte {exc.start})")
    except Exception as exc:  # noqa: BLE001 - corrupt JSON, not a notebook at all
        where = f" at line {exc.lineno}" if isinstance(getattr(exc, "lineno", None), int) else ""
        return Sanitized(None, flags=flags, notes=notes, reason=f"unreadable notebook ({type(exc).__name__}{where})")
    try:
        result = rebuild(student, release)
    except Exception as exc:  # noqa: BLE001 - every field is hostile: a malformed one costs this submission only
        return Sanitized(None, flags=flags, notes=notes,
                         reason=f"malformed notebook ({type(exc).__name__} in its cells or metadata)")
    result.flags[:0] = flags
    result.notes[:0] = notes
    return result
