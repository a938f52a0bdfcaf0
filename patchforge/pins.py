"""Turning what a user names into exact, stored upstream revisions (pins).

`pin_for_spec` resolves one SPEC for one upstream into an UpstreamPin whose commit is in the
store; `ensure_pinned` brings a locked pin into the store (fetching or re-importing it) and checks
that the result is the very commit the lock names.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from patchforge import logs
from patchforge.errors import (CacheLockLeft, CacheUnwritable, ConfigError, PatchforgeError,
                               RefNotFound, StoreDamaged, StoreError, UsageError, gave_up_as)
from patchforge.model.lock import ImagePin, UpstreamPin
from patchforge.model.record import replace

if TYPE_CHECKING:
    from patchforge.project import Project
    from patchforge.store.gitstore import UpstreamStore


def git_url_for(project: Project, url: str) -> str:
    """The URL git is given: a relative local path is relative to the project root (where the
    configuration that names it lives), not to wherever patchforge was started."""
    from patchforge.store.giturl import is_plain_path

    if is_plain_path(url) and not Path(url).is_absolute():
        return str((project.root / url).resolve())
    return url


def _keep_remotes(project: Project, store: UpstreamStore) -> None:
    """The remote of each git upstream of the project in the store, configured again where the
    store let it go while its local path was gone (UpstreamStore.prune_gone_remotes): a file
    the partial store lacks is fetched from it by name. Nothing is written for one there."""
    from patchforge.store.giturl import store_namespace

    for name in project.upstream_names():
        upstream = project.config.upstream(name)
        if upstream.kind == "git" and upstream.url:
            url = git_url_for(project, upstream.url)
            store.keep_remote(store_namespace(name, url), url)


@contextmanager
def open_store(project: Project, *, bring_pins: bool | list[str] = False):
    """The store for one command. With `bring_pins` (True: every upstream; or the names of
    those the command reads), each locked revision the store lacks (a fresh clone, a new
    cache) is brought in first, as `overlays` and `status` do: a command that reads the pinned
    files (edit, new, add, refresh, move, delete, imports) must never take a revision it does
    not have for one without files."""
    from patchforge.store.diff import KeptAnswers, keeping_answers
    from patchforge.store.gitstore import UpstreamStore

    store = UpstreamStore.open()
    store.progress = project.progress
    _keep_remotes(project, store)
    # git starts now: it has opened the store while the command reads its arguments,
    # configuration and series, and the first object is answered at once (a rebase's first
    # read waited 1-2 ms for git to start).
    store.start_reading()
    # git's answers about contents alone (3-way merges, own places' diffs) that an earlier
    # command kept answer this one's, which keeps its own for later ones (in the cache).
    answers = KeptAnswers(store.git_dir.parent)
    before = keeping_answers(answers)
    try:
        for upstream in project.upstream_names():
            # An open edit's or stop's base commit, made in a cache that is gone: back first.
            kept = project.made_objects_path(upstream)
            if kept.is_file():
                store.restore_made(kept)
        if bring_pins:
            bring_missing_pins(project, store,
                               None if bring_pins is True else list(bring_pins))
        yield store
    finally:
        keeping_answers(before)
        if store.progress is not None:
            store.progress.done()
        store.close()
        answers.bound()


def bring_named_commits(project: Project, store: UpstreamStore, upstream: str,
                        commits: list[str], *, retry: bool = False,
                        failed: dict[str, str] | None = None,
                        no_answer: set[str] | None = None) -> list[str]:
    """Fetch into `store`, from git upstream `upstream`'s own repository alone, those of
    `commits` (full ids a kept fix names: its `Base`, its recorded landing) the store lacks,
    in one fetch. The store no longer fetches a commit on demand (git asked every remote of
    every project in turn), and a kept fix judged without its base file (a commit of a
    branch deleted since, a fresh clone's cache) was quiet when upstream took it back: its
    own place read as holding it. Nothing is asked offline, of a wheel or directory upstream,
    or when none is missing. Returns those still missing after it: the caller judges their
    fixes without them and says so (reverts.judge_many's `without_base`).

    A commit the upstream answered it does not have (a force-pushed or deleted branch's, git
    collected it) is recorded in the cache (unserved_record): every later command asked for it
    again, one failing fetch each. It is asked again only with `retry` (`patchforge fetch`),
    or from another URL. A failure that is no such answer (the network, a remote that gave
    no answer or an error) is recorded nowhere, and the next command asks again: `failed`
    gets each commit still missing after one, with git's error (the caller says it so, with
    the URL, never "not served"), and `no_answer` those of them the remote gave no answer for
    (`gave_up`: a connection refused, a 503), where asking again later may bring them."""
    from patchforge.store.giturl import redact, store_namespace

    missing = [c for c in dict.fromkeys(c.lower() for c in commits) if not store.has_object(c)]
    config = project.config.upstream(upstream)
    if not missing or project.offline or config.kind != "git" or not config.url:
        return missing
    url = git_url_for(project, config.url)
    namespace = store_namespace(upstream, url)
    record = unserved_record(store, namespace)
    wanted = missing if retry else [c for c in missing if not (record / c).is_file()]
    errors: dict[str, str] = {}  # commit -> a failure that was no answer of upstream's
    unanswered: set[str] = set()  # (of those, the ones the remote gave no answer at all)
    # (One fetch for all; where the upstream lacks one of them, each alone, so that the
    # others still come, and the one it lacks is known.)
    for group in [wanted] if len(wanted) == 1 else [wanted, *([c] for c in wanted)]:
        asked = [c for c in group if not store.has_object(c)]
        if not asked:
            continue
        try:
            store.fetch_git(namespace, url, asked)
        except RefNotFound as exc:
            if len(asked) == 1:
                _record_unserved(record / asked[0], f"{redact(url)}: {exc.message}")
                errors.pop(asked[0], None)
            continue
        except PatchforgeError as exc:
            import re

            # (git's words alone: the store's name of the remote means nothing to a reader.)
            said = re.sub(r"^fetching \S+ from \S+ failed: ", "", " ".join(exc.message.split()))
            errors.update((c, said) for c in asked)
            if exc.gave_up:
                unanswered.update(asked)
            else:
                unanswered.difference_update(asked)
            continue
        for commit in asked:
            (record / commit).unlink(missing_ok=True)
        if all(store.has_object(c) for c in wanted):
            break
    if failed is not None:
        failed.update((c, why) for c, why in errors.items() if not store.has_object(c))
    if no_answer is not None:
        no_answer.update(c for c in unanswered if c in errors and not store.has_object(c))
    return [c for c in missing if not store.has_object(c)]


def unserved_record(store: UpstreamStore, namespace: str) -> Path:
    """The directory of the cache recording, one empty-named file per commit id, the commits
    the git upstream of store namespace `namespace` (its name and URL) answered it does not
    have (bring_named_commits)."""
    return store.git_dir.parent / "kept" / "unserved" / namespace


def _record_unserved(path: Path, why: str) -> None:
    from patchforge.fsutil import atomic_write

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, why.encode("utf-8", "surrogateescape") + b"\n")
    except (OSError, PatchforgeError):
        pass  # (a cache that cannot be written: the next command asks again)


def bring_missing_pins(project: Project, store: UpstreamStore,
                       names: list[str] | None = None) -> list[str]:
    """Bring into `store` the locked revision of every configured upstream (of `names`) where
    it is missing (ensure_pinned: fetched, or the wheel or directory imported; offline, an
    error naming `patchforge fetch`). Returns the upstreams brought in. Those present cost one
    cat-file lookup together."""
    lock = project.lock
    pinned = [name for name in project.upstream_names()
              if name in lock.upstreams and (names is None or name in names)]
    return bring_pins(project, store, [(name, lock.pin(name)) for name in pinned])


def bring_pins(project: Project, store: UpstreamStore,
               pins: list[tuple[str, UpstreamPin]]) -> list[str]:
    """Bring each (upstream, pin) whose revision `store` lacks into it (ensure_pinned), a
    revision named twice once; those present cost one cat-file lookup together. Returns the
    upstreams brought in."""
    # One round asks each commit's tree: a missing commit has none, a present one's is
    # checked against the lock.
    trees = store.trees_of([pin.commit for _, pin in pins])
    brought = []
    for upstream, pin in pins:
        tree = trees.get(pin.commit)
        # A pin the lock records from another repository is checked against the configured
        # one as a missing pin is (the store holding its commit says nothing of which
        # repository it is of).
        if tree is None or other_locked_repository(project, upstream, pin) is not None:
            ensure_pinned(project, store, upstream, pin)
            trees[pin.commit] = pin.tree
            brought.append(upstream)
        else:
            check_locked_pin(project, store, upstream, pin, tree)
            refuse_archive_layout(store, upstream, pin, tree)
    return brought


def check_locked_pin(project: Project, store: UpstreamStore, name: str, pin: UpstreamPin,
                     tree: str) -> None:
    """The lock's `tree` is the tree of the commit beside it, and a pin's `label` and `version`
    name that commit, or the lock is refused (exit 2) naming upstream.lock and the line: a lock
    whose commit was edited (by hand, or a merge that took one side's commit and the other's
    tree, or one side's `version` line and the other's source) says two revisions at once, and
    nothing may pick one of them silently (`Drop-When`, `status` and `bump` judge a pin by its
    version); and so is an image pin that names two images (check_image_pin). Asked where
    the pins are brought into the store, not when the lock is read: `upstream pin NAME
    --force` still reads such a lock, and re-pins it."""
    if tree != pin.tree:
        _refuse_two_revisions(project, name, "tree", f"{pin.tree} is not the tree of the "
                              f"locked commit {pin.commit} (its tree is {tree})")
    _check_wheel_version(project, name, pin)
    note_other_locked_repository(project, name, pin)
    _refuse_other_package(project, name, pin)
    _check_git_label(project, store, name, pin)
    check_image_pin(project)


def _refuse_other_package(project: Project, name: str, pin: UpstreamPin) -> None:
    """A wheel pin of another distribution than the configured `package` (the configuration
    changed after the pin, `vllm` to `vllm-rocm`; a merge that took one side's lock) is
    refused, exit 2, naming upstream.lock's line: every command took the lock's package's
    wheel as the upstream's, and `fetch` downloaded it, without a word. The same name written
    another way (`amd_aiter`, `AMD-Aiter`) is the same distribution."""
    upstream = project.config.upstream(name)
    if pin.kind != "wheel" or upstream.kind != "wheel" or not upstream.package:
        return
    from patchforge.names import same_distribution

    locked = pin.source.get("package")
    if isinstance(locked, str) and same_distribution(locked, upstream.package):
        return
    from patchforge.formats.lockfile import lock_line_of

    raise ConfigError(f"upstreams.{name}.source.package: {name} is pinned to a wheel of "
                      f"{locked!r} ({pin.source.get('filename')}), but "
                      f"{Path(project.config_path).name} configures it as package "
                      f"{upstream.package!r}; nothing was read",
                      path=str(project.lock_path),
                      line=lock_line_of(project.lock_path, f"upstreams.{name}.source.package"),
                      hint=f"pin the configured package: `patchforge upstream pin {name} --at "
                           f"VERSION --force` (a version of {upstream.package})")


def _check_wheel_version(project: Project, name: str, pin: UpstreamPin) -> None:
    """A wheel pin's `version` and `label` are its wheel's (pin_for_spec writes the wheel's
    version in all three): `label` names the import in the project's namespace of the store."""
    if pin.kind != "wheel":
        return
    from patchforge.names import check_version

    wheel = pin.source["version"]
    for key, said in (("version", pin.version), ("label", pin.label)):
        if said is None:
            continue
        try:
            same = check_version(said) == check_version(wheel)
        except ValueError:
            same = False
        if not same:
            _refuse_two_revisions(project, name, key,
                                  f"{said!r} is not the version of the pinned wheel "
                                  f"{pin.source['filename']} (source.version {wheel!r})")


def _check_git_label(project: Project, store: UpstreamStore, name: str,
                     pin: UpstreamPin) -> None:
    """What a git pin's `label` says of its commit, checked where it is sure and costs no
    fetch: a commit id (or a version's `+g<hex>` part) begins the locked commit; a `version`
    beside a label that is a plain ref, commit or release is the one that label names (as
    pin_for_spec writes it); a release label whose tag the store has (as last fetched) names
    the locked commit, and a locked commit that the store has tagged as a final release (`v1`)
    is not pinned under another final release's label (`v2`). A label naming an image, a branch or
    another tag (a `nightly` that CI re-points) says nothing that can be checked without
    asking the remote; nor does a release the store has no tag of (a cache that fetches the
    locked commit fetches the label's tag with it: _ensure_git_pin). A branch named like the
    release at the locked commit is what the label names (the resolution takes one too)."""
    if pin.kind != "git":
        return
    from patchforge import targets

    label = pin.label.strip()
    try:
        kind = targets.classify_spec(label)
    except UsageError:
        # A label no SPEC reads (`v1..v9`, `v9^{}`: every pin patchforge writes is labelled
        # by the SPEC it resolved) names no revision and so no version: a `version` beside it
        # would be compared with nothing, and Drop-When judged by it.
        if pin.version is not None:
            _refuse_two_revisions(project, name, "version",
                                  f"{pin.version!r} is not the version the label {label!r} "
                                  "names (it is no SPEC, and names none)")
        return
    if kind is targets.SpecKind.nightly:
        # `nightly-<40 hex>` names its commit as exactly as a commit id does (the resolution
        # pins that very commit): checked as one, its version (from the image's labels) not.
        named = label[len("nightly-"):]
        if pin.commit != named:
            _refuse_two_revisions(project, name, "label",
                                  f"{label!r} names commit {named}, not the locked commit "
                                  f"{pin.commit}")
        return
    if kind is targets.SpecKind.image:
        return  # the version came from the image's labels
    expected = targets.version_from_spec(label)
    # An ancestor of a release (`v2~1`) names no version; an earlier patchforge recorded the
    # label's spelling (`2~1`), which names no other revision either.
    legacy = label[1:] if label.startswith("v") else label
    if pin.version is not None and pin.version != expected and \
            not (targets.split_ancestry(label)[1] and pin.version == legacy):
        _refuse_two_revisions(project, name, "version",
                              f"{pin.version!r} is not the version the label {label!r} names "
                              f"({'none' if expected is None else repr(expected)})")
    stem, ancestry = targets.split_ancestry(label)
    if ancestry:
        _check_ancestor_label(project, store, name, pin, stem, ancestry)
        return
    said = label.lower() if kind is targets.SpecKind.commit else \
        targets.commit_from_version(label) if kind is targets.SpecKind.version else None
    if said is not None and not pin.commit.startswith(said.lower()):
        _refuse_two_revisions(project, name, "label",
                              f"{label!r} names commit {said}, not the locked commit "
                              f"{pin.commit}")
    names = release_tag_names(label)
    full = _full_release_tag(label)
    if not names or (expected is None and full is None):
        return  # names only for a release label (`v2`, or in full `refs/tags/v2`)
    version = expected or targets.version_from_spec(full or "")
    assert version is not None  # (a release's)
    from patchforge.store.giturl import store_namespace

    upstream = project.config.upstream(name)
    namespace = store_namespace(name, git_url_for(project, upstream.url or pin.source["url"]))
    base = f"refs/patchforge/remotes/{namespace}"
    tags = {tag: store.read_ref(f"{base}/tags/{tag}") for tag in names}
    known = {tag: commit for tag, commit in tags.items() if commit is not None}
    if pin.commit in known.values():
        return
    # A tag named in full (`refs/tags/v2`) is no branch.
    heads = [head for head in (store.read_ref(f"{base}/heads/{branch}") for branch in names)
             if head is not None] if full is None else []
    if not known and any(head == pin.commit or store.is_ancestor(pin.commit, head)
                         for head in heads):
        # A branch named like a release (`v2`), which the resolution takes when the upstream
        # has no tag of that name: a tag is taken first, so with one the branch is not what
        # the label names. A branch moves on: the commit it had when pinned is one of its
        # history (as for a pin labelled `main`).
        return
    if known:
        tag, commit = next(iter(known.items()))
        why = (f"tag {tag} names commit {commit} (as the store last fetched it), not the "
               f"locked commit {pin.commit}")
        moved = tag
    else:
        # The label's tag was never fetched here (the pin was made elsewhere, or a merge took
        # this commit from one side and the label from the other): the commit's own final
        # release tags, when the store has any, say which release it is. Only final releases:
        # a release candidate's commit is often the release's too (v2rc1 and v2 on one commit).
        if not _final_release(version):
            return
        at = store.tags_at(namespace, pin.commit)
        releases = [tag for tag in at if _final_release(targets.version_from_spec(tag))]
        if not releases or any(_same_version(targets.version_from_spec(tag) or "", version)
                               for tag in at):
            return
        tag = releases[0]
        why = f"the locked commit {pin.commit} is tag {tag} (as the store last fetched it), " \
              f"not {label}"
        moved = label
    from patchforge.formats.lockfile import lock_line_of

    raise ConfigError(f"upstreams.{name}.label: {why}: the lock names two revisions",
                      path=str(project.lock_path),
                      line=lock_line_of(project.lock_path, f"upstreams.{name}.label"),
                      hint=f"restore upstream.lock from version control; if tag {moved} was "
                           f"moved upstream since the pin, re-pin {name} (`patchforge upstream "
                           f"pin {name} --at {label} --force`), or pin the commit by its id")


def _check_ancestor_label(project: Project, store: UpstreamStore, name: str,
                          pin: UpstreamPin, stem: str, ancestry: str) -> None:
    """A label naming an ancestor of a release (`v3~1`, as `rebase --to up=v3~1` writes it)
    names the commit the store's tag of that release walks back to: one lookup, no fetch
    (the store holds every commit of a fetched tag's history). Unchecked before, a lock
    labelled `v3~1` over another commit was read, and the target named wrongly. A branch's
    ancestor is not checked (the branch moves on, as for a label naming it), nor a commit
    id's (its commit is walked from, not to), nor a release the store has no tag of."""
    names = release_tag_names(stem)
    if not names:
        return
    from patchforge.store.giturl import store_namespace

    upstream = project.config.upstream(name)
    namespace = store_namespace(name, git_url_for(project, upstream.url or pin.source["url"]))
    found = next(((tag, commit) for tag, commit in
                  ((tag, store.read_ref(f"refs/patchforge/remotes/{namespace}/tags/{tag}"))
                   for tag in names) if commit is not None), None)
    if found is None:
        return
    tag, commit = found
    try:
        walked = store.resolve(f"{commit}{ancestry}")
    except StoreDamaged:
        raise
    except StoreError:
        walked = None  # (`v1~9` past the first commit)
    if walked == pin.commit:
        return
    label = f"{stem}{ancestry}"
    said = f"names commit {walked}" if walked is not None else "names no commit"
    _refuse_two_revisions(project, name, "label",
                          f"{label!r} {said} (tag {tag} is commit {commit} as the store last "
                          f"fetched it), not the locked commit {pin.commit}")


def release_refs(label: str) -> list[str]:
    """The full refs a git pin's release label may name: its tags and branches of those names
    (release_tag_names); a release's tag named in full (`refs/tags/v2`), that tag alone."""
    names = release_tag_names(label)
    if _full_release_tag(label) is not None:
        return [f"refs/tags/{name}" for name in names]
    return [f"refs/tags/{name}" for name in names] + [f"refs/heads/{name}" for name in names]


def _full_release_tag(label: str) -> str | None:
    """`v2` for a label naming a release's tag in full (`refs/tags/v2`, as `rebase --to
    up=refs/tags/v2` writes it), else None: another tag (`refs/tags/nightly`, which CI moves)
    says no more than its short name does."""
    label = label.strip()
    if not label.startswith("refs/tags/"):
        return None
    tag = label[len("refs/tags/"):]
    return tag if _release_names(tag) else None


def release_tag_names(label: str) -> list[str]:
    """The names a git pin's release label (`v2`, `0.33.0`) may be, as its resolution tries
    them (`v2`, `2`), a tag or else a branch; none for any other label (a branch, a commit,
    `v2+gabc1234`, `v2~1`). A release's tag named in full (`refs/tags/v2`) is that tag alone."""
    full = _full_release_tag(label)
    return [full] if full is not None else _release_names(label.strip())


def _release_names(label: str) -> list[str]:
    """release_tag_names of a label that is no full ref name."""
    from patchforge import targets

    version = targets.version_from_spec(label)  # none for an ancestor (`v2~1`) or no release
    if version is None or targets.commit_from_version(label) is not None:
        return []
    return list(dict.fromkeys([label, f"v{version}", version]))


def _final_release(version: str | None) -> bool:
    """A version with no pre-, post- or dev-release part and no local part (`2`, `0.33.0`)."""
    from packaging.version import InvalidVersion, Version

    if version is None:
        return False
    try:
        parsed = Version(version)
    except InvalidVersion:
        return False
    return not (parsed.is_prerelease or parsed.is_postrelease or parsed.local)


def _same_version(one: str, other: str) -> bool:
    """`1` and `1.0` are one release (PEP 440); what is no version, by its spelling."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(one) == Version(other)
    except InvalidVersion:
        return one == other


def check_image_pin(project: Project) -> None:
    """The lock's image pin says one image: a `reference` that carries a digest
    (`repo@sha256:...`) or a tag (`repo:tag`) and a `digest` or `tag` beside it naming another
    (a merge that took one side's line of each) is refused, exit 2, naming upstream.lock and
    the line: the Dockerfile's FROM and `verify --image` read the `digest` while the reference
    says another image. A reference without them (a bare nightly tag) says nothing to compare.
    Asked where the pins are used, as the tree is, so that a re-pin still reads the lock."""
    image = project.lock.image
    if image is None:
        return
    name, _, digest = image.reference.partition("@")
    slash, colon = name.rfind("/"), name.rfind(":")
    tag = name[colon + 1:] if colon > slash else None
    for key, said, pinned in (("digest", digest or None, image.digest), ("tag", tag, image.tag)):
        if said is not None and pinned is not None and said != pinned:
            from patchforge.formats.lockfile import lock_line_of

            raise ConfigError(f"image.{key}: {pinned!r} is not the {key} of the pinned "
                              f"reference {image.reference!r}: the lock names two images",
                              path=str(project.lock_path),
                              line=lock_line_of(project.lock_path, f"image.{key}"),
                              hint="restore upstream.lock from version control, or pin the "
                                   "image again (`patchforge upstream pin NAME --at REPO:TAG "
                                   "--force`)")


def _refuse_two_revisions(project: Project, name: str, key: str, why: str) -> None:
    from patchforge.formats.lockfile import lock_line_of

    raise ConfigError(f"upstreams.{name}.{key}: {why}: the lock names two revisions",
                      path=str(project.lock_path),
                      line=lock_line_of(project.lock_path, f"upstreams.{name}.{key}"),
                      hint=f"restore upstream.lock from version control, or re-pin {name}: "
                           f"`patchforge upstream pin {name} --at SPEC --force`")


def _wheel_version(spec: str) -> str:
    return spec[1:] if spec.startswith("v") and spec[1:2].isdigit() else spec


def _refuse_relabelled_pin(project: Project, store: UpstreamStore, upstream, label: str,
                           commit: str, before: str | None) -> None:
    """A directory imported under the label upstream.lock pins, or one this project imported
    it under before (`before`, that import), now holding other files: the label would name two
    versions (the earlier import's and the directory's now), `status --against up=LABEL`
    answered about the new files under the earlier name, and `import overlay --made-on LABEL`
    took them as the overlay's base. Refused (StoreError), the label put back on the earlier
    import."""
    try:
        pin = project.lock.pin(upstream.name)
    except PatchforgeError:
        pin = None
    pinned = pin is not None and pin.kind == "dir" and pin.label == label
    if pinned:
        assert pin is not None
        before = pin.commit
    if before is None or before == commit:
        return
    store.label_import(import_namespace(project, upstream), label, before)
    store.share_import(upstream.name, label, before)
    which = "the label upstream.lock pins" if pinned else \
        f"the label this project imported {upstream.path} under before"
    raise StoreError(
        f"upstream {upstream.name}: {label} is {which} ({before[:12]}),"
        f" but {upstream.path} holds other files now ({commit[:12]}): a label names one "
        "version", hint=f"name the directory as it is now by a new label "
                        f"(`{upstream.name}=NEW-LABEL`)")


def import_namespace(project: Project, upstream) -> str:
    """The namespace of this project's imports of `upstream` (a wheel or directory
    UpstreamConfig) in the shared store: `sources.import_namespace`."""
    from patchforge.store import sources

    if upstream.kind == "wheel":
        return sources.wheel_namespace(project.root, upstream.name, upstream.package)
    return sources.dir_namespace(project.root, upstream.name, Path(upstream.path))


def refuse_unwritable_label(upstream: str, spec: str) -> None:
    """A SPEC becomes the pin's label in upstream.lock: one the lock's reader refuses (a control
    character, a bidirectional override, a zero-width space: all legal in a git tag) is refused
    before anything is resolved or written, never a lock that no later command can read."""
    from patchforge.formats.lockfile import label_problem

    problem = label_problem(spec)
    if problem:
        raise UsageError(f"upstream {upstream}: {spec!r} cannot be a pin's label: it {problem}",
                         hint="name that revision by its 40-hex commit id")


def _locked_wheel_source(project: Project, upstream) -> dict | None:
    """The `source` of upstream.lock's pin of wheel upstream `upstream` (its package's), or
    None."""
    pin = project.lock.upstreams.get(upstream.name)
    if pin is None or pin.kind != "wheel" or pin.source.get("package") != upstream.package:
        return None
    return pin.source


def _not_a_wheel_target(upstream, spec: str, what: str, tried: str | None = None) -> StoreError:
    """The refusal of a SPEC a wheel upstream cannot take: it names the upstream's kind, what
    the SPEC was read as, and the forms a wheel upstream takes (the README's list of target
    forms is a git upstream's)."""
    from patchforge.targets import classify_spec

    name, package = upstream.name, upstream.package
    hint = (f"a nightly is named by its image: `{name}=REPO:{spec}` (REPO: the image "
            "repository, e.g. vllm/vllm-openai-rocm)" if classify_spec(spec).name == "nightly"
            else f"name the version of {package} that holds it (`{name}=VERSION`), or the "
                 f"image it was built into (`{name}=REPO:TAG`); a commit, branch, tag, "
                 "nightly-<sha> or +g<sha> form is taken by a git upstream "
                 "(`upstream add NAME --git URL`)")
    return StoreError(f"upstream {name} is a wheel upstream ({package}, from its package "
                      f"index): {spec!r} names {what}, which only a git upstream's history "
                      "has" + (f", and {tried}" if tried else "") + f"; a wheel upstream takes "
                      f"a version of {package} or an image whose labels name one", hint=hint)


def pin_for_spec(project: Project, store: UpstreamStore, upstream, spec: str) -> UpstreamPin:
    """Resolve SPEC for `upstream` (an UpstreamConfig) into a pin stored in `store`."""
    from patchforge import targets

    refuse_unwritable_label(upstream.name, spec)
    logs.info("patchforge.resolve", "%s: resolving %s", upstream.name, spec)

    if upstream.kind != "git":
        from patchforge.store import sources  # (a git upstream never loads the wheel kinds)
    if upstream.kind == "wheel":
        kind = targets.classify_spec(spec)
        image = None
        if kind.name == "version":
            # Any spelling of the version (`0.33`, `0.33.0`, `v0.33.0`, `00.33`) takes its
            # wheel, and the pin records the wheel's own normalized version (WheelFile.version):
            # one file is one import and one label, however it was asked for. Both
            # `--against NAME=SPEC` and `upstream add --at SPEC` come here.
            # The file upstream.lock pins keeps the lock's label (sources.wheel_label): one an
            # earlier patchforge wrote with another spelling (`01.1`) names the import made
            # under it, another commit than `1.1`'s; a target of that file is the pin itself.
            pinned = _locked_wheel_source(project, upstream)
            try:
                commit, tree, wheel = sources.import_wheel_upstream(
                    store, upstream.name, upstream.package, _wheel_version(spec),
                    offline=project.offline, namespace=import_namespace(project, upstream),
                    pinned=pinned)
            except StoreError as exc:
                # A `+g<hex>` version names a commit: an index that builds per commit (a
                # nightly wheel index) may hold that wheel, so pip is asked; failing, the
                # answer is the form's, not pip's "check the package name".
                # An index pip could not reach (exc.gave_up) said nothing of the version:
                # that is a network failure (exit 75), not a wrong form.
                if targets.commit_from_version(spec) is None or project.offline or \
                        isinstance(exc, CacheUnwritable) or exc.gave_up:
                    raise
                raise _not_a_wheel_target(
                    upstream, spec, "a commit by its `+g` part", "pip has no wheel of that "
                    f"version (pip: {sources.pip_error_lines(exc)})") from None
            version = sources.wheel_label(wheel, pinned)
        elif kind.name == "image":
            # An image whose labels name the version (e.g. vllm.version): that wheel.
            resolved, wheel, version = targets.resolve_wheel_target(
                project, store, upstream, spec, pinned=_locked_wheel_source(project, upstream))
            assert resolved.commit is not None and resolved.tree is not None  # or it raised
            commit, tree = resolved.commit, resolved.tree
            if resolved.image is not None:
                image = ImagePin(reference=spec, tag=resolved.image.tag,
                                 digest=resolved.image.digest)
        else:
            # A commit, branch, tag or nightly tag names a revision of the upstream's
            # history, which a wheel upstream has none of (a `git-url` serves `pr` and `bump`
            # only); the nightly's image says which wheel it holds.
            raise _not_a_wheel_target(upstream, spec, {
                "nightly": "a nightly by its commit", "commit": "a commit",
            }.get(kind.name, "a branch or tag"))
        return UpstreamPin(kind="wheel", commit=commit, tree=tree, label=version,
                           source={"package": upstream.package, "version": version,
                                   "filename": wheel.filename, "sha256": wheel.sha256},
                           version=version, image=image)
    if upstream.kind == "dir":
        namespace = import_namespace(project, upstream)
        before = store.import_ref(namespace, spec)
        commit, tree = sources.import_dir_upstream(store, upstream.name,
                                                   project.root / upstream.path, spec,
                                                   namespace=namespace)
        _refuse_relabelled_pin(project, store, upstream, spec, commit, before)
        return UpstreamPin(kind="dir", commit=commit, tree=tree, label=spec,
                           source={"path": upstream.path}, version=None)
    resolved = targets.resolve_git_target(
        project, store, replace(upstream, url=git_url_for(project, upstream.url)), spec)
    assert resolved.commit is not None  # resolve_git_target raises otherwise
    commit = resolved.commit
    image = None
    if resolved.image is not None:
        # Resolved through an image (a nightly tag, repo:tag, repo@digest): the lock pins the
        # image by digest too, as the seed stack does by hand.
        image = ImagePin(reference=spec, tag=resolved.image.tag, digest=resolved.image.digest)
    label = spec
    if resolved.kind is targets.SpecKind.commit and \
            not commit.startswith(resolved.spec.strip().lower()):
        # The id of an annotated tag's own object (`git rev-parse --short v3`), which git
        # takes for the commit it tags: the lock names that commit, as its label must.
        label = commit
    # An ancestor of a release (`v3~1`) is no release: no version, as the resolution says.
    named = resolved.version or (None if targets.split_ancestry(spec.strip())[1]
                                 else targets.version_from_spec(spec))
    return UpstreamPin(kind="git", commit=commit, tree=store.tree_id(commit), label=label,
                       source={"url": upstream.url}, version=named, image=image)


def ensure_pinned(project: Project, store: UpstreamStore, name: str, pin: UpstreamPin) -> str:
    """Make sure the pinned commit is in the store and comes from the pin's source. Returns
    "present", "fetched" or "imported".

    A commit being in the shared store proves little: another project may have put it there.
    A git pin must be a commit of this upstream's URL (fetched by id when the store does not
    know it as one); a wheel pin's import must record the lock's file name and sha256.
    """
    try:
        what = _bring_pinned(project, store, name, pin)
        check_locked_pin(project, store, name, pin, store.tree_id(pin.commit))
        refuse_archive_layout(store, name, pin)
        if pin.kind != "git":
            _label_pinned_import(store, import_namespace(project, project.config.upstream(name)),
                                 pin)
        logs.info("patchforge.resolve", "%s: %s %s (%s)", name, pin.label, what, pin.commit[:12])
        return what
    except StoreError as exc:
        if project.offline and not exc.hint:
            exc.hint = (f"the cache has no {name} {pin.label} yet: run `patchforge fetch` once "
                        "with the network (offline commands and the pre-commit hooks use it)")
        raise


def refuse_pin_of_another_kind(project: Project, name: str, pin: UpstreamPin) -> None:
    """A pin is checked as its kind's (a git pin's commit must be one of the configured URL's,
    a wheel pin's the import of its file): a lock that says `dir` for a git upstream would
    have any commit of the store taken. Refused (exit 2) naming the lock's line. So is a dir
    pin whose `source.path` is not the configured `path`: the directory read is always the
    configured one (as a git upstream's URL is the configuration's), and a lock naming another
    (`/`, `../secrets`) is said, before anything is read."""
    upstream = project.config.upstream(name)
    from patchforge.formats.lockfile import lock_line_of
    if pin.kind == upstream.kind:
        _refuse_other_package(project, name, pin)  # (before the lock's wheel is downloaded)
    if pin.kind == upstream.kind == "dir" and not _same_directory(project, pin.source.get("path"),
                                                                  upstream.path):
        raise ConfigError(f"upstreams.{name}.source.path: {name} is pinned from directory "
                          f"{pin.source.get('path')!r}, but {Path(project.config_path).name} "
                          f"configures it as {upstream.path!r}; nothing was read",
                          path=str(project.lock_path),
                          line=lock_line_of(project.lock_path, f"upstreams.{name}.source.path"),
                          hint=f"re-pin it from the configured directory: `patchforge upstream "
                               f"pin {name} --at {pin.label} --force`")
    if pin.kind == upstream.kind:
        return
    raise ConfigError(f"upstreams.{name}.kind: {name} is pinned as a {pin.kind} upstream, but "
                      f"{Path(project.config_path).name} configures it as {upstream.kind}",
                      path=str(project.lock_path),
                      line=lock_line_of(project.lock_path, f"upstreams.{name}.kind"),
                      hint=f"re-pin it: `patchforge upstream pin {name} --at SPEC --force`")


def other_locked_repository(project: Project, name: str, pin: UpstreamPin) -> str | None:
    """The lock's `source.url` of a git pin when it names another repository than the
    configured `url` (a lock edited, or merged from a branch that configured a fork or a
    mirror), else None. The same repository written another way (a scheme, a user, `.git`, a
    trailing `/`, a relative path) is not another."""
    from patchforge.store.giturl import source_identity

    if pin.kind != "git":
        return None
    locked = pin.source.get("url")
    upstream = project.config.upstream(name)
    if upstream.kind != "git" or not upstream.url or not isinstance(locked, str) or \
            not locked or source_identity(git_url_for(project, locked)) == \
            source_identity(git_url_for(project, upstream.url)):
        return None
    return locked


def of_configured_repository(project: Project, store: UpstreamStore, name: str,
                             pin: UpstreamPin) -> bool:
    """Whether a pin the lock records from another repository (other_locked_repository) has a
    commit the store knows as one of the configured repository's, without asking it (`verify`
    reads the cache only; `fetch` and every command that brings the pins ask). True for any
    other pin."""
    if other_locked_repository(project, name, pin) is None:
        return True
    from patchforge.store.giturl import store_namespace

    url = git_url_for(project, project.config.upstream(name).url or "")
    try:
        store.resolve_in(store_namespace(name, url), pin.commit)
    except StoreError:
        return False
    return True


def _where_sources_differ(project: Project, name: str, locked: str) -> str:
    """`upstream.lock:N: pins NAME from 'URL', but pyproject.toml:M configures 'URL'`."""
    from patchforge.formats.config import upstream_key_line
    from patchforge.formats.lockfile import lock_line_of
    from patchforge.store.giturl import redact

    def at(path, line):
        return f"{Path(path).name}:{line}" if line else Path(path).name

    lock = at(project.lock_path, lock_line_of(project.lock_path, f"upstreams.{name}.source.url"))
    config = at(project.config_path, upstream_key_line(project.config_path, name, "url"))
    return (f"{lock}: pins {name} from {redact(locked)!r}, but {config} configures "
            f"{redact(project.config.upstream(name).url or '')!r}")


def note_other_locked_repository(project: Project, name: str, pin: UpstreamPin) -> None:
    """A git pin recorded from another repository than the configured one is read from the
    configured one (the commit must be one of it: `_ensure_git_pin`), with a note on stderr,
    once per command, naming both lines: the lock says where the pin came from, and a lock
    that silently says another repository (a fork's, merged from another branch) misleads
    whoever reads it. The next re-pin records the configured URL."""
    locked = other_locked_repository(project, name, pin)
    key = ("other repository", name)
    if locked is None or key in project.said_notes:
        return
    project.said_notes.add(key)
    # A note is shown without -v (logging's last resort prints it): only this rare path loads
    # `logging` (see patchforge.logs).
    import logging

    logging.getLogger("patchforge.pins").warning(
        "note: %s: the configured repository is the one read (the locked commit is one of "
        "it); `patchforge upstream pin %s --at %s --force` records it in the lock",
        _where_sources_differ(project, name, locked), name, pin.label)


def _same_directory(project: Project, locked, configured: str | None) -> bool:
    """Whether the lock's `source.path` and the configured `path` name one directory: written
    with or without a trailing `/`, `./` or a doubled `/` (a configuration tidied after the pin
    was refused as "another directory", wanting a re-pin). As the import's namespace takes it
    (sources.dir_namespace): made absolute from the project's root, symlinks not followed."""
    if not isinstance(locked, str) or not configured:
        return False
    return os.path.abspath(project.root / locked) == os.path.abspath(project.root / configured)


def _bring_pinned(project: Project, store: UpstreamStore, name: str, pin: UpstreamPin) -> str:
    upstream = project.config.upstream(name)
    refuse_pin_of_another_kind(project, name, pin)
    if pin.kind == "git":
        return _ensure_git_pin(project, store, name, upstream, pin)
    from patchforge.store import sources  # (here: a git pin never loads the wheel kinds)

    if store.has_object(pin.commit):
        if pin.kind == "wheel":
            _check_wheel_import(project, store, name, pin)
        return "present"
    if pin.kind == "wheel":
        commit, _, _ = sources.import_wheel_upstream(
            store, name, pin.source["package"], pin.source["version"],
            pin_sha256=pin.source["sha256"], filename=pin.source["filename"],
            offline=project.offline, label=pin.source["version"])
        what = "imported"
    elif pin.kind == "dir":
        # The configured directory: refuse_pin_of_another_kind refused a lock naming another.
        commit, _ = sources.import_dir_upstream(store, name, project.root / pin.source["path"],
                                                pin.label)
        what = "imported"
    if commit != pin.commit and pin.kind == "wheel":
        from patchforge.store.imports import LAYOUT_LINE

        if LAYOUT_LINE.encode() in store.commit_message(commit):
            # The same wheel, imported now where pip installs its .data/purelib files: the lock
            # pins the earlier layout's import, which this store never held.
            raise StoreError(
                f"upstream {name}: the lock pins {pin.commit[:12]}, an import of "
                f"{pin.source['filename']} made by an earlier patchforge, which kept its "
                "NAME-VER.data/purelib (or platlib) files at their archive path, where nothing "
                f"imports them; imported as pip installs it, the wheel is {commit[:12]}",
                hint=_ARCHIVE_LAYOUT_HINT.format(name=name, version=pin.source["version"]))
        # The wheel matched the lock's sha256, so the lock's commit is what disagrees (edited
        # by hand, a bad merge): said as _check_wheel_import says it where the store holds that
        # commit, naming the file and the line, not as a source changed under the pin.
        from patchforge.formats.lockfile import lock_line_of

        raise ConfigError(f"upstreams.{name}.commit: the locked commit {pin.commit[:12]} is not "
                          f"the import of {pin.source['filename']} with sha256 "
                          f"{pin.source['sha256']}: imported again, it is {commit[:12]}",
                          path=str(project.lock_path),
                          line=lock_line_of(project.lock_path, f"upstreams.{name}.commit"),
                          hint="the lock's commit and wheel disagree: restore upstream.lock "
                               f"from version control, or re-pin {name} with `patchforge "
                               "upstream pin --force` or `rebase --to`")
    if commit != pin.commit:
        raise StoreError(f"upstream {name}: the locked revision is {pin.commit[:12]}, but "
                         f"re-creating it gave {commit[:12]}",
                         hint="the source changed under the pin (a modified directory, or a "
                              "different wheel); re-pin it with `patchforge rebase --to`")
    return what


def _label_pinned_import(store: UpstreamStore, namespace: str, pin: UpstreamPin) -> None:
    """The lock's import, labelled as this project's when the store does not say so yet (it
    was imported by an earlier patchforge, whose labels any project of the cache could move):
    the version an overlay may have been made on, after the pin moves on. A cache that cannot
    be written, or that holds the lock file of a git killed as it wrote the label, only goes
    without."""
    try:
        if store.import_ref(namespace, pin.label) != pin.commit:
            store.label_import(namespace, pin.label, pin.commit)
    except StoreDamaged as exc:
        if not isinstance(exc, (CacheUnwritable, CacheLockLeft)):
            raise
    except StoreError:
        pass  # a label no ref can hold: nothing to label


def _ensure_git_pin(project: Project, store: UpstreamStore, name: str, upstream,
                    pin: UpstreamPin) -> str:
    from patchforge import targets
    from patchforge.store.gitsource import fetch_git_upstream
    from patchforge.store.giturl import redact

    url = git_url_for(project, upstream.url or pin.source["url"])
    present = store.has_object(pin.commit)
    try:
        # The label's release tag comes in the same fetch, when the source has it: a fresh
        # cache, which fetches the commit by its id, checks the label as a warm one does.
        # An ancestor label (`v3~1`) is checked against its release's tag: that tag comes too.
        fetch_git_upstream(store, name, url, pin.commit, offline=project.offline,
                           refs=tuple(release_refs(targets.split_ancestry(pin.label.strip())[0])))
    except StoreError as exc:
        if project.offline or isinstance(exc, StoreDamaged):
            raise
        if not (store.git_dir / "objects").is_dir():
            # The store went away under the fetch: the lock is not what failed.
            raise StoreDamaged(f"the cache's git store {store.git_dir} was removed while the "
                               f"command ran ({exc.message})",
                               hint="nothing in the project is wrong and no pin needs to "
                                    "change: run the command again") from None
        if not isinstance(exc, RefNotFound):
            # The source was not reached, or failed on its way (a network error, a stalled
            # server, a refused login): its silence says nothing about the lock, whose re-pin
            # the message used to advise.
            raise gave_up_as(StoreError(
                f"upstream {name}: the locked commit {pin.commit[:12]} could not be checked "
                f"against {redact(url)}: {exc.message}",
                hint="the lock is not what failed: check the network, the URL and its "
                     "credentials, and run the command again"), exc) from None
        other = other_locked_repository(project, name, pin)
        if other is not None:
            # A lock merged from a branch that configured another repository (a fork): its
            # commit is none of the configured one's, which is the one read.
            raise ConfigError(
                f"upstream {name}: the locked commit {pin.commit} is not a commit of the "
                f"configured repository: {_where_sources_differ(project, name, other)}",
                hint=f"restore upstream.lock from version control, or re-pin {name} from the "
                     f"configured repository: `patchforge upstream pin {name} --at "
                     f"{pin.label} --force`") from None
        raise StoreError(f"upstream {name}: the locked commit {pin.commit} is not a commit of "
                         f"{redact(url)} ({exc.message})",
                         hint="the lock names a revision its source does not have: re-pin it "
                              "(`patchforge upstream pin --force` or `rebase --to`)") from None
    return "present" if present else "fetched"


_ARCHIVE_LAYOUT_HINT = (
    "re-pin it: `patchforge upstream pin {name} --at {version} --force`; a patch that changes a "
    "file under NAME-VER.data/purelib/ or platlib/ must then name it where pip installs it "
    "(NAME-VER.data/purelib/PATH is PATH), or its overlay is mounted where nothing imports it")


def refuse_archive_layout(store: UpstreamStore, name: str, pin: UpstreamPin,
                          tree: str | None = None) -> None:
    """A wheel pin whose import keeps NAME-VER.data/purelib or platlib at its archive path (an
    earlier patchforge's layout) is refused: a fix made there is mounted where pip never
    installs the file, while every check passes (store/imports.py archive_layout_left)."""
    if pin.kind != "wheel":
        return
    from patchforge.store.imports import archive_layout_left

    left = archive_layout_left(store, pin.commit, tree)
    if left is not None:
        raise StoreError(
            f"upstream {name}: the locked import {pin.commit[:12]} of {pin.source['filename']} "
            f"keeps {left}/ at its archive path (an earlier patchforge's layout); pip installs "
            "those files at the install root, so a fix there would be mounted where nothing "
            "imports it",
            hint=_ARCHIVE_LAYOUT_HINT.format(name=name, version=pin.source["version"]))


def _check_wheel_import(project: Project, store: UpstreamStore, name: str,
                        pin: UpstreamPin) -> None:
    """The stored import of a wheel pin records the file and digest the lock names: a lock
    whose sha256 was changed is refused even when the store already holds its commit. Said
    as every other disagreement of the lock is, naming the file and the lines (which of the
    two was changed cannot be told)."""
    from patchforge.formats.lockfile import lock_line_of

    message = store.commit_message(pin.commit)
    wanted = (f"\nwheel: {pin.source['filename']}\n".encode(),
              f"\nsha256: {pin.source['sha256']}\n".encode())
    if not all(line in message for line in wanted):
        digest_line = lock_line_of(project.lock_path, f"upstreams.{name}.source.sha256")
        raise ConfigError(f"upstreams.{name}.commit: the locked commit {pin.commit[:12]} is not "
                          f"the import of {pin.source['filename']} with sha256 "
                          f"{pin.source['sha256']}"
                          + (f" (source.sha256, line {digest_line})" if digest_line else ""),
                          path=str(project.lock_path),
                          line=lock_line_of(project.lock_path, f"upstreams.{name}.commit"),
                          hint="the lock's commit and wheel disagree: restore upstream.lock "
                               f"from version control, or re-pin {name} with `patchforge "
                               "upstream pin --force` or `rebase --to`")
