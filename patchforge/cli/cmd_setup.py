"""`init`, `upstream add`, `fetch`."""
from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

import click

from patchforge.cli.app import GivenPath, HelpGroup
from patchforge.cli.complete import complete_upstream
from patchforge.cli.output import emit_json, table
from patchforge.errors import UsageError

if TYPE_CHECKING:
    from patchforge.project import Project


@click.command()
@click.option("--standalone", is_flag=True,
              help="Write patchforge.toml even where a pyproject.toml could hold the "
                   "[tool.patchforge] table (without one, patchforge.toml is written anyway).")
@click.argument("directory", required=False, type=GivenPath(file_okay=False, path_type=Path))
@click.pass_obj
def init(app, standalone, directory):
    """Write a starting configuration, an empty series and an empty upstream.lock."""
    from patchforge.ops.setup import init_project

    if directory is None and app.root is None:
        _refuse_inside_a_project(Path.cwd())
    target = directory or app.root or Path.cwd()
    written = init_project(target, standalone=standalone)
    click.echo(f"initialized patchforge in {target}: " + ", ".join(written))
    # What a new project needs first, for someone who has not read the tutorial.
    click.echo("next: pin an upstream (`patchforge upstream add NAME --wheel PACKAGE --at "
               "VERSION --install-root DIR`, or `--git URL`, `--dir PATH`), then start a fix "
               "with `patchforge new NAME` or bring existing ones in with `patchforge import`")


def _refuse_inside_a_project(here: Path) -> None:
    """A bare `init` in a subdirectory of a project (its series/, say) started a second
    project there, and every command run from there then found that one instead."""
    from patchforge.project import find_root

    try:
        root, _ = find_root(here)
    except UsageError:
        return  # no project here or above: the usual case
    if root != here.resolve():
        raise UsageError(f"{here} is inside the patchforge project at {root}: `init` would "
                         "start another project in it",
                         hint=f"run `patchforge` commands from anywhere in {root}; "
                              "`patchforge init .` starts a separate project here all the same")


@click.group(cls=HelpGroup)
def upstream():
    """Add and inspect upstreams."""


@upstream.command("add")
@click.argument("name")
@click.option("--git", "git_url", metavar="URL", help="A git upstream (any URL or local path).")
@click.option("--wheel", "package", metavar="PACKAGE", help="A Python distribution (pip download).")
@click.option("--dir", "directory", metavar="PATH", help="A local directory (e.g. site-packages).")
@click.option("--at", "spec", required=True, metavar="SPEC",
              help="What to pin: commit-ish, version, nightly tag, image reference.")
