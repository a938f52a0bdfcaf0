"""A recorded landing that upstream took back: told from the upstream's history, confirmed by
the target's files.

A fix that landed upstream leaves the series for `series/<upstream>/upstreamed/`, and the
rebase that moved it there records the commit that landed it: `Applied-Upstream: <label>,
commit <id>` in the file, and the `dropped` event of `series/history.jsonl` (`landed_in`).
When upstream later reverts that commit, the fix is needed again while nothing deploys it.

A report makes `status` exit 1, which turns every nightly's CI red, so it needs two witnesses
that agree, and one alone says nothing:
- the history: a commit of the range a command newly looks at (a rebase's old pin..new
  target, `status --against`'s pin..target) that undoes the landing commit L. Either its
  message says `This reverts commit <id>` (as `git revert` writes it) naming L, and its change
  takes back some of the fix's own lines (a revert of other lines of a larger L is not one of
  the fix); or its change to the fix's files is the exact reverse of L's change to them (both
  blob ids swapped, or every block of removed and added lines reversed, whitespace aside,
  history.blocks_of_git_diff). Renames are followed: a file of the fix that upstream renamed
  since L is looked for at its new path. A file L created that the commit removes while a file
  it adds holds that file's lines (git's rename, or a move with an edit git's 50% rename
  similarity misses) is a move, not a revert;
- the target's files: the fix's own change is absent there, at each file's current path (some
  block of it whose added lines are gone, or whose removed lines are back; a file it created
  gone, one it deleted back).
A later commit that reverts the revert or makes L's change again lands the fix again; and a
fix recorded reverted whose whole change is in a later target's files again (upstream landed
it again, maybe in another form) is landed again, in whichever commit last changed its files.

What a rebase finds is recorded in the history (`reverted`, `relanded` events), so that
`status` and `lint` at the new pin say it without reading the history again; a `bring-back`
that finds a fix recorded reverted landed again records that landing (`record_landed_again`).
Cost: per upstream and range, one `git log --raw` limited to the recorded fixes' files (no
file content), one `git diff-tree --raw` of their landing commits, and one `git diff-tree -p`
for the few commits that could undo a landing; the target's files, a renamed file's new path
and a removed file's successors are read only for a fix the history says was undone.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from patchforge.errors import PatchforgeError
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

_LANDED_COMMIT = re.compile(r"\bcommit ([0-9a-f]{40})\b")
_REVERTS = re.compile(rb"^    This reverts commit ([0-9a-f]{7,40})", re.M)
_NULL = "0" * 40
# A file the fix created lives on in a file the removing commit adds when at least this share
# of its distinct lines (whitespace removed, shorter than _MIN_LINE left out) are there.
_LIVES_ON_SHARE = 1 / 3
_MIN_LINE = 4
# At most this many files added by a commit removing a created file are read to tell a move.
_MAX_SUCCESSORS = 200


@record
class FileChange:
    """The fix's own change to one file: created, deleted, or its change blocks
    (history.Blocks, whitespace removed)."""

    path: str
    created: bool = False
    deleted: bool = False
    blocks: tuple = ()


@record
class Landing:
    """A fix kept under upstreamed/ with the commit that landed it (`commit`), and what the
    history recorded since: the commit that reverted it last, while that is its last word.
    `files`: the fix's own change (from its patch); empty, the landing commit's change to
    `paths` stands for it."""

    upstream: str
    name: str  # its file name under upstreamed/
    path: str  # the file, from the project root
    commit: str
    paths: list[str] = field(default_factory=list)  # the fix's files
    reverted_by: str | None = None
    how: str = ""
    files: list[FileChange] = field(default_factory=list)


@record
class Change:
    """What a range did to one recorded landing: `reverted_by` (None: landed again, in
    `landed_in`) and why."""

    landing: Landing
    reverted_by: str | None
    how: str
    landed_in: str | None = None


def fix_changes(patch) -> list[FileChange]:
    """The fix's own change, file by file, from its patch file (a file it renames is left out:
    its blocks are not the file's lines at either path)."""
    from patchforge.history import binary_block, blocks_of_file_patch

    out = []
    for fp in patch.file_patches:
        if fp.old_path is not None and fp.new_path is not None and fp.old_path != fp.new_path:
            continue
        blocks = binary_block(fp.binary.old_oid, fp.binary.new_oid) \
            if fp.binary is not None else blocks_of_file_patch(fp)
        out.append(FileChange(fp.path, fp.is_new, fp.is_delete, blocks))
    return out


