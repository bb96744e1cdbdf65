"""The fused centered base conversion (ops.bconv_centered, ops.exact_conv): bit for bit the
unfused composition (BConv, fixed-point CRT quotient, correction), and CKKS operations through
the unfused composition equal them through the kernel."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jax_fhe import ckks, ops, rns
from jax_fhe.ops.bconv import bconv_centered, centered_fold_every
from jax_fhe.rns import CrtQuotient
from jax_fhe.rns import HostRandom

from conftest import random_residues

N = 1 << 10


def _primes(kind, lin, lout):
    """(source primes, target primes). 25bit: the CKKS terminal-prime size (fix_bits 24);
    31bit: 12+ terms overflow 64 bits, so BConv folds (fold_every < Lin)."""
    if kind == "30bit":
        src = rns.ntt_primes(30, lin, N)
        dst = rns.ntt_primes(30, lout, N, exclude=src)
    elif kind == "25bit":
        src = rns.ntt_primes(25, lin, N)
        dst = rns.ntt_primes(30, lout, N)
    elif kind == "25to25":
        src = rns.ntt_primes(25, lin, N)
        dst = rns.ntt_primes(25, lout, N, exclude=src)
    elif kind == "31bit":
        src = rns.ntt_primes(31, lin, N)
        dst = rns.ntt_primes(31, lout, N, exclude=src)
    elif kind == "small":  # 14- and 16-bit targets
        src = rns.ntt_primes(30, lin, N)
        dst = (rns.ntt_primes(16, lout - 1, N) + rns.ntt_primes(14, 1, N))[:lout]
    else:  # mixed: a 25-bit terminal prime among 30-bit ones
        src = rns.ntt_primes(25, 1, N) + rns.ntt_primes(30, lin - 1, N)
        dst = rns.ntt_primes(30, lout, N, exclude=src)
    return list(src), list(dst)


def _conv(kind, lin, lout):
    """(ring over src + dst, ExactConv src -> dst)."""
    src, dst = _primes(kind, lin, lout)
    primes = src + dst
    ring = rns.make_context(primes, N)
    conv = rns.make_exact_conv(primes, range(lin), range(lin, lin + lout))
    return src, ring, conv


def unfused_exact_conv(x, conv, ring, limb_offset=None):
    """The centered conversion as three separate ops: BConv, the fixed-point CRT quotient k and
    the correction - k Q (the reference the fused kernel must equal bit for bit)."""
    if limb_offset is not None:
        x = jax.lax.slice_in_dim(x, limb_offset, limb_offset + len(conv.src_rows), axis=-2)
    y = ops.mul_limb_consts(x, conv.table.in_consts[1], ring, conv.src_rows)
    k = ops.rounded_quotient(y, conv.quotient)  # [..., N], in [0, Lin]
    raw = ops.bconv(x, conv.table)
    corr = ops.mul_limb_consts(jnp.broadcast_to(k[..., None, :], raw.shape), conv.src_prod, ring,
                               conv.dst_rows)
    return ops.sub_mod(raw, corr, ring, conv.dst_rows)


def _unfused(x, conv, ring, monkeypatch=None):
    return np.asarray(unfused_exact_conv(x, conv, ring))


CASES = [("30bit", 1, 1), ("30bit", 3, 5), ("25bit", 4, 13), ("30bit", 9, 48),
         ("30bit", 12, 48), ("25bit", 12, 5), ("31bit", 12, 48), ("30bit", 16, 13),
         ("31bit", 16, 1), ("mixed", 9, 13), ("25bit", 1, 48), ("25to25", 16, 48),
         ("31bit", 3, 5), ("mixed", 4, 1), ("small", 12, 3), ("small", 15, 4)]


@pytest.mark.parametrize("kind, lin, lout", CASES)
def test_fused_equals_unfused(kind, lin, lout, device, put, rng, monkeypatch):
    src, ring, conv = _conv(kind, lin, lout)
    ring, conv = put(ring), put(conv)
    assert conv.table.overflow_free == (kind != "31bit" or lin < 12)
    x = random_residues(rng, src, N, batch=(2,))
    # centered-rounding edge: +-Q/2 and its neighbours (the quotient's fraction near 1/2)
    big = int(np.prod([int(q) for q in src], dtype=object))
    for c, v in enumerate([big // 2, big // 2 + 1, big // 2 - 1, big - 1]):
        x[0, :, 3 + c] = [v % q for q in src]
    x = put(jnp.asarray(x))
    want = _unfused(x, conv, ring, monkeypatch)
    got = np.asarray(bconv_centered(x, conv.table, conv.quotient, conv.src_prod))
    assert got.shape == (2, lout, N) and got.dtype == np.uint32
    np.testing.assert_array_equal(got, want)
    # and through exact_conv with the flag on (read at trace time)
    np.testing.assert_array_equal(np.asarray(ops.exact_conv(x, conv)), want)


@pytest.mark.parametrize("batch", [(), (3,), (2, 3), (1, 1, 2)])
def test_batch_shapes(batch, device, put, rng, monkeypatch):
    src, ring, conv = _conv("mixed", 9, 13)
    ring, conv = put(ring), put(conv)
    x = put(jnp.asarray(random_residues(rng, src, N, batch=batch)))
    got = np.asarray(bconv_centered(x, conv.table, conv.quotient, conv.src_prod))
    assert got.shape == batch + (13, N)
    np.testing.assert_array_equal(got, _unfused(x, conv, ring, monkeypatch))


def test_jit_vmap(device, put, rng, monkeypatch):
    src, ring, conv = _conv("31bit", 12, 5)
    ring, conv = put(ring), put(conv)
    x = put(jnp.asarray(random_residues(rng, src, N, batch=(4, 2))))
    want = _unfused(x, conv, ring, monkeypatch)
    f = lambda x, c: bconv_centered(x, c.table, c.quotient, c.src_prod)
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x, conv)), want)
    np.testing.assert_array_equal(np.asarray(jax.vmap(f, in_axes=(0, None))(x, conv)), want)
    np.testing.assert_array_equal(np.asarray(jax.jit(jax.vmap(jax.vmap(f, in_axes=(0, None)),
                                                              in_axes=(1, None)))(x, conv)),
                                  np.swapaxes(want, 0, 1))


def test_bad_inputs(rng):
    src, ring, conv = _conv("30bit", 3, 5)
    x = jnp.asarray(random_residues(rng, src, N))
    t, cq, sp = conv.table, conv.quotient, conv.src_prod
    with pytest.raises(TypeError, match="BConvTable"):
        bconv_centered(x, conv, cq, sp)
    with pytest.raises(TypeError, match="CrtQuotient"):
        bconv_centered(x, t, cq.inv_fix, sp)
    with pytest.raises(TypeError, match="uint32"):
        bconv_centered(x.astype(jnp.int32), t, cq, sp)
    with pytest.raises(ValueError, match="has 2 limbs but the table converts from 3"):
        bconv_centered(x[:2], t, cq, sp)
    with pytest.raises(ValueError, match=r"src_prod must be uint32\[5\]"):
        bconv_centered(x, t, cq, sp[:4])
    with pytest.raises(ValueError, match=r"src_prod must be uint32\[5\]"):
        bconv_centered(x, t, cq, sp.astype(jnp.int32))
    with pytest.raises(ValueError, match=r"inv_fix must be uint32\[3\]"):
        bconv_centered(x, t, CrtQuotient(inv_fix=cq.inv_fix[:2], fix_bits=cq.fix_bits), sp)
    for bits in (0, 29):
        with pytest.raises(ValueError, match="fix_bits must be in"):
            bconv_centered(x, t, CrtQuotient(inv_fix=cq.inv_fix, fix_bits=bits), sp)
    src17 = rns.ntt_primes(30, 17, N)
    t17 = rns.make_bconv_table(src17, rns.ntt_primes(30, 2, N, exclude=src17))
    x17 = jnp.asarray(random_residues(rng, src17, N))
    with pytest.raises(ValueError, match="at most 16 source limbs"):
        bconv_centered(x17, t17, CrtQuotient(inv_fix=jnp.zeros(17, jnp.uint32), fix_bits=28),
                       jnp.zeros(2, jnp.uint32))


@pytest.mark.parametrize("offset", [0, 2, 5])
def test_limb_offset_reads_in_place(offset, device, put, rng, monkeypatch):
    """limb_offset: the source limbs inside a larger input (ModUp converts each digit straight
    from the INTT of every basis limb) give the bits of the conversion of the slice."""
    src, ring, conv = _conv("30bit", 4, 7)
    ring, conv = put(ring), put(conv)
    pad = [int(q) for q in rns.ntt_primes(29, 9 - 4, N)]
    wide = random_residues(rng, pad[:offset] + src + pad[offset:], N, batch=(3,))
    x = put(jnp.asarray(wide))
    want = _unfused(x[..., offset:offset + 4, :], conv, ring, monkeypatch)
    got = bconv_centered(x, conv.table, conv.quotient, conv.src_prod, limb_offset=offset)
    np.testing.assert_array_equal(np.asarray(got), want)
    np.testing.assert_array_equal(np.asarray(ops.exact_conv(x, conv, limb_offset=offset)), want)
    f = jax.vmap(lambda v: bconv_centered(v, conv.table, conv.quotient, conv.src_prod, limb_offset=offset))
    np.testing.assert_array_equal(np.asarray(jax.jit(f)(x)), want)
    with pytest.raises(ValueError, match=r"limbs \[6, 10\) are not all in the input's 9 limbs"):
        bconv_centered(x, conv.table, conv.quotient, conv.src_prod, limb_offset=6)
    with pytest.raises(Exception, match=r"limbs \[7, 11\) are not all in the input's 9 limbs"):
        _raw_call(x, conv.table, conv.quotient.inv_fix, conv.src_prod, 7, conv.quotient.fix_bits,
                  starts=(7,)).block_until_ready()


def _raw_call(x, t, inv_fix, src_prod, lout, fix_bits, starts=(0,), fix_count=None):
    """The handler called directly: one conversion per start, each with precision fix_bits
    (``fix_count`` entries of it, default one per start)."""
    out = jax.ShapeDtypeStruct(x.shape[:-2] + (lout, x.shape[-1]), jnp.uint32)
    fix = np.full(len(starts) if fix_count is None else fix_count, fix_bits, np.int64)
    return jax.ffi.ffi_call("jax_fhe_bconv_centered", out)(
        x, t.in_consts, t.mat, t.out_consts, inv_fix, src_prod, fold_every=t.fold_every,
        starts=np.asarray(starts, np.int64), fix_bits=fix)


def test_kernel_argument_checks(device, put, rng):
    """The handlers' own checks (bypassing the Python wrapper)."""
    src, _, conv = _conv("30bit", 3, 5)
    x = put(jnp.asarray(random_residues(rng, src, N)))
    t, cq, sp = put(conv.table), put(conv.quotient), put(conv.src_prod)
    np.testing.assert_array_equal(np.asarray(_raw_call(x, t, cq.inv_fix, sp, 5, cq.fix_bits)),
                                  np.asarray(bconv_centered(x, t, cq, sp)))
    with pytest.raises(Exception, match=r"fix_bits must be in \[1, 28\]"):
        _raw_call(x, t, cq.inv_fix, sp, 5, 29).block_until_ready()
    with pytest.raises(Exception, match=r"fix_bits must have one entry per start \(1\), got 2"):
        _raw_call(x, t, cq.inv_fix, sp, 5, cq.fix_bits, fix_count=2).block_until_ready()
    with pytest.raises(Exception, match="inv_fix: expected 3 elements"):
        _raw_call(x, t, cq.inv_fix[:2], sp, 5, cq.fix_bits).block_until_ready()
    with pytest.raises(Exception, match="src_prod: expected 5 elements"):
        _raw_call(x, t, cq.inv_fix, sp[:4], 5, cq.fix_bits).block_until_ready()
    src17 = rns.ntt_primes(30, 17, N)
    t17 = put(rns.make_bconv_table(src17, rns.ntt_primes(30, 2, N, exclude=src17)))
    x17 = put(jnp.asarray(random_residues(rng, src17, N)))
    with pytest.raises(Exception, match=r"input limb count must be in \[1, 16\]"):
        _raw_call(x17, t17, put(jnp.zeros(17, jnp.uint32)), put(jnp.zeros(2, jnp.uint32)), 2,
                  28).block_until_ready()


