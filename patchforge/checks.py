"""Declared checks: commands from the trusted configuration, run on a profile's patched files.

Only `[tool.patchforge.checks.<name>]` (or `[checks.<name>]` in patchforge.toml) declares a
check; nothing in a patch file is ever run. A check is

    command = ["python3", "-m", "py_compile", "{file}"]   # an argv list: no shell, ever
    files = "*.py"              # glob(s) over upstream-relative paths; default: every file
    timeout = 60                # seconds; the whole process group is killed past it
    profiles = ["gfx942"]       # default: every profile
    tree = "overlays"           # or "full": the whole upstream tree under the overlays
    upstream = "vllm"           # default: every upstream, side by side as in the image

Placeholders, substituted inside arguments (never through a shell): `{file}` runs the command
once per matching file, with its path relative to the tree; an argument that is exactly `{files}`
becomes every matching file; `{tree}` is the tree's absolute path and `{profile}` the profile.

`run_checks` writes each profile's overlay files into a temporary directory that mirrors the
upstream layout (after materializing the upstream commits from the store for `tree = "full"`),
runs the commands there with stdin closed, output captured to a file and a time limit, and
reports each run with the patches that touched the files it failed on.
"""
from __future__ import annotations

import fnmatch
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from patchforge.errors import ConfigError, UsageError
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

DEFAULT_TIMEOUT = 60.0
MAX_TIMEOUT = 24 * 3600.0
TAIL_LINES = 40
TAIL_BYTES = 8192
TREES = ("overlays", "full")
_KEYS = {"command", "files", "timeout", "profiles", "tree", "upstream", "description"}


@record(frozen=True)
class CheckSpec:
    name: str
    command: tuple[str, ...]
    files: tuple[str, ...] = ()
    timeout: float = DEFAULT_TIMEOUT
    profiles: tuple[str, ...] = ()
    tree: str = "overlays"
    upstream: str | None = None
    description: str = ""

    @property
    def per_file(self) -> bool:
        return any("{file}" in arg for arg in self.command)

    def matches(self, path: str) -> bool:
        return not self.files or any(fnmatch.fnmatchcase(path, g) for g in self.files)


@record(frozen=True)
class CheckResult:
    """One run of one check in one profile (one per file for a `{file}` command)."""

    name: str
    profile: str | None
    status: str  # passed | failed | timeout | error | skipped
    command: tuple[str, ...] = ()
    files: tuple[str, ...] = ()  # tree-relative paths the run was about (that failed, if known)
    patches: tuple[str, ...] = ()  # "upstream/name" of the patches that touched those files
    returncode: int | None = None
    output_tail: str = ""
    detail: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status in ("passed", "skipped")

    def to_json(self) -> dict:
        return {"name": self.name, "profile": self.profile, "status": self.status,
                "ok": self.ok, "command": list(self.command), "files": list(self.files),
                "patches": list(self.patches), "returncode": self.returncode,
                "output_tail": self.output_tail, "detail": self.detail,
                "seconds": round(self.seconds, 3)}


# --- configuration ----------------------------------------------------------------------------

