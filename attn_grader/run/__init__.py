"""The run: ``make grade`` from its command line to the files it writes.

    python -m attn_grader.run.autograde [--jobs N | --scheduler URL] [--assignment PS] ...   # make grade

One submission, top down: :mod:`.autograde` (the command line, :func:`~.autograde.grade`) starts
:mod:`.grading`, the run in the one writer (the course lock, the scratch folder, the journal an interrupted
run resumes from), which reads every submission once (:mod:`.discover`), sanitises it
(:mod:`attn_grader.isolation.sanitize`) and hands the class in batches to Dask (:mod:`.cluster`).  On a
worker, :mod:`.batch` runs nbgrader's autograde with every kernel in the sandbox
(:mod:`attn_grader.isolation`), then the re-check and the final scores (:mod:`attn_grader.checking`), and
returns a :class:`~attn_grader.reports.result.Result`; back in the writer, :mod:`attn_grader.reports` writes
the gradebook, ``grades.csv``, the feedback and the class report.  :mod:`.course` is nbgrader's side of a
course (the options, the configuration, the template gradebook, a submission's scores in the gradebook),
:mod:`.patches` every change the grader makes to third-party code (imported first, before nbformat).

Above every stage but the instructor's tools (:mod:`attn_grader.authoring`); the arrows are contracts in
``pyproject.toml`` (``lint-imports``).
"""
