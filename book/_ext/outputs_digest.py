"""What the executed chapters show, as a digest to compare before and after a change to the code behind them.

    python book/_ext/outputs_digest.py write before.json      # after make book
    python book/_ext/outputs_digest.py compare before.json     # after the change and make book again
    python book/_ext/outputs_digest.py write before.json FOLDER  # from a copy of _build/jupyter_execute

The digest lists, per chapter, every output in order: the text (stream, text/plain, HTML, Markdown) and a
SHA-256 of every image.  ``compare`` prints each output that differs with the cell's first line; it exits 1
when one does.  Timings differ from run to run: the lines it prints are the ones to read.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[2]
EXECUTED = ROOT / "_build" / "jupyter_execute"
TEXT = ("text/plain", "text/html", "text/markdown", "text/latex")
IMAGES = ("image/png", "image/svg+xml", "image/jpeg")


def _output(out: dict) -> str:
    if out.get("output_type") == "stream":
        return f"{out['name']}: {out['text']}"
    if out.get("output_type") == "error":
        return f"error: {out['ename']}: {out['evalue']}"
    data = out.get("data", {})
    parts = [f"{kind}: {''.join(data[kind])}" for kind in TEXT if kind in data]
    for kind in IMAGES:
        if kind in data:
            raw = data[kind] if isinstance(data[kind], str) else "".join(data[kind])
            parts.append(f"{kind} sha256 {hashlib.sha256(raw.encode()).hexdigest()[:16]}")
    return "\n".join(parts)


def digest(folder: Path = EXECUTED) -> dict[str, list[list[str]]]:
    """chapter -> [[first line of the cell's source, output text], ...] for every output of every code cell."""
    notebooks = sorted(folder.rglob("*.ipynb"))
    if not notebooks:
        raise SystemExit(f"no executed chapters under {folder}: run make book first")
    result = {}
    for path in notebooks:
        nb = nbformat.read(path, as_version=4)
        rows = []
        for cell in nb.cells:
            if cell.cell_type != "code":
                continue
            head = cell.source.strip().splitlines()[0] if cell.source.strip() else ""
            outputs = []
            for out in cell.get("outputs", []):
                # How a stream is cut into outputs is not content: join them.  A saved notebook may hold the
                # whole stream in its first output and repeat later chunks after it (MyST-NB's copy under
                # _build/jupyter_execute does): a chunk already in the text is that repetition.
                last = outputs[-1] if outputs else None
                same_stream = last and out.get("output_type") == last.get("output_type") == "stream"
                if same_stream and out["name"] == last["name"]:
                    if out["text"] not in last["text"]:
                        outputs[-1] = {**last, "text": last["text"] + out["text"]}
                else:
                    outputs.append(out)
            rows += [[head, _output(out)] for out in outputs]
        result[str(path.relative_to(folder))] = rows
    return result


def compare(before: dict, after: dict) -> int:
    differing = 0
    for chapter in sorted(set(before) | set(after)):
        old, new = before.get(chapter), after.get(chapter)
        if old is None or new is None:
            print(f"{chapter}: only {'after' if old is None else 'before'}")
            differing += 1
            continue
        if len(old) != len(new):
            print(f"{chapter}: {len(old)} outputs before, {len(new)} after")
            differing += 1
        for (head, a), (_, b) in zip(old, new, strict=False):
            if a != b:
                differing += 1
                print(f"{chapter} [{head[:60]}]\n  before: {a[:300]!r}\n  after:  {b[:300]!r}")
    total = sum(len(rows) for rows in after.values())
    print(f"{differing} of {total} outputs differ")
    return 1 if differing else 0


def main(argv: list[str]) -> int:
    if len(argv) not in (2, 3) or argv[0] not in ("write", "compare"):
        print(__doc__)
        return 2
    if argv[0] == "write":
        folder = Path(argv[2]) if len(argv) == 3 else EXECUTED
        Path(argv[1]).write_text(json.dumps(digest(folder), ensure_ascii=False, indent=1))
        return 0
    return compare(json.loads(Path(argv[1]).read_text()), digest())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
