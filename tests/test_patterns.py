"""patchforge.patterns: a pattern compiled at its first use answers as `re.compile`'s does."""
import re

import pytest

from patchforge.patterns import on_first_use

CASES = [
    (r"(\w+)=(\d+)", 0, "a=1, bb=22, c=x, ddd=333"),
    (r"^ {0,3}(`{3,}|~{3,})", re.M, "text\n```py\ncode\n  ~~~~\n"),
    (rb"(?m)^Applied-Upstream:[^\n]*\bcommit[:\s]", 0,
     b"Fix\n\nApplied-Upstream: commit 1234567\nApplied-Upstream: v2\n"),
    (rb"(?:(?:inline|export|typedef)\s+)?(?:namespace|class|struct|union)\b\s*([A-Za-z_]\w*)?",
     re.S, b"namespace a {\nstruct B : C {\nunion {\n"),
]


def _seen(match):
    return match and (match.span(), match.groups())


@pytest.mark.parametrize("pattern, flags, text", CASES)
def test_a_pattern_compiled_at_its_first_use_answers_as_the_compiled_one(pattern, flags, text):
    """Every method and attribute, the first call being any of them: the same answers."""
    compiled = re.compile(pattern, flags)
    empty = text[:0]

    def answers(p):
        return (_seen(p.search(text)), _seen(p.match(text)), _seen(p.fullmatch(text)),
                [_seen(m) for m in p.finditer(text)], p.findall(text),
                p.sub(empty, text), p.subn(empty, text, count=1), p.split(text, maxsplit=2),
                _seen(p.search(text, 1)), p.pattern, p.flags, p.groups, p.groupindex)

    expected = answers(compiled)
    assert answers(on_first_use(pattern, flags)) == expected
    assert answers(on_first_use(pattern, flags)) == expected  # twice: the methods kept
    first_an_attribute = on_first_use(pattern, flags)
    assert first_an_attribute.groups == compiled.groups
    assert answers(first_an_attribute) == expected


def test_a_pattern_is_compiled_only_when_first_used():
    """Made, it compiles nothing (a malformed pattern is not refused); its first use does."""
    pattern = on_first_use(r"(unclosed")
    with pytest.raises(re.error):
        pattern.search("unclosed")


def test_a_copy_or_a_pickle_of_a_pattern_made_on_first_use_works():
    """copy.copy and pickle make the instance without __init__ and ask for attributes before
    its state is set: `__getattr__` asked for `_source` again and recursed without end."""
    import copy
    import pickle

    pattern = on_first_use(r"a+b")
    for made in (copy.copy(pattern), copy.deepcopy(pattern), pickle.loads(pickle.dumps(pattern))):
        assert made.search("xaab").group() == "aab"
    assert pattern.pattern == "a+b"
