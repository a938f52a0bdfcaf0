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


def test_every_module_the_tests_import_is_a_named_dependency():
    """A module the package or its tests import that neither `dependencies` nor the `test` extra
    names arrives only through another tool's own dependencies (markdown_it came with rich):
    gone from a fresh install the day that tool drops it."""
    import ast
    import importlib.metadata
    import re
    import tomllib

    from packaging.requirements import Requirement

    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["project"]
    named = {re.sub(r"[-_.]+", "-", Requirement(r).name).lower()
             for r in project["dependencies"] + project["optional-dependencies"]["test"]}
    local = {p.stem for p in (REPO_ROOT / "tests").iterdir()} | {"patchforge", "tests"}
    dists = importlib.metadata.packages_distributions()
    missing = set()
    for source in [*(REPO_ROOT / "patchforge").rglob("*.py"), *(REPO_ROOT / "tests").rglob("*.py")]:
        for node in ast.walk(ast.parse(source.read_bytes())):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            for top in {m.split(".")[0] for m in modules}:
                # compression.zstd is the standard library's from Python 3.14.
                if top in sys.stdlib_module_names or top in local or top == "compression":
                    continue
                owners = {re.sub(r"[-_.]+", "-", d).lower() for d in dists.get(top, [top])}
                if not owners & named:
                    missing.add(f"{source.relative_to(REPO_ROOT)}: {top} ({', '.join(sorted(owners))})")
    assert not missing, "\n".join(sorted(missing))
