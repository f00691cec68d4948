"""The word count of the chapters' prose (issue 28): only the English words a reader reads as prose."""

from __future__ import annotations

import sys

from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import wordcount  # noqa: E402

PAGE = """---
jupytext: {text_representation: {extension: .md}}
---
# One-hot vectors

(sec-onehot)=
A one-hot vector has $n$ entries and `np.eye` builds {cite}`vaswani2017attention` it, see
[the chapter](relevance.md). 多头 3.94

$$
\\alpha_{i,j} = q^i \\cdot k^j \\quad \\text{words in math}
$$

```{code-cell} ipython3
print("these words are code")
```

```{note}
A note is prose.
```
"""


def test_only_the_prose_words_are_counted():
    # "One-hot vectors" (2), "A one-hot vector has entries and builds it, see the chapter" (11),
    # "A note is prose" (4); not the front matter, the label, math, code, the citation, 多头, 3.94
    assert wordcount.words(PAGE) == 17


def test_the_chapters_of_a_toc_leave_out_the_reference_pages():
    toc = "root: book/intro\n  - file: book/relevance\n  - file: book/notation\n  - file: book/efficient_kernels\n"
    assert wordcount.chapters(toc) == ["relevance", "efficient_kernels"]


def test_the_report_gives_both_totals_and_the_change():
    out = wordcount.report({"a": 100, "gone": 100}, {"a": 75, "new": 0}, "REV")
    assert "total, the chapters at REV: 200; now: 75 (-62.5 %)" in out
    assert "without the pages that left the book (gone): 100; now: 75 (-25.0 %)" in out
    assert "left" in out and "new" in out
