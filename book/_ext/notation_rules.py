"""The uses of a letter the notation scheme removed from the book (book/notation.md; issues 28 and 29):
a bare $W$, $c$ as a bias, $p$ for a dropout rate or a softmax, $K$/$k$ for a kernel size, $h$ other
than $h^t$, $e$ other than $e^i$, $b$ as a bias, $L$ as a length, a head index written other than the
one rule.  :func:`forbidden` names the rules a line of prose breaks; notation_check.py runs it.
"""

from __future__ import annotations

import re


def _math(text: str) -> list[str]:
    return re.findall(r"(?<!\$)\$([^$\n]+)\$(?!\$)", text)


def _strip_words(m: str) -> str:
    """A math segment without its command names and its upright words (\\tanh, \\mathrm{hid}), so that a
    letter test sees only the letters that are symbols."""
    m = re.sub(r"\\(?:mathrm|text|operatorname)\s*\{[^{}]*\}", " ", m)
    return re.sub(r"\\[A-Za-z]+", " ", m)


def _bare(letter: str, m: str, allow_after: str = "") -> bool:
    """Does the math segment ``m`` hold ``letter`` as a symbol on its own (not part of a word), not
    followed by a script matching ``allow_after``?"""
    s = _strip_words(m)
    for hit in re.finditer(rf"(?<![A-Za-z]){letter}(?![A-Za-z])", s):
        if re.search(r"[\^_]\s*\{?\s*$", s[:hit.start()]):   # a script of another symbol: \beta^h, d_k
            continue
        rest = s[hit.end():].lstrip().lstrip("}")  # \overrightarrow{h}^t is h^t
        if allow_after and re.match(allow_after, rest):
            continue
        return True
    return False


def _sentence_has(words: str):
    rx = re.compile(words, re.I)
    return lambda sentence: bool(rx.search(re.sub(r"\$[^$]*\$", " ", sentence)))


_KERNEL = _sentence_has(r"\bkernel(?:s)?\b(?!\s+(?:function|trick|feature))|\bconv")
_BIAS = _sentence_has(r"\bbias")
_DROPOUT_SOFTMAX = _sentence_has(r"\bdropout|\bsoftmax|\bprobabilit")
_LENGTH = _sentence_has(r"\blength|\blong\b|\bframes\b")
_HEADS = _sentence_has(r"\bheads?\b")
_LAYERS = _sentence_has(r"\blayers?\b")

#: (rule name, test on one math segment, test on its sentence) — a finding when both hold.
RULES = [
    ("bare W (W always carries a superscript: W^q, W^{in}, ...)",
     lambda m: _bare("W", m, r"[\^_]"), lambda s: True),
    ("c as a bias or shift (biases are beta; only \\hat c^t exists)",
     lambda m: _bare("c", m) and not re.search(r"\\hat\s*\{?\s*c", m), lambda s: True),
    ("p for a dropout rate or a softmax (p is a patch's side)",
     lambda m: _bare("p", m), _DROPOUT_SOFTMAX),
    ("K or k for a kernel size (kernel size is kappa)",
     lambda m: _bare("[Kk]", m, r"[\^_]") or bool(re.search(r"(?<![A-Za-z\\])[Kk]\s*\\times\s*[Kk]", m)),
     _KERNEL),
    ("h other than the hidden state h^t (hidden width d_hid, heads H)",
     lambda m: _bare("h", m, r"\^"), lambda s: True),
    ("e other than the positional vector e^i (Euler: exp; GAT's score: alpha)",
     lambda m: _bare("e", m, r"\^\s*\{?\s*(?:[ijtn0-9]|\\delta|pos)"), lambda s: True),
    ("b as a bias (b^i are outputs; biases are beta)",
     lambda m: _bare("b", m, r"\^"), _BIAS),
    ("L as a length (L is the number of layers; lengths are n)",
     lambda m: _bare("L", m), lambda s: _LENGTH(s) and not _LAYERS(s)),
    ("head index not by the one rule (q^{i,ell}, alpha^{(ell)}; number of heads H)",
     lambda m: bool(re.search(r"(?:[qkvbW]|\\alpha'?)\s*_\{?\s*\\ell\b|\^\{\s*\\ell\s*[,}]|"
                              r"[qkvbW]\s*\^\{?\s*\(\\ell\)", m)),
     lambda s: True),
]

#: The same rules on plain text (exercise messages and docstrings write symbols as words or code):
#: (rule name, regex on the sentence).
WORD_RULES = [
    ("h for the number of heads or a hidden width (heads H / n_heads, hidden width d_hid)",
     re.compile(r"(?:\bwith\s+`?h`?\s+heads|\b`?h`?\s+heads\b|\bheads?\s*\(`?h`?\)|number of heads,?\s+`?h\b|"
                r"\bh\s*=\s*(?:n_)?heads|hidden (?:width|size),?\s+`?h\b|\bd\s*/\s*h\b)", re.I)),
    ("K or k for a kernel size (kernel size is kappa)",
     re.compile(r"\bkernel(?:\s+size|\s+width|\s+of\s+size)\s+`?[kK]\b|\b[kK]\s*[x×]\s*[kK]\s+kernel", re.I)),
    ("e_ij for GAT's score (alpha_{i,j}; normalised alpha')", re.compile(r"\be_\{?ij\}?\b|\be_ij\b")),
    ("p for a dropout rate (say 'dropout rate')", re.compile(r"\bdropout\s+(?:rate\s+)?`?p\b", re.I)),
]


def _sentences(line: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;!?。；])\s+", line) if s.strip()]


def forbidden(line: str) -> list[str]:
    """The rules a line of prose breaks."""
    out = []
    for sentence in _sentences(line):
        for name, on_math, on_sentence in RULES:
            if any(on_math(m) for m in _math(sentence)) and on_sentence(sentence) and name not in out:
                out.append(name)
        for name, rx in WORD_RULES:
            if rx.search(re.sub(r"\$[^$]*\$", " ", sentence)) and name not in out:
                out.append(name)
    return out
