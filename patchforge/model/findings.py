"""A finding of `lint` (and of the ledger's own checks): which patch or file, which check, what."""
from __future__ import annotations

from patchforge.model.record import record


@record(frozen=True)
class Finding:
    patch: str  # "upstream/name", or a project file relative to the root
    check: str  # header | series | parse | byte-stable | apply | fuzz | zero-context
    #             | keeps | forwarded | drop-when | ledger | overlays | skipped
    #             | attributes | line-ends
    message: str
    severity: str = "error"  # error | warning

    def to_json(self) -> dict:
        return {"patch": self.patch, "check": self.check, "message": self.message,
                "severity": self.severity}
