"""`bring-back` refuses a fix whose added lines upstream has at the pin already (moved,
re-wrapped, re-spelled): the overlay would have them twice. What counts as the fix's lines is
judged against the file as the fix left it, which for a kept landing upstream took back is
the file at the landing: a line upstream had elsewhere before is its own. A refusal names
where upstream has the lines, so that taking a hunk out (or `delete`) is never advised blind."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

ALPHA = b"def alpha(x):\n    y = x + 1\n    z = y * 2\n    return z\n\n\n"
BETA = b"def beta(x):\n    y = x - 1\n    z = y * 3\n    return z\n\n\n"
PAD = b"".join(b"def pad%d():\n    return %d\n\n\n" % (i, i) for i in range(8))
SYNC = b"    torch.cuda.synchronize()\n"
SYNCED_ALPHA = ALPHA.replace(b"    z = y * 2\n", b"    z = y * 2\n" + SYNC)
SYNCED_BETA = BETA.replace(b"    z = y * 3\n", b"    z = y * 3\n" + SYNC)
BETA_SYNC_LINE = (ALPHA + PAD).count(b"\n") + 4  # beta's synchronize, from 1


def test_a_reverted_landing_whose_line_upstream_had_elsewhere_before_is_brought_back(
        tmp_path):
    """One line (`torch.cuda.synchronize()` in alpha) lands and is reverted; upstream had
    the same line in beta before the landing. Status said "reverted ... bring-back puts it
    back", and bring-back refused it as doubled (beta's line counted as the fix's, against
    the fix's base where beta had none), leaving it in skipped/ with no way on that kept
    the fix. Now it is put back, and the overlay has both functions' lines."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    stack.commit({"pkg/a.py": ALPHA + PAD + SYNCED_BETA}, "beta: synchronize (#9)")
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + SYNCED_BETA},
                           "alpha: synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": ALPHA + PAD + SYNCED_BETA},
                 f'Revert "alpha: synchronize (#11)"\n\nThis reverts commit {landing}.',
                 tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "`patchforge bring-back up/fa.patch` puts it back" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, err = stack.cli("bring-back", "up/fa.patch")
    assert "is back at the end of the series" in out, out + err
    assert stack.series("up") == ["fa.patch"]
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == SYNCED_ALPHA + PAD + SYNCED_BETA, overlay.decode()
    stack.cli("check")
    stack.cli("status")


