"""`import quilt --update` of a patch `quilt rename` gave a new name after `quilt push` +
`quilt refresh`: quilt wrote the diff again in its own form (`Index:` lines, `.orig` prefixes,
its function names, a diffstat), the change the same. Said renamed, not "renamed and changed";
a rename with a real change (a line, the header) is still said changed.
Real git, real quilt, the real CLI.
"""
from __future__ import annotations

import os
import subprocess

import pytest

from helpers.cli import ok, run_cli
from patchforge.formats.patchfile import parse_patch_file
from test_quilt_renamed_both_sides import exported_stack

M = b"def f(x):\n    y = x + 1\n    return y\n\n\ndef g(x):\n    y = x * 2\n    return y\n"

# quilt's settings as users have them: the plain ones, and Debian's /etc/quilt.quiltrc's
# (function names after `@@`, no timestamps) with a diffstat.
RCS = {"plain": None,
       "debian-diffstat": 'QUILT_DIFF_OPTS="--show-c-function"\n'
                          'QUILT_DIFF_ARGS="--no-timestamps"\n'
                          'QUILT_REFRESH_ARGS="--no-timestamps --backup --diffstat"\n'}


def _quilter(tmp_path, rc):
    if RCS[rc] is None:
        quiltrc = "-"
    else:
        quiltrc = str(tmp_path / "quiltrc")
        (tmp_path / "quiltrc").write_text(RCS[rc])

    def quilt(tree, *args, stdin=None):
        env = {**os.environ, "QUILT_PATCHES": "patches", "QUILTRC": quiltrc}
        subprocess.run(["quilt", *args], cwd=tree, env=env, check=True, capture_output=True,
                       input=stdin)
    return quilt


def _series_files(root):
    return {p: p.read_bytes() for p in sorted((root / "series").rglob("*")) if p.is_file()}


@pytest.mark.parametrize("rc", sorted(RCS))
def test_a_patch_quilt_refreshed_unchanged_then_renamed_is_said_renamed(tmp_path, rc):
    """quilt push fix-f, quilt refresh (nothing changed: quilt writes its own diff, with a
    diffstat under Debian's settings), quilt rename fix-ff. The import said "fix-ff.patch is
    fix-f.patch renamed (`quilt rename`) and changed in quilt" and that the rename would take
    quilt's change back: there is none. Now it says renamed, and after the `rename` its hint
    gives, nothing is taken back."""
    root, q, tree = exported_stack(tmp_path, M)
    quilt = _quilter(tmp_path, rc)
    before_refresh = (q / "fix-f.patch").read_bytes()
    quilt(tree, "push", "fix-f.patch")
    quilt(tree, "refresh")
    assert (q / "fix-f.patch").read_bytes() != before_refresh  # quilt's own diff now
    quilt(tree, "rename", "fix-ff.patch")
    before = _series_files(root)

    run = run_cli(root, "import", "quilt", str(q), "--update")
    assert run.rc == 2, run.text
    assert f"{q}/series:1: fix-ff.patch is fix-f.patch renamed (`quilt rename`): nothing was " \
           "taken back" in run.err, run.err
    assert "changed" not in run.err, run.err
    assert "`patchforge rename fix-f fix-ff`, then run this again\n" in run.err, run.err
    assert _series_files(root) == before

    ok(root, "rename", "fix-f", "fix-ff")
    run = ok(root, "import", "quilt", str(q), "--update")
    assert "changed" not in run.text, run.text
    if RCS[rc] is None:
        assert "nothing to take back" in run.out, run.text
    # (quilt's diffstat, where it wrote one, is taken as any `quilt refresh --diffstat`'s is:
    # under the `---`, the fix's header and diff as they were.)
    exported = parse_patch_file(before[root / "series/up/fix-f.patch"])
    now = parse_patch_file((root / "series/up/fix-ff.patch").read_bytes())
    assert (now.fields, now.description, now.diff) == \
        (exported.fields, exported.description, exported.diff)
    assert (root / "series/up/series").read_text().split() == ["fix-ff.patch", "fix-g.patch"]


