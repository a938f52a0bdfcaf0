"""A patchforge-managed repository: where its files are, and reading them.

`Project` knows the layout (configuration, upstream.lock, series/<upstream>/, overlays/,
.patchforge/) and reads project files; it never writes except through the operations, which use
`fsutil.atomic_write` under the repository lock.
"""
from __future__ import annotations

import errno
import os
import stat
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import (AmbiguousNameError, ConfigError, InputError, KeptAsideError,
                               PatchforgeError, UsageError)
from patchforge.formats.config import PYPROJECT, STANDALONE, find_config_table
# A series line may leave out the suffix: the series file's reader says which file it names.
from patchforge.formats.series import PATCH_SUFFIX, patch_file_name  # noqa: F401 (re-exported)
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.formats.series import SeriesFile
    from patchforge.model.config import Config
    from patchforge.model.lock import Lock
    from patchforge.store.gitstore import TransferProgress

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def said_name(name: str) -> str:
    """A name given on the command line, for a message: in quotes as it always was (`'fix'`)
    where it is UTF-8, and as git quotes a name that is not (`"f\\377b"`), never with the
    surrogate escapes Python reads such an argument with (`'f\\udcffb'`)."""
    raw = name.encode("utf-8", "surrogateescape")
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        from patchforge.store.diff import quote_c_path

        return quote_c_path(raw).decode("ascii")
    return repr(name)


def find_root(start: Path) -> tuple[Path, Path]:
    """The nearest directory at or above `start` with a patchforge configuration. A directory
    inside a project's own `.patchforge/` (an edit's or a stop's worktree) belongs to that
    project: the upstream's files there may hold a configuration of their own (a pyproject.toml
    with [tool.patchforge], an upstream that uses patchforge), which is not this project's."""
    start = start.resolve()
    parts = start.parts
    for i in range(len(parts) - 1, 0, -1):
        if parts[i] == ".patchforge":
            found = _config_of(Path(*parts[:i]))
            if found is not None:
                return found
    for directory in (start, *start.parents):
        found = _config_of(directory)
        if found is not None:
            return found
    raise UsageError(f"no patchforge configuration in {start} or any parent",
                     hint="cd into the project (the directory with patchforge.toml, or a "
                          "pyproject.toml with [tool.patchforge]) or pass --root DIR; "
                          "`patchforge init` starts a new project here")



def _root_hint(root: Path) -> str:
    """The way on for a `--root` that holds no configuration: a directory inside a project
    (`--root series`, `--root .` from a subdirectory) is that project's, never the place for
    a second one, and a directory that does not exist is a mistyped one."""
    import shlex

    if not root.is_dir():
        return f"{root} does not exist: give the project's directory (the one with " \
               "patchforge.toml, or a pyproject.toml with [tool.patchforge])"
    try:
        enclosing, _ = find_root(root)
    except PatchforgeError:  # inside no project (or one refused): starting one is the way
        return "run `patchforge init` there first"
    return f"{root} is inside the project {enclosing}: `--root {shlex.quote(str(enclosing))}` " \
           "names it (or no --root, from anywhere inside it)"

def _config_of(directory: Path) -> tuple[Path, Path] | None:
    """(directory, its configuration file) when `directory` is a patchforge project."""
    standalone = directory / STANDALONE
    if standalone.is_file():
        refuse_second_config(directory)
        return directory, standalone
    pyproject = directory / PYPROJECT
    # Only a pyproject.toml that names the table is parsed: another project's (a stack checked
    # out inside it, a home directory's), however written, is not this tool's to refuse.
    if pyproject.is_file() and b"patchforge" in pyproject.read_bytes() \
            and find_config_table(pyproject) is not None:
        return directory, pyproject
    return None


def refuse_second_config(directory: Path) -> None:
    """ConfigError when `directory` has a patchforge.toml (the one read) and a pyproject.toml
    with a [tool.patchforge] table too: what the user wrote there (a profile, an upstream)
    was silently ignored. Only a pyproject.toml that names the table is parsed."""
    pyproject = directory / PYPROJECT
    try:
        data = pyproject.read_bytes()
    except OSError:
        return
    if b"patchforge" not in data:
        return
    try:
        found = find_config_table(pyproject)
    except ConfigError:
        return  # not valid TOML: it is not read, and the configuration is patchforge.toml
    if found is None:
        return
    line = next((n for n, text in enumerate(data.splitlines(), 1)
                 if b"patchforge" in text and text.strip().startswith(b"[")), None)
    raise ConfigError(f"{directory / STANDALONE} and this [tool.patchforge] table both "
                      "configure patchforge here; only patchforge.toml is read, and this "
                      "table would be ignored", path=str(pyproject), line=line,
                      hint="move what the table says into patchforge.toml and remove it, or "
                           "remove patchforge.toml")


