"""Datasets on real parts: an S3 server (moto, on 127.0.0.1) and a Dask cluster (two worker
processes over TCP on 127.0.0.1), both started and stopped here; results equal the pool's."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from _datasets import can_unshare_mount, dataset_in, generate_dataset
from _doc_cluster import free_port
from toolscore.dataset import DatasetResult, evaluate_dataset

pytestmark = pytest.mark.cluster  # (their own step of .ci/run: python -m pytest -q -m cluster -n 2)


def _generate(traces: Path, gold: Path, count: int) -> None:
    generate_dataset(traces, gold, count, seed=11)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return dataset_in(tmp_path_factory.mktemp("cluster"), 160, seed=11)


@pytest.fixture(scope="module")
def s3(dataset: tuple[Path, Path]) -> Iterator[dict[str, Any]]:
    """A moto S3 server on 127.0.0.1 with a bucket holding the dataset (and its gold)."""
    pytest.importorskip("s3fs")
    moto_server = pytest.importorskip("moto.server")
    port = free_port()
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


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    for process in processes:
        process.terminate()
    for process in processes:
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


SCHEDULER = ("--dashboard-address", "127.0.0.1:0")
TOOLSCORE = (sys.executable, "-m", "toolscore", "eval")
WORKER = ("--host", "127.0.0.1", "--nthreads", "1", "--no-nanny", "--no-dashboard")


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Path]]:
    """A cluster whose workers stand for other machines: a Dask scheduler and two ``dask
    worker`` processes over TCP on 127.0.0.1, each worker in a mount namespace of its own
    where an empty tmpfs covers the directory returned with the client. This process writes
    there; the workers see nothing of it (and still see the dataset)."""
    distributed = pytest.importorskip("distributed")
    if sys.platform != "linux" or not can_unshare_mount():
        pytest.skip("needs Linux mount namespaces (unshare --mount, as root)")
    hidden = tmp_path_factory.mktemp("driver-only")
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = [sys.executable, "-m", "dask"]
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    processes = [
        subprocess.Popen(
            [*dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), *SCHEDULER],
            **quiet,  # type: ignore[call-overload]
        )
    ]
    cover = f'mount -t tmpfs toolscore-test "{hidden}" && exec "$@"'
    for _ in range(2):
        processes.append(
            subprocess.Popen(
                ["unshare", "--mount", "sh", "-c", cover, "sh", *dask, "worker", address, *WORKER],
                **quiet,  # type: ignore[call-overload]
            )
        )
    client: Any = None
    try:
        client = distributed.Client(address, timeout=60)
        client.wait_for_workers(2, timeout=60)
        yield client, hidden
    finally:
        if client is not None:
            client.close()
        _stop(processes[1:])
        _stop(processes[:1])


def _errors(result: DatasetResult) -> list[str | None]:
    """The first records' errors and the run's problems, for a failure's message (a part the
    cluster lost says why there)."""
    return [r.error for r in result if r.error][:3] + list(result.problems)[:3]


def _plain(result: DatasetResult) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    records = [msgspec.structs.asdict(r) | {"order": None} for r in result]
    summary = result.summary()
    for key in ("elapsed_s", "traces_per_s", "engine", "workers", "bytes"):
        summary.pop(key)
    return records, summary


def test_dask_cluster_equals_the_pool(dataset: tuple[Path, Path], client: Any) -> None:
    from distributed import get_task_stream

    gold, traces = dataset
    pool = evaluate_dataset(str(gold), str(traces), engine="local", workers=2, part_bytes=40_000)
    with get_task_stream(client) as first:
        on_dask = evaluate_dataset(str(gold), str(traces), client=client, part_bytes=40_000)
    with get_task_stream(client) as second:
        by_address = evaluate_dataset(
            str(gold), str(traces), scheduler=client.scheduler.address, part_bytes=25_000
        )
    # each run names its own tasks: two runs of one process (or two drivers of one cluster)
    # never share a task's key, so neither is given the other's outcome
    keys = [{str(t["key"]) for t in stream.data} for stream in (first, second)]
    assert keys[0] and keys[1] and not keys[0] & keys[1]
    assert on_dask.engine == "dask"
    reference = _plain(pool)
    assert reference[1]["traces"] == 160
    assert _plain(on_dask) == reference
    assert _plain(by_address) == reference
    assert on_dask.aggregate.score_sum.total() == pool.aggregate.score_sum.total()


def test_a_local_cluster_unpacks_and_scatters_as_the_pool_does(
    tmp_path: Path, dataset: tuple[Path, Path], client: Any
) -> None:
    # the cluster's workers are on this machine: they share the run's work directory, so a
    # large compressed file is unpacked and cut, and an interleaved one
    # grouped on all workers, as on the pool, with the same records in the same order
    import gzip

    from _datasets import shaped_dataset
    from toolscore.dataset.run import workers_share

    gold, traces = dataset
    assert workers_share(client, str(tmp_path))
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
        assert _plain(on_dask) == reference, (path.name, _errors(on_dask))


def test_workers_that_do_not_see_the_work_directory(
    tmp_path: Path,
    dataset: tuple[Path, Path],
    elsewhere: tuple[Any, Path],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the workers' addresses are loopback ones, but not their disks: the run finds out
    # (a probe file) and does not hand them the work directory's files. A plain file is
    # read by the workers from where it is; a compressed one is decompressed here and its
    # ranges sent to them with their bytes; an interleaved one is scattered here and its
    # partitions sent to them. All of them as the pool reads them, in several parts
    import gzip

    from _datasets import shaped_dataset
    from toolscore.dataset.run import workers_share

    client, hidden = elsewhere
    gold, traces = dataset
    assert not workers_share(client, str(hidden))
    assert workers_share(client, str(traces.parent))  # the dataset's directory they see
    assert list(hidden.iterdir()) == []  # the probes are removed
    mixed = shaped_dataset(traces, "interleaved")
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(traces.read_bytes()))
    from distributed import get_task_stream

    from toolscore.parts import engine

    monkeypatch.setattr(engine, "SENT_IN_FLIGHT", 1)  # (each waits for the one before)
    opts: dict[str, Any] = {"part_bytes": 20_000}
    for path in (traces, packed, mixed):
        pool = _plain(evaluate_dataset(str(gold), str(path), engine="local", workers=2, **opts))
        with get_task_stream(client) as stream:
            on_dask = evaluate_dataset(
                str(gold), str(path), client=client, workdir=str(hidden), **opts
            )
        ran = {t["key"] for t in stream.data if str(t["key"]).startswith("toolscore-part-")}
        assert len(ran) >= 2, path.name
        assert on_dask.engine == "dask"
        got = _plain(on_dask)
        on_dask.close()
        assert pool[1]["traces"] == 160 and got == pool, path.name
    assert list(hidden.iterdir()) == []  # each run's work directory, once closed


def test_a_shared_directory_spreads_such_files_over_the_workers(
    tmp_path: Path,
    dataset: tuple[Path, Path],
    elsewhere: tuple[Any, Path],
    s3: dict[str, Any],
) -> None:
    # with a directory both sides see (one the workers mount too, or a bucket on the S3
    # server), a compressed file is decompressed there and cut, and an interleaved one
    # scattered there, as on the pool: the same records, in the same order
    import gzip

    import s3fs

    from _datasets import shaped_dataset

    client, hidden = elsewhere
    gold, traces = dataset
    mixed = shaped_dataset(traces, "interleaved")
    packed = tmp_path / "traces.jsonl.gz"
    packed.write_bytes(gzip.compress(traces.read_bytes()))
    visible = traces.parent / "shared"  # (the dataset's directory: the workers see it)
    visible.mkdir(exist_ok=True)
    bucket = s3fs.S3FileSystem(**s3)
    opts: dict[str, Any] = {"part_bytes": 20_000}

    def run(path: Path, shared: str, **more: Any) -> DatasetResult:
        return evaluate_dataset(
            str(gold),
            str(path),
            client=client,
            workdir=str(hidden),
            shared_dir=shared,
            storage_options=s3,
            **more,
        )

    # each shape once in each kind of place: a mounted directory, a bucket
    for path, shared in ((packed, "s3://traces/stage/"), (mixed, str(visible))):
        pool = _plain(evaluate_dataset(str(gold), str(path), engine="local", workers=2, **opts))
        assert pool[1]["traces"] == 160
        written: list[str] = []

        def look(*_: Any, shared: str = shared, written: list[str] = written) -> None:
            written.extend(_listing(shared, bucket))  # (while the run goes on)

        result = run(path, shared, on_progress=look, **opts)
        assert _plain(result) == pool, (path.name, shared)
        result.close()
        # the run wrote its files there (a copy, or scattered lines) and removed them
        assert any("unpacked-" in w or "scatter-" in w for w in written), written
        assert _listing(shared, bucket) == []
    assert list(hidden.iterdir()) == []
    # a shared directory that is not there is a usage error, and no bucket is made for it
    from toolscore.errors import UsageError

    for missing in ("s3://no-such-bucket/tmp/", str(tmp_path / "no" / "such")):
        with pytest.raises(UsageError, match="--shared-dir"):
            run(packed, missing)
    assert not bucket.exists("no-such-bucket")
    assert list(hidden.iterdir()) == []


def test_shared_dir_on_the_command_line(
    tmp_path: Path, dataset: tuple[Path, Path], elsewhere: tuple[Any, Path]
) -> None:
    # `toolscore eval ... --scheduler ADDRESS [--shared-dir DIR]`, its temporary directory
    # where the workers cannot see it, on a file whose lines interleave, large enough to be
    # cut (9 MB): its lines are scattered into the directory given (or here, and sent to
    # the workers) and grouped on all workers; the per-trace records are the pool's, in its
    # order
    from _cli import cli_env
    from _datasets import shaped_dataset

    client, hidden = elsewhere
    traces, gold = tmp_path / "traces.jsonl", tmp_path / "gold.jsonl"
    _generate(traces, gold, 1600)
    mixed = shaped_dataset(traces, "interleaved")
    shared = tmp_path / "shared"
    shared.mkdir()
    env = cli_env() | {"TMPDIR": str(hidden)}

    said: dict[str, str] = {}

    def run(name: str, *options: str) -> tuple[bytes, int]:
        from distributed import get_task_stream

        out = tmp_path / f"{name}.jsonl"
        report = str(tmp_path / f"{name}.json")
        args = [str(gold), str(mixed), "--per-trace", str(out), "-o", report, *options]
        with get_task_stream(client) as stream:
            done = subprocess.run(
                [*TOOLSCORE, *args],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
        assert done.returncode in (0, 1), done.stderr
        said[name] = done.stderr
        ran = {t["key"] for t in stream.data if str(t["key"]).startswith("toolscore-part-")}
        return out.read_bytes(), len(ran)

    on_pool, _ = run("pool", "--engine", "local", "--workers", "2")
    address = client.scheduler.address
    on_dask, parts = run("dask", "--scheduler", address, "--shared-dir", str(shared))
    assert on_dask == on_pool and on_pool.count(b"\n") == 1600
    assert parts > 2  # its scatter ranges, then the parts that group them
    assert not any(shared.rglob("*"))  # used, then emptied
    alone, parts = run("alone", "--scheduler", address)
    assert parts >= 2 and alone == on_pool  # its partitions (its ranges ran here)
    assert list(hidden.iterdir()) == []
    # a "shared" directory the workers do not see: the partitions written there cannot be
    # read on the cluster, and each is grouped here instead (nothing is lost), and said
    unshared = hidden / "not-shared"
    unshared.mkdir()
    here, _ = run("unshared", "--scheduler", address, "--shared-dir", str(unshared))
    assert here == on_pool
    assert "the cluster raised FileNotFoundError" in said["unshared"]
    assert "its traces are evaluated again" in said["unshared"]
    unshared.rmdir()


def test_one_gold_behind_a_url_reaches_workers_elsewhere(
    dataset: tuple[Path, Path], elsewhere: tuple[Any, Path], s3: dict[str, Any]
) -> None:
    # one gold file for every trace, in the bucket: workers that do not see the driver's
    # directory get it too
    import s3fs

    client, hidden = elsewhere
    _, traces = dataset
    calls = [{"tool": "get_user", "args": {"user_id": "u1"}}, {"tool": "book", "args": {}}]
    s3fs.S3FileSystem(**s3).pipe("traces/one-gold.json", json.dumps(calls).encode())
    options: dict[str, Any] = {"storage_options": s3, "part_bytes": 200_000}
    want = _plain(
        evaluate_dataset("s3://traces/one-gold.json", str(traces), engine="inline", **options)
    )
    got = evaluate_dataset(
        "s3://traces/one-gold.json", str(traces), client=client, workdir=str(hidden), **options
    )
    assert _plain(got) == want and want[1]["traces"] == 160
    assert all(r.status == "ok" for r in got)
    got.close()


def test_a_rule_file_only_the_driver_sees(
    dataset: tuple[Path, Path], elsewhere: tuple[Any, Path]
) -> None:
    # the rule file, and the schema file it names, are on the driver's disk only: the
    # workers get the rules read, and find what the pool finds
    client, hidden = elsewhere
    gold, traces = dataset
    folder = hidden / "rules"
    folder.mkdir()
    schema = {"type": "object", "required": ["never_given"]}
    (folder / "tools.json").write_text(json.dumps([{"name": "book", "input_schema": schema}]))
    rules = folder / "rules.json"
    rules.write_text(json.dumps({"forbidden": [{"tool": "cancel"}], "schemas": "tools.json"}))
    try:
        options: dict[str, Any] = {"forbidden": str(rules), "part_bytes": 200_000}
        pool = _plain(evaluate_dataset(str(gold), str(traces), engine="local", **options))
        on_dask = evaluate_dataset(
            str(gold), str(traces), client=client, workdir=str(hidden), **options
        )
        assert _plain(on_dask) == pool
        on_dask.close()
        kinds = {f["kind"]: f["count"] for f in pool[1]["findings"]}
        assert kinds.get("rules/schema_violation", 0) > 0, kinds
        assert kinds.get("policy/forbidden_call", 0) > 0, kinds
    finally:
        (folder / "tools.json").unlink()
        rules.unlink()
        folder.rmdir()


def _listing(shared: str, bucket: Any) -> list[str]:
    """The files below ``shared`` (a local directory, or an ``s3://`` prefix)."""
    if shared.startswith("s3://"):
        return [str(p) for p in bucket.find(shared)]
    root = Path(shared)
    return [str(p) for p in root.rglob("*") if p.is_file()] if root.exists() else []


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
        assert got == want, _errors(result)
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
    assert not [r for r in result if r.error and "not evaluated" in r.error], _errors(result)
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
