"""`pr NAME`: draft the upstream pull request for one fix; push and open it only when asked.

Exit codes: 0 the draft was written (and pushed/opened when asked); 1 there is nothing to send:
the fix already landed upstream, or it conflicts with the upstream head (the files are named;
nothing is written or pushed), or its file is gone upstream; 2 bad usage or input.
"""
from __future__ import annotations

import hashlib
import shlex
import sys
from pathlib import Path

import click

from patchforge.cli.app import GivenPath
from patchforge.cli.complete import complete_patch
from patchforge.cli.output import announce_state, emit_json
from patchforge.errors import EXIT_ATTENTION, UsageError


@click.command()
@click.argument("name", shell_complete=complete_patch)
@click.option("--onto", metavar="REF",
              help="Base the PR on this branch, tag or commit (default: the upstream's `follow`, "
                   "else its HEAD).")
@click.option("--out", "out_dir", type=GivenPath(file_okay=False, path_type=Path), metavar="DIR",
              help="Where the format-patch file and PR.md go "
                   "(default .patchforge/pr/<upstream>/<name>/).")
@click.option("--push", "remote", metavar="REMOTE",
              help="Push branch patchforge/<name> to this fork (URL, path, or a remote of "
                   "the stack's git repository).")
@click.option("--open", "open_pr", is_flag=True,
              help="Open a draft PR (or update the open one) through the forge API; needs --push.")
@click.option("--keep-body", is_flag=True,
              help="With --open: send a PR.md that pr.json cannot tell is patchforge's draft or "
                   "yours (pr.json of an older version) as it is, and count it as yours.")
@click.option("--fork-owner", metavar="OWNER",
              help="The fork's owner on the forge (default: read from the --push URL).")
@click.option("--dry-run", is_flag=True,
              help="Draft only, nothing leaves this machine (the default without --push/--open).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON document.")
