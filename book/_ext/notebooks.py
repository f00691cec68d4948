"""The chapters as ``.ipynb`` files beside their MyST sources, for the launch buttons.

Colab opens only ``.ipynb`` files, and sphinx-book-theme points every launch button (Binder,
JupyterHub, Colab) at ``book/<chapter>.ipynb`` when that file exists beside ``book/<chapter>.md``.
This script writes those notebooks from the ``.md`` sources (jupytext), without outputs, with one
cell in front that installs what the chapter imports and the hosted machine lacks (on Colab:
``attn_ref`` from the repository in ``_config.yml``, and e.g. PyTorch Geometric for the graphs
chapter; on Binder, whose image is built from requirements.txt, nothing).

    python book/_ext/notebooks.py           # (re)write book/*.ipynb        (make notebooks)
    python book/_ext/notebooks.py --check   # exit 1 when one is missing or stale

The ``.md`` files stay the sources; ``tests/test_site.py`` fails when a notebook is out of date.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml

ROOT = Path(__file__).resolve().parents[2]
SETUP_TAG = "launch-setup"
#: import name -> pip name, where they differ
PIP_NAMES = {"sklearn": "scikit-learn", "yaml": "pyyaml"}


def toc_chapters(root: Path = ROOT) -> list[Path]:
    """The ``.md`` sources of the table of contents that are notebooks (they have a kernelspec)."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [c["file"] for c in part.get("chapters", [])]
    out = []
    for f in files:
        md = root / (f + ".md")
        if md.is_file() and "kernelspec:" in md.read_text().split("\n---", 1)[0]:
            out.append(md)
    return out


def _imports(code: str) -> set[str]:
    """Top-level module names a piece of code imports (IPython magics and shell lines are skipped)."""
    lines = [ln for ln in code.splitlines() if not ln.lstrip().startswith(("%", "!"))]
    try:
        tree = ast.parse("\n".join(lines))
    except SyntaxError:
        return set()
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


#: This repository's packages: one distribution (pyproject.toml), installed from the book's repository.
FIRST_PARTY = {"attn_ref", "attn_book", "attn_grader"}


def _needed(codes: list[str], root: Path) -> list[str]:
    """Third-party top-level modules the chapter needs: its own imports and, transitively, those
    of the ``attn_ref`` modules it imports."""
    todo = [name for code in codes for name in _imports(code)]
    seen_modules: set[str] = set()
    top: list[str] = []
    while todo:
        name = todo.pop(0)
        head = name.split(".")[0]
        if head in sys.stdlib_module_names or head.startswith("_"):
            continue
        if head not in top:
            top.append(head)
        if head in FIRST_PARTY and name not in seen_modules:
            seen_modules.add(name)
            base = root / Path(*name.split("."))
            for path in (base.with_suffix(".py"), base / "__init__.py"):
                if path.is_file():
                    todo += sorted(_imports(path.read_text()))
    return sorted(top)


def _pins(root: Path) -> dict[str, str]:
    """requirements.txt's pins by pip name (lower case), so a hosted machine gets the same versions."""
    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        name = line.split("[", 1)[0]
        for sep in ("==", ">=", "<=", "~=", "<", ">"):
            name = name.split(sep, 1)[0]
        pins[name.strip().lower().replace("_", "-")] = line
    return pins


def setup_source(modules: list[str], root: Path = ROOT) -> str:
    config = yaml.safe_load((root / "_config.yml").read_text())
    repo = config["repository"]
    pins = _pins(root)
    needs = {}
    for m in modules:
        if m in FIRST_PARTY:
            needs[m] = f"self-attention-step-by-step @ git+{repo['url'].rstrip('/')}@{repo.get('branch', 'main')}"
        else:
            pip = PIP_NAMES.get(m, m)
            needs[m] = pins.get(pip.lower().replace("_", "-"), pip)
    body = ",\n".join(f"    {m!r}: {spec!r}" for m, spec in needs.items())
    return (
        "# Outside the book's own environment (Colab, a JupyterHub), install what this chapter needs and\n"
        "# the machine lacks. Written by book/_ext/notebooks.py; the chapter starts in the next cell.\n"
        "import importlib.util\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        f"NEEDS = {{\n{body},\n}}\n"
        "missing = [spec for module, spec in NEEDS.items() if importlib.util.find_spec(module) is None]\n"
        "missing = list(dict.fromkeys(missing))  # one distribution holds all of this repository's packages\n"
        "if missing:\n"
        "    print('installing', ', '.join(missing))\n"
        "    subprocess.check_call([sys.executable, '-m', 'pip', 'install', '--quiet', *missing])"
    )


def notebook_for(md: Path, root: Path = ROOT) -> nbformat.NotebookNode:
    """The launch notebook of one chapter: its cells (no outputs), the set-up cell first."""
    nb = jupytext.read(md)
    codes = [c.source for c in nb.cells if c.cell_type == "code"]
    setup = nbformat.v4.new_code_cell(setup_source(_needed(codes, root), root))
    setup.metadata["tags"] = [SETUP_TAG]
    cells = [setup, *nb.cells]
    for i, cell in enumerate(cells):  # stable ids: the same source gives the same file
        cell["id"] = f"cell-{i}"
    out = nbformat.v4.new_notebook(cells=cells)
    out.metadata = {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
                    "language_info": {"name": "python"}}
    return out


def render(md: Path, root: Path = ROOT) -> str:
    return nbformat.writes(notebook_for(md, root)) + "\n"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--check", action="store_true", help="report stale or missing notebooks, write nothing")
    args = p.parse_args(argv)
    stale = []
    for md in toc_chapters():
        target = md.with_suffix(".ipynb")
        text = render(md)
        if target.is_file() and target.read_text() == text:
            continue
        stale.append(target.relative_to(ROOT))
        if not args.check:
            target.write_text(text)
    verb = "stale or missing" if args.check else "written"
    print(f"{len(stale)} launch notebook(s) {verb}" + (": " + ", ".join(map(str, stale)) if stale else ""))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
