"""The Transformer encoder block, assembled from the book's pieces (Vaswani et al. 2017, sec. 3.1 and 3.3).

Post-norm (the paper's order, ``norm_first=False``)::

    y = LayerNorm(x + MultiHead(x))          # residual (He et al. 2016), layer norm (Ba et al. 2016)
    z = LayerNorm(y + FFN(y))                # FFN(y) = max(0, y W_1^T + b_1) W_2^T + b_2

Pre-norm (``norm_first=True``)::

    y = x + MultiHead(LayerNorm(x))
    z = y + FFN(LayerNorm(y))

The parameter layout is that of ``torch.nn.TransformerEncoderLayer`` (activation relu,
dropout 0); :func:`encoder_params_from_torch` reads one.
"""

from __future__ import annotations

import numpy as np

from ._checks import as_array, check_dim, check_min_ndim
from .multihead import init_mha_params, mha_params_from_torch, multi_head_attention


def layer_norm(x, gamma=None, beta=None, eps: float = 1e-5) -> np.ndarray:
    """Normalise each row of x (..., d) to mean 0 and variance 1, then scale by gamma (d,) and shift by beta (d,).

    LN(x) = gamma * (x - mean) / sqrt(var + eps) + beta, with the biased variance (Ba et al. 2016).
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 1, "(..., d)")
    d = x.shape[-1]
    mean = x.mean(axis=-1, keepdims=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)  # (..., 1)
    y = (x - mean) / np.sqrt(var + eps)  # (..., d)
    if gamma is not None:
        gamma = as_array(gamma, "gamma")
        check_dim(gamma.shape[-1] if gamma.ndim else 0, d, "gamma's length vs d", f"({d},)", gamma.shape)
        y = y * gamma
    if beta is not None:
        beta = as_array(beta, "beta")
        check_dim(beta.shape[-1] if beta.ndim else 0, d, "beta's length vs d", f"({d},)", beta.shape)
        y = y + beta
    return y


def feed_forward(x, W_1, b_1, W_2, b_2) -> np.ndarray:
    """The position-wise feed-forward network FFN(x) = max(0, x W_1^T + b_1) W_2^T + b_2.

    x: (..., n, d_model); W_1: (d_ff, d_model); b_1: (d_ff,); W_2: (d_model, d_ff); b_2: (d_model,)
    (biases may be None).
    The same two layers act on every position separately. Returns (..., n, d_model).
    """
    x = as_array(x, "x")
    W_1, W_2 = as_array(W_1, "W_1"), as_array(W_2, "W_2")
    check_min_ndim(x, "x", 1, "(..., d_model)")
    check_dim(W_1.shape[-1], x.shape[-1], "W_1's d_model vs x's", "(d_ff, d_model)", W_1.shape)
    check_dim(W_2.shape[-1], W_1.shape[0], "W_2's d_ff vs W_1's", "(d_model, d_ff)", W_2.shape)
    b_1 = 0.0 if b_1 is None else as_array(b_1, "b_1")
    b_2 = 0.0 if b_2 is None else as_array(b_2, "b_2")
    h = np.maximum(0.0, x @ W_1.T + b_1)  # (..., n, d_ff)
    return h @ W_2.T + b_2  # (..., n, d_model)


def init_encoder_params(d_model: int, d_ff: int, rng: np.random.Generator | None = None) -> dict:
    """Random parameters in the layout :func:`encoder_block` reads (float64)."""
    rng = np.random.default_rng(0) if rng is None else rng
    b1, b2 = 1 / np.sqrt(d_model), 1 / np.sqrt(d_ff)
    return {
        "attn": init_mha_params(d_model, rng),
        "W_1": rng.uniform(-b1, b1, (d_ff, d_model)), "b_1": rng.uniform(-b1, b1, d_ff),
        "W_2": rng.uniform(-b2, b2, (d_model, d_ff)), "b_2": rng.uniform(-b2, b2, d_model),
        "gamma_1": np.ones(d_model), "beta_1": np.zeros(d_model),
        "gamma_2": np.ones(d_model), "beta_2": np.zeros(d_model),
        "eps": 1e-5,
    }


def encoder_block(x, params: dict, n_heads: int, mask=None, norm_first: bool = False) -> np.ndarray:
    """One Transformer encoder block.

    x: (..., n, d_model); params: ``attn`` (the dict of :func:`attn_ref.multihead.multi_head_attention`),
    ``W_1, b_1, W_2, b_2`` (:func:`feed_forward`), ``gamma_1, beta_1, gamma_2, beta_2`` (the two
    layer norms), optional ``eps`` (1e-5); mask: broadcastable to (..., n_heads, n, n), boolean
    (True = may attend) or additive; for a key padding mask ``pad`` (..., n) with True = padding,
    pass ``~pad[..., None, None, :]``. Returns (..., n, d_model).
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 2, "(..., n, d_model)")
    eps = params.get("eps", 1e-5)

    def norm(y, i):
        return layer_norm(y, params[f"gamma_{i}"], params[f"beta_{i}"], eps)

    def attention(y):
        return multi_head_attention(y, params["attn"], n_heads, mask=mask)[0]  # (..., n, d_model)

    def ffn(y):
        return feed_forward(y, params["W_1"], params["b_1"], params["W_2"], params["b_2"])  # (..., n, d_model)

    if norm_first:
        x = x + attention(norm(x, 1))
        return x + ffn(norm(x, 2))
    x = norm(x + attention(x), 1)
    return norm(x + ffn(x), 2)


def encoder_params_from_torch(layer) -> dict:
    """Read a ``torch.nn.TransformerEncoderLayer`` (relu, dropout 0) into :func:`encoder_block`'s ``params``."""
    act = getattr(layer, "activation", None)
    name = getattr(act, "__name__", type(act).__name__).lower()
    if "relu" not in name:
        raise ValueError(f"layer: expected activation relu, got {name}")

    def get(t):
        return None if t is None else t.detach().cpu().numpy()

    if layer.norm1.eps != layer.norm2.eps:
        raise ValueError(f"layer: expected equal eps in both norms, got {layer.norm1.eps} and {layer.norm2.eps}")
    return {
        "attn": mha_params_from_torch(layer.self_attn),
        "W_1": get(layer.linear1.weight), "b_1": get(layer.linear1.bias),
        "W_2": get(layer.linear2.weight), "b_2": get(layer.linear2.bias),
        "gamma_1": get(layer.norm1.weight), "beta_1": get(layer.norm1.bias),
        "gamma_2": get(layer.norm2.weight), "beta_2": get(layer.norm2.bias),
        "eps": layer.norm1.eps,
    }