@click.pass_obj
def pr(app, name, onto, out_dir, remote, open_pr, keep_body, fork_owner, dry_run, as_json):
    """Draft the upstream pull request for one fix (dry run unless --push/--open)."""
    from patchforge.pins import open_store
    from patchforge.pr.draft import draft_pr
    from patchforge.pr import submit

    project = app.project()
    announce_state(project, as_json=as_json)
    owner = ""  # the fork's owner, for --open
    if remote:
        # A remote of the stack's repository, by name (`--push fork`), is its URL.
        remote = submit.named_remote(project.root, remote) or remote
    if dry_run and (remote or open_pr):
        # `--dry-run` is the draft said aloud, as `rebase` and `bump` take it; with a flag
        # that sends, which of the two is meant cannot be told.
        raise UsageError("--dry-run drafts only: --push and --open would leave this machine",
                         hint="drop --dry-run to send the draft, or --push/--open to draft")
    if project.offline and (remote or open_pr):
        raise UsageError("--offline: --push and --open would leave this machine",
                         hint="drop --offline, or draft without --push/--open")
    if open_pr:
        if not remote:
            raise UsageError("--open needs --push REMOTE: the pull request is opened from the "
                             "branch pushed to your fork")
        owner = fork_owner or submit.fork_owner(remote) or ""
        if not owner:
            raise UsageError(f"cannot tell the fork's owner from {remote!r}",
                             hint="pass --fork-owner OWNER")
    if keep_body and not open_pr:
        raise UsageError("--keep-body goes with --open: it says to send PR.md as it is")
    if out_dir is not None:
        # Its drafts go under .patchforge/pr/ by default; anywhere else of the project's own
        # (series/up/ holds a patch named like the format-patch file) is refused.
        project.refuse_own_destination(out_dir, new_directory=True,
                                       allowed=project.state_dir / "pr")
    placeholder = _placeholder_author(project, name)
    if placeholder is not None and (remote or open_pr):
        raise UsageError(f"{placeholder[0]}; nothing was drafted, pushed or opened",
                         hint=placeholder[1])
    if remote or open_pr:
        from patchforge.state import require

        # --open writes the pull request's URL into the patch: not into a series a rebase
        # is moving.
        require(project, "pr --push", [project.find_patch(name)[0]])
    with open_store(project) as store:
        draft = draft_pr(project, store, name, onto=onto)
        document = draft.to_json()
        document.update({"dry_run": not (remote or open_pr), "written": None, "pushed": None,
                         "pull": None, "recorded": False})
        if draft.state != "ready":
            return _not_ready(project, draft, document, as_json)
        out = out_dir or submit.default_out_dir(project, draft)
        submit.refuse_another_fixs_draft(project, out, draft)
        last_sent = submit.recorded_sent_body(out, draft)  # before pr.json is written again
        # The fix's pull request, kept across the runs that open none: what tells a later
        # push of another fix that this branch is taken.
        document["sent"] = submit.recorded_sent(out, draft)
        paths, body = submit.write_out(out, draft)
        document["written"] = {**paths, "body_sha256": body.written_sha256,
                               "body_edited": body.edited, "body_origin": body.origin,
                               "new_draft": body.new_draft,
                               "new_draft_sha256": body.new_draft_sha256}
        submit.write_record(document["written"]["json"], document)
        if open_pr and body.origin == "unknown":
            _refuse_unknown_body(document["written"], body, keep_body)
        existing = submit.NOT_ASKED
        if open_pr:
            from patchforge.net import make_forge
            forge = make_forge(project)
            existing = submit.check_forge(forge, draft, owner)
            earlier = submit.forwarded_pull_branch(project, forge, draft, owner, existing)
            if earlier is not None:
                # The fix was renamed since its pull request was opened: that one is updated.
                draft.head_branch = earlier
                existing = submit.check_forge(forge, draft, owner)
        if remote:
            _refuse_unpushable_branch(project, draft)
            if not open_pr:
                from patchforge.net import make_forge
                forge = make_forge(project)  # (built, and a token looked for, only if asked)
            took = submit.refuse_another_fixs_branch(project, draft, existing, forge=forge,
                                                     remote=remote)
            if took is not None:
                click.echo(f"note: {took}", err=True)
            pushed = submit.push_branch(store, draft, remote)
            document["pushed"] = {"remote": pushed.remote, "branch": pushed.branch,
                                  "commit": pushed.commit}
            submit.write_record(document["written"]["json"], document)
        else:
            # A dry run: what --push will meet, said before it is tried.
            if placeholder is not None:
                click.echo(f"note: {placeholder[0]}: `--push` and `--open` are refused while it "
                           f"is; {placeholder[1]}", err=True)
            unpushable = _unpushable_branch(project, draft)
            if unpushable is not None:
                click.echo(f"note: {unpushable[0]}: `--push` is refused while it has that name; "
                           f"{unpushable[1]}", err=True)
            claim = submit.branch_claim(project, draft)
            if claim is not None:
                (repo, number), holder, _ = claim
                click.echo(f"note: branch {draft.branch} carries pull request {repo}#{number}, "
                           f"{holder}'s (its Forwarded): `--push` asks the forge whether it "
                           "is still open, and is refused while it is, or without a token to "
                           f"ask; {submit.claim_hint(draft, repo, number, '')}", err=True)
        if open_pr:
            opened = submit.open_or_update(forge, draft, owner, existing, body=body.text,
                                           last_sent=last_sent)
            sent = None if opened.kept_description else body.text
            document["pull"] = {"action": opened.action, "number": opened.number,
                                "url": opened.url, "repo": opened.repo, "head": opened.head,
                                "base": opened.base, "kept_description": opened.kept_description,
                                "body_sha256": hashlib.sha256(sent.encode("utf-8")).hexdigest()
                                if sent is not None else last_sent}
            document["sent"] = {"url": opened.url, "branch": draft.branch,
                                "body_sha256": document["pull"]["body_sha256"]}
            if body.origin == "unknown":
                # Sent as the user said: from now on PR.md is their edit of the draft made
                # now (a later draft goes beside it as PR.new.md), never asked about again.
                document["written"].update(body_sha256=body.new_draft_sha256,
                                           body_origin="edited")
            document["recorded"] = submit.record_submission(project, draft.upstream, draft.name,
                                                            opened.url)
            submit.write_record(document["written"]["json"], document)
    if document["recorded"]:
        # The header the pull request's URL went into is part of the patch's bytes, which the
        # committed manifest pins: CI's `overlays --check` failed with no word here.
        from patchforge.cli.output import say_overlays_lag
        say_overlays_lag(project)
    if as_json:
        emit_json(document, "pr")
        return
    _report(draft, document, body)


