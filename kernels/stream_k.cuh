// stream_k.cuh: which work a persistent sm90 GEMM block does, in order, and
// the stream-K fix-up (gemm_sm90.cuh's kernel body; GemmArgs in
// gemm_common.cuh).
//
// Two schedules.  Data-parallel (and split-K, and the cluster K-split): a
// block walks the tile-split indices blockIdx.x / CS, + gridDim.x / CS, ...
// (gemm_tile), each with its K range.  Stream-K (flags & SCHED_STREAM_K,
// splits == 1, no clusters): with SCHED_WHOLE_FIRST too, and at least two
// waves of tiles (T >= 2 G for the grid's G blocks), all but the last one
// or two waves first run data-parallel, D = (T / G - 1) G whole tiles,
// block b taking tiles b, b + G, ...: blocks side by side work on
// neighbouring tiles, which share their operands in L2 (a convolution's
// stream-K K-tiles ran 1.2x slower without it, its blocks on tiles far
// apart; D = 0 otherwise).  The grid's blocks then share the remaining
// I = (T - D) x KT K-tile iterations evenly, block b taking [b I / G,
// (b + 1) I / G) of them, tile by tile (G <= I, so no range is empty).
// A tile cut between blocks is finished by the block holding its first
// K-tile, for which it is the tail of its range; for each later block the
// tile is the head of its range, and it leaves its partial sums in
// `partial` (slot b: BM / 64 parts of 64 x BN fp32, each thread's 16-byte
// pieces side by side) and raises their flags (the G x BM / 64 ints after
// the slots, zeroed before the launch).  The finishing block adds them in
// block order -- the bits depend on G, not on timing -- and runs the
// normal epilogue.
// The wait cannot deadlock: a block only waits on blocks of higher index,
// which raise their flag after their whole tiles and first segment, and
// the last block never waits.
//
// What it is for: the filter gradient's products have few output tiles
// and a long K.  Split-K cuts K into equal parts, so tiles x splits rarely
// fills the last wave, and it writes `splits` partial sums of the whole
// output to DRAM for a second kernel; stream-K balances the iterations
// exactly and moves at most one partial tile per block, through L2.  And
// a convolution's fprop or data gradient whose tiles leave the last wave
// mostly empty (gpuarray/conv/implicit_plan.py, choose_fprop).
//
// Units.  With multicast pairs (MC = 2: gemm_sm90.cuh) a cluster of MC
// blocks takes MC vertically adjacent tiles as one MC*BM-row tile: both
// schedules count clusters, not blocks (ga_unit), and a stream-K slot
// holds the MC*BM/64 parts of the cluster's tiles.
#pragma once
#include "sm90_ptx.cuh"

#define SCHED_STREAM_K 64      // GemmArgs::flags: the stream-K schedule
#define SCHED_WHOLE_FIRST 128  // ... its whole waves first (fprop, bprop: not the filter gradient's)

// A block's place in its schedule.  Data-parallel: the next tile-split
// index, their count and the stride; stream-K: the next and the end
// iteration of all T x KT (32-bit: the host keeps them below 2**31; the
// data-parallel tiles' come first) and K-tiles per tile.  (Three fields
// for both: the producer thread has 40 registers.)
struct GaWork {
    int next, end, step;
};

// The schedule's unit: this block's index, and their count -- blocks, or
// clusters of MC blocks sharing operands (multicast pairs).
template <int MC> GA_D unsigned ga_unit() { return blockIdx.x / MC; }
template <int MC> GA_D unsigned ga_units() { return gridDim.x / MC; }

// Stream-K's data-parallel tiles D, out of `total`.  (The filter gradient,
// with few tiles of long K, measured slower with them: Overfeat's conv5,
// 288 tiles, 568 -> 651 us on an H100.)
template <int MC> GA_D int ga_stream_k_whole(const GemmArgs &p, int total) {
    const int units = (int)ga_units<MC>();
    if (!(p.flags & SCHED_WHOLE_FIRST) || total < 2 * units) return 0;
    return (total / units - 1) * units;
}

// Unit b's first stream-K iteration (b = ga_units: one past the last).
template <int MC> GA_D int ga_stream_k_begin(const GemmArgs &p, int total, int ktiles, unsigned b) {
    const int whole = ga_stream_k_whole<MC>(p, total);
    return whole * ktiles + (int)(b * (long long)(total - whole) * ktiles / ga_units<MC>());
}

// (BM: the unit's tile height, MC * the block's; cs: the cluster K-split's blocks)
template <int MC>
GA_D GaWork ga_work_start(const GemmArgs &p, int BM, int BN, int BK, unsigned cs) {
    const int total = gemm_tiles_total(p, BM, BN);
    const unsigned unit = ga_unit<MC>();
    GaWork w;
    if (p.flags & SCHED_STREAM_K) {
        w.step = gemm_ktiles(p, BK);
        w.next = ga_stream_k_whole<MC>(p, total) ? unit * w.step : ga_stream_k_begin<MC>(p, total, w.step, unit);
        w.end = ga_stream_k_begin<MC>(p, total, w.step, unit + 1);
    } else {
        w.next = blockIdx.x / (cs * MC);
        w.end = total;
        w.step = gridDim.x / (cs * MC);
    }
    return w;
}

