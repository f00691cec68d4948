"""How well the similarity report tells copies from independent work (README, "Who copied from whom").

Independently written answers, per assignment: the solution notebook's answers, the re-implementations
written elsewhere (tests/others_answers.py, each in a notebook whose other answer cells are left as
released) and, for ps04, the demo students' own answers (attn_grader.authoring.demo.OWN_ANSWERS).  Every pair of
two of them is a pair that must not be reported: its share is the false-positive rate.

Copies: each of those notebooks handed in again as it is (copied), with every local variable renamed
(renamed), and renamed with independent lines swapped and comments dropped (reordered:
attn_grader.authoring.demo.disguise); each copy is compared with its original, and its share reported is the
detection rate.  Notebooks with less own code than the report needs (``min_shared``) cannot be caught
by design and are counted apart.

    .venv/bin/python tests/similarity_cases.py [--threshold 0.5] [--min-shared 60]
"""

from __future__ import annotations

import argparse
import functools
import itertools
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import nbformat

from attn_grader.authoring.demo import OWN_ANSWERS, OWN_ASSIGNMENT, answers_of, disguise, own_answers
from attn_grader.reports import similarity


@functools.cache
def release(assignment: str):
    return nbformat.read(ROOT / "exercises" / assignment / f"{assignment}.ipynb", as_version=4)


@functools.cache
def independent() -> dict[str, dict[str, dict[str, str]]]:
    """{assignment: {who: {grade id: answer cell}}}: answers written independently of each other."""
    from others_answers import OTHERS

    out: dict[str, dict[str, dict[str, str]]] = {}
    for a in sorted(p.name for p in (ROOT / "solutions").iterdir() if p.is_dir()):
        rel = release(a)
        starters = answers_of(rel)
        src = nbformat.read(ROOT / "solutions" / a / f"{a}.ipynb", as_version=4)
        out[a] = {"solution": answers_of(src)}
        for name, assignment, answers, _expect in OTHERS:
            if assignment == a:
                out[a][name] = dict(starters, **answers)
        if a == OWN_ASSIGNMENT:
            for student in OWN_ANSWERS:
                out[a]["demo_" + student] = own_answers(rel, student)
    return out


def renamed(source: str) -> str:
    """Every local variable of every function renamed, nothing else changed."""
    return disguise(source, reorder=False)


VARIANTS = {"copied": lambda s: s, "renamed": renamed, "reordered": disguise}


def measure(threshold: float = similarity.THRESHOLD, min_shared: int = similarity.MIN_SHARED,
            assignments: list[str] | None = None) -> dict:
    """False positives among independent answers and detections of their copies, with the pairs behind
    (every assignment, or those named)."""
    fp_pairs, fp_found = [], []
    caught: dict[str, list] = {v: [] for v in VARIANTS}
    missed: dict[str, list] = {v: [] for v in VARIANTS}
    small, scores, own = [], [], {}
    for a, by_who in independent().items():
        if assignments is not None and a not in assignments:
            continue
        starters = similarity.starters_of(release(a))
        found = similarity.compare(by_who, starters, 0.0, min_shared)  # every score, to show the margin
        fp_pairs += [(a, x, y) for x, y in itertools.combinations(sorted(by_who), 2)]
        scores += [p.score for p in found]
        fp_found += [(a, p.a, p.b, p.score, p.shared) for p in found if p.score >= threshold]
        for who, answers in by_who.items():
            alone = similarity.compare({"x": answers, "y": answers}, starters, 0.0, 0)
            if not alone or alone[0].shared < min_shared:
                small.append((a, who))
                continue
            own[(a, who)] = alone[0].shared
            for v, change in VARIANTS.items():
                copy = {g: change(s) for g, s in answers.items()}
                hit = similarity.compare({"original": answers, "copy": copy}, starters, 0.0, min_shared)
                score = hit[0].score if hit else 0.0
                (caught if score >= threshold else missed)[v].append((a, who, score))
    return {"independent_pairs": fp_pairs, "false_positives": fp_found, "caught": caught, "missed": missed,
            "too_small": small, "own_code": own, "highest_independent": max(scores, default=0.0)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--threshold", type=float, default=similarity.THRESHOLD)
    p.add_argument("--min-shared", type=int, default=similarity.MIN_SHARED)
    args = p.parse_args(argv)
    m = measure(args.threshold, args.min_shared)
    n, fp = len(m["independent_pairs"]), len(m["false_positives"])
    print(f"threshold {args.threshold}, min_shared {args.min_shared}")
    print(f"false positives: {fp} of {n} pairs of independently written notebooks ({fp / max(n, 1):.1%})")
    for row in m["false_positives"]:
        print("  reported:", row)
    for v in VARIANTS:
        c, x = len(m["caught"][v]), len(m["missed"][v])
        print(f"{v}: {c} of {c + x} copies reported ({c / max(c + x, 1):.1%})"
              + (f"; missed {[r[:2] for r in m['missed'][v]]}" if x else ""))
    lowest = min((r[2] for v in VARIANTS for r in m["caught"][v] + m["missed"][v]), default=0.0)
    print(f"highest score of two independent notebooks: {m['highest_independent']:.2f}; "
          f"lowest score of a copy: {lowest:.2f}")
    print(f"too little own code to be compared (by design): {len(m['too_small'])} notebooks {m['too_small']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
