"""Issue 41.7: the written answers' rubrics accept the right numbers only. ps08's rubric once accepted 101 000 scores
(every query with 2r + 1 keys: the border mistake its task 4 penalises) and 19 layers (19 * 50 = 950 < 999)."""

import re

from attn_ref.attention import band_mask
from solutions import cells


def _rubric(assignment: str) -> str:
    return cells(assignment)["written_answer"].split("**Rubric**")[1]


def _numbers(text: str) -> set[int]:
    return {int(m.replace(" ", "")) for m in re.findall(r"\d{1,3}(?: \d{3})+|\d+", text)}


def test_ps08_rubric_accepts_the_counted_scores_and_layers_and_names_the_wrong_ones_as_wrong():
    n, r = 1000, 50
    scores = int(band_mask(n, r).sum())  # the truncated layer's scores, the ends' missing keys left out
    layers = next(L for L in range(1, n) if L * r >= n - 1)  # frame 1 reaches frame 1000
    rubric = _rubric("ps08_speech_images")
    top = rubric.split("- **1**:")[0]
    accepted = re.sub(r"[^.;]*does not earn[^.;]*", "", top)  # the sentences that refuse a number are left out
    assert {scores, layers} <= _numbers(accepted), (scores, layers)
    for wrong in (n * (2 * r + 1), layers - 1):
        assert wrong not in _numbers(accepted), f"the rubric accepts {wrong}"
        assert wrong in _numbers(top), f"the rubric should name {wrong} as not earning the part"

