"""The grader's pieces on their own: the sandbox, safe reads, final scores, escaping, the re-check's guards.

(tests/test_attacks.py grades whole hostile classes through all of them together.)
"""

import csv
import io
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from attn_grader.checking import recheck
from attn_grader.checking.scores import final_scores
from attn_grader.files.safeio import Refused, list_folder, read_regular, write_atomic
from attn_grader.isolation import sandbox
from attn_grader.reports import record
from attn_grader.reports.result import Result

needs_sandbox = pytest.mark.skipif(sandbox.unusable() is not None and not os.environ.get("CI"),
                                   reason="bubblewrap cannot run here (CI installs it and fails instead)")


# The top folders of the Python installation, the virtualenv and the packages (bound at their own paths).
TOPS = {p.strip("/").split("/")[0] for p in [*sandbox.python_roots(), os.path.dirname(recheck.__file__)]}


def _in_box(tmp_path, code: str, **spec) -> subprocess.CompletedProcess:
    work = tmp_path / "box"
    work.mkdir(exist_ok=True)
    return subprocess.run(sandbox.command({"work": str(work), **spec}, [sys.executable, "-I", "-c", code]),
                          capture_output=True, text=True, timeout=120)


# ----------------------------------------------------------------------------------------- sandbox

def _probe(tmp_path, extra: str = "") -> str:
    """Code that reports, as JSON, what a sandboxed process is and can reach (an instructor's file in
    ``tmp_path`` among it) and writes ``written`` in its working folder."""
    secret = tmp_path / "instructor.txt"
    secret.write_text("solution")
    return ("import os, json, socket\n"
            "out = {'uid': os.getuid(), 'root': sorted(os.listdir('/')), 'cwd': os.getcwd(),\n"
            "       'pids': sorted(int(p) for p in os.listdir('/proc') if p.isdigit())}\n"
            f"try:\n    open({str(secret)!r}).read(); out['read'] = True\nexcept OSError:\n    out['read'] = False\n"
            "s = socket.socket(); out['net'] = s.connect_ex(('127.0.0.1', 5432)); s.close()\n"
            "try:\n    import attn_ref; out['attn_ref'] = True\nexcept ImportError:\n    out['attn_ref'] = False\n"
            "open('written', 'w').write('x')\n"
            f"{extra}\nprint(json.dumps(out))")

@needs_sandbox
def test_the_sandbox_sees_only_python_usr_and_its_folder(tmp_path):
    code = _probe(tmp_path)
    r = _in_box(tmp_path, code)
    assert r.returncode == 0, r.stderr
    import json

    out = json.loads(r.stdout)
    assert out["uid"] >= sandbox.UID_RANGE[0] and out["uid"] != os.getuid()
    assert out["read"] is False and out["attn_ref"] is False
    assert out["net"] != 0  # no loopback services of this machine
    assert max(out["pids"]) < 10  # its own pid namespace: a handful of processes, none of the grader's
    assert out["cwd"] == str(tmp_path / "box")
    assert set(out["root"]) <= {"usr", "bin", "lib", "lib64", "sbin", "etc", "proc", "dev", "tmp", *TOPS,
                                *str(tmp_path).strip("/").split("/")[:1]}
    written = tmp_path / "box" / "written"
    assert written.read_text() == "x" and written.stat().st_uid == out["uid"]


STAGED_RUN = """
import json, os, subprocess, sys, tempfile
from attn_grader.isolation import sandbox
assert sandbox.stage([]) is not None, "nothing staged"
box = tempfile.mkdtemp(dir=sandbox.boxes_folder("unused"))
r = subprocess.run(sandbox.command({"work": box}, [sys.executable, "-I", "-c", sys.argv[1]]),
                   capture_output=True, text=True, timeout=120)
written = os.path.join(box, "written")
print(json.dumps({"rc": r.returncode, "stdout": r.stdout, "stderr": r.stderr, "box": box,
                  "written_uid": os.stat(written).st_uid if os.path.exists(written) else None}))
"""


