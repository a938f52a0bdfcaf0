"""A fix in one of two identical ("twin") functions, which upstream reorders while it makes the
fix's change in the other twin only: the fix's own function is still without it, so the fix has
not landed and must be kept.

k.py (or k.cu) holds scale_a and scale_b with the same body; the fix changes scale_a (a line
added, or a line changed). Upstream, between the pin and the target, swaps the two (scale_b
first), or moves scale_a to the file's end, and makes the fix's change in scale_b. Before,
`status --against` said "upstreamed (high)" and `rebase --to` dropped the fix to upstreamed/,
exit 0, scale_a deployed without it: the hunk's pre-image still applies to scale_a (at an
offset, or with fuzz at the file's end), its reverse-apply finds scale_b, and git's merge,
whose line map carries the fix's place onto scale_b, changes nothing (or the history's commit,
which made the change in scale_b, decided it); where scale_a's pre-image needed fuzz, the
reverse-apply found in scale_b stood alone, the own place mapped onto it as well.

Now the function the change is found in decides (detect._twin_function): the hunk's function
is the definition line above its first change in the base file (git's default funcname rule:
a line starting with a letter, `_` or `$`), and a copy of the change under another definition
line, while the code without it is in the file too, is another function's: not landed, for the
merge and the history alike. Twins are code the base file had twice: a helper upstream made
of the fix's function (its body moved there with the change, the wrapper keeping the old
docstring) is not one. The other way round, the change made in scale_a only, the reordered
scale_b without it, is a landing, never a fix put into scale_b. Landings are still dropped: the
change made in both twins, and an added
function that ends as its neighbour does (whose pre-image is then found inside the added code:
AITER's 5bd9adf3d3). Real git upstreams, real
commands: `status --against`, `rebase --to`, `overlays`."""
from __future__ import annotations

import re

import pytest

from helpers.project import OneUpstreamStack

# A body long enough that the fix's hunk does not reach the definition line: git's hunk header
# names the function (`@@ -6,6 +6,7 @@ def scale_a(tensor, amax):`).
PY_LONG = (b"    limit = compute_limit(tensor.dtype)\n"
           b"    amax = amax.float()\n"
           b"    bias = load_bias(tensor)\n"
           b"    factor = amax / limit\n"
           b"    result = tensor * factor + bias\n"
           b"    return result\n")
# A body whose fix's hunk has the definition line among its context: the header names the
# line above it (`import os`), not the function.
PY_SHORT = (b"    limit = compute_limit(tensor.dtype)\n"
            b"    factor = amax / limit\n"
            b"    result = tensor * factor\n"
            b"    return result\n")
PY_EDITS = {"add": (b"    factor = amax / limit\n",
                    b"    factor = amax / limit\n"
                    b"    factor = clamp_to_finite_range(factor, limit)\n"),
            "change": (b"    factor = amax / limit\n",
                       b"    factor = amax / max(limit, 1e-12)\n")}

C_LONG = (b"{\n"
          b"    float limit = compute_limit(dtype);\n"
          b"    float scale = load_scale(ptr);\n"
          b"    float bias = load_bias(ptr);\n"
          b"    float factor = amax / limit;\n"
          b"    store(ptr, factor * scale + bias);\n"
          b"}\n")
C_SHORT = (b"{\n"
           b"    float factor = amax / compute_limit(dtype);\n"
           b"    store(ptr, factor * load_scale(ptr) + load_bias(ptr));\n"
           b"}\n")
C_EDITS = {"add": (b"    store(ptr, ", b"    factor = clamp_to_finite_range(factor, 448.0f);\n"
                   b"    store(ptr, "),
           "change": (b"    float factor = amax / ", b"    float factor = amax * inv_")}


def py_function(name: str, body: bytes) -> bytes:
    return f"def {name}(tensor, amax):\n".encode() + body


def c_function(name: str, body: bytes) -> bytes:
    return f"__device__ void {name}(float* ptr, float amax, int dtype)\n".encode() + body


PY_MIDDLE = b"".join(b"CONSTANT_%d = %d\n" % (i, i) for i in range(1, 6))
C_MIDDLE = b"".join(b"#define CONSTANT_%d %d\n" % (i, i) for i in range(1, 6))


