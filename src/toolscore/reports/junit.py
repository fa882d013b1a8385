"""JUnit XML: one test case per trace and one per gate, for CI test views.

GitHub (test-reporting actions), GitLab (``artifacts:reports:junit``) and Jenkins (the JUnit
plugin) read the common Ant/Surefire shape written here::

    <testsuites name="toolscore" tests="3" failures="1" errors="0" skipped="0" time="0">
      <testsuite name="toolscore.traces" tests="1" failures="1" ...>
        <testcase classname="toolscore.traces" name="trace.json" file="trace.json">
          <properties><property name="score" value="0.740"/>...</properties>
          <failure type="toolscore.findings" message="2 errors: call 2 run_shell ...">...</failure>
          <system-out>score 0.740 (grade C) ...</system-out>
        </testcase>
      </testsuite>
      <testsuite name="toolscore.gates" ...>
        <testcase classname="toolscore.gates" name="fail-under B">
          <failure type="toolscore.gate" message="grade C is below --fail-under B"/>
        </testcase>
      </testsuite>
    </testsuites>

A trace's test case fails when the trace has an error-severity finding (a forbidden call, a
credential) and errors (``<error>``) when it could not be read to its end or parts of it were
unreadable; warnings (failed calls, retries) are listed in its output without failing it. A
dataset may decide differently by passing ``failed=`` (see :class:`JunitWriter`); a result
with a ``failure`` attribute (why it did not pass) has it as its failure's message, and one
with ``skipped`` (a dataset's trace without a score) is written ``<skipped>``. Every text
is redacted (:func:`toolscore.redact.redact_secrets`) and stripped of characters XML cannot
hold. Test cases are spooled to a temporary file as they are added, so a dataset of many
traces keeps one small record per trace in memory at a time.

A trace's findings are those its result keeps (up to 10,000; the JSON report has every one).
The writers read results by their attributes only (``score``, ``grade``, ``findings``,
``trace_calls_count``, ``required_call_recall``, and ``input_error``, ``input_problems``,
``input_findings``, ``notes`` when present), so a run that evaluates traces elsewhere (a
process pool) may hand them any object of that shape.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from .._rounding import score_text
from ..outputs import AtomicOutput
from ..redact import redact_secrets

__all__ = ["Gate", "JunitWriter", "default_failed", "junit_text", "write_junit"]

_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_MAX_FINDINGS = 200  # listed in one failure's text; the rest are counted


@dataclass(frozen=True, slots=True)
class Gate:
    """A pass/fail gate of the run (``--fail-under``, ``--fail-on-violations``,
    ``--baseline``...), written as a test case of its own."""

    name: str
    """The test case's name, e.g. ``fail-under B``."""
    passed: bool
    message: str = ""
    """Why it failed (one line)."""
    details: str = ""
    """More lines (a baseline's regressions...)."""


def clean(text: str) -> str:
    """Redacted text without the characters XML 1.0 cannot hold."""
    return _NOT_XML.sub("\ufffd", redact_secrets(text))


def _attr(text: str) -> str:
    # here: xml.sax.saxutils imports urllib.request, http.client and ssl (20 ms), which
    # every dataset run would pay for Gate alone
    from xml.sax.saxutils import quoteattr

    return quoteattr(clean(text))


def _body(text: str) -> str:
    from xml.sax.saxutils import escape  # (see _attr)

    return escape(clean(text))


def default_failed(result: Any) -> bool:
    """A trace fails when it has an error-severity finding (forbidden call, credential)."""
    return any(f.severity == "error" for f in result.findings)


def _number(value: Any) -> str:
    """A property's value, rounded as every human-facing output rounds a score."""
    return score_text(None if value is None else float(value), "")


