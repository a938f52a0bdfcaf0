"""`lint`: what a reviewer would check by hand before trusting a series.

Headers (Upstream-Status, Description, Origin/Author, Upstream, Base), series/files consistency,
byte-stability (regenerating a patch gives the same bytes), zero fuzz against the locked base for
every profile, `Keeps:` invariants, submitted fixes whose pull request closed unmerged, and
`Drop-When` conditions that are already true.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from patchforge.apply.series import applies_to_profile, apply_series
from patchforge.errors import InputError, PatchforgeError

STATUS_RE = re.compile(r"^(Pending|Accepted|Submitted(\s*\[[^\]]+\])?|Backport(\s*\[[^\]]+\])?|"
                       r"Denied(\s*\[[^\]]+\])?|Inappropriate(\s*\[[^\]]+\])?|"
                       r"Inactive-Upstream(\s*\[[^\]]+\])?)\s*$", re.I)


@dataclass(frozen=True)
class Finding:
    patch: str  # "upstream/name" or a file path
    check: str
    message: str
    severity: str = "error"  # error | warning

    def to_json(self) -> dict:
        return {"patch": self.patch, "check": self.check, "message": self.message,
                "severity": self.severity}


def lint(project, store, *, forge=None) -> list[Finding]:
    findings: list[Finding] = []
    lock = project.lock
    for upstream in project.upstream_names():
        findings += _series_consistency(project, upstream)
        try:
            names = project.patch_names(upstream)
        except InputError:
            continue
        pin = lock.upstreams.get(upstream)
        parsed = []
        for name in names:
            label = f"{upstream}/{name}"
            try:
                raw = project.read_patch_bytes(upstream, name)
                patch = project.read_patch(upstream, name)
            except PatchforgeError as exc:
                findings.append(Finding(label, "parse", str(exc)))
                continue
            parsed.append((name, patch, raw))
            findings += _headers(label, patch, upstream, pin)
            if patch.to_bytes() != raw:
                findings.append(Finding(label, "byte-stable", "parse then write changes the file"))
        if pin is None or not parsed:
            continue
        findings += _apply_checks(project, store, upstream, pin, parsed)
        findings += _drop_and_forward(project, store, upstream, pin, parsed, forge)
    findings += _ledger(project)
    return findings


def _series_consistency(project, upstream: str) -> list[Finding]:
    out = []
    directory = project.series_dir(upstream)
    try:
        names = project.patch_names(upstream)
    except InputError as exc:
        return [Finding(str(project.series_path(upstream).relative_to(project.root)), "series",
                        str(exc))]
    on_disk = {p.name for p in directory.glob("*.patch")} if directory.is_dir() else set()
    for name in names:
        if name not in on_disk:
            out.append(Finding(f"{upstream}/{name}", "series", "listed in the series but missing"))
    for name in sorted(on_disk - set(names)):
        out.append(Finding(f"{upstream}/{name}", "series",
                           "patch file not listed in the series (add it, or move it to deleted/)"))
    return out


def _headers(label: str, patch, upstream: str, pin) -> list[Finding]:
    out = []
    status = patch.get("Upstream-Status")
    if not status:
        out.append(Finding(label, "header", "no Upstream-Status"))
    elif not STATUS_RE.match(status.strip()):
        out.append(Finding(label, "header", f"Upstream-Status {status!r} is not one of Pending, "
                                            "Submitted [url], Backport [commit], Denied [reason], "
                                            "Inappropriate [reason]"))
    if not patch.get("Description"):
        out.append(Finding(label, "header", "no Description (or Subject)"))
    if not (patch.get("Origin") or patch.get("Author")):
        out.append(Finding(label, "header", "neither Origin nor Author"))
    declared = patch.get("Upstream")
    if declared and declared.strip() != upstream:
        out.append(Finding(label, "header", f"Upstream: {declared} but it is in the {upstream} "
                                            "series"))
    base = patch.get("Base")
    if pin is not None and base and base.strip() != pin.commit:
        out.append(Finding(label, "header", f"Base {base.strip()[:12]} is not the locked "
                                            f"revision {pin.commit[:12]}", "warning"))
    if pin is not None and not base:
        out.append(Finding(label, "header", "no Base (the upstream commit the diff is against)",
                           "warning"))
    return out


def _apply_checks(project, store, upstream, pin, parsed) -> list[Finding]:
    from patchforge.invariants import check_patch_invariants
    from patchforge.ops.common import make_diff

    out = []
    profiles = list(project.config.profiles) or [None]

    def read_base(paths):
        return store.read_blobs(pin.commit, paths)

    reported: set[tuple[str, str]] = set()
    for profile in profiles:
        selected = [(n, p) for n, p, _ in parsed if applies_to_profile(p, profile)]
        state = apply_series(read_base, selected, strict=False)
        where = f" (profile {profile})" if profile else ""
        for outcome in state.outcomes:
            label = f"{upstream}/{outcome.name}"
            if not outcome.ok:
                out.append(Finding(label, "apply", f"does not apply on the locked base{where}"))
            elif outcome.worst == "fuzz":
                out.append(Finding(label, "fuzz", f"applies only with fuzz{where}"))
        # Keeps: invariants on this profile's result.
        for name, patch in selected:
            for problem in check_patch_invariants(patch, lambda path: state.current.get(path)
                                                  if path in state.current
                                                  else store.read_blob(pin.commit, path)):
                key = (name, problem)
                if key not in reported:
                    reported.add(key)
                    out.append(Finding(f"{upstream}/{name}", "keeps", problem + where))
    # Byte-stability of the diff: regenerate each patch on the series before it.
    state = None
    from patchforge.apply.series import SeriesState
    state = SeriesState()
    for name, patch, _ in parsed:
        before = dict(state.current)
        apply_series(read_base, [(name, patch)], strict=False, state=state)
        if not state.outcomes[-1].ok:
            continue
        changes = []
        for fp in patch.file_patches:
            path = fp.new_path or fp.old_path
            old = before.get(fp.old_path, state.base.get(fp.old_path)) if fp.old_path else None
            new = state.current.get(path) if fp.new_path else None
            entry = store.entry(pin.commit, fp.old_path) if fp.old_path else None
            mode_old = fp.old_mode or (entry[0] if entry else "100644")
            mode_new = fp.new_mode or mode_old
            changes.append((path, old, new, mode_old, mode_new))
        try:
            regenerated = make_diff(store, changes)
        except PatchforgeError:
            continue
        if regenerated != patch.diff and not any(fp.is_rename for fp in patch.file_patches):
            out.append(Finding(f"{upstream}/{name}", "byte-stable",
                               "regenerating the diff gives different bytes (not made by "
                               "patchforge's fixed diff options); `patchforge edit` + `refresh` "
                               "normalizes it", "warning"))
    return out


def _drop_and_forward(project, store, upstream, pin, parsed, forge) -> list[Finding]:
    from patchforge.ops.status import Target, drop_when, forwarded_info

    out = []
    target = Target(upstream, pin.commit, pin.commit, pin.label, pin.version)
    for name, patch, _ in parsed:
        label = f"{upstream}/{name}"
        forwarded = forwarded_info(project, store, patch, target, forge) if forge else None
        if forwarded and forwarded.get("state") == "closed" and not forwarded.get("merged"):
            out.append(Finding(label, "forwarded", f"pull request {forwarded['url']} was closed "
                                                   "without being merged", "warning"))
        condition = drop_when(patch, target, forwarded)
        if condition and condition.get("true"):
            out.append(Finding(label, "drop-when", f"Drop-When {condition['condition']} is true "
                                                   f"for {pin.label}: remove the fix"))
    return out


def _ledger(project) -> list[Finding]:
    try:
        from patchforge.ledger import ledger_findings
    except ImportError:
        return []
    return ledger_findings(project)
