// pool_window.cu: max and average pooling over small windows, 16 bytes of
// channels per thread -- the layers of the convnets (3x3 and 2x2 windows).
//
// What it computes: what pool.cu computes (see there: max with the first
// maximum's index, numpy's argmax on ties and NaN; average over the
// elements inside the input or, with include_padding, the whole window;
// backward by gathering, deterministic), for layers whose channels are not
// pooled (J = 1, channel stride 1, no channel padding) and whose tensors
// allow 16-byte accesses (C % V == 0, aligned; the launcher checks, as for
// pool.cu's V > 1 kernels).  These kernels do the same work in fewer
// instructions -- pool.cu's general walk issued ~1270 instructions per
// fprop thread of AlexNet's pool1 and ran issue-bound at 1.15 TB/s:
//   * fprop knows the window (R x S) at compile time: every tap's load is
//     issued before any arithmetic, and max pooling works on 32-bit words
//     of two 16-bit elements (one max and one compare-and-select per word
//     and tap: the maximum first, then the first tap equal to it);
//   * bprop knows at compile time at most how many outputs along each of
//     H and W hold an input position (KMAX = ceil(window / stride)) and
//     loads all of their errors and argmax indices at once;
//   * a thread's position comes from multiply-shift divisions (FastDiv).
//
// Layouts (cuDNN names): I and grad_I (N, D, H, W, C), O, E and argmax
// (N, M, P, Q, K = C), channel innermost, contiguous; argmax uint8, the
// flat index (t*R + r)*S + s in the window (windows of at most 256 taps).
//
// Parameters: PoolArgs (pool.cuh): pointers, N, per pooled axis (channel,
// depth, height, width) input size (C D H W), output size (K M P Q), window
// (J T R S), stride and padding, include_padding, and the divisors of a
// thread's index.  Arithmetic is fp32 except the max pooling compares
// (exact in any precision); results are rounded to nearest on store.
//
// Launch shape: grid (X, Y, 1) with any X, Y >= 1, block (256, 1, 1), no
// shared memory; blocks stride over the N images along y, threads over one
// image's outputs (fprop) or inputs (bprop) along x, V consecutive
// channels each (V = 8 for f16/bf16, 4 for f32).
//
// Kernels: ga_pool_fprop_{max,avg}_{f16,bf16,f32}_r{2,3}s{2,3} (R = S),
// ga_pool_bprop_{max,avg}_{f16,bf16,f32}_k{1,2,3}; the max ones end in _u8.
#include "pool.cuh"

// 32-bit words of LANES elements of T: what max pooling compares.  eq and
// nan return all-ones in the lanes where they hold, so a lane select is one
// bitwise operation.
template <typename T> struct Words;

// two 16-bit values (T2: __half2 or __nv_bfloat162) to a word; the
// intrinsics are overloaded for both
template <typename T2, unsigned NEG_INF_BITS> struct PairWords {
    static constexpr int LANES = 2;
    static constexpr unsigned NEG_INF = NEG_INF_BITS;
    static __device__ __forceinline__ T2 h(unsigned a) { return *reinterpret_cast<T2 *>(&a); }
    static __device__ __forceinline__ unsigned max(unsigned a, unsigned b) {
        T2 m = __hmax2_nan(h(a), h(b));
        return *reinterpret_cast<unsigned *>(&m);
    }
    static __device__ __forceinline__ unsigned eq(unsigned a, unsigned b) { return __heq2_mask(h(a), h(b)); }
    static __device__ __forceinline__ unsigned gt(unsigned a, unsigned b) { return __hgt2_mask(h(a), h(b)); }
    static __device__ __forceinline__ unsigned nan(unsigned a) { return __hneu2_mask(h(a), h(a)); }
};

template <> struct Words<__half> : PairWords<__half2, 0xFC00FC00u> {};
template <> struct Words<__nv_bfloat16> : PairWords<__nv_bfloat162, 0xFF80FF80u> {};

