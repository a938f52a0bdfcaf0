"""The editing worktree of an upstream, `.patchforge/work/<upstream>`: the files an edit or a
rebase stop is about, and nothing else of the upstream. `edit`/`new`/`refresh`, `add` and a stopped
rebase use it.

A worktree is a small git repository of its own. Its one commit (HEAD) holds the files as they
are before the patch (the series before it, or the new base with the series so far); the working
files carry the patch, or the conflict. So `git diff` and `git status` in it show exactly the
user's change, and `Worktree.changes()` tells refresh and `rebase --continue` which of the
patch's files differ and which files nobody asked for (refused, never folded in). Which files
are the patch's, and which commit is the base, patchforge records itself (`.git/patchforge.json`):
a file the user stages or commits with git in there is still not part of the patch, and a
resolution committed with git is still the resolution. A file the patch does not
touch gets in only when the user asks (`edit NAME --file PATH`, `patchforge add PATH`). Making one
costs what the patch touches: a stop on a vLLM wheel writes a few files, not the 800 MB of the
whole tree. The repository has no link to the store (no alternates, no promisor): it holds its
few blobs itself, and deleting the directory is all it takes to forget it.

`worktree_diff` turns the change back into a diff against the store commit the worktree's files
were taken from (the edit's `base`, or the stop's).
"""
from __future__ import annotations

import json
import os
import posixpath
import re
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator

from patchforge.apply.chains import base_state
from patchforge.apply.diffparse import SYMLINK
from patchforge.apply.series import PatchPart, apply_series, counts_for, profile_set
from patchforge.errors import (ApplyError, InputError, PatchforgeError, UnsafePathError,
                               UsageError)
from patchforge.fsutil import RepoLock, atomic_delete, atomic_write, parse_json
from patchforge.model.record import record
from patchforge.stack import (LEDGER_WRITERS, refuse_creation_collisions,
                              refuse_outside_install_root, refuse_symlinked_paths,
                              require_readable_history)
from patchforge.store.diff import FileChange, find_renames, make_diff, needs_c_quotes
from patchforge.store.git import IMPORT_IDENT, run_git
from patchforge.store.objects import (EMPTY_TREE, commit_bytes, edit_tree, index_bytes,
                                      object_id, write_small_pack)

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# Build products made while testing a fix (python -m py_compile, pytest) are not part of it,
# nor what an editor keeps beside a file it has open (vim's swap files, backups `x~`, Emacs's
# lock and autosave files, macOS's .DS_Store): they were refused by name, so `refresh` failed
# while the editor was open. (A user's own global ignore file is not read: see Worktree._git.)
# A file named so is still taken when `patchforge add` names it.
_EXCLUDE = (b"__pycache__/\n*.pyc\n.pytest_cache/\n"
            b"*.swp\n*.swo\n*~\n.#*\n\\#*#\n.DS_Store\n")
# Under .git/info/attributes, above any .gitattributes in the worktree (an upstream's own, taken
# into an edit with `--file .gitattributes`): the files are bytes, as patchforge reads and writes
# them. With `*.py text eol=crlf` or `ident` there, `git status` compared each file as git would
# commit it (line ends normalized, `$Id: ...$` folded back), so a file whose change was its line
# ends alone (CRLF made LF, or LF made CRLF) or a keyword's text read as unchanged, and `refresh`
# closed the edit with that change left out of the patch. No filter runs here either (the
# worktree's configuration defines none; `-filter` says so whatever it is given).
_ATTRIBUTES = b"* -text -eol -ident -filter -working-tree-encoding\n"
_BASE_MESSAGE = "patchforge: the files before the patch\n"
# Under .git/: {"base": commit, "files": [the patch's paths], "written": {path: sha256 of the
# working file as patchforge wrote it, null when it wrote none}}: what a stop wrote, so that
# an --abort can tell a hand resolution from the stop's own files.
_RECORD = "patchforge.json"
_BRANCH_STATE = ("ORIG_HEAD", "MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "MERGE_RR", "AUTO_MERGE",
                 "CHERRY_PICK_HEAD", "REVERT_HEAD", "SQUASH_MSG")
# The branch a new worktree's HEAD names (`git init`'s default); any other HEAD is moved by git.
_BRANCH = re.compile(rb"(master|main)")


@record(frozen=True)
class Changes:
    """What a worktree holds beyond its base: `changed` tracked paths whose working file (or
    mode) differs from HEAD, or is gone; `untracked` files nobody asked for."""

    changed: tuple[str, ...]
    untracked: tuple[str, ...]  # anything else that changed: never part of the patch


