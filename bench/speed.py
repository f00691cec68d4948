"""The speed figures of ``make bench``: attention in NumPy against PyTorch's fused kernel, the loop
against the matrix form, truncated and blocked attention, and the share of the machine's peak.
"""

from __future__ import annotations

import contextlib

import numpy as np

from attn_book.kernels import tuned_blocked_attention
from attn_book.timing import compare_times, peak_bytes
from attn_ref.attention import attend_one, scaled_dot_product_attention, self_attention

from . import TITLES, Row, ms, ratio

D = 64  # head dimension of every attention figure


@contextlib.contextmanager
def threads(n: int):
    """NumPy's BLAS (threadpoolctl) and PyTorch both on ``n`` threads."""
    import torch
    from threadpoolctl import threadpool_limits

    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        with threadpool_limits(n):
            yield
    finally:
        torch.set_num_threads(old)


def _qkv(n: int, d: int = D, seed: int = 0):
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal((n, d)).astype(np.float32) for _ in range(3))  # (n, d) each


def _sdpa_4d(q, k, v):
    """torch's SDPA on (1, 1, n, d) views: the only form that takes the fused CPU kernel."""
    import torch
    import torch.nn.functional as F

    tq, tk, tv = (torch.from_numpy(a)[None, None] for a in (q, k, v))  # (1, 1, n, d)
    return lambda: F.scaled_dot_product_attention(tq, tk, tv)


def _repeat(n: int) -> int:
    return 15 if n <= 256 else 7 if n <= 1024 else 3 if n <= 4096 else 2


def fig_sdpa(quick: bool, sizes: list[int] | None = None, thread_counts=(1, 2)) -> list[Row]:
    """attn_ref's matrix form on pre-projected q, k, v against torch's fused SDPA."""
    rows = []
    sizes = sizes or ([256, 1024] if quick else [256, 1024, 4096])
    for t in thread_counts:
        with threads(t):
            for n in sizes:
                q, k, v = _qkv(n)
                med = compare_times({"numpy": lambda q=q, k=k, v=v: scaled_dot_product_attention(q, k, v),
                                     "torch": _sdpa_4d(q, k, v)}, repeat=_repeat(n))
                r = med["numpy"] / med["torch"]
                target = n == 1024
                rows.append(Row(TITLES["sdpa"], f"attn_ref.scaled_dot_product_attention, n = {n}, d = {D}, "
                                f"float32, {t} thread{'s' if t > 1 else ''}", ratio(r), "≤ 1.5×" if target else "",
                                (r <= 1.5) if target else None,
                                f"{ms(med['numpy'])} vs {ms(med['torch'])} (SDPA 4-D, fused)"))
    return rows


def fig_loop(quick: bool) -> list[Row]:
    """The lecture's per-query loop (attend_one for each i) against the matrix form."""
    rows = []
    rng = np.random.default_rng(1)
    W = [rng.standard_normal((D, D)).astype(np.float32) for _ in range(3)]
    with threads(1):
        for n in [64, 128, 256] if quick else [64, 128, 256, 512, 1024]:
            x = rng.standard_normal((n, D)).astype(np.float32)  # (n, d_in): rows; the loop reads columns a^i
            a = np.ascontiguousarray(x.T)  # (d_in, n)

            def loop(a=a, n=n):
                return np.stack([attend_one(a, i, *W).b for i in range(n)])  # (n, d_v)

            med = compare_times({"loop": loop, "matrix": lambda x=x: self_attention(x, *W)},
                                repeat=3 if n <= 256 else 1, warmup=1 if n <= 256 else 0)
            rows.append(Row(TITLES["loop"], f"attend_one for each i vs self_attention, n = {n}, d = {D}, "
                            "1 thread", ratio(med["loop"] / med["matrix"]), "", None,
                            f"{ms(med['loop'])} vs {ms(med['matrix'])}"))
    return rows


def fig_banded(quick: bool) -> list[Row]:
    """Truncated attention (band width w = 64): time and peak memory as n grows 16-fold."""
    from attn_ref.truncated import truncated_attention
    w = 64
    sizes = [1024, 2048, 4096] if quick else [1024, 2048, 4096, 8192, 16384]
    times, peaks = {}, {}
    with threads(1):
        for n in sizes:
            q, k, v = _qkv(n)
            times[n] = compare_times({"band": lambda q=q, k=k, v=v: truncated_attention(q, k, v, w)}, repeat=3)["band"]
            peaks[n] = peak_bytes(truncated_attention, q, k, v, w)
    lo, hi = sizes[0], sizes[-1]
    grow = hi // lo
    t_ratio, m_ratio = times[hi] / times[lo], peaks[hi] / peaks[lo]
    t_target = 20 * grow / 16  # 20x for 16x n, scaled in --quick
    per = ", ".join(f"{n}: {ms(times[n])}" for n in sizes)
    return [
        Row(TITLES["banded"], f"truncated_attention time, w = {w}, n {lo} → {hi} ({grow}× n), 1 thread",
            ratio(t_ratio), f"≤ {t_target:.0f}×", t_ratio <= t_target, per),
        Row(TITLES["banded"], f"truncated_attention peak memory, w = {w}, n {lo} → {hi} ({grow}× n)",
            ratio(m_ratio), f"≤ {1.25 * grow:.0f}× (O(n·w))", m_ratio <= 1.25 * grow,
            f"{peaks[hi] / 2**20:.1f} MiB at n = {hi}: {peaks[hi] / (hi * (2 * w + 1)):.1f} bytes per n·(2w+1)"),
    ]


