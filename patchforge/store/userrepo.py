"""Reading a user's own git repository (`import git RANGE --repo DIR`) through GitPython.

This is the one module that imports GitPython: the upstream store in the cache is driven with
plain git processes (its hot paths cannot afford GitPython's import time), while a user's
checkout is read here, once per import, where GitPython's object model (commits, authors, diffs
with blob contents) is exactly what is needed.
"""
from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from patchforge.errors import UsageError
from patchforge.store.git import redirecting_git_vars
from patchforge.model.record import record


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
    deltas: tuple[FileDelta, ...]


def _mode(blob) -> str:
    return f"{blob.mode:06o}" if blob is not None else "100644"


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

    Renames are reported as a deletion plus an addition (rename detection off), so that the
    patch made from them never depends on a similarity heuristic.
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


def _read_commits(repo_dir: Path, rev_range: str) -> list[CommitInfo]:
    import git  # GitPython: imported only when a user repository is read

    try:
        repo = git.Repo(repo_dir)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise UsageError(f"{repo_dir} is not a git repository") from None
    try:
        commits = list(repo.iter_commits(rev_range, reverse=True))
    except git.GitCommandError as exc:
        raise UsageError(f"cannot read {rev_range!r} in {repo_dir}: {_git_says(exc)}",
                         hint="name commits of that repository, e.g. BASE..TIP (`git log "
                              "--oneline BASE..TIP` there lists what would be imported)") \
            from None
    merges = [c for c in commits if len(c.parents) > 1]
    if merges:
        summary = merges[0].summary
        if isinstance(summary, bytes):
            summary = summary.decode("utf-8", "replace")
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
        parent = commit.parents[0] if commit.parents else git.NULL_TREE
        deltas = []
        try:
            changed = commit.diff(parent, R=True, create_patch=False, no_renames=True)
        except (ValueError, git.GitCommandError) as exc:
            raise UsageError(f"cannot read commit {commit.hexsha} in {repo_dir}: {exc}") from None
        for diff in changed:
            try:
                old = diff.a_blob.data_stream.read() if diff.a_blob is not None and \
                    not diff.new_file else None
                new = diff.b_blob.data_stream.read() if diff.b_blob is not None and \
                    not diff.deleted_file else None
            except ValueError as exc:  # GitPython's word for an object the repository lacks
                raise UsageError(f"cannot read {diff.b_path or diff.a_path} of commit "
                                 f"{commit.hexsha} in {repo_dir}: {exc}") from None
            deltas.append(FileDelta(
                old_path=diff.a_path if old is not None else None,
                new_path=diff.b_path if new is not None else None,
                old=old, new=new,
                old_mode=_mode(diff.a_blob) if old is not None else _mode(diff.b_blob),
                new_mode=_mode(diff.b_blob) if new is not None else _mode(diff.a_blob)))
        message = commit.message if isinstance(commit.message, str) else \
            commit.message.decode("utf-8", "surrogateescape")
        subject, _, body = message.partition("\n")
        out.append(CommitInfo(
            sha=commit.hexsha, author_name=commit.author.name or "Unknown",
            author_email=commit.author.email or "unknown@localhost",
            date=commit.authored_datetime.date().isoformat(), subject=subject.strip(),
            body=body.strip(), deltas=tuple(deltas)))
    return out
