"""`lint`: what a reviewer would check by hand before trusting a series.

Owns the checks and their findings (nothing is written): headers (where the fix stands upstream,
said by Upstream-Status, the OpenEmbedded convention, or by DEP-3's Forwarded/Applied-Upstream;
the forms of DEP-3's fields; Description, Origin or Author, Upstream, Base), series/files consistency
(listed but missing, on disk but unlisted, the same change twice), byte-stability (parse then write
gives the file back; regenerating the diff with patchforge's fixed options gives the same bytes),
application on the locked base for every profile (no failure, no fuzz, no zero-context hunks; a
binary change only exactly, by blob id), `Keeps:` invariants, the `-text` attributes that keep
patch files byte for byte in git, the .gitignore lines that keep the overlay files out of git, `Submitted` fixes whose pull request was closed unmerged,
`Drop-When` conditions already true, committed overlays that the series no longer generates, and,
where overlays are made, a patch deleting an upstream file (which no overlay can carry).

Severity: an `error` is something that is wrong (exit 1); a `warning` is worth a look but the
series is sound (exit 0 unless --warnings-fail).
"""
from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING

from patchforge.apply.chains import REMEDY, apply_on_chains, profiles_note
from patchforge.apply.series import (SeriesState, applies_to_profile, apply_series,
                                     profile_bases_differ, unknown_profiles)
from patchforge.errors import InputError, PatchforgeError
from patchforge.ledger import ledger_findings
from patchforge.model.findings import Finding, no_diff_said
from patchforge.model.words import counted
from patchforge.names import INVISIBLE, KEPT_LANDINGS, file_name_key, kept_landings_name_said
from patchforge.pr.message import names_no_address
from patchforge.state import unlisted_patch_files

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

_STATUS_WORDS = ("Pending", "Accepted", "Submitted", "Backport", "Denied", "Inappropriate",
                 "Inactive-Upstream")
# "Submitted [https://...]": one of the words, optionally a bracketed note, nothing else.
STATUS_RE = re.compile(r"^(" + "|".join(_STATUS_WORDS) + r")(?:\s*\[([^\]]+)\])?\s*$", re.I)
# The note is what makes these values useful (OpenEmbedded requires it for the last two).
_NOTE_WANTED = {"submitted": "the pull request or mailing-list URL",
                "backport": "the upstream commit", "denied": "the reason",
                "inappropriate": "the reason"}


def lint(project: Project, store: UpstreamStore, *, forge=None, lookups=None) -> list[Finding]:
    """Every finding of the project; `lookups`: the forge's answers asked ahead
    (forwarded.ask_forge_ahead), else asked here."""
    findings: list[Finding] = []
    lock = project.lock
    seen_diffs: dict[str, str] = {}  # sha256 of a diff -> the first patch that has it
    from patchforge.state import (skipped_fixes, skipped_notes, unconfigured_message,
                                  unconfigured_pin_message, unconfigured_pins,
                                  unconfigured_series)

    for fix, note in skipped_notes(project, skipped_fixes(project)):
        findings.append(Finding(f"{fix.upstream}/{fix.name}", "skipped", note))
    for name, files in unconfigured_series(project):
        findings.append(Finding(f"series/{name}", "series",
                                unconfigured_message(project, name, files)))
    for name, line in unconfigured_pins(project):
        findings.append(Finding(project.lock_path.name, "lock",
                                unconfigured_pin_message(project, name, line)))
    findings += _follows_of_no_ref_name(project)
    parsed_series: dict[str, list] = {}  # upstream -> [(name, PatchFile)]
    for upstream in project.upstream_names():
        if upstream == KEPT_LANDINGS:
            # `upstream add` refuses the name now; a project made before is read, and told.
            findings.append(Finding(upstream, "series", kept_landings_name_said(upstream)
                                    + ": rename it (the configuration's table, upstream.lock, "
                                      "series/ and overlays/ directories and each patch's "
                                      "Upstream: field)", "warning"))
        findings += _series_consistency(project, upstream)
        try:
            names = project.patch_names(upstream)
        except InputError:
            continue
        pin = lock.upstreams.get(upstream)
        parsed = []
        for name in names:
            label = f"{upstream}/{name}"
            try:
                raw = project.read_patch_bytes(upstream, name)
                patch = project.read_patch(upstream, name)
            except PatchforgeError as exc:
                if project.patch_path(upstream, name).exists():  # missing: reported above
                    findings.append(Finding(label, "parse", str(exc)))
                continue
            findings += _headers(label, patch, upstream, pin)
            if patch.profiles and not project.config.profiles:
                findings.append(Finding(label, "header", f"Profiles lists "
                                        f"{', '.join(patch.profiles)}, but the "
                                        "configuration declares no profiles: it limits nothing, "
                                        "the fix is in the one layout every deployment mounts "
                                        "(declare them under [profiles], or drop the field)",
                                        "warning"))
            for profile in unknown_profiles(patch.profiles, list(project.config.profiles)):
                findings.append(Finding(label, "header", f"Profiles names {profile!r}, which is "
                                        "not a configured profile (configured: "
                                        f"{', '.join(project.config.profiles)})"))
            if patch.to_bytes() != raw:
                findings.append(Finding(label, "byte-stable", "parse then write changes the file"))
            findings += _diff_shape(label, patch)
            findings += _bidirectional_code(label, patch)
            findings += _converted_line_ends(label, patch)
            if not patch.file_patches:
                # `new` made it and nothing was refreshed into it: it changes nothing, and an
                # exported copy stops `quilt push -a` ("Only garbage") and `git am`.
                findings.append(Finding(label, "empty", no_diff_said(
                    name, project.patch_word(upstream, name)), "warning"))
            if patch.diff.strip():
                digest = hashlib.sha256(patch.diff).hexdigest()
                if digest in seen_diffs:
                    findings.append(Finding(label, "series", f"the same diff as {seen_diffs[digest]}"
                                                             ": a duplicate patch"))
                seen_diffs.setdefault(digest, label)
            parsed.append((name, patch, raw))
        if pin is None:
            if names:
                findings.append(Finding(upstream, "series", "the upstream has patches but no pin "
                                                            "in upstream.lock"))
            continue
        if not parsed:
            continue
        parsed_series[upstream] = [(name, patch) for name, patch, _ in parsed]
        if not project.config.upstreams[upstream].install_root and \
                project.makes_overlays:
            from patchforge.formats.config import table_prefix, toml_key

            # `overlays` says it when it writes, but the stack's CI runs `overlays --check`
            # and `lint`: without a finding, a deployment through the generated compose.yaml
            # or Dockerfile ran without any of these fixes and every check was green.
            findings.append(Finding(
                upstream, "overlays", f"{counted(len(parsed), 'patch', 'patches')}, but no install-root is "
                f"configured: compose.yaml mounts none of {upstream}'s overlay files and the "
                f"Dockerfile copies none, so no deployment through them has these fixes: add "
                f"`install-root = \"DIR\"` (where the image installs it, e.g. its "
                f"site-packages) to the [{table_prefix(project.config_path)}upstreams."
                f"{toml_key(upstream)}] table "
                f"of {project.config_path.name}", "warning"))
        findings += _apply_checks(project, store, upstream, pin, parsed)
        findings += _overlay_removals(project, store, upstream, pin, parsed)
        findings += _outside_install_root(store, upstream, pin, parsed)
        findings += _drop_and_forward(project, store, upstream, pin, parsed, forge, lookups)
    if len(parsed_series) > 1:
        from patchforge.overlay import shared_targets

        findings += [Finding(f"{upstream}/{name}", "overlays", message)
                     for message, upstream, name in shared_targets(project, parsed_series)]
    findings += ledger_findings(project)
    findings += _reverted_upstream(project, store)
    findings += _line_end_attributes(project)
    findings += _ignore_lines(project)
    if not any(f.check in ("apply", "parse") and f.severity == "error" for f in findings):
        findings += _stale_overlays(project, store)
    return findings


