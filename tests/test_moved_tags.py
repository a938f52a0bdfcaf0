"""A tag the upstream moves (`git tag -f` of a re-spun release, a `nightly` tag CI re-points)
between two commands: the store's copy, from the first fetch and shared by every project of the
cache, is checked against the remote (one ls-remote of its tags) and follows it, saying so;
--offline answers from the store as last fetched; a tag deleted upstream is refused. Real git
repositories, the command line as a user runs it."""
from __future__ import annotations

import json
import shutil

from helpers.cli import run_cli, run_subprocess
from helpers.git import git
from helpers.project import OneUpstreamStack, add_git_upstream, make_project

FILES = {"a.py": b"".join(b"line %d\n" % i for i in range(1, 31))}
FIXED = FILES["a.py"].replace(b"line 5\n", b"line 5 fixed\n")


def _stack(tmp_path) -> OneUpstreamStack:
    s = OneUpstreamStack(tmp_path, FILES)
    s.add_fix("fix", "a.py", FILES["a.py"], FIXED)
    return s


def _later(s: OneUpstreamStack, n: int) -> str:
    """A new upstream commit on main, changing a line far from the fix."""
    text = FILES["a.py"].replace(b"line 25\n", b"line 25 v%d\n" % n)
    return s.commit({"a.py": text}, f"c{n}")


def _fetched_tag(s: OneUpstreamStack, tag: str) -> str:
    """A new upstream commit tagged `tag`, which the store learns by `status --against TAG`."""
    first = _later(s, 2)
    git(s.up, "tag", tag)
    assert _against(s, tag) == (first, "")
    return first


def _against(s: OneUpstreamStack, spec: str, *flags: str) -> tuple[str, str]:
    """(the commit `status --against SPEC` judged against, what it said on stderr)."""
    result = run_cli(s.root, *flags, "status", "--against", spec, "--json")
    assert result.rc in (0, 1), result.text
    return json.loads(result.out)["targets"]["up"]["commit"], result.err


def test_a_tag_moved_upstream_between_two_commands_is_followed_and_said(tmp_path):
    s = _stack(tmp_path)
    first = _fetched_tag(s, "nightly")
    second = _later(s, 3)
    git(s.up, "tag", "-f", "nightly")
    lock = s.lock_bytes()

    # The dry run names the commit the tag names now, and says the tag moved.
    dry = run_cli(s.root, "rebase", "--to", "nightly", "--dry-run")
    assert dry.rc == 0, dry.text
    assert f"nightly ({second[:12]})" in dry.out and first[:12] not in dry.out, dry.out
    assert f"tag nightly moved upstream: was {first[:12]}, now {second[:12]}" in dry.err, dry.err
    # status --against agrees with it, and says nothing more: the store follows the tag now.
    assert _against(s, "nightly") == (second, "")
    assert s.lock_bytes() == lock  # no pin changed by looking

    rebased = run_cli(s.root, "rebase", "--to", "nightly")
    assert rebased.rc == 0, rebased.text
    pin = s.lock()["upstreams"]["up"]
    assert (pin["commit"], pin["label"]) == (second, "nightly")


def test_a_re_spun_annotated_release_tag_is_followed_by_its_version(tmp_path):
    """`rebase --to 1.0` finds the tag v1.0 (the version's spelling the store knows) and checks
    it: an annotated tag re-made with `tag -f -a` on another commit is followed; re-made on the
    same commit (another tag object) it is no move at all."""
    s = _stack(tmp_path)
    first = _later(s, 2)
    git(s.up, "tag", "-a", "-m", "release 1.0", "v1.0")
    assert _against(s, "1.0") == (first, "")
    git(s.up, "tag", "-f", "-a", "-m", "release 1.0, again", "v1.0")
    assert _against(s, "1.0") == (first, "")  # a new tag object, the same commit: no move
    second = _later(s, 3)
    git(s.up, "tag", "-f", "-a", "-m", "release 1.0, re-spun", "v1.0")
    commit, said = _against(s, "1.0")
    assert commit == second
    assert f"tag v1.0 moved upstream: was {first[:12]}, now {second[:12]}" in said, said
    rebased = run_cli(s.root, "rebase", "--to", "1.0")
    assert rebased.rc == 0 and s.lock()["upstreams"]["up"]["commit"] == second, rebased.text


