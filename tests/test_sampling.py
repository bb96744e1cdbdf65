"""Host sampling shared by the schemes (jax_fhe.rns.sampling)."""
import numpy as np
import pytest

from jax_fhe.rns import HostRandom, to_residues


def test_public_stream_is_reproducible_and_not_secure():
    a, b = HostRandom.public(123), HostRandom.public(123)
    assert not a.secure and "PUBLIC" in repr(a)
    assert a.bytes(64) == b.bytes(64) and a.bytes(64) == b.bytes(64)   # stream continues alike
    assert HostRandom.public(123).bytes(64) != HostRandom.public(124).bytes(64)
    assert HostRandom.public(b"seed").bytes(8) == HostRandom.public(b"seed").bytes(8)


def test_public_seed_errors():
    with pytest.raises(ValueError, match="2\\^64"):
        HostRandom.public(1 << 64)
    with pytest.raises(TypeError, match="int or bytes"):
        HostRandom.public(1.5)


def test_uniform_mod_range_and_spread():
    moduli = [97, (1 << 31) - 1, 3]
    x = HostRandom.insecure_deterministic(3).uniform_mod(moduli, (4096,))
    assert x.shape == (3, 4096) and x.dtype == np.uint32
    for row, q in zip(x, moduli):
        assert row.max() < q
    assert len(np.unique(x[2])) == 3 and x[1].max() > (1 << 30)  # covers the range


def test_large_draws_do_not_depend_on_threads():
    """A key-sized draw (more than 8 MiB of 64-bit words) is read and reduced in chunks by host
    threads: the values are those of the one-piece computation, for the deterministic and the
    public streams; the secure stream gives exactly the bytes asked for, in range."""
    moduli = [(1 << 30) - 35, (1 << 31) - 1, 12289]
    shape = (2, 1 << 18)
    for make in (lambda: HostRandom.insecure_deterministic(4), lambda: HostRandom.public(b"k")):
        raw = make().uint64((3,) + shape)
        want = (raw % np.asarray(moduli, np.uint64)[:, None, None]).astype(np.uint32)
        np.testing.assert_array_equal(make().uniform_mod(moduli, shape), want)
    secure = HostRandom()
    big = secure.bytes((9 << 22) + 5)
    assert isinstance(big, bytes) and len(big) == (9 << 22) + 5
    x = secure.uniform_mod(moduli, shape)
    assert x.shape == (3,) + shape and all(int(row.max()) < q for row, q in zip(x, moduli))
    assert len(np.unique(x[2])) == 12289                         # every residue drawn


def test_hamming_ternary_weight():
    s = HostRandom.insecure_deterministic(5).hamming_ternary(1024, 64, count=3)
    assert s.shape == (3, 1024)
    assert (np.count_nonzero(s, axis=1) == 64).all()
    assert set(np.unique(s)) <= {-1, 0, 1}
    with pytest.raises(ValueError, match="weight"):
        HostRandom().hamming_ternary(8, 9)


def test_to_residues():
    r = to_residues(np.array([[-1, 0, 5]]), [7, 11])
    assert r.shape == (1, 2, 3)
    np.testing.assert_array_equal(r[0], [[6, 0, 5], [10, 0, 5]])
    with pytest.raises(TypeError, match="integers"):
        to_residues(np.array([0.5]), [7])


# ---- the device sampler (ops.sample_small): ChaCha20 keystream, table inversion ----

def test_chacha20_reference_matches_rfc8439():
    """The reference block function against RFC 8439 section 2.3.2's test vector."""
    from reference import chacha20_block
    key = [int.from_bytes(bytes(range(i, i + 4)), "little") for i in range(0, 32, 4)]
    nonce = [0x09000000, 0x4A000000, 0x00000000]
    want = [0xE4E7F110, 0x15593BD1, 0x1FDD0F50, 0xC47120A3, 0xC7F4D1C7, 0x0368C033, 0x9AAA2204, 0x4E6CD4C3,
            0x466482D2, 0x09AA9F07, 0x05D7C214, 0xA2028BD9, 0xD19C12B5, 0xB94E16DE, 0xE883D0CB, 0x4E3C50A2]
    assert chacha20_block(key, 1, nonce) == want


@pytest.mark.parametrize("table", ["ternary", "gaussian"])
def test_sample_small_matches_reference(device, put, table):
    """The kernel's values are the reference's, bit for bit (a count that ends inside a block,
    two streams, a batch shape), on CPU and GPU."""
    import jax
    from reference import sample_small as ref_sample

    from jax_fhe import ops
    from jax_fhe.rns import TERNARY, gaussian_table

    tab = TERNARY if table == "ternary" else gaussian_table(3.2, 6.0)
    key = HostRandom.insecure_deterministic(9).device_key()
    for shape, stream in (((3, 1029), 0), ((2, 37), 7)):
        got = np.asarray(jax.jit(lambda k: ops.sample_small(k, shape, tab, stream))(put(key)))
        want = ref_sample([int(k) for k in key], int(np.prod(shape)), tab.thresholds, tab.bound, stream)
        assert got.dtype == np.int32 and got.shape == shape
        np.testing.assert_array_equal(got.reshape(-1), np.asarray(want, np.int32))


