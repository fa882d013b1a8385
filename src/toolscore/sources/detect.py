"""Format detection: from the first bytes of a trace, its layout, dialect and ijson prefix.

How to add a dialect
--------------------
1. Write ``sources/<name>.py`` exposing ``DIALECT`` (a :class:`~._base.Dialect` subclass whose
   ``name`` is ``"<name>"``) and ``sniff(shape: Shape) -> str | None``. ``sniff`` looks at the
   :class:`Shape` of the sample and returns the ijson prefix the items are read at (``""`` for
   the whole document, ``"item"``, ``"messages.item"``, ...; for ``shape.layout == "jsonl"``
   return ``""``: each line is an item) or ``None`` when the shape is not this format's. It
   must be cheap and must not raise on odd shapes. Claim only what is clearly yours: a later
   dialect gets the sample when every earlier one said ``None``.
2. Put ``"<name>"`` in :data:`DETECTION_ORDER`, before any dialect that would also claim its
   shapes. A name whose module does not exist is skipped, so the tuple may list dialects that
   are still being written.
3. That is all: ``format="<name>"`` and ``--format <name>`` then work (the format list is
   :data:`FORMATS`), and auto-detection tries ``sniff`` in order.

How detection works
-------------------
The sample (at least :data:`SAMPLE_SIZE` bytes, or the whole input, or the first complete
line) is parsed, never the whole input. When its first non-blank line is one complete JSON
value and the input goes on past it, the input is JSON Lines and the shape describes the
first lines; otherwise it is one JSON document and the shape is built from yajl's parse events
over the sample, up to where the sample ends. If no dialect recognises the shape,
:class:`~toolscore.errors.FormatNotDetected` says what the input looked like and lists the
formats (the driver then reads a larger sample, up to :data:`MAX_SAMPLE`, and tries again).
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Literal

from ..errors import FormatNotDetected, UsageError
from ..redact import redact_quote
from ._base import Dialect
from ._depth import DepthGuard
from ._ijson import sample_events
from ._util import loads_lenient

__all__ = [
    "DETECTION_ORDER",
    "FORMATS",
    "MAX_SAMPLE",
    "SAMPLE_SIZE",
    "Detection",
    "Shape",
    "analyse",
    "check_format",
    "describe",
    "detect",
    "dialect_class",
    "line_messages",
    "not_detected_problem",
    "structural_prefix",
]

DETECTION_ORDER: tuple[str, ...] = (
    "mcp",
    "otel",
    "gemini",
    "langchain",
    "anthropic",
    "openai",
    "custom",
)
"""Dialect modules in the order auto-detection asks them; missing modules are skipped."""

SAMPLE_SIZE = 64 * 1024
"""Bytes of a JSON document looked at before detection is tried."""
MAX_SAMPLE = 16 * 1024 * 1024
"""Detection gives up (or decides on what it has) past this many bytes."""

_SAMPLE_LINES = 50
_WALK_LIMIT = 20_000
_BOM = b"\xef\xbb\xbf"


def _exists(name: str) -> bool:
    return importlib.util.find_spec(f"{__package__}.{name}") is not None


FORMATS: tuple[str, ...] = (*(name for name in DETECTION_ORDER if _exists(name)), "jsonl")
"""Every ``format`` value besides ``auto``: the dialects in detection order, then ``jsonl``
(Toolscore's custom call per line)."""

_MODULES: dict[str, ModuleType | None] = {}


def _module(name: str) -> ModuleType | None:
    """The dialect module ``sources.<name>``, imported on first use; ``None`` if absent."""
    if name not in _MODULES:
        qualified = f"{__package__}.{name}"
        try:
            _MODULES[name] = importlib.import_module(qualified)
        except ModuleNotFoundError as exc:
            if exc.name != qualified:
                raise
            _MODULES[name] = None
    return _MODULES[name]


def dialect_class(name: str) -> type[Dialect]:
    """The :class:`Dialect` subclass of format ``name`` (``jsonl`` is ``custom``).

    Raises:
        UsageError: ``name`` is not a known format.
    """
    name = "custom" if name == "jsonl" else name
    module = _module(name) if name in DETECTION_ORDER else None
    if module is None:
        raise UsageError(_unknown(name))
    cls: type[Dialect] = module.DIALECT
    return cls


def _unknown(name: str) -> str:
    return f"unknown trace format {name!r}; known formats: auto, {', '.join(FORMATS)}"


def check_format(format: str) -> str:
    """Normalise a ``format`` value (case-insensitive).

    Raises:
        UsageError: an unknown name, listing the known ones.
    """
    name = format.strip().lower() if isinstance(format, str) else ""
    if name != "auto" and name not in FORMATS:
        raise UsageError(_unknown(str(format)))
    return name


@dataclass(frozen=True, eq=False)
class Shape:
    """What the sample of an input looks like, for the dialects' ``sniff`` hooks.

    Paths are ijson prefixes: keys joined with dots, ``item`` for an array's elements, ``""``
    for the document (or, in JSON Lines, for a line). Everything here describes a *prefix*
    of the input, so containers in ``sample`` may be cut short at the end.
    """

    layout: Literal["json", "jsonl"]
    """One JSON document, or one JSON value per line."""
    top: Literal["object", "array", "scalar"]
    """The type of the document (JSON) or of the first line (JSON Lines)."""
    keys: tuple[str, ...]
    """The document's top-level keys in order (JSON), or the first line's (JSON Lines)."""
    item_keys: tuple[str, ...]
    """The keys of the first element when the document (or first line) is an array of
    objects."""
    sample: Any
    """The parsed prefix of the document, or the first line's value (JSON Lines)."""
    lines: tuple[Any, ...] = ()
    """JSON Lines: the values of the first complete lines (up to 50; bad lines left out)."""
    paths: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """``prefix -> keys`` of the first object met at each prefix, e.g. ``"messages.item"``
    -> the first message's keys, ``"choices.item.message"``, ``"item.content.item"``."""
    values: Mapping[str, Any] = field(default_factory=dict)
    """``"prefix.key" -> value`` of the first scalar met at each path, e.g.
    ``"messages.item.role"``, ``"jsonrpc"``, ``"item.type"`` (strings cut to 200 chars)."""
    complete: bool = False
    """The sample holds the whole document (JSON) or the whole input (JSON Lines)."""

    def roots(self) -> tuple[Any, ...]:
        """The values items are read from: the lines (JSON Lines) or the document."""
        return self.lines if self.layout == "jsonl" else (self.sample,)

    def items(self, prefix: str) -> list[Any]:
        """The sampled values at ijson ``prefix`` (relative to each line in JSON Lines), in
        order: ``items("messages.item")`` is the sampled messages."""
        current = list(self.roots())
        for part in prefix.split(".") if prefix else ():
            found: list[Any] = []
            for value in current:
                if isinstance(value, list) and part == "item":
                    found.extend(value)
                elif isinstance(value, dict) and part in value:
                    found.append(value[part])
            current = found
        return current

    def first(self, prefix: str) -> Any:
        """The first sampled value at ``prefix``, or ``None``."""
        found = self.items(prefix)
        return found[0] if found else None


@dataclass(frozen=True)
class Detection:
    """How an input will be read."""

    layout: Literal["json", "jsonl"]
    dialect: str
    """The dialect module's name."""
    prefix: str
    """The ijson prefix of the items (JSON); ``""`` for JSON Lines."""
    description: str
    """What the start of the input looks like, for error messages."""
    shape: Shape | None = None


def line_messages(lines: tuple[Any, ...]) -> list[Any]:
    """The messages of sampled JSON Lines: each line a message, a list of messages, or a
    ``{"messages": [...]}`` container."""
    messages: list[Any] = []
    for line in lines:
        if isinstance(line, list):
            messages.extend(line)
        elif isinstance(line, dict):
            inner = line.get("messages")
            if isinstance(inner, list):
                messages.extend(inner)
            else:
                messages.append(line)
    return messages


# ---------------------------------------------------------------------------------------------
# Building the shape


def _build(events: list[tuple[str, Any]]) -> Any:
    """The (possibly cut short) value the parse events describe."""
    root: Any = None
    stack: list[Any] = []
    keys: list[Any] = []
    for event, value in events:
        if event == "map_key":
            keys[-1] = value
            continue
        if event in ("end_map", "end_array"):
            stack.pop()
            keys.pop()
            if not stack:
                break
            continue
        node: Any = {} if event == "start_map" else [] if event == "start_array" else value
        if stack:
            parent = stack[-1]
            if isinstance(parent, list):
                parent.append(node)
            else:
                parent[keys[-1]] = node
        else:
            root = node
        if event in ("start_map", "start_array"):
            stack.append(node)
            keys.append(None)
        elif not stack:
            break
    return root


def _index(roots: tuple[Any, ...]) -> tuple[dict[str, tuple[str, ...]], dict[str, Any]]:
    """First keys per prefix and first scalar per path, over at most ``_WALK_LIMIT`` nodes."""
    paths: dict[str, tuple[str, ...]] = {}
    values: dict[str, Any] = {}
    todo: list[tuple[str, Any]] = [("", root) for root in reversed(roots)]
    seen = 0
    while todo and seen < _WALK_LIMIT:
        prefix, value = todo.pop()
        seen += 1
        if isinstance(value, dict):
            if prefix not in paths:
                paths[prefix] = tuple(value)
            children = []
            for key, child in value.items():
                path = f"{prefix}.{key}" if prefix else str(key)
                if isinstance(child, (dict, list)):
                    children.append((path, child))
                elif path not in values:
                    values[path] = child[:200] if isinstance(child, str) else child
            todo.extend(reversed(children))
        elif isinstance(value, list):
            path = f"{prefix}.item" if prefix else "item"
            todo.extend((path, child) for child in reversed(value[:100]))
    return paths, values


def _kind(value: Any) -> Literal["object", "array", "scalar"]:
    if isinstance(value, dict):
        return "object"
    return "array" if isinstance(value, list) else "scalar"


def _item_keys(value: Any) -> tuple[str, ...]:
    if isinstance(value, list) and value and isinstance(value[0], dict):
        return tuple(value[0])
    return ()


def _shape(
    layout: Literal["json", "jsonl"], sample: Any, lines: tuple[Any, ...], done: bool
) -> Shape:
    paths, values = _index(lines if layout == "jsonl" else (sample,))
    return Shape(
        layout=layout,
        top=_kind(sample),
        keys=tuple(sample) if isinstance(sample, dict) else (),
        item_keys=_item_keys(sample),
        sample=sample,
        lines=lines,
        paths=paths,
        values=values,
        complete=done,
    )


def _parse(line: bytes) -> tuple[bool, Any]:
    try:
        return True, loads_lenient(line)
    except ValueError:
        return False, None


def _good_lines(data: bytes, final: bool) -> list[Any]:
    """The JSON object/array values among the first complete lines of ``data``."""
    raw = data.split(b"\n")
    if not final:
        raw.pop()  # the last piece may be cut short
    good: list[Any] = []
    for line in raw[: _SAMPLE_LINES * 4]:
        if not line.strip():
            continue
        ok, value = _parse(line)
        if ok and isinstance(value, (dict, list)):
            good.append(value)
            if len(good) >= _SAMPLE_LINES:
                break
    return good


def analyse(head: bytes, *, final: bool) -> Shape | None:
    """The :class:`Shape` of ``head``, the first bytes of an input.

    Args:
        head: the sample.
        final: ``head`` is the whole input.

    Returns:
        The shape, or ``None`` when ``head`` is blank or does not start like JSON.
    """
    data = head[len(_BOM) :] if head.startswith(_BOM) else head
    passed = DepthGuard().feed(data)
    if passed is not None:  # judge by what comes before; the reader reports the depth
        data = data[: passed[0]]
        final = False
    start = len(data) - len(data.lstrip())
    if start == len(data):
        return None
    nl = data.find(b"\n", start)
    if nl >= 0 or final:
        ok, value = _parse(data[start:nl] if nl >= 0 else data[start:])
        if ok:
            rest = data[nl + 1 :] if nl >= 0 else b""
            if rest.strip() or not final:
                lines = (value, *_good_lines(rest, final)[: _SAMPLE_LINES - 1])
                return _shape("jsonl", value, lines, final)
            return _shape("json", value, (), True)
    if nl >= 0:
        # A first line that is a valid start of a JSON value ("[", '{"calls": [') begins a
        # document; one that is broken in itself is a bad first line of JSON Lines.
        _, line_error = sample_events(data[start:nl])
        if line_error is not None and not line_error.startswith(b"premature EOF"):
            good = _good_lines(data[nl + 1 :], final)
            if good:
                return _shape("jsonl", good[0], tuple(good), final)
    events, error = sample_events(data[start:])
    if not events:
        return None
    return _shape("json", _build(events), (), error is None)


# ---------------------------------------------------------------------------------------------
# Describing and deciding


def _keys_text(keys: list[str]) -> str:
    shown = ", ".join(f'"{key}"' for key in keys[:8])
    return shown if len(keys) <= 8 else f"{shown}, … ({len(keys)} keys)"


def _value_text(value: Any, *, nested: bool = False, depth: int = 0) -> str:
    if depth > 4:
        return "…"
    what = "an object" if nested else "a JSON object"
    if isinstance(value, dict):
        return f"{what} with keys {_keys_text(list(value))}" if value else f"an empty {what[2:]}"
    if isinstance(value, list):
        if not value:
            return "an empty array" if nested else "an empty JSON array"
        return f"{'an array' if nested else 'a JSON array'} whose first item is " + _value_text(
            value[0], nested=True, depth=depth + 1
        )
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    return "a string" if isinstance(value, str) else "a number"


def describe(shape: Shape | None, head: bytes) -> str:
    """What the start of an input looks like, in a few words (for error messages)."""
    if shape is None:
        text = head.lstrip()[:400]
        if not text:
            return "nothing (it is empty)"
        # redacted before it is cut, so a key is recognised whole and never shown in part
        return f"bytes that are not JSON ({redact_quote(text.decode('utf-8', 'replace'), 40)!r})"
    if shape.layout == "jsonl":
        return f"JSON Lines whose first line is {_value_text(shape.sample, nested=True)}"
    return _value_text(shape.sample)


def not_detected_problem(description: str, *, read_as: str | None = None) -> str:
    """The text of a :class:`FormatNotDetected` error.

    Args:
        description: :func:`describe` of the input.
        read_as: ``"<layout>/<dialect>"`` when the input was read to the end as that format
            and gave no tool call.
    """
    why = f"reading it as {read_as} found no tool call, and " if read_as else ""
    return (
        f"could not detect the trace format: {why}the input starts with {description}; "
        f"pass the format explicitly (--format / format=) as one of: {', '.join(FORMATS)}"
    )


_CONTAINERS = (
    ("messages", "messages.item"),
    ("choices", "choices.item"),
    ("calls", "calls.item"),
    ("tool_calls", "tool_calls.item"),
)


def structural_prefix(shape: Shape) -> str:
    """The prefix an explicit format reads at when its ``sniff`` does not recognise the shape:
    an array's items, a known container key's items, else the whole document."""
    if shape.layout == "jsonl":
        return ""
    if shape.top == "array":
        return "item"
    if shape.top == "object":
        for key, prefix in _CONTAINERS:
            if isinstance(shape.sample.get(key), list):
                return prefix
    return ""


def detect(
    head: bytes, *, format: str = "auto", final: bool = False, source: str = "<stream>"
) -> Detection:
    """Decide how to read an input from its first bytes.

    Args:
        head: the first bytes (see :data:`SAMPLE_SIZE`).
        format: ``auto``, or a name from :data:`FORMATS` (skips the dialect guess; the layout
            and prefix still come from the structure).
        final: ``head`` is the whole input.
        source: the file name for errors.

    Raises:
        UsageError: an unknown format.
        FormatNotDetected: ``auto`` and no dialect recognises the input.
    """
    name = check_format(format)
    shape = analyse(head, final=final)
    description = describe(shape, head)
    if name == "jsonl":
        return Detection("jsonl", "custom", "", description, shape)
    if name != "auto":
        dialect_class(name)
        if shape is None:
            return Detection("jsonl", name, "", description, None)
        module = _module(name)
        prefix = module.sniff(shape) if module is not None else None
        if prefix is None or shape.layout == "jsonl":
            prefix = structural_prefix(shape)
        return Detection(shape.layout, name, prefix, description, shape)
    if shape is not None:
        for candidate in DETECTION_ORDER:
            module = _module(candidate)
            if module is None:
                continue
            prefix = module.sniff(shape)
            if prefix is not None:
                return Detection(
                    shape.layout,
                    candidate,
                    "" if shape.layout == "jsonl" else prefix,
                    description,
                    shape,
                )
        if final and shape.layout == "json" and shape.top == "array" and shape.sample == []:
            # ``[]``: an explicit trace of zero calls, in any array format
            return Detection("json", "custom", "item", description, shape)
    raise FormatNotDetected(source, not_detected_problem(description))
