"""Walking a nested value (a call's arguments) for the strings to scan, with their paths;
a dict shaped like a Google service-account key file yields its ``private_key_id``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

_GCP_ID = re.compile(r"[0-9a-f]{40}")
GCP_KEY_FILE = "gcp_service_account_key"
"""The kind of a service-account key file's ``private_key_id`` (:func:`iter_texts`)."""


def _gcp_key_id(value: dict[Any, Any]) -> bool:
    """A service-account key file as a dict: ``"type": "service_account"`` (or a
    ``private_key``) and a ``private_key_id``."""
    key_id = value.get("private_key_id")
    return (
        isinstance(key_id, str)
        and _GCP_ID.fullmatch(key_id) is not None
        and (value.get("type") == "service_account" or "private_key" in value)
    )


def iter_strings(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """Every string inside ``value`` with its Toolscore path, depth first in dict/list order.

    Dict keys are never yielded (see :func:`iter_texts`). Paths: ``key``, ``parent.key``,
    ``parent[0]``; a top-level list item is ``[0]``; int keys go through ``str()``.
    """
    stack: list[tuple[str, Any]] = [(path, value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            yield where, item
        elif isinstance(item, dict):
            prefix = f"{where}." if where else ""
            stack.extend(reversed([(f"{prefix}{k}", v) for k, v in item.items()]))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(item)]))


def iter_texts(value: Any, path: str = "") -> Iterator[tuple[str, str, str | None]]:
    """Like :func:`iter_strings`, with dict keys too, each just before its value:
    ``(path, text, kind)``.

    A key yields the path ``<key> parent.key``. ``kind`` is None, except for the
    ``private_key_id`` of a dict shaped like a Google service-account key file
    (``"type": "service_account"`` or a ``private_key``, and a 40-hex ``private_key_id``),
    which is yielded first, with kind ``gcp_service_account_key``: the caller reports it as
    that credential whatever the patterns say.
    """
    stack: list[tuple[str, Any, bool]] = [(path, value, False)]
    while stack:
        where, item, is_key = stack.pop()
        if is_key:
            yield f"<key> {where}", item, None
        elif isinstance(item, str):
            yield where, item, None
        elif isinstance(item, dict):
            prefix = f"{where}." if where else ""
            if "private_key_id" in item and _gcp_key_id(item):
                yield f"{prefix}private_key_id", item["private_key_id"], GCP_KEY_FILE
            entries: list[tuple[str, Any, bool]] = []
            for k, v in item.items():
                at = f"{prefix}{k}"
                if isinstance(k, str):
                    entries.append((at, k, True))
                entries.append((at, v, False))
            stack.extend(reversed(entries))
        elif isinstance(item, (list, tuple)):
            stack.extend(reversed([(f"{where}[{i}]", v, False) for i, v in enumerate(item)]))
