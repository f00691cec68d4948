"""Multi-head self-attention (lecture: Multi-head Self-attention; Vaswani et al. 2017, sec. 3.2.2).

Each head h has its own projections (the rows h*d_h:(h+1)*d_h of W_q, W_k, W_v),
computes its own b^{i,h}; the heads are concatenated and mixed by W_o.
The parameter layout is that of ``torch.nn.MultiheadAttention``.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_dim, check_min_ndim
from .attention import scaled_dot_product_attention

PARAM_NAMES = ("W_q", "W_k", "W_v", "b_q", "b_k", "b_v", "W_o", "b_o")


def split_heads(x: np.ndarray, n_heads: int) -> np.ndarray:
    """(..., n, d_model) -> (..., n_heads, n, d_model // n_heads): head h takes features h*d_h:(h+1)*d_h."""
    *batch, n, d_model = x.shape
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
    x = x.reshape(*batch, n, n_heads, d_model // n_heads)  # (..., n, h, d_h)
    return np.swapaxes(x, -3, -2)  # (..., h, n, d_h)


def merge_heads(x: np.ndarray) -> np.ndarray:
    """(..., n_heads, n, d_h) -> (..., n, n_heads * d_h): the inverse of :func:`split_heads`."""
    *batch, h, n, d_h = x.shape
    return np.swapaxes(x, -3, -2).reshape(*batch, n, h * d_h)  # (..., n, h, d_h) -> (..., n, h*d_h)


def init_mha_params(d_model: int, rng: np.random.Generator | None = None, dtype=np.float64) -> dict:
    """Random parameters in the layout :func:`multi_head_attention` reads (Xavier-uniform weights, zero biases)."""
    rng = np.random.default_rng(0) if rng is None else rng
    bound = np.sqrt(6.0 / (2 * d_model))
    p = {name: rng.uniform(-bound, bound, (d_model, d_model)).astype(dtype) for name in ("W_q", "W_k", "W_v", "W_o")}
    p.update({name: np.zeros(d_model, dtype=dtype) for name in ("b_q", "b_k", "b_v", "b_o")})
    return p


def multi_head_attention(x, params: dict, n_heads: int, mask=None, scale: float | None = None):
    """Multi-head self-attention.

    x: (..., n, d_model); params: ``W_q, W_k, W_v, W_o`` (d_model, d_model) and
    ``b_q, b_k, b_v, b_o`` (d_model,) (biases optional); n_heads divides d_model;
    mask: broadcastable to (..., n_heads, n, n), boolean (True = may attend) or additive.
    Returns ``(output (..., n, d_model), weights (..., n_heads, n, n))``.
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 2, "(..., n, d_model)")
    d_model = x.shape[-1]
    if n_heads < 1 or d_model % n_heads:
        raise ValueError(f"n_heads: expected a divisor of d_model={d_model}, got {n_heads}")
    missing = [k for k in ("W_q", "W_k", "W_v", "W_o") if k not in params]
    if missing:
        raise ValueError(f"params: expected keys {PARAM_NAMES}, missing {missing}")
    p = {}
    for name in PARAM_NAMES:
        if name.startswith("W"):
            W = as_array(params[name], name)
            if W.shape != (d_model, d_model):
                raise ValueError(f"{name}: expected shape ({d_model}, {d_model}), got {W.shape}")
            p[name] = W
        else:
            b = params.get(name)
            b = np.zeros(d_model, dtype=x.dtype) if b is None else as_array(b, name)
            check_dim(b.shape[-1] if b.ndim else 0, d_model, f"{name}'s length vs d_model", f"({d_model},)", b.shape)
            p[name] = b
    q = split_heads(x @ p["W_q"].T + p["b_q"], n_heads)  # (..., h, n, d_h)
    k = split_heads(x @ p["W_k"].T + p["b_k"], n_heads)  # (..., h, n, d_h)
    v = split_heads(x @ p["W_v"].T + p["b_v"], n_heads)  # (..., h, n, d_h)
    heads, weights = scaled_dot_product_attention(q, k, v, mask=mask, scale=scale)  # (..., h, n, d_h)
    out = merge_heads(heads) @ p["W_o"].T + p["b_o"]  # (..., n, d_model)
    return out, weights


def mha_params_from_torch(module) -> dict:
    """Read a ``torch.nn.MultiheadAttention``'s weights into :func:`multi_head_attention`'s ``params``.

    The module packs W_q, W_k, W_v into ``in_proj_weight`` (3 d_model, d_model) and
    their biases into ``in_proj_bias``; W_o is ``out_proj.weight``.
    """
    if getattr(module, "in_proj_weight", None) is None:
        raise ValueError("module: expected a torch.nn.MultiheadAttention with a packed in_proj_weight "
                         "(kdim == vdim == embed_dim)")
    W = module.in_proj_weight.detach().cpu().numpy()  # (3 d_model, d_model)
    W_q, W_k, W_v = np.split(W, 3, axis=0)
    d_model = W_q.shape[0]
    if module.in_proj_bias is not None:
        b_q, b_k, b_v = np.split(module.in_proj_bias.detach().cpu().numpy(), 3)
    else:
        b_q = b_k = b_v = np.zeros(d_model, dtype=W.dtype)
    b_o = module.out_proj.bias
    b_o = np.zeros(d_model, dtype=W.dtype) if b_o is None else b_o.detach().cpu().numpy()
    return {"W_q": W_q, "W_k": W_k, "W_v": W_v, "b_q": b_q, "b_k": b_k, "b_v": b_v,
            "W_o": module.out_proj.weight.detach().cpu().numpy(), "b_o": b_o}