def _follows_of_no_ref_name(project: Project) -> list[Finding]:
    """A `follow` written by hand that git takes for no branch or tag name (`rel ease`, `main
    --upload-pack=x`): `upstream add --follow` refuses one, but written in the file it was
    refused only by `pr` or `bump`, the day one ran. Asked of git alone (check-ref-format):
    whether the remote has the branch is no question for lint, which stays offline."""
    from patchforge.formats.config import table_prefix, upstream_key_line
    from patchforge.store.git import is_ref_name

    findings = []
    for name, upstream in project.config.upstreams.items():
        if upstream.follow is None or is_ref_name(upstream.follow):
            continue
        line = upstream_key_line(project.config_path, name, "follow")
        where = project.config_path.name + (f":{line}" if line else "")
        findings.append(Finding(
            project.config_path.name, "config",
            f"{where}: {table_prefix(project.config_path)}upstreams.{name}.follow: "
            f"{upstream.follow!r} is not a branch or tag name git takes (no space, '..', "
            "'~^:?*[\\', control character, leading '-', or part beginning with '.' or ending "
            "in '.lock'): `pr` and `bump` refuse it; name the branch (e.g. main) or the tag to "
            "follow, or remove the line to follow the remote's default branch"))
    return findings


def _overlay_removals(project: Project, store: UpstreamStore, upstream: str, pin,
                      parsed) -> list[Finding]:
    """Each patch that deletes (or renames away) an upstream file no later patch makes again,
    or makes a symlink (overlay.series_links), where the project writes overlays: `overlays`
    refuses such a series (an overlay cannot delete a file in the image, nor be a link),
    while lint passed it (a patch copied into the series by
    hand, or listed before overlays/ was made). The commands that bring a patch in refuse
    one (overlay.refuse_series_removals)."""
    if not project.makes_overlays:
        return []
    from patchforge.overlay import series_removals

    out = []
    for name, path, renamed in series_removals(project, store, pin.commit,
                                               [(n, p) for n, p, _ in parsed]):
        what = f"renames {path} to {renamed}" if renamed else f"deletes {path}"
        out.append(Finding(
            f"{upstream}/{name}", "overlays",
            f"{what}, a file of the upstream that no later patch makes again: this project "
            "writes overlays, which cannot delete a file in the image (`patchforge overlays` "
            f"refuses the series); `patchforge edit {project.patch_word(upstream, name)}`, put "
            f"{path} back (`git checkout -- {path}` in the worktree; changed as the image "
            "needs, e.g. emptied), then `patchforge refresh`"))
    from patchforge.overlay import LINK_REFUSED, series_links

    for name, path in series_links(project, [(n, p) for n, p, _ in parsed]):
        out.append(Finding(
            f"{upstream}/{name}", "overlays",
            f"makes {path} a symlink, and this project writes overlays: {LINK_REFUSED}; make "
            f"the link in the image (a Dockerfile step) and take it out of the patch "
            f"(`patchforge edit {project.patch_word(upstream, name)}`, remove {path}, then "
            "`patchforge refresh`)"))
    from patchforge.overlay import NAME_REFUSED, series_unnamed_files, shown_name

    for name, path in series_unnamed_files([(n, p) for n, p, _ in parsed]):
        out.append(Finding(
            f"{upstream}/{name}", "overlays",
            f"writes {shown_name(path)}, and this project writes overlays: {NAME_REFUSED}; "
            "rename the file in the upstream, or take it out of the patch"))
    return out


def _outside_install_root(store: UpstreamStore, upstream: str, pin, parsed) -> list[Finding]:
    """Each patch that changes a wheel's file pip installs outside the install root
    (stack.outside_install_root): the commands that make or bring in a fix refuse one, and
    `overlays` refuses the series; one copied in by hand (or made before they refused it)
    was said by nothing else."""
    from patchforge.stack import outside_install_root, outside_install_root_said

    out = []
    for name, patch, _ in parsed:
        found = outside_install_root(store, pin.kind, pin.commit, patch.paths)
        if found is not None:
            out.append(Finding(f"{upstream}/{name}", "overlays", outside_install_root_said(
                name, found)))
    return out