def _placeholder_author(project, name: str) -> tuple[str, str] | None:
    """(what, the way on) when the fix's Author is the placeholder `new` and the imports write
    where git has no identity (`Unknown <unknown@localhost>`, a fresh machine): the commit
    sent upstream would be by no one, and `new` only said so in a note when the patch was
    made. None for any other Author (a patch that cannot be read is the draft's to refuse)."""
    from patchforge.errors import PatchforgeError
    from patchforge.ops.series import UNKNOWN_AUTHOR

    try:
        upstream, patch_name = project.find_patch(name)
        patch = project.read_patch(upstream, patch_name)
        values = patch.get_all_at("Author")
    except PatchforgeError:
        return None
    for value, line in values[:1]:
        person, _, email = value.strip().partition(" <")
        if person != UNKNOWN_AUTHOR[0] and email.rstrip(">") != UNKNOWN_AUTHOR[1]:
            return None
        where = f"{patch.source}:{line}"
        return (f"{where}: the fix's Author is {value.strip()}, the placeholder written where "
                "git had no identity: the commit would go upstream by no one",
                "write the person who made the fix there (`Author: Full Name "
                "<user@example.com>`)")
    return None


def _unpushable_branch(project, draft) -> tuple[str, str] | None:
    """(what, the way on) when the fix's pull request branch, patchforge/<name>, is no git
    branch name (a fix named before `new` and the imports refused such names: `x.lock`,
    `a..b`): git's own "invalid refspec" came only from the push, after the draft was made.
    None for a name a branch carries, or a pull request opened under an earlier name."""
    from patchforge.names import branch_name_problem, branch_safe_name

    if draft.head_branch is not None:
        return None
    problem = branch_name_problem(draft.stem)
    if problem is None:
        return None
    old = project.patch_word(draft.upstream, draft.name)
    new = branch_safe_name(draft.stem)
    renamed = f"{old.rsplit('/', 1)[0]}/{new}" if "/" in old else new
    return (f"{draft.upstream}/{draft.name}: its pull request's branch {draft.branch} is no "
            f"git branch name ({problem})",
            f"`patchforge rename {shlex.quote(old)} {shlex.quote(new)}` gives the fix a name a "
            f"branch can carry (then `patchforge pr {shlex.quote(renamed)}`)")


def _refuse_unpushable_branch(project, draft) -> None:
    """UsageError, before anything is pushed, for a branch name git refuses (_unpushable_branch)."""
    unpushable = _unpushable_branch(project, draft)
    if unpushable is not None:
        raise UsageError(f"{unpushable[0]}; nothing was pushed or opened", hint=unpushable[1])


def _refuse_unknown_body(written: dict, body, keep_body: bool) -> None:
    """--open of a PR.md pr.json records no digest of (an older patchforge's pr.json): it may
    be a draft made from an older patch or the user's words, and it would be the pull
    request's description. Sent unasked, a stale draft went out; refused (before the push)
    unless --keep-body says to send it."""
    if keep_body:
        return
    take = (f"; to take the draft made from the patch now, `mv {shlex.quote(body.new_draft)} "
            f"{shlex.quote(written['body'])}`" if body.new_draft else "")
    raise UsageError(f"{written['body']}: pr.json does not record what patchforge wrote to it "
                     "(an older patchforge wrote it), so whether it is a draft made from an "
                     "older patch or your words cannot be told, and --open would send it as "
                     "the pull request's description; nothing was pushed or opened",
                     hint=f"read it; to send it as it is, add --keep-body{take}")


