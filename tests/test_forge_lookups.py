"""Pull requests named by patches are looked up at once, with one deadline; a forge that cannot
be reached is said once (with the --offline hint), and verbosity flags decide what is shown."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from helpers.cli import run_cli
from helpers.patches import stack_with_forwarded


def test_status_asks_for_every_pull_request_at_once(tmp_path, forge_server):
    for number in range(1, 5):
        forge_server.add_pull("acme/up", number, state="open")
    root = stack_with_forwarded(tmp_path, forge_server.url)
    run = run_cli(root, "status", "--json")
    assert run.rc == 0, run.err
    doc = json.loads(run.out)
    assert [p["forwarded"]["state"] for p in doc["patches"]] == ["open"] * 4
    assert sorted(r.path for r in forge_server.requests) == [
        f"/repos/acme/up/pulls/{n}" for n in range(1, 5)]


def test_unreachable_forge_is_said_once(tmp_path):
    root = stack_with_forwarded(tmp_path, "http://127.0.0.1:9", count=4)
    run = run_cli(root, "status")
    assert run.rc == 0, run.err
    assert run.err.count("the forge is unreachable") == 1, run.err
    assert "cannot connect to 127.0.0.1:9" in run.err
    assert "try --offline" in run.err
    assert run.out.count("PR: ") == 4
    # With --offline nothing is asked, and there is no --offline hint.
    offline = run_cli(root, "--offline", "status")
    assert offline.rc == 0 and "try --offline" not in offline.err


def test_a_forge_that_refuses_the_lookup_is_said_whole_in_the_table(tmp_path, forge_server):
    """The table cut the forge's answer at 60 characters, after a `pull request OWNER/REPO#N:`
    the row already says: `... answered 401` read `answered 4`. The prefix goes, and a cut is
    made at a word's end and marked."""
    forge_server.add_pull("acme/up", 1, state="open")
    forge_server.require_token = "secret"
    root = stack_with_forwarded(tmp_path, forge_server.url, count=1)
    run = run_cli(root, "status")
    assert run.rc == 0, run.err
    row = next(line for line in run.out.splitlines() if line.startswith("up/fix-1.patch"))
    assert row.endswith(f"PR: {forge_server.host} answered 401 Unauthorized "
                        "(Requires authentication)"), row
    from patchforge.cli.statusing import _shortened

    assert _shortened("answered 401 Unauthorized", 14) == "answered 401 …"
    assert _shortened("answered 401", 14) == "answered 401"


def test_quiet_and_verbose_levels(tmp_path):
    root = stack_with_forwarded(tmp_path, "http://127.0.0.1:9", count=1)
    # The patches were put there by hand: `fetch` brings the files they touch, which an
    # --offline command reads from the store and never from the upstream.
    assert run_cli(root, "-q", "fetch").rc == 0
    quiet = run_cli(root, "-q", "--offline", "status")
    assert quiet.rc == 0 and quiet.err == ""
    verbose = run_cli(root, "-v", "--offline", "status")
    assert "patchforge: up: judging 1 patch against main" in verbose.err
    assert "git " not in verbose.err  # git commands are debug, not phase lines
    debug = run_cli(root, "-vv", "--offline", "status")
    # (A warm status may start no git process at all: the store's pack indexes answer.)
    assert "patchforge.status: up: judging 1 patch against main" in debug.err and \
        "ms patchforge." in debug.err
    # A command that starts git says each process at -vv, never at -v.
    linted = {level: run_cli(root, level, "--offline", "lint", "--no-forge")
              for level in ("-v", "-vv")}
    assert "patchforge.git: git " not in linted["-v"].err
    assert "patchforge.git: git " in linted["-vv"].err and " ms" in linted["-vv"].err
    plain = run_cli(root, "--offline", "status")
    assert "judging" not in plain.err and "patchforge.git" not in plain.err
    assert plain.out == quiet.out == verbose.out == debug.out