template <> struct Words<float> {
    static constexpr int LANES = 1;
    static constexpr unsigned NEG_INF = 0xFF800000u;
    static __device__ __forceinline__ unsigned max(unsigned a, unsigned b) {
        unsigned m;  // max.NaN: a NaN operand gives NaN, as __hmax2_nan does
        asm("max.NaN.f32 %0, %1, %2;" : "=r"(m) : "r"(a), "r"(b));
        return m;
    }
    static __device__ __forceinline__ unsigned eq(unsigned a, unsigned b) {
        return __uint_as_float(a) == __uint_as_float(b) ? ~0u : 0u;
    }
    static __device__ __forceinline__ unsigned gt(unsigned a, unsigned b) {
        return __uint_as_float(a) > __uint_as_float(b) ? ~0u : 0u;
    }
    static __device__ __forceinline__ unsigned nan(unsigned a) {
        return isnan(__uint_as_float(a)) ? ~0u : 0u;
    }
};

// 16 bytes as 32-bit words
struct Row16 {
    unsigned w[4];
};

__device__ __forceinline__ Row16 load16(const void *src) {
    uint4 v = *static_cast<const uint4 *>(src);
    return {{v.x, v.y, v.z, v.w}};
}

// element i of a row of words, widened to fp32
template <typename T>
__device__ __forceinline__ float element(const Row16 &row, int i) {
    return to_f32(reinterpret_cast<const T *>(row.w)[i]);
}

// Lanes of a where mask is set, of b elsewhere
__device__ __forceinline__ unsigned select(unsigned mask, unsigned a, unsigned b) {
    return (a & mask) | (b & ~mask);
}

// Max over one window: the maximum per lane (NaN if any tap is NaN), then the
// first inside tap equal to it, or, in lanes whose maximum is NaN, the first NaN.
// Taps outside the input hold -inf and are never chosen.
template <typename T, int TAPS>
__device__ __forceinline__ void window_max(const Row16 (&x)[TAPS], const bool (&inside)[TAPS],
                                           Row16 &best, Row16 &arg) {
    using W = Words<T>;
    constexpr unsigned ONES = W::LANES == 2 ? 0x00010001u : 1u;  // 1 in each lane
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        unsigned m = x[0].w[k];
        #pragma unroll
        for (int tap = 1; tap < TAPS; ++tap) m = W::max(m, x[tap].w[k]);
        unsigned index = ~0u;  // no tap yet (a lane's all-ones: more taps than any window)
        #pragma unroll
        for (int tap = TAPS - 1; tap >= 0; --tap) {  // backwards: the first match stays
            unsigned hit = inside[tap] ? W::eq(x[tap].w[k], m) : 0u;
            index = select(hit, tap * ONES, index);
        }
        if (W::nan(m)) {  // rare: NaN matches nothing, so look for the first NaN
            unsigned nan_index = ~0u;
            #pragma unroll
            for (int tap = TAPS - 1; tap >= 0; --tap) {
                unsigned hit = inside[tap] ? W::nan(x[tap].w[k]) : 0u;
                nan_index = select(hit, tap * ONES, nan_index);
            }
            unsigned nan_lanes = W::nan(m);
            index = select(nan_lanes, nan_index, index);
        }
        best.w[k] = m;
        arg.w[k] = index;
    }
}

// Fold the maximum m and index of a later depth into (best, arg): a lane
// takes them where m is larger, or NaN over a number (the first maximum stays).
template <typename T>
__device__ __forceinline__ void merge_depth(Row16 &best, Row16 &arg, const Row16 &m, const Row16 &index) {
    using W = Words<T>;
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        const unsigned take = W::gt(m.w[k], best.w[k]) | (W::nan(m.w[k]) & ~W::nan(best.w[k]));
        best.w[k] = select(take, m.w[k], best.w[k]);
        arg.w[k] = select(take, index.w[k], arg.w[k]);
    }
}

