"""Check translation catalogues: every message translated, none fuzzy, markup kept.

    python book/_ext/po_check.py locales/zh_CN/LC_MESSAGES/book/relevance.po [...]

Markup that must come through unchanged: inline code `...`, math $...$, roles {cite}`...` /
{ref}`...` / {download}`...` / {glue:text}`...`, link targets (...) of [text](target), footnote
references [^name], and <...> tags.  Exit code 1 when anything is wrong.
"""

from __future__ import annotations

import re
import sys
from collections import Counter

from babel.messages.pofile import read_po

ROLE = re.compile(r"\{[a-z:]+\}`[^`]*`")  # {cite}`key`, {glue:text}`name:.2f`, ...: whole
TOKENS = [
    re.compile(r"`[^`]+`"),  # inline code (roles are taken out first)
    re.compile(r"\$\$.+?\$\$|\$[^$]+\$", re.S),  # math
    re.compile(r"\]\(([^)\s]+)\)"),  # link targets
    re.compile(r"\[\^[^\]]+\]"),  # footnote references
    re.compile(r"<[^>\s]+>"),  # tags, autolinks
]


def markup(text: str) -> Counter:
    found: Counter = Counter(m.group(0) for m in ROLE.finditer(text))
    text = ROLE.sub(" ", text)  # a role's backticks must not pair with an inline code's
    for rx in TOKENS:
        for m in rx.finditer(text):
            found[m.group(0)] += 1
    return found


def problems(path: str) -> list[str]:
    with open(path, "rb") as f:
        catalogue = read_po(f)
    out = []
    for msg in catalogue:
        if not msg.id:
            continue
        where = f"{path}: {str(msg.id)[:70]!r}"
        if not msg.string:
            out.append(f"{where}: not translated")
            continue
        if msg.fuzzy:
            out.append(f"{where}: fuzzy")
        want, got = markup(str(msg.id)), markup(str(msg.string))
        if want != got:
            out.append(f"{where}: markup differs: missing {sorted((want - got).elements())}, "
                       f"extra {sorted((got - want).elements())}")
    return out


def main(paths: list[str]) -> int:
    found = [p for path in paths for p in problems(path)]
    print("\n".join(found) if found else f"{len(paths)} catalogue(s): every message translated, markup kept")
    return 1 if found else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