class JunitWriter:
    """Write JUnit XML incrementally: :meth:`add_trace` per trace, :meth:`add_gate` per gate,
    then :meth:`close` (or use it as a context manager) writes ``path`` atomically.

    Args:
        path: the XML file to write.
        suite: the name prefix of the test suites (``toolscore``).
        failed: decides whether a trace's test case fails (default :func:`default_failed`).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        suite: str = "toolscore",
        failed: Callable[[Any], bool] = default_failed,
    ) -> None:
        self.path = os.fspath(path)
        self.suite = suite
        self.failed = failed
        self._spool: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")
        self._gates: list[Gate] = []
        self.traces = 0
        self.trace_failures = 0
        self.trace_errors = 0
        self.trace_skipped = 0

    def __enter__(self) -> JunitWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()

    def abort(self) -> None:
        """Drop what was added; no file is written."""
        self._spool.close()

    def add_trace(self, trace_id: str, trace_path: str | None, result: Any) -> None:
        """Add the test case of one trace's evaluation result."""
        classname = f"{self.suite}.traces"
        attrs = f"classname={_attr(classname)} name={_attr(trace_id)}"
        if trace_path:
            attrs += f" file={_attr(trace_path)}"
        out = [f'    <testcase {attrs} time="0">']
        out.append("      <properties>")
        props = [
            ("score", _number(result.score)),
            ("grade", "" if result.grade is None else str(result.grade)),
            ("calls", str(result.trace_calls_count)),
            ("required_call_recall", _number(result.required_call_recall)),
        ]
        out.extend(f"        <property name={_attr(k)} value={_attr(v)}/>" for k, v in props)
        out.append("      </properties>")
        findings = list(result.findings)
        errors = [f for f in findings if f.severity == "error"]
        input_error = getattr(result, "input_error", None)
        unreadable = int(getattr(result, "input_problems", 0) or 0)
        if input_error is not None or unreadable:
            self.trace_errors += 1
            problem = (
                str(input_error)
                if input_error is not None
                else (f"{unreadable} part(s) of the trace were unreadable and skipped")
            )
            lines = [f.message for f in getattr(result, "input_findings", ())][:_MAX_FINDINGS]
            out.append(
                f'      <error type="toolscore.input" message={_attr(problem)}>'
                f"{_body(chr(10).join([problem, *lines]))}</error>"
            )
        elif self.failed(result):
            self.trace_failures += 1
            n = len(errors)
            head = f"{n} error{'s' if n != 1 else ''}" if n else "failed"
            first = f": {errors[0].message}" if errors else ""
            reason = getattr(result, "failure", None)  # a dataset's pass criterion
            if reason:
                head, first = reason, (f"; {n} error{'s' if n != 1 else ''}" if n else "")
            listed = [f"{f.severity.upper()} {f.message}" for f in findings[:_MAX_FINDINGS]]
            if len(findings) > _MAX_FINDINGS:
                listed.append(f"... and {len(findings) - _MAX_FINDINGS} more findings")
            out.append(
                f'      <failure type="toolscore.findings" message={_attr(head + first)}>'
                f"{_body(chr(10).join(listed))}</failure>"
            )
        elif getattr(result, "skipped", None):  # a dataset's trace without a score
            self.trace_skipped += 1
            out.append(f"      <skipped message={_attr(str(result.skipped))}/>")
        score = (
            "no score"
            if result.score is None
            else f"score {result.score:.3f} (grade {result.grade})"
        )
        summary = [f"{score}, {result.trace_calls_count} calls"]
        summary.extend(f"{f.severity.upper()} {f.message}" for f in findings[:_MAX_FINDINGS])
        summary.extend(f"NOTE {note}" for note in getattr(result, "notes", ()))
        out.append(f"      <system-out>{_body(chr(10).join(summary))}</system-out>")
        out.append("    </testcase>")
        self._spool.write("\n".join(out) + "\n")
        self.traces += 1

    def add_gate(self, gate: Gate) -> None:
        """Add a gate's test case (written after the traces)."""
        self._gates.append(gate)

    def _gate_suite(self) -> list[str]:
        failures = sum(1 for g in self._gates if not g.passed)
        name = f"{self.suite}.gates"
        out = [
            f'  <testsuite name={_attr(name)} tests="{len(self._gates)}" '
            f'failures="{failures}" errors="0" skipped="0" time="0">'
        ]
        for gate in self._gates:
            head = f'    <testcase classname={_attr(name)} name={_attr(gate.name)} time="0"'
            if gate.passed:
                out.append(head + "/>")
                continue
            out.append(head + ">")
            out.append(
                f'      <failure type="toolscore.gate" message={_attr(gate.message)}>'
                f"{_body(gate.details or gate.message)}</failure>"
            )
            out.append("    </testcase>")
        out.append("  </testsuite>")
        return out

    def close(self) -> None:
        """Write the XML file (atomically) and drop the spool."""
        gate_failures = sum(1 for g in self._gates if not g.passed)
        tests = self.traces + len(self._gates)
        failures = self.trace_failures + gate_failures
        name = f"{self.suite}.traces"

        try:
            with (
                AtomicOutput(self.path) as output,
                io.TextIOWrapper(output.file, encoding="utf-8") as f,
            ):
                f.write('<?xml version="1.0" encoding="UTF-8"?>\n')
                f.write(
                    f'<testsuites name={_attr(self.suite)} tests="{tests}" '
                    f'failures="{failures}" errors="{self.trace_errors}" '
                    f'skipped="{self.trace_skipped}" time="0">\n'
                )
                f.write(
                    f'  <testsuite name={_attr(name)} tests="{self.traces}" '
                    f'failures="{self.trace_failures}" errors="{self.trace_errors}" '
                    f'skipped="{self.trace_skipped}" time="0">\n'
                )
                self._spool.seek(0)
                for chunk in iter(lambda: self._spool.read(1 << 16), ""):
                    f.write(chunk)
                f.write("  </testsuite>\n")
                if self._gates:
                    f.write("\n".join(self._gate_suite()) + "\n")
                f.write("</testsuites>\n")
        finally:
            self._spool.close()


class _Output(Protocol):
    def close(self) -> None: ...
    def abort(self) -> None: ...


def finish_ci_outputs(
    junit: JunitWriter | None, sarif: _Output | None, gates: Sequence[Gate] = ()
) -> None:
    """Write the JUnit file (with a test case for each gate) and the SARIF file; when either
    fails, the other's unfinished file is dropped, never left half-written."""
    try:
        if junit is not None:
            for gate in gates:
                junit.add_gate(gate)
            junit.close()
            junit = None
        if sarif is not None:
            sarif.close()
            sarif = None
    finally:
        if junit is not None:
            junit.abort()
        if sarif is not None:
            sarif.abort()


def write_junit(
    path: str | os.PathLike[str],
    traces: Iterable[tuple[str, str | None, Any]],
    gates: Sequence[Gate] = (),
    *,
    suite: str = "toolscore",
    failed: Callable[[Any], bool] = default_failed,
) -> None:
    """Write JUnit XML for ``(trace_id, trace_path, result)`` entries and the run's gates.

    Raises:
        OSError: the file cannot be written.
    """
    with JunitWriter(path, suite=suite, failed=failed) as writer:
        for trace_id, trace_path, result in traces:
            writer.add_trace(trace_id, trace_path, result)
        for gate in gates:
            writer.add_gate(gate)


def junit_text(traces: Iterable[tuple[str, str | None, Any]], gates: Sequence[Gate] = ()) -> str:
    """The JUnit XML as a string (for tests and small runs)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "junit.xml")
        write_junit(path, traces, gates)
        with open(path, encoding="utf-8") as f:
            return f.read()
