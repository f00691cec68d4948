"""nbgrader course configuration: sources in solutions/, releases in exercises/.

Used by the plain ``nbgrader`` commands (generate_assignment, autograde, generate_feedback, export: run
``nbgrader generate_assignment --force <assignment>`` once per assignment first, which records it in
gradebook.db and rewrites exercises/ byte for byte, in the language recorded below; docs/grading.md).
``make grade`` (attn_grader.run.autograde) grades in scratch courses with the same settings plus its own
contained executor (per-cell timeout, notebook budget, memory limit): see docs/grading.md.
"""

import os

from nbgrader.converters import GenerateAssignment
from nbgrader.preprocessors import CheckCellMetadata, ClearOutput, DeduplicateIds, OverwriteKernelspec

from attn_grader.authoring.bilingual import OneLanguage
from attn_grader.isolation.nbgrader_cells import OverwriteCellsKeepingHidden

c = get_config()  # noqa: F821 - provided by nbgrader/traitlets when this file is loaded

c.CourseDirectory.course_id = "self-attention-step-by-step"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.root = os.path.dirname(os.path.abspath(__file__))  # absolute: no warning on every command
# `nbgrader export` writes its own CSV beside make grade's grades.csv (flags and reasons), not over it.
c.CsvExportPlugin.to = "nbgrader_grades.csv"
# The releases' text cells: "both" (English, then Chinese), "en" or "zh_CN". `make release LANG=...` writes
# this line, and OneLanguage, nbgrader's last step of generate_assignment, applies it: `nbgrader
# generate_assignment --force` releases in the same language as `make release` (the grading is the same).
c.OneLanguage.language = "both"
c.GenerateAssignment.preprocessors = [*GenerateAssignment.class_traits()["preprocessors"].default(), OneLanguage]
# Restore test cells a student deleted, and lock cells to their source; a released test cell whose
# visible part is untouched gets its hidden tests back without nbgrader's false "checksum has changed"
# warning (nbgrader issue 1961), so that warning now means a cell was edited.
c.OverwriteCells.add_missing_cells = True
c.Autograde.sanitize_preprocessors = [ClearOutput, DeduplicateIds, OverwriteKernelspec,
                                      OverwriteCellsKeepingHidden, CheckCellMetadata]
# An honest answer finishes in well under a second; a cell gets 60 s before it is interrupted.
c.ExecutePreprocessor.timeout = 60
c.ExecutePreprocessor.interrupt_on_timeout = True
# A library warning on stderr must not zero a correct answer.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?s).*"  # every stderr stream; errors are reported as error outputs, not stderr
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
# The feedback page renders its formulas as MathML and loads nothing from the network (no MathJax CDN),
# with colours and markup that pass WCAG 2.1 AA (attn_grader/run/feedback_page.py); make grade uses the same.
c.GenerateFeedback.exporter_class = "attn_grader.run.feedback_page.FeedbackHTML"
# nbgrader's exchange (release_assignment, fetch_assignment, submit, collect, release_feedback): a folder every
# student and the instructor can reach; NBGRADER_EXCHANGE overrides it (docs/grading.md, "A term with
# nbgrader's exchange").
c.Exchange.root = os.environ.get("NBGRADER_EXCHANGE", "/srv/nbgrader/exchange")
# Late submissions: the due date is the gradebook's (nbgrader db assignment add ps04_step_by_step
# --duedate="2027-03-01 17:00 UTC"), extensions per student are in extensions.csv, and the policy is this
# plugin's, read by nbgrader's autograde and by make grade alike: "none", "zero" (nbgrader's), or "per_day"
# (c.LatePenalty.per_day of the score per day or part of one, at most all of it).
c.AssignLatePenalties.plugin_class = "attn_grader.run.late.LatePenalty"
c.LatePenalty.penalty_method = "none"
c.LatePenalty.per_day = 0.1
# make grade's own settings: the book the feedback links to (ATTN_BOOK_URL overrides it), Canvas's assignment
# ids (a column "ps04_step_by_step (1234)" updates that assignment), and the Canvas custom column (e.g.
# "Notes") that gets lateness and the graders' comments ("" for none: an unknown column would become an
# assignment).
c.AttnGrader.book_url = "https://self-attention-step-by-step.github.io/book/"
c.AttnGrader.canvas_ids = {}
c.AttnGrader.canvas_notes_column = ""
