"""`init`, `upstream add` and `fetch`: starting a project and pinning its upstreams."""
from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import (ConfigError, SourceUnusable, StoreDamaged, StoreError,
                               UsageError)
from patchforge.formats.config import (PYPROJECT, STANDALONE, case_twin_problem,
                                       find_config_table, starting_config_text, table_prefix,
                                       toml_key, upstream_table_text, validate_config_table)
from patchforge.formats.lockfile import write_lock
from patchforge.fsutil import RepoLock, atomic_write, writing_project
from patchforge.model.config import UpstreamConfig
from patchforge.model.lock import Lock, UpstreamPin
from patchforge.names import KEPT_LANDINGS, check_directory_name, kept_landings_name_said

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# The overlay files and Dockerfiles are build outputs, as the tutorial and docs/deployment.md
# say (`overlays` makes them from the committed patches and lock; `overlays --check` checks a
# clone without them through the committed hashes): ignored but for the hashes, manifest and
# compose fragments a review reads. A stack that wants them committed takes the lines out.
# Each re-included file is named by its own anchored path, the very file `overlays` writes:
# an earlier `!/overlays/**/manifest.json` (and `**/SHA256SUMS`, `**/compose*.yaml`) also
# re-included the overlay of any upstream file of that name (`x/manifest.json`,
# `docker/compose.yaml`), which `git add -A` then committed. A profile's compose fragment,
# `overlays/<profile>/compose.yaml`, is named per profile (ignore_lines): without profiles,
# `overlays/<upstream>/compose.yaml` is the overlay of an upstream's own compose.yaml.
# The last two lines: the hidden temporary file a killed atomic write leaves beside its target
# (fsutil: `.NAME.XXXXXXXXXX.tmp`) in the series, or beside the lock and the configuration,
# which no command reads and nobody should commit.
_HEX10 = "[0-9a-f]" * 10
GITIGNORE_LINES = ("/.patchforge/", "/.overlays.new/", "/.overlays.old/",
                   "/overlays/**", "!/overlays/", "!/overlays/**/",
                   "!/overlays/SHA256SUMS", "!/overlays/manifest.json", "!/overlays/compose.yaml",
                   "!/overlays/README.md", "!/overlays/.gitignore",
                   f"/.*.{_HEX10}.tmp", f"/series/**/.*.{_HEX10}.tmp")
# The lines that mark a .gitignore as following patchforge's rules (a stack that commits its
# overlays took them out, and its .gitignore is left alone).
_IGNORES_OVERLAYS = "/overlays/**"
# What an earlier init wrote in place of the anchored lines (see above): taken out again by
# update_ignore_lines, named by lint.
OLD_GITIGNORE_LINES = ("!/overlays/**/SHA256SUMS", "!/overlays/**/manifest.json",
                       "!/overlays/compose*.yaml", "!/overlays/**/compose*.yaml")
_PROFILE_COMPOSE = re.compile(r"!/overlays/([^/]+)/compose\.yaml")


def ignore_lines(profiles) -> tuple[str, ...]:
    """The .gitignore lines of a project with these profiles: GITIGNORE_LINES, and each
    profile's compose fragment re-included by its own path (a profile name is letters, digits,
    '.', '_' and '-': nothing a .gitignore pattern reads as a wildcard)."""
    return GITIGNORE_LINES + tuple(f"!/overlays/{profile}/compose.yaml"
                                   for profile in sorted(profiles))