def _plain_rel(rel: str) -> bool:
    """Whether `rel` is a relative path as a Path writes it: no empty or `.` part (a Path
    drops those), not absolute."""
    return bool(rel) and not any(part in ("", ".") for part in rel.split("/"))


def _joined(directory: str, rel: str) -> str:
    """`directory` and a plain relative `rel` (_plain_rel) as one path: str(Path(directory) /
    rel) without making the Path."""
    return f"{directory}/{rel}" if directory != "/" else f"/{rel}"


def read_no_link(path: Path) -> bytes:
    """A file of the stack (a patch, a series file, a fix set aside or kept as landed, the
    history, upstream.lock), opened without following a link: one a pull request links to a
    secret of the machine (or to /dev/zero) is refused, naming the link.
    Anything but a file there (a directory, a FIFO, which would block the read for ever: opened
    without blocking, then looked at) is refused naming the path, as a link is."""
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(f"{path} is a symlink: patchforge reads the stack from the "
                             "project's own files only",
                             hint="replace the link with the file it names") from None
        if exc.errno == errno.ENOTDIR:
            # A file where the series' directory goes (series/up): "Not a directory", with
            # the hint to run the command again, which failed the same way.
            above = next((p for p in Path(path).parents if p.is_file()), Path(path).parent)
            raise InputError(f"{above} is a file, where a series directory goes: {path} "
                             "cannot be read",
                             hint=f"move {above} aside; the series' directory holds its "
                                  "`series` file and the patch files") from None
        raise
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
        raise InputError(f"{path} is {kind}: a series file or a patch must be a file",
                         hint="put the file there (`git checkout -- PATH` if the stack's "
                              "repository has it), or take the name out of the series")
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


