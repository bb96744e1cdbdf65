"""Registering frozen dataclasses as pytrees: array fields are leaves, the rest static; and
:class:`HostTable`, the small constant tables that are static too."""
from __future__ import annotations

import dataclasses
import hashlib

import jax
import numpy as np


def static_field(**kwargs):
    """A dataclass field that is pytree auxiliary data (hashable, part of the jit cache key)."""
    return dataclasses.field(metadata={"static": True}, **kwargs)


def tables_field(**kwargs):
    """A dataclass field of precomputed tables (e.g. per-level conversion tables): auxiliary
    data when the value holds no array leaves (its arrays are all :class:`HostTable`: the usual
    case), else leaves like any other field. A context's hundreds of table nodes then cost a
    jitted call nothing to flatten (n16-boot: 10 us to dispatch an empty call that takes the
    context, against 203 us with the nodes traversed)."""
    return dataclasses.field(metadata={"tables": True}, **kwargs)


def pytree_dataclass(cls):
    """``@dataclass(frozen=True)`` + pytree registration.

    Fields declared with :func:`static_field` become auxiliary data; fields declared with
    :func:`tables_field` too where they hold no array leaves; all others are leaves.
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = [f.name for f in fields if not f.metadata.get("static") and not f.metadata.get("tables")]
    meta = [f.name for f in fields if f.metadata.get("static")]
    tables = [f.name for f in fields if f.metadata.get("tables")]
    if not tables:
        return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)

    def split(obj):
        # which tables fields are static for this instance, found once per instance
        static = obj.__dict__.get("_static_tables")
        if static is None:
            static = tuple(n for n in tables if not jax.tree_util.tree_leaves(getattr(obj, n)))
            object.__setattr__(obj, "_static_tables", static)
        return static

    def flatten_with_keys(obj):
        static = split(obj)
        names = data + [n for n in tables if n not in static]
        children = [(jax.tree_util.GetAttrKey(n), getattr(obj, n)) for n in names]
        aux = (static, tuple(getattr(obj, n) for n in meta), tuple(getattr(obj, n) for n in static))
        return children, aux

    def flatten(obj):
        children, aux = flatten_with_keys(obj)
        return [c for _, c in children], aux

    def unflatten(aux, children):
        static, meta_vals, static_vals = aux
        names = data + [n for n in tables if n not in static]
        kw = dict(zip(names, children))
        kw.update(zip(meta, meta_vals))
        kw.update(zip(static, static_vals))
        return cls(**kw)

    jax.tree_util.register_pytree_with_keys(cls, flatten_with_keys, unflatten, flatten_func=flatten)
    return cls


class HostTable(np.ndarray):
    """A small read-only numpy table held as pytree auxiliary data (a :func:`static_field`), not
    as a leaf: jit embeds it in the program as a constant instead of taking it as an argument.

    Why: a jitted call pays host time for every argument leaf (about 0.3-0.5 us each), and a
    context holds hundreds of small per-level tables (base-conversion matrices and constants,
    ModDown and rescale factors: 768 leaves at n16-boot, 418 us to dispatch an empty jitted call
    that takes it, against 7 us bare). Equal contents hash and compare equal, so contexts built
    from the same parameters share their compilations; ``==`` against anything but another
    HostTable stays numpy's element-wise comparison. Build with :func:`host_u32`."""

    def __array_finalize__(self, obj):
        self._key = None

    def _content_key(self):
        if self._key is None:
            a = np.ascontiguousarray(self)
            self._key = (a.shape, a.dtype.str, hashlib.blake2b(a.tobytes(), digest_size=16).digest())
        return self._key

    def __hash__(self):
        return hash(self._content_key())

    def __eq__(self, other):
        if other is self:
            return True
        if isinstance(other, HostTable):
            return self._content_key() == other._content_key()
        return np.ndarray.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        return (not eq) if isinstance(eq, bool) else np.logical_not(eq)

    def __reduce__(self):  # pickles as a plain array, rebuilt as a table
        return (host_u32, (np.asarray(self),))


def host_u32(values) -> HostTable:
    """A read-only uint32 :class:`HostTable` of ``values`` (Python ints or numpy integers in
    [0, 2^32); staged through uint64 so that Python ints up to 2^32 - 1 are exact)."""
    a = np.array(np.asarray(values, dtype=np.uint64).astype(np.uint32)).view(HostTable)
    a.flags.writeable = False
    a._content_key()
    return a
