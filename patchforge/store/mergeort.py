"""The steps of `git rebase`'s rename detection (merge-ort, diffcore-rename.c) that git's diff
does not take, read from the files a range deletes and adds (raw path -> blob id):
UpstreamStore._pairing_of asks git's diff the rest.

- Exact renames (find_exact_renames): each added file, in path order, takes a deleted file of
  its very blob that no other took, one of its own base name first; an empty file never pairs.
- The base-name pass with the directory guess (find_basename_matches, idx_possible_rename):
  where a file the rebase replays (a series file upstream deleted) shares its base name with
  another deleted file or with more than one added file, git's diff leaves it to the
  exhaustive pairing, while merge-ort first guesses where its directory went, when upstream
  removed that directory: the directory most of its files the exact pairing moved went to
  (update_dir_rename_counts counts each such file's own directory), and weighs the added file
  of the same base name there, taken when it is at least as near as the pass asks (75% at
  git's default 50%). ops/ renamed kernels/, ops/x.py reworked there and a near copy added as
  tests/x.py: `git rebase` carries a fix of ops/x.py to kernels/x.py, git's diff pairs
  tests/x.py. A tie between directories (git takes one, as its hash map's order has it) is
  told too: the caller stops there, never guessing which.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from patchforge.store.objects import EMPTY_BLOB


def _base_name(path: bytes) -> bytes:
    return path.rsplit(b"/", 1)[-1]


def _directory(path: bytes) -> bytes:
    return path.rsplit(b"/", 1)[0] if b"/" in path else b""


def exact_renames(deleted: dict[bytes, str], added: dict[bytes, str]) -> dict[bytes, bytes]:
    """git's exact pairing: deleted path -> the added path of the same blob that takes it."""
    by_blob: dict[str, list[bytes]] = {}
    for path in sorted(deleted):
        if deleted[path] != EMPTY_BLOB:
            by_blob.setdefault(deleted[path], []).append(path)
    found: dict[bytes, bytes] = {}
    for path in sorted(added):
        sources = by_blob.get(added[path])
        if not sources:
            continue
        name = _base_name(path)
        pick = next((source for source in sources if _base_name(source) == name), sources[0])
        sources.remove(pick)
        found[pick] = path
    return found


def directory_guesses(directory: bytes, exact: dict[bytes, bytes]) -> list[bytes]:
    """Where merge-ort guesses `directory` went: the directories most of its own files that
    `exact` moved went to (one; several on a tie), none where it moved none."""
    counts = Counter(_directory(new) for old, new in exact.items()
                     if _directory(old) == directory)
    if not counts:
        return []
    most = max(counts.values())
    return sorted(new for new, count in counts.items() if count == most)


def _names_left(deleted: dict[bytes, str], added: dict[bytes, str], exact: dict[bytes, bytes]
                ) -> tuple[Counter[bytes], dict[bytes, set[bytes]]]:
    """The base names of the files the base-name pass weighs (neither empty nor paired
    exactly): how many deleted files have each, and the added files of each."""
    taken = set(exact.values())
    sources = Counter(_base_name(path) for path, blob in deleted.items()
                      if path not in exact and blob != EMPTY_BLOB)
    dests: dict[bytes, set[bytes]] = {}
    for path, blob in added.items():
        if path not in taken and blob != EMPTY_BLOB:
            dests.setdefault(_base_name(path), set()).add(path)
    return sources, dests


def unique_names(relevant: list[bytes], deleted: dict[bytes, str], added: dict[bytes, str],
                 exact: dict[bytes, bytes]) -> dict[bytes, bytes]:
    """The files of `relevant` whose base name is unique among the deleted files and among the
    added ones the base-name pass weighs: path -> the added file of its name, which git (its
    diff and merge-ort alike) pairs it with by the name, when at least as near as the pass
    asks, before weighing any other."""
    sources, dests = _names_left(deleted, added, exact)
    found = {}
    for path in relevant:
        name = _base_name(path)
        if path not in exact and sources[name] == 1 and len(dests.get(name, ())) == 1:
            [found[path]] = dests[name]
    return found


def guessed_by_directory(relevant: list[bytes], deleted: dict[bytes, str],
                         added: dict[bytes, str], exact: dict[bytes, bytes],
                         removed: Callable[[bytes], bool]
                         ) -> dict[bytes, tuple[list[bytes], bool]]:
    """The files of `relevant` (the deleted files the rebase replays) that merge-ort's
    base-name pass weighs by the directory guess: path -> (the added files of its base name
    in the directory, or directories on a tie, its own directory is guessed to have gone to,
    each yet to be weighed: taken when at least as near as the pass asks; whether the guess
    is a tie, where git may as well guess a directory without such a file and leave the file
    to the exhaustive pairing). `removed(directory)`: whether upstream removed the directory.
    A base name unique among the deleted files and among the added ones is git's diff's own
    pass, not here."""
    sources, dests = _names_left(deleted, added, exact)
    found: dict[bytes, tuple[list[bytes], bool]] = {}
    for path in sorted(relevant):
        name = _base_name(path)
        there = dests.get(name)
        if path in exact or deleted.get(path) in (None, EMPTY_BLOB) or not there or \
                (sources[name] == 1 and len(there) == 1):
            continue
        directory = _directory(path)
        if not directory or not removed(directory):
            continue
        guesses = directory_guesses(directory, exact)
        into = [new for new in (guess + b"/" + name if guess else name for guess in guesses)
                if new in there]
        if into:
            found[path] = (into, len(guesses) > 1)
    return found
