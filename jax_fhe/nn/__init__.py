"""Encrypted CNN inference (applications layer): models (:mod:`.model`, Flax optional), the
polynomial ReLU (:mod:`.activation`) and the CKKS compiler (:mod:`.compiler`)."""
from . import activation, compiler, model
from .activation import CompositeSign, PolyReLU, composite_sign
from .model import RESNET20_SPEC, check_spec, forward, init_params, load_cifar10, load_resnet20

__all__ = ["RESNET20_SPEC", "CompositeSign", "PolyReLU", "activation", "check_spec", "compiler",
           "composite_sign", "forward", "init_params", "load_cifar10", "load_resnet20", "model"]
