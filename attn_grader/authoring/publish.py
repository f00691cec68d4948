"""``make publish DEST=...``: the student edition, a folder to push as the students' repository.

    python -m attn_grader.authoring.publish DEST [--lang both|en|zh_CN] [--site _build/html]

It holds what students may have and nothing else: the book's sources (``book/``, ``locales/``,
``_config.yml``, ``_toc.yml``, the launch notebooks) and its built site in both languages (``site/``),
``exercises/`` in the chosen languages, ``attn_ref`` and ``attn_book`` (the book's code, which the
chapters and the launch notebooks import), and the ``student`` distribution of the self-check: of
``attn_grader``, only ``selfcheck`` and the catalogue with the modules they import (the import contract in
pyproject.toml), a ``pyproject.toml`` that installs them, a ``requirements.txt`` Binder builds its image
from, and a README for students.  Never ``solutions/``, ``tests/`` (and its attacks), ``.grader/`` (the
course's secret), a gradebook, ``submitted/``, ``autograded/``, ``feedback/``, ``docs/`` or the rest of the
grader.  :func:`leaks` scans the written edition for solution and hidden-test material; a leak stops the
command (tests/test_publish.py plants each kind).

The edition's address is ``repository.url`` in ``_config.yml``, set once: the launch buttons (Binder, the
JupyterHub's nbgitpuller link, Colab), the launch notebooks' set-up cell, ``book/for_students.md`` and the
self-check's install line (:data:`attn_grader.selfcheck.HOW_TO_GET_IT`, :func:`install_line`) use it.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import shutil
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: What of the course is copied as it is (besides exercises/, the packages and the site).
BOOK = ("book", "locales", "_config.yml", "_toc.yml")
PACKAGES = ("attn_ref", "attn_book")
#: The student distribution's roots in attn_grader (with every module they import, transitively).
STUDENT_ROOTS = ("attn_grader.selfcheck", "attn_grader.catalogue")
SKIP = {"__pycache__", ".ipynb_checkpoints", ".pytest_cache", "_build"}
#: Names that must never be in an edition, at any depth.
FORBIDDEN = {"solutions", "tests", "attacks", ".grader", "gradebook.db", "submitted", "autograded", "feedback",
             "nbgrader_config.py", "grades.csv", "grading_results.json"}
MARKERS = ("BEGIN SOLUTION", "END SOLUTION", "BEGIN HIDDEN TESTS", "END HIDDEN TESTS", "BEGIN MARK SCHEME")
STUBS = ("raise NotImplementedError()", "YOUR ANSWER HERE")  # nbgrader_config.py's ClearSolutions stubs
EDITION_MARK = ".student-edition"  # in DEST: a folder make publish may empty and write again
TEXT = {".md", ".py", ".ipynb", ".txt", ".html", ".js", ".json", ".po", ".yml", ".toml", ".cfg", ".css", ".bib", ""}


def edition_url(root: Path = ROOT) -> tuple[str, str]:
    """(url, branch) of the student edition: ``repository`` in ``_config.yml``."""
    import yaml

    repo = yaml.safe_load((root / "_config.yml").read_text())["repository"]
    return repo["url"].rstrip("/"), repo.get("branch", "main")


def install_line(root: Path = ROOT) -> str:
    """The self-check's install command for a student's machine, from the edition's address."""
    url, branch = edition_url(root)
    return f'pip install "self-attention-step-by-step[student] @ git+{url}@{branch}"'


def _how_to_get_it(selfcheck: Path):
    """(the value, the assignment's AST node) of ``HOW_TO_GET_IT`` in a selfcheck.py."""
    node = next(n for n in ast.parse(selfcheck.read_text()).body if isinstance(n, ast.Assign)
                and getattr(n.targets[0], "id", "") == "HOW_TO_GET_IT")
    return ast.literal_eval(node.value), node


