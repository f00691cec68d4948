"""What grading one submission produced: a :class:`Result`, kept in grading_results.json."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

#: an answer still raising NotImplementedError, in the feedback and the class report: attn_grader.checking.core's
#: NOT_ATTEMPTED, which the self-check and the re-check say (the reports do not import the checking stage;
#: tests/test_feedback_pages.py holds the two equal)
NOT_ATTEMPTED = "not attempted yet"

MAX_LINES, MAX_CHARS = 20, 400  # of a result's reasons, flags and notes: grades.csv's cells stay small


def bounded(lines: list[str]) -> list[str]:
    """At most ``MAX_LINES`` distinct lines of at most ``MAX_CHARS`` each, the rest counted: whatever a
    submission makes the grader say (40,000 cells, a long file name), grades.csv's reason cell stays far
    below the csv module's field limit (131,072 characters) and the report readable."""
    out = list(dict.fromkeys(str(line) if len(str(line)) <= MAX_CHARS else str(line)[:MAX_CHARS - 1] + "…"
                             for line in lines))
    if len(out) > MAX_LINES:
        out = [*out[:MAX_LINES - 1], f"… and {len(out) - MAX_LINES + 1:,} more"]
    return out


@dataclass
class Result:
    student: str  # the folder name under submitted/, exactly as the instructor sees it
    assignment: str
    tasks: list[str] = field(default_factory=list)  # graded cells (grade ids), in the notebook's order
    max: dict[str, float] = field(default_factory=dict)  # grade id -> points
    scores: dict[str, float] = field(default_factory=dict)  # grade id -> final points
    task_notes: dict[str, str] = field(default_factory=dict)  # grade id -> why it lost points
    # grade id -> the re-check's finding: {"name": a catalogued mistake, or unrecognised/error/unfinished/
    # "not attempted yet",
    # "message", "got", "expected"} (for the class report)
    mistakes: dict[str, dict] = field(default_factory=dict)
    total: float = 0.0
    max_total: float = 0.0
    status: str = "ok"  # ok | flagged | ungradable
    reason: list[str] = field(default_factory=list)  # why it is ungradable
    flags: list[str] = field(default_factory=list)  # what an instructor should look at
    notes: list[str] = field(default_factory=list)  # harmless findings
    sandbox: bool = True  # False: graded with --no-sandbox
    # nbgrader's side, kept in step with the gradebook by the one writer (attn_grader.reports.record.sync):
    manual_tasks: list[str] = field(default_factory=list)  # cells graded by hand (solution + grade, or task)
    auto: dict[str, float] = field(default_factory=dict)  # grade id -> the grader's score (scores: the final)
    manual: dict[str, float] = field(default_factory=dict)  # grade id -> a grader's score set in the formgrader
    comments: dict[str, str] = field(default_factory=dict)  # grade id -> a grader's comment (formgrader)
    timestamp: str | None = None  # the submission's timestamp.txt (UTC), None without one
    secret: str | None = None  # its submission_secret.txt (nbgrader release_feedback files the page by it)
    seconds_late: float = 0.0  # after nbgrader's due date (and the student's extension)
    late_penalty: float = 0.0  # points taken by the late policy (nbgrader_config.py's LateSubmissionPlugin)
    digest: str = ""  # what the grade depends on: regraded only when this changes
    feedback_html: str | None = None  # written to feedback/ by the one writer, not kept in the JSON
    graded_notebook: str | None = None  # written to autograded/ by the one writer, not kept in the JSON

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}"

    def finish(self) -> Result:
        self.reason, self.flags, self.notes = bounded(self.reason), bounded(self.flags), bounded(self.notes)
        if self.status == "ok" and self.flags:
            self.status = "flagged"
        return self

    @property
    def needs_manual(self) -> list[str]:
        """The cells graded by hand that no grader has scored yet."""
        return [g for g in self.manual_tasks if g not in self.manual and g not in self.auto]

    def recount(self) -> Result:
        """scores and total from the grader's scores, the graders' and the late penalty (nbgrader's rule: a
        manual score replaces the automatic one; total = the scores - the late penalty)."""
        if self.status == "ungradable":
            return self
        if not self.auto and self.scores:  # a result from before these fields: its scores were the grader's
            self.auto = {g: v for g, v in self.scores.items() if g not in self.manual}
        self.scores = {g: self.manual[g] if g in self.manual else self.auto[g] for g in self.tasks
                       if g in self.manual or g in self.auto}
        self.total = round(max(0.0, sum(self.scores.values()) - self.late_penalty), 4)
        return self

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("feedback_html")
        d.pop("graded_notebook")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def empty_result(student: str, assignment: str, release=None, *, reason=(), flags=(), notes=(),
                 sandbox: bool = True) -> Result:
    """A result with the assignment's graded cells and no scores yet."""
    tasks, mx, manual = [], {}, []
    for cell in (release.cells if release is not None else []):
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade") or nbg.get("task"):
            tasks.append(nbg["grade_id"])
            mx[nbg["grade_id"]] = float(nbg.get("points", 0))
            if nbg.get("task") or nbg.get("solution"):  # nbgrader's manually graded cells
                manual.append(nbg["grade_id"])
    return Result(student, assignment, tasks=tasks, max=mx, max_total=round(sum(mx.values()), 4),
                  reason=list(reason), flags=list(flags), notes=list(notes), sandbox=sandbox, manual_tasks=manual)
