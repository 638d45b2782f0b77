"""Convolution and pooling with cuDNN's parameters (issue 11).

layer (``ng.conv_layer`` / ``ng.pool_layer``: sizes checked once, output
sizes by cuDNN's formula, the native layout) -> call (every tensor of a
call checked against its layer) -> functions (the :class:`ConvFunctions`
mixin both factories use; layout conversions) -> the factory's ``_conv`` /
``_pool`` hooks: :mod:`~gpuarray.conv.reference` (numpy) on the CPU; on the
GPU the hand-written kernels are not built yet and the hooks raise
``NotImplementedError``.  Imports :mod:`gpuarray.core` only.

The native layout is channel-innermost: activations ``(N, D, H, W, C)``,
filters ``(K, T, R, S, C)``, outputs ``(N, M, P, Q, K)``; 2-D layers have
``D = T = M = 1``.
"""
