"""patchforge: carry local fixes against pinned upstreams as a quilt-like patch series."""

__version__ = "0.1.0"

# New objects the cycle collector waits for in a patchforge process (cli.fewer_collections):
# here so that the program's start (__main__.console_main) sets it before its first import.
COLLECT_AFTER = 200_000
