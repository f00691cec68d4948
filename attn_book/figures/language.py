"""The book's figures in the reader's language: each figure is drawn once, in English, when its chapter
executes, and the Chinese edition draws the same figure again with its text translated.

How (the chapters and their figure modules know nothing of it):

* In the kernel that executes a chapter, :func:`load_ipython_extension` (loaded by the book's build,
  ``book/_ext/figure_language.py``) adds one thing to every displayed matplotlib figure: beside the
  English PNG, the output's metadata :data:`METADATA_KEY` carries the figure itself (pickled, zlib,
  base64) and the inline backend's PNG settings.  Nothing is drawn twice in the kernel.
* The Chinese build (``python book/_ext/i18n.py zh``) reads the same execution cache, unpickles the
  figure, translates every text of it through the label catalogue ``locales/zh_CN/LC_MESSAGES/figures.po``
  (:func:`render_chinese`) and puts that PNG on the Chinese page.  The same computed data, drawn once per
  language; a new translation needs no chapter executed again.

The catalogue's messages are the figures' English texts.  A text's numbers are written ``{#}`` in its
message (``"n = {#}"`` translates ``"n = 6000"`` and ``"n = 8"``; the numbers go back in their order),
so a changed number is not a new message; mathtext ``$...$`` stays as it is, written into the Chinese.
Texts that are symbols or numbers only (``q``, ``$k^2$``, ``α``, ``0.25``) are not messages, unless the
catalogue has one on purpose (``"RNN: n"`` -> ``"RNN：n"``, the Chinese colon beside Chinese legends).

A text that is data (the word beside each point of a scatter of word vectors) is marked where it is
drawn (:mod:`attn_book.figures.data_words`): no translation touches it and it is no message, so the data
word "train" stays "train" on the Chinese figure even though the catalogue translates the legend "train".
"""

from __future__ import annotations

import base64
import pickle
import re
import sys
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.text import Text
from matplotlib.ticker import Formatter

from attn_book.figures.data_words import is_data
from attn_book.figures.fonts import CJK_FONT, cjk_font_file, strict_glyphs

ROOT = Path(__file__).resolve().parents[2]
CATALOGUE = ROOT / "locales" / "zh_CN" / "LC_MESSAGES" / "figures.po"
METADATA_KEY = "attn_book/figure"  # the output metadata that carries the pickled figure
NUMBER = "{#}"  # a number in a message
# Latin words a Chinese figure keeps as they are (the Chinese pages write them so too)
KEPT = frozenset({"FCN", "RNN", "CNN", "GAT", "MLP", "FFN", "GPU", "CPU", "ReLU", "softmax", "Softmax",
                  "Transformer", "Q", "K", "V", "dB", "Hz", "ms", "log"})

_MATH = re.compile(r"(?<!\\)\$.*?(?<!\\)\$", re.S)
_NUM = re.compile(r"\d+(?:\.\d+)?")
_WORD = re.compile(r"[A-Za-z]{2,}")
_CJK = re.compile(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]")


# --- texts and the catalogue ---------------------------------------------------------------------------

def words(text: str) -> list[str]:
    """The Latin words of ``text`` outside its mathtext that a Chinese figure may not keep."""
    return [w for w in _WORD.findall(_MATH.sub(" ", text)) if w not in KEPT]


def needs_translation(text: str) -> bool:
    """True when ``text`` holds a word to translate (symbols, numbers and mathtext alone do not)."""
    return bool(words(text))


def has_chinese(text: str) -> bool:
    return bool(_CJK.search(text))


def latin_only(text: str) -> bool:
    """True when ``text`` would show English on a Chinese figure: words to translate and no Chinese."""
    return needs_translation(text) and not has_chinese(text)


def message(text: str) -> str:
    """The catalogue message of ``text``: its numbers written ``{#}``."""
    return _NUM.sub(NUMBER, text)


def load_catalogue(path: Path = CATALOGUE) -> dict[str, str]:
    """msgid -> msgstr of the translated, not fuzzy messages of a .po file (empty if there is none)."""
    from babel.messages.pofile import read_po

    if not path.is_file():
        return {}
    with path.open("rb") as f:
        catalog = read_po(f)
    return {m.id: m.string for m in catalog if m.id and m.string and not m.fuzzy}


def translate(text: str, catalogue: Mapping[str, str]) -> str | None:
    """``text`` in Chinese, or None when the catalogue has no translation of it.

    A text that needs none (symbols, numbers, mathtext) is returned as it is.  The message of the text
    itself wins over its ``{#}`` form, so one number may have its own translation.
    """
    if catalogue.get(text):
        return catalogue[text]
    if not needs_translation(text):
        return text
    key = message(text)
    found = catalogue.get(key)
    if not found or found.count(NUMBER) != key.count(NUMBER):
        return None
    numbers = iter(_NUM.findall(text))
    return re.sub(re.escape(NUMBER), lambda _: next(numbers), found)


