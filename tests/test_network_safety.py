"""The forge misbehaving under the real commands (`status`, `lint`): a clear per-patch message,
bounded time (a rate limit longer than patchforge waits fails at once), nothing written to the
project, the token never in stdout, stderr, the HTTP cache or anything else under HOME, and never
sent to another host. The HTTP client's own behaviour is tested in test_http.py, test_forge.py and
test_registry.py; this is what a user sees."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

import pytest

from helpers.cli import run_cli
from helpers.project import add_patch_file
from helpers.snapshot import snapshot
from helpers.template import build_template

TOKEN = "ghp_SECRETtoken0123456789abcdefABCDEF"
URL = "https://github.com/o/r/pull/5"
PATCH = (b"Description: a fix\nAuthor: A U Thor <author@example.com>\nForwarded: " + URL.encode()
         + b"\nUpstream-Status: Submitted [" + URL.encode() + b"]\n\n---\n"
         b"diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n"
         b"@@ -1,5 +1,5 @@\n line1\n-line2\n+LINE2\n line3\n line4\n line5\n")


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    return build_template(tmp_path_factory)


@pytest.fixture
def project(env, tmp_path, monkeypatch, forge_server):
    root = env.fresh(tmp_path, monkeypatch)
    config = root / "patchforge.toml"
    config.write_bytes(config.read_bytes().replace(b"https://api.github.com",
                                                   forge_server.url.encode()))
    add_patch_file(root, "up", "fix.patch", PATCH)
    monkeypatch.setenv("GITHUB_TOKEN", TOKEN)
    monkeypatch.setenv("GITHUB_API_URL", forge_server.url)  # as GitHub Actions names its API
    forge_server.add_pull("o/r", 5, state="open")
    return root


def _no_token_anywhere(env, result, tmp_path: Path) -> None:
    assert TOKEN not in result.out and TOKEN not in result.err
    assert TOKEN[4:20] not in result.out + result.err  # not even a slice of it
    for base in (env.cache, Path(tmp_path), Path.home()):
        for path in base.rglob("*"):
            if path.is_file() and not path.is_symlink() and "objects" not in path.parts:
                assert TOKEN.encode() not in path.read_bytes(), path


MISBEHAVIOURS = {
    "server-error-forever": dict(kind="status", status=502, times=100),
    "not-found": dict(kind="status", status=404, times=100),
    "bad-json": dict(kind="bad_json", times=100),
    # Before, a RecursionError ended the lookup's thread with a traceback, and status waited
    # out the lookups' whole deadline (20 s) for its answer.
    "json-nested-too-deep": dict(kind="status", status=200, times=100,
                                 body=b"[" * 100_000 + b"]" * 100_000),
    "rate-limited-for-an-hour": dict(kind="status", status=429, headers={"Retry-After": "3600"},
                                     times=100),
    "rate-limit-reset-far": dict(kind="status", status=403, times=100,
                                 headers={"X-RateLimit-Remaining": "0",
                                          "X-RateLimit-Reset": "9999999999"}),
}


@pytest.mark.parametrize("case", sorted(MISBEHAVIOURS))
def test_status_with_a_failing_forge(env, project, tmp_path, forge_server, case):
    spec = dict(MISBEHAVIOURS[case])
    if case == "server-error-forever":
        # Retries with backoff are bounded (test_http.py); through the CLI keep it to one failure
        # per attempt budget by failing only the pull request, then answering.
        spec["times"] = 2
    forge_server.misbehave(spec.pop("kind"), path="/repos/o/r/pulls/5", **spec)
    before = snapshot(project)
    r = run_cli(project, "status", "--json")
    assert r.rc in (0, 1), r.text  # the series is judged; the forge's failure is reported per patch
    assert snapshot(project) == before
    document = json.loads(r.out)
    (entry,) = document["patches"]
    forwarded = entry["forwarded"]
    if case == "server-error-forever":
        assert forwarded.get("state") == "open"  # recovered after the retries
    else:
        assert forwarded.get("error"), forwarded
        assert "127.0.0.1" in forwarded["error"] or "JSON" in forwarded["error"] \
            or "rate" in forwarded["error"].lower(), forwarded
    # Every request carried the token to the forge itself, and only there.
    assert all(req.header("authorization") == f"Bearer {TOKEN}" for req in forge_server.requests)
    _no_token_anywhere(env, r, tmp_path)


def test_status_text_output_never_shows_the_token(env, project, tmp_path, forge_server):
    forge_server.misbehave("status", path="/repos/o/r/pulls/5", status=401, times=100,
                           body=f'{{"message": "Bad credentials {TOKEN}"}}'.encode())
    r = run_cli(project, "-v", "status")
    _no_token_anywhere(env, r, tmp_path)


def test_redirect_to_another_host_does_not_carry_the_token(env, project, tmp_path, forge_server,
                                                           other_server):
    forge_server.misbehave("redirect", path="/repos/o/r/pulls/5", times=100,
                           location=f"{other_server.url}/repos/o/r/pulls/5")
    r = run_cli(project, "status", "--json")
    assert r.rc in (0, 1), r.text
    assert other_server.requests, "the redirect was not followed"
    assert all(req.header("authorization") is None for req in other_server.requests)
    _no_token_anywhere(env, r, tmp_path)


def test_lint_with_a_failing_forge_warns_and_writes_nothing(env, project, tmp_path,
                                                            forge_server):
    forge_server.misbehave("bad_json", path="/repos/o/r/pulls/5", times=100)
    before = snapshot(project)
    r = run_cli(project, "lint", "--json")
    assert snapshot(project) == before
    document = json.loads(r.out)
    assert any(f["check"] == "forwarded" and "cannot check" in f["message"]
               for f in document["findings"]), document
    _no_token_anywhere(env, r, tmp_path)


def test_offline_status_answers_from_cache_without_the_network(env, project, tmp_path,
                                                               forge_server):
    r = run_cli(project, "status", "--json")
    assert json.loads(r.out)["patches"][0]["forwarded"]["state"] == "open"
    asked = len(forge_server.requests)
    r = run_cli(project, "--offline", "status", "--json")
    assert json.loads(r.out)["patches"][0]["forwarded"]["state"] == "open"
    assert len(forge_server.requests) == asked
    _no_token_anywhere(env, r, tmp_path)


def test_offline_never_reaches_a_git_remote_and_names_what_the_cache_lacks(tmp_path):
    """A git upstream served over smart HTTP on 127.0.0.1 (git's own http-backend, every request
    recorded). After one `fetch` with the network, `--offline` overlays, status, lint, fetch and
    a rebase dry run make no request at all: `fetch` brought the files the series touches
    (the store is a blob-less partial clone, which otherwise fetches a file when first read,
    offline or not). A file or a revision the cache lacks fails with exit 2 naming it, still
    without a request, and nothing is written."""
    import os
    import shutil

    from helpers.git import git
    from helpers.project import UPSTREAM_FILES, add_git_upstream, make_project, patch_bytes
    from helpers.servers import GitHttpServer
    from helpers.upstream import Upstream

    upstream = Upstream(tmp_path / "up-upstream", UPSTREAM_FILES, message="upstream: initial")
    server = GitHttpServer(upstream.path)
    try:
        root = make_project(tmp_path / "project", pyproject=True)
        add_git_upstream(root, "up", server.repo_url, "main")
        base = upstream.base

        def fix(name: str, rel: str, new: bytes) -> None:
            (upstream.path / rel).write_bytes(new)
            diff = git(upstream.path, "diff", "--", rel).encode()
            git(upstream.path, "checkout", "--", rel)
            add_patch_file(root, "up", name, patch_bytes("up", base, name, diff))

        fix("a.patch", "a.py", UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
        fix("b.patch", "pkg/b.py", b"x = 1\ny = 20\nz = 3\n")
        shutil.rmtree(os.environ["PATCHFORGE_CACHE"])  # a fresh clone's first fetch
        assert run_cli(root, "fetch").rc == 0
        assert server.requests, "the fetch did not go through the server"
        server.requests.clear()
        for args in (["overlays"], ["overlays", "--check"], ["status"], ["lint"], ["fetch"],
                     ["rebase", "--to", f"up={base}", "--dry-run"]):
            run = run_cli(root, "--offline", *args)
            assert run.rc in (0, 1), (args, run.text)
            assert server.paths() == [], (args, server.paths())

        # A fix of a file no command has read yet: offline, it is named, not fetched.
        fix("c.patch", "pkg/crlf.txt", b"one\r\nTWO\r\nthree\r\n")
        before = snapshot(root)
        run = run_cli(root, "--offline", "overlays")
        assert run.rc == 2 and "offline" in run.err and "pkg/crlf.txt" in run.err, run.text
        assert snapshot(root) == before and server.paths() == []
        # A revision the cache lacks: the same, naming the command that brings it.
        shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
        for args in (["status"], ["overlays"]):
            run = run_cli(root, "--offline", *args)
            assert run.rc == 2 and "patchforge fetch" in run.err, (args, run.text)
        assert snapshot(root) == before and server.paths() == []
        # With the network, the same commands go on.
        assert run_cli(root, "overlays").rc == 0 and server.paths()
    finally:
        server.close()


def _tiny_wheel_project(tmp_path, monkeypatch, other_server):
    """A project pinning tinypkg 1.2.0, a wheel upstream, from a wheel cache of its own; pip's
    index is `other_server` (a server on 127.0.0.1 recording requests). (root, the wheel)."""
    from helpers.project import make_project
    from helpers.upstream import build_wheel

    wheels = tmp_path / "wheels"
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    monkeypatch.setenv("PIP_INDEX_URL", f"{other_server.url}/simple")
    # Recorded as that index's file (the cache's origin record), as a download from it would be.
    wheel = build_wheel(wheels, "tinypkg", "1.2.0", {"tinypkg/mod.py": b"A = 1\nB = 2\n"})
    root = make_project(tmp_path / "project")
    assert run_cli(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.2.0",
                   "--install-root", "/opt/site").rc == 0
    return root, wheel


def test_offline_with_a_cached_wheel_asks_no_index(tmp_path, monkeypatch, other_server):
    """A wheel upstream whose wheel is in the cache, the store fresh (a new clone of the stack):
    `--offline` overlays, status, lint, fetch and a rebase dry run import it from the cache and
    ask the package index (a server on 127.0.0.1 recording requests) nothing. Without the wheel,
    they fail naming it, still asking nothing."""
    import os
    import shutil

    root, wheel = _tiny_wheel_project(tmp_path, monkeypatch, other_server)
    add_patch_file(root, "tiny", "fix.patch", (
        b"Description: fix\nAuthor: A <a@example.com>\nUpstream-Status: Pending\n\n---\n"
        b"diff --git a/tinypkg/mod.py b/tinypkg/mod.py\n--- a/tinypkg/mod.py\n"
        b"+++ b/tinypkg/mod.py\n@@ -1,2 +1,2 @@\n A = 1\n-B = 2\n+B = 20\n"))
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    for args in (["overlays"], ["status"], ["lint"], ["fetch"],
                 ["rebase", "--to", "tiny=1.2.0", "--dry-run"]):
        run = run_cli(root, "--offline", *args)
        assert run.rc in (0, 1), (args, run.text)
    assert other_server.paths() == []
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    wheel.unlink()
    run = run_cli(root, "--offline", "overlays")
    assert run.rc == 2 and wheel.name in run.err and "offline" in run.err, run.text
    assert other_server.paths() == []


def test_pip_never_imports_a_pip_package_the_stack_repository_holds(tmp_path, monkeypatch,
                                                                    other_server):
    """`fetch` in a stack's repository that carries a `pip/` package (a colleague's stack, a pull
    request checked out by CI), the pinned wheel not cached: the pip patchforge starts is the
    environment's, never the repository's `pip/__main__.py`."""
    import os
    import shutil

    root, wheel = _tiny_wheel_project(tmp_path, monkeypatch, other_server)
    marker = tmp_path / "repository-code-ran"
    (root / "pip").mkdir()
    (root / "pip/__init__.py").write_bytes(b"")
    (root / "pip/__main__.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).write_text('ran')\n")
    shutil.rmtree(os.environ["PATCHFORGE_CACHE"])
    wheel.unlink()
    run = run_cli(root, "fetch", cwd=root)
    assert run.rc == 2 and "pip download tinypkg==1.2.0 failed" in run.err, run.text
    assert not marker.exists()
    assert other_server.paths(), "the environment's pip asked the index"


def test_a_token_the_forge_echoes_in_an_answer_is_never_shown_or_cached(env, project, tmp_path,
                                                                         forge_server):
    """A proxy or forge that echoes the request's headers into a successful answer (a debug
    endpoint, a title built from them): before, the token was printed by `status --json` (the
    pull request's title) and written into the HTTP cache under the user's cache directory,
    which CI jobs save and restore. Now the answer's copy of the token is masked as it is read."""
    forge_server.pulls[("o/r", 5)]["title"] = f"Echo: Bearer {TOKEN}"
    r = run_cli(project, "status", "--json")
    assert r.rc in (0, 1), r.text
    assert json.loads(r.out)["patches"][0]["forwarded"]["title"] == "Echo: Bearer ***"
    _no_token_anywhere(env, r, tmp_path)


def test_an_environment_token_never_goes_to_a_forge_only_the_configuration_names(
        env, project, tmp_path, forge_server, monkeypatch):
    """`forge.api-url` is in the stack's configuration, which arrives by pull request: a CI job
    checking one (`status`, `lint`) sent its GITHUB_TOKEN to whatever host the pull request
    named. An environment token now goes only to api.github.com and to the API the environment
    names ($GITHUB_API_URL, which GitHub Actions sets; $GH_HOST, which gh reads): elsewhere the
    forge is asked without it, and a warning says why."""
    monkeypatch.delenv("GITHUB_API_URL")
    r = run_cli(project, "status", "--json")
    assert r.rc in (0, 1), r.text
    assert forge_server.requests, "the forge was not asked"
    assert all(req.header("authorization") is None for req in forge_server.requests)
    assert f"$GITHUB_TOKEN is not sent to {forge_server.host}" in r.err, r.err
    assert json.loads(r.out)["patches"][0]["forwarded"]["state"] == "open"
    _no_token_anywhere(env, r, tmp_path)
    asked = len(forge_server.requests)
    monkeypatch.setenv("GH_HOST", forge_server.host)
    r = run_cli(project, "status", "--json")
    assert r.rc in (0, 1) and "is not sent" not in r.err, r.text
    assert forge_server.requests[asked:] and all(
        req.header("authorization") == f"Bearer {TOKEN}" for req in forge_server.requests[asked:])


def test_a_forge_message_never_starts_a_line_of_the_output(env, project, tmp_path, forge_server):
    """A forge's error message is quoted in what patchforge prints (status, lint). One with a
    newline started a line of its own: `::error file=...::` there is a GitHub Actions workflow
    command, obeyed by the runner reading a CI job's output (an annotation, a mask, a change
    of the job's environment on older runners). Now the server's message is quoted on one
    line. (status shows the first 60 characters of the error, before the message.)"""
    message = "Not Found\n::error file=series/up/fix.patch::injected by the server\r\nmore"
    forge_server.misbehave("status", path="/repos/o/r/pulls/5", status=404, times=100,
                           body=json.dumps({"message": message}).encode())
    for args in (("lint",), ("lint", "--format", "github")):
        r = run_cli(project, *args)
        assert "injected by the server" in r.text, (args, r.text)
        for line in r.text.splitlines():
            assert not line.startswith("::error file=series/up/fix.patch::injected"), line
            assert not line.startswith("more"), line


def test_a_git_remote_that_stops_answering_is_given_up_and_never_blamed_on_the_lock(tmp_path):
    """A git upstream served over http whose server accepts the fetch and then sends nothing
    (a stalled server, a proxy holding the connection). Before, `fetch` (and every command that
    brings the pins in) waited for it forever: git sets no limit of its own. Now git gives up
    when nothing arrives for GIT_HTTP_LOW_SPEED_TIME seconds (120 unless the user sets it, as
    here), and the message says the locked commit could not be checked, never that the lock
    names a commit its source lacks (whose advice, re-pin it, changes a correct lock); exit 75,
    run it again later, not 2."""
    import os
    import subprocess
    import sys

    from helpers.env import REPO_ROOT
    from helpers.project import UPSTREAM_FILES, add_git_upstream, make_project
    from helpers.servers import GitHttpServer
    from helpers.upstream import Upstream

    upstream = Upstream(tmp_path / "up-upstream", UPSTREAM_FILES, message="upstream: initial")
    server = GitHttpServer(upstream.path)
    try:
        root = make_project(tmp_path / "project", pyproject=True)
        add_git_upstream(root, "up", server.repo_url, "main")
        server.misbehave("slow", path="/repo.git/git-upload-pack", delay=90, times=100)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), GIT_HTTP_LOW_SPEED_TIME="2",
                   PATCHFORGE_CACHE=str(tmp_path / "fresh-cache"))
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), "fetch"],
                              capture_output=True, env=env, timeout=60)
        err = proc.stderr.decode()
        assert proc.returncode == 75, err
        assert "could not be checked against" in err and "too slow" in err, err
        assert "re-pin" not in err and "is not a commit of" not in err, err
    finally:
        server.close()


