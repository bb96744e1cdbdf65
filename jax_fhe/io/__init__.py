"""Saving and loading jax_fhe objects: a versioned, checksummed file format.

    from jax_fhe import ckks, io
    io.save(ct, "ct.jfhe")                              # ciphertexts, keys, params, contexts, ...
    ct = io.load("ct.jfhe", expected=ctx)               # checks the parameter set, rebuilds contexts
    blob = io.dumps(keys.evaluation); evk = io.loads(blob, expected=params)
    io.save_secret_key(keys.secret, "sk.jfhe")          # secret keys only on request (mode 0600)

The format (:mod:`.container`): a header (magic ``b"JAXFHE"``, format version, total length,
flags, the SHA-256 fingerprint of the object's parameter set, the object's kind), a JSON
description (the object's structure and static fields, its parameter sets as data, and the
dtype, shape and payload position of every array), the arrays' little-endian bytes, and a
SHA-256 of everything before it. Loading checks, in order: the magic, the length (truncation),
the checksum (any flipped byte), the version (a newer one says so), the parameter set against
``expected``, then shapes and canonical residues of the host data; each failure is a clear
ValueError (:class:`FormatError` for the file itself).

What is stored how:

* parameter sets (``ckks.CKKSParams``, ``rlwe.RLWEParams``, ``lwe.LWEParams``, PIR
  ``RingParams``, ``VIPIRParams``, ``SimplePIRParams``): their fields, as data;
* contexts (``ckks.CKKSContext``, ``rns.RNSContext``, PIR ``RingTables``,
  ``circuits.Bootstrapper``): what rebuilds them (the parameter set, the bootstrapping
  configuration); :func:`load` rebuilds them, or reuses the context passed as ``expected``;
* ciphertexts, plaintexts (any batch shape), public, evaluation (relinearization, rotation,
  conjugation) and bootstrapping keys, PIR keys, queries, answers, hints and servers: every
  field, arrays in the payload;
* seed compression: a key or secret-key ciphertext generated with ``seed_a=True``
  (``ckks.keygen``, ``gen_public_key``, ``gen_relin_key``, ``gen_rotation_keys``,
  ``gen_galois_key``, ``gen_switching_key``, ``ckks.encrypt`` with a secret key,
  ``circuits.gen_bootstrap_keys``; the lattice layer's hybrid and gadget key generators with
  ``a_seed``) draws its uniform "a" half from a public SHAKE-256 seed, and the file stores the
  32-byte seed instead: half the size. Objects derived from them (results of operations, a
  ``jax.device_put`` copy, public-key ciphertexts, PIR keys and queries) are stored whole;
* secret keys (``ckks.SecretKey`` and ``KeySet``, PIR ``RingKey``, ``ClientKeys`` and query
  secrets, ``lwe.LWESecretKey``): only through :func:`save_secret_key` or ``allow_secret=True``.
"""
from .codec import KINDS
from .container import FORMAT_VERSION, MAGIC, FormatError
from .serialize import dumps, fingerprint, info, load, loads, save, save_secret_key

__all__ = ["FORMAT_VERSION", "FormatError", "KINDS", "MAGIC", "dumps", "fingerprint", "info", "load", "loads",
           "save", "save_secret_key"]
