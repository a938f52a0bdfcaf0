"""The benchmark scenario: a vLLM history built from four real wheels, and a generated patch series.

- The history (`<bench>/vllm-history`): a git repository whose four commits are the Python
  sources of the vllm 0.30.0, 0.31.0, 0.32.0 and 0.33.0 wheels (tags v0.30.0 ... v0.33.0). Only
  the `*.py` files: they are the 3,231 files a fix touches (50 MB); the remaining 790 MB of a
  wheel are compiled kernels (`.so`) that no patch can change, and keeping them would turn every
  checkout `git rebase`, `stg` and `quilt` make into a copy of binaries, measuring the disk, not
  the patch work. Built once (deterministic: fixed identities and dates) and cached.
- The series (`generate_series`): seeded, so the same (count, seed) gives the same patches on any
  machine. Three kinds, spread through the series:
    landed   a real 0.32.0 -> 0.33.0 hunk, backported verbatim onto 0.32.0 (must be detected as
             landed and dropped);
    clean    a local fix (an added comment line) in a region 0.33.0 left alone: files 0.33.0
             did not touch, or at least MARGIN lines away from its changes (must rebase cleanly);
    conflict a fix on a line 0.33.0 changed (must conflict).
  It becomes commits on a checkout (for git, StGit and quilt) and patch files (for patchforge),
  once with every patch (`full`) and once without the conflicts (`clean`, what a rebase can run
  through without stopping).
"""
from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

VERSIONS = ("0.30.0", "0.31.0", "0.32.0", "0.33.0")
BASE, TARGET = "0.32.0", "0.33.0"
HISTORY_FORMAT = 1  # bump when the history's content rules change
SERIES_FORMAT = 1   # bump when the generator changes
MARGIN = 12         # lines kept between a clean fix and any upstream change or other fix
PACKAGE = "vllm"


# ----------------------------------------------------------------------------------------------
# Locations and git

def patchforge_cache() -> Path:
    """patchforge's own cache (the store and the wheels it shares with the tests)."""
    from patchforge.store.gitstore import cache_dir
    return cache_dir()


def wheels_dir() -> Path:
    from patchforge.store.gitstore import wheels_dir as shared_wheels
    return shared_wheels()


def bench_dir() -> Path:
    explicit = os.environ.get("PATCHFORGE_BENCH_CACHE")
    return Path(explicit) if explicit else patchforge_cache() / "bench"


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment in which git ignores the user's and system's configuration."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_AUTHOR_NAME": "Bench Author", "GIT_AUTHOR_EMAIL": "bench@example.com",
        "GIT_COMMITTER_NAME": "Bench Committer", "GIT_COMMITTER_EMAIL": "bench@example.com",
        "GIT_AUTHOR_DATE": "1700000000 +0000", "GIT_COMMITTER_DATE": "1700000000 +0000",
        "LC_ALL": "C", "TZ": "UTC", "GIT_PAGER": "cat", "EDITOR": "true", "GIT_EDITOR": "true",
    })
    if extra:
        env.update(extra)
    return env


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True,
        env: dict[str, str] | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True,
                          env=env or git_env())
    if check and proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} in {cwd}: {proc.stderr.decode(errors='replace')}")
    return proc.stdout


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# Wheels and the history

def wheel_path(version: str) -> Path:
    """The cached vllm wheel of `version`, fetched with the ordinary `pip download` if missing."""
    directory = wheels_dir()
    found = sorted(directory.glob(f"{PACKAGE}-{version}-*.whl"))
    if not found:
        directory.mkdir(parents=True, exist_ok=True)
        log(f"fetching {PACKAGE}=={version} into {directory} (pip download)")
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary",
                        ":all:", "--disable-pip-version-check", "-q", "-d", str(directory),
                        f"{PACKAGE}=={version}"], check=True)
        found = sorted(directory.glob(f"{PACKAGE}-{version}-*.whl"))
        if not found:
            raise RuntimeError(f"pip download gave no {PACKAGE} {version} wheel in {directory}")
    return found[0]