def test_a_refused_bring_back_names_where_upstream_has_the_lines(tmp_path):
    """A fix a rebase set aside (never landed) adds the line; upstream meanwhile adds the same
    line in beta. Whether that is the fix made upstream's way or other code reading the same
    only a person can tell: the refusal stands, and it names pkg/a.py and beta's line, so
    that its ways on (take the hunk out, `delete`) are not followed blind, and `--allow-doubled`
    puts it back beside other code. Before, it named the fix's hunk only and advised taking it
    out or deleting the fix: both lose it where upstream's line is other code."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    stack.commit({"pkg/a.py": ALPHA.replace(b"y * 2", b"y * 4") + PAD + BETA}, "Four",
                 tag="v2")
    stack.cli("rebase", "--to", "v2", expect=3)
    stack.cli("rebase", "--skip", expect=1)
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    stack.commit({"pkg/a.py": ALPHA + PAD + SYNCED_BETA}, "beta: synchronize", tag="v3")
    stack.cli("rebase", "--to", "v3", expect=1)
    before = (stack.root / "series/up/skipped/fa.patch").read_bytes()
    _, out, err = stack.cli("bring-back", "fa", expect=2)
    assert "adds lines upstream has at the pin (v3) already" in err, err
    assert f"pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line {BETA_SYNC_LINE})" \
        in err, err
    assert "if it is other code that only reads the same, `patchforge bring-back fa " \
        "--allow-doubled` puts the fix back beside it" in err, err
    assert (stack.root / "series/up/skipped/fa.patch").read_bytes() == before
    assert stack.series("up") == []
    # Seen to be other code: the way on the hint names puts the fix back beside it.
    stack.cli("bring-back", "--continue", "--allow-doubled", expect=2)
    _, out, _ = stack.cli("bring-back", "fa", "--allow-doubled")
    assert "beside upstream's lines that read the same, as asked (--allow-doubled): " \
        f"pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line {BETA_SYNC_LINE})" in out, out
    assert stack.series("up") == ["fa.patch"]
    assert not (stack.root / "series/up/skipped/fa.patch").exists()
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == SYNCED_ALPHA + PAD + SYNCED_BETA, overlay.decode()
    stack.cli("check")


STEPS = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, i) for i in range(1, 20))
LONG_ALPHA = b"def alpha(x):\n    step0 = x\n" + STEPS + b"    return step19\n\n\n"
CHECK = b"    if x is None:\n        raise ValueError('x is needed')\n"
THEIR_CHECK = b'    if x is None:\n        raise ValueError("x is needed")\n'


def test_a_fix_upstream_landed_again_its_own_way_after_a_revert_is_not_put_back_beside_it(
        tmp_path):
    """A guard at alpha's top lands (#11) and is kept under upstreamed/; upstream reverts #11,
    then lands the guard again its own way (double quotes) a line lower in alpha (#12). Status
    said only "possibly doubled", and the bring-back it advised put the guard back beside
    upstream's, exit 0, every check green: alpha checked twice. A copy a commit after the
    revert put in the fix's own function is the fix landed again: status says so, names the
    line, and bring-back stops on it (the fix left in skipped/, nothing doubled)."""
    base = LONG_ALPHA + BETA
    fixed = base.replace(b"def alpha(x):\n", b"def alpha(x):\n" + CHECK)
    again = base.replace(b"    step0 = x\n", b"    step0 = x\n" + THEIR_CHECK)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: check x (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    back = stack.commit({"pkg/a.py": base},
                        f'Revert "alpha: check x (#11)"\n\nThis reverts commit {landing}.')
    relanded = stack.commit({"pkg/a.py": again}, "alpha: check x again (#12)", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert said["by"] == back, said
    assert f"{relanded[:12]} put them in alpha again since: landed again its own way, it " \
        "seems: a bring-back stops on it (look at pkg/a.py line 3)" in said["detail"], said
    assert "possibly doubled" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line 3)" in err, err
    assert stack.series("up") == []
    assert (stack.root / "series/up/skipped/fa.patch").is_file()
    # Seen to be the fix's change: deleted, kept under deleted/; the pin's guard checks once.
    stack.cli("delete", "fa")
    assert not (stack.root / "series/up/skipped/fa.patch").exists()
    stack.cli("overlays")
    assert not (stack.root / "overlays/up/pkg/a.py").exists()
    stack.cli("check")


def test_a_landing_broader_than_the_fix_reverted_then_made_upstreams_way_is_not_doubled(
        tmp_path):
    """The fix synchronizes in alpha. Upstream's landing PR (#11) adds the same call in alpha
    and in beta; its revert takes both out; upstream then makes the fix its own way: alpha
    calls a new settle() that synchronizes. Counted against the landing's file (two calls)
    the pin's one call was no copy, and bring-back put the fix back beside settle's, exit 0,
    every check green: alpha synchronized twice. Counted against the file the revert left
    with the fix put back (one call), the pin's is one: refused, naming where it is."""
    top_alpha = ALPHA.replace(b"    y = x + 1\n", b"    y = settle(x) + 1\n") + \
        b"def settle(x):\n" + SYNC + b"    return x\n\n\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + SYNCED_BETA},
                           "Synchronize alpha and beta (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha and beta (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": top_alpha + PAD + BETA}, "alpha: settle first", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "`patchforge bring-back up/fa.patch` puts it back" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    settle_line = top_alpha.count(b"\n") - 3  # settle's synchronize, from 1
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert f"pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line {settle_line})" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()
    # Seen to be other code (settle is called elsewhere too, say): put back beside it.
    _, out, _ = stack.cli("bring-back", "fa", "--allow-doubled")
    assert "as asked (--allow-doubled)" in out, out
    assert stack.series("up") == ["fa.patch"]


def test_a_fix_reverted_then_made_in_a_new_helper_is_not_put_back_beside_it(tmp_path):
    """The fix synchronizes in alpha; it lands (#11, alpha alone) and is reverted; upstream
    then makes it its own way: alpha calls a new settle() that synchronizes. Status said only
    "possibly doubled" and the advised bring-back put the fix back beside settle's, exit 0,
    every check green: alpha synchronized twice. A copy in a function new since the fix's
    base, put there after the revert, is the fix landed again: said so, and refused."""
    top_alpha = ALPHA.replace(b"    y = x + 1\n", b"    y = settle(x) + 1\n") + \
        b"def settle(x):\n" + SYNC + b"    return x\n\n\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    settled = stack.commit({"pkg/a.py": top_alpha + PAD + BETA}, "alpha: settle first",
                           tag="v3")
    settle_line = top_alpha.count(b"\n") - 3  # settle's synchronize, from 1
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert f"{settled[:12]} put them in settle, a function new since the fix's base, since: " \
        "landed again its own way, it seems: a bring-back stops on it (look at pkg/a.py line " \
        f"{settle_line})" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert f"pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line {settle_line})" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_new_function_the_fix_function_never_calls_is_no_re_land(tmp_path):
    """As above, but the new function (gamma, a kernel wrapper at the file's end) is one alpha
    never calls: other code that synchronizes too. It was said "landed again its own way",
    status advising `delete` (which lost a fix upstream reverted and never made again) and
    bring-back refusing; the fix goes back, "possibly doubled" at most."""
    gamma = b"def gamma(q):\n    r = launch_gamma(q)\n" + SYNC + b"    return r\n\n\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA + gamma}, "Add the gamma kernel wrapper",
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"] and "delete" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes().count(SYNC) == 2


