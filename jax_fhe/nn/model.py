"""CNNs for encrypted inference: a small layer vocabulary, a Flax module built from it, the
pretrained CIFAR-10 ResNet-20, and the float reference forward pass.

**Layer vocabulary** (``spec``, a tuple; every layer works on one image C x H x W):

* ``("conv", out_channels, stride)``: 3x3 convolution, padding 1, with bias (batch norm folded
  in at inference), then the activation;
* ``("block", out_channels, stride)``: a ResNet basic block, act(conv2(act(conv1(x))) + s(x)) with
  s the identity, or for a stride / width change the "option A" shortcut (x[::2, ::2] with the
  new channels zero on both sides);
* then a global average pool and a dense layer (``classes`` outputs).

:class:`CNN` is the Flax (linen) module of a spec; :data:`RESNET20_SPEC` is He et al.'s CIFAR
ResNet-20. Flax is an optional extra (``pip install jax_fhe[nn]``): only :class:`CNN` needs it;
the parameter loading, the numpy forward pass and the compiler in :mod:`jax_fhe.nn.compiler`
do not.

**Parameters** are a dict of numpy arrays keyed ``"{layer}/{conv}/kernel"`` (HWIO) and
``.../bias``, and ``"dense/kernel"`` [C, classes], ``"dense/bias"``; the Flax module names
are the same with ``_`` for ``/`` (``layer1_conv2``); :func:`to_flax` / :func:`from_flax` convert.
"""
from __future__ import annotations

import numpy as np

# ``CNN`` (built on first access, Flax optional) is public but not in __all__: a star import
# or an API walk must not need Flax.
__all__ = ["CIFAR10_MEAN", "CIFAR10_STD", "RESNET20_SPEC", "check_spec", "forward",
           "from_flax", "init_params", "load_cifar10", "load_resnet20", "preprocess", "relu",
           "to_flax"]

#: Per-channel normalisation of the pretrained ResNet-20 (pixels / 255 first).
CIFAR10_MEAN = (0.485, 0.456, 0.406)
CIFAR10_STD = (0.229, 0.224, 0.225)

#: He et al.'s CIFAR ResNet-20: a 16-channel convolution, 3 stages of 3 basic blocks.
RESNET20_SPEC = (("conv", 16, 1),
                 ("block", 16, 1), ("block", 16, 1), ("block", 16, 1),
                 ("block", 32, 2), ("block", 32, 1), ("block", 32, 1),
                 ("block", 64, 2), ("block", 64, 1), ("block", 64, 1))


def relu(x):
    """max(x, 0) (numpy or jax arrays)."""
    return x * (x > 0)


def check_spec(spec) -> tuple:
    """The spec as a tuple of (kind, out_channels, stride); ValueError for anything else."""
    out = []
    for i, layer in enumerate(spec):
        if (not isinstance(layer, (tuple, list)) or len(layer) != 3 or layer[0] not in ("conv", "block")
                or not isinstance(layer[1], int) or layer[1] < 1 or layer[2] not in (1, 2)):
            raise ValueError(f"spec[{i}] = {layer!r}: expected ('conv' | 'block', channels >= 1, stride 1 | 2)")
        out.append((str(layer[0]), int(layer[1]), int(layer[2])))
    if not out:
        raise ValueError("spec: at least one layer")
    return tuple(out)


def _names(spec):
    """(layer name, [conv names]) per layer."""
    return [(f"layer{i}", ["conv"] if kind == "conv" else ["conv1", "conv2"])
            for i, (kind, _, _) in enumerate(spec)]


def init_params(spec, in_channels: int, classes: int, rng: np.random.Generator) -> dict:
    """Random (He-normal) parameters of ``spec`` in the flat format (tests, toy models)."""
    spec = check_spec(spec)
    params, c = {}, in_channels
    for (name, convs), (_, cout, _) in zip(_names(spec), spec):
        for j, conv in enumerate(convs):
            cin = c if j == 0 else cout
            params[f"{name}/{conv}/kernel"] = rng.normal(0, np.sqrt(2 / (9 * cin)), (3, 3, cin, cout))
            params[f"{name}/{conv}/bias"] = rng.normal(0, 0.1, cout)
        c = cout
    params["dense/kernel"] = rng.normal(0, np.sqrt(1 / c), (c, classes))
    params["dense/bias"] = rng.normal(0, 0.1, classes)
    return params