def readdress(root: Path = ROOT) -> list[Path]:
    """After ``repository.url`` changed in ``_config.yml``: the self-check's install line
    (``HOW_TO_GET_IT`` in attn_grader/selfcheck.py) and the line every visible test cell of solutions/ prints
    without the package (:func:`attn_grader.selfcheck.cell_lines`) name the new address; returns the files
    changed (then ``make release`` and ``make notebooks``)."""
    import nbformat

    path = root / "attn_grader" / "selfcheck.py"
    text = path.read_text()
    old, node = _how_to_get_it(path)
    new = install_line(root)
    changed = []
    if old != new:
        lines = text.splitlines(keepends=True)
        head, _, tail = new.partition(" @ ")
        lines[node.lineno - 1:node.end_lineno] = [f"HOW_TO_GET_IT = ({head + ' @ '!r}\n", f"{' ' * 17}{tail!r})\n"]
        path.write_text("".join(lines))
        changed.append(path)
    for nb_path in sorted((root / "solutions").glob("*/*.ipynb")):
        nb = nbformat.read(nb_path, as_version=4)
        hits = [c for c in nb.cells if c.cell_type == "code" and old in c.source]
        for cell in hits:
            cell.source = cell.source.replace(repr(f"No self-check here; to get it: {old}"),
                                              repr(f"No self-check here; to get it: {new}"))
        if hits and old != new:
            nbformat.write(nb, nb_path)
            changed.append(nb_path)
    return changed


def _module_file(root: Path, name: str) -> Path | None:
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _first_party_imports(path: Path, name: str) -> set[str]:
    """Every attn_grader module the file of module ``name`` imports (relative imports resolved; a name
    imported from a package counts as its submodule when there is one)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                module = f"{base}.{node.module}" if node.module else base
            else:
                module = node.module or ""
            out.add(module)
            out |= {f"{module}.{a.name}" for a in node.names}
    return {m for m in out if m.split(".")[0] == "attn_grader"}


def student_modules(root: Path = ROOT) -> list[Path]:
    """The files of attn_grader the student distribution needs: the self-check, the catalogue, what they
    import (transitively) and the ``__init__.py`` of every package on the way."""
    todo = ["attn_grader.selfcheck"] + [f"attn_grader.catalogue.{p.stem}" for p in
                                        sorted((root / "attn_grader" / "catalogue").glob("*.py"))]
    seen: set[str] = set()
    files: set[Path] = set()
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        path = _module_file(root, name)
        if path is None:
            continue  # a name imported from a module, not a module
        files.add(path)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        todo += sorted(_first_party_imports(path, name))
    return sorted(files)


def _copy(src: Path, dst: Path) -> None:
    if src.is_dir():
        shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if n in SKIP], dirs_exist_ok=True)
    else:
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst)


def _clear(dest: Path) -> None:
    """Empty DEST for a new edition: it must be new, empty (but for .git) or an edition written before."""
    if not dest.exists():
        dest.mkdir(parents=True)
        return
    entries = [p for p in dest.iterdir() if p.name != ".git"]
    if entries and not (dest / EDITION_MARK).is_file():
        raise SystemExit(f"{dest} is neither empty nor a student edition: refusing to write into it")
    for p in entries:
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()


def _pyproject(root: Path) -> str:
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    extras = meta["optional-dependencies"]
    return (
        "# The student edition of 'Self-Attention, Step by Step' (written by make publish in the course's\n"
        "# repository). attn_ref: the reference maths (NumPy); attn_book: the book's support; attn_grader: the\n"
        "# exercises' self-check and its catalogue only.\n"
        '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = {json.dumps(meta["name"])}\nversion = {json.dumps(meta["version"])}\n'
        'description = "The reference implementation, book support and self-check of the book '
        "'Self-Attention, Step by Step'\"\n"
        f'requires-python = {json.dumps(meta["requires-python"])}\n'
        f'dependencies = {json.dumps(meta["dependencies"])}\n\n'
        "[project.optional-dependencies]\n"
        f"student = {json.dumps(extras['student'])}\nbook = {json.dumps(extras['book'])}\n\n"
        '[tool.setuptools.packages.find]\ninclude = ["attn_ref*", "attn_book*", "attn_grader*"]\n'
    )


def _requirements(root: Path) -> str:
    """Binder's requirements.txt: the course's pins of the distribution's dependencies and its student and
    book extras, then the edition itself (repo2docker copies the repository first when a line names it)."""
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    wanted = [*meta["dependencies"], *meta["optional-dependencies"]["student"],
              *meta["optional-dependencies"]["book"]]

    def key(spec: str) -> str:
        return re.split(r"[\[<>=~!; ]", spec, maxsplit=1)[0].lower().replace("_", "-")

    pins = {}
    for line in (root / "requirements.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            pins[key(line)] = line
    lines = [pins.get(key(w), w) for w in dict.fromkeys(wanted)]
    return ("# Binder (repo2docker) builds the image from this file; locally: pip install -r requirements.txt\n"
            "# PyTorch's CPU wheels (no GPU on Binder; a fraction of the size)\n"
            "--extra-index-url https://download.pytorch.org/whl/cpu\n" + "\n".join(lines) + "\n.\n")


def _readme(url: str, branch: str, lang: str) -> str:
    langs = {"both": "English and Chinese", "en": "English", "zh_CN": "Chinese"}[lang]
    return f"""# Self-Attention, Step by Step: the student edition

