"""HELR: logistic-regression training on encrypted data (Han, Hong, Cheon, Park, "Logistic
regression on homomorphic encrypted data at scale", AAAI 2019), on CKKS with bootstrapping.

**Algorithm** (the same in :func:`train_plain` and in the encrypted :func:`step`). Rows are
z = y' (1, x) with the label y' in {-1, +1} folded in (HELR's trick: one product fewer), padded
with zero features to a power of two F. Mini-batch Nesterov-accelerated gradient ascent on the
log-likelihood, with sigma(-x) replaced by HELR's cubic (least squares on [-16, 16], rounded as
HELR's code rounds it)::

    sigma3(x) = 0.5 - 0.0843 x + 0.0002 x^3            (~ 1 / (1 + e^x))
    R_t       = sum_{z in batch t} sigma3(z . v_t) z
    w_{t+1}   = v_t + gamma R_t,            gamma = learning_rate / batch
    v_{t+1}   = (1 - eta_t) w_{t+1} + eta_t w_t,      w_0 = v_0 = 0

with HELR's momentum sequence a_0 = momentum_start (0.01), a_{k+1} = (1 + sqrt(1 + 4 a_k^2)) / 2,
eta_t = (1 - a_t) / a_{t+1}. The model is w_T.

**Layout.** A ciphertext of S = N/2 slots holds ``rows = S / F`` rows of F slots (row i at
[iF, iF + F)). A mini-batch is cut into P blocks of 2 rows samples; block p, row i holds
Zc[p, i] = lambda (z_a + i z_b), the samples (2p) rows + i and (2p + 1) rows + i in the real and
imaginary parts (``data_scale`` lambda). A batch of 1,024 x 256 is P = 4 blocks at N = 2^16. The
P blocks are *interleaved* over P ciphertexts, differently for the two products that read them
(the client encrypts both; HELR keeps one block per ciphertext and rotates each one apart):

* inner products, ``data`` D_r (r < P): slot iF + m holds Zc[m mod P, i, (m + r) mod F];
* gradient, ``data_low`` E_r: slot iF + m holds Zc[(m - r) mod P, i', m] (i' = i, or i - 1
  when m < r).

The weights are one ciphertext U holding its F values in every row, i.e. an F-periodic vector:
a sparse F-slot ciphertext, so bootstrapping takes the cheap packed sparse path.

The state is U = p + i q with p = (1 - eta_{t-1}) w_t and q = eta_{t-1} w_{t-1} (so v = p + q,
w = p / (1 - eta_{t-1})): the gradient then enters U with a *real* factor, and one iteration is
one complex-linear map of (U, conj U) plus that term::

    U_{t+1} = A_t U + B_t conj(U) + kappa_t R_t,   kappa_t = (1 - eta_t) gamma,
    A_t = (f + i (e - f)) / 2,  B_t = (f + i (e + f)) / 2,  f = 1 - eta_t,  e = eta_t / (1 - eta_{t-1}).

**One iteration** (:func:`step`, depth 4: U at level l comes out at l - 4; ``Uc`` = conj(U))::

    2v  = (U + Uc) - i (U - Uc)                        1 conjugation, no level
    X   = sum_stride_P(sum_r D_r * rot(2v, r)) -> l - 1   P - 1 hoisted rotations, one
          relinearization for the sum, log2(F / P) rotations (stride P within a row);
          slot iF + p: 2 lambda (ip_a + i ip_b) of block p, row i (other slots: masked later)
    y   = [X + Xc, i (Xc - X)] = 4 lambda ip (real)     1 conjugation
    s   = (m3 * y) * (y^2 + c1 h^2 / c3) + m0  -> l - 3 sigma3 with the mask folded in (h = 4 lambda):
          m3, m0 hold mu c3 / h^3, mu c0 at slots iF + p (p < P; times -i for the b half)
    T   = s_a + s_b = mu (sigma_a - i sigma_b), spread over each row (stride P): log2(F / P) rotations
    G   = rowsum(sum_r rot(T, -r) * E_r)     -> l - 4   P - 1 hoisted rotations, one
          relinearization, log2(rows) rotations (cyclic: the sum lands in every row, replicated)
    U'  = G + conj(G) + A U + B Uc    (mu = kappa / 2 lambda makes G + conj G = kappa R)

Key switches per iteration: 2 log2(F / P) + 2 (P - 1) + log2(rows) rotations, 3 conjugations,
2 + 2 x 2 relinearizations (the cubic on the a and b halves); n16-boot, F = 256, P = 4:
12 + 6 + 7 + 3 + 6 = 34 (one block per ciphertext, as HELR packs, took 98 here). Every
per-iteration constant (masks with eta_t and gamma folded in, A_t, B_t) is a plaintext
argument, so an iteration compiles once per starting level.

**Bootstrapping**: only U (one sparse F-slot ciphertext, real and imaginary parts refreshed
together) when fewer than 4 levels remain: n16-boot bootstraps to level 13, then runs 3
iterations (13 -> 9 -> 5 -> 1); 32 iterations take 10 bootstraps. The iteration before a
bootstrap scales its output down by ``boot_scale`` (folded into its constants: |U| <= 1 keeps
the bootstrap's sine approximation accurate); :func:`refresh` multiplies it back (an integer, no
level).

**Precision** (max |w_enc - w| / max |w| against :func:`train_plain`, CPU): toy-boot-n12 MNIST
7x7 (F = 64, batch 256), 32 iterations with 31 bootstraps: 2^-20.9; n16-boot, F = 256, batch
1024, two iterations from level 13 (no bootstrap): 2^-16.9. The read-out after the first
iteration divides by 1 - eta_0 ~ 0.01 and is ~7 bits worse (the state is not).
"""
from __future__ import annotations

