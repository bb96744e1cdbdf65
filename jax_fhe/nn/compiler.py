"""Compile a CNN (:mod:`jax_fhe.nn.model` spec + parameters) to one jitted CKKS program.

**Packing (multiplexed, MPCNN-style).** One image is one slot vector of n slots (n a power of
two, n <= N/2: a sparse ciphertext when smaller). A C x H x W tensor with *gap* k (k = the
product of the strides so far; H = H0 / k) stores channel c, pixel (y, x) at

    plane(c) * H0 W0 + (k y + (c mod k^2) // k) W0 + k x + (c mod k^2) mod k,   plane(c) = c // k^2

so the k^2 channels of a plane fill the holes that striding leaves, and every stage of
ResNet-20 uses 16,384 slots (16 x 32 x 32, 32 x 16 x 16 at k = 2, 64 x 8 x 8 at k = 4).

**Layers as slot-space matrices.** Every linear layer (a 3x3 convolution with its folded batch
norm, strided or not, changing the packing's gap; the option-A shortcut; average pooling fused
with the dense layer) is an n x n matrix M on that vector. The compiler builds M sparsely,
takes its non-zero generalized diagonals and evaluates M z with
:func:`jax_fhe.circuits.linear_transform` (BSGS, double-hoisted rotations; one level). Biases
are plaintext additions. Activations are :class:`jax_fhe.nn.activation.PolyReLU` on inputs
divided by a bound measured on the plaintext model (the factors are folded into the matrices:
an encrypted value holds t / sigma for a tensor t, and ReLU(t / B) = ReLU(t) / B).

**Bootstraps** go where the levels run out (greedily, on the value an operation reads: a
linear layer needs 1 level, an activation ``act.depth``); a value bootstrapped once is reused.
:func:`plan` reports the levels, bootstraps, diagonals, rotations and memory without touching a
ciphertext; :func:`simulate` runs the same packed program in numpy (the reference of the
encrypted one); :func:`compile_model` encodes the diagonals and returns the jitted function.
"""
from __future__ import annotations

import dataclasses
import functools
import time

import numpy as np

from .. import ckks, circuits
from ..ckks import CKKSContext, Ciphertext, EvalKeys
from ..rns import progress_bar
from ..rns.sampling import as_host_random
from . import model as _model
from .activation import PolyReLU

__all__ = ["CompiledModel", "Op", "Plan", "calibrate", "compile_model", "decrypt_logits",
           "encrypt_image", "gen_keys", "layout", "plan", "polynomial_forward", "run", "simulate"]


# -- packing -----------------------------------------------------------------------------------------

