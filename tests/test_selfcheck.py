"""The students' self-check (attn_grader.selfcheck, issue 30): in-process for every task and every catalogued
mistake (fast), the notebooks' test cells that call it, and a few notebooks run top to bottom in a fresh kernel,
with and without the package (slow).

The self-check names each catalogued mistake with the graded feedback's sentence and nothing for the solution;
a mistake outside the catalogue gets what differs; ``raise NotImplementedError()`` is "not attempted yet"; it
prints to stdout only, never raises, draws fresh inputs (never the hidden ones) and imports nothing heavy.
"""

import ast
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import nbformat
import numpy as np
import pytest

from attn_grader import GradingError, selfcheck
from attn_grader.checking import core, recheck
from attn_grader.checking.core import NOT_ATTEMPTED, Mistake, load_mistake, tasks_of
from attn_grader.reports import classreport
from attn_grader.reports.result import Result
from solutions import ASSIGNMENTS, all_answers, cells, other_answers

ROOT = Path(__file__).resolve().parents[1]


def _said(capsys, task, fn) -> str:
    """What the self-check prints for ``fn``; it writes nothing to stderr."""
    selfcheck.check(task.assignment, task.func_name, fn)
    out, err = capsys.readouterr()
    assert err == "", err
    return out


def _solution(task):
    return load_mistake(task, Mistake("solution", "", all_answers(task.assignment)))


def _off_by_one_entry(fn):
    """The right answer with one entry of its (first) output changed: a mistake no catalogue holds."""
    def bump(x):
        if isinstance(x, tuple | list):
            return type(x)([bump(x[0]), *x[1:]])
        a = np.array(x, copy=True)
        if a.dtype == bool:
            a.flat[0] = not a.flat[0]
        else:
            a.flat[0] = a.flat[0] + 7
        return a

    return lambda *args: bump(fn(*args))


#: Mistakes that only the fixed cases of their task's generator show (an edge case written out: r >= n, n = 1,
#: one layer; a repeated edge, which a random draw may lack), or that the fresh cases cannot tell from a sibling:
#: the self-check, which never uses a fixed case (issue 41), may not name them; the hidden tests do.
#: stacked_reach's cases are all fixed (no fresh input).
EDGE_ONLY = {("adjacency_from_edges", "edges_counted"), ("adjacency_from_edges", "edges_counted_then_max"),
             ("stacked_reach", "one_layer_only"),
             ("stacked_reach", "window_width_times_layers"), ("stacked_reach", "radius_plus_layers"),
             ("stacked_reach", "reach_doubled"), ("head_roles", "maps_transposed"),
             ("sinusoidal_table", "block_layout_of_tensor2tensor"), ("score_memory", "band_not_capped"),
             ("path_lengths", "float_logarithm"), ("path_lengths", "zero_layers_for_n1"),
             # ps12: a copy of every block is stopped on the long streams only, which the self-check leaves out
             ("online_softmax", "blocks_copied"), ("blocked_attention", "blocks_copied")}


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_every_catalogued_mistake_is_named_and_the_solution_gets_one_short_line(assignment, capsys, monkeypatch):
    import itertools

    counter, real = itertools.count(1), np.random.SeedSequence  # the self-check's draws, made repeatable here
    monkeypatch.setattr(np.random, "SeedSequence", lambda *a: real(41_000 + next(counter)))
    for task in tasks_of(assignment):
        out = _said(capsys, task, _solution(task))
        said = r"(inputs?|short streams; one pass and its memory are checked when graded)"
        assert re.fullmatch(rf"self-check: ({task.func_name} is right on \d+ fresh random {said}\.|no fresh inputs "
                            rf"for {task.func_name}; the asserts below check it\.)\n", out), out
        others = other_answers(assignment, task.func_name)
        for m in task.mistakes:
            out = _said(capsys, task, load_mistake(task, Mistake(m.name, m.message, others + "\n" + m.source)))
            if (task.func_name, m.name) in EDGE_ONLY:
                continue
            assert out.startswith("self-check: " + core.mistake_sentence(task.func_name, m)), (m.name, out)
            assert out.count("common mistake [") == 1, out