def test_sample_small_distribution(device, put):
    """2^20 draws per table: every value in range, and a chi-square test of the counts against
    the table's probabilities (p > 1e-6 for a correct sampler: flaky once in a million runs;
    a shifted table or a wrong bit order fails it by far). Streams and keys differ."""
    import jax
    from jax_fhe import ops
    from jax_fhe.rns import TERNARY, gaussian_table

    key = put(HostRandom.insecure_deterministic(11).device_key())
    for tab in (TERNARY, gaussian_table(3.2, 6.0)):
        x = np.asarray(jax.jit(lambda k: ops.sample_small(k, (1 << 20,), tab, 3))(key))
        probs = tab.probabilities()
        assert x.min() >= min(probs) and x.max() <= max(probs)
        values = np.arange(min(probs), max(probs) + 1)
        counts = np.array([(x == v).sum() for v in values], float)
        expect = np.array([probs[int(v)] for v in values]) * x.size
        keep = expect >= 5                       # pool the far tails
        chi2 = (((counts[keep] - expect[keep]) ** 2) / expect[keep]).sum()
        dof = keep.sum()                         # the pooled tail cell adds one, the total removes one
        assert chi2 < dof + 7 * np.sqrt(2 * dof) + 20, (chi2, dof)
        if tab is not TERNARY:
            assert abs(x.std() - 3.2) < 0.02 and abs(x.mean()) < 0.02
    a = np.asarray(ops.sample_small(key, (4096,), TERNARY, 0))
    b = np.asarray(ops.sample_small(key, (4096,), TERNARY, 1))
    c = np.asarray(ops.sample_small(put(HostRandom().device_key()), (4096,), TERNARY, 0))
    assert (a != b).mean() > 0.5 and (a != c).mean() > 0.5


def test_sample_uniform_matches_reference(device, put):
    """Uniform residues on chosen rows of a context (a batch of 2, three limbs): the reference's
    values bit for bit on CPU and GPU; every value below its prime and the range covered."""
    import jax
    from reference import sample_uniform as ref_uniform

    from jax_fhe import ops, rns

    n = 1024
    primes = rns.ntt_primes(30, 3, n) + rns.ntt_primes(31, 2, n)
    ctx = put(rns.make_context(primes, n))
    rows = (4, 0, 2)
    key = HostRandom.insecure_deterministic(12).device_key()
    got = np.asarray(jax.jit(lambda k, c: ops.sample_uniform(k, (2,), c, rows, stream=5))(put(key), ctx))
    moduli = [primes[r] for r in rows]
    want = ref_uniform([int(k) for k in key], moduli, 2, n, 5)
    assert got.shape == (2, 3, n) and got.dtype == np.uint32
    np.testing.assert_array_equal(got.reshape(-1), np.asarray(want, np.uint32))
    for limb, q in enumerate(moduli):
        assert got[:, limb].max() < q and got[:, limb].max() > q * 0.99 and got[:, limb].min() < q * 0.01


def test_sample_small_errors():
    from jax_fhe import ops
    from jax_fhe.rns import TERNARY

    key = HostRandom().device_key()
    with pytest.raises(TypeError, match="uint32\\[8\\]"):
        ops.sample_small(key[:4], (16,), TERNARY)
    with pytest.raises(TypeError, match="uint32\\[8\\]"):
        ops.sample_small(key.astype(np.int32), (16,), TERNARY)
    with pytest.raises(TypeError, match="SmallTable"):
        ops.sample_small(key, (16,), (1, 2))
    from jax_fhe.rns import SmallTable, gaussian_table
    for bad in (dict(thresholds=(5, 3), bound=1), dict(thresholds=(1.5,), bound=0), dict(thresholds=(), bound=0),
                dict(thresholds=(1 << 54,), bound=0), dict(thresholds=(1, 2), bound=3), dict(thresholds=[1], bound=0)):
        with pytest.raises(ValueError, match="SmallTable"):
            SmallTable(**bad)
    with pytest.raises(ValueError, match="sigma \\* tail"):
        gaussian_table(30.0, 6.0)
    with pytest.raises(TypeError):
        ops.sample_small(key, (2.5,), TERNARY)
    with pytest.raises(ValueError, match="stream"):
        ops.sample_small(key, (16,), TERNARY, stream=1 << 32)
    with pytest.raises(ValueError, match="negative"):
        ops.sample_small(key, (-1,), TERNARY)
    assert HostRandom().device_key().dtype == np.uint32
    d = HostRandom.insecure_deterministic(1)
    assert not np.array_equal(d.device_key(), d.device_key())   # the stream moves on
    from jax_fhe import rns
    ctx = rns.make_context(rns.ntt_primes(30, 2, 1024), 1024)
    with pytest.raises(TypeError, match="sample_uniform: the key"):
        ops.sample_uniform(key[:7], (1,), ctx)
    with pytest.raises(ValueError, match="stream"):
        ops.sample_uniform(key, (1,), ctx, stream=-1)
    with pytest.raises(ValueError):
        ops.sample_uniform(key, (1,), ctx, rows=(0, 5))


