// rnn_mma.cuh: the persistent recurrent kernels' products on tensor cores
// (16-bit types, H % 64 == 0).
//
// What it computes: acc[r][n] = init + sum_k w[r][k] s[n][k] by mma.sync
// m16n8k16 with fp32 accumulation (s: the previous h forward, the next
// step's drec backward).  A warp computes tiles of 16 rows x 8, 16 or 32
// batches (MmaShape; batches past N and rows past the block's read the
// last ones and are dropped); where there are fewer tiles than warps, the
// k range of a tile is split among up to 8 warps (a power of two), each
// part written to its own slice (mma_parts) and the parts added in a fixed
// order (deterministic) by their reader (Sums) -- or, in the grid
// backward, on 16 x 8 tiles added to acc in turns (mma_chunk_turns).
//
// Layouts: the weights with their 16-byte chunks XOR-swizzled by (row & 7)
// (rnn_common.cuh's swizzled; rows are a multiple of 64 elements, so a
// chunk never leaves its row), and the staged state rows KC + 8 elements
// apart: the 8 rows of 16 bytes each ldmatrix phase reads fall in distinct
// banks.  (Fragments gathered by 32-bit loads took ~40 instructions an mma:
// the clustered ReLU H = 1024 fp16 forward's products 4300 cycles a step
// against 3600 by ldmatrix.)  The state is rounded to T, as a GEMM of T
// operands (cuDNN's per-step GEMM) rounds it, and published in T, which
// halves the L2 traffic of staging it every step -- the backward's pace at
// large batches, where each block stages N x G*H gradients a step.  (An
// fp16 backward that kept fp32 gradients, scaling them per sample into
// fp16's range, measured 1.15x slower than the FMAs; benchmarks/NOTES.rst.)
//
// No kernel is defined here; the launch shapes are the including files'
// (256 threads, RNN_WARPS warps).

#pragma once
#include "rnn_common.cuh"

// The tasks' tiles, fixed for a launch: 16 rows x 8 * nb batches (nb of
// the batch's 8-wide tiles, 1, 2 or 4, a task), so that a warp reads its
// weights' fragments once for nb tiles of the state -- on 16 x 8 tiles the
// grid kernel's LSTM H = 1024 N = 32 step read its weights four times over,
// 384 KB of shared memory a block, and its products waited on ldmatrix.
// nb is halved while the wide tiles, their k range split as far as a
// whole state of L columns allows, would leave warps idle; max_nb caps it
// (the grid backward keeps 16 x 8 tiles: mma_chunk_turns).  Made once a
// launch (a FastDiv inside).
struct MmaShape {
    int nb, groups, tiles;  // batch tiles a task, tasks a 16-row tile, tiles
    int log_max;            // log2 of the most parts the tiles leave warps for
    FastDiv by_groups;
};

// log2 of the parts a k range of kc columns (a multiple of 64) splits into:
// at most 8, each of one or more 64-column passes.
__device__ __forceinline__ int mma_log_passes(int kc) { return min(3, 31 - __clz(max(kc >> 6, 1))); }

__device__ __forceinline__ MmaShape mma_shape(int rows, int L, int N, int max_nb = 4) {
    const int m_tiles = (rows + 15) / 16, n_tiles = (N + 7) / 8;
    MmaShape s;
    s.nb = min(max_nb, n_tiles >= 3 ? 4 : n_tiles);
    while (s.nb > 1 && (m_tiles * ((n_tiles + s.nb - 1) / s.nb) << mma_log_passes(L)) < RNN_WARPS)
        s.nb >>= 1;
    s.groups = (n_tiles + s.nb - 1) / s.nb;
    s.tiles = m_tiles * s.groups;
    s.log_max = 0;
    while ((s.tiles << (s.log_max + 1)) <= RNN_WARPS) ++s.log_max;
    s.by_groups = fast_divisor(s.groups);
    return s;
}

// A chunk of kc columns: its tiles' k range in 2**log_splits parts (where
// there are fewer tiles than warps; each part whole 64-column passes, the
// last one shorter where the passes do not divide evenly -- a chunk of 2432
// columns, 19 x 128, in 2 parts would have left 6 of 8 warps idle).
// gpuarray/rnn/persistent.py's _mma_parts mirrors mma_shape and this.
__device__ __forceinline__ int mma_log_splits(const MmaShape &s, int kc) {
    return min(s.log_max, mma_log_passes(kc));
}

