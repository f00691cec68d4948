"""The glossary is the Chinese edition's term base, and the catalogues keep to it (issue 32):
book/_ext/term_check.py finds a variant the term base does not allow, and an English term left in
running Chinese text after its first bracketed use on the page."""

from __future__ import annotations

import sys

import pytest
from site_helpers import ROOT

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import term_check as tc  # noqa: E402


def _check(*msgstrs):
    return tc.check([(f"msgid {k}", s) for k, s in enumerate(msgstrs)], "page.po")


def test_the_term_base_holds_the_decided_terms():
    base = {t.english: t for t in tc.term_base()}
    assert base["patch"].chinese == "图像块" and "小块" in base["patch"].variants
    assert base["dilation rate"].variants == ("空洞率",) and base["token"].chinese == "词元"
    assert base["attention weight matrix"].chinese == "注意力权重矩阵"
    assert len(base) >= 25


def test_the_tools_words_are_the_translators_rows_not_the_glossarys():
    """Set-up cell, Jupyter's kernel, docstring, issue: in locales/zh_CN/termbase.md, which term_check
    reads with the glossary; the book's glossary lists the subject's terms only."""
    glossary = {t.english for t in tc.term_base(translators=None)}
    translators = {t.english: t for t in tc.term_base()}
    for english in ("set-up cell", "kernel", "docstring", "issue"):
        assert english in translators and english not in glossary, english
    assert translators["kernel"].chinese == "内核" and "核函数" in translators["kernel"].variants
    assert "kernel function" not in translators and "核函数" not in tc.GLOSSARY.read_text(encoding="utf-8")


def test_the_chinese_catalogues_keep_to_the_term_base():
    files = tc.default_files()
    assert len(files) >= 12 + 12 and not any(p.name == "glossary.po" for p in files)
    findings = [str(f) for f in tc.problems(files)]
    assert findings == [], f"{len(findings)} finding(s):\n" + "\n".join(findings)


@pytest.mark.parametrize("msgstrs, what", [
    (["把图像切成 16×16 的小块。"], "'小块' is a variant"),
    (["膨胀卷积的空洞率为 2。"], "'空洞率' is a variant"),
    (["本习题练习自注意力。"], "'习题' is a variant"),
    (["用 numpy 写一个快速的核函数。"], "'核函数' is a variant"),
    (["每个 token 都有一个向量。"], "English 'token' in Chinese text"),
    (["独热（one-hot）向量彼此正交。", "这些 one-hot 向量长度为 n。"], "English 'one-hot' in Chinese text"),
    (["独热（one-hot）向量。", "再说一次：独热（one-hot）。"], "English 'one-hot' glossed again"),
    (["在 notebook 中运行。"], "English 'notebook' in Chinese text"),
    (["window 的半径为 $r$。"], "English 'window' in Chinese text"),
])
def test_a_variant_or_an_english_term_fails(msgstrs, what):
    findings = _check(*msgstrs)
    assert findings and what in findings[-1].what, findings
    assert str(findings[-1]).startswith(f"page.po: 'msgid {len(msgstrs) - 1}': ")


@pytest.mark.parametrize("msgstrs", [
    ["独热（one-hot）向量彼此正交。", "这些独热向量长度为 n。"],
    ["因果掩码（causal mask）只看过去；填充掩码（padding mask）遮住填充。"],
    ["多头自注意力（multi-head self-attention）有 $H$ 个头。"],
    ["线性注意力的核函数 $\\phi(q)^\\top\\phi(k)$。"],
    ["调用 `n_heads` 和 `mask`，然后 **Kernel → Restart Kernel**。"],
    ["A plain English message, no Chinese: window, token, head."],
])
def test_the_one_term_and_a_first_gloss_pass(msgstrs):
    assert _check(*msgstrs) == []


def test_the_command_exits_1_on_a_bad_catalogue(tmp_path, capsys):
    po = tmp_path / "bad.po"
    po.write_text('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
                  'msgid "Each token"\nmsgstr "每个 token"\n', encoding="utf-8")
    assert tc.main([str(po)]) == 1
    assert "bad.po: 'Each token': English 'token' in Chinese text" in capsys.readouterr().out
