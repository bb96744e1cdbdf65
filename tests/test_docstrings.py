"""Every public function, class, method and property of the package has a docstring.

The public API is what each package exports in ``__all__``, recursively (modules exported
there are walked too; a public module without ``__all__`` exports the public names it defines),
and the public methods and properties of the classes found there."""
from __future__ import annotations

import inspect
import types

import jax_fhe


def _public_names(mod: types.ModuleType) -> list:
    if hasattr(mod, "__all__"):
        return list(mod.__all__)
    return [n for n, v in vars(mod).items() if not n.startswith("_") and (
        getattr(v, "__module__", None) == mod.__name__
        or (isinstance(v, types.ModuleType) and v.__name__.startswith(mod.__name__ + ".")))]


def _member_function(v):
    """The function behind a class attribute (method, property, class/static method), or None."""
    if isinstance(v, property):
        return v.fget
    if isinstance(v, (classmethod, staticmethod)):
        return v.__func__
    return v if inspect.isfunction(v) else None


def public_api(root: types.ModuleType) -> list:
    """[(qualified name, object)] of the public API under ``root``: modules, classes, functions,
    and the public methods and properties (their functions) of the classes."""
    seen, out = {root.__name__}, []

    def walk(mod):
        for name in _public_names(mod):
            obj = getattr(mod, name)
            qual = f"{mod.__name__}.{name}"
            if isinstance(obj, types.ModuleType):
                if obj.__name__.startswith(root.__name__) and obj.__name__ not in seen:
                    seen.add(obj.__name__)
                    out.append((qual, obj))
                    walk(obj)
                continue
            if not (inspect.isclass(obj) or inspect.isfunction(obj)):
                continue                       # constants, presets, instances
            out.append((qual, obj))
            if inspect.isclass(obj) and obj.__module__.startswith(root.__name__):
                for attr, v in vars(obj).items():
                    f = _member_function(v)
                    if not attr.startswith("_") and f is not None:
                        out.append((f"{qual}.{attr}", f))

    walk(root)
    return out


def undocumented(root: types.ModuleType) -> list:
    """Qualified names of the public API under ``root`` that lack a docstring."""
    return sorted({q for q, obj in public_api(root) if not (obj.__doc__ or "").strip()})


def test_every_public_function_has_a_docstring():
    missing = undocumented(jax_fhe)
    assert not missing, f"{len(missing)} public names without a docstring:\n" + "\n".join(missing)


def test_the_walker_finds_a_missing_docstring():
    """The check can fail: a planted package with undocumented names."""
    pkg = types.ModuleType("planted", "A planted package.")
    sub = types.ModuleType("planted.sub", "A documented submodule.")

    def documented():
        """Here."""

    def bare():
        pass

    class Thing:
        """A class."""

        def method(self):
            pass

        @property
        def prop(self):
            return 1

        def _private(self):
            pass

    for f in (documented, bare, Thing):
        f.__module__ = "planted.sub"
    sub.documented, sub.bare, sub.Thing = documented, bare, Thing
    pkg.sub = sub
    pkg.__all__ = ["sub"]
    assert undocumented(pkg) == ["planted.sub.Thing.method", "planted.sub.Thing.prop", "planted.sub.bare"]
    # and it walks the real package deep enough: functions, methods, properties, submodules
    names = {q for q, _ in public_api(jax_fhe)}
    for q in ("jax_fhe.ckks.encode", "jax_fhe.io.save", "jax_fhe.rlwe.RLWEParams.modulus",
              "jax_fhe.rlwe.Ciphertext.degree", "jax_fhe.pir.protocols.client_keygen", "jax_fhe.rns.HostRandom.public",
              "jax_fhe.circuits.bootstrapping.Bootstrapper.rotation_steps"):
        assert q in names, q
    assert len(names) > 400
