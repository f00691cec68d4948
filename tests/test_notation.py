"""The notation page is true and stays true (issues 28 and 29): book/notation.md lists every symbol with
its one meaning and the chapters that define it, and book/_ext/notation_check.py finds a second
definition or a use the notation scheme removed, in the chapters and in the exercises' text."""

from __future__ import annotations

import json
import sys

import pytest
from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import notation_check as nc  # noqa: E402


def _chapter(tmp_path, stem, text):
    path = tmp_path / f"{stem}.md"
    path.write_text(f"# A chapter\n\n{text}\n\n```{{code-cell}} ipython3\nh = 4  # code is not prose\n```\n",
                    encoding="utf-8")
    return nc.check_file(path)


def _notebook(tmp_path, stem, text):
    path = tmp_path / f"{stem}.ipynb"
    cells = [{"cell_type": "markdown", "metadata": {}, "source": text},
             {"cell_type": "code", "metadata": {}, "source": "W = h = K = 3", "outputs": [], "execution_count": None}]
    path.write_text(json.dumps({"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")
    return nc.check_file(path)


def _catalogue(tmp_path, stem, message):
    path = tmp_path / f"{stem}.py"
    path.write_text(f"from x import Mistake\nM = (Mistake('wrong', {message!r}, 'def f(): pass'),)\n",
                    encoding="utf-8")
    return nc.check_file(path)


def test_the_page_lists_the_schemes_symbols_with_their_chapters():
    reg = nc.registry()
    assert reg["K"] == {"matrix_form"} and reg[r"\kappa"] == {"cnn", "rnn"}
    assert reg["h^t"] == {"rnn"} and reg["H"] == {"multi_head"} and reg["p"] == {"speech_images"}
    assert {"W^q", "W^O", "w", r"\Theta", "g_{dst}", r"\beta_1", "U_i", "S_{sram}"} <= set(reg)
    assert not {"W", "c", "e", "h", "k"} & set(reg)   # the letters the scheme forbids bare


def test_every_chapter_the_page_names_is_a_chapter_of_the_book():
    chapters = {p.stem for p in nc.toc_chapters()}
    named = set().union(*nc.registry().values())
    assert named and named <= chapters, named - chapters


def test_the_chapters_and_the_exercises_follow_the_notation_page():
    files = nc.default_files()
    assert len(files) >= 12 + 12 + 12   # the chapters, the notebooks, the catalogues
    findings = [str(f) for path in files for f in nc.check_file(path)]
    assert findings == [], f"{len(findings)} finding(s):\n" + "\n".join(findings)


@pytest.mark.parametrize("stem, text", [
    ("cnn", "Here $K$ is the kernel size of the convolution."),            # K belongs to matrix_form
    ("rnn", "A convolution with kernels of size $k$ reaches $k - 1$ positions further."),
    ("rnn", "where $H$ is the hidden width of the network."),               # a second meaning of H
    ("graphs", "Every node is transformed by one shared matrix $W$."),      # bare W
    ("rnn", "a recurrent matrix and a bias $c$."),
    ("transformer", "Dropout sets each entry to 0 with probability $p$."),
    ("multi_head", "With $h$ heads, each of width $d_k$."),
    ("graphs", "The raw score is $e_{ij}$ and its softmax $\\alpha'_{i,j}$."),
    ("vector_sets", "For a signal of length $L$ samples, the number of frames is $n$."),
    ("sequence_labeling", "the FCN's two biases $b_1$ and $b_2$."),
    ("cnn", "the attention of head $\\ell$ is $\\alpha_{i,j}^{\\ell}$ and its query $q^{(\\ell)}$."),
    ("positional", "Let $\\psi$ be the phase of the encoding."),                # not on the page at all
])
def test_a_chapter_that_breaks_the_notation_fails(tmp_path, stem, text):
    findings = _chapter(tmp_path, stem, text)
    assert findings and all(f.file.endswith(f"{stem}.md") and f.line == 3 for f in findings), findings


@pytest.mark.parametrize("stem, text", [
    ("matrix_form", "Here $K$ is the matrix of the keys, one column per position."),
    ("cnn", "A $\\kappa \\times \\kappa$ kernel; $\\alpha^{(\\ell)}_{i,j}$ is head $\\ell$'s score."),
    ("graphs", "GAT writes $e_{ij}$ for our $\\alpha_{i,j}$ and $\\mathbf W$ for our $\\Theta$."),
    ("rnn", "The hidden state $h^t$ is updated with the bias $\\beta^h$."),
    ("multi_head", "With $H$ heads, head $\\ell$'s query is $q^{i,\\ell} = W^{q,\\ell} a^i$."),
    ("positional", "$e^i$ is the positional vector, added to $a^i$; the exponential is $\\exp(x)$."),
])
def test_a_chapter_that_follows_the_notation_passes(tmp_path, stem, text):
    assert _chapter(tmp_path, stem, text) == []


@pytest.mark.parametrize("text", [
    "With `h` heads of width $d_k$, head number $t$ gets its own block.",
    "Split $Q$ into $h$ heads.",
    "Write `conv(x, kernel)` for a kernel of size $K \\times K$.",
    "The hidden width is $h$.",
])
def test_an_exercise_that_breaks_the_notation_fails(tmp_path, text):
    findings = _notebook(tmp_path, "ps06_multi_head", text)
    assert findings and findings[0].line == "cell1.1", findings


def test_an_exercise_that_follows_the_notation_passes(tmp_path):
    text = ("With `n_heads` heads ($H$ in the book), head $\\ell$ gets the columns of $q^{i,\\ell}$.\n\n"
            "$\\alpha'_{i,j}$ is the normalised weight, as in the chapter.")
    assert _notebook(tmp_path, "ps06_multi_head", text) == []


def test_a_catalogue_message_is_checked_too(tmp_path):
    assert _catalogue(tmp_path, "ps06_multi_head", "the d_model columns were cut into h heads the wrong way")
    assert _catalogue(tmp_path, "ps11_graphs", "the LeakyReLU was left out: e_ij = a . W x_i")
    assert _catalogue(tmp_path, "ps06_multi_head", "the columns were cut into n_heads blocks the wrong way") == []


def test_the_command_prints_file_line_and_rule(tmp_path, capsys):
    path = tmp_path / "cnn.md"
    path.write_text("# cnn\n\nHere $K$ is the kernel size.\n", encoding="utf-8")
    assert nc.main([str(path)]) == 1
    out = capsys.readouterr().out
    assert f"{path}:3: $K$ defined again" in out and "K or k for a kernel size" in out


@pytest.mark.parametrize("text", [
    "**Layout.** The input vectors $a^1, \\dots, a^n$ are the rows of `X`.",       # a^1 is the book's a^i
    "（论文把书中的 $\\alpha_{i,j}$ 和 $\\Theta$ 写作 $e_{ij}$ 和 $W$。）",           # the paper's symbols, said once
    'The paper says "$PE_{pos}$ is the encoding" of a position.',                   # a quotation
    "The output is $[\\overrightarrow{h}^t; \\overleftarrow{h}^t]$, the two hidden states.",
])
def test_restating_quoting_and_decorating_the_books_symbols_is_not_a_finding(tmp_path, text):
    assert _notebook(tmp_path, "ps10_rnn", text) == []


def test_a_concrete_index_does_not_hide_a_new_meaning(tmp_path):
    findings = _notebook(tmp_path, "ps11_graphs", "Column $e$ is the edge from `edge_index[0, e]`.")
    assert findings and any("e other than" in f.rule for f in findings), findings


# --- the formulas themselves (issue 42): book/_ext/notation_formulas.py ----------------------------------

import notation_formulas as nf  # noqa: E402
from formula_sources import Formula, page_formulas, symbols  # noqa: E402


def _formula_findings(tmp_path, stem, text):
    """The formula findings of a chapter ``stem`` holding ``text`` (the real notation page)."""
    path = tmp_path / f"{stem}.md"
    path.write_text(f"# A chapter\n\n{text}\n", encoding="utf-8")
    return [f.rule for f in nf.check_formulas(page_formulas(path))]


def _has(findings, *words):
    return any(all(w in f for w in words) for f in findings)


def test_the_symbols_of_a_formula():
    tex = (r"q^1 = W^q a^1, \quad \alpha'_{i,j} = \frac{\exp(\alpha_{i,j})}{\sum_{j'=1}^n \exp(\alpha_{i,j'})}"
           r" + \mathrm{Id}_n")
    assert [s for s, _ in symbols(tex)] == ["\\mathrm{Id}_n", "q^1", "W^q", "a^1", "\\alpha'_{i,j}", "\\alpha_{i,j}",
                                            "j'", "\\alpha_{i,j'}"]  # the sum's range j'=1 computes; ^n names
    assert [s for s, _ in symbols(r"\|\mathrm{diag}(\alpha')\|_F + d_{\mathrm{model}} + \mathcal{N}(i)")] == [
        "\\alpha'", "d_{\\mathrm{model}}", "\\mathcal{N}", "i"]
    assert [s for s, _ in symbols(r"k^{\,i-r+s}")] == ["i", "r", "s", "k^{\\,i-r+s}"]


# Each text below is copied from the chapters as they were when issue 42 was filed.
MULTI_HEAD_ROWS = ("$a^i$ of dimension $d_{\\mathrm{model}} = 8$, the rows of $X$ (PyTorch's row layout; $X$ is\n"
                   "$I^\\top$), so that row $i$ of $Q = X (W^q)^\\top$ is $q^i$.")
MULTI_HEAD_SHAPE = ("All heads run as one batched product once $Q$, $(n, d_{\\mathrm{model}})$, is cut into $H$ "
                    "slices of")
RNN_BIG_O = ("$n$. The *work* is another matter: $n^2$ scores against $n$ state updates, $O(n^2 d)$ against\n"
             "$O(n d^2)$ per layer.")
EFFICIENT_THETA = ("softmax, writes the weights and reads them again, $\\Theta(n d_k + n^2)$ accesses; "
                   "FlashAttention keeps")
EFFICIENT_GAUSSIAN = ("vectors $\\xi_1, \\dots, \\xi_{d_\\phi} \\sim \\mathcal N(0, \\mathrm{Id}_{d_k})$, "
                      "$\\phi(\\tilde q)_\\lambda = \\exp(\\xi_\\lambda^\\top \\tilde q)$")
SPEECH_SLOT = ("$$\n\\alpha_{i,\\,i-r+s} = \\frac{q^i \\cdot k^{\\,i-r+s}}{\\sqrt{d_k}}, \\qquad\n"
               "\\alpha'_{i,\\cdot} = \\operatorname{softmax}_s(\\alpha_{i,\\cdot}), \\qquad\n"
               "b^i = \\sum_{s=0}^{2r} \\alpha'_{i,\\,i-r+s}\\, v^{\\,i-r+s}.\n$$")
POSITIONAL_F = ("$$\ne^{i+1} = e^{i} + f_\\theta(e^{i}), \\qquad\n"
                "f_\\theta(x) = W_2 \\tanh(W_1 x + \\beta_1) + \\beta_2 ,\n$$")
TRANSFORMER_X = "Each sublayer computes $x + \\mathrm{Sublayer}(x)$ and then normalises it."
EFFICIENT_X = "with $\\phi(x) = \\mathrm{elu}(x) + 1$ the feature map."
POSITIONAL_ZERO = "takes one Euler step of size 1 per position from a learned $e^{0}$:"
CNN_ZERO = "The figure shows the 9 heads of a $3 \\times 3$ convolution looking from the corner pixel $(0, 0)$ of a"


@pytest.mark.parametrize("stem, text, words", [
    ("multi_head", MULTI_HEAD_ROWS, ("$Q = X (W^q)^\\top$ has a row per position", "column per position")),
    ("multi_head", MULTI_HEAD_SHAPE, ("$Q$ said to be $n \\times \\dots$",)),
    ("rnn", RNN_BIG_O, ("$O(\\cdot)$ as an asymptotic bound", "output")),
    ("efficient", EFFICIENT_THETA, ("$\\Theta(\\cdot)$ as an asymptotic bound", "GAT")),
    ("efficient", EFFICIENT_GAUSSIAN, ("$\\mathcal{N}$ is graphs's", "neighbours")),
    ("speech_images", SPEECH_SLOT, ("$s$ is efficient's", "running")),
    ("speech_images", SPEECH_SLOT, ("counted from 1", "\\sum_{s=0")),
    ("positional", POSITIONAL_F, ("$W_1$ is a parameter of $f_\\theta(x)$", "FFN")),
    ("positional", POSITIONAL_F, ("$\\beta_2$ is a parameter of $f_\\theta(x)$",)),
    ("positional", POSITIONAL_F, ("$x$ is cnn, speech_images's",)),
    ("transformer", TRANSFORMER_X, ("$x$ is cnn, speech_images's",)),
    ("efficient", EFFICIENT_X, ("$x$ is cnn, speech_images's",)),
    ("positional", POSITIONAL_ZERO, ("$e^{0}$", "counted from 1")),
    ("cnn", CNN_ZERO, ("$(0, 0)$", "counted from 1")),
    ("multi_head", "so that row $i$ of $Q^\\top = X^\\top (W^q)^\\top$ is $q^i$.",
     ("a column per position", "$X^\\top$ is", "a row per position")),
    ("matrix_form", "the code's array is $Q^\\top = W^q I$.", ("$Q^\\top = W^q I$ has a column per position",)),
])
def test_a_formula_that_breaks_the_notation_page_fails(tmp_path, stem, text, words):
    findings = _formula_findings(tmp_path, stem, text)
    assert _has(findings, *words), findings


@pytest.mark.parametrize("stem, text", [
    ("rnn", "The work is $\\mathcal{O}(n^2 d)$ against $\\mathcal{O}(n d^2)$ per layer."),
    ("graphs", "$$\nb^i = \\sum_{j \\in \\mathcal{N}(i) \\cup \\{i\\}} \\alpha'_{i,j}\\, \\Theta a^j .\n$$"),
    ("efficient", "keep $s_i = \\sum_j \\exp(\\alpha_{i,j}/\\sqrt{d_k} - \\mu_i)$ and $\\mu_i$"),
    ("matrix_form", "$Q = W^q I$ is $d_k \\times n$, and $O = V A'$ has $b^i$ as column $i$."),
    ("transformer", "$\\mathrm{FFN}(a) = \\max(0, a W_1^\\top + \\beta_1) W_2^\\top + \\beta_2$, of hidden width"),
    ("multi_head", "so that column $i$ of $Q = W^q I$ is $q^i$, with $i = 1, \\dots, n$."),
    ("multi_head", "so that row $i$ of $Q^\\top = X (W^q)^\\top$ is $q^i$ (the code's `Q` is $Q^\\top$)."),
    ("matrix_form", "$$\nQ^\\top = I^\\top (W^q)^\\top, \\qquad O^\\top = A'^\\top V^\\top\n$$"),
    ("efficient", "Linear attention costs $\\mathcal{O}(n\\, d_\\phi d_v)$ time."),
    ("speech_images", "the offset $\\delta = j - i$ of a key from its query"),
    ("graphs", "This is *not* the additive recipe of {doc}`relevance`, $w^\\top \\tanh(W^q a^i + W^k a^j)$."),
])
def test_a_formula_that_follows_the_notation_page_passes(tmp_path, stem, text):
    assert _formula_findings(tmp_path, stem, text) == []


OLD_ROWS = """## Symbols used across the book

| symbol | meaning | defined in |
|---|---|---|
| $q^i$, $k^i$, $v^i$ | query, key and value of position $i$: $q^i = W^q a^i$ | [Relevance](relevance.md) |
| $\\beta$, $\\beta_1$, $\\beta_2$, $\\beta^h$ | biases: of a function $f_\\theta$, of the FCN / FFN's two layers, \
of the RNN's update | [Relevance](relevance.md), [Sequence labeling](sequence_labeling.md) |
"""
RELEVANCE = ("The vector that asks, $a^1$, gives $q^1 = W^q a^1$; the one asked about gives $k^2 = W^k a^2$:\n\n"
             "$$\nq^1 = W^q a^1, \\qquad k^2 = W^k a^2, \\qquad \\alpha_{1,2} = q^1 \\cdot k^2 .\n$$\n")


def test_the_pages_claims_are_checked_against_the_chapters(tmp_path):
    """The notation page as it was said relevance defines beta (and f_theta) and names query and key; the
    relevance chapter writes neither beta nor the word."""
    page = tmp_path / "notation.md"
    page.write_text(OLD_ROWS, encoding="utf-8")
    (tmp_path / "relevance.md").write_text(f"# Relevance\n\n{RELEVANCE}", encoding="utf-8")
    (tmp_path / "sequence_labeling.md").write_text("# S\n\n$z^t = W_2 a^t + \\beta_2$, the biases.\n", encoding="utf-8")
    chapters = [tmp_path / "relevance.md", tmp_path / "sequence_labeling.md"]
    found = [f.rule for f in nf.check_registry(nf.rows(page), chapters)]
    assert _has(found, "$\\beta$", "defined in relevance, whose formulas never write it"), found
    assert _has(found, "$q^i$", "defined in relevance, which never names it ('query')"), found
    assert not _has(found, "sequence_labeling"), found
    (tmp_path / "relevance.md").write_text(f"# Relevance\n\nThe query asks.\n\n{RELEVANCE}", encoding="utf-8")
    assert not _has([f.rule for f in nf.check_registry(nf.rows(page), chapters)], "$q^i$")


def test_the_page_lists_big_o_and_no_relevance_bias():
    table = nf.rows()
    assert any("\\mathcal{O}(\\cdot)" in r.symbols for r in table)  # written \\mathcal O(\\cdot) on the page
    beta = next(r for r in table if "\\beta_1" in r.symbols)
    assert "relevance" not in beta.chapters and "f_\\theta" not in beta.meaning


def test_figure_texts_and_exercise_cells_are_read(tmp_path):
    po = tmp_path / "figures.po"
    po.write_text('msgid ""\nmsgstr ""\n\n#: book/rnn\nmsgid "recurrent: O(n d²) work"\nmsgstr "x"\n\n'
                  '#: book/speech_images\nmsgid "slot $s$ of query {#}"\nmsgstr "y"\n', encoding="utf-8")
    found = [f.rule for f in nf.check_formulas(nf.figure_formulas(po))]
    assert _has(found, "$O(\\cdot)$ as an asymptotic bound") and _has(found, "$s$ is efficient's"), found
    formula = Formula("solutions/ps10_rnn/ps10_rnn.ipynb: cell 6", "rnn", "O(\\log_\\kappa n)")
    assert _has([f.rule for f in nf.check_formulas([formula])], "asymptotic bound")


def test_every_formula_of_the_book_follows_the_notation_page():
    """Zero findings over the real book: the chapters' formulas, their figures' texts, the exercises'
    text cells, and the notation page's own claims (python book/_ext/notation_formulas.py lists them)."""
    findings = nf.check_formulas(nf.book_formulas()) + nf.check_registry()
    assert findings == [], "\n".join(map(str, findings))
