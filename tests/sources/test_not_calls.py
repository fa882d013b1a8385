"""JSON Lines lines that are not calls, a first line longer than the detection sample, integers
too long for Python, and the wording of malformed-JSON messages."""

from __future__ import annotations

import io
import json
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from _cli import run_cli
from toolscore import evaluate_trace
from toolscore.errors import InputError
from toolscore.sources import iter_batches
from toolscore.sources.detect import MAX_SAMPLE

NOT_CALLS = {
    "42": "a JSON number",
    "[1,2]": "a JSON number",
    "null": "a JSON null",
    '"str"': "a JSON string",
    "true": "a JSON boolean",
    '{"args": {"x": 1}}': 'an object without a "tool" name',
    '{"tool": ""}': 'an object whose "tool" is an empty string',
    '{"tool": null}': 'an object whose "tool" is null',
}


def _gold(tmp_path: Path) -> Path:
    gold = tmp_path / "gold.json"
    gold.write_text('[{"tool": "a"}, {"tool": "b"}]', encoding="utf-8")
    return gold


def test_each_line_that_is_not_a_call_is_an_input_problem(tmp_path: Path) -> None:
    lines = ['{"tool": "a"}', *NOT_CALLS, '{"tool": "b"}']
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(lines) + "\n", encoding="utf-8")
    proc = run_cli("eval", str(_gold(tmp_path)), str(trace), "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 2, proc.stdout
    for n, (line, what) in enumerate(NOT_CALLS.items(), start=2):
        assert f"trace.jsonl:{n}: not a call: {what}" in proc.stdout, line
    record = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert record["summary"]["trace_calls_count"] == 2  # the rest evaluated
    assert record["summary"]["input_problems"] == len(NOT_CALLS) + 1  # [1,2]: two items


def test_a_file_of_only_such_lines_is_an_input_error(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join(NOT_CALLS) + "\n", encoding="utf-8")
    gold = _gold(tmp_path)
    for options in (["--format", "jsonl"], ["--format", "custom"], []):
        proc = run_cli("eval", str(gold), str(trace), "-o", str(tmp_path / "r.json"), *options)
        assert proc.returncode == 2, (options, proc.stdout)


def test_an_empty_container_line_is_no_problem(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "a"}\n{"calls": []}\n{"tool": "b"}\n', encoding="utf-8")
    result = evaluate_trace(str(_gold(tmp_path)), str(trace))
    assert result.input_problems == 0
    assert result.trace_calls_count == 2


def test_an_array_item_that_is_not_a_call_is_skipped_as_toolscore_does(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text('[{"tool": "a"}, 42, {"args": {}}, {"tool": "b"}]', encoding="utf-8")
    result = evaluate_trace(str(_gold(tmp_path)), str(trace))
    assert result.input_problems == 0
    assert result.trace_calls_count == 2


def test_a_first_line_longer_than_the_sample_is_json_lines(tmp_path: Path) -> None:
    first = json.dumps({"tool": "a", "args": {"text": "x" * (MAX_SAMPLE + 1024)}})
    rest = [json.dumps({"tool": f"t{i}"}) for i in range(5)]
    trace = tmp_path / "trace.jsonl"
    trace.write_text("\n".join([first, *rest]) + "\n", encoding="utf-8")
    result = evaluate_trace(str(_gold(tmp_path)), str(trace))
    assert result.input_error is None
    assert result.trace_calls_count == 6


def test_a_long_single_call_document_still_reads(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text(json.dumps({"tool": "a", "args": {"t": "x" * (2 << 20)}}), encoding="utf-8")
    result = evaluate_trace(str(_gold(tmp_path)), str(trace))
    assert result.input_error is None
    assert result.trace_calls_count == 1


def test_an_integer_over_python_limit_is_a_problem_on_its_line(tmp_path: Path) -> None:
    huge = "9" * 5000
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        f'{{"tool": "a"}}\n{{"tool": "x", "args": {{"n": {huge}}}}}\n{{"tool": "b"}}\n'
        f'{{"tool": "y", "args": {{"n": {huge}}}}}',  # and as the last line, without newline
        encoding="utf-8",
    )
    proc = run_cli("eval", str(_gold(tmp_path)), str(trace), "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 2
    assert "trace.jsonl:2: malformed JSON: an integer of more than 4,300 digits" in proc.stdout
    assert "trace.jsonl:4: malformed JSON: an integer of more than 4,300 digits" in proc.stdout
    assert "Exceeds the limit" not in proc.stdout + proc.stderr
    record = json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    assert record["summary"]["trace_calls_count"] == 2


def test_an_integer_over_python_limit_in_a_document_has_a_position(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    trace.write_text('[{"tool": "a"},\n{"tool": "x", "args": {"n": ' + "9" * 5000 + "}}]")
    proc = run_cli("eval", str(_gold(tmp_path)), str(trace), "-o", str(tmp_path / "r.json"))
    assert proc.returncode == 2
    assert "trace.json:2:" in proc.stderr
    assert "internal error" not in proc.stderr and "Exceeds the limit" not in proc.stderr


def test_unterminated_string_is_worded_once(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"tool": "a"}\n{"tool": "b\n{"tool": "b"}\n', encoding="utf-8")
    result = evaluate_trace(str(_gold(tmp_path)), str(trace))
    messages = [f.message for f in result.input_findings]
    assert messages == [f"{trace}:2: malformed JSON: Unterminated string starting at column 10"]


def _messages(data: bytes) -> list[str]:
    out: list[str] = []
    try:
        for batch in iter_batches(io.BytesIO(data), chunk_size=7):
            out += [f.message for f in batch.findings]
            if batch.error is not None:
                out.append(str(batch.error))
    except InputError as exc:
        out.append(str(exc))
    return out


@settings(max_examples=150, deadline=None)
@given(
    st.sampled_from([b'[{"tool": "a"}, ', b'{"calls": [', b'{"tool": "a"}\n', b""]),
    st.binary(max_size=40),
)
def test_malformed_json_messages_never_stutter(head: bytes, tail: bytes) -> None:
    for message in _messages(head + tail):
        for stutter in ("character character", "at at ", "token token"):
            assert stutter not in message, message