def _reverted_upstream(project: Project, store: UpstreamStore) -> list[Finding]:
    """A fix kept under upstreamed/ that a revert took out of the pinned revision's files
    (reverts.gone_upstream, judged at the pin): no longer deployed by anything, an error until
    it is brought back or deleted; so is one taken out by other work, and a pin from before
    the landing (a nightly rolled back to: the series carried the fix there)."""
    found: list[Finding] = []
    for upstream in project.upstream_names():
        pin = project.lock.upstreams.get(upstream)
        if pin is None or not (project.series_dir(upstream) / "upstreamed").is_dir():
            continue
        from patchforge.reverts import carried_by_series, gone_upstream, unparsed_said

        # One that does not parse (a hunk cut short, a path with `..`: edited by hand, a
        # merge) is judged by nothing, and was passed over without a word.
        found += [Finding(f"{upstream}/upstreamed/{said['name']}", "parse", said["message"])
                  for said in unparsed_said(project, [upstream])]

        unread: list[tuple[str, str]] = []
        gone = gone_upstream(project, store, upstream, pin.commit, unread=unread)
        # One the series itself carries at the pin is in the overlays: a leftover file (a
        # rebase undone with git leaves it), a warning naming the way to take it out.
        carried = carried_by_series(project, store, upstream, gone)
        found += [Finding(f"{upstream}/upstreamed/{g.name}", "series", g.message())
                  for g in gone if g not in carried]
        found += [Finding(f"{upstream}/upstreamed/{g.name}", "series",
                          f"a leftover: the series carries its change at the pin "
                          f"({pin.label}), so the overlays have it; `patchforge delete "
                          f"{upstream}/upstreamed/{g.name}` takes the file out (kept under "
                          "deleted/)", "warning")
                  for g in carried]
        # One that could not be judged (offline, its files or the revision it landed in not
        # in the cache) was said by nothing: `lint: no findings` while `status` noted it.
        found += [Finding(f"{upstream}/upstreamed/{name}", "series",
                          f"NOT CHECKED: whether {upstream} {pin.label} still holds "
                          f"{upstream}/upstreamed/{name}: {' '.join(why.split())}", "warning")
                  for name, why in unread]
    return found


def _line_end_attributes(project: Project) -> list[Finding]:
    """A stack made before `init` wrote the `-text` attributes: with core.autocrlf (Git for
    Windows' default) git strips the CRs of a CRLF file's diff lines when a patch is committed,
    and gives every line of every patch a CR in a checkout. Only once there are patches."""
    from patchforge.ops.setup import GITATTRIBUTES_LINES

    def has_patches(upstream: str) -> bool:
        try:
            return bool(project.patch_names(upstream))
        except InputError:  # a series file lint reports itself: it has patches
            return True

    if not any(has_patches(upstream) for upstream in project.upstream_names()):
        return []
    path = project.root / ".gitattributes"
    try:
        have = path.read_bytes().split(b"\n")
    except FileNotFoundError:
        have = []
    missing = [line for line in GITATTRIBUTES_LINES
               if line.endswith(" -text") and line.encode() not in have]
    if not missing:
        return []
    return [Finding(".gitattributes", "attributes",
                    "lacks " + ", ".join(f"`{line}`" for line in missing) + ": with "
                    "core.autocrlf git changes the patches' line ends on commit and checkout; "
                    "add these lines", severity="warning")]


def _ignore_lines(project: Project) -> list[Finding]:
    """A .gitignore that follows patchforge's rules (init wrote it) but not as they are now:
    the lines an earlier init wrote re-include the overlay of any upstream file named
    SHA256SUMS, manifest.json or compose*.yaml (`git add -A` commits that build output), a
    profile's compose fragment is not re-included (never committed), or the temporary files
    a killed write leaves are not ignored. `overlays` brings it up to date. The profiles'
    lines only where the project makes overlays (`overlays/` exists): a new project lints
    clean, and its first `overlays` writes them with the fragments they name."""
    from patchforge.ops.setup import OLD_GITIGNORE_LINES, ignore_lines_amended

    amended = ignore_lines_amended(project)
    if amended is None:
        return []
    _, added, removed = amended
    if not project.makes_overlays:
        added = [line for line in added if not line.endswith("/compose.yaml")]
        removed = [line for line in removed if line in OLD_GITIGNORE_LINES]
    if not added and not removed:
        return []
    said = []
    if removed:
        said.append("has " + ", ".join(f"`{line}`" for line in removed) + " (overlay files "
                    "of upstream files named so would be committed, or a profile gone)")
    if added:
        said.append("lacks " + ", ".join(f"`{line}`" for line in added))
    return [Finding(".gitignore", "ignore", " and ".join(said) + ": `patchforge overlays` "
                    "brings patchforge's lines up to date (or edit them by hand)",
                    severity="warning")]


def _stale_overlays(project: Project, store: UpstreamStore) -> list[Finding]:
    """The committed overlays/ metadata (SHA256SUMS, manifest, mounts) no longer what the series
    generates: what `overlays --check` says, so that lint (and its pre-commit hook) catches a
    patch edited without regenerating. Only for a stack that commits overlays/ (it has a
    manifest); the overlay files themselves are compared where they exist."""
    from patchforge.overlay import build_overlays, check_overlays, fixes_gone_from_files
    from patchforge.state import regenerate_overlays_advice

    if not (project.overlays_dir / "manifest.json").exists():
        return []
    try:
        built = build_overlays(project, store)
        drifts = check_overlays(project, built)
    except PatchforgeError:  # a patch that does not apply: reported by the apply checks
        return []
    if not drifts:
        return []
    gone = [Finding("overlays/", "overlays", sentence) for sentence in
            fixes_gone_from_files(project, built)]
    # One finding: each file repeated the one thing to do (`overlays --check` says how each
    # file differs).
    named = [f"overlays/{d.path} ({d.kind})" for d in drifts]
    shown = ", ".join(named[:8]) + (f" and {len(named) - 8} more" if len(named) > 8 else "")
    differ = "differs" if len(drifts) == 1 else "differ"
    return gone + [Finding("overlays/", "overlays",
                           f"{counted(len(drifts), 'file')} {differ} from what the series "
                           "generates: "
                           f"{shown}; {regenerate_overlays_advice(project)} "
                           "(`patchforge overlays --check` shows each difference)")]


# A patch file a series line cannot name: the way to make it part of the series.
_UNNAMEABLE = ("patch file not in the series, under a name a series line cannot give (a series "
               "names NAME.patch beside it): rename it to NAME.patch there and list it, or move "
               "it to deleted/")


