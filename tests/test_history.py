"""patchforge.history: change blocks read from a patch and from git's own diffs agree, and the
walk over the history is revert-aware. (End to end through `status` in test_status.py.)"""
from __future__ import annotations

from patchforge.apply.diffparse import parse_diff
from patchforge.history import (blocks_of_file_patch, blocks_of_git_diff, judge_history,
                                patch_blocks, reverse)
from patchforge.store.diff import make_file_diff

OLD = b"".join(b"line %d of the module body\n" % i for i in range(40))
NEW = OLD.replace(b"line 5 of", b"LINE FIVE of").replace(b"line 30 of", b"line thirty of")


class _Patch:
    def __init__(self, diff: bytes) -> None:
        self.file_patches = parse_diff(diff, source="<test>")


def test_blocks_ignore_context_and_whitespace():
    narrow = make_file_diff("m.py", "m.py", OLD, NEW)
    [fp] = parse_diff(narrow, source="<test>")
    mine = blocks_of_file_patch(fp)
    assert len(mine) == 2
    # The same change made where upstream had moved the code and re-indented it.
    moved_old = b"# header\n" * 7 + OLD.replace(b"line 6", b"  line 6")
    moved_new = b"# header\n" * 7 + NEW.replace(b"line 6", b"  line 6").replace(
        b"LINE FIVE", b"    LINE FIVE")
    assert blocks_of_git_diff(make_file_diff("m.py", "m.py", moved_old, moved_new)) == mine
    assert blocks_of_git_diff(make_file_diff("m.py", "m.py", NEW, OLD)) == reverse(mine)


def test_made_undone_and_made_again():
    diff = make_file_diff("m.py", "m.py", OLD, NEW)
    wanted = patch_blocks(_Patch(diff))
    made = {"m.py": blocks_of_git_diff(diff)}
    undone = {"m.py": blocks_of_git_diff(make_file_diff("m.py", "m.py", NEW, OLD))}
    bigger = {"m.py": blocks_of_git_diff(make_file_diff(
        "m.py", "m.py", OLD, NEW.replace(b"line 20 of", b"line twenty of")))}
    other = {"m.py": blocks_of_git_diff(make_file_diff("m.py", "m.py", OLD,
                                                       OLD.replace(b"line 5", b"line V")))}

    assert judge_history(wanted, [("a", other)]).landed_by is None
    assert judge_history(wanted, [("a", made), ("b", other)]).landed_by == "a"
    assert judge_history(wanted, [("a", bigger)]).landed_by == "a"
    reverted = judge_history(wanted, [("a", made), ("b", undone)])
    assert reverted.landed_by is None and reverted.undone_by == "b"
    again = judge_history(wanted, [("a", made), ("b", undone), ("c", bigger), ("d", made)])
    assert again.landed_by == "c" and again.last_undo == "b"


def test_too_small_is_not_judged_by_history():
    tiny = make_file_diff("m.py", "m.py", b"a\nb\n", b"a\nc\n")
    assert patch_blocks(_Patch(tiny)) is None


def test_binary_changes_are_judged_by_blob_ids(tmp_path):
    """A binary file's change is its blob ids: git's own log (`Binary files ... differ` with a
    full index line) gives the patch's block; a rebuild after it supersedes, a return to the
    pre-image undoes."""
    import subprocess

    old, new, rebuilt = b"\0kernel v1" * 50, b"\0kernel v2" * 50, b"\0kernel v3" * 50

    def upstream_chunk(a: bytes, b: bytes) -> bytes:  # as `git log -p --full-index` shows it
        (tmp_path / "a").write_bytes(a)
        (tmp_path / "b").write_bytes(b)
        out = subprocess.run(["git", "diff", "--no-index", "--full-index", "a", "b"],
                             cwd=tmp_path, capture_output=True).stdout
        assert b"Binary files" in out
        return out

    wanted = patch_blocks(_Patch(make_file_diff("k.co", "k.co", old, new)))
    assert wanted is not None
    made = {"k.co": blocks_of_git_diff(upstream_chunk(old, new))}
    assert made == wanted
    superseded = {"k.co": blocks_of_git_diff(upstream_chunk(new, rebuilt))}
    undone = {"k.co": blocks_of_git_diff(upstream_chunk(new, old))}
    assert judge_history(wanted, [("a", made), ("b", superseded)]).landed_by == "a"
    assert judge_history(wanted, [("a", made), ("b", undone)]).landed_by is None
    assert judge_history(wanted, [("b", superseded)]).landed_by is None