@needs_sandbox
@pytest.mark.skipif(os.geteuid() != 0, reason="staging once per run is the root path (as the grader runs in CI)")
def test_staged_once_per_run_is_the_same_boundary(tmp_path):
    """As the grader runs it: staged once in its own mount namespace, every launcher only drops and runs bwrap."""
    code = _probe(tmp_path, "out['mnt'] = sorted(os.listdir('/mnt')); out['boxes'] = sorted(os.listdir('/mnt/boxes'))")
    env = {**os.environ, sandbox.MOUNTS_ENV: "1"}
    env.pop(sandbox.STAGED_ENV, None)
    r = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", STAGED_RUN, code],
                       capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stderr
    import json

    res = json.loads(r.stdout)
    assert res["rc"] == 0, res["stderr"]
    out = json.loads(res["stdout"])
    assert out["cwd"] == res["box"] and out["mnt"] == ["boxes"] and out["boxes"] == [os.path.basename(res["box"])]
    assert out["uid"] >= sandbox.UID_RANGE[0] and res["written_uid"] == out["uid"]
    assert out["read"] is False and out["attn_ref"] is False and out["net"] != 0 and max(out["pids"]) < 10
    assert set(out["root"]) <= {"usr", "bin", "lib", "lib64", "sbin", "etc", "proc", "dev", "tmp", "mnt", *TOPS}
    assert not os.path.exists(res["box"])  # the staging lived in that namespace only


@needs_sandbox
def test_limits_and_no_nested_namespaces(tmp_path):
    r = _in_box(tmp_path, "import os\ntry:\n    os.unshare(os.CLONE_NEWUSER)\n    print('nested')\n"
                          "except (OSError, AttributeError):\n    print('refused')\n"
                          "import resource; print(resource.getrlimit(resource.RLIMIT_AS)[0])",
                memory=1 << 30)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.split()
    assert lines[0] == "refused" and int(lines[1]) == 1 << 30


@needs_sandbox
def test_only_the_capped_places_are_writable(tmp_path):
    """A blind attack wrote 20 files of 255 MB at / (a tmpfs in host memory that the address-space limit
    does not count): 10 GB of the grader's machine.  / and /dev are read-only; /tmp and /dev/shm are capped."""
    code = ("import errno, os\n"
            "for path in ('/fill', '/dev/fill', '/usr/fill'):\n"
            "    try:\n        open(path, 'wb').write(b'x')\n        print(path, 'written')\n"
            "    except OSError as e:\n        print(path, errno.errorcode[e.errno])\n"
            "for d in ('/tmp', '/dev/shm'):\n"
            "    st = os.statvfs(d)\n    print(d, st.f_blocks * st.f_frsize)\n"
            "open('written', 'w').write('x')\n")
    r = _in_box(tmp_path, code, tmp_bytes=8 << 20)
    assert r.returncode == 0, r.stderr
    out = dict(line.rsplit(" ", 1) for line in r.stdout.splitlines())
    assert out["/fill"] == "EROFS" and out["/dev/fill"] == "EROFS" and out["/usr/fill"] in ("EROFS", "EACCES")
    assert int(out["/tmp"]) == int(out["/dev/shm"]) == 8 << 20
    assert (tmp_path / "box" / "written").read_text() == "x"  # the working folder still is


def test_unusable_says_how_to_get_it(monkeypatch):
    monkeypatch.setattr(sandbox, "BWRAP", "/nonexistent/bwrap")
    why = sandbox.unusable()
    assert why and "bubblewrap" in why and "apt-get install bubblewrap" in why


# ----------------------------------------------------------------------------------------- re-check

@pytest.mark.slow
@needs_sandbox
@pytest.mark.parametrize("call", [
    "torch.nn.functional.scaled_dot_product_attention(q, k, v)",
    "torch.ops.aten.scaled_dot_product_attention(q, k, v)",
    "torch.ops.aten._scaled_dot_product_attention_math(q, k, v)[0]",
    "torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)[0]",
    "torch.nn.MultiheadAttention(4, 1)(q[0], k[0], v[0])[0]",
])
def test_pytorch_attention_is_blocked_in_the_recheck(tmp_path, call):
    from attn_grader.checking.core import Task

    def cases(rng):
        return [(rng.normal(size=(1, 3, 4)),)]

    task = Task("psXX", "f", lambda x: x, cases, [])
    answer = (f"import torch\n\ndef f(x):\n    q = k = v = torch.tensor(x, dtype=torch.float32)\n"
              f"    return {call}.detach().numpy()\n")
    cs = {"f": cases(np.random.default_rng(0))}
    index = recheck.run([task], cs, "import numpy as np", {"f_answer": answer}, str(tmp_path), wall_seconds=120)
    verdict = recheck.compare([task], cs, index)["f"]
    assert not verdict.passed and "not allowed" in verdict.reason, verdict
    assert index.get("blocked"), index


