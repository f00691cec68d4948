"""Every assignment's catalogue, in-process (no nbgrader, seconds): solutions pass, every mistake is named.

The solutions are the answer cells of the source notebooks (tests/solutions.py), the single copy.
Each mistake's answer cell, loaded after the task's setup, must fail :func:`check` with its own name
in the message; the source notebook's setup cell must be the catalogue's. The same mistakes are graded
with the real nbgrader in test_grading.py.
"""

import copy
import importlib
import re
import warnings
from pathlib import Path

import nbformat
import numpy as np
import pytest
from others_answers import OTHERS

from attn_grader import GradingError, check
from attn_grader.checking import harness
from attn_grader.checking.core import Mistake, load_mistake
from attn_grader.checking.harness import Blocks
from solutions import ASSIGNMENTS, all_answers, cells, other_answers, solution, solutions

ROOT = Path(__file__).resolve().parents[1]
MODULES = [importlib.import_module(f"attn_grader.catalogue.{a}") for a in ASSIGNMENTS]
TASKS = [(m, t) for m in MODULES for t in m.TASKS]


def _ids(item):
    return f"{item[1].assignment}.{item[1].func_name}"


def test_every_chapter_has_an_assignment():
    assert len(ASSIGNMENTS) == 12 and ASSIGNMENTS[0] == "ps01_vector_sets"
    assert all(3 <= len(m.TASKS) <= 6 for m in MODULES)


@pytest.mark.parametrize("item", TASKS, ids=_ids)
def test_solution_passes(item):
    """The answer cell of the source notebook exists and passes its task (after the other answers)."""
    module, task = item
    check(task.assignment, task.func_name, load_mistake(task, Mistake("solution", "", all_answers(task.assignment))))


