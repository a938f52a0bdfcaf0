"""The pull-request body: the upstream's own template filled from the patch, or a plain body.

Owns: finding the upstream's pull-request template in the store at the PR's base, splitting it
into its Markdown sections, recognising what each asks for (purpose, test plan, test result,
documentation, linked issues), and filling those from what the patch records: its description,
`Bug` and `Origin`, the profiles it is carried on with the hardware the configuration says they
describe, and the measured results in its description (lines with numbers and units, before ->
after arrows, percentages, tables). What the patch does not record is said plainly in the body
and listed in `Body.unfilled`, never made up. HTML comments, checklists and text the template
holds are kept as they are.
"""
from __future__ import annotations

import posixpath
import re

from patchforge.model.record import field, record

# Where GitHub looks for a pull-request template, in its order (the names are case-insensitive
# on GitHub; these are the spellings in use).
TEMPLATE_PATHS = (
    ".github/pull_request_template.md", ".github/PULL_REQUEST_TEMPLATE.md",
    "pull_request_template.md", "PULL_REQUEST_TEMPLATE.md",
    "docs/pull_request_template.md", "docs/PULL_REQUEST_TEMPLATE.md",
)

# "## Test Result" -> the kind of section. Checked in order: "Test Result" is a result, not a plan.
_SECTION_KINDS = (
    ("result", re.compile(r"result|benchmark|performance|measure|numbers", re.I)),
    ("plan", re.compile(r"test|validat|verif|how .*tested|reproduc", re.I)),
    ("docs", re.compile(r"document|docs\b|changelog|release note", re.I)),
    ("links", re.compile(r"related|issue|fixes|links?\b|references?", re.I)),
    ("purpose", re.compile(r"purpose|summary|description|motivation|what|why|changes?|overview|"
                           r"context|background|rationale", re.I)),
)
_HEADING = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^\s*(```|~~~)")
# An instruction to the author that the filled body has carried out ("PLEASE FILL IN THE PR
# DESCRIPTION HERE ..."); dropped from the template's text outside its sections.
_FILL_IN = re.compile(r"^\s*(please\s+)?fill\s+in\b", re.I)

# What makes a line a measurement: before -> after, a percentage, a rate, a speedup, or a metric
# name next to a number. Sizes and durations alone ("2 GiB", "a 5 ms timeout") are how a bug is
# explained as often as how a fix is measured, so they count only inside a table.
_MEASURE = re.compile(
    r"\d\s*\S*\s*(?:→|->|=>)\s*[-+−]?\d"
    r"|[-+−]?\d+(?:\.\d+)?\s?%"
    r"|\d(?:\.\d+)?\s?(?:tok/s|tokens/s|req/s|it/s|samples/s|GB/s|GiB/s|TB/s|MB/s|TFLOPS|GFLOPS|"
    r"TFLOP/s)(?![A-Za-z])"
    r"|\d(?:\.\d+)?\s?(?-i:x)\s+(?:faster|slower|speedup|higher|lower|more|less)\b"
    r"|\b(?:accuracy|gsm8k|strict-match|throughput|latency|TTFT|TPOT|ITL|p50|p90|p99|speedup)\b"
    r"[^\n]*\d",
    re.I)
_VALIDATION = re.compile(r"\b(tested|validated|validation|verified|pytest|lm_eval|lm-eval|"
                         r"reproduc\w*|benchmark(?:ed|s)?)\b", re.I)
_DOC_PATH = re.compile(r"(^|/)(docs?|documentation)/|\.(md|rst)$", re.I)


@record(frozen=True)
class Facts:
    """What the patch and the project record, as the body uses it."""

    subject: str
    description: str
    bugs: tuple[str, ...]
    origin: str | None
    profiles: tuple[tuple[str, str], ...]  # (name, what hardware it describes)
    profiles_all: bool  # the patch names no profiles: it is carried on every one
    carried_on: str  # e.g. "vllm 0.32.0 (wheel)"
    image: str | None
    paths: tuple[str, ...]
    forge_repo: str | None
    onto: str  # e.g. "main at 1234567890ab"
    how: str  # applies exactly | applies with offset | 3-way merged


@record
class Body:
    text: str
    template: str | None  # the template's path in the upstream, or None
    filled: list[str] = field(default_factory=list)
    unfilled: list[str] = field(default_factory=list)


# Links followed from a template's place to the file it names, at most (a checkout's kernel
# gives up on a loop alike).
_TEMPLATE_LINK_HOPS = 8


def find_template(lookup, notes: list[str] | None = None) -> tuple[str, str] | None:
    """(path, text) of the upstream's template; `lookup(path)` gives the tree's (mode, bytes)
    of a path, or None when it is no file there.

    Only a regular file's bytes are a template's text. A symbolic link's blob is the path it
    names: read as text, `.github/PULL_REQUEST_TEMPLATE.md -> ../docs/pr_template.md` made the
    body `../docs/pr_template.md`, said to be the upstream's template. A link is followed
    inside the tree, as a checkout gives it; one leading outside the tree (an absolute path,
    `..` past the root), to no file, or in a loop is not used, and a note in `notes` says so."""
    for path in TEMPLATE_PATHS:
        data = _template_text(lookup, path, notes if notes is not None else [])
        if data is not None:
            return path, data.decode("utf-8", "replace").replace("\r\n", "\n")
    return None


def _template_text(lookup, path: str, notes: list[str]) -> bytes | None:
    at = path
    for _ in range(_TEMPLATE_LINK_HOPS):
        found = lookup(at)
        if found is None:
            if at != path:
                notes.append(f"{path} is a symbolic link to {at}, which is no file in the "
                             "upstream's tree: not used as the pull-request template")
            return None
        mode, data = found
        if mode in ("100644", "100755"):
            if at != path:
                notes.append(f"{path} is a symbolic link to {at}: that file is the "
                             "pull-request template")
            return data
        if mode != "120000":
            return None  # a submodule: no text of this tree
        target = data.decode("utf-8", "surrogateescape")
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(at), target))
        if target.startswith("/") or joined == ".." or joined.startswith("../") \
                or not joined.isprintable():
            notes.append(f"{path} is a symbolic link leading outside the upstream's tree: "
                         "not used as the pull-request template")
            return None
        at = joined
    notes.append(f"{path} is a symbolic link that leads to no file (a loop): not used as the "
                 "pull-request template")
    return None


# ---- reading the description ----------------------------------------------------------------

def paragraphs(text: str) -> list[str]:
    """Blank-line separated paragraphs; a one-line caption ending in ":" stays with the table
    that follows it ("Decode traces on MI355X:" + the table)."""
    found = [p.strip("\n") for p in re.split(r"\n[ \t]*\n", text) if p.strip()]
    out: list[str] = []
    for p in found:
        if out and _is_table(p) and "\n" not in out[-1] and out[-1].rstrip().endswith(":"):
            out[-1] = out[-1] + "\n\n" + p
        else:
            out.append(p)
    return out


def _is_table(paragraph: str) -> bool:
    lines = [line for line in paragraph.splitlines() if line.strip()]
    rows = [line for line in lines if line.count("\t") >= 1 or line.strip().count("|") >= 2]
    return len(lines) >= 2 and len(rows) >= max(2, len(lines) - 1)


def measured_blocks(description: str) -> list[str]:
    """Paragraphs of the description that carry measurements (tables kept whole)."""
    return [p for p in paragraphs(description) if _is_measured(p)]


def _markdown_table(paragraph: str) -> str:
    """A tab-separated table as a Markdown table (Markdown tables are kept as they are)."""
    lines = paragraph.splitlines()
    if all("|" in line for line in lines if line.strip()):
        return paragraph
    header_at = next((k for k, line in enumerate(lines) if "\t" in line), None)
    if header_at is None:
        return paragraph
    caption = lines[:header_at]
    rows = [[cell.strip() for cell in line.split("\t")] for line in lines[header_at:]]
    width = max(len(r) for r in rows)
    rows = [r + [""] * (width - len(r)) for r in rows]
    out = caption + ([""] if caption else [])
    out.append("| " + " | ".join(rows[0]) + " |")
    out.append("|" + "---|" * width)
    out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
    return "\n".join(out)


def _is_measured(paragraph: str) -> bool:
    table = paragraph.split("\n\n")[-1]
    if _is_table(table) and re.search(r"\d", table):
        return True
    return any(_MEASURE.search(line) for line in paragraph.splitlines())


def _paragraph_kind(paragraph: str) -> str:
    """Which section a paragraph of the description belongs to: result, plan or purpose."""
    if _is_measured(paragraph):
        return "result"
    if _VALIDATION.search(paragraph):
        return "plan"
    return "purpose"


def _render_block(paragraph: str) -> str:
    if "\n\n" in paragraph:  # a caption and its table
        caption, table = paragraph.split("\n\n", 1)
        return caption + "\n\n" + _render_block(table)
    return _markdown_table(paragraph) if _is_table(paragraph) else paragraph


# ---- what each section says -----------------------------------------------------------------

def _issue_ref(url: str, forge_repo: str | None) -> str:
    match = re.match(r"^https?://[^/]+/([^/]+/[^/]+)/issues/(\d+)$", url)
    if match and forge_repo and match[1].lower() == forge_repo.lower():
        return f"#{match[2]}"  # GitHub closes it when the PR merges
    return url


def purpose_text(facts: Facts) -> str:
    # Measurements go to the test result and how it was tested to the test plan, not twice.
    blocks = [p for p in paragraphs(facts.description) if _paragraph_kind(p) == "purpose"]
    lines = ["\n\n".join(_render_block(b) for b in blocks) if blocks else facts.subject + "."]
    links = links_text(facts)
    if links:
        lines.append(links)
    return "\n\n".join(lines)


def links_text(facts: Facts) -> str:
    lines = [f"Fixes {_issue_ref(url, facts.forge_repo)}" for url in facts.bugs]
    if facts.origin:
        lines.append(f"Origin: {facts.origin}")
    return "\n".join(lines)


def environment_text(facts: Facts) -> str:
    if facts.profiles:
        described = ", ".join(f"`{n}` ({d})" if d else f"`{n}`" for n, d in facts.profiles)
        scope = ("every profile this stack runs" if facts.profiles_all else "the profiles")
        where = f"Carried downstream on {facts.carried_on}, on {scope}: {described}."
    else:
        where = f"Carried downstream on {facts.carried_on}."
    if facts.image:
        where += f" Image: `{facts.image}`."
    return where


def plan_text(facts: Facts) -> tuple[str, bool]:
    """(text, whether the patch recorded how it was tested)."""
    validation = [p for p in paragraphs(facts.description) if _paragraph_kind(p) == "plan"]
    parts = [environment_text(facts),
             f"Rebased onto {facts.onto} ({facts.how}) for this pull request."]
    if validation:
        parts.append("From the patch description:\n\n" + "\n\n".join(validation))
        return "\n\n".join(parts), True
    parts.append("_How it was tested (commands, models, settings) is not recorded in the "
                 "patch; fill in before opening._")
    return "\n\n".join(parts), False


def result_text(facts: Facts) -> tuple[str, bool]:
    blocks = measured_blocks(facts.description)
    if not blocks:
        return ("_No measured results are recorded in the patch's description; fill in before "
                "opening._"), False
    return ("Measured downstream (from the patch description):\n\n"
            + "\n\n".join(_render_block(b) for b in blocks)), True


def docs_text(facts: Facts) -> str:
    docs = [p for p in facts.paths if _DOC_PATH.search(p)]
    if docs:
        return "Updated: " + ", ".join(f"`{p}`" for p in docs) + "."
    return "None: this change touches no documentation."


# ---- filling ----------------------------------------------------------------------------------

@record
class _Section:
    heading: str | None  # the heading line, None for the text before the first heading
    title: str
    lines: list[str]


def _split_sections(text: str) -> list[_Section]:
    sections = [_Section(None, "", [])]
    in_comment = in_fence = False
    for line in text.split("\n"):
        if not in_comment and _FENCE.match(line):
            in_fence = not in_fence
        match = None if (in_comment or in_fence) else _HEADING.match(line)
        if match:
            sections.append(_Section(line, match[2], []))
        else:
            sections[-1].lines.append(line)
        if not in_fence:
            # Track <!-- ... --> spanning lines; a heading inside a comment is not a section.
            opened, closed = line.rfind("<!--"), line.rfind("-->")
            if opened > closed:
                in_comment = True
            elif closed > opened or (closed >= 0 and opened < 0):
                in_comment = False
    return sections


def _kind(title: str) -> str | None:
    for kind, pattern in _SECTION_KINDS:
        if pattern.search(title):
            return kind
    return None


def _insert_at(lines: list[str]) -> int:
    """Where filled text goes in a section: after its leading blank lines and HTML comments
    (the template's instructions stay above what answers them)."""
    k = 0
    in_comment = False
    while k < len(lines):
        stripped = lines[k].strip()
        if in_comment:
            in_comment = "-->" not in stripped
        elif stripped.startswith("<!--"):
            in_comment = "-->" not in stripped
        elif stripped:
            break
        k += 1
    return k


def _section_texts(facts: Facts) -> dict[str, tuple[str, bool]]:
    """Each section's text (from the patch: never raw HTML, see formats.markdown)."""
    from patchforge.formats.markdown import escape_html

    plan, result = plan_text(facts), result_text(facts)
    return {"purpose": (escape_html(purpose_text(facts)), True),
            "plan": (escape_html(plan[0]), plan[1]),
            "result": (escape_html(result[0]), result[1]),
            "docs": (escape_html(docs_text(facts)), True),
            "links": (escape_html(links_text(facts)) or "None recorded in the patch.",
                      bool(links_text(facts)))}


def fill_template(template: str, path: str, facts: Facts) -> Body:
    texts = _section_texts(facts)
    body = Body("", path)
    sections = _split_sections(template)
    used: set[str] = set()
    out: list[str] = []
    for section in sections:
        if section.heading is None:
            out += [line for line in section.lines if not _FILL_IN.match(line)]
            continue
        kind = _kind(section.title)
        out.append(section.heading)
        if kind is None or kind in used:
            out += section.lines
            body.unfilled.append(section.title)
            continue
        used.add(kind)
        text, recorded = texts[kind]
        (body.filled if recorded else body.unfilled).append(section.title)
        at = _insert_at(section.lines)
        lead = section.lines[:at]
        if not lead or lead[-1].strip():
            lead = lead + [""]
        rest = section.lines[at:]
        out += lead + text.split("\n") + [""] + rest
    if "purpose" not in used:
        # A template without a purpose-like section (e.g. "FILL IN THE PR DESCRIPTION HERE"):
        # the purpose goes first, the template's own text follows.
        out = texts["purpose"][0].split("\n") + [""] + out
        body.filled.insert(0, "(description)")
    text = "\n".join(out)
    text = re.sub(r"\n{3,}", "\n\n", text).strip("\n") + "\n"
    body.text = text
    return body


def plain_body(facts: Facts) -> Body:
    """The body without a template: the same sections vLLM's template asks for."""
    texts = _section_texts(facts)
    body = Body("", None)
    parts = []
    for title, kind in (("Purpose", "purpose"), ("Test Plan", "plan"), ("Test Result", "result")):
        text, recorded = texts[kind]
        (body.filled if recorded else body.unfilled).append(title)
        parts.append(f"## {title}\n\n{text}")
    body.text = "\n\n".join(parts) + "\n"
    return body


def make_body(facts: Facts, template: tuple[str, str] | None) -> Body:
    if template is None:
        return plain_body(facts)
    path, text = template
    return fill_template(text, path, facts)
