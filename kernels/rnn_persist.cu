// rnn_persist.cu: persistent recurrent kernels -- the recurrent weights stay in
// shared memory for the whole sequence; one launch runs every timestep.
//
// What it computes: cuDNN's recurrences (gate order and equations as
// gpuarray/rnn/cell.py, which is the reference), forward over t = 0..T-1
// (rnn_fprop) and backward over t = T-1..0 (rnn_bprop: the gradients of the
// projected input, of the recurrent pre-activations and of the initial
// states).  The weight gradient is one GEMM over the reserve afterwards
// (gpuarray/rnn/functions.py), not here.
//
//   relu/tanh  h = act(x + rec)                      rec = R h_prev + b  (G*H rows)
//   LSTM       i f g o = sig, sig, tanh, sig (x + rec);  c = f c_prev + i g;  h = o tanh(c)
//   GRU        r z = sig(x + rec);  n = tanh(x_n + r rec_n);  h = (1 - z) n + z h_prev
//
// Work split: block b owns the hidden units j in [b*U, b*U + U).  Forward it
// keeps the G*U rows of R that produce its units' gates (row g*H + j); backward
// it keeps the G*H x U columns of R that its units' h_prev gradients need
// (dh_prev[j] = sum_i drec[i] R[i][j]), transposed so that both passes walk
// their rows contiguously.  Each step the block reads the whole previous
// state (h_{t-1} forward, drec_{t+1} backward: N x L, through L2) in
// chunks of KC columns, forms its dot products, updates its units' cells and
// publishes its slice; a grid-wide barrier then ends the step.  The products
// run on tensor cores (mma.sync m16n8k16, fp32 accumulation) where the host
// asks (RnnArgs.tc: 16-bit types, H % 64 == 0), the state they read then
// published in the storage type; the others are fp32 FMAs (a warp per 2 rows
// and batches of 4, lanes striding 4 consecutive columns, a shuffle
// reduction) on fp32 state.  Only the block's own units' cell state (c, the GRU's
// bypass gradient) is needed across steps: it lives in shared memory.
//
// Layouts (row-major, contiguous): X and dX (T, N, G*H); W (G*H, H + 1), the
// recurrent weights with the bias as last column; Y and dY (T, N, H); the
// states (N, H); reserve fp32 (T, N, 2*G*H + 2*H): per position the gates
// after their nonlinearity, h, the extra value (LSTM c, GRU rec_n) and drec;
// hbuf fp32 (2, N, H), the published h of alternating steps forward (in T,
// packed, on tensor cores), and backward on tensor cores the published drec
// of alternating steps in T (2, N, G*H; absent otherwise); barrier one
// unsigned word, the grid barrier's arrivals, zero before the launch.  All of
// X, W, Y, the states, dX and dY are in the storage type T (float, __half,
// __nv_bfloat16), X optionally fp32 (RnnArgs.x_f32: a projection not rounded
// to T); the math and the reserve are fp32.  H % 8 == 0 (so that
// 4-column vectors never straddle a row's end and reserve rows are 16-byte
// aligned).
//
// Parameters: RnnArgs below; null pointers for absent optional tensors
// (h0, c0, hy, cy, reserve forward; dh0, dc0, dhy, dcy backward -- backward
// needs the reserve).  The host (gpuarray/rnn/persistent.py) lays out the
// shared memory and passes the offsets.
//
// Launch shape: grid (ceil(H / U), 1, 1), block (256, 1, 1), the dynamic
// shared memory of the layout, launched cooperatively: every block must be
// resident at once for the grid barrier, which cuLaunchCooperativeKernel
// guarantees (or refuses the launch).
//
// Kernels: ga_rnn_{fprop,bprop}_{relu,tanh,gru,lstm}_{f32,f16,bf16}.
#include "convert.cuh"
#include "fastdiv.cuh"

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

// Grid-wide barrier over co-resident blocks: every block adds one to the
// counter (a release: the block's writes, gathered by __syncthreads, are
// visible before the count is) and waits until the count reaches its
// target, the barrier's number times the blocks (an acquire).  The counter
// only grows within a launch; the launcher zeroes it before each one.
__device__ __forceinline__ void grid_sync(unsigned *counter, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(counter) : "memory");
        unsigned count;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(count) : "l"(counter) : "memory");
        } while (count < target);
    }
    __syncthreads();
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

