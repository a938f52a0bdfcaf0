"""`patchforge status` on real git histories: every landing pattern, the negatives, landed_in,
Forwarded pull requests on the test forge, Drop-When, exit codes and the --json schema, and the
real example stack against vllm 0.33.0.

Each test builds an upstream git repository with `git init` and commits, adds it to a fresh
patchforge project as a `git` upstream pinned at the base commit, writes the patch files itself,
and asks for the status against a later upstream commit.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from patchforge.formats.schemas import validation_errors
from patchforge.store.diff import make_file_diff
from patchforge.store.gitstore import cache_dir
from helpers.cli import run_subprocess
from helpers.env import REPO_ROOT, shared_example_releases
from helpers.git import git
from helpers.project import add_git_upstream, make_project
from helpers.upstream import ATTENTION, CLAMP, INDPTR, Upstream, dep3_patch

MAIN = "pkg/attn.py"

# The fix: two hunks. Hunk 1 fills the padding tail of indptr, hunk 2 widens the row offset.
BASE = ATTENTION
FIX1_OLD, FIX1_NEW = INDPTR
FIX2_OLD, FIX2_NEW = CLAMP
FIXED = BASE.replace(FIX1_OLD, FIX1_NEW).replace(FIX2_OLD, FIX2_NEW)


def fixed(text: bytes, *, hunk1: bool = True, hunk2: bool = True) -> bytes:
    if hunk1:
        assert FIX1_OLD in text
        text = text.replace(FIX1_OLD, FIX1_NEW)
    if hunk2:
        assert FIX2_OLD in text
        text = text.replace(FIX2_OLD, FIX2_NEW)
    return text


def file_diff(path: str, old: bytes | None, new: bytes | None) -> bytes:
    return make_file_diff(path if old is not None else None, path if new is not None else None,
                          old, new)


class Stack:
    """A patchforge project with one git upstream `up` pinned at the upstream's base commit."""

    def __init__(self, root: Path, upstream: Upstream, *, api_url: str | None = None) -> None:
        self.root = make_project(root, api_url=api_url)
        self.upstream = upstream
        add_git_upstream(root, "up", upstream.path, upstream.base, install_root=None)
        self.names: list[str] = []

    def add(self, name: str, diff: bytes, **kw) -> None:
        directory = self.root / "series" / "up"
        directory.mkdir(parents=True, exist_ok=True)
        (directory / name).write_bytes(dep3_patch(diff, **kw))
        self.names.append(name)
        (directory / "series").write_text("".join(n + "\n" for n in self.names))

    def status(self, against: str | None = None, *, forge=None) -> dict:
        """name -> PatchStatus, through the operations the CLI calls."""
        from patchforge.pins import open_store
        from patchforge.ops.status import resolve_targets, series_status
        from patchforge.project import Project

        project = Project.discover(self.root)
        with open_store(project) as store:
            targets = resolve_targets(project, store, {"up": against} if against else None)
            results = series_status(project, store, targets, forge=forge)
        return {r.name: r for r in results}

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return run_subprocess(self.root, *args)


@pytest.fixture
def upstream(tmp_path) -> Upstream:
    return Upstream(tmp_path / "upstream", {MAIN: BASE, "pkg/other.py": b"VALUE = 1\n",
                                            "README.md": b"# upstream\n"})


@pytest.fixture
def stack(tmp_path, upstream) -> Stack:
    return Stack(tmp_path / "project", upstream)


def the_fix() -> bytes:
    return file_diff(MAIN, BASE, FIXED)


def evidence_text(status) -> str:
    return "\n".join(status.evidence)


# -- the patch applies --------------------------------------------------------------------------

def test_locked_target_applies_and_exit_zero(stack):
    stack.add("fix.patch", the_fix())
    status = stack.status()["fix.patch"]
    assert status.state == "applies" and not status.attention
    assert status.landed_in is None
    proc = stack.cli("status")
    assert proc.returncode == 0, proc.stderr
    assert b"fix.patch" in proc.stdout


def test_a_series_without_a_patch_yet_says_so(stack):
    """The first `status` a newcomer runs, right after `upstream add`, said "all 0 patches
    apply and are still needed"; it says there is no patch yet (exit 0, as before)."""
    proc = stack.cli("status")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode().splitlines()[-1] == "no patches yet", proc.stdout
    assert b"all 0" not in proc.stdout


def test_a_patch_without_a_diff_is_empty_never_applies(stack, upstream):
    """A merge kept a patch's header and lost its diff (or `new` made it and nothing was
    refreshed into it): status called it `applies`, and "all 2 patches apply" read as the fix
    deployed, while lint and export said it is empty. status says `empty`, with lint's own
    words, in its table, its summary and --json (at the pin and against another target); a
    warning (exit 0) as in lint, an error under --strict."""
    stack.add("fix.patch", the_fix())
    stack.add("lost.patch", b"", description="the diff a merge lost")
    target = upstream.commit({"README.md": b"# upstream, later\n"}, "readme")
    lint = stack.cli("lint", "--no-forge", "--json")
    said = [f["message"] for f in json.loads(lint.stdout)["findings"] if f["check"] == "empty"]
    assert said == ["has no change yet (no diff): `patchforge edit lost`, make the change, "
                    "`patchforge refresh`; or `patchforge delete` it"], lint.stdout
    for against in ((), ("--against", f"up={target}")):
        proc = stack.cli("status", *against)
        assert proc.returncode == 0, proc.stderr
        rows = {line.split()[0]: line.split(None, 2)[1:] for line in
                proc.stdout.decode().splitlines() if line.startswith("up/")}
        assert rows["up/fix.patch"][0] == "applies", proc.stdout
        assert rows["up/lost.patch"] == ["empty", said[0]], proc.stdout
        assert b"all 2 patches apply and are still needed, but 1 is empty (no diff, so no " \
            b"change)" in proc.stdout, proc.stdout
        proc = stack.cli("status", "--json", *against)
        document = json.loads(proc.stdout)
        assert validation_errors(document, "status") == []
        lost = next(p for p in document["patches"] if p["name"] == "lost.patch")
        assert (lost["state"], lost["evidence"], lost["needs_attention"], lost["rebase"]) == \
            ("empty", said, False, "move"), lost
        assert stack.cli("status", "--strict", *against).returncode == 1


def test_offset_when_upstream_added_lines_above(stack, upstream):
    target = upstream.commit({MAIN: BASE.replace(b"import os\n", b"import os\nimport sys\n"
                                                 b"import math\n")}, "more imports")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "offset" and not status.attention
    assert stack.cli("status", "--against", f"up={target}").returncode == 0


def test_fuzz_when_context_changed_is_a_warning_an_error_under_strict(stack, upstream):
    """The last context line of hunk 2 changed (a new signature): the hunk still applies, with
    reduced context. That is a warning, an error under --strict (the contract's words, as lint
    has it): status exited 1 with and without --strict, "1 patch needs attention", so --strict
    changed nothing. Now exit 0 with the fuzz said in the summary, exit 1 under --strict."""
    text = BASE.replace(b"def scale_for(dtype):\n", b"def scale_for(dtype, default=1.0):\n")
    target = upstream.commit({MAIN: text}, "lint")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "fuzz" and not status.attention and status.rebase == "move"
    proc = stack.cli("status", "--against", f"up={target}")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert b"1 patch applies and is still needed, but 1 applies only with fuzz" in proc.stdout
    document = json.loads(stack.cli("status", "--json", "--against", f"up={target}").stdout)
    assert document["needs_attention"] is False, document
    assert stack.cli("status", "--strict", "--against", f"up={target}").returncode == 1


def test_conflict(stack, upstream):
    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    target = upstream.commit({MAIN: text}, "rewrite row_offset")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "conflict" and status.attention
    assert status.landed_in is None
    # The table says where: the evidence column was empty for a conflict, at a target as at
    # the pin, so a reader had to run the rebase to learn which file stops it.
    proc = stack.cli("status", "--against", f"up={target}")
    assert proc.returncode == 1, proc.stderr
    assert f"up/fix.patch  conflict  hunk 2 of 2 fails in {MAIN}\n".encode() in proc.stdout, \
        proc.stdout


def test_the_merges_started_for_a_patch_end_with_its_decision(stack, upstream, tmp_path,
                                                              monkeypatch):
    """The 3-way merge a conflict comes from is started before landed detection runs
    (SeriesJudge._start_merges) and ends with the patch's decision: no process or file of it
    is left, whether its answer was read or not."""
    import patchforge.store.diff as diff

    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    target = upstream.commit({MAIN: text}, "rewrite row_offset")
    stack.add("fix.patch", the_fix())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    started = []
    monkeypatch.setattr(diff, "scratch_dir", lambda: started.append(1) or str(scratch))
    assert stack.status(target)["fix.patch"].state == "conflict"
    assert started and not list(scratch.iterdir())


def test_a_patch_whose_result_is_upstream_starts_no_merge(stack, upstream, monkeypatch):
    """A patch that does not apply because upstream made its change (its post-image is in the
    file) is landed, and landed detection says so without a 3-way merge: none is started for
    it before the decision (SeriesJudge._start_merges), where each was a git process thrown
    away; a conflicting patch still has its merge started."""
    import patchforge.judge as judge

    made = []
    real = judge.FileMerge

    def counting(*args, **kw):
        made.append(args)
        return real(*args, **kw)
    monkeypatch.setattr(judge, "FileMerge", counting)
    landed = upstream.commit({MAIN: FIXED}, "upstream takes the fix")
    stack.add("fix.patch", the_fix())
    assert stack.status(landed)["fix.patch"].state == "upstreamed"
    assert made == []
    conflict = upstream.commit(
        {MAIN: BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")},
        "rewrite row_offset")
    assert stack.status(conflict)["fix.patch"].state == "conflict"
    assert len(made) == 1


def test_a_merge_that_cannot_start_ends_the_ones_started_before_it(tmp_path, monkeypatch):
    """When the judge cannot start a patch's second 3-way merge (here: its scratch directory
    is gone), the error goes on and the first merge's process and files are ended with it."""
    import patchforge.store.diff as diff

    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    # pkg/other.py applies only with fuzz (its merge, clean, comes first), then the main
    # file conflicts.
    other = b"".join(b"line %d\n" % k for k in range(1, 4)) + b"VALUE = 1\n" + \
        b"".join(b"line %d\n" % k for k in range(5, 8))
    upstream = Upstream(tmp_path / "upstream", {MAIN: BASE, "pkg/other.py": other})
    stack = Stack(tmp_path / "project", upstream)
    target = upstream.commit({MAIN: text,
                              "pkg/other.py": other.replace(b"line 2\n", b"line two\n")},
                             "rewrite row_offset")
    stack.add("fix.patch", file_diff("pkg/other.py", other,
                                     other.replace(b"VALUE = 1", b"VALUE = 2")) + the_fix())
    scratch, gone = tmp_path / "scratch", tmp_path / "gone"
    scratch.mkdir()
    started = []
    # A second merge while one is under way finds no scratch directory.
    monkeypatch.setattr(diff, "scratch_dir", lambda: started.append(1) or
                        str(gone if list(scratch.iterdir()) else scratch))
    with pytest.raises(FileNotFoundError):
        stack.status(target)
    assert len(started) == 2 and not list(scratch.iterdir())


def test_a_stop_asks_the_merges_of_the_files_that_do_not_apply_first(stack, upstream,
                                                                   tmp_path, monkeypatch):
    """status reports a conflict without merging the files of the patch that still apply: the
    merge of the file that does not apply conflicts, and the patch stops whatever the others
    give. A rebase, which puts every file of the stop in the worktree, merges them all; both
    say the same of the patch (the rebase's dry run here)."""
    import patchforge.store.diff as diff

    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    # pkg/other.py applies at an offset (upstream changed the file above it), the main file
    # conflicts.
    target = upstream.commit({MAIN: text, "pkg/other.py": b"import os\nVALUE = 1\n"},
                             "rewrite row_offset")
    stack.add("fix.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 2\n")
              + the_fix())
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    started = []
    monkeypatch.setattr(diff, "scratch_dir", lambda: started.append(1) or str(scratch))
    assert stack.status(target)["fix.patch"].state == "conflict"
    assert len(started) == 1 and not list(scratch.iterdir())
    dry = json.loads(stack.cli("rebase", "--to", f"up={target}", "--dry-run", "--json").stdout)
    assert [(p["name"], p["action"]) for p in dry["patches"]] == [("fix.patch", "conflict")]


