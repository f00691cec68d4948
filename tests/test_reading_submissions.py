"""Reading a submission (issue 40): bounded memory whatever a field holds, one row's cost for anything,
hard links grouped by file, and the last gates of the feedback (outputs, hidden tests, message caps).

Memory is measured as in tests/test_what_students_send.py: the grader's reader in a fresh Python, its own
peak resident memory less that of the same Python that only imported it.
"""

import json
import os
import shutil
import textwrap

import nbformat
import pytest
from test_what_students_send import HONEST, MB, REPO, peak_of

from attn_grader.files.safeio import Refused
from attn_grader.run.discover import find_submissions, read_notebook

A = "ps04_step_by_step"
SIZE = 40 * MB


def _bulk_cases() -> dict[str, str]:
    """{case: JSON text of about 40 MB}: bulk in every kind of field a notebook has."""
    honest = json.load(open(HONEST))
    text = json.dumps(honest)
    cell_meta, top_meta = '"metadata": {', '"metadata": {'
    out = {
        "[] in a cell's metadata": text.replace(cell_meta, '"metadata": {"bulk": [' + "[], " * (SIZE // 4) + "[]], ",
                                                1),
        "a string in a cell's metadata": text.replace(cell_meta, '"metadata": {"s": "' + "x" * SIZE + '", ', 1),
        "a string in the notebook's metadata": text[:text.rindex(top_meta)] + '"metadata": {"title": "' + "y" * SIZE
                                               + '", ' + text[text.rindex(top_meta) + len(top_meta):],
        "nested 20 million deep": text.replace(cell_meta, '"metadata": {"d": ' + "[" * (SIZE // 2) + "]" * (SIZE // 2)
                                               + ", ", 1),
        "nested inside outputs": text.replace('"outputs": []', '"outputs": [' + "[" * (SIZE // 2) + "]" * (SIZE // 2)
                                              + "]", 1),
        "outputs of 40 MB": text.replace('"outputs": []', '"outputs": [{"output_type": "stream", "name": "stdout", '
                                         '"text": "' + "z" * SIZE + '"}]', 1),
    }
    v3 = nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(cells=[nbformat.v3.new_code_cell(
        input="print(1)", outputs=[nbformat.v3.new_output("stream", output_text="w" * (SIZE // 8))])] * 8)])
    out["nbformat 3 with outputs"] = nbformat.v3.writes_json(v3)
    sources = json.loads(text)  # honest sources totalling 40 MB (each cell under the 4 MB limit)
    sources["cells"] += [nbformat.v4.new_markdown_cell("a" * (2 * MB)) for _ in range(SIZE // (2 * MB))]
    out["40 MB of sources"] = json.dumps(sources)
    return out


@pytest.mark.slow
@pytest.mark.parametrize("case", list(_bulk_cases()))
def test_reading_any_submission_takes_at_most_four_times_its_size(tmp_path, case):
    path = tmp_path / (A + ".ipynb")
    path.write_text(_bulk_cases()[case])
    size = os.path.getsize(path)
    out, extra = peak_of(textwrap.dedent(f"""
        import json
        from attn_grader.files.safeio import Refused
        from attn_grader.run.discover import read_notebook
        try:
            nb = json.loads(read_notebook({str(path)!r}, 1 << 30))
            outputs = sum(len(c.get("outputs", [])) for c in nb["cells"])
            print(json.dumps({{"cells": len(nb["cells"]), "outputs": outputs,
                              "meta": sorted(nb["metadata"]), "cell_meta": sorted(nb["cells"][0]["metadata"])}}))
        except Refused as why:
            print(json.dumps({{"refused": str(why)}}))
    """))
    got = json.loads(out)
    assert extra <= 4 * size, f"{case}: reading {size / MB:.0f} MB took {extra / MB:.0f} MB"
    if "deep" in case or "nested" in case:
        assert "nested deeper than 64" in got.get("refused", ""), got
    elif "nbformat 3" in case:
        assert "nbformat 3" in got.get("refused", "") and "save it again" in got["refused"], got
    else:  # read: the bulk is gone, the sources and nbgrader's metadata are kept
        assert got["cells"] >= len(json.load(open(HONEST))["cells"]) and got["outputs"] == 0, got
        assert got["meta"] == ["kernelspec", "language_info"] and set(got["cell_meta"]) <= {"nbgrader"}, got


def test_what_is_kept_and_what_is_refused(tmp_path):
    path = tmp_path / "nb.ipynb"
    honest = json.load(open(HONEST))
    path.write_text(json.dumps(honest))
    nb = json.loads(read_notebook(str(path), 1 << 30))
    assert [c["source"] for c in nb["cells"]] == [c["source"] for c in honest["cells"]]
    nbg = [c["metadata"].get("nbgrader") for c in nb["cells"]]
    assert nbg == [c["metadata"].get("nbgrader") for c in honest["cells"]]
    cases = {'{"cells": [{"source": "' + "x" * (5 * MB) + '"}]}': "too large: a cell is larger than the limit of 4 MB",
             '{"cells": [{"metadata": {"nbgrader": "' + "x" * (100 << 10) + '"}}]}': "metadata.nbgrader is larger",
             '[1, 2]': "not a notebook", '{"cells": [ {"cell_': "unreadable",
             '{"metadata": {"x": ' + "[" * 70: "nested",
             '{"nbformat": 3, "worksheets": []}': "nbformat 3"}
    for text, words in cases.items():
        path.write_text(text)
        with pytest.raises(Refused, match=words.replace(".", r"\.")):
            read_notebook(str(path), 1 << 30)


def _course(tmp_path) -> str:
    root = str(tmp_path / "course")
    os.makedirs(os.path.join(root, "solutions", A))
    shutil.copy(os.path.join(REPO, "solutions", A, A + ".ipynb"),
                os.path.join(root, "solutions", A, A + ".ipynb"))
    return root


def _folder(root: str, student: str) -> str:
    d = os.path.join(root, "submitted", student, A)
    os.makedirs(d)
    return d


def test_a_hard_link_is_read_grouped_by_file_and_never_refused(tmp_path):
    root = _course(tmp_path)
    victim = os.path.join(_folder(root, "victim"), A + ".ipynb")
    shutil.copy(HONEST, victim)
    os.link(victim, os.path.join(_folder(root, "attacker"), A + ".ipynb"))
    own = os.path.join(_folder(root, "tidy"), A + ".ipynb")
    shutil.copy(HONEST, own)
    os.link(own, os.path.join(os.path.dirname(own), "backup.ipynb"))
    os.link(os.path.join(root, "solutions", A, A + ".ipynb"), os.path.join(_folder(root, "thief"), A + ".ipynb"))
    outside = os.path.join(_folder(root, "elsewhere"), A + ".ipynb")
    shutil.copy(HONEST, outside)
    os.link(outside, str(tmp_path / "a_name_outside.ipynb"))
    subs = {s.student: s for s in find_submissions(root, [A], {A: A + ".ipynb"})}
    assert subs["victim"].notebook and subs["attacker"].notebook and subs["victim"].problem is None
    assert (subs["victim"].shares, subs["attacker"].shares) == (["attacker"], ["victim"])
    assert subs["tidy"].notebook and subs["tidy"].shares == [] and subs["tidy"].outside == 0
    assert subs["thief"].notebook is None and "instructor's solution" in subs["thief"].problem
    assert subs["elsewhere"].notebook and subs["elsewhere"].outside == 1
    from attn_grader.isolation.sanitize import sanitize

    release = nbformat.read(os.path.join(REPO, "exercises", A, A + ".ipynb"), as_version=4)
    flags = {n: sanitize(subs[n], {A + ".ipynb": release}).flags for n in ("victim", "tidy", "elsewhere")}
    assert any("shares a file with 'attacker': check by hand" in f for f in flags["victim"])
    assert not any("hard link" in f for f in flags["tidy"]) and any("outside the submissions" in f
                                                                     for f in flags["elsewhere"])


@pytest.mark.parametrize("error", [RecursionError, MemoryError, ValueError, KeyError, OSError])
def test_anything_raised_while_reading_costs_that_row_only(tmp_path, monkeypatch, error):
    from attn_grader.run import discover

    root = _course(tmp_path)
    for student in ("ann", "bad", "cy"):
        shutil.copy(HONEST, os.path.join(_folder(root, student), A + ".ipynb"))
    real = discover.kept_notebook

    def reader(f):
        if "/bad/" in os.readlink(f"/proc/self/fd/{f.f.fileno()}"):
            raise error("from the file")
        return real(f)
    monkeypatch.setattr(discover, "kept_notebook", reader)
    subs = {s.student: s for s in find_submissions(root, [A], {A: A + ".ipynb"})}
    assert subs["ann"].notebook and subs["cy"].notebook
    assert subs["bad"].notebook is None and error.__name__ in subs["bad"].problem