def recorded_landings(project: Project, upstream: str) -> list[Landing]:
    """The fixes under `series/<upstream>/upstreamed/` whose landing commit is recorded, with
    the revert the history recorded since (the latest `reverted` or `relanded` event). A fix
    moved there by hand (no commit named) has none: nothing to undo. A fix landed again after
    a revert has its new landing (the `relanded` event's commit)."""
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.ledger import read_history
    from patchforge.project import read_no_link

    directory = project.series_dir(upstream) / "upstreamed"
    if directory.is_symlink() or not directory.is_dir():
        return []
    try:
        history = read_history(project)
    except PatchforgeError:
        history = []  # lint and status report a broken history line themselves
    latest: dict[str, dict] = {}
    for event in history:
        if event.get("upstream") == upstream and isinstance(event.get("patch"), str):
            latest[event["patch"]] = event
    out = []
    for path in sorted(directory.glob("*.patch")):
        try:
            patch = parse_patch_file(read_no_link(path), str(path))
        except (PatchforgeError, OSError):
            continue  # lint names a file that does not parse
        event = latest.get(path.name) or {}
        landed = event.get("landed_in")
        landed = landed if isinstance(landed, str) and len(landed) == 40 else None
        found = _LANDED_COMMIT.search(patch.get("Applied-Upstream") or "")
        commit = landed if event.get("event") == "relanded" and landed else \
            found[1] if found else None
        if commit is None and event.get("event") in ("dropped", "reverted"):
            commit = landed
        if commit is None or not patch.file_patches:
            continue
        reverted = event.get("reverted_by") if event.get("event") == "reverted" else None
        out.append(Landing(upstream, path.name, path.relative_to(project.root).as_posix(),
                           commit, sorted(patch.paths),
                           reverted if isinstance(reverted, str) else None,
                           str(event.get("detail") or "") if reverted else "",
                           fix_changes(patch)))
    return out


def recorded_reverts(project: Project) -> list[Landing]:
    """The fixes under upstreamed/ that the history says upstream reverted (and did not land
    again): needed, and not deployed."""
    return [landing for upstream in project.upstream_names()
            for landing in recorded_landings(project, upstream) if landing.reverted_by]


def find_changes(store: UpstreamStore, landings: list[Landing], old: str,
                 new: str) -> list[Change]:
    """What the commits of old..new did to each landing: a Change for each whose state the
    range changes (reverted, or landed again after a recorded revert), the history and the
    files of `new` agreeing. [] when there is no history between the two (an import of a
    wheel)."""
    landings = [one for one in landings if store.has_object(one.commit)]
    if old == new or not landings or not store.is_ancestor(old, new):
        return []
    moves = _renamed(store, landings, new)
    paths = sorted({p for one in landings for p in one.paths}
                   | {q for moved in moves.values() for q in moved.values()})
    log = _log(store, old, new, paths)
    if not log:
        return []
    landed = _raw_changes(store, [one.commit for one in landings], paths)
    # Only a commit that changes every file a landing changed (among the fix's, at their
    # paths then) can reverse it or make it again; of those, one whose blob ids already
    # answer needs no diff, and a file the landing created or deleted is answered by its blob
    # ids alone. A commit whose message names a revert needs its diff too (does it take back
    # the fix's own lines?). The diffs of all of them, and of their landings, limited to
    # those files, are read in one process.
    wanted: set[str] = set()
    wanted_paths: set[str] = set()
    named = {commit for commit, reverts, _ in log if reverts}
    for one in landings:
        mine = landed.get(one.commit, {})
        aliases = moves[one.name]
        files = set(mine).intersection(one.paths)
        every = set(one.paths) | set(aliases.values())
        edited = {p for p in files if _NULL not in mine[p]}
        found = []
        for commit, _, changes in log:
            theirs = {p: changes[q] for p in files if (q := _at(changes, p, aliases))}
            if edited and len(theirs) == len(files) and not all(
                    theirs[p] in (mine[p], mine[p][::-1]) for p in files):
                found.append(commit)
        found += [c for c, reverts, changes in log if c in named and any(
            len(r) >= 7 and one.commit.startswith(r) for r in reverts)
            and every.intersection(changes)]
        if found:
            wanted.update(found)
            wanted.add(one.commit)
            wanted_paths.update(every)
    try:
        blocks = _blocks(store, sorted(wanted), sorted(wanted_paths)) if wanted else {}
    except PatchforgeError:
        # The diffs need file contents a partial store may have to fetch (`--offline`, the
        # network down): the command goes on; what the blob ids alone answer is still said
        # when the target's files can be read to confirm it.
        blocks = {}
    out = []
    for one in landings:
        try:
            change = _judge(store, one, landed.get(one.commit, {}), log, blocks,
                            moves[one.name], new)
        except PatchforgeError:
            change = None  # the files to confirm it cannot be read: one witness says nothing
        if change is not None:
            out.append(change)
    return out


