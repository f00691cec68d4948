"""``make bench``: ratios measured side by side, written to bench/results.md with the machine's description.

    python -m bench                 # every figure (about 15 minutes: it builds the book and grades a class)
    python -m bench --quick         # smaller sizes, no book build, a small class
    python -m bench --only blocked  # one figure (repeatable): sdpa, loop, banded, blocked, peak, kernel,
                                    # feedback, selfcheck, book, grading, sandbox, scale
    python -m bench --only book --busy 2  # beside two CPU-bound processes, as on a busy machine
                                          # (make bench BUSY=2): the cold book build must still succeed

The machine is shared and noisy, so every figure is a **ratio** of two things measured in the same
run, in interleaved rounds (each round runs every contender once; the median per contender is kept):
a burst of load from another process slows both sides of a ratio alike.  The few absolute figures
(student feedback, book build) are wall times of one user-facing action.  No test ever asserts a
time; tests/test_bench.py only checks the harness.
"""

from __future__ import annotations

import os
import platform
from dataclasses import dataclass

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: The title each figure gives its rows (``--only`` replaces the rows with these titles in results.md).
TITLES = {
    "sdpa": "numpy attention ÷ SDPA",
    "loop": "loop ÷ matrix form",
    "banded": "truncated attention growth",
    "blocked": "blocked_attention ÷ SDPA (4-D)",
    "peak": "share of the machine's peak",
    "kernel": "tuned kernel, step by step",
    "feedback": "student feedback",
    "selfcheck": "self-check",
    "book": "book build",
    "grading": "grading cost",
    "sandbox": "grading sandbox",
    "scale": "grading a large class",
    "regrade": "regrading one resubmission",
}


@dataclass
class Row:
    """One line of the table: what was measured, the figure, the target and whether it was met."""

    figure: str  # the figure's name, e.g. "numpy attention ÷ SDPA"
    setting: str  # e.g. "n = 1024, d = 64, 1 thread"
    measured: str  # the formatted measurement, e.g. "1.21×"
    target: str = ""  # e.g. "≤ 1.5×"; empty when the figure is only reported
    ok: bool | None = None  # True pass, False miss, None reported (no target) or skipped
    note: str = ""  # e.g. the absolute times behind a ratio, or why a row was skipped
    failed: bool = False  # the action measured failed (a build that exited non-zero): no figure, never a pass

    def __post_init__(self):
        if self.failed:
            self.ok = False

    @property
    def result(self) -> str:
        if self.failed:
            return "failed"
        if self.ok is None:
            return "skipped" if self.measured == "—" else "reported"
        return "pass" if self.ok else "miss"


def ms(seconds: float) -> str:
    """A time as the table prints it: `12.3 ms`, or `12.3 s` from ten seconds on."""
    return f"{1e3 * seconds:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


def ratio(x: float) -> str:
    """A ratio as the table prints it: ``1.23×``."""
    return f"{x:.2f}×"


def skipped(figure: str, reason: str) -> Row:
    return Row(figure, "", "—", "", None, reason)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def format_table(rows: list[Row]) -> str:
    """The rows as one GitHub-flavoured markdown table."""
    lines = ["| figure | setting | measured | target | result | notes |", "|---|---|---:|---|---|---|"]
    for r in rows:
        lines.append("| " + " | ".join(_cell(c) for c in (r.figure, r.setting, r.measured, r.target, r.result,
                                                           r.note)) + " |")
    return "\n".join(lines)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (or platform.processor() elsewhere)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def machine_description() -> dict[str, str]:
    """CPU, cores, load, library versions and the BLAS that NumPy uses (threadpoolctl)."""
    import numpy as np
    import threadpoolctl
    import torch

    blas = [f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture', '?')} kernel, "
            f"{i.get('num_threads')} threads)" for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    try:
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    return {
        "CPU": cpu_model(),
        "cores (os.cpu_count)": str(os.cpu_count()),
        "load average (1, 5, 15 min) at start": load,
        "Python": platform.python_version(),
        "NumPy": np.__version__,
        "PyTorch": torch.__version__,
        "NumPy BLAS (threadpoolctl)": "; ".join(blas) or "none found",
        "PyTorch CPU capability": str(getattr(torch.backends.cpu, "get_cpu_capability", lambda: "?")()),
        "OPENBLAS_CORETYPE": os.environ.get("OPENBLAS_CORETYPE", "(not set)"),
    }


def describe_run(argv: list[str], seconds: float, machine: dict[str, str]) -> str:
    """One line of the results' "Runs" section."""
    import datetime

    when = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    cmd = " ".join(["python -m bench", *argv])
    return f"`{cmd}`: {seconds:.0f} s, finished {when}, load average at start {machine.get(LOAD, '?')}"


LOAD = "load average (1, 5, 15 min) at start"


def format_results(rows: list[Row], machine: dict[str, str], seconds: float, argv: list[str],
                   runs: list[str] | None = None) -> str:
    """The whole bench/results.md: the runs behind it, the machine, the table.

    ``runs``: lines describing earlier runs whose rows are kept (``--only`` replaces the rows of its
    figures and keeps the others).
    """
    misses = sum(r.ok is False and not r.failed for r in rows)
    passes = sum(r.ok is True for r in rows)
    failures = sum(r.failed for r in rows)
    runs = [*(runs or []), describe_run(argv, seconds, machine)]
    head = [
        "# Benchmark results",
        "",
        f"{passes} targets met, {misses} missed"
        + (f", {failures} failed (the action measured did not succeed)" if failures else "")
        + ". Each ratio is measured side by side in the same run (interleaved rounds, median); the machine is "
        "shared with other jobs, so absolute times are only context.",
        "",
        "## Runs",
        "",
        *[f"- {r}" for r in runs],
        "",
        "## Machine (at the last run)",
        "",
    ]
    head += [f"- {k}: {v}" for k, v in machine.items()]
    return "\n".join(head + ["", "## Figures", "", format_table(rows), ""])


def parse_results(text: str) -> tuple[list[Row], list[str]]:
    """The rows and run lines of a results.md written by :func:`format_results` (to merge an ``--only`` run)."""
    import re

    rows, runs, section = [], [], ""
    for line in text.splitlines():
        if line.startswith("## "):
            section = line[3:]
        elif section == "Runs" and line.startswith("- "):
            runs.append(line[2:])
        elif not section and line.startswith("`python -m bench"):  # the first format: one paragraph line
            runs.append(line.split(". ")[0])
        elif section == "Figures" and line.startswith("| ") and not line.startswith(("| figure |", "|---")):
            cells = [c.strip().replace("\\|", "|") for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
            if len(cells) == 6:
                figure, setting, measured, target, result, note = cells
                ok = {"pass": True, "miss": False, "failed": False}.get(result)
                rows.append(Row(figure, setting, measured, target, ok, note, failed=result == "failed"))
    return rows, runs
