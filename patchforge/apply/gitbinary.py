"""git's binary patches (`GIT binary patch`), read byte-exactly and applied by blob id.

Owns the encoding git writes after `GIT binary patch` (diff.c, emit_binary_diff_body) and reads
back in `git apply` (apply.c, parse_binary_hunk; base85.c; patch-delta.c):

    literal <size>      or   delta <size>       (size: the data once inflated)
    <len char><base85>  ...  one line per up to 52 bytes of zlib-deflated data ('A'..'Z' = 1..26,
                             'a'..'z' = 27..52 bytes; 5 base85 characters per 4 bytes)
    <empty line>

A forward block turns the pre-image into the post-image; the optional second (reverse) block
turns the post-image back. A `literal` block is the whole file; a `delta` block is git's delta
format: the source size and result size as 7-bit varints, then copy opcodes (bit 7 set: offset
and size bytes follow, flagged by bits 0-3 and 4-6; size 0 means 0x10000) and insert opcodes
(1..127 literal bytes follow); opcode 0 is reserved and refused.

Everything that can be checked without the pre-image is checked when the patch is read (line
lengths, the alphabet, the declared sizes against what inflates, every delta copy inside the
source it declares), so a hostile block is refused with its line before anything is written;
what needs the pre-image (its blob id) is checked when it is applied. The declared size of any
block is bounded (`MAX_BINARY_SIZE`), and inflation never produces more than was declared.
"""
from __future__ import annotations

import base64
import operator
import re
import zlib

from patchforge.model.record import record

# One binary file carried by a patch may not exceed this, before or after applying: a compiled
# kernel or a tuned-config table is a few MB, and the bound keeps a lying header or a deflate
# bomb from exhausting memory.
MAX_BINARY_SIZE = 128 << 20
NULL_OID = "0" * 40

_METHOD_RE = re.compile(rb"^(literal|delta) (0|[1-9][0-9]{0,11})\n$")
_OID_RE = re.compile(rb"^([0-9a-f]{40}|[0-9a-f]{64})\.\.([0-9a-f]{40}|[0-9a-f]{64})(?: [0-7]{6})?\r?\n?$")
_SHORT_INDEX_RE = re.compile(rb"^[0-9a-f]+\.\.[0-9a-f]+(?: [0-7]{6})?\r?\n?$")


class BinaryFormatError(ValueError):
    """A malformed or hostile binary block; `index` is the 0-based line (of the lines given to
    the parser) that is wrong."""

    def __init__(self, message: str, index: int) -> None:
        super().__init__(message)
        self.index = index


@record(frozen=True)
class BinaryBlock:
    """One `literal`/`delta` block, inflated. For a delta, `source_size`/`result_size` are the
    sizes its header declares (checked against the data when it is read)."""

    method: str  # literal | delta
    data: bytes  # the inflated bytes: the whole file (literal) or the delta instructions
    line_no: int  # 1-based line of the `literal`/`delta` line in its file
    source_size: int = 0
    result_size: int = 0

    def apply(self, source: bytes) -> bytes:
        """The file this block makes from `source` (ignored by a literal)."""
        if self.method == "literal":
            return self.data
        return patch_delta(source, self.data)


@record(frozen=True)
class BinaryPatch:
    """A file's `GIT binary patch`: the blob ids of its `index` line (full, as git apply
    requires) and its forward and (optional) reverse blocks."""

    old_oid: str  # NULL_OID for a creation
    new_oid: str  # NULL_OID for a deletion
    forward: BinaryBlock
    reverse: BinaryBlock | None
    index_line: int = 0  # 1-based line of the `index` line in its file


def encode_block(method: str, data: bytes) -> bytes:
    """A `literal`/`delta` block as git writes it (deflated, 52 bytes a line, base85), with its
    closing empty line. Used only where patchforge renders a binary change itself (a reversed
    patch); diffs of binary content are otherwise written by git."""
    deflated = zlib.compress(data, 9)
    out = [f"{method} {len(data)}\n".encode()]
    for at in range(0, len(deflated), 52):
        chunk = deflated[at:at + 52]
        n = len(chunk)
        out.append(bytes([0x41 + n - 1 if n <= 26 else 0x61 + n - 27])
                   + base64.b85encode(chunk, pad=True) + b"\n")
    out.append(b"\n")
    return b"".join(out)