class Twins:
    """The file of a case: its language, body and layout, the fix's change and upstream's."""

    def __init__(self, language: str, kind: str, header: str) -> None:
        self.path = "k.py" if language == "py" else "k.cu"
        if language == "py":
            self.body = PY_LONG if header == "named" else PY_SHORT
            self.function, self.edit = py_function, PY_EDITS[kind]
            self.top, self.gap, self.middle = b"import os\n\n\n", b"\n\n", PY_MIDDLE
        else:
            self.body = C_LONG if header == "named" else C_SHORT
            self.function, self.edit = c_function, C_EDITS[kind]
            self.top, self.gap, self.middle = b"#include <scale.h>\n\n", b"\n", C_MIDDLE
        self.fixed = self.body.replace(*self.edit)
        assert self.fixed != self.body

    def file(self, *parts: str, fixed: tuple[str, ...] = ()) -> bytes:
        """The file of `parts` in order: function names (fixed if in `fixed`) or "middle"."""
        return self.top + self.gap.join(
            self.middle if part == "middle" else
            self.function(part, self.fixed if part in fixed else self.body) for part in parts)

    def function_in(self, data: bytes, name: str) -> bytes:
        """Function `name`'s lines in `data`, up to the next definition line."""
        start = data.index(self.function(name, b""))
        end = re.compile(rb"^[A-Za-z_#]", re.M).search(data, start + 1)
        return data[start:end.start() if end else len(data)]


LAYOUTS = {
    # (base, target): scale_b takes scale_a's place, scale_a goes below it or to the end.
    "swapped": (("scale_a", "scale_b", "middle"), ("scale_b", "scale_a", "middle")),
    "moved-to-end": (("scale_a", "scale_b", "middle"), ("scale_b", "middle", "scale_a")),
    "swapped-apart": (("scale_a", "middle", "scale_b"), ("scale_b", "middle", "scale_a")),
}


def reordered(tmp_path, twins: Twins, layout: str, upstream_fixes: tuple[str, ...]):
    """A stack whose fix changes scale_a, upstream at v2 reordered per `layout` with
    `upstream_fixes` changed as the fix changes scale_a."""
    base, target = LAYOUTS[layout]
    v1 = twins.file(*base)
    stack = OneUpstreamStack(tmp_path, {twins.path: v1})
    stack.add_fix("fix", twins.path, v1, twins.file(*base, fixed=("scale_a",)))
    stack.commit({twins.path: twins.file(*target, fixed=upstream_fixes)},
                 "reorder the scale functions; " + ", ".join(upstream_fixes) + " fixed",
                 tag="v2")
    return stack


