"""Binary files carried as git binary patches, through the real CLI on real git upstreams.

Compiled kernels (`.co`) change next to Python and tuned-config CSVs: a fix imported from a real
commit keeps its binary changes as `GIT binary patch` sections (delta for a small change, literal
for a rewritten or new file, deletion), which real `git apply` and `git am` take; overlays carry
the bytes; status and rebase judge them by blob id; a binary change that does not apply exactly
stops or is refused, and a hostile one is refused with its line before anything is written.
"""
from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import zlib
from pathlib import Path

import pytest

from helpers.cli import ok, run_cli
from helpers.git import commit_files, git
from helpers.project import OneUpstreamStack, add_patch_file
from helpers.snapshot import snapshot

RNG = random.Random(950)


def _blob(size: int) -> bytes:
    return bytes(RNG.randrange(256) for _ in range(size))


KERNEL = "hsa/gfx950/fmha/fwd_kernel.co"
REWRITTEN = "hsa/gfx950/gemm/gemm_a8w8.co"
GONE = "hsa/gfx950/old/legacy.co"
NEW = "hsa/gfx950/fmha/fwd_kernel_v2.co"
CSV = "aiter/configs/tuned_gemm.csv"

UPSTREAM = {
    KERNEL: _blob(40_000),
    REWRITTEN: _blob(3_000),
    GONE: _blob(2_000),
    CSV: b"M,N,K,kernel\r\n1,4096,4096,a\r\n2,4096,4096,b\r\n",
    "aiter/ops.py": b"def run():\n    return 1\n" + b"".join(b"\n\ndef f%d():\n    pass\n" % i
                                                         for i in range(6)),
}
FIX = {
    KERNEL: UPSTREAM[KERNEL][:1000] + b"\x00patched\x00" + UPSTREAM[KERNEL][1010:],
    REWRITTEN: _blob(2_500),
    GONE: None,
    NEW: b"\x7fELF\x00" + _blob(1_500),
    CSV: b"M,N,K,kernel\r\n1,4096,4096,a\r\n2,4096,4096,c\r\n",
    "aiter/ops.py": UPSTREAM["aiter/ops.py"].replace(b"return 1", b"return 2"),
}


def _clone_at(tmp_path: Path, stack: OneUpstreamStack, rev: str, name: str) -> Path:
    checkout = tmp_path / name
    git(tmp_path, "clone", "-q", str(stack.up), str(checkout))
    git(checkout, "checkout", "-q", rev)
    return checkout


def _files(tree: Path) -> dict[str, bytes]:
    return {str(p.relative_to(tree)): p.read_bytes() for p in tree.rglob("*")
            if p.is_file() and ".git" not in p.relative_to(tree).parts}


def _expected(base: dict[str, bytes], change: dict[str, bytes | None]) -> dict[str, bytes]:
    out = dict(base)
    for path, data in change.items():
        if data is None:
            out.pop(path, None)
        else:
            out[path] = data
    return out


@pytest.fixture
def stack(tmp_path, monkeypatch):
    monkeypatch.setenv("PATCHFORGE_DATE", "2024-05-01")
    return OneUpstreamStack(tmp_path, UPSTREAM)


def _import_fix(tmp_path: Path, stack: OneUpstreamStack, fix: dict | None = None) -> str:
    """The fix as a real commit on a clone of the upstream, brought in with `import git`."""
    work = _clone_at(tmp_path, stack, stack.base, "fix-repo")
    commit_files(work, FIX if fix is None else fix, "Retune fmha and gemm kernels for gfx950")
    ok(stack.root, "import", "git", "HEAD~1..HEAD", "--repo", str(work), "--upstream", "up")
    (name,) = stack.series("up")
    return name