@needs_sandbox
def test_recheck_outputs_are_read_as_data_not_followed(tmp_path):
    """An answer that replaces its output file by a link to a grader file: "the answer's output could not be read"."""
    from attn_grader.checking.core import Task

    target = tmp_path / "grader_secret.npy"
    np.save(target, np.arange(3.0))
    answer = ("import os, sys, atexit\n\ndef f(x):\n    return x\n\n"
              "def _swap():\n    p = os.path.join(sys.argv[1], 'out', 't0_c0.npy')  # the harness's folder\n"
              f"    os.remove(p); os.symlink({str(target)!r}, p)\n"
              "atexit.register(_swap)\n")
    task = Task("psXX", "f", lambda x: x, lambda rng: [(np.zeros(3),)], [])
    cs = {"f": [(np.arange(3.0),)]}
    index = recheck.run([task], cs, "import numpy as np", {"f_answer": answer}, str(tmp_path), wall_seconds=60)
    verdict = recheck.compare([task], cs, index)["f"]
    assert not verdict.passed and "output could not be read" in verdict.reason, verdict


# ----------------------------------------------------------------------------------------- safe reads

def test_read_regular_refuses_links_fifos_and_big_files(tmp_path):
    real = tmp_path / "real.ipynb"
    real.write_bytes(b"{}")
    assert read_regular(str(real), 10) == b"{}"
    (tmp_path / "link").symlink_to(real)
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(Refused, match="symbolic link"):
        read_regular(str(tmp_path / "link"), 10)
    with pytest.raises(Refused, match="FIFO"):
        read_regular(str(tmp_path / "fifo"), 10)  # returns at once: a FIFO is never waited on
    with pytest.raises(Refused, match="larger than 1 bytes"):
        read_regular(str(real), 1)
    assert read_regular(str(tmp_path / "missing"), 10) is None
    kinds = dict(list_folder(str(tmp_path)))
    assert kinds == {"real.ipynb": "file", "link": "a symbolic link", "fifo": "a FIFO"}


def test_write_atomic_replaces_in_one_step(tmp_path):
    p = tmp_path / "grades.csv"
    p.write_text("old")
    write_atomic(str(p), "new")
    assert p.read_text() == "new" and os.listdir(tmp_path) == ["grades.csv"]
    assert stat.S_IMODE(p.stat().st_mode) == 0o644


# ----------------------------------------------------------------------------------------- scores

class V:
    def __init__(self, passed, reason=""):
        self.passed, self.reason = passed, reason


def test_final_scores_need_both_the_notebook_and_the_recheck():
    tasks = ["a_test", "b_test", "c_test", "d_test", "e_test"]
    maxes = dict.fromkeys(tasks, 2.0)
    nb = {"a_test": 2.0, "b_test": 2.0, "c_test": 1.0, "d_test": 0.0, "e_test": 1.5}
    verdicts = {"a_test": V(True), "b_test": V(False, "[swapped] W_q and W_k swapped"), "c_test": V(True),
                "d_test": V(False, "wrong shape")}
    out = final_scores(tasks, maxes, nb, verdicts)
    assert out.scores == {"a_test": 2.0, "b_test": 0.0, "c_test": 1.0, "d_test": 0.0, "e_test": 1.5}
    assert out.flags == ["b_test: notebook test passed but the re-check failed ([swapped] W_q and W_k swapped)"]
    assert out.task_notes["b_test"] == ("re-check: [swapped] W_q and W_k swapped (the notebook's test passed: "
                                        "the two disagree)")
    assert out.task_notes["c_test"].startswith("the notebook's test failed while the re-check passed: the two disagree")
    assert "a_test" not in out.task_notes and "e_test" not in out.task_notes


# ----------------------------------------------------------------------------------------- escaping

def test_csv_cells_a_spreadsheet_would_evaluate_are_quoted(tmp_path):
    names = ["=2+3", "+1", "-1", "@SUM(A1)", "\tx", "ann"]
    results = {f"{n}/ps": Result(n, "ps", tasks=["t"], max={"t": 1.0}, scores={"t": 1.0}, total=1.0, max_total=1.0,
                                 flags=["=HYPERLINK(\"http://x\")"] if n == "ann" else [])
               for n in names}
    record.write_outputs(str(tmp_path), results)
    rows = list(csv.DictReader(io.StringIO((tmp_path / "grades.csv").read_text())))
    assert sorted(r["student"] for r in rows) == sorted(["'=2+3", "'+1", "'-1", "'@SUM(A1)", "'\tx", "ann"])
    assert next(r for r in rows if r["student"] == "ann")["reason"].startswith("'=HYPERLINK")


