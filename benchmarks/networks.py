"""The convnet benchmarks' networks, built twice: on gpuarray.nn and in torch.

Used by convnet_benchmarks.py.  ``NETWORKS`` follows the convnet-benchmarks
definitions (soumith/convnet-benchmarks, the networks of nervanagpu's
report): AlexNet as in "One weird trick" (N=128), Overfeat fast (N=128),
VGG-A (N=64) and GoogLeNet v1 (N=128).  Every convolution and every dense
layer but the last is followed by a ReLU (fused into ours).  GoogLeNet's
stride-2 max pools use padding 1 where the Lua definitions use ceil mode:
the same output sizes, the windows shifted by one; both sides here run the
same definition.

:func:`build_ours` makes a :class:`gpuarray.nn.Model`, :func:`build_torch`
the same network as a ``torch.nn.Sequential``, and :func:`copy_weights`
gives torch ours (filters KTRSC -> KCRS; the first dense layer's columns
from our (H, W, C) flattening to torch's (C, H, W)).
"""

#: an inception module's branch widths: 1x1, 3x3 reduce, 3x3, 5x5 reduce, 5x5, pool proj
INCEPTION = {
    "3a": (64, 96, 128, 16, 32, 32), "3b": (128, 128, 192, 32, 96, 64),
    "4a": (192, 96, 208, 16, 48, 64), "4b": (160, 112, 224, 24, 64, 64),
    "4c": (128, 128, 256, 24, 64, 64), "4d": (112, 144, 288, 32, 64, 64),
    "4e": (256, 160, 320, 32, 128, 128), "5a": (256, 160, 320, 32, 128, 128),
    "5b": (384, 192, 384, 48, 128, 128),
}


def _googlenet():
    spec = [("conv", 64, 7, 2, 3), ("pool", "max", 3, 2, 1), ("conv", 64, 1, 1, 0),
            ("conv", 192, 3, 1, 1), ("pool", "max", 3, 2, 1),
            ("inception", "3a"), ("inception", "3b"), ("pool", "max", 3, 2, 1)]
    spec += [("inception", name) for name in ("4a", "4b", "4c", "4d", "4e")]
    spec += [("pool", "max", 3, 2, 1), ("inception", "5a"), ("inception", "5b"),
             ("pool", "avg", 7, 1, 0), ("fc", 1000, False)]
    return spec


#: network -> (batch, image size, layers); conv: (K, R, stride, pad), pool: (op, R, stride,
#: pad), fc: (nout, relu), dropout: (p,)
NETWORKS = {
    "alexnet": (128, 224, [
        ("conv", 64, 11, 4, 2), ("pool", "max", 3, 2, 0), ("conv", 192, 5, 1, 2),
        ("pool", "max", 3, 2, 0), ("conv", 384, 3, 1, 1), ("conv", 256, 3, 1, 1),
        ("conv", 256, 3, 1, 1), ("pool", "max", 3, 2, 0), ("dropout", 0.5),
        ("fc", 4096, True), ("dropout", 0.5), ("fc", 4096, True), ("fc", 1000, False)]),
    "overfeat": (128, 231, [
        ("conv", 96, 11, 4, 0), ("pool", "max", 2, 2, 0), ("conv", 256, 5, 1, 0),
        ("pool", "max", 2, 2, 0), ("conv", 512, 3, 1, 1), ("conv", 1024, 3, 1, 1),
        ("conv", 1024, 3, 1, 1), ("pool", "max", 2, 2, 0), ("fc", 3072, True),
        ("fc", 4096, True), ("fc", 1000, False)]),
    "vgg-a": (64, 224, [
        ("conv", 64, 3, 1, 1), ("pool", "max", 2, 2, 0), ("conv", 128, 3, 1, 1),
        ("pool", "max", 2, 2, 0), ("conv", 256, 3, 1, 1), ("conv", 256, 3, 1, 1),
        ("pool", "max", 2, 2, 0), ("conv", 512, 3, 1, 1), ("conv", 512, 3, 1, 1),
        ("pool", "max", 2, 2, 0), ("conv", 512, 3, 1, 1), ("conv", 512, 3, 1, 1),
        ("pool", "max", 2, 2, 0), ("dropout", 0.5), ("fc", 4096, True), ("dropout", 0.5),
        ("fc", 4096, True), ("fc", 1000, False)]),
    "googlenet": (128, 224, _googlenet()),
}


# -- ours ----------------------------------------------------------------------------

def _our_inception(nn, widths, name):
    c1, r3, c3, r5, c5, proj = widths
    return nn.Concat([
        [nn.Conv(c1, 1, relu=True)],
        [nn.Conv(r3, 1, relu=True), nn.Conv(c3, 3, pad=1, relu=True)],
        [nn.Conv(r5, 1, relu=True), nn.Conv(c5, 5, pad=2, relu=True)],
        [nn.Pool("max", 3, stride=1, pad=1), nn.Conv(proj, 1, relu=True)]], name=name)


