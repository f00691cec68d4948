"""A submitted notebook read as a stream, keeping only what grading reads (issue 40, items 1 and 2).

Every byte of a submission is hostile: JSON nested 5,000 deep (Python's parser recurses; ``ijson.parse``
builds a path string per event, 823 MB at 20,000 deep), 40 MB of ``[]`` in a cell's metadata, an
nbformat-3 notebook whose outputs are under ``worksheets``, a cell of 40 MB.  :func:`kept_notebook` reads
the file once with ijson's ``basic_parse`` (events, no paths) and

* refuses nesting deeper than :data:`MAX_DEPTH` as soon as it is seen (before memory grows);
* keeps, per cell, ``cell_type``, ``id``, ``source`` (each at most :data:`MAX_CELL`: a larger cell is
  "too large", never sent to a kernel) and ``metadata.nbgrader``; of the notebook's metadata the
  ``kernelspec`` and ``language_info``; ``nbformat`` and ``nbformat_minor``.  Each kept field other than a
  source is at most :data:`MAX_FIELD` bytes.  Everything else (outputs, attachments, any other metadata)
  is read past without being built: memory is that of the sources, not the file's;
* refuses nbformat 3 (``worksheets``): Jupyter saves it again as nbformat 4.

Every refusal is :class:`~attn_grader.files.safeio.Refused` with words for the student, never the file's text.
"""

from __future__ import annotations

import json

from .safeio import Refused

MAX_DEPTH = 64  # an honest notebook nests about 6 deep; widget state perhaps 20
MAX_CELL = 4 << 20  # bytes of one cell's source: the grader sends a cell to its kernel as one message
MAX_FIELD = 64 << 10  # bytes of one kept metadata field (nbgrader's is about 200)
CELL_KEYS = {"cell_type": MAX_FIELD, "id": MAX_FIELD, "source": MAX_CELL}
TOP_META = {"kernelspec", "language_info"}

_SKIP, _KEEP = object(), object()


def too_large(what: str, limit: int) -> Refused:
    """"too large" in words: what, the limit, and for a cell how to fix it (never a cheating flag)."""
    amount = f"{limit >> 20} MB" if limit >= 1 << 20 else f"{limit >> 10} kB"
    fix = (": keep data out of the notebook's cells (compute it, or load it from a file), then submit again"
           if what == "a cell" else "")
    return Refused(f"too large: {what} is larger than the limit of {amount}{fix}")


class _Builder:
    """Builds one kept value from events, counting its bytes against ``limit``."""

    def __init__(self, what: str, limit: int):
        self.what, self.limit, self.size = what, limit, 0
        self.stack: list = []
        self.keys: list = []
        self.value = None
        self.done = False

    def _count(self, n: int) -> None:
        self.size += n
        if self.size > self.limit:
            raise too_large(self.what, self.limit)

    def _put(self, v) -> None:
        if not self.stack:
            self.value, self.done = v, True
        elif isinstance(self.stack[-1], list):
            self.stack[-1].append(v)
        else:
            self.stack[-1][self.keys.pop()] = v

    def event(self, ev: str, value) -> None:
        self._count(8 + (len(value) if isinstance(value, str) else 0))
        if ev == "map_key":
            self.keys.append(value)
        elif ev in ("start_map", "start_array"):
            self.stack.append({} if ev == "start_map" else [])
        elif ev in ("end_map", "end_array"):
            v = self.stack.pop()
            self._put(v)
        else:
            self._put(value)


def kept_notebook(f, *, chunk: int = 256 << 10) -> bytes:
    """The JSON of the notebook in the binary file ``f`` reduced to what grading reads (module docstring)."""
    import ijson

    try:
        return json.dumps(_kept(ijson.basic_parse(f, use_float=True, buf_size=chunk))).encode()
    except Refused:
        raise
    except (RecursionError, MemoryError) as exc:
        raise Refused(f"unreadable ({type(exc).__name__})") from None
    except Exception as exc:  # noqa: BLE001 - not JSON: the kind of error, never the text
        raise Refused(f"unreadable ({type(exc).__name__})") from None


def _kept(events) -> dict | None:
    """Walk the events; each open container is one of: a navigated one (the notebook, its metadata, the
    cells, a cell, a cell's metadata), one being built (:class:`_Builder`) or one read past."""
    depth = 0
    nav: list[tuple[str, object]] = []  # (role, the dict or list being filled)
    key: str | None = None
    builder: _Builder | None = None
    skipping = 0  # depth within a value read past
    root = None
    for ev, value in events:
        opens, closes = ev in ("start_map", "start_array"), ev in ("end_map", "end_array")
        depth += opens
        if depth > MAX_DEPTH:
            raise Refused(f"nested deeper than {MAX_DEPTH} levels (not a notebook Jupyter writes)")
        depth -= closes
        if skipping:
            skipping += opens - closes
            continue
        if builder is not None:
            builder.event(ev, value)
            if builder.done:
                _store(nav, key, builder)
                builder = None
            continue
        if ev == "map_key":
            key = value
            continue
        if closes:
            nav.pop()
            continue
        role = _role(nav, key, ev)
        if role is _SKIP:
            skipping = int(opens)
            continue
        if isinstance(role, tuple):  # build this value within a limit
            builder = _Builder(*role)
            builder.event(ev, value)
            if builder.done:
                _store(nav, key, builder)
                builder = None
            continue
        container = {} if ev == "start_map" else []
        if not nav:
            root = container
        else:
            _place(nav, key, container)
        nav.append((role, container))
    return root


def _place(nav, key, value) -> None:
    parent = nav[-1][1]
    if isinstance(parent, list):
        parent.append(value)
    else:
        parent[key] = value


def _store(nav, key, builder: _Builder) -> None:
    _place(nav, key, builder.value)


def _role(nav, key, ev):
    """What to do with the value starting with ``ev`` at ``key`` of the innermost navigated container."""
    if not nav:
        if ev != "start_map":
            raise Refused("not a notebook (its JSON is not a mapping)")
        return "notebook"
    role = nav[-1][0]
    if role == "notebook":
        if key == "worksheets":
            raise Refused("nbformat 3 (its cells are under 'worksheets'): open it in Jupyter and save it again")
        if key == "cells":
            return "cells" if ev == "start_array" else ("the notebook's cells", MAX_FIELD)
        if key == "metadata":
            return "metadata" if ev == "start_map" else ("the notebook's metadata", MAX_FIELD)
        if key in ("nbformat", "nbformat_minor"):
            return (f"the notebook's {key}", MAX_FIELD)
        return _SKIP
    if role == "metadata":
        return (f"the notebook's {key}", MAX_FIELD) if key in TOP_META else _SKIP
    if role == "cells":
        return "cell" if ev == "start_map" else _SKIP  # a cell that is not a mapping is not graded
    if role == "cell":
        if key == "metadata":
            return "cell metadata" if ev == "start_map" else ("a cell's metadata", MAX_FIELD)
        if key in CELL_KEYS:
            return ("a cell" if key == "source" else f"a cell's {key}", CELL_KEYS[key])
        if key in ("outputs", "attachments", "execution_count"):  # read past, left empty
            _place(nav, key, [] if key == "outputs" else {} if key == "attachments" else None)
        return _SKIP
    if role == "cell metadata":
        return ("a cell's metadata.nbgrader", MAX_FIELD) if key == "nbgrader" else _SKIP
    return _SKIP
