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
