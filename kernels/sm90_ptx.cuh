// sm90_ptx.cuh: the Hopper instructions the sm90 GEMM and convolution
// kernels are built from, as inline-PTX device functions.
//
// What it holds: mbarrier set-up, arrival and parity waits (within a block
// and across a thread-block cluster; the cluster's size, barrier and
// distributed shared-memory access are cluster.cuh's); TMA tile copies
// (plain and im2col) that count their bytes on an mbarrier; wgmma
// shared-memory descriptors, the m64nNk16 (fp16/bf16), m64nNk8 (tf32) and
// m64nNk32 (FP8) instructions with their accumulator register lists, the
// wgmma fence/commit/wait, a consumer warpgroup's named barrier, register
// pins; the programmatic dependent launch's wait and trigger; stmatrix, 16-byte shared loads and paired 16-bit rounding; an FP8
// K-tile into a partial-sum set and its promotion into fp32 accumulators.
// Layouts and launch shapes: gemm_sm90.cu's header; no kernel is defined
// here.
#pragma once
#include "cluster.cuh"

typedef unsigned long long ga_u64;

#define GA_IN_F16 0
#define GA_IN_BF16 1
#define GA_IN_TF32 2
// FP8 operand pairs (A type, B type): K-major only, as tf32
#define GA_IN_E4M3 3       // e4m3 x e4m3
#define GA_IN_E5M2 4       // e5m2 x e5m2
#define GA_IN_E4M3_E5M2 5  // e4m3 x e5m2
#define GA_IN_E5M2_E4M3 6  // e5m2 x e4m3
#define GA_MAJOR_K 0   // operand's K is its contiguous dim
#define GA_MAJOR_MN 1  // operand's M (A) or N (B) is its contiguous dim

// ---- PTX wrappers ----------------------------------------------------------
// Programmatic dependent launch: a kernel launched with programmatic stream
// serialization may start while the kernel before it in the stream is still
// running.  ga_grid_dependency_wait returns once that kernel has finished
// and its memory is visible (at once where the launch did not ask for the
// overlap): every thread runs it before its first global access.
// ga_launch_dependents lets the next such kernel start launching once every
// block of this one has run it.
GA_D void ga_grid_dependency_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
GA_D void ga_launch_dependents() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
GA_D unsigned ga_smem_addr(const void *p) {
    unsigned a;
    asm("{ .reg .u64 t; cvta.to.shared.u64 t, %1; cvt.u32.u64 %0, t; }" : "=r"(a) : "l"(p));
    return a;
}
GA_D void ga_mbar_init(unsigned bar, unsigned count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count));
}
GA_D void ga_mbar_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
GA_D void ga_mbar_arrive(unsigned bar) {
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
GA_D void ga_mbar_wait(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                     : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// ---- mbarriers across a thread-block cluster ---------------------------------
// Arrival on an mbarrier of any block of the cluster (an address from
// ga_mapa); this thread's earlier memory accesses are released to whoever
// waits on it with ga_mbar_wait_cluster.
GA_D void ga_mbar_arrive_cluster(unsigned remote_bar) {
    asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" ::"r"(remote_bar) : "memory");
}
// Arrival on an mbarrier of any block of the cluster with the default
// (CTA-scope) release: what a consumer needs to hand a drained stage back
// to another block's producer, whose TMA writes are ordered after the
// arrival by the barrier itself.  (The cluster-scope release above is a
// memory barrier each K-tile: a cluster GEMM measured 0.45x with it.)
GA_D void ga_mbar_arrive_remote(unsigned remote_bar) {
    asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote_bar) : "memory");
}
GA_D void ga_mbar_wait_cluster(unsigned bar, unsigned parity) {
    unsigned done;
    do {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2; "
            "selp.u32 %0, 1, 0, p; }"
            : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    } while (!done);
}
// 3-D tile (contiguous dim, other dim, data batch) of a tensor map into shared
// memory; the copy engine counts its bytes (zero-filled ones too) on `bar`.
GA_D void ga_tma_load(unsigned dst, const GemmTmap *map, unsigned bar, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
        ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
// A 3-D box of shared memory (at src, laid out as the map's box and
// swizzle) stored by the copy engine at (c0, c1, c2) of the map's tensor;
// the parts outside the tensor are not written.  Asynchronous: a bulk
// group per thread, committed by ga_bulk_commit.  Shared-memory writes
// of the generic proxy (st.shared, stmatrix) must be fenced
// (ga_fence_proxy_async) and the writers synchronised before the store.
GA_D void ga_tma_store(const GemmTmap *map, unsigned src, int c0, int c1, int c2) {
    asm volatile("cp.async.bulk.tensor.3d.global.shared::cta.bulk_group [%0, {%1, %2, %3}], [%4];"
                 ::"l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(src) : "memory");
}
GA_D void ga_bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// this thread's committed bulk stores have read their shared memory (it may be rewritten)
GA_D void ga_bulk_wait_read() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// ... and written global memory
GA_D void ga_bulk_wait() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }
GA_D void ga_fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// im2col tile of a 4-D NHWC tensor map: pixelsPerColumn output positions
// from input position (w, h) of image n (offsets (0, 0)), each its
// channelsPerPixel channels from c, read at (w + off_w, h + off_h); the
// traversal wraps rows and images within the map's bounding box.
GA_D void ga_tma_load_im2col(unsigned dst, const GemmTmap *map, unsigned bar, int c, int w, int h, int n,
                             int off_w, int off_h) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes "
        "[%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8};"
        ::"r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
          "h"((unsigned short)off_w), "h"((unsigned short)off_h) : "memory");
}
// ga_tma_load_im2col's tile written to the same shared-memory offset of
// every block of the cluster in `mask` (bit r: rank r), each block's
// barrier at `bar` counting its bytes.
GA_D void ga_tma_load_im2col_multicast(unsigned dst, const GemmTmap *map, unsigned bar, int c, int w, int h,
                                       int n, int off_w, int off_h, unsigned short mask) {
    asm volatile(
        "cp.async.bulk.tensor.4d.shared::cluster.global.im2col.mbarrier::complete_tx::bytes.multicast::cluster "
        "[%0], [%1, {%2, %3, %4, %5}], [%6], {%7, %8}, %9;"
        ::"r"(dst), "l"(map), "r"(c), "r"(w), "r"(h), "r"(n), "r"(bar),
          "h"((unsigned short)off_w), "h"((unsigned short)off_h), "h"(mask) : "memory");
}

