"""Landed detection on real history: patchforge `status --against` next to `git cherry`.

    python3 benchmarks/landed.py --repo DIR --base REV --target REV [--mainline REF]
        [--branches GLOB ...] [--max-exact 40] [--max-unmerged 30] [--kinds k,k] [--json FILE]

Takes any git repository and two revisions BASE (the pin a downstream carries its fixes on) and
TARGET (a newer upstream that is a descendant of BASE), and builds cases from the real history:

  exact      a commit of BASE..TARGET (first parent), carried as a backport onto BASE; landed
             unless it is reverted later in BASE..TARGET (those are `reverted`).
  reverted   a commit of BASE..TARGET that a later commit of BASE..TARGET reverts (and nothing
             re-applies): NOT landed; git's patch-ids still find the original commit.
  backport   a commit of a release branch (`--branches`, default `release/*`), not on the
             mainline, carried onto BASE; its mainline original is named by a
             `(cherry picked from commit X)` line or the same pull-request number `(#N)` in the
             subject. Landed when the original is in BASE..TARGET and not reverted there; not
             landed when the original comes after TARGET.
  squash     a branch (any ref) whose commits, a series of 2 or more, landed on the mainline as
             one squash commit of BASE..TARGET (the branch's cumulative diff and that commit
             change the same files with the same removed and added lines; the patch-ids differ
             by context, as the squash was applied where the mainline had moved on): every commit
             of the series is landed. The series is carried onto the branch's own fork point.
  undone     (from the three kinds above) a landing that a later commit of BASE..TARGET undid in
             part without a revert message: it reverses one of the landing's hunks exactly
             (what was added taken out, what was removed put back), and TARGET's file has
             the old lines and not the new ones (the old code is back). NOT
             landed: a tool that drops the fix loses that part. Decided when the report is
             made, from the history (`undone_by`).
  later      (--split-files) one file's change of a mainline commit after TARGET, carried
             onto BASE, that TARGET does not already have (a 3-way merge onto TARGET still
             changes something): NOT landed.
  unmerged   a commit of a branch that is not in TARGET, has no counterpart there, and whose
             change git's 3-way merge onto TARGET does not find already made: NOT landed.

Every case is a series (one patch, or the squash series) made by applying the commits' own diffs
onto BASE with `git apply --cached` (`--3way` when plain apply fails), so it applies at the pin.
For each case the script runs `git cherry TARGET <series> BASE` and `patchforge status --against
TARGET` in a project pinned at BASE (the series brought in with `patchforge import git`), and
prints, per kind and in total, how many landed patches each found (recall) and how many patches
it called landed that are not (precision). Truth comes from history only (ancestry, revert
messages, cherry-pick links, pull-request numbers), never from either tool.

Everything is built once under `<bench cache>/landed/<repo>-<base>-<target>/` (a scratch bare
repository borrowing the source repository's objects, the projects, and a patchforge cache of
their own); later runs only run the two tools. The source repository is never written to.
"""
from __future__ import annotations

import argparse
import atexit
import concurrent.futures
import fnmatch
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

import scenario  # noqa: E402  (the bench cache location and the isolated git environment)

CASES_FORMAT = 5  # bump when the case rules change
MAX_SERIES = 8    # longest squash series taken
_PR_RE = re.compile(r"\(#(\d+)\)\s*$")
_CHERRY_RE = re.compile(r"\(cherry picked from commit ([0-9a-f]{40})\)")
_REVERTS_RE = re.compile(r"This reverts commit ([0-9a-f]{7,40})")


_STARTED = time.monotonic()


def log(msg: str) -> None:
    print(f"[{time.monotonic() - _STARTED:6.1f}s] {msg}", file=sys.stderr, flush=True)


# git runs in an empty directory of its own: with GIT_DIR set, the current directory is the
# work tree, and `git apply --3way` writes the files of a conflicted case there (it wrote
# upstream files into whatever directory the script was started from).
_NOWHERE = tempfile.mkdtemp(prefix="landed-cwd-")
atexit.register(shutil.rmtree, _NOWHERE, True)


