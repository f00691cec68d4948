"""The last step of grading, in one process (the one writer): the gradebook, grades.csv, the report, feedback.

Every file is written atomically (:func:`attn_grader.files.safeio.write_atomic`): a crash leaves the old
version or the new one.  Every string that came from a student (folder names, exception messages,
file names) is escaped where it lands: HTML in the feedback's notes, Markdown and HTML in
``grading_report.md``, and a CSV cell a spreadsheet would evaluate (``=``, ``+``, ``-``, ``@``, tab,
carriage return first) gets a leading apostrophe.
"""

from __future__ import annotations

import contextlib
import csv
import html
import io
import json
import os
import shutil
import warnings

import nbformat

from ..files.safeio import Refused, read_regular, write_atomic
from .result import Result

RESULTS_FILE = "grading_results.json"
CSV_FILE = "grades.csv"
REPORT_FILE = "grading_report.md"
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(text: str) -> str:
    """A text cell no spreadsheet evaluates (OWASP's advice for CSV injection)."""
    return "'" + text if text.startswith(FORMULA_START) else text


def md_text(text: str) -> str:
    """Student text for a Markdown table or list: one line, no Markdown syntax, no HTML."""
    text = str(text).replace("\r", " ").replace("\n", " ")
    for ch in "\\`*_[]|#!":
        text = text.replace(ch, "\\" + ch)
    return html.escape(text, quote=False)


def notes_cell(r: Result) -> nbformat.NotebookNode:
    """The "Grading notes" cell at the top of the feedback (every student string escaped)."""
    lines = ["### Grading notes", ""]
    for gid in r.tasks:
        score, mx = r.scores.get(gid), r.max.get(gid)
        why = r.task_notes.get(gid, "")
        lines.append(f"- **{md_text(gid)}**: {score if score is not None else '-'} / {mx}"
                     + (f" — {md_text(why)}" if why else ""))
    lines += [f"- flag: {md_text(f)}" for f in r.flags]
    lines += [f"- note: {md_text(n)}" for n in r.notes]
    if not r.sandbox:
        lines.append("- note: graded without the sandbox (--no-sandbox)")
    return nbformat.v4.new_markdown_cell("\n".join(lines))


def points(x: float) -> str:
    """Points as every output writes them: 10, 2.5 (no trailing zeros)."""
    return f"{x:g}"



def shown(name: str) -> str:
    """A student's folder name for a terminal line: as it is, or quoted when it has odd characters."""
    return name if name.isprintable() and " " not in name and name else repr(name)


def progress_line(i: int, n: int, r: Result) -> str:
    score = f"{points(r.total)}/{points(r.max_total)}" if r.status != "ungradable" else f"-/{points(r.max_total)}"
    extra = []
    if r.reason:
        extra.append("reason: " + "; ".join(r.reason))
    if r.flags:
        extra.append("flag: " + "; ".join(r.flags)[:200])
    if not r.sandbox:
        extra.append("NO SANDBOX")
    line = f"[{i}/{n}] {shown(r.student)} {r.assignment}: {score}" + (f" ({' | '.join(extra)})" if extra else "")
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in line)


def write_outputs(root: str, results: dict[str, Result]) -> None:
    """grades.csv and grading_report.md from every stored result (sorted: deterministic)."""
    keys = sorted(results)
    order = sorted({r.assignment for r in results.values()})
    columns: list[str] = []
    for a in order:
        for r in (results[k] for k in keys if results[k].assignment == a):
            columns += [g for g in r.tasks if g not in columns]
            break
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["student", "assignment", *columns, "total", "max", "status", "sandbox", "reason",
                "submitted", "hours_late", "late_penalty", "needs_manual_grade", "comments"])
    for k in keys:
        r = results[k]
        row = [csv_cell(r.student), csv_cell(r.assignment)]
        for gid in columns:  # a cell graded by hand that no grader has scored yet is empty
            row.append("" if gid not in r.tasks or r.status == "ungradable" or gid in r.needs_manual
                       else points(r.scores.get(gid, 0.0)))
        row.append(points(r.total) if r.status != "ungradable" else "")
        row += [points(r.max_total), r.status, "on" if r.sandbox else "off",
                csv_cell("; ".join([*r.reason, *r.flags])), (r.timestamp or "")[:19],
                f"{r.seconds_late / 3600:.2f}" if r.seconds_late > 0 else "",
                points(r.late_penalty) if r.late_penalty else "",
                csv_cell(" ".join(r.needs_manual) if r.status != "ungradable" else ""),
                csv_cell("; ".join(f"{g}: {c}" for g, c in r.comments.items()))]
        w.writerow(row)
    write_atomic(os.path.join(root, CSV_FILE), buf.getvalue())
    lines = ["# Grading report", "", f"{len(keys)} submissions.", "",
             "| student | assignment | score | status | reasons and flags |", "|---|---|---|---|---|"]
    for k in keys:
        r = results[k]
        score = f"{points(r.total)}/{points(r.max_total)}" if r.status != "ungradable" else "-"
        status = r.status + ("" if r.sandbox else ", no sandbox")
        lines.append(f"| {md_text(r.student)} | {md_text(r.assignment)} | {score} | {status} | "
                     f"{md_text('; '.join([*r.reason, *r.flags]))} |")
    lines += ["", "## Details", ""]
    for k in keys:
        r = results[k]
        details = [f"{gid}: {note}" for gid, note in r.task_notes.items()] + [f"note: {n}" for n in r.notes]
        if details or r.flags or r.reason:
            lines.append(f"### {md_text(r.student)} / {md_text(r.assignment)}")
            lines += [f"- {md_text(d)}" for d in [*r.reason, *r.flags, *details]]
            lines.append("")
    write_atomic(os.path.join(root, REPORT_FILE), "\n".join(lines) + "\n")


