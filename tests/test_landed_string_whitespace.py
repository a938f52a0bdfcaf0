"""Whitespace inside a string is content. The landed checks compare code without its
whitespace, so that a landing upstream reformatted still counts; a string's inside is not
layout, though: `"scale for %s:  %d"` and `"scale for %s: %d"` are two log lines, and a
formatter never changes one into the other. Before, a fix mending a format string's spacing
(and its quotes) was "upstreamed" by upstream's own requoting of the unfixed line: dropped
by the rebase, the target still printing the old string.
Real git upstreams, real commands: `status --against`, `rebase --to`."""
from __future__ import annotations

import pytest

from helpers.project import OneUpstreamStack


def module(line: bytes) -> bytes:
    """Twelve small functions, f7 logging by `line`."""
    f7 = b"def f7(x):\n    y = x + 7\n    %s\n    return y\n\n\n" % line
    return b"".join(f7 if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n" % (i, i)
                    for i in range(12))


OLD = b"log.info('scale for %s:  %d', x, y)"
FIX = b'log.info("scale for %s: %d", x, y)'
REQUOTED = b'log.info("scale for %s:  %d", x, y)'


def test_upstream_requoting_the_unfixed_string_is_no_landing(tmp_path):
    """The fix mends the format's double space (and writes the quotes double, as black
    would); upstream runs black: the same line requoted, its double space kept. Without
    whitespace the two lines are one text. Before: "upstreamed" by post-image containment,
    then by the history ("makes this change (the same change)"); dropped."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    black = stack.commit({"k.py": module(REQUOTED)}, "black: double quotes", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert not any(black in line for line in patch["evidence"]), patch["evidence"]
    assert FIX in stack.kept_by_rebase("up=v2", "k.py")


def test_the_fix_landed_with_its_string_and_wrapped_is_still_a_landing(tmp_path):
    """Upstream makes the fix's change, its string as the fix has it, and wraps the call:
    a landing, whitespace outside the string being layout."""
    stack = OneUpstreamStack(tmp_path, {"k.py": module(OLD)})
    stack.add_fix("fix", "k.py", module(OLD), module(FIX))
    stack.commit({"k.py": module(b'log.info(\n        "scale for %s: %d", x, y\n    )')},
                 "fix the scale log (#12)", tag="v2")
    stack.dropped_as_landed()


def test_a_landing_requoted_with_its_old_spacing_by_a_stale_formatter_is_undone(tmp_path):
    """The fix changes the string's spacing alone; upstream makes that very change, then a
    formatter run on a tree from before it requotes the line with the old double space. The
    history (code without whitespace, quotes aside) took the requoting for no undoing;
    the target logs the old string. Before: "upstreamed (high)" by the history, dropped.
    Now the requoting undoes the landing."""
    old = b"log.info('scale for %s:  %d', x, y)"
    fixed = b"log.info('scale for %s: %d', x, y)"
    stack = OneUpstreamStack(tmp_path, {"k.py": module(old)})
    stack.add_fix("fix", "k.py", module(old), module(fixed))
    stack.commit({"k.py": module(fixed)}, "fix the scale log (#12)")
    black = stack.commit({"k.py": module(REQUOTED)}, "black (on a stale tree)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert f"history: commit {black} undoes this change (reverses part of it in k.py)" in \
        patch["evidence"], patch["evidence"]
    assert fixed in stack.kept_by_rebase("up=v2", "k.py")


def report_cu(tries: bytes, line: bytes) -> bytes:
    """A HIP file: eight kernels either side of `report`, which sets `tries` and prints by
    `line`."""
    fns = b"".join(b"__global__ void k%d(float* x, int n) {\n    int i = threadIdx.x + %d;\n"
                   b"    if (i < n) x[i] *= 2.0f;\n}\n\n" % (i, i) for i in range(8))
    body = (b"void report(const char* p, int n) {\n    int tries = %s;\n    %s\n}\n\n"
            % (tries, line))
    return b"#include <cstdio>\n\n" + fns + body + fns.replace(b"k", b"m")


def _partial_landing_is_no_landing(tmp_path, line: bytes) -> None:
    """The fix (one hunk) makes `tries = n + 1` and mends the format's double space; upstream
    lands only `tries = n + 1`, the string keeps its double space."""
    old, part = report_cu(b"n", line), report_cu(b"n + 1", line)
    fix = report_cu(b"n + 1", line.replace(b"%s:  %d", b"%s: %d"))
    stack = OneUpstreamStack(tmp_path, {"ops/report.cu": old})
    stack.add_fix("fix", "ops/report.cu", old, fix)
    stack.commit({"ops/report.cu": part}, "report: count the first try", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch


def test_an_apostrophe_in_a_comment_before_the_string_does_not_hide_its_spacing(tmp_path):
    """`/* don't */` before `"can't open %s:  %d"`: the comment's apostrophe and the string's
    were read as one quoted text, the rest of the string as code without whitespace. Before:
    "upstreamed (medium)" by post-image containment, dropped; the target prints the old
    format."""
    _partial_landing_is_no_landing(
        tmp_path, b'/* don\'t retry */ printf("can\'t open %s:  %d\\n", p, tries);')


def test_a_digit_separator_before_the_string_does_not_hide_its_spacing(tmp_path):
    """`1'000` (C++14) before a string with an apostrophe in it: the same mispairing."""
    _partial_landing_is_no_landing(
        tmp_path, b'int cap = 1\'000; printf("can\'t open %s:  %d\\n", p, tries);')


def test_upstream_requoting_an_unfixed_string_over_lines_is_no_landing(tmp_path):
    """A string over lines (`'''` ... `'''`): the fix mends its double space and writes its
    quotes double; upstream requotes it alone. Its inside is on lines with no quote. Before:
    "upstreamed (medium)" by post-image containment, dropped; the target keeps the old
    text."""
    def module_with(body: bytes) -> bytes:
        f7 = b"def f7(x):\n    y = x + 7\n" + body + b"    return y\n\n\n"
        return b"".join(f7 if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n"
                        % (i, i) for i in range(12))

    old = b"    msg = '''\n        scale for the requested layer %s:  %d tokens\n    '''\n"
    fix = b'    msg = """\n        scale for the requested layer %s: %d tokens\n    """\n'
    stack = OneUpstreamStack(tmp_path, {"k.py": module_with(old)})
    stack.add_fix("fix", "k.py", module_with(old), module_with(fix))
    stack.commit({"k.py": module_with(old.replace(b"'''", b'"""'))}, "black: double quotes",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch


