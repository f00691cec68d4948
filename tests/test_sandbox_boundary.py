"""What crosses from the sandbox is read as hostile data, once, where it is read (issue 40, round 5): text no
file can hold (a lone surrogate, control characters) is made safe and never fails a writer or the run, and a
re-check output whose .npy header claims more than the file holds costs its task, not the row."""

import json
import os

import numpy as np
import pytest

from attn_grader.checking import recheck
from attn_grader.files.safeio import clean_data, clean_text, write_atomic
from attn_grader.reports.result import empty_result
from attn_grader.run.grading import JOURNAL, _journal_kept, state_dir

SURROGATE = chr(0xD800)


def test_clean_text_makes_text_encodable_and_plain():
    text = clean_text("bad " + SURROGATE + "\x1b[31m\x00\r x\n\ty" + "z" * 10_000)
    text.encode("utf-8")  # raises if a surrogate is left
    assert text.startswith("bad \ufffd[31m x\n\ty") and len(text) <= 4000
    assert clean_data({"k" + SURROGATE: [SURROGATE, 1, None]}) == {"k\ufffd": ["\ufffd", 1, None]}


def test_write_atomic_never_fails_on_one_row_s_text(tmp_path):
    path = str(tmp_path / "grades.csv")
    write_atomic(path, "student,reason\nx,bad " + SURROGATE + "\n")
    assert open(path, encoding="utf-8").read() == "student,reason\nx,bad ?\n"


def _box(tmp_path, index: dict) -> str:
    os.makedirs(tmp_path / "out", exist_ok=True)
    (tmp_path / "out" / "index.json").write_text(json.dumps(index))  # a surrogate as "\ud800", as the harness writes
    return str(tmp_path)


def test_the_recheck_index_is_made_safe_where_it_is_read(tmp_path):
    box = _box(tmp_path, {"answers": {"added_1": "ValueError" + SURROGATE},
                          "tasks": {"f": {"results": [{"error": "ValueError: bad " + SURROGATE + "\x07"}]}}})
    index = recheck._read_index(box)
    assert "\ufffd" in json.dumps(index, ensure_ascii=False)
    json.dumps(index, ensure_ascii=False).encode("utf-8")
    assert "\x07" not in index["tasks"]["f"]["results"][0]["error"]


def _npy(shape: str, descr: str = "'<f8'", body: bytes = b"\0" * 64) -> bytes:
    head = "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }"
    head = head + " " * (118 - len(head)) + "\n"
    return b"\x93NUMPY\x01\x00" + len(head).to_bytes(2, "little") + head.encode() + body


@pytest.mark.parametrize("data", [_npy("(4294967296, 1048576)"), _npy("(8,)", "'|O'"), _npy("(9,)"),
                                  _npy("(-1,)"), b"\x93NUMPY\x09\x00" + b"\0" * 8, b"not a .npy"],
                         ids=["claims 32 PiB", "object dtype", "shorter than its header", "negative shape",
                              "format 9", "no magic"])
def test_a_npy_header_is_checked_before_anything_is_allocated(tmp_path, data):
    """r07: a 192-byte file claiming (2**32, 2**20) float64 made np.load raise MemoryError and the row
    'the grader failed'; now the task's result says why, and no exception leaves the reader."""
    box = _box(tmp_path, {"tasks": {"f": {"results": [{"array": "t0_c0.npy"}]}}})
    (tmp_path / "out" / "t0_c0.npy").write_bytes(data)
    outputs = recheck._read_outputs(box, recheck._read_index(box))
    [result] = outputs["f"]["results"]
    assert result["error"].startswith("the answer's output could not be read"), result


def test_an_honest_npy_is_read(tmp_path):
    box = _box(tmp_path, {"tasks": {"f": {"results": [{"array": "t0_c0.npy"}]}}})
    np.save(tmp_path / "out" / "t0_c0.npy", np.arange(8.0))
    [result] = recheck._read_outputs(box, recheck._read_index(box))["f"]["results"]
    assert np.array_equal(result["value"], np.arange(8.0))


def test_a_journal_entry_no_file_can_hold_is_dropped(tmp_path):
    os.makedirs(state_dir(str(tmp_path)), exist_ok=True)
    with open(os.path.join(state_dir(str(tmp_path)), JOURNAL), "w") as f:
        for student in ("s1", "s2"):
            r = empty_result(student, "a", reason=["bad " + SURROGATE] if student == "s1" else [])
            f.write(json.dumps({"digest": "d", "result": r.to_dict()}) + "\n")
    assert sorted(_journal_kept(str(tmp_path))) == [empty_result("s2", "a").key]


@pytest.mark.slow
@pytest.mark.parametrize("how", ["os.fork()", "subprocess.Popen(['true'])",
                                 "ctypes.CDLL(None).fork", "os.posix_spawn('/bin/true', ['true'], {})"])
def test_an_answer_starts_no_process_in_the_recheck(tmp_path, how):
    """a_r11: forks in the re-check only (60 busy ones slowed the class, unflagged): refused and noted."""
    from attn_grader.checking.core import Task

    answer = ("import os, subprocess, ctypes\n\ndef f(x):\n    return x\n\n"
              f"try:\n    {how}\nexcept OSError:\n    pass\n")
    task = Task("psXX", "f", lambda x: x, lambda rng: [(np.zeros(3),)], [])
    cs = {"f": [(np.arange(3.0),)]}
    index = recheck.run([task], cs, "import numpy as np", {"f_answer": answer}, str(tmp_path), wall_seconds=60,
                        use_sandbox=False)
    assert [b for b in index.get("blocked", []) if b.startswith("tried: ")], index
    assert recheck.compare([task], cs, index)["f"].passed  # the answer itself is graded as it is
