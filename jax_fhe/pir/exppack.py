"""ExpPack (VIPIR §3.5, App. C): ring packing of LWE ciphertexts with server-side expansion.

Packing (Tiptoe). LWE ciphertexts (A, b) mod p = 2^18 under a secret s in {-1, 0, 1}^n have
phases b + A s = Delta_LWE m + e (mod p). Cut the rows into blocks of N; for block r let
iota(b_r) and iota(A_{r,i}) be the polynomials whose coefficients are those entries, lifted to
centered integers. With C_i = RLWE(Delta s_i) (the "special" ciphertexts),

    ct_r = (Delta iota(b_r), 0) + sum_{i<n} iota(A_{r,i}) C_i       (components (b, a))

has phase Delta (b_r + A_r s) + sum_i iota(A_{r,i}) e_i: the RLWE plaintext is the LWE phase
vector mod p (wrap-arounds mod p cost -1 each because Delta p = -1 mod Q). In the NTT domain
this is, for every limb l and slot t, a GEMM [blocks x n] . [n x 2B] (the ``H . C + (G | 0)``
of the paper), done by :func:`jax_fhe.pir.modgemm.mod_matmul` with H's byte planes prepared
offline (:func:`hint_planes`).

Expansion (SealPIR). The client sends one RLWE ciphertext of M(X) = sum_{i<n} Delta s_i X^i
(+ extra slots, e.g. the hybrid's RGSW selector values). The server multiplies it by 2^-lvl
mod Q and runs lvl levels of ct -> (ct + ct(X^g_j), X^(-2^j) (ct - ct(X^g_j))) with
g_j = N / 2^j + 1; leaf k then encrypts M's coefficient k (for k < 2^lvl, lvl = ceil(log2 count)).
Each automorphism key-switches with the gadget (1, 2^18, ..., 2^72): lvl keys of 5 rows.
Only the nodes that lead to the first ``count`` leaves are computed.
"""
from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from .. import lwe
from ..ops import add_mod, automorphism_ntt, mul_limb_consts, mul_mod, ntt, sub_mod
from ..rlwe import gadget as gd
from ..rns import HostRandom, progress_bar, slow_keygen
from ..rns.pytree import pytree_dataclass, static_field
from . import modgemm
from .modgemm import mod_matmul, split_planes
from .ring import RingKey, RingTables, scale_by_delta

_U32 = jnp.uint32
LOG_P = 18  # LWE phases are rounded to 2^18 = the RLWE plaintext modulus before packing


@pytree_dataclass
class ExpansionKeys:
    """Automorphism keys for expansion: ``rows``: uint32[lvl, len, 2, L, N] (NTT domain), level j
    for X -> X^(N/2^j + 1). Static: ``galois`` (tuple of lvl elements). Reusable across queries."""

    rows: jax.Array
    galois: tuple = static_field()

    @property
    def levels(self) -> int:
        """Number of expansion levels (one key each)."""
        return len(self.galois)

    def __repr__(self) -> str:
        return f"ExpansionKeys(levels={self.levels}, rows={tuple(self.rows.shape)})"


def expansion_levels(count: int) -> int:
    """ceil(log2(count)): levels needed to extract ``count`` coefficients."""
    return max(1, (int(count) - 1).bit_length())


