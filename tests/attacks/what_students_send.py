"""The attacks of issue 31 ("What students send"), added to the catalogue by make_attacks.py.

Each is the honest ps04 submission with one change (``honest``/``after`` of make_attacks.py): malformed
fields, a re-check index rewritten when the harness exits, the grader's environment looked for, a hook that
prints each executed cell, markup in output fields, PyTorch's attention compiled again from its source,
messages of hundreds of MB.  (A hard link to the solution and 40,000 unknown cells are made by
tests/test_attacks.py: a link cannot live in git, and the cells would be 6 MB in it.)
"""

import json

import nbformat

from round4 import round4
from round5 import round5

# Run when the harness exits, after it wrote its index (the re-check's process; nothing in the kernel).
AT_EXIT = """
import atexit as _atexit, os as _os, sys as _sys

def _rewrite():
    _out = _os.path.join(_sys.argv[-1], 'out')
    if not _os.path.isdir(_out):
        return
{body}
_atexit.register(_rewrite)
"""
DEEP_INDEX = """
    with open(_os.path.join(_out, 'index.json'), 'w') as _f:
        _f.write('[' * 300000 + ']' * 300000)"""
ONE_ARRAY_MANY_TIMES = """
    import json, numpy as np
    np.save(_os.path.join(_out, 'big.npy'), np.zeros(5 << 20))
    _many = {"results": [{"array": "big.npy"}] * 1000}
    _names = ("attention_scores_for_query", "output_for_query", "permuted_outputs")
    with open(_os.path.join(_out, 'index.json'), 'w') as _f:
        json.dump({"tasks": {n: _many for n in _names}, "done": True}, _f)"""
ENVIRONMENT = """
for _p in ('/proc/1/environ', '/proc/self/environ', '/proc/2/environ'):
    try:
        print(_p, open(_p, 'rb').read().replace(b'\\0', b' ').decode(errors='replace'))
    except OSError:
        pass
"""
HOOK = """
get_ipython().events.register('post_run_cell', lambda result: print(get_ipython().user_ns['In'][-1]))
"""
OUTPUT_FIELDS = """
from IPython.display import display
display({'image/png': '"><script>alert("XSS-PNG")</script>', 'text/plain': 'x'}, raw=True)
_k = get_ipython().kernel
_k.session.send(_k.iopub_socket, 'stream', {'name': 'x"><script>alert("XSS-NAME")</script>', 'text': 'hi'},
                parent=_k.get_parent())
"""
TORCH_RECOMPILED = """import numpy as np
import torch
import torch.nn.functional as F

_src = open(F.__file__).read()
_start = _src.index("def multi_head_attention_forward(")
_end = _src.index(chr(10) + "def ", _start + 10)
_ns = dict(vars(F))
exec(_src[_start:_end], _ns)  # PyTorch's own function, compiled again from its source
_mha = _ns["multi_head_attention_forward"]


def output_for_query(a, i, W_q, W_k, W_v):
    x = torch.tensor(np.asarray(a, dtype=float).T)  # (n, d_in)
    q, k, v = x @ torch.tensor(W_q).T, x @ torch.tensor(W_k).T, x @ torch.tensor(W_v).T
    width = max(q.shape[1], v.shape[1])
    q, k, v = (F.pad(t, (0, width - t.shape[1])) for t in (q, k, v))  # zeros change no dot product
    eye = torch.eye(width, dtype=q.dtype)
    out, _ = _mha(q[:, None] * width ** 0.5, k[:, None], v[:, None], width, 1, None, None, None, None, False, 0.0,
                  eye, torch.zeros(width, dtype=q.dtype), training=False, need_weights=True,
                  use_separate_proj_weight=True, q_proj_weight=eye, k_proj_weight=eye, v_proj_weight=eye)
    return out[i, 0, : W_v.shape[0]].numpy()
"""
HUGE_MESSAGES = """
for _ in range(3):
    print('x' * (120 << 20), flush=True)
"""


def what_students_send(honest, after) -> dict:
    """{name: (notebook or None, expected outcome)}, from make_attacks' ``honest`` and ``after``."""
    attacks = {}
    # Every field of a notebook is hostile.  A kernelspec that is a string: nbformat reads it, and the
    # rebuild raised outside its guard (make grade exited 2, no grades.csv for anyone); cells whose fields
    # have the wrong types.  Each costs its own row at most, never the class's run.
    raw = json.loads(nbformat.writes(honest()))
    raw["metadata"]["kernelspec"] = "evil"
    attacks["d01_kernelspec_a_string"] = (None, {"score": 10, "flagged": True, "text": json.dumps(raw)})
    raw = json.loads(nbformat.writes(honest()))
    raw["cells"] += [{"cell_type": "code", "source": 5, "metadata": {"nbgrader": {"grade_id": ["x"]}}, "outputs": "x"},
                     {"cell_type": "raw", "source": ["a", 1], "metadata": []}]
    attacks["d01b_malformed_cells"] = (None, {"score": None, "status": "ungradable", "text": json.dumps(raw)})
    # The re-check's result index rewritten when the harness exits: JSON nested deeper than the parser's
    # recursion (was: RecursionError, the whole Dask batch failed, the attacker got no row), and one 40 MB
    # array named 1,000 times per task (was: re-read each time, a 2.8 GB grader).
    attacks["d02_deep_index"] = (after("attention_scores_for_query_answer", AT_EXIT.format(body=DEEP_INDEX)),
                                 {"score": 0, "flagged": True})
    attacks["d03_one_array_many_times"] = (after("attention_scores_for_query_answer",
                                                 AT_EXIT.format(body=ONE_ARRAY_MANY_TIMES)),
                                           {"score": 0, "flagged": True})
    # The grader's environment (a secret the test sets, make's MAKEFLAGS) is not in the sandbox: bwrap, the
    # sandbox's pid 1, starts with a minimal one.  Flagged: "tried: open /proc/1/environ".
    attacks["d04_grader_environment"] = (after("attention_scores_for_query_answer", ENVIRONMENT),
                                         {"score": 10, "flagged": True, "no_env": True})
    # A hook that prints each executed cell (a test cell with its hidden tests) into the outputs.
    attacks["d05_hook_prints_hidden_tests"] = (after("attention_scores_for_query_answer", HOOK),
                                               {"score": 10, "flagged": False, "no_hidden": True})
    # Markup in fields of an output the feedback template writes unescaped: an image's data, a stream's name.
    attacks["d06_script_in_output_fields"] = (after("attention_scores_for_query_answer", OUTPUT_FIELDS),
                                              {"score": 10, "flagged": False, "no_script": True})
    # PyTorch's attention compiled again from its source (torch/nn/functional.py, readable in the mounted
    # venv): matrix products and a softmax, as an honest PyTorch answer.  The policy (the exercises' "What
    # you may use"): PyTorch's attention functions are blocked, the operators at the dispatcher; anything
    # built from tensor operations is graded on its values.
    attacks["d07_torch_attention_recompiled"] = (honest(output_for_query_answer=TORCH_RECOMPILED),
                                                 {"score": 10, "flagged": False})
    # Three messages of 120 MB from the kernel (the grader measured output only after decoding one whole):
    # refused on their length by the grader's sockets; that cell's output stops, the kernel is stopped.
    attacks["d08_huge_kernel_messages"] = (after("attention_scores_for_query_answer", HUGE_MESSAGES),
                                           {"score": 0, "flagged": True})
    attacks.update(round4(honest, after))  # issue 40's
    attacks.update(round5(honest, after))  # issue 40's fresh attacker
    return attacks
