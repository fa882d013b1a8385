"""Terminal- and log-safe text: every piece of data a person reads goes through :func:`visible`.

A trace is written by whoever wrote the agent, or by whatever the agent read. Its tool names,
error texts and arguments reach the console, the ``watch`` lines, the Markdown and HTML reports
and the GitHub job summary; written as they are, they could

- drive the terminal: ``ESC]0;...BEL`` sets the window title, ``ESC[2J`` clears the screen,
  OSC 8 makes a link, NUL and backspace hide text;
- reorder what is shown: the bidi overrides and isolates (U+202A-U+202E, U+2066-U+2069) make
  ``exe.txt`` read as ``txt.exe`` (the "Trojan Source" trick);
- start a line of their own: a newline in a tool name followed by ``::error title=x::...``
  is a GitHub Actions *workflow command*, which the runner executes when it sees it at the start
  of a log line (after spaces), as it does ``##[...]`` anywhere in a line;
- break the output: a lone surrogate (``"\\ud800"`` in JSON) cannot be encoded to UTF-8.

:func:`visible` shows each such character as an escape a person can read (``\\x1b``,
``\\u202e``, ``\\n``, ``\\x00``), so nothing is lost and nothing acts, and it defuses the two
workflow-command forms (``::`` at the start or after a space, ``##[`` anywhere). It is applied
to data (tool names, messages, paths, quoted text), never to a report's own layout (its
newlines, its Markdown or HTML). Backslashes are left as they are: a path ``C:\\x`` stays
readable.

:func:`shown` is :func:`~toolscore.redact.redact_secrets` then :func:`visible`: what every
human-facing renderer applies to a piece of data.
"""

from __future__ import annotations

import re

from .redact import redact_secrets

__all__ = ["UNSAFE", "shown", "visible"]

UNSAFE = re.compile(
    "[\x00-\x1f\x7f-\x9f"  # C0 controls (newline, tab, ESC, NUL), DEL, C1 controls (CSI, OSC)
    "\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"  # bidi marks and overrides, zero
    # widths, line and paragraph separators, invisible operators, isolates, BOM
    "\ud800-\udfff"  # lone surrogates (from JSON's \\ud800 or a surrogate-escaped byte)
    "]"
)
"""The characters :func:`visible` escapes."""

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# a workflow command: "::name ...::" at the start of a log line (the runner strips leading
# whitespace first), or the older "##[name]" form, which the runner finds anywhere in a line.
# "::" after whitespace is defused too: a console that wraps long lines (a terminal, or rich
# forced to act as one in CI) breaks them at spaces.
_COMMAND_START = re.compile(r"(^|\s):(?=:)")
_COMMAND_V1 = re.compile(r"#(?=#\[)")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str) -> str:
    """``text`` with every control, bidi, invisible or unencodable character shown as an
    escape, and no workflow command possible.

    ``"a\\x1b[2Jb"`` -> ``"a\\\\x1b[2Jb"``; ``"x\\n::error::y"`` -> ``"x\\\\n::error::y"`` (one
    line); ``"::error::y"`` -> ``"\\\\x3a:error::y"``; ``"##[error]y"`` -> ``"\\\\x23#[error]y"``.
    Plain text (letters of any script, emoji, punctuation) comes back unchanged, the same object.

    Args:
        text: data to show a person (a tool name, an error text, a path).

    Returns:
        One line of text safe to print on a terminal, in a CI log, or to put in a report.
    """
    if UNSAFE.search(text) is not None:
        text = UNSAFE.sub(_escape, text)
    if ":" in text:
        text = _COMMAND_START.sub(r"\1\\x3a", text)
    if "##[" in text:
        text = _COMMAND_V1.sub(r"\\x23", text)
    return text


def shown(text: str) -> str:
    """``text`` as a report shows it: credentials redacted, then :func:`visible`."""
    return visible(redact_secrets(text))
