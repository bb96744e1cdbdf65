"""The query engine: an encrypted table, a data-holder client, compiled (jitted) query programs,
the two-party inverse, and a plaintext reference.

**Parties.** The *client* (data holder) owns the keys: it encrypts the table once
(:meth:`Client.encrypt_table`), answers the inverse round trip (:meth:`Client.invert`) and reads
answers (:meth:`Client.decrypt`). The *server* holds the encrypted table and the evaluation keys
(relinearization + the layout's rotations) and runs :func:`compile_query` programs.

**Programs.** :func:`compile_query` turns a :class:`~.query.Query` into one jitted function of
(table, constants, context, keys) (two for the interactive queries: before and after the inverse
round trip). Plaintext constants (comparison constants' bit patterns, block selectors, blinding
factors) are encoded on the host and passed as arguments, never closed over: a first abstract
trace (``jax.eval_shape``) records which constants the program needs at which level and scale.
Tables of several ciphertexts per column run the per-ciphertext part under ``jax.vmap`` and sum
the chunks before the row sums.

**Two-party inverse** (CAT's multiply-inverse): the server draws r uniform in [2^15, 2^16)
(one per query for Avg, one per row for the ratio; :class:`jax_fhe.rns.HostRandom`) and sends
Enc(r x); the client decrypts y = r x, returns Enc(1/y) (Enc(0) where y rounds to 0: the
empty filter, a zero divisor, flagged in the answer), and the server multiplies by r: Enc(1/x).
The client only sees r x: r hides x's magnitude within a factor of 2, not its sign or zero-ness
(zero is exactly what the client must handle anyway).
"""
from __future__ import annotations

import dataclasses
import fractions
import time

import jax
import jax.numpy as jnp
import numpy as np

from ... import ckks
from ...ckks import Ciphertext, Plaintext
from ...rns import HostRandom
from ...rns.pytree import pytree_dataclass, static_field
from . import circuits as C
from .layout import Layout, bit_planes, check_column, from_bit_planes, make_layout
from .query import Cmp, Not, Or, Query

__all__ = ["Answer", "Client", "CompiledQuery", "EncryptedResult", "EncryptedTable", "R_BITS",
           "compile_query", "execute", "reference", "server_keys_steps"]

#: The blinding factor r is uniform in [2^(R_BITS-1), 2^R_BITS).
R_BITS = 16


@pytree_dataclass
class EncryptedTable:
    """Per column: ``planes`` (bit planes, uint32[chunks, 2, L, N]) and ``values`` (the value of
    row i in slot i of block 0, same shape), by name; ``layout`` is static."""

    planes: dict
    values: dict
    layout: Layout = static_field()

    @property
    def names(self) -> tuple:
        """Column names."""
        return tuple(sorted(self.planes))


def server_keys_steps(layout: Layout) -> tuple:
    """Rotation steps the server's evaluation keys must cover."""
    return layout.rotation_steps()


# -- the client ---------------------------------------------------------------------------------

