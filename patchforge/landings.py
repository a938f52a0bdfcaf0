"""The fixes dropped from a series as landed upstream (kept under `series/<upstream>/upstreamed/`)
and the files they changed that no overlay covers: what a deployment's image must hold of its
own, since nothing patchforge mounts or copies carries them.

`verify --installed` and `verify --image` (ops/deploy.py) judge those files in a tree or an
image; the generated Dockerfile checks them, as it checks the overlays' pre-images, against the
upstream's file at the locked revision (overlay.py).

And the form a dropped fix is kept in there (`landed_diff`: its change as the landing commit
made it). A rebase that drops fixes asks for it once per landed fix; reverts.py, which judges
the kept fixes later (91 KB of source: about 0.4% of a clean 30-patch rebase's instructions
to load), is loaded only for the rare remade diff whose undoing does not apply as it is.
"""
from __future__ import annotations

from typing import Any, TYPE_CHECKING

from patchforge.errors import PatchforgeError
from patchforge.model.record import field, record

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


def any_kept(project: Project) -> bool:
    """Whether any upstream keeps a fix under upstreamed/ (a look at the directories alone: a
    plain `verify` of a stack without one reads nothing more, nor imports what judges them)."""
    import os

    from patchforge.names import KEPT_LANDINGS

    for upstream in project.upstream_names():
        try:
            names = os.listdir(project.series_dir(upstream) / KEPT_LANDINGS)
        except (FileNotFoundError, NotADirectoryError):
            continue
        if any(name.endswith(".patch") for name in names):
            return True
    return False


def unparsed_not_checked(project: Project) -> list[str]:
    """`NOT CHECKED: UPSTREAM/upstreamed/NAME is judged by nothing: FILE:LINE: ...` of each
    fix kept under upstreamed/ that does not parse (reverts.unparsed_line, as `status` and
    `check` say it): whether the pin still has its change is not known, and the checks that
    judge the kept fixes (plain `verify`, `overlays --check`) pass over it otherwise. A note:
    it changes no exit status there, as a kept fix they cannot judge does not."""
    if not any_kept(project):
        return []
    from patchforge.reverts import unparsed_line, unparsed_said

    return [unparsed_line(said) for said in unparsed_said(project, project.upstream_names())]


