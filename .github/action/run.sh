#!/usr/bin/env bash
# The GitHub Action's step: run `toolscore eval` (one trace) or `python -m toolscore.action`
# (a directory or glob of traces, evaluated as `toolscore eval` evaluates a dataset), publish
# the (redacted) report to the job summary, write the step outputs, and exit with toolscore's
# status.
#
# Inputs come as INPUT_* environment variables (see action.yml), never interpolated into
# the script, so file names and weights cannot inject shell code.
set -uo pipefail

gold="${INPUT_GOLD_FILE:-}"
trace="${INPUT_TRACE_FILE:-}"
traces="${INPUT_TRACES:-}"
python="$(command -v python || command -v python3)"

weights=()
if [[ -n "${INPUT_WEIGHTS:-}" ]]; then
  while IFS= read -r item; do
    item="$(printf '%s' "$item" | tr -d '[:space:]')"
    if [[ -n "$item" ]]; then
      weights+=(--weight "$item")
    fi
  done < <(printf '%s\n' "$INPUT_WEIGHTS" | tr ',' '\n')
fi
# whether an input says yes ('true', 'yes', '1'; any case)
truthy() {
  case "$(printf '%s' "$1" | tr '[:upper:]' '[:lower:]')" in
    true | yes | 1) return 0 ;;
  esac
  return 1
}
fail_on_violations=()
truthy "${INPUT_FAIL_ON_VIOLATIONS:-false}" && fail_on_violations=(--fail-on-violations)
# the options both commands take
common=()
[[ -n "${INPUT_FORBIDDEN_FILE:-}" ]] && common+=(--forbidden "$INPUT_FORBIDDEN_FILE")
[[ -n "${INPUT_FAIL_UNDER:-}" ]] && common+=(--fail-under "$INPUT_FAIL_UNDER")
[[ -n "${INPUT_BASELINE:-}" ]] && common+=(--baseline "$INPUT_BASELINE" \
  --baseline-tolerance "${INPUT_BASELINE_TOLERANCE:-0}")
[[ -n "${INPUT_SAVE_BASELINE:-}" ]] && common+=(--save-baseline "$INPUT_SAVE_BASELINE")
[[ -n "${INPUT_JUNIT_FILE:-}" ]] && common+=(--junit "$INPUT_JUNIT_FILE")
[[ -n "${INPUT_SARIF_FILE:-}" ]] && common+=(--sarif "$INPUT_SARIF_FILE")
[[ -n "${INPUT_PASS:-}" ]] && common+=(--pass "$INPUT_PASS")
truthy "${INPUT_PII:-false}" && common+=(--pii)
[[ -n "${INPUT_MAX_VALUE_BYTES:-}" ]] && common+=(--max-value-bytes "$INPUT_MAX_VALUE_BYTES")
[[ -n "${INPUT_MAX_DECOMPRESSED_BYTES:-}" ]] && common+=(--max-decompressed-bytes \
  "$INPUT_MAX_DECOMPRESSED_BYTES")
[[ -n "${INPUT_HTTP_TIMEOUT:-}" ]] && common+=(--http-timeout "$INPUT_HTTP_TIMEOUT")

