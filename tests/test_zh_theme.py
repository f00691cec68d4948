"""The theme's strings on the Chinese pages follow the term base (zh review): the book's booktheme.po comes
before sphinx-book-theme's own zh_CN catalogue, so "Source repository" is 仓库 (the theme's 源码库 is a
variant the term base rejects), while what only the theme translates keeps the theme's translation."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import theme_zh  # noqa: E402


def test_the_books_theme_catalogue_wins_over_the_themes_own(monkeypatch):
    from importlib.util import find_spec

    from sphinx import locale

    theme = Path(find_spec("sphinx_book_theme").origin).parent  # the theme the book's build uses
    theme_locales = theme / "theme" / "sphinx_book_theme" / "static" / "locales"
    key = ("general", theme_zh.BOOKTHEME)
    monkeypatch.setattr(locale, "translators", locale.translators.copy())
    locale.translators.pop(key, None)
    locale.init([str(theme_locales)], "zh_CN", theme_zh.BOOKTHEME)  # what the theme's setup does
    translate = locale.get_translation(theme_zh.BOOKTHEME)
    assert str(translate("Source repository")) == "源码库"  # the theme's own translation
    fullscreen = str(translate("Fullscreen mode"))
    assert fullscreen != "Fullscreen mode"

    app = SimpleNamespace(add_message_catalog=lambda catalog, folder: locale.init([folder], "zh_CN", catalog))
    config = SimpleNamespace(language="zh_CN", html_theme_options={})
    theme_zh.theme_in_chinese(app, config)
    assert str(translate("Source repository")) == "仓库"
    assert str(translate("Launch on")) == "启动于"  # only the book's catalogue has it
    assert str(translate("Fullscreen mode")) == fullscreen  # only the theme's has it
    assert config.html_theme_options["search_bar_text"] == theme_zh.SEARCH_ZH
