"""Convolution layers of the convnet benchmarks, and torch's side of a conv pass.

Used by bench_conv.py and validate_conv.py.  ``NETWORKS`` lists each
network's convolution layers as in the convnet-benchmarks definitions
(soumith/convnet-benchmarks): AlexNet (N=128), Overfeat fast (N=128),
VGG-A (N=64) and GoogLeNet v1 (N=128; its stem and the distinct layer
shapes of inception 3a, 4a and 5b).  ``TorchConv`` runs one layer's
fprop, bprop (data gradient) and update (filter gradient) with torch
(cuDNN), and ``OursConv`` the same on gpuarray on torch's tensors, shared
zero-copy: torch's channels_last memory is gpuarray's native NDHWC.
"""

#: network -> (batch, [(name, C, H, K, R, stride, pad), ...]); square images and filters
NETWORKS = {
    "alexnet": (128, [("conv1", 3, 224, 64, 11, 4, 2), ("conv2", 64, 27, 192, 5, 1, 2),
                      ("conv3", 192, 13, 384, 3, 1, 1), ("conv4", 384, 13, 256, 3, 1, 1),
                      ("conv5", 256, 13, 256, 3, 1, 1)]),
    "overfeat": (128, [("conv1", 3, 231, 96, 11, 4, 0), ("conv2", 96, 28, 256, 5, 1, 0),
                       ("conv3", 256, 12, 512, 3, 1, 1), ("conv4", 512, 12, 1024, 3, 1, 1),
                       ("conv5", 1024, 12, 1024, 3, 1, 1)]),
    "vgg-a": (64, [("conv1", 3, 224, 64, 3, 1, 1), ("conv2", 64, 112, 128, 3, 1, 1),
                   ("conv3", 128, 56, 256, 3, 1, 1), ("conv4", 256, 56, 256, 3, 1, 1),
                   ("conv5", 256, 28, 512, 3, 1, 1), ("conv6", 512, 28, 512, 3, 1, 1),
                   ("conv7", 512, 14, 512, 3, 1, 1), ("conv8", 512, 14, 512, 3, 1, 1)]),
    "googlenet": (128, [("conv1", 3, 224, 64, 7, 2, 3), ("conv2", 64, 56, 64, 1, 1, 0),
                        ("conv3", 64, 56, 192, 3, 1, 1),
                        ("3a 1x1", 192, 28, 64, 1, 1, 0), ("3a 3x3 reduce", 192, 28, 96, 1, 1, 0),
                        ("3a 3x3", 96, 28, 128, 3, 1, 1), ("3a 5x5 reduce", 192, 28, 16, 1, 1, 0),
                        ("3a 5x5", 16, 28, 32, 5, 1, 2), ("3a pool proj", 192, 28, 32, 1, 1, 0),
                        ("4a 1x1", 480, 14, 192, 1, 1, 0), ("4a 3x3 reduce", 480, 14, 96, 1, 1, 0),
                        ("4a 3x3", 96, 14, 208, 3, 1, 1), ("4a 5x5 reduce", 480, 14, 16, 1, 1, 0),
                        ("4a 5x5", 16, 14, 48, 5, 1, 2), ("5b 1x1", 832, 7, 384, 1, 1, 0),
                        ("5b 3x3 reduce", 832, 7, 192, 1, 1, 0), ("5b 3x3", 192, 7, 384, 3, 1, 1),
                        ("5b 5x5 reduce", 832, 7, 48, 1, 1, 0), ("5b 5x5", 48, 7, 128, 5, 1, 2)]),
}


class TorchConv:
    """One 2-D layer in torch: tensors in a memory format, and its three passes."""

    def __init__(self, torch, x, w, grad, stride, pad, memory_format):
        self.torch, self.stride, self.pad = torch, [stride] * 2, [pad] * 2
        self.x, self.w, self.grad = (t.contiguous(memory_format=memory_format)
                                     for t in (x, w, grad))

    def fprop(self):
        return self.torch.ops.aten.convolution(self.x, self.w, None, self.stride, self.pad,
                                               [1, 1], False, [0, 0], 1)

    def _backward(self, mask):
        return self.torch.ops.aten.convolution_backward(
            self.grad, self.x, self.w, None, self.stride, self.pad, [1, 1], False, [0, 0], 1,
            mask)

    def bprop(self):
        return self._backward([True, False, False])[0]

    def update(self):
        return self._backward([False, True, False])[1]


class OursConv:
    """The same layer on gpuarray, on torch's channels_last tensors (no copies)."""

    def __init__(self, ng, torch, layer, x, w, grad):
        self.ng, self.layer = ng, layer
        self.I, self.F, self.E = (native(ng, torch, t) for t in (x, w, grad))
        self.O = ng.empty(layer.dimO, layer.dtype)
        self.gI = ng.empty(layer.dimI, layer.dtype)
        self.gF = ng.empty(layer.dimF, layer.dtype)

    def fprop(self):
        self.ng.fprop_conv(self.layer, self.I, self.F, self.O)
        return self.O

    def bprop(self):
        self.ng.bprop_conv(self.layer, self.F, self.E, self.gI)
        return self.gI

    def update(self):
        self.ng.update_conv(self.layer, self.I, self.E, self.gF)
        return self.gF


def native(ng, torch, t):
    """An NCHW (or KCRS) torch tensor as gpuarray's 5-D native view; copies to
    channels_last memory first when it is not already there."""
    n, c, h, w = t.shape
    t = t.contiguous(memory_format=torch.channels_last)
    return ng.from_dlpack(t.permute(0, 2, 3, 1)).reshape((n, 1, h, w, c))


def as_nchw(torch, t):
    """gpuarray's (N, 1, H, W, C) result as an NCHW torch view."""
    return torch.from_dlpack(t)[:, 0].permute(0, 3, 1, 2)


def relative_error(torch, ours, ref, dtype):
    """max |ours - ref| / mean |ref|, one rounding of a 16-bit result forgiven."""
    ref = ref.double()
    slack = ref.abs() * (torch.finfo(dtype).eps if dtype != torch.float32 else 0.0)
    excess = ((ours.double() - ref).abs() - slack).clamp_min(0)
    return float(excess.max() / ref.abs().mean().clamp_min(1e-30))
