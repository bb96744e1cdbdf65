"""save / load / dumps / loads / info: the public functions of :mod:`jax_fhe.io`."""
from __future__ import annotations

import os

from .. import ckks
from ..pir import ring
from . import codec, container
from .container import FLAG_SECRET, FLAG_SEEDED, FormatError

_NO_PARAMS = bytes(32)


def fingerprint(params) -> str:
    """The hex SHA-256 fingerprint of a parameter set (what a file's header carries): a hash of
    its canonical description, every field included (primes, levels, N, alpha, special primes,
    scale, secret distribution, noise, key-switching method, name). Equal sets have equal
    fingerprints."""
    return codec.fingerprint(params).hex()


def _chunks(obj, allow_secret: bool, what: str) -> tuple:
    enc = codec.Encoder()
    tree = enc.encode(obj)
    if enc.secrets and not allow_secret:
        raise ValueError(f"{what}: the object holds secret key material ({', '.join(enc.secrets[:3])}"
                         f"{', ...' if len(enc.secrets) > 3 else ''}); secret keys are written only on "
                         "request: jax_fhe.io.save_secret_key(obj, file), or allow_secret=True")
    kind = codec.kind_of(obj)
    name = kind.name if kind is not None else type(obj).__name__
    primary = getattr(obj, "params", None) if kind is not None and kind.role == "object" else None
    if primary is None or codec.kind_of(primary) is None or codec.kind_of(primary).role != "params":
        primary = obj if kind is not None and kind.role == "params" else (enc.params[0] if enc.params else None)
    fp = codec.fingerprint(primary) if primary is not None else _NO_PARAMS
    meta = {"tree": tree, "arrays": enc.arrays,
            "params": None if primary is None else {"kind": codec.kind_of(primary).name,
                                                    "name": getattr(primary, "name", None)},
            "writer": _writer()}
    flags = (FLAG_SECRET if enc.secrets else 0) | (FLAG_SEEDED if enc.seeded else 0)
    return container.pack(name, flags, fp, meta, enc.buffers), bool(enc.secrets)


def _writer() -> str:
    from .. import __version__

    return f"jax_fhe {__version__}"


def dumps(obj, *, allow_secret: bool = False) -> bytes:
    """``obj`` as bytes (the file format of :func:`save`). Raises ValueError for objects that
    hold secret keys unless ``allow_secret=True``, TypeError for objects that are not
    serializable."""
    chunks, _ = _chunks(obj, allow_secret, "dumps")
    return b"".join(chunks)


def save(obj, file, *, allow_secret: bool = False) -> int:
    """Write ``obj`` to ``file`` (a path, or a binary file object opened for writing); returns
    the number of bytes written.

    Serializable: parameter sets, contexts (stored as their parameter set; :func:`load`
    rebuilds them), ciphertexts and plaintexts (any batch shape), public, evaluation, rotation
    and bootstrapping keys, PIR keys, queries and answers (the kinds of :data:`KINDS`), and
    tuples, lists and dicts of them. Objects holding secret keys (``ckks.SecretKey``,
    ``ckks.KeySet``, the PIR ring key and query secrets, LWE secrets) raise ValueError unless
    ``allow_secret=True`` (or use :func:`save_secret_key`); such files are created with mode
    0600. A path is written through a temporary file and renamed, so a crash leaves no
    truncated file behind."""
    chunks, secret = _chunks(obj, allow_secret, "save")
    if hasattr(file, "write"):
        for c in chunks:
            file.write(c)
        return sum(memoryview(c).nbytes for c in chunks)
    path = os.fspath(file)
    tmp = f"{path}.tmp-{os.getpid()}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600 if secret else 0o666)
    try:
        with os.fdopen(fd, "wb") as f:
            for c in chunks:
                f.write(c)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
    return sum(memoryview(c).nbytes for c in chunks)


def save_secret_key(obj, file) -> int:
    """:func:`save` for objects that hold secret keys (a ``ckks.SecretKey``, a ``ckks.KeySet``,
    PIR ``ClientKeys``/``RingKey``/``QuerySecret``, an ``lwe.LWESecretKey``): the explicit call
    that writes them. The file gets mode 0600; protect it like the key itself."""
    return save(obj, file, allow_secret=True)


