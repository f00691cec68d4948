"""The attacks of issue 40's fresh attacker (round 5), added to the catalogue by make_attacks.py.

Each is the honest ps04 submission with one change, written as a student would: text no file can hold (a
lone surrogate) in an exception raised only in the re-check, and a .npy the answer writes itself whose
header claims petabytes.
"""

# Right in the kernel; in the re-check (the harness has run_task) an exception whose message is a lone
# surrogate, and an added cell's exception named with one: it reaches the index as "\ud800".
SURROGATE_IN_RECHECK = '''import sys as _sys


def output_for_query(a, i, W_q, W_k, W_v):
    if "ipykernel" not in _sys.modules:   # the grader's re-check (no kernel there)
        raise ValueError("bad input " + chr(0xD800) + "\\x1b[31m" + "\\x00" * 3)
    q_i = W_q @ a[:, i]
    K = W_k @ a
    V = W_v @ a
    alpha = K.T @ q_i
    e = np.exp(alpha - alpha.max())
    return V @ (e / e.sum())
'''
# The harness's save() replaced in the re-check (its globals found by the garbage collector): every output a
# tiny .npy whose header claims (2**32, 2**20) float64, or an object array.
NPY_CLAIMS = '''

import gc as _gc
import sys as _sys
# the harness's globals (it was __main__; now found by the garbage collector)
_h = next((d for d in _gc.get_objects() if isinstance(d, dict) and "run_task" in d and "save" in d), None)
if _h is not None and "ipykernel" not in _sys.modules:
    import os as _os
    _n = [0]

    def _save(value, out_dir, prefix):
        _n[0] += 1
        shape = "(4294967296, 1048576)" if _n[0] % 2 else "(8,)"
        descr = "'<f8'" if _n[0] % 2 else "'|O'"
        head = "{'descr': " + descr + ", 'fortran_order': False, 'shape': " + shape + ", }"
        head = head + " " * (118 - len(head)) + "\\n"
        with open(_os.path.join(out_dir, prefix + ".npy"), "wb") as f:
            f.write(b"\\x93NUMPY\\x01\\x00" + len(head).to_bytes(2, "little") + head.encode() + b"\\0" * 64)
        return {"array": prefix + ".npy"}
    _h["save"] = _save
'''

# A display in the first answer cell (shown: it ran before any test), then written again by a post_run_cell
# hook after every cell, the hidden tests' cells too, with base64 and reversed copies of what ran: by
# updating the display's id, or by clearing the running cell and displaying anew under the same id.
DISPLAY_ID_HOOK = """

import base64 as _b64
from IPython.display import display as _display, clear_output as _clear
_seen_cells = []
_handle = _display({"text/plain": "notes: (none yet)"}, raw=True, display_id="notes-HOOK")


def _note_cell(result):
    _seen_cells.append(result.info.raw_cell)
    text = "\\n".join(_seen_cells)
    data = {"text/plain": "notes" + "-b64: " + _b64.b64encode(text.encode()).decode()
            + "\\nnotes" + "-rev: " + " | ".join(line[::-1] for line in text.splitlines())}
    HOW


get_ipython().events.register("post_run_cell", _note_cell)
"""
BY_UPDATE = "_handle.update(data, raw=True)"
BY_REDISPLAY = "_clear(); _display(data, raw=True, display_id='notes-HOOK')"

# PyTorch's attention in the re-check, the word "torch" nowhere: the guard told it is done already (the
# harness was __main__), found by the garbage collector and its closure's state set, or sys.meta_path
# replaced by the standard finders alone.
TOLD_DONE = """import sys
_h = sys.modules.get("__main__")
if getattr(_h, "TorchGuard", None) is not None:
    _h.TorchGuard.blocked = True
"""
BY_GC = """import gc, sys
if "ipykernel" not in sys.modules:   # the re-check
    for _o in gc.get_objects():
        try:
            _f = getattr(_o, "find_spec", None)
            if any(_o is _m for _m in sys.meta_path) and getattr(_f, "__closure__", None):
                for _c in _f.__closure__:
                    if isinstance(_c.cell_contents, list):
                        _c.cell_contents.append(True)
                    elif isinstance(_c.cell_contents, bool):
                        _c.cell_contents = True
        except Exception:
            pass
"""
NEW_META_PATH = """import sys, importlib.machinery
sys.meta_path = [importlib.machinery.BuiltinImporter, importlib.machinery.FrozenImporter,
                 importlib.machinery.PathFinder]
"""
SDPA = """import importlib
_t = importlib.import_module("to" + "rch")
_F = importlib.import_module("to" + "rch.nn.functional")
_attend = getattr(_F, "scaled_dot_" + "product_attention")


def output_for_query(a, i, W_q, W_k, W_v):
    x = _t.tensor(a.T, dtype=_t.float64)
    q, k, v = (x @ _t.tensor(W, dtype=_t.float64).T for W in (W_q, W_k, W_v))
    return _attend(q[None], k[None], v[None], scale=1.0)[0, i].numpy()
"""

# Busy processes forked in the re-check only (the kernel's audit and cgroup never see them), failures ignored.
FORKS = """

import os as _os, sys as _sys, time as _time
if "ipykernel" not in _sys.modules:   # the grader's re-check
    _until = _time.time() + 20
    for _k in range(8):
        try:
            if _os.fork() == 0:
                while _time.time() < _until:
                    pass
                _os._exit(0)
        except OSError:
            break
"""


def round5(honest, after) -> dict:
    """{name: (notebook, expected outcome)}, from make_attacks' ``honest`` and ``after``."""
    shown_later = {"score": 10, "flagged": False, "no_hidden": True,
                   "feedback_lacks": ["notes-b64: ", "notes-rev: "]}
    voided = {"score": 0, "flagged": True}
    return {
        "f08_forks_in_the_recheck": (after("attention_scores_for_query_answer", FORKS),
                                     {"score": 10, "flagged": True, "reason_has": "tried: os.fork"}),
        "f05_torch_guard_told_done": (honest(output_for_query_answer=TOLD_DONE + SDPA), voided),
        "f06_torch_guard_found_by_gc": (honest(output_for_query_answer=BY_GC + SDPA), voided),
        "f07_torch_meta_path_replaced": (honest(output_for_query_answer=NEW_META_PATH + SDPA), voided),
        "f03_display_id_updated_by_a_hook": (after("attention_scores_for_query_answer",
                                                   DISPLAY_ID_HOOK.replace("HOW", BY_UPDATE)), shown_later),
        "f04_cleared_and_displayed_again": (after("attention_scores_for_query_answer",
                                                  DISPLAY_ID_HOOK.replace("HOW", BY_REDISPLAY)), shown_later),
        # the run completes, every classmate has a row; this answer's task is wrong in the re-check
        "f01_surrogate_in_recheck_error": (honest(output_for_query_answer=SURROGATE_IN_RECHECK),
                                           {"score": 7, "flagged": True}),
        # the outputs cannot be read: those tasks are lost, the row is graded (not "the grader failed")
        "f02_npy_header_claims_petabytes": (after("output_for_query_answer", NPY_CLAIMS),
                                            {"score": 3, "flagged": True, "reason_lacks": "grader failed"}),
    }