def load_checks(project: Project) -> list[CheckSpec]:
    """The declared checks, in configuration order; ConfigError names the file, key and line."""
    config = project.config
    path = config.source
    try:
        text = Path(path).read_text("utf-8")
    except OSError:
        text = ""
    from patchforge.formats.config import table_prefix

    prefix = table_prefix(path)

    def fail(name: str, key: str | None, message: str) -> NoReturn:
        line = None
        for needle in ([f"{key} ", f"{key}="] if key else []) + [f"checks.{name}]",
                                                                 f"checks.{name}"]:
            line = _line_after(text, f"checks.{name}", needle)
            if line:
                break
        where = f"{prefix}checks.{name}" + (f".{key}" if key else "")
        raise ConfigError(f"{where}: {message}", path=path, line=line)

    specs = []
    for name, table in config.checks.items():
        if not isinstance(table, dict):
            fail(name, None, "must be a table ([checks.NAME] with command = [...])")
        unknown = sorted(set(table) - _KEYS)
        if unknown:
            fail(name, unknown[0], f"unknown key (known: {', '.join(sorted(_KEYS))})")
        command = table.get("command")
        if isinstance(command, str):
            fail(name, "command", "must be a list of arguments, e.g. [\"python3\", \"-m\", "
                                  "\"py_compile\", \"{file}\"]: checks never go through a shell")
        if (not isinstance(command, list) or not command
                or not all(isinstance(a, str) for a in command) or not command[0]):
            fail(name, "command", "must be a non-empty list of strings (program and arguments)")
        if any("\0" in a for a in command):
            fail(name, "command", "NUL in an argument")
        files = table.get("files", [])
        if isinstance(files, str):
            files = [files]
        if not isinstance(files, list) or not all(isinstance(g, str) and g for g in files):
            fail(name, "files", "must be a glob or a list of globs")
        timeout = table.get("timeout", DEFAULT_TIMEOUT)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) \
                or not 0 < timeout <= MAX_TIMEOUT:
            fail(name, "timeout", f"must be a number of seconds in (0, {int(MAX_TIMEOUT)}]")
        profiles = table.get("profiles", [])
        if not isinstance(profiles, list) or not all(isinstance(p, str) for p in profiles):
            fail(name, "profiles", "must be a list of profile names")
        for profile in profiles:
            if profile not in config.profiles:
                fail(name, "profiles", f"unknown profile {profile!r} (configured: "
                                       f"{', '.join(config.profiles) or 'none'})")
        tree = table.get("tree", "overlays")
        if tree not in TREES:
            fail(name, "tree", f"must be one of {', '.join(TREES)} (got {tree!r})")
        upstream = table.get("upstream")
        if upstream is not None and upstream not in config.upstreams:
            fail(name, "upstream", f"unknown upstream {upstream!r}")
        description = table.get("description", "")
        if not isinstance(description, str):
            fail(name, "description", "must be a string")
        if "{files}" in "".join(command) and "{files}" not in command:
            fail(name, "command", "{files} must be a whole argument (it becomes several)")
        specs.append(CheckSpec(name=name, command=tuple(command), files=tuple(files),
                               timeout=float(timeout), profiles=tuple(profiles), tree=tree,
                               upstream=upstream, description=description))
    return specs


