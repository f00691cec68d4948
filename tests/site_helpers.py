"""Shared by tests/test_site.py and tests/test_leaks.py: where the built site is, which pages it has.

SITE_HTML (default _build/html) and SITE_TOC (default _toc.yml) may point elsewhere, e.g. at a
partial build made with `jupyter-book build . --toc /tmp/toc_partial.yml --path-output /tmp/x`.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
SITE = Path(os.environ.get("SITE_HTML", ROOT / "_build" / "html"))
TOC = Path(os.environ.get("SITE_TOC", ROOT / "_toc.yml"))
IN_CI = bool(os.environ.get("CI"))


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
