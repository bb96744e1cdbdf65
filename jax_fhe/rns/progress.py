"""Progress bars for long host-side work (key generation, PIR hints): one switch everywhere.

Every function that can run for more than about a second takes ``progress``: True shows a tqdm
bar, False never does, None (the default) shows one when the work is long enough to matter
(:func:`slow_keygen` for key generation; the callers' own rule otherwise).
"""
from __future__ import annotations

from collections.abc import Iterable


def slow_keygen(count: int, n: int) -> bool:
    """Whether generating ``count`` switching keys at ring degree ``n`` takes long enough (about
    a second or more on a CPU host) to show a bar by default: four or more keys at N >= 2^14."""
    return count >= 4 and n >= 1 << 14


def progress_bar(items: Iterable, progress: bool | None, *, auto: bool, desc: str, unit: str) -> Iterable:
    """``items``, wrapped in a tqdm bar when ``progress`` is True, or None and ``auto``."""
    show = auto if progress is None else bool(progress)
    if not show:
        return items
    from tqdm.auto import tqdm

    return tqdm(items, desc=desc, unit=unit)
