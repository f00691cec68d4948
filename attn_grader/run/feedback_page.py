"""The feedback page a student can read anywhere (issue 30): nothing from the network, WCAG 2.1 AA.

nbgrader's feedback template (nbconvert's *classic* one) loads MathJax 2 from a public CDN, so offline,
behind a firewall or where that CDN is blocked every formula of the task text showed as TeX source
(``$q^1$``); axe-core also found unreadable colours, no page language, links told apart by colour alone
and output areas that scroll but cannot be reached by keyboard.  :class:`FeedbackHTML` (the exporter
``GenerateFeedback`` uses, set in :func:`attn_grader.run.course.nbgrader_config` and ``nbgrader_config.py``):

* writes every formula of a text cell as MathML when the page is written (``latex2mathml``; browsers
  render MathML themselves, and screen readers read it): no script, no font, no request;
* marks the Chinese half of a bilingual text cell (after :data:`attn_grader.authoring.bilingual.MARKER`) as
  ``lang="zh-CN"`` and the page as English;
* drops the MathJax loader and adds :data:`CSS`, which gives the template's faint colours (links,
  syntax highlighting, prompts) a contrast of at least 4.5:1 on their background, underlines links,
  and wraps long output lines instead of scrolling them.

``tests/test_class_report.py`` opens a graded feedback page in Chromium with the network off: no raw
``$…$`` left in its text, and axe-core (WCAG 2.1 A and AA rules, every impact) finds nothing.
"""

from __future__ import annotations

import copy
import html
import re

from jinja2 import pass_context
from nbconvert.filters.markdown_mistune import IPythonRenderer, MarkdownWithMath

from . import patches

#: where a bilingual text cell's Chinese half starts: attn_grader.authoring.bilingual.MARKER, which writes it
#: (the run does not import the authoring tools; tests/test_feedback_pages.py holds the two equal)
MARKER = "\n\n---\n<!-- 中文 -->\n\n"

# The writer's output is cleaned with an allow-list of MathML elements and attributes (nh3, Ammonia's
# parser: what a browser would parse): latex2mathml copies ``\text{...}`` through unescaped, so
# ``\text{<img/src=x onerror=alert(1)>}`` gave a live <img> (issue 40).  No element outside the list, no
# attribute outside it (no href, no event handler, no style) survives; text stays text.
MATHML_TAGS = {"math", "semantics", "annotation", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac",
               "msqrt", "mroot", "msub", "msup", "msubsup", "munder", "mover", "munderover", "mmultiscripts",
               "mprescripts", "none", "mtable", "mtr", "mtd", "mlabeledtr", "mstyle", "mpadded", "mphantom",
               "menclose", "merror", "mfenced"}
MATHML_ATTRIBUTES = {"display", "mathvariant", "stretchy", "fence", "separator", "separators", "lspace",
                     "rspace", "accent", "accentunder", "linethickness", "columnalign", "rowalign", "rowspacing",
                     "columnspacing", "columnlines", "rowlines", "frame", "width", "height", "depth",
                     "displaystyle", "scriptlevel", "minsize", "maxsize", "movablelimits", "symmetric",
                     "largeop", "form", "notation", "open", "close", "encoding", "align", "columnspan",
                     "rowspan", "voffset", "xmlns"}
MAX_TEX = 4000  # characters: far more than any formula of the task texts; a longer one (a student's) stays code


def clean_mathml(markup: str) -> str:
    """``markup`` with only :data:`MATHML_TAGS` and :data:`MATHML_ATTRIBUTES` left (text escaped)."""
    import nh3

    return nh3.clean(markup, tags=MATHML_TAGS, attributes={t: MATHML_ATTRIBUTES for t in MATHML_TAGS},
                     url_schemes=set(), link_rel=None, strip_comments=True)


def mathml(tex: str, display: bool = False) -> str:
    """``tex`` (without its ``$`` delimiters) as a MathML ``<math>`` element, cleaned (:func:`clean_mathml`);
    TeX the converter cannot read is shown as code, without dollars."""
    from latex2mathml.converter import convert

    out = ""
    if len(tex) <= MAX_TEX:
        try:
            out = clean_mathml(convert(tex.strip(), display="block" if display else "inline"))
        except Exception:  # noqa: BLE001 - any TeX (a student's too) must still give a page
            out = ""
    if not out.startswith("<math"):
        return f'<code class="tex">{html.escape(tex.strip())}</code>'
    return out


class MathMLRenderer(IPythonRenderer):
    """nbconvert's renderer of notebook Markdown, with its math written as MathML (the parser is
    nbconvert's own: it finds exactly the formulas MathJax would have typeset)."""

    def inline_math(self, body: str) -> str:
        return mathml(body)

    def block_math(self, body: str) -> str:
        return mathml(body, display=True)

    def latex_environment(self, name: str, body: str) -> str:
        return mathml(f"\\begin{{{name}}}{body}\\end{{{name}}}", display=True)


