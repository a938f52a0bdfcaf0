"""`list`, `show`, `new`, `edit`, `refresh`, `delete`, `rename`, `move`, `bring-back`."""
from __future__ import annotations

import functools
import sys

import click

from patchforge.cli.complete import (complete_patch, complete_profile, complete_skipped,
                                     complete_upstream)
from patchforge.cli.output import (announce_state_report, color_diff, emit_json, neutralize,
                                   page, say_notes, say_overlays_lag, table)
from patchforge.errors import EXIT_ATTENTION, UsageError
from patchforge.model.words import counted


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def list_(app, as_json):
    """The series of every upstream, in order."""
    from patchforge.ops.series import list_series
    from patchforge.state import state_report

    # Read whole, then printed once the read lock is let go: a pager or a pipe left unread
    # holds back no rebase's write-out.
    with app.reading():
        notes = state_report(app.project())[0]
        items = list_series(app.project())
    say_notes(notes, as_json=as_json)
    if as_json:
        emit_json({"patches": [{
            "upstream": p.upstream, "name": p.name, "subject": p.subject, "status": p.status,
            "profiles": _profile_list(p.profiles), "files": list(p.files), "added": p.added,
            "removed": p.removed} for p in items],
            **({"notes": notes} if notes else {})}, "list")
        return
    rows = [[f"{p.upstream}/{p.name}", p.profiles or "all", (p.status or "-").split(" ")[0],
             f"+{p.added}/-{p.removed}", p.subject[:70]] for p in items]
    click.echo(table(rows, ["patch", "profiles", "upstream-status", "lines", "subject"])
               if rows else "the series is empty")


def _profile_list(field: str | None) -> list[str] | None:
    """The Profiles field (`gfx942, gfx950`) as a list; None: every profile."""
    from patchforge.formats.patchfile import profile_names

    return list(profile_names(field)) or None


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--raw", is_flag=True, help="Print the patch file itself.")
@click.option("--stat", "stat_only", is_flag=True, help="Header and stats only, no diff.")
@click.option("--no-pager", is_flag=True, help="Never page (a terminal gets $PAGER otherwise).")
@click.pass_obj
def show(app, name, as_json, raw, stat_only, no_pager):
    """A patch: its header, description, stats and diff (paged on a terminal)."""
    from patchforge.ops.series import show_patch

    with app.reading():  # not while it pages: a pager left open holds back no rebase
        notes = announce_state_report(app.project(), as_json=as_json)[0]
        info = show_patch(app.project(), name)
    raw_bytes = info.pop("raw")
    diff = info.pop("diff")
    if raw:
        page(raw_bytes, enabled=not no_pager)
        return
    if as_json:
        emit_json({**info, **({"notes": notes} if notes else {})}, "show")
        return
    lines = [f"{info['upstream']}/{info['name']}  ({info['path']}, sha256 {info['sha256'][:16]})"]
    # A folded field (a Description's continuation lines) keeps its lines under its value.
    lines += ["  {0}: {1}".format(field["name"], field["value"].replace(
        "\n", "\n" + " " * (len(field["name"]) + 4))) for field in info["header"]]
    if info["description"].strip():
        lines.append("\n" + info["description"].rstrip())
    lines.append("")
    lines += [f"  {f['path']} | +{f['added']} -{f['removed']}" for f in info["files"]]
    # The header and description are shown, never obeyed by the terminal (the diff below is
    # the patch's own bytes, as `git show` gives them).
    text = (neutralize("\n".join(lines)) + "\n").encode("utf-8", "surrogateescape")
    if not stat_only:
        text += b"\n" + color_diff(diff, app.color)
    page(text, enabled=not no_pager)


@click.command()
@click.argument("name")
@click.option("--upstream", shell_complete=complete_upstream,
              help="Which upstream's series (needed when there are several).")
@click.option("--after", metavar="X", shell_complete=complete_patch,
              help="Insert after patch X (default: at the end).")
@click.option("-m", "--description", help="The Description header.")
@click.option("--profiles", shell_complete=complete_profile,
              help="Profiles the patch is for (default: all).")