def ignore_lines_amended(project: Project) -> tuple[bytes, list[str], list[str]] | None:
    """What the project's .gitignore should be, where it follows patchforge's rules (it has
    `/overlays/**`) and differs from them: (its new bytes, the lines added, the lines taken
    out); None otherwise. Taken out: the lines an earlier init wrote (OLD_GITIGNORE_LINES) and
    the compose fragment of a profile the configuration no longer has; added: what
    ignore_lines() wants and the file lacks. Every other line is the user's and stays."""
    path = project.root / ".gitignore"
    try:
        existing = path.read_bytes()
    except FileNotFoundError:
        return None
    lines = existing.split(b"\n")
    if _IGNORES_OVERLAYS.encode() not in lines:
        return None
    profiles = set(project.config.profiles)

    def stale(line: bytes) -> bool:
        text = line.decode("utf-8", "replace")
        found = _PROFILE_COMPOSE.fullmatch(text)
        return text in OLD_GITIGNORE_LINES or (found is not None
                                               and found.group(1) not in profiles)

    removed = [line.decode("utf-8", "replace") for line in lines if stale(line)]
    kept = [line for line in lines if not stale(line)]
    added = [line for line in ignore_lines(profiles) if line.encode() not in kept]
    if not removed and not added:
        return None
    data = b"\n".join(kept)
    if data and not data.endswith(b"\n"):
        data += b"\n"
    return data + "".join(f"{line}\n" for line in added).encode(), added, removed


def update_ignore_lines(project: Project) -> tuple[list[str], list[str]] | None:
    """Put the project's .gitignore in step with ignore_lines() (ignore_lines_amended), written
    atomically: for `overlays`, whose write is where a profile's compose fragment first needs
    its line, and which brings a .gitignore an earlier init wrote up to date. Returns (added,
    taken out), None when nothing was written."""
    amended = ignore_lines_amended(project)
    if amended is None:
        return None
    data, added, removed = amended
    atomic_write(project.root / ".gitignore", data)
    return added, removed


# The history is append-only JSON lines, so two branches that each appended merge by keeping both
# sides' lines; the generated files are folded away in GitHub's diffs and language statistics.
# Patch files, the lock and the generated files are kept byte for byte (`-text`): with
# core.autocrlf (Git for Windows' default) git would strip the CRs of a CRLF file's diff lines
# when committing a patch, and give every line of every patch a CR in a checkout.
GITATTRIBUTES_LINES = (
    "/series/history.jsonl merge=union",
    "/series/PATCHES.md linguist-generated",
    "/overlays/**/SHA256SUMS linguist-generated",
    "/overlays/**/manifest.json linguist-generated",
    "/overlays/**/compose*.yaml linguist-generated",
    "/series/**/*.patch -text",
    "/series/**/series -text",
    "/upstream.lock -text",
    "/overlays/** -text",
)


