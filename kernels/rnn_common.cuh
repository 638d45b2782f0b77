// rnn_common.cuh: what the persistent recurrent kernels share -- the
// argument block, the dot products on the fp32 FMAs (those on tensor cores:
// rnn_mma.cuh), writing a state value for the next step, the one-time
// weight load, the forward cell and the list of modes and types every
// kernel is built for.
//
// What it computes: nothing by itself.  kernels/rnn_persist.cu (one block a
// multiprocessor, the state exchanged through L2 behind a grid barrier) and
// kernels/rnn_cluster_sm90.cu (a thread-block cluster per batch slice, the
// state exchanged through distributed shared memory, counted on mbarriers)
// are built on it; their headers say the layouts and launch shapes.
// RnnArgs is packed byte for byte by gpuarray/rnn/persistent.py (ARGS).
#pragma once
#include "convert.cuh"
#include "fastdiv.cuh"
#include "sm80_ptx.cuh"

#define RNN_THREADS 256
#define RNN_WARPS (RNN_THREADS / 32)
// rows and batch columns per dot-product task: a lane holds RB * NB = 8 partial sums
#define RNN_RB 2
#define RNN_NB 4

enum { RELU = 0, TANH = 1, GRU = 2, LSTM = 3 };

struct RnnArgs {
    const void *X, *W, *h0, *c0;
    void *Y, *hy, *cy;
    float *reserve, *hbuf;
    unsigned *barrier;
    const void *dY, *dhy, *dcy;
    void *dX, *dh0, *dc0;
    int T, N, H, U, KC;
    // shared memory: the weights (w_bytes), then fp32 arrays at these float offsets
    int w_bytes, off_bias, off_v, off_acc, off_h, off_c, off_byp;
    // nonzero: the products run on tensor cores (16-bit types, H % 64 == 0; the host decides)
    int tc;
    // nonzero: X is fp32, not T
    int x_f32;
    // the clustered forward (rnn_cluster_sm90.cu): samples per cluster, the
    // cluster taking samples [NS * cluster, NS * cluster + NS), and the float
    // offset of its two mbarriers; unused by the others
    int NS, off_bar;
};

template <int MODE> struct Mode { static constexpr int G = MODE == GRU ? 3 : MODE == LSTM ? 4 : 1; };

__device__ __forceinline__ float sigmoid(float x) { return 1.f / (1.f + expf(-x)); }

// Four consecutive weights as fp32 (16 bytes of float, 8 of the 16-bit types).
__device__ __forceinline__ float4 load4(const float *p) { return *reinterpret_cast<const float4 *>(p); }
__device__ __forceinline__ float4 load4(const __half *p) {
    uint2 raw = *reinterpret_cast<const uint2 *>(p);
    float2 a = __half22float2(*reinterpret_cast<__half2 *>(&raw.x));
    float2 b = __half22float2(*reinterpret_cast<__half2 *>(&raw.y));
    return make_float4(a.x, a.y, b.x, b.y);
}
__device__ __forceinline__ float4 load4(const __nv_bfloat16 *p) {
    uint2 raw = *reinterpret_cast<const uint2 *>(p);
    float2 a = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&raw.x));
    float2 b = __bfloat1622float2(*reinterpret_cast<__nv_bfloat162 *>(&raw.y));
    return make_float4(a.x, a.y, b.x, b.y);
}

template <typename T> __device__ __forceinline__ float load_or_zero(const void *p, size_t i) {
    return p ? to_f32(static_cast<const T *>(p)[i]) : 0.f;
}


// Sum each of the 8 values over the warp's 32 lanes in 9 shuffles (a
// reduce-scatter): each exchange keeps half of the values and adds the
// partner's copy of them, so after the offsets 16, 8 and 4 lane L holds
// value 4*bit4(L) + 2*bit3(L) + bit2(L), which offsets 2 and 1 complete.
__device__ __forceinline__ float reduce8(const float (&s)[8], int lane) {
    float four[4], two[2];
    const bool hi16 = lane & 16, hi8 = lane & 8, hi4 = lane & 4;
    #pragma unroll
    for (int i = 0; i < 4; ++i)
        four[i] = (hi16 ? s[i + 4] : s[i]) + __shfl_xor_sync(0xffffffffu, hi16 ? s[i] : s[i + 4], 16);
    #pragma unroll
    for (int i = 0; i < 2; ++i)
        two[i] = (hi8 ? four[i + 2] : four[i]) +
                 __shfl_xor_sync(0xffffffffu, hi8 ? four[i] : four[i + 2], 8);
    float one = (hi4 ? two[1] : two[0]) + __shfl_xor_sync(0xffffffffu, hi4 ? two[0] : two[1], 4);
    one += __shfl_xor_sync(0xffffffffu, one, 2);
    return one + __shfl_xor_sync(0xffffffffu, one, 1);
}