def _read(src) -> bytes:
    if isinstance(src, (bytes, bytearray, memoryview)):
        return src
    if hasattr(src, "read"):
        return src.read()
    with open(os.fspath(src), "rb") as f:
        return f.read()


def _expected(expected):
    """(parameter set, context to reuse) from ``load``'s ``expected`` argument."""
    if expected is None:
        return None, None
    if isinstance(expected, (ckks.CKKSContext, ring.RingTables)):
        return expected.params, expected
    kind = codec.kind_of(expected)
    if kind is None or kind.role != "params":
        raise TypeError(f"load: expected must be a parameter set or a context (CKKSContext, RingTables), "
                        f"got {type(expected).__name__}")
    return expected, None


def loads(data, expected=None, *, device=None):
    """The object :func:`dumps` wrote, from bytes. See :func:`load`."""
    params, context = _expected(expected)
    version, flags, fp, kind, meta, payload = container.unpack(data)
    stored = meta.get("params") or {}
    if not isinstance(meta.get("arrays"), list) or "tree" not in meta:
        raise FormatError("malformed description: no tree or array table")
    if params is not None:
        want = codec.fingerprint(params)
        # the file's own parameter set, or one it is built on (a PIR protocol's ring parameters)
        if fp != want and want not in codec.param_fingerprints(meta["tree"]):
            label = stored.get("name") or stored.get("kind")
            what = (f"parameter set {label!r} ({stored.get('kind')}, fingerprint {fp.hex()[:16]}...)"
                    if fp != _NO_PARAMS else "no parameter set")
            name = getattr(params, "name", None) or type(params).__name__
            raise ValueError(f"load: the file holds a {kind} for {what}, not for the expected {name!r} "
                             f"(fingerprint {want.hex()[:16]}...)")
    env = codec.Env(payload=payload, arrays=meta["arrays"], expected=params, context=context)
    try:
        obj = codec.Decoder(env).decode(meta["tree"])
        codec.check(obj)
    except FormatError:
        raise
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError) as err:
        # a description the checksum vouches for but this reader cannot make sense of
        raise FormatError(f"malformed description ({type(err).__name__}: {err})") from None
    return codec.to_device(obj, device)


def load(file, expected=None, *, device=None):
    """Read an object written by :func:`save` (``file``: a path or a binary file object).

    expected: the parameter set the object must have been saved with (or a ``CKKSContext`` /
              PIR ``RingTables``, whose parameters are compared and which is reused instead of
              rebuilding contexts held in the file). A different parameter set raises ValueError
              naming both; where equal, the loaded objects hold the caller's own object.
    device:   where the arrays go (a ``jax.Device``; None: JAX's default device).

    Raises :class:`FormatError` (a ValueError) for a file that is not a jax_fhe file, truncated,
    corrupted (checksum), written by a newer format version, or malformed; host data is
    checked on the way (shapes, canonical residues) before it reaches a device. Contexts are
    rebuilt from their parameter set (a second or so at N = 2^16; the bootstrapper longer).
    Seed-compressed arrays are redrawn from their seed (and keep the record, so that saving
    the object again stays compressed)."""
    return loads(_read(file), expected, device=device)


def info(src) -> dict:
    """The header of a file (a path, a binary file object or bytes) after checking its envelope:
    {"version", "kind", "fingerprint" (hex, None without a parameter set), "params" (name),
    "secret", "seeded", "size", "writer"}."""
    data = _read(src)
    version, flags, fp, kind, meta, _ = container.unpack(data)
    stored = meta.get("params") or {}
    return {"version": version, "kind": kind, "fingerprint": None if fp == _NO_PARAMS else fp.hex(),
            "params": stored.get("name"), "secret": bool(flags & FLAG_SECRET), "seeded": bool(flags & FLAG_SEEDED),
            "size": memoryview(data).nbytes, "writer": meta.get("writer")}
