"""Reading a user's own git repository (`import git RANGE --repo DIR`) through GitPython.

This is the one module that imports GitPython: the upstream store in the cache is driven with
plain git processes (its hot paths cannot afford GitPython's import time), while a user's
checkout is read here, once per import, where GitPython's object model (commits, authors, blob
contents) is what is needed. A commit's change is git's own NUL-separated raw diff read as bytes
(_raw_changes): GitPython's parse of it decodes names as UTF-8 and splits on newlines.
"""
from __future__ import annotations

import contextlib
import os
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

from patchforge.errors import UsageError
from patchforge.store.git import redirecting_git_vars
from patchforge.model.record import record


# Passed to every git run in the user's repository: a command its configuration names is never
# run. The repository may come with its `.git/config` from elsewhere (a tarball, a shared disk),
# and git runs `core.fsmonitor`'s command whenever it reads the index, which `diff-tree` does.
NO_CONFIGURED_COMMANDS = ("-c", "core.fsmonitor=false")
# And in the environment of every git run there: a partial clone's configuration (its
# `extensions.partialClone`, a remote marked `promisor`) makes git fetch an object the
# repository lacks from that remote while it reads, and the fetch runs what the configuration
# names for it (`core.sshCommand`, a remote's `uploadpack`, an `ext::` URL's command) or goes
# to the network. GIT_NO_LAZY_FETCH turns that fetch off (git 2.39.4 and later); a git that
# does not know it still finds every transport refused (GIT_ALLOW_PROTOCOL, empty: no
# protocol allowed, whatever `protocol.*.allow` the repository sets) before any command runs.
# A missing object is then refused, naming it.
NO_LAZY_FETCH = {"GIT_NO_LAZY_FETCH": "1", "GIT_ALLOW_PROTOCOL": ""}


@record(frozen=True)
class FileDelta:
    old_path: str | None
    new_path: str | None
    old: bytes | None
    new: bytes | None
    old_mode: str
    new_mode: str

    @property
    def path(self) -> str:
        """The file's path: the new one, or the old one of a deleted file."""
        path = self.new_path or self.old_path
        assert path is not None, "a delta has a path on at least one side"
        return path


@record(frozen=True)
class CommitInfo:
    sha: str
    author_name: str
    author_email: str
    date: str  # YYYY-MM-DD, author date
    subject: str
    body: str
    root: bool  # a commit without a parent: its change is every file it holds, added
    deltas: tuple[FileDelta, ...]
    parent: str | None = None  # the first parent's id, the commit its change is made on


@contextlib.contextmanager
def _without_redirecting_git_vars() -> Iterator[None]:
    """The process environment without the GIT_* variables that would point git elsewhere.

    GitPython's git processes inherit the process environment, and git takes what a hook
    sets (GIT_DIR, a pre-receive hook's GIT_OBJECT_DIRECTORY for its quarantine,
    GIT_INDEX_FILE...) over the repository it is pointed at: `--repo DIR` would read the
    hook's objects instead. This module's reads run with them removed, and the environment
    is given back after.
    """
    saved = {k: os.environ.pop(k) for k in redirecting_git_vars()}
    try:
        yield
    finally:
        os.environ.update(saved)


def read_commits(repo_dir: Path, rev_range: str) -> list[CommitInfo]:
    """The commits of RANGE in REPO_DIR, oldest first, with their file contents (a range with
    a merge commit is refused).

    A file renamed is one change of two paths, paired as `git format-patch -M` pairs them
    (git's rename detection, its default similarity): a deletion plus a creation met a
    profile's fix of the old file as a conflict where `git apply` of the rename merges.
    """
    if rev_range.startswith("-"):
        # `git rev-list` would take it for an option (`--output=FILE` writes a file, `--all`
        # brings every branch in).
        raise UsageError(f"RANGE {rev_range!r} begins with '-': git would take it for an "
                         "option", hint="name the commits to import, e.g. BASE..TIP")
    with _without_redirecting_git_vars():
        return _read_commits(repo_dir, rev_range)


def _git_says(exc) -> str:
    """What git said, as git printed it: GitPython keeps stderr as `stderr: '...'`, with its
    own quotes and the final newline inside them."""
    text = (exc.stderr or "").strip()
    quoted = re.fullmatch(r"stderr: '(.*)'", text, re.S)
    return " ".join((quoted.group(1) if quoted else text).split())


def _summary(commit) -> str:
    summary = commit.summary
    return summary.decode("utf-8", "replace") if isinstance(summary, bytes) else summary


def commit_named(sha: str, subject: str) -> str:
    """A commit as a refusal names it: its short id and subject."""
    return f"commit {sha[:12]} ({subject})"


@record(frozen=True)
class _RawChange:
    """One file of a commit's change as `git diff-tree -z --raw` gives it: the modes and blob
    ids of both sides, git's status letter, the path (decoded with surrogateescape: its
    bytes are kept whatever its encoding); a rename (`R`) also its old path, `source`."""
    old_mode: str
    new_mode: str
    old_blob: str
    new_blob: str
    status: str
    path: str
    source: str | None = None