def test_a_file_of_one_git_upstream_is_never_asked_of_another_upstreams_server(tmp_path,
                                                                                monkeypatch):
    """Two git upstreams in one cache: `a` served over http on 127.0.0.1, then `z`, a local
    repository. The store is a blob-less partial clone of both, and a file is fetched when a
    command first reads it. Before, that fetch asked every upstream's remote in turn, `a`'s
    first: z's blob ids went to a's server, and with that server holding the request (GitHub
    from a network that reaches only an internal mirror), every command on `z` waited for
    git's low-speed timeout, two minutes. Now only the remote of the upstream the revision is
    of is asked: status and overlays of z's fixes make no request to a's server."""
    from helpers.project import UPSTREAM_FILES

    with _z_beside_a_on_a_server(tmp_path) as (root, z, server, fix):
        # From here a's server takes each request and answers nothing for a minute.
        server.misbehave("slow", path="/repo.git/", delay=60, times=100)
        monkeypatch.setenv("GIT_HTTP_LOW_SPEED_TIME", "2")
        server.requests.clear()
        fix("one.patch", "a.py", UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
        run = run_cli(root, "status")
        assert run.rc in (0, 1), run.text
        assert "one.patch" in run.text, run.text
        assert server.paths() == [], server.paths()
        fix("two.patch", "pkg/b.py", b"x = 1\ny = 20\nz = 3\n")
        run = run_cli(root, "overlays")
        assert run.rc == 0, run.text
        assert b"y = 20" in (root / "overlays" / "z" / "pkg" / "b.py").read_bytes()
        assert server.paths() == [], server.paths()


def test_gits_own_fetch_of_a_file_of_one_upstream_never_asks_another_upstreams_server(
        tmp_path, monkeypatch):
    """The fetch patchforge asks for goes to the owning upstream's remote; but a git process
    that finds a file missing by itself (a rename's similarity, `-M`, reading both files of a
    pair the partial store never fetched) fetched it from every promisor remote in turn, the
    first configured upstream's server first. With that server taking requests and answering
    nothing, `status --against` and `rebase --to` of the other upstream's move waited for
    git's low-speed timeout (two minutes by default) on it. Now such a process is allowed the
    owner's remote alone: a's server gets no request, and z's rename is still followed."""
    from helpers.git import git
    from helpers.project import UPSTREAM_FILES

    with _z_beside_a_on_a_server(tmp_path) as (root, z, server, fix):
        fix("one.patch", "a.py", UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
        assert run_cli(root, "status").rc == 0
        # z moves a.py, changing a line of it: git's rename detection reads both files.
        (z.path / "moved.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line9\n",
                                                                         b"LINE9\n"))
        git(z.path, "rm", "-q", "a.py")
        git(z.path, "add", "moved.py")
        git(z.path, "commit", "-q", "-m", "z: move a.py")
        # From here a's server takes each request and answers nothing for a minute.
        server.misbehave("slow", path="/repo.git/", delay=60, times=100)
        monkeypatch.setenv("GIT_HTTP_LOW_SPEED_TIME", "2")
        server.requests.clear()
        run = run_cli(root, "status", "--against", "z=main")
        assert run.rc == 0, run.text
        assert server.paths() == [], server.paths()
        run = run_cli(root, "rebase", "--to", "z=main")
        assert run.rc == 0, run.text
        assert "follows a.py -> moved.py" in run.out, run.text
        assert server.paths() == [], server.paths()


@contextlib.contextmanager
def _z_beside_a_on_a_server(tmp_path):
    """A project with two git upstreams in one cache: `a` served over http on 127.0.0.1, then
    `z`, a local repository. Yields (root, z, a's server, fix), `fix(name, rel, new)` adding
    z's patch NAME that makes REL `new`; the server is closed after."""
    from helpers.git import git
    from helpers.project import UPSTREAM_FILES, add_git_upstream, make_project, patch_bytes
    from helpers.servers import GitHttpServer
    from helpers.upstream import Upstream

    a = Upstream(tmp_path / "a-upstream", {"x.py": b"x\n"}, message="a: initial")
    z = Upstream(tmp_path / "z-upstream", UPSTREAM_FILES, message="z: initial")
    server = GitHttpServer(a.path)
    try:
        root = make_project(tmp_path / "project", pyproject=True)
        add_git_upstream(root, "a", server.repo_url, "main")
        add_git_upstream(root, "z", str(z.path), "main", install_root="/opt/z")

        def fix(name: str, rel: str, new: bytes) -> None:
            (z.path / rel).write_bytes(new)
            diff = git(z.path, "diff", "--", rel).encode()
            git(z.path, "checkout", "--", rel)
            add_patch_file(root, "z", name, patch_bytes("z", z.base, name, diff))

        yield root, z, server, fix
    finally:
        server.close()


def test_a_remote_that_does_not_answer_ends_the_tries_of_a_release_spec(tmp_path):
    """`status --against v2` tries tag `v2`, then tag `2` (a release with or without its "v").
    With the configured remote not answering, each try waited for git's low-speed timeout (two
    minutes each, unless GIT_HTTP_LOW_SPEED_TIME says less, as here): the remote is down, not
    the tag missing, so the first failed listing ends the tries, and the message names the URL
    and never says to check the name; exit 75, the remote gave no answer."""
    import os
    import subprocess
    import sys

    from helpers.env import REPO_ROOT
    from helpers.project import UPSTREAM_FILES, add_git_upstream, make_project
    from helpers.servers import GitHttpServer
    from helpers.upstream import Upstream

    upstream = Upstream(tmp_path / "up-upstream", UPSTREAM_FILES, message="upstream: initial",
                        tag="v1")
    upstream.commit({"a.py": b"later\n"}, "later", tag="v2")
    server = GitHttpServer(upstream.path)
    try:
        root = make_project(tmp_path / "project", pyproject=True)
        add_git_upstream(root, "up", server.repo_url, "v1")
        server.requests.clear()
        server.misbehave("slow", path="/repo.git/", delay=600, times=100)
        env = dict(os.environ, PYTHONPATH=str(REPO_ROOT), GIT_HTTP_LOW_SPEED_TIME="2")
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(root), "status",
                               "--against", "v2"], capture_output=True, env=env, timeout=120)
        err = proc.stderr.decode()
        assert proc.returncode == 75, err
        assert server.paths() == ["/repo.git/info/refs?service=git-upload-pack"], \
            (server.paths(), err)
        assert server.repo_url in err and "could not be reached" in err, err
        assert "tag 2" not in err and "check the name" not in err, err
    finally:
        server.close()
