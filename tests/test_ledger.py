"""The series ledger (series/PATCHES.md) and its history (series/history.jsonl): generated
deterministically from the series, the lock and the history; byte-stable; stale or missing
ledgers found by lint; history appended by a real `patchforge rebase --to` on a real git
upstream, by `record_event`, and read back by `departures`."""
from __future__ import annotations

import json
import re
import shutil

import pytest

from patchforge.errors import InputError
from patchforge.fsutil import atomic_write_many
from patchforge.ledger import (departures, ledger_findings, read_history, rebase_writes,
                               record_event, render_ledger)
from helpers.project import OneUpstreamStack

A = b"".join(f"def a{i}():\n    return {i}\n\n".encode() for i in range(12))
B = b"".join(f"def b{i}():\n    return {i}\n\n".encode() for i in range(12))
A_FIXED = A.replace(b"return 3\n", b"return -3\n")
B_FIXED = B.replace(b"return 7\n", b"return -7\n")
PR = "https://github.com/example/up/pull/4711"


@pytest.fixture(autouse=True)
def fixed_clock(monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")  # 2026-01-01T00:00:00Z


def make_stack(tmp_path) -> OneUpstreamStack:
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": A, "pkg/b.py": B},
                         profiles={"gfx942": "MI300X", "gfx950": "MI355X"})
    stack.add_fix("a-sign", "pkg/a.py", A, A_FIXED, description="a3 returns a negative",
                    fields=f"Forwarded: {PR}\nDrop-When: up>=2\n")
    path = stack.root / "series/up/a-sign.patch"
    path.write_bytes(path.read_bytes().replace(b"Upstream-Status: Pending",
                                               f"Upstream-Status: Submitted [{PR}]".encode()))
    stack.add_fix("b-sign", "pkg/b.py", B, B_FIXED, description="b7 | returns a negative",
                    fields="Profiles: gfx942\n")
    stack.add_fix("new-file", "pkg/c.py", None, b"C = 1\n", description="add pkg/c.py")
    return stack


def rows(ledger: bytes) -> list[str]:
    return [line for line in ledger.decode().splitlines() if line.startswith("| ")]


def test_the_ledger_matches_the_series(tmp_path):
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    ledger = (stack.root / "series/PATCHES.md").read_bytes()
    label = "v1"
    assert rows(ledger)[:4] == [
        "| # | Patch | Changes | Lines | Fixes | Profiles | Upstream-Status | Drop-When | Base |",
        f"| 1 | [a-sign.patch](up/a-sign.patch) | `pkg/a.py` | +1/-1 | a3 returns a negative "
        f"| all | Submitted [PR #4711]({PR}) | up>=2 | {label} |",
        "| 2 | [b-sign.patch](up/b-sign.patch) | `pkg/b.py` | +1/-1 | b7 \\| returns a negative "
        f"| gfx942 | Pending | - | {label} |",
        "| 3 | [new-file.patch](up/new-file.patch) | `pkg/c.py` (new) | +1/-0 | add pkg/c.py "
        f"| all | Pending | - | {label} |",
    ]
    text = ledger.decode()
    assert f"Base: **v1** (`{stack.base[:12]}`, git {stack.up})." in text
    assert "Installed under `/opt/site`." in text
    assert "Profiles: gfx942 (MI300X), gfx950 (MI355X)." in text
    assert "Nothing recorded yet" in text
    # Series order is the ledger's order.
    (stack.root / "series/up/series").write_text("new-file.patch\na-sign.patch\nb-sign.patch\n")
    assert [r.split(" | ")[1] for r in rows(render_ledger(stack.project()))[1:4]] == [
        "[new-file.patch](up/new-file.patch)", "[a-sign.patch](up/a-sign.patch)",
        "[b-sign.patch](up/b-sign.patch)"]


