"""Shared fixtures. Tolerances of the project: 1e-5 for float32, 1e-10 for float64."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")  # tests draw figures without a screen; the book keeps inline

import numpy as np
import pytest

TOL = {np.float32: 1e-5, np.float64: 1e-10}


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def tol(dtype) -> float:
    return TOL[np.dtype(dtype).type]


#: A test without the slow or browser mark runs in `make check`, the contributors' inner loop, and
#: must take less than this (setup, call and teardown together).
FAST_LIMIT_SECONDS = 2.0


def pytest_terminal_summary(terminalreporter):
    """Names the unmarked (make check) tests that took FAST_LIMIT_SECONDS or more: mark them slow or
    make them faster.  Also prints the sum of the tests' own durations, which, unlike the wall time
    of the run, does not depend on the number of workers (it still grows on a busy machine)."""
    seconds: dict[str, float] = {}
    fast: set[str] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) not in ("setup", "call", "teardown"):
                continue
            seconds[report.nodeid] = seconds.get(report.nodeid, 0.0) + report.duration
            if not {"slow", "browser"} & set(report.keywords):
                fast.add(report.nodeid)
    if not seconds:
        return
    over = sorted(((seconds[n], n) for n in fast if seconds[n] >= FAST_LIMIT_SECONDS), reverse=True)
    terminalreporter.write_line(
        f"test durations summed: {sum(seconds.values()):.1f} s over {len(seconds)} tests "
        f"({sum(seconds[n] for n in fast):.1f} s of them in unmarked tests, the make check set)")
    if over:
        terminalreporter.section(f"unmarked tests over {FAST_LIMIT_SECONDS:.0f} s: mark them slow or make them "
                                 "faster (make check runs every unmarked test)", yellow=True)
        for secs, nodeid in over:
            terminalreporter.write_line(f"{secs:5.1f} s  {nodeid}")
