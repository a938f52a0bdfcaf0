"""`list`, `show`, `new`, `edit`, `refresh`, `delete`, `rename`, `move`."""
from __future__ import annotations

import sys

import click

from patchforge.cli.output import emit_json, table
from patchforge.errors import EXIT_ATTENTION


@click.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def list_(app, as_json):
    """The series of every upstream, in order."""
    from patchforge.ops.series import list_series

    items = list_series(app.project())
    if as_json:
        emit_json({"patches": [{
            "upstream": p.upstream, "name": p.name, "subject": p.subject, "status": p.status,
            "profiles": p.profiles, "files": list(p.files), "added": p.added,
            "removed": p.removed} for p in items]})
        return
    rows = [[f"{p.upstream}/{p.name}", p.profiles or "all", (p.status or "-").split(" ")[0],
             f"+{p.added}/-{p.removed}", p.subject[:70]] for p in items]
    click.echo(table(rows, ["patch", "profiles", "upstream-status", "lines", "subject"])
               if rows else "the series is empty")


@click.command()
@click.argument("name")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.option("--raw", is_flag=True, help="Print the patch file itself.")
@click.pass_obj
def show(app, name, as_json, raw):
    """A patch with its header and stats."""
    from patchforge.ops.series import show_patch

    info = show_patch(app.project(), name)
    if raw:
        sys.stdout.buffer.write(info["raw"])
        return
    info.pop("raw")
    if as_json:
        emit_json(info)
        return
    click.echo(f"{info['upstream']}/{info['name']}  ({info['path']}, sha256 {info['sha256'][:16]})")
    for field in info["header"]:
        click.echo(f"  {field['name']}: {field['value']}")
    if info["description"].strip():
        click.echo("\n" + info["description"].rstrip())
    click.echo("")
    for f in info["files"]:
        click.echo(f"  {f['path']} | +{f['added']} -{f['removed']}")


@click.command()
@click.argument("name")
@click.option("--upstream", help="Which upstream's series (needed when there are several).")
@click.option("--after", metavar="X", help="Insert after patch X (default: at the end).")
@click.option("-m", "--description", help="The Description header.")
@click.option("--profiles", help="Profiles the patch is for (default: all).")
@click.option("--no-edit", is_flag=True, help="Do not open the editing worktree.")
@click.pass_obj
def new(app, name, upstream, after, description, profiles, no_edit):
    """Start a new, empty patch (and open its worktree)."""
    from patchforge.pins import open_store
    from patchforge.ops.series import new_patch
    from patchforge.worktree import open_worktree

    project = app.project()
    up, file_name = new_patch(project, name, upstream=upstream, after=after,
                              description=description, profiles=profiles)
    click.echo(f"created {up}/{file_name}")
    if not no_edit:
        with open_store(project) as store:
            work = open_worktree(project, store, f"{up}/{file_name}")
        click.echo(f"edit files in {work}, then run `patchforge refresh`")


@click.command()
@click.argument("name")
@click.pass_obj
def edit(app, name):
    """Open .patchforge/work/<upstream> with the series applied through NAME."""
    from patchforge.pins import open_store
    from patchforge.worktree import open_worktree

    project = app.project()
    with open_store(project) as store:
        work = open_worktree(project, store, name)
    click.echo(f"{work}: the series through {name}; edit the files, then `patchforge refresh`")


@click.command()
@click.argument("name", required=False)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def refresh(app, name, as_json):
    """Write the worktree's change back into the patch being edited."""
    from patchforge.pins import open_store
    from patchforge.ops.series import refresh as do_refresh

    project = app.project()
    with open_store(project) as store:
        result = do_refresh(project, store, name)
    if as_json:
        emit_json(result)
    else:
        state = "refreshed" if result["changed"] else "unchanged"
        click.echo(f"{result['upstream']}/{result['name']}: {state} "
                   f"({len(result['files'])} file(s))")
        for later in result["later_failing"]:
            click.echo(f"warning: {later} no longer applies after this change", err=True)
    if result["later_failing"]:
        sys.exit(EXIT_ATTENTION)


@click.command()
@click.argument("name")
@click.pass_obj
def delete(app, name):
    """Take NAME out of the series (the file is kept under series/<upstream>/deleted/)."""
    from patchforge.ops.series import delete_patch

    kept = delete_patch(app.project(), name)
    click.echo(f"removed {name} from the series; kept as {kept}")


@click.command()
@click.argument("old")
@click.argument("new")
@click.pass_obj
def rename(app, old, new):
    """Rename patch OLD to NEW."""
    from patchforge.ops.series import rename_patch

    upstream, new_file = rename_patch(app.project(), old, new)
    click.echo(f"renamed to {upstream}/{new_file}")


@click.command()
@click.argument("name")
@click.option("--after", metavar="X", help="Put NAME right after patch X.")
@click.option("--first", is_flag=True, help="Put NAME first in its series.")
@click.pass_obj
def move(app, name, after, first):
    """Move NAME within its series, and say which patches no longer apply."""
    from patchforge.pins import open_store
    from patchforge.ops.series import move_patch

    project = app.project()
    with open_store(project) as store:
        failing = move_patch(project, store, name, after=after, first=first)
    click.echo(f"moved {name}")
    for other in failing:
        click.echo(f"warning: {other} does not apply in the new order", err=True)
    if failing:
        sys.exit(EXIT_ATTENTION)
