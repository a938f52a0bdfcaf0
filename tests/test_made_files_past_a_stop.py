"""A later fix of a file an earlier fix makes, judged past the earlier fix's stop.

make.patch edits pkg/a.py and makes pkg/new.py; later.patch edits pkg/new.py. Upstream changed
pkg/a.py's line under make.patch, so the rebase stops on make.patch; once the user resolves it,
`--continue` makes pkg/new.py and later.patch moves onto it clean. `status --against` and
`rebase --dry-run` go on past the stop, and they judged later.patch without the file: "obsolete
... is not in the base either (nor made by an earlier patch)", advising `patchforge rm` or
`--skip`, either of which drops a live fix. They now meet the file as the stopped fix makes it
(SeriesJudge._made_past_a_stop), whatever stopped it: a conflict elsewhere in the fix, the file
made in a directory upstream moved (then where git suggests), another file of the fix gone
upstream. The rebase's own walk is left as it was: every test here resolves the stop and checks
that the series and the overlays keep both fixes.
"""
from __future__ import annotations

import json

import pytest

from helpers.git import commit_files, git, git_bytes
from helpers.project import OneUpstreamStack
from helpers.upstream import diff_of

A = b"".join(b"line%d\n" % i for i in range(1, 21))
NEW = b"def helper(x):\n    return x + 1\n"
LATER = NEW.replace(b"x + 1", b"x + 2")
MINE, THEIRS = A.replace(b"line5\n", b"line5 mine\n"), A.replace(b"line5\n", b"line5 theirs\n")