def test_a_text_patch_on_a_file_git_takes_for_binary_is_a_conflict_not_an_error(stack,
                                                                                 upstream):
    """Upstream's new version of the file has a NUL byte near the top (git takes it for binary)
    and changed the patch's lines: `git merge-file` refuses it, which ended status and the
    rebase with an error (the rebase could only be aborted). It is a conflict, as in git's own
    merges: status reports it, the rebase stops with the target's file in the worktree and
    says why there are no markers, and the change made there again goes on."""
    changed = b"    return row * stride + 0  # differs upstream\n"
    text = b"# \0 marker\n" + BASE.replace(FIX2_OLD, changed)
    target = upstream.commit({MAIN: text}, "a NUL byte, and row_offset rewritten")
    stack.add("fix.patch", the_fix())
    status = stack.cli("status", "--against", f"up={target}")
    assert status.returncode == 1, status.stderr
    assert b"up/fix.patch  conflict" in status.stdout
    stop = stack.cli("rebase", "--to", f"up={target}")
    assert stop.returncode == 3, stop.stderr
    assert b"git takes the file for binary and cannot merge it" in stop.stderr
    work = stack.root / ".patchforge" / "work" / "up" / MAIN
    assert work.read_bytes() == text  # the target's file, no conflict markers
    work.write_bytes(text.replace(FIX1_OLD, FIX1_NEW).replace(changed, FIX2_NEW))
    done = stack.cli("rebase", "--continue")
    assert done.returncode == 0, done.stderr
    after = stack.status()
    assert after["fix.patch"].state == "applies", after["fix.patch"]


@pytest.mark.parametrize("upstream_fills,state", [(b"VALUE = 2\n", "upstreamed"),
                                                  (b"OTHER = 1\n", "conflict")])
def test_a_patch_filling_an_empty_file_meets_the_file_upstream_filled_as_git_does(
        tmp_path, upstream_fills, state):
    """A patch that puts lines into an empty upstream file (`@@ -0,0 +1 @@`, no context):
    git apply takes it only on an empty file. Upstream filling the file with the same line
    (the fix landed) was judged unsure, the hunk applying both ways, and a rebase stopped on
    it; with other lines it "applied exactly" above them, where git's merge conflicts."""
    upstream = Upstream(tmp_path / "upstream", {MAIN: BASE, "pkg/empty.py": b""})
    stack = Stack(tmp_path / "project", upstream)
    stack.add("fill.patch", file_diff("pkg/empty.py", b"", b"VALUE = 2\n"))
    target = upstream.commit({"pkg/empty.py": upstream_fills}, "fill pkg/empty.py")
    assert stack.status(target)["fill.patch"].state == state
    dry = json.loads(stack.cli("rebase", "--to", f"up={target}", "--dry-run", "--json").stdout)
    assert [p["action"] for p in dry["patches"]] == \
        [{"upstreamed": "dropped", "conflict": "conflict"}[state]]


