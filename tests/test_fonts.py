"""The Chinese figures on any machine (issue 42): the CJK font found (matplotlib's stale font list rebuilt),
a Chinese text drawn with it, a glyph no font has is an error, and `make fonts` installs the font or
stops with one line."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import matplotlib
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from attn_book.figures import fonts, language

ROOT = Path(__file__).resolve().parents[1]


def _text_figure(text: str):
    fig = Figure(figsize=(2, 1))
    ax = fig.add_subplot()
    ax.set_title(text)
    return fig, ax.title


def test_a_chinese_figure_is_drawn_with_the_cjk_font_and_no_missing_glyph(recwarn, caplog):
    fig, title = _text_figure("attention weights")
    png, texts, missing = language.render_chinese(fig, {"attention weights": "注意力权重"})
    assert png.startswith(b"\x89PNG") and "注意力权重" in texts and not missing
    for char in "注意力权重":
        used = fonts.glyph_font(title, char)
        assert used is not None and "CJK" in Path(used).name, (char, used)
    assert not [w for w in recwarn if "missing from font" in str(w.message)]
    assert not [r for r in caplog.records if "not found" in r.getMessage() or "glyph" in r.getMessage()]


def test_a_glyph_no_font_has_fails_the_chinese_figure():
    fig, _ = _text_figure("注意力 \ue000")  # a private-use character: no font draws it
    with pytest.raises(fonts.MissingGlyph, match="missing from font"):
        language.render_chinese(fig, {})


def test_a_font_family_that_is_not_installed_fails_too():
    fig, title = _text_figure("注意力")
    title.set_fontfamily(["No Such Font Family"])
    with pytest.raises(fonts.MissingGlyph, match="not found"), fonts.strict_glyphs():
        FigureCanvasAgg(fig).draw()


def test_other_warnings_pass_through_strict_glyphs():
    import warnings

    with pytest.warns(UserWarning, match="something else"), fonts.strict_glyphs():
        warnings.warn("something else", UserWarning, stacklevel=1)


_PROBE = """
import json, sys
from matplotlib import font_manager
from attn_book.figures import fonts
before = any(f.name == fonts.CJK_FONT for f in font_manager.fontManager.ttflist)
path = fonts.cjk_font_file()
print(json.dumps({"before": before, "path": path}))
"""


@pytest.mark.slow  # two Python processes, one scanning the machine's fonts: about 5 s
def test_a_stale_font_cache_without_the_cjk_font_is_rebuilt(tmp_path):
    """A font list cached before the fonts were installed (here: the CJK entries taken out of a fresh one)
    is read by matplotlib at import; the figure code rebuilds it, in the file too."""
    env = dict(os.environ, MPLCONFIGDIR=str(tmp_path), MPLBACKEND="Agg")
    subprocess.run([sys.executable, "-c", "import matplotlib.font_manager"], env=env, check=True, cwd=ROOT)
    cache = next(tmp_path.glob("fontlist-v*.json"))
    data = json.loads(cache.read_text())
    data["ttflist"] = [f for f in data["ttflist"] if "CJK" not in f["name"]]
    cache.write_text(json.dumps(data))
    out = subprocess.run([sys.executable, "-c", _PROBE], env=env, check=True, cwd=ROOT, capture_output=True,
                         text=True)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["before"] is False, "the stale cache was not read: the test proves nothing"
    assert "CJK" in Path(result["path"]).name
    assert any(f["name"] == fonts.CJK_FONT for f in json.loads(cache.read_text())["ttflist"])


def test_no_cjk_font_anywhere_is_one_clear_error(monkeypatch):
    monkeypatch.setattr(fonts, "_found", None)
    monkeypatch.setattr(fonts, "_rebuilt", True)  # rebuilt already: the machine has none
    monkeypatch.setattr(matplotlib.font_manager.fontManager, "ttflist",
                        [f for f in matplotlib.font_manager.fontManager.ttflist if f.name != fonts.CJK_FONT])
    with pytest.raises(fonts.NoCJKFont, match="fonts-noto-cjk"):
        fonts.cjk_font_file()


def test_make_fonts_passes_with_the_font_and_stops_in_one_line_without(tmp_path):
    ok = subprocess.run(["make", "-s", "fonts"], cwd=ROOT, capture_output=True, text=True)
    assert ok.returncode == 0 and not ok.stdout.strip(), ok.stdout + ok.stderr
    (tmp_path / "fc-list").write_text("#!/bin/sh\nexit 0\n")  # no font listed
    (tmp_path / "id").write_text("#!/bin/sh\necho 1000\n")  # not root: no apt
    for f in tmp_path.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{tmp_path}:{os.environ['PATH']}")
    out = subprocess.run(["make", "-s", "fonts"], cwd=ROOT, capture_output=True, text=True, env=env)
    assert out.returncode != 0
    ours = [ln for ln in (out.stdout + out.stderr).splitlines() if not re.match(r"make(\[\d+\])?: ", ln)]
    assert len(ours) == 1 and "apt-get install fonts-noto-cjk" in ours[0], ours


def test_make_book_gets_the_fonts_first():
    book = next(ln for ln in (ROOT / "Makefile").read_text().splitlines() if ln.startswith("book:"))
    assert "fonts" in book.split(":", 1)[1].split()