def test_the_ledger_is_byte_stable_and_independent_of_the_checkout(tmp_path):
    stack = make_stack(tmp_path)
    record_event(stack.project(), {"event": "added", "upstream": "up", "patch": "a-sign.patch"})
    first = render_ledger(stack.project())
    assert render_ledger(stack.project()) == first
    assert (stack.root / "series/PATCHES.md").read_bytes() == first  # record_event wrote it
    code, out, _ = stack.cli("ledger")
    assert "up to date" in out
    stack.cli("ledger", "--check")
    copy = tmp_path / "elsewhere" / "project"
    shutil.copytree(stack.root, copy, ignore=shutil.ignore_patterns(".patchforge"))
    from patchforge.project import Project
    assert render_ledger(Project.discover(copy)) == first


def test_lint_finds_a_stale_or_missing_ledger(tmp_path):
    stack = make_stack(tmp_path)
    project = stack.project()
    # Not adopted yet (no history, no ledger): nothing to say, and a new project lints clean
    # even with --warnings-fail.
    assert ledger_findings(project) == []
    assert stack.cli("lint", "--no-forge", "--warnings-fail")[0] == 0
    stack.cli("ledger")
    assert ledger_findings(project) == []
    patch = stack.root / "series/up/b-sign.patch"
    patch.write_bytes(patch.read_bytes().replace(b"Profiles: gfx942", b"Profiles: gfx950"))
    findings = ledger_findings(project)
    assert [(f.patch, f.check, f.severity) for f in findings] == [
        ("series/PATCHES.md", "ledger", "error")]
    assert "stale" in findings[0].message
    document = stack.json("ledger", "--check", expect=1)
    assert document["ok"] is False and not document["changed"]
    _, out, _ = stack.cli("lint", "--no-forge", expect=1)
    assert "series/PATCHES.md" in out and "stale" in out
    assert stack.json("ledger")["changed"] is True
    assert ledger_findings(project) == []
    # Once the stack has a history, a missing ledger is an error.
    record_event(project, {"event": "added", "upstream": "up", "patch": "b-sign.patch"})
    (stack.root / "series/PATCHES.md").unlink()
    assert [f.severity for f in ledger_findings(project)] == ["error"]


def test_record_event_appends_json_lines_and_renders_them(tmp_path):
    stack = make_stack(tmp_path)
    project = stack.project()
    stored = record_event(project, {"event": "submitted", "upstream": "up",
                                    "patch": "a-sign.patch", "url": PR, "pr": 4711})
    assert stored["time"] == "2026-01-01T00:00:00Z" and stored["v"] == 1
    history = stack.root / "series/history.jsonl"
    assert history.read_bytes() == (
        b'{"event":"submitted","patch":"a-sign.patch","pr":4711,"time":"2026-01-01T00:00:00Z",'
        b'"upstream":"up","url":"' + PR.encode() + b'","v":1}\n')
    record_event(project, {"event": "added", "upstream": "up", "patch": "new-file.patch",
                           "detail": "imported from an overlay"})
    assert [e["event"] for e in read_history(project)] == ["submitted", "added"]
    ledger = (stack.root / "series/PATCHES.md").read_text()
    assert f"| 2026-01-01 | up/a-sign.patch | submitted as [PR #4711]({PR}) |" in ledger
    assert "| 2026-01-01 | up/new-file.patch | added: imported from an overlay |" in ledger
    with pytest.raises(Exception):
        record_event(project, {"patch": "x"})  # no event name
    assert len(read_history(project)) == 2


def test_a_malformed_history_line_is_named(tmp_path):
    stack = make_stack(tmp_path)
    (stack.root / "series/history.jsonl").write_bytes(b'{"event":"added"}\nnot json\n')
    with pytest.raises(InputError) as info:
        read_history(stack.project())
    assert info.value.line == 2 and info.value.path.endswith("series/history.jsonl")
    assert ledger_findings(stack.project())[0].severity == "error"


