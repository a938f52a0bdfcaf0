"""`bump [UPSTREAM] [--to SPEC] [--image REPO] [--dry-run] [--open-pr] [--json]`."""
from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING

import click

from patchforge.cli.complete import complete_upstream
from patchforge.cli.output import Progress, emit_json, say_info
from patchforge.errors import EXIT_ATTENTION, PatchforgeError

if TYPE_CHECKING:
    from patchforge.project import Project


@click.command()
@click.argument("upstream", required=False, shell_complete=complete_upstream)
@click.option("--to", "spec", metavar="SPEC",
              help="Move to this target instead of the newest nightly.")
@click.option("--image", "image", metavar="REPO",
              help="The image repository whose nightly-<sha> tags are candidates "
                   "(default: the repository of the configured `image`).")
@click.option("--dry-run", is_flag=True, help="Judge and plan; write nothing.")
@click.option("--open-pr", is_flag=True,
              help="Push patchforge/bump-<tag> and open (or update) the stack repository's "
                   "pull request (with --dry-run: only say what would be done).")
@click.option("--remote", default="origin", show_default=True, metavar="NAME",
              help="The stack repository's remote that --open-pr pushes to.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def bump(app, upstream, spec, image, dry_run, open_pr, remote, as_json):
    """Move the stack to the newest (or named) nightly: find it, judge the series, rebase,
    regenerate overlays, run the checks, verify against the image, and write the report.

    Exit 0 when the stack moved cleanly (or was up to date), 1 when a person is needed (the
    rebase is left stopped, a fix set aside under skipped/; with --dry-run nothing is
    written), 2 on bad input (also an image repository with no nightly-<40 hex> tag)."""
    from patchforge.fsutil import RepoLock, atomic_write, put_back_on_failure
    from patchforge.rebase.journal import Journal
    from patchforge.net import make_forge
    from patchforge.ops.bump import bump as run_bump
    from patchforge.ops.bump_report import render_markdown, title
    from patchforge.ops.deploy import default_registry
    from patchforge.pins import open_store

    project = app.project()
    registry = None if project.offline else default_registry(project)
    forge = make_forge(project)
    lock = contextlib.nullcontext() if dry_run else RepoLock(project.state_dir)
    if open_pr:
        from patchforge.pr.stack import require_committable, require_identity, require_pushable

        # A dry run says what the run will meet: without the remote, its plan of the pull
        # request failed after the look, saying the stack had moved.
        require_pushable(project, remote)
        if not dry_run:
            require_committable(project)
            require_identity(project)
    with app.reading():
        from patchforge.ops.bump import refuse_rebase_in_progress
        from patchforge.ops.series import refuse_unlisted_fixes

        # A rebase in progress first: a rebase cut short in its write-out leaves a landed
        # fix's file unlisted, which its `--continue` or `--abort` settles.
        refuse_rebase_in_progress(project)
        # Before the registry is asked or anything moved: the bump regenerates the overlays
        # and proposes them, without a fix the series dropped by hand.
        try:
            refuse_unlisted_fixes(project)
        except PatchforgeError:
            if open_pr and not dry_run:
                from patchforge.ops.bump import _which_upstream

                # A draft git does not track yet (a new patch file, unlisted) is named as the
                # pull request's commit would carry it, with the `git stash` that sets it
                # aside, as it was before the move.
                _refuse_carried_changes(project, {"upstream": _which_upstream(project,
                                                                              upstream)})
            raise
    progress = Progress("rebasing")

    def keep(doc: dict, text: str) -> None:
        # Kept for whoever resumes a stopped rebase or reads the run later; local state only.
        # Written before the pull request is asked for, so that a forge failure loses nothing.
        import json

        directory = project.state_dir / "bump"
        directory.mkdir(parents=True, exist_ok=True)
        atomic_write(directory / "report.md", text.encode())
        atomic_write(directory / "report.json",
                     (json.dumps(doc, indent=2, sort_keys=True) + "\n").encode())

    def before_move(doc: dict) -> None:
        if open_pr:
            _refuse_carried_changes(project, doc)
        keep(doc, render_markdown(doc))

    kept = [project.state_dir / "bump" / name for name in ("report.md", "report.json")]
    journal = Journal(project.state_dir)
    pinned = _bytes_of(project.lock_path)

    def moved_or_moving() -> bool:
        return journal.exists() or _bytes_of(project.lock_path) != pinned

    # The report of a run cut short in its rebase is kept before the rebase starts: the bump
    # after the person's `rebase --continue` (or, cut after the move was written, the next
    # bump) finds the move in it and proposes it. One that fails or is cut short with no
    # rebase left in progress and nothing moved puts the kept report back: the move it would
    # tell of never began.
    with lock, open_store(project) as store, progress, put_back_on_failure(
            kept, unless=moved_or_moving,
            finish="the kept report (.patchforge/bump/) tells of a move that never began: "
                   "the next bump replaces it"):
        document = run_bump(project, store, upstream, spec=spec, image=image, dry_run=dry_run,
                            registry=registry, forge=forge, proposing=open_pr,
                            on_patch=lambda u, n: progress.advance(f"{u}/{n}"),
                            before_move=before_move)
        if dry_run and not as_json:
            # As `rebase --dry-run` says: the judgement read the patch file, and the bump
            # itself is refused until the edit is refreshed. The report said "would move
            # cleanly", exit 0, of a bump that then exits 2.
            from patchforge.cli.output import say_unrefreshed_edits

            say_unrefreshed_edits(project, store, [document["upstream"]],
                                  "this dry run used its patch file, and the bump is refused "
                                  "until", " (or `patchforge edit --close --discard`)")
    markdown = render_markdown(document)
    # A bump that moved the stack but whose pull request the forge did not take (the run
    # failed after the move): kept, and proposed now. Run again, it said "nothing to move"
    # and never opened it.
    unopened = _unopened_bump(project, document) if not dry_run else None
    if not dry_run and unopened is None:
        keep(document, markdown)
    elif unopened is not None and not open_pr and not as_json:
        # Kept over this run's "nothing to move": the retry with --open-pr reads it.
        click.echo(f"note: the report of the earlier bump ({title(unopened)}) is kept in "
                   ".patchforge/bump/: its pull request was never opened; `patchforge bump "
                   f"{unopened['upstream']} --open-pr` opens it", err=True)
    if open_pr:
        proposed = unopened or document
        try:
            proposed["pull_request"] = _open_pr(project, forge, proposed,
                                                render_markdown(proposed), remote, dry_run)
        except PatchforgeError as exc:
            # A dry run moved nothing (and proposes no earlier report: `unopened` is None),
            # so the hint must not say the stack moved.
            if proposed.get("target") is None or proposed.get("outcome") == "stopped" or \
                    dry_run:
                raise
            if not as_json:
                click.echo(markdown, nl=False)
            moved_to = proposed["target"].get("tag") or proposed["target"].get("commit")
            exc.hint = "; ".join(filter(None, [exc.hint, (
                f"the stack moved to {moved_to} and the report is kept in "
                ".patchforge/bump/report.md: once the forge answers, `patchforge bump "
                f"{proposed['upstream']} --open-pr` opens its pull request")]))
            raise
        if unopened is not None:
            document["pull_request"] = unopened["pull_request"]
            keep(unopened, render_markdown(unopened))
            if not as_json:
                click.echo(f"note: opened the pull request of the earlier bump "
                           f"({title(unopened)}), which the forge had not taken", err=True)
        elif not dry_run:
            keep(document, markdown)
    if as_json:
        emit_json(document, "bump")
    else:
        click.echo(markdown, nl=False)
        pull = document["pull_request"]
        if pull:
            where = pull.get("url") or pull.get("branch") or "(the rebase stopped)"
            say_info(f"\npull request: {pull['action']} {where}")
        say_info(title(document))
    if document["needs_person"]:
        sys.exit(EXIT_ATTENTION)


def _bytes_of(path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _refuse_carried_changes(project: Project, document: dict) -> None:
    """Refuse, before the move, a `bump --open-pr` whose commit would carry changes of the
    series, lock or overlays not committed on the branch (an earlier bump run without
    --open-pr, work by hand): its pull request would describe this move alone, from the
    checkout's pin, while its diff also moved the lock from the branch's and dropped the fixes
    that other move dropped, which the reviewer would never be told of."""
    from patchforge.errors import UsageError
    from patchforge.pr.stack import uncommitted_bump_files

    # The lock first: a pin moved is what a reviewer must hear of above all.
    changed = sorted(uncommitted_bump_files(project),
                     key=lambda path: path.rsplit("/", 1)[-1] != project.lock_path.name)
    if not changed:
        return
    shown = ", ".join(changed[:6]) + (f" and {len(changed) - 6} more" if len(changed) > 6 else "")
    # A move stopped on a conflict and finished by hand is as unproposed as one made without
    # --open-pr: its stop named `bump --to TAG --open-pr`, and a newer nightly must not hide it.
    earlier = _unopened_bump(project, {"upstream": document["upstream"]}, stopped=True)
    way = ""
    if earlier is not None:
        tag = earlier["target"].get("tag") or earlier["target"].get("commit")
        how = ("an earlier bump stopped on, its rebase finished since"
               if earlier.get("outcome") == "stopped"
               else "an earlier bump made without --open-pr")
        way = (f"; they are the move to {tag} {how}: "
               f"`patchforge bump {earlier['upstream']} --to {tag} --open-pr` proposes it")
    raise UsageError(
        f"the stack has changes not committed on the branch ({shown}): the pull request's "
        "commit would carry them while its report tells of this move alone; nothing was moved",
        hint="commit them, or set them aside (`git stash --include-untracked`: a file git does "
             "not track yet is one of them), then run the bump again" + way)


def _unopened_bump(project: Project, document: dict, *, stopped: bool = False) -> dict | None:
    """The kept report of the last bump when it moved the stack to where it is now and its
    pull request was never opened (the forge failed after the move), and this run found
    nothing newer; else None. With `stopped`, also a report whose rebase stopped and that a
    person finished since (the pin is its target now): not opened as it is (its report is of
    the stop), but named, as its stop did, by `bump --to TAG --open-pr`."""
    from patchforge.fsutil import parse_json
    from patchforge.ops.bump import target_pin_commit

    if document.get("target") is not None:
        return None
    try:
        kept = parse_json((project.state_dir / "bump" / "report.json").read_bytes())
        target, upstream = kept["target"], kept["upstream"]
        pin = project.lock.pin(upstream)
    except (OSError, ValueError, KeyError, TypeError, PatchforgeError):
        return None
    pulled = kept.get("pull_request") or {}
    if not isinstance(target, dict) or kept.get("outcome") == "stopped" and not stopped or \
            pulled.get("url") or target_pin_commit(target) != pin.commit or \
            upstream != document.get("upstream"):
        return None
    return kept


def _open_pr(project: Project, forge, document, markdown, remote, dry_run) -> dict | None:
    from patchforge.ops.bump_report import title
    from patchforge.pr.stack import open_stack_pull

    target = document.get("target")
    if target is None:
        return None  # nothing newer: nothing to propose
    if document["outcome"] == "stopped":
        return {"action": "not opened", "branch": None, "repo": None, "base": None,
                "title": title(document), "commit": None, "number": None, "url": None}
    tag = target.get("tag") or target["commit"][:12]
    return open_stack_pull(project, forge, tag=tag, title=title(document), body=markdown,
                           remote=remote, dry_run=dry_run).to_json()
