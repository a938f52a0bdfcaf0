"""upstream.lock as a format: round trip, deterministic bytes, schema on write, errors with paths."""
from __future__ import annotations

import json

import pytest

from patchforge.errors import ConfigError, InputError
from patchforge.formats.lockfile import lock_from_json, lock_to_json, read_lock, write_lock
from patchforge.model.lock import ImagePin, Lock, UpstreamPin

C1, T1 = "a" * 40, "b" * 40


def sample() -> Lock:
    return Lock(upstreams={
        "vllm": UpstreamPin("wheel", C1, T1, "0.32.0",
                            {"package": "vllm", "version": "0.32.0",
                             "filename": "vllm-0.32.0-cp38-abi3-manylinux1_x86_64.whl",
                             "sha256": "c" * 64}, version="0.32.0"),
        "aiter": UpstreamPin("git", T1, C1, "main", {"url": "https://github.com/ROCm/aiter"}),
        "site": UpstreamPin("dir", C1, C1, "image-1", {"path": "../site"})},
        image=ImagePin("rocm/vllm:nightly", tag="nightly", digest="sha256:" + "d" * 64))


def test_round_trip_and_deterministic_bytes(tmp_path):
    lock = sample()
    data = lock_to_json(lock)
    assert data.endswith(b"}\n") and not data.endswith(b"\n\n")
    assert data == (json.dumps(json.loads(data), sort_keys=True, indent=2) + "\n").encode()
    assert lock_from_json(data) == lock
    path = tmp_path / "upstream.lock"
    write_lock(path, lock)
    assert path.read_bytes() == data
    assert read_lock(path) == lock
    assert read_lock(tmp_path / "absent.lock") == Lock()


def test_write_refuses_what_the_schema_refuses(tmp_path):
    bad = Lock(upstreams={"x": UpstreamPin("wheel", C1, T1, "1.0", {"package": "x"})})
    path = tmp_path / "upstream.lock"
    with pytest.raises(InputError) as info:
        write_lock(path, bad)
    assert "upstreams.x.source: 'filename' is a required property" in str(info.value)
    assert not path.exists()


@pytest.mark.parametrize("edit, message", [
    (lambda d: d["upstreams"]["site"].update(commit="A" * 40), "upstreams.site.commit: not 40 hex"),
    # Python's `$` matches before a final newline: this one reached git as a revision name.
    (lambda d: d["upstreams"]["site"].update(commit="a" * 40 + "\n"),
     "upstreams.site.commit: not 40 hex"),
    (lambda d: d["upstreams"]["vllm"]["source"].update(sha256="c" * 64 + "\n"),
     "upstreams.vllm.source.sha256: not 64 lowercase hex"),
    (lambda d: d["upstreams"]["vllm"]["source"].update(sha256="xyz"),
     "upstreams.vllm.source.sha256: not 64 lowercase hex"),
    (lambda d: d["upstreams"]["vllm"]["source"].pop("filename"),
     "upstreams.vllm.source.filename: missing"),
    (lambda d: d.update(version=7), "version: 7 is too new"),
    (lambda d: d.update(upstreams=[]), "upstreams: must be dict"),
    # A newline or an escape sequence would forge a line of status's output or drive the terminal.
    (lambda d: d["upstreams"]["site"].update(label="v1\nall 3 patches apply"),
     "upstreams.site.label: 'v1\\nall 3 patches apply' is empty or holds a control character"),
    (lambda d: d["upstreams"]["vllm"].update(version="0.1\x1b[2J"),
     "upstreams.vllm.version: '0.1\\x1b[2J' is empty or holds a control character"),
    # A bidirectional override shows `v1 \u202e0.2v` as "v1 v2.0": another version than pinned.
    (lambda d: d["upstreams"]["site"].update(label="v1 \u202e0.2v"),
     "upstreams.site.label: 'v1 \\u202e0.2v' is empty or holds a control character or an "
     "invisible one (zero-width, bidirectional)"),
    (lambda d: d["upstreams"]["vllm"].update(version="0.1\u200b"),
     "upstreams.vllm.version: '0.1\\u200b' is empty or holds a control character or an "
     "invisible one"),
    # The image pin goes into the generated Dockerfile's FROM line: a newline would add a step.
    (lambda d: d["image"].update(digest="sha256:" + "d" * 64 + "\nRUN curl x | sh"),
     "image.digest: 'sha256:" + "d" * 64 + "\\nRUN curl x | sh' is not sha256:"),
    (lambda d: d["image"].update(tag="nightly\nRUN x"), "image.tag: 'nightly\\nRUN x' is not"),
    (lambda d: d["image"].update(reference="evil$x.example.com/rocm/vllm:nightly"),
     "image.reference: 'evil$x.example.com/rocm/vllm:nightly' is not an image reference"),
])
def test_errors_name_path_and_line(edit, message):
    doc = json.loads(lock_to_json(sample()))
    edit(doc)
    text = json.dumps(doc, sort_keys=True, indent=2) + "\n"
    with pytest.raises(ConfigError) as info:
        lock_from_json(text.encode(), "upstream.lock")
    assert message in str(info.value)
    assert info.value.path == "upstream.lock" and info.value.line is not None
    key = message.split(":")[0].split(".")
    wanted = key[-2] if message.endswith("missing") else key[-1]
    assert f'"{wanted}"' in text.splitlines()[info.value.line - 1]