class Client:
    """The data holder: keys, encryption of the table, the inverse round trip, decryption.

    ``ctx``: a CKKS context; ``rows``: table size (fixes the :class:`Layout`); ``rng``:
    HostRandom (None: os.urandom); ``level``: encryption level (default: the parameter set's
    encryption level); ``keys``: an existing KeySet (else one is generated with the layout's
    rotations)."""

    def __init__(self, ctx, rows: int, *, rng: HostRandom | None = None, level: int | None = None,
                 keys=None, bits: int = 32, progress: bool | None = None):
        self.ctx = ctx
        self.params = ctx.params
        self.layout = make_layout(rows, self.params, bits)
        self.level = self.params.default_level if level is None else self.params.check_level(level)
        self.rng = rng if rng is not None else HostRandom()
        self.keys = keys if keys is not None else ckks.keygen(
            ctx, self.rng, rotations=self.layout.rotation_steps(), progress=progress)

    @property
    def evaluation_keys(self):
        """What the server gets: relinearization and rotation keys."""
        return self.keys.evaluation

    def encrypt_table(self, columns: dict, *, values=None) -> EncryptedTable:
        """Encrypt {name: int values[rows]} (values in [0, 2^bits)) under the public key: every
        column as bit planes, and the columns named in ``values`` (default: all) also as values
        (what Avg and the ratio read)."""
        if not isinstance(columns, dict) or not columns:
            raise ValueError("encrypt_table: columns must be a non-empty dict {name: values}")
        want = set(columns) if values is None else set(values)
        if not want <= set(columns):
            raise ValueError(f"encrypt_table: values= names unknown columns {sorted(want - set(columns))}")
        lay, planes, values = self.layout, {}, {}
        for name, v in columns.items():
            v = check_column(v, lay, f"column {name!r}")
            planes[name] = self._encrypt(bit_planes(v, lay))
            if name not in want:
                continue
            vals = np.zeros((lay.chunks, lay.slots))
            r = lay.rows_per_ct
            padded = np.zeros(lay.chunks * r)
            padded[:lay.rows] = v
            vals[:, :r] = padded.reshape(lay.chunks, r)
            values[name] = self._encrypt(vals)
        return EncryptedTable(planes=planes, values=values, layout=lay)

    def _encrypt(self, x) -> Ciphertext:
        pt = ckks.encode(x, self.ctx, level=self.level)
        return ckks.encrypt(pt, self.ctx, self.keys.public, self.rng)

    def _read(self, ct: Ciphertext) -> np.ndarray:
        return ckks.decode(ckks.decrypt(ct, self.ctx, self.keys.secret), self.ctx, real=True)

    def invert(self, blinded: Ciphertext, bound_bits: int, *, slot: int | None = None):
        """The client's half of the inverse: decrypt y = r x (|y| < 2^bound_bits, and r >= 2^15,
        so a nonzero integer x gives |y| >= 2^15), return (Enc(1/y), zero) with Enc(1/y) at the
        same level, encoded at 2^bound_bits times the level's default scale (so 1/y keeps the
        level's precision), 0 at zero divisors, and ``zero`` (bool per slot) marking those zero
        divisors (|y| < 2^14: a nonzero integer x gives |y| >= 2^15, far above the decoding
        error). ``slot``: invert only y = Im(slot) of the decryption (a count packed in an
        imaginary part) and return 1/y in every slot."""
        if not isinstance(blinded, Ciphertext):
            raise TypeError(f"invert: expected a Ciphertext, got {type(blinded).__name__}")
        y = self._read(blinded)
        if slot is not None:
            y = np.full(y.shape[-1], ckks.decode(ckks.decrypt(blinded, self.ctx, self.keys.secret),
                                                  self.ctx)[..., slot].imag)
        zero = np.abs(y) < 2.0 ** (R_BITS - 2)  # x a nonzero integer: |r x| >= 2^(R_BITS - 1)
        inv = np.where(zero, 0.0, 1.0 / np.where(zero, 1.0, y))
        scale = self.params.default_scale(blinded.level) * 2.0 ** bound_bits
        pt = ckks.encode(inv, self.ctx, level=blinded.level, scale=scale)
        return ckks.encrypt(pt, self.ctx, self.keys.public, self.rng), zero

    def decrypt(self, result: "EncryptedResult") -> "Answer":
        """Read a query's answer (exact integers where the query is exact)."""
        q, lay = result.query, result.layout
        r = lay.rows_per_ct
        out = {}
        if "mask" in result.cts:
            m = self._read(result.cts["mask"]).reshape(lay.chunks, -1)[:, :r].reshape(-1)[:lay.rows]
            out["mask_error"] = float(np.max(np.abs(m - np.rint(m)))) if m.size else 0.0
            out["index"] = np.flatnonzero(np.rint(m) == 1)
        if "agg" in result.cts:  # count: Re(slot 0); sum/avg: sums Re(slot k R), count Im(slot R)
            agg = ckks.decode(ckks.decrypt(result.cts["agg"], self.ctx, self.keys.secret), self.ctx)
            c = agg[0].real if q.kind == "count" else agg[r].imag
            out["count"] = int(np.rint(c))
            out["count_error"] = abs(float(c) - out["count"])
        if q.kind in ("sum", "avg"):
            s = agg.real[::r][:lay.bits]
            ints = np.rint(s).astype(np.int64)
            out["sum"] = sum(int(v) << k for k, v in enumerate(ints))
            out["sum_error"] = float(np.max(np.abs(s - ints)))
        if q.kind == "avg":
            out["avg_exact"] = (fractions.Fraction(out["sum"], out["count"]) if out["count"] else None)
            avg = ckks.decode(ckks.decrypt(result.cts["avg"], self.ctx, self.keys.secret), self.ctx)
            out["avg"] = float(avg[0].real) if out["count"] else None
        if q.kind == "ratio":
            v = self._read(result.cts["ratio"]).reshape(lay.chunks, -1)[:, :r].reshape(-1)[:lay.rows]
            zero = (np.zeros(lay.rows, dtype=bool) if result.zero_divisors is None else  # Newton: none seen
                    np.asarray(result.zero_divisors).reshape(lay.chunks, -1)[:, :r].reshape(-1)[:lay.rows])
            passing = np.zeros(lay.rows, dtype=bool)
            passing[out["index"]] = True
            out["ratio"] = np.where(passing & ~zero, v, np.nan)
            z = ckks.decode(ckks.decrypt(result.cts["operands"], self.ctx, self.keys.secret), self.ctx)
            z = z.reshape(lay.chunks, lay.slots)
            out["operand_error"] = float(max(np.max(np.abs(z.real - np.rint(z.real))),
                                             np.max(np.abs(z.imag - np.rint(z.imag)))))
            a, b = from_bit_planes(z.real, lay), from_bit_planes(z.imag, lay)
            out["ratio_exact"] = [fractions.Fraction(int(a[i]), int(b[i]) ** 2) if passing[i] and b[i] else None
                                  for i in range(lay.rows)]
        out["timings"] = dict(result.timings)
        return Answer(query=q, **out)