A textbook on self-attention whose every chapter executes, and one exercise notebook per chapter
whose self-check names your mistake while you work. This repository ({url}) is what students get:
the book, the exercises (text in {langs}) and the code they use. The solutions and the graders'
hidden tests are not here.

| folder | what |
|---|---|
| `site/` | the book as a website, readable offline: open `site/index.html` (中文版: `site/zh/index.html`) |
| `exercises/` | `psNN_topic/psNN_topic.ipynb`, one per chapter: fill in the answer cells, run all cells |
| `book/` | the chapters' sources (MyST notebooks) and `book/<chapter>.ipynb`, what the launch buttons open |
| `attn_ref/`, `attn_book/` | the book's code: the reference maths (NumPy) and its figures, data and models |
| `attn_grader/` | the exercises' self-check and the catalogue of mistakes it names |

## Work on the exercises

On your own machine (Python 3.11):

```bash
git clone {url}
cd {url.rsplit("/", 1)[-1]}
python -m pip install -e ".[student]" jupyterlab
jupyter lab exercises/
```

Or without installing anything: every chapter's page has launch buttons (Binder, your institution's
JupyterHub, Colab); Binder builds its machine from `requirements.txt`. The self-check alone, in any
environment: `pip install "self-attention-step-by-step[student] @ git+{url}@{branch}"`.

