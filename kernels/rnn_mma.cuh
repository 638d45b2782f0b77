// rnn_mma.cuh: the persistent recurrent kernels' products on tensor cores
// (16-bit types, H % 64 == 0).
//
// What it computes: acc[r][n] = init + sum_k w[r][k] s[n][k] by mma.sync
// m16n8k16 with fp32 accumulation (s: the previous h forward, the next
// step's drec backward).  A warp computes 16-row x 8-batch tiles (batches
// past N and rows past the block's read the last ones and are dropped);
// where there are fewer tiles than warps, the k range of a tile is split
// among up to 8 warps (a power of two), whose sums are added in a fixed
// order (deterministic): to acc one part after another behind a block
// barrier (mma_chunk, the grid kernel's chunks), or each part into its own
// slice for the reader to add (mma_parts, the clustered forward).
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

// How a chunk's products split among the warps: 16-row x 8-batch tiles, and
// where there are fewer tiles than warps, the k range of each tile in
// `splits` parts (a power of two; each part a multiple of 64 columns).
// by_n_tiles is the FastDiv of the batch's tile count, (N + 7) / 8, made
// once a launch (or a step) by the caller: a step's tasks then pay no
// integer divisions.
struct MmaSplit {
    int n_tiles, tiles, log_splits;
    FastDiv by_n_tiles;
};

__device__ __forceinline__ MmaSplit mma_split(int rows, int kc, const FastDiv &by_n_tiles) {
    MmaSplit s;
    s.by_n_tiles = by_n_tiles;
    s.n_tiles = by_n_tiles.d;
    s.tiles = (rows + 15) / 16 * s.n_tiles;
    s.log_splits = 0;
    while ((s.tiles << (s.log_splits + 1)) <= RNN_WARPS && kc % (128 << s.log_splits) == 0) ++s.log_splits;
    return s;
}

// Task `task` of a split: its tile's first row and batch, and its part of the
// chunk's kc columns, [k0, k0 + span).
struct MmaTask {
    int m0, n0, part, k0, span;
};

__device__ __forceinline__ MmaTask mma_task(const MmaSplit &s, int task, int kc) {
    const int tile = task >> s.log_splits, mt = divide(s.by_n_tiles, tile);
    MmaTask k;
    k.m0 = mt * 16;
    k.n0 = (tile - mt * s.n_tiles) * 8;
    k.part = task & ((1 << s.log_splits) - 1);
    k.span = kc >> s.log_splits;
    k.k0 = k.part * k.span;
    return k;
}

// One task's products: the 16 x 8 tile at (m0, n0) over columns
// [c0 + k0, c0 + k0 + span) of w against the state staged as T in v (rows
// ldv elements apart, its column 0 being w's column c0).  Lane (g, q) =
// (lane / 4, 2 * (lane % 4)) gets the sums of rows m0 + g + 8h, batches
// n0 + q + e in sum[2h + e].
template <typename T>
__device__ __forceinline__ void mma_tile(const T *w, int L, int rows, int c0, const T *v, int ldv,
                                         int N, const MmaTask &task, float (&sum)[4]) {
    const int lane = threadIdx.x & 31;
    // a row past `rows` or a batch past N reads the last one; its sums are dropped by the caller.
    // ldmatrix x4 rows: A's lane l gives row m0 + l % 16 at 16-byte chunk l / 16 of a
    // k-step (a0..a3 of the fragment), B's row n0 + l % 8 at chunk l / 8 of two k-steps
    const int ar = min(task.m0 + (lane & 15), rows - 1), a_half = lane >> 4, a_swizzle = ar & 7;
    const unsigned a_row = sm80::smem_u32(w + (size_t)ar * L);
    const unsigned b_row = sm80::smem_u32(v + min(task.n0 + (lane & 7), N - 1) * ldv + 8 * (lane >> 3));
    // four accumulator sets: consecutive k-steps do not wait on each other
    float c[4][4] = {};
    // 64 columns a pass: the fragments of four k-steps are loaded before their
    // products, so one ldmatrix latency is paid a pass rather than one a
    // product (the asm statements keep their order)
    for (int k = task.k0; k < task.k0 + task.span; k += 64) {
        unsigned a[4][4], b[2][4];
        #pragma unroll
        for (int h = 0; h < 2; ++h) sm80::ldsm_x4(b_row + (k + 32 * h) * sizeof(T), b[h]);
        #pragma unroll
        for (int s = 0; s < 4; ++s) {
            const int chunk = ((c0 + k + 16 * s) >> 3) + a_half;
            sm80::ldsm_x4(a_row + ((chunk ^ a_swizzle) << 4), a[s]);
        }
        #pragma unroll
        for (int s = 0; s < 4; ++s)
            Mma<T>::run(c[s], a[s], b[s >> 1][2 * (s & 1)], b[s >> 1][2 * (s & 1) + 1]);
    }
    #pragma unroll
    for (int i = 0; i < 4; ++i) sum[i] = (c[0][i] + c[1][i]) + (c[2][i] + c[3][i]);
}

