"""Host-side randomness shared by every scheme: secrets, noise and public uniform data.

* :class:`HostRandom` is the one source of secret randomness. ``HostRandom()`` reads
  ``os.urandom`` (the OS CSPRNG). ``HostRandom.insecure_deterministic(seed)`` is a reproducible
  stream for tests only: anyone who knows the seed knows every secret it produced.
* ``HostRandom.public(seed)`` is a SHAKE-256 stream keyed by a public seed, for public uniform
  polynomials and matrices that client and server derive independently (stable across numpy and
  JAX versions; never use it for secrets).
* Noise is the *discrete* Gaussian D_{Z, sigma} (weights exp(-k^2 / (2 sigma^2))) truncated to
  |k| <= floor(tail * sigma), sampled by inversion of its cumulative table with 53-bit uniforms
  (the table is exact up to 2^-53 per entry). This numpy sampler is not constant-time: it runs
  on the client's host, not on a shared server. Encryption draws its noise on the device instead
  (:func:`jax_fhe.ops.sample_small`: the same table, a ChaCha20 keystream keyed by
  :meth:`HostRandom.device_key`, the table scanned whole) from the :class:`SmallTable` s here.
* :func:`to_residues` maps small signed integer polynomials (secrets, noise) to RNS residues.
* :class:`SeededUniform` records that an object's uniform half (the "a" of RLWE samples) was drawn
  from ``HostRandom.public(seed)``, so that serialization (:mod:`jax_fhe.io`) can store the
  32-byte seed instead of the polynomials; :func:`record_uniform_seed` attaches the record to
  the object a generator returns, :func:`uniform_seed_of` reads it back.
"""
from __future__ import annotations

import concurrent.futures
import dataclasses
import functools
import hashlib
import math
import os
import threading
from collections.abc import Sequence

import numpy as np

# Large draws (a key's uniform half at N = 2^16: 124 MB of os.urandom, 15.5 M reductions) run in
# chunks on a few host threads: os.urandom and numpy's loops release the GIL. The values do not
# depend on the threading (the deterministic and public streams are never split).
# A forked child starts without the pool (the parent's threads do not exist there) and with a
# fresh lock.
_CHUNK_BYTES = 1 << 22
_POOL = None
_POOL_LOCK = threading.Lock()


def _reset_pool_in_child():
    global _POOL, _POOL_LOCK
    _POOL, _POOL_LOCK = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_pool_in_child)


def _threaded(size_bytes: int) -> bool:
    return size_bytes >= 2 * _CHUNK_BYTES and (os.cpu_count() or 1) >= 2


def _pool() -> concurrent.futures.ThreadPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            _POOL = concurrent.futures.ThreadPoolExecutor(max_workers=min(8, os.cpu_count() or 1),
                                                          thread_name_prefix="jax_fhe_host_random")
        return _POOL


def _urandom(count: int):
    """os.urandom(count), read in chunks by the pool's threads into one buffer when large."""
    if not _threaded(count):
        return os.urandom(count)
    out = bytearray(count)
    view = memoryview(out)

    def fill(start):
        end = min(start + _CHUNK_BYTES, count)
        view[start:end] = os.urandom(end - start)

    list(_pool().map(fill, range(0, count, _CHUNK_BYTES)))
    return out


