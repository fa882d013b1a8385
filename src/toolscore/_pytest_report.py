"""The pytest plugin's session report: every evaluation of the session recorded as a small
JSON-ready entry (:class:`Recorder`, kept in the pytest config's stash), and written as JSON
and Markdown at the end (:func:`write_session_report`)."""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .result import EvaluationResult

__all__ = ["Recorder", "session_recorder", "start_recording", "write_session_report"]

_MAX_FINDINGS = 50  # per entry in the report


class Recorder:
    """The session's evaluations, as small JSON-ready entries (no arguments)."""

    def __init__(self) -> None:
        self.entries: list[dict[str, Any]] = []

    def record(
        self,
        nodeid: str,
        what: str,
        result: EvaluationResult | None,
        *,
        passed: bool | None,
        min_score: float | None = None,
        failure: str | None = None,
    ) -> None:
        """Add one evaluation (``result`` None: the assertion failed before scoring)."""
        # the plugin loads in every pytest run: redaction only once a test records a result
        from .redact import redact_secrets
        from .sanitize import shown

        entry: dict[str, Any] = {
            "test": shown(nodeid),
            "what": shown(what),
            "passed": passed,
            "min_score": min_score,
            "time": time.time(),
        }
        if result is not None:
            findings = list(result.findings)
            entry.update(
                score=_finite(result.score),
                grade=result.grade,
                selection_accuracy=_finite(result.selection_accuracy),
                argument_f1=_finite(result.argument_f1),
                sequence_accuracy=_finite(result.sequence_accuracy),
                required_call_recall=_finite(result.required_call_recall),
                expected_calls=len(result.gold_calls),
                actual_calls=result.trace_calls_count,
                findings=[
                    {
                        "severity": f.severity,
                        "kind": f"{f.check}/{f.kind}",
                        "message": shown(f.message),
                    }
                    for f in findings[:_MAX_FINDINGS]
                ],
                findings_total=len(findings),
                notes=[shown(n) for n in getattr(result, "notes", ())],
            )
        if failure is not None:
            entry["failure"] = redact_secrets(failure)
        self.entries.append(entry)


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


_RECORDER = pytest.StashKey[Recorder]()


def session_recorder(config: pytest.Config) -> Recorder:
    """The session's :class:`Recorder` (made by the plugin's ``pytest_configure``)."""
    return config.stash[_RECORDER]


def start_recording(config: pytest.Config) -> None:
    """Give the session a :class:`Recorder`."""
    config.stash[_RECORDER] = Recorder()


def write_session_report(
    paths: str | Sequence[str], entries: Sequence[Mapping[str, Any]]
) -> list[Path]:
    """Write the session report at each of ``paths`` (Markdown for a path ending in ``.md``,
    JSON otherwise), and nowhere else: no file beside it is made or replaced. Returns the
    paths written."""
    # the plugin loads in every pytest run: the output writer only once a report is written
    from .outputs import write_report

    targets = [Path(paths)] if isinstance(paths, str) else [Path(p) for p in paths]
    failed = sum(1 for e in entries if e.get("passed") is False)
    scores = [e["score"] for e in entries if isinstance(e.get("score"), (int, float))]
    summary = {
        "evaluations": len(entries),
        "failed": failed,
        "passed": sum(1 for e in entries if e.get("passed") is True),
        "mean_score": sum(scores) / len(scores) if scores else None,
        "findings": sum(int(e.get("findings_total") or 0) for e in entries),
    }
    record = {"summary": summary, "evaluations": list(entries)}
    for target in targets:
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.suffix.lower() == ".md":
            text = _markdown(summary, entries)
        else:
            text = json.dumps(record, indent=2, ensure_ascii=False) + "\n"
        write_report(target, text.encode("utf-8"))
    return targets


def _fence(text: str) -> str:
    """A code fence longer than any run of backticks in ``text`` (which cannot close it)."""
    longest = max((len(run) for run in re.findall("`+", text)), default=0)
    return "`" * max(4, longest + 1)


def _markdown(summary: Mapping[str, Any], entries: Sequence[Mapping[str, Any]]) -> str:
    # the plugin loads in every pytest run: redaction and Markdown only once a report is written
    from .redact import redact_secrets
    from .reports.markdown import md_text

    def _cell(text: Any) -> str:
        return md_text(str(text))  # no HTML, link, image or table cell made of data

    mean = summary["mean_score"]
    lines = [
        "# Toolscore test report",
        "",
        f"- **Evaluations:** {summary['evaluations']} ({summary['passed']} passed, "
        f"{summary['failed']} failed)",
        f"- **Mean score:** {'n/a' if mean is None else f'{mean:.3f}'}",
        f"- **Findings:** {summary['findings']}",
        "",
        "| Test | Evaluation | Score | Grade | Result | Findings |",
        "|---|---|---|---|---|---|",
    ]
    for e in entries:
        score = e.get("score")
        result = {True: "✅ pass", False: "❌ fail", None: "—"}[e.get("passed")]
        lines.append(
            f"| {_cell(e['test'])} | {_cell(e['what'])} | "
            f"{'' if score is None else f'{score:.3f}'} | {e.get('grade', '')} | {result} | "
            f"{e.get('findings_total', 0)} |"
        )
    failures = [e for e in entries if e.get("failure")]
    if failures:
        lines += ["", "## Failures"]
        for e in failures:
            failure = str(e["failure"])
            fence = _fence(failure)
            lines += ["", f"### {_cell(e['test'])}", "", fence, failure, fence]
    with_findings = [e for e in entries if e.get("findings")]
    if with_findings:
        lines += ["", "## Findings"]
        for e in with_findings:
            lines += ["", f"### {_cell(e['test'])} ({_cell(e['what'])})", ""]
            lines += [f"- **{_cell(f['severity'])}** {_cell(f['message'])}" for f in e["findings"]]
    return redact_secrets("\n".join(lines) + "\n")
