"""What students send (issue 31): the grader's memory under each case, measured in a process of its own,
and the feedback's outputs, malformed fields and repeated flags.

A submission must cost the grader a bounded amount of memory whatever it holds: a large honest notebook
(outputs dropped while it is read), a re-check index that names one large array many times (a budget
of bytes per re-check), a kernel message of hundreds of MB (refused by zmq before it is decoded), a
kernel that forks beyond its per-process limit (one memory cgroup for the whole sandbox).  Each test runs
the grader's own code in a fresh Python and reads that process's peak resident memory (``wait4``).
"""

import base64
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

from attn_grader.checking import recheck
from attn_grader.isolation import sandbox
from solutions import points_by_hand

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
A = "ps04_step_by_step"
HONEST = os.path.join(REPO, "tests", "attacks", "a00_honest_prints_warns", A + ".ipynb")
MB = 1 << 20

needs_sandbox = pytest.mark.skipif(sandbox.unusable() is not None and not os.environ.get("CI"),
                                   reason="bubblewrap cannot run here (CI installs it and fails instead)")


HWM = ("\nwith open('/proc/self/status') as _f:\n"
       "    print('HWM', next(int(l.split()[1]) * 1024 for l in _f if l.startswith('VmHWM:')))\n")


def peak_of(code: str, timeout: float = 300) -> tuple[str, int]:
    """Run ``code`` in a fresh Python (this repository importable); its stdout and its own peak resident
    memory (VmHWM: that process alone, not a kernel it started), less the peak of the same Python that only
    imported what ``code`` imports first (its baseline)."""
    def run(src: str) -> tuple[str, int]:
        r = subprocess.run([sys.executable, "-c", src + HWM], cwd=REPO, capture_output=True, text=True,
                           timeout=timeout)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
        out, last = r.stdout.rstrip("\n").rsplit("\n", 1) if "\n" in r.stdout.strip() else ("", r.stdout)
        return out, int(last.split()[1])
    imports = "\n".join(line for line in code.splitlines() if line.startswith(("import ", "from ")))
    _, base = run(imports)
    out, peak = run(code)
    return out, peak - base


def big_honest_notebook(path: str, size: int) -> None:
    """The honest submission with ``size`` bytes of plots in its outputs (4 MB PNGs, as base64)."""
    nb = json.load(open(HONEST))
    png = base64.b64encode(os.urandom(3 * MB)).decode()
    code_cells = [c for c in nb["cells"] if c["cell_type"] == "code"]
    per_cell = max(1, size // (len(png) * len(code_cells)) + 1)
    for c in code_cells:
        c["outputs"] = [{"output_type": "display_data", "metadata": {},
                         "data": {"image/png": png, "text/plain": "<Figure size 640x480 with 1 Axes>"}}] * per_cell
    with open(path, "w") as f:
        json.dump(nb, f)


def test_a_large_notebook_is_read_with_its_outputs_dropped(tmp_path):
    """200 MB of plots: read in a few seconds, the reader's memory far below the file's size, sources intact."""
    path = str(tmp_path / (A + ".ipynb"))
    big_honest_notebook(path, 200 * MB)
    assert os.path.getsize(path) > 200 * MB
    out, extra = peak_of(textwrap.dedent(f"""
        import json, time
        from attn_grader.run.discover import read_notebook
        t = time.monotonic()
        data = read_notebook({path!r}, 1 << 30)
        nb = json.loads(data)
        print(json.dumps({{"seconds": time.monotonic() - t, "bytes": len(data),
                          "sources": [c["source"] for c in nb["cells"]],
                          "outputs": sum(len(c.get("outputs", [])) for c in nb["cells"])}}))
    """))
    got = json.loads(out)
    assert got["outputs"] == 0 and got["bytes"] < MB
    assert got["sources"] == [c["source"] for c in json.load(open(HONEST))["cells"]]
    assert extra < 64 * MB, f"reading a 200 MB notebook took {extra / MB:.0f} MB more"
    assert got["seconds"] < 10  # (0.6 s here; 64 kB reads, ijson's default, took 11 s)


def test_the_notebook_cap_says_how_to_raise_it(tmp_path):
    from attn_grader.files.safeio import Refused
    from attn_grader.run.discover import read_notebook

    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps(json.load(open(HONEST))))
    with pytest.raises(Refused, match="--max-notebook-mb"):
        read_notebook(str(path), 100)
    os.link(path, tmp_path / "second_name.ipynb")  # a second name is read (issue 40: never refuse the original)
    assert json.loads(read_notebook(str(path), 1 << 30))["cells"]


