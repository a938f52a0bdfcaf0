"""`import overlay|git|quilt|mbox` and `export --quilt|--mbox`."""
from __future__ import annotations

import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchforge.cli.app import GivenPath, HelpGroup
from patchforge.cli.complete import complete_profile, complete_upstream
from patchforge.errors import EXIT_ATTENTION, UsageError
from patchforge.model.words import counted

if TYPE_CHECKING:
    from patchforge.project import Project


@click.group("import", cls=HelpGroup)
def import_():
    """Bring existing fixes in as patches."""


def _run_import(app, upstream: str | None, do_import, source, **options) -> None:
    """`do_import` of `source` into the series of `upstream` (the only one when not named), on
    a store that holds its pin; then what it imported."""
    from patchforge.pins import open_store

    project = app.project()
    upstream = upstream or _only_upstream(project)
    with open_store(project, bring_pins=[upstream]) as store:
        _report(do_import(project, store, source, upstream=upstream, **options), upstream,
                project)


def _report(names, upstream, project: Project, say_base: bool = False):
    from patchforge.cli.output import say_overlays_lag

    pin = project.lock.pin(upstream).commit
    for name in names:
        base = (project.read_patch(upstream, name).get("Base") or "").strip() \
            if say_base else ""
        if base and base != pin:
            # Its diff was made on another version (a branch made on an older upstream): the
            # header says so, never that it was made on the pin.
            click.echo(f"imported {upstream}/{name} (made on {base[:12]}, not on the pin "
                       f"{pin[:12]}: its Base says so; `patchforge edit "
                       f"{project.patch_word(upstream, name)}` + `refresh` makes it on the pin)")
        else:
            click.echo(f"imported {upstream}/{name}")
    if not names:
        click.echo("nothing to import")
    else:
        say_overlays_lag(project)


@import_.command("overlay")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--upstream", shell_complete=complete_upstream,
              help="Which upstream's series the patch joins (needed when there are several).")
@click.option("--path", "upstream_path", required=True,
              help="The file's path in the upstream, from its root (for a wheel, as under "
                   "site-packages: vllm/platforms/rocm.py).")
@click.option("--name", required=True, help="The new patch's name.")
@click.option("-m", "--description", help="The Description header.")
@click.option("--profiles", shell_complete=complete_profile,
              help="Profiles the patch is for (default: all).")
@click.option("--create", is_flag=True,
              help="The path does not exist upstream: the overlay is a new file.")
@click.option("--made-on", "made_on", metavar="SPEC",
              help="The upstream version the overlay was made on (a commit, tag or version): "
                   "its change against that file is carried onto the pinned one.")
@click.pass_obj
def import_overlay(app, file, upstream, upstream_path, name, description, profiles, create,
                   made_on):
    """A full-file overlay becomes a patch against the locked base."""
    from patchforge.ops.exchange import import_overlay as do_import
    from patchforge.pins import open_store

    project = app.project()
    upstream = upstream or _only_upstream(project)
    with open_store(project, bring_pins=[upstream]) as store:
        created, note = do_import(project, store, file, upstream=upstream, path=upstream_path,
                                  name=name, description=description, profiles=profiles,
                                  create=create, made_on=made_on)
    _report([created], upstream, project)
    if note:
        click.echo(f"note: {note}", err=True)
    from patchforge.ops.series import unknown_author_note

    said = unknown_author_note(project.read_patch(upstream, created).get("Author") or "")
    if said:
        click.echo(said, err=True)


@import_.command("git")
@click.argument("rev_range", metavar="RANGE")
@click.option("--repo", required=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="The git repository whose commits RANGE names.")
@click.option("--upstream", shell_complete=complete_upstream,
              help="Which upstream's series the patches join (needed when there are several).")
