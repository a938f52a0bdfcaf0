"""patchforge.history: change blocks read from a patch and from git's own diffs agree, and the
walk over the history is revert-aware. (End to end through `status` in test_status.py.)"""
from __future__ import annotations

import os
import subprocess

from patchforge.apply.diffparse import parse_diff
from patchforge.history import (HistoryLanding, blocks_of_file_patch, blocks_of_git_diff,
                                judge_history, patch_blocks, reverse)
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


# ---- the history index: read without a pathspec, as git log -p with one reads it

def _index_both_ways(repo, base, tip, paths):
    """HistoryIndex of base..tip read from the walk without a pathspec, and from git log -p."""
    from patchforge.judge import HistoryIndex, Target
    from patchforge.store.gitstore import UpstreamStore

    store = UpstreamStore(repo / ".git")
    try:
        target = Target("up", base, tip, tip, None)
        fast = HistoryIndex(store, target, paths)
        walked = bool(fast._order) and not fast._loaded
        fast.diffs(paths)
        slow = HistoryIndex.__new__(HistoryIndex)
        slow._walk_without_pathspec = lambda changes: None  # what git log -p -- <paths> gives
        HistoryIndex.__init__(slow, store, target, paths)
        return fast, slow, walked
    finally:
        store.close()


def test_history_read_without_a_pathspec_is_what_git_log_p_shows(tmp_path):
    """On real repositories of every shape the walk meets (a line, side branches that change
    the paths and come back to them, merges like and unlike a parent, reverts, a quoted path,
    a merge of a branch from before the base), the index holds the same commits, order,
    reverts and diffs as one read with `git log -p --ancestry-path -- <paths>`."""
    from helpers.git import commit_files, git

    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    lines = [b"line %d\n" % i for i in range(40)]
    odd = "dir/caf\u00e9 \"q\".py"
    root = commit_files(repo, {"a.py": b"".join(lines), "b.py": b"b\n", odd: b"o\n"}, "root")
    git(repo, "branch", "old-side", root)
    base = commit_files(repo, {"other.txt": b"x\n"}, "base")
    commit_files(repo, {"a.py": b"".join(lines[:5] + [b"changed\n"] + lines[6:])}, "one")
    one = git(repo, "rev-parse", "HEAD").strip()
    commit_files(repo, {"other.txt": b"y\n"}, "not the paths")
    commit_files(repo, {odd: b"o2\n"}, "quoted")
    commit_files(repo, {"a.py": b"".join(lines)},
                 f"Revert \"one\"\n\nThis reverts commit {one}.\n")
    line_tip = git(repo, "rev-parse", "HEAD").strip()
    # A side branch that changes a path and puts it back; main changes something else.
    git(repo, "checkout", "-q", "-b", "side")
    commit_files(repo, {"b.py": b"b2\n"}, "side b2")
    commit_files(repo, {"b.py": b"b\n"}, "side b back")
    commit_files(repo, {"other.txt": b"z\n"}, "side other")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"main.txt": b"m\n"}, "main other first")
    git(repo, "merge", "-q", "--no-ff", "side", "-m", "merge like both parents in the paths")
    commit_files(repo, {"a.py": b"".join(lines[:30] + [b"main\n"] + lines[31:])}, "main a")
    # A side branch whose change the merge keeps: the merge differs from its first parent.
    git(repo, "checkout", "-q", "-b", "side2")
    commit_files(repo, {"b.py": b"b3\n"}, "side2 b3")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"other.txt": b"w\n"}, "main other")
    git(repo, "merge", "-q", "--no-ff", "side2", "-m", "merge taking b3")
    merges_tip = git(repo, "rev-parse", "HEAD").strip()
    # A merge of a branch that left before the base.
    git(repo, "checkout", "-q", "old-side")
    commit_files(repo, {"c.py": b"c\n"}, "old side")
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--no-ff", "old-side", "-m", "merge an old branch")
    old_tip = git(repo, "rev-parse", "HEAD").strip()

    paths = sorted(["a.py", "b.py", odd])
    for tip, expect_walk in ((line_tip, True), (merges_tip, True), (old_tip, False)):
        fast, slow, walked = _index_both_ways(repo, base, tip, paths)
        assert walked == expect_walk
        assert fast._order == slow._order and fast.log == slow.log
        assert fast._reverts == slow._reverts
        assert {c: f for c, f in fast._chunks.items() if f} == \
            {c: f for c, f in slow._chunks.items() if f}
        assert fast.log and any(c for c, _ in fast.log)
        for wanted in ([], ["a.py"], ["b.py", odd], paths, ["a.py", "nowhere.py"]):
            assert fast.commits_touching(wanted) == \
                [c for c, changed in fast.log if set(wanted) & set(changed)]
    # The side branches' commits and the merge that kept b3 are there, as git shows them.
    subjects = {git(repo, "log", "-1", "--format=%s", c).strip() for c in fast._order}
    assert {"side b2", "side b back", "side2 b3", "merge taking b3", "quoted", "one"} <= subjects
    assert "merge like both parents in the paths" not in subjects
    assert list(fast._reverts.values()) == [[one]]


def test_the_walk_says_whether_the_base_is_an_ancestor_as_git_merge_base_does(tmp_path):
    """read_history takes "is the base an ancestor of the target" from its own walk instead of
    a `git merge-base --is-ancestor` before it: on a repository with a merge of a side branch,
    a branch beside the target, a second root and a merge of it, the answer (and whether a
    walk comes back) is git's for every pair of commits."""
    from helpers.git import commit_files, git
    from patchforge.judge import Target, read_history
    from patchforge.store.gitstore import UpstreamStore

    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commits = [commit_files(repo, {"a.py": b"a\n"}, "root")]
    commits.append(commit_files(repo, {"a.py": b"a2\n"}, "two"))
    git(repo, "checkout", "-q", "-b", "side")
    commits.append(commit_files(repo, {"b.py": b"b\n"}, "side"))
    git(repo, "checkout", "-q", "main")
    commits.append(commit_files(repo, {"c.py": b"c\n"}, "main"))
    git(repo, "merge", "-q", "--no-ff", "side", "-m", "merge side")
    commits.append(git(repo, "rev-parse", "HEAD").strip())
    git(repo, "checkout", "-q", "--orphan", "other")
    git(repo, "rm", "-q", "-rf", ".")
    commits.append(commit_files(repo, {"o.py": b"o\n"}, "another root"))
    git(repo, "checkout", "-q", "main")
    git(repo, "merge", "-q", "--allow-unrelated-histories", "other", "-m", "merge roots")
    commits.append(git(repo, "rev-parse", "HEAD").strip())

    for base in commits:
        for tip in commits:
            if base == tip:
                continue
            expected = subprocess.run(["git", "merge-base", "--is-ancestor", base, tip],
                                      cwd=repo).returncode == 0
            store = UpstreamStore(repo / ".git")
            try:
                walk = read_history(store, Target("up", base, tip, tip, None))
                assert (walk is not None) == expected, (base, tip)
                assert store._ancestry[(base, tip)] == expected
                assert store.is_ancestor(base, tip) == expected
            finally:
                store.close()