def test_imported_binary_fix_is_carried_exactly(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    patch = (stack.root / "series" / "up" / name).read_bytes()
    # Delta for the small change to the big kernel, literal for the rewritten and new ones, a
    # deletion, and the CSV (text to git) stays a text hunk.
    assert patch.count(b"GIT binary patch\n") == 4
    assert b"\ndelta " in patch and b"\nliteral " in patch
    assert b"--- a/" + CSV.encode() in patch and b"+2,4096,4096,c\r\n" in patch
    assert b"Binary files" not in patch
    # Real git takes it: `git apply --check` on the base, and `git am` of the exported mbox
    # gives exactly the fix's tree.
    checkout = _clone_at(tmp_path, stack, stack.base, "apply-check")
    (tmp_path / "fix.patch").write_bytes(patch)
    git(checkout, "apply", "--check", str(tmp_path / "fix.patch"))
    ok(stack.root, "export", "--mbox", str(tmp_path / "series.mbox"))
    am = _clone_at(tmp_path, stack, stack.base, "am")
    git(am, "-c", "user.name=t", "-c", "user.email=t@example.com", "am", "-q", "--keep-cr",
        str(tmp_path / "series.mbox"))
    assert _files(am) == _expected(UPSTREAM, FIX)
    # Parse then write gives the same bytes; lint finds nothing to say about it.
    assert ok(stack.root, "lint", "--no-forge").rc == 0
    # status at the pin: it applies.
    document = stack.json("status")
    (entry,) = document["patches"]
    assert entry["state"] == "applies"


def test_export_quilt_names_each_binary_section_quilt_cannot_apply(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    out = tmp_path / "quilt"
    result = ok(stack.root, "export", "--quilt", str(out))
    # The series is written whole, bytes kept; each binary section is named with its line.
    assert (out / name).read_bytes() == (stack.root / "series" / "up" / name).read_bytes()
    patch_lines = (out / name).read_bytes().split(b"\n")
    warned = [line for line in result.err.splitlines() if line.startswith("warning: ")]
    assert len(warned) == 4, result.err
    for line in warned:
        where, lineno, path = line.removeprefix("warning: ").split(":")[:3]
        assert where.endswith(name)
        assert patch_lines[int(lineno) - 1].startswith(b"diff --git a/" + path.strip().encode())
    # ...and it is true: real quilt stops on the patch (GNU patch cannot apply binary data).
    tree = _clone_at(tmp_path, stack, stack.base, "quilt-tree")
    pushed = subprocess.run(["quilt", "push", "-a"], cwd=tree, capture_output=True,
                            env={**os.environ, "QUILT_PATCHES": str(out)})
    assert pushed.returncode != 0


def test_pr_carries_a_binary_fix_that_git_am_applies(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    head = stack.commit({"aiter/other.py": b"x = 1\n"}, "upstream moves on")
    document = stack.json("pr", name.removesuffix(".patch"), "--onto", head)
    mail = Path(document["written"]["patch"]).read_bytes()
    assert mail.count(b"GIT binary patch\n") == 4
    clone = _clone_at(tmp_path, stack, head, "pr-clone")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@example.com", "am", "-q", "--keep-cr",
        str(document["written"]["patch"]))
    assert _files(clone) == _expected(_expected(UPSTREAM, {"aiter/other.py": b"x = 1\n"}), FIX)


def test_format_patch_mbox_with_binary_changes_imports_and_overlays(stack, tmp_path):
    fix = {k: v for k, v in FIX.items() if k != GONE}
    work = _clone_at(tmp_path, stack, stack.base, "mail-repo")
    commit_files(work, fix, "Retune kernels")
    mbox = subprocess.run(["git", "format-patch", "--stdout", "-1", "HEAD"], cwd=work,
                          check=True, capture_output=True).stdout
    assert b"GIT binary patch" in mbox  # format-patch writes binary data by default
    (tmp_path / "in.mbox").write_bytes(mbox)
    ok(stack.root, "import", "mbox", str(tmp_path / "in.mbox"), "--upstream", "up")
    ok(stack.root, "overlays")
    # git format-patch deflates at its own level: regenerating gives other bytes for the same
    # blobs, which lint calls cosmetic (a warning), never a wrong patch.
    document = json.loads(run_cli(stack.root, "lint", "--no-forge", "--json").stdout)
    stable = [f for f in document["findings"] if f["check"] == "byte-stable"]
    assert all(f["severity"] == "warning" for f in stable), stable
    for path in (KERNEL, REWRITTEN, NEW):
        assert (stack.root / "overlays" / "up" / path).read_bytes() == fix[path], path


def test_overlays_carry_binary_files_and_verify_checks_them(stack, tmp_path):
    # (An overlay cannot delete a file in the image: this fix keeps the legacy kernel.)
    _import_fix(tmp_path, stack, {k: v for k, v in FIX.items() if k != GONE})
    ok(stack.root, "overlays")
    overlays = stack.root / "overlays"
    for path in (KERNEL, REWRITTEN, NEW, CSV):
        assert (overlays / "up" / path).read_bytes() == FIX[path], path
    sums = (overlays / "SHA256SUMS").read_text()
    assert f"  up/{KERNEL}\n" in sums and f"  up/{NEW}\n" in sums
    proc = subprocess.run(["sha256sum", "-c", "--strict", "SHA256SUMS"], cwd=overlays,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    manifest = json.loads((overlays / "manifest.json").read_bytes())
    assert KERNEL in json.dumps(manifest)
    assert ok(stack.root, "overlays", "--check").rc == 0
    # The installed files are the pre-images: verify --installed says so, byte for byte.
    site = tmp_path / "site"
    for path, data in UPSTREAM.items():
        (site / path).parent.mkdir(parents=True, exist_ok=True)
        (site / path).write_bytes(data)
    assert ok(stack.root, "verify", "--installed", str(site)).rc == 0
    (site / KERNEL).write_bytes(UPSTREAM[KERNEL][:-1] + b"\x01")
    run = run_cli(stack.root, "verify", "--installed", str(site))
    assert run.rc == 1 and KERNEL in run.text


def test_status_and_rebase_judge_binary_changes_by_blob_id(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    # Upstream changes only the Python file: the binary pre-images are still there.
    other = stack.commit({"aiter/ops.py": UPSTREAM["aiter/ops.py"] + b"# tuned\n"}, "unrelated")
    document = stack.json("status", "--against", f"up={other}")
    (entry,) = document["patches"]
    assert entry["state"] == "applies", entry
    # Upstream lands the kernels and CSV exactly (the Python part differently): by blob id,
    # those files are landed, the patch as a whole is partial, never called upstreamed.
    landed = stack.commit({k: v for k, v in FIX.items() if k != "aiter/ops.py"}, "land kernels")
    document = stack.json("status", "--against", f"up={landed}", expect=1)
    (entry,) = document["patches"]
    assert entry["state"] == "partial", entry
    assert any("post-image" in e and KERNEL in e for e in entry["evidence"]), entry["evidence"]
    # Upstream lands all of it: upstreamed, and the rebase drops it to upstreamed/.
    full = stack.commit({"aiter/ops.py": FIX["aiter/ops.py"]}, "land ops")
    document = stack.json("status", "--against", f"up={full}", expect=1)
    assert document["patches"][0]["state"] == "upstreamed"
    stack.cli("rebase", "--to", f"up={full}")
    assert stack.series("up") == []
    kept = (stack.root / "series" / "up" / "upstreamed" / name).read_bytes()
    assert b"GIT binary patch" in kept and b"Applied-Upstream:" in kept


def test_a_kernel_landed_then_rebuilt_upstream_is_landed_by_history(stack, tmp_path):
    """The fix's exact kernel landed in one commit and a later commit rebuilt it: the target
    has neither image, the history knows (the same blob transition). A kernel put back to the
    pre-image afterwards is not landed: the content (the pre-image is there) keeps the fix."""
    fix = {KERNEL: FIX[KERNEL]}
    work = _clone_at(tmp_path, stack, stack.base, "kernel-repo")
    commit_files(work, fix, "Retune fmha kernel")
    ok(stack.root, "import", "git", "HEAD~1..HEAD", "--repo", str(work), "--upstream", "up")
    rebuilt = UPSTREAM[KERNEL][:30_000] + b"\x00rebuilt\x00" + UPSTREAM[KERNEL][30_009:]
    landing = stack.commit(fix, "land the fmha retune")
    later = stack.commit({KERNEL: rebuilt}, "rebuild fmha kernels")
    (entry,) = stack.json("status", "--against", f"up={later}", expect=1)["patches"]
    assert entry["state"] == "upstreamed" and entry["decided_by"] == "history", entry
    assert entry["landed_in"] == landing
    reverted = stack.commit({KERNEL: UPSTREAM[KERNEL]}, "back to the old kernel")
    (entry,) = stack.json("status", "--against", f"up={reverted}")["patches"]
    assert entry["state"] == "applies", entry


def test_rebase_moves_a_binary_patch_whose_pre_image_is_still_there(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    before = (stack.root / "series" / "up" / name).read_bytes()
    moved_to = stack.commit({"aiter/other.py": b"x = 1\n"}, "unrelated file")
    stack.cli("rebase", "--to", f"up={moved_to}")
    after = (stack.root / "series" / "up" / name).read_bytes()
    # Nothing the patch touches changed: the diff is kept byte for byte, only Base moves.
    assert after.split(b"\n---\n", 1)[1] == before.split(b"\n---\n", 1)[1]
    assert f"Base: {moved_to}".encode() in after
    checkout = _clone_at(tmp_path, stack, moved_to, "moved")
    (tmp_path / "moved.patch").write_bytes(after)
    git(checkout, "apply", "--check", str(tmp_path / "moved.patch"))
    # The Python file moves down (an offset): the diff is made again, binary sections and all.
    shifted = stack.commit({"aiter/ops.py": b"# header\n" * 5 + UPSTREAM["aiter/ops.py"]},
                           "a header")
    stack.cli("rebase", "--to", f"up={shifted}")
    again = (stack.root / "series" / "up" / name).read_bytes()
    assert again != after and again.count(b"GIT binary patch\n") == 4
    checkout = _clone_at(tmp_path, stack, shifted, "shifted")
    (tmp_path / "shifted.patch").write_bytes(again)
    git(checkout, "apply", str(tmp_path / "shifted.patch"))
    assert _files(checkout) == _expected(
        _expected(UPSTREAM, {"aiter/other.py": b"x = 1\n",
                             "aiter/ops.py": b"# header\n" * 5 + UPSTREAM["aiter/ops.py"]}),
        {**FIX, "aiter/ops.py": b"# header\n" * 5 + FIX["aiter/ops.py"]})


def test_binary_conflict_stops_and_continue_takes_the_file_put_in_place(stack, tmp_path):
    name = _import_fix(tmp_path, stack)
    # Upstream rebuilt the kernel: neither the fix's pre-image nor its post-image.
    rebuilt = UPSTREAM[KERNEL][:20_000] + b"upstream rebuild" + UPSTREAM[KERNEL][20_016:]
    target = stack.commit({KERNEL: rebuilt}, "rebuild kernel")
    document = stack.json("status", "--against", f"up={target}", expect=1)
    assert document["patches"][0]["state"] == "conflict"
    code, out, err = stack.cli("rebase", "--to", f"up={target}", expect=3)
    assert KERNEL in err and "binary" in err and "--continue" in err
    work = stack.root / ".patchforge" / "work" / "up"
    # No conflict markers in a binary file: the worktree holds the target's bytes.
    assert (work / KERNEL).read_bytes() == rebuilt
    resolved = rebuilt[:1000] + b"\x00patched\x00" + rebuilt[1010:]
    (work / KERNEL).write_bytes(resolved)
    stack.cli("rebase", "--continue")
    patch = (stack.root / "series" / "up" / name).read_bytes()
    assert b"GIT binary patch" in patch
    checkout = _clone_at(tmp_path, stack, target, "resolved")
    (tmp_path / "resolved.patch").write_bytes(patch)
    git(checkout, "apply", str(tmp_path / "resolved.patch"))
    assert (checkout / KERNEL).read_bytes() == resolved
    assert (checkout / NEW).read_bytes() == FIX[NEW]


def test_an_edit_of_a_binary_change_that_no_longer_applies_opens_nothing(stack):
    """A binary change an earlier patch no longer lets apply has nothing to mark in a
    worktree: `edit` opens nothing (exit 2), so no refresh can write the patch without it. The
    edit was opened with the file as the series before it left it, and refresh dropped the
    binary change."""
    work = stack.root / ".patchforge" / "work" / "up"
    ok(stack.root, "new", "early", "--file", KERNEL)
    (work / KERNEL).write_bytes(FIX[KERNEL])
    ok(stack.root, "refresh")
    ok(stack.root, "new", "later", "--file", KERNEL)
    (work / KERNEL).write_bytes(_blob(700))
    ok(stack.root, "refresh")
    ok(stack.root, "edit", "early")
    (work / KERNEL).write_bytes(_blob(600))
    assert run_cli(stack.root, "refresh").rc == 1  # later.patch no longer applies
    later = stack.patch("up", "later")
    run = run_cli(stack.root, "edit", "later")
    assert run.rc == 2 and "nothing was opened" in run.err and KERNEL in run.err, run.text
    assert not work.exists()
    assert run_cli(stack.root, "refresh").rc == 2  # no edit is open
    assert stack.patch("up", "later") == later


def test_new_edit_refresh_write_binary_patches(stack, tmp_path):
    ok(stack.root, "new", "kernel-fix", "--file", KERNEL)
    work = stack.root / ".patchforge" / "work" / "up"
    (work / KERNEL).write_bytes(FIX[KERNEL])
    ok(stack.root, "refresh")
    first = stack.patch("up", "kernel-fix")
    assert b"GIT binary patch\ndelta " in first
    ok(stack.root, "edit", "kernel-fix")
    assert (work / KERNEL).read_bytes() == FIX[KERNEL]  # the patch applied in the worktree
    ok(stack.root, "refresh")
    assert stack.patch("up", "kernel-fix") == first  # nothing changed: the same bytes
    ok(stack.root, "edit", "kernel-fix")
    (work / KERNEL).write_bytes(_blob(500))
    ok(stack.root, "refresh")
    second = stack.patch("up", "kernel-fix")
    assert b"GIT binary patch\nliteral 500\n" in second  # a rewrite: literal is the smaller
    checkout = _clone_at(tmp_path, stack, stack.base, "refreshed")
    (tmp_path / "second.patch").write_bytes(second)
    git(checkout, "apply", "--check", str(tmp_path / "second.patch"))
    # import overlay of a binary file: a binary patch too.
    (tmp_path / "gemm.co").write_bytes(FIX[REWRITTEN])
    ok(stack.root, "import", "overlay", str(tmp_path / "gemm.co"), "--upstream", "up",
       "--path", REWRITTEN, "--name", "gemm")
    assert b"GIT binary patch\nliteral " in stack.patch("up", "gemm")
    ok(stack.root, "overlays")
    assert (stack.root / "overlays" / "up" / REWRITTEN).read_bytes() == FIX[REWRITTEN]


# ---------------------------------------------------------------------------------------------
# Hostile and broken binary patches


def _encode(deflated: bytes) -> bytes:
    """Data lines as git writes them (52 bytes a line, base85)."""
    out = b""
    for at in range(0, len(deflated), 52):
        chunk = deflated[at:at + 52]
        n = len(chunk)
        out += bytes([64 + n if n <= 26 else 70 + n]) + base64.b85encode(chunk, pad=True) + b"\n"
    return out


def _section(path: str, old: bytes, new_oid: str, body: bytes) -> bytes:
    from patchforge.store.diff import blob_oid

    return (f"diff --git a/{path} b/{path}\nindex {blob_oid(old)}..{new_oid} 100644\n"
            "GIT binary patch\n").encode() + body


def _delta_header(src: int, dst: int) -> bytes:
    out = b""
    for value in (src, dst):
        while True:
            byte = value & 0x7F
            value >>= 7
            out += bytes([byte | (0x80 if value else 0)])
            if not value:
                break
    return out


def _hostile_cases() -> dict[str, tuple[bytes, int, str]]:
    """case -> (diff, line of the diff to be named (1-based), words of the message)."""
    old = UPSTREAM[REWRITTEN]
    new = b"\x00new content\x00"
    from patchforge.store.diff import blob_oid

    good = blob_oid(new)
    lit = zlib.compress(new)
    bomb = zlib.compress(b"\x00" * (4 << 20))  # 4 MiB of zeros in a few KiB
    bad85 = _encode(lit)
    bad85 = bad85[:3] + b'"' + bad85[4:]  # '"' is not in git's base85 alphabet
    cases = {
        "bad-base85": (_section(REWRITTEN, old, good, f"literal {len(new)}\n".encode()
                                + bad85 + b"\n"), 5, "base85"),
        "lying-length": (_section(REWRITTEN, old, good, f"literal {len(new) + 7}\n".encode()
                                  + _encode(lit) + b"\n"), 4, "not the"),
        "deflate-bomb": (_section(REWRITTEN, old, good, b"literal 1000\n" + _encode(bomb)
                                  + b"\n"), 4, "more than"),
        "absurd-size": (_section(REWRITTEN, old, good, b"literal 99999999999\n"
                                 + _encode(lit) + b"\n"), 4, "more than"),
        "bad-length-char": (_section(REWRITTEN, old, good, f"literal {len(new)}\n".encode()
                                     + b"z" + _encode(lit)[1:] + b"\n"), 5, "length"),
        "cut-short": (_section(REWRITTEN, old, good, f"literal {len(new)}\n".encode()
                               + _encode(lit)), 5, "empty line"),
    }
    # A delta whose copy reaches past the end of the source it declares.
    copy = _delta_header(len(old), 16) + bytes([0x80 | 0x01 | 0x02 | 0x10, 0xC0, 0x0B, 0x10])
    cases["delta-copy-out-of-range"] = (
        _section(REWRITTEN, old, good, f"delta {len(copy)}\n".encode()
                 + _encode(zlib.compress(copy)) + b"\n"), 4, "copies bytes")
    return cases


HOSTILE = _hostile_cases()


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_binary_patch_is_refused_with_its_line(stack, tmp_path, case):
    diff, diff_line, words = HOSTILE[case]
    header = (f"Description: hostile\nAuthor: A <a@example.com>\nUpstream-Status: Pending\n"
              f"Upstream: up\nBase: {stack.base}\n\n---\n").encode()
    add_patch_file(stack.root, "up", "hostile.patch", header + diff)
    line = header.count(b"\n") + diff_line
    before = snapshot(tmp_path)
    for args in (("overlays",), ("status",), ("rebase", "--to", "up=main")):
        run = run_cli(stack.root, *args)
        assert run.rc == 2, (args, run.text)
        assert f"hostile.patch:{line}: " in run.err and words in run.err, (args, run.err)
        assert "Traceback" not in run.text
        assert snapshot(tmp_path) == before, args


def test_binary_patch_for_another_pre_image_is_refused_never_fuzzed(stack, tmp_path):
    from patchforge.store.diff import FileChange, make_diff

    # A valid binary patch, made against other bytes than the locked upstream has.
    wrong_base = UPSTREAM[KERNEL][:-1] + b"\x00"
    diff = make_diff([FileChange.at(KERNEL, wrong_base, FIX[KERNEL])])
    header = (f"Description: elsewhere\nAuthor: A <a@example.com>\nUpstream-Status: Pending\n"
              f"Upstream: up\nBase: {stack.base}\n\n---\n").encode()
    add_patch_file(stack.root, "up", "elsewhere.patch", header + diff)
    before = snapshot(tmp_path)
    run = run_cli(stack.root, "overlays")
    index_line = header.count(b"\n") + 2
    assert run.rc == 2 and f"elsewhere.patch:{index_line}: " in run.err, run.err
    assert "blob" in run.err and KERNEL in run.err
    assert snapshot(tmp_path) == before
    document = json.loads(run_cli(stack.root, "status", "--json").stdout)
    assert document["patches"][0]["state"] == "conflict"


def test_git_deltas_with_full_size_copies_apply_like_git(tmp_path):
    """git writes a copy of 0x10000 bytes with no size byte (size 0 means 0x10000), and copy
    offsets of up to 4 bytes: a 300 KB blob changed in two places has both."""
    from patchforge.apply.diffparse import parse_diff
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.store.diff import FileChange, make_diff

    old = _blob(300_000)
    new = old[:70_000] + b"\x00kernel\x00" + old[70_008:250_000] + b"tail" + old[250_004:]
    (fp,) = parse_diff(make_diff([FileChange.at(KERNEL, old, new)]))
    delta = fp.binary.forward.data
    assert fp.binary.forward.method == "delta"
    assert 0x10000 in _copy_sizes(delta)
    assert apply_file_patch(old, fp).content == new
    assert apply_file_patch(new, fp, reverse=True).content == old
    # The same bytes git apply makes from the same patch.
    (tmp_path / "k.co").write_bytes(old)
    (tmp_path / "p.diff").write_bytes(make_diff([FileChange.at("k.co", old, new)]))
    subprocess.run(["git", "apply", "p.diff"], cwd=tmp_path, check=True)
    assert (tmp_path / "k.co").read_bytes() == new


def _copy_sizes(delta: bytes) -> list[int]:
    """The sizes of a git delta's copy opcodes (patch-delta.c's reading, written out here)."""
    at = 0
    for _ in range(2):  # the source and result sizes
        while delta[at] & 0x80:
            at += 1
        at += 1
    sizes = []
    while at < len(delta):
        cmd = delta[at]
        at += 1
        if cmd & 0x80:
            at += bin(cmd & 0x0F).count("1")
            size = 0
            for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
                if cmd & bit:
                    size |= delta[at] << shift
                    at += 1
            sizes.append(size or 0x10000)
        else:
            at += cmd
    return sizes
