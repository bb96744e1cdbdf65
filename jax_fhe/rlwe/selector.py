"""Hybrid or KLSS key switching, per parameter set and level, from recorded measurements.

A parameter set with ``keyswitch="auto"`` switches keys at each level with whichever method was
*measured* faster there (``benchmarks/bench_klss.py`` times both and writes the table this
module reads, ``keyswitch_measurements.json`` in this package: device, date, commit and, per
point, both latencies). Nothing is guessed: a level without a measurement on the current
platform ("gpu" or "cpu") uses hybrid, and so does a level where KLSS cannot be built (T would
need more than 16 primes). ``keyswitch="hybrid"`` or ``"klss"`` forces a method.

A point is keyed by a fingerprint of what the timing depends on: N, the primes, the level's
rows, alpha and the KLSS layout (block size, T), so a renamed parameter set keeps its
measurements and a changed one loses them.
"""
from __future__ import annotations

import contextlib
import hashlib
import json
from importlib import resources

import jax

from . import klss

MEASUREMENTS = "keyswitch_measurements.json"
_override: list = []


def load() -> dict:
    """The recorded measurements: {"about": str, "runs": [{"device", "platform", "date",
    "commit", "points": [{"fingerprint", "params", "level", "hybrid_ms", "klss_ms", ...}]}]}."""
    if _override:
        return _override[-1]
    return json.loads(resources.files(__package__).joinpath(MEASUREMENTS).read_text())


@contextlib.contextmanager
def measurements_from(table: dict):
    """Use ``table`` (the structure :func:`load` returns) instead of the package's recorded
    measurements inside the ``with`` block (tests; checking a new benchmark's table)."""
    if not isinstance(table, dict) or not isinstance(table.get("runs"), list):
        raise TypeError("measurements_from: expected {'runs': [...]} as load() returns")
    _override.append(table)
    try:
        yield
    finally:
        _override.pop()


def platform() -> str:
    """The platform measurements are looked up for: "gpu" or "cpu" (JAX's default backend)."""
    b = jax.default_backend()
    return "gpu" if b in ("gpu", "cuda", "rocm") else b


def klss_layout_of(params):
    """The KLSS layout ``params`` would use (its klss_* options), or None where KLSS cannot be
    built for it."""
    from .keyswitch import method_options  # noqa: PLC0415 (keyswitch imports this module lazily)
    try:
        return klss.layout_for(params.all_primes, params.num_q, params.alpha, params.n,
                               **method_options("klss", params))
    except ValueError:
        return None


def fingerprint(params, level: int) -> str | None:
    """The key of a measurement point (None: KLSS cannot be built for ``params``)."""
    lay = klss_layout_of(params)
    if lay is None:
        return None
    data = (int(params.log_n), tuple(params.q_primes), tuple(params.p_primes), tuple(params.rows(level)),
            int(params.alpha), lay.block, lay.t_primes)
    return hashlib.sha256(repr(data).encode()).hexdigest()[:16]


def lookup(params, level: int, *, on: str | None = None):
    """The latest recorded point for ``params`` at ``level`` on platform ``on`` (default: the
    current one) and its run, or (None, None)."""
    fp = fingerprint(params, level)
    if fp is None:
        return None, None
    on = platform() if on is None else on
    found = (None, None)
    for run in load().get("runs", []):
        if run.get("platform") != on:
            continue
        for pt in run.get("points", []):
            if pt.get("fingerprint") == fp:
                found = (pt, run)  # later runs supersede earlier ones
    return found


def choose(params, level: int, *, on: str | None = None) -> str:
    """"klss" where a recorded measurement of ``params`` at ``level`` (on platform ``on``) has
    KLSS faster than hybrid, else "hybrid"."""
    pt, _ = lookup(params, level, on=on)
    if pt is None:
        return "hybrid"
    return "klss" if float(pt["klss_ms"]) < float(pt["hybrid_ms"]) else "hybrid"


def explain(params, *, on: str | None = None) -> list:
    """Per level: (level, method, why) for ``keyswitch="auto"``: the recorded times, or why
    there are none."""
    out = []
    lay_ok = klss_layout_of(params) is not None
    for level in range(params.max_level + 1):
        pt, run = lookup(params, level, on=on)
        if pt is None:
            why = ("KLSS cannot be built (T would need more than 16 primes)" if not lay_ok
                   else f"not measured on {platform() if on is None else on}: hybrid by default")
            out.append((level, "hybrid", why))
        else:
            m = "klss" if float(pt["klss_ms"]) < float(pt["hybrid_ms"]) else "hybrid"
            out.append((level, m, f"hybrid {pt['hybrid_ms']:.3f} ms, KLSS {pt['klss_ms']:.3f} ms "
                                  f"({run.get('device', '?')}, {run.get('date', '?')})"))
    return out
