// gemm_sm90.cu: Hopper GEMM kernels (TMA + wgmma + mbarrier pipeline).
//
// What it computes: C = epilogue(A @ B) per gemm_common.cuh (batches, batches
// summed into one output, split-K partials, bias / relu / beta / stochastic
// rounding / statistics), with fp32 accumulation on the tensor cores:
// fp16 and bf16 inputs (wgmma k16), fp32 inputs as tf32 (wgmma k8).
//
// Layouts (gemm_common.cuh): A "k" (a_k == 1) or "m" (a_m == 1), B "n"
// (b_n == 1) or "k" (b_k == 1); suffix _<la><lb>.  fp16/bf16: kn, kk, mn,
// mk.  tf32: kk only (wgmma cannot transpose 32-bit operands in shared
// memory; Python sends other tf32 layouts to another family).
//
// Parameters (cuDNN names): M, N, K, batch, kbatch, splits as GemmArgs.
//
// Design.  A block is one producer warpgroup (warpgroup 0; one thread issues
// the copies) and BM / 64 consumer warpgroups, each owning 64 rows x BN of
// the tile in registers (m64nBNk16 wgmma, both operands from shared memory).
// The operands pass through a ring of STAGES shared-memory stages, each one
// K-tile of BK elements (128 bytes: one 128-byte swizzle row), loaded by
// the copy engine (cp.async.bulk.tensor.3d) from the tensor maps
// p.tmap_a / p.tmap_b; a "full" mbarrier per stage counts the bytes in, an
// "empty" mbarrier (one arrive per consumer warp) hands it back.  Copies
// past M, N or K are zero-filled by the copy engine, so ragged tiles need
// no code.  Producer and consumers walk the same grid-stride tile sequence
// (gemm_tile), the producer running up to STAGES K-tiles ahead, across
// tiles too.  setmaxnreg moves registers from the producer (40) to the
// consumers (232) in the 2-consumer kernels.  Tiles with BN <= 64, and
// 64x128, alternate K steps between two accumulator sets (two dependent
// wgmma chains instead of one; summed before the epilogue).  Epilogue
// (sm90_epilogue.cuh): an fp16/bf16 C in 16-byte aligned rows is finished in
// registers, staged as 8x8 matrices (stmatrix) 64 columns at a time and
// written in 16-byte pieces (ga_epilogue16), or, where the host encoded C's
// tensor map (flags & EPI_TMA_C; tiles of a multiple of 64 columns), staged
// 32 columns at a time in two buffers in turn and stored by the copy
// engine while the threads go on (ga_epilogue16_tma); an fp32 C as 8-byte pairs
// straight from the accumulators (ga_epilogue32), and so are split-K
// partials for an even N (ga_partials32); with beta, stochastic rounding,
// statistics, amax, an FP8 C or unaligned rows each consumer stages fp32
// values 64 x 32 at a time and finishes them one by one (gemm_output).
//
// Cluster K-split (gemm_sm90.cuh's ga_cluster_reduce): launched with
// cluster dimensions (CS, 1, 1), CS = 2 .. 8 (cuLaunchKernelEx; the kernel
// reads CS at run time, so the same cubin serves every CS and plain
// launches), each tile goes to a cluster whose block r runs the r-th of CS
// equal parts of its K-tiles; block 0 adds the others' accumulators over
// distributed shared memory in rank order and runs the epilogue.  For
// products with fewer tiles than SMs and a long K (skinny inference
// shapes) -- in place of split-K's partial sums and second kernel.
//
// Launch shape: grid (G, 1, 1), any G >= 1 (a multiple of CS); best G =
// min(tiles, number of SMs) (persistent: 132 on H200; 8192^3 fp16 ran 676
// TFLOP/s with G = 132, 634 with one block per tile); in clusters, G =
// CS * min(tiles, clusters of CS the GPU runs at once) (H100: 66 of 2, 30
// of 4, 15 of 8); under the stream-K schedule (flags & SCHED_STREAM_K,
// stream_k.cuh; not the FP8 kernels), G <= tiles * K-tiles.  block
// (THREADS, 1, 1); dynamic shared memory SMEM bytes
// (cuFuncSetAttribute MAX_DYNAMIC_SHARED_SIZE_BYTES).  Plain or as a
// programmatic dependent launch (PROGRAMMATIC_STREAM_SERIALIZATION): the
// kernel waits for the previous kernel's end itself (griddepcontrol.wait)
// after its set-up, and triggers the next once its copies are queued.
//
// Kernels: ga_gemm_sm90_<BM>x<BN>x<BK>_<in>_<la><lb>
//   BM x BN   THREADS  SMEM (B)  stages  instantiated for
//   128x256   384      218192    4       f16, bf16 x {kn,kk,mn,mk} (BK 64); tf32 kk (BK 32)
//   128x128   384      218224    6       f16, bf16 x {kn,kk,mn,mk};          tf32 kk
//   128x64    384      218256    8       f16, bf16 x {kn,kk,mn,mk};          tf32 kk
//   64x128    256      208016    8       f16, bf16 x {kn,kk,mn,mk}
//   64x64     256      224480    13      f16, bf16 x {kn,kk,mn,mk}
//   64x32     256      208144    16      f16, bf16 x {kn,kk,mn,mk};          tf32 kk
// (SMEM and stages are the same for tf32, whose K-tile is also 128 bytes.)
//
// Alignment (the copy engine's rules): a and b 16-byte aligned; the leading
// stride of each operand (a_m for A "k", a_k for A "m", b_k for B "n", b_n
// for B "k") and batch_a, batch_b times the element size multiples of 16
// bytes (fp16/bf16: multiples of 8 elements; fp32: of 4).  C and bias: none
// (the 16-byte store path is taken when c is 16-byte aligned and ldc and
// batch_c are multiples of 16 bytes, else the general one).
//
// Tensor maps (cuTensorMapEncodeTiled), rank 3, innermost first; element
// strides 1, 1, 1; interleave NONE; L2 promotion 256B; oobFill NONE (zeros).
// Data type FLOAT16 / BFLOAT16; for tf32, TFLOAT32 (the copy engine rounds
// fp32 to tf32 to nearest; FLOAT32 also works but wgmma then truncates,
// about twice the error).  nb = batch * kbatch data batches, or 1 when the
// operand's batch stride is 0 (broadcast: the kernel then reads batch 0;
// the dim-2 stride must still be a valid multiple of 16).  esz = element size.
//   A "k": dims {K, M, nb}, strides {a_m * esz, batch_a * esz},
//          box {BK, BM, 1} (BK = 64 fp16/bf16, 32 tf32), swizzle 128B
//   A "m": dims {M, K, nb}, strides {a_k * esz, batch_a * esz},
//          box {64, 64, 1}, swizzle 128B (BM / 64 copies per stage)
//   B "n": dims {N, K, nb}, strides {b_k * esz, batch_b * esz},
//          box {64, 64, 1}, swizzle 128B (BN / 64 copies per stage);
//          BN = 32: box {32, 64, 1}, swizzle 64B
//   B "k": dims {K, N, nb}, strides {b_n * esz, batch_b * esz},
//          box {BK, BN, 1}, swizzle 128B
//   C (p.tmap_c, flags & EPI_TMA_C; a 16-bit C): dims {N, M, batch},
//          strides {ldc * 2, batch_c * 2}, box {32, 64, 1}, swizzle 64B;
//          the copy engine stores it (no zero fill: clipped at M and N)
//
// Shared-memory operand layouts, as wgmma descriptors see them: K-major
// tiles are rows of 128 bytes, 8-row swizzle atoms 1024 bytes apart (SBO);
// a K step of 16 (tf32: 8) elements is +32 bytes on the start address.
// MN-major tiles are 64-element (128-byte) column panels 8 KB apart (LBO),
// each K row 128 bytes, 8-row atoms 1024 bytes apart (SBO); a K step is
// +2048 bytes.  The 64B-swizzled B panel of BN = 32 has 64-byte rows
// (SBO 512, K step +1024).
#include "gemm_sm90.cuh"