def _at(changes: dict, path: str, aliases: dict[str, str]) -> str | None:
    """Where a commit's `changes` touch the fix's file `path`: there, or at its path after
    upstream renamed it; None when it does not touch it."""
    if path in changes:
        return path
    moved = aliases.get(path)
    return moved if moved in changes else None


def _judge(store: UpstreamStore, one: Landing, landed: dict, log: list, blocks: dict,
           aliases: dict[str, str], new: str) -> Change | None:
    from patchforge.history import reverse

    files = sorted(set(landed).intersection(one.paths))
    if not files:
        return None  # the recorded commit did not change the fix's files: nothing to undo
    every = set(one.paths) | set(aliases.values())
    made = {p: landed[p] for p in files}
    made_blocks = {p: blocks.get(one.commit, {}).get(p) for p in files}
    undo_blocks = {p: reverse(b) if b else None for p, b in made_blocks.items()}
    fix: list[FileChange] | None = None

    def own() -> list[FileChange]:
        nonlocal fix
        if fix is None:
            fix = one.files or _commit_change(store, one.commit, files, landed)
        return fix

    def same(commit: str, changes: dict, want: dict, want_blocks: dict) -> bool:
        """Whether `commit` makes, on every file of the landing (at its path then), the
        change `want` (blob ids) or `want_blocks` (its blocks)."""
        for p in files:
            q = _at(changes, p, aliases)
            if q is None or not (changes[q] == want[p] or (
                    want_blocks[p] and blocks.get(commit, {}).get(q) == want_blocks[p])):
                return False
        return True

    lands = [one.commit]  # the commits whose revert undoes the fix
    reverted_by, how = one.reverted_by, one.how
    start = reverted_by
    for commit, reverts, changes in log:
        if not every.intersection(changes):
            continue
        named = [c for c in reverts if len(c) >= 7]
        if reverted_by is None:
            undone = next((land for land in lands for c in named if land.startswith(c)), None)
            if undone is not None and _takes_back(own(), blocks.get(commit, {}), aliases) \
                    and not _moved(store, commit, changes, own(), aliases):
                reverted_by, how = commit, f"its message reverts {undone[:12]}"
            elif same(commit, changes, {p: made[p][::-1] for p in files}, undo_blocks) \
                    and not _moved(store, commit, changes, own(), aliases) \
                    and store.is_ancestor(one.commit, commit):
                reverted_by = commit
                how = f"it reverses the change {one.commit[:12]} made to {', '.join(files)}"
        elif any(reverted_by.startswith(c) for c in named) or \
                same(commit, changes, made, made_blocks):
            lands.append(commit)
            reverted_by, how = None, f"{commit[:12]} makes the change again"
    if start is None:
        # A revert the history shows counts only when the fix's change is gone from `new`.
        if reverted_by is None or not _absent_present(store, own(), aliases, new)[0]:
            return None
        return Change(one, reverted_by, how)
    # Recorded reverted: its whole change in `new`'s files again is a landing, whatever form
    # it came back in (the way back, skipped/ and bring-back, would keep it under upstreamed/).
    if _absent_present(store, own(), aliases, new)[1]:
        if len(lands) == 1:
            last = [c for c, _, changes in log if every.intersection(changes)]
            lands.append(last[-1] if last else new)
            how = f"its change is upstream again, last made by {lands[-1][:12]}"
        return Change(one, None, how, lands[-1])
    if reverted_by is not None and reverted_by != start:
        return Change(one, reverted_by, how)
    return None


