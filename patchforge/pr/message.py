"""The commit a pull request carries: its author, date, message and trailers, from a patch header.

Owns: reading the people a DEP-3 header names (`Author`/`From`, repeated or folded, and any
`Co-authored-by`), the commit date (`Last-Update`, else an email `Date`), the message (subject,
then the Description's continuation lines and the free-text description), and the trailers an
upstream wants (`Fixes:` from `Bug`, `Co-authored-by:` for the other authors, `Signed-off-by:`
when it asks for a DCO sign-off: the submitter's, the committer identity git is given, as
`git commit -s` signs), and that `git am` reads the format-patch file's message as it
is. The trailers are added by `git interpret-trailers`, so a description that already ends in a
trailer block gets them exactly as `git commit -s` would.
"""
from __future__ import annotations

import datetime as _dt
import re
import tempfile
from email.utils import getaddresses, parsedate_to_datetime
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge.errors import InputError, UsageError
from patchforge.model.record import record
from patchforge.store.git import run_git

if TYPE_CHECKING:
    from patchforge.formats.patchfile import PatchFile

_URL = re.compile(r"https?://\S+")


@record(frozen=True)
class Person:
    name: str
    email: str

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


@record(frozen=True)
class CommitSpec:
    """What the PR commit is made of; `date` is git's raw form ("<epoch> +0000")."""

    author: Person
    co_authors: tuple[Person, ...]
    date: str
    date_source: str  # "Last-Update", "Date" or "today"
    subject: str
    message: str  # with trailers
    trailers: tuple[tuple[str, str], ...]


# One person as git writes an identity, `Name <email>`, the name everything before the `<` (a
# comma in it included: `Lovelace, Ada <ada@example.com>`), then the comma before the next one.
_PERSON = re.compile(r"\s*([^<>@]*?)\s*<([^<>\s]+@[^<>\s]+)>\s*(?:,|$)")


def _named(value: str) -> list[tuple[str, str]]:
    """The (name, email) of each person a value names. A folded DEP-3 field may list one
    person per line, and a line several, comma-separated: each `Name <email>` as git writes
    it, else as an email header's address list reads (a bare `ada@example.com`). Read as a
    mail header alone, `Lovelace, Ada <ada@example.com>` (git's identity of one person, as
    `import git` writes it) was two people, the first with no address."""
    people: list[tuple[str, str]] = []
    for part in value.split("\n"):
        if not part.strip():
            continue
        found: list[tuple[str, str]] = []
        at = 0
        while at < len(part) and (match := _PERSON.match(part, at)) is not None:
            found.append((match[1].strip().strip('"'), match[2]))
            at = match.end()
        people += found if found and at >= len(part) else getaddresses([part])
    return people


def names_no_address(value: str) -> bool:
    """Whether an Author, From or Co-authored-by value names a person without an email address
    (`Ada Lovelace`): the commit `pr` makes cannot take it, nor `git am` the mail `export
    --mbox` writes of it."""
    return any(not email or "@" not in email for _, email in _named(value))


def first_person(value: str) -> Person | None:
    """The person an Author value names first, with an email address, as the commit `pr`
    makes takes its author (the others are its co-authors); None when the first names none."""
    for name, email in _named(value)[:1]:
        if email and "@" in email:
            return Person(name.strip() or email, email.strip())
    return None


def _people(values: list[tuple[str, int]], field: str, source: str) -> list[Person]:
    people: list[Person] = []
    for value, line in values:
        if names_no_address(value):
            raise InputError(f"{field}: {value.strip()!r} does not name an email address",
                             path=source, line=line,
                             hint=f"write it as `{field}: Full Name <user@example.com>`")
        for name, email in _named(value):
            person = Person(name.strip() or email, email.strip())
            if person not in people:
                people.append(person)
    return people


def authors(patch: PatchFile) -> tuple[Person, list[Person]]:
    """(the author, the co-authors): the first Author/From is the author; further Author/From
    people and every `Co-authored-by` are co-authors."""
    named = _people(patch.get_all_at("Author"), "Author", patch.source)
    if not named:
        raise InputError("the patch has no Author (or From) field: a pull request commit needs "
                         "an author", path=patch.source,
                         hint="add `Author: Full Name <user@example.com>` to its header")
    co = named[1:]
    for person in _people(patch.get_all_at("Co-authored-by"), "Co-authored-by", patch.source):
        if person not in co and person != named[0]:
            co.append(person)
    return named[0], co


def commit_date(patch: PatchFile, *, today: _dt.date | None = None) -> tuple[str, str]:
    """(git raw date, where it came from). `Last-Update: YYYY-MM-DD` is midnight UTC that day,
    so the same patch always gives the same commit; without it an email `Date:` field, and only
    then today (which changes the commit id from one day to the next)."""
    from patchforge.formats.patchfile import last_update_day

    value = (patch.get("Last-Update") or "").strip()
    if value:
        try:
            day = last_update_day(value)
        except ValueError:
            raise InputError(f"Last-Update: {value!r} is not a date as DEP-3 writes it "
                             "(YYYY-MM-DD)", path=patch.source,
                             line=patch.field_line("Last-Update"),
                             hint="write it as YYYY-MM-DD") from None
        return _epoch(day), "Last-Update"
    date = patch.get("Date")
    if date:
        try:
            when = parsedate_to_datetime(date.replace("\n", " "))
        except (TypeError, ValueError):
            when = None
        utcoffset = when.utcoffset() if when is not None else None
        if when is not None and utcoffset is not None:
            offset = int(utcoffset.total_seconds() // 60)
            sign = "+" if offset >= 0 else "-"
            return (f"{int(when.timestamp())} {sign}{abs(offset) // 60:02d}{abs(offset) % 60:02d}",
                    "Date")
    return _epoch(today or _dt.datetime.now(_dt.timezone.utc).date()), "today"


def _epoch(day: _dt.date) -> str:
    moment = _dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc)
    return f"{int(moment.timestamp())} +0000"


