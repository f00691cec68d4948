"""The attacks of issue 40 (round 4), added to the catalogue by make_attacks.py.

Each is the honest ps04 submission with one change, written as a student would, for the class of each
finding: bulk and nesting in fields of the notebook (small ones here; the 17 MB ones are made by
tests/test_attacks.py, as files of that size cannot live in git), an nbformat-3 notebook, output that
escapes the caps through display-id updates, comm messages and ``clear_output``, hidden tests printed by
a hook in base64 and reversed, or kept by an answer and printed by a later cell, script in every output
type, and PyTorch's attention reached by a spelling the word "torch" is not in.
"""

import json

import nbformat

# A hook that prints each executed cell encoded (base64, each line reversed), and an answer that keeps the
# source of whoever calls it (the hidden tests) and prints it from a later cell.
ENCODED_HOOKS = """
import base64 as _b64, linecache as _lc, sys as _sys
_calls = []
def _leak(result):
    _src = get_ipython().user_ns['In'][-1]
    _calls.append(1)
    if len(_calls) == 1:  # this cell itself (no secret in it)
        return
    print('LEAK-B64', _b64.b64encode(_src.encode()).decode())
    print('LEAK-REV', '|'.join(line[::-1] for line in _src.splitlines()))
get_ipython().events.register('post_run_cell', _leak)
_seen = []
_real = attention_scores_for_query
def attention_scores_for_query(*args):
    _f = _sys._getframe(1)
    _seen.append(''.join(_lc.getlines(_f.f_code.co_filename)))
    return _real(*args)
"""
PRINT_KEPT = """
print('LEAK-KEPT', [s[::-1] for s in _seen][-3:])
"""
# 28 displays, each then updated with 128 kB (3.6 MB in all, over the 2 MB cap; nbclient applies an update and
# never calls the output() that counted bytes); comm messages with 128 kB of data; a flood of clear_output.
DISPLAY_UPDATES = """
from IPython.display import display, clear_output
_handles = [display({'text/plain': 'small'}, raw=True, display_id=True) for _ in range(28)]
for _h in _handles:
    _h.update({'text/plain': 'U' * (128 << 10)}, raw=True)
_k = get_ipython().kernel
for _ in range(5):
    _k.session.send(_k.iopub_socket, 'comm_msg', {'comm_id': 'c', 'data': {'x': 'C' * (128 << 10)}},
                    parent=_k.get_parent())
for _ in range(100):
    clear_output(wait=False)
"""
# Script in every output type a browser could run or load: HTML, JavaScript, SVG, Markdown, LaTeX, a
# widget view and a widget's state, an iframe, a javascript: link, an event handler, a <meta> refresh.
SCRIPTS = """
from IPython.display import display, HTML, Javascript, SVG, Markdown, Latex
display(HTML('<script>document.title = "PWNED-HTML"; alert("XSS-HTML")</script><img src=x onerror="document.title=1">'))
display(Javascript('document.title = "PWNED-JS"; alert("XSS-JS")'))
_svg = '<svg xmlns="http://www.w3.org/2000/svg" onload="document.title=2">'
display(SVG(_svg + '<script>alert("XSS-SVG")</script></svg>'))
display(Markdown('<iframe srcdoc="<script>parent.document.title=3</script>"></iframe> [x](javascript:alert(4))'))
display(Latex(r'$\\text{<img/src=x onerror=alert("XSS-TEX")>}$'))
display({'text/html': '<meta http-equiv="refresh" content="0;url=javascript:alert(5)">',
         'application/vnd.jupyter.widget-view+json': {'model_id': '"><script>alert(6)</script>'},
         'text/plain': 'x'}, raw=True)
_k = get_ipython().kernel  # a widget's state, which nbclient keeps in the notebook's metadata
_k.session.send(_k.iopub_socket, 'comm_open', {'comm_id': 'w1', 'target_name': 'jupyter.widget', 'data': {
    'state': {'_model_name': 'X', '_model_module': 'x',
              'v': '</script><script>document.title = "PWNED-W"</script>'}, 'buffer_paths': []}},
    parent=_k.get_parent())
"""
# PyTorch's attention reached without the word in the source: the name built at run time, the module
# fetched by importlib.
TORCH_SPELLED = """import importlib
_t = __import__("to" + "rch")
_F = importlib.import_module(".".join(["to" + "rch", "nn", "functional"]))
_sdpa = getattr(_F, "scaled_dot_" + "product_attention")


def output_for_query(a, i, W_q, W_k, W_v):
    x = _t.tensor(a.T)
    q, k, v = x @ _t.tensor(W_q).T, x @ _t.tensor(W_k).T, x @ _t.tensor(W_v).T
    return _sdpa(q[None], k[None], v[None], scale=1.0)[0, i].numpy()
"""
# The same with the grader's import guard taken out of sys.meta_path first (the re-check runs answers in
# one process with it).
TORCH_PAST_THE_GUARD = """import sys
sys.meta_path[:] = [f for f in sys.meta_path if "Guard" not in type(f).__name__]
""" + TORCH_SPELLED