def _not_ready(project, draft, document, as_json):
    if as_json:
        emit_json(document, "pr")
    else:
        target = draft.target
        where = f"{target.ref} ({target.commit[:12]})"
        if draft.state == "upstreamed":
            landed = f", landed in {draft.landed_in[:12]}" if draft.landed_in else ""
            click.echo(f"{draft.upstream}/{draft.name}: already upstream at {where}{landed}: "
                       "no pull request to send", err=True)
            for item in draft.evidence[:5]:
                click.echo(f"  {item}", err=True)
            click.echo("hint: `patchforge rebase` onto a release with it drops the fix",
                       err=True)
        elif draft.made_on:
            _made_on_earlier(project, draft, where)
        else:
            click.echo(f"{draft.upstream}/{draft.name}: does not go onto {where}: "
                       f"{draft.detail}", err=True)
            for path in draft.files:
                click.echo(f"  {path}", err=True)
            click.echo("nothing was written or pushed; " + _way_onto(project, draft), err=True)
    sys.exit(EXIT_ATTENTION)


def _made_on_earlier(project, draft, where: str) -> None:
    """A fix made on lines earlier patches of the series made: no rebase brings them to the
    upstream (the series may already be on the pull request's base, and the rebase has no
    stop), so the way is to send those patches first, or to make the fix's change apart from
    their lines."""
    makers = list(dict.fromkeys(m.patch for m in draft.made_on if m.patch))
    who = ", ".join(makers) or "earlier patches of the series"
    click.echo(f"{draft.upstream}/{draft.name}: does not go onto {where}: it is made on lines "
               f"that {who} made, which {draft.target.ref} does not have", err=True)
    for item in draft.made_on:
        by = f" ({item.patch})" if item.patch else ""
        what = f"`{item.text}` taken out there" if item.taken_out else f"`{item.text}`"
        click.echo(f"  {item.path} line {item.line}: {what}{by}", err=True)
    first = " and ".join(f"`patchforge pr {project.patch_word(draft.upstream, m)}`"
                         for m in makers)
    stem = project.patch_word(draft.upstream, draft.name)
    send = (f"send {who} first ({first}): {draft.name} goes onto {draft.target.ref} once "
            f"{'it is' if len(makers) == 1 else 'they are'} there" if makers else
            "send the earlier patches that made them first")
    click.echo(f"nothing was written or pushed; {send}; or make {draft.name}'s change leave "
               f"those lines and the ones next to them alone (`patchforge edit {stem}`)",
               err=True)


def _way_onto(project, draft) -> str:
    """How to make a fix that does not go onto the pull request's base go there: move the
    series onto that base (the fix is resolved at its stop), or draft onto another base. While
    the upstream's series is stopped or being edited, that is finished first."""
    from patchforge.state import IDLE, read_states

    pin = project.lock.pin(draft.upstream)
    way = (f"`patchforge rebase --to {draft.upstream}={draft.target.ref}` moves the series "
           "there (this fix is resolved at its stop), or choose another base with --onto")
    if pin.kind == "wheel":
        # A wheel upstream moves to a version of its wheel, never to a commit of the history
        # its pull requests go to (`rebase --to U=main` is refused), and its pin, the import
        # of a wheel, is never that commit.
        package = project.config.upstream(draft.upstream).package
        way = (f"`patchforge rebase --to {draft.upstream}=VERSION` moves the series to a "
               f"version of {package} that has {draft.target.ref}'s change (this fix is "
               "resolved at its stop), or choose another base with --onto")
    elif pin.kind == "dir":
        path = project.config.upstream(draft.upstream).path
        way = (f"once {path} holds a version that has {draft.target.ref}'s change, "
               f"`patchforge rebase --to {draft.upstream}=LABEL` (LABEL naming that version) "
               "moves the series there (this fix is resolved at its stop), or choose another "
               "base with --onto")
    elif pin.commit == draft.target.commit:
        # Already there: the rebase would have no stop, and this would say the same again.
        way = (f"the series is on {draft.target.ref} already: resolve it there "
               f"(`patchforge edit {project.patch_word(draft.upstream, draft.name)}`), or "
               "choose another base with --onto")
    state = read_states(project).get(draft.upstream)
    if state is not None and state.kind != IDLE:
        return (f"first finish what is open in {draft.upstream}'s series (the note above): "
                f"{state.next_step()}; then {way}")
    return way


