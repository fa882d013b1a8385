"""Markdown made of data renders as text: tool names, trace ids, file names, messages and rule
reasons carrying ``<img onerror>``, ``[x](javascript:...)``, ``![](http://...)``, bare URLs
and code fences, in the single-trace Markdown report and the pytest plugin's, rendered by
GitHub's own Markdown library (cmark-gfm, raw HTML let through) into no tag, link or image."""

from __future__ import annotations

from pathlib import Path

import cmarkgfm
import pytest
from cmarkgfm.cmark import Options

import toolscore
from toolscore._pytest_report import Recorder, write_session_report
from toolscore.reports.markdown import md_text, render_markdown

IMG = "<img src=x onerror=alert(1)>"
LINK = "[x](javascript:alert(1))"
IMAGE = "![](http://evil.example/a.png)"
BARE = "see http://evil.example/b and www.evil.example"
FENCE = "```\n# heading\n````"
PAYLOADS = [IMG, LINK, IMAGE, BARE, FENCE]


def _html(markdown: str) -> str:
    # UNSAFE lets raw HTML through: any tag made of data would be in the output
    html: str = cmarkgfm.github_flavored_markdown_to_html(
        markdown, options=Options.CMARK_OPT_UNSAFE
    )
    return html


def _assert_inert(markdown: str) -> None:
    html = _html(markdown)
    assert "<img" not in html
    assert "<a " not in html
    assert "onerror" not in html or "&lt;img" in html


@pytest.mark.parametrize("payload", PAYLOADS)
def test_md_text_is_inert(payload: str) -> None:
    html = _html(f"- {md_text(payload)}")
    assert "<img" not in html and "<a " not in html and "<h1" not in html


def test_the_single_trace_report(tmp_path: Path) -> None:
    calls = [
        {"tool": IMG, "args": {"q": 1}, "error": f"failed: {LINK} {IMAGE}"},
        {"tool": "wipe", "args": {}, "result": "ok"},
        {"tool": LINK, "args": {"u": 1}, "error": BARE},
    ]
    rules = [{"tool": "wipe", "reason": f"{IMG} {LINK} {IMAGE} {BARE}"}]
    result = toolscore.evaluate([{"tool": IMAGE}, {"tool": "fetch"}], calls, forbidden=rules)
    markdown = render_markdown(result)
    assert "onerror" in markdown  # the payloads are shown, as text
    _assert_inert(markdown)
    # a file name and the trace's error quoting it
    trace = tmp_path / f"{IMG}.json"
    trace.write_text('[{"tool": "a", "args": {}}, {"tool": ', encoding="utf-8")
    broken = toolscore.evaluate_trace([{"tool": "a"}], trace)
    assert broken.input_error is not None
    markdown = render_markdown(broken)
    assert "Trace incomplete" in markdown
    _assert_inert(markdown)


def test_the_pytest_plugins_report(tmp_path: Path) -> None:
    recorder = Recorder()
    calls = [{"tool": IMG, "args": {}, "error": f"{LINK} {IMAGE} {BARE}"}]
    result = toolscore.evaluate([{"tool": "fetch"}], calls)
    for payload in PAYLOADS:
        recorder.record(f"test_x.py::test_a[{payload}]", payload, result, passed=False)
    recorder.record("test_x.py::test_b", "assert_tools", None, passed=False, failure=FENCE + IMG)
    (md_path,) = write_session_report(str(tmp_path / "report.md"), recorder.entries)
    markdown = md_path.read_text("utf-8")
    _assert_inert(markdown)
    html = _html(markdown)
    assert "<h1>Toolscore test report</h1>" in html and html.count("<h1") == 1
    assert html.count("<table>") == 1  # no cell broke out of its table


def test_the_baseline_verdict_section() -> None:
    # what the Markdown reports and the Action's job summary append after a baseline run
    from toolscore.baseline import TraceSummary, compare
    from toolscore.cli._ci import verdict_markdown

    def summary(score: float) -> TraceSummary:
        return TraceSummary(score=score, grade="A", required=None)

    before = {p: summary(1.0) for p in PAYLOADS}
    after = {p: summary(0.5) for p in PAYLOADS}
    markdown = verdict_markdown(compare(before, after))
    assert markdown.count("- ") >= len(PAYLOADS)
    _assert_inert(markdown)
