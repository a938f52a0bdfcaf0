"""The example stack shipped in this repository is real: its committed hashes, manifest, mounts and
ledger are exactly what patchforge regenerates from the pinned vllm and amd-aiter wheels.

Runs on the machine's shared cache (the wheels are fetched with `pip download` once, then reused).
"""
from __future__ import annotations

import subprocess
import sys

from helpers.env import REPO_ROOT


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "patchforge", "--root", str(REPO_ROOT), *args],
                          capture_output=True, text=True)


def test_committed_overlay_metadata_is_what_the_series_generates(shared_cache):
    fetched = run("fetch")
    assert fetched.returncode == 0, fetched.stderr
    checked = run("overlays", "--check")
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "up to date" in checked.stdout


def test_example_stack_lints_clean_and_keeps_its_invariants(shared_cache):
    assert run("fetch").returncode == 0
    linted = run("lint", "--no-forge")
    assert linted.returncode == 0, linted.stdout + linted.stderr
    kept = run("check")
    assert kept.returncode == 0, kept.stdout + kept.stderr


def test_every_fix_applies_to_the_pinned_upstreams(shared_cache):
    assert run("fetch").returncode == 0
    status = run("status")
    assert status.returncode == 0, status.stdout + status.stderr
    assert "all 8 patches apply" in status.stdout
