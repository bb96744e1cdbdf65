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
   Where a CKKS rescale follows (divide by D, the product of basis rows it drops), a method
   may offer both divisions as one (:class:`Divide`: :func:`key_switch_divide`,
   :func:`mod_down_divide`): one rounding and one conversion from D + P, and no forward NTT of
   the result between ModDown and the rescale.

:func:`key_switch` and :func:`key_switch_decomposed` compute mod_down(product_extended(...)) as
the method's fused kernels do (bit for bit the same as the stages chained).

A method registers a :class:`Method`: its tables and key types, its table and key builders and
the stage functions. Hybrid key switching (:mod:`.hybrid`, dnum digits and special primes) and
gadget key switching (:mod:`.gadget`, the integer gadget of RGSW/PIR; no special primes) and
KLSS key switching (:mod:`.klss`, hybrid's digits multiplied through a second decomposition in
an auxiliary basis T) register here, without touching any scheme.

Tables of every method expose ``rows`` (the basis), ``special_rows`` and ``ext_rows``.

Schemes build their per-level tables and their keys from a parameter set with
:func:`level_tables` and :func:`gen_params_key`: they pass the method's options
(``RLWEParams.keyswitch_options``) and resolve ``keyswitch="auto"`` per level
(:func:`level_method`, from the measurements of :mod:`.selector`). Where a parameter set's
levels use several methods its keys are :class:`MultiKey` (one key per method; KLSS keys are
derived from the hybrid key, so both methods give the same bits).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Callable

import jax

from ..rns.pytree import pytree_dataclass

AUTO = "auto"

_METHODS: dict = {}
_BY_TABLES: dict = {}


@dataclasses.dataclass(frozen=True)
class Divide:
    """A method's ModDown merged with the rescale after it: the division by P D, D the product
    of basis rows ``drop_rows`` that the rescale drops, with one rounding.

    can:      (tables, drop_rows) -> bool: whether these tables can.
    switch:   (x, dec, key, ring, tables, drop_rows, add) -> uint32[..., 2, L - |D|, N]:
              round((product_extended + P add) / (P D)) over the kept rows; ``add``
              uint32[..., 2, L, N] or None.
    mod_down: (y, ring, tables, drop_rows) -> uint32[..., L - |D|, N]: round(y / (P D)).
    """

    can: Callable
    switch: Callable
    mod_down: Callable


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
    options:        names of the ``RLWEParams.keyswitch_options`` that ``make_tables`` and
                    ``gen_key`` take as keyword arguments (none by default).
    needs_chain:    ``make_tables`` also takes ``n`` (the ring degree) and ``num_q`` (the number
                    of q primes: rows at or above it are special), facts of the whole chain.
    derive_key:     optional (hybrid_key, ring, *, num_q, alpha, **options) -> key: this
                    method's key from a hybrid key (the same first level), used where a
                    parameter set's levels mix methods (:class:`MultiKey`).
    divide:         optional :class:`Divide`: ModDown merged with a following rescale.
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
    options: tuple = ()
    needs_chain: bool = False
    derive_key: Callable | None = None
    divide: Divide | None = None


@pytree_dataclass
class MultiKey:
    """Keys of several methods for one switch (s' -> s): ``keys`` {method name: key}. A
    parameter set whose levels use different methods (``keyswitch="auto"``) has these; every
    stage picks the key of its tables' method."""

    keys: dict

    def __repr__(self) -> str:
        return f"MultiKey({', '.join(f'{k}={v!r}' for k, v in sorted(self.keys.items()))})"


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


def _check_key(key, m: Method, what: str):
    """``key`` (or, from a :class:`MultiKey`, its key of method ``m``) checked against ``m``."""
    if isinstance(key, MultiKey):
        if m.name not in key.keys:
            raise TypeError(f"{what}: the tables are for {m.name} key switching, but the MultiKey holds "
                            f"keys for {sorted(key.keys)} only")
        key = key.keys[m.name]
    if not isinstance(key, m.key_type):
        raise TypeError(f"{what}: the tables are for {m.name} key switching, which needs a "
                        f"{m.key_type.__name__}, got {type(key).__name__}")
    return key


