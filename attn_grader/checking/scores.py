"""Final scores from the notebook's tests and the re-check: one pure function, tested on its own."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Final:
    scores: dict[str, float] = field(default_factory=dict)
    task_notes: dict[str, str] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


def final_scores(tasks: list[str], maxes: dict[str, float], nb_scores: dict[str, float],
                 verdicts: dict[str, object]) -> Final:
    """Combine, per graded cell, nbgrader's score with the re-check's verdict.

    ``verdicts`` maps a graded cell's id to an object with ``passed`` and ``reason`` (a
    :class:`attn_grader.checking.recheck.Recheck`), or lacks it when the cell has no catalogued task (then
    nbgrader's score stands).  A cell scores its points only when both pass; the re-check failing
    gives 0 (a passed notebook test beside a failed re-check is flagged: the notebook's test was
    fooled or the answer depends on the test's inputs); the notebook's test failing keeps
    nbgrader's (partial) score.  Either disagreement is said in the task's note, the feedback's line for the
    task (issue 41: a verdict must not depend on which inputs were drawn; when it does, the student reads so).
    """
    out = Final()
    for gid in tasks:
        mx = maxes.get(gid, 0.0)
        nb = nb_scores.get(gid, 0.0)
        verdict = verdicts.get(gid)
        if verdict is None:
            out.scores[gid] = nb
            continue
        ok_nb = nb >= mx - 1e-9
        if verdict.passed:
            out.scores[gid] = mx if ok_nb else nb
            if not ok_nb:
                out.task_notes[gid] = ("the notebook's test failed while the re-check passed: the two disagree "
                                       "(see the feedback)")
            continue
        out.scores[gid] = 0.0
        out.task_notes[gid] = f"re-check: {verdict.reason}" + (" (the notebook's test passed: the two disagree)"
                                                               if ok_nb else "")
        if ok_nb:
            out.flags.append(f"{gid}: notebook test passed but the re-check failed ({verdict.reason[:160]})")
    return out
