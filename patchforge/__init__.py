"""patchforge: carry local fixes against pinned upstreams as a quilt-like patch series."""

__version__ = "0.1.0"
