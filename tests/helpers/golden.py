"""Golden files (tests/golden/) for the outputs people read: the status table, the rebase summary
with its range-diff, the ledger, the bump report. Compared byte for byte; after an intended change
of an output, regenerate with `PATCHFORGE_UPDATE_GOLDEN=1 python3 -m pytest ...` and review the
diff."""
from __future__ import annotations

import os
from pathlib import Path

GOLDEN = Path(__file__).resolve().parents[1] / "golden"


def check_golden(name: str, text: str) -> None:
    """`text` must be golden file `name` (or becomes it, with PATCHFORGE_UPDATE_GOLDEN=1)."""
    path = GOLDEN / name
    if os.environ.get("PATCHFORGE_UPDATE_GOLDEN"):
        path.write_text(text)
    assert path.exists(), f"{path} is missing: run with PATCHFORGE_UPDATE_GOLDEN=1 to make it"
    assert text == path.read_text(), f"{name} changed (PATCHFORGE_UPDATE_GOLDEN=1 to accept)"