// The V argmax indices (each below 256) of a row of index words, as bytes
__device__ __forceinline__ void store_indices(unsigned char *dst, const Row16 &arg, int lanes) {
    if (lanes == 2) {  // 8 indices in 16-bit lanes: the low byte of each
        *reinterpret_cast<uint2 *>(dst) = make_uint2(__byte_perm(arg.w[0], arg.w[1], 0x6420),
                                                     __byte_perm(arg.w[2], arg.w[3], 0x6420));
    } else {           // 4 indices, one a word
        const unsigned lo = __byte_perm(arg.w[0], arg.w[1], 0x0040);
        const unsigned hi = __byte_perm(arg.w[2], arg.w[3], 0x0040);
        *reinterpret_cast<unsigned *>(dst) = __byte_perm(lo, hi, 0x5410);
    }
}

// fprop: one thread per V output channels of one (n, m, p, q); the window's
// R x S taps known at compile time, its depth T walked at run time.
template <typename T, bool MAX, int R, int S>
__device__ void pool_fprop_window(const PoolArgs &p) {
    using W = Words<T>;
    constexpr int V = 16 / sizeof(T), TAPS = R * S;
    constexpr unsigned ONES = W::LANES == 2 ? 0x00010001u : 1u;
    const T *in = static_cast<const T *>(p.I);
    const int C = p.size[0], row = p.size[3] * C, plane = p.size[2] * row;
    const int per_image = p.out[1] * p.out[2] * p.out[3] * (C / V);
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        const Position at = position<V>(p, g);
        const int d0 = at.z * p.stride[1] - p.pad[1];
        const int h0 = at.y * p.stride[2] - p.pad[2], w0 = at.x * p.stride[3] - p.pad[3];
        bool inside[TAPS];
        #pragma unroll
        for (int r = 0; r < R; ++r)
            #pragma unroll
            for (int s = 0; s < S; ++s)
                inside[r * S + s] = (unsigned)(h0 + r) < (unsigned)p.size[2] &&
                                    (unsigned)(w0 + s) < (unsigned)p.size[3];
        const T *image = in + n * p.size[1] * plane + at.channel;
        const unsigned empty = MAX ? W::NEG_INF : 0u;  // what a tap outside the input holds
        float sum[V];
        #pragma unroll
        for (int i = 0; i < V; ++i) sum[i] = 0.f;
        Row16 best, arg;
        bool first = true;
        for (int t = 0; t < p.window[1]; ++t) {
            const int d = d0 + t;
            if ((unsigned)d >= (unsigned)p.size[1]) continue;
            const int offset = d * plane + h0 * row + w0 * C;  // may lie outside: only taps inside load
            Row16 x[TAPS];
            #pragma unroll
            for (int r = 0; r < R; ++r)
                #pragma unroll
                for (int s = 0; s < S; ++s) {
                    x[r * S + s] = inside[r * S + s] ? load16(image + offset + r * row + s * C)
                                                     : Row16{{empty, empty, empty, empty}};
                }
            if (MAX) {
                Row16 m, index;
                window_max<T, TAPS>(x, inside, m, index);
                #pragma unroll
                for (int k = 0; k < 4; ++k) index.w[k] += t * TAPS * ONES;
                if (first) {
                    best = m;
                    arg = index;
                } else {
                    merge_depth<T>(best, arg, m, index);
                }
                first = false;
            } else {
                #pragma unroll
                for (int tap = 0; tap < TAPS; ++tap)
                    #pragma unroll
                    for (int i = 0; i < V; ++i) sum[i] += element<T>(x[tap], i);
            }
        }
        const long long o = (n * per_image + g) * V;  // outputs are laid out in (n, g) order
        if (MAX) {
            if (p.O) *reinterpret_cast<uint4 *>(static_cast<T *>(p.O) + o) =
                make_uint4(best.w[0], best.w[1], best.w[2], best.w[3]);
            if (p.argmax) store_indices(static_cast<unsigned char *>(p.argmax) + o, arg, W::LANES);
        } else {
            const int count = p.include_padding
                ? p.window[1] * TAPS
                : inside_along(p, 1, d0) * inside_along(p, 2, h0) * inside_along(p, 3, w0);
            const float inverse = __fdividef(1.f, (float)count);
            #pragma unroll
            for (int i = 0; i < V; ++i) sum[i] *= inverse;
            store<T, V>(static_cast<T *>(p.O) + o, sum);
        }
    }
}

