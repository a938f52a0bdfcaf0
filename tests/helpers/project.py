"""The one way tests build a patchforge project: `patchforge init` and `upstream add` through the
real CLI, on real upstream repositories (`helpers.upstream.Upstream`).

`make_project` gives a project root; `Stack` wraps one with the operations tests repeat (add a
patch made with git diff, read the lock and series, run a command and check its exit code).
"""
from __future__ import annotations

import json
from pathlib import Path

from helpers.cli import ok, run_cli
from helpers.snapshot import snapshot
from helpers.upstream import Upstream, diff_of


def make_project(root: Path, *, pyproject: bool = False, profiles: dict[str, str] | None = None,
                 config_extra: str = "", api_url: str | None = None) -> Path:
    """`patchforge init` at `root`: into a pyproject.toml (`pyproject`) or a patchforge.toml,
    with `profiles` declared, `config_extra` appended and the forge at `api_url`."""
    if pyproject:
        root.mkdir(parents=True)
        config = root / "pyproject.toml"
        config.write_bytes(b'[project]\nname = "stack"\n')
        ok(None, "init", cwd=root)
        table = "[tool.patchforge.profiles]\n"
    else:
        ok(None, "init", "--standalone", str(root))
        config = root / "patchforge.toml"
        table = "[profiles]\n"
    text = config.read_text()
    if profiles:
        text = text.replace(table, table + "".join(f'{k} = "{v}"\n' for k, v in profiles.items()))
    if api_url:
        text = text.replace("https://api.github.com", api_url)
    config.write_text(text + config_extra)
    return root


def add_git_upstream(root: Path, name: str, url: Path | str, at: str, *,
                     install_root: str | None = "/opt/site") -> None:
    """`patchforge upstream add NAME --git URL --at AT [--install-root ...]`."""
    extra = ["--install-root", install_root] if install_root else []
    ok(root, "upstream", "add", name, "--git", str(url), "--at", at, *extra)


def add_patch_file(root: Path, upstream: str, filename: str, data: bytes) -> Path:
    """Put a patch file into an upstream's series by hand (as a colleague's commit would)."""
    directory = root / "series" / upstream
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_bytes(data)
    series = directory / "series"
    series.write_bytes((series.read_bytes() if series.exists() else b"")
                       + filename.encode() + b"\n")
    return path


def patch_bytes(upstream_name: str, base: str, description: str, diff: bytes,
                extra: str = "") -> bytes:
    """A patch file: DEP-3 header for `upstream_name` at `base`, a description, then `diff`."""
    header = (f"Description: {description}\n"
              "Author: Test Author <author@example.com>\n"
              "Origin: vendor, test stack\n"
              "Upstream-Status: Pending\n"
              f"Upstream: {upstream_name}\n"
              f"{extra}"
              f"Base: {base}\n"
              "\n"
              "Why this fix exists, in a few words.\n"
              "---\n")
    return header.encode() + diff


class Stack:
    """A patchforge project (patchforge.toml) pinned to one or more real git upstreams."""

    def __init__(self, root: Path, **config) -> None:
        self.root = make_project(root, **config)
        self.upstreams: dict[str, Upstream] = {}

    def cli(self, *args: str, expect: int | None = 0) -> tuple[int, str, str]:
        result = run_cli(self.root, *args)
        if expect is not None:
            assert result.rc == expect, \
                f"patchforge {' '.join(args)} -> {result.rc}\n{result.out}\n{result.err}"
        return result.rc, result.out, result.err

    def json(self, *args: str, expect: int = 0) -> dict:
        return json.loads(self.cli(*args, "--json", expect=expect)[1])

    def add_upstream(self, name: str, upstream: Upstream, at: str | None = None) -> None:
        self.upstreams[name] = upstream
        add_git_upstream(self.root, name, upstream.path, at or upstream.base)

    def add_patch(self, upstream_name: str, name: str, files: dict[str, bytes | None],
                  description: str | None = None, extra: str = "") -> bytes:
        """`name`.patch changing `files` of the upstream at the locked commit (git diff)."""
        upstream = self.upstreams[upstream_name]
        base = self.lock()["upstreams"][upstream_name]["commit"]
        data = patch_bytes(upstream_name, base, description or f"fix {name}",
                           upstream.diff(files, base), extra)
        add_patch_file(self.root, upstream_name, f"{name}.patch", data)
        return data

    def kept_fixes_hold(self, target: str) -> None:
        """`status --against TARGET` says no kept fix taken back, and `rebase --to TARGET`
        and a `status` after it go through without one (exit 0)."""
        doc = self.json("status", "--against", target)
        assert doc["reverted"] == [] and doc["gone_upstream"] == [], doc
        self.cli("rebase", "--to", target)
        self.cli("status")

    def kept_fix_taken_back(self, target: str) -> dict:
        """The one kept fix `status --against TARGET` says taken back (exit 1), as --json
        gives it (name, kind, by)."""
        doc = self.json("status", "--against", target, expect=1)
        (said,) = doc["reverted"] + doc["gone_upstream"]
        return said

    def rebase_json(self, *args: str, expect: int = 0) -> dict:
        """`rebase ARGS --json`, its document checked against the published schema."""
        from patchforge.formats.schemas import validation_errors

        document = self.json("rebase", *args, expect=expect)
        assert validation_errors(document, "rebase") == []
        return document

    def lock_bytes(self) -> bytes:
        return (self.root / "upstream.lock").read_bytes()

    def lock(self) -> dict:
        return json.loads(self.lock_bytes())

    def series(self, upstream_name: str) -> list[str]:
        return (self.root / "series" / upstream_name / "series").read_text().split()

    def patch(self, upstream_name: str, name: str, where: str = "") -> bytes:
        sub = f"{where}/" if where else ""
        return (self.root / "series" / upstream_name / f"{sub}{name}.patch").read_bytes()

    def project(self):
        from patchforge.project import Project
        return Project.discover(self.root)

    def snapshot(self) -> dict[str, tuple]:
        """Every project file and symlink, patchforge's local state left out."""
        return snapshot(self.root, skip_state=True, dirs=False)