def test_a_deeply_nested_index_is_malformed_not_an_exception(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "index.json").write_text("[" * 300_000 + "]" * 300_000)
    assert "malformed" in recheck._read_index(str(tmp_path))
    (tmp_path / "out" / "index.json").write_text('{"tasks": ' + '{"a": ' * 100_000 + "1" + "}" * 100_001)
    assert "malformed" in recheck._read_index(str(tmp_path))


def test_one_array_named_many_times_is_read_within_the_budget(tmp_path):
    """40 MB on disk named 4,000 times (was: re-read each time, a 2.8 GB grader): at most the budget is read."""
    out = tmp_path / "out"
    out.mkdir()
    np.save(out / "big.npy", np.zeros(5 << 20))  # 40 MB
    many = {"results": [{"array": "big.npy"}] * 1000}
    index = {"tasks": {f"f{i}": many for i in range(4)}}
    (out / "index.json").write_text(json.dumps(index))
    budget = 128 * MB
    text, extra = peak_of(textwrap.dedent(f"""
        import json
        from attn_grader.checking import recheck
        index = recheck._read_index({str(tmp_path)!r})
        outputs = recheck._read_outputs({str(tmp_path)!r}, index, budget={budget})
        read = sum(1 for e in outputs.values() for r in e["results"] if "value" in r)
        print(json.dumps({{"read": read, "malformed": index.get("malformed", "")}}))
    """))
    got = json.loads(text)
    assert got["read"] == budget // (40 * MB + 128) and "budget" in got["malformed"]
    assert extra < budget + 64 * MB, f"the grader held {extra / MB:.0f} MB"


@pytest.mark.slow
def test_a_huge_kernel_message_is_refused_before_it_is_decoded(tmp_path):
    """3 × 350 MB of stdout (was: decoded whole, a 1.7–2.4 GB grader): the grader's sockets to the kernel
    refuse each message on its length, before anything is allocated for it; the grader then stops that
    kernel (its output channel is silent: ContainedExecute's IOPub timeout, tests/test_attacks.py d07)."""
    text, extra = peak_of(textwrap.dedent(f"""
        import json
        from jupyter_client import KernelManager
        from attn_grader.isolation.execute import MAX_MESSAGE, _capped_messages
        km = KernelManager(kernel_name="python3", transport="ipc", connection_file={str(tmp_path / "k.json")!r})
        _capped_messages(km, MAX_MESSAGE)
        km.start_kernel(extra_arguments=["--HistoryManager.hist_file=:memory:"])
        kc = km.client()
        kc.start_channels()
        kc.wait_for_ready(timeout=60)
        kc.execute("for _ in range(3):\\n    print('x' * (350 << 20), flush=True)\\nprint('small', flush=True)")
        reply = kc.get_shell_msg(timeout=240)
        largest = 0
        while True:
            try:
                largest = max(largest, len(json.dumps(kc.get_iopub_msg(timeout=5)["content"])))
            except Exception:
                break
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        print(json.dumps({{"status": reply["content"]["status"], "largest": largest}}))
    """), timeout=400)
    got = json.loads(text)
    assert got["status"] == "ok" and got["largest"] < 8 * MB
    assert extra < 200 * MB, f"the grader held {extra / MB:.0f} MB for 3 x 350 MB of output"


@needs_sandbox
@pytest.mark.skipif(sandbox._own_memory_cgroup() is None or not os.access(sandbox._own_memory_cgroup() or "/", os.W_OK),
                    reason="no memory cgroup can be made here (not root, no delegated cgroup): RLIMIT_AS alone")