@dataclasses.dataclass
class Answer:
    """A decrypted answer. ``index`` (rows passing), ``count``, ``sum`` (Python ints, exact);
    ``avg`` (float, through the encrypted inverse) and ``avg_exact`` (Fraction sum / count,
    None when no row passes); ``ratio`` (float per row: a / b^2 on passing rows through the
    encrypted inverse, NaN on the others and where b = 0) and ``ratio_exact`` (list per row:
    Fraction a / b^2 from the filtered operands, exact, None where ``ratio`` is NaN);
    ``*_error``: distance of the decrypted value to the integer it rounds to (a precision
    witness); ``timings``: seconds per stage."""

    query: Query
    index: np.ndarray | None = None
    count: int | None = None
    sum: int | None = None
    avg: float | None = None
    avg_exact: fractions.Fraction | None = None
    ratio: np.ndarray | None = None
    ratio_exact: list | None = None
    mask_error: float | None = None
    count_error: float | None = None
    sum_error: float | None = None
    operand_error: float | None = None
    timings: dict = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class EncryptedResult:
    """The server's encrypted outputs (``cts``: name -> Ciphertext), stage timings, and what
    the client learnt in the inverse round trip (``zero_divisors``, bool per slot)."""

    query: Query
    layout: Layout
    cts: dict
    timings: dict
    zero_divisors: object = None


# -- plaintext constants: recorded on an abstract trace, then passed as arguments ---------------

class _Consts:
    """Plaintext constants of a program. Recording pass (``prepared`` None): returns zero
    placeholders and notes key -> (values, level, scale, per_chunk, batch). Run pass: returns
    the prepared Plaintexts (jit arguments)."""

    def __init__(self, ctx, prepared=None, requests=None):
        self.ctx, self.prepared = ctx, prepared
        self.requests = {} if requests is None else requests

    def get(self, key, values, level: int, scale: float, *, per_chunk: bool = False,
            batch: int | None = None) -> Plaintext:
        """The plaintext ``values`` (host array; None: supplied at run time) at level/scale.
        ``per_chunk``: one per chunk, used inside the vmapped chunk program; ``batch``: a
        leading axis of that size, used outside it."""
        if self.prepared is not None:
            return self.prepared[key]
        p = self.ctx.params
        self.requests[key] = (values, level, scale, per_chunk, batch)
        data = jnp.zeros(((batch,) if batch else ()) + (len(p.rows(level)), p.n), jnp.uint32)
        return Plaintext(data=data, level=level, scale=scale, slots=p.slots, params=p)