# -- building ---------------------------------------------------------------------------------------

def make_tables(name: str, primes, rows, special_rows, alpha: int, **options):
    """Tables of method ``name`` for data on ``rows`` of ``primes`` (special rows
    ``special_rows``, digits of ``alpha`` global rows); ``options`` are method-specific."""
    return method(name).make_tables(primes, rows, special_rows, alpha, **options)


def _own_options(m: Method, options: dict) -> dict:
    """The entries of ``options`` that method ``m`` takes."""
    return {k: v for k, v in options.items() if k in m.options}


def gen_key(name, ring, s_from, s_to, *, num_q: int, alpha: int, sigma: float, rng,
            tail: float = 6.0, tables=None, error_factor: int = 1, a_seed: bytes | None = None, **options):
    """A key switching x s_from into a ciphertext under s_to (both NTT-domain secrets over every
    row of ``ring``; rows 0..num_q-1 are the q primes).

    name:    a method name, or a tuple of names (one key per method: a :class:`MultiKey`, where
             methods with ``derive_key`` derive theirs from the hybrid key); with ``tables`` the
             tables' method.
    error_factor: the key's noise is f e (BGV: f = t, so that key switching adds a multiple of t).
    a_seed:  draw the key's uniform parts from this public seed (recorded on the key; see
             :func:`jax_fhe.rlwe.encrypt_sk`); methods whose keys cannot record it refuse it.
    options: method-specific options (``RLWEParams.keyswitch_options``); each method takes its own.
    """
    names = (name,) if isinstance(name, str) else tuple(dict.fromkeys(name))
    if tables is not None:
        names = (method_of(tables).name,)
    if not names:
        raise ValueError("gen_key: no key-switching method named")
    common = dict(num_q=num_q, alpha=alpha, sigma=sigma, rng=rng, tail=tail, error_factor=error_factor)
    if a_seed is not None:  # methods without seeding keep their signature
        common["a_seed"] = a_seed
    if len(names) == 1:
        m = method(names[0])
        return m.gen_key(ring, s_from, s_to, tables=tables, **common, **_own_options(m, options))
    keys = {}
    base = None
    if "hybrid" in names and any(method(n).derive_key for n in names if n != "hybrid"):
        base = method("hybrid").gen_key(ring, s_from, s_to, **common)
        keys["hybrid"] = base
    for n in names:
        if n in keys:
            continue
        m = method(n)
        if base is not None and m.derive_key is not None:
            keys[n] = m.derive_key(base, ring, num_q=num_q, alpha=alpha, **_own_options(m, options))
        else:
            keys[n] = m.gen_key(ring, s_from, s_to, **common, **_own_options(m, options))
    return MultiKey(keys=keys)


# -- from a parameter set ------------------------------------------------------------------------------

def check_params(params) -> None:
    """Raise unless ``params.keyswitch`` names a registered method (or "auto") and every entry of
    ``params.keyswitch_options`` is an option of some registered method (called by RLWEParams).
    Options of a method the set does not use are kept and ignored, so that forcing a method
    (``dataclasses.replace(params, keyswitch="hybrid")``) needs no other change."""
    name = params.keyswitch
    if name != AUTO and name not in _METHODS:
        raise ValueError(f"{params.name}: unknown key-switching method {name!r}; choose "
                         f"{[AUTO, *methods()]}")
    known = {o for m in _METHODS.values() for o in m.options}
    unknown = sorted(k for k, _ in params.keyswitch_options if k not in known)
    if unknown:
        raise ValueError(f"{params.name}: unknown keyswitch option(s) {unknown}; the registered methods "
                         f"take {sorted(known)}")


def method_options(name: str, params) -> dict:
    """The options method ``name`` takes from ``params`` (its ``keyswitch_options``)."""
    return _own_options(method(name), dict(params.keyswitch_options))