import dataclasses
import math
import time

import jax
import jax.numpy as jnp
import numpy as np

from .. import ckks, circuits
from ..ckks import CKKSContext, Ciphertext, EvalKeys, Plaintext
from ..rns.pytree import pytree_dataclass
from ..rns.sampling import as_host_random

__all__ = ["DEPTH", "SIGMOID3", "HELRConfig", "HELRKeys", "Plan", "StepInputs", "accuracy", "auc",
           "decrypt_weights", "design_matrix", "encrypt_inputs", "encrypt_zero_weights", "gen_keys",
           "make_plan", "momentum", "pack_batch", "refresh", "rotation_steps", "sample_batches",
           "sigmoid3", "step", "step_context", "jit_refresh", "jit_step", "train", "train_plain"]

#: HELR's cubic for sigma(-x) = 1 / (1 + e^x): (c0, c1, c3), least squares on [-16, 16]
#: (0.5, -0.08427, 0.000247) rounded as HELR's code rounds it.
SIGMOID3 = (0.5, -0.0843, 0.0002)
#: Levels one iteration consumes.
DEPTH = 4


@dataclasses.dataclass(frozen=True)
class HELRConfig:
    """Static choices of the training (hashable: a static argument of the jitted step).

    features:       F, a power of two (rows are zero-padded to it).
    iterations:     T.
    learning_rate:  gamma = learning_rate / batch size (HELR: alpha / block size).
    sigmoid:        (c0, c1, c3) of the cubic that replaces sigma(-x).
    momentum_start: a_0 of the Nesterov sequence (HELR: 0.01).
    data_scale:     lambda, the factor on the encrypted data (keeps 4 lambda |z . v| below 1).
    boot_scale:     integer the weights are divided by before each bootstrap (|U| <= 1).
    """

    features: int = 256
    iterations: int = 32
    learning_rate: float = 1.0
    sigmoid: tuple = SIGMOID3
    momentum_start: float = 0.01
    data_scale: float = 1.0 / 64
    boot_scale: int = 8

    def __post_init__(self):
        f = self.features
        if isinstance(f, bool) or not isinstance(f, int) or f < 2 or f & (f - 1):
            raise ValueError(f"HELRConfig: features must be a power of two >= 2, got {f!r}")
        if isinstance(self.iterations, bool) or not isinstance(self.iterations, int) or self.iterations < 1:
            raise ValueError(f"HELRConfig: iterations must be a positive int, got {self.iterations!r}")
        if len(self.sigmoid) != 3 or self.sigmoid[2] == 0:
            raise ValueError(f"HELRConfig: sigmoid must be (c0, c1, c3) with c3 != 0, got {self.sigmoid!r}")
        if not (self.data_scale > 0 and self.learning_rate > 0 and self.momentum_start >= 0):
            raise ValueError("HELRConfig: data_scale and learning_rate must be > 0, momentum_start >= 0")
        if isinstance(self.boot_scale, bool) or not isinstance(self.boot_scale, int) or self.boot_scale < 1:
            raise ValueError(f"HELRConfig: boot_scale must be a positive int, got {self.boot_scale!r}")
        object.__setattr__(self, "sigmoid", tuple(float(c) for c in self.sigmoid))