def test_the_self_check_says_what_the_graded_feedback_says():
    task = core.get_task("ps05_matrix_form", "attention_matrix")
    m = next(m for m in task.mistakes if m.name == "softmax_wrong_axis")
    with pytest.raises(GradingError) as graded:
        core.check(task.assignment, task.func_name, load_mistake(task, m))
    finding, text = selfcheck.report(task, load_mistake(task, m))
    assert finding.mistake == m and text == f"self-check: {graded.value}"


@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_mistake_outside_the_catalogue_gets_what_differs(assignment, capsys):
    for task in tasks_of(assignment):
        if not selfcheck.fresh_cases(task):
            continue  # all its cases are the hidden ones: the self-check says so (above)
        out = _said(capsys, task, _off_by_one_entry(_solution(task)))
        assert "common mistake [" not in out, out
        assert re.search(r"\d+ of \d+ values differ; first at index \(|: too (large|small)", out), out
        assert "no common mistake of the catalogue matches this" in out


def test_a_wrong_shape_or_dtype_is_said_plainly(capsys):
    task = core.get_task("ps05_matrix_form", "attention_matrix")
    assert "expected shape (5, 5), got (5, 4)" in _said(capsys, task, lambda Q, K: np.zeros((Q.shape[1], 4)))
    assert "returns a ndarray; return a NumPy array of shape (5, 5)" in _said(  # issue 41: never an AttributeError
        capsys, task, lambda Q, K: np.full((Q.shape[1],) * 2, "a"))
    heads = [np.zeros((5, 1))] * 5  # a list of arrays: compared as the array it makes
    assert "expected shape (5, 5), got (5, 5, 1)" in _said(capsys, task, lambda Q, K: heads)


def test_not_implemented_is_not_attempted_yet(capsys):
    task = core.get_task("ps04_step_by_step", "output_for_query")

    def stub(a, i, W_q, W_k, W_v):
        raise NotImplementedError()

    out = _said(capsys, task, stub)
    assert out == f"self-check: output_for_query: {NOT_ATTEMPTED} (it raises NotImplementedError)\n"
    with pytest.raises(GradingError, match=f"output_for_query: {NOT_ATTEMPTED}"):  # the graded feedback says the same
        core.check(task.assignment, task.func_name, stub)


def test_it_never_raises_and_writes_nothing_to_stderr(capsys):
    import warnings

    task = core.get_task("ps04_step_by_step", "output_for_query")

    def noisy(a, i, W_q, W_k, W_v):
        print("to stderr", file=sys.stderr)
        warnings.warn("a warning", stacklevel=1)
        return np.exp(np.asarray(W_v @ a[:, i]) * 1e6)  # overflows: RuntimeWarning from NumPy

    out = _said(capsys, task, noisy)
    assert "to stderr" in out and "self-check: output_for_query" in out
    assert "raised ZeroDivisionError" in _said(capsys, task, lambda a, i, W_q, W_k, W_v: 1 / 0)
    assert "expected a function, got int" in _said(capsys, task, 3)
    selfcheck.check("ps04_step_by_step", "no_such_task", print)
    out, err = capsys.readouterr()
    assert out.startswith("self-check: could not check no_such_task (KeyError") and not err


def _fixed_cases(task):
    """The cases the generator makes whatever the seed: the hidden tests' first ones."""
    other = {selfcheck._fingerprint(args) for args in task.cases(np.random.default_rng(12345))}
    return [args for args in task.hidden_cases() if selfcheck._fingerprint(args) in other]


def _scalars(x):
    if isinstance(x, tuple | list):
        return [v for e in x for v in _scalars(e)]
    a = np.asarray(x)
    return [a.item()] if a.ndim == 0 and a.dtype.kind in "iuf" else []


