"""The RLWE side of VIPIR-style PIR: BFV-style (scale-invariant) RLWE with plaintext modulus 2^18.

Parameters (VIPIR §3.5, notes §1.3-1.4): ring degree N = 4096, three NTT primes q_i < 2^29 with
q_i = 1 (mod 2^18) (hence = 1 mod 2N), Q = q_0 q_1 q_2 ~ 2^87, p = 2^18, Delta = floor(Q / p)
= (Q - 1) / p, ternary secret, discrete Gaussian noise sigma = 3.2 clipped at 6 sigma. Because
Q = 1 (mod p), Delta * p = -1 (mod Q): plaintext wrap-around mod p costs only a +-1 error per
wrap, which is what lets ExpPack pack mod-p LWE phases without reducing them first.

Responses are modulus-switched from Q to the single prime q_0 (``mod_switch``), where
Delta_0 = (q_0 - 1) / p ~ 2^11 and decryption is one NTT product and a division.

Everything the server needs on the device is in :class:`RingTables` (a pytree: pass it into
jitted functions). Ciphertexts are RLWE ciphertexts of the shared layer (:mod:`jax_fhe.rlwe`):
uint32[..., 2, L, N] = (b, a) in the NTT domain, phase b + a s; keys and encryption come from
:mod:`jax_fhe.rlwe.encryption`, the security bound from :mod:`jax_fhe.rns.security`.
Noise measurement (``phase_int``) reconstructs exact integers on the host, for tests and logs.
"""
from __future__ import annotations

import dataclasses
import math

import jax
import jax.numpy as jnp
import numpy as np

from ..ops import add_mod, bconv, intt, mul_limb_consts, mul_mod, ntt, sub_mod
from ..rlwe import encryption as rlwe_enc
from ..rlwe import gadget as gd
from ..rns import (BConvTable, HostRandom, RNSContext, as_host_random, check_rlwe_security, crt_centered,
                   make_bconv_table, make_context, ntt_primes)
from ..rns.pytree import pytree_dataclass, static_field

_U32 = jnp.uint32


@dataclasses.dataclass(frozen=True)
class RingParams:
    """RLWE parameters for PIR (hashable: pytree metadata).

    Fields: ``n`` (ring degree N), ``primes`` (q_0 first: the response prime), ``log_p``,
    ``sigma``, ``tail``, the key-switching gadget (``ks_base_log``, ``ks_len``; expansion and
    conversion keys), the RGSW selector gadget (``sel_base_log``, ``sel_len``; hybrid folds),
    ``name`` and ``insecure`` (required for sets outside the HE-standard bound).
    """

    n: int
    primes: tuple
    log_p: int = 18
    sigma: float = 3.2
    tail: float = 6.0
    ks_base_log: int = 18
    ks_len: int = 5
    sel_base_log: int = 9
    sel_len: int = 10
    name: str = "custom"
    insecure: bool = False

    def __post_init__(self):
        object.__setattr__(self, "primes", tuple(int(q) for q in self.primes))
        if len(self.primes) < 2:
            raise ValueError("RingParams: need at least two primes (responses switch to the first)")
        for q in self.primes:
            if q >= 1 << 29 or (q - 1) % self.p or (q - 1) % (2 * self.n):
                raise ValueError(f"RingParams: prime {q} must be < 2^29 and = 1 mod p = 2^{self.log_p} "
                                 f"and mod 2N = {2 * self.n}")
        if self.n not in (1 << k for k in range(10, 16)):
            raise ValueError(f"RingParams: N = {self.n} must be a power of two in [1024, 32768]")
        check_rlwe_security(self.n.bit_length() - 1, self.log_q, insecure=self.insecure,
                            name=f"RingParams {self.name!r}")

    @property
    def p(self) -> int:
        """The plaintext modulus p = 2^log_p."""
        return 1 << self.log_p

    @property
    def q(self) -> int:
        """The ciphertext modulus Q, the product of the primes."""
        return math.prod(self.primes)

    @property
    def log_q(self) -> float:
        """log2 Q."""
        return math.log2(self.q)

    @property
    def delta(self) -> int:
        """Delta = floor(Q / p) = (Q - 1) / p."""
        return self.q // self.p

    @property
    def delta0(self) -> int:
        """Delta_0 = (q_0 - 1) / p: the scale after switching to q_0."""
        return self.primes[0] // self.p

    @property
    def limbs(self) -> int:
        """Number of primes (RNS limbs)."""
        return len(self.primes)

    def ct_bytes(self, limbs: int | None = None) -> int:
        """Bytes of one RLWE ciphertext (2 polynomials of N uint32 words per limb)."""
        return 2 * self.n * 4 * (self.limbs if limbs is None else limbs)

    def __repr__(self) -> str:
        tag = ", INSECURE: test only" if self.insecure else ""
        return (f"RingParams({self.name!r}, N={self.n}, Q~2^{self.log_q:.1f} ({self.limbs} primes), "
                f"p=2^{self.log_p}{tag})")


