"""Trace sources as batches of calls: :func:`abatches` reads any :data:`TraceSource` (a path,
a binary file, an async byte stream, or the calls themselves as dicts), and
:func:`guard_first` / :func:`aguard_first` turn an input error met before any call into an
exception (with nothing evaluated there is no result to carry it)."""

from __future__ import annotations

import os
from collections.abc import AsyncIterable, AsyncIterator, Iterable, Iterator, Mapping
from typing import IO, Any, Union

from .calls import Batch, ToolCall
from .errors import InputError
from .gold import calls_from_dicts

TraceSource = Union[
    str,
    "os.PathLike[str]",
    IO[bytes],
    AsyncIterable[bytes],
    AsyncIterable[Mapping[str, Any]],
    Iterable[Mapping[str, Any]],
]
"""A trace: a path (``-`` for stdin, ``.gz`` read compressed), a binary file, an async byte
stream (``anyio.abc.ByteReceiveStream`` or any async iterable of bytes), or the calls
themselves as an (async) iterable of dicts in Toolscore's in-memory form."""

_BATCH = 1024


def _batches_of(calls: list[ToolCall]) -> Iterable[Batch]:
    for start in range(0, len(calls), _BATCH):
        chunk = calls[start : start + _BATCH]
        yield Batch(calls=chunk, done=chunk)


class _BeforeFirstCall:
    """Turns an input error met before any call was read into an exception: with nothing
    evaluated there is no result to carry it."""

    def __init__(self) -> None:
        self.read_any = False

    def check(self, batch: Batch) -> Batch:
        if batch.error is not None and not self.read_any and not batch.n_calls:
            raise batch.error
        self.read_any = self.read_any or bool(batch.n_calls)
        return batch


def guard_first(batches: Iterable[Batch]) -> Iterator[Batch]:
    guard = _BeforeFirstCall()
    return (guard.check(batch) for batch in batches)


async def aguard_first(batches: AsyncIterable[Batch]) -> AsyncIterator[Batch]:
    guard = _BeforeFirstCall()
    async for batch in batches:
        yield guard.check(batch)


class _NamedChunks:
    """An async iterable of bytes that keeps its source's ``name`` (a followed file's path),
    so that locations name the file rather than ``<stream>``."""

    def __init__(self, chunks: AsyncIterator[bytes], name: str) -> None:
        self._chunks = chunks
        self.name = name

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._chunks


async def abatches(
    source: TraceSource, format: str = "auto", *, one_trace: bool = True
) -> AsyncIterator[Batch]:
    """Batches from any :data:`TraceSource`: bytes go through a decoder, dicts are calls
    (``one_trace`` false: a stream of sessions, see :func:`~toolscore.sources.aiter_batches`)."""
    # the trace readers (ijson, anyio, gzip: ~35 ms) load only when bytes are read
    from .sources import aiter_batches

    if isinstance(source, (str, os.PathLike)) or hasattr(source, "read"):
        async for batch in aiter_batches(source, format, one_trace=one_trace):  # type: ignore[arg-type]
            yield batch
        return
    if isinstance(source, AsyncIterable):
        iterator = source.__aiter__()
        try:
            first = await iterator.__anext__()
        except StopAsyncIteration:
            return
        if isinstance(first, (bytes, bytearray, memoryview)):

            async def _bytes() -> AsyncIterator[bytes]:
                yield bytes(first)
                async for chunk in iterator:
                    yield bytes(chunk)  # type: ignore[arg-type]

            name = getattr(source, "name", None)  # a followed file's path, for locations
            chunks = _bytes() if not isinstance(name, str) else _NamedChunks(_bytes(), name)
            async for batch in aiter_batches(chunks, format, one_trace=one_trace):
                yield batch
            return
        # An agent's own loop hands calls over one at a time, so each is evaluated as it
        # arrives: there is no way to know whether the next one is ready.
        calls = calls_from_dicts([first], start=0)
        yield Batch(calls=calls, done=calls)
        index = 1
        async for item in iterator:
            calls = calls_from_dicts([item], start=index)
            index += 1
            yield Batch(calls=calls, done=calls)
        return
    if isinstance(source, Iterable):
        calls = calls_from_dicts(list(source))
        for batch in _batches_of(calls):
            yield batch
        return
    raise InputError("<stream>", f"cannot read a trace from {type(source).__name__}")