// The V argmax indices of a thread's channels (V bytes) and index i of them
struct Indices {
    unsigned w[2];
};

template <int V>
__device__ __forceinline__ Indices load_indices(const unsigned char *src) {
    if (V == 8) {
        const uint2 v = *reinterpret_cast<const uint2 *>(src);
        return {{v.x, v.y}};
    }
    return {{*reinterpret_cast<const unsigned *>(src), 0u}};
}

__device__ __forceinline__ int index_at(const Indices &a, int i) {
    return (a.w[i / 4] >> (8 * (i % 4))) & 0xFF;
}

// 1 / (elements inside the input) of the windows of outputs lo .. lo + KMAX - 1
// along axis a (1 / window with include_padding)
template <int KMAX>
__device__ __forceinline__ void inverse_counts(const PoolArgs &p, int a, int lo, float (&inverse)[KMAX]) {
    #pragma unroll
    for (int i = 0; i < KMAX; ++i) {
        const int count = p.include_padding ? p.window[a]
                                            : inside_along(p, a, (lo + i) * p.stride[a] - p.pad[a]);
        inverse[i] = __fdividef(1.f, (float)max(count, 1));
    }
}

// bprop: one thread per V input channels of one (n, d, h, w), gathering the
// errors of the outputs whose windows hold it: at most KMAX along each of H
// and W, the depth walked at run time.  The errors (and argmax indices) of a
// batch of rows of outputs are loaded before any is used: all KMAX rows up to
// KMAX = 2, one row at a time for 3 (whose nine all at once held too many
// registers: 128 against 81 us on GoogLeNet's 3x3/1 pooling, H100).
template <typename T, bool MAX, int KMAX>
__device__ void pool_bprop_window(const PoolArgs &p) {
    constexpr int V = 16 / sizeof(T), ROWS = KMAX >= 3 ? 1 : KMAX;
    const T *err = static_cast<const T *>(p.E);
    const unsigned char *argmax = static_cast<const unsigned char *>(p.argmax);
    const int K = p.out[0], orow = p.out[3] * K, oplane = p.out[2] * orow;
    const int per_image = p.size[1] * p.size[2] * p.size[3] * (p.size[0] / V);
    for (long long n = blockIdx.y; n < p.N; n += gridDim.y)
    for (int g = blockIdx.x * blockDim.x + threadIdx.x; g < per_image; g += gridDim.x * blockDim.x) {
        const Position at = position<V>(p, g);
        int lo[4], hi[4];
        outputs_holding(p, 1, at.z, lo[1], hi[1]);
        outputs_holding(p, 2, at.y, lo[2], hi[2]);
        outputs_holding(p, 3, at.x, lo[3], hi[3]);
        float inverse_h[KMAX], inverse_w[KMAX];
        if (!MAX) {
            inverse_counts<KMAX>(p, 2, lo[2], inverse_h);
            inverse_counts<KMAX>(p, 3, lo[3], inverse_w);
        }
        const long long image = n * p.out[1] * oplane + at.channel;
        float acc[V];
        #pragma unroll
        for (int c = 0; c < V; ++c) acc[c] = 0.f;
        for (int m = lo[1]; m <= hi[1]; ++m) {
            const int t = at.z + p.pad[1] - m * p.stride[1];
            float inverse_d = 0.f;
            if (!MAX) {
                const int depth = p.include_padding ? p.window[1]
                                                    : inside_along(p, 1, m * p.stride[1] - p.pad[1]);
                inverse_d = __fdividef(1.f, (float)depth);
            }
            #pragma unroll
            for (int i0 = 0; i0 < KMAX; i0 += ROWS) {
                bool valid[ROWS * KMAX];
                Row16 e[ROWS * KMAX];
                Indices index[ROWS * KMAX];
                #pragma unroll
                for (int ii = 0; ii < ROWS; ++ii)
                    #pragma unroll
                    for (int j = 0; j < KMAX; ++j) {
                        const int i = i0 + ii, slot = ii * KMAX + j;
                        valid[slot] = lo[2] + i <= hi[2] && lo[3] + j <= hi[3];
                        const long long o = image + m * oplane + (lo[2] + i) * orow + (lo[3] + j) * K;
                        e[slot] = valid[slot] ? load16(err + o) : Row16{{0u, 0u, 0u, 0u}};
                        if (MAX) index[slot] = valid[slot] ? load_indices<V>(argmax + o) : Indices{{0u, 0u}};
                    }
                #pragma unroll
                for (int ii = 0; ii < ROWS; ++ii)
                    #pragma unroll
                    for (int j = 0; j < KMAX; ++j) {
                        const int i = i0 + ii, slot = ii * KMAX + j;
                        if (MAX) {
                            const int r = at.y + p.pad[2] - (lo[2] + i) * p.stride[2];
                            const int s = at.x + p.pad[3] - (lo[3] + j) * p.stride[3];
                            const int tap = (t * p.window[2] + r) * p.window[3] + s;
                            #pragma unroll
                            for (int c = 0; c < V; ++c)
                                if (valid[slot] && index_at(index[slot], c) == tap)
                                    acc[c] += element<T>(e[slot], c);
                        } else {
                            const float scale = valid[slot] ? inverse_d * inverse_h[i] * inverse_w[j] : 0.f;
                            #pragma unroll
                            for (int c = 0; c < V; ++c) acc[c] += element<T>(e[slot], c) * scale;
                        }
                    }
            }
        }
        store<T, V>(static_cast<T *>(p.grad_I) + (n * per_image + g) * V, acc);
    }
}