def layout(channels: int, height: int, width: int, gap: int) -> np.ndarray:
    """int64[C, H, W]: the slot of each value in the multiplexed packing with gap ``gap``."""
    k = gap
    c = np.arange(channels)[:, None, None]
    y = np.arange(height)[None, :, None]
    x = np.arange(width)[None, None, :]
    h0, w0 = k * height, k * width
    b = c % (k * k)
    return (c // (k * k)) * h0 * w0 + (k * y + b // k) * w0 + k * x + b % k


def _slots_needed(channels, height, width, gap):
    return -(-channels // (gap * gap)) * gap * gap * height * width


# -- the program -------------------------------------------------------------------------------------

@dataclasses.dataclass
class Op:
    """One operation of the packed program.

    kind:   "linear" (out = M src + bias), "add" (out = src + src2), "act" (out = act(src)) or
            "rotsum" (x += rot(x, s) for s in ``steps``, in order).
    src, src2, out: value ids (0 is the input image).
    rows, cols, vals: M as a sparse matrix (slot indices, int64 / float64), "linear" only.
    bias:   float64[n] or None.
    name:   the layer it comes from.
    level:  the level it runs at (filled by :func:`plan`); boot: whether ``src`` is bootstrapped
            first (and ``boot2`` for ``src2``).
    encoded_bytes, compact_bytes: "linear" only (filled by :func:`plan`): device memory of its
            diagonals encoded and compact."""

    kind: str
    src: int
    out: int
    src2: int | None = None
    rows: np.ndarray | None = None
    cols: np.ndarray | None = None
    vals: np.ndarray | None = None
    bias: np.ndarray | None = None
    name: str = ""
    level: int | None = None
    boot: bool = False
    boot2: bool = False
    steps: tuple = ()
    encoded_bytes: int = 0
    compact_bytes: int = 0

    def diagonals(self, n: int) -> dict:
        """{k: float64[n]} with M z = sum_k d_k * rot_k(z)."""
        k = (self.cols - self.rows) % n
        uniq, inv = np.unique(k, return_inverse=True)
        d = np.zeros((len(uniq), n))
        np.add.at(d, (inv, self.rows), self.vals)
        return {int(u): d[i] for i, u in enumerate(uniq)}


def _conv_entries(w, src_idx, dst_idx, stride, scale):
    """Sparse entries of a 3x3 / pad-1 convolution from the packed input to the packed output."""
    cin, h, wd = src_idx.shape
    cout, ho, wo = dst_idx.shape
    rows, cols, vals = [], [], []
    yo, xo = np.arange(ho), np.arange(wo)
    for dy in range(3):
        for dx in range(3):
            yi, xi = stride * yo + dy - 1, stride * xo + dx - 1
            vy, vx = (yi >= 0) & (yi < h), (xi >= 0) & (xi < wd)
            if not vy.any() or not vx.any():
                continue
            out = dst_idx[:, yo[vy]][:, :, xo[vx]]                  # [O, hy, wx]
            inp = src_idx[:, yi[vy]][:, :, xi[vx]]                  # [I, hy, wx]
            wt = w[dy, dx].T * scale                                # [O, I]
            o, i = np.nonzero(wt)
            rows.append(np.broadcast_to(out[o], (len(o),) + out.shape[1:]).reshape(-1))
            cols.append(np.broadcast_to(inp[i], (len(i),) + inp.shape[1:]).reshape(-1))
            vals.append(np.repeat(wt[o, i], out[0].size))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _bias_vec(b, dst_idx, n, scale):
    v = np.zeros(n)
    v[dst_idx] = (np.asarray(b, dtype=np.float64) * scale)[:, None, None]
    return v


def calibrate(spec, params, images, *, margin: float = 1.25) -> tuple:
    """Bounds for every activation's input: margin * max |t| over ``images`` (the plaintext
    ReLU model). The bounds order is the order of the activations in the model."""
    trace: list = []
    _model.forward(spec, params, images, trace=trace)
    return tuple(float(margin * max(np.abs(t).max(), 1e-6)) for t in trace)


def _build(spec, params, input_shape, bounds):
    """Ops of the packed program, the slot count and the output slots."""
    spec = _model.check_spec(spec)
    h, w, c = input_shape
    shapes = [(c, h, w, 1)]
    for kind, cout, stride in spec:
        c, h, w, k = shapes[-1]
        if h % stride or w % stride:
            raise ValueError(f"plan: a stride-{stride} layer on {h}x{w}")
        shapes.append((cout, h // stride, w // stride, k * stride))
    n = 1 << (max(_slots_needed(*s) for s in shapes) - 1).bit_length()
    n_act = sum(1 if kind == "conv" else 2 for kind, _, _ in spec)
    if len(bounds) != n_act:
        raise ValueError(f"plan: {len(bounds)} activation bounds for {n_act} activations")
    ops, nxt = [], [1]
    bounds = list(bounds)

    def new():
        nxt[0] += 1
        return nxt[0] - 1

    cur, sigma = 0, 1.0
    for li, ((kind, cout, stride), shp, shp_out) in enumerate(zip(spec, shapes, shapes[1:])):
        src_idx, dst_idx = layout(*shp), layout(*shp_out)
        pre = f"layer{li}"
        if kind == "conv":
            b = bounds.pop(0)
            t = new()
            r, cc, v = _conv_entries(params[f"{pre}/conv/kernel"], src_idx, dst_idx, stride, sigma / b)
            ops.append(Op("linear", cur, t, rows=r, cols=cc, vals=v, name=f"{pre}/conv",
                          bias=_bias_vec(params[f"{pre}/conv/bias"], dst_idx, n, 1 / b)))
            cur = new()
            ops.append(Op("act", t, cur, name=f"{pre}/act"))
            sigma = b
            continue
        b1, b2 = bounds.pop(0), bounds.pop(0)
        mid_idx = layout(cout, shp_out[1], shp_out[2], shp_out[3])
        t1 = new()
        r, cc, v = _conv_entries(params[f"{pre}/conv1/kernel"], src_idx, mid_idx, stride, sigma / b1)
        ops.append(Op("linear", cur, t1, rows=r, cols=cc, vals=v, name=f"{pre}/conv1",
                      bias=_bias_vec(params[f"{pre}/conv1/bias"], mid_idx, n, 1 / b1)))
        a1 = new()
        ops.append(Op("act", t1, a1, name=f"{pre}/act1"))
        t2 = new()
        r, cc, v = _conv_entries(params[f"{pre}/conv2/kernel"], mid_idx, dst_idx, 1, b1 / b2)
        ops.append(Op("linear", a1, t2, rows=r, cols=cc, vals=v, name=f"{pre}/conv2",
                      bias=_bias_vec(params[f"{pre}/conv2/bias"], dst_idx, n, 1 / b2)))
        # shortcut: identity (as a matrix: it also rescales sigma -> b2) or option A
        cin = shp[0]
        pad = (cout - cin) // 2
        if (cout - cin) % 2 or cout < cin:
            raise ValueError(f"plan: {pre}: option-A shortcut cannot widen {cin} channels to {cout}")
        ys, xs = np.arange(shp_out[1]), np.arange(shp_out[2])
        src_sub = src_idx[:, ys * stride][:, :, xs * stride]
        dst_sub = dst_idx[pad:pad + cin]
        s = new()
        ops.append(Op("linear", cur, s, rows=dst_sub.reshape(-1), cols=src_sub.reshape(-1),
                      vals=np.full(src_sub.size, sigma / b2), name=f"{pre}/shortcut"))
        t = new()
        ops.append(Op("add", t2, t, src2=s, name=f"{pre}/add"))
        cur = new()
        ops.append(Op("act", t, cur, name=f"{pre}/act2"))
        sigma = b2
    # dense per pixel (class j of pixel (y, x) at the slot of channel j there), then average
    # pooling as a rotate-and-sum over the pixels: the logits land at the pixel-(0, 0) slots
    # (summing after the bootstrap keeps the bootstrapped values in [0, 1])
    c, h, w, k = shapes[-1]
    wd, bd = np.asarray(params["dense/kernel"], dtype=np.float64), np.asarray(params["dense/bias"], dtype=np.float64)
    if wd.shape[0] != c:
        raise ValueError(f"plan: dense kernel {wd.shape} for {c} channels")
    if h & (h - 1) or w & (w - 1):
        raise ValueError(f"plan: average pooling by rotations needs power-of-two sizes, got {h}x{w}")
    classes = wd.shape[1]
    src_idx, dst_idx = layout(c, h, w, k), layout(classes, h, w, k)
    if dst_idx.max() >= n:
        raise ValueError(f"plan: {classes} classes do not fit the packing")
    rows = np.broadcast_to(dst_idx[None], (c,) + dst_idx.shape).reshape(-1)
    cols = np.broadcast_to(src_idx[:, None], (c, classes, h, w)).reshape(-1)
    vals = np.broadcast_to((wd * sigma / (h * w))[:, :, None, None], (c, classes, h, w)).reshape(-1)
    bias = np.zeros(n)
    bias[dst_idx[:, 0, 0]] = bd
    t = new()
    ops.append(Op("linear", cur, t, rows=rows, cols=cols, vals=vals, bias=bias, name="dense"))
    steps = tuple(k << i for i in range(w.bit_length() - 1)) + \
        tuple((k * k * w) << i for i in range(h.bit_length() - 1))
    ops.append(Op("rotsum", t, new(), steps=steps, name="pool"))
    out_slots = dst_idx[:, 0, 0]
    return ops, n, out_slots


@dataclasses.dataclass
class Plan:
    """The packed program with its level schedule and costs (host data).

    ops: the :class:`Op` list; slots: n; classes; act: the activation; bounds; start_level
    (the encrypted image's level); boot_level (a bootstrap's output level, None: none placed);
    bootstraps; diagonals (total); rotations (sorted steps of the linear layers);
    diagonal_bytes / compact_bytes / key_bytes: device memory of the diagonals encoded, of the
    diagonals compact (``circuits.make_linear_transform(..., compact=True)``) and of the rotation
    keys restricted to ``rotation_level`` (estimates from the RNS shapes); out_level; out_slots:
    the slots of the logits; rotation_level: the highest level a layer rotates at."""

    ops: list
    slots: int
    classes: int
    act: PolyReLU
    bounds: tuple
    start_level: int
    boot_level: int | None
    bootstraps: int
    diagonals: int
    rotations: tuple
    diagonal_bytes: int
    key_bytes: int
    out_level: int
    out_slots: tuple = ()
    params_name: str = ""
    compact_bytes: int = 0
    rotation_level: int = 0

    def summary(self) -> str:
        """A human-readable table of the plan."""
        lines = [f"plan for {self.params_name}: {self.slots} slots/image, activation depth {self.act.depth}, "
                 f"{self.bootstraps} bootstraps (to level {self.boot_level}), {self.diagonals} diagonals "
                 f"({self.diagonal_bytes / 2**30:.1f} GiB encoded, {self.compact_bytes / 2**30:.1f} GiB compact), "
                 f"{len(self.rotations)} rotation keys "
                 f"(+ bootstrapping's; {self.key_bytes / 2**30:.1f} GiB), logits at level {self.out_level}"]
        for op in self.ops:
            if op.kind == "linear":
                k = len(np.unique((op.cols - op.rows) % self.slots))
                lines.append(f"  {op.name:18s} linear  level {op.level:2d}{' boot' if op.boot else ''}  {k} diagonals")
            elif op.kind == "act":
                lines.append(f"  {op.name:18s} act     level {op.level:2d}{' boot' if op.boot else ''}")
            elif op.kind == "rotsum":
                lines.append(f"  {op.name:18s} rotsum  level {op.level:2d}  {len(op.steps)} rotations")
        return "\n".join(lines)


def plan(spec, params, ckks_params, act: PolyReLU, bounds, *, input_shape=(32, 32, 3),
         boot_level: int | None = None, start_level: int | None = None) -> Plan:
    """Schedule the program for ``ckks_params`` (a :class:`jax_fhe.ckks.CKKSParams`).

    bounds:      activation input bounds (:func:`calibrate`).
    boot_level:  the bootstrapper's output level (``make_bootstrapper(...).output_level``);
                 None: no bootstraps (ValueError if the levels do not suffice).
    start_level: the encrypted image's level (default: boot_level, else the encryption level)."""
    if not isinstance(act, PolyReLU):
        raise TypeError(f"plan: act must be a PolyReLU, got {type(act).__name__}")
    ops, n, out_slots = _build(spec, params, tuple(input_shape), tuple(bounds))
    if n > ckks_params.slots:
        raise ValueError(f"plan: the packing needs {n} slots, {ckks_params.name} has {ckks_params.slots}")
    if start_level is None:
        start_level = boot_level if boot_level is not None else ckks_params.encryption_level
    level = {0: start_level}
    boots = 0
    rotations, ndiag, dbytes, cbytes = set(), 0, 0, 0
    N = ckks_params.n

    def need(v, k, what):
        nonlocal boots
        if level[v] >= k:
            return False
        if boot_level is None or boot_level < k:
            raise ValueError(f"plan: {what} needs {k} levels, the value is at level {level[v]} and "
                             f"bootstrapping gives {boot_level}")
        boots += 1
        level[v] = boot_level
        return True

    for op in ops:
        if op.kind == "linear":
            op.boot = need(op.src, 1, op.name)
            op.level = level[op.src]
            level[op.out] = op.level - 1
            d = op.diagonals(n)
            _, groups = circuits.lintrans.bsgs_split(list(d), n)
            b = {bb for bs in groups.values() for bb in bs} | set(groups)
            rotations |= {s % n for s in b} - {0}
            ndiag += len(d)
            op.encoded_bytes = len(d) * (len(ckks_params.rows(op.level)) + ckks_params.alpha) * (2 * n) * 4   # N / r words a row
            op.compact_bytes = len(d) * (2 * n + len(ckks_params.rows(op.level)) + ckks_params.alpha) * 4
            dbytes += op.encoded_bytes
            cbytes += op.compact_bytes
        elif op.kind == "act":
            op.boot = need(op.src, act.depth, op.name)
            op.level = level[op.src]
            level[op.out] = op.level - act.depth
        elif op.kind == "rotsum":
            op.level = level[op.out] = level[op.src]
            rotations |= set(op.steps)
        else:
            op.level = min(level[op.src], level[op.src2])
            level[op.out] = op.level
    top = max((op.level for op in ops if op.kind in ("linear", "rotsum")), default=0)
    # a key cut to `top` holds the q rows of every level up to it (ckks.restrict_key)
    key_rows = set().union(*(ckks_params.rows(lv) for lv in range(top + 1)))
    digits = max(r // ckks_params.alpha for r in key_rows) + 1
    key_bytes = len(rotations) * digits * 2 * (len(key_rows) + len(ckks_params.special_rows)) * N * 4
    return Plan(ops=ops, slots=n, classes=len(out_slots), out_slots=tuple(int(v) for v in out_slots), act=act, bounds=tuple(bounds), start_level=start_level,
                boot_level=boot_level, bootstraps=boots, diagonals=ndiag, rotations=tuple(sorted(rotations)),
                diagonal_bytes=dbytes, key_bytes=key_bytes, out_level=level[ops[-1].out],
                params_name=ckks_params.name, compact_bytes=cbytes, rotation_level=top)


def _pack(p: Plan, images, input_shape=None) -> np.ndarray:
    x = np.asarray(images, dtype=np.float64)
    if x.ndim == 3:
        x = x[None]
    h, w, c = x.shape[1:]
    z = np.zeros((len(x), p.slots))
    z[:, layout(c, h, w, 1).reshape(-1)] = x.transpose(0, 3, 1, 2).reshape(len(x), -1)
    return z


def simulate(p: Plan, images) -> np.ndarray:
    """The packed program in float64 numpy (diagonal form, the polynomial activation): logits
    float64[B, classes] of images [B, H, W, C]. The encrypted program computes the same up to
    CKKS noise."""
    vals = {0: _pack(p, images)}
    for op in p.ops:
        if op.kind == "linear":
            z = vals[op.src]
            out = np.zeros_like(z)
            for k, d in op.diagonals(p.slots).items():
                out += d * np.roll(z, -k, axis=-1)
            vals[op.out] = out + (op.bias if op.bias is not None else 0)
        elif op.kind == "act":
            vals[op.out] = p.act(vals[op.src])
        elif op.kind == "rotsum":
            z = vals[op.src]
            for st in op.steps:
                z = z + np.roll(z, -st, axis=-1)
            vals[op.out] = z
        else:
            vals[op.out] = vals[op.src] + vals[op.src2]
    return vals[p.ops[-1].out][:, list(p.out_slots)]


def polynomial_forward(spec, params, images, act: PolyReLU, bounds, *, with_ratio: bool = False):
    """The float model with each ReLU replaced by bound_j * act(t / bound_j) (the function the
    encrypted program computes, without the packing): logits float64[B, classes].

    ``with_ratio``: also return, per image, max_j |t_j| / bound_j over every activation input
    t_j (float64[B]): (logits, ratio). Above 1 an input left the interval its polynomial is fitted
    on; the polynomial then diverges, here as encrypted, and that image's result is not the
    model's (raise the calibration margin, with a degree that keeps the accuracy)."""
    images = np.asarray(images, dtype=np.float64)
    if images.ndim == 3:
        images = images[None]
    it = iter(tuple(bounds))
    seen, ratio = [], np.zeros(len(images))

    def a(t):
        b = next(it)
        seen.append(b)
        u = np.asarray(t, dtype=np.float64) / b
        with np.errstate(invalid="ignore"):
            r = np.abs(u).reshape(len(u), -1).max(1)
        ratio[:] = np.fmax(ratio, np.where(np.isfinite(r), r, np.inf))
        return b * act(u)
    with np.errstate(over="ignore", invalid="ignore"):
        out = _model.forward(spec, params, images, a)
    if len(seen) != len(bounds):
        raise ValueError(f"polynomial_forward: {len(bounds)} bounds for {len(seen)} activations")
    return (np.asarray(out), ratio) if with_ratio else np.asarray(out)


# -- the encrypted program ---------------------------------------------------------------------------

def _walk(p: Plan, ct, boot_fn, linear_fn, act_fn, rotsum_fn, add_fn):
    """The plan's ops in order on ``ct`` with the given implementations (traced inside one jit,
    or jitted stage by stage): boot_fn(x), linear_fn(op index, x), act_fn(x),
    rotsum_fn(z, steps), add_fn(a, b)."""
    vals, done = {0: ct}, {}

    def get(v, boot_it):   # once bootstrapped (the plan's level for v), every later reader gets that
        if v not in done and boot_it:
            done[v] = boot_fn(vals[v])
        return done.get(v, vals[v])

    for i, op in enumerate(p.ops):
        if op.kind == "linear":
            vals[op.out] = linear_fn(i, get(op.src, op.boot))
        elif op.kind == "act":
            vals[op.out] = act_fn(get(op.src, op.boot))
        elif op.kind == "rotsum":
            vals[op.out] = rotsum_fn(vals[op.src], op.steps)
        else:
            vals[op.out] = add_fn(vals[op.src], vals[op.src2])
    return vals[p.ops[-1].out]


def _linear(x, lt, bias, ctx, evk):
    y = circuits.linear_transform(x, lt, ctx, evk)
    return y if bias is None else ckks.add(y, bias, ctx)


def _rotsum(z, steps, ctx, evk):
    for st in steps:
        z = ckks.add(z, ckks.rotate(z, st, ctx, evk), ctx)
    return z


@functools.cache
def _stage_jits():
    """The jitted stages of :meth:`CompiledModel.staged`, shared by every model: a stage
    compiles once per distinct static structure (the bootstrap once; convolutions of one shape
    once)."""
    import jax
    return dict(boot=jax.jit(circuits.bootstrap), linear=jax.jit(_linear), add=jax.jit(ckks.add),
                rotsum=jax.jit(_rotsum, static_argnums=1))


@dataclasses.dataclass
class CompiledModel:
    """The encoded linear layers and the jitted encrypted inference.

    plan: the :class:`Plan`; transforms: {op index: LinearTransform}; ctx; boot (a
    :class:`jax_fhe.circuits.Bootstrapper` or None); fn: the whole program as one jitted function
    (image ciphertext, evk, boot keys, transforms, biases, ctx, boot) -> logits ciphertext (at
    ``plan.out_slots``); encode_s: host seconds spent encoding diagonals; biases: {op index:
    Plaintext}; act_fn: the jitted activation (ciphertext, ctx, evk); batch_fn: ``fn`` vmapped over
    a leading batch axis of the ciphertext; compact: the op indices of the layers held compact
    (expanded in the program), the others encoded."""

    plan: Plan
    transforms: dict
    ctx: CKKSContext
    boot: object
    fn: object
    encode_s: float
    compact: tuple = ()
    biases: dict = dataclasses.field(default_factory=dict)
    act_fn: object = None
    batch_fn: object = None

    @property
    def form(self) -> str:
        """How the diagonals are held: "encoded", "compact" or "mixed (k of n layers compact)"."""
        n, k = len(self.transforms), len(self.compact)
        return "encoded" if k == 0 else "compact" if k == n else f"mixed ({k} of {n} layers compact)"

    def __call__(self, ct: Ciphertext, keys) -> Ciphertext:
        """Encrypted logits (at ``plan.out_slots``) of the encrypted image ``ct``: the whole
        program, one XLA executable."""
        evk, bk = keys
        return self.fn(ct, evk, bk, self.transforms, self.biases, self.ctx, self.boot)

    def batch(self, cts: Ciphertext, keys, *, staged: bool = False) -> Ciphertext:
        """Encrypted logits of a batch of encrypted images (``cts.data`` uint32[B, 2, L, N]: one
        ciphertext per image, stacked), in one vmapped call: the whole program (one executable
        for the batch), or each stage vmapped (``staged``)."""
        import jax
        if staged:
            return jax.vmap(lambda c: self.staged(c, keys))(cts)
        evk, bk = keys
        return self.batch_fn(cts, evk, bk, self.transforms, self.biases, self.ctx, self.boot)

    def staged(self, ct: Ciphertext, keys, *, timings: dict | None = None) -> Ciphertext:
        """The same computation (the same bits) as one jitted call per op: the bootstrap, each
        linear layer, activation, addition, pooling. Compiles in a fraction of the whole
        program's time (identical stages share one executable) at the price of a dispatch per
        op. ``timings``: a dict that receives seconds per op name (each op is then waited
        for)."""
        import jax
        evk, bk = keys
        j, ctx = _stage_jits(), self.ctx
        names = iter(op.name for op in self.plan.ops)

        def timed(name, fn, *args):
            if timings is None:
                return fn(*args)
            t0 = time.perf_counter()
            out = jax.block_until_ready(fn(*args))
            timings[name] = timings.get(name, 0.0) + time.perf_counter() - t0
            return out

        def step(fn):   # the op's own name for its time (a bootstrap is timed as "bootstrap")
            return lambda *a: timed(next(names), fn, *a)

        return _walk(self.plan, ct,
                     lambda x: timed("bootstrap", j["boot"], x, ctx, self.boot, bk),
                     step(lambda i, x: j["linear"](x, self.transforms[i], self.biases.get(i), ctx, evk)),
                     step(lambda x: self.act_fn(x, ctx, evk)),
                     step(lambda z, steps: j["rotsum"](z, steps, ctx, evk)),
                     step(lambda a, b: j["add"](a, b, ctx)))


# compile_model's default budget for encoded diagonals: what the device's memory limit leaves
# beside what it holds already (the keys, when generated first: else the plan's estimate of the
# rotation keys) and WORKING_BYTES for the program's working set (ciphertexts in the extended
# basis, a compact giant step's expansion, the bootstrap's temporaries: about 1 GiB at n16-boot)
# and the compact layers; without a memory figure (the CPU), ENCODED_DEFAULT_BYTES
WORKING_BYTES, ENCODED_DEFAULT_BYTES = 8 << 30, 16 << 30


def _device_memory() -> tuple:
    """(bytes_limit, bytes_in_use) of the default device, (None, 0) where it reports none."""
    import jax
    stats = jax.devices()[0].memory_stats() or {}
    return stats.get("bytes_limit"), stats.get("bytes_in_use", 0)


def compile_model(p: Plan, ctx: CKKSContext, boot=None, *, compact: bool | None = None,
                  encoded_bytes: int | None = None, progress: bool | None = None) -> CompiledModel:
    """Encode every linear layer's diagonals at its level and build the jitted program.
    ``boot``: the bootstrapper (slots = ``p.slots``) when the plan bootstraps. ``compact``: True
    holds every layer's diagonals compact and expands them inside the program (``op.compact_bytes``
    instead of ``op.encoded_bytes`` of device memory, a forward NTT per diagonal per inference —
    about three times the memory traffic of reading them encoded — and the weights rounded as
    :func:`jax_fhe.circuits.lintrans.make_linear_transform` says); False encodes every layer;
    None (default) encodes the layers, in plan order, while their encoded bytes fit
    ``encoded_bytes`` and holds the rest compact. ``encoded_bytes`` defaults to what the
    device's memory limit leaves beside what it holds (generate the keys first; else the plan's
    rotation-key estimate is taken), 8 GiB of working memory and the compact forms (16 GiB where
    the device reports no memory; JAX's limit is XLA_PYTHON_CLIENT_MEM_FRACTION of the memory,
    0.75 by default). ``progress``: a bar over the layers (default: when there are more than 1,000
    diagonals)."""
    import jax

    if p.bootstraps and boot is None:
        raise ValueError(f"compile_model: the plan bootstraps {p.bootstraps} times; pass its bootstrapper")
    if boot is not None and (boot.output_level != p.boot_level or boot.slots != p.slots):
        raise ValueError(f"compile_model: bootstrapper (slots {boot.slots}, output level {boot.output_level}) "
                         f"does not match the plan (slots {p.slots}, boot level {p.boot_level})")
    linear = [(i, op) for i, op in enumerate(p.ops) if op.kind == "linear"]
    if compact is None:
        if encoded_bytes is None:
            limit, in_use = _device_memory()
            encoded_bytes = (max(0, limit - max(in_use, p.key_bytes) - WORKING_BYTES - p.compact_bytes) if limit
                             else ENCODED_DEFAULT_BYTES)
        held, chosen = 0, []
        for i, op in linear:
            if held + op.encoded_bytes <= encoded_bytes:
                held += op.encoded_bytes
            else:
                chosen.append(i)
        compact_ops = tuple(chosen)
    elif encoded_bytes is not None:
        raise ValueError("compile_model: encoded_bytes applies only to the default compact=None")
    else:
        compact_ops = tuple(i for i, _ in linear) if compact else ()
    t0 = time.perf_counter()
    cp = ctx.params

    def lt_scale(level):  # lands a default-scale input on the default scale of level - 1
        return float(cp.default_scale(level - 1)) * float(cp.ratio(level)) / float(cp.default_scale(level))

    transforms = {}
    for i, op in progress_bar(linear, progress, auto=p.diagonals > 1000, desc="diagonals", unit="layer"):
        diags = {k: d.astype(np.complex128) for k, d in op.diagonals(p.slots).items()}
        transforms[i] = circuits.make_linear_transform(diags, ctx, op.level, scale=lt_scale(op.level),
                                                       compact=i in compact_ops)
    # the biases at the level and scale a linear layer's output has (the default scale of op.level - 1)
    biases = {i: ckks.encode(op.bias, ctx, level=op.level - 1, scale=cp.default_scale(op.level - 1))
              for i, op in linear if op.bias is not None and np.any(op.bias)}
    encode_s = time.perf_counter() - t0

    # everything with arrays (keys, plans, biases, the context, the bootstrapper) is an argument,
    # never a closure: closed-over arrays would become constants of the executable
    def program(ct, evk, bk, lts, biases, ctx, boot):
        return _walk(p, ct, lambda x: circuits.bootstrap(x, ctx, boot, bk),
                     lambda i, x: _linear(x, lts[i], biases.get(i), ctx, evk),
                     lambda x: p.act.encrypted(x, ctx, evk),
                     lambda z, steps: _rotsum(z, steps, ctx, evk),
                     lambda a, b: ckks.add(a, b, ctx))

    act_fn = jax.jit(lambda x, ctx, evk: p.act.encrypted(x, ctx, evk))
    batch_fn = jax.jit(jax.vmap(program, in_axes=(0,) + (None,) * 6))
    return CompiledModel(plan=p, transforms=transforms, ctx=ctx, boot=boot, fn=jax.jit(program), encode_s=encode_s,
                         compact=compact_ops, biases=biases, act_fn=act_fn, batch_fn=batch_fn)


def gen_keys(ctx: CKKSContext, sk, p: Plan, boot=None, rng=None, *, progress: bool | None = None):
    """(EvalKeys with relinearization and the plan's rotations, BootstrapKeys or None). The
    rotation keys only the layers use are restricted to the levels they rotate at
    (``p.rotation_level``: :func:`jax_fhe.ckks.restrict_key`)."""
    if boot is None:
        keys = ckks.gen_rotation_keys(ctx, sk, list(p.rotations), rng, progress=progress)
        keys = {s: ckks.restrict_key(k, ctx, p.rotation_level) for s, k in keys.items()}
        relin = ckks.gen_relin_key(ctx, sk, rng)
        return EvalKeys(relin=relin, rotations=keys, conjugation=None, params=ctx.params), None
    bk = circuits.gen_bootstrap_keys(ctx, sk, boot, rng, progress=progress)
    # bootstrapping's keys serve every level but SlotToCoeff's, cut to its start level: a layer
    # rotating above that by one of those steps gets a key of its own
    short = set(boot.stc_only_steps()) if p.rotation_level > boot.levels[2] else set()
    extra = ckks.gen_rotation_keys(ctx, sk, [s for s in p.rotations if s not in bk.evk.rotations or s in short],
                                   rng, progress=progress)
    # the layers' own keys serve their levels only
    extra = {s: ckks.restrict_key(k, ctx, p.rotation_level) for s, k in extra.items()}
    rot = dict(bk.evk.rotations)
    rot.update(extra)
    return EvalKeys(relin=bk.evk.relin, rotations=rot, conjugation=bk.evk.conjugation, params=ctx.params), bk


def encrypt_image(image, p: Plan, ctx: CKKSContext, pk, rng=None) -> Ciphertext:
    """One image [H, W, C] (preprocessed floats) packed and encrypted at ``p.start_level``; a
    batch [B, H, W, C] gives a batch of ciphertexts (data [B, 2, L, N], for
    :meth:`CompiledModel.batch`)."""
    image = np.asarray(image)
    z = _pack(p, image if image.ndim == 4 else image[None])
    return ckks.encrypt(ckks.encode(z if image.ndim == 4 else z[0], ctx, level=p.start_level), ctx, pk, rng)


def decrypt_logits(ct: Ciphertext, p: Plan, ctx: CKKSContext, sk) -> np.ndarray:
    """float64[classes]."""
    return ckks.decode(ckks.decrypt(ct, ctx, sk), ctx, real=True)[..., list(p.out_slots)]


def run(compiled: CompiledModel, images, keys, pk, sk, rng=None, *, staged: bool = False) -> tuple:
    """Encrypt, infer and decrypt each image: (logits float64[B, classes], seconds per image).
    The first image runs alone (its call may compile); the others stream: while the device
    infers image i, the host encrypts image i + 1 and decrypts image i - 1, so the seconds per
    image are the stream's wall time over its images (one image: the first call's time).
    ``staged``: one jitted call per op (:meth:`CompiledModel.staged`) instead of the whole
    program."""
    import jax
    infer = compiled.staged if staged else compiled
    rng = as_host_random(rng)   # one encryption an image: a HostRandom (each draws its own key), not one device key
    p, ctx = compiled.plan, compiled.ctx
    images = np.asarray(images)
    t0 = time.perf_counter()
    first = jax.block_until_ready(infer(encrypt_image(images[0], p, ctx, pk, rng), keys))
    first_s = time.perf_counter() - t0
    out = [decrypt_logits(first, p, ctx, sk)]
    t0, in_flight = time.perf_counter(), None
    for img in images[1:]:
        res = infer(encrypt_image(img, p, ctx, pk, rng), keys)   # queued behind the one in flight
        if in_flight is not None:
            out.append(decrypt_logits(in_flight, p, ctx, sk))   # waits for it only
        in_flight = res
    if in_flight is not None:
        out.append(decrypt_logits(in_flight, p, ctx, sk))
    per_image = (time.perf_counter() - t0) / (len(images) - 1) if len(images) > 1 else first_s
    return np.asarray(out), per_image