def make_ring(n: int = 4096, limbs: int = 3, *, name: str | None = None, insecure: bool = False,
              **kw) -> RingParams:
    """The largest ``limbs`` primes below 2^29 with q = 1 mod lcm(2^18, 2N)."""
    primes = ntt_primes(29, limbs, n, congruent_to=1 << kw.get("log_p", 18))
    return RingParams(n=n, primes=primes, name=name or f"ring-n{n}", insecure=insecure, **kw)


#: VIPIR's set: N = 4096, Q ~ 2^87 (536608769, 533463041, 531628033), p = 2^18.
RING_N4096 = make_ring(4096, 3, name="vipir-n4096")
#: N = 1024 with the same primes: fast CPU tests only (Q ~ 2^87 >> 27 bits: no security).
RING_TOY = make_ring(1024, 3, name="toy-n1024", insecure=True)


@pytree_dataclass
class RingTables:
    """Device tables for one :class:`RingParams` (pass into jitted code as an argument).

    ctx: RNSContext of the primes; ks / sel: gadgets; delta: uint32[L] Delta mod q_l;
    switch: BConvTable (q_1..q_{L-1}) -> q_0; switch_consts: uint32[2, L] (row 0: floor(Q'/2)
    mod q_l with Q' = Q / q_0, row 1 [0]: Q'^-1 mod q_0); x_inv_pows: uint32[log N, L, N] the
    NTT of X^(-2^j); two_inv_pows: uint32[log N + 1, L] 2^-j mod q_l. Static: params.
    """

    ctx: RNSContext
    ks: gd.Gadget
    sel: gd.Gadget
    delta: jax.Array
    switch: BConvTable
    switch_consts: jax.Array
    x_inv_pows: jax.Array
    two_inv_pows: jax.Array
    params: RingParams = static_field()


