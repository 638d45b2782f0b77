// gemm_splitk.cu: the second pass of a split-K GEMM.
//
// What it computes: for every output element (ob, m, n), the sum over the
// K-splits of the fp32 partial sums that the main kernel stored, finished
// by the shared epilogue (gemm_finish: the FP8 scales, alpha, bias, relu,
// beta * C, the amax and output scale, rounding to C's type -- an FP8 C
// only in the sm_90 code, whose cvt instructions it needs -- statistics).
//
// Layouts: partial is [splits][batch][M][N] fp32, row-major; C as in
// gemm_common.cuh (row-major, ldc, batch_c).
//
// Parameters: the main kernel's GemmArgs (M, N, batch, splits; the operand
// fields are unused).
//
// Launch shape: grid (G, 1, 1) with any G >= 1, block (256, 1, 1), no
// shared memory.  Threads walk the batch * M * N outputs grid-stride, four
// consecutive n at a time, so a warp reads 512 contiguous bytes of each
// split's slab.
//
// Kernels: ga_gemm_splitk_reduce (256 threads, 0 B shared memory, no
// alignment needs).
#include "gemm_common.cuh"

#define SPLITK_THREADS 256
#define SPLITK_VEC 4

extern "C" __global__ void __launch_bounds__(SPLITK_THREADS)
ga_gemm_splitk_reduce(const __grid_constant__ GemmArgs p) {
    GemmEpi st = gemm_epi_init(p);
    long long slab = (long long)p.batch * p.M * p.N;
    long long row_groups = (p.N + SPLITK_VEC - 1) / SPLITK_VEC;
    long long groups = (long long)p.batch * p.M * row_groups;
    for (long long g = blockIdx.x * (long long)blockDim.x + threadIdx.x; g < groups;
         g += (long long)gridDim.x * blockDim.x) {
        long long row = g / row_groups;
        int n0 = (int)(g - row * row_groups) * SPLITK_VEC;
        int ob = (int)(row / p.M), m = (int)(row - (long long)ob * p.M);
        const float *src = p.partial + row * p.N + n0;
        float sum[SPLITK_VEC] = {0.f, 0.f, 0.f, 0.f};
        int width = min(SPLITK_VEC, p.N - n0);
        for (int s = 0; s < p.splits; ++s) {
            #pragma unroll
            for (int j = 0; j < SPLITK_VEC; ++j)
                if (j < width) sum[j] += src[s * slab + j];
        }
        #pragma unroll
        for (int j = 0; j < SPLITK_VEC; ++j)
            if (j < width) gemm_finish(p, ob, m, n0 + j, sum[j], st);
    }
    gemm_epi_flush(p, st);
}
