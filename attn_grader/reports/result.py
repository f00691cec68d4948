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
    feedback_html: str | None = None  # written to feedback/ by the one writer, not kept in the JSON

    @property
    def key(self) -> str:
        return f"{self.student}/{self.assignment}"

    def finish(self) -> Result:
        self.reason, self.flags, self.notes = bounded(self.reason), bounded(self.flags), bounded(self.notes)
        if self.status == "ok" and self.flags:
            self.status = "flagged"
        return self

    def to_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d.pop("feedback_html")
        return d

    @classmethod
    def from_dict(cls, d: dict) -> Result:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in names})


def empty_result(student: str, assignment: str, release=None, *, reason=(), flags=(), notes=(),
                 sandbox: bool = True) -> Result:
    """A result with the assignment's graded cells and no scores yet."""
    tasks, mx = [], {}
    for cell in (release.cells if release is not None else []):
        nbg = cell.metadata.get("nbgrader", {})
        if nbg.get("grade"):
            tasks.append(nbg["grade_id"])
            mx[nbg["grade_id"]] = float(nbg.get("points", 0))
    return Result(student, assignment, tasks=tasks, max=mx, max_total=round(sum(mx.values()), 4),
                  reason=list(reason), flags=list(flags), notes=list(notes), sandbox=sandbox)
