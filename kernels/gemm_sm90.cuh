// gemm_sm90.cuh: the Hopper GEMM kernel body (TMA + wgmma + mbarrier pipeline),
// shared by gemm_sm90.cu (matrix products) and conv_sm90.cu (implicit-GEMM
// convolution, whose producer loads A through an im2col tensor map).  What
// it computes, the layouts, tensor maps and launch shape: gemm_sm90.cu's
// header; the convolution's: conv_sm90.cu's.
#pragma once
#include "gemm_common.cuh"

// Implicit-GEMM convolution passes (conv_sm90.cu), the kernel's CONV argument
#define GA_CONV_NONE 0
#define GA_CONV_FPROP 1   // C's rows are output positions; A gathered by im2col
#define GA_CONV_UPDATE 2  // the reduction runs over output positions; B gathered
#define GA_CONV_BPROP 3   // fprop of E with the filters read flipped ("n"-major B)

// Geometry of an implicit-GEMM convolution.  fprop: K-tiles walk the filter
// taps (r, s) and, within a tap, chunks of 64 channels.  update: K-tiles are
// 64 output positions; each 64-wide panel of B's columns is one tap's
// channels c0 .. c0 + 63 (C % 64 == 0).
struct ConvGeom {
    int P, Q;              // output height, width
    int R, S;              // filter height, width
    int cchunks;           // 64-channel chunks per tap: ceil(C / 64)
    int C;                 // input channels
    int str_h, str_w, pad_h, pad_w, dil_h, dil_w;
};
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
#define GA_SM90_SMEM_MAX 232448  // 227 KB: the most dynamic shared memory a block may have

// ---- PTX wrappers ----------------------------------------------------------
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
// 3-D tile (contiguous dim, other dim, data batch) of a tensor map into shared
// memory; the copy engine counts its bytes (zero-filled ones too) on `bar`.
GA_D void ga_tma_load(unsigned dst, const GemmTmap *map, unsigned bar, int c0, int c1, int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
        ::"r"(dst), "l"(map), "r"(c0), "r"(c1), "r"(c2), "r"(bar) : "memory");
}
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

// Input position (w, h) of image n where the window of output position m
// (in (n, p, q) order) starts.
GA_D void ga_conv_origin(const ConvGeom &cg, int m, int &w, int &h, int &n) {
    n = m / (cg.P * cg.Q);
    const int pq = m - n * cg.P * cg.Q, oh = pq / cg.Q;
    w = (pq - oh * cg.Q) * cg.str_w - cg.pad_w;
    h = oh * cg.str_h - cg.pad_h;
}

// The loads of one K-tile kt of an implicit-GEMM convolution: filter tap
// (r, s) and 64 channels from c0.  A (im2col): output rows m0 .. m0 + BM - 1
// from the input position of row m0's window; B: filters n0 .. n0 + BN - 1
// at that tap ("k"-major), or for bprop the original filters at the
// mirrored tap R*S - 1 - tap, BN / 64 "n"-major panels of 64 of their
// channels.  Channels past C (and rows past N*P*Q) are zero-filled.
template <int BN, int CONV>
GA_D void ga_conv_loads(const ConvGeom &cg, const GemmArgs &p, unsigned sa, unsigned sb, unsigned full, int kt,
                        int m0, int n0) {
    const int tap = kt / cg.cchunks, c0 = (kt - tap * cg.cchunks) * 64;
    const int fr = tap / cg.S, fs = tap - fr * cg.S;
    int w, h, n;
    ga_conv_origin(cg, m0, w, h, n);
    ga_tma_load_im2col(sa, &p.tmap_a, full, c0, w, h, n, fs * cg.dil_w, fr * cg.dil_h);
    if constexpr (CONV == GA_CONV_BPROP) {
        #pragma unroll
        for (int j = 0; j < BN / 64; ++j)
            ga_tma_load(sb + j * 8192, &p.tmap_b, full, n0 + 64 * j, c0, cg.R * cg.S - 1 - tap);
    } else {
        ga_tma_load(sb, &p.tmap_b, full, c0, n0, tap);
    }
}

