"""Objects <-> (JSON description, arrays): the registry of serializable kinds and the walk.

Every kind has a stable name (independent of module paths) and a role:

* ``params``: a parameter set (frozen dataclass of numbers, strings and tuples), stored as its
  fields; the first one met (or the object's own ``params`` field) is the file's parameter set,
  whose :func:`fingerprint` the header carries.
* ``data``: other frozen dataclasses of plain values (bootstrapping and EvalMod configurations).
* ``object``: a pytree dataclass (ciphertexts, plaintexts, keys, queries, ...), stored field by
  field; array fields go to the payload. ``secret`` kinds hold secret key material.
* ``context``: derived tables (CKKS context, RNS context, PIR ring tables, the bootstrapper),
  stored as what rebuilds them (their parameter set and configuration) and rebuilt on load.

A JSON node is a plain value (null, bool, int, float, str) or one of {"$tuple": [...]},
{"$list": [...]}, {"$dict": [[key, value], ...]}, {"$float": "inf"}, {"$bytes": hex},
{"$array": index}, {"$params" | "$data" | "$obj": name, "fields": {...}},
{"$context": name, "args": {...}}. Arrays are described in ``meta["arrays"]``: dtype, shape,
offset and byte count in the payload, and for seed-compressed arrays the
:class:`jax_fhe.rns.SeededUniform` record (the stored bytes then omit the uniform half).
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Callable

import jax
import numpy as np

from .. import ckks, circuits, lwe, rlwe, rns
from ..pir import exppack, protocols, ring, simplepir
from ..rns.sampling import SeededUniform, record_uniform_seed, uniform_seed_of
from .container import FormatError

#: Arrays start at multiples of this many bytes (the payload itself too, see the container), so
#: that loading can view them in place.
ALIGN = 64
#: dtypes an array may have in a file (little-endian).
DTYPES = ("|b1", "|u1", "|i1", "<u4", "<i4", "<u8", "<i8", "<f8", "<c16")


@dataclasses.dataclass(frozen=True)
class Kind:
    """One serializable type: ``name`` (stable), ``cls``, ``role`` (params / data / object /
    context), ``secret`` (holds secret key material), ``check`` (object kinds: raise on bad
    host data after loading), ``describe`` / ``rebuild`` (context kinds: what to store, and
    how to rebuild from it)."""

    name: str
    cls: type
    role: str
    secret: bool = False
    check: Callable | None = None
    describe: Callable | None = None
    rebuild: Callable | None = None


# -- checks run on loaded host data ---------------------------------------------------------------

def _canonical(x: np.ndarray, primes, what: str) -> None:
    """Raise FormatError unless x[..., L, N] holds residues below primes[l] on limb l."""
    q = np.asarray([int(p) for p in primes], np.uint64).reshape((-1, 1))
    if x.dtype != np.uint32 or x.ndim < 2 or x.shape[-2] != q.shape[0]:
        raise FormatError(f"{what}: expected uint32[..., {q.shape[0]}, N], got {x.dtype}{list(x.shape)}")
    if x.size and bool((x.astype(np.uint64) >= q).any()):
        raise FormatError(f"{what}: residues are not canonical (a value >= its limb's prime)")


def _shape(x: np.ndarray, want: tuple, what: str) -> None:
    """Raise FormatError unless x's trailing axes are ``want`` (None: any size)."""
    tail = tuple(x.shape[len(x.shape) - len(want):]) if x.ndim >= len(want) else None
    if tail is None or any(w is not None and t != w for t, w in zip(tail, want)):
        raise FormatError(f"{what}: shape {list(x.shape)} does not end in {list(want)}")


def _check_ckks_data(obj, lead, what):
    p = obj.params
    if not isinstance(obj.level, int) or not 0 <= obj.level <= p.max_level:
        raise FormatError(f"{what}: level {obj.level!r} is not a level of {p.name!r}")
    _shape(obj.data, tuple(lead) + (len(p.rows(obj.level)), p.n), what)
    _canonical(obj.data, p.primes(obj.level), what)


def _check_ckks_ct(ct):
    _check_ckks_data(ct, (None,), "ckks.Ciphertext")
    if ct.data.shape[-3] not in (2, 3):
        raise FormatError(f"ckks.Ciphertext: {ct.data.shape[-3]} components (2 or 3 expected)")