def test_report_and_notes_escape_student_text():
    r = Result("<img src=x onerror=alert(1)>", "ps", tasks=["t"], max={"t": 1.0}, scores={"t": 0.0},
               task_notes={"t": "re-check: f raised ValueError: <script>alert(1)</script> | x\n# h"})
    cell = record.notes_cell(r)
    assert "<script>" not in cell.source and "&lt;script&gt;" in cell.source
    assert "\n# h" not in cell.source
    assert "<img" not in record.md_text(r.student)
    assert record.progress_line(1, 1, Result("new\nline", "ps")).count("\n") == 0


class _FakeFuture:
    def __init__(self, outcome):
        self.status = "finished" if not isinstance(outcome, BaseException) else "error"
        self._outcome = outcome

    def done(self):
        return True

    def result(self):
        return self._outcome

    def exception(self):
        return self._outcome

    def release(self):
        pass

    def cancel(self):
        pass


class _FakeClient:
    """A cluster where a worker dies under ``poison`` every time, and the first time under each
    submission queued behind it (what Dask counts against a task waiting on a worker that died)."""

    def __init__(self):
        from distributed import KilledWorker

        self.KilledWorker, self.calls, self.collateral = KilledWorker, [], set()

    def scheduler_info(self, **_):
        return {"workers": {"w1": {}, "w2": {}}}

    def subscribe_topic(self, *_):
        pass

    def unsubscribe_topic(self, *_):
        pass

    def submit(self, fn, course, batch, opts, topic, pure=False, key=None):
        names = [s.student for s, _ in batch]
        self.calls.append(names)
        if "poison" in names or (len(names) == 1 and names[0] not in self.collateral):
            self.collateral.update(names)
            return _FakeFuture(self.KilledWorker(key, type("W", (), {"address": "tcp://w1"})(), 1))
        return _FakeFuture([Result(n, "ps") for n in names])


def test_a_submission_killed_behind_a_poison_one_is_tried_again_alone():
    from attn_grader.run import cluster
    from attn_grader.run.discover import Submitted

    items = [(Submitted(n, "ps", n), {}) for n in ("ann", "poison", "bob")]
    client, rows = _FakeClient(), []
    course = type("Course", (), {"assignments": ["ps"]})()
    opts = type("Opts", (), {"budget": 1, "recheck_seconds": 1})()
    cluster.grade_all(client, course, items, opts, rows.append, lambda item, why: Result(item[0].student, "ps",
                      status="ungradable", reason=[why]))
    by = {r.student: r for r in rows}
    assert sorted(by) == ["ann", "bob", "poison"]  # every submission once
    assert by["ann"].status == by["bob"].status == "ok"  # each killed once alone, then graded
    assert by["poison"].status == "ungradable" and "died every time" in by["poison"].reason[0]
    assert client.calls.count(["poison"]) == cluster.SINGLE_TRIES


def test_recheck_inputs_change_with_the_submission():
    """A blind attack leaked one submission's re-check inputs through its feedback (error messages) and
    resubmitted a table of their softmax: 2/10 for no softmax.  The inputs now depend on the answers too:
    the same answers get the same inputs (a regrade gives the same grades), changed answers new ones."""
    import numpy as np

    from attn_grader.checking.core import get_task
    from attn_grader.checking.recheck import cases_for

    task = get_task("ps04_step_by_step", "output_for_query")
    secret = b"0" * 64
    leaking = {"output_for_query_answer": "def output_for_query(a, i, W_q, W_k, W_v):\n"
                                          "    raise RuntimeError(repr(a))\n"}
    table = {"output_for_query_answer": "TABLE = {}\ndef output_for_query(a, i, W_q, W_k, W_v):\n"
                                        "    return TABLE[a.tobytes()]\n"}

    def same(a, b):
        return all(np.array_equal(np.asarray(x), np.asarray(y)) for m, n in zip(a, b, strict=True)
                   for x, y in zip(m, n, strict=True))

    first = cases_for(task, secret, leaking)
    assert same(first, cases_for(task, secret, dict(leaking)))
    later = cases_for(task, secret, table)
    assert len(first) == len(later)
    new = [not same([m], [n]) for m, n in zip(first, later, strict=True)]
    # the fixed edge cases (an all-equal row, huge scores) stay; every drawn one is new, so a table fails
    assert sum(new) >= len(new) // 2, f"leaked inputs reused: {new}"

