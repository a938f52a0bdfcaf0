"""Model-based test (Hypothesis stateful testing) of every command in every state a user meets:
the steps of tests/test_model.py (fixes made, edited, renamed, moved, deleted; upstream moving and
rebases stopping; --continue, --skip, --abort; bring-back; interrupts and kills; the cache
going; a second stack on the same cache), and between them any other command, whatever is open:

- the read-only ones (`status`, `status --json`, `status --against`, `list`, `show`, `lint`,
  `overlays --check`, `verify`, `check`, `ledger --check`, `upstream list`, `fetch`, `pr`
  drafting, `export --mbox`/`--quilt`, `rebase --dry-run`, `bump --dry-run`) and the writing
  ones (`overlays`, `ledger`, `import mbox`/`quilt` of another stack's export);
- an interrupt (SIGINT, SIGTERM, kill -9, EIO at the nth write) of any command that writes,
  an open edit's `refresh`, `new`, `edit`, `edit --close`, `overlays` and the imports included;
- round trips of the series as it stands (a stop or an edit open): `export --mbox` and
  `--quilt` imported into a new stack on the same pin, and `export --mbox` through `git am`
  then `import git`, give back the same fixes;
- two commands at once, in real processes: one that writes held at a point of its run (before
  it takes the project's lock, at a write or rename, before a kept answer or the store's
  configuration is written: the crash tests' SIGSTOP) while any other runs on the project
  (`refresh` while `rebase --to` runs, `overlays` while `delete`, `bring-back` while `status`),
  and two projects on one cache at once (fetch and rebase of each): each finishes or refuses
  with a clear message (exit 2), never an internal error, and no fix is lost;
- a stop (a rebase's or a bring-back's) resolved, then its `--continue` cut short at any of
  fsutil's points (a write, rename, directory sync, link, journal removal);
- quilt's way back into this project: `export --quilt DIR` (one DIR for the run), `quilt
  refresh` of a fix there, `import quilt DIR --update` (also cut short first, then run again);
- the upstream unreachable with an empty cache (a laptop offline after `rm -rf ~/.cache`):
  every command either works from what it has or says what is missing (exit 2), and the
  series and any open stop or edit are as they were.
- fixes kept as landed and what upstream does to them after (KEPT_PATH, whose functions are
  the kept fixes' own: a guard at a function's top, a `torch.cuda.synchronize()` before its
  return, or both): upstream lands a fix (also again, after taking it back; its pull request
  also synchronizing in a helper), reverts it whole (`git revert`'s message, also with a
  synchronize added in a helper by the revert itself) or one of its hunks, moves one of its
  lines within the function, moves the function below the others (dropping its synchronize on
  the way, too) or into another file (KEPT_ELSEWHERE), drops its guard in a commit that rewrites the line below it, re-wraps its
  guard (quotes, black's parentheses, moved too),
  adds the common synchronize in a helper, or makes a fix it reverted again its own way (a
  few lines off; a helper that synchronizes); or, before a fix lands, upstream makes its
  guard its own way a line lower (the fix's hunk changing a call too; a short one-line guard
  re-spaced over two lines); the user rebases onto it, asks `status --against` it, or not
  yet; `bring-back` of what `status` says upstream took back (or a rebase set aside), and
  its stop (or a rebase's) resolved as a user would (upstream's side, the fix's lines its
  function lacks put back, its own copy of a line upstream made its own way taken out) and
  `--continue`d.

What must hold, besides the invariants of tests/test_model.py (no fix is lost; the series
gives what was refreshed):

- a command that refuses (exit 2), and a read-only command whatever its answer, changes
  nothing in the project (series/, the lock, overlays/, an open stop's or edit's worktree,
  the rebase journal);
- a green `overlays --check`, `verify` or `check` means overlays/ holds every change of the
  series at the version last refreshed, and no other but those upstream has at the pin, and
  that no landing kept under upstreamed/ was taken back at the pin;
- no command says all is well when it is not: with a rebase stopped or in progress, a
  bring-back stopped, or a fix set aside in skipped/, `status`, `lint` and `overlays --check`
  exit 1, and every read-only command the reference lists as saying so prints a `note:`
  naming the state, an open edit included;
- a change made in an open edit and not refreshed is never lost without `--discard`: it is
  in the worktree or in the patch;
- a command the reference's table of states refuses in the state the project is in (REFUSED_IN)
  is refused, exit 2;
- no command ends in an internal error (exit 70).
- no kept fix lost, none doubled: after any step, each kept fix's added lines are in its
  function exactly once in the pinned file with the series applied (so in the overlay, or in
  the pin's own file where the series leaves it), unless `status` says so by name (exit 1)
  with the fix's patch on disk (under skipped/, or upstreamed/ as taken back), or the user
  kept both copies at a rebase stop that said the file would have them twice; a green check
  vouches for the same in overlays/, and `status --against` names a kept fix the series does
  not carry whose lines the target lacks. (Upstream moves whose answers are known wrong are
  not made: not_made, the reason in the statistics' events; PATCHFORGE_MODEL_KNOWN=1 makes
  them, to check a mend.)

Cost: PATCHFORGE_SEQUENCES_EXAMPLES examples (default 20) of up to 16 steps, derandomized; to
explore, set PATCHFORGE_MODEL_DERANDOMIZE=0 and raise the count.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from copy import deepcopy
from dataclasses import dataclass, field, replace
from pathlib import Path

from hypothesis import HealthCheck, Phase, event, settings, strategies as st
from hypothesis.stateful import initialize, invariant, rule

from helpers.cli import run_cli
from helpers.upstream import Upstream
from test_model import PLUS_TOKEN, TOKEN, StackModel, take_upstream_side, tokens_of, with_token

# The read-only commands the reference's table of states says speak of a stop, a rebase in
# progress, a bring-back, an open edit and a skipped fix ("yes, says so").
SAYS_SO = ("status", "list", "show", "upstream list", "fetch", "lint", "overlays --check",
           "ledger --check", "verify", "check", "pr", "export")
# Those that exit 1 while something needs attention (a stop, a rebase in progress, a skipped
# fix), whatever their own check finds.
ATTENTION = ("status", "lint", "overlays --check", "check")
# What no command changes unless it writes: everything in the project but these.
# The checks whose exit 0 says overlays/ holds the series as refreshed.
GREEN_CHECKS = (("overlays", "--check"), ("verify",), ("check",))
UNWATCHED = (".patchforge/pr", ".patchforge/lock", ".patchforge/bump")
# Where two_commands_at_once holds its first command (fsutil's fault points): before its first
# or second take of the project's lock (most often: every command that writes takes it), at
# its first or second atomic write or rename, before a rebase journal's removal, before a
# text or answer kept in the shared cache, before the store's remote configuration is written.
# The reference's table of states ("States of a project"): the situations in which a command
# that writes is refused (exit 2). "rebase": a rebase stopped or in progress; "bringing": a
# bring-back stopped; "editing": an edit open; "unrefreshed": an edit open whose worktree holds
# a change not refreshed; "no edit": no edit open.
BLOCKED = ("rebase", "bringing")
REFUSED_IN = {
    "new": (*BLOCKED, "unrefreshed"), "edit": (*BLOCKED, "unrefreshed"),
    "delete": (*BLOCKED, "unrefreshed"), "move": (*BLOCKED, "unrefreshed"),
    "import quilt --update": (*BLOCKED, "unrefreshed"), "edit --close": (*BLOCKED, "unrefreshed"),
    "rebase --to": (*BLOCKED, "unrefreshed"), "bring-back": (*BLOCKED, "unrefreshed"),
    "edit --close --discard": (*BLOCKED, "no edit"), "refresh": (*BLOCKED, "no edit"),
    "rename": BLOCKED, "import": BLOCKED, "overlays": ("rebase",),
    "upstream pin": (*BLOCKED, "editing"),
    "rebase --continue": ("bringing", "editing", "no rebase"),
    "rebase --abort": ("bringing", "editing", "no rebase"),
    "rebase --skip": ("bringing", "editing", "no rebase"),
    "bring-back --continue": ("rebase", "editing", "no bring-back"),
    "bring-back --abort": ("rebase", "editing", "no bring-back"),
}
HOLD_AT = ("lock:1", "lock:1", "lock:1", "lock:2", "write:1", "write:2", "rename:1",
           "renamed:1", "forget:1", "keep:1", "config:1")


# Kept fixes (SequencesModel's kept-fix rules): the file their functions are in, and what upstream
# does to a landing of one before the user's next command.
KEPT_PATH = "pkg/k.py"
# The module upstream moves a kept fix's function into (out of KEPT_PATH, whole).
KEPT_ELSEWHERE = "pkg/k_moved.py"
KEPT_SLOTS = 4  # functions k0..k3, one fix each
STEPS = 10  # lines of a function between its guard and its synchronize: two hunks
GUARD_MOVED, SYNC_AT, SYNC_MOVED = 3, STEPS, 6
OWN_GUARD_AT = 1  # where upstream puts a guard it makes its own way: a line below the fix's
# Where upstream lands a fix's lines again its own way after reverting them: a few lines off, the
# fix's context left whole.
RELAND_GUARD_AT, RELAND_SYNC_AT = GUARD_MOVED, STEPS - 2
SYNC = b"    torch.cuda.synchronize()\n"
# The line a fix may change two lines below its guard, in the guard's hunk (a call given one
# more argument), and what the fix makes of it.
CALL_AT = 2
CALL = b"launch(step1, stream=x)"
# A function upstream makes synchronize its own way: a step a few lines above where a fix
# synchronizes (outside the fix's hunk) calls a helper that does.
SETTLE_AT = STEPS - 4
SETTLE = b"def settle(x):\n" + SYNC + b"    return x\n"
GUARDS = {
    "plain": b"    if x is None and not torch.cuda.is_available():\n"
             b"        raise ValueError('x is needed')\n",
    "quotes": b"    if x is None and not torch.cuda.is_available():\n"
              b"        raise ValueError(\"x is needed\")\n",
    "black": b"    if (\n        x is None\n        and not torch.cuda.is_available()\n    ):\n"
             b"        raise ValueError(\"x is needed\")\n",
    # A guard of a few characters on one line (a bounds check), and as upstream spaces it.
    "short": b"    if x is None: return x\n",
    "short re-spaced": b"    if x is None:\n        return x\n",
}
# The guard form each of a fix's guard parts adds ("guard": GUARDS["plain"]).
PART_GUARD = {"guard": "plain", "short": "short"}
KEPT_MOVES = ("reverts it whole", "reverts one hunk", "moves a line",
              "re-wraps the guard in quotes", "re-wraps the guard black's way",
              "re-wraps and moves the guard black's way", "adds the sync elsewhere",
              "reverts it whole, sync elsewhere", "lands it again its own way a few lines off",
              "makes it its own way, a helper that synchronizes",
              "drops the guard, rewriting the line below it", "moves the function to the end",
              "moves the function to the end, dropping its sync",
              "moves the function to another file", "moves the function to another file, dropping its guard")
KEPT_PARTS = st.sampled_from([("guard", "sync"), ("guard", "sync"), ("sync",), ("guard",)])
# Upstream's moves whose answers are known wrong, not made until they are right (not_made;
# PATCHFORGE_MODEL_KNOWN=1 makes them): the reason is the event the statistics show.
# The line below a function's top as upstream rewrites it (KeptSlot.edited).
STEP0_EDITED = b"    step0 = x.contiguous()\n"
# Before a fix lands, upstream makes its guard its own way a line lower (double quotes, or a
# short guard re-spaced); the fix's hunk may also change a call. The answer known wrong, or None.
OWN_WAY = {
    "adds its guard its own way a line lower": None,
    "adds its guard its own way a line lower, its call left": None,
    "adds its short guard re-spaced a line lower": None,
}


@dataclass(frozen=True)
class KeptSlot:
    """A kept fix's function as upstream has it: its guard (None, or its form) and the line it
    stands before, and the line its synchronize stands before (None: not there)."""
    guard: str | None = None
    guard_at: int = 0
    sync: int | None = None
    call: bool = False  # the line CALL_AT as a fix changes it
    settled: bool = False  # its step SETTLE_AT calls settle(), a helper that synchronizes
    edited: bool = False  # its first step rewritten by upstream (STEP0_EDITED)

    def has(self, part: str) -> bool:
        """Whether the function has the fix's `part` in some form."""
        return self.call if part == "call" else \
            (self.sync is not None or self.settled) if part == "sync" else \
            self.guard is not None

    def landed(self, part: str) -> KeptSlot:
        return replace(self, call=True) if part == "call" else \
            replace(self, sync=SYNC_AT) if part == "sync" else \
            replace(self, guard=PART_GUARD[part], guard_at=0)

    def landed_all(self, parts) -> KeptSlot:
        state = self
        for part in parts:
            state = state.landed(part)
        return state

    def without(self, part: str) -> KeptSlot:
        return replace(self, call=False) if part == "call" else \
            replace(self, sync=None, settled=False) if part == "sync" else \
            replace(self, guard=None, guard_at=0)

    def moved(self, part: str) -> KeptSlot:
        return self if part == "call" or (part == "sync" and self.sync is None) else \
            replace(self, sync=SYNC_MOVED) if part == "sync" else \
            replace(self, guard_at=GUARD_MOVED)

    def rewrapped(self, form: str, *, moved: bool) -> KeptSlot:
        return replace(self, guard=form, guard_at=GUARD_MOVED if moved else self.guard_at)


