"""The chapters that time things execute on a busy machine: beside two CPU-bound processes (as on a
laptop doing other work, load about 3 on 2 cores) no assertion on a measured time fails and no cell
runs past the book's cell timeout.  The book's speed claims are measured in CPU time on one thread
(attn_book.timing.fastest_times) and what they assert keeps a wide margin; this checks it.

Each chapter is executed as the book build executes it (its MyST source read by jupytext, run by
nbclient in book/, the book's cell timeout), one after the other on one worker.
"""

from __future__ import annotations

import os
from pathlib import Path

import jupytext
import pytest
import yaml
from nbclient import NotebookClient

from attn_book.timing import busy_processes

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
#: the chapters that measure a time (and assert on what they measure, or print it)
TIMING_CHAPTERS = ["efficient", "rnn"]
CELL_TIMEOUT = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]["timeout"]

pytestmark = pytest.mark.xdist_group("busy machine")  # one chapter at a time, on one worker


def execute_chapter(name: str):
    """The chapter book/<name>.md executed top to bottom in a fresh kernel, as the book build does;
    raises nbclient's CellExecutionError (with the failing cell) on the first error."""
    nb = jupytext.read(BOOK / f"{name}.md")
    NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                   resources={"metadata": {"path": str(BOOK)}}).execute()
    return nb


def test_the_chapter_list_holds_every_chapter_that_times_something():
    timing = {p.stem for p in BOOK.glob("*.md")
              if any(word in p.read_text() for word in ("attn_book.timing", "perf_counter"))}
    assert timing == set(TIMING_CHAPTERS), timing ^ set(TIMING_CHAPTERS)


@pytest.mark.slow
@pytest.mark.parametrize("name", TIMING_CHAPTERS)
def test_a_timing_chapter_executes_beside_two_busy_processes(name, monkeypatch):
    monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel draws inline, as in the book build
    with busy_processes(2) as pids:
        assert all(os.path.exists(f"/proc/{pid}") for pid in pids)
        nb = execute_chapter(name)
        assert all(os.path.exists(f"/proc/{pid}") for pid in pids), "a busy process ended early"
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors, errors
    assert sum(c.cell_type == "code" and bool(c.get("outputs")) for c in nb.cells) > 3, "nothing ran"