def load_resnet20(path) -> dict:
    """The pretrained ResNet-20 (``resnet20_cifar10.npz``, PyTorch names) with every batch norm
    folded into its convolution: w' = w gamma / sqrt(var + eps), b' = beta - mean gamma /
    sqrt(var + eps) (eps 1e-5). Returns float64 parameters in the flat format for
    :data:`RESNET20_SPEC`."""
    z = np.load(path)
    need = ("conv1.weight", "bn1.weight", "linear.weight", "layer3.2.conv2.weight")
    if any(k not in z.files for k in need):
        raise ValueError(f"load_resnet20: {path} lacks the ResNet-20 arrays {need}")

    def fold(conv, bn):
        w = z[f"{conv}.weight"].astype(np.float64)          # OIHW
        g = z[f"{bn}.weight"] / np.sqrt(z[f"{bn}.running_var"].astype(np.float64) + 1e-5)
        return (w * g[:, None, None, None]).transpose(2, 3, 1, 0), z[f"{bn}.bias"] - z[f"{bn}.running_mean"] * g

    p = {}
    p["layer0/conv/kernel"], p["layer0/conv/bias"] = fold("conv1", "bn1")
    for i in range(9):
        pre = f"layer{i // 3 + 1}.{i % 3}"
        for j in (1, 2):
            p[f"layer{i + 1}/conv{j}/kernel"], p[f"layer{i + 1}/conv{j}/bias"] = fold(f"{pre}.conv{j}", f"{pre}.bn{j}")
    p["dense/kernel"] = z["linear.weight"].astype(np.float64).T
    p["dense/bias"] = z["linear.bias"].astype(np.float64)
    return p


def load_cifar10(path, count: int | None = None):
    """(x float64[n, 32, 32, 3] preprocessed, y int[n]) from ``cifar10_test_512.npz``."""
    z = np.load(path)
    x, y = z["x"], z["y"].astype(np.int64)
    if count is not None:
        x, y = x[:count], y[:count]
    return preprocess(x), y


def preprocess(x_uint8) -> np.ndarray:
    """uint8 images [..., H, W, 3] -> float64 (x / 255 - mean) / std per channel."""
    x = np.asarray(x_uint8)
    if x.dtype != np.uint8 or x.shape[-1] != 3:
        raise ValueError(f"preprocess: expected uint8 [..., H, W, 3] images, got {x.dtype} {x.shape}")
    return (x / 255.0 - np.asarray(CIFAR10_MEAN)) / np.asarray(CIFAR10_STD)


# -- the float reference (numpy, NHWC) ---------------------------------------------------------------

def _conv(x, w, b, stride):
    """3x3 convolution, padding 1, of x [B, H, W, C] with w [3, 3, C, O]."""
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    h, wd = x.shape[1] // stride, x.shape[2] // stride
    out = np.zeros((x.shape[0], h, wd, w.shape[3])) + b
    for dy in range(3):
        for dx in range(3):
            patch = xp[:, dy:dy + stride * h:stride, dx:dx + stride * wd:stride, :]
            out += patch @ w[dy, dx]
    return out