@pytest.mark.slow
@pytest.mark.parametrize("assignment", ASSIGNMENTS)
def test_a_wrong_answers_self_check_shows_no_hidden_input_and_no_fixed_cases_value(assignment):
    """Issue 41: for every task, what the self-check prints for a wrong answer (each catalogued mistake, and one
    outside the catalogue) holds no hidden case's inputs (a case of whole numbers, written as the feedback writes
    it) and no reference value of a fixed case (hbm_bytes' 2805760, score_memory's 2413800)."""
    for task in tasks_of(assignment):
        hidden = [f"({core._shape_of(args)})" for args in task.hidden_cases() if _scalars(args) and
                  len(_scalars(args)) == len(args)]
        values = {repr(v) for args in _fixed_cases(task)
                  for v in _scalars(core.to_numpy(task.reference(*args))) if len(repr(v)) >= 4}
        values |= {repr(int(float(v))) for v in values if float(v) == int(float(v))}
        wrong = [load_mistake(task, m) for m in task.mistakes] + [_off_by_one_entry(_solution(task))]
        for fn in wrong:
            _, text = selfcheck.report(task, fn)
            assert not [h for h in hidden if h in text], (task.key, text)
            assert not [v for v in values if v in text], (task.key, text)


def test_a_count_is_told_how_it_differs_not_its_value():
    task = core.get_task("ps12_efficient", "hbm_bytes")
    _, text = selfcheck.report(task, lambda n, d, sram_bytes, elem_bytes: (2 * (4 * n * d + 4 * n * n) * elem_bytes, 1))
    assert "too large, 2 times the expected value" in text
    _, text = selfcheck.report(task, lambda n, d, sram_bytes, elem_bytes: ((2 * n * d + 2 * n * n + 1) * elem_bytes, 1))
    assert ": too small" in text and "expected" not in text.replace("the expected value", "")


def test_its_inputs_are_fresh_never_the_hidden_ones():
    task = core.get_task("ps05_matrix_form", "project")
    seen = []
    selfcheck.report(task, lambda *args: seen.append(args[0]) or (None, None, None))
    hidden = [np.asarray(c[0]) for c in task.hidden_cases()]
    assert len(seen) >= selfcheck.FRESH_AT_LEAST
    assert not any(s.shape == h.shape and np.array_equal(s, h) for s in seen for h in hidden)
    again = selfcheck.fresh_cases(task)
    assert not np.array_equal(again[0][0], seen[0])  # a new draw on every run


def test_it_imports_with_numpy_and_the_reference_alone():
    """The self-check runs where nbgrader, PyTorch, matplotlib, Jupyter and the book's support cannot be
    imported (a student's plain NumPy environment), and imports none of them."""
    heavy = ("torch", "matplotlib", "nbgrader", "nbformat", "nbclient", "nbconvert", "IPython", "ipykernel",
             "jupyter_client", "dask", "distributed", "scipy", "sklearn", "torch_geometric", "attn_book", "bench")
    code = textwrap.dedent(f"""
        import sys
        for name in {heavy!r}:
            sys.modules[name] = None
        from attn_grader.selfcheck import check
        from attn_grader.checking.core import tasks_of
        ns = {{}}
        exec({(tasks_of("ps05_matrix_form")[0].setup + chr(10) + all_answers("ps05_matrix_form"))!r}, ns)
        for task in tasks_of("ps05_matrix_form"):
            check(task.assignment, task.func_name, ns[task.func_name])
        print(sorted(n for n in {heavy!r} if sys.modules.get(n) is not None))
    """)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 5 and all(" is right on " in ln for ln in lines[:4]) and lines[4] == "[]", proc.stdout


# ------------------------------------------------------------------- the notebooks' test cells