def test_history_read_without_a_pathspec_on_odd_paths_and_changes(tmp_path):
    """The walk matches git's `--raw` names to the series' paths by git's own quoting: a DEL, a
    byte that is not UTF-8 and a tab in a name; and it sees the changes a content diff does not
    show as lines: a file deleted then added again, a mode-only change, a file turned into a
    symlink, a rename (without rename detection: a deletion and an addition), and a merge whose
    result differs from both parents; a message and a file with bare CRs are read as git splits
    them. The
    index is the one `git log -p -- <paths>` gives."""
    from helpers.git import commit_files, git

    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    odd = ["del\x7fx.py", os.fsdecode(b"raw\xff.py"), "tab\tname.py"]
    base = commit_files(repo, {**{name: b"v1\n" for name in odd}, "a.py": b"a\n",
                               "gone.py": b"g\n", "m.py": b"m\n", "mv.py": b"mv\n",
                               "ln.py": b"l\n"}, "base")
    for name in odd:
        commit_files(repo, {name: b"v2\n"}, f"change {name!r}")
    commit_files(repo, {"gone.py": None}, "delete")
    commit_files(repo, {"gone.py": b"g again\n"}, "add again")
    os.chmod(repo / "m.py", 0o755)
    commit_files(repo, {}, "mode only")
    # A message with bare CRs (an old tool's line ends): no line end to git.
    (repo / "a.py").write_bytes(b"a2\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--cleanup=verbatim", "-F", "-",
        input=b"subject\n\nwritten by\rcommit message\r:100644 tool\n")
    commit_files(repo, {"sums.txt": b"old mac line ends\r" + b"0" * 40 + b"\n"}, "CR content")
    commit_files(repo, {}, "rename", moves={"mv.py": "moved.py"})
    (repo / "ln.py").unlink()
    os.symlink("a.py", repo / "ln.py")
    commit_files(repo, {}, "file to symlink")
    git(repo, "checkout", "-q", "-b", "side")
    commit_files(repo, {"a.py": b"side\n"}, "side a")
    git(repo, "checkout", "-q", "main")
    commit_files(repo, {"a.py": b"main\n"}, "main a")
    subprocess.run(["git", "merge", "-q", "side", "-m", "conflicted"], cwd=repo,
                   capture_output=True)
    tip = commit_files(repo, {"a.py": b"neither\n"}, "merge unlike both parents")
    paths = sorted([*odd, "a.py", "gone.py", "m.py", "mv.py", "moved.py", "ln.py", "sums.txt"])
    fast, slow, walked = _index_both_ways(repo, base, tip, paths)
    assert walked
    assert fast._order == slow._order and fast.log == slow.log
    assert {c: f for c, f in fast._chunks.items() if f} == \
        {c: f for c, f in slow._chunks.items() if f}
    touched = {path for _, changed in fast.log for path in changed}
    assert touched == set(paths)  # each of them, in a commit the walk found


def test_a_one_commit_history_read_from_its_trees_is_git_s_walk(tmp_path):
    """A target whose one parent is the base is read without git's walk (`git log --raw`,
    which lists every file of a release): its series paths' changes come from the two trees.
    On one commit making every kind of change git's `--raw` lines tell (a change, an addition,
    a deletion, a mode-only change, a file turned into a symlink, a file turned into a
    directory and a directory into a file, a submodule moved, names git quotes, a path that
    stays as it was) with a revert's message, the index holds what it holds when read from
    git's walk of the range: the commits, the paths each touches, the reverts, the `:` lines
    of the series' paths byte for byte, and, once a question needs the commit's every file,
    git's own walk."""
    from helpers.git import commit_files, git
    from patchforge.judge import HistoryIndex, OneCommitWalk, Target, _raw_changes, read_history
    from patchforge.store.gitstore import UpstreamStore

    repo = tmp_path / "up"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    odd = ["del\x7fx.py", os.fsdecode(b"raw\xff.py"), "tab\tname.py", "caf\u00e9.py"]
    reverted = commit_files(repo, {"old.txt": b"o\n"}, "to be reverted")
    files = {**{name: b"v1\n" for name in odd}, "a.py": b"a\n", "gone.py": b"g\n",
             "m.py": b"m\n", "ln.py": b"l\n", "fd.py": b"f\n", "blocked/x.py": b"x\n",
             "same.py": b"s\n", "other.txt": b"t\n"}
    commit_files(repo, files, "files")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{reverted},sub")
    git(repo, "commit", "-q", "-m", "a submodule")
    base = git(repo, "rev-parse", "HEAD").strip()
    for name in odd:
        (repo / name).write_bytes(b"v2\n")
    (repo / "a.py").write_bytes(b"a2\n")
    (repo / "gone.py").unlink()
    (repo / "new.py").write_bytes(b"n\n")
    os.chmod(repo / "m.py", 0o755)
    (repo / "ln.py").unlink()
    os.symlink("a.py", repo / "ln.py")
    (repo / "fd.py").unlink()
    (repo / "fd.py").mkdir()
    (repo / "fd.py" / "inner.py").write_bytes(b"i\n")
    (repo / "blocked" / "x.py").unlink()
    (repo / "blocked").rmdir()
    (repo / "blocked").write_bytes(b"a file now\n")
    (repo / "other.txt").write_bytes(b"t2\n")
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{base},sub")
    git(repo, "commit", "-q", "--cleanup=verbatim", "-F", "-",
        input=b"Revert \"to be reverted\"\n\nThis reverts commit %s.\r\n" % reverted.encode())
    tip = git(repo, "rev-parse", "HEAD").strip()
    paths = sorted([*odd, "a.py", "gone.py", "new.py", "m.py", "ln.py", "fd.py", "fd.py/inner.py",
                    "blocked/x.py", "blocked", "same.py", "sub", "nowhere/y.py"])
    store = UpstreamStore(repo / ".git")
    try:
        target = Target("up", base, tip, tip, None)
        walk = read_history(store, target)
        assert isinstance(walk, OneCommitWalk)
        assert store.is_ancestor(base, tip)
        trees = HistoryIndex(store, target, paths, changes=walk)
        git_walk = store.range_changes(base, tip)
        walked = HistoryIndex(store, target, paths, changes=git_walk)
        assert trees._order == walked._order == [tip]
        assert trees.log == walked.log
        assert set(trees.log[0][1]) == set(paths) - {"same.py", "nowhere/y.py"}
        assert trees._reverts == walked._reverts == {tip: [reverted]}
        assert trees._range == walked._range and trees.beside(tip) == []
        for first in (False, True):
            assert trees._versions([tip], paths, first=first) == \
                walked._versions([tip], paths, first=first)
        # The `:` lines of the series' paths are git's, modes, ids and status letters alike.
        own = trees._raw[tip][0]
        series_lines = [line for line in git_walk.split(b"\n") if line.startswith(b":") and
                        _raw_changes(b"\n" + line, 0, len(line) + 1)[0][3] in paths]
        assert [line for line in own.split(b"\n") if line.startswith(b":")] == \
            sorted(series_lines, key=lambda line: line.split(b"\t", 1)[1])
        assert len(series_lines) == len(trees.log[0][1])
        # A question about the commit's every file reads git's walk of it.
        assert _raw_changes(*trees._whole_raw()[tip]) == _raw_changes(*walked._raw[tip])
        assert any(change[3] == "other.txt" for change in _raw_changes(*trees._raw[tip]))
    finally:
        store.close()