def _when(text: str | None):
    from datetime import datetime

    try:
        return datetime.fromisoformat(text) if text else None
    except ValueError:
        return None


def merge_gradebook(db_url: str, results: list[Result]) -> None:
    """Write the grader's scores into the gradebook at ``db_url``, as nbgrader's autograde does: the
    submission (kept, with its timestamp), each automatically graded cell's ``auto_score``; a cell graded by
    hand keeps "needs manual grade" until a grader scores it.  A grader's scores and comments (``manual_score``,
    ``manual_comment``, ``extra_credit``) are never written here."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for r in results:
            gb.update_or_create_student(r.student)
            try:
                sub = gb.find_submission(r.assignment, r.student)
            except MissingEntry:
                sub = gb.add_submission(r.assignment, r.student)
            sub.timestamp = _when(r.timestamp)
            for nb in sub.notebooks:
                for grade in nb.grades:
                    if r.status == "ungradable":
                        grade.auto_score, grade.needs_manual_grade = 0.0, False
                    elif grade.name in r.auto:
                        grade.auto_score, grade.needs_manual_grade = r.auto[grade.name], False
                    elif grade.name in r.manual_tasks:
                        grade.auto_score, grade.needs_manual_grade = None, grade.manual_score is None
                    else:
                        grade.auto_score, grade.needs_manual_grade = 0.0, False
            gb.db.commit()


def sync_gradebook(db_url: str, results: dict[str, Result], assignments: list[str], still_submitted,
                   penalty=None, extensions: dict | None = None) -> None:
    """After a run: the gradebook and ``results`` agree.  Each result gets the graders' scores and comments
    (read, never written: ``manual_score``, ``extra_credit``, ``manual_comment`` are the formgrader's), its
    lateness from nbgrader's due date and the student's extension (``extensions``: {(student, assignment):
    timedelta}, stored as nbgrader's ``Gradebook.grant_extension`` does) and its late penalty,
    ``penalty(student, score, seconds_late)`` (nbgrader's LateSubmissionPlugin: None is no penalty), stored
    as the notebook's ``late_submission_penalty``.  A submission of ``assignments`` that left ``submitted/``
    (``still_submitted(student, assignment)`` False) leaves the gradebook."""
    from nbgrader.api import Gradebook, MissingEntry

    by_key = {(r.student, r.assignment): r for r in results.values()}
    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for a in assignments:
            try:
                subs = list(gb.find_assignment(a).submissions)
            except MissingEntry:
                continue
            for sub in subs:
                key = (sub.student.id, a)
                if not still_submitted(*key):
                    gb.remove_submission(a, sub.student.id)
                    continue
                ext = (extensions or {}).get(key)
                if ext is not None and sub.extension != ext:
                    sub.extension = ext
                r = by_key.get(key)
                if r is None:
                    continue
                r.manual = {g.name: float(g.manual_score) + float(g.extra_credit or 0) for nb in sub.notebooks
                            for g in nb.grades if g.manual_score is not None}
                r.comments = {c.name: c.manual_comment for nb in sub.notebooks for c in nb.comments
                              if c.manual_comment}
                r.seconds_late = float(sub.total_seconds_late) if r.status != "ungradable" else 0.0
                r.late_penalty = 0.0
                r.recount()
                if r.seconds_late > 0 and penalty is not None and r.status != "ungradable":
                    taken = penalty(r.student, r.total, r.seconds_late)
                    r.late_penalty = 0.0 if taken is None else round(min(max(float(taken), 0.0), r.total), 4)
                    r.recount()
                for i, nb in enumerate(sub.notebooks):  # one notebook an assignment here: it carries the penalty
                    want = (r.late_penalty or None) if i == 0 else None
                    if nb.late_submission_penalty != want:
                        nb.late_submission_penalty = want
            gb.db.commit()


def put_autograded(root: str, r: Result) -> None:
    """``autograded/<student>/<assignment>/`` as nbgrader's autograde leaves it (the graded notebook, and
    the submission's timestamp.txt): the formgrader's Manual Grading shows it, and lists the submission
    as graded."""
    ag_dir = os.path.join(root, "autograded", r.student, r.assignment)
    _replace_folder(ag_dir)
    if r.graded_notebook:
        os.makedirs(ag_dir, exist_ok=True)
        write_atomic(os.path.join(ag_dir, r.assignment + ".ipynb"), r.graded_notebook)
        _nbgrader_files(ag_dir, r)
    r.graded_notebook = None


def _nbgrader_files(folder: str, r: Result) -> None:
    """timestamp.txt and submission_secret.txt, as nbgrader's autograde and generate_feedback copy them."""
    if r.timestamp:
        write_atomic(os.path.join(folder, "timestamp.txt"), _stamp(r.timestamp))
    if r.secret:
        write_atomic(os.path.join(folder, "submission_secret.txt"), r.secret)


def _stamp(timestamp: str) -> str:
    """A timestamp.txt as nbgrader writes it (``2026-12-05 23:34:34.123456 UTC``)."""
    when = _when(timestamp)
    return when.strftime("%Y-%m-%d %H:%M:%S.%f UTC") if when else ""


def _replace_folder(path: str) -> None:
    if os.path.islink(path):
        os.unlink(path)
    shutil.rmtree(path, ignore_errors=True)


def remove_gone(root: str, results_before: dict[str, Result], results_now: dict[str, Result]) -> None:
    """The autograded/ and feedback/ folders of submissions that left the gradebook."""
    for key, r in results_before.items():
        if key not in results_now:
            for top in ("autograded", "feedback"):
                _replace_folder(os.path.join(root, top, r.student, r.assignment))
                with contextlib.suppress(OSError):  # the student's folder, when nothing else is left in it
                    os.rmdir(os.path.join(root, top, r.student))


def put_feedback(root: str, r: Result) -> None:
    """``feedback/<student>/<assignment>/`` of one result, as it arrives (its HTML is then let go:
    the writer's memory does not grow with the class).  A result without feedback removes the old."""
    fb_dir = os.path.join(root, "feedback", r.student, r.assignment)
    _replace_folder(fb_dir)
    if r.feedback_html:
        os.makedirs(fb_dir, exist_ok=True)
        write_atomic(os.path.join(fb_dir, r.assignment + ".html"), r.feedback_html)
        # nbgrader release_feedback finds a page by the submission's timestamp (nbgrader.exchange.default.
        # release_feedback): the same timestamp.txt as autograded/, or the time of grading without one.
        _nbgrader_files(fb_dir, r)
    r.feedback_html = None


def load_results(root: str) -> dict[str, Result]:
    try:
        data = json.loads(read_regular(os.path.join(root, RESULTS_FILE), 256 << 20) or b"{}")
    except (Refused, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    out = {}
    for k, v in data.items():
        with contextlib.suppress(TypeError, AttributeError):
            out[k] = Result.from_dict(v)
    return out


def merge(root: str, this_run: dict[str, Result], graded_assignments: list[str], still_submitted,
          sync=None) -> dict[str, Result]:
    """grading_results.json, grades.csv and the report, from the stored results and this run's
    (whose feedback :func:`put_feedback` wrote as each arrived).

    ``still_submitted(student, assignment)``: whether the submission is still there (one that is gone
    loses its row when its assignment was graded).  Returns every stored result.
    """
    results = load_results(root)
    before = dict(results)
    for key in list(results):
        r = results[key]
        if r.assignment in graded_assignments and not still_submitted(r.student, r.assignment):
            results.pop(key)
    for key, r in this_run.items():
        results[key] = r
    if sync is not None:  # the gradebook's side: graders' scores and comments, lateness (sync_gradebook)
        sync(results)
    remove_gone(root, before, results)
    write_atomic(os.path.join(root, RESULTS_FILE),
                 json.dumps({k: r.to_dict() for k, r in results.items()}, sort_keys=True, indent=1))
    write_outputs(root, results)
    return results
