"""The book in two languages: a link on every page to the same page in the other language, and the
Chinese edition's alt texts.

The English site is _build/html/, the Chinese one _build/html/zh/ (book/_ext/i18n.py builds it with
``language = zh_CN``).  Every page gets, above its text, a link to its twin; the link is relative,
so the two sites work from the file system and from any web server.

Alt texts: MyST-NB makes a cell's image (with its ``image: alt:`` option) only after Sphinx has
translated the page, so the Chinese build looks each alt text up in the page's catalogue here.

Numbered headings ("## 1. Get a notebook"): Sphinx translates a title by parsing its translation as a
small document, the translation followed by a line of ``=``; MyST reads "1. 获取笔记本" at the start of a
line as an ordered list, not a heading, and Sphinx then keeps the English.  :func:`_numbered_titles`
escapes the number of such a translation ("1\\. 获取笔记本"), so every numbered heading, and the page's
table of contents built from the headings, is translated.

The author in the footer (_config.yml's ``author``, English) is the Chinese team's name in the Chinese
build (:data:`AUTHOR_ZH`), and its copyright line is Chinese (zh_templates/copyright.html); the theme's
own strings are Chinese too (theme_zh.py).

Glued values in a translated paragraph: Sphinx parses each translation as a small document of its
own, which lacks MyST-NB's renderer and so the page's glue data ("No key ... found in glue data");
the glue roles and directives here look the key up in the page being read instead.
"""

from __future__ import annotations

import re
from pathlib import Path

from docutils import nodes
from sphinx.locale import init as init_locale
from sphinx.transforms import SphinxTransform
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain

EN, ZH = "en", "zh_CN"
#: _config.yml's author, as the Chinese edition's footer names it ("作者：…").
AUTHOR_ZH = "《一步一步理解自注意力》编写组"
_TITLE_FORM = re.compile(r"^(\d+)([.)])(\s.*\n=+)$", re.S)


def escape_numbered_title(msgstr: str) -> str:
    """A title's translation in the form Sphinx parses it ("1. 获取笔记本\\n====") with its number escaped,
    so that MyST reads a heading, not an ordered list; any other message unchanged."""
    return _TITLE_FORM.sub(r"\1\\\2\3", msgstr)


def _numbered_titles(publish_msgstr):
    def publish(app, source, *args, **kwargs):
        return publish_msgstr(app, escape_numbered_title(source), *args, **kwargs)
    publish.numbered_titles = True
    return publish


def author_zh(app, config) -> None:
    """The Chinese build's footer: the authors in Chinese, and the copyright line in Chinese
    (zh_templates/copyright.html before the theme's)."""
    if (config.language or "").startswith("zh"):
        config.author = AUTHOR_ZH
        config.templates_path = [str(Path(__file__).parent / "zh_templates"), *config.templates_path]


def is_zh(app) -> bool:
    return (app.config.language or "").startswith("zh")


def _twin(app, pagename: str) -> tuple[str, str, str, str]:
    """(href, hreflang, lang, label) of the same page in the other language."""
    depth = pagename.count("/")
    if is_zh(app):
        return "../" * (depth + 1) + pagename + ".html", "en", "en", "English"
    return "../" * depth + "zh/" + pagename + ".html", "zh-CN", "zh-CN", "中文版"


def add_switch(app, pagename, templatename, context, doctree):
    if "body" not in context:
        return
    href, hreflang, lang, label = _twin(app, pagename)
    here = "本页的英文版" if is_zh(app) else "This page in Chinese"
    context["body"] = (f'<p class="language-switch"><a href="{href}" hreflang="{hreflang}" lang="{lang}" '
                       f'title="{here}">{label}</a></p>\n' + context["body"])


class TranslateAltText(SphinxPostTransform):
    default_priority = 900  # after MyST-NB has chosen each output's image

    def run(self) -> None:
        if not is_zh(self.app):
            return
        config = self.config
        domain = docname_to_domain(self.env.docname, config.gettext_compact)
        dirs = [self.app.srcdir / d for d in config.locale_dirs]
        catalogue, found = init_locale(dirs, config.language, domain)
        if not found:
            return
        for image in self.document.findall(nodes.image):
            alt = image.get("alt")
            if alt:
                translated = catalogue.gettext(alt)
                if translated and translated != alt:
                    image["alt"] = translated


