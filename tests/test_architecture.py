"""The package's structure, as docs/architecture.md states it, checked on this source tree: the
import-linter contracts in pyproject.toml (layers that import down only, no cycles between sibling
modules) and mypy on the whole package (`[tool.mypy]`)."""
from __future__ import annotations

import os
import subprocess
import sys

from helpers.env import REPO_ROOT


def test_imports_keep_the_layers():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c",
                           "import sys; from importlinter.cli import lint_imports; "
                           "sys.exit(lint_imports(no_cache=True))"],
                          cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "0 broken" in proc.stdout


def test_the_package_type_checks():
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", os.devnull], cwd=REPO_ROOT,
                          env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Success: no issues found" in proc.stdout
