"""Test isolation: every test gets its own HOME, XDG dirs, patchforge cache and git identity
(helpers/env.py), applied by a MonkeyPatch of its own so that nothing a test does with its
`monkeypatch` (even `monkeypatch.undo()`) lifts it. The HTTP server fixtures are registered here
for every test module.

The one thing shared across tests (and with the tool and the benchmarks) is the wheel cache, since
the real vllm wheels are about 330 MB each: PATCHFORGE_WHEELS points at the user's cache.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from helpers.env import SHARED_CACHE, isolate
from helpers.servers import forge_server, other_server, registry_server  # noqa: F401  (fixtures)
from helpers.upstream import Upstream


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        isolate(mp, tmp_path_factory.mktemp("home"))
        yield


@pytest.fixture
def shared_cache(monkeypatch):
    """Use the machine's shared patchforge cache (real wheels already imported into its store).

    Only for tests on the real vllm/aiter releases; everything else runs on a private cache."""
    monkeypatch.setenv("PATCHFORGE_CACHE", str(SHARED_CACHE))
    return SHARED_CACHE


@pytest.fixture
def make_git_repo(tmp_path):
    """A real upstream repository: make_git_repo({"a.py": b"..."}) -> (path, commit sha)."""
    def build(files: dict[str, bytes], name: str = "upstream") -> tuple[Path, str]:
        upstream = Upstream(tmp_path / name, files)
        return upstream.path, upstream.base
    return build
