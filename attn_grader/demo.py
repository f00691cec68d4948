"""``make grade-demo``: build a small demo class and grade it with the real grading path.

    python -m attn_grader.demo [--jobs N] [--course DIR] [--assignment PS]

Eight students hand in the assignment (default ps04_step_by_step, the worked example):
``correct`` and ``correct_too`` (the solution's answers), ``partly_wrong``, ``same_slip`` and
``other_slip`` (catalogued mistakes: the first two make the same one), ``two_slips`` (mistakes in two
tasks), ``blank`` (the release, unanswered) and ``broken`` (a notebook whose JSON is cut off).
The class report (``class_report.html``) ranks the mistakes.  Without ``--course`` the
class is built in _build/grade-demo (solutions/ copied there, replaced on each run) and kept; with
``--course`` the submissions are written into that course's submitted/ folder.
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil

import nbformat

from .autograde import grade
from .core import tasks_of


def answers_of(notebook) -> dict[str, str]:
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in notebook.cells
            if c.metadata.get("nbgrader", {}).get("solution")}


def with_answers(release, answers: dict[str, str]):
    """The release notebook with these answer cells filled in (what a student hands in)."""
    nb = copy.deepcopy(release)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id")
        if gid in answers:
            c.source = answers[gid]
    return nb


def build(root: str, assignment: str, repo: str) -> None:
    src = nbformat.read(os.path.join(repo, "solutions", assignment, assignment + ".ipynb"), as_version=4)
    release = nbformat.read(os.path.join(repo, "exercises", assignment, assignment + ".ipynb"), as_version=4)
    solution = answers_of(src)
    tasks = tasks_of(assignment)
    first, last = tasks[0], tasks[-1]

    def wrong(*slips):
        return with_answers(release, dict(solution, **{f"{t.func_name}_answer": t.mistakes[k % len(t.mistakes)].source
                                                       for t, k in slips}))

    for student, nb in (("correct", with_answers(release, solution)), ("correct_too", with_answers(release, solution)),
                        ("partly_wrong", wrong((first, 0))), ("same_slip", wrong((first, 0))),
                        ("other_slip", wrong((first, 1))), ("two_slips", wrong((first, 0), (last, 0))),
                        ("blank", release)):
        d = os.path.join(root, "submitted", student, assignment)
        os.makedirs(d, exist_ok=True)
        nbformat.write(nb, os.path.join(d, assignment + ".ipynb"))
    d = os.path.join(root, "submitted", "broken", assignment)
    os.makedirs(d, exist_ok=True)
    text = nbformat.writes(with_answers(release, solution))
    with open(os.path.join(d, assignment + ".ipynb"), "w") as f:
        f.write(text[: len(text) // 2])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="grade a small demo class")
    p.add_argument("--jobs", type=int, default=1)
    p.add_argument("--course", help="write the demo submissions into this course "
                                     "(default: a fresh demo course in _build/grade-demo, kept for reading)")
    p.add_argument("--assignment", default="ps04_step_by_step")
    args = p.parse_args(argv)
    repo = os.path.realpath(".")
    if args.course:
        root = os.path.realpath(args.course)
    else:
        root = os.path.join(repo, "_build", "grade-demo")
        shutil.rmtree(root, ignore_errors=True)
        os.makedirs(os.path.join(root, "solutions"))
        shutil.copytree(os.path.join(repo, "solutions", args.assignment),
                        os.path.join(root, "solutions", args.assignment))
    build(root, args.assignment, repo)
    grade(root, jobs=args.jobs, only=[args.assignment])
    print("\ngrades.csv:")
    with open(os.path.join(root, "grades.csv")) as f:
        print(f.read())
    print(f"Read them: {os.path.join(root, 'grades.csv')}, {os.path.join(root, 'grading_report.md')}, "
          f"{os.path.join(root, 'class_report.html')} (open it in a browser), "
          f"feedback HTML under {os.path.join(root, 'feedback')}/")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