def test_a_patch_of_many_files_upstream_changed_is_judged_within_a_low_file_limit(tmp_path):
    """The merges started before a patch's landed detection are a few at a time: a patch of 100
    files upstream changed, one of them in conflict, is judged by a process allowed 64 open
    files (each merge under way holds a pipe; the rest run when the decision reaches them)."""
    import resource

    files = {f"pkg/m{i}.py": "".join(f"line{k} = {k}  # {i}\n" for k in range(30)).encode()
             for i in range(100)}
    up = Upstream(tmp_path / "upstream", files)
    changed = {path: b"import os\n" + text for path, text in files.items()}
    changed["pkg/m99.py"] = files["pkg/m99.py"].replace(b"line15 = 15", b"line15 = 'up'")
    target = up.commit(changed, "upstream edits every file")
    stack = Stack(tmp_path / "project", up)
    stack.add("big.patch", b"".join(
        file_diff(f"pkg/m{i}.py", files[f"pkg/m{i}.py"],
                  files[f"pkg/m{i}.py"].replace(b"line15 = 15", b"line15 = 'mine'"))
        for i in range(100)))

    def low_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (64, resource.getrlimit(
            resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.run([sys.executable, "-m", "patchforge", "--root", str(stack.root),
                           "status", "--against", target], capture_output=True,
                          preexec_fn=low_limit, timeout=120)
    assert proc.returncode == 1, proc.stderr.decode(errors="replace")
    assert b"big.patch" in proc.stdout and b"conflict" in proc.stdout


# -- landing patterns ---------------------------------------------------------------------------

def history_around(upstream: Upstream, landing: dict[str, bytes | None], message: str,
                   moves: dict[str, str] | None = None) -> tuple[str, str]:
    """A history with commits touching the patch's file before and after the landing commit,
    and unrelated commits in between. Returns (landing commit, target commit)."""
    upstream.commit({"README.md": b"# upstream\nunrelated\n"}, "docs")
    before = upstream.read(MAIN).replace(b"return 448.0", b"return 240.0")
    upstream.commit({MAIN: before}, "fnuz scale")
    upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "other")
    current = upstream.read(MAIN)
    files = {path: (fix(current) if callable(fix) else fix) for path, fix in landing.items()}
    landed = upstream.commit(files, message, renames=moves)
    path = next((new for new in (moves or {}).values()), MAIN)
    after = upstream.read(path).replace(b"or 16", b"or 32")
    upstream.commit({path: after}, "bigger default block")
    target = upstream.commit({"pkg/other.py": b"VALUE = 3\n"}, "other again")
    return landed, target


def test_landed_verbatim_names_the_commit(stack, upstream):
    landed, target = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed" and status.confidence == "high", status.evidence
    assert status.landed_in == landed
    assert status.hunks_total == status.hunks_landed == 2
    assert "reverse-apply" in evidence_text(status)
    assert status.attention


def test_the_history_a_first_status_reads_is_fetched_at_once(stack, upstream, tmp_path):
    """The store is a partial clone: the history's versions of a file are not in it until a
    question reads them. Left to `git diff-tree`, they were fetched one commit at a time (a
    `git fetch` per commit of the history that changes the file, dozens against a real
    upstream, each a pack of whole blobs); they are fetched in one go before the diff, and
    the verdict is the same. Counted by git's own trace of its processes."""
    text = upstream.read(MAIN)
    for k in range(6):  # a history that changes the fixed file again and again
        text = text.replace(b"    total = 0\n" if k == 0 else b"    total = %d\n" % (k - 1),
                            b"    total = %d\n" % k)
        upstream.commit({MAIN: text}, f"start the total at {k}")
    landed, target = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    stack.add("fix.patch", the_fix())
    trace = tmp_path / "trace.json"
    proc = run_subprocess(stack.root, "status", "--against", f"up={target}", "--json",
                          env={"GIT_TRACE2_EVENT": str(trace)})
    assert proc.returncode == 1, proc.stderr
    [found] = json.loads(proc.stdout)["patches"]
    assert (found["state"], found["landed_in"]) == ("upstreamed", landed), found
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    names = {e["sid"]: e["name"] for e in events if e["event"] == "cmd_name"}
    # A process started by another is named by the other's id, a slash, and its own.
    fetched_by = [names.get(sid.rpartition("/")[0]) for sid, name in names.items()
                  if name == "fetch"]
    assert "diff-tree" not in fetched_by, fetched_by


def test_a_status_whose_files_the_store_holds_asks_git_no_presence_check(stack, upstream,
                                                                         tmp_path):
    """The store is a partial clone: before reading files it asks which of them it lacks.
    Those its packs hold are told from the pack indexes, so a second `status --against` (every
    file and version read by the first) starts no `git rev-list` to ask, and says the same."""
    landed, target = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    stack.add("fix.patch", the_fix())
    first = stack.cli("status", "--against", f"up={target}", "--json")
    assert first.returncode == 1, first.stderr
    trace = tmp_path / "trace.json"
    again = run_subprocess(stack.root, "status", "--against", f"up={target}", "--json",
                           env={"GIT_TRACE2_EVENT": str(trace)})
    assert (again.returncode, again.stdout) == (1, first.stdout), again.stderr
    assert json.loads(again.stdout)["patches"][0]["landed_in"] == landed
    started = [json.loads(line) for line in trace.read_text().splitlines()]
    names = [e["name"] for e in started if e["event"] == "cmd_name"]
    assert "rev-list" not in names and "fetch" not in names, names


def test_a_second_status_of_the_same_target_reads_the_walk_and_renames_back(stack, upstream,
                                                                          tmp_path):
    """The range's walk (`git log --raw` of base..target) and the rename pairing (`git
    diff-tree -M` of base and target) are questions about two commit ids alone, whose answers
    never change: the first `status --against` keeps them in the cache (`kept/`) and the next
    one of the same target reads them back, starting neither git process, and says the same
    (a fix landed in a renamed file, found by both). A kept answer cut short, damaged or gone
    is asked of git again, and kept whole again."""
    new_path = "pkg/attention/helpers.py"
    history_around(upstream, {}, "move attn.py", moves={MAIN: new_path})
    fixed_commit = upstream.commit({new_path: fixed(upstream.read(new_path))}, "the fix")
    stack.add("fix.patch", the_fix())

    def status() -> tuple[bytes, list[str]]:
        trace = tmp_path / "trace.json"
        trace.unlink(missing_ok=True)
        proc = run_subprocess(stack.root, "status", "--against", f"up={fixed_commit}",
                              "--json", env={"GIT_TRACE2_EVENT": str(trace)})
        assert proc.returncode == 1, proc.stderr
        started = [json.loads(line) for line in trace.read_text().splitlines()]
        argvs = [" ".join(e["argv"]) for e in started if e["event"] == "start"]
        return proc.stdout, [argv for argv in argvs if " log --raw " in argv or
                             (" diff-tree " in argv and " -M " in argv)]

    first, asked = status()
    [found] = json.loads(first)["patches"]
    assert (found["state"], found["landed_in"]) == ("upstreamed", fixed_commit), found
    assert any(f"renamed upstream to {new_path}" in line for line in found["evidence"])
    # The walk once; the pairing of base and target, and of the commits the landing's
    # search asks about.
    assert [" log --raw " in argv for argv in asked].count(True) == 1, "\n".join(asked)
    assert len(asked) >= 2, "\n".join(asked)
    # One kept answer per question: a pairing's answer may take several diff-tree processes
    # (the pairing again without the files it paired, to tell a split; a pair the directory
    # guess weighs), all kept in it.
    made = sorted(p for p in (cache_dir() / "kept").glob("git-*")
                  if p.name.split("-")[1] in ("range", "renames"))
    kinds = [p.name.split("-")[1] for p in made]
    assert kinds.count("range") == 1 and 1 <= kinds.count("renames") < len(asked), made
    first_asked = sorted(asked)
    wholes = [p.read_bytes() for p in made]
    again, asked = status()
    assert (again, asked) == (first, [])
    for damaged in (lambda whole: whole[:len(whole) // 2],
                    lambda whole: whole.replace(b"pkg/", b"pkh/"), lambda whole: b""):
        for path, whole in zip(made, wholes):
            path.write_bytes(damaged(whole))
        again, asked = status()
        assert again == first and sorted(asked) == first_asked, asked
        assert [p.read_bytes() for p in made] == wholes
    for path in made:
        path.unlink()
    again, asked = status()
    assert again == first and sorted(asked) == first_asked, asked
    assert [p.read_bytes() for p in made] == wholes


def test_a_second_status_reads_the_historys_diffs_back(stack, upstream, tmp_path):
    """The history's diffs (`git diff-tree --stdin -p` of the commits that change the series'
    files, limited to them) are a function of each commit and path: the first `status
    --against` keeps git's text in the cache, a record per commit (`kept/commits/`), and the
    next one reads it back, starting no such process, with the same answer (the landing
    commit named from those diffs); a record cut short, damaged or naming another commit is
    asked of git again, and kept whole again."""
    text = upstream.read(MAIN)
    for k in range(4):  # a history that changes the fixed file again and again
        text = text.replace(b"    total = 0\n" if k == 0 else b"    total = %d\n" % (k - 1),
                            b"    total = %d\n" % k)
        upstream.commit({MAIN: text}, f"start the total at {k}")
    landed, target = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    stack.add("fix.patch", the_fix())

    def status() -> tuple[bytes, list[str]]:
        return _status_traced(stack.root, target, tmp_path, " diff-tree --stdin -p ")

    first, asked = status()
    [found] = json.loads(first)["patches"]
    assert (found["state"], found["landed_in"]) == ("upstreamed", landed), found
    assert asked, "the history's diffs are read"
    made = sorted((cache_dir() / "kept" / "commits").iterdir())
    # One for each commit after the pin that changes the file.
    assert len(made) == len(git(upstream.path, "rev-list", target, "--", MAIN).split()) - 1
    wholes = [p.read_bytes() for p in made]
    assert all(b"diff --git a/" + MAIN.encode() in whole for whole in wholes)
    again, asked_again = status()
    assert (again, asked_again) == (first, [])
    for damaged in (lambda whole: whole[:-1], lambda whole: whole.replace(b"total", b"totaL"),
                    lambda whole: wholes[(wholes.index(whole) + 1) % len(wholes)]):
        for path, whole in zip(made, wholes):
            path.write_bytes(damaged(whole))
        again, asked_again = status()
        assert again == first and len(asked_again) == len(asked), asked_again
        assert [p.read_bytes() for p in made] == wholes


def test_a_later_target_asks_git_for_the_diffs_of_its_new_commits_alone(stack, upstream,
                                                                       tmp_path):
    """A nightly's history is the last one's and a few commits more: a status of a later
    target reads the diffs the earlier one kept per commit, and asks git only for the
    commits no earlier status read, with the answer a status asked first gives."""
    text = upstream.read(MAIN)
    for k in range(3):
        text = text.replace(b"    total = 0\n" if k == 0 else b"    total = %d\n" % (k - 1),
                            b"    total = %d\n" % k)
        upstream.commit({MAIN: text}, f"start the total at {k}")
    landed = upstream.commit({MAIN: fixed(text)}, "the fix, verbatim")
    earlier = upstream.commit({"pkg/other.py": b"VALUE = 1\n"}, "other")
    text = upstream.read(MAIN)
    upstream.commit({MAIN: text.replace(b"or 16", b"or 32")}, "bigger default block")
    upstream.commit({MAIN: text.replace(b"    total = 2\n", b"    total = 7\n")}, "total")
    target = upstream.commit({"pkg/other.py": b"VALUE = 3\n"}, "other again")
    stack.add("fix.patch", the_fix())
    # A git that notes the commits each `git diff-tree --stdin` is asked about (real git
    # answers).
    bindir, asked = tmp_path / "bin", tmp_path / "asked"
    bindir.mkdir()
    (bindir / "git").write_text(
        f'#!/bin/sh\ncase " $* " in *" diff-tree --stdin "*)\n'
        f'  tee -a {asked} | {shutil.which("git")} "$@"; exit $? ;;\nesac\n'
        f'exec {shutil.which("git")} "$@"\n')
    (bindir / "git").chmod(0o755)
    env = {"PATH": f"{bindir}:{os.environ['PATH']}"}

    def status(commit: str) -> bytes:
        proc = run_subprocess(stack.root, "status", "--against", f"up={commit}", "--json",
                              env=env)
        assert proc.returncode in (0, 1), proc.stderr
        return proc.stdout

    [found] = json.loads(status(earlier))["patches"]
    assert (found["state"], found["landed_in"]) == ("upstreamed", landed), found
    assert asked.read_text().split(), "the history's diffs are read"
    asked.unlink()
    later = status(target)
    [found] = json.loads(later)["patches"]
    assert (found["state"], found["landed_in"]) == ("upstreamed", landed), found
    assert set(asked.read_text().split()) == \
        set(git(upstream.path, "rev-list", f"{earlier}..{target}", "--", MAIN).split())
    shutil.rmtree(cache_dir() / "kept")
    assert status(target) == later


def _status_traced(root, target: str, tmp_path, words: str) -> tuple[bytes, list[str]]:
    """`status --against up=TARGET --json` (exit 1) in a process of its own, traced by git:
    its output, and the command lines of the git processes it started that hold `words`."""
    trace = tmp_path / "trace.json"
    trace.unlink(missing_ok=True)
    proc = run_subprocess(root, "status", "--against", f"up={target}", "--json",
                          env={"GIT_TRACE2_EVENT": str(trace)})
    assert proc.returncode == 1, proc.stderr
    started = [json.loads(line) for line in trace.read_text().splitlines()]
    return proc.stdout, [" ".join(e["argv"]) for e in started if e["event"] == "start"
                         and words in " ".join(e["argv"])]


def test_a_second_status_reads_its_merges_back(stack, upstream, tmp_path):
    """A 3-way merge's answer (`git merge-file` of three contents) is a function of those
    contents, the labels, the style and git: the first `status --against` keeps each merge's
    answer in the cache (`kept/contents/`), and the next one of the same target takes it from
    there, starting no merge, and says the same. An answer cut short, damaged or gone is
    asked of git again, and kept whole again."""
    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    conflict = upstream.commit({MAIN: text, "pkg/other.py": b"VALUE = 2\n"},
                               "rewrite row_offset")
    stack.add("fix.patch", the_fix())
    other = b"VALUE = 1\n"
    stack.add("other.patch", file_diff("pkg/other.py", other, b"VALUE = 3\n"))

    def status() -> tuple[bytes, int]:
        out, merging = _status_traced(stack.root, conflict, tmp_path, " merge-file ")
        return out, len(merging)

    first, merges = status()
    said = {p["name"]: p["state"] for p in json.loads(first)["patches"]}
    assert said == {"fix.patch": "conflict", "other.patch": "conflict"}, said
    assert merges == 2
    assert status() == (first, 0)
    kept = sorted((cache_dir() / "kept" / "contents").iterdir())
    assert len(kept) == merges, kept
    wholes = [p.read_bytes() for p in kept]
    for damaged in (lambda whole: whole[:len(whole) // 2],
                    lambda whole: whole[:-2] + bytes([whole[-2] ^ 1]) + whole[-1:],
                    lambda whole: b""):
        for path, whole in zip(kept, wholes):
            path.write_bytes(damaged(whole))
        assert status() == (first, merges)
        assert [p.read_bytes() for p in kept] == wholes
    for path in kept:
        path.unlink()
    assert status() == (first, merges)
    assert [p.read_bytes() for p in kept] == wholes


def test_a_status_stopped_while_keeping_a_merge_keeps_no_part_of_it(stack, upstream):
    """A merge's answer is written to `kept/contents/` as the store's other kept answers are
    (one write, with its fault point): a status interrupted there (Ctrl-C) leaves no part of
    the answer, one whose disk fails there says the same as ever and keeps nothing, and the
    next status keeps each whole."""
    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    conflict = upstream.commit({MAIN: text, "pkg/other.py": b"VALUE = 2\n"},
                               "rewrite row_offset")
    stack.add("fix.patch", the_fix())
    stack.add("other.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"))
    contents = cache_dir() / "kept" / "contents"
    command = ("status", "--against", f"up={conflict}", "--json")
    first = run_subprocess(stack.root, *command, expect=1).stdout
    kept = {p.name: p.read_bytes() for p in contents.iterdir()}
    assert len(kept) == 2, kept
    shutil.rmtree(contents)  # the history's answers and release texts stay: read back
    stopped = run_subprocess(stack.root, *command, env={"PATCHFORGE_FAULT": "keep:1",
                                                        "PATCHFORGE_FAULT_MODE": "interrupt"})
    assert stopped.returncode == 130, stopped.stderr
    assert list(contents.iterdir()) == []
    failing = run_subprocess(stack.root, *command, expect=1,
                             env={"PATCHFORGE_FAULT": "keep:1+", "PATCHFORGE_FAULT_MODE": "raise"})
    assert failing.stdout == first
    assert list(contents.iterdir()) == []
    assert run_subprocess(stack.root, *command, expect=1).stdout == first
    assert {p.name: p.read_bytes() for p in contents.iterdir()} == kept


def test_an_answer_kept_under_other_arguments_or_another_format_is_not_read(tmp_path,
                                                                            monkeypatch):
    """A kept answer is named by the exact arguments git was asked with and by the version of
    how patchforge names and reads kept answers: one kept by a patchforge that asked git
    otherwise (another diff algorithm), or read its output otherwise, is never taken for
    git's answer now. Real git, a real cache directory."""
    from patchforge.store import diff

    a = b"}\nreturn\n{\nx = 1\n{\ny = 2\ny = 2\ny = 2\n\ny = 2\n}\n{\n"
    b = b"y = 2\n{\ny = 2\ny = 2\nreturn\n{\n\ny = 2\nx = 1\n\n}\nreturn\n"
    answers = diff.KeptAnswers(tmp_path)
    monkeypatch.setattr(diff, "_kept", answers)
    myers = diff.changed_blocks([(a, b)])
    assert diff.changed_blocks([(a, b)]) == myers and len(list(answers.directory.iterdir())) == 1
    patience = tuple("--diff-algorithm=patience" if o.startswith("--diff-algorithm") else o
                     for o in diff.DIFF_OPTIONS)
    monkeypatch.setattr(diff, "DIFF_OPTIONS", patience)
    monkeypatch.setattr(diff, "_kept", None)
    asked = diff.changed_blocks([(a, b)])
    assert asked != myers  # the two algorithms answer these contents differently
    monkeypatch.setattr(diff, "_kept", answers)
    assert diff.changed_blocks([(a, b)]) == asked
    assert len(list(answers.directory.iterdir())) == 2
    for merge in (diff.FileMerge(a, b, a + b"tail\n", ("o", "b", "t")),
                  diff.FileMerge(a, b, a + b"tail\n", ("o", "b", "t"), diff3=True)):
        merge.result()
        merge.close()
    assert len(list(answers.directory.iterdir())) == 4
    # Another version of the naming or the reading: nothing kept before is read.
    from patchforge.store import kept

    monkeypatch.setattr(kept, "FORMAT", kept.FORMAT + 1)
    assert diff.changed_blocks([(a, b)]) == asked
    merge = diff.FileMerge(a, b, a + b"tail\n", ("o", "b", "t"))
    merge.result()
    merge.close()
    assert len(list(answers.directory.iterdir())) == 6


def test_the_kept_merges_are_bounded_by_count_and_bytes(stack, upstream, monkeypatch):
    """`kept/contents/` keeps the answers last made or read, as many as KeptAnswers.AT_MOST
    and BYTES_AT_MOST allow; the others are removed when a command that kept one ends."""
    from patchforge.store.diff import KeptAnswers

    text = BASE.replace(FIX2_OLD, b"    return row * stride + 0  # differs upstream\n")
    conflict = upstream.commit({MAIN: text, "pkg/other.py": b"VALUE = 2\n"},
                               "rewrite row_offset")
    stack.add("fix.patch", the_fix())
    stack.add("other.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"))
    kept = cache_dir() / "kept" / "contents"
    assert stack.status(conflict)["other.patch"].state == "conflict"
    assert len(list(kept.iterdir())) == 2
    shutil.rmtree(kept)
    monkeypatch.setattr(KeptAnswers, "AT_MOST", 1)
    assert stack.status(conflict)["other.patch"].state == "conflict"
    assert len(list(kept.iterdir())) == 1
    shutil.rmtree(kept)
    monkeypatch.setattr(KeptAnswers, "AT_MOST", 512)
    monkeypatch.setattr(KeptAnswers, "BYTES_AT_MOST", 100)  # one merge's answer is larger
    assert stack.status(conflict)["fix.patch"].state == "conflict"
    sizes = [p.stat().st_size for p in kept.iterdir()]
    assert len(sizes) <= 1 and sum(sizes) <= 100, sizes


def test_a_plain_status_judges_no_hunk_of_a_patch_a_gone_file_makes_obsolete(stack, upstream,
                                                                            tmp_path):
    """A patch one of whose files upstream deleted is obsolete whatever its other hunks say,
    and the table shows one line of evidence for it: the gone file. A plain `status` leaves
    those hunks unjudged (here the fix landed in its other file, beside a line upstream
    changed: no 3-way merge of landed detection is started for it), and says what it said;
    `--json`, which shows every hunk, still judges each."""
    text = FIXED.replace(b"def scale_for(dtype):", b"def scale_for(dtype, kind=None):")
    target = upstream.commit({MAIN: text, "pkg/other.py": None}, "drop other.py, the fix")
    stack.add("fix.patch", the_fix() + file_diff("pkg/other.py", b"VALUE = 1\n",
                                                  b"VALUE = 2\n"))

    def status(*more: str) -> tuple[str, int]:
        trace = tmp_path / "trace.json"
        trace.unlink(missing_ok=True)
        proc = run_subprocess(stack.root, "status", "--against", f"up={target}", *more,
                              env={"GIT_TRACE2_EVENT": str(trace)})
        assert proc.returncode == 1, proc.stderr
        started = [json.loads(line) for line in trace.read_text().splitlines()]
        return proc.stdout.decode(), sum(" merge-file " in " ".join(e["argv"]) for e in started
                                if e["event"] == "start")

    table, merges = status()
    row = [line for line in table.splitlines() if "fix.patch" in line]
    assert len(row) == 1 and row[0].split()[1:] == [
        "obsolete", "pkg/other.py", "is", "gone", "upstream", "(deleted,", "not", "renamed)"], \
        table
    assert merges == 0
    document, merges = status("--json")
    [found] = json.loads(document)["patches"]
    assert found["state"] == "obsolete" and merges >= 1, (found, merges)
    assert found["evidence"][0] == "pkg/other.py is gone upstream (deleted, not renamed)"
    # (the gone file's hunk is listed too, landed nowhere: test_json_counts_the_hunks_...)
    assert [h["landed"] for f in found["files"] for h in f["hunks"]] == \
        ["certain", "certain", None], found


def test_a_merge_answers_alike_whatever_the_repository_it_runs_in_configures(tmp_path,
                                                                            monkeypatch):
    """A merge's answer is kept by its contents, labels and style alone: a command run inside
    a repository whose configuration sets `merge.conflictStyle` (which `git merge-file` reads
    there) still gets the default style's markers, never that repository's."""
    from patchforge.store.diff import merge_file

    repo = tmp_path / "repo"
    git(tmp_path, "init", "-q", str(repo))
    git(repo, "config", "merge.conflictStyle", "diff3")
    monkeypatch.chdir(repo)
    clean, merged = merge_file(b"a\nb\nc\n", b"a\nB\nc\n", b"a\nb2\nc\n")
    assert not clean
    assert b"|||||||" not in merged and b"<<<<<<< upstream\nB\n=======\nb2\n>>>>>>> patch\n" \
        in merged, merged
    assert b"||||||| base\nb\n" in merge_file(b"a\nb\nc\n", b"a\nB\nc\n", b"a\nb2\nc\n",
                                                 diff3=True)[1]


def test_landed_in_squash_merge_with_other_files_and_hunks(stack, upstream):
    def squash(text):
        text = fixed(text).replace(b'    if device.type != "cuda":\n',
                                   b'    if device.type not in ("cuda", "hip"):\n')
        return text + b"\n\ndef new_helper():\n    return None\n"

    landed, target = history_around(upstream, {MAIN: squash, "pkg/new_module.py": b"X = 1\n",
                                               "pkg/other.py": b"VALUE = 5\n"},
                                    "Squashed PR (#1234): many changes")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert status.landed_in == landed
    # The commit's change is not the patch's: no patch-id can match.
    assert "patch-id" not in evidence_text(status)


def test_landed_with_surrounding_edits_in_the_hunk_region(stack, upstream):
    def around(text):
        text = fixed(text)
        # Upstream rewrote the lines around both fixes in the same commit.
        text = text.replace(b"    total = 0\n    for i, n in enumerate(lengths):\n",
                            b"    total: int = 0\n    for i, n in enumerate(list(lengths)):\n")
        text = text.replace(b"    return indptr\n", b"    return indptr.contiguous()\n")
        return text.replace(b"def row_offset(row, stride, limit):\n",
                            b"def row_offset(row: torch.Tensor, stride: int, limit: int):\n"
                            b'    """Offset of a row, in elements."""\n')

    landed, target = history_around(upstream, {MAIN: around}, "fix with cleanups")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert status.landed_in == landed


def test_landed_reformatted(stack, upstream):
    text = BASE.replace(FIX1_OLD, b"    indptr[len(lengths):].fill_(total)    # padding lanes must"
                                  b" not read garbage\n")
    text = text.replace(FIX2_OLD, b"    return torch.clamp(\n        row.to(torch.int64) * stride,"
                                  b"\n        min=0,\n        max=limit,\n    )\n".replace(
                                      b"limit,\n", b"limit\n"))
    target = upstream.commit({MAIN: text}, "fix, formatted by ruff")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert "containment" in evidence_text(status)
    assert status.landed_in == target


def test_landed_moved_within_the_file(stack, upstream):
    # row_offset moved to the top of the file with the fix in it; fill_indptr fixed in place.
    fixed_text = fixed(BASE)
    function = (b"def row_offset(row, stride, limit):\n" + FIX2_NEW + b"\n\n")
    text = fixed_text.replace(function, b"")
    text = text.replace(b"def block_size(config):\n", function + b"def block_size(config):\n")
    assert text.count(FIX2_NEW) == 1 and FIX2_OLD not in text
    target = upstream.commit({MAIN: text}, "fix and reorder")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence


def test_landed_in_a_renamed_file(stack, upstream):
    new_path = "pkg/attention/helpers.py"
    landed, target = history_around(upstream, {}, "move attn.py", moves={MAIN: new_path})
    fixed_commit = upstream.commit({new_path: fixed(upstream.read(new_path))}, "the fix")
    stack.add("fix.patch", the_fix())
    status = stack.status(fixed_commit)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert status.files[0]["target_path"] == new_path
    assert f"renamed upstream to {new_path}" in evidence_text(status)
    assert status.landed_in == fixed_commit
    # Before the fix, the renamed file takes the patch: it applies (followed to the new path).
    before = stack.status(target)["fix.patch"]
    assert before.state in ("applies", "offset"), before.evidence
    assert before.files[0]["target_path"] == new_path


def test_partial_some_hunks_landed(stack, upstream):
    target = upstream.commit({MAIN: fixed(BASE, hunk2=False)}, "half of the fix")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "partial", status.evidence
    assert (status.hunks_landed, status.hunks_total) == (1, 2)
    hunks = status.files[0]["hunks"]
    assert hunks[0]["landed"] and not hunks[1]["landed"]
    assert status.landed_in == target
    assert status.attention


# -- negatives: similar but different code must not count as landed ------------------------------

def test_same_line_different_constant_is_not_landed(stack, upstream):
    text = BASE.replace(FIX2_OLD, FIX2_NEW.replace(b"min=0", b"min=1"))
    text = text.replace(FIX1_OLD, FIX1_NEW.replace(b"fill_(total)", b"fill_(total + 1)"))
    target = upstream.commit({MAIN: text}, "a different fix")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "conflict", status.evidence
    assert status.hunks_landed == 0


def test_added_code_elsewhere_but_old_code_at_the_site_is_not_landed(stack, upstream):
    # Upstream added the exact fixed lines in a new function, and left the old code in place.
    text = BASE + b"\n\ndef row_offset_wide(row, stride, limit):\n" + FIX2_NEW
    text = text.replace(b"def fill_indptr(indptr, lengths):\n",
                        b"def fill_indptr(indptr, lengths):\n    # TODO: padding\n")
    text += b"\n\ndef fill_all(indptr, lengths, total):\n" + FIX1_NEW
    target = upstream.commit({MAIN: text}, "wide helpers")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state not in ("upstreamed", "partial"), status.evidence
    assert status.hunks_landed == 0


def test_added_code_elsewhere_with_old_code_and_changed_context_is_not_landed(stack, upstream):
    # The hunk no longer applies (its context changed) and the added code is in the file, but
    # the old code is still where the patch changes it: not landed.
    text = BASE.replace(b"def row_offset(row, stride, limit):\n",
                        b"def row_offset(row, stride, limit, *, checked=False):\n"
                        b"    assert not checked\n")
    text = text.replace(b"def scale_for(dtype):\n", b"def scale_for(dtype):\n    # todo\n")
    text += b"\n\ndef row_offset_wide(row, stride, limit):\n" + FIX2_NEW
    target = upstream.commit({MAIN: text}, "wide helper")
    stack.add("fix.patch", file_diff(MAIN, BASE, fixed(BASE, hunk1=False)))
    status = stack.status(target)["fix.patch"]
    assert status.state not in ("upstreamed", "partial"), status.evidence
    assert status.hunks_landed == 0


def test_pure_addition_present_far_away_is_not_landed(stack, upstream):
    guard = b'    if limit <= 0:\n        raise ValueError("row_offset needs a positive limit")\n'
    ours = BASE.replace(b"def row_offset(row, stride, limit):\n",
                        b"def row_offset(row, stride, limit):\n" + guard)
    # Upstream has the same guard in another function, and changed row_offset's context.
    text = BASE.replace(b"def scale_for(dtype):\n", b"def scale_for(dtype, limit=1):\n" + guard)
    text = text.replace(b"def row_offset(row, stride, limit):\n",
                        b"def row_offset(row, stride, limit=None):\n")
    target = upstream.commit({MAIN: text}, "guard elsewhere")
    stack.add("guard.patch", file_diff(MAIN, BASE, ours))
    status = stack.status(target)["guard.patch"]
    assert status.state not in ("upstreamed", "partial"), status.evidence


# -- history evidence: what the target's files cannot prove ---------------------------------------

def test_superseded_landing_is_upstreamed_by_history(stack, upstream):
    """The fix landed, then upstream rewrote both fixed lines again: nothing of the patch is in
    the target's file, but the history made the change and nothing undid it."""
    landed, _ = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    later = upstream.read(MAIN).replace(FIX1_NEW, b"    indptr[len(lengths):] = total\n") \
        .replace(FIX2_NEW, b"    return (row * stride).clamp(0, limit)\n")
    target = upstream.commit({MAIN: later}, "rewrite both lines")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed" and status.decided_by == "history", status.evidence
    assert status.landed_in == landed
    assert f"history: commit {landed} makes this change" in evidence_text(status)


def test_reverted_landing_is_not_upstreamed_even_in_part(stack, upstream):
    """A landing whose revert kept one of its lines (a hand-edited `git revert`, as real
    reverts are): the patch is not upstreamed, though its patch-id matches the landing."""
    landed, _ = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    partly = upstream.read(MAIN).replace(FIX2_NEW, FIX2_OLD)
    upstream.commit({MAIN: partly},
                    f'Revert "the fix"\n\nThis reverts commit {landed}.\n\n* keep hunk 1')
    target = upstream.commit({"README.md": b"later\n"}, "later")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state != "upstreamed", status.evidence
    assert f"history: commit {upstream.head()}" not in evidence_text(status)


def test_landing_whose_added_line_upstream_moved_is_upstreamed(stack, upstream):
    """The fix adds an import and changes a line; a later lint commit moves the import: the
    import's hunk no longer reverse-applies (and would apply again where it was), but the
    history made the change and only moved a line it added."""
    with_import = fixed(BASE, hunk1=False).replace(b"import os\n", b"import os\nimport math\n")
    stack.add("fix.patch", file_diff(MAIN, BASE, with_import))
    upstream.commit({"README.md": b"# upstream\nunrelated\n"}, "docs")
    landed = upstream.commit({MAIN: with_import}, "the fix, verbatim")
    linted = with_import.replace(b"import os\nimport math\n", b"import os\n").replace(
        b"import torch\n", b"import torch\nimport math\n")
    target = upstream.commit({MAIN: linted}, "lint: sort imports")
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed" and status.decided_by == "history", status.evidence
    assert status.landed_in == landed


def test_landing_whose_guard_upstream_removed_is_superseded(stack, upstream):
    """The fix adds a guard and changes a line; a later commit removes the guard (a new design
    no longer needs it) and keeps the change: superseded, so upstreamed by history."""
    guard = b"    assert lengths is not None, 'lengths must be given'\n"
    with_guard = fixed(BASE, hunk1=False).replace(
        b"    total = 0\n", b"    total = 0\n" + guard)
    stack.add("fix.patch", file_diff(MAIN, BASE, with_guard))
    landed = upstream.commit({MAIN: with_guard}, "the fix, verbatim")
    target = upstream.commit({MAIN: with_guard.replace(guard, b"")}, "lengths are always given")
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed" and status.decided_by == "history", status.evidence
    assert status.landed_in == landed


def test_landing_whose_old_line_a_later_commit_puts_back_is_not_upstreamed(stack, upstream):
    """A later refactor (no revert message) puts one replaced line back as it was: the target
    has the old code again, so the fix is kept."""
    history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    refactor = upstream.read(MAIN).replace(FIX2_NEW, FIX2_OLD).replace(
        b"def scale_for(dtype):", b"def scale_for(dtype):  # refactored")
    target = upstream.commit({MAIN: refactor}, "refactor")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state != "upstreamed", status.evidence
    assert any("undoes this change" in line for line in status.evidence), status.evidence


def test_landed_rename_patch_later_edited_is_upstreamed_by_history(stack, upstream):
    """A patch that moves the file and fixes it, landed verbatim; upstream later rewrote one
    fixed line. The history (without rename detection: the old file deleted, the new one
    created) made the change, so the rename patch is upstreamed."""
    new_path = "pkg/attention/helpers.py"
    init = "pkg/attention/__init__.py"  # created empty: no lines, still part of the change
    stack.add("move.patch", make_file_diff(MAIN, new_path, BASE, FIXED)
              + file_diff(init, None, b""))
    landed = upstream.commit({new_path: FIXED, init: b""}, "move attn.py and fix it",
                             renames={MAIN: new_path})
    later = FIXED.replace(FIX2_NEW, b"    return (row * stride).clamp(0, limit)\n")
    target = upstream.commit({new_path: later}, "simpler clamp")
    status = stack.status(target)["move.patch"]
    assert status.state == "upstreamed" and status.decided_by == "history", status.evidence
    assert status.landed_in == landed


KERNEL = "hsa/kernel.co"


def kernel(n: int) -> bytes:
    """A compiled kernel's bytes (NULs: git and patchforge take it as binary)."""
    return bytes(range(256)) * 8 + b"\0build %d\0" % n


def test_landed_binary_kernel_later_rebuilt_is_upstreamed_by_history(tmp_path):
    """A fix that ships a rebuilt kernel with its code change, landed verbatim; upstream later
    rebuilt the kernel again (a third blob) and rewrote the fixed line. Judged by blob ids in
    the history: the landing wrote the patch's blob over the patch's base blob, and nothing
    put the old blob back. With the old kernel put back afterwards, it is not upstreamed."""
    upstream = Upstream(tmp_path / "upstream", {MAIN: BASE, KERNEL: kernel(1)})
    stack = Stack(tmp_path / "project", upstream)
    stack.add("fix.patch", file_diff(KERNEL, kernel(1), kernel(2)) + the_fix())
    landed = upstream.commit({KERNEL: kernel(2), MAIN: FIXED}, "the fix, with its kernel")
    later = FIXED.replace(FIX2_NEW, b"    return (row * stride).clamp(0, limit)\n")
    target = upstream.commit({KERNEL: kernel(3), MAIN: later}, "faster kernel, simpler clamp")
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed" and status.decided_by == "history", status.evidence
    assert status.landed_in == landed
    restored = upstream.commit({KERNEL: kernel(1)}, "go back to the old kernel")
    status = stack.status(restored)["fix.patch"]
    assert status.state != "upstreamed", status.evidence


def test_landed_in_does_not_bisect_across_a_revert(stack, upstream):
    """Landed, reverted, landed again: landed_in is the second landing, never the revert."""
    first, _ = history_around(upstream, {MAIN: fixed}, "the fix")
    upstream.commit({MAIN: upstream.read(MAIN).replace(FIX1_NEW, FIX1_OLD)
                     .replace(FIX2_NEW, FIX2_OLD)}, "Revert the fix")
    for n in range(3):
        upstream.commit({MAIN: upstream.read(MAIN) + b"# note %d\n" % n}, "notes")
    again = upstream.commit({MAIN: fixed(upstream.read(MAIN))}, "the fix, again")
    target = upstream.commit({"README.md": b"later\n"}, "later")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert status.landed_in == again


def test_landed_in_follows_ancestry_not_commit_dates(stack, upstream, monkeypatch):
    """Landed, reverted, landed again, with a skewed clock: the revert claims a date before
    the landing it reverts, and a merged side branch makes git's date-ordered walk list it
    first. The history is walked by ancestry, so the revert comes after the first landing and
    landed_in is the second landing (walked by date, it was the first)."""
    def at(when: int) -> None:
        stamp = f"{1_700_000_000 + when} +0000"
        monkeypatch.setenv("GIT_COMMITTER_DATE", stamp)
        monkeypatch.setenv("GIT_AUTHOR_DATE", stamp)

    at(1000)
    first = upstream.commit({MAIN: fixed(upstream.read(MAIN))}, "the fix")
    at(2000)
    fork = upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "other")
    git(upstream.path, "checkout", "-q", "-b", "side")
    at(3000)
    upstream.commit({"README.md": b"side\n"}, "side work")
    git(upstream.path, "checkout", "-q", "main")
    at(-5000)  # a clock far behind
    upstream.commit({MAIN: BASE}, f'Revert "the fix"\n\nThis reverts commit {first}.')
    at(4000)
    again = upstream.commit({MAIN: fixed(upstream.read(MAIN))}, "the fix, again")
    at(6000)
    git(upstream.path, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    target = upstream.head()
    assert fork in git(upstream.path, "rev-parse", f"{target}^2~1")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed", status.evidence
    assert status.landed_in == again, status.evidence


def test_status_at_the_pin_with_code_present_twice_applies(tmp_path):
    """At the pin a patch meets the file it was made from: a pre-image and post-image that
    both occur in the file (the same code twice) do not make it `unsure`."""
    twice = BASE + b"\n\ndef fill_indptr_padded(indptr, lengths, total):\n" + FIX1_NEW
    pinned = Stack(tmp_path / "pinned", Upstream(tmp_path / "dup", {MAIN: twice}))
    pinned.add("fix.patch", file_diff(MAIN, twice, twice.replace(FIX1_OLD, FIX1_NEW, 1)))
    status = pinned.status()["fix.patch"]
    assert status.state == "applies", status.evidence
    assert pinned.cli("status").returncode == 0


def test_a_file_the_base_never_had_is_not_gone_upstream(stack, upstream):
    """A patch whose path its base does not have (a -p0 diff: `pkg/attn.py` read at -p1 as
    `attn.py`) was "obsolete: attn.py is gone upstream (deleted, not renamed)" at the pin
    itself, where nothing can have gone: the user was told the fix was no longer needed.
    The evidence says the file was never there and the patch does not apply where it was
    made; against a target, the same."""
    stack.add("fix.patch", the_fix().replace(b"a/pkg/attn.py", b"a/attn.py")
              .replace(b"b/pkg/attn.py", b"b/attn.py"))
    for target in (None, upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "other")):
        status = stack.status(target)["fix.patch"]
        assert "gone upstream" not in evidence_text(status), status.evidence
        assert "attn.py is not in the base either" in evidence_text(status), status.evidence
        assert status.attention


