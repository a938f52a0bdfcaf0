"""Text from patches and files made safe to place in the Markdown patchforge writes
(series/PATCHES.md, a pull request's PR.md).

GitHub renders raw HTML in Markdown: a description holding `<!--` hides everything after it, a
`<details>` or `<img>` changes the page. `escape_html` turns every `<` that would open a tag or
a comment into `&lt;` (which renders as `<`), outside code: fenced blocks and inline code spans
show their text literally and are left alone, and so are autolinks (`<https://...>`).
"""
from __future__ import annotations

import re

from patchforge.patterns import on_first_use

_FENCE = on_first_use(r"^ {0,3}(`{3,}|~{3,})")
_AUTOLINK = on_first_use(r"<(https?|mailto):[^\s<>]*>", re.I)
_CODE_SPAN = on_first_use(r"(`+)(.+?)\1", re.S)


def escape_html(text: str) -> str:
    if "<" not in text:
        return text  # only a `<` is ever escaped (most text from patches has none)
    out, fence = [], None
    for line in text.split("\n"):
        match = _FENCE.match(line)
        if fence is not None:
            if match and match.group(1)[0] == fence[0] and len(match.group(1)) >= len(fence):
                fence = None
            out.append(line)
            continue
        if match:
            fence = match.group(1)
            out.append(line)
            continue
        out.append(_escape_line(line))
    return "\n".join(out)


def _escape_line(line: str) -> str:
    parts, last = [], 0
    for span in _CODE_SPAN.finditer(line):
        parts.append(_escape_plain(line[last:span.start()]))
        parts.append(span.group())
        last = span.end()
    parts.append(_escape_plain(line[last:]))
    return "".join(parts)


def _escape_plain(text: str) -> str:
    parts, last = [], 0
    for link in _AUTOLINK.finditer(text):
        parts.append(text[last:link.start()].replace("<", "&lt;"))
        parts.append(link.group())
        last = link.end()
    parts.append(text[last:].replace("<", "&lt;"))
    return "".join(parts)


def code_span(text: str) -> str:
    """`text` as an inline code span that nothing in it can end early: CommonMark ends a span
    at the next run of as many backticks as opened it, so it is opened by a run longer than
    any inside (a path like ``x``<img src=y>``.py`` ended the span at its own backticks and put
    the rest, HTML included, outside code). A text with a backtick is padded with a space at
    each end, which CommonMark takes away, so one at either end is shown."""
    if "`" not in text:
        return f"`{text}`"
    ticks = "`" * (_longest_backticks(text) + 1)
    return f"{ticks} {text} {ticks}"


def code_fence(text: str) -> str:
    """A code fence `text` cannot close: longer than any run of backticks in it (CommonMark
    closes a fence at a line of at least as many). A range-diff quotes patches and git's
    messages, and a line of three backticks in one ended the block there, the rest of the
    range-diff rendered as Markdown (and its `<` as HTML) in the pull request's body."""
    return "`" * max(3, _longest_backticks(text) + 1)


def _longest_backticks(text: str) -> int:
    return max((len(run) for run in re.findall(r"`+", text)), default=0)
