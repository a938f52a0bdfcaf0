"""Model-based test (Hypothesis stateful testing): random sequences of what a user does to a
stack, on a real small git upstream, with the invariant checked after every step:

  every change of every fix ever added (each line it changes, its script) is in exactly one of
  the series, skipped/, deleted/, or upstreamed/ with the upstream at the pin holding it, with
  the content the user last refreshed; a change kept under upstreamed/ that the pin lacks is
  said (`status` exits 1 naming it among the landings taken back); and applying the series
  (with `git apply`) on the pinned upstream gives exactly the pinned files with those changes
  in them.

Steps: new, edit + change + refresh, an edit left with unrefreshed changes, delete, rename, move,
upstream commits (a conflict on a fix's line, the fix landing verbatim, a rename, a deletion, an
unrelated change) followed by rebase --to, resolving a stop, --continue, --skip, --abort,
bring-back (and a bring-back that stops: resolved and --continue, --abort, or left open while
other steps run), a `git pull` of the stack bringing a teammate's version of a fix while an
edit of it is open (refresh must refuse to write the older change over it), the read-only checks, and a real SIGINT (Ctrl-C) or kill -9 of a command at a random
write. A fix also comes in by `import overlay` (of the pinned file with the fix made in it:
refused during a stop, taken beside an open edit), and a second stack shares the cache
(PATCHFORGE_CACHE), on the same upstream or on another repository also called `up`: what it
does (pins, imports, rebases, overlays) must not change the first stack's `status --json`. The
cache also goes at any moment, a stop or an open edit included (the commands after it bring
back what they read). After an interrupted or killed command, a fix may be left in two places by the step
that was cut short (a delete copies before it unlists): then "exactly one" relaxes to "at least
one, and the version in the series (or the only place) is intact", never "none".

A fix is a token `# FIX<k> v<n>` appended to the `return` line of a function only it touches, so
its content and version can be read from any patch file, and the expected result of the series
computed from the pinned files alone. Some fixes change two lines of their function (the token
on its `x = 0` line too, one line apart: two changes in one hunk of git's diff), which upstream
may land in part (one of the two, exactly as the fix has it). Upstream also takes a landing
back (a commit saying it reverts the landing, or one putting the old lines back by hand with a
message that does not say so) and changes a landed line again (before or after such a revert),
and a rebase onto a landing in part is undone with `git reset --hard` of the stack's repository
(the new `upstreamed/` file left untracked: `status` must call it a leftover; it is deleted).
A landing taken back is brought back (`bring-back up/NAME`). Some fixes also add an executable script of their own
(`bin/fix<k>.sh`, mode 100755, the token in it too), and upstream sometimes makes one of its
files executable: the series applied with `git apply` must then also give every file the mode it
should have (a script stays executable through every rebase, refresh and bring-back; a file
upstream made executable stays so under the fixes that change it).

It can fail: on the `import overlay` before it merged an overlay onto the series' file, it
finds a fix imported from the pinned file undoing the fixes already there
(`import_a_fix_as_an_overlay`). On the code before the state model, the skipped-fix reporting and the one judge,
it finds a fix created while a rebase is stopped and then lost by `--skip` (its patch file left
unlisted), and `status` saying "all patches apply" with a fix set aside under skipped/. On the
rebase before it kept the patches' modes, it finds a fix's script coming back `100644` after an
unrelated upstream change (`a_few_fixes` with a script, then `upstream_moves_then_rebase`).
On the refresh before it checked its patch against the one the edit was opened on, it finds
the pulled version silently reverted (`pull_a_teammates_version_while_editing`). On the rebase
before it kept whole a fix whose two lines of one hunk landed in two commits, it finds such a
fix's first line only under deleted/ (two rebases onto a landing of that line undone with
`git reset --hard`, their leftovers deleted, then the whole fix landed: the kept file held the
second line alone).

ProfilesModel runs these steps on a stack with two profiles (fixes for one, the other, or
every profile, in one file), and `overlays` at any moment (after every rebase too): each
profile's overlay must hold exactly its fixes' changes, at the version last refreshed.

Cost: PATCHFORGE_MODEL_EXAMPLES examples (default 10) of up to 16 steps, and
PATCHFORGE_PROFILES_EXAMPLES (default 5) of ProfilesModel; no deadline. The
examples are derandomized so that every run of the suite checks the same sequences; to explore
new ones, set PATCHFORGE_MODEL_DERANDOMIZE=0 and raise PATCHFORGE_MODEL_EXAMPLES.
"""
from __future__ import annotations

import json
import os
import re
import shutil

import subprocess
import sys
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from helpers.cli import run_cli
from helpers.upstream import Upstream

SLOTS = {"pkg/a.py": [f"a{i}" for i in range(6)], "pkg/b.py": [f"b{i}" for i in range(6)]}
TOKEN = re.compile(rb"# FIX(\d+) v(\d+)")
PLUS_TOKEN = re.compile(rb"^\+[^\n]*# FIX(\d+) v(\d+)", re.M)
PLACES = ("upstreamed", "skipped", "deleted")
# What upstream commits before a `rebase --to` (upstream_moves_then_rebase).
UPSTREAM_MOVES = ("conflict", "landed", "rename", "delete", "unrelated", "chmod", "landed in part",
                  "reverts a landing", "changes a landed line")


def initial_file(names: list[str]) -> bytes:
    return b"".join(f"def {n}():\n    x = 0\n    y = x\n    return {i}\n\n\n".encode()
                    for i, n in enumerate(names))


def function_pattern(slot: str) -> re.Pattern:
    """Function `slot`: its `x = 0` line (1: the line, 2: a token on it), its `y = x` line (3),
    its `return` line (4: the line, 5: a token on it)."""
    return re.compile(rb"def " + slot.encode() + rb"\(\):\n(    x = 0)(  # FIX\d+ v\d+)?\n"
                      rb"(    y = x\n)(    return [^\n#]*?)(  # FIX\d+ v\d+)?\n")


def with_token(content: bytes, slot: str, token: bytes | None, part: str = "ret") -> bytes:
    """`content` with the `part` line of function `slot` (its `return` line, "ret", or its
    `x = 0` line, "x") carrying `token` (None: no token); the other line as it is."""
    def replacement(m: re.Match) -> bytes:
        groups = [m.group(k) or b"" for k in range(1, 6)]
        at = 1 if part == "x" else 4
        groups[at] = b"  " + token if token else b""
        return b"def " + slot.encode() + b"():\n" + groups[0] + groups[1] + b"\n" + groups[2] + \
            groups[3] + groups[4] + b"\n"
    return function_pattern(slot).sub(replacement, content, count=1)


def part_of(line: bytes) -> str:
    """Which change of a fix a line carrying its token is: "x" (its `x = 0` line), "ret" (its
    `return` line), "script" (its script's line)."""
    if b"x = 0" in line:
        return "x"
    return "script" if b"echo fixed" in line else "ret"


