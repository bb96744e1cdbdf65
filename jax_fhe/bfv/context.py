"""The BFV evaluation context: every device table the scheme needs, as one pytree.

A :class:`BFVContext` holds the RNS tables of the key modulus QP (``ring``: q rows, then the
special rows), of the multiplication's basis Q B (``mul_ring``: q rows, then the auxiliary
rows), of the plaintext ring (``plain``: t and the slot permutation), the key-switching tables
of Q (method ``params.keyswitch``), the scale-and-round tables and the constants of encoding and
decryption. Pass it into jitted functions as an argument.
"""
from __future__ import annotations

import math


from .. import rns
from ..rlwe import keyswitch
from ..rlwe.plainmod import const_mod_t
from ..rns.crt import MixedRadixConv, make_mixed_radix_conv
from ..rns.pytree import HostTable, host_u32, pytree_dataclass, static_field, tables_field
from .encoder import PlainTables, make_plain_tables
from .params import BFVParams


@pytree_dataclass
class MulTables:
    """Scale-and-round of the tensor product (HPS-style, every conversion exact):

    lift:  centered conversion Q -> B (the ciphertexts' lift; also [t d]_Q in the rounding).
    back:  centered conversion B -> Q (the rounded quotient, |z| < B/4).
    t_mod: uint32[L + Lb]  t mod each prime of Q then B.
    q_inv: uint32[Lb]      Q^-1 mod each prime of B.
    """

    lift: MixedRadixConv
    back: MixedRadixConv
    t_mod: HostTable = static_field()
    q_inv: HostTable = static_field()


@pytree_dataclass
class CodecTables:
    """Constants of encoding round(Q m / t) = -[r m]_t t^-1 (r = Q mod t) and of decryption
    m = -[t x]_Q Q^-1 (mod t).

    r_mod_t:   uint32[3, 1], the mod-t table of r (:func:`jax_fhe.rlwe.plainmod.const_mod_t`).
    neg_t_inv: uint32[L]  -t^-1 mod each q prime.
    t_mod_q:   uint32[L]  t mod each q prime.
    to_t:      centered conversion Q -> t.
    neg_q_inv: uint32[3, 1], the mod-t table of -Q^-1.
    moduli:    uint32[L]  the q primes.
    """

    r_mod_t: HostTable = static_field()
    neg_t_inv: HostTable = static_field()
    t_mod_q: HostTable = static_field()
    to_t: MixedRadixConv
    neg_q_inv: HostTable = static_field()
    moduli: HostTable = static_field()


@pytree_dataclass
class BFVContext:
    """Device tables for one BFV parameter set (see the module docstring). Static: ``params``."""

    ring: rns.RNSContext
    mul_ring: rns.RNSContext
    plain: PlainTables
    keyswitch: tuple = tables_field()
    mul: MulTables = tables_field()
    codec: CodecTables = tables_field()
    params: BFVParams = static_field()

    error_factor = 1  # the keys' noise factor (BGV: t)

    def __repr__(self) -> str:
        return f"BFVContext({self.params!r})"

    @property
    def q_rows(self) -> tuple:
        """The rows of Q in the context's prime list (BFV has one level)."""
        return self.params.rows(0)

    def keyswitch_tables(self, level: int = 0):
        """The key-switching tables of Q (BFV has the one level 0)."""
        self.params.check_level(level)
        return self.keyswitch[level]


def make_context(params: BFVParams) -> BFVContext:
    """Build every table for ``params`` (host-side exact integers, uploaded to the default
    device). Move it with ``jax.device_put`` if needed."""
    if not isinstance(params, BFVParams):
        raise TypeError(f"make_context: expected BFVParams, got {type(params).__name__}")
    q, b, t = tuple(params.q_primes), tuple(params.aux_primes), params.plain_modulus
    nq, nb = len(q), len(b)
    big_q = math.prod(q)
    qb = q + b
    mul = MulTables(lift=make_mixed_radix_conv(qb, range(nq), range(nq, nq + nb)),
                    back=make_mixed_radix_conv(qb, range(nq, nq + nb), range(nq)),
                    t_mod=host_u32([t % p for p in qb]),
                    q_inv=host_u32([pow(big_q, -1, p) for p in b]))
    codec = CodecTables(r_mod_t=const_mod_t(big_q % t, t),
                        neg_t_inv=host_u32([(-pow(t, -1, p)) % p for p in q]),
                        t_mod_q=host_u32([t % p for p in q]),
                        to_t=make_mixed_radix_conv(q + (t,), range(nq), (nq,)),
                        neg_q_inv=const_mod_t(-pow(big_q, -1, t), t),
                        moduli=host_u32(q))
    ks = (keyswitch.make_tables(params.keyswitch, params.all_primes, params.rows(0), params.special_rows,
                                params.alpha),)
    return BFVContext(ring=rns.make_context(params.all_primes, params.n), mul_ring=rns.make_context(qb, params.n),
                      plain=make_plain_tables(t, params.n), keyswitch=ks, mul=mul, codec=codec, params=params)


def check_context(ctx, what: str) -> BFVContext:
    if not isinstance(ctx, BFVContext):
        raise TypeError(f"{what}: expected a BFVContext (jax_fhe.bfv.make_context), got {type(ctx).__name__}")
    return ctx