def round4(honest, after) -> dict:
    """{name: (notebook or None, expected outcome)}, from make_attacks' ``honest`` and ``after``."""
    attacks = {}
    # Nesting far beyond any notebook, in the notebook's metadata: refused while it is read, that row only.
    raw = json.loads(nbformat.writes(honest()))
    text = json.dumps(raw).replace('"metadata": {', '"metadata": {"deep": ' + "[" * 5000 + "]" * 5000 + ", ", 1)
    attacks["e01_deep_metadata"] = (None, {"score": None, "status": "ungradable", "reason_has": "nested deeper",
                                           "text": text})
    # Saved as nbformat 3 (outputs under worksheets): refused, saying how to save it again.
    v3 = nbformat.v3.new_notebook(worksheets=[nbformat.v3.new_worksheet(cells=[
        nbformat.v3.new_code_cell(input=c.source) for c in honest().cells if c.cell_type == "code"])])
    attacks["e02_nbformat3"] = (None, {"score": None, "status": "ungradable", "reason_has": "nbformat 3",
                                       "text": nbformat.v3.writes_json(v3)})
    # Output past the caps by messages output() never sees.
    attacks["e03_display_updates_and_comms"] = (after("permuted_outputs_answer", DISPLAY_UPDATES),
                                                {"score": 10, "flagged": False, "feedback_under": 3_000_000})
    # Hidden tests printed encoded by a hook, and kept by an answer for a later cell to print.
    nb = after("attention_scores_for_query_answer", ENCODED_HOOKS)
    for c in nb.cells:
        if c.metadata.get("nbgrader", {}).get("grade_id") == "permuted_outputs_answer":
            c.source += "\n" + PRINT_KEPT
    attacks["e04_hidden_tests_encoded"] = (nb, {"score": 10, "flagged": False, "no_hidden": True,
                                                "feedback_lacks": ["LEAK-B64 ", "LEAK-REV ", "LEAK-KEPT "]})
    attacks["e05_script_in_every_output_type"] = (after("attention_scores_for_query_answer", SCRIPTS),
                                                  {"score": 10, "flagged": False, "no_script": True})
    # PyTorch loaded by a built name voids the re-check (issue 40, round 5: the guard is a second layer)
    attacks["e06_torch_attention_spelled_apart"] = (honest(output_for_query_answer=TORCH_SPELLED),
                                                    {"score": 0, "flagged": True})
    attacks["e07_torch_past_the_guard"] = (honest(output_for_query_answer=TORCH_PAST_THE_GUARD),
                                           {"score": 0, "flagged": True})
    return attacks


MB = 1 << 20
LARGE = ["c07_bulk_metadata", "c08_deep_and_large", "c09_answer_cell_too_large", "c10_victim_linked_to",
         "c11_links_a_classmate", "c12_backup_link"]


def large_files(root: str, submit, honest_path: str) -> dict:
    """The attacks that cannot live in git (17 MB files, hard links), made in a course at ``root`` with
    ``submit(student) -> folder``; {student: expected outcome} (``reason_has``: words of grades.csv's
    reason; ``shares``: the flag names that classmate).  Each file stays under tests/test_attacks.py's
    20 MB bound for what a run leaves on disk."""
    import os
    import shutil

    name = os.path.basename(honest_path)
    honest = json.load(open(honest_path))
    text = json.dumps(honest)  # 17 MB of [] in a cell's metadata: read past, graded
    bulky = text.replace('"metadata": {', '"metadata": {"bulk": [' + "[], " * (17 * MB // 4) + "[]], ", 1)
    deep = json.loads(json.dumps(honest))  # nested 5,000 deep in a notebook over 16 MB (the old stream)
    deep["cells"][0]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x" * (17 * MB)}]
    deep_text = json.dumps(deep).replace('"metadata": {', '"metadata": {"d": ' + "[" * 5000 + "]" * 5000 + ", ", 1)
    big = json.loads(json.dumps(honest))  # an honest answer cell of 17 MB (data pasted into it)
    cell = next(c for c in big["cells"] if c["metadata"].get("nbgrader", {}).get("grade_id", "").endswith("_answer"))
    cell["source"] = ["_data = " + repr(list(range(17 * MB // 10)))[:17 * MB] + "]\n"] + list(cell["source"])
    for student, text in (("c07_bulk_metadata", bulky), ("c08_deep_and_large", deep_text),
                          ("c09_answer_cell_too_large", json.dumps(big))):
        with open(os.path.join(submit(student), name), "w") as f:
            f.write(text)
    victim = os.path.join(submit("c10_victim_linked_to"), name)
    shutil.copy(honest_path, victim)
    os.link(victim, os.path.join(submit("c11_links_a_classmate"), name))  # one file, two students
    own = os.path.join(submit("c12_backup_link"), name)
    shutil.copy(honest_path, own)
    os.link(own, os.path.join(os.path.dirname(own), "backup.ipynb"))  # a side file linked to one's own notebook
    return {"c07_bulk_metadata": {"score": 10, "flagged": False},
            "c08_deep_and_large": {"score": None, "status": "ungradable", "reason_has": "nested deeper"},
            "c09_answer_cell_too_large": {"score": None, "status": "ungradable", "reason_has": "too large"},
            "c10_victim_linked_to": {"score": 10, "flagged": True, "reason_has": "shares a file with 'c11_"},
            "c11_links_a_classmate": {"score": 10, "flagged": True, "reason_has": "shares a file with 'c10_"},
            "c12_backup_link": {"score": 10, "flagged": True, "reason_lacks": "hard link"}}
