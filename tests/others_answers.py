"""Answers written the way other people write them (issue 17), each with the outcome it should get.

Each is a function from a public code base, adapted only to the task's signature, or a slip such code
makes.  ``test_grading.py`` grades them with the real path (nbgrader, the sandbox, the re-check) in the
same run as the catalogue's mutants.  ``expect``: task -> (full marks?, a mistake name the feedback must
show or None, names it must not show).
"""

# The Annotated Transformer's PositionalEncoding, in float32 (torch's default dtype), without torch.
FLOAT32_TABLE = '''def sinusoidal_table(n, d):
    position = np.arange(0, n, dtype=np.float32)[:, None]
    div_term = np.exp(np.arange(0, d, 2, dtype=np.float32) * -(np.log(np.float32(10000.0)) / d))
    pe = np.zeros((n, d), dtype=np.float32)
    pe[:, 0::2] = np.sin(position * div_term)
    pe[:, 1::2] = np.cos(position * div_term)
    return pe
'''

# fairseq's SinusoidalPositionalEmbedding.get_embedding (sines block, then cosines block).
FAIRSEQ_TABLE = '''import math


def sinusoidal_table(n, d):
    half_dim = d // 2
    emb = math.log(10000) / (half_dim - 1)
    emb = np.exp(np.arange(half_dim, dtype=np.float64) * -emb)
    emb = np.arange(n, dtype=np.float64)[:, None] * emb[None, :]
    emb = np.concatenate([np.sin(emb), np.cos(emb)], axis=1).reshape(n, -1)
    return emb
'''

# 2i computed from indices that already step by 2.
DOUBLED_EXPONENT_TABLE = '''def sinusoidal_table(n, d):
    pe = np.zeros((n, d))
    pos = np.arange(n)[:, None]
    div = np.power(10000.0, 2 * np.arange(0, d, 2) / d)
    pe[:, 0::2] = np.sin(pos / div)
    pe[:, 1::2] = np.cos(pos / div)
    return pe
'''

# The usual stable softmax: right, except that a row with every entry -inf gives NaN.
NAN_ROW_SOFTMAX = '''def softmax(x, axis=-1):
    x_max = np.max(x, axis=axis, keepdims=True)
    e_x = np.exp(x - x_max)
    return e_x / np.sum(e_x, axis=axis, keepdims=True)
'''

RIGHT_SOFTMAX = '''def softmax(x, axis=-1):
    x = np.asarray(x, dtype=float)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)
'''

# Task 4's cell defines its own one-argument softmax, as many tutorials do: task 3's softmax is still graded as it
# stood after its own cell (it passes), and the helper's NaN on a filler row is named in task 4.
HELPER_IN_LATER_CELL = '''def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def masked_weights(scores, length, causal):
    n = scores.shape[-1]
    allowed = np.tril(np.ones((n, n), dtype=bool)) if causal else np.ones((n, n), dtype=bool)
    allowed[length:, :] = False
    allowed[:, length:] = False
    return softmax(np.where(allowed, scores, -np.inf))
'''

# Cosine similarity divided by the norm of the column's vector only.
COSINE_ONE_NORM = '''def cosine_similarity_matrix(X):
    norms = np.linalg.norm(X, axis=1)
    return (X @ X.T) / norms
'''

# pyGAT's layer (Diego999/pyGAT, layers.py): masked scores filled with -9e15, then a softmax.
PYGAT_MASKED_SOFTMAX = '''def masked_softmax(scores, mask):
    zero_vec = -9e15 * np.ones_like(scores)
    attention = np.where(mask > 0, scores, zero_vec)
    attention = np.exp(attention - np.max(attention, axis=1, keepdims=True))
    return attention / np.sum(attention, axis=1, keepdims=True)
'''

# d2l's DotProductAttention, in PyTorch and float32 (allowed: only PyTorch's own attention is not).
TORCH_ROWS = '''import math

import torch


def self_attention_rows(X, W_q, W_k, W_v):
    X = torch.as_tensor(X, dtype=torch.float32)
    Q = X @ torch.as_tensor(W_q, dtype=torch.float32).T
    K = X @ torch.as_tensor(W_k, dtype=torch.float32).T
    V = X @ torch.as_tensor(W_v, dtype=torch.float32).T
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(Q.shape[-1])
    weights = torch.softmax(scores, dim=-1)
    return torch.matmul(weights, V), weights
'''