def test_quiet_says_errors_only(tmp_path):
    """`-q` is documented as "errors only: no warnings", and quieted only the log: every
    `warning:` and `note:` a command says on stderr (a skipped fix the overlays lack, the
    overlays a delete leaves behind, a stopped rebase) still came out. With `-q` stderr holds
    the errors (and their hints) only; stdout and the exit code are what they are without it."""
    from test_ledger import B, make_stack

    stack = make_stack(tmp_path)
    stack.cli("overlays")
    stack.commit({"pkg/b.py": B.replace(b"    return 7\n", b"    return 70\n")}, "v2",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    plain = stack.cli("--offline", "status", expect=1)
    quiet = stack.cli("-q", "--offline", "status", expect=1)
    assert "note: up: a rebase is stopped" in plain[2] and quiet[2] == "", quiet
    assert quiet[1] == plain[1]
    refused = stack.cli("-q", "overlays", expect=2)[2]  # an error is said, with its hint
    assert refused.startswith("patchforge: error: `overlays` refused") and "hint: " in refused
    stack.cli("rebase", "--skip", expect=1)
    plain, quiet = stack.cli("overlays", expect=1), stack.cli("-q", "overlays", expect=1)
    assert "warning: the overlays lack a skipped fix" in plain[2], plain
    assert quiet[2] == "" and quiet[1] == plain[1], quiet
    plain = stack.cli("delete", "a-sign")
    assert "note: the series changed and overlays/ was not regenerated" in plain[2], plain
    quiet = stack.cli("-q", "delete", "new-file")
    assert quiet[2] == "" and quiet[1].startswith("removed new-file from the series"), quiet


def test_quiet_drops_the_lines_that_are_no_error(tmp_path, monkeypatch):
    """Lines on stderr that carry no `warning:` or `note:` and are no error came out under
    `-q` still: `verify`'s `NOT CHECKED` note (exit 0) and `status`'s hint for a series with
    no fix (nothing wrong). With `-q` stderr is empty; without it they are said as before,
    stdout and the exit code the same either way."""
    from test_reverts import _landed

    stack, _ = _landed(tmp_path / "kept")
    stack.cli("overlays")
    monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "fresh-cache"))
    plain, quiet = stack.cli("verify"), stack.cli("-q", "verify")
    assert plain[2].startswith("NOT CHECKED: whether up v2 still holds"), plain
    assert quiet[2] == "" and quiet[:2] == plain[:2], quiet
    monkeypatch.undo()
    from helpers.project import OneUpstreamStack

    empty = OneUpstreamStack(tmp_path / "empty", {"pkg/a.py": b"a = 1\n"})
    plain, quiet = empty.cli("status"), empty.cli("-q", "status")
    assert "hint: `patchforge new NAME --file PATH` starts a fix" in plain[2], plain
    assert quiet[2] == "" and quiet[:2] == plain[:2], quiet


def test_a_forge_answer_with_an_odd_merge_commit_is_reported_not_believed(tmp_path, forge_server):
    """A merged pull request whose merge_commit_sha is a number, a list or a name (`HEAD`,
    `main~1`) instead of a commit id: before, a number or list crashed status (exit 70, an
    internal error) and a name was handed to the forge's compare, which would count whether the
    target includes the PR from wherever that name points. Now the answer is refused as
    unexpected, per patch, and the series is judged anyway."""
    odd = [12345, ["x"], "HEAD", "main~1"]
    for number, sha in enumerate(odd, 1):
        forge_server.add_pull("acme/up", number, state="closed", merged=True, merge_commit_sha=sha)
    root = stack_with_forwarded(tmp_path, forge_server.url, count=len(odd))
    run = run_cli(root, "status", "--json")
    assert run.rc == 0, run.err
    doc = json.loads(run.out)
    for patch in doc["patches"]:
        assert patch["state"] == "applies"
        assert "is not a commit id" in patch["forwarded"]["error"], patch["forwarded"]
    assert not [r.path for r in forge_server.requests if "/compare/" in r.path]


def test_a_forge_answer_about_another_pull_request_or_of_the_wrong_types_is_not_believed(
        tmp_path, forge_server):
    """What a proxy or cache in front of the forge may answer for `pulls/N`: another pull
    request (merged), `"merged": "false"` (a string), a state that is neither open nor closed.
    Before, status reported the first two as merged and "included in the target" (the string
    "false" is true), the evidence a reader takes for the fix having landed. Now each is an
    unexpected answer, reported per patch, and the series is judged anyway."""
    merge = "c" * 40
    forge_server.add_pull("acme/up", 9, state="closed", merged=True, merge_commit_sha=merge)
    forge_server.pulls[("acme/up", 1)] = forge_server.pulls[("acme/up", 9)]
    forge_server.add_pull("acme/up", 2, state="closed", merge_commit_sha=merge)
    forge_server.pulls[("acme/up", 2)]["merged"] = "false"
    forge_server.add_pull("acme/up", 3, state="merged", merged=True, merge_commit_sha=merge)
    root = stack_with_forwarded(tmp_path, forge_server.url, count=3)
    run = run_cli(root, "status", "--json")
    assert run.rc == 0, run.err
    doc = json.loads(run.out)
    errors = [p["forwarded"].get("error", "") for p in doc["patches"]]
    assert "answered about pull request #9, not #1" in errors[0], errors
    assert "merged 'false' is not true or false" in errors[1], errors
    assert "state 'merged' is neither open nor closed" in errors[2], errors
    for patch in doc["patches"]:
        assert patch["state"] == "applies"
        assert "merged" not in patch["forwarded"], patch["forwarded"]
        assert not any("merged" in e for e in patch["evidence"]), patch["evidence"]