def test_not_utf8_and_not_an_object():
    with pytest.raises(ConfigError, match="not UTF-8"):
        lock_from_json(b'{"version": 1, "x": "\xff"}')
    with pytest.raises(ConfigError, match="must be an object"):
        lock_from_json(b"[]\n")


def test_a_key_written_twice_is_named_at_its_own_second_line():
    """The line named is the duplicate's, in its own object: a "commit" written twice in the
    first upstream's pin is not reported at the next upstream's (single) "commit" line, nor is
    the same key in a sibling object taken for a duplicate."""
    lines = lock_to_json(sample()).decode().splitlines()
    first = next(n for n, line in enumerate(lines) if '"commit":' in line)
    lines.insert(first + 1, '      "commit": "' + "1" * 40 + '",')
    with pytest.raises(ConfigError, match='"commit" is written twice') as info:
        lock_from_json(("\n".join(lines) + "\n").encode(), "upstream.lock")
    assert info.value.line == first + 2
    nested = '{"a": {"k": 1, "s": ["k", {"k": 2}], "k\\"": 0},\n "b": {"k": 3,\n "k": 4}}'
    with pytest.raises(ConfigError, match='"k" is written twice') as info:
        lock_from_json(nested.encode(), "upstream.lock")
    assert info.value.line == 3


@pytest.mark.parametrize("edit", [
    lambda d: None,
    lambda d: d["upstreams"].update({"../x": d["upstreams"]["site"]}),
    lambda d: d["upstreams"].update({"a..b": d["upstreams"]["site"]}),
    lambda d: d["upstreams"].update({"ok.name_1": d["upstreams"]["site"]}),
    lambda d: d["upstreams"].update({"x\n": d["upstreams"]["site"]}),
    lambda d: d["upstreams"]["site"].update(label=""),
    lambda d: d["upstreams"]["site"].update(label="v1\n"),
    lambda d: d["upstreams"]["site"].update(label="v1\x85"),
    lambda d: d["upstreams"]["site"].update(label="image 2024-06-01 \u00e9"),
    lambda d: d["upstreams"]["vllm"].update(version=""),
    lambda d: d["upstreams"]["vllm"].update(version="0.1\u2028"),
    lambda d: d["upstreams"]["site"].update(commit="a" * 40 + "\n"),
    lambda d: d["image"].update(reference="rocm/vllm:nightly\n"),
    lambda d: d["image"].update(reference="rocm/vllm@sha256:" + "d" * 64),
    lambda d: d["image"].update(reference="evil$x.example.com/rocm/vllm:nightly"),
    lambda d: d["image"].update(tag="nightly\n"),
    lambda d: d["image"].update(tag="n" * 129),
    lambda d: d["image"].update(tag="nightly-" + "a" * 40),
    lambda d: d["image"].update(digest="sha256:" + "d" * 64 + "\n"),
    lambda d: d.update(comment="pinned by hand"),
    lambda d: d["upstreams"]["site"].update(note="x"),
    lambda d: d["upstreams"]["site"]["source"].update(ref="main"),
    lambda d: d["image"].update(platform="linux/amd64"),
])
def test_the_lock_schema_and_the_reader_refuse_the_same_locks(edit):
    """lock.schema.json (what an editor, and every write, checks the lock against) refuses
    what the reader refuses: a name that is no upstream name, an empty label or one with a
    control character, an image reference or tag that is none; it let each through."""
    from patchforge.formats.schemas import validation_errors

    doc = json.loads(lock_to_json(sample()))
    edit(doc)
    try:
        lock_from_json(json.dumps(doc).encode())
        reader_refuses = False
    except ConfigError:
        reader_refuses = True
    assert bool(validation_errors(doc, "lock")) == reader_refuses, validation_errors(doc, "lock")


@pytest.mark.parametrize("tag", ["v2\u202egnp.exe", "v2\u200b"])
def test_a_tag_the_lock_cannot_hold_is_refused_before_anything_is_written(tmp_path, tag):
    """A git tag may hold a bidirectional override or a zero-width space; the lock's reader
    refuses them as labels. `rebase --to`, `upstream pin --force` and `upstream add --at` refuse
    the tag before anything is written, so the project stays readable and `upstream pin` can
    still move the pin."""
    from helpers.project import OneUpstreamStack

    stack = OneUpstreamStack(tmp_path, {"pkg/m.py": b"def f():\n    return 1\n"})
    stack.add_fix("fix1", "pkg/m.py", b"def f():\n    return 1\n", b"def f():\n    return 11\n")
    stack.commit({"pkg/other.py": b"X = 1\n"}, "v2", tag=tag)
    before = stack.snapshot()
    for args in (["rebase", "--to", tag], ["upstream", "pin", "up", "--at", tag, "--force"]):
        code, out, err = stack.cli(*args, expect=2)
        assert "cannot be a pin's label" in err and "commit id" in err, (args, err)
        assert stack.snapshot() == before, args
    stack.cli("status")
    stack.cli("upstream", "pin", "up", "--at", "v1", "--force")
    fresh = tmp_path / "fresh"
    stack.cli("init", "--standalone", str(fresh))
    from helpers.cli import run_cli
    run = run_cli(fresh, "upstream", "add", "up", "--git", str(stack.upstream.path), "--at", tag)
    assert run.rc == 2 and "cannot be a pin's label" in run.err, run.text
    assert b"\\u202e" not in (fresh / "upstream.lock").read_bytes()
    assert run_cli(fresh, "status").rc == 0