// The loads of one K-tile kt of the filter gradient: A (E^T, "m"-major
// panels of 64 filters) at output positions kt*64 ..; B's panel j (64
// output positions x 64 channels) gathered at tap (n0 + 64 j) / C.
template <int BM, int BN>
GA_D void ga_conv_update_loads(const ConvGeom &cg, const GemmArgs &p, unsigned sa, unsigned sb, unsigned full,
                               int kt, int m0, int n0) {
    const int m = kt * 64;
    #pragma unroll
    for (int c = 0; c < BM / 64; ++c) ga_tma_load(sa + c * 8192, &p.tmap_a, full, m0 + 64 * c, m, 0);
    int w, h, n;
    ga_conv_origin(cg, m, w, h, n);
    #pragma unroll
    for (int j = 0; j < BN / 64; ++j) {
        const int col = n0 + 64 * j, tap = col / cg.C, c0 = col - tap * cg.C;
        const int fr = tap / cg.S, fs = tap - fr * cg.S;
        ga_tma_load_im2col(sb + j * 8192, &p.tmap_b, full, c0, w, h, n, fs * cg.dil_w, fr * cg.dil_h);
    }
}

// wgmma shared-memory matrix descriptor: start address, leading and stride
// byte offsets (16-byte units), swizzle mode (1: 128 B, 2: 64 B).
GA_D ga_u64 ga_desc(unsigned addr, unsigned lbo, unsigned sbo, unsigned swizzle) {
    return (ga_u64)((addr & 0x3FFFF) >> 4) | ((ga_u64)(lbo >> 4) << 16) | ((ga_u64)(sbo >> 4) << 32) |
           ((ga_u64)swizzle << 62);
}

// Register lists of the m64nN accumulators (N / 2 fp32 per thread) and the
// operand numbers that follow them.
#define GA_ACC32 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}"
#define GA_OUT32(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
#define GA_ARG32 "%16, %17, p, 1, 1"
#define GA_SCALE32 "%18"
#define GA_TRANS32 ", %19, %20"
#define GA_ACC64 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}"
#define GA_OUT64(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
#define GA_ARG64 "%32, %33, p, 1, 1"
#define GA_SCALE64 "%34"
#define GA_TRANS64 ", %35, %36"
#define GA_ACC128 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}"
#define GA_OUT128(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
#define GA_ARG128 "%64, %65, p, 1, 1"
#define GA_SCALE128 "%66"
#define GA_TRANS128 ", %67, %68"
#define GA_ACC256 "{" \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, " \
    "%32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, " \
    "%64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, " \
    "%80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, %95, " \
    "%96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, %109, %110, %111, " \
    "%112, %113, %114, %115, %116, %117, %118, %119, %120, %121, %122, %123, %124, %125, %126, %127}"
#define GA_OUT256(d) \
    "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), \
    "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
    "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), \
    "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), \
    "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), \
    "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), \
    "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), \
    "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), \
    "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), \
    "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), \
    "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87]), \
    "+f"(d[88]), "+f"(d[89]), "+f"(d[90]), "+f"(d[91]), "+f"(d[92]), "+f"(d[93]), "+f"(d[94]), "+f"(d[95]), \
    "+f"(d[96]), "+f"(d[97]), "+f"(d[98]), "+f"(d[99]), "+f"(d[100]), "+f"(d[101]), "+f"(d[102]), "+f"(d[103]), \
    "+f"(d[104]), "+f"(d[105]), "+f"(d[106]), "+f"(d[107]), "+f"(d[108]), "+f"(d[109]), "+f"(d[110]), "+f"(d[111]), \
    "+f"(d[112]), "+f"(d[113]), "+f"(d[114]), "+f"(d[115]), "+f"(d[116]), "+f"(d[117]), "+f"(d[118]), "+f"(d[119]), \
    "+f"(d[120]), "+f"(d[121]), "+f"(d[122]), "+f"(d[123]), "+f"(d[124]), "+f"(d[125]), "+f"(d[126]), "+f"(d[127])
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
GA_WGMMA(128)
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

// ---- configuration ---------------------------------------------------------
// Row stride (floats) of the epilogue staging: 64-bit stores of a half-warp
// (4 rows x 8 floats) then hit 32 distinct banks.
#define GA_EPI_STRIDE 40

