"""ExpPack (VIPIR §3.5, App. C): ring packing of LWE ciphertexts with server-side expansion.

Packing (Tiptoe). LWE ciphertexts (A, b) mod p = 2^18 under a secret s in {-1, 0, 1}^n have
phases b + A s = Delta_LWE m + e (mod p). Cut the rows into blocks of N; for block r let
iota(b_r) and iota(A_{r,i}) be the polynomials whose coefficients are those entries, lifted to
centered integers. With C_i = RLWE(Delta s_i) (the "special" ciphertexts),

    ct_r = (0, Delta iota(b_r)) + sum_{i<n} iota(A_{r,i}) C_i

has phase Delta (b_r + A_r s) + sum_i iota(A_{r,i}) e_i: the RLWE plaintext is the LWE phase
vector mod p (wrap-arounds mod p cost -1 each because Delta p = -1 mod Q). In the NTT domain
this is, for every limb l and slot t, a GEMM [blocks x n] . [n x 2B] (the ``H . C + (0 | G)``
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
from ..ops import add_mod, mul_limb_consts, mul_mod, ntt, sub_mod
from ..rlwe import gadget as gd
from ..rns import HostRandom
from ..rns._pytree import pytree_dataclass, static_field
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
        return len(self.galois)

    def __repr__(self) -> str:
        return f"ExpansionKeys(levels={self.levels}, rows={tuple(self.rows.shape)})"


def expansion_levels(count: int) -> int:
    """ceil(log2(count)): levels needed to extract ``count`` coefficients."""
    return max(1, (int(count) - 1).bit_length())


def make_expansion_keys(key: RingKey, tables: RingTables, levels: int,
                        rng: HostRandom | None = None) -> ExpansionKeys:
    rng = HostRandom() if rng is None else rng
    n = tables.params.n
    if not 1 <= levels <= n.bit_length() - 1:
        raise ValueError(f"make_expansion_keys: levels must be in [1, log2 N = {n.bit_length() - 1}], got {levels}")
    galois = tuple(n // (1 << j) + 1 for j in range(levels))
    p = tables.params
    rows = jnp.stack([gd.automorphism_key(key.s_ntt, g, tables.ks, tables.ctx, rng, p.sigma, p.tail).rows
                      for g in galois])
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
    nodes = mul_limb_consts(ct, tables.two_inv_pows[lvl], ctx)[:, None]                                  # [B, 1, 2, L, N]
    for j, g in enumerate(keys.galois):
        sub = gd.automorphism(nodes, gd.GadgetKey(rows=keys.rows[j], galois=g), tables.ks, ctx)
        width = 1 << j
        keep_even = min(width, count)
        keep_odd = max(0, min(width, count - width))
        even = add_mod(nodes[:, :keep_even], sub[:, :keep_even], ctx)
        if keep_odd:
            diff = sub_mod(nodes[:, :keep_odd], sub[:, :keep_odd], ctx)
            odd = mul_mod(diff, jnp.broadcast_to(tables.x_inv_pows[j], diff.shape), ctx)
            nodes = jnp.concatenate([even, odd], axis=1)
        else:
            nodes = even
    return nodes[:, :count]


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


def pack(planes: jax.Array, special: jax.Array, y: jax.Array, tables: RingTables, *,
         max_temp_bytes: int = 1 << 28) -> jax.Array:
    """Pack LWE answers for a batch of queries.

    planes:  int8[N, L, 4 blocks, n] from :func:`hint_planes` (shared by the batch), or
             int8[B, N, L, 4 blocks, n] (one per query, e.g. double-packing's second pack).
    special: uint32[B, n, 2, L, N] expanded special ciphertexts (NTT domain).
    y:       uint32[B, blocks * N] LWE b-parts mod 2^32 (rounded to 2^18 here).
    Returns uint32[B, blocks, 2, L, N]: RLWE ciphertexts of the LWE phases mod 2^18.
    """
    params = tables.params
    n_ring, limbs = params.n, params.limbs
    bsz, n = special.shape[0], special.shape[1]
    per_query = planes.ndim == 5
    blocks = planes.shape[-2] // 4
    if special.shape[2:] != (2, limbs, n_ring) or planes.shape[-1] != n or y.shape != (bsz, blocks * n_ring):
        raise ValueError(f"pack: shapes do not match: planes {planes.shape}, special {special.shape}, y {y.shape}")
    if per_query:
        rhs = special.transpose(0, 4, 3, 1, 2)                              # [B, N, L, n, 2]
        out = mod_matmul(planes, rhs, params.primes, limb_axis=2)           # [B, N, L, blocks, 2]
        out = out.transpose(0, 3, 4, 2, 1)
    else:
        rhs = special.transpose(4, 3, 1, 0, 2).reshape(n_ring, limbs, n, 2 * bsz)   # [N, L, n, 2B]
        per_slot = limbs * 4 * blocks * 8 * bsz * 4                         # int32 plane products
        chunks = _chunks(n_ring, per_slot, max_temp_bytes)
        if chunks == 1:
            out = mod_matmul(planes, rhs, params.primes, limb_axis=1)
        else:
            sl = n_ring // chunks
            out = jax.lax.map(lambda pr: mod_matmul(pr[0], pr[1], params.primes, limb_axis=1),
                              (planes.reshape((chunks, sl) + planes.shape[1:]),
                               rhs.reshape((chunks, sl) + rhs.shape[1:])))
            out = out.reshape((n_ring,) + out.shape[2:])
        out = out.reshape(n_ring, limbs, blocks, bsz, 2).transpose(3, 2, 4, 1, 0)   # [B, blocks, 2, L, N]
    g = scale_by_delta(ntt(lift(round_to_p(y).reshape(bsz, blocks, n_ring), tables), tables.ctx), tables)
    return out.at[:, :, 1].set(add_mod(out[:, :, 1], g, tables.ctx))


def _chunks(total: int, per_item: int, budget: int) -> int:
    chunks = 1
    while chunks < total and per_item * (total // chunks) > budget:
        chunks *= 2
    return chunks