@pytest.mark.parametrize("item", TASKS, ids=_ids)
def test_every_mistake_is_caught_and_named(item):
    module, task = item
    assert len(task.mistakes) >= 3
    assert len({m.name for m in task.mistakes}) == len(task.mistakes)
    others = other_answers(task.assignment, task.func_name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # an unstabilised softmax overflows on purpose
        for mistake in task.mistakes:
            wrong = Mistake(mistake.name, mistake.message, others + "\n" + mistake.source)
            with pytest.raises(GradingError, match=rf"\[{mistake.name}\]"):
                check(task.assignment, task.func_name, load_mistake(task, wrong))


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_source_notebook_matches_catalogue(module):
    source = cells(module.ASSIGNMENT)
    assert source["setup"].strip() == module.SETUP.strip()
    for task in module.TASKS:
        assert task.setup.strip() == module.SETUP.strip()
        assert "### BEGIN SOLUTION" in solution(module.ASSIGNMENT, task.func_name)
        test_src = source[f"{task.func_name}_test"]
        assert f'check("{module.ASSIGNMENT}", "{task.func_name}", {task.func_name})' in test_src
    released = ROOT / "exercises" / module.ASSIGNMENT / f"{module.ASSIGNMENT}.ipynb"
    text = released.read_text()
    assert "BEGIN SOLUTION" not in text and "attn_ref" not in text


def _float32(x):
    if isinstance(x, Blocks):
        return x.astype(np.float32)
    if isinstance(x, np.ndarray) and x.dtype.kind == "f":
        return x.astype(np.float32)
    if isinstance(x, tuple | list) and any(isinstance(v, np.ndarray) for v in x):
        return type(x)(_float32(v) for v in x)
    return x


def _cast_output(x):
    if isinstance(x, tuple | list):
        return type(x)(_cast_output(v) for v in x)
    arr = np.asarray(x)
    return arr.astype(np.float32) if arr.dtype.kind == "f" else arr


@pytest.mark.parametrize("item", TASKS, ids=_ids)
def test_float32_solution_passes_and_float32_mistakes_are_still_named(item, monkeypatch):
    """The tolerance policy (attn_grader.checking.core.tolerances): a right answer computed in float32 passes every
    task, and no catalogued mistake hides under the float32 tolerances."""
    module, task = item
    right = load_mistake(task, Mistake("solution", "", all_answers(task.assignment)))
    check(task.assignment, task.func_name, lambda *args: right(*(_float32(a) for a in args)))
    check(task.assignment, task.func_name, lambda *args: _cast_output(right(*args)))
    from attn_grader.checking.core import describe_difference, to_numpy

    for seed in range(5):  # the re-check draws other inputs (from the course secret): float32 passes there too
        for args in task.cases(np.random.default_rng(seed)):
            got = harness.call(right, tuple(_float32(a) for a in copy.deepcopy(args)))  # ps12: a one-pass stream
            assert describe_difference(got, to_numpy(task.reference(*args)), task.rtol, task.atol) is None, seed
    others = other_answers(task.assignment, task.func_name)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for mistake in task.mistakes:
            fn = load_mistake(task, Mistake(mistake.name, mistake.message, others + "\n" + mistake.source))
            with pytest.raises(GradingError, match=rf"\[{mistake.name}\]"):
                check(task.assignment, task.func_name, lambda *args, fn=fn: _cast_output(fn(*args)))


_HIDDEN = re.compile(r"### BEGIN HIDDEN TESTS.*?### END HIDDEN TESTS", re.DOTALL)
#: Mistakes the visible test does not catch yet (the hidden tests still fail and name them).
VISIBLE_MISSES = {
    "ps09_cnn.relative_scores:pixels_column_major",
    "ps12_efficient.online_step:max_of_block_only",
    # the setup cell's stream has no memory check (the grader's and the self-check's have): copies pass it
    "ps12_efficient.online_softmax:blocks_copied", "ps12_efficient.blocked_attention:blocks_copied",
    # the thinking task's visible test checks the format only: the values are graded by the hidden test
    "ps12_efficient.hbm_bytes:elements_not_bytes", "ps12_efficient.hbm_bytes:matrix_moved_once",
    "ps12_efficient.hbm_bytes:sram_in_bytes", "ps12_efficient.hbm_bytes:blocks_rounded_down",
    "ps12_efficient.hbm_bytes:queries_read_once",
    # issue 33: softmax(scores * mask) differs only where a row's allowed scores are all far below 0
    "ps08_speech_images.truncated_attention:masked_by_multiplying",
    # issue 41: a first query spread uniformly differs only on a head near the border of two roles (hidden test)
    "ps06_multi_head.head_roles:first_row_uniform",
}


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_visible_tests_catch_the_catalogued_mistakes(module):
    """A student can find the usual mistakes before handing in: each catalogued mistake, in its answer
    cell after the other answers, fails the visible part of its test cell; the solution passes it."""
    source = cells(module.ASSIGNMENT)
    missed = []
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for task in module.TASKS:
            visible = _HIDDEN.sub("", source[f"{task.func_name}_test"])
            others = other_answers(module.ASSIGNMENT, task.func_name)
            for mistake in (None, *task.mistakes):
                ns: dict = {}
                exec(source["setup"] + "\n" + others, ns)  # noqa: S102
                exec(solution(module.ASSIGNMENT, task.func_name) if mistake is None else mistake.source, ns)  # noqa: S102
                try:
                    exec(visible, ns)  # noqa: S102
                    passed = True
                except Exception:  # noqa: BLE001
                    passed = False
                if mistake is None:
                    assert passed, f"the solution of {task.func_name} fails its visible test"
                elif passed:
                    missed.append(f"{task.assignment}.{task.func_name}:{mistake.name}")
    assert set(missed) == {m for m in VISIBLE_MISSES if m.startswith(module.ASSIGNMENT)}, missed


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_what_a_student_reads_is_consistent(module):
    """Issue 17: one rule for passing tests (they print nothing but the self-check's line: its fallback is
    their one print), one statement of what may be used, and no short global in a setup cell that shadows a
    student's names (ps11 had n = 4)."""
    import ast

    path = ROOT / "exercises" / module.ASSIGNMENT / f"{module.ASSIGNMENT}.ipynb"
    shown = {c.metadata["nbgrader"]["grade_id"]: c for c in nbformat.read(path, as_version=4).cells
             if c.metadata.get("nbgrader", {}).get("grade_id")}
    intro = " ".join(shown["intro"].source.split())
    assert "prints nothing" in intro and "prints `ok`" not in intro
    assert "What you may use" in intro and "NumPy only" not in intro
    for gid, cell in shown.items():
        if cell.metadata["nbgrader"].get("grade") and cell.cell_type == "code":  # not a written answer
            lines = cell.source.splitlines()
            calls = [n for n in ast.walk(ast.parse(cell.source)) if isinstance(n, ast.Call)
                     and not lines[n.lineno - 1].startswith("except Exception: self_check")]
            assert not any(getattr(n.func, "id", "") == "print" for n in calls), f"{gid} prints"
    assigned = {t.id for n in ast.walk(ast.parse(shown["setup"].source)) if isinstance(n, ast.Assign)
                for t in n.targets if isinstance(t, ast.Name)}
    assert not assigned & {"n", "d", "h", "k", "m", "w"}, assigned  # sizes a function might use by mistake


def _answers_as_graded(assignment: str, answers: dict[str, str]) -> dict:
    """func_name -> the function each answer cell defines, as it stood right after its own cell (the harness's
    rule), with ``answers`` (grade id -> source) in place of the solution's cells."""
    ns: dict = {}
    exec(cells(assignment)["setup"], ns)  # noqa: S102 - our own notebook
    functions = {}
    for func, src in solutions(assignment).items():
        exec(answers.get(f"{func}_answer", src), ns)  # noqa: S102 - tests/others_answers.py
        functions[func] = ns[func]
    return functions


#: The answers that import PyTorch take seconds to import it: the class run (test_grading.py) grades those.
NUMPY_OTHERS = [o for o in OTHERS if not any("torch" in src for src in o[2].values())]


@pytest.mark.parametrize("other", NUMPY_OTHERS, ids=lambda o: o[0])
def test_answers_written_elsewhere_get_their_outcome_in_process(other):
    """tests/others_answers.py without nbgrader (test_grading.py grades them in the class run): each answer
    written elsewhere passes or fails its hidden test as expected, naming the expected mistake; the re-check
    gives the same verdict on inputs drawn from three other seeds (the course secret's draws)."""
    from attn_grader.checking.core import _outcome, get_task
    from attn_grader.checking.recheck import compare

    student, assignment, answers, expect = other
    functions = _answers_as_graded(assignment, answers)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for func, (full, name, not_named) in expect.items():
            task, fn = get_task(assignment, func), functions[func]
            if full:
                check(assignment, func, fn)
            else:
                with pytest.raises(GradingError, match=rf"\[{name}\]" if name else "") as err:
                    check(assignment, func, fn)
                assert not any(f"[{other_name}]" in str(err.value) for other_name in not_named), err.value
            for seed in range(3):
                cases = task.cases(np.random.default_rng(seed))
                results = []
                for args in cases:
                    out = _outcome(fn, args)
                    results.append({"error": f"{out.kind}: x"} if hasattr(out, "kind") else {"value": out})
                verdict = compare([task], {func: cases}, {"outputs": {func: {"results": results}}})[func]
                assert verdict.passed is full, (seed, verdict)
                assert full or not name or verdict.mistake == name, (seed, verdict)


@pytest.mark.parametrize("other", [o for o in NUMPY_OTHERS if any(e[0] for e in o[3].values())], ids=lambda o: o[0])
def test_right_answers_written_elsewhere_pass_the_visible_tests(other):
    """Issue 41: the self-check, the visible asserts and the grade agree. An answer written elsewhere that the
    grader gives full marks (0/1 integers where booleans are asked, float32, ...) passes its visible test cell
    too, run where the notebook runs it: after its own answer cell and the ones above it."""
    student, assignment, answers, expect = other
    source = cells(assignment)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        for func in (f for f, (full, _, _) in expect.items() if full):
            ns: dict = {}
            exec(source["setup"], ns)  # noqa: S102 - our own notebook
            for f, src in solutions(assignment).items():
                exec(answers.get(f"{f}_answer", src), ns)  # noqa: S102 - tests/others_answers.py
                if f == func:
                    break
            exec(_HIDDEN.sub("", source[f"{func}_test"]), ns)  # noqa: S102

# TeX source a reader would see as such: a braced sub- or superscript, a command, a dollar, or a caret on a
# letter, digit or bar (W^k, K^T, |x|^2); a power in parentheses, 10000^(-2i/d), reads as written.
_TEX_LIKE = re.compile(r"_\{|\^\{|\\[A-Za-z]+|\$|[A-Za-z0-9|')]\^[A-Za-z0-9]")


def tex_like(text: str) -> list[str]:
    return _TEX_LIKE.findall(text)


@pytest.mark.parametrize("module", MODULES, ids=lambda m: m.ASSIGNMENT)
def test_messages_read_as_text(module):
    """Issue 30: a catalogue message is shown as text (class report, feedback notes, terminal), so it
    writes alpha_{i,j} as αᵢⱼ and W^k as W_k, never as TeX source."""
    bad = {f"{t.func_name}.{m.name}": tex_like(m.message) for t in module.TASKS for m in t.mistakes
           if tex_like(m.message)}
    assert not bad, f"messages with TeX-like source: {bad}"


def test_the_tex_check_fails_on_tex():
    for tex in ("alpha_{i,j}", "W^k", "alpha'_{i,j}", "Q K^T", "|x_i|^2", r"\sqrt{d}", "$q^1$", "q^{i,h}"):
        assert tex_like(tex), tex
    for text in ("αᵢⱼ", "W_k", "α′ᵢⱼ", "Q Kᵀ", "|xᵢ|²", "sqrt(d_k)", "10000^(-2i/d)", "x(t−w)", "hₜ₋₁"):
        assert not tex_like(text), text
