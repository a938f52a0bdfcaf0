"""The stack repository's own pull request for a `bump`: a commit of what the bump wrote, on
`patchforge/bump-<tag>`, pushed, and the pull request opened or updated through the forge.

The commit is made with a temporary index seeded from HEAD, so the user's checkout, index and
current branch are never touched; it holds only the files patchforge owns (the series, the
lock, the overlays unless git ignores them: a stack may make them at deploy time). The branch
belongs to the bump and is force-pushed: running the bump again for the same nightly updates the
same pull request instead of opening a second one.
"""
from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import PatchforgeError, StoreError, UsageError
from patchforge.model.record import record
from patchforge.store.git import run_git

if TYPE_CHECKING:
    from patchforge.project import Project

_REMOTE_REPO = re.compile(r"(?:[:/])(?P<owner>[A-Za-z0-9][\w.-]*)/(?P<name>[\w.-]+?)(?:\.git)?/?$")


@record
class StackPullRequest:
    action: str  # opened | updated | planned | nothing
    branch: str
    repo: str | None
    base: str | None
    title: str
    commit: str | None = None
    number: int | None = None
    url: str | None = None

    def to_json(self) -> dict:
        return {"action": self.action, "branch": self.branch, "repo": self.repo,
                "base": self.base, "title": self.title, "commit": self.commit,
                "number": self.number, "url": self.url}


def branch_for(tag: str) -> str:
    return f"patchforge/bump-{tag}"


def _git(root: Path, *args: str, env: dict | None = None, what: str) -> str:
    proc = run_git(*args, cwd=root, env=env, user_config=True, ok=None)
    if proc.returncode != 0:
        err = proc.stderr.decode("utf-8", "replace").strip()
        from patchforge.pr.draft import _redact
        from patchforge.store.gitstore import remote_gave_no_answer

        failed = StoreError(f"{what} failed: {_redact(err) or 'exit ' + str(proc.returncode)}")
        failed.gave_up = remote_gave_no_answer(err)  # no answer from the remote: exit 75
        raise failed
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def stack_repo_name(project: Project, root: Path, remote: str) -> str:
    """owner/name of the stack repository: `[forge] repo`, else read from the remote's URL."""
    if project.config.forge.repo:
        return project.config.forge.repo
    url = _git(root, "remote", "get-url", "--", remote,
               what=f"reading the URL of remote {remote}")
    match = _REMOTE_REPO.search(url)
    if not match or "://" not in url and "@" not in url:
        raise UsageError(f"cannot tell the forge repository of remote {remote}",
                         hint="set `repo = \"OWNER/NAME\"` under [tool.patchforge.forge]")
    # OWNER/NAME names a repository on the remote's host only: asked of a forge that answers
    # for another host, it is another repository (or none), and the pull request would be
    # opened there.
    from patchforge.net.forge import web_hosts

    forge = project.config.forge
    host = _remote_host(url)
    hosts = web_hosts(forge.api_url, forge.web_host)
    if host is not None and host not in {h.rsplit(":", 1)[0] for h in hosts}:
        raise UsageError(f"remote {remote} is on {host}, but the configured forge "
                         f"({forge.api_url}) answers for {', '.join(sorted(hosts))}: its "
                         f"{match['owner']}/{match['name']} would be another repository",
                         hint="point forge.api-url (and forge.web-host, for a proxy) at the "
                              "remote's forge, or name the repository with forge.repo")
    return f"{match['owner']}/{match['name']}"


def _remote_host(url: str) -> str | None:
    """The host of a git remote URL (`https://H/...`, `ssh://git@H:port/...`, scp-like
    `git@H:owner/name`), lower case and without a port; None when there is none."""
    from urllib.parse import urlsplit

    if "://" in url:
        host = (urlsplit(url).hostname or "").lower() or None
    else:
        scp = re.match(r"^(?:[^@/]+@)?(?P<host>[^:/]+):", url)
        host = scp["host"].lower() if scp else None
    # GitHub's SSH over port 443 is github.com's.
    return "github.com" if host == "ssh.github.com" else host


