"""The JSON Lines decoder: lines framed here, one value per line, each fed to a dialect.

One :class:`Batch` is built per chunk. Lines are framed as httpx's ``LineDecoder`` does:
complete lines are split off each chunk and the partial last line is kept for the next one,
so a line is decoded as soon as its newline arrives. A bad line is one
``input``/``malformed_line`` finding and decoding goes on; a blank line is skipped; a last
line without a newline is decoded at the end, or reported as ``input``/``truncated_line``
when it is not valid JSON.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec

from ..calls import Batch, Finding, Location
from ..errors import FormatNotDetected, InputError
from ..limits import MARGIN, MAX_DEPTH, bounded_depth, decode_limit_exact, max_value_bytes
from ._base import Dialect
from ._depth import TooDeep, decode_checked
from ._util import count_newlines, error_finding, input_finding, located_finding
from .detect import not_detected_problem

__all__ = ["JsonlDecoder"]


def _number_problem(exc: ValueError) -> str:
    """What a value error of :func:`json.loads` that is not a syntax error says: a number."""
    if "digits" in str(exc):
        return "malformed JSON: an integer of more than 4,300 digits (Python's limit)"
    return f"malformed JSON: {exc}"


_decode = msgspec.json.Decoder().decode
"""One line's JSON: msgspec keeps integers beyond 64 bits, as :mod:`json` does."""


def _json_loads(raw: bytes) -> Any:
    return json.loads(raw.decode("utf-8"))


def _checked_decode(raw: bytes) -> Any:
    """A line measured before it is decoded (where the recursion limit does not bound
    msgspec's nesting): too deep is the RecursionError the exact path would raise."""
    try:
        return decode_checked(_decode, raw)
    except TooDeep:
        raise RecursionError from None


class Decoder:
    """What both decoders share: the dialect, and the zero-call check at the end."""

    name: str

    empty_is_error = True
    """A complete input that yields no call is a FormatNotDetected error (else a finding)."""
    check_empty = True
    """Check for zero calls at all at the end (not for a part of a larger input)."""

    def __init__(self, dialect: Dialect, source: str, description: str) -> None:
        self.dialect = dialect
        self.source = source
        self.description = description
        """What the start of the input looked like, for the zero-call error."""

    def _item(self, obj: Any, location: Location | None, out: Batch) -> None:
        try:
            self.dialect.item(obj, location, out)
        except InputError as exc:
            out.findings.append(error_finding("malformed_call", exc, location))

    def _finish(self, out: Batch) -> Batch:
        """End of input: complete the pending calls; no call at all is an error."""
        self.dialect.close(out)
        if (
            self.check_empty
            and out.error is None
            and self.dialect.next_index == 0
            and not self.dialect.replied
        ):
            problem = not_detected_problem(self.description, read_as=self.name)
            if self.empty_is_error:
                out.error = FormatNotDetected(self.source, problem)
            else:
                out.findings.append(
                    input_finding("no_calls", f"{self.source}: {problem}", None, severity="warning")
                )
        return out


