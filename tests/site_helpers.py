"""Shared by the tests of the built site (test_site, test_leaks, test_book_pages, test_zh): where the
built site is, which pages it has, and one headless Chromium to visit it offline.

SITE_HTML (default _build/html) and SITE_TOC (default _toc.yml) may point elsewhere, e.g. at a
partial build made with `jupyter-book build . --toc /tmp/toc_partial.yml --path-output /tmp/x`.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))
TOC = Path(os.environ.get("SITE_TOC", ROOT / "_toc.yml"))
IN_CI = bool(os.environ.get("CI"))
VIEWPORT = {"width": 1280, "height": 900}
TIMEOUT_MS = 20_000
LOCAL = ("file:", "data:", "blob:")  # what a page read from disk may request
# axe-core's rules of WCAG 2.1 levels A and AA (book/accessibility.md states the target); every violation
# counts, whatever its impact.
WCAG21_AA = {"runOnly": {"type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}}


def need(condition: bool, message: str) -> None:
    """Skip with `message` when `condition` is false; in CI (env CI set) fail instead."""
    if condition:
        return
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def need_site() -> Path:
    need((SITE / "index.html").is_file(), f"no built site at {SITE}: run make book first")
    return SITE


def toc_pages(toc: Path = TOC) -> list[str]:
    """Every page of the table of contents in reading order, e.g. ['book/intro', 'book/vector_sets', ...]."""
    data = yaml.safe_load(toc.read_text())
    pages = [data["root"]]

    def walk(entries):
        for entry in entries or []:
            if "file" in entry:
                pages.append(str(Path(entry["file"]).with_suffix("")))
            walk(entry.get("sections"))

    for part in data.get("parts", []):
        walk(part.get("chapters"))
    walk(data.get("chapters"))
    return [str(Path(p).with_suffix("")) for p in pages]


def page_source(page: str) -> Path:
    for suffix in (".md", ".ipynb"):
        path = ROOT / (page + suffix)
        if path.exists():
            return path
    raise FileNotFoundError(page)


@contextlib.contextmanager
def chromium() -> Iterator:
    """Debian's chromium, headless under Playwright (closed on exit); skipped (failed in CI) without them."""
    from attn_grader.reports.classreport import CHROMIUM, CHROMIUM_ARGS

    need(Path(CHROMIUM).is_file(), "no chromium for the browser tests: sudo apt-get install chromium (or make browser)")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        need(False, "playwright is not installed (pip install -r requirements.txt)")
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


def wcag_violations(page) -> list[dict]:
    """axe-core's WCAG 2.1 A and AA violations of the page as it stands, every impact."""
    from axe_playwright_python.sync_playwright import Axe

    return Axe().run(page, options=WCAG21_AA).response["violations"]


def describe_violations(violations: list[dict]) -> str:
    return "\n".join(f"  {v['id']} ({v['impact']}): {v['help']}; " +
                     "; ".join(" ".join(map(str, n["target"])) for n in v["nodes"][:5]) for v in violations)


def offline_page(browser):
    """A new page of ``browser`` that may load local files only: any other request is aborted and its
    URL appended to ``page.external``."""
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(TIMEOUT_MS)
    page.external = []
    page.route("**/*", lambda r: r.continue_() if r.request.url.startswith(LOCAL)
               else (page.external.append(r.request.url), r.abort()))
    return page
