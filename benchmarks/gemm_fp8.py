"""FP8 GEMM against cuBLASLt (``torch._scaled_mm``): operands, validation, timing.

Used by bench_gemm.py (the timed rows) and validate_gemm.py (the sweep).
Operands are made by torch in its FP8 dtypes and copied once into
gpuarray tensors (as bytes: no DLPack type code is needed); the scales are
float32 device scalars given to both libraries.  ``torch._scaled_mm``
wants A row-major and B column-major (the transpose of an N x K matrix),
the layout our kernels read in place.

Accuracy: both libraries multiply FP8 values exactly; they differ in how
the sums accumulate.  The reference is torch's float32 product of the
decoded operands (TF32 off), scaled; the error of each library is
``max |C - ref| / mean |ref|`` (less one unit in the last place of a
16-bit C).  By default both add the tensor cores' partial sums into float32
accumulators every 128 products ("promoted"); in "fast" mode
(``precision="fast"``, ``use_fast_accum=True``) the tensor cores keep the
whole sum, with fewer bits.  The criterion (FP8_TOLERANCE) is 16-bit's
7e-3, the wrong-answer detector this suite uses for float16; FP8's
mantissa does not enter it, because the operands are exact -- only the
accumulation's precision does (promoted: 8e-4 at K = 8192 on the H200,
cuBLASLt's too).  Fast accumulation loses about 2**-13 of the running sum
per 32 products, which reaches 2e-2 at K = 8192 (cuBLASLt's the same):
its criterion, FAST_TOLERANCE, is 5e-2 up to K = 8192 and grows with K
beyond.
"""
import numpy as np

FP8_TOLERANCE = 7e-3
FAST_TOLERANCE = 5e-2
KINDS = ("e4m3", "e5m2")


def tolerance(precision, k):
    """The criterion of a product over ``k`` (see the module docstring)."""
    if precision == "fast":
        return FAST_TOLERANCE * max(1.0, k / 8192)
    return FP8_TOLERANCE


def torch_dtype(torch, kind):
    return {"e4m3": torch.float8_e4m3fn, "e5m2": torch.float8_e5m2}[kind]


def to_gpuarray(ng, torch, t, kind):
    """A gpuarray copy of torch FP8 tensor ``t``, through the host as bytes."""
    import gpuarray
    dtype = {"e4m3": gpuarray.float8_e4m3fn, "e5m2": gpuarray.float8_e5m2}[kind]
    host = t.contiguous().view(torch.uint8).cpu().numpy()
    return ng.array(host.view(dtype))


def operands(ng, torch, kind, m, n, k, gen=None, b_kind=None):
    """(torch a, torch b, ours A, ours B): A is M x K row-major, B the transpose of N x K."""
    b_kind = b_kind or kind
    a = (torch.randn((m, k), device="cuda", generator=gen) * 2).to(torch_dtype(torch, kind))
    w = (torch.randn((n, k), device="cuda", generator=gen) * 2).to(torch_dtype(torch, b_kind))
    return a, w.t(), to_gpuarray(ng, torch, a, kind), to_gpuarray(ng, torch, w, b_kind).T


def scales(ng, torch, sa=0.5, sb=0.25):
    """Device scales for both libraries: (torch sa, torch sb, ours sa, ours sb)."""
    ta = torch.tensor(sa, device="cuda", dtype=torch.float32)
    tb = torch.tensor(sb, device="cuda", dtype=torch.float32)
    return ta, tb, ng.array(np.array([sa], np.float32)), ng.array(np.array([sb], np.float32))


def reference(torch, a, b, sa, sb):
    """float32 product of the decoded operands, scaled (TF32 off)."""
    allow = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    ref = torch.matmul(a.float(), b.float()) * (sa * sb)
    torch.backends.cuda.matmul.allow_tf32 = allow
    return ref


def error(torch, got, ref):
    slack = ref.abs() * torch.finfo(got.dtype).eps if got.element_size() == 2 else 0
    excess = ((got.float() - ref).abs() - slack).clamp_min(0)
    return float(excess.max() / ref.abs().mean().clamp_min(1e-30))


def scaled_mm(torch, a, b, sa, sb, out_dtype, fast):
    return torch._scaled_mm(a, b, scale_a=sa, scale_b=sb, out_dtype=out_dtype,
                            use_fast_accum=fast)


#: validate_gemm.py's FP8 sweep: (M, N, K), K a multiple of 16
SHAPES = ((16, 16, 16), (1, 1000, 1008), (1000, 1, 1008), (999, 1001, 1024), (2048, 32, 2048),
          (2048, 128, 2048), (4096, 4096, 4096), (64, 64, 32768), (333, 77, 48))
PAIRS = (("e4m3", "e4m3"), ("e5m2", "e4m3"), ("e4m3", "e5m2"), ("e5m2", "e5m2"))


def validate_case(ng, torch, shape, pair, layout, out, epilogue, gen, precision=None):
    """Error of one FP8 product against the float32 reference.

    layout "nt": A row-major and B the transpose of N x K (in place); "nn":
    B row-major K x N and "tn": A a transposed view (both copied K-major
    first).  With ``epilogue``: alpha, bias, relu, a device scale_c and
    amax; an FP8 ``out`` is compared after saturating the reference.
    ``precision``: None (promoted accumulation) or "fast".
    """
    m, n, k = shape
    a, b, A, B = operands(ng, torch, pair[0], m, n, k, gen, pair[1])
    if layout == "nn":
        B = to_gpuarray(ng, torch, b.contiguous(), pair[1])
    if layout == "tn":
        A = to_gpuarray(ng, torch, a.t().contiguous(), pair[0]).T
    sa, sb, SA, SB = scales(ng, torch)
    ref = reference(torch, a, b, sa, sb)
    dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    import gpuarray
    fp8 = {"e4m3": gpuarray.float8_e4m3fn, "e5m2": gpuarray.float8_e5m2}
    C = ng.empty((m, n), fp8[out]) if out in fp8 else ng.from_dlpack(
        torch.empty((m, n), device="cuda", dtype=dtypes[out]))
    options = {}
    if epilogue or out in fp8:
        bias = torch.randn((n,), device="cuda", generator=gen)
        scale_c = 0.5
        options = dict(alpha=0.75, relu=True, bias=ng.from_dlpack(bias),
                       scale_c=ng.array(np.array([scale_c], np.float32)),
                       amax=ng.empty((1,), np.float32))
        ref = torch.relu(0.75 * ref + bias)
        amax_ref = float(ref.abs().max())
        ref = ref * scale_c
    ng.dot(A, B, C, scale_a=SA, scale_b=SB, precision=precision, **options)
    ng.synchronize()
    if out in fp8:
        # forgive one FP8 unit of each value (its rounding), then the criterion
        top, mantissa, smallest = (448.0, 3, 2.0 ** -9) if out == "e4m3" else (57344.0, 2, 2.0 ** -16)
        got = torch.from_numpy(C.get().astype(np.float32)).cuda()
        want = ref.clamp(-top, top)
        unit = torch.exp2(torch.floor(torch.log2(want.abs().clamp_min(smallest))) - mantissa)
        excess = ((got - want).abs() - unit.clamp_min(smallest)).clamp_min(0)
        err = float(excess.max() / ref.abs().mean().clamp_min(1e-30))
    else:
        err = error(torch, torch.from_dlpack(C), ref)
    if "amax" in options:
        amax_err = abs(float(options["amax"].get()[0]) - amax_ref) / max(amax_ref, 1e-30)
        err = max(err, amax_err)
    return err, tolerance(precision, k), ng.last_gemm
