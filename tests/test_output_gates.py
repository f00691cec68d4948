"""The gates between a student's kernel and the feedback (issue 40): output caps counted per iopub message,
nothing shown that ran with or after hidden tests, no live output in the page, PyTorch's attention blocked
by what is imported.  (The whole path, in one class: tests/test_attacks.py, e03 to e07.)"""

import os
import subprocess
import sys

import nbformat
import pytest
from nbclient.client import NotebookClient

from attn_grader.isolation.execute import ContainedExecute
from attn_grader.isolation.sanitize import AFTER_HIDDEN, HIDDEN_OUTPUT, feedback_safe, hide_after_hidden_tests

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KB = 1 << 10


def _executor(nb) -> ContainedExecute:
    ex = ContainedExecute(max_output_bytes=2_000_000, kill_output_bytes=50_000_000)
    NotebookClient.__init__(ex, nb, None)
    ex.reset_execution_trackers()
    ex.clear_before_next_output = False
    ex._output_bytes, ex._output_truncated, ex._killed_for_output = 0, False, False
    ex._kill_kernel = lambda: setattr(ex, "killed", True)
    return ex


def _msg(kind: str, content: dict, buffers=()) -> dict:
    return {"msg_type": kind, "header": {"msg_type": kind}, "parent_header": {}, "content": content,
            "buffers": list(buffers)}


def _display(i: int, text: str, kind: str = "display_data") -> dict:
    return _msg(kind, {"data": {"text/plain": text}, "metadata": {}, "transient": {"display_id": f"d{i}"}})


@pytest.mark.parametrize("flood", ["display updates", "one id shown many times", "comm data", "comm buffers",
                                   "clear_output", "execute results"])
def test_every_message_that_carries_output_counts_against_the_caps(flood):
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x"), nbformat.v4.new_code_cell("y")])
    ex = _executor(nb)
    cell = nb.cells[0]
    if flood == "display updates":  # 28 small displays, each updated with 256 kB (nbclient never calls output())
        msgs = [_display(i, "small") for i in range(28)] + [_display(i, "U" * (256 * KB), "update_display_data")
                                                             for i in range(28)]
    elif flood == "one id shown many times":  # an update is written into every output with its id
        msgs = [_display(0, "small") for _ in range(200)] + [_display(0, "U" * (64 * KB), "update_display_data")]
    elif flood == "comm data":
        msgs = [_msg("comm_msg", {"comm_id": "c", "data": {"x": "C" * (256 * KB)}}) for _ in range(40)]
    elif flood == "comm buffers":
        msgs = [_msg("comm_msg", {"comm_id": "c", "data": {}}, [b"B" * (256 * KB)]) for _ in range(40)]
    elif flood == "clear_output":
        msgs = [_msg("clear_output", {"wait": False}) for _ in range(20_000)]
    else:
        msgs = [_msg("execute_result", {"data": {"text/plain": "R" * (256 * KB)}, "metadata": {},
                                        "execution_count": 1}) for _ in range(40)]
    for m in msgs:
        ex.process_message(m, cell, 0)
    assert ex._output_truncated, "the flood was not counted"
    assert len(nbformat.writes(nb)) < 3_000_000
    ex.process_message(_msg("error", {"ename": "AssertionError", "evalue": "x" * 100_000, "traceback": ["t"] * 9}),
                       cell, 0)
    errors = [o for o in cell.outputs if o.output_type == "error"]
    assert errors and errors[-1].ename == "AssertionError" and len(errors[-1].evalue) < 100  # kept: it scores


def _graded_notebook(hook_text: str):
    """An autograded notebook as nbgrader leaves it: an answer, a test cell with its hidden tests, an answer."""
    nbg = {"grade": False, "solution": True, "grade_id": "f_answer", "locked": False}
    test = {"grade": True, "solution": False, "grade_id": "f_test", "locked": True, "points": 1}
    cells = [nbformat.v4.new_code_cell("def f(): ...", metadata={"nbgrader": nbg}, outputs=[
                 nbformat.v4.new_output("stream", name="stdout", text="mine, before any test\n")]),
             nbformat.v4.new_code_cell("assert f() is None\n### BEGIN HIDDEN TESTS\nassert f() != 42\n"
                                       "### END HIDDEN TESTS", metadata={"nbgrader": test}, outputs=[
                 nbformat.v4.new_output("stream", name="stdout", text=hook_text),
                 nbformat.v4.new_output("error", ename="AssertionError", evalue=hook_text, traceback=[hook_text])]),
             nbformat.v4.new_code_cell("print(kept)", metadata={"nbgrader": {**nbg, "grade_id": "g_answer"}},
                                       outputs=[nbformat.v4.new_output("stream", name="stdout", text=hook_text)])]
    meta = {"widgets": {"state": "<script>alert(1)</script>"}, "kernelspec": {"name": "py", "display_name": "Py"}}
    return nbformat.v4.new_notebook(cells=cells, metadata=meta)