class HostRandom:
    """A source of secret randomness on the host (numpy arrays out).

    ``HostRandom()`` is cryptographically secure (``os.urandom``). Use
    ``HostRandom.insecure_deterministic(seed)`` only in tests.
    """

    def __init__(self):
        self._rng = None  # None: os.urandom; otherwise a seeded numpy Generator (insecure)
        self._xof = None  # public SHAKE-256 stream: (seed bytes, bytes consumed so far)

    @classmethod
    def insecure_deterministic(cls, seed: int) -> "HostRandom":
        """A reproducible stream from ``seed``. INSECURE: for tests and debugging only."""
        if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
            raise TypeError(f"insecure_deterministic: seed must be an int, got {type(seed).__name__}")
        out = cls()
        out._rng = np.random.default_rng(int(seed))
        return out

    @classmethod
    def public(cls, seed) -> "HostRandom":
        """A public, reproducible stream: SHAKE-256 of ``seed`` (an int in [0, 2^64) or bytes).

        For public uniform data (RLWE ``a`` polynomials, PIR matrices) that both parties derive
        from a seed sent in the clear. Not secret: never sample keys or noise from it."""
        if isinstance(seed, (int, np.integer)) and not isinstance(seed, bool):
            seed = int(seed)
            if not 0 <= seed < 1 << 64:
                raise ValueError(f"HostRandom.public: seed must be in [0, 2^64), got {seed}")
            seed = seed.to_bytes(8, "little")
        elif not isinstance(seed, (bytes, bytearray)):
            raise TypeError(f"HostRandom.public: seed must be an int or bytes, got {type(seed).__name__}")
        out = cls()
        out._xof = [bytes(seed), 0]
        return out

    @property
    def is_public(self) -> bool:
        """True for a public stream (:meth:`public`): never a source of secrets or noise."""
        return self._xof is not None

    @property
    def secure(self) -> bool:
        """True when the stream is secret and unpredictable (os.urandom)."""
        return self._rng is None and self._xof is None

    def __repr__(self) -> str:
        if self._xof is not None:
            return "HostRandom(PUBLIC seeded SHAKE-256 stream; not for secrets)"
        return "HostRandom(os.urandom)" if self.secure else "HostRandom(INSECURE deterministic seed)"

    def bytes(self, count: int) -> bytes:
        """``count`` random bytes."""
        raw = self._buffer(count)
        return raw if isinstance(raw, bytes) else bytes(raw)

    def _buffer(self, count: int):
        """``count`` random bytes as bytes or, for a large secure draw, a bytearray (no copy)."""
        if self._xof is not None:
            # SHAKE-256 over (seed, block counter): each call continues the stream
            seed, used = self._xof
            out = hashlib.shake_256(seed + used.to_bytes(8, "little")).digest(count)
            self._xof[1] = used + 1
            return out
        return _urandom(count) if self._rng is None else self._rng.bytes(count)

    def uint64(self, shape) -> np.ndarray:
        """Uniform uint64 array of ``shape``."""
        size = int(np.prod(shape, dtype=np.int64))
        return np.frombuffer(self._buffer(8 * size), dtype=np.uint64).reshape(shape)

    def device_key(self) -> np.ndarray:
        """A fresh 256-bit key for the device sampler (:func:`jax_fhe.ops.sample_small`): uint32[8]."""
        return np.frombuffer(self.bytes(32), dtype="<u4").astype(np.uint32)

    def seed64(self) -> int:
        """A uniform 64-bit integer (e.g. a fresh seed for a public matrix)."""
        return int(self.uint64(())[()])

    def ternary(self, shape) -> np.ndarray:
        """Uniform {-1, 0, 1} as int8[shape]."""
        size = int(np.prod(shape, dtype=np.int64))
        out = np.empty(0, dtype=np.uint8)
        while out.size < size:  # rejection of byte 255 makes byte % 3 exactly uniform
            raw = np.frombuffer(self.bytes(size + size // 64 + 16), dtype=np.uint8)
            out = np.concatenate([out, raw[raw < 255]])
        return ((out[:size] % 3).astype(np.int8) - 1).reshape(shape)

    def gaussian(self, shape, sigma: float, tail: float) -> np.ndarray:
        """Truncated discrete Gaussian, int32[shape], |values| <= floor(tail * sigma)."""
        thresholds, bound = _gaussian_table(float(sigma), float(tail))
        u = self.uint64(shape) >> np.uint64(11)  # 53-bit uniforms in [0, 2^53)
        return (np.searchsorted(thresholds, u, side="right") - bound).astype(np.int32)

    def uniform_mod(self, moduli: Sequence[int], shape) -> np.ndarray:
        """Uniform residues: uint32[len(moduli), *shape], row i uniform in [0, moduli[i]).

        Each value is a 64-bit uniform reduced mod q (statistical distance < 2^-32 for
        q < 2^32)."""
        q = np.asarray([int(m) for m in moduli], dtype=np.uint64)
        shape = tuple(int(s) for s in np.atleast_1d(shape)) if np.ndim(shape) else (int(shape),)
        raw = self.uint64((len(q),) + shape)
        if not _threaded(raw.nbytes) or len(q) < 2:
            return (raw % q.reshape((-1,) + (1,) * len(shape))).astype(np.uint32)
        out = np.empty(raw.shape, np.uint32)

        def reduce_row(i):
            out[i] = raw[i] % q[i]

        list(_pool().map(reduce_row, range(len(q))))
        return out

    def hamming_ternary(self, n: int, weight: int, count: int = 1) -> np.ndarray:
        """int8[count, n] ternary vectors with exactly ``weight`` nonzero (+-1) entries each."""
        n, weight = int(n), int(weight)
        if not 0 <= weight <= n:
            raise ValueError(f"hamming_ternary: weight {weight} must be in [0, {n}]")
        out = np.zeros((int(count), n), dtype=np.int8)
        for row in out:
            # Fisher-Yates on the first `weight` positions, with unbiased 64-bit draws
            perm = np.arange(n)
            draws = self.uint64((weight,))
            for i in range(weight):
                j = i + int(draws[i] % np.uint64(n - i))
                perm[i], perm[j] = perm[j], perm[i]
            signs = self.uint64((weight,)) & np.uint64(1)
            row[perm[:weight]] = np.where(signs == 1, 1, -1).astype(np.int8)
        return out


def as_host_random(rng) -> HostRandom:
    """``rng`` itself, or a fresh os.urandom HostRandom for None; TypeError for anything else."""
    if rng is None:
        return HostRandom()
    if not isinstance(rng, HostRandom):
        raise TypeError(f"rng must be a jax_fhe.rns.HostRandom (or None for os.urandom), got {type(rng).__name__}"
                        + (f" {np.dtype(rng.dtype)}{list(rng.shape)} (an encryption also takes a uint32[8] device key)"
                           if hasattr(rng, "dtype") and hasattr(rng, "shape") else ""))
    return rng


def is_device_key(rng) -> bool:
    """Whether ``rng`` is a device-sampler key: a uint32[8] array (numpy, jax, or traced)."""
    dtype = getattr(rng, "dtype", None)
    return dtype is not None and np.dtype(dtype) == np.uint32 and tuple(getattr(rng, "shape", ())) == (8,)


_TABLES: dict = {}


def _gaussian_table(sigma: float, tail: float):
    """Cumulative table of D_{Z,sigma} on [-B, B] scaled to 2^53, as uint64 thresholds."""
    key = (sigma, tail)
    if key not in _TABLES:
        bound = math.floor(tail * sigma)
        k = np.arange(-bound, bound + 1, dtype=np.float64)
        w = np.exp(-(k * k) / (2.0 * sigma * sigma))
        cdf = np.cumsum(w) / w.sum()
        # u in [t_{j-1}, t_j) maps to k_j (searchsorted 'right' counts thresholds <= u), so
        # k_j has probability (t_j - t_{j-1}) / 2^53. The last cdf entry (1.0) is dropped:
        # every u >= t_{2B-1} maps to +B.
        thresholds = np.round(cdf[:-1] * 2.0**53).astype(np.uint64)
        _TABLES[key] = (thresholds, bound)
    return _TABLES[key]


@dataclasses.dataclass(frozen=True)
class SmallTable:
    """A distribution of small integers for the device sampler (:func:`jax_fhe.ops.sample_small`):
    a 53-bit uniform u gives #{k : thresholds[k] <= u} - bound. Hashable (a static argument)."""

    thresholds: tuple
    bound: int

    def __post_init__(self):
        t = self.thresholds
        if (not isinstance(t, tuple) or not 1 <= len(t) <= MAX_SMALL_TABLE
                or any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) for v in t)
                or any(not 0 <= int(v) <= 1 << 53 for v in t) or any(int(a) > int(b) for a, b in zip(t, t[1:]))):
            raise ValueError(f"SmallTable: thresholds must be a tuple of 1 to {MAX_SMALL_TABLE} sorted ints in "
                             f"[0, 2^53], got {len(t) if isinstance(t, tuple) else type(t).__name__} entries")
        if isinstance(self.bound, bool) or not isinstance(self.bound, (int, np.integer)) or not 0 <= self.bound <= len(t):
            raise ValueError(f"SmallTable: bound must be an int in [0, {len(t)}], got {self.bound!r}")

    def probabilities(self) -> dict:
        """{value: probability} exactly as the sampler draws it (for tests)."""
        edges = (0,) + tuple(self.thresholds) + (1 << 53,)
        return {k - self.bound: (edges[k + 1] - edges[k]) / 2.0**53 for k in range(len(edges) - 1)}