def test_deleted_file_is_obsolete(stack, upstream):
    upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "other")
    target = upstream.commit({MAIN: None}, "remove attn.py")
    stack.add("fix.patch", the_fix())
    status = stack.status(target)["fix.patch"]
    assert status.state == "obsolete", status.evidence
    assert "gone upstream" in evidence_text(status)
    assert status.attention
    assert status.landed_in is None


# -- landed_in searches only the commits that touch the patch's files ------------------------------

def test_landed_in_visits_only_commits_touching_the_files(stack, upstream, monkeypatch):
    from patchforge import judge as status_ops

    for i in range(6):
        upstream.commit({"pkg/other.py": f"VALUE = {i}\n".encode()}, f"other {i}")
    touching = [upstream.commit({MAIN: upstream.read(MAIN) + f"# note {i}\n".encode()},
                                f"note {i}") for i in range(5)]
    landed = upstream.commit({MAIN: fixed(upstream.read(MAIN))}, "the fix")
    touching.append(landed)
    for i in range(6):
        upstream.commit({"pkg/other.py": f"VALUE = {i + 10}\n".encode()}, f"other {i + 10}")
    touching.append(upstream.commit({MAIN: upstream.read(MAIN) + b"# later\n"}, "later"))
    target = upstream.commit({"README.md": b"end\n"}, "end")
    stack.add("fix.patch", the_fix())

    visited: list[str] = []
    original = status_ops.SeriesJudge.__init__

    def recording(self, store, target_, **kw):
        visited.append(target_.commit)
        original(self, store, target_, **kw)

    monkeypatch.setattr(status_ops.SeriesJudge, "__init__", recording)
    status = stack.status(target)["fix.patch"]
    assert status.landed_in == landed
    probes = visited[1:]  # the first judge is the series walk itself
    assert probes and set(probes) <= set(touching)
    assert len(probes) <= 4  # binary search over 7 commits


