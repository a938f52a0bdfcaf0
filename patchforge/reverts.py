"""A recorded landing that upstream took back, told from the upstream's history.

A fix that landed upstream leaves the series for `series/<upstream>/upstreamed/`, and the
rebase that moved it there records the commit that landed it: `Applied-Upstream: <label>,
commit <id>` in the file, and the `dropped` event of `series/history.jsonl` (`landed_in`).
When upstream later reverts that commit, the fix is needed again while nothing deploys it.

The target's files alone cannot tell a revert from an ordinary change (upstream rewrote the
code around one of the fix's hunks, moved a file the fix created, fixed the bug another way),
so only the history decides, and only for a fix whose landing is recorded. A commit of the
range a command newly looks at (a rebase's old pin..new target, `status --against`'s
pin..target) undoes the landing commit L when
- its message says `This reverts commit <id>` (as `git revert` writes it) naming L, and it
  changes one of the fix's files; or
- its change to the fix's files is the exact reverse of L's change to them: every file L
  changed among them changed back, both blob ids swapped, or every block of removed and added
  lines reversed (whitespace aside, history.blocks_of_git_diff). A file L created that the
  commit removes while git sees it moved elsewhere in the same commit (a rename) is a move,
  not a revert.
A later commit that reverts the revert (its message names it) or makes L's change again
lands the fix again. Nothing else counts.

What a rebase finds is recorded in the history (`reverted`, `relanded` events), so that
`status` and `lint` at the new pin say it without reading the history again. Cost: per
upstream and range, one `git log --raw` limited to the recorded fixes' files (no file
content), and one `git diff-tree -p` for the few commits that change every file a landing
changed (blobs read only there).
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


@record
class Landing:
    """A fix kept under upstreamed/ with the commit that landed it (`commit`), and what the
    history recorded since: the commit that reverted it last, while that is its last word."""

    upstream: str
    name: str  # its file name under upstreamed/
    path: str  # the file, from the project root
    commit: str
    paths: list[str] = field(default_factory=list)  # the fix's files
    reverted_by: str | None = None
    how: str = ""


@record
class Change:
    """What a range did to one recorded landing: `reverted_by` (None: landed again) and why."""

    landing: Landing
    reverted_by: str | None
    how: str


def recorded_landings(project: Project, upstream: str) -> list[Landing]:
    """The fixes under `series/<upstream>/upstreamed/` whose landing commit is recorded, with
    the revert the history recorded since (the latest `reverted` or `relanded` event). A fix
    moved there by hand (no commit named) has none: nothing to undo."""
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
        found = _LANDED_COMMIT.search(patch.get("Applied-Upstream") or "")
        commit = found[1] if found else None
        if commit is None and event.get("event") in ("dropped", "reverted", "relanded"):
            landed = event.get("landed_in")
            commit = landed if isinstance(landed, str) and len(landed) == 40 else None
        if commit is None or not patch.file_patches:
            continue
        reverted = event.get("reverted_by") if event.get("event") == "reverted" else None
        out.append(Landing(upstream, path.name, path.relative_to(project.root).as_posix(),
                           commit, sorted(patch.paths),
                           reverted if isinstance(reverted, str) else None,
                           str(event.get("detail") or "") if reverted else ""))
    return out


def recorded_reverts(project: Project) -> list[Landing]:
    """The fixes under upstreamed/ that the history says upstream reverted (and did not land
    again): needed, and not deployed."""
    return [landing for upstream in project.upstream_names()
            for landing in recorded_landings(project, upstream) if landing.reverted_by]


def find_changes(store: UpstreamStore, landings: list[Landing], old: str,
                 new: str) -> list[Change]:
    """What the commits of old..new did to each landing: a Change for each whose state the
    range changes (reverted, or landed again after a recorded revert), oldest event last
    winning. [] when there is no history between the two (an import of a wheel)."""
    landings = [one for one in landings if store.has_object(one.commit)]
    if old == new or not landings or not store.is_ancestor(old, new):
        return []
    paths = sorted({p for one in landings for p in one.paths})
    log = _log(store, old, new, paths)
    if not log:
        return []
    landed = _raw_changes(store, [one.commit for one in landings], paths)
    # Only a commit that changes every file a landing changed (among the fix's) can reverse
    # it or make it again; of those, one whose blob ids already answer needs no diff, and a
    # file the landing created or deleted is answered by its blob ids alone. The diffs of the
    # rest, and of their landings, limited to those files, are read in one process.
    wanted: set[str] = set()
    wanted_paths: set[str] = set()
    for one in landings:
        mine = landed.get(one.commit, {})
        edited = {p for p in set(mine).intersection(one.paths)
                  if _NULL not in mine[p]}
        files = set(mine).intersection(one.paths)
        if not edited:
            continue
        found = [c for c, _, changes in log if files <= set(changes)
                 and not all(changes[p] in (mine[p], mine[p][::-1]) for p in files)]
        if found:
            wanted.update(found)
            wanted.add(one.commit)
            wanted_paths.update(edited)
    blocks = _blocks(store, sorted(wanted), sorted(wanted_paths)) if wanted else {}
    out = []
    for one in landings:
        change = _judge(store, one, landed.get(one.commit, {}), log, blocks)
        if change is not None:
            out.append(change)
    return out


def _judge(store: UpstreamStore, one: Landing, landed: dict, log: list, blocks: dict
           ) -> Change | None:
    from patchforge.history import reverse

    files = sorted(set(landed).intersection(one.paths))
    if not files:
        return None  # the recorded commit did not change the fix's files: nothing to undo
    made = {p: landed[p] for p in files}
    made_blocks = {p: blocks.get(one.commit, {}).get(p) for p in files}
    undo_blocks = {p: reverse(b) if b else None for p, b in made_blocks.items()}

    def same(commit: str, changes: dict, want: dict, want_blocks: dict) -> bool:
        """Whether `commit` makes, on every file of the landing, the change `want` (blob ids)
        or `want_blocks` (its blocks)."""
        return all(p in changes and (changes[p] == want[p] or (
            want_blocks[p] and blocks.get(commit, {}).get(p) == want_blocks[p])) for p in files)

    lands = [one.commit]  # the commits whose revert undoes the fix
    reverted_by, how = one.reverted_by, one.how
    start = reverted_by
    for commit, reverts, changes in log:
        if not set(changes).intersection(one.paths):
            continue
        named = [c for c in reverts if len(c) >= 7]
        if reverted_by is None:
            undone = next((land for land in lands for c in named if land.startswith(c)), None)
            if undone is not None:
                reverted_by, how = commit, f"its message reverts {undone[:12]}"
            elif same(commit, changes, {p: made[p][::-1] for p in files}, undo_blocks) \
                    and not _moved(store, commit, changes, made) \
                    and store.is_ancestor(one.commit, commit):
                reverted_by = commit
                how = f"it reverses the change {one.commit[:12]} made to {', '.join(files)}"
        elif any(reverted_by.startswith(c) for c in named) or \
                same(commit, changes, made, made_blocks):
            lands.append(commit)
            reverted_by, how = None, f"{commit[:12]} makes the change again"
    if reverted_by == start:
        return None
    return Change(one, reverted_by, how)


def _moved(store: UpstreamStore, commit: str, changes: dict, made: dict) -> bool:
    """Whether `commit` removes a file the landing created only to put it elsewhere (git's
    rename detection over the whole commit)."""
    created = [p for p, (old, _) in made.items() if old == _NULL and changes[p][1] == _NULL]
    if not created:
        return False
    try:
        renamed = store.renames(store.resolve(f"{commit}^"), commit, created)
    except PatchforgeError:
        return False
    return bool(renamed)


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