@pytest.mark.parametrize("kind", ["html", "latin-1", "utf-16", "nested", "array"])
def test_a_forge_body_that_is_no_json_object_is_said_per_patch(tmp_path, forge_server, kind):
    """What a proxy or a broken forge answers with a 200 for `pulls/N`: an HTML page, bytes
    that are not UTF-8, the pull request's JSON re-encoded as UTF-16, JSON nested a hundred
    thousand deep, an array. Each is said in the patch's row, naming the request and what is
    wrong, and the series is judged anyway; the UTF-16 one was read as JSON and believed
    (JSON between systems is UTF-8: the forge's own reader and every other JSON reader of
    patchforge refuse it)."""
    pull = forge_server.add_pull("acme/up", 1, state="closed", merged=True,
                                 merge_commit_sha="c" * 40)
    body, said = {
        "html": (b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>",
                 "the answer is not valid JSON: Expecting value"),
        "latin-1": (json.dumps(pull).replace('"A fix"', '"caf\u00e9"').encode("latin-1"),
                    "the answer is not UTF-8"),
        "utf-16": (json.dumps(pull).encode("utf-16"), "the answer is not UTF-8"),
        "nested": (b"[" * 100_000 + b"]" * 100_000,
                   "the answer is not valid JSON: nested deeper than patchforge reads"),
        "array": (json.dumps([pull]).encode(),
                  "unexpected pull request answer (a JSON list, not an object)"),
    }[kind]
    forge_server.misbehave("status", path="/repos/acme/up/pulls/1", status=200, body=body,
                           headers={"Content-Type": "application/json"}, times=9)
    root = stack_with_forwarded(tmp_path, forge_server.url, count=1)
    run = run_cli(root, "status", "--json")
    assert run.rc == 0 and "internal error" not in run.err, run.text
    (patch,) = json.loads(run.out)["patches"]
    assert patch["state"] == "applies" and "merged" not in patch["forwarded"], patch
    error = patch["forwarded"].get("error", "")
    assert f"{forge_server.url}/repos/acme/up/pulls/1" in error and said in error, error


@pytest.mark.parametrize("reader", ["status", "lint"])
def test_a_slow_forge_holds_back_no_write_out(tmp_path, reader):
    """`status` and `lint` asked the forge about the submitted fixes (the pull requests, and
    the comparison of a merged one's merge commit with the target) holding the project's read
    lock: a rebase's write-out waited for a slow forge. They ask first, then read under the
    lock. Each request is held by the forge until the project has been locked for writing."""
    import fcntl
    import queue
    import threading

    from helpers.servers import ForgeServer

    class HeldForge(ForgeServer):
        def __init__(self) -> None:
            super().__init__()
            self.arrived: queue.Queue = queue.Queue()
            self.go = threading.Semaphore(0)

        def route(self, method, path, query, req):
            self.arrived.put(path)
            self.go.acquire(timeout=120)
            return super().route(method, path, query, req)

    forge = HeldForge()
    try:
        root = stack_with_forwarded(tmp_path, forge.url, count=1)
        assert run_cli(root, "fetch").rc == 0
        pin = json.loads((root / "upstream.lock").read_bytes())["upstreams"]["up"]["commit"]
        merge = "c" * 40  # a merge commit the store does not have: the forge compares
        forge.add_pull("acme/up", 1, state="closed", merged=True, merge_commit_sha=merge)
        forge.comparisons[("acme/up", merge, pin)] = ("ahead", 2, 0)
        proc = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(root),
                                 reader, "--json"], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        try:
            for asked in ("/repos/acme/up/pulls/1", f"/repos/acme/up/compare/{merge}...{pin}"):
                assert forge.arrived.get(timeout=120) == asked
                directory = os.open(root, os.O_RDONLY)
                try:
                    fcntl.flock(directory, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError: held
                finally:
                    os.close(directory)
                forge.go.release()
        finally:
            forge.go.release(8)
            out, err = proc.communicate(timeout=300)
        assert forge.arrived.empty()  # asked once, not again under the lock
    finally:
        forge.close()
    document = json.loads(out)
    if reader == "status":
        assert proc.returncode == 0, err.decode()
        forwarded = document["patches"][0]["forwarded"]
        assert forwarded["included"] is True and forwarded["source"] == "forge compare"
    else:  # findings of the hand-written patch's header; none of the forge's answers
        assert proc.returncode == 1, err.decode()
        assert [f for f in document["findings"] if f["check"] == "forwarded"] == []


@pytest.mark.parametrize("forwarded", ["acme/..#1", "https://github.com/acme/../pull/1",
                                       "https://github.com/../up/pull/1"])
def test_a_repository_named_dot_dot_is_never_asked_for(tmp_path, forge_server, forwarded):
    """`Forwarded: acme/..#1` passed as OWNER/NAME: the request for /repos/acme/../pulls/1
    went out, its dot-segments resolved, as `GET /repos/pulls/1` with the token, and the row
    said the forge answered 404 about it. Now no request is sent, and the row says the
    Forwarded value is no pull request."""
    forge_server.add_pull("acme/up", 1, state="open")
    root = stack_with_forwarded(tmp_path, forge_server.url, count=1)
    patch = root / "series/up/fix-1.patch"
    text = patch.read_text()
    assert "Forwarded: https://github.com/acme/up/pull/1\n" in text
    patch.write_text(text.replace("https://github.com/acme/up/pull/1", forwarded))
    run = run_cli(root, "status")
    assert run.rc == 0, run.err
    assert forge_server.requests == []
    row = next(line for line in run.out.splitlines() if line.startswith("up/fix-1.patch"))
    assert "PR: not a pull request URL" in row, row
