"""Late submissions, as nbgrader models them: the due date is the assignment's in the gradebook
(``nbgrader db assignment add ps04_step_by_step --duedate="2027-03-01 17:00 UTC"``), a student's extension is
the submission's ``extension`` (nbgrader's ``Gradebook.grant_extension``; nbgrader has no command for it, so
``make grade`` grants the ones listed in the course's ``extensions.csv``), and the penalty is the
``LateSubmissionPlugin`` that ``nbgrader_config.py`` names in ``c.AssignLatePenalties.plugin_class``, the
setting nbgrader's own ``autograde`` reads.  :class:`LatePenalty` is that plugin with one more policy, a
fraction of the score per day late::

    c.AssignLatePenalties.plugin_class = "attn_grader.run.late.LatePenalty"
    c.LatePenalty.penalty_method = "per_day"   # "none" (default), "zero" (nbgrader's), or "per_day"
    c.LatePenalty.per_day = 0.1                # per day or part of one, at most the whole score

``extensions.csv``: a header ``student,assignment,hours`` and a row per extension (the folder name under
``submitted/``, the assignment, the hours added to its due date).
"""

from __future__ import annotations

import csv
import io
import math
import os
from datetime import timedelta

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Enum, Float

from ..files.safeio import Refused, read_regular

EXTENSIONS_FILE = "extensions.csv"


class LatePenalty(LateSubmissionPlugin):
    """nbgrader's late policies ("none", "zero") and "per_day": ``per_day`` of the score for each day (or part
    of one) after the due date, at most the whole score."""

    penalty_method = Enum(("none", "zero", "per_day"), default_value="none",
                          help="none: no penalty; zero: the score is taken; per_day: per_day of it per day late"
                          ).tag(config=True)
    per_day = Float(0.1, help="the fraction of the score taken per day (or part of one) late").tag(config=True)

    def late_submission_penalty(self, student_id: str, score: float, total_seconds_late: float) -> float | None:
        if self.penalty_method == "per_day":
            return min(score, score * self.per_day * math.ceil(total_seconds_late / 86400))
        return super().late_submission_penalty(student_id, score, total_seconds_late)


class ExtensionsError(ValueError):
    """An extensions.csv the grader cannot use (the message says the line to fix)."""


def read_extensions(root: str) -> dict[tuple[str, str], timedelta]:
    """{(student, assignment): extension} from the course's extensions.csv (empty without one)."""
    path = os.path.join(root, EXTENSIONS_FILE)
    try:
        raw = read_regular(path, 4 << 20)
    except Refused as exc:
        raise ExtensionsError(f"{EXTENSIONS_FILE}: cannot read it ({exc})") from None
    if raw is None:
        return {}
    try:
        rows = list(csv.DictReader(io.StringIO(raw.decode("utf-8-sig"))))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ExtensionsError(f"{EXTENSIONS_FILE}: not a UTF-8 CSV file ({type(exc).__name__})") from None
    out = {}
    for i, row in enumerate(rows, start=2):
        student, assignment = (row.get("student") or "").strip(), (row.get("assignment") or "").strip()
        try:
            hours = float(row.get("hours") or "")
        except ValueError:
            hours = math.nan
        if not student or not assignment or not math.isfinite(hours) or hours < 0:
            raise ExtensionsError(f"{EXTENSIONS_FILE}, line {i}: needs student, assignment and hours (>= 0)")
        out[(student, assignment)] = timedelta(hours=hours)
    return out


def penalty_function(config):
    """The configured plugin's ``late_submission_penalty`` (nbgrader's default: no penalty)."""
    from traitlets.utils.importstring import import_item

    cls = config.AssignLatePenalties.get("plugin_class", LateSubmissionPlugin) if "AssignLatePenalties" in config \
        else LateSubmissionPlugin
    if isinstance(cls, str):
        cls = import_item(cls)
    return cls(config=config).late_submission_penalty