// The block's next unit of work: tile g and its K-tiles [kt0, kt1).  False
// when the block is done.  Producer and consumers walk the same sequence.
template <int BM, int BN, int BK, int MC>
GA_D bool ga_next_work(const GemmArgs &p, GaWork &w, unsigned rank, unsigned cs, GemmTile &g, int &kt0,
                       int &kt1) {
    if (w.next >= w.end) return false;
    if (p.flags & SCHED_STREAM_K) {
        const int tile = w.next / w.step, total = gemm_tiles_total(p, BM, BN);
        g = gemm_tile(p, tile, BM, BN);
        kt0 = w.next - tile * w.step;
        const int whole = ga_stream_k_whole<MC>(p, total);
        if (tile < whole) {  // a whole tile, then the next wave's or the shared part
            kt1 = w.step;
            w.next += ga_units<MC>() * w.step;
            if (w.next >= whole * w.step) w.next = ga_stream_k_begin<MC>(p, total, w.step, ga_unit<MC>());
            return true;
        }
        kt1 = min(w.step, kt0 + (w.end - w.next));
        w.next += kt1 - kt0;
        return true;
    }
    g = gemm_tile(p, w.next, BM, BN);
    gemm_k_range(p, g.split, BK, &kt0, &kt1);
    ga_cluster_k_range(kt0, kt1, rank, cs);
    w.next += w.step;
    return true;
}

// Release: every store the warpgroup made before its barrier is visible
// at GPU scope before the flag (a fence, then a plain store of the flag).
GA_D void ga_flag_raise(int *flag) {
    asm volatile("fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.s32 [%0], 1;" ::"l"(flag) : "memory");
}

GA_D void ga_flag_wait(const int *flag) {
    int v;
    do {
        asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
    } while (v == 0);
}

// After the mainloop of a stream-K segment [kt0, kt1), for the 64-row part
// `part` of the tile (accumulators acc) of consumer warpgroup cw: true when
// this block finishes the tile -- the whole tile was its own, or it held
// the tile's first K-tile and has now added the later blocks' partial sums
// -- false when it left its partial sums for the block that finishes the
// tile.
template <int BM, int BN, int MC>
GA_D bool ga_stream_k_fixup(const GemmArgs &p, const GaWork &w, float (&acc)[BN / 2], int kt0, int kt1, int cw,
                            int part) {
    constexpr int PARTS = BM / 64;
    const int ktiles = w.step;
    if (kt0 == 0 && kt1 == ktiles) return true;
    const int tid = threadIdx.x & 127;
    constexpr int PIECES = BN / 8;  // a thread's 16-byte pieces
    int *flags = (int *)(p.partial + (long long)ga_units<MC>() * PARTS * 64 * BN);
    if (kt0 != 0) {
        float4 *slot = (float4 *)(p.partial + ((long long)ga_unit<MC>() * PARTS + part) * 64 * BN);
        #pragma unroll
        for (int i = 0; i < PIECES; ++i)
            slot[i * 128 + tid] = make_float4(acc[4 * i], acc[4 * i + 1], acc[4 * i + 2], acc[4 * i + 3]);
        ga_wg_sync(cw);
        if (tid == 0) ga_flag_raise(flags + ga_unit<MC>() * PARTS + part);
        return false;
    }
    // This block's range ended inside the tile: the block holding the tile's
    // last iteration (one past it: x1, counted from the shared part's
    // first) is the last to add.
    const int total = gemm_tiles_total(p, BM, BN), whole = ga_stream_k_whole<MC>(p, total);
    const long long x1 = w.end - kt1 + ktiles - (long long)whole * ktiles;
    const long long iters = (long long)(total - whole) * ktiles;
    const int last = (int)((x1 * ga_units<MC>() + iters - 1) / iters) - 1;
    for (int b = ga_unit<MC>() + 1; b <= last; ++b) {
        if (tid == 0) ga_flag_wait(flags + b * PARTS + part);
        ga_wg_sync(cw);
        const float4 *slot = (const float4 *)(p.partial + ((long long)b * PARTS + part) * 64 * BN);
        // eight pieces in flight at a time: all of them beside the
        // accumulators would spill
        #pragma unroll
        for (int q = 0; q < PIECES; q += 8) {
            float4 v[8];
            #pragma unroll
            for (int i = 0; i < 8 && q + i < PIECES; ++i) v[i] = __ldcg(slot + (q + i) * 128 + tid);  // L2
            #pragma unroll
            for (int i = 0; i < 8 && q + i < PIECES; ++i) {
                acc[4 * (q + i)] += v[i].x;
                acc[4 * (q + i) + 1] += v[i].y;
                acc[4 * (q + i) + 2] += v[i].z;
                acc[4 * (q + i) + 3] += v[i].w;
            }
            ga_fence_regs(acc);
        }
    }
    return true;
}