def assert_kept(stack: OneUpstreamStack, twins: Twins) -> None:
    """status: not upstreamed, the evidence naming the twin; the rebase never drops the fix (a
    stop, aborted, or moved), and the overlay's scale_a has the fix's change."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert not patch.get("landed_in"), patch
    evidence = " ".join(patch["evidence"])
    assert "the change is found only in scale_b" in evidence, evidence
    assert "another function's copy of the code: not landed" in evidence, evidence
    overlay = stack.kept_by_rebase("up=v2", twins.path)
    assert twins.fixed in twins.function_in(overlay, "scale_a"), overlay
    # (moved: into scale_a, scale_b as upstream has it; stopped: the pin's scale_b)
    assert twins.function_in(overlay, "scale_b").startswith(
        twins.function("scale_b", twins.fixed if patch["rebase"] == "move" else twins.body))


CASES = [(language, kind, layout) for language in ("py", "c") for kind in ("add", "change")
         for layout in LAYOUTS]


@pytest.mark.parametrize("language,kind,layout", CASES, ids=["-".join(c) for c in CASES])
def test_a_fix_made_upstream_only_in_the_reordered_twin_is_kept(tmp_path, language, kind,
                                                                 layout):
    """The hunk header names scale_a (`@@ ... @@ def scale_a(`); upstream reorders the twins
    and makes the change in scale_b only."""
    twins = Twins(language, kind, "named")
    stack = reordered(tmp_path, twins, layout, ("scale_b",))
    assert f"@@ {twins.function('scale_a', b'').decode().strip()}" in \
        stack.patch("up", "fix").decode()
    assert_kept(stack, twins)


@pytest.mark.parametrize("language", ["py", "c"])
def test_a_fix_whose_header_names_no_function_is_kept_when_its_twin_has_the_change(
        tmp_path, language):
    """The fix changes a line right under scale_a's definition line, which is among the
    hunk's context (its header names the line above, or nothing); upstream moves scale_a to
    the file's end and makes the change in scale_b only. The reverse-apply finds nothing (the
    twin's definition line is not the hunk's), the removed line is still in the file, and
    the history's commit decided it. The definition line above the change in the base file
    names the function. (A pure addition so placed was kept already: its inner context is
    in scale_a, `_inner_context_there`.)"""
    twins = Twins(language, "change", "unnamed")
    stack = reordered(tmp_path, twins, "moved-to-end", ("scale_b",))
    header = re.search(rb"^@@ [^@]* @@(.*)$", stack.patch("up", "fix"), re.M)
    assert header is not None and b"scale_a" not in header.group(1), header
    assert_kept(stack, twins)


OWN = [(language, kind, layout) for language, kind in (("py", "change"), ("c", "add"))
       for layout in LAYOUTS]


@pytest.mark.parametrize("language,kind,layout", OWN, ids=["-".join(c) for c in OWN])
def test_a_landing_in_the_fixs_own_reordered_twin_is_dropped_not_put_into_the_other(
        tmp_path, language, kind, layout):
    """The mirror case: upstream reorders the twins and makes the change in scale_a, the
    fix's function, only. Before, the fix's pre-image found forward in scale_b made it
    "applies" (or unsure), and the rebase, git's line map carrying the fix's place onto
    scale_b, put the fix into scale_b, exit 0: deployed in the function it was never made
    for. The change found in scale_a, the code without it only in its twin: landed, dropped,
    nothing deployed."""
    twins = Twins(language, kind, "named")
    stack = reordered(tmp_path, twins, layout, ("scale_a",))
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert any(line.endswith("a twin of it: landed") for line in patch["evidence"]), patch
    summary = stack.rebase_json("--to", "up=v2")
    assert [p["action"] for p in summary["patches"]] == ["dropped"], summary["patches"]
    assert stack.series("up") == []
    stack.cli("overlays")
    assert not (stack.root / "overlays" / "up" / twins.path).exists()


@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_a_landing_in_both_reordered_twins_is_dropped(tmp_path, layout):
    """The other side (holds on main too): upstream reorders the twins and makes the change
    in both: landed, dropped, nothing left to deploy."""
    twins = Twins("py", "change", "named")
    stack = reordered(tmp_path, twins, layout, ("scale_a", "scale_b"))
    stack.landed_and_dropped("up=v2", twins.path)


def test_an_added_function_that_ends_as_its_neighbour_lands(tmp_path):
    """The other side (holds on main too), AITER's 5bd9adf3d3 (make_layout_o_x4 added after
    make_layout_o): the fix adds a function whose last lines are its neighbour's, and upstream
    lands it, with a line edited above. The hunk's pre-image is found forward inside the added
    function (its tail, then the next function), its post-image in reverse: the code without
    the change is the change's own tail, no twin of it; dropped as landed."""
    tail = (b"    return opus.make_layout(shape, stride)\n")
    first = b"def make_layout_o(warp, lane):\n    shape = o_shape(warp)\n    stride = 1\n" + tail
    added = (b"\n\ndef make_layout_o_x4(warp, lane):\n    shape = o_shape_x4(warp)\n"
             b"    stride = 2\n" + tail)
    rest = b"\n\ndef make_layout_k(warp, lane):\n    return k_layout(warp, lane)\n"
    v1 = b"import opus\n\n\n" + first + rest
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, b"import opus\n\n\n" + first + added + rest)
    stack.commit({"k.py": b"import opus  # layouts\n\n\n" + first + added + rest}, "x4 layout",
                 tag="v2")
    stack.landed_and_dropped("up=v2", "k.py")


STAGE_DOC = (b'    """Fused gate+up GEMM (stage 1).\n'
             b"\n"
             b"    gate_mode controls the gate/up computation strategy.\n"
             b"\n"
             b"    Returns:\n"
             b"        out\n"
             b'    """\n')
STAGE_BODY = (b"    tokens = a.shape[0]\n    experts = w1.shape[0]\n"
              b"    return launch(a, w1, tokens, experts)\n")
INJECTABLE = (b"    gate_mode controls the gate/up computation strategy.\n"
              b"\n"
              b"    `_compile_kernel` is injectable so the shared-expert path can reuse\n"
              b"    this launcher with its own kernel builder.\n")