// acc[r][n] (= init, or +=) the dot products of the block's rows w[r][c0 .. c0+kc)
// with the staged columns v[n][0 .. kc) (row stride KC), for every batch n.
// A warp takes tasks of RNN_RB rows x RNN_NB batches (8 sums per lane: each
// weight load feeds 4 batches, each state load 2 rows); one warp owns each
// acc entry, so chunks accumulate without atomics, in a fixed order.
template <typename T>
__device__ void dot_chunk(const T *w, int L, int rows, int c0, int kc, const float *v, int KC,
                          int N, float *acc, const float *init, bool init_per_row) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int groups = (N + RNN_NB - 1) / RNN_NB, row_groups = (rows + RNN_RB - 1) / RNN_RB;
    for (int task = warp; task < row_groups * groups; task += RNN_WARPS) {
        const int r0 = (task / groups) * RNN_RB, n0 = (task % groups) * RNN_NB;
        // a row past `rows` or a batch past N reads the last one; its sum is dropped below
        const T *wr[RNN_RB];
        #pragma unroll
        for (int q = 0; q < RNN_RB; ++q) wr[q] = w + (size_t)min(r0 + q, rows - 1) * L + c0;
        const float *vb[RNN_NB];
        #pragma unroll
        for (int b = 0; b < RNN_NB; ++b) vb[b] = v + min(n0 + b, N - 1) * KC;
        float s[RNN_RB * RNN_NB] = {};
        #pragma unroll 2
        for (int k = lane * 4; k < kc; k += 128) {
            float4 a[RNN_RB];
            #pragma unroll
            for (int q = 0; q < RNN_RB; ++q) a[q] = load4(wr[q] + k);
            #pragma unroll
            for (int b = 0; b < RNN_NB; ++b) {
                const float4 x = *reinterpret_cast<const float4 *>(vb[b] + k);
                #pragma unroll
                for (int q = 0; q < RNN_RB; ++q)
                    s[q * RNN_NB + b] += a[q].x * x.x + a[q].y * x.y + a[q].z * x.z + a[q].w * x.w;
            }
        }
        const float sum = reduce8(s, lane);
        const int idx = (lane & 16 ? 4 : 0) + (lane & 8 ? 2 : 0) + (lane & 4 ? 1 : 0);
        const int r = r0 + idx / RNN_NB, n = n0 + idx % RNN_NB;
        if ((lane & 3) == 0 && r < rows && n < N) {
            const int at = r * N + n;
            if (c0 == 0) acc[at] = sum + (init ? (init_per_row ? init[r] : init[at]) : 0.f);
            else acc[at] += sum;
        }
    }
}


// The weights' layout for the tensor cores (rnn_mma.cuh): 16-byte chunks
// XOR-swizzled by (row & 7).  Offset in elements of w[r][k] in rows of L
// elements.
__device__ __forceinline__ int swizzled(int r, int k, int L) {
    return r * L + (((k >> 3) ^ (r & 7)) << 3) + (k & 7);
}


// A state value (h forward, drec backward) at buf[at] for the next step's
// products, which read it in fp32, or in T on the tensor cores.
template <typename T>
__device__ __forceinline__ void publish(float *buf, bool tc, size_t at, float h) {
    if (tc) reinterpret_cast<T *>(buf)[at] = from_f32<T>(h);
    else buf[at] = h;
}

// The block's weights into shared memory once: element f comes from W[src]
// (a zero where src < 0) and goes to w[dst], map(f, src, dst) saying where.
// DEPTH loads are in flight per thread: this one-time copy is bound by DRAM
// latency, not bandwidth.
template <int DEPTH, typename T, typename Map>
__device__ void stage_weights(const T *W, T *w, int count, Map map) {
    for (int f0 = threadIdx.x; f0 < count; f0 += RNN_THREADS * DEPTH) {
        T value[DEPTH];
        int dst[DEPTH];
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            long long src = -1;
            dst[d] = -1;
            if (f0 + d * RNN_THREADS < count) map(f0 + d * RNN_THREADS, src, dst[d]);
            value[d] = src >= 0 ? W[src] : from_f32<T>(0.f);
        }
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d)
            if (dst[d] >= 0) w[dst[d]] = value[d];
    }
}


