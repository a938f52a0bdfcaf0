"""Landed detection on file contents: each check alone, and the look-alikes it must refuse.

The whole-series cases on real git histories are in test_status.py; these pin the rules of
patchforge.detect on small inputs so a change to one rule shows which one broke.
"""
from __future__ import annotations

from patchforge.apply.diffparse import parse_diff
from patchforge.detect import NormalizedText, assess_file, contained
from patchforge.store.diff import make_file_diff, merge_file

BASE = b"""def setup(config):
    workers = config.workers
    retries = config.retries
    timeout = config.timeout
    start(workers, retries)
    return timeout


def teardown(pool):
    pool.close()
    return None
"""
FIX_OLD = b"    start(workers, retries)\n"
FIX_NEW = b"    start(workers, retries, backoff=exponential_backoff(timeout))\n"
FIXED = BASE.replace(FIX_OLD, FIX_NEW)


def file_patch(old: bytes, new: bytes, path: str = "m.py"):
    (fp,) = parse_diff(make_file_diff(path, path, old, new))
    return fp


def states(verdict) -> list[tuple[str, str | None]]:
    return [(h.forward, h.landed) for h in verdict.hunks]


def test_not_landed_applies():
    verdict = assess_file(file_patch(BASE, FIXED), BASE, BASE)
    assert states(verdict) == [("exact", None)]


def test_verbatim_is_certain_by_reverse_apply():
    verdict = assess_file(file_patch(BASE, FIXED), BASE, FIXED)
    assert states(verdict) == [("failed", "certain")]
    assert verdict.hunks[0].evidence == ["reverse-apply"]


def test_reformatted_is_likely_by_containment():
    wrapped = BASE.replace(FIX_OLD, b"    start(\n        workers,\n        retries,\n"
                                    b"        backoff=exponential_backoff(timeout)\n    )\n")
    verdict = assess_file(file_patch(BASE, FIXED), None, wrapped)
    assert states(verdict) == [("failed", "likely")]
    assert "containment" in verdict.hunks[0].evidence[0]


def test_surrounding_edits_are_certain_by_an_empty_merge():
    # Upstream also changed a context line (one line away from the fix, so git merges it).
    around = FIXED.replace(b"    workers = config.workers\n",
                           b"    workers = max(1, config.workers)\n")
    verdict = assess_file(file_patch(BASE, FIXED), BASE, around)
    assert verdict.merged_empty
    assert verdict.hunks[0].landed == "certain"
    assert any("merge result empty" in e for e in verdict.hunks[0].evidence)


def test_same_line_with_another_constant_is_not_landed():
    other = BASE.replace(FIX_OLD, FIX_NEW.replace(b"(timeout)", b"(timeout * 2)"))
    verdict = assess_file(file_patch(BASE, FIXED), BASE, other)
    assert states(verdict) == [("failed", None)]


def test_added_code_elsewhere_with_old_code_in_place_is_not_landed():
    # The exact added line sits in another function; the old line is still where the patch
    # changes it, and the hunk's context changed so it does not apply forward either.
    other = BASE.replace(b"    retries = config.retries\n", b"    retries = config.retries or 3\n")
    other += b"\n\ndef restart(workers, retries, timeout):\n" + FIX_NEW
    verdict = assess_file(file_patch(BASE, FIXED), BASE, other)
    assert verdict.hunks[0].landed is None
    assert verdict.hunks[0].forward in ("fuzz", "failed")


def test_old_code_still_applies_beside_the_added_code_is_not_landed():
    other = BASE + b"\n\ndef restart(workers, retries, timeout):\n" + FIX_NEW
    verdict = assess_file(file_patch(BASE, FIXED), BASE, other)
    assert states(verdict) == [("exact", None)]


def test_duplicated_block_is_ambiguous_not_landed():
    # The file holds the patched block AND the unpatched one: reverse and forward both apply.
    both = FIXED + b"\n\n" + BASE
    verdict = assess_file(file_patch(BASE, FIXED), BASE, both)
    assert verdict.hunks[0].ambiguous and verdict.hunks[0].landed is None


def test_containment_needs_the_hunk_context_nearby():
    fp = file_patch(BASE, FIXED)
    (hunk,) = fp.hunks
    far = (b"def unrelated():\n" + FIX_NEW + b"\n" * 3 + b"x = 1\n" * 20
           + BASE.replace(FIX_OLD, b""))
    ok, why, _ = contained(hunk, NormalizedText(far))
    assert not ok and "context" in why
    near = BASE.replace(FIX_OLD, b"    # now with backoff\n" + FIX_NEW)
    assert contained(hunk, NormalizedText(near))[0]


