"""Model-based test (Hypothesis stateful testing) of the series commands and the ways a series
goes out and comes back: random sequences of `new` + refresh, `import overlay`, `edit` +
refresh, `delete`, `rename` (to a new name, or to the name of a deleted fix), `move` (first, or
after another), `export --mbox` / `export --quilt` and their `import mbox` / `import quilt`
(back into the project after its fixes were deleted, or into a second project; or that import
cut short at a write by Ctrl-C, SIGTERM, kill -9 or a failed write, then run again), and
`export --mbox` through `git am` then `import git` into a second project, on a real small git
upstream. After every step:

  the series lists exactly the fixes the model holds, in its order, each once, no patch file
  lies in the series directory unlisted, each patch carries the version last refreshed and the
  header it was given (a `Bug:` and a `Keeps:` field that no command writes on its own), `lint`
  finds no error, and the series applied with `git apply` on the pin gives the pinned files
  with exactly those fixes.

And a round trip (export then import) gives back every patch file byte for byte; through
`git am` and `import git`, every header field (git am trims trailing blanks). An import cut
short lists none of its patches (after a cleanup, leaves none of its files either), and run
again it takes them all.

A fix is a token `# FIX<k> v<n>` on the return line of a function only it touches (as in
tests/test_model.py, which covers rebases, stops and kills). Cost: PATCHFORGE_MODEL_EXAMPLES
examples (default 6) of up to 12 steps, derandomized (PATCHFORGE_MODEL_DERANDOMIZE=0 explores
new ones); no deadline.
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

from hypothesis import HealthCheck, event, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from helpers.cli import run_cli
from helpers.upstream import Upstream

SLOTS = {"pkg/a.py": [f"a{i}" for i in range(5)], "pkg/b.py": [f"b{i}" for i in range(5)]}
TOKEN = re.compile(rb"^\+[^\n]*# FIX(\d+) v(\d+)", re.M)


def initial_file(names: list[str]) -> bytes:
    return b"".join(f"def {n}():\n    x = 0\n    return {i}\n\n\n".encode()
                    for i, n in enumerate(names))


def with_token(content: bytes, slot: str, token: bytes) -> bytes:
    pattern = re.compile(rb"(def " + slot.encode() + rb"\(\):\n    x = 0\n    return [^\n#]*?)"
                         rb"(  # FIX\d+ v\d+)?\n")
    return pattern.sub(lambda m: m.group(1) + b"  " + token + b"\n", content, count=1)


class SeriesModel(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="series-model-"))
        self.up = Upstream(self.tmp / "up", {p: initial_file(n) for p, n in SLOTS.items()})
        self.root = self.project(self.tmp / "project")
        self.order: list[str] = []  # the series as the model holds it
        self.fix: dict[str, int] = {}  # patch name -> fix
        self.version: dict[int, int] = {}
        self.slot: dict[int, str] = {}
        self.next_fix = 0
        self.exports = 0

    def teardown(self) -> None:
        shutil.rmtree(self.tmp, ignore_errors=True)

    def project(self, root: Path) -> Path:
        root.mkdir(parents=True)
        self.ok(root, "init", "--standalone", str(root))
        self.ok(root, "upstream", "add", "up", "--git", str(self.up.path), "--at", self.up.base)
        return root

    @staticmethod
    def ok(root: Path, *args: str):
        result = run_cli(root, *args)
        assert result.rc == 0, f"patchforge {' '.join(args)} -> {result.rc}\n{result.text}"
        return result

    def close_edit(self) -> None:
        """The edit closed, if `refresh` left one open."""
        assert run_cli(self.root, "edit", "--close").rc in (0, 2)

    def series_dir(self, root: Path | None = None) -> Path:
        return (root or self.root) / "series" / "up"

    def listed(self, root: Path | None = None) -> list[str]:
        path = self.series_dir(root) / "series"
        return path.read_text().split() if path.exists() else []

    def patch_files(self, root: Path | None = None) -> dict[str, bytes]:
        return {name: (self.series_dir(root) / name).read_bytes() for name in self.listed(root)}

    def file_of(self, slot: str) -> str:
        return next(path for path, names in SLOTS.items() if slot in names)

    def claim_slot(self, data):
        """A free slot for one more fix: (slot, fix number, fix name, its file), or None."""
        free = sorted({s for names in SLOTS.values() for s in names} - set(self.slot.values()))
        if not free:
            return None
        slot = data.draw(st.sampled_from(free))
        fix, name = self.next_fix, f"fix{self.next_fix}"
        self.next_fix += 1
        return slot, fix, name, self.file_of(slot)

    # --- the user's steps -------------------------------------------------------------------
    @initialize(data=st.data(), count=st.integers(1, 3))
    def a_few_fixes(self, data, count) -> None:
        for _ in range(count):
            self.new_fix(data)

    @rule(data=st.data())
    def new_fix(self, data) -> None:
        claimed = self.claim_slot(data)
        if claimed is None:
            return
        slot, fix, name, path = claimed
        self.ok(self.root, "new", name, f"--file={path}")
        work = self.root / ".patchforge" / "work" / "up" / path
        work.write_bytes(with_token(work.read_bytes(), slot, f"# FIX{fix} v0".encode()))
        self.ok(self.root, "refresh")
        self.close_edit()
        # Fields no command writes on its own, added by hand as a user does: they must survive
        # every step (a Keeps: invariant the fix itself satisfies, a Bug with trailing blanks).
        patch = self.series_dir() / f"{name}.patch"
        head, sep, rest = patch.read_bytes().partition(b"\n\n")
        patch.write_bytes(head + f"\nBug: https://bugs.example.com/{fix}  \nKeeps: {path}: "
                                 f"# FIX{fix}".encode() + sep + rest)
        self.order.append(f"{name}.patch")
        self.fix[f"{name}.patch"], self.version[fix], self.slot[fix] = fix, 0, slot

    @precondition(lambda self: self.order)
    @rule(data=st.data())
    def edit_fix(self, data) -> None:
        name = data.draw(st.sampled_from(self.order))
        fix = self.fix[name]
        path = self.file_of(self.slot[fix])
        self.ok(self.root, "edit", name[:-len(".patch")])
        work = self.root / ".patchforge" / "work" / "up" / path
        version = self.version[fix] + 1
        work.write_bytes(with_token(work.read_bytes(), self.slot[fix],
                                    f"# FIX{fix} v{version}".encode()))
        self.ok(self.root, "refresh")
        self.close_edit()
        self.version[fix] = version

    @precondition(lambda self: self.order)
    @rule(data=st.data())
    def delete_fix(self, data) -> None:
        name = data.draw(st.sampled_from(self.order))
        self.ok(self.root, "delete", name[:-len(".patch")])
        self.order.remove(name)
        del self.fix[name]

    @precondition(lambda self: self.order)
    @rule(data=st.data())
    def rename_fix(self, data) -> None:
        name = data.draw(st.sampled_from(self.order))
        new = f"r-{name}"
        if new in self.order:
            # (fix1 renamed to a deleted fix0's name while r-fix0 is listed: a name taken.)
            result = run_cli(self.root, "rename", name[:-len(".patch")], new[:-len(".patch")])
            assert result.rc == 2 and f"{new} already exists" in result.err, result.text
            return
        self.ok(self.root, "rename", name[:-len(".patch")], new[:-len(".patch")])
        self.order[self.order.index(name)] = new
        self.fix[new] = self.fix.pop(name)

    @precondition(lambda self: len(self.order) > 1)
    @rule(data=st.data(), first=st.booleans())
    def move_fix(self, data, first) -> None:
        name = data.draw(st.sampled_from(self.order))
        others = [n for n in self.order if n != name]
        if first:
            self.ok(self.root, "move", name[:-len(".patch")], "--first")
            self.order = [name] + others
        else:
            after = data.draw(st.sampled_from(others))
            self.ok(self.root, "move", name[:-len(".patch")], "--after", after[:-len(".patch")])
            self.order = others[:others.index(after) + 1] + [name] + \
                others[others.index(after) + 1:]

    def _exported(self, how: str, into: str):
        """The series exported (`--mbox` or `--quilt`) for an import: (the patch files before,
        the export, the project to import into: this one with its fixes deleted, or a second
        one on the same upstream)."""
        before = self.patch_files()
        self.exports += 1
        out = self.tmp / f"export-{self.exports}{'.mbox' if how == 'mbox' else ''}"
        self.ok(self.root, "export", f"--{how}", str(out))
        if into == "back":
            for name in list(self.order):
                self.ok(self.root, "delete", name[:-len(".patch")])
            return before, out, self.root
        return before, out, self.project(self.tmp / f"other-{self.exports}")

    @precondition(lambda self: self.order)
    @rule(how=st.sampled_from(["mbox", "quilt"]), into=st.sampled_from(["back", "other"]))
    def export_then_import(self, how, into) -> None:
        """The series out and in again: back into this project once its fixes are deleted, or
        into a second project on the same upstream. Every patch file comes back byte for byte,
        in the same order, under the same name."""
        before, out, target = self._exported(how, into)
        self.ok(target, "import", how, str(out), "--upstream", "up")
        assert self.listed(target) == self.order
        assert self.patch_files(target) == before

    @precondition(lambda self: self.order)
    @rule(how=st.sampled_from(["mbox", "quilt"]), into=st.sampled_from(["back", "other"]),
          cut=st.sampled_from(["interrupt", "terminate", "kill", "eio"]),
          step=st.sampled_from(["write", "fsync", "rename"]), nth=st.integers(1, 8))
    def an_import_cut_short(self, how, into, cut, step, nth) -> None:
        """export_then_import with the import cut short at a write (Ctrl-C, SIGTERM, kill -9, a
        failed write): a cut with a cleanup leaves the project's series as it was and no file
        of the import; a kill leaves at most unlisted files; either way the same import run
        again takes every patch back byte for byte."""
        before, out, target = self._exported(how, into)
        args = ("import", how, str(out), "--upstream", "up")
        was = sorted(p.name for p in self.series_dir(target).glob("*.patch")) \
            if self.series_dir(target).is_dir() else []
        env = {**os.environ, "PATCHFORGE_FAULT": f"{step}:{nth}",
               "PATCHFORGE_FAULT_MODE": {"interrupt": "interrupt", "terminate": "terminate",
                                         "eio": "raise"}.get(cut, "")}
        proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(target), *args],
                              capture_output=True, env=env, cwd=self.tmp)
        event(f"import {how} cut short ({cut}) -> {proc.returncode}")
        if proc.returncode != 0:
            assert proc.returncode in {"interrupt": (130,), "terminate": (143,), "kill": (137,),
                                       "eio": (2,)}[cut], proc.stderr.decode()
            assert self.listed(target) == [], proc.stderr.decode()
            now = sorted(p.name for p in self.series_dir(target).glob("*.patch")) \
                if self.series_dir(target).is_dir() else []
            if cut != "kill":  # a cleanup ran: nothing of the import is left
                assert now == was, (proc.stderr.decode(), sorted(set(now) ^ set(was)))
            self.ok(target, *args)
        assert self.listed(target) == self.order
        assert self.patch_files(target) == before

    @precondition(lambda self: self.order)
    @rule()
    def export_quilt_again(self) -> None:
        """`export --quilt` into one directory, again and again whatever happened to the series
        in between (patches refreshed, renamed, deleted, moved): always taken, and DIR's series
        and patch files are then the project's."""
        out = self.tmp / "quilt-again"
        self.ok(self.root, "export", "--quilt", str(out))
        listed = (out / "series").read_text().split()
        assert listed == self.order
        for name in listed:
            assert (out / name).read_bytes() == (self.series_dir() / name).read_bytes()

    @rule(data=st.data())
    def import_overlay(self, data) -> None:
        """A full-file overlay of a file as the series leaves it, with one more fix in it."""
        claimed = self.claim_slot(data)
        if claimed is None:
            return
        slot, fix, name, path = claimed
        content = initial_file(SLOTS[path])
        for other in self.order:
            f = self.fix[other]
            if self.file_of(self.slot[f]) == path:
                content = with_token(content, self.slot[f], f"# FIX{f} v{self.version[f]}".encode())
        overlay = self.tmp / f"overlay-{fix}.py"
        overlay.write_bytes(with_token(content, slot, f"# FIX{fix} v0".encode()))
        self.ok(self.root, "import", "overlay", str(overlay), "--upstream", "up", "--path", path,
                "--name", name)
        patch = self.series_dir() / f"{name}.patch"
        head, sep, rest = patch.read_bytes().partition(b"\n\n")
        patch.write_bytes(head + f"\nBug: https://bugs.example.com/{fix}  \nKeeps: {path}: "
                                 f"# FIX{fix}".encode() + sep + rest)
        self.order.append(f"{name}.patch")
        self.fix[f"{name}.patch"], self.version[fix], self.slot[fix] = fix, 0, slot

    @precondition(lambda self: self.order)
    @rule()
    def through_git_am_and_import_git(self) -> None:
        """export --mbox, `git am` onto the pin, `import git` of those commits into a second
        project: the same fixes, in order, each with its header fields (git am trims trailing
        blanks)."""
        self.exports += 1
        mbox = self.tmp / f"am-{self.exports}.mbox"
        self.ok(self.root, "export", "--mbox", str(mbox))
        checkout = self.tmp / f"am-{self.exports}"
        subprocess.run(["git", "clone", "-q", str(self.up.path), str(checkout)], check=True)
        pin = json.loads((self.root / "upstream.lock").read_text())["upstreams"]["up"]["commit"]
        subprocess.run(["git", "checkout", "-q", pin], cwd=checkout, check=True)
        proc = subprocess.run(["git", "am", "-q", "--patch-format=mboxrd", str(mbox)],
                              cwd=checkout, capture_output=True)
        assert proc.returncode == 0, proc.stderr
        other = self.project(self.tmp / f"from-git-{self.exports}")
        self.ok(other, "import", "git", f"{pin}..HEAD", "--repo", str(checkout), "--upstream", "up")
        got = self.patch_files(other)
        assert len(got) == len(self.order)

        def fields(data: bytes) -> list[bytes]:
            header = data.partition(b"\n\n")[0].splitlines()
            return [line.rstrip() for line in header
                    if not line.startswith((b"Origin:", b"Base:"))]

        for data, name in zip(got.values(), self.order):
            want = (self.series_dir() / name).read_bytes()
            assert fields(data) == fields(want), (name, data, want)
            assert TOKEN.findall(data) == TOKEN.findall(want)

    @precondition(lambda self: self.order)
    @rule(data=st.data())
    def rename_to_a_deleted_name(self, data) -> None:
        deleted = self.series_dir() / "deleted"
        names = sorted(p.name for p in deleted.glob("*.patch")) if deleted.is_dir() else []
        names = [n for n in names if n not in self.order]
        if not names:
            return
        new = data.draw(st.sampled_from(names))
        name = data.draw(st.sampled_from(self.order))
        self.ok(self.root, "rename", name[:-len(".patch")], new[:-len(".patch")])
        self.order[self.order.index(name)] = new
        self.fix[new] = self.fix.pop(name)

    # --- what must hold after every step ------------------------------------------------------
    @invariant()
    def the_series_is_what_the_model_holds(self) -> None:
        assert self.listed() == self.order
        on_disk = sorted(p.name for p in self.series_dir().glob("*.patch")) \
            if self.series_dir().is_dir() else []
        assert on_disk == sorted(self.order), "a patch file lies unlisted in the series"
        for name in self.order:
            data = (self.series_dir() / name).read_bytes()
            fix = self.fix[name]
            assert TOKEN.findall(data) == [(str(fix).encode(), str(self.version[fix]).encode())]
            assert f"\nBug: https://bugs.example.com/{fix}  \n".encode() in data, name
            assert f"\nKeeps: {self.file_of(self.slot[fix])}: # FIX{fix}\n".encode() in data

    @invariant()
    def lint_finds_no_error(self) -> None:
        result = run_cli(self.root, "lint", "--json")
        assert result.rc in (0, 1), result.text
        errors = [f for f in json.loads(result.out)["findings"] if f["severity"] == "error"]
        assert not errors, errors

    @invariant()
    def the_series_gives_the_fixes(self) -> None:
        tree = self.tmp / "apply"
        shutil.rmtree(tree, ignore_errors=True)
        tree.mkdir()
        expected = {p: initial_file(n) for p, n in SLOTS.items()}
        for path, content in expected.items():
            (tree / path).parent.mkdir(parents=True, exist_ok=True)
            (tree / path).write_bytes(content)
        for name in self.order:
            proc = subprocess.run(["git", "apply", "-"], cwd=tree, capture_output=True,
                                  input=(self.series_dir() / name).read_bytes())
            assert proc.returncode == 0, f"{name} does not apply: {proc.stderr!r}"
            fix = self.fix[name]
            path = self.file_of(self.slot[fix])
            expected[path] = with_token(expected[path], self.slot[fix],
                                        f"# FIX{fix} v{self.version[fix]}".encode())
        assert {p: (tree / p).read_bytes() for p in expected} == expected


SeriesModel.TestCase.settings = settings(
    max_examples=int(os.environ.get("PATCHFORGE_MODEL_EXAMPLES", "6")),
    stateful_step_count=12, deadline=None,
    derandomize=os.environ.get("PATCHFORGE_MODEL_DERANDOMIZE", "1") != "0",
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_series_commands_in_any_order_keep_every_fix_and_field = SeriesModel.TestCase
