"""Grades in the files learning-management systems import: Canvas and Moodle.

``make grade EXPORT=canvas`` (or ``moodle``, or ``canvas,moodle``) writes, beside ``grades.csv``:

* ``grades_canvas.csv``: Canvas's gradebook layout (the one its own export has, which its import
  reads back): the columns ``Student``, ``ID``, ``SIS User ID``, ``SIS Login ID``, ``Section``, then one
  column per assignment; a second row ``Points Possible`` gives each assignment's points.  Canvas
  matches a row to a student by one of ``ID``, ``SIS User ID`` or ``SIS Login ID``, and a column to an
  assignment by its name; a name it does not know becomes a new assignment (Ohio State's guide
  "Import a CSV file to Carmen Grades", teaching.resources.osu.edu, on Canvas's import).
* ``grades_moodle.csv``: Moodle's "Import grades from CSV": a header row, a column that identifies the
  user (Moodle maps it to the user's ``username``, ``email``, ``idnumber`` or ``id``; here
  ``username``, plus ``email`` and ``idnumber`` when the roster gives them) and one column per
  assignment, mapped on import to a grade item (or a new one); an empty cell is no grade
  (moodle/moodle, ``grade/import/csv/classes/load_data.php``: ``map_user_data_with_value``,
  ``update_grade_item``).

Canvas's import matches a column headed ``Title (id)`` to its assignment ``id`` (canvas-lms,
``lib/gradebook_importer.rb``: ``Assignment.title_and_id``), so an existing assignment is updated, never
duplicated, once ``nbgrader_config.py`` gives the ids: ``c.AttnGrader.canvas_ids = {"ps04_step_by_step": 1234}``.
Lateness, the late penalty and the graders' comments go to Moodle as a feedback column per assignment
(``<assignment> feedback``, mapped on import to the item's feedback) and to Canvas only into a column of the
course's own custom gradebook columns, named in ``c.AttnGrader.canvas_notes_column`` (e.g. ``Notes``, the one
Canvas offers; the importer matches custom columns by title, and any other unknown column would become a new
assignment).

Each cell is the assignment's total (the same number as ``grades.csv``: the graders' scores included, the late
penalty taken); an ungradable or missing submission is an empty cell (no grade: neither system overwrites a
grade with it).  Students are the
folder names under ``submitted/``; a ``roster.csv`` in the course (columns ``student`` and any of
``name``, ``canvas_id``, ``sis_user_id``, ``sis_login_id``, ``section``, ``username``, ``email``,
``idnumber``) maps them to the LMS's identifiers.  Without it, the folder name is the SIS login
(Canvas) and the username (Moodle).  Text cells are protected against spreadsheet formulas.

    python -m attn_grader.reports.lms canvas|moodle [--course DIR]   # from grading_results.json, no grading
"""

from __future__ import annotations

import argparse
import csv
import io
import os

from ..files.safeio import Refused, read_regular, write_atomic
from .record import csv_cell, load_results, points
from .result import Result

FORMATS = ("canvas", "moodle")
FILES = {"canvas": "grades_canvas.csv", "moodle": "grades_moodle.csv"}
CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
ROSTER_FILE = "roster.csv"
ROSTER_COLUMNS = ("student", "name", "canvas_id", "sis_user_id", "sis_login_id", "section", "username", "email",
                  "idnumber")


SETTINGS = ("canvas_ids", "canvas_notes_column")  # c.AttnGrader.<these> in nbgrader_config.py


def settings_from(path: str) -> dict:
    """The export's settings from an nbgrader_config.py (``c.AttnGrader.canvas_ids`` ...), {} without one."""
    if not os.path.isfile(path):
        return {}
    from traitlets.config.loader import PyFileConfigLoader

    cfg = PyFileConfigLoader(os.path.basename(path), os.path.dirname(path)).load_config()
    section = cfg.get("AttnGrader", {})
    return {k: section[k] for k in SETTINGS if k in section}


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 60 else f"{seconds / 60:.0f} min" if seconds < 3600 else \
        f"{seconds / 3600:.1f} h"


def note(r: Result) -> str:
    """Lateness, the late penalty and the graders' comments of one result, in one line."""
    parts = []
    if r.seconds_late > 0:
        parts.append(f"{r.assignment}: submitted {_duration(r.seconds_late)} late"
                     + (f", late penalty {points(r.late_penalty)}" if r.late_penalty else ""))
    parts += [f"{r.assignment} {gid}: {text}" for gid, text in r.comments.items()]
    return "; ".join(parts)


class ExportError(ValueError):
    """A roster or format the export cannot use (the message says what to fix)."""


