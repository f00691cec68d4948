"""The solutions, read from their single source: the answer cells of solutions/<ps>/<ps>.ipynb.

Each task's solution is the cell whose nbgrader grade_id is ``<func_name>_answer``; the catalogues
(attn_grader/catalogue) hold the mistakes only.
"""

from __future__ import annotations

import functools
import importlib
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
ASSIGNMENTS = sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir())


@functools.cache
def cells(assignment: str) -> dict[str, str]:
    """grade_id -> source of every nbgrader cell of the assignment's source notebook."""
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nbformat.read(path, as_version=4).cells
            if c.metadata.get("nbgrader", {}).get("grade_id")}


@functools.cache
def solutions(assignment: str) -> dict[str, str]:
    """func_name -> the source of its answer cell, for every task of the assignment, in the catalogue's order."""
    found = cells(assignment)
    tasks = importlib.import_module(f"attn_grader.catalogue.{assignment}").TASKS
    missing = [t.func_name for t in tasks if f"{t.func_name}_answer" not in found]
    assert not missing, f"solutions/{assignment}: no answer cell for {missing}"
    return {t.func_name: found[f"{t.func_name}_answer"] for t in tasks}


def solution(assignment: str, func_name: str) -> str:
    return solutions(assignment)[func_name]


def all_answers(assignment: str) -> str:
    """Every answer cell, in order (a later task may call an earlier answer)."""
    return "\n".join(solutions(assignment).values())


def other_answers(assignment: str, func_name: str) -> str:
    """Every answer cell but ``func_name``'s: what runs before a mistake put in that cell."""
    return "\n".join(src for name, src in solutions(assignment).items() if name != func_name)


@functools.cache
def points_by_hand(assignment: str) -> float:
    """The points of the assignment's markdown grade cells (its written answer, issue 41): a person grades them
    in the formgrader; no automatic run gives them, so a right submission's total is the maximum less these."""
    path = ROOT / "solutions" / assignment / f"{assignment}.ipynb"
    return sum(c.metadata["nbgrader"].get("points", 0) for c in nbformat.read(path, as_version=4).cells
               if c.cell_type == "markdown" and c.metadata.get("nbgrader", {}).get("grade"))