# -- CKKS: key switching with the fused conversion on equals it off ------------------------------

@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    keys = ckks.keygen(ctx, HostRandom.insecure_deterministic(12), rotations=(1, -3),
                       conjugation=True)
    return ctx, keys


def _ckks_ops(ctx, keys):
    """Public-key encryption (ModDown), relinearization + rescale, rotation, conjugation."""
    rng = np.random.default_rng(7)
    z, w = (rng.uniform(-1, 1, (2, 2048)) + 1j * rng.uniform(-1, 1, (2, 2048)) for _ in range(2))
    a = ckks.encrypt(ckks.encode(z, ctx), ctx, keys.public, HostRandom.insecure_deterministic(1))
    b = ckks.encrypt(ckks.encode(w, ctx), ctx, keys.public, HostRandom.insecure_deterministic(2))
    evk = keys.evaluation
    ab = ckks.mul(a, b, ctx, evk)
    return [a.data, b.data, ab.data, ckks.rotate(a, 1, ctx, evk).data,
            ckks.rotate(ab, -3, ctx, evk).data, ckks.conjugate(b, ctx, evk).data]


def test_ckks_key_switch_fused_equals_unfused(toy, put, monkeypatch):
    """CKKS operations with every single centered conversion (ModDown's, rescaling's, and
    ModUp's where a digit converts alone) done by the unfused reference equal the kernels'."""
    ctx, keys = put(toy)
    outs = {}
    kernel = ops.exact_conv
    for fused in (False, True):
        jax.clear_caches()
        monkeypatch.setattr(ops, "exact_conv", kernel if fused else
                            (lambda x, conv, limb_offset=None: unfused_exact_conv(x, conv, ctx.ring, limb_offset)))
        outs[fused] = [np.asarray(d) for d in _ckks_ops(ctx, keys)]
    jax.clear_caches()
    for off, on in zip(outs[False], outs[True]):
        np.testing.assert_array_equal(on, off)


