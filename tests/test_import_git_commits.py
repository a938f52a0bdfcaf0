"""`import git` and `import mbox` of commits as a user's own repository has them: a root commit,
a commit a patch cannot carry (a submodule, a symlink turned into a file), a commit message
whose body begins with a word that is also a patch header field. Real repositories, the CLI."""
from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.git import git
from helpers.project import UPSTREAM_FILES, git_project
from helpers.snapshot import tree_bytes


@pytest.fixture
def project(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    root, _ = git_project(tmp_path)
    return root


def new_repo(path: Path) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    return path


def fork(tmp_path: Path) -> Path:
    clone = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(clone))
    return clone


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)
    return git(repo, "rev-parse", "HEAD").strip()


def header(root: Path, name: str) -> tuple[dict[str, str], str]:
    shown = json.loads(ok(root, "show", name, "--json").out)
    return {f["name"]: f["value"] for f in shown["header"]}, shown["description"]


def test_a_root_commit_is_imported_as_the_files_it_adds(project, tmp_path):
    """A fixes repository whose first commit adds a tuning table: the patch deleted the file
    (the root commit's diff reversed), `status` called it upstreamed and a rebase dropped it."""
    root = project
    fixes = new_repo(tmp_path / "fixes")
    (fixes / "configs").mkdir()
    (fixes / "configs" / "tune.json").write_bytes(b'{"block": 64}\n')
    commit_all(fixes, "Add MI300X tuning table")
    ok(root, "import", "git", "main", "--repo", str(fixes))
    patch = (root / "series/up/add-mi300x-tuning-table.patch").read_bytes()
    assert b"new file mode 100644" in patch and b'+{"block": 64}' in patch
    assert b"deleted file" not in patch
    status = ok(root, "status")
    assert "upstreamed" not in status.out and "applies" in status.out
    ok(root, "overlays")
    assert (root / "overlays/up/configs/tune.json").read_bytes() == b'{"block": 64}\n'


def test_a_root_commit_holding_the_upstreams_files_is_refused_naming_it(project, tmp_path):
    """A fixes repository started from a copy of the upstream's tree: its root commit's patch
    deleted every upstream file. Refused, naming the commit and the range that leaves it out;
    that range imports the fix."""
    root = project
    fixes = new_repo(tmp_path / "fixes")
    for rel, data in UPSTREAM_FILES.items():
        (fixes / rel).parent.mkdir(parents=True, exist_ok=True)
        (fixes / rel).write_bytes(data)
    first = commit_all(fixes, "Import the upstream tree")
    (fixes / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(fixes, "Fix line three")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "main", "--repo", str(fixes))
    assert run.rc == 2, run.err
    assert f"commit {first[:12]} (Import the upstream tree) is a root commit" in run.err
    assert "a.py" in run.err and str(fixes) in run.err
    assert f"`{first[:12]}..main`" in run.err
    assert tree_bytes(root / "series") == before
    ok(root, "import", "git", f"{first[:12]}..main", "--repo", str(fixes))
    patch = (root / "series/up/fix-line-three.patch").read_bytes()
    assert b"-line3\n+LINE3\n" in patch and b"deleted file" not in patch


