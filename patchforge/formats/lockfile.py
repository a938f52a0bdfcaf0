"""`upstream.lock`: versioned, deterministic JSON written by the tool only.

Reading uses typed getters that name the bad value with a dotted path
(`upstreams.vllm.commit: not 40 hex`); writing validates against the published schema and
serializes deterministically (sorted keys, 2-space indent, final newline) through an atomic write.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from patchforge import names
from patchforge.errors import ConfigError, InputError
from patchforge.fsutil import atomic_write
from patchforge.model.lock import LOCK_VERSION, ImagePin, Lock, UpstreamPin
from patchforge.patterns import on_first_use

HEX40 = re.compile(r"^[0-9a-f]{40}$")
HEX64 = on_first_use(r"^[0-9a-f]{64}$")
# The control characters and the two line separators: a latin-1 class and a set, since a class
# reaching past U+00FF costs `re` 0.5 ms to compile at every command's start (names.INVISIBLE).
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_LINE_SEPARATORS = frozenset("\u2028\u2029")
# The image pin's parts, in the characters the OCI distribution spec's grammar allows (a
# reference is parsed fully by net.registry where it is used).
_IMAGE_REFERENCE = on_first_use(r"[A-Za-z0-9][A-Za-z0-9._:/@\[\]-]*")
_IMAGE_TAG = on_first_use(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,127}")
_IMAGE_DIGEST = on_first_use(r"sha256:[0-9a-f]{64}")
SOURCE_KEYS = {"git": ("url",), "wheel": ("package", "version", "filename", "sha256"),
               "dir": ("path",)}


def lock_line_of(path: Path | str, where: str) -> int | None:
    """The line of the value at dotted path `where` in the lock file at `path` (for a message
    about a value that is well-formed but disagrees with something else)."""
    try:
        text = Path(path).read_text("utf-8", "surrogateescape")
    except OSError:
        return None
    return _Reader(str(path), text).line_of(where)


class _Reader:
    def __init__(self, source: str, text: str) -> None:
        self.source = source
        self.text = text

    def fail(self, where: str, message: str):
        raise ConfigError(f"{where}: {message}", path=self.source, line=self.line_of(where))

    def line_of(self, where: str) -> int | None:
        """The line of the value at dotted path `where` (the line of its key), else of the
        nearest key above it that is there: `upstreams.aiter.commit` finds aiter's commit, not
        vllm's, and `upstreams.vllm.version` the pin's own version, not its source's (which a
        sorted lock writes first)."""
        wanted = ".".join(key for key in where.split(".") if not key.startswith("("))
        found, depth = None, 0
        try:
            for path, line, _ in _keys(self.text):
                dotted = ".".join(path)
                if dotted == wanted:
                    return line
                if wanted.startswith(dotted + ".") and len(path) > depth:
                    found, depth = line, len(path)
        except (IndexError, ValueError):
            pass  # text that is not JSON (changed since it was read): no line to name
        return found

    def get(self, obj: dict, key: str, kind, where: str, *, required: bool = True):
        if key not in obj:
            if required:
                self.fail(f"{where}.{key}" if where else key, "missing")
            return None
        value = obj[key]
        if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
            names = kind.__name__ if isinstance(kind, type) else "/".join(k.__name__ for k in kind)
            self.fail(f"{where}.{key}" if where else key, f"must be {names}")
        return value


def _refuse_unknown_keys(r: _Reader, obj: dict, known, where: str) -> None:
    """A key the published schema does not have (a `comment` added by hand, a `note` in a pin)
    is refused, naming its line: read without a word, the next write of the lock would drop it
    without one. patchforge has only ever written the schema's keys."""
    for key in obj:
        if key not in known:
            r.fail(f"{where}.{key}" if where else key,
                   f"not a key of upstream.lock (it has {', '.join(sorted(known))}; "
                   "the lock is patchforge's, written by it only)")


_TOP_KEYS = ("version", "upstreams", "image")
_PIN_KEYS = ("kind", "commit", "tree", "label", "version", "source")
_SOURCE_KEYS_ANY = ("url", "package", "version", "filename", "sha256", "path")
_IMAGE_KEYS = ("reference", "tag", "digest")


class _DuplicateKey(Exception):
    pass


def _refuse_duplicates(pairs: list[tuple[str, object]]) -> dict:
    """json's object hook: a key written twice in one object is refused. json would keep the
    last one silently, while a reviewer reading the lock in a pull request sees the first."""
    seen: dict[str, object] = {}
    for key, value in pairs:
        if key in seen:
            raise _DuplicateKey(key)
        seen[key] = value
    return seen


def _second_key_line(text: str) -> int | None:
    """The line of the first key written again in its own object, in JSON text that parses
    but for that. Found by walking the text's objects, since the same key stands in many
    objects (every pin has a "commit"): the last line that merely holds it can be another
    pin's."""
    return next((line for _, line, again in _keys(text) if again), None)


