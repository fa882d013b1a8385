"""JSON documents whose items form one array: cut into runs of whole items, decoded by msgspec.

ijson reads a document event by event, building each item in Python callbacks: about five
microseconds per call. When the items are the elements of one array (a top-level array, or
``{"calls": [...]}``), :class:`ArrayDecoder` instead cuts the bytes read so far at the last
point between two items and decodes the whole run as one JSON array, in C: with the custom
format straight into :class:`~toolscore.sources.custom.CustomBlock` structs, otherwise into
plain values for the dialect.

Where to cut is learned from the first item: msgspec, asked to decode the bytes from the first
item on, stops after that item ("trailing characters at byte N"), which gives the exact bytes
between two items (``},\\n{`` in a file with one item per line, ``},\\n  {`` under two-space
indentation). A cut is only ever a guess, though: the same bytes could sit inside a string or
a nested value. A guess is checked by the decode itself: a run cut anywhere but between two
items of the array ends inside a value and cannot be JSON, so a run that decodes holds exactly
whole items. A wrong guess is retried at an earlier cut; a document with no workable cut, and
the last run of every document (its end, and whatever follows the array), go through ijson,
which also gives every fault its byte offset and line.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from ..calls import Batch
from ..limits import MARGIN, MAX_DEPTH, bounded_depth, max_value_bytes
from ._base import Dialect
from ._depth import TooDeep, decode_checked
from ._document import DocumentDecoder
from ._ijson import ItemParser
from ._util import count_newlines

__all__ = ["ARRAY_PREFIXES", "ArrayDecoder", "suits"]

ARRAY_PREFIXES: dict[str, tuple[re.Pattern[bytes], bytes]] = {
    "item": (re.compile(rb"[ \t\r\n]*\["), b"["),
    **{
        f"{key}.item": (
            re.compile(rb'[ \t\r\n]*\{[ \t\r\n]*"' + key.encode() + rb'"[ \t\r\n]*:[ \t\r\n]*\['),
            b'{"' + key.encode() + b'":[',
        )
        for key in ("calls", "tool_calls", "messages")
    },
}
"""The prefixes read in runs: how the document must start (else ijson reads all of it), and
the equivalent opening to hand ijson when it takes over mid-document."""

_TRAILING = re.compile(r"trailing characters \(byte (\d+)\)")
_WHITESPACE = b" \t\r\n"
_RETRIES = 4
"""Earlier cuts tried when a run does not decode, before ijson takes over."""
_decode = msgspec.json.Decoder().decode


def _json_loads(text: bytes) -> Any:
    return json.loads(text.decode("utf-8"))


def suits(prefix: str, head: bytes) -> bool:
    """Whether a document that starts with ``head`` is read in runs: its items are at one of
    :data:`ARRAY_PREFIXES`, the document opens right onto their array, and they are objects.
    Any other document is read by ijson from the start, pulling (its faster way)."""
    known = ARRAY_PREFIXES.get(prefix)
    if known is None:
        return False
    m = known[0].match(head)
    return m is not None and head[m.end() :].lstrip(_WHITESPACE)[:1] in (b"{", b"]", b"")


class ArrayDecoder(DocumentDecoder):
    """Reads the items of a document's array in runs; see the module docstring.

    Args:
        dialect: reads the items.
        prefix: a key of :data:`ARRAY_PREFIXES`.
        source: the file name.
        description: what the input starts with (for the zero-call error).
    """

    def __init__(
        self, dialect: Dialect, prefix: str, source: str, description: str = "a JSON document"
    ) -> None:
        super().__init__(dialect, prefix, source, description)
        self._opening, self._synthetic = ARRAY_PREFIXES[prefix]
        self._buf = b""
        self._start = 0
        """The input offset of ``_buf[0]``."""
        self._newlines = 0
        """Newlines in the input before ``_buf[0]``."""
        self._in_items = False
        self._sep: bytes | None = None
        self._parser: ItemParser | None = None
        self._levels = MAX_DEPTH - prefix.count(".")
        """The nesting allowed in a run: the array's own level is the run's first."""
        dialect.block_levels = self._levels
        self._limit = max_value_bytes()
        self._tail: list[bytes] = []
        self._tail_bytes = 0
        self._learn_at = 0
        """The buffer's size at which the separator is next looked for (0: at once), while
        the first item is incomplete."""

    # -- feeding ----------------------------------------------------------------------------

    def feed(self, chunk: bytes) -> Batch:
        """Take ``chunk``; decode the run of whole items it completes, if any."""
        out = Batch()
        if self._parser is not None:
            self._items(self._parser.feed(chunk), out)
            return out
        if self._sep is not None:
            if self._in_items and self._sep not in chunk:
                # No item ends here (a long item): keep the chunk, join once a cut comes.
                self._tail.append(chunk)
                self._tail_bytes += len(chunk)
                if len(self._buf) + self._tail_bytes > self._limit:
                    self._to_ijson(out)  # an item over the limit: ijson's guard stops it
                return out
            self._join_tail()
            if self._cut_chunk(chunk, out):
                return out
            self._buf = self._buf + chunk if self._buf else chunk
        elif self._learn_at:
            # The first item is not whole yet: keep the chunks, join and decode it again once
            # the buffer has doubled (each byte decoded a bounded number of times).
            self._tail.append(chunk)
            self._tail_bytes += len(chunk)
            if len(self._buf) + self._tail_bytes < min(self._learn_at, self._limit + 1):
                return out
            self._join_tail()
        else:
            self._buf = self._buf + chunk if self._buf else chunk
        if len(self._buf) > self._limit:
            self._to_ijson(out)  # an item larger than the limit: ijson's guard stops it
            return out
        if not self._in_items and not self._open(out):
            return out
        if self._sep is None and not self._learn(out):
            return out
        self._cut(out)
        return out

    def _join_tail(self) -> None:
        if self._tail:
            self._buf = b"".join([self._buf, *self._tail])
            self._tail.clear()
            self._tail_bytes = 0

    def close(self) -> Batch:
        """Finish: the rest of the document goes through ijson (its last items, its end)."""
        out = Batch()
        if self._parser is None:
            self._to_ijson(out)
        assert self._parser is not None
        items, error = self._parser.close()
        self._items((items, error), out)
        return self._finish(out)

    # -- the opening, the separator, the cuts ---------------------------------------------------

    def _open(self, out: Batch) -> bool:
        """Consume the document's opening up to its array's ``[``; False when not (yet)."""
        m = self._opening.match(self._buf)
        if m is None:
            if len(self._buf) >= 256 or b"[" in self._buf:
                self._to_ijson(out)  # another shape ({"model": ..., "calls": [...]}): ijson
            return False
        self._consume(m.end())
        self._in_items = True
        return True

    def _learn(self, out: Batch) -> bool:
        """Learn the bytes between two items from the first one; False while undecided."""
        buf = self._buf
        first = len(buf) - len(buf.lstrip(_WHITESPACE))
        if first == len(buf):
            return False
        if buf[first : first + 1] != b"{":
            self._to_ijson(out)  # items that are not objects: ijson reads them
            return False
        try:
            with bounded_depth(self._levels - MARGIN):
                _decode(buf[first:])
        except RecursionError:
            self._to_ijson(out)  # too deep: ijson's guard says where
            return False
        except msgspec.DecodeError as exc:
            m = _TRAILING.search(str(exc))
            if m is None:  # truncated: wait for more; malformed: ijson will say where
                if "truncated" not in str(exc):
                    self._to_ijson(out)
                else:
                    self._learn_at = 2 * len(buf)
                return False
            end = first + int(m.group(1)) - 1  # msgspec counts the offending byte in
        else:
            return False  # one whole item and nothing after it yet
        item_end = len(buf[:end].rstrip(_WHITESPACE))
        if buf[end : end + 1] != b",":
            self._to_ijson(out)  # "]": a single item
            return False
        following = buf[end + 1 :]
        nxt = end + 1 + len(following) - len(following.lstrip(_WHITESPACE))
        if nxt >= len(buf):
            return False
        if buf[nxt : nxt + 1] != b"{":
            self._to_ijson(out)
            return False
        self._sep = buf[item_end - 1 : nxt + 1]
        return True

    def _cut(self, out: Batch) -> None:
        """Decode the items before the last separator in the buffer (retrying earlier cuts)."""
        assert self._sep is not None
        sep = self._sep
        buf = self._buf
        end = len(buf)
        for _ in range(_RETRIES):
            cut = buf.rfind(sep, 0, end)
            if cut < 0:
                return
            if self._run(b"[" + buf[: cut + 1] + b"]", out):
                self._consume(cut + len(sep) - 1)  # keep the next item's "{"
                return
            end = cut
        self._to_ijson(out)

    def _cut_chunk(self, chunk: bytes, out: Batch) -> bool:
        """The common case, without copying the buffer: the items before the last separator
        in ``chunk`` (the buffer holds the start of the first one); False when the chunk has
        no separator (or no workable one), to go through :meth:`_cut` as a whole."""
        assert self._sep is not None
        sep = self._sep
        end = len(chunk)
        for _ in range(_RETRIES):
            cut = chunk.rfind(sep, 0, end)
            if cut < 0:
                return False
            view = memoryview(chunk)[: cut + 1]
            if self._run(b"".join((b"[", self._buf, view, b"]")), out):
                taken = cut + len(sep) - 1  # keep the next item's "{"
                lines = count_newlines(chunk, taken)
                self._newlines += self._buf.count(b"\n") + lines
                self._start += len(self._buf) + taken
                self._buf = chunk[taken:]
                return True
            end = cut
        return False

    def _run(self, text: bytes, out: Batch) -> bool:
        """Decode a run; False when it is not JSON (a wrong cut, or a fault for ijson)."""
        if self.dialect.reads_blocks:
            block = self.dialect.block(text, None, None)
            if block is not None:
                out.block = block
                return True
        try:
            items = decode_checked(_decode, text, self._levels)
        except TooDeep:
            return False  # ijson's guard says where
        except msgspec.DecodeError:
            try:  # what msgspec rejects and json reads: NaN, lone surrogates
                items = decode_checked(_json_loads, text, self._levels, "json")
            except (ValueError, TooDeep):
                return False
        location = self._location
        for obj in items:
            self._item(obj, location, out)
        return True

    def _consume(self, n: int) -> None:
        self._newlines += self._buf.count(b"\n", 0, n)
        self._start += n
        self._buf = self._buf[n:]

    # -- ijson ----------------------------------------------------------------------------------

    def _to_ijson(self, out: Batch) -> None:
        """Hand the rest of the document to ijson, as if it had read it from the start."""
        self._join_tail()
        opening = self._synthetic if self._in_items else b""
        parser = ItemParser(
            self.source,
            self.prefix,
            offset=self._start - len(opening),
            newlines=self._newlines,
        )
        self._parser = parser
        buf, self._buf = self._buf, b""
        self._items(parser.feed(opening + buf), out)
