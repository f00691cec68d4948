"""The theme's own strings on the Chinese pages (issue 42): the search box, the sidebar toggles, the colour
mode, the heading links, the launch buttons.

The Chinese build has ``language = zh_CN`` (book/_ext/i18n.py), so Sphinx's, pydata-sphinx-theme's and
sphinx-book-theme's own zh_CN translations apply.  What they lack is translated here:

* ``locales/zh_CN/LC_MESSAGES/sphinx.po``: Sphinx's and pydata's strings ("Color mode", "Link to this
  heading", ...); Sphinx reads a ``sphinx.po`` of the book's locale_dirs before its own catalogue;
* ``locales/zh_CN/LC_MESSAGES/booktheme.po``: sphinx-book-theme's ("Launch on", "Launch interactive
  content", ...), put before the theme's own catalogue (compiled here): it translates what the theme's
  lacks, and its translation wins where the theme's goes against the term base ("Source repository":
  the theme's 源码库, the book's 仓库);
* the search box's placeholder, Jupyter Book's theme option ``search_bar_text`` (:data:`SEARCH_ZH`);
* the templates with English written in them (the sidebar toggles, the navigation's aria-label, the print-only
  contents' aria-label in layout.html):
  ``zh_templates/``, first in templates_path in the Chinese build (language_switch.py).
"""

from __future__ import annotations

from pathlib import Path

LOCALES = Path(__file__).resolve().parents[2] / "locales"
SEARCH_ZH = "搜索本书……"
BOOKTHEME = "booktheme"  # sphinx-book-theme's message catalogue


def _compile(po: Path) -> None:
    """``po``'s .mo beside it, when older (the .mo files are not committed)."""
    from babel.messages.mofile import write_mo
    from babel.messages.pofile import read_po

    mo = po.with_suffix(".mo")
    if mo.is_file() and mo.stat().st_mtime >= po.stat().st_mtime:
        return
    with po.open("rb") as f:
        catalog = read_po(f)
    with mo.open("wb") as f:
        write_mo(f, catalog)


def theme_in_chinese(app, config) -> None:
    if not (config.language or "").startswith("zh"):
        return
    config.html_theme_options = {**(config.html_theme_options or {}), "search_bar_text": SEARCH_ZH}
    po = LOCALES / config.language / "LC_MESSAGES" / f"{BOOKTHEME}.po"
    if po.is_file():
        _compile(po)
        ours_first(app)


def ours_first(app) -> None:
    """The book's booktheme catalogue, with the theme's own (registered by the theme's setup) as its
    fallback: Sphinx would add ours after the theme's, whose translations would then win."""
    from sphinx import locale

    key = ("general", BOOKTHEME)
    theme = locale.translators.pop(key, None)
    app.add_message_catalog(BOOKTHEME, str(LOCALES))
    if theme is not None and theme.__class__ is not locale.NullTranslations:
        locale.translators[key].add_fallback(theme)


def setup(app):
    app.connect("config-inited", theme_in_chinese, priority=600)  # after the theme's own catalogue
    return {"parallel_read_safe": True, "parallel_write_safe": True}