def test_a_real_rebase_appends_its_history(tmp_path):
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    old_base = stack.base
    # v2: upstream takes the a3 fix (a-sign lands) and grows pkg/b.py at the top (b-sign moves).
    new = stack.commit({"pkg/a.py": A_FIXED, "pkg/b.py": b"import os\n\n\n" + B}, "v2",
                       tag="v2")
    summary = stack.json("rebase", "--to", "v2")
    actions = {p["name"]: p["action"] for p in summary["patches"]}
    assert actions == {"a-sign.patch": "dropped", "b-sign.patch": "offset",
                       "new-file.patch": "clean"}
    events = read_history(stack.project())
    assert [(e["event"], e["patch"]) for e in events] == [
        ("dropped", "a-sign.patch"), ("rebased", "b-sign.patch"), ("rebased", "new-file.patch")]
    for event in events:
        assert event["from"] == {"label": "v1", "commit": old_base}
        assert event["to"] == {"label": "v2", "commit": new}
        assert event["upstream"] == "up" and event["time"] == "2026-01-01T00:00:00Z"
    dropped = events[0]
    assert dropped["landed_in"] == new and dropped["evidence"]
    assert dropped["destination"] == "upstreamed"
    # The ledger was regenerated with the new base and the history, and is not stale.
    stack.cli("ledger", "--check")
    ledger = (stack.root / "series/PATCHES.md").read_text()
    assert f"Base: **v2** (`{new[:12]}`" in ledger
    assert "[a-sign.patch](up/upstreamed/a-sign.patch) | upstreamed | a3 returns a negative" \
        in ledger
    assert (f"| up/a-sign.patch | dropped as upstreamed in commit `{new[:12]}` (v2); evidence: "
            in ledger)
    assert (f"| up/b-sign.patch | rebased from v1 (`{old_base[:12]}`) to v2 (`{new[:12]}`): "
            in ledger)
    # `status` can say when and why a fix left the series.
    gone = departures(stack.project())
    assert list(gone) == ["up/a-sign.patch"] and gone["up/a-sign.patch"]["landed_in"] == new


def record_rebase(project, summary) -> list[dict]:
    """What a rebase's write-out does with `rebase_writes`: its files written in one batch."""
    events, writes = rebase_writes(project, summary)
    atomic_write_many(writes)
    return events


def test_a_rebase_to_the_pinned_revision_adds_no_history(tmp_path):
    """`rebase --to` the revision already pinned moves nothing, yet wrote a "rebased from v1 to
    v1" line per patch into the history and the ledger. It records nothing and rewrites
    neither; a later real move is recorded as before."""
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    before = stack.snapshot()
    summary = stack.json("rebase", "--to", "v1")
    assert {p["action"] for p in summary["patches"]} == {"clean"}
    after = stack.snapshot()
    assert {k for k in set(before) | set(after) if before.get(k) != after.get(k)
            and not k.startswith(".patchforge/")} == set()
    assert read_history(stack.project()) == []
    stack.cli("ledger", "--check")
    stack.commit({"pkg/b.py": b"import os\n\n\n" + B}, "v2", tag="v2")
    stack.json("rebase", "--to", "v2")
    assert [e["event"] for e in read_history(stack.project())] == ["rebased"] * 3


def test_record_rebase_is_idempotent_for_a_resumed_write_out(tmp_path):
    stack = make_stack(tmp_path)
    project = stack.project()
    summary = {"dry_run": False, "written": True,
               "upstreams": {"up": {"from": "v1", "from_commit": "1" * 40, "to": "v2",
                                    "to_commit": "2" * 40}},
               "patches": [{"upstream": "up", "name": "b-sign.patch", "action": "skipped",
                            "detail": "skipped at conflict", "evidence": [], "landed_in": None,
                            "destination": "skipped"}]}
    assert len(record_rebase(project, summary)) == 1
    before = (stack.root / "series/history.jsonl").read_bytes()
    assert record_rebase(project, summary) == []  # `--continue` after a kill: not twice
    assert (stack.root / "series/history.jsonl").read_bytes() == before
    assert record_rebase(project, {**summary, "dry_run": True}) == []
    assert json.loads(before)["event"] == "skipped"
    # (the detail an earlier version wrote: read as the kind of stop it names)
    assert "skipped at a conflict during the rebase from v1" in \
        (stack.root / "series/PATCHES.md").read_text()
    # Still in the series: not a departure. Gone from the series: one.
    assert departures(project) == {}
    (stack.root / "series/up/series").write_text("a-sign.patch\nnew-file.patch\n")
    assert list(departures(project)) == ["up/b-sign.patch"]
    # The ledger written from the history the run had at hand is the one the history on disk
    # gives, after a second run's events too (a detail that is not ASCII, evidence lines).
    second = {**summary, "upstreams": {"up": {"from": "v2", "from_commit": "2" * 40,
                                               "to": "v3", "to_commit": "3" * 40}},
              "patches": [{**summary["patches"][0], "action": "clean", "destination": "series",
                           "detail": "applied exactly \u00e9", "evidence": ["x", "y"]}]}
    assert len(record_rebase(project, second)) == 1
    assert (stack.root / "series/PATCHES.md").read_bytes() == render_ledger(project)


