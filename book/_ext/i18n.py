"""The Chinese edition: gettext catalogues and the zh build, from the same executed notebooks.

    python book/_ext/i18n.py pot      # _build/gettext/*.pot: every translatable message of the book
    python book/_ext/i18n.py update   # locales/zh_CN/LC_MESSAGES/*.po updated from them (sphinx-intl)
    python book/_ext/i18n.py figures  # locales/zh_CN/LC_MESSAGES/figures.po: every text of the figures
    python book/_ext/i18n.py zh       # _build/html/zh/: the book in Simplified Chinese

Both builds read the book's _config.yml exactly as `jupyter-book build` does, with its execution
cache (_build/.jupyter_cache): no chapter executes a second time.  A changed English paragraph shows
up in the catalogue as an untranslated or fuzzy message (tests/test_zh.py fails the build on it).
The figures are drawn in English when a chapter executes and again, from the same executed figure, with
their texts translated through figures.po in the zh build (book/_ext/figure_language.py); `figures`
reads the figures' texts from the English build's executed notebooks (_build/jupyter_execute).
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
ROOT = Path(__file__).resolve().parents[2]
LANG = "zh_CN"
LOCALES = ROOT / "locales"
TITLE_ZH = "一步一步理解自注意力"  # _config.yml's title, which no catalogue holds


def _overrides(language: str | None, build_root: Path) -> dict:
    over = {
        "external_toc_path": "_toc.yml",
        "latex_individualpages": False,
        "nb_execution_cache_path": str(build_root / ".jupyter_cache"),
        "locale_dirs": [str(LOCALES)],
        "gettext_compact": False,  # one catalogue per page: book/<chapter>.po
        "gettext_uuid": False,
        "gettext_location": False,  # no line numbers: a paragraph that moves is not a change
    }
    if language:
        over["language"] = language
        over["html_title"] = TITLE_ZH
        # the footnote references MyST cannot see in a translation are restored (language_switch.py)
        over["suppress_warnings"] = ["mystnb.unknown_mime_type", "i18n.inconsistent_references"]
    else:  # the gettext builder: keep figure outputs, so their captions and alt texts are catalogued
        over["nb_mime_priority_overrides"] = [("gettext", "image/png", 5), ("gettext", "image/svg+xml", 6),
                                              ("gettext", "text/html", 25)]
    return over


def build(builder: str, outdir: Path, doctrees: Path, language: str | None = None,
          build_root: Path = ROOT / "_build") -> int:
    """A Sphinx build of the book with `jupyter-book build`'s configuration and execution cache
    (``build_root``/.jupyter_cache, as `jupyter-book build --path-output` leaves it)."""
    from jupyter_book.sphinx import build_sphinx

    result = build_sphinx(ROOT, outdir, noconfig=True, path_config=str(ROOT / "_config.yml"),
                          confoverrides=_overrides(language, Path(build_root)), builder=builder,
                          doctreedir=doctrees,
                          warningiserror=True, keep_going=True, quiet=True)
    if isinstance(result, Exception):
        raise result
    return int(result)


def executed_from_cache(build_root: Path) -> Path:
    """The executed notebook of every chapter, as the execution cache holds it for the chapter's current
    code, written under build_root/.figures-src/book/ (MyST-NB's own copies in jupyter_execute drop the
    outputs' metadata, where the figures are kept, whenever a page is re-read from the cache)."""
    import nbformat
    from jupyter_cache import get_cache
    from myst_nb.core.read import read_myst_markdown_notebook

    cache, out = get_cache(build_root / ".jupyter_cache"), build_root / ".figures-src"
    shutil.rmtree(out, ignore_errors=True)
    (out / "book").mkdir(parents=True)
    for page in sorted((ROOT / "book").glob("*.md")):
        try:  # the cached outputs merged into the whole page (the cache keeps the code cells only)
            _, nb = cache.merge_match_into_notebook(read_myst_markdown_notebook(page.read_text(encoding="utf-8")))
        except KeyError:  # a page without code, or not executed yet
            continue
        nbformat.write(nb, out / "book" / f"{page.stem}.ipynb")
    return out


def main(argv: list[str]) -> int:
    what = argv[0] if argv else "zh"
    if what == "pot":
        return build("gettext", ROOT / "_build" / "gettext", ROOT / "_build" / ".doctrees-gettext")
    if what == "update":
        return subprocess.call([str(Path(sys.executable).with_name("sphinx-intl")), "update", "-p",
                                str(ROOT / "_build" / "gettext"), "-l", LANG, "-d", str(LOCALES), "-w", "0"])
    if what == "figures":  # after make book: the figures' texts into figures.po, new ones untranslated
        import class_report_figure  # the instructors' page's figure, drawn at build time, not in a cell

        from attn_book.figures import language

        extra = {m: [class_report_figure.PAGE] for m in class_report_figure.messages()}
        todo = language.update_catalogue(executed_from_cache(ROOT / "_build"), extra=extra)
        where = language.CATALOGUE.relative_to(ROOT)
        print(f"{where}: {len(todo)} figure texts to translate" + "".join(f"\n  {m!r}" for m in todo))
        return 0
    if what == "zh":  # zh [BUILD_ROOT]: beside the English site of BUILD_ROOT (default _build)
        root = Path(argv[1]) if len(argv) > 1 else ROOT / "_build"
        out = root / "html" / "zh"
        code = build("html", out, root / ".doctrees-zh", LANG, build_root=root)
        # MyST-NB writes the notebooks it renders beside its outdir, here inside the English site
        # (html/jupyter_execute); the pages use the copies in zh/_images, so the folder goes.
        shutil.rmtree(out.parent / "jupyter_execute", ignore_errors=True)
        print(f"Chinese edition: file://{out}/index.html")
        return code
    raise SystemExit(f"unknown step {what!r}: pot, update, figures or zh")


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