def _series_consistency(project: Project, upstream: str) -> list[Finding]:
    out = []
    directory = project.series_dir(upstream)
    try:
        names = project.patch_names(upstream)
    except InputError as exc:
        return [Finding(str(project.series_path(upstream).relative_to(project.root)), "series",
                        str(exc))]
    on_disk = {p.name for p in directory.glob("*.patch")} if directory.is_dir() else set()
    series = project.read_series(upstream)
    series_rel = project.series_path(upstream).relative_to(project.root).as_posix()
    for name in names:
        if not project.patch_path(upstream, name).is_file():
            # Its line, as status and overlays name it: the line to take out or the file to
            # restore (a series listing the name twice is refused above).
            out.append(Finding(f"{upstream}/{name}", "series",
                               f"{series_rel}:{series.line_of(name)}: listed in the series but "
                               "the file is missing"))
    # A series line may name a patch without `.patch` (the file is NAME.patch).
    listed = {project.patch_path(upstream, name).name for name in names}
    from patchforge.ops.series import cut_short_words

    for name in sorted(on_disk - listed):
        out.append(Finding(f"{upstream}/{name}", "series",
                           "patch file not listed in the series " + (
                               f"({left})" if (left := cut_short_words(project, upstream, name))
                               else "(add it, or move it to deleted/)")))
    # Patch files no series line can name (another extension, a subdirectory): never applied.
    for path in unlisted_patch_files(directory, listed) if directory.is_dir() else []:
        rel = path.relative_to(directory).as_posix()
        if rel not in on_disk:
            out.append(Finding(f"{upstream}/{rel}", "series", _UNNAMEABLE))
    # Two patch files one file system holds as one (a merge brought `Fix.patch` beside
    # `fix.patch`, or a name in the other Unicode form): `new`, `rename` and the imports refuse
    # such a name, but a pull request does not ask them, and a checkout on macOS or Windows
    # keeps one of the two fixes.
    seen: dict[str, str] = {}
    for name in sorted(on_disk | listed):
        key = file_name_key(name)
        if key in seen:
            out.append(Finding(f"{upstream}/{name}", "series",
                               f"{name} and {seen[key]} are one file on macOS or Windows (they "
                               "differ only in case or Unicode form): a checkout there keeps one "
                               "of the two fixes; rename one"))
        else:
            seen[key] = name
    out += _windows_names(project, upstream, names, set(seen))
    out += _branchless_names(project, upstream, names, set(seen))
    return out


def _branchless_names(project: Project, upstream: str, names: list[str],
                      taken: set[str]) -> list[Finding]:
    """A listed patch whose pull request's branch, patchforge/<name>, git refuses (`x.lock`,
    `a..b`): new, rename and the imports refuse such a name, a series made before they did
    still holds it, and `pr --push` refuses it; said here, so that CI says it before a pull
    request is due. The suggested name is one `rename` takes, as for `_windows_names`
    (whose finding, for a name with both problems, comes first and is the one said)."""
    import shlex

    from patchforge.formats.series import patch_file_name
    from patchforge.names import (branch_name_problem, branch_safe_name, check_new_patch_name,
                                  windows_name_problem)
    from patchforge.state import skipped_fixes

    several = len(project.upstream_names()) > 1
    skipped = {fix.name for fix in skipped_fixes(project)}
    out = []
    for name in names:
        file_name = patch_file_name(name)
        stem = file_name.removesuffix(".patch")
        problem = branch_name_problem(stem)
        if problem is None or windows_name_problem(file_name) is not None \
                or not project.patch_path(upstream, name).is_file():
            continue
        safe = branch_safe_name(stem).lstrip("-.") or "patch"
        new = next((c for c in [safe, *(f"{safe[:190]}-{n}" for n in range(2, 1000))]
                    if _takes_name(c, taken, skipped, check_new_patch_name)), "NEW")
        old = f"{upstream}/{stem}" if several else stem
        out.append(Finding(f"{upstream}/{file_name}", "series",
                           f"{file_name} cannot name its pull request's branch "
                           f"(patchforge/{stem}): {problem}, and `pr --push` refuses it; "
                           f"`patchforge rename {shlex.quote(old)} {shlex.quote(new)}` gives "
                           "it a name a branch can carry", "warning"))
    return out


def _takes_name(candidate: str, taken: set[str], skipped: set[str], check) -> bool:
    """Whether `rename` takes `candidate` in a series whose files are `taken` (file_name_key)
    and whose set-aside fixes are `skipped`."""
    from patchforge.formats.series import patch_file_name

    try:
        check(candidate)
    except ValueError:
        return False
    file_name = patch_file_name(candidate)
    return file_name_key(file_name) not in taken and file_name not in skipped


def _windows_names(project: Project, upstream: str, names: list[str],
                   taken: set[str]) -> list[Finding]:
    """A listed patch whose file a Windows checkout cannot write (`x:y.patch`, `aux.patch`):
    new, rename and the imports refuse such a name, but a series made before they did (or a
    pull request) still holds it, and is read as before so that it keeps working; git for
    Windows stops the clone of the whole stack on it. `taken`: the file_name_key of every
    patch file of the series, which the suggested name must not be.

    The suggested name is one `rename` takes (`ops.series.rename_patch`): a new patch's name
    (`:fix` made `-fix`, which `rename` refused, and which the command line took for an
    option), not the name of a fix a rebase set aside (`refuse_skipped_name`), nor one the
    series directory holds in any spelling."""
    import shlex

    from patchforge.formats.series import patch_file_name
    from patchforge.names import check_new_patch_name, windows_name_problem, windows_safe_name
    from patchforge.state import skipped_fixes

    several = len(project.upstream_names()) > 1
    skipped = {fix.name for fix in skipped_fixes(project)}

    def takes(candidate: str) -> bool:
        try:
            check_new_patch_name(candidate)
        except ValueError:
            return False
        file_name = patch_file_name(candidate)
        return file_name_key(file_name) not in taken and file_name not in skipped

    out = []
    for name in names:
        file_name = patch_file_name(name)
        problem = windows_name_problem(file_name)
        if problem is None or not project.patch_path(upstream, name).is_file():
            continue  # a missing file is reported as such
        stem = file_name.removesuffix(".patch")
        # A name may not start with '-' or '.' (check_patch_name): `:fix` is `fix`.
        safe = windows_safe_name(stem).lstrip("-.") or "patch"
        # (A numbered name within the 200 bytes a name may have.)
        short = safe.encode("utf-8", "surrogateescape")[:190].decode("utf-8", "ignore")
        new = next((c for c in [safe, *(f"{short}-{n}" for n in range(2, 1000))]
                    if takes(c)), None)
        old = f"{upstream}/{stem}" if several else stem
        if new is None:  # (no free name: the finding without a suggestion)
            out.append(Finding(f"{upstream}/{file_name}", "series",
                               f"{file_name} cannot be checked out on Windows: {problem} (git "
                               "for Windows stops the clone of the whole stack); `patchforge "
                               f"rename {shlex.quote(old)} NEW` gives it a name every checkout "
                               "can write", "warning"))
            continue
        out.append(Finding(f"{upstream}/{file_name}", "series",
                           f"{file_name} cannot be checked out on Windows: {problem} (git for "
                           "Windows stops the clone of the whole stack); "
                           f"`patchforge rename {shlex.quote(old)} {shlex.quote(new)}` gives it "
                           "a name every checkout can write", "warning"))
    return out