def test_squash_candidate_runs_are_those_of_patches_inside_a_commit():
    """The squash check's candidate runs (judge._candidate_runs), counted through the patches
    on each path a commit touches, are the runs of consecutive patches whose files that
    commit all touches: checked on random series against that definition."""
    import random

    from patchforge.judge import MAX_SERIES_RUN, _candidate_runs

    rng = random.Random(5)
    names = ["a", "b", "c", "d", "e"]
    for _ in range(300):
        files = [None if rng.random() < 0.1 else
                 (set(rng.sample(names, rng.randrange(0, 3))) if rng.random() < 0.5 else
                  dict.fromkeys(rng.sample(names, rng.randrange(1, 3))))
                 for _ in range(rng.randrange(0, 20))]
        log = [(f"c{k}", rng.sample(names, rng.randrange(0, 5)))
               for k in range(rng.randrange(0, 6))]
        wanted: dict = {}
        for commit, touched in log:
            inside = [b is not None and set(b) <= set(touched) for b in files]
            for i in range(len(files)):
                for j in range(i + 1, min(len(files), i + MAX_SERIES_RUN)):
                    if all(inside[i:j + 1]):
                        wanted.setdefault((i, j), []).append(commit)
        assert _candidate_runs(files, log) == wanted


def test_a_diffs_added_lines_are_its_plus_lines_whitespace_removed():
    """judge.added_lines_of (a regular expression and one translate) gives each `+` line but
    the `+++ ` header, whitespace removed, as a test of each line of the diff does: on random
    diffs of `+`, `++`, `+++ ` starts, CRs, tabs and empty `+` lines."""
    import random

    from patchforge.history import WHITESPACE
    from patchforge.judge import added_lines_of

    rng = random.Random(1)
    parts = [b"+", b"++", b"+++ ", b"+++", b" ", b"-", b"\r", b"\t", b"a", b"\n", b"\n", b"x y",
             b"@@", b"\x0b", b"\x0c"]
    for _ in range(20000):
        diff = b"".join(rng.choice(parts) for _ in range(rng.randrange(0, 14)))
        assert added_lines_of(diff) == frozenset(
            line[1:].translate(None, WHITESPACE) for line in diff.split(b"\n")
            if line.startswith(b"+") and not line.startswith(b"+++ ")), diff


def test_squash_runs_left_out_by_their_lines_are_runs_no_commit_made():
    """judge._runs_that_can_land leaves a candidate run out only when no commit of it adds
    every line the run adds (the full check of series_landings, from the files' contents):
    on random series of edits, creations and deletions and random commits' added lines,
    every run the full check keeps is kept, and most others are left out."""
    import random
    from types import SimpleNamespace

    from patchforge.apply.hunks import apply_file_patch
    from patchforge.history import WHITESPACE
    from patchforge.judge import _runs_that_can_land

    rng = random.Random(9)
    words = [b"alpha\n", b"  alpha\n", b"beta gamma\n", b"\n", b"}\n", b"delta\n", b"eps\n",
             b"zeta\n", b"eta theta\n"]

    def line_set(content):
        return {line.translate(None, WHITESPACE) for line in content.split(b"\n")} \
            if content else set()

    left_out = 0
    for _ in range(40):
        base = {"f": b"".join(rng.choice(words[:5]) for _ in range(8)), "g": None}
        versions = dict(base)
        patches, before, after = [], [], []
        for _ in range(7):
            path = rng.choice(["f", "f", "g"])
            old = versions[path]
            if old is None:
                new = b"".join(rng.choice(words) for _ in range(rng.randrange(1, 5)))
            else:
                lines = old.splitlines(keepends=True)
                for _ in range(rng.randrange(1, 4)):
                    at = rng.randrange(0, len(lines) + 1)
                    if rng.random() < 0.4 and at < len(lines):
                        del lines[at]
                    else:
                        lines.insert(at, rng.choice(words))
                new = b"".join(lines) or None  # all lines gone: a deletion
            if new == old:
                continue
            diff = make_file_diff(path if old is not None else None,
                                  path if new is not None else None, old, new)
            (fp,) = parse_diff(diff, source="<test>")
            assert apply_file_patch(old, fp, max_fuzz=0).content == new
            patches.append((f"p{len(patches)}", _Patch(diff)))
            before.append({path: old})
            after.append({path: new})
            versions[path] = new
        added = {k: {fp.new_path or fp.old_path: {line[1:].translate(None, WHITESPACE)
                                                  for h in fp.hunks for line in h.lines
                                                  if line[:1] == b"+"}
                     for fp in patch.file_patches} for k, (_, patch) in enumerate(patches)}
        every = {w.translate(None, WHITESPACE) for w in words}
        commits = {f"c{n}": {p: frozenset(rng.sample(sorted(every),
                                                     rng.randrange(len(every) + 1)))
                             for p in ("f", "g")} for n in range(4)}
        index = SimpleNamespace(added_lines=lambda commit, path: commits[commit][path])
        runs = {(i, j): sorted(commits) for i in range(len(patches))
                for j in range(i + 1, len(patches))}
        kept = _runs_that_can_land(runs, added, base, index)
        for (i, j) in runs:
            first, last = {}, {}
            for k in range(i, j + 1):
                for path, content in before[k].items():
                    first.setdefault(path, content)
                last.update(after[k])
            new_lines = {p: set().union(*(added[k].get(p, ()) for k in range(i, j + 1)))
                         & line_set(last[p]) - line_set(first[p]) - {b""} for p in first}
            made = any(all(new_lines[p] <= commits[c][p] for p in first) for c in commits)
            assert not made or (i, j) in kept, (i, j)
            left_out += (i, j) not in kept
    assert left_out > 100