# -- the algorithm in numpy (the reference) -----------------------------------------------------

def sigmoid3(x, coeffs=SIGMOID3):
    """c0 + c1 x + c3 x^3 (HELR's stand-in for 1 / (1 + e^x))."""
    c0, c1, c3 = coeffs
    x = np.asarray(x, dtype=np.float64)
    return c0 + c1 * x + c3 * x ** 3


def momentum(config: HELRConfig) -> np.ndarray:
    """eta_t for t < T: HELR's Nesterov sequence (a_0 = momentum_start)."""
    a0 = float(config.momentum_start)
    a1 = (1 + math.sqrt(1 + 4 * a0 * a0)) / 2
    out = []
    for _ in range(config.iterations):
        out.append((1 - a0) / a1)
        a0, a1 = a1, (1 + math.sqrt(1 + 4 * a1 * a1)) / 2
    return np.asarray(out)


def _check_batches(batches, features: int) -> np.ndarray:
    z = np.asarray(batches, dtype=np.float64)
    if z.ndim != 3 or z.shape[-1] != features:
        raise ValueError(f"batches must be float[T, batch, {features}] (rows z = y' x, padded), "
                         f"got shape {z.shape}")
    if not np.all(np.isfinite(z)):
        raise ValueError("batches: values are not finite")
    return z


def train_plain(batches, config: HELRConfig) -> np.ndarray:
    """The algorithm in float64: ``batches`` float[T, n, F] (mini-batch t of rows z), returns
    w_T float64[F]. The encrypted :func:`train` computes the same function."""
    z = _check_batches(batches, config.features)
    if len(z) != config.iterations:
        raise ValueError(f"train_plain: {len(z)} batches for {config.iterations} iterations")
    gamma = config.learning_rate / z.shape[1]
    v = np.zeros(config.features)
    w = np.zeros(config.features)
    for t, eta in enumerate(momentum(config)):
        w_next = v + gamma * (sigmoid3(z[t] @ v, config.sigmoid) @ z[t])
        v = (1 - eta) * w_next + eta * w
        w = w_next
    return w


def design_matrix(x, y, features: int) -> np.ndarray:
    """Rows z = y' (1, x) float64[n, features]: a bias feature, then x float[n, d] (flattened),
    zero-padded; labels y in {0, 1} become y' = 2 y - 1."""
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    y = np.asarray(y)
    if y.shape != (len(x),) or not np.isin(y, (0, 1)).all():
        raise ValueError(f"design_matrix: y must be {len(x)} labels in {{0, 1}}")
    if x.shape[1] + 1 > features:
        raise ValueError(f"design_matrix: {x.shape[1]} features + bias do not fit in {features}")
    z = np.zeros((len(x), features))
    z[:, 0] = 1.0
    z[:, 1:x.shape[1] + 1] = x
    return z * (2.0 * y - 1.0)[:, None]