class OneUpstreamStack(Stack):
    """A Stack on one upstream `up` made here from `files`, tagged v1 and locked there."""

    def __init__(self, tmp_path: Path, files: dict[str, bytes], **config) -> None:
        self.upstream = Upstream(tmp_path / "up", files, message="v1", tag="v1")
        self.up = self.upstream.path
        super().__init__(tmp_path / "project", **config)
        self.add_upstream("up", self.upstream, at="v1")
        (self.root / "series" / "up").mkdir(parents=True, exist_ok=True)

    @property
    def base(self) -> str:
        return self.lock()["upstreams"]["up"]["commit"]

    def dropped_as_landed(self, target: str = "up=v2") -> None:
        """The one fix is `upstreamed`, status says the rebase drops it, and the rebase onto
        `target` does."""
        status = self.json("status", "--against", target, expect=1)
        ((patch,),) = [status["patches"]]
        assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
        summary = self.rebase_json("--to", target)
        assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]
        assert self.series("up") == []

    def commit(self, files: dict[str, bytes | None], message: str, tag: str | None = None) -> str:
        return self.upstream.commit(files, message, tag=tag)

    def landed_and_dropped(self, target: str, path: str) -> None:
        """The one fix is landed at `target`, as a user meets it: `status --against` says
        upstreamed (high) and exits 1, the rebase drops it (the series is empty), and the
        overlays deploy nothing of `path`."""
        status = self.json("status", "--against", target, expect=1)
        ((patch,),) = [status["patches"]]
        assert (patch["state"], patch["confidence"], patch["rebase"]) == \
            ("upstreamed", "high", "drop"), patch
        summary = self.rebase_json("--to", target)
        assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]
        assert self.series("up") == []
        self.cli("overlays")
        assert not (self.root / "overlays" / "up" / path).exists()

    def kept_by_rebase(self, target: str, path: str) -> bytes:
        """`rebase --to target` does not drop the one fix (a stop, aborted, or moved): it
        stays in the series, its change of `path` never under upstreamed/ (a part of it that
        landed in another file may be kept there); the overlay of `path` made after it."""
        rc, out, err = self.cli("rebase", "--to", target, expect=None)
        assert rc in (0, 3) and "dropped" not in out, out + err
        kept = self.root / "series" / "up" / "upstreamed" / "fix.patch"
        assert not kept.exists() or f"+++ b/{path}".encode() not in kept.read_bytes(), \
            kept.read_bytes()
        if rc == 3:
            self.cli("rebase", "--abort")
        assert self.series("up") == ["fix.patch"]
        self.cli("overlays")
        return (self.root / "overlays" / "up" / path).read_bytes()

    def landed_then_reverted(self, path: str, base: bytes, fixed: bytes,
                             kept: list[str]) -> tuple[int, str, str]:
        """After `overlays`, upstream lands fa's change of `path` (`base` to `fixed`) at v2 and
        the rebase drops fa (`kept` is the series left); then upstream reverts it at v3. The
        rebase onto v3, as it ran: (rc, out, err)."""
        self.cli("overlays")
        landed = self.commit({path: fixed}, "Fix a", tag="v2")
        self.cli("rebase", "--to", "v2")
        assert self.series("up") == kept
        self.commit({path: base}, f'Revert "Fix a"\n\nThis reverts commit {landed}.', tag="v3")
        return self.cli("rebase", "--to", "v3", expect=None)

    def add_fix(self, name: str, path: str, old: bytes | None, new: bytes, *, fields: str = "",
                description: str | None = None) -> bytes:
        """`name`.patch changing `path` from `old` (None: created) to `new`, made with git diff."""
        diff = diff_of(self.root.parent / f"diff-{name}", path, old, new)
        data = (f"Description: {description or 'fix ' + name}\n"
                "Author: Test Author <author@example.com>\n"
                "Upstream-Status: Pending\n"
                "Upstream: up\n"
                f"Base: {self.base}\n"
                f"{fields}"
                "\n"
                "Why the fix exists.\n"
                "---\n").encode() + diff
        add_patch_file(self.root, "up", f"{name}.patch", data)
        return data


# The upstream of the CLI suites: CRLF, no final newline, a subdirectory.
UPSTREAM_FILES = {
    "a.py": b"".join(b"line%d\n" % i for i in range(1, 21)),
    "pkg/b.py": b"x = 1\ny = 2\nz = 3\n",
    "pkg/crlf.txt": b"one\r\ntwo\r\nthree\r\n",
    "pkg/nofinal.txt": b"alpha\nbeta\ngamma",
}


def git_project(tmp_path: Path, files: dict[str, bytes] | None = None, *, name: str = "up",
                profiles: dict[str, str] | None = None,
                install_root: str = "/usr/lib/python3/site-packages") -> tuple[Path, str]:
    """A project (pyproject.toml) with one git upstream `name` made from `files` (default
    UPSTREAM_FILES) and pinned at main: (root, commit)."""
    upstream = Upstream(tmp_path / f"{name}-upstream", files or UPSTREAM_FILES,
                        message="upstream: initial")
    root = make_project(tmp_path / "project", pyproject=True, profiles=profiles)
    add_git_upstream(root, name, upstream.path, "main", install_root=install_root)
    return root, upstream.base


def lock_doc(root: Path) -> dict:
    return json.loads((root / "upstream.lock").read_bytes())
