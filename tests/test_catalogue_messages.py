"""The self-check must not hand over the fix (issue 41): for the "thinking" tasks, whose answer is a short result
of reasoning (a reach, a count, a permutation), one wrong try prints its mistake's message, so no message of
those tasks states the reference's formula or code.  It names the misconception and points to the reasoning.

A heuristic, which the old messages fail (test_the_heuristic_catches_messages_that_give_the_answer): no equation
or comparison (``|t − s| ≤ L r``, ``j <= i``, ``T_c = …``), no slice or index by the permutation (``B[:, perm]``),
no function of a formula (``ceil(…)``, ``max(…)``, ``log``, ``**``, ``⌊κ/2⌋``), no product of bracketed terms
(``n (2r + 1) - r (r + 1)``), no "the smallest L with"; and no statement of the solution's answer cell.
"""

import inspect
import re

import pytest

from attn_grader.catalogue import _stability
from attn_grader.checking.core import get_task
from solutions import solution

THINKING = [("ps01_vector_sets", "nearest_other"), ("ps02_sequence_labeling", "stacked_reach"),
            ("ps03_relevance", "masked_weights"), ("ps04_step_by_step", "permuted_outputs"),
            ("ps05_matrix_form", "peak_weights"), ("ps06_multi_head", "head_roles"),
            ("ps07_positional", "permutation_gaps"), ("ps08_speech_images", "score_memory"),
            ("ps09_cnn", "receptive_field"), ("ps10_rnn", "path_lengths"), ("ps11_graphs", "reach_after_layers"),
            ("ps12_efficient", "hbm_bytes")]

#: The shared messages of an unstable softmax (attn_grader/catalogue/_stability.py) state the shift by the maximum:
#: a technique an earlier task teaches, not the result a thinking task asks for.
STABILITY = {f(where) for f in (_stability.not_stabilised, _stability.shifted_by_min)
             for where in ("each row's", "each query's", "each row's (allowed)")}

GIVEAWAYS = {
    "an equation or a comparison": r"[≤≥<>=]",
    "a slice": r"\[[^\]]*:[^\]]*\]",
    "an index by the permutation": r"\[\s*perm\s*\]",
    "a formula's function": r"\b(ceil|floor|log|max|min|sqrt)\s*\(|\*\*|[⌊⌈]",
    "a product of bracketed terms": r"\)\s*[-−+*/]\s*\w+\s*\(",
    "the answer's definition": r"\bsmallest \w+ (with|such that)\b",
}


def giveaways(message: str, code: str = "") -> list[str]:
    """What in ``message`` states a formula or the code of the answer ``code`` (empty when nothing does)."""
    found = [what for what, pattern in GIVEAWAYS.items() if re.search(pattern, message.replace("->", "→"))]
    statements = {" ".join(line.split()) for line in code.splitlines()}
    found += [f"the answer's line {s!r}" for s in statements
              if len(s) >= 12 and not s.startswith(("#", "def ", '"""')) and s in " ".join(message.split())]
    return found


@pytest.mark.parametrize(("assignment", "func_name"), THINKING, ids=lambda x: x)
def test_no_mistake_of_a_thinking_task_gives_the_answer_away(assignment, func_name):
    task = get_task(assignment, func_name)
    code = solution(assignment, func_name) + "\n" + inspect.getsource(task.reference)
    assert len(task.mistakes) >= 3
    mistakes = [m for m in task.mistakes if m.message not in STABILITY]
    bad = {m.name: giveaways(m.message, code) for m in mistakes if giveaways(m.message, code)}
    assert not bad, bad


@pytest.mark.parametrize("message", [
    "the reach of one layer (|t − s| ≤ r) was returned whatever L; each stacked layer reads r more: |t − s| ≤ L r",
    "the outputs were returned in their original order; column j is the original column perm[j], so B[:, perm]",
    "a partial layer is still a layer: ceil((t - s) / (κ - 1)), and at least 1",
    "dilations 1, κ, …, κᴸ⁻¹ see κᴸ positions: the smallest L with κᴸ exceeding t - s",
    "near the two ends the band is cut short, so the band holds n (2r + 1) - r (r + 1) pairs",
    "stacking L layers lets an output see what its inputs saw: L ⌊κ/2⌋ pixels to each side",
    "compare with self_attention(X, ...)[perm]",
])
def test_the_heuristic_catches_messages_that_give_the_answer(message):
    assert giveaways(message)


def test_the_answer_s_own_code_is_caught():
    assert giveaways("return it as np.abs(t[:, None] - t[None, :]) less than L * r", "    return L * r + 1\n") == [
        "a slice"]
    assert giveaways("keep only whether a walk exists, reach = (M @ R).astype(bool) each layer",
                     "    reach = (M @ R).astype(bool)\n")
