"""The figures in the page's language (attn_book/figures/language.py says how).

English build: every kernel that executes a chapter loads ``attn_book.figures.language`` (an IPython
profile of the build's own, IPYTHONDIR for the build's duration): each figure's output carries, beside
its English PNG, the figure itself in the output's metadata.

Chinese build (language zh_CN): the image of such an output is the same figure drawn with its texts
translated through ``locales/zh_CN/LC_MESSAGES/figures.po``.  A page with figures depends on that
catalogue, so a new translation redraws its figures at the next ``i18n.py zh`` without executing
anything.  ``_build/figures_zh.json`` lists every Chinese figure: its page, its image and the English
one, the texts it drew and the messages the catalogue lacks (tests/test_zh_figures.py reads it).
"""

from __future__ import annotations

import base64
import copy
import dataclasses
import functools
import hashlib
import json
import os
from pathlib import Path

from myst_nb.core.render import WIDGET_STATE_MIMETYPE as WIDGET_STATE
from myst_nb.core.render import MimeData, NbElementRenderer
from sphinx.util import logging

from attn_book.figures import language

logger = logging.getLogger(__name__)
REPORT = "figures_zh.json"  # beside the doctrees: _build/figures_zh.json


def is_zh(config) -> bool:
    return (config.language or "").startswith("zh")


# --- the kernels of the build -------------------------------------------------------------------

def kernel_profile(app) -> None:
    """IPYTHONDIR for this build: a profile whose kernels load the figure extension."""
    ipython = Path(app.doctreedir).parent / ".ipython-book"
    profile = ipython / "profile_default"
    profile.mkdir(parents=True, exist_ok=True)
    (profile / "ipython_kernel_config.py").write_text(
        "# written by book/_ext/figure_language.py for the book's build\n"
        'c.InteractiveShellApp.extensions = ["attn_book.figures.language"]\n', encoding="utf-8")
    app._figure_language_ipythondir = os.environ.get("IPYTHONDIR")
    os.environ["IPYTHONDIR"] = str(ipython)


def restore_environment(app, exception) -> None:
    old = getattr(app, "_figure_language_ipythondir", None)
    if old is None:
        os.environ.pop("IPYTHONDIR", None)
    else:
        os.environ["IPYTHONDIR"] = old


# --- the Chinese figures -----------------------------------------------------------------------

@functools.cache
def _catalogue(path: Path, mtime: float) -> dict[str, str]:
    return language.load_catalogue(path)


def catalogue() -> dict[str, str]:
    path = language.CATALOGUE
    return _catalogue(path, path.stat().st_mtime if path.is_file() else 0.0)


def _chinese_image(renderer: NbElementRenderer, data, entry: dict):
    """``data`` (an English image/png) with the Chinese drawing of its figure instead, and the report."""
    env = renderer.renderer.document.settings.env
    if language.CATALOGUE.is_file():
        env.note_dependency(str(language.CATALOGUE))
    where = f"{env.docname}, cell {data.cell_index}"
    if "figure" not in entry:
        logger.warning(f"{where}: no Chinese figure: {entry.get('error', 'nothing saved')}",
                       location=env.docname)
        return data
    try:
        png, texts, missing = language.render_chinese(language.loads(entry["figure"]), catalogue(),
                                                      entry.get("print_kwargs"))
    except Exception as exc:  # noqa: BLE001 - the page keeps its English figure, the build says why
        logger.warning(f"{where}: the Chinese figure failed, the English one stays: {type(exc).__name__}: "
                       f"{exc}", location=env.docname)
        return data
    english = base64.b64decode(data.content)
    env.attn_zh_figures.setdefault(env.docname, []).append({
        "page": env.docname, "cell": data.cell_index, "output": data.output_index,
        "image": hashlib.sha256(png).hexdigest() + ".png",
        "english": hashlib.sha256(english).hexdigest() + ".png",
        "texts": texts, "missing": missing})
    return dataclasses.replace(data, content=base64.b64encode(png).decode("ascii"))


_english_render_image = NbElementRenderer.render_image


def render_image(self: NbElementRenderer, data):
    entry = data.output_metadata.get(language.METADATA_KEY) if data.mime_type == "image/png" else None
    if entry and is_zh(self.renderer.document.settings.env.config):
        data = _chinese_image(self, data, entry)
    return _english_render_image(self, data)


_english_finalise = NbElementRenderer.render_nb_finalise


def render_nb_finalise(self: NbElementRenderer, metadata: dict) -> None:
    """The saved state of the interactive figures (ipywidgets' Output widgets hold their figures' outputs):
    without the pickled figures (the page embeds the state), and on a Chinese page with Chinese images."""
    state = (metadata.get("widgets") or {}).get(WIDGET_STATE, {}).get("state")
    if state:
        metadata = copy.deepcopy(metadata)
        zh = is_zh(self.renderer.document.settings.env.config)
        for model_id, model in metadata["widgets"][WIDGET_STATE]["state"].items():
            for index, output in enumerate(model.get("state", {}).get("outputs") or []):
                entry = (output.get("metadata") or {}).pop(language.METADATA_KEY, None)
                if entry and zh and "image/png" in output.get("data", {}):
                    data = MimeData("image/png", output["data"]["image/png"], cell_index=f"widget {model_id}",
                                    output_index=index)
                    output["data"]["image/png"] = _chinese_image(self, data, entry).content
    _english_finalise(self, metadata)


def init_env(app, *args) -> None:
    if not hasattr(app.env, "attn_zh_figures"):
        app.env.attn_zh_figures = {}


def purge(app, env, docname) -> None:
    getattr(env, "attn_zh_figures", {}).pop(docname, None)


def write_report(app, exception) -> None:
    if exception is not None or not is_zh(app.config):
        return
    figures = [f for page in sorted(app.env.attn_zh_figures) for f in app.env.attn_zh_figures[page]]
    Path(app.doctreedir).parent.joinpath(REPORT).write_text(
        json.dumps(figures, ensure_ascii=False, indent=1), encoding="utf-8")
    missing = sorted({m for f in figures for m in f["missing"]})
    if missing:  # printed: i18n.py builds quietly, and a missing translation is not a build error
        print(f"{len(figures)} Chinese figures; {len(missing)} figure texts left in English: translate them in "
              f"{language.CATALOGUE.relative_to(language.ROOT)} (make translations adds them):"
              + "".join(f"\n  {m!r}" for m in missing))


def setup(app):
    NbElementRenderer.render_image = render_image
    NbElementRenderer.render_nb_finalise = render_nb_finalise
    app.connect("builder-inited", kernel_profile)
    app.connect("builder-inited", init_env)
    app.connect("env-before-read-docs", init_env)
    app.connect("env-purge-doc", purge)
    app.connect("build-finished", write_report)
    app.connect("build-finished", restore_environment)
    return {"parallel_read_safe": False, "parallel_write_safe": True, "env_version": 1}