def _stack(tmp_path, later: dict[str, bytes | None] | None = None,
           made: str = "pkg/new.py") -> OneUpstreamStack:
    """make.patch (pkg/a.py's line 5, and `made` made) then later.patch (`later`: the files it
    gives, as git diff makes them from make.patch's result; default pkg/new.py edited)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": A, "pkg/b.py": b"b = 1\n",
                                        "pkg/__init__.py": b"# pkg\n"})
    stack.add_patch("up", "make", {"pkg/a.py": MINE, made: NEW})
    later = later if later is not None else {made: LATER}
    diff = b"".join(diff_of(tmp_path / f"later-{k}", path, NEW if path == made else None, data)
                    if data is not None else _deletion(tmp_path / f"later-{k}", path)
                    for k, (path, data) in enumerate(later.items()))
    stack.add_patch("up", "later", {})  # the header; its diff is made from make.patch's file
    patch = stack.root / "series" / "up" / "later.patch"
    patch.write_bytes(patch.read_bytes() + diff)
    return stack


def _deletion(scratch, path: str) -> bytes:
    """git diff of `path` (NEW) deleted, made in a throwaway repository `scratch`."""
    scratch.mkdir(parents=True)
    git(scratch, "init", "-q")
    commit_files(scratch, {path: NEW}, "old")
    git(scratch, "rm", "-q", path)
    return git_bytes(scratch, "diff", "--cached", "--full-index")


def _judged(stack: OneUpstreamStack, target: str) -> tuple[dict, dict]:
    """What `status --against` and `rebase --dry-run` say of each patch (exit 1: a stop)."""
    status = stack.json("status", "--against", target, expect=1)
    dry = stack.json("rebase", "--to", target, "--dry-run", expect=1)
    return ({p["name"]: p for p in status["patches"]},
            {p["name"]: p for p in dry["patches"]})


def _never_obsolete(status: dict, dry: dict) -> None:
    for said in (status["later.patch"], dry["later.patch"]):
        text = json.dumps(said)
        assert "nor made by an earlier patch" not in text and "obsolete" not in text, said


def _said_to_move_then_moved(stack: OneUpstreamStack) -> None:
    """Status and the dry run at v2 say later.patch moves (never obsolete); the rebase stops on
    make.patch, the user resolves it with the fix's pkg/a.py (MINE), and `--continue` moves
    later.patch clean, both fixes in the series."""
    status, dry = _judged(stack, "up=v2")
    assert status["later.patch"]["rebase"] == "move" and dry["later.patch"]["action"] == "clean"
    _never_obsolete(status, dry)
    stack.cli("rebase", "--to", "v2", expect=3)
    (stack.root / ".patchforge" / "work" / "up" / "pkg/a.py").write_bytes(MINE)
    done = stack.rebase_json("--continue")
    assert [p["action"] for p in done["patches"]][-1] == "clean", done
    assert stack.series("up") == ["make.patch", "later.patch"]


def test_a_later_fix_of_the_file_a_stopped_fix_makes_moves_onto_it(tmp_path):
    """The sequence a user meets: status and the dry run say later.patch moves (they said it
    obsolete, `patchforge rm` or `--skip` its way on), the rebase stops on make.patch, status
    says the same while stopped, the user resolves, `--continue` moves later.patch clean, and
    the overlay holds both fixes."""
    stack = _stack(tmp_path)
    stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    status, dry = _judged(stack, "up=v2")
    assert status["make.patch"]["rebase"] == "stop", status
    assert (status["later.patch"]["state"], status["later.patch"]["rebase"]) == \
        ("applies", "move"), status
    assert dry["later.patch"]["action"] == "clean", dry
    _never_obsolete(status, dry)
    rc, _, err = stack.cli("rebase", "--to", "v2", expect=3)
    assert "conflict in pkg/a.py" in err, err
    while_stopped = stack.json("status", "--against", "up=v2", expect=1)
    assert [p["state"] for p in while_stopped["patches"]] == ["conflict", "applies"], \
        while_stopped
    work = stack.root / ".patchforge" / "work" / "up"
    assert (work / "pkg/new.py").read_bytes() == NEW
    (work / "pkg/a.py").write_bytes(A.replace(b"line5\n", b"line5 theirs mine\n"))
    done = stack.rebase_json("--continue")
    assert [p["action"] for p in done["patches"]][-1] == "clean", done
    assert stack.series("up") == ["make.patch", "later.patch"]
    stack.cli("overlays")
    overlay = stack.root / "overlays" / "up"
    assert (overlay / "pkg/new.py").read_bytes() == LATER
    assert (overlay / "pkg/a.py").read_bytes() == A.replace(b"line5\n", b"line5 theirs mine\n")
    assert stack.json("status", "--against", "up=v2")["patches"][1]["state"] == "applies"


def _everything_moved(stack: OneUpstreamStack, also: dict[str, bytes] | None = None) -> None:
    """Upstream moves pkg/ to lib/ (the directory gone) at v2, `also` written besides."""
    files = {"pkg/a.py": A, "pkg/b.py": b"b = 1\n", "pkg/__init__.py": b"# pkg\n"}
    stack.upstream.commit(also or {}, "pkg -> lib",
                          renames={p: p.replace("pkg/", "lib/") for p in files}, tag="v2")


def test_a_later_fix_follows_a_file_made_in_a_directory_upstream_moved(tmp_path):
    """make.patch's pkg/new.py sits in pkg/, which upstream moved to lib/: the rebase stops on
    its location (as git does) and its worktree holds it at lib/new.py; status and the dry run
    say later.patch follows it there, as the rebase does once the stop is resolved."""
    stack = _stack(tmp_path)
    _everything_moved(stack)
    status, dry = _judged(stack, "up=v2")
    assert any("CONFLICT (file location)" in line for line in status["make.patch"]["evidence"])
    assert status["later.patch"]["rebase"] == "move", status
    assert "pkg/new.py was renamed upstream to lib/new.py" in status["later.patch"]["evidence"]
    assert dry["later.patch"]["action"] == "clean", dry
    _never_obsolete(status, dry)
    stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    assert (work / "lib/new.py").read_bytes() == NEW
    done = stack.rebase_json("--continue")
    assert [p["action"] for p in done["patches"]][-1] == "clean", done
    stack.cli("overlays")
    overlay = stack.root / "overlays" / "up"
    assert (overlay / "lib/new.py").read_bytes() == LATER
    assert (overlay / "lib/a.py").read_bytes() == MINE


def test_a_later_fix_of_a_file_a_fix_makes_beside_a_gone_file(tmp_path):
    """make.patch's other file upstream deleted (pkg/a.py gone): it stops, obsolete; the user
    takes the gone file's change out (`patchforge rm`) and goes on: later.patch moves onto
    pkg/new.py, as status and the dry run now say."""
    stack = _stack(tmp_path)
    stack.commit({"pkg/a.py": None}, "drop a", tag="v2")
    status, dry = _judged(stack, "up=v2")
    assert status["make.patch"]["state"] == "obsolete", status
    assert status["later.patch"]["rebase"] == "move", status
    assert dry["later.patch"]["action"] == "clean", dry
    _never_obsolete(status, dry)
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rm", "pkg/a.py")
    stack.cli("rebase", "--continue")
    assert stack.series("up") == ["make.patch", "later.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "pkg/new.py").read_bytes() == LATER


@pytest.mark.parametrize("later_kind", ["edit", "rename", "delete"])
@pytest.mark.parametrize("stop_kind", ["conflict", "moved", "gone"])
def test_what_the_judging_says_of_a_later_fix_is_what_the_rebase_does(tmp_path, stop_kind,
                                                                       later_kind):
    """Each stop kind by each kind of later change of the made file: status and the dry run
    never call the later fix obsolete, and what the dry run says of it (moved or stopped)
    is what `--continue` does with it once the first stop is resolved as it stands; the
    series keeps both fixes."""
    later = {"edit": {"pkg/new.py": LATER}, "rename": {"pkg/new.py": None, "pkg/newer.py": NEW},
             "delete": {"pkg/new.py": None}}[later_kind]
    stack = _stack(tmp_path, later)
    if later_kind == "rename":
        patch = stack.root / "series" / "up" / "later.patch"
        head, _, _ = patch.read_bytes().partition(b"diff --git")
        patch.write_bytes(head + b"diff --git a/pkg/new.py b/pkg/newer.py\nsimilarity index "
                          b"100%\nrename from pkg/new.py\nrename to pkg/newer.py\n")
    if stop_kind == "conflict":
        stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    elif stop_kind == "gone":
        stack.commit({"pkg/a.py": None}, "drop a", tag="v2")
    else:
        _everything_moved(stack)
    status, dry = _judged(stack, "up=v2")
    _never_obsolete(status, dry)
    said = dry["later.patch"]["action"]
    stack.cli("rebase", "--to", "v2", expect=3)
    work = stack.root / ".patchforge" / "work" / "up"
    if stop_kind == "conflict":
        (work / "pkg/a.py").write_bytes(MINE)
    elif stop_kind == "gone":
        stack.cli("rm", "pkg/a.py")
    rc, out, err = stack.cli("rebase", "--continue", "--json", expect=None)
    if said == "conflict":
        assert rc == 3, out + err
        stack.cli("rebase", "--continue")
    else:
        assert rc == 0, out + err
        assert json.loads(out)["patches"][-1]["action"] == said, out
    assert stack.series("up") == ["make.patch", "later.patch"]


def test_a_later_fix_of_the_file_a_stopped_fix_renames_to_moves_onto_it(tmp_path):
    """make.patch renames pkg/b.py to pkg/c.py beside its conflicting line; later.patch edits
    pkg/c.py: status and the dry run judge it on the renamed file (upstream's pkg/b.py), as
    the rebase moves it once the stop is resolved."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": A, "pkg/b.py": NEW})
    stack.add_patch("up", "make", {"pkg/a.py": MINE, "pkg/b.py": None, "pkg/c.py": NEW})
    stack.add_fix("later", "pkg/c.py", NEW, LATER)
    assert b"rename to pkg/c.py" in stack.patch("up", "make")
    stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    _said_to_move_then_moved(stack)
    moved = stack.patch("up", "later")  # (no overlays: they cannot delete pkg/b.py)
    assert b"+++ b/pkg/c.py" in moved and b"+    return x + 2" in moved, moved


