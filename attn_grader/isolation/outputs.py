"""What a feedback page may show of a graded notebook's outputs: every output rebuilt from an allow-list
(:func:`strip_active_outputs`), nothing that ran while or after the hidden tests ran
(:func:`hide_after_hidden_tests`), and the last gate before a page is written (:func:`feedback_safe`).
Split from :mod:`.sanitize`, which rebuilds a submission before it runs; this module judges what it printed.
"""

from __future__ import annotations

import re

import nbformat

from ..files.safeio import encodable

_HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS[ \t]*\n?", re.MULTILINE | re.DOTALL)


def _nbg(cell) -> dict:
    meta = cell.get("metadata", {}) if isinstance(cell, dict) else {}
    nbg = meta.get("nbgrader", {}) if isinstance(meta, dict) else {}
    return nbg if isinstance(nbg, dict) else {}


def _source(cell) -> str:
    src = cell.get("source", "") if isinstance(cell, dict) else ""
    return "".join(src) if isinstance(src, list) else str(src)


SAFE_MIME = ("text/plain", "image/png", "image/jpeg")
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
HIDDEN_LINE = "[grader: a line of the hidden tests, not shown]"


def hidden_lines(source_cells) -> list[str]:
    """The lines of the hidden tests of a source notebook's cells (what no output may show)."""
    out = []
    for cell in source_cells:
        for block in _HIDDEN.findall(_source(cell)):
            out += [line.strip() for line in block.splitlines() if len(line.strip()) >= 8]  # markers too
    return list(dict.fromkeys(out))


def clear_hidden_tests(nb) -> None:
    """The feedback's test cells as released: their hidden tests removed (the autograded notebook
    ran them; the student sees the visible part, the score and the mistake's name)."""
    for cell in nb.cells:
        if cell.cell_type == "code" and _HIDDEN.search(_source(cell)):
            cell.source = _HIDDEN.sub("", _source(cell)).rstrip()


def _text(value) -> str:  # encodable: a lone surrogate (JSON gives "\\ud800" back) replaced, issue 40
    return encodable("".join(map(str, value)) if isinstance(value, list) else str(value) if value is not None else "")


def _redact(text: str, hidden: list[str]) -> str:
    """``text`` with every line that carries a line of the hidden tests replaced (colours ignored)."""
    if not hidden:
        return text
    lines = text.split("\n")
    for i, line in enumerate(lines):
        plain = _ANSI.sub("", line)
        if any(h in plain for h in hidden):
            lines[i] = HIDDEN_LINE
    return "\n".join(lines)


def _image(value) -> str | None:
    """Base64 image data, re-encoded from its bytes (anything else in the field is dropped)."""
    import base64
    import binascii

    try:
        return base64.b64encode(base64.b64decode(_text(value).replace("\n", ""), validate=True)).decode()
    except (binascii.Error, ValueError):
        return None


def _inert(out, hidden: list[str]) -> tuple[nbformat.NotebookNode, bool]:
    """One output rebuilt from an allow-list: a stream (stdout/stderr), an error (its name, value and
    traceback as text) or data (plain text, PNG, JPEG); every text field a string, every image
    re-encoded, no metadata.  Whatever else a kernel sent (HTML, JavaScript, SVG, a stream named
    ``x"><script>``, an image field holding markup) is gone, and no line shows the hidden tests."""
    from nbformat.v4 import new_output

    kind = out.get("output_type") if isinstance(out, dict) else None
    if kind == "stream":
        name = out.get("name") if out.get("name") in ("stdout", "stderr") else "stdout"
        return new_output("stream", name=name, text=_redact(_text(out.get("text")), hidden)), False
    if kind == "error":
        tb = out.get("traceback") if isinstance(out.get("traceback"), list) else []
        return new_output("error", ename=_redact(_text(out.get("ename")), hidden)[:200],
                          evalue=_redact(_text(out.get("evalue")), hidden),
                          traceback=[_redact(_text(t), hidden) for t in tb]), False
    data = out.get("data") if isinstance(out, dict) and isinstance(out.get("data"), dict) else {}
    kept: dict = {}
    if "text/plain" in data:
        kept["text/plain"] = _redact(_text(data["text/plain"]), hidden)
    for mime in ("image/png", "image/jpeg"):
        image = _image(data[mime]) if mime in data else None
        if image is not None:
            kept[mime] = image
    dropped = sorted(str(k)[:40] for k in data if k not in kept)
    if "text/plain" not in kept:
        kept["text/plain"] = f"[grader: {', '.join(dropped) or 'an'} output not shown]"
    if kind == "execute_result":
        return new_output("execute_result", data=kept, execution_count=None), bool(dropped)
    return new_output("display_data", data=kept), bool(dropped) or kind != "display_data"


