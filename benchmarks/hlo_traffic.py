"""Memory traffic of a compiled JAX function, estimated from its optimized HLO.

``traffic(fn, *args)`` compiles ``jax.jit(fn)`` for ``args`` (arrays or ``jax.ShapeDtypeStruct``
leaves, so nothing large is allocated) and walks the entry computation of
``compiled.as_text()``: every top-level instruction writes its result buffer once (while-loop
bodies count once per known trip count) and reads its operand buffers. Instructions that move
no data (parameter, constant, tuple, get-tuple-element, bitcast) are skipped. The estimate is
an upper bound on reads (a fusion that slices an operand is charged the whole operand) and
exact on writes for the buffers XLA materialises. Compiled on the CPU this approximates the
GPU's fusion decisions (same HLO passes for the big element-wise fusions; the GPU may fuse a
little more, e.g. multi-output fusions), which is what the byte comparisons here assume.

Stage-by-stage key switch at Theodosian's (L, alpha, beta) = (48, 12, 4), N = 2^16::

    python benchmarks/hlo_traffic.py                   # batch 1 and vmap batch 8
    python benchmarks/hlo_traffic.py --batch 1 --top 12 --hlo-dir /tmp/hlo
    python benchmarks/hlo_traffic.py --ops 16 28         # HMult / HRot / Rescale, n16-boot
    python benchmarks/hlo_traffic.py --bootstrap         # the whole n16-boot bootstrap (abstract plans/keys)
    python benchmarks/hlo_traffic.py --bootstrap --preset toy-boot-n12 --slots 64

``--bootstrap`` compiles ``circuits.bootstrap`` for one ciphertext with abstract plans (the
diagonals as ShapeDtypeStructs: nothing is encoded) and abstract keys, and prints the kernel
count (custom calls and XLA fusions) and bytes written by kernel kind: the CPU measure of the
bootstrap's launch count and HBM writes.

Reads include whole table operands (e.g. the NTT's [T, N] twiddles even when it uses L rows), so
they are an upper bound; the instruction count is the number of kernels launched.

As a library: ``from hlo_traffic import traffic, print_traffic``.
"""
from __future__ import annotations

import argparse
import collections
import dataclasses
import os
import re
import sys

import jax
import numpy as np

_DTYPE_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "f16": 2, "bf16": 2,
                "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8, "c64": 8, "c128": 16}
_NO_TRAFFIC = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast", "after-all",
               "partition-id", "replica-id"}