def require_identity(project: Project) -> None:
    """Refused (UsageError) before a bump moves anything when git has no identity to commit
    it with in the stack repository (no user.name/user.email, no GIT_AUTHOR_*): the commit
    is the user's or the job's, never a made-up one, and without this the stack was moved and
    written before the commit failed, its hint pointing at the forge."""
    for what in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        proc = run_git("var", what, cwd=project.root, user_config=True, ok=None)
        if proc.returncode != 0:
            raise UsageError(
                "bump --open-pr commits the bump in the stack repository, and git has no "
                "identity to make it with here (user.name and user.email); nothing was moved",
                hint="`git config user.name \"NAME\"` and `git config user.email ADDRESS` in "
                     "the stack's checkout (a CI job: set them before the bump, as "
                     "actions/bump does), or GIT_AUTHOR_NAME/EMAIL and "
                     "GIT_COMMITTER_NAME/EMAIL")


def require_pushable(project: Project, remote: str) -> None:
    """Refused (UsageError) before a bump moves anything when its pull request could not be
    made from this checkout: no git repository, a detached HEAD (a CI checkout of a tag or of
    a pull request's merge commit: no branch for the pull request to go against), or no
    `remote` to push the bump's branch to. Without this the stack was moved and written,
    then the run failed, its hint pointing at the forge."""
    proc = run_git("rev-parse", "--show-toplevel", cwd=project.root, user_config=True, ok=None)
    if proc.returncode != 0:
        raise UsageError(f"bump --open-pr commits the bump in the stack's git repository, and "
                         f"{project.root} is in none; nothing was moved",
                         hint="run it in the stack's git checkout, or without --open-pr")
    root = Path(proc.stdout.decode("utf-8", "surrogateescape").strip())
    if run_git("symbolic-ref", "--quiet", "HEAD", cwd=root, user_config=True,
               ok=None).returncode != 0:
        raise UsageError("HEAD is detached in the stack's checkout (a CI checkout of a tag or "
                         "of a pull request's merge commit): the bump's pull request goes "
                         "against a branch; nothing was moved",
                         hint="check out the branch it goes against (`git checkout main`; "
                              "actions/checkout: `ref: main`)")
    if run_git("remote", "get-url", "--", remote, cwd=root, user_config=True,
               ok=None).returncode != 0:
        names = run_git("remote", cwd=root, user_config=True, ok=None).stdout.decode(
            "utf-8", "replace").split()
        raise UsageError(f"the stack repository has no remote {remote!r} to push the bump's "
                         "branch to; nothing was moved",
                         hint=(f"name one with --remote ({', '.join(names)})" if names else
                               f"`git remote add {remote} URL`, or name one with --remote"))


def _ignored(root: Path, path: Path, *, index: bool = False) -> bool:
    """Whether the stack repository's ignore rules (.gitignore, info/exclude) keep `path` out
    of git. Asked without the index by default: a directory ignored whose files were
    force-added is still one `git add -A` refuses to name. With `index`, a path git tracks (a
    file force-added, a directory holding one) is not ignored: `git add` takes its changes."""
    proc = run_git("check-ignore", "-q", *([] if index else ["--no-index"]), "--",
                   str(path) + ("/" if path.is_dir() else ""),
                   cwd=root, user_config=True, ok=None)
    if proc.returncode not in (0, 1):
        raise StoreError("reading the stack repository's ignore rules failed: "
                         + proc.stderr.decode("utf-8", "replace").strip())
    return proc.returncode == 0


def require_committable(project: Project) -> None:
    """Refused (UsageError) before a bump moves anything when git ignores the series or the
    lock in the stack repository and tracks nothing of it: the bump's commit could not hold
    the move (a fix dropped as landed is a new file under upstreamed/), and without this the
    stack was moved and written before `git add` failed. A lock git tracks under an ignore
    rule (a `*.lock` rule, the file force-added) is committed like any tracked file. Overlays
    git ignores are left out of the commit instead: a stack that makes them at deploy time
    keeps them out of git on purpose."""
    root = Path(_git(project.root, "rev-parse", "--show-toplevel",
                     what="finding the stack repository (it must be a git repository)"))
    for path in (project.series_root, project.lock_path):
        if _ignored(root, path, index=True):
            shown = os.path.relpath(path, root) + ("/" if path == project.series_root else "")
            raise UsageError(
                f"git ignores {shown} in the stack repository (`git check-ignore -v {shown}` "
                "names the rule): the bump's commit could not hold the move; nothing was moved",
                hint=f"take {shown} out of the ignore rule and commit it, or run the bump "
                     "without --open-pr")
    new = _ignored_new_files(project, root)
    if new:
        shown = new[0] + (f" (and {len(new) - 1} more)" if len(new) > 1 else "")
        # A rule on the name alone (a global `*.patch`) is taken back by a line of the
        # stack's own .gitignore, which git reads after it; a directory's rule is not.
        rule = run_git("check-ignore", "-v", "--", new[0], cwd=root, user_config=True,
                       ok=None).stdout.decode("utf-8", "replace").split("\t")[0]
        pattern = rule.rsplit(":", 1)[-1] if rule.count(":") >= 2 else ""
        back = "/series/**/*.patch" if re.fullmatch(r"\*+(\.patch)?", pattern) and \
            all(p.endswith(".patch") for p in new) else None
        raise UsageError(
            f"git ignores files a bump writes in the series, such as {shown} (`git check-ignore "
            f"-v {new[0]}` names the rule): the bump's commit would leave them out, and its pull "
            "request drop a landed fix from the series without keeping it under upstreamed/; "
            "nothing was moved",
            hint=(f"the line `!{back}` in the stack's .gitignore, committed, takes them back "
                  "from that rule" if back else "take them out of that rule") +
                 "; or run the bump without --open-pr")


