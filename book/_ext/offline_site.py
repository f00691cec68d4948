"""Keep the published site self-contained: a page fetches nothing from another host on load.

Jupyter Book 1 always loads sphinx-thebe, which writes a loader pointing at unpkg.com into
every page (used only by a "live code" button this book does not enable: `launch_buttons.thebe`
is false). This extension unhooks it when thebe is off, and makes the ipywidgets html-manager,
served from book/_static/widgets (see _config.yml, nb_ipywidgets_js), work beside MathJax 3
(served by sphinx-mathjax-offline).
"""


def _unhook_thebe(app):
    if (app.config.html_theme_options or {}).get("launch_buttons", {}).get("thebe"):
        return  # thebe requested: leave sphinx-thebe alone
    for event in ("env-before-read-docs", "doctree-resolved"):
        for listener in list(app.events.listeners.get(event, [])):
            if getattr(listener.handler, "__module__", "") == "sphinx_thebe" and listener.handler.__name__ in (
                "init_thebe_core",
                "update_thebe_context",
            ):
                app.disconnect(listener.id)


# Both scripts below go only into pages with saved widget state, before require.js.
# 1. The html-manager's CSS asks for its fonts next to the AMD module "@jupyter-widgets/html-manager/
#    dist/libembed-amd" (webpack's public path is taken from the module's uri); mapping that module
#    path to _static/widgets makes them load from there instead of from a path beside the page.
_REQUIRE_CONFIG = """var require = {paths: {"@jupyter-widgets/html-manager/dist":
  new URL((document.documentElement.dataset.content_root || "") + "_static/widgets", location.href).href}};"""

# 2. The html-manager typesets widget labels with MathJax 2's `MathJax.Hub.Queue`; this book loads
#    MathJax 3, which has no Hub, so every widget would throw. Give whatever object is assigned to
#    window.MathJax (Sphinx's config, then MathJax 3 itself) a Hub whose Queue calls MathJax 3.
_MATHJAX2_SHIM = """(function () {
  var mj;
  function queue(cmd) {
    var el = cmd && cmd[2];
    if (el && mj && mj.typesetPromise) { mj.typesetPromise([el]); }
  }
  Object.defineProperty(window, "MathJax", {
    configurable: true,
    get: function () { return mj; },
    set: function (value) {
      mj = value;
      if (value && typeof value === "object" && !value.Hub) { value.Hub = {Queue: queue}; }
    }
  });
})();"""


def _widget_page_scripts(app, pagename, templatename, context, doctree):
    from myst_nb.sphinx_ import NbMetadataCollector

    if app.builder.format == "html" and "ipywidgets_state" in NbMetadataCollector.get_js_files(app.env, pagename):
        app.add_js_file(None, body=_REQUIRE_CONFIG + "\n" + _MATHJAX2_SHIM, priority=100)


def setup(app):
    app.connect("builder-inited", _unhook_thebe)
    app.connect("html-page-context", _widget_page_scripts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