// wgmma shared-memory matrix descriptor: start address, leading and stride
// byte offsets (16-byte units), swizzle mode (1: 128 B, 2: 64 B).
GA_D ga_u64 ga_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swizzle) {
    return (ga_u64)((addr & 0x3FFFF) >> 4) | ((ga_u64)(lbo >> 4) << 16) | ((ga_u64)(sbo >> 4) << 32) |
           ((ga_u64)swizzle << 62);
}

// Register lists of the m64nN accumulators (N / 2 fp32 per thread), built
// 16 registers at a time, and the operand numbers that follow them.
#define GA_REGS_0 "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15"
#define GA_REGS_16 "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define GA_REGS_32 "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47"
#define GA_REGS_48 "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define GA_REGS_64 "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79"
#define GA_REGS_80 "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95"
#define GA_REGS_96 "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111"
#define GA_REGS_112 "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127"
#define GA_OUT16(d, o) \
    "+f"(d[o + 0]), "+f"(d[o + 1]), "+f"(d[o + 2]), "+f"(d[o + 3]), \
    "+f"(d[o + 4]), "+f"(d[o + 5]), "+f"(d[o + 6]), "+f"(d[o + 7]), \
    "+f"(d[o + 8]), "+f"(d[o + 9]), "+f"(d[o + 10]), "+f"(d[o + 11]), \
    "+f"(d[o + 12]), "+f"(d[o + 13]), "+f"(d[o + 14]), "+f"(d[o + 15])
