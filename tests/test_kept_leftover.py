"""A fix's landed part kept under upstreamed/ that the series itself still carries: a rebase
undone with git in the stack's repository (`git reset --hard` puts back series/ and the lock;
the new, untracked `upstreamed/fa.patch` stays, as git leaves it). The series holds the whole
fix again at the pin, the overlays have it: the kept file is a leftover, said as one with the
way to take it out, never "in no overlay, needs attention". Real git, the CLI."""
from __future__ import annotations

import pytest

from helpers.git import git
from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module under test\n" % i for i in range(1, 41))
FIVE = (b"line 5 of the module under test\n", b"five = compute_it_properly()\n")
THIRTY = b"line 30 of the module under test\n"
FIXED = BASE.replace(*FIVE).replace(THIRTY, THIRTY + b"guard_thirty()\n")


def test_a_kept_part_the_series_still_carries_is_a_leftover_not_an_alarm(tmp_path):
    """Before: `status` exited 1, "before its landing (needs attention): ... and in no overlay:
    `patchforge bring-back up/fa.patch` puts it back", lint called it an error, and that
    bring-back said "landed upstream meanwhile" at a pin before the landing."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    git(stack.root, "init", "-q")
    git(stack.root, "add", "-A")
    git(stack.root, "commit", "-qm", "stack")
    stack.commit({"pkg/a.py": BASE.replace(*FIVE)}, "Compute it properly (#11)", tag="v2")
    _, out, _ = stack.cli("rebase", "--to", "v2")
    assert "1 of its 2 hunks landed upstream" in out, out
    git(stack.root, "reset", "-q", "--hard")
    assert stack.lock()["upstreams"]["up"]["label"] == "v1"
    assert b"five = compute_it_properly()" in stack.patch("up", "fa")
    kept = stack.root / "series/up/upstreamed/fa.patch"
    assert kept.is_file()

    _, out, err = stack.cli("status")
    assert "needs attention" not in out + err and "in no overlay" not in out + err, out + err
    assert "note: series/up/upstreamed/fa.patch is a leftover: the series carries its change " \
        "at the pin (v1), so the overlays have it; `patchforge delete up/upstreamed/fa.patch` " \
        "takes the file out" in err, err
    document = stack.json("status")
    assert document["needs_attention"] is False and document["gone_upstream"] == []
    assert any("is a leftover" in note for note in document["notes"]), document["notes"]
    lint = stack.json("lint", expect=None)
    assert [(f["severity"], "a leftover" in f["message"]) for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == [("warning", True)], lint

    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "the series carries its change at the pin (v1), so the overlays have it: nothing " \
        "to bring back" in err, err
    assert "`patchforge delete up/upstreamed/fa.patch` takes the leftover out" in err, err
    assert stack.series("up") == ["fa.patch"] and kept.is_file()
    stack.cli("delete", "up/upstreamed/fa.patch")
    assert not kept.exists() and stack.series("up") == ["fa.patch"]
    _, out, err = stack.cli("status")
    assert "leftover" not in err, err


def test_a_rebase_cut_short_in_its_write_out_names_no_bring_back_of_its_landed_part(tmp_path):
    """A rebase killed in its write-out after it kept a fix's landed part under upstreamed/
    and before upstream.lock pins the new revision: the kept part, judged at the old pin, was
    said "before its landing (needs attention): ... in no overlay: `patchforge bring-back
    up/fa.patch` puts it back", by status, lint, check and verify, and that bring-back is
    refused while the rebase is in progress (the fix is in the half-written series). Every
    command still says the write-out is in progress, and `--continue` finishes it."""
    import json
    import shutil

    from helpers.cli import run_faulted_copy, run_subprocess

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE, "pkg/b.py": b"b = 1\n"})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    stack.cli("overlays")
    stack.commit({"pkg/a.py": BASE.replace(*FIVE)}, "Compute it properly (#11)", tag="v2")
    kept_while_writing = 0
    for n in range(1, 40):
        root = tmp_path / f"cut-{n}"
        proc = run_faulted_copy(stack.root, root, "rebase", "--to", "v2", fault=f"rename:{n}")
        if proc.returncode == 0:
            break
        assert proc.returncode == 137, proc.stderr.decode()
        journal = root / ".patchforge" / "rebase" / "journal.json"
        kept = root / "series" / "up" / "upstreamed" / "fa.patch"
        if not (journal.exists() and json.loads(journal.read_bytes())["phase"] == "committing"
                and kept.exists()):
            shutil.rmtree(root)
            continue
        kept_while_writing += 1
        for args in (("status",), ("lint", "--no-forge"), ("check",), ("verify",)):
            said = run_subprocess(root, *args)
            text = (said.stdout + said.stderr).decode()
            # (verify checks overlays/ against the manifest: once the write-out renamed both,
            # they agree, and it says so beside the note.)
            assert said.returncode == 1 or args == ("verify",) and said.returncode == 0, \
                (n, args, said.returncode, text)
            assert "bring-back" not in text and "in no overlay" not in text, (n, args, text)
            assert "rebase --continue" in text, (n, args, text)
        run_subprocess(root, "rebase", "--continue", expect=0)
        assert b"five = compute_it_properly()" in kept.read_bytes()
        run_subprocess(root, "status", expect=0)
        shutil.rmtree(root)
    assert kept_while_writing, "no kill point left the landed part kept during the write-out"


GUARD = b"    if x is None:\n        return 0\n"
FUNCTIONS = [b"a0", b"a1", b"a2", b"a3", b"a4"]


def _fn(name: bytes, guard: bool = False) -> bytes:
    return b"def %s(x):\n" % name + (GUARD if guard else b"") + \
        b"    a = %d\n    b = a + x\n    c = b * 2\n    return c\n" % FUNCTIONS.index(name)


def _functions(names: list[bytes], guarded: tuple[bytes, ...] = ()) -> bytes:
    return b'"""m."""\n\n\n' + b"\n\n".join(_fn(name, name in guarded) for name in names)


@pytest.mark.parametrize("moved", ["without the guard", "with the guard"])
def test_a_series_fix_adding_the_guard_to_a_look_alike_never_makes_the_kept_fix_a_leftover(
        tmp_path, moved):
    """Before: fa adds a guard to a2 and lands; fb of the series adds the same guard to a4,
    which starts alike. Upstream then moved a2 into pkg/c.py without the guard: the rebase
    said fa taken out (exit 1), and every `status` after it called upstreamed/fa.patch a
    leftover the series carries (fb's guard in a4 held the kept hunk's neighbours), exit 0,
    advising `delete` of the fix's only record. Moved with its guard: quiet."""
    base = _functions(FUNCTIONS)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, _functions(FUNCTIONS, (b"a2",)))
    stack.add_fix("fb", "pkg/a.py", base, _functions(FUNCTIONS, (b"a4",)))
    stack.commit({"pkg/a.py": _functions(FUNCTIONS, (b"a2",))}, "a2: check x (#5)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert stack.series("up") == ["fb.patch"]
    rest = [name for name in FUNCTIONS if name != b"a2"]
    took = stack.commit({"pkg/a.py": _functions(rest),
                         "pkg/c.py": b'"""c."""\n\n\n' + _fn(b"a2", moved == "with the guard")},
                        "move a2 to pkg/c.py")
    if moved == "with the guard":
        stack.cli("rebase", "--to", f"up={took}")
        _, out, err = stack.cli("status")
        assert "leftover" not in err and "needs attention" not in out, out + err
        return
    stack.cli("rebase", "--to", f"up={took}", expect=1)
    _, out, err = stack.cli("status", expect=1)
    assert "leftover" not in err, err
    assert "taken out upstream (needs attention)" in out and took[:12] in out, out
    assert "`patchforge bring-back up/fa.patch`" in out, out
    lint = stack.json("lint", expect=None)
    assert [f["severity"] for f in lint["findings"]
            if f["patch"] == "up/upstreamed/fa.patch"] == ["error"], lint
    # The advised bring-back puts the guard into a2 where it is now; fb keeps a4's.
    stack.cli("bring-back", "up/fa.patch")
    assert sorted(stack.series("up")) == ["fa.patch", "fb.patch"]
    stack.cli("overlays")
    moved_to = (stack.root / "overlays/up/pkg/c.py").read_bytes()
    assert _fn(b"a2", True) in moved_to and moved_to.count(GUARD) == 1, moved_to
    old = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert old.count(GUARD) == 1 and _fn(b"a4", True) in old, old
    stack.cli("status")