@dataclass
class KeptHead:
    """KEPT_PATH at upstream's head: each k<i>'s state, and which helpers synchronize."""
    slots: dict[int, KeptSlot] = field(
        default_factory=lambda: {i: KeptSlot() for i in range(KEPT_SLOTS)})
    helpers: list[bool] = field(default_factory=lambda: [False, False])
    order: list[int] | None = None  # the functions' order in the file (None: k0..k3)
    elsewhere: list[int] = field(default_factory=list)  # those moved into KEPT_ELSEWHERE


def kept_function(i: int, state: KeptSlot) -> bytes:
    lines = [b"    step0 = x\n"] + [b"    step%d = step%d + %d\n" % (k, k - 1, 100 * i + k)
                                    for k in range(1, STEPS)] + [b"    return step%d\n" % (STEPS - 1)]
    out = [b"def k%d(x):\n" % i]
    for k, line in enumerate(lines):
        if state.guard and k == state.guard_at:
            out.append(GUARDS[state.guard])
        if state.sync is not None and k == state.sync:
            out.append(SYNC)
        if state.settled and k == SETTLE_AT:
            line = b"    step%d = settle(step%d + %d)\n" % (k, k - 1, 100 * i + k)
        if state.edited and k == 0:
            line = STEP0_EDITED
        out.append(called(line) if state.call and k == CALL_AT else line)
    return b"".join(out)


def called(line: bytes) -> bytes:
    """A step's line as a fix that changes its call has it."""
    name, _, _ = line.partition(b" = ")
    return name + b" = " + CALL + b"\n"


def kept_file(head: KeptHead) -> bytes:
    helpers = [b"def helper%d(x):\n    y = x - %d\n    z = y * 3\n%s    return z\n"
               % (j, j, SYNC if has else b"") for j, has in enumerate(head.helpers)]
    settle = [SETTLE] if any(state.settled for state in head.slots.values()) else []
    return b'"""Kernels."""\nimport torch\n\n\n' + b"\n\n".join(
        [kept_function(i, head.slots[i]) for i in head.order or sorted(head.slots)
         if i not in head.elsewhere] + helpers + settle)


def kept_files(head: KeptHead) -> dict[str, bytes]:
    """What upstream's commit writes: KEPT_PATH, and KEPT_ELSEWHERE once a function is there."""
    files = {KEPT_PATH: kept_file(head)}
    if head.elsewhere:
        files[KEPT_ELSEWHERE] = b'"""Kernels moved out of k.py."""\nimport torch\n\n\n' + \
            b"\n\n".join(kept_function(i, head.slots[i]) for i in head.elsewhere)
    return files


def kept_pattern(i: int) -> re.Pattern:
    return re.compile(rb"def k%d\(x\):\n.*?    return step%d\n" % (i, STEPS - 1), re.S)


def kept_counts(content: bytes, i: int) -> dict[str, int] | None:
    """How often function k<i> in `content` has a kept fix's guard (in any of its forms:
    whitespace, quotes and parentheses aside) and its synchronize (itself, or a call of
    settle(), which synchronizes); None without k<i>."""
    found = kept_pattern(i).search(content)
    if found is None:
        return None
    text = found.group(0)
    squeezed = re.sub(rb"[\s'\"()]", b"", text)
    return {**{part: squeezed.count(re.sub(rb"[\s'\"()]", b"", GUARDS[form]))
               for part, form in PART_GUARD.items()},
            "sync": text.count(SYNC.strip()) + text.count(b"settle("), "call": text.count(CALL)}


def kept_replace(content: bytes, i: int, state: KeptSlot) -> bytes:
    return kept_pattern(i).sub(lambda _: kept_function(i, state), content, count=1)


def kept_put_back(content: bytes, i: int, part: str) -> bytes:
    """`content` with the fix's `part` put back in k<i> where the fix had it."""
    def put(found: re.Match) -> bytes:
        text = found.group(0)
        if part in PART_GUARD:
            head = b"def k%d(x):\n" % i
            return head + GUARDS[PART_GUARD[part]] + text[len(head):]
        if part == "call":
            line = b"    step%d = step%d + %d\n" % (CALL_AT, CALL_AT - 1, 100 * i + CALL_AT)
            return text.replace(line, called(line), 1)
        tail = b"    return step%d\n" % (STEPS - 1)
        return text[:-len(tail)] + SYNC + tail
    return kept_pattern(i).sub(put, content, count=1)


