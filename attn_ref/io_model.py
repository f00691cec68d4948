"""Why FlashAttention is fast: a count of the bytes moved to and from GPU memory (no GPU needed).

A GPU has a large, slow memory (HBM, tens of GB) and a small, fast one on chip (SRAM, about 100 KB
per streaming multiprocessor).  Attention does few arithmetic operations per number it reads, so its
time is set by the traffic between the two (Dao et al. 2022, "FlashAttention: Fast and
Memory-Efficient Exact Attention with IO-Awareness", NeurIPS 2022).  This module counts that traffic,
in bytes, for sequence length n, head width d, element size ``elem_bytes`` and an SRAM of
``sram_bytes`` (the paper's M, counted there in elements: M = sram_bytes / elem_bytes; the book writes
S_sram, as its M is the mask; the paper's N is n).  The algorithms' names are the paper's:
S = Q K^T the scores (the book's A, transposed), P = softmax(S) the weights (A'^T), dX the gradient of the loss
with respect to X; its m and ℓ are the book's mu and s.

* :func:`standard_attention_io` -- the paper's Algorithm 0: read Q, K, compute the (n, n) scores
  and **write** them to HBM; read them back, softmax, **write** the (n, n) weights; read them back
  with V, write the output: 4 n d + 4 n^2 element accesses, Θ(n d + n^2) (Theorem 2).
* :func:`flash_attention_io` -- Algorithm 1: keys and values in column blocks of B_c = ceil(M / 4d)
  rows, queries in row blocks of B_r = min(ceil(M / 4d), d) rows (:func:`flash_block_sizes`).  Each
  K_j, V_j is read once; for each of the T_c = ceil(n / B_c) key blocks, all of Q and of the partial
  output O (with the running maximum mu and sum s of every row, the paper's m and ℓ) is read and O,
  mu, s written back.  No (n, n) array ever reaches HBM: about 3 n d T_c ~ 12 n^2 d^2 / M element
  accesses, Θ(n^2 d^2 M^-1) (Theorem 2).  Proposition 3: no exact attention algorithm does
  asymptotically better for all M in [d, n d].
* The ratio standard / tiled tends to about M / (3 d^2) as n grows (it rises toward it when M > 4 d^2):
  the larger the SRAM relative to d^2, the larger the saving (d = 64 and M = 100 KB of 2-byte
  numbers: about 4 times fewer bytes).
* Backward pass (the paper's appendix on the backward pass): the standard one (:func:`standard_backward_io`)
  reads the stored (n, n) weights P and writes and reads (n, n) gradients dP and dS; FlashAttention's
  (:func:`flash_backward_io`) stores no P: it keeps only mu and s (2n numbers) and
  **recomputes** each tile of the scores and weights from Q, K in SRAM (:func:`backward_recomputation`):
  more arithmetic (the n x n x d product Q K^T once more), far fewer bytes, Θ(n^2 d^2 M^-1) (the paper's
  IO analysis of the backward pass).

These are counts of a model (every listed read and write of the algorithms, exact for the given
block sizes), not measurements: caches, the GPU's many SRAMs in parallel and the fusion of the
standard algorithm's steps by a real library are left out.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from ._checks import check_positive_int


class Traffic(NamedTuple):
    """HBM traffic of one algorithm, in bytes."""

    reads: int  # bytes read from HBM
    writes: int  # bytes written to HBM

    @property
    def total(self) -> int:
        return self.reads + self.writes


class Recomputation(NamedTuple):
    """What FlashAttention's backward pass does instead of storing the (n, n) weights P."""

    flops: int  # extra floating-point operations: S = Q K^T once more, 2 n^2 d
    exps: int  # extra exponentials: P = exp(S - mu) / s once more, n^2
    bytes_not_stored: int  # P kept between the passes by the standard algorithm, n^2 elements
    bytes_kept: int  # what FlashAttention keeps instead: mu and s, 2 n elements


def _sizes(n, d, elem_bytes) -> tuple[int, int, int]:
    return check_positive_int(n, "n"), check_positive_int(d, "d"), check_positive_int(elem_bytes, "elem_bytes")


def flash_block_sizes(d: int, sram_bytes: int, elem_bytes: int = 2) -> tuple[int, int]:
    """(B_r, B_c) of Dao et al. 2022, Algorithm 1: B_c = ceil(M / 4d), B_r = min(ceil(M / 4d), d).

    M = sram_bytes // elem_bytes elements; it must hold at least 4 d of them (one row each of K_j, V_j,
    Q_i and O_i), else ValueError.
    """
    d, sram_bytes, elem_bytes = (check_positive_int(d, "d"), check_positive_int(sram_bytes, "sram_bytes"),
                                 check_positive_int(elem_bytes, "elem_bytes"))
    M = sram_bytes // elem_bytes
    if M < 4 * d:
        raise ValueError(f"sram_bytes: expected room for at least 4 d = {4 * d} elements of {elem_bytes} bytes "
                         f"({4 * d * elem_bytes} bytes), got {sram_bytes} bytes ({M} elements)")
    b_c = math.ceil(M / (4 * d))
    return min(b_c, d), b_c


