"""The rebase transaction: move each upstream's series onto a new revision, patch by patch.

Per patch, in series order: landed detection (patchforge.detect) drops what upstream took; a patch
that applies exactly or with an offset is re-emitted against the new base; anything else goes
through git's 3-way merge (`git merge-file`, merge base = the old series state before the patch,
as `git rebase` does), with upstream renames followed. A conflict, a file gone upstream or a broken
`Keeps:` invariant stops the run with a worktree and a journal; `--continue`, `--skip` and
`--abort` go on from there. Nothing under the project is written until every upstream is done;
then patches, series, lock and overlays are written out together, and a kill during that write-out
is finished by `--continue` or undone by `--abort`.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field, replace

from patchforge.apply.hunks import apply_file_patch
from patchforge.apply.series import SeriesState, apply_series
from patchforge.errors import ConflictStop, InProgressError, UsageError
from patchforge.formats.lockfile import lock_to_json
from patchforge.formats.series import SeriesFile
from patchforge.model.lock import UpstreamPin
from patchforge.ops.common import make_diff
from patchforge.ops.status import SeriesJudge, Target, landed_in
from patchforge.rebase.journal import Journal

_CONFLICT_MARKER = re.compile(rb"^(<<<<<<<|>>>>>>>)( |$)", re.M)


@dataclass
class PatchResult:
    upstream: str
    name: str
    action: str  # clean | offset | merged | resolved | dropped | skipped
    detail: str = ""
    evidence: list[str] = field(default_factory=list)
    landed_in: str | None = None
    staged: str | None = None  # staged bytes of the new (or set-aside) patch file
    destination: str = "series"  # series | upstreamed | skipped

    def to_json(self) -> dict:
        return {"upstream": self.upstream, "name": self.name, "action": self.action,
                "detail": self.detail, "evidence": self.evidence, "landed_in": self.landed_in,
                "destination": self.destination}


def _pin_doc(pin: UpstreamPin) -> dict:
    return {"kind": pin.kind, "commit": pin.commit, "tree": pin.tree, "label": pin.label,
            "source": pin.source, "version": pin.version}


def _pin_from_doc(doc: dict) -> UpstreamPin:
    return UpstreamPin(kind=doc["kind"], commit=doc["commit"], tree=doc["tree"],
                       label=doc["label"], source=doc["source"], version=doc.get("version"))


def merge_file(base: bytes, ours: bytes, theirs: bytes, labels=("upstream", "base", "patch")):
    """git merge-file: (clean, merged bytes with conflict markers where it is not clean)."""
    import subprocess
    import tempfile
    from pathlib import Path

    from patchforge.store.gitstore import git_env

    with tempfile.TemporaryDirectory(prefix="patchforge-merge-") as tmp:
        paths = []
        for name, data in (("ours", ours), ("base", base), ("theirs", theirs)):
            path = Path(tmp) / name
            path.write_bytes(data)
            paths.append(str(path))
        cmd = ["git", "merge-file", "-p", "-L", labels[0], "-L", labels[1], "-L", labels[2],
               *paths]
        proc = subprocess.run(cmd, capture_output=True, env=git_env())
    if proc.returncode < 0 or proc.returncode > 127:
        raise UsageError(f"git merge-file failed: {proc.stderr.decode(errors='replace')}")
    return proc.returncode == 0, proc.stdout


class Rebase:
    """One rebase run over the journal; the CLI drives start/continue/skip/abort."""

    def __init__(self, project, store) -> None:
        self.project = project
        self.store = store
        self.journal = Journal(project.state_dir)
        self.results: list[PatchResult] = []

    # --- entry points -------------------------------------------------------------------------
    def start(self, specs: dict[str, str], *, dry_run: bool = False) -> dict:
        from patchforge.ops.resolve import ensure_pinned, pin_for_spec

        if self.journal.exists():
            raise InProgressError("a rebase is in progress",
                                  hint="run `patchforge rebase --continue`, `--skip` or `--abort`")
        lock = self.project.lock
        plan = {}
        for upstream in self.project.upstream_names():
            if upstream not in specs:
                continue
            old = lock.pin(upstream)
            ensure_pinned(self.project, self.store, upstream, old)
            new = pin_for_spec(self.project, self.store, self.project.config.upstream(upstream),
                               specs[upstream])
            plan[upstream] = {"from": _pin_doc(old), "to": _pin_doc(new),
                              "names": self.project.patch_names(upstream), "position": 0,
                              "current_commit": new.commit, "results": []}
        unknown = set(specs) - set(plan)
        if unknown:
            raise UsageError(f"unknown upstream(s): {', '.join(sorted(unknown))}")
        self.journal.data = {"phase": "running", "upstreams": plan, "dry_run": dry_run,
                             "order": list(plan)}
        if not dry_run:
            self.journal.save()
        return self._run()

    def resume(self, *, skip: bool = False) -> dict:
        if not self.journal.exists():
            raise UsageError("no rebase in progress")
        data = self.journal.load()
        if data["phase"] == "committing":
            if skip:
                raise UsageError("the rebase is writing out its result; --continue or --abort")
            return self._write_out()
        stopped = data.get("stopped")
        if stopped:
            if skip:
                self._skip_stopped(stopped)
            else:
                self._take_resolution(stopped)
            data["stopped"] = None
            self.journal.save()
        return self._run()

    def abort(self) -> list[str]:
        if not self.journal.exists():
            raise UsageError("no rebase in progress")
        data = self.journal.load()
        restored = []
        if data.get("phase") == "committing":
            from patchforge.overlay import recover_overlays
            restored = self.journal.restore_originals(self.project.root)
            self._restore_overlays()
            recover_overlays(self.project)
        for upstream in data["upstreams"]:
            self._remove_worktree(upstream)
        self.journal.remove()
        return restored

    # --- the loop -----------------------------------------------------------------------------
    def _run(self) -> dict:
        data = self.journal.data
        dry = data.get("dry_run", False)
        for upstream in data["order"]:
            entry = data["upstreams"][upstream]
            self._run_upstream(upstream, entry, dry)
        if dry:
            return self._summary(written=False)
        return self._write_out()

    def _run_upstream(self, upstream: str, entry: dict, dry: bool) -> None:
        old = _pin_from_doc(entry["from"])
        new = _pin_from_doc(entry["to"])
        names = entry["names"]
        patches = [(n, self.project.read_patch(upstream, n)) for n in names]
        target = Target(upstream, old.commit, new.commit, new.label, new.version)
        judge = SeriesJudge(self.store, target, read_commit=entry["current_commit"])
        # The old series state before each patch: the merge base of its 3-way merge.
        old_state = apply_series(lambda paths: self.store.read_blobs(old.commit, paths),
                                 patches[:entry["position"]], strict=False)
        position = entry["position"]
        while position < len(names):
            name, patch = patches[position]
            result, stop = self._rebase_one(upstream, name, patch, judge, old_state, target)
            apply_series(lambda paths: self.store.read_blobs(old.commit, paths),
                         [(name, patch)], strict=False, state=old_state)
            if stop is not None:
                if dry:
                    entry["results"].append({"upstream": upstream, "name": name,
                                             "action": "conflict", "detail": stop["message"],
                                             "evidence": stop.get("evidence", []),
                                             "landed_in": None, "destination": "series"})
                    entry["position"] = position + 1
                    position += 1
                    continue
                entry["position"] = position
                entry["current_commit"] = self._snapshot_commit(judge, target)
                self.journal.data["stopped"] = {"upstream": upstream, "name": name, **stop,
                                                "base": entry["current_commit"]}
                self._open_conflict_worktree(upstream, entry["current_commit"], stop)
                self.journal.save()
                raise ConflictStop(
                    f"{upstream}/{name}: {stop['message']}",
                    hint=f"fix the files in {self.project.work_dir(upstream)} "
                         f"({', '.join(stop['files'])}), then `patchforge rebase --continue`; "
                         "or `--skip` to set the patch aside, `--abort` to go back")
            entry["results"].append(result.to_json() | {"staged": result.staged})
            entry["position"] = position + 1
            position += 1
            if not dry:
                entry["current_commit"] = self._snapshot_commit(judge, target) \
                    if judge.current else entry["current_commit"]
                self.journal.save()

    def _rebase_one(self, upstream, name, patch, judge, old_state: SeriesState, target):
        verdict = judge.assess(name, patch)
        base_label = target.label
        if verdict.state == "upstreamed":
            where = landed_in(self.store, target, patch, verdict)
            applied = f"{base_label}" + (f", commit {where}" if where else "")
            kept = patch.with_field("Applied-Upstream", applied)
            result = PatchResult(upstream, name, "dropped",
                                 f"landed upstream ({verdict.confidence} confidence)",
                                 verdict.evidence, where, destination="upstreamed")
            result.staged = self._stage(f"{upstream}/upstreamed/{name}", kept.to_bytes())
            return result, None
        if verdict.state == "obsolete":
            gone = [f.path for f in verdict.files if f.target_path is None]
            return None, {"kind": "obsolete", "files": gone, "evidence": verdict.evidence,
                          "message": f"{', '.join(gone)} is gone upstream (deleted, not renamed); "
                                     "decide: --skip to set the fix aside, or re-create it"}
        before: dict[str, bytes | None] = {}
        after: dict[str, bytes | None] = {}
        conflicts: list[str] = []
        merged_any = False
        clean_forward = verdict.state in ("applies", "offset") or (
            verdict.state == "unsure" and all(f.applied is not None and f.applied.ok
                                              and f.applied.worst in ("exact", "offset")
                                              for f in verdict.files))
        for fp, fv in zip(patch.file_patches, verdict.files):
            moved = fv.target_path
            fp_target = fp if moved == fv.path else replace(
                fp, old_path=moved if fp.old_path else None,
                new_path=moved if fp.new_path else None)
            path_after = fp_target.new_path if fp_target.new_path is not None else fp_target.old_path
            current = judge.read_current(moved) if not fp.is_new else judge.read_current(path_after)
            before[path_after] = current
            if fp_target.old_path and fp_target.old_path != path_after:
                before[fp_target.old_path] = judge.read_current(fp_target.old_path)
            if clean_forward:
                application = apply_file_patch(current if not fp.is_new else None, fp_target,
                                               max_fuzz=0)
                if application.ok:
                    after[path_after] = application.content
                    continue
            # 3-way: base = old series state before this patch, theirs = base + patch.
            source_path = fp.old_path or fp.new_path
            base = old_state.current.get(source_path) if source_path in old_state.current \
                else self.store.read_blob(target.base_commit, source_path)
            theirs_app = apply_file_patch(base if not fp.is_new else None, fp, max_fuzz=2)
            if not theirs_app.ok:
                conflicts.append(path_after)
                after[path_after] = current
                continue
            if theirs_app.content is None or current is None:
                conflicts.append(path_after)
                after[path_after] = current
                continue
            clean, merged = merge_file(base or b"", current, theirs_app.content)
            merged_any = True
            after[path_after] = merged
            if not clean:
                conflicts.append(path_after)
        if conflicts:
            return None, {"kind": "conflict", "files": conflicts, "evidence": verdict.evidence,
                          "contents": {p: after[p] for p in conflicts},
                          "message": f"conflict in {', '.join(conflicts)}"}
        changes = []
        for path, new_content in after.items():
            old_content = before.get(path)
            if old_content == new_content:
                continue
            entry = self.store.entry(target.commit, path) if old_content is not None else None
            mode = entry[0] if entry else "100644"
            changes.append((path, old_content, new_content, mode, mode))
        if not changes:
            result = PatchResult(upstream, name, "dropped",
                                 "the 3-way merge leaves nothing to change (landed upstream)",
                                 verdict.evidence + ["merge result empty"], None,
                                 destination="upstreamed")
            kept = patch.with_field("Applied-Upstream", base_label)
            result.staged = self._stage(f"{upstream}/upstreamed/{name}", kept.to_bytes())
            return result, None
        violations = self._check_keeps(patch, {**before, **after}, judge)
        if violations:
            return None, {"kind": "invariant", "files": sorted(after), "evidence": violations,
                          "contents": {p: after[p] for p in after},
                          "message": "; ".join(violations)}
        for path, content in after.items():
            judge.current[path] = content
        for path, content in before.items():
            if path not in after:
                judge.current[path] = None
        new_patch = patch.with_diff(make_diff(self.store, changes)).with_field("Base",
                                                                              target.commit)
        if merged_any:
            action = "merged"
        elif verdict.state == "offset":
            action = "offset"
        else:
            action = "clean"
        detail = {"merged": "3-way merged cleanly", "offset": "applied with offset",
                  "clean": "applied exactly"}[action]
        if verdict.state == "unsure":
            detail += "; landed detection unsure: review"
        if verdict.renames:
            detail += "; follows " + ", ".join(f"{a} -> {b}" for a, b in verdict.renames.items())
        result = PatchResult(upstream, name, action, detail,
                             verdict.evidence if verdict.state != "applies" else [])
        result.staged = self._stage(f"{upstream}/{name}", new_patch.to_bytes())
        return result, None

    def _check_keeps(self, patch, files: dict, judge) -> list[str]:
        from patchforge.invariants import check_patch_invariants

        return check_patch_invariants(patch, lambda path: files[path] if path in files
                                      else judge.read_current(path))

    def _stage(self, rel: str, data: bytes) -> str:
        if self.journal.data.get("dry_run"):
            return rel
        return self.journal.stage(rel, data)

    def _snapshot_commit(self, judge, target) -> str:
        if not judge.current:
            return target.commit
        return self.store.commit_files(judge.read_commit, dict(judge.current),
                                       message="patchforge rebase: series so far")

    # --- stops --------------------------------------------------------------------------------
    def _open_conflict_worktree(self, upstream: str, commit: str, stop: dict) -> None:
        from patchforge.ops.series import _prepare_checkout

        work = self.project.work_dir(upstream)
        _prepare_checkout(self.store, work, commit)
        for path, content in (stop.pop("contents", None) or {}).items():
            target = work / path
            if content is None:
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)

    def _remove_worktree(self, upstream: str) -> None:
        import shutil
        work = self.project.work_dir(upstream)
        if work.exists():
            shutil.rmtree(work)

    def _take_resolution(self, stopped: dict) -> None:
        """--continue: the worktree's difference from the stop's base becomes the patch."""
        from patchforge.ops.series import _worktree_diff

        upstream, name = stopped["upstream"], stopped["name"]
        entry = self.journal.data["upstreams"][upstream]
        work = self.project.work_dir(upstream)
        state = {"base": stopped["base"]}
        diff, changes = _worktree_diff(self.project, self.store, upstream, state,
                                       with_changes=True)
        for path, _, new, _, _ in changes:
            if new is not None and _CONFLICT_MARKER.search(new):
                raise UsageError(f"{work / path} still has conflict markers",
                                 hint="resolve them, then run `patchforge rebase --continue`")
        patch = self.project.read_patch(upstream, name)
        target = _pin_from_doc(entry["to"])
        if not changes:
            result = PatchResult(upstream, name, "skipped",
                                 "resolved to no change; set aside", destination="skipped")
            result.staged = self._stage(f"{upstream}/skipped/{name}", patch.to_bytes())
        else:
            new_patch = patch.with_diff(diff).with_field("Base", target.commit)
            violations = self._check_keeps(new_patch, {p: n for p, _, n, _, _ in changes},
                                           SeriesJudge(self.store, Target(
                                               upstream, entry["from"]["commit"], target.commit,
                                               target.label, target.version),
                                               read_commit=stopped["base"]))
            if violations:
                raise UsageError("; ".join(violations),
                                 hint="the resolution breaks the patch's Keeps: invariant")
            result = PatchResult(upstream, name, "resolved", "conflict resolved by hand")
            result.staged = self._stage(f"{upstream}/{name}", new_patch.to_bytes())
            entry["current_commit"] = self.store.commit_files(
                stopped["base"], {p: n for p, _, n, _, _ in changes},
                message=f"patchforge rebase: {name} resolved")
        entry["results"].append(result.to_json() | {"staged": result.staged})
        entry["position"] += 1
        self._remove_worktree(upstream)

    def _skip_stopped(self, stopped: dict) -> None:
        upstream, name = stopped["upstream"], stopped["name"]
        entry = self.journal.data["upstreams"][upstream]
        patch_bytes = self.project.read_patch_bytes(upstream, name)
        result = PatchResult(upstream, name, "skipped", f"skipped at {stopped['kind']}",
                             stopped.get("evidence", []), destination="skipped")
        result.staged = self._stage(f"{upstream}/skipped/{name}", patch_bytes)
        entry["results"].append(result.to_json() | {"staged": result.staged})
        entry["position"] += 1
        self._remove_worktree(upstream)

    # --- the write-out ------------------------------------------------------------------------
    def _plan(self) -> tuple[list[tuple[str, bytes | None]], object, dict]:
        """Every project file the rebase changes: (path relative to root, new bytes or None)."""
        from patchforge.formats.patchfile import parse_patch_file

        project = self.project
        lock = project.lock
        writes: list[tuple[str, bytes | None]] = []
        sources = {}
        for upstream, entry in self.journal.data["upstreams"].items():
            kept = []
            series_rel = f"series/{upstream}"
            for result in entry["results"]:
                name = result["name"]
                data = self.journal.staged_bytes(result["staged"])
                if result["destination"] == "series":
                    kept.append(name)
                    writes.append((f"{series_rel}/{name}", data))
                else:
                    writes.append((f"{series_rel}/{result['destination']}/{name}", data))
                    writes.append((f"{series_rel}/{name}", None))
            series = project.read_series(upstream)
            writes.append((f"{series_rel}/series", series.replaced_names(kept).to_bytes()))
            lock = lock.with_pin(upstream, _pin_from_doc(entry["to"]))
            sources[upstream] = [(n, parse_patch_file(d, n), d) for n, d in
                                 ((n, dict(writes)[f"{series_rel}/{n}"]) for n in kept)]
        writes.append(("upstream.lock", lock_to_json(lock)))
        # The set-aside files are written before the series stops listing them, and the old files
        # are removed last: a kill at any point never loses a patch.
        writes.sort(key=lambda w: (w[1] is None, w[0].endswith("/series"), w[0]))
        return writes, lock, sources

    def _write_out(self) -> dict:
        from patchforge.fsutil import atomic_delete, atomic_write
        from patchforge.overlay import build_overlays, write_overlays

        project = self.project
        writes, lock, sources = self._plan()
        for upstream in project.upstream_names():
            if upstream not in sources:
                sources[upstream] = [(n, project.read_patch(upstream, n),
                                      project.read_patch_bytes(upstream, n))
                                     for n in project.patch_names(upstream)]
        regenerate = project.overlays_dir.exists() and any(sources.values())
        overlays = build_overlays(project, self.store, lock=lock, patch_sources=sources) \
            if regenerate else None
        summary = self._summary(written=True)
        summary["range_diff"] = self._range_diff(sources)
        if self.journal.data["phase"] != "committing":
            for rel, _ in writes:
                self.journal.save_original(project.root, rel)
            self._save_overlays()
            self.journal.data["phase"] = "committing"
            self.journal.save()
        for rel, data in writes:
            if data is None:
                atomic_delete(project.root / rel)
            else:
                atomic_write(project.root / rel, data)
        if overlays is not None:
            write_overlays(project, overlays)
        self._append_history(summary)
        self.journal.remove()
        return summary

    def _save_overlays(self) -> None:
        import shutil
        source = self.project.overlays_dir
        target = self.journal.dir / "orig-overlays"
        if source.exists() and not target.exists():
            shutil.copytree(source, target, symlinks=True)

    def _restore_overlays(self) -> None:
        import shutil
        saved = self.journal.dir / "orig-overlays"
        if saved.exists():
            target = self.project.overlays_dir
            if target.exists():
                shutil.rmtree(target)
            shutil.copytree(saved, target, symlinks=True)

    def _append_history(self, summary: dict) -> None:
        try:
            from patchforge.ledger import record_rebase
        except ImportError:
            return
        record_rebase(self.project, summary)

    # --- reporting ----------------------------------------------------------------------------
    def _summary(self, *, written: bool) -> dict:
        data = self.journal.data
        results = [r for entry in data["upstreams"].values() for r in entry["results"]]
        counts: dict[str, int] = {}
        for r in results:
            counts[r["action"]] = counts.get(r["action"], 0) + 1
        return {
            "dry_run": bool(data.get("dry_run")),
            "written": written,
            "upstreams": {u: {"from": e["from"]["label"], "from_commit": e["from"]["commit"],
                              "to": e["to"]["label"], "to_commit": e["to"]["commit"]}
                          for u, e in data["upstreams"].items()},
            "patches": [{k: v for k, v in r.items() if k != "staged"} for r in results],
            "counts": counts,
            "range_diff": "",
        }

    def _range_diff(self, sources: dict) -> str:
        """`git range-diff` of the old series (on the old base) against the new one (on the new
        base), each patch a commit whose message is its subject."""
        chunks = []
        try:
            for upstream, entry in self.journal.data["upstreams"].items():
                old_pin, new_pin = _pin_from_doc(entry["from"]), _pin_from_doc(entry["to"])
                old = [(n, self.project.read_patch(upstream, n)) for n in entry["names"]]
                new = [(n, p) for n, p, _ in sources.get(upstream, [])]
                old_tip = self._chain(old_pin.commit, old)
                new_tip = self._chain(new_pin.commit, new)
                chunks.append(self.store.range_diff(f"{old_pin.commit}..{old_tip}",
                                                    f"{new_pin.commit}..{new_tip}"))
        except Exception as exc:  # the range-diff is a report; never fail a rebase over it
            return f"(range-diff unavailable: {exc})\n"
        return "".join(chunks)

    def _chain(self, base: str, patches) -> str:
        """Commit each patch on top of the previous one (no checkout); returns the tip."""
        state = SeriesState()
        tip = base
        for name, patch in patches:
            before = dict(state.current)
            apply_series(lambda paths: self.store.read_blobs(base, paths), [(name, patch)],
                         strict=False, state=state)
            changed = {p: c for p, c in state.current.items() if before.get(p, state.base.get(p))
                       != c or p not in before}
            tip = self.store.commit_files(tip, changed, message=patch.subject or name,
                                          parents=[tip])
        return tip