def test_squash_check_walks_only_up_to_the_runs_its_lines_leave():
    """series_landings without a walk given leaves out, before walking the old series, the
    runs no commit can have made by the lines of every patch, and walks only up to the last
    patch of the runs left (none left: no walk): on random series of one- and two-file
    patches, some of which do not apply in the old series, and random histories, it finds
    exactly what it finds from the whole walk."""
    import random
    from types import SimpleNamespace

    import patchforge.judge as judge
    from patchforge.apply.hunks import apply_file_patch

    rng = random.Random(5)
    words = [b"alpha beta gamma\n", b"  alpha beta gamma\n", b"delta epsilon zeta\n", b"\n",
             b"}\n", b"eta theta iota kappa\n", b"lambda mu nu xi omicron\n"]
    paths = ["f.py", "g.py", "h.py"]
    walks = []
    real_walk = judge.old_series_walk

    def walk(*args):
        walks.append(args[3] if len(args) > 3 else None)
        return real_walk(*args)

    judge.old_series_walk = walk
    compared = found_any = fewer = 0
    try:
        for _ in range(60):
            base = {p: b"".join(rng.choice(words) for _ in range(6)) for p in paths}
            versions = dict(base)
            patches = []
            for n in range(rng.randrange(3, 9)):
                diff = b""
                for path in rng.sample(paths, rng.choice([1, 1, 2])):
                    old = versions[path]
                    lines = old.splitlines(keepends=True)
                    for _ in range(rng.randrange(1, 3)):
                        lines.insert(rng.randrange(len(lines) + 1), rng.choice(words))
                    new = b"".join(lines)
                    if rng.random() < 0.15:  # made against other content: does not apply
                        diff += make_file_diff(path, path, b"other\n" + old, b"other\n" + new)
                    else:
                        diff += make_file_diff(path, path, old, new)
                        versions[path] = new
                if diff:
                    patch = _Patch(diff)
                    patch.paths = tuple(fp.path for fp in patch.file_patches)
                    patches.append((f"p{n}", patch))
            every = {w.translate(None, judge.WHITESPACE) for w in words}
            log = [(f"c{n}", sorted(rng.sample(paths, rng.randrange(1, 4)))) for n in range(5)]
            added = {(c, p): frozenset(rng.sample(sorted(every), rng.randrange(len(every) + 1)))
                     for c, _ in log for p in paths}
            index = SimpleNamespace(
                log=log, diffs=lambda wanted: {},
                added_lines=lambda commit, path: added[commit, path],
                judge_blocks=lambda wanted, spaced=None: HistoryLanding(
                    log[hash(repr(sorted(wanted.items()))) % len(log)][0]))

            def read_base(wanted):
                return {p: base[p] for p in wanted}

            walks.clear()
            whole = judge.series_landings(
                patches, index, read_base,
                walked=real_walk(patches, read_base, apply_file_patch))
            alone = judge.series_landings(patches, index, read_base)
            assert alone == whole, (alone, whole)
            compared += 1
            found_any += bool(whole)
            fewer += not walks or walks[0] is not None and walks[0] < len(patches) - 1
    finally:
        judge.old_series_walk = real_walk
    assert compared == 60 and found_any > 5 and fewer > 5, (found_any, fewer)


def _reference_sections(text: bytes) -> dict[str, dict[bytes, bytes]]:
    """`git diff-tree --stdin -p` output read line by line (at LF only): a commit's id alone on
    a line starts its sections, a `diff --git ` line starts a file's section; what comes before
    a commit's first file section is nobody's, a header met again replaces the earlier one."""
    import io
    import re

    chunks: dict[str, dict[bytes, list[bytes]]] = {}
    files: dict[bytes, list[bytes]] = {}
    header = None
    for line in io.BytesIO(text):
        if re.fullmatch(rb"[0-9a-f]{40}\n", line):
            files = chunks.setdefault(line[:40].decode(), {})
            header = None
        elif line.startswith(b"diff --git "):
            header = line.rstrip(b"\n")
            files[header] = [line]
        elif header is not None:
            files[header].append(line)
    return {commit: {h: b"".join(lines) for h, lines in sections.items()}
            for commit, sections in chunks.items()}


def _reference_walk(changes: bytes, raw_names: dict[bytes, str], raw=None):
    """`store.range_changes` output read line by line: (commit -> (parents, series paths it
    changes), commit -> the commits its message reverts); a merge's later listings (against
    its next parents) add paths, not reverts. `raw`: filled with each commit's `:` lines, of
    its first listing, when it has one parent."""
    import re

    walk: dict[str, tuple[list[str], set[str]]] = {}
    reverts: dict[str, list[str]] = {}
    commit, again = "", False
    for line in changes.split(b"\n"):
        if line.startswith(b"commit "):
            commit, *parents = line[7:].decode().split()
            again = commit in walk
            if not again:
                walk[commit] = (parents, set())
                if raw is not None and len(parents) == 1:
                    raw[commit] = []
        elif line.startswith(b":"):
            if raw is not None and not again and commit in raw:
                raw[commit].append(line)
            name = raw_names.get(line.split(b"\t", 1)[1])
            if name is not None:
                walk[commit][1].add(name)
        elif not again and line.startswith(b"    This reverts commit "):
            found = re.match(rb"^    This reverts commit ([0-9a-f]{7,40})", line)
            if found:
                reverts.setdefault(commit, []).append(found[1].decode())
    return walk, reverts