def _renamed(store: UpstreamStore, landings: list[Landing], new: str
             ) -> dict[str, dict[str, str]]:
    """{landing name: {path: its path at `new`}} of the fixes' files upstream renamed since
    their landing. Only a file gone at `new` is looked for (its tree, no git process when
    none is); then one `git log` of the commits deleting such files since the landings'
    common ancestor, and git's rename detection on the last commit that deleted each after
    its landing (one commit's change, not two distant trees')."""
    moves: dict[str, dict[str, str]] = {one.name: {} for one in landings}
    there = store.entries(new, sorted({p for one in landings for p in one.paths}))
    gone = [one for one in landings if any(there[p] is None for p in one.paths)]
    if not gone:
        return moves
    paths = sorted({p for one in gone for p in one.paths if there[p] is None})
    try:
        since = store.merge_base_all([one.commit for one in gone])
        text = store.deletions(new, since, paths) if since else b""
    except PatchforgeError:
        return moves
    names = _names(paths)
    deleted = [(part[:40].decode(), set(_raw_lines(part, names)))
               for part in (b"\n" + text).split(b"\ncommit ")[1:]]
    for one in gone:
        for path in one.paths:
            if there[path] is not None:
                continue
            commit = next((c for c, where in deleted if path in where and (
                one.commit == since or store.is_ancestor(one.commit, c))), None)
            if commit is None:
                continue
            try:
                found = store.renames(store.resolve(f"{commit}^"), commit, [path])
            except PatchforgeError:
                continue
            if path in found:
                moves[one.name][path] = found[path]
    return moves


def _stripped(content: bytes) -> list[bytes]:
    """A file's lines as change blocks hold them (whitespace removed), blank ones left out."""
    from patchforge.history import WHITESPACE

    return [line for line in content.translate(None, WHITESPACE.replace(b"\n", b""))
            .split(b"\n") if line]


def _has_run(text: bytes, lines: list[bytes]) -> bool:
    """Whether `lines` follow one another in `text` (`_stripped` lines joined by newlines,
    with one before and after)."""
    return b"\n" + b"\n".join(lines) + b"\n" in text


def _absent_present(store: UpstreamStore, fix: list[FileChange], aliases: dict[str, str],
                    new: str) -> tuple[bool, bool]:
    """(absent, present): whether `new`'s files, at each file's current path, lack some of
    the fix's change (a block whose added lines are gone, or whose removed lines are back
    where it added none; a file it created gone; one it deleted back), and whether they hold
    all of it. A block of too little code (MIN_UNDO_CHARS) proves neither; a file it edited
    that is gone entirely is neither."""
    from patchforge.history import MIN_UNDO_CHARS

    where = {f.path: aliases.get(f.path, f.path) for f in fix}
    contents = store.read_blobs(new, sorted(set(where.values())))
    absent, present, judged = False, True, False
    for f in fix:
        content = contents.get(where[f.path])
        if f.created or f.deleted:
            judged = True
            if (content is None) == f.created:
                absent, present = True, False
            continue
        if content is None:
            present = False
            continue
        if any(line.startswith(b"blob:") for _, added in f.blocks for line in added):
            # A binary file's change is its blob ids (history.binary_block).
            ((old_id,), (new_id,)), = f.blocks
            blob = (store.entry(new, where[f.path]) or ("", ""))[1].encode()
            judged = True
            if not blob.startswith(new_id[5:]) or not new_id[5:]:
                present = False
                absent = absent or (bool(old_id[5:]) and blob.startswith(old_id[5:]))
            continue
        text = b"\n" + b"\n".join(_stripped(content)) + b"\n"
        for removed, added in f.blocks:
            removed = [line for line in removed if line]
            added = [line for line in added if line]
            if sum(len(line) for line in (*removed, *added)) < MIN_UNDO_CHARS:
                continue
            judged = True
            if (added and not _has_run(text, added)) or \
                    (not added and _has_run(text, removed)):
                absent, present = True, False
    return absent and judged, present and judged


def _takes_back(fix: list[FileChange], theirs: dict, aliases: dict[str, str]) -> bool:
    """Whether a commit's change (`theirs`: its blocks per path) takes back some of the fix's
    own lines: removes a line the fix added, or adds back one it removed (a revert named by
    its message that restores only other lines of a larger landing commit does not)."""
    for f in fix:
        blocks = theirs.get(f.path) or theirs.get(aliases.get(f.path, f.path)) or ()
        gone = {line for removed, _ in blocks for line in removed if len(line) >= _MIN_LINE}
        back = {line for _, added in blocks for line in added if len(line) >= _MIN_LINE}
        if any(line in gone for _, added in f.blocks for line in added) or \
                any(line in back for removed, _ in f.blocks for line in removed):
            return True
    return False


