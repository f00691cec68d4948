"""Issue 29: problem sets 6 to 11 use the book's symbols (the second edition's notation scheme), not the papers'
ones they used before, in the English text cells and in the catalogue messages; issue 41: problem set 1 too (it
wrote V for the vocabulary's size and A for the adjacency matrix, the book's values and scores)."""

import importlib
import re

import pytest

from attn_grader.authoring.bilingual import english
from solutions import cells

#: What each set wrote before, and the book's symbol now: a pattern that must not appear any more.
OLD = {
    "ps01_vector_sets": [r"\$V\b", r"\^V\b", r"[(,] ?V\)", r"\(V,", r"adjacency matrix \$A", r"\$A\$ is symmetric",
                         r"\$A_", r"\bA\[", r"\$N\b"],
    "ps06_multi_head": [r"\bd_h\b", r"head \$t\$", r"q\^\{i,t\}", r"\bW_o\b", r"\(h, n, d_h\)"],
    "ps07_positional": [r"PE_", r"\bPE\[", r"\\omega_i", r"\bM_k\b", r"\bw_i\b", r"10000\^\(-2i/d\)"],
    "ps08_speech_images": [r"half-width", r"\$w\$", r"\(H, W, C\)", r"H \\times W", r"patch \(a, b\)"],
    "ps09_cnn": [r"r_\\delta(?!\$, \$v)", r"\bv_h\b", r"\$K \\times K\$", r"-alpha", r"\(K\*K", r"x_\{\\text\{pad\}\}"],
    "ps10_rnn": [r"W_\{xh\}", r"W_\{hh\}", r"\bW_xh\b", r"\bW_hh\b", r"x_t\b", r"O\(n/k\) in .*Table 1"],
    "ps11_graphs": [r"e_\{ij\}(?!\$, \$\\alpha_\{ij\})", r"a_\\text\{(src|dst)\}", r"\ba_src\b", r"\ba_dst\b",
                    r"\bh_i = W"],
}


def old_symbols(assignment: str, text: str) -> list[str]:
    return [p for p in OLD[assignment] if re.search(p, text)]


def _texts(assignment: str) -> list[str]:
    texts = [english(src) for gid, src in cells(assignment).items() if gid.endswith("_text") or gid == "intro"]
    module = importlib.import_module(f"attn_grader.catalogue.{assignment}")
    return texts + [m.message for t in module.TASKS for m in t.mistakes]


@pytest.mark.parametrize("assignment", sorted(OLD))
def test_the_set_uses_the_books_symbols(assignment):
    found = {p for text in _texts(assignment) for p in old_symbols(assignment, text)}
    assert not found, f"{assignment}: old symbols {sorted(found)}"


def test_the_check_finds_the_old_symbols():
    assert old_symbols("ps01_vector_sets", r"$\mathrm{onehot}(i) \in \mathbb{R}^V$, shape `(n, V)`, $A_{ij} = 1$")
    assert old_symbols("ps01_vector_sets", "the result has one column per word (shape (V, n))")
    assert not old_symbols("ps01_vector_sets", r"$|\mathcal V|$ words, `adj[i, j] = 1`, shape (n, vocab_size)")
    assert old_symbols("ps07_positional", r"$PE_{pos,2i} = \sin(pos\,\omega_i)$, $M_k$")
    assert old_symbols("ps10_rnn", r"$h_t = \tanh(W_{xh} x_t + W_{hh} h_{t-1} + b)$")
    assert old_symbols("ps11_graphs", r"e_{ij} = LeakyReLU(a_dst . W x_i + a_src . W x_j)")
    assert not old_symbols("ps11_graphs", r"(The paper writes $e_{ij}$, $\alpha_{ij}$, $W$ and $\mathbf{a}$ ...)")
    assert not old_symbols("ps09_cnn", r"(The paper writes $r_\delta$, $v^{(h)}$ and $\alpha^{(h)}$ for ...)")