# Issue 33, the second round: the tasks the first one left out.

# AllenNLP's allennlp.nn.util.masked_softmax (memory_efficient=False), in NumPy: right unless a row's allowed
# scores are all far below 0 beside a masked entry (the masked 0 then takes the weight, the epsilon the rest).
ALLENNLP_MASKED_SOFTMAX = '''def masked_softmax(scores, mask):
    mask = mask.astype(scores.dtype)
    result = scores * mask
    result = np.exp(result - result.max(axis=-1, keepdims=True))
    result = result / result.sum(axis=-1, keepdims=True)
    result = result * mask
    return result / (result.sum(axis=-1, keepdims=True) + 1e-13)
'''

# The Transformer's scaled scores, where the lecture's step-by-step form has the plain dot product.
SCALED_OUTPUT_FOR_QUERY = '''def output_for_query(a, i, W_q, W_k, W_v):
    Q, K, V = W_q @ a, W_k @ a, W_v @ a
    d_k = K.shape[0]
    scores = K.T @ Q[:, i] / np.sqrt(d_k)
    weights = np.exp(scores - np.max(scores))
    weights /= weights.sum()
    return V @ weights
'''

# nanoGPT's CausalSelfAttention (model.py), without torch: a decoder's mask in an encoder's layer.
NANOGPT_CAUSAL_MHA = '''import math


def multi_head_attention(X, W_q, W_k, W_v, W_o, h):
    T, C = X.shape
    q = (X @ W_q.T).reshape(T, h, C // h).transpose(1, 0, 2)
    k = (X @ W_k.T).reshape(T, h, C // h).transpose(1, 0, 2)
    v = (X @ W_v.T).reshape(T, h, C // h).transpose(1, 0, 2)
    att = (q @ k.transpose(0, 2, 1)) * (1.0 / math.sqrt(k.shape[-1]))
    bias = np.tril(np.ones((T, T)))
    att = np.where(bias == 0, -np.inf, att)
    att = np.exp(att - att.max(axis=-1, keepdims=True))
    att = att / att.sum(axis=-1, keepdims=True)
    y = (att @ v).transpose(1, 0, 2).reshape(T, C)
    return y @ W_o.T, att
'''

# An einsum layer whose softmax runs over the first axis of the (heads, queries, keys) scores.
HEADS_AXIS_MHA = '''def multi_head_attention(X, W_q, W_k, W_v, W_o, h):
    n, d_model = X.shape
    d_h = d_model // h
    q = np.einsum("nd,hkd->hnk", X, W_q.reshape(h, d_h, d_model))
    k = np.einsum("nd,hkd->hnk", X, W_k.reshape(h, d_h, d_model))
    v = np.einsum("nd,hkd->hnk", X, W_v.reshape(h, d_h, d_model))
    scores = np.einsum("hik,hjk->hij", q, k) / np.sqrt(d_h)
    weights = np.exp(scores - scores.max(axis=0))
    weights = weights / weights.sum(axis=0)
    heads = np.einsum("hij,hjk->ihk", weights, v).reshape(n, d_model)
    return heads @ W_o.T, weights
'''

# FlashAttention (Dao et al. 2022), Algorithm 1, lines 9-12, for one query: the output O is kept normalised.
FLASH1_ONLINE_STEP = '''def online_step(m, l, acc, s, V):
    m_ij = np.max(s)
    p_ij = np.exp(s - m_ij)
    l_ij = np.sum(p_ij)
    m_new = max(m, m_ij)
    l_new = np.exp(m - m_new) * l + np.exp(m_ij - m_new) * l_ij
    O_new = (l * np.exp(m - m_new) * acc + np.exp(m_ij - m_new) * (p_ij @ V)) / l_new
    return m_new, l_new, O_new
'''

# Issue 29, the bypasses of the streaming tasks: the row joined from its blocks, then the two-pass softmax.
TWO_PASS_ONLINE_SOFTMAX = '''def online_softmax(blocks):
    x = np.concatenate([np.asarray(b) for b in blocks])
    m = float(np.max(x))
    return m, float(np.sum(np.exp(x - m)))
'''

# The full (n_q, n_k) matrix of scores from the keys and values joined from their blocks.
FULL_MATRIX_BLOCKED = '''def blocked_attention(Q, blocks):
    K, V = map(np.vstack, zip(*blocks))
    S = Q @ K.T / np.sqrt(Q.shape[1])
    P = np.exp(S - S.max(axis=1, keepdims=True))
    return (P / P.sum(axis=1, keepdims=True)) @ V
'''

