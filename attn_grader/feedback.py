"""The feedback page exporter: nbconvert's HTMLExporter without its BeautifulSoup pass.

nbconvert (7.x) parses every finished HTML page again with BeautifulSoup to give ``<img>`` tags
without ``alt`` a placeholder text and to make the JupyterLab template's cells focusable
(``tabindex``). On a feedback page that pass costs more than rendering it (measured with cProfile
on a 20-submission class: about half of GenerateFeedback's time). nbgrader's feedback template
extends the *classic* template, which has none of the JupyterLab cell wrappers, so only the ``alt``
text applies: it is added here with one regular expression over the rendered page.
"""

from __future__ import annotations

import re

from nbconvert.exporters import HTMLExporter, TemplateExporter
from nbconvert.filters.highlight import Highlight2HTML
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter

NO_ALT = "No description has been provided for this image"  # nbconvert's own placeholder
_IMG_WITHOUT_ALT = re.compile(r"<img(?![^>]*\salt=)(?=[\s/>])", re.IGNORECASE)


def add_missing_alt(html: str) -> str:
    return _IMG_WITHOUT_ALT.sub(f'<img alt="{NO_ALT}"', html)


class FeedbackHTML(HTMLExporter):
    def from_notebook_node(self, nb, resources=None, **kw):
        # As HTMLExporter.from_notebook_node (nbconvert 7.17), up to its BeautifulSoup pass.
        langinfo = nb.metadata.get("language_info", {})
        lexer = langinfo.get("pygments_lexer", langinfo.get("name", None))
        highlight_code = self.filters.get("highlight_code", Highlight2HTML(pygments_lexer=lexer, parent=self))
        resources = self._init_resources(resources)
        filter_data_type = WidgetsDataTypeFilter(notebook_metadata=self._nb_metadata, parent=self,
                                                 resources=resources)
        self.register_filter("highlight_code", highlight_code)
        self.register_filter("filter_data_type", filter_data_type)
        html, resources = TemplateExporter.from_notebook_node(self, nb, resources, **kw)
        return add_missing_alt(html), resources
