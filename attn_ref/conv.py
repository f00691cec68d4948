"""A convolution is multi-head self-attention with a fixed, local receptive field.

Cordonnier, Loukas & Jaggi (2020), "On the Relationship between Self-Attention and
Convolutional Layers", Lemma 1 / Theorem 1: a multi-head self-attention layer with
N_h = K*K heads and *relative* positional attention computes exactly a K x K
convolution.  Head l gets a centre of attention Delta_l (one kernel offset) and
the quadratic relative encoding (the book's rho_delta, u^(l), gamma; the paper writes r_delta, v^(h), alpha)

    rho_delta = (||delta||^2, delta_1, delta_2),      u_l = -gamma (1, -2 Delta_l1, -2 Delta_l2),
    score(q, k) = u_l . rho_{k - q} = -gamma (||delta||^2 - 2 <delta, Delta_l>)
                = -gamma ||delta - Delta_l||^2 + gamma ||Delta_l||^2,

so the softmax over keys k peaks at k = q + Delta_l; as gamma -> infinity it becomes a
one-hot on that pixel (the "hard" limit).  Each head then copies the pixel at offset
Delta_l; the output projection multiplies it by the kernel slice W[:, :, i, j] and sums
the heads.  That is im2col followed by a matrix product: a convolution.

Layout: an image is a set of pixel vectors, ``x`` (..., H, W, C_in) (rows, columns,
channels; leading batch dims allowed).  A PyTorch batch (B, C, H, W) becomes
``x.transpose(0, 2, 3, 1)``.  Kernels have ``torch.nn.Conv2d.weight``'s shape
(C_out, C_in, K, K), and, like PyTorch (and every deep-learning "convolution"), the
operation is a cross-correlation: out[y, x] = b + sum_{i,j} W[:, :, i, j] x[y+i-p, x+j-p].

Zero padding: a 'same' convolution reads zeros outside the image.  Here the keys are
the pixels of the *zero-padded* image, (H + 2p) x (W + 2p) with p = K // 2, so a head
whose offset leaves the image attends to a zero pixel and contributes zero, exactly as
the padding does.  (With keys restricted to the image, ``pad=0``, the hard limit picks the
nearest in-image pixel instead: replicate padding, wrong at the border.)
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._checks import as_array, check_dim, check_min_ndim, check_ndim
from .softmax import softmax


def _check_kernel(weight, bias=None):
    weight = as_array(weight, "weight")
    check_ndim(weight, "weight", 4, "(C_out, C_in, K, K)")
    c_out, _, k1, k2 = weight.shape
    if k1 != k2 or k1 % 2 == 0:
        raise ValueError(f"weight: expected an odd square kernel (C_out, C_in, K, K), got {weight.shape}")
    if bias is None:
        bias = np.zeros(c_out, dtype=weight.dtype)
    bias = as_array(bias, "bias")
    check_ndim(bias, "bias", 1, "(C_out,)")
    check_dim(bias.shape[0], c_out, "bias length vs the kernel's C_out", f"(C_out={c_out},)", bias.shape)
    return weight, bias


def conv2d_same(x, weight, bias=None) -> np.ndarray:
    """torch.nn.Conv2d(padding='same', stride=1) with plain loops over the kernel (cross-correlation).

    x: (..., H, W, C_in); weight: (C_out, C_in, K, K), K odd; bias: (C_out,) or None.
    out[..., y, x, :] = bias + sum_{i, j} W[:, :, i, j] @ x_pad[..., y + i, x + j, :],
    x_pad the image with p = K // 2 zeros on every side.  Returns (..., H, W, C_out).
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 3, "(..., H, W, C_in)")
    weight, bias = _check_kernel(weight, bias)
    c_out, c_in, K, _ = weight.shape
    check_dim(x.shape[-1], c_in, "x's channels vs the kernel's C_in", f"(..., H, W, C_in={c_in})", x.shape)
    H, W = x.shape[-3:-1]
    p = K // 2
    pad = [(0, 0)] * (x.ndim - 3) + [(p, p), (p, p), (0, 0)]
    x_pad = np.pad(x, pad)  # (..., H + 2p, W + 2p, C_in)
    out = np.zeros(x.shape[:-1] + (c_out,), dtype=np.result_type(x, weight))
    for i in range(K):
        for j in range(K):
            window = x_pad[..., i:i + H, j:j + W, :]  # (..., H, W, C_in): pixel (y+i-p, x+j-p)
            out += window @ weight[:, :, i, j].T  # (..., H, W, C_in) x (C_in, C_out) -> (..., H, W, C_out)
    return out + bias