def test_short_additions_prove_nothing_by_containment():
    fp = file_patch(BASE, BASE.replace(b"    return None\n", b"    return 0\n"))
    ok, why, _ = contained(fp.hunks[0], NormalizedText(b"x = 0\nreturn 0\n"))
    assert not ok and "too little" in why


def test_merge_file_says_whether_the_merge_is_clean():
    base = b"a\nb\nc\n"
    clean, merged = merge_file(base, b"a\nB\nc\n", b"a\nb2\nc\n")
    assert not clean and b"<<<<<<< upstream\n" in merged
    assert merge_file(base, b"a\nB\nc\n", b"a\nB\nc\n") == (True, b"a\nB\nc\n")


def test_ambiguous_hunk_makes_the_patch_unsure():
    from types import SimpleNamespace

    from patchforge.detect import assess_patch

    both = FIXED + b"\n\n" + BASE
    patch = SimpleNamespace(file_patches=(file_patch(BASE, FIXED),))
    verdict = assess_patch("p", patch, read_base=lambda path: BASE,
                           read_current=lambda path: both, exists_in_target=lambda path: True,
                           find_rename=lambda path: None)
    assert verdict.state == "unsure" and verdict.hunks_landed == 0
    assert any("ambiguous" in e for e in verdict.evidence)


def test_added_lines_split_by_context_are_found_as_one_block():
    """A hunk whose added lines sit on both sides of a context line: the landing (reformatted)
    holds them with that context line between, so the search must keep it there."""
    head = b"def compute_totals(values, scale):\n"
    tail = b"    return normalise_result(total_value)\n"
    old = head + b"    total_value = sum(values) * scale\n" + tail
    new = (head + b"    first_value = compute_something_long(1)\n"
           b"    total_value = sum(values) * scale\n"
           b"    second_value = compute_something_else(2)\n" + tail)
    fp = parse_diff(make_file_diff("m.py", "m.py", old, new), source="t")[0]
    assert len(fp.hunks) == 1
    landed = (head + b"    first_value = compute_something_long( 1 )\n"
              b"    total_value = sum(values) * scale\n"
              b"    second_value = compute_something_else( 2 )\n" + tail)
    assert contained(fp.hunks[0], NormalizedText(landed))[0]
    # and still not when only one of the two added lines is there
    half = (head + b"    first_value = compute_something_long( 1 )\n"
            b"    total_value = sum(values) * scale\n" + tail)
    assert not contained(fp.hunks[0], NormalizedText(half))[0]


def test_each_hunk_is_placed_on_its_own_as_a_search_for_it_alone_places_it():
    """A hunk's own forward state is where a search for it alone puts it, whatever the
    whole-file application did around it (the hunks before the first one placed take the
    whole-file outcome, the search being the same): on random targets where hunks are gone,
    moved, fuzzed or in place."""
    import random

    from patchforge.apply.hunks import apply_hunks, lines_of

    rng = random.Random(19)
    words = [b"alpha\n", b"beta\n", b"{\n", b"}\n", b"\n", b"return x\n"]
    differ = 0
    for _ in range(300):
        # Few distinct lines: contexts match in several places, as braces and blank lines do.
        old = [rng.choice(words) if rng.random() < 0.7 else b"line %d\n" % i for i in range(50)]
        new = list(old)
        for i in sorted(rng.sample(range(50), 5), reverse=True):
            new[i] = b"fixed %d\n" % i
        fp = file_patch(b"".join(old), b"".join(new))
        target = list(old)
        for _ in range(rng.randrange(0, 6)):  # upstream: edits, insertions, moved blocks
            i = rng.randrange(len(target))
            what = rng.randrange(3)
            if what == 0:
                target[i] = b"upstream %d\n" % rng.randrange(1000)
            elif what == 1:
                target[i:i] = [rng.choice(words) for _ in range(rng.randrange(1, 4))]
            else:
                block = target[i:i + rng.randrange(3, 12)]
                del target[i:i + len(block)]
                j = rng.randrange(len(target) + 1)
                target[j:j] = block
        current = b"".join(target)
        verdict = assess_file(fp, b"".join(old), current)
        alone = [apply_hunks(lines_of(current), (h,), max_fuzz=2, build=False)[1][0].status
                 for h in fp.hunks]
        assert [h.forward for h in verdict.hunks] == alone
        whole = apply_hunks(lines_of(current), fp.hunks, max_fuzz=2, build=False)[1]
        differ += [o.status for o in whole] != alone
    assert differ  # cases where the whole-file application places a hunk elsewhere


