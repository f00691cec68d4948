"""The published site works offline: every page of _toc.yml in headless Chromium with the network cut.

Static checks (no browser): assets are local, MathJax is served from _static, launch buttons
render, the Exercises page links every released notebook. Browser checks (marked `browser`,
one browser and one context, pages visited in order): no console error, no request leaving
127.0.0.1, every image loaded, math typeset, widgets rendered, next/previous links and the
sidebar reach every chapter, search finds "softmax" and "positional"; a full-page screenshot
of each page goes to _build/screenshots/ for review.

Needs the built site (`make book`) and Debian's chromium (`sudo apt-get install chromium` or
`make browser`; CHROMIUM=path overrides it); without them these tests are skipped, except in CI
(env CI set) where they fail. SITE_HTML / SITE_TOC point them at another build (tests/site_helpers.py).
"""

from __future__ import annotations

import functools
import http.server
import re
import threading
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml
from site_helpers import ROOT, SITE, TIMEOUT_MS, VIEWPORT, chromium, need_site, page_source, toc_pages

PAGES = toc_pages()
SCREENSHOTS = ROOT / "_build" / "screenshots"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())


def _html(page: str) -> str:
    path = need_site() / (page + ".html")
    assert path.is_file(), f"{page} is in the table of contents but {path} was not built"
    return path.read_text()


def _is_notebook(page: str) -> bool:
    """A MyST notebook (jupytext header with a kernelspec) rather than a plain markdown page."""
    return "kernelspec:" in page_source(page).read_text().split("\n---", 1)[0]


# ---------------------------------------------------------------- static checks (fast, no browser)

class _Assets(HTMLParser):
    """Collects what a page loads: <script src>, <link href> (not navigation links), <img src>, ...;
    and the bodies of executable inline scripts."""

    LOADS = {"script": "src", "img": "src", "iframe": "src", "source": "src", "video": "src", "audio": "src",
             "embed": "src", "object": "data"}

    def __init__(self):
        super().__init__()
        self.urls: list[str] = []
        self.inline: list[str] = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag in self.LOADS and a.get(self.LOADS[tag]):
            self.urls.append(a[self.LOADS[tag]])
        if tag == "link" and a.get("href") and a.get("rel") not in ("next", "prev", "index", "search", "canonical"):
            self.urls.append(a["href"])
        self._in_script = tag == "script" and not a.get("src") and a.get("type", "text/javascript") in (
            "text/javascript", "module", "")

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_script:
            self.inline.append(data)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_page_loads_only_local_assets(page):
    parser = _Assets()
    parser.feed(_html(page))
    external = [u for u in parser.urls if urlparse(u).scheme or u.startswith("//")]
    assert not external, f"{page} loads from another host: {external}"
    in_scripts = [m for body in parser.inline for m in re.findall(r"https?://[^\s'\"]+", body)]
    assert not in_scripts, f"{page}: inline scripts name external URLs {in_scripts}"


class _Links(HTMLParser):
    def __init__(self):
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES)
def test_internal_links_resolve(page):
    """Every link of a page to the site itself names a file that was published."""
    site = need_site()
    parser = _Links()
    parser.feed(_html(page))
    broken = []
    for href in parser.hrefs:
        url = urlparse(href)
        if url.scheme or href.startswith(("//", "#", "mailto:", "javascript:")):
            continue
        target = (site / page).parent / unquote(url.path)
        if target.is_dir():
            target = target / "index.html"
        if not target.resolve().is_file():
            broken.append(href)
    assert not broken, f"{page} links to files that were not published: {broken}"


@pytest.mark.slow
def test_mathjax_is_served_from_the_site():
    site = need_site()
    math_pages = [p for p in PAGES if 'class="math notranslate' in _html(p)]
    assert math_pages, "no page has math"
    for page in math_pages:
        assert re.search(r'<script[^>]+src="(\.\./)*_static/mathjax/tex-chtml\.js(\?v=\w+)?"', _html(page)), (
            f"{page}: MathJax is not loaded from _static")
    assert (site / "_static" / "mathjax" / "tex-chtml.js").is_file()
    fonts = list((site / "_static" / "mathjax" / "output" / "chtml" / "fonts" / "woff-v2").glob("*.woff"))
    assert fonts, "MathJax's CHTML fonts are not published"


@pytest.mark.slow
def test_widget_pages_use_the_local_html_manager():
    widget_pages = [p for p in PAGES if WIDGET_VIEW in _html(p)]
    if not widget_pages:
        pytest.skip("no page has widget output yet")
    for page in widget_pages:
        html = _html(page)
        assert "application/vnd.jupyter.widget-state+json" in html, f"{page}: widget state was not saved"
        assert re.search(r'src="(\.\./)*_static/widgets/require\.js', html), page
        assert re.search(r'src="(\.\./)*_static/widgets/embed-amd\.js', html), page