def _sent_unfilled(document) -> str:
    """Where a pull request went out with parts of its body still to fill in: that it did, and
    the ways to fill them in ("" for a dry run, which opened nothing)."""
    if not document["pull"]:
        return ""
    return (f"; the draft pull request was {document['pull']['action']} with them as placeholders"
            ": fill them in on the forge, or in PR.md and run this `patchforge pr` again (a "
            "PR.md changed by hand is the body it sends)")


def _report(draft, document, body):
    from patchforge.pr.submit import UNFILLED_MARK

    target = draft.target
    click.echo(f"{draft.upstream}/{draft.name} onto {target.ref} ({target.commit[:12]}): "
               f"{draft.detail}")
    click.echo(f"commit {draft.commit} by {draft.spec.author}")
    for key, value in draft.spec.trailers:
        click.echo(f"  {key}: {value}")
    written = document["written"]
    click.echo(f"wrote {written['patch']}")
    if body.origin == "unknown":
        # pr.json of a patchforge that kept no digest of what it wrote: PR.md may be a draft
        # it wrote or the user's words; kept (words are never lost), and said as not known.
        click.echo(f"kept {written['body']}: {written['json']} does not record what patchforge "
                   "wrote to it (an older patchforge wrote it), so whether it was changed by "
                   "hand cannot be told; it is kept as it is, and is the body"
                   + (" sent" if document["pull"] else ""))
        if body.new_draft:
            click.echo(f"wrote {body.new_draft}: the draft made from the patch now; to take it, "
                       f"`mv {shlex.quote(body.new_draft)} {shlex.quote(written['body'])}` "
                       "(from then on PR.md follows the patch again)")
    elif body.edited:
        click.echo(f"kept {written['body']}: changed by hand since it was written, so it is "
                   "the body" + (" sent" if document["pull"] else ""))
        if body.new_draft:
            click.echo(f"wrote {body.new_draft}: the draft made from the patch changed since; "
                       "take what you need into PR.md (or take it whole: "
                       f"`mv {shlex.quote(body.new_draft)} {shlex.quote(written['body'])}`)")
        if UNFILLED_MARK in body.text:
            click.echo("PR.md still has parts to fill in (`fill in before opening`)"
                       + _sent_unfilled(document))
    else:
        click.echo(f"wrote {written['body']}" + (f" (from the upstream's {draft.body.template})"
                                                if draft.body.template else ""))
        for note in draft.notes:
            click.echo(f"note: {note}")
        if draft.body.unfilled:
            click.echo(("not filled from the patch: " if document["pull"] else
                        "not filled from the patch (fill in before opening): ")
                       + ", ".join(draft.body.unfilled) + _sent_unfilled(document))
    if document["pushed"]:
        click.echo(f"pushed {document['pushed']['branch']} to {document['pushed']['remote']}")
    if document["pull"]:
        pull = document["pull"]
        click.echo(f"{pull['action']} draft pull request {pull['url']}")
        if pull.get("kept_description"):
            click.echo("kept its description, which was changed on the forge since patchforge "
                       "sent it (PR.md holds the draft, to take from by hand)")
        if document["recorded"]:
            click.echo(f"recorded it in {draft.name} (Forwarded, Upstream-Status)")
    if document["dry_run"]:
        click.echo("dry run: nothing left this machine (--push REMOTE to push the branch, "
                   "--open to open the draft pull request)")