@click.pass_obj
def import_git(app, rev_range, repo, upstream):
    """One patch per commit of RANGE in REPO, header from the commit."""
    from patchforge.cli.output import neutralize
    from patchforge.ops.exchange import import_git as do_import
    from patchforge.pins import open_store

    project = app.project()
    upstream = upstream or _only_upstream(project)
    with open_store(project, bring_pins=[upstream]) as store:
        names, skipped = do_import(project, store, rev_range, upstream=upstream, repo=repo)
    for sha, subject in skipped:
        # (Said first: "nothing to import" of a range of empty commits says why.)
        click.echo(f"note: commit {sha[:12]} ({neutralize(subject)}) changes no file (an empty commit, "
                   "git commit --allow-empty): no patch made of it, as git format-patch writes "
                   "no message of it", err=True)
    _report(names, upstream, project, say_base=True)


@import_.command("quilt")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--upstream", shell_complete=complete_upstream,
              help="Which series (needed when there are several upstreams).")
@click.option("--update", is_flag=True,
              help="Take back a series `export --quilt` wrote and quilt changed: refreshed "
                   "patches replace theirs (header kept, diff made again), new ones join at "
                   "their place, the order follows DIR/series.")
@click.option("--delete", "delete_gone", is_flag=True,
              help="With --update: patches DIR/series no longer lists (quilt delete) leave the "
                   "series too, kept under deleted/ (without it they are refused).")
@click.pass_obj
def import_quilt(app, directory, upstream, update, delete_gone):
    """A quilt patches directory (series + patches).

    With --update, the way back from `export --quilt`: what quilt changed there replaces the
    series' patches, all or nothing."""
    if delete_gone and not update:
        raise UsageError("--delete goes with --update (taking back a series quilt changed)")
    if not update:
        from patchforge.ops.exchange import import_quilt as do_import

        _run_import(app, upstream, do_import, directory)
        return
    from patchforge.cli.output import say_overlays_lag
    from patchforge.ops.quiltback import update_from_quilt
    from patchforge.pins import open_store

    project = app.project()
    upstream = upstream or _only_upstream(project)
    with open_store(project, bring_pins=[upstream]) as store:
        result = update_from_quilt(project, store, directory, upstream=upstream,
                                   delete=delete_gone)
    for name in result["changed"]:
        click.echo(f"updated {upstream}/{name}")
    for name in result["added"]:
        click.echo(f"added {upstream}/{name}")
    for name in result["moved"]:
        click.echo(f"updated {upstream}/{name} (its lines moved: diff made again, change kept)")
    for name, kept in result["deleted"]:
        click.echo(f"deleted {upstream}/{name} (kept as {kept})")
    kept_as = dict(result["deleted"])
    for name, into, lines, said in result.get("folded", ()):
        # `quilt fold` put the deleted fix's change into another: its checks go with it.
        click.echo(f"folded {upstream}/{name} into {upstream}/{into}: "
                   + ("carried " + "; ".join(f"`{line}`" for line in lines) if lines else
                      f"no Keeps or Bug line of {name}'s that {into} lacks"))
        if said:
            click.echo(f"note: {name}'s " + "; ".join(f"`{field}`" for field in said)
                       + f" not carried into {into}, where one value would be {into}'s own "
                       f"change's too: {kept_as.get(name, f'series/{upstream}/deleted/')} "
                       f"keeps {'it' if len(said) == 1 else 'them'}; write what holds into "
                       f"series/{upstream}/{into}'s header", err=True)
    if result["reordered"]:
        click.echo(f"reordered {upstream}'s series as {result['directory']}/series orders it")
    for name in result["taken_again"]:
        click.echo(f"note: {result['directory']}/{name} was taken back by an earlier `import "
                   f"quilt --update`, but the {upstream} series no longer holds it (the import "
                   "undone in the stack, or a run cut short?): taken back again", err=True)
    for name in result["kept_ours"]:
        click.echo(f"note: {upstream}/{name} joined the series after the export; kept in its "
                   "place", err=True)
    for name, was in result.get("kept_renamed", ()):
        if name in result.get("renamed_and_changed", ()):
            click.echo(f"note: {upstream}/{name} is {was} of the export, renamed and changed in "
                       "the series since; kept in its place", err=True)
            continue
        click.echo(f"note: {upstream}/{name} is {was} as `export --quilt` wrote it, renamed in "
                   "the series since; kept in its place", err=True)
    for name in result.get("kept_other_profile", ()):
        click.echo(f"note: {upstream}/{name} is not in {result['profile']}'s series, which "
                   f"{result['directory']} holds: kept as it is", err=True)
    for name in result["left_out"]:
        click.echo(f"note: {name} left the {upstream} series after the export and is unchanged "
                   "in quilt; not taken back", err=True)
    for name, was in result.get("left_renamed", ()):
        where = result.get("where_now", {}).get(was, "deleted, renamed, or landed upstream")
        click.echo(f"note: {name} is {was} renamed in quilt, which left the {upstream} series "
                   f"after the export ({where}) and is unchanged in quilt; not taken back",
                   err=True)
    for name, source in result["kept_newer"]:
        click.echo(f"note: {source} is as an earlier `import quilt --update` took it back; "
                   f"{project.patch_path(upstream, name)} changed since (edit, refresh?): the "
                   "series' version is kept, and `export --quilt` writes it there (to take "
                   f"quilt's again, `patchforge edit {project.patch_word(upstream, name)}` "
                   "and make it hold quilt's change)", err=True)
    for name, places in result["left_ambiguous"].items():
        # Its lines moved, and nearness chose among several places (quilt's `push` took the
        # nearest twin): made again there, the fix would have moved with every check quiet.
        click.echo(f"warning: {upstream}/{name} left as it is: its lines moved, and the place "
                   "of its change is ambiguous in the new series ("
                   + "; ".join(f"{p.describe()}, line {p.at_line} the nearest to its "
                               "header's, where `quilt push` puts it" for p in places)
                   + f"): `patchforge edit {project.patch_word(upstream, name)}`, move the change "
                   "where it belongs, refresh", err=True)
    if not (result["changed"] or result["added"] or result["moved"] or result["deleted"]
            or result["reordered"]):
        click.echo("nothing to take back: the series already holds what quilt has"
                   if not result["kept_newer"] else
                   "nothing taken back: the series' patches are newer than quilt's")
    else:
        say_overlays_lag(project)
    if result["left_ambiguous"]:
        sys.exit(EXIT_ATTENTION)


