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

# Task 4's cell defines its own one-argument softmax, as many tutorials do.
HELPER_IN_LATER_CELL = '''def softmax(x):
    e = np.exp(x - np.max(x, axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_weights(Q, K):
    d_k = Q.shape[-1]
    return softmax(Q @ K.T / np.sqrt(d_k))
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
                                        "attention_weights_answer": HELPER_IN_LATER_CELL},
     {"softmax": (True, None, ()), "attention_weights": (True, None, ())}),
    ("torch_float32_rows", "ps05_matrix_form", {"self_attention_rows_answer": TORCH_ROWS},
     {"self_attention_rows": (True, None, ())}),
    ("cosine_one_norm", "ps01_vector_sets", {"cosine_similarity_matrix_answer": COSINE_ONE_NORM},
     {"cosine_similarity_matrix": (False, "one_length_only", ())}),
]
