"""Authoring: the instructor's tools around grading.

:mod:`.release` regenerates ``exercises/`` from ``solutions/`` (``make release``); :mod:`.bilingual` makes
the exercise notebooks' text cells bilingual from the gettext catalogues (``make translations``,
``make release``); :mod:`.demo` builds a demo class and grades it the real way (``make grade-demo``).

The top stage: it uses the run (the demo grades with it, the release uses nbgrader's side of the course);
nothing of the grader imports it.
"""