@import_.command("mbox")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--upstream", shell_complete=complete_upstream,
              help="Which series (needed when there are several upstreams).")
@click.pass_obj
def import_mbox(app, file, upstream):
    """An mbox of patches (git format-patch output)."""
    from patchforge.ops.exchange import import_mbox as do_import

    _run_import(app, upstream, do_import, file)


def _only_upstream(project: Project) -> str:
    from patchforge.ops.series import only_upstream

    return only_upstream(project)


class _ExportCommand(click.Command):
    """`export`, whose form is an option (`--quilt DIR`) where `import`'s is a command (`import
    quilt DIR`): the export typed the import's way is answered with the line that runs, not
    click's bare "unexpected extra arguments"."""

    def parse_args(self, ctx, args):
        if args and args[0] in ("quilt", "mbox") and not ctx.resilient_parsing:
            line = " ".join([ctx.command_path, f"--{args[0]}"]
                            + [shlex.quote(arg) for arg in args[1:]])
            ctx.fail(f"Got unexpected extra argument {args[0]!r}: the form is an option of "
                     f"`{ctx.command_path}`: `{line}`")
        return super().parse_args(ctx, args)


@click.command(cls=_ExportCommand)
@click.option("--quilt", "quilt_dir", type=GivenPath(file_okay=False, path_type=Path),
              help="Write a quilt patches directory (series + patches).")