if [[ -n "$traces" ]]; then
  if [[ -z "$gold" && -z "${INPUT_GOLD_DIR:-}" ]]; then
    echo "toolscore action: traces needs gold-file or gold-dir" >&2
    exit 2
  fi
  args=(--traces "$traces" --format "${INPUT_FORMAT:-auto}")
  [[ -n "$gold" ]] && args+=(--gold-file "$gold")
  [[ -n "${INPUT_GOLD_DIR:-}" ]] && args+=(--gold-dir "$INPUT_GOLD_DIR")
  [[ -n "${INPUT_PASS_SCORE:-}" ]] && args+=(--pass-score "$INPUT_PASS_SCORE")
  [[ -n "${INPUT_MIN_PASS_RATE:-}" ]] && args+=(--min-pass-rate "$INPUT_MIN_PASS_RATE")
  [[ -n "${INPUT_WORKERS:-}" ]] && args+=(--workers "$INPUT_WORKERS")
  [[ -n "${INPUT_K:-}" ]] && args+=(--k "$INPUT_K")
  # the dataset options of `toolscore eval`, by the same names
  for pair in "INPUT_TRACE_KEY trace-key" "INPUT_TASK_KEY task-key" \
      "INPUT_TASK_REGEX task-regex" "INPUT_MISSING_TRACE missing-trace" \
      "INPUT_PER_TRACE per-trace" "INPUT_ENGINE engine" "INPUT_SCHEDULER scheduler" \
      "INPUT_SHARED_DIR shared-dir" "INPUT_MAX_TRACE_BYTES max-trace-bytes"; do
    var="${pair%% *}"
    [[ -n "${!var:-}" ]] && args+=("--${pair#* }" "${!var}")
  done
  truthy "${INPUT_INTERLEAVED:-false}" && args+=(--interleaved)
  truthy "${INPUT_FOLLOW_SYMLINKS:-false}" && args+=(--follow-symlinks)
  truthy "${INPUT_PASS_ALL_CALLS:-true}" || args+=(--pass-any-calls)
  truthy "${INPUT_PASS_NO_VIOLATIONS:-true}" || args+=(--pass-allow-violations)
  if [[ -n "${INPUT_GROUP_BY:-}" ]]; then  # one a line (a regex may hold a comma)
    while IFS= read -r spec; do
      [[ -n "$spec" ]] && args+=(--group-by "$spec")
    done <<< "$INPUT_GROUP_BY"
  fi
  [[ -n "${GITHUB_STEP_SUMMARY:-}" ]] && args+=(--summary "$GITHUB_STEP_SUMMARY")
  [[ -n "${GITHUB_OUTPUT:-}" ]] && args+=(--outputs "$GITHUB_OUTPUT")
  "$python" -m toolscore.action "${args[@]}" "${common[@]}" "${weights[@]}" \
    "${fail_on_violations[@]}"
  exit $?
fi

if [[ -z "$gold" || -z "$trace" ]]; then
  echo "toolscore action: gold-file and trace-file (or traces) are required" >&2
  exit 2
fi

tmp="${RUNNER_TEMP:-$(mktemp -d)}"
json="$tmp/toolscore.json"
md="$tmp/toolscore.md"
rm -f "$json" "$md"

args=(eval "$gold" "$trace" --format "${INPUT_FORMAT:-auto}" -o "$json" --markdown "$md")
toolscore "${args[@]}" "${common[@]}" "${weights[@]}" "${fail_on_violations[@]}"
status=$?

if [[ -f "$md" && -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  cat "$md" >> "$GITHUB_STEP_SUMMARY"
fi

if [[ -f "$json" && -n "${GITHUB_OUTPUT:-}" ]]; then
  "$python" - "$json" >> "$GITHUB_OUTPUT" <<'PY'
import json
import sys

# the summary sits at the top of the report: read only that far when ijson is there
try:
    import ijson

    with open(sys.argv[1], "rb") as fh:
        summary = next(ijson.items(fh, "summary", use_float=True))
except ImportError:
    with open(sys.argv[1], encoding="utf-8") as fh:
        summary = json.load(fh)["summary"]
recall = summary.get("required_call_recall")
violations = int(summary.get("violations") or 0)  # the one verdict's count, every kind
score = summary.get("score")
# rounded, as every human-facing output (the JSON report keeps every digit)
print(f"score={'' if score is None else format(score, '.3f')}")
print(f"grade={summary['grade'] or ''}")
passed = summary.get("passed")
print(f"passed={'' if passed is None else str(passed).lower()}")
print(f"required-call-recall={'' if recall is None else format(recall, '.3f')}")
print(f"violations={violations}")
PY
fi

exit "$status"