def test_encryption_refuses_jit():
    """Encryption draws its noise key on the host: inside jax.jit that draw would be baked into
    the program and repeated at every call, so it raises instead; outside, two encryptions of
    one plaintext differ (fresh keys) and decrypt alike."""
    import jax
    from jax_fhe import bfv

    ctx = bfv.make_context(bfv.preset("toy-n12"))
    keys = bfv.keygen(ctx, HostRandom.insecure_deterministic(2))
    pt = bfv.encode(np.arange(ctx.params.n) % 7, ctx)
    for key in (keys.public, keys.secret):
        with pytest.raises(TypeError, match="jax.jit"):
            jax.jit(lambda d: bfv.encrypt(bfv.Plaintext(data=d, params=pt.params), ctx, key).data)(pt.data)
        a, b = bfv.encrypt(pt, ctx, key), bfv.encrypt(pt, ctx, key)
        assert not np.array_equal(np.asarray(a.data), np.asarray(b.data))
        np.testing.assert_array_equal(np.asarray(bfv.decode(bfv.decrypt(a, ctx, keys.secret), ctx)),
                                      np.asarray(bfv.decode(bfv.decrypt(b, ctx, keys.secret), ctx)))


def test_encryption_jits_with_a_device_key(device, put):
    """With ``rng`` a device key (an argument of the jitted function) encryption runs inside
    jax.jit: the same key gives the same ciphertext as the eager call (the key is the whole of
    its randomness), another key another one, and both decrypt; seed_a needs a HostRandom. What
    would repeat one draw raises: a concrete key inside jit, vmap with the key batched or not
    (one key would give every entry the same noise), a public stream as the noise's source."""
    import jax
    from jax_fhe import bfv, ckks

    rng = HostRandom.insecure_deterministic(4)
    ctx = put(bfv.make_context(bfv.preset("toy-n12")))
    keys = put(bfv.keygen(ctx, rng))
    v = np.arange(ctx.params.n) % ctx.params.plain_modulus
    k1, k2 = put(rng.device_key()), put(rng.device_key())
    for key in (keys.public, keys.secret):
        f = jax.jit(lambda v, k, key=key: bfv.encrypt(bfv.encode(v, ctx), ctx, key, k))
        a, b = f(v, k1), f(v, k2)
        np.testing.assert_array_equal(np.asarray(a.data), np.asarray(bfv.encrypt(bfv.encode(v, ctx), ctx, key, k1).data))
        assert not np.array_equal(np.asarray(a.data), np.asarray(b.data))
        for ct in (a, b):
            np.testing.assert_array_equal(np.asarray(bfv.decode(bfv.decrypt(ct, ctx, keys.secret), ctx)), v)
    with pytest.raises(Exception, match="vmap"):
        jax.vmap(lambda v, k: bfv.encrypt(bfv.encode(v, ctx), ctx, keys.public, k).data)(
            np.stack([v, v]), np.stack([np.asarray(k1), np.asarray(k2)]))
    for key in (keys.public, keys.secret):
        with pytest.raises(Exception, match="vmap"):
            jax.vmap(lambda v, key=key: bfv.encrypt(bfv.encode(v, ctx), ctx, key, k1).data)(np.stack([v, v]))
    with pytest.raises(TypeError, match="argument of the jitted function"):
        jax.jit(lambda v: bfv.encrypt(bfv.encode(v, ctx), ctx, keys.public, k1).data)(v)
    with pytest.raises(ValueError, match="public stream"):
        bfv.encrypt(bfv.encode(v, ctx), ctx, keys.public, HostRandom.public(1))

    cctx = put(ckks.make_context(ckks.preset("toy-n12")))
    ck = put(ckks.keygen(cctx, rng))
    z = np.linspace(-1, 1, cctx.params.n // 2)
    pt = ckks.encode(z, cctx)
    ct = jax.jit(lambda pt, k: ckks.encrypt(pt, cctx, ck.public, k))(pt, k1)
    assert np.abs(ckks.decode(ckks.decrypt(ct, cctx, ck.secret), cctx) - z).max() < 2**-15
    with pytest.raises(TypeError, match="seed_a"):
        ckks.encrypt(pt, cctx, ck.secret, k1, seed_a=True)