#define GA_SM90_KERNEL(BM, BN, BK, IN, TY, LA, LB, LAYOUT)                                              \
    extern "C" __global__ void __launch_bounds__(GaSm90Cfg<BM, BN, IN>::THREADS, 1)                    \
        ga_gemm_sm90_##BM##x##BN##x##BK##_##TY##_##LAYOUT(const __grid_constant__ GemmArgs p) {          \
        ga_gemm_sm90<BM, BN, IN, LA, LB>(p);                                                            \
    }
#define GA_SM90_LAYOUTS(BM, BN, IN, TY)                                  \
    GA_SM90_KERNEL(BM, BN, 64, IN, TY, GA_MAJOR_K, GA_MAJOR_MN, kn)      \
    GA_SM90_KERNEL(BM, BN, 64, IN, TY, GA_MAJOR_K, GA_MAJOR_K, kk)       \
    GA_SM90_KERNEL(BM, BN, 64, IN, TY, GA_MAJOR_MN, GA_MAJOR_MN, mn)     \
    GA_SM90_KERNEL(BM, BN, 64, IN, TY, GA_MAJOR_MN, GA_MAJOR_K, mk)
#define GA_SM90_SHAPES(IN, TY)         \
    GA_SM90_LAYOUTS(128, 256, IN, TY)  \
    GA_SM90_LAYOUTS(128, 128, IN, TY)  \
    GA_SM90_LAYOUTS(128, 64, IN, TY)   \
    GA_SM90_LAYOUTS(64, 128, IN, TY)   \
    GA_SM90_LAYOUTS(64, 64, IN, TY)    \
    GA_SM90_LAYOUTS(64, 32, IN, TY)

GA_SM90_SHAPES(GA_IN_F16, f16)
GA_SM90_SHAPES(GA_IN_BF16, bf16)
GA_SM90_KERNEL(128, 256, 32, GA_IN_TF32, tf32, GA_MAJOR_K, GA_MAJOR_K, kk)
GA_SM90_KERNEL(128, 128, 32, GA_IN_TF32, tf32, GA_MAJOR_K, GA_MAJOR_K, kk)
GA_SM90_KERNEL(128, 64, 32, GA_IN_TF32, tf32, GA_MAJOR_K, GA_MAJOR_K, kk)
GA_SM90_KERNEL(64, 32, 32, GA_IN_TF32, tf32, GA_MAJOR_K, GA_MAJOR_K, kk)
