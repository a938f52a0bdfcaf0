"""A rebase resumed after a stop (`--continue`, `--skip`) judges the patches after the stop as
an uninterrupted rebase and its dry run judge them: a fix that landed upstream and was then
rewritten there (only the history says it landed) is dropped as landed, not stopped as a
conflict (a carried AITER series met this: the int32 KV-offset fix of `_mla_gluon`, landed in
110055925d and its context changed by 44146e6ef2, stopped after an earlier stop's resolution)."""
from __future__ import annotations

import pytest

from helpers.project import Stack
from helpers.upstream import BASE, Upstream, with_lines


@pytest.fixture
def stack(tmp_path):
    return Stack(tmp_path / "project")


@pytest.fixture
def upstream(tmp_path):
    return Upstream(tmp_path / "up", {"pkg/mod.py": BASE, "pkg/other.py": b"x = 1\n",
                                      "README": b"upstream\n"})


def _series_with_a_stop_then_a_rewritten_landing(stack, upstream) -> tuple[str, str]:
    """`first` conflicts at the target; `landed` landed upstream, which then rewrote the
    lines around it, so that its hunk no longer applies or reverse-applies there."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "first", {"pkg/other.py": b"x = 2  # ours\n"})
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed upstream as well'\n\n"})
    stack.add_patch("up", "landed", {"pkg/mod.py": fixed})
    landing = upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
    rewritten = with_lines({7: b"def f7():\n    return 'seven, said differently'\n\n"})
    target = upstream.commit({"pkg/mod.py": rewritten, "pkg/other.py": b"x = 3  # theirs\n"},
                             "upstream rewrites it and changes other.py")
    return landing, target


@pytest.mark.parametrize("way_on", ["--skip", "--continue"])
def test_a_landing_only_the_history_shows_is_dropped_after_a_stop(stack, upstream, way_on):
    landing, target = _series_with_a_stop_then_a_rewritten_landing(stack, upstream)
    dry = stack.rebase_json("--to", f"up={target}", "--dry-run", expect=1)
    assert [(p["name"], p["action"]) for p in dry["patches"]] == [
        ("first.patch", "conflict"), ("landed.patch", "dropped")]
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    if way_on == "--continue":
        work = stack.root / ".patchforge" / "work" / "up" / "pkg" / "other.py"
        work.write_bytes(b"x = 3  # theirs, and ours\n")
    summary = stack.rebase_json(way_on, expect=1 if way_on == "--skip" else 0)
    landed = next(p for p in summary["patches"] if p["name"] == "landed.patch")
    assert (landed["action"], landed["destination"], landed["landed_in"]) == \
        ("dropped", "upstreamed", landing)
    assert stack.series("up") == ([] if way_on == "--skip" else ["first.patch"])
    assert (stack.root / "series/up/upstreamed/landed.patch").is_file()


@pytest.mark.parametrize("upstream_history", ["never landed", "landed and reverted"])
def test_a_fix_the_history_does_not_say_landed_still_stops_after_a_stop(
        stack, upstream, upstream_history):
    """The mirror: after a stop, a later fix whose lines upstream rewrote without the fix (or
    took in and then reverted before rewriting) is no landing: it stops, as the dry run says."""
    stack.add_upstream("up", upstream)
    stack.add_patch("up", "first", {"pkg/other.py": b"x = 2  # ours\n"})
    fixed = with_lines({7: b"def f7():\n    return 'seven, fixed in the series only'\n\n"})
    stack.add_patch("up", "mine", {"pkg/mod.py": fixed})
    if upstream_history == "landed and reverted":
        upstream.commit({"pkg/mod.py": fixed}, "upstream takes the fix")
        upstream.commit({"pkg/mod.py": BASE}, 'Revert "upstream takes the fix"')
    rewritten = with_lines({7: b"def f7():\n    return 'seven, said differently'\n\n"})
    target = upstream.commit({"pkg/mod.py": rewritten, "pkg/other.py": b"x = 3  # theirs\n"},
                             "upstream rewrites f7 and changes other.py")
    dry = stack.rebase_json("--to", f"up={target}", "--dry-run", expect=1)
    assert [(p["name"], p["action"]) for p in dry["patches"]] == [
        ("first.patch", "conflict"), ("mine.patch", "conflict")]
    stack.cli("rebase", "--to", f"up={target}", expect=3)
    _, _, err = stack.cli("rebase", "--skip", expect=3)
    assert "up/mine.patch: conflict in pkg/mod.py" in err
    stack.cli("rebase", "--abort")
    assert stack.series("up") == ["first.patch", "mine.patch"]
