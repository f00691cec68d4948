"""Checking: whether an answer is right, and which mistake it makes.

:mod:`.core` is the contract between the exercise notebooks, the catalogue (:mod:`attn_grader.catalogue`)
and the grader: a task, its catalogued mistakes, and :func:`attn_grader.check`, which a notebook's hidden
test calls.  :mod:`.recheck` runs every answer again outside the student's kernel, in three steps that a
batch (:mod:`attn_grader.run.batch`) takes in order: :func:`~.recheck.cases_for` draws the inputs from the
course's secret, :func:`~.recheck.run` runs the answers in the sandbox through :mod:`.harness` (the one
file bound into it, importing nothing of ours), and :func:`~.recheck.compare` reads the outputs as
untrusted data and compares them with the references.  :mod:`.scores` makes the final scores from the
notebook's tests and the re-check.

It imports the sandbox (:mod:`attn_grader.isolation`) and :mod:`attn_grader.files`; never the run or a
report.
"""