@pytest.mark.parametrize("kind,lin,digits,offset", [("30bit", 4, 3, 0), ("30bit", 3, 2, 2),
                                                     ("31bit", 12, 4, 0), ("25bit", 4, 2, 1)])
def test_stacked_equals_each_conversion(kind, lin, digits, offset, device, put, rng):
    """bconv_centered_stacked (ModUp of every digit in one launch): bit for bit each digit's
    bconv_centered on its own limbs, concatenated; also under jit and vmap. The digits convert
    to different target rows (each digit's complement, as in ModUp)."""
    src, dst = _primes(kind, lin * digits, 5)
    primes = src + dst
    pad = [int(q) for q in rns.ntt_primes(29, 3, N, exclude=primes)]
    wide = pad[:offset] + src + pad[offset:]
    convs = []
    for d in range(digits):
        own = list(range(d * lin, (d + 1) * lin))
        convs.append(rns.make_exact_conv(primes, own, [r for r in range(len(primes)) if r not in own]))
    convs = [put(c) for c in convs]
    stacked = put(ops.stack_centered([c.table for c in convs], [c.quotient for c in convs],
                                     [c.src_prod for c in convs]))
    x = put(jnp.asarray(random_residues(rng, wide, N, batch=(2,))))
    want = np.concatenate([np.asarray(bconv_centered(x, c.table, c.quotient, c.src_prod,
                                                     limb_offset=offset + d * lin))
                           for d, c in enumerate(convs)], axis=-2)
    got = ops.bconv_centered_stacked(x, stacked, limb_offset=offset)
    assert got.shape == (2, digits * (len(primes) - lin), N)
    np.testing.assert_array_equal(np.asarray(got), want)
    f = jax.jit(jax.vmap(lambda v: ops.bconv_centered_stacked(v, stacked, limb_offset=offset)))
    np.testing.assert_array_equal(np.asarray(f(x)), want)
    with pytest.raises(ValueError, match="are not all in the input's"):
        ops.bconv_centered_stacked(x, stacked, limb_offset=len(wide) - digits * lin + 1)
    # the handler's own checks: no conversion, a table count that is not a multiple of them
    with pytest.raises(Exception, match=r"starts must name 1 to 64 conversions, got 0"):
        _raw_call(x, convs[0].table, convs[0].quotient.inv_fix, convs[0].src_prod, 5,
                  convs[0].quotient.fix_bits, starts=()).block_until_ready()
    with pytest.raises(Exception, match=r"input constants must be \[digits, 3, Lin\]"):
        _raw_call(x, convs[0].table, convs[0].quotient.inv_fix, convs[0].src_prod, 5,
                  convs[0].quotient.fix_bits, starts=(0,) * 5).block_until_ready()