@click.option("--no-edit", is_flag=True, help="Do not open the editing worktree.")
@click.option("--file", "files", multiple=True, metavar="PATH",
              help="An upstream file to have in the worktree (repeatable).")
@click.option("--create", is_flag=True,
              help="A --file the upstream does not have is a new file of the patch.")
@click.pass_obj
def new(app, name, upstream, after, description, profiles, no_edit, files, create):
    """Start a new, empty patch (and open its worktree)."""
    from patchforge.pins import open_store
    from patchforge.ops.series import in_series_of, new_patch
    from patchforge.worktree import open_worktree

    if no_edit and (files or create):
        from patchforge.errors import UsageError

        # --file names what the worktree holds, and --no-edit makes none: taken in silence,
        # a mistyped path was never checked, and the file never brought in.
        raise UsageError(f"{'--file' if files else '--create'} goes with the worktree "
                         "--no-edit does not open; nothing was written",
                         hint="leave out --no-edit, or make the patch with --no-edit and "
                              "bring the files in later (`patchforge edit NAME --file PATH`)")
    project = app.project()
    # `new UP/NAME`, as `list` prints names, is `new NAME --upstream UP`.
    upstream, name = in_series_of(project, name, upstream, "new")
    # One store for the whole command: `new` looks at an open edit's changes with it (without
    # one, an edit opened and left unchanged was taken for one with changes not refreshed,
    # and `new` refused), and the worktree is made from it.
    with open_store(project, bring_pins=True) as store:
        if not no_edit:
            # The worktree's commits go into the store: a cache that cannot take them is said
            # before the patch is written, not after (the patch listed, its worktree not made).
            store.require_writable()
        if files and not no_edit:
            from patchforge.ops.series import only_upstream, patches_before_new
            from patchforge.worktree import refuse_non_files, worktree_files

            # Checked before the patch is written: a bad path must not leave it behind.
            chosen = upstream or only_upstream(project)
            rels = worktree_files(project.work_dir(chosen), files)
            pin = project.lock.pin(chosen).commit
            refuse_non_files(store, pin, rels)
            from patchforge.stack import refuse_outside_install_root

            # A fix there could never be deployed (overlays refuses it): said before it is made.
            refuse_outside_install_root(store, project.lock.pin(chosen).kind, pin, rels)
            if not create:
                from patchforge.worktree import refuse_new_paths

                # A file an earlier patch of the series creates is there for the new one (one
                # after the insertion point creates it on top of it: not there).
                made = {p for n in patches_before_new(project, chosen, after)
                        for p in project.read_patch(chosen, n).paths}
                refuse_new_paths(store, pin, [p for p in rels if p not in made
                                              and store.entry(pin, p) is None])
        up, file_name = new_patch(project, name, upstream=upstream, after=after,
                                  description=description, profiles=profiles, store=store)
        work = None
        if not no_edit:
            try:
                work = open_worktree(project, store, f"{up}/{file_name}", files=files,
                                     create=create, on_left_behind=_left_behind_note(project))
            except Exception:
                from patchforge.errors import PatchforgeError
                from patchforge.ops.series import withdraw_new_patch

                # `new` writes nothing unless it all succeeds: the empty patch listed above
                # goes (an interruption leaves it, and `new` run again takes it over, as it
                # does when this fails too: the first failure is the one said).
                try:
                    withdraw_new_patch(project, up, file_name)
                except (PatchforgeError, OSError):
                    pass
                raise
        click.echo(f"created {up}/{file_name}")
        _say_unlisted(project, up)
        from patchforge.ops.series import unknown_author_note

        note = unknown_author_note(project.read_patch(up, file_name).get("Author") or "")
        if note:
            click.echo(note, err=True)
        if work is None:
            return
    if files:
        click.echo(f"edit files in {work} (`patchforge add PATH` brings more), then run "
                   "`patchforge refresh`")
    else:
        # The worktree holds only the files asked for: with none, the first edit would meet
        # an empty directory, so say how the files get there.
        click.echo(f"{work} holds no file yet: `patchforge add PATH` brings in the upstream "
                   "file the fix changes (PATH relative to the upstream's root), edit it "
                   "there, then run `patchforge refresh`")
    _say_new_files(work, files, create)