class Git:
    """git in one repository (GIT_DIR), with the bench's isolated environment."""

    def __init__(self, git_dir: Path, env: dict | None = None) -> None:
        self.git_dir = git_dir
        self.env = {**scenario.git_env(), "GIT_DIR": str(git_dir), **(env or {})}

    def run(self, *args: str, input: bytes | None = None, check: bool = True,
            env: dict | None = None) -> subprocess.CompletedProcess:
        proc = subprocess.run(["git", *args], input=input, capture_output=True, cwd=_NOWHERE,
                              env={**self.env, **(env or {})})
        if check and proc.returncode != 0:
            raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.decode(errors='replace')}")
        return proc

    def out(self, *args: str, **kw) -> str:
        return self.run(*args, **kw).stdout.decode("utf-8", "replace")


@dataclass
class Case:
    id: str
    kind: str
    commits: list[str]            # the source commits, in series order
    truth: list[bool]             # per patch: landed in TARGET
    note: str = ""
    tip: str = ""                 # the series' last commit in the scratch repository
    binary: bool = False
    base: str = ""                # where the series is carried (BASE unless said here)
    paths: list[str] = field(default_factory=list)  # only these files of the commits (split)


# ----------------------------------------------------------------------------------------------
# Reading the history

@dataclass
class History:
    base: str
    target: str
    mainline: list[str]                       # BASE..TARGET, first parent, oldest first
    subjects: dict[str, str] = field(default_factory=dict)
    bodies: dict[str, str] = field(default_factory=dict)
    patch_ids: dict[str, str] = field(default_factory=dict)
    alive: dict[str, bool] = field(default_factory=dict)
    by_pr: dict[str, str] = field(default_factory=dict)   # PR number -> mainline commit (all)


def read_history(src: Git, base: str, target: str, mainline_ref: str) -> History:
    mainline = src.out("rev-list", "--first-parent", "--reverse", "--no-merges",
                       f"{base}..{target}").split()
    hist = History(base, target, mainline)
    raw = src.out("log", "--format=%H%x00%s%x00%B%x01", "--no-walk=unsorted", "--stdin",
                  input="\n".join(mainline).encode()) if mainline else ""
    for record in raw.split("\x01"):
        record = record.strip("\n")
        if not record:
            continue
        sha, subject, body = record.split("\x00", 2)
        hist.subjects[sha], hist.bodies[sha] = subject, body
    hist.patch_ids = patch_ids(src, mainline)
    # Pull-request numbers of the whole mainline (an original may come after TARGET).
    for line in src.out("log", "--first-parent", "--format=%H %s", mainline_ref,
                        target).splitlines():
        sha, _, subject = line.partition(" ")
        match = _PR_RE.search(subject)
        if match:
            hist.by_pr.setdefault(match.group(1), sha)
    # Reverts inside BASE..TARGET: a commit is alive unless an alive later commit reverts it;
    # a revert of a revert brings it back. Walk newest first.
    full = {c[:12]: c for c in mainline}
    reverts: dict[str, str] = {}
    for sha in mainline:
        for short in _REVERTS_RE.findall(hist.bodies.get(sha, "")):
            original = full.get(short[:12])
            if original is not None:
                reverts[original] = sha
    for sha in reversed(mainline):
        by = reverts.get(sha)
        hist.alive[sha] = by is None or not hist.alive.get(by, True)
    # A change re-applied later (same patch-id, alive) is in TARGET again.
    alive_ids = {pid for sha, pid in hist.patch_ids.items() if hist.alive[sha]}
    for sha in mainline:
        if not hist.alive[sha] and hist.patch_ids.get(sha) in alive_ids:
            hist.alive[sha] = True
    return hist


def patch_ids(repo: Git, commits: list[str]) -> dict[str, str]:
    """commit -> `git patch-id --stable` of its diff, in one log and one patch-id run."""
    if not commits:
        return {}
    diffs = repo.run("log", "-p", "--no-walk=unsorted", "--stdin", "--format=commit %H",
                     "--no-renames", "--full-index", input="\n".join(commits).encode(),
                     check=False).stdout  # a mirror may lack some objects: what it can
    out = repo.run("patch-id", "--stable", input=diffs).stdout.decode()
    return {line.split()[1]: line.split()[0] for line in out.splitlines()}


def is_ancestor(repo: Git, a: str, b: str) -> bool:
    return repo.run("merge-base", "--is-ancestor", a, b, check=False).returncode == 0


# ----------------------------------------------------------------------------------------------
# Making the series: a commit's own diff applied onto another commit, without a checkout