def kept_take_out(content: bytes, i: int, part: str) -> bytes:
    """`content` with the fix's own copy of its `part` taken out of k<i> (where the function has
    it twice: the fix's and upstream's)."""
    def take(found: re.Match) -> bytes:
        text = found.group(0)
        if part in PART_GUARD:
            return text.replace(GUARDS[PART_GUARD[part]], b"", 1)
        if part == "sync":
            tail = SYNC + b"    return step%d\n" % (STEPS - 1)
            return text[:-len(tail)] + tail[len(SYNC):] if text.endswith(tail) else \
                text.replace(SYNC, b"", 1)
        return text
    return kept_pattern(i).sub(take, content, count=1)


class SequencesModel(StackModel):
    def __init__(self) -> None:
        self.pending: dict[int, int] = {}  # fix -> a version made in an open edit, not refreshed
        self.imports = 0
        self.out_of_reach = False  # the upstream cannot be reached (upstream_out_of_reach)
        # Kept fixes (the kept-fix rules): fix -> its name, function and lines; the last landing
        # of each (commit, message); KEPT_PATH as upstream's head has it.
        self.kept: dict[int, dict] = {}
        self.kept_landings: dict[int, tuple[str, str, int]] = {}  # (+ the synchronize calls)
        self.kept_wider: dict[int, int] = {}  # fix -> the helper its last landing synchronized
        # Kept fixes whose copy of lines upstream made its own way the user kept at a rebase
        # stop that said the file would have them twice (`--continue` with the worktree as is).
        self.kept_twice_on_purpose: set[int] = set()
        # (Such a stop's `--continue` that stopped again on a later patch: kept both copies once
        # that rebase ends, forgotten if it is aborted.)
        self.kept_twice_pending: set[int] = set()
        self.kept_head = KeptHead()
        super().__init__()  # (runs commands)

    # --- running patchforge -----------------------------------------------------------------
    def cli(self, *args: str):
        situations = self.situations()
        stop = self.stopped_safely() if args[:2] == ("rebase", "--continue") else None
        result = super().cli(*args)
        if stop and "upstream has these lines already" in stop.get("message", "") and \
                self.went_past(stop, result.rc):
            self.kept_twice_pending |= self.kept_names(stop.get("name", ""))
        self.rebase_ended(args, result.rc)
        refused_in = REFUSED_IN.get(self.table_row(args), ())
        if situations & set(refused_in):
            assert result.rc == 2, \
                f"`patchforge {' '.join(args)}` (exit {result.rc}) while " \
                f"{', '.join(sorted(situations))}: the reference's table of states says it " \
                f"is refused\n{result.text}"
        assert result.rc != 70, f"internal error: patchforge {' '.join(args)}\n{result.text}"
        # A revision the store lacks is brought in or named with `patchforge fetch`, which
        # then brings it: never one that no fetch can bring (a commit made in a former cache).
        assert self.out_of_reach or "unknown revision" not in result.err, \
            f"patchforge {' '.join(args)}\n{result.text}"
        if "--discard" in args and result.rc == 0:
            self.pending.clear()  # the user threw the unrefreshed change away
        if args in GREEN_CHECKS and result.rc == 0:
            self.green_means_deployed(" ".join(args), result.text)
        return result

    def rebase_ended(self, args: tuple[str, ...], rc: int) -> None:
        """Where no rebase is open any more, what its stops' `--continue`s kept stays kept,
        unless the rebase was aborted."""
        if self.kept_twice_pending and not self.state()["rebase"]:
            if args[:2] != ("rebase", "--abort") or rc != 0:
                self.kept_twice_on_purpose |= self.kept_twice_pending
            self.kept_twice_pending = set()

    def went_past(self, stop: dict, rc: int) -> bool:
        """Whether the `rebase --continue` that ended in `rc` took the resolution of `stop`:
        it was not refused, and the rebase ended or stopped again on another patch."""
        if rc == 3:
            now = self.stopped_safely()
            return not now or now.get("name") != stop.get("name")
        return rc != 2

    def stopped_safely(self) -> dict | None:
        """The rebase journal's stop, None where there is none (or a journal cut short)."""
        try:
            return self.stopped()
        except ValueError:
            return None

    def green_means_deployed(self, command: str, text: str) -> None:
        """A check that exits 0 vouches for overlays/: every fix of the series is there at the
        version last refreshed, and no fix out of the series (deleted, skipped, an older
        version) is."""
        overlays = self.root / "overlays"
        if not (overlays / "SHA256SUMS").exists():
            return
        held: set[tuple[int, str, int]] = set()
        for path in overlays.rglob("*"):
            if path.is_file() and not path.is_symlink() and path.suffix in (".py", ".sh"):
                held |= tokens_of(path.read_bytes(), added=False)
        # (A change upstream landed is in the pinned files, so in the overlays of them too.)
        pinned = set()
        for content in self.pinned_files().values():
            pinned |= tokens_of(content, added=False)
        listed = {(fix, part, self.cv.get((fix, part), self.version[fix]))
                  for _, data in self.listed_data() for fix, part, _ in tokens_of(data)
                  if fix in self.version}
        assert listed <= held, \
            f"`{command}` exit 0, but {sorted(listed - held)} are in no overlay\n{text}"
        assert held - pinned <= listed, \
            f"`{command}` exit 0, but overlays hold {sorted(held - pinned - listed)}, " \
            f"series {sorted(listed)}\n{text}"
        taken = self.taken_back()
        assert not taken, f"`{command}` exit 0, but the pin lacks {taken}, kept under " \
            f"upstreamed/ (no overlay has it)\n{text}"
        self.kept_deployed(command, text)

    def snapshot(self) -> dict[str, tuple[int, bytes]]:
        """Every file of the project (but UNWATCHED): its mode and a digest of its bytes."""
        out = {}
        for path in sorted(self.root.rglob("*")):
            rel = path.relative_to(self.root).as_posix()
            if any(rel == u or rel.startswith(u + "/") for u in UNWATCHED):
                continue
            if path.is_symlink():
                out[rel] = (0o120000, os.readlink(path).encode())
            elif path.is_file():
                out[rel] = (os.stat(path).st_mode & 0o777,
                            hashlib.sha256(path.read_bytes()).digest())
        return out

    def state(self) -> dict:
        """What is open, as the project's own files say (the model's view of the state)."""
        journal = self.root / ".patchforge" / "rebase" / "journal.json"
        edit = self.root / ".patchforge" / "work" / "up.json"
        try:
            editing = json.loads(edit.read_text()) if edit.exists() else None
        except ValueError:
            editing = {"unreadable": True}
        return {
            "rebase": journal.exists(),
            "bringing": bool(editing and editing.get("bring_back")),
            "editing": bool(editing and not editing.get("bring_back")),
            "skipped": bool(self.skipped()),
        }

    def situations(self) -> set[str]:
        """The situations of REFUSED_IN the project is in now."""
        state, out = self.state(), set()
        out.add("rebase" if state["rebase"] else "no rebase")
        out.add("bringing" if state["bringing"] else "no bring-back")
        out.add("editing" if state["editing"] else "no edit")
        if state["editing"] and self.pending:
            out.add("unrefreshed")
        return out

    @staticmethod
    def table_row(args: tuple[str, ...]) -> str:
        """The row of the reference's table of states `patchforge ARGS` is on ("" for a
        command that only reads, or none of the table's)."""
        words = [a for a in args if a.startswith("--")]
        command = args[0] if args else ""
        if command in ("new", "delete", "move", "rename", "refresh"):
            return command
        if command == "edit":
            return "edit --close --discard" if "--discard" in words else \
                "edit --close" if "--close" in words else "edit"
        if command == "import":
            return "import quilt --update" if "--update" in words else "import"
        if command == "overlays" and "--check" not in words:
            return "overlays"
        if command == "upstream" and args[1:2] == ("pin",):
            return "upstream pin"
        if command in ("rebase", "bring-back") and "--dry-run" not in words:
            for word in ("--continue", "--abort", "--skip"):
                if word in words:
                    return f"{command} {word}"
            return "rebase --to" if command == "rebase" else "bring-back"
        return ""

    @staticmethod
    def needs_attention(state: dict) -> bool:
        return state["rebase"] or state["bringing"] or state["skipped"]

    # --- any command, whatever is open ----------------------------------------------------
    def catalogue(self, data) -> list[tuple[str, tuple[str, ...], bool]]:
        """(kind, argv, writes) of every command worth running now."""
        names = sorted(self.series_fixes()) or ["no-such-fix"]
        name = data.draw(st.sampled_from(names)).removesuffix(".patch")
        head = self.up.head()
        out = self.tmp / "out"
        out.mkdir(exist_ok=True)
        commands = [
            ("status", ("status",), False),
            ("status", ("status", "--json"), False),
            ("status", ("status", "--against", f"up={head}"), False),
            ("list", ("list",), False),
            ("show", ("show", name, "--no-pager"), False),
            ("lint", ("lint", "--no-forge"), False),
            ("lint", ("lint", "--no-forge", "--json"), False),
            ("overlays --check", ("overlays", "--check"), False),
            ("verify", ("verify",), False),
            ("check", ("check",), False),
            ("ledger --check", ("ledger", "--check"), False),
            ("upstream list", ("upstream", "list"), False),
            ("fetch", ("fetch",), False),
            ("pr", ("pr", name, "--out", str(out / "pr")), False),
            ("export", ("export", "--mbox", str(out / "series.mbox")), False),
            ("export", ("export", "--quilt", str(out / "quilt")), False),
            ("rebase --dry-run", ("rebase", "--to", f"up={head}", "--dry-run"), False),
            ("bump --dry-run", ("bump", "up", "--to", head, "--dry-run"), False),
            ("overlays", ("overlays",), True),
            ("ledger", ("ledger",), True),
            ("add", ("add", "pkg/a.py"), True),
            ("upstream pin", ("upstream", "pin", "up", "--at", head), True),
        ]
        return commands

    @rule(data=st.data(), count=st.integers(1, 3))
    def any_command(self, data, count) -> None:
        """A few commands drawn from all of them, in whatever state the project is."""
        for _ in range(count):
            kind, argv, writes = data.draw(st.sampled_from(self.catalogue(data)))
            self.run_and_judge(kind, argv, writes)

    @rule()
    def overlays_then_every_check(self) -> None:
        """`overlays`, then each check: one that exits 0 vouches for what overlays/ holds (cli
        looks), in whatever state the project is."""
        self.run_and_judge("overlays", ("overlays",), True)
        for argv in GREEN_CHECKS:
            self.run_and_judge(" ".join(argv), argv, False)

    def run_and_judge(self, kind: str, argv: tuple[str, ...], writes: bool, *, why: str = ""):
        before, state = self.snapshot(), self.state()
        result = self.cli(*argv)
        event(f"{kind} while {self.describe(state)}{why} -> {result.rc}")
        self.allowed(result, 0, 1, 2)
        if result.rc == 2 or not writes:
            assert self.snapshot() == before, \
                f"`{' '.join(argv)}` (exit {result.rc}) changed the project\n{result.text}"
        as_json = "--json" in argv
        if kind in ATTENTION and self.needs_attention(state) and result.rc != 2:
            assert result.rc == 1, \
                f"`{' '.join(argv)}` says all is well while {self.describe(state)}\n{result.text}"
        if kind in SAYS_SO and not as_json and result.rc in (0, 1) and \
                (self.needs_attention(state) or state["editing"]):
            assert "note: " in result.err, \
                f"`{' '.join(argv)}` says nothing of what is open ({self.describe(state)})\n" \
                + result.text
        return result

    @staticmethod
    def describe(state: dict) -> str:
        open_ = [k for k, v in state.items() if v]
        return "+".join(open_) if open_ else "idle"

    # --- imports from another stack, whatever is open ---------------------------------------
    @rule(how=st.sampled_from(["mbox", "quilt"]))
    def import_another_stacks_fix(self, how) -> None:
        """A teammate's stack on the same upstream and pin exports one fix; it is imported here
        (refused during a stop or a bring-back, taken beside an open edit or idle)."""
        pin = self.pin()
        owned = set(self.slot.values())
        shown = subprocess.run(["git", "show", f"{pin}:pkg/b.py"], cwd=self.up.path,
                               capture_output=True)
        free = [s for s in self.all_slots if s.startswith("b") and s not in owned]
        if shown.returncode != 0 or not free:
            return
        slot = sorted(free)[0]
        content = shown.stdout
        if f"def {slot}():".encode() not in content or \
                b"# FIX" in content.split(f"def {slot}():".encode())[1][:60]:
            return
        self.imports += 1
        other = self.tmp / f"teammate-{self.imports}"
        fix = self.next_fix
        made = run_cli(other, "init", "--standalone", str(other))
        assert made.rc == 0, made.text
        added = run_cli(other, "upstream", "add", "up", "--git", str(self.up.path), "--at", pin)
        assert added.rc == 0, added.text
        overlay = self.tmp / f"teammate-{self.imports}.py"
        overlay.write_bytes(with_token(content, slot, f"# FIX{fix} v0".encode()))
        taken = run_cli(other, "import", "overlay", str(overlay), "--upstream", "up", "--path",
                        "pkg/b.py", "--name", f"fix{fix}")
        assert taken.rc == 0, taken.text
        exported = self.tmp / f"teammate-{self.imports}.{how}"
        done = run_cli(other, "export", f"--{how}", str(exported))
        assert done.rc == 0, done.text
        state, before = self.state(), self.snapshot()
        result = self.cli("import", how, str(exported), "--upstream", "up")
        self.allowed(result, 0, 2)
        if result.rc == 0:
            assert not (state["rebase"] or state["bringing"]), result.text
            self.next_fix += 1
            self.slot[fix], self.parts[fix] = slot, ("ret",)
            self.made(fix, 0, ("ret",))
            want = (other / "series" / "up" / f"fix{fix}.patch").read_bytes()
            got = (self.series_dir / f"fix{fix}.patch").read_bytes()
            assert PLUS_TOKEN.findall(got) == PLUS_TOKEN.findall(want)
        else:
            assert self.snapshot() == before, result.text

    # --- round trips of the series as it stands ---------------------------------------------
    @rule(how=st.sampled_from(["mbox", "quilt", "git"]))
    def round_trip_into_a_new_stack(self, how) -> None:
        """The series as it stands (a stop or an edit open too) goes out and into a new stack
        on the same pin: the same patches, in the same order (through `git am` and
        `import git`, the same fixes with their header fields)."""
        state = self.state()
        journal = self.root / ".patchforge" / "rebase" / "journal.json"
        if state["rebase"] and journal.exists() and \
                json.loads(journal.read_text() or "{}").get("phase") == "committing":
            return  # refused, which export_the_series checks
        listed = self.listed()
        if not listed:
            return
        self.imports += 1
        out = self.tmp / f"trip-{self.imports}"
        arg = "mbox" if how in ("mbox", "git") else "quilt"
        dest = out.with_suffix(".mbox") if arg == "mbox" else out
        self.ok("export", f"--{arg}", str(dest))
        other = self.tmp / f"trip-stack-{self.imports}"
        assert run_cli(other, "init", "--standalone", str(other)).rc == 0
        pin = self.pin()
        made = run_cli(other, "upstream", "add", "up", "--git", str(self.up.path), "--at", pin)
        assert made.rc == 0, made.text
        if how == "git":
            checkout = self.tmp / f"trip-am-{self.imports}"
            subprocess.run(["git", "clone", "-q", str(self.up.path), str(checkout)], check=True)
            subprocess.run(["git", "checkout", "-q", pin], cwd=checkout, check=True)
            proc = subprocess.run(["git", "am", "-q", "--keep-non-patch",
                                   "--patch-format=mboxrd", str(dest)],
                                  cwd=checkout, capture_output=True)
            assert proc.returncode == 0, proc.stderr
            taken = run_cli(other, "import", "git", f"{pin}..HEAD", "--repo", str(checkout),
                            "--upstream", "up")
        else:
            taken = run_cli(other, "import", arg, str(dest), "--upstream", "up")
        assert taken.rc == 0, taken.text
        theirs = (other / "series" / "up" / "series").read_text().split()
        assert len(theirs) == len(listed), (theirs, listed)
        for mine, their in zip(listed, theirs):
            want = (self.series_dir / mine).read_bytes()
            got = (other / "series" / "up" / their).read_bytes()
            if how == "git":
                assert PLUS_TOKEN.findall(got) == PLUS_TOKEN.findall(want), (mine, got, want)
            else:
                assert their == mine and got == want, (mine, got, want)
        applied = self.applied_tree(other)
        assert applied == self.applied_tree(self.root), \
            "the round trip's series does not give the same files"

    def applied_tree(self, root: Path) -> dict[str, tuple[str, bytes]]:
        """The pinned upstream with `root`'s series applied by `git apply`."""
        tree = self.tmp / "applied"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        archive = subprocess.run(["git", "archive", self.pin()], cwd=self.up.path, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        listed = (root / "series" / "up" / "series")
        for name in listed.read_text().split() if listed.exists() else []:
            proc = subprocess.run(["git", "apply", "-"], cwd=tree, capture_output=True,
                                  input=(root / "series" / "up" / name).read_bytes())
            assert proc.returncode == 0, (root, name, proc.stderr)
        return {p.relative_to(tree).as_posix(): (oct(os.stat(p).st_mode & 0o111), p.read_bytes())
                for p in tree.rglob("*") if p.is_file()}

    # --- quilt's way back into this stack --------------------------------------------------
    @rule(data=st.data(), cut=st.one_of(st.none(), st.tuples(
        st.sampled_from(["interrupt", "terminate", "kill", "eio"]),
        st.sampled_from(["write", "fsync", "rename", "renamed"]), st.integers(1, 8))))
    def quilt_refresh_then_update(self, data, cut) -> None:
        """The series goes out with `export --quilt DIR` (one DIR for the whole run: each
        export meets the record of the one before), quilt changes one fix there (`quilt push`
        to it in the pinned files, the fix's next version made, `quilt refresh`), and `import
        quilt DIR --update` takes it back, whatever is open: refused (exit 2, nothing changed)
        during a stop, a bring-back or an edit with a change not refreshed; else the fix's
        patch holds quilt's version. (With `cut`, a first `import quilt --update` is cut
        short at a write: all or nothing, and the run after it finishes the import.)"""
        dest = self.tmp / "quilt-dir"
        exported = self.cli("export", "--quilt", str(dest))
        self.allowed(exported, 0, 2)
        listed = self.listed()
        if exported.rc != 0 or not listed:
            event(f"export --quilt into the quilt directory -> {exported.rc}")
            shutil.rmtree(dest, ignore_errors=True)  # (a change quilt kept there, given up)
            return
        fixes = {name: fix for name, fix in self.series_fixes().items()
                 if len(self.patches_of(fix)) == 1 and fix in self.slot}
        if not fixes:
            return
        name = data.draw(st.sampled_from(sorted(fixes)))
        fix = fixes[name]
        parts = {part for f, part, _ in tokens_of((self.series_dir / name).read_bytes())
                 if f == fix and part != "script"}
        if not parts:
            return
        tree = self.tmp / "quilt-tree"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        archive = subprocess.run(["git", "archive", self.pin()], cwd=self.up.path, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        env = {**os.environ, "QUILT_PATCHES": str(dest)}
        pushed = subprocess.run(["quilt", "push", "-q", name], cwd=tree, env=env,
                                capture_output=True)
        if pushed.returncode != 0:
            return  # (quilt refuses what it cannot apply: no round trip to make)
        version = self.version[fix] + 100
        target = next((p for p in sorted(tree.rglob("*.py")) if ".pc" not in
                       p.relative_to(tree).parts  # (quilt's copies of the files before)
                       and f"def {self.slot[fix]}():".encode() in p.read_bytes()), None)
        if target is None:
            return
        content = target.read_bytes()
        for part in sorted(parts):
            content = with_token(content, self.slot[fix], f"# FIX{fix} v{version}".encode(),
                                 part)
        target.write_bytes(content)
        refreshed = subprocess.run(["quilt", "refresh"], cwd=tree, env=env, capture_output=True)
        assert refreshed.returncode == 0, refreshed.stderr
        if cut is not None:
            self.run_cut_short(("import", "quilt", str(dest), "--update"), *cut)
        state, before = self.state(), self.snapshot()
        result = self.cli("import", "quilt", str(dest), "--update")
        event(f"import quilt --update while {self.describe(state)} -> {result.rc}")
        self.allowed(result, 0, 1, 2)
        if result.rc == 2:
            assert self.snapshot() == before, \
                f"a refused `import quilt --update` changed the project\n{result.text}"
            shutil.rmtree(dest, ignore_errors=True)  # quilt's change given up
            return
        assert not (state["rebase"] or state["bringing"]), result.text
        data_now = (self.series_dir / name).read_bytes()
        assert {(f, part, v) for f, part, v in tokens_of(data_now) if f == fix
                and part != "script"} == {(fix, part, version) for part in parts}, \
            f"quilt's change to {name} was not taken back\n{result.text}"
        self.made(fix, version, tuple(parts))

    # --- a stop's resolution cut short ------------------------------------------------------
    @rule(how=st.sampled_from(["interrupt", "terminate", "kill", "eio"]),
          step=st.sampled_from(["write", "fsync", "rename", "renamed", "dirsync", "link",
                                "forget"]),
          nth=st.integers(1, 12), which=st.sampled_from(["rebase", "bring-back"]))
    def resolve_then_cut_short(self, how, step, nth, which) -> None:
        """A stop (of a rebase or a bring-back) resolved, then the `--continue` that takes the
        resolution cut short at any of fsutil's points (the crash tests' fault modes): after
        it, the invariants hold as for any command cut short, and the steps that follow
        (another `--continue`, `--abort`) finish or undo it."""
        if which == "rebase":
            if not self.resolve():
                return
        else:
            state = self.bringing_back()
            if state is None or not (self.root / state["bring_back"]).exists():
                return
            fix = self.fix_of((self.root / state["bring_back"]).read_bytes())
            target = self.find_in_worktree(self.slot[fix]) if fix is not None else None
            if target is None:
                return
            self.write_fix(target, fix,
                           self.versions_in(self.root / state["bring_back"], fix), resolve=True)
        self.run_cut_short((which, "--continue"), how, step, nth)

    # --- the upstream out of reach ------------------------------------------------------------
    @rule(data=st.data(), how=st.sampled_from(["gone", "rewritten"]))
    def upstream_out_of_reach(self, data, how) -> None:
        """The cache is new and the upstream cannot give the pinned revisions: it cannot be
        reached (offline, the remote moved), or its history was rewritten (a force-push: the
        pin and every commit since are no longer on any branch). A command either answers from
        what it has or says what is missing (exit 2) and changes nothing; `status` cannot
        judge without the pinned files, so it never exits 0. Then the upstream is back."""
        self.caches = getattr(self, "caches", 0) + 1
        os.environ["PATCHFORGE_CACHE"] = str(self.tmp / f"cache-{self.caches}")
        kind, argv, writes = data.draw(st.sampled_from(self.catalogue(data)))
        away = self.up.path.with_name("up-away")
        self.up.path.rename(away)
        if how == "rewritten":
            # A repository at the same place whose history is another: one new root commit
            # (the pin and every commit since are in no branch or tag it has).
            Upstream(self.up.path, {"README": b"history rewritten\n"})
        self.out_of_reach = True
        try:
            result = self.run_and_judge(kind, argv, writes, why=f" (upstream {how})")
            if kind in ("status", "overlays --check", "check", "fetch", "pr",
                        "rebase --dry-run", "bump --dry-run") and self.listed():
                assert result.rc != 0, \
                    f"`{' '.join(argv)}` answered without the upstream\n{result.text}"
        finally:
            self.out_of_reach = False
            shutil.rmtree(self.up.path, ignore_errors=True)
            away.rename(self.up.path)

    # --- interrupts of anything that writes -------------------------------------------------
    def interruptible(self, data) -> list[tuple[str, ...]]:
        choices = super().interruptible(data)
        state = self.state()
        fixes = sorted(self.series_fixes())
        if state["editing"]:
            choices += [("refresh",), ("edit", "--close"), ("edit", "--close", "--discard")]
        if fixes:
            name = data.draw(st.sampled_from(fixes)).removesuffix(".patch")
            choices += [("edit", name), ("new", f"cut{self.next_fix}"), ("overlays",),
                        ("ledger",)]
        return choices

    # --- two commands at once --------------------------------------------------------------
    @rule(data=st.data(), point=st.sampled_from(HOLD_AT))
    def two_commands_at_once(self, data, point) -> None:
        """Two terminals on one project: a command that changes the project (or writes the
        shared cache) is held at a point of its run (`point`: before its nth take of the
        project's lock, at its nth write or rename, before a rebase journal's removal, a kept
        answer's write or the store's configuration; the crash tests' SIGSTOP) while another
        command, drawn from all of them, runs; then the first goes on (at once when the second
        waits for it). Each either finishes or refuses with a clear message (exit 2), never an
        internal error; no fix is lost and the series gives what was refreshed (the
        invariants, strict: nothing was cut short); a check the second runs that exits 0 while
        the first is held vouches for overlays/ as it found them."""
        # (Not `rebase --continue`, `--skip` or `--abort` with no rebase to take on: refused
        # before anything, they would hold nothing.)
        rebasing = self.state()["rebase"]
        first = data.draw(st.sampled_from([
            argv for argv in self.interruptible(data) if argv[:2] == ("rebase", "--to")
            or argv[0] != "rebase" or rebasing] + [
            ("overlays",), ("fetch",), ("status", "--against", f"up={self.up.head()}")]))
        seconds = [(" ".join(argv[:2]) if argv[0] != "show" else argv[0], argv)
                   for _, argv, _ in self.catalogue(data)]
        seconds += [(" ".join(argv), argv) for argv in self.interruptible(data)]
        kind, second = data.draw(st.sampled_from(seconds))
        self.at_once(first, point, kind, ("--root", str(self.root), *second))

    @rule(data=st.data(), fork=st.booleans(),
          point=st.sampled_from(("config:1", "keep:1", "lock:1", "write:1", "rename:1")))
    def two_stacks_at_once_on_one_cache(self, data, fork, point) -> None:
        """Two projects on one cache at the same time: this one fetches, rebases onto
        upstream's head or asks `status --against` it, held at a point of its run, while the
        second stack (on this upstream or on another repository also called `up`) fetches,
        rebases or builds its overlays. Each finishes or refuses (exit 2), never an internal
        error, and neither loses a fix (this one's invariants; the second's `status` answers)."""
        if self.other is None:
            self.another_stack_on_the_same_cache(data, fork)
        root, source = self.other
        if source is not self.up and data.draw(st.booleans()):
            # A new head for this one to fetch and rebase onto: a change away from any fix.
            path = sorted(self.head_files)[0]
            self.head_files[path] = b"# upstream note\n" + self.head_files[path]
            self.up.commit({path: self.head_files[path]}, "unrelated")
        first = data.draw(st.sampled_from([("fetch",), ("rebase", "--to", f"up={self.up.head()}"),
                                           ("status", "--against", f"up={self.up.head()}")]))
        second = data.draw(st.sampled_from([("fetch",), ("rebase", "--to", f"up={source.head()}"),
                                            ("overlays",),
                                            ("status", "--against", f"up={source.head()}")]))
        self.at_once(first, point, "second stack " + second[0], ("--root", str(root), *second))
        if second[0] == "rebase" and self.said["second"][1] == 3:
            self.allowed(run_cli(root, "rebase", "--abort"), 0)
        self.allowed(run_cli(root, "status"), 0, 1)

    def at_once(self, first: tuple[str, ...], point: str, kind: str,
                second: tuple[str, ...]) -> None:
        """`first` on this project held at `point` while `second` (its whole argv, --root
        included) runs; then both end. Judged as two_commands_at_once says."""
        env = {**os.environ, "PATCHFORGE_FAULT": point, "PATCHFORGE_FAULT_MODE": "stop"}
        outputs = [tempfile.TemporaryFile() for _ in range(4)]
        before, other = self.state(), None
        stop = self.stopped_safely()
        held = subprocess.Popen([sys.executable, "-m", "patchforge", "--root", str(self.root),
                                 *first], stdout=outputs[0], stderr=outputs[1], env=env)
        try:
            _, status = os.waitpid(held.pid, os.WUNTRACED)
            stopped = os.WIFSTOPPED(status)
            if not stopped:  # it ran to its end without reaching the point
                held.returncode = os.waitstatus_to_exitcode(status)
            other = subprocess.Popen([sys.executable, "-m", "patchforge", *second],
                                     stdout=outputs[2], stderr=outputs[3])
            try:
                other.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass  # it waits for the held one (a lock): that one goes on now
            alone = other.returncode is not None  # the second ended while the first was held
            if alone and second[2:] in GREEN_CHECKS and other.returncode == 0:
                self.green_means_deployed(" ".join(second[2:]) + f" (beside a held {first[0]})",
                                          self.read_output(outputs[2], outputs[3]))
            if stopped:
                os.kill(held.pid, signal.SIGCONT)
            other.wait(timeout=600)
            held.wait(timeout=600)
        finally:
            for proc in (held, other):
                if proc is not None and proc.returncode is None:
                    os.kill(proc.pid, signal.SIGCONT)
                    proc.kill()
                    proc.wait()
        self.said = {"first": (first, held.returncode, self.read_output(outputs[0], outputs[1])),
                     "second": (second, other.returncode, self.read_output(outputs[2], outputs[3]))}
        event(f"at once: {first[0]} held at {point.split(':')[0]} "
              f"{'(reached)' if stopped else '(not reached)'} -> {held.returncode}, "
              f"{kind} -> {other.returncode}")
        for which, (argv, rc, text) in self.said.items():
            beside = self.said["second" if which == "first" else "first"][0]
            assert rc in (0, 1, 2, 3), \
                f"the {which} command `patchforge {' '.join(argv)}` -> {rc} (beside " \
                f"`{' '.join(beside)}`, held at {point}, while {self.describe(before)})\n{text}"
            if rc == 2:
                assert "patchforge: " in text, \
                    f"`patchforge {' '.join(argv)}` refused without a word\n{text}"
        for argv, rc, _ in self.said.values():
            if argv[:2] == ("--root", str(self.root)):
                argv = argv[2:]
            self.after_either(argv, rc)
            if argv[:2] == ("rebase", "--continue") and stop and \
                    "upstream has these lines already" in stop.get("message", "") and \
                    self.went_past(stop, rc):
                # (As cli() learns it: the user kept both copies at a stop that said so.)
                self.kept_twice_pending |= self.kept_names(stop.get("name", ""))
            self.rebase_ended(argv, rc)

    @staticmethod
    def read_output(out, err) -> str:
        out.seek(0)
        err.seek(0)
        return (out.read() + err.read()).decode("utf-8", "replace")

    def after_either(self, command: tuple[str, ...], rc: int) -> None:
        """What the model learns from a command run beside another: a refresh that wrote the
        open edit's change; a `new` whose empty patch is taken out again."""
        if "--discard" in command and rc == 0:
            self.pending.clear()
        for name, fix in self.series_fixes().items():
            data = (self.series_dir / name).read_bytes()
            if self.pending.get(fix) in {int(v) for _, v in PLUS_TOKEN.findall(data)}:
                self.pending.pop(fix)
                self.note_refreshed(name)
        if command[0] == "new" and f"{command[1]}.patch" in self.listed():
            self.allowed(self.cli("edit", "--close"), 0, 2)
            self.allowed(self.cli("delete", command[1]), 0)

    # --- what must hold -----------------------------------------------------------------------
    def after_cut_short(self, command: tuple[str, ...]) -> None:
        if "--discard" in command:
            self.pending.clear()  # thrown away, or about to be: the user asked
        # A refresh cut short after its patch was written: the change is refreshed.
        for name, fix in self.series_fixes().items():
            versions = {int(v) for _, v in PLUS_TOKEN.findall((self.series_dir / name).read_bytes())}
            if self.pending.get(fix) in versions:
                self.pending.pop(fix)
                self.note_refreshed(name)
        if command[0] == "new" and f"{command[1]}.patch" in self.listed():
            # Ctrl-C during `new`: the empty patch was made; the user takes it out again.
            self.allowed(self.cli("edit", "--close"), 0, 2)
            self.allowed(self.cli("delete", command[1]), 0)

    @invariant()
    def unrefreshed_work_is_kept(self) -> None:
        """A change made in an open edit and not refreshed is in the worktree or the patch,
        until the user discards it."""
        found: dict[int, set[int]] = {}
        if self.work.is_dir():
            for path in self.work.rglob("*"):
                if path.is_file() and ".git" not in path.relative_to(self.work).parts:
                    for fix, version in TOKEN.findall(path.read_bytes()):
                        found.setdefault(int(fix), set()).add(int(version))
        for fix, version in list(self.pending.items()):
            if self.version.get(fix) == version:
                del self.pending[fix]  # refreshed
                continue
            assert version in found.get(fix, set()), \
                f"FIX{fix} v{version}, made in an open edit and never refreshed, is lost"
        if self.state()["editing"]:
            for fix, versions in found.items():
                newer = [v for v in versions if v > self.version.get(fix, -1)]
                if fix in self.version and newer:
                    self.pending[fix] = max(newer)

    # --- fixes kept as landed, and what upstream does to them afterwards ----------------------
    # A kept fix is made on a function of KEPT_PATH (`def k<i>(x):`): a guard at its top, a
    # `torch.cuda.synchronize()` before its return, or both (two hunks). Upstream lands it
    # (`rebase --to` keeps it under upstreamed/), then takes it back whole or in part, moves
    # one of its lines, re-wraps its guard (quotes, black's parentheses), or adds the common
    # line in a helper function; the user runs `status --against`, `rebase --to`,
    # `bring-back`, and resolves the stops with `--continue` (or `--skip`). No token marks
    # these lines, so what must hold is read in the function itself (kept_fixes_once).

    def initial_upstream(self) -> dict[str, bytes]:
        return {**super().initial_upstream(), KEPT_PATH: kept_file(KeptHead())}

    def judged_elsewhere(self) -> tuple[str, ...]:
        return (KEPT_PATH, KEPT_ELSEWHERE)

    def moved(self) -> tuple[int, ...]:
        # (1 also where a kept fix was taken back at the new pin.)
        return (*super().moved(), *((1,) if self.kept_landings else ()))

    def kept_status(self) -> tuple[int, str]:
        """`status`: its exit and its text."""
        result = run_cli(self.root, "status")
        return result.rc, result.text

    def kept_names(self, text: str) -> set[int]:
        """The kept fixes `text` names."""
        return {n for n, fix in self.kept.items()
                if re.search(rf"\b{fix['name']}(?![\w-])", text)}

    def kept_on_disk(self, fix: dict) -> list[str]:
        """Where the fix's patch files are (the series, skipped/, upstreamed/, deleted/)."""
        return sorted(p.relative_to(self.series_dir).as_posix()
                      for p in self.series_dir.rglob(f"{fix['name']}*.patch"))

    def kept_content(self, rev: str | None = None) -> bytes:
        """KEPT_PATH at `rev` (the pin) with every listed patch that changes it applied, then
        KEPT_ELSEWHERE at `rev` (no fix is made on it: its functions are upstream's moves)."""
        rev = rev or self.pin()
        base = self.pinned_files()[KEPT_PATH] if rev == self.pin() else self.up.read(KEPT_PATH, rev)
        patches = [data for _, data in self.listed_data() if KEPT_PATH.encode() in data]
        if not patches:
            return base + self.kept_elsewhere(rev)
        tree = self.tmp / "kept-apply"
        shutil.rmtree(tree, ignore_errors=True)
        (tree / os.path.dirname(KEPT_PATH)).mkdir(parents=True)
        (tree / KEPT_PATH).write_bytes(base)
        for data in patches:
            proc = subprocess.run(["git", "apply", f"--include={KEPT_PATH}", "-"], cwd=tree,
                                  input=data, capture_output=True)
            assert proc.returncode == 0, proc.stderr
        return (tree / KEPT_PATH).read_bytes() + self.kept_elsewhere(rev)

    def kept_elsewhere(self, rev: str) -> bytes:
        """KEPT_ELSEWHERE at `rev` (b"" before upstream moves a function there)."""
        if rev == self.pin():
            return self.pinned_files().get(KEPT_ELSEWHERE, b"")
        shown = subprocess.run(["git", "show", f"{rev}:{KEPT_ELSEWHERE}"], cwd=self.up.path,
                               capture_output=True)
        return shown.stdout if shown.returncode == 0 else b""

    def wrong_counts(self, content: bytes) -> dict[int, dict[str, int]]:
        """Kept fix -> each of its lines that `content` has other than once in its function."""
        out = {}
        for n, fix in self.kept.items():
            counts = kept_counts(content, fix["slot"])
            wrong = {part: counts[part] for part in fix["parts"] if counts[part] != 1
                     and not (counts[part] > 1 and n in self.kept_twice_on_purpose)}
            if wrong:
                out[n] = wrong
        return out

    @invariant()
    def kept_fixes_once(self) -> None:
        """No fix lost, none doubled: each kept fix's added lines are in its function exactly
        once in the pinned file with the series applied (the overlay, or the pin's own file
        where the series leaves it), unless `status` says so by name, exit 1, the fix's patch
        on disk (in skipped/, or under upstreamed/ as taken back)."""
        if not self.kept:
            return
        wrong = self.wrong_counts(self.kept_content())
        if not wrong:
            return
        rc, text = self.kept_status()
        for n, counts in wrong.items():
            fix = self.kept[n]
            event(f"kept fix {'doubled' if max(counts.values()) > 1 else 'out'}, said")
            assert rc == 1 and n in self.kept_names(text) and self.kept_on_disk(fix), \
                f"{fix['name']} ({fix['parts']} in k{fix['slot']}): the pin with the series " \
                f"has {counts} of its lines, and `status` (exit {rc}) does not say so by " \
                f"name; its patch is at {self.kept_on_disk(fix)}\n{text}"

    def kept_deployed(self, command: str, text: str) -> None:
        """(green_means_deployed for the kept fixes: overlays/ has each one's lines once.)"""
        if not self.kept or not (self.root / "overlays" / "SHA256SUMS").exists():
            return
        made = [p for p in (self.root / "overlays").rglob(os.path.basename(KEPT_PATH))
                if p.as_posix().endswith(KEPT_PATH)]
        content = made[0].read_bytes() if made else self.pinned_files()[KEPT_PATH]
        wrong = self.wrong_counts(content + self.kept_elsewhere(self.pin()))
        assert not wrong, f"`{command}` exit 0, but the overlays have the kept fixes' lines " \
            f"other than once: " + ", ".join(f"{self.kept[n]['name']} {counts}"
                                             for n, counts in wrong.items()) + f"\n{text}"

    @initialize(data=st.data(), landed=st.sampled_from([0, 0, 1, 2]))
    def kept_fixes_landed(self, data, landed) -> None:
        """Some runs start from fixes landed upstream and kept under upstreamed/ (the rebase
        onto their landing done), on which the kept-fix rules below act."""
        for _ in range(landed):
            self.a_fix_lands_upstream(data, data.draw(KEPT_PARTS), "rebase")

    @rule(data=st.data(), parts=KEPT_PARTS,
          then=st.sampled_from(["rebase", "rebase", "status --against", "nothing"]),
          wider=st.sampled_from([False, False, True]))
    def a_fix_lands_upstream(self, data, parts, then, wider=False) -> None:
        """A fix of a function of KEPT_PATH comes in (`import overlay`), and upstream lands it
        as it is (`wider`: its pull request also synchronizes in a helper); or upstream lands
        again the lines of a kept fix it took back. Then the user rebases onto it (the fix kept
        under upstreamed/), asks `status --against`, or not yet."""
        head = deepcopy(self.kept_head)
        again = [n for n, fix in self.kept.items() if n in self.kept_landings
                 and not any(head.slots[fix["slot"]].has(part) for part in fix["parts"])]
        pinned = self.pinned_files()[KEPT_PATH]
        free = self.free_slots(head, pinned)
        choices = [("new", i) for i in free] + [("again", n) for n in again]
        if not choices:
            return
        how, which = data.draw(st.sampled_from(choices))
        slot = which if how == "new" else self.kept[which]["slot"]
        head.slots[slot] = head.slots[slot].landed_all(
            parts if how == "new" else self.kept[which]["parts"])
        if how == "new":
            n = self.kept_fix_comes_in(pinned, slot, parts)
            if n is None:
                return
        else:
            n = which
        fix = self.kept[n]
        helpers = [j for j, has in enumerate(head.helpers) if not has]
        self.kept_wider.pop(n, None)
        if wider and "sync" in fix["parts"] and helpers:
            self.kept_wider[n] = data.draw(st.sampled_from(helpers))
            head.helpers[self.kept_wider[n]] = True
        self.kept_head = head
        message = f"k{fix['slot']}: guard and synchronize (#{100 + len(self.kept_landings)})"
        commit = self.up.commit(kept_files(head), message)
        self.kept_landings[n] = (commit, message, kept_file(head).count(SYNC))
        event(f"kept: upstream lands {fix['name']}{' again' if how == 'again' else ''}")
        self.after_upstream_move(then)

    def free_slots(self, head: KeptHead, pinned: bytes) -> list[int]:
        """The functions of KEPT_PATH no fix is made on, untouched at the pin and at the head."""
        return [i for i in range(KEPT_SLOTS) if i not in {f["slot"] for f in self.kept.values()}
                and head.slots[i] == KeptSlot() and not any(kept_counts(pinned, i).values())]

    def kept_fix_comes_in(self, pinned: bytes, slot: int, parts) -> int | None:
        """A fix of k<slot> with `parts` made (`import overlay` on the pinned file): its number,
        or None when the import refused (a stop or a bring-back open)."""
        n = self.next_fix
        overlay = self.tmp / f"kept-{n}.py"
        overlay.write_bytes(kept_replace(pinned, slot, KeptSlot().landed_all(parts)))
        result = self.cli("import", "overlay", str(overlay), "--upstream", "up", "--path",
                          KEPT_PATH, "--name", f"kfix{n}")
        self.allowed(result, 0, 2)
        if result.rc != 0:
            return None
        self.next_fix += 1
        self.kept[n] = {"name": f"kfix{n}", "slot": slot, "parts": parts}
        return n

    @rule(data=st.data(), kind=st.sampled_from(sorted(OWN_WAY)),
          parts=st.sampled_from([("guard",), ("guard", "sync")]),
          then=st.sampled_from(["rebase", "rebase", "status --against", "nothing"]))
    def upstream_makes_a_fix_its_own_way(self, data, kind, parts, then) -> None:
        """A fix of a function of KEPT_PATH comes in (`import overlay`) and, before it lands,
        upstream adds its guard its own way a line lower (double quotes; a short one-line
        guard re-spaced over two lines); the fix's hunk may also change a call two lines below
        its guard, which upstream leaves. Then the user rebases (which stops on the doubled
        guard, or keeps the fix's other lines), asks `status --against`, or not yet."""
        head = deepcopy(self.kept_head)
        free = self.free_slots(head, self.pinned_files()[KEPT_PATH])
        if not free or self.not_made(OWN_WAY[kind]):
            return
        slot = data.draw(st.sampled_from(free))
        if "short" in kind:
            parts, form = ("short",), "short re-spaced"
        else:
            parts, form = (*parts, *(("call",) if "call" in kind else ())), "quotes"
        n = self.kept_fix_comes_in(self.pinned_files()[KEPT_PATH], slot, parts)
        if n is None:
            return
        head.slots[slot] = KeptSlot(guard=form, guard_at=OWN_GUARD_AT)
        self.kept_head = head
        self.up.commit(kept_files(head), f"k{slot}: check x first")
        event(f"kept: upstream {kind}")
        self.after_upstream_move(then)

    @rule(data=st.data(), kind=st.sampled_from(KEPT_MOVES),
          then=st.sampled_from(["rebase", "rebase", "status --against", "nothing"]))
    def upstream_moves_a_kept_fix(self, data, kind, then) -> None:
        """Upstream, after a landing: reverts it whole (`git revert`'s message) or one of its
        hunks, moves one of its lines within its function, re-wraps its guard (quotes, black's
        parentheses, also moved), or adds `torch.cuda.synchronize()` in a helper (alone, or in
        the revert itself); then the user rebases, asks `status --against`, or not yet."""
        head = deepcopy(self.kept_head)
        message = kind
        if kind == "adds the sync elsewhere":
            free = [j for j, has in enumerate(head.helpers) if not has]
            if not free:
                return
            head.helpers[data.draw(st.sampled_from(free))] = True
        elif kind == "makes it its own way, a helper that synchronizes":
            # A landing upstream took back whole whose synchronize it makes again its own way:
            # a step a few lines above the fix's line calls settle(), which synchronizes.
            gone = [n for n in self.kept_landings if self.kept[n]["parts"] == ("sync",)
                    and not head.slots[self.kept[n]["slot"]].has("sync")]
            if not gone:
                return
            n = data.draw(st.sampled_from(gone))
            fix = self.kept[n]
            head.slots[fix["slot"]] = replace(head.slots[fix["slot"]], settled=True)
            message = f"k{fix['slot']}: settle before the last steps"
        elif kind == "lands it again its own way a few lines off":
            # On a landing upstream took back whole, its lines made again as upstream writes
            # them (the guard in double quotes), a few lines from where the fix had them.
            gone = [n for n in self.kept_landings
                    if not any(head.slots[self.kept[n]["slot"]].has(part)
                                for part in self.kept[n]["parts"])]
            if not gone:
                return
            n = data.draw(st.sampled_from(gone))
            fix = self.kept[n]
            head.slots[fix["slot"]] = KeptSlot(
                guard="quotes" if "guard" in fix["parts"] else None, guard_at=RELAND_GUARD_AT,
                sync=RELAND_SYNC_AT if "sync" in fix["parts"] else None)
            message = f"k{fix['slot']}: check x and synchronize again, after the fix of its callers"
        else:
            # On a landing upstream still has (each line of it, in some form).
            landed = [n for n in self.kept_landings
                      if all(head.slots[self.kept[n]["slot"]].has(part)
                             for part in self.kept[n]["parts"])]
            if not landed:
                return
            n = data.draw(st.sampled_from(landed))
            fix = self.kept[n]
            slot, state = fix["slot"], head.slots[fix["slot"]]
            commit, landing, _ = self.kept_landings[n]
            if slot in head.elsewhere and kind.startswith("moves the function to"):
                return  # (moved out of KEPT_PATH already)
            if kind.startswith("reverts it whole"):
                # (`git revert` of the landing: its lines as the landing left them.)
                if state != KeptSlot().landed_all(fix["parts"]):
                    return
                head.slots[slot] = KeptSlot()
                if n in self.kept_wider:  # (the landing's synchronize in a helper too)
                    head.helpers[self.kept_wider[n]] = False
                message = f'Revert "{landing}"\n\nThis reverts commit {commit}.\n'
                if kind.endswith("sync elsewhere"):
                    free = [j for j, has in enumerate(head.helpers) if not has]
                    if not free:
                        return
                    head.helpers[data.draw(st.sampled_from(free))] = True
            elif kind == "reverts one hunk":
                if len(fix["parts"]) < 2:
                    return
                part = data.draw(st.sampled_from(fix["parts"]))
                head.slots[slot] = state.without(part)
                message = f"k{slot}: no {part} after all"
            elif kind == "drops the guard, rewriting the line below it":
                # Other work at the function's top: the guard taken out, the first step
                # rewritten in the same commit (or its rewrite kept from an earlier one).
                if "guard" not in fix["parts"] or state.guard_at != 0:
                    return
                head.slots[slot] = replace(state.without("guard"), edited=True)
                message = f"k{slot}: take contiguous input"
            elif kind.startswith("moves the function to another file"):
                # A module split: the function moved whole into KEPT_ELSEWHERE (its guard
                # dropped on the way, too), a landing no longer in the series.
                if any(name.startswith(fix["name"]) for name in self.listed()) or \
                        "dropping" in kind and "guard" not in fix["parts"]:
                    return
                head.elsewhere = [*head.elsewhere, slot]
                if "dropping" in kind:
                    head.slots[slot] = state.without("guard")
                message = f"k{slot}: move into {KEPT_ELSEWHERE}"
            elif kind.startswith("moves the function to the end"):
                # The function moved below the others (a reorder of the module), its
                # synchronize dropped on the way too.
                order = [i for i in head.order or sorted(head.slots) if i != slot] + [slot]
                if order == (head.order or sorted(head.slots)) and "dropping" not in kind:
                    return
                head.order = order
                if "dropping" in kind:
                    if "sync" not in fix["parts"]:
                        return
                    head.slots[slot] = state.without("sync")
                message = f"k{slot}: keep the kernels in call order"
            elif kind == "moves a line":
                part = data.draw(st.sampled_from(fix["parts"]))
                if state.moved(part) == state:
                    return
                head.slots[slot] = state.moved(part)
                message = f"k{slot}: {part} where it belongs"
            else:
                if "guard" not in fix["parts"] or state.guard == "black":
                    return
                form = "quotes" if "quotes" in kind else "black"
                head.slots[slot] = state.rewrapped(form, moved="moves" in kind)
                message = f"k{slot}: format"
        self.kept_head = head
        self.up.commit(kept_files(head), message)
        event(f"kept: upstream {kind}")
        self.after_upstream_move(then)

    @staticmethod
    def not_made(known: str | None) -> bool:
        """Whether an upstream move is not made for a `known` wrong answer (None: none);
        PATCHFORGE_MODEL_KNOWN=1 makes it anyway, to check a mend of it."""
        if known is None:
            return False
        made = os.environ.get("PATCHFORGE_MODEL_KNOWN") == "1"
        event(f"kept: {'made' if made else 'not made'}: {known}")
        return not made

    def after_upstream_move(self, then: str) -> None:
        head = self.up.head()
        if then == "rebase":
            result = self.cli("rebase", "--to", f"up={head}")
            self.allowed(result, *self.moved(), 2, 3)
        elif then == "status --against":
            state = self.state()
            result = self.run_and_judge("status", ("status", "--against", f"up={head}"), False)
            if state["rebase"] or state["bringing"] or result.rc == 2:
                return
            # A kept fix the series does not carry, whose lines the target lacks: said.
            lacking = [n for n in self.wrong_counts(self.up.read(KEPT_PATH, head)
                                                    + self.kept_elsewhere(head))
                       if not any(name.startswith(self.kept[n]["name"]) for name in self.listed())
                       and any(p.startswith("upstreamed/") for p in self.kept_on_disk(self.kept[n]))
                       and not any(p.startswith("skipped/") for p in self.kept_on_disk(self.kept[n]))]
            for n in lacking:
                assert result.rc == 1 and n in self.kept_names(result.text), \
                    f"{self.kept[n]['name']}, kept under upstreamed/, lacks lines at {head}, " \
                    f"and `status --against` says nothing of it\n{result.text}"

    @rule(data=st.data(), then=st.sampled_from(["resolve", "resolve", "abort", "leave"]))
    def bring_back_a_kept_fix(self, data, then) -> None:
        """`bring-back` of a kept fix `status` says upstream took back (or one in skipped/), as
        its advice says; a stop resolved as a user would (upstream's side, the fix's lines
        its function lacks put back), left, or aborted."""
        result = run_cli(self.root, "status", "--json")
        try:
            doc = json.loads(result.stdout or b"{}")
        except ValueError:
            return
        names = [f"up/{entry['name']}" for entry in
                 [*(doc.get("reverted") or []), *(doc.get("gone_upstream") or [])]
                 if self.kept_names(entry["name"])]
        names += [name for name in self.skipped() if self.kept_names(name)]
        if not names:
            return
        name = data.draw(st.sampled_from(sorted(names)))
        result = self.cli("bring-back", name)
        event(f"kept: bring-back -> {result.rc}")
        self.allowed(result, 0, 1, 2, 3)
        if result.rc == 3:
            if then == "abort":
                self.ok("bring-back", "--abort")
            elif then == "resolve":
                self.resolve_kept_stop()

    @rule()
    def resolve_a_kept_stop(self) -> None:
        self.resolve_kept_stop()

    def resolve_kept_stop(self) -> None:
        """A stop (a rebase's or a bring-back's) on a kept fix resolved as a user would:
        upstream's side of each conflict, then each line of the fix its function lacks put
        back where the fix had it, and the fix's own copy of each line its function has twice
        (upstream made it its own way) taken out, as the stop says; then `--continue`."""
        state = self.bringing_back()
        if state is not None:
            name, which = os.path.basename(state["bring_back"]), "bring-back"
        else:
            stopped = self.stopped()
            if not stopped:
                return
            name, which = stopped["name"], "rebase"
        fixes = self.kept_names(name)
        target = self.work / KEPT_PATH
        if not fixes or not target.is_file():
            return
        fix = self.kept[fixes.pop()]
        content = take_upstream_side(target.read_bytes())
        counts = kept_counts(content, fix["slot"])
        if counts is None:
            return
        for part in fix["parts"]:
            if counts[part] == 0:
                content = kept_put_back(content, fix["slot"], part)
            elif counts[part] > 1:  # (a stop on lines upstream has its own way: "delete yours")
                content = kept_take_out(content, fix["slot"], part)
        target.write_bytes(content)
        event(f"kept: {which} stop resolved")
        result = self.cli(which, "--continue")
        self.allowed(result, *((*self.moved(), 2, 3) if which == "rebase" else (0, 1, 2)))

SequencesModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("PATCHFORGE_SEQUENCES_EXAMPLES", "20")),
    stateful_step_count=16, deadline=None,
    derandomize=os.environ.get("PATCHFORGE_MODEL_DERANDOMIZE", "1") != "0",
    phases=[p for p in Phase if p != Phase.shrink or os.environ.get("PATCHFORGE_MODEL_SHRINK") != "0"],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_every_command_in_every_state = SequencesModel.TestCase