def test_delete_records_the_fix_leaving_in_a_stack_that_keeps_a_ledger(tmp_path):
    """`delete` in a stack with PATCHES.md appends a `deleted` event, so the ledger's history
    and `status` say when the fix left the series and where it is kept; a stack without a ledger
    gets no history from it (a history without its ledger is a lint error)."""
    stack = make_stack(tmp_path)
    stack.cli("delete", "new-file")
    assert not (stack.root / "series/history.jsonl").exists()
    stack.cli("lint", "--no-forge", expect=None)
    stack.cli("ledger")
    stack.cli("delete", "b-sign")
    [event] = read_history(stack.project())
    assert {k: event[k] for k in ("event", "upstream", "patch", "destination", "detail")} == {
        "event": "deleted", "upstream": "up", "patch": "b-sign.patch",
        "destination": "deleted", "detail": "kept as series/up/deleted/b-sign.patch"}
    _, out, _ = stack.cli("status", "--json", expect=None)
    assert json.loads(out)["departed"] == [{
        "patch": "up/b-sign.patch", "event": "deleted",
        "description": "deleted: kept as series/up/deleted/b-sign.patch"}]
    stack.cli("ledger", "--check")
    assert "kept as series/up/deleted/b-sign.patch" in (
        stack.root / "series/PATCHES.md").read_text()