def _mul_scale(ct: Ciphertext, ctx) -> float:
    """Scale for a plaintext multiplier that makes ct x pt rescale onto level - 1's default."""
    p = ctx.params
    return p.default_scale(ct.level - 1) * float(p.ratio(ct.level)) / ct.scale


# -- predicates ----------------------------------------------------------------------------------

def _leaf(cmp: Cmp, planes, consts: _Consts, lay: Layout, ctx, evk):
    a = planes[cmp.left]
    op = cmp.op
    if isinstance(cmp.right, str):
        b = planes[cmp.right]
        if op in ("==", "!="):
            e = C.equal(a, b, lay, ctx, evk)
            return e if op == "==" else C.not_(e, ctx)
        x, y = (a, b) if op in (">", "<=") else (b, a)  # G(x, y) = [x > y]
        g, _ = C.compare(x, y, lay, ctx, evk)
        return g if op in (">", "<") else C.not_(g, ctx)
    bits = C.constant_bits(cmp.right, lay)
    sc, p = _mul_scale(a, ctx), ctx.params
    key = ("const", cmp.left, int(cmp.right))
    pl = {"sign": consts.get(key + ("sign",), C.block_vector(2 * bits - 1, lay), a.level, sc),
          "low": consts.get(key + ("low",), C.block_vector(1 - bits, lay), a.level, sc),
          "off": consts.get(key + ("off",), C.block_vector(1 - bits, lay), a.level - 1,
                            p.default_scale(a.level - 1))}
    if op in ("==", "!="):
        e = C.equal_const(a, pl, lay, ctx, evk)
        return e if op == "==" else C.not_(e, ctx)
    g, e = C.compare_const(a, pl, lay, ctx, evk, need_equal=op in ("<", ">="))
    if op in (">", "<="):
        return g if op == ">" else C.not_(g, ctx)
    ge = ckks.add(g, e, ctx)  # [a >= c]
    return ge if op == ">=" else C.not_(ge, ctx)


def _mask(pred, planes, consts, lay, ctx, evk):
    if isinstance(pred, Cmp):
        return _leaf(pred, planes, consts, lay, ctx, evk)
    if isinstance(pred, Not):
        return C.not_(_mask(pred.a, planes, consts, lay, ctx, evk), ctx)
    a = _mask(pred.a, planes, consts, lay, ctx, evk)
    b = _mask(pred.b, planes, consts, lay, ctx, evk)
    return C.or_(a, b, ctx, evk) if isinstance(pred, Or) else C.and_(a, b, ctx, evk)


def _ones(ct, ctx):
    """A ciphertext of ones (ct - ct + 1: no level)."""
    return ckks.add(ckks.sub(ct, ct, ctx), 1.0, ctx)


# -- the programs --------------------------------------------------------------------------------

def _chunk_program(q: Query, lay: Layout, planes, values, consts, ctx, evk):
    """One chunk (one ciphertext per column): the filter mask and the per-slot products."""
    any_col = planes[sorted(planes)[0]]
    mask = _ones(any_col, ctx) if q.pred is None else _mask(q.pred, planes, consts, lay, ctx, evk)
    if q.kind == "index":
        return {"mask": mask}
    sel = consts.get(("select",), None, mask.level, _mul_scale(mask, ctx), per_chunk=True)
    m0 = ckks.mul(mask, sel, ctx)  # 1 on block 0's valid passing rows, 0 elsewhere
    out = {"m0": m0}
    if q.kind in ("sum", "avg"):
        # one ciphertext for one row sum: Re(block k) = mask x bit k, Im(block 1) = mask (the
        # count). (Avg's numerator, mask x value up to 2^32, gets its own: its error, ~2^32 times
        # the mask's, would spill into the real part of the slots it shares.)
        rep = C.replicate(m0, lay, ctx, evk)
        x = ckks.mul(rep, planes[q.cols[0]], ctx, evk)
        unit = consts.get(("i_block1",), C.block_vector(np.arange(lay.bits) == 1, lay) * 1j,
                          rep.level, _mul_scale(rep, ctx))
        x = ckks.add(x, ckks.mul(rep, unit, ctx), ctx)
        out["x"] = x
    if q.kind == "avg":
        out["vals"] = ckks.mul(m0, values[q.cols[0]], ctx, evk)
    if q.kind == "ratio":
        a, b = values[q.cols[0]], values[q.cols[1]]
        out["num"] = ckks.mul(a, m0, ctx, evk)
        out["den"] = ckks.mul(b, b, ctx, evk)
        # the filtered operands, exact: Re(block k) = mask x bit k of a, Im(block k) = of b
        ab = ckks.add(planes[q.cols[0]], ckks.mul_i(planes[q.cols[1]], ctx), ctx)
        out["operands"] = ckks.mul(C.replicate(m0, lay, ctx, evk), ab, ctx, evk)
    return out


