"""Recurrent layers (issue 14): ``ng.rnn_layer``, ``fprop_rnn``, ``bprop_rnn``, ``update_rnn``.

Modules: ``layer`` (sizes, layouts and the path a layer takes),
``functions`` (the factory mixin: checks, then the path), ``persistent``
(the plan and launch of kernels/rnn_persist.cu: one launch for all
timesteps, the weights in shared memory), ``cell`` (one timestep of each
mode as fused assignments: the GEMM loop's, and the CPU factory's
reference).
"""
from .functions import RNNFunctions
from .layer import MODES, RNNLayer

__all__ = ["MODES", "RNNFunctions", "RNNLayer"]