def carry(scratch: Git, commit: str, onto: str, tmp: Path,
          paths: list[str] | None = None) -> tuple[str | None, bool]:
    """`commit`'s change (to `paths` only, when given) applied onto `onto` (a new commit with
    its author and message), or None when git apply cannot place it; and whether the change
    has binary content."""
    got = scratch.run("diff-tree", "-p", "--binary", "--full-index", "--no-renames",
                      f"{commit}^", commit, *(["--", *paths] if paths else []), check=False)
    diff = got.stdout
    if got.returncode != 0 or not diff.strip():
        return None, False
    binary = b"\nGIT binary patch\n" in diff
    if re.search(rb"(?m)^(?:new file |deleted file |new |old )?mode 160000|^index \S+ 160000",
                 diff):
        return None, binary  # a submodule's pointer: not a file a patch carries
    index = tmp / f"index-{commit}-{len(paths or ())}"
    env = {"GIT_INDEX_FILE": str(index)}
    scratch.run("read-tree", onto, env=env)
    done = scratch.run("apply", "--cached", env=env, input=diff, check=False).returncode == 0
    if not done:
        scratch.run("read-tree", onto, env=env)
        done = scratch.run("apply", "--cached", "--3way", env=env, input=diff,
                           check=False).returncode == 0
    if not done:
        index.unlink(missing_ok=True)
        return None, binary
    tree = scratch.out("write-tree", env=env).strip()
    index.unlink(missing_ok=True)
    if tree == scratch.out("rev-parse", f"{onto}^{{tree}}").strip():
        return None, binary
    info = scratch.out("show", "-s", "--format=%an%x00%ae%x00%ad%x00%B", "--date=raw", commit)
    name, mail, date, message = info.split("\x00", 3)
    new = scratch.out("commit-tree", tree, "-p", onto, input=message.encode(), env={
        "GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": mail, "GIT_AUTHOR_DATE": date}).strip()
    return new, binary


def merge_changes(scratch: Git, target: str, tip: str) -> bool:
    """Whether git's 3-way merge of the series onto TARGET changes TARGET (or conflicts)."""
    proc = scratch.run("merge-tree", "--write-tree", target, tip, check=False)
    if proc.returncode != 0:
        return True
    tree = proc.stdout.decode().split()[0]
    return tree != scratch.out("rev-parse", f"{target}^{{tree}}").strip()


# ----------------------------------------------------------------------------------------------
# The cases