def tokens_of(data: bytes, *, added: bool = True) -> set[tuple[int, str, int]]:
    """(fix, part, version) of every line of `data` carrying a token (with `added`, of the
    `+` lines of a patch only)."""
    found = set()
    for line in data.splitlines():
        if added and not line.startswith(b"+"):
            continue
        for fix, version in TOKEN.findall(line):
            found.add((int(fix), part_of(line), int(version)))
    return found


def take_upstream_side(content: bytes) -> bytes:
    """A conflict resolved the simple way: upstream's side of every conflict region."""
    out, keep = [], True
    for line in content.splitlines(keepends=True):
        if line.startswith(b"<<<<<<< "):
            keep = True
            continue
        if (line.startswith(b"=======") and line.strip() == b"=======") or \
                line.startswith(b"||||||| "):  # the base's section (diff3), then the patch's
            keep = False
            continue
        if line.startswith(b">>>>>>> "):
            keep = True
            continue
        if keep:
            out.append(line)
    return b"".join(out)


class StackModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="model-"))
        # A cache of this run's own: one a run before left (the_cache_goes points the variable
        # into that run's directory) would make a run replayed with the same steps differ.
        self.cache_before = os.environ.get("PATCHFORGE_CACHE")
        os.environ["PATCHFORGE_CACHE"] = str(self.tmp / "cache")
        self.up = Upstream(self.tmp / "up", self.initial_upstream())
        self.root = self.tmp / "project"
        self.root.mkdir()
        self.ok("init", "--standalone", str(self.root))
        self.ok("upstream", "add", "up", "--git", str(self.up.path), "--at", self.up.base)
        self.version: dict[int, int] = {}  # fix -> the version last refreshed
        self.slot: dict[int, str] = {}  # fix -> the function it changes
        self.next_fix = 0
        self.cut_short = False  # a command was interrupted or killed at some point
        self.head_files = {path: initial_file(names) for path, names in SLOTS.items()}
        self.renamed = 0
        self.scripts: set[int] = set()  # fixes that add an executable script of their own
        self.other: tuple[Path, Upstream] | None = None  # a second stack on the same cache
        # The changes of each fix: its `return` line ("ret"), for some also its `x = 0` line
        # ("x", one line apart: both in one hunk), and "script" for a fix with a script.
        self.parts: dict[int, tuple[str, ...]] = {}
        self.cv: dict[tuple[int, str], int] = {}  # (fix, change) -> the version last refreshed
        # Upstream's landings of fixes (whole or in part): what a revert of one takes back.
        self.landings: list[dict] = []
        # Functions whose landing was taken out by hand in a way no command can tell from
        # other work once the code changes again (see reverts_a_landing): left as they are.
        self.fragile: set[str] = set()
        self.pinned_cache: tuple[str, dict[str, bytes]] | None = None
        self.leftovers: set[str] = set()  # the deleted/ files of leftovers deleted

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)
        if self.cache_before is None:
            os.environ.pop("PATCHFORGE_CACHE", None)
        else:
            os.environ["PATCHFORGE_CACHE"] = self.cache_before

    def initial_upstream(self) -> dict[str, bytes]:
        """The files of the upstream's first commit, which the project pins first."""
        return {path: initial_file(names) for path, names in SLOTS.items()}

    def judged_elsewhere(self) -> tuple[str, ...]:
        """Upstream files whose fixes carry no token (a subclass models and judges them):
        the_series_gives_what_was_refreshed leaves them out."""
        return ()

    # --- running patchforge -----------------------------------------------------------------
    def cli(self, *args: str):
        result = run_cli(self.root, *args)
        # `pytest --hypothesis-show-statistics` shows how often each command ended how.
        event(f"{args[0]}{' ' + args[1] if len(args) > 1 and args[1][:2] == '--' else ''}"
              f" -> {result.rc}")
        return result

    def ok(self, *args: str):
        result = self.cli(*args)
        assert result.rc == 0, f"patchforge {' '.join(args)} -> {result.rc}\n{result.text}"
        return result

    def allowed(self, result, *codes: int) -> None:
        """The command may end only with these codes (2 = refused in this state)."""
        assert result.rc in codes, f"exit {result.rc}\n{result.text}"

    @property
    def series_dir(self) -> Path:
        return self.root / "series" / "up"

    @property
    def work(self) -> Path:
        return self.root / ".patchforge" / "work" / "up"

    def listed(self) -> list[str]:
        path = self.series_dir / "series"
        return path.read_text().split() if path.exists() else []

    def fix_of(self, data: bytes) -> int | None:
        found = PLUS_TOKEN.findall(data)
        return int(found[0][0]) if found else None

    def series_fixes(self) -> dict[str, int]:
        """Listed patch name -> its fix."""
        out = {}
        for name in self.listed():
            path = self.series_dir / name
            if path.exists():
                fix = self.fix_of(path.read_bytes())
                if fix is not None:
                    out[name] = fix
        return out

    def stopped(self) -> dict | None:
        path = self.root / ".patchforge" / "rebase" / "journal.json"
        if not path.exists():
            return None
        return json.loads(path.read_text()).get("stopped")

    def pin(self) -> str:
        return json.loads((self.root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]

    def made(self, fix: int, version: int, parts) -> None:
        """The fix's `parts` (changes) were refreshed at `version`."""
        self.version[fix] = version
        for part in parts:
            self.cv[(fix, part)] = version

    def note_refreshed(self, name: str) -> None:
        """What a patch of the series holds now is the version last refreshed of its changes."""
        path = self.series_dir / name
        if not path.exists():
            return
        for fix, part, version in tokens_of(path.read_bytes()):
            if fix in self.version:
                self.made(fix, version, (part,))

    def patches_of(self, fix: int) -> list[str]:
        """The listed patches holding a change of `fix`."""
        return [name for name, data in self.listed_data() if fix in {f for f, _, _ in tokens_of(data)}]

    def listed_data(self) -> list[tuple[str, bytes]]:
        return [(name, (self.series_dir / name).read_bytes()) for name in self.listed()
                if (self.series_dir / name).exists()]

    def pinned_files(self) -> dict[str, bytes]:
        """The files of the upstream at the pin."""
        pin = self.pin()
        if self.pinned_cache is None or self.pinned_cache[0] != pin:
            tree = self.tmp / "pinned"
            shutil.rmtree(tree, ignore_errors=True)
            tree.mkdir()
            archive = subprocess.run(["git", "archive", pin], cwd=self.up.path, check=True,
                                     capture_output=True).stdout
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
            self.pinned_cache = (pin, {p.relative_to(tree).as_posix(): p.read_bytes()
                                       for p in tree.rglob("*") if p.is_file()})
        return self.pinned_cache[1]

    def find_in_worktree(self, slot: str) -> Path | None:
        for path in sorted(self.work.rglob("*.py")):
            if f"def {slot}():".encode() in path.read_bytes():
                return path
        return None

    # --- the user's steps -------------------------------------------------------------------
    @initialize(data=st.data(), count=st.integers(2, 4),
                start=st.sampled_from(["idle", "stopped", "skipped", "landed in part",
                                       "taken back"]))
    def a_few_fixes(self, data, count, start) -> None:
        for k in range(count):
            # (The first fix changes two lines where a run starts from one landed in part.)
            self.new_fix(data, data.draw(st.booleans()),
                         data.draw(st.booleans()) or (k == 0 and "landed" in start or
                                                      start == "taken back"))
        if start in ("landed in part", "taken back"):
            # Or from a landing of one of the two changes of a fix's hunk (kept under
            # upstreamed/), and upstream taking that landing back.
            self.upstream_moves_then_rebase(data, "landed in part")
            if start == "taken back":
                self.upstream_moves_then_rebase(data, "reverts a landing")
        elif start != "idle":
            # Most runs start from a rebase stopped on a conflict (orders matter most there),
            # or from a fix it set aside (which a bring-back then meets in conflict).
            self.upstream_moves_then_rebase(data, "conflict")
            if start == "skipped":
                self.skip()

    @rule(data=st.data(), script=st.booleans(), two=st.booleans())
    def new_fix(self, data, script, two=False) -> None:
        owned = set(self.slot.values())
        pinned = {slot for path in SLOTS for slot in SLOTS[path]}
        free = sorted(pinned - owned)
        if not free:
            return
        slot = data.draw(st.sampled_from(free))
        fix = self.next_fix
        pinned = subprocess.run(["git", "ls-tree", "-r", "--name-only", self.pin()],
                                cwd=self.up.path, capture_output=True, text=True).stdout.split()
        result = self.cli("new", f"fix{fix}", *self.new_options(data, fix),
                          *[f"--file={p}" for p in pinned])
        self.allowed(result, 0, 2)
        if result.rc != 0:
            return
        self.next_fix += 1
        target = self.find_in_worktree(slot)
        if target is None or b"# FIX" in target.read_bytes().split(f"def {slot}():".encode())[1][:60]:
            # The slot is gone upstream, or carries a landed fix: the empty patch is dropped.
            self.ok("delete", f"fix{fix}")
            return
        target.write_bytes(with_token(target.read_bytes(), slot, f"# FIX{fix} v0".encode()))
        parts = ("ret",)
        if two:
            # Two changes one line apart: one hunk of git's diff, which upstream may land in part.
            target.write_bytes(with_token(target.read_bytes(), slot, f"# FIX{fix} v0".encode(),
                                          "x"))
            parts = ("x", "ret")
        if script:
            # The fix also adds a script of its own: made in the worktree, chmod +x, added.
            path = self.work / script_path(fix)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(script_of(fix, 0))
            os.chmod(path, 0o755)
            self.ok("add", script_path(fix))
            self.scripts.add(fix)
        self.ok("refresh")
        self.slot[fix] = slot
        self.parts[fix] = parts + (("script",) if script else ())
        self.made(fix, 0, self.parts[fix])
        # The edit stays open (refreshed), as a user leaves it.

    def new_options(self, data, fix: int) -> tuple[str, ...]:
        """More options of `new` for FIX<fix> (none here)."""
        return ()

    def edit_with_change(self, data, fixes) -> tuple[str, int, tuple[str, ...]] | None:
        """`edit` of a fix drawn from `fixes`, its next version written in the worktree on
        the changes its patch holds: (its patch name, the fix, those changes), or None when the
        edit was refused. (A fix whose changes are in two patches, one brought back from
        upstreamed/ beside the other, is not edited: its versions differ.)"""
        fixes = {name: fix for name, fix in fixes.items() if len(self.patches_of(fix)) == 1}
        if not fixes:
            return None
        name = data.draw(st.sampled_from(sorted(fixes)))
        fix = fixes[name]
        parts = tuple(sorted({part for f, part, _ in tokens_of((self.series_dir / name).read_bytes())
                              if f == fix}))
        result = self.cli("edit", name)
        self.allowed(result, 0, 2)
        if result.rc != 0:
            return None
        target = self.find_in_worktree(self.slot[fix])
        if target is None or parts == ("script",):
            # The fix's change to its function landed upstream, its script did not: the rebase
            # kept the script alone (a partial landing). Nothing of the model's to edit.
            assert parts == ("script",), f"{name}: the worktree has no {self.slot[fix]}()"
            self.ok("edit", "--close")
            return None
        self.write_fix(target, fix, {part: self.version[fix] + 1 for part in parts})
        return name, fix, parts

    @rule(data=st.data(), refresh=st.booleans())
    def edit_fix(self, data, refresh) -> None:
        fixes = self.series_fixes()
        if not fixes:
            return
        edited = self.edit_with_change(data, fixes)
        if edited is None:
            return
        _, fix, parts = edited
        new_version = self.version[fix] + 1
        if refresh:
            self.ok("refresh")
            self.made(fix, new_version, parts)
        # else: the edit stays open with a change not refreshed; nothing may reset it, and
        # the model's version stays the refreshed one.

    @rule()
    def refresh_open_edit(self) -> None:
        state = self.root / ".patchforge" / "work" / "up.json"
        if not state.exists() or self.bringing_back():
            return  # (a stopped bring-back's state is no edit: `bring-back --continue` takes it)
        name = json.loads(state.read_text())["patch"]
        result = self.cli("refresh")
        if result.rc == 2 and self.cut_short and "no longer in the series" in result.err:
            # An interrupted rename or delete left the edit naming the old patch: said so.
            # Closing it keeps a change that no patch file holds unless asked to discard it.
            closed = self.cli("edit", "--close")
            if closed.rc == 2 and "not refreshed" in closed.err:
                closed = self.cli("edit", "--close", "--discard")
            self.allowed(closed, 0)
            return
        self.allowed(result, 0, 1)
        self.note_refreshed(name)

    @rule(data=st.data())
    def pull_a_teammates_version_while_editing(self, data) -> None:
        """An edit of a fix is open with a change; `git pull` of the stack brings a teammate's
        version of that fix (FIX<k> v<n+50>). Refresh must not write the edit's change, made
        on the older version, over it: refused; the user throws the edit away, as told, and
        the pulled version is the fix's."""
        fixes = self.series_fixes()
        if not fixes or self.bringing_back():
            return
        edited = self.edit_with_change(data, fixes)
        if edited is None:
            return
        name, fix, parts = edited
        path = self.series_dir / name
        version = self.version[fix] + 50
        # (On its `+` lines only: a context line may be upstream's, a landed part of the fix.)
        pulled = re.sub(rb"(?m)^(\+[^\n]*# FIX%d v)\d+" % fix, rb"\g<1>%d" % version,
                        path.read_bytes())
        path.write_bytes(pulled)  # what the pull brings
        event("a fix pulled while its edit is open")
        self.made(fix, version, parts)
        result = self.cli("refresh")
        assert result.rc == 2 and "changed since `edit` opened it" in result.err, result.text
        self.ok("edit", "--close", "--discard")

    @rule(data=st.data())
    def import_a_fix_as_an_overlay(self, data) -> None:
        """A fix brought in as a full-file overlay (`import overlay`) whatever is open: refused
        during a stop or a bring-back, taken beside an open edit (the new patch goes last)."""
        pin = self.pin()
        owned = set(self.slot.values())
        free = []
        for path in sorted(self.head_files):
            shown = subprocess.run(["git", "show", f"{pin}:{path}"], cwd=self.up.path,
                                   capture_output=True)
            if shown.returncode != 0:
                continue
            free += [(path, shown.stdout, slot.decode())
                     for slot in re.findall(rb"def (\w+)\(\):", shown.stdout)
                     if slot.decode() not in owned and slot.decode() in self.all_slots
                     and b"# FIX" not in shown.stdout.split(b"def " + slot + b"():")[1][:60]]
        if not free:
            return
        path, content, slot = data.draw(st.sampled_from(free))
        fix = self.next_fix
        overlay = self.tmp / f"overlay-{fix}.py"
        overlay.write_bytes(with_token(content, slot, f"# FIX{fix} v0".encode()))
        result = self.cli("import", "overlay", str(overlay), "--upstream", "up", "--path", path,
                          "--name", f"fix{fix}")
        self.allowed(result, 0, 2)
        if result.rc == 0:
            self.next_fix += 1
            self.slot[fix], self.parts[fix] = slot, ("ret",)
            self.made(fix, 0, ("ret",))

    @property
    def all_slots(self) -> set[str]:
        return {slot for names in SLOTS.values() for slot in names}

    @rule(data=st.data(), fork=st.booleans())
    def another_stack_on_the_same_cache(self, data, fork) -> None:
        """A second stack shares the cache (PATCHFORGE_CACHE): on the same upstream, or on
        another repository also called `up` whose files differ. It pins a commit, takes a fix,
        rebases to its upstream's head and builds its overlays. Nothing it does may change what
        the first stack's commands say: its `status --json` is the same before and after."""
        before = self.cli("status", "--json")
        if self.other is None:
            source = Upstream(self.tmp / "fork", {path: initial_file(names[::-1])
                                                  for path, names in SLOTS.items()}) \
                if fork else self.up
            self.other = (self.tmp / "second", source)
            self.ok("init", "--standalone", str(self.other[0]))
            run = run_cli(self.other[0], "upstream", "add", "up", "--git", str(source.path),
                          "--at", source.base)
            assert run.rc == 0, run.text
        root, source = self.other
        files = subprocess.run(["git", "ls-tree", "-r", "--name-only", "HEAD"], cwd=source.path,
                               capture_output=True, text=True, check=True).stdout.split()
        path = data.draw(st.sampled_from(sorted(f for f in files if f.endswith(".py"))))
        if source is not self.up or data.draw(st.booleans()):
            content = b"# moved on\n" + source.read(path)
            source.commit({path: content}, "the second stack's upstream moves")
            if source is self.up:
                self.head_files[path] = content
        overlay = self.tmp / "second-overlay.py"
        overlay.write_bytes(b"# the second stack's fix\n" + source.read(path))
        run_cli(root, "import", "overlay", str(overlay), "--upstream", "up", "--path", path,
                "--name", f"second{len(list((root / 'series').rglob('*.patch')))}")
        for args in (("rebase", "--to", f"up={source.head()}"), ("overlays",), ("status",)):
            run = run_cli(root, *args)
            if args[0] == "rebase" and run.rc == 3:
                self.allowed(run_cli(root, "rebase", "--abort"), 0)
            else:
                assert run.rc in (0, 1, 2), f"second stack: {args} -> {run.rc}\n{run.text}"
        after = self.cli("status", "--json")
        assert (after.rc, after.stdout) == (before.rc, before.stdout), \
            "the second stack changed what the first one's status says\n" + after.text

    @rule()
    def the_cache_goes(self) -> None:
        """The cache is emptied, or the next shell has another PATCHFORGE_CACHE (a new CI
        runner, `rm -rf ~/.cache/patchforge`), at any moment: a rebase or bring-back stopped
        and an edit open included. Every command after it must bring back the revisions it
        reads, never take one the store lacks for one without files (`rebase --continue` once
        wrote a resolution as a patch creating its file, which the upstream has)."""
        self.caches = getattr(self, "caches", 0) + 1
        os.environ["PATCHFORGE_CACHE"] = str(self.tmp / f"cache-{self.caches}")

    @rule()
    def give_up_an_open_edit(self) -> None:
        # Changes never refreshed are the user's to throw away; fixes stay where they are.
        self.allowed(self.cli("edit", "--close", "--discard"), 0, 2)

    @rule(data=st.data())
    def delete_fix(self, data) -> None:
        # (Not one of two patches of one fix, a landing brought back beside it: the other is
        # built on its lines, and `delete` says so, exit 1, as the reference says; not modelled.)
        fixes = {name: fix for name, fix in self.series_fixes().items()
                 if len(self.patches_of(fix)) == 1}
        if fixes:
            self.allowed(self.cli("delete", data.draw(st.sampled_from(sorted(fixes)))), 0, 2)

    @rule(data=st.data())
    def rename_fix(self, data) -> None:
        fixes = self.series_fixes()
        if fixes:
            name = data.draw(st.sampled_from(sorted(fixes)))
            self.allowed(self.cli("rename", name, f"r{len(name)}-{name}"), 0, 2)

    @rule(data=st.data())
    def move_fix(self, data) -> None:
        fixes = self.series_fixes()
        if len(fixes) > 1:
            name = data.draw(st.sampled_from(sorted(fixes)))
            self.allowed(self.cli("move", name, "--first"), 0, 1, 2)

    def write_fix(self, target: Path, fix: int, versions: dict[str, int], *,
                  resolve: bool = False) -> None:
        """The changes of FIX<fix> `versions` names, each at its version, in the worktree: in
        `target` (the file of its function; with `resolve`, upstream's side of each conflict
        first), and in its script."""
        content = target.read_bytes()
        if resolve:
            content = take_upstream_side(content)
        for part in ("x", "ret"):
            if part in versions:
                content = with_token(content, self.slot[fix],
                                     f"# FIX{fix} v{versions[part]}".encode(), part)
        target.write_bytes(content)
        script = self.work / script_path(fix)
        if "script" in versions and script.is_file():
            script.write_bytes(script_of(fix, versions["script"]))

    def versions_in(self, patch: Path, fix: int) -> dict[str, int]:
        """The changes of `fix` a patch file holds and the version the model has for each."""
        return {part: self.cv.get((fix, part), version)
                for f, part, version in tokens_of(patch.read_bytes()) if f == fix}

    @rule(data=st.data(), kind=st.sampled_from(UPSTREAM_MOVES))
    def upstream_moves_then_rebase(self, data, kind) -> None:
        self.move_upstream(data, kind)

    def move_upstream(self, data, kind):
        """Upstream commits a change of `kind`, then `rebase --to` its head: the rebase's
        result (None when there was nothing to do)."""
        path = data.draw(st.sampled_from(sorted(self.head_files)))
        content = self.head_files[path]
        slots = [s for s in re.findall(rb"def (\w+)\(\):", content)]
        changes: dict[str, bytes | None] = {}
        renames: dict[str, str] = {}
        message = kind
        landing = None
        if kind == "conflict" and slots:
            # Mostly on a line a fix of the series changes: that is what stops a rebase.
            fixed = sorted(s.encode() for f, s in self.slot.items()
                           if f in set(self.series_fixes().values()) and s.encode() in slots)
            slot = data.draw(st.sampled_from(fixed or slots)).decode()
            if slot in self.fragile:
                return
            changes[path] = self.return_changed(content, slot)
        elif kind in ("landed", "landed in part"):
            # The fix's changes as its patch has them, every one of them ("landed"), or one
            # of the two changes of its hunk ("landed in part").
            candidates = []
            for name, data_ in self.listed_data():
                fix = self.fix_of(data_)
                at = [p for p, c in sorted(self.head_files.items())
                      if fix is not None and f"def {self.slot[fix]}():".encode() in c]
                if not at or len(self.patches_of(fix)) != 1:
                    continue
                held = {part: v for f, part, v in tokens_of(data_) if f == fix and part != "script"}
                if (kind == "landed" and held) or {"x", "ret"} <= set(held):
                    candidates.append((fix, held, at[0]))
            if not candidates:
                return
            fix, held, path = data.draw(st.sampled_from(candidates))
            content = self.head_files[path]
            if kind == "landed in part":
                part = data.draw(st.sampled_from(["x", "ret"]))
                held = {part: held[part]}
            new = content
            for part, version in held.items():
                new = with_token(new, self.slot[fix], f"# FIX{fix} v{version}".encode(), part)
            changes[path] = new
            landing = {"path": path, "slot": self.slot[fix], "before": content, "after": new}
        elif kind == "reverts a landing":
            # A landing taken back, by a commit saying so (`git revert`) or by hand (the old
            # lines typed back, a message that does not say revert), its lines as it left them.
            intact = [landing for landing in self.landings if landing["path"] in self.head_files
                      and self.function(landing["after"], landing["slot"]) is not None
                      and self.function(landing["after"], landing["slot"])
                      in self.head_files[landing["path"]]]
            if not intact:
                return
            landing = data.draw(st.sampled_from(intact))
            path, content, slot = landing["path"], self.head_files[landing["path"]], landing["slot"]
            changes[path] = content.replace(self.function(landing["after"], slot),
                                            self.function(landing["before"], slot), 1)
            if data.draw(st.booleans()):
                message = f'Revert "{landing["message"]}"\n\nThis reverts commit {landing["commit"]}.\n'
            else:
                message = "Go back to the plain computation"
                if content != landing["after"]:
                    # By hand after other edits of the file: no command can tell it from other
                    # work once the code changes again (docs/reference.md, "Reverted, then
                    # changed": a reverse made by hand is one only when it puts the file back
                    # as the landing found it, from exactly what it made). It is said as taken
                    # out until then; the model changes that code no more.
                    self.fragile.add(slot)
            landing = None
        elif kind == "changes a landed line":
            # Upstream changes the code of a landing again (its tokens kept, or taken back by
            # a revert before): the `return` line of the function.
            touched = sorted({landing["slot"] for landing in self.landings
                              if landing["path"] in self.head_files and landing["slot"]
                              not in self.fragile and
                              f"def {landing['slot']}():".encode() in self.head_files[landing["path"]]})
            if not touched:
                return
            slot = data.draw(st.sampled_from(touched))
            path = next(p for p, c in self.head_files.items() if f"def {slot}():".encode() in c)
            changes[path] = self.return_changed(self.head_files[path], slot)
        elif kind == "rename":
            self.renamed += 1
            new_path = f"{path[:-3]}_{self.renamed}.py"
            renames[path] = new_path
            self.head_files[new_path] = self.head_files.pop(path)
            for landing in self.landings:
                if landing["path"] == path:
                    landing["path"] = new_path
            path = new_path
        elif kind == "delete" and len(self.head_files) > 1:
            changes[path] = None
        elif kind == "chmod":
            # Upstream makes the file executable (and changes it, away from any fix).
            changes[path] = content + b"# upstream: now a script\n"
            os.chmod(self.up.path / path, 0o755)
        else:
            changes[path] = b"# upstream note\n" + content
        if not changes and not renames:
            return
        commit = self.up.commit(changes, message, renames)
        event(f"upstream: {kind}" + (" (by hand)" if message.startswith("Go back") else ""))
        if landing is not None:
            self.landings.append({**landing, "commit": commit, "message": message})
        for changed, new in changes.items():
            if new is None:
                self.head_files.pop(changed, None)
            else:
                self.head_files[changed] = new
        result = self.cli("rebase", "--to", f"up={self.up.head()}")
        # 1 also where a landing kept under upstreamed/ was taken back (it needs attention).
        self.allowed(result, *self.moved(), 2, 3)
        return result

    @rule(data=st.data())
    def a_rebase_undone_with_git(self, data) -> None:
        """The stack is a git repository. A rebase onto upstream's landing of part of a fix is
        undone with `git reset --hard`: the series and the lock are back, with the whole fix,
        and the new `upstreamed/` file, untracked, stays. The series carries that change at
        the pin: `status` says the kept file is a leftover, with the `delete` that takes it
        out, which the user runs."""
        if self.stopped() or self.bringing_back() or \
                (self.root / ".patchforge" / "rebase" / "journal.json").exists() or \
                (self.root / ".patchforge" / "work" / "up.json").exists():
            return
        if not (self.root / ".git").exists():
            subprocess.run(["git", "init", "-q"], cwd=self.root, check=True)
        subprocess.run(["git", "add", "-A"], cwd=self.root, check=True)
        subprocess.run(["git", "-c", "user.name=u", "-c", "user.email=u@example.com", "commit",
                        "-q", "--allow-empty", "-m", "stack"], cwd=self.root, check=True)
        kept = set((self.series_dir / "upstreamed").glob("*.patch"))
        result = self.move_upstream(data, "landed in part")
        if result is None:
            return
        if result.rc == 3:
            self.ok("rebase", "--abort")
            return
        if result.rc not in (0, 1):
            return
        subprocess.run(["git", "reset", "-q", "--hard"], cwd=self.root, check=True)
        left = sorted(set((self.series_dir / "upstreamed").glob("*.patch")) - kept)
        event(f"a rebase undone with git, {len(left)} kept file(s) left")
        if not left:
            return
        said = self.cli("status")
        for path in left:
            assert f"series/up/upstreamed/{path.name} is a leftover" in said.err and \
                f"patchforge delete up/upstreamed/{path.name}" in said.err, said.text
            deleted = self.series_dir / "deleted"
            before = set(deleted.glob("*.patch")) if deleted.is_dir() else set()
            self.ok("delete", f"up/upstreamed/{path.name}")
            self.leftovers |= {p.name for p in set(deleted.glob("*.patch")) - before}

    @staticmethod
    def function(content: bytes, slot: str) -> bytes | None:
        """The lines of function `slot` in `content` (its `def` line to its `return` line)."""
        found = function_pattern(slot).search(content)
        return found.group(0) if found else None

    @staticmethod
    def return_changed(content: bytes, slot: str) -> bytes:
        """`content` with the number function `slot` returns changed (its tokens kept)."""
        return re.sub(rb"(def " + slot.encode() + rb"\(\):\n    x = 0[^\n]*\n    y = x\n"
                      rb"    return \d+)", lambda m: m.group(1) + b"7", content, count=1)

    def resolve(self) -> bool:
        """Resolve a stop the way a user would: upstream's side, then the fix's change again."""
        stopped = self.stopped()
        if not stopped or not (self.series_dir / stopped["name"]).exists():
            return False
        fix = self.fix_of((self.series_dir / stopped["name"]).read_bytes())
        if fix is None or stopped["kind"] != "conflict":
            return False
        target = self.find_in_worktree(self.slot[fix])
        if target is None:
            return False
        self.write_fix(target, fix, self.versions_in(self.series_dir / stopped["name"], fix),
                       resolve=True)
        return True

    @rule()
    def resolve_and_continue(self) -> None:
        if self.resolve():
            # 2: a scratch file is in the stop's worktree (listed and refused, never taken).
            self.allowed(self.cli("rebase", "--continue"), *self.moved(), 2, 3)

    @rule()
    def resolve_only(self) -> None:
        # ... and do something else before --continue (another rule).
        self.resolve()

    @rule()
    def scratch_file_in_the_worktree(self) -> None:
        # A note left beside a stop's files: never part of the fix. (In an edit, a new file is
        # how a fix adds one: refresh takes it.)
        if (self.stopped() or self.bringing_back()) and self.work.is_dir():
            (self.work / "notes.txt").write_bytes(b"ask upstream about this\n")

    @rule()
    def skip(self) -> None:
        self.allowed(self.cli("rebase", "--skip"), *self.moved(), 2, 3)

    @rule()
    def abort(self) -> None:
        self.allowed(self.cli("rebase", "--abort"), 0, 2)

    @rule()
    def continue_as_is(self) -> None:
        # Continuing a stop nobody resolved is refused (markers) or takes the file as it is.
        self.allowed(self.cli("rebase", "--continue"), *self.moved(), 2, 3)

    def finished(self) -> int:
        """The exit of a move that finished: 1 while a fix is set aside under skipped/ (in
        none of the overlays it wrote), else 0."""
        return 1 if self.skipped() else 0

    def moved(self) -> tuple[int, ...]:
        """The exits of a move that finished (`rebase --to`, or the `--continue` or `--skip`
        that ends one): finished(), and 1 where a landing kept under upstreamed/ was taken back
        at the new pin (it needs attention; the model cannot always tell which landing)."""
        return (self.finished(), *((1,) if self.landings else ()))

    def skipped(self) -> list[str]:
        directory = self.series_dir / "skipped"
        return sorted(p.name for p in directory.glob("*.patch")) if directory.is_dir() else []

    def bringing_back(self) -> dict | None:
        """The state of a stopped bring-back, None when there is none."""
        path = self.root / ".patchforge" / "work" / "up.json"
        state = json.loads(path.read_text()) if path.exists() else None
        return state if state and state.get("bring_back") else None

    @rule(data=st.data(), then=st.sampled_from(["resolve", "abort", "leave"]),
          taken_back=st.booleans())
    def bring_back(self, data, then, taken_back=False) -> None:
        """`bring-back` of a fix set aside under skipped/, or (`taken_back`) of a landing kept
        under upstreamed/ that upstream took back at the pin (`up/NAME`)."""
        if taken_back:
            taken = self.taken_back()
            if not taken:
                return
            name = f"up/{data.draw(st.sampled_from(sorted(taken)))}"
        else:
            skipped = self.skipped()
            if not skipped:
                return
            name = data.draw(st.sampled_from(skipped))
        result = self.cli("bring-back", name)
        # (1: a kept landing brought back while a fix is set aside under skipped/.)
        self.allowed(result, 0, 2, 3, *((1,) if taken_back else ()))
        if result.rc != 3:
            return
        # A stop like a rebase's: the fix stays in skipped/ until the bring-back is finished.
        state = self.bringing_back()
        assert state is not None, result.text
        assert (self.root / state["bring_back"]).exists(), result.text
        if then == "abort":
            self.ok("bring-back", "--abort")
            assert self.bringing_back() is None
        elif then == "resolve":
            self.resolve_bring_back()
        # "leave": other steps run while it is stopped; finish_bring_back may end it later.

    def resolve_bring_back(self) -> None:
        """Make the fix again in the stopped bring-back's worktree (upstream's side of any
        conflict, then the fix's change), then --continue."""
        state = self.bringing_back()
        if state is None or not (self.root / state["bring_back"]).exists():
            return
        fix = self.fix_of((self.root / state["bring_back"]).read_bytes())
        target = self.find_in_worktree(self.slot[fix]) if fix is not None else None
        if target is None:  # the fix's file is gone upstream: nothing to resolve it in
            self.ok("bring-back", "--abort")
            return
        self.write_fix(target, fix, self.versions_in(self.root / state["bring_back"], fix),
                       resolve=True)
        # 2: a scratch file is in the worktree (listed and refused, never taken).
        self.allowed(self.cli("bring-back", "--continue"), 0, 2)

    @rule()
    def finish_bring_back(self) -> None:
        self.resolve_bring_back()

    @rule()
    def read_only_checks(self) -> None:
        result = self.cli("status")
        skipped = (self.series_dir / "skipped").is_dir() and \
            any((self.series_dir / "skipped").glob("*.patch"))
        if skipped or self.stopped() is not None or self.bringing_back() is not None or \
                (self.root / ".patchforge" / "rebase" / "journal.json").exists():
            assert result.rc == 1, "status must report a skipped fix or a rebase in progress\n" \
                + result.text
        self.allowed(self.cli("list"), 0)

    @rule()
    def export_the_series(self) -> None:
        """`export --quilt` into one directory at any moment: the series as it stands (during
        a stop or an open edit too), or, while a rebase's write-out is half done, refused with
        nothing written (the series files are then part old, part new)."""
        out = self.tmp / "exported"
        before = sorted((p.name, p.read_bytes()) for p in out.iterdir()) if out.is_dir() else []
        result = self.cli("export", "--quilt", str(out))
        journal = self.root / ".patchforge" / "rebase" / "journal.json"
        try:
            half_written = json.loads(journal.read_bytes()).get("phase") == "committing"
        except (FileNotFoundError, ValueError):
            half_written = journal.exists()
        if half_written:
            assert result.rc == 2 and "rebase --continue" in result.err, result.text
            assert (sorted((p.name, p.read_bytes()) for p in out.iterdir())
                    if out.is_dir() else []) == before
            return
        self.allowed(result, 0)
        listed = self.listed()
        if listed:
            assert (out / "series").read_text().split() == listed
            for name in listed:
                assert (out / name).read_bytes() == (self.series_dir / name).read_bytes()

    @rule(data=st.data(), how=st.sampled_from(["interrupt", "terminate", "kill", "eio"]),
          step=st.sampled_from(["write", "fsync", "rename"]), nth=st.integers(1, 6))
    def cut_short(self, data, how, step, nth) -> None:
        """A real SIGINT (Ctrl-C), a SIGTERM (a CI job cancelled), an exit without cleanup
        (kill -9), or an I/O error (EIO, a full disk) at the nth write step of a command that
        changes the project."""
        self.run_cut_short(data.draw(st.sampled_from(self.interruptible(data))), how, step, nth)

    def run_cut_short(self, command: tuple[str, ...], how: str, step: str, nth: int) -> None:
        """`command` run with `how` at its `nth` `step` (fsutil's fault points), and judged."""
        env = {**os.environ, "PATCHFORGE_FAULT": f"{step}:{nth}",
               "PATCHFORGE_FAULT_MODE": {"interrupt": "interrupt", "terminate": "terminate",
                                         "eio": "raise"}.get(how, "")}
        earlier = self.temporary_files()  # (a kill -9 before may have left some)
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(self.root),
                               *command], capture_output=True, env=env)
        event(f"{how} {command[0]} -> {proc.returncode}")
        if how == "eio" and b"injected fault" in proc.stderr:
            self.cut_short = True
            # What the message says was left is what was left.
            journal = (self.root / ".patchforge" / "rebase" / "journal.json").exists()
            assert proc.returncode == 2 and (b"rebase --continue" in proc.stderr) == journal, \
                proc.stderr.decode()
        elif proc.returncode in (130, 137, 143):
            self.cut_short = True
            if proc.returncode == 130:
                assert b"interrupted" in proc.stderr
            if proc.returncode == 143:
                assert how == "terminate" and b"terminated" in proc.stderr, proc.stderr
            if proc.returncode != 137:
                # A cleanup ran: it left no temporary file behind but the new files a rebase's
                # write-out cut short between its renames still has to rename, which its
                # journal names (`rebase --continue` renames them, `--abort` removes them).
                assert self.temporary_files() <= earlier | self.journal_temporaries(), \
                    proc.stderr.decode()
        else:
            assert proc.returncode in (0, 1, 2, 3), proc.stderr.decode()
        self.after_cut_short(command)

    def after_cut_short(self, command: tuple[str, ...]) -> None:
        """What the model learns from a command that was cut short (nothing, here)."""

    def interruptible(self, data) -> list[tuple[str, ...]]:
        """The commands worth cutting short now."""
        fixes = sorted(self.series_fixes())
        choices = [("rebase", "--continue"), ("rebase", "--skip"), ("rebase", "--abort")]
        if self.bringing_back():
            choices += [("bring-back", "--continue"), ("bring-back", "--abort")]
        elif self.skipped():
            choices.append(("bring-back", data.draw(st.sampled_from(self.skipped()))))
        if fixes:
            name = data.draw(st.sampled_from(fixes))
            choices += [("delete", name), ("rename", name, f"k-{name}"), ("move", name, "--first")]
        if self.up.head() != self.pin():
            choices.append(("rebase", "--to", f"up={self.up.head()}"))
        return choices

    def temporary_files(self) -> set[Path]:
        """The temporary files of atomic writes in the project (outside .patchforge/)."""
        return {p for p in self.root.rglob("*.tmp")
                if ".patchforge" not in p.relative_to(self.root).parts}

    def journal_temporaries(self) -> set[Path]:
        """The new files a rebase journal's write-out plan names (`temp` beside each step's
        path), as the journal on disk records them; none without a journal."""
        journal = self.root / ".patchforge" / "rebase" / "journal.json"
        if not journal.exists():
            return set()
        plan = json.loads(journal.read_bytes()).get("plan") or []
        return {self.root / os.path.dirname(step["path"]) / step["temp"]
                for step in plan if step.get("temp")}

    # --- the invariant ----------------------------------------------------------------------
    @invariant()
    def no_fix_is_lost(self) -> None:
        """Every change of every fix (each line it changes, its script) is in exactly one
        place: the series (at the version last refreshed), skipped/, deleted/, or upstreamed/
        with the upstream at the pin holding it (or no longer having its function at all);
        a change kept under upstreamed/ that the pin no longer has is said: `status` exits 1
        naming it as taken back."""
        places: dict[tuple[int, str], list[tuple[str, int, str]]] = {}
        listed = self.listed()
        assert len(listed) == len(set(listed)), f"a patch listed twice: {listed}"
        for name in listed:
            path = self.series_dir / name
            assert path.exists(), f"{name} is listed but missing"
            for fix, part, version in sorted(tokens_of(path.read_bytes())):
                places.setdefault((fix, part), []).append(("series", version, name))
        for where in PLACES:
            for path in sorted((self.series_dir / where).glob("*.patch")) \
                    if (self.series_dir / where).is_dir() else []:
                for fix, part, version in sorted(tokens_of(path.read_bytes())):
                    places.setdefault((fix, part), []).append((where, version, path.name))
        for fix in self.version:
            for part in self.parts.get(fix, ("ret",)):
                found = places.get((fix, part), [])
                assert found, f"FIX{fix} ({part}) is lost: in neither the series nor " + \
                    ", ".join(PLACES)
                if any(where != "deleted" for where, _, _ in found):
                    # A leftover kept file `delete`d as `status` said (a_rebase_undone_with_git)
                    # is no place of a change the series has.
                    found = [(where, version, name) for where, version, name in found
                             if where != "deleted" or name not in self.leftovers]
                if len(found) > 1:
                    found = [place for place in found if place[0] != "deleted"
                             or place[2] not in self.leftovers] or found
                if not self.cut_short:
                    # (An interrupted command may leave a copy behind: see the docstring.)
                    assert len(found) == 1, f"FIX{fix} ({part}) is in several places: {found}"
                assert self.cv[(fix, part)] in [v for _, v, _ in found], \
                    f"FIX{fix} ({part}): the last refreshed version is v{self.cv[(fix, part)]}, " \
                    f"found {found}"
        taken = self.taken_back()
        if taken:
            event("a landing taken back at the pin")
            result = self.cli("status", "--json")
            said = {entry["name"] for entry in json.loads(result.stdout)["reverted"]} \
                if result.stdout.strip() else set()
            assert result.rc == 1 and set(taken) <= said, \
                f"upstream at the pin lacks {sorted(taken)}, kept under upstreamed/, and " \
                f"status says nothing of it (exit {result.rc}, said {sorted(said)})\n{result.text}"

    def taken_back(self) -> dict[str, list[tuple[int, str, int]]]:
        """The patches under upstreamed/ holding a change the upstream at the pin lacks, while
        it has the function of it: name -> those changes."""
        directory = self.series_dir / "upstreamed"
        if not directory.is_dir():
            return {}
        pinned = self.pinned_files()
        held = set()
        for content in pinned.values():
            held |= tokens_of(content, added=False)
        everything = b"".join(pinned.values())
        out: dict[str, list[tuple[int, str, int]]] = {}
        for path in sorted(directory.glob("*.patch")):
            for fix, part, version in sorted(tokens_of(path.read_bytes())):
                if fix in self.slot and part != "script" and (fix, part, version) not in held \
                        and f"def {self.slot[fix]}():".encode() in everything:
                    out.setdefault(path.name, []).append((fix, part, version))
        return out

    @invariant()
    def the_series_gives_what_was_refreshed(self) -> None:
        """The series, applied with git apply on the pinned upstream, gives the pinned files
        with exactly the series' changes in them (the version last refreshed of each)."""
        pin = self.pin()
        tree = self.tmp / "apply"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        archive = subprocess.run(["git", "archive", pin], cwd=self.up.path, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        pinned = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*")
                  if p.is_file()}
        expected = dict(pinned)
        modes = {p: mode(tree / p) for p in pinned}
        for name in self.listed():
            data = (self.series_dir / name).read_bytes()
            proc = subprocess.run(["git", "apply", "-"], cwd=tree, input=data,
                                  capture_output=True)
            assert proc.returncode == 0, f"{name} does not apply on the pin: {proc.stderr!r}"
            for fix, part, _ in sorted(tokens_of(data)):
                if fix not in self.version:
                    continue
                version = self.cv.get((fix, part), self.version[fix])
                if part == "script":
                    expected[script_path(fix)] = script_of(fix, version)
                    modes[script_path(fix)] = "100755"
                    continue
                for path, content in expected.items():
                    if f"def {self.slot[fix]}():".encode() in content:
                        expected[path] = with_token(content, self.slot[fix],
                                                    f"# FIX{fix} v{version}".encode(), part)
        got = {p.relative_to(tree).as_posix(): p.read_bytes() for p in tree.rglob("*")
               if p.is_file()}
        for path in self.judged_elsewhere():
            for files in (got, expected, modes):
                files.pop(path, None)
        assert got == expected, "applying the series does not give what was refreshed"
        got_modes = {p: mode(tree / p) for p in got}
        assert got_modes == modes, "applying the series does not give the files their modes"


