"""rns.host.host_map: the results of a plain loop, in order, errors raised."""
import numpy as np
import pytest

from jax_fhe.rns.host import host_map


def test_host_map_equals_a_loop():
    items = [np.arange(i, i + 1000.0) for i in range(37)]
    fn = lambda x: np.fft.fft(x).real.sum()  # noqa: E731
    assert host_map(fn, items) == [fn(x) for x in items]
    assert host_map(fn, []) == [] and host_map(fn, items[:1]) == [fn(items[0])]


def test_host_map_raises_the_first_error():
    def fn(i):
        if i == 5:
            raise ValueError("item 5")
        return i
    with pytest.raises(ValueError, match="item 5"):
        host_map(fn, range(10))
