"""A fix in a file that has the same code twice (quant_fp8_a and quant_fp8_b), which upstream
made in the OTHER copy only: not landed. Before, the fix's hunk, searched in reverse from its
header's line, was found in the other copy ("reverse-apply (offset -54)"), status said
"upstreamed (high)", the rebase dropped the fix to upstreamed/ with Applied-Upstream filled in,
and every check after was green while the deployment ran quant_fp8_b without it. The hunk is
judged at its own place (where upstream's diff of the file puts the place the fix had): still
there without the change, so the fix is kept. Real git upstreams, real commands: `status
--against`, `rebase --to`, `overlays`."""
from __future__ import annotations

import shutil

import pytest

from patchforge.store.gitstore import cache_dir
from helpers.project import OneUpstreamStack
from helpers.upstream import diff_of


def block(name: str) -> list[bytes]:
    return [f"def {name}(x, dtype):\n".encode(), b"    x = x.float()\n",
            b"    x = x.contiguous()\n", b"    y = x.abs()\n", b'    if dtype == "fp8":\n',
            b"        scale = 448.0\n", b"    else:\n", b"        scale = 1.0\n",
            b"    y = y / scale\n", b"    z = y.clamp(0)\n", b"    w = z.sum()\n",
            b"    return x * scale\n", b"\n", b"\n"]


PADS = [line for i in range(10) for line in (f"def pad{i}():\n".encode(),
                                              f"    return {i}\n".encode(), b"\n", b"\n")]
SETUP = [b"def setup():\n", b"    limit = 16\n", b"    return limit\n", b"\n", b"\n"]


def edit(lines: list[bytes], old: bytes, new: bytes | None) -> list[bytes]:
    """`lines` with line `old` (exactly one) replaced by `new` (None: removed; a line
    with two LFs: an insertion after `old`)."""
    assert lines.count(old) == 1, old
    at = lines.index(old)
    return lines[:at] + ([] if new is None else [new]) + lines[at + 1:]


# Per kind of hunk: (the fix's change in a block, upstream's edit of the lines around it in
# the fix's own block, so that the hunk no longer applies there as it is).
CHANGES = {
    "mixed": ((b"        scale = 448.0\n", b"        scale = 240.0\n"),
              [(b'    if dtype == "fp8":\n', b'    if dtype == "fp8":  # e4m3\n'),
               (b"    else:\n", b"    else:  # none\n")]),
    "addition": ((b"    y = x.abs()\n", b"    y = x.abs()\n    y = torch.nan_to_num(y, nan=0.0)\n"),
                 [(b"    y = x.abs()\n", b"    y = x.abs()  # magnitude\n"),
                  (b'    if dtype == "fp8":\n', b'    if dtype == "fp8":  # e4m3\n')]),
    "removal": ((b"    z = y.clamp(0)\n", None),
                [(b"    y = y / scale\n", b"    y = y / scale  # normalize\n"),
                 (b"    w = z.sum()\n", b"    w = z.sum()  # total\n")]),
}


def fixed_block(name: str, kind: str) -> list[bytes]:
    (old, new), _ = CHANGES[kind]
    return edit(block(name), old, new)


def neighbours_edited(lines: list[bytes], kind: str) -> list[bytes]:
    for old, new in CHANGES[kind][1]:
        lines = edit(lines, old, new)
    return lines


def k_py(*parts: list[bytes]) -> bytes:
    return b"".join(line for part in parts for line in part)


def fix_is_in_b(data: bytes, kind: str) -> bool:
    """Whether quant_fp8_b of `data` has the fix's change."""
    b = data[data.index(b"def quant_fp8_b"):]
    (old, new), _ = CHANGES[kind]
    if new is None:
        return old not in b
    return new.splitlines()[-1] in b


