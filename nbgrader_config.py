"""nbgrader course configuration: sources in solutions/, releases in exercises/.

Used by the plain ``nbgrader`` commands (generate_assignment, ...).  ``make grade``
(attn_grader.autograde) grades in scratch courses with the same settings plus its own
contained executor (per-cell timeout, notebook budget, memory limit): see book/for_instructors.md.
"""

c = get_config()  # noqa: F821 - provided by nbgrader/traitlets when this file is loaded

c.CourseDirectory.course_id = "self-attention-step-by-step"
c.CourseDirectory.source_directory = "solutions"
c.CourseDirectory.release_directory = "exercises"
c.CourseDirectory.root = "."
# Restore test cells a student deleted, and lock cells to their source.
c.OverwriteCells.add_missing_cells = True
# An honest answer finishes in well under a second; a cell gets 60 s before it is interrupted.
c.ExecutePreprocessor.timeout = 60
c.ExecutePreprocessor.interrupt_on_timeout = True
# A library warning on stderr must not zero a correct answer.
c.IgnorePattern.enabled = True
c.IgnorePattern.pattern = r"(?s).*"  # every stderr stream; errors are reported as error outputs, not stderr
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\nraise NotImplementedError()"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