def script_path(fix: int) -> str:
    return f"bin/fix{fix}.sh"


def script_of(fix: int, version: int) -> bytes:
    return f"#!/bin/sh\necho fixed  # FIX{fix} v{version}\n".encode()


def mode(path: Path) -> str:
    return "100755" if os.stat(path).st_mode & 0o100 else "100644"


StackModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("PATCHFORGE_MODEL_EXAMPLES", "10")),
    stateful_step_count=16, deadline=None,
    derandomize=os.environ.get("PATCHFORGE_MODEL_DERANDOMIZE", "1") != "0",
    phases=[p for p in Phase if p != Phase.shrink or os.environ.get("PATCHFORGE_MODEL_SHRINK") != "0"],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_no_fix_is_lost_whatever_the_order = StackModel.TestCase


PROFILES = ("p1", "p2")


class ProfilesModel(StackModel):
    """The steps of StackModel on a stack with two profiles, p1 and p2: each fix is for every
    profile (no `Profiles` field), for one, or for both named, and fixes of one profile, of the
    other and of every profile change one file (each its own function): made, edited, landed
    (in part), moved by a rebase, set aside, brought back. At any moment `overlays` writes each
    profile's overlay, which holds exactly that profile's fixes' changes, at the version last
    refreshed, on the pinned files, and no other profile's."""

    def __init__(self) -> None:
        self.profiles_of: dict[int, tuple[str, ...]] = {}  # fix -> the profiles it is for
        super().__init__()
        config = self.root / "patchforge.toml"
        declared = "".join(f'{p} = "profile {p}"\n' for p in PROFILES)
        config.write_text(config.read_text().replace("[profiles]\n", "[profiles]\n" + declared, 1))

    def new_options(self, data, fix: int) -> tuple[str, ...]:
        chosen = data.draw(st.sampled_from([(), ("p1",), ("p2",), PROFILES]))
        self.profiles_of[fix] = chosen or PROFILES
        return ("--profiles", ",".join(chosen)) if chosen else ()

    @rule(data=st.data(), kind=st.sampled_from(UPSTREAM_MOVES))
    def upstream_moves_then_rebase(self, data, kind) -> None:
        """(Then `overlays`: a rebase moves the fixes of every profile, and, once overlays/
        exists, writes each profile's overlay itself.)"""
        super().upstream_moves_then_rebase(data, kind)
        self.overlays_of_each_profile()

    @rule()
    def read_only_checks(self) -> None:
        super().read_only_checks()
        self.overlays_of_each_profile()

    @rule()
    def overlays_of_each_profile(self) -> None:
        """`overlays`, whatever is open; where it writes them (exit 0, or 1 with a fix set
        aside), each profile's overlay holds exactly its fixes."""
        result = self.cli("overlays")
        self.allowed(result, 0, 1, 2)
        if result.rc == 2 or (self.root / ".patchforge" / "rebase" / "journal.json").exists():
            return
        event(f"overlays with profiles -> {result.rc}")
        pinned = self.pinned_files()
        for profile in PROFILES:
            expected = dict(pinned)
            for _, data in self.listed_data():
                for fix, part, _ in sorted(tokens_of(data)):
                    if fix not in self.version or \
                            profile not in self.profiles_of.get(fix, PROFILES):
                        continue
                    version = self.cv.get((fix, part), self.version[fix])
                    if part == "script":
                        expected[script_path(fix)] = script_of(fix, version)
                        continue
                    for path, content in expected.items():
                        if f"def {self.slot[fix]}():".encode() in content:
                            expected[path] = with_token(content, self.slot[fix],
                                                        f"# FIX{fix} v{version}".encode(), part)
            made = self.root / "overlays" / profile / "up"
            overlays = {p.relative_to(made).as_posix(): p.read_bytes() for p in made.rglob("*")
                        if p.is_file()} if made.is_dir() else {}
            got = {**pinned, **overlays}
            assert got == expected, \
                f"the overlay of {profile} does not hold exactly its fixes: " + ", ".join(
                    f"{path}: {sorted(tokens_of(got.get(path, b''), added=False))}, want "
                    f"{sorted(tokens_of(expected.get(path, b''), added=False))}"
                    for path in sorted(set(got) | set(expected))
                    if got.get(path) != expected.get(path))


ProfilesModel.TestCase.settings = settings(
    StackModel.TestCase.settings,
    max_examples=int(os.environ.get("PATCHFORGE_PROFILES_EXAMPLES", "5")))
test_each_profile_holds_its_fixes = ProfilesModel.TestCase