# DEP-3 (https://dep-team.pages.debian.net/deps/dep3/): the forms of its own fields.
_ORIGIN_CATEGORIES = ("upstream", "backport", "vendor", "other")
_URL_RE = re.compile(r"^https?://[^\s/]+\S*$")
_COMMIT_RE = re.compile(r"^commit:\s*([0-9a-fA-F]{7,64})$")
_BARE_COMMIT_RE = re.compile(r"^[0-9a-f]{12,64}$")
_VERSION_RE = re.compile(r"^v?\d+(\.\w+)*([.+-]\w+)*$")


def _dep3_fields(label: str, patch: PatchFile) -> list[Finding]:
    """The forms DEP-3 gives its fields: Origin `[category, ]URL|commit:ID|text`, Forwarded
    `no|not-needed|yes|URL`, Applied-Upstream `version|URL|commit:ID` (or two of them, comma
    separated), Bug `URL`, Last-Update `YYYY-MM-DD`."""
    out = []

    def finding(message: str, severity: str = "error") -> None:
        out.append(Finding(label, "header", message, severity))

    def reference(field: str, value: str) -> None:
        """A URL or `commit:ID`; a bare commit id works but DEP-3 wants the prefix."""
        if value.lower().startswith("commit:"):
            if not _COMMIT_RE.match(value):
                finding(f"{field}: {value!r}: `commit:` must be followed by a commit id (hex)")
        elif _BARE_COMMIT_RE.match(value):
            finding(f"{field}: write the commit id as `commit:{value}` (DEP-3)", "warning")
        elif "://" in value and not _URL_RE.match(value):
            finding(f"{field}: {value!r} is not a URL")

    origin = (patch.get("Origin") or "").strip()
    if origin:
        category, sep, rest = origin.partition(", ")
        if sep and " " not in category:
            if category.lower() not in _ORIGIN_CATEGORIES:
                finding(f"Origin category {category!r} is not one of "
                        f"{', '.join(_ORIGIN_CATEGORIES)}", "warning")
            origin = rest.strip()
        if origin and " " not in origin:
            reference("Origin", origin)
    forwarded = (patch.get("Forwarded") or "").strip()
    if forwarded and forwarded.lower() not in ("no", "not-needed", "yes") \
            and not _URL_RE.match(forwarded) and not re.match(r"^[\w.-]+/[\w.-]+#\d+$", forwarded):
        finding(f"Forwarded {forwarded!r} is not no, not-needed, yes or a URL", "warning")
    applied = (patch.get("Applied-Upstream") or "").strip()
    if applied:
        for part in (p.strip() for p in applied.split(", ")):
            if part.lower().startswith("commit:") or "://" in part or _BARE_COMMIT_RE.match(part):
                reference("Applied-Upstream", part)
            elif not _VERSION_RE.match(part):
                finding(f"Applied-Upstream part {part!r} is not a version, a URL or commit:ID",
                        "warning")
    for field in patch.fields:
        if field.name.lower() == "bug" or field.name.lower().startswith("bug-"):
            if not _URL_RE.match(field.value.strip()):
                finding(f"{field.name} {field.value.strip()!r} is not a URL", "warning")
    last = (patch.get("Last-Update") or "").strip()
    if last and not _valid_date(last):
        finding(f"Last-Update {last!r} is not a date (YYYY-MM-DD)", "warning")
    status = (patch.get("Upstream-Status") or "").strip().lower()
    if forwarded.lower() in ("no", "not-needed") and status.startswith(("submitted", "accepted")):
        finding(f"Forwarded: {forwarded} contradicts Upstream-Status: "
                f"{(patch.get('Upstream-Status') or '').strip()}")
    elif status == "pending" and (forwarded.lower() == "not-needed" or _URL_RE.match(forwarded)):
        # What an import wrote beside a Debian patch's Forwarded before it stopped adding
        # Upstream-Status there: `list` and PATCHES.md say Pending for a fix sent or not needed.
        said = "it needs no forwarding" if forwarded.lower() == "not-needed" else "it was sent"
        finding(f"line {patch.field_line('Upstream-Status')}: Upstream-Status: Pending "
                f"contradicts Forwarded: {forwarded} (line {patch.field_line('Forwarded')}), "
                f"which says {said}: remove the Upstream-Status line (Forwarded says where the "
                "fix stands) or make it agree", "warning")
    return out


def _valid_date(text: str) -> bool:
    from patchforge.formats.patchfile import last_update_day

    try:  # (read as `pr` and `export --mbox` read it)
        last_update_day(text)
    except ValueError:
        return False
    return True


# Fields that hold one value: patchforge reads the first of them (PatchFile.get), so a second
# one (a reviewer may read that) is never what it acts on. Author, Bug, Reviewed-by and Keeps
# may repeat. (A second Upstream, Base, Profiles or Drop-When, which decide what is deployed,
# is refused when the patch is read: formats/patchfile.py.)
_SINGLE_FIELDS = ("Description", "Origin", "Forwarded", "Applied-Upstream", "Upstream-Status",
                  "Last-Update")


