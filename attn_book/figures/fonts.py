"""The CJK font of the Chinese figures, on any machine, and no figure drawn with a glyph it lacks (issue 42).

* :func:`cjk_font_file` finds Debian's fonts-noto-cjk (``make fonts`` installs it).  Matplotlib lists the
  machine's fonts once, at its first run, in ``~/.cache/matplotlib/fontlist-v*.json``, and reads that list
  ever after: fonts installed later are not in it.  A list without the CJK font is rebuilt here, once
  (the file rewritten, the process's font manager updated in place, so every module holding it sees the
  new list); still none: :class:`NoCJKFont`, one line saying how to install it.
* :func:`strict_glyphs` turns matplotlib's "Glyph N missing from font(s)" warnings, its "findfont: Font
  family ... not found" messages and mathtext's "does not have a glyph" into one :class:`MissingGlyph`:
  a Chinese figure is never drawn with missing-glyph boxes (the zh build reports the error as a warning
  and fails: ``book/_ext/figure_language.py``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import warnings

CJK_FONT = "Noto Sans CJK SC"  # Debian's fonts-noto-cjk (make fonts)
INSTALL = "no CJK font for the Chinese figures: install Debian's fonts-noto-cjk (sudo make fonts)"
_GLYPH = re.compile(r"Glyph \d+ .*missing from font|findfont: (?:Generic )?[Ff]ont family .* not found|"
                    r"does not have a glyph")
_LOGGERS = ("matplotlib.font_manager", "matplotlib._mathtext", "matplotlib.mathtext")


class NoCJKFont(RuntimeError):
    """No font on this machine draws Chinese."""


class MissingGlyph(RuntimeError):
    """A figure drew a character no font of its text has (a box instead of the glyph)."""


def _listed(manager) -> str | None:
    """The file of the CJK font in a font manager's list, or None."""
    return next((f.fname for f in manager.ttflist if f.name == CJK_FONT), None)


def rebuild_font_cache():
    """Matplotlib's font list made again from the machine's fonts: the cache file rewritten and the
    process's ``fontManager`` updated in place (modules hold references to it); returns it."""
    from matplotlib import font_manager

    fresh = font_manager._load_fontmanager(try_read_cache=False)  # scans the fonts, writes the cache file
    font_manager.fontManager.__dict__.update(fresh.__dict__)
    font_manager.fontManager._findfont_cached.cache_clear()
    return font_manager.fontManager


_found: str | None = None
_rebuilt = False  # the font list is rebuilt at most once a process


def cjk_font_file() -> str:
    """The file of the CJK font; the font list rebuilt first when it lacks one (see the module)."""
    global _found, _rebuilt
    from matplotlib import font_manager

    if _found and _listed(font_manager.fontManager) == _found:
        return _found
    path = _listed(font_manager.fontManager)
    if path is None and not _rebuilt:
        _rebuilt = True
        path = _listed(rebuild_font_cache())
    if path is None:
        raise NoCJKFont(INSTALL)
    _found = path
    return path


class _Collect(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.found: list[str] = []

    def emit(self, record):
        message = record.getMessage()
        if _GLYPH.search(message):
            self.found.append(message)


@contextlib.contextmanager
def strict_glyphs():
    """Raise :class:`MissingGlyph` after the block when matplotlib drew a missing glyph in it (or found no
    font of a family asked for); other warnings pass through as they were."""
    handler, loggers = _Collect(), [logging.getLogger(name) for name in _LOGGERS]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
    found = list(handler.found)
    for w in caught:
        if _GLYPH.search(str(w.message)):
            found.append(str(w.message))
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if found:
        shown = list(dict.fromkeys(found))
        raise MissingGlyph(f"{len(found)} glyph(s) drawn as boxes: " + "; ".join(shown[:3])
                           + (f" (and {len(shown) - 3} more)" if len(shown) > 3 else ""))


def glyph_font(text, char: str) -> str | None:
    """The font file that draws ``char`` of a matplotlib ``Text``: the first font of its family list that
    has the glyph (matplotlib's per-glyph fallback), or None when none has it."""
    from matplotlib import font_manager
    from matplotlib.ft2font import FT2Font

    for path in font_manager.fontManager._find_fonts_by_props(text.get_fontproperties()):
        if FT2Font(str(path)).get_char_index(ord(char)):
            return str(path)
    return None