def test_two_projects_sharing_a_cache_both_see_where_the_tag_is_now(tmp_path):
    """The store is shared by every project of the cache (PATCHFORGE_CACHE): one project's first
    fetch of a tag no longer answers for the others once the upstream moves it."""
    s = _stack(tmp_path / "one")
    other = make_project(tmp_path / "two" / "project")
    add_git_upstream(other, "up", s.up, "v1")
    first = _fetched_tag(s, "nightly")
    second = _later(s, 3)
    git(s.up, "tag", "-f", "nightly")

    # A process of its own, as a user runs it (no -v: the warning is shown all the same).
    said = run_subprocess(other, "rebase", "--to", "nightly", expect=0).stderr.decode()
    assert f"tag nightly moved upstream: was {first[:12]}, now {second[:12]}" in said, said
    assert (tmp_path / "two" / "project" / "upstream.lock").read_text().count(second) == 1
    # The first project, whose last look said `first`, is answered with the tag's commit now.
    rebased = run_cli(s.root, "rebase", "--to", "nightly")
    assert rebased.rc == 0, rebased.text
    assert s.lock()["upstreams"]["up"]["commit"] == second


def test_offline_answers_from_the_store_as_last_fetched(tmp_path):
    s = _stack(tmp_path)
    first = _fetched_tag(s, "nightly")
    _later(s, 3)
    git(s.up, "tag", "-f", "nightly")
    # No remote is asked offline: with the upstream gone the answer is the store's, unsaid.
    shutil.move(s.up, tmp_path / "away")
    assert _against(s, "nightly", "--offline") == (first, "")
    dry = run_cli(s.root, "--offline", "rebase", "--to", "nightly", "--dry-run")
    assert dry.rc == 0 and f"nightly ({first[:12]})" in dry.out, dry.text
    # Online, a remote that cannot be reached says so, and that --offline answers.
    refused = run_cli(s.root, "status", "--against", "nightly")
    assert refused.rc == 2, refused.text
    assert "tag 'nightly' could not be checked against" in refused.err, refused.err
    assert "with --offline the store answers as last fetched" in refused.err, refused.err


def test_an_unreachable_remote_is_said_as_such_with_offline_in_text_and_json(tmp_path):
    """The store has the tag, the remote cannot be reached: the name is right, so the hint
    says the remote could not be reached and that --offline answers (it said "check the
    name"), and the --json error document, which has only the message and the hint, keeps
    that advice (it lost it)."""
    s = _stack(tmp_path)
    first = _fetched_tag(s, "nightly")
    shutil.move(s.up, tmp_path / "away")
    before = s.snapshot()
    for args in (("status", "--against", "nightly"), ("rebase", "--to", "nightly", "--dry-run"),
                 ("rebase", "--to", "nightly")):
        refused = run_cli(s.root, *args)
        assert refused.rc == 2, refused.text
        hint = refused.err.rsplit("hint: ", 1)[-1]
        assert "could not be reached" in hint and "--offline" in hint and \
            first[:12] in hint and "check the name" not in hint, refused.err
        as_json = run_cli(s.root, *args, "--json")
        assert as_json.rc == 2, as_json.text
        error = json.loads(as_json.out)["error"]
        assert error["hint"] == hint.strip(), (error, hint)
    assert s.snapshot() == before
    # A name the store does not have either: the remote is what failed, not the name.
    refused = run_cli(s.root, "status", "--against", "v9", "--json")
    hint = json.loads(refused.out)["error"]["hint"]
    assert "could not be reached" in hint and "check the name" not in hint, hint
    # The advice works.
    assert _against(s, "nightly", "--offline")[0] == first


def test_a_tag_deleted_upstream_is_refused_naming_the_commit_the_store_has(tmp_path):
    s = _stack(tmp_path)
    first = _fetched_tag(s, "nightly")
    git(s.up, "tag", "-d", "nightly")
    before = s.snapshot()
    for args in (("status", "--against", "nightly"), ("rebase", "--to", "nightly")):
        refused = run_cli(s.root, *args)
        assert refused.rc == 2, refused.text
        assert "no longer has tag 'nightly'" in refused.err, refused.err
        assert first in refused.err and "--offline" in refused.err, refused.err
    assert s.snapshot() == before
    # Offline the store still answers; naming the commit is the way to keep using it.
    assert _against(s, "nightly", "--offline")[0] == first
    assert _against(s, first[:12])[0] == first


def test_a_tag_deleted_upstream_for_a_branch_of_its_name_is_that_branch(tmp_path):
    s = _stack(tmp_path)
    first = _fetched_tag(s, "release")
    git(s.up, "tag", "-d", "release")
    second = _later(s, 3)
    git(s.up, "branch", "release")
    assert _against(s, "release") == (second, "")
    # Offline, as last fetched: the branch (the deleted tag is no longer the store's answer).
    assert _against(s, "release", "--offline") == (second, "")
    assert _against(s, first)[0] == first  # its commit is kept


