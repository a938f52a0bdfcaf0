"""`rename OLD NEW` in the series' history (series/history.jsonl) and what is read from it: the
rename is recorded as an event, and the ledger's History (series/PATCHES.md), `status`'s
departed fixes and its HTML page follow a fix across its renames (chains of them, a rename back
to an earlier name), never giving a name's new fix the past of the fix renamed away from it.
Every step is the real command line on a real git upstream; histories an older version wrote
(no rename events) still read."""
from __future__ import annotations

import json

import pytest

from patchforge.ledger import read_history
from helpers.project import OneUpstreamStack

A = b"".join(f"def a{i}():\n    return {i}\n\n".encode() for i in range(12))
B = b"".join(f"def b{i}():\n    return {i}\n\n".encode() for i in range(12))


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01T00:00:00Z


def make_stack(tmp_path) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": A, "pkg/b.py": B})
    stack.add_fix("a-sign", "pkg/a.py", A, A.replace(b"return 3\n", b"return -3\n"))
    stack.add_fix("b-sign", "pkg/b.py", B, B.replace(b"return 7\n", b"return -7\n"))
    stack.cli("ledger")  # the stack keeps a ledger
    return stack


def history_rows(stack) -> list[tuple[str, str]]:
    """(patch, what happened) of each row of PATCHES.md's History, oldest first."""
    text = (stack.root / "series/PATCHES.md").read_text()
    rows = text.split("## History", 1)[1].splitlines()
    return [tuple(cell.strip() for cell in row.strip("|").split(" | ")[1:])
            for row in rows if row.startswith("| 2026")]


def edit(stack, name: str, path: str, old: bytes, new: bytes) -> None:
    """`edit NAME`, a change made in its worktree, `refresh`: as a user edits a fix."""
    stack.cli("edit", name)
    work = stack.root / ".patchforge/work/up" / path
    data = work.read_bytes()
    assert old in data
    work.write_bytes(data.replace(old, new, 1))
    stack.cli("refresh")


