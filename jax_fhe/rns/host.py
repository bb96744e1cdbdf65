"""Host work spread over threads: numpy's FFTs and ufuncs release the GIL, so independent chunks
of host encoding run in parallel (one thread per core, at most 16)."""
from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor


def host_map(fn: Callable, items: Iterable) -> list:
    """[fn(x) for x in items], in order, on up to min(16, cores) threads (one item: no thread)."""
    items = list(items)
    workers = min(16, os.cpu_count() or 1, len(items))
    if workers <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(fn, items))
