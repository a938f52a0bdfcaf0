"""The example stack shipped in this repository is real: its committed hashes, manifest, mounts and
ledger are exactly what patchforge regenerates from the pinned vllm and amd-aiter wheels.

Runs on the machine's shared cache (the wheels are fetched with `pip download` once, then reused),
each test on its own copy of the stack's files: the commands write their state (`.patchforge/`)
and build outputs (`overlays/`) there, never into the checkout, which other tests read at the
same time.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from helpers.deploy import STACK_FILES
from helpers.env import REPO_ROOT


@pytest.fixture
def stack(tmp_path) -> Path:
    """This repository's stack, its files as they are here, copied to a directory of its own."""
    root = tmp_path / "stack"
    root.mkdir()
    for name in STACK_FILES:
        source = REPO_ROOT / name
        if source.is_dir():
            shutil.copytree(source, root / name, symlinks=True)
        else:
            shutil.copy2(source, root / name)
    return root


def run(root: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), *args],
                          capture_output=True, text=True)


def test_committed_overlay_metadata_is_what_the_series_generates(shared_cache, stack):
    fetched = run(stack, "fetch")
    assert fetched.returncode == 0, fetched.stderr
    checked = run(stack, "overlays", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "up to date" in checked.stdout


def test_example_stack_lints_clean_and_keeps_its_invariants(shared_cache, stack):
    assert run(stack, "fetch").returncode == 0
    linted = run(stack, "lint", "--no-forge")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    kept = run(stack, "check")
    assert kept.returncode == 0, kept.stdout + kept.stderr


def test_every_fix_applies_to_the_pinned_upstreams(shared_cache, stack):
    assert run(stack, "fetch").returncode == 0
    status = run(stack, "status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "all 8 patches apply" in status.stdout