def read_roster(root: str) -> dict[str, dict[str, str]]:
    """{student folder name: {column: value}} from ``roster.csv`` (empty without one)."""
    path = os.path.join(root, ROSTER_FILE)
    if not os.path.exists(path):
        return {}
    try:
        text = read_regular(path, 16 << 20).decode("utf-8-sig")
    except (Refused, UnicodeDecodeError) as exc:
        raise ExportError(f"{ROSTER_FILE}: cannot read it ({exc})") from exc
    rows = list(csv.DictReader(io.StringIO(text)))
    if rows and "student" not in rows[0]:
        raise ExportError(f"{ROSTER_FILE}: no 'student' column (the folder names under submitted/); "
                          f"columns it may have: {', '.join(ROSTER_COLUMNS)}")
    roster = {}
    for i, row in enumerate(rows, start=2):
        student = (row.get("student") or "").strip()
        if not student:
            raise ExportError(f"{ROSTER_FILE}, line {i}: empty 'student'")
        if student in roster:
            raise ExportError(f"{ROSTER_FILE}, line {i}: {student!r} twice")
        roster[student] = {k: (row.get(k) or "").strip() for k in ROSTER_COLUMNS}
    return roster


def _table(results: dict[str, Result]) -> tuple[list[str], list[str], dict, dict]:
    assignments = sorted({r.assignment for r in results.values()})
    students = sorted({r.student for r in results.values()})
    maxima = {a: max(r.max_total for r in results.values() if r.assignment == a) for a in assignments}
    totals = {(r.student, r.assignment): (None if r.status == "ungradable" else r.total) for r in results.values()}
    return assignments, students, maxima, totals


def canvas(results: dict[str, Result], roster: dict[str, dict[str, str]], settings: dict | None = None) -> str:
    assignments, students, maxima, totals = _table(results)
    settings = settings or {}
    ids = settings.get("canvas_ids") or {}
    notes_column = settings.get("canvas_notes_column") or ""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    headers = [f"{a} ({ids[a]})" if str(ids.get(a, "")).strip() else a for a in assignments]
    w.writerow(CANVAS_COLUMNS + ([notes_column] if notes_column else []) + headers)
    w.writerow(["Points Possible", "", "", "", ""] + ([""] if notes_column else [])
               + [points(maxima[a]) for a in assignments])
    for s in students:
        info = roster.get(s, {})
        ident = [info.get("name") or s, info.get("canvas_id", ""), info.get("sis_user_id", ""),
                 info.get("sis_login_id") or (s if not (info.get("canvas_id") or info.get("sis_user_id")) else ""),
                 info.get("section", "")]
        cells = [totals.get((s, a)) for a in assignments]
        notes = ["; ".join(filter(None, (note(results[f"{s}/{a}"]) for a in assignments if f"{s}/{a}" in results)))]
        w.writerow([csv_cell(x) for x in ident] + ([csv_cell(notes[0])] if notes_column else [])
                   + ["" if c is None else points(c) for c in cells])
    return buf.getvalue()


def moodle(results: dict[str, Result], roster: dict[str, dict[str, str]]) -> str:
    assignments, students, _, totals = _table(results)
    extra = [k for k in ("email", "idnumber") if any(roster.get(s, {}).get(k) for s in students)]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["username", *extra, *assignments, *(f"{a} feedback" for a in assignments)])
    for s in students:
        info = roster.get(s, {})
        ident = [info.get("username") or s] + [info.get(k, "") for k in extra]
        cells = [totals.get((s, a)) for a in assignments]
        feedback = [note(results[f"{s}/{a}"]) if f"{s}/{a}" in results else "" for a in assignments]
        w.writerow([csv_cell(x) for x in ident] + ["" if c is None else points(c) for c in cells]
                   + [csv_cell(x) for x in feedback])
    return buf.getvalue()


def parse_formats(text: str) -> list[str]:
    wanted = [f.strip().lower() for f in text.replace(" ", ",").split(",") if f.strip()]
    bad = [f for f in wanted if f not in FORMATS]
    if bad:
        raise ExportError(f"unknown export format {', '.join(bad)!s}: choose from {', '.join(FORMATS)}")
    return wanted


def export(root: str, formats: list[str], results: dict[str, Result] | None = None,
           settings: dict | None = None) -> list[str]:
    """Write the files of ``formats``; return their paths.  ``settings``: :data:`SETTINGS` (default: the
    course's nbgrader_config.py)."""
    results = load_results(root) if results is None else results
    settings = settings_from(os.path.join(root, "nbgrader_config.py")) if settings is None else settings
    roster = read_roster(root)
    unknown = sorted({r.student for r in results.values()} - set(roster)) if roster else []
    paths = []
    for fmt in formats:
        text = canvas(results, roster, settings) if fmt == "canvas" else moodle(results, roster)
        path = os.path.join(root, FILES[fmt])
        write_atomic(path, text)
        paths.append(path)
    if unknown:
        print(f"{ROSTER_FILE} has no row for {len(unknown)} student(s) ({', '.join(map(repr, unknown[:5]))}"
              f"{', …' if len(unknown) > 5 else ''}): their folder names stand in for the LMS identifiers")
    return paths


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="write the grades in an LMS's import format")
    p.add_argument("formats", help="canvas, moodle or canvas,moodle")
    p.add_argument("--course", default=".")
    args = p.parse_args(argv)
    root = os.path.realpath(args.course)
    try:
        for path in export(root, parse_formats(args.formats)):
            print(path)
    except ExportError as exc:
        print(f"export: {exc}")
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