def build_cases(src: Git, scratch: Git, hist: History, args, tmp: Path) -> list[Case]:
    cases: list[Case] = []
    base, target = hist.base, hist.target

    def one(kind: str, commit: str, truth: bool, note: str = "") -> Case | None:
        tip, binary = carry(scratch, commit, base, tmp)
        if tip is None:
            return None
        case = Case(f"{kind}-{commit[:10]}", kind, [commit], [truth], note, tip, binary)
        cases.append(case)
        return case

    # exact and reverted
    alive = [c for c in hist.mainline if hist.alive[c]]
    dead = [c for c in hist.mainline if not hist.alive[c]]
    reverting = {c for c in hist.mainline if _REVERTS_RE.search(hist.bodies.get(c, ""))}
    picked = [c for c in alive if c not in reverting]
    if args.split_files:
        # A history of few, large commits (one per release): each changed file of a commit is
        # a case of its own, and a change from after TARGET is a case that has not landed.
        later = src.out("rev-list", "--first-parent", "--reverse", "--no-merges",
                        f"{target}..{args.mainline}").split()
        for commit, kind, truth in [*((c, "exact", True) for c in picked),
                                    *((c, "later", False) for c in later)]:
            names = [n for n in src.out("diff-tree", "-r", "--name-only", "--no-renames",
                                        "--diff-filter=M", f"{commit}^", commit).split("\n")
                     if n.endswith(".py")]
            for path in spread(names, args.split_files):
                tip, binary = carry(scratch, commit, base, tmp, [path])
                if tip is None or (not truth and not merge_changes(scratch, target, tip)):
                    continue
                cases.append(Case(f"{kind}-{commit[:10]}-{len(cases)}", kind, [commit],
                                  [truth], f"{hist.subjects.get(commit, commit[:10])}: {path}",
                                  tip, binary, paths=[path]))
    for commit in spread(picked, len(picked)):
        if args.split_files or sum(c.kind == "exact" for c in cases) >= args.max_exact:
            break
        one("exact", commit, True, hist.subjects[commit])
    for commit in dead:
        one("reverted", commit, False, hist.subjects[commit])
    log(f"  exact: {sum(c.kind == 'exact' for c in cases)}, "
        f"reverted: {sum(c.kind == 'reverted' for c in cases)}")

    # backports from release branches
    refs = src.out("for-each-ref", "--format=%(refname)", "refs/heads/", "refs/remotes/",
                   "refs/archive/").split()
    short = {r: r.split("/", 2)[2] if r.startswith("refs/heads/") or
             r.startswith("refs/archive/") else r.split("/", 3)[-1] for r in refs}
    release = [r for r in refs if any(fnmatch.fnmatchcase(short[r], g) for g in args.branches)]
    mainline_set = set(hist.mainline)
    seen: set[str] = set()
    for ref in release:
        for commit in src.out("rev-list", "--no-merges", "--reverse", ref, f"^{args.mainline}",
                              f"^{target}").split():
            if commit in seen:
                continue
            seen.add(commit)
            message = src.out("show", "-s", "--format=%s%x00%B", commit)
            subject, body = message.split("\x00", 1)
            original = None
            match = _CHERRY_RE.search(body)
            if match:
                original = match.group(1)
            elif _PR_RE.search(subject):
                original = hist.by_pr.get(_PR_RE.search(subject).group(1))
            if original is None or is_ancestor(src, original, base):
                continue  # no mainline original, or one the pin already has
            if original in mainline_set:
                truth = hist.alive[original]
            elif is_ancestor(src, original, target):
                continue  # in TARGET by a merge: not what this kind measures
            else:
                truth = False  # the original comes after TARGET
            one("backport", commit, truth, f"{short[ref]}: {subject} (original {original[:10]})")
    log(f"  backport: {sum(c.kind == 'backport' for c in cases)}")

    # squash-merged branches, and unmerged commits
    candidates: list[tuple[str, list[str]]] = []
    # Branches not in TARGET whose tip is from BASE's time to TARGET's: a squash commit of
    # BASE..TARGET was made from a branch of that time (and merge-base over every branch of
    # a large repository would take minutes).
    since = int(src.out("show", "-s", "--format=%ct", base)) - 14 * 86400
    until = int(src.out("show", "-s", "--format=%ct", target))
    for line in src.out("for-each-ref", "--format=%(refname) %(committerdate:unix)",
                        f"--no-merged={target}", "refs/heads/", "refs/remotes/",
                        "refs/archive/").splitlines():
        ref, _, when = line.rpartition(" ")
        if ref in release or not since <= int(when) <= until:
            continue
        merge_base = src.out("merge-base", ref, target, check=False).strip()
        if not merge_base:
            continue
        commits = src.out("rev-list", "--reverse", f"{merge_base}..{ref}").split()
        if not commits or len(commits) > 40:
            continue
        if src.out("rev-list", "--merges", f"{merge_base}..{ref}").strip():
            continue
        candidates.append((ref, commits))
    # A squash commit's change is the branch's cumulative change: same files, same change
    # blocks (removed and added lines, whitespace and context aside; the squash was applied
    # where main had moved on, so patch-ids of the two differ by their context lines).
    from patchforge.history import blocks_of_git_diff
    by_files: dict[frozenset, list[str]] = {}
    for chunk in src.out("log", "--no-walk=unsorted", "--stdin", "--name-only", "--no-renames",
                         "--format=%x01%H", input="\n".join(hist.mainline).encode()
                         ).split("\x01")[1:]:
        sha, *names = [n for n in chunk.split("\n") if n]
        if hist.alive.get(sha):
            by_files.setdefault(frozenset(names), []).append(sha)

    def file_blocks(old: str, new: str) -> dict[str, tuple] | None:
        got = src.run("diff-tree", "-p", "--no-renames", old, new, check=False)
        if got.returncode != 0:
            return None
        return {part.split(b"\n", 1)[0]: blocks_of_git_diff(part)
                for part in re.split(rb"(?m)^(?=diff --git )", got.stdout)
                if part.startswith(b"diff --git ")}

    squash_of: dict[str, str] = {}
    kept = []
    for ref, commits in candidates:
        merge_base = src.out("rev-parse", f"{commits[0]}^").strip()
        names = frozenset(n for n in src.out("diff-tree", "--name-only", "--no-renames", "-r",
                                             merge_base, commits[-1]).split("\n") if n)
        kept.append((ref, commits))
        if not 2 <= len(commits) <= MAX_SERIES or not names or names not in by_files:
            continue
        mine = file_blocks(merge_base, commits[-1])
        for squash in by_files[names]:
            if mine and mine == file_blocks(f"{squash}^", squash):
                squash_of[ref] = squash
                break
    used: set[str] = set()
    unmerged_pool: list[str] = []
    for ref, commits in kept:
        squash = squash_of.get(ref)
        if squash is not None and not used & set(commits):
            used.update(commits)
            # The branch's own fork point: a series rarely applies to an older pin.
            fork = src.out("rev-parse", f"{commits[0]}^").strip()
            if not is_ancestor(src, base, fork) or is_ancestor(src, squash, fork):
                continue
            tip = fork
            for commit in commits:
                tip, binary = carry(scratch, commit, tip, tmp)
                if tip is None:
                    break
            if tip is not None:
                cases.append(Case(f"squash-{commits[-1][:10]}", "squash", commits,
                                  [True] * len(commits),
                                  f"{short[ref]} -> {squash[:10]} {hist.subjects[squash]}", tip,
                                  base=fork))
            continue
        if squash is None and ref not in squash_of:
            unmerged_pool += [c for c in commits if c not in used]
    log(f"  squash: {sum(c.kind == 'squash' for c in cases)}")
    main_ids = set(hist.patch_ids.values())
    unmerged_pool = list(dict.fromkeys(unmerged_pool))
    pool_ids = patch_ids(src, unmerged_pool)
    taken = 0
    for commit in spread(unmerged_pool, len(unmerged_pool)):
        if taken >= args.max_unmerged:
            break
        if pool_ids.get(commit) in main_ids:
            continue
        subject = src.out("show", "-s", "--format=%s", commit).strip()
        match = _PR_RE.search(subject)
        if match and match.group(1) in hist.by_pr:
            continue
        tip, binary = carry(scratch, commit, base, tmp)
        if tip is None or not merge_changes(scratch, target, tip):
            continue  # TARGET already has this change by some other way: no clear truth
        cases.append(Case(f"unmerged-{commit[:10]}", "unmerged", [commit], [False], subject,
                          tip, binary))
        taken += 1
    log(f"  unmerged: {taken}")
    return cases