def _moved(store: UpstreamStore, commit: str, changes: dict, fix: list[FileChange],
           aliases: dict[str, str]) -> bool:
    """Whether `commit` removes a file the fix created only to put it elsewhere: git sees a
    rename, or a file the commit adds holds _LIVES_ON_SHARE of its lines (a move with an
    edit git's 50% rename similarity misses)."""
    removed = {}
    for f in fix:
        q = _at(changes, f.path, aliases)
        if f.created and q is not None and changes[q][1] == _NULL:
            removed[q] = changes[q][0]
    if not removed:
        return False
    # A file the fix deleted coming back is the fix taken back, not a move (a landing that
    # moved a file, reverted: the file moves back).
    back = {aliases.get(f.path, f.path) for f in fix if f.deleted} | {f.path for f in fix
                                                                     if f.deleted}
    parent = store.resolve(f"{commit}^")
    if set(store.renames(parent, commit, sorted(removed)).values()) - back:
        return True
    added = [p for p in store.added_files(commit) if p not in back][:_MAX_SUCCESSORS]
    if not added:
        return False
    before = store.read_blobs(parent, sorted(removed))
    after = store.read_blobs(commit, added)
    for content in before.values():
        lines = {line for line in _stripped(content or b"") if len(line) >= _MIN_LINE}
        if lines and any(len(lines.intersection(_stripped(other or b"")))
                         >= _LIVES_ON_SHARE * len(lines) for other in after.values()):
            return True
    return False


def _commit_change(store: UpstreamStore, commit: str, paths: list[str],
                   landed: dict) -> list[FileChange]:
    """A landing commit's change to `paths`, standing for the fix's own change where the
    fix's patch is not at hand."""
    blocks = _blocks(store, [commit], paths).get(commit, {})
    return [FileChange(p, landed[p][0] == _NULL, landed[p][1] == _NULL, blocks.get(p) or ())
            for p in paths if p in landed]


def record_landed_again(project: Project, store: UpstreamStore, upstream: str, name: str,
                        patch, pin) -> str | None:
    """For `bring-back` of a fix the history last recorded reverted and that it found landed
    at the pin (upstream landed it again, maybe in another form): the commit that last made
    its change (a file it created or deleted, or a change to the fix's files holding all its
    added lines, renames followed), after the recorded revert; None when the history has no
    such commit. The caller records it (Applied-Upstream, a `relanded` event), which ends the
    report: without it the fix went back under upstreamed/ still recorded reverted."""
    from patchforge.ledger import read_history

    events = [e for e in read_history(project)
              if e.get("upstream") == upstream and e.get("patch") == name]
    if not events or events[-1].get("event") != "reverted":
        return None
    since = events[-1].get("reverted_by")
    if not isinstance(since, str) or not store.has_object(since) \
            or not store.is_ancestor(since, pin.commit):
        return None
    fix = fix_changes(patch)
    paths = sorted({f.path for f in fix})
    aliases = _renamed(store, [Landing(upstream, name, "", since, paths)], pin.commit)[name]
    every = sorted(set(paths) | set(aliases.values()))
    commits = store.commits_touching(since, pin.commit, every)
    if not commits:
        return None
    found = _blocks(store, commits, every)
    for commit in reversed(commits):
        theirs = found.get(commit, {})
        if _makes(fix, theirs, aliases):
            return commit
    return commits[-1]


def _makes(fix: list[FileChange], theirs: dict, aliases: dict[str, str]) -> bool:
    """Whether a commit's change (`theirs`: its blocks per path) holds every line the fix adds
    (a file it creates: among the lines the commit adds there)."""
    wanted = [(f, line) for f in fix for _, added in f.blocks for line in added
              if len(line) >= _MIN_LINE]
    if not wanted:
        return False
    for f, line in wanted:
        blocks = theirs.get(f.path) or theirs.get(aliases.get(f.path, f.path)) or ()
        if not any(line in added for _, added in blocks):
            return False
    return True


def _names(paths: list[str]) -> dict[bytes, str]:
    """How git's `--raw` output names each of `paths` (C-quoted where git quotes)."""
    import os

    from patchforge.store.diff import git_output_path

    return {git_output_path(os.fsencode(path)): path for path in paths}


