"""What a feedback page opens with (issue 30): per task, the score, the mistake's name with what to do
about it, and a link to the section of the book that teaches it (in English and in Chinese).

The chapter of an assignment is its name without ``psNN_`` (``ps04_step_by_step`` ->
``book/step_by_step.md``, as ``book/_ext/chapter_code.py`` maps them); :data:`SECTIONS` names the section
of a task by its heading, as the chapter writes it.  A section's address is the one Sphinx gives it (the
heading's words, lower case, joined by hyphens: :func:`anchor`), the same in both languages;
``tests/test_feedback_pages.py`` checks every heading against its chapter and every address against the
built book.  The book's address is :data:`BOOK_URL` (``ATTN_BOOK_URL`` in the environment changes it):
like ``repository.url`` in ``_config.yml`` it is a placeholder until the book has a public home.
"""

from __future__ import annotations

import os
import re

import nbformat

from .record import md_text, points
from .result import NOT_ATTEMPTED, Result

BOOK_URL = os.environ.get("ATTN_BOOK_URL", "https://self-attention-step-by-step.github.io/book/")
HEADING = "What to do next"
#: the re-check's findings that name no catalogued mistake (NOT_ATTEMPTED: an answer still raising NotImplementedError)
NOT_A_MISTAKE = ("unrecognised", "error", "unfinished", NOT_ATTEMPTED)

# assignment -> task (the function the answer cell defines) -> (chapter, the section's heading in it)
SECTIONS: dict[str, dict[str, tuple[str, str]]] = {
    "ps01_vector_sets": {
        "one_hot": ("vector_sets", "Words: one-hot encoding"),
        "cosine_similarity_matrix": ("vector_sets", "Words: a learned word embedding"),
        "frame_signal": ("vector_sets", "Audio: a waveform cut into frames"),
        "adjacency_from_edges": ("vector_sets", "Graphs: node vectors and an adjacency matrix"),
        "nearest_other": ("vector_sets", "Words: a learned word embedding"),
    },
    "ps02_sequence_labeling": {
        "window_features": ("sequence_labeling", "A window of neighbours"),
        "fcn_tag_logits": ("sequence_labeling", "One FCN per vector"),
        "windowed_logits": ("sequence_labeling", "A window of neighbours"),
        "stacked_reach": ("sequence_labeling", "What a window costs"),
    },
    "ps03_relevance": {
        "dot_product_scores": ("relevance", "Dot-product"),
        "additive_scores": ("relevance", "Additive"),
        "softmax": ("step_by_step", "Step 3: softmax"),
        "masked_weights": ("matrix_form", "Masks"),
    },
    "ps04_step_by_step": {
        "attention_scores_for_query": ("step_by_step", "Step 2: every score of query 1, including its own"),
        "output_for_query": ("step_by_step", "Step 5: the weighted sum"),
        "permuted_outputs": ("positional", "Without positions, a permutation in is a permutation out"),
    },
    "ps05_matrix_form": {
        "project": ("matrix_form", "Queries, keys and values: $Q = W^q I$, $K = W^k I$, $V = W^v I$"),
        "attention_matrix": ("matrix_form", r"Scores: $A = K^\top Q$"),
        "self_attention_rows": ("matrix_form", "The same in PyTorch's row layout"),
        "peak_weights": ("matrix_form", r"Why divide by $\sqrt{d_k}$"),
    },
    "ps06_multi_head": {
        "split_heads": ("multi_head", "Split and merge"),
        "merge_heads": ("multi_head", "Split and merge"),
        "multi_head_attention": ("multi_head", "Two heads, one step at a time"),
        "head_roles": ("multi_head", "Two heads, two kinds of relevance"),
    },
    "ps07_positional": {
        "sinusoidal_table": ("positional", "The sinusoidal table"),
        "add_positions": ("positional", "Without positions, a permutation in is a permutation out"),
        "relative_shift_matrix": ("positional", r"Moving by $\delta$ is a linear map"),
        "permutation_gaps": ("positional", "Without positions, a permutation in is a permutation out"),
    },
    "ps08_speech_images": {
        "band_mask": ("speech_images", r"Without the $n \times n$ matrix"),
        "truncated_attention": ("speech_images", r"Without the $n \times n$ matrix"),
        "patchify": ("speech_images", "Patches"),
        "score_memory": ("speech_images", "The window radius $r$"),
    },
    "ps09_cnn": {
        "conv2d_single": ("cnn", "Receptive field: fixed and local, or learned and global"),
        "relative_scores": ("cnn", "A convolution computed by self-attention"),
        "attention_as_conv": ("cnn", "A convolution computed by self-attention"),
        "receptive_field": ("cnn", "Receptive field: fixed and local, or learned and global"),
    },
    "ps10_rnn": {
        "rnn_forward": ("rnn", "The recurrent network, one step at a time"),
        "path_lengths": ("rnn", "Maximum path length"),
        "birnn_forward": ("rnn", "The recurrent network, one step at a time"),
    },
    "ps11_graphs": {
        "adjacency_mask": ("graphs", "The adjacency matrix as the mask"),
        "masked_softmax": ("graphs", "The adjacency matrix as the mask"),
        "graph_attention": ("graphs", "GAT: the relevance of the two ends of an edge"),
        "reach_after_layers": ("graphs", "Why the mask matters"),
    },
    "ps12_efficient": {
        "online_softmax": ("efficient", "The online softmax, step by step"),
        "online_step": ("efficient", "The online softmax, step by step"),
        "blocked_attention": ("efficient", "From one row to attention: blocked attention"),
        "causal_linear_attention": ("efficient", "Two ways out that change the outputs"),
        "hbm_bytes": ("efficient", "Why tiles are faster: the IO argument"),
    },
}