def test_changed_sides_written_out_are_line_kind_and_line_content():
    """_kinds spells out diffparse.line_kind for speed, and _changed_side takes a side's
    changed lines from the hunk's side: on hunks with empty and bare-newline context lines,
    CRs and missing newlines they give what a pass over the lines with line_kind and
    line_content gives, whitespace removed from each line."""
    import random

    from patchforge.apply.diffparse import Hunk, line_content, line_kind
    from patchforge.detect import _changed_side, _kinds, _normalized, _strip_ws

    rng = random.Random(3)
    pieces = [b" a b\n", b"+x  y\n", b"-z\t\n", b"\n", b"", b"+\n", b"- \r\n", b" }\n",
              b"+q", b"-r", b" s"]
    for _ in range(500):
        lines = tuple(rng.choice(pieces) for _ in range(rng.randrange(0, 12)))
        hunk = Hunk(1, 1, 1, 1, b"", lines, rng.random() < 0.5, rng.random() < 0.5, 1)
        kinds = [line_kind(line) for line in lines]
        assert _kinds(hunk) == kinds
        for kind in (b"+", b"-"):
            changed = [i for i, k in enumerate(kinds) if k == kind]
            wanted = [line_content(lines[i]) for i in range(changed[0], changed[-1] + 1)
                      if kinds[i] in (kind, b" ")] if changed else []
            assert _changed_side(hunk, kind, kinds) == \
                b"".join(_strip_ws(line) for line in wanted)
            assert _normalized(wanted) == b"".join(_strip_ws(line) for line in wanted)


def test_a_patch_merges_its_files_side_by_side_with_the_same_verdicts():
    """assess_patch starts the merges of its files' checks as it meets them and finishes them
    MERGES_AT_ONCE at a time: on a patch of more files than that, landed by an empty merge or
    not, every file's verdict is the one assess_file gives the file alone."""
    from types import SimpleNamespace

    from patchforge.detect import MERGES_AT_ONCE, assess_patch

    around = FIXED.replace(b"    workers = config.workers\n",
                           b"    workers = max(1, config.workers)\n")
    other = BASE.replace(FIX_OLD, FIX_NEW.replace(b"(timeout)", b"(timeout * 2)"))
    targets = {f"f{k}.py": (around, other, FIXED)[k % 3] for k in range(MERGES_AT_ONCE + 7)}
    patch = SimpleNamespace(file_patches=[file_patch(BASE, FIXED, path) for path in targets])
    verdict = assess_patch("p", patch, read_base=lambda path: BASE,
                           read_current=targets.get, exists_in_target=targets.__contains__,
                           find_rename=lambda path: None)
    assert [f.path for f in verdict.files] == list(targets)
    for fp, got in zip(patch.file_patches, verdict.files):
        alone = assess_file(fp, BASE, targets[fp.path])
        assert (got.merged_empty, got.hunks) == (alone.merged_empty, alone.hunks)
    assert sum(f.merged_empty for f in verdict.files) == len(range(0, len(targets), 3))


def test_a_line_is_looked_up_in_a_file_as_between_two_line_ends_of_the_padded_file():
    """detect._is_a_line_of (asked without copying the file) says what the search of
    LF + text + LF in LF + file + LF says, on every line of random small files (empty
    lines, CR, no LF at the end, the empty file) and on texts they do not hold."""
    import random

    from patchforge.detect import _is_a_line_of

    rng = random.Random(29)
    words = [b"a", b"b", b"", b"a b", b"b\r", b"ab"]
    found = 0
    for _ in range(3000):
        content = b"\n".join(rng.choice(words) for _ in range(rng.randint(0, 5)))
        text = rng.choice(words + [b"c"])
        padded = b"\n" + text + b"\n" in b"\n" + content + b"\n"
        assert _is_a_line_of(content, text) == padded, (content, text)
        found += padded
    assert 500 < found < 2500