#: The device sampler's largest table (``ffi/sample_args.h``: kMaxSampleTable).
MAX_SMALL_TABLE = 256

#: Uniform {-1, 0, 1} (each within 2^-53 of 1/3).
TERNARY = SmallTable(thresholds=(round(2**53 / 3), round(2**54 / 3)), bound=1)


@functools.lru_cache(maxsize=64)
def gaussian_table(sigma: float, tail: float) -> SmallTable:
    """The truncated discrete Gaussian of :meth:`HostRandom.gaussian` as a :class:`SmallTable`
    (the same cumulative table)."""
    thresholds, bound = _gaussian_table(float(sigma), float(tail))
    if not 1 <= len(thresholds) <= MAX_SMALL_TABLE:
        raise ValueError(f"gaussian_table: sigma * tail = {sigma * tail:g} gives {len(thresholds)} table entries; the "
                         f"device sampler takes 1 to {MAX_SMALL_TABLE} (1 <= sigma * tail < {MAX_SMALL_TABLE // 2 + 1})")
    return SmallTable(thresholds=tuple(int(t) for t in thresholds), bound=int(bound))


def to_residues(coeffs, moduli: Sequence[int]) -> np.ndarray:
    """Signed integer coefficients int[..., N] -> residues uint32[..., L, N] (row i mod moduli[i]).

    For small polynomials (secrets, noise, messages) given as any numpy integer array whose values
    fit int64 (ValueError otherwise). The output is canonical (row i in [0, moduli[i]))."""
    c = np.asarray(coeffs)
    if not np.issubdtype(c.dtype, np.integer):
        raise TypeError(f"to_residues: coefficients must be integers, got {c.dtype}")
    if c.dtype == np.uint64 and c.size and int(c.max()) >= 1 << 63:
        # the int64 conversion below would wrap them to negative numbers
        raise ValueError(f"to_residues: coefficient {int(c.max())} does not fit int64 (signed values "
                         "below 2^63 in magnitude are expected)")
    c = c.astype(np.int64)
    q = np.asarray([int(m) for m in moduli], dtype=np.int64).reshape((-1, 1))
    return np.mod(c[..., None, :], q).astype(np.uint32)