def kernel_offsets(K: int) -> np.ndarray:
    """The K*K centres of attention Delta_l = (i - K//2, j - K//2), kernel index (i, j) in row-major order.

    Returns an int array (K*K, 2): column 0 the row offset (down), column 1 the column offset (right).
    Head h = i * K + j reads kernel slice W[:, :, i, j].
    """
    if K < 1 or K % 2 == 0:
        raise ValueError(f"K: expected an odd kernel size >= 1, got {K}")
    r = np.arange(K) - K // 2
    di, dj = np.meshgrid(r, r, indexing="ij")  # (K, K) each
    return np.stack([di.ravel(), dj.ravel()], axis=1)  # (K*K, 2)


def quadratic_encoding(delta) -> np.ndarray:
    """The relative positional encoding rho_delta = (||delta||^2, delta_1, delta_2); delta (..., 2) -> (..., 3)."""
    delta = as_array(delta, "delta")
    if delta.ndim < 1 or delta.shape[-1] != 2:
        raise ValueError(f"delta: expected shape (..., 2), got {delta.shape}")
    return np.concatenate([np.sum(delta**2, axis=-1, keepdims=True), delta], axis=-1)


def head_query_vectors(centres, gamma: float) -> np.ndarray:
    """The heads' relative-attention vectors u_l = -gamma (1, -2 Delta_l1, -2 Delta_l2): (N_h, 2) -> (N_h, 3)."""
    centres = as_array(centres, "centres")
    check_ndim(centres, "centres", 2, "(N_h, 2)")
    check_dim(centres.shape[1], 2, "centres' last axis", "(N_h, 2)", centres.shape)
    ones = np.ones((centres.shape[0], 1))
    return -gamma * np.concatenate([ones, -2.0 * centres], axis=1)  # (N_h, 3)


def pixel_grid(H: int, W: int, pad: int = 0) -> np.ndarray:
    """Coordinates (row, col) of the pixels of an H x W image padded by ``pad``: ((H+2pad)*(W+2pad), 2), row-major.

    Padded pixels have coordinates -pad .. -1 and H .. H+pad-1.
    """
    rows = np.arange(-pad, H + pad)
    cols = np.arange(-pad, W + pad)
    r, c = np.meshgrid(rows, cols, indexing="ij")
    return np.stack([r.ravel(), c.ravel()], axis=1)  # (N_k, 2)


def relative_scores(H: int, W: int, centres, gamma: float = 1.0, pad: int = 0) -> np.ndarray:
    """The attention scores u_l . rho_{k - q} of every head, query pixel and key pixel.

    Queries: the H*W pixels (row-major); keys: the (H+2pad)*(W+2pad) pixels of the padded image.
    centres: (N_h, 2).  Returns (N_h, H*W, N_k) with N_k = (H+2pad)*(W+2pad).
    """
    q = pixel_grid(H, W)  # (N_q, 2)
    k = pixel_grid(H, W, pad)  # (N_k, 2)
    delta = k[None, :, :] - q[:, None, :]  # (N_q, N_k, 2): delta = key - query
    r = quadratic_encoding(delta)  # (N_q, N_k, 3)
    v = head_query_vectors(centres, gamma)  # (N_h, 3)
    return np.einsum("qkc,hc->hqk", r, v)  # (N_h, N_q, N_k)


