// gemm_sm80.cu: GEMM on the Ampere tensor-core path (mma.sync, cp.async).
//
// What it computes: C = relu(alpha * A @ B + bias) + beta * C per the ABI of
// gemm_common.cuh (or, with split-K, raw fp32 partial sums), with fp32
// accumulation.  Inputs fp16 or bf16 (mma m16n8k16) or fp32 rounded to tf32
// (cvt.rna, mma m16n8k8).  This is the library's GEMM on sm_80/86/89 and
// the fallback on Hopper for what the TMA/wgmma kernels cannot take
// (unaligned operands, odd leading dimensions, tf32 outside "kk").
//
// Layouts: one variant per layout suffix _<la><lb>: A "k" (a_k == 1) or "m"
// (a_m == 1), B "n" (b_n == 1) or "k" (b_k == 1).  Each operand tile is kept
// in shared memory the way it lies in global memory (rows along the strided
// dimension, the unit-stride dimension contiguous), so every global load is
// a straight copy; the transposition the tensor cores need is done by
// ldmatrix (.trans where the contiguous dimension is m or n) for 16-bit
// inputs, and by the choice of words each lane reads for tf32.
//   * ga_gemm_sm80_*  (aligned): 16-byte cp.async into a 4-stage (16-bit) or
//     3-stage (tf32) ring; partial 16-byte chunks at the ragged end of the
//     contiguous dimension read only their valid bytes (cp.async src-size)
//     and zero-fill the rest, so nothing past the operand is touched.
//   * ga_gemm_sm80u_* (unaligned): element-wise bounds-checked loads for any
//     pointer and any strides (the unit stride is read from GemmArgs too, so
//     even a view with no unit stride is correct, only slower), held in
//     registers while the previous K-tile is multiplied, then stored to a
//     2-stage ring.
// Shared memory rows of 16-bit tiles are padded by 16 bytes: ldmatrix reads
// 8 rows of 16 bytes, and an 80- or (BM+8)*2-byte row pitch puts those 8
// rows in 8 different 4-bank groups.  tf32 tiles are not padded (so that 3
// stages of 128x128 fit the 99 KB an sm_86/89 block may have) but swizzled:
// 16-byte chunk j of row r is stored at j ^ (r & 7) (k contiguous, 8 chunks a
// row) or j ^ 2 * (r & 3) (m/n contiguous), which makes the 32 words of each
// fragment read by a warp fall in 32 different banks.
//
// Parameters (cuDNN names): M, N, K, batch, kbatch, splits as GemmArgs.
// Block tile BM x BN x 32; warps 2 x (BN / 32), each a (BM / 2) x 32 tile.
//
// Launch shape: grid (G, 1, 1) for any G >= 1 (each block loops over tiles
// t = blockIdx.x, + gridDim.x, ...), block (THREADS, 1, 1), dynamic shared
// memory SMEM bytes (over 48 KB needs cuFuncSetAttribute; sm_80 allows a
// block 163 KB, sm_86/89 99 KB, sm_90 227 KB: every kernel here fits 99 KB).
//
// Alignment of the aligned (sm80) variants, in elements of the input type
// (E = 8 for f16/bf16, 4 for tf32, i.e. 16 bytes): a and b 16-byte aligned;
// the strided leading dimension (a_m for "k", a_k for "m"; b_k for "n", b_n
// for "k") and batch_a, batch_b multiples of E; the unit stride exactly 1.
// M, N, K and C need nothing (C is written element by element through
// gemm_output, staged in shared memory so that a warp stores 32 adjacent n
// of a row).  The sm80u variants need nothing at all.
//
// Occupancy (registers from ptxas 13.0): the aligned 128x128 f16/bf16 kernels
// and tf32 kn/kk use <= 128 registers, so 2 blocks fit an SM on sm_80 and
// sm_90 (1 on sm_86/89 for shared memory); sm80u 128x128 and tf32 mn/mk on
// sm_90 use 160-200 (1 block).  64x64: 70-170 registers, 3+ blocks.
//
// Kernels (SMEM in bytes; <lay> in kn, kk, mn, mk; same THREADS for all):
//   name                                   THREADS  SMEM kn/kk/mn/mk
//   ga_gemm_sm80_128x128x32_f16_<lay>        256    75776/81920/69632/75776
//   ga_gemm_sm80_128x128x32_bf16_<lay>       256    75776/81920/69632/75776
//   ga_gemm_sm80_128x128x32_tf32_<lay>       256    98304 (all layouts)
//   ga_gemm_sm80_64x64x32_f16_<lay>          128    38912/40960/36864/38912
//   ga_gemm_sm80_64x64x32_bf16_<lay>         128    38912/40960/36864/38912
//   ga_gemm_sm80_64x64x32_tf32_<lay>         128    49152 (all layouts)
//   ga_gemm_sm80u_128x128x32_f16_<lay>       256    37888/40960/34816/37888
//   ga_gemm_sm80u_128x128x32_bf16_<lay>      256    37888/40960/34816/37888
//   ga_gemm_sm80u_128x128x32_tf32_<lay>      256    65536 (all layouts)
//   ga_gemm_sm80u_64x64x32_f16_<lay>         128    19456/20480/18432/19456
//   ga_gemm_sm80u_64x64x32_bf16_<lay>        128    19456/20480/18432/19456
//   ga_gemm_sm80u_64x64x32_tf32_<lay>        128    32768 (all layouts)
// (SMEM = stages * (A tile + B tile); a 16-bit tile with k contiguous is
// rows * 80 bytes, one with m/n contiguous 32 * (BM + 8) * 2; a tf32 tile is
// BM * 32 * 4; sm80::Cfg::SMEM is the formula.)
#include "gemm_common.cuh"
#include "sm80_ptx.cuh"

