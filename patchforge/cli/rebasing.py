"""What `patchforge rebase` does once its options are read: by click (`cmd_rebase`), or for the
command lines `direct` reads without it. Output goes through `output.echo`, never click: a
clean `rebase --to` never loads click (its import is a tenth of such a run)."""
from __future__ import annotations

import contextlib
import sys

from patchforge.cli import target_specs
from patchforge.cli.output import Progress, echo, emit_json, gone_line, paint, table
from patchforge.errors import ConflictStop, InProgressError, PatchforgeError, UsageError
from patchforge.names import label_is_commit

ACTION_COLORS = {"clean": "green", "offset": "green", "merged": "yellow", "resolved": "yellow",
                 "dropped": "cyan", "skipped": "magenta", "conflict": "red"}


def _revision(label: str, commit: str) -> str:
    """LABEL (SHORT-ID), or the short id alone where the label is the commit (a pin by commit)."""
    return commit[:12] if label_is_commit(label, commit) else f"{label} ({commit[:12]})"


def render_summary(summary: dict, app) -> None:
    for name, info in summary["upstreams"].items():
        echo(f"{name}: {_revision(info['from'], info['from_commit'])} -> "
             f"{_revision(info['to'], info['to_commit'])}")
    rows = [[f"{p['upstream']}/{p['name']}", p["action"], p["detail"]]
            for p in summary["patches"]]
    if rows:
        echo(table(rows, ["patch", "result", "detail"],
                   colors={1: lambda c: ACTION_COLORS.get(c)}, enabled=app.color))
    counts = summary["counts"]
    order = ("clean", "offset", "merged", "resolved", "dropped", "skipped", "conflict")
    echo(", ".join(f"{counts[k]} {k}" for k in order if counts.get(k)) or "nothing to do")
    if summary.get("range_diff"):
        echo("\nrange-diff of the old series against the new one:")
        echo(summary["range_diff"].rstrip())
    for item in summary.get("reverted", []):
        echo(paint(f"reverted upstream (needs attention): {item['message']}", "yellow",
                   app.color))
    for item in summary.get("gone_upstream", []):
        echo(gone_line(item, app.color))
    for item in summary.get("not_checked", []):
        # (stderr, as `status` says it: whether upstream took the fix out is not known.)
        echo(f"note: {item['message']}", err=True)
    for item in summary.get("set_aside", []):
        # As every read-only command says it (stderr): the move leaves the fix behind.
        done = "would write" if summary["dry_run"] else "writes"
        echo(f"note: {item['message']} (in none of the overlays this move {done})", err=True)
    if summary.get("image_unpinned"):
        echo(paint(image_unpinned_note(summary["image_unpinned"]["reference"],
                                       written=not summary["dry_run"]), "yellow", app.color))
    if summary["dry_run"]:
        echo("(dry run: nothing was written)")


def image_unpinned_note(reference: str, *, written: bool = True,
                        overlays_made: bool = True) -> str:
    """What a move off the pinned image's revision did to the image pin (Lock.with_pin)."""
    from patchforge.model.lock import image_unpinned_text

    return "note: " + image_unpinned_text(reference, written=written,
                                          overlays_made=overlays_made)


def _note_unrefreshed_edits(project, store, summary) -> None:
    """A dry run reads the patch files; the real run refuses an edit whose changes are not in
    its patch yet. Say so before the dry run's table is taken for what the rebase will do."""
    from patchforge.cli.output import say_unrefreshed_edits

    say_unrefreshed_edits(project, store, summary["upstreams"],
                          "this dry run used its patch file, and the rebase is refused until",
                          " (or `patchforge edit --close --discard`)")
    from patchforge.state import BRINGING, read_states

    # A stopped bring-back is no edit (its fix is in skipped/): its own way on.
    for state in read_states(project).values():
        if state.kind == BRINGING and state.upstream in summary["upstreams"]:
            echo(f"note: {state.describe()}; the rebase is refused until it is finished: "
                 f"{state.next_step()}", err=True)


def _say_left_behind(project, engine) -> None:
    from patchforge.cli.output import say_left_behind

    for directory, files in engine.left_behind:
        say_left_behind(project, directory, files)


def _say_waiting_for_readers() -> None:
    from patchforge.cli.output import say_apart

    say_apart("patchforge: waiting for commands reading this project to end before writing out")