def test_patch_id_evidence_for_a_verbatim_commit(stack, upstream):
    landed, target = history_around(upstream, {MAIN: fixed}, "the fix, verbatim")
    # A patch made against the state just before the landing commit has the commit's patch-id.
    before = git(upstream.path, "show", f"{landed}~1:{MAIN}").encode()
    stack.add("fix.patch", file_diff(MAIN, before, fixed(before)))
    status = stack.status(target)["fix.patch"]
    assert status.state == "upstreamed"
    assert f"patch-id matches upstream commit {landed}" in evidence_text(status)


# -- Forwarded pull requests and Drop-When ---------------------------------------------------------

def forge_client(server):
    from patchforge.net.forge import GitHubForge
    from patchforge.store.gitstore import cache_dir

    return GitHubForge.from_config(server.url, cache_dir())


PR_URL = "https://github.com/o/r/pull/7"


def test_forwarded_pr_merged_and_included_from_local_history(tmp_path, upstream, forge_server):
    merge = upstream.commit({MAIN: fixed(BASE)}, "Merge pull request #7")
    for i in range(10):
        upstream.commit({"pkg/other.py": f"VALUE = {i}\n".encode()}, f"later {i}")
    target = upstream.commit({"README.md": b"nightly\n"}, "nightly")
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    stack.add("fix.patch", the_fix(), extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\n")
    status = stack.status(target, forge=forge_client(forge_server))["fix.patch"]
    fw = status.forwarded
    assert fw["state"] == "closed" and fw["merged"] and fw["merge_commit"] == merge
    # As in seed 000: the target is 11 commits ahead of, and 0 behind, the merge commit.
    assert (fw["ahead_by"], fw["behind_by"], fw["included"]) == (11, 0, True)
    assert fw["source"] == "local history"
    assert not any("/compare/" in p for p in forge_server.paths())
    assert status.drop_when["true"] is True
    assert status.state == "upstreamed" and status.landed_in == merge
    assert any("forwarded PR merged" in e for e in status.evidence)
    # Through the CLI (configured api-url), as one JSON document valid against the schema.
    proc = stack.cli("status", "--against", f"up={target}", "--json")
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    assert validation_errors(document, "status") == []
    assert document["patches"][0]["forwarded"]["ahead_by"] == 11


def test_forwarded_pr_merged_but_not_in_the_target(tmp_path, upstream, forge_server):
    target = upstream.commit({"README.md": b"nightly\n"}, "nightly")
    merge = upstream.commit({MAIN: fixed(BASE)}, "Merge pull request #7 (after the nightly)")
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    stack.add("fix.patch", the_fix(), extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\n")
    # The store knows the merge commit only once something fetched it: pin a later revision.
    stack.status(merge)
    status = stack.status(target, forge=forge_client(forge_server))["fix.patch"]
    fw = status.forwarded
    assert fw["merged"] and fw["included"] is False
    assert (fw["ahead_by"], fw["behind_by"]) == (0, 1)
    assert status.drop_when["true"] is False
    assert status.state == "applies" and not status.attention


def test_forwarded_pr_included_via_forge_compare(tmp_path, upstream, forge_server):
    target = upstream.commit({MAIN: fixed(BASE)}, "the fix")
    merge = "c" * 40  # a merge commit the store has never seen
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    forge_server.comparisons[("o/r", merge, target)] = ("ahead", 11, 0)
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    stack.add("fix.patch", the_fix(), extra=f"Forwarded: {PR_URL}\n")
    status = stack.status(target, forge=forge_client(forge_server))["fix.patch"]
    fw = status.forwarded
    assert (fw["included"], fw["ahead_by"], fw["behind_by"]) == (True, 11, 0)
    assert fw["source"] == "forge compare"
    assert any(p.startswith(f"/repos/o/r/compare/{merge}...{target}")
               for p in forge_server.paths())


@pytest.mark.parametrize("answer", [("diverged", 3, False), ("behind", 0, "0"),
                                    ("diverged", 4, 0), ("ahead", -2, 0)])
def test_a_compare_answer_of_the_wrong_types_never_makes_a_merge_included(tmp_path, upstream,
                                                                         forge_server, answer):
    """The forge's compare counts whether the target includes a pull request's merge commit
    (behind_by 0). An answer with `false` or "0" for behind_by, counts that contradict the
    status ("diverged" with nothing behind), or a negative count: before, each read as
    included, so `Drop-When: merged PR` came out true and status asked for the fix to be
    dropped while the target does not have the merge. Now it is an unexpected answer: whether
    the target includes it is unknown, and Drop-When is not true."""
    target = upstream.commit({"README.md": b"nightly\n"}, "nightly")
    merge = "c" * 40  # a merge commit the store has never seen
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    forge_server.comparisons[("o/r", merge, target)] = answer
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    stack.add("fix.patch", the_fix(), extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\n")
    status = stack.status(target, forge=forge_client(forge_server))["fix.patch"]
    fw = status.forwarded
    assert fw["merged"] and fw["included"] is None, fw
    assert "unexpected compare answer" in fw["error"], fw
    assert status.drop_when["true"] is None
    assert status.state == "applies" and not status.attention


def test_forwarded_pr_open(tmp_path, upstream, forge_server):
    forge_server.add_pull("o/r", 7, state="open")
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    stack.add("fix.patch", the_fix(),
              extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\n")
    status = stack.status(forge=forge_client(forge_server))["fix.patch"]
    assert status.forwarded["state"] == "open" and status.forwarded["merged"] is False
    assert "included" not in status.forwarded
    assert status.drop_when["true"] is False
    assert status.state == "applies" and not status.attention


@pytest.mark.parametrize("condition,expected", [
    ("up>=0.34", True), ("up>=0.35", False), ("up<0.34", False), ("UP==0.34.0", True),
])
def test_drop_when_version_specifier(stack, upstream, condition, expected):
    upstream.commit({"README.md": b"release\n"}, "release")
    git(upstream.path, "tag", "v0.34.0")
    stack.add("fix.patch", the_fix(), extra=f"Drop-When: {condition}\n")
    status = stack.status("v0.34.0")["fix.patch"]
    assert status.drop_when["version"] == "0.34.0"
    assert status.drop_when["true"] is expected
    assert status.attention is expected  # the patch still applies: only Drop-When asks


def test_drop_when_on_another_package_is_not_evaluated(stack, upstream):
    upstream.commit({"README.md": b"release\n"}, "release")
    git(upstream.path, "tag", "v0.34.0")
    stack.add("fix.patch", the_fix(), extra="Drop-When: torch>=0.1\n")
    status = stack.status("v0.34.0")["fix.patch"]
    assert status.drop_when["true"] is None
    assert "not this upstream" in status.drop_when["reason"]


@pytest.mark.parametrize("condition", ['up>=0.1; python_version < "3"', "up[extra]>=0.1",
                                       "up @ https://example.org/up-0.34.0.whl", "up"])
def test_drop_when_with_a_marker_an_extra_a_url_or_no_version_is_never_judged_true(
        stack, upstream, condition):
    """`Drop-When: up>=0.1; python_version < "3"` had its marker dropped without a word (and a
    marker could only be the Python running patchforge's, never the deployment's), an extra or
    a URL was ignored, and `Drop-When: up` with no version was always true: each was "true:
    remove the fix" on a fix still needed. Each is never judged, said as not a requirement on
    the upstream's version (lint's error), and asks nothing of the fix."""
    upstream.commit({"README.md": b"release\n"}, "release")
    git(upstream.path, "tag", "v0.34.0")
    stack.add("fix.patch", the_fix(), extra=f"Drop-When: {condition}\n")
    status = stack.status("v0.34.0")["fix.patch"]
    assert status.drop_when["true"] is None, status.drop_when
    assert status.drop_when["reason"].startswith("not a requirement on the upstream's version")
    assert not status.attention


# -- the command line: exit codes and one JSON document ----------------------------------------

def test_json_document_and_exit_codes(stack, upstream):
    stack.add("fix.patch", the_fix())
    other = file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 1  # pinned by us, see ticket\n")
    stack.add("other.patch", other)
    clean = stack.cli("status", "--json")
    assert clean.returncode == 0, clean.stderr
    document = json.loads(clean.stdout)
    assert validation_errors(document, "status") == []
    assert document["needs_attention"] is False
    assert [p["state"] for p in document["patches"]] == ["applies", "applies"]

    target = upstream.commit({MAIN: fixed(BASE, hunk2=False)}, "half of the fix")
    proc = stack.cli("status", "--against", f"up={target}", "--json")
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    assert validation_errors(document, "status") == []
    first = document["patches"][0]
    assert first["state"] == "partial" and first["hunks"] == {"total": 2, "landed": 1}
    assert first["landed_in"] == target and first["needs_attention"] is True
    assert document["targets"]["up"]["commit"] == target
    assert document["targets"]["up"]["base"] == upstream.base
    table = stack.cli("status", "--against", f"up={target}")
    assert table.returncode == 1
    assert b"partial 1/2" in table.stdout


# -- the real example stack against vllm 0.33.0 ---------------------------------------------------

BACKPORTS = {"rocm-aiter-paged-mqa-logits-api-check.patch", "rocm-sparse-mla-indptr-fill-alias.patch",
             "rocm-disable-rccl-ras-thread.patch"}


def test_real_example_stack_against_vllm_0_33_0(tmp_path, shared_cache):
    # The pinned releases (what `patchforge fetch` brings) and the target: fetched once per
    # machine into the shared cache, so the status below can run offline.
    shared_example_releases()
    root = tmp_path / "stack"
    root.mkdir()
    for name in ("pyproject.toml", "upstream.lock", "vllm-entrypoint.sh"):
        if (REPO_ROOT / name).exists():
            shutil.copy2(REPO_ROOT / name, root / name)
    shutil.copytree(REPO_ROOT / "series", root / "series")
    proc = subprocess.run([sys.executable, "-m", "patchforge", "--offline", "--root", str(root),
                           "status", "--against", "vllm=0.33.0", "--json"], capture_output=True)
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    assert validation_errors(document, "status") == []
    vllm = {p["name"]: p for p in document["patches"] if p["upstream"] == "vllm"}
    upstreamed = {name for name, p in vllm.items() if p["state"] == "upstreamed"}
    assert upstreamed == BACKPORTS
    for name in BACKPORTS:
        assert vllm[name]["drop_when"]["true"] is True
    for name, p in vllm.items():
        if name not in BACKPORTS:
            assert p["state"] not in ("upstreamed", "partial"), (name, p["evidence"])
            assert p["hunks"]["landed"] == 0


@pytest.mark.parametrize("history_read", [True, False], ids=["history-read", "history-late"])
def test_squash_merged_series_is_upstreamed_whole(stack, upstream, monkeypatch, history_read):
    """Two patches of one branch that landed as one squash commit, where the second rewrote a
    line the first added: neither alone is the commit's change, their sum is. The same when
    the history's second thread has not answered yet at the first question (the judge then
    walks the old series the squash check needs while it waits)."""
    import patchforge.judge as judge

    walks = []
    real_walk = judge.old_series_walk
    monkeypatch.setattr(judge, "old_series_walk",
                        lambda *args: walks.append(1) or real_walk(*args))
    if not history_read:
        from patchforge.background import Background

        monkeypatch.setattr(Background, "done", lambda self: False)
    step1 = BASE.replace(FIX1_OLD, FIX1_NEW)
    step2 = step1.replace(FIX1_NEW, b"    indptr[len(lengths):].fill_(total)  # padding lanes "
                                    b"must read the total, never garbage\n") \
        .replace(FIX2_OLD, FIX2_NEW)
    stack.add("one.patch", file_diff(MAIN, BASE, step1))
    stack.add("two.patch", file_diff(MAIN, step1, step2))
    upstream.commit({"README.md": b"# upstream\nunrelated\n"}, "docs")
    squash = upstream.commit({MAIN: step2}, "The branch, squashed (#77)")
    later = upstream.read(MAIN).replace(b"padding lanes must read the total, never garbage",
                                        b"padding lanes hold the total")
    target = upstream.commit({MAIN: later}, "reword the comment")
    found = stack.status(target)
    for name in ("one.patch", "two.patch"):
        assert found[name].state == "upstreamed", (name, found[name].evidence)
    assert found["one.patch"].decided_by == "series history"
    assert found["one.patch"].landed_in == squash
    assert "cumulative change of patches 1-2" in evidence_text(found["one.patch"])
    assert len(walks) == 1  # walked once, early or late


KERNEL = "hsa/gfx950/mla_ps.co"


def kernel_build(seed: int) -> bytes:
    """A compiled kernel's bytes (a NUL byte: git and patchforge take it for binary)."""
    return b"\x7fELF\x00\x02" + bytes((seed * 37 + i * 11) % 256 for i in range(600))


def test_squash_merged_kernel_rebuilds_are_upstreamed_whole(stack, upstream):
    """A branch adds a kernel binary with the line that dispatches to it, then rebuilds the
    kernel twice, and lands as one squash commit: the target has only the last build, so the
    first patch's own change (the first build) is nowhere, and the rebuilds' pre-images are
    gone. The run's cumulative change (no kernel -> the last build, and the line) is the squash
    commit's: every patch of it is upstreamed, none stops the rebase as a conflict. AITER's
    kernel branches land so (`mla: add fp8 qh32 seqlen=1`, 7 patches, 5 of which stopped)."""
    step1 = BASE.replace(FIX1_OLD, FIX1_NEW)
    stack.add("add-kernel.patch", file_diff(MAIN, BASE, step1)
              + file_diff(KERNEL, None, kernel_build(1)))
    stack.add("rebuild.patch", file_diff(KERNEL, kernel_build(1), kernel_build(2)))
    stack.add("race-fix.patch", file_diff(KERNEL, kernel_build(2), kernel_build(3)))
    upstream.commit({"README.md": b"# upstream\nunrelated\n"}, "docs")
    squash = upstream.commit({MAIN: step1, KERNEL: kernel_build(3)},
                             "mla: add the kernel (#78)")
    found = stack.status(upstream.commit({"README.md": b"# upstream\n"}, "docs again"))
    for name in ("add-kernel.patch", "rebuild.patch", "race-fix.patch"):
        assert found[name].state == "upstreamed", (name, found[name].evidence)
        assert found[name].landed_in == squash, name
    assert found["add-kernel.patch"].decided_by == "series history"
    assert "cumulative change of patches 1-3" in evidence_text(found["add-kernel.patch"])


def test_kernel_rebuilt_otherwise_upstream_is_not_the_series_landing(stack, upstream):
    """The same branch where upstream squashed it with another build of the kernel (a third
    blob): the blob ids say the series' kernel is not the one upstream has, so no patch that
    builds it is upstreamed by the series' history; the rebase stops on them. (Holds on main
    too, where no run went through a binary patch: the guard of the rule above.)"""
    step1 = BASE.replace(FIX1_OLD, FIX1_NEW)
    stack.add("add-kernel.patch", file_diff(MAIN, BASE, step1)
              + file_diff(KERNEL, None, kernel_build(1)))
    stack.add("rebuild.patch", file_diff(KERNEL, kernel_build(1), kernel_build(2)))
    upstream.commit({MAIN: step1, KERNEL: kernel_build(9)}, "mla: add the kernel (#78)")
    found = stack.status(upstream.commit({"README.md": b"# upstream\n"}, "docs"))
    for name in ("add-kernel.patch", "rebuild.patch"):
        assert found[name].state != "upstreamed", (name, found[name].evidence)
        assert found[name].decided_by != "series history", name


def test_the_old_series_walked_file_by_file_is_the_whole_walk(tmp_path):
    """status walks the old series (the 3-way merges' base) only for the files a merge asks
    for, when it asks (SeriesJudge lazy_old): on random series of edits, creations,
    deletions, mode changes and file patches that no longer apply, each file and mode the
    judge asks for at random times, and every one after the last patch, is what the walk of
    every file at every patch gives; so after a rename, from which the whole series is
    walked."""
    import random

    from helpers.git import commit_files

    from patchforge.apply.diffparse import parse_diff
    from patchforge.judge import SeriesJudge, Target
    from patchforge.store.diff import FileChange, make_diff
    from patchforge.store.gitstore import UpstreamStore

    class Patch:
        def __init__(self, diff: bytes) -> None:
            self.file_patches = parse_diff(diff, source="<test>")
            self.source = "<test>"

    rng = random.Random(3)
    names = ["a.py", "b.py", "c.py", "d.py"]

    def text() -> bytes:
        return b"".join(b"line %d\n" % rng.randrange(30) for _ in range(rng.randrange(4, 12)))

    repo = tmp_path / "up"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    base = commit_files(repo, {name: text() for name in names[:3]}, "base")
    store = UpstreamStore(repo / ".git")
    try:
        renamed = 0
        for rounds in range(40):
            files = {name: store.read_blob(base, name) for name in names}
            modes = dict.fromkeys(names, "100644")
            series = []
            for k in range(rng.randrange(1, 9) if rounds % 3 != 2 else 6):
                changes = []
                for name in rng.sample(names, rng.randrange(1, 3)):
                    old, new = files[name], text() if rng.random() < 0.8 else None
                    if old is None and new is None:
                        continue
                    mode = "100755" if rng.random() < 0.2 and new is not None else modes[name]
                    stale = old is not None and new is not None and rng.random() < 0.2
                    changes.append(FileChange(name if old is not None else None,
                                              name if new is not None else None,
                                              text() if stale else old, new,
                                              modes[name], mode))
                    if not stale:
                        files[name], modes[name] = new, mode
                if rounds % 3 == 2 and k == 2 and files["a.py"] is not None \
                        and files["d.py"] is None:
                    changes = [FileChange("a.py", "d.py", files["a.py"], files["a.py"])]
                    files["d.py"], files["a.py"] = files["a.py"], None
                    renamed += 1
                if changes:
                    series.append((f"p{k}", Patch(make_diff(changes))))
            target = Target("up", base, base, base, None)
            whole = SeriesJudge(store, target)
            lazy = SeriesJudge(store, target, lazy_old=True)
            for name, patch in series:
                whole.pass_old([(name, patch)])
                lazy.pass_old([(name, patch)])
                for path in rng.sample(names, rng.randrange(0, 3)):
                    assert lazy.old_file(path) == whole.old_file(path), (rounds, name, path)
                    assert lazy.old_mode(path) == whole.old_mode(path), (rounds, name, path)
            for path in names:
                assert lazy.old_file(path) == whole.old_file(path), (rounds, path)
                assert lazy.old_mode(path) == whole.old_mode(path), (rounds, path)
        assert renamed >= 3  # (the seed gives 3)
    finally:
        store.close()


def _judgement_fields(judgement) -> tuple:
    v = judgement.verdict
    return (judgement.name, judgement.outcome, judgement.state, judgement.how,
            judgement.stop_kind, judgement.files, judgement.before, judgement.after,
            [(c.old_path, c.new_path, c.old, c.new) for c in judgement.changes],
            judgement.modes, judgement.unchanged, judgement.evidence, judgement.message,
            v.state, v.confidence, v.hunks_total, v.hunks_landed, v.evidence,
            v.decided_by, v.landed_commit,
            [(f.path, f.target_path, [(h.forward, h.landed, h.evidence) for h in f.hunks])
             for f in v.files])


def _judged_both_ways(store, base: str, tip: str, series: list, paths: list[str]):
    """The series judged as status walks it (history questions left for settle) and with
    each question asked at once: (the judgements asked at once, the settled ones, how many
    waited)."""
    from patchforge.judge import HistoryIndex, LazyHistory, SeriesJudge, Target

    target = Target("up", base, tip, tip, None)
    index = HistoryIndex(store, target, sorted(paths))

    def judge() -> SeriesJudge:
        history = LazyHistory(lambda: index, series, lambda wanted: store.read_blobs(base, wanted))
        return SeriesJudge(store, target, history=history, stop_files=False, lazy_old=True)

    try:
        at_once, later = judge(), judge()
        immediate = [at_once.judge(name, patch) for name, patch in series]
        provisional = [later.judge(name, patch, defer_history=True) for name, patch in series]
        waited = len(later._deferred)
        return immediate, [later.settle(j) for j in provisional], waited
    finally:
        index.close()


def test_a_patch_that_moves_unless_the_history_landed_it_is_asked_at_once(stack, upstream):
    """A fix whose import upstream moved after landing it: by content partial, and its 3-way
    merge is clean (it would move, adding the import again), but the history landed it. Its
    question cannot wait: the next patch on the file must meet the target's file, not the
    merge's."""
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.store.gitstore import UpstreamStore

    with_import = fixed(BASE, hunk1=False).replace(b"import os\n", b"import os\nimport math\n")
    base = upstream.head()
    upstream.commit({"README.md": b"# upstream\nunrelated\n"}, "docs")
    upstream.commit({MAIN: with_import}, "the fix, verbatim")
    linted = with_import.replace(b"import os\nimport math\n", b"import os\n").replace(
        b"import torch\n", b"import torch\nimport math\n")
    target = upstream.commit({MAIN: linted}, "lint: sort imports")
    later = with_import.replace(b"return 448.0", b"return 240.0")
    series = [("fix.patch", parse_patch_file(file_diff(MAIN, BASE, with_import), "fix.patch")),
              ("next.patch", parse_patch_file(file_diff(MAIN, with_import, later), "next.patch"))]
    store = UpstreamStore(upstream.path / ".git")
    try:
        immediate, settled, _ = _judged_both_ways(store, base, target, series, [MAIN])
    finally:
        store.close()
    assert immediate[0].outcome == "landed" and immediate[0].verdict.decided_by == "history"
    assert [_judgement_fields(j) for j in settled] == [_judgement_fields(j) for j in immediate]


def test_a_patch_that_moves_after_its_history_question_is_concluded_once(stack, upstream,
                                                                        monkeypatch):
    """A fix that applies only with fuzz (upstream edited the last context line of a hunk) moves,
    so its history question is asked at once, before the next patch. The history does not
    land it (it leaves the verdict's state and files, adding its word): the judgement made
    before the question stands with the history's word in it, and the patch is concluded
    once, not again (every step of it: the 3-way merge taken, the function check's diffs and
    walks of the carried file), with the same judgement as concluding again gives."""
    import patchforge.judge as judge
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.store.gitstore import UpstreamStore

    base = upstream.head()
    edited = BASE.replace(b"def scale_for(dtype):\n", b"def scale_for(dtype, device=None):\n")
    target = upstream.commit({MAIN: edited}, "scale_for takes the device")
    concluded = []
    real = judge.SeriesJudge._conclude

    def counting(self, name, *args, **kw):
        concluded.append(name)
        return real(self, name, *args, **kw)
    monkeypatch.setattr(judge.SeriesJudge, "_conclude", counting)
    stack.add("fix.patch", the_fix())
    found = stack.status(target)["fix.patch"]
    assert found.state == "fuzz", found.state
    assert concluded == ["fix.patch"], concluded
    # The judgement is the one concluded again with the history's word, field by field.
    monkeypatch.setattr(judge.SeriesJudge, "_conclude", real)
    series = [("fix.patch", parse_patch_file(the_fix(), "fix.patch"))]
    store = UpstreamStore(upstream.path / ".git")
    try:
        immediate, settled, waited = _judged_both_ways(store, base, target, series, [MAIN])
    finally:
        store.close()
    assert waited == 0 and immediate[0].outcome == "applies"
    assert [_judgement_fields(j) for j in settled] == [_judgement_fields(j) for j in immediate]


def test_a_history_question_left_for_later_gives_the_judgement_asked_at_once(tmp_path):
    """status judges a patch the content checks cannot decide without its history question
    when the judgement does not move the patch (SeriesJudge.judge(defer_history=True)), and
    asks it after the walk (settle): the history only makes such a verdict upstreamed or
    leaves its state and files, so the next patches meet the same files and the settled
    judgement is the one asked at once. On random series over random histories that land
    patches verbatim, rewrite what they added, revert and edit around them, every settled
    judgement is the immediate one, field by field."""
    import random

    from helpers.git import commit_files

    from patchforge.apply.hunks import apply_file_patch
    from patchforge.formats.patchfile import parse_patch_file
    from patchforge.store.diff import FileChange, make_diff
    from patchforge.store.gitstore import UpstreamStore

    rng = random.Random(7)
    names = ["a.py", "b.py"]
    words = [b"alpha", b"beta", b"gamma", b"delta", b"omega", b"sigma", b"kappa"]

    def line() -> bytes:
        return b"    value = compute_%s(%d, %s)\n" % (rng.choice(words), rng.randrange(50),
                                                      rng.choice(words))

    def edit(text: bytes) -> bytes:
        lines = text.splitlines(keepends=True)
        for _ in range(rng.randrange(1, 3)):
            at = rng.randrange(len(lines))
            if rng.random() < 0.7:
                lines[at] = line()
            else:
                lines.insert(at, line())
        return b"".join(lines)

    deferred = asked = landed = undone = 0
    for rounds in range(16):
        repo = tmp_path / f"up{rounds}"
        repo.mkdir()
        subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
        start = {name: b"".join(line() for _ in range(24)) for name in names}
        base = commit_files(repo, start, "base")
        # The series, each patch on the old series' files.
        old = dict(start)
        series = []
        for k in range(rng.randrange(3, 7)):
            changes = []
            for name in rng.sample(names, rng.randrange(1, 3)):
                new = edit(old[name])
                changes.append(FileChange(name, name, old[name], new))
                old[name] = new
            series.append((f"p{k}.patch", parse_patch_file(make_diff(changes), f"p{k}.patch")))
        # The history: some patches land verbatim (where they apply), then what they added is
        # rewritten, reverted or edited around; unrelated edits between.
        current = dict(start)
        for name_k, patch in series:
            if rng.random() < 0.5:
                moved = {}
                for fp in patch.file_patches:
                    done = apply_file_patch(current[fp.path], fp, max_fuzz=0)
                    if done.ok:
                        moved[fp.path] = done.content
                if moved:
                    before = dict(current)
                    current.update(moved)
                    made = commit_files(repo, moved, f"land {name_k}")
                    if rng.random() < 0.3:  # reverted, then edited where it was
                        current.update({name: before[name] for name in moved})
                        commit_files(repo, {name: before[name] for name in moved},
                                     f'Revert "land {name_k}"\n\nThis reverts commit {made}.')
                        name = rng.choice(sorted(moved))
                        current[name] = edit(current[name])
                        commit_files(repo, {name: current[name]}, "edit after the revert")
                    elif rng.random() < 0.7:  # a line it added, rewritten later
                        name = rng.choice(sorted(moved))
                        lines = current[name].splitlines(keepends=True)
                        added = [i for i, text in enumerate(lines)
                                 if text not in before[name].splitlines(keepends=True)]
                        if added:
                            lines[rng.choice(added)] = line()
                            current[name] = b"".join(lines)
                            commit_files(repo, {name: current[name]}, "rewrite")
            if rng.random() < 0.6:
                name = rng.choice(names)
                current[name] = edit(current[name])
                commit_files(repo, {name: current[name]}, "edit")
        tip = commit_files(repo, {"README": b"end\n"}, "end")
        store = UpstreamStore(repo / ".git")
        try:
            immediate, settled, waited = _judged_both_ways(store, base, tip, series, names)
        finally:
            store.close()
        deferred += waited
        for now, then in zip(immediate, settled):
            assert _judgement_fields(then) == _judgement_fields(now), (rounds, now.name)
            asked += now.verdict.decided_by in ("history", "series history")
            landed += now.outcome == "landed"
            undone += now.outcome != "landed" and any(
                line.startswith("history:") for line in now.verdict.evidence)
    # The seed gives series where questions waited, and landings the history decided.
    assert deferred >= 10 and asked >= 2 and landed >= 3 and undone >= 1, \
        (deferred, asked, landed, undone)


def test_a_pull_request_of_another_forge_is_never_asked_of_this_one(tmp_path, upstream,
                                                                   forge_server):
    """The forge is asked about a Forwarded pull request by its owner/name and number only: one
    on another host (a github.com PR, with the stack's forge a GitHub Enterprise) was answered
    about this forge's o/r#7, another change, which merged: status called the fix landed and
    its Drop-When true. It is reported as not asked, and nothing is asked about it."""
    merge = upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "Merge pull request #7")
    target = upstream.commit({"README.md": b"nightly\n"}, "nightly")
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    api_url = f"{forge_server.url}/api/v3"  # a GitHub Enterprise: its web host is this server's
    stack = Stack(tmp_path / "project", upstream, api_url=api_url)
    here = f"https://{forge_server.url.split('://', 1)[1]}/o/r/pull/7"
    stack.add("elsewhere.patch", the_fix(),
              extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\n")
    stack.add("here.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"),
              extra=f"Forwarded: {here}\n")
    proc = stack.cli("status", "--against", f"up={target}", "--json")
    patches = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    elsewhere = patches["elsewhere.patch"]
    assert "merged" not in elsewhere["forwarded"], elsewhere["forwarded"]
    assert "github.com is not the host of the configured forge" in elsewhere["forwarded"]["error"]
    assert elsewhere["drop_when"]["true"] is None
    assert patches["here.patch"]["forwarded"]["merged"] is True
    assert [p for p in forge_server.paths() if "/pulls/" in p] == ["/api/v3/repos/o/r/pulls/7"]


@pytest.mark.parametrize("web_host", [None, "ghe.example.com"])
def test_a_proxy_forge_is_asked_only_about_the_pull_requests_of_its_web_host(
        tmp_path, upstream, forge_server, web_host):
    """A forge.api-url that is neither api.github.com nor https://H/api/v3 (a proxy in front of
    github.com, here a real server on 127.0.0.1) was asked about every pull request, of any
    host: a GitHub Enterprise fix's o/r#7 was answered with github.com's o/r#7, which merged,
    and status called that fix landed and its Drop-When true. Such an API answers for
    github.com, or for the host `forge.web-host` names; the others are reported as not asked,
    with the key that names the host."""
    merge = upstream.commit({"pkg/other.py": b"VALUE = 2\n"}, "Merge pull request #7")
    target = upstream.commit({"README.md": b"nightly\n"}, "nightly")
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    if web_host:
        config = stack.root / "patchforge.toml"
        config.write_text(config.read_text().replace(
            "[forge]\n", f'[forge]\nweb-host = "{web_host}"\n'))
    enterprise = "https://ghe.example.com/o/r/pull/7"
    stack.add("enterprise.patch", the_fix(),
              extra=f"Forwarded: {enterprise}\nDrop-When: merged {enterprise}\n")
    stack.add("public.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"),
              extra=f"Forwarded: {PR_URL}\n")
    proc = stack.cli("status", "--against", f"up={target}", "--json")
    patches = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    asked, other = ("enterprise.patch", "public.patch") if web_host else \
        ("public.patch", "enterprise.patch")
    assert patches[asked]["forwarded"]["merged"] is True, patches[asked]["forwarded"]
    assert "merged" not in patches[other]["forwarded"], patches[other]["forwarded"]
    assert "is not the host of the configured forge" in patches[other]["forwarded"]["error"]
    assert "forge.web-host" in patches[other]["forwarded"]["error"]
    if not web_host:
        assert patches["enterprise.patch"]["drop_when"]["true"] is None
    assert [p for p in forge_server.paths() if "/pulls/" in p] == ["/repos/o/r/pulls/7"]


def test_a_fix_sent_to_a_mail_archive_is_no_pull_request_and_a_pulls_url_is_one(
        tmp_path, upstream, forge_server):
    """`Forwarded:` is where a fix was sent (DEP-3): a mail archive's `msg.html#m1` was taken
    for a pull request (its `#`), and every status and lint said it "is not a pull request URL".
    A pull request's address pasted with the API's `/pulls/7` was taken for no pull request at
    all: status never followed it and nobody said so. Now the first is left alone and the
    second is reported."""
    stack = Stack(tmp_path / "project", upstream, api_url=forge_server.url)
    mail = "https://lists.example.org/archives/msg123.html#m1"
    stack.add("mailed.patch", the_fix(), extra=f"Forwarded: {mail}\n")
    stack.add("pulls.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"),
              extra="Forwarded: https://github.com/o/r/pulls/7\n")
    proc = stack.cli("status", "--json")
    patches = {p["name"]: p for p in json.loads(proc.stdout)["patches"]}
    assert patches["mailed.patch"]["forwarded"] is None, patches["mailed.patch"]
    assert "not a pull request URL" in patches["pulls.patch"]["forwarded"]["error"]
    assert "expected https://github.com/OWNER/REPO/pull/NUMBER" in \
        patches["pulls.patch"]["forwarded"]["error"]
    lint = json.loads(stack.cli("lint", "--json").stdout)
    forwarded = [(f["patch"], f["message"]) for f in lint["findings"] if f["check"] == "forwarded"]
    assert [patch for patch, _ in forwarded] == ["up/pulls.patch"], forwarded
    assert not [p for p in forge_server.paths() if "/pulls/" in p]


def test_a_merged_pull_request_is_never_called_missing_from_a_target_without_history(
        tmp_path, upstream, forge_server):
    """A `dir` (or wheel) upstream is imported as a commit without history. When the shared
    cache also holds the upstream's git history (another stack, or `pr` with `git-url`), the
    merge commit of a fix's pull request was compared with that import: unrelated histories,
    so "the target is 0 commits ahead of, and N behind, the merge commit" and Drop-When
    `merged` false, for a directory copied from the very commit that merged it. Whether such
    a target includes the merge commit is unknown, and said so."""
    merge = upstream.commit({MAIN: FIXED}, "Merge pull request #7")
    forge_server.add_pull("o/r", 7, state="closed", merged=True, merge_commit_sha=merge)
    copy = tmp_path / "site"  # the upstream as installed at the merge commit
    git(tmp_path, "clone", "-q", str(upstream.path), str(copy))
    shutil.rmtree(copy / ".git")
    root = make_project(tmp_path / "project", api_url=forge_server.url)
    run_subprocess(root, "upstream", "add", "up", "--dir", str(copy), "--at", "merged",
                   expect=0)
    # The same cache holds the upstream's history: a second stack follows it with git.
    other = make_project(tmp_path / "other")
    add_git_upstream(other, "up", upstream.path, merge, install_root=None)
    series = root / "series" / "up"
    series.mkdir(parents=True)
    (series / "fix.patch").write_bytes(dep3_patch(
        file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 3\n"),
        extra=f"Forwarded: {PR_URL}\nDrop-When: merged {PR_URL}\nUpstream: up\n"))
    (series / "series").write_bytes(b"fix.patch\n")
    proc = run_subprocess(root, "status", "--json")
    fix = json.loads(proc.stdout)["patches"][0]
    assert fix["forwarded"]["merged"] is True, fix["forwarded"]
    assert fix["forwarded"]["included"] is None, fix["forwarded"]
    assert "behind_by" not in fix["forwarded"]
    assert fix["drop_when"]["true"] is None, fix["drop_when"]


def test_a_creation_onto_a_directory_of_the_upstream_never_applies(stack):
    """A patch creating `pkg` where the upstream has a directory (imported from a quilt stack,
    say) applied in memory: status said "all patches apply" (exit 0) while `git apply` of the
    series and `overlays` refused it. At the pin it is a conflict, with the reason."""
    stack.add("fix.patch", the_fix())
    stack.add("makes-pkg.patch", b"diff --git a/pkg b/pkg\nnew file mode 100644\n"
                                 b"--- /dev/null\n+++ b/pkg\n@@ -0,0 +1 @@\n+hi\n")
    statuses = stack.status()
    assert statuses["fix.patch"].state == "applies"
    found = statuses["makes-pkg.patch"]
    assert found.state == "conflict" and found.attention
    assert any("creates pkg, which is a directory in the upstream" in e for e in found.evidence)
    proc = stack.cli("status")
    assert proc.returncode == 1 and b"all 2 patches apply" not in proc.stdout


def test_a_drop_when_status_cannot_evaluate_is_said_in_the_table(tmp_path):
    """`Drop-When: other>=3` in a patch of `up` (another upstream's name, a condition no
    version of this one decides): the table said `applies` and nothing more, so the condition
    the fix should be dropped on was never looked at; only `--json` gave its reason. The row
    says it cannot be evaluated, and why (lint reports it as an error)."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": b"x = 1\ny = 2\n"})
    stack.add_fix("fa", "pkg/a.py", b"x = 1\ny = 2\n", b"x = 3\ny = 2\n",
                  fields="Drop-When: other>=3\n")
    _, out, _ = stack.cli("status")
    assert "Drop-When other>=3 cannot be evaluated: other is not this upstream" in out, out


def _dir_upstream_with_fix(tmp_path, original: bytes, old: bytes, new: bytes):
    """A `dir` upstream `site` (tmp_path/site, pkg/mod.py `original`) pinned at label `one`,
    and a fix of pkg/mod.py replacing `old` by `new`: (the directory, the project's root)."""
    tree = tmp_path / "site"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "mod.py").write_bytes(original)
    root = make_project(tmp_path / "project")
    run_subprocess(root, "upstream", "add", "site", "--dir", str(tree), "--at", "one",
                   expect=0)
    series = root / "series" / "site"
    series.mkdir(parents=True)
    (series / "fix.patch").write_bytes(dep3_patch(
        file_diff("pkg/mod.py", original, original.replace(old, new)),
        extra="Upstream: site\n"))
    (series / "series").write_bytes(b"fix.patch\n")
    return tree, root


def test_the_pinned_label_of_a_directory_never_names_its_new_files(tmp_path):
    """A `dir` upstream pinned at label `one`; the directory then changes (the next image's
    site-packages). `status --against site=one`, the pinned label, imported the directory as
    it is now under that name and answered about the new files ("target one <new commit>",
    the fix "upstreamed"), while the lock's `one` is the old commit: a label naming two
    versions. Refused, naming both commits and the way on (a new label), which works; the
    label still names the pin."""
    original = b"a = 1\nb = 2\nc = 3\n"
    tree, root = _dir_upstream_with_fix(tmp_path, original, b"b = 2", b"b = 20")
    pinned = json.loads((root / "upstream.lock").read_text())["upstreams"]["site"]["commit"]
    (tree / "pkg" / "mod.py").write_bytes(original.replace(b"b = 2", b"b = 20"))
    proc = run_subprocess(root, "status", "--against", "site=one", expect=2)
    err = proc.stderr.decode()
    assert f"one is the label upstream.lock pins ({pinned[:12]})" in err, err
    assert "`site=NEW-LABEL`" in err
    document = json.loads(run_subprocess(root, "status", "--against", "site=two", "--json",
                                         expect=1).stdout)
    assert document["patches"][0]["state"] == "upstreamed"
    run_subprocess(root, "status", expect=0)


def test_one_projects_label_never_blocks_anothers_that_starts_it(tmp_path):
    """Two projects sharing the cache, each with a `dir` upstream `d`: the first pinned at
    label `2026/12`, the second at `2026`. Labels are ref paths, and the shared
    refs/patchforge/imports/d/2026/12 made git refuse the second's import ("cannot lock ref"),
    leaving a fast-import crash report in the store: the second project could not pin its
    label for another's. It pins (the shared ref is only a hint for reuse); within one project
    the two labels do clash, which is said naming both, exit 2, nothing written."""
    import os

    from helpers.snapshot import snapshot

    site = tmp_path / "site"
    site.mkdir()
    (site / "m.py").write_bytes(b"a = 1\n")
    first, second = make_project(tmp_path / "first"), make_project(tmp_path / "second")
    run_subprocess(first, "upstream", "add", "d", "--dir", str(site), "--at", "2026/12",
                   "--install-root", "/opt/site", expect=0)
    (site / "m.py").write_bytes(b"a = 2\n")
    proc = run_subprocess(second, "upstream", "add", "d", "--dir", str(site), "--at", "2026",
                          "--install-root", "/opt/site", expect=0)
    pin = json.loads((second / "upstream.lock").read_text())["upstreams"]["d"]
    assert pin["label"] == "2026" and pin["commit"] in proc.stdout.decode()
    store = Path(os.environ["PATCHFORGE_CACHE"]) / "store.git"
    assert not list(store.glob("fast_import_crash_*"))
    run_subprocess(second, "status", expect=0)

    before = snapshot(first)
    proc = run_subprocess(first, "status", "--against", "d=2026", expect=2)
    err = proc.stderr.decode()
    assert "label '2026' clashes with its label '2026/12' in this project" in err, err
    assert snapshot(first) == before
    assert not list(store.glob("fast_import_crash_*"))
    refs = git(store, "for-each-ref", "--format=%(refname)", "refs/patchforge/")
    assert "refs/patchforge/importing" not in refs.split(), refs


def test_a_merge_conflict_on_a_directory_upstream_says_what_it_conflicts_on(tmp_path):
    """`status --against` a new version of a `dir` upstream that changed the line beside a
    fix's: the hunk applies only with fuzz and git's 3-way merge conflicts, and the table's
    evidence cell was empty (no hunk fails, and a directory has no commit to name): the row
    says the merge conflicts in the file, and why (in `--json` and `--format github` too)."""
    original = b"a = 1\nb = 2\nc = 3\nd = 4\ne = 5\n"
    tree, root = _dir_upstream_with_fix(tmp_path, original, b"c = 3", b"c = 300")
    run_subprocess(root, "status", expect=0)
    (tree / "pkg" / "mod.py").write_bytes(original.replace(b"b = 2", b"b = 20"))
    said = ("the 3-way merge conflicts in pkg/mod.py: the target changed lines beside the "
            "patch's (hunk 1 of 1 applies only with fuzz)")
    proc = run_subprocess(root, "status", "--against", "site=two", expect=1)
    row = [line for line in proc.stdout.decode().splitlines() if "site/fix.patch" in line]
    assert row and row[0].split()[:2] == ["site/fix.patch", "conflict"], proc.stdout
    assert row[0].endswith(said), row
    document = json.loads(run_subprocess(root, "status", "--against", "site=two", "--json",
                                         expect=1).stdout)
    assert document["patches"][0]["evidence"] == [said]
    assert validation_errors(document, "status") == []
    proc = run_subprocess(root, "status", "--against", "site=two", "--format", "github",
                          expect=1, env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")})
    assert f"conflict: {said}" in proc.stdout.decode()
    assert f"| conflict (needs attention) | {said[:100]}" in \
        (tmp_path / "summary.md").read_text()


def test_counts_of_one_read_as_one_and_of_many_as_many(tmp_path):
    """A one-patch series: `status` said "all 1 patches apply and are still needed", and
    elsewhere "1 patch(es) need attention", "(1 file(s))", "1 error(s)". Each count of one
    now reads as one ("1 patch applies and is still needed", "1 patch needs attention"), and
    of two as two."""
    from helpers.project import OneUpstreamStack

    old, new = b"def f():\n    return 1\n", b"def f():\n    return 2\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": old, "pkg/b.py": old})
    stack.add_fix("fix-a", "pkg/a.py", old, new)
    stack.cli("overlays")
    _, out, _ = stack.cli("status")
    assert "1 patch applies and is still needed" in out and "all 1 patches" not in out, out
    _, out, _ = stack.cli("overlays", "--check")
    assert "overlays are up to date (1 file)" in out, out
    _, out, _ = stack.cli("export", "--mbox", str(tmp_path / "series.mbox"))
    assert "wrote 1 message to" in out, out
    stack.commit({"pkg/a.py": b"def f():\n    return 3\n"}, "upstream changes f", tag="v2")
    _, out, _ = stack.cli("status", "--against", "up=v2", expect=1)
    assert "1 patch needs attention" in out and "patch(es)" not in out, out
    page = tmp_path / "status.html"
    stack.cli("status", "--against", "up=v2", "--html", str(page), expect=1)
    assert "1 of 1 patch needs attention" in page.read_text(), page.read_text()[:400]
    stack.add_fix("fix-b", "pkg/b.py", old, new)
    stack.cli("overlays")
    _, out, _ = stack.cli("status")
    assert "all 2 patches apply and are still needed" in out, out
    _, out, _ = stack.cli("status", "--against", "up=v2", expect=1)
    assert "1 patch needs attention" in out, out