#define SM80_K 0   // operand contiguous along k
#define SM80_MN 1  // operand contiguous along m (A) or n (B)

namespace sm80 {

// Raw storage of an input element (loaded and stored as bits, never converted
// on the way to shared memory).
template <int IN> struct Raw { typedef unsigned short type; };
template <> struct Raw<SM80_TF32> { typedef unsigned type; };

// One operand tile in shared memory: ROWS rows (the strided dimension) of
// COLS elements (the unit-stride dimension).  KC: the contiguous dimension
// is k (COLS == BK).
template <int IN, int ROWS, int COLS, bool KC> struct Tile {
    static constexpr bool WIDE = IN == SM80_TF32;
    static constexpr int ESZ = WIDE ? 4 : 2;
    static constexpr int VEC = 16 / ESZ;                  // elements per 16-byte chunk
    static constexpr int PITCH = WIDE ? COLS : COLS + 8;  // elements per row
    static constexpr int BYTES = ROWS * PITCH * ESZ;
    static constexpr int ROWS_ = ROWS, COLS_ = COLS;
    static_assert(!WIDE || (KC ? COLS == 32 : COLS >= 32), "tf32 swizzle needs 8 chunks a row");
    // element offset of (row, col)
    static GA_D int at(int row, int col) {
        if (!WIDE) return row * PITCH + col;
        int sw = KC ? (row & 7) : ((row & 3) << 1);
        return row * PITCH + (((col >> 2) ^ sw) << 2) + (col & 3);
    }
};

// The block tile, its warps and its shared memory ring.
template <int BM_, int BN_, int IN_, int LA_, int LB_, bool AL_> struct Cfg {
    static constexpr int BM = BM_, BN = BN_, BK = 32, IN = IN_, LA = LA_, LB = LB_;
    static constexpr bool ALIGNED = AL_;
    static constexpr int WARPS_N = BN / 32, THREADS = 64 * WARPS_N;
    static constexpr int WTM = BM / 2, WTN = 32;  // warp tile
    static constexpr int MI = WTM / 16, NI = WTN / 8;
    static constexpr int KSTEP = IN == SM80_TF32 ? 8 : 16;
    static constexpr int STAGES = !ALIGNED ? 2 : IN == SM80_TF32 ? 3 : 4;
    typedef Tile<IN, LA == SM80_K ? BM : BK, LA == SM80_K ? BK : BM, LA == SM80_K> TA;
    typedef Tile<IN, LB == SM80_K ? BN : BK, LB == SM80_K ? BK : BN, LB == SM80_K> TB;
    static constexpr int STAGE_BYTES = TA::BYTES + TB::BYTES;
    static constexpr int SMEM = STAGES * STAGE_BYTES;
    static_assert(THREADS == 2 * WARPS_N * 32 && BM % 32 == 0, "tile shape");
};

// ---- global -> shared, 16-byte cp.async (aligned variants) ------------------
// Tile rows s0.. of ext_s valid, columns c0.. of ext_c valid; row pitch ld.
template <class T, int THREADS, class R>
GA_D void load_async(unsigned dst, const R *base, long long ld, int s0, int ext_s, int c0, int ext_c, int tid) {
    constexpr int CPR = T::COLS_ / T::VEC;
    constexpr int RSTEP = THREADS / CPR, N = T::ROWS_ / RSTEP;
    static_assert(THREADS % CPR == 0 && T::ROWS_ % RSTEP == 0, "load shape");
    const int cc = tid % CPR, r = tid / CPR;
    const int c = c0 + cc * T::VEC;
    const int nbytes = min(max(ext_c - c, 0), T::VEC) * T::ESZ;
    const R *src = base + (long long)(s0 + r) * ld + c;
#pragma unroll
    for (int i = 0; i < N; ++i) {
        int bytes = s0 + r + i * RSTEP < ext_s ? nbytes : 0;
        cp_async16(dst + T::at(r + i * RSTEP, cc * T::VEC) * T::ESZ, bytes ? src + i * RSTEP * ld : base, bytes);
    }
}

// ---- global -> registers -> shared (unaligned variants) -------------------
template <class T, int THREADS, class R> struct RegTile {
    static constexpr int RSTEP = THREADS / T::COLS_, N = T::ROWS_ / RSTEP;
    static_assert(THREADS % T::COLS_ == 0 && T::ROWS_ % RSTEP == 0, "load shape");
    R v[N];
    GA_D void load(const R *base, long long ld_s, long long ld_c, int s0, int ext_s, int c0, int ext_c, int tid) {
        const int c = c0 + tid % T::COLS_, r = tid / T::COLS_;
        const bool okc = c < ext_c;
        const R *src = base + (long long)(s0 + r) * ld_s + (long long)c * ld_c;
        const long long step = RSTEP * ld_s;
#pragma unroll
        for (int i = 0; i < N; ++i, src += step) v[i] = okc && s0 + r + i * RSTEP < ext_s ? *src : (R)0;
    }
    GA_D void store(R *dst, int tid) const {
        const int cc = tid % T::COLS_, r = tid / T::COLS_;
#pragma unroll
        for (int i = 0; i < N; ++i) dst[T::at(r + i * RSTEP, cc)] = v[i];
    }
};

template <class C> struct Kernel {
    // Epilogue staging: per warp 16 x 32 fp32, rows 40 words apart so that
    // both the paired fragment writes and the row reads are conflict-free.
    static constexpr int EPI_PITCH = 40;
    static_assert(C::SMEM >= C::THREADS / 32 * 16 * EPI_PITCH * 4, "epilogue staging fits");
    typedef typename Raw<C::IN>::type R;
    typedef typename C::TA SA;
    typedef typename C::TB SB;

    // Operand geometry of K-tile kt for tile g: pointers and (strided,
    // contiguous) origins and extents.
    struct Src {
        const R *a, *b;
        long long lda_s, lda_c, ldb_s, ldb_c;
        int as0, aext_s, ac0, aext_c, bs0, bext_s, bc0, bext_c;
    };
    static GA_D Src source(const GemmArgs &p, const GemmTile &g, int kt) {
        int db, k0;
        gemm_k_tile(p, g.ob, kt, C::BK, &db, &k0);
        Src s;
        s.a = (const R *)p.a + db * p.batch_a;
        s.b = (const R *)p.b + db * p.batch_b;
        const int m0 = g.tm * C::BM, n0 = g.tn * C::BN;
        if (C::LA == SM80_K) {
            s.lda_s = p.a_m; s.lda_c = p.a_k; s.as0 = m0; s.aext_s = p.M; s.ac0 = k0; s.aext_c = p.K;
        } else {
            s.lda_s = p.a_k; s.lda_c = p.a_m; s.as0 = k0; s.aext_s = p.K; s.ac0 = m0; s.aext_c = p.M;
        }
        if (C::LB == SM80_K) {
            s.ldb_s = p.b_n; s.ldb_c = p.b_k; s.bs0 = n0; s.bext_s = p.N; s.bc0 = k0; s.bext_c = p.K;
        } else {
            s.ldb_s = p.b_k; s.ldb_c = p.b_n; s.bs0 = k0; s.bext_s = p.K; s.bc0 = n0; s.bext_c = p.N;
        }
        return s;
    }

    static GA_D void load_stage(const GemmArgs &p, const GemmTile &g, int kt, unsigned stage, int tid) {
        Src s = source(p, g, kt);
        load_async<SA, C::THREADS>(stage, s.a, s.lda_s, s.as0, s.aext_s, s.ac0, s.aext_c, tid);
        load_async<SB, C::THREADS>(stage + SA::BYTES, s.b, s.ldb_s, s.bs0, s.bext_s, s.bc0, s.bext_c, tid);
    }

    // Multiply one shared-memory stage into acc.
    static GA_D void compute(float (&acc)[C::MI][C::NI][4], const unsigned char *stage, int wm, int wn, int lane) {
        if (C::IN == SM80_TF32) {
            const unsigned *As = (const unsigned *)stage, *Bs = (const unsigned *)(stage + SA::BYTES);
            const int g = lane >> 2, t = lane & 3;
#pragma unroll
            for (int ks = 0; ks < C::BK; ks += C::KSTEP) {
                unsigned a[C::MI][4], b[C::NI][2];
#pragma unroll
                for (int i = 0; i < C::MI; ++i) {
                    const int m = wm + i * 16 + g, k = ks + t;
#pragma unroll
                    for (int h = 0; h < 4; ++h) {
                        const int mm = m + (h & 1) * 8, kk = k + (h >> 1) * 4;
                        a[i][h] = to_tf32(As[C::LA == SM80_K ? SA::at(mm, kk) : SA::at(kk, mm)]);
                    }
                }
#pragma unroll
                for (int j = 0; j < C::NI; ++j) {
                    const int n = wn + j * 8 + g, k = ks + t;
#pragma unroll
                    for (int h = 0; h < 2; ++h)
                        b[j][h] = to_tf32(Bs[C::LB == SM80_K ? SB::at(n, k + h * 4) : SB::at(k + h * 4, n)]);
                }
#pragma unroll
                for (int i = 0; i < C::MI; ++i)
#pragma unroll
                    for (int j = 0; j < C::NI; ++j) mma<C::IN>(acc[i][j], a[i], b[j][0], b[j][1]);
            }
        } else {
            const unsigned sa = smem_u32(stage), sb = sa + SA::BYTES;
            const int q = lane >> 3, r = lane & 7;
            // per-lane element offsets of the ldmatrix row addresses
            const int a_lane = C::LA == SM80_K ? (wm + (lane & 15)) * SA::PITCH + (lane >> 4) * 8
                                               : ((q >> 1) * 8 + r) * SA::PITCH + wm + (q & 1) * 8;
            const int b_lane = C::LB == SM80_K ? (wn + (q >> 1) * 8 + r) * SB::PITCH + (q & 1) * 8
                                               : ((q & 1) * 8 + r) * SB::PITCH + wn + (q >> 1) * 8;
#pragma unroll
            for (int ks = 0; ks < C::BK; ks += C::KSTEP) {
                unsigned a[C::MI][4], b[C::NI / 2][4];
#pragma unroll
                for (int i = 0; i < C::MI; ++i) {
                    if (C::LA == SM80_K) ldsm_x4(sa + (a_lane + i * 16 * SA::PITCH + ks) * 2, a[i]);
                    else ldsm_x4_t(sa + (a_lane + ks * SA::PITCH + i * 16) * 2, a[i]);
                }
#pragma unroll
                for (int j = 0; j < C::NI / 2; ++j) {
                    if (C::LB == SM80_K) ldsm_x4(sb + (b_lane + j * 16 * SB::PITCH + ks) * 2, b[j]);
                    else ldsm_x4_t(sb + (b_lane + ks * SB::PITCH + j * 16) * 2, b[j]);
                }
#pragma unroll
                for (int i = 0; i < C::MI; ++i)
#pragma unroll
                    for (int j = 0; j < C::NI; ++j)
                        mma<C::IN>(acc[i][j], a[i], b[j >> 1][(j & 1) * 2], b[j >> 1][(j & 1) * 2 + 1]);
            }
        }
    }

    // K-tiles [t0, t1) through the cp.async ring.
    static GA_D void mainloop_async(const GemmArgs &p, const GemmTile &g, int t0, int t1,
                                    float (&acc)[C::MI][C::NI][4], unsigned char *smem, int wm, int wn) {
        const int tid = threadIdx.x;
        const unsigned base = smem_u32(smem);
#pragma unroll
        for (int s = 0; s < C::STAGES - 1; ++s) {
            if (t0 + s < t1) load_stage(p, g, t0 + s, base + s * C::STAGE_BYTES, tid);
            cp_async_commit();
        }
        int rd = 0, wr = C::STAGES - 1;
        for (int kt = t0; kt < t1; ++kt) {
            cp_async_wait<C::STAGES - 2>();
            __syncthreads();  // stage rd landed for all threads; stage wr (read last iteration) is free
            if (kt + C::STAGES - 1 < t1) load_stage(p, g, kt + C::STAGES - 1, base + wr * C::STAGE_BYTES, tid);
            cp_async_commit();
            compute(acc, smem + rd * C::STAGE_BYTES, wm, wn, tid & 31);
            rd = rd == C::STAGES - 1 ? 0 : rd + 1;
            wr = wr == C::STAGES - 1 ? 0 : wr + 1;
        }
    }

    // K-tiles [t0, t1) through registers and two shared stages.
    static GA_D void mainloop_regs(const GemmArgs &p, const GemmTile &g, int t0, int t1,
                                   float (&acc)[C::MI][C::NI][4], unsigned char *smem, int wm, int wn) {
        const int tid = threadIdx.x;
        RegTile<SA, C::THREADS, R> ra;
        RegTile<SB, C::THREADS, R> rb;
        if (t0 < t1) {
            Src s = source(p, g, t0);
            ra.load(s.a, s.lda_s, s.lda_c, s.as0, s.aext_s, s.ac0, s.aext_c, tid);
            rb.load(s.b, s.ldb_s, s.ldb_c, s.bs0, s.bext_s, s.bc0, s.bext_c, tid);
        }
        for (int kt = t0; kt < t1; ++kt) {
            unsigned char *stage = smem + ((kt - t0) & 1) * C::STAGE_BYTES;
            // this stage was last read two iterations ago, before the barrier
            // of the previous iteration
            ra.store((R *)stage, tid);
            rb.store((R *)(stage + SA::BYTES), tid);
            __syncthreads();
            if (kt + 1 < t1) {
                Src s = source(p, g, kt + 1);
                ra.load(s.a, s.lda_s, s.lda_c, s.as0, s.aext_s, s.ac0, s.aext_c, tid);
                rb.load(s.b, s.ldb_s, s.ldb_c, s.bs0, s.bext_s, s.bc0, s.bext_c, tid);
            }
            compute(acc, stage, wm, wn, tid & 31);
        }
    }

    static GA_D void run(const GemmArgs &p) {
        extern __shared__ __align__(128) unsigned char smem[];
        const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
        const int wm = (warp / C::WARPS_N) * C::WTM, wn = (warp % C::WARPS_N) * C::WTN;
        GemmEpi st = gemm_epi_init(p);
        const int total = gemm_tiles_total(p, C::BM, C::BN);
        for (int t = blockIdx.x; t < total; t += gridDim.x) {
            const GemmTile g = gemm_tile(p, t, C::BM, C::BN);
            float acc[C::MI][C::NI][4];
#pragma unroll
            for (int i = 0; i < C::MI; ++i)
#pragma unroll
                for (int j = 0; j < C::NI; ++j)
#pragma unroll
                    for (int h = 0; h < 4; ++h) acc[i][j][h] = 0.f;
            int t0, t1;
            gemm_k_range(p, g.split, C::BK, &t0, &t1);
            if (C::ALIGNED) mainloop_async(p, g, t0, t1, acc, smem, wm, wn);
            else mainloop_regs(p, g, t0, t1, acc, smem, wm, wn);
            __syncthreads();  // all warps are done with the stages before the epilogue reuses them

            // The epilogue goes through shared memory, 16 rows of the warp
            // tile at a time: the lanes then write 32 adjacent n of one row
            // (coalesced), and gemm_output is inlined once rather than once
            // per accumulator (which costs minutes of ptxas time and spills).
            float *ws = (float *)smem + warp * (16 * EPI_PITCH);
            const int mw = g.tm * C::BM + wm, n = g.tn * C::BN + wn + lane;
#pragma unroll 1
            for (int i = 0; i < C::MI; ++i) {
#pragma unroll
                for (int ii = 0; ii < C::MI; ++ii) {
                    if (ii != i) continue;
#pragma unroll
                    for (int j = 0; j < C::NI; ++j)
#pragma unroll
                        for (int h = 0; h < 2; ++h)
                            *(float2 *)(ws + ((lane >> 2) + h * 8) * EPI_PITCH + j * 8 + (lane & 3) * 2) =
                                make_float2(acc[ii][j][2 * h], acc[ii][j][2 * h + 1]);
                }
                __syncwarp();
#pragma unroll 1
                for (int r = 0; r < 16; ++r) gemm_output(p, g, mw + i * 16 + r, n, ws[r * EPI_PITCH + lane], st);
                __syncwarp();
            }
            __syncthreads();  // the staging area overlaps the next tile's first stages
        }
        gemm_epi_flush(p, st);
    }
};

}  // namespace sm80