def make_expansion_keys(key: RingKey, tables: RingTables, levels: int,
                        rng: HostRandom | None = None, *, progress: bool | None = None) -> ExpansionKeys:
    """The ``levels`` automorphism keys of query expansion (X -> X^(N/2^j + 1), j < levels)
    under the client's ring key, from ``rng`` (None: os.urandom). ``progress``: a tqdm bar over
    the keys (None: when they take long, :func:`jax_fhe.rns.slow_keygen`)."""
    rng = HostRandom() if rng is None else rng
    n = tables.params.n
    if not 1 <= levels <= n.bit_length() - 1:
        raise ValueError(f"make_expansion_keys: levels must be in [1, log2 N = {n.bit_length() - 1}], got {levels}")
    galois = tuple(n // (1 << j) + 1 for j in range(levels))
    p = tables.params
    todo = progress_bar(galois, progress, auto=slow_keygen(levels, n), desc="expansion keys", unit="key")
    rows = jnp.stack([gd.automorphism_key(key.s_ntt, g, tables.ks, tables.ctx, rng, p.sigma, p.tail).rows
                      for g in todo])
    return ExpansionKeys(rows=rows, galois=galois)


def special_message(lwe_s, tables: RingTables, extra=None) -> np.ndarray:
    """Coefficient residues uint32[B, L, N] of M = sum_i Delta s_i X^i (+ ``extra``).

    ``lwe_s``: int[B, n] ternary LWE secrets. ``extra``: optional uint32[B, L, N] residues added
    coefficient-wise (slots >= n carry the hybrid's selector values)."""
    params = tables.params
    s = np.asarray(lwe_s).astype(np.int64)
    if s.ndim != 2 or s.shape[1] > params.n:
        raise ValueError(f"special_message: LWE secrets must be int[B, n <= N = {params.n}], got {s.shape}")
    delta = np.array([params.delta % q for q in params.primes], dtype=np.int64)[:, None]
    qs = np.array(params.primes, dtype=np.int64)[:, None]
    msg = np.zeros((s.shape[0], params.limbs, params.n), dtype=np.int64)
    msg[:, :, : s.shape[1]] = np.mod(s[:, None, :] * delta, qs)
    if extra is not None:
        msg = np.mod(msg + np.asarray(extra, dtype=np.int64), qs)
    return msg.astype(np.uint32)


def expand(ct: jax.Array, keys: ExpansionKeys, tables: RingTables, count: int) -> jax.Array:
    """Expand ciphertexts uint32[B, 2, L, N] (NTT domain) into uint32[B, count, 2, L, N]:
    leaf k encrypts coefficient k of the packed message (pre-scaled by 2^-lvl, so exactly M_k)."""
    lvl = keys.levels
    if not 1 <= count <= 1 << lvl:
        raise ValueError(f"expand: {lvl} expansion levels give at most {1 << lvl} ciphertexts, asked for {count}")
    ctx = tables.ctx
    # The a- and b-parts of the nodes are kept as separate arrays: the automorphism of the
    # a-part is then a whole buffer for the inverse NTT of the gadget decomposition (slicing it
    # out of a stacked [.., 2, L, N] array would copy it first). They are stacked once at the
    # end, in the same fused pass as the last level's sums.
    ct = mul_limb_consts(ct, tables.two_inv_pows[lvl], ctx)[:, None]                    # [B, 1, 2, L, N]
    node_b, node_a = ct[:, :, 0], ct[:, :, 1]                                           # [B, w, L, N]
    for j, g in enumerate(keys.galois):
        aut_a, aut_b = automorphism_ntt(node_a, g), automorphism_ntt(node_b, g)
        sub = gd.key_switch_a(aut_a, keys.rows[j], tables.ks, ctx)                      # [B, w, 2, L, N]
        node_a = _next_level(node_a, sub[:, :, 1], j, count, tables)
        node_b = _next_level(node_b, add_mod(sub[:, :, 0], aut_b, ctx), j, count, tables)
    return jnp.stack([node_b, node_a], axis=2)[:, :count]


def _next_level(nodes: jax.Array, sub: jax.Array, j: int, count: int, tables: RingTables) -> jax.Array:
    """One expansion level on one part: nodes, sub uint32[B, 2^j, L, N] (sub: the part of the
    key-switched automorphism) -> (nodes + sub, X^(-2^j) (nodes - sub)), keeping only the nodes
    that lead to the first ``count`` leaves."""
    ctx = tables.ctx
    width = 1 << j
    keep_even = min(width, count)
    keep_odd = max(0, min(width, count - width))
    even = add_mod(nodes[:, :keep_even], sub[:, :keep_even], ctx)
    if not keep_odd:
        return even
    diff = sub_mod(nodes[:, :keep_odd], sub[:, :keep_odd], ctx)
    odd = mul_mod(diff, jnp.broadcast_to(tables.x_inv_pows[j], diff.shape), ctx)
    return jnp.concatenate([even, odd], axis=1)


def lift(v: jax.Array, tables: RingTables) -> jax.Array:
    """Words in [0, 2^18) -> residues of their centered value in [-2^17, 2^17): [..., N] -> [..., L, N]."""
    q = jnp.asarray(np.array(tables.params.primes, dtype=np.uint32))[:, None]
    v = v[..., None, :]
    return jnp.where(v >= _U32(1 << (LOG_P - 1)), v + (q - _U32(1 << LOG_P)), v)


def round_to_p(x: jax.Array) -> jax.Array:
    """Round uint32 words mod 2^32 to mod 2^18 (LWE modulus switching, ``lwe.mod_switch``)."""
    ct = lwe.LWECiphertext(a=x[..., None], b=x, params=lwe.LWE_TOY, log_q=32)
    return lwe.mod_switch(ct, LOG_P).b


def hint_planes(h_raw: jax.Array, tables: RingTables) -> jax.Array:
    """Offline hint for packing: H_raw uint32[blocks * N, n] (= DB @ A mod 2^32) -> int8 byte
    planes [N, L, 4 * blocks, n] of the NTT'd lifted polynomials (slot-major: one GEMM per slot).
    Jittable; call it per chunk of blocks for large DBs (see ``protocols``)."""
    n_ring = tables.params.n
    rows, n = h_raw.shape
    blocks = rows // n_ring
    h = round_to_p(h_raw).reshape(blocks, n_ring, n).transpose(0, 2, 1)     # [blocks, n, N]
    polys = ntt(lift(h, tables), tables.ctx)                                # [blocks, n, L, N]
    return split_planes(polys.transpose(3, 2, 0, 1))                        # [N, L, 4 blocks, n]


#: Default bound (bytes) on the int32 plane products of the shared-hint packing GEMM that are
#: alive at once (see :func:`_pack_shared`). 12 GiB: at the paper's hybrid layout (384 MiB of
#: products per query) a batch of 32 runs as one group, so the 15 GiB of planes are read once
#: (16 GiB, batch 32 on an H100: 34.0 ms with 6 GiB, i.e. two groups; 30.0 ms with 12 GiB; peak
#: device memory 66 GiB with the setup). Read at trace time: benchmarks may change it before
#: jitting (``profile_pir.py --pack-temp-gib``).
PACK_TEMP_BYTES = 12 << 30


def pack(planes: jax.Array, special: jax.Array, y: jax.Array, tables: RingTables, *,
         max_temp_bytes: int | None = None) -> jax.Array:
    """Pack LWE answers for a batch of queries.

    planes:  int8[N, L, 4 blocks, n] from :func:`hint_planes` (shared by the batch), a tuple
             of its slot chunks int8[N / K, L, 4 blocks, n] (one GEMM per chunk), or
             int8[B, N, L, 4 blocks, n] (one per query, e.g. double-packing's second pack).
    special: uint32[B, >= n, 2, L, N] expanded special ciphertexts (NTT domain); only the
             first n are used (the caller may pass all expanded slots: no sliced copy).
    y:       uint32[B, blocks * N] LWE b-parts mod 2^32 (rounded to 2^18 here).
    max_temp_bytes: shared planes only: bound on the int32 plane products alive at once
             (default :data:`PACK_TEMP_BYTES`; shared by the plane chunks); see :func:`_pack_shared`.
    Returns uint32[B, blocks, 2, L, N]: RLWE ciphertexts of the LWE phases mod 2^18.
    """
    params = tables.params
    n_ring, limbs = params.n, params.limbs
    chunks = tuple(planes) if isinstance(planes, (tuple, list)) else None
    if chunks is not None:
        planes = chunks[0]
        if sum(c.shape[0] for c in chunks) != n_ring or any(c.shape != planes.shape for c in chunks):
            raise ValueError(f"pack: plane chunks must split N = {n_ring} slots equally, got "
                             f"{[tuple(c.shape) for c in chunks]}")
    bsz, n = special.shape[0], planes.shape[-1]
    per_query = planes.ndim == 5
    blocks = planes.shape[-2] // 4
    if (special.shape[2:] != (2, limbs, n_ring) or special.shape[1] < n
            or y.shape != (bsz, blocks * n_ring)):
        raise ValueError(f"pack: shapes do not match: planes {planes.shape}, special {special.shape}, y {y.shape}")
    if per_query and chunks is not None:
        raise ValueError("pack: per-query planes come whole, not in chunks")
    if per_query:
        rhs = special[:, :n].transpose(0, 4, 3, 1, 2)                       # [B, N, L, n, 2]
        out = mod_matmul(planes, rhs, params.primes, limb_axis=2)           # [B, N, L, blocks, 2]
        out = out.transpose(0, 3, 4, 2, 1)
    else:
        budget = PACK_TEMP_BYTES if max_temp_bytes is None else int(max_temp_bytes)
        if chunks is None:
            out = _pack_shared(planes, special, params.primes, budget)
        else:  # slot chunk j multiplies slots j N / K .. of the special ciphertexts; the chunks'
            # GEMMs are independent, so XLA may keep all their products alive: they share the bound
            w, each = planes.shape[0], max(1, budget // len(chunks))
            out = jnp.concatenate([_pack_shared(c, special[..., j * w:(j + 1) * w], params.primes, each)
                                   for j, c in enumerate(chunks)], axis=-1)
    g = scale_by_delta(ntt(lift(round_to_p(y).reshape(bsz, blocks, n_ring), tables), tables.ctx), tables)
    return out.at[:, :, 0].set(add_mod(out[:, :, 0], g, tables.ctx))


def _pack_shared(planes: jax.Array, special: jax.Array, primes: tuple, budget: int) -> jax.Array:
    """H . C for the shared hint planes int8[N, L, 4 blocks, n] and special uint32[B, >= n, 2, L, N]
    -> uint32[B, blocks, 2, L, N], in groups of queries whose int32 plane products fit ``budget``.

    One query's products are int32[N, L, 4 blocks, 4 x 2] (128 bytes per slot, limb and block:
    1/40 of the planes at n = 1280; 384 MiB at N = 4096, blocks = 256), so a group of c queries
    holds c times that. Groups are cut along the batch and each re-reads the planes, which are
    never sliced: chunking over slots instead (the previous scheme) made XLA materialise each
    dynamic slice of the planes before its GEMM (CPU compile: 2 steps of 7.5 GiB at batch 1 with
    the old 256 MiB budget), an extra write and read of all the planes. A batch that the groups
    do not divide is padded with zero queries (their outputs are dropped).
    """
    bsz = special.shape[0]
    if modgemm.FUSED_DEFAULT:  # the FFI kernel keeps the plane products in registers
        return _shared_products(planes, special, primes)
    per_query = 32 * planes.shape[0] * planes.shape[1] * planes.shape[2]
    count = -(-bsz // max(1, budget // per_query))                  # number of groups
    if count == 1:
        return _shared_products(planes, special, primes)
    group = -(-bsz // count)
    if count * group > bsz:
        special = jnp.pad(special, [(0, count * group - bsz)] + [(0, 0)] * (special.ndim - 1))
    groups = special.reshape((count, group) + special.shape[1:])
    out = jax.lax.map(lambda sp: _shared_products(planes, sp, primes), groups)
    return out.reshape((count * group,) + out.shape[2:])[:bsz]


def _shared_products(planes, special, primes):
    """One group: planes int8[N, L, 4 blocks, n], special uint32[c, >= n, 2, L, N] ->
    uint32[c, blocks, 2, L, N] (one batched GEMM over the N L (slot, limb) pairs)."""
    n_ring, limbs, rows, n = planes.shape
    c = special.shape[0]
    rhs = special[:, :n].transpose(4, 3, 1, 0, 2).reshape(n_ring, limbs, n, 2 * c)    # [N, L, n, 2c]
    out = mod_matmul(planes, rhs, primes, limb_axis=1)                              # [N, L, blocks, 2c]
    return out.reshape(n_ring, limbs, rows // 4, c, 2).transpose(3, 2, 4, 1, 0)