def _bound_bits(q: Query, lay: Layout) -> int:
    """Bits of the largest blinded divisor r x the client may see."""
    if q.kind == "avg":
        return R_BITS + lay.rows.bit_length()
    return R_BITS + 2 * lay.bits


class CompiledQuery:
    """A query compiled for one table (layout, level, columns): ``phase1`` (and ``phase2`` for
    the interactive queries) are jitted; :func:`execute` runs them with the round trip.

    ``levels``: the level of every output (a depth report); ``constants``: the host-encoded
    plaintext arguments; ``compiler_options``: passed to ``jax.jit`` (e.g. CPU tests use
    ``{"xla_backend_optimization_level": 0}``: about 40% less compile time measured)."""

    def __init__(self, query: Query, table: EncryptedTable, ctx, evk, compiler_options=None):
        if not isinstance(query, Query):
            raise TypeError(f"compile_query: expected a Query (pdq.where(...).sum(...)), got {type(query).__name__}")
        if not isinstance(table, EncryptedTable):
            raise TypeError(f"compile_query: expected an EncryptedTable, got {type(table).__name__}")
        missing = query.columns() - set(table.planes)
        if missing:
            raise ValueError(f"compile_query: unknown column(s) {sorted(missing)}; the table has {list(table.names)}")
        need_values = set(query.cols) if query.kind in ("avg", "ratio") else set()
        if not need_values <= set(table.values):
            raise ValueError(f"compile_query: {query} reads the values of {sorted(need_values - set(table.values))}, "
                             "which the table holds as bit planes only (encrypt_table(..., values=...))")
        self.query, self.layout, self.ctx = query, table.layout, ctx
        need = _depth(query, table.layout)
        have = table.planes[table.names[0]].level
        if need > have:
            raise ValueError(f"compile_query: {query} needs {need} levels, the table is at level {have}; "
                             "encrypt it at a higher level (Client(level=...)) or split the filter")
        self._phase1 = jax.jit(self._p1, compiler_options=compiler_options)
        self._phase2 = jax.jit(self._p2, compiler_options=compiler_options)
        rec = _Consts(ctx)
        self._shapes1 = jax.eval_shape(lambda t, c, e: self._p1_body(t, rec, {}, c, e), table, ctx, evk)
        if query.interactive:
            inv = self._inverse_shape(self._shapes1, ctx)
            self._shapes2 = jax.eval_shape(lambda r, i, c, e: self._p2_body(r, i, rec, c, e),
                                           self._shapes1, inv, ctx, evk)
        self.requests = rec.requests
        self.constants, self.batched = self._prepare(rec.requests, None)
        self.levels = {k: v.level for k, v in self._shapes1.items()}
        if query.interactive:
            self.levels.update({k: v.level for k, v in self._shapes2.items()})

    def _inverse_shape(self, shapes, ctx):
        b = shapes["blinded"]
        scale = ctx.params.default_scale(b.level) * 2.0 ** _bound_bits(self.query, self.layout)
        return b.replace(scale=scale)

    def _prepare(self, requests, runtime: dict | None):
        """Encode the constants: static ones from their recorded values and the selectors from
        the layout (``runtime`` None), or only the run-time ones (keys in ``runtime``) from the
        given values."""
        lay, ctx = self.layout, self.ctx
        shared, batched = {}, {}
        for key, (vals, level, scale, per_chunk, batch) in requests.items():
            if runtime is not None:
                if vals is not None or key == ("select",) or key[0] not in runtime:
                    continue
                vals = runtime[key[0]]
            elif key == ("select",):
                vals = np.zeros((lay.chunks, lay.slots))
                vals[:, :lay.rows_per_ct] = lay.valid()
            elif vals is None:
                continue
            pt = ckks.encode(vals, ctx, level=level, scale=scale)
            (batched if per_chunk else shared)[key] = pt
        return shared, batched

    # phase 1: the mask, the aggregates, the blinded divisor
    def _p1_body(self, table, consts, batched, ctx, evk):
        q, lay = self.query, self.layout
        rec = consts.prepared is None

        def chunk(planes, values, b):
            c = consts if rec else _Consts(ctx, {**consts.prepared, **b})
            return _chunk_program(q, lay, planes, values, c, ctx, evk)

        out = jax.vmap(chunk)(table.planes, table.values, batched)
        if q.kind == "index":
            return {"mask": out["mask"]}
        if q.kind == "count":
            res = {"agg": C.rowsum(C.sum_chunks(out["m0"], ctx), lay, ctx, evk)}
        if q.kind in ("sum", "avg"):
            res = {"agg": C.rowsum(C.sum_chunks(out["x"], ctx), lay, ctx, evk)}
        if q.kind == "avg":  # r x (the packed sums): the client reads r count at Im(slot R)
            res["vsum"] = C.rowsum(C.sum_chunks(out["vals"], ctx), lay, ctx, evk)
            r = consts.get(("r",), None, res["agg"].level, 1.0)
            res["blinded"] = ckks.mul(res["agg"], r, ctx, rescale=False)
        if q.kind == "ratio":
            res = {"mask": out["m0"], "operands": out["operands"]}
            den, num = out["den"], out["num"]
            if q.inverse == "interactive":
                res["num"] = num
                r = consts.get(("r_rows", 1), None, den.level, _mul_scale(den, ctx), batch=lay.chunks)
                res["blinded"] = ckks.mul(den, r, ctx)
            else:
                lo, hi = q.den_range
                inv = C.newton_inverse(den, lo, hi, C.newton_iterations(lo, hi, 36), ctx, evk)
                res["ratio"] = ckks.mul(num, inv, ctx, evk)
        return res

    def _p1(self, table, shared, batched, ctx, evk):
        return self._p1_body(table, _Consts(ctx, shared), batched, ctx, evk)

    # phase 2: unblind the inverse and finish
    def _p2_body(self, res, inv, consts, ctx, evk):
        if self.query.kind == "avg":
            r = consts.get(("r",), None, inv.level, 1.0)
            inv_c = ckks.mul(inv, r, ctx, rescale=False)            # r / (r c) = 1 / c
            return {"avg": ckks.mul(res["vsum"], inv_c, ctx, evk)}
        p = ctx.params
        r = consts.get(("r_rows", 2), None, inv.level, float(p.ratio(inv.level)), batch=self.layout.chunks)
        inv_b = ckks.mul(inv, r, ctx)                                  # r / (r b^2) = 1 / b^2
        return {"ratio": ckks.mul(res["num"], inv_b, ctx, evk)}

    def _p2(self, res, inv, shared, ctx, evk):
        return self._p2_body(res, inv, _Consts(ctx, shared), ctx, evk)