def test_a_followed_tag_that_moved_is_where_pr_drafts_onto(tmp_path):
    """`follow = "<tag>"` (a stable tag a release process re-points) is read by `pr` (and
    `bump`) through the same resolution: the draft goes onto the commit the tag names now."""
    s = _stack(tmp_path)
    config = s.root / "patchforge.toml"
    config.write_text(config.read_text().replace("[upstreams.up]\n",
                                                  '[upstreams.up]\nfollow = "stable"\n'))
    assert 'follow = "stable"' in config.read_text()
    first = _later(s, 2)
    git(s.up, "tag", "stable")
    _later(s, 8)  # main moves on: the draft is onto the tag, not the default branch
    drafted = run_cli(s.root, "pr", "fix", "--json")
    assert drafted.rc == 0 and json.loads(drafted.out)["onto"]["commit"] == first, drafted.text
    second = _later(s, 3)
    git(s.up, "tag", "-f", "stable")
    _later(s, 9)
    drafted = run_cli(s.root, "pr", "fix", "--json")
    assert drafted.rc == 0 and json.loads(drafted.out)["onto"]["commit"] == second, drafted.text
    assert f"tag stable moved upstream: was {first[:12]}, now {second[:12]}" in drafted.err


def test_a_name_both_a_tag_and_a_branch_is_the_tag_on_every_use(tmp_path):
    """Upstream has a branch `rel` and a tag `rel` on other commits. The first use fetched both
    and took the branch; every later one took the stored tag: one SPEC, two commits. Now it is
    the tag each time, as `git rev-parse rel` answers, said on stderr with the way to name the
    branch; `refs/heads/rel` and `refs/tags/rel` name each, every time."""
    s = _stack(tmp_path)
    tagged = _later(s, 2)
    git(s.up, "tag", "rel")
    git(s.up, "checkout", "-q", "-b", "rel")
    branch = _later(s, 3)
    git(s.up, "checkout", "-q", "main")
    assert git(s.up, "rev-parse", "rel").strip() == tagged  # git's own rule
    for _ in range(2):
        commit, said = _against(s, "rel")
        assert commit == tagged, (commit, tagged, branch)
        assert "rel is both a tag and a branch" in said and "refs/heads/rel" in said and \
            branch[:12] in said, said
    dry = run_cli(s.root, "rebase", "--to", "rel", "--dry-run")
    assert dry.rc == 0 and f"rel ({tagged[:12]})" in dry.out, dry.text
    for _ in range(2):
        assert _against(s, "refs/heads/rel")[0] == branch
        assert _against(s, "refs/tags/rel")[0] == tagged
    assert _against(s, "rel", "--offline")[0] == tagged
    rebased = run_cli(s.root, "rebase", "--to", "rel")
    assert rebased.rc == 0 and s.lock()["upstreams"]["up"]["commit"] == tagged, rebased.text


def test_a_tags_check_runs_beside_the_series_parse_and_its_error_comes_first(tmp_path,
                                                                            monkeypatch):
    """`rebase --to TAG` asks the remote about the tag (a git process; a round trip to a
    server) on a second thread while the series is parsed, and the result is the one the
    check gives. A resolution that fails is said before an unparseable patch, as when the
    target was resolved first."""
    import threading
    import time

    from patchforge.rebase.engine import Rebase
    from patchforge.store.gitstore import UpstreamStore

    s = _stack(tmp_path)
    for n in range(2, 6):
        s.add_fix(f"fix{n}", f"new{n}.py", None, b"made %d\n" % n)
    target = _later(s, 2)
    git(s.up, "tag", "v2")
    assert _against(s, "v2") == (target, "")  # the store knows the tag: it is checked
    asked: list[tuple[bool, float, float]] = []
    parsed: list[float] = []
    real_tag, real_parse = UpstreamStore.remote_tag, Rebase._old_patch

    def remote_tag(self, *args, **kw):
        start = time.monotonic()
        time.sleep(0.3)  # a server's round trip
        try:
            return real_tag(self, *args, **kw)
        finally:
            asked.append((threading.current_thread() is threading.main_thread(), start,
                          time.monotonic()))

    def old_patch(self, *args, **kw):
        parsed.append(time.monotonic())
        return real_parse(self, *args, **kw)
    monkeypatch.setattr(UpstreamStore, "remote_tag", remote_tag)
    monkeypatch.setattr(Rebase, "_old_patch", old_patch)
    before = s.root.parent / "before"
    shutil.copytree(s.root, before)
    result = run_cli(s.root, "rebase", "--to", "v2")
    assert result.rc == 0, result.text
    assert s.lock()["upstreams"]["up"]["commit"] == target
    [(on_main, _, end)] = asked
    assert not on_main
    # The parse before the walk did not wait for the answer.
    assert all(when < end for when in parsed[:5])

    # A tag the remote no longer has, and a patch that cannot be parsed: the tag is said.
    git(s.up, "tag", "-d", "v2")
    (before / "series" / "up" / "fix3.patch").write_bytes(b"not a patch\n")
    result = run_cli(before, "rebase", "--to", "v2")
    assert result.rc != 0
    assert "v2" in result.err and "fix3" not in result.err, result.err
