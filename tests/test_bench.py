"""The bench harness: table formatting, machine description, one tiny figure (no timing is asserted)."""

import os

import numpy as np
import pytest

from attn_book.timing import compare_times, median_time, peak_bytes
from bench import Row, format_results, format_table, machine_description, parse_results, ratio, skipped
from bench.figures import FIGURES
from bench.speed import fig_sdpa


def test_row_results_and_table():
    rows = [Row("a ÷ b", "n = 4", ratio(1.234), "≤ 1.5×", True, "x | y"),
            Row("c", "n = 8", ratio(2.0), "≤ 1.5×", False), Row("d", "n = 16", "3.0 s"), skipped("e", "not present")]
    assert [r.result for r in rows] == ["pass", "miss", "reported", "skipped"]
    table = format_table(rows).splitlines()
    assert len(table) == 2 + len(rows)
    assert table[2].startswith("| a ÷ b | n = 4 | 1.23× | ≤ 1.5× | pass |")
    assert "x \\| y" in table[2]  # a pipe in a note does not split the row
    assert all(line.count(" | ") == 5 for line in table[2:])


def test_results_file_names_machine_and_counts():
    machine = machine_description()
    assert {"CPU", "NumPy", "PyTorch", "NumPy BLAS (threadpoolctl)"} <= set(machine)
    text = format_results([Row("a", "s", "1.00×", "≤ 2×", True), Row("b", "s", "3.00×", "≤ 2×", False)], machine,
                          12.0, ["--quick"])
    assert "1 targets met, 1 missed" in text and machine["CPU"] in text and "| a | s | 1.00× |" in text


def test_tiny_sdpa_figure_runs():
    rows = fig_sdpa(True, sizes=[16], thread_counts=(1,))
    assert len(rows) == 1 and rows[0].measured.endswith("×") and rows[0].result == "reported"
    assert float(rows[0].measured.rstrip("×")) > 0
    assert set(FIGURES) == {"sdpa", "loop", "banded", "blocked", "peak", "kernel", "feedback", "selfcheck", "book",
                            "grading", "sandbox", "scale", "regrade"}


def test_timing_helpers_return_medians_and_peaks():
    calls = []
    med = compare_times({"a": lambda: calls.append("a"), "b": lambda: calls.append("b")}, repeat=3, warmup=1)
    assert calls == ["a", "b"] * 4  # interleaved rounds: warm-up, then three
    assert set(med) == {"a", "b"} and all(t >= 0 for t in med.values())
    assert median_time(lambda: None, repeat=3) >= 0
    assert peak_bytes(lambda: np.ones(1 << 20)) >= 8 << 20  # 1 Mi float64 = 8 MiB, seen by tracemalloc


def test_results_round_trip_for_only_runs():
    from bench.figures import TITLES

    rows = [Row(TITLES["sdpa"], "n = 4", "1.23×", "≤ 1.5×", True, "a | b"), Row(TITLES["loop"], "n = 8", "9.00×")]
    text = format_results(rows, {"CPU": "x"}, 3.0, ["--only", "sdpa"], runs=["`python -m bench`: 10 s"])
    parsed, runs = parse_results(text)
    assert parsed == rows
    assert runs[0] == "`python -m bench`: 10 s" and runs[1].startswith("`python -m bench --only sdpa`: 3 s")
    assert set(TITLES) == set(FIGURES)


def _children() -> set[int]:
    """The process ids of this process's living children (Linux /proc)."""
    import os

    kids = set()
    for entry in os.listdir("/proc"):
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1] == str(os.getpid()) and fields[0] != "Z":  # ppid; a zombie is not running
            kids.add(int(entry))
    return kids


def test_busy_runs_the_figures_beside_cpu_bound_processes(monkeypatch, capsys):
    import bench.__main__ as cli

    before, seen = _children(), []

    def figure(quick):
        seen.append(_children() - before)
        return [Row("x", "s", "1.00×")]

    monkeypatch.setattr(cli, "FIGURES", {"sdpa": figure})
    assert cli.main(["--only", "sdpa", "--busy", "2", "--output", "-"]) == 0
    assert len(seen) == 1 and len(seen[0]) == 2, seen  # two processes while the figure ran
    assert not (_children() - before) & seen[0]  # and none left after it
    assert "busy processes beside the run (--busy): 2" in capsys.readouterr().out


def test_a_failed_book_build_is_a_failed_row_never_a_pass():
    from bench.book import book_rows

    log = "1 warnings/errors, first: step_by_step.md:42: WARNING: 'myst' cross-reference target not found"
    rows = book_rows({"cold": (143.0, 18.0, 1, log), "warm": (4.0, 5.0, 0, "")})
    assert [r.result for r in rows] == ["failed", "pass", "failed", "pass"]  # fast, but the cold build failed
    assert "exited with 1" in rows[0].note and "target not found" in rows[0].note
    text = format_results(rows, {"CPU": "x"}, 3.0, ["--only", "book"])
    assert "2 targets met, 0 missed, 2 failed" in text
    parsed, _ = parse_results(text)
    assert [r.result for r in parsed] == ["failed", "pass", "failed", "pass"]


@pytest.mark.slow  # starts a kernel: about 4 s
def test_the_bench_builds_the_book_with_make_books_kernel_backend(monkeypatch):
    """The bench's cold build failed where make book passed because it set MPLBACKEND=Agg: the kernels then
    display no figure, and a link to another page's figure by name finds no target.  Its environment
    leaves MPLBACKEND unset, and a kernel started with it displays a figure."""
    import nbformat
    from nbclient import NotebookClient

    from bench.book import build_env

    monkeypatch.setenv("MPLBACKEND", "Agg")  # as the tests (conftest.py) and the old bench had it
    env = build_env()
    assert "MPLBACKEND" not in env
    for name in set(os.environ) - set(env):  # the kernel starts in the bench's environment
        monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import matplotlib.pyplot as plt\nplt.plot([0, 1])\nplt.show()")])
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert any("image/png" in o.get("data", {}) for o in nb.cells[0].outputs), nb.cells[0].outputs