def _launch_links(html: str) -> dict[str, str]:
    """The launch dropdown's links by their label (Binder, JupyterHub, Colab)."""
    menu = re.search(r'<div[^>]*launch-buttons.*?</ul>', html, re.S)
    assert menu, "no launch menu"
    return {label: href.replace("&amp;", "&") for href, label in
            re.findall(r'<a href="([^"]+)"[^>]*>.*?<span class="btn__text-container">([^<]+)</span>', menu.group(0),
                       re.S)}


@pytest.mark.slow
def test_launch_buttons_open_the_chapters_notebook():
    """Every notebook page has a button per service configured in _config.yml (Binder, JupyterHub,
    Colab), each opening that chapter's book/<page>.ipynb in the repository and branch configured
    there (Colab opens only .ipynb)."""
    launch, repo = CONFIG["launch_buttons"], CONFIG["repository"]
    org_repo = urlparse(repo["url"]).path.strip("/")
    branch = repo.get("branch", "main")
    notebooks = [p for p in PAGES if _is_notebook(p)]
    assert notebooks
    for page in notebooks:
        assert (ROOT / (page + ".ipynb")).is_file(), f"{page}.ipynb missing: run make notebooks"
        expected = {
            "Binder": f"{launch.get('binderhub_url', '').rstrip('/')}/v2/gh/{org_repo}/{branch}"
                      f"?urlpath=tree/{page}.ipynb",
            "JupyterHub": f"{launch.get('jupyterhub_url', '').rstrip('/')}/hub/user-redirect/git-pull?repo="
                          f"{repo['url'].replace('://', '%3A//')}&urlpath=tree/{org_repo.split('/')[1]}/{page}.ipynb"
                          f"&branch={branch}",
            "Colab": f"{launch.get('colab_url', '').rstrip('/')}/github/{org_repo}/blob/{branch}/{page}.ipynb",
        }
        configured = {"Binder": "binderhub_url", "JupyterHub": "jupyterhub_url", "Colab": "colab_url"}
        expected = {label: url for label, url in expected.items() if launch.get(configured[label])}
        assert expected, "no launch service configured in _config.yml"
        assert _launch_links(_html(page)) == expected, page


@pytest.mark.slow
def test_exercises_page_links_every_notebook():
    source = (ROOT / "book" / "exercises.md").read_text()
    linked = {(ROOT / "book" / target).resolve() for target in re.findall(r"\{download\}`[^`<]*<([^>]+)>`", source)}
    released = {p.resolve() for p in (ROOT / "exercises").glob("*/*.ipynb")}
    assert released <= linked, f"not linked from book/exercises.md: {sorted(p.name for p in released - linked)}"
    assert all(p.is_file() for p in linked), f"links to missing notebooks: {[p for p in linked if not p.is_file()]}"
    assert all("solutions" not in p.parts for p in linked), "the Exercises page links into solutions/"
    if (SITE / "index.html").is_file() and "book/exercises" in PAGES:
        downloads = {p.name for p in (SITE / "_downloads").rglob("*.ipynb")}
        assert {p.name for p in released} <= downloads, "a linked notebook was not published"


@pytest.mark.slow
def test_no_sources_published():
    site = need_site()
    assert not (site / "_sources").exists()
    assert not list(site.rglob("*.md")), "page sources were copied into the site"


# ---------------------------------------------------------------- browser checks

class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    site = need_site()
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def browser_context():
    with chromium() as browser:
        context = browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(TIMEOUT_MS)
        yield context
        context.close()


class Visit:
    """What one page load produced."""

    def __init__(self):
        self.external: list[str] = []
        self.console_errors: list[str] = []
        self.failed: list[str] = []
        self.broken_images: list[str] = []
        self.untypeset_math = 0
        self.math_elements = 0
        self.mjx = 0
        self.raw_tex: list[str] = []
        self.raw_tables: list[str] = []
        self.widgets = 0
        self.next = self.prev = None
        self.sidebar: list[str] = []


# Runs in the page: images, math, navigation, after MathJax has finished.
_INSPECT = """
async () => {
  await Promise.all([...document.images].map(img => img.complete ? null :
      new Promise(r => { img.addEventListener('load', r); img.addEventListener('error', r); })));
  if (window.MathJax && MathJax.startup && MathJax.startup.promise) { await MathJax.startup.promise; }
  const maths = [...document.querySelectorAll('article .math')];
  const article = (document.querySelector('article') || document.body).cloneNode(true);
  article.querySelectorAll('pre, code, script, style, mjx-container').forEach(e => e.remove());
  const text = article.innerText;
  const raw = (text.match(/\\$\\$|\\\\\\(|\\\\\\[|\\\\begin\\{|\\$[^$\\s][^$\\n]{0,80}\\$/g) || []);
  const rawTables = (text.match(/\\|\\s*:?[-\u2013\u2014]+:?\\s*\\|/g) || []);
  return {
    broken: [...document.images].filter(i => i.naturalWidth === 0).map(i => i.getAttribute('src')),
    maths: maths.length,
    untypeset: maths.filter(m => !m.querySelector('mjx-container')).length,
    mjx: document.querySelectorAll('mjx-container').length,
    raw: raw,
    rawTables: rawTables,
    widgets: document.querySelectorAll('.jupyter-widgets, [class*="widget-"]').length,
    next: (document.querySelector('a.right-next') || {}).href || null,
    prev: (document.querySelector('a.left-prev') || {}).href || null,
    sidebar: [...document.querySelectorAll('.bd-sidebar-primary a[href]')].map(a => a.href),
  };
}
"""


