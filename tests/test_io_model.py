"""attn_ref.io_model: HBM traffic of standard attention and FlashAttention (Dao et al. 2022).

Exact counts for small cases worked by hand, the closed forms against a block-by-block simulation of
Algorithms 1 and 4 (partial last blocks included), and Theorem 2's asymptotics: standard Θ(n d + n^2),
tiled Θ(n^2 d^2 / M), so their ratio is Θ(M / d^2): it grows with M, and with n up to its limit.
"""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from attn_ref.io_model import (
    Traffic,
    backward_recomputation,
    flash_attention_io,
    flash_backward_io,
    flash_block_sizes,
    standard_attention_io,
    standard_backward_io,
)


def test_small_case_worked_by_hand():
    """n = 8, d = 2, 4-byte numbers.

    Standard (Algorithm 0): reads Q, K (2 x 16), S (64), P (64), V (16) = 176 elements = 704 bytes;
    writes S (64), P (64), O (16) = 144 elements = 576 bytes.

    Tiled, SRAM 64 bytes: M = 16 elements, B_c = ceil(16 / 8) = 2, B_r = min(2, d = 2) = 2, T_c = 8 / 2 = 4.
    Writes: initial O, mu, s (16 + 8 + 8 = 32), then per key block O, mu, s again (32) x 4 = 128: 160 elements
    = 640 bytes.  Reads: K, V once (32), per key block Q, O (32) and mu, s (16) x 4 = 192: 224 elements = 896
    bytes.  More than the standard algorithm: an SRAM of 16 numbers is too small to save anything (M < 4 d^2 + ...).

    Tiled, SRAM 128 bytes: M = 32, B_c = 4, B_r = min(4, 2) = 2, T_c = 2.  Writes 32 + 2 x 32 = 96 elements
    = 384 bytes; reads 32 + 2 x 48 = 128 elements = 512 bytes: 896 bytes against the standard 1280.
    """
    assert standard_attention_io(8, 2, elem_bytes=4) == Traffic(reads=704, writes=576)
    assert flash_block_sizes(2, 64, elem_bytes=4) == (2, 2)
    assert flash_attention_io(8, 2, 64, elem_bytes=4) == Traffic(reads=896, writes=640)
    assert flash_block_sizes(2, 128, elem_bytes=4) == (2, 4)
    assert flash_attention_io(8, 2, 128, elem_bytes=4) == Traffic(reads=512, writes=384)
    assert flash_attention_io(8, 2, 128, elem_bytes=4).total == 896 < standard_attention_io(8, 2, 4).total == 1280


def test_backward_small_case_worked_by_hand():
    """n = 8, d = 2, 4-byte numbers, SRAM 128 bytes (B_c = 4, T_c = 2).

    Standard (Algorithm 3): reads 5 x 64 + 5 x 16 = 400 elements = 1600 bytes; writes 2 x 64 + 3 x 16 = 176
    elements = 704 bytes.  Tiled (Algorithm 4): reads K, V (32) + 2 x (Q, O, dO, dQ = 64, mu, s = 16) = 192
    elements = 768 bytes; writes dQ, dK, dV initialised (48), dK, dV at the end (32), dQ per key block
    (16 x 2) = 112 elements = 448 bytes.  Recomputed: S = Q K^T, 2 n^2 d = 256 flops, n^2 = 64 exponentials;
    P (64 numbers, 256 bytes) not stored, mu and s (16 numbers, 64 bytes) kept instead.
    """
    assert standard_backward_io(8, 2, elem_bytes=4) == Traffic(reads=1600, writes=704)
    assert flash_backward_io(8, 2, 128, elem_bytes=4) == Traffic(reads=768, writes=448)
    assert backward_recomputation(8, 2, elem_bytes=4) == (256, 64, 256, 64)


def _simulate_forward(n, d, M):
    """Algorithm 1's loads and stores, block by block (elements), independent of the closed form."""
    b_c = math.ceil(M / (4 * d))
    b_r = min(b_c, d)
    reads = writes = 0
    writes += n * d + 2 * n  # O, mu (the paper's m), s (the paper's l) initialised in HBM
    for j0 in range(0, n, b_c):
        cols = min(b_c, n - j0)
        reads += 2 * cols * d  # K_j, V_j
        for i0 in range(0, n, b_r):
            rows = min(b_r, n - i0)
            reads += 2 * rows * d + 2 * rows  # Q_i, O_i, mu_i, s_i
            writes += rows * d + 2 * rows  # O_i, mu_i, s_i
    return reads, writes


def _simulate_backward(n, d, M):
    """Algorithm 4's loads and stores, block by block (elements)."""
    b_c = math.ceil(M / (4 * d))
    b_r = min(b_c, d)
    reads = writes = 0
    writes += 3 * n * d  # dQ, dK, dV initialised
    for j0 in range(0, n, b_c):
        cols = min(b_c, n - j0)
        reads += 2 * cols * d  # K_j, V_j
        for i0 in range(0, n, b_r):
            rows = min(b_r, n - i0)
            reads += 4 * rows * d + 2 * rows  # Q_i, O_i, dO_i, dQ_i, mu_i, s_i
            writes += rows * d  # dQ_i
        writes += 2 * cols * d  # dK_j, dV_j
    return reads, writes


