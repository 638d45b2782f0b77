"""Convolution and pooling with cuDNN's parameters (issue 11).

layer (``ng.conv_layer`` / ``ng.pool_layer``: sizes checked once, output
sizes by cuDNN's formula, the native layout) -> call (every tensor of a
call checked against its layer) -> functions (the :class:`ConvFunctions`
mixin both factories use; layout conversions) -> the factory's ``_conv`` /
``_pool`` hooks: :mod:`~gpuarray.conv.reference` (numpy) on the CPU; on the
GPU :mod:`~gpuarray.conv.convolution` (gathers of kernels/conv_im2col.cu
and tensor-core GEMMs) and :mod:`~gpuarray.conv.pooling` (kernels/pool.cu).
Imports :mod:`gpuarray.core` and :mod:`gpuarray.cuda`.

The native layout is channel-innermost: activations ``(N, D, H, W, C)``,
filters ``(K, T, R, S, C)``, outputs ``(N, M, P, Q, K)``; 2-D layers have
``D = T = M = 1``.
"""