def f7_with(body: bytes) -> bytes:
    """Twelve small functions, f7 with `body` (lines) before its return."""
    f7 = b"def f7(x):\n    y = x + 7\n" + body + b"    return y\n\n\n"
    return b"".join(f7 if i == 7 else b"def f%d(x):\n    y = x + %d\n    return y\n\n\n"
                    % (i, i) for i in range(12))


def test_upstream_rewrapping_an_unfixed_string_over_lines_is_no_landing(tmp_path):
    """The fix mends a double space inside a `\"\"\"` string and joins its two lines; upstream
    joins them alone, the double space kept. Without whitespace both commits make one change
    (`scalefor...%s:%d`, `tokens` -> `scalefor...%s:%dtokens`). Before: "upstreamed (high)" by
    the history ("makes this change (the same change)"), dropped; the target keeps the old
    text."""
    old = b'    msg = """\n        scale for the requested layer %s:  %d\n        tokens\n    """\n'
    fix = b'    msg = """\n        scale for the requested layer %s: %d tokens\n    """\n'
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(old)})
    stack.add_fix("fix", "k.py", f7_with(old), f7_with(fix))
    rewrap = stack.commit({"k.py": f7_with(fix.replace(b"%s: %d", b"%s:  %d"))},
                          "docs: one line", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert not any(rewrap in line and "makes" in line for line in patch["evidence"]), \
        patch["evidence"]
    assert b"%s: %d tokens" in stack.kept_by_rebase("up=v2", "k.py")


def usage_cu(text: bytes) -> bytes:
    """A HIP file: eight kernels either side of `usage`, a raw string of `text`."""
    fns = b"".join(b"__global__ void k%d(float* x, int n) {\n    int i = threadIdx.x + %d;\n"
                   b"    if (i < n) x[i] *= 2.0f;\n}\n\n" % (i, i) for i in range(8))
    return (b"#include <cstdio>\n\n" + fns + b'static const char* usage = R"(\n' + text
            + b')";\n\n' + fns.replace(b"k", b"m"))


def test_upstream_rewrapping_an_unfixed_raw_string_is_no_landing(tmp_path):
    """The same in a C++ raw string (`R"(` ... `)"`): the fix mends `--tokens %d  --layers`
    and joins the line below it; upstream only joins them."""
    old = b"usage: bench --tokens %d  --layers %d\n    [--warmup %d]\n"
    fix = b"usage: bench --tokens %d --layers %d [--warmup %d]\n"
    stack = OneUpstreamStack(tmp_path, {"csrc/bench.cu": usage_cu(old)})
    stack.add_fix("fix", "csrc/bench.cu", usage_cu(old), usage_cu(fix))
    stack.commit({"csrc/bench.cu": usage_cu(fix.replace(b"%d --layers", b"%d  --layers"))},
                 "bench: usage on one line", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch


def test_the_fix_rewrapping_a_string_over_lines_landed_is_still_a_landing(tmp_path):
    """Upstream makes the fix's very change to the `\"\"\"` string (in a commit of its own, and
    again the same after a commit touching the lines around it): a landing the history
    finds, dropped."""
    old = b'    msg = """\n        scale for the requested layer %s:  %d\n        tokens\n    """\n'
    fix = b'    msg = """\n        scale for the requested layer %s: %d tokens\n    """\n'
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(old)})
    stack.add_fix("fix", "k.py", f7_with(old), f7_with(fix))
    landed = stack.commit({"k.py": f7_with(fix).replace(b"y = x + 7\n", b"y = x + 7.0\n")},
                          "f7: one-line message, a float (#12)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert patch["landed_in"] == landed, patch


LONG = (b'    msg = """\n' + b"".join(b"        line %d of the message\n" % i for i in range(8))
        + b"        scale for the requested layer %s:  %d\n        tokens\n    \"\"\"\n")
LONG_FIX = LONG.replace(b"%s:  %d\n        tokens", b"%s: %d tokens")


@pytest.mark.parametrize("opened_above", [False, True])
def test_a_landing_whose_string_over_lines_a_stale_change_respaced_is_no_landing(
        tmp_path, opened_above):
    """The fix capitalizes a line inside a `\"\"\"` string and mends its double space; upstream
    lands that, then a change made on a stale tree puts the double space back (the capital
    kept). Without whitespace the target has the fix's line, and the change that re-spaced it
    takes out nothing. Before: "upstreamed (medium)" by post-image containment, which read the
    changed line, quoteless, as code (the string opened in the hunk's context, or above the
    hunk); dropped, the target keeping the old spacing. Now kept: the history names the line
    the target has only spaced otherwise."""
    old = LONG.replace(b"%s:  %d\n        tokens", b"%s:  %d tokens") if opened_above else \
        b'    msg = """\n        scale for the requested layer %s:  %d\n        tokens\n    """\n'
    fix = old.replace(b"scale for the requested layer %s:  %d",
                      b"Scale for the requested layer %s: %d")
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(old)})
    stack.add_fix("fix", "k.py", f7_with(old), f7_with(fix))
    if opened_above:
        assert b'msg = """' not in stack.patch("up", "fix").split(b"\n@@", 1)[1]
    stack.commit({"k.py": f7_with(fix)}, "docs: capital, one space (#12)")
    stack.commit({"k.py": f7_with(fix.replace(b"%s: %d", b"%s:  %d"))}, "docs: (stale tree)",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("spaced otherwise" in line for line in patch["evidence"]), patch["evidence"]
    assert b"Scale for the requested layer %s: %d" in stack.kept_by_rebase("up=v2", "k.py")


def test_a_landing_whose_raw_string_a_stale_change_respaced_is_no_landing(tmp_path):
    """The same in a HIP file's raw string (`R\"(` ... `)\"`): the fix capitalizes the usage
    line and mends `%d  --layers`; a stale change puts the double space back. Before:
    "upstreamed (medium)" by post-image containment; dropped."""
    old = b"usage: bench --tokens %d  --layers %d\n    [--warmup %d]\n"
    fix = b"Usage: bench --tokens %d --layers %d\n    [--warmup %d]\n"
    stack = OneUpstreamStack(tmp_path, {"csrc/bench.cu": usage_cu(old)})
    stack.add_fix("fix", "csrc/bench.cu", usage_cu(old), usage_cu(fix))
    stack.commit({"csrc/bench.cu": usage_cu(fix)}, "bench: usage (#12)")
    stack.commit({"csrc/bench.cu": usage_cu(fix.replace(b"%d --layers", b"%d  --layers"))},
                 "bench: usage (stale tree)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("spaced otherwise" in line for line in patch["evidence"]), patch["evidence"]


def test_upstream_rewrapping_an_unfixed_string_opened_above_the_hunk_is_no_landing(tmp_path):
    """As test_upstream_rewrapping_an_unfixed_string_over_lines_is_no_landing, the string
    opened above the hunk: its closing quote, in the hunk's context, was read as opening one,
    the lines the fix changes as code. Before: "upstreamed (high)" by the history ("makes this
    change (the same change)"); dropped, the target keeping the old text."""
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(LONG)})
    stack.add_fix("fix", "k.py", f7_with(LONG), f7_with(LONG_FIX))
    assert b'msg = """' not in stack.patch("up", "fix").split(b"\n@@", 1)[1]
    stack.commit({"k.py": f7_with(LONG_FIX.replace(b"%s: %d", b"%s:  %d"))}, "docs: one line",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert b"%s: %d tokens" in stack.kept_by_rebase("up=v2", "k.py")


@pytest.mark.parametrize("opened_above", [False, True])
def test_a_landing_rewrapped_with_its_old_spacing_by_a_stale_change_is_no_landing(
        tmp_path, opened_above):
    """The fix mends a double space inside a `\"\"\"` string and joins its next line onto it
    (the string opened in the hunk's context, or above the hunk); upstream lands that very
    change, then a change made on a stale tree (the lines joined, the double space as it was)
    rewrites the fix's line. Without whitespace the fix's line is still there and nothing took
    it out. Before: "upstreamed (high)" by the history, dropped; the target keeps the old
    spacing. Now it is kept, saying so."""
    old = LONG if opened_above else \
        b'    msg = """\n        scale for the requested layer %s:  %d\n        tokens\n    """\n'
    fix = old.replace(b"%s:  %d\n        tokens", b"%s: %d tokens")
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(old)})
    stack.add_fix("fix", "k.py", f7_with(old), f7_with(fix))
    stack.commit({"k.py": f7_with(fix)}, "docs: one line, one space (#12)")
    stack.commit({"k.py": f7_with(fix.replace(b"%s: %d", b"%s:  %d"))}, "docs: one line",
                 tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=None)
    ((patch,),) = [status["patches"]]
    assert patch["state"] != "upstreamed" and patch["rebase"] != "drop", patch
    assert any("spaced otherwise" in line for line in patch["evidence"]), patch["evidence"]
    assert b"%s: %d tokens" in stack.kept_by_rebase("up=v2", "k.py")


