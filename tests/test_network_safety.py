"""The forge misbehaving under the real commands (`status`, `lint`): a clear per-patch message,
bounded time (a rate limit longer than patchforge waits fails at once), nothing written to the
project, the token never in stdout, stderr, the HTTP cache or anything else under HOME, and never
sent to another host. The HTTP client's own behaviour is tested in test_http.py, test_forge.py and
test_registry.py; this is what a user sees."""
from __future__ import annotations

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
