"""toolscore: a streaming, async evaluator of LLM-agent tool calls.

Score a trace against a gold file (``evaluate``, ``evaluate_trace``, ``await
evaluate_stream``), with four behavior and safety checks (failed calls and retries, required
calls completed, credentials in arguments, forbidden calls) reported as they happen.
"""

from __future__ import annotations

import importlib as _importlib
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import Any as _Any

if _TYPE_CHECKING:
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
    from .integrations import from_crewai as from_crewai
    from .integrations import from_gemini as from_gemini
    from .integrations import from_langgraph as from_langgraph
    from .integrations import from_openai as from_openai
    from .integrations import from_openai_agents as from_openai_agents
    from .integrations import from_otel as from_otel
    from .integrations import from_pydantic_ai as from_pydantic_ai
    from .live import watch as watch
    from .matchers import ANY as ANY
    from .matchers import AllOf as AllOf
    from .matchers import Approx as Approx
    from .matchers import AtLeast as AtLeast
    from .matchers import AtMost as AtMost
    from .matchers import Contains as Contains
    from .matchers import IsType as IsType
    from .matchers import Loose as Loose
    from .matchers import Matcher as Matcher
    from .matchers import OneOf as OneOf
    from .matchers import OptionalArg as OptionalArg
    from .matchers import Regex as Regex
    from .matchers import Search as Search
    from .redact import redact_secrets as redact_secrets
    from .result import EvaluationResult as EvaluationResult
    from .rules import load_forbidden_rules as load_forbidden_rules
    from .rules import rules_from_json as rules_from_json
    from .verdict import letter_grade as letter_grade

__all__ = (
    "ANY",
    "AllOf",
    "Approx",
    "AtLeast",
    "AtMost",
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
    "Loose",
    "MalformedTrace",
    "Matcher",
    "OneOf",
    "OptionalArg",
    "Regex",
    "RuleFileError",
    "Search",
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
    "from_crewai",
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

# ``toolscore.expect`` is both a submodule and the function: the function is bound now, as
# importing the submodule later would otherwise leave the package attribute on the module.
from .expect import Expectation as Expectation
from .expect import ToolScoreAssertionError as ToolScoreAssertionError
from .expect import assert_tools as assert_tools
from .expect import expect as expect
from .expect import test_agent as test_agent
from .expect import test_agent_async as test_agent_async

# Each other name is imported the first time it is used, so that `toolscore eval`, which needs
# few of them, starts faster (integrations and the live API are not loaded for it).
_EXPORTS: dict[str, str] = {
    "evaluate": ".api",
    "evaluate_stream": ".api",
    "evaluate_trace": ".api",
    "Batch": ".calls",
    "Finding": ".calls",
    "Location": ".calls",
    "ToolCall": ".calls",
    "FormatNotDetected": ".errors",
    "GoldFileError": ".errors",
    "InputError": ".errors",
    "MalformedTrace": ".errors",
    "RuleFileError": ".errors",
    "ToolscoreError": ".errors",
    "TruncatedTrace": ".errors",
    "UsageError": ".errors",
    "auto_extract": ".integrations",
    "from_anthropic": ".integrations",
    "from_claude_agent_sdk": ".integrations",
    "from_crewai": ".integrations",
    "from_gemini": ".integrations",
    "from_langgraph": ".integrations",
    "from_openai": ".integrations",
    "from_openai_agents": ".integrations",
    "from_otel": ".integrations",
    "from_pydantic_ai": ".integrations",
    "watch": ".live",
    "ANY": ".matchers",
    "AllOf": ".matchers",
    "AtLeast": ".matchers",
    "AtMost": ".matchers",
    "Loose": ".matchers",
    "OptionalArg": ".matchers",
    "Search": ".matchers",
    "Approx": ".matchers",
    "Contains": ".matchers",
    "IsType": ".matchers",
    "Matcher": ".matchers",
    "OneOf": ".matchers",
    "Regex": ".matchers",
    "redact_secrets": ".redact",
    "EvaluationResult": ".result",
    "load_forbidden_rules": ".rules",
    "rules_from_json": ".rules",
    "letter_grade": ".verdict",
}


def _as_public(obj: _Any) -> _Any:
    """Public classes and functions report themselves as ``toolscore.X`` (as anyio does)."""
    if isinstance(obj, type) or (callable(obj) and hasattr(obj, "__qualname__")):
        obj.__module__ = "toolscore"
    return obj


for _obj in (Expectation, ToolScoreAssertionError, assert_tools, expect, test_agent):
    _as_public(_obj)
_as_public(test_agent_async)
del _obj


def __getattr__(name: str) -> _Any:
    if name == "__version__":
        # start-up of `import toolscore`: importlib.metadata (~40 ms) only when asked
        from importlib import metadata

        try:
            version = metadata.version("toolscore")
        except metadata.PackageNotFoundError:  # pragma: no cover - running from a source tree
            version = "0.0.0"
        globals()[name] = version
        return version
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'toolscore' has no attribute {name!r}")
    obj = _as_public(getattr(_importlib.import_module(module, __name__), name))
    globals()[name] = obj
    return obj


def __dir__() -> list[str]:
    return sorted(n for n in set(globals()) | set(__all__) if n != "annotations")