def _raw_changes(repo, commit, repo_dir: Path) -> list[_RawChange]:
    """The commit's own change, parent to commit (a root commit: every file it holds, added,
    as `git format-patch --root` writes it), a rename paired as `git format-patch -M` pairs
    it (`-M`: git's default similarity, whatever the repository's `diff.renames` says; no
    copies). Read as bytes, separated by NULs: GitPython's parse of the same output decodes
    it as UTF-8 (a commit adding a file of a Latin-1 name lost all its changes: an empty
    patch, exit 0) and cut a name at a newline (the fix became a patch of another file)."""
    import git

    against = [commit.parents[0].hexsha] if commit.parents else ["--root"]
    try:
        raw = repo.git.execute(["git", *NO_CONFIGURED_COMMANDS, "diff-tree", "-z", "-r",
                                "--raw", "-M",
                                "--full-index", "--no-commit-id", *against, commit.hexsha],
                               stdout_as_string=False)
    except git.GitCommandError as exc:
        said = _git_says(exc)
        # A rename's pairing reads both files: one a partial clone lacks is said as _delta
        # says it (git's own words lead with its warning that lazy fetch is off).
        missing = re.search(r"unable to read ([0-9a-f]{40,64})\b", said)
        if missing is not None:
            raise _lacks(repo_dir, f"commit {commit.hexsha}", missing.group(1)) from None
        raise UsageError(f"cannot read commit {commit.hexsha} in {repo_dir}: {said}") from None
    fields = iter(raw.split(b"\0"))
    changes = []
    for meta in fields:
        if not meta:
            break  # (the NUL that ends the last path)
        old_mode, new_mode, old_blob, new_blob, status = meta.lstrip(b":").split(b" ")
        letter = status.decode()[:1]
        # A rename's record names two paths, its old one first.
        source = next(fields).decode("utf-8", "surrogateescape") if letter == "R" else None
        changes.append(_RawChange(old_mode.decode(), new_mode.decode(), old_blob.decode(),
                                  new_blob.decode(), letter,
                                  next(fields).decode("utf-8", "surrogateescape"), source))
    return changes


def _author_and_message(repo, commit) -> tuple[str, str]:
    """The commit's author name and message in the encoding its `encoding` header names (git
    writes one where `i18n.commitEncoding` is set, Latin-1 say), else UTF-8: GitPython read
    such a message as UTF-8, every accented letter a replacement character in the patch."""
    import codecs

    raw = repo.odb.stream(commit.binsha).read()
    head, _, message = raw.partition(b"\n\n")
    encoding, author = "utf-8", b""
    for line in head.split(b"\n"):
        if line.startswith(b"encoding "):
            encoding = line[len(b"encoding "):].decode("ascii", "replace").strip()
        elif line.startswith(b"author "):
            author = line[len(b"author "):].rpartition(b" <")[0]
    try:
        codecs.lookup(encoding)
    except LookupError:
        encoding = "utf-8"  # a name git wrote but Python does not know: read as git's default

    def text(data: bytes) -> str:
        try:
            return data.decode(encoding)
        except UnicodeDecodeError:  # not in the encoding it names: its bytes kept
            return data.decode("utf-8", "surrogateescape")
    return text(author).strip(), text(message)


def _delta(repo, commit, change: _RawChange, repo_dir: Path, rev_range: str) -> FileDelta:
    """A file of the commit's change with both contents, after the refusals of what a patch
    cannot carry (before a gitlink is read)."""
    _refuse_unsupported(change, commit, repo_dir, rev_range)
    added, deleted = change.status == "A", change.status == "D"

    def blob(blob_id: str) -> bytes:
        try:
            return repo.odb.stream(bytes.fromhex(blob_id)).read()
        except ValueError:  # GitPython's word for an object the repository lacks
            # (A partial clone's object is never fetched here: NO_LAZY_FETCH.)
            raise _lacks(repo_dir, f"{change.path} of commit {commit.hexsha}",
                         blob_id) from None
    old = None if added else blob(change.old_blob)
    new = None if deleted else blob(change.new_blob)
    return FileDelta(old_path=None if added else change.source or change.path,
                     new_path=None if deleted else change.path, old=old, new=new,
                     old_mode=change.new_mode if added else change.old_mode,
                     new_mode=change.old_mode if deleted else change.new_mode)


def _lacks(repo_dir: Path, what: str, object_id: str) -> UsageError:
    """The refusal of `what` (a file of a commit, a commit's change) that needs an object the
    repository lacks: a partial clone's, which the import never fetches (NO_LAZY_FETCH)."""
    return UsageError(f"cannot read {what} in {repo_dir}: the repository lacks object "
                      f"{object_id}",
                      hint="a partial clone fetches an object on demand, which the import never "
                           f"makes git do: fetch it there first (`git -C "
                           f"{shlex.quote(str(repo_dir))} cat-file -e {object_id}` does, as "
                           "the repository's configuration says), then import again")


