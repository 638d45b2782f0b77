"""Layers, containers and an optimizer for convolutional networks, on either factory.

``from gpuarray import nn``: each layer is set up once for an input shape
and dtype (every buffer allocated there), then runs ``fprop(x)`` and
``bprop(grad)`` many times on the factory's kernels, fusing what can fuse
(bias and ReLU into the convolution's and the GEMM's epilogue, BatchNorm
with its ReLU, LRN's window in one kernel).  Activations are native 5-D
``(N, D, H, W, C)`` tensors (``ng.from_layout`` converts NCHW data).

Modules: ``layer`` (the protocol and :class:`Parameter`), ``spatial``
(Conv, Pool), ``dense`` (FullyConnected, ReLU, Bias, Dropout), ``norm``
(BatchNorm, LRN), ``recurrent`` (RNN, GRU, LSTM over ``ng.fprop_rnn``),
``loss`` (SoftmaxCrossEntropy), ``container``
(Sequential, Concat, Model) and ``optim`` (SGD).
"""
from .container import Concat, Model, Sequential
from .dense import Bias, Dropout, FullyConnected, ReLU
from .layer import Layer, Parameter
from .loss import SoftmaxCrossEntropy
from .norm import LRN, BatchNorm
from .optim import SGD
from .recurrent import GRU, LSTM, RNN
from .spatial import Conv, Pool

__all__ = ["BatchNorm", "Bias", "Concat", "Conv", "Dropout", "FullyConnected", "GRU", "LRN",
           "LSTM", "Layer", "Model", "Parameter", "Pool", "RNN", "ReLU", "SGD", "Sequential",
           "SoftmaxCrossEntropy"]