@record
class LandedFixes:
    """The fixes kept under upstreamed/ (of the profile), and the files they changed that no
    overlay covers: what the image must hold of its own."""

    # (upstream, file name, "up/upstreamed/x.patch": how rows and notes name it)
    fixes: list[tuple[str, str, str]] = field(default_factory=list)
    # target key (normalized) -> {"upstream", "path", "target", "landed": [fix...]}
    files: dict[str, dict[str, Any]] = field(default_factory=dict)
    covered: dict[str, list[str]] = field(default_factory=dict)  # fix -> targets overlaid
    # fix -> [(target key, FilePatch)]: its changes to the files an overlay covers, whose
    # overlay must hold them where the pin lacks the fix (`overlaid_lacking`).
    covered_changes: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)
    unread: list[str] = field(default_factory=list)  # why a fix could not be taken in
    # fix -> reverts.LandingGone: the fixes whose change the locked revision does not have
    # (reverted upstream since the landing, or a pin from before it), as status judges them;
    # filled by `expected` (or `judge_gone`). The upstream's file at the pin lacks them.
    gone: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def of(cls, project: Project, profile: str | None, by_target,
           kept: dict[str, list[tuple[str, bytes]]] | None = None) -> "LandedFixes":
        """`by_target`: the targets (normalized) overlays cover; `kept`: {upstream: [(file
        name, bytes)]} of the fixes under upstreamed/ (default: the project's, read now; a
        rebase gives those its write-out leaves)."""
        from pathlib import PurePosixPath

        from patchforge.formats.patchfile import parse_patch_file
        from patchforge.layers import normalize
        from patchforge.names import KEPT_LANDINGS
        from patchforge.reverts import kept_fixes

        found = cls()
        for upstream in project.upstream_names():
            install_root = project.config.upstream(upstream).install_root
            for name, data in (kept[upstream] if kept is not None and upstream in kept
                               else kept_fixes(project, upstream)):
                fix = f"{upstream}/{KEPT_LANDINGS}/{name}"
                try:
                    patch = parse_patch_file(data, str(project.series_dir(upstream)
                                                       / KEPT_LANDINGS / name))
                except PatchforgeError as exc:
                    found.unread.append(f"{fix}: {exc}")
                    continue
                if profile is not None and patch.profiles and profile not in patch.profiles:
                    continue
                if not install_root:
                    found.unread.append(f"{fix}: upstream {upstream} has no install-root, so "
                                        "where its files live in the image is not known")
                    continue
                found.fixes.append((upstream, name, fix))
                for fp in patch.file_patches:
                    key = normalize(str(PurePosixPath(install_root) / fp.path))
                    if key in by_target:
                        # Overlaid: the overlay's pre-image, checked already, is the
                        # upstream's file at the pin, which holds the fix, unless upstream
                        # took it out there (`gone`): then the overlay must (overlaid_lacking).
                        found.covered.setdefault(fix, []).append("/" + key)
                        found.covered_changes.setdefault(fix, []).append((key, fp))
                        continue
                    entry = found.files.setdefault(key, {"upstream": upstream, "path": fp.path,
                                                         "target": "/" + key, "landed": [],
                                                         "changes": []})
                    entry["landed"].append(fix)
                    entry["changes"].append(fp)
        return found

    def pinned_sha256(self, store, lock) -> dict[str, str | None]:
        """target key -> sha256 of the upstream's file at the revision `lock` pins (None: the
        upstream has no such file there), read from `store` (raises PatchforgeError when it
        cannot give them)."""
        import hashlib

        by_upstream: dict[str, list[str]] = {}
        for entry in self.files.values():
            by_upstream.setdefault(entry["upstream"], []).append(entry["path"])
        blobs: dict[tuple[str, str], bytes | None] = {}
        for upstream, paths in by_upstream.items():
            commit = lock.pin(upstream).commit
            for path, data in store.read_blobs(commit, sorted(set(paths))).items():
                blobs[upstream, path] = data
        return {key: (hashlib.sha256(data).hexdigest() if (data := blobs.get((e["upstream"], e["path"])))
                      is not None else None)
                for key, e in self.files.items()}

    def expected(self, project: Project) -> dict[str, str | None]:
        """pinned_sha256 at the project's lock, from the project's store. Raises
        PatchforgeError when the store cannot give them (a deployment host without the
        upstream, offline). Fills `gone`: a file equal to the pin's holds none of the fixes
        status says upstream took out there."""
        from patchforge.pins import open_store

        with open_store(project) as store:
            found = self.pinned_sha256(store, project.lock)
            self.judge_gone(project, store, project.lock, say_unread=True)
        return found

    def judge_gone(self, project: Project, store, lock, *,
                   say_unread: bool = False) -> list[str]:
        """Fill `gone`: of the fixes, those the revision `lock` pins lacks (reverts.gone_upstream,
        judged at the pin as status judges them), read from `store`. Returns what could not be
        judged, one sentence per fix whose files there could not be read (offline, a partial
        cache); with `say_unread`, those go into `unread` too: the check that asked says it did
        not check it (never in the Dockerfile, whose bytes must not depend on the cache: its
        writer refuses to write one without them)."""
        from patchforge.names import KEPT_LANDINGS
        from patchforge.reverts import gone_upstream

        said: list[str] = []
        for upstream in dict.fromkeys(upstream for upstream, _, _ in self.fixes):
            pin = lock.pin(upstream)
            failed: list[tuple[str, str]] = []
            for gone in gone_upstream(project, store, upstream, pin.commit, unread=failed):
                self.gone[f"{upstream}/{KEPT_LANDINGS}/{gone.name}"] = gone
            said += [f"{upstream}/{KEPT_LANDINGS}/{name}: whether {upstream} {pin.label} still "
                     f"holds it could not be read ({' '.join(why.split())})"
                     for name, why in failed]
        if say_unread:
            self.unread += [why + ("; without --offline the cache brings its files"
                                   if project.offline else "") for why in said]
        return said

    def taken_out(self) -> list[tuple[str, Any]]:
        """(target, LandingGone) of each file no overlay covers whose fix the pin lacks (in
        `gone`): the upstream's own file there does not hold it, so no image that is the pin's
        upstream does."""
        return [(entry["target"], self.gone[fix]) for _, entry in sorted(self.files.items())
                for fix in entry["landed"] if fix in self.gone]

    def overlaid_lacking(self, content_of) -> list[tuple[str, Any, str]]:
        """(target, LandingGone, state) of each overlaid file of a fix the pin lacks (in
        `gone`) whose overlay, `content_of(target key)` (None: not to be judged here), does not
        hold the fix's change: the overlay is the pin's file with the other fixes, so the fix
        is in it only where another patch of the series makes it again. `state`:
        reverts.change_state's ("gone": the code as before the fix; "other": not told)."""
        from patchforge.reverts import change_state

        found = []
        for fix, changes in sorted(self.covered_changes.items()):
            if fix not in self.gone:
                continue
            for key, fp in changes:
                content = content_of(key)
                if content is None:
                    continue
                state = change_state(fp, content)
                if state != "present":
                    found.append(("/" + key, self.gone[fix], state))
        return found


def gone_where_nothing_mounts(project: Project, store,
                              unread: list[str] | None = None) -> list[str]:
    """What is said of each fix kept under upstreamed/ of an upstream without an install-root
    that its pin lacks (upstream took it out, or the pin is before its landing): no overlay of
    such an upstream is mounted, so `LandedFixes` (which follows the files into the image)
    leaves it out, and `check` and `overlays` exited 0 while `status` said it needs attention.
    `unread` gets the `NOT CHECKED: ...` sentence of each such fix that could not be judged
    at the pin (its files, or the revision it landed in, not in the cache), as `status` notes
    it: they said nothing of it."""
    from patchforge.reverts import gone_upstream, unread_said

    said = []
    for upstream in project.upstream_names():
        if project.config.upstream(upstream).install_root or \
                upstream not in project.lock.upstreams:
            continue
        pin = project.lock.pin(upstream)
        failed: list[tuple[str, str]] = []
        said += [" ".join(gone.message().split())
                 for gone in gone_upstream(project, store, upstream, pin.commit, unread=failed)]
        if unread is not None:
            unread += [unread_said(project, upstream, pin.label, name, why)["message"]
                       for name, why in failed]
    return said