@given(n=st.integers(1, 300), d=st.integers(1, 40), extra=st.integers(0, 3000), elem=st.sampled_from([1, 2, 4]))
@settings(max_examples=80, deadline=None)
def test_closed_forms_equal_a_block_by_block_simulation(n, d, extra, elem):
    M = 4 * d + extra  # elements; the SRAM must hold at least 4 d
    sram = M * elem + elem - 1  # a partial element of SRAM does not count
    r, w = _simulate_forward(n, d, M)
    assert flash_attention_io(n, d, sram, elem) == Traffic(r * elem, w * elem)
    r, w = _simulate_backward(n, d, M)
    assert flash_backward_io(n, d, sram, elem) == Traffic(r * elem, w * elem)
    # more SRAM never moves more bytes; the standard algorithm does not depend on it
    assert flash_attention_io(n, d, 2 * sram, elem).total <= flash_attention_io(n, d, sram, elem).total
    assert standard_attention_io(n, d, elem).total == (4 * n * d + 4 * n * n) * elem


def _ratio(n, d, sram, elem=2):
    return standard_attention_io(n, d, elem).total / flash_attention_io(n, d, sram, elem).total


def test_theorem_2_orders():
    """standard / (n d + n^2) is the constant 4; tiled / (n^2 d^2 / M) stays between constants (12 (1 + 4 / 3d)
    plus lower-order terms) over n = 512..65536, d = 32..128 and M in Proposition 3's range [4d, n d]."""
    constants = []
    for n in (512, 4096, 65536):
        for d in (32, 64, 128):
            assert standard_attention_io(n, d, 1).total == 4 * (n * d + n * n)
            for M in (4 * d, 64 * d, n * d // 4, n * d):
                constants.append(flash_attention_io(n, d, M, 1).total / (n * n * d * d / M))
    assert 12 <= min(constants) and max(constants) < 20, (min(constants), max(constants))


def test_the_saving_grows_with_sram_and_with_n_toward_m_over_3d2():
    """Theorem 2: the ratio is Θ(M / d^2).  d = 64, 2-byte numbers, SRAM 64, 128, 192 KB (A100: 192 KB per SM).

    At fixed n the ratio grows with M; at fixed M (> 4 d^2 elements) it grows with n toward
    4 B_c / (3 d + 4) ~ M / (3 d^2): 2.6, 5.2, 7.8 here.  With M < 4 d^2 it falls with n instead (the
    4 n d reads of Q and O per key block cost more than the n^2 they save): the SRAM must be large
    compared with d^2.  For short sequences the ceilings of T_c = ceil(n / B_c) blur the steps (at n = 512
    both 128 and 192 KB need T_c = 2 key blocks): a factor > 2.7 between 64 and 192 KB is asserted from n = 4096."""
    d, ns = 64, (512, 1024, 4096, 16384, 65536)
    for n in ns:
        by_sram = [_ratio(n, d, kb * 1024) for kb in (64, 128, 192)]
        assert by_sram == sorted(by_sram)
        if n >= 4096:
            assert by_sram[-1] > 2.7 * by_sram[0], by_sram
    for kb in (64, 128, 192):
        by_n = [_ratio(n, d, kb * 1024) for n in ns]
        assert by_n == sorted(by_n), by_n
        limit = 4 * flash_block_sizes(d, kb * 1024)[1] / (3 * d + 4)
        assert by_n[-1] < limit and by_n[-1] > 0.98 * limit
    small = [_ratio(n, 64, 8 * 1024) for n in ns]  # M = 4096 elements < 4 d^2 = 16384
    assert small == sorted(small, reverse=True)


def test_backward_saving_and_the_price_of_recomputation():
    n, d, sram = 8192, 64, 128 * 1024
    standard, flash = standard_backward_io(n, d), flash_backward_io(n, d, sram)
    assert standard.total > 3 * flash.total
    price = backward_recomputation(n, d)
    assert price.flops == 2 * n * n * d and price.exps == n * n
    assert price.flops / (8 * n * n * d) == 0.25  # 25 % more flops than the standard backward's four products
    assert price.bytes_not_stored == n * n * 2 == 128 * 1024 * 1024  # 128 MiB of P per head at n = 8192
    assert price.bytes_kept == 2 * n * 2


def test_errors():
    for bad in (0, -1, 2.5, True, None):
        with pytest.raises(ValueError, match="n: expected a whole number >= 1"):
            standard_attention_io(bad, 64)
        with pytest.raises(ValueError, match="d: expected a whole number >= 1"):
            flash_attention_io(64, bad, 1024)
        with pytest.raises(ValueError, match="elem_bytes: expected a whole number >= 1"):
            flash_backward_io(64, 8, 1024, bad)
    with pytest.raises(ValueError, match=r"sram_bytes: expected room for at least 4 d = 256 elements of 2 bytes "
                                         r"\(512 bytes\), got 511 bytes \(255 elements\)"):
        flash_attention_io(1024, 64, 511)
    flash_attention_io(1024, 64, 512)  # exactly 4 d elements: B_c = B_r = 1
