"""Key switching: one interface, several methods.

Key switching turns x s' (x: one polynomial, s': some secret) into a ciphertext (c0, c1) under s
with c0 + c1 s = x s' + (small). Schemes use it for relinearization (s' = s^2), automorphisms
(s' = sigma(s)) and secret changes, and never name the method: a parameter set names it
(``RLWEParams.keyswitch``), its context builds that method's *tables* per level
(:func:`make_tables`), and every other call dispatches on the tables' type.

The stages, each a function here so that circuits can hoist and accumulate:

1. :func:`decompose` (hoistable): what the method computes from x alone (hybrid: ModUp of every
   digit into the extended basis; gadget: the signed digits). Compute it once to switch x
   under several keys (hoisted rotations).
2. :func:`product_extended`: the key product *without* ModDown, uint32[..., 2, L + a, N] over
   :func:`extended_rows` (the basis then the special rows). Products under several keys can be
   added there (and permuted by automorphisms, which act slot-wise on any rows) before one
   :func:`mod_down` (double hoisting). :func:`lift_extended` brings another ciphertext part into
   the same basis (times P), so that it can join the sum.
3. :func:`mod_down`: divide by P with rounding, back to the basis.

:func:`key_switch` and :func:`key_switch_decomposed` compute mod_down(product_extended(...)) as
the method's fused kernels do (bit for bit the same as the stages chained).

A method registers a :class:`Method`: its tables and key types, its table and key builders and
the stage functions. Hybrid key switching (:mod:`.hybrid`, dnum digits and special primes) and
gadget key switching (:mod:`.gadget`, the integer gadget of RGSW/PIR; no special primes) are
registered here; a third (KLSS) adds itself the same way, without touching any scheme.

Tables of every method expose ``rows`` (the basis), ``special_rows`` and ``ext_rows``.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax

_METHODS: dict = {}
_BY_TABLES: dict = {}


@dataclasses.dataclass(frozen=True)
class Method:
    """One key-switching method.

    name:           the name parameter sets use (``RLWEParams.keyswitch``).
    tables_type:    the pytree type of its per-basis tables (dispatch key).
    key_type:       the pytree type of its keys.
    make_tables:    (primes, rows, special_rows, alpha, **options) -> tables. A method with a
                    ModDown takes the option ``plain_modulus`` (an int t, or None): then its
                    ModDown divides with the t-correction (:mod:`.plainmod`), so that the phase
                    stays the same mod t (BGV, whose keys carry the noise t e).
    gen_key:        (ring, s_from, s_to, *, num_q, alpha, sigma, rng, tail, tables=None,
                    error_factor=1[, a_seed]) -> key; the key's noise is multiplied by
                    error_factor (BGV passes its plaintext modulus t); ``a_seed`` (optional
                    support): draw the uniform parts from that public seed and record it on the key.
    decompose:      (x, ring, tables) -> decomposition (a pytree).
    product_extended: (x, dec, key, ring, tables) -> uint32[..., 2, len(ext_rows), N].
    mod_down:       (y, ring, tables) -> uint32[..., len(rows), N] (y: [..., len(ext_rows), N]).
    switch:         (x, dec, key, ring, tables) -> uint32[..., 2, len(rows), N]: the fused
                    mod_down(product_extended(...)).
    lift_extended:  (x, ring, tables) -> P x on the basis rows, 0 on the special rows.
    """

    name: str
    tables_type: type
    key_type: type
    make_tables: Callable
    gen_key: Callable
    decompose: Callable
    product_extended: Callable
    mod_down: Callable
    switch: Callable
    lift_extended: Callable


def register(method: Method) -> Method:
    """Make ``method`` available by name and by its tables' type."""
    if not isinstance(method, Method):
        raise TypeError(f"register: expected a keyswitch.Method, got {type(method).__name__}")
    _METHODS[method.name] = method
    _BY_TABLES[method.tables_type] = method
    return method


def methods() -> tuple:
    """The names of the registered methods."""
    return tuple(sorted(_METHODS))