def test_a_fix_keeps_its_history_across_renames_rebases_edits_and_a_rename_back(tmp_path):
    """new -> rebase -> rename -> edit + refresh -> rebase -> rename back -> delete: the
    History shows one fix throughout, under its name of the moment it is read; the rename is
    an event of its own. Before, the rename was not recorded: the fix's rebases stayed under
    `b-sign.patch`, the History read as two fixes (one of them gone without a word), and the
    rename back made the second one's past vanish into the first's."""
    stack = make_stack(tmp_path)
    v1 = stack.base
    v2 = stack.commit({"pkg/b.py": b"import os\n\n\n" + B}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.cli("rename", "b-sign", "b-negative")
    events = read_history(stack.project())
    assert {k: events[-1][k] for k in ("event", "upstream", "patch", "renamed_from")} == {
        "event": "renamed", "upstream": "up", "patch": "b-negative.patch",
        "renamed_from": "b-sign.patch"}
    moved = f"rebased from v1 (`{v1[:12]}`) to v2 (`{v2[:12]}`)"
    rows = history_rows(stack)
    assert ("up/b-negative.patch", f"as b-sign.patch: {moved}: applied with offset") in rows
    assert rows[-1] == ("up/b-negative.patch", "renamed from b-sign.patch to b-negative.patch")
    assert not [r for r in rows if r[0] == "up/b-sign.patch"], rows
    stack.cli("ledger", "--check")
    stack.cli("lint", "--no-forge")

    # Edited under its new name, then moved again: the new events are the same fix's.
    edit(stack, "b-negative", "pkg/b.py", b"return 9\n", b"return -9\n")
    v3 = stack.commit({"pkg/a.py": b"import sys\n\n\n" + A}, "v3", tag="v3")
    stack.cli("rebase", "--to", "v3")
    stack.cli("rename", "b-negative", "b-sign")  # back to its first name
    rows = history_rows(stack)
    mine = [what for patch, what in rows if patch == "up/b-sign.patch"]
    assert mine == [
        f"{moved}: applied with offset",
        "renamed from b-sign.patch to b-negative.patch",
        f"as b-negative.patch: rebased from v2 (`{v2[:12]}`) to v3 (`{v3[:12]}`): "
        "applied exactly",
        "renamed from b-negative.patch to b-sign.patch"], rows
    assert not [r for r in rows if r[0] == "up/b-negative.patch"], rows
    # The other fix is untouched by it all.
    assert [p for p, _ in rows if "a-sign" in p] == ["up/a-sign.patch"] * 2
    stack.cli("ledger", "--check")

    # Its departure is said under the name it left with, and the HTML page agrees.
    stack.cli("delete", "b-sign")
    document = json.loads(stack.cli("status", "--json", expect=None)[1])
    assert [d["patch"] for d in document["departed"]] == ["up/b-sign.patch"]
    page = tmp_path / "status.html"
    stack.cli("status", "--html", str(page), expect=None)
    html = page.read_text()
    # (the last rebase's row keeps the name the run gave it, as its range-diff does)
    assert "<code>up/b-negative.patch</code> (now <code>up/b-sign.patch</code>)" in html
    assert "as b-negative.patch" in html and "b-sign.patch -&gt; b-negative.patch" in html
    stack.cli("ledger", "--check")


def test_a_name_taken_again_after_a_rename_starts_a_new_fix(tmp_path):
    """`rename a-sign a-negative`, then `new a-sign` (another fix, on another file): the new
    a-sign.patch never shows the renamed fix's past, and the renamed one keeps it."""
    stack = make_stack(tmp_path)
    stack.commit({"pkg/a.py": b"import os\n\n\n" + A}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.cli("rename", "a-sign", "a-negative")
    stack.cli("new", "a-sign", "--file", "pkg/b.py")
    work = stack.root / ".patchforge/work/up/pkg/b.py"
    work.write_bytes(work.read_bytes().replace(b"return 1\n", b"return -1\n", 1))
    stack.cli("refresh")
    stack.commit({"pkg/b.py": b"import sys\n\n\n" + B}, "v3", tag="v3")
    stack.cli("rebase", "--to", "v3")
    rows = history_rows(stack)
    assert [what.split(" from ")[0] for patch, what in rows if patch == "up/a-sign.patch"] \
        == ["rebased"], rows  # v2 -> v3 only: the new fix's one event
    assert [what.split(" from ")[0] for patch, what in rows if patch == "up/a-negative.patch"] \
        == ["as a-sign.patch: rebased", "renamed", "rebased"], rows
    # Deleted, the new a-sign leaves under its name; the renamed fix is still in the series.
    stack.cli("delete", "a-sign")
    document = json.loads(stack.cli("status", "--json", expect=None)[1])
    assert [(d["patch"], d["event"]) for d in document["departed"]] == [
        ("up/a-sign.patch", "deleted")]
    stack.cli("ledger", "--check")


def test_a_history_written_before_renames_were_recorded_still_reads(tmp_path):
    """A history.jsonl an older version wrote (no `renamed` events; a fix renamed then left
    its past under the old name): read as it always was, each name one fix; a rename made now
    takes the past recorded under the old name with the fix."""
    stack = make_stack(tmp_path)
    old = [{"v": 1, "time": "2025-06-01T00:00:00Z", "event": "rebased", "action": "clean",
            "upstream": "up", "patch": "b-sign.patch", "from": {"label": "v0", "commit": None},
            "to": {"label": "v1", "commit": None}, "detail": "applied exactly",
            "evidence": [], "landed_in": None, "destination": "series", "run": "r1"},
           {"v": 1, "time": "2025-06-02T00:00:00Z", "event": "deleted", "upstream": "up",
            "patch": "gone.patch", "destination": "deleted",
            "detail": "kept as series/up/deleted/gone.patch"}]
    (stack.root / "series/history.jsonl").write_bytes(
        b"".join(json.dumps(e).encode() + b"\n" for e in old))
    stack.cli("ledger")
    assert history_rows(stack) == []  # (dated 2025)
    text = (stack.root / "series/PATCHES.md").read_text()
    assert "| 2025-06-01 | up/b-sign.patch | rebased from v0 to v1: applied exactly |" in text
    stack.cli("rename", "b-sign", "b-negative")
    text = (stack.root / "series/PATCHES.md").read_text()
    assert ("| 2025-06-01 | up/b-negative.patch | as b-sign.patch: rebased from v0 to v1: "
            "applied exactly |") in text
    assert "| 2025-06-02 | up/gone.patch | deleted: kept as series/up/deleted/gone.patch |" \
        in text
    stack.cli("ledger", "--check")


def test_a_rename_during_a_rebase_stop_is_refused_and_records_nothing(tmp_path):
    """A rebase stopped on a conflict: `rename` is refused (exit 2) and the history is as it
    was; after `--continue`, the rename is recorded and the fix's stop and move follow it."""
    stack = make_stack(tmp_path)
    stack.commit({"pkg/b.py": B.replace(b"return 7\n", b"return 70\n")}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    before = (stack.root / "series/PATCHES.md").read_bytes()
    _, _, err = stack.cli("rename", "b-sign", "b-negative", expect=2)
    assert "rebase" in err
    assert not (stack.root / "series/history.jsonl").exists()
    assert (stack.root / "series/PATCHES.md").read_bytes() == before
    work = stack.root / ".patchforge/work/up/pkg/b.py"
    work.write_bytes(B.replace(b"return 7\n", b"return -70\n"))
    stack.cli("rebase", "--continue")
    stack.cli("rename", "b-sign", "b-negative")
    rows = history_rows(stack)
    assert [what.split(" from ")[0] for patch, what in rows
            if patch == "up/b-negative.patch"] == ["as b-sign.patch: rebased", "renamed"], rows
    stack.cli("ledger", "--check")


def test_a_malformed_history_kept_without_a_ledger_stops_a_rename_before_it_writes(tmp_path):
    """The rename appends to a history kept without its ledger too (the fix's past is there):
    a malformed line there refuses it, exit 2, naming the file and line, nothing written."""
    from helpers.snapshot import snapshot

    stack = make_stack(tmp_path)
    (stack.root / "series/PATCHES.md").unlink()
    (stack.root / "series/history.jsonl").write_bytes(
        b'{"v": 1, "event": "rebased", "upstream": "up", "patch": "b-sign.patch"}\n{broken\n')
    before = snapshot(stack.root, dirs=False)
    _, _, err = stack.cli("rename", "b-sign", "b-negative", expect=2)
    assert "series/history.jsonl:2:" in err, err
    assert snapshot(stack.root, dirs=False) == before
    (stack.root / "series/history.jsonl").write_bytes(
        b'{"v": 1, "event": "rebased", "upstream": "up", "patch": "b-sign.patch"}\n')
    stack.cli("rename", "b-sign", "b-negative")
    assert [(e["event"], e["patch"]) for e in read_history(stack.project())] == [
        ("rebased", "b-sign.patch"), ("renamed", "b-negative.patch")]
    assert not (stack.root / "series/PATCHES.md").exists()  # not made by a rename


def test_a_new_fix_named_as_one_that_landed_takes_none_of_its_past_when_renamed(tmp_path):
    """a-sign lands upstream (dropped, kept in upstreamed/), a new fix takes the name, is
    rebased, then renamed: the landed fix keeps its past under a-sign.patch and is still said
    to have left the series; the new fix's rebase follows it to its new name. (One fix is in
    one place: the copy kept in upstreamed/ is not the fix renamed.)"""
    stack = make_stack(tmp_path)
    stack.commit({"pkg/a.py": A.replace(b"return 3\n", b"return -3\n")}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/a-sign.patch").is_file()
    stack.cli("new", "a-sign", "--file", "pkg/a.py")
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b"return 5\n", b"return -5\n", 1))
    stack.cli("refresh")
    stack.commit({"pkg/a.py": b"import os\n\n\n" + A.replace(b"return 3\n", b"return -3\n")},
                 "v3", tag="v3")
    stack.cli("rebase", "--to", "v3")
    stack.cli("rename", "a-sign", "a-five")
    assert read_history(stack.project())[-1]["old_name_kept_in"] == "upstreamed"
    rows = history_rows(stack)
    assert [what.split(" from ")[0].split(" in commit")[0]
            for patch, what in rows if patch == "up/a-sign.patch"] == ["dropped as upstreamed"]
    assert [what.split(" from ")[0] for patch, what in rows if patch == "up/a-five.patch"] \
        == ["as a-sign.patch: rebased", "renamed"], rows
    document = json.loads(stack.cli("status", "--json", expect=None)[1])
    assert [(d["patch"], d["event"]) for d in document["departed"]] == [
        ("up/a-sign.patch", "dropped")]
    stack.cli("ledger", "--check")


def test_two_fixes_that_left_under_one_name_are_each_said_with_their_own_event(tmp_path):
    """a-sign lands (kept as upstreamed/a-sign.patch); a new fix takes the name, is rebased,
    then lands too (kept as upstreamed/a-sign.2.patch: the first is still there). `status`
    gave the first fix the second's landing (v4 for a fix that landed in v2) and never named
    the second; each is said now, under the file it is kept in, with its own event, and the
    History agrees."""
    stack = make_stack(tmp_path)
    v2 = stack.commit({"pkg/a.py": A.replace(b"return 3\n", b"return -3\n")}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/a-sign.patch").is_file()
    stack.cli("new", "a-sign", "--file", "pkg/a.py")
    work = stack.root / ".patchforge/work/up/pkg/a.py"
    work.write_bytes(work.read_bytes().replace(b"return 5\n", b"return -5\n", 1))
    stack.cli("refresh")
    v2_file = (stack.up / "pkg/a.py").read_bytes()
    stack.commit({"pkg/a.py": b"import os\n\n\n" + v2_file}, "v3", tag="v3")
    stack.cli("rebase", "--to", "v3")  # the new fix is rebased under the name
    v4 = stack.commit({"pkg/a.py": (stack.up / "pkg/a.py").read_bytes().replace(
        b"return 5\n", b"return -5\n")}, "v4", tag="v4")
    summary = stack.rebase_json("--to", "v4")
    assert [p.get("kept_as") for p in summary["patches"] if p["name"] == "a-sign.patch"] == \
        ["a-sign.2.patch"]
    assert (stack.root / "series/up/upstreamed/a-sign.2.patch").is_file()
    [event] = [e for e in read_history(stack.project())
               if e["patch"] == "a-sign.patch" and e["to"]["label"] == "v4"]
    assert event["kept_as"] == "a-sign.2.patch"
    document = json.loads(stack.cli("status", "--json", expect=None)[1])
    departed = {d["patch"]: d["description"] for d in document["departed"]}
    assert set(departed) == {"up/a-sign.patch", "up/a-sign.2.patch"}, departed
    assert v2[:12] in departed["up/a-sign.patch"] and v4[:12] not in departed["up/a-sign.patch"]
    assert v4[:12] in departed["up/a-sign.2.patch"]
    rows = history_rows(stack)
    assert [patch for patch, what in rows if "to v3" in what and patch.startswith("up/a-")] \
        == ["up/a-sign.2.patch"], rows
    stack.cli("ledger", "--check")