# Two passes over the stream: the maxima first, then the sums and the output (no rescaling needed).
TWO_PASS_BLOCKED = '''def blocked_attention(Q, blocks):
    Q = Q / np.sqrt(Q.shape[1])
    m = -np.inf
    for K_B, V_B in blocks:
        m = np.maximum(m, (Q @ K_B.T).max(axis=1, keepdims=True))
    l = acc = 0.0
    for K_B, V_B in blocks:
        P = np.exp(Q @ K_B.T - m)
        l, acc = l + P.sum(axis=1, keepdims=True), acc + P @ V_B
    return acc / l
'''

# Edge counts with np.add.at, made symmetric with the larger count (repeated edges give 2, not 1).
MAX_SYMMETRISED_COUNTS = '''def adjacency_from_edges(edges, n_nodes, undirected=True):
    edges = np.asarray(edges, dtype=int).reshape(-1, 2)
    A = np.zeros((n_nodes, n_nodes))
    np.add.at(A, (edges[:, 0], edges[:, 1]), 1.0)
    if undirected:
        A = np.maximum(A, A.T)
    return A
'''

# A 'valid' convolution (no padding) whose output array is allocated first: np.zeros of a negative size
# raises on an image smaller than the kernel, where the catalogued mistake returns an empty array.
VALID_CONV_RAISING = '''def conv2d_single(x, kernel):
    kh, kw = kernel.shape
    out = np.zeros((x.shape[0] - kh + 1, x.shape[1] - kw + 1))
    for r in range(out.shape[0]):
        for c in range(out.shape[1]):
            out[r, c] = np.sum(x[r:r + kh, c:c + kw] * kernel)
    return out
'''

# Issue 29, the bypass of ps09's task 4: the convolution of task 1, no attention at all.
CONV_NOT_ATTENTION = '''def attention_as_conv(x, kernel, S):
    return conv2d_single(x, kernel)
'''

# The same with one-hot heads built by index arithmetic, the scores S never read: wrong wherever the scores'
# maxima are not at the kernel's offsets.
HEADS_WITHOUT_SCORES = '''def attention_as_conv(x, kernel, S):
    H, W = x.shape
    K = kernel.shape[0]
    p = K // 2
    Wp = W + 2 * p
    A = np.zeros((K * K, H * W, (H + 2 * p) * Wp))
    for i in range(K):
        for j in range(K):
            for r in range(H):
                for c in range(W):
                    A[i * K + j, r * W + c, (r + i) * Wp + (c + j)] = 1.0
    return conv2d_single(x, kernel), A
'''

# Issue 41: a right reach as 0/1 integers (a band matrix's powers, clipped), the layout many write for masks.
INTEGER_REACH = '''def stacked_reach(n, r, L):
    t = np.arange(n)
    band = (np.abs(t[:, None] - t[None, :]) <= r).astype(int)
    R = np.eye(n, dtype=int)
    for _ in range(L):
        R = np.minimum(band @ R, 1)
    return R
'''

# Issue 41: the edge list scattered at once and symmetrised by adding the transpose.
SCATTER_PLUS_TRANSPOSE = '''def adjacency_from_edges(edges, n_nodes, undirected=True):
    adj = np.zeros((n_nodes, n_nodes))
    edges = np.asarray(edges, dtype=int).reshape(-1, 2)
    adj[edges[:, 0], edges[:, 1]] = 1
    if undirected:
        adj = adj + adj.T
    return adj
'''

# Issue 41: masked_fill(mask, finfo.min), the commonest masking in real code (Hugging Face's models).
FINFO_MASKED_WEIGHTS = '''def masked_weights(scores, length, causal):
    pos = np.arange(len(scores))
    blocked = (pos[:, None] >= length) | (pos[None, :] >= length)
    if causal:
        blocked = blocked | (pos[None, :] > pos[:, None])
    filled = scores.copy()
    filled[blocked] = np.finfo(filled.dtype).min
    probs = np.exp(filled - filled.max(axis=1, keepdims=True))
    return probs / probs.sum(axis=1, keepdims=True)
'''