def standard_attention_io(n: int, d: int, elem_bytes: int = 2) -> Traffic:
    """HBM traffic of standard attention, Dao et al. 2022, Algorithm 0 (Theorem 2: Θ(n d + n^2)).

    1. read Q, K (2 n d); write the scores S = Q K^T (n^2);
    2. read S (n^2); write P = softmax(S) (n^2);
    3. read P (n^2) and V (n d); write O = P V (n d).
    Reads 3 n d + 2 n^2, writes n d + 2 n^2 elements, times ``elem_bytes``.
    """
    n, d, e = _sizes(n, d, elem_bytes)
    return Traffic(reads=(3 * n * d + 2 * n * n) * e, writes=(n * d + 2 * n * n) * e)


def flash_attention_io(n: int, d: int, sram_bytes: int, elem_bytes: int = 2) -> Traffic:
    """HBM traffic of FlashAttention's forward pass, Dao et al. 2022, Algorithm 1 (Theorem 2: Θ(n^2 d^2 / M)).

    Block sizes from :func:`flash_block_sizes`; T_c = ceil(n / B_c) key blocks.
    Initialise O (n d), mu and s (2 n) in HBM: writes.  For each key block j: read K_j, V_j
    (2 B_c d; 2 n d over all j); for each query block i: read Q_i, O_i (2 B_r d), mu_i, s_i (2 B_r),
    write O_i (B_r d), mu_i, s_i (2 B_r) -- over all i, reads 2 n d + 2 n and writes n d + 2 n per key block.
    Reads 2 n d + T_c (2 n d + 2 n), writes n d + 2 n + T_c (n d + 2 n) elements, times ``elem_bytes``.
    """
    n, d, e = _sizes(n, d, elem_bytes)
    _, b_c = flash_block_sizes(d, sram_bytes, e)
    t_c = math.ceil(n / b_c)
    reads = 2 * n * d + t_c * (2 * n * d + 2 * n)
    writes = n * d + 2 * n + t_c * (n * d + 2 * n)
    return Traffic(reads=reads * e, writes=writes * e)


def standard_backward_io(n: int, d: int, elem_bytes: int = 2) -> Traffic:
    """HBM traffic of the standard backward pass (Dao et al. 2022, appendix on the backward pass); P stored.

    1. read P, dO (n^2 + n d); write dV = P^T dO (n d);
    2. read dO, V (2 n d); write dP = dO V^T (n^2);
    3. read P, dP (2 n^2); write dS, dS_ij = P_ij (dP_ij - sum_l P_il dP_il) (n^2);
    4. read dS, K (n^2 + n d); write dQ = dS K (n d);
    5. read dS, Q (n^2 + n d); write dK = dS^T Q (n d).
    Reads 5 n^2 + 5 n d, writes 2 n^2 + 3 n d elements, times ``elem_bytes``.
    """
    n, d, e = _sizes(n, d, elem_bytes)
    return Traffic(reads=(5 * n * n + 5 * n * d) * e, writes=(2 * n * n + 3 * n * d) * e)


def flash_backward_io(n: int, d: int, sram_bytes: int, elem_bytes: int = 2) -> Traffic:
    """HBM traffic of FlashAttention's backward pass, Dao et al. 2022, appendix on the backward pass (Θ(n^2 d^2 / M)).

    Same blocks as the forward pass.  Initialise dQ, dK, dV in HBM (3 n d writes).  For each key
    block j: read K_j, V_j (2 n d over all j); for each query block i read Q_i, O_i, dO_i, dQ_i
    (4 B_r d) and mu_i, s_i (2 B_r), recompute S_ij and P_ij in SRAM (:func:`backward_recomputation`),
    write dQ_i (B_r d); after the inner loop write dK_j, dV_j (2 n d over all j).
    Reads 2 n d + T_c (4 n d + 2 n), writes 5 n d + T_c n d elements, times ``elem_bytes``.
    """
    n, d, e = _sizes(n, d, elem_bytes)
    _, b_c = flash_block_sizes(d, sram_bytes, e)
    t_c = math.ceil(n / b_c)
    reads = 2 * n * d + t_c * (4 * n * d + 2 * n)
    writes = 5 * n * d + t_c * n * d
    return Traffic(reads=reads * e, writes=writes * e)


def backward_recomputation(n: int, d: int, elem_bytes: int = 2) -> Recomputation:
    """The price and the gain of recomputing P in the backward pass instead of storing it (Dao et al. 2022).

    Price: S = Q K^T once more (n^2 d multiply-adds, 2 n^2 d flops) and P = exp(S - mu) / s once
    more (n^2 exponentials), on top of the standard backward's 8 n^2 d flops (four n x n x d
    products: dV, dP, dQ, dK).  Gain: the (n, n) P is not kept between the passes (n^2 elements
    of memory, written once and read twice by the standard algorithm); only mu and s (2 n) are.
    """
    n, d, e = _sizes(n, d, elem_bytes)
    return Recomputation(flops=2 * n * n * d, exps=n * n, bytes_not_stored=n * n * e, bytes_kept=2 * n * e)