def _check_switching_key(key, params, what):
    if isinstance(key, rlwe.GadgetKey):
        return
    if not isinstance(key, rlwe.KeySwitchKey):
        raise FormatError(f"{what}: expected a KeySwitchKey, got {type(key).__name__}")
    if (key.alpha, key.num_q) != (params.alpha, params.num_q):
        raise FormatError(f"{what}: key digits (alpha={key.alpha}, num_q={key.num_q}) do not match {params.name!r}")
    if key.rows is None:
        _shape(key.data, (params.dnum, 2, len(params.all_primes), params.n), what)
        _canonical(key.data, params.all_primes, what)
        return
    # a key restricted to the levels it serves (rlwe.hybrid.restrict_key): its digits and rows
    rows = key.rows
    if not rows or list(rows) != sorted(set(rows)) or rows[-1] >= len(params.all_primes) or rows[0] < 0:
        raise FormatError(f"{what}: restricted key rows {rows!r} are not increasing rows of {params.name!r}")
    if not 1 <= key.data.shape[-4] <= params.dnum:
        raise FormatError(f"{what}: a restricted key holds {key.data.shape[-4]} digits, {params.name!r} has {params.dnum}")
    _shape(key.data, (key.data.shape[-4], 2, len(rows), params.n), what)
    _canonical(key.data, [params.all_primes[r] for r in rows], what)


def _check_eval_keys(evk):
    p = evk.params
    if evk.relin is not None:
        _check_switching_key(evk.relin, p, "ckks.EvalKeys.relin")
    if evk.conjugation is not None:
        _check_switching_key(evk.conjugation, p, "ckks.EvalKeys.conjugation")
    for step, key in evk.rotations.items():
        if not isinstance(step, int) or not 0 < step < p.slots:
            raise FormatError(f"ckks.EvalKeys: rotation step {step!r} is not in (0, N/2)")
        _check_switching_key(key, p, f"ckks.EvalKeys.rotations[{step}]")


def _check_boot_keys(keys):
    p = keys.evk.params
    _check_switching_key(keys.to_sparse, p, "circuits.BootstrapKeys.to_sparse")
    _check_switching_key(keys.to_dense, p, "circuits.BootstrapKeys.to_dense")


def _check_ring_ct(x, params, what):
    _shape(x, (2, params.limbs, params.n), what)
    _canonical(x, params.primes, what)


# -- contexts: what rebuilds them ------------------------------------------------------------------

def _rebuild_ckks_context(args, env):
    params = args["params"]
    base = env.context if isinstance(env.context, ckks.CKKSContext) and env.context.params == params else None
    ctx = base if base is not None else ckks.make_context(params)
    levels = args.get("levels")
    return ctx if levels is None else ctx.for_levels(levels)


def _describe_ckks_context(ctx):
    levels = ctx.levels()
    return {"params": ctx.params, "levels": None if len(levels) == ctx.params.max_level + 1 else list(levels)}


def _rebuild_ring_tables(args, env):
    params = args["params"]
    if isinstance(env.context, ring.RingTables) and env.context.params == params:
        return env.context
    return ring.make_tables(params)


def _describe_bootstrapper(boot):
    return {"params": boot.raise_tables.params, "config": boot.config, "slots": boot.slots,
            "levels": boot.levels, "em_out_scale": boot.em_out_scale, "out_scale": boot.out_scale}


def _rebuild_bootstrapper(args, env):
    ctx = _rebuild_ckks_context({"params": args["params"]}, env)
    boot = circuits.make_bootstrapper(ctx, args["config"])
    got = (boot.slots, tuple(boot.levels), boot.em_out_scale, boot.out_scale)
    want = (args["slots"], tuple(args["levels"]), args["em_out_scale"], args["out_scale"])
    if got != want:
        raise FormatError(f"circuits.Bootstrapper: rebuilt with (slots, levels, scales) = {got}, the file "
                          f"holds {want} (bootstrapping planning changed between jax_fhe versions)")
    return boot