def _shortcut(x, cout, stride):
    """Option A: subsample by ``stride``, zero channels on both sides up to ``cout``."""
    x = x[:, ::stride, ::stride, :]
    extra = cout - x.shape[3]
    if extra < 0 or extra % 2:
        raise ValueError(f"shortcut: cannot widen {x.shape[3]} channels to {cout} (option A pads evenly)")
    return np.pad(x, ((0, 0), (0, 0), (0, 0), (extra // 2, extra // 2)))


def forward(spec, params: dict, x, act=relu, *, trace: list | None = None) -> np.ndarray:
    """Logits float64[B, classes] of images x [B, H, W, C] (float64 numpy; ``act`` applied
    elementwise). ``trace``: a list that receives every activation's input (for ranges)."""
    spec = check_spec(spec)
    x = np.asarray(x, dtype=np.float64)
    if x.ndim == 3:
        x = x[None]

    def a(v):
        if trace is not None:
            trace.append(v)
        return act(v)

    for (name, _), (kind, cout, stride) in zip(_names(spec), spec):
        if kind == "conv":
            x = a(_conv(x, params[f"{name}/conv/kernel"], params[f"{name}/conv/bias"], stride))
        else:
            h = a(_conv(x, params[f"{name}/conv1/kernel"], params[f"{name}/conv1/bias"], stride))
            h = _conv(h, params[f"{name}/conv2/kernel"], params[f"{name}/conv2/bias"], 1)
            s = x if (stride == 1 and x.shape[3] == cout) else _shortcut(x, cout, stride)
            x = a(h + s)
    return x.mean(axis=(1, 2)) @ params["dense/kernel"] + params["dense/bias"]


# -- Flax ------------------------------------------------------------------------------------------

def _flax():
    try:
        import flax.linen as fnn
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError("jax_fhe.nn.CNN needs Flax: pip install 'jax_fhe[nn]' (or pip install flax)") from e
    return fnn


def to_flax(params: dict) -> dict:
    """Flat parameters -> the nested Flax ``{"params": ...}`` tree (float32 jax arrays)."""
    import jax.numpy as jnp
    tree: dict = {}
    for key, v in params.items():
        *path, leaf = key.split("/")
        tree.setdefault("_".join(path), {})[leaf] = jnp.asarray(v, dtype=jnp.float32)
    return {"params": tree}


def from_flax(variables) -> dict:
    """The nested Flax tree (with or without the ``"params"`` level) -> flat float64 numpy."""
    tree = variables.get("params", variables)
    return {f"{module.replace('_', '/')}/{leaf}": np.asarray(v, dtype=np.float64)
            for module, leaves in tree.items() for leaf, v in leaves.items()}


_CNN = []


def _make_cnn():
    if _CNN:
        return _CNN[0]
    fnn = _flax()
    import jax.numpy as jnp

    class CNN(fnn.Module):
        """A Flax CNN from a :func:`check_spec` layer spec (inference form: batch norms already
        folded into the convolutions' biases). ``act``: the activation (ReLU by default, or a
        polynomial from :mod:`jax_fhe.nn.activation`). Input NHWC float."""

        spec: tuple = RESNET20_SPEC
        classes: int = 10
        act: object = None

        def _conv(self, x, c, stride, name):
            return fnn.Conv(c, (3, 3), strides=(stride, stride), padding=((1, 1), (1, 1)), name=name)(x)

        @fnn.compact
        def __call__(self, x):
            act = self.act if self.act is not None else (lambda v: jnp.maximum(v, 0))
            for (name, _), (kind, cout, stride) in zip(_names(check_spec(self.spec)), self.spec):
                if kind == "conv":
                    x = act(self._conv(x, cout, stride, f"{name}_conv"))
                    continue
                h = act(self._conv(x, cout, stride, f"{name}_conv1"))
                h = self._conv(h, cout, 1, f"{name}_conv2")
                if stride == 1 and x.shape[-1] == cout:
                    s = x
                else:
                    s = x[:, ::stride, ::stride, :]
                    pad = (cout - s.shape[-1]) // 2
                    s = jnp.pad(s, ((0, 0), (0, 0), (0, 0), (pad, pad)))
                x = act(h + s)
            return fnn.Dense(self.classes, name="dense")(x.mean(axis=(1, 2)))

    _CNN.append(CNN)
    return CNN


def __getattr__(name):
    """``CNN``: the Flax module class (ImportError without Flax)."""
    if name == "CNN":
        return _make_cnn()
    raise AttributeError(name)