def test_history_outputs_are_cut_as_a_reading_line_by_line_does():
    """HistoryIndex cuts git's outputs by regular expressions (C loops over megabytes): the
    diffs of `git diff-tree --stdin` into commits and file sections, the walk of
    `store.range_changes` into commits, the series' paths each changes and the reverts its
    message names, and the `:` lines of each commit with one parent. On random outputs of every
    line git writes there (ids, headers met twice, commits without sections, `+` lines of forty
    hex digits, bare CRs, no final line end, a merge listed once per parent, revert lines with
    short and bad ids), the same as reading them line by line."""
    import random

    from patchforge.judge import HistoryIndex, Target, _raw_changes

    rng = random.Random(7)
    ids = [f"{rng.getrandbits(160):040x}" for _ in range(6)]
    paths = ["a.py", "b c.py", '"q\\303\\251.py"', "d.py"]
    names = {b"a.py": "a.py", b"b c.py": "b c.py", b'"q\\303\\251.py"': "q\u00e9.py"}
    body = [b"+" + ids[0].encode(), b" context", b"-old\r", b"+new\rline", b"\\ No newline",
            b"@@ -1,2 +1,2 @@", b"index 1234567..89abcde 100644", b"--- a/a.py", b"+++ b/a.py",
            b"+diff --git inside", b" " + ids[1].encode(), b"", b"Binary files a/x and b/x differ"]
    for _ in range(3000):
        lines = []
        for _ in range(rng.randrange(0, 12)):
            kind = rng.random()
            if kind < 0.25:
                lines.append(rng.choice(ids).encode())
            elif kind < 0.45:
                path = rng.choice(paths).encode()
                lines.append(b"diff --git a/" + path + b" b/" + path)
            else:
                lines.append(rng.choice(body))
        text = b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b"")
        index = HistoryIndex.__new__(HistoryIndex)
        index._chunks = {}
        index._add_chunks(text, from_log=False)
        assert index._chunks == _reference_sections(text), text

        lines = []
        for _ in range(rng.randrange(0, 10)):
            commit = rng.choice(ids)
            lines.append(f"commit {commit} {' '.join(rng.sample(ids, rng.randrange(0, 3)))}"
                         .encode())
            lines += rng.sample([b"    subject", b"    ", b"    This reverts commit "
                                 + rng.choice(ids).encode() + b".", b"    This reverts commit "
                                 + rng.choice(ids)[:9].encode(), b"    This reverts commit xyz",
                                 b"    body\r:100644 x\tb c.py", b""], rng.randrange(0, 4))
            for _ in range(rng.randrange(0, 4)):
                lines.append(b":100644 100644 " + ids[0].encode() + b" " + ids[1].encode()
                             + b" M\t" + rng.choice(paths + ["other.py"]).encode())
        changes = b"\n".join(lines) + (b"\n" if rng.random() < 0.8 else b"")
        index = HistoryIndex.__new__(HistoryIndex)
        index.paths = list(names.values())
        index.target = Target("up", "base", "tip", "tip", None)
        index._order, index._reverts = [], {}
        raw: dict[str, list[bytes]] = {}
        walk, reverts = _reference_walk(changes, names, raw)
        touched = index._walk_without_pathspec(changes)
        # Each commit with one parent: the files its `:` lines name, with their blobs
        # (HistoryIndex._blocks_holding reads them).
        assert set(index._raw) == set(raw)
        for commit, lines in raw.items():
            listed = [(old, new, path)
                      for _, old, new, path, _ in _raw_changes(*index._raw[commit])]
            assert listed == [(ids[0], ids[1], names.get(name, name.decode()))
                              for name in (line.split(b"\t", 1)[1] for line in lines)], lines
        if any(len(parents) > 1 and any(p not in walk for p in parents)
               for parents, _ in walk.values()):
            assert touched is None
            continue
        assert touched is not None
        assert set(touched) == set(index._order) == {
            c for c, (parents, found) in walk.items() if found}
        for commit in index._order:
            parents, found = walk[commit]
            assert touched[commit] == (set() if len(parents) > 1 else found)
        assert index._reverts == {c: r for c, r in reverts.items() if c in touched}


def test_a_commits_versions_are_read_where_its_line_is_in_the_walk_as_line_by_line():
    """The blobs before and after each commit's change of a series path (HistoryIndex._versions:
    what a partial store fetches before the history's diffs; `first`: only the version after
    each path's oldest commit) are read off the commit's `:` line for that path in the range's
    walk, found by the path's name where the commit's part lies in the walk's text, never
    copied out of it. On random walks (commits listed in any order, a merge listed once per
    parent, message lines that look like `:` lines, added and deleted files, submodules, the
    last line without a line end, the walk starting with or without a commit line), the same
    blobs, each at the first commit that names it, as the `:` lines read one by one give."""
    import random

    from patchforge.judge import HistoryIndex, Target

    rng = random.Random(11)
    ids = [f"{rng.getrandbits(160):040x}" for _ in range(8)]
    blobs = [f"{rng.getrandbits(160):040x}" for _ in range(12)]
    zero = "0" * 40
    names = {b"a.py": "a.py", b"b c.py": "b c.py", b'"q\\303\\251.py"': "q\u00e9.py",
             b"a.py.orig": "a.py.orig"}
    checked = 0
    for _ in range(2000):
        lines = [b"noise before the first commit"] if rng.random() < 0.2 else []
        for _ in range(rng.randrange(1, 8)):
            commit = rng.choice(ids)
            lines.append(f"commit {commit} {' '.join(rng.sample(ids, rng.randrange(0, 3)))}"
                         .encode())
            lines += rng.sample([b"    subject", b"    :100644 100644 x y M\tb c.py",
                                 b"    body\r:100644 x\ta.py", b""], rng.randrange(0, 3))
            for _ in range(rng.randrange(0, 5)):
                modes = rng.choice([("100644", "100644"), ("000000", "100644"),
                                    ("100644", "000000"), ("160000", "160000"),
                                    ("100755", "100644")])
                old = zero if modes[0] == "000000" else rng.choice(blobs)
                new = zero if modes[1] == "000000" else rng.choice(blobs)
                path = rng.choice(list(names) + [b"other.py", b"x/a.py"])
                lines.append(f":{modes[0]} {modes[1]} {old} {new} M\t".encode() + path)
        changes = b"\n".join(lines) + (b"\n" if rng.random() < 0.7 else b"")
        index = HistoryIndex.__new__(HistoryIndex)
        index.paths = sorted(names.values())
        index.target = Target("up", "base", "tip", "tip", None)
        index._order, index._reverts = [], {}
        raw: dict[str, list[bytes]] = {}
        _reference_walk(changes, names, raw)
        touched = index._walk_without_pathspec(changes)
        if touched is None:
            continue
        index.log = [(commit, sorted(touched[commit])) for commit in reversed(index._order)]
        index._touches = None
        commits = [commit for commit, _ in index.log]
        for first in (False, True):
            expected: dict[str, set[tuple[str, str]]] = {}  # blob -> where it may be named
            left = set(index.paths)
            for commit in commits:
                asked = left.intersection(dict(index.log)[commit])
                for path in asked:
                    line = next((line for line in raw.get(commit, ())
                                 if names.get(line.split(b"\t", 1)[1]) == path
                                 and line.split(b"\t", 1)[1] in names), None)
                    if line is None:
                        continue
                    fields = line[1:].split(b"\t", 1)[0].split(b" ")
                    if b"160000" in fields[:2]:
                        continue
                    sides = [oid.decode() for mode, oid in ((fields[0], fields[2]),
                                                            (fields[1], fields[3]))
                             if mode != b"000000"]
                    for oid in sides[-1:] if first else sides:
                        if oid not in expected or all(c == commit for c, _ in expected[oid]):
                            expected.setdefault(oid, set()).add((commit, path))
                    if first:
                        left.discard(path)
                if first and not left:
                    break
            found = index._versions(commits, index.paths, first=first)
            assert set(found) == set(expected), changes
            assert all(found[oid] in expected[oid] for oid in found), changes
            checked += len(found)
    assert checked > 1500


