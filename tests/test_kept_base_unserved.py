"""A fix kept as landed whose `Base` commit its upstream no longer serves: made on a pull
request's branch, landed by a squash, the branch deleted and git's garbage collected upstream.
In a fresh clone of the project, on a cold cache, the judge of kept fixes cannot read the
fix's base file (its functions, its paths before a rename, the history since). Judged without
it, a revert of the landing was quiet (exit 0), the fix in no overlay. Real git upstreams,
the project cloned with git, every command through the CLI."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from helpers.cli import run_cli, run_subprocess
from helpers.git import git
from helpers.project import OneUpstreamStack, add_patch_file, patch_bytes

BASE = (b"import math\n\n\ndef f(x):\n    y = x + 1\n    return math.floor(y)\n\n\n"
        b"def g(x):\n    y = x * 2\n    return math.ceil(y)\n")
GUARDED = BASE.replace(b"def g(x):\n", b'def g(x):\n    assert x >= 0, "x >= 0"\n')


class _Gone:
    """The fix made on upstream branch `feature` (its `Base`: that branch's commit), landed
    on main at v2 by a squash, after upstream moved its file into pkg/ when `renamed`; the
    project rebased onto v2 (the fix kept as landed); then the branch deleted and collected
    upstream (a copy kept in `backup`), and the project cloned fresh (`clone`) on a cold
    cache. `before`: c.py before the fix; `fixed`: the files as the fix leaves them (c.py
    GUARDED unless said); `meanwhile`: upstream's work committed before the landing (none
    unless said); `landed`: the files as the landing leaves them (`fixed` unless said)."""

    def __init__(self, tmp_path: Path, monkeypatch, *, renamed: bool = True,
                 before: bytes = BASE, fixed: dict[str, bytes] | None = None,
                 meanwhile: dict[str, bytes] | None = None,
                 landed: dict[str, bytes] | None = None) -> None:
        fixed = {"c.py": GUARDED} if fixed is None else fixed
        self.stack = a = OneUpstreamStack(tmp_path / "a", {"c.py": before, "b.py": b"other\n"})
        self.up = a.up
        git(self.up, "checkout", "-q", "-b", "feature")
        self.base = a.commit({"notes.txt": b"feature\n"}, "feature work")
        git(self.up, "checkout", "-q", "main")
        diff = a.upstream.diff(fixed, self.base)
        add_patch_file(a.root, "up", "fix.patch", patch_bytes("up", self.base, "guard g", diff))
        self.path = "c.py"
        if renamed:
            a.upstream.commit({}, "move c.py into pkg", {"c.py": "pkg/c.py"})
            self.path = "pkg/c.py"
        if meanwhile is not None:
            a.commit(meanwhile, "upstream's work before the landing")
        self.landing = a.commit({self.path if path == "c.py" else path: data
                                 for path, data in (landed or fixed).items()},
                                "g: guard negative x (#12)", tag="v2")
        a.cli("rebase", "--to", "v2")
        assert self.base in a.patch("up", "fix", "upstreamed").decode()
        self.backup = tmp_path / "backup.git"
        git(tmp_path, "clone", "-q", "--mirror", str(self.up), str(self.backup))
        git(self.up, "branch", "-D", "feature")
        git(self.up, "reflog", "expire", "--expire=now", "--all")
        git(self.up, "gc", "-q", "--prune=now")
        assert subprocess.run(["git", "-C", str(self.up), "cat-file", "-e",
                               f"{self.base}^{{commit}}"], capture_output=True).returncode
        git(a.root, "init", "-q")
        git(a.root, "add", "-A")
        git(a.root, "commit", "-q", "-m", "the project")
        self.clone = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(a.root), str(self.clone))
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cold-cache"))

    def commit(self, files: dict[str, bytes], message: str, tag: str) -> str:
        return self.stack.commit(files, message, tag=tag)

    def cli(self, *args: str, expect: int | None):
        result = run_cli(self.clone, *args)
        assert expect is None or result.rc == expect, (args, result.rc, result.text)
        return result

    def json(self, *args: str, expect: int) -> dict:
        return json.loads(self.cli(*args, "--json", expect=expect).out)

    def served_again(self) -> None:
        """The branch pushed back upstream (its commit served again)."""
        git(self.up, "fetch", "-q", str(self.backup), "feature:feature")


def test_a_revert_of_a_fix_whose_base_upstream_no_longer_serves_is_never_quiet(tmp_path,
                                                                               monkeypatch):
    """Renamed before the landing, reverted at v3: judged without its base file, `status
    --against v3` and `rebase --to v3` exited 0 saying nothing, and `status`, `overlays` after
    the move too (offline, it said nothing either), the fix in no overlay and not upstream;
    `bring-back` refused it as one upstream has. Now each says it needs attention (exit 1),
    naming the base commit upstream does not serve and what to do; at the landing's own
    revision (nothing changed since) it is quiet, since that needs no base."""
    gone = _Gone(tmp_path, monkeypatch)
    gone.cli("fetch", expect=0)
    # At the pin its files are as the landing left them: quiet, no base needed.
    doc = gone.json("status", expect=0)
    assert doc["gone_upstream"] == doc["reverted"] == [], doc
    gone.commit({"pkg/c.py": BASE}, 'Revert "g: guard negative x"\n\n'
                f"This reverts commit {gone.landing}.\n", tag="v3")
    doc = gone.json("status", "--against", "v3", expect=1)
    (said,) = doc["gone_upstream"] + doc["reverted"]
    assert (said["name"], said["kind"]) == ("fix.patch", "base-unserved"), said
    assert f"its base commit {gone.base[:12]} is not served by up" in said["message"], said
    assert "`patchforge fetch`" in said["message"], said
    # Offline nothing is asked: not checked, as a fix whose files the cache lacks.
    offline = gone.cli("--offline", "status", "--against", "v3", expect=0)
    assert f"NOT CHECKED: whether up v3 still holds up/upstreamed/fix.patch: its base commit " \
        f"{gone.base[:12]} is not in the cache" in offline.err, offline.text
    rebase = gone.cli("rebase", "--to", "v3", expect=1)
    assert "not judged (needs attention)" in rebase.out and gone.base[:12] in rebase.out, \
        rebase.text
    status = gone.cli("status", expect=1)
    assert "not judged (needs attention)" in status.out, status.text
    overlays = gone.cli("overlays", expect=1)
    assert "may lack the fix (not judged)" in overlays.text, overlays.text
    # bring-back takes it (judged on the pin, as a fix made there): upstream's file moved,
    # so it stops for the fix to be made again there, never "nothing to bring back".
    back = gone.cli("bring-back", "up/fix", expect=3)
    assert "nothing to bring back" not in back.text, back.text
    assert (gone.clone / "series/up/skipped/fix.patch").exists()


@pytest.mark.parametrize("where", ["another file", "its file"])
def test_a_fix_whose_base_upstream_no_longer_serves_is_quiet_only_where_no_base_is_needed(
        tmp_path, monkeypatch, where):
    """The mirror: upstream's later work leaves the fix's files as its landing left them
    (another file changed): quiet, rebase and status exit 0. Work in its own file (the fix
    still there, but only its base file could tell its place from a look-alike's): said, as
    not judged, exit 1, never quiet. Either way the base is asked of upstream by the first
    command alone (each asked again, one failing fetch per command)."""
    gone = _Gone(tmp_path, monkeypatch, renamed=False)
    if where == "another file":
        gone.commit({"b.py": b"other\nmore\n"}, "other work", tag="v3")
    else:
        gone.commit({"c.py": GUARDED + b"\n\ndef h(x):\n    return x\n"}, "add h", tag="v3")
    expect = 0 if where == "another file" else 1
    doc = gone.json("status", "--against", "v3", expect=expect)
    kinds = [g["kind"] for g in doc["gone_upstream"] + doc["reverted"]]
    assert kinds == ([] if expect == 0 else ["base-unserved"]), doc
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    gone.cli("rebase", "--to", "v3", expect=expect)
    gone.cli("status", expect=expect)
    assert not [line for line in trace.read_text().splitlines()
                if " fetch " in line and gone.base in line]


def test_a_base_upstream_does_not_serve_is_asked_once_and_again_by_fetch(tmp_path,
                                                                        monkeypatch):
    """Every command fetched the missing base again, each fetch failing the same way, none
    recorded. The first failure is recorded in the cache: later commands ask for it no more;
    `patchforge fetch` asks again (and says it is still not served); once upstream serves it
    again, `fetch` brings it and the revert is said as a revert, naming its commit."""
    gone = _Gone(tmp_path, monkeypatch)
    revert = gone.commit({"pkg/c.py": BASE}, 'Revert "g: guard negative x"\n\n'
                         f"This reverts commit {gone.landing}.\n", tag="v3")

    def fetches_of_base(*args: str, expect: int) -> tuple[int, str]:
        trace = tmp_path / "trace"
        trace.unlink(missing_ok=True)
        proc = run_subprocess(gone.clone, *args, env={"GIT_TRACE": str(trace)}, expect=expect)
        lines = trace.read_text().splitlines() if trace.exists() else []
        return (len([line for line in lines if " fetch " in line and gone.base in line]),
                proc.stderr.decode())

    assert fetches_of_base("status", "--against", "v3", expect=1)[0] == 1
    for args in (("status", "--against", "v3"), ("rebase", "--to", "v3", "--dry-run"),
                 ("status",)):
        assert fetches_of_base(*args, expect=1 if "v3" in args else 0)[0] == 0, args
    asked, err = fetches_of_base("fetch", expect=0)
    assert asked == 1 and f"its base commit {gone.base[:12]} is not served by up" in err, err
    assert fetches_of_base("status", "--against", "v3", expect=1)[0] == 0
    gone.served_again()
    assert fetches_of_base("fetch", expect=0)[0] == 1
    doc = gone.json("status", "--against", "v3", expect=1)
    (said,) = doc["reverted"]
    assert (said["name"], said["by"]) == ("fix.patch", revert), said



def _failing_server(gone: _Gone, answer: int):
    """`gone`'s upstream served over HTTP by git http-backend, the project's config and lock
    pointed at it; a fetch asking for a commit in its `failing` set (empty at first) gets the
    HTTP status `answer`. The caller closes it."""
    import gzip

    from helpers.servers import Answer, GitHttpServer

    class Failing(GitHttpServer):
        failing: set[bytes] = set()

        def route(self, method, path, query, req):
            body = gzip.decompress(req.body) if req.header("content-encoding") == "gzip" \
                else req.body
            if method == "POST" and any(sha in body for sha in self.failing):
                return Answer(answer, b"failing")
            return super().route(method, path, query, req)

    server = Failing(gone.up)
    for name in ("patchforge.toml", "upstream.lock"):
        path = gone.clone / name
        path.write_text(path.read_text().replace(str(gone.up), server.repo_url))
    return server


def test_a_network_failure_fetching_the_base_is_said_as_one_and_asked_again(tmp_path,
                                                                           monkeypatch):
    """The upstream, served over HTTP, fails (503) the request that asks for the kept fix's
    base: that was said "its base commit X is not served by up", as though upstream had
    answered it does not have it. Now it is said as the failure it is, the URL and git's
    error, exit 1, and recorded nowhere: the next command asks again, and once upstream
    answers that it lacks the commit it is said not served (and recorded)."""
    gone = _Gone(tmp_path, monkeypatch)
    gone.commit({"pkg/c.py": BASE}, 'Revert "g: guard negative x"\n\n'
                f"This reverts commit {gone.landing}.\n", tag="v3")
    server = _failing_server(gone, 503)
    try:
        server.failing = {gone.base.encode()}
        doc = gone.json("status", "--against", "v3", expect=1)
        (said,) = doc["gone_upstream"]
        assert said["kind"] == "base-unserved", said
        assert f"its base commit {gone.base[:12]} could not be fetched from up " \
            f"({server.repo_url}): " in said["message"], said
        assert "503" in said["message"] and "not served" not in said["message"], said
        assert list((tmp_path / "cold-cache").glob("kept/unserved/*/*")) == []
        fetched = gone.cli("fetch", expect=None)
        assert f"its base commit {gone.base[:12]} could not be fetched from up" in \
            fetched.err and "not served" not in fetched.err, fetched.text
        server.failing = set()
        doc = gone.json("status", "--against", "v3", expect=1)
        (said,) = doc["gone_upstream"]
        assert f"its base commit {gone.base[:12]} is not served by up" in said["message"], said
        assert [path.name for path in (tmp_path / "cold-cache").glob("kept/unserved/*/*")] \
            == [gone.base]
    finally:
        server.close()


@pytest.mark.parametrize("answer,code", [(503, 75), (403, 2)])
def test_fetch_that_could_not_bring_a_kept_fixs_base_exits_non_zero(tmp_path, monkeypatch,
                                                                    answer, code):
    """A CI job runs `patchforge fetch` to fill the cache and goes on: the upstream, served
    over HTTP by git http-backend, failed the request for a kept fix's base and `fetch` said
    so in a note and exited 0. It exits 75 where the remote gave no answer (a 503: run it
    again later) and 2 where it answered with an error (a 403), after saying what it fetched,
    naming the fix and its base (`--json` too: the document, then the exit). The mirror:
    once the remote answers that it lacks the commit (not served: recorded, and `status`
    says where that matters), and once it serves it, `fetch` exits 0."""
    gone = _Gone(tmp_path, monkeypatch)
    server = _failing_server(gone, answer)
    try:
        server.failing = {gone.base.encode()}
        for extra in ((), ("--json",)):
            fetched = gone.cli("fetch", *extra, expect=code)
            note = f"up/upstreamed/fix.patch: its base commit {gone.base[:12]} could not be " \
                f"fetched from up ({server.repo_url}): "
            assert f"could not be fetched: up/upstreamed/fix.patch (base {gone.base[:12]})" \
                in fetched.err, fetched.text
            if extra:
                doc = json.loads(fetched.out)
                assert [f["upstream"] for f in doc["fetched"]] == ["up"], doc
                assert any(note in said for said in doc["notes"]), doc
            else:
                assert "up v2: " in fetched.out and note in fetched.err, fetched.text
        assert list((tmp_path / "cold-cache").glob("kept/unserved/*/*")) == []
        server.failing = set()
        fetched = gone.cli("fetch", expect=0)
        assert f"its base commit {gone.base[:12]} is not served by up" in fetched.err, \
            fetched.text
        gone.served_again()
        fetched = gone.cli("fetch", expect=0)
        assert gone.base[:12] not in fetched.err, fetched.text
    finally:
        server.close()


def test_a_fix_upstream_has_said_without_its_base_is_cleared_by_delete_not_brought_back(
        tmp_path, monkeypatch):
    """Its base not served, upstream's work in its own file (the fix still there): said not
    judged, its ways on named. `bring-back`, named for where upstream lacks it, moved the fix
    into skipped/ and stopped on a conflict with nothing to make, and `--continue` refused a
    worktree with no change: the fix left in skipped/, needs attention. Now it is refused,
    nothing moved, naming delete; `delete`, the way where upstream has it, clears it (status
    exit 0, the fix under deleted/), the base still not served."""
    gone = _Gone(tmp_path, monkeypatch, renamed=False)
    gone.commit({"c.py": GUARDED + b"\n\ndef h(x):\n    return x\n"}, "add h", tag="v3")
    gone.cli("rebase", "--to", "v3", expect=1)
    (said,) = gone.json("status", expect=1)["gone_upstream"]
    assert said["kind"] == "base-unserved", said
    assert "`patchforge bring-back up/fix.patch` puts it back in the series where upstream " \
        "lacks it (judged on the pin), or `patchforge delete up/upstreamed/fix.patch` keeps " \
        "it under deleted/ where upstream has it" in said["message"], said
    kept = gone.clone / "series/up/upstreamed/fix.patch"
    before = kept.read_bytes()
    back = gone.cli("bring-back", "up/fix.patch", expect=2)
    assert "hold its change at its own place" in back.err and "nothing was moved" in back.err, \
        back.text
    assert "`patchforge delete up/upstreamed/fix.patch`" in back.err, back.text
    assert kept.read_bytes() == before and not (gone.clone / "series/up/skipped").exists() or \
        not list((gone.clone / "series/up/skipped").iterdir())
    gone.cli("delete", "up/upstreamed/fix.patch", expect=0)
    doc = gone.json("status", expect=0)
    assert doc["gone_upstream"] == doc["reverted"] == [], doc
    assert (gone.clone / "series/up/deleted/fix.patch").is_file()


def _h_added(gone: _Gone) -> Path:
    """Upstream's work in the fix's own file at v3 (the fix still there), the project moved
    there: the fix said `base-unserved`, naming `refresh ... --base LANDING^`. The kept file."""
    gone.commit({gone.path: GUARDED + b"\n\ndef h(x):\n    return x\n"}, "add h", tag="v3")
    gone.cli("rebase", "--to", "v3", expect=1)
    (said,) = gone.json("status", expect=1)["gone_upstream"]
    assert said["kind"] == "base-unserved", said
    assert f"`patchforge refresh up/upstreamed/fix.patch --base {gone.landing[:12]}^` makes " \
        "it on a commit upstream serves" in said["message"], said
    return gone.clone / "series/up/upstreamed/fix.patch"


def _said_reverted_at_v4(gone: _Gone) -> None:
    """Upstream reverts the landing at v4: judged with its base, it is said reverted."""
    gone.commit({gone.path: BASE + b"\n\ndef h(x):\n    return x\n"},
                'Revert "g: guard negative x"\n\n'
                f"This reverts commit {gone.landing}.\n", tag="v4")
    doc = gone.json("status", "--against", "v4", expect=1)
    assert [(g["name"], g["kind"]) for g in doc["reverted"] + doc["gone_upstream"]] == \
        [("fix.patch", "reverted")], doc


def test_a_fix_upstream_has_said_without_its_base_is_kept_judged_on_a_served_base(
        tmp_path, monkeypatch):
    """Its base not served, upstream's work in its own file: `delete` was the one way to clear
    it, and the deleted fix was judged by nothing after (a later revert of its landing went
    unsaid). `refresh up/upstreamed/fix.patch --base LANDING^`, the way the message names,
    makes it on the commit before its landing: only its Base line changes, status exits 0,
    and a revert of the landing at v4 is said reverted. Refused, exit 2, nothing written: a
    REV that holds the change already (the landing), one after the landing, the old base
    upstream does not serve, and a patch of the series (`rebase --to` moves those)."""
    gone = _Gone(tmp_path, monkeypatch, renamed=False)
    kept = _h_added(gone)
    before = kept.read_bytes()
    later = gone.commit({"b.py": b"other, later\n"}, "later work", tag="v3b")
    for rev, said in ((gone.landing[:12], "does not come before the landing"),
                      (gone.landing, "does not come before the landing"),
                      (later, "does not come before the landing"),
                      (gone.base, gone.base)):
        refused = gone.cli("refresh", "up/upstreamed/fix.patch", "--base", rev, expect=2)
        assert said in refused.err and "Traceback" not in refused.err, refused.text
        assert kept.read_bytes() == before
    refused = gone.cli("refresh", "up/fix.patch", "--base", gone.landing + "^", expect=2)
    assert "--base takes a fix kept under upstreamed/" in refused.err, refused.text
    done = gone.cli("refresh", "up/upstreamed/fix.patch", "--base", gone.landing[:12] + "^",
                    expect=0)
    parent = git(gone.up, "rev-parse", f"{gone.landing}^").strip()
    assert f"Base {gone.base[:12]} -> {parent[:12]}" in done.out, done.text
    assert kept.read_bytes() == before.replace(f"Base: {gone.base}".encode(),
                                               f"Base: {parent}".encode())
    doc = gone.json("status", expect=0)
    assert doc["gone_upstream"] == doc["reverted"] == [], doc
    again = json.loads(gone.cli("refresh", "up/upstreamed/fix.patch", "--base", parent,
                                "--json", expect=0).out)
    assert again["changed"] is False and again["base"] == {"from": parent, "to": parent}, again
    from patchforge.formats.schemas import validation_errors

    assert validation_errors(again, "refresh") == []
    _said_reverted_at_v4(gone)


def test_a_fix_whose_files_upstream_moved_before_its_landing_takes_a_base_before_the_move(
        tmp_path, monkeypatch):
    """The mirror: upstream moved c.py into pkg/ before the landing, so the commit before the
    landing lacks the file the fix was made on: refused, naming it, nothing written; the
    commit before the move takes it, and the landing's revert is then said reverted."""
    gone = _Gone(tmp_path, monkeypatch)
    kept = _h_added(gone)
    before = kept.read_bytes()
    refused = gone.cli("refresh", "up/upstreamed/fix.patch", "--base", gone.landing + "^",
                       expect=2)
    assert "(c.py: c.py does not exist)" in refused.err, refused.text
    assert kept.read_bytes() == before
    first = git(gone.up, "rev-list", "--max-parents=0", "main").strip()
    gone.cli("refresh", "up/upstreamed/fix.patch", "--base", first, expect=0)
    assert f"Base: {first}".encode() in kept.read_bytes()
    assert gone.json("status", expect=0)["gone_upstream"] == []
    _said_reverted_at_v4(gone)


def test_a_fix_upstream_lacks_said_without_its_base_is_brought_back_as_said(tmp_path,
                                                                          monkeypatch):
    """The mirror: renamed before the landing, then reverted, its base not served: said not
    judged; `bring-back`, the way where upstream lacks it, stops for the fix to be made again
    at the file's new path (upstream moved it), and once made there (the stop's ways: `add`
    the new path, `rm` the old) the fix is in the series: status exit 0, the overlay holding
    the guard once."""
    gone = _Gone(tmp_path, monkeypatch)
    gone.commit({"pkg/c.py": BASE}, 'Revert "g: guard negative x"\n\n'
                f"This reverts commit {gone.landing}.\n", tag="v3")
    gone.cli("rebase", "--to", "v3", expect=1)
    (said,) = gone.json("status", expect=1)["gone_upstream"]
    assert said["kind"] == "base-unserved", said
    back = gone.cli("bring-back", "up/fix.patch", expect=3)
    assert "make the fix in c.py" in back.err, back.text
    gone.cli("add", "pkg/c.py", expect=0)
    (gone.clone / ".patchforge/work/up/pkg/c.py").write_bytes(GUARDED)
    # (The stop's way for the path upstream moved: the fix's change to it dropped.)
    gone.cli("rm", "c.py", expect=0)
    gone.cli("bring-back", "--continue", expect=0)
    doc = gone.json("status", expect=0)
    assert doc["gone_upstream"] == doc["reverted"] == [], doc
    gone.cli("overlays", expect=0)
    overlay = (gone.clone / "overlays/up/pkg/c.py").read_bytes()
    assert overlay == GUARDED, overlay.decode()



# Two copies of one block; the fix adds a line to the first. Its hunk applies without fuzz at
# the second copy wherever the first holds the change already (the landing, or after it).
_BLOCK = b"if x:\n" + b"    pass\n" * 6
_LOGGED = b"if x:\n" + b"    pass\n" * 3 + b"    log()\n" + b"    pass\n" * 3
TWIN = b"# A\n" + _BLOCK + b"# B\n" + _BLOCK
TWIN_FIXED = b"# A\n" + _LOGGED + b"# B\n" + _BLOCK
_PUT_ABOVE = b"".join(b"# put above A, %d\n" % k for k in range(10))
# Each shape: c.py (or new.py) before the fix, as the fix leaves it, as upstream's work before
# the landing leaves it (None: no such work), as the landing leaves it (the fix's unless said).
SHAPES = {
    "the other copy without the change": (TWIN, "c.py", TWIN_FIXED, None, None),
    # The mirrors: the other copy has the change already at the fix's base (the fix makes the
    # first as the second); and the same with upstream's lines put above the fix's copy before
    # the landing: the fix applies there farther from its hunk's line than the other copy.
    "the other copy with the change": (b"# A\n" + _BLOCK + b"# B\n" + _LOGGED, "c.py",
                                       b"# A\n" + _LOGGED + b"# B\n" + _LOGGED, None, None),
    "the other copy above with the change, lines put above the fix's": (
        b"# B\n" + _LOGGED + b"# A\n" + _BLOCK, "c.py", b"# B\n" + _LOGGED + b"# A\n" + _LOGGED,
        b"# B\n" + _LOGGED + _PUT_ABOVE + b"# A\n" + _BLOCK,
        b"# B\n" + _LOGGED + _PUT_ABOVE + b"# A\n" + _LOGGED),
    "a file it creates": (BASE, "new.py", b"def h():\n    return 1\n", None, None),
}


def _landed_shape(tmp_path, monkeypatch, shape: str) -> tuple[_Gone, Path, bytes]:
    """The fix of `shape` landed at v2, its base gone; upstream's work in its file at v3, the
    project moved there: said `base-unserved`. (the stack, the kept file, its file at v4:
    upstream's revert of the landing)."""
    before, path, after, meanwhile, landed = SHAPES[shape]
    gone = _Gone(tmp_path, monkeypatch, renamed=False, before=before, fixed={path: after},
                 meanwhile=None if meanwhile is None else {path: meanwhile},
                 landed=None if landed is None else {path: landed})
    gone.commit({path: b"# upstream's work\n" + (landed or after)}, "work in its file",
                tag="v3")
    gone.cli("rebase", "--to", "v3", expect=1)
    (said,) = gone.json("status", expect=1)["gone_upstream"]
    assert said["kind"] == "base-unserved", said
    undone = b"# upstream's work\n" + (meanwhile or before) if path == "c.py" else None
    return gone, gone.clone / "series/up/upstreamed/fix.patch", undone


def _reverted_at_v4(gone: _Gone, undone: bytes | None, path: str) -> None:
    """Upstream reverts the landing at v4 (`undone`: the file then): said reverted, exit 1,
    by `status --against v4` and by the rebase."""
    revert = gone.commit({path: undone}, 'Revert "g: guard negative x"\n\n'
                         f"This reverts commit {gone.landing}.\n", tag="v4")
    doc = gone.json("status", "--against", "v4", expect=1)
    assert [(g["name"], g["kind"], g["by"]) for g in doc["reverted"] + doc["gone_upstream"]] \
        == [("fix.patch", "reverted", revert)], doc
    rebase = gone.cli("rebase", "--to", "v4", expect=1)
    assert "reverted upstream (needs attention): fix up/fix.patch" in rebase.out, rebase.text


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_the_landing_itself_is_refused_as_a_kept_fixs_base(tmp_path, monkeypatch, shape):
    """`refresh up/upstreamed/fix.patch --base LANDING` (the `^` forgotten) was taken for a fix
    whose hunk has its code twice in the file (it applied at the other copy) or that creates
    a file (nothing asked of it): judged from the landing, a later revert of the landing was
    quiet (`status --against` exit 0, `rebase` "nothing to do"), the fix in no overlay and not
    upstream. Now refused, exit 2, nothing written, naming `LANDING^`; `--base LANDING^` is
    taken, and the revert is said reverted (exit 1). The mirrors: the other copy has the
    change already at the base (found there backwards), even nearer the hunk's line than the
    fix's own copy (upstream put lines above it before the landing): `LANDING^` taken."""
    gone, kept, undone = _landed_shape(tmp_path, monkeypatch, shape)
    written = kept.read_bytes()
    for rev in (gone.landing, gone.landing[:12], "v2"):
        refused = gone.cli("refresh", "up/upstreamed/fix.patch", "--base", rev, expect=2)
        assert "does not come before the landing of series/up/upstreamed/fix.patch" in \
            refused.err and f"`--base {gone.landing[:12]}^`" in refused.err, refused.text
        assert kept.read_bytes() == written
    gone.cli("refresh", "up/upstreamed/fix.patch", "--base", gone.landing + "^", expect=0)
    parent = git(gone.up, "rev-parse", f"{gone.landing}^").strip()
    assert kept.read_bytes() == written.replace(f"Base: {gone.base}".encode(),
                                                f"Base: {parent}".encode())
    assert gone.json("status", expect=0)["gone_upstream"] == []
    _reverted_at_v4(gone, undone, SHAPES[shape][1])


@pytest.mark.parametrize("shape", ["the other copy without the change",
                                   "the other copy above with the change, lines put above "
                                   "the fix's",
                                   "the other copy worked on after the landing"])
def test_a_kept_fix_without_its_landing_recorded_refuses_every_base(tmp_path, monkeypatch,
                                                                    shape):
    """A fix kept with no landing commit recorded (`Applied-Upstream: v2`, as a rebase keeps
    one whose landing it did not find): nothing tells a REV before the landing from one after
    it. `--base LANDING` was taken where upstream worked on the other copy of the code after
    the landing (the hunk applied there, at code the pin no longer has as it was), and the
    landing's revert was then quiet, exit 0, the fix in no overlay. Now every REV is refused,
    exit 2, nothing written, naming the `Applied-Upstream` line and the way on; with the
    landing recorded as the hint says, `LANDING^` is taken and the revert is said."""
    if shape == "the other copy worked on after the landing":
        gone = _Gone(tmp_path, monkeypatch, renamed=False, before=TWIN,
                     fixed={"c.py": TWIN_FIXED})
        worked = TWIN_FIXED.replace(b"# B\nif x:\n    pass\n",
                                    b"# B\nif x:\n    pass  # B's work\n")
        gone.commit({"c.py": worked}, "work in B", tag="v3")
        gone.cli("rebase", "--to", "v3", expect=1)
        kept = gone.clone / "series/up/upstreamed/fix.patch"
        undone = worked.replace(_LOGGED, _BLOCK, 1)
    else:
        gone, kept, undone = _landed_shape(tmp_path, monkeypatch, shape)
    recorded = kept.read_bytes()
    kept.write_bytes(re.sub(rb"(Applied-Upstream: [^,\n]*), commit:[0-9a-f]{40}", rb"\1",
                            recorded))
    written = kept.read_bytes()
    assert b"commit:" not in written
    line = written.split(b"\n").index(next(x for x in written.split(b"\n")
                                           if x.startswith(b"Applied-Upstream:"))) + 1
    for rev in (gone.landing, gone.landing + "^", "v1"):
        refused = gone.cli("refresh", "up/upstreamed/fix.patch", "--base", rev, expect=2)
        assert f"series/up/upstreamed/fix.patch:{line}: " in refused.err and \
            "records no landing up serves" in refused.err and \
            "commit:ID" in refused.err, refused.text
        assert kept.read_bytes() == written
    kept.write_bytes(recorded)
    gone.cli("refresh", "up/upstreamed/fix.patch", "--base", gone.landing, expect=2)
    gone.cli("refresh", "up/upstreamed/fix.patch", "--base", gone.landing + "^", expect=0)
    assert gone.json("status", expect=0)["gone_upstream"] == []
    _reverted_at_v4(gone, undone, "c.py")


def test_a_landing_before_the_recorded_one_is_refused_as_a_kept_fixs_base(tmp_path):
    """A fix landed, reverted, brought back and landed again: kept with its second landing.
    `refresh --base FIRST_LANDING` (before the recorded landing, but holding the change) was
    taken where the hunk's code is twice in the file; judged from it, the second landing's
    revert was quiet. Now refused, exit 2, nothing written ("holds its change already",
    naming the hunk's line); the commit before the first landing and the first revert
    (neither holds it) are taken, and the second revert is then said reverted."""
    stack = OneUpstreamStack(tmp_path, {"c.py": TWIN, "b.py": b"other\n"})
    stack.add_fix("fa", "c.py", TWIN, TWIN_FIXED)
    first = stack.commit({"c.py": TWIN_FIXED}, "log a (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    undone = stack.commit({"c.py": TWIN}, f'Revert "log a"\n\nThis reverts commit {first}.\n',
                          tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
    again = stack.commit({"c.py": TWIN_FIXED}, "log a, again (#12)", tag="v4")
    stack.cli("rebase", "--to", "v4")
    assert stack.series("up") == []
    kept = stack.root / "series/up/upstreamed/fa.patch"
    written = kept.read_bytes()
    assert f"commit:{again}".encode() in written
    rc, _, err = stack.cli("refresh", "up/upstreamed/fa.patch", "--base", first, expect=2)
    assert f"up {first} holds its change already (c.py: hunk 1 applies there only at line " \
        f"12, code its landing {again[:12]} leaves as it was" in err and \
        "series/up/upstreamed/fa.patch:" in err and f"`--base {again[:12]}^`" in err, err
    assert kept.read_bytes() == written
    for rev in (first + "^", undone):
        stack.cli("refresh", "up/upstreamed/fa.patch", "--base", rev, expect=0)
        base = git(stack.up, "rev-parse", rev).strip()
        assert f"Base: {base}".encode() in kept.read_bytes()
        assert stack.json("status", expect=0)["reverted"] == []
    last = stack.commit({"c.py": TWIN}, f'Revert "log a, again"\n\nThis reverts commit {again}.\n',
                        tag="v5")
    doc = stack.json("status", "--against", "v5", expect=1)
    assert [(g["name"], g["kind"], g["by"]) for g in doc["reverted"]] == \
        [("fa.patch", "reverted", last)], doc


class _Picked:
    """The fix landed upstream on branch `release` (v2), the project rebased there (the fix
    kept as landed, its landing commit recorded); upstream then cherry-picked the landing
    onto main after work of its own (v3) and the project moved there: the kept fix holds at the pin, but its
    recorded landing is no ancestor of it, so a fresh clone's cold cache has it only by
    asking upstream for it. The project cloned fresh (`clone`), `up`: the upstream."""

    def __init__(self, tmp_path: Path, monkeypatch) -> None:
        self.stack = a = OneUpstreamStack(tmp_path / "a", {"c.py": BASE, "b.py": b"other\n"})
        self.up = a.up
        a.add_fix("fix", "c.py", BASE, GUARDED)
        git(self.up, "checkout", "-q", "-b", "release")
        self.landing = a.commit({"c.py": GUARDED}, "g: guard negative x (#12)", tag="v2")
        git(self.up, "checkout", "-q", "main")
        a.cli("rebase", "--to", "v2")
        assert f"commit:{self.landing}" in a.patch("up", "fix", "upstreamed").decode()
        a.commit({"b.py": b"other, on main\n"}, "main's own work")
        git(self.up, "cherry-pick", "v2")
        git(self.up, "tag", "v3")
        a.cli("rebase", "--to", "v3")
        assert f"commit:{self.landing}" in a.patch("up", "fix", "upstreamed").decode()
        assert subprocess.run(["git", "-C", str(self.up), "merge-base", "--is-ancestor",
                               self.landing, "v3"]).returncode == 1
        git(a.root, "init", "-q")
        git(a.root, "add", "-A")
        git(a.root, "commit", "-q", "-m", "the project")
        self.clone = tmp_path / "clone"
        git(tmp_path, "clone", "-q", str(a.root), str(self.clone))
        monkeypatch.setenv("PATCHFORGE_CACHE", str(tmp_path / "cold-cache"))

    def cli(self, *args: str, expect: int | None):
        result = run_cli(self.clone, *args)
        assert expect is None or result.rc == expect, (args, result.rc, result.text)
        return result


@pytest.mark.parametrize("answer,code", [(503, 75), (403, 2)])
def test_fetch_that_could_not_bring_a_kept_fixs_landing_exits_non_zero(tmp_path, monkeypatch,
                                                                       answer, code):
    """The kept fix's recorded landing commit (its `Applied-Upstream: ..., commit:X`), no
    ancestor of the pin, is asked of upstream by `fetch`; upstream, served over HTTP by git
    http-backend, failed that request, and `fetch` said nothing of it and exited 0, a CI job
    going on with a cache that lacks it. As for its base: exit 75 where the remote gave no
    answer (a 503), 2 where it answered with an error (a 403), after saying what it fetched,
    naming the fix and its landing (`--json` too: the document, then the exit). The mirrors:
    once upstream answers that it lacks the commit (its branch deleted and collected), a note
    says it is not served, exit 0; once upstream serves it again, `fetch` exits 0, saying
    nothing of it."""
    picked = _Picked(tmp_path, monkeypatch)
    server = _failing_server(picked, answer)
    try:
        server.failing = {picked.landing.encode()}
        for extra in ((), ("--json",)):
            fetched = picked.cli("fetch", *extra, expect=code)
            note = f"up/upstreamed/fix.patch: its landing commit {picked.landing[:12]} could " \
                f"not be fetched from up ({server.repo_url}): "
            assert f"could not be fetched: up/upstreamed/fix.patch (landing " \
                f"{picked.landing[:12]})" in fetched.err, fetched.text
            if extra:
                doc = json.loads(fetched.out)
                assert [f["upstream"] for f in doc["fetched"]] == ["up"], doc
                assert any(note in said for said in doc["notes"]), doc
            else:
                assert "up v3: " in fetched.out and note in fetched.err, fetched.text
        assert list((tmp_path / "cold-cache").glob("kept/unserved/*/*")) == []
        server.failing = set()
        backup = tmp_path / "backup.git"
        git(tmp_path, "clone", "-q", "--mirror", str(picked.up), str(backup))
        git(picked.up, "branch", "-D", "release")
        git(picked.up, "tag", "-d", "v2")
        git(picked.up, "reflog", "expire", "--expire=now", "--all")
        git(picked.up, "gc", "-q", "--prune=now")
        fetched = picked.cli("fetch", expect=0)
        assert f"up/upstreamed/fix.patch: its landing commit {picked.landing[:12]} is not " \
            "served by up" in fetched.err, fetched.text
        git(picked.up, "fetch", "-q", str(backup), "release:release")
        fetched = picked.cli("fetch", expect=0)
        assert picked.landing[:12] not in fetched.text, fetched.text
        picked.cli("status", expect=0)
    finally:
        server.close()
