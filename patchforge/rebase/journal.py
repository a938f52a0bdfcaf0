"""The rebase journal: everything a stopped or killed rebase needs to go on or go back.

It lives in `.patchforge/rebase/`:
- `journal.json`: where the run stands (`RebaseRun`: per upstream an `UpstreamRun` with its
  `PatchResult`s, the `Stop` it is stopped at, the write-out's `PlanStep`s), written atomically
  at the start, at a stop and when the write-out begins. Its presence is what "a rebase is in
  progress" means: it is the first file written and the first removed. The records are typed;
  JSON exists only where this module reads and writes them.
- `staged-<n>.json`: the new patch files (name -> base64), written before the journal names
  them: each save adds one file with what was staged since the last one (one durable write per
  save rather than one per patch; rewriting all of them at every stop made a series with many
  stops quadratic). A later file overrides an earlier one. (`staged.json`, the one file of
  journals written before, is read as the first.)
- `originals.json`, the kept originals and `orig-overlays/`: once the write-out begins, the
  project files it changes and the whole overlays/ tree as they were, for a byte-for-byte
  `--abort`. Each file is a hard link in the journal's directory named `orig.` and its path
  from the root, quoted to one name (`orig.series%2Fup%2Ffix.patch`; in `orig-files/`, without
  the `orig.`, in journals of version 2): the write-out renames new files over the project's,
  so the old ones stay as they are under that second name, and keeping them copies no byte.
  originals.json lists every path: `true` (a link), null (not there: `--abort` removes it), or
  its bytes in base64 (where the file system makes no link, and in journals of version 1).
- The write-out's new files: temporary files beside their targets (`.NAME.XXXXXXXXXX.tmp`),
  written and synced before journal.json names them in its plan (version 2); the write-out
  renames each over its target, and that rename is the whole commit of the file. Journals of
  version 1 carry those bytes in staged-<n>.json (or inline) instead; both are read.

The project's own files are not touched until the write-out, which is the last phase.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from patchforge.errors import UsageError
from patchforge.fsutil import (atomic_delete, atomic_write, atomic_write_many, fault_point,
                               fsync_dir, fsync_dirs, parse_json, sync_tree,
                               write_temporaries)
from patchforge.model.lock import ImagePin, UpstreamPin
from patchforge.model.record import field, record
from patchforge.tempfiles import remove_tree

# Version 2: the write-out's plan names its new files' temporary files (`PlanStep.temp`) and
# originals.json may say `true` (a hard link in orig-files/). Version 3: those links are in the
# journal's own directory (`KEPT_PREFIX`): a directory fewer to make, sync and remove per
# write-out, each a wait for a disk that discards freed blocks at once; a patchforge that
# reads only versions 1 and 2 refuses it rather than look for the links in orig-files/. A
# journal without them (a stop, or a write-out whose files are staged) is written as version
# 1, which every earlier patchforge reads; all three are read.
JOURNAL_VERSION = 3
READ_VERSIONS = (1, 2, 3)
ORIGINALS_DIR = "orig-files"  # version 2's
KEPT_PREFIX = "orig."


class CorruptJournal(UsageError):
    """The journal is truncated or damaged: `rebase --abort` is the way out."""

    def __init__(self, message: str) -> None:
        super().__init__(message, hint="`patchforge rebase --abort` puts back the project files "
                                       "the journal saved (if any) and removes it")


def confined(root: Path, rel: object) -> Path:
    """`root / rel` for a path the journal names, when it stays inside the project (and out
    of .git); UsageError otherwise: a journal is a file on disk like any other input."""
    return Path(confined_all(root, [rel])[0])


def confined_all(root: Path, rels) -> list[str]:
    """confined() of each of `rels`, in order, as strings (`root/rel`). Each directory is
    resolved once: a write-out names hundreds of files in a few directories, and resolving
    each file's directory (a system call per path component) was a measurable part of a long
    rebase; and no Path is made per file (the write-out's files, links and renames take
    strings: a Path per file and step was most of its interpreted work)."""
    base = Path(root)
    prefix = os.path.join(base, "")  # ends in the separator
    resolved_root = base.resolve()
    inside: dict[str, bool] = {}  # parent directory (from the root) -> it resolves inside
    targets = []
    for rel in rels:
        if not isinstance(rel, str):
            raise UsageError(f"the rebase journal names {rel!r}, which is not a path inside the "
                             "project", hint="`patchforge rebase --abort`")
        parts = rel.split("/")
        if not parts or rel.startswith("/") or "\0" in rel or \
                any(p in ("", ".", "..") or p.lower() == ".git" for p in parts):
            raise UsageError(f"the rebase journal names {rel!r}, which is not a path inside the "
                             "project", hint="`patchforge rebase --abort`")
        target = prefix + rel
        parent = rel.rpartition("/")[0]
        if parent not in inside:
            inside[parent] = (base / parent).resolve().is_relative_to(resolved_root)
        if not inside[parent]:
            raise UsageError(f"the rebase journal names {rel!r}, which leads outside the project "
                             "(through a symlink)", hint="`patchforge rebase --abort`")
        targets.append(target)
    return targets


def is_confined(root: Path, rel: object) -> bool:
    try:
        confined(root, rel)
    except UsageError:
        return False
    return True


def confined_only(root: Path, rels) -> list:
    """The `rels` that are confined() (in order): the others are never touched."""
    rels = list(rels)
    try:
        confined_all(root, rels)
        return rels
    except UsageError:  # one of them is not: sort them out one by one (a damaged journal)
        return [rel for rel in rels if is_confined(root, rel)]


class Journal:
    def __init__(self, state_dir: Path, root: Path | None = None) -> None:
        self.dir = Path(state_dir) / "rebase"
        self.root = Path(root) if root is not None else Path(state_dir).parent  # the project
        self.path = self.dir / "journal.json"
        self.run: RebaseRun | None = None  # what load() read, or what the run keeps in it
        self._pending: dict[str, bytes] = {}  # staged name -> bytes not yet on disk
        # staged name -> bytes this process wrote to disk (staged_bytes() reads no file back
        # for them: a long series' staged file is megabytes of base64)
        self._written: dict[str, bytes] = {}
        self._directory_unsynced = False  # the first save's rename not synced yet (settle)
        self._saved: dict[str, bytes] | None = None  # what staged.json holds, once read
        self._planned: dict[str, tuple[Path, Path]] | None = None  # see _planned_bytes

    def exists(self) -> bool:
        return self.path.exists()

    def begin(self) -> None:
        """Clear what an earlier run that was killed while cleaning up may have left."""
        if self.dir.exists():
            remove_tree(self.dir)
        self._saved = None
        self._written = {}

    def load(self) -> RebaseRun:
        try:
            data = parse_json(self.path.read_bytes())
        except (OSError, ValueError) as exc:
            raise CorruptJournal(f"{self.path}: the rebase journal cannot be read "
                                 f"({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("upstreams"), dict) \
                or not isinstance(data.get("order"), list):
            raise CorruptJournal(f"{self.path}: the rebase journal is not a journal this "
                                 "patchforge wrote (missing upstreams or order)")
        if data.get("version") not in READ_VERSIONS:
            raise UsageError(f"{self.path}: a rebase journal of version {data.get('version')} "
                             "(this patchforge reads versions "
                             f"{', '.join(map(str, READ_VERSIONS))})",
                             hint="finish or abort it with the patchforge that started it")
        self._planned = None
        try:
            self.run = RebaseRun.from_json(data)
        except (KeyError, TypeError, ValueError) as exc:
            # Parsed, but lacking what this run wrote into it (edited by hand, or written by a
            # damaged disk): damaged like a truncated one, and --abort is the way out.
            raise CorruptJournal(f"{self.path}: the rebase journal lacks what a resumed run "
                                 f"needs ({type(exc).__name__}: {exc})") from None
        return self.run

    def save(self, *, first: bool = False) -> None:
        """Write the journal. The staged bytes not on disk yet are made durable first (their
        file synced, renamed, the directory synced); then journal.json replaces the journal,
        so a reader (or a run after a kill) finds the journal before or after, never one naming
        a file that is not there. The `first` save of a run (`Rebase.start`'s: nothing staged
        yet) does not wait for its directory's sync: nothing outside the journal is written
        before the next save, whose sync covers it, but a stop's worktree, before which `settle`
        syncs it; so a crash that loses that journal leaves the project as it was before the
        rebase began (its bytes are synced all the same: a crash never leaves a torn journal)."""
        assert self.run is not None, "a run is recorded before it is saved"
        staged = self._staged_batch()
        if staged is not None:
            atomic_write_many([staged])
        self._staged_written()
        # No indent: json's C encoder only runs without one, and a long series' journal is big.
        unsynced = first and staged is None
        atomic_write(self.path, (json.dumps(self.run.to_json(), sort_keys=True) + "\n").encode(),
                     sync_directory=not unsynced)
        self._directory_unsynced = unsynced

    def settle(self) -> None:
        """The first save's directory sync, made before the run writes outside the journal (a
        stop's worktree): a crash must not keep the worktree and lose the journal, or the next
        rebase finds an edit open that no rebase owns."""
        if self._directory_unsynced:
            fsync_dir(self.dir)
            self._directory_unsynced = False

    def save_write_out(self, originals: list[str], new: dict[str, bytes]) -> None:
        """The save that begins the write-out, once the run's plan is recorded in it (phase
        "committing"). First every project file the plan changes (`originals`, paths from the
        root; those not there are noted) is kept: hard-linked into the journal's directory
        (`KEPT_PREFIX`), or its bytes
        into originals.json where no link can be made. Then the plan's new bytes (`new`, path
        -> bytes) go to temporary files beside their targets, written and synced as one batch
        with originals.json and any staged bytes no plan step holds, and their directories
        are synced. Last, journal.json names each temporary file in its plan step (named before
        they are written, so it is written and synced in their batch too, and only renamed
        into place after their directories are synced): the write-out only renames them
        (`Rebase._commit_files`). So each new file's bytes reach the disk once, the old ones are
        not copied at all, and the disk is waited for three times (the batch, the directories,
        the journal's directory)."""
        assert self.run is not None, "a run is recorded before it is saved"
        self.dir.mkdir(parents=True, exist_ok=True)
        for name in os.listdir(self.dir):  # left by a write-out killed before its journal
            if name.startswith(KEPT_PREFIX):  # named them
                os.unlink(self.dir / name)
        if (self.dir / ORIGINALS_DIR).exists():
            remove_tree(self.dir / ORIGINALS_DIR)
        saved: dict[str, bool | str | None] = {}
        kept_in = os.path.join(self.dir, KEPT_PREFIX)
        for rel, source in zip(originals, confined_all(self.root, originals)):
            fault_point("link")
            try:
                os.link(source, kept_in + _kept_name(rel))
                saved[rel] = True
            except FileNotFoundError:
                saved[rel] = None
            except OSError:  # a file system without hard links here (or across a mount)
                import base64  # here: a journal in base64 is the exception

                saved[rel] = base64.b64encode(Path(source).read_bytes()).decode()
        steps = [step for step in self.run.plan if step.path in new]
        files: list[tuple[Path | str, bytes]] = [
            (target, new[step.path]) for step, target in
            zip(steps, confined_all(self.root, [step.path for step in steps]))]
        token = os.urandom(5).hex()  # the temporary files' names, known before they are made
        for step, (target, _) in zip(steps, files):
            step.temp = f".{os.path.basename(target)}.{token}.tmp"
        self._planned = None
        held = {step.staged for step in steps if step.staged}
        journal_files = [(self.dir / "originals.json",
                          (json.dumps(saved, sort_keys=True) + "\n").encode())]
        staged = self._staged_batch(leave=held)
        if staged is not None:
            journal_files.append(staged)
        journal_files.append((self.path, (json.dumps(self.run.to_json(), sort_keys=True)
                                          + "\n").encode()))
        temporaries = write_temporaries([*files, *journal_files], token=token)
        named = False  # journal.json names the temporary files: the write-out has begun
        try:
            for temporary, (path, _) in zip(temporaries[len(steps):-1], journal_files):
                fault_point("rename")
                os.replace(temporary, path)
                fault_point("renamed")
            # The new names: the temporary files', the links' and originals.json's; then the
            # journal that names them.
            fsync_dirs([*(os.path.dirname(path) for path, _ in files), self.dir])
            self._staged_written()
            fault_point("rename")
            os.replace(temporaries[-1], self.path)
            fault_point("renamed")  # where a signal during the rename takes effect
            named = True
            fsync_dirs([self.dir])
        except BaseException:
            # Interrupted (Ctrl-C, SIGTERM, a failing disk) before the journal named them:
            # nothing will rename the temporary files, so they go now, not left in series/.
            # Whether it names them is read from the disk, not from `named`: a signal that
            # arrives during the journal's rename raises only after the rename is made, before
            # the flag is set, and the journal then on disk is the one naming them (its
            # temporary file is gone), which `rebase --continue` finishes.
            if not named and os.path.lexists(temporaries[-1]):
                for temporary in temporaries:
                    try:
                        os.unlink(temporary)
                    except FileNotFoundError:
                        pass
            raise

    def stage(self, rel: str, data: bytes) -> str:
        """Keep new bytes for a project file until the write-out; returns the staged name.

        They stay in memory until the journal is saved (a stop, or the write-out): a kill before
        that leaves a journal that does not name them, and a resumed run recomputes them, so
        writing each one durably as it is made would only cost time."""
        staged = f"staged/{rel}"
        self._pending[staged] = data
        return staged

    def staged_bytes(self, staged: str) -> bytes:
        if staged in self._pending:
            return self._pending[staged]
        if staged in self._written:
            return self._written[staged]
        saved = self._load_saved()
        if staged not in saved:
            planned = self._planned_bytes(staged)
            if planned is not None:
                return planned
            raise CorruptJournal(f"{self.path}: the journal names {staged}, which no staged "
                                 "file beside it holds")
        return saved[staged]

    def _planned_bytes(self, staged: str) -> bytes | None:
        """The bytes a version 2 write-out holds for `staged` in a temporary file of its plan:
        that file, or its target once it was renamed there."""
        if self._planned is None:  # staged name -> the plan step's (temporary file, target)
            self._planned = {staged: (target.parent / temp, target)
                             for staged, temp, target in self._temporaries() if staged}
        for path in self._planned.get(staged, ()):
            try:
                return path.read_bytes()
            except FileNotFoundError:
                continue
        return None

    def planned_temporaries(self) -> list[Path]:
        """The temporary files the write-out's plan names (version 2)."""
        return [target.parent / temp for _, temp, target in self._temporaries()]

    def _temporaries(self) -> list[tuple[str | None, str, Path]]:
        """(staged name, temporary file's name, target) of each plan step with a temporary
        file."""
        steps = [(step.staged, step.temp, step.path) for step in
                 (self.run.plan if self.run is not None else []) if step.temp]
        return [(staged, temp, Path(target)) for (staged, temp, _), target in
                zip(steps, confined_all(self.root, [path for _, _, path in steps]))]

    def _staged_files(self) -> list[Path]:
        """The staged files in the order they were written."""
        numbered = []
        for path in self.dir.glob("staged-*.json"):
            number = path.name[len("staged-"):-len(".json")]
            if number.isdigit():
                numbered.append((int(number), path))
        legacy = self.dir / "staged.json"
        return ([legacy] if legacy.exists() else []) + [path for _, path in sorted(numbered)]

    def _load_saved(self) -> dict[str, bytes]:
        if self._saved is None:
            import base64  # here: staged files are a journal of version 1's or a stop's

            saved: dict[str, bytes] = {}
            for path in self._staged_files():
                try:
                    doc = parse_json(path.read_bytes())
                    if not isinstance(doc, dict):
                        raise ValueError(f"not a JSON object but {type(doc).__name__}")
                    for name, data in doc.items():
                        if not isinstance(data, str):
                            raise ValueError(f"{name!r} is {type(data).__name__}")
                        saved[name] = base64.b64decode(data, validate=True)
                except (OSError, ValueError) as exc:  # binascii.Error is a ValueError
                    raise CorruptJournal(f"{path}: the staged patch files of the rebase journal "
                                         f"cannot be read ({exc})") from None
            self._saved = saved
        return self._saved

    def checkpoint(self) -> tuple[bytes, list[Path]]:
        """The journal as it is on disk, for `rollback`."""
        return self.path.read_bytes(), self._staged_files()

    def rollback(self, checkpoint: tuple[bytes, list[Path]]) -> None:
        """Put the journal back as `checkpoint` found it: its file, and no staged file that
        was made since (they hold what only the newer journal named)."""
        recorded, staged = checkpoint
        atomic_write(self.path, recorded)
        for path in self._staged_files():
            if path not in staged:
                path.unlink(missing_ok=True)
        self._pending, self._written, self._saved = {}, {}, None

    def _staged_batch(self, leave: frozenset[str] | set[str] = frozenset()
                      ) -> tuple[Path, bytes] | None:
        """The pending staged bytes as the next staged-<n>.json (path, bytes), None when none
        are pending (but those in `leave`: the write-out's temporary files hold them);
        `_staged_written` once that file is durable."""
        pending = {name: data for name, data in self._pending.items() if name not in leave}
        if not pending:
            return None
        files = self._staged_files()
        last = files[-1].name[len("staged-"):-len(".json")] if files else ""
        number = int(last) + 1 if last.isdigit() else 1
        import base64  # here: a clean write-out stages nothing (its files are written once)

        return self.dir / f"staged-{number}.json", json.dumps(
            {name: base64.b64encode(data).decode() for name, data in sorted(pending.items())}
        ).encode()

    def _staged_written(self) -> None:
        if self._saved is not None:
            self._saved.update(self._pending)
        self._written.update(self._pending)
        self._pending = {}

    def originals(self) -> dict[str, bytes | None]:
        """The project files as they were before the write-out (path -> bytes, None: not
        there)."""
        path = self.dir / "originals.json"
        if not path.exists():
            return {}
        try:
            doc = parse_json(path.read_bytes())
            if not isinstance(doc, dict):
                raise ValueError("not an object")
            import base64  # here: a write-out's originals are links as a rule

            originals: dict[str, bytes | None] = {}
            for rel, data in doc.items():
                if data is True:
                    originals[rel] = self._kept_original(rel)
                elif data is None or isinstance(data, str):
                    originals[rel] = None if data is None else base64.b64decode(data, validate=True)
                else:
                    raise ValueError(f"{rel!r} is {type(data).__name__}")
            return originals
        except (ValueError, TypeError) as exc:
            raise CorruptJournal(f"{path}: the saved project files cannot be read ({exc})") \
                from None

    def _kept_original(self, rel: str) -> bytes:
        path = self.dir / (KEPT_PREFIX + _kept_name(rel))
        if not os.path.lexists(path):  # a journal of version 2
            path = self.dir / ORIGINALS_DIR / _kept_name(rel)
        try:
            if path.is_symlink():
                raise OSError(f"{path} is a symlink")
            return path.read_bytes()
        except OSError as exc:
            raise CorruptJournal(f"{self.dir / 'originals.json'}: the saved {rel} cannot be read "
                                 f"({exc})") from None

    def restore_originals(self, root: Path) -> list[str]:
        restored = []
        originals = self.originals()
        # Only confined paths: a journal cannot send --abort outside the project.
        for rel in confined_only(root, sorted(originals)):
            data = originals[rel]
            target = Path(root) / rel
            if data is not None:
                if not target.exists() or target.read_bytes() != data:
                    atomic_write(target, data)
                    restored.append(rel)
            elif target.exists():
                atomic_delete(target)
                restored.append(rel)
        return restored

    def save_tree(self, name: str, source: Path) -> bool:
        """Copy a directory into the journal (copied aside and synced, then renamed into place,
        so the copy is whole or absent, after a power loss too: the write-out removes the
        directory it copies). False when there is no such directory."""
        target = self.dir / f"orig-{name}"
        partial = self.dir / f".orig-{name}.partial"
        for stale in (target, partial):
            if stale.exists():
                remove_tree(stale)
        if not Path(source).is_dir():
            return False
        import shutil  # here: a stop's copy of a tree only (tempfiles says why)

        shutil.copytree(source, partial, symlinks=True)
        sync_tree(partial)
        os.replace(partial, target)
        fsync_dir(self.dir)
        return True

    def restore_tree(self, name: str, target: Path) -> bool:
        """Put a saved directory back where it was, unless it is already identical; durable
        before it returns (the journal, which could put it back again, goes next)."""
        saved = self.dir / f"orig-{name}"
        if not saved.is_dir():
            return False
        if _same_tree(saved, Path(target)):
            # Put back already, maybe by an --abort killed before it synced: synced now.
            sync_tree(Path(target))
            fsync_dir(Path(target).parent)
            return False
        if Path(target).exists():
            remove_tree(target)
        import shutil  # here: putting a saved tree back only (tempfiles says why)

        shutil.copytree(saved, target, symlinks=True)
        sync_tree(Path(target))
        fsync_dir(Path(target).parent)
        return True

    def remove(self) -> None:
        """Forget the run: journal.json first (from then on nothing is in progress), then the
        rest."""
        fault_point("forget")
        atomic_delete(self.path)
        if self.dir.exists():
            remove_tree(self.dir)


def _kept_name(rel: str) -> str:
    """The name of a kept original (after `KEPT_PREFIX`; in orig-files/ in version 2): its
    path, quoted to one name (no `/`)."""
    return rel.replace("%", "%25").replace("/", "%2F")


def _same_tree(a: Path, b: Path) -> bool:
    def listing(root: Path) -> dict[str, bytes]:
        out = {}
        for directory, _, names in os.walk(root):
            for name in names:
                path = Path(directory, name)
                out[path.relative_to(root).as_posix()] = path.read_bytes()
        return out

    return b.is_dir() and listing(a) == listing(b)


# --- the records ------------------------------------------------------------------------------
# The run is typed in memory; JSON exists only here, where the journal is read and written. The
# format on disk is the one every earlier version wrote (version 1), but for a write-out's plan
# with temporary files (version 2, see JOURNAL_VERSION).

ACTIONS = ("clean", "offset", "merged", "resolved", "dropped", "skipped", "conflict")
DESTINATIONS = ("series", "upstreamed", "skipped")
STOP_KINDS = ("conflict", "obsolete", "invariant", "unsure")


def _object(doc: object, what: str) -> dict[str, Any]:
    if not isinstance(doc, dict):
        raise TypeError(f"{what} is {type(doc).__name__}, not an object")
    return doc


def _want(doc: dict[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    """doc[key], which must be of `kind`: a journal is a file on disk like any other input."""
    value = doc[key]
    if not isinstance(value, kind):
        raise TypeError(f"{key!r} is {type(value).__name__}")
    return value


def _strings(doc: dict[str, Any], key: str) -> list[str]:
    values = _want(doc, key, list)
    if not all(isinstance(v, str) for v in values):
        raise TypeError(f"{key!r} is not a list of strings")
    return list(values)


_OPTIONAL_STR = (str, type(None))


def pin_to_json(pin: UpstreamPin) -> dict[str, Any]:
    doc: dict[str, Any] = {"kind": pin.kind, "commit": pin.commit, "tree": pin.tree,
                           "label": pin.label, "source": pin.source, "version": pin.version}
    if pin.image is not None:
        doc["image"] = {"reference": pin.image.reference, "tag": pin.image.tag,
                        "digest": pin.image.digest}
    return doc


def pin_from_json(doc: object) -> UpstreamPin:
    pin = _object(doc, "a pin")
    image = _object(pin["image"], "an image pin") if pin.get("image") else None
    return UpstreamPin(kind=_want(pin, "kind", str), commit=_want(pin, "commit", str),
                       tree=_want(pin, "tree", str), label=_want(pin, "label", str),
                       source=_want(pin, "source", dict),
                       version=_want(pin, "version", _OPTIONAL_STR) if "version" in pin else None,
                       image=ImagePin(_want(image, "reference", str),
                                      _want(image, "tag", _OPTIONAL_STR),
                                      _want(image, "digest", _OPTIONAL_STR)) if image else None)


@record
class PatchResult:
    """What the run did with one patch (one of ACTIONS) and where its new bytes are staged."""
    upstream: str
    name: str
    action: str  # one of ACTIONS
    detail: str = ""
    evidence: list[str] = field(default_factory=list)
    landed_in: str | None = None
    destination: str = "series"  # one of DESTINATIONS
    staged: str | None = None  # the journal's name for the new (or set-aside) patch bytes
    # A moved patch's new file contents and the paths its new diff names (range-diff chains;
    # not part of the journal).
    changed: dict[str, bytes | None] | None = field(default=None, repr=False, compare=False)
    changed_paths: tuple[str, ...] = field(default=(), repr=False, compare=False)
    # A patch moved with some of its hunks landed upstream (`partial`): the journal's name for
    # those hunks kept as a landed fix under upstreamed/, so that a later revert of that
    # landing is said as for a fix landed whole (the moved patch no longer holds them).
    landed_part: str | None = None
    # A patch resolved at a stop whose resolution took upstream's file for one the fix
    # creates: the journal's name for the fix's own version of it, kept under deleted/.
    dropped_part: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {"upstream": self.upstream, "name": self.name, "action": self.action,
               "detail": self.detail, "evidence": self.evidence, "landed_in": self.landed_in,
               "destination": self.destination, "staged": self.staged}
        if self.landed_part is not None:
            doc["landed_part"] = self.landed_part
        if self.dropped_part is not None:
            doc["dropped_part"] = self.dropped_part
        return doc

    @classmethod
    def from_json(cls, doc: object) -> PatchResult:
        result = _object(doc, "a patch result")
        action, destination = _want(result, "action", str), _want(result, "destination", str)
        if action not in ACTIONS or destination not in DESTINATIONS:
            raise ValueError(f"a patch result of action {action!r} to {destination!r}")
        return cls(_want(result, "upstream", str), _want(result, "name", str), action,
                   _want(result, "detail", str), _strings(result, "evidence"),
                   _want(result, "landed_in", _OPTIONAL_STR), destination,
                   _want(result, "staged", _OPTIONAL_STR),
                   landed_part=_want(result, "landed_part", _OPTIONAL_STR)
                   if "landed_part" in result else None,
                   dropped_part=_want(result, "dropped_part", _OPTIONAL_STR)
                   if "dropped_part" in result else None)


@record
class Blocked:
    """Why a patch cannot move by itself: a conflict, a file gone upstream (obsolete), a
    broken `Keeps:` invariant, or a judgement the checks cannot make (unsure). `contents` are its files as far as it got (conflict markers
    where git could not merge), for the worktree; they are not journaled."""
    kind: str  # one of STOP_KINDS
    files: list[str]
    evidence: list[str]
    message: str
    contents: dict[str, bytes | None] = field(default_factory=dict, repr=False)
    modes: dict[str, str] = field(default_factory=dict, repr=False)  # the modes it gives them
    # path -> what the patch was made on, for each file with conflict markers (judge.Judgement)
    bases: dict[str, bytes] = field(default_factory=dict, repr=False)
    landed: LandedHunks | None = None  # its hunks landed upstream, the others stopped


@record
class LandedHunks:
    """The hunks of a stopped fix that landed detection found upstream (the others did not
    move): at `--continue`, those the resolution leaves as upstream made them are kept under
    upstreamed/, as a moved patch's landed part is, since the resolved patch (the worktree's
    difference from a base that has them) no longer holds them. `hunks`: a path of the patch
    (a file it renames by its old one) -> the indices of its landed hunks; `at`: where the
    target has such a file when upstream moved it; `total`: the patch's hunks; `landing`: the
    commit that landed them, where found. `parts`: the changes inside hunks not landed whole
    that landed (judge.Judgement.parts: a path -> {hunk index: change indices})."""
    hunks: dict[str, list[int]]
    at: dict[str, str]
    total: int
    landing: str | None = None
    parts: dict[str, dict[int, list[int]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"hunks": self.hunks, "at": self.at, "total": self.total,
                               "landing": self.landing}
        if self.parts:
            doc["parts"] = {path: {str(index): list(changes)
                                   for index, changes in found.items()}
                            for path, found in self.parts.items()}
        return doc

    @classmethod
    def from_json(cls, doc: object) -> LandedHunks:
        landed = _object(doc, "the landed hunks")
        hunks = _object(landed.get("hunks"), "the landed hunks' files")
        at = _object(landed.get("at", {}), "the landed hunks' places")
        if not all(isinstance(v, list) and all(type(i) is int for i in v)
                   for v in hunks.values()) or \
                not all(isinstance(v, str) for v in at.values()):
            raise ValueError("the landed hunks are not lists of hunk numbers by path")
        parts = _object(landed.get("parts", {}), "the landed changes inside hunks")
        if not all(isinstance(found, dict) and all(
                isinstance(index, str) and index.isdigit() and isinstance(changes, list)
                and all(type(i) is int for i in changes) for index, changes in found.items())
                for found in parts.values()):
            raise ValueError("the landed changes are not lists of change numbers by hunk")
        return cls({str(k): list(v) for k, v in hunks.items()}, dict(at),
                   _want(landed, "total", int), _want(landed, "landing", _OPTIONAL_STR),
                   {str(path): {int(index): list(changes) for index, changes in found.items()}
                    for path, found in parts.items()})


@record
class Stop:
    """A run stopped on a patch: what blocked it, where its worktree is, and the two states
    going on needs, as store commits (`base`: the new base with the series so far; `old_base`:
    the old series through the stopped patch, None in a journal that did not record it)."""
    upstream: str
    name: str
    kind: str
    files: list[str]
    evidence: list[str]
    message: str
    base: str
    old_base: str | None
    worktree: str
    # At a stop on the patch's Keeps: lines, the sha256 of its file without them: the one
    # change of the patch file a resume takes (its Keeps lines, where the upstream rightly
    # changed what they name).
    keeps_free: str | None = None
    # The stopped patch's hunks that landed upstream (the others stopped): kept under
    # upstreamed/ at --continue where the resolution leaves them to upstream.
    landed: LandedHunks | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "upstream": self.upstream, "name": self.name, "kind": self.kind,
            "files": self.files, "evidence": self.evidence, "message": self.message,
            "base": self.base, "old_base": self.old_base, "worktree": self.worktree}
        if self.keeps_free is not None:
            doc["keeps_free"] = self.keeps_free
        if self.landed is not None:
            doc["landed"] = self.landed.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: object) -> Stop:
        stop = _object(doc, "the stop")
        old_base, keeps_free = stop.get("old_base"), stop.get("keeps_free")
        return cls(_want(stop, "upstream", str), _want(stop, "name", str),
                   _want(stop, "kind", str), _strings(stop, "files"),
                   _strings(stop, "evidence"), _want(stop, "message", str),
                   _want(stop, "base", str), old_base if isinstance(old_base, str) else None,
                   _want(stop, "worktree", str),
                   keeps_free if isinstance(keeps_free, str) else None,
                   LandedHunks.from_json(stop["landed"]) if "landed" in stop else None)


@record
class UpstreamRun:
    """One upstream's part of the run: from which pin to which, the old series' names, how far
    the run got and what it did with each patch so far. `digests` holds the sha256 of the series
    file and of each patch file of the old series when the run began (by file name in the
    series directory): a resume checks that nobody changed them in between, since the
    write-out replaces them (a journal written without them is not checked)."""
    old: UpstreamPin
    new: UpstreamPin
    names: list[str]
    position: int = 0
    results: list[PatchResult] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc = {"from": pin_to_json(self.old), "to": pin_to_json(self.new), "names": self.names,
               "position": self.position, "results": [r.to_json() for r in self.results]}
        if self.digests:
            doc["digests"] = self.digests
        return doc

    @classmethod
    def from_json(cls, doc: object) -> UpstreamRun:
        entry = _object(doc, "an upstream's run")
        names, position = _strings(entry, "names"), _want(entry, "position", int)
        if not 0 <= position <= len(names):
            raise ValueError(f"position {position} in a series of {len(names)}")
        digests = _object(entry.get("digests", {}), "the series' digests")
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in digests.items()):
            raise TypeError("'digests' is not an object of strings")
        return cls(pin_from_json(entry["from"]), pin_from_json(entry["to"]), names, position,
                   [PatchResult.from_json(r) for r in _want(entry, "results", list)],
                   dict(digests))


@record
class PlanStep:
    """One project file the write-out changes: to new bytes in a temporary file beside it
    (`temp`, its name, version 2), staged in the journal (`staged`) or carried inline (base64,
    the small series and lock files; version 1), or, with none of them, removed. `staged`
    names the patch's new bytes in either version."""
    path: str
    staged: str | None
    inline: str | None
    temp: str | None = None

    def to_json(self) -> dict[str, Any]:
        doc = {"path": self.path, "staged": self.staged, "inline": self.inline}
        if self.temp is not None:
            doc["temp"] = self.temp
        return doc

    @classmethod
    def from_json(cls, doc: object) -> PlanStep:
        step = _object(doc, "a plan step")
        temp = _want(step, "temp", str) if "temp" in step else None
        if temp is not None and not (temp.startswith(".") and temp.endswith(".tmp")
                                     and "/" not in temp and "\0" not in temp):
            raise ValueError(f"a plan step's temporary file {temp!r}")
        return cls(_want(step, "path", str), _want(step, "staged", _OPTIONAL_STR),
                   _want(step, "inline", _OPTIONAL_STR), temp)


@record
class RebaseRun:
    """The whole run as the journal keeps it. `phase` is "running" while patches move and
    "committing" once the write-out's plan is recorded (`plan` and `summary` set then)."""
    upstreams: dict[str, UpstreamRun]
    order: list[str]
    dry_run: bool = False
    phase: str = "running"
    stopped: Stop | None = None
    plan: list[PlanStep] = field(default_factory=list)
    summary: dict[str, Any] = field(default_factory=dict)
    overlays_saved: bool = False

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "version": JOURNAL_VERSION if any(step.temp for step in self.plan) else 1,
            "phase": self.phase, "order": self.order,
            "dry_run": self.dry_run,
            "upstreams": {u: entry.to_json() for u, entry in self.upstreams.items()},
            "stopped": self.stopped.to_json() if self.stopped is not None else None}
        if self.phase == "committing":
            doc.update(plan=[step.to_json() for step in self.plan], summary=self.summary,
                       overlays_saved=self.overlays_saved)
        return doc

    @classmethod
    def from_json(cls, doc: object) -> RebaseRun:
        data = _object(doc, "the journal")
        upstreams = {name: UpstreamRun.from_json(entry)
                     for name, entry in _want(data, "upstreams", dict).items()}
        order = _strings(data, "order")
        if sorted(order) != sorted(upstreams):
            raise ValueError(f"its order {order} is not its upstreams {sorted(upstreams)}")
        phase = _want(data, "phase", str)
        if phase not in ("running", "committing"):
            raise ValueError(f"phase {phase!r}")
        run = cls(upstreams, order, _want(data, "dry_run", bool), phase,
                  Stop.from_json(data["stopped"]) if data.get("stopped") else None)
        stop = run.stopped
        if stop is not None and (stop.upstream not in upstreams or
                                 stop.name not in upstreams[stop.upstream].names):
            raise ValueError(f"it is stopped at {stop.upstream}/{stop.name}, which it does not "
                             "move")
        if phase == "committing":
            run.plan = [PlanStep.from_json(step) for step in _want(data, "plan", list)]
            run.summary = _want(data, "summary", dict)
            run.overlays_saved = _want(data, "overlays_saved", bool)
        return run