def test_a_line_the_patch_adds_that_neither_file_has_is_what_the_line_sets_find():
    """detect._adds_a_line_neither_has (asked before applying the patch to the base) says True
    only where merge_can_give_ours of that application says False: on random edits of small
    files of few distinct lines (blank lines, CR line ends, no LF at the end, empty files), and
    it says so for most of the cases the line sets rule out that it looks at."""
    import random

    from patchforge.apply.hunks import apply_file_patch
    from patchforge.detect import _adds_a_line_neither_has
    from patchforge.store.diff import merge_can_give_ours

    rng = random.Random(23)
    words = [b"a\n", b"b\n", b"c c\n", b"\n", b"d\r\n", b"  a\n", b"e\n"]

    def edit(lines):
        out = list(lines)
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(out))
            if rng.random() < 0.3 and at < len(out):
                del out[at]
            else:
                out.insert(at, rng.choice(words + [b"new %d\n" % rng.randint(0, 3)]))
        return out

    def content(lines):
        data = b"".join(lines)
        return data[:-1] if data and rng.random() < 0.2 else data  # no LF at the end

    said = ruled_out = 0
    for _ in range(500):
        base = content([rng.choice(words) for _ in range(rng.randint(0, 7))])
        new = content(edit(base.splitlines(keepends=True)))
        current = content(edit(base.splitlines(keepends=True)))
        if new == base or not base:
            continue
        fp = file_patch(base, new)
        patched = apply_file_patch(base, fp, max_fuzz=0)
        assert patched.ok and patched.content == new
        cannot = not merge_can_give_ours(base, current, patched.content)
        if _adds_a_line_neither_has(fp, base, current):
            assert cannot, (base, new, current)
            said += 1
        ruled_out += cannot
    assert said > 150 and said >= ruled_out * 9 // 10, (said, ruled_out)