def relative_attention_weights(H: int, W: int, centres, gamma: float = np.inf, pad: int = 0) -> np.ndarray:
    """Each head's attention probabilities (N_h, H*W, N_k): softmax of :func:`relative_scores` over the keys.

    ``gamma=np.inf`` gives the hard limit: a one-hot on the argmax key of each query
    (the key at offset Delta_l when it lies in the padded image).
    """
    if np.isinf(gamma):
        s = relative_scores(H, W, centres, 1.0, pad)  # (N_h, N_q, N_k)
        one_hot = np.zeros_like(s)
        np.put_along_axis(one_hot, np.argmax(s, axis=-1)[..., None], 1.0, axis=-1)
        return one_hot
    if gamma <= 0:
        raise ValueError(f"gamma: expected a positive sharpness (or np.inf), got {gamma}")
    return softmax(relative_scores(H, W, centres, gamma, pad), axis=-1)


class ConvAsAttention(NamedTuple):
    """Parameters of the multi-head self-attention layer that computes a convolution.

    centres: (N_h, 2) the heads' centres of attention Delta_l (N_h = K*K);
    W_val: (N_h, C_in, C_in) per-head value projections (identity: each head copies a pixel);
    W_out: (C_out, N_h * C_in) output projection, block h = the kernel slice W[:, :, i, j];
    b_out: (C_out,) the convolution's bias; pad: K // 2, the zero padding of the keys.
    Only the product W_out^(h) W_val^(h) = W[:, :, i, j] matters (the paper's Lemma 1).
    """

    centres: np.ndarray
    W_val: np.ndarray
    W_out: np.ndarray
    b_out: np.ndarray
    pad: int


def conv_as_attention_params(weight, bias=None) -> ConvAsAttention:
    """The attention layer's parameters for a Conv2d kernel (C_out, C_in, K, K) and bias (C_out,)."""
    weight, bias = _check_kernel(weight, bias)
    c_out, c_in, K, _ = weight.shape
    centres = kernel_offsets(K)  # (K*K, 2)
    n_heads = K * K
    W_val = np.broadcast_to(np.eye(c_in, dtype=weight.dtype), (n_heads, c_in, c_in)).copy()
    # head h = i*K + j: block h of W_out is W[:, :, i, j]
    W_out = weight.reshape(c_out, c_in, n_heads).transpose(0, 2, 1).reshape(c_out, n_heads * c_in)
    return ConvAsAttention(centres, W_val, W_out, bias.copy(), K // 2)


def relative_attention_conv(x, params: ConvAsAttention, gamma: float = np.inf, pad: int | None = None):
    """Multi-head self-attention with quadratic relative positional attention over an image.

    x: (..., H, W, C_in); params: from :func:`conv_as_attention_params`; gamma: the
    sharpness (``np.inf`` = hard one-hot limit); pad: padding of the key set (default
    ``params.pad``; 0 = keys inside the image only).
    head_h = A_h X_pad W_val^(h)^T;  out = concat_h(head_h) W_out^T + b_out.
    Returns ``(out, weights)`` as every attention of attn_ref: out (..., H, W, C_out), weights
    (N_h, H*W, N_k), the same for every image of the batch.
    """
    x = as_array(x, "x")
    check_min_ndim(x, "x", 3, "(..., H, W, C_in)")
    n_heads, c_in, _ = params.W_val.shape
    check_dim(x.shape[-1], c_in, "x's channels vs W_val's C_in", f"(..., H, W, C_in={c_in})", x.shape)
    pad = params.pad if pad is None else pad
    *batch, H, W, _ = x.shape
    A = relative_attention_weights(H, W, params.centres, gamma, pad)  # (N_h, N_q, N_k)
    widths = [(0, 0)] * len(batch) + [(pad, pad), (pad, pad), (0, 0)]
    keys = np.pad(x, widths).reshape(*batch, -1, c_in)  # (..., N_k, C_in): zeros outside the image
    values = np.einsum("...kc,hdc->...hkd", keys, params.W_val)  # (..., N_h, N_k, C_in)
    heads = A @ values  # (N_h, N_q, N_k) x (..., N_h, N_k, C_in) -> (..., N_h, N_q, C_in)
    concat = np.moveaxis(heads, -3, -2).reshape(*batch, H * W, n_heads * c_in)  # (..., N_q, N_h * C_in)
    out = concat @ params.W_out.T + params.b_out  # (..., N_q, C_out)
    out = out.reshape(*batch, H, W, -1)  # (..., H, W, C_out)
    return out, A
