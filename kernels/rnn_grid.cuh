// rnn_grid.cuh: the grid recurrent kernel's step synchronisation and state
// staging (rnn_persist.cu): the grid-wide barrier that ends a step, and the
// copies of the previous step's state, published by every block in global
// memory, into a block's shared memory.
//
// In: the barrier's counter (one unsigned word in global memory, zero before
// the launch) and its target; the state's rows (src + n * ld + c0, kc
// elements each, 16-byte aligned).  Out: every block past the barrier sees
// the others' writes made before it; the rows at dst + n * ldd in shared
// memory, complete once the copy returns (a block barrier included).
//
// No kernel is defined here; the launch shape is rnn_persist.cu's (256
// threads, cooperative).

#pragma once
#include "rnn_common.cuh"

// Grid-wide barrier over co-resident blocks: every block adds one to the
// counter and reads back the count (acq_rel: the block's writes, gathered by
// __syncthreads, are visible before its count is, and the others' before it
// goes on), then waits until the count reaches its target, the barrier's
// number times the blocks.  The last to arrive does not read the counter
// again (H200, 132 blocks: 0.855 us a barrier, against 0.925 with a
// red.release and an acquiring spin).  The counter only grows within a
// launch; the launcher zeroes it before each one.
__device__ __forceinline__ void grid_sync(unsigned *counter, unsigned target) {
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned count;
        asm volatile("atom.add.acq_rel.gpu.global.u32 %0, [%1], 1;" : "=r"(count) : "l"(counter) : "memory");
        ++count;  // the atom returns the count before this block's arrival
        while (count < target)
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(count) : "l"(counter) : "memory");
    }
    __syncthreads();
}

// Rows n < N of kc elements, src + n * ld + c0 (global memory, written by
// other blocks before the last grid barrier), into dst + n * ldd (shared), in
// 16-byte pieces: DEPTH loads in flight a thread, so the L2 latency is paid
// once a pass of 256 x DEPTH pieces.  A thread's pieces lie 256 pieces
// apart; their (row, column) is carried from one to the next (two
// divisions a call: a division a piece, twice, made this copy ~560
// instructions a warp a step of the LSTM H = 1024 N = 32 forward).  (Bulk
// copies by the copy engine, a row each, measured slower on the H200: ReLU
// H = 1152 fp32 3.1 -> 4.1 us a step, LSTM H = 1024 N = 32 fp16 7.3 -> 8.4
// forward.)
template <int DEPTH, typename E>
__device__ void stage(const E *src, size_t ld, int c0, int kc, E *dst, int ldd, int N) {
    constexpr int VEC = 16 / sizeof(E), STEP = RNN_THREADS * VEC;
    const int dn = STEP / kc, dk = STEP - dn * kc, first = threadIdx.x * VEC;
    auto next = [&](int &n, int &k) {
        k += dk;
        n += dn;
        if (k >= kc) {
            k -= kc;
            ++n;
        }
    };
    int n = first / kc, k = first - n * kc;
    for (int i0 = first; i0 < N * kc; i0 += STEP * DEPTH) {
        const int n0 = n, k0 = k;
        uint4 staged[DEPTH];
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            // L2 only: L1 may hold this address from an earlier step
            if (n < N) staged[d] = __ldcg(reinterpret_cast<const uint4 *>(src + n * ld + c0 + k));
            next(n, k);
        }
        n = n0;
        k = k0;
        #pragma unroll
        for (int d = 0; d < DEPTH; ++d) {
            if (n < N) *reinterpret_cast<uint4 *>(dst + n * ldd + k) = staged[d];
            next(n, k);
        }
    }
    __syncthreads();
}

// stage by cp.async (L2 only, as __ldcg), every piece in flight at once and
// no registers held: the grid backward's FMA step, N = 4, 0.15-0.4 us
// faster than by stage<8> (H200: LSTM H = 1024 4.81 -> 4.43 us, GRU 4.23
// -> 3.91, ReLU H = 2048 4.12 -> 3.93).  (The forwards measured slower by
// it: ReLU H = 1152 fp32 3.05 -> 3.97 us, LSTM H = 1024 N = 32 fp16 5.5 ->
// 6.8; so did the backward on tensor cores.)
template <typename E>
__device__ void stage_async(const E *src, size_t ld, int c0, int kc, E *dst, int ldd, int N) {
    constexpr int VEC = 16 / sizeof(E), STEP = RNN_THREADS * VEC;
    const int dn = STEP / kc, dk = STEP - dn * kc, first = threadIdx.x * VEC;
    int n = first / kc, k = first - n * kc;
    for (int i = first; i < N * kc; i += STEP) {
        sm80::cp_async16(sm80::smem_u32(dst + n * ldd + k), src + n * ld + c0 + k, 16);
        k += dk;
        n += dn;
        if (k >= kc) {
            k -= kc;
            ++n;
        }
    }
    sm80::cp_async_commit();
    sm80::cp_async_wait<0>();
    __syncthreads();
}
