"""The documentation as a user meets it: every install instruction installs this project."""
from __future__ import annotations

import re
import tomllib

from conftest import REPO_ROOT

DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md")),
        REPO_ROOT / ".pre-commit-hooks.yaml"]


def test_every_pip_install_names_this_project():
    """`pip install patchforge` installs an unrelated project of that name from the package
    index; every instruction must install this repository (a path or a git URL) under our own
    distribution name."""
    name = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]["name"]
    assert name != "patchforge"
    seen = 0
    for path in DOCS:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for match in re.finditer(r"pip install\s+(?:-\S+\s+)*(\S+(?: @ \S+)?)", line):
                target = match.group(1).strip("`'\"")
                seen += 1
                assert target.startswith((".", "/", f"{name} @ git+")), \
                    f"{path.name}:{number}: {line.strip()}"
    assert seen >= 3
