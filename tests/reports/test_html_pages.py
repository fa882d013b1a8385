"""The two HTML pages people open: a dataset's and a single trace's. Rendered from the bundled
examples, checked for what they must show, and, where Chromium is installed, laid out by
headless Chromium 1280 px wide: a script measures that no text is cut or overlaps and that the
page does not scroll sideways, and a screenshot is taken (kept in the test's temporary
directory)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from toolscore import evaluate_trace
from toolscore.dataset import evaluate_dataset
from toolscore.dataset.reports import render_html as render_dataset
from toolscore.reports.html import render_html as render_trace

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
KEY = "AKIAIOSFODNN7EXAMPLE"  # the guardrails trace's (documented example) AWS key id


def _dataset_page() -> str:
    example = REPO / "examples" / "dataset"
    result = evaluate_dataset(
        str(example / "gold.jsonl"), str(example / "traces.jsonl"), engine="inline"
    )
    return render_dataset(result)


def _trace_page() -> str:
    example = REPO / "examples" / "guardrails"
    rules = str(example / "forbidden.json")
    result = evaluate_trace(
        str(example / "gold.json"), str(example / "trace.json"), forbidden=rules
    )
    return render_trace(result)


def test_the_dataset_page_opens_with_the_verdict_and_links_the_worst_traces() -> None:
    page = _dataset_page()
    assert page.index('class="banner') < page.index("<table")
    assert "Mean grade A · PASS" in page and "pass rate 77.8% (7 of 9 passed" in page
    assert re.search(r"Traces read from <code>[^<]*/examples/dataset/traces.jsonl</code>", page)
    assert ">score</text>" in page and ">traces</text>" in page  # the histogram's axes
    links = re.findall(r'<a href="#(record-\d+)">([^<]+)</a>', page)
    assert links and links[0][1] == "agent-v2/refund/trial2"  # the lowest score first
    for anchor, trace_id in links:
        record = page[page.index(f'id="{anchor}"') :]
        assert record.startswith(f'id="{anchor}">{trace_id}</h3>')
    assert "traces.jsonl:5" in page  # the worst trace's file and line


def test_the_trace_page_lists_expected_against_actual_calls_redacted() -> None:
    page = _trace_page()
    assert page.index('class="banner fail"') < page.index("<h2>Summary</h2>")
    assert "grade C below A; required calls 50% completed; 2 violation(s)" in page
    table = page[page.index('<table class="calls">') : page.index("</table>")]
    marks = re.findall(r'<td class="mark">(.)</td><td>(\d+)</td>', table)
    assert marks == [("✓", "1"), ("✗", "2"), ("✗", "3"), ("✓", "4"), ("✗", "5")]
    assert "deploy(env=&#x27;staging&#x27;)" in table and "— extra —" in table
    assert KEY not in page


# Runs in the page after load; writes what it finds into <pre id="layout-problems">.
_MEASURE = """<script>
(() => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width) {
    problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth} > ${width}`);
  }
  for (const el of document.querySelectorAll("td, th, dd, dt, h1, h2, h3, p, li, .card, .banner")) {
    if (el.scrollWidth > el.clientWidth + 1) problems.push(`cut: ${el.textContent.slice(0, 60)}`);
    if (el.getBoundingClientRect().right > width + 1) {
      problems.push(`past the right edge: ${el.textContent.slice(0, 60)}`);
    }
  }
  for (const svg of document.querySelectorAll("svg")) {
    const view = svg.getBoundingClientRect();
    const boxes = [...svg.querySelectorAll("text")].map(t => [t, t.getBoundingClientRect()]);
    for (const [t, b] of boxes) {
      if (b.left < view.left - 1 || b.right > view.right + 1 || b.top < view.top - 1
          || b.bottom > view.bottom + 1) problems.push(`svg text cut: ${t.textContent}`);
    }
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const a = boxes[i][1], b = boxes[j][1];
      if (a.left < b.right - 1 && b.left < a.right - 1 && a.top < b.bottom - 1
          && b.top < a.bottom - 1) {
        problems.push(`svg text overlaps: ${boxes[i][0].textContent} / ${boxes[j][0].textContent}`);
      }
    }
  }
  const out = document.createElement("pre");
  out.id = "layout-problems";
  out.textContent = JSON.stringify(problems);
  document.body.appendChild(out);
})();
</script>"""


def _chromium(*args: str) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed")
@pytest.mark.parametrize("render", [_dataset_page, _trace_page], ids=["dataset", "trace"])
def test_pages_lay_out_at_1280px_without_cut_or_overlapping_text(
    render: object, tmp_path: Path
) -> None:
    assert callable(render)
    page = render()
    name = render.__name__.strip("_")
    measured = tmp_path / f"{name}-measured.html"
    measured.write_text(page.replace("</body>", _MEASURE + "</body>"), encoding="utf-8")
    done = _chromium("--window-size=1280,1600", "--dump-dom", measured.as_uri())
    found = re.search(r'<pre id="layout-problems">(.*?)</pre>', done.stdout, re.S)
    assert found is not None, done.stderr[-2000:]
    assert found.group(1) == "[]", found.group(1)

    original = tmp_path / f"{name}.html"
    original.write_text(page, encoding="utf-8")
    shot = tmp_path / f"{name}.png"
    _chromium("--window-size=1280,2400", f"--screenshot={shot}", original.as_uri())
    assert shot.is_file(), "no screenshot"
    assert _png_size(shot) == (1280, 2400)
    assert shot.stat().st_size > 20_000  # a page drawn, not a blank one
