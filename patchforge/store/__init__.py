"""patchforge.store: the upstream object store (gitstore) and the upstream kinds (sources).

Importing this package is cheap: GitPython and other heavy modules are only loaded when used.
"""
from patchforge.store.gitstore import (FileChange, ImportResult, MergeResult, UpstreamStore,
                                       cache_dir, make_diff, make_file_diff, wheels_dir)

__all__ = ["FileChange", "ImportResult", "MergeResult", "UpstreamStore", "cache_dir",
           "make_diff", "make_file_diff", "wheels_dir"]