def assert_kept(stack: OneUpstreamStack, kind: str, v2: bytes) -> None:
    """status says the fix is not landed; the rebase keeps it (a stop, or moved for review),
    never dropped; what is deployed after has the fix in quant_fp8_b."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert "another copy of the code" in " ".join(patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert rc in (0, 3), out + err
    assert "dropped" not in out, out
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert stack.series("up") == ["fix.patch"]
    if rc == 3:
        # The stop keeps the fix; giving up the rebase leaves the series at v1, fix deployed.
        assert "conflict in k.py" in err or "unsure" in err, err
        stack.cli("rebase", "--abort")
    else:
        assert "landed detection unsure: review" in out, out
    stack.cli("overlays")
    overlay = stack.root / "overlays" / "up" / "k.py"
    assert overlay.is_file() and fix_is_in_b(overlay.read_bytes(), kind)
    assert not fix_is_in_b(v2, kind)


@pytest.mark.parametrize("kind", sorted(CHANGES))
def test_a_fix_made_upstream_only_in_the_other_copy_of_the_code_is_kept(tmp_path, kind):
    """The fix changes quant_fp8_b; upstream makes the same change in quant_fp8_a only and
    edits the lines around the fix's place in quant_fp8_b: a changed line (mixed), a pure
    addition, a pure removal."""
    v1 = k_py(block("quant_fp8_a"), PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(block("quant_fp8_a"), PADS,
                                          fixed_block("quant_fp8_b", kind)))
    v2 = k_py(fixed_block("quant_fp8_a", kind), PADS,
              neighbours_edited(block("quant_fp8_b"), kind))
    stack.commit({"k.py": v2}, "fnuz max in quant_fp8_a (#7)", tag="v2")
    assert_kept(stack, kind, v2)


def test_a_fix_with_one_hunk_landed_in_place_and_one_only_in_the_other_copy_is_kept(tmp_path):
    """Two hunks: `limit = 32` in setup() (upstream made it there) and 240.0 in quant_fp8_b
    (upstream made it in quant_fp8_a only). Not landed: the second hunk is not there."""
    v1 = k_py(SETUP, block("quant_fp8_a"), PADS, block("quant_fp8_b"))
    setup = edit(SETUP, b"    limit = 16\n", b"    limit = 32\n")
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(setup, block("quant_fp8_a"), PADS,
                                          fixed_block("quant_fp8_b", "mixed")))
    v2 = k_py(setup, fixed_block("quant_fp8_a", "mixed"), PADS,
              neighbours_edited(block("quant_fp8_b"), "mixed"))
    stack.commit({"k.py": v2}, "limit 32; fnuz max in quant_fp8_a (#7)", tag="v2")
    assert_kept(stack, "mixed", v2)


@pytest.mark.parametrize("twin", [False, True])
def test_a_landing_at_a_shifted_place_is_still_dropped_with_high_confidence(tmp_path, twin):
    """The other side: upstream adds 30 lines above and makes the fix's change in quant_fp8_b
    itself (twin: in quant_fp8_a too, which the reverse search, starting at the header's
    line, meets first). Landed, high: dropped to upstreamed/, nothing left to deploy."""
    head = [block("quant_fp8_a"), PADS] if twin else [PADS]
    v1 = k_py(*head, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(*head, fixed_block("quant_fp8_b", "mixed")))
    top = [b"# generated\n"] * 30
    head = [fixed_block("quant_fp8_a", "mixed"), PADS] if twin else [PADS]
    stack.commit({"k.py": k_py(top, *head, fixed_block("quant_fp8_b", "mixed"))},
                 "fnuz max (#7)", tag="v2")
    stack.landed_and_dropped("up=v2", "k.py")
    assert b"Applied-Upstream: v2" in stack.patch("up", "fix", "upstreamed")
    assert stack.cli("status")[0] == 0


def test_a_skipped_fix_made_upstream_only_in_the_other_copy_is_not_kept_as_landed(tmp_path):
    """`bring-back` judges with the same judge: a fix skipped at a conflict (its other file
    changed upstream), then made upstream in quant_fp8_a only, was kept under upstreamed/ as
    "has landed upstream meanwhile". It is not landed: it stays a fix to bring back."""
    from helpers.upstream import diff_of

    v1 = k_py(block("quant_fp8_a"), PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1, "o.py": b"o = 1\n"})
    fix = stack.add_fix("fix", "k.py", v1, k_py(block("quant_fp8_a"), PADS,
                                                fixed_block("quant_fp8_b", "mixed")))
    both = fix + diff_of(tmp_path / "diff-o", "o.py", b"o = 1\n", b"o = 2\n")
    (stack.root / "series" / "up" / "fix.patch").write_bytes(both)
    stack.commit({"o.py": b"o = 3\n"}, "o is 3", tag="v2")
    stack.cli("rebase", "--to", "up=v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    v3 = k_py(fixed_block("quant_fp8_a", "mixed"), PADS,
              neighbours_edited(block("quant_fp8_b"), "mixed"))
    stack.commit({"k.py": v3, "o.py": b"o = 2\n"}, "fnuz max in quant_fp8_a (#7)", tag="v3")
    stack.cli("rebase", "--to", "up=v3", expect=1)
    rc, out, err = stack.cli("bring-back", "fix", expect=None)
    assert "has landed upstream meanwhile" not in out, out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert rc == 3, out + err  # stopped on the conflict in k.py: resolved by hand
    assert "k.py" in err, err


def git_diffs_run(trace) -> int:
    """The `git diff --no-index` processes (landed detection's own-place diffs among them) in
    GIT_TRACE's file `trace`."""
    return sum("trace: built-in: git diff --no-index" in line
               for line in trace.read_text().splitlines()) if trace.exists() else 0


def test_the_own_places_of_a_walks_landed_files_are_one_git_diff(tmp_path, monkeypatch):
    """Four fixes, each adding a line to its own file, all landed upstream below 30 new lines:
    each landing's own place needs git's diff of its file (a context line of the hunk the file
    has twice keeps the pre-check from answering), and status and rebase take those diffs from
    the history's commit that changes the files (read for the landings anyway), or make them
    in one git process, not one per file. The fourth fix comes after a fix that moves and
    changes its file: it meets the file as the walk changed it, whose diff is made when it is
    asked for. The landing lookup's judgements at the landing commit ask for no diff of their
    own. The verdicts are the same: landed, high, dropped."""
    names = ["a", "b", "c", "d"]
    pads = PADS + [b"def contiguous(x):\n", b"    x = x.contiguous()\n", b"    return x\n",
                   b"\n", b"\n"]
    v1 = {f"{n}.py": k_py(pads, block(f"quant_{n}")) for n in names}
    v1["d.py"] = k_py(pads, SETUP, block("quant_d"))
    stack = OneUpstreamStack(tmp_path, v1)
    for n in names[:3]:
        stack.add_fix(f"fix-{n}", f"{n}.py", v1[f"{n}.py"],
                      k_py(pads, fixed_block(f"quant_{n}", "addition")))
    limit = edit(SETUP, b"    limit = 16\n", b"    limit = 64\n")
    stack.add_fix("limit", "d.py", v1["d.py"], k_py(pads, limit, block("quant_d")))
    stack.add_fix("fix-d", "d.py", k_py(pads, limit, block("quant_d")),
                  k_py(pads, limit, fixed_block("quant_d", "addition")))
    top = [b"# generated\n"] * 30
    v2 = {f"{n}.py": k_py(top, pads, fixed_block(f"quant_{n}", "addition"))
          for n in names[:3]}
    v2["d.py"] = k_py(top, pads, SETUP, fixed_block("quant_d", "addition"))
    stack.commit(v2, "nan_to_num in every quant (#9)", tag="v2")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    status = stack.json("status", "--against", "up=v2", expect=1)
    said = {p["name"]: (p["state"], p["confidence"], p["rebase"]) for p in status["patches"]}
    assert said == {**{f"fix-{n}.patch": ("upstreamed", "high", "drop") for n in names},
                    "limit.patch": ("offset", None, "move")}, said
    # The four files as upstream has them are the diffs of the history's one commit (read
    # for the landings): no diff of their own. One of d.py as limit left it; each landed
    # patch judged again at the commit that landed it (landed_in) takes the walk's diff of
    # its file as upstream has it.
    assert git_diffs_run(trace) == 1
    trace.unlink()
    # The rebase's own diffs counted, not the status's answers kept for the next command.
    shutil.rmtree(cache_dir() / "kept" / "contents", ignore_errors=True)
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == \
        ["dropped"] * 3 + ["offset", "dropped"], summary["patches"]
    # The same one and limit's new diff; landed_in's one judgement again (fix-d's: the
    # others met their files as upstream has them) takes the walk's diff, as status's do.
    assert git_diffs_run(trace) == 1 + 1
    monkeypatch.delenv("GIT_TRACE")
    assert stack.series("up") == ["limit.patch"]

def history_diffs_run(trace) -> int:
    """The `git diff-tree --stdin -p` processes (the history's diffs, read for landings and
    own places) in GIT_TRACE's file `trace`."""
    return sum("trace: built-in: git diff-tree --stdin -p" in line
               for line in trace.read_text().splitlines()) if trace.exists() else 0


def test_a_first_rebase_reads_its_landed_files_history_with_the_own_places(tmp_path,
                                                                         monkeypatch):
    """Three fixes landed upstream by one commit, the first asked for its own place (a context
    line its file has twice), the other two landing where they are (their context is in
    their files once: no diff needed to judge them). The rebase, the first command asking
    about v2 (nothing kept from an earlier one), reads the history's diffs of all three
    files in the one `git diff-tree` the own place needs, not a second one for the landing
    lookup after the walk. The verdicts: three landed, dropped, each landed in that commit."""
    pads = PADS + [b"def contiguous(x):\n", b"    x = x.contiguous()\n", b"    return x\n",
                   b"\n", b"\n"]
    v1 = {"a.py": k_py(pads, block("quant_a")), "b.py": k_py(PADS, block("quant_b")),
          "c.py": k_py(PADS, block("quant_c"))}
    stack = OneUpstreamStack(tmp_path, v1)
    stack.add_fix("fix-a", "a.py", v1["a.py"], k_py(pads, fixed_block("quant_a", "addition")))
    for n in "bc":
        stack.add_fix(f"fix-{n}", f"{n}.py", v1[f"{n}.py"],
                      k_py(PADS, fixed_block(f"quant_{n}", "addition")))
    top = [b"# generated\n"] * 30
    made = stack.commit({"a.py": k_py(top, pads, fixed_block("quant_a", "addition")),
                         **{f"{n}.py": k_py(top, PADS, fixed_block(f"quant_{n}", "addition"))
                            for n in "bc"}}, "nan_to_num in every quant (#9)", tag="v2")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    summary = stack.rebase_json("--to", "up=v2")
    monkeypatch.delenv("GIT_TRACE")
    assert [(p["name"], p["action"], p["landed_in"]) for p in summary["patches"]] == \
        [(f"fix-{n}.patch", "dropped", made) for n in "abc"], summary["patches"]
    assert history_diffs_run(trace) == 1
    assert stack.series("up") == []


def history_walks_run(trace) -> int:
    """The `git log` processes (the range's walk) in GIT_TRACE's file `trace`."""
    return sum("trace: built-in: git log" in line
               for line in trace.read_text().splitlines()) if trace.exists() else 0


def test_a_first_rebase_onto_the_next_commit_walks_no_history(tmp_path, monkeypatch):
    """Upstream's next commit lands one fix and changes the other's file elsewhere: the
    target's one parent is the pin, so `status --against` and the rebase, each the first
    command asking about it, take what that commit changes in the series' files from the two
    trees, and start no `git log` walking the range (which lists every file the commit
    changes: 1,271 for a vllm release). The verdicts are the walk's: landed in that commit,
    dropped; the other fix moved."""
    v1 = {"a.py": k_py(PADS, block("quant_a")), "b.py": k_py(PADS, block("quant_b"))}
    stack = OneUpstreamStack(tmp_path, v1)
    stack.add_fix("fix-a", "a.py", v1["a.py"], k_py(PADS, fixed_block("quant_a", "addition")))
    stack.add_fix("fix-b", "b.py", v1["b.py"], k_py(PADS, fixed_block("quant_b", "addition")))
    top = [b"# generated\n"] * 30
    made = stack.commit({"a.py": k_py(top, PADS, fixed_block("quant_a", "addition")),
                         "b.py": k_py(top, PADS, block("quant_b")),
                         **{f"other{n}.py": b"x = %d\n" % n for n in range(20)}},
                        "nan_to_num in quant_a (#9)", tag="v2")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    status = stack.json("status", "--against", "up=v2", expect=1)
    assert history_walks_run(trace) == 0
    said = {p["name"]: (p["state"], p["rebase"]) for p in status["patches"]}
    assert said == {"fix-a.patch": ("upstreamed", "drop"), "fix-b.patch": ("offset", "move")}
    trace.unlink()
    shutil.rmtree(cache_dir() / "kept", ignore_errors=True)
    summary = stack.rebase_json("--to", "up=v2")
    assert history_walks_run(trace) == 0
    monkeypatch.delenv("GIT_TRACE")
    assert [(p["name"], p["action"], p["landed_in"]) for p in summary["patches"]] == \
        [("fix-a.patch", "dropped", made), ("fix-b.patch", "offset", None)], summary["patches"]
    assert stack.series("up") == ["fix-b.patch"]


KEEPS_B = b"Keeps: k.py: re:def quant_fp8_b(?:.*\\n){5}        scale = 240\\.0\n"


@pytest.mark.parametrize("own_place", ["untouched", "rewritten"])
def test_a_fix_whose_keeps_line_the_target_lacks_is_never_dropped_as_landed(tmp_path,
                                                                            own_place):
    """The fix sets 240.0 in quant_fp8_b and promises it (`Keeps:` a pattern of quant_fp8_b
    only); upstream sets 240.0 in quant_fp8_a, and leaves quant_fp8_b as it was (untouched)
    or gives its line a value of its own (rewritten). Landed detection, finding the fix's
    lines in quant_fp8_a, said "upstreamed (high)" and the rebase dropped the fix, though
    the target breaks the fix's own promise. A target that breaks a fix's Keeps line is not
    its landing: the fix moves where it applies (its Keeps line then holds in the result) or
    stops; never dropped, and status --against says the same.

    Both cases are guards: each passes with the Keeps rule (judge's) taken out as well.
    `rewritten` is kept by the rule for a line upstream rewrote its own way (it was dropped
    before that rule), `untouched` by landed detection's own-place rule (the fix's place
    holds its pre-image: the copy in quant_fp8_a is no landing). They keep a later change of
    either rule from dropping such a fix; a case only the Keeps rule keeps is not here."""
    v1 = k_py(block("quant_fp8_a"), PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(block("quant_fp8_a"), PADS,
                                          fixed_block("quant_fp8_b", "mixed")),
                  fields=KEEPS_B.decode())
    own = block("quant_fp8_b") if own_place == "untouched" else \
        edit(block("quant_fp8_b"), b"        scale = 448.0\n", b"        scale = fp8_max()\n")
    v2 = k_py(fixed_block("quant_fp8_a", "mixed"), PADS, own)
    stack.commit({"k.py": v2}, "fnuz max in quant_fp8_a (#7)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=None)
    assert rc == (0 if own_place == "untouched" else 3), out + err
    assert "dropped" not in out and stack.series("up") == ["fix.patch"], out + err
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert patch["rebase"] == ("move" if rc == 0 else "stop"), patch
    if rc == 3:
        stack.cli("rebase", "--abort")
    stack.cli("overlays")
    assert fix_is_in_b((stack.root / "overlays" / "up" / "k.py").read_bytes(), "mixed")


def _landed_in_b(tmp_path) -> tuple[OneUpstreamStack, str, bytes]:
    """The fix (240.0 in quant_fp8_b) lands upstream exactly there at v2; the rebase onto v2
    drops it to upstreamed/: (stack, landing commit, the file at v1)."""
    v1 = k_py(block("quant_fp8_a"), PADS, block("quant_fp8_b"))
    landed = k_py(block("quant_fp8_a"), PADS, fixed_block("quant_fp8_b", "mixed"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, landed)
    landing = stack.commit({"k.py": landed}, "fnuz max in quant_fp8_b (#7)", tag="v2")
    stack.rebase_json("--to", "up=v2")
    assert stack.series("up") == []
    assert (stack.root / "series" / "up" / "upstreamed" / "fix.patch").is_file()
    return stack, landing, v1


@pytest.mark.parametrize("neighbours", [True, False])
def test_a_landing_reverted_in_its_own_place_while_the_other_copy_gets_the_change_is_said(
        tmp_path, neighbours):
    """The fix landed in quant_fp8_b (dropped to upstreamed/); upstream reverts that commit
    (quant_fp8_b has the old code again), and a later commit makes the same change in
    quant_fp8_a, commenting the lines around the fix's place in quant_fp8_b (neighbours).
    The kept fix's change applied in reverse at quant_fp8_a and no longer forward at
    quant_fp8_b, so status, the rebase and lint said nothing while no deployment had the fix
    in quant_fp8_b. Its own place decides: reverted, `bring-back` named; brought back, it is
    deployed there. (Without the comments the old code is back exactly and was said.)"""
    from helpers.git import git

    stack, landing, _ = _landed_in_b(tmp_path)
    git(stack.up, "revert", "--no-edit", landing)
    revert = git(stack.up, "rev-parse", "HEAD").strip()
    b = neighbours_edited(block("quant_fp8_b"), "mixed") if neighbours else block("quant_fp8_b")
    v4 = k_py(fixed_block("quant_fp8_a", "mixed"), PADS, b)
    stack.commit({"k.py": v4}, "fnuz max in quant_fp8_a", tag="v4")
    said = f"was reverted upstream in {revert[:12]}"
    _, out, _ = stack.cli("status", "--against", "up=v4", expect=1)
    assert said in out and "`patchforge bring-back up/fix.patch`" in out, out
    summary = stack.rebase_json("--to", "up=v4", expect=1)  # needs attention, as status says
    assert [g["by"] for g in summary["reverted"]] == [revert], summary
    _, out, _ = stack.cli("status", expect=1)
    assert said in out, out
    lint = stack.json("lint", expect=1)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fix.patch"] == ["error"], lint
    if neighbours:
        # The lines around the fix's place changed: bring-back stops for the fix to be made
        # there by hand, the fix kept in skipped/ meanwhile (never lost).
        _, _, err = stack.cli("bring-back", "up/fix.patch", expect=3)
        assert "conflict in k.py" in err, err
        work = stack.root / ".patchforge" / "work" / "up" / "k.py"
        work.write_bytes(k_py(fixed_block("quant_fp8_a", "mixed"), PADS,
                              neighbours_edited(fixed_block("quant_fp8_b", "mixed"), "mixed")))
        stack.cli("bring-back", "--continue")
    else:
        stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    assert stack.json("status")["reverted"] == []
    stack.cli("overlays")
    overlay = (stack.root / "overlays" / "up" / "k.py").read_bytes()
    assert fix_is_in_b(overlay, "mixed") and not fix_is_in_b(v4, "mixed")


def test_a_landing_taken_out_of_its_own_place_and_made_in_the_other_copy_is_said(tmp_path):
    """One commit takes the change out of quant_fp8_b (editing the lines around it) and makes
    it in quant_fp8_a: no revert of the landing, said as taken out, with bring-back named."""
    stack, _, _ = _landed_in_b(tmp_path)
    taker = stack.commit({"k.py": k_py(fixed_block("quant_fp8_a", "mixed"), PADS,
                                       neighbours_edited(block("quant_fp8_b"), "mixed"))},
                         "fnuz max in quant_fp8_a instead", tag="v3")
    _, out, _ = stack.cli("rebase", "--to", "up=v3", expect=1)  # needs attention
    said = f"is no longer upstream: commit {taker[:12]} took its change out"
    assert said in out, out
    _, out, err = stack.cli("status", expect=None)
    assert said in out + err and "patchforge bring-back up/fix.patch" in out + err, out + err


@pytest.mark.parametrize("where", ["both", "shifted"])
def test_a_landing_still_in_its_own_place_says_nothing(tmp_path, where):
    """The other side: the fix stays in quant_fp8_b while upstream also makes the change in
    quant_fp8_a (both), or adds 30 lines above the landed fix (shifted): landed, quiet."""
    stack, _, _ = _landed_in_b(tmp_path)
    if where == "both":
        v3 = k_py(fixed_block("quant_fp8_a", "mixed"), PADS, fixed_block("quant_fp8_b", "mixed"))
    else:
        v3 = k_py([b"# generated\n"] * 30, block("quant_fp8_a"), PADS,
                  fixed_block("quant_fp8_b", "mixed"))
    stack.commit({"k.py": v3}, "more", tag="v3")
    _, out, err = stack.cli("rebase", "--to", "up=v3")
    assert "upstream" not in out + err or "no longer" not in out + err, out + err
    document = stack.json("status")
    assert document["reverted"] == [] and document["gone_upstream"] == [], document


# Changes long enough for the history to judge (history.MIN_CHANGED_CHARS): the short ones
# above are never asked of it. Per kind: the line the fix changes in a block, its new text.
LONG = {
    "mixed": (b"        scale = 448.0\n",
              b"        scale = torch.finfo(torch.float8_e4m3fnuz).max\n"),
    "addition": (b"    y = x.abs()\n",
                 b"    y = x.abs()\n    y = torch.nan_to_num(y, nan=0.0, posinf=448.0)\n"),
}


def long_fixed(name: str, kind: str, lines: list[bytes] | None = None) -> list[bytes]:
    old, new = LONG[kind]
    return edit(block(name) if lines is None else lines, old, new)


def rebase_keeps(stack: OneUpstreamStack) -> bytes:
    """`rebase --to up=v2` does not drop the fix (a stop, aborted, or moved); the overlay of
    k.py made after it."""
    return stack.kept_by_rebase("up=v2", "k.py")


def in_class(lines: list[bytes]) -> list[bytes]:
    """A block as a method of a class: the same code indented, where no hunk of a fix made
    on the block at module level applies (its context is indented otherwise)."""
    lines = [line for part in lines for line in part.splitlines(keepends=True)]
    return [b"class Twin:\n"] + [b"    " + line if line.strip() else line for line in lines]


@pytest.mark.parametrize("twin,kind", [
    ("same", "mixed"), ("same", "addition"), ("indented", "mixed"), ("indented", "addition")])
def test_a_commit_making_the_change_only_in_the_other_copy_does_not_land_the_fix(tmp_path,
                                                                                 kind, twin):
    """The history's "commit X makes this change" compares changed lines, not places: the
    commit that made the fix's change in quant_fp8_a only was taken for its landing. With the
    same code (same: its patch-id is the fix's too), the hunk both applies and is found in
    reverse: `unsure`, which the history decided; with the copy indented as a method
    (indented, upstream also commenting a line near the fix's place in quant_fp8_b) no
    reverse-apply finds it, the fix applies with fuzz, and the history decided. Status said
    "upstreamed (high)", the rebase dropped the fix, and nothing deployed it in quant_fp8_b.
    The fix's own place still has the old code: kept."""
    a = block("quant_fp8_a") if twin == "same" else in_class(block("quant_fp8_a"))
    v1 = k_py(a, PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(a, PADS, long_fixed("quant_fp8_b", kind)))
    if twin == "same":
        v2 = k_py(long_fixed("quant_fp8_a", kind), PADS, block("quant_fp8_b"))
    else:
        # (The hunk's outermost context line above the change: it applies with fuzz.)
        outer = b"    x = x.contiguous()\n" if kind == "mixed" else b"    x = x.float()\n"
        b = edit(block("quant_fp8_b"), outer, outer[:-1] + b"  # fp32\n")
        v2 = k_py(in_class(long_fixed("quant_fp8_a", kind)), PADS, b)
    stack.commit({"k.py": v2}, "fnuz max in quant_fp8_a (#7)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert "still has the old code: the commit made it at another place, or a later one " \
        "took it out there: kept" in \
        " ".join(patch["evidence"]), patch["evidence"]
    overlay = rebase_keeps(stack)
    new = LONG[kind][1].splitlines(keepends=True)[-1]
    assert new in overlay[overlay.index(b"def quant_fp8_b"):]


def test_a_landing_the_history_proves_at_the_own_place_is_still_dropped(tmp_path):
    """The other side: upstream makes the change in quant_fp8_b itself, reformatted (a space
    inside the call's parenthesis), while the copy (indented as a method) keeps the old code,
    whose line is long enough for containment to see it still there: no file check proves
    the landing, the history does (the same change, whitespace aside). Its own place has no
    old code: the landing stands, the fix is dropped."""
    old = b"        scale = torch.tensor(448.0, dtype=torch.float32)\n"
    new = b"        scale = torch.finfo(torch.float8_e4m3fnuz).max\n"

    def b(fixed: bytes | None = None) -> list[bytes]:
        lines = edit(block("quant_fp8_b"), b"        scale = 448.0\n", old)
        return lines if fixed is None else edit(lines, old, fixed)

    a = in_class(edit(block("quant_fp8_a"), b"        scale = 448.0\n", old))
    v1 = k_py(a, PADS, b())
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(a, PADS, b(new)))
    landed = b(new.replace(b"(torch.", b"( torch."))
    stack.commit({"k.py": k_py(a, PADS, landed)}, "fnuz max (#7)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["decided_by"], patch["rebase"]) == \
        ("upstreamed", "history", "drop"), patch
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]


def test_the_kept_fixes_own_places_a_status_asks_are_one_git_diff(tmp_path, monkeypatch):
    """Three fixes, each adding a line to quant_fp8_b of its own file, landed there and kept
    under upstreamed/; upstream then comments the lines around the place in quant_fp8_a (no
    change made there): each kept fix's change applies in reverse only, and its context is
    in the file twice, so its own place is asked (git's diff of the file at the fix's Base).
    A status makes those diffs in one git process, not one per fix; all stay quiet. Their
    change blocks are a function of the files alone: kept in the cache (`kept/contents/`),
    the next status takes them from there, starting no diff, and says the same; blocks cut
    short or damaged are asked of git again, and kept whole again."""
    names = ["k", "m", "n"]
    v1 = {f"{n}.py": k_py(block("quant_fp8_a"), PADS, block("quant_fp8_b")) for n in names}
    landed = k_py(block("quant_fp8_a"), PADS, fixed_block("quant_fp8_b", "addition"))
    stack = OneUpstreamStack(tmp_path, v1)
    for n in names:
        stack.add_fix(f"fix-{n}", f"{n}.py", v1[f"{n}.py"], landed)
    stack.commit({f"{n}.py": landed for n in names}, "nan_to_num (#7)", tag="v2")
    stack.rebase_json("--to", "up=v2")
    assert stack.series("up") == []
    v3 = k_py(neighbours_edited(block("quant_fp8_a"), "addition"), PADS,
              fixed_block("quant_fp8_b", "addition"))
    stack.commit({f"{n}.py": v3 for n in names}, "comments in quant_fp8_a", tag="v3")
    stack.rebase_json("--to", "up=v3")
    # (The rebase's diffs of the same files, kept for the next command: the status's own
    # counted here.)
    shutil.rmtree(cache_dir() / "kept" / "contents", ignore_errors=True)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))

    def status() -> tuple[dict, int]:
        trace.unlink(missing_ok=True)
        return stack.json("status"), git_diffs_run(trace)

    document, diffs = status()
    assert document["reverted"] == [] and document["gone_upstream"] == [], document
    assert diffs == 1
    assert status() == (document, 0)
    kept = sorted((cache_dir() / "kept" / "contents").iterdir())
    wholes = [p.read_bytes() for p in kept]
    for damaged in (lambda whole: whole[:-3], lambda whole: whole[:-1] + bytes([whole[-1] ^ 1])):
        for path, whole in zip(kept, wholes):
            path.write_bytes(damaged(whole))
        assert status() == (document, 1)
        assert [p.read_bytes() for p in kept] == wholes
    monkeypatch.delenv("GIT_TRACE")


# The same added code found by post-image containment (whitespace ignored) at an indented
# copy of the block only, per shape: (the fix's lines in quant_fp8_b as (old line, new
# lines), upstream's edit of a context line near the fix's place in quant_fp8_b, so that
# the fix no longer applies exactly there).
CLAMP = b"    x = torch.clamp(x, min=-448.0, max=448.0)\n"
TWIN_SHAPES = {
    # Right under the def line: the twin is a method of the same name.
    "top": ((b"def quant_fp8_b(x, dtype):\n",
             b"def quant_fp8_b(x, dtype):\n    x = torch.nan_to_num(x, nan=0.0, posinf=448.0)\n"),
            (b"    y = x.abs()\n", b"    y = x.abs()  # magnitude\n")),
    # Right above the return.
    "bottom": ((b"    w = z.sum()\n",
                b"    w = z.sum()\n    w = torch.nan_to_num(w, nan=0.0, posinf=448.0)\n"),
               (b"    y = y / scale\n", b"    y = y / scale  # normalize\n")),
    # A removal only (of a line the base has in both copies).
    "deletion": ((CLAMP, b""), (b"    x = x.float()\n", b"    x = x.float()  # fp32\n")),
}


def twin_block(name: str, shape: str, fixed: bool) -> list[bytes]:
    """quant_fp8_b's block (the deletion shape's with CLAMP in it), with the fix's change
    made when `fixed`."""
    lines = block(name)
    if shape == "deletion":
        at = lines.index(b"    x = x.contiguous()\n") + 1
        lines = lines[:at] + [CLAMP] + lines[at:]
    if fixed:
        old, new = TWIN_SHAPES[shape][0]
        lines = edit(lines, old, new or None)
    return lines


def module_b(data: bytes) -> bytes:
    """The module-level quant_fp8_b of `data` (the twin is a method of the same name)."""
    return data[data.index(b"\ndef quant_fp8_b"):]


def fix_is_at_own_place(data: bytes, shape: str) -> bool:
    (old, new), _ = TWIN_SHAPES[shape]
    b = module_b(data)
    return old not in b if not new else new.splitlines(keepends=True)[-1] in b


def assert_twin_fix_kept(stack: OneUpstreamStack, shape: str, target: bytes) -> None:
    """status does not call the fix landed, the rebase does not drop it (a stop, aborted, or
    moved), and what is deployed has it at its own place, which the target lacks."""
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    overlay = rebase_keeps(stack)
    assert fix_is_at_own_place(overlay, shape) and not fix_is_at_own_place(target, shape)


@pytest.mark.parametrize("shape", sorted(TWIN_SHAPES))
def test_a_change_made_only_in_an_indented_twin_of_the_same_name_does_not_land_the_fix(
        tmp_path, shape):
    """The block twice, once as a method of a class with the same name, indented: upstream
    makes the fix's change only in the method (and edits a line near the fix's place in the
    module's function, so the fix applies there with fuzz or not at all). The added code is
    found in the method whitespace aside, next to the method's copy of the fix's context:
    the own place (where upstream's diff puts it) still has the old code, so no landing."""
    v1 = k_py(in_class(twin_block("quant_fp8_b", shape, False)), PADS,
              twin_block("quant_fp8_b", shape, False))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(in_class(twin_block("quant_fp8_b", shape, False)),
                                          PADS, twin_block("quant_fp8_b", shape, True)))
    _, (near, commented) = TWIN_SHAPES[shape]
    v2 = k_py(in_class(twin_block("quant_fp8_b", shape, True)), PADS,
              edit(twin_block("quant_fp8_b", shape, False), near, commented))
    stack.commit({"k.py": v2}, "nan guard in Twin.quant_fp8_b (#7)", tag="v2")
    assert_twin_fix_kept(stack, shape, v2)


