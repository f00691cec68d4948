"""The figures of ``make bench``, by name: each function returns table rows (see :class:`bench.Row`)."""

from __future__ import annotations

from . import REPO, TITLES
from .book import fig_book, fig_feedback, fig_selfcheck
from .grading import fig_grading, fig_sandbox, fig_scale
from .regrade import fig_regrade
from .speed import fig_banded, fig_blocked, fig_kernel, fig_loop, fig_peak, fig_sdpa

__all__ = ["FIGURES", "QUICK_SKIPS", "REPO", "TITLES"]

FIGURES = {
    "sdpa": fig_sdpa,
    "loop": fig_loop,
    "banded": fig_banded,
    "blocked": fig_blocked,
    "peak": fig_peak,
    "kernel": fig_kernel,
    "feedback": fig_feedback,
    "selfcheck": fig_selfcheck,
    "book": fig_book,
    "grading": fig_grading,
    "sandbox": fig_sandbox,
    "scale": fig_scale,
    "regrade": fig_regrade,
}
QUICK_SKIPS = {"book"}  # minutes of work: only in the full run (or with --only book)
