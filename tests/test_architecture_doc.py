"""The architecture page names every module of the package, so it stays a true map."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_every_module_is_named_in_the_architecture_page() -> None:
    page = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = set(re.findall(r"`([A-Za-z_][\w./]*)`", page))
    package = REPO / "src" / "toolscore"
    missing = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package)
        if path.name == "__init__.py":
            if relative.parent == Path("."):
                continue  # the root package (named as `__init__` in the root's line)
            names = {f"{relative.parent.as_posix()}/", f"{relative.parent.name}/"}
        else:
            names = {path.stem, path.name, relative.with_suffix("").as_posix()}
        if not names & named:
            missing.append(relative.as_posix())
    assert not missing, f"modules the architecture page does not name: {missing}"