def sample_batches(z, batch: int, iterations: int, rng: np.random.Generator) -> np.ndarray:
    """float[iterations, batch, F]: mini-batches drawn with repetition from the rows of z
    (data sampling, not secret: a numpy Generator)."""
    z = np.asarray(z, dtype=np.float64)
    return z[rng.integers(0, len(z), size=(iterations, batch))]


def accuracy(w, x_rows, y) -> float:
    """Fraction of rows (features with the bias, *without* the label folded) classified right
    by sign(x . w)."""
    return float(np.mean((np.asarray(x_rows) @ w > 0) == (np.asarray(y) == 1)))


def auc(scores, y) -> float:
    """Area under the ROC curve (Mann-Whitney; ties count half)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(y) == 1
    pos, neg = s[y], s[~y]
    if not len(pos) or not len(neg):
        raise ValueError("auc: needs both classes")
    greater = (pos[:, None] > neg[None, :]).sum() + 0.5 * (pos[:, None] == neg[None, :]).sum()
    return float(greater / (len(pos) * len(neg)))


# -- layout ------------------------------------------------------------------------------------

def _rows(slots: int, features: int) -> int:
    if features > slots // 2:
        raise ValueError(f"features ({features}) must be at most N/4 = {slots // 2} (sparse bootstrapping)")
    return slots // features


def _blocks(n: int, rows: int, features: int) -> int:
    """P: blocks of 2 rows samples for n samples, rounded up to a power of two (the stride-P
    sums need F / P to be one); at most F."""
    p = 1 << max(0, (-(-int(n) // (2 * rows)) - 1).bit_length())
    if p > features:
        raise ValueError(f"{n} samples need {p} blocks of {2 * rows}; at most F = {features} fit this layout")
    return p


def pack_batch(z, slots: int, config: HELRConfig) -> tuple:
    """One mini-batch z float[n, F] in the two interleaved layouts (see the module doc):
    ``(data, data_low)``, each complex128[P, slots]; missing rows are zero (they add nothing
    to the gradient)."""
    f = config.features
    rows = _rows(slots, f)
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2 or z.shape[1] != f:
        raise ValueError(f"pack_batch: expected float[n, {f}], got shape {z.shape}")
    p = _blocks(len(z), rows, f)
    full = np.zeros((2 * p * rows, f))
    full[:len(z)] = z
    blocks = full.reshape(p, 2, rows, f) * config.data_scale
    zc = blocks[:, 0] + 1j * blocks[:, 1]                                  # [P, rows, F]
    r = np.arange(p)[:, None, None]
    i = np.arange(rows)[None, :, None]
    m = np.arange(f)[None, None, :]
    data = zc[m % p, i, (m + r) % f]
    low = zc[(m - r) % p, (i - (m < r)) % rows, m]
    return data.reshape(p, slots), low.reshape(p, slots)


@dataclasses.dataclass(frozen=True)
class Plan:
    """Where each iteration runs: ``levels[t]`` its input level, ``refresh[t]`` whether U is
    bootstrapped before it, ``scale_down[t]`` whether its output is divided by boot_scale (a
    bootstrap follows). ``ciphertexts``: P per mini-batch; ``rows``: rows per ciphertext."""

    config: HELRConfig
    slots: int
    rows: int
    ciphertexts: int
    levels: tuple
    refresh: tuple
    scale_down: tuple

    @property
    def bootstraps(self) -> int:
        """How many bootstraps the plan takes."""
        return sum(self.refresh)


def make_plan(params, config: HELRConfig, batch: int, boot_level: int, start_level: int | None = None) -> Plan:
    """Levels and bootstrap placement for ``config.iterations`` iterations: U starts at
    ``start_level`` (default: ``boot_level``, where bootstrapping leaves it) and is bootstrapped
    (back to ``boot_level``) before an iteration that would not fit."""
    rows = _rows(params.slots, config.features)
    start = boot_level if start_level is None else int(start_level)
    if boot_level < DEPTH or start < DEPTH:
        raise ValueError(f"make_plan: an iteration needs {DEPTH} levels; boot level {boot_level}, start {start}")
    levels, refresh = [], []
    level = start
    for _ in range(config.iterations):
        refresh.append(level < DEPTH)
        level = boot_level if level < DEPTH else level
        levels.append(level)
        level -= DEPTH
    scale_down = tuple(t + 1 < config.iterations and refresh[t + 1] for t in range(config.iterations))
    return Plan(config, params.slots, rows, _blocks(batch, rows, config.features), tuple(levels),
                tuple(refresh), scale_down)


# -- encrypted inputs --------------------------------------------------------------------------

@pytree_dataclass
class StepInputs:
    """What one iteration reads besides U: the mini-batch in its two layouts, ``data``
    (Ciphertext [P], level l) and ``data_low`` (Ciphertext [P], level l - 3), and its constants
    as plaintexts (public: they come from the learning-rate and momentum schedule): ``mask3`` [2]
    at l - 1, ``mask0`` [2] at l - 3 (the a and b halves), ``nesterov`` [2] = (A_t, B_t) at l - 3."""

    data: Ciphertext
    data_low: Ciphertext
    mask3: Plaintext
    mask0: Plaintext
    nesterov: Plaintext


def _constants(t: int, plan: Plan, batch: int) -> tuple:
    """(mu, A, B) of iteration t: mu scales sigma3 (the gradient's factor kappa_t over
    2 lambda), A and B the Nesterov map; all divided by boot_scale when a bootstrap follows."""
    cfg = plan.config
    eta = momentum(cfg)
    f = 1.0 - eta[t]
    e = eta[t] / (1.0 - eta[t - 1]) if t else 0.0  # q_{t+1} = e p_t (w_0 = 0: any e)
    div = cfg.boot_scale if plan.scale_down[t] else 1
    kappa = f * cfg.learning_rate / batch
    return kappa / (2 * cfg.data_scale) / div, complex(f, e - f) / 2 / div, complex(f, e + f) / 2 / div


def _step_constants(ctx: CKKSContext, plan: Plan, t: int, batch: int) -> tuple:
    cfg = plan.config
    level = plan.levels[t]
    mu, a, b = _constants(t, plan, batch)
    c0, _, c3 = cfg.sigmoid
    h = 4 * cfg.data_scale
    mask = np.zeros((plan.rows, cfg.features))
    mask[:, :plan.ciphertexts] = 1.0  # slots iF + p, p < P
    mask = mask.reshape(-1)
    halves = np.asarray([1.0, -1j])[:, None]  # T = s_a - i s_b
    mask3 = ckks.encode(halves * (mu * c3 / h ** 3) * mask, ctx, level=level - 1)
    mask0 = ckks.encode(halves * (mu * c0) * mask, ctx, level=level - 3)
    nesterov = ckks.encode(np.asarray([[a], [b]]) * np.ones(plan.slots), ctx, level=level - 3)
    return mask3, mask0, nesterov


def encrypt_inputs(ctx: CKKSContext, key, batches, plan: Plan, rng=None) -> list:
    """The client's encrypted mini-batches (``batches`` float[T, n, F]: rows z, labels folded)
    and the schedule's plaintexts: one :class:`StepInputs` per iteration. Each batch is
    encrypted at its iteration's level l and at l - 3 (``key``: public or secret key;
    ``rng``: :class:`jax_fhe.rns.HostRandom`)."""
    z = _check_batches(batches, plan.config.features)
    if len(z) != plan.config.iterations:
        raise ValueError(f"encrypt_inputs: {len(z)} batches for {plan.config.iterations} iterations")
    if _blocks(z.shape[1], plan.rows, plan.config.features) != plan.ciphertexts:
        raise ValueError(f"encrypt_inputs: batches of {z.shape[1]} rows, the plan is for {plan.ciphertexts} ciphertexts")
    rng = as_host_random(rng)   # many encryptions: a HostRandom (each draws its own key), not one device key
    out = []
    for t in range(len(z)):
        level = plan.levels[t]
        data, low = pack_batch(z[t], plan.slots, plan.config)
        out.append(StepInputs(ckks.encrypt(ckks.encode(data, ctx, level=level), ctx, key, rng),
                              ckks.encrypt(ckks.encode(low, ctx, level=level - 3), ctx, key, rng),
                              *_step_constants(ctx, plan, t, z.shape[1])))
    return out


def encrypt_zero_weights(ctx: CKKSContext, key, plan: Plan, rng=None) -> Ciphertext:
    """U_0 = 0 (w_0 = v_0 = 0) at the plan's first level, as an F-slot ciphertext."""
    f = plan.config.features
    return ckks.encrypt(ckks.encode(np.zeros(f), ctx, level=plan.levels[0]), ctx, key, rng)


