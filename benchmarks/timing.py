"""Timers shared by the benchmarks: device time by CUDA events, host time by perf_counter.

In: a callable making the calls to time (ours or a peer's), a synchronize
function, repeat counts.  Out: seconds -- the median device time of a call
(:func:`device_timer`; with ``hide_host`` the kernels alone), of a call in a
chain queued back to back (:func:`chain_timer`), or the host time of one
call (:func:`host_timer`, :func:`host_call_times` and the rest).  The events
come from torch where it has CUDA, else CuPy; only the standard library is
imported at module level.
"""
import statistics
import time


def _event_backend():
    """Return (make_event, elapsed_ms, synchronize, spin) from torch, else CuPy.

    ``spin(cycles)`` enqueues a kernel that busy-waits (torch only, else None).
    """
    try:
        import torch

        if torch.cuda.is_available():
            return (lambda: torch.cuda.Event(enable_timing=True),
                    lambda start, end: start.elapsed_time(end),
                    torch.cuda.synchronize, getattr(torch.cuda, "_sleep", None))
    except ImportError:
        pass
    try:
        import cupy

        return (cupy.cuda.Event, cupy.cuda.get_elapsed_time,
                cupy.cuda.runtime.deviceSynchronize, None)
    except ImportError:
        raise RuntimeError("device_timer needs torch (with CUDA) or CuPy for CUDA events")


def device_timer(fn, repeats=100, warmup=10, sync=None, hide_host=False, spin_cycles=1_000_000):
    """Median device time of one ``fn()`` call, in seconds.

    Each call is bracketed by a pair of CUDA events recorded on the current
    (default) stream; the calls are issued back to back with no host sync in
    between, so the figure is the steady-state time per call of a loop: the
    kernel time when the host keeps ahead of the GPU, the host dispatch time
    when it does not. With ``hide_host`` a spin kernel of ``spin_cycles``
    clock cycles (default about 0.5 ms at 2 GHz; longer for calls whose host
    work takes longer) runs before each call, so that its launches are
    queued before the start event fires: the kernel time alone (needs
    torch). ``sync`` (e.g. ``ng.synchronize``)
    runs after the warm-up and after the timed calls.
    """
    make_event, elapsed_ms, synchronize, spin = _event_backend()
    if hide_host and spin is None:
        raise RuntimeError("hide_host needs torch.cuda._sleep")
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    synchronize()
    starts = [make_event() for _ in range(repeats)]
    ends = [make_event() for _ in range(repeats)]
    for start, end in zip(starts, ends):
        if hide_host:
            spin(spin_cycles)
        start.record()
        fn()
        end.record()
    if sync is not None:
        sync()
    synchronize()
    return statistics.median(elapsed_ms(s, e) for s, e in zip(starts, ends)) / 1e3


def chain_timer(fn, calls=40, repeats=9, warmup=3, spin_cycles=60_000_000):
    """Median device time per call of ``calls`` calls of ``fn()`` queued back to
    back, in seconds: one pair of CUDA events around the whole chain, a spin
    kernel of ``spin_cycles`` clock cycles first (about 30 ms) so that every
    launch is queued before the chain starts.  This is the time a call costs
    inside a model's stream of kernels: what a kernel's start and end cost
    beside its neighbours (launch latency, set-up overlapped with the kernel
    before it) counts, the host's time does not.  Needs torch.
    """
    make_event, elapsed_ms, synchronize, spin = _event_backend()
    if spin is None:
        raise RuntimeError("chain_timer needs torch.cuda._sleep")
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeats):
        synchronize()
        spin(spin_cycles)
        start, end = make_event(), make_event()
        start.record()
        for _ in range(calls):
            fn()
        end.record()
        synchronize()
        times.append(elapsed_ms(start, end) / calls)
    return statistics.median(times) / 1e3


def device_times(fn, repeats, warmup, extra, impl, sync=None):
    """device_timer(fn) in seconds; also stores its kernel-only time (hide_host) in
    ``extra["kernel_only_us"][impl]``, None where it cannot be measured."""
    seconds = device_timer(fn, repeats, warmup, sync=sync)
    try:
        kernel = device_timer(fn, repeats, 0, sync=sync, hide_host=True) * 1e6
    except RuntimeError:
        kernel = None
    extra.setdefault("kernel_only_us", {})[impl] = kernel
    return seconds


def host_timer(fn, n=2000, batches=5, warmup=100, sync=None, include_sync=False):
    """Median host time of one ``fn()`` call, in seconds (perf_counter).

    Times ``batches`` batches of ``n`` calls and returns the median batch time
    divided by ``n``. ``sync`` runs after the warm-up and after every batch;
    outside the timed region unless ``include_sync`` (then the figure is the
    wall-clock time per call including the device work).
    """
    for _ in range(warmup):
        fn()
    if sync is not None:
        sync()
    per_call = []
    for _ in range(batches):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        if include_sync and sync is not None:
            sync()
        per_call.append((time.perf_counter() - t0) / n)
        if not include_sync and sync is not None:
            sync()
    return statistics.median(per_call)


def host_call_times(fn, sync, calls=50, batches=3, warmup=3):
    """Host seconds of each of ``batches * calls`` calls of ``fn()``, sorted,
    each call timed alone (perf_counter_ns), the queue drained by ``sync``
    before every batch so that a full launch queue never blocks a call."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(batches):
        sync()
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            fn()
            times.append(time.perf_counter_ns() - t0)
    sync()
    return sorted(t / 1e9 for t in times)


def interleaved_call_times(fns, sync, calls=50, batches=3, warmup=3):
    """:func:`host_call_times` of several implementations (``{name: fn}``),
    their batches taken in turn: a host whose speed drifts over seconds
    (the GPU machines' does, by a third) then moves every implementation's
    figure alike, where timing one after the other would favour whichever
    ran in a fast spell.  Returns ``{name: sorted seconds}``."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    times = {name: [] for name in fns}
    for _ in range(batches):
        for name, fn in fns.items():
            sync()
            for _ in range(calls):
                t0 = time.perf_counter_ns()
                fn()
                times[name].append(time.perf_counter_ns() - t0)
    sync()
    return {name: sorted(t / 1e9 for t in ts) for name, ts in times.items()}


def host_per_call(fn, sync, calls=50, batches=3, warmup=3):
    """Median of :func:`host_call_times`: host seconds of one ``fn()`` call."""
    return statistics.median(host_call_times(fn, sync, calls, batches, warmup))