@pytest.mark.parametrize("sizes, positions, batch, wide", [
    ((3, 4, 4, 2), "consecutive", 2, False),  # ModUp at a level that cuts the first and last digit
    ((4, 1, 4), "consecutive", 1, False),     # a one-limb digit between full ones
    ((2, 4), "gap", 3, False),                # the digits apart, one window reaching into the gap
    ((15, 16, 1), "consecutive", 1, True),    # 31-bit sources: the big digits' tables fold
    ((5, 16, 16, 3), "consecutive", 1, True),
])
def test_stacked_digits_of_unequal_sizes(sizes, positions, batch, wide, device, put, rng):
    """Digits of unequal sizes in one launch (stack_centered with starts and leads, as
    hybrid.stack_digits builds them for ModUp): each digit reads a window of max(sizes) limbs
    holding its own, the first digit's source primes are 25-bit (another fix_bits than the
    others'), and each digit converts to its own complement. Bit for bit each digit's
    bconv_centered on its own limbs, padded with zero limbs to the largest target count; also
    under jit and vmap. ``wide``: 31-bit sources, whose 16-limb tables reduce every few terms
    (the reductions then fall anywhere in a shifted digit's window), and residues of q - 1 in
    every third coefficient; a small digit, which needs no reduction, must not make the launch
    reduce after every term."""
    nsrc = sum(sizes)
    src = rns.ntt_primes(25, sizes[0], N) + rns.ntt_primes(31 if wide else 30, nsrc - sizes[0], N)
    dst = rns.ntt_primes(31, 3, N, exclude=src)
    primes = src + dst
    gap = [int(q) for q in rns.ntt_primes(29, 2, N, exclude=primes)]
    own, first = [], 0
    layout = []                                  # the input's limbs: the digits (and a gap)
    for d, n in enumerate(sizes):
        own.append(list(range(first, first + n)))
        first += n
        layout += [primes[r] for r in own[-1]]
        if positions == "gap" and d == 0:
            layout += gap
    pos = []
    for d, rows in enumerate(own):
        p0 = layout.index(primes[rows[0]])
        pos.append(list(range(p0, p0 + len(rows))))
    w = max(sizes)
    starts = [min(p[0], len(layout) - w) for p in pos]
    leads = [p[0] - a for p, a in zip(pos, starts)]
    convs = [put(rns.make_exact_conv(primes, rows, [r for r in range(len(primes)) if r not in rows]))
             for rows in own]
    assert len({c.quotient.fix_bits for c in convs}) == 2
    stacked = put(ops.stack_centered([c.table for c in convs], [c.quotient for c in convs],
                                     [c.src_prod for c in convs], starts=starts, leads=leads))
    lout = max(len(c.dst_rows) for c in convs)
    assert (stacked.lin, stacked.lout) == (w, lout)
    folds = [centered_fold_every(c.table, c.quotient.fix_bits) for c in convs]
    assert stacked.fold_every == min([f for f, n in zip(folds, sizes) if f < n] or [w])
    x = random_residues(rng, layout, N, batch=(batch,))
    if wide:
        x[..., ::3] = (np.asarray(layout, np.uint64)[:, None] - 1).astype(np.uint32)
    x = put(jnp.asarray(x))
    want = []
    for p, c in zip(pos, convs):
        y = np.asarray(bconv_centered(x, c.table, c.quotient, c.src_prod, limb_offset=p[0]))
        want.append(np.concatenate([y, np.zeros(y.shape[:-2] + (lout - y.shape[-2], N), np.uint32)], axis=-2))
    want = np.concatenate(want, axis=-2)
    got = ops.bconv_centered_stacked(x, stacked)
    assert got.shape == (batch, len(sizes) * lout, N)
    np.testing.assert_array_equal(np.asarray(got), want)
    f = jax.jit(jax.vmap(lambda v: ops.bconv_centered_stacked(v, stacked)))
    np.testing.assert_array_equal(np.asarray(f(x)), want)