def _kinds() -> list:
    o, c = "object", "context"
    return [
        # parameter sets and plain configurations
        Kind("rlwe.RLWEParams", rlwe.RLWEParams, "params"),
        Kind("ckks.CKKSParams", ckks.CKKSParams, "params"),
        Kind("lwe.LWEParams", lwe.LWEParams, "params"),
        Kind("pir.ring.RingParams", ring.RingParams, "params"),
        Kind("pir.protocols.VIPIRParams", protocols.VIPIRParams, "params"),
        Kind("pir.simplepir.SimplePIRParams", simplepir.SimplePIRParams, "params"),
        Kind("circuits.BootstrapConfig", circuits.BootstrapConfig, "data"),
        Kind("circuits.Mod1Params", circuits.Mod1Params, "data"),
        # contexts: rebuilt from their parameter set
        Kind("rns.RNSContext", rns.RNSContext, c, describe=lambda x: {"primes": x.primes, "n": x.n},
             rebuild=lambda a, env: rns.make_context(a["primes"], a["n"])),
        Kind("ckks.CKKSContext", ckks.CKKSContext, c, describe=_describe_ckks_context,
             rebuild=_rebuild_ckks_context),
        Kind("pir.ring.RingTables", ring.RingTables, c, describe=lambda x: {"params": x.params},
             rebuild=_rebuild_ring_tables),
        Kind("circuits.Bootstrapper", circuits.Bootstrapper, c, describe=_describe_bootstrapper,
             rebuild=_rebuild_bootstrapper),
        # the lattice layer
        Kind("rlwe.Ciphertext", rlwe.Ciphertext, o, check=lambda x: _shape(x.data, (None, None, None), "rlwe.Ciphertext")),
        Kind("rlwe.KeySwitchKey", rlwe.KeySwitchKey, o,
             check=lambda x: _shape(x.data, (-(-x.num_q // x.alpha) if x.rows is None else x.data.shape[-4], 2,
                                             None if x.rows is None else len(x.rows), None), "rlwe.KeySwitchKey")),
        Kind("rlwe.GadgetKey", rlwe.GadgetKey, o, check=lambda x: _shape(x.rows, (None, 2, None, None), "rlwe.GadgetKey")),
        Kind("rlwe.RGSWCiphertext", rlwe.RGSWCiphertext, o),
        # CKKS
        Kind("ckks.Ciphertext", ckks.Ciphertext, o, check=_check_ckks_ct),
        Kind("ckks.Plaintext", ckks.Plaintext, o, check=lambda x: _check_ckks_data(x, (), "ckks.Plaintext")),
        Kind("ckks.SecretKey", ckks.SecretKey, o, secret=True,
             check=lambda x: (_shape(x.s, (len(x.params.all_primes), x.params.n), "ckks.SecretKey"),
                              _canonical(x.s, x.params.all_primes, "ckks.SecretKey"))),
        Kind("ckks.PublicKey", ckks.PublicKey, o,
             check=lambda x: (_shape(x.data, (2, len(x.params.all_primes), x.params.n), "ckks.PublicKey"),
                              _canonical(x.data, x.params.all_primes, "ckks.PublicKey"))),
        Kind("ckks.EvalKeys", ckks.EvalKeys, o, check=_check_eval_keys),
        Kind("ckks.KeySet", ckks.KeySet, o),
        Kind("circuits.BootstrapKeys", circuits.BootstrapKeys, o, check=_check_boot_keys),
        # LWE
        Kind("lwe.LWESecretKey", lwe.LWESecretKey, o, secret=True),
        Kind("lwe.LWECiphertext", lwe.LWECiphertext, o),
        # PIR
        Kind("pir.ring.RingKey", ring.RingKey, o, secret=True,
             check=lambda x: _canonical(x.s_ntt, x.params.primes, "pir.ring.RingKey")),
        Kind("pir.exppack.ExpansionKeys", exppack.ExpansionKeys, o),
        Kind("pir.protocols.ClientKeys", protocols.ClientKeys, o),
        Kind("pir.protocols.PublicKeys", protocols.PublicKeys, o),
        Kind("pir.protocols.Server", protocols.Server, o),
        Kind("pir.protocols.Query", protocols.Query, o,
             check=lambda x: _check_ring_ct(x.ct, x.params.ring, "pir.protocols.Query.ct")),
        Kind("pir.protocols.QuerySecret", protocols.QuerySecret, o, secret=True),
        Kind("pir.protocols.Answer", protocols.Answer, o),
        Kind("pir.simplepir.ServerDB", simplepir.ServerDB, o),
        Kind("pir.simplepir.Hint", simplepir.Hint, o),
        Kind("pir.simplepir.Query", simplepir.Query, o),
        Kind("pir.simplepir.QuerySecret", simplepir.QuerySecret, o, secret=True),
        Kind("pir.simplepir.Answer", simplepir.Answer, o),
    ]


KINDS = {k.name: k for k in _kinds()}
BY_TYPE = {k.cls: k for k in KINDS.values()}


def kind_of(x) -> Kind | None:
    """The registered kind of ``x`` (exact type: a subclass is a kind of its own), or None."""
    return BY_TYPE.get(type(x))


def _fields(x) -> list:
    return [f.name for f in dataclasses.fields(x) if f.init]


# -- encoding -------------------------------------------------------------------------------------

class Encoder:
    """One object's walk: fills ``arrays`` (payload buffers and their descriptions), notes
    secret material (``secrets``: paths), seed-compressed arrays and the parameter sets met."""

    def __init__(self):
        self.buffers: list = []
        self.arrays: list = []
        self.offset = 0
        self.secrets: list = []
        self.params: list = []
        self.seeded = 0

    def encode(self, x, path: str = "", seed: SeededUniform | None = None):
        if x is None or isinstance(x, (bool, str)):
            return x
        if isinstance(x, np.bool_):
            return bool(x)
        if isinstance(x, (int, np.integer)):
            return int(x)
        if isinstance(x, (float, np.floating)):
            x = float(x)
            return x if math.isfinite(x) else {"$float": repr(x)}
        if isinstance(x, complex):
            return {"$complex": [self.encode(x.real), self.encode(x.imag)]}
        if isinstance(x, bytes):
            return {"$bytes": x.hex()}
        if isinstance(x, tuple):
            return {"$tuple": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, list):
            return {"$list": [self.encode(v, f"{path}[{i}]") for i, v in enumerate(x)]}
        if isinstance(x, dict):
            return {"$dict": [[self.encode(k), self.encode(v, f"{path}[{k!r}]")] for k, v in x.items()]}
        if isinstance(x, (jax.Array, np.ndarray)):
            return self._array(x, path, seed)
        kind = kind_of(x)
        if kind is None:
            raise TypeError(f"jax_fhe.io: cannot serialize a {type(x).__module__}.{type(x).__qualname__}"
                            f"{' at ' + path if path else ''}; serializable kinds: {', '.join(sorted(KINDS))}")
        if kind.role == "context":
            return {"$context": kind.name, "args": self.encode(kind.describe(x), path)}
        if kind.secret:
            self.secrets.append(f"{kind.name}{' at ' + path if path else ''}")
        if kind.role == "params" and x not in self.params:
            self.params.append(x)
        names = _fields(x)
        if kind.role == "object" and "params" in names:
            p = getattr(x, "params")
            if kind_of(p) is not None and kind_of(p).role == "params" and p not in self.params:
                self.params.append(p)
        rec = uniform_seed_of(x) if kind.role == "object" else None
        fields = {n: self.encode(getattr(x, n), f"{path}.{n}", rec if rec is not None and rec.field == n else None)
                  for n in names}
        return {f"${kind.role if kind.role != 'object' else 'obj'}": kind.name, "fields": fields}

    def _array(self, x, path, seed):
        arr = np.asarray(x)
        arr = np.ascontiguousarray(arr.astype(arr.dtype.newbyteorder("<"), copy=False))
        desc = {"dtype": arr.dtype.str, "shape": list(arr.shape)}
        if desc["dtype"] not in DTYPES:
            raise TypeError(f"jax_fhe.io: cannot store an array of dtype {arr.dtype} (at {path}); "
                            f"supported: {', '.join(DTYPES)}")
        if seed is not None:
            try:
                pick = [slice(None)] * arr.ndim
                pick[seed.axis] = seed.index
                ok = arr.shape[seed.axis] == 2 and seed.matches(arr[tuple(pick)])   # a view, no copy
            except (IndexError, ValueError):
                ok = False
            if ok:  # store the other half; the seed redraws this one
                arr = np.ascontiguousarray(np.delete(arr, seed.index, axis=seed.axis))
                desc["seeded"] = {"seed": seed.seed.hex(), "moduli": list(seed.moduli), "batch": list(seed.batch),
                                  "n": seed.n, "rows": None if seed.rows is None else list(seed.rows),
                                  "limbs": seed.limbs, "field": seed.field, "axis": seed.axis,
                                  "index": seed.index}
                self.seeded += 1
        buf = memoryview(arr.reshape(-1).view(np.uint8)) if arr.size else memoryview(b"")
        pad = -self.offset % ALIGN  # every array starts on an ALIGN-byte boundary of the payload
        if pad:
            self.buffers.append(bytes(pad))
            self.offset += pad
        desc.update(offset=self.offset, nbytes=buf.nbytes)
        self.offset += buf.nbytes
        self.buffers.append(buf)
        self.arrays.append(desc)
        return {"$array": len(self.arrays) - 1}


def canonical_json(node) -> bytes:
    """The bytes a fingerprint hashes: sorted keys, no spaces."""
    return json.dumps(node, separators=(",", ":"), sort_keys=True, allow_nan=False).encode("utf-8")


def fingerprint(params) -> bytes:
    """SHA-256 of a parameter set's canonical description (every field: primes, levels, N,
    digits, scale, secret distribution, noise, name, ...): equal fingerprints <=> equal sets."""
    kind = kind_of(params)
    if kind is None or kind.role != "params":
        raise TypeError(f"fingerprint: expected a parameter set ({', '.join(n for n, k in KINDS.items() if k.role == 'params')}), "
                        f"got {type(params).__name__}")
    return hashlib.sha256(canonical_json(Encoder().encode(params))).digest()


def param_fingerprints(node) -> set:
    """Fingerprints of every parameter set in a JSON description (without decoding it)."""
    out = set()
    if isinstance(node, dict):
        if "$params" in node:
            out.add(hashlib.sha256(canonical_json(node)).digest())
        for v in node.values():
            out |= param_fingerprints(v)
    elif isinstance(node, list):
        for v in node:
            out |= param_fingerprints(v)
    return out


# -- decoding -------------------------------------------------------------------------------------

@dataclasses.dataclass
class Env:
    """What decoding may use: the expected parameter set (substituted for an equal one), a
    context to reuse instead of rebuilding, the payload, the array descriptions."""

    payload: memoryview
    arrays: list
    expected: object = None
    context: object = None
    params_memo: dict = dataclasses.field(default_factory=dict)


class Decoder:
    """Host-side decoding: arrays come back as numpy (checked, then moved by :func:`to_device`)."""

    def __init__(self, env: Env):
        self.env = env

    def decode(self, node):
        if node is None or isinstance(node, (bool, int, float, str)):
            return node
        if isinstance(node, list) or not isinstance(node, dict) or len(node) not in (1, 2):
            raise FormatError(f"malformed description node: {str(node)[:80]}")
        if "$tuple" in node:
            return tuple(self.decode(v) for v in node["$tuple"])
        if "$list" in node:
            return [self.decode(v) for v in node["$list"]]
        if "$dict" in node:
            return {self.decode(k): self.decode(v) for k, v in node["$dict"]}
        if "$float" in node:
            return float(node["$float"])
        if "$complex" in node:
            re, im = node["$complex"]
            return complex(self.decode(re), self.decode(im))
        if "$bytes" in node:
            return bytes.fromhex(node["$bytes"])
        if "$array" in node:
            return self._array(node["$array"])
        if "$context" in node:
            kind = self._kind(node["$context"], "context")
            return kind.rebuild(self.decode(node["args"]), self.env)
        for tag, role in (("$params", "params"), ("$data", "data"), ("$obj", "object")):
            if tag in node:
                kind = self._kind(node[tag], role)
                fields = {k: self.decode(v) for k, v in node["fields"].items()}
                if role == "params":
                    return self._params(kind, fields, node)
                try:
                    return kind.cls(**fields)
                except (TypeError, ValueError) as err:
                    raise FormatError(f"{kind.name}: cannot rebuild from the stored fields: {err}") from None
        raise FormatError(f"malformed description node: unknown tag {sorted(node)}")

    def _kind(self, name, role) -> Kind:
        kind = KINDS.get(name)
        if kind is None or kind.role != role:
            raise FormatError(f"unknown {role} kind {name!r} (written by a newer jax_fhe?)")
        return kind

    def _params(self, kind, fields, node):
        key = canonical_json(node)
        if key not in self.env.params_memo:
            try:
                p = kind.cls(**fields)
            except (TypeError, ValueError) as err:
                raise FormatError(f"{kind.name}: the stored parameter set is invalid: {err}") from None
            # the caller's own object where it is the same set (cheap equality checks later)
            self.env.params_memo[key] = self.env.expected if p == self.env.expected else p
        return self.env.params_memo[key]

    def _array(self, index):
        try:
            desc = self.env.arrays[index]
            dtype, shape = np.dtype(desc["dtype"]), tuple(int(s) for s in desc["shape"])
            off, nbytes = int(desc["offset"]), int(desc["nbytes"])
        except (IndexError, KeyError, TypeError, ValueError) as err:
            raise FormatError(f"malformed array description {index}: {err}") from None
        if desc["dtype"] not in DTYPES:
            raise FormatError(f"array {index}: dtype {desc['dtype']} is not allowed")
        seeded = desc.get("seeded")
        stored = shape
        if seeded is not None:
            axis = int(seeded["axis"]) % len(shape)
            stored = shape[:axis] + (shape[axis] - 1,) + shape[axis + 1:]
        count = math.prod(stored)
        if off < 0 or nbytes != count * dtype.itemsize or off + nbytes > self.env.payload.nbytes:
            raise FormatError(f"array {index}: {nbytes} bytes at offset {off} do not hold {desc['dtype']}{list(stored)} "
                              f"inside the {self.env.payload.nbytes}-byte payload")
        arr = np.frombuffer(self.env.payload, dtype=dtype, count=count, offset=off).reshape(stored)
        if seeded is None:
            return arr
        try:
            half_shape = tuple(int(b) for b in seeded["batch"]) + (
                len(seeded["moduli"]) if seeded["rows"] is None else int(seeded["limbs"]), int(seeded["n"]))
            if half_shape != stored[:axis] + stored[axis + 1:]:  # before drawing anything
                raise ValueError(f"it draws {list(half_shape)}")
            rec = SeededUniform(field=str(seeded["field"]), axis=int(seeded["axis"]), index=int(seeded["index"]),
                                seed=bytes.fromhex(seeded["seed"]), moduli=tuple(int(q) for q in seeded["moduli"]),
                                batch=tuple(int(b) for b in seeded["batch"]), n=int(seeded["n"]),
                                rows=None if seeded["rows"] is None else tuple(int(r) for r in seeded["rows"]),
                                limbs=None if seeded["limbs"] is None else int(seeded["limbs"]))
            half = rec.draw()
            full = np.insert(arr, [rec.index], np.expand_dims(half, rec.axis), axis=rec.axis)
        except (KeyError, TypeError, ValueError) as err:
            raise FormatError(f"array {index}: malformed seed record: {err}") from None
        if full.shape != shape:
            raise FormatError(f"array {index}: the seed redraws {list(half.shape)}, which does not complete "
                              f"{list(stored)} to {list(shape)}")
        return SeededArray(full, rec)


class SeededArray(np.ndarray):
    """A decoded array whose uniform half came from a seed: carries the record until the object
    that holds it is rebuilt on the device (which gets the record, so saving it again stays
    compressed)."""

    def __new__(cls, arr, record):
        out = np.asarray(arr).view(cls)
        out.record = record
        return out

    def __array_finalize__(self, obj):
        self.record = getattr(obj, "record", None)


def check(x) -> None:
    """Run every kind's check over a decoded host object (recursively)."""
    kind = kind_of(x)
    if isinstance(x, (tuple, list)):
        for v in x:
            check(v)
    elif isinstance(x, dict):
        for v in x.values():
            check(v)
    elif kind is not None and kind.role == "object":
        for n in _fields(x):
            check(getattr(x, n))
        if kind.check is not None:
            kind.check(x)


def to_device(x, device=None):
    """The decoded object with its numpy arrays moved to ``device`` (None: JAX's default),
    seed records re-attached to the objects whose arrays came from a seed."""
    if isinstance(x, np.ndarray):
        arr = np.asarray(x).view(np.ndarray)
        return jax.device_put(arr, device) if device is not None else jax.numpy.asarray(arr)
    if isinstance(x, tuple):
        return tuple(to_device(v, device) for v in x)
    if isinstance(x, list):
        return [to_device(v, device) for v in x]
    if isinstance(x, dict):
        return {k: to_device(v, device) for k, v in x.items()}
    kind = kind_of(x)
    if kind is not None and kind.role == "context":
        return x if device is None else jax.device_put(x, device)
    if kind is None or kind.role != "object":
        return x
    names = _fields(x)
    records = [getattr(x, n).record for n in names if isinstance(getattr(x, n), SeededArray)]
    out = kind.cls(**{n: to_device(getattr(x, n), device) for n in names})
    if records:
        record_uniform_seed(out, records[0])
    return out