def landed_diff(store: UpstreamStore, patch: PatchFile, landing: str, *,
                parents: dict[str, str | None] | None = None) -> tuple[bytes, str] | None:
    """The fix's change as the landing commit made it: (diff, the landing's parent), each of
    the fix's files from the landing's first parent to the landing, only the landing's hunks
    that carry the fix's own lines (a `+` line the fix adds, or a `-` line it removes). Kept
    under upstreamed/ in this form, a fix whose own pre-image upstream had changed before it
    landed the fix (a fix skipped at a conflict, or a rebase past both commits) is found gone
    again when upstream takes the landing back; with its own diff, its pre-image never comes
    back. None when its own diff applies to the landing's parent as it is (the pre-image the
    landing changed: that diff is kept byte for byte), or when the landing's form cannot be
    made (a file the fix creates, deletes or renames, a binary one, a file of it the landing
    does not carry, or a diff the landing's files are not found to have).

    `parents`: the landings' first parents as `store.parents_of` gave them, for a caller that
    asks for many landings at once (a rebase dropping 81 fixes waited for 81 rounds of
    requests to cat-file); by default asked here."""
    from patchforge.apply.diffparse import parse_diff
    from patchforge.apply.hunks import apply_file_patch, applies_unfuzzed
    from patchforge.model.record import replace
    from patchforge.store.diff import FileChange, make_diff

    try:
        parent = (parents if parents is not None else store.parents_of([landing])).get(landing)
        own = list(patch.file_patches)
    except PatchforgeError:
        return None
    if parent is None:
        return None  # a root commit, or one the store does not have
    if not own or any(not fp.told_by_content or fp.is_new or fp.is_delete or fp.is_binary
                      for fp in own):
        return None
    paths = sorted({fp.path for fp in own})
    try:
        before, after = store.read_blobs(parent, paths), store.read_blobs(landing, paths)
    except PatchforgeError:
        return None
    if all((old := before.get(fp.path)) is not None and applies_unfuzzed(old, fp, reverse=False)
           for fp in own):
        return None  # its own pre-image is the one the landing changed: its diff is as good
    changes = []
    for fp in own:
        old, new = before.get(fp.path), after.get(fp.path)
        if old is None or new is None:
            return None
        made = parse_diff(make_diff([FileChange.at(fp.path, old, new)]))
        if len(made) != 1:
            return None
        # Each of the fix's hunks by the lines it adds (or, adding none, removes), blank ones
        # aside (a blank line tells no hunk from another); each of those lines must be carried
        # by the landing: a hunk of the fix, or a line of one, that landed in an earlier
        # commit (a fix landed in two) is not in this one's change, and the fix would be kept
        # without it (a revert of that earlier commit never said).
        marks = [_marks(h) for h in fp.hunks]
        landed = [_marks(h) for h in made[0].hunks]
        every = frozenset().union(*landed)
        if not all(mark <= every for mark in marks if mark):
            return None
        carried = tuple(h for h, other in zip(made[0].hunks, landed)
                        if any(mark & other for mark in marks))
        if not carried:
            return None
        applied = apply_file_patch(old, replace(made[0], hunks=carried), max_fuzz=0)
        if not applied.ok or applied.content is None:
            return None
        changes.append(FileChange.at(fp.path, old, applied.content))
    diff = make_diff(changes)
    remade = parse_diff(diff)
    if not remade or any(not _present(fp, after.get(fp.path)) for fp in remade):
        return None
    return diff, parent


def _marks(hunk) -> frozenset[tuple[bytes, bytes]]:
    """(kind, line stripped) of the lines a hunk adds, or of those it removes when it adds
    none; blank lines left out."""
    from patchforge.apply.diffparse import line_content, line_kind

    changed = [(line_kind(x), line_content(x).strip()) for x in hunk.lines
               if line_kind(x) in (b"+", b"-")]
    kind = b"+" if any(k == b"+" for k, _ in changed) else b"-"
    return frozenset((k, text) for k, text in changed if k == kind and text)


def _present(fp, content: bytes | None) -> bool:
    """Whether the landing's file `content` has the remade change `fp`, as reverts' file
    rule says "present". The remade diff is made from the landing's own files, so its undoing
    applies without fuzz, which is that rule's first way to "present" for a text change; only
    where it does not is the rule itself asked (so a clean rebase dropping fixes never loads
    reverts, the judge of kept fixes)."""
    if fp.binary is None and not fp.is_new and not fp.is_delete and content is not None:
        from patchforge.apply.hunks import applies_unfuzzed

        if applies_unfuzzed(content, fp, reverse=True):
            return True
    from patchforge.reverts import _file_state

    return _file_state(fp, content) == "present"
