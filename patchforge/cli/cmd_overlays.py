"""`overlays` and `verify`."""
from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

import click

from patchforge.cli import github
from patchforge.cli.app import GivenPath
from patchforge.cli.complete import complete_profile
from patchforge.cli.github import format_option
from patchforge.cli.output import (Progress, STATE_COLORS, announce_state,
                                   announce_state_report, emit_json, say_info, table)
from patchforge.errors import EXIT_ATTENTION, UsageError
from patchforge.model.words import counted

PINNED_IMAGE = "@pinned"  # `--image` without a value: the image upstream.lock pins


@click.command()
@click.option("--profile", "profiles", multiple=True, metavar="P",
              shell_complete=complete_profile,
              help="Regenerate only this profile's overlay files (repeatable).")
@click.option("--check", is_flag=True,
              help="Regenerate in memory; exit 1 if what is committed differs.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@format_option
@click.pass_obj
def overlays(app, profiles, check, as_json, output_format):
    """Regenerate overlays, SHA256SUMS, manifest.json and the compose mounts."""
    from patchforge.fsutil import RepoLock, writing_project
    from patchforge.ops.setup import update_ignore_lines
    from patchforge.overlay import check_overlays, fixes_gone_from_files, write_overlays
    from patchforge.pins import open_store
    from patchforge.state import regenerate_overlays_advice

    project = app.project()
    with contextlib.ExitStack() as held:
        store = held.enter_context(open_store(project))
        # The pins a fresh cache lacks fetched first, before either lock: no rebase (nor new,
        # edit, refresh) waits on the network with this command; they are checked again
        # under the lock, on the lock file read then.
        _bring_pins(project, store)
        if not check:
            # Held from before the series and the lock are read until the overlays are
            # written: built first and written under the lock, overlays of the series a rebase
            # beside this command had just replaced were written over its new ones.
            held.enter_context(RepoLock(project.state_dir, wait=30))
        else:
            # Compared whole: never a rebase's half-written series against its overlays.
            held.enter_context(app.reading())
        from patchforge.ops.series import refuse_unlisted_fixes

        refuse_unlisted_fixes(project)  # a release without a fix the series dropped by hand
        result, busy = _built_overlays(project, store, profiles, check=check, as_json=as_json)
        # A fix kept as landed of an upstream whose overlays nothing mounts (no install-root),
        # which its pin lacks: named by `--check` too, which exited 0 on such an upstream
        # whose series was left with no fix (no overlay file, so nothing `unmounted`).
        from patchforge.landings import gone_where_nothing_mounts

        not_judged: list[str] = []
        unmounted_gone = gone_where_nothing_mounts(project, store, not_judged)
        from patchforge.cli.output import say_unrefreshed_edits

        # Made from the patch files: an open edit's change is not in them yet.
        say_unrefreshed_edits(project, store, project.upstream_names(),
                              "the overlays hold its patch file as it is, without them, until",
                              ", then `patchforge overlays` again" if not check else
                              " (the check compares the patch file's overlays)")
        for warning in result.warnings:
            click.echo(f"warning: {warning}", err=True)
        # Read before the write replaces the committed manifest.
        for gone in fixes_gone_from_files(project, result):
            click.echo(f"warning: {gone}", err=True)
        kept: set[str] = set()
        if not check:
            newly_imaged = _fragments_newly_setting_the_image(project, result)
            if profiles:
                # Another profile's files, as they are on disk: said as kept, not as written.
                kept = {f.rel for f in result.files if f.profile not in profiles
                        and _holds(project.overlays_dir / f.rel, f.content)}
            # Swapped in whole (two renames): readers never see overlays/ between them.
            with writing_project(project.root):
                write_overlays(project, result, profiles=list(profiles) or None)
                ignored = update_ignore_lines(project)
            for fragment in newly_imaged:
                click.echo(f"note: overlays/{fragment} now sets the {project.config.compose_service}"
                           " service's image to the one upstream.lock pins, the image the "
                           "overlays are made for (a move of the pin moves the deployment); a "
                           "deployment of an image of its own sets `compose-image = false` in "
                           "the configuration and keeps that image in step with the pin",
                           err=True)
        drifts = check_overlays(project, result) if check else []
        # A fix kept as landed that does not parse is judged by nothing: said, as `verify`
        # says it (a note; the exit status is the overlays').
        from patchforge.landings import unparsed_not_checked

        unjudged = unparsed_not_checked(project) + not_judged if check else []
        by_hand = _changed_by_hand_hint(project, result) if drifts else None
    # A fix kept as landed that upstream took out again at the pin is in no deployment of these
    # overlays (the warnings above say so, "Dockerfile fails its build"): needs attention, as
    # a skipped fix does, and as `status`, the rebase onto that pin and `verify` say; `--check`
    # too, which a stack's CI runs: it exited 0 on overlays in step that lack the fix.
    lacking = any(whys for _, _, whys in result.landed.values())
    for gone in unmounted_gone:
        click.echo(f"warning: the pin lacks a fix kept as landed: {gone}", err=True)
        lacking = True
    if check:
        # An upstream whose overlay files no fragment mounts and no Dockerfile copies (no
        # install-root): in step, yet no deployment has its fixes, as `verify` fails it.
        lacking = lacking or bool(result.unmounted)
        for note in [] if as_json else unjudged:
            say_info(note)
        if as_json:
            # What makes it fail without drift, said as the text says it (warnings): `ok`
            # false with no drift and no note named nothing (a fix kept as landed that
            # upstream took back at the pin, in no overlay); and a stop (or a fix set aside),
            # which makes it exit 1 whatever overlays/ holds, as `check --json` says it
            # (stderr does not, under --json).
            notes = busy + unjudged + _lacking_said(result) + _unmounted_said(result) + \
                [f"the pin lacks a fix kept as landed: {gone}" for gone in unmounted_gone]
            emit_json({"check": True, "ok": not drifts and not lacking and not busy,
                       "drift": [{"path": d.path, "kind": d.kind, "detail": d.detail}
                                 for d in drifts],
                       "overlays": len(result.files),
                       **({"notes": notes} if notes else {})}, "overlays")
        elif drifts:
            click.echo(f"overlays/ differs from what the series generates ({len(drifts)}):")
            for d in drifts:
                click.echo(f"  {d.kind:8} {d.path}" + (f": {d.detail}" if d.detail else ""))
            # An overlay edited by hand: `overlays` refuses to throw the change away, so
            # "run `patchforge overlays`" led to a refusal; the way on is the import.
            click.echo(by_hand or regenerate_overlays_advice(project), err=True)
        else:
            click.echo(_up_to_date(project, result))
        if output_format == "github":
            _github_drift(project, drifts, _up_to_date(project, result),
                          _lacking_said(result) + _unmounted_said(result)
                          + [f"the pin lacks a fix kept as landed: {gone}"
                             for gone in unmounted_gone])
        if drifts or busy or lacking:
            sys.exit(EXIT_ATTENTION)
        return
    from patchforge.state import skipped_fixes, skipped_notes

    skipped = skipped_fixes(project)
    for note in not_judged:
        # A kept fix of an upstream no overlay of which is mounted, that could not be judged
        # at the pin: said as `status` notes it (no Dockerfile step is made for it to refuse).
        say_info(note)
    for _, note in skipped_notes(project, skipped):
        # The overlays are right for the series, but the series lacks a fix a rebase set aside.
        click.echo(f"warning: the overlays lack a skipped fix: {note}", err=True)
    if as_json:
        _say_ignore_lines(ignored)
        emit_json({"check": False, "ok": not skipped and not lacking, "drift": [],
                   "overlays": len(result.files),
                   "files": [{"file": f.rel, "sha256": f.sha256, "target": f.target,
                              "profile": f.profile} for f in result.files]}, "overlays")
        if skipped or lacking:
            sys.exit(EXIT_ATTENTION)
        return
    by_profile: dict = {}
    kept_by_profile: dict = {}
    for f in result.files:
        counts = kept_by_profile if f.rel in kept else by_profile
        counts.setdefault(f.profile or "(all)", 0)
        counts[f.profile or "(all)"] += 1
    written = sum(by_profile.values())
    # Per profile when there are profiles; a stack without any has one set of overlays. With
    # --profile, the other profiles' files that were already what the series makes are said
    # as kept: "wrote 11 overlay files" over a run asked for gfx942's 6 read as all rewritten.
    summary = "" if set(by_profile) | set(kept_by_profile) == {"(all)"} else \
        " (" + (", ".join(f"{p}: {n}" for p, n in by_profile.items()) or "none") + \
        "".join(f"; {p}'s {n} kept as they were" for p, n in kept_by_profile.items()) + ")"
    files = "overlay file" if written == 1 else "overlay files"
    click.echo(f"wrote {written} {files}{summary}, SHA256SUMS, "
               "manifest.json and compose mounts under overlays/")
    _say_ignore_lines(ignored)
    if skipped or lacking:
        sys.exit(EXIT_ATTENTION)


def _holds(path, content: bytes) -> bool:
    """Whether the file at `path` is there and holds `content`."""
    try:
        return path.is_file() and path.read_bytes() == content
    except OSError:
        return False


def _say_ignore_lines(changed: tuple[list[str], list[str]] | None) -> None:
    """What `overlays` changed in .gitignore (ops/setup.py update_ignore_lines), on stderr."""
    if changed is None:
        return
    added, removed = changed
    said = []
    if added:
        said.append("added " + ", ".join(f"`{line}`" for line in added))
    if removed:
        said.append("took out " + ", ".join(f"`{line}`" for line in removed))
    # (docs/reference.md says why: the lines re-include exactly the files `overlays` writes to
    # be committed, and a .gitignore an earlier init wrote re-included overlay files too.)
    click.echo("note: .gitignore brought up to date: " + "; ".join(said), err=True)


def _built_overlays(project, store, profiles, *, check: bool, as_json: bool):
    """The overlays of the series as it stands, built in memory (with the pins the cache
    lacks brought in first), and what needs attention whatever they hold (`--check`
    announces it, exit 1: a rebase stopped or in progress, a fix set aside; writing is
    refused while a rebase is in progress): its notes, none when nothing does."""
    from patchforge.overlay import build_overlays
    from patchforge.state import refuse_unconfigured_series

    busy: list[str] = []
    if check:
        notes, attention, _ = announce_state_report(project, as_json=as_json)
        busy = notes if attention else []
    else:
        from patchforge.state import require

        # A rebase in progress writes the overlays of its new series at its end (and --abort
        # puts the old ones back): overlays written now would be of neither.
        require(project, "overlays", project.upstream_names())
    # A series no configured upstream names would be left out of the overlays without a word.
    refuse_unconfigured_series(project)
    unknown = [p for p in profiles if p not in project.config.profiles]
    if unknown:
        raise UsageError(f"unknown profile {unknown[0]!r} (configured: "
                         f"{', '.join(project.config.profiles) or 'none'})")
    _bring_pins(project, store)
    result = build_overlays(project, store, placement=True)
    # A fix that still applies can still be neutralised (a later patch undid it, a context
    # match put it in the wrong function): every Keeps: invariant must hold per profile.
    from patchforge.invariants import require_overlay_invariants
    require_overlay_invariants(project, result, store=store)
    return result, busy


def _bring_pins(project, store) -> None:
    """A fresh clone: the pinned upstreams are not in the cache yet; brought in, and said."""
    from patchforge.ops.setup import fetch_missing

    with Progress("fetching") as progress:
        fetched = fetch_missing(project, store, on_upstream=lambda name, label:
                                progress.advance(f"{name} {label}"))
    for name in fetched:
        say_info(f"fetched {name} {project.lock.pin(name).label} into the cache")


@click.command()
# Not click's `exists`: it follows DIR on this host, and an install root that is an absolute
# symlink inside an unpacked image (dist-packages -> /opt/venv/...) leads nowhere here while
# the tree holds it (`_installed_dir`).
@click.option("--installed", type=GivenPath(file_okay=False, path_type=Path),
              help="Also check that DIR holds the recorded pre-images: an upstream's install "
                   "root (an image's site-packages) or an image's root file system.")
@click.option("--image", "image", metavar="[REF]", default=None, is_flag=False,
              flag_value=PINNED_IMAGE,
              help="Check the pre-images inside an image's layers, read through its registry "
                   "(REF: repo:tag or repo@sha256:...; the digest pinned in upstream.lock is "
                   "used when REF is the pinned image; without REF, the pinned image).")
@click.option("--profile", metavar="P", default=None, shell_complete=complete_profile,
              help="Only the overlays of this profile (what one deployment mounts).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@format_option
@click.pass_obj
def verify(app, installed, image, profile, as_json, output_format):
    """Check overlays against SHA256SUMS, and pre-images with --installed or --image."""
    if image is not None:
        if installed is not None:
            raise UsageError("--image and --installed check different things: give one")
        return _verify_image(app, image, profile, as_json, output_format)
    from patchforge.overlay import verify_overlays

    if installed is not None:
        _installed_dir(installed)
    with app.reading():  # never a rebase's half-written overlays
        from patchforge.ops.series import refuse_unlisted_fixes

        # Overlays that match their sums, made without a fix the series dropped by hand.
        refuse_unlisted_fixes(app.project())
        # What is open, said first (in the document, under --json).
        opened = announce_state_report(app.project(), as_json=as_json)[0]
        hints: list[str] = []
        notes: list[str] = []

        def landed(manifest, tree):
            # No overlay carries the fixes dropped as landed: DIR's own files must hold them,
            # as `--image` asks of an image's (the manifest and DIR read as for the overlays).
            # Without DIR: none that upstream took out again at the pin is in a deployment.
            from patchforge.landings import any_kept

            if tree is None and not any_kept(app.project()):
                return []
            from patchforge.ops.deploy import verify_installed_landed, verify_landed_at_pin

            if tree is None:
                landed_rows, landed_notes = verify_landed_at_pin(app.project(), manifest,
                                                                 profile=profile)
            else:
                landed_rows, landed_notes = verify_installed_landed(app.project(), tree,
                                                                    manifest, profile=profile)
            notes.extend(landed_notes)
            return landed_rows

        rows = verify_overlays(app.project(), installed=installed, profile=profile, hints=hints,
                               also=landed)
        rows += _skipped_rows(app.project(), profile)
    bad = [r for r in rows if r[1] != "ok"]
    if as_json:
        emit_json({"ok": not bad, "results": [{"path": p, "state": s, "detail": d}
                                              for p, s, d in rows],
                   **({"notes": opened + notes} if opened or notes else {})}, "verify")
    else:
        for note in notes:
            say_info(note)
        shown = bad if bad else rows
        click.echo(table([[s, p, d] for p, s, d in shown], ["state", "path", "detail"],
                         colors={0: lambda c: STATE_COLORS.get(c)}, enabled=app.color))
        click.echo(f"{len(rows) - len(bad)} ok, {len(bad)} failed")
        if any(detail == "file not found" for _, _, detail in bad):
            # A clone of a stack that keeps its overlay files out of git (as build outputs)
            # has SHA256SUMS but not the files.
            click.echo("hint: `patchforge overlays` writes the missing overlay files", err=True)
        for hint in hints:
            click.echo(f"hint: {hint}", err=True)
        if any(detail.startswith("installed file is not the pre-image") for _, _, detail in bad):
            # Mounted anyway, such an overlay silently reverts the installed version's own
            # changes to the file: say the two ways to make overlays and install agree.
            click.echo("hint: mounted there, an overlay would undo the installed version's "
                       "changes to its file: deploy the upstream version each overlay names, or "
                       "move the series to the installed one (`patchforge rebase --to "
                       "UPSTREAM=VERSION`, which regenerates them)", err=True)
    if output_format == "github":
        _github_verify(app.project(), rows, bad)
    if bad:
        sys.exit(EXIT_ATTENTION)


def _skipped_rows(project, profile: str | None) -> list[tuple[str, str, str]]:
    """Plain `verify`'s rows for the fixes a rebase set aside (under skipped/) that are for
    `profile` (every one without it): no deployment of these overlays holds such a fix, as
    `overlays` and `overlays --check` say; verify exited 0 on them, every file as the manifest
    names it, with the fix in none."""
    from patchforge.apply.series import applies_to_profile
    from patchforge.errors import PatchforgeError
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.state import skipped_fixes

    rows = []
    for fix in skipped_fixes(project):
        rel = fix.path.relative_to(project.root).as_posix()
        try:
            patch = parse_patch_file(fix.path.read_bytes(), rel)
        except (OSError, PatchforgeError):
            patch = None  # unreadable: counted as for every profile
        if profile is not None and patch is not None and not applies_to_profile(patch, profile):
            continue
        stem = project.skipped_word(fix.upstream, fix.name)
        # Relative to overlays/, as every row's path is (a GitHub annotation names the file).
        rows.append((f"../{rel}", "missing", "a fix set aside by a rebase, in no overlay: `patchforge "
                                     f"bring-back {stem}` puts it back, `patchforge delete "
                                     f"{stem}` drops it"))
    return rows


def _verify_image(app, image, profile, as_json, output_format="text"):
    import contextlib

    from patchforge.ops.deploy import is_the_pinned_image, verify_image

    set_aside: list[tuple[str, str, str]] = []

    @contextlib.contextmanager
    def reading():
        # The state said and the manifest and the pin read under the read lock (never a
        # rebase's half-written ones); the registry and the layers then read without it.
        with app.reading():
            from patchforge.ops.series import refuse_unlisted_fixes

            # Before the registry is asked: an image whose every pre-image matches is
            # deployed with overlays made without a fix the series dropped by hand.
            refuse_unlisted_fixes(app.project())
            announce_state(app.project(), as_json=as_json)
            # A fix a rebase set aside is in none of the overlays this image is checked
            # against: the image may hold every overlay file and still deploy without it.
            set_aside.extend(_skipped_rows(app.project(), profile))
            yield

    with Progress("reading layer") as progress:
        result = verify_image(app.project(), None if image == PINNED_IMAGE else image,
                              profile=profile, reading=reading(),
                              on_layer=lambda digest: progress.advance(digest[:19]))
    said_aside = [f"{path}: {detail}" for path, _, detail in set_aside]
    if as_json:
        document = result.to_json()
        document["ok"] = result.ok and not set_aside
        document["notes"] += said_aside
        emit_json(document, "verify-image")
    else:
        for note in result.notes:
            say_info(note)
        click.echo(table([[f.state, f.target, f.detail] for f in result.files]
                         + [[state, path, detail] for path, state, detail in set_aside],
                         ["state", "path in image", "detail"],
                         colors={0: lambda c: STATE_COLORS.get(c)}, enabled=app.color))
        bad = sum(f.state != "ok" for f in result.files)
        megabytes = result.bytes_read / 1e6
        click.echo(f"{result.resolved}: {len(result.files) - bad} ok, {bad} failed "
                   f"({result.layers_read} of {counted(result.layers_total, 'layer')} read, "
                   + (f"{result.layers_reread} read again to follow links, "
                      if result.layers_reread else "")
                   + (f"{result.layers_reread_landed} read again for the files of fixes "
                      "dropped as landed, " if result.layers_reread_landed else "")
                   + f"{megabytes:.1f} MB)")
        for line in _fixes_said(result):
            click.echo(line)
        for hint in _image_hints(result, _made_for(app.project(), result),
                                 is_the_pinned_image(app.project(), result.digest,
                                                     result.manifest_digest)):
            click.echo(f"hint: {hint}", err=True)
        if result.tag_moved and all(f.state == "ok" for f in result.files):
            # (A failed file's hint already says both ways.)
            move = " ".join(f"--to {u}={result.reference}"
                            for u in sorted({f.upstream for f in result.files}))
            click.echo(f"hint: deploy the pinned image ({_pinned_name(result)}), or move the "
                       f"series to the tag's (`patchforge rebase {move}`, which regenerates "
                       "the overlays)", err=True)
    if output_format == "github":
        failed = [f for f in result.files if f.state != "ok"]
        annotations: list[tuple[str, str, str | None, str]] = [
            ("error", f"{f.target}: {f.state}: {f.detail}", None,
             f"patchforge verify --image {result.resolved}") for f in failed]
        annotations += [("error", said, None, f"patchforge verify --image {result.resolved}")
                        for said in said_aside]
        if result.tag_moved:  # its note is the last one
            annotations.append(("error", result.notes[-1], None,
                                f"patchforge verify --image {result.reference}"))
        github.emit_annotations(app.project(), annotations)
        section = (f"### patchforge verify --image {result.resolved}: "
                   f"{len(result.files) - len(failed)} ok, {len(failed)} failed\n")
        if failed:
            section += "\n" + github.markdown_table(["state", "path in image", "detail"],
                                                    [[f.state, f.target, f.detail] for f in failed])
        github.append_summary(app.project(), section)
    if not result.ok or set_aside:
        sys.exit(EXIT_ATTENTION)


def _pinned_name(result) -> str:
    """repository@digest of the image upstream.lock pins, for a tag that moved off it."""
    return f"{result.resolved.rsplit('@', 1)[0]}@{result.tag_moved}"


def _fixes_said(result) -> list[str]:
    """Each fix against the image, one line for those of the series and one for those dropped
    as landed upstream, naming the ones that are not ok."""
    lines = []
    for where, what, good in (
            ("series", "fixes of the series", "go onto it (the files they overlay hold "
                                              "their pre-images)"),
            ("upstreamed", "fixes dropped as landed upstream", "are in it")):
        fixes = [f for f in result.fixes if f["where"] == where]
        if not fixes:
            continue
        ok = sum(f["state"] == "ok" for f in fixes)
        line = f"{ok} of {len(fixes)} {what} {good}"
        for state, said in (("failed", "not"), ("unchecked", "not checked")):
            named = [f"{f['upstream']}/" + ("upstreamed/" if where == "upstreamed" else "")
                     + f["name"] for f in fixes if f["state"] == state]
            if named:
                line += f"; {said}: {', '.join(named)}"
        lines.append(line)
    return lines


def _made_for(project, result) -> str:
    """The image to deploy instead, as the hints name it: the one upstream.lock pins, or,
    where it pins none, an image of the revisions the overlays were made for."""
    image = project.lock.image
    if image is not None:
        # By digest where the lock has one: the tag may have moved off it, and a deployment that
        # pulls the tag again gets the image the overlays were not made for.
        from patchforge.overlay import pinned_image_name
        name = pinned_image_name(image.reference, image.digest) if image.digest \
            else image.reference
        return f"the image the overlays were made for (the one upstream.lock pins, {name})"
    labels = [f"{u} {project.lock.pin(u).label}" for u in sorted({f.upstream for f in result.files})
              if u in project.lock.upstreams]
    made = f"{', '.join(labels)}: " if labels else ""
    return (f"an image of what the overlays were made for ({made}upstream.lock pins no image; "
            "`patchforge rebase --to NAME=REPO:TAG` pins one)")


def _image_hints(result, made_for: str, the_pin: bool = False) -> list[str]:
    """What to do about `verify --image`'s failed rows, as `verify --installed` says it;
    `made_for` names the image to deploy instead (_made_for); `the_pin`: the image read is the
    one upstream.lock pins, so neither deploying it nor a rebase onto it is a way out."""
    hints = []
    taken_out = sorted({fix for f in result.files if f.state != "ok" for fix in f.taken_out})
    if taken_out:
        # Not the image's fault: the locked revision itself lacks them (status says so).
        hints.append("upstream took out at the locked revision fixes dropped as landed "
                     f"({', '.join(taken_out)}): `patchforge bring-back` puts each back in "
                     "the series, whose overlays then carry it")
    landed = sorted({f.upstream for f in result.files
                     if f.landed and f.state != "ok" and not f.taken_out})
    if landed and result.pinned:
        # The pinned image itself: the series was judged on the upstream's revision (for a
        # wheel upstream, the wheel the image's version label names), not on these files.
        hints.append("the image upstream.lock pins does not hold the upstream's files where "
                     "fixes dropped as landed changed them: the series was judged landed on "
                     "the upstream's locked revision, not on this image's own files, so a "
                     "deployment of it runs without those fixes; put them back into the "
                     "series (from series/UPSTREAM/upstreamed/) or pin an image that holds "
                     "them")
    elif landed:
        # No overlay there: nothing patchforge mounts puts a landed fix into this image.
        move = " ".join(f"--to {u}={result.resolved}" for u in landed)
        hints.append("the image does not hold the upstream's files where fixes dropped as "
                     f"landed changed them, so it may lack those fixes: deploy {made_for}, "
                     "or move the series "
                     f"to this one (`patchforge rebase {move}`, which names a dropped fix that "
                     "upstream no longer has there)")
    # A file baked with another profile's overlay is no other version: said apart.
    files = [f for f in result.files if f.overlay_of is None and not f.landed]
    # Another image of the revision the overlays were made from (its labels name the pin):
    # a move to it makes the same overlays, so its files are said apart.
    respun = [f for f in files if f.same_revision and f.state == "mismatch"]
    files = [f for f in files if not f.same_revision]
    states = {f.state for f in files}
    upstreams = sorted({f.upstream for f in files if f.state != "ok"})
    move = " ".join(f"--to {u}={result.resolved}" for u in upstreams)
    hints += [f"the image holds {holds}'s overlays: `patchforge verify --image {result.resolved} "
              f"--profile {holds}` checks that deployment"
              for holds in dict.fromkeys(f.overlay_of for f in result.files if f.overlay_of)]
    if respun:
        hints.append("mounted on this image, an overlay would undo the image's changes to its "
                     "file: the image's labels name the revision the overlays were made from "
                     f"({', '.join(sorted({f.upstream for f in respun}))}), and its file is "
                     "another there (a re-spin, or a build with changes of its own), so a move "
                     f"of the series to it would make the same overlays; deploy {made_for}, pin "
                     "an image built from that revision as it is, or make the image's change "
                     "part of the series (`patchforge import overlay` of the image's file)")
    if "mismatch" in states and the_pin:
        # The image the overlays were made for: its label names the pinned revision, and its
        # file is not the upstream's there. Deploying it, or rebasing onto it, changes nothing.
        hints.append("mounted on this image, an overlay would undo the image's changes to its "
                     "file: the image upstream.lock pins does not hold the upstream's files at "
                     "the revision the overlays were made from (a re-spin, or a build with "
                     "changes of its own); pin an image built from that revision as it is, or "
                     "make the image's change part of the series (`patchforge import overlay` "
                     "of the image's file) and regenerate the overlays")
    elif "mismatch" in states:
        # Mounted anyway, such an overlay silently reverts the image's own changes to the file.
        hints.append("mounted on this image, an overlay would undo the image's changes to its "
                     f"file: deploy {made_for}, or move the series to this one (`patchforge "
                     f"rebase {move}`, which regenerates them)")
    if "missing" in states:
        hints.append("the image has no file where an overlay is mounted: check each upstream's "
                     "install-root against where the image installs it" + (
                         "" if the_pin else
                         ", or move the series to this image (`patchforge rebase "
                         f"{move}`: a fix of a file gone upstream stops there)"))
    return hints


def _fragments_newly_setting_the_image(project, result) -> list[str]:
    """The compose fragments about to set the service's image where the one on disk set none
    (a stack whose fragments named no image before): said once, since that replaces the image
    the user's compose.yaml names."""
    out = []
    for rel, data in sorted(result.outputs.items()):
        if not rel.endswith("compose.yaml") or b"\n    image: " not in data:
            continue
        try:
            before = (project.overlays_dir / rel).read_bytes()
        except OSError:
            before = b""
        if b"\n    image: " not in before:
            out.append(rel)
    return out


def _overlay_file(path: str) -> str | None:
    """A path as verify and the drift report give it (relative to overlays/) from the project
    root; None for a file outside the project (an installed tree)."""
    return None if os.path.isabs(path) else os.path.normpath(os.path.join("overlays", path))


def _up_to_date(project, result) -> str:
    """What `overlays --check` found in step, saying exactly what it compared: overlay files
    are build outputs (usually git-ignored), and those not on disk were checked only through
    the committed SHA256SUMS. "up to date (11 files)" on a fresh clone, with none of them
    there, read as "the deployed files are fine" while `verify` found them all missing."""
    total = len(result.files)
    there = sum(1 for f in result.files if (project.overlays_dir / f.rel).is_file())
    files = counted(total, "file")
    if there == total:
        return f"overlays are up to date ({files})"
    absent = ("none of the overlay files is on disk" if there == 0 else
              f"{total - there} of the {total} overlay files are not on disk (the {there} "
              "there match)")
    return (f"overlays/ as committed is up to date: SHA256SUMS and manifest.json match what "
            f"the series generates ({files}); {absent}, so only their hashes were "
            "checked (`patchforge overlays` writes them, `patchforge verify` checks them)")


def _installed_dir(installed: Path) -> None:
    """UsageError unless DIR of `verify --installed` is there: a directory, or a symlink (one
    inside an unpacked image is followed in that tree, `installed.InstalledTree`, wherever it
    leads on this host)."""
    if os.path.lexists(installed):  # (a file is refused by click's `file_okay`)
        return
    raise UsageError(f"--installed {installed} does not exist",
                     hint="give an upstream's install root (an image's site-packages) or an "
                          "image's root file system (`docker export` unpacked)")


def _changed_by_hand_hint(project, result) -> str | None:
    """What `overlays` would refuse for an overlay file edited by hand, with its way on (the
    import that makes the change a patch), as one line; None when no file was."""
    from patchforge.errors import InputError
    from patchforge.overlay import refuse_changed_by_hand

    try:
        refuse_changed_by_hand(project, result)
    except InputError as exc:
        return f"{exc.message}\nhint: {exc.hint}" if exc.hint else exc.message
    return None


def _lacking_said(result) -> list[str]:
    """The warnings of overlays that lack a fix kept as landed that upstream took out again at
    the pin (overlay.build_overlays says them so): what `--check` exits 1 on without drift."""
    return [f"overlays/{profile + '/' if profile else ''}Dockerfile fails its build: {why}"
            for profile, (_, _, whys) in sorted(result.landed.items(), key=lambda i: i[0] or "")
            for why in whys]


def _unmounted_said(result) -> list[str]:
    """The warnings of upstreams whose overlay files nothing deploys (no install-root): what
    `--check` also exits 1 on without drift."""
    from patchforge.overlay import unmounted_said

    return [unmounted_said(upstream) for upstream in result.unmounted]


def _github_drift(project, drifts, in_step: str, lacking: list[str]) -> None:
    from patchforge.state import regenerate_overlays_advice

    advice = regenerate_overlays_advice(project)
    github.emit_annotations(project, [
        ("error", f"{d.kind}" + (f": {d.detail}" if d.detail else "") + f"; {advice}",
         _overlay_file(d.path),
         "patchforge overlays --check") for d in drifts] +
        [("error", said, None, "patchforge overlays --check") for said in lacking])
    differ = f"{len(drifts)} file differs" if len(drifts) == 1 else f"{len(drifts)} files differ"
    section = (f"### patchforge overlays --check: {differ} from what the "
               f"series generates\n\n" + github.markdown_table(
                   ["drift", "path", "detail"], [[d.kind, d.path, d.detail or ""] for d in drifts])
               if drifts else f"### patchforge overlays --check: {in_step}\n")
    if lacking:
        section += "\n" + "".join(f"- {said}\n" for said in lacking)
    github.append_summary(project, section)


def _github_verify(project, rows, bad) -> None:
    github.emit_annotations(project, [("error", f"{state}: {detail}",
                                       _overlay_file(path.split(" [")[0]), "patchforge verify")
                                      for path, state, detail in bad])
    section = f"### patchforge verify: {len(rows) - len(bad)} ok, {len(bad)} failed\n"
    if bad:
        section += "\n" + github.markdown_table(["state", "path", "detail"],
                                                [[s, p, d] for p, s, d in bad])
    github.append_summary(project, section)
