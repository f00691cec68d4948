"""Every change the grader makes to third-party code, in one place, each with the issue it works around.

Import this module before nbformat/nbgrader (``attn_grader.run.autograde`` does, first).
"""

from __future__ import annotations

import functools
import os
import sys
import types

# 1. jsonschema (under nbformat) builds an IRI grammar with rfc3987-syntax when it is imported: 1.3-2.4 s
#    of every grading process, for a format notebooks never use (python-jsonschema/jsonschema#1428).
#    Without the module jsonschema simply has no "iri" format checker.
sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]

_ENGINE_FACTORY: list = []
_ENGINES: dict = {}


def nbgrader_setup() -> None:
    """Put this Python's bin/ on PATH (nbgrader runs ``alembic`` from it) and spare nbgrader two costs.

    2. When it creates a gradebook, nbgrader asks the ``alembic`` command for the schema's head
       revision (a subprocess, ~2.5 s): the answer is read here, in this
       process, from nbgrader's own migration scripts, once.
    3. Every ``Gradebook(...)`` (a dozen per submission) makes a new SQLAlchemy engine, and the engine
       holds the cache of compiled SQL, so every query was compiled anew:
       engines are kept per process and database URL (``Gradebook.close`` only disposes connections).

    Neither has an upstream issue (nbgrader's tracker searched for both, December 2026); SQLAlchemy's
    documentation asks for one engine per database URL and process ("Engine Configuration").
    """
    bindir = os.path.dirname(sys.executable)
    if bindir not in os.environ.get("PATH", "").split(os.pathsep):
        os.environ["PATH"] = bindir + os.pathsep + os.environ.get("PATH", "")
    import nbgrader.api as api

    if not hasattr(api.get_alembic_version, "cache_info"):
        api.get_alembic_version = functools.lru_cache(maxsize=1)(alembic_head)
    if api.create_engine is not _cached_engine:
        _ENGINE_FACTORY.append(api.create_engine)
        api.create_engine = _cached_engine
    _zmq_gc_never_blocks()
    _schema_checked_once()


def _schema_checked_once() -> None:
    """6. nbgrader validates each cell's ``nbgrader`` metadata with ``jsonschema.validate``, which
    checks the *schema* against its meta-schema before every cell: 90 % of CheckCellMetadata's time,
    which runs twice per submission and once per assignment (cProfile of ``prepare``: 22 schema checks,
    0.08 s of 0.09 s).  The same validation with the schema checked once per process."""
    import jsonschema
    import nbgrader.nbgraderformat.common as common

    if getattr(common.jsonschema, "attn_grader", False):
        return
    checked: dict[int, tuple] = {}

    def validate(instance, schema):
        if id(schema) not in checked:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
            checked[id(schema)] = (schema, cls(schema))  # the schema kept alive: its id stays its own
        error = jsonschema.exceptions.best_match(checked[id(schema)][1].iter_errors(instance))
        if error is not None:
            raise error

    common.jsonschema = types.SimpleNamespace(validate=validate, attn_grader=True)


def _zmq_gc_never_blocks() -> None:
    """5. A kernel client whose kernel died or timed out keeps sockets with unsent messages; when
    the garbage collector later deletes their zmq context, ``Context.__del__`` -> ``term()`` waits
    for those messages for ever (jupyter/jupyter_client#482, zeromq/pyzmq#1003): a whole grading
    worker stalled at a random line.  Collected contexts are destroyed with ``linger=0`` instead
    (ContainedExecute also destroys each kernel's context itself, see attn_grader.isolation.execute)."""
    import zmq

    if getattr(zmq.Context.__del__, "attn_grader", False):
        return
    original = zmq.Context.__del__

    def __del__(self, _original=original):
        if not getattr(self, "_shadow", True) and not getattr(self, "closed", True):
            try:
                self.destroy(linger=0)
            except Exception:  # noqa: BLE001 - a destructor must not raise
                pass
        _original(self)

    __del__.attn_grader = True
    zmq.Context.__del__ = __del__


def _cached_engine(url, **kwargs):
    key = (os.getpid(), str(url), tuple(sorted(kwargs.items())))  # each worker process makes its own
    if key not in _ENGINES:
        _ENGINES[key] = _ENGINE_FACTORY[0](url, **kwargs)
    return _ENGINES[key]


def alembic_head() -> str:
    import nbgrader
    from alembic.script import ScriptDirectory

    return ScriptDirectory(os.path.join(os.path.dirname(nbgrader.__file__), "alembic")).get_current_head()


# 4. nbconvert (7.x) parses every finished HTML page again with BeautifulSoup to give ``<img>`` tags
#    without ``alt`` a placeholder and to make the JupyterLab template's cells focusable. On a feedback
#    page that pass costs more than rendering it (about half of GenerateFeedback's time, cProfile on a
#    20-submission class). nbgrader's feedback template extends the *classic* template, which has none
#    of the JupyterLab cell wrappers, so only the ``alt`` text applies: added with one regular
#    expression (the base of attn_grader.run.feedback_page.FeedbackHTML, the exporter GenerateFeedback uses).
import re  # noqa: E402

from nbconvert.exporters import HTMLExporter, TemplateExporter  # noqa: E402
from nbconvert.filters.highlight import Highlight2HTML  # noqa: E402
from nbconvert.filters.widgetsdatatypefilter import WidgetsDataTypeFilter  # noqa: E402

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