@click.option("--mbox", "mbox_file", type=GivenPath(dir_okay=False, path_type=Path),
              help="Write an mbox that `git am` takes (one upstream's patches: with several "
                   "upstreams, say which with --upstream); `-` writes it to standard output.")
@click.option("--upstream", shell_complete=complete_upstream,
              help="Only this upstream's series (--quilt: as DIR/series).")
@click.option("--profile", metavar="P", shell_complete=complete_profile,
              help="Only the patches of this profile's series, the stack its overlays are "
                   "made from (quilt and git am apply every patch in one stack).")
@click.option("--force", is_flag=True,
              help="--quilt: replace a patch file of the same name in DIR that no export "
                   "wrote (refused without it).")
@click.pass_obj
def export(app, quilt_dir, mbox_file, upstream, profile, force):
    """Hand the series to quilt or git am.

    --quilt DIR writes one quilt series (DIR/<upstream>/ each when several upstreams have
    patches); --mbox FILE one upstream's patches as an mbox for `git am` in that upstream's
    tree (`--mbox -`: to standard output)."""
    from patchforge.ops.exchange import (export_mbox, export_quilt, mbox_entries,
                                         refuse_control_characters_in_mail,
                                         refuse_undated_mail)

    from patchforge.cli.output import announce_state
    from patchforge.fsutil import RepoLock, is_standard_output
    from patchforge.pins import open_store
    from patchforge.state import refuse_half_written

    if not quilt_dir and not mbox_file:
        raise UsageError("say where: --quilt DIR and/or --mbox FILE")
    if force and not quilt_dir:
        # An mbox is written whole, replacing FILE: there is nothing for --force to replace.
        raise UsageError("--force goes with --quilt DIR (it replaces a patch file there that "
                         "no export wrote); --mbox FILE needs none")
    project = app.project()
    # `--mbox -` (or /dev/stdout): the mbox is standard output, so what the command says
    # goes to stderr.
    to_stdout = mbox_file is not None and is_standard_output(mbox_file)
    # Under the project lock (waiting for a command that holds it, as overlays does): a
    # rebase's write-out beside the export would otherwise change the series while it is read.
    placed: dict[str, tuple[list[str], list[str]]] = {}
    with RepoLock(project.state_dir, wait=30), \
            open_store(project, bring_pins=[upstream] if upstream else True) as store:
        refuse_half_written(project, "export")
        from patchforge.ops.series import refuse_unlisted_fixes

        # A patch file its series does not list would be left out without a word.
        if upstream is not None:
            project.config.upstream(upstream)  # a UsageError naming the configured ones
        refuse_unlisted_fixes(project, [upstream] if upstream is not None else None)
        announce_state(project)  # a stop or an open edit: the series exported as it stands
        if mbox_file:
            # Both before the quilt directory is written.
            if not to_stdout:
                project.refuse_own_destination(mbox_file)
            entries = mbox_entries(project, upstream, profile)
            refuse_control_characters_in_mail(project, entries)
            refuse_undated_mail(project, entries)
        if quilt_dir:
            left: list = []
            written, binary_sections, per_profile, empty = export_quilt(project, quilt_dir,
                                                                        upstream, profile,
                                                                        store, placed, left,
                                                                        force)
            click.echo(f"wrote {counted(len(written), 'file')} to {quilt_dir}", err=to_stdout)
            for name, patch, series_file, why, before in left:
                click.echo(f"note: {series_file} no longer lists {name}/{patch} ({why}); its "
                           "file is left there, unlisted" if before else
                           f"note: {name}/{patch} left out of {series_file} ({why})", err=True)
            # With several upstreams each series is a directory of its own: quilt, pointed at
            # DIR itself, finds no series file there.
            # quilt reads QUILT_PATCHES from the tree it patches, not from here: absolute.
            series_dirs = sorted({Path(path).parent.resolve() for path in written
                                  if Path(path).name == "series"})
            if len(series_dirs) > 1:
                # One way there and back per upstream, each as it runs: the directory is
                # DIR/<upstream>, and `import quilt` takes DIR with the upstream named.
                for d in series_dirs:
                    click.echo(f"next: `QUILT_PATCHES={shlex.quote(str(d))} quilt push -a` in "
                               f"{d.name}'s files at the pin{_pin_said(project, d.name)}; "
                               "after quilt refresh there, `patchforge import quilt "
                               f"{shlex.quote(str(quilt_dir))} --update --upstream "
                               f"{shlex.quote(d.name)}` takes the changes back", err=to_stdout)
            elif series_dirs:
                # The way there and the way back, for one who came from quilt. With several
                # upstreams configured, `import quilt` asks which one the series is.
                with_patches = [u for u in project.upstream_names() if project.patch_names(u)]
                back = upstream or (with_patches[0] if len(with_patches) == 1 else None)
                which = (f" --upstream {shlex.quote(back)}"
                         if back and len(project.upstream_names()) > 1 else "")
                at = _pin_said(project, back) if back else ""
                click.echo(f"next: `QUILT_PATCHES={shlex.quote(str(series_dirs[0]))} quilt "
                           f"push -a` in the upstream's files at the pin{at}; after quilt "
                           f"refresh, `patchforge import quilt {shlex.quote(str(quilt_dir))} "
                           f"--update{which}` takes the changes back", err=to_stdout)
            for name in per_profile:
                click.echo(f"warning: {name}'s series has patches for some profiles only, and "
                           "quilt applies every patch in one stack: where two profiles' fixes "
                           "change the same lines, `quilt push -a` stops; `--profile P` exports "
                           "one profile's series (the stack its overlays are made from)",
                           err=True)
            for where in binary_sections:
                click.echo(f"warning: {where}: a GIT binary patch, which quilt and GNU patch "
                           "cannot apply (git apply and git am can)", err=True)
            _say_empty(empty, "`quilt push` stops on it (\"Only garbage was found in the patch "
                              "input\")")
        if mbox_file:
            # Standard output's byte stream itself: click's get_binary_stream is deprecated
            # from click 8.5 on and gone in 9.
            out = sys.stdout.buffer if to_stdout else mbox_file
            crlf, empty = export_mbox(project, out, entries, store, placed, profile)
            click.echo(f"wrote {counted(len(entries), 'message')} to "
                       + ("standard output" if to_stdout else str(mbox_file)), err=to_stdout)
            _say_empty(empty, "`git am` stops on its message (\"No valid patches in input\")")
            if crlf:
                # Said where `git am` is typed: the reference's word on it was not enough.
                shown = ", ".join(crlf[:5]) + (f" and {len(crlf) - 5} more" if len(crlf) > 5
                                               else "")
                click.echo(f"note: {shown} change{'s' if len(crlf) == 1 else ''} lines ending "
                           "in CRLF: apply the mbox with `git am --keep-cr"
                           + ("" if to_stdout else f" {shlex.quote(str(mbox_file))}")
                           + "` (plain `git am` drops each line's "
                           "CR, and the patch no longer applies)", err=True)
            from patchforge.apply.series import profile_bases_differ
            from patchforge.ops.exchange import stack_profile

            # (With --profile the mbox is that profile's series: nothing to warn of.)
            for name in dict.fromkeys(u for u, _ in entries) if profile is None else ():
                listed = [n for u, n in entries if u == name]
                if not profile_bases_differ([(n, project.read_patch(name, n)) for n in listed],
                                            list(project.config.profiles)):
                    continue
                known, chosen = stack_profile(project, name, listed, None)
                if known and chosen is not None:
                    # Written as that profile's series has each fix: `git am` takes it and
                    # gives that profile's tree, which is not the other profiles' overlays.
                    others = [p for p in project.config.profiles if p != chosen]
                    click.echo(f"warning: {name}'s series has patches for some profiles only: "
                               f"the mbox is {chosen}'s series (it holds every patch), each fix "
                               f"written as that series has it, and `git am` gives {chosen}'s "
                               "tree" + (f", not {', '.join(others)}'s" if others else ""),
                               err=True)
                else:
                    # Each fix is made on its own profile's series, and `git am` applies
                    # every message in one stack, without fuzz: a fix for every profile next
                    # to lines a profile's fix changed stops it.
                    click.echo(f"warning: {name}'s series has patches for some profiles "
                               "only, each made on its own profile's series, and `git am` "
                               "applies every message in one stack, without fuzz: a fix made "
                               "beside lines another profile's fix changes stops it (`git am "
                               "-3` takes that one), and two profiles' fixes of the same lines "
                               "never go into one tree", err=True)
        _say_placed(placed, profile)


