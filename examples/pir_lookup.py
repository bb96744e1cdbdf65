"""Private lookup with VIPIR's hybrid protocol: the server returns a 4 KiB record without
learning which one was asked for.

    python examples/pir_lookup.py              # CPU: real parameters (N = 4096, n = 1280), tiny DB
    python examples/pir_lookup.py --gib 1      # GPU: the paper's 1 GiB layout (D_0 = 2^10)
    python examples/pir_lookup.py --gib auto   # GPU: the largest paper size (<= --max-gib) that fits

The server's memory is planned first (``jax_fhe.pir.memory``): the DB and hint are held in the
chunks the plan picks, and a size that cannot fit the device stops before allocating.

Client and server are in one process here; the comments say what travels over the network.
"""
import argparse
import time

import jax
import numpy as np

from jax_fhe.pir import memory
from jax_fhe.pir import protocols as pr
from jax_fhe.pir import ring
from jax_fhe.rns import HostRandom


def fitting_params(max_gib, batch, budget, rng):
    """The largest paper-layout hybrid DB (1, 4, 16, 64 GiB; at most ``max_gib``) whose memory
    plan fits ``budget`` bytes (None, a CPU: the 1 GiB layout)."""
    sizes = [g for g in (64, 16, 4, 1) if g <= max_gib] or [1]
    for gib in sizes:
        params = pr.paper_params("hybrid", gib, rng=rng)
        try:
            memory.plan(params, batch, memory_bytes=budget)
        except MemoryError:
            continue
        if budget is not None or gib == sizes[-1]:
            return params
    raise SystemExit(f"no paper-size DB fits this device at batch {batch}")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", default=None,
                    help="DB size in GiB (paper layout), or 'auto': the largest that fits this device; default: 128 KiB")
    ap.add_argument("--max-gib", type=float, default=16, help="--gib auto: largest size tried (host RAM holds the records)")
    ap.add_argument("--batch", type=int, default=2, help="queries answered in one call (default 2)")
    args = ap.parse_args()

    rng = HostRandom()                                      # os.urandom: secrets and public seeds
    budget = memory.device_memory()                         # None on a CPU: no bound
    if args.gib == "auto":
        params = fitting_params(args.max_gib, args.batch, budget, rng)
    elif args.gib:
        params = pr.paper_params("hybrid", float(args.gib), rng=rng)
    else:
        params = pr.make_params("hybrid", blocks=4, cols=8, rng=rng)   # 32 records x 4 KiB
    plan = memory.plan(params, args.batch, memory_bytes=budget)       # MemoryError if it cannot fit
    tables = ring.make_tables(params.ring)                  # device tables (twiddles, gadgets)
    print(params)
    print(f"planned peak device memory: {plan.peak_bytes / 2**30:.2f} GiB; {plan.chunking}")

    # Server, offline: the records and the hint planes (DB @ A, rounded, NTT'd, split in bytes).
    records = np.frombuffer(HostRandom.insecure_deterministic(1).bytes(params.num_records * params.record_bytes),
                            np.uint8).reshape(params.num_records, params.record_bytes)
    t0 = time.perf_counter()
    server = pr.server_setup(params, records, tables, chunking=plan.chunking)
    print(f"server setup (hint): {time.perf_counter() - t0:.1f} s")

    # Client, once: a long-term RLWE key; keys.public (expansion + RGSW(s) keys) is uploaded.
    keys = pr.client_keygen(params, tables, rng)
    comm = params.communication()
    print(f"reusable keys: {comm['reusable_keys'] / 2**20:.2f} MiB; per query: "
          f"{comm['query'] / 1024:.0f} KiB up, {comm['response'] / 1024:.0f} KiB down")

    # Client: the query (one-hot LWE b-vector + one RLWE ciphertext carrying s and the block bits).
    wanted = [int(i) for i in rng.uint64((args.batch,)) % np.uint64(params.num_records)]
    query, secret = pr.client_query(keys, tables, wanted, rng)

    # Server, online: one jitted call for the batch.
    ans = pr.answer(server, keys.public, query, chunking=plan.chunking)
    jax.block_until_ready(ans.ct)
    t0 = time.perf_counter()
    ans = pr.answer(server, keys.public, query, chunking=plan.chunking)
    jax.block_until_ready(ans.ct)
    print(f"server answer for {args.batch} queries: {1e3 * (time.perf_counter() - t0):.1f} ms "
          f"on {jax.devices()[0].device_kind}")

    # Client: decrypt.
    got = pr.decode(keys, tables, secret, ans)
    for i, rec in zip(wanted, got):
        ok = np.array_equal(rec, records[i])
        print(f"record {i}: {rec[:8].tolist()}... {'OK' if ok else 'MISMATCH'}")


if __name__ == "__main__":
    main()
