"""FFT convolution over overlap-save tiles: the exact-fp32 route of 4x4 to 7x7 layers.

In: a checked :class:`~gpuarray.conv.call.ConvCall` of a float32, 2-D,
stride-1, undilated layer with filters of 4 to 7 taps a side (and, as
every layer, padding below the filter size: bprop's R - 1 - pad) and at
least :data:`MIN_CHANNELS` input channels and filters, whose spectra fit
``FILTER_SPECTRA_BYTES`` (:func:`applies`), and the GPU factory.  Out: O,
grad_I or grad_F filled in, queued on the factory's stream; ``try_run``
returns False for any other call, which then takes another route.

Each pass is transforms (kernels/conv_fft.cu) around batched exact-fp32
GEMMs over the ``L * (L/2 + 1)`` points of an L x L tile's half spectrum
(L = 16 or 32, whichever covers the outputs in fewer points):

======= ===================================== =====================================
pass    transforms in                          GEMMs, transform out
======= ===================================== =====================================
fprop   D of I's tiles, G' of F                Y' = [Dr Di] @ G', O = IFFT(Y)
bprop   D of E's tiles (padding R - 1 - pad),  the same, into grad_I
        G' of F rotated, C and K swapped
update  D of I's tiles, E of dY's tiles        Z = E^H D (2 GEMMs), grad_F = the
                                               inverse DFT at the R x S taps
======= ===================================== =====================================

Why: the fp32 layers have no tensor cores to run on (TF32 off), and a
5x5 filter costs the direct convolution 25 multiply-adds per output and
channel pair where the spectra's complex products cost 2.8 real ones (L =
32).  The rounding error is the FFT's, a few fp32 ulps of the largest
values of a tile (the twiddles are exact to fp32 and the sums short).

Non-finite values: an infinite or NaN input would spread over the whole
tile (the transforms mix every value of it), so the output transform sums
a tile whose spectrum is not all finite directly from the input and
filters (fprop and bprop).  The filter gradient does not: a non-finite
input or error value makes NaN of every filter gradient it reaches.

The batch runs in chunks of images whose spectra fit ``WORKSPACE_BYTES``;
update sums the chunks' Z in fp32, in chunk order, and applies alpha and
beta in the last transform.  No atomics: the same bits on every run.
"""
import struct

import numpy as np

from .call import row_stride
from .staging import as_rows, contiguous, copy_back, image_ptr, output, transform_chunks

STEM = "conv_fft"
#: FftArgs of kernels/conv_fft.cu, in order
FIELDS = ("src dst bias image filters s_point s_tile s_part H W C Cin Cout R S TP TQ TH TW "
          "pad_h pad_w extent_h extent_w src_ld dst_ld image_H image_W alpha beta "
          "relu flip parts").split()
ARGS = struct.Struct("<5Q3q19i2f3i")
_DEFAULTS = dict(dict.fromkeys(FIELDS, 0), alpha=1.0)
#: the kernels' transform sizes (L)
SIZES = (16, 32)
#: the filter sides the route takes (conv_fft.cu's FFT_MAX_RS bounds them)
FILTER_SIDES = range(4, 8)
#: channels a tile kernel's block transforms (FFT_CH)
GROUP = 8
#: threads of a filter-gradient block (FFT_GRAD_THREADS)
GRAD_THREADS = 256
#: blocks of a filter-gradient launch per multiprocessor: threads stride over the rest
BLOCKS_PER_SM = 8
#: fewer input channels or filters leave the GEMMs too thin to pay for the
#: transforms (on an H100, GoogLeNet's 5x5 layers, C = 16 to 48, ran 1.1 to
#: 4.9 times slower than on the gather route)
MIN_CHANNELS = 64
#: the most device memory one call's tile spectra take (the pool caches it)
WORKSPACE_BYTES = 1 << 30
#: the most its filter spectra may take (they are not cut into chunks)
FILTER_SPECTRA_BYTES = 1 << 30
F32 = np.dtype(np.float32)


def applies(layer):
    """Whether ``layer`` takes the FFT route."""
    return (layer.dtype == F32 and layer.D == 1 and layer.T == 1
            and layer.R in FILTER_SIDES and layer.S in FILTER_SIDES
            and layer.stride == (1, 1, 1) and layer.dilation == (1, 1, 1)
            and min(layer.C, layer.K) >= MIN_CHANNELS
            and filter_spectra_bytes(layer) <= FILTER_SPECTRA_BYTES)