// Step t's projected input of unit j and sample n (of N), G values (X in T,
// or in fp32 where x_f32).
template <int G, typename T>
__device__ __forceinline__ void load_x(const void *X, bool x_f32, int t, int n, int j, int N, int H,
                                       float (&x)[G]) {
    const size_t at = ((size_t)t * N + n) * G * H + j;
    #pragma unroll
    for (int g = 0; g < G; ++g) {
        const size_t e = at + g * H;
        x[g] = x_f32 ? static_cast<const float *>(X)[e] : to_f32(static_cast<const T *>(X)[e]);
    }
}

// load_x's values as their bits (fp32, or T in the low half), for loads
// issued well before their use: converted by x_value where they are used, so
// that no warp waits on them before then (the grid LSTM forward's warps
// stalled 7% of a step on converting X loaded ahead of the products).
template <int G, typename T>
__device__ __forceinline__ void load_x_bits(const void *X, bool x_f32, int t, int n, int j, int N,
                                            int H, unsigned (&bits)[G]) {
    const size_t at = ((size_t)t * N + n) * G * H + j;
    if (sizeof(T) == 4 || x_f32) {
        #pragma unroll
        for (int g = 0; g < G; ++g) bits[g] = static_cast<const unsigned *>(X)[at + g * H];
    } else {
        #pragma unroll
        for (int g = 0; g < G; ++g) bits[g] = static_cast<const unsigned short *>(X)[at + g * H];
    }
}

template <typename T>
__device__ __forceinline__ float x_value(unsigned bits, bool x_f32) {
    if constexpr (sizeof(T) == 2) {
        if (!x_f32) {
            const unsigned short b = (unsigned short)bits;
            return to_f32(*reinterpret_cast<const T *>(&b));
        }
    }
    return __uint_as_float(bits);
}

// 16 bytes of T as one uint4 (the first element in the lowest bytes).
template <typename T, int VEC>
__device__ __forceinline__ uint4 pack16(const T (&v)[VEC]) {
    unsigned word[4];
    #pragma unroll
    for (int i = 0; i < 4; ++i) {
        if constexpr (sizeof(T) == 4) {
            word[i] = __float_as_uint(v[i]);
        } else {
            const T lo = v[2 * i], hi = v[2 * i + 1];
            word[i] = (unsigned)*reinterpret_cast<const unsigned short *>(&lo) |
                      (unsigned)*reinterpret_cast<const unsigned short *>(&hi) << 16;
        }
    }
    return make_uint4(word[0], word[1], word[2], word[3]);
}

// The forward block's recurrent weights and bias into shared memory once:
// w[r][k] = R[g*H + j][k] for row r = g*U + u, unit j = j0 + u (zeros past
// H; swizzled for the tensor cores), bias[r] its row's bias; DEPTH loads in
// flight a thread.  A thread moves 16 bytes of a row at a time: VEC element
// loads (R's rows, H + 1 elements with the bias, are not 16-byte aligned)
// and one 16-byte store, the row and column worked out once a piece (an
// element at a time, the index arithmetic bound the copy: 33 us for the
// clustered ReLU H = 1024 fp16 forward's 128 KB a block).
template <int G, int DEPTH, typename T>
__device__ void stage_forward_weights(const T *W, T *w, float *bias, int H, int U, int j0, bool tc) {
    constexpr int VEC = 16 / sizeof(T), PIECES = DEPTH / VEC > 0 ? DEPTH / VEC : 1;
    const int rows = G * U, per_row = H / VEC, count = rows * per_row;
    const FastDiv by_per_row = fast_divisor(per_row), by_U = fast_divisor(U);
    for (int p0 = threadIdx.x; p0 < count; p0 += RNN_THREADS * PIECES) {
        T value[PIECES][VEC];
        #pragma unroll
        for (int d = 0; d < PIECES; ++d) {
            const int p = p0 + d * RNN_THREADS, r = divide(by_per_row, p), k = (p - r * per_row) * VEC;
            const int g = divide(by_U, r), j = j0 + r - g * U;
            const T *src = W + (size_t)(g * H + j) * (H + 1) + k;
            const bool load = p < count && j < H;
            #pragma unroll
            for (int e = 0; e < VEC; ++e) value[d][e] = load ? src[e] : from_f32<T>(0.f);
        }
        #pragma unroll
        for (int d = 0; d < PIECES; ++d) {
            const int p = p0 + d * RNN_THREADS, r = divide(by_per_row, p), k = (p - r * per_row) * VEC;
            if (p < count)
                *reinterpret_cast<uint4 *>(w + (tc ? swizzled(r, k, H) : r * H + k)) = pack16<T, VEC>(value[d]);
        }
    }
    for (int r = threadIdx.x; r < rows; r += RNN_THREADS) {
        const int j = j0 + r % U;
        bias[r] = j < H ? to_f32(W[(size_t)((r / U) * H + j) * (H + 1) + H]) : 0.f;
    }
}

