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

# ps06: the Euclidean distance, and a KL divergence (with a small epsilon, as people write it), for the L1 of the task.
L2_HEAD_ROLES = '''def head_roles(weights, tokens):
    n = tokens.shape[0]
    same_word = np.equal.outer(tokens, tokens).astype(float)
    same_word /= same_word.sum(axis=-1)[:, None]
    before = np.diag(np.ones(n - 1), -1)
    before[0, 0] = 1
    flat = np.full((n, n), 1 / n)
    d = np.sqrt(((weights[:, None] - np.stack([before, same_word, flat])[None]) ** 2).sum(axis=(2, 3)))
    return d.argmin(axis=1)
'''

KL_HEAD_ROLES = '''def kl(p, q, eps=1e-9):
    return float(np.sum(p * np.log((p + eps) / (q + eps))))


def head_roles(weights, tokens):
    H, n, _ = weights.shape
    ideal = np.zeros((3, n, n))
    ideal[0, 0, 0] = 1.0
    for i in range(1, n):
        ideal[0, i, i - 1] = 1.0
    for i in range(n):
        hits = [j for j in range(n) if tokens[j] == tokens[i]]
        ideal[1, i, hits] = 1.0 / len(hits)
    ideal[2] = 1.0 / n
    codes = np.zeros(H, dtype=int)
    for h in range(H):
        codes[h] = int(np.argmin([kl(weights[h], ideal[r]) for r in range(3)]))
    return codes
'''

# ps01: |cosine|, and the diagonal set to 0 to leave a vector out.
ABS_COSINE = '''def cosine_similarity_matrix(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    return np.abs(U @ U.T)
'''

ZERO_DIAGONAL_NEAREST = '''def nearest_other(X):
    U = X / np.linalg.norm(X, axis=1, keepdims=True)
    S = U @ U.T
    np.fill_diagonal(S, 0)
    best = S.max(axis=1, keepdims=True)
    return np.where((S >= best - 1e-6).sum(axis=1) > 1, -1, S.argmax(axis=1))
'''

OTHERS_41 += [
    ("l2_head_roles", "ps06_multi_head", {"head_roles_answer": L2_HEAD_ROLES},
     {"head_roles": (False, "euclidean_distance", ())}),
    ("kl_head_roles", "ps06_multi_head", {"head_roles_answer": KL_HEAD_ROLES},
     {"head_roles": (False, None, ("first_row_empty",))}),
    ("abs_cosine", "ps01_vector_sets", {"cosine_similarity_matrix_answer": ABS_COSINE},
     {"cosine_similarity_matrix": (False, "absolute_value", ())}),
    ("zero_diagonal_nearest", "ps01_vector_sets", {"nearest_other_answer": ZERO_DIAGONAL_NEAREST},
     {"nearest_other": (False, "diagonal_set_to_zero", ())}),
]
