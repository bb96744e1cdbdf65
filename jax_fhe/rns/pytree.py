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
    """A dataclass field of precomputed tables (e.g. per-level conversion tables whose arrays are
    :class:`HostTable` s inside :func:`static_field` s): auxiliary data when the value holds no
    array leaves where the instance is built (the usual case), else leaves like any other field
    (e.g. KLSS tables, which hold a ring's twiddles). The choice travels with the instance
    through flatten and unflatten, so trees mapped from it (``jax.tree.map(lambda _: None, ctx)``
    as vmap's in_axes) keep its structure. A context's hundreds of table nodes then cost a
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
        # which tables fields are static for this instance: found where it is built, then
        # carried by unflatten (not recomputed from leaves a tree map may have replaced)
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
        obj = cls(**kw)
        object.__setattr__(obj, "_static_tables", static)
        return obj

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
        key = self._key
        if key is None:
            digest = hashlib.blake2b(np.ascontiguousarray(self).tobytes(), digest_size=16).digest()
            key = (self.shape, self.dtype.str, digest)
            if not self.flags.writeable:   # a writable one (a numpy result) may still change
                self._key = key
        return key

    def __hash__(self):
        return hash(self._content_key())

    def __eq__(self, other):
        if other is self:
            return True
        if isinstance(other, HostTable):
            return self._content_key() == other._content_key()
        if other is None:                 # a static field left empty elsewhere (for_levels)
            return False
        return np.ndarray.__eq__(self, other)

    def __ne__(self, other):
        eq = self.__eq__(other)
        if eq is NotImplemented:          # a jax array or tracer: its reflected comparison
            return NotImplemented
        return (not eq) if isinstance(eq, bool) else np.logical_not(eq)

    def __reduce__(self):  # pickles as a plain array, rebuilt read-only
        return (host_table, (np.asarray(self),))

    def __copy__(self):
        return self if not self.flags.writeable else host_table(self)

    def __deepcopy__(self, memo):
        return self.__copy__()


def host_table(values) -> HostTable:
    """A read-only :class:`HostTable` copy of the numpy array ``values`` (its dtype kept)."""
    base = np.array(values)
    base.flags.writeable = False          # then no view of it can be made writable
    t = base.view(HostTable)
    t._content_key()
    return t


def host_u32(values) -> HostTable:
    """A read-only uint32 :class:`HostTable` of ``values`` (Python ints or numpy integers in
    [0, 2^32); staged through uint64 so that Python ints up to 2^32 - 1 are exact)."""
    return host_table(np.asarray(values, dtype=np.uint64).astype(np.uint32))
