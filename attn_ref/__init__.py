"""attn_ref: the reference implementation behind "Self-Attention, Step by Step".

NumPy first, one module per idea; every function is checked in ``tests/`` against
PyTorch, PyTorch Geometric or the papers' formulas.  Row layout ``(..., n, d)``
(PyTorch's) unless a name says ``columns`` (the lecture's ``(d, n)``).
"""

from .attention import (
    StepByStep,
    apply_mask,
    attend_one,
    band_mask,
    causal_mask,
    scaled_dot_product_attention,
    self_attention,
    self_attention_columns,
)
from .multihead import init_mha_params, merge_heads, mha_params_from_torch, multi_head_attention, split_heads
from .positional import shift_matrix, sinusoidal_positional_encoding
from .scores import additive_score, dot_product_score
from .softmax import softmax

__all__ = [
    "StepByStep",
    "additive_score",
    "apply_mask",
    "attend_one",
    "band_mask",
    "causal_mask",
    "dot_product_score",
    "init_mha_params",
    "merge_heads",
    "mha_params_from_torch",
    "multi_head_attention",
    "scaled_dot_product_attention",
    "self_attention",
    "self_attention_columns",
    "shift_matrix",
    "sinusoidal_positional_encoding",
    "softmax",
    "split_heads",
]
