// pool.cu: max and average pooling, forward and backward.
//
// What it computes: for every output (n, k, m, p, q), the max or the mean
// of the input window spanning J channels and T x R x S positions
// (channel pooling -- maxout -- when J > 1); max pooling also records the
// window's argmax.  Backward, every input element sums the errors of the
// outputs whose windows hold it: all of them, divided by the window's
// count, for average pooling; those whose argmax is this element for max
// pooling.  The backward pass gathers (one thread per input element), so
// it needs no atomics and is deterministic.
//
// Layouts (cuDNN names): I and grad_I (N, D, H, W, C), O and E
// (N, M, P, Q, K), channel innermost, contiguous; argmax as O, holding
// the flat index ((j*T + t)*R + r)*S + s of the maximum in its window,
// uint8 for windows of at most 256 elements, else int32.  Max pooling
// ignores padding; on ties and NaN it keeps the first maximum (numpy's
// argmax); the average divides by the elements inside the input, or by
// the whole window with include_padding.
//
// Parameters: PoolArgs (pool.cuh) -- pointers, N, and per pooled axis in
// the order (channel, depth, height, width): input size (C D H W), output
// size (K M P Q), window (J T R S), stride and padding; include_padding;
// multiply-shift divisors of a thread's index and of the strides.
// Arithmetic is fp32; results are rounded to nearest on store.
//
// These are the general kernels: one flat walk over any window.  The
// convnets' layers (2x2 and 3x3 windows, channels not pooled, 16-byte
// accesses) take pool_window.cu's, which do the same in fewer instructions.
//
// Launch shape: grid (X, Y, 1) with any X, Y >= 1, block (256, 1, 1), no
// shared memory; blocks stride over the N images along y, threads over one
// image's outputs (fprop) or inputs (bprop) along x, V consecutive
// channels each.  Index math within an image is 32-bit (pooling layers
// refuse tensors of 2**31 elements or more): 64-bit division would be a
// subroutine call, and calls cost stack spills.  V > 1 (16-byte accesses)
// needs J = 1, channel stride 1, no channel padding, C % V == 0,
// 16-byte aligned tensors and an argmax aligned to V of its elements; the
// launcher checks, else V = 1.
//
// Kernels: ga_pool_{fprop,bprop}_{max,avg}_{f16,bf16,f32}_v{1,V}, the max
// ones with an argmax suffix _u8 or _i32.
#include "pool.cuh"
#include <math_constants.h>

// Elements of the window starting at `start` (per axis) that lie inside the input.
__device__ __forceinline__ int inside_count(const PoolArgs &p, const int (&start)[4]) {
    int count = 1;
    #pragma unroll
    for (int a = 0; a < 4; ++a) count *= inside_along(p, a, start[a]);
    return count;
}

// fprop: one thread per V output channels of one (n, m, p, q).
template <typename T, typename A, bool MAX, int V>
__device__ void pool_fprop(const PoolArgs &p) {
    const T *in = static_cast<const T *>(p.I);
    const int per_image = p.out[1] * p.out[2] * p.out[3] * (p.out[0] / V);
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        const Position at = position<V>(p, g);
        const int pos[4] = {at.channel, at.z, at.y, at.x};
        int start[4];
        #pragma unroll
        for (int a = 0; a < 4; ++a) start[a] = pos[a] * p.stride[a] - p.pad[a];
        float acc[V];
        int arg[V];
        #pragma unroll
        for (int i = 0; i < V; ++i) { acc[i] = MAX ? -CUDART_INF_F : 0.f; arg[i] = -1; }
        // One flat walk over the window's taps, (j, t, r, s) advanced like an
        // odometer.  Every tap loads (a tap outside the input reads the
        // tensor's first element and is then ignored), so that unrolled
        // iterations keep several loads in flight instead of one.
        const int taps = p.window[0] * p.window[1] * p.window[2] * p.window[3];
        int j = 0, t = 0, r = 0, s = 0;
        #pragma unroll 4
        for (int tap = 0; tap < taps; ++tap) {
            int c = start[0] + j, d = start[1] + t, h = start[2] + r, w = start[3] + s;
            bool inside = (unsigned)c < (unsigned)p.size[0] && (unsigned)d < (unsigned)p.size[1] &&
                          (unsigned)h < (unsigned)p.size[2] && (unsigned)w < (unsigned)p.size[3];
            long long offset = inside ? (((n * p.size[1] + d) * p.size[2] + h) * p.size[3] + w) *
                                        p.size[0] + c : 0;
            float x[V];
            load<T, V>(in + offset, x);
            if (inside) {
                #pragma unroll
                for (int i = 0; i < V; ++i) {
                    if (!MAX) {
                        acc[i] += x[i];
                    } else if (arg[i] < 0 || x[i] > acc[i] || (isnan(x[i]) && !isnan(acc[i]))) {
                        acc[i] = x[i];
                        arg[i] = tap;
                    }
                }
            }
            if (++s == p.window[3]) {
                s = 0;
                if (++r == p.window[2]) {
                    r = 0;
                    if (++t == p.window[1]) { t = 0; ++j; }
                }
            }
        }
        if (!MAX) {
            float count = p.include_padding ? (float)(p.window[0] * p.window[1] * p.window[2] *
                                                      p.window[3])
                                            : (float)inside_count(p, start);
            float inverse = __fdividef(1.f, count);
            #pragma unroll
            for (int i = 0; i < V; ++i) acc[i] *= inverse;
        }
        const long long o = (n * per_image + g) * V;  // outputs are laid out in (n, g) order
        if (p.O) store<T, V>(static_cast<T *>(p.O) + o, acc);
        if (MAX && p.argmax) {
            Pack<A, V> index;
            #pragma unroll
            for (int i = 0; i < V; ++i) index.v[i] = (A)arg[i];
            *reinterpret_cast<Pack<A, V> *>(static_cast<A *>(p.argmax) + o) = index;
        }
    }
}