// Where a step's products are, for the cells to read: base[r] (per_row) or
// base[r * N + n], plus `parts` slices of `part` (count floats apart), added
// in order (deterministic).
struct Sums {
    const float *base, *part;
    int N, count, parts;
    bool per_row;
    __device__ __forceinline__ float at(int r, int n) const {
        const int i = r * N + n;
        float s = base[per_row ? r : i];
        #pragma unroll
        for (int p = 0; p < RNN_WARPS; ++p)
            if (p < parts) s += part[p * count + i];
        return s;
    }
};

// Task `task` of a chunk: its tile's first row and batch, and its part of the
// chunk's kc columns, [k0, k0 + span).
struct MmaTask {
    int m0, n0, part, k0, span;
};

__device__ __forceinline__ MmaTask mma_task(const MmaShape &s, int log_splits, int task, int kc) {
    const int tile = task >> log_splits, mt = divide(s.by_groups, tile);
    MmaTask k;
    k.m0 = mt * 16;
    k.n0 = (tile - mt * s.groups) * 8 * s.nb;
    k.part = task & ((1 << log_splits) - 1);
    const int passes = ((kc >> 6) + (1 << log_splits) - 1) >> log_splits;
    k.k0 = k.part * passes * 64;
    k.span = max(0, min(passes * 64, kc - k.k0));
    return k;
}

// One task's products: the 16 x 8NB tile at (m0, n0) over columns
// [c0 + k0, c0 + k0 + span) of w against the state staged as T in v (rows
// ldv elements apart, its column 0 being w's column c0).  Lane (g, q) =
// (lane / 4, 2 * (lane % 4)) gets the sums of rows m0 + g + 8h, batches
// n0 + 8b + q + e in sum[b][2h + e].
template <int NB, typename T>
__device__ __forceinline__ void mma_tile(const T *w, int L, int rows, int c0, const T *v, int ldv,
                                         int N, const MmaTask &task, float (&sum)[NB][4]) {
    // 16 accumulators a lane: with fewer batch tiles, as many sets a tile, so
    // that consecutive products never wait on each other
    constexpr int SETS = 4 / NB;
    const int lane = threadIdx.x & 31;
    // a row past `rows` or a batch past N reads the last one; its sums are dropped by the caller.
    // ldmatrix x4 rows: A's lane l gives row m0 + l % 16 at 16-byte chunk l / 16 of a
    // k-step (a0..a3 of the fragment), B's row n0 + l % 8 at chunk l / 8 of two k-steps
    const int ar = min(task.m0 + (lane & 15), rows - 1), a_half = lane >> 4, a_swizzle = ar & 7;
    const unsigned a_row = sm80::smem_u32(w + (size_t)ar * L);
    unsigned b_row[NB];
    #pragma unroll
    for (int b = 0; b < NB; ++b)
        b_row[b] = sm80::smem_u32(v + min(task.n0 + 8 * b + (lane & 7), N - 1) * ldv + 8 * (lane >> 3));
    float c[SETS][NB][4] = {};
    // 64 columns a pass: the fragments of four k-steps are loaded before their
    // products, so one ldmatrix latency is paid a pass rather than one a
    // product (the ldmatrix asm statements, volatile, keep their order)
    for (int k = task.k0; k < task.k0 + task.span; k += 64) {
        unsigned a[4][4], bf[NB][2][4];
        #pragma unroll
        for (int b = 0; b < NB; ++b) {
            #pragma unroll
            for (int h = 0; h < 2; ++h) sm80::ldsm_x4(b_row[b] + (k + 32 * h) * sizeof(T), bf[b][h]);
        }
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int chunk = ((c0 + k + 16 * s) >> 3) + a_half;
            sm80::ldsm_x4(a_row + ((chunk ^ a_swizzle) << 4), a[s]);
        }
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            #pragma unroll
            for (int b = 0; b < NB; ++b)
                sm80::mma<MmaInput<T>::value>(c[s % SETS][b], a[s], bf[b][s >> 1][2 * (s & 1)],
                                                bf[b][s >> 1][2 * (s & 1) + 1]);
        }
    }
    #pragma unroll
    for (int b = 0; b < NB; ++b) {
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            if constexpr (SETS == 4) sum[b][i] = (c[0][b][i] + c[1][b][i]) + (c[2][b][i] + c[3][b][i]);
            else if constexpr (SETS == 2) sum[b][i] = c[0][b][i] + c[1][b][i];
            else sum[b][i] = c[0][b][i];
        }
    }
}

