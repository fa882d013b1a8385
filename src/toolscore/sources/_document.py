"""The JSON document decoder: items read through ijson at the detector's prefix.

A fault in the document (bad JSON, invalid UTF-8, an early end) ends the input: it is the
``error`` of the batch of the chunk where it was met, after the items completed before it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from ..calls import Batch, Location
from ..errors import InputError
from ._base import Dialect
from ._ijson import ItemParser, pull_items
from .jsonl import Decoder

__all__ = ["DocumentDecoder", "JsonDecoder"]


class DocumentDecoder(Decoder):
    """What the two decoders of one JSON document share: the items' prefix, their location,
    and how parsed items and a fault go into a batch.

    Calls read from a document carry ``Location(source)`` without an offset: the parsers
    report completed items, not where they started.

    Args:
        dialect: reads each item.
        prefix: the ijson prefix of the items (``""`` is the whole document).
        source: the file name.
        description: what the input starts with (for the zero-call error).
    """

    def __init__(
        self, dialect: Dialect, prefix: str, source: str, description: str = "a JSON document"
    ) -> None:
        super().__init__(dialect, source, description)
        self.name = f"json/{dialect.name}"
        self.prefix = prefix
        self._location = Location(source)

    def _items(self, parsed: tuple[list[Any], InputError | None], out: Batch) -> None:
        """Hand parsed items to the dialect; a fault is the batch's ``error`` (pending calls
        complete then)."""
        items, error = parsed
        location = self._location
        for obj in items:
            self._item(obj, location, out)
        if error is not None:
            out.error = error
            self.dialect.close(out)


class JsonDecoder(DocumentDecoder):
    """One JSON document, its items read at an ijson prefix (see :class:`DocumentDecoder`)."""

    def __init__(
        self, dialect: Dialect, prefix: str, source: str, description: str = "a JSON document"
    ) -> None:
        super().__init__(dialect, prefix, source, description)
        self._parser = ItemParser(source, prefix)

    def feed(self, chunk: bytes) -> Batch:
        """Parse ``chunk``; a fault is the batch's ``error`` (pending calls complete then)."""
        out = Batch()
        self._items(self._parser.feed(chunk), out)
        return out

    def pull(self, head: bytes, read: Callable[[int], bytes], size: int) -> Iterator[Batch]:
        """Read the whole document by pulling: ``head``, then ``read(size)`` until it returns
        ``b""``; one batch per chunk, the last one finished as :meth:`close` does.

        Only for regular files: ``read`` is called while items are still being decoded, so a
        live pipe would hold a chunk's calls until the next chunk arrives. Do not mix with
        :meth:`feed`.
        """
        location = self._location
        out = Batch()
        for items, error in pull_items(head, read, size, self.source, self.prefix):
            for obj in items:
                self._item(obj, location, out)
            if error is not None:
                out.error = error
                break
            yield out
            out = Batch()
        yield self._finish(out)

    def close(self) -> Batch:
        """Finish the document: a truncated one is the batch's ``error``."""
        out = Batch()
        items, error = self._parser.close()
        for obj in items:
            self._item(obj, self._location, out)
        out.error = error
        return self._finish(out)