def test_stack_centered_rejects_mismatched_tables():
    _, _, a = _conv("30bit", 3, 5)
    _, _, b = _conv("30bit", 4, 5)
    with pytest.raises(ValueError, match="different sizes need their starts and leads"):
        ops.stack_centered([a.table, b.table], [a.quotient, b.quotient], [a.src_prod, b.src_prod])
    with pytest.raises(ValueError, match="must lie in its window of 4"):
        ops.stack_centered([a.table, b.table], [a.quotient, b.quotient], [a.src_prod, b.src_prod],
                           starts=[0, 3], leads=[2, 0])
    with pytest.raises(ValueError, match="one start and one lead per conversion"):
        ops.stack_centered([a.table, b.table], [a.quotient, b.quotient], [a.src_prod, b.src_prod],
                           starts=[0], leads=[0, 0])
    with pytest.raises(ValueError, match="one table, quotient and src_prod"):
        ops.stack_centered([a.table], [], [a.src_prod])
    with pytest.raises(TypeError, match="StackedCenteredConv"):
        ops.bconv_centered_stacked(jnp.zeros((3, N), jnp.uint32), a.table)


@pytest.mark.parametrize("kind, lin, lout", [("30bit", 12, 48), ("mixed", 9, 13)])
def test_correction_room_decides_the_schedule(kind, lin, lout, device, put, rng, monkeypatch):
    """Without intermediate reductions the CUDA kernel adds k (p_i - Q mod p_i) to the unreduced
    sum, so ``sum_room`` (how many multiples of p_i every row's sum can still take) must be the
    exact bound, and a table without room for k < 2^(32 - fix_bits) is run with reductions:
    same bits either way."""
    import dataclasses

    src, ring, conv = _conv(kind, lin, lout)
    table = conv.table
    mat = np.asarray(table.mat).astype(object)
    sums = [sum(int(t) * q for t, q in zip(row, src)) for row in mat]
    want_room = min(((1 << 64) - 1 - s) // p for s, p in zip(sums, table.dst))
    assert table.sum_room == want_room
    assert all(s + table.sum_room * p < (1 << 64) for s, p in zip(sums, table.dst))
    fix_bits = conv.quotient.fix_bits
    assert table.sum_room >= (1 << (32 - fix_bits)) - 1  # 30-bit bases have room
    assert centered_fold_every(table, fix_bits) == table.fold_every == lin
    tight = dataclasses.replace(table, sum_room=0)
    assert centered_fold_every(tight, fix_bits) == lin - 1
    x = put(jnp.asarray(random_residues(rng, src, N, batch=(2,))))
    ring, conv = put(ring), put(conv)
    want = _unfused(x, conv, ring, monkeypatch)
    for t in (conv.table, put(tight)):
        np.testing.assert_array_equal(np.asarray(bconv_centered(x, t, conv.quotient, conv.src_prod)), want)