// Rows n < N of kc elements, src + n * ld + c0 (global memory, written by
// other blocks before the last grid barrier), into dst + n * ldd (shared), in
// 16-byte pieces: DEPTH loads in flight a thread, so the L2 latency is paid
// once a pass of 256 x DEPTH pieces.  (Bulk copies by the copy engine, a row
// each, measured slower on the H200: ReLU H = 1152 fp32 3.1 -> 4.1 us a step,
// LSTM H = 1024 N = 32 fp16 7.3 -> 8.4 forward.)
template <int DEPTH, typename E>
__device__ void stage(const E *src, size_t ld, int c0, int kc, E *dst, int ldd, int N) {
    constexpr int VEC = 16 / sizeof(E);
    for (int i0 = threadIdx.x * VEC; i0 < N * kc; i0 += RNN_THREADS * VEC * DEPTH) {
        uint4 staged[DEPTH];
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const int i = i0 + d * RNN_THREADS * VEC, n = i / kc, k = i % kc;
            // L2 only: L1 may hold this address from an earlier step
            if (i < N * kc) staged[d] = __ldcg(reinterpret_cast<const uint4 *>(src + n * ld + c0 + k));
        }
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            const int i = i0 + d * RNN_THREADS * VEC, n = i / kc, k = i % kc;
            if (i < N * kc) *reinterpret_cast<uint4 *>(dst + n * ldd + k) = staged[d];
        }
    }
    __syncthreads();
}

// acc = w . state for every row and batch: `src` is state row n at src + n * ld
// (fp32, in global memory, written by other blocks before the last barrier).
template <typename T>
__device__ void matvec(const T *w, int L, int rows, const float *src, size_t ld, float *v,
                       int KC, int N, float *acc, const float *init, bool init_per_row) {
    for (int c0 = 0; c0 < L; c0 += KC) {
        const int kc = min(KC, L - c0);
        if (c0) __syncthreads();  // the previous chunk's readers are done
        stage<8>(src, ld, c0, kc, v, KC, N);
        dot_chunk(w, L, rows, c0, kc, v, KC, N, acc, init, init_per_row);
    }
    __syncthreads();
}

// ---- products on tensor cores (16-bit types, H % 64 == 0) ----
//
// acc[r][n] = init + sum_k w[r][k] s[n][k] by mma.sync m16n8k16 with fp32
// accumulation (s: the previous h forward, the next step's drec backward).
// A warp computes 16-row x 8-batch tiles (batches past N and rows past the
// block's read the last ones and are dropped); where there are fewer tiles
// than warps, the k range of a chunk is split among up to 8 warps (a power
// of two) whose sums are added to acc one split after another, so every acc
// entry is summed in a fixed order (deterministic).
//
// The weights are stored with their 16-byte chunks XOR-swizzled by
// (row & 7) (rows are a multiple of 64 elements, so a chunk never leaves
// its row), and the staged state rows are KC + 8 elements apart: the 8 rows
// an A or B fragment reads fall in distinct banks.  The state is rounded to
// T, as a GEMM of T operands (cuDNN's per-step GEMM) rounds it, and
// published in T, which halves the L2 traffic of staging it every step --
// the backward's pace at large batches, where each block stages N x G*H
// gradients a step.  (An fp16 backward that kept fp32 gradients, scaling
// them per sample into fp16's range, measured 1.15x slower than the FMAs;
// benchmarks/NOTES.rst.)