def test_own_place_blocks_of_many_files_from_one_git_diff_are_each_files_own(tmp_path):
    """store.diff.changed_blocks diffs several (base, target) pairs in one git process: each
    pair's blocks are what `git diff --no-index -U0` of those two files alone gives (a changed
    line, a pure addition, a pure removal, no change, a file git takes for binary)."""
    import re
    import subprocess

    from patchforge.store.diff import changed_blocks

    lines = [b"line %d\n" % i for i in range(40)]
    pairs = [(BASE, FIXED),
             (b"".join(lines), b"".join(lines[:5] + [b"new\n", b"new too\n"] + lines[5:])),
             (b"".join(lines), b"".join(lines[:10] + lines[13:30] + [b"x\n"] + lines[31:])),
             (BASE, BASE),
             (b"a\0b\n", b"a\0c\n")]

    def git_blocks(old: bytes, new: bytes):
        (tmp_path / "old").write_bytes(old)
        (tmp_path / "new").write_bytes(new)
        out = subprocess.run(["git", "diff", "--no-index", "-U0", "--diff-algorithm=myers",
                              "--indent-heuristic", "old", "new"], cwd=tmp_path,
                             capture_output=True).stdout
        if b"Binary files" in out:
            return None
        blocks = []
        for a, b, c, d in re.findall(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", out, re.M):
            old_count, new_count = int(b or 1), int(d or 1)
            old_start = int(a) - (1 if old_count else 0)
            new_start = int(c) - (1 if new_count else 0)
            blocks.append((old_start, old_start + old_count, new_start, new_start + new_count))
        return blocks

    assert changed_blocks(pairs) == [git_blocks(old, new) for old, new in pairs]
    assert changed_blocks(pairs[1:2]) == changed_blocks(pairs)[1:2]


def test_a_later_batch_of_own_place_diffs_looks_again_only_at_files_that_changed(monkeypatch):
    """PlaceDiffs offers the rest of a walk's files to each new batch of diffs: a file offered
    before with the same two contents (the same objects) is made, batched or ruled out by
    may_diff already, and is not asked again; a file the walk met changed is. The pre-check
    may_diff made of a hunk is elsewhere's answer for it, not asked again. The blocks are each
    pair's own whichever batch made them."""
    from patchforge import detect
    from patchforge.apply.hunks import ReversedHunk, _fuzzed
    from patchforge.detect import OwnPlaces, PlaceDiffs
    from patchforge.store.diff import changed_blocks

    other = BASE.replace(b"def teardown", b"# moved\n\n\ndef teardown")
    fixed_other = FIXED.replace(b"def teardown", b"# moved\n\n\ndef teardown")
    second = BASE.replace(b"timeout = config.timeout", b"timeout = config.get('timeout')")
    fp1, fp2 = file_patch(BASE, FIXED, "a.py"), file_patch(BASE, FIXED, "b.py")
    asked: list[str] = []
    prechecked: list[bytes] = []
    real_may_diff, real_precheck = OwnPlaces.may_diff, detect._lands_without_diff

    def may_diff(fp, *args):
        asked.append(fp.new_path)
        return real_may_diff(fp, *args)

    def precheck(hunk, post, base, current):
        prechecked.append(current)
        return real_precheck(hunk, post, base, current)

    monkeypatch.setattr(OwnPlaces, "may_diff", staticmethod(may_diff))
    monkeypatch.setattr(detect, "_lands_without_diff", precheck)
    walk = [(fp1, BASE, fixed_other), (fp2, BASE, second)]
    places = PlaceDiffs(lambda: walk)
    first = places.blocks(BASE, other)
    assert sorted(asked) == ["a.py", "b.py"]
    assert prechecked == [fixed_other]  # a.py's fix is there: its reverse-apply is found
    post = _fuzzed(ReversedHunk(fp1.hunks[0]), 0)[1]
    assert places.lands_without_diff(fp1, 0, fp1.hunks[0], post, BASE, fixed_other) == \
        real_precheck(fp1.hunks[0], post, BASE, fixed_other)
    assert prechecked == [fixed_other]
    asked.clear()
    changed = fixed_other + b"# more\n"  # the walk met a.py changed: offered again
    walk = [(fp1, BASE, changed), (fp2, BASE, second)]
    later = places.blocks(BASE, BASE + b"# end\n")
    assert asked == ["a.py"]
    places.lands_without_diff(fp1, 0, fp1.hunks[0], post, BASE, other)  # not offered so
    assert prechecked == [fixed_other, changed, other]
    assert [first, later, places.blocks(BASE, second)] == \
        changed_blocks([(BASE, other), (BASE, BASE + b"# end\n"), (BASE, second)])


def test_whole_line_questions_answer_alike_scanned_and_counted():
    """The whole-line questions landed detection asks of a file (_has_line, _line_count,
    _has_lines, _is_a_line_of) are scans of its bytes until the file has been asked enough of
    them, then lookups in its lines counted once (detect._CountedLines): every answer, before
    and after, is what the file's lines say, on random small files (empty lines, CR, spaces,
    no LF at the end, the empty file) and lines they hold or not, with and without their LF,
    a line holding an LF inside among them."""
    import random

    from patchforge.detect import (_CountedLines, _has_line, _has_lines, _is_a_line_of,
                                   _line_count)

    rng = random.Random(43)
    words = [b"a", b"b", b"", b"a b", b"b\r", b"ab", b" "]
    asked = 0
    counted = 0
    for _ in range(400):
        # A new object each time (the same bytes may come again): each is followed on its own.
        content = bytes(bytearray(b"\n".join(rng.choice(words)
                                              for _ in range(rng.randint(0, 8)))))
        pieces = content.split(b"\n")
        whole = pieces[:-1]  # the lines that end with an LF
        for _ in range(_CountedLines.SCANS_BEFORE_COUNT * 3):
            text = rng.choice(words + [b"c", b"a\nb"])
            line = text + b"\n" if rng.random() < 0.7 else text
            wanted = rng.randint(0, 3)
            which = rng.randrange(4)
            ask = [lambda c: _has_line(c, line), lambda c: _line_count(c, line),
                   lambda c: _has_lines(c, line, wanted), lambda c: _is_a_line_of(c, text)][which]
            if b"\n" in text:  # (left to the scan: what a copy asked for the first time says)
                expected = ask(bytes(bytearray(content)))
            elif line.endswith(b"\n"):
                expected = [text in whole, whole.count(text), whole.count(text) >= wanted,
                            text in pieces][which]
            else:
                expected = [pieces[-1] == text, None, None, text in pieces][which]
                if expected is None:
                    continue  # (_line_count and _has_lines are asked of whole lines only)
            assert ask(content) == expected, (content, line, which, wanted)
            asked += 1
        counted += _CountedLines.of(content) is not None
    assert counted > 300 and asked > 20000


def test_whole_lines_are_counted_when_the_same_line_follows_itself():
    """The own-place pre-check counts how many lines of the target are a context line: two
    equal lines one after the other share the newline between them, and a count of
    `\\n` + line, which never overlaps its matches, said one. The pre-check then took a line
    present twice for one inside the post-image's copy, and let a reverse-apply stand without
    asking where the own place is."""
    from patchforge.detect import _line_count

    line = b"    torch.cuda.synchronize()\n"
    assert _line_count(b"x = 1\n" + line + line, line) == 2
    assert _line_count(line * 3, line) == 3
    assert _line_count(b"#" + line + line, line) == 1
    assert _line_count(b"", line) == 0


def _moved_lines_by_whole_file(fp, hunk, base: bytes, current: bytes, at_line: int) -> set[str]:
    """Every answer `_removed_line_moved` may give, read off the files' lines one by one: for
    each line of at least MIN_CONTAINED_CHARS (whitespace removed) the hunk removes, that the
    patch's hunks remove more often than they add (`count`), which `current` has more often
    than `base` less `count`, the first of its lines in `current` within ANCHOR_DISTANCE
    lines of the reverse-apply's place."""
    from patchforge.apply.diffparse import line_content
    from patchforge.detect import ANCHOR_DISTANCE, MIN_CONTAINED_CHARS

    def lines(text: bytes) -> list[bytes]:
        return [line + b"\n" for line in text.split(b"\n")[:-1]]

    at = at_line - 1
    lo, hi = at - ANCHOR_DISTANCE, at + len(hunk.new_lines()) + ANCHOR_DISTANCE
    found = set()
    for raw in hunk.lines:
        line = line_content(raw)
        if raw[:1] != b"-" or not line.endswith(b"\n") or \
                len(b"".join(line.split())) < MIN_CONTAINED_CHARS:
            continue
        count = sum((raw2[:1] == b"-") - (raw2[:1] == b"+") for h in fp.hunks for raw2 in h.lines
                    if raw2[:1] in (b"-", b"+") and line_content(raw2) == line)
        here = [n for n, each in enumerate(lines(current)) if each == line]
        near = [n for n in here if lo <= n <= hi]
        if count > 0 and near and len(here) > lines(base).count(line) - count:
            found.add(f"line {near[0] + 1}")
    return found


def _random_fixes(rng, words: list[bytes], count: int):
    """`count` random files of `words`, each with a fix of it (one to three lines taken out,
    up to two given another argument and put in anywhere): (the file's lines, the fixed
    file's, the file patch) of each fix that changes something."""
    for _ in range(count):
        base_lines = [rng.choice(words) for _ in range(rng.randint(8, 40))]
        fixed = list(base_lines)
        for _ in range(rng.randint(1, 3)):
            del fixed[rng.randrange(len(fixed))]
        for _ in range(rng.randint(0, 2)):
            fixed.insert(rng.randrange(len(fixed) + 1),
                         rng.choice(words).replace(b")", b", 1)"))
        if fixed != base_lines:
            yield base_lines, fixed, file_patch(b"".join(base_lines), b"".join(fixed))


def test_a_removed_line_moved_near_its_place_is_what_a_search_of_every_line_finds():
    """`_removed_line_moved` looks for a line the hunk removes only in the lines around the
    place its reverse-apply found (the copy of the post-image at that line, the lines counted
    only where that copy is not the file's only one), and counts the line in both files only
    for a line found there. Its answer is the one read off every line of both files
    (`_moved_lines_by_whole_file`), on random files with repeated lines, removed lines put
    back near and far, and copies of the post-image. A guard: it holds on main too (which
    searched the whole files, and chose among several such lines in a set's order)."""
    import random

    from patchforge.apply.diffparse import split_lines
    from patchforge.apply.hunks import ReversedHunk, apply_hunks
    from patchforge.detect import _removed_line_moved

    words = [b"    torch.cuda.synchronize(device=rank)\n", b"    barrier(group=world, tag=7)\n",
             b"    out = project(query, key, value)\n", b"    return out\n", b"\n",
             b"    workspace = allocate(query, 2)\n", b"    x += 1\n",
             b"    scale = compute_scale(out, dtype)\n"]
    rng = random.Random(1907)
    asked = moved = 0
    for base_lines, fixed, fp in _random_fixes(rng, words, 700):
        base, patched, current_lines = b"".join(base_lines), b"".join(fixed), list(fixed)
        for _ in range(rng.randint(0, 4)):
            line = rng.choice(base_lines + words)
            current_lines.insert(rng.randrange(len(current_lines) + 1), line)
        if rng.random() < 0.5:  # a removed line put back at the edge of the place's lines
            hunk = rng.choice(fp.hunks)
            removed = [line[1:] for line in hunk.lines if line[:1] == b"-"]
            post = hunk.new_lines()
            start = b"".join(current_lines).find(b"".join(post)) if post else -1
            if removed and start >= 0:
                start = b"".join(current_lines)[:start].count(b"\n")
                at = rng.choice([start - 7, start - 6, start + len(post) + 6,
                                 start + len(post) + 7])
                if 0 <= at <= len(current_lines):
                    current_lines.insert(at, rng.choice(removed))
        if rng.random() < 0.3:  # another copy of a hunk's post-image
            post = rng.choice(fp.hunks).new_lines()
            at = rng.randrange(len(current_lines) + 1)
            current_lines[at:at] = post
        current = b"".join(current_lines)
        for hunk in fp.hunks:
            if not any(line[:1] == b"-" for line in hunk.lines):
                continue
            found = apply_hunks(split_lines(current), (ReversedHunk(hunk),), max_fuzz=0,
                                build=False)[1][0]
            if found.status not in ("exact", "offset"):
                continue
            asked += 1
            want = _moved_lines_by_whole_file(fp, hunk, base, current, found.at_line)
            moved_to = _removed_line_moved(fp, hunk, base, current, found)
            got = None if moved_to is None else moved_to[0]
            assert (got is None) == (not want) and (got is None or got in want), \
                (base, patched, current, got, want)
            moved += got is not None
    assert asked > 400 and moved > 80, (asked, moved)


def test_the_moved_inside_check_answers_alike_with_and_without_its_pre_check(monkeypatch):
    """`_removed_line_moved_inside` first asks the file for either half of the lines of the
    hunk's post-image that fuzz 2 leaves (`_inner_post_image_there`), and answers None at
    once without both, before its searches per removed line. Its answer is the one made
    without that pre-check, on random files: a line the fix removes put back among the post-image's
    lines or next to them, or its call given other arguments, outer context lines edited
    (fuzz), lines of the post-image taken out. Fails on main, which has no pre-check."""
    import random

    from patchforge import detect

    words = [b"    torch.cuda.synchronize(device=rank)\n", b"    barrier(group=world, tag=7)\n",
             b"    out = project(query, key, value)\n", b"    return out\n", b"\n",
             b"    workspace = allocate(query, 2)\n", b"    x += 1\n",
             b"    scale = compute_scale(out, dtype)\n", b"    logits = paged(query, indptr)\n",
             b"    weights = select_topk(logits)\n"]
    rng = random.Random(2911)
    answers = {True: [], False: []}
    cut_short = 0
    for base_lines, fixed, fp in _random_fixes(rng, words, 600):
        base, patched, current_lines = b"".join(base_lines), b"".join(fixed), list(fixed)
        hunk = rng.choice(fp.hunks)
        removed = [line[1:] for line in hunk.lines if line[:1] == b"-"]
        post = hunk.new_lines()
        start = patched.find(b"".join(post)) if post else -1
        if removed and start >= 0:
            start = patched[:start].count(b"\n")
            put = rng.choice(removed)
            if rng.random() < 0.3:
                put = put.replace(b")", b", group=g)")
            current_lines.insert(rng.randint(max(0, start - 2), start + len(post) + 2), put)
        for _ in range(rng.randint(0, 2)):  # an outer context line edited, another put in
            at = rng.randrange(len(current_lines))
            current_lines[at] = current_lines[at].replace(b"query", b"q")
            current_lines.insert(rng.randrange(len(current_lines) + 1), rng.choice(words))
        if rng.random() < 0.5:  # a line of the post-image taken out of the file
            gone = rng.choice(post) if post else b""
            current_lines = [line for line in current_lines if line != gone]
        current = b"".join(current_lines)
        for each in fp.hunks:
            if not any(line[:1] == b"-" for line in each.lines):
                continue
            monkeypatch.undo()
            answers[True].append(detect._removed_line_moved_inside(fp, each, base, current))
            cut_short += not detect._inner_post_image_there(each, current)
            monkeypatch.setattr(detect, "_inner_post_image_there", lambda hunk, current: True)
            answers[False].append(detect._removed_line_moved_inside(fp, each, base, current))
    assert answers[True] == answers[False]
    found = sum(answer is not None for answer in answers[True])
    assert found > 100 and cut_short > 60 and len(answers[True]) > 500, \
        (found, cut_short, len(answers[True]))


def test_a_line_start_is_found_in_the_lines_joined_without_whitespace():
    """`_line_starts`: whether a line of a hunk's post-image starts with a call (whitespace
    removed from both) is one search of the lines joined, each after a line end; the answer
    is the one of each line stripped and asked (`_removed_line_moved_inside` asked so, for
    each line it removes), on random lines of calls, spaces, tabs and carriage returns, the
    last without its line end at times. Fails on main, which has no `_line_starts`."""
    import random

    from patchforge.detect import _line_starts, _strip_ws

    pieces = [b"barrier(", b"bar", b"rier(", b"(", b" ", b"\t", b"\r", b"x", b"g)", b"dist."]
    rng = random.Random(29)
    found = 0
    for _ in range(3000):
        lines = [b"".join(rng.choice(pieces) for _ in range(rng.randint(0, 6))) + b"\n"
                 for _ in range(rng.randint(1, 6))]
        if rng.random() < 0.3:
            lines[-1] = lines[-1][:-1]
        wanted = _strip_ws(b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 3))))
        if not wanted:
            continue
        want = any(_strip_ws(line).startswith(wanted) for line in lines)
        assert (b"\n" + wanted in _line_starts(lines)) == want, (lines, wanted)
        found += want
    assert 300 < found < 2700, found