def _our_layer(nn, item):
    kind, *args = item
    if kind == "conv":
        K, R, stride, pad = args
        return nn.Conv(K, R, stride=stride, pad=pad, relu=True)
    if kind == "pool":
        op, R, stride, pad = args
        return nn.Pool(op, R, stride=stride, pad=pad)
    if kind == "fc":
        return nn.FullyConnected(args[0], relu=args[1])
    if kind == "dropout":
        return nn.Dropout(args[0])
    return _our_inception(nn, INCEPTION[args[0]], args[0])


def build_ours(ng, net, dtype, seed=0):
    """The network on gpuarray.nn, set up for its batch in ``dtype``."""
    from gpuarray import nn

    batch, size, spec = NETWORKS[net]
    return nn.Model(ng, [_our_layer(nn, item) for item in spec], (batch, 1, size, size, 3),
                    dtype, seed=seed, name=net)


# -- torch ---------------------------------------------------------------------------

def build_torch(torch, net):
    """The same network as a torch.nn.Sequential (float32, on the GPU)."""
    tnn = torch.nn
    _, _, spec = NETWORKS[net]
    channels, layers, flat = 3, [], False

    class Inception(tnn.Module):
        def __init__(self, c_in, widths):
            super().__init__()
            c1, r3, c3, r5, c5, proj = widths

            def conv(c, k, size, pad=0):
                return [tnn.Conv2d(c, k, size, padding=pad), tnn.ReLU(inplace=True)]

            self.branches = tnn.ModuleList([
                tnn.Sequential(*conv(c_in, c1, 1)),
                tnn.Sequential(*conv(c_in, r3, 1), *conv(r3, c3, 3, 1)),
                tnn.Sequential(*conv(c_in, r5, 1), *conv(r5, c5, 5, 2)),
                tnn.Sequential(tnn.MaxPool2d(3, 1, 1), *conv(c_in, proj, 1))])

        def forward(self, x):
            return torch.cat([b(x) for b in self.branches], 1)

    for kind, *args in spec:
        if kind == "conv":
            K, R, stride, pad = args
            layers += [tnn.Conv2d(channels, K, R, stride, pad), tnn.ReLU(inplace=True)]
            channels = K
        elif kind == "pool":
            op, R, stride, pad = args
            pool = tnn.MaxPool2d if op == "max" else tnn.AvgPool2d
            layers.append(pool(R, stride, pad))
        elif kind == "inception":
            widths = INCEPTION[args[0]]
            layers.append(Inception(channels, widths))
            channels = widths[0] + widths[2] + widths[4] + widths[5]
        elif kind == "dropout":
            layers.append(tnn.Dropout(args[0]))
        else:
            if not flat:
                layers.append(tnn.Flatten())
                flat = True
            layers.append(tnn.LazyLinear(args[0]))
            if args[1]:
                layers.append(tnn.ReLU(inplace=True))
    module = tnn.Sequential(*layers).cuda()
    _, size, _ = NETWORKS[net]
    with torch.no_grad():
        module(torch.zeros(1, 3, size, size, device="cuda"))  # sizes the lazy dense layers
    return module


def _ours_learned(model):
    from gpuarray import nn

    return [layer for layer in model.children() if isinstance(layer, (nn.Conv, nn.FullyConnected))]


def _torch_learned(torch, module):
    return [m for m in module.modules() if isinstance(m, (torch.nn.Conv2d, torch.nn.Linear))]


def paired_layers(torch, model, module):
    """Our conv and dense layers beside torch's, in the same order."""
    ours, theirs = _ours_learned(model), _torch_learned(torch, module)
    if len(ours) != len(theirs):
        raise RuntimeError(f"{len(ours)} learned layers here, {len(theirs)} in torch")
    return list(zip(ours, theirs))


def as_torch_weight(torch, layer, tensor):
    """One of our weights (or its gradient) in torch's layout, zero-copy where it can be."""
    t = torch.from_dlpack(tensor)
    if t.dim() == 5:  # KTRSC with T = 1 -> KCRS
        return t[:, 0].permute(0, 3, 1, 2)
    if t.dim() == 2 and len(layer.in_shape) == 5:  # columns (D, H, W, C) -> (C, D, H, W)
        _, D, H, W, C = layer.in_shape
        return t.reshape(t.shape[0], D * H * W, C).permute(0, 2, 1).reshape(t.shape[0], -1)
    return t


def copy_weights(torch, model, module, dtype):
    """Give torch's network our parameters (cast to ``dtype``)."""
    with torch.no_grad():
        for ours, theirs in paired_layers(torch, model, module):
            theirs.weight.copy_(as_torch_weight(torch, ours, ours.W.value).to(dtype))
            theirs.bias.copy_(torch.from_dlpack(ours.b.value).to(dtype))
