"""The binary envelope of a jax_fhe file: header, JSON description, array payload, checksum.

Layout of format version 1 (integers little-endian)::

    offset  size  field
    0       6     magic b"JAXFHE"
    6       2     format version (uint16)
    8       8     total length of the file in bytes, checksum included (uint64)
    16      2     flags (uint16): bit 0 secret key material, bit 1 seed-compressed arrays
    18      32    parameter fingerprint (SHA-256, :func:`jax_fhe.io.fingerprint`; zeros: none)
    50      2     kind length k (uint16)
    52      k     kind (ASCII: "ckks.Ciphertext", "ckks.EvalKeys", ...)
    52+k    4     description length m (uint32)
    56+k    m     description (UTF-8 JSON: the object's structure, static fields, parameter sets,
                  and for every array its dtype, shape and place in the payload)
    56+k+m  ...   payload: the arrays' bytes (little-endian, C order), each starting at a multiple
                  of 64 bytes (zero padding between them; the description ends in spaces so
                  that the payload starts at one too)
    end-32  32    SHA-256 of every byte before it

The magic, the version, the total length and the trailing SHA-256 stay where they are in every
later version, so that any reader can tell a truncated or corrupted file from a newer one.
"""
from __future__ import annotations

import hashlib
import json
import struct

MAGIC = b"JAXFHE"
#: The format version this module writes; it reads versions 1 .. FORMAT_VERSION.
FORMAT_VERSION = 1
FLAG_SECRET = 1
FLAG_SEEDED = 2

_PREFIX = struct.Struct("<6sHQ")       # magic, version, total length
_V1 = struct.Struct("<H32sH")          # flags, fingerprint, kind length
_U32 = struct.Struct("<I")
_DIGEST = 32


class FormatError(ValueError):
    """A file or byte string that is not a valid jax_fhe serialization: wrong magic,
    truncated, corrupted (checksum), written by a newer format version, or malformed."""


def pack(kind: str, flags: int, fingerprint: bytes, meta: dict, payload: list) -> list:
    """The file as a list of byte chunks (header, then ``payload``'s buffers, then the
    checksum), hashing the payload once and copying nothing."""
    kind_b = kind.encode("ascii")
    meta_b = json.dumps(meta, separators=(",", ":"), sort_keys=True, allow_nan=False).encode("utf-8")
    if len(fingerprint) != _DIGEST:
        raise ValueError("fingerprint must be 32 bytes")
    # trailing spaces (still JSON) put the payload on a 64-byte boundary of the file
    fixed = _PREFIX.size + _V1.size + len(kind_b) + _U32.size
    meta_b += b" " * (-(fixed + len(meta_b)) % 64)
    body = _V1.pack(flags, fingerprint, len(kind_b)) + kind_b + _U32.pack(len(meta_b)) + meta_b
    size = _PREFIX.size + len(body) + sum(memoryview(p).nbytes for p in payload) + _DIGEST
    head = _PREFIX.pack(MAGIC, FORMAT_VERSION, size) + body
    digest = hashlib.sha256(head)
    for p in payload:
        digest.update(p)
    return [head, *payload, digest.digest()]


def unpack(data) -> tuple:
    """Check and split a file: (version, flags, fingerprint, kind, meta, payload memoryview).

    Raises :class:`FormatError` for a wrong magic, a length that differs from the header's
    (truncated), a checksum mismatch (corrupted), a newer format version, or a malformed
    header or description."""
    view = memoryview(data).cast("B")
    size = view.nbytes
    if size < len(MAGIC) or bytes(view[:len(MAGIC)]) != MAGIC:
        start = bytes(view[:len(MAGIC)])
        if size < len(MAGIC) and MAGIC.startswith(start):
            raise FormatError(f"truncated: {size} bytes, shorter than the header (a jax_fhe file starts "
                              f"with {MAGIC!r})")
        raise FormatError(f"not a jax_fhe file: it starts with {start!r}, not the magic {MAGIC!r}")
    if size < _PREFIX.size + _DIGEST:
        raise FormatError(f"truncated: {size} bytes, shorter than the header")
    _, version, total = _PREFIX.unpack_from(view)
    if size != total:
        what = "truncated" if size < total else "corrupted (extra bytes)"
        raise FormatError(f"{what}: the header announces {total} bytes, the data holds {size}")
    if hashlib.sha256(view[:-_DIGEST]).digest() != bytes(view[-_DIGEST:]):
        newer = (f"; its header says format version {version}, which this jax_fhe does not know"
                 if version > FORMAT_VERSION else "")
        raise FormatError(f"checksum mismatch: the {size} bytes are corrupted (their SHA-256 differs "
                          f"from the stored one){newer}")
    if version > FORMAT_VERSION:
        raise FormatError(f"written in format version {version} by a newer jax_fhe; this one reads "
                          f"versions 1..{FORMAT_VERSION}: upgrade jax_fhe to load it")
    if version < 1:
        raise FormatError(f"unknown format version {version}")
    try:
        pos = _PREFIX.size
        flags, fingerprint, klen = _V1.unpack_from(view, pos)
        pos += _V1.size
        kind = bytes(view[pos:pos + klen]).decode("ascii")
        pos += klen
        (mlen,) = _U32.unpack_from(view, pos)
        pos += _U32.size
        if pos + mlen > size - _DIGEST:
            raise ValueError("description runs past the end")
        meta = json.loads(bytes(view[pos:pos + mlen]).decode("utf-8"))
        pos += mlen
    except (struct.error, UnicodeDecodeError, ValueError) as err:
        raise FormatError(f"malformed header or description: {err}") from None
    if not isinstance(meta, dict):
        raise FormatError("malformed description: not a JSON object")
    return version, flags, bytes(fingerprint), kind, meta, view[pos:size - _DIGEST]
