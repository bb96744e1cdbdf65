"""jax_fhe.io: every serializable kind round-trips (bit for bit, onto the test's device), seed
compression halves keys and secret-key ciphertexts, each corruption case raises a clear error,
secret keys need an explicit call, and a ciphertext saved on the CPU decrypts on the GPU and back
with the same bits."""
from __future__ import annotations

import hashlib
import io as pyio
import os
import stat
import struct

import jax
import numpy as np
import pytest

from jax_fhe import ckks, circuits, io, lwe, rlwe, rns
from jax_fhe.pir import exppack, protocols, ring, simplepir
from jax_fhe.rns import HostRandom

R = HostRandom.insecure_deterministic


# -- fixtures ---------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def toy():
    params = ckks.toy_n12()
    ctx = ckks.make_context(params)
    keys = ckks.keygen(ctx, R(1), rotations=[1, -3], conjugation=True)
    seeded = ckks.keygen(ctx, R(2), rotations=[2], conjugation=True, seed_a=True)
    return params, ctx, keys, seeded


@pytest.fixture(scope="module")
def pir_objects():
    """Toy VIPIR (hybrid) and SimplePIR objects."""
    params = protocols.make_params("hybrid", blocks=2, cols=4, lwe=lwe.LWE_TOY, ring=ring.RING_TOY, rng=R(3))
    tables = ring.make_tables(params.ring)
    records = np.random.default_rng(4).integers(0, 256, (params.num_records, params.record_bytes), dtype=np.uint8)
    server = protocols.server_setup(params, records, tables)
    keys = protocols.client_keygen(params, tables, R(5))
    query, secret = protocols.client_query(keys, tables, [1, 6], R(6))
    answer = protocols.answer(server, keys.public, query)
    sp = simplepir.make_params(64, lwe=lwe.LWE_TOY, rng=R(7))
    sdb, hint = simplepir.server_setup(sp, np.arange(64, dtype=np.uint8))
    sq, ss = simplepir.client_query(sp, [3, 10], R(8))
    sa = simplepir.answer(sdb, sq)
    return {"vipir": params, "tables": tables, "server": server, "keys": keys, "query": query, "secret": secret,
            "answer": answer, "records": records, "sp": sp, "sdb": sdb, "hint": hint, "sq": sq, "ss": ss, "sa": sa}


@pytest.fixture(scope="module")
def boot(toy_boot_context):
    ctx = toy_boot_context
    b = circuits.make_bootstrapper(ctx, circuits.BootstrapConfig(slots=64))
    sk = ckks.gen_secret_key(ctx, R(9))
    keys = circuits.gen_bootstrap_keys(ctx, sk, b, R(10), seed_a=True)
    return ctx, b, sk, keys


def _enc(z, ctx, key, seed, **kw):
    return ckks.encrypt(ckks.encode(z, ctx), ctx, key, R(seed), **kw)


def _z(shape, seed=0):
    rng = np.random.default_rng(seed)
    return rng.uniform(-1, 1, shape) + 1j * rng.uniform(-1, 1, shape)


def assert_same(a, b, device=None):
    """Same type, same static data, same bits in every array (and arrays on ``device``)."""
    assert type(a) is type(b)
    la, ta = jax.tree.flatten(a)
    lb, tb = jax.tree.flatten(b)
    assert ta == tb, f"{ta} != {tb}"
    for x, y in zip(la, lb):
        if isinstance(x, (jax.Array, np.ndarray)):
            assert isinstance(y, jax.Array)
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
            if device is not None:
                assert y.devices() == {device}
        else:
            assert x == y


# -- round trips of every kind -----------------------------------------------------------------------

