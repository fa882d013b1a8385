"""Datasets on real parts: an S3 server (moto, on 127.0.0.1) and a Dask cluster (two worker
processes over TCP on 127.0.0.1), both started and stopped here; results equal the pool's."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from _datasets import generate_dataset
from toolscore.dataset import DatasetResult, evaluate_dataset


def _generate(traces: Path, gold: Path, count: int) -> None:
    generate_dataset(traces, gold, count, seed=11)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("cluster")
    traces, gold = base / "traces.jsonl", base / "gold.jsonl"
    _generate(traces, gold, 160)
    return gold, traces


@pytest.fixture(scope="module")
def s3(dataset: tuple[Path, Path]) -> Iterator[dict[str, Any]]:
    """A moto S3 server on 127.0.0.1 with a bucket holding the dataset (and its gold)."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    port = _free_port()
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        options = {
            "key": "testing",
            "secret": "testing",
            "client_kwargs": {"endpoint_url": endpoint, "region_name": "us-west-2"},
        }
        import s3fs

        fs = s3fs.S3FileSystem(**options)
        fs.mkdir("traces")
        gold, traces = dataset
        lines = traces.read_bytes().splitlines(keepends=True)
        half = len(lines) // 2
        while json.loads(lines[half])["trace_id"] == json.loads(lines[half - 1])["trace_id"]:
            half += 1
        fs.pipe("traces/run/a.jsonl", b"".join(lines[:half]))
        fs.pipe("traces/run/b.jsonl", b"".join(lines[half:]))
        fs.pipe("traces/gold.jsonl", gold.read_bytes())
        yield options
    finally:
        server.stop()


@pytest.fixture(scope="module")
def client() -> Iterator[Any]:
    """A Dask LocalCluster: a scheduler and two worker processes over TCP on 127.0.0.1."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        protocol="tcp",
        # None still serves the scheduler's HTTP routes on :8787, which a second cluster
        # (another test process) or any other server may hold: any free loopback port
        dashboard_address="127.0.0.1:0",
    )
    client = distributed.Client(cluster)
    try:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        assert len(client.scheduler_info()["workers"]) == 2
        yield client
    finally:
        client.close()
        cluster.close()


def _plain(result: DatasetResult) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    records = [msgspec.structs.asdict(r) | {"order": None} for r in result]
    summary = result.summary()
    for key in ("elapsed_s", "traces_per_s", "engine", "workers", "bytes"):
        summary.pop(key)
    return records, summary


def test_dask_cluster_equals_the_pool(dataset: tuple[Path, Path], client: Any) -> None:
    gold, traces = dataset
    pool = evaluate_dataset(str(gold), str(traces), engine="local", workers=2, part_bytes=40_000)
    on_dask = evaluate_dataset(str(gold), str(traces), client=client, part_bytes=40_000)
    by_address = evaluate_dataset(
        str(gold), str(traces), scheduler=client.scheduler.address, part_bytes=25_000
    )
    assert on_dask.engine == "dask"
    reference = _plain(pool)
    assert reference[1]["traces"] == 160
    assert _plain(on_dask) == reference
    assert _plain(by_address) == reference
    assert on_dask.aggregate.score_sum.total() == pool.aggregate.score_sum.total()


def test_a_local_cluster_unpacks_and_scatters_as_the_pool_does(
    tmp_path: Path, dataset: tuple[Path, Path], client: Any
) -> None:
    # the cluster's workers are on this machine (loopback addresses): they share the run's
    # work directory, so a large compressed file is unpacked and cut, and an interleaved one
    # grouped on all workers, as on the pool, with the same records in the same order
    import gzip

    from _datasets import shaped_dataset
    from toolscore.dataset.run import on_this_machine

    gold, traces = dataset
    assert on_this_machine(client)
    mixed = shaped_dataset(traces, "interleaved")
    packed = tmp_path / "mixed.jsonl.gz"
    packed.write_bytes(gzip.compress(mixed.read_bytes()))
    for path in (mixed, packed):
        opts: dict[str, Any] = {"part_bytes": 20_000}
        pool = evaluate_dataset(str(gold), str(path), engine="local", workers=2, **opts)
        on_dask = evaluate_dataset(str(gold), str(path), client=client, **opts)
        assert on_dask.engine == "dask"
        reference = _plain(pool)
        assert reference[1]["traces"] == 160
        assert _plain(on_dask) == reference, path.name


def test_s3_bucket_on_both_engines(
    dataset: tuple[Path, Path], s3: dict[str, Any], client: Any
) -> None:
    gold, traces = dataset
    local = evaluate_dataset(str(gold), str(traces), engine="inline")
    url = "s3://traces/run/"
    from_pool = evaluate_dataset(
        "s3://traces/gold.jsonl", url, storage_options=s3, engine="local", workers=2
    )
    from_dask = evaluate_dataset(
        "s3://traces/gold.jsonl", "s3://traces/run/*.jsonl", storage_options=s3, client=client
    )
    want = {r.trace_id: r.score for r in local}
    for result in (from_pool, from_dask):
        got = {r.trace_id: r.score for r in result}
        assert got == want
        assert all(r.source is not None and r.source.startswith("s3://traces/run/") for r in result)
    assert _plain(from_pool)[1] == _plain(from_dask)[1]


def test_memory_url(dataset: tuple[Path, Path]) -> None:
    fsspec = pytest.importorskip("fsspec")
    gold, traces = dataset
    fs = fsspec.filesystem("memory")
    fs.pipe("/ds/traces.jsonl", traces.read_bytes())
    result = evaluate_dataset(str(gold), "memory://ds/traces.jsonl", engine="inline")
    local = evaluate_dataset(str(gold), str(traces), engine="inline")
    assert _plain(result)[1] == _plain(local)[1]
    fs.rm("/ds", recursive=True)


def test_dask_workers_get_pii_and_the_value_limit(tmp_path: Path, client: Any) -> None:
    from collections import Counter

    from test_dataset_options import expected_counts, write_dataset

    count = 12
    gold = write_dataset(tmp_path / "traces", count)
    result = evaluate_dataset(
        str(gold), str(tmp_path / "traces"), client=client, pii=True, max_value_bytes=1000
    )
    assert result.engine == "dask"
    kinds: Counter[str] = Counter()
    for record in result:
        kinds.update(record.findings)
    too_large, emails = expected_counts(count)
    assert kinds["input/too_large"] == too_large
    assert kinds["pii/email"] == emails


def test_dask_records_carry_the_ci_views(dataset: tuple[Path, Path], client: Any) -> None:
    # the views JUnit, SARIF and baselines are written from cross the cluster intact, with
    # the findings' lines shifted to the file's as on the pool
    gold, traces = dataset

    def views(**options: Any) -> list[tuple[str, Any]]:
        out: list[tuple[str, Any]] = []
        evaluate_dataset(
            str(gold),
            str(traces),
            details=True,
            part_bytes=40_000,
            on_record=lambda r: out.append((r.trace_id, msgspec.structs.asdict(r.ci))),
            **options,
        ).close()
        return out

    on_dask = views(client=client)
    assert len(on_dask) == 160 and any(view["findings"] for _, view in on_dask)
    assert on_dask == views(engine="inline")
