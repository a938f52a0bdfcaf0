"""What the read-only checks advise while a rebase is stopped: never a command that state refuses.
Real git, the real CLI.
"""
from __future__ import annotations

from helpers.cli import ok, run_cli
from helpers.upstream import Upstream

LINES = [f"def f{i}():\n    return {i}\n\n".encode() for i in range(20)]


def _text(replacements: dict[int, bytes]) -> bytes:
    return b"".join(replacements.get(i, line) for i, line in enumerate(LINES))


def _fix(root, name, data):
    ok(root, "new", name, "--file", "pkg/mod.py")
    (root / ".patchforge/work/up/pkg/mod.py").write_bytes(data)
    ok(root, "refresh")


def test_overlays_check_and_lint_during_a_stop_say_to_regenerate_once_it_ends(tmp_path):
    """Overlays committed, then a fix made without regenerating them, then a rebase that stops:
    `overlays --check` and `lint` said "run `patchforge overlays` and commit the result", and
    `overlays` is refused while the rebase is stopped. They say to run it once the rebase ends
    (--continue, --skip or --abort), and after the abort that advice works."""
    up = Upstream(tmp_path / "up", {"pkg/mod.py": _text({})})
    root = tmp_path / "project"
    root.mkdir()
    ok(root, "init", "--standalone", str(root))
    ok(root, "upstream", "add", "up", "--git", str(up.path), "--at", up.base,
       "--install-root", "/opt/site")
    _fix(root, "fix-a", _text({3: b"def f3():\n    return -3\n\n"}))
    ok(root, "overlays")
    _fix(root, "fix-b", _text({3: b"def f3():\n    return -3\n\n",
                               12: b"def f12():\n    return -12\n\n"}))
    target = up.commit({"pkg/mod.py": _text({3: b"def f3():\n    return 33\n\n"})})
    assert run_cli(root, "rebase", "--to", f"up={target}").rc == 3
    refused = run_cli(root, "overlays")
    assert refused.rc == 2 and "`overlays` refused" in refused.err, refused.text
    advice = ("`patchforge overlays` is refused while the rebase of up is stopped: once it ends "
              "(`patchforge rebase --continue`, `--skip` or `--abort`), run `patchforge "
              "overlays` and commit the result")
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1 and advice in check.err, check.text
    assert "\nrun `patchforge overlays`" not in "\n" + check.err, check.err
    lint = run_cli(root, "lint", "--no-forge")
    assert lint.rc == 1 and advice in lint.text, lint.text
    ok(root, "rebase", "--abort")
    check = run_cli(root, "overlays", "--check")
    assert check.rc == 1 and "run `patchforge overlays` and commit the result" in check.err
    assert "refused while" not in check.err, check.err
    ok(root, "overlays")
    ok(root, "overlays", "--check")