def render_binary(patch: BinaryPatch) -> bytes:
    """The `index` line and the `GIT binary patch` section of `patch`."""
    out = b"index %s..%s\nGIT binary patch\n" % (patch.old_oid.encode(), patch.new_oid.encode())
    out += encode_block(patch.forward.method, patch.forward.data)
    if patch.reverse is not None:
        out += encode_block(patch.reverse.method, patch.reverse.data)
    return out


def blob_id(data: bytes) -> str:
    """The git blob id (SHA-1) of `data`."""
    import hashlib

    digest = hashlib.sha1(b"blob %d\0" % len(data))
    digest.update(data)  # not concatenated: that copies the content
    return digest.hexdigest()


def apply_binary(old: bytes | None, patch: BinaryPatch) -> tuple[bytes | None, str | None]:
    """(the post-image, None) when `old` is exactly the pre-image the patch records (its blob
    id; None for a creation) and the result is exactly the post-image it records; else (None,
    why). Never anything in between: a binary change applies exactly or not at all."""
    want_old = None if patch.old_oid == NULL_OID else patch.old_oid
    have_old = None if old is None else blob_id(old)
    if have_old != want_old:
        if want_old is None:
            return None, "the file already exists (the binary patch creates it)"
        if have_old is None:
            return None, "the file does not exist"
        return None, (f"the binary patch was made for blob {want_old[:12]}, the file is blob "
                      f"{have_old[:12]}")
    if patch.new_oid == NULL_OID:
        return None, None
    try:
        new = patch.forward.apply(old or b"")
    except BinaryFormatError as exc:
        return None, f"the binary patch does not apply: {exc}"
    got = blob_id(new)
    if got != patch.new_oid:
        return None, (f"the binary patch makes blob {got[:12]}, not the {patch.new_oid[:12]} its "
                      "index line records")
    return new, None


def parse_index_ids(value: bytes) -> tuple[str, str] | None:
    """The two full blob ids of an `index <old>..<new>[ <mode>]` value; None when abbreviated
    (a binary patch cannot be checked against abbreviated ids)."""
    m = _OID_RE.match(value)
    if m:
        return m.group(1).decode(), m.group(2).decode()
    return None


def is_abbreviated_index(value: bytes) -> bool:
    return _SHORT_INDEX_RE.match(value) is not None and parse_index_ids(value) is None


def parse_binary_blocks(lines: list[bytes], i: int, *,
                        first_line: int) -> tuple[BinaryBlock, BinaryBlock | None, int]:
    """Read the forward block (required) and reverse block (optional) starting at lines[i] (the
    line after `GIT binary patch`). Returns (forward, reverse, index of the next line). Raises
    BinaryFormatError naming the offending line. `first_line` is the file line of lines[0]."""
    forward, i = _block(lines, i, first_line)
    if forward is None:
        raise BinaryFormatError("`GIT binary patch` is not followed by a `literal <size>` or "
                                "`delta <size>` line", i)
    reverse = None
    if i < len(lines) and lines[i].startswith((b"literal ", b"delta ")):
        reverse, i = _block(lines, i, first_line)
    return forward, reverse, i


def _block(lines: list[bytes], i: int, first_line: int) -> tuple[BinaryBlock | None, int]:
    if i >= len(lines) or not lines[i].startswith((b"literal ", b"delta ")):
        return None, i
    head = _METHOD_RE.match(lines[i])
    if head is None:
        raise BinaryFormatError("malformed binary block header (expected `literal <size>` or "
                                "`delta <size>`)", i)
    method, size = head.group(1).decode(), int(head.group(2))
    if size > MAX_BINARY_SIZE:
        raise BinaryFormatError(f"binary block declares {size} bytes, more than the "
                                f"{MAX_BINARY_SIZE} patchforge accepts for one file", i)
    start = i
    try:
        end = lines.index(b"\n", i + 1)  # the empty line that closes the block
    except ValueError:
        raise BinaryFormatError("binary block ends without its empty line",
                                len(lines) - 1) from None
    body = lines[i + 1:end]
    deflated = _decode_lines(body, start + 1)
    data = _inflate(deflated, size, start)
    block = BinaryBlock(method, data, first_line + start)
    if method == "delta":
        source_size, result_size = check_delta(data, start)
        block = BinaryBlock(method, data, first_line + start, source_size, result_size)
    return block, end + 1