_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _headers(label: str, patch: PatchFile, upstream: str, pin) -> list[Finding]:
    out = _dep3_fields(label, patch)
    for header in patch.fields:
        control = _CONTROL.search(header.value)
        if control:
            # (An mbox Subject's terminal escape sequence, say: a terminal showing the patch,
            # `git log -p` of it, acts on it.)
            out.append(Finding(label, "header", f"{header.name} holds a control character "
                                                f"(\\x{ord(control.group()):02x}), which a "
                                                "terminal showing the patch acts on: remove it"))
        invisible = _invisible_character(header.value)
        if invisible:
            # (`Description: fix \u202egnp.exe`: the review, the pull request and the terminal
            # show another text than the one patchforge and git carry.)
            out.append(Finding(label, "header", f"{header.name} holds an invisible character "
                                                f"({invisible}), which makes it read otherwise "
                                                "than it shows: remove it"))
    from patchforge.formats.patchfile import description_with_control_character

    for k, raw in enumerate(patch.description.split(b"\n")):
        invisible = _invisible_character(raw.decode("utf-8", "replace"))
        if invisible:
            line = k + 1 + (patch.preamble + b"".join(f.raw for f in patch.fields)
                            + patch.gap).count(b"\n")
            out.append(Finding(label, "header", f"the description holds an invisible character "
                                                f"({invisible}) at line {line} of "
                                                f"series/{label}, which makes it read otherwise "
                                                "than it shows (in the commit `pr` makes and its "
                                                "pull request too): remove it"))
            break
    held = description_with_control_character(patch)
    if held is not None:
        line, char = held
        out.append(Finding(label, "header", f"the description holds a control character "
                                            f"({char}) at line {line} of series/{label}, which "
                                            "a terminal showing the patch, the commit `pr` makes "
                                            "or its pull request acts on: remove it"))
    for name in _SINGLE_FIELDS:
        values = patch.get_all(name)
        if len(values) > 1:
            out.append(Finding(label, "header", f"{name} is written {len(values)} times: only "
                                                f"the first ({values[0].strip()[:60]!r}) counts; "
                                                "keep one"))
    status = patch.get("Upstream-Status")
    match = STATUS_RE.match(status.strip()) if status else None
    # DEP-3's own fields say where the fix stands upstream as well as Upstream-Status does.
    if not status and not patch.standing:
        out.append(Finding(label, "header", "no Upstream-Status or Forwarded: say whether the fix "
                                            "went upstream (Forwarded: no, not-needed or a URL)"))
    elif not status:
        pass
    elif not match:
        out.append(Finding(label, "header", f"Upstream-Status {status!r} is not one of Pending, "
                                            "Submitted [url], Backport [commit], Denied [reason], "
                                            "Inappropriate [reason]"))
    elif match.group(1).lower() in _NOTE_WANTED and not match.group(2):
        out.append(Finding(label, "header", f"Upstream-Status {match.group(1)} without "
                                            f"{_NOTE_WANTED[match.group(1).lower()]} in [...]",
                           "warning"))
    if not (patch.get("Description") or "").strip():
        out.append(Finding(label, "header", "no Description (or Subject)"))
    else:
        out += _name_for_description(label, patch)
    if not ((patch.get("Origin") or "").strip() or (patch.get("Author") or "").strip()):
        out.append(Finding(label, "header", "neither Origin nor Author"))
    for name in ("Author", "Co-authored-by"):
        for value, line in patch.get_all_at(name):
            if value.strip() and names_no_address(value):
                # `pr` refuses it, and `git am` stops on the mail `export --mbox` writes.
                out.append(Finding(label, "header", f"line {line}: {name}: "
                                                    f"{value.strip()[:60]!r} names no email "
                                                    "address, which the commit of `pr` and "
                                                    "`git am` of `export --mbox` need: write it "
                                                    f"as `{name}: Full Name <user@example.com>`"))
    declared = patch.get("Upstream")
    if declared and declared.strip() != upstream:
        out.append(Finding(label, "header", f"Upstream: {declared} but it is in the {upstream} "
                                            "series"))
    base = patch.get("Base")
    if pin is not None and base and base.strip() != pin.commit:
        written = base.strip()
        # The locked commit written short or in capitals read "Base 9739b0b0604a is not the
        # locked revision 9739b0b0604a": said as what it is.
        same = len(written) >= 7 and pin.commit.startswith(written.lower())
        out.append(Finding(label, "header", f"Base {written[:40]} is the locked revision "
                                            "written short or in capitals: write its full id, "
                                            f"in lower case ({pin.commit})" if same else
                           f"Base {written[:12]} is not the locked revision {pin.commit[:12]}",
                           "warning"))
    if pin is not None and not base:
        out.append(Finding(label, "header", "no Base (the upstream commit the diff is against)",
                           "warning"))
    return out


def _name_for_description(label: str, patch: PatchFile) -> list[Finding]:
    """A warning for a fix whose Description is only its own name and which has no free text:
    what `new NAME` without -m and `import quilt` of a patch `quilt new` made with no header
    write, so that the field is there. `pr` takes the Description for the pull request's
    title and the free text for its body: a name is no account of what the fix does."""
    stem = label.rpartition("/")[2].removesuffix(".patch")
    at = 1 + patch.preamble.count(b"\n")
    for header in patch.fields:
        if header.name.lower() in ("description", "subject"):
            break
        at += header.raw.count(b"\n")
    else:
        return []
    if header.value.strip() != stem or patch.description.strip():
        return []
    return [Finding(label, "header", f"series/{label} line {at}: the Description is only the "
                                     f"patch's name ({stem!r}) and there is no description "
                                     "below the header: say what the fix changes and why "
                                     "(`pr` drafts the pull request from it)", "warning")]