def _say_placed(placed: dict[str, tuple[list[str], list[str]]], profile: str | None) -> None:
    """A note naming each exported patch written with the line numbers of the exported stack
    rather than of its own base (where the overlays have its change, so that quilt and git
    put it there, not in a repeated block nearer its own lines), and a warning naming each
    one kept as it is though its change is not at its lines there."""
    stack = f"{profile}'s series" if profile else "the exported stack"
    for upstream, (remade, kept) in placed.items():
        for name in remade:
            click.echo(f"note: {upstream}/{name} written with the line numbers {stack} has "
                       "its change at (the overlays' place; its own are its base's)", err=True)
        for name in kept:
            click.echo(f"warning: {upstream}/{name}: its change is not at its own lines in "
                       f"{stack} (a rename or mode change with it), and it is written as it "
                       "is: check where quilt or git puts it against the overlays", err=True)


def _say_empty(names: list[tuple[str, str]], stops: str) -> None:
    """A warning naming each exported patch without a diff (`new`, nothing refreshed into
    it): the tool it goes to stops on it, and nothing before this said so. Each comes with
    the word `edit` takes for it (Project.patch_word)."""
    for name, word in names:
        click.echo(f"warning: {name} has no change yet (no diff): {stops}; `patchforge edit "
                   f"{word}`, make the change and refresh it, or `patchforge delete` it",
                   err=True)


