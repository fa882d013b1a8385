"""The per-trace file (``per_trace=``, ``--per-trace``): each record as a JSON line as its
part finishes, or a Parquet row, written in row groups through pyarrow (optional: the
``parquet`` extra; imported only when a Parquet file is written, and the writer's body is
kept as it is for now, its imports included).

The file is written beside its place and renamed onto it when the run ends
(:class:`toolscore.outputs.AtomicOutput`): a run that fails leaves an old file whole, and one
stopped by a signal leaves the records of the traces it finished."""

from __future__ import annotations

import contextlib
from typing import IO, Any

from ..errors import UsageError
from ..outputs import AtomicOutput
from .records import TraceRecord, record_fields


class _Writer:
    """The per-trace file: JSON Lines, or Parquet through pyarrow in row groups."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.parquet = path.lower().endswith(".parquet")
        self._rows: list[dict[str, Any]] = []
        self._pq: Any = None
        if self.parquet:
            try:
                import pyarrow  # noqa: F401
            except ImportError:
                raise UsageError(
                    f"{path}: Parquet needs pyarrow: pip install 'toolscore[parquet]'"
                ) from None
        self._output = AtomicOutput(path)
        self._f = None if self.parquet else self._output.file

    @property
    def file(self) -> IO[bytes] | None:
        """The JSON Lines file written (None for Parquet)."""
        return self._f

    def write(self, records: list[TraceRecord], lines: bytes) -> None:
        """Write the records (``lines``: their JSON lines, as the run's spool has them)."""
        if self._f is not None:
            self._f.write(lines)
            self._f.flush()
            return
        for r in records:
            row = record_fields(r)  # redacted as the JSON lines are
            row["findings"] = [{"kind": k, "count": v} for k, v in r.findings.items()]
            row["tools"] = [
                {"tool": t, "calls": c[0], "failed": c[1], "retries": c[2]}
                for t, c in row["tools"].items()
            ]
            self._rows.append(row)
        if len(self._rows) >= 65_536:
            self._flush()

    def _flush(self) -> None:
        if not self._rows:
            return
        # optional dependency: pyarrow, for Parquet output only
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.Table.from_pylist(self._rows, schema=_parquet_schema())
        if self._pq is None:
            self._pq = pq.ParquetWriter(self._output.file, table.schema)
        self._pq.write_table(table)
        self._rows = []

    def close(self) -> None:
        """Finish the file and put it in place."""
        if self._f is None:
            self._flush()
            if self._pq is None:
                # optional dependency: pyarrow, for Parquet output only
                import pyarrow as pa
                import pyarrow.parquet as pq

                table = pa.Table.from_pylist([], schema=_parquet_schema())
                pq.write_table(table, self._output.file)
            else:
                self._pq.close()
        self._output.commit()

    def discard(self) -> None:
        """Drop the file written so far (an old file at the path stays as it was)."""
        if self._pq is not None:
            with contextlib.suppress(Exception):  # (its file is removed whatever it says)
                self._pq.close()
        self._output.discard()


def _parquet_schema() -> Any:
    import pyarrow as pa  # optional (the parquet extra): only when Parquet is written

    return pa.schema(
        [
            ("trace_id", pa.string()),
            ("task", pa.string()),
            ("status", pa.string()),
            ("score", pa.float64()),
            ("grade", pa.string()),
            ("passed", pa.bool_()),
            ("calls", pa.int64()),
            ("expected_calls", pa.int64()),
            ("selection_accuracy", pa.float64()),
            ("argument_f1", pa.float64()),
            ("sequence_accuracy", pa.float64()),
            ("required_call_recall", pa.float64()),
            ("failed_calls", pa.int64()),
            ("retries", pa.int64()),
            ("violations", pa.int64()),
            (
                "findings",
                pa.list_(pa.struct([("kind", pa.string()), ("count", pa.int64())])),
            ),
            (
                "tools",
                pa.list_(
                    pa.struct(
                        [
                            ("tool", pa.string()),
                            ("calls", pa.int64()),
                            ("failed", pa.int64()),
                            ("retries", pa.int64()),
                        ]
                    )
                ),
            ),
            ("source", pa.string()),
            ("line", pa.int64()),
            ("offset", pa.int64()),
            ("error", pa.string()),
        ]
    )