// One chunk's products: columns [c0, c0 + kc) of w against the state staged
// as T in v (rows ldv elements apart); the first chunk adds init[r] (per row)
// or init[r * N + n]; by_n_tiles as mma_split takes it.
template <typename T>
__device__ void mma_chunk(const T *w, int L, int rows, int c0, int kc, const T *v, int ldv, int N,
                          const FastDiv &by_n_tiles, float *acc, const float *init, bool init_per_row) {
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, q = (lane & 3) * 2;
    const MmaSplit split = mma_split(rows, kc, by_n_tiles);
    const int splits = 1 << split.log_splits;
    // with splits > 1 every warp has at most one task, and all reach the barriers below
    for (int t = warp; t < (splits > 1 ? RNN_WARPS : split.tiles); t += RNN_WARPS) {
        const bool active = t < split.tiles * splits;
        const MmaTask task = mma_task(split, active ? t : 0, kc);
        float sum[4];
        if (active) mma_tile(w, L, rows, c0, v, ldv, N, task, sum);
        for (int turn = 0; turn < splits; ++turn) {
            if (active && task.part == turn) {
                #pragma unroll
                for (int i = 0; i < 4; ++i) {
                    const int r = task.m0 + g + 8 * (i >> 1), n = task.n0 + q + (i & 1), at = r * N + n;
                    if (r < rows && n < N) {
                        if (c0 == 0 && turn == 0) acc[at] = sum[i] + init[init_per_row ? r : at];
                        else acc[at] += sum[i];
                    }
                }
            }
            if (splits > 1) __syncthreads();
        }
    }
}

// The products of a whole state (kc = L columns) without barriers: the task's
// part of the k range into its own slice, part[p * rows * N + r * N + n]
// (`split` as mma_split(rows, L, ...) made it); the reader adds the parts in
// order p = 0, 1, ... (deterministic).  The slices need rows * N * parts
// floats (gpuarray/rnn/persistent.py's _mma_parts says how many parts).
template <typename T>
__device__ __forceinline__ void mma_parts(const T *w, int L, int rows, const T *v, int ldv, int N,
                                          const MmaSplit &split, float *part) {
    const int lane = threadIdx.x & 31, g = lane >> 2, q = (lane & 3) * 2;
    for (int t = threadIdx.x >> 5; t < split.tiles << split.log_splits; t += RNN_WARPS) {
        const MmaTask task = mma_task(split, t, L);
        float sum[4];
        mma_tile(w, L, rows, 0, v, ldv, N, task, sum);
        float *out = part + task.part * rows * N;
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            const int r = task.m0 + g + 8 * (i >> 1), n = task.n0 + q + (i & 1);
            if (r < rows && n < N) out[r * N + n] = sum[i];
        }
    }
}