def landing_of(src: Git, case: Case) -> str | None:
    """The mainline commit a landed case's change arrived in."""
    if case.kind == "exact":
        return case.commits[0]
    found = re.search(r"(?:original|->) ([0-9a-f]{10})", case.note)
    return src.out("rev-parse", found.group(1)).strip() if found else None


def _hunk_lines(diff: str) -> dict[str, list[tuple[set[str], set[str]]]]:
    """path -> [(lines removed, lines added)] per hunk of a `-U0` diff, whitespace removed,
    lines shorter than 8 characters left out (a brace or a blank line proves nothing)."""
    found: dict[str, list[tuple[set[str], set[str]]]] = {}
    path = None
    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            path = line.split(" b/", 1)[-1]
            found.setdefault(path, [])
        elif line.startswith("@@") and path is not None:
            found[path].append((set(), set()))
        elif path is not None and found[path] and line[:1] in "+-" \
                and not line.startswith(("+++ ", "--- ")):
            text = "".join(line[1:].split())
            if len(text) >= 8:
                found[path][-1][0 if line[0] == "-" else 1].add(text)
    return found


def undone_by(src: Git, change: str, landing: str, target: str,
              paths: list[str]) -> str | None:
    """A commit of LANDING..TARGET that reverses one of CHANGE's hunks exactly (takes out what
    it added and puts back what it removed, both non-empty) while TARGET's file has the old
    lines again: the old code is back, so the change is no longer whole in TARGET, whatever a
    patch-id says. Truth from the history, without a revert message. CHANGE is the landing
    itself, or one commit of a branch squashed into it; `paths`: only those files of CHANGE
    (a case that carries part of it), or all when empty."""
    mine = _hunk_lines(src.out("diff-tree", "-p", "-U0", "--no-renames", f"{change}^",
                               change, "--", *paths))
    reversed_hunks = {p: {(frozenset(a), frozenset(r)) for r, a in hunks if r and a}
                      for p, hunks in mine.items()}
    reversed_hunks = {p: h for p, h in reversed_hunks.items() if h}
    if not reversed_hunks:
        return None
    log_text = src.out("log", "-p", "-U0", "--no-renames", "--topo-order", "--reverse",
                       "--ancestry-path", "--format=%x01%H", f"{landing}..{target}", "--",
                       *reversed_hunks)
    for chunk in log_text.split("\x01")[1:]:
        commit, _, diff = chunk.partition("\n")
        for path, hunks in _hunk_lines(diff).items():
            for minus, plus in hunks:
                if (frozenset(minus), frozenset(plus)) not in reversed_hunks.get(path, ()):
                    continue
                got = src.run("show", f"{target}:{path}", check=False)
                now = {"".join(line.split())
                       for line in got.stdout.decode("utf-8", "replace").split("\n")}
                if plus <= now and not minus & now:
                    return commit.strip()
    return None


