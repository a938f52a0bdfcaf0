"""`python nolocks.py PROGRAM ARGS...`: run PROGRAM with every flock(2) refused with ENOLCK,
as a file system without kernel locks refuses it (a network one without its lock service).
A seccomp filter of the kernel's own makes the refusal (x86-64 Linux only); the program and
its children run otherwise unchanged."""
from __future__ import annotations

import ctypes
import errno
import os
import struct
import sys

FLOCK = 73  # the system call's number on x86-64
PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
SECCOMP_RET_ERRNO, SECCOMP_RET_ALLOW = 0x00050000, 0x7FFF0000
BPF_LD_W_ABS, BPF_JEQ_K, BPF_RET_K = 0x20, 0x15, 0x06


def main() -> None:
    program = [(BPF_LD_W_ABS, 0, 0, 0),  # the system call's number
               (BPF_JEQ_K, 0, 1, FLOCK),
               (BPF_RET_K, 0, 0, SECCOMP_RET_ERRNO | errno.ENOLCK),
               (BPF_RET_K, 0, 0, SECCOMP_RET_ALLOW)]
    filters = ctypes.create_string_buffer(b"".join(struct.pack("HBBI", *op) for op in program))
    fprog = ctypes.create_string_buffer(struct.pack("HxxxxxxQ", len(program),
                                                    ctypes.addressof(filters)))
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) or \
            libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0):
        sys.exit(f"nolocks: seccomp refused: {os.strerror(ctypes.get_errno())}")
    os.execv(sys.argv[1], sys.argv[1:])


if __name__ == "__main__":
    main()