template <typename T> struct Mma;
template <> struct Mma<__half> {
    static __device__ __forceinline__ void run(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
template <> struct Mma<__nv_bfloat16> {
    static __device__ __forceinline__ void run(float (&c)[4], const unsigned (&a)[4], unsigned b0,
                                               unsigned b1) {
        asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                     "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};"
                     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

// Offset in elements of w[r][k] in the swizzled layout (rows of L elements).
__device__ __forceinline__ int swizzled(int r, int k, int L) {
    return r * L + (((k >> 3) ^ (r & 7)) << 3) + (k & 7);
}

// Two consecutive 16-bit elements as one register.
template <typename T> __device__ __forceinline__ unsigned pair(const T *p) {
    return *reinterpret_cast<const unsigned *>(p);
}

// One chunk's products: columns [c0, c0 + kc) of w against the state staged
// as T in v (rows ldv elements apart); the first chunk adds init[r] (per row)
// or init[r * N + n].
template <typename T>
__device__ void mma_chunk(const T *w, int L, int rows, int c0, int kc, const T *v, int ldv, int N,
                          float *acc, const float *init, bool init_per_row) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = (lane & 3) * 2;
    const int n_tiles = (N + 7) / 8, tiles = (rows + 15) / 16 * n_tiles;
    int splits = 1;
    while (tiles * splits * 2 <= RNN_WARPS && kc % (64 * splits) == 0) splits *= 2;
    const int span = kc / splits;
    // with splits > 1 every warp has at most one task, and all reach the barriers below
    for (int task = warp; task < (splits > 1 ? RNN_WARPS : tiles); task += RNN_WARPS) {
        const int tile = task / splits, part = task % splits;
        const bool active = tile < tiles;
        const int m0 = tile / n_tiles * 16, n0 = tile % n_tiles * 8;
        // a row past `rows` or a batch past N reads the last one; its sums are dropped below
        const int ra = min(m0 + g, rows - 1), rb = min(m0 + g + 8, rows - 1);
        const T *vb = v + min(n0 + g, N - 1) * ldv;
        // two accumulator sets: consecutive k-steps do not wait on each other
        float c[2][4] = {};
        if (active) {
            for (int k = part * span; k < (part + 1) * span; k += 32) {
                #pragma unroll
                for (int s = 0; s < 2; ++s) {
                    const int kk = k + 16 * s, kw = c0 + kk + q;
                    const unsigned a[4] = {pair(w + swizzled(ra, kw, L)),
                                           pair(w + swizzled(rb, kw, L)),
                                           pair(w + swizzled(ra, kw + 8, L)),
                                           pair(w + swizzled(rb, kw + 8, L))};
                    Mma<T>::run(c[s], a, pair(vb + kk + q), pair(vb + kk + q + 8));
                }
            }
        }
        for (int turn = 0; turn < splits; ++turn) {
            if (active && part == turn) {
                #pragma unroll
                for (int h = 0; h < 2; ++h) {
                    #pragma unroll
                    for (int e = 0; e < 2; ++e) {
                        const int r = m0 + g + 8 * h, n = n0 + q + e, at = r * N + n;
                        if (r < rows && n < N) {
                            const float sum = c[0][2 * h + e] + c[1][2 * h + e];
                            if (c0 == 0 && turn == 0) acc[at] = sum + init[init_per_row ? r : at];
                            else acc[at] += sum;
                        }
                    }
                }
            }
            if (splits > 1) __syncthreads();
        }
    }
}

// matvec on the tensor cores: `src` holds the state in T (row n at
// src + n * ld); `v` is the staging area, used as T with rows KC + 8 apart
// (the host sizes it so: gpuarray/rnn/persistent.py).
template <typename T>
__device__ void matvec_mma(const T *w, int L, int rows, const T *src, size_t ld, float *v, int KC,
                           int N, float *acc, const float *init, bool init_per_row) {
    T *vt = reinterpret_cast<T *>(v);
    const int ldv = KC + 8;
    for (int c0 = 0; c0 < L; c0 += KC) {
        const int kc = min(KC, L - c0);
        if (c0) __syncthreads();  // the previous chunk's readers are done
        // 16 loads in flight: 5% faster a step than 8 at N = 32 (64 KB of
        // state); the FMAs keep 8 (at N = 4, 16 cost 0.3 us a step)
        stage<16>(src, ld, c0, kc, vt, ldv, N);
        mma_chunk(w, L, rows, c0, kc, vt, ldv, N, acc, init, init_per_row);
    }
    __syncthreads();
}

// Write h of (sample n, unit j) at hbuf[at] for the next step's products: in
// fp32, or in T where they run on the tensor cores (which read it as T).
template <typename T>
__device__ __forceinline__ void publish(float *hbuf, bool tc, size_t at, float h) {
    if (tc) reinterpret_cast<T *>(hbuf)[at] = from_f32<T>(h);
    else hbuf[at] = h;
}

// A step's products, acc = init + w . state, the state's row n at src + n * ld:
// in T on the tensor cores (tc), else in fp32 on the FMAs.
template <typename T>
__device__ __forceinline__ void products(bool tc, const T *w, int L, int rows, const float *src,
                                         size_t ld, float *v, int KC, int N, float *acc,
                                         const float *init, bool init_per_row) {
    if constexpr (sizeof(T) == 2) {
        if (tc) {
            matvec_mma(w, L, rows, reinterpret_cast<const T *>(src), ld, v, KC, N, acc, init,
                       init_per_row);
            return;
        }
    }
    matvec(w, L, rows, src, ld, v, KC, N, acc, init, init_per_row);
}

// The block's weights into shared memory once: element f comes from W[src]
// (a zero where src < 0) and goes to w[dst], map(f, src, dst) saying where.
// DEPTH loads are in flight per thread: this one-time copy is bound by DRAM
// latency, not bandwidth.
template <typename T, typename Map>
__device__ void stage_weights(const T *W, T *w, int count, Map map) {
    constexpr int DEPTH = 16;
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

// Step t's projected input of (unit, sample) number i of the block, G values
// (X in T, or in fp32 where x_f32).
template <int G, typename T>
__device__ __forceinline__ void load_x(const void *X, bool x_f32, int t, int i, int U, int N, int H,
                                       int j0, float (&x)[G]) {
    const int u = i % U, n = i / U, j = j0 + u;
    if (i >= U * N || j >= H) return;
    const size_t at = ((size_t)t * N + n) * G * H + j;
    #pragma unroll
    for (int g = 0; g < G; ++g) {
        const size_t e = at + g * H;
        x[g] = x_f32 ? static_cast<const float *>(X)[e] : to_f32(static_cast<const T *>(X)[e]);
    }
}

template <int MODE, typename T>
__device__ void rnn_fprop(const RnnArgs &a) {
    constexpr int G = Mode<MODE>::G;
    extern __shared__ __align__(16) unsigned char smem[];
    const int H = a.H, N = a.N, U = a.U, GH = G * H, rows = G * U, j0 = blockIdx.x * U;
    const size_t ldr = 2 * (size_t)GH + 2 * H;
    T *w = reinterpret_cast<T *>(smem);
    float *f = reinterpret_cast<float *>(smem + a.w_bytes);
    float *bias = f + a.off_bias, *v = f + a.off_v, *acc = f + a.off_acc;
    float *h_own = f + a.off_h, *c_own = f + a.off_c;
    const T *W = static_cast<const T *>(a.W);
    // w[r][k] = R[g*H + j][k] for row r = g*U + u, unit j = j0 + u (swizzled for the tensor cores)
    const bool tc = sizeof(T) == 2 && a.tc;
    const FastDiv by_H = fast_divisor(H), by_U = fast_divisor(U);
    stage_weights(W, w, rows * H, [&](int f, long long &src, int &dst) {
        const int r = divide(by_H, f), k = f - r * H, g = divide(by_U, r), j = j0 + r - g * U;
        src = j < H ? (long long)(g * H + j) * (H + 1) + k : -1;
        dst = tc ? swizzled(r, k, H) : f;
    });
    for (int r = threadIdx.x; r < rows; r += RNN_THREADS) {
        const int j = j0 + r % U;
        bias[r] = j < H ? to_f32(W[(size_t)((r / U) * H + j) * (H + 1) + H]) : 0.f;
    }
    // step 0 reads h_{-1} = h0 from hbuf[1], as step t reads hbuf[(t + 1) % 2]
    for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
        const int u = i % U, n = i / U, j = j0 + u;
        if (j >= H) continue;
        h_own[i] = load_or_zero<T>(a.h0, (size_t)n * H + j);
        c_own[i] = load_or_zero<T>(a.c0, (size_t)n * H + j);
        publish<T>(a.hbuf + (size_t)N * H, tc, (size_t)n * H + j, h_own[i]);
    }
    unsigned barriers = 0;
    grid_sync(a.barrier, ++barriers * gridDim.x);
    T *Y = static_cast<T *>(a.Y);
    for (int t = 0; t < a.T; ++t) {
        // the thread's first (unit, sample): its inputs load while the state is staged
        float first[G];
        load_x<G, T>(a.X, a.x_f32, t, threadIdx.x, U, N, H, j0, first);
        products(tc, w, H, rows, a.hbuf + (size_t)((t + 1) & 1) * N * H, H, v, a.KC, N, acc, bias,
                 true);
        float *h_out = a.hbuf + (size_t)(t & 1) * N * H;
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j >= H) continue;
            const size_t pos = (size_t)t * N + n;
            float pre[G], gate[G];
            if (i == threadIdx.x) {
                #pragma unroll
                for (int g = 0; g < G; ++g) pre[g] = first[g];
            } else {
                load_x<G, T>(a.X, a.x_f32, t, i, U, N, H, j0, pre);
            }
            float h, extra = 0.f;
            if (MODE == RELU || MODE == TANH) {
                h = gate[0] = MODE == RELU ? fmaxf(pre[0] + acc[u * N + n], 0.f)
                                           : tanhf(pre[0] + acc[u * N + n]);
            } else if (MODE == LSTM) {
                #pragma unroll
                for (int g = 0; g < 4; ++g) {
                    const float x = pre[g] + acc[(g * U + u) * N + n];
                    gate[g] = g == 2 ? tanhf(x) : sigmoid(x);
                }
                extra = c_own[i] = gate[1] * c_own[i] + gate[0] * gate[2];
                h = gate[3] * tanhf(extra);
            } else {
                gate[0] = sigmoid(pre[0] + acc[u * N + n]);
                gate[1] = sigmoid(pre[1] + acc[(U + u) * N + n]);
                extra = acc[(2 * U + u) * N + n];
                gate[2] = tanhf(pre[2] + gate[0] * extra);
                h = (1.f - gate[1]) * gate[2] + gate[1] * h_own[i];
            }
            h_own[i] = h;
            publish<T>(h_out, tc, (size_t)n * H + j, h);
            Y[pos * H + j] = from_f32<T>(h);
            if (a.reserve) {
                float *rs = a.reserve + pos * ldr;
                #pragma unroll
                for (int g = 0; g < G; ++g) rs[g * H + j] = gate[g];
                rs[GH + j] = h;
                rs[GH + H + j] = extra;
            }
            if (t == a.T - 1) {
                if (a.hy) static_cast<T *>(a.hy)[(size_t)n * H + j] = from_f32<T>(h);
                if (a.cy) static_cast<T *>(a.cy)[(size_t)n * H + j] = from_f32<T>(c_own[i]);
            }
        }
        if (t + 1 < a.T) grid_sync(a.barrier, ++barriers * gridDim.x);
    }
}

// What step t's backward reads of (unit, sample) number i besides dh: dY, the
// gates, h and the extra value (LSTM c, GRU rec_n) of the reserve, and the
// previous step's c (LSTM) or h (GRU) -- c0 or h0 at t = 0.
template <int G> struct BwdIn { float dy, gate[G], h, extra, prev; };

template <int MODE, typename T>
__device__ __forceinline__ void load_bwd(const RnnArgs &a, int t, int i, BwdIn<Mode<MODE>::G> &in) {
    constexpr int G = Mode<MODE>::G;
    const int H = a.H, N = a.N, U = a.U, GH = G * H, u = i % U, n = i / U, j = blockIdx.x * U + u;
    if (i >= U * N || j >= H) return;
    const size_t ldr = 2 * (size_t)GH + 2 * H, pos = (size_t)t * N + n;
    const float *rs = a.reserve + pos * ldr;
    in.dy = to_f32(static_cast<const T *>(a.dY)[pos * H + j]);
    #pragma unroll
    for (int g = 0; g < G; ++g) in.gate[g] = rs[g * H + j];
    in.h = rs[GH + j];
    in.extra = rs[GH + H + j];
    const float *previous = t ? rs - N * ldr : nullptr;
    if (MODE == LSTM)
        in.prev = t ? previous[GH + H + j] : load_or_zero<T>(a.c0, (size_t)n * H + j);
    if (MODE == GRU)
        in.prev = t ? previous[GH + j] : load_or_zero<T>(a.h0, (size_t)n * H + j);
}

template <int MODE, typename T>
__device__ void rnn_bprop(const RnnArgs &a) {
    constexpr int G = Mode<MODE>::G;
    extern __shared__ __align__(16) unsigned char smem[];
    const int H = a.H, N = a.N, U = a.U, GH = G * H, j0 = blockIdx.x * U;
    const size_t ldr = 2 * (size_t)GH + 2 * H;
    T *w = reinterpret_cast<T *>(smem);
    float *f = reinterpret_cast<float *>(smem + a.w_bytes);
    float *v = f + a.off_v, *acc = f + a.off_acc, *dc = f + a.off_c, *bypass = f + a.off_byp;
    const T *W = static_cast<const T *>(a.W);
    const bool tc = sizeof(T) == 2 && a.tc;
    // w[u][i] = R[i][j0 + u]: the columns of the block's units, read a row's U at a time
    // (swizzled for the tensor cores)
    const FastDiv by_U = fast_divisor(U);
    stage_weights(W, w, U * GH, [&](int f, long long &src, int &dst) {
        const int row = divide(by_U, f), u = f - row * U, j = j0 + u;
        src = j < H ? (long long)row * (H + 1) + j : -1;
        dst = tc ? swizzled(u, row, GH) : u * GH + row;
    });
    // step s's drec: fp32 in the reserve, or published in T in hbuf's slot s % 2
    auto drec_of = [&](int s) {
        return tc ? a.hbuf + (size_t)(s & 1) * N * GH : a.reserve + (size_t)s * N * ldr + GH + 2 * H;
    };
    const size_t ld_drec = tc ? GH : ldr;
    // bypass and acc are indexed [u][n] (the dot products' layout), dc [n][u]
    for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
        const int u = i % U, n = i / U, j = j0 + u;
        bypass[u * N + n] = 0.f;
        dc[i] = j < H ? load_or_zero<T>(a.dcy, (size_t)n * H + j) : 0.f;
    }
    __syncthreads();
    T *dX = static_cast<T *>(a.dX);
    for (int t = a.T - 1; t >= 0; --t) {
        // the thread's first (unit, sample): its inputs load while the state is staged
        BwdIn<G> first;
        load_bwd<MODE, T>(a, t, threadIdx.x, first);
        if (t + 1 < a.T) products(tc, w, GH, U, drec_of(t + 1), ld_drec, v, a.KC, N, acc, bypass, false);
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j >= H) continue;
            const size_t pos = (size_t)t * N + n;
            BwdIn<G> in = first;
            if (i != threadIdx.x) load_bwd<MODE, T>(a, t, i, in);
            const float dh = in.dy + (t + 1 < a.T ? acc[u * N + n]
                                                  : load_or_zero<T>(a.dhy, (size_t)n * H + j));
            float d[G], dx_last;
            if (MODE == RELU || MODE == TANH) {
                d[0] = MODE == RELU ? (in.h > 0.f ? dh : 0.f) : dh * (1.f - in.h * in.h);
                dx_last = d[0];
            } else if (MODE == LSTM) {
                const float gi = in.gate[0], gf = in.gate[1], gg = in.gate[2], go = in.gate[3];
                const float tc = tanhf(in.extra);
                const float dcv = dc[i] + dh * go * (1.f - tc * tc);
                d[0] = dcv * gg * gi * (1.f - gi);
                d[1] = dcv * in.prev * gf * (1.f - gf);
                d[2] = dcv * gi * (1.f - gg * gg);
                d[3] = dh * tc * go * (1.f - go);
                dc[i] = dcv * gf;
                dx_last = d[3];
            } else {
                const float r = in.gate[0], z = in.gate[1], nn = in.gate[2];
                const float dn = dh * (1.f - z) * (1.f - nn * nn);
                d[0] = dn * in.extra * r * (1.f - r);
                d[1] = dh * (in.prev - nn) * z * (1.f - z);
                d[2] = dn * r;
                dx_last = dn;
                bypass[u * N + n] = dh * z;
            }
            float *drec = a.reserve + pos * ldr + GH + 2 * H;
            #pragma unroll
            for (int g = 0; g < G; ++g) {
                drec[g * H + j] = d[g];
                if (tc) publish<T>(drec_of(t), true, (size_t)n * GH + g * H + j, d[g]);
                dX[pos * GH + g * H + j] = from_f32<T>(g == G - 1 ? dx_last : d[g]);
            }
        }
        grid_sync(a.barrier, (a.T - t) * gridDim.x);
    }
    if (a.dh0) {
        products(tc, w, GH, U, drec_of(0), ld_drec, v, a.KC, N, acc, bypass, false);
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j < H) static_cast<T *>(a.dh0)[(size_t)n * H + j] = from_f32<T>(acc[u * N + n]);
        }
    }
    if (a.dc0) {
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j < H) static_cast<T *>(a.dc0)[(size_t)n * H + j] = from_f32<T>(dc[i]);
        }
    }
}

#define RNN_KERNELS(MODE, NAME, T, TNAME)                                                       \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_fprop_##NAME##_##TNAME(const RnnArgs a) { rnn_fprop<MODE, T>(a); }               \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_bprop_##NAME##_##TNAME(const RnnArgs a) { rnn_bprop<MODE, T>(a); }

#define RNN_TYPES(MODE, NAME)                                                                   \
    RNN_KERNELS(MODE, NAME, float, f32)                                                         \
    RNN_KERNELS(MODE, NAME, __half, f16)                                                        \
    RNN_KERNELS(MODE, NAME, __nv_bfloat16, bf16)

RNN_TYPES(RELU, relu)
RNN_TYPES(TANH, tanh)
RNN_TYPES(GRU, gru)
RNN_TYPES(LSTM, lstm)
