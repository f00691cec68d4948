"""ps12_efficient's tasks 4 and 5 (their references, cases and mistakes; the tasks are declared in
:mod:`attn_grader.catalogue.ps12_efficient`, which imports this module): causal linear attention read as an RNN
from a stream of positions (Katharopoulos et al. 2020), and the HBM traffic of standard attention and
FlashAttention counted from their algorithms (Dao et al. 2022), the set's thinking task.
"""

from __future__ import annotations

import numpy as np

from attn_ref.io_model import flash_attention_io, standard_attention_io
from attn_ref.linear import causal_linear_attention_rnn, linear_attention

from ..checking.core import Mistake
from ..checking.harness import Blocks
from ._shared import edited


def _whole(blocks: Blocks) -> tuple:
    """The arrays of the stream's source ``blocks`` (the references and the tests get the source; an answer gets
    a one-pass stream of it, :func:`attn_grader.checking.harness.call`)."""
    return tuple(np.array(a) for a in blocks.arrays)


# --- task 4: causal linear attention read as an RNN, one position at a time ---------------------

def _ref_linear(blocks):
    Q, K, V = _whole(blocks)
    if len(Q) > 64:  # the parallel form (prefix sums), equal to the RNN's outputs, fast on the long stream
        return linear_attention(Q, K, V, causal=True)
    return causal_linear_attention_rnn(Q, K, V).output  # phi = elu + 1, the set-up cell's phi


#: The task's domain: every normaliser phi(q^i)^T zeta_i is at least 1 (the first coordinate of every query and
#: key is >= 0, so phi is >= 1 there).  An eps added to the denominator, as implementations write it (1e-6 in
#: Katharopoulos et al.'s fast-transformers), then changes an output by a relative 1e-6 at most, far inside the
#: grader's tolerance (1e-4): such an answer is right on every draw (tests/test_streaming_tasks.py).  Outside it
#: (all entries very negative, phi(q)^T zeta_i ~ e^-60) the eps decides the output, and the grade would depend on
#: the draw: the task is about the recurrence, not about that eps.
def _in_domain(Q: np.ndarray, K: np.ndarray) -> tuple:
    Q, K = Q.copy(), K.copy()
    Q[:, 0], K[:, 0] = np.abs(Q[:, 0]), np.abs(K[:, 0])
    return Q, K


#: The long stream: 16384 positions of d_k = 256, d_v = 1 (67 MB, four times the re-check's hard cap,
#: harness.CAP_ABOVE).  A right answer keeps its state and one output per position (its outputs are its result,
#: about 0.03 of the bytes read, in NumPy or PyTorch); an answer that keeps the keys (even in float32) runs out of
#: the cap, and an O(n^2) one needs the (n, n) weights (2 GiB).  In process, the stream's check stops both
#: (``keep=0.2``).
LONG_LINEAR = (16384, 256, 1)


def _cases_linear(rng):
    cases = [(rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)), rng.standard_normal((n, d_v)))
             for n, d_k, d_v in [(1, 2, 3), (5, 4, 3), (8, 3, 1), (12, 6, 4), (3, 1, 2)]]
    Q = rng.standard_normal((6, 4)) * 30  # large and very negative entries: phi is x + 1 or exp(x), never inf
    cases.append((Q, rng.standard_normal((6, 4)) * 30, rng.standard_normal((6, 2))))
    streams = [Blocks((*_in_domain(Q, K), V), 1) for Q, K, V in cases]
    n, d_k, d_v = LONG_LINEAR
    Q, K = _in_domain(rng.standard_normal((n, d_k)), rng.standard_normal((n, d_k)))
    streams.append(Blocks((Q, K, rng.standard_normal((n, d_v))), 1, keep=0.2))
    return [(b,) for b in streams]


_LINEAR = '''def causal_linear_attention(blocks):
    Sigma, zeta, out = 0.0, 0.0, []
    for q, k, v in blocks:
        fq, fk = phi(q[0]), phi(k[0])
        Sigma = Sigma + np.outer(fk, v[0])
        zeta = zeta + fk
        out.append(fq @ Sigma / (fq @ zeta))
    return np.array(out)
'''