# -- keys --------------------------------------------------------------------------------------

@pytree_dataclass
class HELRKeys:
    """``evk``: what :func:`step` uses (relinearization, conjugation, its rotations);
    ``boot``: :class:`jax_fhe.circuits.BootstrapKeys` for :func:`refresh`."""

    evk: EvalKeys
    boot: circuits.BootstrapKeys


def rotation_steps(plan: Plan) -> tuple:
    """Rotations :func:`step` needs: 1 .. P - 1 and their negatives (the interleaved blocks),
    P, 2P, .., F/2 and their negatives (sums and spreads within a row), F, 2F, .., N/4 (the sum
    over rows)."""
    f, slots, p = plan.config.features, plan.slots, plan.ciphertexts
    within = list(range(1, p)) + [p << k for k in range((f // p).bit_length() - 1)]
    rows = [f << k for k in range((slots // f).bit_length() - 1)]
    return tuple(sorted({*within, *(slots - r for r in within), *rows}))


def gen_keys(ctx: CKKSContext, sk, boot: circuits.Bootstrapper, plan: Plan, rng=None, *,
             progress: bool | None = None) -> HELRKeys:
    """Bootstrapping keys for ``boot`` plus the rotations of :func:`rotation_steps` that the
    bootstrapper does not already have (relinearization and conjugation keys are shared)."""
    bk = circuits.gen_bootstrap_keys(ctx, sk, boot, rng, progress=progress)
    need = rotation_steps(plan)
    extra = ckks.gen_rotation_keys(ctx, sk, [s for s in need if s not in bk.evk.rotations], rng,
                                   progress=progress)
    rot = {s: bk.evk.rotations.get(s, extra.get(s)) for s in need}
    evk = EvalKeys(relin=bk.evk.relin, rotations=rot, conjugation=bk.evk.conjugation, params=ctx.params)
    return HELRKeys(evk=evk, boot=bk)


# -- the encrypted iteration -------------------------------------------------------------------

def _exact_scale(ct: Ciphertext) -> Ciphertext:
    """Pin the scale label to the level's default (it agrees to float rounding), so that every
    iteration of one level has the same static metadata (one compilation)."""
    s = ct.params.default_scale(ct.level)
    if not ckks.scales_match(ct.scale, s, ct.params):
        raise AssertionError(f"scale 2^{math.log2(ct.scale):.6f} is not level {ct.level}'s default")
    return ct.replace(scale=s)


def _rotsum(ct: Ciphertext, steps, ctx, evk) -> Ciphertext:
    for r in steps:
        ct = ckks.add(ct, ckks.rotate(ct, r, ctx, evk), ctx)
    return ct


def _stack(cts) -> Ciphertext:
    """Ciphertexts of one level and scale as one batch [len(cts)]."""
    return cts[0].replace(data=jnp.stack([c.data for c in cts]))


def _dot(a: Ciphertext, b: Ciphertext, ctx, evk) -> Ciphertext:
    """sum_r a[r] * b[r] over the leading batch axis: tensor products, one relinearization and
    one rescale for the sum."""
    prod = ckks.mul(a, b, ctx, rescale=False, relinearize=False)
    acc = prod[0]
    for r in range(1, len(prod)):
        acc = ckks.add(acc, prod[r], ctx)
    return ckks.rescale(ckks.relinearize(acc, ctx, evk), ctx)


def _check_step(u, inputs, ctx, config):
    if not isinstance(config, HELRConfig):
        raise TypeError(f"step: config must be a HELRConfig, got {type(config).__name__}")
    if not isinstance(u, Ciphertext):
        raise TypeError(f"step: expected the weights as a Ciphertext, got {type(u).__name__}")
    if not isinstance(inputs, StepInputs):
        raise TypeError(f"step: expected StepInputs, got {type(inputs).__name__}")
    if u.slots not in (config.features, ctx.params.slots):
        raise ValueError(f"step: the weights pack {u.slots} slots, expected {config.features} (or N/2)")
    if u.level < DEPTH:
        raise ValueError(f"step: the weights are at level {u.level}; an iteration needs {DEPTH} (refresh first)")
    if inputs.data.level != u.level or inputs.data_low.level != u.level - 3:
        raise ValueError(f"step: data at levels {inputs.data.level} / {inputs.data_low.level}, the weights at "
                         f"{u.level} (expected {u.level} / {u.level - 3}: encrypt_inputs with the same plan)")
    if inputs.mask3.level != u.level - 1 or inputs.nesterov.level != u.level - 3:
        raise ValueError("step: the constants were encoded for another level (encrypt_inputs with the same plan)")


def step(u: Ciphertext, inputs: StepInputs, ctx: CKKSContext, evk: EvalKeys, config: HELRConfig) -> Ciphertext:
    """One HELR iteration: U_t (level l >= 4, F-slot or full-slot view) -> U_{t+1} (level l - 4,
    full-slot view, the default scale). Pure; jit it with ``config`` static."""
    _check_step(u, inputs, ctx, config)
    p = ctx.params
    f, level = config.features, u.level
    u = u.replace(slots=p.slots)  # the F-periodic vector seen in all N/2 slots
    blocks = len(inputs.data) if inputs.data.batch_shape else 1
    spread = [blocks << k for k in range((f // blocks).bit_length() - 1)]
    ubar = ckks.conjugate(u, ctx, evk)
    v2 = ckks.sub(ckks.add(u, ubar, ctx), ckks.mul_i(ckks.sub(u, ubar, ctx), ctx), ctx)  # 2 (p + q)
    x = _rotsum(_dot(inputs.data, _stack(ckks.rotate_hoisted(v2, range(blocks), ctx, evk)), ctx, evk),
                spread, ctx, evk)
    xbar = ckks.conjugate(x, ctx, evk)
    y = _stack([ckks.add(x, xbar, ctx), ckks.mul_i(ckks.sub(xbar, x, ctx), ctx)])  # 4 lambda ip, [2]
    c0, c1, c3 = config.sigmoid
    h = 4 * config.data_scale
    quad = ckks.add(ckks.mul(y, y, ctx, evk), c1 / c3 * h * h, ctx)
    s = ckks.add(ckks.mul(ckks.mul(y, inputs.mask3, ctx), quad, ctx, evk), inputs.mask0, ctx)
    s = _rotsum(ckks.add(s[0], s[1], ctx), [-r for r in spread], ctx, evk)
    g = _dot(inputs.data_low, _stack(ckks.rotate_hoisted(s, [-r for r in range(blocks)], ctx, evk)), ctx, evk)
    g = _rotsum(g, [f << k for k in range((p.slots // f).bit_length() - 1)], ctx, evk)
    grad = ckks.add(g, ckks.conjugate(g, ctx, evk), ctx)  # kappa R (real)
    both = ckks.level_down(_stack([u, ubar]), ctx, level - 3, scale=p.default_scale(level - 3))
    lin = ckks.mul(both, inputs.nesterov, ctx, rescale=False)
    lin = ckks.rescale(ckks.add(lin[0], lin[1], ctx), ctx)
    return _exact_scale(ckks.add(grad, lin, ctx))


def refresh(u: Ciphertext, ctx: CKKSContext, boot: circuits.Bootstrapper, keys: circuits.BootstrapKeys,
            config: HELRConfig) -> Ciphertext:
    """Bootstrap U (seen as its F slots) and multiply it back by ``boot_scale`` (an integer: no
    level). Pure; jit it with ``config`` static."""
    if boot.slots != config.features:
        raise ValueError(f"refresh: the bootstrapper is for {boot.slots} slots, the weights have {config.features}")
    u = u.replace(slots=config.features)
    if u.level:
        u = ckks.level_down(u, ctx, 0, scale=ctx.params.default_scale(0))
    u = _exact_scale(u)
    out = circuits.bootstrap(u, ctx, boot, keys)
    return ckks.mul(out, config.boot_scale, ctx, rescale=False) if config.boot_scale != 1 else out


#: :func:`step` and :func:`refresh` jitted (``config`` static), as :func:`train` calls them.
jit_step = jax.jit(step, static_argnames="config")
jit_refresh = jax.jit(refresh, static_argnames="config")


def step_context(ctx: CKKSContext, level: int) -> CKKSContext:
    """The context restricted to the levels one iteration from ``level`` uses (fewer arrays to
    pass per call: see :meth:`jax_fhe.ckks.CKKSContext.for_levels`)."""
    return ctx.for_levels(range(level - DEPTH, level + 1))


def train(u: Ciphertext, inputs, plan: Plan, ctx: CKKSContext, keys: HELRKeys, boot: circuits.Bootstrapper,
          *, callback=None, times: list | None = None) -> Ciphertext:
    """The encrypted training loop (a Python loop over :data:`jit_refresh` where the plan says,
    then :data:`jit_step`; each compiles once per level). ``callback(t, u)`` (optional) sees U
    after iteration t. ``times`` (optional list): wait for each call and append
    ``(kind, t, level, seconds)`` with kind "refresh" or "step". Returns U_T."""
    cfg = plan.config
    if len(inputs) != cfg.iterations:
        raise ValueError(f"train: {len(inputs)} inputs for {cfg.iterations} iterations")
    views = {}

    def timed(kind, t, level, fn, *args):
        if times is None:
            return fn(*args, config=cfg)
        start = time.perf_counter()
        out = jax.block_until_ready(fn(*args, config=cfg))
        times.append((kind, t, level, time.perf_counter() - start))
        return out

    for t in range(cfg.iterations):
        if plan.refresh[t]:
            u = timed("refresh", t, u.level, jit_refresh, u, ctx, boot, keys.boot)
        level = plan.levels[t]
        if level not in views:
            views[level] = step_context(ctx, level)
        u = timed("step", t, level, jit_step, u, inputs[t], views[level], keys.evk)
        if callback is not None:
            callback(t, u)
    return u


def decrypt_weights(u: Ciphertext, ctx: CKKSContext, sk, plan: Plan, *, iteration: int | None = None) -> np.ndarray:
    """w float64[F] from U after ``iteration`` + 1 iterations (default: the last): w = Re(U) /
    (1 - eta_iteration) (times boot_scale if that iteration scaled down), averaged over the rows."""
    t = plan.config.iterations - 1 if iteration is None else int(iteration)
    vals = ckks.decode(ckks.decrypt(u.replace(slots=ctx.params.slots), ctx, sk), ctx)
    per_row = vals.reshape(-1, plan.config.features).mean(axis=0)
    div = plan.config.boot_scale if plan.scale_down[t] else 1
    return per_row.real * div / (1.0 - momentum(plan.config)[t])
