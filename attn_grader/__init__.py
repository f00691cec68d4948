"""Grading: the catalogue of tasks and common mistakes, and the instructor's tools.

The maths of :mod:`attn_ref` never imports this package; this package imports the maths.
"""

from .checking.core import GradingError, Mistake, Task, check, describe_difference, diagnose, get_task, tasks_of

__all__ = ["GradingError", "Mistake", "Task", "check", "describe_difference", "diagnose", "get_task", "tasks_of"]
