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
from ..files.safeio import encodable

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


def _nbg(cell) -> dict:
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


def _is_answer(cell) -> bool:
    nbg = _nbg(cell)
    return bool(nbg.get("solution")) and str(nbg.get("grade_id", "")).endswith("_answer")


def answer_sources(nb) -> dict[str, str]:
    """{grade id: source} of a notebook's answer cells (of a release: the starter code every student was handed)."""
    return {str(_nbg(c)["grade_id"]): _source(c) for c in nb.cells if _is_answer(c)}


_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.MULTILINE | re.DOTALL)


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


SAFE_MIME = ("text/plain", "image/png", "image/jpeg")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
HIDDEN_LINE = "[grader: a line of the hidden tests, not shown]"


def hidden_lines(source_cells) -> list[str]:
    """The lines of the hidden tests of a source notebook's cells (what no output may show)."""
    out = []
    for cell in source_cells:
        for block in _HIDDEN.findall(_source(cell)):
            out += [line.strip() for line in block.splitlines() if len(line.strip()) >= 8]  # markers too
    return list(dict.fromkeys(out))


def clear_hidden_tests(nb) -> None:
    """The feedback's test cells as released: their hidden tests removed (the autograded notebook
    ran them; the student sees the visible part, the score and the mistake's name)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and _HIDDEN.search(_source(cell)):
            cell.source = _HIDDEN.sub("", _source(cell)).rstrip()


def _text(value) -> str:  # encodable: a lone surrogate (JSON gives "\\ud800" back) replaced, issue 40
    return encodable("".join(map(str, value)) if isinstance(value, list) else str(value) if value is not None else "")


def _redact(text: str, hidden: list[str]) -> str:
    """``text`` with every line that carries a line of the hidden tests replaced (colours ignored)."""
    if not hidden:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        plain = _ANSI.sub("", line)
        if any(h in plain for h in hidden):
            lines[i] = HIDDEN_LINE
    return "\n".join(lines)


def _image(value) -> str | None:
    """Base64 image data, re-encoded from its bytes (anything else in the field is dropped)."""
    import base64
    import binascii

    try:
        return base64.b64encode(base64.b64decode(_text(value).replace("\n", ""), validate=True)).decode()
    except (binascii.Error, ValueError):
        return None


def _inert(out, hidden: list[str]) -> tuple[nbformat.NotebookNode, bool]:
    """One output rebuilt from an allow-list: a stream (stdout/stderr), an error (its name, value and
    traceback as text) or data (plain text, PNG, JPEG); every text field a string, every image
    re-encoded, no metadata.  Whatever else a kernel sent (HTML, JavaScript, SVG, a stream named
    ``x"><script>``, an image field holding markup) is gone, and no line shows the hidden tests."""
    from nbformat.v4 import new_output

    kind = out.get("output_type") if isinstance(out, dict) else None
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=_redact(_text(out.get("text")), hidden)), False
    if kind == "error":
        tb = out.get("traceback") if isinstance(out.get("traceback"), list) else []
        return new_output("error", ename=_redact(_text(out.get("ename")), hidden)[:200],
                          evalue=_redact(_text(out.get("evalue")), hidden),
                          traceback=[_redact(_text(t), hidden) for t in tb]), False
    data = out.get("data") if isinstance(out, dict) and isinstance(out.get("data"), dict) else {}
    kept: dict = {}
    if "text/plain" in data:
        kept["text/plain"] = _redact(_text(data["text/plain"]), hidden)
    for mime in ("image/png", "image/jpeg"):
        image = _image(data[mime]) if mime in data else None
        if image is not None:
            kept[mime] = image
    dropped = sorted(str(k)[:40] for k in data if k not in kept)
    if "text/plain" not in kept:
        kept["text/plain"] = f"[grader: {', '.join(dropped) or 'an'} output not shown]"
    if kind == "execute_result":
        return new_output("execute_result", data=kept, execution_count=None), bool(dropped)
    return new_output("display_data", data=kept), bool(dropped) or kind != "display_data"


def strip_active_outputs(nb, hidden: list[str] | tuple = ()) -> int:
    """Rebuild every output of ``nb`` inert (:func:`_inert`) before the feedback is rendered; return how
    many outputs lost something.  A student's kernel writes the outputs: HTML, JavaScript, SVG, Markdown
    or LaTeX from it, or markup in any field the template writes unescaped, would be live in the
    feedback page; a line of ``hidden`` (the hidden tests' source) is replaced wherever it shows."""
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        rebuilt = []
        for out in outs:
            new, lost = _inert(out, list(hidden))
            changed += lost
            rebuilt.append(new)
        cell.outputs = rebuilt
    return changed


HIDDEN_OUTPUT = "[grader: the output of the hidden tests is not shown; the grading notes say what they found]"
AFTER_HIDDEN = ("[grader: not shown: this ran after hidden tests had run, and what code prints then could "
                "show them]")
_ERRORS = {"KernelDied", "CellTimeoutError", "DeadKernelError"} | {
    n for n, v in vars(__import__("builtins")).items() if isinstance(v, type) and issubclass(v, BaseException)}


def _is_test(cell) -> bool:
    nbg = _nbg(cell)
    return (bool(nbg.get("grade")) and not nbg.get("solution")) or bool(_HIDDEN.search(_source(cell)))


def hide_after_hidden_tests(nb) -> int:
    """Replace what ran while or after hidden tests ran by a fixed line; return how many cells changed.

    A test cell runs its hidden tests in the student's kernel: a hook the student registered (IPython's
    ``post_run_cell``), or the answer the tests call (``sys._getframe(1)``, ``linecache``), can read them
    and print them in any encoding, then or in any later cell.  So no text printed from the first test
    cell on is shown: each such cell's outputs become one line (:data:`HIDDEN_OUTPUT` in a test cell,
    :data:`AFTER_HIDDEN` elsewhere), saying at most the name of a built-in error it raised.  The score
    and the mistake's name are in the grading notes."""
    seen, changed = False, 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        test = _is_test(cell)
        seen = seen or test
        outs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        if not seen or not outs or _ours(outs):
            continue
        names = [str(o.get("ename")) for o in outs if isinstance(o, dict) and o.get("output_type") == "error"]
        known = next((n for n in names if n in _ERRORS), "an error")
        text = (HIDDEN_OUTPUT if test else AFTER_HIDDEN) + (f" (it raised {known})" if names else "")
        from nbformat.v4 import new_output

        cell.outputs = [new_output("stream", name="stdout", text=text + "\n")]
        changed += 1
    return changed


def _ours(outs) -> bool:
    return len(outs) == 1 and isinstance(outs[0], dict) and outs[0].get("output_type") == "stream" and \
        _text(outs[0].get("text")).startswith((HIDDEN_OUTPUT, AFTER_HIDDEN))


def feedback_safe(nb) -> None:
    """The last gate before a feedback page is written (whatever ran before it): every output rebuilt from
    the allow-list (:func:`strip_active_outputs`), nothing shown that ran with or after hidden tests
    (:func:`hide_after_hidden_tests`), the hidden tests' source removed, and of the notebook's metadata
    only the kernel's name and language (a widget state, a title: none reaches the page)."""
    meta = nb.get("metadata", {})
    nb["metadata"] = type(meta)({k: meta[k] for k in ("kernelspec", "language_info") if k in meta})
    strip_active_outputs(nb)
    hide_after_hidden_tests(nb)
    clear_hidden_tests(nb)