// Calls f(NbConst<nb>()) with the shape's nb as a compile-time constant.
template <int V> struct NbConst { static constexpr int value = V; };
template <typename F>
__device__ __forceinline__ void with_nb(const MmaShape &s, F &&f) {
    if (s.nb == 4) f(NbConst<4>());
    else if (s.nb == 2) f(NbConst<2>());
    else f(NbConst<1>());
}

// The products of a chunk, columns [c0, c0 + kc) of w against the state
// staged as T in v (rows ldv elements apart, its column 0 being w's column
// c0), without barriers: each task's part of the k range into its own slice,
// part[p * rows * N + r * N + n] (log_splits as mma_log_splits(shape, kc)
// made it); the reader adds the parts in order p = 0, 1, ...
// (deterministic).  The slices need rows * N * parts floats
// (gpuarray/rnn/persistent.py's _mma_parts says how many parts).
template <typename T>
__device__ __forceinline__ void mma_parts(const T *w, int L, int rows, int c0, int kc, const T *v,
                                          int ldv, int N, const MmaShape &shape, int log_splits,
                                          float *part) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = (lane & 3) * 2;
    with_nb(shape, [&](auto nb) {
        constexpr int NB = decltype(nb)::value;
        for (int t = threadIdx.x >> 5; t < shape.tiles << log_splits; t += RNN_WARPS) {
            const MmaTask task = mma_task(shape, log_splits, t, kc);
            float sum[NB][4];
            mma_tile<NB, T>(w, L, rows, c0, v, ldv, N, task, sum);
            float *out = part + task.part * rows * N;
            #pragma unroll
            for (int b = 0; b < NB; ++b) {
                #pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = task.m0 + g + 8 * (i >> 1), n = task.n0 + 8 * b + q + (i & 1);
                    if (r < rows && n < N) out[r * N + n] = sum[b][i];
                }
            }
        }
    });
}

// One chunk's products added to acc part after part, a block barrier a turn
// (the first chunk, c0 = 0, adds init[r] per row or init[r * N + n]), on
// 16 x 8 tiles (shape as mma_shape(rows, L, N, 1) made it): the grid
// backward's.  (Its step on wide tiles with the parts in slices measured
// 12.5 -> 14.1-15.8 us at LSTM H = 1024 N = 32, cause not found.)
template <typename T>
__device__ void mma_chunk_turns(const T *w, int L, int rows, int c0, int kc, const T *v, int ldv,
                                int N, const MmaShape &shape, float *acc, const float *init,
                                bool init_per_row) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = (lane & 3) * 2;
    const int log_splits = mma_log_splits(shape, kc), splits = 1 << log_splits;
    // with splits > 1 every warp has at most one task, and all reach the barriers below
    for (int t = warp; t < (splits > 1 ? RNN_WARPS : shape.tiles); t += RNN_WARPS) {
        const bool active = t < shape.tiles * splits;
        const MmaTask task = mma_task(shape, log_splits, active ? t : 0, kc);
        float sum[1][4];
        if (active) mma_tile<1, T>(w, L, rows, c0, v, ldv, N, task, sum);
        for (int turn = 0; turn < splits; ++turn) {
            if (active && task.part == turn) {
                #pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = task.m0 + g + 8 * (i >> 1), n = task.n0 + q + (i & 1), at = r * N + n;
                    if (r < rows && n < N) {
                        if (c0 == 0 && turn == 0) acc[at] = sum[0][i] + init[init_per_row ? r : at];
                        else acc[at] += sum[0][i];
                    }
                }
            }
            if (splits > 1) __syncthreads();
        }
    }
}
