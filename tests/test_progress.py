"""The progress switch: every long key generation and PIR hint takes ``progress`` (True: a tqdm
bar, False: none, None: a bar when the work is long, jax_fhe.rns.slow_keygen for keys)."""
import numpy as np
import pytest

from jax_fhe import ckks, circuits, lwe, rns
from jax_fhe.pir import exppack, protocols, ring, simplepir
from jax_fhe.rns import HostRandom

R = HostRandom.insecure_deterministic


@pytest.fixture(scope="module")
def toy():
    ctx = ckks.make_context(ckks.toy_n12())
    return ctx, ckks.gen_secret_key(ctx, R(1))


@pytest.fixture(scope="module")
def pir():
    params = protocols.make_params("hybrid", blocks=2, cols=4, lwe=lwe.LWE_TOY, ring=ring.RING_TOY, rng=R(2))
    tables = ring.make_tables(params.ring)
    return params, tables


def _bar(capsys, desc, run, progress):
    run(progress)
    err = capsys.readouterr().err
    return desc in err


def test_slow_keygen_rule():
    assert rns.slow_keygen(4, 1 << 14) and rns.slow_keygen(40, 1 << 16)
    assert not rns.slow_keygen(3, 1 << 16) and not rns.slow_keygen(100, 1 << 13)
    assert list(rns.progress_bar([1, 2], False, auto=True, desc="x", unit="y")) == [1, 2]


def test_ckks_key_generation(toy, capsys):
    ctx, sk = toy
    gens = {
        "rotation keys": lambda p: ckks.gen_rotation_keys(ctx, sk, [1, 2], R(3), progress=p),
        "rotation keys ": lambda p: ckks.keygen(ctx, R(4), rotations=[1], relin=False, progress=p),
    }
    for desc, run in gens.items():
        assert _bar(capsys, desc.strip(), run, True)
        assert not _bar(capsys, desc.strip(), run, False)
        assert not _bar(capsys, desc.strip(), run, None)     # N = 2^12: fast, no bar by default


def test_bootstrap_key_generation(toy_boot_context, capsys):
    ctx = toy_boot_context
    boot = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=64))
    sk = ckks.gen_secret_key(ctx, R(5))
    run = lambda p: circuits.gen_bootstrap_keys(ctx, sk, boot, R(6), progress=p)   # noqa: E731
    assert _bar(capsys, "rotation keys", run, True)
    assert not _bar(capsys, "rotation keys", run, False)


def test_pir_key_generation_and_hints(pir, capsys):
    params, tables = pir
    key = ring.keygen(tables, R(7))
    records = np.zeros((params.num_records, params.record_bytes), np.uint8)
    sp = simplepir.make_params(64, lwe=lwe.LWE_TOY, rng=R(8))
    gens = {
        "expansion keys": lambda p: exppack.make_expansion_keys(key, tables, 3, R(9), progress=p),
        "expansion keys ": lambda p: protocols.client_keygen(params, tables, R(10), progress=p),
        "VIPIR DB + hint": lambda p: protocols.server_setup(params, records, tables, progress=p, blocks_per_step=1),
        "SimplePIR hint": lambda p: simplepir.server_setup(sp, np.zeros(64, np.uint8), progress=p, chunk_rows=4),
    }
    for desc, run in gens.items():
        assert _bar(capsys, desc.strip(), run, True), desc
        assert not _bar(capsys, desc.strip(), run, False), desc
    # defaults: toy key generation is fast (no bar); hints in several steps show one
    assert not _bar(capsys, "expansion keys", gens["expansion keys "], None)
    assert _bar(capsys, "VIPIR DB + hint", gens["VIPIR DB + hint"], None)
