"""A kept landing in a file upstream then split: the other functions moved into a new file of
the same language, the fix's function staying where it was (the old file keeping less than half
of its lines, the new one more than half). A later commit drops the fix's guard. The take-out
was said to be the split's ("took a2 out of pkg/a.py ... into no other function or file"), and
`bring-back` stopped asking to make the fix in the new file, which does not hold the function:
the file was followed into the new one, as where upstream moves a file and writes wrappers at
its old path. A file is followed so only where the other file holds the fix's function. Real
git history, through the CLI."""
from __future__ import annotations

from test_reverts_function_gone import A, GUARD, _fn, _landed


def test_a_guard_dropped_after_its_file_was_split_names_the_commit_that_dropped_it(tmp_path):
    stack, _ = _landed(tmp_path, ())
    others = b'"""c."""\n\n\n' + b"\n\n".join(_fn(name, n) for n, name in enumerate(A)
                                              if name != b"a2")
    split = stack.commit({"pkg/a.py": b'"""m."""\n\n\n' + _fn(b"a2", 2, True),
                          "pkg/c.py": others}, "split a: a2 stays")
    # The split alone, the guard still in a2: quiet.
    doc = stack.json("status", "--against", f"up={split}")
    assert doc["gone_upstream"] == [] and doc["reverted"] == [], doc
    took = stack.commit({"pkg/a.py": b'"""m."""\n\n\n' + _fn(b"a2", 2)}, "a2: x is never None")
    doc = stack.json("status", "--against", f"up={took}", expect=1)
    (said,) = doc["reverted"] + doc["gone_upstream"]
    assert (said["name"], said["by"]) == ("fix.patch", took), said
    assert "pkg/c.py" not in said["message"], said
    _, out, _ = stack.cli("rebase", "--to", f"up={took}", expect=1)
    assert took[:12] in out and split[:12] not in out, out
    stack.cli("bring-back", "up/fix.patch")
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == \
        b'"""m."""\n\n\n' + _fn(b"a2", 2, True)
    assert not (stack.root / "overlays/up/pkg/c.py").exists()
    assert GUARD in _fn(b"a2", 2, True)
    stack.cli("status")