def _ckks_cases(toy):
    params, ctx, keys, seeded = toy
    z = _z((3, params.slots))
    pt = ckks.encode(z, ctx)
    ct = _enc(z, ctx, keys.public, 11)
    sq = ckks.mul(ct, ct, ctx, relinearize=False)                    # degree 2, level 5
    return {
        "ckks.CKKSParams": params,
        "ckks.Plaintext (batch 3)": pt,
        "ckks.Ciphertext (batch 3, pk)": ct,
        "ckks.Ciphertext (sk, seeded)": _enc(z[0], ctx, seeded.secret, 12, seed_a=True),
        "ckks.Ciphertext (degree 2, level 5)": sq,
        "ckks.Ciphertext (sparse slots, level 2)": ckks.encrypt(ckks.encode(z[0, :64], ctx, level=2), ctx,
                                                                keys.secret, R(13)),
        "ckks.PublicKey": keys.public,
        "ckks.PublicKey (seeded)": seeded.public,
        "ckks.EvalKeys": keys.evaluation,
        "ckks.EvalKeys (seeded)": seeded.evaluation,
        "rlwe.KeySwitchKey": keys.evaluation.relin,
        "rlwe.Ciphertext": rlwe.Ciphertext(data=ct.data[0], is_ntt=False),
        "tuple, list, dict": (pt, [ct[0]], {"step": 1, "key": keys.evaluation.rotations[1]}),
        "rns.RNSContext": ctx.ring,
        "rlwe.RLWEParams": rlwe.RLWEParams(log_n=params.log_n, q_primes=params.q_primes, p_primes=params.p_primes,
                                           levels=params.levels, alpha=params.alpha, name="rlwe-toy", insecure=True),
    }


CKKS_CASES = ["ckks.CKKSParams", "ckks.Plaintext (batch 3)", "ckks.Ciphertext (batch 3, pk)",
              "ckks.Ciphertext (sk, seeded)", "ckks.Ciphertext (degree 2, level 5)",
              "ckks.Ciphertext (sparse slots, level 2)", "ckks.PublicKey", "ckks.PublicKey (seeded)",
              "ckks.EvalKeys", "ckks.EvalKeys (seeded)", "rlwe.KeySwitchKey", "rlwe.Ciphertext", "tuple, list, dict",
              "rns.RNSContext", "rlwe.RLWEParams"]


@pytest.mark.parametrize("case", CKKS_CASES)
def test_ckks_round_trip(toy, case, device, tmp_path):
    obj = _ckks_cases(toy)[case]
    path = tmp_path / "obj.jfhe"
    size = io.save(obj, path)
    assert size == path.stat().st_size == len(io.dumps(obj))
    back = io.load(path, device=device)
    assert_same(obj, back, device if jax.tree.leaves(obj) else None)
    assert_same(obj, io.loads(io.dumps(obj), device=device))
    with open(path, "rb") as f:                          # file objects too
        assert_same(obj, io.load(f, device=device))


def test_contexts_are_rebuilt(toy, device):
    """A context is stored as its parameter set (a few hundred bytes) and rebuilt bit for bit;
    restricted levels stay restricted; an expected context is reused, not rebuilt."""
    params, ctx, _, _ = toy
    blob = io.dumps(ctx)
    assert len(blob) < 4096
    assert_same(ctx, io.loads(blob, device=device), device)
    part = ctx.for_levels([3, 4])
    back = io.loads(io.dumps(part))
    assert back.levels() == (3, 4)
    assert_same(part, back)
    assert io.loads(blob, expected=ctx) is ctx


def test_expected_params_are_substituted(toy):
    params, ctx, keys, _ = toy
    ct = _enc(np.ones(8), ctx, keys.public, 14)
    assert io.loads(io.dumps(ct), expected=params).params is params
    assert io.loads(io.dumps(ct), expected=ctx).params is params
    assert io.loads(io.dumps(ct)).params == params


