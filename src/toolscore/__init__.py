"""toolscore: a streaming, async evaluator of LLM-agent tool calls.

Score a trace against a gold file (``evaluate``, ``evaluate_trace``, ``await
evaluate_stream``), with four behavior and safety checks (failed calls and retries, required
calls completed, credentials in arguments, forbidden calls) reported as they happen.
"""

from __future__ import annotations

from importlib import metadata as _metadata

from .api import evaluate as evaluate
from .api import evaluate_stream as evaluate_stream
from .api import evaluate_trace as evaluate_trace
from .calls import Batch as Batch
from .calls import Finding as Finding
from .calls import Location as Location
from .calls import ToolCall as ToolCall
from .errors import FormatNotDetected as FormatNotDetected
from .errors import GoldFileError as GoldFileError
from .errors import InputError as InputError
from .errors import MalformedTrace as MalformedTrace
from .errors import RuleFileError as RuleFileError
from .errors import ToolscoreError as ToolscoreError
from .errors import TruncatedTrace as TruncatedTrace
from .errors import UsageError as UsageError
from .expect import Expectation as Expectation
from .expect import ToolScoreAssertionError as ToolScoreAssertionError
from .expect import assert_tools as assert_tools
from .expect import expect as expect
from .expect import test_agent as test_agent
from .expect import test_agent_async as test_agent_async
from .integrations import auto_extract as auto_extract
from .integrations import from_anthropic as from_anthropic
from .integrations import from_claude_agent_sdk as from_claude_agent_sdk
from .integrations import from_gemini as from_gemini
from .integrations import from_langgraph as from_langgraph
from .integrations import from_openai as from_openai
from .integrations import from_openai_agents as from_openai_agents
from .integrations import from_otel as from_otel
from .integrations import from_pydantic_ai as from_pydantic_ai
from .live import watch as watch
from .matchers import ANY as ANY
from .matchers import Approx as Approx
from .matchers import Contains as Contains
from .matchers import IsType as IsType
from .matchers import Matcher as Matcher
from .matchers import OneOf as OneOf
from .matchers import Regex as Regex
from .redact import redact_secrets as redact_secrets
from .result import EvaluationResult as EvaluationResult
from .rules import load_forbidden_rules as load_forbidden_rules
from .rules import rules_from_json as rules_from_json
from .verdict import letter_grade as letter_grade

try:
    __version__ = _metadata.version("toolscore")
except _metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0"

__all__ = (
    "ANY",
    "Approx",
    "Batch",
    "Contains",
    "EvaluationResult",
    "Expectation",
    "Finding",
    "FormatNotDetected",
    "GoldFileError",
    "InputError",
    "IsType",
    "Location",
    "MalformedTrace",
    "Matcher",
    "OneOf",
    "Regex",
    "RuleFileError",
    "ToolCall",
    "ToolScoreAssertionError",
    "ToolscoreError",
    "TruncatedTrace",
    "UsageError",
    "__version__",
    "assert_tools",
    "auto_extract",
    "evaluate",
    "evaluate_stream",
    "evaluate_trace",
    "expect",
    "from_anthropic",
    "from_claude_agent_sdk",
    "from_gemini",
    "from_langgraph",
    "from_openai",
    "from_openai_agents",
    "from_otel",
    "from_pydantic_ai",
    "letter_grade",
    "load_forbidden_rules",
    "redact_secrets",
    "rules_from_json",
    "test_agent",
    "test_agent_async",
    "watch",
)

# Public classes and functions report themselves as ``toolscore.X`` (as anyio does).
for _name in __all__:
    _obj = globals()[_name]
    if isinstance(_obj, type) or (callable(_obj) and hasattr(_obj, "__qualname__")):
        _obj.__module__ = "toolscore"
del _name, _obj