template <int BM, int BN, int IN> struct GaSm90Cfg {
    static constexpr int NC = BM / 64;                  // consumer warpgroups, 64 rows each
    static constexpr int THREADS = 128 * (NC + 1);      // + the producer warpgroup
    static constexpr int ESZ = IN == GA_IN_TF32 ? 4 : IN >= GA_IN_E4M3 ? 1 : 2;
    static constexpr int BK = 128 / ESZ;                // one 128-byte swizzle row of K
    static constexpr int KSTEP = 32 / ESZ;              // K of one wgmma
    static constexpr int A_BYTES = BM * 128, B_BYTES = BN * 128, STAGE_BYTES = A_BYTES + B_BYTES;
    static constexpr int EPI_BYTES = NC * 64 * GA_EPI_STRIDE * 4;  // fp32 staging of 64 x 32 per consumer
    // As many stages as fit (up to 16): a skinny tile streams its operands
    // from DRAM, and one block keeps about STAGES * STAGE_BYTES in flight.
    static constexpr int FIT = (GA_SM90_SMEM_MAX - 1024 - EPI_BYTES - 16 * 16) / STAGE_BYTES;
    static constexpr int STAGES = FIT < 16 ? FIT : 16;
    static constexpr int SMEM = 1024 + STAGES * STAGE_BYTES + EPI_BYTES + 16 * STAGES;
};

// Eight adjacent outputs (m, n .. n + 7) when neither beta, stochastic
// rounding nor statistics is on: gemm_finish's arithmetic, one 16-byte store
// (two for fp32, one of 8 bytes for FP8).
GA_D void ga_store8(const GemmArgs &p, GemmEpi &st, int ob, int m, int n, const float *src) {
    float4 lo = *(const float4 *)src, hi = *(const float4 *)(src + 4);
    float v[8] = {lo.x, lo.y, lo.z, lo.w, hi.x, hi.y, hi.z, hi.w};
    #pragma unroll
    for (int i = 0; i < 8; ++i) {
        v[i] = st.pre * v[i];
        if (p.flags & EPI_BIAS) v[i] += gemm_load(p.bias, p.bias_type, m * p.bias_m + (n + i) * p.bias_n);
        if (p.flags & EPI_RELU) v[i] = v[i] < 0.f ? 0.f : v[i];
        if (p.flags & EPI_AMAX) st.amax = fmaxf(st.amax, fabsf(v[i]));
        if (st.post != 1.f) v[i] = __fmul_rn(v[i], st.post);
    }
    long long ci = ob * p.batch_c + m * p.ldc + n;
    if (p.c_type >= GEMM_E4M3) {
        unsigned w[2];
        #pragma unroll
        for (int i = 0; i < 2; ++i)
            w[i] = gemm_fp8x2_bits(v[4 * i], v[4 * i + 1], p.c_type) |
                   ((unsigned)gemm_fp8x2_bits(v[4 * i + 2], v[4 * i + 3], p.c_type) << 16);
        *(uint2 *)((unsigned char *)p.c + ci) = make_uint2(w[0], w[1]);
    } else if (p.c_type == GEMM_F32) {
        *(float4 *)((float *)p.c + ci) = make_float4(v[0], v[1], v[2], v[3]);
        *(float4 *)((float *)p.c + ci + 4) = make_float4(v[4], v[5], v[6], v[7]);
    } else {
        unsigned w[4];
        #pragma unroll
        for (int i = 0; i < 4; ++i) {
            unsigned a = p.c_type == GEMM_F16 ? ga_f2h_bits(v[2 * i]) : ga_f2bf_bits(v[2 * i]);
            unsigned b = p.c_type == GEMM_F16 ? ga_f2h_bits(v[2 * i + 1]) : ga_f2bf_bits(v[2 * i + 1]);
            w[i] = a | (b << 16);
        }
        *(uint4 *)((ga_half *)p.c + ci) = make_uint4(w[0], w[1], w[2], w[3]);
    }
}