_SHAPE = re.compile(r"\b(pred|[suf]\d+|bf16|c64|c128)\[([\d,]*)\]")
_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s+([\w\-]+)\((.*)$")
_OPERAND = re.compile(r"%([\w.\-]+)")
_COMP = re.compile(r"^\s*(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$")


def _bytes(shape_text: str) -> int:
    """Bytes of every array shape in ``shape_text`` (a tuple's elements summed)."""
    total = 0
    for dt, dims in _SHAPE.findall(shape_text):
        n = int(np.prod([int(d) for d in dims.split(",") if d], dtype=np.int64)) if dims else 1
        total += n * _DTYPE_BYTES.get(dt, 4)
    return total


@dataclasses.dataclass
class Instr:
    name: str
    opcode: str
    written: int
    read: int
    target: str  # custom-call target or fusion kind, for the table
    line: str


def _split_operands(rest: str) -> str:
    """The text inside the opcode's parentheses (balanced)."""
    depth = 1
    for i, ch in enumerate(rest):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return rest[:i]
    return rest


def parse_computations(text: str) -> tuple[dict, str]:
    """{computation name: [Instr]} and the entry computation's name."""
    comps, entry, cur, shapes = {}, None, None, {}
    for line in text.splitlines():
        if cur is None:
            m = _COMP.match(line)
            if m and "=" not in line.split("{")[0].split("(")[0]:
                cur = m.group(2)
                comps[cur] = []
                if m.group(1):
                    entry = cur
            continue
        if line.strip() == "}":
            cur = None
            continue
        m = _INSTR.match(line)
        if not m:
            continue
        name, shape, opcode, rest = m.groups()
        operands = _split_operands(rest)
        target = ""
        if opcode == "custom-call":
            t = re.search(r'custom_call_target="([^"]+)"', rest)
            target = t.group(1) if t else ""
        elif opcode == "fusion":
            t = re.search(r"kind=(k\w+)", rest)
            target = t.group(1) if t else ""
        shapes[name] = _bytes(shape)
        # operands print as %name (no shape) in optimized HLO: look their sizes up
        read = sum(shapes.get(o, 0) for o in _OPERAND.findall(operands))
        comps[cur].append(Instr(name, opcode, shapes[name], read, target, line.strip()))
    return comps, entry


def _while_parts(line: str) -> tuple[str, int]:
    body = re.search(r"body=%?([\w.\-]+)", line)
    trip = re.search(r'known_trip_count[^0-9]*(\d+)', line)
    return (body.group(1) if body else ""), (int(trip.group(1)) if trip else 1)


def walk(comps: dict, name: str, times: int = 1, out=None) -> list:
    """[(Instr, multiplicity)] for the top-level instructions of ``name`` and, recursively, of
    while bodies (times their trip count) and called computations."""
    out = [] if out is None else out
    for ins in comps.get(name, []):
        if ins.opcode == "while":
            body, trip = _while_parts(ins.line)
            walk(comps, body, times * trip, out)
            continue
        if ins.opcode in ("call", "conditional"):
            for callee in re.findall(r"(?:to_apply|branch_computations)=\{?%?([\w.\-]+)", ins.line):
                walk(comps, callee, times, out)
            continue
        if ins.opcode in _NO_TRAFFIC:
            continue
        out.append((ins, times))
    return out


@dataclasses.dataclass
class Traffic:
    rows: list        # [(Instr, multiplicity)]
    text: str         # the optimized HLO

    @property
    def written(self) -> int:
        return sum(i.written * t for i, t in self.rows)

    @property
    def read(self) -> int:
        return sum(i.read * t for i, t in self.rows)

    @property
    def custom_call_read(self) -> int:
        return sum(i.read * t for i, t in self.rows if i.opcode == "custom-call")

    def by_kind(self) -> dict:
        """{kind: [count, written, read]}; kind is the opcode, with the custom-call target."""
        acc = collections.defaultdict(lambda: [0, 0, 0])
        for i, t in self.rows:
            kind = i.opcode + (f":{i.target}" if i.target else "")
            a = acc[kind]
            a[0] += t
            a[1] += i.written * t
            a[2] += i.read * t
        return dict(acc)


def traffic(fn, *args, static_argnums=()) -> Traffic:
    """Compile ``jax.jit(fn)`` for ``args`` (arrays or ShapeDtypeStructs) and estimate its
    memory traffic."""
    compiled = jax.jit(fn, static_argnums=static_argnums).lower(*args).compile()
    text = compiled.as_text()
    comps, entry = parse_computations(text)
    return Traffic(rows=walk(comps, entry), text=text)


def abstract(tree):
    """The pytree with every array leaf replaced by a ShapeDtypeStruct."""
    return jax.tree.map(lambda x: jax.ShapeDtypeStruct(x.shape, x.dtype), tree)


MB = 1e6


def print_traffic(label: str, t: Traffic, top: int = 0, file=sys.stdout) -> None:
    print(f"\n== {label}: written {t.written / MB:.1f} MB, read {t.read / MB:.1f} MB "
          f"(custom calls read {t.custom_call_read / MB:.1f} MB), {len(t.rows)} instructions",
          file=file)
    print(f"  {'kind':42s} {'count':>6s} {'written MB':>11s} {'read MB':>9s}", file=file)
    for kind, (n, w, r) in sorted(t.by_kind().items(), key=lambda kv: -kv[1][1]):
        print(f"  {kind:42s} {n:6d} {w / MB:11.1f} {r / MB:9.1f}", file=file)
    if top:
        print(f"  top {top} by bytes written:", file=file)
        for ins, m in sorted(t.rows, key=lambda r: -r[0].written * r[1])[:top]:
            print(f"    {ins.written * m / MB:8.1f} MB  {ins.line[:150]}", file=file)


# -- the key switch at (48, 12, 4) ---------------------------------------------------------------

def key_switch_inputs(n: int, big_l: int, alpha: int):
    """(x, key, ring, tables) as in bench_ckks.bench_key_switch, with the key abstract
    (ShapeDtypeStruct: no keygen); tables are real (they are small)."""
    from jax_fhe import rlwe, rns
    qs = rns.ntt_primes(30, big_l, n)
    ps = rns.ntt_primes(31, alpha, n, exclude=qs)
    primes = qs + ps
    ring = rns.make_context(primes, n)
    rows, special = tuple(range(big_l)), tuple(range(big_l, big_l + alpha))
    tables = rlwe.make_hybrid_tables(primes, rows, special, alpha)
    dnum = -(-big_l // alpha)
    key = rlwe.KeySwitchKey(data=jax.ShapeDtypeStruct((dnum, 2, len(primes), n), np.uint32),
                            alpha=alpha, num_q=big_l)
    x = jax.ShapeDtypeStruct((big_l, n), np.uint32)
    return x, key, ring, tables


def key_switch_stages(n: int, big_l: int, alpha: int, batch: int) -> dict:
    """{stage: Traffic} for mod_up, key_inner_product, mod_down and the whole key_switch,
    vmapped over ``batch`` ciphertexts when batch > 1 (as bench_ckks does)."""
    from jax_fhe import rlwe
    x, key, ring, tables = key_switch_inputs(n, big_l, alpha)
    beta, ext = len(tables.digits), len(tables.ext_rows)
    lead = (batch,) if batch > 1 else ()
    sds = lambda *shape: jax.ShapeDtypeStruct(lead + shape, np.uint32)  # noqa: E731
    vm = (lambda f, k: jax.vmap(f, in_axes=(0,) + (None,) * k)) if batch > 1 else (lambda f, k: f)
    return {
        "ModUp": traffic(vm(rlwe.mod_up, 2), sds(big_l, n), ring, tables),
        "inner product": traffic(vm(rlwe.key_inner_product, 3), sds(beta, ext, n), key, ring, tables),
        "ModDown": traffic(vm(rlwe.mod_down, 2), sds(2, ext, n), ring, tables),
        "key switch": traffic(vm(rlwe.key_switch, 3), sds(big_l, n), key, ring, tables),
    }


def ckks_op_stages(level: int | None = None) -> dict:
    """{op: Traffic} for HMult (relinearize + rescale), HRot (1 step) and Rescale of one
    n16-boot ciphertext at ``level`` (default: the parameter set's default level), with the
    context restricted to that level (as bench_ckks passes it) and abstract keys."""
    from jax_fhe import ckks, rlwe
    p = ckks.ckks_n16_boot()
    level = p.default_level if level is None else level
    ctx = abstract(ckks.make_context(p).for_levels([level]))
    dnum = -(-p.num_q // p.alpha)
    key = rlwe.KeySwitchKey(data=jax.ShapeDtypeStruct((dnum, 2, len(p.all_primes), p.n), np.uint32),
                            alpha=p.alpha, num_q=p.num_q)
    evk = ckks.EvalKeys(relin=key, rotations={1: key}, conjugation=None, params=p)
    ct = ckks.Ciphertext(data=jax.ShapeDtypeStruct((2, len(p.rows(level)), p.n), np.uint32), level=level,
                         scale=p.default_scale(level), slots=p.slots, params=p)
    fns = {"HMult": lambda a, c, e: ckks.mul(a, a, c, e), "HRot": lambda a, c, e: ckks.rotate(a, 1, c, e),
           "Rescale": lambda a, c, e: ckks.rescale(a, c)}
    return {name: traffic(f, ct, ctx, evk) for name, f in fns.items()}


def _abstract_linear_transform(diags, ctx, level, *, baby=None, giant_cost=2.0, scale=None):
    """:func:`jax_fhe.circuits.lintrans.make_linear_transform` with the plan's structure only:
    the diagonals' data is a ShapeDtypeStruct (no host encoding)."""
    from jax_fhe.circuits import lintrans
    p = ctx.params
    diags, n = lintrans._check_diags(diags, None, "make_linear_transform")
    b, groups = lintrans.bsgs_split(diags, n, baby=baby, giant_cost=giant_cost)
    giants, count = [], 0
    for g, bs in groups.items():
        giants.append((g, tuple((bb, count + i) for i, bb in enumerate(bs))))
        count += len(bs)
    rows = len(p.rows(level)) + len(ctx.keyswitch_tables(level).special_rows)
    data = jax.ShapeDtypeStruct((count, rows, p.n), np.uint32)
    return lintrans.LinearTransform(data=data, units=None, params=p, level=level,
                                    scale=float(p.ratio(level)) if scale is None else float(scale),
                                    slots=n, baby=b, giants=tuple(giants))


def bootstrap_traffic(preset: str = "n16-boot", slots: int | None = None) -> Traffic:
    """Traffic of one jitted ``circuits.bootstrap`` of one ciphertext at ``preset`` with abstract
    plans and keys (nothing is encoded or generated; the context's tables are real)."""
    from unittest import mock

    from jax_fhe import ckks, circuits, rlwe
    from jax_fhe.circuits import lintrans
    p = ckks.preset(preset)
    ctx = ckks.make_context(p)
    with mock.patch.object(lintrans, "make_linear_transform", _abstract_linear_transform):
        boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=slots))
    dnum = -(-p.num_q // p.alpha)
    key = lambda: rlwe.KeySwitchKey(data=jax.ShapeDtypeStruct((dnum, 2, len(p.all_primes), p.n), np.uint32),  # noqa: E731
                                    alpha=p.alpha, num_q=p.num_q)
    evk = ckks.EvalKeys(relin=key(), rotations={s: key() for s in boot.rotation_steps()}, conjugation=key(),
                        params=p)
    keys = circuits.BootstrapKeys(evk=evk, to_sparse=key(), to_dense=key())
    ct = ckks.Ciphertext(data=jax.ShapeDtypeStruct((2, len(p.rows(0)), p.n), np.uint32), level=0,
                         scale=p.default_scale(0), slots=boot.slots, params=p)
    return traffic(circuits.bootstrap, ct, abstract(ctx), abstract(boot), keys)


def print_kernels(label: str, t: Traffic, file=sys.stdout) -> None:
    """Kernel count and bytes written by kernel kind (custom-call target, or XLA fusion/op)."""
    cc = [(i, m) for i, m in t.rows if i.opcode == "custom-call"]
    n_cc = sum(m for _, m in cc)
    w_cc = sum(i.written * m for i, m in cc)
    n_all = sum(m for _, m in t.rows)
    print(f"\n== {label}: {n_all} kernels ({n_cc} custom calls, {n_all - n_cc} XLA), written "
          f"{t.written / 1e9:.2f} GB ({w_cc / 1e9:.2f} GB by custom calls)", file=file)
    print(f"  {'kind':48s} {'count':>6s} {'written GB':>11s}", file=file)
    for kind, (n, w, _) in sorted(t.by_kind().items(), key=lambda kv: (-kv[1][0], kv[0])):
        print(f"  {kind:48s} {n:6d} {w / 1e9:11.3f}", file=file)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--logn", type=int, default=16)
    ap.add_argument("--L", type=int, default=48)
    ap.add_argument("--alpha", type=int, default=12)
    ap.add_argument("--batch", type=int, nargs="*", default=[1, 8])
    ap.add_argument("--top", type=int, default=0, help="also list the N biggest writers")
    ap.add_argument("--hlo-dir", default=None, help="write each optimized HLO here")
    ap.add_argument("--ops", type=int, nargs="*", default=None, metavar="LEVEL",
                    help="instead: HMult / HRot / Rescale of n16-boot at these levels (none: default level)")
    ap.add_argument("--bootstrap", action="store_true",
                    help="instead: the whole bootstrap's kernels by kind (abstract plans and keys)")
    ap.add_argument("--preset", default="n16-boot", help="with --bootstrap: the CKKS preset")
    ap.add_argument("--slots", type=int, default=None, help="with --bootstrap: slots (default N/2)")
    a = ap.parse_args()
    if a.bootstrap:
        t = bootstrap_traffic(a.preset, a.slots)
        print_kernels(f"bootstrap ({a.preset}, {a.slots or 'full'} slots)", t)
        if a.top:
            print_traffic("bootstrap", t, a.top)
        if a.hlo_dir:
            os.makedirs(a.hlo_dir, exist_ok=True)
            with open(os.path.join(a.hlo_dir, f"bootstrap_{a.preset}.hlo.txt"), "w") as f:
                f.write(t.text)
        return
    if a.ops is not None:
        for level in a.ops or [None]:
            for name, t in ckks_op_stages(level).items():
                print_traffic(f"{name} (n16-boot, level {level if level is not None else 'default'})", t, a.top)
        return
    floor = 352 + 233 + 201
    summary = []
    for b in a.batch:
        stages = key_switch_stages(1 << a.logn, a.L, a.alpha, b)
        for name, t in stages.items():
            print_traffic(f"{name} (batch {b})", t, a.top)
            if a.hlo_dir:
                os.makedirs(a.hlo_dir, exist_ok=True)
                with open(os.path.join(a.hlo_dir, f"b{b}_{name.replace(' ', '_')}.hlo.txt"), "w") as f:
                    f.write(t.text)
            summary.append((b, name, t))
    print(f"\n{'batch':>5s} {'stage':14s} {'written MB/ct':>14s} {'read MB/ct':>11s} {'total MB/ct':>12s} "
          f"{'kernels':>8s}")
    for b, name, t in summary:
        print(f"{b:5d} {name:14s} {t.written / b / MB:14.1f} {t.read / b / MB:11.1f} "
              f"{(t.written + t.read) / b / MB:12.1f} {len(t.rows):8d}")
    if a.logn == 16 and (a.L, a.alpha) == (48, 12):
        print(f"Theodosian Table III floor (read + write): {floor} MB per key switch")


if __name__ == "__main__":
    sys.exit(main())