def history_dir() -> Path:
    return bench_dir() / "vllm-history"


def ensure_history() -> Path:
    """The cached history repository (built on first use). Returns its path."""
    repo = history_dir()
    stamp = repo / ".git" / "bench-history.json"
    wheels = {v: wheel_path(v).name for v in VERSIONS}
    want = {"format": HISTORY_FORMAT, "wheels": wheels}
    if stamp.is_file() and json.loads(stamp.read_text()) == want:
        return repo
    log(f"building the history repository {repo} from {', '.join(wheels.values())}")
    tmp = repo.with_name(repo.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    git(tmp, "init", "-q", "-b", "main")
    # A git upstream is fetched blob-less by patchforge: the source must allow filters.
    git(tmp, "config", "uploadpack.allowFilter", "true")
    git(tmp, "config", "uploadpack.allowAnySHA1InWant", "true")
    proc = subprocess.Popen(["git", "fast-import", "--quiet", "--done"], cwd=tmp,
                            stdin=subprocess.PIPE, env=git_env())
    w = proc.stdin
    for mark, version in enumerate(VERSIONS, start=1):
        date = 1700000000 + mark * 86400
        msg = f"vllm {version}\n\nPython sources of {wheels[version]}\n".encode()
        w.write(b"commit refs/heads/main\nmark :%d\n" % mark)
        w.write(b"author vLLM Release <release@example.com> %d +0000\n" % date)
        w.write(b"committer vLLM Release <release@example.com> %d +0000\n" % date)
        w.write(b"data %d\n%s\n" % (len(msg), msg))
        if mark > 1:
            w.write(b"from :%d\n" % (mark - 1))
        w.write(b"deleteall\n")
        with zipfile.ZipFile(wheel_path(version)) as archive:
            members = {}
            for info in archive.infolist():
                if not info.is_dir() and info.filename.endswith(".py") and \
                        "\n" not in info.filename and not info.filename.startswith('"'):
                    members[info.filename] = info
            for name in sorted(members):
                data = archive.read(members[name])
                w.write(b"M 100644 inline %s\ndata %d\n" % (name.encode(), len(data)))
                w.write(data + b"\n")
        w.write(b"reset refs/tags/v%s\nfrom :%d\n\n" % (version.encode(), mark))
    w.write(b"done\n")
    w.close()
    if proc.wait() != 0:
        raise RuntimeError("git fast-import failed building the history")
    git(tmp, "checkout", "-q", "-f", "main")
    (tmp / ".git" / "bench-history.json").write_text(json.dumps(want, sort_keys=True))
    shutil.rmtree(repo, ignore_errors=True)
    tmp.rename(repo)
    return repo


# ----------------------------------------------------------------------------------------------
# The series

@dataclass
class Edit:
    """Replace `count` lines starting at 0-based line `start` of the BASE file with `new`."""
    path: str
    start: int
    count: int
    new: list[bytes]


@dataclass
class GenPatch:
    name: str
    kind: str  # landed | clean | conflict
    subject: str
    edits: list[Edit] = field(default_factory=list)


_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _upstream_hunks(repo: Path) -> dict[str, list[tuple[int, int, list[bytes]]]]:
    """Per modified .py file: the 0.32.0 -> 0.33.0 hunks as (old start 0-based, old count,
    hunk lines including context)."""
    out = git(repo, "diff", "--no-renames", "--diff-filter=M", "-U3", f"v{BASE}", f"v{TARGET}",
              "--", "*.py")
    hunks: dict[str, list[tuple[int, int, list[bytes]]]] = {}
    path = None
    current = None
    for line in out.split(b"\n"):
        if line.startswith(b"diff --git "):
            path, current = None, None
        elif line.startswith(b"+++ b/"):
            path = line[6:].decode()
        elif line.startswith(b"@@") and path is not None:
            m = _HUNK.match(line)
            old_start, old_count = int(m[1]), int(m[2] if m[2] is not None else 1)
            current = []
            hunks.setdefault(path, []).append(
                (old_start - 1 if old_count else old_start, old_count, current))
        elif current is not None and line[:1] in (b" ", b"+", b"-", b"\\"):
            current.append(line)
    return hunks


def _meaningful(line: bytes) -> bool:
    text = line.strip()
    return len(text) >= 16 and not text.startswith((b"#", b'"', b"'")) and \
        not text.endswith((b"\\",)) and b'"""' not in text and b"'''" not in text


def _code_commas_tightened(lines: list[bytes], added: set[int]) -> list[bytes] | None:
    """`lines` (a whole Python file) with ", " written "," after each comma of code (a comma
    token: none inside a string or a comment) on the lines `added` (0-based), the way a local
    fix is often written before a formatter ran; None when there is none, or the file is not
    Python that `tokenize` reads."""
    import io
    import tokenize

    try:
        text = [line.decode("utf-8") for line in lines]
        tokens = list(tokenize.generate_tokens(io.StringIO("\n".join(text)).readline))
    except (UnicodeDecodeError, tokenize.TokenError, SyntaxError, IndentationError):
        return None
    cuts: dict[int, list[int]] = {}
    for token in tokens:
        row, col = token.end
        if token.type == tokenize.OP and token.string == "," and row - 1 in added and \
                text[row - 1][col:col + 1] == " " and text[row - 1][col + 1:col + 2] not in \
                ("", " ", "#"):
            cuts.setdefault(row - 1, []).append(col)
    if not cuts:
        return None
    out = list(text)
    for row, cols in cuts.items():
        line = out[row]
        for col in sorted(cols, reverse=True):
            line = line[:col] + line[col + 1:]
        out[row] = line
    return [line.encode("utf-8") for line in out]


def generate_series(repo: Path, count: int, seed: int, reformatted: int = 0,
                    reformatted_code: int = 0) -> list[GenPatch]:
    """`count` patches on BASE: about 27% landed, 10% conflict, the rest clean (seeded).

    With `reformatted` > 0, that many more landed patches (kind `landed-reformatted`) carry a
    real 0.33.0 hunk written the way a local fix often is before upstream's formatter ran:
    ", " as "," in the added lines. Upstream has the change, but not these bytes: git's merge
    and StGit's reverse-apply cannot see it; a whitespace-insensitive check can. Off by default,
    so the default series (and the published tables) do not change. That rule also takes the
    space out of ", " inside strings (a docstring's `context, for`), which is the string's
    text, not layout: such a patch is rightly no landing (kept as it was, so that its figures
    stay comparable with the passes before).

    With `reformatted_code` > 0, that many more landed patches (kind `landed-reformatted-code`)
    have ", " written "," after the commas of code alone (`_code_commas_tightened`: never inside
    a string or comment): what a formatter changes, and every one of them a landing.
    """
    rng = random.Random(f"patchforge-bench-{seed}-{count}")
    n_conflict = max(3, count // 10)
    n_landed = max(8, count * 27 // 100)
    n_clean = count - n_conflict - n_landed
    upstream = _upstream_hunks(repo)
    base_files = set(git(repo, "ls-tree", "-r", "--name-only", f"v{BASE}").decode().split("\n"))
    base_files.discard("")
    target_files = set(git(repo, "ls-tree", "-r", "--name-only", f"v{TARGET}").decode().split("\n"))
    occupied: dict[str, list[tuple[int, int]]] = {}

    def free(path: str, start: int, end: int, margin: int) -> bool:
        return all(end + margin <= a or start >= b + margin for a, b in occupied.get(path, []))

    def take(path: str, start: int, end: int) -> None:
        occupied.setdefault(path, []).append((start, end))

    blob_cache: dict[str, list[bytes]] = {}

    def base_lines(path: str) -> list[bytes]:
        if path not in blob_cache:
            blob_cache[path] = git(repo, "show", f"v{BASE}:{path}").split(b"\n")
        return blob_cache[path]

    # Landed: small real hunks with something added, verbatim.
    candidates = []
    for path, hs in sorted(upstream.items()):
        for old_start, old_count, lines in hs:
            changed = [l for l in lines if l[:1] in (b"+", b"-")]
            added = [l for l in lines if l[:1] == b"+" and len(l.strip()) > 12]
            if 1 <= len(changed) <= 14 and added and not any(l.startswith(b"\\") for l in lines):
                candidates.append((path, old_start, old_count, lines))
    rng.shuffle(candidates)
    patches: list[GenPatch] = []
    for path, old_start, old_count, lines in candidates:
        if sum(p.kind == "landed" for p in patches) == n_landed:
            break
        if not free(path, old_start, old_start + old_count, MARGIN):
            continue
        new = [l[1:] for l in lines if l[:1] in (b" ", b"+")]
        take(path, old_start, old_start + old_count)
        patches.append(GenPatch("", "landed", f"backport 0.33.0 change to {path}:{old_start + 1}",
                                [Edit(path, old_start, old_count, new)]))
    made_reformatted = 0
    for path, old_start, old_count, lines in candidates:
        if made_reformatted == reformatted:
            break
        if not free(path, old_start, old_start + old_count, MARGIN):
            continue
        if not any(l[:1] == b"+" and b", " in l for l in lines):
            continue
        new = [(l[1:].replace(b", ", b",") if l[:1] == b"+" else l[1:])
               for l in lines if l[:1] in (b" ", b"+")]
        take(path, old_start, old_start + old_count)
        made_reformatted += 1
        patches.append(GenPatch("", "landed-reformatted",
                                f"backport 0.33.0 change to {path}:{old_start + 1}, unformatted",
                                [Edit(path, old_start, old_count, new)]))
    made_code = 0
    for path, old_start, old_count, lines in candidates:
        if made_code == reformatted_code:
            break
        if not free(path, old_start, old_start + old_count, MARGIN):
            continue
        if not any(l[:1] == b"+" and b", " in l for l in lines):
            continue
        new = [l[1:] for l in lines if l[:1] in (b" ", b"+")]
        kinds = [l[:1] for l in lines if l[:1] in (b" ", b"+")]
        base = base_lines(path)
        whole = base[:old_start] + new + base[old_start + old_count:]
        tightened = _code_commas_tightened(
            whole, {old_start + k for k, kind in enumerate(kinds) if kind == b"+"})
        if tightened is None:
            continue
        take(path, old_start, old_start + old_count)
        made_code += 1
        patches.append(GenPatch("", "landed-reformatted-code",
                                f"backport 0.33.0 change to {path}:{old_start + 1}, code "
                                "unformatted",
                                [Edit(path, old_start, old_count,
                                      tightened[old_start:old_start + len(new)])]))
    # Everything upstream changed (old-side ranges), so clean fixes can keep away from it.
    for path, hs in upstream.items():
        for old_start, old_count, _ in hs:
            occupied.setdefault(path, []).append((old_start, old_start + max(old_count, 1)))

    # Conflicts: change a line that 0.33.0 removed or rewrote.
    conflict_sources = []
    for path, hs in sorted(upstream.items()):
        for old_start, old_count, lines in hs:
            line_no = old_start
            for line in lines:
                if line[:1] == b"-" and _meaningful(line[1:]):
                    conflict_sources.append((path, line_no))
                    break
                if line[:1] in (b" ", b"-"):
                    line_no += 1
    rng.shuffle(conflict_sources)
    conflict_taken: set[str] = {e.path for p in patches for e in p.edits}  # no backport there
    for path, line_no in conflict_sources:
        if sum(p.kind == "conflict" for p in patches) == n_conflict:
            break
        if path in conflict_taken:
            continue
        old = base_lines(path)[line_no]
        indent = old[:len(old) - len(old.lstrip())]
        conflict_taken.add(path)
        n = sum(p.kind == "conflict" for p in patches) + 1
        patches.append(GenPatch("", "conflict", f"local fix {n} on a line 0.33.0 rewrote in {path}",
                                [Edit(path, line_no, 1,
                                      [indent + b"# bench: local fix %d replaces the line below"
                                       % n, old + b"  # bench-local-%d" % n])]))

    # Clean: files 0.33.0 left alone (mostly), or far from its changes (an offset).
    unchanged = sorted(p for p in base_files if p in target_files and p not in upstream
                       and p.startswith("vllm/"))
    changed = sorted(p for p in upstream if p in base_files)
    made = 0
    attempts = 0
    while made < n_clean and attempts < n_clean * 200:
        attempts += 1
        path = rng.choice(changed if rng.random() < 0.3 else unchanged)
        lines = base_lines(path)
        if len(lines) < 40:
            continue
        edits = []
        for _ in range(rng.choice((1, 1, 2))):
            for _try in range(20):
                i = rng.randrange(5, len(lines) - 5)
                if _meaningful(lines[i]) and free(path, i, i + 1, MARGIN) and \
                        not any(abs(e.start - i) < MARGIN for e in edits):
                    break
            else:
                continue
            line = lines[i]
            indent = line[:len(line) - len(line.lstrip())]
            edits.append(Edit(path, i + 1, 0, [indent + b"# bench: local fix %d, hunk %d keeps "
                                               b"this behaviour" % (made + 1, len(edits) + 1)]))
        if not edits:
            continue
        for e in edits:
            take(path, e.start - 1, e.start + 1)
        made += 1
        patches.append(GenPatch("", "clean", f"local fix {made} in {path}", edits))

    # Series order: seeded shuffle, but never a conflict first (a stop at patch 1 measures
    # nothing).
    rng.shuffle(patches)
    if patches and patches[0].kind == "conflict":
        k = next(i for i, p in enumerate(patches) if p.kind != "conflict")
        patches[0], patches[k] = patches[k], patches[0]
    for index, patch in enumerate(patches, start=1):
        patch.name = f"{index:04d}-{patch.kind}.patch"
    return patches


# ----------------------------------------------------------------------------------------------
# Turning the series into commits and patch files

def commit_series(checkout: Path, branch: str, patches: list[GenPatch], base_commit: str) -> list[str]:
    """Commit `patches` one by one on `base_commit` as `branch` (edits in BASE coordinates are
    shifted by the earlier edits of the same file). Returns the commit ids."""
    git(checkout, "checkout", "-q", "-f", "-B", branch, base_commit)
    deltas: dict[str, list[tuple[int, int]]] = {}  # path -> (base line, lines added)
    contents: dict[str, list[bytes]] = {}
    commits = []
    for patch in patches:
        for edit in sorted(patch.edits, key=lambda e: -e.start):
            if edit.path not in contents:
                contents[edit.path] = (checkout / edit.path).read_bytes().split(b"\n")
            shift = sum(d for s, d in deltas.get(edit.path, []) if s <= edit.start)
            lines = contents[edit.path]
            at = edit.start + shift
            lines[at:at + edit.count] = edit.new
        for edit in patch.edits:
            deltas.setdefault(edit.path, []).append((edit.start, len(edit.new) - edit.count))
            (checkout / edit.path).write_bytes(b"\n".join(contents[edit.path]))
        git(checkout, "commit", "-q", "-a", "-m", f"{patch.subject}\n\nbench patch {patch.name} "
            f"({patch.kind})")
        commits.append(git(checkout, "rev-parse", "HEAD").decode().strip())
    return commits


def patch_file_bytes(checkout: Path, commit: str, patch: GenPatch, base_commit: str) -> bytes:
    diff = git(checkout, "diff-tree", "-p", "--no-renames", "--no-color", commit)
    diff = diff[diff.index(b"diff --git "):]
    status = {"landed": "Backport [vllm 0.33.0]"}.get(patch.kind, "Pending")
    header = (f"Description: {patch.subject}\n"
              "Author: Bench Author <bench@example.com>\n"
              f"Upstream-Status: {status}\n"
              "Upstream: vllm\n"
              f"Base: {base_commit}\n"
              "\n"
              f"Generated by benchmarks/scenario.py ({patch.kind}).\n"
              "---\n").encode()
    return header + diff
