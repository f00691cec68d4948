"""The launch notebooks (book/<chapter>.ipynb, opened by the Binder, JupyterHub and Colab buttons).

They are written from the .md chapters by book/_ext/notebooks.py (`make notebooks`); these tests
fail when one is stale, when a cell of the chapter is missing from it, or when its set-up cell would
not install what a hosted machine lacks.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import jupytext
import nbformat
import pytest
import yaml
from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import notebooks  # noqa: E402

CHAPTERS = notebooks.toc_chapters()


def test_every_notebook_chapter_has_a_launch_notebook():
    assert len(CHAPTERS) >= 14
    stale = [md.name for md in CHAPTERS if not md.with_suffix(".ipynb").is_file()
             or md.with_suffix(".ipynb").read_text() != notebooks.render(md)]
    assert not stale, f"launch notebooks missing or out of date for {stale}: run make notebooks"


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_launch_notebook_holds_the_chapter(md):
    nb = nbformat.read(md.with_suffix(".ipynb"), as_version=4)
    nbformat.validate(nb)
    chapter = jupytext.read(md)
    assert nb.cells[0].metadata["tags"] == [notebooks.SETUP_TAG]
    assert [(c.cell_type, c.source) for c in nb.cells[1:]] == [(c.cell_type, c.source) for c in chapter.cells]
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
    assert nb.metadata["kernelspec"]["name"] == "python3"


def _setup_source(md):
    return nbformat.read(md.with_suffix(".ipynb"), as_version=4).cells[0].source


def _run_setup(source, monkeypatch, absent: set[str]):
    calls = []
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in absent else real(name, *a))
    monkeypatch.setattr(subprocess, "check_call", lambda argv, **k: calls.append(argv))
    namespace: dict = {}
    exec(compile(source, "<setup>", "exec"), namespace)
    return namespace, calls


@pytest.mark.parametrize("md", CHAPTERS, ids=lambda p: p.stem)
def test_setup_cell_installs_only_what_is_missing(md, monkeypatch):
    source = _setup_source(md)
    chapter_imports = {name.split(".")[0] for c in jupytext.read(md).cells if c.cell_type == "code"
                       for name in notebooks._imports(c.source)} - set(sys.stdlib_module_names)
    namespace, calls = _run_setup(source, monkeypatch, absent=set())
    assert calls == [], "the book's own environment has everything: nothing may be installed"
    assert chapter_imports <= set(namespace["NEEDS"]), f"{md.name} imports more than its set-up cell installs"
    # Colab without this repository's packages: installed once, from the repository and branch of _config.yml.
    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    _, calls = _run_setup(source, monkeypatch, absent=notebooks.FIRST_PARTY)
    assert calls == [[sys.executable, "-m", "pip", "install", "--quiet",
                      f"self-attention-step-by-step @ git+{repo['url']}@{repo['branch']}"]]


def test_graphs_chapter_installs_pyg_through_attn_ref():
    """graphs.md imports attn_ref.graph, which imports torch_geometric: found transitively and pinned
    as in requirements.txt."""
    pins = notebooks._pins(ROOT)
    source = _setup_source(ROOT / "book" / "graphs.md")
    namespace: dict = {}
    exec(compile(source.split("missing =")[0], "<setup>", "exec"), namespace)
    assert namespace["NEEDS"]["torch_geometric"] == pins["torch-geometric"]


@pytest.mark.slow
def test_a_launch_notebook_runs_top_to_bottom(tmp_path):
    """The intro's launch notebook executes in a fresh kernel (its set-up cell is a no-op here)."""
    from nbclient import NotebookClient

    nb = nbformat.read(ROOT / "book" / "intro.ipynb", as_version=4)
    NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    assert not any(o.get("output_type") == "error" for c in nb.cells for o in c.get("outputs", []))
    assert "installing" not in str(nb.cells[0].get("outputs", []))