# Bidirectional overrides, embeddings and isolates: an added line holding one shows code in an
# order other than the one the interpreter reads ("Trojan Source", CVE-2021-42574), so the
# reviewer of the fix sees another program than the one deployed.
_BIDI_CONTROLS = frozenset(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def _invisible_character(text: str) -> str | None:
    """The first character of `text` that changes how it reads without being seen (zero-width,
    bidirectional, the line and paragraph separators: names.INVISIBLE), as `\\u202e`; None."""
    if text.isascii():
        return None
    for char in text:
        if char in INVISIBLE or char in "\u2028\u2029":
            return f"\\u{ord(char):04x}"
    return None


def _bidirectional_code(label: str, patch: PatchFile) -> list[Finding]:
    """Added lines that hold a bidirectional control character: a warning, since a string in
    a right-to-left language may hold one on purpose; one finding per file patch."""
    out = []
    for fp in patch.file_patches:
        for hunk in fp.hunks:
            at = next((k for k, line in enumerate(hunk.lines) if line.startswith(b"+")
                       and not line.isascii()
                       and not _BIDI_CONTROLS.isdisjoint(line.decode("utf-8", "replace"))),
                      None)
            if at is not None:
                out.append(Finding(label, "bidirectional",
                                   f"{fp.path}: the line added at line {hunk.line_no + 1 + at} "
                                   "of the patch file holds a bidirectional control character: "
                                   "the code shows in another order than Python or a compiler "
                                   "reads it (a review of the diff sees another program); "
                                   "write it as an escape (`\\u202e`) if it is meant",
                                   "warning"))
                break
    return out


def _diff_shape(label: str, patch: PatchFile) -> list[Finding]:
    """What no locked base can make right: hunks anchored by line number only."""
    out = []
    for fp in patch.file_patches:
        for hunk in fp.hunks:
            if hunk.zero_context:
                out.append(Finding(label, "zero-context",
                                   f"{fp.path}: hunk at line {hunk.line_no} of the patch file has "
                                   "no context lines; it applies by line number alone, and no "
                                   "command opens it (make the diff again with context: `git "
                                   "diff -U3` of the change; or `patchforge delete` it and make "
                                   "the change again with `patchforge new`)"))
    return out


def _converted_line_ends(label: str, patch: PatchFile) -> list[Finding]:
    """A patch file an editor saved with CRLF line ends (`PatchFile.converted_line_end`)."""
    said = patch.converted_line_end_words()
    if said is None:
        return []
    return [Finding(label, "line-ends",
                    f"{said[1]}; convert them back (`sed -i 's/\\r$//' FILE`, or `dos2unix "
                    "FILE`)")]


def _apply_checks(project: Project, store: UpstreamStore, upstream, pin, parsed) -> list[Finding]:
    from patchforge.invariants import check_patch_invariants
    from patchforge.store.diff import FileChange, make_diff

    out = []
    profiles: list[str | None] = list(project.config.profiles) or [None]

    def read_base(paths):
        return store.read_blobs(pin.commit, paths)

    reported: set[tuple[str, str]] = set()
    configured = list(project.config.profiles)
    # Each patch that applies on its base, with its files there before and after it: the
    # diff is regenerated from them (byte-stability, below).
    walked: list[tuple[str, PatchFile, dict, dict]] = []

    def remember(position, before, state) -> None:
        if state.outcomes[-1].ok:
            name, patch, _ = parsed[position]
            walked.append((name, patch, dict(before),
                           {p: state.current.get(p) for p in before}))

    chains = None
    if profile_bases_differ([(n, p) for n, p, _ in parsed], configured):
        # Each patch applied on its own base, where it was made, and carried into each
        # profile's series by a 3-way merge, as overlays make them (apply.chains): a search of
        # another profile's file for its context is not what its overlays do.
        chains = apply_on_chains(read_base, [(n, p) for n, p, _ in parsed], configured,
                                 strict=False, allow_zero_context=True, placement=True,
                                 on_patch=remember)
        out.extend(_outcome_findings(upstream, pin, [
            (outcome, f" ({profiles_note(mine)})")
            for outcome, mine in zip(chains.outcomes, chains.own)], reported))
        for problem in chains.problems:
            out.append(Finding(f"{upstream}/{problem.name}", "apply", (
                f"{problem.describe()}: `patchforge edit` it and {REMEDY}")))
    for profile in profiles:
        selected = [(n, p) for n, p, _ in parsed if applies_to_profile(p, profile)]
        where = f" (profile {profile})" if profile else ""
        if chains is not None:
            assert profile is not None
            state = chains.profile(profile)
        else:
            state = apply_series(read_base, selected, strict=False, allow_zero_context=True,
                                 placement=True)
            out.extend(_outcome_findings(upstream, pin, [(outcome, where)
                                                         for outcome in state.outcomes],
                                         reported))
        # A creation onto a filled path (a directory or file of the upstream, a file an earlier
        # patch made) applies in memory, but `git apply` of the series refuses it and so does
        # `overlays`: lint passed such a series with no error.
        from patchforge.stack import creation_collisions

        for name, _, _, message, _ in creation_collisions(store, pin.commit, selected):
            key = (name, message)
            if key not in reported:
                reported.add(key)
                out.append(Finding(f"{upstream}/{name}", "apply", message + where))
        # Keeps: invariants on this profile's result.
        for name, patch in selected:
            for problem in check_patch_invariants(patch, lambda path: state.current.get(path)
                                                  if path in state.current
                                                  else store.read_blob(pin.commit, path)):
                key = (name, problem)
                if key not in reported:
                    reported.add(key)
                    out.append(Finding(f"{upstream}/{name}", "keeps", problem + where))
    # Byte-stability of the diff: regenerate each patch on its base, the series before it
    # in every one of its profiles' series (with profile bases, as the walk on the chains
    # above left it; otherwise one walk of the series).
    if chains is None:
        state = SeriesState()
        for name, patch, _ in parsed:
            paths = sorted({p for fp in patch.file_patches for p in (fp.old_path, fp.new_path)
                            if p})
            for path, data in read_base([p for p in paths if p not in state.current]).items():
                state.base[path] = state.current[path] = data
            before = {p: state.current.get(p) for p in paths}
            apply_series(read_base, [(name, patch)], strict=False, state=state,
                         allow_zero_context=True)
            if state.outcomes[-1].ok:
                walked.append((name, patch, before, {p: state.current.get(p) for p in paths}))
    for name, patch, before, after in walked:
        changes = []
        for fp in patch.file_patches:
            old = before.get(fp.old_path) if fp.old_path else None
            new = after.get(fp.new_path) if fp.new_path else None
            entry = store.entry(pin.commit, fp.old_path) if fp.old_path else None
            mode_old = fp.old_mode or (entry[0] if entry else "100644")
            mode_new = fp.new_mode or mode_old
            # A rename or copy is regenerated as one, with git's similarity score.
            changes.append(FileChange(fp.old_path, fp.new_path, old, new, mode_old, mode_new,
                                      copy=fp.is_copy))
        try:
            regenerated = make_diff(changes)
        except PatchforgeError:
            continue
        if regenerated != patch.diff:
            detail, cosmetic = _first_difference(patch.diff, regenerated)
            out.append(Finding(
                f"{upstream}/{name}", "byte-stable",
                f"regenerating the diff gives different bytes ({detail}); `patchforge edit` + "
                "`refresh` rewrites it in the canonical form",
                "warning" if cosmetic else "error"))
    return out


def _outcome_findings(upstream: str, pin, outcomes, reported: set) -> list[Finding]:
    """The findings of each (outcome, where: the profiles it was applied for) of a patch
    applied in a series: a hunk that fails, fuzz, a place among several matches guessed."""
    out = []
    for outcome, where in outcomes:
        label = f"{upstream}/{outcome.name}"
        for repeated in outcome.ambiguous if outcome.ok else ():
            key = (outcome.name, repeated.describe())
            if key not in reported:
                reported.add(key)
                out.append(Finding(label, "placement", (
                    f"the place of its change is ambiguous{where}: {repeated.describe()} "
                    f"(put at line {repeated.at_line}, the nearest to its header's), and "
                    f"{repeated.why()}: `patchforge edit` it, move the change where it "
                    "belongs, refresh")))
        if not outcome.ok:
            out.append(Finding(label, "apply", f"does not apply on the locked base "
                                               f"{pin.label}{where}: {_failed_hunks(outcome)}"))
        elif outcome.worst == "fuzz":
            out.append(Finding(label, "fuzz", f"applies only with fuzz{where}: "
                                              f"{_fuzzed_hunks(outcome)}"))
    return out


def _failed_hunks(outcome) -> str:
    parts = []
    for application in outcome.files:
        path = application.new_path or application.old_path
        if application.error:
            parts.append(f"{path}: {application.error}")
            continue
        failed = [f"#{h.index + 1}" for h in application.hunks if h.status == "failed"]
        if failed:
            parts.append(f"{path} hunk {', '.join(failed)}")
    return "; ".join(parts) or "see `patchforge status`"


def _fuzzed_hunks(outcome) -> str:
    parts = []
    for application in outcome.files:
        path = application.new_path or application.old_path
        fuzzed = [f"#{h.index + 1} (fuzz {h.fuzz})" for h in application.hunks
                  if h.status == "fuzz"]
        if fuzzed:
            parts.append(f"{path} hunk {', '.join(fuzzed)}")
    return "; ".join(parts)


# A binary section's data: from `GIT binary patch` to the next file section or the end.
_BINARY_DATA = re.compile(rb"(?ms)^GIT binary patch\n.*?(?=^diff --git |\Z)")


def _first_difference(stored: bytes, regenerated: bytes) -> tuple[str, bool]:
    """Where the stored diff and the regenerated one part, and whether they differ only in their
    `index` lines (absent, or blob ids abbreviated by another tool) or in the encoding of a
    `GIT binary patch` (another deflate level, delta instead of literal: the patch applied, so
    its blob ids are those of the regenerated one): cosmetic, since `git apply` and `patch`
    take either and the changes are the same."""
    def hunks_only(diff: bytes) -> list[bytes]:
        diff = _BINARY_DATA.sub(b"GIT binary patch\n", diff)
        return [line for line in diff.split(b"\n") if not line.startswith(b"index ")]

    cosmetic = hunks_only(stored) == hunks_only(regenerated)
    a, b = stored.split(b"\n"), regenerated.split(b"\n")
    for k in range(max(len(a), len(b))):
        x = a[k] if k < len(a) else b"(end)"
        y = b[k] if k < len(b) else b"(end)"
        if x != y:
            what = ("only index lines or binary encoding differ" if cosmetic
                    and _BINARY_DATA.search(stored) else "only index lines differ" if cosmetic
                    else "diff")
            return (f"{what}: line {k + 1} of the diff is {x.decode('utf-8', 'replace')[:48]!r}, "
                    f"regenerated {y.decode('utf-8', 'replace')[:48]!r}", cosmetic)
    return ("same lines, different line endings", False)


def _drop_and_forward(project: Project, store: UpstreamStore, upstream, pin, parsed,
                      forge, lookups=None) -> list[Finding]:
    from patchforge.forwarded import drop_when, forwarded_info, lookup_forwarded
    from patchforge.judge import Target

    out = []
    target = Target(upstream, pin.commit, pin.commit, pin.label, pin.version)
    config = project.config.upstreams.get(upstream)
    names = {upstream, getattr(config, "package", None)}
    if lookups is None and forge:
        lookups = lookup_forwarded(project, forge, [patch for _, patch, _ in parsed])
    for name, patch, _ in parsed:
        label = f"{upstream}/{name}"
        forwarded = forwarded_info(project, store, patch, target, forge, lookups) if forge \
            else None
        status = (patch.get("Upstream-Status") or "").strip().lower()
        if forwarded and forwarded.get("error") and forwarded.get("merged") is None:
            out.append(Finding(label, "forwarded", f"cannot check {forwarded['url']}: "
                                                   f"{forwarded['error']}", "warning"))
        elif forwarded and forwarded.get("state") == "closed" and not forwarded.get("merged"):
            # The header says the fix is on its way upstream; it is not.
            out.append(Finding(label, "forwarded",
                               f"pull request {forwarded['url']} was closed without being "
                               "merged: resubmit it, or set Upstream-Status to Pending or Denied",
                               "error" if status.startswith("submitted") else "warning"))
        condition = drop_when(patch, target, forwarded, store=store, forge=forge, names=names,
                              lookups=lookups)
        if condition and condition.get("true"):
            # Named by the version it was judged on (a git pin's label is a tag or a nightly's
            # name, which says nothing of its version), the label beside it when it differs.
            judged = condition.get("version") or pin.label
            on = judged if judged == pin.label else f"{judged} ({pin.label})"
            out.append(Finding(label, "drop-when", f"Drop-When {condition['condition']} is true "
                                                   f"for {on}: remove the fix"))
        elif condition and condition.get("reason", "").startswith("the target's version"):
            # A version condition that cannot be evaluated is never true: the fix would stay
            # after the release that makes it unneeded, without a word.
            out.append(Finding(label, "drop-when", f"Drop-When {condition['condition']!r} "
                                                   f"cannot be evaluated for {pin.label}: "
                                                   f"{condition['reason']}", "warning"))
        elif condition and condition.get("reason", "").endswith("cannot evaluate"):
            # A requirement on another name (`vlm>=0.34` for vllm, a typo) is never evaluated,
            # so never a reason to drop the fix: lint passed it without a word.
            out.append(Finding(label, "drop-when", f"Drop-When {condition['condition']!r}: "
                                                   f"{condition['reason']} (`{upstream}>=1.2` "
                                                   "or `merged <pull request URL>`)"))
        elif condition and condition.get("reason", "").startswith("not a requirement"):
            # Never true, so never a reason to drop the fix: say so rather than ignore it.
            out.append(Finding(label, "drop-when", f"Drop-When {condition['condition']!r} is "
                                                   f"{condition['reason'].splitlines()[0]} (`{upstream}>=1.2` "
                                                   "or `merged <pull request URL>`)"))
    return out