def _ignored_new_files(project: Project, root: Path) -> list[str]:
    """The files a bump may add to the series that the stack repository's ignore rules keep
    out of git (a global `core.excludesFile` with `*.patch`), paths from its top: the copy
    under upstreamed/ of each fix of the series (a fix dropped as landed), and the ledger
    (history.jsonl, PATCHES.md). `git add -A` leaves such a file out without a word; files git
    tracks already are not ignored (asked with the index)."""
    probes = [project.series_root / "history.jsonl", project.series_root / "PATCHES.md"]
    for upstream in project.config.upstreams:
        try:
            names = project.patch_names(upstream)
        except PatchforgeError:
            continue  # (refused where the bump reads the series)
        probes += [project.series_dir(upstream) / "upstreamed" / name for name in names]
    paths = [os.path.relpath(p, root) for p in probes]
    proc = run_git("check-ignore", "--stdin", "-z", cwd=root, user_config=True, ok=None,
                   input=b"".join(os.fsencode(p) + b"\0" for p in paths))
    if proc.returncode not in (0, 1):
        raise StoreError("reading the stack repository's ignore rules failed: "
                         + proc.stderr.decode("utf-8", "replace").strip())
    return [os.fsdecode(p) for p in proc.stdout.split(b"\0") if p]


def _bump_paths(project: Project) -> list[str]:
    """The files a bump's commit holds (those patchforge owns) that exist."""
    return [str(p) for p in (project.series_root, project.lock_path, project.overlays_dir)
            if p.exists()]


def uncommitted_bump_files(project: Project) -> list[str]:
    """The files of the bump's commit (the series, the lock, the overlays) whose HEAD version
    differs from the checkout's or the index's, or that HEAD lacks: commit_bump would carry
    them in the bump's commit. Paths from the stack repository's top."""
    root = Path(_git(project.root, "rev-parse", "--show-toplevel",
                     what="finding the stack repository (it must be a git repository)"))
    paths = _bump_paths(project)
    if not paths:
        return []
    proc = run_git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames",
                   "--", *paths, cwd=root, user_config=True, ok=None)
    if proc.returncode != 0:
        raise StoreError("reading the stack repository's changes failed: "
                         + proc.stderr.decode("utf-8", "replace").strip())
    # Each entry is "XY PATH" (X: the index against HEAD, Y: the checkout against the index).
    return [os.fsdecode(entry[3:]) for entry in proc.stdout.split(b"\0") if entry]