@record
class Project:
    root: Path
    config_path: Path
    offline: bool = False
    _lock_override: Lock | None = field(default=None, repr=False)
    # Paths are pure functions of the root and names; pathlib makes each in microseconds that
    # add up over the thousands of lookups a long series makes: (upstream, name) -> a patch
    # file, upstream -> its series directory, None -> series/.
    _patch_paths: dict = field(default_factory=dict, repr=False, compare=False)
    # Who hears about long work in the store (e.g. a wheel's download and import); the command
    # line sets it, open_store hands it to the store.
    progress: TransferProgress | None = field(default=None, repr=False, compare=False)
    # Parsed patch files by their bytes, for as long as this object lives (one command): a
    # command meets the same patch several times (status then lint, a rebase's judge,
    # range-diff and ledger, a fix and its set-aside copy), and PatchFile is immutable, so one
    # parse is shared. Keyed by the bytes, so a file rewritten in between is never served stale.
    _parsed: dict = field(default_factory=dict, repr=False, compare=False)
    # Their parsed diffs by (diff bytes, first line): a patch rewritten with another Base field
    # (a rebase's new series) has the same diff, whose parse is most of a patch's.
    _diffs: dict = field(default_factory=dict, repr=False, compare=False)
    # Each upstream's series file as last parsed, by its bytes: a rebase reads it when it
    # starts and again for its write-out's plan (the same bytes, 270 entries checked again).
    # The file is read each time; only a parse of the same bytes is shared (SeriesFile's
    # edits make new ones), so a file rewritten in between is never served stale.
    _series: dict = field(default_factory=dict, repr=False, compare=False)
    # The upstreams whose series directories were found to be the project's own (not links).
    _own_dirs: set = field(default_factory=set, repr=False, compare=False)
    # The notes this command said already (one said by every pin check would repeat itself).
    said_notes: set = field(default_factory=set, repr=False, compare=False)

    @classmethod
    def discover(cls, root: Path | None = None, *, offline: bool = False) -> "Project":
        if root is not None:
            root = Path(root)
            for candidate in (root / STANDALONE, root / PYPROJECT):
                if candidate.is_file() and (candidate.name == STANDALONE
                                            or find_config_table(candidate) is not None):
                    if candidate.name == STANDALONE:
                        refuse_second_config(root)
                    # The file by its name in the project, as find_root gives it: a link
                    # (patchforge.toml -> ../shared.toml) was taken by its target's name, which
                    # decides the format, and said to have "no [tool.patchforge] table".
                    return cls(root.resolve(), root.resolve() / candidate.name, offline)
            raise UsageError(f"no patchforge configuration in {root}", hint=_root_hint(root))
        directory, config = find_root(Path.cwd())
        return cls(directory, config, offline)

    # --- layout -----------------------------------------------------------------------------
    @property
    def lock_path(self) -> Path:
        return self.root / "upstream.lock"

    @property
    def series_root(self) -> Path:
        found = self._patch_paths.get(None)
        if found is None:
            found = self._patch_paths[None] = self.root / "series"
        return found

    def series_dir(self, upstream: str) -> Path:
        found = self._patch_paths.get(upstream)
        if found is None:
            found = self._patch_paths[upstream] = self.series_root / upstream
        return found

    def series_path(self, upstream: str) -> Path:
        return self.series_dir(upstream) / "series"

    def patch_path(self, upstream: str, name: str) -> Path:
        key = (upstream, name)
        found = self._patch_paths.get(key)
        if found is None:
            found = self._patch_paths[key] = self.series_dir(upstream) / patch_file_name(name)
        return found

    def patch_rel(self, upstream: str, name: str) -> str:
        """patch_path from the root, in posix form (`series/UP/NAME.patch`), made once per
        patch as text: a rebase names each of its patches so in several places, and a Path
        made and taken relative per patch was a per-patch cost of its own."""
        key = ("rel", upstream, name)
        found = self._patch_paths.get(key)
        if found is None:
            found = f"series/{upstream}/{patch_file_name(name)}" \
                if _plain_rel(upstream) and "/" not in name else \
                self.patch_path(upstream, name).relative_to(self.root).as_posix()
            self._patch_paths[key] = found
        return found

    def series_file(self, rel: str) -> str:
        """str(series_root / rel) for a path `rel` inside the series directory, joined as text
        when `rel` is already in the form a Path would give it."""
        return _joined(str(self.series_root), rel) if _plain_rel(rel) else \
            str(self.series_root / rel)

    @property
    def overlays_dir(self) -> Path:
        return self.root / "overlays"

    @property
    def overlays_swap_cut_short(self) -> bool:
        """overlays/ is gone and the set before it is in .overlays.old: a command replacing it
        (`overlays`, a rebase's write-out) was killed between its two renames. The next
        `overlays` or `rebase` puts it back (overlay.recover_overlays)."""
        return not self.overlays_dir.exists() and (self.root / ".overlays.old").is_dir()

    @property
    def makes_overlays(self) -> bool:
        """Whether this project writes overlays (`overlays/` exists, made by the first
        `patchforge overlays`), and so refuses what an overlay cannot carry (a deletion, a
        symlink, a name that is not UTF-8). A swap cut short still does: the set before it is
        beside it, and a rule that lapsed with it would let such a change in."""
        return self.overlays_dir.exists() or self.overlays_swap_cut_short

    @property
    def state_dir(self) -> Path:
        return self.root / ".patchforge"

    def work_dir(self, upstream: str) -> Path:
        return self.state_dir / "work" / upstream

    def pr_dir(self, upstream: str, name: str) -> Path:
        """Where `pr` drafts fix `name` of `upstream` by default (PR.md, pr.json, the
        format-patch file): one directory per upstream, so same-named fixes of two upstreams
        never share a PR.md."""
        stem = patch_file_name(name).removesuffix(".patch")
        return self.state_dir / "pr" / upstream / stem

    def made_objects_path(self, upstream: str) -> Path:
        """Where the objects of the worktree's base commit (made in the store: the series so
        far over the upstream's revision) are kept, in the worktree's own .git, so that a new
        cache gets them back (UpstreamStore.keep_made, restore_made)."""
        return self.work_dir(upstream) / ".git" / "patchforge-made"

    def refuse_own_destination(self, out: Path | str, *, new_directory: bool = False,
                               allowed: Path | None = None) -> None:
        """A file a command writes where the user says (`export`, `status --html`, `pr --out`)
        is never one of the project's own: `export --mbox series/up/fix.patch` replaced the fix
        with a mailbox, `status --html upstream.lock` the lock, `pr --out series/up` a patch
        named like its format-patch file. Refused (exit 2) for the series directory,
        overlays/, .patchforge/, the lock and the configuration and anything inside them, but
        inside `allowed` (the command's own directory under .patchforge/); and, unless
        `new_directory` allows it, a directory that does not exist (a typo is an error, not a
        new directory)."""
        target = Path(os.path.abspath(out))
        resolved = target.resolve()
        if allowed is not None:
            allowed = Path(os.path.abspath(allowed)).resolve()
            if resolved == allowed or allowed in resolved.parents:
                return
        for owned in (self.series_root, self.overlays_dir, self.state_dir, self.lock_path,
                      Path(self.config_path), *self._git_dirs()):
            owned = owned.resolve()
            if resolved == owned or owned in resolved.parents:
                raise UsageError(f"{out}: the project's own {os.path.relpath(owned, self.root)} "
                                 "is never written by this command",
                                 hint="name a file outside series/, overlays/, .patchforge/ "
                                      "and .git/")
        if not new_directory and not target.parent.is_dir():
            raise UsageError(f"cannot write {out}: the directory {target.parent} does not exist",
                             hint="create it first, or name another file")

    def own_file_of(self, status: os.stat_result) -> Path | None:
        """The project's own file that is the file `status` describes (the same device and
        inode), None when none is: a second name of the lock or of a patch (a hard link, made
        by hand or by a tool copying a checkout with `cp -l`) passes every comparison of paths,
        and a command appending to it (the job summary) changed the lock. Looked for only
        when the file has more than one name: a file with one name that passed the comparison
        of paths is none of the project's. Among the files refuse_own_destination refuses,
        and the configuration's neighbours in the root (pyproject.toml, .gitignore)."""
        if status.st_nlink < 2:
            return None
        wanted = (status.st_dev, status.st_ino)
        root = Path(os.path.abspath(self.root))
        files = [self.lock_path, Path(self.config_path),
                 *(root / name for name in ("pyproject.toml", ".gitignore"))]
        for path in files:
            try:
                found = os.stat(path, follow_symlinks=False)
            except OSError:
                continue
            if (found.st_dev, found.st_ino) == wanted:
                return path
        pending = [str(d) for d in (self.series_root, self.overlays_dir, self.state_dir,
                                    *self._git_dirs())]
        while pending:
            try:
                with os.scandir(pending.pop()) as entries:
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            pending.append(entry.path)
                        elif entry.inode() == status.st_ino and entry.is_file(
                                follow_symlinks=False):
                            try:
                                found = entry.stat(follow_symlinks=False)
                            except OSError:
                                continue
                            if (found.st_dev, found.st_ino) == wanted:
                                return Path(entry.path)
            except OSError:
                continue  # gone or unreadable: nothing there to compare
        return None

    def _git_dirs(self) -> list[Path]:
        """The `.git` of the repository holding the project (the project's root or a directory
        above it; a worktree's `.git` file counts too): `export --mbox .git/HEAD` or `status
        --html .git/config` would break the repository the stack is kept in."""
        root = Path(os.path.abspath(self.root))
        for directory in (root, *root.parents):
            if os.path.lexists(directory / ".git"):
                return [directory / ".git"]
        return []

    # --- reading ----------------------------------------------------------------------------
    @cached_property
    def config(self) -> Config:
        from patchforge.formats.config import load_config

        return load_config(self.config_path)

    @property
    def lock(self) -> Lock:
        if self._lock_override is not None:
            return self._lock_override
        from patchforge.formats.lockfile import Lock, lock_from_json

        try:
            # Never through a link: one to /dev/zero (a FIFO) stopped every command.
            data = read_no_link(self.lock_path)
        except FileNotFoundError:
            return Lock()
        return lock_from_json(data, str(self.lock_path))

    def upstream_names(self) -> list[str]:
        """Configured upstreams, in configuration order."""
        return list(self.config.upstreams)

    def read_series(self, upstream: str) -> SeriesFile:
        from patchforge.formats.series import SeriesFile, parse_series

        path = self.series_path(upstream)
        try:
            data = self._read_own(upstream, path)
        except FileNotFoundError:
            return SeriesFile((), str(path))
        known = self._series.get(upstream)
        if known is not None and known[0] == data:
            return known[1]
        series = parse_series(data, str(path))
        self._refuse_bare_files(upstream, series)
        self._series[upstream] = (data, series)
        return series

    def _refuse_bare_files(self, upstream: str, series: SeriesFile) -> None:
        """A line that leaves out `.patch` (`fix`) names `fix.patch` here, but quilt applies
        the file exactly as the line writes it (`QUILT_PATCHES=series/up quilt push` reads
        `fix`). With a file `fix` beside the series the two read different fixes (or
        patchforge said `fix.patch` was missing beside the very file quilt applies): refused,
        naming the line and both files, never a release quilt would not make. A line without
        such a file is read as `fix.patch` as before (quilt refuses it)."""
        directory = self.series_dir(upstream)
        for name, line in series.as_written():
            if name.endswith(PATCH_SUFFIX):
                continue
            bare = directory / name
            if not os.path.lexists(bare) or bare.is_dir():
                continue
            full = patch_file_name(name)
            also = (f"series/{upstream}/{full} is there too, and patchforge reads that one"
                    if os.path.lexists(directory / full) else
                    f"patchforge reads series/{upstream}/{full}, which is not there")
            raise InputError(
                f"the line {name!r} names the file series/{upstream}/{name}, which quilt applies "
                f"as written, while a line without `.patch` names {full} here ({also}): "
                "quilt and patchforge would apply different fixes",
                path=series.source, line=line,
                hint=f"keep one file: the fix in series/{upstream}/{full} and the line "
                     f"`{full}`, the other file moved out of series/{upstream}/")

    def refuse_lost_series(self, upstream: str) -> None:
        """No series file, yet patch files beside where it goes: the file was lost (an `rm`, a
        merge that dropped it), not never made. Read as an empty series, `overlays` wrote a
        release without any of those fixes (and removed their overlays), and `overlays
        --check` agreed with it: they refuse instead, naming the file and what is there.
        (`status` and `lint` name each such file as not in the series; a command adding a
        patch writes its file before the series that lists it, so this is no check of
        `read_series`.)"""
        from patchforge.state import unlisted_patch_files

        path = self.series_path(upstream)
        directory = self.series_dir(upstream)
        if path.exists() or path.is_symlink() or not directory.is_dir():
            return
        found = unlisted_patch_files(directory, set())
        if found:
            names = ", ".join(p.relative_to(directory).as_posix() for p in found[:3])
            raise InputError(
                f"missing, but series/{upstream}/ holds {len(found)} patch file"
                f"{'s' if len(found) != 1 else ''} ({names}{', ...' if len(found) > 3 else ''}): "
                "without the series file none of them would be applied",
                path=str(path),
                hint="restore it (`git checkout -- series/" + upstream + "/series` if the "
                     "stack's repository has it), or write it: one patch name per line, in "
                     "the order they apply")

    def patch_names(self, upstream: str) -> list[str]:
        return self.read_series(upstream).names

    def patch_word(self, upstream: str, file_name: str) -> str:
        """How a command names `upstream`'s patch `file_name` for the user to type: its name
        without `.patch`, or UPSTREAM/NAME where another upstream's series lists a patch of
        that name too (a merge made it so): the short name is refused there as in several
        series, and `patchforge edit fix` named in a hint failed."""
        stem = file_name.removesuffix(".patch")
        try:
            twins = [other for other in self.upstream_names()
                     if other != upstream and file_name in self.patch_names(other)]
        except PatchforgeError:
            twins = []
        return f"{upstream}/{stem}" if twins else stem

    def skipped_word(self, upstream: str, file_name: str) -> str:
        """How a command names `upstream`'s fix set aside under skipped/ for `bring-back` and
        `delete` to take: its name without `.patch`, or UPSTREAM/NAME where another upstream's
        skipped/ holds a fix of that name (the short name is refused there as skipped in
        several series) or its series lists one (`delete NAME` takes that live patch)."""
        stem = file_name.removesuffix(".patch")
        try:
            twins = [other for other in self.upstream_names() if other != upstream and (
                file_name in self.patch_names(other)
                or (self.series_dir(other) / "skipped" / file_name).is_file())]
        except PatchforgeError:
            twins = []
        return f"{upstream}/{stem}" if twins else stem

    def _read_own(self, upstream: str, path: Path) -> bytes:
        """A series or patch file of the project, never one a symlink brings in: a pull request
        can commit `series/up/series` as a link to /proc/self/environ or a key, and `lint` or
        `status` in its CI then printed the lines as patch names ("SECRET=... is listed but
        missing"), `show` and the ledger the text as a description. The file itself is opened
        without following a link; its directories are looked at once per upstream."""
        if upstream not in self._own_dirs:
            for directory in (self.series_root, self.series_dir(upstream)):
                if directory.is_symlink():
                    raise InputError(f"{directory} is a symlink: patchforge reads the series "
                                     "from the project's own files only",
                                     hint="replace the link with the directory it names")
            self._own_dirs.add(upstream)
        return read_no_link(path)

    def read_patch_bytes(self, upstream: str, name: str) -> bytes:
        path = self.patch_path(upstream, name)
        try:
            return self._read_own(upstream, path)
        except FileNotFoundError:
            series = self.read_series(upstream)
            raise ConfigError(f"patch {patch_file_name(name)} is listed in the series but the "
                              "file is missing", path=series.source,
                              line=series.line_of(name) or series.line_of(patch_file_name(name))
                              ) from None

    def read_patch(self, upstream: str, name: str) -> PatchFile:
        """The parsed patch file (parsed once per content, see parse_patch).

        An empty file is refused, and one with neither a header nor a diff: patchforge writes
        every patch with at least its header (an empty patch of `new` too), so such a file lost
        its content (a checkout or merge gone wrong, a Git LFS pointer), and taken as a patch
        that changes nothing it would leave the fix out of every overlay while `status` said it
        applies."""
        data = self.read_patch_bytes(upstream, name)
        path = self.patch_path(upstream, name)
        if not data:
            raise InputError(f"{path}: an empty file, not a patch: its fix would be in no overlay",
                             hint="restore it from the stack's history (`git log -p -- "
                                  f"{path.relative_to(self.root)}`), or `patchforge delete "
                                  f"{upstream}/{name.removesuffix('.patch')}` if the fix is gone")
        patch = self.parse_patch(data, str(path))
        if not patch.fields and not patch.diff.strip():
            # No header and no diff: text that is no patch (a Git LFS pointer, a note).
            raise InputError(f"{path}: neither a patch header nor a diff: not a patch, so its "
                             "fix would be in no overlay (a Git LFS pointer?)",
                             hint="restore the patch file itself from the stack's history, or "
                                  f"`patchforge delete {upstream}/{name.removesuffix('.patch')}`"
                                  " if the fix is gone")
        return patch

    def parse_patch(self, data: bytes, source: str) -> PatchFile:
        """parse_patch_file(data, source), once per content for this project: the same bytes
        under another name (a fix set aside in skipped/ is its series file's bytes) share the
        parse, named `source` (the name is all a parse takes from where it was read)."""
        from patchforge.formats.patchfile import parse_patch_file, renamed

        found = self._parsed.get(data)
        if found is None:
            return self._keep_parse(data, parse_patch_file(data, source, diffs=self._diffs))
        return renamed(found, source)

    def remember_patch(self, patch: PatchFile, source: str) -> bytes:
        """The bytes of a patch this command made, to be written at `source`; reading them back
        (the ledger after a rebase) then finds this parse. Returns the bytes."""
        from patchforge.formats.patchfile import renamed

        named = renamed(patch, source)
        data = named.to_bytes()
        self._keep_parse(data, named)
        return data

    def _keep_parse(self, data: bytes, patch: PatchFile) -> PatchFile:
        if len(self._parsed) >= 4096:  # bounds a command that reads many different files
            self._parsed.clear()
            self._diffs.clear()
        self._parsed[data] = patch
        return patch

    def all_patches(self) -> list[tuple[str, str]]:
        """(upstream, patch file name) for every listed patch, upstreams in config order."""
        return [(u, n) for u in self.upstream_names() for n in self.patch_names(u)]

    def _did_you_mean(self, upstream: str | None, name: str) -> str:
        """The closest patch names to a mistyped one (difflib, as git does for commands)."""
        import difflib

        stems = {n[:-len(".patch")] if n.endswith(".patch") else n: u
                 for u, n in self.all_patches() if upstream is None or u == upstream}
        wanted = name[:-len(".patch")] if name.endswith(".patch") else name
        close = difflib.get_close_matches(wanted, list(stems), n=3, cutoff=0.6)
        if not close:
            close = [s for s in stems if wanted and (wanted in s or s in wanted)][:3]
        if not close and upstream is not None:
            # `aiter/fix` for a fix of the vllm series: the name is right, the upstream is not.
            elsewhere = [u for u, n in self.all_patches()
                         if u != upstream and n == patch_file_name(name)]
            if elsewhere:
                return "did you mean " + " or ".join(f"{u}/{wanted}" for u in elsewhere) + "?"
        if not close:
            return "`patchforge list` shows the series"
        return "did you mean " + " or ".join(f"{stems[c]}/{c}" for c in close) + "?"

    def _no_such_upstream(self, given: str, upstream: str) -> str:
        known = ", ".join(self.upstream_names()) or "none configured"
        return (f"{given!r}: {upstream!r} is no configured upstream (known: {known}); a patch "
                "is named `fix` or `upstream/fix`")

    def kept_aside(self, upstream: str | None, file_name: str) -> list[tuple[str, str, str]]:
        """(upstream, upstreamed|deleted, file name) of each kept copy of `file_name`: itself
        and the numbered copies (`fix.2.patch`) a later fix of the same name was kept as."""
        import glob  # here: only kept copies are looked up by a pattern

        stem = file_name[:-len(PATCH_SUFFIX)]
        if not stem or "/" in stem:
            return []  # no file of a series has a path part in its name
        found = []
        for name in self.upstream_names():
            if upstream not in (None, name):
                continue
            for place in ("upstreamed", "deleted"):
                directory = self.series_dir(name) / place
                numbered = sorted((int(number), path.name)
                                  for path in directory.glob(f"{glob.escape(stem)}.*.patch")
                                  if (number := path.name[len(stem) + 1:-len(PATCH_SUFFIX)])
                                  .isascii() and number.isdigit())
                names = [file_name] if (directory / file_name).is_file() else []
                found += [(name, place, kept) for kept in names + [n for _, n in numbered]]
        return found

    def find_patch(self, name: str) -> tuple[str, str]:
        """Resolve NAME (`fix`, `fix.patch` or `upstream/fix`) to (upstream, file name)."""
        wanted_upstream = None
        given = name
        if "/" in name:
            wanted_upstream, name = name.split("/", 1)
        if not name or "/" in name or wanted_upstream == "":
            # (A typo such as `up//fix`: a path part no series has, never looked up as one.)
            raise UsageError(f"{given!r} is not a patch name: NAME is `fix`, `fix.patch` or "
                             "`upstream/fix`",
                             hint="`patchforge list` shows the series")
        file_name = patch_file_name(name)
        if wanted_upstream is not None and wanted_upstream not in self.upstream_names():
            # `foo/fix`: the upstream part is what is wrong; "no patch named 'fix'" said
            # nothing of it, though the fix may well be in another series.
            raise UsageError(self._no_such_upstream(given, wanted_upstream),
                             hint=self._did_you_mean(None, name))
        matches = [(u, n) for u, n in self.all_patches()
                   if n == file_name and (wanted_upstream is None or u == wanted_upstream)]
        if not matches:
            aside = [u for u in self.upstream_names() if wanted_upstream in (None, u)
                     and (self.series_dir(u) / "skipped" / file_name).is_file()]
            if aside:
                # Set aside by a rebase: not in the series, but not gone either.
                raise UsageError(f"{aside[0]}/{file_name} is not in the series: a rebase set it "
                                 f"aside (series/{aside[0]}/skipped/{file_name})",
                                 hint=f"`patchforge bring-back "
                                      f"{self.skipped_word(aside[0], file_name)}` puts it back "
                                      "onto the "
                                      "current base")
            kept = self.kept_aside(wanted_upstream, file_name)
            if len(kept) == 1:
                # Out of the series but kept: saying "no patch named" of it read as lost.
                upstream, place, kept_name = kept[0]
                why = ("it landed upstream" if place == "upstreamed"
                       else "`patchforge delete` set it aside")
                raise KeptAsideError(f"{upstream}/{file_name} is not in the series: {why} "
                                     f"(series/{upstream}/{place}/{kept_name})",
                                     hint="`patchforge list` shows the series")
            if kept:
                raise KeptAsideError(
                    f"{file_name} is not in the series; copies are kept aside: "
                    + ", ".join(f"series/{u}/{place}/{n}" for u, place, n in kept),
                    hint="`patchforge list` shows the series")
            raise UsageError(f"no patch named {said_name(name)} in the series",
                             hint=self._did_you_mean(wanted_upstream, name))
        if len(matches) > 1:
            raise AmbiguousNameError(f"patch {said_name(name)} is in several series "
                             f"({', '.join(u for u, _ in matches)}); say UPSTREAM/{name}")
        return matches[0]