# Issue 41: the row's maximum taken before masking (scores - scores.max(), then the mask), a common ordering.
MAX_BEFORE_MASK = '''def masked_softmax(scores, mask):
    shifted = scores - np.max(scores, axis=-1, keepdims=True)
    e = np.where(mask, np.exp(shifted), 0.0)
    total = e.sum(axis=-1, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
'''

# Issue 41: walks counted with an integer matrix power (overflows int64 on a dense graph at L >= 22).
MATRIX_POWER_REACH = '''def reach_after_layers(mask, L):
    return np.linalg.matrix_power(np.asarray(mask, dtype=np.int64), L) > 0
'''

# Issue 41: the nearest ideal map by the largest entry-wise difference.
LINF_HEAD_ROLES = '''def head_roles(weights, tokens):
    n = len(tokens)
    prev = np.eye(n, k=-1)
    prev[0, 0] = 1
    same = (tokens[:, None] == tokens[None, :]) / np.sum(tokens[:, None] == tokens[None, :], axis=1, keepdims=True)
    maps = [prev, same, np.ones((n, n)) / n]
    return np.array([int(np.argmin([np.max(np.abs(w - m)) for m in maps])) for w in weights])
'''

# Issue 41: ps04's outputs moved by scattering into the inverse permutation's places (right).
SCATTERED_PERMUTED = '''def permuted_outputs(B, perm):
    out = np.empty_like(B)
    out[:, np.argsort(perm)] = B
    return out
'''

# Issue 41: ps10's table found by search, layer by layer on the computation graph (right, no formula at all).
SEARCHED_PATH_LENGTHS = '''def path_lengths(kind, n, kappa=3):
    P = np.full((n, n), -1)
    for s in range(n):
        if kind == "attention":
            P[:, s] = 1
            continue
        if kind == "recurrent":
            P[s:, s] = np.arange(1, n - s + 1)
            continue
        seen, layer, step = np.zeros(n, dtype=bool), 0, 1
        seen[s] = True
        while not seen[s:].all():
            layer += 1
            seen = seen | np.any([np.roll(seen, j * step) * (np.arange(n) >= j * step) for j in range(kappa)], axis=0)
            if kind == "dilated_conv":
                step *= kappa
            P[s:, s] = np.where((P[s:, s] == -1) & seen[s:], layer, P[s:, s])
        P[s, s] = max(P[s, s], 1)
    return P
'''

# Issue 41: ps05's largest weight without forming the weights: max_j softmax(s)_j = 1 / sum_j exp(s_j - max s).
LOGSUMEXP_PEAKS = '''def peak_weights(Q, K):
    out = []
    for scale in (1.0, 1.0 / np.sqrt(len(Q))):
        s = scale * (Q.T @ K)  # (m, n): a row per query
        out.append(np.mean(1.0 / np.exp(s - s.max(axis=1, keepdims=True)).sum(axis=1)))
    return out[0], out[1]
'''