def _test_cells(folder: str, assignment: str) -> dict[str, str]:
    nb = nbformat.read(ROOT / folder / assignment / f"{assignment}.ipynb", as_version=4)
    return {c.metadata["nbgrader"]["grade_id"]: c.source for c in nb.cells
            if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")}


@pytest.mark.parametrize("folder", ["solutions", "exercises"])
def test_every_test_cell_runs_the_self_check_of_its_task_first(folder):
    n = 0
    for assignment in ASSIGNMENTS:
        tests = _test_cells(folder, assignment)
        assert set(tests) == {f"{t.func_name}_test" for t in tasks_of(assignment)}
        for task in tasks_of(assignment):
            lines = tests[f"{task.func_name}_test"].splitlines()
            assert ast.literal_eval(lines[0]) and lines[1:4] == selfcheck.cell_lines(assignment, task.func_name)
            n += 1
    assert n == sum(len(tasks_of(a)) for a in ASSIGNMENTS) >= 12 * 3  # every task's cell, 3 to 6 per set
    assert selfcheck.HOW_TO_GET_IT in selfcheck.cell_lines("ps01_vector_sets", "one_hot")[1]


def _visible_cells_without_the_package(assignment: str, answers: str) -> subprocess.CompletedProcess:
    """The released setup cell, ``answers`` and every released test cell, in a Python where attn_grader cannot
    be imported; each test cell's outcome printed after it."""
    setup = cells(assignment)["setup"]
    tests = list(_test_cells("exercises", assignment).values())
    code = textwrap.dedent(f"""
        import sys
        sys.modules["attn_grader"] = None  # as on a machine without the package
        ns = {{}}
        exec({setup!r} + "\\n" + {answers!r}, ns)
        for source in {tests!r}:
            try:
                exec(source, ns)
                print("PASSED")
            except AssertionError:
                print("ASSERT FAILED")
    """)
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_without_the_package_the_asserts_still_run_and_say_how_to_get_it():
    a = "ps04_step_by_step"
    hint = f"No self-check here; to get it: {selfcheck.HOW_TO_GET_IT}"
    proc = _visible_cells_without_the_package(a, all_answers(a))
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert proc.stdout.splitlines() == [hint, "PASSED"] * len(tasks_of(a))
    task = core.get_task(a, "output_for_query")
    wrong = other_answers(a, "output_for_query") + "\n" + task.mistakes[0].source
    proc = _visible_cells_without_the_package(a, wrong)
    assert proc.returncode == 0 and not proc.stderr, proc.stderr
    assert proc.stdout.splitlines().count("ASSERT FAILED") == 1  # the visible asserts ran, and caught it
    assert proc.stdout.splitlines().count(hint) == len(tasks_of(a))


# ------------------------------------------------------------------- "not attempted yet" in the grader

def test_the_recheck_and_the_class_report_say_not_attempted_yet():
    task = core.get_task("ps04_step_by_step", "output_for_query")
    cases = {"output_for_query": task.hidden_cases()[:2]}
    index = {"outputs": {"output_for_query": {"results": [{"error": "NotImplementedError: "}] * 2}}}
    verdict = recheck.compare([task], cases, index)["output_for_query"]
    assert not verdict.passed and verdict.mistake == NOT_ATTEMPTED
    assert verdict.reason == f"{NOT_ATTEMPTED} (it raises NotImplementedError)"
    index = {"outputs": {"output_for_query": {"results": [{"error": "ValueError: no"}] * 2}}}
    assert recheck.compare([task], cases, index)["output_for_query"].mistake == "error"
    r = Result("s", "ps04_step_by_step", tasks=["output_for_query_test"], max={"output_for_query_test": 3.0},
               scores={"output_for_query_test": 0.0}, max_total=3.0,
               mistakes={"output_for_query_test": {"name": verdict.mistake, "message": verdict.message}})
    ranked = classreport.findings([r], "output_for_query_test")
    assert [(f["name"], f["message"]) for f in ranked] == [(NOT_ATTEMPTED, verdict.message)]
    assert classreport.shown_name(NOT_ATTEMPTED) == NOT_ATTEMPTED  # not "... (not catalogued)"
    assert classreport.shown_name("unrecognised") == "unrecognised (not catalogued)"


# ------------------------------------------------------------------- in a fresh kernel (nbclient)

def _run_notebook(nb, tmp_path, first: str | None = None):
    from nbclient import NotebookClient

    if first is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(first))
    NotebookClient(nb, timeout=120, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    return nb


def _outputs(cell, kind: str) -> str:
    return "".join(o.get("text", "") for o in cell.get("outputs", []) if o.get("name") == kind)


def _release_with(assignment: str, answers: dict[str, str]):
    from attn_grader.authoring.demo import answers_of, with_answers

    src = nbformat.read(ROOT / "solutions" / assignment / f"{assignment}.ipynb", as_version=4)
    release = nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)
    return with_answers(release, {**answers_of(src), **answers})


@pytest.mark.slow
@pytest.mark.parametrize("assignment, func_name, k", [("ps03_relevance", "softmax", 0),
                                                      ("ps05_matrix_form", "attention_matrix", 4),
                                                      ("ps11_graphs", "masked_softmax", 1)])