def level_method(params, level: int) -> str:
    """The key-switching method of ``level``: ``params.keyswitch``, or for "auto" the faster of
    hybrid and KLSS as recorded for this parameter set and level (:func:`.selector.choose`)."""
    params.check_level(level)
    if params.keyswitch != AUTO:
        return params.keyswitch
    from . import selector  # noqa: PLC0415 (the selector builds KLSS layouts; imported on demand)
    return selector.choose(params, level)


def params_methods(params) -> tuple:
    """The methods the levels of ``params`` use (sorted names)."""
    if params.keyswitch != AUTO:
        return (params.keyswitch,)
    return tuple(sorted({level_method(params, l) for l in range(params.max_level + 1)}))


def level_tables(params, level: int, special_rows=None):
    """The key-switching tables of ``level``'s basis for ``params`` (its method at that level,
    with the method's options). ``special_rows``: a subset of the special rows (e.g.
    bootstrapping's small-modulus key), default all."""
    name = level_method(params, level)
    m = method(name)
    opts = method_options(name, params)
    if m.needs_chain:
        opts.update(n=params.n, num_q=params.num_q)
    special = params.special_rows if special_rows is None else tuple(special_rows)
    return m.make_tables(params.all_primes, params.rows(level), special, params.alpha, **opts)


def gen_params_key(params, ring, s_from, s_to, *, rng, tail: float = 6.0, tables=None):
    """A key of ``params``'s method(s) (:func:`gen_key` with every level's method, its options,
    num_q, alpha and sigma); with ``tables``, a key for those tables only."""
    return gen_key(params_methods(params), ring, s_from, s_to, num_q=params.num_q, alpha=params.alpha,
                   sigma=params.sigma, rng=rng, tail=tail, tables=tables, **dict(params.keyswitch_options))


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
    key = _check_key(key, m, "product_extended")
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
    key = _check_key(key, m, "key_switch")
    return m.switch(x, dec, key, ring, tables)


def key_switch(x, key, ring, tables) -> jax.Array:
    """(c0, c1) = uint32[..., 2, L, N] with c0 + c1 s = x s' + (small), for x: uint32[..., L, N]
    (NTT, basis ``tables.rows``) and ``key`` switching from s' to s."""
    m = method_of(tables)
    key = _check_key(key, m, "key_switch")
    return m.switch(x, m.decompose(x, ring, tables), key, ring, tables)


def can_divide(tables, drop_rows) -> bool:
    """Whether the method of ``tables`` can merge ModDown with a rescale dropping the basis rows
    ``drop_rows`` (:func:`key_switch_divide`, :func:`mod_down_divide`)."""
    d = method_of(tables).divide
    return d is not None and d.can(tables, tuple(drop_rows))


def _divide(tables, drop_rows, what: str) -> tuple:
    """(the method of ``tables``, its :class:`Divide`), or ValueError when it cannot."""
    m = method_of(tables)
    if m.divide is None or not m.divide.can(tables, tuple(drop_rows)):
        raise ValueError(f"{what}: {m.name} key switching with {type(tables).__name__} cannot merge "
                         f"ModDown with a rescale dropping rows {tuple(drop_rows)} (check can_divide)")
    return m, m.divide


def key_switch_divide(x, key, ring, tables, drop_rows, add=None) -> jax.Array:
    """round((P add + key product of x) / (P D)) with one rounding: :func:`key_switch` of x
    plus ``add`` (uint32[..., 2, L, N] or None), rescaled by D, the product of the basis rows
    ``drop_rows``. Returns uint32[..., 2, L - |D|, N] over the other basis rows (NTT)."""
    m, d = _divide(tables, drop_rows, "key_switch_divide")
    key = _check_key(key, m, "key_switch_divide")
    return d.switch(x, m.decompose(x, ring, tables), key, ring, tables, tuple(drop_rows), add)


def mod_down_divide(y, ring, tables, drop_rows) -> jax.Array:
    """round(y / (P D)) with one rounding: :func:`mod_down` of extended-basis data y and the
    rescale dropping the basis rows ``drop_rows`` (product D). Returns uint32[..., L - |D|, N]."""
    return _divide(tables, drop_rows, "mod_down_divide")[1].mod_down(y, ring, tables, tuple(drop_rows))
