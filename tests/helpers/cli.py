"""The one way tests run the command line: in this process through `patchforge.cli.main` (the
one place that maps errors to exit codes), or in a new interpreter where a test needs a process
of its own (kills, injected faults, concurrency, the console script's exit)."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path



@dataclass
class CliResult:
    rc: int
    stdout: bytes
    err: str

    @property
    def out(self) -> str:
        return self.stdout.decode("utf-8", "replace")

    @property
    def text(self) -> str:
        return self.out + self.err


def run_cli(root: Path | None, *args: str, cwd: Path | None = None) -> CliResult:
    """`patchforge [--root ROOT] ARGS` in this process, from `cwd` if given: exit code, stdout
    (bytes, as a pipe would get them) and stderr."""
    from patchforge.cli import main

    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    previous = Path.cwd()
    if cwd is not None:
        os.chdir(cwd)
    # Text streams over bytes, as the console script gets for a pipe in a UTF-8 locale.
    out, err = _stream(), _stream()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                main(argv)
                rc = 0
            except SystemExit as exc:
                rc = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        os.chdir(previous)
    out.flush()
    err.flush()
    return CliResult(rc, out.buffer.getvalue(), err.buffer.getvalue().decode("utf-8", "replace"))


def _stream() -> io.TextIOWrapper:
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape",
                            write_through=True)


def ok(root: Path | None, *args: str, cwd: Path | None = None) -> CliResult:
    """run_cli that must succeed."""
    result = run_cli(root, *args, cwd=cwd)
    assert result.rc == 0, \
        f"patchforge {' '.join(map(str, args))} -> {result.rc}\n{result.err}\n{result.out}"
    return result


def run_subprocess(root: Path | None, *args: str, env: dict[str, str] | None = None,
                   cwd: Path | None = None, timeout: float = 300,
                   expect: int | None = None) -> subprocess.CompletedProcess:
    """`python -m patchforge [--root ROOT] ARGS` in a new process (output as bytes); with
    `expect`, the exit code must be that."""
    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    proc = subprocess.run([sys.executable, "-m", "patchforge", *argv], capture_output=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, timeout=timeout)
    if expect is not None:
        assert proc.returncode == expect, \
            (argv, proc.returncode, proc.stdout.decode(errors="replace"),
             proc.stderr.decode(errors="replace"))
    return proc


def run_faulted_copy(pristine: Path, root: Path, *args: str, fault: str,
                     mode: str | None = None) -> subprocess.CompletedProcess:
    """`args` run in a new process on `root`, a fresh copy of `pristine`, with the fault point
    `fault` (PATCHFORGE_FAULT, e.g. "write:3") set off in `mode` (PATCHFORGE_FAULT_MODE:
    None kills the process, "interrupt" and "raise" as patchforge/fsutil.py says)."""
    import shutil

    shutil.copytree(pristine, root, symlinks=True)
    env = {"PATCHFORGE_FAULT": fault}
    if mode is not None:
        env["PATCHFORGE_FAULT_MODE"] = mode
    return run_subprocess(root, *args, env=env)


def run_on_pty(cmd, cwd, env) -> tuple[int, bytes]:
    """Run `cmd` with stdout and stderr on a pseudo-terminal; return (exit code, output)."""
    import pty

    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=slave,
                                stderr=slave, close_fds=True)
        os.close(slave)
        chunks = []
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not data:
                break
            chunks.append(data)
        return proc.wait(timeout=120), b"".join(chunks)
    finally:
        os.close(master)


def run_with_read_only(directory: Path, root: Path | None, *args: str,
                       env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """`python -m patchforge [--root ROOT] ARGS` in a new process that cannot write
    `directory`: a read-only bind mount in a mount namespace of its own for root (whom file
    modes do not stop), the directory's write bits taken away (and given back) for anyone
    else. Skips the test where neither can be had."""
    import pytest

    argv = (["--root", str(root)] if root is not None else []) + [str(a) for a in args]
    command = [sys.executable, "-m", "patchforge", *argv]
    full_env = {**os.environ, **(env or {})}
    if os.geteuid() != 0:
        modes = {p: p.stat().st_mode for p in [directory, *directory.rglob("*")]
                 if not p.is_symlink()}
        for path, mode in modes.items():
            path.chmod(mode & ~0o222)
        try:
            return subprocess.run(command, capture_output=True, env=full_env, timeout=300)
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
    probe = subprocess.run(["unshare", "-m", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no mount namespace to make a read-only directory in (unshare -m)")
    script = 'mount --bind "$1" "$1" && mount -o remount,ro,bind "$1" && shift && exec "$@"'
    return subprocess.run(["unshare", "-m", "sh", "-c", script, "sh", str(directory), *command],
                          capture_output=True, env=full_env, timeout=300)
