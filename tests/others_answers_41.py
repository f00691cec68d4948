"""Issue 41's answers written as a student or another code base writes them (tests/others_answers.py adds them to
its ``OTHERS``, with the same layout: name, assignment, answer cells, expected outcome per task)."""

# A softmax over every key (task 3's), the blocked weights zeroed and the rest renormalised afterwards.
RENORMALISED_MASKED_WEIGHTS = '''def masked_weights(scores, length, causal):
    n = scores.shape[-1]
    allowed = np.tril(np.ones((n, n))) if causal else np.ones((n, n))
    allowed[length:, :] = 0
    allowed[:, length:] = 0
    w = softmax(scores, axis=-1) * allowed
    s = w.sum(-1, keepdims=True)
    return np.divide(w, s, out=np.zeros_like(w), where=s > 0)
'''

# The same in a graph's masked softmax: there it computes exactly what a maximum over the masked entries too does
# (exp(s - max of the whole row) renormalised over the allowed entries), and is named so.
RENORMALISED_MASKED_SOFTMAX = '''def masked_softmax(scores, mask):
    e = np.exp(scores - scores.max(axis=1, keepdims=True))
    w = e / e.sum(axis=1, keepdims=True) * mask
    s = w.sum(axis=1, keepdims=True)
    return np.divide(w, s, out=np.zeros_like(w), where=s > 0)
'''

OTHERS_41 = [
    ("renormalised_masked_weights", "ps03_relevance", {"masked_weights_answer": RENORMALISED_MASKED_WEIGHTS},
     {"masked_weights": (False, "renormalised_after_softmax", ())}),
    ("renormalised_masked_softmax", "ps11_graphs", {"masked_softmax_answer": RENORMALISED_MASKED_SOFTMAX},
     {"masked_softmax": (False, "max_over_masked_entries", ("mask_after_softmax",))}),
]

# ps02: the reach of the past only (a causal window), written with triangles.
ONE_SIDED_REACH = '''def stacked_reach(n, r, L):
    past = np.tril(np.ones((n, n), dtype=bool))
    return past & ~np.tril(np.ones((n, n), dtype=bool), -L * r - 1)
'''

OTHERS_41 += [
    ("one_sided_reach", "ps02_sequence_labeling", {"stacked_reach_answer": ONE_SIDED_REACH},
     {"stacked_reach": (False, "one_sided_reach", ())}),
]