def test_a_revert_that_puts_the_guard_back_its_own_way_a_line_lower_is_said_and_stopped_on(
        tmp_path):
    """The revert of the guard's landing itself writes the guard again a line lower, other
    quotes: no commit after it put the copy there, so status says the function has the lines
    again (never a commit that did not), and bring-back stops on it as on any re-land."""
    base = LONG_ALPHA + BETA
    fixed = base.replace(b"def alpha(x):\n", b"def alpha(x):\n" + CHECK)
    again = base.replace(b"    step0 = x\n", b"    step0 = x\n" + THEIR_CHECK)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: check x (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    back = stack.commit({"pkg/a.py": again},
                        f'Revert "alpha: check x (#11)"\n\nThis reverts commit {landing}.',
                        tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert f"{back[:12]}, a revert of the landing, took them out of their place, and they " \
        "are in alpha again since: landed again its own way, it seems: a bring-back stops on " \
        "it (look at pkg/a.py line 3)" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch", expect=2)
    assert stack.series("up") == []


KERNEL_STEPS = b"".join(b"    step%d = kernel%d(step%d)\n" % (i, i, i - 1) for i in range(2, 16))
KERNEL_ALPHA = (b"def alpha(x):\n    step0 = x\n    step1 = kernel1(step0)\n" + KERNEL_STEPS
                + b"    return step15\n\n\n")


def _landed_beside_upstreams_copy_then_reverted(tmp_path, tag: str | None = None):
    """A synchronize lands after alpha's kernel1 (#11, kept); upstream adds its own after
    kernel12 (#12), then reverts #11 alone (tagged `tag`). The stack, the file at #12, and
    the file the revert left."""
    base = KERNEL_ALPHA + BETA
    fixed = base.replace(b"kernel1(step0)\n", b"kernel1(step0)\n" + SYNC)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: synchronize after kernel1 (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    both = fixed.replace(b"kernel12(step11)\n", b"kernel12(step11)\n" + SYNC)
    stack.commit({"pkg/a.py": both}, "alpha: synchronize after kernel12 too (#12)")
    reverted = both.replace(b"kernel1(step0)\n" + SYNC, b"kernel1(step0)\n")
    stack.commit({"pkg/a.py": reverted}, 'Revert "alpha: synchronize after kernel1 (#11)"'
                 f"\n\nThis reverts commit {landing}.", tag=tag)
    return stack, both, reverted


def test_a_copy_upstream_had_beside_the_landed_fix_before_its_revert_is_no_re_land(tmp_path):
    """A synchronize lands after alpha's kernel1 (#11); upstream then adds its own after
    kernel12 in alpha (#12), beside the landed one, and later reverts #11 alone. The copy was
    in alpha before the revert: upstream's other code, not the fix landed again. Status said
    "landed again its own way" and advised `delete` (losing a fix upstream reverted and never
    made again); now it says the fix is possibly doubled, and bring-back puts it back."""
    stack, both, _ = _landed_beside_upstreams_copy_then_reverted(tmp_path, tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "landed again" not in out and "patchforge delete" not in out, out
    assert "a bring-back puts it back (possibly doubled: look at pkg/a.py line 15)" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/a.py").read_bytes() == both


def _launch(kind: bytes, arg: bytes) -> bytes:
    body = b"".join(b"  %s v%d = v%d * 2;\n" % (kind, i, i - 1) for i in range(1, 12))
    return (b"void launch(%s %s) {\n  %s v0 = %s;\n" % (kind, arg, kind, arg) + body
            + b"  kernel<<<1, 64>>>(v11);\n  report(v11);\n}\n\n")


def test_a_check_upstream_adds_to_another_overload_after_a_revert_is_no_re_land(tmp_path):
    """C++ overloads share a name: a launch check lands in `launch(int)` (#11), is reverted,
    then upstream adds the same check to `launch(float)` (#12). Status said the fix "landed
    again its own way" and bring-back refused it as doubling; the overload is another
    function: said possibly doubled, and put back, one check per overload."""
    check, launch = b"  C10_CUDA_KERNEL_LAUNCH_CHECK();\n", b"  kernel<<<1, 64>>>(v11);\n"
    base = b"#include <c10/cuda/CUDAException.h>\n\n" + _launch(b"int", b"n") \
        + _launch(b"float", b"x")
    fixed = base.replace(launch, launch + check, 1)
    k = base.rindex(launch) + len(launch)
    stack = OneUpstreamStack(tmp_path, {"csrc/k.cu": base})
    stack.add_fix("fa", "csrc/k.cu", base, fixed)
    landing = stack.commit({"csrc/k.cu": fixed}, "launch: check the launch (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"csrc/k.cu": base},
                 f'Revert "launch: check the launch (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"csrc/k.cu": base[:k] + check + base[k:]},
                 "launch(float): check the launch (#12)", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "landed again" not in out and "patchforge delete" not in out, out
    assert "a bring-back puts it back (possibly doubled: look at csrc/k.cu line 34)" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("overlays")
    deployed = (stack.root / "overlays/up/csrc/k.cu").read_bytes()
    assert deployed == fixed[:k + len(check)] + check + fixed[k + len(check):]



def relanded_is_said_and_refused(stack: OneUpstreamStack, path: str, line: bytes) -> None:
    """status at v3 says the fix landed again; bring-back refuses it (exit 2); the overlay
    then has upstream's copy of `line` alone."""
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again its own way" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch", expect=2)
    stack.cli("overlays", expect=None)
    # No fix of the series is left on the file: upstream's own, its one copy, is deployed.
    assert not (stack.root / "overlays/up" / path).exists()
    assert (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_re_land_after_upstreams_own_copy_elsewhere_in_the_function_is_said(tmp_path):
    """Upstream synchronized after kernel12 too (#12), reverted the fix's #11, then made the
    fix again its own way a line lower (#13): the function had upstream's other copy before the
    revert, and that stopped the search: said "possibly doubled", and bring-back put the fix
    back, three synchronize lines. A later commit that adds one more copy than the revert left
    is the re-land."""
    stack, _, reverted = _landed_beside_upstreams_copy_then_reverted(tmp_path)
    stack.commit({"pkg/a.py": reverted.replace(b"kernel2(step1)\n", b"kernel2(step1)\n" + SYNC)},
                 "alpha: wait for kernel1 and kernel2 (#13)", tag="v3")
    relanded_is_said_and_refused(stack, "pkg/a.py", SYNC)


C_CHECK = b"  C10_CUDA_KERNEL_LAUNCH_CHECK();\n"


def test_a_re_land_in_the_fixs_function_whose_parameters_changed_is_said(tmp_path):
    """Upstream made the fix again in launch() while adding a parameter to it: the definition
    told that copy from the fix's function as another overload's, and bring-back put the fix
    back beside it. The definition tells overloads apart only where the old one is still in
    the file."""
    body = b"".join(b"  int v%d = v%d * 2;\n" % (i, i - 1) for i in range(1, 12))
    call = b"  kernel<<<1, 64>>>(v11);\n"
    base = (b"#include <c10/cuda/CUDAException.h>\n\nvoid launch(int n) {\n  int v0 = n;\n"
            + body + call + b"  report(v11);\n}\n\nint version() {\n  return 1;\n}\n")
    stack = OneUpstreamStack(tmp_path, {"csrc/k.cu": base})
    stack.add_fix("fa", "csrc/k.cu", base, base.replace(call, call + C_CHECK))
    landing = stack.commit({"csrc/k.cu": base.replace(call, call + C_CHECK)},
                           "launch: check the launch (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"csrc/k.cu": base}, 'Revert "launch: check the launch (#11)"'
                 f"\n\nThis reverts commit {landing}.")
    again = base.replace(b"void launch(int n) {", b"void launch(int n, hipStream_t stream) {") \
        .replace(b"  int v0 = n;\n", b"  int v0 = n;\n  use(stream);\n") \
        .replace(b"  report(v11);\n", b"  report(v11);\n" + C_CHECK)
    stack.commit({"csrc/k.cu": again}, "launch: on the caller's stream, checked (#12)",
                 tag="v3")
    relanded_is_said_and_refused(stack, "csrc/k.cu", C_CHECK)


def test_a_new_helper_called_as_a_template_is_called(tmp_path):
    """The C++ twin of the settle() re-land: alpha calls `settle<int>(n)`, which a search for
    `settle(` did not see, so the fix went back beside the helper's check."""
    alpha = (b"void alpha(float* x, int n) {\n  int y = n + 1;\n  kernel<<<1, 64>>>(x, y);\n"
             b"  int z = y * 2;\n  record(z);\n}\n\n")
    beta = b"void beta(float* x, int n) {\n  int y = n - 1;\n  record(y * 3);\n}\n\n"
    pad = b"".join(b"int pad%d() { return %d; }\n\n" % (i, i) for i in range(8))
    head = b"#include <c10/cuda/CUDAException.h>\n\n"
    base = head + alpha + pad + beta
    fixed = base.replace(b"(x, y);\n", b"(x, y);\n" + C_CHECK)
    settle = b"template <typename T>\nT settle(T v) {\n" + C_CHECK + b"  return v;\n}\n\n"
    stack = OneUpstreamStack(tmp_path, {"csrc/k.cu": base})
    stack.add_fix("fa", "csrc/k.cu", base, fixed)
    landing = stack.commit({"csrc/k.cu": fixed}, "alpha: check the launch (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"csrc/k.cu": base}, 'Revert "alpha: check the launch (#11)"'
                 f"\n\nThis reverts commit {landing}.")
    relanded = head + alpha.replace(b"  int y = n + 1;\n", b"  int y = settle<int>(n) + 1;\n") \
        + settle + pad + beta
    stack.commit({"csrc/k.cu": relanded}, "alpha: settle after the launch", tag="v3")
    relanded_is_said_and_refused(stack, "csrc/k.cu", C_CHECK)


def kernel(n: int) -> bytes:
    steps = b"".join(b"    step%d = step%d + %d\n" % (i, i - 1, 100 * n + i) for i in range(1, 10))
    return b"def k%d(x):\n    step0 = x\n" % n + steps + b"    return step9\n"


KERNELS = b'"""Kernels."""\nimport torch\n' + b"".join(b"\n\n" + kernel(n) for n in range(4))
GUARD = b"    if x is None and not torch.cuda.is_available():\n        raise ValueError('x is needed')\n"


def guarded(text: bytes, n: int, guard: bool = True, sync: bool = True) -> bytes:
    new = kernel(n)
    if guard:
        new = new.replace(b"    step0 = x\n", GUARD + b"    step0 = x\n")
    if sync:
        new = new.replace(b"    return step9\n", SYNC + b"    return step9\n")
    return text.replace(kernel(n), new)


def test_a_guard_dropped_alone_whose_twin_landed_in_the_same_commit_is_brought_back(tmp_path):
    """kfix (k1's guard and a synchronize before its return) and kfix2 (the same guard in k2)
    land in one upstream commit; upstream then drops k1's guard alone. Said taken back in part,
    rightly; the advised bring-back was refused as doubled naming k2's guard (the fix's lines
    were counted against the landing's parent, where the whole fix applies, not against the
    file the drop left, where its synchronize is still upstream). It goes back once."""
    fixed = guarded(KERNELS, 1)
    both = guarded(fixed, 2, sync=False)
    stack = OneUpstreamStack(tmp_path, {"pkg/k.py": KERNELS})
    stack.add_fix("kfix", "pkg/k.py", KERNELS, fixed)
    stack.add_fix("kfix2", "pkg/k.py", fixed, both)
    stack.commit({"pkg/k.py": both}, "k1, k2: guards (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/k.py": guarded(guarded(KERNELS, 1, guard=False), 2, sync=False)},
                 "Tidy the kernels", tag="v3")
    _, out, _ = stack.cli("status", "--against", "v3", expect=1)
    assert "`patchforge bring-back up/kfix.patch` puts it back" in out, out
    stack.cli("rebase", "--to", "v3", expect=1)
    _, out, err = stack.cli("bring-back", "up/kfix.patch")
    assert "is back at the end of the series" in out, out + err
    stack.cli("overlays")
    assert (stack.root / "overlays/up/pkg/k.py").read_bytes() == both


SYNCHRONIZED = (b"def synchronized(fn):\n    def run(*args, **kwargs):\n"
                b"        out = fn(*args, **kwargs)\n" + SYNC.replace(b"    ", b"        ") +
                b"        return out\n\n    return run\n\n\n")


def test_a_fix_reverted_then_made_in_a_new_decorator_is_not_put_back_beside_it(tmp_path):
    """As test_a_fix_reverted_then_made_in_a_new_helper_is_not_put_back_beside_it, but alpha
    reaches the new helper by a decorator (`@synchronized`), no call, and the copy is in the
    decorator's wrapper: said "possibly doubled" only, and the bring-back put the fix back
    beside it, alpha synchronizing twice. Now said landed again, and refused."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    made = stack.commit({"pkg/a.py": SYNCHRONIZED + b"@synchronized\n" + ALPHA + PAD + BETA},
                        "alpha: synchronized", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert f"{made[:12]} put them in synchronized.run, a function new since the fix's base, " \
        "since: landed again its own way, it seems: a bring-back stops on it (look at pkg/a.py " \
        "line 4)" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert "pkg/a.py hunk 1 (upstream has its lines at pkg/a.py line 4)" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_new_decorator_on_another_function_is_no_re_land(tmp_path):
    """Its neighbour: the new decorator is on beta, not on the fix's alpha: other code, and
    the fix goes back ("possibly doubled" at most)."""
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": SYNCHRONIZED + ALPHA + PAD + b"@synchronized\n" + BETA},
                 "beta: synchronized", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert SYNCED_ALPHA in overlay and overlay.count(b"torch.cuda.synchronize()") == 2


def test_a_method_of_a_new_class_the_fix_function_only_constructs_is_no_re_land(tmp_path):
    """alpha's reverted synchronize; upstream then adds `class Timer` whose `stop()`
    synchronizes, and alpha makes a `Timer()` but never calls `stop`. Was: said landed again
    in Timer.stop and the bring-back refused, the fix left in skipped/. A constructor call
    reaches `__init__` only: the fix goes back."""
    timer = (b"class Timer:\n    def __init__(self):\n        self.start = 0\n\n"
             b"    def stop(self):\n" + SYNC.replace(b"    ", b"        ") +
             b"        return 1\n\n\n")
    timed_alpha = ALPHA.replace(b"    y = x + 1\n", b"    t = Timer()\n    y = x + 1\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": timer + timed_alpha + PAD + BETA}, "alpha: make a timer",
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]


_HIP = b"#include <hip/hip_runtime.h>\n\n"
_LAUNCH = (b"void launch(float* x, int n, hipStream_t s) {\n    int blocks = (n + 63) / 64;\n"
           b"    kernel<<<blocks, 64, 0, s>>>(x, n);\n    record(x, n);\n}\n\n")
_CPAD = b"".join(b"int pad%d() {\n    return %d;\n}\n\n" % (i, i) for i in range(8))
_HIPSYNC = b"    hipStreamSynchronize(s);\n"
_CLASS_REACHED = {
    # `with Synced():` runs __enter__/__exit__, `Synced()(x)` runs __call__: no name of them
    # in alpha, reached as surely as __init__.
    "exit": ("pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA,
             b"class Synced:\n    def __enter__(self):\n        return self\n\n"
             b"    def __exit__(self, *exc):\n    " + SYNC + b"        return False\n\n\n"
             b"def alpha(x):\n    with Synced():\n        y = x + 1\n    z = y * 2\n"
             b"    return z\n\n\n" + PAD + BETA, "Synced.__exit__", 6),
    "call": ("pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA,
             b"class Synced:\n    def __init__(self):\n        self.n = 0\n\n"
             b"    def __call__(self, z):\n    " + SYNC + b"        return z\n\n\n"
             b"def alpha(x):\n    x = Synced()(x)\n    y = x + 1\n    z = y * 2\n"
             b"    return z\n\n\n" + PAD + BETA, "Synced.__call__", 6),
    # C++ RAII, `auto g = SyncGuard(s);`: its destructor runs when launch returns, its
    # constructor (the class's own name) at once.
    "dtor": ("pkg/k.cu", _HIP + _LAUNCH + _CPAD,
             _HIP + _LAUNCH.replace(b"(x, n);\n    record", b"(x, n);\n" + _HIPSYNC
                                    + b"    record") + _CPAD,
             _HIP + b"struct SyncGuard {\n    hipStream_t s;\n"
             b"    explicit SyncGuard(hipStream_t s_) : s(s_) {}\n    ~SyncGuard() {\n    "
             + _HIPSYNC + b"    }\n};\n\n"
             + _LAUNCH.replace(b"    int blocks", b"    auto g = SyncGuard(s);\n    int blocks")
             + _CPAD, "SyncGuard::~SyncGuard", 7),
    "ctor": ("pkg/k.cu", _HIP + _LAUNCH + _CPAD,
             _HIP + _LAUNCH.replace(b"(x, n);\n    record", b"(x, n);\n" + _HIPSYNC
                                    + b"    record") + _CPAD,
             _HIP + b"struct SyncGuard {\n    hipStream_t s;\n"
             b"    explicit SyncGuard(hipStream_t s_) : s(s_) {\n    " + _HIPSYNC
             + b"    }\n};\n\n"
             + _LAUNCH.replace(b"    int blocks", b"    auto g = SyncGuard(s);\n    int blocks")
             + _CPAD, "SyncGuard::SyncGuard", 6),
}


@pytest.mark.parametrize("kind", sorted(_CLASS_REACHED))
def test_a_fix_reverted_then_made_in_a_special_method_of_a_class_it_constructs_is_not_put_back(
        tmp_path, kind):
    """The fix's synchronize lands, is reverted, then upstream makes it again in a method of a
    new class the fix's function constructs that the language runs unnamed: Python's
    `__exit__` (`with Synced():`) or `__call__` (`Synced()(x)`), a C++ destructor or
    constructor (`auto g = SyncGuard(s);`). Was (a constructed class reaching `__init__`
    only): said "possibly doubled", and the bring-back put the fix back beside the copy,
    exit 0, synchronizing twice. Now said landed again there, and refused."""
    path, base, fixed, made_again, where, line = _CLASS_REACHED[kind]
    stack = OneUpstreamStack(tmp_path, {path: base})
    stack.add_fix("fa", path, base, fixed)
    landing = stack.commit({path: fixed}, "Synchronize (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({path: base}, f'Revert "Synchronize (#11)"\n\nThis reverts commit {landing}.')
    made = stack.commit({path: made_again}, "synchronize its own way", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert f"{made[:12]} put them in {where}, a function new since the fix's base, since: " \
        f"landed again its own way" in said["detail"], said
    assert f"look at {path} line {line})" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert f"{path} hunk 1 (upstream has its lines at {path} line {line})" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


@pytest.mark.parametrize("method", ["__repr__", "__str__", "__init__", "__exit__", "__call__"])
def test_a_special_method_constructing_never_runs_is_no_re_land(tmp_path, method):
    """alpha's reverted synchronize; upstream then adds `class Synced` with the synchronize in
    `METHOD`, and alpha only makes one (`s = Synced()`). Making the object runs `__init__`, a
    re-land, refused; never `__repr__` nor `__str__` (printing it does), nor `__exit__` or
    `__call__` of an object alpha never enters nor calls. Was: every dunder method read as
    run, said landed again there and the bring-back refused, the fix left in skipped/ with
    only `--allow-doubled` as the way on. Now the fix goes back."""
    synced = (b"class Synced:\n    def __new__(cls):\n        return super().__new__(cls)\n\n"
              if method == "__init__" else
              b"class Synced:\n    def __init__(self):\n        self.n = 0\n\n")
    synced += (b"    def %s(self):\n    " % method.encode() + SYNC
               + (b"        self.n = 0\n\n\n" if method == "__init__"
                  else b"        return 'Synced'\n\n\n"))
    made_alpha = ALPHA.replace(b"    y = x + 1\n", b"    s = Synced()\n    y = x + 1\n")
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": synced + made_alpha + PAD + BETA}, "alpha: make a Synced",
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    stack.cli("rebase", "--to", "v3", expect=1)
    if method == "__init__":
        assert "put them in Synced.__init__, a function new since the fix's base, since: " \
            "landed again its own way" in said["detail"], said
        stack.cli("bring-back", "up/fa.patch", expect=2)
        assert stack.series("up") == []
    else:
        assert "landed again" not in said["detail"], said
        assert "a bring-back puts it back" in said["detail"], said
        stack.cli("bring-back", "up/fa.patch")
        assert stack.series("up") == ["fa.patch"]


@pytest.mark.parametrize("method, use", [
    ("__exit__", b"    s = Synced()\n    with s:\n        y = x + 1\n"),
    ("__call__", b"    s = Synced()\n    y = s(x) + 1\n"),
    ("__call__", b"    y = Synced()(x) + 1\n"),
    ("__exit__", b"    s = Synced()\n\n    def run():\n        with s:\n            return x + 1\n\n"
                 b"    y = run()\n"),
    ("__call__", b"    s = Synced()\n    y = (lambda: s(x))() + 1\n"),
    ("__call__", b"    s = Synced()\n\n    def run(v):\n        return s(v)\n\n    y = run(x) + 1\n")],
    ids=["with-name", "call-name", "call-made", "with-in-nested-def", "call-in-lambda",
         "call-in-nested-def"])
def test_a_special_method_of_an_object_the_fix_function_uses_is_a_re_land(tmp_path, method, use):
    """Neighbour: alpha makes a Synced and enters it (`with s:`) or calls it (`s(x)`,
    `Synced()(x)`), also from a function nested in it (`def run(): with s: ...`): that runs
    `__exit__`, `__call__`, the synchronize made again, refused. (The nested function's use
    was not seen: said possibly doubled, and the bring-back synchronized twice.)"""
    synced = (b"class Synced:\n    def __init__(self):\n        self.n = 0\n\n"
              b"    def __enter__(self):\n        return self\n\n"
              b"    def %s(self, *args):\n    " % method.encode() + SYNC +
              b"        return args[0] if args else False\n\n\n")
    made_alpha = ALPHA.replace(b"    y = x + 1\n", use)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": ALPHA + PAD + BETA})
    stack.add_fix("fa", "pkg/a.py", ALPHA + PAD + BETA, SYNCED_ALPHA + PAD + BETA)
    landing = stack.commit({"pkg/a.py": SYNCED_ALPHA + PAD + BETA}, "Synchronize alpha (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": ALPHA + PAD + BETA},
                 f'Revert "Synchronize alpha (#11)"\n\nThis reverts commit {landing}.')
    stack.commit({"pkg/a.py": synced + made_alpha + PAD + BETA}, "alpha: synchronize its way",
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert f"put them in Synced.{method}, a function new since the fix's base, since: " \
        "landed again its own way" in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch", expect=2)
    assert stack.series("up") == []


def test_a_new_decorator_on_a_same_named_method_of_another_class_is_no_re_land(tmp_path):
    """B.forward's reverted synchronize; upstream then puts a new `@synchronized` (its
    wrapper synchronizes) on A.forward only. Was: said B's fix landed again and the
    bring-back refused. The decorator must be on the fix's own `def`: the fix goes back."""
    sync = b"    " + SYNC
    a = b"class A:\n    def forward(self, x):\n        y = x + 1\n        z = y * 2\n" \
        b"        return z\n\n\n"
    b = b"class B:\n    def forward(self, x):\n        y = x - 1\n        z = y * 3\n" \
        b"        return z\n\n\n"
    synced_b = b.replace(b"        z = y * 3\n", b"        z = y * 3\n" + sync)
    head = b"import torch\n\n\n"
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": head + a + PAD + b})
    stack.add_fix("fb", "pkg/a.py", head + a + PAD + b, head + a + PAD + synced_b)
    landing = stack.commit({"pkg/a.py": head + a + PAD + synced_b}, "Synchronize B (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": head + a + PAD + b},
                 f'Revert "Synchronize B (#11)"\n\nThis reverts commit {landing}.')
    decorated_a = a.replace(b"    def forward", b"    @synchronized\n    def forward")
    stack.commit({"pkg/a.py": head + SYNCHRONIZED + decorated_a + PAD + b}, "A: synchronized",
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fb.patch")
    stack.cli("overlays")
    assert synced_b in (stack.root / "overlays/up/pkg/a.py").read_bytes()


def test_a_re_land_below_another_functions_same_line_is_said_and_refused(tmp_path):
    """beta, above alpha, synchronizes (upstream's own line, before the fix); the fix's
    synchronize in alpha lands (#11, kept), is reverted, and upstream makes it again its own
    way two lines higher in alpha (#13). Only the first copy in the file, beta's, was asked
    whether upstream made the fix again: another function's, so status said "possibly
    doubled" and the bring-back it advised put the fix's line back beside upstream's, alpha
    synchronizing twice, exit 0. Each copy is asked: alpha's is the re-land, said and
    refused."""
    alpha = KERNEL_ALPHA
    base = SYNCED_BETA + PAD + alpha
    fixed = base.replace(b"kernel3(step2)\n", b"kernel3(step2)\n" + SYNC)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: synchronize after kernel3 (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    assert (stack.root / "series/up/upstreamed/fa.patch").is_file()
    stack.commit({"pkg/a.py": base}, 'Revert "alpha: synchronize after kernel3 (#11)"'
                 f"\n\nThis reverts commit {landing}.")
    again = base.replace(b"kernel1(step0)\n", b"kernel1(step0)\n" + SYNC)
    stack.commit({"pkg/a.py": again}, "alpha: synchronize after kernel1 (#13)", tag="v3")
    relanded_is_said_and_refused(stack, "pkg/a.py", SYNC)


def test_a_second_copy_in_another_function_after_the_revert_is_no_re_land(tmp_path):
    """Neighbour: upstream's commit after the revert adds the line to beta again, not to
    alpha: every copy is another function's, the fix is said "possibly doubled" and brought
    back, alpha's line once."""
    base = SYNCED_BETA + PAD + KERNEL_ALPHA
    fixed = base.replace(b"kernel3(step2)\n", b"kernel3(step2)\n" + SYNC)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "alpha: synchronize after kernel3 (#11)",
                           tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": base}, 'Revert "alpha: synchronize after kernel3 (#11)"'
                 f"\n\nThis reverts commit {landing}.")
    beta_twice = base.replace(b"    z = y * 3\n" + SYNC, b"    z = y * 3\n" + SYNC + SYNC)
    stack.commit({"pkg/a.py": beta_twice}, "beta: synchronize twice", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    stack.cli("overlays")
    overlay = (stack.root / "overlays/up/pkg/a.py").read_bytes()
    assert overlay == fixed.replace(b"    z = y * 3\n" + SYNC, b"    z = y * 3\n" + SYNC + SYNC)


TF32 = b"torch.backends.cuda.matmul.allow_tf32 = False\n"
MODULE = b"import torch\n\n\n" + LONG_ALPHA + BETA + PAD


def test_a_top_level_line_landed_again_after_a_revert_is_not_put_back_beside_it(tmp_path):
    """The fix's line at the module's top level lands (#11), is reverted, then upstream puts
    the same line at the top level further down (#12).
    No function holds either copy, so the copy was not read as the fix made again: said
    "possibly doubled", and the bring-back put the line back beside upstream's, exit 0, the
    setting made twice. A copy no function holds, put there after the revert, is the fix
    landed again: said so, and the bring-back stops on it. (Not in a file of no language
    known here: a common line of a workflow in another step is other code.)"""
    path, base = "pkg/a.py", MODULE
    fixed = base.replace(b"import torch\n", b"import torch\n" + TF32)
    again = base + TF32
    stack = OneUpstreamStack(tmp_path, {path: base})
    stack.add_fix("fa", path, base, fixed)
    landing = stack.commit({path: fixed}, "No TF32 (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    back = stack.commit({path: base}, f'Revert "No TF32 (#11)"\n\nThis reverts commit {landing}.')
    relanded = stack.commit({path: again}, "No TF32, at the end (#12)", tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert said["by"] == back, said
    line = again.count(b"\n")
    assert f"{relanded[:12]} put them in the file's top level again since: landed again its " \
        f"own way, it seems: a bring-back stops on it (look at {path} line {line})" in \
        said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    _, _, err = stack.cli("bring-back", "up/fa.patch", expect=2)
    assert f"{path} hunk 1 (upstream has its lines at {path} line {line})" in err, err
    assert stack.series("up") == [] and (stack.root / "series/up/skipped/fa.patch").is_file()


def test_a_top_level_line_the_file_had_elsewhere_before_the_landing_is_put_back(tmp_path):
    """The mirror: the module had the line at the end before the fix put it at the top; the
    landing is reverted: the copy at the end is upstream's other code, no re-land, and the
    bring-back puts the fix back."""
    base = MODULE + TF32
    fixed = base.replace(b"import torch\n", b"import torch\n" + TF32)
    stack = OneUpstreamStack(tmp_path, {"pkg/a.py": base})
    stack.add_fix("fa", "pkg/a.py", base, fixed)
    landing = stack.commit({"pkg/a.py": fixed}, "No TF32 (#11)", tag="v2")
    stack.cli("rebase", "--to", "v2")
    stack.commit({"pkg/a.py": base}, f'Revert "No TF32 (#11)"\n\nThis reverts commit {landing}.',
                 tag="v3")
    (said,) = stack.json("status", "--against", "v3", expect=1)["reverted"]
    assert "landed again" not in said["detail"], said
    stack.cli("rebase", "--to", "v3", expect=1)
    stack.cli("bring-back", "up/fa.patch")
    assert stack.series("up") == ["fa.patch"]
