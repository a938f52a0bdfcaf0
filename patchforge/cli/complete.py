"""Shell completion of the project's own names: patches, upstreams, profiles, and `NAME=` for SPECs.

Each function is a click `shell_complete` callback. They read only the configuration and the
series files of the project the command line names (`--root`, else the nearest one from the
current directory), never the store or the network, and a project that cannot be read completes
nothing instead of failing: a completion must never print an error into the user's prompt.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from patchforge.project import Project


def _project(ctx):
    from patchforge.project import Project

    root = None
    top = ctx.find_root()
    if top.params.get("root"):
        root = top.params["root"]
    return Project.discover(root, offline=True)


def _safely(build):
    def complete(ctx, param, incomplete):
        from click.shell_completion import CompletionItem

        try:
            return [item if isinstance(item, CompletionItem) else CompletionItem(*item)
                    for item in build(_project(ctx), incomplete)]
        except Exception:  # noqa: BLE001 - see the module docstring
            return []
    return complete


def _patch_items(project: Project, incomplete: str) -> list[tuple[str, ...]]:
    """Patch names without `.patch`, as commands take them; `upstream/name` when the stem is in
    several series or when the user started typing an upstream."""
    stems: dict[str, list[str]] = {}
    for upstream, name in project.all_patches():
        stems.setdefault(name[:-len(".patch")] if name.endswith(".patch") else name,
                         []).append(upstream)
    items: list[tuple[str, ...]] = []
    for stem, upstreams in stems.items():
        qualified = [f"{u}/{stem}" for u in upstreams]
        if len(upstreams) == 1 and stem.startswith(incomplete) and "/" not in incomplete:
            items.append((stem,))
        else:
            items.extend((q,) for q in qualified if q.startswith(incomplete))
    return items


def _upstream_items(project: Project, incomplete: str) -> list[tuple[str, ...]]:
    return [(u,) for u in project.upstream_names() if u.startswith(incomplete)]


def _profile_items(project: Project, incomplete: str) -> list[tuple[str, ...]]:
    return [(name, "plain", str(text)) for name, text in project.config.profiles.items()
            if name.startswith(incomplete)]


def _spec_items(project: Project, incomplete: str) -> list[tuple[str, ...]]:
    """`vllm=` for each upstream: the SPEC after `=` is the user's to type."""
    if "=" in incomplete:
        return []
    return [(f"{u}=",) for u in project.upstream_names()
            if u.startswith(incomplete)]


def _skipped_items(project: Project, incomplete: str) -> list[tuple[str, ...]]:
    """The fixes a rebase set aside (`skipped/`), as `bring-back` takes them: the name, or
    `upstream/name` where several series have one of that name set aside."""
    from patchforge.state import skipped_fixes

    stems: dict[str, list[str]] = {}
    for fix in skipped_fixes(project):
        stems.setdefault(fix.name.removesuffix(".patch"), []).append(fix.upstream)
    items: list[tuple[str, ...]] = []
    for stem, upstreams in stems.items():
        if len(upstreams) == 1 and stem.startswith(incomplete) and "/" not in incomplete:
            items.append((stem,))
        else:
            items.extend((f"{u}/{stem}",) for u in upstreams
                         if f"{u}/{stem}".startswith(incomplete))
    return items


complete_patch = _safely(_patch_items)
complete_skipped = _safely(_skipped_items)
complete_upstream = _safely(_upstream_items)
complete_profile = _safely(_profile_items)
complete_spec = _safely(_spec_items)