The book's page "For students" (`site/book/for_students.html`) says how the notebooks are graded.
Hand your notebook in the way your course says (keep its file name).
"""


def publish(dest: Path, lang: str = "both", site: Path | None = None, root: Path = ROOT) -> list[str]:
    """Write the student edition into ``dest``; return its leaks (:func:`leaks`: empty when clean)."""
    import nbformat

    from .bilingual import LANGUAGES, one_language

    if lang not in LANGUAGES:
        raise ValueError(f"language {lang!r}: one of {', '.join(LANGUAGES)}")
    site = Path(site) if site is not None else root / "_build" / "html"
    if not (site / "index.html").is_file():
        raise SystemExit(f"no built site at {site}: run make book first")
    dest = Path(dest).resolve()
    if dest == root or root in dest.parents:
        raise SystemExit(f"{dest} is inside the course: the edition goes to a folder of its own")
    _clear(dest)
    for name in (*BOOK, *PACKAGES):
        _copy(root / name, dest / name)
    for path in student_modules(root):
        _copy(path, dest / path.relative_to(root))
    _copy(site, dest / "site")
    for path in sorted((root / "exercises").rglob("*")):
        if path.is_file() and not SKIP & set(path.parts):
            out = dest / path.relative_to(root)
            _copy(path, out)
            if path.suffix == ".ipynb" and lang != "both":
                nbformat.write(one_language(nbformat.read(out, as_version=4), lang), out)
    url, branch = edition_url(root)
    (dest / "pyproject.toml").write_text(_pyproject(root))
    (dest / "requirements.txt").write_text(_requirements(root))
    (dest / "README.md").write_text(_readme(url, branch, lang))
    (dest / ".gitignore").write_text("__pycache__/\n.ipynb_checkpoints/\n_build/\n*.egg-info/\n")
    (dest / "site" / ".nojekyll").write_text("")  # GitHub Pages: serve _static/ as it is
    (dest / EDITION_MARK).write_text(json.dumps({"written_by": "make publish", "lang": lang}) + "\n")
    found = leaks(dest)
    if _how_to_get_it(dest / "attn_grader" / "selfcheck.py")[0] != install_line(root):
        found.append("attn_grader/selfcheck.py: HOW_TO_GET_IT is not the edition's address (run --readdress)")
    return found


def leaks(edition: Path) -> list[str]:
    """What in ``edition`` a student must never have, one line each: a forbidden file or folder, nbgrader's
    solution, hidden-test or mark-scheme markers, an answer cell (nbgrader ``solution: true``) holding code
    instead of the released stub, also inside the site's zips."""
    import zipfile

    problems = []
    for path in sorted(edition.rglob("*")):
        rel = path.relative_to(edition)
        if ".git" in rel.parts:
            continue
        if FORBIDDEN & set(rel.parts):
            problems.append(f"{rel}: {sorted(FORBIDDEN & set(rel.parts))[0]} is not for students")
            continue
        if not path.is_file():
            continue
        if path.suffix == ".zip":
            with zipfile.ZipFile(path) as z:
                for name in z.namelist():
                    problems += [f"{rel}: {name}: {p}" for p in _text_leaks(Path(name), z.read(name))]
        elif path.suffix in TEXT:
            problems += [f"{rel}: {p}" for p in _text_leaks(path, path.read_bytes())]
    return problems


def _text_leaks(name: Path, raw: bytes) -> list[str]:
    text = raw.decode("utf-8", errors="ignore")
    out = [f"the marker {m!r}" for m in MARKERS if m in text]
    if name.suffix == ".ipynb":
        try:
            cells = json.loads(text).get("cells", [])
        except (ValueError, AttributeError):
            cells = []
        for cell in cells if isinstance(cells, list) else []:
            meta = cell.get("metadata", {}).get("nbgrader", {}) if isinstance(cell, dict) else {}
            source = cell.get("source", "") if isinstance(cell, dict) else ""
            source = "".join(source) if isinstance(source, list) else str(source)
            if isinstance(meta, dict) and meta.get("solution") and not any(s in source for s in STUBS):
                out.append(f"the answer cell {meta.get('grade_id', '?')!r} holds a solution, not the stub")
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description="write the student edition (make publish DEST=...)")
    p.add_argument("dest", nargs="?")
    p.add_argument("--readdress", action="store_true", help="after repository.url changed in _config.yml: write "
                   "the new address into the self-check's install line and solutions/ (then make release)")
    p.add_argument("--lang", default="both", choices=("both", "en", "zh_CN"),
                   help="the exercises' text cells: both languages (default), English or Chinese")
    p.add_argument("--site", help="the built book (default: _build/html)")
    p.add_argument("--course", default=str(ROOT))
    args = p.parse_args(argv)
    if args.readdress:
        changed = readdress(Path(args.course).resolve())
        print(f"{len(changed)} file(s) now name {install_line(Path(args.course).resolve())}")
        return 0
    if not args.dest:
        p.error("DEST is needed")
    found = publish(Path(args.dest), args.lang, Path(args.site) if args.site else None, Path(args.course).resolve())
    if found:
        print("make publish: NOT for students, the edition holds:\n  " + "\n  ".join(found[:50]))
        return 1
    url, branch = edition_url(Path(args.course).resolve())
    print(f"student edition in {args.dest} (exercises: {args.lang}); push it to {url} (branch {branch})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