_READING: list = []  # the renderer of the page being read: it holds the page's glue data


def _recording(load_renderer):
    def load(name):
        cls = load_renderer(name)

        def make(*args, **kwargs):
            renderer = cls(*args, **kwargs)
            _READING[:] = [renderer]
            return renderer

        return make

    return load


def _glue_from_the_page(original):
    def retrieve(document, key):
        if "nb_renderer" not in document and _READING:
            return original({"nb_renderer": _READING[0]}, key)
        return original(document, key)

    return retrieve


_FOOTNOTE_REF = re.compile(r"\[\^([\w-]+)\]")


class RestoreFootnoteReferences(SphinxTransform):
    """A translated paragraph is parsed without the page's footnotes, so MyST leaves "[^name]" as
    text; make it the footnote reference it is in the English (Sphinx warned "inconsistent footnote
    references in translated message")."""

    default_priority = 21  # right after Sphinx's Locale transform (20)

    def apply(self, **kwargs) -> None:
        if not is_zh(self.app):
            return
        names = {n for f in self.document.findall(nodes.footnote) for n in f["names"]}
        for text in list(self.document.findall(nodes.Text)):
            if "[^" not in text or isinstance(text.parent, nodes.FixedTextElement):
                continue
            parts = _FOOTNOTE_REF.split(str(text))
            if len(parts) == 1 or not any(parts[k] in names for k in range(1, len(parts), 2)):
                continue
            new: list[nodes.Node] = []
            for k, part in enumerate(parts):
                if k % 2 == 0:
                    if part:
                        new.append(nodes.Text(part))
                elif part in names:
                    ref = nodes.footnote_reference(f"[^{part}]", auto=1, refname=part)
                    self.document.note_autofootnote_ref(ref)
                    self.document.note_footnote_ref(ref)
                    new.append(ref)
                else:
                    new.append(nodes.Text(f"[^{part}]"))
            text.parent.replace(text, new)


class TranslateTocCaptions(SphinxTransform):
    """sphinx-external-toc inserts the part captions of _toc.yml after Sphinx has translated the page
    (its InsertToctrees transform runs at 100), so the Chinese build translates them here."""

    default_priority = 101

    def apply(self, **kwargs) -> None:
        if not is_zh(self.app):
            return
        domain = docname_to_domain(self.env.docname, self.config.gettext_compact)
        catalogue, found = init_locale([self.app.srcdir / d for d in self.config.locale_dirs],
                                       self.config.language, domain)
        if not found:
            return
        from sphinx import addnodes

        for toctree in self.document.findall(addnodes.toctree):
            if toctree.get("caption"):
                toctree["caption"] = catalogue.gettext(toctree["caption"])


def setup(app):
    import myst_nb.sphinx_ as nb_sphinx
    import sphinx.transforms.i18n as sphinx_i18n
    from myst_nb.ext.glue import directives, roles

    if not getattr(sphinx_i18n.publish_msgstr, "numbered_titles", False):
        sphinx_i18n.publish_msgstr = _numbered_titles(sphinx_i18n.publish_msgstr)
    app.connect("config-inited", author_zh)
    app.setup_extension("exercise_downloads")   # exercises-en.zip, exercises-zh_CN.zip beside each site
    app.setup_extension("theme_zh")   # the theme's own strings in Chinese on the Chinese pages

    if not getattr(nb_sphinx.load_renderer, "recording", False):
        nb_sphinx.load_renderer = _recording(nb_sphinx.load_renderer)
        nb_sphinx.load_renderer.recording = True
    for module in (roles, directives):
        if not getattr(module.retrieve_glue_data, "from_the_page", False):
            module.retrieve_glue_data = _glue_from_the_page(module.retrieve_glue_data)
            module.retrieve_glue_data.from_the_page = True
    app.add_transform(RestoreFootnoteReferences)
    app.add_transform(TranslateTocCaptions)
    app.connect("html-page-context", add_switch)
    app.add_post_transform(TranslateAltText)
    app.add_css_file("language_switch.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