_TEX_WORDS = {r"\times": "×", r"\delta": "δ", r"\sqrt{d_k}": "√dₖ", "$": ""}


def anchor(heading: str) -> str:
    """The id Sphinx (docutils' ``make_id``) gives a section with this heading: lower case, every run of
    other characters a hyphen, no hyphen at either end (for the book's ASCII headings)."""
    text = heading.replace("$", "").replace("\\", " ").lower()
    return re.sub(r"[^a-z0-9]+", "-", text).strip("-").lstrip("0123456789-")


def link_text(heading: str) -> str:
    """The heading as words: a formula after a colon dropped, the rest of the TeX as Unicode."""
    if "$" in heading and ":" in heading:
        heading = heading.split(":", 1)[0]
    for tex, text in _TEX_WORDS.items():
        heading = heading.replace(tex, text)
    return heading


def section_url(assignment: str, func: str, lang: str = "en", base: str | None = None) -> str | None:
    """The address of the section of the book that teaches ``func`` of ``assignment`` (None: not mapped)."""
    where = SECTIONS.get(assignment, {}).get(func)
    if where is None:
        return None
    chapter, heading = where
    base = (BOOK_URL if base is None else base).rstrip("/") + "/"
    return f"{base}{'zh/' if lang == 'zh' else ''}book/{chapter}.html#{anchor(heading)}"


def _func(gid: str) -> str:
    return gid[: -len("_test")] if gid.endswith("_test") else gid


def next_steps_cell(r: Result) -> nbformat.NotebookNode:
    """The markdown cell the feedback opens with (every string from the grading escaped with md_text)."""
    lines = [f"### {HEADING}", ""]
    if r.status == "ungradable":
        lines.append("This notebook could not be graded: " + md_text("; ".join(r.reason) or "see the notes below")
                     + ". Hand it in again after fixing that.")
        return nbformat.v4.new_markdown_cell("\n".join(lines))
    waiting = set(r.needs_manual)  # graded by hand, not graded yet: neither lost nor full marks
    lost = [gid for gid in r.tasks if gid not in waiting and r.scores.get(gid, 0.0) < r.max.get(gid, 0.0) - 1e-9]
    if not lost and not waiting:
        lines.append(f"Every task has full marks ({points(r.total)} / {points(r.max_total)}). Nothing to redo.")
    for k, gid in enumerate(r.tasks, 1):
        func = _func(gid)
        score = f"{points(r.scores.get(gid, 0.0))} / {points(r.max.get(gid, 0.0))}"
        if gid in waiting:
            lines.append(f"{k}. **{md_text(func)}**: graded by hand ({points(r.max.get(gid, 0.0))} points): "
                         "not graded yet.")
            continue
        if gid in r.manual_tasks and gid in r.manual:
            lines.append(f"{k}. **{md_text(func)}**: {score}, graded by hand.")
            continue
        if gid not in lost:
            lines.append(f"{k}. **{md_text(func)}**: {score}, full marks.")
            continue
        found = r.mistakes.get(gid) or {}
        name, message = found.get("name"), found.get("message") or r.task_notes.get(gid, "")
        named = name and name not in NOT_A_MISTAKE
        what = (f"mistake **{md_text(name)}**: {md_text(message)}" if named else md_text(message)) or \
            "the notebook's test failed"
        item = f"{k}. **{md_text(func)}**: {score}; {what}."
        url = section_url(r.assignment, func)
        if url:
            chapter, heading = SECTIONS[r.assignment][func]
            item += (f" Read again: [{md_text(link_text(heading))}]({url}) in the book"
                     f' (<a href="{section_url(r.assignment, func, "zh")}" hreflang="zh-CN" lang="zh-CN">中文</a>).')
        lines.append(item)
    return nbformat.v4.new_markdown_cell("\n".join(lines))