def run_rebase(app, *, specs: tuple[str, ...], more_specs: tuple[str, ...], dry_run: bool,
               cont: bool, skip: bool, abort: bool, as_json: bool,
               allow_undo: bool = False) -> None:
    """`rebase --to SPEC [--dry-run] | --continue [--allow-undo] | --skip | --abort [--json]`."""
    from patchforge.fsutil import RepoLock
    from patchforge.pins import open_store
    from patchforge.rebase.engine import Rebase

    specs = target_specs("--to", specs, more_specs)
    chosen = [flag for flag, on in (("--to", bool(specs)), ("--continue", cont),
                                    ("--skip", skip), ("--abort", abort)) if on]
    if len(chosen) != 1:
        raise UsageError("give exactly one of --to SPEC, --continue, --skip, --abort")
    if dry_run and not specs:
        raise UsageError("--dry-run goes with --to")
    if allow_undo and not cont:
        raise UsageError("--allow-undo goes with --continue")
    project = app.project()
    # A dry run writes nothing, not even the lock file (project files are only ever replaced
    # atomically, so it reads whole files).
    lock = contextlib.nullcontext() if dry_run else RepoLock(project.state_dir)
    progress = Progress("rebasing")
    with lock, open_store(project) as store, progress:
        engine = Rebase(project, store,
                        on_patch=lambda upstream, name: progress.advance(f"{upstream}/{name}"),
                        on_wait_for_readers=_say_waiting_for_readers)
        if abort:
            restored = engine.abort()
            _say_left_behind(project, engine)
            from patchforge.cli.output import say_resolution_kept

            for directory, files in engine.resolutions_kept:
                say_resolution_kept(project, directory, files, "patchforge rebase --to")
            if as_json:
                emit_json({"aborted": True, "restored": restored}, "rebase")
            else:
                echo("rebase aborted; the series, lock and overlays are as they were")
            return
        try:
            if specs:
                from patchforge.targets import parse_target_specs

                targets = parse_target_specs(specs, project.upstream_names())
                from patchforge.state import unlisted_fixes

                # Before a pin is fetched or anything written, a dry run too: the move rebased
                # the series as listed and exited 0, leaving a patch file the series forgot on
                # the old pin, where `overlays` then refused it. An upstream the move leaves
                # where it is keeps its series as it is. (A rebase in progress: `start` names
                # its ways on. ops.series, and the editing worktree with it, is loaded only to
                # say it: a clean rebase never loads them.)
                if not engine.journal.exists() and \
                        any(upstream in targets for upstream, _, _ in unlisted_fixes(project)):
                    from patchforge.ops.series import refuse_unlisted_fixes

                    refuse_unlisted_fixes(project, list(targets))
                try:
                    summary = engine.start(targets, dry_run=dry_run)
                finally:
                    _say_left_behind(project, engine)
                if dry_run and not as_json:
                    _note_unrefreshed_edits(project, store, summary)
            else:
                try:
                    summary = engine.resume(skip=skip, allow_undo=allow_undo)
                finally:
                    _say_left_behind(project, engine)
                    if not as_json:
                        from patchforge.cli.output import say_notes

                        say_notes(engine.kept_over)
        except ConflictStop as stop:
            if as_json:
                emit_json(engine.stop_document(stop.message), "rebase")
            raise
        except PatchforgeError as exc:
            # Failed on its way (a patch's bad Keeps pattern, the store): the run's journal
            # stays, and the message must say how to go on from it.
            if specs and not dry_run and not isinstance(exc, InProgressError) and \
                    engine.journal.exists() and "rebase --abort" not in (exc.hint or ""):
                exc.hint = "; ".join(filter(None, [
                    exc.hint, "the rebase stays in progress: `patchforge rebase --continue` "
                    "goes on once that is fixed, `patchforge rebase --abort` puts everything "
                    "back"]))
            raise
    # A fix set aside under skipped/ (by this run's `--skip` or an earlier rebase's) is in none
    # of the overlays the finished move writes: `verify`, `overlays` and `bump` exit 1 for it,
    # and so does the move (below). It exited 0, and `rebase --to X && deploy` (or a
    # `rebase --skip` finishing in a script) went out without the fix.
    from patchforge.state import skipped_fixes, skipped_notes

    set_aside = [{"upstream": fix.upstream, "name": fix.name, "message": note}
                 for fix, note in skipped_notes(project, skipped_fixes(project))]
    if set_aside:
        summary["set_aside"] = set_aside
    if as_json:
        emit_json(summary, "rebase")
    else:
        render_summary(summary, app)
    if summary["dry_run"] and summary["counts"].get("conflict"):
        sys.exit(1)  # the real run would stop: that needs attention
    if summary.get("reverted") or summary.get("gone_upstream"):
        # A fix kept under upstreamed/ that this revision lacks is in no overlay: `status`
        # says it needs attention (exit 1), and so does the move that leaves it out. It
        # exited 0, and `rebase --to X && patchforge overlays && deploy` went out without it.
        sys.exit(1)
    if summary.get("set_aside"):
        sys.exit(1)  # a person decides: `bring-back NAME` or `delete NAME`