def test_a_commit_that_undoes_a_change_holds_its_undo_probes():
    """The landing lookup judges a patch's history only when a commit of it may undo the
    change (HistoryIndex.may_undo): every commit judge_history finds undoing it holds, in its
    diff's text without whitespace, each line of a reversed block of the change
    (history.undo_probes). Random files, patches, and commits that revert them whole, in
    part, re-indented, or change something else."""
    import random

    from patchforge.history import may_reverse, undo_probes, without_whitespace
    from patchforge.store.diff import FileChange, make_diffs

    rng = random.Random(19)
    words = [b"value = compute(x)", b"  return self.model", b"\tif ready:", b"items[0] += 1",
             b"call(a, b)", b"# a comment line", b"", b"pass", b"raise Error('no')"]

    def lines(n):
        return [rng.choice(words) + b" %d" % rng.randrange(4) for _ in range(n)]

    def edit(content: list[bytes]) -> list[bytes]:
        out = list(content)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(out) + 1)
            kind = rng.randrange(3)
            if kind == 0 and out:
                del out[min(at, len(out) - 1)]
            elif kind == 1 and out:
                out[min(at, len(out) - 1)] = rng.choice(words) + b" changed"
            else:
                out[at:at] = lines(rng.randrange(1, 3))
        return out

    def respace(content: list[bytes]) -> list[bytes]:
        return [line.replace(b" ", b"  ").replace(b"(", b" (") if rng.random() < 0.5 else line
                for line in content]

    cases = []
    for _ in range(400):
        base = lines(rng.randrange(6, 20))
        patched = edit(base)
        way = rng.randrange(5)
        if way == 0:  # the change reverted whole
            before, after = patched, base
        elif way == 1:  # reverted, re-indented
            before, after = respace(patched), respace(base)
        elif way == 2:  # a part of it reverted
            before, after = patched, [line for line in base if rng.random() < 0.7] or base
        elif way == 3:  # something else changed
            before, after = patched, edit(patched)
        else:  # reverted along with another change
            before, after = patched, edit(base)
        cases.append((base, patched, before, after))
    joined = [(b"\n".join(c) + b"\n" if c else b"") for case in cases for c in case]
    diffs = make_diffs([[FileChange("m.py", "m.py", joined[k], joined[k + 1])]
                        for k in range(0, len(joined), 2)])
    undone = 0
    for k in range(len(cases)):
        patch, commit = diffs[2 * k], diffs[2 * k + 1]
        wanted = {"m.py": blocks_of_git_diff(patch)}
        if not wanted["m.py"] or not commit:
            continue
        landing = judge_history(wanted, [("c", {"m.py": blocks_of_git_diff(commit)})])
        if landing.last_undo is None:
            continue
        undone += 1
        probes = undo_probes(wanted)
        assert probes is not None and may_reverse(probes.get("m.py", []),
                                                  without_whitespace(commit)), (patch, commit)
    assert undone > 100


def test_lines_bare_and_as_code_are_what_each_line_alone_gives():
    """history._bare (one translate over the lines joined), _codes_of_lines (code_of of each
    line, made over them joined) and _is_run (a run looked for where its first line is) give
    what a call per line and a comparison at every start give: random lines of whitespace,
    CRs, line ends inside a line, quotes, commas before brackets, empty lines. (code_of keeps
    the whitespace inside a one-line string, and all of a line whose quotes it cannot tell
    apart: `kept`, each line's alone.)"""
    import random
    import re

    from patchforge.history import (WHITESPACE, _bare, _codes_of_lines, _is_run, code_of,
                                    string_parts)

    def kept(each: bytes) -> bytes:
        if string_parts(each) is None:  # quotes not told apart: all whitespace but line ends
            return each.strip(WHITESPACE).translate(None, b"\r\n")
        parts = re.split(rb"(\"(?:[^\"\\\n]|\\.)*\"|'(?:[^'\\\n]|\\.)*')", each)
        return b"".join(part if k % 2 else part.translate(None, WHITESPACE)
                        for k, part in enumerate(parts))

    rng = random.Random(32)
    parts = [b" ", b"\t", b"\r", b"\n", b"\x0b", b"\x0c", b"a", b"b(", b")", b"]", b"}", b",",
             b", )", b"'", b'"', b"x,\n)", b""]

    def line() -> bytes:
        return b"".join(rng.choice(parts) for _ in range(rng.randrange(0, 6)))

    for _ in range(20000):
        lines = tuple(line() for _ in range(rng.randrange(0, 5)))
        bare = tuple(each.translate(None, WHITESPACE) for each in lines)
        assert _bare(lines) == bare, lines
        codes = tuple(kept(each) for each in lines)
        assert _codes_of_lines(lines) == [
            re.sub(rb",([)\]}])", rb"\1", each.replace(b"'", b'"')) for each in codes], lines
        assert code_of(lines) == re.sub(rb",([)\]}])", rb"\1",
                                        b"".join(codes).replace(b"'", b'"')), lines
        small = tuple(rng.choice(bare or (b"",)) for _ in range(rng.randrange(0, 3)))
        n = len(small)
        assert _is_run(small, bare) == any(
            bare[i:i + n] == small for i in range(len(bare) - n + 1)), (small, bare)


def test_a_code_run_is_found_alike_with_and_without_the_pass_over_the_bytes(monkeypatch):
    """history._code_run_in first asks whether the code, commas out, is in the lines joined
    without whitespace, quotes or commas (`_loose`), and answers False at once when not. Its
    answer is the one made without that pre-check: random lines of calls wrapped over lines,
    trailing commas, brackets alone, quotes, empty lines; codes made of random runs of them,
    and those codes edited. Fails on main, which has no pre-check."""
    import random

    from patchforge import history

    rng = random.Random(1932)
    words = [b"call(", b"  a,", b"  'b',", b"    c=1,", b")", b"]", b"}", b"", b"  ",
             b"x = [1, 2,]", b"y = f(a, b)", b'  "q",', b"z,", b"(", b"\tw"]

    class Everything:  # (what the pre-check asks of the joined text: it holds anything)
        def __contains__(self, _) -> bool:
            return True

        def find(self, _) -> int:
            return 0

    runs = found = 0
    for _ in range(4000):
        lines = tuple(rng.choice(words) for _ in range(rng.randrange(0, 9)))
        i = rng.randrange(len(lines) + 1)
        code = history.code_of(lines[i:rng.randrange(i, len(lines) + 1)])
        if code and rng.random() < 0.3:
            at = rng.randrange(len(code))
            code = code[:at] + rng.choice([b"", b",", b")", b"a"]) + code[at + 1:]
        answer = history._code_run_in(code, lines)
        with monkeypatch.context() as patched:
            patched.setattr(history, "_loose", lambda lines: Everything())
            assert history._code_run_in(code, lines) == answer, (code, lines)
        runs += 1
        found += answer
    assert 0 < found < runs


