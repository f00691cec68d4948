"""The arrows between the packages (pyproject.toml, [tool.importlinter]) hold, and a forbidden import
breaks them: the reference imports NumPy and nothing of ours; the grader does not import the book's support
(figures, models, data, timing); the book's support does not import the grader; nothing imports the bench.
And the reference really imports with NumPy alone (torch and matplotlib blocked)."""

import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LINT = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def _lint(root):
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run([LINT, "--no-cache"], cwd=root, env=env, capture_output=True, text=True, timeout=120)


@pytest.fixture
def copy(tmp_path):
    for pkg in ("attn_ref", "attn_book", "attn_grader", "bench"):
        shutil.copytree(os.path.join(ROOT, pkg), tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, "pyproject.toml"), tmp_path)
    return tmp_path


def test_the_contracts_hold(copy):
    proc = _lint(copy)
    assert proc.returncode == 0 and "0 broken" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("module, line", [
    ("attn_ref/softmax.py", "import attn_grader.checking.core"),
    ("attn_ref/attention.py", "from bench import __main__"),
    ("attn_ref/attention.py", "import torch"),
    ("attn_ref/scores.py", "from matplotlib import pyplot"),
    ("attn_ref/softmax.py", "from attn_book import timing"),
    ("attn_grader/checking/scores.py", "import attn_book"),
    ("attn_grader/checking/recheck.py", "import bench"),
    ("attn_book/__init__.py", "import attn_grader"),
    ("attn_grader/selfcheck.py", "import nbgrader"),
    ("attn_grader/checking/core.py", "from matplotlib import pyplot"),  # the self-check imports core
])
def test_a_forbidden_import_breaks_them(copy, module, line):
    with open(copy / module, "a") as f:
        f.write(f"\n{line}  # noqa\n")
    proc = _lint(copy)
    assert proc.returncode != 0 and "BROKEN" in proc.stdout, proc.stdout + proc.stderr


def test_the_reference_imports_with_numpy_alone():
    """Every module of attn_ref imports in a process where torch, matplotlib, scipy and sklearn cannot be
    imported: what a student's kernel or a NumPy-only machine has."""
    code = (
        "import sys, pkgutil, importlib\n"
        "for name in ('torch', 'matplotlib', 'scipy', 'sklearn', 'torch_geometric', 'attn_book', 'attn_grader'):\n"
        "    sys.modules[name] = None\n"
        "import attn_ref\n"
        "names = [m.name for m in pkgutil.iter_modules(attn_ref.__path__)]\n"
        "for n in names:\n"
        "    importlib.import_module('attn_ref.' + n)\n"
        "print(len(names))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) >= 15  # the modules were found and imported, not skipped