def _line_count(line: bytes, index: int) -> int:
    """How many bytes a data line holds, after git's checks of its length and first character."""
    n = len(line)
    # As git: at least "A00000\n", and a whole number of 5-character groups.
    if not line.endswith(b"\n") or n < 7 or (n - 2) % 5:
        raise BinaryFormatError("corrupt binary line (bad length)", index)
    c = line[0]
    if 0x41 <= c <= 0x5A:
        count = c - 0x41 + 1
    elif 0x61 <= c <= 0x7A:
        count = c - 0x61 + 27
    else:
        raise BinaryFormatError("corrupt binary line (bad length character)", index)
    most = (n - 2) // 5 * 4
    # The last group may hold up to 3 filler bytes, never more.
    if count > most or count <= most - 4:
        raise BinaryFormatError("corrupt binary line (length character does not match the "
                                "line)", index)
    return count


_FULL_LINE = 67  # "z" + 13 groups of 5 + "\n": 52 bytes, as git writes every line but the last


def _decode_lines(body: list[bytes], first: int) -> bytes:
    """The bytes the data lines hold (`first`: the index of the first one). git writes full
    52-byte lines but the last; those are checked and decoded in bulk, anything else line by
    line (the per-line loop costs ten times more on a large literal)."""
    if not body:
        return b""
    head = body[:-1]
    if set(map(len, head)) <= {_FULL_LINE} and set(map(_first_byte, head)) <= {0x7A}:
        counts = None
        last = _line_count(body[-1], first + len(body) - 1)
    else:
        counts = [_line_count(line, first + k) for k, line in enumerate(body)]
        last = counts[-1]
    whole = _b85decode(b"".join(map(_strip_line, body)), body, first)
    if counts is None:
        filler = (len(body[-1]) - 2) // 5 * 4 - last
        return whole[:len(whole) - filler]
    out = bytearray()
    at = 0
    for line, count in zip(body, counts):
        out += whole[at:at + count]
        at += (len(line) - 2) // 5 * 4
    return bytes(out)


_first_byte = operator.itemgetter(0)
_strip_line = operator.itemgetter(slice(1, -1))
# git's base85 alphabet (base85.c), which is Python's b85 alphabet.
_ALPHABET = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~"
_DIGITS = bytes.maketrans(_ALPHABET, bytes(range(85)))


def _b85decode(text: bytes, body: list[bytes], first: int) -> bytes:
    """Decode groups of five base85 characters (most significant first) into 4 bytes each, the
    way base85.c does, with every step a C-level operation on the whole block: the groups' k-th
    digits become one big integer with a 40-bit slot per group, and Horner's rule over the five
    of them makes each slot's value (below 85^5 < 2^40: no slot overflows into the next). A
    character outside the alphabet or a group above 2^32 - 1 is named by its line."""
    if text.translate(None, _ALPHABET):
        for k, line in enumerate(body):
            bad = line[1:-1].translate(None, _ALPHABET)
            if bad:
                raise BinaryFormatError(f"corrupt binary line (base85: {chr(bad[0])!r} is not "
                                        "in the alphabet)", first + k)
    groups = len(text) // 5
    digits = text.translate(_DIGITS)
    slots = bytearray(5 * groups)
    total = 0
    for place in range(5):
        slots[4::5] = digits[place::5]
        total = total * 85 + int.from_bytes(slots, "big")
    wide = total.to_bytes(5 * groups, "big")
    if wide[0::5].strip(b"\0"):
        group = next(k for k, top in enumerate(wide[0::5]) if top)
        for k, line in enumerate(body):
            group -= (len(line) - 2) // 5
            if group < 0:
                raise BinaryFormatError("corrupt binary line (base85 group larger than 32 "
                                        "bits)", first + k)
    out = bytearray(4 * groups)
    for byte in range(4):
        out[byte::4] = wide[byte + 1::5]
    return bytes(out)