def test_a_blocks_reversal_within_a_commits_blocks_stripped_once_is_what_it_was():
    """history._reversed_within, given a commit's blocks of a path with their sides stripped
    of whitespace once (_Stripped, made once per commit and path for every block of the
    change asked), gives what stripping each side again for each block of the change gave:
    random blocks of git diffs (lines of every kind: `@@`, context, empty, `\\`, CRs,
    tabs) and random reversed blocks of a change. Fails on main: _Stripped is new."""
    import random

    from patchforge import history

    rng = random.Random(33)
    kinds = [b"-", b"+", b" ", b"\\", b"@@", b""]
    parts = [b"a", b"b", b" ", b"\t", b"\r", b"-", b"+", b"\\", b"'", b"x()"]

    def blocks_of(count: int) -> tuple:
        text = b"\n".join([b"@@ -1 +1 @@"] + [
            rng.choice(kinds) + b"".join(rng.choice(parts) for _ in range(rng.randrange(0, 4)))
            for _ in range(count)])
        return history.blocks_of_git_diff(b"diff --git a/f b/f\n--- a/f\n+++ b/f\n" + text)

    said = asked = 0
    for _ in range(20000):
        theirs = blocks_of(rng.randrange(0, 14))
        if not theirs:
            continue
        stripped = history._Stripped(theirs)
        for gone, back in blocks_of(rng.randrange(1, 5)):
            before = any((not gone or history._run_in(gone, removed))
                         and (not back or history._run_in(back, added))
                         for removed, added in theirs)
            assert history._reversed_within((history._bare(gone), history._bare(back)),
                                            stripped) == before, (gone, back, theirs)
            said += before
            asked += 1
    assert 100 < said < asked


def test_a_bodys_blocks_are_what_a_call_per_line_makes():
    """blocks_of_lines (and spaced_blocks_of_lines) strip a block's sides with one translate
    each (history._bare) and look for a quote in each side joined: the blocks are the ones
    made by stripping each line alone and looking at each line (the whitespace-only block kept
    whole, strings' whitespace kept where a line has a quote). Random bodies of context, `-`,
    `+`, `@@` and `\\` lines, with whitespace, CRs, quotes and triple quotes."""
    import random

    from patchforge.history import (WHITESPACE, _line_code, blocks_of_lines,
                                    spaced_blocks_of_lines)

    def reference(lines):
        kinds = [b"-", b"+"]
        blocks, sides = [], ([], [])
        for line in list(lines) + [b"@@"]:
            if line[:1] in kinds:
                sides[kinds.index(line[:1])].append(line[1:-1] if line.endswith(b"\n")
                                                   else line[1:])
            elif line[:1] != b"\\" and (sides[0] or sides[1]):
                bare = [tuple(each.translate(None, WHITESPACE) for each in side)
                        for side in sides]
                if bare[0] == bare[1]:
                    blocks.append(tuple(tuple(side) for side in sides))
                else:
                    blocks.append(tuple(
                        tuple(_line_code(each) if b'"' in plain or b"'" in plain else plain
                              for each, plain in zip(side, plain_side))
                        if any(b'"' in plain or b"'" in plain for plain in plain_side)
                        else plain_side for side, plain_side in zip(sides, bare)))
                sides[0].clear()
                sides[1].clear()
        return tuple(blocks)

    rng = random.Random(2026)
    words = [b" ", b"\t", b"\r", b"x", b"(", b")", b"'", b'"', b"'''", b"a b", b"  c", b""]
    starts = [b" ", b"-", b"+", b"-", b"+", b"@@ -1 +1 @@", b"\\ No newline at end of file"]
    for _ in range(5000):
        lines = [rng.choice(starts) + b"".join(rng.choice(words)
                                               for _ in range(rng.randrange(0, 5)))
                 + (b"\n" if rng.random() < 0.5 else b"") for _ in range(rng.randrange(0, 9))]
        assert blocks_of_lines(lines) == reference(lines), lines
        if not any(b"'''" in line or b'"""' in line for line in lines):
            # (no string over lines: the spaced blocks are the same blocks)
            assert spaced_blocks_of_lines(lines) == reference(lines), lines


def test_a_files_share_of_moved_lines_is_the_sum_of_those_it_holds():
    """The moved-code check asks each file of a commit (a release's 1,246 at 300 patches)
    whether it holds lines of a moved block that make up MOVED_SHARE of it
    (HistoryIndex._adding_most_of): the search stops once the answer is known, and the answer
    is the sum's, on random lines and texts (lines that overlap, repeat, or are absent)."""
    import random

    from patchforge.judge import _holds_share

    rng = random.Random(7)
    for _ in range(3000):
        words = [bytes(rng.choice(b"abcd") for _ in range(rng.randint(1, 5)))
                 for _ in range(rng.randint(1, 6))]
        lines = sorted(((len(word) * rng.randint(1, 3), word) for word in words), reverse=True)
        text = b"".join(rng.choice(words + [b"x", b"yz"]) for _ in range(rng.randint(0, 8)))
        need = rng.choice([0.5, 1.0, 0.25, 0.75]) * sum(size for size, _ in lines)
        assert _holds_share(lines, text, need) == \
            (sum(size for size, line in lines if line in text) >= need)


def _kept_release(texts: dict[str, bytes]):
    """`texts` written as the cache keeps a release's loose code (_keep_loose) and read back
    (_kept_loose), the file's bytes counting the searches made in them."""
    from patchforge.judge import _keep_loose, _kept_loose

    class Counted(bytes):
        finds = 0

        def find(self, *args):
            Counted.finds += 1
            return bytes.find(self, *args)

    kept = _kept_loose(Counted(b"".join(_keep_loose(texts))))
    assert list(kept) == list(texts) and {p: bytes(t) for p, t in kept.items()} == texts
    return kept, Counted


