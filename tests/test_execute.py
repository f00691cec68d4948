"""ContainedExecute, the grader's kernel runner, on kernels that fail before the first cell.

A kernel that does not start has run nothing of the student's: the grader starts a second one
rather than scoring the notebook zero.  A kernel that fails twice, or dies once cells have run,
is reported as before (every cell without output gets the reason).
"""

import json
import os
import sys

import nbformat
import pytest
from jupyter_core.utils import run_sync

from attn_grader.isolation.execute import ContainedExecute

pytestmark = pytest.mark.slow

KERNEL = '''
import os, sys
count = os.environ["FLAKY_COUNT"]
failures = int(os.environ["FLAKY_FAILURES"])
n = len(open(count).read()) if os.path.exists(count) else 0
with open(count, "a") as f:
    f.write("x")
if n < failures:
    sys.exit(3)  # dies before it answers kernel_info, as a kernel that could not start
from ipykernel import kernelapp
kernelapp.launch_new_instance()
'''


@pytest.fixture
def flaky_kernel(tmp_path, monkeypatch):
    spec = tmp_path / "jupyter" / "kernels" / "flaky"
    spec.mkdir(parents=True)
    (tmp_path / "flaky_kernel.py").write_text(KERNEL)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(tmp_path / "flaky_kernel.py"), "-f", "{connection_file}"],
        "display_name": "flaky", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("FLAKY_COUNT", str(tmp_path / "starts"))

    def run(failures: int):
        monkeypatch.setenv("FLAKY_FAILURES", str(failures))
        nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)"),
                                             nbformat.v4.new_code_cell("print('second')")])
        ex = ContainedExecute(kernel_name="flaky", timeout=30, startup_timeout=30)
        ex.preprocess(nb, {"metadata": {"path": str(tmp_path)}})
        starts = len((tmp_path / "starts").read_text())
        return nb, ContainedExecute.reports[os.path.realpath(tmp_path)], starts

    return run


def _text(cell) -> str:
    return "".join(o.get("text", "") + o.get("evalue", "") for o in cell.outputs)


def test_a_kernel_that_fails_to_start_once_is_started_again(flaky_kernel):
    nb, report, starts = flaky_kernel(failures=1)
    assert starts == 2
    assert _text(nb.cells[0]).strip() == "42" and _text(nb.cells[1]).strip() == "second"
    assert report["kernel_died"] is None
    assert "kernel failed" in report["restarted"]


def test_a_kernel_that_never_starts_is_reported_in_every_cell(flaky_kernel):
    nb, report, starts = flaky_kernel(failures=5)
    assert starts == 2, "one second try, not more"
    assert report["kernel_died"].startswith("the kernel failed")
    assert report["not_started"] == report["kernel_died"]  # the grader makes the row ungradable, not flagged
    for cell in nb.cells:
        assert cell.outputs[0]["ename"] == "KernelDied", cell.outputs


def test_a_kernel_that_starts_is_started_once(flaky_kernel):
    nb, report, starts = flaky_kernel(failures=0)
    assert starts == 1 and "restarted" not in report
    assert _text(nb.cells[0]).strip() == "42"


def test_the_next_kernel_is_started_ahead_fresh_and_none_outlives_the_batch(flaky_kernel, tmp_path):
    import psutil

    flaky_kernel(failures=0)  # the fixture's kernel spec and environment; one start counted
    ContainedExecute.discard_ahead()
    pids, reports = [], []
    ContainedExecute.to_come = 4  # one more than run: the last notebook starts a kernel nobody uses
    for k in range(3):
        nb = nbformat.v4.new_notebook(cells=[
            nbformat.v4.new_code_cell("import os\nprint(os.getpid())"),
            nbformat.v4.new_code_cell(f"print('planted' in globals())\nplanted = {k}")])
        folder = tmp_path / f"nb{k}"
        folder.mkdir()
        ContainedExecute(kernel_name="flaky", timeout=30, startup_timeout=30).preprocess(
            nb, {"metadata": {"path": str(folder)}})
        pids.append(int(_text(nb.cells[0])))
        assert _text(nb.cells[1]).strip() == "False"  # nothing of the notebook before is in it
        reports.append(ContainedExecute.reports[os.path.realpath(folder)])
    assert [r["started_ahead"] for r in reports] == [False, True, True]
    assert len(set(pids)) == 3
    assert len((tmp_path / "starts").read_text()) == 1 + 4
    ahead = ContainedExecute._ahead
    assert ahead is not None and run_sync(ahead[2].is_alive)()
    box = ahead[0]
    ContainedExecute.discard_ahead()
    assert ContainedExecute._ahead is None and not os.path.exists(box)
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE for p in pids)