def test_a_submodule_commit_is_refused_naming_the_commit_and_path(project, tmp_path):
    """`error: unsupported file mode 160000` was all: no commit, no path, no repository."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(clone, "Fix line three")
    git(clone, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(tmp_path / "up-upstream"), "third_party/kernels")
    vendored = commit_all(clone, "Vendor kernels")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert run.rc == 2
    assert (f"origin/main..main in {clone}: commit {vendored[:12]} (Vendor kernels) adds "
            "submodule third_party/kernels") in run.err
    assert "leave that commit out of the range" in run.err
    assert "160000" not in run.err
    assert tree_bytes(root / "series") == before


def test_import_git_runs_no_command_the_repositorys_config_names(project, tmp_path):
    """A repository handed over with its `.git/config` (a tarball, a shared disk) whose
    `core.fsmonitor` names a command: `import git` ran it (git reads the index, and with it
    that hook, to read a commit's change). The commits are imported and nothing is run."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(clone, "Fix line three")
    marker = tmp_path / "fsmonitor-ran"
    git(clone, "config", "core.fsmonitor", f"touch {marker}; false")
    ok(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert not marker.exists()
    assert b"+LINE3" in (root / "series/up/fix-line-three.patch").read_bytes()



def _partial_clone(clone: Path, tmp_path: Path, remote: str) -> Path:
    """Make `clone` a partial clone whose lazy fetch runs a command its configuration names
    (`core.sshCommand` for an ssh remote, `uploadpack` for a file one); the marker that
    command would touch."""
    marker = tmp_path / "command-ran"
    for key, value in [("core.repositoryformatversion", "1"),
                       ("extensions.partialClone", "origin"),
                       ("remote.origin.promisor", "true"),
                       ("remote.origin.partialclonefilter", "blob:none")]:
        git(clone, "config", key, value)
    if remote == "ssh":
        git(clone, "config", "remote.origin.url", "ssh://git@example.invalid/x.git")
        git(clone, "config", "core.sshCommand", f"touch {marker}; false")
        git(clone, "config", "protocol.ssh.allow", "always")
    else:
        git(clone, "config", "remote.origin.url", f"file://{tmp_path / 'up-upstream'}")
        git(clone, "config", "remote.origin.uploadpack", f"touch {marker}; git-upload-pack")
        git(clone, "config", "protocol.file.allow", "always")
    return marker


def test_import_git_of_a_rename_a_partial_clone_lacks_a_side_of_names_the_object(
        project, tmp_path):
    """A rename's pairing reads both files: where a partial clone lacks the old one, the
    refusal was git's own words behind its warning that lazy fetch is off. Said as a file it
    lacks is said: the object, and the way to fetch it there. Nothing run or written."""
    root = project
    clone = fork(tmp_path)
    data = b"".join(b"line %d of a file long enough to pair\n" % i for i in range(40))
    (clone / "big.py").write_bytes(data)
    commit_all(clone, "Add big")
    git(clone, "mv", "big.py", "moved.py")
    (clone / "moved.py").write_bytes(data.replace(b"line 7 ", b"LINE 7 "))
    commit_all(clone, "Move big")
    blob = git(clone, "rev-parse", "HEAD~1:big.py").strip()
    (clone / ".git/objects" / blob[:2] / blob[2:]).unlink()
    marker = _partial_clone(clone, tmp_path, "ssh")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "HEAD~1..HEAD", "--repo", str(clone))
    assert not marker.exists(), run.text
    assert run.rc == 2 and f"in {clone}: the repository lacks object {blob}" in run.err \
        and f"cat-file -e {blob}" in run.err, run.text
    assert tree_bytes(root / "series") == before


@pytest.mark.parametrize("remote", ["ssh", "file"])
def test_import_git_fetches_nothing_a_partial_clones_config_names(project, tmp_path, remote):
    """A repository handed over as a partial clone (`extensions.partialClone`, a `promisor`
    remote) lacking a blob the range needs: git fetched it while `import git` read, and the
    fetch ran what the configuration names (`core.sshCommand`; a file remote's `uploadpack`,
    whose fetch then succeeded, the fix imported). Nothing is fetched or run now: refused,
    exit 2, naming the object the repository lacks, nothing written."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(clone, "Fix line three")
    blob = git(clone, "rev-parse", "HEAD:a.py").strip()
    (clone / ".git/objects" / blob[:2] / blob[2:]).unlink()
    marker = _partial_clone(clone, tmp_path, remote)
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert not marker.exists(), run.text
    assert run.rc == 2 and "cannot read a.py of commit " in run.err \
        and f"in {clone}: the repository lacks object {blob}" in run.err, run.text
    assert tree_bytes(root / "series") == before


@pytest.mark.parametrize("existing", [False, True])
def test_a_file_name_holding_a_newline_is_refused_not_cut(project, tmp_path, existing):
    """A commit making `we<LF>ird.py` was imported as a patch of `we` (GitPython's name cut at
    the newline), exit 0; where the upstream had such a file, the fix went into it. Refused,
    naming the commit and the name as git quotes it; nothing written."""
    root = project
    clone = fork(tmp_path)
    (clone / "we\nird.py").write_bytes(b"x = 1\n")
    if existing:
        commit_all(clone, "Add the odd file")
        (clone / "we\nird.py").write_bytes(b"x = 2\n")
    odd = commit_all(clone, "Odd name")
    before = tree_bytes(root / "series")
    run = run_cli(root, "import", "git", "HEAD~1..HEAD", "--repo", str(clone))
    assert run.rc == 2, run.text
    assert f'commit {odd[:12]} (Odd name) changes "we\\nird.py": a file name with a newline' \
        in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_a_symlink_turned_into_a_file_is_refused_naming_the_commit(tmp_path, monkeypatch):
    """The refusal said `<diff>:2` for where, and hinted at links leaving the upstream."""
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    up = new_repo(tmp_path / "up")
    (up / "a.py").write_bytes(b"x = 1\n")
    (up / "link.py").symlink_to("a.py")
    commit_all(up, "v1")
    root, _ = git_project(tmp_path / "p", {"a.py": b"x = 1\n"})
    # (The refusal comes as the commits are read, before the project's upstream is.)
    clone = tmp_path / "fork"
    git(tmp_path, "clone", "-q", str(up), str(clone))
    (clone / "link.py").unlink()
    (clone / "link.py").write_bytes(b"real = 1\n")
    changed = commit_all(clone, "Make link.py a real module")
    run = run_cli(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert run.rc == 2
    assert (f"in {clone}: commit {changed[:12]} (Make link.py a real module) turns link.py "
            "from a symlink into a file") in run.err
    assert "<diff>" not in run.err and "inside its upstream" not in run.err


BODIES = {
    "Backport the x fix": "Upstream: https://github.com/vllm-project/vllm/pull/12345\n"
                          "Cherry-picked for the ROCm build.",
    "Fix w": "Base: the old kernel path is kept on purpose.\n\nMore words.",
}


def commits_with_field_like_bodies(tmp_path: Path) -> Path:
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    git(clone, "commit", "-qam", "Backport the x fix", "-m", BODIES["Backport the x fix"])
    (clone / "a.py").write_bytes((clone / "a.py").read_bytes().replace(b"line9\n", b"LINE9\n"))
    git(clone, "commit", "-qam", "Fix w", "-m", BODIES["Fix w"])
    return clone


def check_bodies_kept(root: Path) -> None:
    pin = git(root.parent / "up-upstream", "rev-parse", "main").strip()
    for subject, body in BODIES.items():
        fields, description = header(root, re.sub(r"[^a-z0-9]+", "-", subject.lower()))
        assert fields["Upstream"] == "up" and fields["Description"] == subject
        assert fields["Base"] == pin
        for line in body.splitlines():
            assert line in description, (subject, description)


def test_import_git_keeps_a_body_that_begins_like_a_header_field(project, tmp_path):
    """`Upstream: <pull request URL>` became `Upstream: up` and `Base: <a sentence>` a Base
    field the next rebase overwrote: the commit's words were gone, nothing said so."""
    root = project
    clone = commits_with_field_like_bodies(tmp_path)
    ok(root, "import", "git", "origin/main..main", "--repo", str(clone))
    check_bodies_kept(root)
    assert ok(root, "lint").rc == 0


def test_import_mbox_keeps_a_body_that_begins_like_a_header_field(project, tmp_path):
    root = project
    clone = commits_with_field_like_bodies(tmp_path)
    mbox = tmp_path / "fixes.mbox"
    mbox.write_bytes(subprocess.run(["git", "format-patch", "--stdout", "origin/main..main"],
                                    cwd=clone, capture_output=True, check=True).stdout)
    ok(root, "import", "mbox", str(mbox))
    check_bodies_kept(root)


def fix_made_on_an_older_release(project: Path, tmp_path: Path) -> tuple[str, str, Path]:
    """The upstream gains a line at the top of a.py (v1, the pin now); a fork's branch `fix`,
    made on the release before (v0), changes line10, which applies at the pin at an offset:
    (v0, v1, the fork)."""
    upstream = tmp_path / "up-upstream"
    v0 = git(upstream, "rev-parse", "HEAD").strip()
    (upstream / "a.py").write_bytes(b"line0\n" + UPSTREAM_FILES["a.py"])
    v1 = commit_all(upstream, "line0")
    ok(project, "upstream", "pin", "up", "--at", "main")
    clone = fork(tmp_path)
    git(clone, "checkout", "-q", "-b", "fix", v0)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line10\n", b"line10 fixed\n"))
    commit_all(clone, "Fix line10")
    return v0, v1, clone


def test_a_branch_made_on_an_older_upstream_records_that_revision_as_its_base(project,
                                                                                tmp_path):
    """A fork branch made on v0 changes line10; the pin (v1) has a line more at the top, so
    the fix applies there at an offset, at one place. `import git v0..fix` wrote `Base:` the
    pin and said only "imported": a claim that the diff (its index lines v0's blob, its line
    numbers v0's) was made on the pin. Now the header records v0 and the import says so; a
    commit made on the pin itself is still based on the pin, without a word."""
    v0, v1, clone = fix_made_on_an_older_release(project, tmp_path)
    run = ok(project, "import", "git", f"{v0}..fix", "--repo", str(clone), "--upstream", "up")
    assert f"imported up/fix-line10.patch (made on {v0[:12]}, not on the pin {v1[:12]}: its " \
        "Base says so; `patchforge edit fix-line10` + `refresh` makes it on the pin)" in run.out, \
        run.text
    assert header(project, "fix-line10")[0]["Base"] == v0
    git(clone, "checkout", "-q", "-b", "on-pin", v1)
    (clone / "pkg/b.py").write_bytes(b"x = 1\ny = 3\nz = 3\n")
    commit_all(clone, "Fix y")
    run = ok(project, "import", "git", f"{v1}..on-pin", "--repo", str(clone), "--upstream", "up")
    assert run.out.startswith("imported up/fix-y.patch\n"), run.text
    assert header(project, "fix-y")[0]["Base"] == v1


def test_edit_and_refresh_of_a_patch_made_on_an_older_upstream_bases_it_on_the_pin(project,
                                                                                  tmp_path):
    """The import says "`patchforge edit fix-line10` + `refresh` makes it on the pin", and
    lint warns "Base ... is not the locked revision" until then: refresh wrote the diff made
    on the pin and left `Base:` naming v0, so the warning never went away and the header went
    on saying the diff was made on a revision it was not."""
    v0, v1, clone = fix_made_on_an_older_release(project, tmp_path)
    ok(project, "import", "git", f"{v0}..fix", "--repo", str(clone), "--upstream", "up")
    assert "is not the locked revision" in run_cli(project, "lint").text
    ok(project, "edit", "fix-line10")
    ok(project, "refresh")
    fields, _ = header(project, "fix-line10")
    assert fields["Base"] == v1
    patch = (project / "series/up/fix-line10.patch").read_bytes()
    assert patch.count(b"Base: ") == 1 and b"+line10 fixed" in patch
    assert "is not the locked revision" not in run_cli(project, "lint").text


@pytest.mark.parametrize("how", ["mbox", "quilt"])
def test_a_diff_made_with_no_context_is_refused_at_import(project, tmp_path, how):
    """`git format-patch -U0` (or `git diff -U0` in a quilt series) was imported, exit 0, and
    every later command refused the patch (status, overlays, and `edit`, which lint named as
    the remedy): nothing in patchforge could make it right. Refused at the import, naming the
    file and the section, nothing written; lint's remedy no longer names `edit`."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(clone, "Fix line three")
    if how == "mbox":
        source = tmp_path / "u0.mbox"
        source.write_bytes(subprocess.run(["git", "format-patch", "-U0", "-1", "--stdout"],
                                          cwd=clone, check=True, capture_output=True).stdout)
        args = ["import", "mbox", str(source)]
    else:
        source = tmp_path / "quilt"
        source.mkdir()
        (source / "u0.patch").write_bytes(subprocess.run(
            ["git", "diff", "-U0", "HEAD~1", "HEAD"], cwd=clone, check=True,
            capture_output=True).stdout)
        (source / "series").write_text("u0.patch\n")
        args = ["import", "quilt", str(source)]
    before = tree_bytes(root / "series")
    run = run_cli(root, *args)
    assert run.rc == 2, run.text
    assert "a hunk of a.py has no context lines (a diff made with -U0)" in run.err, run.err
    assert "nothing was imported" in run.err and "without -U0" in run.err, run.err
    assert tree_bytes(root / "series") == before


def test_a_commit_adding_a_file_of_a_non_utf8_name_keeps_every_change(project, tmp_path):
    """A commit fixing a.py that also adds `caf\\xe9.py` (a Latin-1 name): GitPython's parse of
    git's raw diff failed on the name (a traceback on the terminal), and the import wrote a
    patch with a header and no diff, exit 0: the a.py fix was in no patch. The names are read
    as bytes now: both files are in the patch, the name as git quotes it, and `git apply`
    takes the patch on the upstream."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    odd = bytes(clone) + b"/caf\xe9.py"
    with open(odd, "wb") as handle:
        handle.write(b"data = 1\n")
    commit_all(clone, "Fix and data")
    run = run_cli(root, "import", "git", "HEAD~1..HEAD", "--repo", str(clone))
    assert run.rc == 0 and "Traceback" not in run.err, run.text
    data = (root / "series/up/fix-and-data.patch").read_bytes()
    assert b"+LINE3\n" in data and b'+++ "b/caf\\351.py"\n' in data, data
    check = tmp_path / "check"
    git(tmp_path, "clone", "-q", str(tmp_path / "up-upstream"), str(check))
    applied = subprocess.run(["git", "apply", "-"], cwd=check, input=data, capture_output=True)
    assert applied.returncode == 0, applied.stderr
    assert open(bytes(check) + b"/caf\xe9.py", "rb").read() == b"data = 1\n"


def test_a_commit_message_in_latin_1_is_read_in_the_encoding_it_names(project, tmp_path):
    """A commit made with `i18n.commitEncoding=ISO-8859-1` (git writes an `encoding` header)
    came in with a replacement character for every accented letter of its subject, body and
    author: GitPython read it as UTF-8. Read in the encoding the commit names."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    git(clone, "add", "-A")
    message = tmp_path / "message"
    message.write_bytes(b"Caf\xe9 fix\n\nThe d\xe9tail.\n")
    subprocess.run(["git", "-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q",
                    b"--author=Ren\xe9e <r@example.com>", "-F", str(message)], cwd=clone,
                   check=True)
    ok(root, "import", "git", "HEAD~1..HEAD", "--repo", str(clone))
    (name,) = [p.name for p in (root / "series/up").glob("*.patch")]
    fields, description = header(root, name.removesuffix(".patch"))
    assert fields["Description"].startswith("Café fix"), fields
    assert "The détail." in description or "The détail." in fields["Description"], \
        (fields, description)
    assert fields["Author"].startswith("Renée"), fields


@pytest.mark.parametrize("has_pin", [True, False])
def test_a_branch_whose_lines_changed_upstream_is_refused_with_commands_that_work(
        project, tmp_path, has_pin):
    """A fork branch made on v0 changes line5, which upstream changed too by the pin (v1):
    `import git v0..fix` is refused (it does not apply on the pin). Its hint said to run
    `git rebase --onto PIN OLD-BASE BRANCH` and import again: run so, with the same range
    `v0..fix`, the range then held upstream's own commit v0..v1, refused in turn with the
    same hint; and a fork that had no pin commit could not rebase onto it at all. The hint's
    commands, run as written (the rebase's stop resolved), import the branch's fixes."""
    import shlex

    upstream = tmp_path / "up-upstream"
    v0 = git(upstream, "rev-parse", "HEAD").strip()
    (upstream / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line5\n", b"line5 up\n"))
    commit_all(upstream, "Upstream's line5")
    ok(project, "upstream", "pin", "up", "--at", "main")
    if has_pin:
        clone = fork(tmp_path)
        git(clone, "checkout", "-q", "-b", "fix", v0)
    else:  # a fork that fetched the old release alone
        clone = new_repo(tmp_path / "fork")
        git(clone, "fetch", "-q", str(upstream), f"{v0}:refs/heads/fix")
        git(clone, "checkout", "-q", "fix")
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line5\n", b"line5 ours\n"))
    commit_all(clone, "Fix line5")
    (clone / "pkg/b.py").write_bytes(b"x = 1\ny = 22\nz = 3\n")
    commit_all(clone, "Fix y")
    before = tree_bytes(project / "series")
    run = run_cli(project, "import", "git", f"{v0[:12]}..fix", "--repo", str(clone))
    assert run.rc == 2 and "does not apply on the pin's a.py" in run.err, run.text
    assert tree_bytes(project / "series") == before
    commands = [shlex.split(c) for c in re.findall(r"`([^`]*)`", run.err.split("hint:")[1])]
    assert [c[0] for c in commands] == ["git"] * (1 if has_pin else 2) + ["patchforge"], \
        run.err
    for command in commands[:-1]:
        done = subprocess.run(command, capture_output=True)
        if done.returncode and "rebase" in command:  # the stop on line5, resolved
            (clone / "a.py").write_bytes(
                UPSTREAM_FILES["a.py"].replace(b"line5\n", b"line5 up, ours\n"))
            git(clone, "add", "a.py")
            git(clone, "-c", "core.editor=true", "rebase", "--continue")
        else:
            assert done.returncode == 0, (command, done.stderr)
    run = ok(project, *commands[-1][1:])
    assert "imported up/fix-line5.patch" in run.out and "imported up/fix-y.patch" in run.out, \
        run.text
    assert "upstream-s-line5" not in run.out
    assert ok(project, "status").rc == 0


@pytest.mark.parametrize("first", [False, True])
def test_the_ranges_a_refused_commit_names_import_the_commits_around_it(project, tmp_path,
                                                                        first):
    """A commit a patch cannot carry (a submodule added) in `origin/main..main`: the hint
    said to import `BASE..SHA~1`, then `SHA..TIP`, words to fill in (run as written, git
    said "bad revision 'BASE..'"), and where the commit was the range's first, the range
    before it held nothing. The ranges it names now are the range's own, run as written
    they import every other commit of it."""
    import shlex

    root = project
    clone = fork(tmp_path)
    if not first:
        (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
        commit_all(clone, "Fix line three")
    git(clone, "-c", "protocol.file.allow=always", "submodule", "add", "-q",
        str(tmp_path / "up-upstream"), "third_party/kernels")
    vendored = commit_all(clone, "Vendor kernels")
    (clone / "pkg/b.py").write_bytes(b"x = 1\ny = 22\nz = 3\n")
    commit_all(clone, "Fix y")
    run = run_cli(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert run.rc == 2 and "adds submodule third_party/kernels" in run.err, run.text
    ranges = re.findall(r"`([^`]*)`", run.err.split("hint:")[1])
    assert ranges == ([] if first else [f"origin/main..{vendored[:12]}~1"]) + \
        [f"{vendored[:12]}..main"], run.err
    imported = "".join(ok(root, "import", "git", *shlex.split(r), "--repo", str(clone)).out
                       for r in ranges)
    assert "imported up/fix-y.patch" in imported, imported
    assert ("imported up/fix-line-three.patch" in imported) is not first, imported


def test_a_commit_that_does_not_apply_on_a_wheel_pin_names_a_way_that_works(tmp_path,
                                                                            monkeypatch):
    """A wheel upstream: the pin is a commit of patchforge's own store. A fork commit whose
    line changed in the pinned release was refused with the hint `git rebase --onto PIN
    OLD-BASE BRANCH` in its repository, a commit no repository has. The hint is the change
    made on the pin's files, and its commands, run as written, make the fix."""
    import shlex

    from helpers.upstream import build_wheel

    a = b"".join(b"line%d\n" % i for i in range(1, 21))
    wheels = tmp_path / "wheels"
    build_wheel(wheels, "tinypkg", "1.1", {"tinypkg/a.py": a.replace(b"line5\n", b"line5 up\n")})
    monkeypatch.setenv("PATCHFORGE_WHEELS", str(wheels))
    root = tmp_path / "stack"
    ok(None, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "tiny", "--wheel", "tinypkg", "--at", "1.1", "--install-root",
       "/usr/lib/python3/dist-packages")
    clone = new_repo(tmp_path / "fork")
    (clone / "tinypkg").mkdir()
    (clone / "tinypkg/a.py").write_bytes(a)
    commit_all(clone, "1.0")
    git(clone, "checkout", "-q", "-b", "fix")
    (clone / "tinypkg/a.py").write_bytes(a.replace(b"line5\n", b"line5 ours\n"))
    commit_all(clone, "Fix line5")
    run = run_cli(root, "import", "git", "main..fix", "--repo", str(clone))
    assert run.rc == 2 and "does not apply on the pin's tinypkg/a.py" in run.err, run.text
    assert "git rebase" not in run.err, run.err
    new, refresh = [shlex.split(c) for c in re.findall(r"`([^`]*)`", run.err.split("hint:")[1])]
    ok(root, *new[1:])
    work = root / ".patchforge/work/tiny/tinypkg/a.py"
    work.write_bytes(work.read_bytes().replace(b"line5 up\n", b"line5 up, ours\n"))
    ok(root, *refresh[1:])
    assert b"+line5 up, ours\n" in (root / "series/tiny/fix-line5.patch").read_bytes()
    assert ok(root, "status").rc == 0


def test_a_fix_commit_with_a_test_the_installed_upstream_lacks_is_named_so(tmp_path):
    """A fix branch's commit changes the package and its test; the upstream is the installed
    package (a wheel or a directory), which has no tests/. The refusal said "hunk #1 of
    tests/test_mod.py does not apply on the pin's tests/test_mod.py", a file the pin does
    not have, and its way on, `patchforge new NAME --file tests/test_mod.py`, was refused in
    turn ("does not exist in the upstream"). Now the missing file is said as such, and the
    way on names the files the pin has; that command works."""
    site = tmp_path / "site"
    (site / "pkg").mkdir(parents=True)
    (site / "pkg" / "mod.py").write_bytes(b"def a():\n    return 1\n")
    repo = new_repo(tmp_path / "repo")
    (repo / "pkg").mkdir()
    (repo / "pkg" / "mod.py").write_bytes((site / "pkg" / "mod.py").read_bytes())
    (repo / "tests").mkdir()
    (repo / "tests" / "test_mod.py").write_bytes(b"def test_a():\n    assert True\n")
    commit_all(repo, "base")
    (repo / "pkg" / "mod.py").write_bytes(b"def a():\n    return 10\n")
    (repo / "tests" / "test_mod.py").write_bytes(b"def test_a():\n    assert 10\n")
    commit_all(repo, "Fix a, with its test")
    root = tmp_path / "stack"
    root.mkdir()
    ok(None, "init", str(root))
    ok(root, "upstream", "add", "up", "--dir", str(site), "--at", "1.0",
       "--install-root", "/opt/site")
    before = tree_bytes(root)
    run = run_cli(root, "import", "git", "HEAD~1..HEAD", "--repo", str(repo))
    assert run.rc == 2, run.text
    assert "tests/test_mod.py is not among the upstream's files at the pin" in run.err, run.err
    assert "the pin's tests/test_mod.py" not in run.err
    assert "`patchforge new fix-a-with-its-test --file pkg/mod.py`" in run.err, run.err
    assert tree_bytes(root) == before
    ok(root, "new", "fix-a-with-its-test", "--file", "pkg/mod.py")


def test_an_empty_commit_makes_no_patch_and_is_said(project, tmp_path):
    """A range holding an empty commit (`git commit --allow-empty`, a marker) between two
    fixes: it was imported as a patch without a diff (lint's `empty` warning; `git am` of the
    export stops on it, and `git format-patch` writes no message of it). Now it makes no
    patch, a note names it, and the fixes around it are imported."""
    root = project
    clone = fork(tmp_path)
    (clone / "a.py").write_bytes(UPSTREAM_FILES["a.py"].replace(b"line3\n", b"LINE3\n"))
    commit_all(clone, "Fix line three")
    git(clone, "commit", "-q", "--allow-empty", "-m", "Mark the gfx950 bring-up")
    empty = git(clone, "rev-parse", "HEAD").strip()
    (clone / "a.py").write_bytes((clone / "a.py").read_bytes().replace(b"line5\n", b"LINE5\n"))
    commit_all(clone, "Fix line five")
    run = ok(root, "import", "git", "origin/main..main", "--repo", str(clone))
    assert run.out.splitlines() == ["imported up/fix-line-three.patch",
                                    "imported up/fix-line-five.patch"], run.text
    assert f"note: commit {empty[:12]} (Mark the gfx950 bring-up) changes no file (an empty " \
           "commit, git commit --allow-empty): no patch made of it" in run.err, run.err
    assert (root / "series/up/series").read_text().split() == ["fix-line-three.patch",
                                                               "fix-line-five.patch"]
    assert not (root / "series/up/mark-the-gfx950-bring-up.patch").exists()
    assert ok(root, "lint").rc == 0 and "empty" not in ok(root, "lint").out

    # The empty commit alone: nothing to import, and why.
    before = tree_bytes(root / "series")
    run = ok(root, "import", "git", f"{empty}^!", "--repo", str(clone))
    assert run.out == "nothing to import\n", run.text
    assert f"note: commit {empty[:12]} (Mark the gfx950 bring-up) changes no file" in run.err
    assert tree_bytes(root / "series") == before