def make_tables(params: RingParams) -> RingTables:
    """Build the device tables of ``params`` (:class:`RingTables`: NTT context, gadgets, Delta,
    modulus-switching and expansion constants)."""
    ps = params.primes
    q_rest = math.prod(ps[1:])
    consts = np.zeros((2, len(ps)), dtype=np.uint32)
    consts[0] = [(q_rest // 2) % q for q in ps]
    consts[1, 0] = pow(q_rest % ps[0], -1, ps[0])
    n, log_n = params.n, params.n.bit_length() - 1
    ctx = make_context(ps, n)
    mono = np.zeros((log_n, len(ps), n), dtype=np.uint32)
    for j in range(log_n):  # X^(-2^j) = -X^(N - 2^j) in the negacyclic ring
        mono[j, :, n - (1 << j)] = [q - 1 for q in ps]
    return RingTables(
        ctx=ctx,
        ks=gd.make_gadget(ps, params.ks_base_log, params.ks_len),
        sel=gd.make_gadget(ps, params.sel_base_log, params.sel_len),
        delta=jnp.asarray(np.array([params.delta % q for q in ps], dtype=np.uint32)),
        switch=make_bconv_table(ps[1:], ps[:1]),
        switch_consts=jnp.asarray(consts),
        x_inv_pows=ntt(jnp.asarray(mono), ctx),
        two_inv_pows=jnp.asarray(np.array([[pow(2, -j, q) for q in ps] for j in range(log_n + 1)],
                                          dtype=np.uint32)),
        params=params,
    )


@pytree_dataclass
class RingKey:
    """A client's long-term RLWE secret: ``s``: int8[N] ternary, ``s_ntt``: uint32[L, N]."""

    s: jax.Array
    s_ntt: jax.Array
    params: RingParams = static_field()

    def __repr__(self) -> str:  # never print the secret
        return f"RingKey({self.params!r})"


def keygen(tables: RingTables, rng: HostRandom | None = None) -> RingKey:
    """A fresh ternary RLWE secret (``rng``: None means os.urandom) and its NTT: :class:`RingKey`."""
    s = rlwe_enc.sample_secret(tables.params.n, as_host_random(rng))
    return RingKey(s=jnp.asarray(s), s_ntt=rlwe_enc.secret_ntt(s, tables.ctx), params=tables.params)


def encrypt_ntt(key: RingKey, m_ntt, tables: RingTables, rng: HostRandom | None = None) -> jax.Array:
    """RLWE encryption (b, a) of NTT-domain residues ``m_ntt`` (the full phase target, already
    scaled): uint32[..., 2, L, N]."""
    p = tables.params
    return rlwe_enc.encrypt_sk(m_ntt, key.s_ntt, tables.ctx, range(p.limbs), as_host_random(rng), p.sigma,
                               p.tail)


def scale_by_delta(x: jax.Array, tables: RingTables) -> jax.Array:
    """Delta * x mod Q for residues uint32[..., L, N]."""
    return mul_limb_consts(x, tables.delta, tables.ctx)


def mod_switch(ct: jax.Array, tables: RingTables) -> jax.Array:
    """Q -> q_0 for NTT-domain ciphertexts uint32[..., 2, L, N]: returns the coefficient-domain
    uint32[..., 2, N] words in [0, q_0), each round(x q_0 / Q) up to -1 (fast base conversion).
    """
    ctx = tables.ctx
    x = intt(ct, ctx)
    x = add_mod(x, jnp.broadcast_to(tables.switch_consts[0][:, None], x.shape), ctx)   # + floor(Q'/2)
    rest = bconv(x[..., 1:, :], tables.switch)                                     # [..., 2, 1, N]
    diff = sub_mod(x[..., :1, :], rest, ctx)
    return mul_limb_consts(diff, tables.switch_consts[1, :1], ctx)[..., 0, :]


def decrypt_switched(key: RingKey, ct0: jax.Array, tables: RingTables) -> jax.Array:
    """Decrypt q_0 ciphertexts uint32[..., 2, N] (coefficient domain): uint32[..., N] in [0, p)."""
    ph = phase_switched(key, ct0, tables)
    d0 = tables.params.delta0
    return ((ph + _U32(d0 // 2)) // _U32(d0)) & _U32(tables.params.p - 1)


def phase_switched(key: RingKey, ct0: jax.Array, tables: RingTables) -> jax.Array:
    """b + a s mod q_0 for coefficient-domain q_0 ciphertexts uint32[..., 2, N] -> uint32[..., N]."""
    ctx = tables.ctx
    ct0 = jnp.asarray(ct0)
    if ct0.ndim < 2 or ct0.shape[-2:] != (2, tables.params.n):
        raise ValueError(f"expected switched ciphertexts uint32[..., 2, N={tables.params.n}], got {ct0.shape}")
    a = ntt(ct0[..., 1:2, :], ctx)
    s = jnp.broadcast_to(key.s_ntt[:1], a.shape)
    return add_mod(ct0[..., 0:1, :], intt(mul_mod(a, s, ctx), ctx), ctx)[..., 0, :]


def phase_int(key: RingKey, ct: jax.Array, tables: RingTables) -> np.ndarray:
    """Exact centered phase b + a s in (-Q/2, Q/2] of NTT-domain ciphertexts [..., 2, L, N], as a
    numpy object array of Python ints [..., N] (host-side; for noise measurement)."""
    ph = np.asarray(intt(gd.phase_ntt(ct, key.s_ntt, tables.ctx), tables.ctx)).astype(object)
    return crt_centered(ph, tables.params.primes)


def noise_log2(err) -> float:
    """log2 of max |err| over a numpy object/int array (0 -> 0.0)."""
    m = int(np.max(np.abs(np.asarray(err).astype(object)))) if np.size(err) else 0
    return math.log2(m) if m else 0.0
