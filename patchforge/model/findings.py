"""A finding of `lint` (and of the ledger's own checks): which patch or file, which check, what;
and the sentence said of a patch without a diff, which lint and `status` share."""
from __future__ import annotations

from patchforge.model.record import record


@record(frozen=True)
class Finding:
    patch: str  # "upstream/name", or a project file relative to the root
    check: str  # header | series | parse | byte-stable | apply | fuzz | zero-context
    #             | keeps | forwarded | drop-when | ledger | overlays | skipped
    #             | attributes | ignore | line-ends | empty | config
    message: str
    severity: str = "error"  # error | warning

    def to_json(self) -> dict:
        return {"patch": self.patch, "check": self.check, "message": self.message,
                "severity": self.severity}


def no_diff_said(name: str, word: str | None = None) -> str:
    """What lint's `empty` finding and status's `empty` state say of patch `name` (a file
    name) without a diff: `new` made it and nothing was refreshed into it, or a merge kept its
    header and lost its diff. Either way it changes nothing, though it "applies". `word`: the
    name `edit` takes for it (Project.patch_word: UPSTREAM/NAME where another series has the
    name), else its name without `.patch`."""
    word = word or name.removesuffix(".patch")
    return (f"has no change yet (no diff): `patchforge edit {word}`, "
            "make the change, `patchforge refresh`; or `patchforge delete` it")
