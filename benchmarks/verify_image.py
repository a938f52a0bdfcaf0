"""verify --image's layer reading against GNU tar on the same layers: the real vllm 0.32.0 wheel
(every file, 1 GB unpacked) as one image layer under the install root, gzip and zstd.

    python3 benchmarks/verify_image.py [--runs 3]

The work, for each tool: find the files the example stack's overlays cover in the layer and hash
them. patchforge streams the layer through its reader (as `verify --image` does, here from a
file, and once more through a registry on 127.0.0.1 to include HTTP); the peer is
`tar -xf LAYER -O <paths> | sha256sum` (GNU tar with gzip or zstd), which also reads the whole
archive. Printed: the median CPU seconds (user + system, the tool and its children: on a shared
machine wall time measures the neighbours) with the wall time beside it, MB/s of compressed
input per CPU second, the ratio to tar, and patchforge's peak resident memory (the layer is never
held). patchforge also hashes the whole blob to check its digest, which tar does not. Layers are built once under
`<patchforge cache>/bench/verify-image/`.
"""
from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO))
ROOT = "usr/local/lib/python3.12/dist-packages"


def cache_dir() -> Path:
    from patchforge.store.gitstore import cache_dir as pf_cache
    return pf_cache() / "bench" / "verify-image"


def wheel_path() -> Path:
    wheels = Path(os.environ.get("PATCHFORGE_WHEELS") or (cache_dir().parent.parent / "wheels"))
    lock = json.loads((REPO / "upstream.lock").read_bytes())["upstreams"]["vllm"]["source"]
    path = wheels / lock["filename"]
    if not path.exists():
        sys.exit(f"{path} is missing: run `patchforge fetch` in {REPO} first")
    return path


def build_layers() -> dict[str, Path]:
    out = cache_dir()
    out.mkdir(parents=True, exist_ok=True)
    tar_path, gz_path, zst_path = out / "vllm.tar", out / "vllm.tar.gz", out / "vllm.tar.zst"
    if not (gz_path.exists() and zst_path.exists()):
        print("building the layers from", wheel_path().name, "(once)...", file=sys.stderr)
        with zipfile.ZipFile(wheel_path()) as wheel, tarfile.open(tar_path, "w") as layer:
            for info in wheel.infolist():
                if info.is_dir():
                    continue
                member = tarfile.TarInfo(f"{ROOT}/{info.filename}")
                member.size, member.mode, member.mtime = info.file_size, 0o644, 1700000000
                with wheel.open(info) as data:
                    layer.addfile(member, data)
        with open(tar_path, "rb") as raw, gzip.open(gz_path, "wb", compresslevel=6) as packed:
            while chunk := raw.read(1 << 20):
                packed.write(chunk)
        subprocess.run(["zstd", "-q", "-3", "-f", str(tar_path), "-o", str(zst_path)], check=True)
        tar_path.unlink()
    return {"gzip": gz_path, "zstd": zst_path}


def wanted_paths() -> list[str]:
    manifest = json.loads((REPO / "overlays" / "manifest.json").read_bytes())
    return sorted({o["target"].lstrip("/") for o in manifest["overlays"]
                   if o["upstream"] == "vllm"})


CHILD = r"""
import hashlib, json, resource, sys, time
sys.path.insert(0, sys.argv[1])
from patchforge.layers import find_in_layers
from patchforge.net.registry import LayerRef
path, media, digest = sys.argv[2], sys.argv[3], sys.argv[4]
wanted = json.loads(sys.argv[5])

class FileBlob:
    def __init__(self, layer):
        self.layer, self.handle, self.bytes_read = layer, open(path, "rb"), 0
        self.hash = hashlib.sha256()
    def read(self, size=-1):
        chunk = self.handle.read(size if size and size > 0 else 1 << 20)
        self.hash.update(chunk); self.bytes_read += len(chunk)
        return chunk
    def drain(self):
        while self.read(1 << 20): pass
        assert "sha256:" + self.hash.hexdigest() == self.layer.digest
    def close(self): self.handle.close()
    def __enter__(self): return self
    def __exit__(self, *a): self.close()

def cpu():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime

start, start_cpu = time.perf_counter(), cpu()
found = find_in_layers([LayerRef(digest, media, None)], FileBlob, wanted)
elapsed, used = time.perf_counter() - start, cpu() - start_cpu
print(json.dumps({"seconds": elapsed, "cpu": used,
                  "maxrss_kb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss,
                  "hashes": {p: f.sha256 for p, f in sorted(found.items())}}))
"""


def file_digest(path: Path) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            sha.update(chunk)
    return "sha256:" + sha.hexdigest()


def run_patchforge(path: Path, kind: str, digest: str, wanted: list[str]) -> dict:
    media = f"application/vnd.oci.image.layer.v1.tar+{kind}"
    out = subprocess.run([sys.executable, "-c", CHILD, str(REPO), str(path), media, digest,
                          json.dumps(wanted)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)


def run_tar(path: Path, kind: str, wanted: list[str]) -> dict:
    flag = "--zstd" if kind == "zstd" else "-z"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    tar = subprocess.Popen(["tar", flag, "-xf", str(path), "-O", *wanted], stdout=subprocess.PIPE)
    digest = hashlib.sha256(tar.stdout.read()).hexdigest()
    assert tar.wait() == 0
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)  # tar and the decompressor it waited for
    used = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    return {"seconds": elapsed, "cpu": used, "digest": digest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    layers = build_layers()
    wanted = wanted_paths()
    print(f"{len(wanted)} overlaid vllm files looked up in one layer of the whole vllm 0.32.0 "
          f"wheel; median of {args.runs} runs")
    print(f"{'layer':6} {'MB':>5}  {'tool':28} {'CPU s':>6} {'wall s':>7} {'MB/CPU s':>9} "
          f"{'vs tar':>7} {'peak RSS':>9}")
    for kind, path in layers.items():
        size = path.stat().st_size / 1e6
        digest = file_digest(path)
        ours = [run_patchforge(path, kind, digest, wanted) for _ in range(args.runs)]
        peer = [run_tar(path, kind, wanted) for _ in range(args.runs)]
        assert all(h for h in ours[0]["hashes"].values()), ours[0]  # every file found
        cpu_ours = statistics.median(r["cpu"] for r in ours)
        cpu_tar = statistics.median(r["cpu"] for r in peer)
        wall_ours = statistics.median(r["seconds"] for r in ours)
        wall_tar = statistics.median(r["seconds"] for r in peer)
        rss = max(r["maxrss_kb"] for r in ours) / 1024
        print(f"{kind:6} {size:5.0f}  {'patchforge (layers.py)':28} {cpu_ours:6.2f} "
              f"{wall_ours:7.2f} {size / cpu_ours:9.0f} {cpu_ours / cpu_tar:6.2f}x {rss:6.0f} MB")
        print(f"{'':6} {'':5}  {'tar -xf -O | sha256 (GNU)':28} {cpu_tar:6.2f} {wall_tar:7.2f} "
              f"{size / cpu_tar:9.0f} {1:6.2f}x")


if __name__ == "__main__":
    main()