def bug_links(patch: PatchFile) -> list[str]:
    """The URLs in `Bug` (and vendor `Bug-*`) fields, in header order."""
    links: list[str] = []
    for f in patch.fields:
        name = f.name.lower()
        if name == "bug" or name.startswith("bug-"):
            for url in _URL.findall(f.value):
                url = url.rstrip(".,;)")
                if url not in links:
                    links.append(url)
    return links


# `git var GIT_COMMITTER_IDENT`: "Name <email> <epoch> <zone>".
_IDENT = re.compile(r"^(?P<name>.*) <(?P<email>[^<>]*)> \d+ [+-]\d{4}$")


def submitter(cwd: Path, why: str) -> Person:
    """The person a DCO sign-off is made by: the committer identity git is given here
    (GIT_COMMITTER_NAME/EMAIL, else user.name/user.email), as `git commit -s` and `git am -s`
    sign. Never the patch's Author: the sign-off is the submitter's own certification, and a
    colleague's fix sent by someone else is signed by the one sending it. Without an identity
    (git refuses to make one up) the draft is refused (UsageError) before anything is written.
    `why` says why the commit is signed off."""
    proc = run_git("var", "GIT_COMMITTER_IDENT", cwd=cwd, user_config=True, ok=None)
    match = _IDENT.match(proc.stdout.decode("utf-8", "replace").strip()) \
        if proc.returncode == 0 else None
    if match is None or not match["name"].strip() or "@" not in match["email"]:
        raise UsageError(
            f"pr signs the commit off (Signed-off-by; {why}) as the person submitting it, and "
            "git has no identity for you here (user.name and user.email); nothing was written",
            hint="`git config --global user.name \"Your Name\"` and `git config --global "
                 "user.email you@example.com`, or GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL")
    return Person(match["name"].strip(), match["email"].strip())


def build_commit_spec(patch: PatchFile, *, name: str, signoff: Person | None,
                      today: _dt.date | None = None) -> CommitSpec:
    """`signoff`: who signs the commit off (see `submitter`), None for no sign-off."""
    author, co_authors = authors(patch)
    date, date_source = commit_date(patch, today=today)
    subject = patch.subject or name
    body = patch.description_text
    message = subject + "\n" + (f"\n{body}\n" if body else "")
    trailers: list[tuple[str, str]] = [("Fixes", url) for url in bug_links(patch)]
    trailers += [("Co-authored-by", str(p)) for p in co_authors]
    if signoff is not None:
        trailers.append(("Signed-off-by", str(signoff)))
    return CommitSpec(author, tuple(co_authors), date, date_source, subject,
                      add_trailers(message, trailers), tuple(trailers))


def add_trailers(message: str, trailers: list[tuple[str, str]]) -> str:
    """The message with the trailers added by `git interpret-trailers` (an identical trailer
    already there is not repeated)."""
    if not trailers:
        return message
    command = ["-c", "trailer.ifexists=addIfDifferent", "interpret-trailers", "--no-divider"]
    for key, value in trailers:
        if "\n" in value:
            raise InputError(f"trailer {key}: a line break in {value!r}")
        command += ["--trailer", f"{key}: {value}"]
    return run_git(*command, input=message.encode("utf-8"),
                   what="git interpret-trailers").stdout.decode("utf-8")


def check_mail_reading(mail: bytes, message: str, source: str) -> None:
    """Refuse a format-patch file that `git am` would read another message from.

    git's mail reader takes `From:`, `Subject:` or `Date:` at the start of a message's body for
    a header of the mail (an in-body header, as a forwarded patch carries it): a description
    that begins `From: the crash report ...` gave `git am` another author or none ("empty ident
    name"), and the line was gone from the message. `git mailinfo` (what `git am` runs) reads
    the file here, and its message must be the commit's (whitespace at line ends aside).
    """
    with tempfile.TemporaryDirectory(prefix="patchforge-mailinfo-") as scratch:
        msg, patch = Path(scratch, "msg"), Path(scratch, "patch")
        run_git("mailinfo", "-u", str(msg), str(patch), input=mail, what="git mailinfo")
        read = _lines(msg.read_bytes().decode("utf-8", "replace"))
    meant = _lines(message.split("\n", 1)[1] if "\n" in message else "")
    if read == meant:
        return
    first = meant[0] if meant else ""
    if _INBODY_HEADER.match(first):
        why = (f"git's mail reader takes the description's first line {first[:80]!r} for a "
               "header of the mail (From:, Subject:, Date:), not for the message")
    else:
        number = next((k for k, (a, b) in enumerate(zip(meant, read)) if a != b),
                      min(len(meant), len(read)))
        why = (f"line {number + 1} of the message body, "
               f"{(meant[number] if number < len(meant) else '')[:80]!r}, is read as "
               f"{(read[number] if number < len(read) else '')[:80]!r}")
    raise InputError(f"`git am` would not read this fix's message as written: {why}",
                     path=source, hint="begin the description with another line, then run "
                                       "`pr` again")


# What git mailinfo reads as an in-body header at the start of a body (case-insensitively).
_INBODY_HEADER = re.compile(r"(?i)^(from|subject|date):")


def _lines(text: str) -> list[str]:
    """A message body as lines, without blank lines at either end or spaces at line ends."""
    return [line.rstrip() for line in text.strip("\n").split("\n")] if text.strip() else []