def _pin_said(project: Project, upstream: str) -> str:
    """` (v0.1.20, fc2e5d57fb5b)`: the revision quilt's tree must be, which a git upstream's
    checkout is made at (`git checkout`, `git worktree add`); empty without a pin. A wheel or
    directory upstream has no checkout to make: the way to its files at the pin is said too
    (the user was left to find one)."""
    pin = project.lock.upstreams.get(upstream)
    if pin is None:
        return ""
    short = pin.commit[:12]
    said = f"{pin.label}, {short}" if pin.label and pin.label != pin.commit else short
    return f" ({said}{_imported_files_said(pin)})"


def _imported_files_said(pin) -> str:
    """`; a wheel has no checkout: ...`: the command that writes the files of a wheel or
    directory upstream at the pin into a directory for quilt, from the store the series is
    judged on (the export brought the pin there): the very bytes the patches are made on, laid
    out as the store lays a wheel out, as pip installs it (an unzip keeps NAME-VER.data/purelib
    where it is, and `pip install --target` refuses a wheel of another platform). Empty for a
    git upstream, whose checkout is the user's (the store may hold its files only in part)."""
    if pin.kind not in ("wheel", "dir"):
        return ""
    from patchforge.store.gitstore import cache_dir

    store = shlex.quote(str(cache_dir() / "store.git"))
    what = "a wheel has no checkout" if pin.kind == "wheel" else "the directory may have moved on"
    return (f"; {what}: `mkdir DIR && git --git-dir {store} archive {pin.commit[:12]} | "
            "tar -x -C DIR` writes its files at the pin into DIR")