def _depth(q: Query, lay: Layout) -> int:
    """Levels a query consumes (a lower bound the engine checks before tracing)."""
    d = 0 if q.pred is None else q.pred.depth(lay.log_bits)
    if q.kind == "index":
        return d
    if q.kind == "ratio" and q.inverse == "newton":
        return max(d + 3, 2 * C.newton_iterations(*q.den_range, 36) + 1)
    return d + {"count": 1, "sum": 2, "avg": 3, "ratio": 3}[q.kind]


def compile_query(query: Query, table: EncryptedTable, ctx, evk, *, compiler_options=None) -> CompiledQuery:
    """Compile ``query`` for ``table`` (layout, level): static constants encoded once; the
    programs compile on their first :func:`execute` (``compiler_options``: see
    :class:`CompiledQuery`)."""
    return CompiledQuery(query, table, ctx, evk, compiler_options)


def _block(x):
    jax.tree_util.tree_map(lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, x)
    return x


def execute(cq: CompiledQuery, table: EncryptedTable, client: Client, evk, *,
            rng: HostRandom | None = None) -> EncryptedResult:
    """Run a compiled query: phase 1 on the server, the inverse round trip with ``client`` when
    the query needs it, phase 2. ``rng`` draws the server's blinding factors (None: os.urandom).
    Timings (seconds, device work waited for): ``server`` (both phases), ``client_inverse``."""
    if not isinstance(cq, CompiledQuery):
        raise TypeError(f"execute: expected a CompiledQuery, got {type(cq).__name__}")
    if table.layout != cq.layout:
        raise ValueError("execute: the table's layout differs from the one the query was compiled for")
    q, lay, ctx = cq.query, cq.layout, cq.ctx
    rng = rng if rng is not None else HostRandom()
    timings = {}
    shared, batched = dict(cq.constants), cq.batched
    r = None
    if q.interactive:
        n = 1 if q.kind == "avg" else lay.chunks * lay.slots
        r = (rng.uint64((n,)) % (1 << (R_BITS - 1)) + (1 << (R_BITS - 1))).astype(np.float64)
        if q.kind == "avg":
            rt = {"r": np.full(lay.slots, r[0])}
        else:
            rt = {"r_rows": r.reshape(lay.chunks, lay.slots)}
        t0 = time.perf_counter()
        extra, _ = cq._prepare(cq.requests, rt)
        shared.update(extra)
        timings["blinding_encode"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = _block(cq._phase1(table, {k: v for k, v in shared.items() if k != ("r_rows", 2)}, batched, ctx, evk))
    timings["server"] = time.perf_counter() - t0
    if q.interactive:
        t0 = time.perf_counter()
        inv, zero = client.invert(res["blinded"], _bound_bits(q, lay),
                                  slot=lay.rows_per_ct if q.kind == "avg" else None)
        timings["client_inverse"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        p2 = {k: v for k, v in shared.items() if k in (("r",), ("r_rows", 2))}
        res.update(_block(cq._phase2(res, inv, p2, ctx, evk)))
        timings["server"] += time.perf_counter() - t0
    keep = {"index": ("mask",), "count": ("agg",), "sum": ("agg",), "avg": ("agg", "avg"),
            "ratio": ("mask", "ratio", "operands")}[q.kind]
    return EncryptedResult(query=q, layout=lay, cts={k: res[k] for k in keep}, timings=timings,
                           zero_divisors=zero if q.interactive else None)


# -- the plaintext reference ----------------------------------------------------------------------

def _ref_mask(pred, cols: dict) -> np.ndarray:
    if isinstance(pred, Cmp):
        a = cols[pred.left].astype(object)
        b = cols[pred.right].astype(object) if isinstance(pred.right, str) else int(pred.right)
        op = pred.op
        return np.asarray({"<=": a <= b, "<": a < b, ">=": a >= b, ">": a > b, "==": a == b,
                           "!=": a != b}[op], dtype=bool)
    if isinstance(pred, Not):
        return ~_ref_mask(pred.a, cols)
    a, b = _ref_mask(pred.a, cols), _ref_mask(pred.b, cols)
    return (a | b) if isinstance(pred, Or) else (a & b)


def reference(query: Query, columns: dict) -> dict:
    """The query on plaintext columns (Python integers, exact): {"index", "count", "sum",
    "avg_exact" (Fraction or None), "ratio" (float64 per row, NaN where b = 0 or filtered out),
    "ratio_exact" (Fraction per row, None where "ratio" is NaN)}."""
    cols = {k: np.asarray(v).astype(np.int64) for k, v in columns.items()}
    n = len(next(iter(cols.values())))
    m = np.ones(n, dtype=bool) if query.pred is None else _ref_mask(query.pred, cols)
    out = {"index": np.flatnonzero(m), "count": int(m.sum())}
    if query.kind in ("sum", "avg"):
        out["sum"] = sum(int(x) for x in cols[query.cols[0]][m])
    if query.kind == "avg":
        out["avg_exact"] = fractions.Fraction(out["sum"], out["count"]) if out["count"] else None
    if query.kind == "ratio":
        a, b = cols[query.cols[0]].astype(np.float64), cols[query.cols[1]].astype(np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            out["ratio"] = np.where(m & (b != 0), a / (b * b), np.nan)
        ai, bi = cols[query.cols[0]], cols[query.cols[1]]
        out["ratio_exact"] = [fractions.Fraction(int(x), int(y) ** 2) if ok and y else None
                              for x, y, ok in zip(ai, bi, m)]
    return out