def test_pr_of_a_later_fix_of_a_made_file_names_the_fix_that_makes_it(tmp_path):
    """`pr later --onto` carries later.patch alone: its file is make.patch's, which the base
    does not have. It was "obsolete ... nor made by an earlier patch", with the way on "resolve
    it there (`patchforge edit later`)"; now it is made on make.patch, sent first. The mirror:
    onto a base where make.patch landed, later.patch is ready."""
    stack = _stack(tmp_path)
    stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    for onto in ("v1", "v2"):
        draft = stack.json("pr", "later", "--onto", onto, expect=1)
        assert draft["state"] == "conflict" and draft["commit"] is None, draft
        assert [(m["path"], m["patch"]) for m in draft["made_on"]] == \
            [("pkg/new.py", "make.patch")], draft
        assert "nor made by an earlier patch" not in json.dumps(draft), draft
        rc, out, err = stack.cli("pr", "later", "--onto", onto, expect=1)
        assert "send make.patch first (`patchforge pr make`)" in err, err
    stack.commit({"pkg/a.py": MINE, "pkg/new.py": NEW}, "make (#1)", tag="v3")
    assert stack.json("pr", "later", "--onto", "v3")["state"] == "ready"


def test_a_later_fix_for_one_profile_of_a_file_a_stopped_fix_makes_moves_onto_it(tmp_path):
    """With profiles, later.patch (gfx950 only) is judged on gfx950's chain, which holds
    make.patch (every profile) carried from its own: the file make.patch makes is carried
    there past its stop too, as the rebase moves later.patch once the stop is resolved."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": A, "pkg/b.py": b"b = 1\n"},
                             profiles={"gfx942": "MI300", "gfx950": "MI355"})
    stack.add_patch("up", "make", {"pkg/a.py": MINE, "pkg/new.py": NEW})
    stack.add_fix("later", "pkg/new.py", NEW, LATER, fields="Profiles: gfx950\n")
    stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    _said_to_move_then_moved(stack)
    stack.cli("overlays")
    overlays = stack.root / "overlays"
    assert (overlays / "gfx942/up/pkg/new.py").read_bytes() == NEW
    assert (overlays / "gfx950/up/pkg/new.py").read_bytes() == LATER


def test_after_the_fix_that_makes_the_file_is_skipped_the_ways_on_keep_both(tmp_path):
    """At make.patch's stop the user runs `--skip`: later.patch then stops on a file nowhere.
    Its words were "not in the base either (nor made by an earlier patch)", the ways on
    `patchforge rm PATH` or `--skip`; now they name make.patch, set aside, and the order that
    keeps both, which `bring-back` says too when later.patch is brought back first. Followed,
    the series ends with both fixes."""
    stack = _stack(tmp_path)
    stack.commit({"pkg/a.py": THEIRS}, "line5 theirs", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    rc, out, err = stack.cli("rebase", "--skip", expect=3)
    assert "pkg/new.py made by make.patch, which this rebase set aside in skipped/" in err, err
    assert "`patchforge bring-back make` then `patchforge bring-back later`" in err, err
    assert "nor made by an earlier patch" not in err, err
    stack.cli("rebase", "--skip", expect=1)
    rc, out, err = stack.cli("bring-back", "later", expect=3)
    assert "pkg/new.py made by make.patch, in skipped/ too: `patchforge bring-back --abort`, " \
        "then `patchforge bring-back make` first" in err, err
    stack.cli("bring-back", "--abort")
    stack.cli("bring-back", "make", expect=3)
    (stack.root / ".patchforge" / "work" / "up" / "pkg/a.py").write_bytes(MINE)
    stack.cli("bring-back", "--continue")
    stack.cli("bring-back", "later")
    assert stack.series("up") == ["make.patch", "later.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays" / "up" / "pkg/new.py").read_bytes() == LATER
