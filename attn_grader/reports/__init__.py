"""Reports: what grading tells the instructor, the students and the learning-management system.

:mod:`.result` is what grading one submission produced (kept in ``grading_results.json``); :mod:`.record`,
in the one writer, writes the gradebook, ``grades.csv``, ``grading_report.md`` and the feedback;
:mod:`.classreport` writes ``class_report.html``; :mod:`.lms` the grades Canvas and Moodle import.

A report runs nothing: it imports neither the sandbox (:mod:`attn_grader.isolation`) nor the re-check
(:mod:`attn_grader.checking`), only :mod:`attn_grader.files` (a contract in ``pyproject.toml``).
"""