@click.command()
@click.argument("name", required=False, shell_complete=complete_patch)
@click.option("--file", "files", multiple=True, metavar="PATH",
              help="Another upstream file to have in the worktree (repeatable).")
@click.option("--close", is_flag=True,
              help="End the open edit (refused while it has changes not refreshed).")
@click.option("--discard", is_flag=True, help="With --close: throw unrefreshed changes away.")
@click.option("--create", is_flag=True,
              help="A --file the upstream does not have is a new file of the patch.")
@click.pass_obj
def edit(app, name, files, close, discard, create):
    """Open .patchforge/work/<upstream> with NAME's files, the series applied through NAME."""
    from patchforge.ops.series import close_open_edit
    from patchforge.pins import open_store
    from patchforge.worktree import open_worktree

    project = app.project()
    if discard and not close:
        raise UsageError("--discard goes with --close")
    if close:
        # (No pin brought in for `--close --discard`: it reads none, and ends an edit offline
        # too. `--close` reads the worktree's base, made on the pin, which in a new cache may
        # name the pin's own trees: the pin comes in first.)
        with open_store(project, bring_pins=not discard) as store:
            closed = close_open_edit(project, store, name, discard=discard)
        click.echo(f"closed the edit of {closed['upstream']}/{closed['name']}"
                   + (" (unrefreshed changes discarded)" if discard else ""))
        return
    if not name:
        raise UsageError("name the patch to edit (or --close)")
    with open_store(project, bring_pins=True) as store:
        work = open_worktree(project, store, name, files=files, create=create,
                             on_left_behind=_left_behind_note(project))
    click.echo(f"{work}: the files of {name}, the series applied through it; edit them "
               "(`patchforge add PATH` brings more), then `patchforge refresh`")
    _say_unlisted(project, work.name)
    _say_new_files(work, files, create)