def _raw_lines(text: bytes, names: dict[bytes, str]) -> dict[str, tuple[str, str]]:
    """{path: (old blob, new blob)} of the `:` lines of one commit's `--raw` listing."""
    changes: dict[str, tuple[str, str]] = {}
    for line in text.split(b"\n"):
        if not line.startswith(b":"):
            continue
        meta, _, name = line.partition(b"\t")
        parts = meta.split()
        if len(parts) >= 5 and name in names:
            changes[names[name]] = (parts[2].decode(), parts[3].decode())
    return changes


def _log(store: UpstreamStore, old: str, new: str, paths: list[str]
         ) -> list[tuple[str, list[str], dict[str, tuple[str, str]]]]:
    """(commit, the commit ids its message says it reverts, {path: (old blob, new blob)}) of
    the non-merge commits of old..new that change `paths`, oldest first by ancestry."""
    names = _names(paths)
    found = []
    for part in (b"\n" + store.log_raw(old, new, paths)).split(b"\ncommit ")[1:]:
        commit = part[:40].decode()
        # The message is indented four spaces: no line of it starts with `:`.
        found.append((commit, [m.decode() for m in _REVERTS.findall(part)],
                      _raw_lines(part, names)))
    return found


def _raw_changes(store: UpstreamStore, commits: list[str], paths: list[str]
                 ) -> dict[str, dict[str, tuple[str, str]]]:
    """{commit: {path: (old blob, new blob)}} of each commit against its first parent."""
    names = _names(paths)
    text = b"\n" + store.raw_changes(sorted(set(commits)), paths)
    found: dict[str, dict[str, tuple[str, str]]] = {}
    for part in re.split(rb"\n(?=[0-9a-f]{40}\n)", text)[1:]:
        found[part[:40].decode()] = _raw_lines(part, names)
    return found


def _blocks(store: UpstreamStore, commits: list[str], paths: list[str]) -> dict[str, dict]:
    """{commit: {path: its change blocks}} (history.blocks_of_git_diff) of each commit."""
    from patchforge.history import blocks_of_git_diff
    from patchforge.store.diff import diff_header

    headers = {diff_header(p): p for p in paths}
    text = b"\n" + store.commit_patches(commits, paths)
    found: dict[str, dict] = {}
    mine: dict | None = None
    # Cut at the commit lines and the file headers (`diff --git ...`).
    for piece in re.split(rb"\n(?=[0-9a-f]{40}\n|diff --git )", text)[1:]:
        if piece.startswith(b"diff --git "):
            header = piece.split(b"\n", 1)[0]
            if mine is not None and header in headers:
                mine[headers[header]] = blocks_of_git_diff(piece)
        else:
            mine = found.setdefault(piece[:40].decode(), {})
    return found


def revert_message(item: dict) -> str:
    """What to say of a reverted landing (`as_item`'s dict, a rebase summary's `reverted`
    entry), with the ways on."""
    from pathlib import PurePosixPath

    upstream, name = item["upstream"], item["name"]
    series = PurePosixPath(item["path"]).parent.parent
    return (f"{upstream}/{name} landed upstream in {item['landed_in'][:12]}, and upstream "
            f"commit {item['reverted_by'][:12]} reverted it ({item['detail']}): the fix is not "
            f"deployed; move {item['path']} into {series}/skipped/, then `patchforge "
            f"bring-back {upstream}/{name}` puts it back in the series (or move it into "
            f"{series}/deleted/ if it is not wanted any more)")


def as_item(landing: Landing, reverted_by: str, how: str) -> dict:
    return {"upstream": landing.upstream, "name": landing.name, "path": landing.path,
            "landed_in": landing.commit, "reverted_by": reverted_by, "detail": how}


def reverted_at(project: Project, store: UpstreamStore, targets: dict) -> list[dict]:
    """The fixes under upstreamed/ whose recorded landing is reverted at each target
    (judge.Target): the history's record at the pin, and for a target past the pin the
    commits between the two (`status --against`). as_item's dicts."""
    out = []
    for upstream, target in targets.items():
        landings = recorded_landings(project, upstream)
        if not landings:
            continue
        changes = {}
        if target.commit != target.base_commit:
            changes = {c.landing.name: c for c in find_changes(
                store, landings, target.base_commit, target.commit)}
        for landing in landings:
            change = changes.get(landing.name)
            reverted_by = change.reverted_by if change else landing.reverted_by
            if reverted_by is not None:
                out.append(as_item(landing, reverted_by, change.how if change else landing.how))
    return out