def test_nothing_printed_with_or_after_hidden_tests_is_shown_in_any_encoding():
    import base64

    secret = "assert f() != 42"
    for encoded in (secret, base64.b64encode(secret.encode()).decode(), secret[::-1], " ".join(secret)):
        nb = _graded_notebook(f"In[2]: {encoded}\n")
        feedback_safe(nb)
        shown = nbformat.writes(nb)
        assert encoded not in shown and "BEGIN HIDDEN" not in shown and "widgets" not in shown
        assert nb.cells[0].outputs[0].text == "mine, before any test\n"  # before the first test: the student's own
        assert nb.cells[1].outputs[0].text.startswith(HIDDEN_OUTPUT) and "AssertionError" in nb.cells[1].outputs[0].text
        assert nb.cells[2].outputs[0].text.startswith(AFTER_HIDDEN)
        assert hide_after_hidden_tests(nb) == 0  # a second pass (the page's own gate) changes nothing


def test_the_feedback_page_runs_no_output_of_any_type():
    from bs4 import BeautifulSoup
    from test_feedback_pages import _exporter

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("show()")])
    nb.cells[0].outputs = [nbformat.v4.new_output("display_data", data={
        "text/html": "<script>document.title='PWNED'</script>", "application/javascript": "alert(1)",
        "image/svg+xml": "<svg onload=alert(2)></svg>", "text/markdown": "<iframe src=javascript:alert(3)>",
        "text/latex": r"$\text{<img src=x onerror=alert(4)>}$", "text/plain": "plain"})]
    page, _ = _exporter().from_notebook_node(nb, resources={"nbgrader": {"notebook": "x", "score": 1, "max_score": 2,
                                                                         "late_penalty": 0}})
    soup = BeautifulSoup(page, "html.parser")
    assert "PWNED" not in page and "alert(" not in page
    assert not soup.find_all(["iframe", "svg", "object", "embed"]) and not soup.select("body script")
    assert [t.name for t in soup.find_all(True) if any(a.lower().startswith("on") for a in t.attrs)] == []


HARNESS = os.path.join(REPO, "attn_grader", "checking", "harness.py")
GUARD = f"""
import importlib, sys
sys.path.insert(0, {os.path.dirname(HARNESS)!r})
import harness
guard, _ = harness.torch_guard()
sys.meta_path.insert(0, guard)
"""


@pytest.mark.slow
@pytest.mark.parametrize("how", ['__import__("to" + "rch")', 'importlib.import_module("".join(["to", "rch"]))',
                                 'importlib.import_module("torch.nn.functional")'])
def test_pytorch_attention_is_blocked_however_it_is_imported(how):
    code = GUARD + f"""
{how}
F = sys.modules["torch.nn.functional"] if "torch.nn.functional" in sys.modules else importlib.import_module(
    "torch.nn.functional")
t = sys.modules["torch"].ones(1, 2, 3)
try:
    F.scaled_dot_product_attention(t, t, t)
    print("RAN")
except RuntimeError:
    print("BLOCKED", harness.torch_loaded())
"""
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=600).stdout
    assert out.split() == ["BLOCKED", "True"], out


@pytest.mark.slow
def test_pytorch_imported_past_the_guard_is_seen():
    code = GUARD + """
print(harness.torch_loaded())
sys.meta_path[:] = [f for f in sys.meta_path if f is not guard]
import torch
print(harness.torch_loaded())
"""
    out = subprocess.run([sys.executable, "-I", "-c", code], capture_output=True, text=True, timeout=600).stdout
    assert out.split() == ["False", "True"], out
