"""Which personal-data kinds are looked for and redacted: a ``pii=`` argument read
(:func:`pii_kinds`), and the scope a command or a block sets (:class:`pii_redaction`,
:func:`use_pii`, :func:`active_pii`)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from contextvars import ContextVar, Token
from functools import wraps
from typing import ParamSpec, TypeVar

from ._patterns import PII_KINDS


def pii_kinds(pii: bool | Iterable[str] | None) -> frozenset[str]:
    """The personal-data kinds a ``pii=`` argument asks for.

    Args:
        pii: ``True`` for every kind of :data:`PII_KINDS`, ``False``/``None`` for none, or the
            kinds themselves (``["email", "card_number"]``).

    Raises:
        ValueError: an unknown kind.
    """
    if pii is None or pii is False:
        return frozenset()
    if pii is True:
        return frozenset(PII_KINDS)
    if isinstance(pii, str):
        pii = [pii]
    kinds = frozenset(pii)
    unknown = sorted(kinds - set(PII_KINDS))
    if unknown:
        raise ValueError(
            f"unknown personal-data kind(s) {', '.join(map(repr, unknown))}; "
            f"known: {', '.join(PII_KINDS)}"
        )
    return kinds


_PII_SCOPE: ContextVar[frozenset[str]] = ContextVar("toolscore_pii_redaction", default=frozenset())
_P = ParamSpec("_P")
_R = TypeVar("_R")


class pii_redaction:
    """Within the block, :func:`redact_secrets` (and everything printed through it) also
    redacts the personal-data kinds ``pii`` (see :func:`pii_kinds`), and the credential scan
    looks for them; ``None`` keeps those of the enclosing block. The block's value is the
    kinds in force.

    A class rather than a generator: ``evaluate()`` enters one per call, and a generator's
    context manager costs several times as much to enter and leave. Like one, it also
    decorates a function (``@pii_redaction(True)``), each call in a block of its own (so a
    recursive or concurrent call restores its own scope)."""

    __slots__ = ("_kinds", "_token")

    def __init__(self, pii: bool | Iterable[str] | None) -> None:
        self._kinds = None if pii is None else pii_kinds(pii)
        self._token: Token[frozenset[str]] | None = None

    def __enter__(self) -> frozenset[str]:
        kinds = _PII_SCOPE.get() if self._kinds is None else self._kinds
        self._token = _PII_SCOPE.set(kinds)
        return kinds

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _PII_SCOPE.reset(self._token)

    def __call__(self, func: Callable[_P, _R]) -> Callable[_P, _R]:
        kinds = self._kinds

        @wraps(func)
        def scoped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            with pii_redaction(kinds):
                return func(*args, **kwargs)

        return scoped


def use_pii(pii: bool | Iterable[str] | None) -> frozenset[str]:
    """From now on in this context (a command's run), look for and redact the personal-data
    kinds ``pii`` too (see :func:`pii_redaction` for a block)."""
    kinds = pii_kinds(pii)
    _PII_SCOPE.set(kinds)
    return kinds


def active_pii() -> frozenset[str]:
    """The personal-data kinds of the enclosing :func:`pii_redaction` block or
    :func:`use_pii` (empty: none)."""
    return _PII_SCOPE.get()