def test_a_student_notebook_run_top_to_bottom_names_its_mistake_under_that_task(tmp_path, assignment, func_name, k):
    mistake = core.get_task(assignment, func_name).mistakes[k]
    nb = _run_notebook(_release_with(assignment, {f"{func_name}_answer": mistake.source}), tmp_path)
    solution = cells(assignment)
    for c in nb.cells:
        gid = c.metadata.get("nbgrader", {}).get("grade_id", "")
        if not (gid.endswith("_test") and c.metadata["nbgrader"].get("grade")):
            continue
        if gid != f"{func_name}_test" and f"{func_name}(" in solution[gid.replace("_test", "_answer")]:
            continue  # a later task built on the wrong one (ps03's masked_weights calls softmax) inherits it
        out = _outputs(c, "stdout")
        if gid == f"{func_name}_test":  # (the asserts after the self-check may warn: the mistake's own exp)
            assert out.startswith(f"self-check: {func_name}: this looks like the common mistake [{mistake.name}]")
        else:
            assert out.startswith("self-check: ") and " is right on " in out, (gid, out)
            assert not _outputs(c, "stderr"), gid


@pytest.mark.slow
def test_a_notebook_in_a_kernel_without_the_package_runs_its_asserts_and_says_how_to_get_it(tmp_path):
    a = "ps05_matrix_form"
    mistake = core.get_task(a, "project").mistakes[1]
    nb = _run_notebook(_release_with(a, {"project_answer": mistake.source}), tmp_path,
                       first="import sys\nsys.modules['attn_grader'] = None  # a kernel without the package")
    hint = f"No self-check here; to get it: {selfcheck.HOW_TO_GET_IT}\n"
    tests = [c for c in nb.cells if c.cell_type == "code" and c.metadata.get("nbgrader", {}).get("grade")]
    assert [_outputs(c, "stdout") for c in tests] == [hint] * 4
    errors = [o["ename"] for c in tests for o in c.outputs if o.get("output_type") == "error"]
    assert errors == ["AssertionError"]  # the wrong project fails its visible asserts; the others pass


def test_how_to_get_it_names_the_books_repository():
    """The one line a notebook prints without the package installs from the repository of _config.yml (as
    the chapters' launch cells do)."""
    import yaml

    repo = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    assert selfcheck.HOW_TO_GET_IT == (f'pip install "self-attention-step-by-step[student] @ '
                                       f'git+{repo["url"].rstrip("/")}@{repo.get("branch", "main")}"')


def test_inputs_are_described_plainly_and_in_full():
    """Issue 41: a stream was "(<40960 in blocks of )" (its repr cut at 20 characters), a NumPy 2 scalar
    "np.float64(-0.76...)"."""
    from attn_grader.checking.harness import Blocks

    text = core._shape_of((np.float64(-0.76), np.int64(3), np.zeros((2, 3)), Blocks((np.zeros(40960),), 256)))
    assert text == "-0.76, 3, (2, 3), a stream of (40960,) in blocks of 256 rows"
    pair = Blocks((np.zeros((70, 4)), np.zeros((70, 2))), 8)
    assert core._shape_of((np.ones((3, 4)), pair)) == "(3, 4), a stream of (70, 4) and (70, 2) in blocks of 8 rows"


def test_a_stream_task_says_its_right_line_holds_for_short_streams_only(capsys):
    """Issue 41 (e): the self-check leaves out the long streams, so a two-pass answer over copies of the blocks is
    right there; its line says what it checked (one pass and memory are checked when graded)."""
    copies = ("def online_softmax(blocks):\n    kept = [b.copy() for b in blocks]\n"
              "    mu = max(np.max(b) for b in kept)\n    return mu, sum(np.sum(np.exp(b - mu)) for b in kept)\n")
    task = next(t for t in tasks_of("ps12_efficient") if t.func_name == "online_softmax")
    ns = {"np": np}
    exec(copies, ns)
    out = _said(capsys, task, ns["online_softmax"])
    assert "right on" in out and "short streams; one pass and its memory are checked when graded" in out, out
    softmax = next(t for t in tasks_of("ps03_relevance") if t.func_name == "softmax")
    assert "short streams" not in _said(capsys, softmax, _solution(softmax))