def test_json_counts_the_hunks_of_a_file_gone_upstream(stack, upstream):
    """`status --json` of a patch whose file upstream deleted said `hunks: {total: 0}` and
    listed the file with no hunk: a consumer counting the patch's hunks (`partial k/n`, a
    dashboard) read a two-hunk fix as having none. Every hunk of the patch is counted, and
    each of the gone file's is listed as not applying (`failed`), landed nowhere."""
    target = upstream.commit({MAIN: None, "README.md": b"# moved on\n"}, "remove attn.py")
    stack.add("fix.patch", the_fix())
    stack.add("both.patch", file_diff("pkg/other.py", b"VALUE = 1\n", b"VALUE = 2\n")
              + file_diff("README.md", b"# upstream\n", b"# upstream, fixed\n"))
    proc = stack.cli("status", "--against", f"up={target}", "--json")
    assert proc.returncode == 1, proc.stderr
    document = json.loads(proc.stdout)
    assert validation_errors(document, "status") == []
    found = {p["name"]: p for p in document["patches"]}
    gone = found["fix.patch"]
    assert gone["state"] == "obsolete", gone
    assert gone["hunks"] == {"total": 2, "landed": 0}, gone
    [listed] = gone["files"]
    assert listed["path"] == MAIN and listed["target_path"] is None
    assert listed["hunks"] == [{"index": 1, "forward": "failed", "landed": None},
                               {"index": 2, "forward": "failed", "landed": None}], listed
    for patch in document["patches"]:  # the files' hunks add up to the patch's count
        assert sum(len(f["hunks"]) for f in patch["files"]) == patch["hunks"]["total"], patch


def test_the_table_says_a_patch_follows_a_file_upstream_renamed(stack, upstream):
    """A patch whose file upstream renamed applies there, followed to the new name: `rebase`
    says "applied exactly; follows A -> B", `--json` has the rename in the evidence, but the
    table's row said only "applies", as if nothing had moved, and the overlay, the mount and
    the patch's paths all change with the move. The row names the rename."""
    new_path = "pkg/attention/helpers.py"
    moved = upstream.commit({}, "move attn.py", renames={MAIN: new_path})
    stack.add("fix.patch", the_fix())
    proc = stack.cli("status", "--against", f"up={moved}")
    assert proc.returncode == 0, proc.stderr
    [row] = [line for line in proc.stdout.decode().splitlines() if "fix.patch" in line]
    assert row.split(None, 2)[1:] == ["applies", f"{MAIN} was renamed upstream to {new_path}"], \
        row