def test_secret_keys_round_trip_only_on_request(toy, tmp_path):
    params, ctx, keys, _ = toy
    for obj in (keys.secret, keys, (keys.public, keys.secret)):
        with pytest.raises(ValueError, match="secret key material.*save_secret_key"):
            io.save(obj, tmp_path / "no.jfhe")
        with pytest.raises(ValueError, match="secret key material"):
            io.dumps(obj)
    assert not (tmp_path / "no.jfhe").exists()
    path = tmp_path / "sk.jfhe"
    io.save_secret_key(keys, path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert io.info(path)["secret"]
    assert_same(keys, io.load(path, expected=params))
    assert_same(keys.secret, io.loads(io.dumps(keys.secret, allow_secret=True)))
    assert not io.info(io.dumps(keys.public))["secret"]


def test_pir_round_trip(pir_objects, device):
    o = pir_objects
    public = [o["vipir"], o["vipir"].ring, o["vipir"].lwe, o["tables"], o["keys"].public, o["keys"].public.expansion,
              o["keys"].public.conversion, o["query"], o["answer"], o["server"], o["sp"], o["sdb"], o["hint"],
              o["sq"], o["sa"], lwe.encrypt(lwe.keygen(lwe.LWE_TOY, R(15)), [1, 2, 3], R(16)),
              rlwe.automorphism_key(o["keys"].ring_key.s_ntt, 5, o["tables"].ks, o["tables"].ctx, R(17))]
    for obj in public:
        assert_same(obj, io.loads(io.dumps(obj), device=device), device if jax.tree.leaves(obj) else None)
    secret = [o["keys"], o["keys"].ring_key, o["secret"], o["ss"], lwe.keygen(lwe.LWE_TOY, R(18))]
    for obj in secret:
        with pytest.raises(ValueError, match="secret key material"):
            io.dumps(obj)
        assert_same(obj, io.loads(io.dumps(obj, allow_secret=True), device=device), device)


def test_pir_loaded_objects_work(pir_objects):
    """A server, keys and query that went through files answer and decode correctly."""
    o = pir_objects
    tables = o["tables"]
    server = io.loads(io.dumps(o["server"]), expected=tables)
    assert server.tables is tables
    keys = io.loads(io.dumps(o["keys"], allow_secret=True), expected=o["vipir"])
    query = io.loads(io.dumps(o["query"]), expected=o["vipir"])
    secret = io.loads(io.dumps(o["secret"], allow_secret=True))
    ans = io.loads(io.dumps(protocols.answer(server, io.loads(io.dumps(keys.public)), query)))
    got = protocols.decode(keys, tables, secret, ans)
    np.testing.assert_array_equal(got, o["records"][[1, 6]])


def test_bootstrapping_round_trip(boot):
    """The bootstrapper (rebuilt from its parameter set and configuration) and the seeded
    bootstrapping keys (the dense-to-sparse key covers a few rows only) round-trip."""
    ctx, b, sk, keys = boot
    blob = io.dumps(keys)
    whole = sum(x.nbytes for x in jax.tree.leaves(keys))
    assert 0.49 < len(blob) / whole < 0.51          # every key seed-compressed
    keys2 = io.loads(blob, expected=ctx)
    assert_same(keys, keys2)
    b2 = io.loads(io.dumps(b), expected=ctx)
    assert len(io.dumps(b)) < 8192
    assert_same(b, b2)
    # equal objects compute alike (an eager bootstrap takes ~50 s on a CPU; test_bootstrap runs
    # it): a rotation and the ModRaise switch with the loaded keys give the original bits
    step = min(keys.evk.rotations)
    z = np.random.default_rng(5).uniform(-1, 1, 64)
    ct = ckks.encrypt(ckks.encode(z, ctx), ctx, sk, R(19))
    assert_same(ckks.rotate(ct, step, ctx, keys.evk), ckks.rotate(ct, step, ctx, keys2.evk))
    assert_same(ckks.switch_key(ct, keys.to_dense, ctx), ckks.switch_key(ct, keys2.to_dense, ctx))


def _kinds_in(node) -> set:
    if isinstance(node, dict):
        out = {v for k, v in node.items() if k in ("$obj", "$params", "$data", "$context")}
        return out.union(*(_kinds_in(v) for v in node.values()))
    if isinstance(node, list):
        return set().union(*(_kinds_in(v) for v in node))
    return set()


def test_every_kind_is_round_tripped(toy, pir_objects, boot):
    """The objects the round-trip tests above use cover every kind jax_fhe.io registers."""
    from jax_fhe.io import container

    o = pir_objects
    objects = list(_ckks_cases(toy).values()) + [toy[1], toy[2], toy[2].secret, boot[1], boot[3]] + [
        o["keys"], o["query"], o["secret"], o["answer"], o["server"], o["sdb"], o["hint"], o["sq"], o["ss"], o["sa"],
        lwe.encrypt(lwe.keygen(lwe.LWE_TOY, R(15)), [1], R(16)), lwe.keygen(lwe.LWE_TOY, R(18)),
        rlwe.automorphism_key(o["keys"].ring_key.s_ntt, 5, o["tables"].ks, o["tables"].ctx, R(17))]
    seen = set()
    for obj in objects:
        seen |= _kinds_in(container.unpack(io.dumps(obj, allow_secret=True))[4]["tree"])
    assert seen == set(io.KINDS), sorted(set(io.KINDS) - seen)


# -- seed compression ----------------------------------------------------------------------------------

def test_seeded_objects_are_half_the_size(toy):
    params, ctx, keys, seeded = toy
    pairs = [(keys.public, seeded.public), (keys.evaluation.relin, seeded.evaluation.relin),
             (keys.evaluation, seeded.evaluation)]
    z = _z((4, params.slots), 1)
    pairs.append((_enc(z, ctx, keys.secret, 20), _enc(z, ctx, keys.secret, 20, seed_a=True)))
    for whole, half in pairs:
        a, b = len(io.dumps(whole)), len(io.dumps(half))
        arrays = sum(x.nbytes for x in jax.tree.leaves(whole))
        assert a > arrays and b < arrays / 2 + 4096, (a, b, arrays)
        assert io.info(io.dumps(half))["seeded"] and not io.info(io.dumps(whole))["seeded"]
    # a loaded seeded object keeps its seed: saving it again gives the same bytes
    blob = io.dumps(seeded.evaluation)
    assert io.dumps(io.loads(blob)) == blob


def test_seeded_keys_work_like_unseeded(toy):
    """A seeded key set computes correctly, before and after a round trip (same bits)."""
    params, ctx, _, seeded = toy
    z = _z(params.slots, 2)
    ct = _enc(z, ctx, seeded.public, 21)
    evk = seeded.evaluation
    out = ckks.rotate(ckks.mul(ct, ct, ctx, evk), 2, ctx, evk)
    dec = ckks.decode(ckks.decrypt(out, ctx, seeded.secret), ctx)
    assert ckks.precision(np.roll(z * z, -2), dec).mean_bits > 28
    evk2 = io.loads(io.dumps(evk))
    assert_same(out, ckks.rotate(ckks.mul(ct, ct, ctx, evk2), 2, ctx, evk2))


def test_derived_objects_are_stored_whole(toy):
    """Only the generator's own object carries a seed; a result of an operation, or a copy
    with different data, is stored in full (never a wrong seed)."""
    params, ctx, _, seeded = toy
    ct = _enc(np.ones(8), ctx, seeded.secret, 22, seed_a=True)
    assert io.info(io.dumps(ct))["seeded"]
    for derived in (ckks.add(ct, ct, ctx), ct.replace(data=ct.data), jax.device_put(ct)):
        blob = io.dumps(derived)
        assert not io.info(blob)["seeded"]
        assert_same(derived, io.loads(blob))
    with pytest.raises(ValueError, match="secret-key encryption only"):
        _enc(np.ones(8), ctx, seeded.public, 23, seed_a=True)


def test_a_wrong_seed_record_is_not_trusted(toy):
    """A record that does not match the data (e.g. attached by mistake) is ignored: stored whole."""
    params, ctx, keys, seeded = toy
    key = rlwe.KeySwitchKey(data=keys.evaluation.relin.data, alpha=params.alpha, num_q=params.num_q)
    rns.record_uniform_seed(key, rns.uniform_seed_of(seeded.evaluation.relin))
    blob = io.dumps(key)
    assert not io.info(blob)["seeded"]
    assert_same(key, io.loads(blob))


# -- corruption and mismatch ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def blob(toy):
    params, ctx, keys, seeded = toy
    return io.dumps((_enc(_z((2, 8), 3), ctx, keys.public, 24), seeded.evaluation.relin))


def test_wrong_parameters_raise(toy, blob):
    params, ctx, keys, _ = toy
    other = ckks.toy_n11_single()
    with pytest.raises(ValueError, match=r"for parameter set 'toy-N12'.*not for the expected 'toy-N11-single'"):
        io.loads(blob, expected=other)
    with pytest.raises(ValueError, match="not for the expected"):
        io.loads(io.dumps(keys.public), expected=ckks.make_context(other))
    renamed = ckks.CKKSParams(**{**{f: getattr(params, f) for f in params.__dataclass_fields__}, "name": "copy"})
    with pytest.raises(ValueError, match="not for the expected 'copy'"):
        io.loads(blob, expected=renamed)   # equal parameters under another name are another set
    with pytest.raises(ValueError, match="no parameter set"):
        io.loads(io.dumps(keys.evaluation.relin), expected=params)
    with pytest.raises(TypeError, match="expected must be a parameter set"):
        io.loads(blob, expected="toy-n12")
    # the decrypting side checks too: a loaded ciphertext under another context
    ct = io.loads(blob)[0]
    with pytest.raises(ValueError, match="same parameter set"):
        ckks.decrypt(ct, ckks.make_context(other), ckks.gen_secret_key(ckks.make_context(other)))


@pytest.mark.parametrize("cut", [0, 3, 10, 40, 200, "half", -33, -1])
def test_truncated_raises(blob, cut):
    n = len(blob) // 2 if cut == "half" else (cut if cut >= 0 else len(blob) + cut)
    with pytest.raises(io.FormatError, match="truncated"):
        io.loads(blob[:n])


def test_flipped_byte_raises(blob):
    """A flipped bit anywhere (header, description, payload, checksum) is caught."""
    positions = sorted({0, 5, 6, 8, 15, 16, 18, 49, 50, 52, 60, 200, 1000, len(blob) // 2, len(blob) - 40,
                        len(blob) - 33, len(blob) - 32, len(blob) - 1} | set(range(60, len(blob), 9973)))
    for pos in positions:
        bad = bytearray(blob)
        bad[pos] ^= 0x10
        with pytest.raises(io.FormatError, match="checksum mismatch|truncated|corrupted|not a jax_fhe file"):
            io.loads(bytes(bad))
    io.loads(blob)


def _resign(data: bytearray) -> bytes:
    data[-32:] = hashlib.sha256(bytes(data[:-32])).digest()
    return bytes(data)


def test_newer_version_raises(blob):
    newer = bytearray(blob)
    struct.pack_into("<H", newer, 6, io.FORMAT_VERSION + 1)
    with pytest.raises(io.FormatError, match=rf"format version {io.FORMAT_VERSION + 1} by a newer jax_fhe.*upgrade"):
        io.loads(_resign(newer))
    with pytest.raises(io.FormatError, match="newer"):
        io.info(_resign(newer))


def test_not_a_jax_fhe_file_raises(tmp_path):
    for data in (b"PK\x03\x04 a zip file", b"\x93NUMPY", b"JAX", b""):
        with pytest.raises(io.FormatError, match="not a jax_fhe file|truncated"):
            io.loads(data)
    (tmp_path / "x.npy").write_bytes(b"\x93NUMPY" + bytes(100))
    with pytest.raises(io.FormatError, match="not a jax_fhe file"):
        io.load(tmp_path / "x.npy")


def test_crafted_non_canonical_residues_raise(toy):
    """A file with a valid checksum but a residue >= its prime (not written by jax_fhe) is
    rejected on the host, before any kernel sees it."""
    params, ctx, keys, _ = toy
    ct = _enc(np.ones(8), ctx, keys.public, 25)
    data = bytearray(io.dumps(ct))
    q = params.primes(ct.level)[0]
    # the payload is the last array before the checksum: its first word is limb 0, coefficient 0
    payload_start = len(data) - 32 - ct.data.size * 4
    struct.pack_into("<I", data, payload_start, q)
    with pytest.raises(io.FormatError, match="not canonical"):
        io.loads(_resign(data))


def _repack(blob: bytes, edit) -> bytes:
    """The same file with its description edited and the checksum redone (a crafted file)."""
    from jax_fhe.io import container

    _, flags, fp, kind, meta, payload = container.unpack(blob)
    edit(meta)
    return b"".join(container.pack(kind, flags, fp, meta, [bytes(payload)]))


def test_crafted_descriptions_raise(toy):
    """Descriptions that pass the checksum but do not describe a valid object (a crafted or
    buggy writer) raise FormatError, and a seed record cannot make the reader allocate more
    than the payload describes."""
    params, ctx, _, seeded = toy
    blob = io.dumps(seeded.evaluation.relin)
    io.loads(_repack(blob, lambda m: None))

    def seeded_desc(m):
        return next(a for a in m["arrays"] if "seeded" in a)["seeded"]

    edits = {
        "huge seeded batch": (lambda m: seeded_desc(m).update(batch=[1 << 40]), "malformed seed record"),
        "wrong seed limbs": (lambda m: seeded_desc(m).update(moduli=seeded_desc(m)["moduli"][:-1]), "malformed seed"),
        "array past the payload": (lambda m: m["arrays"][0].update(offset=1 << 30), "do not hold"),
        "bad dtype": (lambda m: m["arrays"][0].update(dtype="<f2"), "not allowed"),
        "unknown kind": (lambda m: m["tree"].update({"$obj": "ckks.Nonsense"}), "unknown object kind"),
        "renamed field": (lambda m: m["tree"]["fields"].update(extra=1), "cannot rebuild"),
        "zero alpha": (lambda m: m["tree"]["fields"].update(alpha=0), "malformed|cannot"),
        "not a node": (lambda m: m.update(tree={"$tuple": [{"$foo": 1}]}), "unknown tag"),
        "no tree": (lambda m: m.pop("tree"), "no tree"),
    }
    for name, (edit, says) in edits.items():
        with pytest.raises(io.FormatError, match=says):
            io.loads(_repack(blob, edit))


def test_unserializable_objects_raise(toy):
    params, ctx, _, _ = toy
    for obj in (ctx.keyswitch_tables(2), object(), np.zeros(3, np.float16)):
        with pytest.raises(TypeError, match="cannot (serialize|store)"):
            io.dumps(obj)


def test_info_and_fingerprint(toy, blob):
    params = toy[0]
    meta = io.info(blob)
    assert meta["version"] == io.FORMAT_VERSION and meta["kind"] == "tuple" and meta["params"] == "toy-N12"
    assert meta["fingerprint"] == io.fingerprint(params) and meta["size"] == len(blob) and meta["seeded"]
    assert io.info(pyio.BytesIO(blob)) == meta
    assert io.fingerprint(params) == io.fingerprint(ckks.toy_n12()) != io.fingerprint(ckks.toy_n11_single())
    with pytest.raises(TypeError, match="parameter set"):
        io.fingerprint(toy[1])


def test_save_is_atomic(toy, tmp_path, monkeypatch):
    """A save that fails (refused, or interrupted before the rename) leaves the old file intact
    and no temporary file behind."""
    params, ctx, keys, _ = toy
    path = tmp_path / "keys.jfhe"
    io.save(keys.public, path)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        io.save(keys, path)

    def interrupted(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", interrupted)
    with pytest.raises(KeyboardInterrupt):
        io.save(keys.evaluation, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["keys.jfhe"]


# -- CPU <-> GPU -------------------------------------------------------------------------------------------

def test_cpu_saved_ciphertext_decrypts_on_device_and_back(device, tmp_path):
    """Keys and a ciphertext made on the CPU load onto ``device``, decrypt there to the CPU's
    bits; a product and rotation computed there load back on the CPU with the same bits."""
    cpu = jax.devices("cpu")[0]
    with jax.default_device(cpu):
        params = ckks.toy_n12()
        ctx = ckks.make_context(params)
        keys = ckks.keygen(ctx, R(30), rotations=[1], seed_a=True)
        z = _z((2, params.slots), 4)
        ct = ckks.encrypt(ckks.encode(z, ctx), ctx, keys.secret, R(31), seed_a=True)
        want_pt = ckks.decrypt(ct, ctx, keys.secret)
    io.save(ct, tmp_path / "ct.jfhe")
    io.save(keys.evaluation, tmp_path / "evk.jfhe")
    io.save_secret_key(keys.secret, tmp_path / "sk.jfhe")

    dctx = jax.device_put(ctx, device)
    dct = io.load(tmp_path / "ct.jfhe", expected=params, device=device)
    dsk = io.load(tmp_path / "sk.jfhe", expected=params, device=device)
    devk = io.load(tmp_path / "evk.jfhe", expected=params, device=device)
    assert dct.data.devices() == {device}
    got_pt = ckks.decrypt(dct, dctx, dsk)
    assert got_pt.data.devices() == {device}
    np.testing.assert_array_equal(np.asarray(got_pt.data), np.asarray(want_pt.data))

    out = ckks.rotate(ckks.mul(dct, dct, dctx, devk), 1, dctx, devk)   # computed on the device
    io.save(out, tmp_path / "out.jfhe")
    back = io.load(tmp_path / "out.jfhe", expected=params, device=cpu)
    assert back.data.devices() == {cpu}
    np.testing.assert_array_equal(np.asarray(back.data), np.asarray(out.data))
    with jax.default_device(cpu):
        dec = ckks.decode(ckks.decrypt(back, ctx, keys.secret), ctx)
        cpu_out = ckks.rotate(ckks.mul(ct, ct, ctx, keys.evaluation), 1, ctx, keys.evaluation)
    assert ckks.precision(np.roll(z * z, -1, axis=-1), dec).mean_bits > 28
    np.testing.assert_array_equal(np.asarray(back.data), np.asarray(cpu_out.data))   # CPU == device bits
