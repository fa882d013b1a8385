"""The one module that imports ijson: typed push parsers and the translation of its errors.

ijson is untyped, so everything toolscore needs from it goes through :class:`ItemParser` (items
at a prefix, for JSON documents) and :func:`sample_events` (parse events of a sample, for
detection). Both push bytes into yajl's C parser and never raise ijson's own errors: a fault
becomes a :class:`~toolscore.errors.MalformedTrace` or :class:`~toolscore.errors.TruncatedTrace`
that names the byte offset (and line) where yajl stopped and says what it expected.

Only the C backend (``yajl2_c``) is accepted: the pure-Python backend is some 50 times slower.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from typing import Any

import ijson

from ..errors import InputError, MalformedTrace, TruncatedTrace
from ..limits import max_value_bytes
from ._depth import DepthGuard
from ._util import count_newlines

__all__ = ["ItemParser", "limit_error", "pull_items", "sample_events"]

try:
    _backend: Any = ijson.get_backend("yajl2_c")
except Exception as exc:  # ImportError, or ValueError when yajl2_c is unknown
    raise ImportError(
        "toolscore needs ijson's C backend (yajl2_c), and it is not available: the "
        "pure-Python ijson backend is too slow for large traces. Install an ijson wheel that "
        "ships it, e.g. `pip install --force-reinstall --only-binary=:all: ijson`, or build "
        "ijson with the yajl2 C library available."
    ) from exc

_JSONError: type[Exception] = ijson.common.JSONError
_NL_TO_SPACE = bytes.maketrans(b"\n\r", b"  ")
_ARROW_COLUMN = 40  # yajl prints the context so the byte at its offset sits under the caret

# yajl's messages, with what was expected where yajl does not say it.
_PROBLEMS = {
    b"invalid char in json text": "invalid character {char}, expected a JSON value",
    b"invalid bytes in UTF8 string": "invalid UTF-8",
    b"trailing garbage": (
        "unexpected data after the end of the JSON document, expected end of input "
        "(several JSON values, one per line, are JSON Lines)"
    ),
    b"unallowed token at this point in JSON text": "unexpected {char}, expected a JSON value",
    b"premature EOF": "the input ends inside a JSON value (truncated)",
    b"invalid string in json text": "invalid literal, expected true, false or null",
    b"probable comment found in input text, comments are not enabled": (
        "a comment, which JSON does not allow"
    ),
}


class _Sink(list[Any]):
    """A list the parser appends to (what ``ijson.sendable_list`` is, typed)."""

    send = list.append


class ItemParser:
    """Push bytes in, get the completed JSON values at an ijson ``prefix`` out.

    Tracks the byte offset and line count of what was fed so that an error names where it
    happened. After an error the parser is dead: further input is ignored.

    Args:
        source: the file name for error messages.
        prefix: the ijson prefix of the items (``""`` is the whole document).
    """

    __slots__ = ("_coro", "_dead", "_guard", "_held", "_sink", "newlines", "offset", "source")

    def __init__(self, source: str, prefix: str, *, offset: int = 0, newlines: int = 0) -> None:
        self.source = source
        self._sink = _Sink()
        self._coro: Any = _backend.items_coro(self._sink, prefix, use_float=True)
        self.offset = offset
        """The input offset of the next byte fed (bytes fed so far, from ``offset``)."""
        self.newlines = newlines
        """Newlines in the input before the next byte fed."""
        self._dead = False
        self._guard = DepthGuard(max_string=max_value_bytes())
        self._held: list[bytes] = []

    def _drain(self) -> list[Any]:
        sink = self._sink
        if not sink:
            return []
        items = sink[:]
        sink.clear()
        return items

    def feed(self, chunk: bytes) -> tuple[list[Any], InputError | None]:
        """Parse ``chunk``; returns the items completed in it and the fatal error, if any."""
        if self._dead or not chunk:
            return [], None
        error: InputError | None = None
        passed = self._guard.feed(chunk)
        held = self._held
        if passed is not None:  # parse what comes before the limit, then stop there
            self._dead = True
            start = self.offset + sum(map(len, held))
            newlines = self.newlines + sum(p.count(b"\n") for p in held)
            error = limit_error(self.source, chunk, passed, start, newlines)
            chunk = chunk[: passed[0]]
        elif self._guard.string_run >= _LONG_STRING:
            held.append(chunk)  # a long string: hand it to yajl in pieces as long as itself
            if sum(map(len, held)) < self._guard.string_run:
                return [], None
        if held:
            if held[-1] is not chunk:
                held.append(chunk)
            chunk = b"".join(held)
            held.clear()
        try:
            self._coro.send(chunk)
        except _JSONError as exc:
            self._dead = True
            error = translate(exc, self.source, chunk, self.offset, self.newlines)
        except UnicodeDecodeError as exc:  # an overlong UTF-8 form yajl let through
            self._dead = True
            error = _utf8_error(self.source, chunk, self.offset, self.newlines, exc)
        self.offset += len(chunk)
        self.newlines += count_newlines(chunk)
        return self._drain(), error

    def close(self) -> tuple[list[Any], InputError | None]:
        """End of input: the last items, and a :class:`TruncatedTrace` if a value is open."""
        if self._dead:
            return [], None
        items: list[Any] = []
        error: InputError | None = None
        if self._held:
            chunk = b"".join(self._held)
            self._held.clear()
            try:
                self._coro.send(chunk)
            except _JSONError as exc:
                self._dead = True
                error = translate(exc, self.source, chunk, self.offset, self.newlines)
                return self._drain(), error
            self.offset += len(chunk)
            self.newlines += chunk.count(b"\n")
            items = self._drain()
        self._dead = True
        try:
            self._coro.close()
        except _JSONError as exc:
            error = translate(exc, self.source, b"", self.offset, self.newlines, at_end=True)
        return items + self._drain(), error


class _Feed:
    """The file ijson's pull generator reads: ``head`` first, then ``read(n)``; remembers the
    chunk it handed out last, so errors and batches can be tied to it."""

    __slots__ = (
        "_guard",
        "_head",
        "_read",
        "chunk",
        "count",
        "fault",
        "newlines",
        "source",
        "start",
    )

    def __init__(self, head: bytes, read: Callable[[int], bytes], source: str) -> None:
        self._head: bytes | None = head
        self._read = read
        self.source = source
        self.chunk = b""
        self.start = 0
        self.newlines = 0
        self.count = 0
        self._guard = DepthGuard(max_string=max_value_bytes())
        self.fault: InputError | None = None
        """Set when the input passed a limit: the parser was given the bytes before it."""

    def read(self, size: int) -> bytes:
        if size == 0:
            return b""
        self.start += len(self.chunk)
        self.newlines += count_newlines(self.chunk)
        if self.fault is not None:
            data = b""
        elif self._head is not None:
            data, self._head = self._head, None
        else:
            data = self._read(size)
        passed = self._guard.feed(data)
        if passed is not None:
            self.fault = limit_error(self.source, data, passed, self.start, self.newlines)
            data = data[: passed[0]]
        elif self._guard.string_run >= _LONG_STRING and data:
            data = self._more(data, size)
        self.chunk = data
        self.count += 1
        return data

    def _more(self, data: bytes, size: int) -> bytes:
        return _more(self, data, size)


_LONG_STRING = 1 << 20
"""A string this long that spans chunks is handed to yajl in chunks as long as itself: yajl
lexes a token that spans chunks again from its start each time (quadratic otherwise)."""


def _more(feed: _Feed, data: bytes, size: int) -> bytes:
    pieces = [data]
    total = len(data)
    guard = feed._guard
    while guard.string_run >= _LONG_STRING and total < guard.string_run:
        more = feed._read(size)
        if not more:
            break
        passed = guard.feed(more)
        if passed is not None:
            start = feed.start + total
            newlines = feed.newlines + sum(p.count(b"\n") for p in pieces)
            feed.fault = limit_error(feed.source, more, passed, start, newlines)
            pieces.append(more[: passed[0]])
            break
        pieces.append(more)
        total += len(more)
    return b"".join(pieces)


def pull_items(
    head: bytes, read: Callable[[int], bytes], size: int, source: str, prefix: str
) -> Iterator[tuple[list[Any], InputError | None]]:
    """The items at ``prefix`` of a document that starts with ``head`` and goes on with what
    ``read`` returns: one list per chunk read, the last paired with the fatal error if any.

    This is the pull twin of :class:`ItemParser` and some 2.5 times faster (yajl's pipeline
    stays in C instead of calling ``send`` per event), but ``read`` must not block waiting
    for data: use it for regular files only, never for a pipe that is still being written.
    """
    feed = _Feed(head, read, source)
    items: list[Any] = []
    seen = 1
    try:
        for obj in _backend.items(feed, prefix, use_float=True, buf_size=size):
            if feed.count != seen:
                seen = feed.count
                if items:
                    yield items, None
                    items = []
            items.append(obj)
    except UnicodeDecodeError as exc:  # an overlong UTF-8 form yajl let through
        yield items, _utf8_error(source, feed.chunk, feed.start, feed.newlines, exc)
        return
    except _JSONError as exc:
        if feed.fault is not None:
            yield items, feed.fault
            return
        at_end = not feed.chunk
        yield items, translate(exc, source, feed.chunk, feed.start, feed.newlines, at_end=at_end)
        return
    yield items, feed.fault


def sample_events(data: bytes) -> tuple[list[tuple[str, Any]], bytes | None]:
    """The ijson parse events of ``data`` (a prefix of a document), for format detection.

    Returns:
        The events read before the sample ended or a fault was met, and yajl's error text
        (``None`` when ``data`` is one complete JSON document; ``b"premature EOF"`` when it is
        a prefix of one).
    """
    sink = _Sink()
    coro: Any = _backend.basic_parse_coro(sink, use_float=True)
    try:
        coro.send(data)
        coro.close()
    except _JSONError as exc:
        return list(sink), _message_bytes(exc).split(b"\n", 1)[0].split(b": ", 1)[-1]
    except UnicodeDecodeError:  # yajl let an overlong UTF-8 form through to the decoder
        return list(sink), b"invalid bytes in UTF8 string"
    return list(sink), None


def _message_bytes(exc: Exception) -> bytes:
    """yajl's error text as bytes: ijson hands it as ``str``, or as a ``repr`` of the bytes
    when it is not valid UTF-8 (the context snippet can cut a character)."""
    text = str(exc)
    if text[:2] in ("b'", 'b"'):
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            return text.encode("utf-8", "replace")
        if isinstance(value, bytes):
            return value
    return text.encode("utf-8", "replace")


def _locate(context: bytes, chunk: bytes) -> int | None:
    """Where in ``chunk`` yajl stopped (its bytes-consumed count), read back from the context
    line it printed: the chunk's bytes around that point, shifted so it sits under the caret.
    ``None`` when the context cannot be matched to the chunk."""
    n = len(chunk)
    norm = chunk.translate(_NL_TO_SPACE)
    for consumed in range(min(30, n + 1)):
        if context == b" " * (_ARROW_COLUMN - consumed) + norm[: min(n, consumed + 30)]:
            return consumed
    pad = b" " * (_ARROW_COLUMN - 30)
    if not context.startswith(pad):
        return None
    snippet = context[len(pad) :]
    if not snippet:
        return None
    start = norm.find(snippet)
    while start >= 0:
        consumed = start + 30
        if consumed <= n and min(n, consumed + 30) - start == len(snippet):
            return consumed
        start = norm.find(snippet, start + 1)
    return None


def _utf8_error(
    source: str, chunk: bytes, start: int, newlines: int, exc: UnicodeDecodeError
) -> InputError:
    """Invalid UTF-8 that yajl accepted and Python's decoder refused, in ``chunk``."""
    return MalformedTrace(
        source,
        f"invalid UTF-8 in a string (in the chunk starting at byte {start}): {exc.reason}",
        line=newlines + 1,
        offset=start,
    )


