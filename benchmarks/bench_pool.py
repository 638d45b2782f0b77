"""Pooling benchmark: gpuarray's kernels against torch's, same run.

    python3 benchmarks/bench_pool.py [--quick]

Each case pools one activation tensor made by torch in channels_last
memory (which is gpuarray's native NDHWC) and shared zero-copy.  Every
row is validated first -- values against torch, argmax through the
backward pass, gradients against torch's -- then timed: medians of CUDA
event pairs around back-to-back calls, as users call them
(``ng.fprop_pool(pool, I, O, argmax)``, host work included).  torch (its
own CUDA pooling kernels or cuDNN's, as it picks) runs NCHW and
channels_last, the faster taken.  "fprop+bprop" is the forward
pass (with argmax for max pooling) plus the backward pass.  The achieved
bandwidth counts the bytes a pass must move once (input, output, argmax,
errors, gradient).  Prints a table, writes benchmarks/results/pool.json
and pool.png.

Targets (issue 11): max pooling 3x3 stride 2 on 128x64x55x55 fp16, fprop
<= 30 us and fprop+bprop <= 100 us; average pooling likewise (<= 1/3 of
torch's fprop in this run, <= 100 us both ways; the issue quotes cuDNN at
99 us for max and 82 us for average pooling).
"""
import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (measure, new_row, print_table, set_target, table_cells, torch_and_gpu,  # noqa: E402
                    write_results)
from timing import device_timer, device_times  # noqa: E402

IMPLS = ("gpuarray", "torch")

#: (case, op, N, C, H, W, window, stride, pad)
CASES = [
    ("alexnet pool1", "max", 128, 64, 55, 55, 3, 2, 0),
    ("alexnet pool1 avg", "avg", 128, 64, 55, 55, 3, 2, 0),
    ("alexnet pool2", "max", 128, 192, 27, 27, 3, 2, 0),
    ("alexnet pool5", "max", 128, 256, 13, 13, 3, 2, 0),
    ("vgg-a pool1", "max", 64, 64, 224, 224, 2, 2, 0),
    ("vgg-a pool3", "max", 64, 256, 56, 56, 2, 2, 0),
    ("vgg-a pool5", "max", 64, 512, 14, 14, 2, 2, 0),
    ("googlenet inception pool", "max", 128, 192, 28, 28, 3, 1, 1),
    ("googlenet pool5 avg", "avg", 128, 1024, 7, 7, 7, 1, 0),
]
QUICK = ("alexnet pool1", "alexnet pool1 avg")


def torch_pass(torch, op, x, window, stride, pad):
    """(forward, forward+backward) closures of torch's pooling on x, and its outputs."""
    F = torch.nn.functional
    aten = torch.ops.aten
    if op == "max":
        out, _ = aten.max_pool2d_with_indices(x, [window] * 2, [stride] * 2, [pad] * 2)
        grad = torch.randn_like(out)

        def fprop():
            return aten.max_pool2d_with_indices(x, [window] * 2, [stride] * 2, [pad] * 2)

        def both():
            _, index = fprop()
            return aten.max_pool2d_with_indices_backward(grad, x, [window] * 2, [stride] * 2,
                                                         [pad] * 2, [1, 1], False, index)
    else:
        out = F.avg_pool2d(x, window, stride, pad, count_include_pad=False)
        grad = torch.randn_like(out)

        def fprop():
            return F.avg_pool2d(x, window, stride, pad, count_include_pad=False)

        def both():
            fprop()
            return aten.avg_pool2d_backward(grad, x, [window] * 2, [stride] * 2, [pad] * 2,
                                            False, False, None)
    return fprop, both, out, grad


def native(ng, t):
    """An NCHW torch tensor in channels_last memory as gpuarray's (N, 1, H, W, C) view."""
    n, c, h, w = t.shape
    return ng.from_dlpack(t.permute(0, 2, 3, 1)).reshape((n, 1, h, w, c))


def ours_pass(ng, pool, x, grad):
    """(forward, forward+backward) closures of ours on torch's tensors, and O and grad_I."""
    I, E = native(ng, x), native(ng, grad)
    O = ng.empty(pool.dimO, pool.dtype)
    G = ng.empty(pool.dimI, pool.dtype)
    A = ng.empty(pool.dimO, pool.argmax_dtype) if pool.op == "max" else None

    def fprop():
        ng.fprop_pool(pool, I, O, A)

    def both():
        ng.fprop_pool(pool, I, O, A)
        ng.bprop_pool(pool, I, E, G, A)
    return fprop, both, O, G


def as_nchw(torch, t):
    """gpuarray's (N, 1, H, W, C) result as an NCHW torch view."""
    return torch.from_dlpack(t)[:, 0].permute(0, 3, 1, 2)