def kept(text: str, catalogue: Mapping[str, str]) -> bool:
    """True for a single word the catalogue keeps in English on purpose (msgstr = msgid): the example
    sentences' words ("the cat sat on the mat", *I saw a saw*), English on the Chinese pages too."""
    return len(text.split()) == 1 and catalogue.get(message(text)) == message(text)


def untranslated(texts: Iterable[str], catalogue: Mapping[str, str] | None = None) -> list[str]:
    """The texts of a Chinese figure that show English (the check of the Chinese edition's figures):
    a word to translate and no Chinese, unless the catalogue keeps that single word."""
    return [t for t in texts if latin_only(t) and not kept(t, catalogue or {})]


# --- the figure -----------------------------------------------------------------------------------------

def drawn_texts(fig) -> list[str]:
    """Every non-empty visible text the figure drew at its last draw (titles, labels, tick labels,
    legends, annotations, text in boxes), but the texts marked as data (attn_book/figures/data_words.py)."""
    return [t.get_text() for t in fig.findobj(Text)
            if t.get_visible() and t.get_text().strip() and not is_data(t)]


def figure_messages(fig, known: Iterable[str] = ()) -> list[str]:
    """The catalogue messages of a figure's English texts (draws it once, so its tick labels are set);
    ``known``: messages of the catalogue, kept for a text that needs no translation but has one."""
    FigureCanvasAgg(fig).draw()
    known = set(known)
    seen: dict[str, None] = {}
    for text in drawn_texts(fig):
        if needs_translation(text):
            seen[message(text)] = None
        elif text in known:
            seen[text] = None
    return list(seen)


class _Translated(Formatter):
    """A tick formatter whose labels go through ``translate`` (word tick labels are drawn from the axis'
    formatter at every draw, whatever kind it is: fixed labels, a dict, a function)."""

    def __init__(self, inner: Formatter, translate):
        self.inner, self.translate = inner, translate

    def __call__(self, x, pos=None):
        return self.translate(self.inner(x, pos))

    def format_ticks(self, values):
        return [self.translate(s) for s in self.inner.format_ticks(values)]

    def get_offset(self):
        return self.translate(self.inner.get_offset())

    def set_locs(self, locs):
        self.inner.set_locs(locs)

    def set_axis(self, axis):
        super().set_axis(axis)
        self.inner.set_axis(axis)


def _translate_figure(fig, catalogue: Mapping[str, str]) -> list[str]:
    """Put every text of ``fig`` into Chinese, in place; returns the messages the catalogue lacks."""
    missing: dict[str, None] = {}

    def chinese(text) -> str:
        text = str(text)  # tick labels may be numbers
        if not text.strip():
            return text
        zh = translate(text, catalogue)
        if zh is None:
            missing[message(text)] = None
            return text
        return zh

    for ax in fig.get_axes():
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(_Translated(axis.get_major_formatter(), chinese))
            axis.set_minor_formatter(_Translated(axis.get_minor_formatter(), chinese))
    for t in fig.findobj(Text):
        new = t.get_text() if is_data(t) else chinese(t.get_text())
        if new != t.get_text():
            t.set_text(new)
        _chinese_font(t)
    return list(missing)


def _chinese_font(t: Text) -> None:
    """Chinese glyphs from the CJK font.  Latin glyphs keep the English font through matplotlib's
    per-glyph fallback, except in a text with mathtext, whose plain part is drawn in the first font of
    its family alone (the maths keeps its own fonts)."""
    family = [f for f in t.get_fontfamily() if f != CJK_FONT]
    if "$" in t.get_text() and has_chinese(t.get_text()):
        t.set_fontfamily([CJK_FONT, *family])
    else:
        t.set_fontfamily([*family, CJK_FONT])


def render_chinese(fig, catalogue: Mapping[str, str], print_kwargs: Mapping | None = None):
    """The Chinese PNG of ``fig`` (changed in place): (png bytes, the texts it drew, missing messages).

    The CJK font is found first (matplotlib's stale font list rebuilt, or :class:`fonts.NoCJKFont`), and a
    glyph drawn as a box raises :class:`fonts.MissingGlyph` (attn_book/figures/fonts.py)."""
    from IPython.core.pylabtools import print_figure

    cjk_font_file()
    missing = _translate_figure(fig, catalogue)
    with strict_glyphs():
        png = print_figure(fig, fmt="png", **dict(print_kwargs or {"bbox_inches": "tight"}))
    return png, drawn_texts(fig), missing


def dumps(fig) -> str:
    """The figure as text for an output's metadata: pickled, zlib-compressed, base64."""
    return base64.b64encode(zlib.compress(pickle.dumps(fig), 6)).decode("ascii")