class Worktree:
    """The worktree at `path` (which may not exist yet)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    # ---- making one

    @classmethod
    def create(cls, path: Path, before: dict[str, tuple[str, bytes]],
               after: dict[str, bytes | None], modes: dict[str, str] | None = None,
               bases: dict[str, bytes] | None = None) -> "Worktree":
        """A worktree at `path` holding only these files (whatever else was there is removed):
        HEAD holds `before` (path -> (mode, content), the files as they are before the patch),
        the working files then take `after` (path -> content, None to delete) with `modes`
        (path -> mode). `bases` (path -> content): for a file with conflict markers, what the
        patch was made on (their `|||||||` sections), kept for `made_on()`.

        The repository of a worktree already there is reused (its working files go, its
        objects stay): a rebase that stops many times makes one repository, not one per stop
        (creating and removing one was most of a stop's file system work). HEAD's commit is
        made here (store/objects.py), and one `git reset --hard` sets HEAD, the index and the
        `before` files."""
        for rel in (*before, *after):
            _check_rel(rel)
        work = cls(path)
        # The directories of these files stay (only what is in them goes): removing a directory
        # and making it again costs more than the file in it on some disks, and consecutive
        # stops of a series are mostly in the same directories.
        work._clear({parent for rel in (*before, *after)
                     for parent in _parents(rel)})
        if not (work.path / ".git" / "HEAD").is_file():
            work._git("init", "-q", "--template=")
            info = work.path / ".git" / "info"
            info.mkdir(parents=True, exist_ok=True)
            (info / "exclude").write_bytes(_EXCLUDE)
        work._bytes_as_they_are()
        # HEAD's objects go into one pack: loose objects would make a directory each, and on
        # some disks removing a directory costs milliseconds.
        objects: dict[str, tuple[bytes, bytes]] = {}

        def write(kind: bytes, data: bytes) -> str:
            oid = object_id(kind, data)
            objects[oid] = (kind, data)
            return oid

        blobs = {rel: (mode, write(b"blob", content)) for rel, (mode, content) in before.items()}
        tree = edit_tree(EMPTY_TREE, {os.fsencode(rel): entry for rel, entry in blobs.items()},
                         lambda oid: {}, write)
        raw = commit_bytes(tree, [], IMPORT_IDENT, _BASE_MESSAGE)
        assert raw is not None  # a fixed identity and message git takes as they are
        head = write(b"commit", raw)
        # Files the patch creates are tracked from the start (intent to add, as `git add -N`
        # records them, with the empty blob it writes), so that they are part of the change
        # without anybody asking.
        created = [rel for rel, content in after.items() if content is not None and rel not in before]
        if created:
            write(b"blob", b"")
        base_blobs = {rel: write(b"blob", content) for rel, content in (bases or {}).items()}
        # Stored, not deflated: the pack lives until the next stop or the refresh, and deflating
        # a stop's files (a merge touching a hundred tuning tables) was most of making it.
        write_small_pack(work.path / ".git", objects, level=0)
        files = set(before) | {rel for rel, new in after.items() if new is not None}
        # _clear left no file: the working files are `before`'s (what `git reset --hard` wrote),
        # then the patch's.
        for rel, (mode, content) in before.items():
            if rel not in after:
                work._write(rel, content, mode)
        for rel, new in after.items():
            if new is not None:
                work._write(rel, new, (modes or {}).get(rel) or
                            (before[rel][0] if rel in before else "100644"))
        for rel, mode in (modes or {}).items():
            if rel not in after:
                work._write_mode(rel, mode)
        # HEAD and the index as `git reset --hard HEAD-commit` and `git add -N` left them, made
        # here (two git processes a stop were a good part of its time): the index holds the
        # base's files, with the stat data of those whose working file is the base's as it is
        # (as a refresh records it), without for the others (git then looks at their content),
        # and the created files as intent to add.
        index = {}
        for rel, (mode, oid) in blobs.items():
            same = after.get(rel, before[rel][1]) == before[rel][1] and \
                ((modes or {}).get(rel) or mode) == mode
            index[os.fsencode(rel)] = (mode, oid, os.lstat(work.path / rel) if same else None)
        work._write_index(index_bytes(index, [(os.fsencode(rel), (modes or {}).get(rel) or
                                               "100644") for rel in created]))
        work._set_head(head)
        # A path the patch leaves without a file (deleted, renamed away) is recorded with
        # none written: --continue tells the patch's own deletion from a file removed by hand.
        written: dict[str, str | None] = {
            rel: _digest(content) for rel, (_mode, content) in before.items()}
        written.update({rel: None if new is None else _digest(new) for rel, new in after.items()})
        work._record(head, sorted(files | set(after)), written=written, bases=base_blobs)
        return work

    def made_on(self) -> dict[str, bytes]:
        """path -> what the patch was made on, for the files `create` was given `bases` of
        (an older patchforge's worktree has none); a blob gone from the repository is left
        out."""
        bases = self._read_record().get("bases")
        if not isinstance(bases, dict):
            return {}
        wanted = {rel: oid for rel, oid in bases.items()
                  if isinstance(rel, str) and isinstance(oid, str)
                  and re.fullmatch(r"[0-9a-f]{40}|[0-9a-f]{64}", oid)}
        if not wanted:
            return {}
        out = self._git("cat-file", "--batch",
                        input="".join(f"{oid}\n" for oid in wanted.values()).encode())
        found: dict[str, bytes] = {}
        at = 0
        for rel in wanted:
            end = out.index(b"\n", at)
            header = out[at:end].split()
            at = end + 1
            if len(header) != 3 or header[1] != b"blob":
                continue  # "<oid> missing"
            size = int(header[2])
            found[rel] = out[at:at + size]
            at += size + 1
        return found

    def _clear(self, keep: set[str] | frozenset[str] = frozenset()) -> None:
        """Remove everything at the worktree's place but a repository of ours (`.git`, a
        directory with an `info/exclude`): another stop's files, and whatever a user left.
        The directories in `keep` (paths relative to the worktree, with all their parents)
        stay, emptied of everything not in `keep`."""
        if self.path.is_symlink() or (self.path.exists() and not self.path.is_dir()):
            self.path.unlink()
        self.path.mkdir(parents=True, exist_ok=True)
        for entry in os.scandir(self.path):
            if entry.name == ".git" and entry.is_dir(follow_symlinks=False) and \
                    (Path(entry.path) / "info" / "exclude").is_file():
                # The packs of earlier stops' HEADs: nothing will point at them again.
                packs = Path(entry.path) / "objects" / "pack"
                for pack in (packs.iterdir() if packs.is_dir() else ()):
                    pack.unlink()
                # What `git reset --hard` removes (a merge or cherry-pick someone began in
                # here), and the ORIG_HEAD an older patchforge's reset left.
                for state in _BRANCH_STATE:
                    Path(entry.path, state).unlink(missing_ok=True)
                continue
            _remove_except(entry, entry.name, keep)

    def add(self, rel: str, base: tuple[str, bytes] | None) -> bool:
        """Track `rel` (`patchforge add`, `edit --file`): its base (mode, content), if the
        upstream has it, joins HEAD and is written unless a working file is already there;
        a path the upstream does not have is tracked as a new file. False if already tracked."""
        _check_rel(rel)
        if rel in self.tracked():
            return False
        record = self._read_record()
        target = self.path / rel
        if base is not None:
            mode, content = base
            oid = self._git("hash-object", "-w", "--stdin", input=content).decode().strip()
            # HEAD gets the file through an index of its own: the user's index may hold staged
            # changes, which must stay changes and not become part of the base.
            index = self.path / ".git" / "patchforge-add-index"
            env = {"GIT_INDEX_FILE": str(index)}
            try:
                self._git("read-tree", record["base"], env=env)
                self._git("update-index", "--add", "--cacheinfo", f"{mode},{oid},{rel}", env=env)
                tree = self._git("write-tree", env=env).decode().strip()
            finally:
                index.unlink(missing_ok=True)
            commit = self._git("commit-tree", tree, input=_BASE_MESSAGE.encode()).decode().strip()
            self._git("update-ref", "HEAD", commit)
            record["base"] = commit
            self._git("update-index", "--add", "--cacheinfo", f"{mode},{oid},{rel}")
            if not (target.exists() or target.is_symlink()):
                self._write(rel, content, mode)
        else:
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(b"")
            self._git("add", "-f", "-N", "--", rel)
        self._record(record["base"], sorted({*record["files"], rel}))
        return True

    # ---- reading one

    def exists(self) -> bool:
        return (self.path / ".git").is_dir()

    def tracked(self) -> list[str]:
        """The patch's files: those it touches, and those added (`patchforge add`)."""
        return list(self._read_record()["files"])

    def changes(self) -> Changes:
        """The patch's files that differ from the base (content, mode, deletion), and every
        other file that is there or changed: untracked, or staged or committed with git by
        hand. One `git status` (it compares stat data first and hashes only what changed);
        a second look, from the base, only when someone moved HEAD."""
        record = self._read_record()
        self._bytes_as_they_are()  # (a worktree an earlier patchforge made has no such file)
        # --no-optional-locks: `git status` would otherwise write its index whenever it
        # refreshes the stat data it keeps (a file `patchforge add` staged by its hash has none),
        # so a read-only command (`overlays --check`, a dry run) changed the open edit's
        # worktree and held its index lock against a `git add` the user runs there.
        out = self._git("--no-optional-locks", "status", "--porcelain=v1", "-z",
                        "--untracked-files=all", "--ignored=matching", "--no-renames",
                        "--ignore-submodules")
        changed: set[str] = set()
        untracked: set[str] = set()
        ignored = False
        for entry in out.split(b"\0"):
            if len(entry) < 4:
                continue
            state, rel = entry[:2], _decode(entry[3:])
            if state == b"!!":
                ignored = True
            else:
                (untracked if state == b"??" else changed).add(rel)
        if ignored:
            # git reads every `.gitignore` in the worktree, and there is no turning that off: one
            # the patch brings (or an upstream one it changes, or one a user makes) hid a new
            # file under its rules, and refresh closed the worktree over it, the file gone
            # without a word. What is ignored is asked again against the worktree's own rules
            # alone (_EXCLUDE: build products, editors' files): anything else is named.
            out = self._git("ls-files", "-z", "--others", *self._own_excludes())
            untracked.update(_decode(p) for p in out.split(b"\0") if p)
        if self._head() != record["base"]:
            # A `git commit` in here: what changed is what differs from patchforge's base.
            out = self._git("diff", "--name-only", "-z", "--no-renames", "--ignore-submodules",
                            record["base"], "--")
            changed.update(_decode(p) for p in out.split(b"\0") if p)
        mine = set(record["files"])
        untracked |= changed - mine
        return Changes(tuple(sorted(changed & mine)), tuple(sorted(untracked)))

    def _own_excludes(self) -> tuple[str, ...]:
        """`git ls-files` arguments for the worktree's own ignore rules, none of `.gitignore`'s."""
        exclude = self.path / ".git" / "info" / "exclude"
        return (f"--exclude-from={exclude}",) if exclude.is_file() else ()

    def read(self, rel: str) -> tuple[bytes | None, str]:
        """(content, mode) of a working file; (None, "") when it is gone. A symlink is read as
        git stores one: its target, mode 120000 (the target is checked when the patch made
        from it is read back)."""
        disk = self.path / rel
        if disk.is_symlink():
            return os.fsencode(os.readlink(disk)), "120000"
        if not disk.is_file():
            return None, ""
        return disk.read_bytes(), "100755" if os.access(disk, os.X_OK) else "100644"

    def remove(self) -> None:
        if self.path.exists():
            shutil.rmtree(self.path)

    # ---- helpers

    def _bytes_as_they_are(self) -> None:
        """`.git/info/attributes` holding _ATTRIBUTES: git compares and stores the working
        files byte for byte whatever a .gitattributes among them says."""
        path = self.path / ".git" / "info" / "attributes"
        try:
            if path.read_bytes() == _ATTRIBUTES:
                return
        except FileNotFoundError:
            pass
        atomic_write(path, _ATTRIBUTES, sync_directory=False)

    def _head(self) -> str:
        return self._git("rev-parse", "--verify", "HEAD").decode().strip()

    def _record(self, base: str, files: list[str], *, written: dict | None = None,
                bases: dict | None = None) -> None:
        """Record the base and the patch's files; `written` (path -> digest of what was written)
        and `bases` (path -> blob id of what the patch was made on, for a file with conflict
        markers) are kept from the record there when not given (`add` and `rm` change only
        the files)."""
        if written is None:
            try:
                before = parse_json((self.path / ".git" / _RECORD).read_bytes())
                written, bases = before.get("written"), before.get("bases")
            except (OSError, ValueError, AttributeError):
                written = None
        document: dict[str, object] = {"base": base, "files": files}
        if isinstance(written, dict):
            document["written"] = written
        if isinstance(bases, dict) and bases:
            document["bases"] = bases
        atomic_write(self.path / ".git" / _RECORD,
                     (json.dumps(document, indent=1) + "\n").encode())

    def changed_since_written(self) -> list[str]:
        """The patch's files whose working file is not what patchforge wrote there (a hand
        resolution of a stop) and is still there to be kept. A file added since (`patchforge
        add`) counts when it differs from its base; a worktree recorded without what was
        written (an older patchforge's) counts each file that differs from its base."""
        written = self._read_record().get("written")
        changed = set(self.changes().changed)
        out = []
        for rel in self.tracked():
            content, _mode = self.read(rel)
            if content is None:
                continue  # removed: nothing to copy (the stop's files were kept nowhere else)
            if isinstance(written, dict) and rel in written:
                if written[rel] != _digest(content):
                    out.append(rel)
            elif rel in changed:
                out.append(rel)
        return out

    def _read_record(self) -> dict:
        """What patchforge recorded; for a worktree made before it recorded anything, HEAD and
        what HEAD and the index know."""
        try:
            record = parse_json((self.path / ".git" / _RECORD).read_bytes())
            if isinstance(record, dict) and isinstance(record.get("base"), str) and \
                    isinstance(record.get("files"), list):
                return record
        except (OSError, ValueError):
            pass
        out = self._git("ls-files", "-z", "--cached")
        return {"base": self._head(), "files": sorted({_decode(p) for p in out.split(b"\0") if p})}

    def _write_index(self, data: bytes) -> None:
        """Replace the index (under another name, then renamed, as git does; not synced: the
        worktree is derived state)."""
        _replace_file(self.path / ".git" / "index", data)

    def _set_head(self, commit: str) -> None:
        """Point HEAD at `commit`: the branch HEAD names, as `git reset` moves it (its file
        written here), or HEAD itself when someone made it anything else."""
        head = (self.path / ".git" / "HEAD").read_bytes()
        branch = head[len(b"ref: refs/heads/"):].rstrip(b"\n") \
            if head.startswith(b"ref: refs/heads/") else b""
        if _BRANCH.fullmatch(branch):
            _replace_file(self.path / ".git" / "refs" / "heads" / os.fsdecode(branch),
                          commit.encode() + b"\n")
        else:
            self._git("update-ref", "HEAD", commit)

    def _write(self, rel: str, content: bytes, mode: str) -> None:
        target = self.path / rel
        # Never through a link: a directory on the way that is a symlink (one a patch makes)
        # would take the write outside the worktree.
        for parent in Path(rel).parents:
            if str(parent) != "." and (self.path / parent).is_symlink():
                raise UsageError(f"refusing to write {rel} through the symlink {parent} in "
                                 f"{self.path}")
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.is_symlink() or (mode == "120000" and target.exists()):
            target.unlink()
        if mode == "120000":  # a link is made as a link, its content the target
            os.symlink(os.fsdecode(content), target)
            return
        target.write_bytes(content)
        self._write_mode(rel, mode)

    def _write_mode(self, rel: str, mode: str) -> None:
        target = self.path / rel
        if target.is_file() and not target.is_symlink():
            os.chmod(target, 0o755 if mode == "100755" else 0o644)

    def _git(self, *args: str, input: bytes | None = None,
             env: dict[str, str] | None = None) -> bytes:
        # No reflogs: nobody goes back in a worktree's history, and each would be more files
        # (and directories) to write and remove. No ignore file but the worktree's own
        # (info/exclude, _EXCLUDE): git reads ~/.config/git/ignore, its default
        # core.excludesFile, even with no configuration file read, and a file made here that
        # the user's ignore rules matched (`build/`, `*.local`) was invisible to `git status`:
        # refresh closed the worktree over it and it was gone, never named.
        proc = run_git("-c", "core.autocrlf=false", "-c", "core.fileMode=true",
                       "-c", "core.logAllRefUpdates=false", "-c", "core.excludesFile=/dev/null",
                       *args,
                       cwd=self.path, input=input, env=env, ok=None)
        if proc.returncode != 0:
            raise UsageError(f"git {' '.join(args[:2])} failed in {self.path}: "
                             f"{proc.stderr.decode('utf-8', 'replace').strip()}")
        return proc.stdout


def _replace_file(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".patchforge-tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _digest(content: bytes) -> str:
    import hashlib

    return hashlib.sha256(content).hexdigest()


def _parents(rel: str) -> list[str]:
    """The directories `rel` is in, outermost first: `a/b/c` -> [`a`, `a/b`]."""
    parts = rel.split("/")[:-1]
    return ["/".join(parts[:k]) for k in range(1, len(parts) + 1)]


def _remove_except(entry: os.DirEntry, rel: str, keep) -> None:
    """Remove `entry` (at `rel` in a worktree), but for a directory in `keep`, only what is in
    it and not in `keep`. Links are removed, never followed."""
    if not entry.is_dir(follow_symlinks=False):
        os.unlink(entry.path)
    elif rel not in keep:
        shutil.rmtree(entry.path)
    else:
        with os.scandir(entry.path) as inside:
            for inner in inside:
                _remove_except(inner, f"{rel}/{inner.name}", keep)


def _check_rel(rel: str) -> None:
    # Paths come from patches and the user; the store already refused unsafe ones, this is the
    # worktree's own guard before anything is written on disk.
    parts = rel.split("/")
    if not rel or rel.startswith("/") or any(p in ("", ".", "..", ".git") for p in parts) \
            or "\0" in rel or "\n" in rel:
        raise UsageError(f"refusing path {rel!r} in a worktree")


def _decode(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape")


# ---- the editing state and the operations on it

def state_file(project: Project, upstream: str) -> Path:
    return project.state_dir / "work" / f"{upstream}.json"


def editing(project: Project, upstream: str) -> dict | None:
    """The open edit's state ({"patch", "base", ...}), None when nothing is edited. A state
    file that cannot be read (cut short, edited by hand, naming a patch no series can hold)
    is an InputError naming it, whose way out, `edit --close --discard`, never reads it."""
    from patchforge.state import UNREADABLE_EDIT_HINT, readable_edit

    path = state_file(project, upstream)
    try:
        state = parse_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, ValueError):
        state = None
    if readable_edit(state):
        return state
    raise InputError("the open edit's state cannot be read", path=str(path),
                     hint=UNREADABLE_EDIT_HINT)



def _series_prefix(project: Project, upstream: str, file_name: str, paths, *,
                   every: bool = False) -> tuple[list, set[str]]:
    """What the patches before FILE_NAME do to `paths`: [(name, their file patches on those
    paths)], in series order, and the paths that involves (renames and copies followed back to
    their sources). Only the patches whose text names one of the paths are parsed: an edit of a
    patch deep in a long series costs what its files went through, not the whole series.
    `every`: the patches of every profile, not only those of FILE_NAME's base."""
    names = project.patch_names(upstream)
    wanted = set(paths)
    picked = []
    # A patch for some profiles only is made on its base: the earlier patches in every one
    # of its profiles' series (apply.series.counts_for), never another profile's fix.
    configured = list(project.config.profiles)
    mine_for = profile_set(project.read_patch(upstream, file_name), configured) \
        if configured else None
    for name in reversed(names[:names.index(file_name)]):
        mine = _file_patches_on(project, upstream, name, wanted, counts=mine_for
                                if configured and not every else _EVERY)
        if mine is not None:
            picked.append((name, mine))
    picked.reverse()
    return picked, wanted


_EVERY = object()  # _file_patches_on's `counts` when every patch counts (no profiles declared)


def series_on_paths(project: Project, upstream: str, paths, *,
                    edited: tuple[str, bytes, PatchFile] | None = None) -> list:
    """The whole series restricted to what it does to `paths` and to every file those are
    renamed or copied to or from, anywhere in it: [(name, its file patches on those files)], in
    series order, for apply_series. A file's state through a series depends only on the file
    patches that touch it and on the sources it is renamed or copied from, so the restricted
    series gives those files exactly as the whole one does. Only patches whose text names one
    of the files are parsed. `edited` (name, bytes, PatchFile) stands for that patch's file:
    the series as it is once a refresh has written it."""
    names = project.patch_names(upstream)
    wanted = set(paths)
    while True:  # until no rename or copy brings in another file (once, mostly)
        size = len(wanted)
        picked = []
        for name in names:
            mine = _file_patches_on(project, upstream, name, wanted,
                                    edited[1:] if edited and edited[0] == name else None)
            if mine is not None:
                picked.append((name, mine))
        if len(wanted) == size:
            return picked


def _file_patches_on(project: Project, upstream: str, name: str, wanted: set[str],
                     edited: tuple[bytes, PatchFile] | None = None,
                     counts: object = _EVERY) -> PatchPart | None:
    """What patch `name` does to the files in `wanted` (None: nothing), adding to `wanted` the
    other side of each of its renames and copies among them. Only a patch whose text names one
    of the files is parsed. `counts`: the profile set of the patch whose base this is, where a
    patch not in all of that set's series does nothing (apply.series.counts_for)."""
    data = edited[0] if edited else project.read_patch_bytes(upstream, name)
    if not any(_may_name(path, data) for path in wanted):
        return None
    patch = edited[1] if edited else project.read_patch(upstream, name)
    if counts is not _EVERY and not counts_for(
            profile_set(patch, list(project.config.profiles)), counts):  # type: ignore[arg-type]
        return None
    mine = [fp for fp in patch.file_patches if fp.old_path in wanted or fp.new_path in wanted]
    if not mine:
        return None
    wanted.update(p for fp in mine for p in (fp.old_path, fp.new_path) if p)
    return PatchPart(mine, patch.source)


def _may_name(path: str, text: bytes) -> bool:
    """False only when `text` (a patch file) cannot touch `path`: a diff names each path it
    touches, as it is unless git quotes it (then the patch is parsed to know)."""
    raw = os.fsencode(path)
    return needs_c_quotes(raw) or raw in text


def series_paths_state(project: Project, store: UpstreamStore, upstream: str, file_name: str,
                       pin: str, paths):
    """(the state the series before FILE_NAME leaves `paths` in, on store commit `pin`
    (apply_series' SeriesState), the prefix applied, the paths involved)."""
    prefix, involved = _series_prefix(project, upstream, file_name, paths)
    refuse_symlinked_paths(store, pin, prefix)
    refuse_creation_collisions(store, pin, prefix)
    configured = list(project.config.profiles)
    if configured:
        # The patches for more profiles in FILE_NAME's base are there as its profiles' series
        # hold them: carried from their own base (apply.chains), as its overlays are made.
        every, _ = _series_prefix(project, upstream, file_name, paths, every=True)
        own = [profile_set(project.read_patch(upstream, n), configured) for n, _ in every]
        before = base_state(lambda wanted: store.read_blobs(pin, wanted), every, configured,
                            profile_set(project.read_patch(upstream, file_name), configured),
                            own=own, strict=True)
    else:
        before = apply_series(lambda wanted: store.read_blobs(pin, wanted), prefix,
                              strict=True)
    missing = sorted(set(paths) - set(before.current))
    if missing:
        for path, data in store.read_blobs(pin, missing).items():
            before.base[path] = before.current[path] = data
    return before, prefix, involved


def open_worktree(project: Project, store: UpstreamStore, name: str, *, files=(),
                  create: bool = False, on_left_behind=None) -> Path:
    """The editing worktree for NAME: NAME's files as the series before it leaves them, then
    NAME applied; `files` are more upstream files to have there (one the upstream lacks only
    with `create`: refuse_new_paths). Files written in its place
    after the last worktree there ended are kept first (`keep_stray`), and
    `on_left_behind(directory, files)` is told where.

    Under the project lock, the state check included: a rebase running beside it could
    otherwise pass its own check, stop, and have its conflict worktree replaced by this one
    (its `--continue` then taking the old base's files as the resolution)."""
    with RepoLock(project.state_dir):
        return _open_worktree(project, store, name, files=files, create=create,
                              on_left_behind=on_left_behind or (lambda *_: None))


def edited_diff_id(diff: bytes) -> str:
    """What an edit records of its patch's diff when it opens, for refresh to tell whether the
    patch changed behind its back."""
    import hashlib

    return hashlib.sha256(diff).hexdigest()


def refuse_changed_since_edit(project: Project, upstream: str, file_name: str,
                              state: dict, new_diff: bytes, current: bytes) -> None:
    """Refresh writes the worktree's change (`new_diff`) over the patch's diff (`current`,
    as refresh read it): refused
    (UsageError) when the patch's diff or the upstream's pin is no longer what the edit was
    opened on (a `git pull` or `git checkout` of the stack, another tool), since that change
    would be silently reverted. A patch that already holds `new_diff` (a refresh killed after
    it wrote the patch, run again) is not refused: nothing would be overwritten. Edits opened
    before this was recorded are not checked."""
    work = project.work_dir(upstream)
    path = project.patch_path(upstream, file_name)
    hint = (f"nothing of yours is lost yet: copy what you changed out of {work}, then "
            f"`patchforge edit --close --discard`, `patchforge edit "
            f"{project.patch_word(upstream, file_name)}` (made on the patch as it is now), make "
            "the change again and `patchforge refresh`")
    recorded = state.get("diff_sha256")
    if recorded is not None:
        if current == new_diff:
            return
        if edited_diff_id(current) != recorded:
            raise UsageError(f"{path.relative_to(project.root)} changed since `edit` opened it "
                             "(its diff is not the one the worktree was made from): refreshing "
                             "would overwrite that change", hint=hint)
    pin = state.get("pin")
    if recorded is not None and pin is not None:
        now = project.lock.pin(upstream).commit
        if now != pin:
            raise UsageError(f"{upstream} is pinned at {now[:12]} in upstream.lock, but the "
                             f"edit of {file_name} was opened on {pin[:12]}: its change is "
                             "against the old upstream", hint=hint)


def _open_worktree(project: Project, store: UpstreamStore, name: str, *, files=(),
                   create: bool, on_left_behind) -> Path:
    upstream, file_name = project.find_patch(name)
    # Never over a rebase's stop (its worktree holds the resolution) nor over changes of an
    # open edit that are not refreshed yet (reopening resets the worktree).
    require_state(project, "edit", [upstream], store=store)
    pin = project.lock.pin(upstream)
    work = project.work_dir(upstream)

    def read_base(paths):
        return store.read_blobs(pin.commit, paths)

    patch = project.read_patch(upstream, file_name)
    paths = sorted({p for fp in patch.file_patches for p in (fp.old_path, fp.new_path) if p})
    files = worktree_files(work, files)
    # (Only the files asked for: a patch carrying such a file opens, so that it can be put
    # back; `refresh` refuses the patch while it still changes it.)
    refuse_outside_install_root(store, pin.kind, pin.commit, files)
    # The worktree is written on disk: nothing may go through an upstream symlink.
    refuse_symlinked_paths(store, pin.commit, [(file_name, patch)])
    refuse_creation_collisions(store, pin.commit, [(file_name, patch)])
    # Only the files the worktree holds are taken through the series before NAME: its base
    # commit has the series' changes to those (`series_paths` of the state); `add` takes a
    # later file through the series when it comes.
    before, prefix, involved = series_paths_state(project, store, upstream, file_name,
                                                  pin.commit, [*paths, *files])

    def base_mode(path):
        found = store.entry(pin.commit, path)
        return found[0] if found else None

    # The files with the modes the series gives them (a script it creates is executable).
    made: list[tuple[bytes, bytes]] = []
    before_commit = store.commit_files(pin.commit, dict(before.current),
                                       modes=before.given_modes(base_mode),
                                       message=f"{upstream}: series before {file_name}",
                                       made=made)
    before_files = dict(before.current)  # apply_series below extends `before` in place
    through = apply_series(read_base, [(file_name, patch)], strict=False, state=before)
    new_modes = {p: m for p, m in through.given_modes(base_mode).items()
                 if p in patch.paths}
    failed = [o for o in through.outcomes[-1:] if not o.ok]
    # A patch that does not apply on the series before it (an earlier patch changed under it)
    # opens with every hunk that applies applied and each one that does not marked where it
    # should go, as a conflict stop holds its files: the worktree holds the whole fix, and
    # refresh refuses while a marker is left (the state's "conflicts"), so that it never
    # writes the patch without the hunks that did not apply.
    marked, made_on = _marked_files(patch, failed[0], {**through.base, **before_files},
                                    file_name) if failed else ({}, {})
    if not create:  # before anything is made: a typo leaves the edit as it was
        refuse_new_paths(store, before_commit, [p for p in files if p not in paths and
                                                store.entry(before_commit, p) is None])
    kept = keep_stray(project, upstream)
    if kept is not None:
        on_left_behind(*kept)
    try:
        contents = {p: through.current.get(p) for p in paths
                    if through.current.get(p) != before_files.get(p, through.base.get(p))}
        contents.update(marked)
        Worktree.create(work, files_at(store, before_commit, paths), contents,
                        modes=new_modes, bases=made_on)
        store.keep_made(made, project.made_objects_path(upstream))
        state = {"patch": file_name, "base": before_commit, "pin": pin.commit,
                 "series_paths": sorted(involved | set(before.current)),
                 "diff_sha256": edited_diff_id(patch.diff)}
        if marked:
            state["conflicts"] = sorted(p for p, content in marked.items() if content is not None)
        atomic_write(state_file(project, upstream),
                     (json.dumps(state, indent=2) + "\n").encode())
        add_files(store, Worktree(work), before_commit, files)
    except BaseException:
        # Cut short (Ctrl-C, SIGTERM, a failed write): the worktree half made holds nothing of
        # the user's (require_state refused unrefreshed changes), but it read as an edit with
        # changes not refreshed, and every command refused until `edit --close --discard`.
        # It goes, with its state: running the command again makes it.
        state_file(project, upstream).unlink(missing_ok=True)
        Worktree(work).remove()
        raise
    if failed:
        # Say exactly what the worktree holds: every hunk that applies is applied, each one that
        # does not is marked in its file.
        lines = []
        for application in failed[0].files:
            path = application.new_path or application.old_path
            bad = [f"#{h.index + 1}" for h in application.hunks if h.status == "failed"]
            if application.error is not None or (bad and application.content is None):
                why = application.error or f"{application.old_path} is not there (an earlier " \
                    "patch deleted or renamed it)"
                lines.append(f"{path}: {why}; the patch's lines for it are marked against "
                             "the whole file (<<<<<<< ... >>>>>>>)")
            elif bad:
                lines.append(f"{path}: hunk {', '.join(bad)} failed; marked where it should go "
                             "(<<<<<<< ... >>>>>>>)" + ("; its other hunks applied"
                                                        if len(bad) < len(application.hunks)
                                                        else ""))
            else:
                lines.append(f"{path}: applied")
        raise ApplyError(f"{file_name} does not apply on the series before it "
                         f"(worktree {work}):\n  " + "\n  ".join(lines),
                         hint="make the patch's change there in place of each marked block "
                              "(<<<<<<< the series as it is now, ||||||| what the patch was "
                              "made on, ======= the patch's lines): keep what changed since "
                              "and make only the patch's own change in it, then `patchforge "
                              "refresh` (it refuses while a marker is left)")
    return work


def _marked_files(patch, outcome, before_files: dict[str, bytes | None], file_name: str
                  ) -> tuple[dict[str, bytes | None], dict[str, bytes]]:
    """path -> the worktree's content for each file of `patch` that did not apply (its
    `outcome`, per file patch in order) on the series before it (`before_files`): what applies
    applied and the rest marked (apply.hunks.mark_hunks); a renamed file's old path goes
    (None). And path -> what the patch was made on there (the marked blocks' `|||||||`
    sections in place), for refresh to tell a resolution that undoes an earlier patch's
    change. ApplyError, with nothing opened, for a binary change that does not apply: it has
    nothing to mark, and a worktree without it would lose it at refresh."""
    from patchforge.apply.hunks import mark_hunks

    marked: dict[str, bytes | None] = {}
    made_on: dict[str, bytes] = {}
    for fp, application in zip(patch.file_patches, outcome.files):
        if application.ok:
            continue
        source = fp.old_path if fp.old_path is not None else fp.new_path
        target = fp.new_path if fp.new_path is not None else source
        old = None if fp.is_new else before_files.get(source)
        if fp.is_new:
            old = before_files.get(target)
        found = mark_hunks(old, fp, f"series before {file_name}", file_name)
        if found is None:
            raise ApplyError(f"{file_name} does not apply on the series before it: the binary "
                             f"change of {fp.path} does not apply, and has nothing to mark "
                             "in a worktree; nothing was opened",
                             hint=f"make the change again in a new patch, or `patchforge "
                                  f"delete {file_name}` (kept in deleted/)")
        marked[target] = found.content
        if found.base is not None:
            made_on[target] = found.base
        if fp.is_rename and fp.old_path is not None and fp.old_path != target:
            marked[fp.old_path] = None
    return marked, made_on


def modify_delete_ways(project: Project, paths: list[str], go_on: str, skip: str,
                       empty: str) -> str:
    """The ways on from a stop on files the patch deletes and the target changed (the target's
    files left in the worktree): keep them (the patch's deletion of them dropped) or, where the
    project makes no overlays, keep the deletion, as `git add` or `git rm` resolve git's
    modify/delete. `empty`: what becomes of a patch left with no change. An overlay cannot delete a file in the image, so where overlays are made
    (overlays/ exists) the deletion is not offered: `--continue` refuses it."""
    from patchforge.names import shell_quoted_bytes

    # (a name that is not UTF-8 said as the stop's hint says it, which a shell reads back)
    said = [shell_quoted_bytes(path) or path for path in paths]
    listed = ", ".join(said)
    keep = (f": `{go_on}` with {listed} as the worktree has it keeps the upstream's file and "
            f"drops the patch's deletion of it (change it first if the fix needs it otherwise; "
            f"{empty})")
    if project.makes_overlays:
        return (keep + f"; the deletion cannot be kept, since this project's overlays cannot "
                f"delete a file in the image; or {skip}")
    return (keep + f"; to keep the deletion, `patchforge rm {' '.join(said)}` (or remove it "
            f"from the worktree), then `{go_on}` (`patchforge overlays` would refuse the "
            f"series); or {skip}")


def refuse_gone_files_left_out(store: UpstreamStore, base: str, kind: str | None,
                               files, changes, work: Path, way_out: str) -> None:
    """UsageError when a stop on a file gone upstream (`kind` obsolete; `files` the stop's,
    `base` its worktree's base) is resolved without that file re-created in the worktree
    (`changes`, worktree_diff's): the patch would be written with its other files' changes
    and without that one, the fix's change to it lost. `way_out`: the command that keeps the
    whole fix aside instead."""
    if kind != "obsolete":
        return
    made = {path for path, _, new, _, _ in changes if new is not None}
    entries = store.entries(base, list(files))
    left_out = [path for path in files if path not in made and entries.get(path) is None]
    if left_out:
        from patchforge.names import shell_quoted_bytes

        said = [shell_quoted_bytes(path) or path for path in left_out]
        raise UsageError(f"{', '.join(said)} (gone upstream) is not re-created in {work}: "
                         "the patch would be written without its change to it",
                         hint=f"make the fix there and `patchforge add` it, then --continue; "
                              f"`patchforge rm {' '.join(said)}` drops the patch's change "
                              f"to it and keeps the rest, then --continue; or {way_out}")


def refuse_removed_by_hand(work: Path, changes, patch, name: str, patch_file: str,
                           go_on: str, way_out: str) -> None:
    """UsageError (nothing written, the stop kept) when a file the stop gave its worktree is
    gone from it at --continue and `patch` (the stopped patch as it was: a PatchFile, or None)
    does not itself delete it or rename it away: a file moved aside, or an editor's save-as.
    Taken as it is, the resolution would make the patch delete the whole file of the stop's
    base (or leave out a file it creates) and be reported resolved, every check green, where
    the patch changed a line. git's `rebase --continue` refuses an unstaged deletion of a
    conflicted path alike, and `patchforge rm` is no resolution at such a stop. Removing the
    file is how a modify/delete stop keeps the patch's own deletion (the patch deletes it, so
    it passes here); a file `add` made new and then removed is left out, as documented.
    `changes`: worktree_diff's; `name`, `patch_file`: the patch and where its lines are kept;
    `go_on`, `way_out`: the command that takes the resolution, and what else the user may do."""
    if patch is None:
        return
    own = {fp.old_path for fp in patch.file_patches
           if fp.old_path and (fp.is_delete or (fp.is_rename and fp.old_path != fp.new_path))}
    worktree = Worktree(work)
    written = worktree._read_record().get("written")
    written = written if isinstance(written, dict) else {}

    def removed_by_hand(rel: str) -> bool:
        # Recorded with no file written: the stop's own merge left it so (the patch's deletion,
        # followed where the upstream renamed the file).
        return rel not in own and not (rel in written and written[rel] is None)

    at_base = sorted(path for path, old, new, *_ in changes
                     if old is not None and new is None and removed_by_hand(path))
    seen = {path for path, *_ in changes}
    created = sorted(rel for rel in worktree.tracked()
                     if rel not in seen and isinstance(written.get(rel), str)
                     and removed_by_hand(rel) and worktree.read(rel)[0] is None)
    if not at_base and not created:
        return
    said = []
    if at_base:
        said.append(f"{name} would be written deleting {', '.join(at_base)} (the whole file "
                    "as the stop's base has it), a deletion the patch does not make")
    if created:
        said.append(f"{name} would be written without {', '.join(created)}, which it creates")
    ways = []
    if at_base:
        ways.append("a file moved aside goes back where it was; `git checkout -- PATH` in the "
                    "worktree gives it as at the stop's base, without the patch's change (make "
                    "that again there)")
    if created:
        ways.append(f"re-create {', '.join(created)} ({patch_file} has the patch's lines)")
    missing = [*at_base, *created]
    raise UsageError(
        f"{', '.join(missing)} {'is' if len(missing) == 1 else 'are'} missing from {work} "
        f"(moved aside?): {'; and '.join(said)}; a file removed is no resolution of this stop, "
        "nothing was written, the stop is as it was",
        hint=f"put it back ({'; '.join(ways)}), then `{go_on}`; or {way_out}. To make the "
             f"patch delete a file, finish with it there, then `patchforge edit "
             f"{name.removesuffix('.patch')}`, remove it and `patchforge refresh` (which "
             "says what it deletes)")


def refuse_resolution_not_applying(store: UpstreamStore, base: str, label: str, name: str,
                                   patch, work: Path, go_on: str, way_out: str) -> None:
    """UsageError (nothing written, the stop kept) when `patch`, the patch a stop's resolution
    makes, would not apply where it is to go: on `base`, the stop's base (the target, `label`,
    with the series before the patch). A file made where the target has a directory, a file
    made under a path that is a file there, a file made that is there already with other
    content (stack.creation_collisions), a hunk that does not apply (the series' own applier):
    what `git apply` of the series, `status`, `lint` and the overlays refuse at the new pin.
    The worktree holds only the patch's files, so its diff alone never shows these; written, the
    patch would be listed resolved and fail at every later command. `go_on`, `way_out`: the
    command that takes the resolution, and what else the user may do."""
    from patchforge.stack import creation_collisions

    problems = [(fp.new_path, f"{name} {message} ({label} with the series before it)")
                for _, _, fp, message, _ in creation_collisions(store, base, [(name, patch)])]
    # A path the target fills has no room for the patch's file: the worktree cannot hold both
    # (and a file the patch creates, removed, is refused above), so the way on is to set the
    # fix aside. A hunk that does not apply is the resolution's to change.
    room = bool(problems)
    if not problems:
        # The diff is the worktree's own, with context: only whether it applies is asked.
        outcome = apply_series(lambda paths: store.read_blobs(base, paths), [(name, patch)],
                               strict=False, allow_zero_context=True).outcomes[0]
        problems = [(path, f"{name}'s change to it does not apply to {label} with the series "
                     "before it") for application in outcome.files if not application.ok
                    for path in [application.new_path or application.old_path]]
    if problems:
        paths = [path for path, _ in problems]
        said = "; ".join(f"{path}: {why}" for path, why in problems)
        raise UsageError(
            f"the resolution in {work} would not apply on {label}: {said}; "
            "written so, the series would not apply at the new pin (`git apply`, `status`, "
            "`lint` and `patchforge overlays` refuse it); nothing was written, the stop is as "
            "it was",
            hint=f"{way_out}; then make the fix again where {label} has room for it "
                 "(`patchforge new NAME --file PATH`)" if room else
                 f"make the change again in {', '.join(paths)} in {work} on the file as it is "
                 f"there, then `{go_on}`; or {way_out}")


def refuse_resolution_outside_series(store: UpstreamStore, commit: str, label: str, name: str,
                                     patch, old_patch, earlier: Callable[[], list],
                                     later: Callable[[], list], configured,
                                     profile_bases: Callable[[], bool], work: Path,
                                     go_on: str, way_out: str) -> None:
    """UsageError (nothing written, the stop kept) when `patch`, the patch a stop's resolution
    makes, applies on its own base (refuse_resolution_not_applying, asked first) but does not go
    into every series that holds it: each configured profile's series, the one its overlays
    apply (the whole series in a stack without profiles). The stop's base holds its own chain
    only (apply.series: the earlier patches in every one of its profiles' series); a patch of
    another profile is not in it, so the own check never meets it, and the series would be
    written with that profile's overlays failing. Two ways it does not go:
    - a path it makes meets one another patch of that series makes (a file where the other
      makes a directory, or under the other's file; stack.creation_collisions), before it or
      after it;
    - it changes lines an earlier patch of that series, not in its base, changed (only where
      `profile_bases()` says the series has patches for some profiles only): carried
      there as overlays carry it (apply.chains.apply_on_chains, git's 3-way merge).
    A later patch of another profile whose lines no longer apply is left to the caller's walk
    (a rebase stops on it, as on a later patch of the patch's own series).
    `commit`: the target (the store commit the series goes onto); `label`: its name;
    `earlier()`, `later()`: [(name, PatchFile)] of the series before and after the patch as
    they stand at the target, asked only when the resolution can meet them (it makes a path,
    or no longer takes one away: the common resolution, a changed line in an existing file,
    asks nothing of the creations; a stack without profiles asks nothing of the lines);
    `old_patch`: the patch before the resolution (None: unknown); `go_on`, `way_out`: the
    command that takes the resolution, and what else the user may do."""
    from patchforge.apply.chains import apply_on_chains, chain_name, patch_paths
    from patchforge.apply.series import applies_to_profile
    from patchforge.stack import creation_collisions, creates_path

    def taken_away(found) -> set[str]:
        return {fp.old_path for fp in getattr(found, "file_patches", ()) if fp.old_path
                and (fp.is_delete or (fp.is_rename and fp.old_path != fp.new_path))}

    made = {fp.new_path for fp in patch.file_patches if creates_path(fp)}
    undeleted = taken_away(old_patch) - taken_away(patch)
    problems: list[str] = []
    met: set[str] = set()  # the resolution's paths that meet another patch's
    before = after = None
    if made or undeleted:
        before, after = earlier(), later()
        found_in: dict[str, list[str]] = {}  # a collision -> the profiles' series it is in
        for profile in [*configured] or [None]:
            if not applies_to_profile(patch, profile):
                continue
            series_before = [(n, p) for n, p in before if applies_to_profile(p, profile)]
            series_after = [(n, p) for n, p in after if applies_to_profile(p, profile)]
            # Collisions the series has without the patch are not the resolution's doing.
            there = {(n, fp.new_path, message) for n, _, fp, message, _ in
                     creation_collisions(store, commit, series_before + series_after)}
            for n, _, fp, message, _ in creation_collisions(
                    store, commit, [*series_before, (name, patch), *series_after]):
                if (n, fp.new_path, message) in there:
                    continue
                found_in.setdefault(f"{n} {message}", []).append(profile or "")
                met |= {p for p in made | undeleted
                        if p == fp.new_path or p.startswith(fp.new_path + "/")
                        or fp.new_path.startswith(p + "/")}
        for said, profiles in found_in.items():
            where = chain_name(frozenset(profiles)) if configured else "the series"
            problems.append(f"in {where}, {said}")
    lines = False
    if configured and profile_bases():
        before = earlier() if before is None else before
        # Only the earlier patches touching its files decide those files in each series.
        mine = patch_paths(patch)
        touching = [(n, p) for n, p in before if patch_paths(p) & mine]
        chains = apply_on_chains(lambda wanted: store.read_blobs(commit, wanted),
                                 [*touching, (name, patch)], configured, strict=False)
        for problem in chains.problems:
            if problem.name == name:
                lines = True
                who = ", ".join(problem.met) or "the patches for other profiles"
                problems.append(f"in {chain_name(problem.chain)}, {name} changes lines of "
                                f"{problem.path} that {who} changed before it")
    if not problems:
        return
    ways = []
    if lines:
        ways.append("make the resolution leave those lines alone (two fixes that change "
                    "neighbouring lines differently for some profiles are one fix per profile)")
    if met:
        ways.append(f"take {', '.join(sorted(met))} out of the resolution (a file only some "
                    "profiles need goes into a fix of their own: `patchforge new NAME "
                    "--profiles P`)")
    raise UsageError(
        f"the resolution in {work} would not go into every series that holds {name} on "
        f"{label}: {'; '.join(problems)}; written so, those series would not apply "
        "(`patchforge overlays`, `git apply`, `status` and `lint` refuse them); nothing was "
        "written, the stop is as it was",
        hint=f"{'; '.join(ways)} in {work}, then `{go_on}`; or {way_out}")


def files_at(store: UpstreamStore, commit: str, paths: list[str], *,
             fetch_together: bool = True) -> dict[str, tuple[str, bytes]]:
    """path -> (mode, content) of those of `paths` that are files at store commit `commit`
    (`fetch_together` as UpstreamStore.read_blobs takes it)."""
    contents = store.read_blobs(commit, paths, fetch_together=fetch_together)
    entries = store.entries(commit, paths)
    return {p: (entry[0], content) for p in paths
            if (content := contents[p]) is not None and (entry := entries[p]) is not None}


def refuse_non_files(store: UpstreamStore, commit: str, paths: list[str]) -> None:
    """UsageError unless each of `paths` (relative to the upstream) is a file at store commit
    `commit` or a new one: a directory there was tracked as a new empty file of its name, and
    `refresh` wrote a patch creating it, which no overlay or `git apply` takes (a path under
    one of its files failed with "File exists")."""
    parents = {p.rsplit("/", k)[0] for p in paths for k in range(1, p.count("/") + 1)}
    entries = store.entries(commit, sorted(set(paths) | parents), directories=True)
    links = [p for p in paths if (entries.get(p) or ("",))[0] == SYMLINK]
    targets = store.read_blobs(commit, links) if links else {}
    for path in paths:
        entry = entries.get(path)
        if entry is not None and entry[0] == "040000":
            raise UsageError(f"{path} is a directory in the upstream, not a file",
                             hint=f"name the files in it (e.g. `patchforge add {path}/NAME`)")
        target = os.fsdecode(targets.get(path) or b"")
        if path in targets and _leads_out(path, target):
            # The worktree would hold the link as it is: an edit of it there writes the file
            # it leads to, on this machine, outside the project, and the patch records nothing.
            raise UsageError(f"{path} is a symlink in the upstream to {target}, outside the "
                             "upstream's files: an edit of it would change that file, on this "
                             "machine, and never the patch; nothing was written",
                             hint="name the upstream file that holds the code")
        for k in range(1, path.count("/") + 1):
            parent = path.rsplit("/", k)[0]
            found = entries.get(parent)
            if found is not None and found[0] != "040000":
                raise UsageError(f"{path}: {parent} is a file in the upstream, not a directory",
                                 hint="check the path")


def _leads_out(path: str, target: str) -> bool:
    """Whether a symlink at upstream `path` to `target` leads out of the upstream's files: an
    absolute target, or one whose `..` goes above the upstream's root."""
    if target.startswith("/"):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    return joined == ".." or joined.startswith("../")


def add_files(store: UpstreamStore, work: Worktree, base: str, paths) -> list[str]:
    """Track upstream `paths` in `work`, whose files are based on store commit `base`: the ones
    the upstream has arrive as they are there (one it lacks becomes a new, empty file).
    Returns those that were not tracked yet."""
    paths = [_worktree_relative(work.path, p) for p in paths]
    if not paths:
        return []
    refuse_non_files(store, base, paths)
    base_files = files_at(store, base, paths)
    return [p for p in paths if work.add(p, base_files.get(p))]


def refuse_new_paths(store: UpstreamStore, commit: str, missing: list[str]) -> None:
    """UsageError for the first of `missing` (paths the upstream at store commit `commit`
    lacks): a mistyped path became a new, empty file that the patch created, mounted into the
    image as one. Named with the nearest upstream paths; `--create` says it is meant."""
    if missing:
        path = missing[0]
        raise UsageError(f"{path} does not exist in the upstream"
                         + near_paths(store, commit, path),
                         hint="check the path; `--create` makes it a new file of the patch")


def near_paths(store: UpstreamStore, commit: str, path: str) -> str:
    """' (did you mean ...?)' with upstream files of the same name, or else files in the same
    directory or of a near name, for a mistyped path."""
    from difflib import SequenceMatcher, get_close_matches

    base = path.rsplit("/", 1)[-1]
    try:
        names = store.list_paths(commit)
    except Exception:  # noqa: BLE001 - only a suggestion; the refusal stands without it
        return ""
    # Nearest first: a directory left out or mistyped is one small edit of the whole path.
    same_name = [p for p in names if p.rsplit("/", 1)[-1] == base]
    near = sorted(same_name, key=lambda p: (-SequenceMatcher(None, path, p).ratio(), p))[:3]
    if not near:
        near = get_close_matches(path, names, n=3, cutoff=0.8)
    return f" (did you mean {', '.join(near)}?)" if near else ""


def new_empty_files(work: Path, paths) -> list[str]:
    """Of `paths` (as `add` and `--file` take them), those the worktree's base does not have
    and that are still empty there: tracked as new files, which the patch creates unless they
    are deleted before `refresh` (a mistyped path becomes one)."""
    rels = [_worktree_relative(work, p) for p in paths]
    if not rels:
        return []
    out = Worktree(work)._git("ls-tree", "-r", "-z", "--name-only", "HEAD", "--", *rels)
    present = {_decode(p) for p in out.split(b"\0") if p}
    return [rel for rel in dict.fromkeys(rels) if rel not in present
            and (work / rel).is_file() and (work / rel).stat().st_size == 0]


def add_to_worktree(project: Project, store: UpstreamStore, paths, *, upstream: str | None = None,
                    stopped_at: tuple[str, str] | None = None) -> tuple[Path, list[str]]:
    """`patchforge add PATH...`: make upstream files part of the open worktree (an edit's, or
    that of a stopped rebase, `stopped_at` being its upstream and base commit), so that refresh
    or `rebase --continue` takes their changes. Returns the worktree and the paths newly
    tracked."""
    open_ones = {}
    for name in project.upstream_names():
        state = editing(project, name)
        if state and project.work_dir(name).is_dir():
            open_ones[name] = state["base"]
    if stopped_at is not None and project.work_dir(stopped_at[0]).is_dir():
        open_ones[stopped_at[0]] = stopped_at[1]
    if upstream is not None:
        if upstream not in open_ones:
            raise UsageError(f"no worktree is open for {upstream}",
                             hint="`patchforge edit NAME` opens one")
        chosen = upstream
    elif len(open_ones) == 1:
        chosen = next(iter(open_ones))
    elif not open_ones:
        raise UsageError("no worktree is open", hint="`patchforge edit NAME` opens one")
    else:
        raise UsageError("several worktrees are open: " + ", ".join(sorted(open_ones)),
                         hint="say which with --upstream")
    work = Worktree(project.work_dir(chosen))
    base = open_ones[chosen]
    # The check `new --file` runs, before anything is written: a name no patch can carry
    # (`..`, `.git`, a backslash) was taken here and refused only by the refresh, after the
    # change was made.
    rels = worktree_files(work.path, paths, source="add")
    # A file no fix can be deployed for is refused as `new --file` refuses it, before the
    # change is made in it (`overlays` said so only after the refresh).
    refuse_outside_install_root(store, project.lock.pin(chosen).kind, base, rels)
    state = editing(project, chosen) if not (stopped_at and stopped_at[0] == chosen) else None
    if state is not None and "series_paths" in state:
        base = _through_series(project, store, chosen, state, rels)
    return work.path, add_files(store, work, base, paths)


def _through_series(project: Project, store: UpstreamStore, upstream: str, state: dict,
                    paths: list[str]) -> str:
    """An edit's base commit holds the series' changes to the files its worktree was made with
    (`series_paths`): take the series before the edited patch through `paths` too, and return
    the base that holds them (recorded in the editing state)."""
    new = sorted(set(paths) - set(state["series_paths"]))
    if not new:
        return state["base"]
    before, prefix, involved = series_paths_state(project, store, upstream, state["patch"],
                                                  state["pin"], new)
    changed = {p: c for p, c in before.current.items() if c != before.base.get(p)}

    def base_mode(path):
        found = store.entry(state["pin"], path)
        return found[0] if found else None

    modes = {p: m for p, m in before.given_modes(base_mode).items() if p in changed}
    base = state["base"]
    if changed:
        made: list[tuple[bytes, bytes]] = []
        base = store.commit_files(base, changed, modes=modes,
                                  message=f"{upstream}: series before {state['patch']}",
                                  made=made)
        store.keep_made(made, project.made_objects_path(upstream), append=True)
    updated = {**state, "base": base,
               "series_paths": sorted({*state["series_paths"], *involved, *before.current})}
    atomic_write(state_file(project, upstream), (json.dumps(updated, indent=2) + "\n").encode())
    return base


def worktree_files(work: Path, files, *, source: str = "--file") -> list[str]:
    """The upstream paths of `new --file` and `add` arguments (`source` names which), each
    checked as a patch's path is (no `..`, absolute path outside the worktree, `.git`, a
    backslash): `new --file ../../etc/passwd` wrote and listed the new patch, then failed on
    the path."""
    from patchforge.apply.diffparse import validate_path

    return [validate_path(_worktree_relative(work, f), source=source) for f in files]


def _worktree_relative(work: Path, path: str) -> str:
    """An upstream path as the user gave it: relative to the upstream's root, or naming a file
    inside the worktree (absolute, or relative to where the command runs, e.g. from inside it)."""
    given = Path(path)
    full = (given if given.is_absolute() else Path.cwd() / given).resolve()
    root = work.resolve()
    if full.is_relative_to(root):
        return full.relative_to(root).as_posix()
    if given.is_absolute():
        raise UsageError(f"{path} is not inside the worktree {work}")
    return given.as_posix()


def close_worktree(project: Project, upstream: str) -> None:
    """Forget the editing worktree of `upstream` (its state file first, then the files)."""
    atomic_delete(state_file(project, upstream))
    Worktree(project.work_dir(upstream)).remove()


def keep_unadded(project: Project, upstream: str) -> tuple[Path, list[str]] | None:
    """Copy the files someone made in `upstream`'s worktree without `patchforge add` (and any
    other file git shows there beside the patch's own) to `.patchforge/left-behind/<upstream>-N/`
    before the worktree goes (`rebase --skip`, `--abort`): `git rebase` keeps such files, and
    one may be the start of a fix. Returns (that directory, the files), None when there are
    none. A symlink made there is kept as a link to the same target (never followed: it was
    dropped without a word); anything but files and links is not copied."""
    work = Worktree(project.work_dir(upstream))
    if not work.exists():
        return None
    try:
        unadded = work.changes().untracked
    except PatchforgeError:
        return None  # not a readable worktree: nothing can be told apart in it
    files = [rel for rel in unadded
             if (work.path / rel).is_symlink() or (work.path / rel).is_file()]
    return _keep_files(project, upstream, files)


def keep_resolution(project: Project, upstream: str) -> tuple[Path, list[str]] | None:
    """Copy the patch's files that were changed in `upstream`'s stop worktree since the stop
    wrote them (a hand resolution) to `.patchforge/left-behind/<upstream>-N/` before an
    --abort removes the worktree: `git rebase --abort` is the one way git throws away a
    resolution, and typing it for --continue would lose hours of work. Returns (that
    directory, the files), None when nothing was changed."""
    work = Worktree(project.work_dir(upstream))
    if not work.exists():
        return None
    try:
        files = work.changed_since_written()
    except PatchforgeError:
        return None  # not a readable worktree: nothing can be told apart in it
    return _keep_files(project, upstream, [rel for rel in files
                                           if (work.path / rel).is_symlink()
                                           or (work.path / rel).is_file()])


def keep_stray(project: Project, upstream: str) -> tuple[Path, list[str]] | None:
    """Copy the files written in `upstream`'s worktree place after its worktree was removed
    (state.stray_files: an editor saving late, after `refresh`) to
    `.patchforge/left-behind/<upstream>-N/` before a new worktree clears the place: they may
    be the last change of a fix. Returns (that directory, the files), None when there are
    none."""
    from patchforge.state import stray_files

    return _keep_files(project, upstream, stray_files(project, upstream))


def _keep_files(project: Project, upstream: str,
                files: list[str]) -> tuple[Path, list[str]] | None:
    """`files` of `upstream`'s worktree place copied, byte for byte (a link as a link), to a
    new `.patchforge/left-behind/<upstream>-N/`; None when there are none."""
    if not files:
        return None
    work = Worktree(project.work_dir(upstream))
    base = project.state_dir / "left-behind"
    number = 1
    while (base / f"{upstream}-{number}").exists():
        number += 1
    kept = base / f"{upstream}-{number}"
    for rel in files:
        source = work.path / rel
        if source.is_symlink():
            (kept / rel).parent.mkdir(parents=True, exist_ok=True)
            os.symlink(os.readlink(source), kept / rel)
        else:
            atomic_write(kept / rel, source.read_bytes())
    return kept, files


def unrefreshed(project: Project, store: UpstreamStore, upstream: str, state: dict) -> bool:
    """True when the worktree holds edits that its patch file does not have yet (a file
    nobody added counts: it would be lost)."""
    if state.get("bring_back"):
        return True  # the fix is back only once its resolution is refreshed
    work = Worktree(project.work_dir(upstream))
    if not work.exists():
        # Its .git removed by hand: the files cannot be compared with the base any more, so
        # any file there counts as a change (`edit --close` deleted them, edits and all).
        return work.path.is_dir() and any(path.is_file() or path.is_symlink()
                                          for path in work.path.rglob("*"))
    if work.changes().untracked:
        return True
    diff, changes = worktree_diff(project, store, upstream, state, with_changes=True)
    if state["patch"] in project.patch_names(upstream):
        kept = [project.read_patch(upstream, state["patch"])]
    elif not diff:
        return False
    else:
        # The patch left the series behind the edit's back (renamed or unlisted by hand, a
        # rename or delete cut short): the worktree's change is refreshed only where some
        # patch file still holds it; anything else would be thrown away by closing the edit.
        kept = _kept_patches(project, upstream, state["patch"])
    if any(diff == patch.diff for patch in kept):
        return False
    # The bytes differ, but the diff may say the same thing in another form: a patch made by
    # plain `git diff` (abbreviated index lines), another tool's context or hunk headings,
    # another encoding of a binary change. Refreshed means that the patch file, applied on the
    # worktree's base, gives exactly the worktree's files (paths, bytes, modes): then closing
    # the edit loses nothing, and refresh would only rewrite the patch's form.
    return not any(holds_patch(store, state["base"], patch, changes, exact=False)
                   for patch in kept)


def _kept_patches(project: Project, upstream: str, name: str) -> list[PatchFile]:
    """The patch files an edited patch's change may still be in, parsed: the file of its old
    name, the series' patches, and those `delete` kept under deleted/."""
    from patchforge.formats.patchfile import parse_patch_file

    directory = project.series_dir(upstream)
    paths = [project.patch_path(upstream, name),
             *(project.patch_path(upstream, listed) for listed in project.patch_names(upstream)),
             *sorted((directory / "deleted").glob("*.patch"))]
    patches = []
    for path in paths:
        try:
            patches.append(parse_patch_file(path.read_bytes(), str(path)))
        except (OSError, PatchforgeError):
            continue  # missing or unreadable: it holds nothing to compare with
    return patches


def holds_patch(store: UpstreamStore, base: str, patch: PatchFile, changes, *,
                exact: bool) -> bool:
    """True when `patch` applied on the store commit `base` gives exactly the worktree's files
    (`changes`, as worktree_diff gives them: the same paths changed, to the same bytes and
    modes, nothing else).

    `exact` (refresh: whether the patch's bytes may stay as they are) also asks that it applies
    without offset or fuzz and that its index lines, where it has them, name `base`'s files;
    otherwise (is there anything not refreshed?) the patch applies as `edit` applied it, fuzz
    included, since then the patch file gives that worktree again."""
    try:
        applied = apply_series(lambda paths: store.read_blobs(base, paths), [("patch", patch)],
                               strict=True, max_fuzz=0 if exact else 2)
    except PatchforgeError:
        return False
    if exact:
        if applied.outcomes and applied.outcomes[0].worst != "exact":
            return False
        from patchforge.apply.hunks import made_on

        for fp in patch.file_patches:
            pre_image = applied.base.get(fp.old_path) if fp.old_path is not None else None
            if pre_image is not None and made_on(fp, pre_image) is False:
                # Its index line names another pre-image (the patch was made on another
                # series, a profile's): rewritten, or the judge takes the stale id for where
                # it was made.
                return False

    def base_mode(path):
        found = store.entry(base, path)
        return found[0] if found else None

    got = {}
    for path, content in applied.current.items():
        mode = applied.mode(path, base_mode) if content is not None else None
        if content != applied.base.get(path) or \
                (content is not None and mode != base_mode(path)):
            got[path] = (content, mode)
    return got == {path: (new, mode if new is not None else None)
                   for path, _, new, _, mode in changes}


def require_state(project: Project, command: str, upstreams, *,
                  store: UpstreamStore | None = None) -> dict:
    """patchforge.state.require, with the check of an open edit's unrefreshed changes.
    Returns the states it allowed (for `require_state_still`)."""
    from patchforge.state import require

    def has_unrefreshed(upstream, _state) -> bool:
        current = editing(project, upstream)
        if current is None or store is None:
            return current is not None  # without the store, assume the worst
        return unrefreshed(project, store, upstream, current)

    states = require(project, command, upstreams, unrefreshed=has_unrefreshed)
    if command in LEDGER_WRITERS:
        require_readable_history(project)
    return states


def require_state_still(project: Project, command: str, upstreams, allowed: dict, *,
                        store: UpstreamStore | None = None) -> None:
    """Under the project lock: the states `require_state` allowed before it (`allowed`) are
    still the states, or the command is asked again. Checked only before the lock, a rebase
    run meanwhile (stopped on a conflict) let a `delete` take a patch out of the series the
    stop's journal holds, and its `--continue` could not go on."""
    from patchforge.state import IDLE, UpstreamState, cut_short_write_out, read_states

    now = read_states(project)
    if all(now.get(u, UpstreamState(u, IDLE)) == allowed.get(u, UpstreamState(u, IDLE))
           for u in upstreams) and cut_short_write_out(project) is None:
        return
    require_state(project, command, upstreams, store=store)


def close_edit(project: Project, store: UpstreamStore, upstream: str, *,
               discard: bool = False) -> None:
    """`edit --close`: end the open edit of `upstream`; refused while its worktree holds
    changes not refreshed, unless `discard`."""
    command = "edit --close --discard" if discard else "edit --close"
    allowed = require_state(project, command, [upstream], store=store)
    with RepoLock(project.state_dir):
        require_state_still(project, command, [upstream], allowed, store=store)
        close_worktree(project, upstream)


def close_edit_if_moved(project: Project, upstream: str, before: list[str],
                        after: list[str]) -> str | None:
    """After a series change: an open edit whose patch now sits on a different series (patches
    before it added, removed or reordered, or itself gone) is closed, its worktree being made
    on the old one (require_state made sure everything in it was refreshed). Returns the
    closed patch's name."""
    current = editing(project, upstream)
    if current is None or current.get("bring_back"):
        return None
    name = current["patch"]
    if name in after and name in before and \
            before[:before.index(name)] == after[:after.index(name)]:
        return None
    close_worktree(project, upstream)
    return name


def _refuse_unsafe_names(work: Worktree, changed) -> None:
    """A changed file of the worktree whose name no patch can carry (a backslash: `add` took
    one before it checked names), named as the worktree's file: the diff made of it was refused
    naming a line of the patch file that the refusal kept from being written."""
    from patchforge.apply.diffparse import validate_path

    for path in changed:
        try:
            validate_path(path, source=str(work.path / path))
        except UnsafePathError as exc:
            raise UnsafePathError(
                exc.message, path=exc.path,
                hint=f"its change cannot go into a patch: put the file back as the upstream "
                     f"has it (`git -C {work.path} checkout -- {shlex.quote(path)}`; a file the "
                     "upstream lacks: remove it) and run this again") from None


def worktree_diff(project: Project, store: UpstreamStore, upstream: str, state: dict, *,
                  with_changes=False, pairs: dict[str, tuple[str, bool]] | None = None,
                  patch_paths: set[str] | None = None):
    """git's diff from the worktree's base commit (`state["base"]`, in the store) to its
    working files: the tracked files that changed. A file nobody asked for is refused, never
    folded into the patch.

    The diff keeps the patch's own extended headers: a file whose mode changed gets its mode
    lines, and a file the patch renames or copies (`pairs`: new path -> (old path, copy?), by
    default the renames and copies of the edited patch, `state["patch"]`) stays a rename or a
    copy instead of coming back as a deletion and a new file. A file the user moved in the
    worktree (`git mv`), both names outside the patch's own paths (`patch_paths`, by default
    those of the edited patch), becomes a rename where `git diff -M` would call it one.
    `with_changes` also returns the files that changed, as (path, old, new, old mode, new mode)."""
    work = Worktree(project.work_dir(upstream))
    base = state["base"]
    found = work.changes()
    if found.untracked:
        listed = ", ".join(found.untracked[:10]) + (" ..." if len(found.untracked) > 10 else "")
        raise UsageError(f"files in {work.path} that are not part of the patch: {listed}",
                         hint="`patchforge add PATH` to make one part of it, or remove it (a "
                              "file you staged with git: `git rm --cached` it, then remove it)")
    _refuse_unsafe_names(work, found.changed)
    if pairs is None or patch_paths is None:
        edited = _edited_patch(project, upstream, state)
        if pairs is None:
            pairs = renames_and_copies(edited)
        if patch_paths is None:
            patch_paths = set(edited.paths) if edited is not None else set()
    sources = sorted({old for old, _ in pairs.values()} - set(found.changed))
    wanted = [*found.changed, *sources]
    olds = store.read_blobs(base, wanted)
    entries = store.entries(base, wanted)
    changes = []
    for path in found.changed:
        old = olds[path]
        new, mode_new = work.read(path)
        entry = entries[path]
        if new is None:
            mode_new = entry[0] if entry else "100644"
        mode_old = entry[0] if old is not None and entry else mode_new
        if old == new and mode_old == mode_new:
            continue  # e.g. added, then left as it was
        changes.append((path, old, new, mode_old, mode_new))
    diff = make_diff(_paired(changes, pairs, olds, entries, patch_paths))
    return (diff, changes) if with_changes else diff


def series_patch(project, upstream: str, name: str | None):
    """The series' patch `name`, parsed (None for a name not in the series)."""
    if not name or name not in project.patch_names(upstream):
        return None
    return project.read_patch(upstream, name)


def _edited_patch(project, upstream: str, state: dict):
    """The patch file the worktree edits (None for a new one, or when there is none)."""
    if state.get("bring_back"):  # the fix is still in skipped/ until the refresh
        from patchforge.formats.patchfile import parse_patch_file

        path = project.root / state["bring_back"]
        return parse_patch_file(path.read_bytes(), str(path)) if path.is_file() else None
    return series_patch(project, upstream, state.get("patch"))


def renames_and_copies(patch) -> dict[str, tuple[str, bool]]:
    """new path -> (old path, is a copy) of every rename and copy `patch` makes ({} for None)."""
    if patch is None:
        return {}
    return {fp.new_path: (fp.old_path, fp.is_copy) for fp in patch.file_patches
            if fp.old_path and fp.new_path and fp.old_path != fp.new_path}


def _paired(changes, pairs, olds, entries, patch_paths: set[str]) -> list[FileChange]:
    """The worktree's changes as diff entries, a created file that the patch renames or copies
    from another joined with its source: a rename takes the source's deletion in, a copy reads
    the source as it is in the base."""
    by_path = {c[0]: c for c in changes}
    joined: dict[str, FileChange] = {}
    consumed: set[str] = set()
    for new_path, (old_path, copy) in sorted(pairs.items()):
        made = by_path.get(new_path)
        if made is None or made[1] is not None or made[2] is None:
            continue  # not created in the worktree (left out, or already there)
        if copy:
            if olds.get(old_path) is None or entries.get(old_path) is None:
                continue
            old, old_mode = olds[old_path], entries[old_path][0]
        else:
            gone = by_path.get(old_path)
            if gone is None or gone[1] is None or gone[2] is not None or old_path in consumed:
                continue  # the source is not deleted: a new file, not a rename
            old, old_mode = gone[1], gone[3]
            consumed.add(old_path)
        joined[new_path] = FileChange(old_path, new_path, old, made[2], old_mode, made[4],
                                      copy=copy)
    # A file the user moved in the worktree (`git mv`), which the patch did not rename: paired
    # the way `git diff -M` pairs it, so it stays a rename.
    # A deletion and a creation the patch itself makes stay apart: a refresh of an unchanged
    # patch gives back its bytes.
    deleted = [(c[0], c[1]) for c in changes if c[1] is not None and c[2] is None
               and c[0] not in consumed and c[0] not in patch_paths]
    created = [(c[0], c[2]) for c in changes if c[1] is None and c[2] is not None
               and c[0] not in joined and c[0] not in patch_paths]
    for new_path, old_path in find_renames(deleted, created).items():
        gone, made = by_path[old_path], by_path[new_path]
        joined[new_path] = FileChange(old_path, new_path, gone[1], made[2], gone[3], made[4])
        consumed.add(old_path)
    return [joined[path] if path in joined else FileChange.at(*change)
            for change in changes for path in (change[0],) if path not in consumed]


# The flag that keeps a resolution undoing a change made under its patch, on purpose.
ALLOW_UNDO = "--allow-undo"


def _resolved_with_made_on(project: Project, upstream: str,
                           changes) -> Iterator[tuple[str, bytes, bytes, bytes]]:
    """(path, what the patch was made on, old, new) of each changed file whose conflict markers
    showed what the patch was made on (`Worktree.made_on`), changed on both sides: the files
    resolution_undoes and resolution_keeps_patch_over read."""
    made_on = Worktree(project.work_dir(upstream)).made_on()
    for path, old, new, _, _ in changes:
        base = made_on.get(path)
        if base is not None and old is not None and new is not None:
            yield path, base, old, new


def resolution_undoes(project: Project, upstream: str, changes, earlier: Callable[[], list],
                      fallback: str) -> list[str]:
    """What the worktree's resolution (`changes`, as worktree_diff gives them) undoes of the
    changes made under its patch, in the files whose conflict markers showed what the patch
    was made on (`Worktree.made_on`): each said with its file, its line and whose change it
    is (one of `earlier`, [(name, parsed patch)] in series order, else `fallback`: the
    upstream). A block resolved by keeping the patch's side puts back the lines the patch was
    made on, over an earlier patch's newer change or the upstream's: written, the patch would
    take that change back out of every overlay, with every check green. `earlier` is a
    function giving them, called only when something is undone (a rebase's --continue would
    read every patch moved so far)."""
    from patchforge.apply.undone import describe, undone_changes, who_changed

    found = [(path, undone) for path, base, old, new in _resolved_with_made_on(
        project, upstream, changes) for undone in undone_changes(base, old, new)]
    if not found:
        return []
    patches = list(earlier())
    return [describe(path, undone, who_changed(path, undone, patches, fallback))
            for path, undone in found]


def resolution_keeps_patch_over(project: Project, upstream: str, changes, patch,
                                earlier: Callable[[], list], fallback: str) -> list[str]:
    """Where the worktree's resolution (`changes`) keeps `patch`'s side of a block whole while
    `by` (the upstream) changed the same lines: said with the file and lines, for a note. Not
    refused, as resolution_undoes refuses: keeping the patch's side is often what is meant
    (the fix's own change), yet it silently takes upstream's change of those lines back (a
    `T | None` rewritten back to `Optional[T]`, whose import upstream dropped). Only files
    whose markers showed what the patch was made on, and blocks kept exactly so. Whose
    change it was: one of `earlier` ([(name, parsed patch)]), else `fallback`."""
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.apply.undone import Undone, describe_kept_over, patch_side_kept, who_changed

    if patch is None:
        return []
    found: list = []
    for path, base, old, new in _resolved_with_made_on(project, upstream, changes):
        fp = next((fp for fp in patch.file_patches if path in (fp.new_path, fp.old_path)
                   and fp.binary is None and not fp.is_binary), None)
        if fp is None:
            continue
        try:
            applied = apply_file_patch(base, fp, max_fuzz=0)
        except PatchforgeError:
            continue
        if not applied.ok or applied.content is None:
            continue
        found += [(path, kept) for kept in patch_side_kept(base, old, applied.content, new)]
    if not found:
        return []
    patches = list(earlier())
    return [describe_kept_over(path, kept, who_changed(
        path, Undone(kept.first, kept.back, kept.instead), patches, fallback))
        for path, kept in found]


def refuse_undoing(said: list[str], name: str, retry: str, other_ways: str,
                   work: Path) -> None:
    """UsageError (exit 2) naming what a resolution undoes (`resolution_undoes`), unless there
    is nothing: `retry` is the command that takes it on purpose (with ALLOW_UNDO), `other_ways`
    what else the user may do. The blocks are resolved by then (a marker left is refused
    first), so the hint says what to edit now and where the newer lines are to be seen: the
    worktree `work`'s own git holds the files before the patch (it said to keep the upper side
    of blocks whose markers were gone)."""
    if not said:
        return
    shown = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
    raise UsageError(
        f"the resolution of {name} undoes a change made under it since it was made: {shown}. "
        f"Written so, {name} would take that change back out; nothing was written",
        hint="at each line named, give the file back what that change made there (the lines "
             "it `has` or `put there`; none where it `took out` lines) and make only the "
             "patch's own change beside them (the conflict markers went with the resolution: "
             f"`git -C {shlex.quote(str(work))} diff` shows it against the files before the "
             "patch: its `-` lines at the lines named are the ones to give back, and any other "
             "`-` line is the patch's own change, to leave as it is); to undo that change on "
             "purpose: "
             f"`{retry} {ALLOW_UNDO}`"
             + (f"; {other_ways}" if other_ways else ""))
