"""A small project on a real git upstream, built once per test module and copied for each test
(the command-level suites on hostile input, byte fidelity, crash safety, lint, network safety)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from helpers.env import isolated
from helpers.project import add_git_upstream, make_project
from helpers.upstream import Upstream

HEADER = b"Description: a fix\nAuthor: A U Thor <author@example.com>\nUpstream-Status: Pending\n\n---\n"
TEMPLATE_FILES = {
    "a.txt": b"line1\nline2\nline3\nline4\nline5\nline6\nline7\nline8\n",
    "pkg/mod.py": b"x = 1\ny = 2\nz = 3\n",
}
MODIFY_A = (b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
            b"@@ -1,3 +1,3 @@\n line1\n-line2\n+LINE2\n line3\n")


class Template:
    """A project on a real git upstream (`up`, locked at main), copied fresh for each test."""

    def __init__(self, template: Path, cache: Path, outside: Path, upstream: Path) -> None:
        self.upstream = upstream  # the upstream's git repository (main is the locked commit)
        self.template = template
        self.cache = cache
        self.outside = outside  # where the upstream's symlinks point: must stay empty

    def fresh(self, tmp_path: Path, monkeypatch) -> Path:
        monkeypatch.setenv("PATCHFORGE_CACHE", str(self.cache))
        for leftover in self.outside.iterdir():  # a failing (xfail) case may have written there
            leftover.unlink()
        root = tmp_path / "project"
        shutil.copytree(self.template, root, symlinks=True)
        return root


def build_template(factory: pytest.TempPathFactory, files: dict[str, bytes] = TEMPLATE_FILES,
                   links: dict[str, str] | None = None) -> Template:
    """The template project; in `links` (symlink -> target) @OUTSIDE@ is a directory outside."""
    base = factory.mktemp("env")
    outside = base / "outside"
    outside.mkdir()
    links = {k: v.replace("@OUTSIDE@", str(outside)) for k, v in (links or {}).items()}
    with isolated(base / "home") as mp:
        cache = base / "cache"
        mp.setenv("PATCHFORGE_CACHE", str(cache))
        upstream = Upstream(base / "upstream", files, links=links)
        root = make_project(base / "project")
        add_git_upstream(root, "up", upstream.path, "main", install_root=None)
    return Template(root, cache, outside, upstream.path)


def overlay_file(root: Path, path: str, upstream: str = "up") -> Path:
    """The overlay of `path`: overlays/<upstream>/<path>, or under the one profile's directory."""
    direct = root / "overlays" / upstream / path
    if direct.exists():
        return direct
    found = sorted(root.glob(f"overlays/*/{upstream}/{path}"))
    assert len(found) == 1, (path, found)
    return found[0]


def verify_but_for_the_install_root(root: Path, changed_since: tuple[str, ...] = ()) -> None:
    """`verify` on the template project (which has no install-root): every row ok but the
    compose file's, which mounts none of the overlay files (exit 1, said so); none of the
    template's suites is about deployment, and the rest of verify must still pass. The
    patch files in `changed_since` (`series/up/fix.patch`) changed after overlays/ was made:
    verify names each as held by the overlays in another version."""
    import json

    from helpers.cli import run_cli

    run = run_cli(root, "verify", "--json")
    assert run.rc == 1, run.text
    bad = [r for r in json.loads(run.out)["results"] if r["state"] != "ok"]
    assert [(r["path"], r["state"]) for r in bad] == [("compose.yaml", "mismatch")] + [
        (f"../{path}", "mismatch") for path in changed_since], bad
    assert "no install-root is configured" in bad[0]["detail"], bad
    for row in bad[1:]:
        assert "hold another version of this fix" in row["detail"], row


def check_but_for_the_install_root(root: Path, upstream: str = "up") -> None:
    """`overlays --check` on a project whose `upstream` has no install-root (the template
    project's): what is committed is what the series generates, and it exits 1 only because
    no deployment mounts the overlay files (said so)."""
    from helpers.cli import run_cli

    run = run_cli(root, "overlays", "--check")
    assert run.rc == 1 and "up to date" in run.out, run.text
    assert f"{upstream}: no install-root is configured" in run.err, run.text