def _say_unlisted(project, upstream: str) -> None:
    """The note naming a patch file of `upstream`'s series directory that its series forgot
    (a line taken out by hand, `quilt delete`): `edit`, `new` and `refresh` build on the
    series as listed and said nothing of it, exit 0 (ops.series.unlisted_fixes_note)."""
    from patchforge.ops.series import unlisted_fixes_note

    note = unlisted_fixes_note(project, [upstream])
    if note:
        click.echo(note, err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--upstream", help="Whose worktree (needed when several are open).")
@click.pass_obj
def add(app, paths, upstream):
    """Bring upstream files into the open worktree, as part of the patch.

    PATHS are relative to the upstream's root, as the worktree (.patchforge/work/<upstream>)
    lays them out: for a wheel, as under site-packages (vllm/platforms/rocm.py); from inside
    the worktree, relative to the current directory. A path the upstream does not have
    becomes a new, empty file the patch creates (as `quilt add` has it); a warning names it,
    with the nearest upstream paths."""
    from patchforge.ops.series import add_to_open_worktree
    from patchforge.pins import open_store

    project = app.project()
    with open_store(project, bring_pins=True) as store:
        work, added = add_to_open_worktree(project, store, paths, upstream=upstream)
        for path in added:
            click.echo(f"{work / path}")
        from patchforge.ops.series import open_work
        from patchforge.worktree import near_paths

        # The worktree's own base: at a rebase's stop the upstream is the rebase's target,
        # not the pin (whose file a path gone upstream still is: "did you mean" itself).
        opened = open_work(project, work.name)
        base = opened.base if opened is not None else project.lock.pin(work.name).commit
        _warn_new_files(work, paths, near=lambda path: near_paths(store, base, path),
                        opened=opened, project=project)


def _left_behind_note(project):
    """What says where files found in a worktree's place were kept (worktree.keep_stray)."""
    from patchforge.cli.output import say_left_behind

    return lambda directory, files: say_left_behind(project, directory, files, late=True)


def _say_new_files(work, files, create: bool) -> None:
    """`new`/`edit --file`'s new files: with --create, which asked for them, one plain line
    naming them (a warning that the upstream has no such file was noise there); without it,
    a path the upstream lacks was refused, so what is left to say is `_warn_new_files`'s."""
    if not create:
        _warn_new_files(work, files)
        return
    from patchforge.worktree import new_empty_files

    made = new_empty_files(work, files)
    if made:
        click.echo(f"new, empty file{'s' if len(made) > 1 else ''} the patch creates, as "
                   f"--create asked: {', '.join(made)}")


def _warn_new_files(work, paths, near=lambda path: "", opened=None, project=None) -> None:
    """A path the upstream does not have becomes a new, empty file of the patch: say so (with
    the nearest upstream paths, `near`), since a mistyped path would otherwise join the patch
    silently. `opened` (ops.series.OpenWork): what the worktree is open for, whose command
    takes the change (given with its `project`); at a stop on a file gone upstream, adding
    that file is the way to keep the fix's change to it, said as such."""
    from patchforge.worktree import new_empty_files

    go_on = opened.go_on if opened is not None else "patchforge refresh"
    for path in new_empty_files(work, paths):
        if opened is not None and path in opened.gone:
            click.echo(f"warning: {path} is gone upstream: the patch creates it again with what "
                       f"you write there (it is empty now; `patchforge show "
                       f"{project.patch_word(opened.upstream, opened.patch)}` "
                       f"has the fix's change to it), then `{go_on}`; or `patchforge rm {path}` "
                       "drops the patch's change to it and keeps the rest", err=True)
            continue
        click.echo(f"warning: {work.name} has no file {path}{near(path)}: it is a new, empty "
                   "file in the worktree, which the patch creates (delete it there before "
                   f"`{go_on}` if that is not what you meant)", err=True)


@click.command()
@click.argument("paths", nargs=-1, required=True)
@click.option("--upstream", help="Whose worktree (needed when several are open).")
@click.pass_obj
def rm(app, paths, upstream):
    """At a modify/delete stop, the file ends deleted (as `git rm` resolves it).

    PATHS gone upstream (files of the stopped patch that the new upstream no longer has, as
    the stop names them) leave the patch, with any copy re-created in the worktree, and
    `patchforge rebase --continue` (or `bring-back --continue`) writes the patch with its
    other files' changes. To keep the fix's change to such a file instead, re-create it in the
    worktree and `patchforge add` it. PATHS the patch deletes and the upstream changed are
    removed from the worktree, so that the patch keeps its deletion (refused where the project
    makes overlays, which cannot delete a file in the image)."""
    from patchforge.ops.series import drop_gone_files
    from patchforge.pins import open_store

    project = app.project()
    with open_store(project, bring_pins=True) as store:
        opened, dropped = drop_gone_files(project, store, paths, upstream=upstream)
    removed = [p for p in dropped if p in opened.deleted]
    dropped = [p for p in dropped if p not in opened.deleted]
    left = [p for p in opened.gone if p not in dropped]
    said = ([f"{', '.join(dropped)} dropped from the patch"] if dropped else []) + \
        ([f"{', '.join(removed)} removed from the worktree: the patch keeps its deletion"]
         if removed else [])
    click.echo(f"{opened.upstream}/{opened.patch}: {'; '.join(said)}; "
               + (f"still gone upstream: {', '.join(left)} (re-create and `patchforge add`, or "
                  "`patchforge rm`); then " if left else "")
               + f"`{opened.go_on}` writes it with its other files")


def patch_word(project, upstream: str, file_name: str) -> str:
    """How a command names `upstream`'s patch `file_name` (Project.patch_word)."""
    return project.patch_word(upstream, file_name)


def _refresh_kept_base(app, project, name, base, allow_undo, as_json) -> None:
    """`refresh UPSTREAM/upstreamed/NAME --base REV` (ops.series.rebase_kept_base)."""
    from patchforge.ops.series import rebase_kept_base
    from patchforge.pins import open_store

    if name is None or allow_undo:
        raise UsageError("--base goes with the name of a fix kept under upstreamed/ "
                         "(`patchforge refresh UPSTREAM/upstreamed/NAME --base REV`), without "
                         "--allow-undo")
    with open_store(project, bring_pins=True) as store:
        result = rebase_kept_base(project, store, name, base)
    upstream, file_name = result["upstream"], result["name"]
    if as_json:
        emit_json({"upstream": upstream, "name": f"upstreamed/{file_name}",
                   "changed": result["changed"], "files": [],
                   "later_failing": [], "base": {"from": result["from"], "to": result["to"]}},
                  "refresh")
        return
    kept = f"series/{upstream}/upstreamed/{file_name}"
    if not result["changed"]:
        click.echo(f"{kept}: its Base is {result['to'][:12]} already; nothing was written")
        return
    was = result["from"][:12] if result["from"] else "none"
    click.echo(f"{kept}: Base {was} -> {result['to'][:12]}, which {upstream} serves: the fix "
               "is judged with it (`patchforge status` says what upstream did with it since)")
    say_overlays_lag(project)


@click.command()
@click.argument("name", required=False, shell_complete=complete_patch)
@click.option("--allow-undo", is_flag=True,
              help="Write the resolution of a marked edit even where it undoes a change made "
                   "under the patch since it was made (an earlier patch's, or the upstream's).")
@click.option("--base", "base", metavar="REV",
              help="With UPSTREAM/upstreamed/NAME: give that fix kept as landed the base REV, "
                   "a commit its upstream serves that it applies to as made (LANDING^: the "
                   "commit before its landing), in place of a base upstream no longer serves.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def refresh(app, name, allow_undo, base, as_json):
    """Write the worktree's change back into the patch being edited."""
    from patchforge.pins import open_store
    from patchforge.apply.chains import REMEDY
    from patchforge.ops.series import refresh as do_refresh

    project = app.project()
    if base is not None:
        _refresh_kept_base(app, project, name, base, allow_undo, as_json)
        return
    with open_store(project, bring_pins=True) as store:
        result = do_refresh(project, store, name, allow_undo=allow_undo)
    _say_unlisted(project, result["upstream"])  # (stderr: stdout may be the document)
    if as_json:
        emit_json(result, "refresh")
    else:
        state = "refreshed" if result["changed"] else "unchanged"
        # The name each `patchforge edit NAME` below takes (UPSTREAM/NAME where another
        # series has a patch of that name: the short one is refused as ambiguous there).
        word = functools.partial(patch_word, project, result["upstream"])
        # Unlike `quilt refresh`, the edit ends here: say how to go on editing.
        click.echo(f"{result['upstream']}/{result['name']}: {state} "
                   f"({counted(len(result['files']), 'file')}); the worktree is closed "
                   f"(`patchforge edit {word(result['name'])}` opens it again)")
        if result["header_written"]:
            # A plain diff had no header: what refresh put above it, and where its words went.
            words = (" above its text, which is kept as the description" if
                     result["description_kept"] else "")
            click.echo(f"note: {result['name']} had no header: refresh wrote one ("
                       f"{', '.join(result['header_written'])}){words}, and a `---` line "
                       "before the diff; `patchforge lint` names the fields still to add "
                       "(Description, Author, Upstream-Status)", err=True)
        for note in result["notes_moved"]:
            first = note["text"].splitlines()[0]
            click.echo(f"note: the words between the diff's file sections at line "
                       f"{note['line']} of the old {result['name']} ({first!r}) are now at the "
                       "end of its description: the diff made again has no place for them",
                       err=True)
        for undone in result["undoes"]:
            click.echo(f"note: {result['name']} undoes, as asked (--allow-undo): {undone}",
                       err=True)
        # A file moved aside is written as a deletion of the whole file, or as a file the
        # patch no longer makes: said before anything else, so that nobody takes it for a
        # refresh of the change.
        for key, does, back in (
                ("deletes_missing_files", "now DELETES {gone} (the whole file{s})",
                 " (the copy you moved aside; `git checkout -- PATH` in the worktree gives the "
                 "file as before the patch)"),
                ("drops_missing_files", "no longer CREATES {gone} (its lines are no longer "
                 "in the patch)", " (the copy you moved aside), `patchforge add {gone}`")):
            if result[key]:
                many = len(result[key]) > 1
                gone = ", ".join(result[key])
                click.echo(f"warning: {gone} {'are' if many else 'is'} missing from the edit "
                           f"worktree: {result['name']} "
                           + does.format(gone=gone, s="s" if many else "")
                           + f"; if you did not mean that, `patchforge edit "
                           f"{word(result['name'])}`, put "
                           f"{'them' if many else 'it'} back"
                           + back.format(gone=" ".join(result[key]))
                           + " and `patchforge refresh` again", err=True)
        if result["removes_upstream_files"]:
            # Written, as git and quilt write a deletion; where overlays are made, refresh
            # refused it: an overlay cannot take a file out of the image.
            gone = ", ".join(result["removes_upstream_files"])
            click.echo(f"warning: {result['name']} now deletes {gone}, a file of the upstream: "
                       "`patchforge overlays` refuses a series that deletes a file (an overlay "
                       "cannot delete a file in the image); if the series is to make overlays, "
                       f"`patchforge edit {word(result['name'])}` and put it "
                       "back (changed as the image needs), then refresh", err=True)
        if result["no_longer_applies"]:
            stem = word(result["name"])
            click.echo(f"warning: {result['name']} does not apply on the series before it as "
                       "that is now: the series changed since `edit` opened it (an earlier "
                       "patch changed, a `git pull` of the stack), and the change was written "
                       f"as made on the old one (`patchforge edit {stem}` opens it on the series "
                       "as it is now, what does not apply marked, to make its change again)",
                       err=True)
        for later in result["later_failing"]:
            click.echo(f"warning: {later} no longer applies after this change "
                       f"(`patchforge edit {word(later)}` opens it on the "
                       "series as it is now, to make its change again)", err=True)
        for later, where in result["later_ambiguous"].items():
            click.echo(f"warning: {later}: the place of its change is ambiguous after this "
                       f"change ({'; '.join(where)}; its line numbers were made on the series "
                       "before it, so the nearest is a guess): `patchforge edit "
                       f"{word(later)}` shows where it now goes; move it "
                       "where it belongs and refresh", err=True)
        for problem in result["profile_failing"]:
            stem = word(problem["name"])
            click.echo(f"warning: {problem['name']} {problem['message']}, so the overlays of "
                       f"{', '.join(problem['profiles'])} fail (`patchforge edit {stem}`, "
                       f"and {problem.get('remedy') or REMEDY})", err=True)
    if result["changed"]:
        say_overlays_lag(project)
    if result["no_longer_applies"] or result["later_failing"] or result["later_ambiguous"] \
            or result["profile_failing"]:
        sys.exit(EXIT_ATTENTION)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.pass_obj
def delete(app, name):
    """Take NAME out of the series (the file is kept under series/<upstream>/deleted/)."""
    from patchforge.pins import open_store
    from patchforge.ops.series import delete_patch

    project = app.project()
    with open_store(project, bring_pins=True) as store:
        deleted = delete_patch(project, name, store=store)
    kept, failing, removals = deleted.kept, deleted.failing, deleted.removals
    click.echo(f"removed {name} from {deleted.source}; kept as {kept}")
    if deleted.source == "the series":
        say_overlays_lag(project)
    # The name each `patchforge edit NAME` below takes (UPSTREAM/NAME where another series has
    # a patch of that name: the short one is refused as ambiguous there).
    word = functools.partial(patch_word, project, deleted.upstream or "")
    for other in failing:
        click.echo(f"warning: {other} no longer applies without {name} (`patchforge edit "
                   f"{word(other)}` opens it on the series as it is now, to make "
                   f"its change again; the deleted fix is kept as {kept})", err=True)
    for other in deleted.fuzzy:
        click.echo(f"warning: {other} applies only with fuzz without {name} (its context is "
                   f"lines {name} made; `patchforge edit {word(other)}` opens it on the series "
                   f"as it is now, to make its change again; the deleted fix is kept as {kept})",
                   err=True)
    for other, path, renamed in removals:
        what = f"renames {path} to {renamed}" if renamed else f"deletes {path}"
        click.echo(f"warning: without {name} the series {what} ({other}: {name} made it again), "
                   "and `patchforge overlays` refuses a series that deletes an upstream file "
                   f"(an overlay cannot delete a file in the image): `patchforge edit "
                   f"{word(other)}` and put {path} back, then "
                   f"`patchforge refresh` (the deleted fix is kept as {kept})", err=True)
    if failing or removals or deleted.fuzzy:
        sys.exit(EXIT_ATTENTION)


@click.command()
@click.argument("old", shell_complete=complete_patch)
@click.argument("new")
@click.pass_obj
def rename(app, old, new):
    """Rename patch OLD to NEW."""
    from patchforge.ops.series import rename_patch

    project = app.project()
    upstream, new_file = rename_patch(project, old, new)
    click.echo(f"renamed to {upstream}/{new_file}")
    say_overlays_lag(project)


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--after", metavar="X", shell_complete=complete_patch,
              help="Put NAME right after patch X.")
@click.option("--first", is_flag=True, help="Put NAME first in its series.")
@click.pass_obj
def move(app, name, after, first):
    """Move NAME within its series, and say which patches no longer apply."""
    from patchforge.pins import open_store
    from patchforge.ops.series import move_patch

    if after and first:
        raise UsageError("give one of --after X or --first")
    project = app.project()
    ambiguous: dict = {}
    fuzzy: list[str] = []
    still_failing: list[str] = []
    with open_store(project, bring_pins=True) as store:
        failing = move_patch(project, store, name, after=after, first=first,
                             ambiguous=ambiguous, fuzzy=fuzzy, still_failing=still_failing)
    if failing is None:
        # As `git rebase` of a branch already there: said, and nothing changed (it said
        # "moved" and that overlays/ was not regenerated after a change of the series).
        where = "first" if first else f"after {after}"
        click.echo(f"{name} is {where} already: nothing to move")
        return
    click.echo(f"moved {name}")
    say_overlays_lag(project)
    # NAME as the user gave it found its patch; the others are named as `edit` takes them
    # (UPSTREAM/NAME where another series has a patch of that name).
    word = functools.partial(patch_word, project, project.find_patch(name)[0])
    for other, places in ambiguous.items():
        # As `refresh` says of a later patch: its change may now go into a twin of its code.
        click.echo(f"warning: {other}: the place of its change is ambiguous in the new order: "
                   + "; ".join(place.describe() for place in places)
                   + f" (`patchforge edit {word(other)}`, move the change "
                   "where it belongs, refresh)", err=True)
    for other in failing:
        click.echo(f"warning: {other} does not apply in the new order (`patchforge move "
                   f"{name} --after X` puts it elsewhere; `patchforge edit "
                   f"{word(other)}` opens that patch on the series as it is "
                   "now, to make its change again)", err=True)
    for other in fuzzy:
        # As `status` judges it (needs attention): fuzz takes a hunk whose context lines no
        # longer match, at a place nothing proves.
        click.echo(f"warning: {other} applies only with fuzz in the new order (its context "
                   f"lines are not there as it was made on them; `patchforge move {name} "
                   f"--after X` puts it elsewhere; `patchforge edit {word(other)}` opens that "
                   "patch on the series as it is now, to make its change again)", err=True)
    for other in still_failing:
        # Not the move's doing, and not to be left unsaid either: the series it leaves is
        # still one `overlays` refuses.
        click.echo(f"warning: {other} still does not apply, as before the move (`patchforge "
                   f"edit {word(other)}` opens that patch on the series as it is now, to make "
                   "its change again)", err=True)
    if failing or ambiguous or fuzzy or still_failing:
        sys.exit(EXIT_ATTENTION)


@click.command("bring-back")
@click.argument("name", required=False, shell_complete=complete_skipped)
@click.option("--continue", "cont", is_flag=True,
              help="Finish a bring-back that stopped: the worktree's resolution becomes the fix.")
@click.option("--abort", is_flag=True,
              help="Give up a bring-back that stopped: the fix stays in skipped/.")
@click.option("--upstream", shell_complete=complete_upstream,
              help="With --continue/--abort: whose bring-back (needed when several stopped).")
@click.option("--allow-undo", is_flag=True,
              help="With --continue: take the resolution even where it undoes a change made "
                   "under the fix since it was set aside (the upstream's, or a patch's).")
@click.option("--allow-doubled", is_flag=True,
              help="With NAME: put the fix back even where upstream has lines that read as "
                   "its added ones elsewhere in the file (other code, seen by you).")
@click.pass_obj
def bring_back(app, name, cont, abort, upstream, allow_undo, allow_doubled):
    """Put the skipped fix NAME back at the end of its series, on the current base.

    It goes through the same judge and 3-way merge as a rebase. When that does not go
    cleanly, it stops like a rebase (exit 3): the worktree has the fix's files with conflict
    markers, the fix stays in skipped/; resolve, then `patchforge bring-back --continue`
    (or `--abort`)."""
    from patchforge.errors import UsageError
    from patchforge.pins import open_store
    from patchforge.ops.series import bring_back as do_bring_back, bring_back_abort, \
        bring_back_continue

    project = app.project()
    if sum(map(bool, (name, cont, abort))) != 1:
        raise UsageError("give exactly one of NAME, --continue, --abort")
    if upstream and name:
        raise UsageError("--upstream goes with --continue or --abort (NAME may be UPSTREAM/NAME)")
    if allow_undo and not cont:
        raise UsageError("--allow-undo goes with --continue")
    if allow_doubled and not name:
        raise UsageError("--allow-doubled goes with NAME")
    if abort:
        result = bring_back_abort(project, upstream)
        click.echo(f"bring-back of {result['upstream']}/{result['name']} given up; the fix "
                   f"stays in {result['path']}")
        if result["left_behind"]:
            from patchforge.cli.output import say_left_behind

            say_left_behind(project, *result["left_behind"])
        if result["resolution_kept"]:
            from patchforge.cli.output import say_resolution_kept

            directory, files = result["resolution_kept"]
            say_resolution_kept(project, directory, files,
                                f"patchforge bring-back "
                                f"{project.skipped_word(result['upstream'], result['name'])}")
        return
    with open_store(project, bring_pins=True) as store:
        if cont:
            result = bring_back_continue(project, store, upstream, allow_undo=allow_undo)
            click.echo(f"{result['upstream']}/{result['name']} is back at the end of the "
                       "series (resolved by hand)" + _elsewhere(project, result))
            for undone in result.get("undoes", ()):
                click.echo(f"note: {result['name']} undoes, as asked (--allow-undo): {undone}",
                           err=True)
            if result.get("kept"):
                click.echo(f"note: {result['name']}: {result['kept']}", err=True)
            for said in result.get("kept_over", ()):
                click.echo(f"note: {result['upstream']}/{result['name']}: {said}; look that it "
                           "is meant", err=True)
            say_overlays_lag(project)
            return
        result = do_bring_back(project, store, name, allow_doubled=allow_doubled)
    if result["outcome"] == "landed":
        landed = f" (in {result['landed_in'][:12]})" if result.get("landed_in") else ""
        click.echo(f"{result['upstream']}/{result['name']} has landed upstream meanwhile"
                   f"{landed}; kept as {result['path']}")
    else:
        click.echo(f"{result['upstream']}/{result['name']} is back at the end of the series "
                   f"({result['detail']})" + _elsewhere(project, result))
        say_overlays_lag(project)


def _elsewhere(project, result: dict) -> str:
    """How a fix brought back to the end of its series goes where it was before."""
    stem = project.patch_word(result["upstream"], result["name"])
    return f"; `patchforge move {stem} --after X` puts it elsewhere"