def test_a_kernel_and_its_forks_share_one_memory_limit(tmp_path):
    """Three processes of 600 MB each, the per-process limit 1 GB: together 1.8 GB, over the sandbox's 1 GB.
    The sandbox's memory cgroup holds them to it (some are killed); RLIMIT_AS alone would let all three live."""
    code = textwrap.dedent("""
        import os, sys, time
        pids = []
        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                pids = None
                break
            pids.append(pid)
        block = bytearray(600 << 20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(2)
        if pids is None:
            os._exit(0)
        held = 1 + sum(os.waitpid(p, 0)[1] == 0 for p in pids)
        print(held, flush=True)
    """)
    work = tmp_path / "box"
    work.mkdir()
    r = subprocess.run(sandbox.command({"work": str(work), "memory": 1 << 30}, [sys.executable, "-I", "-c", code]),
                       capture_output=True, text=True, timeout=120)
    held = int(r.stdout.strip() or 0)  # the parent killed too: nothing printed, nothing held
    assert held * 600 < 1024, (r.returncode, r.stdout, r.stderr[-300:])


@needs_sandbox
def test_no_variable_of_the_graders_environment_reaches_the_sandbox(tmp_path):
    """bwrap is the sandbox's pid 1, under its uid: its environment is readable there as /proc/1/environ."""
    work = tmp_path / "box"
    work.mkdir()
    env = {**os.environ, "MAKEFLAGS": " -- DB_URL=postgresql://user:hunter2@db/c", "ATTN_SECRET": "hunter2"}
    code = ("import os\nfor p in os.listdir('/proc'):\n    if p.isdigit():\n"
            "        print(open(f'/proc/{p}/environ', 'rb').read())\n")
    r = subprocess.run(sandbox.command({"work": str(work)}, [sys.executable, "-I", "-c", code]),
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0 and "PATH=" in r.stdout, r.stderr
    assert "hunter2" not in r.stdout and "MAKEFLAGS" not in r.stdout and "ATTN_SECRET" not in r.stdout


def _hwm(pid: int) -> int:
    """The peak resident memory of process ``pid`` so far (VmHWM), 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(line.split()[1]) * 1024 for line in f if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return 0


@pytest.mark.slow
@needs_sandbox
def test_a_200_mb_honest_notebook_gets_full_marks(tmp_path):
    """The honest submission with 200 MB of plots: graded in full, every automatic point (was: ungradable,
    "larger than 20971520 bytes"), the grader's own peak memory far below the notebook's size."""
    import csv
    import shutil

    root = tmp_path / "course"
    shutil.copytree(os.path.join(REPO, "solutions", A), root / "solutions" / A)
    sub = root / "submitted" / "ann" / A
    sub.mkdir(parents=True)
    big_honest_notebook(str(sub / (A + ".ipynb")), 200 * MB)
    proc = subprocess.Popen([sys.executable, "-m", "attn_grader.run.autograde", "--course", str(root), "--quiet"],
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _hwm(proc.pid))
        time.sleep(0.1)
    out = proc.stdout.read()
    proc.stdout.close()
    assert proc.returncode == 0, out[-2000:]
    with open(root / "grades.csv", newline="") as f:
        row = next(csv.DictReader(f))
    by_hand = points_by_hand(A)  # the written answer, graded by a person
    assert by_hand > 0 and (row["status"], float(row["total"])) == ("ok", float(row["max"]) - by_hand), row
    assert 0 < peak < 150 * MB + _baseline_grader_peak(tmp_path), f"the grader's peak: {peak / MB:.0f} MB"


def _baseline_grader_peak(tmp_path) -> int:
    """The grader's peak memory for an empty class (its imports, Dask's client): what a notebook adds to."""
    root = tmp_path / "empty"
    import shutil

    shutil.copytree(os.path.join(REPO, "solutions", A), root / "solutions" / A)
    (root / "submitted").mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "import attn_grader.run.grading, attn_grader.run.batch, "
                             "nbgrader.converters, distributed; import time; time.sleep(1)"], cwd=REPO)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, _hwm(proc.pid))
        time.sleep(0.1)
    return peak



def test_outputs_are_rebuilt_inert_and_without_hidden_test_lines():
    """Every output from a student's kernel is rebuilt from an allow-list: markup in an image's data or a
    stream's name is gone, images are re-encoded from their bytes, and no line of the hidden tests shows."""
    import base64

    import nbformat

    from attn_grader.isolation.sanitize import HIDDEN_LINE, clear_hidden_tests, hidden_lines, strip_active_outputs

    test_cell = nbformat.v4.new_code_cell("assert f(1) == 1\n### BEGIN HIDDEN TESTS\ncheck(\"psXX\", \"f\", f)\n"
                                          "### END HIDDEN TESTS")
    hidden = hidden_lines([test_cell])
    assert hidden == ["### BEGIN HIDDEN TESTS", 'check("psXX", "f", f)', "### END HIDDEN TESTS"]
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n...").decode()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("f = lambda x: x"), test_cell])
    nb.cells[0].outputs = [
        {"output_type": "display_data", "metadata": {"x": "<script>"},
         "data": {"image/png": '"><script>alert("XSS-PNG")</script>', "text/html": "<script>alert(1)</script>"}},
        {"output_type": "display_data", "metadata": {}, "data": {"image/png": png + "\n"}},
        {"output_type": "stream", "name": 'x"><script>alert("XSS-NAME")</script>', "text": "hi\n"},
        {"output_type": "stream", "name": "stdout", "text": "\x1b[0;32mcheck\x1b[0m(\"psXX\", \"f\", f)\nkept\n"},
        {"output_type": "error", "ename": "<b>E</b>", "evalue": "v",
         "traceback": ["----> 3 check(\"psXX\", \"f\", f)"]},
        {"output_type": "made_up", "data": "x"},
    ]
    assert strip_active_outputs(nb, hidden) == 2
    clear_hidden_tests(nb)
    outs = nb.cells[0].outputs
    assert outs[0]["data"] == {"text/plain": "[grader: image/png, text/html output not shown]"} and not outs[0].metadata
    assert outs[1]["data"]["image/png"] == png
    assert outs[2]["name"] == "stdout" and outs[3]["text"] == f"{HIDDEN_LINE}\nkept\n"
    assert outs[4]["traceback"] == [HIDDEN_LINE] and outs[5]["output_type"] == "display_data"
    assert nb.cells[1].source == "assert f(1) == 1"
    nbformat.validate(nb)  # (the rendered feedback page: tests/test_attacks.py, b13 and d06)


