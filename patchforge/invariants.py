"""`Keeps:` invariants: text a patch promises is present in its patched files.

A clean merge can still neutralise a fix (upstream moved the guarded code, a later patch undid
it, a context match landed it in the wrong function). Each `Keeps: <path>: <text>` line of a
patch header names a file of the patched result and text that must be in it; `re:<pattern>` makes
it a regular expression (Python syntax, multi-line mode). Patterns are only ever matched, never
executed, and their size is bounded.

Owns: parsing Keeps lines (with the patch file and line in every error), checking one patch's
invariants against a reader of patched files (`check_patch_invariants`, used by the rebase engine
and lint), and checking a whole overlay set per profile (`check_overlay_invariants`, used by
`overlays` and `check`).
"""
from __future__ import annotations

import re
from typing import Any, TYPE_CHECKING

from patchforge.errors import EXIT_ATTENTION, InputError, PatchforgeError
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# Bounded so that a hostile pattern cannot make a check run away on a large file.
MAX_PATTERN = 512
# A pattern's size does not bound its time: `(a|aa)*$` backtracks exponentially (40 letters: some
# seconds; 60: hours), and a pull request's patch brings both the pattern and the text, holding
# its CI until the job's time limit. Each search gets this long, then is an error.
REGEX_SECONDS = 5.0


class _OutOfTime(Exception):
    pass


def _bounded_search(pattern: str, haystack: str) -> re.Match | None:
    """re.search(pattern, haystack, re.M), given up after REGEX_SECONDS: the regex engine
    checks for signals as it goes, so a timer's signal stops it (in the main thread, where
    Python runs signal handlers; elsewhere the search runs unbounded)."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or \
            not hasattr(signal, "setitimer"):
        return re.search(pattern, haystack, re.M)

    def out_of_time(signum, frame):
        raise _OutOfTime()

    previous = signal.signal(signal.SIGALRM, out_of_time)
    signal.setitimer(signal.ITIMER_REAL, REGEX_SECONDS)
    try:
        return re.search(pattern, haystack, re.M)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


@record(frozen=True)
class Invariant:
    path: str
    text: str
    regex: bool
    # Where the Keeps line is written, for the error of a pattern that runs out of time.
    source: str | None = field(default=None, compare=False)
    line: int | None = field(default=None, compare=False)

    def describe(self) -> str:
        return f"{self.path}: {'re:' if self.regex else ''}{self.text}"

    def holds(self, content: bytes | None) -> bool:
        if content is None:
            return False
        haystack = content.decode("utf-8", "surrogateescape")
        if self.regex:
            try:
                return _bounded_search(self.text, haystack) is not None
            except _OutOfTime:
                raise InputError(f"Keeps: re:{self.text} found no answer in {REGEX_SECONDS:g} s "
                                 f"on {self.path}: the pattern backtracks without end",
                                 path=self.source, line=self.line,
                                 hint="avoid nested repetition such as (a|aa)* or (a+)+"
                                 ) from None
        return self.text in haystack


@record(frozen=True)
class InvariantViolation:
    """One broken invariant of one patch in one profile's result."""

    profile: str | None
    upstream: str
    patch: str
    path: str
    invariant: str  # as written after `Keeps:` (Invariant.describe)
    reason: str  # "missing": the text is not in the file; "absent": the file is not there

    @property
    def message(self) -> str:
        where = f" (profile {self.profile})" if self.profile else ""
        what = "is not in the result" if self.reason == "missing" else \
            "names a file that is not in the result"
        return f"{self.upstream}/{self.patch}: Keeps invariant broken: {self.invariant} {what}" \
               + where

    def to_json(self) -> dict:
        return {"profile": self.profile, "upstream": self.upstream, "patch": self.patch,
                "path": self.path, "invariant": self.invariant, "reason": self.reason,
                "message": self.message}


class InvariantsBroken(PatchforgeError):
    """Keeps invariants do not hold on the overlays: a check found something (exit 1)."""

    exit_code = EXIT_ATTENTION

    def __init__(self, violations: list[InvariantViolation]) -> None:
        lines = [v.message for v in violations]
        from patchforge.model.words import counted

        super().__init__(f"{counted(len(lines), 'Keeps invariant')} broken:\n  "
                         + "\n  ".join(lines),
                         hint="fix the patch (or its Keeps: line); `patchforge check` lists them")
        self.violations = list(violations)


def _field_lines(patch: PatchFile) -> dict[int, int]:
    """Index of each Keeps field among the Keeps fields -> its first line in the patch file."""
    lines = {}
    line = 1 + getattr(patch, "preamble", b"").count(b"\n")
    index = 0
    for f in getattr(patch, "fields", ()):
        if f.name.lower() == "keeps":
            lines[index] = line
            index += 1
        line += f.raw.count(b"\n")
    return lines