@pytest.fixture(scope="module")
def visit(server, browser_context):
    visits: dict[str, Visit] = {}
    page = browser_context.new_page()
    current: list[Visit] = []

    def route(r):
        host = urlparse(r.request.url).hostname
        if r.request.url.startswith("data:") or host == "127.0.0.1":
            r.continue_()
        else:
            current[-1].external.append(r.request.url)
            r.abort()

    browser_context.route("**/*", route)
    page.on("console", lambda m: m.type == "error" and current[-1].console_errors.append(m.text))
    page.on("pageerror", lambda e: current[-1].console_errors.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: current[-1].failed.append(f"{r.url} ({r.failure})"))
    page.on("response", lambda r: r.status >= 400 and current[-1].failed.append(f"{r.url} (HTTP {r.status})"))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def load(name: str) -> Visit:
        if name not in visits:
            current.append(Visit())
            html = _html(name)
            page.goto(urljoin(server, name + ".html"), wait_until="load")
            if WIDGET_VIEW in html:
                page.wait_for_selector(".jupyter-widgets", state="attached")
            info = page.evaluate(_INSPECT)
            v = current[-1]
            v.broken_images, v.math_elements, v.untypeset_math = info["broken"], info["maths"], info["untypeset"]
            v.mjx, v.raw_tex, v.widgets = info["mjx"], info["raw"], info["widgets"]
            v.raw_tables = info["rawTables"]
            v.next, v.prev, v.sidebar = info["next"], info["prev"], info["sidebar"]
            page.screenshot(path=str(SCREENSHOTS / f"{Path(name).name}.png"), full_page=True)
            visits[name] = v
        return visits[name]

    load.page = page
    load.current = current
    load.server = server
    yield load
    page.close()


@pytest.mark.browser
@pytest.mark.xdist_group("browser")
class TestSiteInBrowser:
    @pytest.mark.parametrize("name", PAGES)
    def test_page_works_offline(self, visit, name):
        v = visit(name)
        html = _html(name)
        assert not v.external, f"{name} tried to reach another host: {v.external}"
        assert not v.failed, f"{name}: requests failed: {v.failed}"
        assert not v.console_errors, f"{name}: console errors: {v.console_errors}"
        assert not v.broken_images, f"{name}: images that did not load: {v.broken_images}"
        if 'class="math notranslate' in html:
            assert v.math_elements and v.untypeset_math == 0 and v.mjx >= v.math_elements, (
                f"{name}: {v.untypeset_math} of {v.math_elements} math elements not typeset by MathJax")
        assert not v.raw_tex, f"{name}: raw TeX left in the text: {v.raw_tex[:5]}"
        assert not v.raw_tables, f"{name}: a markdown table shown as raw text: {v.raw_tables[:3]}"
        if WIDGET_VIEW in html:
            assert v.widgets, f"{name} has widget output but no widget was rendered"

    def test_next_and_previous_links_walk_the_book(self, visit):
        urls = [urljoin(visit.server, p + ".html") for p in PAGES]
        for i, name in enumerate(PAGES):
            v = visit(name)
            if i + 1 < len(PAGES):
                assert v.next == urls[i + 1], f"'next' on {name} goes to {v.next}, not {urls[i + 1]}"
            if i > 0:
                assert v.prev == urls[i - 1], f"'previous' on {name} goes to {v.prev}, not {urls[i - 1]}"

    def test_sidebar_reaches_every_chapter(self, visit):
        urls = {urljoin(visit.server, p + ".html") for p in PAGES}
        for name in (PAGES[0], PAGES[-1]):
            sidebar = {u.split("#")[0] for u in visit(name).sidebar}
            missing = sorted(urls - sidebar - {urljoin(visit.server, "index.html")})
            if urljoin(visit.server, PAGES[0] + ".html") in missing and urljoin(visit.server, "index.html") in sidebar:
                missing.remove(urljoin(visit.server, PAGES[0] + ".html"))
            assert not missing, f"the table of contents on {name} does not link {missing}"

    @pytest.mark.parametrize("word", ["softmax", "positional"])
    def test_search_finds(self, visit, word):
        page = visit.page
        v = Visit()
        visit.current.append(v)
        page.goto(urljoin(visit.server, f"search.html?q={word}"), wait_until="load")
        page.wait_for_function(
            "() => { const s = document.querySelector('#search-results .search-summary');"
            " return s && s.innerText && !/preparing/i.test(s.innerText); }")
        results = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
        assert results, f"searching {word!r} found nothing"
        assert not v.external and not v.console_errors, (v.external, v.console_errors)