def filter_spectra_bytes(layer):
    """Bytes of the filters' spectra G' (4 C K values a point) at L = 32:
    past ``FILTER_SPECTRA_BYTES`` (C K above 123,000) the layer keeps the
    gather route rather than allocate them."""
    return points(max(SIZES)) * 4 * layer.C * layer.K * F32.itemsize


def try_run(gpu, call):
    """Run ``call`` on the FFT route and return True, or return False when
    its layer (or an fp16/bf16 bias) does not take it."""
    if not applies(call.layer) or (call.bias is not None and call.bias.dtype != F32):
        return False
    {"fprop": _fprop, "bprop": _bprop, "update": _update}[call.kind](gpu, call, call.layer)
    return True


def plan(rows, cols, R, S):
    """``(L, TP, TQ)``: the transform size whose tiles cover ``rows`` x ``cols``
    outputs of an R x S filter in the fewest spectrum points (ties: the
    smaller), and the tiles along each side."""
    best = None
    for L in SIZES:
        TP, TQ = -(-rows // (L - R + 1)), -(-cols // (L - S + 1))
        if best is None or TP * TQ * L * L < best[0]:
            best = (TP * TQ * L * L, L, TP, TQ)
    return best[1:]


def points(L):
    """Points of an L x L tile's half spectrum: the GEMMs' batches."""
    return L * (L // 2 + 1)


# -- the three passes ------------------------------------------------------------

def _fprop(gpu, call, layer):
    I = as_rows(gpu, call.a)  # noqa: E741
    O = output(gpu, call.out, call.beta, rows_ok=True)  # noqa: E741
    F = contiguous(gpu, call.b)
    L, TP, TQ = plan(layer.P, layer.Q, layer.R, layer.S)
    bias = 0 if call.bias is None else contiguous(gpu, call.bias).ptr
    conv = dict(R=layer.R, S=layer.S, pad_h=layer.pad[1], pad_w=layer.pad[2], flip=0)
    G = _filters(gpu, L, F, layer.C, layer.K, conv)
    _forward(gpu, L, (I, (layer.H, layer.W, layer.C)), (F, G), (O, (layer.P, layer.Q, layer.K)),
             (TP, TQ), conv, dict(alpha=call.alpha, beta=call.beta, bias=bias, relu=int(call.relu)))
    copy_back(call.out, O)


def _bprop(gpu, call, layer):
    E = as_rows(gpu, call.b)
    grad = output(gpu, call.out, call.beta, rows_ok=True)
    F = contiguous(gpu, call.a)
    L, TP, TQ = plan(layer.H, layer.W, layer.R, layer.S)
    conv = dict(R=layer.R, S=layer.S, pad_h=layer.R - 1 - layer.pad[1],
                pad_w=layer.S - 1 - layer.pad[2], flip=1)
    G = _filters(gpu, L, F, layer.K, layer.C, conv)
    _forward(gpu, L, (E, (layer.P, layer.Q, layer.K)), (F, G), (grad, (layer.H, layer.W, layer.C)),
             (TP, TQ), conv, dict(alpha=call.alpha, beta=call.beta))
    copy_back(call.out, grad)


def _forward(gpu, L, src, filters, dst, tile_counts, conv, epilogue):
    """dst = the convolution ``conv`` of src, chunk by chunk: ``src`` and
    ``dst`` are (tensor read as rows, (H, W, channels)), ``filters`` the
    layer's filters (for the direct sums of non-finite tiles) and their
    spectra G'."""
    (src, (H, W, Cin)), (dst, (P, Q, Cout)), (F, G) = src, dst, filters
    TP, TQ = tile_counts
    sizes = dict(conv, Cin=Cin, Cout=Cout, TP=TP, TQ=TQ, TH=L - conv["R"] + 1, TW=L - conv["S"] + 1)
    n = points(L)
    for n0, n1, count, (D, Y) in transform_chunks(gpu, src.shape[0], TP * TQ, (2 * Cin, 2 * Cout),
                                                  n, WORKSPACE_BYTES):
        _launch(gpu, f"ga_fft_input_{L}", (count, _groups(Cin)), L, src=image_ptr(src, n0), dst=D.ptr,
                s_point=count * 2 * Cin, s_tile=2 * Cin, s_part=Cin, H=H, W=W, C=Cin,
                extent_h=L, extent_w=L, src_ld=row_stride(src), **sizes)
        gpu.batched_dot(D, G, Y)
        _launch(gpu, f"ga_fft_output_{L}", (count, _groups(Cout)), L, src=Y.ptr, dst=image_ptr(dst, n0),
                s_point=count * 2 * Cout, s_tile=2 * Cout, s_part=Cout, H=P, W=Q, C=Cout,
                dst_ld=row_stride(dst), image=image_ptr(src, n0), filters=F.ptr, image_H=H, image_W=W,
                src_ld=row_stride(src), **sizes, **epilogue)


def _update(gpu, call, layer):
    I, E = as_rows(gpu, call.a), as_rows(gpu, call.b)  # noqa: E741
    grad = output(gpu, call.out, call.beta)
    C, K = layer.C, layer.K
    L, TP, TQ = plan(layer.P, layer.Q, layer.R, layer.S)
    n = points(L)
    sizes = dict(R=layer.R, S=layer.S, TP=TP, TQ=TQ, TH=L - layer.R + 1, TW=L - layer.S + 1)
    Z = gpu.empty((n, 2, K, C), F32)
    for n0, n1, count, (D, Et) in transform_chunks(gpu, layer.N, TP * TQ, (3 * C, 2 * K), n,
                                                   WORKSPACE_BYTES):
        # spectra as (points, part, tile, channel): the tiles and the parts
        # are the GEMMs' sums; D's third part is its real part negated
        _launch(gpu, f"ga_fft_input_{L}", (count, _groups(C)), L, src=image_ptr(I, n0), dst=D.ptr,
                s_point=3 * count * C, s_tile=C, s_part=count * C, H=layer.H, W=layer.W, C=C,
                pad_h=layer.pad[1], pad_w=layer.pad[2], extent_h=L, extent_w=L,
                src_ld=row_stride(I), parts=3, **sizes)
        _launch(gpu, f"ga_fft_input_{L}", (count, _groups(K)), L, src=image_ptr(E, n0), dst=Et.ptr,
                s_point=2 * count * K, s_tile=K, s_part=count * K, H=layer.P, W=layer.Q, C=K,
                extent_h=sizes["TH"], extent_w=sizes["TW"], src_ld=row_stride(E), **sizes)
        _spectrum_products(gpu, Et.reshape(n, 2 * count, K), D.reshape(n, 3 * count, C), Z,
                           first=n0 == 0)
    grid = max(1, min(-(-K * C * layer.R // GRAD_THREADS), gpu.sms * BLOCKS_PER_SM))
    gpu.conv_library.function(STEM, f"ga_fft_filter_grad_{L}").launch(
        (grid, 1, 1), (GRAD_THREADS, 1, 1),
        _args(src=Z.ptr, dst=grad.ptr, Cin=C, Cout=K, alpha=call.alpha, beta=call.beta, **sizes), 0)
    gpu._stats["kernels_launched"] += 1
    copy_back(call.out, grad)


def _spectrum_products(gpu, E, D, Z, first):
    """Z (points, 2, K, C) (+)= E^H D over a chunk's tiles: E (points, 2 *
    tiles, K) holds the real parts of its tiles, then the imaginary parts,
    D (points, 3 * tiles, C) the real, imaginary and negated real parts.
    Re = Er^T Dr + Ei^T Di and Im = Er^T Di - Ei^T Dr are one product each
    (of D's first two parts, and of its last two); later chunks add to the
    earlier ones' sums."""
    tiles, beta = E.shape[1] // 2, 0.0 if first else 1.0
    gpu.batched_dot(E.transpose(0, 2, 1), D[:, :2 * tiles], Z[:, 0], beta=beta)
    gpu.batched_dot(E.transpose(0, 2, 1), D[:, tiles:], Z[:, 1], beta=beta)


def _filters(gpu, L, F, Cin, Cout, conv):
    """G' (points, 2 Cin, 2 Cout): the spectra of the contiguous filters F
    as the convolution ``conv`` reads them (flip: bprop's rotated filters)."""
    G = gpu.empty((points(L), 2 * Cin, 2 * Cout), F32)
    _launch(gpu, f"ga_fft_filter_{L}", (Cin, _groups(Cout)), L, dst=G.ptr, filters=F.ptr, Cin=Cin,
            Cout=Cout, **conv)
    return G


def _groups(channels):
    return -(-channels // GROUP)


def _args(**fields):
    """FftArgs packed from ``fields`` (zero where not given; alpha 1)."""
    # updating a copy keeps DEFAULTS' order, FftArgs' order
    return ARGS.pack(*{**_DEFAULTS, **fields}.values())


def _launch(gpu, name, grid, L, **fields):
    """Queue one tile kernel: ``grid`` (tiles or input channels, channel groups)."""
    gpu.conv_library.function(STEM, name).launch((*grid, 1), (GROUP * L, 1, 1), _args(**fields), 0)
    gpu._stats["kernels_launched"] += 1