def test_a_fix_brought_back_from_skipped_has_its_return_in_the_history(tmp_path):
    """A fix set aside by `rebase --skip` and put back by `bring-back` left no event: the
    ledger's History ended the fix's record at "skipped ... during the rebase" while it was in
    the series again, with a diff made by hand on the new base. Each way back is recorded now,
    once: moved cleanly, and resolved by hand (`bring-back --continue`)."""
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    a3, b7 = b"    return 3\n", b"    return 7\n"
    # v2 changes the lines both fixes change: the rebase stops on each, and both are skipped.
    stack.commit({"pkg/a.py": A.replace(a3, b"    return 30\n"),
                  "pkg/b.py": B.replace(b7, b"    return 70\n")}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    # v3 takes pkg/a.py's change back: a-sign moves cleanly; b-sign still needs a person.
    v3 = stack.commit({"pkg/a.py": A}, "v3", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "a-sign")
    stack.cli("bring-back", "b-sign", expect=3)
    (stack.root / ".patchforge/work/up/pkg/b.py").write_bytes(
        B.replace(b7, b"    return -70\n"))
    stack.cli("bring-back", "--continue")
    assert stack.series("up") == ["new-file.patch", "a-sign.patch", "b-sign.patch"]
    events = [(e["event"], e["patch"]) for e in read_history(stack.project())
              if e["patch"] != "new-file.patch"]
    assert events == [("skipped", "a-sign.patch"), ("skipped", "b-sign.patch"),
                      ("brought-back", "a-sign.patch"), ("brought-back", "b-sign.patch")]
    back = read_history(stack.project())[-2:]
    assert [e["to"] for e in back] == [{"label": "v3", "commit": v3}] * 2
    assert back[0]["detail"] == "applied exactly"
    assert back[1]["detail"] == "conflict resolved by hand"
    stack.cli("ledger", "--check")
    ledger = (stack.root / "series/PATCHES.md").read_text()
    assert (f"| up/b-sign.patch | brought back into the series from skipped/ onto v3 "
            f"(`{v3[:12]}`): conflict resolved by hand |") in ledger, ledger
    assert departures(stack.project()) == {}


def test_a_fix_skipped_at_a_conflict_is_said_so_once(tmp_path):
    """`rebase --skip` at a conflict: the summary's detail was "skipped at conflict" beside
    the action "skipped", and the ledger's History and `status` said "skipped (skipped at
    conflict) during the rebase". Said once, in words, everywhere now."""
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    stack.commit({"pkg/a.py": A.replace(b"    return 3\n", b"    return 30\n")}, "v2",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    _, out, _ = stack.cli("rebase", "--skip", expect=1)
    assert re.search(r"up/a-sign\.patch +skipped +at a conflict\n", out), out
    _, out, _ = stack.cli("status", expect=1)
    said = "up/a-sign.patch: skipped at a conflict during the rebase from v1"
    assert said in out, out
    ledger = (stack.root / "series/PATCHES.md").read_text()
    assert "| up/a-sign.patch | skipped at a conflict during the rebase from v1" in ledger, ledger
    for text in (out, ledger):
        assert "skipped (skipped" not in text and "skipped at conflict" not in text, text
    assert [e["detail"] for e in read_history(stack.project())
            if e["event"] == "skipped"] == ["at a conflict"]


def test_a_revision_named_by_its_commit_is_said_once(tmp_path):
    """A rebase to a commit (`--to up=<40 hex>`, or a pin made by commit) said it twice: the
    rebase's first line `up: v1 (...) -> 5108f99469f0c1... (5108f99469f0)`, and the ledger's
    History "rebased from v1 (`...`) to 5108f99469f0c1... (`5108f99469f0`)". Now the short id
    once; a label that is a name (a tag, a version) keeps its id beside it."""
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    v1 = stack.base
    new = stack.commit({"pkg/b.py": b"import os\n\n\n" + B}, "v2")
    _, out, _ = stack.cli("rebase", "--to", f"up={new}")
    assert out.splitlines()[0] == f"up: v1 ({v1[:12]}) -> {new[:12]}", out
    history = [line for line in (stack.root / "series/PATCHES.md").read_text().splitlines()
               if "| up/b-sign.patch | rebased" in line]
    assert history == [f"| 2026-01-01 | up/b-sign.patch | rebased from v1 (`{v1[:12]}`) to "
                       f"`{new[:12]}`: applied with offset |"], history


def test_a_re_pin_or_a_new_upstream_keeps_the_ledger_in_step(tmp_path):
    """`upstream pin --force` and `upstream add` write the lock, whose pins the ledger shows:
    in a stack that keeps one, both regenerate it (as a rebase does), so the stack's CI
    (`ledger --check`, `lint`) does not fail on a committed re-pin."""
    from helpers.upstream import Upstream

    stack = make_stack(tmp_path)
    stack.cli("ledger")
    new = stack.commit({"pkg/b.py": B + b"# v2\n"}, "v2", tag="v2")
    stack.cli("upstream", "pin", "up", "--at", "v2", "--force")
    stack.cli("ledger", "--check")
    assert f"Base: **v2** (`{new[:12]}`" in (stack.root / "series/PATCHES.md").read_text()
    other = Upstream(tmp_path / "other", {"x.py": b"x = 1\n"}, message="w1", tag="w1")
    stack.cli("upstream", "add", "other", "--git", str(other.path), "--at", "w1",
              "--install-root", "/opt/other")
    stack.cli("ledger", "--check")
    _, out, _ = stack.cli("lint", "--no-forge", expect=None)  # a-sign's Drop-When is true
    assert "ledger" not in out and "PATCHES.md" not in out


@pytest.mark.parametrize("command", [("delete", "b-sign"), ("rename", "b-sign", "b-sign2"),
                                     ("move", "b-sign", "--first"), ("ledger",)])
@pytest.mark.parametrize("bad", [b'{"v": 1, broken\n', b"[" * 100000 + b"]" * 100000 + b"\n"],
                         ids=["broken", "nested-too-deep"])
def test_a_malformed_history_stops_a_series_command_before_it_writes(tmp_path, command, bad):
    """A series command in a stack that keeps a ledger regenerates it from the history: a
    malformed history line fails the command (exit 2, the file and line) before anything is
    written. Before, `delete` took the fix out of the series, then failed; a line nested a
    hundred thousand deep (the history arrives by pull request) was an internal error."""
    from helpers.snapshot import snapshot

    stack = make_stack(tmp_path)
    stack.cli("ledger")
    history = stack.root / "series/history.jsonl"
    history.write_bytes(b'{"v": 1, "event": "added"}\n' + bad)
    before = snapshot(stack.root, dirs=False)
    _, _, err = stack.cli(*command, expect=2)
    assert "series/history.jsonl:2:" in err, err
    assert snapshot(stack.root, dirs=False) == before


def test_a_malformed_history_stops_a_rebase_before_it_writes(tmp_path):
    """The rebase records its run in the history at its write-out: a malformed line was found
    there, after series/ and upstream.lock were rewritten, leaving a half-written rebase (exit
    2). It is now refused before the rebase starts, as the series commands refuse it; fixed,
    the same rebase goes through."""
    from helpers.snapshot import snapshot

    stack = make_stack(tmp_path)
    stack.cli("ledger")
    stack.commit({"pkg/b.py": b"import os\n\n\n" + B}, "v2", tag="v2")
    history = stack.root / "series/history.jsonl"
    good = history.read_bytes() if history.exists() else b""
    history.write_bytes(good + b'{"v": 1, broken\n')
    before = snapshot(stack.root, dirs=False)
    _, _, err = stack.cli("rebase", "--to", "v2", expect=2)
    line = good.count(b"\n") + 1
    assert f"series/history.jsonl:{line}: not a JSON line" in err, err
    assert snapshot(stack.root, dirs=False) == before
    history.write_bytes(good)
    stack.cli("rebase", "--to", "v2")


@pytest.mark.parametrize("value", ["yesterday", "1767225600.5", "-5", "\u00b2", "9" * 30])
def test_a_malformed_source_date_epoch_is_refused_naming_it(tmp_path, monkeypatch, value):
    """A SOURCE_DATE_EPOCH that is no whole number of seconds was ignored (the history took the
    real time, so two runs differed while the variable said they would not), or, a digit that
    is no ASCII digit, ended in a crash. The reproducible-builds convention asks for an error:
    refused before the rebase touches anything (exit 2), naming the variable."""
    stack = make_stack(tmp_path)
    commit = stack.commit({"pkg/b.py": B + b"# more\n"}, "v2", tag="v2")
    assert commit
    before = stack.snapshot()
    monkeypatch.setenv("SOURCE_DATE_EPOCH", value)
    _, _, err = stack.cli("rebase", "--to", "v2", expect=2)
    assert "SOURCE_DATE_EPOCH=" in err and "unset it" in err, err
    assert stack.snapshot() == before
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "")  # empty: unset, as the convention's tools read it
    stack.cli("rebase", "--to", "v2")


@pytest.mark.parametrize("line, field", [
    (b'{"event": "renamed", "upstream": "up", "patch": 5, "renamed_from": "a-sign.patch"}',
     'field "patch" must be a string, not a number'),
    (b'{"event": "rebased", "upstream": "up", "from": "v1", "to": {"label": "v2"}}',
     'field "from" must be an object, not a string'),
    (b'{"event": "dropped", "upstream": "up", "patch": "a-sign.patch", "to": {"label": 7}}',
     'field "to.label" must be a string, not a number'),
])
def test_a_history_line_with_a_field_of_another_type_is_named(tmp_path, line, field):
    """A history line merged from another version of the file, or fixed by hand, with a field
    of another JSON type: `ledger` ended with an internal error (exit 70) and `status` too.
    Now `ledger` names the file, the line and the field (exit 2) and writes nothing, and
    `status` says so and reports the series."""
    from helpers.snapshot import snapshot

    stack = make_stack(tmp_path)
    stack.cli("ledger")
    history = stack.root / "series/history.jsonl"
    history.write_bytes((history.read_bytes() if history.exists() else b"") + line + b"\n")
    number = history.read_bytes().count(b"\n")
    before = snapshot(stack.root, dirs=False)
    _, _, err = stack.cli("ledger", expect=2)
    assert f"series/history.jsonl:{number}:" in err and field in err, err
    assert "git log -p -- series/history.jsonl" in err, err
    assert snapshot(stack.root, dirs=False) == before
    out, err = stack.cli("status")[1:]
    assert "a-sign" in out and f"series/history.jsonl:{number}:" in err, (out, err)


def test_a_patch_name_with_brackets_is_a_link_in_the_ledger(tmp_path):
    """A series takes `x]y.patch` and `t[1](2).patch`: PATCHES.md wrote
    `[x]y.patch](up/x]y.patch)`, which Markdown reads as the text "[x]y.patch](up/x]y.patch)",
    no link, and `[t[1](2).patch](up/t[1](2).patch)` as a link to "up/t[1](2" with the
    wrong text. Each is now one link to its file, in the series' table and in the one of
    fixes that left it; a plain name's link is written as before."""
    from helpers.cli import ok

    stack = make_stack(tmp_path)
    for name in ("x]y", "h&amp;i", "a&b"):
        ok(stack.root, "new", name, "--no-edit", "-m", f"fix {name}")
    # A name a new fix is not given (its pull request's branch cannot hold a `[`), which a
    # series holds all the same (a colleague's commit wrote it).
    series = stack.root / "series/up"
    (series / "t[1](2).patch").write_bytes((series / "x]y.patch").read_bytes())
    (series / "series").write_bytes((series / "series").read_bytes() + b"t[1](2).patch\n")
    ok(stack.root, "delete", "t[1](2)")
    ok(stack.root, "ledger")
    ledger = (stack.root / "series/PATCHES.md").read_bytes()
    table = rows(ledger)
    assert any("| [a-sign.patch](up/a-sign.patch) |" in row for row in table), table
    assert any("| [a&b.patch](up/a&b.patch) |" in row for row in table), table
    assert any("| [x\\]y.patch](<up/x]y.patch>) |" in row for row in table), table
    assert any("| [t\\[1\\](2).patch](<up/deleted/t[1](2).patch>) |" in row
               for row in table), table
    markdown_it = pytest.importorskip("markdown_it")  # CommonMark, as the forge renders it
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(ledger.decode())
    assert '<a href="up/x%5Dy.patch">x]y.patch</a>' in page, page
    assert '<a href="up/deleted/t%5B1%5D(2).patch">t[1](2).patch</a>' in page, page
    # A name holding `&`: not read as an entity (`h&amp;i` showed and linked `h&i.patch`).
    assert '<a href="up/h&amp;amp;i.patch">h&amp;amp;i.patch</a>' in page, page


def test_a_patch_name_with_a_percent_sign_links_to_its_own_file_in_the_ledger(tmp_path):
    """`new x%20y` is taken (a series can hold the name), and PATCHES.md linked it as
    `[x%20y.patch](up/x%20y.patch)`: a link's destination is a URL, which the forge decodes,
    so the link led to `up/x y.patch`, a file that does not exist. The `%` is written `%25`
    there, and the link leads to the patch file, in the series' table and once it left."""
    from urllib.parse import unquote

    from helpers.cli import ok

    stack = make_stack(tmp_path)
    for name in ("x%20y", "p%41q"):
        ok(stack.root, "new", name, "--no-edit", "-m", f"fix {name}")
    ok(stack.root, "delete", "p%41q")
    ok(stack.root, "ledger")
    ledger = (stack.root / "series/PATCHES.md").read_text()
    series = stack.root / "series"
    markdown_it = pytest.importorskip("markdown_it")  # CommonMark, as the forge renders it
    page = markdown_it.MarkdownIt("commonmark").enable("table").render(ledger)
    links = dict((text, href) for href, text in re.findall(r'<a href="([^"]*)">([^<]*)</a>',
                                                            page))
    for name, where in (("x%20y.patch", "up/x%20y.patch"), ("p%41q.patch",
                                                           "up/deleted/p%41q.patch")):
        assert unquote(links[name]) == where, (name, links)
        assert (series / unquote(links[name])).is_file(), (name, links)
    assert "| [a-sign.patch](up/a-sign.patch) |" in ledger, ledger


def test_ledger_waits_for_a_stopped_rebase_as_overlays_does(tmp_path):
    """`ledger` wrote series/PATCHES.md while a rebase was stopped ("wrote series/PATCHES.md",
    exit 0): the ledger of the series the rebase is leaving, ready to be committed as if the
    move were done, where `overlays` refuses for the same reason. It is refused as `overlays`
    is (exit 2, naming the stop and the way on, nothing written); `ledger --check` reads and
    says the stop; during an edit, and once the rebase is over, it writes."""
    stack = make_stack(tmp_path)
    stack.cli("ledger")
    ledger = stack.root / "series/PATCHES.md"
    stale = ledger.read_bytes() + b"edited by hand\n"
    ledger.write_bytes(stale)
    stack.commit({"pkg/b.py": B.replace(b"    return 7\n", b"    return 70\n")}, "v2",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    _, out, err = stack.cli("ledger", expect=2)
    assert "`ledger` refused: up: a rebase is stopped at b-sign.patch" in err, err
    assert "patchforge rebase --continue" in err and "--abort" in err, err
    assert out == "" and ledger.read_bytes() == stale
    document = json.loads(stack.cli("ledger", "--json", expect=2)[1])
    assert "a rebase is stopped" in document["error"]["message"], document
    assert ledger.read_bytes() == stale
    _, out, err = stack.cli("ledger", "--check", expect=1)  # read-only: says the stop
    assert "note: up: a rebase is stopped at b-sign.patch" in err, err
    assert ledger.read_bytes() == stale
    stack.cli("rebase", "--abort")
    stack.cli("edit", "a-sign")
    _, out, err = stack.cli("ledger")
    assert out == "wrote series/PATCHES.md\n" and "a-sign.patch is being edited" in err, err
    stack.cli("ledger", "--check")


def test_ledger_check_says_there_is_none_where_the_stack_keeps_none(tmp_path):
    """A stack that keeps no ledger yet (no series/PATCHES.md, nothing in the history):
    `ledger --check` said "series/PATCHES.md is up to date" of a file that is not there,
    while its help said it exits 1 when the file is missing. It says there is none yet and
    what writes one (exit 0: nothing has happened to record, as lint says nothing); once the
    stack keeps one, a missing file is exit 1, as before."""
    stack = make_stack(tmp_path)
    ledger = stack.root / "series/PATCHES.md"
    _, out, _ = stack.cli("ledger", "--check")
    assert out == ("series/PATCHES.md: none kept yet (the first `patchforge rebase`, or "
                   "`patchforge ledger`, writes it)\n"), out
    assert not ledger.exists()
    _, help_text, _ = stack.cli("ledger", "--help")
    assert "missing once the stack keeps a history" in " ".join(help_text.split()), help_text
    stack.cli("ledger")
    assert stack.cli("ledger", "--check")[1] == "series/PATCHES.md is up to date\n"
    stack.commit({"pkg/b.py": B + b"# v2\n"}, "v2", tag="v2")
    stack.cli("rebase", "--to", "v2")  # the history has an event now
    ledger.unlink()
    _, out, _ = stack.cli("ledger", "--check", expect=1)
    assert "missing; run `patchforge ledger`" in out, out