#define SM80_KERNEL(PFX, BM, BN, NT, IN, INNAME, LA, LB, LAY, AL)                              \
    extern "C" __global__ void __launch_bounds__(NT)                                           \
        ga_gemm_##PFX##_##BM##x##BN##x32_##INNAME##_##LAY(const __grid_constant__ GemmArgs p) { \
        typedef sm80::Cfg<BM, BN, IN, LA, LB, AL> C;                                            \
        static_assert(C::THREADS == NT, "threads");                                             \
        sm80::Kernel<C>::run(p);                                                                \
    }

#define SM80_LAYOUTS(PFX, BM, BN, NT, IN, INNAME, AL)                  \
    SM80_KERNEL(PFX, BM, BN, NT, IN, INNAME, SM80_K, SM80_MN, kn, AL)  \
    SM80_KERNEL(PFX, BM, BN, NT, IN, INNAME, SM80_K, SM80_K, kk, AL)   \
    SM80_KERNEL(PFX, BM, BN, NT, IN, INNAME, SM80_MN, SM80_MN, mn, AL) \
    SM80_KERNEL(PFX, BM, BN, NT, IN, INNAME, SM80_MN, SM80_K, mk, AL)

#define SM80_TYPES(PFX, BM, BN, NT, AL)                \
    SM80_LAYOUTS(PFX, BM, BN, NT, SM80_F16, f16, AL)   \
    SM80_LAYOUTS(PFX, BM, BN, NT, SM80_BF16, bf16, AL) \
    SM80_LAYOUTS(PFX, BM, BN, NT, SM80_TF32, tf32, AL)

SM80_TYPES(sm80, 128, 128, 256, true)
SM80_TYPES(sm80, 64, 64, 128, true)
SM80_TYPES(sm80u, 128, 128, 256, false)
SM80_TYPES(sm80u, 64, 64, 128, false)