@pytest.mark.parametrize("opened_above", [False, True])
def test_a_fix_inside_a_string_over_lines_landed_as_it_is_is_still_a_landing(
        tmp_path, opened_above):
    """Upstream makes the fix's change to a line inside a `\"\"\"` string (opened in the
    hunk's context, or above the hunk) and, in the same commit, rewrites f7's first line: a
    landing, dropped, naming that commit."""
    old = LONG if opened_above else \
        b'    msg = """\n        scale for the requested layer %s:  %d\n        tokens\n    """\n'
    fix = old.replace(b"%s:  %d\n        tokens", b"%s: %d tokens")
    stack = OneUpstreamStack(tmp_path, {"k.py": f7_with(old)})
    stack.add_fix("fix", "k.py", f7_with(old), f7_with(fix))
    landed = stack.commit({"k.py": f7_with(fix).replace(b"y = x + 7\n", b"y = x + 7.0\n")},
                          "f7: one-line message, a float (#12)", tag="v2")
    status = stack.json("status", "--against", "up=v2", expect=1)
    ((patch,),) = [status["patches"]]
    assert (patch["state"], patch["rebase"]) == ("upstreamed", "drop"), patch
    assert patch["landed_in"] == landed, patch


def test_where_strings_over_lines_are_open_is_read_as_line_by_line():
    """history.strings_open_at searches the file's text for the next line that can open or
    close a string over lines instead of testing each line: on random files of docstrings,
    raw strings (their delimiters too), quotes opened and closed on one line, quotes inside
    strings and CRLF lines it says, at every line, what reading the lines one by one says."""
    import random

    from patchforge.history import opens_over_lines, over_lines, strings_open_at

    def line_by_line(lines, stop):
        waiting = None
        for line in lines[:stop]:
            if waiting is None:
                if opens_over_lines(line):
                    waiting = over_lines(line, None)[0]
            elif waiting in line:
                waiting = over_lines(line, waiting)[0]
        return waiting

    rng = random.Random(36)
    pieces = [b"x = 1", b"    '''doc", b'"""', b"end'''", b'R"ab(', b')ab"', b')"', b'R"(',
              b"s = '''one''' + \"\"\"two\"\"\"", b"# '''", b"", b"    return R\"x(y)x\";",
              b"'", b'"', b"\"'''\"", b"text )ab\" more", b"R\"", b"\r"]
    opened = 0
    for _ in range(400):
        lines = [b"".join(rng.choice(pieces) for _ in range(rng.randrange(3)))
                 for _ in range(rng.randrange(40))]
        lines = (b"\n".join(lines) + rng.choice([b"", b"\n"])).split(b"\n")
        for stop in range(len(lines) + 2):
            expected = line_by_line(lines, stop)
            assert strings_open_at(lines, stop) == expected, (lines, stop)
            opened += expected is not None
    assert opened  # strings left open at some lines


