"""A kept landing of which a hunk's lines are elsewhere in the file after upstream took the
landing back, or moved and reworded them: whether that hunk moved (kept as landed) or was
taken back (put back) is told by the commit that took it out of its place, never by a
count of its lines or its old neighbours meeting again alone. Real git history, through the
CLI."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

STEPS = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, i) for i in range(1, 20))
ALPHA = b"def alpha(x):\n    step0 = x\n" + STEPS + b"    return step19\n\n\n"
BETA = b"def beta(x):\n    y = x - 1\n    z = y * 3\n    return z\n\n\n"
SYNC = b"    torch.cuda.synchronize()\n"
CHECK = b"    if x is None:\n        raise ValueError('x is needed')\n"
FIXED_ALPHA = ALPHA.replace(b"    step0 = x\n", CHECK + b"    step0 = x\n").replace(
    b"    return step19\n", SYNC + b"    return step19\n")
BETA_SYNCED = BETA.replace(b"    z = y * 3\n", b"    z = y * 3\n" + SYNC)


@pytest.mark.parametrize("copy", ["by a later commit", "by the revert itself"])
def test_a_reverted_landing_whose_common_line_upstream_adds_elsewhere_is_brought_back_whole(
        tmp_path, copy):
    """A fix of two hunks in alpha() (a check at the top, `torch.cuda.synchronize()` before
    its return) lands whole (#11) and is kept under upstreamed/; upstream reverts #11 whole,
    and a later commit (or the revert itself) adds `torch.cuda.synchronize()` in beta().
    The synchronize hunk was said "moved elsewhere in the file upstream" on a count of its
    line, the advised bring-back put back only the check, kept that hunk under upstreamed/
    as landed, and status and check exited 0 with alpha's synchronize in no overlay and not
    upstream. The commit that took it out of its place (the revert) did not move it: said
    with the line to look at, and bring-back puts the whole fix back."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + BETA, FIXED_ALPHA + BETA)
    landing = stack.commit({"pkg/a.py": FIXED_ALPHA + BETA}, "alpha: check and synchronize (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    revert = f'Revert "alpha: check and synchronize (#11)"\n\nThis reverts commit {landing}.'
    if copy == "by the revert itself":
        back = stack.commit({"pkg/a.py": ALPHA + BETA_SYNCED}, revert, tag="v3")
    else:
        back = stack.commit({"pkg/a.py": ALPHA + BETA}, revert)
        stack.commit({"pkg/a.py": ALPHA + BETA_SYNCED}, "beta: synchronize (#13)", tag="v3")
    line = (ALPHA + BETA_SYNCED).splitlines().index(SYNC.rstrip(b"\n")) + 1
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert said["by"] == back, said
    assert "moved elsewhere" not in said["detail"] and "taken back in part" not in \
        said["detail"], said
    assert "pkg/a.py hunk 2 has its lines elsewhere in the file" in said["detail"] and \
        f"a bring-back puts it back (possibly doubled: look at pkg/a.py line {line})" in \
        said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    # beta's copy is within a few lines of the fix's place: the hunk the revert took out is
    # put back all the same (said possibly doubled), as status advised, not stopped on it.
    _, out, _ = stack.cli("bring-back", "up/fa.patch")
    assert f"pkg/a.py hunk 2 put back though the file has its lines elsewhere (possibly " \
        f"doubled: look at pkg/a.py line {line})" in out, out
    assert not (stack.root / "series/up/upstreamed/fa.patch").exists()
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == FIXED_ALPHA + BETA_SYNCED, overlay.decode()
    for command in (("check",), ("status",)):
        stack.cli(*command)


BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 31))


def _line(n: int) -> bytes:
    return b"line %d of the module under test\n" % n


def test_a_guard_a_refactor_moved_and_reworded_beside_a_changed_hunk_is_not_taken_back(
        tmp_path):
    """A fix of two hunks (line 5 computed properly, a `value is None` guard added after line
    20) lands whole. One refactor changes line 5 again (`strict=True`) and moves the guard 4
    lines lower, its message reworded. The guard's old neighbours meet again, as any move of
    it leaves them: it was said "taken back in part", and the advised bring-back, its stop
    resolved keeping upstream's line 5, checked the value twice with every check green. The
    commit that took the guard out of its place is no revert and the guard's lines are still
    in the file: superseded, nothing said, bring-back refuses."""
    guard = b"if value is None:\n    raise ValueError('a value is needed here')\n"
    reworded = b"if value is None:\n    raise ValueError('value must be given')\n"
    fixed = BASE.replace(_line(5), b"five = compute_it_properly()\n").replace(
        _line(20), _line(20) + guard)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, fixed)
    stack.commit({"pkg/a.py": fixed}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    later = BASE.replace(_line(5), b"five = compute_it_properly(strict=True)\n").replace(
        _line(24), _line(24) + reworded)
    stack.commit({"pkg/a.py": later}, "Refactor: strict compute, validate later (#12)",
                 tag="v3")
    document = stack.json("status", "--against", "v3")
    assert document["reverted"] == [] and document["gone_upstream"] == [], document
    stack.cli("rebase", "--to", "v3")
    stack.cli("check")
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file() and \
        stack.series("up") == [], err


def test_a_guard_a_revert_took_out_beside_a_changed_hunk_is_still_taken_back(tmp_path):
    """The same fix; upstream reverts the guard's part of the landing by name, its lines
    (`if value is None:`) still in the file elsewhere as other code, then changes line 5:
    the revert is said, in part."""
    guard = b"if value is None:\n    raise ValueError('a value is needed here')\n"
    other = b"if value is None:\n    return default\n"
    base = BASE.replace(_line(3), _line(3) + other)
    fixed = base.replace(_line(5), b"five = compute_it_properly()\n").replace(
        _line(20), _line(20) + guard)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "Compute it properly (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    back = stack.commit({"pkg/a.py": fixed.replace(guard, b"")},
                        'Revert "Compute it properly (#11)" for the guard\n\n'
                        f"This reverts part of commit {landing}.")
    stack.commit({"pkg/a.py": base.replace(_line(5), b"five = compute_it_properly(True)\n")},
                 "Be strict", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert said["by"] == back and "taken back in part: pkg/a.py hunk 2" in said["detail"], \
        said


def test_a_reverted_one_line_fix_whose_line_upstream_adds_elsewhere_later_is_said(tmp_path):
    """The fix is the synchronize call alone; upstream reverts it, then adds the same call in
    beta(). Counted, the line was "moved": the fix was judged still upstream and nothing was
    said, the call in no overlay. Said reverted now, and bring-back puts it back."""
    fixed = ALPHA.replace(b"    return step19\n", SYNC + b"    return step19\n") + BETA
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + BETA, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    back = stack.commit({"pkg/a.py": ALPHA + BETA},
                        f'Revert "alpha: synchronize (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": ALPHA + BETA_SYNCED}, "beta: synchronize (#13)", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert said["by"] == back and "possibly doubled: look at pkg/a.py line" in said["detail"], \
        said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, _ = stack.cli("bring-back", "up/fa.patch")  # (beta's copy near: put back all the same)
    assert "possibly doubled: look at pkg/a.py line" in out, out
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == fixed.replace(BETA, BETA_SYNCED), overlay.decode()
    stack.cli("check")


def test_a_file_two_kept_fixes_change_is_read_as_near_text_once(tmp_path, monkeypatch):
    """Two fixes of one file, each a hunk in alpha(), land together and are kept under
    upstreamed/; upstream takes both out. Judging each asks whether its lines moved as near
    text (re-wrapped, respelled) of the same file: that file is read so once, not once per
    fix (30 AITER landings judged 300 commits later read 28 files so 127 times, the judge's
    largest cost). Both are said taken back, as before."""
    import patchforge.reverts as reverts

    read: list[bytes] = []
    real = reverts.near_flat

    def near_flat(content):
        read.append(content)
        return real(content)

    monkeypatch.setattr(reverts, "near_flat", near_flat)
    checked = ALPHA.replace(b"    step0 = x\n", CHECK + b"    step0 = x\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + BETA, checked + BETA)
    stack.add_fix("fb", "pkg/a.py", checked + BETA, FIXED_ALPHA + BETA)
    stack.commit({"pkg/a.py": FIXED_ALPHA + BETA}, "alpha: check and synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert sorted(p.name for p in (stack.root / "series/up/upstreamed").iterdir()) == \
        ["fa.patch", "fb.patch"]
    stack.commit({"pkg/a.py": ALPHA + BETA.replace(b"z = y * 3", b"z = y * 4")},
                 "alpha: simpler again", tag="v3")
    read.clear()
    said = stack.json("status", "--against", "v3", expect=1)["gone_upstream"]
    assert sorted(s["name"] for s in said) == ["fa.patch", "fb.patch"], said
    assert len(read) == len(set(read)) == 1, len(read)