def check(torch, ours, ref, what):
    """max |ours - ref| / mean |ref| within 7e-3, one fp16 rounding of the result forgiven
    (both sides round their float32 sums to fp16)."""
    ref = ref.float()
    slack = ref.abs() * torch.finfo(torch.float16).eps
    excess = ((ours.float() - ref).abs() - slack).clamp_min(0)
    err = float(excess.max() / ref.abs().mean().clamp_min(1e-30))
    if err > 7e-3:
        raise AssertionError(f"{what}: validation failed, error {err:.2e} > 7e-3")
    return err


def cudnn_times(torch, op, x, window, stride, pad, repeats):
    """({"fprop": s, "both": s}, the same kernel-only): torch's best of NCHW and
    channels_last, as called and with the host hidden."""
    best, kernel = {}, {}
    for memory in (torch.contiguous_format, torch.channels_last):
        fprop, both, _, _ = torch_pass(torch, op, x.contiguous(memory_format=memory), window,
                                       stride, pad)
        for key, fn in (("fprop", fprop), ("both", both)):
            seconds = device_timer(fn, repeats, 5)
            best[key] = min(best.get(key, seconds), seconds)
            seconds = device_timer(fn, repeats, 0, hide_host=True)
            kernel[key] = min(kernel.get(key, seconds), seconds)
    return best, kernel


def run_case(ng, torch, case, repeats):
    name, op, n, c, h, w, window, stride, pad = case
    pool = ng.pool_layer("float16", op, n, c, H=h, W=w, R=window, S=window, str_h=stride,
                         str_w=stride, pad_h=pad, pad_w=pad)
    x = torch.randn(n, c, h, w, device="cuda", dtype=torch.float16)
    x = x.contiguous(memory_format=torch.channels_last)
    _, _, ref_out, grad = torch_pass(torch, op, x, window, stride, pad)
    grad = grad.contiguous(memory_format=torch.channels_last)
    fprop, both, O, G = ours_pass(ng, pool, x, grad)
    both()
    ng.synchronize()
    errors = (check(torch, as_nchw(torch, O), ref_out, name + " fprop"),
              check(torch, as_nchw(torch, G), _torch_grad(torch, op, x, grad, window, stride, pad),
                    name + " bprop"))
    best, kernel = cudnn_times(torch, op, x, window, stride, pad, repeats)
    out_elems = ref_out.numel()
    # bytes a pass must move once: input, output (and argmax), errors, gradient
    moved = {"fprop": (x.numel() + out_elems) * 2 + (out_elems if op == "max" else 0),
             "both": (2 * x.numel() + 2 * out_elems) * 2 + (2 * out_elems if op == "max" else 0)}
    rows = []
    for key, label, fn in (("fprop", "fprop", fprop), ("both", "fprop+bprop", both)):
        row = new_row(name, f"{op} {window}x{window}/{stride} {n}x{c}x{h}x{w} fp16 {label}",
                      IMPLS)
        print(f"{name}: {label}")
        extra = row["extra"] = {"validation_error": errors}
        measure(row, "gpuarray", lambda: device_times(fn, repeats, 5, extra, "gpuarray",
                                                      sync=ng.synchronize))
        row["times_us"]["torch"] = row["values"]["torch"] = best[key] * 1e6
        extra.setdefault("kernel_only_us", {})["torch"] = kernel[key] * 1e6
        print(f"  {'torch':<14} {best[key] * 1e6:.1f} µs")
        print(f"  kernel only: gpuarray {extra['kernel_only_us'].get('gpuarray') or 0:.1f} µs, "
              f"torch {kernel[key] * 1e6:.1f} µs")
        ours = row["values"]["gpuarray"]
        extra.update(achieved_TBps=moved[key] / (ours * 1e-6) / 1e12 if ours else None,
                     ratio_to_torch=best[key] * 1e6 / ours if ours else None)
        if name.startswith("alexnet pool1"):
            if key == "both":
                set_target(row, 100.0, "<= 100 us")
            elif op == "max":
                set_target(row, 30.0, "<= 30 us")
            else:
                set_target(row, best[key] * 1e6 / 3, "<= torch / 3")
        rows.append(row)
    return rows


def _torch_grad(torch, op, x, grad, window, stride, pad):
    x = x.detach().requires_grad_(True)
    F = torch.nn.functional
    out = (F.max_pool2d(x, window, stride, pad) if op == "max"
           else F.avg_pool2d(x, window, stride, pad, count_include_pad=False))
    out.backward(grad)
    return x.grad


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="AlexNet's pool1 only")
    args = parser.parse_args()
    peers = torch_and_gpu("bench_pool")
    if peers is None:
        return 2
    torch, ng = peers
    rows = []
    for case in CASES:
        if args.quick and case[0] not in QUICK:
            continue
        rows += run_case(ng, torch, case, 20 if args.quick else 50)
    print_table([table_cells(r, IMPLS) for r in rows])
    for r in rows:
        e = r["extra"]
        if e.get("achieved_TBps"):
            print(f"{r['label']}: {e['achieved_TBps']:.2f} TB/s, {e['ratio_to_torch']:.2f}x torch")
    write_results("pool", rows, {"impls": IMPLS, "quick": args.quick})
    return 0


if __name__ == "__main__":
    sys.exit(main())