def _line_after(text: str, section: str, needle: str) -> int | None:
    """Line of `needle` at or after the line that opens `section` (a best effort)."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if section in line), None)
    if start is None:
        return None
    for i in range(start, len(lines)):
        if lines[i].lstrip().startswith(needle) or (needle.endswith("]") and needle in lines[i]):
            return i + 1
    return start + 1


# --- running ----------------------------------------------------------------------------------

@record
class _Tree:
    root: Path
    files: dict[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)
    # tree-relative path -> (upstream, ("upstream/patch", ...))


def _build_tree(project: Project, store: UpstreamStore, overlay_set, profile, spec: CheckSpec,
                workdir: Path) -> _Tree:
    upstreams = [spec.upstream] if spec.upstream else project.upstream_names()
    root = Path(tempfile.mkdtemp(prefix=f"{spec.tree}-", dir=workdir))
    tree = _Tree(root)
    overlay_files = [f for f in overlay_set.files
                     if f.profile == profile and f.upstream in upstreams]
    if spec.tree == "full":
        lock = project.lock
        for upstream in upstreams:
            commit = next((f.base_commit for f in overlay_files if f.upstream == upstream),
                          None) or lock.pin(upstream).commit
            store.materialize(commit, root)
    for f in overlay_files:
        previous = tree.files.get(f.path)
        if previous is not None and previous[0] != f.upstream:
            raise UsageError(f"check {spec.name}: {f.path} is overlaid by both {previous[0]} and "
                             f"{f.upstream}", hint="set `upstream = ...` on the check")
        target = root / f.path
        target.parent.mkdir(parents=True, exist_ok=True)
        # A full tree may hold symlinks (to a directory, or at the file itself): never write
        # through one to a place outside the tree.
        if not target.parent.resolve().is_relative_to(root.resolve()):
            raise UsageError(f"check {spec.name}: {f.path} lies under a symbolic link in the "
                             "upstream tree; refusing to write through it")
        if target.is_symlink():
            target.unlink()
        target.write_bytes(f.content)
        tree.files[f.path] = (f.upstream, tuple(f"{f.upstream}/{n}" for n, _ in f.patches))
    return tree


def _tail(path: Path) -> str:
    size = path.stat().st_size
    with open(path, "rb") as handle:
        handle.seek(max(0, size - 4 * TAIL_BYTES))
        data = handle.read()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    tail = b"\n".join(lines[-TAIL_LINES:])[-TAIL_BYTES:]
    return tail.decode("utf-8", "replace")


def _run(argv: list[str], cwd: Path, timeout: float, env: dict, log: Path):
    """(status, returncode, output tail, detail, seconds). Output goes to a file, not a pipe, so
    a grandchild that keeps it open cannot hang us; the process group dies at the time limit."""
    started = time.monotonic()
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                    stderr=subprocess.STDOUT, env=env, start_new_session=True)
        except OSError as exc:
            return "error", None, "", f"cannot run {argv[0]}: {exc.strerror or exc}", 0.0
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return ("timeout", proc.returncode, _tail(log),
                    f"killed after the {timeout:g} s time limit", time.monotonic() - started)
        except BaseException:
            _kill_group(proc)
            raise
        finally:
            # Anything the check left running in its group goes too.
            _kill_group(proc, only_group=True)
    seconds = time.monotonic() - started
    if code == 0:
        return "passed", 0, _tail(log), "", seconds
    detail = f"exit status {code}" if code > 0 else f"killed by signal {-code}"
    return "failed", code, _tail(log), detail, seconds


def _kill_group(proc, *, only_group: bool = False) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    if not only_group:
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def _substitute(command: tuple[str, ...], *, file: str | None, files: list[str], tree: Path,
                profile: str | None) -> list[str]:
    argv = []
    for arg in command:
        if arg == "{files}":
            argv.extend(files)
            continue
        arg = arg.replace("{tree}", str(tree)).replace("{profile}", profile or "")
        if file is not None:
            arg = arg.replace("{file}", file)
        argv.append(arg)
    return argv


def _blame(tree: _Tree, files: list[str], output: str) -> tuple[list[str], list[str]]:
    """The files a failed run is about (those its output names, else all it was given), and the
    patches that touched them, in order."""
    named = [f for f in files if f in output] or files
    patches: list[str] = []
    for path in named:
        for patch in tree.files.get(path, ("", ()))[1]:
            if patch not in patches:
                patches.append(patch)
    return named, patches


def _profiles(project: Project, overlay_set, profile) -> list[str | None]:
    configured = list(project.config.profiles)
    if profile is not None:
        if profile not in configured:
            raise UsageError(f"unknown profile {profile!r} (configured: "
                             f"{', '.join(configured) or 'none'})")
        return [profile]
    return list(configured) or [None]


def run_checks(project: Project, store: UpstreamStore, overlay_set=None,
               profile: str | None = None) -> list[CheckResult]:
    """Run every declared check on every (or the one) profile's patched files.

    `overlay_set` is what `overlay.build_overlays` returns (built here when None). Results come
    in configuration order, then profile order, then file order.
    """
    specs = load_checks(project)
    if not specs:
        return []
    if overlay_set is None:
        from patchforge.overlay import build_overlays
        overlay_set = build_overlays(project, store)
    results: list[CheckResult] = []
    # The commands run inside the tree of overlays, and `python3 -m py_compile` would import a
    # `py_compile.py` a patch adds at the tree's root: the current directory is kept off
    # Python's sys.path, so a check's own tools are never replaced by a patch's files. A check
    # that means to import the tree says so in its arguments ({tree}).
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    with tempfile.TemporaryDirectory(prefix="patchforge-check-") as tmp:
        workdir = Path(tmp)
        for spec in specs:
            for prof in _profiles(project, overlay_set, profile):
                if spec.profiles and prof not in spec.profiles:
                    continue
                results += _run_spec(project, store, overlay_set, prof, spec, workdir, env)
    return _unmatched_globs_are_errors(project, store, overlay_set, specs, results)


def _unmatched_globs_are_errors(project: Project, store: UpstreamStore, overlay_set,
                                specs: list[CheckSpec], results: list[CheckResult]
                                ) -> list[CheckResult]:
    """A check skipped everywhere whose `files` match no file at all, neither of its upstreams
    at their pins nor of their overlays, ran nothing: each of its results is an error, never a
    green run, saying why. Its upstream not pinned yet has no files to match (pin it); else the
    glob is mistyped. A glob that names upstream files no fix touches stays an honest skip
    (there is nothing of the series to check there). Each upstream's files are listed once,
    for every check that asks."""
    out = list(results)
    pins = project.lock.upstreams
    listed: dict[str, list[str]] = {}

    def files_of(upstream: str) -> list[str]:
        if upstream not in listed:
            listed[upstream] = store.list_paths(pins[upstream].commit)
        return listed[upstream]

    for spec in specs:
        mine = [i for i, r in enumerate(out) if r.name == spec.name]
        if not spec.files or not mine or any(out[i].status != "skipped" for i in mine):
            continue
        upstreams = [spec.upstream] if spec.upstream else project.upstream_names()
        if any(f.upstream in upstreams and spec.matches(f.path) for f in overlay_set.files):
            continue
        pinned = [u for u in upstreams if u in pins]
        unpinned = [u for u in upstreams if u not in pins]
        if any(spec.matches(path) for upstream in pinned for path in files_of(upstream)):
            continue
        if not pinned:
            names = ", ".join(unpinned)
            detail = (f"nothing was checked: {names} {'is' if len(unpinned) == 1 else 'are'} "
                      "configured but not pinned in upstream.lock, so there is no file for "
                      f"files = {', '.join(spec.files)} to match; pin "
                      + " and ".join(f"`patchforge upstream pin {u} --at SPEC`"
                                     for u in unpinned))
        else:
            detail = (f"files = {', '.join(spec.files)} matches no file of "
                      f"{', '.join(pinned)} at the pinned revision, nor any of "
                      f"{'its' if len(pinned) == 1 else 'their'} overlay files: nothing was "
                      "checked (a mistyped glob?)"
                      + (f"; {', '.join(unpinned)} not pinned yet: not looked at"
                         if unpinned else ""))
        for i in mine:
            out[i] = CheckResult(spec.name, out[i].profile, "error", spec.command,
                                 detail=detail)
    return out


def _run_spec(project: Project, store: UpstreamStore, overlay_set, profile, spec: CheckSpec,
              workdir: Path, env: dict) -> list[CheckResult]:
    upstreams = [spec.upstream] if spec.upstream else project.upstream_names()
    matched = sorted({f.path for f in overlay_set.files if f.profile == profile
                      and f.upstream in upstreams and spec.matches(f.path)})
    if not matched:
        return [CheckResult(spec.name, profile, "skipped", spec.command,
                            detail="no overlay file of this profile matches "
                                   + (", ".join(spec.files) or "the check"))]
    tree = _build_tree(project, store, overlay_set, profile, spec, workdir)
    run_env = {**env, "PATCHFORGE_PROFILE": profile or "", "PATCHFORGE_TREE": str(tree.root),
               "PATCHFORGE_CHECK": spec.name}
    batches = [[path] for path in matched] if spec.per_file else [matched]
    results = []
    try:
        for index, batch in enumerate(batches):
            argv = _substitute(spec.command, file=batch[0] if spec.per_file else None,
                               files=batch, tree=tree.root, profile=profile)
            log = workdir / f"{spec.name}.{index}.log"
            status, code, tail, detail, seconds = _run(argv, tree.root, spec.timeout, run_env,
                                                       log)
            log.unlink(missing_ok=True)
            if status == "passed":
                files, patches = batch, _blame(tree, batch, "")[1]
            else:
                files, patches = _blame(tree, batch, tail)
            results.append(CheckResult(spec.name, profile, status, tuple(argv), tuple(files),
                                       tuple(patches), code, tail, detail, seconds))
    finally:
        shutil.rmtree(tree.root, ignore_errors=True)
    return results