def test_a_change_made_only_in_a_twin_in_another_file_of_the_fix_does_not_land_it(tmp_path):
    """The fix changes quant_fp8_b in k.py and a line of m.py, which has quant_fp8_b as an
    indented method; upstream makes the fix's m.py change and the fix's k.py addition only
    in m.py's method (and edits a line near the fix's place in k.py). One commit, the fix's
    changed lines all in it: the k.py hunk has not landed, so neither has the fix."""
    (old, new), (near, commented) = TWIN_SHAPES["bottom"]
    m1 = k_py(SETUP, in_class(block("quant_fp8_b")))
    m_fixed = k_py(edit(SETUP, b"    limit = 16\n", b"    limit = 32  # fits the fp8 tile\n"),
                   in_class(block("quant_fp8_b")))
    k1 = k_py(PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": k1, "m.py": m1})
    diff = b"".join(diff_of(tmp_path / f"diff-{path}", path, before, after)
                    for path, before, after in
                    (("k.py", k1, k_py(PADS, edit(block("quant_fp8_b"), old, new))),
                     ("m.py", m1, m_fixed)))
    stack.add_fix("fix", "k.py", k1, k1)  # the header; its diff is the two files' below
    patch_file = stack.root / "series" / "up" / "fix.patch"
    head = patch_file.read_bytes().split(b"---\n", 1)[0]
    patch_file.write_bytes(head + b"---\n" + diff)
    m2 = k_py(edit(SETUP, b"    limit = 16\n", b"    limit = 32  # fits the fp8 tile\n"),
              in_class(edit(block("quant_fp8_b"), old, new)))
    k2 = k_py(PADS, edit(block("quant_fp8_b"), near, commented))
    stack.commit({"k.py": k2, "m.py": m2}, "nan guard and tile limit (#7)", tag="v2")
    assert_twin_fix_kept(stack, "bottom", k2)


@pytest.mark.parametrize("where", ["reformatted", "moved"])
def test_a_contained_landing_with_an_indented_twin_is_still_dropped(tmp_path, where):
    """The other side: upstream makes the fix's addition in the module's quant_fp8_b itself,
    reformatted (reformatted: spaces inside the call), or moves quant_fp8_b into a class
    with the addition made there (moved: the module's function gone, its own place with
    it), while an indented twin without the change stays: found by containment, landed."""
    (old, new), _ = TWIN_SHAPES["bottom"]
    twin = in_class(block("quant_fp8_a"))
    v1 = k_py(twin, PADS, block("quant_fp8_b"))
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, k_py(twin, PADS, edit(block("quant_fp8_b"), old, new)))
    if where == "reformatted":
        v2 = k_py(twin, PADS, edit(block("quant_fp8_b"), old,
                                   new.replace(b"(w, ", b"( w, ").replace(b"0)\n", b"0 )\n")))
    else:
        v2 = k_py(twin, PADS, [b"class Quant:\n"], in_class(
            edit(block("quant_fp8_b"), old, new))[1:])
    stack.commit({"k.py": v2}, "nan guard (#7)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]
