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
    assert {"W^q", "W^O", "w", r"\Theta", "g_{dst}", r"\beta_1", r"\Sigma_i", "S_{sram}"} <= set(reg)
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