def test_a_releases_kept_texts_are_searched_once_for_each_part_asked_of_them_all():
    """The moved-code checks ask each new file of a release (1,246 at 300 patches) whether it
    holds a block (HistoryIndex._files_with_code) or a share of a block's lines
    (_adding_most_of). Kept in the cache, the texts are one file's bytes: a part is searched
    for in the file once, plus once more per text that holds it, not once per text; the
    answers are those of each text asked alone, in order, on random texts and parts (parts
    that run across two texts' boundary, at a text's very end, empty texts and parts)."""
    import random

    from patchforge.judge import _holds_share, _texts_holding, _texts_sharing

    rng = random.Random(19)
    files = {f"pkg/m{k:04d}.py": b"defg%d(x):returnx+%d" % (k, k) for k in range(1200)}
    kept, counted = _kept_release(files)
    counted.finds = 0
    assert _texts_holding(kept, b"defg1117(x):") == ["pkg/m1117.py"]
    assert counted.finds <= 2, counted.finds
    counted.finds = 0
    lines = [(12, b"returnx+1117"), (8, b"defg1117"), (3, b"x+7")]
    assert _texts_sharing(kept, lines, 10) == ["pkg/m1117.py"]
    assert counted.finds < 40, counted.finds
    for _ in range(400):
        alphabet = rng.choice([b"ab", b"abc", b"a\n"])
        texts = {f"f{k}": bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
                 for k in range(rng.randrange(1, 9))}
        kept, _ = _kept_release(texts)
        words = [bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 5)))
                 for _ in range(rng.randint(1, 5))]
        # Slices of the kept file's bytes: parts across a text's end and the next entry line.
        body = bytes(kept.data)
        cuts = [body[at:at + rng.randrange(1, 6)]
                for at in (rng.randrange(len(body)) for _ in range(6))]
        for part in words + cuts + [b"1 f", b"f1\n", b"\n"]:
            assert _texts_holding(kept, part) == \
                [path for path, text in texts.items() if part in text], (texts, part)
        lines = sorted(((len(word) * rng.randint(1, 3), word) for word in words), reverse=True)
        need = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0]) * sum(size for size, _ in lines)
        assert _texts_sharing(kept, lines, need) == \
            [path for path, text in texts.items() if _holds_share(lines, text, need)], \
            (texts, lines, need)


def test_a_history_asked_of_many_changes_answers_as_asked_of_each_alone():
    """HistoryIndex asks judge_history of each patch over the same commits: the commits'
    blocks without whitespace are kept between the questions (`kept`), and a change's spaced
    blocks are made only when a commit makes the change (`spaced` a function). Random changes
    over random commits (the change made, undone, re-indented, partly undone, something else
    changed): the same landing as each question asked alone with the spaced blocks made first,
    and the spaced blocks asked of no change that no commit makes. (Fifty rounds: a commit
    that only re-indents the file moves the fix's old lines, undoing nothing, and thirty held
    too few undoings to ask about.)"""
    import random

    from patchforge.history import _contains, spaced_blocks_of_lines
    from patchforge.store.diff import FileChange, make_diffs

    rng = random.Random(41)
    made = undone = 0
    words = [b"value = compute(x)", b"  return self.model", b"\tif ready:", b"items[0] += 1",
             b'text = """a  b', b'c  d"""', b"call(a, b)", b"", b"pass"]

    def lines(n):
        return [rng.choice(words) + b" %d" % rng.randrange(4) for _ in range(n)]

    def edit(content):
        out = list(content)
        for _ in range(rng.randrange(1, 4)):
            at = rng.randrange(len(out) + 1)
            if out and rng.random() < 0.5:
                out[min(at, len(out) - 1)] = rng.choice(words) + b" changed"
            else:
                out[at:at] = lines(rng.randrange(1, 3))
        return out

    def text(content):
        return b"\n".join(content) + b"\n" if content else b""

    for _ in range(50):
        base = lines(rng.randrange(8, 20))
        versions = [base]
        for _ in range(rng.randrange(2, 6)):
            versions.append(edit(versions[-1]) if rng.random() < 0.6 else
                            rng.choice(versions) if rng.random() < 0.5 else
                            [line.replace(b" ", b"  ") for line in versions[-1]])
        changes = [edit(base) for _ in range(4)] + [versions[1]]
        diffs = make_diffs([[FileChange("m.py", "m.py", text(a), text(b))]
                            for a, b in zip(versions, versions[1:])] +
                           [[FileChange("m.py", "m.py", text(base), text(c))] for c in changes])
        commits = [(f"c{k}", {"m.py": blocks_of_git_diff(diff)})
                   for k, diff in enumerate(diffs[:len(versions) - 1]) if diff]
        spaced = {f"c{k}": {"m.py": blocks_of_git_diff(diff, spaced=True)}
                  for k, diff in enumerate(diffs[:len(versions) - 1]) if diff}
        kept: dict = {}
        for diff in diffs[len(versions) - 1:]:
            if not diff:
                continue
            wanted = {"m.py": blocks_of_git_diff(diff)}
            mine = {"m.py": spaced_blocks_of_lines(
                (b"@@" + diff.split(b"\n@@", 1)[1]).split(b"\n"))}
            alone = judge_history(wanted, commits, spaced=(mine, spaced.__getitem__))
            asked = []
            again = judge_history(wanted, commits,
                                  spaced=(lambda: asked.append(1) or mine, spaced.__getitem__),
                                  kept=kept)
            assert again == alone, diff
            made += any(what == "made" for _, what, _ in again.events)
            undone += again.last_undo is not None
            if not any(_contains(changed["m.py"], wanted["m.py"]) for _, changed in commits):
                assert not asked, diff
    assert made >= 20 and undone >= 5, (made, undone)


def test_a_blocks_size_reached_is_told_as_the_whole_count_tells_it():
    """history._size_reaches counts the blocks' code without whitespace only up to the bound
    asked (patch_blocks' MIN_CHANGED_CHARS, each block's MIN_UNDO_CHARS): random blocks of
    lines with every kind of whitespace, empty sides and bounds from 0 up, the answer of the
    whole count compared with the bound."""
    import random

    from patchforge.history import WHITESPACE, _size_reaches

    rng = random.Random(23)
    parts = [b" ", b"\t", b"\r", b"\x0b", b"\x0c", b"x", b"ab", b"(", b"'q'", b""]

    def side():
        return tuple(b"".join(rng.choice(parts) for _ in range(rng.randrange(0, 5)))
                     for _ in range(rng.randrange(0, 4)))

    for _ in range(5000):
        blocks = tuple((side(), side()) for _ in range(rng.randrange(0, 4)))
        size = sum(len(line.translate(None, WHITESPACE))
                   for removed, added in blocks for line in (*removed, *added))
        for least in (0, 1, rng.randrange(0, 12), 8, 24):
            assert _size_reaches(blocks, least) == (size >= least), (blocks, least)