def spread(items: list, count: int) -> list:
    """`count` items evenly spread over `items` (all of them when there are fewer)."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


# ----------------------------------------------------------------------------------------------
# Running the tools

def pf_env(cache: Path) -> dict:
    env = scenario.git_env({"PATCHFORGE_CACHE": str(cache), "NO_COLOR": "1"})
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    # Bytecode cached, as an installed package has it (not compiled again on every run).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(scenario.bench_dir() / "pycache")
    return env


def pf(env: dict, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([sys.executable, "-m", "patchforge", *args], capture_output=True,
                          env=env)
    if check and proc.returncode not in (0, 1):
        raise RuntimeError(f"patchforge {' '.join(args)} exited {proc.returncode}:\n"
                           f"{proc.stdout.decode(errors='replace')}"
                           f"{proc.stderr.decode(errors='replace')}")
    return proc


def make_project(env: dict, project: Path, source: Path, scratch: Path, base: str,
                 case: Case) -> str | None:
    """A patchforge project pinned at BASE with the case's series imported; None when it
    could be made, else why not (patchforge refused the series)."""
    if (project / "done").is_file():
        return (project / "done").read_text() or None
    shutil.rmtree(project, ignore_errors=True)
    pf(env, "init", "--standalone", str(project))
    pf(env, "--root", str(project), "upstream", "add", "up", "--git", str(source), "--at", base)
    got = pf(env, "--root", str(project), "import", "git", f"{base}..{case.tip}", "--repo",
             str(scratch), "--upstream", "up", check=False)
    why = "" if got.returncode == 0 else \
        f"import git exited {got.returncode}: " + got.stderr.decode(errors="replace").strip()
    (project / "done").write_text(why)
    return why or None


def pf_status(env: dict, project: Path, target: str
              ) -> tuple[list[str], list[str], float, list[str]]:
    """(state per patch in series order, evidence decided, seconds, what the status says of a
    change inside a hunk landed per patch: "landed in part: ..." or "")."""
    start = time.perf_counter()
    got = pf(env, "--root", str(project), "status", "--against", target, "--json", check=False)
    seconds = time.perf_counter() - start
    if got.returncode not in (0, 1):
        return [f"error {got.returncode}"], [got.stderr.decode(errors="replace")[-300:]], \
            seconds, []
    doc = json.loads(got.stdout)
    patches = doc.get("patches", doc) if isinstance(doc, dict) else doc
    states = [p["state"] for p in patches]
    decided = [p.get("decided_by") or "" for p in patches]
    within = [next((e for e in p.get("evidence") or [] if e.startswith("landed in part: ")), "")
              for p in patches]
    return states, decided, seconds, within


def git_cherry(scratch: Git, target: str, tip: str, base: str) -> tuple[list[bool], float]:
    start = time.perf_counter()
    out = scratch.out("cherry", target, tip, base)
    seconds = time.perf_counter() - start
    return [line.startswith("-") for line in out.splitlines()], seconds


# ----------------------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", required=True, type=Path)
    parser.add_argument("--base", required=True)
    parser.add_argument("--target", required=True)
    parser.add_argument("--mainline", default=None,
                        help="the branch BASE and TARGET lie on (default: TARGET)")
    parser.add_argument("--branches", action="append", default=None,
                        help="glob of release branches (default: release/*)")
    parser.add_argument("--max-exact", type=int, default=40)
    parser.add_argument("--max-unmerged", type=int, default=30)
    parser.add_argument("--split-files", type=int, default=0, metavar="N",
                        help="a history of few large commits (releases): up to N changed .py "
                             "files of each commit as cases of their own (exact), and of "
                             "each commit after TARGET on --mainline (later: not landed)")
    parser.add_argument("--kinds", default="", help="only these kinds (comma-separated)")
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--rebuild", action="store_true")
    parser.add_argument("--json", type=Path)
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="list every case each tool got wrong")
    args = parser.parse_args(argv)
    args.branches = args.branches or ["release/*"]
    source = args.repo.resolve()
    src_dir = Path(subprocess.run(["git", "rev-parse", "--absolute-git-dir"], cwd=source,
                                  capture_output=True, text=True, check=True).stdout.strip())
    src = Git(src_dir)
    base = src.out("rev-parse", f"{args.base}^{{commit}}").strip()
    target = src.out("rev-parse", f"{args.target}^{{commit}}").strip()
    args.mainline = args.mainline or target
    if not is_ancestor(src, base, target):
        parser.error("BASE must be an ancestor of TARGET")
    name = f"{source.name}-{base[:10]}-{target[:10]}"
    work = scenario.bench_dir() / "landed" / name
    stamp = work / "cases.json"
    want = {"format": CASES_FORMAT, "base": base, "target": target, "mainline": args.mainline,
            "branches": args.branches, "max_exact": args.max_exact,
            "max_unmerged": args.max_unmerged,
            **({"split_files": args.split_files} if args.split_files else {})}
    scratch_dir = work / "cases.git"
    scratch = Git(scratch_dir)
    if args.rebuild or not stamp.is_file() or json.loads(stamp.read_text())["want"] != want:
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        subprocess.run(["git", "init", "-q", "--bare", str(scratch_dir)], check=True,
                       env=scenario.git_env())
        (scratch_dir / "objects" / "info" / "alternates").write_text(
            str(src_dir / "objects") + "\n")
        log(f"reading {source} {args.base}..{args.target}")
        started = time.perf_counter()
        hist = read_history(src, base, target, args.mainline)
        log(f"  {len(hist.mainline)} mainline commits")
        with tempfile.TemporaryDirectory() as tmp:
            cases = build_cases(src, scratch, hist, args, Path(tmp))
        for case in cases:
            scratch.run("update-ref", f"refs/cases/{case.id}", case.tip)
        stamp.write_text(json.dumps({"want": want, "cases": [asdict(c) for c in cases]},
                                    indent=1))
        log(f"  {len(cases)} cases in {time.perf_counter() - started:.0f} s")
    cases = [Case(**c) for c in json.loads(stamp.read_text())["cases"]]
    for case in cases:
        if case.kind in ("exact", "backport") and all(case.truth):
            original = landing_of(src, case)
            undoer = undone_by(src, original, original, target, case.paths) if original else None
            if undoer:
                case.kind, case.truth = "undone", [False] * len(case.truth)
                case.note = f"{case.note[:40]} (undone in part by {undoer[:10]})"
        elif case.kind == "squash" and all(case.truth):
            # Patch by patch: a hunk of the branch commit itself reversed after the squash.
            squash = landing_of(src, case)
            undoers = [undone_by(src, commit, squash, target, []) if squash else None
                       for commit in case.commits]
            case.truth = [not u for u in undoers]
            if any(undoers):
                case.note = f"{case.note[:40]} (in part undone by " \
                    f"{', '.join(sorted({u[:10] for u in undoers if u}))})"
    if args.kinds:
        cases = [c for c in cases if c.kind in args.kinds.split(",")]

    cache = work / "pf-cache"
    env = pf_env(cache)
    # One project fetches TARGET's history into the shared store; the others find it there.
    warm = work / "projects" / "_target"
    if not (warm / "done").is_file():
        shutil.rmtree(warm, ignore_errors=True)
        pf(env, "init", "--standalone", str(warm))
        pf(env, "--root", str(warm), "upstream", "add", "up", "--git", str(source), "--at",
           target)
        (warm / "done").write_text("")

    def run_case(case: Case) -> dict:
        project = work / "projects" / case.id
        refused = make_project(env, project, source, scratch_dir, case.base or base, case)
        cherry, git_s = git_cherry(scratch, target, case.tip, case.base or base)
        if refused:
            states, decided, pf_s, within = ["refused"] * len(case.truth), [refused], 0.0, []
        else:
            states, decided, pf_s, within = pf_status(env, project, target)
        return {"case": case, "pf": states, "decided": decided, "git": cherry,
                "pf_seconds": pf_s, "git_seconds": git_s, "within": within}

    log(f"running {len(cases)} cases")
    with concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        results = list(pool.map(run_case, cases))
    return report(results, args, source, base, target)


def report(results: list[dict], args, source: Path, base: str, target: str) -> int:
    kinds = ["exact", "backport", "squash", "undone", "reverted", "unmerged", "later"]
    table: dict[str, dict] = {k: {"cases": 0, "patches": 0, "landed": 0, "pf_tp": 0,
                                  "pf_fp": 0, "pf_partial": 0, "git_tp": 0, "git_fp": 0}
                              for k in kinds}
    wrong: list[str] = []
    # Patches said to have a change inside a hunk landed, the others not (apply/parts.py):
    # no state of their own (landed counts only whole patches), each to be looked at.
    within: list[str] = []
    decided: dict[str, int] = {}
    pf_time = git_time = 0.0
    for r in results:
        case: Case = r["case"]
        row = table[case.kind]
        row["cases"] += 1
        pf_states = r["pf"] + ["missing"] * (len(case.truth) - len(r["pf"]))
        git_says = r["git"] + [False] * (len(case.truth) - len(r["git"]))
        pf_time += r["pf_seconds"]
        git_time += r["git_seconds"]
        for i, truth in enumerate(case.truth):
            row["patches"] += 1
            row["landed"] += truth
            pf_landed = pf_states[i] == "upstreamed"
            if pf_landed and truth:
                row["pf_tp"] += 1
            if pf_landed and not truth:
                row["pf_fp"] += 1
            if truth and pf_states[i] == "partial":
                row["pf_partial"] += 1
            if git_says[i] and truth:
                row["git_tp"] += 1
            if git_says[i] and not truth:
                row["git_fp"] += 1
            said = (r.get("within") or [])[i:i + 1]
            if said and said[0]:
                within.append(f"patchforge {pf_states[i]:10} truth="
                              f"{'landed' if truth else 'not':6} {case.id} #{i + 1}: "
                              f"{said[0]}")
            if pf_landed != truth:
                wrong.append(f"patchforge {pf_states[i]:10} truth={'landed' if truth else 'not':6}"
                             f" {case.id} #{i + 1}: {case.note[:70]}"
                             + (" [binary]" if case.binary else ""))
            if git_says[i] != truth:
                wrong.append(f"git cherry {'-' if git_says[i] else '+':10} truth="
                             f"{'landed' if truth else 'not':6} {case.id} #{i + 1}: "
                             f"{case.note[:70]}")
        for d in r["decided"]:
            if d:
                key = d if len(d) < 60 else d[:60]
                decided[key] = decided.get(key, 0) + 1
    total = {key: sum(row[key] for row in table.values()) for key in table["exact"]}

    def ratio(a: int, b: int) -> str:
        return f"{a / b:.3f}" if b else "  -  "

    print(f"landed detection on {source.name} {args.base} ({base[:10]}) -> {args.target} "
          f"({target[:10]})")
    print(f"{'kind':10} {'cases':>5} {'patches':>7} {'landed':>6} | {'patchforge':^27} | "
          f"{'git cherry':^19}")
    print(f"{'':10} {'':>5} {'':>7} {'':>6} | {'found':>5} {'+part':>5} {'false':>5} "
          f"{'recall':>8} | {'found':>5} {'false':>5} {'recall':>7}")
    for kind, row in [*table.items(), ("total", total)]:
        if not row["cases"]:
            continue
        print(f"{kind:10} {row['cases']:5} {row['patches']:7} {row['landed']:6} | "
              f"{row['pf_tp']:5} {row['pf_partial']:5} {row['pf_fp']:5} "
              f"{ratio(row['pf_tp'], row['landed']):>8} | {row['git_tp']:5} {row['git_fp']:5} "
              f"{ratio(row['git_tp'], row['landed']):>7}")
    print(f"precision of 'landed': patchforge "
          f"{ratio(total['pf_tp'], total['pf_tp'] + total['pf_fp'])}, git cherry "
          f"{ratio(total['git_tp'], total['git_tp'] + total['git_fp'])}; recall: patchforge "
          f"{ratio(total['pf_tp'], total['landed'])} "
          f"({ratio(total['pf_tp'] + total['pf_partial'], total['landed'])} counting partial), "
          f"git cherry {ratio(total['git_tp'], total['landed'])}")
    print(f"time: patchforge status {pf_time:.1f} s over {len(results)} runs, "
          f"git cherry {git_time:.1f} s")
    if decided:
        print("decided by: " + ", ".join(f"{k} {v}" for k, v in sorted(
            decided.items(), key=lambda kv: -kv[1])))
    print(f"a change inside a hunk said landed (landed in part): {len(within)} patches")
    if args.verbose:
        for line in wrong:
            print("  " + line)
        for line in within:
            print("  in part: " + line)
    if args.json:
        args.json.write_text(json.dumps({"table": table, "total": total, "wrong": wrong,
                                         "decided": decided, "within": within}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