#define POOL_FPROP_WINDOW(T, TNAME, R)                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS)                                  \
        ga_pool_fprop_max_##TNAME##_r##R##s##R##_u8(const __grid_constant__ PoolArgs p) {       \
        pool_fprop_window<T, true, R, R>(p);                                                   \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS)                                  \
        ga_pool_fprop_avg_##TNAME##_r##R##s##R(const __grid_constant__ PoolArgs p) {            \
        pool_fprop_window<T, false, R, R>(p);                                                  \
    }

#define POOL_BPROP_WINDOW(T, TNAME, KMAX)                                                       \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS)                                  \
        ga_pool_bprop_max_##TNAME##_k##KMAX##_u8(const __grid_constant__ PoolArgs p) {          \
        pool_bprop_window<T, true, KMAX>(p);                                                   \
    }                                                                                          \
    extern "C" __global__ void __launch_bounds__(POOL_THREADS)                                  \
        ga_pool_bprop_avg_##TNAME##_k##KMAX(const __grid_constant__ PoolArgs p) {               \
        pool_bprop_window<T, false, KMAX>(p);                                                  \
    }

#define POOL_WINDOW_KERNELS(T, TNAME)                                                           \
    POOL_FPROP_WINDOW(T, TNAME, 2)                                                             \
    POOL_FPROP_WINDOW(T, TNAME, 3)                                                             \
    POOL_BPROP_WINDOW(T, TNAME, 1)                                                             \
    POOL_BPROP_WINDOW(T, TNAME, 2)                                                             \
    POOL_BPROP_WINDOW(T, TNAME, 3)

POOL_WINDOW_KERNELS(float, f32)
POOL_WINDOW_KERNELS(__half, f16)
POOL_WINDOW_KERNELS(__nv_bfloat16, bf16)