// Outputs of one staged 64 x 32 chunk whose corner is (m0, n0), by the 128
// threads of a consumer warpgroup, row by row (coalesced).
GA_D void ga_epilogue_chunk(const GemmArgs &p, const GemmTile &g, const float *ep, int m0, int n0, bool fast,
                            GemmEpi &st) {
    const int tid = threadIdx.x & 127;
    if (fast) {
        for (int q = tid; q < 64 * 4; q += 128) {
            const int r = q >> 2, m = m0 + r, n = n0 + 8 * (q & 3);
            const float *src = ep + r * GA_EPI_STRIDE + 8 * (q & 3);
            if (m >= p.M) continue;
            if (n + 8 <= p.N) {
                ga_store8(p, st, g.ob, m, n, src);
            } else {
                for (int i = 0; i < 8; ++i) gemm_output(p, g, m, n + i, src[i], st);
            }
        }
    } else {
        for (int e = tid; e < 64 * 32; e += 128) {
            const int r = e >> 5, col = e & 31;
            gemm_output(p, g, m0 + r, n0 + col, ep[r * GA_EPI_STRIDE + col], st);
        }
    }
}

// CONV (GA_CONV_*): the producer gathers one operand by im2col (conv_sm90.cu).
// PROMOTE (FP8): each K-tile's products are summed by the tensor cores into
// a second accumulator set, which is then added to the first in fp32 --
// the tensor cores' own FP8 accumulation keeps fewer bits than fp32
// (cuBLASLt's default does the same; "fast accumulation" does not).
template <int BM, int BN, int IN, int LA, int LB, int CONV = GA_CONV_NONE, bool PROMOTE = false>
GA_D void ga_gemm_sm90(const GemmArgs &p, const ConvGeom *cg = nullptr) {
    typedef GaSm90Cfg<BM, BN, IN> C;
    extern __shared__ unsigned char smem_raw[];
    // 128-byte swizzle repeats every 1024 bytes; tiles start on that period
    // so that descriptors need no base offset.
    const unsigned base = (ga_smem_addr(smem_raw) + 1023) & ~1023u;
    // [stages][epilogue staging][full[STAGES]][empty[STAGES]]
    const unsigned bars = base + C::STAGES * C::STAGE_BYTES + C::EPI_BYTES;
    const int wg = threadIdx.x / 128;
    if (threadIdx.x == 0) {
        for (int s = 0; s < C::STAGES; ++s) {
            ga_mbar_init(bars + 8 * s, 1);                         // the producer's expect_tx
            ga_mbar_init(bars + 8 * (C::STAGES + s), 4 * C::NC);  // one arrive per consumer warp
        }
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }
    __syncthreads();
    const int total = gemm_tiles_total(p, BM, BN);

    if (wg == 0) {
        // Producer: one thread keeps the ring full, running ahead across tiles.
        if constexpr (C::NC == 2) asm volatile("setmaxnreg.dec.sync.aligned.u32 40;");
        if (threadIdx.x != 0) return;
        asm volatile("prefetch.tensormap [%0];" ::"l"(&p.tmap_a) : "memory");
        asm volatile("prefetch.tensormap [%0];" ::"l"(&p.tmap_b) : "memory");
        int s = 0;
        unsigned phase = 0;
        for (int t = blockIdx.x; t < total; t += gridDim.x) {
            GemmTile g = gemm_tile(p, t, BM, BN);
            int kt0, kt1;
            gemm_k_range(p, g.split, C::BK, &kt0, &kt1);
            for (int kt = kt0; kt < kt1; ++kt) {
                int db, k0;
                gemm_k_tile(p, g.ob, kt, C::BK, &db, &k0);
                const unsigned full = bars + 8 * s, sa = base + s * C::STAGE_BYTES, sb = sa + C::A_BYTES;
                ga_mbar_wait(bars + 8 * (C::STAGES + s), phase ^ 1);
                ga_mbar_expect_tx(full, C::STAGE_BYTES);
                // A broadcast operand (batch stride 0) has a one-batch tensor map.
                const int dba = p.batch_a ? db : 0, dbb = p.batch_b ? db : 0;
                const int m0 = g.tm * BM, n0 = g.tn * BN;
                if constexpr (CONV == GA_CONV_FPROP || CONV == GA_CONV_BPROP) {
                    ga_conv_loads<BN, CONV>(*cg, p, sa, sb, full, kt, m0, n0);
                } else if constexpr (CONV == GA_CONV_UPDATE) {
                    ga_conv_update_loads<BM, BN>(*cg, p, sa, sb, full, kt, m0, n0);
                } else {
                    if constexpr (LA == GA_MAJOR_K) {
                        ga_tma_load(sa, &p.tmap_a, full, k0, m0, dba);
                    } else {
                        #pragma unroll
                        for (int c = 0; c < BM / 64; ++c)
                            ga_tma_load(sa + c * 8192, &p.tmap_a, full, m0 + 64 * c, k0, dba);
                    }
                    if constexpr (LB == GA_MAJOR_K) {
                        ga_tma_load(sb, &p.tmap_b, full, k0, n0, dbb);
                    } else {
                        #pragma unroll
                        for (int c = 0; c < (BN + 63) / 64; ++c)
                            ga_tma_load(sb + c * 8192, &p.tmap_b, full, n0 + 64 * c, k0, dbb);
                    }
                }
                if (++s == C::STAGES) { s = 0; phase ^= 1; }
            }
        }
    } else {
        if constexpr (C::NC == 2) asm volatile("setmaxnreg.inc.sync.aligned.u32 232;");
        const int cw = wg - 1, warp = (threadIdx.x / 32) & 3, lane = threadIdx.x & 31;
        // Descriptor constants per operand layout (see the header's table).
        constexpr unsigned A_KSTEP = LA == GA_MAJOR_K ? 32 : 2048;  // bytes per wgmma K step
        constexpr unsigned B_KSTEP = LB == GA_MAJOR_K ? 32 : (BN < 64 ? 1024 : 2048);
        constexpr unsigned A_LBO = LA == GA_MAJOR_K ? 16 : 8192, A_SBO = 1024;
        constexpr unsigned B_LBO = LB == GA_MAJOR_K ? 16 : (BN < 64 ? 4096 : 8192);
        constexpr unsigned B_SBO = LB == GA_MAJOR_K || BN >= 64 ? 1024 : 512;
        constexpr unsigned B_SWZ = LB == GA_MAJOR_K || BN >= 64 ? 1 : 2;
        const unsigned a_off = cw * (LA == GA_MAJOR_K ? 64 * 128 : 8192);
        // ga_store8's alignment: 16 bytes (8 bytes for FP8's 8-byte stores)
        const int vec = p.c_type == GEMM_F32 ? 4 : 8, align = p.c_type >= GEMM_E4M3 ? 7 : 15;
        const bool fast = p.splits == 1 && !(p.flags & (EPI_BETA | EPI_SR | EPI_STATS)) && p.ldc % vec == 0 &&
                          p.batch_c % vec == 0 && !((unsigned long long)p.c & align);
        float *ep = (float *)(smem_raw + (base - ga_smem_addr(smem_raw)) + C::STAGES * C::STAGE_BYTES) +
                    cw * 64 * GA_EPI_STRIDE;
        GemmEpi st = gemm_epi_init(p);
        // Skinny tiles are bound by the latency of dependent wgmmas, not by
        // their issue rate: alternate K steps between two accumulator sets so
        // that two chains are in flight, and add them at the end.
        // (PROMOTE's second set holds a K-tile's partial sums instead: of
        // the whole tile, or of each half in turn for BN = 256, whose two
        // full sets would not fit in the registers.)
        constexpr bool DUAL = !PROMOTE && (BN <= 64 || (C::NC == 1 && BN <= 128));
        constexpr int PART = BN == 256 ? BN / 4 : BN / 2;
        float acc[BN / 2], acc2[DUAL || PROMOTE ? PART : 1];
        int s = 0;
        unsigned phase = 0;
        for (int t = blockIdx.x; t < total; t += gridDim.x) {
            GemmTile g = gemm_tile(p, t, BM, BN);
            int kt0, kt1;
            gemm_k_range(p, g.split, C::BK, &kt0, &kt1);
            #pragma unroll
            for (int i = 0; i < BN / 2; ++i) acc[i] = 0.f;
            #pragma unroll
            for (int i = 0; i < (DUAL ? BN / 2 : 1); ++i) acc2[i] = 0.f;  // (PROMOTE overwrites it)
            ga_fence_regs(acc);
            ga_fence_regs(acc2);
            int prev = -1;
            for (int kt = kt0; kt < kt1; ++kt) {
                ga_mbar_wait(bars + 8 * s, phase);
                const unsigned sa = base + s * C::STAGE_BYTES + a_off, sb = base + s * C::STAGE_BYTES + C::A_BYTES;
                ga_wgmma_fence();
                if constexpr (PROMOTE) {
                    // the K-tile into acc2, waited for and added in fp32.
                    // The other consumer warpgroup keeps the tensor cores
                    // busy meanwhile: on the H200 a 128x128 tile ran 1030
                    // TFLOP/s at 8192^3 this way against 817 for a
                    // ping-pong between two half-width partial sets.
                    if constexpr (BN == 256) {
                        // each half of the columns in turn (B rows 128 ..,
                        // 128 bytes each: +16384 bytes, +1024 in the
                        // descriptor's address field)
                        #pragma unroll
                        for (int h = 0; h < 2; ++h) {
                            if (h) ga_wgmma_fence();
                            ga_fp8_ktile<BN / 2, IN, C::BK / C::KSTEP>(acc2, ga_desc(sa, A_LBO, A_SBO, 1),
                                                                       ga_desc(sb, B_LBO, B_SBO, B_SWZ) + 1024 * h);
                            ga_wgmma_commit();
                            ga_wgmma_wait<0>();
                            ga_promote_at(acc, acc2, h * BN / 4);
                        }
                    } else {
                        ga_fp8_ktile<BN, IN, C::BK / C::KSTEP>(acc2, ga_desc(sa, A_LBO, A_SBO, 1),
                                                               ga_desc(sb, B_LBO, B_SBO, B_SWZ));
                        ga_wgmma_commit();
                        ga_wgmma_wait<0>();
                        ga_promote_at(acc, acc2, 0);
                    }
                    if (lane == 0) ga_mbar_arrive(bars + 8 * (C::STAGES + s));
                } else {
                    #pragma unroll
                    for (int kk = 0; kk < C::BK / C::KSTEP; ++kk)
                        GaWgmma<BN>::template mma<IN, LA, LB>(DUAL && (kk & 1) ? acc2 : acc,
                                                              ga_desc(sa + kk * A_KSTEP, A_LBO, A_SBO, 1),
                                                              ga_desc(sb + kk * B_KSTEP, B_LBO, B_SBO, B_SWZ));
                    ga_wgmma_commit();
                    // Keep one K-tile of wgmma in flight; the one before it has
                    // finished reading its stage, which goes back to the producer.
                    ga_wgmma_wait<1>();
                    if (prev >= 0 && lane == 0) ga_mbar_arrive(bars + 8 * (C::STAGES + prev));
                    prev = s;
                }
                if (++s == C::STAGES) { s = 0; phase ^= 1; }
            }
            ga_wgmma_wait<0>();
            ga_fence_regs(acc);
            ga_fence_regs(acc2);
            if (prev >= 0 && lane == 0) ga_mbar_arrive(bars + 8 * (C::STAGES + prev));
            if constexpr (DUAL) {
                #pragma unroll
                for (int i = 0; i < BN / 2; ++i) acc[i] += acc2[i];
            }

            // Accumulator layout of m64nN: thread (warp, lane) holds rows
            // 16 warp + lane / 4 (+ 8), columns 8 j + 2 (lane % 4) (+ 1).
            // Staged through shared memory 32 columns at a time; the loop
            // stays rolled (one copy of the epilogue code), and each chunk's
            // registers are picked by compile-time indices.
            const int rl = warp * 16 + lane / 4, cl = 2 * (lane & 3);
            #pragma unroll 1
            for (int c = 0; c < BN / 32; ++c) {
                ga_wg_sync(cw);
                #pragma unroll
                for (int cc = 0; cc < BN / 32; ++cc) {
                    if (cc != c) continue;
                    #pragma unroll
                    for (int j = 0; j < 4; ++j) {
                        #pragma unroll
                        for (int h = 0; h < 2; ++h)
                            *(float2 *)(ep + (rl + 8 * h) * GA_EPI_STRIDE + 8 * j + cl) =
                                make_float2(acc[16 * cc + 4 * j + 2 * h], acc[16 * cc + 4 * j + 2 * h + 1]);
                    }
                }
                ga_wg_sync(cw);
                ga_epilogue_chunk(p, g, ep, g.tm * BM + cw * 64, g.tn * BN + 32 * c, fast, st);
            }
        }
        gemm_epi_flush(p, st);
    }
}

