"""Registering frozen dataclasses as pytrees: array fields are leaves, the rest static."""
from __future__ import annotations

import dataclasses

import jax


def static_field(**kwargs):
    """A dataclass field that is pytree auxiliary data (hashable, part of the jit cache key)."""
    return dataclasses.field(metadata={"static": True}, **kwargs)


def pytree_dataclass(cls):
    """``@dataclass(frozen=True)`` + ``jax.tree_util.register_dataclass``.

    Fields declared with :func:`static_field` become auxiliary data; all others are leaves.
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)
    data = [f.name for f in fields if not f.metadata.get("static")]
    meta = [f.name for f in fields if f.metadata.get("static")]
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)
