"""A git upstream whose URL is a blob-less partial clone (`git clone --bare --filter=blob:none`,
a common mirror): git's upload-pack there never fetches a file the clone lacks for another
repository, so nothing the mirror lacks can be read through it. Real git, the real CLI.
"""
from __future__ import annotations

from helpers.cli import ok, run_cli
from helpers.git import git
from helpers.project import UPSTREAM_FILES
from helpers.snapshot import tree_bytes
from helpers.upstream import Upstream


def _mirror(tmp_path):
    """An upstream tagged v1 and a blob-less bare clone of it (its promisor: the upstream)."""
    upstream = Upstream(tmp_path / "up", UPSTREAM_FILES, tag="v1")
    git(upstream.path, "config", "uploadpack.allowFilter", "true")
    mirror = tmp_path / "mirror.git"
    git(tmp_path, "clone", "-q", "--bare", "--filter=blob:none", f"file://{upstream.path}",
        str(mirror))
    return upstream, mirror


def _project(tmp_path):
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", "--standalone", cwd=root)
    return root


def _project_files(root):  # (.patchforge/lock, the command's lock, is local state)
    return {k: v for k, v in tree_bytes(root).items() if not k.startswith(".patchforge/")}


def test_upstream_add_refuses_a_mirror_no_file_can_be_read_from(tmp_path):
    """`upstream add` said "pinned v1" and every `new`/`edit` then failed with git's raw
    stderr: the pin is refused now, naming the clone, the file and the ways on."""
    upstream, mirror = _mirror(tmp_path)
    root = _project(tmp_path)
    before = _project_files(root)
    run = run_cli(root, "upstream", "add", "up", "--git", str(mirror), "--at", "v1")
    assert run.rc == 2, run.text
    assert f"upstream up: its repository {mirror} is a partial clone (`git clone --filter`) " \
           "that lacks a.py at " in run.err, run.err
    assert "nothing was written" in run.err, run.err
    assert f"({upstream.path})" in run.err or f"(file://{upstream.path})" in run.err, run.err
    assert "fetch --refetch origin" in run.err, run.err
    assert "lazy fetching" not in run.err and "cat-file" not in run.err, run.err
    assert _project_files(root) == before
    # The way on said works: the mirror made whole, the same command pins.
    git(mirror, "config", "--unset-all", "remote.origin.partialclonefilter")
    git(mirror, "fetch", "-q", "--refetch", "origin")
    ok(root, "upstream", "add", "up", "--git", str(mirror), "--at", "v1")


def test_new_and_edit_on_such_a_mirror_write_nothing_and_say_why(tmp_path):
    """A mirror holding the file `upstream add` reads (a.py, fetched into it on its own) but
    not pkg/b.py: `new fix --file pkg/b.py` printed "created", failed with git's raw stderr and
    left the empty fix listed (the next `new fix` refused it as already there). Now nothing is
    written and the message names the upstream, the file and the revision."""
    upstream, mirror = _mirror(tmp_path)
    git(mirror, "cat-file", "blob", "v1:a.py")  # the mirror fetches that one file itself
    root = _project(tmp_path)
    ok(root, "upstream", "add", "up", "--git", str(mirror), "--at", "v1")
    ok(root, "new", "first", "--file", "a.py")
    (root / ".patchforge/work/up/a.py").write_bytes(b"changed\n" + UPSTREAM_FILES["a.py"])
    ok(root, "refresh")
    before = _project_files(root)
    commit = git(upstream.path, "rev-parse", "v1").strip()
    for args in (["new", "fix", "--file", "pkg/b.py"], ["edit", "first", "--file", "pkg/b.py"]):
        run = run_cli(root, *args)
        assert run.rc == 2, run.text
        assert f"upstream up: its repository {mirror} is a partial clone" in run.err, run.err
        assert f"lacks pkg/b.py at {commit[:12]}" in run.err, run.err
        assert "lazy fetching" not in run.err and "cat-file" not in run.err, run.err
        assert "created" not in run.out, run.out
        assert _project_files(root) == before, args
        assert not (root / ".patchforge/work/up.json").exists()
    assert "fix" not in ok(root, "list").out


def test_a_mirror_served_over_http_is_said_and_nothing_written(tmp_path):
    """The same mirror served over smart HTTP (`git http-backend`), where it cannot be seen as
    a partial clone from here: `upstream add` failed with git's raw words from its reader ("git
    cat-file stopped: fatal: expected 'packfile' ... could not fetch ... from promisor remote").
    Now it names the upstream, the URL, the file and the revision, with the ways on; nothing is
    written, and the way on said works."""
    from helpers.servers import GitHttpServer

    upstream, mirror = _mirror(tmp_path)
    commit = git(upstream.path, "rev-parse", "v1").strip()
    server = GitHttpServer(mirror)
    try:
        root = _project(tmp_path)
        before = _project_files(root)
        run = run_cli(root, "upstream", "add", "up", "--git", server.repo_url, "--at", "v1")
        assert run.rc == 2, run.text
        assert f"upstream up: {server.repo_url} did not send a.py at {commit[:12]}" in run.err, \
            run.err
        assert "nothing was written" in run.err, run.err
        assert "partial clone (`git clone --filter`)" in run.err, run.err
        assert "cat-file" not in run.err and "promisor remote" not in run.err, run.err
        assert _project_files(root) == before
        git(mirror, "config", "--unset-all", "remote.origin.partialclonefilter")
        git(mirror, "fetch", "-q", "--refetch", "origin")
        ok(root, "upstream", "add", "up", "--git", server.repo_url, "--at", "v1")
    finally:
        server.close()