def method(name: str) -> Method:
    """The registered method called ``name``."""
    try:
        return _METHODS[name]
    except KeyError:
        raise ValueError(f"unknown key-switching method {name!r}; registered: {list(methods())}") from None


def method_of(tables) -> Method:
    """The method whose tables ``tables`` are."""
    m = _BY_TABLES.get(type(tables))
    if m is None:
        raise TypeError(f"expected key-switching tables (one of "
                        f"{[t.__name__ for t in _BY_TABLES]}), got {type(tables).__name__}")
    return m


def _check_key(key, m: Method, what: str) -> None:
    if not isinstance(key, m.key_type):
        raise TypeError(f"{what}: the tables are for {m.name} key switching, which needs a "
                        f"{m.key_type.__name__}, got {type(key).__name__}")


# -- building ---------------------------------------------------------------------------------------

def make_tables(name: str, primes, rows, special_rows, alpha: int, **options):
    """Tables of method ``name`` for data on ``rows`` of ``primes`` (special rows
    ``special_rows``, digits of ``alpha`` global rows); ``options`` are method-specific."""
    return method(name).make_tables(primes, rows, special_rows, alpha, **options)


def gen_key(name: str, ring, s_from, s_to, *, num_q: int, alpha: int, sigma: float, rng,
            tail: float = 6.0, tables=None, error_factor: int = 1, a_seed: bytes | None = None):
    """A key of method ``name`` switching x s_from into a ciphertext under s_to (both NTT-domain
    secrets over every row of ``ring``; rows 0..num_q-1 are the q primes). ``error_factor``:
    the key's noise is f e (BGV: f = t, so that key switching adds a multiple of t). ``a_seed``:
    draw the key's uniform parts from this public seed (recorded on the key; see
    :func:`jax_fhe.rlwe.encrypt_sk`)."""
    extra = {} if a_seed is None else {"a_seed": a_seed}  # methods without seeding keep working
    return method(name).gen_key(ring, s_from, s_to, num_q=num_q, alpha=alpha, sigma=sigma, rng=rng,
                                tail=tail, tables=tables, error_factor=error_factor, **extra)


# -- the stages ---------------------------------------------------------------------------------------

def extended_rows(tables) -> tuple:
    """The rows of the extended basis of ``tables``: the basis, then the special rows."""
    method_of(tables)
    return tuple(tables.ext_rows)


def decompose(x, ring, tables):
    """The hoistable part of switching x: uint32[..., L, N] (NTT, basis ``tables.rows``)."""
    return method_of(tables).decompose(x, ring, tables)


def product_extended(x, dec, key, ring, tables) -> jax.Array:
    """The key product of x (with its decomposition ``dec``) in the extended basis, without
    ModDown: uint32[..., 2, len(ext_rows), N] (NTT)."""
    m = method_of(tables)
    _check_key(key, m, "product_extended")
    return m.product_extended(x, dec, key, ring, tables)


def mod_down(y, ring, tables) -> jax.Array:
    """Divide by P with rounding: uint32[..., len(ext_rows), N] -> uint32[..., len(rows), N] (NTT)."""
    return method_of(tables).mod_down(y, ring, tables)


def lift_extended(x, ring, tables) -> jax.Array:
    """P x on the basis rows and 0 on the special rows: uint32[..., L, N] ->
    uint32[..., len(ext_rows), N], so that mod_down(lift_extended(x)) == x exactly."""
    return method_of(tables).lift_extended(x, ring, tables)


def key_switch_decomposed(x, dec, key, ring, tables) -> jax.Array:
    """:func:`key_switch` of x given its decomposition: uint32[..., 2, L, N] (NTT)."""
    m = method_of(tables)
    _check_key(key, m, "key_switch")
    return m.switch(x, dec, key, ring, tables)


def key_switch(x, key, ring, tables) -> jax.Array:
    """(c0, c1) = uint32[..., 2, L, N] with c0 + c1 s = x s' + (small), for x: uint32[..., L, N]
    (NTT, basis ``tables.rows``) and ``key`` switching from s' to s."""
    m = method_of(tables)
    _check_key(key, m, "key_switch")
    return m.switch(x, m.decompose(x, ring, tables), key, ring, tables)
