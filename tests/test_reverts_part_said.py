"""What `status` says of a kept fix taken back in part names every hunk of it: one whose
added lines are gone while its old code is not back as it was (upstream changed a line
beside it too) was said in neither list of the detail. A real git upstream, the CLI."""
from __future__ import annotations

from helpers.project import OneUpstreamStack

BASE = b"".join(b"line %d of the module\n" % i for i in range(1, 41))
FIXED = (BASE.replace(b"line 5 of the module\n", b"five = fixed()\n")
         .replace(b"line 20 of the module\n",
                  b"line 20 of the module\nif guard:\n    return None\n")
         .replace(b"line 35 of the module\n", b"thirty_five = fixed()\n"))


def test_a_hunk_gone_where_its_old_code_is_not_back_is_named(tmp_path):
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": BASE})
    stack.add_fix("fa", "pkg/a.py", BASE, FIXED)
    stack.commit({"pkg/a.py": FIXED}, "Fix three places", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    later = (FIXED.replace(b"five = fixed()\n", b"line 5 of the module\n")
             .replace(b"if guard:\n    return None\n", b"")
             .replace(b"line 21 of the module\n", b"line 21, reworded\n")
             .replace(b"thirty_five = fixed()\n", b"thirty_five = other()\n"))
    stack.commit({"pkg/a.py": later}, "Rework", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    said = out.split("taken back in part: ", 1)[1].split(";", 1)[0]
    assert said == "pkg/a.py hunk 1, the rest of its change changed upstream since (pkg/a.py " \
        "hunk 2, pkg/a.py hunk 3)", out
