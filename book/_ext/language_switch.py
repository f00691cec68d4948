"""The book in two languages: a link on every page to the same page in the other language, and the
Chinese edition's alt texts.

The English site is _build/html/, the Chinese one _build/html/zh/ (book/_ext/i18n.py builds it with
``language = zh_CN``).  Every page gets, above its text, a link to its twin; the link is relative,
so the two sites work from the file system and from any web server.

Alt texts: MyST-NB makes a cell's image (with its ``image: alt:`` option) only after Sphinx has
translated the page, so the Chinese build looks each alt text up in the page's catalogue here.
"""

from __future__ import annotations

from docutils import nodes
from sphinx.locale import init as init_locale
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.i18n import docname_to_domain

EN, ZH = "en", "zh_CN"


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


def setup(app):
    app.connect("html-page-context", add_switch)
    app.add_post_transform(TranslateAltText)
    app.add_css_file("language_switch.css")
    return {"parallel_read_safe": True, "parallel_write_safe": True}
