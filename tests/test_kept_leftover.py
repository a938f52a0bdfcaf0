"""A fix's landed part kept under upstreamed/ that the series itself still carries: a rebase
undone with git in the stack's repository (`git reset --hard` puts back series/ and the lock;
the new, untracked `upstreamed/fa.patch` stays, as git leaves it). The series holds the whole
fix again at the pin, the overlays have it: the kept file is a leftover, said as one with the
way to take it out, never "in no overlay, needs attention". Real git, the CLI."""
from __future__ import annotations

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