def fig_blocked(quick: bool) -> list[Row]:
    """tuned_blocked_attention (NumPy, online softmax) against torch's fused SDPA; GFLOP/s and peak memory."""
    rows = []
    sizes = [1024, 4096] if quick else [1024, 4096, 16384]
    peaks = {}
    for t in (1, 2):
        with threads(t):
            for n in sizes:
                q, k, v = _qkv(n)
                if n not in peaks:
                    peaks[n] = peak_bytes(tuned_blocked_attention, q, k, v)
                med = compare_times({"blocked": lambda q=q, k=k, v=v: tuned_blocked_attention(q, k, v),
                                     "torch": _sdpa_4d(q, k, v)}, repeat=_repeat(n), warmup=1 if n <= 4096 else 0)
                r = med["blocked"] / med["torch"]
                target = n == 4096 and t == 1
                flop = 4 * n * n * D  # the two products q k^T and p v
                rows.append(Row(TITLES["blocked"], f"n = {n}, d = {D}, float32, {t} thread"
                                f"{'s' if t > 1 else ''}", ratio(r), "≤ 1.3×" if target else "",
                                (r <= 1.3) if target else None,
                                f"{flop / med['blocked'] / 1e9:.1f} vs {flop / med['torch'] / 1e9:.1f} GFLOP/s; "
                                f"blocked peak {peaks[n] / 2**20:.1f} MiB (n×n floats: {4 * n * n / 2**20:.0f} MiB)"))
    return rows


def fig_peak(quick: bool) -> list[Row]:
    """Attention kernels' GFLOP/s against a large float32 matmul on the same machine (one thread)."""
    import torch

    m = 1024 if quick else 2048
    rng = np.random.default_rng(2)
    A, B = (rng.standard_normal((m, m)).astype(np.float32) for _ in range(2))
    tA, tB = torch.from_numpy(A), torch.from_numpy(B)
    n = 2048 if quick else 4096
    q, k, v = _qkv(n)
    with threads(1):
        med = compare_times({"numpy matmul": lambda: A @ B, "torch matmul": lambda: tA @ tB,
                             "SDPA 4-D (fused)": _sdpa_4d(q, k, v),
                             "tuned_blocked_attention": lambda: tuned_blocked_attention(q, k, v),
                             "attn_ref matrix form": lambda: scaled_dot_product_attention(q, k, v)}, repeat=3)
    peak = max(2 * m**3 / med["numpy matmul"], 2 * m**3 / med["torch matmul"])
    rows = [Row(TITLES["peak"], f"float32 matmul {m}×{m}×{m}, 1 thread (the reference)",
                f"{peak / 1e9:.1f} GFLOP/s", "", None,
                f"numpy {2 * m**3 / med['numpy matmul'] / 1e9:.1f}, torch {2 * m**3 / med['torch matmul'] / 1e9:.1f}")]
    for name in ("SDPA 4-D (fused)", "tuned_blocked_attention", "attn_ref matrix form"):
        gf = 4 * n * n * D / med[name]
        rows.append(Row(TITLES["peak"], f"{name}, n = {n}, d = {D}, 1 thread", f"{100 * gf / peak:.0f}%",
                        "", None, f"{gf / 1e9:.1f} GFLOP/s (counting the two products' 4n²d only)"))
    return rows


def fig_kernel(quick: bool) -> list[Row]:
    """What docs/kernels.md says of the tuned kernel, measured: where the matrix form's time goes,
    np.exp2 against np.exp on one tile, the lazy shift against every tile exact (one thread)."""
    from attn_book.timing import MATRIX_FORM_STAGES, matrix_form_stages

    n = 2048 if quick else 4096
    q, k, v = _qkv(n)
    rows = []
    with threads(1):
        stages = matrix_form_stages(q, k, v, repeat=3)
        products = stages["q k^T"] + stages["weights v"]
        total = sum(stages.values())
        passes = ", ".join(f"{s} {ms(stages[s])}" for s in MATRIX_FORM_STAGES)
        rows.append(Row(TITLES["kernel"], f"plain matrix form softmax(q k^T * scale) v, n = {n}, d = {D}, float32, "
                        "1 thread: share of the time outside the two products", f"{100 * (1 - products / total):.0f}%",
                        "", None, passes))
        tile = q[:256] @ k[:512].T / np.float32(8)  # one 256 x 512 tile of scores, shifted to <= 0
        tile -= tile.max(axis=1, keepdims=True)
        work = np.empty_like(tile)
        med = compare_times({"exp": lambda: np.exp(tile, out=work), "exp2": lambda: np.exp2(tile, out=work)},
                            repeat=15)
        rows.append(Row(TITLES["kernel"], "np.exp2 ÷ np.exp on one 256 × 512 float32 tile, 1 thread",
                        ratio(med["exp2"] / med["exp"]), "", None,
                        f"{1e6 * med['exp2']:.0f} µs vs {1e6 * med['exp']:.0f} µs"))
        med = compare_times({"lazy": lambda: tuned_blocked_attention(q, k, v),
                             "exact": lambda: tuned_blocked_attention(q, k, v, lazy=False),
                             "torch": _sdpa_4d(q, k, v)}, repeat=3)
        diff = np.abs(tuned_blocked_attention(q, k, v) - tuned_blocked_attention(q, k, v, lazy=False)).max()
        rows.append(Row(TITLES["kernel"], f"tuned_blocked_attention, lazy shift ÷ every tile exact, n = {n}, "
                        f"d = {D}, float32, 1 thread", ratio(med["lazy"] / med["exact"]), "< 1×",
                        med["lazy"] < med["exact"],
                        f"{ms(med['lazy'])} vs {ms(med['exact'])} (SDPA 4-D, fused: {ms(med['torch'])}); "
                        f"largest difference of the outputs {diff:.1e}"))
    return rows