#define GA_ACC32 "{" GA_REGS_0 "}"
#define GA_OUT32(d) GA_OUT16(d, 0)
#define GA_ARG32 "%16, %17, p, 1, 1"
#define GA_SCALE32 "%18"
#define GA_TRANS32 ", %19, %20"
#define GA_ACC64 "{" GA_REGS_0 ", " GA_REGS_16 "}"
#define GA_OUT64(d) GA_OUT16(d, 0), GA_OUT16(d, 16)
#define GA_ARG64 "%32, %33, p, 1, 1"
#define GA_SCALE64 "%34"
#define GA_TRANS64 ", %35, %36"
#define GA_ACC96 "{" GA_REGS_0 ", " GA_REGS_16 ", " GA_REGS_32 "}"
#define GA_OUT96(d) GA_OUT64(d), GA_OUT16(d, 32)
#define GA_ARG96 "%48, %49, p, 1, 1"
#define GA_SCALE96 "%50"
#define GA_TRANS96 ", %51, %52"
#define GA_ACC128 "{" GA_REGS_0 ", " GA_REGS_16 ", " GA_REGS_32 ", " GA_REGS_48 "}"
#define GA_OUT128(d) GA_OUT64(d), GA_OUT16(d, 32), GA_OUT16(d, 48)
#define GA_ARG128 "%64, %65, p, 1, 1"
#define GA_SCALE128 "%66"
#define GA_TRANS128 ", %67, %68"
#define GA_ACC192 "{" GA_REGS_0 ", " GA_REGS_16 ", " GA_REGS_32 ", " GA_REGS_48 ", " \
    GA_REGS_64 ", " GA_REGS_80 "}"
#define GA_OUT192(d) GA_OUT128(d), GA_OUT16(d, 64), GA_OUT16(d, 80)
#define GA_ARG192 "%96, %97, p, 1, 1"
#define GA_SCALE192 "%98"
#define GA_TRANS192 ", %99, %100"
#define GA_ACC256 "{" GA_REGS_0 ", " GA_REGS_16 ", " GA_REGS_32 ", " GA_REGS_48 ", " \
    GA_REGS_64 ", " GA_REGS_80 ", " GA_REGS_96 ", " GA_REGS_112 "}"
#define GA_OUT256(d) \
    GA_OUT128(d), GA_OUT16(d, 64), GA_OUT16(d, 80), GA_OUT16(d, 96), GA_OUT16(d, 112)
#define GA_ARG256 "%128, %129, p, 1, 1"
#define GA_SCALE256 "%130"
#define GA_TRANS256 ", %131, %132"