def uniform_residues(rng: HostRandom, moduli: Sequence[int], batch: tuple, n: int) -> np.ndarray:
    """Uniform polynomials uint32[*batch, L, n], limb i uniform mod ``moduli[i]``: the one way
    RLWE ``a`` parts are drawn (so that :meth:`SeededUniform.draw` redraws them bit for bit)."""
    raw = rng.uniform_mod(moduli, tuple(batch) + (int(n),))
    return np.moveaxis(raw, 0, -2)


#: Bytes of the public seed a generator draws (from its secret stream) for a seeded ``a``.
SEED_BYTES = 32


@dataclasses.dataclass(frozen=True)
class SeededUniform:
    """How the uniform half of an object's array was drawn: ``uniform_residues(
    HostRandom.public(seed), moduli, batch, n)``, scattered into limb positions ``rows`` of
    ``limbs`` (None: every limb, in order; the other limbs are zero).

    field:  the object's array field (e.g. "data");
    axis, index: where the uniform half sits in that array (RLWE data [..., 2, L, N]: axis -3,
            index 1, the "a" component);
    seed:   the public seed (bytes); moduli, batch, n: what was drawn.

    The seed is public (the polynomials it expands to are public too); it is drawn from the
    generator's secret stream so that it is fresh and unpredictable. Security rests on SHAKE-256
    expanding it to uniform-looking residues, as for every seeded ``a`` (Kyber, SEAL)."""

    field: str
    axis: int
    index: int
    seed: bytes
    moduli: tuple
    batch: tuple
    n: int
    rows: tuple | None = None
    limbs: int | None = None

    def draw(self) -> np.ndarray:
        """The uniform half, uint32[*batch, limbs, n] (numpy, on the host)."""
        a = uniform_residues(HostRandom.public(self.seed), self.moduli, self.batch, self.n)
        if self.rows is None:
            return a
        full = np.zeros(tuple(self.batch) + (int(self.limbs), int(self.n)), np.uint32)
        full[..., list(self.rows), :] = a
        return full

    def matches(self, half) -> bool:
        """Whether ``half`` (the array's uniform half, [*batch, limbs, n]) starts as the seed's
        stream does: its first limb of the first batch entry against the stream's first n words
        (a cheap check that the record belongs to this data)."""
        half = np.asarray(half)
        if half.shape != tuple(self.batch) + ((len(self.moduli) if self.rows is None else int(self.limbs)),
                                              int(self.n)):
            return False
        words = np.frombuffer(hashlib.shake_256(bytes(self.seed) + (0).to_bytes(8, "little")).digest(8 * int(self.n)),
                              dtype=np.uint64)
        first = (words % np.uint64(self.moduli[0])).astype(np.uint32)
        row = 0 if self.rows is None else int(self.rows[0])
        return bool(np.array_equal(half[(0,) * len(self.batch) + (row,)], first))


def record_uniform_seed(obj, record: SeededUniform):
    """Attach ``record`` to ``obj`` (returned). Only that object carries it: anything derived
    from it (``dataclasses.replace``, pytree maps, ``jax.device_put``, jit outputs) is a new
    object without a record, which serialization stores whole."""
    if not isinstance(record, SeededUniform):
        raise TypeError(f"record_uniform_seed: expected a SeededUniform, got {type(record).__name__}")
    object.__setattr__(obj, "_uniform_seed", record)
    return obj


def uniform_seed_of(obj) -> SeededUniform | None:
    """The :class:`SeededUniform` record attached to ``obj`` by its generator, or None."""
    return getattr(obj, "_uniform_seed", None)