def _inflate(deflated: bytes, size: int, header: int) -> bytes:
    d = zlib.decompressobj()
    try:
        # Never more than declared (+1 to see a lie): a deflate bomb stops here.
        data = d.decompress(deflated, size + 1)
    except zlib.error as exc:
        raise BinaryFormatError(f"binary block does not inflate ({exc})", header) from None
    if len(data) > size or (len(data) == size and d.unconsumed_tail):
        raise BinaryFormatError(f"binary block inflates to more than the {size} bytes it "
                                "declares", header)
    if not d.eof:
        raise BinaryFormatError(f"binary block inflates to {len(data)} bytes, not the {size} "
                                "it declares (or its data is cut short)", header)
    if len(data) != size:
        raise BinaryFormatError(f"binary block inflates to {len(data)} bytes, not the {size} "
                                "it declares", header)
    if d.unused_data:
        raise BinaryFormatError("binary block has data after its deflate stream", header)
    return data


def _varint(delta: bytes, at: int, header: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(delta):
            raise BinaryFormatError("delta header cut short", header)
        byte = delta[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, at
        if shift > 63:
            raise BinaryFormatError("delta header size too large", header)


def check_delta(delta: bytes, header: int = 0) -> tuple[int, int]:
    """(source size, result size) of a git delta, after checking every opcode: copies inside
    the declared source, inserts inside the data, the result exactly its declared size."""
    source_size, at = _varint(delta, 0, header)
    result_size, at = _varint(delta, at, header)
    if source_size > MAX_BINARY_SIZE or result_size > MAX_BINARY_SIZE:
        raise BinaryFormatError("delta declares a file larger than patchforge accepts", header)
    produced = 0
    n = len(delta)
    while at < n:
        cmd = delta[at]
        at += 1
        if cmd & 0x80:
            offset, size, at = _copy_args(delta, cmd, at, header)
            if offset + size > source_size:
                raise BinaryFormatError(f"delta copies bytes {offset}..{offset + size} from a "
                                        f"source of {source_size} bytes", header)
            produced += size
        elif cmd:
            if at + cmd > n:
                raise BinaryFormatError("delta insert runs past the end of the delta", header)
            at += cmd
            produced += cmd
        else:
            raise BinaryFormatError("delta opcode 0 (reserved)", header)
        if produced > result_size:
            raise BinaryFormatError(f"delta makes more than the {result_size} bytes it "
                                    "declares", header)
    if produced != result_size:
        raise BinaryFormatError(f"delta makes {produced} bytes, not the {result_size} it "
                                "declares", header)
    return source_size, result_size


def _copy_args(delta: bytes, cmd: int, at: int, header: int) -> tuple[int, int, int]:
    offset = size = 0
    for bit, shift in ((0x01, 0), (0x02, 8), (0x04, 16), (0x08, 24)):
        if cmd & bit:
            if at >= len(delta):
                raise BinaryFormatError("delta copy opcode cut short", header)
            offset |= delta[at] << shift
            at += 1
    for bit, shift in ((0x10, 0), (0x20, 8), (0x40, 16)):
        if cmd & bit:
            if at >= len(delta):
                raise BinaryFormatError("delta copy opcode cut short", header)
            size |= delta[at] << shift
            at += 1
    return offset, size or 0x10000, at


def patch_delta(source: bytes, delta: bytes) -> bytes:
    """git's patch_delta: the result of `delta` (already checked by check_delta) on `source`.
    Raises BinaryFormatError (index 0) when `source` is not the size the delta was made for."""
    source_size, at = _varint(delta, 0, 0)
    result_size, at = _varint(delta, at, 0)
    if len(source) != source_size:
        raise BinaryFormatError(f"the delta was made for a {source_size}-byte file, not "
                                f"{len(source)} bytes", 0)
    out = bytearray()
    view = memoryview(source)
    n = len(delta)
    while at < n:
        cmd = delta[at]
        at += 1
        if cmd & 0x80:
            offset, size, at = _copy_args(delta, cmd, at, 0)
            if offset + size > source_size:
                raise BinaryFormatError("delta copies outside its source", 0)
            out += view[offset:offset + size]
        elif cmd:
            out += delta[at:at + cmd]
            at += cmd
        else:
            raise BinaryFormatError("delta opcode 0 (reserved)", 0)
    if len(out) != result_size:
        raise BinaryFormatError("delta result has the wrong size", 0)
    return bytes(out)
