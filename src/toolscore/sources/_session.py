"""The I/O-free core of reading an input: :class:`Session` holds the first bytes until the
format can be decided, then hands every chunk to the decoder :func:`open_decoder` chose (see
:mod:`toolscore.sources._drive`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import orjson

from ..calls import Batch, Finding, Location
from ..errors import FormatNotDetected, InputError
from ..limits import max_value_bytes
from ._array import ArrayDecoder, suits
from ._base import Decoder
from ._document import JsonDecoder
from ._traceids import TraceIds
from ._util import input_finding, located_finding
from .detect import MAX_SAMPLE, SAMPLE_SIZE, check_format, detect, dialect_class
from .jsonl import JsonlDecoder

_BOM = b"\xef\xbb\xbf"


def open_decoder(
    format: str, head: bytes, source_name: str, *, final: bool = False, lines_before: int = 0
) -> Decoder:
    """A decoder for an input that starts with ``head`` (detecting the format unless given).

    The decoder has not consumed ``head``: feed it first.

    Args:
        format: ``auto`` or a name from :data:`~.detect.FORMATS`.
        head: the first bytes of the input.
        source_name: the file name for locations and errors.
        final: ``head`` is the whole input.
        lines_before: lines of the input before ``head`` (skipped ones: JSON Lines numbers
            its lines after them).

    Raises:
        UsageError: an unknown format.
        FormatNotDetected: ``auto`` and no format fits ``head``.
    """
    found = detect(head, format=format, final=final, source=source_name)
    dialect = dialect_class(found.dialect)(source_name)
    decoder: JsonlDecoder | JsonDecoder | ArrayDecoder
    if found.layout == "jsonl":
        decoder = JsonlDecoder(dialect, source_name, found.description, lines_before=lines_before)
    elif suits(found.prefix, head.removeprefix(_BOM)):
        decoder = ArrayDecoder(dialect, found.prefix, source_name, found.description)
    else:
        decoder = JsonDecoder(dialect, found.prefix, source_name, found.description)
    # A format the user named may rightly hold no call (a conversation without tool use);
    # only a guessed one must never come back empty without a word.
    decoder.empty_is_error = format == "auto"
    if found.shape is not None and found.shape.top == "array" and found.shape.sample == []:
        dialect.replied = True  # ``[]`` says the trace made no call
    return decoder


class Session:
    """One input read start to end: buffers the head until the format is decided.

    The head is decided on when the first non-blank line is complete JSON (JSON Lines), or
    :data:`SAMPLE_SIZE` bytes and a newline have arrived, or at the end of input; if no format
    fits, a larger sample is tried, up to :data:`MAX_SAMPLE`. A first line that is one item
    (a call) is awaited to its end, up to the value limit (:func:`~toolscore.limits.
    max_value_bytes`): past it, the line is an input finding (its file, line and byte
    offset), skipped to its newline without being held, and the format is decided on the
    lines after it.

    Args:
        format: ``auto`` or a format name (checked now).
        source: the file name.

    Raises:
        UsageError: an unknown format.
    """

    def __init__(
        self,
        format: str,
        source: str,
        *,
        pull: tuple[Callable[[int], bytes], int] | None = None,
        one_trace: bool = True,
    ) -> None:
        self.format = check_format(format)
        self.source = source
        self.ids = TraceIds() if one_trace else None
        """Says where a second trace id shows (None: the input is many traces by design,
        as for a watch with ``--trace-key``)."""
        self.decoder: Decoder | None = None
        self._pull = pull
        self.pulling: Iterator[Batch] | None = None
        """Set when a JSON document is read by pulling (``pull`` given): the driver takes
        its batches from here instead of calling :meth:`feed`."""
        self._failed = False
        self._limit = max_value_bytes()
        self._new_head()
        self._skipping = False
        """A first line over the value limit is being skipped up to its newline."""
        self._lines_before = 0
        """Lines skipped before the head (each one an input finding)."""
        self._bytes_before = 0
        """Bytes of the input before the head."""

    def feed(self, chunk: bytes) -> Batch:
        """Decode ``chunk`` (or hold it while the format is undecided)."""
        if self.decoder is not None:
            return self.decoder.feed(chunk)
        if self._failed or not chunk:
            return Batch()
        skipped: list[Finding] = []
        while chunk:
            if self._skipping:
                nl = chunk.find(b"\n")
                self._bytes_before += len(chunk) if nl < 0 else nl + 1
                if nl < 0:
                    break
                self._skipping = False
                self._lines_before += 1
                chunk = chunk[nl + 1 :]
                continue
            self._head += chunk
            if self._ready():
                out = self._open(final=False)
                out.findings[:0] = skipped
                return out
            if not self._over:
                break
            finding, chunk = self._skip_first()
            skipped.append(finding)
        return Batch(findings=skipped)

    def _skip_first(self) -> tuple[Finding, bytes]:
        """The first line is one item longer than the value limit: an input finding naming
        it; what was held of it is dropped, the rest of it skipped as it arrives
        (:meth:`feed`). Returns the finding and the bytes held after the line's newline."""
        head, start, end = self._head, self._start, self._over_end
        line = self._lines_before + head.count(b"\n", 0, start) + 1
        offset = self._bytes_before + start
        size = f"{end - start:,}" if end >= 0 else f"more than {len(head) - start:,}"
        finding = located_finding(
            "too_large",
            f"the line starting at byte {offset:,} is {size} bytes, over the value limit of "
            f"{self._limit:,} bytes (--max-value-bytes); the line is skipped",
            Location(self.source, line, offset),
        )
        rest = bytes(head[end + 1 :]) if end >= 0 else b""
        self._bytes_before += len(head) - len(rest)
        self._lines_before = line if end >= 0 else line - 1  # (else counted at its newline)
        self._skipping = end < 0
        self._new_head()
        return finding, rest

    def _new_head(self) -> None:
        """Hold a head from nothing (at the start, and after a skipped first line)."""
        self._head = bytearray()
        self._target = SAMPLE_SIZE
        self._scanned = 0
        self._start = -1
        self._first_nl = -1
        self._line_ok = False
        self._retry_from = 0
        self._whole_item: bool | None = None
        self._over = False
        """The first line is one item longer than the value limit (:meth:`_skip_first`)."""
        self._over_end = -1
        """Where that line ends (its newline), when it is complete in the head."""

    def close(self) -> Batch:
        """End of input: decide on what was read, and finish."""
        if self.decoder is not None:
            return self.decoder.close()
        if self._failed:
            return Batch()
        if not self._head.strip():
            self._failed = True
            if self._lines_before or self._skipping:
                return Batch()  # (every line was skipped, each one a finding already)
            return Batch(findings=[_empty(self.source)])
        first = self._open(final=True)
        if first.error is not None or self.decoder is None:
            return first
        last = self.decoder.close() if self.pulling is None else _merge(self.pulling)
        first.calls += last.calls
        first.done += last.done
        first.findings += last.findings
        first.error = last.error
        return first

    def _ready(self) -> bool:
        head = self._head
        if self._first_nl < 0:
            # where the JSON starts (found once: lstrip would copy the head at each chunk)
            if self._start < 0:
                found = _NON_BLANK.search(head)
                if found is not None:
                    self._start = found.start()
            start = self._start if self._start >= 0 else len(head)
            nl = head.find(b"\n", max(self._scanned, start))
            self._scanned = len(head)
            if nl < 0 or start >= len(head):
                # No line yet: an array is a document, decided on at once; an object may be
                # a long first JSON line, so wait a little longer. An object that is one item
                # as a whole (a call) reads the same as the first line of JSON Lines or as a
                # document, so its line's end is awaited whatever its length: what follows
                # decides (a container, '{"calls": [...', is decided on at once).
                if head[start : start + 1] == b"[":
                    return len(head) >= self._target
                if len(head) < max(self._target, _NO_NEWLINE_WAIT):
                    return False
                if self._one_item(head):
                    self._over = start < len(head) and len(head) - start > self._limit
                    return False
                return True
            self._first_nl = nl
            if nl - start > self._limit and self._one_item(head, nl):
                self._over, self._over_end = True, nl
                return False
            try:
                # orjson only: a first line only json would take is decided on at 64 KiB.
                orjson.loads(bytes(head[start:nl]))
                self._line_ok = True
            except orjson.JSONDecodeError:
                self._line_ok = False
        if len(head) >= self._target:
            return True
        # JSON Lines: try again once another line is complete.
        return self._line_ok and head.find(b"\n", self._retry_from) >= 0

    def _one_item(self, head: bytearray, end: int | None = None) -> bool:
        """Whether ``head`` (no newline yet; or its first line, up to ``end``) starts a
        document that is one item as a whole (asked once)."""
        if self._whole_item is None:
            try:
                found = detect(bytes(head[:end]), format=self.format, source=self.source)
            except InputError:
                found = None
            self._whole_item = found is not None and found.layout == "json" and found.prefix == ""
        return self._whole_item

    def _open(self, *, final: bool) -> Batch:
        head = bytes(self._head)
        try:
            self.decoder = open_decoder(
                self.format, head, self.source, final=final, lines_before=self._lines_before
            )
        except FormatNotDetected as exc:
            if not final and len(head) < MAX_SAMPLE:
                self._target = min(len(head) * 2, MAX_SAMPLE)
                self._retry_from = len(head)
                return Batch()
            self._failed = True
            return Batch(error=exc)
        self._head = bytearray()
        if head.startswith(_BOM):  # a UTF-8 byte order mark is not JSON; drop it
            head = head[len(_BOM) :]
        if self._pull is not None and isinstance(self.decoder, JsonDecoder):
            self.pulling = self.decoder.pull(head, *self._pull)
            return Batch()
        return self.decoder.feed(head)


_NON_BLANK = re.compile(rb"[^ \t\r\n\f\v]")
_NO_NEWLINE_WAIT = 1 << 20
"""Bytes an object with no newline is held before detection decides on it as a document."""


def _merge(batches: Iterator[Batch]) -> Batch:
    out = Batch()
    for batch in batches:
        out.calls += batch.calls
        out.done += batch.done
        out.findings += batch.findings
        out.error = batch.error
    return out


def _empty(source: str) -> Finding:
    return input_finding(
        "empty_input", f"{source}: the input is empty: no tool calls", None, severity="warning"
    )
