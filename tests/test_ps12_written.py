"""ps12's short written answer (issue 41): a markdown cell graded by hand, its rubric in the instructor's
version only (both languages, never in the catalogue nor the release)."""

import json
from pathlib import Path

from attn_grader.files.languages import MARKER

ROOT = Path(__file__).resolve().parents[1]
PS = "ps12_efficient"


def _cells(folder):
    return json.loads((ROOT / folder / PS / f"{PS}.ipynb").read_text(encoding="utf-8"))["cells"]


def test_the_written_answer_is_a_hand_graded_cell_after_the_last_task():
    cells = _cells("solutions")
    question, answer = cells[-2], cells[-1]
    meta = answer["metadata"]["nbgrader"]
    assert answer["cell_type"] == "markdown" and answer["id"] == meta["grade_id"] == "written_answer"
    assert meta["grade"] is True and meta["solution"] is True and meta["points"] == 2
    assert cells[-3]["metadata"]["nbgrader"]["grade_id"] == "hbm_bytes_test"  # after the last task
    text = "".join(question["source"])
    assert question["metadata"]["nbgrader"]["locked"] and "Explain" in text and "compare" in text and MARKER in text
    rubric = "".join(answer["source"])
    assert "Rubric" in rubric and MARKER in rubric and "评分标准" in rubric and "51" in rubric


def test_the_release_and_the_catalogue_hold_no_rubric():
    released = _cells("exercises")
    answer = next(c for c in released if c.get("id") == "written_answer")
    assert "".join(answer["source"]) == "YOUR ANSWER HERE"
    assert answer["metadata"]["nbgrader"]["points"] == 2
    question = "".join(released[-2]["source"])
    assert "why is one pass enough" in question and "为什么读一遍就够了" in question
    for path in (ROOT / "exercises" / PS / f"{PS}.ipynb",
                 ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "exercises" / f"{PS}.po"):
        text = path.read_text(encoding="utf-8")
        assert "Rubric" not in text and "评分标准" not in text and "51 MB" not in text, path
