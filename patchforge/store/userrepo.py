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
    root: bool  # a commit without a parent: its change is every file it holds, added
    deltas: tuple[FileDelta, ...]
    parent: str | None = None  # the first parent's id, the commit its change is made on


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


def _summary(commit) -> str:
    summary = commit.summary
    return summary.decode("utf-8", "replace") if isinstance(summary, bytes) else summary


def commit_named(sha: str, subject: str) -> str:
    """A commit as a refusal names it: its short id and subject."""
    return f"commit {sha[:12]} ({subject})"


def _refuse_unsupported(diff, commit, repo_dir: Path, rev_range: str) -> None:
    """Refuse a change a patch cannot carry, naming the range, the repository, the commit and
    the path (as the merge refusal does), before any diff is made of it: the diff writer's own
    refusal named none of them (`unsupported file mode 160000`, `<diff>:2`)."""
    modes = {_mode(blob) for blob in (diff.a_blob, diff.b_blob) if blob is not None}
    path = diff.b_path or diff.a_path
    why = None
    if "160000" in modes:
        # A submodule is a commit id in the tree, not a file: no patch (git apply, quilt,
        # an overlay) carries one.
        what = ("adds" if diff.new_file else "removes" if diff.deleted_file else "changes")
        why = f"{what} submodule {path}: a patch carries files only"
    elif diff.a_blob is not None and diff.b_blob is not None and \
            ("120000" in modes) and len(modes) > 1:
        why = (f"turns {path} from a symlink into a file" if _mode(diff.a_blob) == "120000"
               else f"turns {path} from a file into a symlink") + \
            ": a patch of the series cannot change a file's type"
    if why is not None:
        raise UsageError(f"{rev_range} in {repo_dir}: "
                         f"{commit_named(commit.hexsha, _summary(commit))} {why}",
                         hint="leave that commit out of the range: import the commits before "
                              "and after it as two ranges (`BASE..{0}~1`, then `{0}..TIP`)"
                              .format(commit.hexsha[:12]))


def _refuse_cut_path(repo, diff, commit, repo_dir: Path, rev_range: str) -> None:
    """Refuse a commit whose path GitPython did not read whole: a name holding a newline
    came back cut at it (`we` for `we<LF>ird.py`), and the fix became a patch of another
    file. A path the commit (or its parent) does not have is that; git's own NUL-separated
    names say which, and no patch can carry a newline in a name (git apply, GNU patch and
    quilt read one name a line)."""
    parent_tree = commit.parents[0].tree if commit.parents else None
    for path, tree in ((None if diff.deleted_file else diff.b_path, commit.tree),
                       (None if diff.new_file else diff.a_path, parent_tree)):
        if path is None or tree is None:
            continue
        try:
            tree.join(path)
        except KeyError:
            break
    else:
        return
    from patchforge.apply.diffparse import c_quote

    parent = commit.parents[0].hexsha if commit.parents else "--root"
    names = repo.git.diff_tree("-z", "-r", "--no-renames", "--name-only", "--no-commit-id",
                               parent, commit.hexsha)
    odd = [name for name in names.split("\0") if any(c < " " for c in name)]
    said = ", ".join(c_quote(name.encode("utf-8", "surrogateescape")).decode(
        "utf-8", "replace") for name in odd) or (diff.b_path or diff.a_path)
    raise UsageError(f"{rev_range} in {repo_dir}: {commit_named(commit.hexsha, _summary(commit))}"
                     f" changes {said}: a file name with a newline or another control "
                     "character cannot be carried by a patch (git apply, patch and quilt read "
                     "one name a line)",
                     hint="leave that commit out of the range: import the commits before and "
                          "after it as two ranges (`BASE..{0}~1`, then `{0}..TIP`), or rename "
                          "the file".format(commit.hexsha[:12]))


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
        deltas = []
        try:
            if commit.parents:
                # GitPython diffs the commit against the argument (`diff-tree COMMIT PARENT`):
                # R=True turns it into the commit's own change, parent to commit.
                changed = commit.diff(commit.parents[0], R=True, create_patch=False,
                                      no_renames=True)
            else:
                # A root commit: against NULL_TREE GitPython runs `diff-tree --root COMMIT`,
                # already the commit's own change (its files added, as `git format-patch
                # --root` writes them). Reversed, a commit that adds a fix became a patch
                # deleting it, which status then took for landed upstream.
                changed = commit.diff(git.NULL_TREE, create_patch=False, no_renames=True)
        except (ValueError, git.GitCommandError) as exc:
            raise UsageError(f"cannot read commit {commit.hexsha} in {repo_dir}: {exc}") from None
        for diff in changed:
            _refuse_unsupported(diff, commit, repo_dir, rev_range)  # before a gitlink is read
            _refuse_cut_path(repo, diff, commit, repo_dir, rev_range)
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
            sha=commit.hexsha, root=not commit.parents,
            author_name=commit.author.name or "Unknown",
            author_email=commit.author.email or "unknown@localhost",
            date=commit.authored_datetime.date().isoformat(), subject=subject.strip(),
            body=body.strip(), deltas=tuple(deltas),
            parent=commit.parents[0].hexsha if commit.parents else None))
    return out