def strip_active_outputs(nb, hidden: list[str] | tuple = ()) -> int:
    """Rebuild every output of ``nb`` inert (:func:`_inert`) before the feedback is rendered; return how
    many outputs lost something.  A student's kernel writes the outputs: HTML, JavaScript, SVG, Markdown
    or LaTeX from it, or markup in any field the template writes unescaped, would be live in the
    feedback page; a line of ``hidden`` (the hidden tests' source) is replaced wherever it shows."""
    changed = 0
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        outs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        rebuilt = []
        for out in outs:
            new, lost = _inert(out, list(hidden))
            changed += lost
            rebuilt.append(new)
        cell.outputs = rebuilt
    return changed


HIDDEN_OUTPUT = "[grader: the output of the hidden tests is not shown; the grading notes say what they found]"
AFTER_HIDDEN = ("[grader: not shown: this ran after hidden tests had run, and what code prints then could "
                "show them]")
_ERRORS = {"KernelDied", "CellTimeoutError", "DeadKernelError"} | {
    n for n, v in vars(__import__("builtins")).items() if isinstance(v, type) and issubclass(v, BaseException)}


def _is_test(cell) -> bool:
    nbg = _nbg(cell)
    return (bool(nbg.get("grade")) and not nbg.get("solution")) or bool(_HIDDEN.search(_source(cell)))


def hide_after_hidden_tests(nb) -> int:
    """Replace what ran while or after hidden tests ran by a fixed line; return how many cells changed.

    A test cell runs its hidden tests in the student's kernel: a hook the student registered (IPython's
    ``post_run_cell``), or the answer the tests call (``sys._getframe(1)``, ``linecache``), can read them
    and print them in any encoding, then or in any later cell.  So no text printed from the first test
    cell on is shown: each such cell's outputs become one line (:data:`HIDDEN_OUTPUT` in a test cell,
    :data:`AFTER_HIDDEN` elsewhere), saying at most the name of a built-in error it raised.  The score
    and the mistake's name are in the grading notes."""
    seen, changed = False, 0
    for cell in nb.cells:
        if cell.get("cell_type") != "code":
            continue
        test = _is_test(cell)
        seen = seen or test
        outs = cell.get("outputs") if isinstance(cell.get("outputs"), list) else []
        if not seen or not outs or _ours(outs):
            continue
        names = [str(o.get("ename")) for o in outs if isinstance(o, dict) and o.get("output_type") == "error"]
        known = next((n for n in names if n in _ERRORS), "an error")
        text = (HIDDEN_OUTPUT if test else AFTER_HIDDEN) + (f" (it raised {known})" if names else "")
        from nbformat.v4 import new_output

        cell.outputs = [new_output("stream", name="stdout", text=text + "\n")]
        changed += 1
    return changed


def _ours(outs) -> bool:
    return len(outs) == 1 and isinstance(outs[0], dict) and outs[0].get("output_type") == "stream" and \
        _text(outs[0].get("text")).startswith((HIDDEN_OUTPUT, AFTER_HIDDEN))


def feedback_safe(nb) -> None:
    """The last gate before a feedback page is written (whatever ran before it): every output rebuilt from
    the allow-list (:func:`strip_active_outputs`), nothing shown that ran with or after hidden tests
    (:func:`hide_after_hidden_tests`), the hidden tests' source removed, and of the notebook's metadata
    only the kernel's name and language (a widget state, a title: none reaches the page)."""
    meta = nb.get("metadata", {})
    nb["metadata"] = type(meta)({k: meta[k] for k in ("kernelspec", "language_info") if k in meta})
    strip_active_outputs(nb)
    hide_after_hidden_tests(nb)
    clear_hidden_tests(nb)