def _keys(text: str):
    """(path, line, written before in its object?) of every key of the JSON object text, in
    order: path is the keys from the top down to it (an array's items add no key)."""
    # Per open object the keys it has so far and the one whose value is being read; None for
    # an array.
    stack: list[tuple[set[str], list[str]] | None] = []
    expect_key = False
    at = 0
    while at < len(text):
        char = text[at]
        if char == '"':
            end = at + 1
            while text[end] != '"':
                end += 2 if text[end] == "\\" else 1  # an escape is two characters or more
            end += 1
            if expect_key:
                value = json.loads(text[at:end])
                top = stack[-1]
                assert top is not None
                seen, keys = top
                keys[:] = [value]
                yield ([*_open_keys(stack)], text.count("\n", 0, at) + 1, value in seen)
                seen.add(value)
            expect_key = False
            at = end
            continue
        if char == "{":
            stack.append((set(), []))
            expect_key = True
        elif char == "[":
            stack.append(None)
        elif char in "}]":
            stack.pop()
        elif char == ",":
            expect_key = bool(stack) and stack[-1] is not None
        at += 1


def _open_keys(stack) -> list[str]:
    """The keys leading to the value being read: each open object's current key."""
    return [top[1][0] for top in stack if top is not None and top[1]]


def lock_from_json(data: bytes, source: str = "upstream.lock") -> Lock:
    try:
        text = data.decode("utf-8")
        doc = json.loads(text, object_pairs_hook=_refuse_duplicates)
    except UnicodeDecodeError as exc:
        raise ConfigError(f"not UTF-8: {exc}", path=source) from None
    except json.JSONDecodeError as exc:
        from patchforge.apply.diffparse import conflict_marker_line
        marker = conflict_marker_line(data)
        if marker is not None:
            # Two branches that each re-pinned: said as the merge it is, not as "Expecting
            # property name enclosed in double quotes".
            raise ConfigError("a merge conflict marker: a merge of upstream.lock was left "
                              "unresolved", path=source, line=marker,
                              hint="keep one side's pin of each upstream (the lock is "
                                   "patchforge's: `git checkout --theirs upstream.lock` or "
                                   "`--ours`), then `patchforge status` checks it against "
                                   "the series") from None
        raise ConfigError(f"not valid JSON: {exc.msg}", path=source, line=exc.lineno) from None
    except RecursionError:
        # `[[[[...` a hundred thousand deep (200 KB) exhausts the parser's recursion.
        raise ConfigError("not valid JSON: nested deeper than patchforge reads",
                          path=source) from None
    except ValueError:
        # (After JSONDecodeError, a ValueError too.) A number longer than Python reads.
        from patchforge.fsutil import LONG_NUMBER, long_number_line
        raise ConfigError(f"not valid JSON: {LONG_NUMBER}", path=source,
                          line=long_number_line(text)) from None
    except _DuplicateKey as exc:
        quoted = json.dumps(str(exc.args[0]), ensure_ascii=False)
        raise ConfigError(f"the key {quoted} is written twice in one object (JSON readers "
                          "disagree on which one counts)", path=source,
                          line=_second_key_line(text)) from None
    r = _Reader(source, text)
    if not isinstance(doc, dict):
        r.fail("(top level)", "must be an object")
    version = r.get(doc, "version", int, "")
    if version > LOCK_VERSION:
        r.fail("version", f"{version} is too new for this patchforge (reads up to {LOCK_VERSION}); "
               "upgrade patchforge")
    if version < 1:
        r.fail("version", f"{version} is too old or invalid")
    _refuse_unknown_keys(r, doc, _TOP_KEYS, "")
    pins: dict[str, UpstreamPin] = {}
    for name, entry in r.get(doc, "upstreams", dict, "").items():
        where = f"upstreams.{name}"
        try:
            names.check_simple_name(name, "upstream")
        except ValueError as exc:
            r.fail(where, str(exc))
        if not isinstance(entry, dict):
            r.fail(where, "must be an object")
        _refuse_unknown_keys(r, entry, _PIN_KEYS, where)
        kind = r.get(entry, "kind", str, where)
        if kind not in SOURCE_KEYS:
            r.fail(f"{where}.kind", f"must be git, wheel or dir (got {kind!r})")
        commit = r.get(entry, "commit", str, where)
        if not HEX40.fullmatch(commit):
            r.fail(f"{where}.commit", "not 40 hex")
        tree = r.get(entry, "tree", str, where)
        if not HEX40.fullmatch(tree):
            r.fail(f"{where}.tree", "not 40 hex")
        label = r.get(entry, "label", str, where)
        source_obj = r.get(entry, "source", dict, where)
        _refuse_unknown_keys(r, source_obj, _SOURCE_KEYS_ANY, f"{where}.source")
        for key in SOURCE_KEYS[kind]:
            r.get(source_obj, key, str, f"{where}.source")
        if kind == "wheel":
            _check_wheel_source(r, f"{where}.source", source_obj)
        version_str = r.get(entry, "version", str, where, required=False)
        # Printed as they are by status and the reports: a newline or an escape sequence in a
        # lock (a pull request) would forge an output line or drive the terminal; a
        # bidirectional override (`v1 \u202e0.2v` shows as "v1 v2.0") or a zero-width
        # character would show another version than the one pinned.
        for key, value in (("label", label), ("version", version_str)):
            if value is not None and label_problem(value):
                r.fail(f"{where}.{key}", f"{value!r} {label_problem(value)}")
        pins[name] = UpstreamPin(kind=kind, commit=commit, tree=tree, label=label,
                                 source=dict(source_obj), version=version_str)
    image = None
    if "image" in doc and doc["image"] is not None:
        img = r.get(doc, "image", dict, "")
        _refuse_unknown_keys(r, img, _IMAGE_KEYS, "image")
        image = ImagePin(reference=r.get(img, "reference", str, "image"),
                         tag=r.get(img, "tag", str, "image", required=False),
                         digest=r.get(img, "digest", str, "image", required=False))
        # The image pin is written into the generated Dockerfile's FROM line: a newline there
        # (`sha256:...\nRUN curl ... | sh`) would add a step every build of it runs.
        for key, value, pattern, what in (
                ("reference", image.reference, _IMAGE_REFERENCE, "an image reference"),
                ("tag", image.tag, _IMAGE_TAG, "an image tag"),
                ("digest", image.digest, _IMAGE_DIGEST, "sha256: and 64 lowercase hex")):
            if value is not None and not pattern.fullmatch(value):
                r.fail(f"image.{key}", f"{value!r} is not {what}")
    return Lock(upstreams=pins, image=image, version=version)


