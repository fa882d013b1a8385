"""SARIF 2.1.0: every finding a result, for GitHub code scanning and other SARIF viewers.

Each finding becomes one ``result`` with:

- ``ruleId`` ``{check}/{kind}``, stable per kind of finding (table below; a user check's
  findings get ids of the same form);
- ``level`` ``error``, ``warning`` or ``note`` from the finding's severity;
- ``message.text``, redacted (:func:`toolscore.redact.redact_secrets`);
- a location: the trace file (a relative URI as given, else a ``file://`` URI) with
  ``region.startLine`` where the format has lines (JSON Lines), and always a logical location
  naming the call (``call 3``, ``fullyQualifiedName`` ``TRACE/calls[2]``);
- ``partialFingerprints`` from the trace id, the rule, the tool and the call index, so code
  scanning follows an alert from run to run;
- ``properties``: ``traceId``, ``tool``, ``callIndex``.

Every text built from the input (messages, trace ids, file names, tool names, rule ids of a
user check) is redacted before it is written: a key in a file name or a trace id is shown as
``[REDACTED kind: ghp_…Vb]`` in the URI and the ``fullyQualifiedName`` too. Fingerprints are
hashes of the raw values, so an alert keeps its identity; the raw values are never written.

=============================  =======  ===================================================
rule id                        level    what
=============================  =======  ===================================================
``policy/forbidden_call``      error    a call matched a forbidden-call rule
``secrets/<credential kind>``  error    a credential in a call's arguments: ``private_key``,
                                        ``anthropic_api_key``, ``openai_api_key``,
                                        ``github_token``, ``aws_access_key_id``,
                                        ``google_api_key``, ``slack_token``,
                                        ``stripe_secret_key``
``errors/failed_call``         warning  a tool call failed
``errors/retry_after_error``   warning  a failed call repeated with the same arguments
``input/<kind>``               error    unreadable input (``malformed_line``,
                                        ``malformed_call``...); ``input/incomplete`` when
                                        the trace could not be read to its end
=============================  =======  ===================================================

Results are written to the file as they are added (:class:`SarifWriter`), so a dataset of many
traces never holds them all in memory; the rule table, known only at the end, follows them.
A trace's findings are those its result keeps (up to 10,000; the JSON report has every one);
results are read by their attributes only (``findings``, ``input_error``), as in
:mod:`toolscore.reports.junit`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Iterable
from importlib import metadata
from pathlib import PurePath
from typing import IO, Any
from urllib.parse import quote

from ..outputs import AtomicOutput, user_os_error
from ..redact import PATTERNS, redact_secrets

__all__ = ["SARIF_SCHEMA", "SARIF_VERSION", "SarifWriter", "rule_for", "sarif_uri", "write_sarif"]

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)

_CREDENTIAL_NAMES = {
    "private_key": "a private key",
    "anthropic_api_key": "an Anthropic API key",
    "openai_api_key": "an OpenAI API key",
    "github_token": "a GitHub token",
    "aws_access_key_id": "an AWS access key id",
    "google_api_key": "a Google API key",
    "slack_token": "a Slack token",
    "stripe_secret_key": "a Stripe secret key",
}
_KNOWN: dict[str, tuple[str, str, str | None]] = {
    "policy/forbidden_call": (
        "ForbiddenCall",
        "The agent made a call that a forbidden-call rule forbids.",
        "8.0",
    ),
    "errors/failed_call": ("FailedCall", "A tool call failed.", None),
    "errors/retry_after_error": (
        "RetryAfterError",
        "The agent repeated a failed call with the same arguments.",
        None,
    ),
    "input/incomplete": (
        "IncompleteTrace",
        "The trace could not be read to its end; the calls before the fault were evaluated.",
        None,
    ),
}
for _kind in dict.fromkeys(kind for kind, _ in PATTERNS):
    _KNOWN[f"secrets/{_kind}"] = (
        "Credential" + "".join(p.capitalize() for p in _kind.split("_")),
        f"The agent passed {_CREDENTIAL_NAMES.get(_kind, 'a credential')} in a tool call's "
        "arguments.",
        "9.0",
    )
_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def rule_for(check: str, kind: str) -> dict[str, Any]:
    """The SARIF ``reportingDescriptor`` of the rule ``{check}/{kind}`` (a user check's name
    and kinds are redacted)."""
    check, kind = redact_secrets(check), redact_secrets(kind)
    rule_id = f"{check}/{kind}"
    name, text, security = _KNOWN.get(
        rule_id,
        (
            "".join(p.capitalize() for p in f"{check}_{kind}".replace("/", "_").split("_")),
            f"{check} check: {kind.replace('_', ' ')}.",
            None,
        ),
    )
    rule: dict[str, Any] = {
        "id": rule_id,
        "name": name,
        "shortDescription": {"text": text},
    }
    tags = ["security"] if check in ("secrets", "policy") else ["reliability"]
    props: dict[str, Any] = {"tags": tags}
    if security is not None:
        props["security-severity"] = security
    rule["properties"] = props
    return rule


def sarif_uri(path: str) -> str:
    """A trace path as a SARIF artifact URI: relative paths stay relative (resolved against
    the repository root by code scanning), absolute ones become ``file://`` URIs; a
    credential in the path is redacted."""
    if path in ("-", "<stdin>"):
        return "stdin"
    path = redact_secrets(path)
    pure = PurePath(path)
    if pure.is_absolute():
        return pure.as_uri() if os.name != "nt" else PurePath(path).as_uri()
    return quote(pure.as_posix(), safe="/")


def _fingerprint(*parts: object) -> str:
    text = "\x1f".join("" if p is None else str(p) for p in parts)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


class SarifWriter:
    """Write a SARIF 2.1.0 log incrementally: :meth:`add_trace` per trace (every finding of
    its result), then :meth:`close` (or use it as a context manager).

    Args:
        path: the file to write (written to a temporary file and renamed at the end).
        tool_version: the version named in ``tool.driver``.
    """

    def __init__(self, path: str | os.PathLike[str], *, tool_version: str | None = None) -> None:
        self.path = os.fspath(path)
        if tool_version is None:
            try:
                tool_version = metadata.version("toolscore")
            except metadata.PackageNotFoundError:  # pragma: no cover - source tree
                tool_version = "0.0.0"
        self.tool_version = tool_version

        self._output = AtomicOutput(self.path)
        self._file: IO[str] = io.TextIOWrapper(self._output.file, encoding="utf-8")
        self._file.write(
            "{"
            f'"$schema": {json.dumps(SARIF_SCHEMA)}, "version": "{SARIF_VERSION}", '
            '"runs": [{"results": [\n'
        )
        self._rules: dict[str, int] = {}
        self._rule_list: list[dict[str, Any]] = []
        self.results = 0

    def __enter__(self) -> SarifWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is None:
            self.close()
        else:
            self.abort()

    def _rule_index(self, check: str, kind: str) -> int:
        rule_id = f"{check}/{kind}"
        index = self._rules.get(rule_id)
        if index is None:
            index = self._rules[rule_id] = len(self._rule_list)
            self._rule_list.append(rule_for(check, kind))
        return index

    def _write(self, result: dict[str, Any]) -> None:
        sep = ",\n" if self.results else ""
        self._file.write(sep + json.dumps(result, ensure_ascii=False))
        self.results += 1

    def _location(
        self, trace_id: str, uri: str | None, index: int | None, line: int | None
    ) -> dict[str, Any]:
        location: dict[str, Any] = {}
        if uri is not None:
            physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
            if line is not None and line >= 1:
                physical["region"] = {"startLine": line}
            location["physicalLocation"] = physical
        if index is not None:
            location["logicalLocations"] = [
                {
                    "name": f"call {index + 1}",
                    "fullyQualifiedName": f"{redact_secrets(trace_id)}/calls[{index}]",
                    "kind": "element",
                }
            ]
        return location

    def add_trace(self, trace_id: str, trace_path: str | None, result: Any) -> None:
        """Add one result per finding of ``result`` (and one for an unreadable trace)."""
        uri = None if trace_path is None else sarif_uri(trace_path)
        seen: dict[tuple[object, ...], int] = {}
        for finding in result.findings:  # the readers' findings are among them
            loc = finding.location
            line = None if loc is None else loc.line
            index = finding.call_index
            # two credentials of one kind in one call differ by their preview, or by order
            base = (finding.check, finding.kind, finding.tool, index, line, finding.preview)
            nth = seen[base] = seen.get(base, 0) + 1
            entry: dict[str, Any] = {
                "ruleId": redact_secrets(f"{finding.check}/{finding.kind}"),
                "ruleIndex": self._rule_index(finding.check, finding.kind),
                "level": _LEVELS.get(finding.severity, "warning"),
                "message": {"text": redact_secrets(finding.message)},
                "locations": [self._location(trace_id, uri, index, line)],
                "partialFingerprints": {"toolscoreFinding/v1": _fingerprint(trace_id, *base, nth)},
                "properties": {
                    "traceId": redact_secrets(trace_id),
                    "tool": None if finding.tool is None else redact_secrets(finding.tool),
                    "callIndex": index,
                },
            }
            self._write(entry)
        error = getattr(result, "input_error", None)
        if error is not None:
            self._write(
                {
                    "ruleId": "input/incomplete",
                    "ruleIndex": self._rule_index("input", "incomplete"),
                    "level": "error",
                    "message": {"text": redact_secrets(str(error))},
                    "locations": [
                        self._location(trace_id, uri, None, getattr(error, "line", None))
                    ],
                    "partialFingerprints": {
                        "toolscoreFinding/v1": _fingerprint(trace_id, "input", "incomplete")
                    },
                    "properties": {"traceId": redact_secrets(trace_id)},
                }
            )

    def close(self) -> None:
        """Finish the log (the rule table and the tool) and move it into place (or copy it
        into a device or FIFO), as :func:`toolscore.outputs.write_report` does."""
        tool = {
            "driver": {
                "name": "toolscore",
                "version": self.tool_version,
                "rules": self._rule_list,
            }
        }
        try:
            self._file.write(
                "\n], "
                f'"tool": {json.dumps(tool, ensure_ascii=False)}, '
                '"columnKind": "unicodeCodePoints"}]}\n'
            )
            self._file.close()
            self._output.commit()
        except OSError as exc:
            self.abort()
            raise user_os_error(exc, self.path) from None
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        """Drop the unfinished log."""
        self._output.discard()


def write_sarif(
    path: str | os.PathLike[str],
    traces: Iterable[tuple[str, str | None, Any]],
    *,
    tool_version: str | None = None,
) -> None:
    """Write a SARIF 2.1.0 log of every finding of ``(trace_id, trace_path, result)`` entries.

    Raises:
        OSError: the file cannot be written.
    """
    with SarifWriter(path, tool_version=tool_version) as writer:
        for trace_id, trace_path, result in traces:
            writer.add_trace(trace_id, trace_path, result)