def loads(payload: str):
    """The figure of :func:`dumps`.  Only for the book's own execution cache: a pickle runs code."""
    fig = pickle.loads(zlib.decompress(base64.b64decode(payload)))  # noqa: S301 - our own build's cache
    if "matplotlib.pyplot" in sys.modules:  # unpickling a pyplot figure registers it with pyplot again
        sys.modules["matplotlib.pyplot"].close(fig)
    return fig


# --- the kernel side --------------------------------------------------------------------------------

def _figure_metadata(shell, fig):
    """The mimebundle printer of matplotlib figures: no data, and the pickled figure in the metadata."""
    try:
        png = shell.display_formatter.formatters["image/png"].lookup(fig)
    except KeyError:  # no PNG of figures (not the inline backend): nothing to pair with
        return {}, {}
    if not fig.axes and not fig.lines:  # print_figure draws no PNG of an empty figure
        return {}, {}
    kwargs = {k: v for k, v in getattr(png, "keywords", {}).items()
              if k not in ("fmt", "base64") and isinstance(v, str | int | float | bool)}
    try:
        entry = {"figure": dumps(fig), "print_kwargs": kwargs}
    except Exception as exc:  # noqa: BLE001 - the English figure must show whatever this figure holds
        entry = {"error": f"{type(exc).__name__}: {exc}"}
    return {}, {METADATA_KEY: entry}


def load_ipython_extension(shell) -> None:
    """Every figure the kernel displays carries itself in its output's metadata (see the module)."""
    formatter = shell.display_formatter.mimebundle_formatter
    formatter.for_type_by_name("matplotlib.figure", "Figure", lambda fig: _figure_metadata(shell, fig))


# --- the catalogue from the executed book ------------------------------------------------------------

def executed_figures(folder: Path):
    """(page, where, metadata entry) of every figure in the executed notebooks under ``folder`` (the
    English build's ``_build/jupyter_execute``); where: the cell's index, or ``"widget <model id>"``."""
    import json

    for path in sorted(folder.rglob("*.ipynb")):
        page = path.relative_to(folder).with_suffix("").as_posix()
        nb = json.loads(path.read_text(encoding="utf-8"))
        for index, cell in enumerate(nb["cells"]):
            for output in cell.get("outputs", []):
                entry = output.get("metadata", {}).get(METADATA_KEY)
                if entry:
                    yield page, index, entry
        # the interactive figures: their outputs are in the saved state of ipywidgets' Output widgets
        state = nb["metadata"].get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {})
        for model_id, model in state.get("state", {}).items():
            for output in model.get("state", {}).get("outputs") or []:
                entry = (output.get("metadata") or {}).get(METADATA_KEY)
                if entry:
                    yield page, f"widget {model_id}", entry


def update_catalogue(folder: Path, path: Path = CATALOGUE, extra: Mapping[str, list[str]] | None = None) -> list[str]:
    """The catalogue gets every figure text of the executed book as a message (new ones untranslated,
    texts no figure draws any more obsolete); returns the messages left to translate.  ``extra``: the
    messages of figures drawn outside the chapters' cells (msgid -> pages), e.g. the class report's."""
    from babel.messages.catalog import Catalog
    from babel.messages.pofile import read_po, write_po

    if path.is_file():
        with path.open("rb") as f:
            catalog = read_po(f)
    else:
        catalog = Catalog(locale="zh_CN", project="Self-Attention, Step by Step: figure texts")
    pages: dict[str, list[str]] = {}
    known = {m.id for m in catalog if m.id}
    for page, _cell, entry in executed_figures(folder):
        if "figure" not in entry:
            raise ValueError(f"{page}: a figure the kernel could not save: {entry.get('error')}")
        for msgid in figure_messages(loads(entry["figure"]), known):
            if page not in pages.setdefault(msgid, []):
                pages[msgid].append(page)
    if not pages:
        raise ValueError(f"no figure in the executed notebooks under {folder}: run make book first")
    for msgid, where in (extra or {}).items():
        listed = pages.setdefault(msgid, [])
        listed += [p for p in where if p not in listed]
    for msg in list(catalog):
        if msg.id and msg.id not in pages:
            catalog.obsolete[msg.id] = msg
            catalog.delete(msg.id)
    for msgid, where in pages.items():
        old = catalog.obsolete.pop(msgid, None)  # a text drawn again gets its old translation back
        msg = catalog.get(msgid) or catalog.add(msgid, old.string if old else "")
        msg.locations = [(page, None) for page in where]
        msg.flags.discard("python-brace-format")  # {#} is this catalogue's number, not a Python field
    catalog.fuzzy = False
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        write_po(f, catalog, width=0, sort_output=True, include_lineno=False)
    return [m.id for m in catalog if m.id and (not m.string or m.fuzzy)]