// bprop: one thread per V input channels of one (n, d, h, w).
template <typename T, typename A, bool MAX, int V>
__device__ void pool_bprop(const PoolArgs &p) {
    const T *err = static_cast<const T *>(p.E);
    const A *argmax = static_cast<const A *>(p.argmax);
    const int per_image = p.size[1] * p.size[2] * p.size[3] * (p.size[0] / V);
    const float window = (float)(p.window[0] * p.window[1] * p.window[2] * p.window[3]);
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        const Position at = position<V>(p, g);
        const int pos[4] = {at.channel, at.z, at.y, at.x};
        int lo[4], hi[4];
        #pragma unroll
        for (int a = 0; a < 4; ++a) outputs_holding(p, a, pos[a], lo[a], hi[a]);
        float acc[V];
        #pragma unroll
        for (int i = 0; i < V; ++i) acc[i] = 0.f;
        // V > 1 has J = 1, stride 1, no padding along channels: output k = input c
        #pragma unroll 1
        for (int k = lo[0]; k <= hi[0]; ++k) {
            int j = pos[0] + p.pad[0] - k * p.stride[0];
            #pragma unroll 1
            for (int m = lo[1]; m <= hi[1]; ++m) {
                int t = pos[1] + p.pad[1] - m * p.stride[1];
                #pragma unroll 1
                for (int pp = lo[2]; pp <= hi[2]; ++pp) {
                    int r = pos[2] + p.pad[2] - pp * p.stride[2];
                    #pragma unroll 1
                    for (int q = lo[3]; q <= hi[3]; ++q) {
                        int s = pos[3] + p.pad[3] - q * p.stride[3];
                        long long o = (((n * p.out[1] + m) * p.out[2] + pp) * p.out[3] + q) *
                                          p.out[0] + k;
                        float e[V];
                        load<T, V>(err + o, e);
                        if (MAX) {
                            int tap = ((j * p.window[1] + t) * p.window[2] + r) * p.window[3] + s;
                            #pragma unroll
                            for (int i = 0; i < V; ++i)
                                if ((int)argmax[o + i] == tap) acc[i] += e[i];
                        } else {
                            int start[4] = {k * p.stride[0] - p.pad[0], m * p.stride[1] - p.pad[1],
                                            pp * p.stride[2] - p.pad[2], q * p.stride[3] - p.pad[3]};
                            float count = p.include_padding ? window : (float)inside_count(p, start);
                            float inverse = __fdividef(1.f, count);
                            #pragma unroll
                            for (int i = 0; i < V; ++i) acc[i] += e[i] * inverse;
                        }
                    }
                }
            }
        }
        store<T, V>(static_cast<T *>(p.grad_I) + (n * per_image + g) * V, acc);
    }
}

// (256, 4): a budget of 64 registers; left to itself, ptxas aimed at 32 and
// spilled in the bprop kernels
#define POOL_KERNELS(T, TNAME, V, VNAME)                                                        \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_fprop_max_##TNAME##_##VNAME##_u8(const __grid_constant__ PoolArgs p) {          \
        pool_fprop<T, unsigned char, true, V>(p);                                              \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_fprop_max_##TNAME##_##VNAME##_i32(const __grid_constant__ PoolArgs p) {         \
        pool_fprop<T, int, true, V>(p);                                                        \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_fprop_avg_##TNAME##_##VNAME(const __grid_constant__ PoolArgs p) {               \
        pool_fprop<T, int, false, V>(p);                                                       \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_bprop_max_##TNAME##_##VNAME##_u8(const __grid_constant__ PoolArgs p) {          \
        pool_bprop<T, unsigned char, true, V>(p);                                              \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_bprop_max_##TNAME##_##VNAME##_i32(const __grid_constant__ PoolArgs p) {         \
        pool_bprop<T, int, true, V>(p);                                                        \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS, 4)                               \
        ga_pool_bprop_avg_##TNAME##_##VNAME(const __grid_constant__ PoolArgs p) {               \
        pool_bprop<T, int, false, V>(p);                                                       \
    }

POOL_KERNELS(float, f32, 1, v1)
POOL_KERNELS(float, f32, 4, v4)
POOL_KERNELS(__half, f16, 1, v1)
POOL_KERNELS(__half, f16, 8, v8)
POOL_KERNELS(__nv_bfloat16, bf16, 1, v1)
POOL_KERNELS(__nv_bfloat16, bf16, 8, v8)
