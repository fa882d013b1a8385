#!/usr/bin/env bash
# The GitHub Action's step: run `toolscore eval`, publish the (redacted) Markdown report to
# the job summary, write the step outputs, and exit with toolscore's status.
#
# Inputs come as INPUT_* environment variables (see action.yml), never interpolated into
# the script, so file names and weights cannot inject shell code.
set -uo pipefail

gold="${INPUT_GOLD_FILE:-}"
trace="${INPUT_TRACE_FILE:-}"
if [[ -z "$gold" || -z "$trace" ]]; then
  echo "toolscore action: gold-file and trace-file are required" >&2
  exit 2
fi

tmp="${RUNNER_TEMP:-$(mktemp -d)}"
json="$tmp/toolscore.json"
md="$tmp/toolscore.md"
rm -f "$json" "$md"

args=(eval "$gold" "$trace" --format "${INPUT_FORMAT:-auto}" -o "$json" --markdown "$md")
if [[ -n "${INPUT_FORBIDDEN_FILE:-}" ]]; then
  args+=(--forbidden "$INPUT_FORBIDDEN_FILE")
fi
case "$(printf '%s' "${INPUT_FAIL_ON_VIOLATIONS:-false}" | tr '[:upper:]' '[:lower:]')" in
  true | yes | 1) args+=(--fail-on-violations) ;;
esac
if [[ -n "${INPUT_WEIGHTS:-}" ]]; then
  while IFS= read -r item; do
    item="$(printf '%s' "$item" | tr -d '[:space:]')"
    if [[ -n "$item" ]]; then
      args+=(--weight "$item")
    fi
  done < <(printf '%s\n' "$INPUT_WEIGHTS" | tr ',' '\n')
fi
if [[ -n "${INPUT_FAIL_UNDER:-}" ]]; then
  args+=(--fail-under "$INPUT_FAIL_UNDER")
fi

toolscore "${args[@]}"
status=$?

if [[ -f "$md" && -n "${GITHUB_STEP_SUMMARY:-}" ]]; then
  cat "$md" >> "$GITHUB_STEP_SUMMARY"
fi

if [[ -f "$json" && -n "${GITHUB_OUTPUT:-}" ]]; then
  python="$(command -v python || command -v python3)"
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
violations = sum(int(summary.get(key) or 0) for key in ("policy_violations", "secrets", "rule_violations"))
print(f"score={summary['score']}")
print(f"grade={summary['grade']}")
print(f"required-call-recall={'' if recall is None else recall}")
print(f"violations={violations}")
PY
fi

exit "$status"