def test_a_malformed_field_costs_its_submission_and_repeated_flags_are_counted():
    import json

    import nbformat

    from attn_grader.isolation.sanitize import sanitize
    from attn_grader.reports.result import MAX_CHARS, MAX_LINES, bounded
    from attn_grader.run.discover import Submitted

    release = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "x", metadata={"nbgrader": {"grade_id": "f_answer", "solution": True}})])
    release.metadata["kernelspec"] = {"name": "python3"}
    student = json.loads(nbformat.writes(release))
    student["metadata"]["kernelspec"] = "evil"
    student["cells"] += [{"cell_type": "code", "source": "", "outputs": [], "execution_count": None,
                          "metadata": {"nbgrader": {"grade_id": f"u{i}"}}} for i in range(2_000)]
    sub = Submitted("s", "a", "s1", entries=[("a.ipynb", "file")] + [(f"f{i}", "file") for i in range(500)],
                    notebook=json.dumps(student).encode())
    clean = sanitize(sub, {"a.ipynb": release})
    assert clean.notebook is not None and "kernelspec is not a mapping (restored)" in clean.flags
    assert "2,000 unknown cells (dropped): 'u0', 'u1', 'u10', …" in clean.flags  # 40,000: tests/test_attacks.py
    assert "500 extra files (dropped): 'f0', 'f1', 'f2', …" in clean.flags
    student["cells"][0]["metadata"] = ["not", "a", "mapping"]
    broken = sanitize(Submitted("s", "a", "s1", entries=[("a.ipynb", "file")], notebook=json.dumps(student).encode()),
                      {"a.ipynb": release})
    assert broken.notebook is None and broken.reason.startswith(("malformed notebook", "unreadable notebook"))
    lines = bounded([f"flag {i}" for i in range(1000)] + ["x" * 10_000])
    assert len(lines) == MAX_LINES and lines[-1] == "… and 982 more" and max(map(len, lines)) <= MAX_CHARS
