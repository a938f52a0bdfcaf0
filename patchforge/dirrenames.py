"""Where a file a fix makes goes when upstream moved the directory it is made in: merge-ort's
directory-rename rule, which `git rebase` applies with `merge.directoryRenames=conflict`,
git's default.

A fix that changes `lib/ops/x.py` and adds `lib/ops/helper.py`, replayed onto an upstream that
moved `lib/ops` to `lib/kernels`: the change to x.py follows the file's rename
(store.renames), but the new file, made where it was made, would sit in a directory the target
no longer has, beside none of the code that imports it. git stops there: "CONFLICT (file
location): lib/ops/helper.py added in ... inside a directory that was renamed in HEAD,
suggesting it should perhaps be moved to lib/kernels/helper.py". The judge stops alike
(judge.SeriesJudge._conclude), for `status --against`, `rebase --to` (and its dry run),
`pr --onto` and `bring-back`.

git's rule (Documentation/technical/directory-rename-detection, merge-ort.c,
diffcore-rename.c's update_dir_rename_counts), for a path the fix makes (a new file, a rename's
or copy's destination):
- a directory counts as renamed only when upstream removed it (the base has it, the target
  does not) and where the fix is replayed it is gone too (an earlier fix of the series made
  again there keeps it: nothing is renamed then);
- each of upstream's file renames out of it or out of a directory under it votes for the
  directory it went to, and for each removed parent whose trailing path parts match
  (`a/b/c/x.py -> d/b/c/x.py` votes `a/b/c -> d/b/c` and `a/b -> d/b`, not `a -> d`); the
  directory with the most votes wins, and a tie is git's "CONFLICT (directory rename split)":
  a stop with no place suggested;
- the path's nearest such directory decides (`lib/ops/sub/new.py` -> `lib/kernels/sub/new.py`).
One difference, on the safe side: git looks at a removed directory's parents only where the
fix adds a file directly in the parent, so a file in a subdirectory the fix makes
(`lib/ops/sub/new.py`, no `lib/ops/sub` upstream) is replayed under `lib/ops` without a word;
here it stops as its siblings would.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Callable

from .store.objects import EMPTY_BLOB

TREE_MODE = "040000"


@dataclass(frozen=True)
class DirectoryMove:
    """Upstream's move of `old_dir`: `new_dirs` the directory most of its files went to (one),
    or those that tie for most (a split: no majority, nothing suggested), `moved` how many of
    its files went to each of them."""
    old_dir: str
    new_dirs: tuple[str, ...]
    moved: int

    def suggested(self, path: str) -> str | None:
        """Where `path` (under `old_dir`) would go, as git suggests it; None for a split."""
        if len(self.new_dirs) != 1:
            return None
        rest = path[len(self.old_dir) + 1:]
        return f"{self.new_dirs[0]}/{rest}" if self.new_dirs[0] else rest

    def said(self, path: str, name: str, label: str, source: str | None = None,
             copy: bool = False) -> str:
        """The stop's words, as git says them, with the directories named; `source`: the path
        the fix renames (or, with `copy`, copies) to `path`, None for a new file."""
        suggested = self.suggested(path)
        made = f"{path} added" if source is None else \
            f"{source} {'copied' if copy else 'renamed'} to {path}"
        if suggested is not None:
            return (f"CONFLICT (file location): {made} in {name} inside a directory that "
                    f"was renamed upstream in {label} ({self.old_dir} -> "
                    f"{self.new_dirs[0] or 'the top level'}), "
                    f"suggesting it should perhaps be moved to {suggested}")
        dirs = " and ".join(self.new_dirs)
        return (f"CONFLICT (directory rename split): {made} in {name} inside "
                f"{self.old_dir}, which upstream removed in {label}, moving its files to "
                f"{dirs} alike ({self.moved} each): no place for it is suggested")


def _parents(path: str) -> list[str]:
    """The directories above `path`, nearest first (`a/b/c.py` -> `a/b`, `a`)."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[:i]) for i in range(len(parts), 0, -1)]


def directory_moves(store, base: str, target: str, made: list[str],
                    gone_where_replayed: Callable[[str], bool]) -> dict[str, DirectoryMove]:
    """Each of the paths `made` (files a fix makes) that is inside a directory upstream moved
    from `base` to `target`, with that move (git's rule, module docstring). `store`: the
    upstream store (entries, list_paths, renames); `gone_where_replayed(dir)`: whether the
    directory is gone where the fix is replayed (the target with the series so far)."""
    dirs = sorted({d for path in made for d in _parents(path)})
    if not dirs or base == target:
        return {}
    before = store.entries(base, dirs, directories=True)
    after = store.entries(target, dirs, directories=True)
    removed = {d for d in dirs
               if before[d] is not None and before[d][0] == TREE_MODE
               and (after[d] is None or after[d][0] != TREE_MODE) and gone_where_replayed(d)}
    if not removed:
        return {}
    # Every file upstream had under them (the outermost removed directories hold the rest):
    # the sources of the renames that vote, all gone from the target with their directory,
    # as is every directory under them. Empty files are none: merge-ort never pairs them (an
    # empty __init__.py would "move" to any package's).
    outer = [d for d in sorted(removed) if not any(d.startswith(o + "/") for o in removed)]
    listed = sorted({path for d in outer for path in store.list_paths(base, d)})
    sources = [path for path, entry in store.entries(base, listed).items()
               if entry is not None and entry[1] != EMPTY_BLOB]

    def gone(directory: str) -> bool:
        return any(directory == d or directory.startswith(d + "/") for d in outer)

    votes: dict[str, Counter] = {}
    for old, new in store.renames(base, target, sources).items():
        old_parts, new_parts = old.split("/")[:-1], new.split("/")[:-1]
        while old_parts:
            old_dir = "/".join(old_parts)
            if not gone(old_dir):
                break
            votes.setdefault(old_dir, Counter())["/".join(new_parts)] += 1
            # A parent votes too while the parts taken off both sides are the same name.
            if not new_parts or old_parts[-1] != new_parts[-1]:
                break
            old_parts, new_parts = old_parts[:-1], new_parts[:-1]
    moves: dict[str, DirectoryMove] = {}
    for old_dir, counted in votes.items():
        most = max(counted.values())
        moves[old_dir] = DirectoryMove(old_dir, tuple(sorted(d for d, n in counted.items()
                                                             if n == most)), most)
    found = {}
    for path in made:
        for d in _parents(path):
            if d in moves:
                found[path] = moves[d]
                break
    return found


def suggested_paths(store, base: str, target: str, where: str,
                    paths: list[str]) -> dict[str, str]:
    """Each of `paths` inside a directory upstream moved from `base` to `target` that is gone
    at `where` (a commit: the target with the series so far), with the path git suggests for
    it; a split suggests none."""
    if base == target:
        return {}

    def gone(directory: str) -> bool:
        entry = store.entries(where, [directory], directories=True)[directory]
        return entry is None or entry[0] != TREE_MODE

    found = {}
    for path, move in directory_moves(store, base, target, paths, gone).items():
        suggested = move.suggested(path)
        if suggested is not None:
            found[path] = suggested
    return found
