"""Indentation is code in Python, YAML and make: a copy of the fix's lines found with whitespace
ignored is a landing only where it nests each statement as the fix does.

Containment finds the fix's added code with whitespace and wrapping ignored (a landing black
reformatted counts). Where the file's language reads indentation (detect.indentation_matters:
Python, YAML, make, by the file's name), the copy must also put each statement where the fix
puts it: for a created file, every statement nested under the same one as in the fix's file
(detect._indented_otherwise: lined up by text, lines seen twice too, re-indented whole still
alike); for a hunk, each statement of a copy upstream re-wrapped at the start of a line and at
the fix's indentation relative to the copy's first line (detect._laid_out_alike). Otherwise the
fix is kept: `status --against` does not say upstreamed, the rebase does not drop it. Real git
upstreams, real commands; each kept case dropped the fix before."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack

INIT = {"pkg/__init__.py": b"import os\n"}


def kept(stack: OneUpstreamStack, path: str, fixed: bytes) -> None:
    """status: not upstreamed, the evidence names the indentation, the rebase stops on the
    fix naming `path` and drops nothing; after --abort the overlays still deploy `fixed`."""
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] == "stop", patch
    assert "indented otherwise" in " ".join(patch["evidence"]), patch
    rc, out, err = stack.cli("rebase", "--to", "up=v2", expect=3)
    assert path in err and "dropped" not in out, out + err
    stack.cli("rebase", "--abort")
    assert not (stack.root / "series" / "up" / "upstreamed" / "fix.patch").exists()
    assert stack.series("up") == ["fix.patch"]
    stack.cli("overlays")
    assert fixed in (stack.root / "overlays" / "up" / path).read_bytes()


RELEASE = (b"def release_workspaces(pool, needed_bytes):\n"
           b"    for buffer in pool.buffers():\n"
           b"        if buffer.numel() < needed_bytes:\n"
           b"            buffer = allocate_workspace(needed_bytes)\n"
           b"    pool.synchronize_all_streams(needed_bytes)\n"
           b"\n\n"
           b"def workspace_bytes(pool):\n"
           b"    return pool.total_bytes()\n")
SYNC = b"    pool.synchronize_all_streams(needed_bytes)\n"


def test_a_created_file_upstream_made_with_a_statement_one_level_up_of_two_is_kept(tmp_path):
    """The fix creates ws.py synchronizing once, after the `for` loop whose body ends with an
    `if` block (two levels up from the last line before it); upstream creates ws.py with the
    sync inside the loop (one level up: once per buffer), a function after it. Every step's
    direction is the same in both files (shallower, then shallower to the `def`), the nesting
    is not: kept, the rebase stops on the creation."""
    stack = OneUpstreamStack(tmp_path, INIT)
    stack.add_fix("fix", "pkg/ws.py", None, RELEASE)
    stack.commit({"pkg/ws.py": RELEASE.replace(SYNC, b"    " + SYNC)}, "add ws.py", tag="v2")
    kept(stack, "pkg/ws.py", SYNC)


CHECK = (b"def check_workspace(buffer, needed_bytes):\n"
         b"    if buffer.numel() < needed_bytes:\n"
         b"        buffer = allocate_workspace(needed_bytes)\n"
         b"        zero_fill_workspace(buffer, needed_bytes)\n"
         b"    return buffer\n"
         b"\n"
         b"def reset_workspace(buffer, needed_bytes):\n"
         b"    zero_fill_workspace(buffer, needed_bytes)\n"
         b"    return buffer\n")
FILL = b"        zero_fill_workspace(buffer, needed_bytes)\n"


def test_a_created_file_with_the_moved_statement_twice_in_it_is_kept(tmp_path):
    """The fix creates ws.py zero-filling a buffer only where it allocates one, and a second
    function calling the same zero-fill; upstream creates it with the first call out of its
    `if` (every buffer, also one in use). The moved line is in each file twice, and is still
    compared (lined up by text, not looked up once): kept."""
    stack = OneUpstreamStack(tmp_path, INIT)
    stack.add_fix("fix", "pkg/ws.py", None, CHECK)
    stack.commit({"pkg/ws.py": CHECK.replace(FILL, FILL[4:])}, "add ws.py", tag="v2")
    kept(stack, "pkg/ws.py", FILL)


def test_a_created_file_upstream_made_alike_with_lines_twice_and_rewrapped_is_a_landing(
        tmp_path):
    """The other side (holds on main too): upstream creates the same ws.py indented by two
    columns a level, a call wrapped over three lines, the line seen twice in place: every
    statement nested alike, the creation landed and is dropped."""
    stack = OneUpstreamStack(tmp_path, INIT)
    stack.add_fix("fix", "pkg/ws.py", None, CHECK)
    stack.commit({"pkg/ws.py": (b"def check_workspace(buffer, needed_bytes):\n"
                                b"  if buffer.numel() < needed_bytes:\n"
                                b"    buffer = allocate_workspace(needed_bytes)\n"
                                b"    zero_fill_workspace(\n"
                                b"      buffer, needed_bytes\n"
                                b"    )\n"
                                b"  return buffer\n"
                                b"\n\n"
                                b"def reset_workspace(buffer, needed_bytes):\n"
                                b"  zero_fill_workspace(buffer, needed_bytes)\n"
                                b"  return buffer\n")}, "add ws.py", tag="v2")
    stack.dropped_as_landed()


PREPARE = (b"def prepare_rows(x, cond, lo, hi):\n"
           b'    """Prepare the rows of a batch for the kernel."""\n'
           b"    x = x.contiguous()\n"
           b"    if cond.any_padding():\n"
           b"        x = strip_padding_rows(x, cond)\n"
           b"    return x\n"
           b"\n\n"
           b"def helper():\n"
           b"    return None\n")
STRIP = b"        x = strip_padding_rows(x, cond)\n"
TWO = (b"        x = clamp_values(x, lo, hi)\n"
       b"        x = normalize_rows(x, cond)\n")


def test_a_second_statement_out_of_the_if_beside_a_rewrapped_first_is_kept(tmp_path):
    """The fix adds two statements inside `if cond.any_padding():`; upstream adds both, the
    first inside the `if` wrapped by black over three lines, the second out of the `if`
    (every batch normalized). The copy has other lines than the hunk, and each statement of
    the hunk is still lined up with the copy's: kept, the rebase stops (git's merge
    conflicts)."""
    stack = OneUpstreamStack(tmp_path, {"k.py": PREPARE})
    stack.add_fix("fix", "k.py", PREPARE, PREPARE.replace(STRIP, STRIP + TWO))
    stack.commit({"k.py": PREPARE.replace(STRIP, STRIP + (
        b"        x = clamp_values(\n"
        b"            x, lo, hi\n"
        b"        )\n"
        b"    x = normalize_rows(x, cond)\n"))}, "clamp, normalize", tag="v2")
    kept(stack, "k.py", STRIP + TWO)


def test_statements_rewrapped_at_the_fix_s_depth_are_a_landing(tmp_path):
    """The other side (holds on main too): the fix writes its first call with arguments
    aligned under the parenthesis; upstream adds both statements inside the `if`, the first
    joined onto one line, the second wrapped by black: continuation lines are layout, the
    statements are where the fix puts them. Landed, dropped."""
    stack = OneUpstreamStack(tmp_path, {"k.py": PREPARE})
    stack.add_fix("fix", "k.py", PREPARE, PREPARE.replace(STRIP, STRIP + (
        b"        x = clamp_values(x,\n"
        b"                         lo, hi)\n"
        b"        x = normalize_rows(x, cond)\n")))
    stack.commit({"k.py": PREPARE.replace(STRIP, STRIP + (
        b"        x = clamp_values(x, lo, hi)\n"
        b"        x = normalize_rows(\n"
        b"            x, cond\n"
        b"        )\n"))}, "clamp, normalize", tag="v2")
    stack.dropped_as_landed()


SERVE = (b"model: meta-llama/Llama-3.1-8B-Instruct\n"
         b"engine:\n"
         b"  max_model_len: 8192\n"
         b"  gpu_memory_utilization: 0.90\n"
         b"scheduler:\n"
         b"  max_num_seqs: 256\n"
         b"  max_num_batched_tokens: 8192\n")
GPU = b"  gpu_memory_utilization: 0.90\n"
KEY = b"  disable_custom_all_reduce: true\n"


@pytest.mark.parametrize("name", ["serve.yaml", "ci/serve.yml"])
def test_a_yaml_key_upstream_added_at_the_top_level_is_kept(tmp_path, name):
    """YAML nests by indentation: the fix adds `disable_custom_all_reduce: true` under
    `engine:`; upstream adds the same key between the same lines at the top level (another
    setting, not the engine's). Kept, the rebase stops."""
    stack = OneUpstreamStack(tmp_path, {name: SERVE})
    stack.add_fix("fix", name, SERVE, SERVE.replace(GPU, GPU + KEY))
    stack.commit({name: SERVE.replace(GPU, GPU + KEY[2:])}, "top-level key", tag="v2")
    kept(stack, name, GPU + KEY)


def test_a_created_yaml_file_with_a_key_at_another_level_is_kept(tmp_path):
    """The fix creates serve.yaml with the key under `engine:`; upstream creates it with the
    key at the top level after the engine's keys: the same text, another nesting. Kept."""
    stack = OneUpstreamStack(tmp_path, INIT)
    fixed = SERVE.replace(GPU, GPU + KEY)
    stack.add_fix("fix", "serve.yaml", None, fixed)
    stack.commit({"serve.yaml": SERVE.replace(GPU, GPU + KEY[2:])}, "add serve.yaml",
                 tag="v2")
    kept(stack, "serve.yaml", GPU + KEY)


def test_a_yaml_key_upstream_added_under_the_same_key_is_a_landing(tmp_path):
    """The other side (holds on main too): upstream adds the key under `engine:` too, with
    a comment line above it: landed, dropped."""
    stack = OneUpstreamStack(tmp_path, {"serve.yaml": SERVE})
    stack.add_fix("fix", "serve.yaml", SERVE, SERVE.replace(GPU, GPU + KEY))
    stack.commit({"serve.yaml": SERVE.replace(GPU, GPU + KEY)}, "the engine's key",
                 tag="v2")
    stack.dropped_as_landed()


MAKEFILE = (b"PYTHON ?= python3\n"
            b"\n"
            b"build:\n"
            b"\t$(PYTHON) setup.py build_ext --inplace\n"
            b"\n"
            b"bench: build\n"
            b"\t$(PYTHON) -m benchmarks.run --all\n")
BUILD = b"\t$(PYTHON) setup.py build_ext --inplace\n"
EXPORT = b"export HIP_FORCE_DEV_KERNARG=1\n"


def test_a_make_export_upstream_put_into_a_recipe_is_kept(tmp_path):
    """In make a line that starts with a tab is a recipe's: the fix exports a variable to
    every recipe (`export` at the line's start, a make directive) after the build rule;
    upstream adds the same text as a recipe line of `build` (a shell command, lost with its
    shell). Kept, the rebase stops."""
    stack = OneUpstreamStack(tmp_path, {"Makefile": MAKEFILE})
    stack.add_fix("fix", "Makefile", MAKEFILE, MAKEFILE.replace(BUILD, BUILD + EXPORT))
    stack.commit({"Makefile": MAKEFILE.replace(BUILD, BUILD + b"\t" + EXPORT)},
                 "export in the recipe", tag="v2")
    kept(stack, "Makefile", BUILD + EXPORT)


IMPORTS = (b"# SPDX-License-Identifier: MIT\n"
           b"# Copyright (C) 2024-2026, Advanced Micro Devices, Inc. All rights reserved.\n"
           b"\n"
           b"from __future__ import annotations\n"
           b"\n"
           b"import functools\n"
           b"from abc import ABC, abstractmethod\n"
           b"\n"
           b"import flydsl.compiler as flyc\n"
           b"import flydsl.expr as fx\n"
           b"from flydsl._mlir import ir\n"
           b"from flydsl._mlir.dialects import llvm, memref, scf\n"
           b"from flydsl.expr import (\n"
           b"    arith,\n"
           b"    buffer_ops,\n"
           b")\n"
           b"\n\n"
           b"def kernel():\n"
           b"    return None\n")
FUTURE = b"from __future__ import annotations\n\n"
DIALECTS = b"from flydsl._mlir.dialects import llvm, memref, scf\n"
DIALECTS_FIXED = b"from flydsl._mlir.dialects import llvm, scf\n"


def test_a_top_level_line_whose_context_upstream_joined_is_a_landing(tmp_path):
    """The other side, from AITER's bb31b582d6 (holds on main too): the fix drops the
    `__future__` import and `memref` from an import line; upstream makes the same change
    and joins the bracketed import below into one line, so no context line of the hunk's
    starts a line next to the copy. The copy is at the top level (column 0) as the fix's
    line is, which needs no context: landed, dropped."""
    stack = OneUpstreamStack(tmp_path, {"k.py": IMPORTS})
    fixed = IMPORTS.replace(FUTURE, b"").replace(DIALECTS, DIALECTS_FIXED)
    stack.add_fix("fix", "k.py", IMPORTS, fixed)
    stack.commit({"k.py": fixed.replace(b"from flydsl.expr import (\n    arith,\n"
                                        b"    buffer_ops,\n)\n",
                                        b"from flydsl.expr import arith, buffer_ops, gpu\n")},
                 "imports", tag="v2")
    stack.dropped_as_landed()


LOOP = (b"def release_workspaces(pool, needed_bytes):\n"
        b"    for buffer in pool.buffers():\n"
        b"        if buffer.numel() < needed_bytes:\n"
        b"            buffer = allocate_workspace(needed_bytes)\n"
        b"    pool.synchronize_all_streams(needed_bytes)\n"
        b"    return pool\n")
ALLOC = b"            buffer = allocate_workspace(needed_bytes)\n"
RECORD = b"        pool.record_buffer_release(buffer)\n"


def test_a_statement_upstream_put_into_the_if_while_moving_the_next_line_is_kept(tmp_path):
    """The fix records every buffer, after the `if` in the loop; upstream records only the
    reallocated ones (inside the `if`) and moves the sync below into the loop. Relative to
    the sync the copy is where the fix has it (both moved one level), relative to the line
    right above it is not: the nearest context line on each side must agree. Kept."""
    stack = OneUpstreamStack(tmp_path, {"k.py": LOOP})
    stack.add_fix("fix", "k.py", LOOP, LOOP.replace(ALLOC, ALLOC + RECORD))
    stack.commit({"k.py": LOOP.replace(ALLOC, ALLOC + b"    " + RECORD).replace(
        b"    pool.synchronize_all_streams", b"        pool.synchronize_all_streams")},
        "record reallocated buffers, sync each", tag="v2")
    kept(stack, "k.py", ALLOC + RECORD)
