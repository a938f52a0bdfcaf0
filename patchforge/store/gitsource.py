"""The `git` upstream kind: any git URL or local path, fetched blob-less into the store (blobs
on demand), and the commit a branch, tag or commit id names there.

Apart from the `wheel` and `dir` kinds (store/sources.py: pip and its configuration, the
wheel cache, the imports): a rebase or status of a git upstream asks this alone, and does not
load their code (2.1 million instructions to import with this part, 0.4% of a clean 30-patch
rebase's: docs/performance.md).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from patchforge.errors import RefNotFound, RemoteUnreachable, StoreError, gave_up_as
from patchforge.store.giturl import redact, store_namespace

if TYPE_CHECKING:
    from patchforge.store.gitstore import UpstreamStore


def fetch_git_upstream(store: UpstreamStore, name: str, url: str, spec: str, *,
                       offline: bool = False, refs: tuple[str, ...] = ()) -> str:
    """The commit of `spec` (branch, tag, commit id) of a git upstream, fetching when needed.

    A full or abbreviated commit id already in the store is used without contacting the
    remote; branches and tags are always refreshed unless offline (a tag already in the store
    by one `ls-remote` of the remote's tags: `_checked_tag`). Offline, the store answers as last
    fetched. The store keeps each source under its own namespace (`giturl.store_namespace`:
    the name and the URL's identity), so another project's upstream of the same name never
    answers for this one.

    RefNotFound when the source was asked and has no such revision (a tag it deleted included);
    any other StoreError (offline without it, the network, damage) says nothing about `spec`
    itself.

    A name that is both a tag and a branch upstream is the tag, as git's own rule has it
    (`git rev-parse X` looks in refs/tags before refs/heads), on the first use as on every
    later one (the first, which fetched both, took the branch, and later ones the stored tag);
    said on stderr, with `refs/heads/X` to name the branch.

    `refs`: full refs fetched alongside a commit id the source is asked for, those the source
    has (a pin's release label's tag: what the tag names is then known to the store, and
    pins._check_git_label compares it with the pinned commit).
    """
    commit = _git_revision(store, name, url, spec, offline=offline, refs=refs)
    if "/" not in spec and spec != "HEAD" and \
            re.fullmatch(r"[0-9a-fA-F]{7,40}", spec) is None:
        _say_tag_and_branch(store, name, url, spec, commit)
    return commit


def _say_tag_and_branch(store: UpstreamStore, upstream: str, url: str, spec: str,
                        commit: str) -> None:
    """A warning when the store has both a tag and a branch `spec` of the source (as fetched:
    a bare name brings both) naming different commits, and the tag's was taken."""
    name = store_namespace(upstream, url)
    base = f"refs/patchforge/remotes/{name}"
    if store.read_ref(f"{base}/heads/{spec}") is None or \
            store.read_ref(f"{base}/tags/{spec}") is None:
        return
    branch = store.resolve_in(name, f"refs/heads/{spec}")
    if branch == commit:
        return
    # Only this rare path loads `logging` (patchforge.logs says why).
    import logging

    logging.getLogger("patchforge.store").warning(
        "warning: %s: %s is both a tag and a branch of %s: the tag (%s) is used, as git does; "
        "refs/heads/%s names the branch (%s), refs/tags/%s the tag", upstream, spec,
        redact(url), commit[:12], spec, branch[:12], spec)


def _git_revision(store: UpstreamStore, name: str, url: str, spec: str, *,
                  offline: bool, refs: tuple[str, ...] = ()) -> str:
    """fetch_git_upstream's commit, without its warning."""
    upstream, name = name, store_namespace(name, url)
    is_id = re.fullmatch(r"[0-9a-fA-F]{7,40}", spec) is not None
    if not is_id and not offline:
        # A tag already fetched is not fetched again, but it is not trusted either: a re-spun
        # release (`git tag -f`) or a `nightly` tag that CI re-points moves, and the store's
        # copy, shared by every project of the cache, would name the first fetch's commit
        # forever. One ls-remote of the remote's tags (milliseconds on a local mirror, a round
        # trip to a server: docs/performance.md) says whether it still names the stored commit;
        # only a moved tag is fetched.
        tag = store.read_ref(f"refs/patchforge/remotes/{name}/tags/{spec}")
        if tag is not None:
            now = _checked_tag(store, upstream, name, url, spec, tag)
            if now is not None:
                return now
            # Deleted upstream: a branch of that name is fetched as any branch; without one,
            # the error says what the store still has.
            try:
                store.fetch_git(name, url, [f"refs/heads/{spec}"])
            except RefNotFound:
                raise _tag_gone(upstream, url, spec, tag) from None
            # The name is the branch now, offline too (a stored tag comes first: resolve_in).
            store.forget_tag(name, spec, store.resolve_in(name, f"refs/tags/{spec}"))
            return store.resolve_in(name, f"refs/heads/{spec}")
    if is_id or offline:
        try:
            return store.resolve_in(name, spec)
        except RefNotFound:
            if offline:
                # Not RefNotFound: the source was not asked, so whether it has `spec` is not
                # known (a `follow` never fetched yet is no fault of the configuration).
                raise StoreError(f"{upstream}: {spec!r} is not in the store as a revision of "
                                 f"{redact(url)}, and --offline forbids fetching it") from None
    if is_id and len(spec) < 40:
        # A remote cannot be asked for an abbreviated id: bring its branches and look again.
        _fetch_all_heads(store, name, url)
    elif is_id and store.has_object(spec.lower()):
        # The store holds the commit, but not as one of this source (another project put it
        # there): git would "fetch" it by id without asking the remote at all. Whether this
        # source has it is seen from its own branches and tags.
        _fetch_all_heads(store, name, url, tags=True)
    else:
        store.fetch_git(name, url, [spec.lower() if is_id else spec],
                        if_there=list(refs) if is_id else [])
    try:
        return store.resolve_in(name, spec)
    except RefNotFound:
        # A tag of a tree or a blob (`git tag t v1^{tree}`) is there, and no revision: said
        # as such, never "not a known ... tag".
        kind = None if is_id else store.peeled_type(f"refs/patchforge/remotes/{name}/tags/{spec}")
        if kind is not None and kind != "commit":
            raise RefNotFound(f"{upstream}: tag {spec!r} of {redact(url)} names a {kind}, not a "
                              "commit", hint="name a commit, or a branch or tag of one") from None
        raise RefNotFound(f"{upstream}: {spec!r} is not a known commit, branch or tag of "
                          f"{redact(url)}",
                          hint="check the lock or the SPEC against the upstream's history"
                          ) from None


def _checked_tag(store: UpstreamStore, upstream: str, name: str, url: str, tag: str,
                 stored: str) -> str | None:
    """The commit tag `tag` names upstream now, the store's copy (`stored`) moved there when
    the remote re-pointed it; None when the remote no longer has the tag.

    A moved tag is said on stderr (old and new commits) and fetched: the command goes on with
    the commit the tag names now, as a first fetch would have."""
    where = redact(url)
    try:
        now = store.remote_tag(url, tag, what=f"asking {where} for tag {tag}")
    except RemoteUnreachable as exc:
        # The name is fine (the store has the tag): the remote is what failed, and --offline
        # is the way on, said in the hint too (the --json error document has only that).
        raise gave_up_as(RemoteUnreachable(
            f"{upstream}: tag {tag!r} could not be checked against {where} "
            f"({exc.message}); with --offline the store answers as last fetched "
            f"(tag {tag} at {stored[:12]})",
            hint=f"{where} could not be reached (the network, the URL or a login); "
                 f"`--offline` answers from the store as last fetched (tag {tag} at "
                 f"{stored[:12]})" + (f"; {exc.hint}" if exc.hint else "")), exc) from None
    if now is None:
        return None
    if now == stored:
        return stored
    store.fetch_git(name, url, [f"refs/tags/{tag}"])
    moved = store.read_ref(f"refs/patchforge/remotes/{name}/tags/{tag}")
    if moved is None:  # deleted between the two questions: as if the first had seen it
        raise _tag_gone(upstream, url, tag, stored)
    # Only this rare path loads `logging` (patchforge.logs says why); a warning is shown
    # without -v.
    import logging

    logging.getLogger("patchforge.store").warning(
        "warning: %s: tag %s moved upstream: was %s, now %s", upstream, tag, stored[:12],
        moved[:12])
    return moved


def _tag_gone(upstream: str, url: str, tag: str, stored: str) -> RefNotFound:
    """A tag the store has and the upstream no longer has (nor a branch of its name): refused,
    as a deleted branch is. The stored commit may be gone from the upstream too, and a lock
    pinning it would then be fetched nowhere else; the way on is in the message, since a
    SPEC's resolution error lists what each attempt said and gives its own hint."""
    return RefNotFound(f"{upstream}: {redact(url)} no longer has tag {tag!r}; the store has it "
                       f"from an earlier fetch, at commit {stored}: name that commit to use it "
                       "anyway (no branch or tag of the upstream may reach it any more), or run "
                       "with --offline to answer from the store as last fetched")


def _fetch_all_heads(store: UpstreamStore, name: str, url: str, *, tags: bool = False) -> None:
    heads = store.remote_heads(name, url, tags=tags)
    if heads:
        store.fetch_git(name, url, heads)
