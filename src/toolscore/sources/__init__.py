"""Trace readers: bytes (a path, stdin, a ``.gz`` file, an async stream) in, batches of calls out.

:func:`iter_batches` and :func:`aiter_batches` are the drivers; :func:`open_decoder` gives the
I/O-free decoder for an input's first bytes; :data:`FORMATS` lists the ``format`` values
besides ``auto``. See :mod:`.detect` for how formats are told apart and how to add one.
"""

from __future__ import annotations

from ._base import Decoder as Decoder
from ._base import Dialect as Dialect
from ._drive import Session as Session
from ._drive import aiter_batches as aiter_batches
from ._drive import iter_batches as iter_batches
from ._drive import open_decoder as open_decoder
from ._drive import source_size as source_size
from .detect import DETECTION_ORDER as DETECTION_ORDER
from .detect import FORMATS as FORMATS
from .detect import Shape as Shape

__all__ = [
    "DETECTION_ORDER",
    "FORMATS",
    "Decoder",
    "Dialect",
    "Session",
    "Shape",
    "aiter_batches",
    "iter_batches",
    "open_decoder",
    "source_size",
]
