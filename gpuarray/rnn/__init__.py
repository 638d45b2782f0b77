"""Recurrent layers (issue 14): ``ng.rnn_layer``, ``fprop_rnn``, ``bprop_rnn``, ``update_rnn``.

Modules: ``layer`` (sizes and layouts), ``cell`` (one timestep of each
mode, forward and backward), ``functions`` (the factory mixin and the loop
over timesteps).  Every call runs a GEMM and fused gate kernels per step
on either factory; the persistent kernels are not built yet.
"""
from .functions import RNNFunctions
from .layer import MODES, RNNLayer

__all__ = ["MODES", "RNNFunctions", "RNNLayer"]
