"""Grading: the catalogue of tasks and common mistakes, and the instructor's tools.

The maths of :mod:`attn_ref` never imports this package; this package imports the maths.  A notebook
imports :func:`check` from here.  The grader is in stages, top down (README, "Layout"): ``authoring``
(release, translations, the demo class), ``run`` (``make grade``: the command line, the run, Dask, a
batch), ``checking`` (the task contract, the re-check, the scores) and ``reports`` (results, grades.csv,
feedback, class report, LMS files), ``isolation`` (sanitising, the sandbox, the kernel), ``files`` (safe
reads and writes, the course's secret); ``catalogue`` holds one module per assignment.
"""

from .checking.core import GradingError, Mistake, Task, check, describe_difference, diagnose, get_task, tasks_of

__all__ = ["GradingError", "Mistake", "Task", "check", "describe_difference", "diagnose", "get_task", "tasks_of"]
