"""The lattice layer shared by every scheme: RLWE/RGSW ciphertexts, gadget decomposition, key
switching (gadget, hybrid), external products.

Built only from :mod:`jax_fhe.rns` (tables, sampling) and :mod:`jax_fhe.ops` (kernels).
"""