def init_project(directory: Path, *, standalone: bool = False) -> list[str]:
    """Write a starting configuration, an empty series/ and an empty lock. Returns what it wrote."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    pyproject = directory / PYPROJECT
    if (directory / STANDALONE).exists() or (pyproject.exists()
                                             and find_config_table(pyproject) is not None):
        raise UsageError(f"{directory} already has a patchforge configuration")
    if standalone or not pyproject.exists():
        atomic_write(directory / STANDALONE, starting_config_text("").encode())
        written.append(STANDALONE)
    else:
        data = pyproject.read_bytes()
        eol = _line_end(data)
        sep = b"" if data.endswith(b"\n\n") or data.endswith(b"\r\n\r\n") or not data else \
            (eol if data.endswith(b"\n") else eol + eol)
        new = data + sep + _in_line_ends(starting_config_text("tool.patchforge."), eol)
        _check_appended(pyproject, new)
        atomic_write(pyproject, new)
        written.append(PYPROJECT)
    series = directory / "series"
    series.mkdir(exist_ok=True)
    keep = series / ".gitkeep"
    if not keep.exists():
        atomic_write(keep, b"")
    written.append("series/")
    write_lock(directory / "upstream.lock", Lock())
    written.append("upstream.lock")
    for name, lines in ((".gitignore", GITIGNORE_LINES), (".gitattributes", GITATTRIBUTES_LINES)):
        if _add_missing_lines(directory / name, lines):
            written.append(name)
    return written


def _line_end(data: bytes) -> bytes:
    """The line end a configuration file is written in: CRLF where most of its lines end so
    (a file made on Windows), else LF. What is appended to it is written alike: LF lines in a
    CRLF file, which tomllib reads, make one file of two line-end styles, every appended line
    shown as changed by an editor or a `git diff` under core.autocrlf."""
    return b"\r\n" if data.count(b"\r\n") * 2 > data.count(b"\n") else b"\n"


def _in_line_ends(text: str, eol: bytes) -> bytes:
    """`text` (LF lines) as bytes ending each line with `eol`."""
    return text.encode().replace(b"\n", eol)


def _add_missing_lines(path: Path, lines: tuple[str, ...]) -> bool:
    """Append the lines `path` lacks, keeping everything it has. True if it was written."""
    existing = path.read_bytes() if path.exists() else b""
    missing = [line for line in lines if line.encode() not in existing.split(b"\n")]
    if not missing:
        return False
    if existing and not existing.endswith(b"\n"):
        existing += b"\n"
    atomic_write(path, existing + "".join(f"{line}\n" for line in missing).encode())
    return True


# The option of `upstream add` that gives each key of the table it appends.
_OPTION_OF_KEY = {"url": "--git", "package": "--wheel", "path": "--dir",
                  "install-root": "--install-root", "follow": "--follow"}


def _refuse_bad_values(upstream: UpstreamConfig) -> None:
    """The values of the table `upstream add` appends, checked against the configuration's
    schema before anything is fetched or written: a bad --install-root was found only once the
    upstream was fetched, and named a line of the configuration that was never written (or, for
    a newline, said "add the table by hand")."""
    from patchforge.formats.schemas import first_violation

    table = tomllib.loads(upstream_table_text("", upstream))
    found = first_violation(table, "config")
    if found is None:
        from patchforge.formats.config import install_root_problem

        problem = upstream.install_root and install_root_problem(upstream.install_root)
        if problem:
            raise UsageError(f"--install-root {problem}")
        _refuse_follow_of_no_ref_name(upstream.follow, upstream.url)
        return
    where, message = found.where, found.message
    key = next((part for part in reversed(where) if part in _OPTION_OF_KEY), None)
    value = table["upstreams"][upstream.name].get(key) if key else None
    if key == "package":  # the distribution rule says why
        from patchforge.names import check_distribution
        try:
            check_distribution(value)
        except ValueError as exc:
            raise UsageError(f"--wheel: {exc}") from None
    raise UsageError(f"{_OPTION_OF_KEY[key]} {value!r}: not a valid {key}{found.why}" if key
                     else message)


def _refuse_follow_of_no_ref_name(follow: str | None, url: str | None) -> None:
    """A --follow git takes for no branch or tag name (`main --upload-pack=x`, `rel ease`):
    written, `lint` was quiet and only `pr` or `bump` refused it later, naming the line. Its
    glob characters the configuration refuses as a pattern (formats.config)."""
    from patchforge.store.git import is_ref_name

    if follow is None or is_ref_name(follow):
        return
    raise UsageError(f"--follow {follow!r}: not a branch or tag name git takes (no space, "
                     "'..', '~^:?*[\\', control character, leading '-', or part beginning "
                     "with '.' or ending in '.lock'); nothing was written",
                     hint=_FOLLOW_NAMES_HINT.format(listing=_ls_remote(url)))


# How a follow is named, said by both refusals. `git branch -r` shows a clone's remote
# branches as `origin/main`, a name the upstream has no branch of: the upstream's own names are
# what `git ls-remote` lists, after refs/heads/ or refs/tags/.
_FOLLOW_NAMES_HINT = (
    "name the branch or tag to follow as the upstream names it, without a remote's name "
    "(`main`, not `origin/main`): {listing} lists them, the name after refs/heads/ or "
    "refs/tags/; or leave --follow out to follow the remote's default branch")


def _ls_remote(url: str | None) -> str:
    """The `git ls-remote` that lists the branches and tags of the upstream at `url`."""
    import shlex

    return f"`git ls-remote --heads --tags {shlex.quote(url)}`" if url else \
        "`git ls-remote --heads --tags URL`"


def _refuse_absent_follow(project: Project, store: UpstreamStore,
                          upstream: UpstreamConfig) -> None:
    """A --follow the git upstream has no branch or tag of (`relase`): written, only `pr` and
    `bump` refused it later. `upstream add` asks the remote for --at already; the followed
    ref is asked for alike (and fetched: `bump` and `pr` read it), in the later refusal's
    words. Offline, nothing can be said of it."""
    from patchforge.errors import RefNotFound
    from patchforge.pins import git_url_for
    from patchforge.store.gitsource import fetch_git_upstream

    if upstream.kind != "git" or not upstream.follow or project.offline:
        return
    try:
        fetch_git_upstream(store, upstream.name, git_url_for(project, upstream.url or ""),
                           upstream.follow)
    except RefNotFound as exc:
        raise UsageError(f"--follow {upstream.follow!r}: {exc.message}; nothing was written",
                         hint=_FOLLOW_NAMES_HINT.format(listing=_ls_remote(upstream.url))) \
            from None


def _refuse_unreadable_files(store: UpstreamStore, name: str, commit: str) -> None:
    """A git upstream whose files cannot be had (its URL a blob-less partial clone, which never
    fetches a file it lacks for another repository) was pinned, and every `new` and `edit`
    then failed: one file of the pinned tree is read now, and the pin refused with the reason
    and the ways on."""
    try:
        store.check_a_file_readable(commit)
    except SourceUnusable as exc:
        raise SourceUnusable(f"{exc.message}; nothing was written ({name} is not added)",
                             hint=exc.hint) from None


def _check_appended(path: Path, data: bytes) -> None:
    """Refuse to write a configuration that would no longer parse (e.g. a pyproject.toml whose
    `tool` is an inline table cannot take a `[tool.patchforge]` section)."""
    try:
        text = data.decode("utf-8")
        doc = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot add the patchforge table to this file: {exc}",
                          path=str(path), hint="add the table by hand") from None
    if path.name == STANDALONE:
        validate_config_table(doc, text, str(path), "")
    elif isinstance(doc.get("tool"), dict) and isinstance(doc["tool"].get("patchforge"), dict):
        validate_config_table(doc["tool"]["patchforge"], text, str(path), "tool.patchforge.")


def _given_spec(spec: str, name: str, configured, command: str) -> str:
    """`--at` SPEC for upstream `name`, read as `rebase --to` reads its SPECs
    (targets.own_spec)."""
    from patchforge.targets import own_spec

    return own_spec(spec, name, list(configured), refusal=f"`{command}` pins {{name}}, and "
                    "--at {spec!r} names {other}",
                    again="`patchforge upstream pin {other} --at {rest}`")


def add_upstream(project: Project, upstream: UpstreamConfig, spec: str) -> UpstreamPin:
    """Append the upstream to the configuration and pin SPEC in the lock. Returns the pin."""
    from patchforge.pins import open_store, pin_for_spec

    spec = _given_spec(spec, upstream.name, project.config.upstreams, "upstream add")
    if upstream.name in project.config.profiles:
        # overlays/<profile>/<upstream>/ reads either way: the configuration refuses it
        # on load, and written, no command would have loaded it again.
        raise UsageError(f"{upstream.name!r} is the name of a profile: an upstream cannot be "
                         "named like one (overlays/<profile>/<upstream>/ would read either "
                         "way); nothing was written", hint="choose another name")
    if upstream.name in project.config.upstreams:
        raise UsageError(f"upstream {upstream.name!r} is already configured",
                         hint="use `patchforge rebase --to` to move it")
    try:
        check_directory_name(upstream.name, "upstream")
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if upstream.name == KEPT_LANDINGS:
        raise UsageError(kept_landings_name_said(upstream.name) + "; choose another name")
    # An edit's state is `.patchforge/work/<upstream>.json` beside its worktree
    # `.patchforge/work/<upstream>/`: upstreams `up` and `up.json` would share one path (an
    # edit open in one made every edit of the other unreadable).
    for other in project.config.upstreams:
        if upstream.name == f"{other}.json" or other == f"{upstream.name}.json":
            raise UsageError(
                f"an upstream cannot be named {upstream.name!r} beside upstream {other!r}: "
                f".patchforge/work/{min(other, upstream.name, key=len)}.json, where an edit of "
                "the one keeps its state, is where an edit of the other opens its worktree; "
                "choose another name")
    twin = case_twin_problem(upstream.name, "upstreams", [*project.config.upstreams,
                                                          upstream.name])
    if twin is not None:
        raise UsageError(twin)
    _refuse_bad_values(upstream)
    _refuse_shared_config(project, upstream.name, spec)
    with RepoLock(project.state_dir), open_store(project) as store:
        from patchforge.stack import require_readable_history, series_changed
        from patchforge.state import refuse_beside_cut_short_write_out

        # A rebase's write-out cut short rewrites the lock whole when it is finished or undone.
        refuse_beside_cut_short_write_out(project, "upstream add")
        require_readable_history(project)  # before the lock and configuration are written
        pin = pin_for_spec(project, store, upstream, spec)
        if upstream.kind == "git" and not project.offline:
            _refuse_unreadable_files(store, upstream.name, pin.commit)
        _refuse_absent_follow(project, store, upstream)
        found = find_config_table(project.config_path)
        prefix = table_prefix(project.config_path)
        if found is None:
            raise ConfigError("no patchforge table", path=str(project.config_path))
        data = project.config_path.read_bytes()
        eol = _line_end(data)
        sep = eol if data.endswith(b"\n") else eol + eol
        new_config = data + sep + _in_line_ends(upstream_table_text(prefix, upstream), eol)
        _check_appended(project.config_path, new_config)
        lock = project.lock.with_pin(upstream.name, pin)
        # Lock first: a kill between the two leaves a pin without config, which `add` again
        # simply overwrites; the reverse would leave a configured upstream with no pin.
        with writing_project(project.root):  # readers see both files or neither
            write_lock(project.lock_path, lock)
            # A link to a file inside the project (conf/patchforge.toml, which no other
            # project reads; _refuse_shared_config refused one leading out): the file it names
            # is written, and the link stays one.
            atomic_write(project.config_path.resolve() if project.config_path.is_symlink()
                         else project.config_path, new_config)
            project.__dict__.pop("config", None)
            series_changed(project)
    return pin


def _refuse_shared_config(project: Project, name: str, spec: str) -> None:
    """Refuse `upstream add` when the configuration is a link to a file outside the project
    (patchforge.toml -> ../shared.toml, one file beside several projects): written through it,
    every project linking the file was configured with the upstream and only this one's lock
    pinned it (the lock is each project's own); renamed over, the link became a file without a
    word. A link to a file inside the project (conf/patchforge.toml) is this project's alone:
    written through, as add_upstream does."""
    import shlex

    path = project.config_path
    if not path.is_symlink():
        return
    target = path.resolve()
    if target.is_relative_to(project.root.resolve()):
        return
    raise UsageError(
        f"{path.name} is a link to {target}, which every project linking it reads, each with "
        f"its own upstream.lock: `upstream add` would configure {name!r} there and pin it in "
        "this project only; nothing was written",
        hint=f"to give this project a configuration of its own, replace the link by a copy "
             f"(`cp --remove-destination {shlex.quote(str(target))} "
             f"{shlex.quote(str(path))}`) and run the command again; to add the upstream to "
             f"every project sharing the file, add its [{table_prefix(path)}upstreams."
             f"{toml_key(name)}] table to {target} and pin it in each: `patchforge upstream "
             f"pin {shlex.quote(name)} --at {shlex.quote(spec)}`")


def fetch(project: Project, names: list[str] | None = None, *,
          on_upstream=None, notes: list[str] | None = None,
          unfetched: list[tuple[str, str, bool, str]] | None = None
          ) -> list[tuple[str, str, str]]:
    """Bring the locked revisions into the store. Returns (upstream, commit, what happened).
    `on_upstream(name, label)` is called before each (the CLI's progress indicator). The
    commits the fixes kept as landed name (each `Base`, each recorded landing) are asked of
    their upstream again, even those an earlier command found it does not serve (the retry
    pins.bring_named_commits records); `notes` gets a sentence for each still missing, and
    `unfetched` (UPSTREAM/upstreamed/NAME, the commit, whether the remote gave no answer at
    all, "base" or "landing") each kept fix whose base or recorded landing could not be
    fetched for another reason than upstream answering it lacks it (the network, an error of
    the remote's): the caller's exit status says it, since the cache is not what a later
    `--offline` command needs."""
    from patchforge.pins import ensure_pinned, open_store

    lock = project.lock
    for name in names or ():
        if "=" in name:
            # `fetch up=v2` reads like a SPEC: fetch brings the locked revisions only, and its
            # answer, "not pinned: pin it with `upstream pin up=v2`", named no real command.
            upstream, _, spec = name.partition("=")
            raise UsageError(f"fetch takes upstream names, not SPECs ({name!r}): it brings the "
                             "revisions upstream.lock pins",
                             hint=f"to move {upstream} to {spec}: `patchforge rebase --to "
                                  f"{name}` (`patchforge status --against {name}` first)")
        project.config.upstream(name)  # unknown: named with the configured ones
    names = names or [u for u in project.upstream_names() if u in lock.upstreams]
    out = []
    with open_store(project) as store:
        for name in names:
            pin = lock.pin(name)
            if on_upstream:
                on_upstream(name, pin.label)
            what = ensure_pinned(project, store, name, pin)
            # Warming or mending a cache (a CI job's first step) must not call a damaged store
            # fine: its pinned tree is read through.
            store.check_readable(pin.commit)
            if pin.kind == "git":
                said = _bring_series_files(project, store, name, pin.commit,
                                           unfetched=unfetched)
                if notes is not None:
                    notes += said
            out.append((name, pin.commit, what))
    return out


def _bring_series_files(project: Project, store: UpstreamStore, name: str, commit: str, *,
                        unfetched: list[tuple[str, str, bool, str]] | None = None) -> list[str]:
    """The files the series touches, at the pin, into a partial store in one fetch: a git
    upstream's blobs otherwise come when first read, and an `--offline` command (a pre-commit
    hook's) after `fetch` would find them missing. A patch that does not parse is left to
    `lint`: it touches no file anyone can read yet. The commits the kept fixes name are asked
    for again (retry): returns a sentence for each kept fix whose `Base` is still missing."""
    from patchforge.errors import PatchforgeError

    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.reverts import gone_upstream, kept_fixes

    paths: dict[str, None] = {}
    for patch_name in project.patch_names(name):
        try:
            paths.update(dict.fromkeys(project.read_patch(name, patch_name).paths))
        except (PatchforgeError, OSError):
            continue
    kept = kept_fixes(project, name)
    for kept_name, data in kept:
        try:
            paths.update(dict.fromkeys(parse_patch_file(data, kept_name).paths))
        except PatchforgeError:
            continue
    if paths:
        store.prefetch([(commit, list(paths))])
    if not kept or project.offline:
        return []
    from patchforge.pins import bring_named_commits
    from patchforge.reverts import kept_base, kept_commits

    failed: dict[str, str] = {}
    no_answer: set[str] = set()
    missing = set(bring_named_commits(project, store, name,
                                      kept_commits([data for _, data in kept]), retry=True,
                                      failed=failed, no_answer=no_answer))
    # The fixes kept as landed are judged at the pin (reverted there?) by `overlays`, whose
    # Dockerfile fails its build where the pin lacks one, and by `verify`: the files of
    # the revisions that judgement reads come now, as it reads them.
    gone_upstream(project, store, name, commit, unread=[])
    said = []
    url = ""
    if failed:
        from patchforge.pins import git_url_for
        from patchforge.store.giturl import redact

        url = redact(git_url_for(project, project.config.upstream(name).url or ""))
    for kept_name, data in kept:
        base = kept_base(data)
        # Its base, then each landing its header records: a landing is no ancestor of the pin
        # where upstream cherry-picked it onto another branch, or the pin went back before it.
        named = ([base] if base else []) + [c for c in dict.fromkeys(kept_commits([data]))
                                            if c != base]
        for one in named:
            what = "base" if one == base else "landing"
            if one in failed:
                if unfetched is not None:
                    unfetched.append((f"{name}/upstreamed/{kept_name}", one, one in no_answer,
                                      what))
                # (No answer: the next command asks again.)
                said.append(f"{name}/upstreamed/{kept_name}: its {what} commit {one[:12]} "
                            f"could not be fetched from {name} ({url}): {failed[one]}; "
                            f"commands judge it without its {what}, and ask for it again "
                            "(`patchforge status` says where that is not enough)")
            elif one in missing:
                said.append(f"{name}/upstreamed/{kept_name}: its {what} commit {one[:12]} "
                            f"is not served by {name}, asked again: commands judge it without "
                            f"its {what} (`patchforge status` says where that is not enough)")
    return said


def _keeps_landings(project: Project, upstream: str) -> bool:
    """Whether `upstream` keeps a fix under upstreamed/ (a look at the directory alone)."""
    from patchforge.names import KEPT_LANDINGS

    try:
        return any(name.endswith(".patch")
                   for name in os.listdir(project.series_dir(upstream) / KEPT_LANDINGS))
    except (FileNotFoundError, NotADirectoryError):
        return False


def fetch_missing(project: Project, store: UpstreamStore, *, on_upstream=None) -> list[str]:
    """Bring into `store` the locked revision of every upstream that has patches, or keeps a
    fix under upstreamed/ (judged at the pin, whether upstream took it out again), where it
    is missing (a fresh clone before `patchforge fetch`), and check the others against their
    source. Returns the upstreams fetched.

    Offline, a missing revision is an error that names the command that brings it.
    """
    from patchforge.pins import ensure_pinned, refuse_pin_of_another_kind

    lock = project.lock
    fetched = []
    for name in project.upstream_names():
        if name not in lock.upstreams or not (project.patch_names(name) or
                                               _keeps_landings(project, name)):
            continue
        pin = lock.pin(name)
        refuse_pin_of_another_kind(project, name, pin)
        if store.has_object(pin.commit):
            # Held by the shared store, but maybe as another project's: checked against this
            # pin's source as status checks it (a ref lookup once it was), never taken as is.
            ensure_pinned(project, store, name, pin)
            continue
        if on_upstream:
            on_upstream(name, pin.label)
        try:
            # Offline too: a cached wheel or a local directory is imported without the network.
            ensure_pinned(project, store, name, pin)
        except StoreError as exc:
            if not project.offline or isinstance(exc, StoreDamaged):
                raise
            raise StoreError(f"upstream {name}: the pinned {pin.label} ({pin.commit[:12]}) is "
                             f"not in the cache ({exc.message})",
                             hint=f"run `patchforge fetch {name}` (it needs the network once)"
                             ) from None
        fetched.append(name)
    return fetched


def pin_upstream(project: Project, name: str, spec: str, *, force: bool = False):
    """Pin an upstream that the configuration already names (the user wrote its table).
    Returns (the pin, the image pin the move dropped or None: Lock.with_pin).

    An upstream with patches is not moved to another commit without --force (that is a
    rebase); a SPEC naming the commit already pinned (an image of it, `REPO:TAG`, or another
    name of it) moves nothing, and is pinned: the patches stay on the commit they were made on,
    and the lock records the image."""
    from patchforge.pins import open_store, pin_for_spec

    spec = _given_spec(spec, name, project.config.upstreams, "upstream pin")
    upstream = project.config.upstream(name)
    lock = project.lock
    held = lock.upstreams[name] if name in lock.upstreams and project.patch_names(name) and \
        not force else None
    with RepoLock(project.state_dir), open_store(project) as store:
        from patchforge.state import require

        # Asked again under the lock (the command line asked before it): a rebase stopped
        # meanwhile by another command holds the old pin in its journal.
        require(project, "upstream pin", [name])
        from patchforge.stack import require_readable_history, series_changed

        require_readable_history(project)  # before the lock is written, not after
        pin = pin_for_spec(project, store, upstream, spec)
        if held is not None and pin.commit != held.commit:
            raise UsageError(f"{name} is already pinned at {held.label} ({held.commit[:12]}) "
                             f"and has patches; {spec} is {pin.commit[:12]}: moving it there "
                             "is a rebase",
                             hint=f"run `patchforge rebase --to {name}={spec}` (or pin --force)")
        # The ledger (series/PATCHES.md, where the stack keeps one) shows each pin: made again
        # with the lock, or `ledger --check` in the stack's CI fails on the re-pin.
        lock = project.lock.with_pin(name, pin)
        unpinned = lock.dropped_image(project.lock)
        with writing_project(project.root):
            write_lock(project.lock_path, lock)
            series_changed(project)
    return pin, unpinned