OTHERS = [
    ("float32_table", "ps07_positional", {"sinusoidal_table_answer": FLOAT32_TABLE},
     {"sinusoidal_table": (True, None, ())}),
    ("fairseq_table", "ps07_positional", {"sinusoidal_table_answer": FAIRSEQ_TABLE},
     {"sinusoidal_table": (False, "block_layout_of_fairseq", ())}),
    ("doubled_exponent", "ps07_positional", {"sinusoidal_table_answer": DOUBLED_EXPONENT_TABLE},
     {"sinusoidal_table": (False, "exponent_doubled", ())}),
    ("nan_row_softmax", "ps03_relevance", {"softmax_answer": NAN_ROW_SOFTMAX},
     {"softmax": (False, "nan_on_masked_row", ("axis_ignored",))}),
    ("pygat_fill", "ps11_graphs", {"masked_softmax_answer": PYGAT_MASKED_SOFTMAX},
     {"masked_softmax": (False, "filled_with_minus_9e15", ())}),
    ("helper_later", "ps03_relevance", {"softmax_answer": RIGHT_SOFTMAX,
                                        "masked_weights_answer": HELPER_IN_LATER_CELL},
     {"softmax": (True, None, ()), "masked_weights": (False, "nan_on_masked_row", ())}),
    ("torch_float32_rows", "ps05_matrix_form", {"self_attention_rows_answer": TORCH_ROWS},
     {"self_attention_rows": (True, None, ())}),
    ("cosine_one_norm", "ps01_vector_sets", {"cosine_similarity_matrix_answer": COSINE_ONE_NORM},
     {"cosine_similarity_matrix": (False, "one_length_only", ())}),
    ("allennlp_masked_softmax", "ps11_graphs", {"masked_softmax_answer": ALLENNLP_MASKED_SOFTMAX},
     {"masked_softmax": (False, "masked_by_multiplying", ("mask_ignored", "masked_with_zero"))}),
    ("scaled_output_for_query", "ps04_step_by_step", {"output_for_query_answer": SCALED_OUTPUT_FOR_QUERY},
     {"output_for_query": (False, "scaled_by_sqrt_dk", ())}),
    ("nanogpt_causal", "ps06_multi_head", {"multi_head_attention_answer": NANOGPT_CAUSAL_MHA},
     {"multi_head_attention": (False, "causal_mask", ())}),
    ("softmax_over_heads", "ps06_multi_head", {"multi_head_attention_answer": HEADS_AXIS_MHA},
     {"multi_head_attention": (False, "softmax_over_heads", ("softmax_wrong_axis",))}),
    ("flash1_online_step", "ps12_efficient", {"online_step_answer": FLASH1_ONLINE_STEP},
     {"online_step": (False, "output_kept_normalised", ())}),
    ("two_pass_online_softmax", "ps12_efficient", {"online_softmax_answer": TWO_PASS_ONLINE_SOFTMAX},
     {"online_softmax": (False, "blocks_kept", ())}),
    ("full_matrix_blocked", "ps12_efficient", {"blocked_attention_answer": FULL_MATRIX_BLOCKED},
     {"blocked_attention": (False, "blocks_kept", ())}),
    ("two_pass_blocked", "ps12_efficient", {"blocked_attention_answer": TWO_PASS_BLOCKED},
     {"blocked_attention": (False, "read_twice", ())}),
    ("max_symmetrised_counts", "ps01_vector_sets", {"adjacency_from_edges_answer": MAX_SYMMETRISED_COUNTS},
     {"adjacency_from_edges": (False, "edges_counted_then_max", ("edges_counted",))}),
    ("conv_not_attention", "ps09_cnn", {"attention_as_conv_answer": CONV_NOT_ATTENTION},
     {"attention_as_conv": (False, None, ())}),
    ("heads_without_scores", "ps09_cnn", {"attention_as_conv_answer": HEADS_WITHOUT_SCORES},
     {"attention_as_conv": (False, "scores_ignored", ())}),
    ("valid_conv_raising", "ps09_cnn", {"conv2d_single_answer": VALID_CONV_RAISING},
     {"conv2d_single": (False, "padding_forgotten", ())}),
    ("integer_reach", "ps02_sequence_labeling", {"stacked_reach_answer": INTEGER_REACH},
     {"stacked_reach": (True, None, ())}),
    ("scatter_plus_transpose", "ps01_vector_sets", {"adjacency_from_edges_answer": SCATTER_PLUS_TRANSPOSE},
     {"adjacency_from_edges": (False, "symmetrised_by_adding", ())}),
    ("finfo_masked_weights", "ps03_relevance", {"masked_weights_answer": FINFO_MASKED_WEIGHTS},
     {"masked_weights": (False, "filled_with_large_negative", ())}),
    ("max_before_mask", "ps11_graphs", {"masked_softmax_answer": MAX_BEFORE_MASK},
     {"masked_softmax": (False, "max_over_masked_entries", ())}),
    ("matrix_power_reach", "ps11_graphs", {"reach_after_layers_answer": MATRIX_POWER_REACH},
     {"reach_after_layers": (False, "walks_counted_overflow", ())}),
    ("linf_head_roles", "ps06_multi_head", {"head_roles_answer": LINF_HEAD_ROLES},
     {"head_roles": (False, "max_distance", ())}),
    ("scattered_permuted", "ps04_step_by_step", {"permuted_outputs_answer": SCATTERED_PERMUTED},
     {"permuted_outputs": (True, None, ())}),
    ("searched_path_lengths", "ps10_rnn", {"path_lengths_answer": SEARCHED_PATH_LENGTHS},
     {"path_lengths": (True, None, ())}),
    ("logsumexp_peaks", "ps05_matrix_form", {"peak_weights_answer": LOGSUMEXP_PEAKS},
     {"peak_weights": (True, None, ())}),
]

from others_answers_41 import OTHERS_41  # noqa: E402 - issue 41's answers, in their own file (400 lines)

OTHERS += OTHERS_41
