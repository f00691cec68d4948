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
    w.writerow(["student", "assignment", *columns, "total", "max", "status", "sandbox", "reason"])
    for k in keys:
        r = results[k]
        row = [csv_cell(r.student), csv_cell(r.assignment)]
        for gid in columns:
            row.append("" if gid not in r.tasks or r.status == "ungradable" else points(r.scores.get(gid, 0.0)))
        row.append(points(r.total) if r.status != "ungradable" else "")
        row += [points(r.max_total), r.status, "on" if r.sandbox else "off",
                csv_cell("; ".join([*r.reason, *r.flags]))]
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


def merge_gradebook(db_url: str, results: list[Result]) -> None:
    """Write the final grades into the gradebook at ``db_url`` (resubmissions replace earlier grades)."""
    from nbgrader.api import Gradebook, MissingEntry

    with warnings.catch_warnings(), Gradebook(db_url) as gb:
        warnings.simplefilter("ignore")
        for r in results:
            gb.update_or_create_student(r.student)
            with contextlib.suppress(MissingEntry):
                gb.remove_submission(r.assignment, r.student)
            sub = gb.add_submission(r.assignment, r.student)
            for nb in sub.notebooks:
                for grade in nb.grades:
                    grade.auto_score = r.scores.get(grade.name, 0.0) if r.status != "ungradable" else 0.0
                    grade.needs_manual_grade = False
            gb.db.commit()


def put_feedback(root: str, r: Result) -> None:
    """``feedback/<student>/<assignment>/`` of one result, as it arrives (its HTML is then let go:
    the writer's memory does not grow with the class).  A result without feedback removes the old."""
    fb_dir = os.path.join(root, "feedback", r.student, r.assignment)
    if os.path.islink(fb_dir):
        os.unlink(fb_dir)
    shutil.rmtree(fb_dir, ignore_errors=True)
    if r.feedback_html:
        os.makedirs(fb_dir, exist_ok=True)
        write_atomic(os.path.join(fb_dir, r.assignment + ".html"), r.feedback_html)
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


def merge(root: str, this_run: dict[str, Result], graded_assignments: list[str], still_submitted) -> dict[str, Result]:
    """grading_results.json, grades.csv and the report, from the stored results and this run's
    (whose feedback :func:`put_feedback` wrote as each arrived).

    ``still_submitted(student, assignment)``: whether the submission is still there (one that is gone
    loses its row when its assignment was graded).  Returns every stored result.
    """
    results = load_results(root)
    for key in list(results):
        r = results[key]
        if r.assignment in graded_assignments and not still_submitted(r.student, r.assignment):
            results.pop(key)
    for key, r in this_run.items():
        results[key] = r
    write_atomic(os.path.join(root, RESULTS_FILE),
                 json.dumps({k: r.to_dict() for k, r in results.items()}, sort_keys=True, indent=1))
    write_outputs(root, results)
    return results