class JsonlDecoder(Decoder):
    """JSON Lines: one item per line.

    Args:
        dialect: reads each line's value.
        source: the file name, for locations.
        description: what the input starts with (for the zero-call error).
        lines_before: the lines of the file before these bytes (a part of a file read on
            its own: locations then name the file's line numbers).
    """

    def __init__(
        self,
        dialect: Dialect,
        source: str,
        description: str = "JSON Lines",
        *,
        lines_before: int = 0,
    ) -> None:
        super().__init__(dialect, source, description)
        self.name = f"jsonl/{dialect.name}"
        dialect.one_item_per_line = True
        self._partial: list[bytes] = []
        self._line = lines_before
        """Lines decoded so far."""
        self._blocks = dialect.reads_blocks
        self._limit = max_value_bytes()
        self._partial_bytes = 0
        self._skipping = False
        """A line longer than the value limit is being skipped up to its newline."""

    def feed(self, chunk: bytes) -> Batch:
        """Decode the lines completed by ``chunk``."""
        out = Batch()
        if self._skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                return out
            self._skipping = False
            self._line += 1
            chunk = chunk[nl + 1 :]
        cut = chunk.rfind(b"\n")
        if cut < 0:
            if chunk:
                self._partial.append(chunk)
                self._partial_bytes += len(chunk)
                if self._partial_bytes > self._limit:
                    self._skip_partial(out)
            return out
        head = b"".join(self._partial) if self._partial else b""
        self._partial.clear()
        self._partial_bytes = 0
        if cut + 1 < len(chunk):
            self._partial.append(chunk[cut + 1 :])
            self._partial_bytes = len(chunk) - cut - 1
        if self._blocks and len(chunk) <= self._limit and self._block(head, chunk, cut, out):
            return out
        lines = chunk[:cut].split(b"\n")
        if head:
            lines[0] = head + lines[0]
        self._decode(lines, out)
        return out

    def _block(self, head: bytes, chunk: bytes, cut: int, out: Batch) -> bool:
        """Decode the complete lines (``head`` + ``chunk[:cut]``) in one go, with msgspec's
        line decoder over the chunk itself (see :meth:`Dialect.block_lines`); False when they
        must go line by line (a chunk with a blank or malformed line fails as a whole)."""
        nl = chunk.find(b"\n")
        first = head + chunk[:nl] if head else memoryview(chunk)[:nl]
        pieces = [first, memoryview(chunk)[nl + 1 : cut]] if nl < cut else [first]
        count = count_newlines(chunk, cut) + 1
        block = self.dialect.block_lines(pieces, count, self._line + 1)
        if block is None:
            return False
        out.block = block
        self._line += count
        return True

    def _decode(self, lines: list[bytes], out: Batch) -> None:
        loads: Any = _decode if decode_limit_exact() else _checked_decode
        source = self.source
        n = self._line
        decoded: list[tuple[Any, Location]] = []
        retry: list[tuple[bytes, Location]] = []
        limit = self._limit
        # Decode first, under the depth bound (msgspec counts its nesting against Python's
        # recursion limit); the dialect then reads the values with the usual limit.
        with bounded_depth(MAX_DEPTH - MARGIN, within=lines):
            for raw in lines:
                n += 1
                if not raw or raw.isspace():
                    continue
                location = Location(source, n)
                if len(raw) > limit:
                    out.findings.append(_too_long(location, len(raw), limit))
                    continue
                try:
                    decoded.append((loads(raw), location))
                except msgspec.DecodeError:
                    retry.append((raw, location))
                except RecursionError:  # near the limit: measured exactly
                    try:
                        decoded.append((decode_checked(_decode, raw), location))
                    except TooDeep:
                        out.findings.append(_too_deep(location))
                    except msgspec.DecodeError:
                        retry.append((raw, location))
        self._line = n
        if retry:  # rare: keep the lines in order
            decoded = self._with_fallbacks(decoded, retry, out)
        for obj, location in decoded:
            self._item(obj, location, out)

    def _with_fallbacks(
        self,
        decoded: list[tuple[Any, Location]],
        retry: list[tuple[bytes, Location]],
        out: Batch,
    ) -> list[tuple[Any, Location]]:
        for raw, location in retry:
            ok, obj = self._fallback(raw, location, out)
            if ok:
                decoded.append((obj, location))
        decoded.sort(key=lambda pair: pair[1].line or 0)
        return decoded

    def _fallback(self, raw: bytes, location: Location, out: Batch) -> tuple[bool, Any]:
        """Lines msgspec rejects: :mod:`json` takes NaN, huge numbers and lone surrogates."""
        try:
            return True, decode_checked(_json_loads, raw, kind="json")
        except UnicodeDecodeError as exc:
            problem = f"invalid UTF-8 at column {exc.start + 1}"
        except json.JSONDecodeError as exc:
            # json's "Unterminated string starting at", "Invalid control character at"
            problem = f"malformed JSON: {exc.msg.removesuffix(' at')} at column {exc.colno}"
        except TooDeep:
            out.findings.append(_too_deep(location))
            return False, None
        except ValueError as exc:  # an integer longer than Python converts (4,300 digits)
            problem = _number_problem(exc)
        out.findings.append(located_finding("malformed_line", problem, location))
        return False, None

    def _skip_partial(self, out: Batch) -> None:
        """The line being read is longer than the value limit: report it, drop what was
        kept of it, and skip the rest of it as it arrives."""
        location = Location(self.source, self._line + 1)
        out.findings.append(_too_long(location, self._partial_bytes, self._limit, more=True))
        self._partial.clear()
        self._partial_bytes = 0
        self._skipping = True

    def close(self) -> Batch:
        """Decode the last line if it has no newline, then finish."""
        out = Batch()
        if self._skipping:
            self._skipping = False
            self._line += 1
        if self._partial:
            raw = b"".join(self._partial)
            self._partial.clear()
            if raw.strip():
                n = self._line + 1
                location = Location(self.source, n)
                try:
                    obj = decode_checked(_decode, raw)
                except TooDeep:
                    out.findings.append(_too_deep(location))
                    return self._finish(out)
                except msgspec.DecodeError:
                    try:
                        obj = decode_checked(_json_loads, raw, kind="json")
                    except (json.JSONDecodeError, UnicodeDecodeError, TooDeep):
                        out.findings.append(
                            located_finding(
                                "truncated_line",
                                "truncated last line (the input ends without a "
                                "newline inside a JSON value); the line is ignored",
                                location,
                            )
                        )
                        return self._finish(out)
                    except ValueError as exc:  # an integer over 4,300 digits
                        problem = _number_problem(exc)
                        out.findings.append(located_finding("malformed_line", problem, location))
                        return self._finish(out)
                self._item(obj, location, out)
                self._line = n
        return self._finish(out)


def _too_deep(location: Location) -> Finding:
    return located_finding(
        "too_deep",
        f"nested deeper than {MAX_DEPTH:,} levels; the line is skipped (see the README's Limits)",
        location,
    )


def _too_long(location: Location, size: int, limit: int, *, more: bool = False) -> Finding:
    size_text = f"more than {size:,}" if more else f"{size:,}"
    return located_finding(
        "too_large",
        f"the line is {size_text} bytes, over the value limit of {limit:,} bytes "
        "(--max-value-bytes); the line is skipped",
        location,
    )