@click.option("--install-root", metavar="PATH", help="Where the files live in the image.")
@click.option("--follow", metavar="REF",
              help="git: the branch or tag to follow, one name (not a pattern); default: the "
                   "remote's default branch.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def upstream_add(app, name, git_url, package, directory, spec, install_root, follow, as_json):
    """Add upstream NAME to the configuration and pin it in upstream.lock."""
    from patchforge.model.config import UpstreamConfig
    from patchforge.ops.setup import add_upstream

    given = [k for k, v in (("git", git_url), ("wheel", package), ("dir", directory)) if v]
    if len(given) != 1:
        raise UsageError("give exactly one of --git URL, --wheel PACKAGE, --dir PATH")
    project = app.project()
    # A path on the command line is relative to where the user stands; the configuration keeps
    # it relative to the project root (so the checkout can move), or absolute if given so.
    if git_url_for_local(git_url):
        git_url = _from_root(project, git_url)
    if directory:
        if not Path(directory).is_dir():
            raise UsageError(f"--dir {directory}: not a directory")
        directory = _from_root(project, directory)
    config = UpstreamConfig(name=name, kind=given[0], url=git_url, package=package,
                            path=directory, install_root=install_root,
                            follow=follow)
    pin = add_upstream(project, config, spec)
    if as_json:
        emit_json(_pin_document(name, pin), "pin")
    else:
        click.echo(f"{name}: pinned {pin.label} at {pin.commit}")
    if config.kind == "wheel" and not install_root:
        # Said now: the next `overlays` only warns, and `verify` fails the deployment later.
        click.echo(f"note: {name} has no install-root: the compose fragment will mount none of "
                   "its overlay files and the Dockerfile copy none (`verify` fails them) until "
                   f"upstreams.{name}.install-root is set in the configuration to the directory "
                   f"{package} is installed in inside the image (e.g. "
                   "/usr/local/lib/python3.12/dist-packages), or it is added with "
                   "--install-root DIR", err=True)
    _say_unconfigured_pins(project)


def _say_unconfigured_pins(project: Project) -> None:
    """After a write of the lock: the pins it kept of upstreams the configuration does not
    name, said (stderr), never kept or dropped without a word."""
    from patchforge.state import unconfigured_pin_message, unconfigured_pins

    for unconfigured, line in unconfigured_pins(project):
        click.echo("note: " + unconfigured_pin_message(project, unconfigured, line), err=True)


def git_url_for_local(url: str | None) -> bool:
    from patchforge.store.giturl import is_plain_path

    return url is not None and url != "" and is_plain_path(url) and Path(url).exists()


def _from_root(project: Project, path: str) -> str:
    if Path(path).is_absolute():
        return path
    return Path(os.path.relpath(Path(path).resolve(), project.root)).as_posix()


@upstream.command("pin", short_help="Pin upstream NAME at SPEC in upstream.lock.")
@click.argument("name", shell_complete=complete_upstream)
@click.option("--at", "spec", required=True, metavar="SPEC", help="What to pin.")
@click.option("--force", is_flag=True, help="Re-pin even though patches are based on the old pin.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def upstream_pin(app, name, spec, force, as_json):
    """Pin upstream NAME (already in the configuration) at SPEC in upstream.lock.

    The series is not moved: an upstream with patches is refused (`patchforge rebase --to
    NAME=SPEC` moves it), unless --force."""
    from patchforge.ops.setup import pin_upstream
    from patchforge.state import require

    require(app.project(), "upstream pin", [name])
    pin, unpinned = pin_upstream(app.project(), name, spec, force=force)
    note = None
    if unpinned is not None:
        from patchforge.cli.rebasing import image_unpinned_note

        note = image_unpinned_note(unpinned.reference,
                                   overlays_made=not app.project().makes_overlays)
    if as_json:
        # The document `upstream add --json` prints (pin.schema.json), and the image pin the
        # move dropped as `rebase --json` gives it; the note for a person on stderr.
        document = _pin_document(name, pin)
        if unpinned is not None:
            document["image_unpinned"] = {"reference": unpinned.reference,
                                          "digest": unpinned.digest}
            click.echo(note, err=True)
        emit_json(document, "pin")
    else:
        click.echo(f"{name}: pinned {pin.label} at {pin.commit}")
        if note is not None:
            click.echo(note)
    _say_unconfigured_pins(app.project())


def _pin_document(name: str, pin) -> dict:
    """The pin written to upstream.lock, as `upstream add|pin --json` print it."""
    return {"upstream": name, "kind": pin.kind, "commit": pin.commit, "tree": pin.tree,
            "label": pin.label, "source": pin.source}


@upstream.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def upstream_list(app, as_json):
    """The configured upstreams and their pins."""
    from patchforge.cli.output import say_notes
    from patchforge.state import state_report

    project = app.project()
    # Read under the read lock, said once it is let go (as `list`): a rebase stopped on the
    # way to another revision is said, since the pins shown are the ones it has not left yet.
    with app.reading():
        notes = state_report(project)[0]
        lock = project.lock
        rows = []
        for name, cfg in project.config.upstreams.items():
            pin = lock.upstreams.get(name)
            rows.append({"upstream": name, "kind": cfg.kind, "label": pin.label if pin else None,
                         "commit": pin.commit if pin else None,
                         "install_root": cfg.install_root})
    say_notes(notes, as_json=as_json)
    if as_json:
        emit_json({"upstreams": rows, **({"notes": notes} if notes else {})}, "upstreams")
        return
    click.echo(table([[r["upstream"], r["kind"], r["label"] or "(not pinned)",
                       (r["commit"] or "")[:12]] for r in rows],
                     ["upstream", "kind", "pinned", "commit"]))


@click.command()
@click.argument("upstreams", nargs=-1, shell_complete=complete_upstream)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def fetch(app, upstreams, as_json):
    """Bring the locked revisions into the store."""
    from patchforge.ops.setup import fetch as do_fetch

    from patchforge.cli.output import announce_state_report, say_notes

    project = app.project()
    # What is open is said, as every read-only command says it: the revisions fetched are the
    # pins a stopped rebase is leaving (in the document, under --json).
    notes = announce_state_report(project, as_json=as_json)[0]
    # The project's display shows each upstream, then its download and import in bytes.
    unserved: list[str] = []
    unfetched: list[tuple[str, str, bool, str]] = []
    results = do_fetch(project, list(upstreams) or None,
                       on_upstream=lambda name, label: project.progress.step(
                           f"fetching {name} {label}"), notes=unserved, unfetched=unfetched)
    # (Its base commit asked again, a kept fix's upstream no longer has it: said, as notes.)
    say_notes(unserved, as_json=as_json)
    notes = list(notes) + unserved
    if as_json:
        emit_json({"fetched": [{"upstream": u, "commit": c, "result": w}
                               for u, c, w in results],
                   **({"notes": notes} if notes else {})}, "fetch")
    else:
        # Said with the pinned label: a bare commit id told a newcomer's first run little.
        said = {"present": "already in the cache", "fetched": "fetched into the cache",
                "imported": "imported into the cache"}
        for name, commit, what in results:
            label = project.lock.pin(name).label
            click.echo(f"{name} {label}: {said.get(what, what)} ({commit[:12]})")
    if unfetched:
        _refuse_unfetched(unfetched)


def _refuse_unfetched(unfetched: list[tuple[str, str, bool, str]]) -> None:
    """A kept fix's base or recorded landing commit that could not be fetched (its note said
    why): `fetch` exited 0, and a CI job that runs it to fill the cache went on with a cache
    that lacks it. The exit is 75 where every such remote gave no answer (the network, a 503:
    run it again later), else 2 (a remote that answered with an error: its words in the note
    say what to mend)."""
    from patchforge.errors import RemoteUnreachable
    from patchforge.model.words import counted

    fixes = ", ".join(f"{fix} ({what} {commit[:12]})" for fix, commit, _, what in unfetched)
    whats = " and ".join(sorted({what for *_, what in unfetched}))
    commits = "it" if len(unfetched) == 1 else "them"
    kept = len({fix for fix, *_ in unfetched})
    error = RemoteUnreachable(
        f"the {whats} {'commit' if commits == 'it' else 'commits'} of "
        f"{counted(kept, 'fix')} kept as landed could not be fetched: {fixes}; the cache "
        f"lacks {commits}, and commands judge {'it' if kept == 1 else 'them'} without "
        f"{commits}",
        hint="its note gives the URL and git's error; `patchforge fetch` asks again "
             "(where the remote gave no answer, nothing in the project is wrong: run it again "
             "later)")
    error.gave_up = all(no_answer for _, _, no_answer, _ in unfetched)
    raise error