def test_the_twin_pre_check_never_changes_what_contained_away_says(monkeypatch):
    """`_twin_may_fool` (asked by OwnPlaces.contained_away and by may_diff before any base
    file or git diff) answers False only where contained_away, asked in full, lets the
    containment landing stand: on random files of twin functions (the fix's change made in
    the twin, at the own place, in both, with the functions swapped, lines put in between),
    contained_away's answer is the one of its own rule asked of every hunk. A guard: it holds
    on main too (where the pre-check listed every place of each line). These hunks all have
    context on both sides, where a copy's windows anchor it only as the base file tells
    (`_at_place`'s lead_kept and trail_kept), so the pre-check asks of each; it can skip only
    where a side of the hunk has no context."""
    import random

    from patchforge import detect
    from patchforge.apply.hunks import apply_file_patch
    from patchforge.detect import OwnPlaces, _added_copies, _twin_may_fool

    def in_full(own, index, hunk, current):
        # contained_away's own rule, asked of every hunk: the pre-check answering "ask".
        monkeypatch.setattr(detect, "_twin_may_fool", lambda *_: True)
        try:
            return own.contained_away(index, hunk)
        finally:
            monkeypatch.undo()

    vocab = [b"    total = accumulate(values, start=offset)\n", b"    count += 1\n", b"\n",
             b"    result = normalize(total, count)\n", b"    }\n", b"    return result\n",
             b"    check_bounds(values, limit=max_rows)\n", b"    log.debug(total)\n"]
    rng = random.Random(2026)
    asked = refused = skipped = 0
    for _ in range(120):
        body = [rng.choice(vocab) for _ in range(rng.randint(4, 9))]
        line = rng.randrange(len(body))
        fixed_body = list(body)
        new = b"    total = clamp(total, lower=0, upper=limit_value)\n"
        if rng.random() < 0.5:
            fixed_body[line] = new
        else:
            fixed_body.insert(line, new)

        def fn(name: bytes, lines: list[bytes]) -> bytes:
            return b"def " + name + b"(values, offset):\n" + b"".join(lines) + b"\n\n"

        head = b"import os\n\n\n"
        base = head + fn(b"first", body) + fn(b"second", body)
        patched = head + fn(b"first", fixed_body) + fn(b"second", body)
        fp = file_patch(base, patched)
        first, second = rng.choice([(body, fixed_body), (fixed_body, body),
                                    (fixed_body, fixed_body)])
        parts = [fn(b"first", first), fn(b"second", second)]
        if rng.random() < 0.3:
            parts.reverse()
        if rng.random() < 0.5:
            parts.insert(rng.randint(0, 2), b"".join(rng.choice(vocab) for _ in range(3)))
        current = head + b"".join(parts)
        if current == base:
            continue
        own = OwnPlaces(fp, base, current, apply_file_patch)
        for index, hunk in enumerate(fp.hunks):
            if not contained(hunk, current)[0]:
                continue
            asked += 1
            want = in_full(own, index, hunk, current)
            assert own.contained_away(index, hunk) == want, (base, patched, current)
            refused += want is not None
            skipped += not _twin_may_fool(hunk, current, _added_copies(hunk, current))
    assert asked > 40 and refused > 5, (asked, refused, skipped)