LINEAR_MISTAKES = (
    Mistake("normaliser_forgotten", "the output was not divided by the normaliser φ(qⁱ)ᵀ ζᵢ: "
            "bⁱ = Uᵢᵀ φ(qⁱ) / (ζᵢᵀ φ(qⁱ)), with ζᵢ the running sum of the φ(kʲ)",
            edited(_LINEAR, ("out.append(fq @ Sigma / (fq @ zeta))", "out.append(fq @ Sigma)"))),
    Mistake("prefix_excludes_current", "position i's output was computed before its own key and value were "
            "added to the state, so query i saw the keys j < i only: the causal sums run over j ≤ i; add φ(kⁱ) "
            "vⁱᵀ to U and φ(kⁱ) to ζ first, then read bⁱ",
            '''def causal_linear_attention(blocks):
    Sigma, zeta, out = 0.0, 0.0, []
    for q, k, v in blocks:
        fq, fk = phi(q[0]), phi(k[0])
        out.append(fq @ Sigma / (fq @ zeta) * np.ones(v.shape[1]))
        Sigma = Sigma + np.outer(fk, v[0])
        zeta = zeta + fk
    return np.array(out)
'''),
    Mistake("phi_on_values", "the feature map was applied to the values too (U += φ(kⁱ) φ(vⁱ)ᵀ): φ maps "
            "queries and keys only; the state adds φ(kⁱ) vⁱᵀ, the values as they are",
            edited(_LINEAR, ("np.outer(fk, v[0])", "np.outer(fk, phi(v[0]))"))),
    Mistake("phi_not_applied", "the raw query and key were used (qⁱ · kʲ, which can be negative) instead of "
            "their features φ(qⁱ), φ(kʲ): the weights φ(qⁱ)ᵀ φ(kʲ) are positive only with the feature map",
            edited(_LINEAR, ("fq, fk = phi(q[0]), phi(k[0])", "fq, fk = q[0], k[0]"))),
)


# --- task 5 (think): the HBM traffic of standard attention and FlashAttention ----------------------

def _ref_hbm(n, d, sram_bytes, elem_bytes):
    return (standard_attention_io(n, d, elem_bytes).total, flash_attention_io(n, d, sram_bytes, elem_bytes).total)


def _cases_hbm(rng):
    cases = [(1024, 64, 100 * 1024, 2), (4096, 64, 100 * 1024, 2), (16384, 128, 192 * 1024, 2),
             (1000, 64, 64 * 1024, 4), (777, 32, 20_000, 2), (2048, 16, 4096, 4)]
    for _ in range(3):
        d = int(rng.choice([16, 32, 64, 128]))
        elem_bytes = int(rng.choice([2, 4]))
        cases.append((int(rng.integers(100, 20_000)), d, int(rng.integers(16 * d, 256 * 1024)), elem_bytes))
    return cases


_HBM = '''def hbm_bytes(n, d, sram_bytes, elem_bytes):
    M = sram_bytes // elem_bytes
    B_c = math.ceil(M / (4 * d))
    T_c = math.ceil(n / B_c)
    standard = 4 * n * d + 4 * n * n
    flash = 3 * n * d + 2 * n + T_c * (3 * n * d + 4 * n)
    return standard * elem_bytes, flash * elem_bytes
'''

HBM_MISTAKES = (
    Mistake("elements_not_bytes", "the counts were returned in numbers (elements), not bytes: multiply by "
            "elem_bytes", edited(_HBM, ("return standard * elem_bytes, flash * elem_bytes", "return standard, flash"))),
    Mistake("matrix_moved_once", "standard attention's (n, n) matrices were counted once each way (written, not read "
            "back): follow each of the two matrices from the step that writes it to the step that reads it",
            edited(_HBM, ("standard = 4 * n * d + 4 * n * n", "standard = 4 * n * d + 2 * n * n"))),
    Mistake("sram_in_bytes", "the SRAM size in bytes was used as the number of elements it holds: turn its bytes into "
            "numbers before sizing the blocks",
            edited(_HBM, ("M = sram_bytes // elem_bytes", "M = sram_bytes"))),
    Mistake("blocks_rounded_down", "the number of key blocks was rounded down: a last, shorter block is still read",
            edited(_HBM, ("T_c = math.ceil(n / B_c)", "T_c = max(n // B_c, 1)"))),
    Mistake("queries_read_once", "Q, O, μ and s were counted as read and written once, as if all the keys were "
            "one block: FlashAttention's outer loop runs over the T_c key blocks, and for each it reads every "
            "query block with its O, μ and s and writes O, μ and s back",
            edited(_HBM, ("T_c * (3 * n * d + 4 * n)", "(3 * n * d + 4 * n)"))),
)