// One cell of step t forward: unit j of sample n (of the batch's a.N).  pre
// is the projected input, rec the recurrent products of the unit's G rows
// (bias included), c the LSTM's cell state (updated) and h_prev the GRU's
// previous h.  Writes Y, the reserve's position (gates, h, the extra value)
// and, at the last step, hy and cy; returns h.
template <int MODE, typename T>
__device__ __forceinline__ float cell_forward(const RnnArgs &a, int t, int j, int n,
                                              const float (&pre)[Mode<MODE>::G],
                                              const float (&rec)[Mode<MODE>::G], float &c, float h_prev) {
    constexpr int G = Mode<MODE>::G;
    const int H = a.H, GH = G * H;
    float h, gate[G], extra = 0.f;
    if (MODE == RELU || MODE == TANH) {
        const float x = pre[0] + rec[0];
        h = gate[0] = MODE == RELU ? fmaxf(x, 0.f) : tanhf(x);
    } else if (MODE == LSTM) {
        #pragma unroll
        for (int g = 0; g < 4; ++g) {
            const float x = pre[g] + rec[g];
            gate[g] = g == 2 ? tanhf(x) : sigmoid(x);
        }
        extra = c = gate[1] * c + gate[0] * gate[2];
        h = gate[3] * tanhf(extra);
    } else {
        gate[0] = sigmoid(pre[0] + rec[0]);
        gate[1] = sigmoid(pre[1] + rec[1]);
        extra = rec[2];
        gate[2] = tanhf(pre[2] + gate[0] * extra);
        h = (1.f - gate[1]) * gate[2] + gate[1] * h_prev;
    }
    // the step's first position as a 64-bit base, the cell's within it in 32
    // bits (a step's N x (2GH + 2H) reserve floats fit), so the cells of a
    // step share the base's arithmetic
    const int stride = 2 * GH + 2 * H;
    (static_cast<T *>(a.Y) + (size_t)t * a.N * H)[n * H + j] = from_f32<T>(h);
    if (a.reserve) {
        float *rs = a.reserve + (size_t)t * a.N * stride + (n * stride + j);
        #pragma unroll
        for (int g = 0; g < G; ++g) rs[g * H] = gate[g];
        rs[GH] = h;
        rs[GH + H] = extra;
    }
    if (t == a.T - 1) {
        if (a.hy) static_cast<T *>(a.hy)[(size_t)n * H + j] = from_f32<T>(h);
        if (a.cy) static_cast<T *>(a.cy)[(size_t)n * H + j] = from_f32<T>(c);
    }
    return h;
}

// KERNELS(MODE, NAME, T, TNAME) for every mode and storage type: the kernels
// a file defines, named ..._{relu,tanh,gru,lstm}_{f32,f16,bf16}.
#define RNN_INSTANTIATE(KERNELS)                                                                \
    KERNELS(RELU, relu, float, f32) KERNELS(RELU, relu, __half, f16)                             \
    KERNELS(RELU, relu, __nv_bfloat16, bf16) KERNELS(TANH, tanh, float, f32)                     \
    KERNELS(TANH, tanh, __half, f16) KERNELS(TANH, tanh, __nv_bfloat16, bf16)                    \
    KERNELS(GRU, gru, float, f32) KERNELS(GRU, gru, __half, f16)                                 \
    KERNELS(GRU, gru, __nv_bfloat16, bf16) KERNELS(LSTM, lstm, float, f32)                       \
    KERNELS(LSTM, lstm, __half, f16) KERNELS(LSTM, lstm, __nv_bfloat16, bf16)
