"""Where a dataset's traces come from, and how they are cut into parts and read back.

TRACES is a file, a directory (read recursively), a glob, or a URL that fsspec opens
(``s3://``, ``gs://``, ``file://``, ``memory://``; fsspec is needed only for URLs). Each file
is one of:

* a **multi-trace JSON Lines** file: its lines carry a trace id (``--trace-key``, or the first
  of :data:`ID_KEYS` found on the first line). Lines of one trace are normally contiguous; such
  a file is read trace by trace (one trace in memory at a time) and a large one is cut into
  byte ranges at trace boundaries, one part each. When the lines of traces interleave
  (detected in the first MiB, or ``interleaved=True``) the file is grouped by id instead:
  in memory up to :data:`GROUP_BUDGET` bytes, past that partitioned on disk by a hash of the
  id, one partition at a time;
* an **OpenTelemetry** export (OTLP JSON or JSON Lines): its spans are grouped by
  ``traceId`` (as above), each trace an OTLP export of its own spans;
* **one trace** in any supported format: the trace id is the file's path below TRACES without
  its extensions. It is read as ``toolscore eval`` reads a trace, streaming.

A part's lines are numbered from its start; the driver adds the lines of the parts before it.

Where things are: listing and opening files in ``_files``; cutting the dataset into parts
(and sniffing a file's trace key) in ``_plan``; reading ids, trace boundaries and traces in
``_reading``; grouping interleaved lines (in memory, on disk, scattered) and OTLP spans in
``_grouping``. Every name is re-exported here.
"""

from __future__ import annotations

from ._files import Decompressed as Decompressed
from ._files import Input as Input
from ._files import in_location as in_location
from ._files import list_inputs as list_inputs
from ._files import make_location as make_location
from ._files import open_fs as open_fs
from ._files import open_input as open_input
from ._files import open_lines as open_lines
from ._files import open_output as open_output
from ._files import remove_location as remove_location
from ._files import trace_name as trace_name
from ._grouping import GROUP_BUDGET as GROUP_BUDGET
from ._grouping import Grouper as Grouper
from ._grouping import add_frames as add_frames
from ._grouping import otlp_items as otlp_items
from ._grouping import otlp_traces as otlp_traces
from ._grouping import partition as partition
from ._grouping import write_frame as write_frame
from ._plan import FILES_PER_PART as FILES_PER_PART
from ._plan import GATHER_BYTES as GATHER_BYTES
from ._plan import PART_BYTES as PART_BYTES
from ._plan import SNIFF_BYTES as SNIFF_BYTES
from ._plan import Part as Part
from ._plan import detect_key as detect_key
from ._plan import gather_parts as gather_parts
from ._plan import interleaved as interleaved
from ._plan import is_otlp as is_otlp
from ._plan import plan_parts as plan_parts
from ._plan import ship_parts as ship_parts
from ._plan import sniff as sniff
from ._plan import unpack as unpack
from ._reading import BACK_BYTES as BACK_BYTES
from ._reading import BLANK as BLANK
from ._reading import READ_BYTES as READ_BYTES
from ._reading import ChunkIds as ChunkIds
from ._reading import IdReader as IdReader
from ._reading import Trace as Trace
from ._reading import contiguous_traces as contiguous_traces
from ._reading import count_line_starts as count_line_starts
from ._reading import id_before as id_before
from ._reading import id_chunks as id_chunks
from ._reading import iter_lines as iter_lines
from ._reading import line_ids as line_ids
from ._reading import next_line as next_line
from ._reading import trace_start as trace_start
from .shape import ID_KEYS as ID_KEYS
from .shape import first_line as first_line
from .shape import is_url as is_url

__all__ = [
    "GROUP_BUDGET",
    "ID_KEYS",
    "Decompressed",
    "Input",
    "Part",
    "Trace",
    "add_frames",
    "count_line_starts",
    "gather_parts",
    "id_before",
    "in_location",
    "is_url",
    "list_inputs",
    "make_location",
    "next_line",
    "open_fs",
    "open_input",
    "open_lines",
    "open_output",
    "partition",
    "plan_parts",
    "remove_location",
    "ship_parts",
    "trace_name",
    "trace_start",
    "unpack",
    "write_frame",
]