def parse_invariants(patch: PatchFile, source: str | None = None) -> list[Invariant]:
    """The patch's Keeps lines. Errors name the patch file and the line of the Keeps field."""
    from patchforge.apply.diffparse import validate_path

    source = source or getattr(patch, "source", None) or "<patch>"
    field_lines = _field_lines(patch)
    out = []
    for index, value in enumerate(patch.get_all("Keeps")):
        for offset, line in enumerate(value.split("\n")):
            where_line = field_lines[index] + offset if index in field_lines else None
            where: dict[str, Any] = {"path": source, "line": where_line}
            line = line.strip()
            if not line:
                continue
            path, sep, text = line.partition(": ")
            if not sep or not text.strip() or not path.strip():
                raise InputError(f"Keeps: expected '<path>: <text>' or '<path>: re:<pattern>' "
                                 f"(got {line!r})", **where)
            path = path.strip()
            # The path is only ever looked up in the patched result, never opened on disk;
            # still, a path that could not be in the upstream is a mistake worth naming.
            validate_path(path, source=source, line=where_line)
            text = text.strip()
            regex = text.startswith("re:")
            if regex:
                text = text[3:]
                if len(text) > MAX_PATTERN:
                    raise InputError(f"Keeps: regular expression longer than {MAX_PATTERN} "
                                     "characters", **where)
                try:
                    re.compile(text)
                except re.error as exc:
                    raise InputError(f"Keeps: bad regular expression {text!r}: {exc}",
                                     **where) from None
            out.append(Invariant(path, text, regex, source=source, line=where_line))
    return out


def check_patch_invariants(patch: PatchFile, read) -> list[str]:
    """Violations (as messages) of the patch's Keeps: lines; `read(path)` gives patched bytes."""
    problems = []
    for inv in parse_invariants(patch):
        if not inv.holds(read(inv.path)):
            problems.append(f"Keeps invariant broken: {inv.describe()} is not in the result")
    return problems


def keeps_moved(patch: PatchFile, read, find_rename) -> dict[str, str]:
    """The Keeps paths the upstream moved: path -> its path on the target, for each Keeps line
    whose file is not in the result (`read(path)` is None) and that `find_rename(path)` finds
    renamed from the base to the target, the file there. A rebase follows such a rename for the
    diff (detect.py); a Keeps line names the same file, so it follows too: the judge checks it
    at the new path, and the rebase writes the new path into the moved patch
    (`with_keeps_moved`). Without it the line named a file the result no longer has, a stop
    that no resolution could satisfy."""
    moved: dict[str, str] = {}
    for inv in parse_invariants(patch):
        if inv.path in moved or read(inv.path) is not None:
            continue
        new = find_rename(inv.path)
        if new and read(new) is not None:
            moved[inv.path] = new
    return moved


def with_keeps_moved(patch: PatchFile, moved: dict[str, str]) -> PatchFile:
    """`patch` with each Keeps line naming a path of `moved` (`keeps_moved`) naming where it
    went; the text after the path, and every other line, as written."""
    if not moved:
        return patch

    def rewrite(value: str) -> str:
        out = []
        for line in value.split("\n"):
            lead = line[:len(line) - len(line.lstrip())]
            path, sep, text = line.strip().partition(": ")
            if sep and path.strip() in moved:
                line = f"{lead}{moved[path.strip()]}: {text}"
            out.append(line)
        return "\n".join(out)

    return patch.with_each("Keeps", rewrite)


def check_overlay_invariants(project: Project, overlay_set, *, store: UpstreamStore | None = None,
                             patch_sources=None) -> list[InvariantViolation]:
    """Every Keeps invariant of every patch in every profile, checked on that profile's result.

    The result of a profile is its overlay files (the upstream files with all of the profile's
    patches applied, in series order), so a later patch that undoes an earlier fix is caught.
    A Keeps line naming a file the profile's series does not touch is checked against the
    upstream file at the overlays' base revision (read from `store`, opened only if needed).
    `patch_sources` ({upstream: [(name, PatchFile, raw)]}) is the same as for
    `overlay.build_overlays`; by default the series is read from the project.
    """
    from patchforge.apply.series import applies_to_profile

    profiles: list[str | None] = list(project.config.profiles) or [None]
    violations: list[InvariantViolation] = []
    opened = None
    try:
        for upstream in project.upstream_names():
            if patch_sources is not None:
                patches = [(n, p) for n, p, _ in patch_sources.get(upstream, [])]
            else:
                patches = [(n, project.read_patch(upstream, n))
                           for n in project.patch_names(upstream)]
            with_keeps = [(n, p, parse_invariants(p)) for n, p in patches]
            if not any(invs for _, _, invs in with_keeps):
                continue
            for profile in profiles:
                files = [f for f in overlay_set.files
                         if f.upstream == upstream and f.profile == profile]
                result = {f.path: f.content for f in files}
                base_commit = files[0].base_commit if files else None
                for name, patch, invariants in with_keeps:
                    if not applies_to_profile(patch, profile):
                        continue
                    for inv in invariants:
                        if inv.path in result:
                            content = result[inv.path]
                        else:
                            if store is None and opened is None:
                                from patchforge.store.gitstore import UpstreamStore
                                opened = UpstreamStore.open()
                            reader = store if store is not None else opened
                            assert reader is not None  # opened just above
                            commit = base_commit or project.lock.pin(upstream).commit
                            content = reader.read_blob(commit, inv.path)
                        if inv.holds(content):
                            continue
                        violations.append(InvariantViolation(
                            profile, upstream, name, inv.path, inv.describe(),
                            "missing" if content is not None else "absent"))
    finally:
        if opened is not None:
            opened.close()
    return violations


def require_overlay_invariants(project: Project, overlay_set, *, store: UpstreamStore | None = None,
                               patch_sources=None) -> None:
    """`check_overlay_invariants`, raising InvariantsBroken (exit 1) when any is broken: for
    commands that must not write overlays that lose a fix."""
    violations = check_overlay_invariants(project, overlay_set, store=store,
                                          patch_sources=patch_sources)
    if violations:
        raise InvariantsBroken(violations)