def test_a_change_upstream_made_in_a_helper_of_the_fixs_function_lands(tmp_path):
    """The other side (holds on main too), AITER's flydsl_moe_stage1 (00cbe979f2): the fix
    adds a paragraph to stage1's docstring; upstream moves stage1's body, docstring and the
    paragraph into a new _stage1_impl, and stage1 becomes a wrapper that keeps the old
    docstring. The code without the change is still in stage1, the change only in
    _stage1_impl, but the base had that docstring once: no twin, and the history's commit
    that made the change lands the fix."""
    v1 = b"def stage1(a, w1):\n" + STAGE_DOC + STAGE_BODY
    fixed_doc = STAGE_DOC.replace(b"    gate_mode controls the gate/up computation strategy.\n",
                                  INJECTABLE)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, b"def stage1(a, w1):\n" + fixed_doc + STAGE_BODY)
    stack.commit({"k.py": b"def _stage1_impl(a, w1, _compile_kernel=None):\n" + fixed_doc
                  + STAGE_BODY + b"\n\ndef stage1(a, w1):\n" + STAGE_DOC
                  + b"    return _stage1_impl(a=a, w1=w1)\n"}, "stage1: injectable kernel",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch


METHOD = (b"        a = self.load_input(x, layout)\n"
          b"        b = a * self.scale_for(dtype)\n"
          b"        c = b + self.bias_for(dtype)\n"
          b"        d = c.clamp(self.lower_bound, self.upper_bound)\n"
          b"        e = d.to(self.out_dtype)\n"
          b"        return e\n")
METHOD_FIXED = METHOD.replace(b"self.scale_for(dtype)\n",
                              b"self.scale_for(dtype).clamp(min=1e-12)\n")


def quant_class(first: str, first_body: bytes, second: str, second_body: bytes) -> bytes:
    """A module class with two per-dtype methods (the vLLM/AITER shape)."""
    return (b"import torch\n\n\nclass Quant(torch.nn.Module):\n"
            b"    def %s(self, x, dtype):\n%s\n    def %s(self, x, dtype):\n%s\n"
            b"    def extra_repr(self):\n        return 'quant'\n"
            % (first.encode(), first_body, second.encode(), second_body))


def test_a_fix_made_upstream_only_in_the_reordered_twin_method_is_kept(tmp_path):
    """Twin methods of one class: the fix changes quant_fp8; upstream swaps the two and makes
    the change in quant_bf16 only. git's default funcname rule names both methods by the
    class line (`class Quant(`), so the change seemed to be in the fix's function. Before:
    "upstreamed (high)", dropped, quant_fp8 deployed without it. A method is named by its
    own `def` line: the change is in another function, not landed."""
    v1 = quant_class("quant_fp8", METHOD, "quant_bf16", METHOD)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1,
                  quant_class("quant_fp8", METHOD_FIXED, "quant_bf16", METHOD))
    stack.commit({"k.py": quant_class("quant_bf16", METHOD_FIXED, "quant_fp8", METHOD)},
                 "swap; bf16 clamps", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    evidence = " ".join(patch["evidence"])
    assert "the change is found only in Quant.quant_bf16" in evidence, evidence
    overlay = stack.kept_by_rebase("up=v2", "k.py")
    fp8 = overlay[overlay.index(b"def quant_fp8"):overlay.index(b"def extra_repr")]
    # (moved: into quant_fp8; stopped: the pin's file, as it was)
    assert b"clamp(min=1e-12)" in fp8 or overlay == v1, overlay


def test_a_landing_in_the_fixs_own_reordered_twin_method_is_dropped(tmp_path):
    """The mirror: upstream swaps the methods and makes the change in quant_fp8, the fix's
    own, only. Before: `fuzz`, moved (the pre-image found forward in quant_bf16, the history
    taking the commit for a change made at another place). The change found in the fix's
    own method, the code without it only in its twin: landed, dropped."""
    v1 = quant_class("quant_fp8", METHOD, "quant_bf16", METHOD)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1,
                  quant_class("quant_fp8", METHOD_FIXED, "quant_bf16", METHOD))
    stack.commit({"k.py": quant_class("quant_bf16", METHOD, "quant_fp8", METHOD_FIXED)},
                 "swap; fp8 clamps", tag="v2")
    stack.dropped_as_landed()


def two_classes(first: str, first_body: bytes, second: str, second_body: bytes,
                method: str = "scale") -> bytes:
    """Two classes with a method of one name (every nn.Module's `forward`)."""
    return (b"import torch\n\n\nclass %s(torch.nn.Module):\n    def %s(self, x, dtype):\n%s\n\n"
            b"class %s(torch.nn.Module):\n    def %s(self, x, dtype):\n%s"
            % (first.encode(), method.encode(), first_body, second.encode(), method.encode(),
               second_body))


def test_twin_methods_of_one_name_in_two_classes_are_two_functions(tmp_path):
    """The methods are `Fp8.scale` and `Fp16.scale`: named by their `def` line alone, both
    were `scale`, so upstream's change made in Fp16 only (the classes swapped) seemed to be in
    the fix's function: dropped. A method is named with its class."""
    v1 = two_classes("Fp8", METHOD, "Fp16", METHOD)
    stack = OneUpstreamStack(tmp_path, {"k.py": v1})
    stack.add_fix("fix", "k.py", v1, two_classes("Fp8", METHOD_FIXED, "Fp16", METHOD))
    stack.commit({"k.py": two_classes("Fp16", METHOD_FIXED, "Fp8", METHOD)},
                 "swap; Fp16 clamps", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert "Fp16.scale" in " ".join(patch["evidence"]), patch["evidence"]