// One FP8 wgmma m64nNk32 (both operands K-major), A type TA, B type TB;
// scale_d 0 overwrites D (a promoted K-tile's first step) instead of adding.
#define GA_WGMMA_F8(N, TA, TB)                                                                        \
    asm volatile("{ .reg .pred p; setp.ne.b32 p, " GA_SCALE##N ", 0; "                                \
                 "wgmma.mma_async.sync.aligned.m64n" #N "k32.f32." TA "." TB " " GA_ACC##N             \
                 ", " GA_ARG##N "; }"                                                                  \
                 : GA_OUT##N(d) : "l"(da), "l"(db), "r"(scale_d))

// D += A * B for one m64nNk16 (fp16/bf16; TA/TB: operand is MN-major),
// m64nNk8 (tf32, K-major only) or m64nNk32 (FP8, K-major only) step;
// scale-d is 1 (accumulators are zeroed) except where FP8 asks otherwise.
template <int N> struct GaWgmma;
#define GA_WGMMA(N)                                                                                   \
    template <> struct GaWgmma<N> {                                                                   \
        template <int IN, int TA, int TB>                                                             \
        static GA_D void mma(float *d, ga_u64 da, ga_u64 db, int scale_d = 1) {                       \
            if constexpr (IN == GA_IN_E4M3) GA_WGMMA_F8(N, "e4m3", "e4m3");                           \
            else if constexpr (IN == GA_IN_E5M2) GA_WGMMA_F8(N, "e5m2", "e5m2");                      \
            else if constexpr (IN == GA_IN_E4M3_E5M2) GA_WGMMA_F8(N, "e4m3", "e5m2");                 \
            else if constexpr (IN == GA_IN_E5M2_E4M3) GA_WGMMA_F8(N, "e5m2", "e4m3");                 \
            else if constexpr (IN == GA_IN_TF32)                                                      \
                asm volatile("{ .reg .pred p; setp.ne.b32 p, " GA_SCALE##N ", 0; "                    \
                             "wgmma.mma_async.sync.aligned.m64n" #N "k8.f32.tf32.tf32 " GA_ACC##N     \
                             ", " GA_ARG##N "; }"                                                      \
                             : GA_OUT##N(d) : "l"(da), "l"(db), "r"(1));                               \
            else if constexpr (IN == GA_IN_BF16)                                                      \
                asm volatile("{ .reg .pred p; setp.ne.b32 p, " GA_SCALE##N ", 0; "                    \
                             "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.bf16.bf16 " GA_ACC##N    \
                             ", " GA_ARG##N GA_TRANS##N "; }"                                          \
                             : GA_OUT##N(d) : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB));             \
            else                                                                                      \
                asm volatile("{ .reg .pred p; setp.ne.b32 p, " GA_SCALE##N ", 0; "                    \
                             "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32.f16.f16 " GA_ACC##N      \
                             ", " GA_ARG##N GA_TRANS##N "; }"                                          \
                             : GA_OUT##N(d) : "l"(da), "l"(db), "r"(1), "n"(TA), "n"(TB));             \
        }                                                                                             \
    };
GA_WGMMA(32)
GA_WGMMA(64)
GA_WGMMA(96)
GA_WGMMA(128)
GA_WGMMA(192)
GA_WGMMA(256)

GA_D void ga_wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
GA_D void ga_wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int PENDING> GA_D void ga_wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(PENDING) : "memory");
}
// Barrier of one consumer warpgroup (named barrier 1 or 2; 0 is __syncthreads).
GA_D void ga_wg_sync(int cw) {
    if (cw == 0) asm volatile("bar.sync 1, 128;" ::: "memory");
    else asm volatile("bar.sync 2, 128;" ::: "memory");
}
// Barrier of all NC consumer warpgroups (named barrier 3).
template <int NC> GA_D void ga_consumers_sync() { asm volatile("bar.sync 3, %0;" ::"n"(128 * NC) : "memory"); }
// Four 8 x 8 matrices of 16-bit pairs into shared memory (stmatrix x4): lane
// l gives the address of row l % 8 of matrix l / 8; w[i] is this lane's pair
// of matrix i (row lane / 4, columns 2 (lane % 4) and the next).
GA_D void ga_stmatrix_x4(unsigned addr, const unsigned (&w)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(addr), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}
// The same, each matrix stored transposed: lane l gives the address of row
// l % 8 of matrix l / 8 as stored, which holds column l % 8 of w's matrix.
GA_D void ga_stmatrix_x4_trans(unsigned addr, const unsigned (&w)[4]) {
    asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};"
                 ::"r"(addr), "r"(w[0]), "r"(w[1]), "r"(w[2]), "r"(w[3]) : "memory");
}
GA_D void ga_sts32f(unsigned addr, float x) { asm volatile("st.shared.f32 [%0], %1;" ::"r"(addr), "f"(x) : "memory"); }
GA_D uint4 ga_lds128(unsigned addr) {
    uint4 v;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
    return v;
}
// Two floats rounded to nearest into one word of fp16 (half) or bf16, `lo`
// in the low half: the bits of cvt.rn.f16.f32 / cvt.rn.bf16.f32 each.
GA_D unsigned ga_pack16(float lo, float hi, bool half) {
    unsigned w;
    if (half) asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    else asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(w) : "f"(hi), "f"(lo));
    return w;
}
// Pins the accumulators: the compiler must not move their reads or writes
// across the asynchronous wgmma window that this marks.
template <int R> GA_D void ga_fence_regs(float (&d)[R]) {
    #pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(d[i])::"memory");
}

// One FP8 K-tile (KSTEPS wgmma k32 steps) of N columns into the partial-sum
// set d, the first step overwriting it (scale-d 0); K-major operands, +32
// bytes (+2 in a descriptor's address field) a step.
template <int N, int IN, int KSTEPS>
GA_D void ga_fp8_ktile(float (&d)[N / 2], ga_u64 da, ga_u64 db) {
    #pragma unroll
    for (int kk = 0; kk < KSTEPS; ++kk)
        GaWgmma<N>::template mma<IN, GA_MAJOR_K, GA_MAJOR_K>(d, da + 2 * kk, db + 2 * kk, kk != 0);
}
// acc[at ..] += part in fp32, once the wgmma writing part has completed.
// (Columns 8 j .. of an m64nN set are its registers 4 j ..: the right half
// of an N-column tile starts at register N / 4.)  `at` is a constant once
// unrolled.
template <int R, int P> GA_D void ga_promote_at(float (&acc)[R], float (&part)[P], int at) {
    ga_fence_regs(part);
    #pragma unroll
    for (int i = 0; i < P; ++i) acc[at + i] += part[i];
}