@pytest.mark.parametrize("rc", sorted(RCS))
def test_a_patch_quilt_changed_then_renamed_is_still_said_changed(tmp_path, rc):
    """The mirror: quilt push fix-f, a line changed, quilt refresh, quilt rename fix-ff: said
    renamed and changed in quilt, and the rename then takes quilt's change back."""
    root, q, tree = exported_stack(tmp_path, M)
    quilt = _quilter(tmp_path, rc)
    quilt(tree, "push", "fix-f.patch")
    (tree / "m.py").write_bytes((tree / "m.py").read_bytes().replace(b"    return y\n",
                                                                     b"    return int(y)\n", 1))
    quilt(tree, "refresh")
    quilt(tree, "rename", "fix-ff.patch")

    run = run_cli(root, "import", "quilt", str(q), "--update")
    assert run.rc == 2, run.text
    assert "fix-ff.patch is fix-f.patch renamed (`quilt rename`) and changed in quilt: " \
           "nothing was taken back" in run.err, run.err
    assert "which takes quilt's change back into it" in run.err, run.err

    ok(root, "rename", "fix-f", "fix-ff")
    run = ok(root, "import", "quilt", str(q), "--update")
    assert "updated up/fix-ff.patch" in run.out, run.text
    assert b"+    return int(y)" in (root / "series/up/fix-ff.patch").read_bytes()


def test_a_patch_whose_header_quilt_changed_then_renamed_is_still_said_changed(tmp_path):
    """The mirror of the header: quilt header -r (a new description), quilt rename, the diff
    as it was: said changed."""
    root, q, tree = exported_stack(tmp_path, M)
    quilt = _quilter(tmp_path, "plain")
    quilt(tree, "push", "fix-f.patch")
    header = (q / "fix-f.patch").read_bytes().split(b"\n---\n")[0]
    quilt(tree, "header", "-r", stdin=header.replace(b"Description: f",
                                                     b"Description: f, the sum") + b"\n")
    quilt(tree, "rename", "fix-ff.patch")

    run = run_cli(root, "import", "quilt", str(q), "--update")
    assert run.rc == 2, run.text
    assert "fix-ff.patch is fix-f.patch renamed (`quilt rename`) and changed in quilt: " \
           "nothing was taken back" in run.err, run.err


@pytest.mark.parametrize("made", ["quilt new", "quilt rename"])
def test_export_over_a_patch_quilt_made_names_the_import_that_takes_it(tmp_path, made):
    """`export --quilt DIR` again after quilt made a patch in DIR (`quilt new` + `quilt
    refresh`, or `quilt refresh` + `quilt rename` of an exported one) was refused as "a patch
    of no series here ... (a directory of another quilt stack?)", with the hint to move
    DIR/series away: quilt's work dropped. DIR's record says it is this project's export: the
    refusal says the patch was made there since, nothing written, and names `import quilt
    DIR --update`, which takes it back; the export then goes through."""
    root, q, tree = exported_stack(tmp_path, M)
    quilt = _quilter(tmp_path, "plain")
    quilt(tree, "push", "-a")
    if made == "quilt new":
        quilt(tree, "new", "fix-k.patch")
        quilt(tree, "add", "m.py")
        (tree / "m.py").write_bytes((tree / "m.py").read_bytes().replace(b"    return y\n",
                                                                         b"    return int(y)\n",
                                                                         1))
        quilt(tree, "refresh")
        name, line = "fix-k.patch", 3
    else:
        quilt(tree, "pop")
        quilt(tree, "refresh")
        quilt(tree, "rename", "fix-ff.patch")
        name, line = "fix-ff.patch", 1
    before = {p.name: p.read_bytes() for p in q.iterdir()}

    run = run_cli(root, "export", "--quilt", str(q))
    assert run.rc == 2, run.text
    assert f"{q}/series:{line}: lists {name}, which no export of this project wrote and the " \
           f"up series does not hold: made in {q} since the export" in run.err, run.err
    assert f"`patchforge import quilt {q} --update` takes it back" in run.err, run.err
    assert "another quilt stack" not in run.err and "away" not in run.err, run.err
    assert {p.name: p.read_bytes() for p in q.iterdir()} == before

    if made == "quilt new":
        assert "added up/fix-k.patch" in ok(root, "import", "quilt", str(q), "--update").out
    else:
        assert "`patchforge rename fix-f fix-ff`" in run_cli(root, "import", "quilt", str(q),
                                                             "--update").err
        ok(root, "rename", "fix-f", "fix-ff")
        ok(root, "import", "quilt", str(q), "--update")
    ok(root, "export", "--quilt", str(q))
    assert (q / "series").read_text().split() == \
        (root / "series/up/series").read_text().split()