def test_where_strings_over_lines_are_open_read_on_from_a_line_is_read_from_the_top():
    """strings_open_at read on from a line (`since`, with what it said of that line) says what
    reading from the file's top says, and so does a file's NormalizedText.string_open_at asked
    of its lines in any order (it reads on from the line last asked when it can): on random
    files of docstrings, raw strings, quotes opened and closed on one line and CRLF lines."""
    import random

    from patchforge.detect import NormalizedText
    from patchforge.history import strings_open_at

    rng = random.Random(37)
    pieces = [b"x = 1", b"    '''doc", b'"""', b"end'''", b'R"ab(', b')ab"', b')"', b'R"(',
              b"s = '''one''' + \"\"\"two\"\"\"", b"# '''", b"", b"    return R\"x(y)x\";",
              b"'", b'"', b"\"'''\"", b"text )ab\" more", b"R\"", b"\r"]
    opened = 0
    for _ in range(300):
        content = b"\n".join(b"".join(rng.choice(pieces) for _ in range(rng.randrange(3)))
                             for _ in range(rng.randrange(40))) + rng.choice([b"", b"\n"])
        lines = content.split(b"\n")
        from_top = [strings_open_at(lines, stop) for stop in range(len(lines) + 2)]
        opened += sum(answer is not None for answer in from_top)
        for since in range(len(lines) + 2):
            for stop in range(since, len(lines) + 2):
                assert strings_open_at(lines, stop, since, from_top[since]) == from_top[stop]
        text = NormalizedText(content)
        for stop in [rng.randrange(len(lines) + 2) for _ in range(12)]:
            assert text.string_open_at(stop) == from_top[stop], (content, stop)
    assert opened  # strings left open at some lines
