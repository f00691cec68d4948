"""Nothing of solutions/ reaches the published site, and exercises/ holds no solution.

Scans every file of the built site (SITE_HTML, default _build/html), and every file inside its zips (the
Exercises page's one-language downloads), for nbgrader's solution and hidden-test markers, the hidden
tests' code, the lines of code only solutions/ holds, and copies of solutions/ files. Fast: no browser,
no build.
"""

from __future__ import annotations

import hashlib
import html
import json
import re
import tempfile
import zipfile
from pathlib import Path

import pytest
from site_helpers import ROOT, need_site

MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "HIDDEN TESTS")
HIDDEN_CODE = (
    re.compile(r"from\s+attn_grader\s+import\s+check"),
    re.compile(r"""\bcheck\(\s*["']ps\d\d_\w+["']"""),  # the hidden test's call: check("ps05_...", ...)
)
MIN_LINE = 25  # solution lines shorter than this are too generic to be evidence (`return out`)
TEXT_SUFFIXES = {".html", ".js", ".css", ".txt", ".json", ".ipynb", ".md", ".py", ".svg", ".xml", ".inv", ""}


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _visible_text(path: Path) -> str:
    """A built file as text; HTML with its tags removed (highlighted code is split into spans)."""
    text = path.read_bytes().decode("utf-8", errors="ignore")
    if path.suffix == ".html":
        text = text + "\n" + html.unescape(re.sub(r"<[^>]+>", "", text))
    return _squash(text)


def solution_lines(solutions: Path, published: list[Path]) -> set[str]:
    """Code lines inside BEGIN/END SOLUTION blocks longer than MIN_LINE chars that no published source holds."""
    lines: set[str] = set()
    for nb_path in sorted(solutions.glob("*/*.ipynb")):
        for cell in json.loads(nb_path.read_text())["cells"]:
            if cell["cell_type"] != "code":
                continue
            source = "".join(cell["source"])
            for block in re.findall(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", source, re.S):
                lines.update(_squash(line) for line in block.splitlines() if len(line.strip()) > MIN_LINE)
    public = " ".join(_squash(p.read_text(errors="ignore")) for p in published)
    return {line for line in lines if line not in public}


def published_sources() -> list[Path]:
    """Files whose content is public anyway: the released exercises and the book's pages."""
    return [p for p in (ROOT / "exercises").rglob("*") if p.is_file()] + [
        p for p in (ROOT / "book").rglob("*") if p.is_file() and p.suffix in {".md", ".ipynb", ".bib"}
    ]


def scan_site(site: Path, solutions: Path, published: list[Path]) -> list[str]:
    """Every leak found in `site`, as one line each (empty: no leak)."""
    problems = []
    secret = solution_lines(solutions, published)
    solution_hashes = {
        hashlib.sha256(p.read_bytes()).hexdigest(): p for p in solutions.rglob("*") if p.is_file()
    }
    if (site / "_sources").exists():
        problems.append("_sources/ is published (html_copy_source must stay false)")
    for path in sorted(p for p in site.rglob("*") if p.is_file()):
        rel = path.relative_to(site)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest in solution_hashes:
            problems.append(f"{rel} is a copy of {solution_hashes[digest].relative_to(solutions.parent)}")
        if path.suffix == ".zip":  # a download: what it holds is published too
            with tempfile.TemporaryDirectory() as unpacked, zipfile.ZipFile(path) as z:
                z.extractall(unpacked)
                problems += [f"{rel}: {p}" for p in scan_site(Path(unpacked), solutions, published)]
        if path.suffix not in TEXT_SUFFIXES:
            continue
        raw = path.read_bytes().decode("utf-8", errors="ignore")
        problems += [f"{rel} contains the marker {m!r}" for m in MARKERS if m in raw]
        problems += [f"{rel} contains hidden-test code {rx.pattern!r}" for rx in HIDDEN_CODE if rx.search(raw)]
        if secret:
            text = _visible_text(path)
            problems += [f"{rel} contains the solution line {line!r}" for line in sorted(secret) if line in text]
    return problems


def test_exercises_hold_no_solution():
    """The released notebooks (downloadable from the site) hold no solution or hidden-test block."""
    notebooks = sorted((ROOT / "exercises").glob("*/*.ipynb"))
    if not notebooks:
        pytest.skip("no exercises/ yet")
    problems = []
    for nb_path in notebooks:
        raw = nb_path.read_text()
        problems += [f"{nb_path.name}: marker {m!r}" for m in MARKERS if m in raw]
        problems += [f"{nb_path.name}: hidden-test code {rx.pattern!r}" for rx in HIDDEN_CODE if rx.search(raw)]
    assert not problems, "\n".join(problems)


@pytest.mark.slow
def test_built_site_leaks_nothing():
    site = need_site()
    problems = scan_site(site, ROOT / "solutions", published_sources())
    assert not problems, "solution material in the built site:\n" + "\n".join(problems)


def test_scan_catches_planted_leaks(tmp_path):
    """The scanner itself: a site with each kind of leak is reported, a clean one is not."""
    solutions = tmp_path / "solutions" / "ps99_demo"
    solutions.mkdir(parents=True)
    answer = ("def f(x):\n    ### BEGIN SOLUTION\n"
              "    return np.exp(x - x.max(axis=0, keepdims=True))\n    ### END SOLUTION\n")
    nb = {"cells": [{"cell_type": "code", "source": answer, "metadata": {}, "outputs": []}]}
    (solutions / "ps99_demo.ipynb").write_text(json.dumps(nb))
    site = tmp_path / "site"
    site.mkdir()
    (site / "index.html").write_text("<p>clean page, softmax explained</p>")
    assert scan_site(site, tmp_path / "solutions", []) == []

    highlighted = ('<pre><span class="k">return</span> <span class="n">np</span>.<span class="n">exp</span>'
                   '(x - x.max(axis=0, keepdims=True))</pre>')
    (site / "page.html").write_text(highlighted)
    (site / "hidden.js").write_text('check("ps99_demo", "f", f)')
    (site / "marker.txt").write_text("### BEGIN SOLUTION")
    (site / "copy.bin").write_bytes((solutions / "ps99_demo.ipynb").read_bytes())
    with zipfile.ZipFile(site / "exercises-en.zip", "w") as z:
        z.writestr("exercises/ps99_demo/ps99_demo.ipynb", json.dumps(nb))
    (site / "_sources").mkdir()
    found = "\n".join(scan_site(site, tmp_path / "solutions", []))
    for expected in ("page.html contains the solution line", "hidden.js contains hidden-test code",
                     "marker.txt contains the marker", "copy.bin is a copy of", "_sources/ is published",
                     "exercises-en.zip: exercises/ps99_demo/ps99_demo.ipynb contains the marker"):
        assert expected in found, found
