"""Fixes kept under upstreamed/ that upstream no longer has at a revision: the tree first, then
the history to name the commit.

A fix moved to `series/<upstream>/upstreamed/` is out of the series: nothing deploys it but
upstream's own code. When upstream takes the change back (a revert), the fix is lost unless
somebody is told. What is told must never be wrong the other way: a false "reverted" turns
every nightly's `status` red. So the verdict comes from the files of the revision asked about
(the pin, or the target of `rebase --to` / `status --against`), and only from them:

- the fix's change is there (each of its file changes applies in reverse without fuzz): landed;
  nothing to say. Unless it is there only at another copy of the same code while the fix's own
  place holds its pre-image again (landed detection's rule, detect.OwnPlaces.elsewhere): upstream
  took the change out of its place (and made it in the copy), gone. That rule costs the fix's
  base file and a git diff, so it is asked only of a file where the copy can be (detect.
  may_be_elsewhere: the lines the rule needs at the own place are in the file outside every
  copy of the change), which a file holding the fix's code once never is;
- the fix's old code is back at its place: its pre-image exactly (each of its file changes
  applies forward again without fuzz, a file it created is gone, one it deleted is back as it
  was), or, where a file's whole diff applies neither way, each hunk's old lines back where the
  hunk was with neighbours upstream edited since (below): its change is gone. Unless a
  hunk's added lines are still in the file as many times as the fix left them (_moved_away),
  or its runs of added lines are, whitespace, quotes, number spelling and black's wrapping
  parentheses aside (_moved_near):
  upstream moved them (a guard a line lower, an import sorted, a call re-wrapped by a
  formatter in the same commit), and the old neighbours of
  the place they were added at meet again exactly as a revert leaves them; that hunk is
  there. Where the landing is known, only if the history shows the move (_doubtful_moves:
  the commit that took the hunk out of its place left its lines in the file, and is no
  revert of the landing); else it is gone, said "possibly doubled" with the line to look
  at (a copy of a common line upstream added since counts as well). A hunk of a Python file
  that changes import lines only is there where the file's module-level imports bind its names
  to the same modules in any form, wherever its neighbours say its place is (_imports_held:
  a formatter wrote `import a.b.c as c` as `from a.b import c`, or sorted it into a wrapped
  list). Some hunks (or files) so gone and every other one there: taken back in part, gone
  too (the fix is whole nowhere, so in no overlay), said with those places;
- neither: upstream changed the code otherwise since (rewrote it, landed it again in another
  form, moved it): superseded, nothing to say. Unless a hunk has its old code back exactly
  (_back_exactly): taken back in part whatever became of the others, in its file or in
  another file of the fix (a hunk that only adds
  lines, some of them elsewhere in the file, only where the commit that took it out reverts
  the landing: _not_taken_back). Unless the history since the landing has a
  revert of it that nothing since put back, and the fix's place holds the old code changed
  rather than the fix in another form (_reverted_then_changed): upstream reverted it, then
  edited those lines again, and it is said as reverted. A revert there is a commit whose
  message says revert, or one that put the fix's files back by hand as the landing found
  them, from exactly what the landing made of them (_may_undo); one that kept the fix's
  import, all the rest gone, is one too (_gone_but_imports), and an import still there tells
  no landing again (_relanded); so is one that took out some hunks only, the others as landed
  or as upstream changed them before it (_taken_in_part), those hunks alone telling whether
  the fix came back since (_relanded, _put_back). So, said as taken out, is a commit there
  that took the change out as other work, no revert of it (_taken_as_work: an edit of the
  old code after it is no re-landing). Unless the fix's function
  was taken out of its file, added to no other, its name gone from the file, and the fix's
  lines with it, into no other function or file (_function_taken_out): deleted with the fix,
  said taken out by that commit. Unless a hunk of the fix that adds only a guard finds its
  function still defined under its name with no condition testing what the guard tests,
  the history naming the commit that left it so (_guard_dropped): the guard dropped and the
  lines under it rewritten in one commit, said taken out by that commit.

A file whose whole diff applies neither way is judged by its changed lines, each hunk's run
of them at the one place where most of its context still holds: a neighbour line upstream
edited after the landing, or a line of another fix of the series in the kept diff's context,
must not turn a revert into "superseded". So "gone" is the fix's old code at its own place,
which is not always the pre-image byte for byte. A hunk whose whole pre-image is at exactly one
place while its neighbours cannot tell that place for the fix's (its context holds at several
places: functions that start alike; or a copy of its lines, another fix's guard in another
function, holds with part of it) is as the history says (_placed_by_history): gone where the
latest commit that made that place took the hunk out there and did not put its lines
elsewhere (a guard dropped alone); not where that place was there all along (a look-alike
function holding the old code of a hunk upstream rewrote in the fix's own) or the commit moved
the lines. Where the hunk is in a function of the fix's base file that the file still defines
(_OwnFunction), that function tells the places apart: of several places its neighbours hold,
the one in it is the fix's, and its whole pre-image or post-image counts only there; a
post-image held only in another function while the pre-image is held in it (a neighbour line
upstream rewrote) is gone from its place, for the count and the history to tell a move. Where
no function is known and no place has a line of its own (look-alike blocks of a text file), a
post-image held at one block and the pre-image at as many lines of another (or at several) is
where git's diff of the base file to the revision's carries the fix's block (_carried_state):
never present by a tie.

Lines the fix added that are elsewhere in the file while its own function lacks them are
judged by the commit that took them out of that function (_HunkTakers.out_of_function), not by
the one that made their old place (an edit of a neighbour line and its revert make it again)
nor by the file's count: moved only where that commit put as many copies elsewhere in the
same change. A copy another function had before it (another kept fix's guard or synchronize),
or one a later commit added, is other code; the hunk is taken back, that commit named.

For a change gone the history speaks only to name the commit that took it out and to tell a
revert from other work (for neither, only to find such a revert). The commits after the
landing up to that revision that change the fix's files (side branches included: git's
default history simplification hides a revert merged from a side branch) are read newest
first; a commit after which the change is gone and before which it was not, and after
which no later commit has it back, took it out.
It is a revert when its message names the landing (`This reverts commit X` for a commit of
the landing, or for the merge that brought it; or, in a message that says it reverts, the
landing's pull request `#N`), or its change to the fix's files is the exact reverse of the
landing commit's; or it reverts so (its message, its exact reverse) a commit that brought the
change back, in any form, after it was taken out (a re-land in another form, reverted).
Otherwise it took the change out as part of other work. A revision that
does not contain the landing commit at all (the pin rolled back to before it, say from a bad
nightly) is said as such. Each needs attention: the files hold the fix's old code again at
its place (the state a revert leaves, its neighbours maybe edited since), so the deployment
runs without the fix whatever the commit says of itself; a person decides between
`bring-back` and `delete` of the kept fix.

A fix whose `Base` commit the store lacks and its upstream does not serve (a deleted or
force-pushed branch's: pins.bring_named_commits) is judged without its base file, which is
sound only for what needs none: a change found gone is said; one whose files are as its
landing left them is quiet; any other is said `base-unserved`, never quiet (judge_many).

Nothing is cached across revisions: each command asks about the revision it has, so a pin
rolled back past the revert finds the change there again and says nothing. A project with
nothing under upstreamed/ pays one directory listing per upstream.
"""
from __future__ import annotations

import bisect
import builtins
import itertools
import keyword
import os
import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from typing import TYPE_CHECKING, Callable

from patchforge.apply.neartext import (ALWAYS_BUILT, C_DIRECTIVE, NEVER_BUILT, STRING_OR_COMMENT,
                                       NearFlat, NearText, near_flat, near_runs, past_open_text)
from patchforge.errors import PatchforgeError
from patchforge.model.record import field, record, replace
from patchforge.patterns import on_first_use

if TYPE_CHECKING:
    from patchforge.apply.diffparse import FilePatch
    from patchforge.apply.hunks import CFile
    from patchforge.formats.patchfile import PatchFile
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore

# Commits of the history read to name the one that took a change out: beyond this many
# commits changing the fix's files the change is said gone without a name (`unexplained`).
MAX_COMMITS = 300

_LANDED_COMMIT = on_first_use(r"\bcommit[:\s]\s*([0-9a-fA-F]{7,64})\b")
_RECORDED_COMMIT = on_first_use(rb"(?m)^Applied-Upstream:[^\n]*\bcommit[:\s]")
_REVERTS_COMMIT = on_first_use(rb"This reverts commit ([0-9a-fA-F]{7,64})")
_SAYS_REVERT = on_first_use(rb"(?i)\brevert")
_PR_IN_SUBJECT = on_first_use(rb"\(#(\d+)\)\s*$")
_MERGED_PR = on_first_use(rb"^Merge pull request #(\d+)")
_PR_URL = on_first_use(r"/pull/(\d+)/?\s*$")
_PLAIN_LABEL = on_first_use(r"[A-Za-z0-9][A-Za-z0-9._+:@/-]{0,127}")
_OBJECT_ID = on_first_use(r"[0-9a-fA-F]{7,64}")


@record
class LandingGone:
    """A fix under upstreamed/ whose change the revision asked about does not have.

    `kind`: `reverted` (a commit whose message names the landing, or whose change is its exact
    reverse, took it out; or so reverted a re-land of it after a revert), `removed` (a commit
    took it out as part of other work),
    `before-landing` (the revision does not contain the landing commit: a pin rolled back to
    before it), `unexplained` (no landing commit recorded, or no commit found that took it
    out), `base-unserved` (not known: its `Base` commit is not in the store, its upstream
    does not serve it, and its files changed since the landing; judge_many).

    Each needs attention (exit 1; `status`, `lint`, `rebase` and `bump` say so), whatever the
    kind: the fix is in no overlay and the revision's files hold its old code again at its
    place (its pre-image, or its changed lines' old form among neighbours edited since), so a
    deployment of the revision runs the code the fix was written against. `removed` and
    `unexplained` differ from a revert in the attribution only; that upstream replaced the fix
    with something else is for a person to say (`delete` the kept fix)."""

    upstream: str
    name: str
    path: str  # the kept file, relative to the project root
    kind: str
    landed_in: str | None
    by: str | None  # the commit that took the change out
    detail: str
    # A skipped fix has the same name, and `bring-back UPSTREAM/NAME` takes that one: this one
    # is named `UPSTREAM/upstreamed/NAME`.
    shadowed: bool = False

    @property
    def reverted(self) -> bool:
        return self.kind == "reverted"

    @property
    def lacks(self) -> str:
        """What the revision's file is said to do of the fix, where a command names it."""
        return "may lack the fix (not judged)" if self.kind == "base-unserved" \
            else "lacks the fix"

    def message(self) -> str:
        fix = f"{self.upstream}/{self.name}"
        if self.shadowed:
            return self._message(f"{self.upstream}/upstreamed/{self.name}") + \
                f" (a skipped fix has its name too: series/{self.upstream}/skipped/" \
                f"{self.name}, which `patchforge bring-back {fix}` or `patchforge delete " \
                f"{fix}` takes out of the way first)"
        return self._message(fix)

    def _message(self, fix: str) -> str:
        own = f"{self.upstream}/{self.name}"
        landed = f"landed in {self.landed_in[:12]}" if self.landed_in else "landed upstream"
        if self.kind == "reverted":
            assert self.by is not None
            return (f"fix {own} {landed} was reverted upstream in {self.by[:12]}: "
                    f"`patchforge bring-back {fix}` puts it back in the series ({self.detail})")
        if self.kind == "before-landing":
            return (f"fix {own} {landed} is not in this revision ({self.detail}), and in no "
                    f"overlay: `patchforge bring-back {fix}` puts it back in the series")
        if self.kind == "base-unserved":
            return (f"fix {own} {landed} is judged without its base: {self.detail}; "
                    f"`patchforge fetch` asks {self.upstream} for that commit again; once "
                    f"you have read the fix against upstream's files, `patchforge bring-back "
                    f"{fix}` puts it back in the series where upstream lacks it (judged on "
                    f"the pin), or `patchforge delete {self.upstream}/upstreamed/{self.name}` "
                    "keeps it under deleted/ where upstream has it, or, to keep it judged, "
                    f"`patchforge refresh {self.upstream}/upstreamed/{self.name} --base "
                    f"{self.landed_in[:12] + '^' if self.landed_in else 'REV'}` makes it on "
                    "a commit upstream serves (the one before its landing; where its files "
                    "were moved before, a commit before that)")
        return f"fix {own} {landed} is no longer upstream: {self.detail}; " \
            f"`patchforge bring-back {fix}` puts it back in the series; `patchforge delete " \
            f"{self.upstream}/upstreamed/{self.name}` keeps it under deleted/ if upstream's " \
            "other work replaced it"

    def to_json(self) -> dict:
        return {"upstream": self.upstream, "name": self.name, "path": self.path,
                "kind": self.kind, "landed_in": self.landed_in, "by": self.by,
                "detail": self.detail, "message": self.message()}


@record
class _Fix:
    upstream: str
    name: str
    path: str
    patch: PatchFile
    files: list  # the FilePatches the tree can judge
    aliases: dict  # FilePatch index -> paths to look for it at (renames upstream made)
    # The landing commit (judge_many sets it) and, by FilePatch index, the counts of the
    # file's lines as the fix left it and of those it adds on balance (_moved_away): asked
    # once per fix, whatever number of revisions its history walk judges.
    landing: str | None = field(default=None, compare=False)
    counts: dict = field(default_factory=dict, repr=False, compare=False)
    # The hunks (file change index, hunk number from 1) _moved_away counted moved, by
    # revision; and those the history does not show moved (_doubtful_moves), never counted
    # moved again, each with the line of the file judged where its lines are (said).
    moved: dict = field(default_factory=dict, repr=False, compare=False)
    unmoved: dict = field(default_factory=dict, repr=False, compare=False)
    # The hunks found back only by their neighbours beside a hunk changed since, some of
    # their added lines elsewhere in the file, by revision (_hunk_states); and those the
    # history does not show reverted (_not_taken_back), never found back again.
    weak: dict = field(default_factory=dict, repr=False, compare=False)
    not_back: set = field(default_factory=set, repr=False, compare=False)
    # The hunks whose whole pre-image is back at one place that their neighbours cannot tell
    # for theirs (_hunk_state's _PLACE_ASKED), by revision; and the history's answer for each
    # (_placed_by_history: True where the commit that took the hunk out made that place and
    # left its lines in the file fewer times: taken back).
    unplaced: dict = field(default_factory=dict, repr=False, compare=False)
    placed: dict = field(default_factory=dict, repr=False, compare=False)
    # The commit that took a hunk's lines out of the fix's own function, where that told the
    # hunk taken back (_function_left): the commit a status names for it.
    taken_by: dict = field(default_factory=dict, repr=False, compare=False)
    # By FilePatch index, where upstream moved the function(s) its hunks change whole into
    # another file, the old file staying (_moved_functions): (that file, the functions).
    moved_to: dict = field(default_factory=dict, repr=False, compare=False)
    # By FilePatch index, where the commit that took the function(s) its hunks change out of
    # its file added none of those names to another file (_moved_functions): (that commit,
    # its parent, the functions), for _function_taken_out to tell whether their lines went.
    taken_out: dict = field(default_factory=dict, repr=False, compare=False)
    # By FilePatch index in `moved_to`: (the commit that moved the function(s) there, the
    # paths upstream renamed that file to since, oldest first: _moved_renamed).
    moved_on: dict = field(default_factory=dict, repr=False, compare=False)
    # By FilePatch index, where upstream moved the fix's file away and wrote a new one at its
    # path (_rewritten_away): the path the fix's file went to.
    rewritten: dict = field(default_factory=dict, repr=False, compare=False)
    # The FilePatch indexes in `moved_to` whose old file kept a shim of the function(s)
    # (_calls_moved): read at the file moved into wherever it defines them.
    shims: set = field(default_factory=set, repr=False, compare=False)
    # By FilePatch index, where upstream renamed the fix's file before the landing
    # (_renamed_before_landing): the old path, no alias any more and no file the fix's
    # function or file can have moved into (a legacy copy upstream wrote there later).
    left_path: dict = field(default_factory=dict, repr=False, compare=False)
    # The revisions at which every hunk of the fix is back at its old code but hunks of import
    # lines still there, as the fix wrote them or in another form (_IMPORTS_HELD; _combined
    # says part): a revert that kept the import (other code uses it, or upstream's formatter
    # rewrote it since the landing) is a revert all the same (_revert_of).
    imports_alone: set = field(default_factory=set, repr=False, compare=False)
    # By revision where _combined says part, the hunks (file change index, hunk number from 1,
    # None for a whole file) whose old code is back there: what a revert of the landing took
    # out where it took out only some (_revert_of, _reverted_then_changed).
    gone_hunks: dict = field(default_factory=dict, repr=False, compare=False)


def kept_fixes(project: Project, upstream: str) -> list[tuple[str, bytes]]:
    """(file name, bytes) of each fix under series/<upstream>/upstreamed/, by name."""
    directory = project.series_dir(upstream) / "upstreamed"
    try:
        names = sorted(entry for entry in os.listdir(directory) if entry.endswith(".patch"))
    except (FileNotFoundError, NotADirectoryError):
        return []
    from patchforge.project import read_no_link

    found = []
    for name in names:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            continue
        try:
            # Never through a link, nor from a FIFO: a pull request committing
            # upstreamed/x.patch as a link to /dev/zero had every command that judges the
            # kept fixes (status, lint, verify, overlays --check, check) read until memory ran
            # out, and one to a file outside the project read it as a fix. Refused as a link
            # among the series' own files is, naming it.
            found.append((name, read_no_link(path)))
        except (FileNotFoundError, PermissionError):
            continue
    return found


def unparsed_kept(project: Project, upstream: str) -> list[tuple[str, str]]:
    """(file name, the parse error naming its file and line) of each fix under
    series/<upstream>/upstreamed/ that does not parse: judged by nothing (_parse)."""
    from patchforge.formats.patchfile import parse_patch_file

    found = []
    for name, data in kept_fixes(project, upstream):
        rel = (project.series_dir(upstream) / "upstreamed" / name).relative_to(project.root)
        try:
            list(parse_patch_file(data, str(project.root / rel)).file_patches)
        except PatchforgeError as exc:
            found.append((name, str(exc)))
    return found


def unparsed_said(project: Project, upstreams) -> list[dict[str, str]]:
    """{upstream, name, path, message} of each fix kept under upstreamed/ of `upstreams` that
    does not parse (unparsed_kept): what lint, status and check say of it. It is judged by
    nothing, so a landing taken back upstream would go unsaid: each needs attention."""
    return [{"upstream": upstream, "name": name,
             "path": (project.series_dir(upstream) / "upstreamed" / name).relative_to(
                 project.root).as_posix(),
             "message": f"{why}: restore it from version control, or `patchforge delete "
                        f"{upstream}/upstreamed/{name}` takes it out (kept under deleted/)"}
            for upstream in upstreams for name, why in unparsed_kept(project, upstream)]


def unparsed_line(said, *, attention: bool = False) -> str:
    """The one sentence every command and the HTML report say of a fix unparsed_said gives
    (its dict, or one read back from status's document): kept as landed, judged by nothing.
    `attention`: said among other states, where this one needs attention."""
    return (f"NOT CHECKED{' (needs attention)' if attention else ''}: {said.get('upstream')}"
            f"/upstreamed/{said.get('name')} is judged by nothing: {said.get('message')}")


def unread_said(project: Project, upstream: str, label: str, name: str,
                why: str) -> dict[str, str]:
    """{upstream, name, path, message} of a kept fix gone_upstream could not judge at the
    revision `label` (`name`, `why`: an entry of its `unread`): what a command that judged the
    kept fixes there says of it, as `status` notes it (`NOT CHECKED: ...`). Whether upstream
    took it out is not known: its landing may be in no overlay."""
    return {"upstream": upstream, "name": name,
            "path": (project.series_dir(upstream) / "upstreamed" / name).relative_to(
                project.root).as_posix(),
            "message": f"NOT CHECKED: whether {upstream} {label} still holds "
                       f"{upstream}/upstreamed/{name}: {' '.join(why.split())}"}


def gone_upstream(project: Project, store: UpstreamStore, upstream: str, commit: str, *,
                  skip: frozenset[str] = frozenset(),
                  unread: list[tuple[str, str]] | None = None) -> list[LandingGone]:
    """The fixes under series/<upstream>/upstreamed/ (those named in `skip` left out: a rebase's
    own drops, landed at `commit` by its judgement) whose change `commit`'s files do not have,
    each with the commit that took it out and whether that was a revert. [] at once when there
    is nothing under upstreamed/. `unread` gets (file name, why) of each fix that could not be
    judged (its files not readable: offline, a cache without them)."""
    kept = [(name, data) for name, data in kept_fixes(project, upstream) if name not in skip]
    if not kept:
        return []
    from patchforge.state import cut_short_write_out

    cut_short = cut_short_write_out(project)
    if cut_short is not None and upstream in cut_short[1]:
        # A rebase of this upstream was cut short while writing out its result: the kept
        # files, the series and the lock are part old, part new (a landed part kept under
        # upstreamed/ while the lock still pins the old revision), so a judgement would call
        # a fix the series holds "in no overlay" and name a bring-back the rebase refuses.
        # Every command says the write-out is in progress and needs attention; the kept
        # fixes are judged once `rebase --continue` or `--abort` has ended it.
        return []
    from patchforge.pins import bring_named_commits

    failed: dict[str, str] = {}
    missing = bring_named_commits(project, store, upstream,
                                  kept_commits([data for _, data in kept]), failed=failed)
    items = []
    recorded: dict | None = None
    for name, data in kept:
        rel = (project.series_dir(upstream) / "upstreamed" / name).relative_to(
            project.root).as_posix()
        if recorded is None and not _RECORDED_COMMIT.search(data):
            # (The history is read only for a fix whose file does not name its landing.)
            recorded = _dropped_events(project)
        items.append((name, rel, data, recorded or {}))
    gone = judge_many(store, upstream, items, commit, unread=unread,
                      without_base=_without_base(project, upstream, missing, failed))
    skipped = project.series_dir(upstream) / "skipped"
    return [replace(g, shadowed=True) if (skipped / g.name).exists() else g for g in gone]


def _without_base(project: Project, upstream: str, missing: list[str],
                  failed: dict[str, str] | None = None) -> dict[str, tuple[str, bool]]:
    """For each commit of `missing` (named by kept fixes, not in the store after
    bring_named_commits): (why, in the words a fix whose `Base` it is is said with, and
    whether that is only not checked: offline, the next command with the network fetches
    it), as judge_many's `without_base` takes it. One whose fetch failed (`failed`: the URL
    and git's error, the network or a remote that gave no answer) is said so: it was said
    "not served", as though upstream had answered it lacks it, and the next command asks
    again. Else its upstream does not serve it."""
    if not missing:
        return {}
    config = project.config.upstream(upstream)
    if project.offline:
        return {commit: ("is not in the cache (without --offline it is fetched)", True)
                for commit in missing}
    failed = failed or {}
    if config.kind == "git" and config.url:
        from patchforge.pins import git_url_for
        from patchforge.store.giturl import redact

        url = redact(git_url_for(project, config.url))
        why = f"is not served by {upstream} ({url})"
    else:
        url, why = "", f"is not in the cache, and {upstream} (a {config.kind} upstream) " \
            "serves no commit"
    return {commit: (f"could not be fetched from {upstream} ({url}): {failed[commit]}"
                     if commit in failed else why, False) for commit in missing}


# The full commit ids a kept fix's header names: its `Base` and its recorded landing.
_NAMED_COMMITS = on_first_use(
    rb"(?m)^(?:Base:[ \t]*|Applied-Upstream:[^\n]*\bcommit:)([0-9a-fA-F]{40})\b")


def kept_base(data: bytes) -> str | None:
    """The full commit id a kept fix's header (its bytes `data`) gives as its `Base`."""
    header = re.split(rb"(?m)^(?:diff --git |--- )", data, maxsplit=1)[0]
    found = re.search(rb"(?m)^Base:[ \t]*([0-9a-fA-F]{40})\b", header)
    return found[1].decode().lower() if found else None


def kept_commits(datas: list[bytes]) -> list[str]:
    """The commits the kept fixes `datas` (their bytes) name in their headers (the lines
    before their first diff): each `Base`, each `Applied-Upstream: ..., commit:X`."""
    found = []
    for data in datas:
        header = re.split(rb"(?m)^(?:diff --git |--- )", data, maxsplit=1)[0]
        found += [m.decode().lower() for m in _NAMED_COMMITS.findall(header)]
    return found


def carried_by_series(project: Project, store: UpstreamStore, upstream: str,
                      gone: list[LandingGone]) -> list[LandingGone]:
    """Those of `gone` (fixes kept under upstreamed/ that a revision lacks) whose change the
    series itself carries at the pin: every file change of the kept fix is in the series'
    files there (the overlays'), each hunk in the function of the fix's base file it changes
    where one is known (_carried_in_own_function), and the pin's own files lack it. Such a
    kept file is a leftover, not a fix in no overlay: a rebase undone with git in the stack's
    repository (`git reset --hard` puts the series back with the whole fix, and leaves the
    new, untracked upstreamed/ file where it is)."""
    if not gone:
        return []
    from patchforge.stack import series_state

    pin = project.lock.pin(upstream).commit
    try:
        state = series_state(project, store, upstream, strict=False)
    except PatchforgeError:
        return []
    carried = []
    for fix in gone:
        try:
            kept = _parse(upstream, fix.name, fix.path, read_kept(project, fix.path))
            if kept is None:
                continue
            files = kept.files
            if not all(fp.path in state.current and
                       _file_state(fp, state.current[fp.path]) == "present" and
                       _carried_in_own_function(store, kept, k, state.current[fp.path])
                       for k, fp in enumerate(files)):
                continue
            upstreams = store.read_blobs(pin, [fp.path for fp in files])
        except (PatchforgeError, OSError):
            continue
        if all(_file_state(fp, upstreams.get(fp.path)) == "present" for fp in files):
            continue  # the pin has it itself: upstream's, not the series'
        carried.append(fix)
    return carried


def _carried_in_own_function(store: UpstreamStore, fix: _Fix, k: int, content: bytes) -> bool:
    """Whether each hunk of the kept fix's file change `k` whose place in the fix's base file
    is in a known function (_OwnFunction) is in `content` (the series' file) in that function:
    the function defined there and the hunk's lines held in it (_hunk_state). Where upstream
    moved or deleted the fix's function without the fix's line, a fix of the series adding
    the same line to another function of the file that starts alike held the kept hunk's
    lines with most of its neighbours: read as the series carrying the kept fix, the kept file
    was called a leftover and `delete` of the fix's only record advised, exit 0."""
    fp = fix.files[k]
    if fp.binary is not None or fp.is_new or fp.is_delete:
        return True
    own = _own_function_of(store, fix, k)
    lines = _Lines(content)
    for n, hunk in enumerate(fp.hunks, 1):
        within = own(n)
        if within.name is None:
            continue
        if not within.defined(lines) or \
                _hunk_state(lines, hunk, own=within) not in (None, "present"):
            return False
    return True


def read_kept(project: Project, rel: str) -> bytes:
    """A kept fix's bytes (`rel`: relative to the project root), never through a link."""
    from patchforge.project import read_no_link

    return read_no_link(project.root / rel)


def judge_many(store: UpstreamStore, upstream: str, items: list[tuple[str, str, bytes, dict]],
               commit: str, *, unread: list[tuple[str, str]] | None = None,
               without_base: dict[str, tuple[str, bool]] | None = None
               ) -> list[LandingGone]:
    """Each kept fix of `items` (its name, its file `rel`, that file's bytes, `recorded`)
    judged at `commit`: what is said of those whose change is gone (LandingGone); nothing of
    one whose change is there, or upstream changed the code otherwise, or whose files cannot
    be read (offline, a revision without them: judged by the next command that can read them,
    never said from a guess; named in `unread` where given). `recorded`: ledger.departures(),
    for a fix without its landing commit in Applied-Upstream. The files of all are read
    together, the own-place diffs all of them ask for at `commit` made in one git process
    (_states_at), and the history since their landings walked once (_History).

    `without_base`: the `Base` commits the store lacks after its upstream was asked for them,
    each with why and whether only offline (_without_base). The judge reads a fix's base file
    (its functions, its paths before a rename, the history since); judged without it, a fix
    whose file upstream renamed before the landing and then reverted was quiet (exit 0), in no
    overlay. So such a fix is quiet only where that needs no base: what its landing left in
    its files is there byte for byte (_as_landed). A change said gone is said as it was
    found; anything else is said `base-unserved` (needs attention), or, offline, NOT CHECKED
    in `unread`."""
    fixes = [(fix, recorded) for name, rel, data, recorded in items
             if (fix := _parse(upstream, name, rel, data)) is not None]
    for fix, recorded in fixes:
        fix.landing = _landing_of(fix, recorded)[0]
    try:
        caches = _states_at(store, [fix for fix, _ in fixes], commit)
    except PatchforgeError:
        caches = [{} for _ in fixes]  # (each then reads its own files below)
    # The landings of the fixes whose change is not there whole: those that may ask the
    # history since their landing, which is walked once for all of them when first asked.
    landings = {landing for (fix, recorded), cache in zip(fixes, caches)
                if cache.get(commit) != "present"
                and (landing := _commit(store, _landing_of(fix, recorded)[0])) is not None}
    history = _History(store, commit, landings) if landings else None
    found = []
    for (fix, recorded), cache in zip(fixes, caches):
        base = (fix.patch.get("Base") or "").strip().lower()
        why, offline = (without_base or {}).get(base, (None, False))
        try:
            gone = _judge(store, fix, commit, recorded, cache, history)
            if gone is None and why is not None and \
                    not _as_landed(store, fix, recorded, commit):
                gone = _base_unserved(fix, recorded, base, why)
        except PatchforgeError as exc:
            # Judged by the next command that can read its files; a caller that must say
            # what it did not check is told.
            if unread is not None:
                unread.append((fix.name, str(exc)))
            continue
        if gone is not None and gone.kind == "base-unserved" and offline:
            if unread is not None:
                unread.append((fix.name, f"its base commit {base[:12]} {why}"))
            continue
        if gone is not None:
            found.append(gone)
    return found


def _as_landed(store: UpstreamStore, fix: _Fix, recorded: dict, commit: str) -> bool:
    """Whether `commit` has the fix as the revision it was found landed at had it (its
    recorded landing commit, else the target the rebase that dropped it judged it at), which
    no base file is needed to tell: each of the fix's files byte for byte as there, holding
    the fix's change; or, where those paths do not hold it there (upstream renamed the file
    before the landing: only the base tells the paths apart), every file the landing commit
    changed byte for byte as it left it, one of them holding each such change. True too of
    a fix nothing records as upstream (no landing, no drop), never said with its base either."""
    landed, dropped_at = _landing_of(fix, recorded)
    landing = _commit(store, landed)
    reference = landing or _commit(store, dropped_at)
    if reference is None:
        # Never known upstream here (kept by hand with nothing recorded, or its landing not
        # in the cache): never said, with its base or without it.
        return landed is None and dropped_at is None
    paths = sorted({fp.path for fp in fix.files})
    there, now = store.read_blobs(reference, paths), store.read_blobs(commit, paths)
    if any(there.get(path) != now.get(path) for path in paths):
        return False
    if all(_file_state(fp, there.get(fp.path)) == "present" for fp in fix.files):
        return True
    if landing is None:
        return False
    parent = store.parents_of([landing]).get(landing)
    changed = store.changed_paths(parent, landing) if parent else []
    if not changed:
        return False
    made, now = store.read_blobs(landing, changed), store.read_blobs(commit, changed)
    # Each file change of the fix not at its own path there is in a file the landing commit
    # changed (a part landed by an earlier commit into a renamed file is not known here).
    return all(made.get(path) == now.get(path) for path in changed) and all(
        any(_file_state(fp, made.get(path)) == "present" for path in changed)
        for fp in fix.files if _file_state(fp, there.get(fp.path)) != "present")


def _base_unserved(fix: _Fix, recorded: dict, base: str, why: str) -> LandingGone:
    """What is said of a kept fix judged without its base file (judge_many's `without_base`)
    whose files changed since its landing, or whose landing is not known here: whether the
    revision still holds its change is not known, and it is in no overlay."""
    landed = _landing_of(fix, recorded)[0]
    return LandingGone(fix.upstream, fix.name, fix.path, "base-unserved", landed, None,
                       f"its base commit {base[:12]} {why}, and its files are not as its "
                       "landing left them: whether this revision still holds its change is "
                       "not known")


def _parse(upstream: str, name: str, rel: str, data: bytes) -> _Fix | None:
    from patchforge.formats.patchfile import parse_patch_file

    try:
        patch = parse_patch_file(data, rel)
        file_patches = list(patch.file_patches)
    except PatchforgeError:
        return None  # lint reports a kept file that does not parse (unparsed_kept)
    files = [fp for fp in file_patches if fp.told_by_content]
    if not files:
        return None
    return _Fix(upstream, name, rel, patch, files, {k: [fp.path] for k, fp in enumerate(files)})


def held_at_its_place(store: UpstreamStore, upstream: str, name: str, rel: str, data: bytes,
                      commit: str) -> bool:
    """Whether `commit` has a kept fix (its bytes `data`) at its own paths by the files alone:
    each file change there (its diff applies in reverse and not forward, or its changed lines
    are at their place by their neighbours: _file_state). What `bring-back` asks of a fix said
    `base-unserved`, judged without its base: such a fix, moved into skipped/, stopped on a
    conflict with nothing to make (the pin has it), and `--continue` refused a worktree with
    no change, the fix left in skipped/."""
    fix = _parse(upstream, name, rel, data)
    if fix is None:
        return False
    contents = store.read_blobs(commit, sorted({fp.path for fp in fix.files}))
    return all((content := contents.get(fp.path)) is not None and
               _file_state(fp, content) == "present" and
               not _applies(content, fp, reverse=False) for fp in fix.files)


def change_state(fp: FilePatch, content: bytes | None) -> str:
    """present | gone | other: whether a kept fix's change to one file is in `content` (that
    file somewhere else than a revision of the store: an image's), by the rule above."""
    return _file_state(fp, content) if fp.told_by_content else "other"


def created_files_left(patch, changes, read_target) -> tuple[list, list]:
    """The files `patch` creates that a stop's resolution leaves as the target has them
    (`changes`: the worktree's files that differ from the stop's base, path first): the
    resolved patch, made of that difference, no longer creates them. Returns (those the target
    has as the patch makes them: that part landed, those it has with other content: the
    resolution took upstream's for the fix's). `read_target(paths)` -> {path: bytes | None}."""
    resolved = {path for path, *_ in changes}
    created = [fp for fp in patch.file_patches
               if fp.is_new and not fp.is_rename and not fp.is_copy and fp.path not in resolved]
    landed: list = []
    dropped: list = []
    there = read_target([fp.path for fp in created]) if created else {}
    for fp in created:
        if there.get(fp.path) is not None:
            (landed if change_state(fp, there[fp.path]) == "present" else dropped).append(fp)
    return landed, dropped


def _file_state(fp: FilePatch, content: bytes | None, own_place=None, *,
                by_lines: bool = True) -> str:
    """present | gone | other, for one file change and the file's content at a revision: by
    the whole diff first, then (`by_lines`) by its changed lines (`_lines_state`).
    `own_place(fp, content, both)`: present | gone where both ways apply (`both`: the same
    code twice), or where it applies in reverse only and a hunk's change may be found at
    another copy of the code only (detect.may_be_elsewhere)."""
    if fp.binary is not None:
        # One change, told by blob id as landed detection tells it (detect.assess_binary_file):
        # the post-image is there, or the pre-image is back (a file it created gone again).
        from patchforge.store.diff import NULL_OID, blob_oid

        have = blob_oid(content) if content is not None else NULL_OID
        return "present" if have == fp.binary.new_oid else \
            "gone" if have == fp.binary.old_oid else "other"
    if fp.is_new or fp.is_delete:
        # The whole file: created (or deleted) with exactly these lines.
        whole = b"".join(line for h in fp.hunks
                         for line in (h.new_lines() if fp.is_new else h.old_lines()))
        if content is None:
            return "gone" if fp.is_new else "present"
        if content == whole:
            return "present" if fp.is_new else "gone"
        return "other"
    if content is None:
        return "other"  # the file is gone (and no rename found): upstream moved the code
    if _applies(content, fp, reverse=True):
        if own_place is not None and _applies(content, fp, reverse=False):
            return own_place(fp, content, True)  # the same code twice: asked at the fix's place
        if own_place is not None and _may_be_elsewhere(fp, content):
            return own_place(fp, content, False)
        return "present"
    if _applies(content, fp, reverse=False) and not _added_code_edited(fp, content):
        return "gone"
    return _lines_state(fp, content) if by_lines else "other"


def _lines_state(fp: FilePatch, content: bytes | None) -> str:
    """present | gone | other by the changed lines of each hunk (`_hunk_state`), for a file
    change whose whole diff applies neither way: its context is not upstream's there (a
    neighbour line edited since the landing, or a line of another fix of the series in the
    kept diff's context). A created or deleted file, a file gone, a hunk without context:
    other."""
    if content is None or fp.is_new or fp.is_delete or fp.has_zero_context:
        return "other"
    lines = _Lines(content)
    found = None
    for hunk in fp.hunks:
        state = _hunk_state(lines, hunk)
        if state is None:
            continue
        if state == "other" or (found is not None and state != found):
            return "other"
        found = state
    return found or "other"


class _Lines:
    """A file's lines, and where a line is in them (each asked once)."""

    def __init__(self, content: bytes) -> None:
        from patchforge.apply.hunks import lines_of

        self.content = content
        self.lines = lines_of(content)
        self._at: dict[bytes, list[int]] = {}
        self._functions: dict[tuple[str, int, bytes], bytes | None] = {}
        self._defined: dict[tuple[str, bytes], bool] = {}
        self._c_file: CFile | None = None

    def at(self, line: bytes) -> list[int]:
        found = self._at.get(line)
        if found is None:
            # (list.index runs the comparisons in C: most lines asked for are in few places.)
            found, k = [], -1
            try:
                while True:
                    k = self.lines.index(line, k + 1)
                    found.append(k)
            except ValueError:
                pass
            self._at[line] = found
        return found

    def in_function(self, own: _OwnFunction, k: int, changed: bytes | None = None) -> bool:
        """Whether a change at line `k` (0-based), `changed` its first changed line (its
        indentation tells a Python scope; default: line `k` itself), is in the body of the
        fix's own function `own` (function_named_at's reading; each asked once)."""
        return self.function_at(own.path, k, changed) == own.name

    def function_at(self, path: str, k: int, changed: bytes | None = None) -> bytes | None:
        """function_named_at(path, lines, k, changed), each asked once, a C file's blocks
        found once for all its lines."""
        if changed is None:
            changed = self.lines[k] if 0 <= k < len(self.lines) else b""
        key = (path, k, changed)
        if key not in self._functions:
            # (function_named_at's reading, the C file's blocks found once for all lines.)
            from patchforge.apply.hunks import CFile, _definitions_of, _functions_of, _language

            language = _language(path)
            found = None
            if language is not None:
                if language == "c" and self._c_file is None:
                    self._c_file = CFile(self.lines)
                c_file = self._c_file if language == "c" else None
                definitions = _definitions_of(self.lines, k, changed, language, c_file)
                found = _functions_of(self.lines, definitions, language, c_file)[0] \
                    if definitions else b""
            self._functions[key] = found
        return self._functions[key]


class _OwnFunction:
    """The function of a fix's base file a hunk changes (function_named_at: qualified), in
    the file at `path`: where several places of a revision's file hold the hunk's neighbours
    (functions that start or end alike, each with another kept fix's guard or synchronize),
    the one in this function is the fix's. Found when first asked (the base file read once
    per fix: _own_functions), as few hunks need it."""

    def __init__(self, store: UpstreamStore, fix: _Fix, k: int, n: int) -> None:
        self.path = fix.files[k].path
        # The hunk's first changed line: a place's function is read as for that line there.
        self.changed = _first_changed(fix.files[k].hunks[n - 1])
        self._asked: tuple | None = (store, fix, k, n)
        self._base: tuple = (store, fix, k)
        self.n = n
        self._name: bytes | None = None

    @property
    def name(self) -> bytes | None:
        """None where not known here (no base file, the top level, a file of no language
        known here)."""
        if self._asked is not None:
            store, fix, k, n = self._asked
            self._asked = None
            self._name = _own_functions(store, fix, k)[n - 1]
        return self._name

    def defined(self, lines: _Lines) -> bool:
        """Whether it is known and the file still has a function of that name (one upstream
        renamed tells no place)."""
        return self.name is not None and _has_function(lines, self.path, self.name)

    def named_in(self, lines: _Lines) -> bool:
        """Whether the file has the function's bare name as a word anywhere (a definition, a
        call, an import): False says it is not defined there, without reading its functions."""
        if self.name is None:
            return False
        return _names_word(lines.content, re.split(rb"\.|::", self.name.split(b" [")[0])[-1])

    def once_in_base(self, line: bytes) -> bool:
        """Whether the fix's base file has `line` exactly once (a line of one function's
        own); True where the base file is not known."""
        store, fix, k = self._base
        base = _base_lines(store, fix, k)
        return base is None or len(base.at(line)) == 1

    def look_alike_at(self, lines: _Lines, k: int) -> bool:
        """Whether line `k` of `lines` is in another function than this one that the fix's
        base file has too (one that starts alike, another kept fix's guard in it): that
        function's code, never this one's. A function of a name the base file lacks may be
        this one renamed, and tells nothing."""
        if self.name is None:
            return False
        name = lines.function_at(self.path, k, self.changed)
        if not name or name == self.name:
            return False
        store, fix, k_file = self._base
        base = _base_lines(store, fix, k_file)
        return base is not None and _has_function(base, self.path, name)

    def carried(self, lines: _Lines) -> tuple[int, int] | None:
        """The lines [lo, hi) of `lines` (0-based) that the hunk's place in the fix's base
        file became by upstream's changes since (git's diff of the base file to this one:
        detect.OwnPlaces), None where nothing tells (no base file, a hunk that does not apply
        to it)."""
        from patchforge.apply.hunks import apply_file_patch
        from patchforge.detect import OwnPlaces

        store, fix, k = self._base
        fp = fix.files[k]
        base = _base_lines(store, fix, k)
        if base is None:
            return None
        return OwnPlaces(fp, base.content, lines.content, apply_file_patch).carried(
            self.n - 1, fp.hunks[self.n - 1])


def _names_word(content: bytes, word: bytes) -> bool:
    """Whether `content` has `word` as a whole word (an identifier: neither side a letter,
    digit, `_` or `$`). Found by bytes.find, in C: a regular expression with look-arounds
    tries every position of the file."""
    if not word:
        return False
    at = content.find(word)
    while at >= 0:
        end = at + len(word)
        if (at == 0 or not _WORD_BYTE.get(content[at - 1])) and \
                (end >= len(content) or not _WORD_BYTE.get(content[end])):
            return True
        at = content.find(word, at + 1)
    return False


# The bytes an identifier is made of (_names_word), by value.
_WORD_BYTE = {b: True for b in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$"}


def _has_function(lines: _Lines, path: str, name: bytes) -> bool:
    """Whether `lines` (the file at `path`) has a function of that qualified name
    (function_named_at's reading; each asked once)."""
    cache = lines._defined
    key = (path, name)
    if key not in cache:
        bare = re.split(rb"\.|::", name.split(b" [")[0])[-1]
        # (A line of its body is among the few below a line naming it.)
        cache[key] = bool(bare) and any(
            lines.function_at(path, j) == name
            for k, line in enumerate(lines.lines) if bare in line
            for j in range(k + 1, min(k + 4, len(lines.lines))))
    return cache[key]


def _base_lines(store: UpstreamStore, fix: _Fix, k: int) -> _Lines | None:
    """The fix's file change `k`'s base file (_base_file) as _Lines, read once per fix."""
    key = (k, "base lines")
    if key not in fix.counts:
        base = _base_file(store, fix, fix.files[k])
        fix.counts[key] = _Lines(base) if base is not None else None
    return fix.counts[key]


def _own_functions(store: UpstreamStore, fix: _Fix, k: int) -> list[bytes | None]:
    """By hunk of the fix's file change `k`, the function of its base file the hunk changes
    (function_named_at; None where none is known: no base file, the top level, a file of no
    language known here); asked once per fix."""
    key = (k, "own")
    if key not in fix.counts:
        from patchforge.apply.diffparse import line_kind

        fp = fix.files[k]
        base_lines = _base_lines(store, fix, k)
        found: list[bytes | None] = []
        for hunk in fp.hunks:
            name = None
            if base_lines is not None:
                kinds = [line_kind(body) for body in hunk.lines]
                lead = next((j for j, kind in enumerate(kinds) if kind != b" "), len(kinds))
                at = hunk.old_start - 1 + lead if hunk.old_count else hunk.old_start
                name = base_lines.function_at(fp.path, at, _first_changed(hunk))
            found.append(name or None)
        fix.counts[key] = found
    return fix.counts[key]


def _first_changed(hunk) -> bytes:
    """The first line a hunk adds (else removes), as _landed_again reads a change's place."""
    from patchforge.apply.diffparse import line_content, line_kind

    return next((line_content(body) for body in hunk.lines if line_kind(body) == b"+"),
                None) or next((line_content(body) for body in hunk.lines
                               if line_kind(body) == b"-"), b"")


def _own_function_of(store: UpstreamStore, fix: _Fix, k: int) -> Callable[[int], _OwnFunction]:
    """Hunk number -> its _OwnFunction, for the fix's file change `k`."""
    return lambda n: _OwnFunction(store, fix, k, n)


def _hunk_state(lines: _Lines, hunk, *, ask: bool = False,
                own: _OwnFunction | None = None) -> str | None:
    """present | gone | other for one hunk by its changed lines alone: the run from its first
    to its last changed line (the `+` side for present, the `-` side for gone) found at one
    place of the file with most of the hunk's context around it (`_held`). None for a hunk
    without a change.

    `ask` (a kept fix judged where the history can be read): a hunk whose whole pre-image is
    at exactly one place while its neighbours cannot tell that place for the fix's (they hold
    at several places, or a copy of its lines holds with part of them) is _PLACE_ASKED, for
    the history to say (_placed_by_history). Without `ask`, the files alone: present where
    such a copy holds; gone where none of its added lines is anywhere in the file (a guard
    dropped alone among functions that start alike); else other.

    `own` (the function of the fix's base file the hunk changes, _OwnFunction, where the
    file still defines it): a place in another function is not the hunk's, where its
    neighbours hold at a place there too (functions that start or end alike, another kept
    fix's guard or synchronize in each), nor is its whole pre-image or post-image there
    (_back_exactly)."""
    old, new = hunk.old_lines(), hunk.new_lines()
    lead, trail = hunk.leading_context, hunk.trailing_context
    if lead + trail >= len(old) and lead + trail >= len(new):
        return None
    best = _held_best(lines, new[:lead], new[lead:len(new) - trail], new[len(new) - trail:],
                      own)
    if best is not None:
        at, score = best[0], best[1]
        # (Both held, the same code twice: taken as present, as above. Unless the pre-image
        # is whole at its place and the copy is not: another function's guard holds with the
        # blank lines and first body line every function has, and the fix's own place holds
        # the fix's old code, every line of it.)
        if ask and _back_exactly(lines, hunk, own):
            return _PLACE_ASKED
        # (The pre-image held at another place too: which of the two is the fix's. Asked
        # only then: most hunks there have no such place, and reading the file's functions
        # costs more than this search.)
        back = _held_best(lines, old[:lead], old[lead:len(old) - trail],
                          old[len(old) - trail:], own)
        if back is not None and back[0] != at:
            if own is not None and own.defined(lines):
                # The one place holding the post-image is in another function (one that
                # starts alike, with another kept fix's guard), while the fix's own function
                # holds its old code by the neighbours (a neighbour line upstream rewrote, so
                # not every line of it): gone from its place. Whether upstream moved the lines
                # there, the commit that took them out of the fix's function tells
                # (_moved_away counts the copy, _doubtful_moves asks that commit).
                # (A copy of the added lines anywhere in the fix's own function, one a
                # commit moved a line lower with its neighbours, is the fix's: present.)
                if not lines.in_function(own, at, own.changed) and \
                        lines.in_function(own, back[0], own.changed) and \
                        not _in_own_function(lines, new[lead:len(new) - trail], own):
                    return "gone"
            elif back[2] != best[2]:
                # Where the function is not known, the place holding a context line the file
                # has nowhere else (the block's own header) is the fix's; the other holds
                # only what every block shares, whatever the count. (Unless the added
                # lines are among the neighbours there: moved a line or two lower in their
                # own block.)
                run = new[lead:len(new) - trail]
                if back[2] and not (run and any(
                        back[0] <= k <= back[0] + len(old) - lead and
                        lines.lines[k:k + len(run)] == run for k in lines.at(run[0]))):
                    return "gone"
            elif back[1] > score:
                return "gone"
            elif back[1] == score and own is not None:
                # Neither place told by its neighbours (look-alike blocks of no known
                # function, no line of their own, as many of them holding at each).
                return _carried_state(lines, own, at, [back[0]])
        elif back is None and own is not None and not best[2] and not own.defined(lines):
            # (So too where the pre-image is held at several such blocks, none told.)
            pre = [place[0] for place in _held_all(lines, old[:lead], old[lead:len(old) - trail],
                                                   old[len(old) - trail:], own)
                   if place[0] != at]
            if pre:
                return _carried_state(lines, own, at, pre)
        return "present"
    back = _held_best(lines, old[:lead], old[lead:len(old) - trail], old[len(old) - trail:], own)
    if back is not None:
        # (Unless the fix's added lines are there, joined into one line of the place: read
        # as a neighbour line edited beside the old code, a guard upstream wrote again as
        # `if x is None or x.numel() == 0: return 0` was said taken out.)
        # (Nor where its own place has every line it adds, upstream's among them: an edit
        # inside the code it added, whose last lines end as its neighbours above do.)
        return "other" if _joined_in_place(lines, hunk, back[0]) or \
            _edited_within(lines, hunk, back[0]) or \
            _edited_beside(lines, hunk, back[0], own) else "gone"
    if _back_exactly(lines, hunk, own):
        # Context every function shares (blank lines, a first body line) holds at several
        # places, so _held cannot tell the fix's; but its whole pre-image is at one place.
        # Whether that place is the fix's (a guard dropped alone) or another function's
        # that looks alike (the fix's own rewritten), and whether a copy of its lines
        # elsewhere is the fix's moved or other code, the files cannot tell.
        if ask:
            return _PLACE_ASKED
        return "other" if _lines_elsewhere(hunk, lines) else "gone"
    return "other"


def _added_code_edited(fp: FilePatch, content: bytes) -> bool:
    """Whether a hunk of `fp` that only adds lines has them in `content` edited inside, its
    old neighbours meeting after them (_edited_within): the whole diff applies forward there,
    and the file reads as its old code back, with the fix's code still in it."""
    if all(not _only_adds(hunk) for hunk in fp.hunks):
        return False
    lines = _Lines(content)
    return any(_edited_within(lines, hunk) for hunk in fp.hunks)


def _edited_within(lines: _Lines, hunk, at: int | None = None) -> bool:
    """Whether a hunk that only adds lines, two or more, its old neighbours meeting at line
    `at` (its pre-image's place, _held_best's; found here where not given), meets there right
    after the code it added edited inside: above `at`, its first added line to its last,
    every line it adds in order between them among other lines (no more of those than it
    adds), and above those most of its neighbours above. So upstream put lines inside the
    code the fix added (AITER `0476e29c33` put an `end_sync` line in the kernel
    `4450ede0e1`'s fourth hunk adds), which takes none of it out: where that code ends as the
    code above it does, its old neighbours meet again after it, which read as the old code
    back. (Lines put beside the added code, or some of its lines rewritten, are not read
    here: the place above may then be other code holding those lines; _edited_beside reads
    them against the base file.)"""
    if not _only_adds(hunk):
        return False
    old, new = hunk.old_lines(), hunk.new_lines()
    lead, trail = hunk.leading_context, hunk.trailing_context
    run = new[lead:len(new) - trail]
    if len(run) < 2 or not lead or len(old) != lead + trail:
        return False
    before = old[:lead]
    if at is None:
        place = _held_best(lines, before, [], old[lead:])
        if place is None:
            return False
        at = place[0]
    text = lines.lines
    need = max(1, (lead + 1) // 2)
    if at < 1 or text[at - 1] != run[-1]:
        return False
    for top in range(max(lead, at - 2 * len(run)), at - len(run)):
        if text[top] == run[0] and \
                sum(1 for j in range(1, lead + 1) if text[top - j] == before[-j]) >= need and \
                _in_order(run, text[top:at]):
            return True
    return False


def _edited_beside(lines: _Lines, hunk, at: int, own: _OwnFunction | None) -> bool:
    """Whether a hunk that only adds lines, two or more, its old neighbours meeting at line
    `at` right after a line like its last added one, has above `at` the code it added with
    some of its lines rewritten or lines put beside it (AITER `a4cad90d03` rewrote `512` in
    the kernels `4450ede0e1`'s fourth hunk adds and put a `#define` above them; `52e7477989`
    put two more kernels below them), not the code that was above its place in the fix's
    base file (`own`'s): the lines above `at`, twice as many as the hunk adds, are nearer
    the base file's lines above the place with the hunk's lines added (as the landing left
    them) than without them (as a take-back leaves them), by the lines of each kept in order,
    and most of the hunk's lines (four in five) are among them. Where the added code was
    taken out, the lines above `at` are the base file's again, every one, though a kernel
    the fix added as a variant of the one above it shares most of its lines with it."""
    from difflib import SequenceMatcher

    if own is None or not _only_adds(hunk):
        return False
    old, new = hunk.old_lines(), hunk.new_lines()
    lead, trail = hunk.leading_context, hunk.trailing_context
    run = new[lead:len(new) - trail]
    text = lines.lines
    if len(run) < 2 or not lead or len(old) != lead + trail or at < 1 or \
            text[at - 1] != run[-1]:
        return False
    store, fix, k = own._base
    base = _base_lines(store, fix, k)
    place = hunk.old_start - 1 + lead  # (where the lines were added, in the base file)
    if base is None or base.lines[max(0, place - lead):place] != old[:lead]:
        return False
    width = 2 * len(run) + lead
    above = text[max(0, at - width):at]

    def kept(of: list[bytes]) -> int:
        return sum(size for _, _, size in
                   SequenceMatcher(None, of, above, autojunk=False).get_matching_blocks())

    before = base.lines[:place]
    return kept(run) * 5 >= len(run) * 4 and \
        kept((before + run)[-width:]) > kept(before[-width:])


def _in_order(run: list[bytes], among: list[bytes]) -> bool:
    """Whether every line of `run` is in `among`, in the same order (others between)."""
    lines = iter(among)
    return all(any(line == there for there in lines) for line in run)


def _words_of_new_lines(hunk) -> list[set[bytes]]:
    """The words of each line `hunk` adds that holds a word its other lines (context, lines
    removed) lack, in order: the lines that say what the fix adds (`if`, `x`, `is`, `None` of
    `if x is None:`), not those repeating its neighbours' names."""
    from patchforge.apply.diffparse import line_content, line_kind

    added: list[set[bytes]] = []
    other: set[bytes] = set()
    for line in hunk.lines:
        words = set(_WORD.findall(line_content(line)))
        if line_kind(line) == b"+":
            added.append(words)
        else:
            other.update(words)
    return [words for words in added if words - other]


_WORD = re.compile(rb"[A-Za-z_$][\w$]*")


def _joined_in_place(lines: _Lines, hunk, start: int) -> bool:
    """Whether a hunk that only adds lines, its neighbours held at `start` (_held_best's place
    of its pre-image, a line or more of them missing there), has at that place one line, not a
    neighbour of it, that holds every word of each line it adds that has a word the hunk's
    other lines lack, the shared words too (`if`, `x`, `is`, `None` of `if x is None:` and
    `return` of `return 0`), where it adds two lines or more: upstream wrote the fix's lines
    again as one (`if x is None or x.numel() == 0: return 0`), a form of the fix, not its old
    code back. A guard dropped beside a neighbour line edited keeps no such line, nor does one
    replaced by a check of other work (`if x.numel() == 0: return 0`)."""
    from patchforge.apply.diffparse import line_content, line_kind

    old = hunk.old_lines()
    lead, trail = hunk.leading_context, hunk.trailing_context
    if len(old) != lead + trail:
        return False
    news = _words_of_new_lines(hunk)
    if len(news) < 2:
        return False
    text = lines.lines
    before, after = old[:lead], old[lead:]
    edited = [text[start - j] for j in range(1, len(before) + 1)
              if start - j >= 0 and text[start - j] != before[-j]] + \
        [text[start + j] for j, line in enumerate(after)
         if start + j < len(text) and text[start + j] != line]
    joined = [token for line in hunk.lines if line_kind(line) == b"+"
              for token in _code_tokens(line_content(line))]
    return any(line not in old and
               all(all(_names_word(line, name) for name in words) for words in news) and
               _joined_form(_code_tokens(line), joined)
               for line in edited)


# A line's code tokens: names and numbers, two-character operators, any other character;
# string literals are read as one opaque token, and a comment ends the line's code.
_CODE_TOKEN = re.compile(rb"""("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?)|"""
                         rb"""(#|//|/\*)|([A-Za-z_$][\w$]*|\d[\w.]*|\|\||&&|[=!<>]=|->|::|\S)""")
# Only a condition put in with `or` keeps the fix's check: `if x is None and flag: return 0`
# returns no more where x is None and flag is false, a check of other work.
_BOOLEAN_JOIN = {b"or", b"||"}
_NEGATION = {b"not", b"!"}


def _code_tokens(content: bytes, literals: bool = False) -> list[bytes]:
    """The code tokens of one line (_CODE_TOKEN): a string literal reads as `"..."` whatever
    it holds, or with `literals` as what it holds in double quotes (`'gelu'` and `"gelu"`
    alike, `"silu"` another: a guard's test of one string is not kept by a test of another),
    and nothing after a comment's start is read."""
    tokens: list[bytes] = []
    for literal, comment, token in _CODE_TOKEN.findall(content):
        if comment:
            break
        if literal and literals:
            inner = literal[1:-1] if len(literal) > 1 and literal[-1:] == literal[:1] \
                else literal[1:]
            tokens.append(b'"' + inner + b'"')
        else:
            tokens.append(b'"..."' if literal else token)
    return tokens


def _joined_form(line: list[bytes], joined: list[bytes]) -> bool:
    """Whether the code tokens `line` are the tokens `joined` of a hunk's added lines, in
    order, with only extra conditions put in, each opened by `or` or `||`, and no negation
    (`not`, `!`) the added lines lack, or the same check with its conditions put in any
    order, in parentheses or not (_widened_check):
    `if x is None or x.numel() == 0: return 0` is `if x is None:` + `return 0` joined, while
    `if x is not None: return 0`, a comment naming the guard's words, or a log call quoting
    them are not (read as the fix's form, each made a guard taken out silent)."""
    if not line or not joined:
        return False
    if _widened_check(line, joined):
        return True
    if sum(token in _NEGATION for token in line) > sum(token in _NEGATION for token in joined):
        return False
    at = 0
    k = 0
    while k < len(line):
        if at < len(joined) and line[k] == joined[at]:
            at += 1
            k += 1
            continue
        if line[k] not in _BOOLEAN_JOIN:
            return False
        # An extra condition: read up to the next token the joined lines hold next.
        k += 1
        while k < len(line) and (at >= len(joined) or line[k] != joined[at]):
            k += 1
    return at == len(joined)


def _widened_check(line: list[bytes], joined: list[bytes]) -> bool:
    """Whether the code tokens `line` are a one-line `if` (_if_parts) doing what the `if` of
    the tokens `joined` does, its conditions all there among the line's, joined with `or`
    or `||`: `if x.numel() == 0 or x is None: return 0`, `if (x is None) or x.numel() == 0:
    return 0` are `if x is None:` + `return 0` with a condition put in, before it or in
    parentheses (said "removed", exit 1, its advice to delete a fix upstream has). A
    condition put in with `and` narrows the check: not the fix's (_BOOLEAN_JOIN)."""
    mine, theirs = _if_parts(joined), _if_parts(line)
    if mine is None or theirs is None or mine[1] != theirs[1] or not mine[1]:
        return False
    return set(mine[0]) <= set(theirs[0])


def _if_parts(tokens: list[bytes]) -> tuple[list[tuple[bytes, ...]], list[bytes]] | None:
    """(the condition's operands joined by `or`/`||` outside any bracket, each without the
    parentheses around it whole; the tokens of what it runs, without the braces around it)
    of code tokens that are one `if`: Python's `if COND: BODY`, C's `if (COND) BODY`. None
    for other code."""
    if len(tokens) < 3 or tokens[0] != b"if":
        return None
    depth, end = 0, None
    for k, token in enumerate(tokens[1:], 1):
        if token in (b"(", b"[", b"{"):
            depth += 1
        elif token in (b")", b"]", b"}"):
            depth -= 1
        elif token == b":" and depth == 0:
            end = k
            break
    if end is not None:
        condition, body = tokens[1:end], tokens[end + 1:]
    elif tokens[1] == b"(" and (close := _closing(tokens, 1)) is not None:
        condition, body = tokens[2:close], tokens[close + 1:]
    else:
        return None
    while len(body) >= 2 and body[0] == b"{" and _closing(body, 0) == len(body) - 1:
        body = body[1:-1]
    while len(condition) >= 2 and condition[0] == b"(" and \
            _closing(condition, 0) == len(condition) - 1:
        condition = condition[1:-1]
    operands: list[tuple[bytes, ...]] = []
    depth, start = 0, 0
    for k, token in enumerate(condition + [b"or"]):
        if token in (b"(", b"[", b"{"):
            depth += 1
        elif token in (b")", b"]", b"}"):
            depth -= 1
        elif token in (b"or", b"||") and depth == 0:
            operand = condition[start:k]
            while len(operand) >= 2 and operand[0] == b"(" and \
                    _closing(operand, 0) == len(operand) - 1:
                operand = operand[1:-1]
            if not operand:
                return None
            operands.append(tuple(operand))
            start = k + 1
    return operands, body


def _unattributed(tokens: list[bytes]) -> list[bytes]:
    """C++ code tokens with each attribute (`[[unlikely]]`, `[[gnu::cold]]`) taken out: it
    changes no path, so `if (!x) [[unlikely]] return 0;` reads as `if (!x) return 0;` (a C++
    `[[` opens nothing else)."""
    if b"[" not in tokens:
        return tokens
    kept: list[bytes] = []
    k = 0
    while k < len(tokens):
        if tokens[k] == b"[" and tokens[k + 1:k + 2] == [b"["]:
            close = _closing(tokens, k)
            if close is not None and _closing(tokens, k + 1) == close - 1:
                k = close + 1
                continue
        kept.append(tokens[k])
        k += 1
    return kept


def _closing(tokens: list[bytes], at: int) -> int | None:
    """The index of the bracket closing the one opened at `tokens[at]`, None if none does."""
    pairs = {b"(": b")", b"[": b"]", b"{": b"}"}
    depth = 0
    for k in range(at, len(tokens)):
        if tokens[k] in pairs:
            depth += 1
        elif tokens[k] in pairs.values():
            depth -= 1
            if depth == 0:
                return k
    return None

def _carried_state(lines: _Lines, own: _OwnFunction, at: int, pre: list[int]) -> str:
    """present | gone for a hunk whose post-image is held at line `at` and its pre-image at
    `pre`, where the neighbours cannot tell which place is the fix's (look-alike blocks of no
    known function, none with a line of its own): upstream's own diff of the file since the
    fix's base (_OwnFunction.carried) tells which block the fix's became. Present only where
    that block holds the post-image and no pre-image; not told, gone: counting the
    neighbours, a tie read as present, and a guard dropped from the fix's block beside a
    look-alike holding the same guard was in no overlay with nothing said."""
    carried = own.carried(lines)
    if carried is None:
        return "gone"
    lo, hi = carried
    return "present" if lo <= at <= hi and not any(lo <= k <= hi for k in pre) else "gone"


# _hunk_state's answer for a hunk whose whole pre-image is at one place its neighbours cannot
# tell for the fix's: gone or not as the history says (_placed_by_history).
_PLACE_ASKED = "gone: where the history says"


def _held(lines: _Lines, before: list[bytes], run: list[bytes], after: list[bytes],
          own: _OwnFunction | None = None) -> bool:
    """Whether `run` is held at exactly one place (_held_best)."""
    return _held_best(lines, before, run, after, own) is not None


def _held_all(lines: _Lines, before: list[bytes], run: list[bytes], after: list[bytes],
              own: _OwnFunction | None = None) -> list[tuple[int, int, bool]]:
    """Each place (line index) of the file where `run` is with most of its context around
    it, how many of its context lines hold there, and whether one of them is a line the file
    has there only: `before` ending right above
    it and `after` starting right below it, each context line compared at its own place (a
    neighbour line edited since misses; the others still hold), each side that has context
    keeping at least one line there, and at least half of all of them there. An empty run
    (the pre-image of lines a fix only added) is the place between the two sides. A place in
    a look-alike of the fix's function (`own`) while the file lacks that function is none."""
    if not before and not after:
        return []  # nothing to tell this place from any other
    text = lines.lines
    need = (len(before) + len(after) + 1) // 2
    if run:
        starts = sorted(k for k in lines.at(run[0]) if text[k:k + len(run)] == run)
    else:
        # (Only where a context line is at its place can the place hold.)
        starts = sorted({k + j for j in range(1, len(before) + 1) for k in lines.at(before[-j])}
                        | {k - j for j, line in enumerate(after) for k in lines.at(line)})
    held: list[tuple[int, int, bool]] = []
    # (By place: the context lines held there that the file has there only.)
    singles: dict[int, list[bytes]] = {}
    for start in starts:
        end = start + len(run)
        if start < 0 or end > len(text):
            continue
        above = sum(1 for j in range(1, len(before) + 1)
                    if start - j >= 0 and text[start - j] == before[-j])
        below = sum(1 for j, line in enumerate(after)
                    if end + j < len(text) and text[end + j] == line)
        if (before and not above) or (after and not below) or above + below < need:
            continue
        # (A context line the file has at this place only: the block's own header, or a
        # line of its own body, not the blank lines and first body line every block has.)
        single = [before[-j] for j in range(1, len(before) + 1)
                  if start - j >= 0 and text[start - j] == before[-j] and
                  len(lines.at(before[-j])) == 1] + \
            [line for j, line in enumerate(after)
             if end + j < len(text) and text[end + j] == line and len(lines.at(line)) == 1]
        singles[start] = single
        held.append((start, above + below, bool(single)))
    if held and own is not None and own.name is not None:
        # The fix's function is gone from the file (moved into another file, deleted,
        # renamed): a place in another function the fix's base file has too (one that starts
        # alike, another kept fix's guard in it) is that function's code, never the fix's.
        # (Asked of one place only where the file names the function nowhere, or where no
        # neighbour holding there is a line the file has there only and the fix's base file
        # had once: reading the functions of the places and the file's costs more than the
        # search, and one place holding its function's own line (its head, a line of its own
        # body) is that function's, as most are. A look-alike holds only lines functions that
        # start alike share (some of them the file's only copy once the fix's function left),
        # so a moved function still named in its old file, by a call or an import, is no
        # longer read as there at the look-alike's guard.)
        if len(held) > 1 or not own.named_in(lines) or \
                not any(own.once_in_base(line) for line in singles[held[0][0]]):
            alike = [place for place in held if own.look_alike_at(lines, place[0])]
            if alike and not own.defined(lines):
                held = [place for place in held if place not in alike]
    return held


def _held_best(lines: _Lines, before: list[bytes], run: list[bytes], after: list[bytes],
               own: _OwnFunction | None = None) -> tuple[int, int, bool] | None:
    """The one place (line index) of the file where `run` is with most of its context around
    it, how many of its context lines hold there, and whether one of them is a line the file
    has there only; else None (_held_all's places: none, or several that cannot be told
    apart). Two places so held: which one is the fix's cannot be told, unless exactly one of
    them is in the fix's own function (`own`, _OwnFunction, the file still defining it);
    where that function is not known (the top level, a file of no language known here, a
    function upstream renamed), the one place holding a context line the file has nowhere
    else (its block's own header or body line: look-alike blocks hold only the blank lines
    and first body lines every block has, however many); none or several such: cannot be
    told."""
    held = _held_all(lines, before, run, after, own)
    if len(held) > 1 and own is not None and own.defined(lines):
        held = [place for place in held if lines.in_function(own, place[0], own.changed)]
    if len(held) > 1:
        # (Several in the function too, a long one with look-alike branches: the one place
        # holding a context line the file has there only, as where it is not known.)
        held = [place for place in held if place[2]]
    return held[0] if len(held) == 1 else None


def _in_own_function(lines: _Lines, run: list[bytes], own: _OwnFunction) -> bool:
    """Whether `run` is anywhere in the body of the fix's own function, whatever its
    neighbours."""
    text = lines.lines
    return bool(run) and any(text[k:k + len(run)] == run and
                             lines.in_function(own, k, own.changed)
                             for k in lines.at(run[0]))


def _applies(content: bytes, fp: FilePatch, *, reverse: bool) -> bool:
    """apply.hunks.applies_unfuzzed, the applier imported when first asked."""
    from patchforge.apply.hunks import applies_unfuzzed

    return applies_unfuzzed(content, fp, reverse=reverse)


def _fix_state(store: UpstreamStore, fix: _Fix, rev: str, cache: dict) -> str:
    """present | gone | part | other: the whole fix at `rev` (_combined: gone only when every
    file's and hunk's old code is back at its place and its added lines are not elsewhere in
    the file; part when some are so back and the rest of its change is there; present only
    when every file has the change)."""
    if rev in cache:
        return cache[rev]
    contents = store.read_blobs(rev, _paths(fix))
    cache[rev] = _combined(store, fix, _file_states(
        fix, contents,
        lambda fp, content, both: _at_copy(_at_own_place(store, fix, fp, content, both))),
        rev)
    return cache[rev]


def _at_copy(state: str) -> str:
    """_at_own_place's gone, told apart: the change is at another copy of the code and its own
    place holds the old code (detect.OwnPlaces.elsewhere), which a search for its added lines
    elsewhere in the file must not take for a move."""
    return _GONE_AT_COPY if state == "gone" else state


# _file_state's gone where the fix's change is only at another copy of its code.
_GONE_AT_COPY = "gone: at a copy"
# How much of a fix's change a _fix_state leaves: gone, part, then the others (2).
_TAKEN = {"gone": 0, "part": 1}


def _paths(fix: _Fix) -> list[str]:
    return sorted({p for aliases in fix.aliases.values() for p in aliases})


def _content_of(fix: _Fix, k: int, contents: dict) -> bytes | None:
    """The fix's file change `k` in `contents` (a revision's files by path): at the first of
    its paths (aliases: renames upstream made) there; but where upstream moved the fix's
    function whole into another file (`fix.moved_to`, _moved_functions), that file from the
    revision on whose own file lacks the function and the other one has it (the old file
    stays, so a path found tells nothing)."""
    path = _path_of(fix, k, contents)
    return contents[path] if path is not None else None


def _path_of(fix: _Fix, k: int, contents: dict) -> str | None:
    """The path _content_of reads the fix's file change `k` at in `contents`."""
    path = next((p for p in fix.aliases[k] if contents.get(p) is not None), None)
    moved = fix.moved_to.get(k)
    if moved is not None and path is not None:
        there, owns = moved
        # (The file moved into, under its newest name there: upstream may have renamed it.)
        for there in reversed([there, *fix.moved_on.get(k, (None, []))[1]]):
            if contents.get(there) is not None and \
                    (k in fix.shims or not _defines(owns, contents[path])) and \
                    _defines(owns, contents[there]):
                return there
    return path


def _defines(owns: list[_OwnFunction], content: bytes) -> bool:
    """Whether `content` has a function of each name in `owns` (_OwnFunction.defined)."""
    lines = _Lines(content)
    return all(own.defined(lines) for own in owns)


def _file_states(fix: _Fix, contents: dict, own_place) -> list[tuple]:
    """(file change, its content, _file_state, the path it was read at: _path_of) of each
    file of the fix in `contents` (the files at a revision by path), its whole diff alone
    asked (`own_place`: _file_state's)."""
    files = []
    for k, fp in enumerate(fix.files):
        path = _path_of(fix, k, contents)
        content = contents[path] if path is not None else None
        files.append((fp, content, _file_state(fp, content, own_place, by_lines=False), path))
    return files


# _states_at's answers of _file_state's own_place, until the diffs are made.
_ASK_BOTH, _ASK_AWAY = "ask: both", "ask: away"


def _states_at(store: UpstreamStore, fixes: list[_Fix], rev: str) -> list[dict[str, str]]:
    """Each fix's _fix_state at `rev` (as a cache for _judge), the files of all read together
    and the own-place diffs (base file to `rev`'s) the fixes ask for made in one git process:
    a status asks this of every kept fix each time, and a process per file was most of it."""
    from patchforge.detect import PlaceDiffs

    contents = store.read_blobs(rev, sorted({p for fix in fixes for p in _paths(fix)}))
    files = [_file_states(fix, contents, lambda fp, content, both: _ASK_BOTH if both
                          else _ASK_AWAY) for fix in fixes]
    pairs = []
    for fix, states in zip(fixes, files):
        for fp, content, state, _ in states:
            if state == _ASK_AWAY:
                base = _base_file(store, fix, fp)
                if base is not None:
                    pairs.append((base, content))
    places = PlaceDiffs.made(pairs) if pairs else None
    caches = []
    for fix, states in zip(fixes, files):
        caches.append({rev: _combined(store, fix, [
            (fp, content, _at_copy(_at_own_place(store, fix, fp, content, state == _ASK_BOTH,
                                                 places))
             if state in (_ASK_BOTH, _ASK_AWAY) else state, path)
            for fp, content, state, path in states], rev)})
    return caches


def _combined(store: UpstreamStore, fix: _Fix, files: list[tuple], rev: str | None = None
              ) -> str:
    """The fix's state from its files' (_file_states) and hunks' (_hunk_verdicts): present
    when every one has its change; gone when every one has its old code back; part when some
    have their old code back and every other one has the change (taken back in part: the fix
    is whole nowhere, so in no overlay); else other."""
    if all(state == "present" for _, _, state, _ in files):
        return "present" if files else "other"
    verdicts = _hunk_verdicts(store, fix, files, rev)
    if rev is not None:
        # (Noted, not said gone: the import is upstream's, kept under upstreamed/ by a
        # bring-back, which puts back the rest.)
        found = verdicts or []
        alone = any(state == "gone" for _, _, state in found) and all(
            state == "gone" or (state in ("present", _IMPORTS_HELD) and n is not None and
                                _imports_only(fp, fp.hunks[n - 1]))
            for fp, n, state in found)
        (fix.imports_alone.add if alone else fix.imports_alone.discard)(rev)
        index = {id(fp): k for k, fp in enumerate(fix.files)}
        fix.gone_hunks[rev] = frozenset((index[id(fp)], n) for fp, n, state in found
                                        if state == "gone" and id(fp) in index)
    states = {"present" if state in ("moved", _IMPORTS_HELD) else state
              for _, _, state in verdicts or ()}
    if verdicts is None or not states:
        return "other"
    if "other" in states:
        # (Only beside a hunk whose old code is back exactly: _hunk_states.)
        return "part" if "gone" in states else "other"
    return states.pop() if len(states) == 1 else "part"


def _hunk_verdicts(store: UpstreamStore, fix: _Fix, files: list[tuple], rev: str | None = None
                   ) -> list[tuple[FilePatch, int | None, str]] | None:
    """(file change, hunk number from 1 or None for the whole file, present | gone | moved |
    other) of each of the fix's files (_file_states) and of each hunk with a change of a file
    neither there nor back whole (_hunk_states); None where one is neither (upstream changed
    that code otherwise), unless another hunk of its file has its old code back exactly (the
    one neither is then other). A hunk whose old code is back at its place but whose added
    lines are still in the file as often as the fix left them (_moved_away) is moved, as good
    as present (_combined): upstream moved them
    (the lines around the place they were added at meet again, as a revert leaves them).
    Unless the history does not show the move (`fix.unmoved`, _doubtful_moves): gone. The
    hunks counted moved are noted by `rev` (`fix.moved`) for _judge to ask the history."""
    found: list[tuple[FilePatch, int | None, str]] = []
    neither: list[FilePatch] = []  # files with a hunk upstream changed otherwise
    back: list[tuple[int, bytes | None, int]] = []  # (file, content, hunk) found gone
    for k, (fp, content, state, path) in enumerate(files):
        if state == "present" or state == _GONE_AT_COPY or (
                state == "gone" and (fp.binary is not None or fp.is_new or fp.is_delete)):
            found.append((fp, None, "gone" if state == _GONE_AT_COPY else state))
            continue
        hunks: list[tuple[int, str]] | None
        if state == "gone":
            # (Its whole diff applies again; a hunk of import lines upstream wrote in another
            # form elsewhere in the file, sorted into a wrapped list, is still there.)
            held = _imports_held(store, fix, k, fp, content, path)
            hunks = [(n, _IMPORTS_HELD if held(hunk) else "gone")
                     for n, hunk in enumerate(fp.hunks, 1)
                     if any(line[:1] in (b"+", b"-") for line in hunk.lines)]
        else:
            weak: list[int] = []
            unplaced: list[int] = []
            hunks = _hunk_states(fp, content, weak,
                                 {n for kk, n in fix.not_back if kk == k}, unplaced,
                                 {n: back for (kk, n), back in fix.placed.items() if kk == k},
                                 _own_function_of(store, fix, k),
                                 _imports_held(store, fix, k, fp, content, path))
            if unplaced and rev is not None:
                # (Noted even where the files alone say neither: the hunk whose place the
                # history tells may be the one the rest of the fix waits on, a guard another
                # function also has, taken back beside a synchronize still upstream.)
                fix.unplaced.setdefault(rev, set()).update((k, n) for n in unplaced)
            if hunks is None:
                neither.append(fp)
                continue
            if weak and rev is not None:
                fix.weak.setdefault(rev, set()).update((k, n) for n in weak)
        gone = [n for n, state in hunks if state == "gone"]
        # (One the history found taken back where its lines are elsewhere, _placed_by_history,
        # is no move whatever the count.)
        gone = [n for n in gone if (k, n) not in fix.unmoved and not fix.placed.get((k, n))]
        moved = _moved_away(store, fix, k, fp, content, gone) if gone else set()
        if moved and rev is not None:
            fix.moved.setdefault(rev, set()).update((k, n) for n in moved)
        found += [(fp, n, "moved" if n in moved else state) for n, state in hunks]
        back += [(k, content, n) for n, state in hunks if state == "gone" and n not in moved]
    if neither:
        # A file upstream changed otherwise: the fix is superseded, unless another file's hunk
        # has its old code back exactly, as for two hunks of one file (_hunk_states): that part
        # was taken back whatever became of the other file, and is in no overlay and not
        # upstream (said taken back in part, _combined). One that only adds lines, some of
        # them elsewhere in its file, is back only where the history shows a revert (weak).
        exact = [(k, n) for k, content, n in back
                 if _back_exactly_beside_other(store, fix, k, content, n)]
        if not exact:
            return None
        if rev is not None:
            # (Not one whose place the history tells: _placed_by_history judges it.)
            asked = set(fix.placed) | fix.unplaced.get(rev, set())
            fix.weak.setdefault(rev, set()).update(
                (k, n) for k, n in exact if (k, n) not in asked and
                _only_adds(fix.files[k].hunks[n - 1]) and
                _lines_elsewhere(fix.files[k].hunks[n - 1], _Lines(files[k][1] or b"")))
        found += [(fp, None, "other") for fp in neither]
    return found


def _back_exactly_beside_other(store: UpstreamStore, fix: _Fix, k: int, content: bytes | None,
                               n: int) -> bool:
    """Whether hunk `n` of the fix's file change `k`, found gone in `content`, has its old code
    back exactly (_back_exactly) and was not refused as taken back (`fix.not_back`)."""
    if content is None or (k, n) in fix.not_back:
        return False
    return _back_exactly(_Lines(content), fix.files[k].hunks[n - 1],
                         _OwnFunction(store, fix, k, n))


def _hunk_states(fp: FilePatch, content: bytes | None, weak: list[int] | None = None,
                 refused: frozenset[int] | set[int] = frozenset(),
                 unplaced: list[int] | None = None, placed: dict[int, bool] | None = None,
                 own: Callable[[int], _OwnFunction] | None = None,
                 imports: Callable[..., bool] | None = None
                 ) -> list[tuple[int, str]] | None:
    """(its number from 1, _hunk_state: present or gone) of each hunk of `fp` with a change,
    in order; None at the first hunk neither, or where hunks cannot be told apart (a created
    or deleted file, a file gone, a hunk without context). A hunk whose whole pre-image is at
    one place its neighbours cannot tell for the fix's (_PLACE_ASKED) is as the history said
    (`placed`: hunk number -> taken back), else as the files alone say, noted in `unplaced`
    for the history to be asked. `own`: by hunk number, its _OwnFunction (_hunk_state's).
    `imports` (_imports_held): whether a hunk of import lines is there in another form."""
    if content is None or fp.is_new or fp.is_delete or fp.has_zero_context:
        return None
    lines = _Lines(content)
    found = []
    asked = set()  # (the history judges these: not weak)
    for n, hunk in enumerate(fp.hunks, 1):
        within = own(n) if own else None
        state = _hunk_state(lines, hunk, ask=unplaced is not None, own=within)
        if state not in (None, "present") and imports is not None and imports(hunk):
            # (Its import lines upstream wrote in another form of the same binding, wherever
            # its neighbours say the place is: no history asked.)
            state = _IMPORTS_HELD
        elif state == _PLACE_ASKED:
            asked.add(n)
            if placed is not None and n in placed:
                # Not taken back: what its neighbours say (a copy of its lines is the fix's
                # moved there, or the place is another function's that looks alike).
                state = "gone" if placed[n] else \
                    "present" if _hunk_state(lines, hunk, own=within) == "present" else "other"
            else:
                # (Until asked, what the files alone say: a revision the history walk
                # passes is judged as before.)
                assert unplaced is not None
                unplaced.append(n)
                state = _hunk_state(lines, hunk, own=within)
        if state is not None:
            found.append((n, state))
    if any(state == "other" for _, state in found):
        # Upstream changed some hunk's code otherwise since: the fix is superseded, unless
        # another hunk has its old code back exactly (every line of its pre-image, context
        # and all, at one place): that hunk was taken back whatever became of the others,
        # and is in no overlay and not upstream (said taken back in part, _combined).
        # A hunk that only adds lines has as its pre-image the neighbours of their place,
        # which meet again wherever upstream moved them: with some of those lines
        # elsewhere in the file it is back only where the history shows a revert
        # (`weak`: _not_taken_back; `refused`: those it did not).
        exact = []
        for n, state in found:
            if state == "gone":
                hunk = fp.hunks[n - 1]
                if n in refused or not _back_exactly(lines, hunk, own(n) if own else None):
                    continue
                if weak is not None and n not in asked and _only_adds(hunk) and \
                        _lines_elsewhere(hunk, lines):
                    weak.append(n)
            exact.append((n, state))
        if not any(state == "gone" for _, state in exact):
            if unplaced and any(state == "other" and n not in asked for n, state in found):
                # (The history is asked of a hunk whose place the files cannot tell only
                # where the rest of the fix is there: beside a hunk upstream changed
                # otherwise, a rewrite that made that place is no take-back of it.)
                unplaced.clear()
            return None
        return exact
    return found


def _back_exactly(lines: _Lines, hunk, own: _OwnFunction | None = None) -> bool:
    """Whether a hunk's whole pre-image (its context and the lines it removes) is at exactly
    one place of the file, and its post-image at none; where several places hold either,
    with `own` (_OwnFunction, the file still defining it), of the places in the fix's own
    function (another kept fix's guard in a function that starts alike)."""
    old, new = hunk.old_lines(), hunk.new_lines()
    text = lines.lines

    def places(run: list[bytes], inside: _OwnFunction | None = None) -> int:
        # (In the function: the line at the change's place, below the hunk's leading
        # context, which may be the end of the function above.)
        return sum(1 for k in lines.at(run[0]) if text[k:k + len(run)] == run and (
            inside is None or lines.in_function(inside, k + hunk.leading_context,
                                                inside.changed))) if run else 0

    old_places, new_places = places(old), places(new)
    if old_places == 1 and new_places == 0:
        return True
    # (Only where other places hold a copy of either: code upstream moved into another
    # function since is still judged where it is.)
    # (None in the function where none is in the file: the file's functions not read.)
    return old_places >= 1 and (old_places > 1 or new_places > 0) and own is not None and \
        own.defined(lines) and places(old, own) == 1 and places(new, own) == 0


def _imports_only(fp: FilePatch, hunk) -> bool:
    """Whether `hunk` of `fp`, a Python file, changes module-level import lines only and adds
    a binding (importforms.hunk_imports)."""
    from patchforge.apply.importforms import hunk_imports

    return fp.path.endswith((".py", ".pyi")) and hunk_imports(hunk, fp.path) is not None


# _hunk_states' answer for a hunk of import lines whose bindings the file has in another form
# (_imports_held): there, as good as present, and kept as landed by a bring-back (moved_in_part).
_IMPORTS_HELD = "imports held"


def _imports_held(store: UpstreamStore, fix: _Fix, k: int, fp: FilePatch,
                  content: bytes | None, path: str | None) -> Callable[..., bool]:
    """Whether a hunk of the fix's file change `k`, a Python file, that changes import lines
    only (importforms.hunk_imports) is there in `content`: each name it binds is bound to the
    same module by the file's module-level imports, in whatever form (`from a.b import c` for
    the fix's `import a.b.c as c`, a wrapped list a formatter made), at least as many times as
    in the file as the fix left it (_left_by_fix), and only a binding the fix's file change
    makes on balance, more often in the file as the fix left it than in its base file
    (_base_file): one the file had before the fix too (`import pandas as pd` further down
    that the fix's own import repeated at the top, or that the fix moved to the top) is back
    after a revert of the landing, which read as the fix still there "in part", no revert,
    and an edit after it as "superseded", nothing said. No name it unbound is bound more
    often than there. A name bound to another module (`from a.x import c`), `import a.b.c`
    (which binds `a`) and an import taken out are not. Neither is any where the file as the
    fix left it or its base file is not known. `content` is the file read at `path`
    (_path_of: the fix's, a name upstream renamed it to, or a file upstream moved its
    functions into), its relative imports resolved from there; the fix's hunk, the file as the
    fix left it and its base from the fix's own path."""
    from patchforge.apply.importforms import hunk_imports

    def held(hunk) -> bool:
        changed = hunk_imports(hunk, fp.path)
        if changed is None:
            return False
        if (k, "imports") not in fix.counts:
            left = fix.counts[k][2] if k in fix.counts else _left_by_fix(store, fix, fp)
            base = _base_file(store, fix, fp)
            fix.counts[(k, "imports")] = None if left is None or base is None else \
                (_bindings_of(left, fp.path), _bindings_of(base, fp.path))
        counts = fix.counts[(k, "imports")]
        if counts is None:
            return False
        left, before = counts
        made, unmade = changed
        # (Upstream that moved the file, `pkg/k.py` to `pkg/sub/k.py`, and wrote the fix's
        # `from pkg.utils import arch` as `from .utils import arch` bound another module:
        # `pkg.sub.utils`'s arch.)
        there = _bindings_of(content, path or fp.path)
        # (Only a binding the file change makes on balance: an import the fix moved, taken
        # out further down and put in at the top, is back further down after a revert.)
        return all(there[bind] >= left[bind] > before[bind] for bind in made) and \
            all(there[bind] <= left[bind] for bind in unmade)

    if content is None or not fp.path.endswith((".py", ".pyi")):
        return lambda hunk: False
    return held


@lru_cache(maxsize=64)
def _bindings_of(content: bytes, path: str) -> Counter:
    """importforms.bindings of `content` at `path` (its relative imports resolved from the
    file's package), asked once per content and path. Callers must not change what they
    get."""
    from patchforge.apply.importforms import bindings

    return bindings(content, path)


def _only_adds(hunk) -> bool:
    from patchforge.apply.diffparse import line_kind

    return not any(line_kind(line) == b"-" for line in hunk.lines)


def _lines_elsewhere(hunk, lines: _Lines) -> bool:
    """Whether a line the hunk adds that tells (_added) is in the file, whitespace aside, or
    one of its runs of added lines is, as near text (near_runs)."""
    added = set(_added(hunk))
    if added and not added.isdisjoint(_squeezed_lines(lines.content)):
        return True
    runs = near_runs(hunk)
    if not runs:
        return False
    there = _near_text_of(lines.content)
    return any(there.count(run) for run in runs)


def _taken_back_in_part(store: UpstreamStore, fix: _Fix, rev: str) -> str:
    """What is said of a fix `_fix_state` finds taken back in part at `rev`: where it has its
    old code back (`PATH`, a whole file, or `PATH hunk N`), and the hunks upstream moved
    (their lines elsewhere in the file, their old place without them), which `bring-back`
    keeps under upstreamed/ as landed (moved_in_part), putting back only the rest."""
    contents = store.read_blobs(rev, _paths(fix))
    verdicts = _hunk_verdicts(store, fix, _file_states(
        fix, contents,
        lambda fp, content, both: _at_copy(_at_own_place(store, fix, fp, content, both))))
    # A hunk with a change that has no verdict (its added lines gone where its old code is
    # not back as it was: upstream changed a line beside it too) is said with those upstream
    # changed since: left out, it was named in neither list.
    states = {(id(fp), n): found for fp, n, found in verdicts or ()}
    every = [(fp, n, states.get((id(fp), n), "other"))
             for fp in dict.fromkeys(fp for fp, _, _ in verdicts or ())
             for n in ([None] if (id(fp), None) in states else
                       [n for n, hunk in enumerate(fp.hunks, 1)
                        if any(line[:1] in (b"+", b"-") for line in hunk.lines)])]
    gone, moved, changed, imports = ([fp.path if n is None else f"{fp.path} hunk {n}"
                                      for fp, n, found in every if found == state]
                                     for state in ("gone", "moved", "other", _IMPORTS_HELD))
    said = f"; taken back in part: {', '.join(gone)}, the rest of its change " + \
        (f"changed upstream since ({', '.join(changed)})" if changed else "still upstream")
    if moved:
        said += f" ({', '.join(moved)} moved elsewhere in the file upstream: a bring-back " \
            "keeps it under upstreamed/ as landed)"
    if imports:
        said += f" ({', '.join(imports)}: its imports upstream has in another form, the " \
            "same names bound to the same modules: a bring-back keeps it under upstreamed/ " \
            "as landed)"
    return said


def moved_in_part(project: Project, store: UpstreamStore, upstream: str, name: str, rel: str,
                  data: bytes, rev: str
                  ) -> tuple[dict[str, list[int]], str | None,
                             dict[str, list[tuple[int, str, bool]]]]:
    """The hunks (by path, numbers from 0) of the kept fix NAME (its bytes `data`, at `rel`)
    that upstream moved elsewhere in the file at `rev` (_moved_away), where `rev`'s files have
    it taken back in part (some hunks' old code back, the rest there); and its landing commit
    as recorded, if any. `bring-back` keeps those hunks under upstreamed/ as landed and puts
    back only the rest: judged by the files, a moved hunk's old place has its old code, and
    the whole fix moved back there doubled its lines in the overlay. ({}, None) for a fix
    whole or gone whole, or with no hunk so moved. Third, by path, the hunks (numbers from 0,
    where the file has their lines, whether upstream put them in the fix's function again:
    _landed_again) whose lines are elsewhere in the file but whom the history does not show
    moved (_doubtful_moves): put back, said possibly doubled (stopped on, a re-land)."""
    fix = _parse(upstream, name, rel, data)
    if fix is None:
        return {}, None, {}
    fix.landing = _recorded_landing(project, fix)
    contents = store.read_blobs(rev, _paths(fix))
    files = _file_states(
        fix, contents,
        lambda fp, content, both: _at_copy(_at_own_place(store, fix, fp, content, both)))
    verdicts = _hunk_verdicts(store, fix, files, rev)
    landing = _commit(store, fix.landing)
    if verdicts and fix.unplaced.get(rev):
        # As status judges it (_judge): taken back where the history says.
        base = (fix.patch.get("Base") or "").strip()
        fix.placed.update(_placed_by_history(
            store, fix, rev, landing or (base if base and store.has_object(base) else None)))
        fix.moved.pop(rev, None)
        verdicts = _hunk_verdicts(store, fix, files, rev)
    if verdicts and landing is not None and fix.moved.get(rev):
        # Moved only where the history shows it, as status judges it (_judge).
        fix.unmoved.update(_doubtful_moves(store, fix, rev, landing,
                                           (fix.patch.get("Base") or "").strip(), {}))
        if fix.unmoved:
            verdicts = _hunk_verdicts(store, fix, files)
    doubtful: dict[str, list[tuple[int, str, bool]]] = {}
    for (k, n), (where, _, again) in sorted(fix.unmoved.items()):
        doubtful.setdefault(fix.files[k].path, []).append((n - 1, where, again))
    if not verdicts or not any(found == "gone" for _, _, found in verdicts):
        return {}, fix.landing, doubtful
    moved: dict[str, list[int]] = {}
    for fp, n, found in verdicts:
        if found in ("moved", _IMPORTS_HELD) and n is not None:
            moved.setdefault(fp.path, []).append(n - 1)
    return moved, fix.landing, doubtful


def moved_files(project: Project, store: UpstreamStore, upstream: str, name: str, rel: str,
                data: bytes, rev: str) -> dict[str, str]:
    """The files of the kept fix NAME (its bytes `data`, at `rel`) whose functions upstream
    moved whole into another file by `rev`, the old file staying (_moved_functions): by path,
    that file. `bring-back` puts the fix there: judged at its own path, the fix's function is
    no longer in the file."""
    fix = _parse(upstream, name, rel, data)
    if fix is None:
        return {}
    landing = _commit(store, _recorded_landing(project, fix))
    base = (fix.patch.get("Base") or "").strip()
    known_base = base if base and store.has_object(base) else None
    since = landing or known_base
    if since is None:
        return {}
    # (A file of the fix upstream renamed since its base, before the landing or after it, is
    # read under its new name, as status reads it (_judge): read at its old path only, the
    # function moved out of it was not followed, and `bring-back` stopped on a conflict in
    # the renamed file, its hint to make the fix where the function no longer is.)
    # (A file renamed before the landing is read where it landed, never at its old path,
    # where upstream may have written a legacy copy holding the fix: _renamed_before_landing.)
    if landing is not None and known_base is not None and landing != known_base:
        _renamed_before_landing(store, fix, known_base, landing)
    own = {fp.path for fp in fix.files}
    for path, new in _renamed_at(store, (known_base, landing), rev,
                                 sorted(p for p in own if not _deletes(fix, p))).items():
        if new not in own or new in fix.left_path.values():
            fix.aliases[next(k for k, fp in enumerate(fix.files) if fp.path == path)].append(new)
    _rewritten_away(store, fix, since, rev)
    if _moved_functions(store, fix, since, rev):
        _moved_renamed(store, fix, [rev])
    contents = store.read_blobs(rev, sorted({*_paths(fix), *fix.left_path.values()}))
    # (A file renamed before the landing whose old path `rev` has again, another file: put
    # where the fix's file is now. Read at the old path, the fix was "landed upstream
    # meanwhile" in that file and kept under upstreamed/ again.)
    left = {fix.files[k].path: now for k, old in fix.left_path.items()
            if contents.get(old) is not None and
            (now := _path_of(fix, k, contents)) is not None and now != old}
    return {**left, **{fix.files[k].path: path for k, path in fix.rewritten.items()},
            **{fix.files[k].path: _path_of(fix, k, contents) or path
               for k, (path, _) in fix.moved_to.items()}}


class _HunkTakers:
    """The commits (one parent) after a fix's landing up to `commit` that change its files,
    newest first, and of a hunk the one that took it out of its place: after it the hunk's
    old code is back at its place (_hunk_state gone), before it its change was there. Files
    read once per revision; asked only of the hunks a count or a place alone judged."""

    def __init__(self, store: UpstreamStore, fix: _Fix, commit: str, landing: str) -> None:
        self.store, self.fix = store, fix
        self.log = [(sha, parents, message) for sha, parents, message in
                    store.path_log(landing, commit, _paths(fix))[:MAX_COMMITS]
                    if len(parents) == 1]
        self._files: dict[str, dict] = {}
        self._copies: dict[tuple[str, int, int], tuple[int, int] | None] = {}

    def content(self, rev: str, k: int) -> bytes | None:
        if rev not in self._files:
            self._files[rev] = self.store.read_blobs(rev, _paths(self.fix))
        contents = self._files[rev]
        return _content_of(self.fix, k, contents)

    def _place(self, rev: str, k: int, hunk) -> str | None:
        content = self.content(rev, k)
        n = next((j for j, each in enumerate(self.fix.files[k].hunks, 1) if each is hunk), None)
        return None if content is None else _hunk_state(
            _Lines(content), hunk,
            own=_OwnFunction(self.store, self.fix, k, n) if n is not None else None)

    def taker(self, k: int, hunk) -> tuple[str, str, bytes] | None:
        """(commit, its parent, its message) of the commit that took the hunk out."""
        return next(((sha, parents[0], message) for sha, parents, message in self.log
                     if self._place(sha, k, hunk) == "gone"
                     and self._place(parents[0], k, hunk) == "present"), None)

    def copies(self, rev: str, k: int, n: int, own: _OwnFunction) -> tuple[int, int] | None:
        """_own_copies of hunk `n` of file change `k` in `rev`'s file, None without it (each
        revision read once: a commit is the parent of the next one asked)."""
        if (rev, k, n) not in self._copies:
            content = self.content(rev, k)
            self._copies[(rev, k, n)] = None if content is None else \
                _own_copies(own, self.fix.files[k].hunks[n - 1], content)
        return self._copies[(rev, k, n)]

    def out_of_function(self, k: int, n: int, own: _OwnFunction
                        ) -> tuple[str, str, bytes, bool] | None:
        """(commit, its parent, its message, whether it moved them) of the commit that took
        hunk `n`'s lines out of the fix's own function: the newest after which that function
        holds fewer copies of them than before it. It moved them where it put as many copies
        elsewhere in the file as it took out of the function; a copy another function had
        before it (another kept fix's guard) is other code, whatever the file's count says.
        None where no commit here did (the function has them still, or they left it before
        the landing's history read here)."""
        for sha, parents, message in self.log:
            after, before = self.copies(sha, k, n, own), self.copies(parents[0], k, n, own)
            if after is None or before is None or after[0] >= before[0]:
                continue
            elsewhere = before[1]
            path = _path_of(self.fix, k, self._files[sha])
            if path != _path_of(self.fix, k, self._files[parents[0]]):
                # The commit that moved the function into another file (_moved_functions):
                # the copies elsewhere before it are that file's, not the old one's; a copy
                # another function of it had already is other code, not the fix's moved.
                was = self._files[parents[0]].get(path)
                elsewhere = 0 if was is None else _own_copies(
                    own, self.fix.files[k].hunks[n - 1], was)[1]
            return sha, parents[0], message, after[1] - elsewhere >= before[0] - after[0]
        return None


def _own_copies(own: _OwnFunction, hunk, content: bytes) -> tuple[int, int]:
    """The copies of the hunk's added lines (_copy_lines) in `content`: (in the fix's own
    function, elsewhere in the file)."""
    lines = _Lines(content)
    starts = _copy_lines(hunk, content)
    inside = sum(1 for line in starts if lines.in_function(own, line - 1))
    return inside, len(starts) - inside


def _function_left(store: UpstreamStore, fix: _Fix, k: int, n: int, takers: _HunkTakers,
                   commit: str) -> tuple[str, str, bytes, bool] | None:
    """Of hunk `n` of the fix's file change `k`, whose old code is back at its place while its
    lines are elsewhere in `commit`'s file, the commit that took them out of the fix's own
    function (_HunkTakers.out_of_function). None where the function is not known here, or no
    commit since the landing took them out of it (upstream moved them within it)."""
    own = _OwnFunction(store, fix, k, n)
    now = takers.content(commit, k)
    if now is None or not own.defined(_Lines(now)):
        return None
    return takers.out_of_function(k, n, own)


def _doubtful_moves(store: UpstreamStore, fix: _Fix, commit: str, landing: str, base: str,
                    cache: dict) -> dict[tuple[int, int], tuple[str, str, bool]]:
    """Of the hunks _moved_away counted moved at `commit` (`fix.moved`), those the history
    since the landing does not show moved, each with where `commit`'s file has its lines
    (`PATH line N`) and why: moved only where the commit that took the hunk out of its place
    (_HunkTakers) left its lines in the file as often as before it (it put them elsewhere as
    it took them out, _moved_by) and is no revert of the landing (a revert takes the change
    out, whatever else its merge did). Each such hunk a bring-back puts back (no fix lost),
    said "possibly doubled" with the line to look at; but one whose copy upstream put in the
    fix's own function again since (_landed_again, third: True) it stops on, a re-land."""
    if not store.is_ancestor(landing, commit):
        return {}
    takers = _HunkTakers(store, fix, commit, landing)
    named = _LandingNames(store, fix, landing, base, cache)
    doubtful = {}
    for k, n in sorted(fix.moved[commit]):
        fp = fix.files[k]
        hunk = fp.hunks[n - 1]
        left = _function_left(store, fix, k, n, takers, commit)
        if left is not None:
            # The commit that took the lines out of the fix's own function tells: moved
            # where it put them elsewhere, not where another function had a copy before.
            sha, parent, message, moved = left
            taker: tuple[str, str, bytes] | None = (sha, parent, message)
            if not moved or named.how(message, sha):
                fix.taken_by[(k, n)] = sha
            if not moved:
                why = f"{sha[:12]} took them out of their place without putting them there"
            elif named.how(message, sha):
                why = f"{sha[:12]}, a revert of the landing, took them out of their place"
            else:
                continue
        elif (taker := takers.taker(k, hunk)) is None:
            why = "no commit since the landing is seen moving them"
        else:
            sha, parent, message = taker
            before, after = takers.content(parent, k), takers.content(sha, k)
            if before is None or after is None or not _moved_by(fix, k, hunk, before, after):
                why = f"{sha[:12]} took them out of their place without putting them there"
            elif named.how(message, sha):
                why = f"{sha[:12]}, a revert of the landing, took them out of their place"
            else:
                continue
        now = takers.content(commit, k)
        line = _copy_line(hunk, now) if now is not None else None
        again = None
        # Each copy asked in file order: the first may be another function's (another kept
        # fix's same line), and upstream's making the fix again in its own function below it.
        for at in _copy_lines(hunk, now) if now is not None else []:
            again = _landed_again(store, fix, k, hunk, takers, taker, now, at)
            if again is not None:
                line = at
                break
        if again is not None:
            adder, function, new = again
            # (No commit seen putting them there: a merge's, or the taker's own doing; or no
            # commit seen taking them out, when none is named.)
            why += f", and {adder[:12] + ' put them' if adder else 'they are'} in " \
                f"{function.decode(errors='replace')}" + \
                (", a function new since the fix's base," if new else " again") + \
                " since: landed again its own way, it seems"
        # (The file the lines are looked for in: the one upstream moved the function into.)
        path = _path_of(fix, k, takers._files[commit]) or fp.path
        doubtful[(k, n)] = (f"{path} line {line}" if line else path, why,
                            again is not None)
    return doubtful


# The Python methods that making an object (`Synced()`), using it as a context manager
# (`with Synced():`), calling it (`Synced()(x)`) or dropping it runs without naming them.
_RUN_UNNAMED = frozenset((b"__new__", b"__init__", b"__post_init__", b"__enter__",
                          b"__exit__", b"__aenter__", b"__aexit__", b"__call__", b"__del__"))


# Those of them only using the object runs (`with`, a call), not its making alone.
_RUN_BY_USE = frozenset((b"__enter__", b"__exit__", b"__aenter__", b"__aexit__", b"__call__"))


# _landed_again's place of a hunk no function holds in a file of a language known here.
_TOP_LEVEL = b"the file's top level"


def _landed_again(store: UpstreamStore, fix: _Fix, k: int, hunk, takers: _HunkTakers,
                  taker: tuple[str, str, bytes] | None, now: bytes | None,
                  line: int | None) -> tuple[str | None, bytes, bool] | None:
    """Whether the copy of a taken-out hunk's lines that `commit`'s file (`now`) has at `line`
    is upstream's making the fix again its own way (a re-land after the revert), not other
    code that reads alike (a copy in another function the fix's base file has, a C++
    overload of its name included, or one the function had beside the landed fix before
    `taker` took the fix out): a copy in the function the hunk changes there, or in a
    function the base file does not name at all (a helper made since, `settle()`, that the
    fix's function calls). (the commit after the one
    that took the hunk out (`taker`) that put the copy in that function first, None where no
    such commit is seen (a merge's), and where no taker is seen (the commits after the
    landing hold the landed fix's own copy: none is told to have put it there); the
    function's name; whether it is new since the base),
    None for a copy elsewhere, or where the function is not known here (no base file, a file
    of no language known here: a common line of a workflow, `continue-on-error: true` in
    another step, is no re-land). A hunk at the top level of a file of a language known here
    is made again by a copy no function holds (`_TOP_LEVEL`): it was said "possibly doubled"
    and put back beside it. A bring-back stops on such a copy (the judge's nearby doubling
    check, reverts.near_doubled) instead of putting the fix back beside it."""
    from patchforge.apply.diffparse import line_content, line_kind
    from patchforge.apply.hunks import _language, function_named_at, lines_of, signature_at

    fp = fix.files[k]
    old = _base_file(store, fix, fp)
    if now is None or line is None or old is None:
        return None
    kinds = [line_kind(body) for body in hunk.lines]
    lead = next((j for j, kind in enumerate(kinds) if kind != b" "), len(kinds))
    changed = next((line_content(body) for body in hunk.lines if line_kind(body) == b"+"),
                   None) or next((line_content(body) for body in hunk.lines
                                  if line_kind(body) == b"-"), b"")
    at = hunk.old_start - 1 + lead if hunk.old_count else hunk.old_start
    own = function_named_at(fp.path, lines_of(old), at, changed) or \
        (_TOP_LEVEL if _language(fp.path) is not None else None)
    if not own:
        return None
    # A C++ overload of the fix's function shares its name: told apart by its definition.
    own_signature = signature_at(fp.path, lines_of(old), at, changed)

    def again(content: bytes, where: int) -> tuple[bytes, bool] | None:
        """The function holding line `where` (from 1) of `content`, and whether it is new
        since the base (its own name nowhere in the base file), where it is either. For a
        hunk at the top level of a file of a language known here, the top level: a copy
        there that no function holds is the fix made again as well."""
        function = function_named_at(fp.path, lines_of(content), where - 1)
        if own == _TOP_LEVEL:
            return None if function else (own, False)
        if not function:
            return None
        # The definition tells only overloads apart: a fix's function whose parameters
        # upstream changed, the old definition nowhere in the file, is still its own.
        if function == own and (
                signature_at(fp.path, lines_of(content), where - 1) == own_signature
                or own_signature not in b"".join(content.split())):
            return function, False
        # A helper's own function nested in it (a decorator's wrapper) is reached through the
        # helper: a name of the path new since the base that the fix's function calls or is
        # decorated with, the names after it its nested functions. A class the fix's function
        # only constructs reaches the methods the language runs on the object unnamed (Python's
        # `__init__`, `__enter__`/`__exit__` of `with Synced():`, `__call__` of `Synced()(x)`;
        # a C++ constructor `X::X` and destructor `X::~X`), not its other methods (`Timer.stop`).
        parts = [part for part in re.split(rb"\.|::", function.split(b" [")[0]) if part]
        return (function, True) if any(
            part not in old and (calls(content, part) or decorates(content, part))
            and (not is_class(content, part) or special(content, part, parts[i + 1:]))
            and not any(is_class(content, inner) for inner in parts[i + 1:]
                        if inner.lstrip(b"~") != part)
            for i, part in enumerate(parts)) else None

    def special(content: bytes, cls: bytes, rest: list[bytes]) -> bool:
        """Whether the method path `rest` of class `cls` is one constructing `cls` reaches
        without naming it: a Python method the object's making, entering, calling or
        dropping runs (_RUN_UNNAMED), a C++ constructor or destructor. (Not `__repr__`,
        `__str__` or `__len__`: only printing or measuring the object runs them; nor what
        entering or calling it runs where the fix's function only makes it and never uses
        it again, `s = Synced()`.)"""
        if len(rest) != 1 or not (rest[0] in _RUN_UNNAMED or rest[0] in (cls, b"~" + cls)):
            return False
        return rest[0] not in _RUN_BY_USE or not only_made(content, cls)

    def only_made(content: bytes, cls: bytes) -> bool:
        """Whether the fix's function in `content` uses class `cls` only to make an object
        it drops: each line naming `cls` is `Cls(...)` alone or `name = Cls(...)`, and no
        other line of the function names `name` (no `with`, no call, not passed on). The
        functions nested in it are its lines too: `def run(): with s: ...` enters the object
        where run() is called."""
        lines = lines_of(content)
        nested = own + b"."
        body = [STRING_OR_COMMENT.sub(b"", text) for i, text in enumerate(lines)
                if (inside := function_named_at(fp.path, lines, i)) is not None
                and (inside == own or inside.startswith(nested))]
        made = re.compile(rb"\s*(?:([A-Za-z_]\w*)\s*=\s*)?" + re.escape(cls) +
                          rb"\s*\([^()]*\)\s*")
        names = []
        for text in body:
            if re.search(rb"\b" + re.escape(cls) + rb"\b", text) is None:
                continue
            found = made.fullmatch(text.rstrip(b"\r\n"))
            if found is None:
                return False
            if found[1]:
                names.append(found[1])
        return not any(sum(len(re.findall(rb"(?<![\w.])" + re.escape(name) + rb"\b", text))
                           for text in body) > 1 for name in names)

    def is_class(content: bytes, name: bytes) -> bool:
        """Whether `content` defines `name` as a class (or a C++ struct)."""
        return name in content and re.search(
            rb"^[ \t]*(?:class|struct)[ \t]+" + re.escape(name) + rb"\b", content,
            re.MULTILINE) is not None

    def calls(content: bytes, name: bytes) -> bool:
        """Whether the fix's function in `content` calls `name`: a function new since the
        base is the fix made again only where the fix's function uses it (`settle()`); one
        it never calls is other code that reads alike."""
        lines = lines_of(content)
        # `settle(n)`, `settle (n)`, `settle<int>(n)`, a kernel's `settle<<<g, b>>>(n)`.
        call = re.compile(rb"\b" + re.escape(name) + rb"\s*(?:<[^;()]*>\s*)?\(")
        return any(name in text and call.search(text) is not None
                   and function_named_at(fp.path, lines, i) == own
                   for i, text in enumerate(lines))

    def decorates(content: bytes, name: bytes) -> bool:
        """Whether `name` decorates the fix's function in `content` (`@name`, `@name(...)`,
        `@module.name`, among other decorators): the function reaches it without a call."""
        own_name = re.split(rb"\.|::", own)[-1]
        if name not in content:
            return False
        lines = lines_of(content)
        # The decorated `def` must be the fix's own function: a method of the same name in
        # another class (`A.forward` beside the fix's `B.forward`) is another function.
        return any(
            function_named_at(fp.path, lines, content.count(b"\n", 0, found.end())) == own
            for found in re.finditer(
                rb"^[ \t]*@(?:[\w.]*\.)?" + re.escape(name)
                + rb"\b[^\n]*\n(?:[ \t]*@[^\n]*\n)*"
                rb"[ \t]*(?:async[ \t]+)?def[ \t]+" + re.escape(own_name) + rb"\b[^\n]*\n",
                content, re.MULTILINE))

    found = again(now, line)
    if found is None:
        return None
    if taker is None:
        # No commit seen taking the hunk out (a revert in a merge, or past the commits
        # asked): the first commits after the landing hold the landed fix's own lines in the
        # function, so the first commit with a copy there is no re-land: none is named.
        return None, *found

    # A copy the file had in that function beside the landed fix's lines before the taker
    # took those out (the taker leaves fewer copies there than its parent had) is upstream's
    # other code, no re-land; one the taker left as many as before, it made.
    def inside(content: bytes | None) -> int:
        return 0 if content is None else sum(
            1 for where in _copy_lines(hunk, content) if again(content, where) == found)

    left = inside(takers.content(taker[0], k))
    newer = [sha for sha, _, _ in takers.log]
    if taker[0] in newer:
        newer = newer[:newer.index(taker[0])]
    if left:
        if left >= inside(takers.content(taker[1], k)):
            return None, *found
        # Upstream's own copies were there before the taker: a re-land is a later commit
        # that puts one more in the function than the taker left.
        for sha in reversed(newer):  # oldest first
            if inside(takers.content(sha, k)) > left:
                return sha, *found
        return None
    for sha in reversed(newer):  # oldest first
        content = takers.content(sha, k)
        there = _copy_line(hunk, content) if content is not None else None
        if content is not None and there is not None and again(content, there) == found:
            return sha, *found
    return None, *found


def _not_taken_back(store: UpstreamStore, fix: _Fix, commit: str, landing: str, base: str,
                    cache: dict) -> set[tuple[int, int]]:
    """Of the hunks that only add lines found back exactly at `commit` beside a hunk changed
    since (`fix.weak`, _hunk_states) while some of their added lines are elsewhere in the
    file, those the history does not show reverted: the commit that took the hunk out of its
    place (_HunkTakers) is no revert of the landing. The neighbours of the place lines were
    added at meet again whenever upstream moves those lines, so that alone tells nothing:
    such a hunk is no hunk taken back (upstream changed the code otherwise)."""
    if not store.is_ancestor(landing, commit):
        return set()
    takers = _HunkTakers(store, fix, commit, landing)
    named = _LandingNames(store, fix, landing, base, cache)
    found = set()
    for k, n in sorted(fix.weak[commit]):
        taker = takers.taker(k, fix.files[k].hunks[n - 1])
        if taker is None or not named.how(taker[2], taker[0]):
            found.add((k, n))
    return found


def _placed_by_history(store: UpstreamStore, fix: _Fix, commit: str, since: str | None
                       ) -> dict[tuple[int, int], bool]:
    """Of the hunks whose whole pre-image is at one place of `commit`'s file that their
    neighbours cannot tell for the fix's (`fix.unplaced`, _hunk_state's _PLACE_ASKED), whether
    each was taken back there: the latest commit since `since` (the landing, else the fix's
    base) after which that pre-image is at more places than before it made the place, and
    took the hunk out there; taken back unless it left the hunk's added lines in the file as
    often as before it (it moved them elsewhere, _moved_by). A copy of the lines that was in
    the file before that commit is other code (another fix's guard in another function), no
    sign of a move. Where the hunk's function is known (_function_left), the commit that took
    its lines out of that function is asked instead of that one. No such commit (the place was
    there all along: another function's that looks alike, the fix's own rewritten since), or
    no history to ask: not taken back."""
    asked = sorted(fix.unplaced.get(commit, set()) - fix.placed.keys())
    if not asked:
        return {}
    if since is None or not store.is_ancestor(since, commit):
        return {key: False for key in asked}
    from patchforge.apply.hunks import _place_offsets

    takers = _HunkTakers(store, fix, commit, since)
    found = {}
    for k, n in asked:
        hunk = fix.files[k].hunks[n - 1]
        old = b"".join(hunk.old_lines())
        found[(k, n)] = False
        for sha, parents, _ in takers.log:
            after, before = takers.content(sha, k), takers.content(parents[0], k)
            if after is not None and before is not None and \
                    len(_place_offsets(after, old)) > len(_place_offsets(before, old)):
                left = _function_left(store, fix, k, n, takers, commit)
                if left is None:
                    found[(k, n)] = not _moved_by(fix, k, hunk, before, after)
                else:
                    # Not that commit (an edit of a neighbour line and its revert make the
                    # place again) but the one that took its lines out of the fix's own
                    # function tells: taken back unless it put them elsewhere (another
                    # function's copy it left alone is no move).
                    found[(k, n)] = not left[3]
                    if found[(k, n)]:
                        fix.taken_by[(k, n)] = left[0]
                break
    return found


def _moved_by(fix: _Fix, k: int, hunk, before: bytes, after: bytes) -> bool:
    """Whether a commit that took `hunk` out of its place (its file `before` and `after`
    it) left the hunk's added lines in the file as often as before it, line by line
    (_added) or as near text (near_runs): it put them elsewhere."""
    from collections import Counter

    added = _added(hunk)
    if added:
        was, now = Counter(_squeezed_lines(before)), Counter(_squeezed_lines(after))
        if all(now[line] >= was[line] for line in added):
            return True
    removed = fix.counts.get((k, "removed"))
    if removed is None:
        removed = fix.counts[(k, "removed")] = [run for h in fix.files[k].hunks
                                                for run in near_runs(h, b"-")]
    runs = [run for run in near_runs(hunk) if not any(run in other for other in removed)]
    if not runs:
        return False
    near_before, near_after = NearText(before), NearText(after)
    return all(near_after.count(run) >= near_before.count(run) > 0 for run in runs)


def _copy_line(hunk, content: bytes) -> int | None:
    """The line (from 1) of `content` where a copy of the hunk's added lines begins: its
    first line that tells (_added) there as it is, or its first run (near_runs) read as
    near text from that line on."""
    told, near = _copy_starts(hunk, content, first=True)
    return told[0] if told else near[0] if near else None


def _copy_lines(hunk, content: bytes) -> list[int]:
    """Every line (from 1) of `content` where a copy of the hunk's added lines begins, as
    _copy_line finds the first."""
    told, near = _copy_starts(hunk, content)
    return sorted(set(told) | set(near))


def _copy_starts(hunk, content: bytes, first: bool = False) -> tuple[list[int], list[int]]:
    """The lines (from 1) of `content` where the hunk's first line that tells (_added) is as
    it is, and those where its first run (near_runs) begins read as near text; with `first`,
    only the first found, the near text not read where a line that tells is found."""
    added = _added(hunk)
    told: list[int] = []
    if added:
        for number, line in enumerate(_squeezed_lines(content), 1):
            if line == added[0]:
                told.append(number)
                if first:
                    return told, []
    runs = near_runs(hunk)
    if not runs:
        return told, []
    # (Read as the whole file's near text: a run black re-wrapped over several lines, its
    # wrapping parentheses read away, begins at the first of them.)
    near = _near_text_of(content).lines_of(runs[0])
    return told, near[:1] if first else near


def _possibly_doubled(fix: _Fix) -> str:
    """What is said of the hunks whose lines are elsewhere in the file but which the history
    does not show moved (_doubtful_moves): a bring-back puts them back."""
    if not fix.unmoved:
        return ""
    return "".join(
        f"; {fix.files[k].path} hunk {n} has its lines elsewhere in the file, but {why}: "
        + (f"a bring-back stops on it (look at {where}); `patchforge delete {fix.upstream}/"
           f"upstreamed/{fix.name}` keeps the fix under deleted/ if that is its change"
           if again else f"a bring-back puts it back (possibly doubled: look at {where})")
        for (k, n), (where, why, again) in sorted(fix.unmoved.items()))


def taken_out_runs(patch, hunks: dict[str, list[tuple[int, str, bool]]]) -> set[bytes]:
    """The runs of added lines (near_runs) of the hunks of `patch` named in `hunks` (by path,
    numbers from 0: moved_in_part's third): those a bring-back puts back though the file
    has them elsewhere, which its doubling check does not refuse. Not those upstream put in
    the fix's function again since (_landed_again): a re-land, on which it stops."""
    runs: set[bytes] = set()
    for fp in patch.file_patches:
        for n, _, again in hunks.get(fp.path, ()):
            if n < len(fp.hunks) and not again:
                runs.update(near_runs(fp.hunks[n]))
    return runs


def _recorded_landing(project: Project, fix: _Fix) -> str | None:
    """The fix's landing commit as the history's latest drop of it as landed recorded it (or
    its `Applied-Upstream:` field): a bring-back run again after a kill finds the fix listed
    in the series already (no departure), and keeps the same part, naming the same commit."""
    from patchforge.ledger import latest_events
    from patchforge.names import KEPT_LANDINGS

    try:
        dropped = next((event for event in latest_events(project, fix.upstream, fix.name)
                        if event.get("destination") == KEPT_LANDINGS), {})
    except PatchforgeError:
        dropped = {}
    return _landing_of(fix, {f"{fix.upstream}/{fix.name}": dropped})[0]


def recorded_landing(project: Project, upstream: str, name: str, rel: str,
                     data: bytes) -> str | None:
    """The landing commit recorded for the fix NAME (its bytes `data`, at `rel`), None where
    none is (a fix a rebase set aside, never landed) or it does not parse."""
    fix = _parse(upstream, name, rel, data)
    return None if fix is None else _recorded_landing(project, fix)


def _squeezed(line: bytes) -> bytes:
    """A line without its whitespace: the same code indented or spaced otherwise."""
    return b"".join(line.split())


# What bytes.split() splits at, and the same but the line end: deleted by one translate in C,
# where a split and a join make an object of each word or line first.
_WHITESPACE = b" \t\n\r\x0b\x0c"
_SPACE_IN_LINE = b" \t\r\x0b\x0c"


def _squeezed_lines(content: bytes) -> list[bytes]:
    """_squeezed of each of the content's lines (lines_of: split at b"\\n" alone), in order.
    Made from the whole content in two passes in C, not a split and a join per line: a file
    of thousands of lines is asked this per hunk."""
    squeezed = content.translate(None, _SPACE_IN_LINE).split(b"\n")
    if not content or content.endswith(b"\n"):
        squeezed.pop()  # (the piece after the last line end: no line)
    return squeezed


def _added(hunk, kind: bytes = b"+") -> list[bytes]:
    """The lines a hunk adds (`kind` "-": removes) that tell code (_squeezed, 4 bytes or
    more): a brace, a blank line or a bare `pass` is in most files many times over, and
    upstream's other work adds and drops such lines anywhere."""
    from patchforge.apply.diffparse import line_content, line_kind

    return [text for line in hunk.lines if line_kind(line) == kind
            and len(text := _squeezed(line_content(line))) >= 4]


def _moved_away(store: UpstreamStore, fix: _Fix, k: int, fp: FilePatch, content: bytes,
                gone: list[int]) -> set[int]:
    """Of the hunks `gone` (numbers from 1) of the fix's file change `k`, whose old code is
    back at their place, those whose added lines (_added) are each in `content` at least as
    many times as in the file as the fix left it: upstream moved them elsewhere in the file
    (reordered, re-indented), it did not take them out. A line the fix adds twice, once
    taken out, is short one; a line the file had before the fix too must be there once
    more. The file as the fix left it is the landing commit's (the fix's base file with the
    fix applied, without a landing known here): counted once per fix (`fix.counts`). Without
    either: none (the old code back is taken as what it says)."""
    from collections import Counter

    if k not in fix.counts:
        # Only the lines the file change adds on balance tell a move: a line one hunk
        # removes and another adds (code the fix itself moved) is there as often after a
        # revert, which moves it back.
        net: Counter = Counter()
        for hunk in fp.hunks:
            net.update(_added(hunk))
            net.subtract(_added(hunk, b"-"))
        left = _left_by_fix(store, fix, fp)
        fix.counts[k] = (Counter(_squeezed_lines(left)) if left is not None else Counter(),
                         net, left)
    counts, net, _ = fix.counts[k]
    if not counts:
        return set()
    # Each line looked for must be in the file's bytes without whitespace first (one search
    # in C): a hunk taken out, as most are, is told so without splitting the file.
    flat = content.translate(None, _WHITESPACE)
    wanted = [(n, added) for n in gone if (added := _added(fp.hunks[n - 1])) and
              all(net[line] > 0 and line in flat for line in added)]
    moved = set()
    if wanted:
        there = Counter(_squeezed_lines(content))
        moved = {n for n, added in wanted if all(there[line] >= counts[line]
                                                 for line in added)}
    rest = [n for n in gone if n not in moved]
    return moved | (_moved_near(fix, k, fp, content, rest) if rest else set())


def _moved_near(fix: _Fix, k: int, fp: FilePatch, content: bytes, gone: list[int]) -> set[int]:
    """Of the hunks `gone` of the fix's file change `k` that _moved_away does not find line
    by line, those whose runs of added lines (near_runs: one text each, whitespace, quotes,
    number spelling and trailing commas aside) are each in `content` (NearText: from a line's
    start to a line's end) at least as many times as in the file as the fix left it, and
    there at least once (a run not found in that file tells nothing): upstream moved them
    and, in the same commit, re-wrapped them or changed their spelling (a formatter run, `0`
    written `0.0`). A hunk really taken back, its added text nowhere, is short one. A run the
    fix's own removed lines hold (code the fix moved) tells nothing; a hunk without a run
    that tells is not moved, nor is one whose post-image is whole in the file (another copy
    of the code has the change)."""
    # Each run must be in the file's text read as near_lines read it, as one search (C):
    # a hunk taken out, as most are, is told so without reading the file line by line.
    flat = _near_flat_of(content)
    if (k, "removed") not in fix.counts:
        fix.counts[(k, "removed")] = [run for hunk in fp.hunks
                                      for run in near_runs(hunk, b"-")]
    removed = fix.counts[(k, "removed")]
    wanted = [n for n in gone if all(run in flat for run in near_runs(fp.hunks[n - 1])
                                     if not any(run in other for other in removed))]
    if not wanted:
        return set()
    left = fix.counts.get((k, "near"))
    if left is None:
        left = fix.counts[(k, "near")] = NearText(fix.counts[k][2] or b"")
    there = _near_text_of(content)
    return {n for n in wanted if _near_there(fp.hunks[n - 1], removed, left, there)}


# A revision's file is asked about once per kept fix that changes it: its near_flat and
# NearText are made once (30 AITER landings judged 300 commits later asked them 127 and 31
# times of 28 and 15 contents, passes of regular expressions over the whole file each).
# Keyed by the content itself: nothing is kept but what the bytes say. Callers must not
# change what they get.
@lru_cache(maxsize=64)
def _near_flat_of(content: bytes) -> NearFlat:
    return near_flat(content)


@lru_cache(maxsize=64)
def _near_text_of(content: bytes) -> NearText:
    return NearText(content)


def _near_there(hunk, removed: list[bytes], left: NearText, there: NearText) -> bool:
    """Whether every run of the hunk's added lines that tells (near_runs, none of the fix's
    removed runs holding it) is in `there` at least as often as in `left`, and in `left`;
    False without such a run, or where the hunk's post-image is whole in `there`."""
    from patchforge.apply.diffparse import line_content, line_kind

    runs = [run for run in near_runs(hunk) if not any(run in other for other in removed)]
    if not runs or not all(there.count(run) >= left.count(run) > 0 for run in runs):
        return False
    post = NearText(b"\n".join(line_content(line) for line in hunk.lines
                               if line_kind(line) in (b" ", b"+")))
    return not (post.flat and there.count(post.flat))


def near_doubled(store: UpstreamStore, patch, made, rev: str,
                 landing: str | None = None) -> list[tuple[str, list[int]]]:
    """Where the fix `made` (the patch as it would join a series at `rev`; `patch`: the fix
    as written, on its `Base`) adds text `rev`'s file holds already, as _moved_near finds a
    move (_near_there against the file as the fix left it): (`PATH hunk N`, the lines from 1
    of `rev`'s file holding that text) each: putting it in would give the overlay the fix's
    lines twice. The file as the fix left it, for a kept fix upstream took back (`landing`,
    where that commit's file has the fix's change), is the file as the commit that took it
    out left it, with the fix put back (_left_at); else its base file with the fix applied:
    a line upstream had elsewhere in the file beside the fix's own is left alone by a
    revert and is no copy of the fix's; one the landing added elsewhere too and its revert
    took out with the fix is not upstream's. Nothing without either file (a fix judged as
    made on `rev` finds its lines one short)."""
    own = {fp.path: fp for fp in patch.file_patches}
    files = [fp for fp in made.file_patches if fp.path in own and fp.binary is None and
             not fp.is_new and not fp.is_delete and fp.hunks]
    contents = store.read_blobs(rev, [fp.path for fp in files]) if files else {}
    landed = _commit(store, landing) if files else None
    said = []
    for fp in files:
        content = contents.get(fp.path)
        left = _left_at(store, landed, own[fp.path], patch, rev)
        if content is None or left is None:
            continue
        left_text, there = NearText(left), NearText(content)
        removed = [run for hunk in own[fp.path].hunks for run in near_runs(hunk, b"-")]
        said += [(f"{fp.path} hunk {n}", _near_at(hunk, removed, there))
                 for n, hunk in enumerate(fp.hunks, 1)
                 if _near_there(hunk, removed, left_text, there)]
    return said


def _left_at(store: UpstreamStore, landed: str | None, fp: FilePatch, patch,
             rev: str | None = None) -> bytes | None:
    """`fp`'s file as the fix `patch` left it, holding the copies of its lines upstream has
    beside the fix: where it landed at the commit `landed` (which has the change there), the
    file as the commit that took the change out after it (up to `rev`: a revert) left it,
    with the fix put back (_put_back_after); else the landing's parent's file with the fix
    put back; else its base file with it applied. Not the landing's own file: a landing
    broader than the fix that added the same line elsewhere too, both taken out by its
    revert, counted that copy as upstream's, and a fix upstream made again its own way
    (one copy at the pin) went back beside it. None where none is known here."""
    from patchforge.apply.hunks import apply_file_patch

    if landed is not None:
        try:
            left = store.read_blobs(landed, [fp.path]).get(fp.path)
        except PatchforgeError:
            left = None
        if left is not None and _applies(left, fp, reverse=True):
            taker = _put_back_after(store, landed, rev, fp) if rev else None
            for rest, fix in ((taker, fp), (taker, _not_there(taker, fp)),
                              (_parent_file(store, landed, fp.path), fp)):
                fixed = apply_file_patch(rest, fix, max_fuzz=0) \
                    if rest is not None and fix is not None else None
                if fixed is not None and fixed.ok and fixed.content is not None:
                    return fixed.content
    base = (patch.get("Base") or "").strip()
    try:
        old = store.read_blob(base, fp.source_path) \
            if base and store.has_object(base) else None
    except PatchforgeError:
        old = None
    fixed = apply_file_patch(old, fp, max_fuzz=0) if old is not None else None
    return fixed.content if fixed is not None and fixed.ok else None


def _put_back_after(store: UpstreamStore, landed: str, rev: str, fp: FilePatch) -> bytes | None:
    """The file `fp` changes as the newest commit after `landed` up to `rev` that took its
    change out (its parent has the change, it has not: one parent) left it; None where none
    is seen (among the first MAX_COMMITS that change the file)."""
    try:
        log = store.path_log(landed, rev, [fp.path])[:MAX_COMMITS]
    except PatchforgeError:
        return None
    for sha, parents, _ in log:
        if len(parents) != 1:
            continue
        after = store.read_blobs(sha, [fp.path]).get(fp.path)
        if after is None or _applies(after, fp, reverse=True):
            continue
        before = store.read_blobs(parents[0], [fp.path]).get(fp.path)
        if before is not None and _applies(before, fp, reverse=True):
            return after
    return None


def _not_there(content: bytes | None, fp: FilePatch) -> FilePatch | None:
    """`fp` with only the hunks whose change `content` does not have at their place (a landing
    taken back in part: the rest still upstream, where the whole fix cannot be put back), None
    where every hunk or none is so. A twin guard that landed in the same commit, in another
    function, then stays counted as upstream's, beside the fix's own put back."""
    if content is None:
        return None
    missing = [hunk for hunk in fp.hunks
               if not _applies(content, replace(fp, hunks=[hunk]), reverse=True)]
    return replace(fp, hunks=missing) if 0 < len(missing) < len(fp.hunks) else None


def _parent_file(store: UpstreamStore, commit: str, path: str) -> bytes | None:
    """The file at `path` in `commit`'s first parent, None where there is none."""
    try:
        parent = store.parents_of([commit]).get(commit)
        return store.read_blobs(parent, [path]).get(path) if parent else None
    except PatchforgeError:
        return None


def _near_at(hunk, removed: list[bytes], there: NearText) -> list[int]:
    """The lines (from 1) of `there`'s file where the hunk's runs that tell (_near_there)
    begin."""
    return sorted({line for run in near_runs(hunk) if not any(run in other for other in removed)
                   for line in there.lines_at(run)})


def _left_by_fix(store: UpstreamStore, fix: _Fix, fp: FilePatch) -> bytes | None:
    """`fp`'s file as the fix left it: at the landing commit where it has the change there,
    else the fix's base file with the fix applied; None where neither is known here."""
    from patchforge.apply.hunks import apply_file_patch

    left = None
    landing = _commit(store, fix.landing)
    if landing is not None:
        try:
            left = store.read_blobs(landing, [fp.path]).get(fp.path)
        except PatchforgeError:
            left = None
        if left is not None and not _applies(left, fp, reverse=True):
            left = None
    if left is None:
        old = _base_file(store, fix, fp)
        fixed = apply_file_patch(old, fp, max_fuzz=0) if old is not None else None
        left = fixed.content if fixed is not None and fixed.ok else None
    return left


def _may_be_elsewhere(fp: FilePatch, content: bytes) -> bool:
    """Whether a hunk of a file change that applies in reverse to `content` may have its
    change there only at another copy of the code (detect.may_be_elsewhere: byte searches;
    False says what _at_own_place would, present, without the base file and git's diff that
    every status would pay for every kept fix)."""
    from patchforge.detect import may_be_elsewhere

    return not fp.is_new and not fp.is_delete and \
        any(may_be_elsewhere(hunk, content) for hunk in fp.hunks)


def _base_file(store: UpstreamStore, fix: _Fix, fp: FilePatch) -> bytes | None:
    """The file before the fix (at its `Base`), None when not known here."""
    base = (fix.patch.get("Base") or "").strip()
    try:
        return store.read_blob(base, fp.path) if base and store.has_object(base) else None
    except PatchforgeError:
        return None


def _at_own_place(store: UpstreamStore, fix: _Fix, fp: FilePatch, content: bytes,
                  both: bool = True, places=None) -> str:
    """present | gone for a file change both of whose images are in `content` (`both`: the
    same code at several places: another copy of the code may have the fix's lines whatever
    happened to the fix's own): judged at the fix's own place, where upstream's line map
    (git's 3-way merge of the fix's base file to `content`) puts the place the fix had. The
    merge changes nothing: present. It changes something (cleanly): gone. Without the base
    file, or a merge that conflicts: present, as a search finding the fix's lines says (never
    a revert from a guess).

    Not `both` (it applies in reverse only, and _may_be_elsewhere): gone when a hunk's change
    is found only away from its own place, which holds the hunk's pre-image again (detect.
    OwnPlaces.elsewhere, the rule that keeps landed detection from calling such a fix
    landed): upstream took it out there and has it only in the copy. Else present.
    `places`: the own-place diffs made already (detect.PlaceDiffs: _states_at's)."""
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.store.diff import merge_file

    old = _base_file(store, fix, fp)
    if old is None:
        return "present"
    if not both:
        from patchforge.apply.hunks import ReversedHunk, apply_hunks, lines_of
        from patchforge.detect import OwnPlaces, may_be_elsewhere

        own = OwnPlaces(fp, old, content, apply_file_patch, places)
        found = apply_hunks(lines_of(content), tuple(ReversedHunk(h) for h in fp.hunks),
                            max_fuzz=0, build=False)[1]
        return "gone" if any(
            outcome.status != "failed" and may_be_elsewhere(hunk, content) and
            (own.elsewhere(k, hunk, outcome) or ("",))[0] == "pre-image"
            for k, (hunk, outcome) in enumerate(zip(fp.hunks, found))) else "present"
    fixed = apply_file_patch(old, fp, max_fuzz=0)
    if not fixed.ok or fixed.content is None:
        return "present"
    clean, merged = merge_file(old, content, fixed.content)
    return "gone" if clean and merged != content else "present"


def _dropped_events(project: Project) -> dict:
    from patchforge.ledger import departures

    try:
        return departures(project)
    except PatchforgeError:
        return {}  # (lint reports a history line that does not read)


def _landing_of(fix: _Fix, recorded: dict) -> tuple[str | None, str | None]:
    """(the recorded landing commit, the target the fix was dropped at): `Applied-Upstream:
    ..., commit:X` (what a rebase writes) or `commit X` (what earlier ones wrote), else the landing the history's
    `dropped` event recorded; the target is that event's."""
    found = _LANDED_COMMIT.search(fix.patch.get("Applied-Upstream") or "")
    event = recorded.get(f"{fix.upstream}/{fix.name}") or {}
    target = (event.get("to") or {}).get("commit") if event.get("event") == "dropped" else None
    target = target if isinstance(target, str) and target else None
    if found:
        return found[1].lower(), target
    landed = event.get("landed_in")
    return (landed if isinstance(landed, str) and landed else None), target


def _judge(store: UpstreamStore, fix: _Fix, commit: str, recorded: dict,
           cache: dict[str, str] | None = None,
           history: _History | None = None) -> LandingGone | None:
    """`cache`: the fix's states at revisions already judged (_states_at's); `history`: the
    walk since the kept fixes' landings judge_many shares among them."""
    cache = {} if cache is None else cache
    renamed: dict[str, str] = {}
    landed, dropped_at = _landing_of(fix, recorded)
    landing = _commit(store, landed)
    # Where the fix is known to have been upstream: its landing commit, else the target the
    # rebase that dropped it judged it landed at.
    reference = landing or _commit(store, dropped_at)
    base = (fix.patch.get("Base") or "").strip()
    known_base = base if base and store.has_object(base) else None
    since = landing or known_base
    # Where the fix's paths are true: its base; and where it was upstream: its landing.
    follow = (known_base, landing)
    if landing is not None and known_base is not None and landing != known_base and \
            _renamed_before_landing(store, fix, known_base, landing):
        cache.clear()
    state = _fix_state(store, fix, commit, cache)
    if state != "present" and since is not None:
        # A file of the fix gone at `commit` may have been renamed since its base, before
        # the landing or after it: looked for at its new path too (git's rename detection,
        # _renamed_at, asked only when the fix is not found whole at its own paths, and only
        # for its files gone).
        own = {fp.path for fp in fix.files}
        # (A file that is one of the fix's own is no new place of another: a revert of a
        # move deletes the file the landing created and brings back the one it deleted,
        # which git's rename detection pairs.)
        # (The path a file was renamed from before the landing is its own again where
        # upstream renamed it back: _renamed_before_landing.)
        renamed = {path: new for path, new in _renamed_at(
            store, follow, commit, sorted(p for p in own if not _deletes(fix, p))).items()
            if new not in own or new in fix.left_path.values()}
        for k, fp in enumerate(fix.files):
            if fp.path in renamed:
                fix.aliases[k].append(renamed[fp.path])
        if renamed:
            cache.clear()
            state = _fix_state(store, fix, commit, cache)
    if state != "present" and since is not None and _rewritten_away(store, fix, since, commit):
        cache.clear()
        state = _fix_state(store, fix, commit, cache)
    if state != "present" and since is not None and \
            (_moved_functions(store, fix, since, commit) | _moved_renamed(store, fix, [commit])):
        cache.clear()
        state = _fix_state(store, fix, commit, cache)
    if fix.unplaced.get(commit):
        # A hunk whose whole pre-image is at one place its neighbours cannot tell for the
        # fix's, judged by the files alone until the history says (_placed_by_history):
        # taken back where the commit that took it out made that place and put its lines
        # nowhere else. (Asked before a count of its lines takes it for moved.)
        placed = _placed_by_history(store, fix, commit, since)
        if placed:
            fix.placed.update(placed)
            # (What the judging found gone before the answer noted is found again.)
            fix.moved.pop(commit, None)
            fix.weak.pop(commit, None)
            cache.clear()
            state = _fix_state(store, fix, commit, cache)
    if state in ("present", "part") and landing is not None and fix.moved.get(commit):
        # A hunk counted moved (its lines elsewhere in the file as often as the fix left
        # them) is moved only where the commit that took it out of its place put them
        # elsewhere: a count alone took a copy of a common line upstream added since (a
        # `torch.cuda.synchronize()` in another function) for the fix's, and kept the hunk
        # as landed while it was in no overlay and not upstream.
        doubtful = _doubtful_moves(store, fix, commit, landing, base, cache)
        if doubtful:
            fix.unmoved.update(doubtful)
            cache.clear()
            state = _fix_state(store, fix, commit, cache)
    if state == "part" and landing is not None and fix.weak.get(commit):
        # A hunk that only adds lines, found back by its neighbours alone beside a hunk
        # changed since, its lines (some) elsewhere in the file: a refactor that moved and
        # reworded them leaves the same; taken back only where the commit that took it out
        # reverts the landing.
        refused = _not_taken_back(store, fix, commit, landing, base, cache)
        if refused:
            fix.not_back.update(refused)
            cache.clear()
            state = _fix_state(store, fix, commit, cache)
    if state == "other":
        # Neither there nor gone by the files: superseded, unless the history has a revert of
        # the landing that nothing since put back (upstream then edited the old code again).
        said = _reverted_then_changed(store, fix, commit, landing, base, cache, history)
        if (said is None or said.kind == "removed") and fix.taken_out and \
                landing is not None and store.is_ancestor(landing, commit):
            # Unless the fix's function was taken out of its file with the fix's lines, into
            # no other function or file: the fix is in no overlay and not upstream. (Said
            # so rather than as taken out, then changed, by other work: the deletion is the
            # change since, named.)
            taken = _function_taken_out(store, fix, commit)
            if taken is not None:
                said = _taken_out_by(store, fix, landing, base, *taken) or said
            else:
                said = _taken_before_deleted(store, fix, recorded, landing, cache) or said
        if said is None and landing is not None and store.is_ancestor(landing, commit):
            # Unless a guard of the fix is no longer checked in its function, which upstream
            # kept under its name (the guard dropped and the lines under it rewritten).
            dropped = _guard_dropped(store, fix, commit, landing)
            if dropped is not None:
                said = _taken_out_by(store, fix, landing, base, *dropped)
        return said
    if state not in ("gone", "part"):
        return None
    # Taken back in part (some of its files or hunks back at their old code, the others still
    # there): said with those places, so that `bring-back` is seen to put back that part (the
    # rest it keeps under upstreamed/ as landed).
    in_part = (_taken_back_in_part(store, fix, commit) if state == "part" else "") + \
        _possibly_doubled(fix)
    if reference is None and not (landed or dropped_at) and \
            fix.patch.get("Applied-Upstream") is not None:
        # Kept as landed with no landing commit named (one that could not be told for it),
        # and no departure in the history: the landed part of a fix the series holds under
        # the same name. Where its files came to have its change is its landing; without
        # it, a revert of that part would go unsaid.
        reference = landing = _landing_by_files(store, fix, base, commit, cache)

    def gone(kind: str, by: str | None, detail: str) -> LandingGone:
        return LandingGone(fix.upstream, fix.name, fix.path, kind, landing or landed, by,
                           detail + in_part)

    if reference is None:
        known = landed or dropped_at
        if known:
            # Known upstream, at a revision this store lacks (a new cache: a wheel upstream's
            # import of the version it landed in is made only by a command that reads that
            # version): whether upstream took it back cannot be told from here.
            event = recorded.get(f"{fix.upstream}/{fix.name}") or {}
            label = (event.get("to") or {}).get("label") if event.get("event") == "dropped" \
                else None
            # (Read from files a hand may have edited: only a plain label and an object id
            # are repeated.)
            label = label if isinstance(label, str) and _PLAIN_LABEL.fullmatch(label) else None
            where = " ".join(part for part in (
                label, f"({known[:12]})" if _OBJECT_ID.fullmatch(known) else None) if part)
            raise PatchforgeError(
                f"its change is not at {commit[:12]} and the revision it landed in"
                + (f", {where}," if where else "") + " is not in the cache"
                + (f": `patchforge status --against {label}` brings it" if label else ""))
        return None  # never known upstream in this form (moved aside by hand): nothing to say
    if not store.is_ancestor(reference, commit):
        if reference != commit and not any(store.parents_of([reference, commit]).values()):
            # Two roots: a wheel's or a directory's versions are separate imports, with no
            # history between them, so nothing tells a later version that took the change
            # out from a pin moved back to one before the landing.
            return gone("unexplained", None, f"its change is not at the target, which shares "
                        f"no history with {reference[:12]}, where it was upstream (separate "
                        "imports of a wheel's or a directory's versions): whether a later "
                        "version took it out or the pin went back before the landing cannot "
                        "be told from here")
        return gone("before-landing", None, f"the target does not contain "
                    f"{'its landing commit' if landing else 'the revision it was dropped at'} "
                    f"{reference[:12]} (a revision before it)")
    if _fix_state(store, fix, reference, cache) == "gone":
        # Its pre-image was there when it landed too: upstream landed it in another form,
        # which these files cannot show taken back. Superseded, as far as the tree can tell.
        return None
    if landing is None:
        # No landing commit recorded (the kept diff's context held a line of another fix of
        # the series, which the rebase's search by the whole diff could not find upstream):
        # the commit after the fix's base after which its files have its change is the
        # landing, up to the revision it was dropped at.
        landing = _landing_by_files(store, fix, base, reference, cache)
        if landing is None:
            return gone("unexplained", None, "its change is not at the target and no landing "
                        "commit is recorded to tell what took it out")
    paths = sorted({p for aliases in fix.aliases.values() for p in aliases})
    log = store.path_log(landing, commit, paths)[:MAX_COMMITS]

    def tidied(rev: str) -> bool:
        # (Neither the fix's change nor its old code at `rev`, and its place nearer the old
        # code than the fix: a tidy of the old code, which has none of the change.)
        return _fix_state(store, fix, rev, cache) == "other" and \
            _old_code_edited(fix, store.read_blobs(rev, paths))

    takers = []
    back = []  # commits at which the change is not gone
    for sha, parents, message in log:
        if renamed and _renamed_between(store, fix, follow, [sha, *parents[:1]], renamed):
            cache.clear()
        if fix.moved_on and _moved_renamed(store, fix, [sha, *parents[:1]]):
            cache.clear()
        state = _fix_state(store, fix, sha, cache)
        if state not in ("gone", "part"):
            back.append(sha)
        # A commit after which less of the change is there than before it took some out: a
        # part taken back by one commit and the rest by a later one, both (the later one is
        # asked first); never one that put a part back after a revert (a re-land in part),
        # nor one that undid a tidy of the old code (it took nothing out: the commit that
        # did is earlier).
        elif len(parents) == 1 and \
                _TAKEN.get(state, 2) < _TAKEN.get(_fix_state(store, fix, parents[0], cache), 2) \
                and not tidied(parents[0]):
            takers.append((sha, message))
    # (A tidy of the old code is no re-landing: it neither hides the take-out before it nor
    # is what a later revert of it reverts.)
    back = [sha for sha in back if not tidied(sha)]
    # A taker followed by a commit that has the change again (a re-land, a revert of the
    # revert) is not what took it out of this revision.
    takers = [(sha, message) for sha, message in takers
              if not any(store.is_ancestor(sha, later) for later in back)]
    if fix.taken_by:
        # A hunk whose lines the history found taken out of the fix's own function by a
        # commit (_function_left): that commit took it out, though an earlier one that moved
        # them within the function left the place the fix had them empty.
        first = [(sha, message) for sha, _, message in log if sha in fix.taken_by.values()]
        takers = first + [taker for taker in takers if taker not in first]
    if _fix_state(store, fix, commit, cache) == "part":
        # A commit that took a hunk gone here out of its place while the whole fix was
        # neither there nor gone after it (another hunk changed upstream before) is a taker
        # too, in the history's order: the walk above cannot see it.
        extra = _hunks_takers(store, fix, commit, landing, log, cache)
        takers = [(sha, message) for sha, _, message in log
                  if any(sha == taker for taker, _ in takers + extra)]
    if not takers:
        return gone("unexplained", None, "no commit after its landing was found that took its "
                    "change out")
    landings = _landing_commits(store, fix, landing, base)
    prs = _pull_requests(store, fix, landing)
    removed = None
    for sha, message in takers:
        how = _names_landing(store, message, landing, landings, prs) or \
            _exact_reverse(store, fix, landing, sha) or \
            _reverts_relanding(store, fix, sha, message, log, back, cache)
        if how:
            return gone("reverted", sha, how)
        removed = removed or sha
    assert removed is not None
    return gone("removed", removed, f"commit {removed[:12]} took its change out as part of "
                "other work (no revert of the landing)")


def _hunks_takers(store: UpstreamStore, fix: _Fix, commit: str, landing: str, log: list,
                  cache: dict) -> list[tuple[str, bytes]]:
    """(commit, message), newest first, of the commits that took out of its place a hunk
    found gone at `commit` (_HunkTakers.taker: after it the hunk's old code is at its place
    by its neighbours, before it its change was there) while leaving the whole fix neither
    there nor gone: a revert that took one hunk out and wrote a line of its own beside it,
    another hunk taken out and changed before, left the whole fix "other", and no commit
    after which less of the whole change is there named it (AITER `517a3af5ec`, reverting
    `11dfa25a40`: the fix was said "unexplained" at the head, its revert unnamed)."""
    if commit not in fix.gone_hunks:
        _fix_state(store, fix, commit, {})  # (a state cached by another judging: noted again)
    hunks = sorted((k, n) for k, n in fix.gone_hunks.get(commit, ()) if n is not None)
    if not hunks:
        return []
    takers = _HunkTakers(store, fix, commit, landing)
    found = {taken[0] for taken in (takers.taker(k, fix.files[k].hunks[n - 1])
                                    for k, n in hunks) if taken is not None}
    return [(sha, message) for sha, _, message in log
            if sha in found and _fix_state(store, fix, sha, cache) == "other"]


def _reverts_relanding(store: UpstreamStore, fix: _Fix, taker: str, message: bytes,
                       log: list, back: list[str], cache: dict) -> str | None:
    """How `taker` (a commit after which the fix's change is gone) reverts a commit of `log`
    (the history since the landing, newest first) that brought the change back, in any form,
    after it was taken out: one of `back` (the change not gone at it) whose parent has it
    gone, before `taker`. Land, revert, land again in another form (superseded), revert
    that: the last revert names the re-land, never the landing, and its change is the
    re-land's reverse, not the landing's; it was said taken out as part of other work. Its
    message names the re-land (`This reverts commit X`) or its change is the re-land's exact
    reverse, as _names_landing and _exact_reverse tell of a landing; else None. (Asked only
    where the taker is no revert of the landing itself: each candidate costs a look at its
    parent's files.)"""
    for relanded, parents, _ in log:
        if relanded == taker or relanded not in back or len(parents) != 1 or \
                not store.is_ancestor(relanded, taker) or \
                _fix_state(store, fix, parents[0], cache) not in _TAKEN:
            continue
        how = _names_landing(store, message, relanded, [relanded], set()) or \
            _exact_reverse(store, fix, relanded, taker)
        if how:
            return f"{how}, which landed it again after it was taken out"
    return None


def _taken_before_deleted(store: UpstreamStore, fix: _Fix, recorded: dict, landing: str,
                          cache: dict) -> LandingGone | None:
    """Where the commit that took the fix's function out of its file (`fix.taken_out`) found
    the fix's lines gone from it already (an earlier commit took them out, no exact reverse
    of the landing): what is said of the fix just before that commit (the earlier one named),
    and that the function went after. The deletion took no line of the fix, and read alone
    the fix was superseded, nothing said."""
    for k, (sha, parent, owns) in sorted(fix.taken_out.items()):
        if parent == landing or not store.is_ancestor(landing, parent) or \
                _fix_state(store, fix, parent, cache) not in ("gone", "part"):
            continue
        earlier = _judge(store, fix, parent, recorded, cache)
        if earlier is not None:
            names = ", ".join(dict.fromkeys(own.name.decode("utf-8", "replace")
                                            for own in owns if own.name is not None))
            return replace(earlier, detail=f"{earlier.detail}; commit {sha[:12]} then took "
                                           f"{names} out of {fix.files[k].path}")
    return None


def _rewritten_away(store: UpstreamStore, fix: _Fix, since: str, commit: str) -> bool:
    """Whether a file of the fix that `commit` has at its path keeps there less than half of
    the lines it had at `since` (the landing), where the commit after `since` that rewrote it
    so added one other file keeping at least half of them: upstream moved the file and wrote a
    new one at its path (a module of wrappers still defining the fix's function, a shim), which
    git's rename detection, pairing only a path gone, cannot tell. That file is then the first
    path the fix's file change is read at (`fix.aliases`; before that commit it is absent, so
    the old path is read) and `fix.rewritten`'s. Read at the old path, the new file's function
    of the fix's name held neither the fix nor its old code: superseded, nothing said, while
    the moved file had the fix's line taken out. A commit that cut the file down adding no
    file is read against the files added since `since` (_added_since: a copy made by an
    earlier commit, the file then turned into wrappers), unless what it left at the path
    holds the fix's added lines (_holds_added: a wrapper keeping the check)."""
    from patchforge.apply.hunks import _language

    found = False
    contents = store.read_blobs(commit, _paths(fix))
    for k, fp in enumerate(fix.files):
        if k in fix.rewritten or k in fix.moved_to or fp.is_new or fp.is_delete or \
                fp.binary is not None:
            continue
        path = _path_of(fix, k, contents)
        if path is None:
            continue
        was = store.read_blobs(since, [path])[path]
        if was is None or _kept_share(was, contents[path] or b"") >= 0.5:
            continue
        log = [(sha, parents) for sha, parents, _ in store.path_log(since, commit, [path])
               if len(parents) == 1][:MAX_COMMITS]
        # (Only a commit that deleted the file, added another of its language, or cut it
        # below half of its lines is read.)
        changed = store.files_changed([sha for sha, _ in log])
        for sha, parents in reversed(log):  # (oldest first: the commit that rewrote it)
            deleted = store.entries(sha, [path])[path] is None
            added: list[str] = []
            copied = False
            if not deleted:
                others = sorted(p for p in changed.get(sha, ()) if p not in fix.aliases[k]
                                and p != fix.left_path.get(k)
                                and _language(p) == _language(path))
                had = store.entries(parents[0], others) if others else {}
                added = [p for p in others if had.get(p) is None]
                # (Adding none, the file may have been copied to another path by an earlier
                # commit since `since`, left whole there, and cut down to wrappers by this
                # one: asked below of a commit that cut it down only.)
                copied = not added
            before = store.read_blobs(parents[0], [path])[path]
            if before is None:
                continue
            if deleted:
                # (Moved away, a new file written at the path by a later commit: git's rename
                # detection pairs the path this commit deleted.)
                into = [new for new in (store.renames(parents[0], sha, [path]).get(path),)
                        if new is not None and new not in fix.aliases[k]]
            else:
                shrunk = store.read_blobs(sha, [path])[path] or b""
                if _kept_share(before, shrunk) >= 0.5:
                    continue
                if copied:
                    if _moved_here(store, fix, k, parents[0], sha, changed.get(sha, ()), path):
                        break  # (the fix's function moved by this commit: followed as a move)
                    if _old_code_in_own_function(store, fix, k, shrunk):
                        # (What it left at the path still defines the fix's function with
                        # the fix's old code in it: the fix taken out there. A copy of the
                        # file made since, at the old path of a file renamed before the
                        # landing, kept as legacy with the guard, held it: quiet, exit 0.)
                        break
                    # (That copy: where one file added since keeps at least half its lines,
                    # holding the fix's lines when it was added: a pre-fix snapshot is no copy.)
                    added = [p for p in _added_since(store, fix, k, since, parents[0], path)
                             if _held_when_added(store, fix, k, since, parents[0], p)]
                    if not added:
                        continue
                    if _holds_added(store, fix, k, shrunk):
                        break  # (the fix's lines kept in the wrappers: upstream has them)
                now = store.read_blobs(sha, added)
                into = [p for p in added if now.get(p) is not None and
                        _kept_share(before, now[p] or b"") >= 0.5]
                named = [name for name in _own_functions(store, fix, k) if name is not None]
                there = _Lines(now.get(into[0]) or b"") if len(into) == 1 else None
                if there is not None and named and not any(
                        _has_function(there, into[0], name) for name in named):
                    # The file split, the fix's function staying at its path (the other
                    # functions, most of the lines, went into the new file): followed there,
                    # a guard a later commit dropped was said taken out by the split, and
                    # `bring-back` asked for the fix in a file without its function.
                    break
            if len(into) == 1:
                if into[0] in fix.aliases[k]:
                    fix.aliases[k].remove(into[0])
                fix.aliases[k].insert(0, into[0])
                fix.rewritten[k] = into[0]
                found = True
            break
    return found


def _added_since(store: UpstreamStore, fix: _Fix, k: int, since: str, rev: str,
                 path: str) -> list[str]:
    """The files of `path`'s language that `rev` has and `since` had not (added by a commit
    after `since` up to `rev`), none of the fix's file change `k`'s paths: where a copy of
    the fix's file may be. Asked only of a commit that cut the file below half of its lines
    while it added no file (_rewritten_away)."""
    from patchforge.apply.hunks import _language

    # (The old path of a file renamed before the landing too (`fix.left_path`), the file there
    # added since `since`: upstream copying the file back there; _held_when_added tells the
    # copy from a legacy look-alike written without the fix's lines.)
    others = sorted(p for p in store.changed_paths(since, rev)
                    if p not in fix.aliases[k]
                    and _language(p) == _language(path))
    had = store.entries(since, others) if others else {}
    return [p for p in others if had.get(p) is None]


def _old_code_in_own_function(store: UpstreamStore, fix: _Fix, k: int, content: bytes) -> bool:
    """Whether `content` defines a function a hunk of the fix's file change `k` changes
    (_OwnFunction, from the fix's base file) holding that hunk's old code (_hunk_state gone):
    a file cut down that still runs the fix's function without the fix, not a module of
    wrappers calling a copy (a shim holds neither the fix's lines nor its old code)."""
    fp = fix.files[k]
    own = _own_function_of(store, fix, k)
    lines = _Lines(content)
    for n, hunk in enumerate(fp.hunks, 1):
        within = own(n)
        if within.name is not None and within.defined(lines) and \
                _hunk_state(lines, hunk, own=within) == "gone":
            return True
    return False


def _moved_here(store: UpstreamStore, fix: _Fix, k: int, rev: str, sha: str,
                changed, path: str) -> bool:
    """Whether commit `sha` (parent `rev`), cutting the fix's file at `path` down while adding
    no file, put a function the fix's file change `k` changes into another file it changed,
    one that lacked it at `rev`: the function moved, not the file copied (_rewritten_away)."""
    from patchforge.apply.hunks import _language

    named = [name for name in _own_functions(store, fix, k) if name is not None]
    others = sorted(p for p in changed if p != path and _language(p) == _language(path))
    if not named or not others:
        return False
    now = store.read_blobs(sha, others)
    was = store.read_blobs(rev, others)
    for p in others:
        content = now.get(p)
        if content is None:
            continue
        there, before = _Lines(content), _Lines(was.get(p) or b"")
        if any(_has_function(there, p, name) and not _has_function(before, p, name)
               for name in named):
            return True
    return False


def _held_when_added(store: UpstreamStore, fix: _Fix, k: int, since: str, rev: str,
                     path: str) -> bool:
    """Whether `path`, added after `since` by a commit up to `rev`, held the fix's added lines
    (_holds_added) as that commit wrote it: a copy of the landed file does, a snapshot of the
    file from before the fix does not. A fix adding no line: any such file may be the copy."""
    if not any(_added(hunk) for hunk in fix.files[k].hunks):
        return True
    log = store.path_log(since, rev, [path])
    if not log:
        return False
    first = log[-1][0]  # (newest first: the last is the commit that added it)
    content = store.read_blobs(first, [path])[path]
    return content is not None and _holds_added(store, fix, k, content)


def _holds_added(store: UpstreamStore, fix: _Fix, k: int, content: bytes) -> bool:
    """Whether `content` holds every line the fix's file change `k` adds that tells
    (_added), in the function each hunk changes where it is known and defined there (a
    wrapper keeping the fix's check before its call), else anywhere in the file."""
    fp = fix.files[k]
    if not any(_added(hunk) for hunk in fp.hunks):
        return False  # (a fix that only takes lines out: followed, as a move in one commit)
    names = _own_functions(store, fix, k)
    lines = _Lines(content)
    squeezed = _squeezed_lines(content)
    for n, hunk in enumerate(fp.hunks, 1):
        wanted = set(_added(hunk))
        own = _OwnFunction(store, fix, k, n)
        within = names[n - 1] if names[n - 1] is not None and own.defined(lines) else None
        held = {squeezed[j] for j in range(len(squeezed)) if squeezed[j] in wanted and
                (within is None or lines.function_at(fp.path, j) == within)}
        if not wanted <= held:
            return False
    return True


def _kept_share(was: bytes, now: bytes) -> float:
    """The share of `was`'s lines (stripped, blank ones left out, each as often as it is
    there) that `now` has."""
    from collections import Counter

    old = Counter(line.strip() for line in was.splitlines() if line.strip())
    if not old:
        return 1.0
    new = Counter(line.strip() for line in now.splitlines() if line.strip())
    return sum(min(n, new[line]) for line, n in old.items()) / sum(old.values())


def _moved_functions(store: UpstreamStore, fix: _Fix, since: str, commit: str) -> bool:
    """Whether a file of the fix has, at `commit`, none of the functions its hunks change
    (each known: _own_functions) while the commit after `since` that took the last of them
    out of it added functions of those names (and kinds: the same qualified name) to one
    other file of the same language: upstream moved the fix's function whole there, the old
    file staying, which git's rename detection cannot tell. That file is then where the hunks
    are judged from that commit on (`fix.moved_to`, _content_of), as they would be in their
    own file: a line dropped on the way or later is taken back, not superseded."""
    from patchforge.apply.hunks import _language

    found = False
    contents = store.read_blobs(commit, _paths(fix))
    for k, fp in enumerate(fix.files):
        if k in fix.moved_to or fp.is_new or fp.is_delete or fp.binary is not None or \
                _language(fp.path) is None:
            continue
        content = next((contents[p] for p in fix.aliases[k] if contents.get(p) is not None),
                       None)
        names = _own_functions(store, fix, k)
        if content is None or not names or None in names:
            continue
        owns = [_OwnFunction(store, fix, k, n) for n in range(1, len(names) + 1)]
        lines = _Lines(content)
        # (A function still defined there only as a shim calling one of its name elsewhere,
        # `def a2(x): return c.a2(x)`, is followed as moved too: `fix.shims`.)
        shim = False
        if any(own.defined(lines) for own in owns):
            if not all(_calls_moved(lines, fp.path, own) for own in owns):
                continue
            if _shim_holds_added(lines, fp, owns):
                # The shim itself runs the fix's lines before it calls the moved function
                # (`if x is None: return 0` then `return c.a2(x)`): the fix is upstream's
                # there. Followed into the moved function, it was said taken out, and the
                # bring-back advised wrote the guard a second time.
                continue
            shim = True

        def left(now: bytes | None) -> bool:
            # (Whether the file at a commit no longer has the functions, or has only shims.)
            if now is None:
                return True
            now_lines = _Lines(now)
            if shim:
                return all(_calls_moved(now_lines, fp.path, own) for own in owns)
            return not any(own.defined(now_lines) for own in owns)

        log = [(sha, parents) for sha, parents, _ in store.path_log(since, commit, fix.aliases[k])
               if len(parents) == 1][:MAX_COMMITS]
        for sha, parents in reversed(log):  # (oldest first: the commit that took them out)
            there = store.read_blobs(sha, fix.aliases[k])
            if not left(next((there[p] for p in fix.aliases[k] if there.get(p) is not None),
                             None)):
                continue
            changed = store.files_changed([sha]).get(sha, set())
            others = sorted(p for p in changed if p not in fix.aliases[k] and
                            p != fix.left_path.get(k) and
                            _language(p) == _language(fp.path))
            after = store.read_blobs(sha, others)
            before = store.read_blobs(parents[0], others)
            into = [p for p, there in after.items() if p in others and there is not None and
                    _defines(owns, there) and not any(
                        own.defined(_Lines(was)) for own in owns
                        for was in (before.get(p),) if was is not None)]
            if len(into) == 1:
                fix.moved_to[k] = (into[0], owns)
                fix.moved_on[k] = (sha, [])
                fix.aliases[k].append(into[0])
                if shim:
                    fix.shims.add(k)
                found = True
            elif not into and not shim:
                fix.taken_out[k] = (sha, parents[0], owns)
            break
    return found


def _shim_holds_added(lines: _Lines, fp: FilePatch, owns: list[_OwnFunction]) -> bool:
    """Whether each hunk of the fix's file change `fp` that adds lines has them all, in order
    and next to each other (blank lines aside), in the function of the file `lines` it changes
    (`owns`, by hunk): a shim left in the old file that still runs the fix's guard."""
    from patchforge.apply.diffparse import line_content, line_kind

    found = False
    for hunk, own in zip(fp.hunks, owns):
        added = [line_content(body).strip() for body in hunk.lines
                 if line_kind(body) == b"+" and line_content(body).strip()]
        if not added:
            continue
        # (Each place of its first line read for the run after it, blank lines aside, and
        # for the function it is in: a file's functions are read only there.)
        stripped = [(k, line.strip()) for k, line in enumerate(lines.lines) if line.strip()]
        # (The run must come before the shim's call of the moved function: checked after it,
        # `r = c.a2(x)` then `if x is None: return 0`, the guard no longer protects the call.)
        call = _first_moved_call(lines, fp.path, own)
        if not any(line == added[0] and
                   [text for _, text in stripped[j:j + len(added)]] == added and
                   lines.function_at(fp.path, k) == own.name and
                   (call is None or k < call)
                   for j, (k, line) in enumerate(stripped)):
            return False
        found = True
    return found


def _calls_moved(lines: _Lines, path: str, own: _OwnFunction) -> bool:
    """Whether the file defines the function `own` names and its body calls a function of
    the same bare name through a module, object or namespace (`c.a2(x)`, `impl::a2(x)`), or
    through a name the file imports it as (`from pkg.c import a2 as impl`, in the body or at
    the top, then `impl(x)`): a shim left where upstream moved the function's code into
    another file."""
    if own.name is None or not own.defined(lines):
        return False
    return _first_moved_call(lines, path, own) is not None


def _first_moved_call(lines: _Lines, path: str, own: _OwnFunction) -> int | None:
    """The first line of the function `own` names in `lines` that calls the moved function
    (as _calls_moved reads a call), or None."""
    if own.name is None:
        return None
    bare = re.split(rb"\.|::", own.name.split(b" [")[0])[-1]
    calls = [re.escape(b"." + bare + b"("), re.escape(b"::" + bare + b"(")]
    # (An alias is an import's `a2 as impl`; a call of it is `impl(` not part of another
    # name or attribute, so `obj.impl(` or `my_impl(` is no call of the moved function.)
    calls += [rb"(?<![\w.])" + re.escape(alias) + rb"\s*\("
              for alias in re.findall(rb"(?<![\w.])" + re.escape(bare) +
                                      rb"\s+as\s+([A-Za-z_]\w*)", lines.content)]
    call = re.compile(b"|".join(calls))
    if not call.search(lines.content):
        return None
    return next((k for k, line in enumerate(lines.lines)
                 if call.search(line) and lines.function_at(path, k) == own.name), None)


def _taken_out_by(store: UpstreamStore, fix: _Fix, landing: str, base: str, sha: str,
                  detail: str) -> LandingGone:
    """The fix said taken out by commit `sha` (`detail` says what it took): "reverted" where
    the commit's message names the landing, "removed" otherwise."""
    how = _names_landing(store, store.commit_message(sha), landing,
                         _landing_commits(store, fix, landing, base),
                         _pull_requests(store, fix, landing))
    return LandingGone(fix.upstream, fix.name, fix.path, "reverted" if how else "removed",
                       landing, sha, f"{detail} ({how or 'no revert of the landing'})")


def _function_taken_out(store: UpstreamStore, fix: _Fix, commit: str
                        ) -> tuple[str, str] | None:
    """(the commit, what is said) where a file of the fix has, at `commit`, none of the
    functions its hunks change, the commit that took them out added none of those names to
    another file (`fix.taken_out`, _moved_functions), the file keeps none of them any more
    (_a_name_stays: deleted, or merged into another function; not one still defined there,
    or a top-level one still called or imported), and the lines a hunk of the fix added there went with
    them: each run of them (near_runs, as a move is counted) is fewer times in the files of
    the fix's language that commit or a later one changed, at `commit`, than in them before
    that commit, and so is each line of it that tells (_added), or some of them while the
    others are as often (written again elsewhere, `"gfx1150",` in a new set of another file,
    while `"gfx1103",` went: said naming both). Every line of it still as often in them (the
    code rewritten whole in another form), the function renamed or merged into another with
    the fix's lines, or a fix that only took lines out: superseded, as before. Read as
    "superseded", a guard whose function upstream deleted was in no overlay and not upstream,
    with nothing said."""
    from collections import Counter

    from patchforge.apply.diffparse import line_content, line_kind
    from patchforge.apply.hunks import _language

    contents = store.read_blobs(commit, _paths(fix))
    # (A hunk that went whole with its function, in any file, is said before one that went
    # in part.)
    in_part: tuple[str, str] | None = None
    for k, (sha, parent, owns) in sorted(fix.taken_out.items()):
        fp = fix.files[k]
        content = _content_of(fix, k, contents)
        names = [own.name for own in owns if own.name is not None]
        if content is not None and _a_name_stays(
                _Lines(content), fp.path, owns, _base_lines(store, fix, k)):
            continue  # (the function still there, or called or imported by its name)
        named_back = _renamed_back(store, fix, k, owns, content) if content is not None \
            else None
        state = _file_state(fp, named_back) if named_back is not None else None
        if named_back is not None and state in ("present", "other") and \
                _names_held(fp, owns, named_back):
            # Renamed in place (`a2` now `_a2`, where a2 was, its body kept): judged as the
            # file would be without the rename, the fix's lines there, or written again in
            # another form (the names they add in the renamed function: `None` of
            # `if x is None or x.numel() == 0:`; not only in a look-alike), are superseded, as they are in a function
            # that kept its name; said taken out they were "removed" with advice to delete a
            # fix upstream has its own way. Its old code back there, or the guard dropped and
            # the lines under it rewritten (the fix's diff applies neither way, the names it
            # adds nowhere in the function), is said as below: read as superseded, the guard
            # was in no overlay and not upstream, with nothing said.
            continue
        removed = [run for hunk in fp.hunks for run in near_runs(hunk, b"-")]
        hunks = [(hunk, added, runs) for hunk in fp.hunks
                 if (added := _added(hunk)) and
                 (runs := [run for run in near_runs(hunk)
                           if not any(run in other for other in removed)])]
        if not hunks:
            continue
        paths = [p for p in store.changed_paths(parent, commit)
                 if _language(p) == _language(fp.path)]
        before = [c for c in store.read_blobs(parent, paths).values() if c is not None]
        after = [c for c in store.read_blobs(commit, paths).values() if c is not None]
        lines_before: Counter = Counter()
        lines_after: Counter = Counter()
        for files, counts in ((before, lines_before), (after, lines_after)):
            for c in files:
                counts.update(_squeezed_lines(c))

        def runs_in(run: bytes, files: list[bytes]) -> int:
            return sum(_near_text_of(c).count(run) for c in files if run in _near_flat_of(c))

        # Each hunk whose runs of added lines all went, with the lines that went (fewer
        # after than before) and those still as often (written again elsewhere, or other
        # code): every line gone, the hunk went with the function; some gone and some not,
        # it went in part, which the files cannot tell from code written again in another
        # form with the rest left out on purpose. Said either way: read as superseded, the
        # lines left out (RDNA targets of a list, the others moved into a set of another
        # file) were in no overlay and not upstream, with nothing said.
        went = [(hunk, [line for line in added if lines_after[line] < lines_before[line]],
                 [line for line in added if lines_after[line] >= lines_before[line]])
                for hunk, added, runs in hunks
                if all(runs_in(run, after) < runs_in(run, before) for run in runs)]
        gone = [hunk for hunk, fewer, still in went if fewer and not still]
        part = [(fewer, still) for hunk, fewer, still in went if fewer and still]
        said = ", ".join(dict.fromkeys(name.decode("utf-8", "replace") for name in names))
        if gone:
            first = next((line_content(line).strip() for line in gone[0].lines
                          if line_kind(line) == b"+" and line_content(line).strip()), b"")
            return sha, (f"commit {sha[:12]} took {said} out of {fp.path}, the function the "
                         f"fix changes, and the fix's `{first.decode('utf-8', 'replace')}` "
                         "with it, into no other function or file")
        if part and in_part is None:
            fewer = list(dict.fromkeys(line for lines, _ in part for line in lines))
            still = list(dict.fromkeys(line for _, lines in part for line in lines))
            in_part = sha, (f"commit {sha[:12]} took {said} out of {fp.path}, the function "
                            f"the fix changes, and of the fix's lines {_quoted(fp, fewer)} "
                            f"with it, into no other function or file ({_quoted(fp, still)} "
                            "as often in the files changed since as before: written again "
                            "elsewhere, or other code)")
    return in_part


def _guard_dropped(store: UpstreamStore, fix: _Fix, commit: str, landing: str
                   ) -> tuple[str, str] | None:
    """(the commit, what is said) where a hunk of the fix that adds only a guard (_guard_checks:
    a condition and an early exit, `if x is None:` + `return 0`, `if (!x) return 0;`) finds
    its function still defined at `commit` under its name, with no condition of it testing
    what the guard's condition tests (_function_checks), and the history names the commit that
    left the function so (_check_taker), having put no such check into a function that calls
    it (_check_moved_to_caller). Its diff applies neither way when upstream dropped the guard
    and rewrote the lines under it in one commit: read as the guard written again in another
    form (superseded, nothing said), it was in no overlay and not upstream. Written again in
    any form upstream has (one line, merged into another condition, an assert, a raise, the
    check inverted around the body) a condition of the function still tests it: quiet."""
    from patchforge.apply.hunks import _language

    contents = store.read_blobs(commit, _paths(fix))
    landed: dict | None = None
    for k, fp in enumerate(fix.files):
        if fp.is_new or fp.is_delete or fp.binary is not None:
            continue
        language = _language(fp.path)
        content = _content_of(fix, k, contents)
        if language is None or content is None:
            continue
        lines = _Lines(content)
        for n, hunk in enumerate(fp.hunks, 1):
            checks = _guard_checks(hunk, language)
            if not checks:
                continue
            own = _OwnFunction(store, fix, k, n)
            if own.name is None or not own.defined(lines):
                continue  # (a function renamed or taken out: _function_taken_out's)
            if landed is None:
                landed = store.read_blobs(landing, _paths(fix))
            there = _content_of(fix, k, landed)
            allowed = None
            if there is not None:
                read = _landed_branch if language == "python" else _c_landed_branch
                checks = read(checks, _Lines(there), fp.path, own.name, hunk)
                allowed = _read_above_the_guard(_Lines(there), fp.path, own.name, checks,
                                                language)
            dropped = [(line, check) for line, check in checks
                       if not _function_checks(lines, fp.path, own.name, check, allowed)]
            if not dropped:
                continue
            lost = [check for _, check in dropped]
            taker = _check_taker(store, fix, k, own, lost, landing, commit, allowed)
            if taker is None or _check_moved_to_caller(store, fix, k, own, lost, taker):
                continue
            sha, _ = taker
            first = dropped[0][0].decode("utf-8", "replace")
            name = own.name.decode("utf-8", "replace")
            said = ", ".join(f"`{word.decode('utf-8', 'replace')}`"
                             for word in sorted(set().union(*(check[0] for check in lost))))
            return sha, (f"commit {sha[:12]} took the fix's guard `{first}` out of {name} in "
                         f"{fp.path}, the function the fix changes, which it kept: no condition "
                         f"of it tests {said} as the guard did any more")
    return None


def _read_above_the_guard(lines: _Lines, path: str, name: bytes,
                          checks: list[tuple[bytes, _Check]], language: str
                          ) -> frozenset[tuple[bytes, ...]]:
    """The statements of the function `name` as the landing left it (`lines`) that read the
    values the guards (`checks`) check above the last of them (_Work.statements_read): work
    the fix's guard did not guard, so a copy of it below them still guards what the guard
    did. Every statement reading them where no guard's `if` line is found."""
    statements, _ = _statements_built(lines, path, name, language)
    values = frozenset().union(*(_values_of(check) for _, check in checks))
    work = _Work(statements, language, values, frozenset(),
                 condition=checks[0][1][1] if checks else ())
    if language == "python":
        places = [k for k, (_, held) in enumerate(statements)
                  for line, _ in checks if held == _code_tokens(line, literals=True)]
        end = len(statements)
    else:
        firsts = [_unattributed(_code_tokens(line, literals=True)) for line, _ in checks]
        places = [k for k in range(len(work.tokens)) for first in firsts
                  if work.tokens[k:k + len(first)] == first]
        end = len(work.tokens)
    return frozenset(work.statements_read(max(places, default=end)))


def _landed_branch(checks: list[tuple[bytes, _Check]], lines: _Lines, path: str, name: bytes,
                   hunk) -> list[tuple[bytes, _Check]]:
    """`checks` (_guard_checks) with the conditions each guard sits in read from the function
    `name` as the landing left it (_branch_of, as upstream's exits are read: `if STRICT:`
    ten lines above the guard, beyond the hunk's context, counted), where it holds the
    guard's `if` once, or more than once and one of them has the hunk's lines around it
    most (_hunk_place: the same guard in two loops read in its own); as the hunk's context
    shows them (_enclosing) otherwise."""
    statements = _statements_of(lines, path, name)
    found = []
    for line, check in checks:
        tokens = _code_tokens(line, literals=True)
        at = [k for k, (_, held) in enumerate(statements) if held == tokens]
        if len(at) > 1:
            place = _hunk_place(lines, path, name, hunk, line, len(at))
            at = [at[place]] if place is not None else []
        word = _exit_word(statements, at[0]) if len(at) == 1 else None
        branch = _branch_of(statements, at[0], word in _LOOP_EXITS, word == b"raise") \
            if len(at) == 1 else None
        found.append((line, check if branch is None else check[:2] + (tuple(_joined(branch)),)))
    return found


def _c_landed_branch(checks: list[tuple[bytes, _Check]], lines: _Lines, path: str, name: bytes,
                     hunk) -> list[tuple[bytes, _Check]]:
    """_landed_branch of C guards: the blocks each sits in as the landing left the function
    (_c_frames, _c_held, as upstream's exits are read: a guard the fix put in a lambda's body
    is kept by its copy there), where the function holds the guard's `if` line once, or one
    of them has the hunk's lines around it most (_hunk_place); none otherwise (a `continue`
    or `break` guard in a loop not known: _ANY_LOOP)."""
    statements, compiled = _statements_built(lines, path, name, "c")
    tokens = [token for _, more in statements for token in more]
    frames = _c_frames(tokens)
    built = _c_built(statements, compiled)
    found = []
    for line, check in checks:
        first = _unattributed(_code_tokens(line, literals=True))
        at = [k for k in frames if tokens[k:k + len(first)] == first]
        if len(at) > 1:
            place = _hunk_place(lines, path, name, hunk, line, len(at))
            at = [at[place]] if place is not None else []
        close = _closing(tokens, at[0] + 1) if len(at) == 1 else None
        if close is None:
            outer = check[2]
            if _c_guard_word(hunk, first) in _LOOP_EXITS:
                outer = (b"(", _ANY_LOOP, b")")
        else:
            word = _c_exit_word(tokens, close + 1)
            outer = tuple(_joined(_c_held(frames[at[0]][0], word, tokens, at[0]) +
                                  built(at[0])))
        found.append((line, check[:2] + (outer,)))
    return found


def _c_guard_word(hunk, first: list[bytes]) -> bytes | None:
    """The exit word (`return`, `continue`...) of the C guard whose `if` line's code tokens
    are `first`, as the hunk adds it."""
    from patchforge.apply.diffparse import line_content, line_kind

    added = _unattributed([token for body in hunk.lines if line_kind(body) == b"+"
                           for token in _code_tokens(line_content(body), literals=True)])
    at = next((k for k in range(len(added)) if added[k:k + len(first)] == first), None)
    close = _closing(added, at + 1) if at is not None else None
    return _c_exit_word(added, close + 1) if close is not None else None


def _hunk_place(lines: _Lines, path: str, name: bytes, hunk, first: bytes, many: int
                ) -> int | None:
    """Which of the `many` lines of the function `name` in `lines` that are the guard's `if`
    line `first` (stripped, in order) has the most of the hunk's lines (its context and
    added lines, stripped) at the same distance around it; None where none has more than
    the others, or the lines are not `many`."""
    from patchforge.apply.diffparse import line_content, line_kind

    shown = [line_content(body).rstrip(b"\r\n").strip() for body in hunk.lines
             if line_kind(body) in (b" ", b"+")]
    if first not in shown:
        return None
    mine = shown.index(first)
    places = [j for j, text in enumerate(lines.lines)
              if text.strip() == first and lines.function_at(path, j) == name]
    if len(places) != many:
        return None
    scores = [sum(0 <= j + d < len(lines.lines) and lines.lines[j + d].strip() == text
                  for d, text in ((k - mine, text) for k, text in enumerate(shown))
                  if text) for j in places]
    best = max(scores)
    return scores.index(best) if scores.count(best) == 1 else None


# The words of a guard's condition that name no value of its own (_check_of).
_CHECK_SYNTAX = {b"if", b"not", b"is", b"and", b"or", b"in", b"None", b"True", b"False",
                 b"NULL", b"nullptr", b"true", b"false", b"sizeof"}
# An early exit (the first word of a guard's last statement), and how many statements (lines
# of a Python block) a guard's body holds at most: a log line or two, then the exit.
_EXITS = {b"return", b"raise", b"continue", b"break", b"throw", b"goto"}
# The exits that leave a loop's body, not the function: what they skip is the rest of the
# loop's body, so the ifs around the loop are not read with them (_branch_of).
_LOOP_EXITS = {b"continue", b"break"}
_GUARD_BODY = 3
# The exits that leave the function itself (_earlier_branches), and C's (_exits_of).
_LEAVES = {b"return", b"raise"}
_C_LEAVES = {b"return", b"throw"}
# A call named as a check: its first argument is a condition it tests (_checked_arguments:
# `TORCH_CHECK(x != nullptr, ...)`, `torch._check(x is not None)`, C's `assert(x)`).
_CHECK_CALL = on_first_use(rb"(?i)check|assert|expect|require|ensure|valid|verif")


# A guard's check: the names its condition checks (`x` of `if x is None:`: its code's
# identifiers other than syntax and constants; `x` and `numel` of `if (x.numel() == 0)`), the
# condition's code tokens (`x`, `is`, `None`), and the conditions of the ifs the guard sits in
# (_enclosing), joined by `and`: the guard leaves where they hold too.
_Check = tuple[frozenset[bytes], tuple[bytes, ...], tuple[bytes, ...]]


def _check_of(condition: list[bytes]) -> _Check:
    """The _Check of a guard's condition, given as its code tokens (no enclosing if)."""
    return frozenset(token for token in condition
                     if _WORD.fullmatch(token) and token not in _CHECK_SYNTAX), \
        tuple(condition), ()


def _enclosing(hunk, first: bytes) -> tuple[bytes, ...]:
    """The conditions of the Python ifs the hunk's context shows the guard whose `if` line is
    `first` (stripped) sitting in, joined by `and` (`a > 1` of `if a > 1:` + `if skip:` +
    `return y`: the guard leaves where both hold); none where the context shows none. Read
    from the context line above the hunk's first added line upwards: each line indented less
    than the one below it that is read opens the block that one sits in; an `if` or `elif`
    on one line counts its condition (an `elif`'s earlier branches left out: the guard read
    as leaving in more cases than it does, kept by fewer checks), a loop's header that its
    body runs at all (_loop_runs; a `continue` or `break` guard's reading ends at its
    loop), anything else (`else:`, `def`, a condition wrapped over lines) ends the reading.
    A `continue` or `break` guard whose reading ends before its loop sits in a loop not
    known: _ANY_LOOP joined in, the loop of upstream's check is not read for it
    (_guard_kept). (Any other guard's reading ending early reads it as leaving in more cases
    than it does: kept by fewer checks.)"""
    from patchforge.apply.diffparse import line_content, line_kind

    lines = [(line_kind(body), line_content(body).rstrip(b"\r\n")) for body in hunk.lines]
    at = next((k for k, (kind, line) in enumerate(lines)
               if kind == b"+" and line.strip() == first), None)
    if at is None:
        return ()
    guard = lines[at][1]
    indent = len(guard) - len(guard.lstrip())
    below: list[list[bytes]] = []
    for kind, line in lines[at + 1:]:
        if kind != b"+" or not _code_tokens(line):
            continue
        if len(line) - len(line.lstrip()) <= indent:
            break
        below.append(_code_tokens(line))
    tokens = _code_tokens(guard, literals=True)
    inline = tokens[_top_level(tokens, 1, {b":"}) + 1:]
    to_loop = (inline or (below[-1] if below else [b""]))[0] in _LOOP_EXITS
    outer: list[bytes] = []
    known = False  # (a `continue` or `break` guard's loop read)
    for kind, line in reversed(lines[:at]):
        if kind not in (b" ", b"+"):
            continue
        tokens = _code_tokens(line, literals=True)
        depth = len(line) - len(line.lstrip())
        if not tokens or depth >= indent:
            continue
        colon = _top_level(tokens, 1, {b":"})
        if tokens[0] not in (b"if", b"elif", b"for", b"while") or \
                colon != len(tokens) - 1 or colon < 2:
            break
        held = _loop_runs(tokens, to_loop) if tokens[0] in (b"for", b"while") \
            else tokens[1:colon]
        if held:
            outer = [b"("] + held + [b")"] + ([b"and"] + outer if outer else [])
        indent = depth
        if to_loop and tokens[0] in (b"for", b"while"):
            known = True
            break
    if to_loop and not known:
        outer = [b"(", _ANY_LOOP, b")"] + ([b"and"] + outer if outer else [])
    return tuple(outer)


def _guard_checks(hunk, language: str) -> list[tuple[bytes, _Check]]:
    """For a hunk that only adds lines, each of them (blank and comment lines aside) part of
    a guard (a condition and, as its last statement, an early exit: `if x is None:` +
    `return 0`, `if x is None: raise ValueError()`; `if (!x) return 0;`, `if (!x) {` ...
    `return 0;` `}`): each guard's `if` line, stripped, and the words its condition checks
    (_Check). Empty for any other hunk, and for a guard checking no name."""
    from patchforge.apply.diffparse import line_content, line_kind

    if any(line_kind(body) == b"-" for body in hunk.lines):
        return []
    added = [line_content(body).rstrip(b"\r\n") for body in hunk.lines
             if line_kind(body) == b"+"]
    code = [line for line in added if _code_tokens(line)]
    if not code or any(line.lstrip().startswith(b"#") for line in code if language == "c"):
        return []
    guards = _python_guards(code) if language == "python" else _c_guards(code)
    if not guards or any(not check[0] for _, check in guards):
        return []
    if language == "python":
        guards = [(line, check[:2] + (_enclosing(hunk, line),)) for line, check in guards]
    return guards


def _python_guards(code: list[bytes]) -> list[tuple[bytes, _Check]]:
    """_guard_checks of Python lines (code only): each `if ...:` with its body on its line or
    on the lines below, deeper, whose last statement (at the body's depth) is an exit."""
    guards = []
    j = 0
    while j < len(code):
        line = code[j]
        indent = len(line) - len(line.lstrip())
        tokens = _code_tokens(line, literals=True)
        if tokens[0] != b"if":
            return []
        depth, colon = 0, None
        for i, token in enumerate(tokens):
            depth += token in (b"(", b"[", b"{")
            depth -= token in (b")", b"]", b"}")
            if token == b":" and depth == 0:
                colon = i
                break
        if colon is None:
            return []
        inline = tokens[colon + 1:]
        body = []
        j += 1
        while j < len(code) and len(code[j]) - len(code[j].lstrip()) > indent:
            body.append(code[j])
            j += 1
        if inline:
            if body or inline[0] not in _EXITS:
                return []
        else:
            if not body or len(body) > _GUARD_BODY:
                return []  # (a longer block is a branch of other work, not a guard)
            depth_of = len(body[0]) - len(body[0].lstrip())
            last = [line for line in body if len(line) - len(line.lstrip()) == depth_of][-1]
            if _code_tokens(last)[0] not in _EXITS:
                return []
        guards.append((line.strip(), _check_of(tokens[1:colon])))
    return guards


def _c_guards(code: list[bytes]) -> list[tuple[bytes, _Check]]:
    """_guard_checks of C-family lines (code only): each `if (...)` and the statement or the
    braced block after it, whose last statement is an exit."""
    tokens: list[tuple[bytes, int]] = [(token, j) for j, line in enumerate(code)
                                       for token in _unattributed(_code_tokens(line,
                                                                               literals=True))]
    guards = []
    i = 0
    while i < len(tokens):
        if tokens[i][0] != b"if" or i + 1 >= len(tokens) or tokens[i + 1][0] != b"(":
            return []
        depth, end = 0, None
        for e in range(i + 1, len(tokens)):
            depth += tokens[e][0] == b"("
            depth -= tokens[e][0] == b")"
            if depth == 0:
                end = e
                break
        if end is None or end + 1 >= len(tokens):
            return []
        condition = [token for token, _ in tokens[i + 2:end]]
        first = code[tokens[i][1]].strip()
        rest = end + 1
        if tokens[rest][0] == b"{":
            close = next((e for e in range(rest + 1, len(tokens))
                          if tokens[e][0] in (b"{", b"}")), None)
            if close is None or tokens[close][0] != b"}":
                return []  # (a nested block, or none closed: not read)
            statements: list[list[bytes]] = [[]]
            for token, _ in tokens[rest + 1:close]:
                if token == b";":
                    statements.append([])
                else:
                    statements[-1].append(token)
            done = [statement for statement in statements if statement]
            if not done or done[-1][0] not in _EXITS or statements[-1] or \
                    len(done) > _GUARD_BODY:
                return []
            i = close + 1
        else:
            semi = next((e for e in range(rest, len(tokens)) if tokens[e][0] == b";"), None)
            if semi is None or tokens[rest][0] not in _EXITS or \
                    any(token in (b"{", b"}") for token, _ in tokens[rest:semi]):
                return []
            i = semi + 1
        guards.append((first, _check_of(condition)))
    return guards


def _function_checks(lines: _Lines, path: str, name: bytes, check: _Check,
                     allowed: frozenset[tuple[bytes, ...]] | None = None) -> bool:
    """Whether the function `name` in `lines` (the file at `path`) still makes the guard's
    check (`check`): read as what ends the function early or skips its work (_exits_of), it
    leaves where the guard did. `if x is None: return 0` is kept by that check written again
    (one line, `x == None`, a raise), merged into another condition by `or` (`if x is None or
    x.numel() == 0:`, the conditions in any order or in brackets), an assert or a call named
    as a check testing the converse (`assert x is not None`), or the converse around the body
    (`if x is not None:`); a guard of several conditions (`if x is None or y is None:`) by
    checks of its parts (two ifs), each read as its whole statement (its condition wrapped
    over lines). A check of its name testing something else (`if x.dim() > 2:` + `raise`,
    `if x.numel() == 0: return 0`), narrowing it (`if x is None and strict: return 0`), the
    same condition without an exit (`if x is None:` + `x = default`) or no check at all
    (`x = x or default`) keeps nothing. A helper named as a check called with the values it
    reads keeps it (_delegated), as does its condition carried through a name assigned it
    once and tested after it (`missing = x is None` + `if missing: return 0`, _carried); a
    guard inside an if (`check`'s third part, _enclosing) is kept by a check of both. So is
    the condition with names of it replaced by others, where a name of it stays
    (`parsed_args.print_vgpr` for `args.print_vgpr`) or each one replaced is nowhere in the
    function any more (`inp is None` for `x is None`, the parameter renamed): read as
    dropped, the guard upstream kept under a new name was said taken out. A name the file
    binds once to a literal, at the module's top level or in the function, reads as its
    value too (_constants: `GELU = "gelu"` + `if act == GELU:` keeps `if act == 'gelu':`).
    With `allowed` (the statements reading the guard's values that it had above it at the
    landing, _Work), a check keeps it only above the function's other reads of them: one
    below the work, or jumping to a label above it, guards none of it."""
    from patchforge.apply.hunks import _language

    language = _language(path) or "c"
    statements, compiled = _statements_built(lines, path, name, language)
    own = _rebound_exceptions(lines, statements) if language == "python" else set()
    if own:
        # (A builtin exception's name the module binds to its own class reads as a class
        # not known: `raise ValueError('x')` in a `try:` whose `except KeyError:` may be it.)
        statements = [(indent, [b"<own " + token + b">" if token in own and
                                (k == 0 or tokens[k - 1] != b".") else token
                                for k, token in enumerate(tokens)])
                      for indent, tokens in statements]
    named = {token for _, tokens in statements for token in tokens}
    gone = {word for word in check[0] if word not in named}
    if _delegated(statements, check):
        return True
    placed = _placed_exits(statements, language, compiled)
    steady = _steady_tests(statements)
    constants = _constants(lines, statements, language)
    if constants:
        # (Read as written and with each constant's value in its place: `if act == GELU:`
        # keeps both `if act == GELU:` and, where GELU is "gelu", `if act == 'gelu':`.)
        placed += _placed_exits(_with_values(statements, constants), language)
    if not _holds_guard(set().union(*(ways for _, _, ways in placed)), check, language, gone,
                        steady):
        return False
    work = _Work(statements, language, _values_of(check), allowed, compiled, check[1]) \
        if allowed is not None else None
    if work is None:
        return True
    # (And each read of the guard's values kept from running where the guard leaves, by the
    # checks above it: a copy below the work, or in a branch the work is not in, keeps
    # nothing of it. Reads kept by the same checks are read once.)
    read: set[tuple[frozenset[frozenset[_Literal]], tuple[bytes, ...]]] = set()
    for at in work.reads:
        exits, held = work.guarding(placed, at)
        # (Where the read runs only under conditions of its own, the guard need leave only
        # there: `if n > 0:` + a copy + the read keeps the guard for that read.)
        outer = tuple(_joined(([list(check[2])] if check[2] else []) + (held or [])))
        if (frozenset(exits), outer) not in read:
            read.add((frozenset(exits), outer))
            if not _holds_guard(exits, check[:2] + (outer,), language, gone, steady):
                return False
    return True


# The words binding the name after them (_constants): a name they bind is no constant.
_BINDS = {b"import", b"as", b"for", b"def", b"class", b"global", b"nonlocal", b"del",
          b"lambda"}


def _constants(lines: _Lines, statements: list[tuple[int, list[bytes]]], language: str
               ) -> dict[bytes, list[bytes]]:
    """The Python names the function's `statements` read that the file binds once, to a
    literal (a string, a number, `True`, `False`, `None`, or a tuple, list or set of them),
    at the module's top level or in the function itself, each with its value's code tokens:
    `GELU = "gelu"`, `SKIP = ("gelu", "silu")`. A name bound anywhere else or more than once
    (another assignment of it, an import, a `for`, a parameter, `global`), or to anything
    else, is no constant: what it holds where a condition tests it is not known."""
    if language != "python":
        return {}
    wanted = {token for _, tokens in statements if tokens[0] not in (b"def", b"async", b"@")
              for k, token in enumerate(tokens) if _WORD.fullmatch(token) and
              not keyword.iskeyword(token.decode("ascii", "replace")) and
              (k == 0 or tokens[k - 1] != b".")}
    if not wanted:
        return {}
    parameters = next((set(tokens) for _, tokens in statements
                       if tokens[0] in (b"def", b"async")), set())
    pattern = re.compile(rb"\b(?:" + b"|".join(re.escape(name) for name in sorted(wanted)) +
                         rb")\b")
    bound: Counter = Counter()
    values: dict[bytes, list[bytes]] = {}
    own = {tuple(tokens) for _, tokens in statements}
    for j, line in enumerate(lines.lines):
        if not pattern.search(line):
            continue
        tokens = _code_tokens(line, literals=True)
        equal = _top_level(tokens, 0, {b"="})
        binding = set(tokens) & _BINDS
        for k, token in enumerate(tokens):
            if token not in wanted or (k and tokens[k - 1] == b"."):
                continue
            # (Bound: a target of an assignment (`GELU = ...`, `GELU += ...`, `a, GELU =
            # ...`), `GELU := ...`, any name on a line binding names (`import`, `as`, `for`,
            # `global`), a parameter (a `def`'s name not after a default's `=`).)
            if (equal < len(tokens) and k < equal) or \
                    tokens[k + 1:k + 3] == [b":", b"="] or \
                    (binding and not (binding <= {b"def", b"lambda"} and tokens[k - 1] == b"=")):
                bound[token] += 1
        if equal == len(tokens) or equal == 0:
            continue
        target = tokens[:equal]
        if len(target) == 3 and target[1] == b":":
            target = target[:1]  # (annotated: `GELU: str = "gelu"`)
        if len(target) != 1 or target[0] not in wanted:
            continue
        indent = len(line) - len(line.lstrip())
        value = tokens[equal + 1:]
        # (A value over several lines, `SKIP = (` + `"gelu",` + `)`: joined while a bracket
        # stays open.)
        more = j + 1
        while value and sum(t in (b"(", b"[", b"{") for t in value) > \
                sum(t in (b")", b"]", b"}") for t in value) and more < len(lines.lines) and \
                more - j < _STATEMENT_LINES:
            value = value + _code_tokens(lines.lines[more], literals=True)
            more += 1
        if (indent == 0 or tuple(tokens) in own) and _literal_value(value):
            values[target[0]] = value if _literal_value(value) != "tuple" or \
                value[0] in (b"(", b"[", b"{") else [b"("] + value + [b")"]
    return {name: value for name, value in values.items()
            if bound[name] == 1 and name not in parameters}


def _literal_value(tokens: list[bytes]) -> str | None:
    """"one" where the Python code `tokens` are one literal (a string, a number, `True`,
    `False`, `None`, `-1`), "tuple" where a tuple, list or set of at least one such literal
    (bracketed or not), None otherwise."""
    if tokens[:1] == [b"-"] and len(tokens) == 2:
        tokens = tokens[1:]
    if len(tokens) == 1:
        token = tokens[0]
        if token in (b"True", b"False", b"None") or token[:1].isdigit() or \
                (len(token) > 1 and token[:1] == b'"' and token != b'"..."'):
            return "one"
        return None
    items = _members(tuple(_bare(tokens)), "python")
    if items and all(_literal_value(list(item)) == "one" for item in items):
        return "tuple"
    return None


def _with_values(statements: list[tuple[int, list[bytes]]], constants: dict[bytes, list[bytes]]
                 ) -> list[tuple[int, list[bytes]]]:
    """`statements` with each name of `constants` they read replaced by its value (not a
    name bound there, `GELU = ...`, nor an attribute, `acts.GELU`)."""
    replaced = []
    for indent, tokens in statements:
        if tokens[0] in (b"def", b"async", b"@"):
            replaced.append((indent, tokens))
            continue
        out: list[bytes] = []
        for k, token in enumerate(tokens):
            if token in constants and (k == 0 or tokens[k - 1] != b".") and \
                    tokens[k + 1:k + 2] != [b"="] and not (k == 0 and tokens[1:2] == [b":"]):
                out.extend(constants[token])
            else:
                out.append(token)
        replaced.append((indent, out))
    return replaced


def _delegated(statements: list[tuple[int, list[bytes]]], check: _Check) -> bool:
    """Whether a statement calls a helper named as a check with the values the guard's
    condition reads, and nothing else, as its arguments (`check_limit(limit)` for `if limit
    < 0:` + `raise`, `validate(x, y)` for `if x is None or y is None:`): upstream moved the
    guard into a helper of its own, what the helper tests is not read here. An assertion
    (`assert(x)`, `torch._check(x)`, `TORCH_CHECK(x, ...)`: a macro's name in capitals) tests
    its argument itself (_exits_of)."""
    words, condition, _ = check
    values = {token for k, token in enumerate(condition) if token in words and
              (k == 0 or condition[k - 1] not in (b".", b"->", b"::"))}
    if not values:
        return False
    for _, tokens in statements:
        for k, token in enumerate(tokens[:-1]):
            if tokens[k + 1] != b"(" or not _WORD.fullmatch(token) or \
                    not _CHECK_CALL.search(token) or token.upper() == token or \
                    token in (b"assert", b"_check") or (k and tokens[k - 1] == b"def"):
                continue
            close = _closing(tokens, k + 1)
            inside = tokens[k + 2:close if close is not None else len(tokens)]
            names = [part for part in inside if part != b","]
            if names and all(_WORD.fullmatch(part) for part in names) and \
                    values <= set(names):
                return True
    return False


# A test of a condition, read alike for the test and its converse (_test_form), and whether
# it is the test (True) or its converse (False): `x is None` is (("none", x), True).
_Literal = tuple[tuple, bool]
# How many ways a condition reads at most when spread over its `or`s (_ways): past it, the
# condition is not read (it keeps no guard).
_MOST_WAYS = 32


def _holds_guard(exits: set[frozenset[_Literal]], check: _Check, language: str,
                 gone: set[bytes] | None, steady: Callable[[tuple], bool] | None = None) -> bool:
    """Whether the checks of a function, as the ways they leave (`exits`: each a set of tests
    that together make one of its checks leave), leave wherever the guard (`check`) does:
    each way the guard leaves (a set of tests, `x is None` of `if x is None or y is None:`)
    holds all the tests of one of `exits`. With names of the guard replaced by others, where
    `gone` (the names the function no longer has) lets them be (_function_checks); with none
    replaced where `gone` is None. `steady`: the tests exits may be read together on
    (_guard_kept)."""
    words, condition, outer = check
    if _guard_kept(exits, condition, words, language, outer, steady):
        return True
    if gone is None:
        return False
    tests = {literal[0] for way in exits for literal in way}
    options: list[dict[bytes, bytes]] = [{}]
    for form in {literal[0] for way in _ways(_boolean(list(condition), language)) or []
                 for literal in way}:
        found = [given for given in (_given(have, form, words) for have in tests)
                 if given is not None]
        options = [{**was, **given} for was in options for given in found + [{}]
                   if all(was.get(word, to) == to for word, to in given.items())][:64]
    for given in options:
        # (Each replaced by a name of its own: `x is None or y is None` is not kept by `x is
        # None` where y is gone.)
        if given and (set(given) < words or set(given) <= gone) and \
                len(set(given.values())) == len(given) and not set(given.values()) & words:
            renamed = [given.get(token, token) for token in condition]
            if _guard_kept(exits, tuple(renamed), frozenset(given.get(word, word)
                                                             for word in words), language,
                           outer, steady):
                return True
    return False


def _guard_kept(exits: set[frozenset[_Literal]], condition: tuple[bytes, ...],
                words: frozenset[bytes], language: str, outer: tuple[bytes, ...] = (),
                steady: Callable[[tuple], bool] | None = None) -> bool:
    """Whether each way the guard of `condition` leaves (its tests naming one of `words`)
    holds one of `exits` whole (a test it implies counted in: `not x` where `x is None`).
    With the conditions of the ifs it sits in (`outer`, _enclosing) the guard leaves only
    where they hold too: `a > 1 and skip` keeps `if skip:` + `return y` inside `if a > 1:`,
    the way it leaves there read with them, an exit of the function counted where it tests
    something of the guard's own (the if it sits in ending in a `return` keeps nothing).
    Exits that together leave wherever a way does count as one (_always: a copy in each
    branch of an if/else, each path through one of them), read together only on the tests
    `steady` holds for (_steady_tests; none where not given)."""
    ways = _ways(_boolean(list(condition), language))
    if not ways:
        return False
    ways = [way for way in ways if any(word in words for (form, _) in way
                                       for side in form[1:] for word in side)]
    # (Where `x is None` holds, so does `not x`: `if not x: return 0` leaves there too.)
    ways = [way | {((b"truth", form[1], ()), False) for form, sense in way
                   if form[0] == b"none" and sense} for way in ways]
    # (Where `n == 0` holds, so does `not n`, and `n` where `n != 0` does: `if not n: return
    # 0` leaves where `if n == 0:` did; `x == ""` and `len(x) == 0` alike. Not the other way
    # round: `not n` holds for None too.)
    ways = [way | {((b"truth", side, ()), not sense) for form, sense in way
                   for side in _zero_of(form, language)} for way in ways]
    # (Where `a == b` holds, so does `a in (b, c)`: upstream widened the guard's test to a
    # literal list, tuple or set holding b, `if a in ("b", "c"):`, or wrote it `a in [b]`.)
    members = {literal for leave in exits for literal in leave if literal[1] and
               literal[0][0] == b"in" and _members(literal[0][2], language)}
    ways = [way | {literal for literal in members if any(
        ((b"equal",) + tuple(sorted((literal[0][1], member))), True) in way
        for member in _members(literal[0][2], language))} for way in ways]
    # (Where `n == 0` holds, so do `n <= 0` and `n >= 0`, and where `n < 0` does, `n <= 0`:
    # upstream widening the guard's bound, `if n <= 0: return 0` for `if n == 0:`, leaves
    # there too. Not the other way round: `n <= 0` holds where `n == 0` does not.)
    ways = [way | {bound for literal in way for bound in _bounds_of(literal, language)}
            for way in ways]
    # (Where `x is None` holds, so does `not isinstance(x, T)`, `not torch.is_tensor(x)`,
    # `not hasattr(x, "shape")`: upstream widening `if x is None:` to any x not a tensor.)
    typed = {literal for leave in exits for literal in leave
             if not literal[1] and literal[0][0] == b"truth" and
             _type_tested(literal[0][1], language) is not None}
    ways = [way | {literal for literal in typed if (
        (b"none", _type_tested(literal[0][1], language), ()), True) in way} for way in ways]
    around = (_ways(_boolean(list(outer), language)) if outer else None) or [frozenset()]
    # (Where the loops the guard sits in are not known, no loop of upstream's narrows it.)
    unlooped = {leave: frozenset(literal for literal in leave if not _is_loop(literal))
                for leave in exits}
    if not ways:
        return False
    for way in ways:
        for more in around:
            held = way | more
            if any((form, not sense) in held for form, sense in held):
                continue  # (where the guard leaves, the conditions it sits in fail)
            any_loop = any(_is_loop(literal) and literal[0][1] == (_ANY_LOOP,)
                           for literal in more)
            # (Each exit testing something of the guard's own, with what it tests beyond the
            # guard's way: nothing where it leaves wherever the guard does.)
            rest = [(unlooped[leave] if any_loop else leave) - held for leave in exits
                    if leave & way]
            if not any(not beyond for beyond in rest) and (steady is None or not _always(
                    [beyond for beyond in rest
                     if not any((form, not sense) in held for form, sense in beyond)], steady)):
                return False
    return True


# How many exits, and how many tests deep, _always reads at most: past it, not read (the
# exits keep nothing together).
_MOST_EXITS, _MOST_SPLITS = 64, 8


def _always(ways: list[frozenset[_Literal]], steady: Callable[[tuple], bool],
            depth: int = 0) -> bool:
    """Whether at least one of `ways` (each a set of tests holding together) holds whatever
    the tests are: where one test (a form `steady` holds for: its value the same wherever
    the function tests it) is held by some ways and its converse by others, each side is
    read on (the guard's copy in both branches of an if/else, `if n > 0:` + `if x is None:
    return 0` / `else:` + the same, leaves wherever x is None, each path through one copy).
    Tests are read as independent of each other otherwise, which can only miss a way."""
    if any(not way for way in ways):
        return True
    if not ways or len(ways) > _MOST_EXITS or depth >= _MOST_SPLITS:
        return False
    senses: dict[tuple, set[bool]] = {}
    for way in ways:
        for form, sense in way:
            senses.setdefault(form, set()).add(sense)
    split = next((form for form, both in senses.items() if len(both) == 2 and steady(form)),
                 None)
    if split is None:
        return False  # (every test one way only: where each fails, none leaves)
    return all(_always([way - {(split, sense)} for way in ways if (split, not sense) not in way],
                       steady, depth + 1) for sense in (True, False))


# The words after which a name is written (_steady_tests), and those a bracket after is no
# call's.
_WRITES_NEXT = {b"&", b"for", b"as", b"del", b"global", b"nonlocal"}
_NO_CALL = {b"if", b"elif", b"while", b"for", b"switch", b"return", b"and", b"or", b"not",
            b"in", b"is", b"assert", b"sizeof", b"yield", b"await", b"throw", b"catch"}


def _steady_tests(statements: list[tuple[int, list[bytes]]]) -> Callable[[tuple], bool]:
    """Whether a test's form (_test_form) has the same value wherever the function of
    `statements` tests it, so that two ifs testing it and its converse cover every path
    (_always): it calls nothing and reads no attribute or item (`n > 0`, `FAST`, a
    preprocessor condition; not `x.dim() > 2`, `use_fast()`), and no name of it is written
    anywhere in the function, as far as its lines tell: before a `=` (an assignment, an
    update, a keyword argument alike), beside `++` or `--`, after `&` (its address taken),
    `for`, `as`, `del`, `global` or `nonlocal`, or passed bare to a call (a C++ reference,
    a Python list it may change)."""
    written: set[bytes] = set()
    for _, tokens in statements:
        if tokens[0] in (b"def", b"async", b"class", b"@"):
            continue
        last = max((k for k, token in enumerate(tokens) if token == b"="), default=-1)
        for k, token in enumerate(tokens):
            if not _WORD.fullmatch(token):
                continue
            if k < last or (k and tokens[k - 1] in _WRITES_NEXT) or \
                    tokens[max(k - 2, 0):k] in ([b"+", b"+"], [b"-", b"-"]) or \
                    tokens[k + 1:k + 3] in ([b"+", b"+"], [b"-", b"-"]):
                written.add(token)
            elif tokens[k + 1:k + 2] == [b"("] and token not in _NO_CALL:
                close = _closing(tokens, k + 1)
                written.update(part[0] for part in _split_top(tokens[k + 2:close])
                               if len(part) == 1 and _WORD.fullmatch(part[0]))

    def steady(form: tuple) -> bool:
        tokens = [token for side in form[1:] for token in side]
        return not any(token in (b"(", b".", b"->", b"[") or token in written
                       for token in tokens)
    return steady


def _is_loop(literal: _Literal) -> bool:
    """Whether a test is a loop's running at all (_loop_runs)."""
    form = literal[0]
    return form[0] == b"truth" and len(form[1]) == 1 and form[1][0].startswith(b"<loop: ")


def _bounds_of(literal: _Literal, language: str) -> list[_Literal]:
    """The bounds a test holding implies (_test_form's forms): `a < b` holds `not b < a` (`b
    >= a`); `n == 0`, a value compared with a number, holds `not n < 0` and `not 0 < n` (`n >=
    0`, `n <= 0`), as C's `!n` does (`n == 0` read so: _test_form)."""
    form, sense = literal
    if form[0] == b"order" and sense:
        return [((b"order", form[2], form[1]), False)]
    if form[0] == b"truth" and not sense and language != "python" and form[1]:
        sides = [form[1], (b"0",)]
    elif form[0] == b"equal" and sense and any(len(side) == 1 and side[0][:1].isdigit()
                                               for side in form[1:]):
        sides = [form[1], form[2]]
    else:
        return []
    return [((b"order", sides[0], sides[1]), False), ((b"order", sides[1], sides[0]), False)]


# The types whose test holds for None (`isinstance(x, object)`, `Optional[...]`): a test of
# them keeps no guard on None (_type_tested).
_HOLDS_NONE = {b"None", b"NoneType", b"type", b"object", b"Optional", b"Any"}


def _type_tested(tokens: tuple[bytes, ...], language: str) -> tuple[bytes, ...] | None:
    """The value a Python type test reads (`x` of `isinstance(x, torch.Tensor)`,
    `torch.is_tensor(x)`, `hasattr(x, "shape")`), which is false where it is None; None for
    anything else, or a type None is of."""
    if language != "python" or len(tokens) < 4 or tokens[-1] != b")":
        return None
    call = 1 if tokens[:2] == (b"isinstance", b"(") or tokens[:2] == (b"hasattr", b"(") else \
        3 if tokens[:4] == (b"torch", b".", b"is_tensor", b"(") else \
        1 if tokens[:2] == (b"is_tensor", b"(") else None
    if call is None or _closing(list(tokens), call) != len(tokens) - 1:
        return None
    inside = list(tokens[call + 1:-1])
    comma = _top_level(inside, 0, {b","})
    value = tuple(_bare(inside[:comma]))
    rest = set(inside[comma + 1:])
    if not value or (tokens[0] == b"isinstance" and (comma == len(inside) or rest & _HOLDS_NONE)) \
            or (tokens[0] == b"hasattr" and comma == len(inside)):
        return None
    # (A type named otherwise, `MaybeTensor`, may be a tuple holding None's type; an
    # attribute of a dunder name, `__class__`, None has too.)
    if tokens[0] == b"isinstance" and not _known_types(inside[comma + 1:]):
        return None
    if tokens[0] == b"hasattr" and (len(inside) != comma + 2 or
                                    not inside[comma + 1][:1] == b'"' or
                                    inside[comma + 1][1:3] == b"__"):
        return None
    if tokens[0] != b"isinstance" and tokens[0] != b"hasattr" and comma != len(inside):
        return None
    return value


# The types `isinstance` is read with (_type_tested): a builtin's, torch's tensor, numpy's
# array.
_KNOWN_TYPES = {b"int", b"float", b"str", b"bytes", b"bool", b"complex", b"list", b"tuple",
                b"dict", b"set", b"frozenset", b"Tensor", b"ndarray"}


def _known_types(tokens: list[bytes]) -> bool:
    """Whether the Python type argument `tokens` of an `isinstance` is a type none of None
    is: a builtin's name, `Tensor` or `ndarray` (`torch.Tensor`, `np.ndarray`), or a tuple
    of them. Any other (`MaybeTensor`, `collections.abc.Hashable`) may hold None."""
    tokens = _bare(tokens)
    items = _members(tuple(tokens), "python") or [tuple(tokens)]
    return all(item and item[-1] in _KNOWN_TYPES and all(
        part == b"." if k % 2 else _WORD.fullmatch(part) is not None
        for k, part in enumerate(item)) for item in items)


def _zero_of(form: tuple, language: str) -> list[tuple[bytes, ...]]:
    """The value a Python test compares with zero or the empty string (`n` of `n == 0`, `x`
    of `x == ""` and of `len(x) == 0`): its truth is the test's converse. None for any other
    test (C's are read so already: _test_form)."""
    if language != "python" or form[0] != b"equal":
        return []
    for zero, value in ((form[1], form[2]), (form[2], form[1])):
        if zero in ((b"0",), (b'""',)) and value:
            if len(value) > 3 and value[:2] == (b"len", b"(") and \
                    _closing(list(value), 1) == len(value) - 1:
                return [value, tuple(_bare(list(value[2:-1])))]
            return [value]
    return []


def _members(tokens: tuple[bytes, ...], language: str) -> list[tuple[bytes, ...]]:
    """The items of a literal list, tuple or set in Python (`[b]`, `(b, c)`, `{b, c}`: a
    bracketed tuple holds a comma, `("b")` is a string), each without brackets around it;
    none for anything else (a name, a call, a dict, a comprehension). A tuple's brackets are
    already off (_bare): `b , c`."""
    if language != "python" or not tokens:
        return []
    if tokens[0] in (b"[", b"{") and _closing(list(tokens), 0) == len(tokens) - 1:
        inner, tuple_ = tokens[1:-1], False
    else:
        inner, tuple_ = tokens, True
    items: list[list[bytes]] = [[]]
    depth = 0
    for token in inner:
        depth += token in (b"(", b"[", b"{")
        depth -= token in (b")", b"]", b"}")
        if depth == 0 and token == b",":
            items.append([])
        elif depth == 0 and token in (b":", b"for", b"*", b"**"):
            return []
        else:
            items[-1].append(token)
    if tuple_ and len(items) < 2:
        return []
    if not items[-1]:
        items.pop()
    if not items or any(not item for item in items):
        return []
    return [tuple(_bare(item)) for item in items]


def _given(have: tuple, want: tuple, words: frozenset[bytes]) -> dict[bytes, bytes] | None:
    """The names of `words` that the test `want` (_test_form) has replaced by others to read
    as `have`, everything else alike; None where the two differ otherwise."""
    if have[0] != want[0]:
        return None
    orders = [have[1:]]
    if want[0] in _EITHER_WAY:
        orders.append(have[1:][::-1])
    for sides in orders:
        given: dict[bytes, bytes] = {}
        if all(len(side) == len(wanted) for side, wanted in zip(sides, want[1:])) and all(
                got == token or (token in words and _WORD.fullmatch(got) is not None and
                                 given.setdefault(token, got) == got)
                for side, wanted in zip(sides, want[1:]) for got, token in zip(side, wanted)):
            return given
    return None


# The Python statements whose names are read as a test, not as work done on a value (_Work).
_TESTS_ONLY = {b"if", b"elif", b"else", b"while", b"assert", b"try", b"except", b"finally",
               b"def", b"async", b"class", b"@", b"pass"}
# The C statements _Work reads as no work of their own: their headers are tests, their bodies
# statements of their own.
_C_NOT_WORK = {b"if", b"while", b"for", b"switch", b"do", b"else", b"try", b"catch", b"case",
               b"default", b"{", b"}"}


class _Work:
    """Where a function's statements (_statements_of) do work on the values a kept guard
    checks (`x` of `if x is None:`, of `if (!x)`, of `x.numel() == 0`): read them other than
    in a test (an `if`'s or a loop's condition, an assert, a call named as a check) or in
    one of the statements `allowed` (those the guard had above it as the landing left it),
    nor in one giving a name of another that a test reads (`missing = x is None` + `if
    missing:`, `parsed = parse(opts)` + `if parsed.skip:`: what is tested, not the work).
    A check of the guard's in another form guards the work only above it: one below a
    statement that may run first (`b = a - x[0]` then `if (!x) return 0;`) keeps nothing,
    nor does a C `goto` whose label a read of the value comes after (`if (!x) goto skip;` +
    `skip:` + the work). Positions are statement indices in Python, code token indices (the
    statements' tokens joined, as _c_frames reads them) in C."""

    def __init__(self, statements: list[tuple[int, list[bytes]]], language: str,
                 values: frozenset[bytes], allowed: frozenset[tuple[bytes, ...]],
                 compiled: list[list[list[bytes]]] | None = None,
                 condition: tuple[bytes, ...] = ()):
        self.statements = statements
        self.language = language
        self.python = language == "python"
        self.reads: list[int] = []
        # (Where the guard tests the value itself, `x is None`, `!x`, a test reading through
        # it, `if x.numel() == 0:` above `if x is None:`, fails where the guard leaves: work.
        # Where it tests what the value holds, `x.numel() == 0`, a step keeping the value or
        # reading its layout, type or device, `x = x.contiguous()`, `orig_shape = x.shape`,
        # does not: no work.)
        nulls = not _test_reads(list(condition), values)
        # (Where it orders an index or a count, `i >= n`, `n <= 0`, arithmetic on them,
        # `const int row = i / cols;`, touches no memory: the name it gives is read as the
        # values are from there on, and only a subscript, a dereference or a call is work.)
        counts = set(values) if _orders(list(condition)) else None
        if self.python:
            tested = {token for _, tokens in statements if tokens[0] in _TESTS_ONLY
                      for token in tokens} | \
                {token for _, tokens in statements for _, argument in _checked_calls(tokens)
                 for token in argument}
            for at, (_, tokens) in enumerate(statements):
                if counts is not None and tokens[0] not in _TESTS_ONLY and \
                        _counted(tokens, counts):
                    continue
                if tokens[0] not in _TESTS_ONLY and not _checked_calls(tokens) and \
                        tuple(tokens) not in allowed and \
                        _reads_value(tokens, frozenset(counts or values), nulls) \
                        and _given_name(tokens) not in tested - values:
                    self.reads.append(at)
                elif nulls and tokens[0] in (b"if", b"elif", b"while", b"assert") and \
                        _test_reads(tokens[1:], values):
                    self.reads.append(at)
                elif nulls and any(_test_reads(argument, values)
                                   for _, argument in _checked_calls(tokens)):
                    self.reads.append(at)
            return
        self.tokens = [token for _, more in statements for token in more]
        self.built = _c_built(statements, compiled)
        tested = {token for k, word in enumerate(self.tokens[:-1])
                  if word in (b"if", b"while") and self.tokens[k + 1] == b"("
                  for token in self.tokens[k + 2:_closing(self.tokens, k + 1) or k]}
        self.frames = _c_frames(self.tokens)
        # (Each if's body's start, to the start of its `else`: a read in one branch does not
        # run before a check in the other.)
        self.other: dict[int, int] = {}
        for at, (_, other) in self.frames.items():
            opened = next((k for k in range(at, len(self.tokens)) if self.tokens[k] == b"("),
                          None)
            close = _closing(self.tokens, opened) if opened is not None else None
            if other is not None and self.tokens[at] == b"if" and close is not None:
                self.other[close + 1] = other
        for at in sorted(self.frames):
            # (Not run where it stands: a lambda's body, a block never built, `#if 0`.)
            if any(kind == b"block" and b"]" in header for kind, header, _ in
                   self.frames[at][0]) or any(condition in ([b"0"], [b"false"]) or (
                       len(condition) == 1 and condition[0][5:-1] in NEVER_BUILT)
                       for condition in self.built(at)):
                continue
            opened = self.tokens[at + 1:at + 2] == [b"("]
            test = opened and (self.tokens[at] in (b"if", b"while") or
                               _CHECK_CALL.search(self.tokens[at]) is not None)
            if test and nulls:
                inside = self.tokens[at + 2:_closing(self.tokens, at + 1) or at + 2]
                if _test_reads(inside[:_top_level(inside, 0, {b","})], values):
                    self.reads.append(at)
            if test or self.tokens[at] in _C_NOT_WORK:
                continue
            end = next((k for k in range(at, len(self.tokens))
                        if self.tokens[k] in (b";", b"{", b"}")), len(self.tokens))
            statement = tuple(self.tokens[at:end + 1])
            if counts is not None and _counted(list(statement), counts):
                continue
            if statement not in allowed and (
                    _reads_value(list(statement), frozenset(counts or values), nulls) or
                    counts is not None and _dereferences(list(statement), counts)) and \
                    _given_name(list(statement)) not in tested - values:
                self.reads.append(at)

    def statements_read(self, before: int) -> set[tuple[bytes, ...]]:
        """The statements that read the values above position `before`, as `allowed`
        takes them."""
        if self.python:
            return {tuple(self.statements[at][1]) for at in self.reads if at < before}
        found = set()
        for at in self.reads:
            if at < before:
                end = next((k for k in range(at, len(self.tokens))
                            if self.tokens[k] in (b";", b"{", b"}")), len(self.tokens))
                found.add(tuple(self.tokens[at:end + 1]))
        return found

    def guarding(self, placed: list[_Placed], read: int
                 ) -> tuple[set[frozenset[_Literal]], list[list[bytes]] | None]:
        """The ways of leaving (_placed_exits) of the checks that run on a path to the read at
        position `read` (_reaches: above it, not in another branch of an if it sits in, nor
        in a branch ending in a `return` it is past; a C `goto` only to a label past it), and
        the conditions that hold where it runs (those of the blocks it sits in: _branch_of,
        _c_held), which a guard need not leave beyond; None where those are not known."""
        found: set[frozenset[_Literal]] = set()
        for at, label, ways in placed:
            if at < read and self._reaches(at, read) and (label is None or label > read):
                found |= ways
        if self.python:
            return found, _branch_of(self.statements, read)
        return found, _c_held(self.frames[read][0], None, self.tokens, read) + \
            self.built(read)

    def _reaches(self, read: int, at: int) -> bool:
        """Whether the statement at position `read` runs on a path to position `at`: not in
        a branch of an if whose other branch holds `at`, nor in one ending in a `return` or
        `raise` that `at` is past."""
        if not self.python:
            outer = {frame[2]: frame for frame in self.frames.get(at, ((), None))[0]}
            for kind, _, start in self.frames[read][0]:
                if start in outer:
                    continue
                if kind == b"if" and self.other.get(start) in outer:
                    return False
                if kind in (b"if", b"else") and _c_body(self.tokens, start, _C_LEAVES)[0]:
                    return False
            return True
        around = set(self._headers(at)) | {at}
        for header in self._headers(read):
            if header in around:
                continue
            indent, tokens = self.statements[header]
            if tokens[0] in (b"if", b"elif", b"else", b"except") and \
                    _exit_word(self.statements, header) in _LEAVES:
                return False
            chain = {b"if": (b"elif", b"else"), b"elif": (b"elif", b"else"),
                     b"except": (b"except", b"else")}.get(tokens[0], ())
            end = header + 1
            while chain and end < len(self.statements):
                while end < len(self.statements) and self.statements[end][0] > indent:
                    end += 1
                if end >= len(self.statements) or self.statements[end][0] != indent or \
                        self.statements[end][1][0] not in chain:
                    break
                if end in around:
                    return False
                end += 1
        return True

    def _headers(self, at: int) -> list[int]:
        """The Python statements heading the blocks the one at `at` sits in, innermost
        first."""
        found = []
        indent = self.statements[at][0]
        for k in range(at - 1, -1, -1):
            if self.statements[k][0] < indent:
                found.append(k)
                indent = self.statements[k][0]
        return found


def _c_label(tokens: list[bytes], at: int) -> int:
    """Where the label stands that the C `goto` ending the statement or block at `tokens[at]`
    (an if's body) jumps to: the index of the label's name; -1 where the function has none."""
    close = _closing(tokens, at) if tokens[at:at + 1] == [b"{"] else \
        next((k for k in range(at, len(tokens)) if tokens[k] == b";"), None)
    body = tokens[at:close] if close is not None else tokens[at:]
    jump = max((k for k, token in enumerate(body[:-1]) if token == b"goto"), default=None)
    if jump is None:
        return -1
    label = body[jump + 1]
    return next((k for k in range(len(tokens) - 1) if tokens[k] == label and
                 tokens[k + 1] == b":" and (k == 0 or tokens[k - 1] in (b";", b"{", b"}"))), -1)


def _given_name(tokens: list[bytes]) -> bytes | None:
    """The name a statement assigns (`missing` of `missing = x is None`, of C's `bool
    missing = !x;`), None where it assigns no one name (a call, `+=`, `a[0] = ...`)."""
    equal = _top_level(tokens, 0, {b"="})
    if equal == len(tokens) or equal == 0 or not _WORD.fullmatch(tokens[equal - 1]) or \
            tokens[equal + 1:equal + 2] == [b"="]:
        return None
    before = tokens[:equal - 1]
    if any(not _WORD.fullmatch(token) and token not in (b"*", b"&", b"::", b"<", b">")
           for token in before):
        return None
    return tokens[equal - 1]


def _reads_value(tokens: list[bytes], values: frozenset[bytes], nulls: bool = True) -> bool:
    """Whether a statement's code tokens read one of `values` (not an attribute's name, a
    keyword argument's, `configure(x=1)`, nor under `sizeof`), or an f-string's field does
    (`f'{x[0]}'`); not a conditional expression testing it (`0 if x is None else
    x.numel()`). Where the guard lets through no None (`nulls` False: `x.numel() == 0`),
    a step keeping the value or a read of its layout, type or device (`x.contiguous()`,
    `x.shape`, _SAME_VALUE, _CHANGED_BY) reads nothing it could fail on."""
    from patchforge.judge import _CHANGED_BY, _SAME_VALUE

    if b"if" in tokens and b"else" in tokens and any(
            tokens[k:k + 3] in ([value, b"is", b"None"], [value, b"is", b"not"])
            for value in values for k in range(len(tokens))):
        return False
    for k, token in enumerate(tokens):
        if token[:1] in (b'"', b"'") and k and tokens[k - 1] == b"f" and any(
                re.search(rb"\{[^}]*\b" + re.escape(value) + rb"\b", token)
                for value in values):
            return True
        if token not in values or (k and tokens[k - 1] in (b".", b"->", b"::")):
            continue
        if tokens[k + 1:k + 2] == [b"="]:
            continue  # (a keyword argument, or the name assigned)
        if tokens[max(k - 2, 0):k] == [b"sizeof", b"("] or tokens[k - 1:k] == [b"sizeof"]:
            continue
        if not nulls and tokens[k + 1:k + 2] == [b"."] and \
                tokens[k + 2:k + 3] and (tokens[k + 2] in _SAME_VALUE or
                                         tokens[k + 2] in _CHANGED_BY):
            continue
        return True
    return False


def _orders(condition: list[bytes]) -> bool:
    """Whether a guard's condition (code tokens) only orders names or numbers, an index
    against a bound or a count against one (`i >= n`, `n <= 0`, `i < 0 || i >= n`): what
    it tests are integers (or pointers compared), which arithmetic reads without touching
    memory. Not `==`/`!=` (`p == 0` tests a pointer for null)."""
    parts: list[list[bytes]] = [[]]
    for token in condition:
        if token in (b"||", b"&&", b"or", b"and"):
            parts.append([])
        else:
            parts[-1].append(token)
    return all(len(part) == 3 and part[1] in (b"<", b"<=", b">", b">=") and
               all(_WORD.fullmatch(side) or side.isdigit() for side in part[::2]) and
               not any(side in _CHECK_SYNTAX for side in part[::2]) for part in parts)


# (Around an index or count read in arithmetic, `row = i / cols`, `p = in + i`: what may
# stand before it and after it; a divisor, a shift's count, an operand of `<`, `>` (the
# tokens of `<<`) and anything else is counted as work.)
_ARITHMETIC_BEFORE = {b"=", b"+", b"-", b"*", b"(", b"?", b":"}
_ARITHMETIC_AFTER = {b";", b"+", b"-", b"*", b"/", b"//", b"%", b")", b"?", b":"}


def _counted(tokens: list[bytes], counts: set[bytes]) -> bool:
    """Whether a statement reading the `counts` (an index or count a guard orders, _orders)
    only computes a name from them (`const int row = i / cols;`, `float* p = in + i;`,
    `rows = n * 2`), with no subscript (`in[i]`), dereference or call taking them: it touches
    no memory through them. The name it gives is added to `counts`, so that a later
    subscript, dereference or call of it (`out[row] = 0;`, `*p`) is work."""
    name = _given_name(tokens)
    equal = _top_level(tokens, 0, {b"="})
    if name is None or not any(token in counts for token in tokens[equal + 1:]):
        return False
    opened: list[bool] = []  # (each open bracket: whether it is a subscript, call or `*(`)
    for k in range(equal + 1, len(tokens)):
        token, before = tokens[k], tokens[k - 1]
        binary = before in (b")", b"]") or _WORD.fullmatch(before) is not None or \
            before.isdigit()
        if token in (b"[", b"{"):
            opened.append(True)
        elif token == b"(":
            opened.append(binary or (before == b"*" and not (
                _WORD.fullmatch(tokens[k - 2]) or tokens[k - 2] in (b")", b"]"))) or
                before in (b">", b"&"))
        elif token in (b"]", b")", b"}") and opened:
            opened.pop()
        elif token in counts:
            after = tokens[k + 1] if k + 1 < len(tokens) else b";"
            unary = before == b"*" and not (_WORD.fullmatch(tokens[k - 2]) or
                                            tokens[k - 2].isdigit() or
                                            tokens[k - 2] in (b")", b"]"))
            if any(opened) or unary or before not in _ARITHMETIC_BEFORE or \
                    after not in _ARITHMETIC_AFTER:
                return False
    counts.add(name)
    return True


def _dereferences(tokens: list[bytes], names: set[bytes]) -> bool:
    """Whether C code tokens dereference one of `names` with a unary `*` (`*p = 0.f;`,
    which _reads_value reads as assigning p)."""
    return any(token in names and k and tokens[k - 1] == b"*" and
               (k == 1 or not (_WORD.fullmatch(tokens[k - 2]) or tokens[k - 2].isdigit() or
                               tokens[k - 2] in (b")", b"]")))
               for k, token in enumerate(tokens))


def _test_reads(condition: list[bytes], values: frozenset[bytes]) -> bool:
    """Whether a test's code tokens read one of `values` through it (an attribute, an
    item, a call on it, `len(x)`, C's `*x`), where the test does not also test the value
    itself first (`x is None or x.numel() == 0` reads nothing where x is None)."""
    if any(condition[k:k + 2] in ([value, b"is"], [value, b"=="], [value, b"!="])
           or condition[k - 1:k + 1] in ([b"!", value], [b"not", value])
           for value in values for k in range(len(condition))):
        return False
    for k, token in enumerate(condition):
        if token not in values or (k and condition[k - 1] in (b".", b"->", b"::")):
            continue
        after = condition[k + 1:k + 2]
        if after in ([b"."], [b"["], [b"->"], [b"("]) or (
                k and condition[k - 1] == b"*" and
                (k == 1 or not (_WORD.fullmatch(condition[k - 2]) or
                                condition[k - 2] in (b")", b"]")))) or (
                k > 1 and condition[k - 1] in (b"(", b",") and
                condition[k - 2] not in (b"isinstance", b"hasattr", b"type", b"id",
                                         b"callable", b"sizeof", b"is_tensor") and
                (condition[k - 1] == b"," or (
                    _WORD.fullmatch(condition[k - 2]) is not None and
                    not keyword.iskeyword(condition[k - 2].decode("ascii", "replace"))))):
            return True
    return False


def _values_of(check: _Check) -> frozenset[bytes]:
    """The values a guard's condition reads (`x` of `x.numel() == 0`), attributes aside."""
    words, condition, _ = check
    return frozenset(token for k, token in enumerate(condition) if token in words and
                     (k == 0 or condition[k - 1] not in (b".", b"->", b"::")))


def _exits_of(statements: list[tuple[int, list[bytes]]], language: str,
              compiled: list[list[list[bytes]]] | None = None) -> set[frozenset[_Literal]]:
    """The ways the checks of a function leave it or skip its work, wherever they stand
    (_placed_exits)."""
    return set().union(*(ways for _, _, ways in _placed_exits(statements, language, compiled)))


# A check's ways of leaving (_placed_exits) and where it stands: its statement's position
# (_Work's), and for a C `goto` the position of its label (-1 where none is found; None for
# any other exit): what the jump skips ends there.
_Placed = tuple[int, int | None, set[frozenset[_Literal]]]


def _placed_exits(statements: list[tuple[int, list[bytes]]], language: str,
                  compiled: list[list[list[bytes]]] | None = None) -> list[_Placed]:
    """The ways the checks of a function's `statements` (_statements_of) leave it or skip its
    work, each a set of tests that together make one leave (_ways): an `if` whose body ends in an
    exit (`return`, `raise`, ...) where its condition holds, an `else:` ending in one where the
    conditions above it fail (C's `else` of a lone `if` alike); an `if` or `while` around the rest
    of the function's work (nothing but an exit, or an `else:` of one, after it: _rest_exits; or
    nothing after it, its body ending in an exit and holding most of the function's statements)
    where its condition does not; an `assert`, or a call named as a check (`TORCH_CHECK(x !=
    nullptr, ...)`) where its condition does not. An `if` around other work the function goes on
    past (`if x is not None: x = x.float()`, then the work) skips nothing of it: no leave. In Python
    each is read with the ifs it sits in (_branch_of: an exit under `if STRICT:` leaves only where
    STRICT holds too), one inside an `except` or a nested function not at all, a `raise` inside a
    `try:` its `except` may catch (or a `with contextlib.suppress(...)`) only there (_branch_of); in
    C with the blocks it sits in alike (_c_frames, _c_held: a loop, another if, a lambda's body
    whose `return` leaves the lambda only) and the preprocessor conditionals it is compiled under
    (`compiled`, _c_compiled: one under `#ifdef CHECKS` only in a build with CHECKS). A value chosen
    by a condition (`y if x is None else x`, a comprehension's `if`) or joined by `or` (`x = x or
    default`) is no check. A Python name a condition tests, assigned once in the function before it
    (_carried), reads as what it was assigned: `missing = x is None` then `if missing: return 0`
    leaves where x is None. Each check's ways are given with where it stands (_Placed): a
    kept guard's copy guards only the work below it (_Work)."""
    # Each condition, whether its body ends in an exit, whether the rest of the function after
    # it is only an exit (its converse then leaves too: `if x is not None:` around the work,
    # ending in the function's `return`, skips that work where x is None, as the guard does),
    # and in Python the conditions of the ifs it sits in and the names assigned before it.
    found: list[tuple[list[bytes], bool, bool, list[tuple]]] = []
    carried: list[dict[bytes, tuple]] = []
    # (Where each of `found` stands, and a C `goto`'s label.)
    places: list[tuple[int, int | None]] = []
    if language == "python":
        assigned = _carried(statements, language)
        for at, (indent, tokens) in enumerate(statements):
            known = {name: tree for name, (where, tree) in assigned.items() if where < at}
            if tokens[0] not in (b"if", b"elif", b"while", b"assert", b"else") and \
                    not _checked_arguments(tokens):
                continue
            word = _exit_word(statements, at) if tokens[0] in (b"if", b"elif", b"else") \
                else None
            branch = _branch_of(statements, at, word in _LOOP_EXITS,
                                word == b"raise" or tokens[0] not in (b"if", b"elif", b"else",
                                                                      b"while"))
            if branch is None:
                continue  # (in an `except` or a nested function: not read)
            within = [tree for tree in (_boolean(condition, language) for condition in branch)
                      if tree is not None]
            if len(within) < len(branch):
                continue
            if tokens[0] == b"else":
                # (An `else:` ending in an exit leaves where none of the branches above it
                # held: `if x is not None: x = x.float()` + `else: return 0` leaves where x
                # is None, whatever the if's own body does.)
                earlier = _earlier_branches(statements, at) if tokens[1:2] == [b":"] else None
                if earlier and _exit_word(statements, at) in _EXITS:
                    found.append((_joined(earlier), True, False, within))
                    carried.append(known)
                    places.append((at, None))
            elif tokens[0] in (b"if", b"elif", b"while"):
                colon = _top_level(tokens, 1, {b":"})
                inline = tokens[colon + 1:]
                end = at + 1
                while end < len(statements) and statements[end][0] > indent:
                    end += 1
                exits = tokens[0] != b"while" and _exit_word(statements, at) in _EXITS or \
                    tokens[0] == b"if" and not inline and _work_in_else(statements, at, end)
                # (Nothing after an if whose body ends in an exit and holds most of the
                # function's work: where its condition fails the function ends there, an
                # implicit `return None`, skipping that work: `if x is not None:` around all
                # of it and its `return`. Not `if x is not None: return x` past the work.)
                rest = _rest_exits(statements[end:]) or (
                    _exit_word(statements, at) in _LEAVES and end == len(statements) and
                    end - at - 1 > sum(more[0] not in (b"def", b"async", b"@") and
                                       more[0][:1] not in (b'"', b"'")
                                       for _, more in statements[:at]) and not inline)
                found.append((tokens[1:colon], exits, rest, within))
                carried.append(known)
                places.append((at, None))
                if inline:
                    continue
            elif tokens[0] == b"assert":
                found.append((tokens[1:_top_level(tokens, 1, {b","})], False, True, within))
                carried.append(known)
                places.append((at, None))
            for argument in _checked_arguments(tokens):
                found.append((argument, False, True, within))
                carried.append(known)
                places.append((at, None))
    else:
        tokens = [token for _, more in statements for token in more]
        frames = _c_frames(tokens)
        built = _c_built(statements, compiled)
        for k, token in enumerate(tokens[:-1]):
            if token not in (b"if", b"while") or tokens[k + 1] != b"(" or k not in frames:
                continue  # (not read as a statement: past a label, a `do`'s `while`)
            close = _closing(tokens, k + 1)
            if close is None:
                continue
            exits, end = _c_body(tokens, close + 1)
            label = _c_label(tokens, close + 1) if exits and \
                _c_exit_word(tokens, close + 1) == b"goto" else None
            # (Read with the blocks it sits in: a `return` in a loop leaves only where the
            # loop runs, in an `if (strict) {` only where strict holds, in a lambda's body
            # the lambda only.)
            branch = _c_held(frames[k][0], _c_exit_word(tokens, close + 1) if exits
                             else b"return", tokens, k) + built(k)
            within = [tree for tree in (_boolean(condition, language) for condition in branch)
                      if tree is not None]
            if len(within) < len(branch):
                continue
            found.append((tokens[k + 2:close], token == b"if" and exits,
                          _c_rest_exits(tokens[end:]), within))
            places.append((k, label))
            # (An `else` ending in an exit leaves where the if's condition fails: `if (x) {
            # log(1); } else { return 0; }` leaves where x is null, read with the blocks
            # the if sits in (_c_frames: the `else` of `if (x) if (fast) log(1); else` is
            # the inner if's). Only an `else` leaving the function, `return` or `throw`,
            # not a loop's `continue` or `break`; an `else if` is read as its own if.)
            other = frames[k][1]
            if token == b"if" and other is not None and tokens[other:other + 1] != [b"if"] \
                    and _c_body(tokens, other, _C_LEAVES)[0]:
                branch = _c_held(frames[k][0], _c_exit_word(tokens, other), tokens, k) + \
                    built(k)
                within = [tree for tree in (_boolean(condition, language)
                                            for condition in branch) if tree is not None]
                if len(within) == len(branch):
                    found.append(([b"!", b"("] + tokens[k + 2:close] + [b")"], True, False,
                                  within))
                    places.append((k, None))
        # (A check call, `TORCH_CHECK(x != nullptr, ...)`, read with the blocks the statement
        # it is in sits in, as a `throw`: in a loop it checks only where the loop runs.)
        starts = sorted(frames)
        for k, argument in _checked_calls(tokens):
            start = bisect.bisect_right(starts, k) - 1
            branch = (_c_held(frames[starts[start]][0], b"throw", tokens, k) if start >= 0
                      else []) + built(k)
            within = [tree for tree in (_boolean(condition, language) for condition in branch)
                      if tree is not None]
            if len(within) == len(branch):
                found.append((argument, False, True, within))
                places.append((starts[start] if start >= 0 else k, None))
    placed: list[_Placed] = []
    for k, (condition, exits, converse, within) in enumerate(found):
        tree = _boolean(condition, language) if condition else None
        if tree is None:
            continue
        ways: set[frozenset[_Literal]] = set()
        placed.append(places[k] + (ways,))
        # (Read as it is too: a guard of the fix testing the name itself, `if done:`, is
        # kept by its own if.)
        trees = [tree]
        if k < len(carried) and carried[k]:
            trees.append(_read_through(tree, carried[k]))
        for tree in trees:
            if exits:
                ways.update(_ways(("and", within + [tree]) if within else tree) or [])
            if converse:
                negated = _negated(tree)
                ways.update(_ways(("and", within + [negated]) if within else negated) or [])
    return placed


def _branch_of(statements: list[tuple[int, list[bytes]]], at: int, to_loop: bool = False,
               raises: bool = False) -> list[list[bytes]] | None:
    """The conditions (code tokens, each to be joined by `and`) that hold wherever the Python
    statement at `at` runs: those of the ifs it sits in, read outwards by indent (an `elif`'s
    or an `else:`'s with the converse of the branches above it, an `elif` statement's own
    earlier branches too), a loop's that its body runs at all (_loop_runs: a `return 0` in
    `for y in ys:` leaves only where ys has an item), a `with`, `try` or `finally` block
    read through, the reading ending at the function's `def`, or with `to_loop` (a
    `continue` or `break` of the statement's, which skips the rest of its loop's body
    only) at that loop. With `raises` (the statement leaves by an exception: a `raise`, an
    `assert`, a check call), a `try:` whose `except` may catch it and go on (_caught), or a
    `with` whose header names `suppress` of a class it may be of (_suppresses), may catch it:
    one token no other test reads as, so only a copy in such a block keeps a guard raising
    in one. None inside an `except` or a nested function or class: what it does there is not
    known."""
    held: list[list[bytes]] = []
    indent, tokens = statements[at]
    raised = _raised(statements, at) if raises else None
    top = min(deeper for deeper, _ in statements)
    if tokens[0] == b"elif":
        earlier = _earlier_branches(statements, at)
        if earlier is None:
            return None
        held.extend(earlier)
    for up in range(at - 1, -1, -1):
        deeper, opener = statements[up]
        if deeper >= indent:
            continue
        indent = deeper
        if opener[:2] in ([b"async", b"for"], [b"async", b"with"]):
            opener = opener[1:]  # (read as the loop or the `with` it is)
        first = opener[0]
        if first in (b"def", b"async", b"class", b"@"):
            if deeper <= top:
                break
            return None
        colon = _top_level(opener, 1, {b":"})
        if colon != len(opener) - 1:
            return None
        if first in (b"for", b"while"):
            # (A `break` or `continue` in the loop's body before the statement may skip it
            # even where the loop always runs: `for _ in range(3):` + `if FAST: break` +
            # `if x is None: return 0` leaves nothing where FAST holds.)
            runs = _loop_runs(opener, to_loop or any(
                token in (b"break", b"continue")
                for _, before in statements[up + 1:at] for token in before))
            if runs:
                held.append(runs)
            if to_loop:
                break
            continue
        if first in (b"if", b"elif"):
            held.append(opener[1:colon])
            if first == b"elif":
                earlier = _earlier_branches(statements, up)
                if earlier is None:
                    return None
                held.extend(earlier)
        elif first == b"else":
            earlier = _earlier_branches(statements, up)
            if earlier is None:
                return None
            held.extend(earlier)
        elif first not in (b"with", b"try", b"finally"):
            return None
        elif raises and (first == b"with" and _suppresses(opener, raised) or
                         first == b"try" and _caught(statements, up, raised)):
            held.append([b"<caught: " + b" ".join(opener[:colon]) + b">"])
        elif raises and first == b"try":
            raised = _raised_past(statements, up, raised)
    return held


def _raised(statements: list[tuple[int, list[bytes]]], at: int) -> type | None:
    """The builtin exception class the Python statement at `at` raises: `AssertionError` of
    an `assert`, ValueError of `if x is None:` + `raise ValueError('x')` (its body's last
    statement, _last_statement); None for any other (a class of a project's own, a check
    call's, a bare `raise`): not known."""
    tokens = statements[at][1]
    if tokens[0] == b"assert":
        return AssertionError
    if tokens[0] not in (b"if", b"elif", b"else"):
        return None
    last = _last_statement(statements, at)
    return _exception_class(last) if last[:1] == [b"raise"] else None


def _exception_class(statement: list[bytes]) -> type | None:
    """The builtin exception class a Python `raise` statement's code tokens name (`raise
    ValueError('x')`, `raise KeyError from e`); None for any other, a bare `raise`, or a
    name that is no builtin exception's (`errors.ShapeError(...)`, `MyError`)."""
    if len(statement) < 2 or not (len(statement) == 2 or statement[2] in (b"(", b"from")):
        return None
    return _builtin_exception([statement[1]])


def _rebound_exceptions(lines: _Lines, statements: list[tuple[int, list[bytes]]]
                        ) -> set[bytes]:
    """The names of builtin exception classes the function's `statements` name that its
    Python module binds to something of its own (`from pkg.errors import ValueError`,
    `import errors as KeyError`, `ValueError = ShapeError`, `class ValueError(...)`; every one of them past a `from ... import *`): what they name
    there is not known, so a `raise` of one or an `except` naming one reads as a class of
    the project's own (_builtin_exception). An assignment or definition counts at the
    module's top level only (a class body's `KeyError = ValueError` is the class's)."""
    named = {token for _, tokens in statements for token in tokens
             if _builtin_exception([token]) is not None}
    if not named:
        return set()
    found: set[bytes] = set()
    importing = False  # (inside `from x import (` ... `)`)
    for line in lines.lines:
        tokens = _code_tokens(line)
        if not tokens:
            continue
        if tokens[:1] == [b"from"] and tokens[-2:] == [b"import", b"*"]:
            return named
        binds = importing or b"import" in tokens
        if b"import" in tokens and tokens[-1:] == [b"("]:
            importing = True
        elif importing and b")" in tokens:
            importing = False
        equal = _top_level(tokens, 0, {b"="})
        top = not line[:1].isspace()  # (the module's own names; a class body binds its own)
        for k, token in enumerate(tokens):
            if token not in named or (k and tokens[k - 1] == b"."):
                continue
            if (binds and tokens[k + 1:k + 2] != [b"as"] and
                    (k == 0 or tokens[k - 1] in (b"import", b",", b"as", b"("))) or \
                    (top and k and tokens[k - 1] in (b"class", b"def", b"for", b"global")) or \
                    (top and k < equal < len(tokens) and tokens[0] not in (b"if", b"while")):
                found.add(token)
    return found


def _builtin_exception(tokens: list[bytes]) -> type | None:
    """The builtin exception class the Python code tokens name, one name (`ValueError`,
    `Exception`); None for anything else (an attribute, a call, a project's class)."""
    if len(tokens) != 1 or not _WORD.fullmatch(tokens[0]):
        return None
    found = getattr(builtins, tokens[0].decode("ascii", "replace"), None)
    return found if isinstance(found, type) and issubclass(found, BaseException) else None


def _catching(named: list[bytes], raised: type | None) -> bool | None:
    """Whether a Python `except` of the classes `named` (its code tokens between `except` and
    its colon) catches an exception of class `raised`: True for a bare `except:` or a
    builtin class `raised` is of (the standard hierarchy: `except Exception:` catches a
    ValueError), False where each class named is a builtin's it is not of (`except
    KeyError:`), None where that is not known (a class of a project's own, `raised` not
    known)."""
    named = _bare(named[:_top_level(named, 0, {b"as"})])
    if not named:
        return True
    classes = [_builtin_exception(_bare(part)) for part in _split_top(named)]
    if raised is not None and any(one is not None and issubclass(raised, one) for one in classes):
        return True
    return None if raised is None or None in classes else False


def _suppresses(opener: list[bytes], raised: type | None) -> bool:
    """Whether the Python `with` header `opener` names `suppress` of a class the exception of
    class `raised` may be of (_catching; `contextlib.suppress(KeyError)` does not suppress a
    ValueError); any `suppress` not called with its classes reads as suppressing it."""
    calls = [k for k, token in enumerate(opener[:-1])
             if token == b"suppress" and opener[k + 1] == b"("]
    if not calls:
        return b"suppress" in opener
    for k in calls:
        close = _closing(opener, k + 1)
        named = opener[k + 2:close] if close is not None else [b"?"]
        if any(_catching(part or [b"?"], raised) is not False for part in _split_top(named)):
            return True
    return False


def _caught(statements: list[tuple[int, list[bytes]]], at: int, raised: type | None) -> bool:
    """Whether an `except` of the Python `try:` at `at` may catch the exception of class
    `raised` (None: not known) raised in its body and go on in the function: Python runs
    the first clause catching it (_catching), so a clause that may (a class not known) and
    goes on catches it, one that surely does and leaves (its handler ends in a `return` or
    a `raise`: `except ValueError:` + `log(e)` + `raise` leaves as the guard did) ends the
    reading."""
    for catching, ends in _handlers(statements, at, raised):
        if catching is not False and ends is None:
            return True
        if catching:
            return False
    return False


def _raised_past(statements: list[tuple[int, list[bytes]]], at: int, raised: type | None
                 ) -> type | None:
    """The class of the exception leaving the Python `try:` at `at` that _caught does not
    read as catching it: `raised`, or None (not known) where a handler that may catch it
    raises another."""
    for catching, ends in _handlers(statements, at, raised):
        if catching is not False and ends == b"raise other":
            return None
        if catching:
            break
    return raised


def _handlers(statements: list[tuple[int, list[bytes]]], at: int, raised: type | None
              ) -> list[tuple[bool | None, bytes | None]]:
    """Each `except` clause of the Python `try:` at `at`, in order: whether it catches the
    exception of class `raised` (_catching), and how its handler ends: b"raise" (a bare
    `raise`, the same exception going on), b"raise other", b"return", or None (it goes on in
    the function)."""
    indent = statements[at][0]
    found: list[tuple[bool | None, bytes | None]] = []
    for k in range(at + 1, len(statements)):
        deeper, tokens = statements[k]
        if deeper > indent:
            continue
        if deeper < indent or tokens[0] != b"except":
            break
        last = _last_statement(statements, k)
        ends = None
        if last[:1] == [b"return"]:
            ends = b"return"
        elif last[:1] == [b"raise"]:
            ends = b"raise" if len(last) == 1 else b"raise other"
        found.append((_catching(tokens[1:_top_level(tokens, 1, {b":"})], raised), ends))
    return found


def _exit_word(statements: list[tuple[int, list[bytes]]], at: int) -> bytes | None:
    """The first word of the last statement of the body of the Python `if` at `at`
    (_last_statement): `return` of `if x is None: return 0`, and of `if x is None: log(0);
    return 0`."""
    last = _last_statement(statements, at)
    return last[0] if last else None


def _last_statement(statements: list[tuple[int, list[bytes]]], at: int) -> list[bytes]:
    """The code tokens of the last statement of the body of the Python block whose header is
    at `at` (on its line, or at the body's depth below it; _last_of); none where it has no
    body."""
    indent, tokens = statements[at]
    inline = tokens[_top_level(tokens, 1, {b":"}) + 1:]
    if not inline:
        end = at + 1
        while end < len(statements) and statements[end][0] > indent:
            end += 1
        body = statements[at + 1:end]
        if not body:
            return []
        inline = [more for deeper, more in body if deeper == body[0][0]][-1]
    return _last_of(inline)


def _last_of(tokens: list[bytes]) -> list[bytes]:
    """The last of the Python statements joined by `;` on one line (`return 0` of `log(0);
    return 0`), a `;` ending the line aside."""
    done = [part for part in _split_top(tokens, b";") if part]
    return done[-1] if done else []


# What the loop a `continue` or `break` guard sits in reads as where the hunk's context does
# not show it (_enclosing): any loop, so no loop of upstream's checks narrows it (_guard_kept).
_ANY_LOOP = b"<loop: any>"


def _loop_runs(opener: list[bytes], to_loop: bool = False) -> list[bytes]:
    """The condition under which the body of the Python loop whose header's code tokens are
    `opener` runs at all, as one token no other test reads as (no name, so no rename
    matches it): `for y in ys:` runs where ys has an item, whatever the loop's name for it
    (`for z in ys:` alike); `while k < n:` where its condition holds on the way in, its
    body possibly changing what that reads; `while True:`, or a `for` over what always has
    an item (`range(3)`, `(1, 2)`: _never_empty), always (none), but for a `continue` or
    `break` read to it (`to_loop`): that leaves the loop, not the function, so it is told
    by its loop (`while True:` + `if x is None: break` keeps no `return 0` guard). An exit the loop
    holds leaves only there: a guard at the function's top is not kept by its copy in a
    loop (where ys is empty nothing leaves), a guard the fix put in a loop is by its copy in
    the same loop (_enclosing, _landed_branch read it there too)."""
    colon = _top_level(opener, 1, {b":"})
    if opener[0] == b"while" and opener[1:colon] in ([b"True"], [b"1"]) and not to_loop:
        return []
    if opener[0] == b"for":
        over = _top_level(opener, 1, {b"in"})
        if over < colon and _never_empty(opener[over + 1:colon]) and not to_loop:
            return []
        opener = [b"for", b"in"] + opener[over + 1:colon] if over < colon else opener[:colon]
    else:
        opener = opener[:colon]
    return [b"<loop: " + b" ".join(opener) + b">"]


def _never_empty(over: list[bytes]) -> bool:
    """Whether what a Python `for` loop goes over (its tokens after `in`) always has an item,
    so its body runs at least once: `range(3)`, `range(1, 4)` (literal bounds, the first
    below the second), a literal tuple, list or set of at least one item (`(1, 2)`, `[x]`),
    a string literal holding a character. Anything else (`range(n)`, a name, a call, `()`,
    `[*xs]`, a comprehension) may be empty."""
    over = _bare(over)
    if len(over) > 3 and over[:2] == [b"range", b"("] and _closing(over, 1) == len(over) - 1:
        read = [_integer(part) for part in _split_top(over[2:-1])]
        bounds = [bound for bound in read if bound is not None]
        if len(bounds) < len(read):
            return False
        if len(bounds) == 1:
            bounds = [0] + bounds
        return len(bounds) == 2 and bounds[0] < bounds[1]
    if len(over) == 1:
        return len(over[0]) > 2 and over[0][:1] == b'"' and over[0] != b'"..."'
    return bool(_members(tuple(over), "python"))


def _split_top(tokens: list[bytes], at: bytes = b",") -> list[list[bytes]]:
    """`tokens` split at their `at` tokens (commas unless told) outside brackets."""
    parts: list[list[bytes]] = [[]]
    depth = 0
    for token in tokens:
        depth += token in (b"(", b"[", b"{")
        depth -= token in (b")", b"]", b"}")
        if depth == 0 and token == at:
            parts.append([])
        else:
            parts[-1].append(token)
    return parts


def _integer(tokens: list[bytes]) -> int | None:
    """The value of an integer literal's tokens (`3`, `-1`), None for anything else."""
    sign = -1 if tokens[:1] == [b"-"] else 1
    digits = tokens[1:] if sign < 0 else tokens
    if len(digits) != 1 or not digits[0].isdigit():
        return None
    return sign * int(digits[0])


def _earlier_branches(statements: list[tuple[int, list[bytes]]], at: int
                      ) -> list[list[bytes]] | None:
    """The converse (`not (...)`) of each condition of the `if` and `elif`s above the `elif`
    or `else:` at `at`, at its indent: where it runs none of them held. A branch that is a
    bare `return` or `raise` and nothing else counts nothing: where it
    held the function left at once, so the `elif` or `else:` runs only where it did not
    anyway (`if x is None: return 0` + `elif y is None: return 0` leaves where y is None, as
    a second `if` would). A branch doing other work first (`if FAST:` + `v = fast(x)` +
    `return v`) counts: the `elif x is None:` past it is no guard where FAST holds. A loop's
    `else:` runs wherever the loop ends, so holds nothing, where no `break` stands in the loop's
    body (one in a loop nested in it too, read so for want of telling them apart); with one the
    `else:` may not run: None, as for a `try`'s `else:` or any other branch above that is no
    `if`."""
    indent = statements[at][0]
    held: list[list[bytes]] = []
    for up in range(at - 1, -1, -1):
        deeper, tokens = statements[up]
        if deeper > indent:
            continue
        if deeper == indent and not held and \
                (tokens[1:2] if tokens[0] == b"async" else tokens[:1]) in ([b"for"], [b"while"]):
            body = statements[up + 1:at]
            return None if any(b"break" in inner for _, inner in body) or \
                b"break" in tokens[_top_level(tokens, 1, {b":"}) + 1:] else []
        if deeper < indent or tokens[0] not in (b"if", b"elif"):
            return None
        if not _bare_exit(statements, up):
            held.append([b"not", b"("] + tokens[1:_top_level(tokens, 1, {b":"})] + [b")"])
        if tokens[0] == b"if":
            return held
    return None


def _bare_exit(statements: list[tuple[int, list[bytes]]], at: int) -> bool:
    """Whether the body of the Python `if` or `elif` at `at` is one `return` or `raise` and
    nothing else (on its line or below it)."""
    indent, tokens = statements[at]
    inline = tokens[_top_level(tokens, 1, {b":"}) + 1:]
    if inline:
        return inline[0] in _LEAVES and _last_of(inline) == inline
    end = at + 1
    while end < len(statements) and statements[end][0] > indent:
        end += 1
    return end == at + 2 and statements[at + 1][1][0] in _LEAVES and \
        _last_of(statements[at + 1][1]) == statements[at + 1][1]


def _joined(conditions: list[list[bytes]]) -> list[bytes]:
    """Conditions' code tokens joined by `and`, each in brackets."""
    joined: list[bytes] = []
    for condition in conditions:
        joined += ([b"and"] if joined else []) + [b"("] + condition + [b")"]
    return joined


def _work_in_else(statements: list[tuple[int, list[bytes]]], at: int, end: int) -> bool:
    """Whether the Python `if` at `at` (its body ending before `end`) is a short branch (at
    most _GUARD_BODY statements, none opening a block) whose `else:` holds the function's work
    (more statements than it), past which the function only leaves (_rest_exits), and which
    reads nothing its condition tests, nor does what leaves past it: where its condition holds
    the work is skipped, as a guard's exit skips it (`if x is None:` + `v = 0` / `else:` + the
    work / `return v`). (`v = compute(x)` in the branch, or `return v + x` past it, works
    with x where x is None.)"""
    indent, tokens = statements[at]
    if end >= len(statements) or statements[end] != (indent, [b"else", b":"]):
        return False
    stop = end + 1
    while stop < len(statements) and statements[stop][0] > indent:
        stop += 1
    body, rest = statements[at + 1:end], statements[stop:]
    tested = {token for token in tokens[1:_top_level(tokens, 1, {b":"})]
              if _WORD.fullmatch(token) and token not in _CHECK_SYNTAX}
    return 0 < len(body) <= _GUARD_BODY and stop - end - 1 > len(body) and \
        not any(more[-1] == b":" for _, more in body) and _rest_exits(rest) and \
        not any(token in tested for _, more in body + rest for token in more)


def _rest_exits(rest: list[tuple[int, list[bytes]]]) -> bool:
    """Whether the Python statements after a block, to the function's end, are an exit and
    nothing else (`return 0`, or an `else:` holding one): the block is around the rest of the
    function's work, and where it is skipped the function leaves."""
    return bool(rest) and all(tokens[0] in (b"return", b"raise") or tokens == [b"else", b":"]
                              for _, tokens in rest)


def _c_rest_exits(rest: list[bytes]) -> bool:
    """_rest_exits of a C function's code tokens after a block: its braces aside, an `else`
    or an exit (`return 0;`) and nothing else."""
    statements: list[list[bytes]] = [[]]
    for token in rest:
        if token in (b"{", b"}"):
            continue
        if token == b";":
            statements.append([])
        else:
            statements[-1].append(token)
    done = [statement[1:] if statement[:1] == [b"else"] else statement
            for statement in statements if statement]
    return bool(done) and all(statement[:1] and statement[0] in (b"return", b"throw")
                              for statement in done)


def _carried(statements: list[tuple[int, list[bytes]]], language: str
             ) -> dict[bytes, tuple[int, tuple]]:
    """The Python names the function's `statements` assign once, each with where (the
    statement's index) and what (its value as a _boolean tree): `return_y_pp = config[...] >
    1 and skip_reduce`. A name assigned more than once, in any other way (`+=`, a tuple, a
    `for`, `with ... as`, `:=`), a parameter of the function, or one whose value names it,
    is read as itself: what it holds where a condition tests it is not known."""
    if language != "python":
        return {}
    once: dict[bytes, tuple[int, tuple]] = {}
    seen: Counter = Counter()
    for at, (_, tokens) in enumerate(statements):
        if tokens[0] in (b"def", b"for", b"with", b"async", b"lambda"):
            seen.update(token for token in tokens if _WORD.fullmatch(token))
            continue
        seen.update(tokens[k] for k in range(len(tokens) - 2)
                    if tokens[k + 1] == b":" and tokens[k + 2] == b"=")
        equal = _top_level(tokens, 0, {b"="})
        if equal == len(tokens):
            continue
        target = tokens[:equal]
        seen.update(token for token in target if _WORD.fullmatch(token))
        value = tokens[equal + 1:]
        if len(target) != 1 or not _WORD.fullmatch(target[0]) or not value or \
                _top_level(value, 0, {b"="}) != len(value) or target[0] in value:
            continue
        tree = _boolean(value, language)
        if tree is not None:
            once[target[0]] = (at, tree)
    return {name: held for name, held in once.items() if seen[name] == 1}


def _read_through(tree: tuple, known: dict[bytes, tuple]) -> tuple:
    """The _boolean `tree` with each test of a name's truth (`if return_y_pp:`, `not
    missing`) read as what the name was assigned (`known`, _carried), one step deep."""
    if tree[0] == "test":
        form, sense = tree[1], tree[2]
        if form[0] == b"truth" and len(form[1]) == 1 and form[1][0] in known:
            held = known[form[1][0]]
            return held if sense else _negated(held)
        return tree
    return (tree[0], [_read_through(part, known) for part in tree[1]])


def _c_body(tokens: list[bytes], at: int, exits: set[bytes] = _EXITS) -> tuple[bool, int]:
    """Whether the statement or braced block at `tokens[at]` (a C `if`'s body) ends in an
    exit (`return 0;`, `{ log(); return 0; }`; one of `exits`), and the index past it
    (_exits_of)."""
    if at >= len(tokens):
        return False, at
    if tokens[at] == b"{":
        close = _closing(tokens, at)
        body = tokens[at + 1:close if close is not None else len(tokens)]
        end = close + 1 if close is not None else len(tokens)
    else:
        semi = next((k for k in range(at, len(tokens)) if tokens[k] == b";"), len(tokens))
        body = tokens[at:semi + 1]
        end = semi + 1
    statements: list[list[bytes]] = [[]]
    depth = 0
    for token in body:
        depth += token == b"{"
        depth -= token == b"}"
        if token == b";" and depth == 0:
            statements.append([])
        else:
            statements[-1].append(token)
    done = [statement for statement in statements if statement]
    return bool(done) and done[-1][0] in exits, end


def _c_exit_word(tokens: list[bytes], at: int) -> bytes | None:
    """The first word of the last statement of the statement or braced block at
    `tokens[at]` (a C `if`'s body): `continue` of `{ log(); continue; }`."""
    word = next((word for word in _EXITS if _c_body(tokens, at, {word})[0]), None)
    return word


# A C block the reading of a statement's place goes through (_c_frames): its kind (`if`,
# `else`, `loop`, `switch`, `try`, `catch`, `block`: a brace of an expression, a lambda's
# body, a macro's block, an initializer), the code tokens that say which (an if's condition,
# a loop's header; none for an `else` whose if is a bare exit) and where its body starts.
_CFrame = tuple[bytes, tuple[bytes, ...], int]
# How deep C blocks are read (_c_frames): past it, the rest reads as one block of its own.
_C_DEPTH = 64
# The headers of C loops whose body always runs (_c_held): `while (true)`, `for (;;)`, `do`.
_C_ALWAYS = {(b"while", b"(", b"true", b")"), (b"while", b"(", b"1", b")"),
             (b"for", b"(", b";", b";", b")"), (b"do",)}


def _c_frames(tokens: list[bytes]) -> dict[int, tuple[tuple[_CFrame, ...], int | None]]:
    """The blocks each C `if` and `while` statement (and each other statement's start) of a
    function's code tokens (`tokens`, _statements_of's joined: the function's body, its
    header's last lines before its brace if it spans lines) sits in, outermost first, by the
    index of its first token, with an `if`'s `else` (the index past the word) where it has
    one. Read as C reads them: an unbraced body
    is the one statement after its header, an `else` is the nearest unmatched `if`'s (`if
    (x) if (fast) a(); else return 0;`: the inner one's), a brace in an expression opens a
    block of its own (a lambda's body: its `return` leaves the lambda only)."""
    n = len(tokens)
    found: dict[int, tuple[tuple[_CFrame, ...], int | None]] = {}

    def closing(at: int) -> int:
        close = _closing(tokens, at)
        return n - 1 if close is None else close

    def statement(i: int, held: tuple[_CFrame, ...]) -> int:
        if i >= n or tokens[i] == b"}":
            return i
        token = tokens[i]
        if len(held) > _C_DEPTH:
            return n  # (the rest not read)
        if token == b"{":
            return block(i + 1, held)
        if token == b";":
            return i + 1
        opened = i + 1 + (tokens[i + 1:i + 2] == [b"constexpr"])
        if token in (b"if", b"for", b"while", b"switch", b"catch") and \
                tokens[opened:opened + 1] == [b"("]:
            close = closing(opened)
            header = tuple(tokens[i:close + 1])
            if token == b"if":
                condition = tuple(tokens[opened + 1:close])
                end = statement(close + 1, held + ((b"if", condition, close + 1),))
                other = None
                if end < n and tokens[end] == b"else":
                    other = end + 1
                    bare = _c_bare_exit(tokens[close + 1:end])
                    end = statement(end + 1, held + ((b"else", () if bare else condition,
                                                      end + 1),))
                found[i] = (held, other)
                return end
            if token == b"while":
                found[i] = (held, None)
            kind = {b"for": b"loop", b"while": b"loop"}.get(token, token)
            if token == b"switch" and tokens[close + 1:close + 2] == [b"{"]:
                return block(close + 2, held + ((kind, header, close + 2),), switch=True)
            return statement(close + 1, held + ((kind, header, close + 1),))
        if _WORD.fullmatch(token) and tokens[i + 1:i + 2] == [b":"]:
            # (A label, `retry:`: the statement after it is read as any other.)
            return statement(i + 2, held)
        if token in (b"do", b"try", b"else"):
            kind = {b"do": b"loop", b"try": b"try", b"else": b"block"}[token]
            end = statement(i + 1, held + ((kind, (token,), i + 1),))
            if token == b"do" and tokens[end:end + 2] == [b"while", b"("]:
                end = closing(end + 1) + 1
                return end + (tokens[end:end + 1] == [b";"])
            return end
        # An expression (a declaration, a call, a `return`): to its `;`, a brace in it
        # opening a block of its own (a lambda's body, an initializer, a macro's block).
        found.setdefault(i, (held, None))
        depth = 0
        k = i
        while k < n:
            token = tokens[k]
            if token in (b"(", b"["):
                depth += 1
            elif token in (b")", b"]"):
                depth -= 1
            elif token == b";" and depth <= 0:
                return k + 1
            elif token == b"}":
                return k
            elif token == b"{":
                k = block(k + 1, held + ((b"block", tuple(tokens[i:k]), k + 1),))
                # (A macro's block ends its statement: `CUDA_KERNEL_LOOP(i, n) { ... }`.)
                if depth <= 0 and k < n and tokens[k] not in (
                        b";", b",", b")", b"(", b"[", b".", b"->"):
                    return k
                continue
            k += 1
        return n

    def block(i: int, held: tuple[_CFrame, ...], switch: bool = False) -> int:
        """The statements from `i` to the brace closing their block: the index past it."""
        while i < n and tokens[i] != b"}":
            if switch and tokens[i] in (b"case", b"default"):
                # (A label: what follows it runs for that case only.)
                colon = next((e for e in range(i, n) if tokens[e] in (b":", b";", b"{", b"}")),
                             n)
                kind, header, start = held[-1]
                cut = next((p for p, word in enumerate(header) if word in (b"case", b"default")),
                           len(header))
                held = held[:-1] + ((kind, header[:cut] + tuple(tokens[i:colon]), start),)
                i = colon + (colon < n and tokens[colon] == b":")
                continue
            was = i
            i = statement(i, held)
            if i == was:
                i += 1
        return i + 1 if i < n else n

    # (The last lines of the function's header, where it spans lines, come first: a `)`
    # closing more than they open, `int n) {`, or a constructor's `: a_(a) {`; its brace
    # after them is the function's own, whose closing one is not in `tokens`. Told by the
    # first statement alone: a line dropped further down, `/* end */ }`, changes nothing.)
    i = depth = 0
    for k, token in enumerate(tokens):
        if depth == 0 and token in (b";", b"{", b"}"):
            break
        depth += token in (b"(", b"[")
        depth -= token in (b")", b"]")
        if depth < 0 or tokens[0] == b":":
            i = next((e + 1 for e in range(k, n) if tokens[e] == b"{"), n)
            break
    while i < n:
        was = i
        i = block(i, ())
        if i == was:
            i += 1
    return found


def _c_bare_exit(body: list[bytes]) -> bool:
    """Whether a C `if`'s body (its code tokens) is one `return` or `throw` and nothing
    else, in braces or not (_earlier_branches' bare exit)."""
    if body[:1] == [b"{"] and _closing(body, 0) == len(body) - 1:
        body = body[1:-1]
    return bool(body) and body[0] in _C_LEAVES and body[-1] == b";" and body.count(b";") == 1


def _c_held(frames: tuple[_CFrame, ...], word: bytes | None, tokens: list[bytes], at: int
            ) -> list[list[bytes]]:
    """The conditions (code tokens, each to be joined by `and`) that hold where the C
    statement at `tokens[at]` runs, in the blocks `frames` (_c_frames), its exit `word`
    (`return`, `continue`...): an if's condition, an `else`'s converse, a loop's running at
    all (one token no other test reads as, as _loop_runs: a `return 0` in `for (...) {`
    leaves only where the loop runs; `while (true)`, `for (;;)`, `do` always run, where no
    `break` or `continue` comes before the statement), a `continue` or `break` read to its
    loop (a `break` to its `switch`) only; a `throw` in a `try` may be caught (`<try>`); a
    `switch`'s case, a `catch` and any other block (a lambda's body, whose `return` leaves
    the lambda only; a macro's) each one token of its own: nothing outside it keeps what
    an exit in it does."""
    held: list[list[bytes]] = []
    for kind, header, start in reversed(frames):
        text = b" ".join(header)
        if kind == b"if":
            held.append(list(header))
        elif kind == b"else":
            if header:
                held.append([b"!", b"("] + list(header) + [b")"])
        elif kind == b"loop":
            if word in _LOOP_EXITS or header not in _C_ALWAYS or any(
                    token in (b"break", b"continue") for token in tokens[start:at]):
                held.append([b"<loop: " + text + b">"])
            if word in _LOOP_EXITS:
                break
        elif kind == b"switch":
            held.append([b"<switch: " + text + b">"])
            if word == b"break":
                break
        elif kind == b"try":
            if word == b"throw":
                held.append([b"<try>"])
        else:
            held.append([b"<" + kind + b": " + text + b">"])
    return held


def _checked_arguments(tokens: list[bytes]) -> list[list[bytes]]:
    """The first argument of each call named as a check in `tokens` (`TORCH_CHECK(x !=
    nullptr, "...")`, `torch._check(...)`, C's `assert(x)`), a definition's aside."""
    return [argument for _, argument in _checked_calls(tokens)]


def _checked_calls(tokens: list[bytes]) -> list[tuple[int, list[bytes]]]:
    """_checked_arguments, each with the index of its call's name in `tokens`."""
    found = []
    for k, token in enumerate(tokens[:-1]):
        if tokens[k + 1] != b"(" or not _WORD.fullmatch(token) or \
                not _CHECK_CALL.search(token) or (k and tokens[k - 1] == b"def"):
            continue
        close = _closing(tokens, k + 1)
        inside = tokens[k + 2:close if close is not None else len(tokens)]
        found.append((k, inside[:_top_level(inside, 0, {b","})]))
    return [(k, argument) for k, argument in found if argument]


def _top_level(tokens: list[bytes], start: int, ends: set[bytes]) -> int:
    """The index of the first of `ends` outside brackets from `start` on (or where a bracket
    opened before `start` closes), else the end of `tokens`."""
    depth = 0
    for k in range(start, len(tokens)):
        if depth == 0 and tokens[k] in ends:
            return k
        depth += tokens[k] in (b"(", b"[", b"{")
        depth -= tokens[k] in (b")", b"]", b"}")
        if depth < 0:
            return k
    return len(tokens)


# The operators of a test read alike with its converse (_test_form).
_EQUALITY = {b"==", b"!=", b"is"}
_ORDER = {b"<": False, b">=": False, b">": True, b"<=": True}
_EITHER_WAY = {b"equal", b"is"}
# What a C value compared with reads as its truth (`x == nullptr` is `!x`).
_C_FALSE = {b"nullptr", b"NULL", b"0", b"false"}


def _boolean(tokens: list[bytes], language: str) -> tuple | None:
    """A condition's code tokens as a tree: ("or", parts), ("and", parts) or ("test", test,
    sense) (_test_form), `not` and `!` taken into the sense and brackets around it off. None
    for no tokens."""
    while len(tokens) > 2 and tokens[0] == b"(" and _closing(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]
    if not tokens:
        return None
    for joins, kind in (({b"or", b"||"}, "or"), ({b"and", b"&&"}, "and")):
        parts: list[list[bytes]] = [[]]
        depth = 0
        for token in tokens:
            depth += token in (b"(", b"[", b"{")
            depth -= token in (b")", b"]", b"}")
            if depth == 0 and token in joins:
                parts.append([])
            else:
                parts[-1].append(token)
        if len(parts) > 1:
            trees = [_boolean(part, language) for part in parts]
            if any(tree is None for tree in trees):
                return None
            return (kind, trees)
    if tokens[0] in _NEGATION:
        tree = _boolean(tokens[1:], language)
        return None if tree is None else _negated(tree)
    form, sense = _test_form(tokens, language)
    return ("test", form, sense)


def _negated(tree: tuple) -> tuple:
    """The converse of a _boolean tree (`not (a or b)` is `not a and not b`)."""
    if tree[0] == "test":
        return ("test", tree[1], not tree[2])
    return ("and" if tree[0] == "or" else "or", [_negated(part) for part in tree[1]])


def _ways(tree: tuple | None) -> list[frozenset[_Literal]] | None:
    """The ways a _boolean tree holds, each a set of tests that hold together (`a and b or c`
    holds as {a, b} or as {c}); None where there are more than _MOST_WAYS."""
    if tree is None:
        return None
    if tree[0] == "test":
        return [frozenset({(tree[1], tree[2])})]
    parts: list[list[frozenset[_Literal]]] = []
    for branch in tree[1]:
        part = _ways(branch)
        if part is None:
            return None
        parts.append(part)
    if tree[0] == "or":
        ways = [way for part in parts for way in part]
    else:
        ways = [frozenset()]
        for part in parts:
            ways = [way | more for way in ways for more in part]
            if len(ways) > _MOST_WAYS:
                return None
    return ways if len(ways) <= _MOST_WAYS else None


def _test_form(tokens: list[bytes], language: str) -> tuple[tuple, bool]:
    """One test (no `and`, `or` or `not` around it) as a form read alike for the test and its
    converse, and whether it is the test (True) or the converse: `x is None`, `x == None` as
    (("none", x), True), `x is not None` as (("none", x), False); C's `x`, `x != nullptr`,
    `x != 0` as (("truth", x), True), as is Python's `x`; `a == b` as (("equal", a, b), True)
    (either order); `a < b`, `b > a` as (("order", a, b), True), `a >= b` its converse;
    `a in b` as (("in", a, b), True)."""
    depth = 0
    for k, token in enumerate(tokens):
        depth += token in (b"(", b"[", b"{")
        depth -= token in (b")", b"]", b"}")
        if depth != 0 or k == 0 or not (token in _EQUALITY or token in _ORDER or
                                        token == b"in"):
            continue
        left, right, sense = tokens[:k], tokens[k + 1:], token != b"!="
        if token == b"is" and right[:1] == [b"not"]:
            right, sense = right[1:], False
        if token == b"in" and left[-1:] == [b"not"]:
            left, sense = left[:-1], False
        one_side, other_side = tuple(_bare(left)), tuple(_bare(right))
        if token == b"in":
            return (b"in", one_side, other_side), sense
        if token in _ORDER:
            sides = (other_side, one_side) if _ORDER[token] else (one_side, other_side)
            return (b"order",) + sides, token in (b"<", b">")
        for one, other in ((one_side, other_side), (other_side, one_side)):
            if one == (b"None",):
                return (b"none", other, ()), sense
            if language != "python" and len(one) == 1 and one[0] in _C_FALSE:
                return (b"truth", other, ()), not sense
        kind = b"is" if token == b"is" else b"equal"
        return (kind,) + tuple(sorted((one_side, other_side))), sense
    return (b"truth", tuple(_bare(tokens)), ()), True


def _bare(tokens: list[bytes]) -> list[bytes]:
    """`tokens` with brackets around them all taken off."""
    while len(tokens) > 2 and tokens[0] == b"(" and _closing(tokens, 0) == len(tokens) - 1:
        tokens = tokens[1:-1]
    return tokens


# How many lines a statement read whole spans at most (_statements_of): past it, a bracket
# left open (in code the tokens misread) closes the statement.
_STATEMENT_LINES = 12


# A C label on a line of its own (`out:`; not `default:`, a case's).
_C_LABEL = re.compile(rb"(?!default\s*:)[A-Za-z_]\w*\s*:\s*$")


def _statements_of(lines: _Lines, path: str, name: bytes) -> list[tuple[int, list[bytes]]]:
    """The indent of its first line and the code tokens of each statement of the function
    `name` in `lines` (_statement_lines, the line each starts at left out)."""
    return [(indent, tokens) for _, indent, tokens in _statement_lines(lines, path, name)]


def _statement_lines(lines: _Lines, path: str, name: bytes
                     ) -> list[tuple[int, int, list[bytes]]]:
    """The line (0-based) it starts at, the indent of that line and the code tokens of each
    statement of the function
    `name` in `lines` (the file at `path`): its lines joined while a round or square bracket
    stays open (a condition wrapped over lines, `if (\n    x is None\n    or y is None\n):`,
    C's `if (!x ||\n    !y)`) or a line ends in a backslash (its backslash left out), each
    line as function_named_at reads it; lines of no code left out, and those inside a C block
    comment or a Python string over lines (past_open_text: a guard's copy there is no code).
    Braces join nothing (a C block is many statements); a C++ attribute is left out
    (_unattributed). A C label at column 0 between two lines of the function (`out:`, which
    function_named_at reads as no function's) is the function's: where a `goto` jumps."""
    from patchforge.apply.hunks import _language

    c_family = _language(path) == "c"
    statements: list[tuple[int, int, list[bytes]]] = []
    tokens: list[bytes] = []
    indent = depth = spanned = start = 0
    open_text: bytes | None = None
    for j, line in enumerate(lines.lines):
        if not line.strip() or lines.function_at(path, j) != name and not (
                c_family and _C_LABEL.match(line) and 0 < j < len(lines.lines) - 1 and
                lines.function_at(path, j - 1) == name == lines.function_at(path, j + 1)):
            continue
        code = line
        if open_text is not None or b"/*" in line or b'""' in line or b"'''" in line:
            code, open_text = past_open_text(line, open_text, c_family)
        found = _code_tokens(code, literals=True)
        if c_family:
            found = _unattributed(found)
        if not found and not tokens:
            continue
        if not tokens:
            indent, start = len(line) - len(line.lstrip()), j
        # (A line ending in `\` goes on in the next: `if x is None \` + `or n == 0:`.)
        continued = found[-1:] == [b"\\"]
        tokens.extend(found[:-1] if continued else found)
        depth += sum(token in (b"(", b"[") for token in found) - \
            sum(token in (b")", b"]") for token in found)
        spanned += 1
        if (depth <= 0 and not continued) or spanned >= _STATEMENT_LINES:
            statements.append((start, indent, tokens))
            tokens, depth, spanned = [], 0, 0
    if tokens:
        statements.append((start, indent, tokens))
    return statements


def _c_compiled(lines: _Lines, path: str, name: bytes, starts: list[int]
                ) -> list[list[list[bytes]]]:
    """For each statement of the C function `name` in `lines`, by the line it starts at
    (`starts`, _statement_lines), the conditions (code tokens, each to be joined by `and`)
    of the preprocessor conditionals it is compiled under, read from the function's lines:
    each `#if` one token no other test reads as (`<#if defined CHECKS>` of `#ifdef CHECKS`
    and of `#if defined(CHECKS)`), an `#elif`'s or `#else`'s branch the converse of each
    branch above it with its own (`#ifndef CHECKS` the converse of `#ifdef CHECKS`): a copy
    of a guard under `#ifdef CHECKS` leaves only in a build with CHECKS, copies under both
    branches of an `#ifdef` / `#else` in every build. `#if 1` (`#if true`) holds in every
    build and adds nothing, its `#else` in none; `#if 0` (`#if false`) in none, its `#else`
    in every one. Empty lists where the function has no conditional; a conditional opened
    before the function is not read."""
    found: list[list[list[bytes]]] = [[] for _ in starts]
    if not starts:
        return found
    first = starts[0]
    while first > 0 and lines.function_at(path, first - 1) == name:
        first -= 1
    if not any(b"#" in lines.lines[j] for j in range(first, starts[-1])):
        return found
    # (Each conditional open: the conditions of its branches passed, and of the one in
    # force, None for a branch built always.)
    opened: list[tuple[list[list[bytes]], list[bytes] | None]] = []
    at = 0
    for j in range(first, starts[-1] + 1):
        if starts[at] == j:
            found[at] = [condition for passed, now in opened
                         for condition in [[b"!", b"("] + was + [b")"] for was in passed] +
                         ([now] if now is not None else [])]
            at += 1
            continue
        directive = C_DIRECTIVE.match(lines.lines[j])
        if directive is None or lines.function_at(path, j) != name:
            continue
        word, rest = directive.group(1), _code_tokens(directive.group(2))
        if word in (b"ifdef", b"ifndef", b"elifdef", b"elifndef"):
            rest = [b"defined"] + rest
        if rest[:1] == [b"defined"]:
            rest = [token for token in rest if token not in (b"(", b")")]
        test = [b"<#if " + b" ".join(rest) + b">"]
        if word in (b"ifndef", b"elifndef"):
            test = [b"!"] + test
        if word in (b"if", b"ifdef", b"ifndef"):
            opened.append(([], None if b" ".join(rest) in ALWAYS_BUILT else test))
        elif not opened:
            continue
        elif word == b"endif":
            opened.pop()
        else:
            # (A branch built in no build holds nowhere: the branches past it are not read
            # as its converse.)
            passed, now = opened[-1]
            if now is None or now[-1][5:-1] not in NEVER_BUILT:
                passed = passed + [now if now is not None else [b"<#if 1>"]]
            opened[-1] = (passed, None if word == b"else" else test)
    return found


def _statements_built(lines: _Lines, path: str, name: bytes, language: str
                      ) -> tuple[list[tuple[int, list[bytes]]], list[list[list[bytes]]] | None]:
    """_statements_of the function `name` in `lines`, and in C the preprocessor conditions
    each is compiled under (_c_compiled; None in Python)."""
    listed = _statement_lines(lines, path, name)
    statements = [(indent, tokens) for _, indent, tokens in listed]
    if language != "c":
        return statements, None
    return statements, _c_compiled(lines, path, name, [start for start, _, _ in listed])


def _c_built(statements: list[tuple[int, list[bytes]]],
             compiled: list[list[list[bytes]]] | None) -> Callable[[int], list[list[bytes]]]:
    """The preprocessor conditions (_c_compiled, one list per statement: `compiled`) the
    token at an index of `statements`' tokens joined is compiled under."""
    if not compiled or not any(compiled):
        return lambda k: []
    ends = list(itertools.accumulate(len(tokens) for _, tokens in statements))
    return lambda k: compiled[min(bisect.bisect_right(ends, k), len(compiled) - 1)]


def _check_held_at(store: UpstreamStore, fix: _Fix, k: int, own: _OwnFunction,
                   lost: list[_Check], rev: str,
                   allowed: frozenset[tuple[bytes, ...]] | None = None) -> bool | None:
    """Whether the fix's function `own` at `rev` tests each of `lost` (_function_checks, above
    its work but for `allowed`); None where the file or the function is not there."""
    content = _content_of(fix, k, store.read_blobs(rev, _paths(fix)))
    if content is None or own.name is None:
        return None
    lines = _Lines(content)
    if not own.defined(lines):
        return None
    return all(_function_checks(lines, fix.files[k].path, own.name, check, allowed)
               for check in lost)


def _check_taker(store: UpstreamStore, fix: _Fix, k: int, own: _OwnFunction,
                 lost: list[_Check], landing: str, commit: str,
                 allowed: frozenset[tuple[bytes, ...]] | None = None
                 ) -> tuple[str, str] | None:
    """(the commit, its parent): the latest commit after `landing` up to `commit` changing
    the fix's files after which the fix's function `own` lacks a check of `lost` and before
    which it had every one. None where the history shows none (then nothing is said)."""
    held: dict[str, bool | None] = {}

    def at(rev: str) -> bool | None:
        if rev not in held:
            held[rev] = _check_held_at(store, fix, k, own, lost, rev, allowed)
        return held[rev]

    if at(landing) is not True:
        return None  # (the landing's function not read as checking them: nothing to tell)
    merge = None
    for sha, parents, _ in store.path_log(landing, commit, _paths(fix))[:MAX_COMMITS]:
        if parents and at(sha) is False and at(parents[0]) is True:
            if len(parents) == 1:
                return sha, parents[0]
            # (A merge whose first parent had the check: the commit of its other side that
            # dropped it is named, where there is one.)
            merge = merge or (sha, parents[0])
    return merge


def _check_moved_to_caller(store: UpstreamStore, fix: _Fix, k: int, own: _OwnFunction,
                           lost: list[_Check], taker: tuple[str, str]) -> bool:
    """Whether the commit that took the check out of the fix's function (`taker`) put the
    guard's check (_holds_guard, its names as they are) into other functions that call it, in
    the files of its language that commit changed: upstream moved the guard to its callers
    (each call then checks first), the fix upstream's in another form. Quiet, as a check moved
    within the function is; into a function that does not call it, or a check of its names
    testing something else (`if x.dim() > 2:` put into the caller), it is other code."""
    from patchforge.apply.hunks import _language

    sha, parent = taker
    bare = re.split(rb"\.|::", (own.name or b"").split(b" [")[0])[-1]
    language = _language(fix.files[k].path)
    paths = [p for p in store.changed_paths(parent, sha) if _language(p) == language]
    if not bare or not paths or language is None:
        return False

    def callers_checking(rev: str) -> int:
        found = 0
        for path, content in store.read_blobs(rev, paths).items():
            if content is None or bare not in content:
                continue
            lines = _Lines(content)
            names: dict[bytes, bool] = {}
            for j, line in enumerate(lines.lines):
                if not any(_names_word(line, word) for check in lost for word in check[0]):
                    continue
                name = lines.function_at(path, j)
                if not name or name == own.name or name in names:
                    continue
                names[name] = False
                if not any(_names_word(held, bare) and bare + b"(" in held
                           for held in _body_of(lines, path, name)):
                    continue
                statements, compiled = _statements_built(lines, path, name, language)
                exits = _exits_of(statements, language, compiled)
                names[name] = any(_delegated(statements, check) or
                                  _holds_guard(exits, check, language, None) for check in lost)
            found += sum(names.values())
        return found

    return callers_checking(sha) > callers_checking(parent)


def _quoted(fp: FilePatch, squeezed: list[bytes], most: int = 3) -> str:
    """The fix's added lines whose _squeezed forms are `squeezed`, each as the fix has it
    (stripped, in backticks), the first `most` of them and how many more."""
    from patchforge.apply.diffparse import line_content, line_kind

    shown: list[str] = []
    for line in dict.fromkeys(line_content(body).strip() for hunk in fp.hunks
                              for body in hunk.lines if line_kind(body) == b"+"):
        if _squeezed(line) in squeezed and len(shown) < len(squeezed):
            shown.append(f"`{line.decode('utf-8', 'replace')}`")
    text = ", ".join(shown[:most])
    return text + (f" and {len(shown) - most} more" if len(shown) > most else "")


def _renamed_back(store: UpstreamStore, fix: _Fix, k: int, owns: list[_OwnFunction],
                  content: bytes) -> bytes | None:
    """`content` (the fix's file change `k` at a revision defining none of `owns`, the functions
    its hunks change) with each of them that upstream renamed in place given its old name back;
    None where one of them is not so found. Renamed in place: the place upstream's own diff of
    the base file carries the hunk to (_OwnFunction.carried) is in a function of a name the
    base file lacks, under the same qualifier, and that function keeps at least half of the
    lines of the old one's body. A function deleted and another written where it was keeps
    too little of its body to be read as it renamed."""
    from patchforge.apply.hunks import CFile, _definitions_of, _language

    path = fix.files[k].path
    language = _language(path)
    base = _base_lines(store, fix, k)
    if language is None or base is None or not owns:
        return None
    lines = _Lines(content)
    text = list(lines.lines)
    c_file = CFile(lines.lines) if language == "c" else None
    renamed: dict[bytes, bytes] = {}
    for own in owns:
        old = own.name
        if old is None:
            return None
        hunk = fix.files[k].hunks[own.n - 1]
        carried = own.carried(lines)
        if carried is None:
            return None
        lo, hi = carried
        at = min(lo + hunk.leading_context, max(hi - 1, lo), len(text) - 1)
        new = lines.function_at(path, at, own.changed) if at >= 0 else None
        if not new or new == old or _has_function(base, path, new) or \
                renamed.get(old, new) != new:
            return None
        head_old, _, bare_old = old.split(b" [")[0].rpartition(b"::" if b"::" in old else b".")
        head_new, _, bare_new = new.split(b" [")[0].rpartition(b"::" if b"::" in new else b".")
        if head_old != head_new or old[len(old.split(b" [")[0]):] != \
                new[len(new.split(b" [")[0]):]:
            return None  # (another qualifier or branch: not a rename in place)
        definitions = _definitions_of(lines.lines, at, own.changed, language, c_file)
        if not definitions:
            return None
        was = _body_of(base, path, old)
        now = _body_of(lines, path, new)
        kept = sum(min(was.count(line), now.count(line)) for line in set(was))
        if not was or 2 * kept < len(was):
            return None
        word = re.compile(rb"(?<![\w$])" + re.escape(bare_new) + rb"(?![\w$])")
        for j in range(definitions[0], min(definitions[0] + 3, len(text))):
            if word.search(text[j]):
                text[j] = word.sub(lambda _: bare_old, text[j], count=1)
                break
        else:
            return None
        renamed[old] = new
    return b"".join(text)


def _names_held(fp: FilePatch, owns: list[_OwnFunction], content: bytes) -> bool:
    """Whether each of `owns` (the functions the hunks of `fp` change) in `content` holds,
    for each line its hunk adds with a name the hunk's other lines (its context, the lines it
    removes) do not hold, one line holding every word of that added line, the shared ones
    too: `if`, `x`, `is`, `None` of `if x is None:` under `def a2(x):` on one line. A guard
    written again in another form (`if x is None or x.numel() == 0:`) keeps them; one
    dropped while the lines under it were rewritten does not, even where the rewrite has
    `if b is None:` of its own. A hunk that adds no such name tells nothing: not held."""
    lines = _Lines(content)
    for own in owns:
        if own.name is None:
            return False
        news = _words_of_new_lines(fp.hunks[own.n - 1])
        body = _body_of(lines, fp.path, own.name)
        if not news or not all(
                any(all(_names_word(held, name) for name in words) for held in body)
                for words in news):
            return False
    return True


def _body_of(lines: _Lines, path: str, name: bytes) -> list[bytes]:
    """The lines (stripped, blank ones left out) of the body of the function `name` in
    `lines`, as function_named_at reads each line."""
    return [line.strip() for j, line in enumerate(lines.lines)
            if line.strip() and lines.function_at(path, j) == name]


def _a_name_stays(lines: _Lines, path: str, owns: list[_OwnFunction], base: _Lines | None
                  ) -> bool:
    """Whether `lines` (the file at `path`) still has one of the functions `owns` names: by
    its qualified name; as a function of its bare name under a qualifier the fix's `base` file
    has not (renamed in a namespace, `aiter::f` now `aiter::ob::f`, its class renamed, made a
    method); or, a top-level one, by its bare name outside comments (a call, an import). Then
    the function was not deleted. A function of that bare name the base file has too is
    another's (classes A and C keeping their own `forward` beside the fix's `B.forward`), and a
    comment left naming the function keeps nothing of it: read as staying, the fix's guard
    deleted with its function was in no overlay and not upstream, with nothing said."""
    from patchforge.apply.hunks import _language

    comment = rb"#.*" if _language(path) == "python" else rb"//.*"
    # (Strings stay: a name in a string may be a registry's or getattr's use of it.)
    code_of = re.compile(rb'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|' + comment)
    for own in owns:
        if own.name is None:
            continue
        if own.defined(lines):
            return True
        qualified = re.search(rb"\.|::", own.name.split(b" [")[0]) is not None
        bare = re.split(rb"\.|::", own.name.split(b" [")[0])[-1]
        for k, line in enumerate(lines.lines):
            if bare not in line or not _names_word(
                    code_of.sub(lambda m: m.group() if m.group()[:1] in b"\"'" else b"", line),
                    bare):
                continue
            heads = {h for j in range(k + 1, min(k + 4, len(lines.lines)))
                     if (h := lines.function_at(path, j)) and h != lines.function_at(path, k)
                     and re.split(rb"\.|::", h.split(b" [")[0])[-1] == bare}
            if heads:
                # (The head of a function of that bare name: the fix's renamed, unless the
                # base file has it too.)
                if base is None or any(not _has_function(base, path, h) for h in heads):
                    return True
                continue
            if not qualified:
                return True
    return False


def _moved_renamed(store: UpstreamStore, fix: _Fix, revs: list[str]) -> bool:
    """Whether a file upstream moved a function of the fix into (`fix.moved_to`) is at none of
    its known names at one of `revs` (after that move) and git's rename detection, from the
    commit that moved it there, finds it under another, now one of its names (`fix.moved_on`)
    and aliases: a file renamed after the function moved into it is followed as the fix's own
    are. Not followed, the function read as gone from there at the rename, which was said to
    take the fix out, and at a real take-out later the rename was named again."""
    found = False
    for k, (there, _) in fix.moved_to.items():
        moved_at, later = fix.moved_on.get(k, (None, []))
        if moved_at is None:
            continue
        for rev in revs:
            names = [there, *later]
            if rev == moved_at or any(store.entries(rev, names).values()) or \
                    not store.is_ancestor(moved_at, rev):
                continue
            new = store.renames(moved_at, rev, [there]).get(there)
            if new is not None and new not in names:
                later.append(new)
                fix.aliases[k].append(new)
                found = True
    return found


def _renamed_at(store: UpstreamStore, follow: tuple[str | None, str | None], rev: str,
               paths: list[str]) -> dict[str, str]:
    """Where `rev` has those of the fix's `paths` (true at its base) that upstream renamed:
    path -> its path at `rev`. `follow`: (the fix's base, its landing), either None where not
    known. A file the landing has at its path is followed from the landing, as ever; one it
    has not was renamed between the base and the landing (the rebase that dropped the fix
    followed that rename, its kept diff still names the old path): followed from the base to
    the landing, then on from there. Asked from the landing alone, such a file was at neither
    path, and a revert of the landing in the renamed file went unsaid."""
    base, landing = follow
    since = landing or base
    if since is None or not paths:
        return {}
    found = store.renames(since, rev, paths)
    if landing is None or base is None or base == landing:
        return found
    at_landing = store.entries(landing, paths)
    before = [p for p in paths if at_landing[p] is None and p not in found]
    for path, there in (store.renames(base, landing, before).items() if before else ()):
        if store.entries(rev, [there])[there] is not None:
            found[path] = there
        else:
            later = store.renames(landing, rev, [there]).get(there)
            if later is not None:
                found[path] = later
    return found


def _renamed_before_landing(store: UpstreamStore, fix: _Fix, base: str, landing: str) -> bool:
    """Whether a file of the fix that the landing lacks at its path (a text or binary change,
    not one the fix adds or deletes) was renamed by upstream between the fix's base and the
    landing (git's rename detection): the path it landed at is then the one it is read at,
    the old path no longer one of its aliases. The rebase that dropped the fix followed the
    rename, its kept diff still names the old path; a file upstream wrote later at that path
    (a legacy copy holding the fix's line) is not the fix's, nor a file the fix's function
    moved into (`fix.left_path`), yet, read first, it kept quiet the fix's line taken out of
    the file it landed in."""
    paths = {fp.path: k for k, fp in enumerate(fix.files)
             if not fp.is_new and not fp.is_delete and fix.aliases[k] == [fp.path]}
    if not paths:
        return False
    at_landing = store.entries(landing, sorted(paths))
    gone = sorted(p for p in paths if at_landing[p] is None)
    found = False
    for path, there in (store.renames(base, landing, gone).items() if gone else ()):
        if there not in paths and store.entries(landing, [there])[there] is not None:
            fix.aliases[paths[path]] = [there]
            fix.left_path[paths[path]] = path
            found = True
    return found


def _renamed_between(store: UpstreamStore, fix: _Fix, follow: tuple[str | None, str | None],
                     revs: list[str], renamed: dict[str, str]) -> bool:
    """Whether a file of the fix that upstream renamed since its base (`renamed`: its path
    -> its path at the revision judged) is at none of its known paths at one of `revs` and
    git's rename detection (_renamed_at, `follow`) finds it at another there, now one of its
    aliases: a file renamed twice is at neither its old path nor its newest one at a revision
    between the renames, which read as the change there again, so the revert before them was
    passed over and the second rename named as taking the change out. Asked of the history's
    commits only for a renamed file (its trees read as the store already parses them)."""
    if follow == (None, None):
        return False
    found = False
    for k, fp in enumerate(fix.files):
        if fp.path not in renamed:
            continue
        for rev in revs:
            if any(store.entries(rev, fix.aliases[k]).values()):
                continue
            new = _renamed_at(store, follow, rev, [fp.path]).get(fp.path)
            if new is not None and new not in fix.aliases[k]:
                fix.aliases[k].append(new)
                found = True
    return found


def _reverted_then_changed(store: UpstreamStore, fix: _Fix, commit: str, landing: str | None,
                           base: str, cache: dict,
                           history: _History | None = None) -> LandingGone | None:
    """A kept fix whose change `commit`'s files neither have nor have gone: a `reverted`
    LandingGone when the history after its recorded landing up to `commit` has a revert of it
    (taken as _judge takes one: a commit after which the change is gone and before which it
    was not, whose message names the landing or whose change is the landing's exact reverse)
    that no later commit put back (no commit after it has the change), and what is at the
    fix's place now is the old code changed rather than the fix in another form
    (_relanded); a `removed` one, the same way, for a commit that took the change out as
    other work (_taken_as_work), the newest of them named, unless an older revert of the
    landing is said so (it is named). Else None: superseded, as before.

    Upstream reverted the landing, then edited the same lines again: by the files alone that
    was "superseded", and the revert said at the revision in between went silent at the next
    one, every check green with the fix in no patch and no overlay. The cost falls on a
    superseded fix only: the commits since its landing that say they revert something and
    change its files, or that change each of its files (`history`, one walk for all the kept
    fixes; else a `git log` of its files), and the states of those that may undo it
    (_may_undo); for a fix of several files, the states at the commits that change some of
    them only (other work may take it out a file at a time); its own `git log` only when one
    of them is a revert of it or took it out."""
    if landing is None:
        return None  # (no landing recorded: nothing to name a revert of)
    paths = _paths(fix)
    named = _LandingNames(store, fix, landing, base, cache)
    said = history.reverts_after(landing, fix) if history is not None else None
    if said is not None and history is not None:
        # Each commit that may be a revert of it told on its own, as the walk below tells it,
        # which takes the first one (newest first) that is: with none of them a revert of
        # it, nothing to say, without a walk of its own.
        # (The trees first: the files of the landing read only for a fix that has one.)
        # (A commit that changes some of the fix's files only is no revert of it by hand,
        # but as other work it may take out the part in those files, the rest taken out
        # by another such commit: each asked as a taker only.)
        maybe = [(sha, parents, message) for sha, parents, message in said
                 if _may_undo(sha, parents, message, named) or
                 _taken_as_work(store, fix, sha, parents, cache)] + \
            [(sha, parents, message) for sha, parents, message
             in history.parts_taken_after(landing, fix)
             if _taken_as_work(store, fix, sha, parents, cache)]
        if not maybe or _fix_state(store, fix, landing, cache) == "gone":
            return None
        if not any(_revert_of(store, fix, sha, parents, message, named, cache) or
                   _taken_as_work(store, fix, sha, parents, cache)
                   for sha, parents, message in maybe):
            return None
    log = store.path_log(landing, commit, paths)[:MAX_COMMITS]
    if not any(_may_undo(sha, parents, message, named) or
               _taken_as_work(store, fix, sha, parents, cache)
               for sha, parents, message in log):
        return None
    if not store.is_ancestor(landing, commit):
        return None
    if _fix_state(store, fix, landing, cache) == "gone":
        return None  # its pre-image was there at the landing: landed in another form

    def said_by(k: int, sha: str, parents: list[str], how: str | None) -> LandingGone | None:
        """What is said of the commit log[k] that took the change out (`how` it reverted
        the landing, or None: as other work), or None: superseded."""
        # (Read from the shared walk's parents when it told this fix's commits: a git
        # process per commit was most of the cost of a revert found.)
        since = [later for later, _, _ in log[:k]
                 if (history.descends(later, sha) if history is not None and said is not None
                     else store.is_ancestor(sha, later))]
        if any(_fix_state(store, fix, later, cache) == "present" for later in since):
            return None  # put back since (a revert of the revert), then changed: superseded
        # A revert that took out only some hunks (the others as landed, or as upstream
        # changed them before it): those hunks alone tell what became of it since.
        taken = None if _gone_but_imports(store, fix, sha, cache) else \
            _taken_in_part(store, fix, sha, parents[0], cache)
        left, in_part = taken, ""
        if taken is not None:
            # (Each hunk it took out that a commit since put back, as it was or with its
            # lines elsewhere in the file as often as the landing left them, is upstream's
            # again: a re-landing of it, whatever upstream made of it after. So are those
            # left where a commit since holds them in another form (_relanded): the same
            # change landed again, reworked, then edited further.)
            left = taken
            for later in since:
                there = store.read_blobs(later, paths)
                left = left - _put_back(store, fix, there, left)
                if not left or _relanded(fix, there, left):
                    return None  # the part taken out all put back since: upstream's
            in_part = _taken_back_in_part(store, fix, sha) if left == taken else \
                f"; taken back in part: {_hunk_names(fix, left)}, the rest of its change " \
                f"upstream ({_hunk_names(fix, taken - left)} put back since)"
        elif not how:
            # (Taken out whole as other work: each hunk a commit since has again, at its place
            # or its added lines elsewhere in the file as often as the landing left them, is
            # upstream's again, moved; all of them so, whatever became of the old code, it
            # landed again: superseded, as a move after the take-out is, an edit of the old
            # code after it or not.)
            if sha not in fix.gone_hunks:
                _fix_state(store, fix, sha, {})  # (a state cached by another judging)
            whole = fix.gone_hunks.get(sha) or frozenset()
            for later in since if whole else ():
                whole = whole - _put_back(store, fix, store.read_blobs(later, paths), whole)
                if not whole:
                    return None
        if not since:
            return None
        if _relanded(fix, store.read_blobs(commit, paths), left):
            return None
        changed = f"{since[0][:12]} changed that code since, and neither the fix's change " \
            "nor the code it replaced is there as it was"
        if not how:
            return LandingGone(fix.upstream, fix.name, fix.path, "removed", landing, sha,
                               f"commit {sha[:12]} took its change out as part of other work "
                               f"(no revert of the landing){in_part}; taken out, then "
                               f"changed: {changed}")
        return LandingGone(fix.upstream, fix.name, fix.path, "reverted", landing, sha,
                           f"{how}{in_part}; reverted, then changed: {changed}")

    work: LandingGone | None = None  # (the newest commit that took it out as other work)
    for k, (sha, parents, message) in enumerate(log):  # newest first: the last taker
        how = _revert_of(store, fix, sha, parents, message, named, cache)
        if work is not None:
            # An older revert of the landing is named over a later commit that took the
            # change out as other work, unless a commit between put the fix back as it was:
            # what that commit took out was upstream's change nearer the fix than the old
            # code (_relanded), which the files cannot tell from a temporary change of the
            # same line (AITER `30f3975714`, reverted by `ae821833f8`, then its runner line
            # changed to another like it and back twice: the last change back was named).
            if how:
                return said_by(k, sha, parents, how) or work
            continue
        # (No revert of it: a commit that took the change out as part of other work, said
        # so at the revision after it, is said so still after an edit of the old code.)
        if not how and not _taken_as_work(store, fix, sha, parents, cache):
            continue
        found = said_by(k, sha, parents, how)
        if found is None or how:
            return found
        work = found
    return work


def _taken_as_work(store: UpstreamStore, fix: _Fix, sha: str, parents: list[str],
                   cache: dict) -> bool:
    """Whether the commit `sha` (one parent) took the fix's change out, whatever its message:
    after it the change is gone (an import aside: _gone_but_imports) or some hunks have their
    old code back (_taken_in_part), and before it the fix was there whole or in part (the
    rest taken out: the later commit is named, as _judge names it), or in another form nearer
    the fix than the old code (_relanded: a re-land, or the fix's line edited). A commit
    before which the old code was already there changed (a tidy of it, read as neither) took
    nothing out: the commit that did is earlier. The revision after such a commit says it
    taken out as part of other work; read alone, an edit of the old code after it made the
    fix "superseded", exit 0, the fix in no overlay and not upstream."""
    if len(parents) != 1 or not (_gone_but_imports(store, fix, sha, cache) or
                                 _taken_in_part(store, fix, sha, parents[0], cache) is not None):
        return False
    before = _fix_state(store, fix, parents[0], cache)
    if before == "part":
        return not _gone_but_imports(store, fix, parents[0], cache)
    return before == "present" or \
        (before == "other" and _relanded(fix, store.read_blobs(parents[0], _paths(fix))))


def _revert_of(store: UpstreamStore, fix: _Fix, sha: str, parents: list[str], message: bytes,
               named: _LandingNames, cache: dict) -> str | None:
    """How the commit `sha` (its `parents` and `message`) reverted the fix's landing, or
    None: it may undo it (_may_undo: its message says it reverts, or it put the fix's files
    back by hand), the fix's change is gone after it (but an import it kept:
    _gone_but_imports) and was not before it, and its message
    names the landing or its change is the landing's exact reverse (_LandingNames.how)."""
    if not _may_undo(sha, parents, message, named) or \
            not (_gone_but_imports(store, fix, sha, cache) or
                 _taken_in_part(store, fix, sha, parents[0], cache) is not None) or \
            _fix_state(store, fix, parents[0], cache) == "gone":
        return None
    return named.how(message, sha)


def _taken_in_part(store: UpstreamStore, fix: _Fix, sha: str, parent: str, cache: dict
                   ) -> frozenset | None:
    """The hunks (file change index, hunk number from 1, None for a whole file) the commit
    `sha` took out of the fix where it took out only some, or None: after it some hunks have
    their old code back and every other one is as landed or as upstream changed it before
    (_fix_state says part), and before it the fix was neither gone nor in part (all there, or
    changed otherwise). A revert of the landing made after upstream changed another of its
    hunks (git revert leaves that hunk as upstream wrote it), or one that takes out a hunk
    and keeps the others: read as a revert only where the whole fix was gone at it, an edit
    of the reverted lines after it made the fix "superseded", nothing said."""
    if _fix_state(store, fix, sha, cache) != "part" or \
            _TAKEN.get(_fix_state(store, fix, parent, cache), 2) < 2:
        return None
    if sha not in fix.gone_hunks:
        _fix_state(store, fix, sha, {})  # (a state cached by another judging: noted again)
    return fix.gone_hunks.get(sha) or None


def _gone_but_imports(store: UpstreamStore, fix: _Fix, rev: str, cache: dict) -> bool:
    """Whether the fix's change is gone at `rev` (_fix_state), or gone but for hunks of import
    lines still there, as the fix wrote them or in another form (`fix.imports_alone`): a
    revert that kept the fix's import (other code may use it, or upstream's formatter rewrote
    it since the landing) took the fix out all the same. Read as a part still there, the
    revert was none, and an edit of the old code after it made the fix "superseded", nothing
    said."""
    state = _fix_state(store, fix, rev, cache)
    return state == "gone" or (state == "part" and rev in fix.imports_alone)


def _may_undo(sha: str, parents: list[str], message: bytes, named: _LandingNames) -> bool:
    """Whether a commit may be a revert of the landing, to be told by the files (_revert_of):
    it has one parent, and its message says it reverts something, or it put back by hand
    each of the fix's files as the landing found it, from exactly what the landing made of
    it (_LandingNames.put_back_by), or it took the fix's change out by hand after other edits
    of those files (_LandingNames.takes_out: the change whole before it, the old code back
    after it): a revert made without `git revert` and without the word. The cheaper asks
    first: the message, then the trees, then the files (read at the commits that change each
    of the fix's files, only for a fix neither there nor gone). _revert_of then takes it only
    where its change is the landing's exact reverse."""
    if len(parents) != 1:
        return False
    return bool(_SAYS_REVERT.search(message)) or named.put_back_by(sha, parents[0]) or \
        named.takes_out(sha, parents[0])


class _LandingNames:
    """What names a fix's landing in a revert (_names_landing, _exact_reverse): the commits
    of the landing and its pull requests, asked of the store when first needed."""

    def __init__(self, store: UpstreamStore, fix: _Fix, landing: str, base: str,
                 cache: dict) -> None:
        self.store, self.fix, self.landing, self.base = store, fix, landing, base
        self.cache = cache  # the fix's states by revision (_fix_state's)
        self._landings: list[str] | None = None
        self._prs: set[bytes] = set()
        self._made: tuple[dict, dict] | None = None

    def how(self, message: bytes, taker: str) -> str | None:
        if self._landings is None:
            self._landings = _landing_commits(self.store, self.fix, self.landing, self.base)
            self._prs = _pull_requests(self.store, self.fix, self.landing)
        return _names_landing(self.store, message, self.landing, self._landings, self._prs) \
            or _exact_reverse(self.store, self.fix, self.landing, taker)

    def put_back_by(self, sha: str, parent: str) -> bool:
        """Whether each of the fix's files is, at `parent`, the blob (and mode) the landing
        made and, at `sha`, the one the landing replaced (at the file's path, or where
        upstream renamed it since): told from the trees, no file read."""
        if self._made is None:
            before = self.store.parents_of([self.landing]).get(self.landing)
            own = sorted({fp.path for fp in self.fix.files})
            self._made = (self.store.entries(self.landing, own),
                          self.store.entries(before, own)) if before else ({}, {})
        made, found = self._made
        if not made:
            return False
        paths = _paths(self.fix)
        there, back = self.store.entries(parent, paths), self.store.entries(sha, paths)
        for k, fp in enumerate(self.fix.files):
            if made[fp.path] == found[fp.path]:
                return False  # (the landing did not change this file)
            if not any(there[p] == made[fp.path] and back[p] == found[fp.path]
                       for p in self.fix.aliases[k]):
                return False
        return True

    def takes_out(self, sha: str, parent: str) -> bool:
        """Whether the fix's change is there whole at `parent` and its old code back at
        `sha` (_fix_state): the fix's lines taken out by hand after other edits of its files,
        which put_back_by cannot tell from the trees (the files are no longer the blobs the
        landing made). Told from the files at both revisions, each read once."""
        return _fix_state(self.store, self.fix, sha, self.cache) == "gone" and \
            _fix_state(self.store, self.fix, parent, self.cache) == "present"


# A path git reads as a pattern, not as itself (path_log's pathspecs are not literal).
_GIT_PATTERN = on_first_use(r"[*?[\\]|^:")


class _History:
    """The commits after the kept fixes' landings up to the revision judged, read once for
    all of them (judge_many): a fix whose change is neither there nor gone asks which commits
    since its landing say they revert something and change its files. Asked of each fix, a
    `git log` of its files since its landing compared trees at every commit of that range,
    once per kept fix: 30 fixes 300 commits after their landings paid 15 such walks. Here
    git reads the commits from the landings' common ancestor up to the revision once (their
    messages and parents, no tree), and the files changed by each of them with one parent in
    one more process (files_changed, no path given: 20 ms of CPU for 300 AITER commits);
    each fix takes those after its own landing by the parents read.

    What it gives is never less than the fix's own `git log` has among the commits that may
    undo it (_may_undo: a commit with one parent is in that log exactly when it is after the
    landing and changes one of the files, or a directory git's pathspec names; one that puts
    the files back by hand changes each of them); where it cannot say so (no common
    ancestor, a landing it was not asked about, a path git reads as a pattern or that is not
    ASCII) it says None and the fix walks its own history, as before."""

    def __init__(self, store: UpstreamStore, commit: str, landings: set[str]) -> None:
        self.store, self.commit, self.landings = store, commit, landings
        self.bottom: str | None = None
        self.parents: dict[str, list[str]] = {}
        self.reverts: list[tuple[str, list[str], bytes, set[str]]] = []
        self._read = False
        self._children: dict[str, list[str]] | None = None
        self._after: dict[str, set[str]] = {}

    def _walk(self) -> None:
        if self._read:
            return
        self._read = True
        try:
            bottom = self.store.common_ancestor([self.commit, *sorted(self.landings)])
            if bottom is None:
                return
            log = self.store.commits_since(bottom, self.commit)
            singles = [(sha, parents, message) for sha, parents, message in log
                       if len(parents) == 1]
            changed = self.store.files_changed([sha for sha, _, _ in singles])
        except PatchforgeError:
            return  # (each fix walks its own history, and is told what went wrong there)
        self.parents = {sha: parents for sha, parents, _ in log}
        self.reverts = [(sha, parents, message, changed.get(sha, set()))
                        for sha, parents, message in singles]
        self.bottom = bottom

    def reverts_after(self, landing: str, fix: _Fix
                      ) -> list[tuple[str, list[str], bytes]] | None:
        """(commit, parents, message) of each commit with one parent after `landing` up to
        the revision that changes one of the fix's paths and whose message says revert, or
        that changes each of its files (where a revert made by hand is); [] when `landing`
        is not in the revision's history; None when this walk cannot tell."""
        paths = _paths(fix)
        if landing not in self.landings or \
                any(not p.isascii() or _GIT_PATTERN.search(p) for p in paths):
            return None
        self._walk()
        if self.bottom is None:
            return None
        if landing != self.bottom and landing not in self.parents:
            # (The bottom is an ancestor of the landing and of the revision: a landing the
            # walk did not reach is not in the revision's history.)
            return []
        wanted = set(paths)
        return [(sha, parents, message) for sha, parents, message, files in self.reverts
                if (_names_any(files, wanted) if _SAYS_REVERT.search(message)
                    else all(files.intersection(aliases) for aliases in fix.aliases.values()))
                and sha != landing and landing not in self._descendants(sha)]

    def parts_taken_after(self, landing: str, fix: _Fix) -> list[tuple[str, list[str], bytes]]:
        """(commit, parents, message) of each commit with one parent after `landing` up to
        the revision, its message saying no revert, that changes some of the fix's files but
        not each of them: where other work may have taken a fix of several files out a file
        at a time (_taken_as_work), which reverts_after leaves out. Asked after it (the walk
        read, the landing in it)."""
        if len(fix.aliases) < 2 or self.bottom is None:
            return []
        return [(sha, parents, message) for sha, parents, message, files in self.reverts
                if not _SAYS_REVERT.search(message)
                and any(files.intersection(aliases) for aliases in fix.aliases.values())
                and not all(files.intersection(aliases) for aliases in fix.aliases.values())
                and sha != landing and landing not in self._descendants(sha)]

    def descends(self, later: str, sha: str) -> bool:
        """Whether `later` has `sha` in its history (both commits of the walk)."""
        return later in self._descendants(sha)

    def _descendants(self, sha: str) -> set[str]:
        """The commits of the walk that have `sha` in their history."""
        if sha not in self._after:
            if self._children is None:
                self._children = {}
                for child, parents in self.parents.items():
                    for parent in parents:
                        self._children.setdefault(parent, []).append(child)
            found: set[str] = set()
            todo = [sha]
            while todo:
                for child in self._children.get(todo.pop(), ()):
                    if child not in found:
                        found.add(child)
                        todo.append(child)
            self._after[sha] = found
        return self._after[sha]


def _names_any(files: set[str], paths: set[str]) -> bool:
    """Whether one of `files` is one of `paths` or under one of them (a directory), as git's
    pathspec matches a path."""
    for name in files:
        if name in paths:
            return True
        cut = name.find("/")
        while cut > 0:
            if name[:cut] in paths:
                return True
            cut = name.find("/", cut + 1)
    return False


def _relanded(fix: _Fix, contents: dict, only: frozenset | None = None) -> bool:
    """Whether the fix's place in `contents` (a revision's files by path) holds the fix in
    another form rather than the old code changed: each hunk's lines between its context
    (found as _held finds a place) compared with the fix's `+` run and with its `-` run; a
    hunk nearer its `+` run and none nearer its `-` run. A hunk whose place is not found
    tells nothing, and no hunk telling is no re-landing: the revert stands. With `only`
    (file change index, hunk number from 1), the hunks a revert in part took out alone tell
    (_taken_in_part): the others stayed as landed, or as upstream changed them before it."""
    nearer_fix = False
    for to_fix, to_old, imports in _nearness(fix, contents, only):
        if to_old > to_fix:
            return False  # (one hunk nearer the old code: no re-landing, whatever follows)
        # (An import the fix added, still there, tells no re-landing: a revert may keep it,
        # for other code or as upstream's formatter rewrote it. Nearer the old code, it
        # tells no re-landing all the same.)
        nearer_fix = nearer_fix or (to_fix > to_old and not imports)
    return nearer_fix


def _old_code_edited(fix: _Fix, contents: dict) -> bool:
    """Whether the fix's place in `contents` (a revision's files by path) holds its old code
    edited rather than the fix in any form: each hunk's place found (_nearness), and each
    nearer its `-` run than its `+` run (a hunk of import lines only aside: a revert may
    keep an import). A hunk whose place is not found, or one nearer the fix, tells no tidy."""
    hunks = sum(len(fp.hunks) for fp in fix.files
                if not (fp.is_new or fp.is_delete or fp.binary is not None))
    found = list(_nearness(fix, contents, None))
    return bool(found) and len(found) == hunks and \
        all(to_old > to_fix or imports for to_fix, to_old, imports in found) and \
        not all(imports for _, _, imports in found)


def _nearness(fix: _Fix, contents: dict, only: frozenset | None
              ) -> Iterator[tuple[float, float, bool]]:
    """For each hunk of the fix (of `only`) whose place is found in `contents` (its lines
    between its context, as _held finds a place): how near what is there is to the fix's `+`
    run and to its `-` run, and whether the hunk changes import lines only."""
    for k, fp in enumerate(fix.files):
        content = _content_of(fix, k, contents)
        if content is None or fp.is_new or fp.is_delete or fp.binary is not None:
            continue
        lines = _Lines(content)
        for n, hunk in enumerate(fp.hunks, 1):
            if only is not None and (k, n) not in only:
                continue
            old, new = hunk.old_lines(), hunk.new_lines()
            lead, trail = hunk.leading_context, hunk.trailing_context
            run = _between(lines, old[:lead], old[len(old) - trail:],
                           max(len(old), len(new)) - lead - trail)
            if run is None:
                continue
            here = b"".join(run)
            yield (_similarity(here, b"".join(new[lead:len(new) - trail])),
                   _similarity(here, b"".join(old[lead:len(old) - trail])),
                   _imports_only(fp, hunk))


def _put_back(store: UpstreamStore, fix: _Fix, contents: dict, taken: frozenset
              ) -> frozenset:
    """Of the hunks a revert in part took out (`taken`, _taken_in_part), those `contents` (a
    revision's files by path) has again: its change at its place (_hunk_state), or its added
    lines that tell code in the file at least as often as the landing left them there,
    wherever they are (_moved_away's count: a re-landing whose neighbour line upstream edited
    in the same commit is found at no place). A whole file (hunk None): its change there."""
    back = set()
    for k, n in taken:
        fp = fix.files[k]
        content = _content_of(fix, k, contents)
        if content is None:
            continue
        if n is None:
            if change_state(fp, content) == "present":
                back.add((k, n))
            continue
        hunk = fp.hunks[n - 1]
        if _hunk_state(_Lines(content), hunk) == "present" or \
                (_added(hunk) and n in _moved_away(store, fix, k, fp, content, [n])):
            back.add((k, n))
    return frozenset(back)


def _hunk_names(fix: _Fix, hunks: frozenset) -> str:
    """`PATH hunk N` (or `PATH` for a whole file) of each of `hunks`, in the fix's order."""
    return ", ".join(fix.files[k].path if n is None else f"{fix.files[k].path} hunk {n}"
                     for k, n in sorted(hunks, key=lambda kn: (kn[0], kn[1] or 0)))


def _similarity(a: bytes, b: bytes) -> float:
    """difflib.SequenceMatcher(None, a, b, autojunk=False).ratio(), the same number: twice
    the bytes of the matching blocks over both lengths, each block the longest match of its
    range (leftmost in `a`, then in `b`), the ranges on either side matched again. difflib
    finds each longest match by every pair of equal bytes, time that grows with the product
    of the lengths: two runs of 20 KB (a tuned kernel table a revert and an edit left
    apart) took 12 s each. A large range's longest match is found here by a suffix
    automaton of its `b` side (_longest_match), in time that grows with the lengths; a small
    range is left to difflib's own, the same answer either way."""
    from difflib import SequenceMatcher

    matcher = SequenceMatcher(None, a, b, autojunk=False)
    total = 0
    todo = [(0, len(a), 0, len(b))]
    while todo:
        alo, ahi, blo, bhi = todo.pop()
        if (ahi - alo) * (bhi - blo) <= _SMALL_MATCH:
            i, j, k = matcher.find_longest_match(alo, ahi, blo, bhi)
        else:
            i, j, k = _longest_match(a, b, alo, ahi, blo, bhi)
        if k:
            total += k
            if alo < i and blo < j:
                todo.append((alo, i, blo, j))
            if i + k < ahi and j + k < bhi:
                todo.append((i + k, ahi, j + k, bhi))
    length = len(a) + len(b)
    return 2.0 * total / length if length else 1.0


# A range of this many pairs of bytes or fewer is left to difflib (a suffix automaton costs
# more to build than difflib's pairs of a small range).
_SMALL_MATCH = 40_000


def _longest_match(a: bytes, b: bytes, alo: int, ahi: int, blo: int,
                   bhi: int) -> tuple[int, int, int]:
    """(i, j, k): a[i:i+k] == b[j:j+k], the longest such within a[alo:ahi] and b[blo:bhi],
    the one starting first in `a`, then first in `b` (difflib's find_longest_match without
    junk). The suffix automaton of b[blo:bhi] walked along a[alo:ahi] gives, at each byte,
    the longest run ending there found in `b`; the first longest is the one starting first
    in `a`, and its first place in `b` is where bytes.find finds it."""
    link, size = [-1], [0]
    moves: list[dict[int, int]] = [{}]
    last = 0
    for c in b[blo:bhi]:
        cur = len(size)
        size.append(size[last] + 1)
        link.append(0)
        moves.append({})
        p = last
        while p != -1 and c not in moves[p]:
            moves[p][c] = cur
            p = link[p]
        if p != -1:
            q = moves[p][c]
            if size[p] + 1 == size[q]:
                link[cur] = q
            else:
                clone = len(size)
                size.append(size[p] + 1)
                link.append(link[q])
                moves.append(dict(moves[q]))
                while p != -1 and moves[p].get(c) == q:
                    moves[p][c] = clone
                    p = link[p]
                link[q] = link[cur] = clone
        last = cur
    state = run = best = 0
    end = -1
    for at in range(alo, ahi):
        c = a[at]
        while state and c not in moves[state]:
            state = link[state]
            run = size[state]
        if c in moves[state]:
            state = moves[state][c]
            run += 1
        else:
            state = run = 0
        if run > best:
            best, end = run, at
    if not best:
        return alo, blo, 0
    i = end - best + 1
    return i, b.find(a[i:i + best], blo, bhi), best


def _between(lines: _Lines, before: list[bytes], after: list[bytes],
             size: int) -> list[bytes] | None:
    """The lines between `before` (ending right above them) and `after` (starting right below
    them) at the one place of the file where both hold, each whole, at most `size` + 10 lines
    apart; None without context on both sides, or where no such place is one."""
    if not before or not after:
        return None
    text = lines.lines
    ends = [k + 1 for k in lines.at(before[-1])
            if k + 1 >= len(before) and text[k + 1 - len(before):k + 1] == before]
    starts = [k for k in lines.at(after[0]) if text[k:k + len(after)] == after]
    found = [(end, start) for end in ends for start in starts if 0 <= start - end <= size + 10]
    if len(found) != 1:
        return None
    end, start = found[0]
    return text[end:start]


def _landing_by_files(store: UpstreamStore, fix: _Fix, base: str, reference: str,
                      cache: dict) -> str | None:
    """The newest commit of base..reference that changes the fix's files, with one parent,
    whose files have the fix's change and whose parent's do not: where the change came in
    (None without a base known here, or no such commit)."""
    if not base or not store.has_object(base) or not store.is_ancestor(base, reference):
        return None
    paths = sorted({p for aliases in fix.aliases.values() for p in aliases})
    for sha, parents, _ in store.path_log(base, reference, paths)[:MAX_COMMITS]:
        if len(parents) == 1 and _fix_state(store, fix, sha, cache) == "present" and \
                _fix_state(store, fix, parents[0], cache) != "present":
            return sha
    return None


def _deletes(fix: _Fix, path: str) -> bool:
    return any(fp.is_delete and fp.path == path for fp in fix.files)


def _commit(store: UpstreamStore, rev: str | None) -> str | None:
    if not rev:
        return None
    try:
        return store.resolve(rev)
    except PatchforgeError:
        return None  # (not in the store: a rewritten upstream history)


def _landing_commits(store: UpstreamStore, fix: _Fix, landing: str, base: str) -> list[str]:
    """The landing commit and the commits before it, after the fix's base, that changed the
    fix's files: a fix that landed in several commits is reverted by a revert of any of them
    (the last of them taken back restores the pre-image)."""
    commits = [landing]
    if base and store.has_object(base) and store.is_ancestor(base, landing):
        paths = sorted({fp.path for fp in fix.files})
        commits += [sha for sha, parents, _ in store.path_log(base, landing, paths)[:50]
                    if len(parents) == 1 and sha != landing]
    return commits


def _pull_requests(store: UpstreamStore, fix: _Fix, landing: str) -> set[bytes]:
    """The numbers of the pull request that landed the fix: `(#N)` ending the landing
    commit's subject (a squash merge), the fix's Forwarded pull request URL."""
    numbers = set()
    subject = store.commit_message(landing).split(b"\n", 1)[0]
    found = _PR_IN_SUBJECT.search(subject) or _MERGED_PR.match(subject)
    if found:
        numbers.add(found[1])
    url = _PR_URL.search((fix.patch.get("Forwarded") or "").strip())
    if url:
        numbers.add(url[1].encode())
    return numbers


def _names_landing(store: UpstreamStore, message: bytes, landing: str, landings: list[str],
                   prs: set[bytes]) -> str | None:
    """How `message` names the landing, or None: `This reverts commit X` for a commit of the
    landing or for the merge that brought it; or, a message that says it reverts, the
    landing's pull request number."""
    for named in _REVERTS_COMMIT.findall(message):
        text = named.decode().lower()
        if any(c.startswith(text) for c in landings):
            return f"its message reverts {text[:12]}"
        try:
            merge = store.resolve(text)
            second = store.resolve(merge + "^2")
            first = store.resolve(merge + "^1")
        except PatchforgeError:
            continue  # not a merge (no second parent), or not in the store
        if second and store.is_ancestor(landing, merge) and \
                not store.is_ancestor(landing, first):
            return f"its message reverts the merge {merge[:12]} that brought it"
    subject = message.split(b"\n", 1)[0]
    if prs and re.search(rb"\brevert", subject, re.IGNORECASE):
        for number in sorted(prs):
            if re.search(rb"#" + number + rb"\b", subject):
                return f"its message reverts #{number.decode()}"
    return None


def _exact_reverse(store: UpstreamStore, fix: _Fix, landing: str, taker: str) -> str | None:
    """Whether the taker's change to the fix's files is the exact reverse of the landing
    commit's change to them (a revert made by hand), whitespace aside; or, where the landing
    also changed other lines of a file, the exact reverse of the landing's blocks that are the
    fix's own (the fix's lines taken out by hand, the landing's other work kept): the fix's
    blocks, in order among the landing's, and nothing else. A taker that deletes a file the
    fix created and adds a file anywhere is a move (with an edit below git's rename
    similarity, or not), not a revert."""
    from patchforge.history import blocks_of_file_patch, blocks_of_git_diff, reverse

    if any(fp.is_new for fp in fix.files) and store.added_files(taker):
        return None
    paths = sorted({p for aliases in fix.aliases.values() for p in aliases})
    text = store.commit_patches([landing, taker], paths)
    blocks: dict[str, dict[str, tuple]] = {landing: {}, taker: {}}
    current = None
    for part in re.split(rb"(?m)^(?=[0-9a-f]{40}$|diff --git )", text):
        head = part.split(b"\n", 1)[0]
        if re.fullmatch(rb"[0-9a-f]{40}", head):
            current = head.decode()
        elif head.startswith(b"diff --git ") and current in blocks:
            found = re.match(rb"diff --git a/(.*) b/(.*)$", head)
            if found:
                blocks[current][found[2].decode("utf-8", "surrogateescape")] = \
                    blocks_of_git_diff(part)
    own_lines = False
    for k, fp in enumerate(fix.files):
        made = blocks[landing].get(fp.path)
        undone = next((blocks[taker][p] for p in fix.aliases[k] if p in blocks[taker]), None)
        if not made or undone is None:
            return None
        if undone != reverse(made):
            own = () if fp.is_binary or fp.is_new or fp.is_delete else blocks_of_file_patch(fp)
            rest = iter(made)  # (each of the fix's blocks a block of the landing, in order)
            if not own or reverse(undone) != own or not all(block in rest for block in own):
                return None
            own_lines = True
    return f"its change is the exact reverse of {landing[:12]}'s" + \
        (" change to the fix's lines" if own_lines else "")