def limit_error(
    source: str, chunk: bytes, passed: tuple[int, str], chunk_start: int, newlines_before: int
) -> InputError:
    """The error for a document that passes a limit (:class:`DepthGuard`) at ``passed``."""
    where, problem = passed
    offset = chunk_start + where
    return MalformedTrace(
        source,
        f"{problem} (byte {offset}); see the README's Limits",
        line=newlines_before + chunk.count(b"\n", 0, where) + 1,
        offset=offset,
    )


def translate(
    exc: Exception,
    source: str,
    chunk: bytes,
    chunk_start: int,
    newlines_before: int,
    *,
    at_end: bool = False,
) -> InputError:
    """Turn an ijson/yajl error met while parsing ``chunk`` into an :class:`InputError`.

    Args:
        exc: the ijson error.
        source: the file name.
        chunk: the bytes whose parsing failed (``b""`` at end of input).
        chunk_start: the offset of ``chunk`` in the input.
        newlines_before: newlines in the input before ``chunk``.
        at_end: the error came from finishing the parse (end of input).
    """
    lines = _message_bytes(exc).split(b"\n")
    head = lines[0]
    kind, _, what = head.partition(b": ")
    what = what.rstrip(b".") if what else head
    if at_end or what == b"premature EOF":
        end = chunk_start + len(chunk)
        return TruncatedTrace(
            source,
            f"the input ends inside a JSON value at byte {end} (truncated), expected the rest "
            "of the document",
            line=newlines_before + chunk.count(b"\n") + 1,
            offset=end,
        )
    consumed = _locate(lines[1], chunk) if len(lines) > 1 else None
    if consumed is None:
        where, char = 0, ""
    else:
        # yajl has consumed the offending byte (lexical errors) or token (parse errors):
        # the byte before its count is the last one it looked at.
        where = max(consumed - 1, 0)
        char = repr(chunk[where : where + 1].decode("latin-1")) if where < len(chunk) else ""
    template = _PROBLEMS.get(what)
    if template is None:
        problem = what.decode("utf-8", "replace")
        if kind == b"lexical error":
            problem = f"invalid JSON: {problem}"
    else:
        # without the byte: "invalid character, expected ...", "unexpected token, ..."
        problem = (
            template.format(char=char)
            if char
            else template.replace("character {char}", "character").replace("{char}", "token")
        )
    offset = chunk_start + where
    if consumed is None:
        problem += f" (somewhere in the chunk starting at byte {offset})"
    else:
        problem += f" (byte {offset})"
    return MalformedTrace(
        source, problem, line=newlines_before + chunk.count(b"\n", 0, where) + 1, offset=offset
    )