# The page's own additions: links underlined and dark enough on the panels' grey, the template's faint
# "(Top)" links white on the blue panel headings, long output lines wrapped instead of scrolled (a
# scrolling region needs a keyboard focus; a wrapped one does not).
CSS = """
a, a:visited { color: #0b5394; text-decoration: underline; }
div.nbgrader_cell .panel-heading a, div.nbgrader_cell .panel-heading a:visited { color: #ffffff; }
pre, div.output_area pre, div.input_area pre { white-space: pre-wrap; overflow-wrap: anywhere; overflow: visible; }
div.output_subarea, div.output_area, div.output_scroll { overflow: visible; max-height: none; }
math[display="block"] { margin: 0.6em 0; }
"""

# Text colours of syntax highlighting (Pygments' classes), of terminal colours (nbconvert's ansi-* classes)
# and of any inline style are made dark enough for 4.5:1 on the lightest grey the template puts behind
# text (WCAG 2.1 AA, 1.4.3), keeping their hue: a traceback's 256 colours, or an output's own, are many.
BACKGROUND = (0xF5, 0xF5, 0xF5)
MIN_CONTRAST = 4.6  # 4.5 with a margin for rounding


def _luminance(rgb: tuple[int, int, int]) -> float:
    def channel(c: int) -> float:
        c = c / 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    hi, lo = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable(rgb: tuple[int, int, int], background: tuple[int, int, int] = BACKGROUND) -> tuple[int, int, int]:
    """``rgb`` itself when it is dark enough on ``background``, else the same hue darkened until it is."""
    scale = 1.0
    out = rgb
    while contrast(out, background) < MIN_CONTRAST and scale > 0:
        scale -= 0.02
        out = tuple(max(0, int(c * scale)) for c in rgb)
    return out


def _parse(colour: str) -> tuple[int, int, int] | None:
    colour = colour.strip().lower()
    m = re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", colour)
    if m:
        h = m.group(1) if len(m.group(1)) == 6 else "".join(ch * 2 for ch in m.group(1))
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    m = re.fullmatch(r"rgb\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)", colour)
    return tuple(min(255, int(x)) for x in m.groups()) if m else None


_COLOUR = re.compile(r"(?<![-\w])(color\s*:\s*)(#[0-9a-fA-F]{3,6}\b|rgb\([^)]*\))")


def _darken(declarations: str) -> str:
    def one(m: re.Match) -> str:
        rgb = _parse(m.group(2))
        if rgb is None:
            return m.group(0)
        new = readable(rgb)
        return m.group(0) if new == rgb else m.group(1) + "#{:02x}{:02x}{:02x}".format(*new)
    return _COLOUR.sub(one, declarations)


def _darken_stylesheet(css: str) -> str:
    """Every ``color`` of a highlighting or terminal-colour rule darkened (:func:`readable`)."""
    def rule(m: re.Match) -> str:
        selector, body = m.group(1), m.group(2)
        if (".highlight" in selector or ".ansi-" in selector) and "-bg" not in selector:
            body = _darken(body)
        return f"{selector}{{{body}}}"
    return re.sub(r"([^{}]+)\{([^{}]*)\}", rule, css)


_MATHJAX = re.compile(r"(<!-- Loading mathjax macro -->\s*)?<!-- Load mathjax -->.*?"
                      r"<!-- End of mathjax configuration -->", re.S)
_SCRIPT = re.compile(r"<script\b[^>]*>.*?</script>", re.S | re.I)


def repair_page(page: str) -> str:
    """The rendered page without MathJax (or any other script of the template's head), in English, its
    text colours readable (:func:`readable`), with :data:`CSS` last in its head."""
    head, sep, body = page.partition("</head>")
    if not sep:
        return page
    head = _SCRIPT.sub("", _MATHJAX.sub("", head))
    head = re.sub(r"(<style[^>]*>)(.*?)(</style>)", lambda m: m.group(1) + _darken_stylesheet(m.group(2)) + m.group(3),
                  head, flags=re.S)
    body = re.sub(r'(\sstyle=")([^"]*)(")', lambda m: m.group(1) + _darken(m.group(2)) + m.group(3), body)
    head = re.sub(r"<html(?![^>]*\blang=)", '<html lang="en"', head, count=1, flags=re.I)
    return head + f"<style>{CSS}</style>\n" + sep + body


class FeedbackHTML(patches.FeedbackHTML):
    """nbgrader's feedback page, readable offline and by everyone (the module's docstring says how)."""

    @pass_context
    def markdown2html(self, context, source):
        cell = context.get("cell", {})
        path = context.get("resources", {}).get("metadata", {}).get("path", "")

        def render(text: str) -> str:
            renderer = MathMLRenderer(escape=False, attachments=cell.get("attachments", {}),
                                      embed_images=self.embed_images, path=path,
                                      anchor_link_text=self.anchor_link_text,
                                      exclude_anchor_links=self.exclude_anchor_links, **self.lexer_options)
            return MarkdownWithMath(renderer=renderer).render(text)

        english, marker, chinese = source.partition(MARKER)
        if not marker:
            return render(source)
        return render(english) + '<hr>\n<div lang="zh-CN">\n' + render(chinese) + "</div>\n"

    def from_notebook_node(self, nb, resources=None, **kw):
        from ..isolation.sanitize import feedback_safe

        nb = copy.deepcopy(nb)
        feedback_safe(nb)  # the last gate: whatever the grader did before, no live output, no hidden test
        page, resources = super().from_notebook_node(nb, resources, **kw)
        return repair_page(page), resources
