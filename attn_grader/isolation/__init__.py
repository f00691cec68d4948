"""Isolation: what a submission runs in, and what of it comes back.

:mod:`.sanitize` rebuilds a submitted notebook from the release with only the student's answer cells (and
strips active outputs from what is shown back); :mod:`.nbgrader_cells` is nbgrader's ``OverwriteCells``
that puts the released test cells back without its false warning; :mod:`.execute` is nbgrader's Execute
contained (a kernel that dies or hangs costs only its own cells); :mod:`.sandbox` is the bubblewrap sandbox
every kernel and every re-check runs in (a script of the standard library alone: it imports nothing of
ours); :mod:`.kernel` is the grading kernel started inside it, which watches what the submission tries.

Used by the run and by the re-check (:mod:`attn_grader.checking`); never by a report.  It imports only
:mod:`attn_grader.files`.
"""