def _refuse_unsupported(change: _RawChange, commit, repo_dir: Path, rev_range: str) -> None:
    """Refuse a change a patch cannot carry, naming the range, the repository, the commit and
    the path (as the merge refusal does), before any diff is made of it: the diff writer's own
    refusal named none of them (`unsupported file mode 160000`, `<diff>:2`)."""
    path, why = change.path, None
    modes = {m for m in (change.old_mode, change.new_mode) if m != "000000"}
    if "160000" in modes:
        # A submodule is a commit id in the tree, not a file: no patch (git apply, quilt,
        # an overlay) carries one.
        what = {"A": "adds", "D": "removes"}.get(change.status, "changes")
        why = f"{what} submodule {path}: a patch carries files only"
    elif "120000" in modes and len(modes) > 1:
        why = (f"turns {path} from a symlink into a file" if change.old_mode == "120000"
               else f"turns {path} from a file into a symlink") + \
            ": a patch of the series cannot change a file's type"
    elif any(c in name for name in (path, change.source or "") for c in "\n\r"):
        from patchforge.store.diff import quote_c_path

        path = next(name for name in (path, change.source or "") if "\n" in name or
                    "\r" in name)  # (a rename's old path, where it is that one)
        quoted = quote_c_path(path.encode("utf-8", "surrogateescape")).decode("utf-8",
                                                                              "replace")
        why = (f"changes {quoted}: a file name with a newline cannot be carried by a patch "
               "(GNU patch and quilt read one name a line)")
    if why is not None:
        raise UsageError(f"{rev_range} in {repo_dir}: "
                         f"{commit_named(commit.hexsha, _summary(commit))} {why}",
                         hint="leave that commit out of the range: "
                              + _around(commit, rev_range))


def _around(commit, rev_range: str) -> str:
    """The ranges that import the commits of `rev_range` before and after `commit`, with the
    range's own base and tip where it is written `BASE..TIP` (else the words BASE and TIP):
    the range before it left out when there is none (a root commit, or the range's first)."""
    short = commit.hexsha[:12]
    plain = re.fullmatch(r"([^.^~:\s]\S*?)?\.\.([^.\s]\S*)?", rev_range)
    base, tip = (plain.group(1) or "HEAD", plain.group(2) or "HEAD") if plain else \
        ("BASE", "TIP")
    after = f"`{short}..{tip}`"
    try:
        first = plain is not None and bool(commit.parents) and \
            commit.repo.git.rev_parse(base + "^{commit}") == commit.parents[0].hexsha
    except Exception:  # (GitPython's errors: the base is the user's to name then)
        first = False
    if not commit.parents or first:
        return f"import the commits after it ({after})"
    return f"import the commits before and after it as two ranges (`{base}..{short}~1`, " \
        f"then {after})"


def _read_commits(repo_dir: Path, rev_range: str) -> list[CommitInfo]:
    import git  # GitPython: imported only when a user repository is read

    try:
        repo = git.Repo(repo_dir)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"{repo_dir} is not a git repository") from None
    # Every git GitPython runs there (rev-list, cat-file) carries them too.
    repo.git.set_persistent_git_options(c=list(NO_CONFIGURED_COMMANDS[1::2]))
    repo.git.update_environment(**NO_LAZY_FETCH)
    try:
        commits = list(repo.iter_commits(rev_range, reverse=True))
    except git.GitCommandError as exc:
        raise UsageError(f"cannot read {rev_range!r} in {repo_dir}: {_git_says(exc)}",
                         hint="name commits of that repository, e.g. BASE..TIP (`git log "
                              "--oneline BASE..TIP` there lists what would be imported)") \
            from None
    merges = [c for c in commits if len(c.parents) > 1]
    if merges:
        summary = _summary(merges[0])
        # A merge has no one diff to carry: what it changes (a conflict resolved, an edit made
        # in it) would be in no patch, and the commits it brings in from the other side would
        # be imported as fixes. The series is a line; so must the range be.
        raise UsageError(f"{rev_range} in {repo_dir} holds merge commit "
                         f"{merges[0].hexsha[:12]} ({summary})"
                         + (f" and {len(merges) - 1} more" if len(merges) > 1 else "")
                         + ": a series is a line of fixes",
                         hint="linearize the branch first (`git rebase` onto the range's start), "
                              "or name a range without merges")
    out = []
    for commit in commits:
        deltas = [_delta(repo, commit, change, repo_dir, rev_range)
                  for change in _raw_changes(repo, commit, repo_dir)]
        author, message = _author_and_message(repo, commit)
        subject, _, body = message.partition("\n")
        out.append(CommitInfo(
            sha=commit.hexsha, root=not commit.parents,
            author_name=author or "Unknown",
            author_email=commit.author.email or "unknown@localhost",
            date=commit.authored_datetime.date().isoformat(), subject=subject.strip(),
            body=body.strip(), deltas=tuple(deltas),
            parent=commit.parents[0].hexsha if commit.parents else None))
    return out