def label_problem(value: str) -> str | None:
    """Why `value` cannot be a pin's label or version (None when it can): what the reader
    refuses, so that a lock patchforge writes is always one it reads."""
    if not value or _CONTROL.search(value) or not _LINE_SEPARATORS.isdisjoint(value) \
            or not names.INVISIBLE.isdisjoint(value):
        return "is empty or holds a control character or an invisible one (zero-width, " \
               "bidirectional)"
    return None


def _check_wheel_source(r: _Reader, where: str, source: dict) -> None:
    """A wheel pin names a distribution, a version and one wheel file of them, nothing else:
    these values reach `pip download`, so a URL, an option or a requirement line is refused."""
    if not HEX64.fullmatch(source["sha256"]):
        r.fail(f"{where}.sha256", "not 64 lowercase hex")
    for key, check in (("package", names.check_distribution), ("version", names.check_version),
                       ("filename", names.parse_wheel_name)):
        try:
            check(source[key])
        except ValueError as exc:
            r.fail(f"{where}.{key}", str(exc))
    wheel = names.parse_wheel_name(source["filename"])
    if not names.same_distribution(wheel.name, source["package"]) or \
            wheel.version != names.check_version(source["version"]):
        r.fail(f"{where}.filename", f"{source['filename']!r} is not a wheel of "
               f"{source['package']} {source['version']}")


def lock_to_document(lock: Lock) -> dict:
    doc: dict = {"version": lock.version, "upstreams": {}}
    for name, pin in lock.upstreams.items():
        # The lock is written only as it can be read back: a label or version that the reader
        # refuses (from an image label, say) would leave a lock no command reads.
        for key, value in (("label", pin.label), ("version", pin.version)):
            if value is not None and label_problem(value):
                raise InputError(f"upstream.lock: upstreams.{name}.{key} {value!r} "
                                 f"{label_problem(value)}; nothing was written")
        entry = {"kind": pin.kind, "commit": pin.commit, "tree": pin.tree, "label": pin.label,
                 "source": dict(pin.source)}
        if pin.version is not None:
            entry["version"] = pin.version
        doc["upstreams"][name] = entry
    if lock.image is not None:
        img = {"reference": lock.image.reference}
        if lock.image.tag:
            img["tag"] = lock.image.tag
        if lock.image.digest:
            img["digest"] = lock.image.digest
        doc["image"] = img
    return doc


def dump_json(doc) -> bytes:
    """Deterministic JSON: sorted keys, 2-space indent, final newline."""
    text = json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        # A non-UTF-8 file name (kept as surrogate escapes) cannot be written as UTF-8 text:
        # fall back to \u escapes, still deterministic and still valid JSON.
        return (json.dumps(doc, sort_keys=True, indent=2, ensure_ascii=True) + "\n").encode()


def lock_to_json(lock: Lock) -> bytes:
    return dump_json(lock_to_document(lock))


def read_lock(path: Path) -> Lock:
    if not path.exists():
        return Lock()
    return lock_from_json(path.read_bytes(), str(path))


def write_lock(path: Path, lock: Lock) -> None:
    from patchforge.formats.schemas import validate

    doc = lock_to_document(lock)
    validate(doc, "lock", source=str(path))
    atomic_write(path, dump_json(doc))