def commit_bump(project: Project, message: str) -> tuple[str | None, str]:
    """(commit, base branch): the bump's files committed on top of HEAD without touching the
    checkout; commit is None when they are what HEAD has already."""
    root = Path(_git(project.root, "rev-parse", "--show-toplevel",
                     what="finding the stack repository (it must be a git repository)"))
    head = _git(root, "rev-parse", "HEAD", what="reading HEAD")
    base = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", what="reading the branch")
    paths = _bump_paths(project)
    with tempfile.TemporaryDirectory(prefix="patchforge-bump-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        _git(root, "read-tree", head, env=env, what="seeding a temporary index")
        # Overlays git ignores (made at deploy time) stay out: their files git tracks all the
        # same are updated (`add -u`), and `add -A` would refuse the ignored directory.
        ignored = [p for p in paths if _ignored(root, Path(p))]
        for how, chosen in (("-A", [p for p in paths if p not in ignored]), ("-u", ignored)):
            if chosen:
                _git(root, "add", how, "--", *chosen, env=env, what="adding the bump's files")
        tree = _git(root, "write-tree", env=env, what="writing the bump's tree")
    if tree == _git(root, "rev-parse", f"{head}^{{tree}}", what="reading HEAD's tree"):
        return None, base
    commit = _git(root, "commit-tree", tree, "-p", head, "-m", message,
                  what="committing the bump")
    return commit, base


def _remote_tip_of_ours(root: Path, remote: str, branch: str, commit: str) -> str | None:
    """The tip of the bump's branch on `remote` (None when it has none), refused when it is
    not a bump's own commit: a person's fix-up pushed onto the bump's pull request (or the
    bump's commit amended), which the next run's force-push erased, exit 0. A bump's commit
    has this run's author and committer and a bump's title (ops.bump_report.title); where the
    history is whole, it is also the one commit on the base. A shallow checkout (CI's
    default) fetches the tip alone, as shallow: its base is not there to count from."""
    listed = _git(root, "ls-remote", "--heads", "--", remote, f"refs/heads/{branch}",
                  what=f"asking {remote} for {branch}")
    if not listed:
        return None
    tip = listed.split()[0]
    shallow = _git(root, "rev-parse", "--is-shallow-repository",
                   what="reading the checkout") == "true"
    _git(root, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
         *(["--depth=1"] if shallow else []), "--", remote, f"refs/heads/{branch}",
         what=f"fetching {branch} from {remote}")
    identity = "--format=%an <%ae>%n%cn <%ce>%n%s"
    theirs = _git(root, "log", "-1", identity, tip, what=f"reading {branch}").split("\n")
    ours = _git(root, "log", "-1", identity, commit, what="reading the bump").split("\n")
    on_base = 1
    if not shallow:
        parent = _git(root, "rev-parse", f"{commit}^", what="reading the bump's base")
        on_base = len(_git(root, "rev-list", f"{parent}..{tip}",
                           what=f"reading {branch}").split())
    if on_base and (theirs[:2] != ours[:2] or not theirs[2].startswith("Bump ")
                    or on_base > 1):
        raise UsageError(f"{branch} on {remote} holds commits patchforge did not make "
                         f"({tip[:12]} by {theirs[0]}: {theirs[2]!r}"
                         + (f", {on_base} commits on the base" if on_base > 1 else "")
                         + "): the bump would push over them; nothing was pushed",
                         hint=f"merge or close its pull request (or fold the commits in and "
                              f"delete the branch: `git push {remote} --delete {branch}`), "
                              "then run the bump again")
    return tip


def open_stack_pull(project: Project, forge, *, tag: str, title: str, body: str,
                    remote: str = "origin", dry_run: bool = False) -> StackPullRequest:
    """Commit, push and open (or update) the bump's pull request; with `dry_run` only say what
    would be done (nothing is committed, pushed or sent)."""
    branch = branch_for(tag)
    root = Path(_git(project.root, "rev-parse", "--show-toplevel",
                     what="finding the stack repository (it must be a git repository)"))
    repo = stack_repo_name(project, root, remote)
    if dry_run:
        base = _git(root, "symbolic-ref", "--quiet", "--short", "HEAD", what="reading the branch")
        return StackPullRequest("planned", branch, repo, base, title)
    commit, base = commit_bump(project, f"{title}\n\n{body}")
    if commit is None:
        return StackPullRequest("nothing", branch, repo, base, title)
    there = _remote_tip_of_ours(root, remote, branch, commit)
    # Replaced only as it was just seen: a push to the branch meanwhile fails this one.
    _git(root, "push", "--quiet", "--no-verify", f"--force-with-lease=refs/heads/{branch}:"
         f"{there or ''}", "--", remote, f"{commit}:refs/heads/{branch}",
         what=f"pushing {branch} to {remote}")
    owner = repo.split("/")[0]
    existing = forge.find_open_pull(repo, f"{owner}:{branch}")
    if existing is not None:
        pull = forge.update_pull(repo, existing.number, title=title, body=body)
        action = "updated"
    else:
        pull = forge.create_pull(repo, title, body, branch, base, draft=True)
        action = "opened"
    # The address printed and kept is the pull request's, made of its checked parts, as `pr`
    # records it: the forge's own text could carry a newline or terminal escapes into the
    # command's output and the kept report.
    from patchforge.pr.submit import check_pull_url

    url = check_pull_url(pull.html_url or pull.url, repo, pull.number,
                         getattr(forge, "api_url", None), "the bump's report",
                         getattr(forge, "web_host", None),
                         hint=f"check the forge's pull request {repo}#{pull.number} by hand")
    return StackPullRequest(action, branch, repo, base, title, commit, pull.number, url)
