// conv_small_c_grads.cuh: conv_small_c.cu's gradients -- the filter
// gradient's partial sums per block of positions and their deterministic
// reduction (update, reduce), and the data gradient by phases of the
// stride (bprop).
//
// In: SmallCArgs (update, reduce: I, E) and SmallCBpropArgs (bprop: F, E);
// out: the partial sums then grad_F, and grad_I.  Layouts, the algorithms
// and the launch shapes: conv_small_c.cu's header.  No kernel is defined
// here.
#pragma once
#include "conv_small_c_common.cuh"

// -- update ---------------------------------------------------------------------

// Stage the errors of positions m0 .. m0 + 127 of image n, filters of K chunk
// kchunk, as [128][SC_EP] (zeros past P*Q and K)
template <typename T>
__device__ void stage_errors(const SmallCArgs &a, int n, int m0, int kchunk, T *es) {
    const T *E = reinterpret_cast<const T *>(a.B);
    const int PQ = a.P * a.Q;
    for (int i = threadIdx.x; i < SC_BM * (SC_BK / 8); i += SC_THREADS) {
        int m = i / (SC_BK / 8), k = (i % (SC_BK / 8)) * 8, kg = kchunk * SC_BK + k;
        bool inside = m0 + m < PQ && kg < a.K;
        const T *src = inside ? E + ((long long)n * PQ + m0 + m) * a.ld + kg : E;
        sm80::cp_async16(sm80::smem_u32(es + m * SC_EP + k), src, inside ? 16 : 0);
    }
}

// One 16-position k-step: A = E^T (4 m16 tiles of filters), B = im2col (NJ n8 tiles)
template <typename T, int NJ, bool PARTIAL>
__device__ __forceinline__ void update_step(float (&acc)[4][NJ][4], uint32_t a_addr,
                                            const unsigned short *halo, const int *rowtab,
                                            const int (&toff)[NJ], int step) {
    const int t = threadIdx.x % 4;
    uint32_t af[4][4];
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) sm80::ldsm_x4_t(a_addr + step * 16 * SC_EP * 2 + kt * 32, af[kt]);
    int2 lo = *reinterpret_cast<const int2 *>(rowtab + step * 16 + 2 * t);
    int2 hi = *reinterpret_cast<const int2 *>(rowtab + step * 16 + 2 * t + 8);
#pragma unroll
    for (int nt = 0; nt < NJ; ++nt) {
        const unsigned short *h = halo + toff[nt];
        uint32_t b0, b1;
        if (PARTIAL) {
            b0 = pack2(lo.x < 0 ? 0 : h[lo.x], lo.y < 0 ? 0 : h[lo.y]);
            b1 = pack2(hi.x < 0 ? 0 : h[hi.x], hi.y < 0 ? 0 : h[hi.y]);
        } else {
            b0 = pack2(h[lo.x], h[lo.y]);
            b1 = pack2(h[hi.x], h[hi.y]);
        }
#pragma unroll
        for (int kt = 0; kt < 4; ++kt) mma16816<T>(acc[kt][nt], af[kt], b0, b1);
    }
}

template <typename T, int NJ>
__device__ void small_c_update(const SmallCArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    T *halo = reinterpret_cast<T *>(smem);
    T *es = reinterpret_cast<T *>(smem + halo_bytes(a));
    int *rowtab = reinterpret_cast<int *>(es + SC_BM * SC_EP);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int PQ = a.P * a.Q, kchunk = blockIdx.z, jchunk = blockIdx.y;
    const int total = a.N * a.tiles;
    const int first = (int)((long long)blockIdx.x * total / a.blocks);
    const int last = (int)((long long)(blockIdx.x + 1) * total / a.blocks);

    // this thread's tap (column g) of each of its n8 tiles; taps past RSC
    // read tap 0 (their sums are dropped)
    int toff[NJ];
#pragma unroll
    for (int nt = 0; nt < NJ; ++nt)
        toff[nt] = max(tap_offset(a, jchunk * a.jw + (warp * NJ + nt) * 8 + g), 0);
    // ldmatrix.trans: lanes 0-7, 8-15, 16-23, 24-31 address staged rows of
    // (positions 0-7, filters 0-7), (0-7, 8-15), (8-15, 0-7), (8-15, 8-15)
    const uint32_t a_lane = sm80::smem_u32(es + ((lane / 16) * 8 + lane % 8) * SC_EP + ((lane / 8) % 2) * 8);
    const unsigned short *hs = reinterpret_cast<const unsigned short *>(halo);
    float acc[4][NJ][4] = {};
    for (int index = first; index < last; ++index) {
        int n = divide(a.by_tiles, index), tile = index - n * a.tiles, m0 = tile * SC_BM;
        __syncthreads();  // the previous tile's reads are done
        stage_errors(a, n, m0, kchunk, es);
        int p_first, rows;
        tile_rows(a, tile, p_first, rows);
        int m = m0 + threadIdx.x;
        rowtab[threadIdx.x] = m < PQ ? row_offset(a, m, p_first) : -1;
        load_halo(a, reinterpret_cast<const T *>(a.I) + (long long)n * a.H * a.W * a.C,
                  p_first * a.str_h - a.pad_h, rows, halo);  // (waits for the errors too)
        if (m0 + SC_BM <= PQ) {
#pragma unroll 2
            for (int step = 0; step < SC_BM / 16; ++step)
                update_step<T, NJ, false>(acc, a_lane, hs, rowtab, toff, step);
        } else {
            for (int step = 0; step < SC_BM / 16; ++step)
                update_step<T, NJ, true>(acc, a_lane, hs, rowtab, toff, step);
        }
    }
    // the block's partial sums: part[kchunk][jchunk][b][64][jw]
    float *part = reinterpret_cast<float *>(a.out) +
                  (((long long)kchunk * a.jchunks + jchunk) * a.blocks + blockIdx.x) * SC_BK * a.jw;
#pragma unroll
    for (int kt = 0; kt < 4; ++kt)
#pragma unroll
        for (int nt = 0; nt < NJ; ++nt) {
            int j = (warp * NJ + nt) * 8 + 2 * t, k = kt * 16 + g;
            *reinterpret_cast<float2 *>(part + k * a.jw + j) = make_float2(acc[kt][nt][0], acc[kt][nt][1]);
            *reinterpret_cast<float2 *>(part + (k + 8) * a.jw + j) =
                make_float2(acc[kt][nt][2], acc[kt][nt][3]);
        }
}

// grad_F[k, j] = alpha * sum_b part[..][b][k][j] + beta * grad_F[k, j]: a
// block takes 32 elements; SC_REDUCE_GROUPS threads an element each add
// every 8th block's sums, then one adds the groups' sums in order.
template <typename T>
__device__ void small_c_reduce(const SmallCArgs &a) {
    __shared__ float sums[SC_REDUCE_GROUPS][32];
    const int lane = threadIdx.x % 32, group = threadIdx.x / 32;
    const int e = blockIdx.x * 32 + lane, k = e / a.RSC, j = e - k * a.RSC;
    const bool inside = k < a.K;
    float sum = 0.f;
    if (inside) {
        int jchunk = j / a.jw, jl = j - jchunk * a.jw, kchunk = k / SC_BK, kl = k - kchunk * SC_BK;
        const float *p = reinterpret_cast<const float *>(a.out) +
                         ((long long)kchunk * a.jchunks + jchunk) * a.blocks * SC_BK * a.jw +
                         kl * a.jw + jl;
        for (int b = group; b < a.blocks; b += SC_REDUCE_GROUPS) sum += p[(long long)b * SC_BK * a.jw];
    }
    sums[group][lane] = sum;
    __syncthreads();
    if (group == 0 && inside) {
        float total = 0.f;
        for (int i = 0; i < SC_REDUCE_GROUPS; ++i) total += sums[i][lane];
        T *grad = reinterpret_cast<T *>(a.extra);
        float v = __fmul_rn((float)a.alpha, total);
        if (a.beta != 0.0) v = __fadd_rn(v, __fmul_rn((float)a.beta, to_f32(grad[e])));
        grad[e] = from_f32<T>(v);
    }
}

// -- bprop ----------------------------------------------------------------------

// Per phase a of one axis: its taps (r, error offset - lowest offset over
// all phases), in order, and their count
struct PhaseTaps {
    int2 tap[SC_MAX_STRIDE][SC_MAX_TAPS];
    int count[SC_MAX_STRIDE];
};

// Input position a + stride*h' takes filter row r where (a + pad - r*dil)
// % stride == 0, from error row h' + (a + pad - r*dil) / stride
__device__ void phase_taps(int stride, int pad, int extent, int dil, int lowest, PhaseTaps &out) {
    for (int a = threadIdx.x; a < stride; a += SC_THREADS) {
        int count = 0;
        for (int r = 0; r < extent; ++r) {
            int num = a + pad - r * dil;
            if (num % stride == 0) out.tap[a][count++] = make_int2(r, num / stride - lowest);
        }
        out.count[a] = count;
    }
}

// The whole filter into shared memory as [R*S][C][KP + 8], k contiguous
// (zeros past K): the B fragments of a tap are 4-byte loads
template <typename T>
__device__ void load_bprop_filters(const SmallCBpropArgs &a, T *fs) {
    const unsigned short *F = reinterpret_cast<const unsigned short *>(a.F);
    unsigned short *dst = reinterpret_cast<unsigned short *>(fs);
    const int ep = a.kp + 8, taps = a.R * a.S;
    for (int i = threadIdx.x; i < taps * a.C * ep; i += SC_THREADS) {
        int k = i % ep, rest = i / ep, c = rest % a.C, tap = rest / a.C;
        dst[i] = k < a.K ? F[((long long)k * taps + tap) * a.C + c] : 0;
    }
}

// Stage the errors of tile (n, h0, w0): rows h0 + dr_lo .., columns w0 + ds_lo ..
// of all phases, [halo_rows][halo_cols][KP + 8] (zeros outside E and past K)
template <typename T>
__device__ void stage_bprop_errors(const SmallCBpropArgs &a, int n, int h0, int w0, T *halo) {
    const T *E = reinterpret_cast<const T *>(a.E);
    const int ep = a.kp + 8, pieces = a.kp / 8;
    for (int i = threadIdx.x; i < a.halo_rows * a.halo_cols * pieces; i += SC_THREADS) {
        int cell = divide(a.by_pieces, i), piece = i - cell * pieces;
        int hr = divide(a.by_halo_cols, cell), hc = cell - hr * a.halo_cols;
        int p = h0 + a.dr_lo + hr, q = w0 + a.ds_lo + hc, k = piece * 8;
        bool inside = (unsigned)p < (unsigned)a.P && (unsigned)q < (unsigned)a.Q && k < a.K;
        const T *src = inside ? E + (((long long)n * a.P + p) * a.Q + q) * a.ld + k : E;
        sm80::cp_async16(sm80::smem_u32(halo + cell * ep + k), src, inside ? 16 : 0);
    }
    cp_async_wait_all();
    __syncthreads();
}

// grad_I of the tile's positions of phase (ph_h, ph_w).  With dil_h = 1 a
// phase's filter rows read consecutive error rows (tap ir: offset
// y_0 - ir), so tile row i with tap jr = nr - 1 - ir reads staged row
// ybase + i + jr: each staged row's A fragment serves every (row, tap) pair
// that meets it -- 4 + nr - 1 ldmatrix for the warp's 4 rows x nr taps
// instead of 4 nr.
template <typename T, int NCG, int NR>
__device__ void bprop_phase(const SmallCBpropArgs &a, const PhaseTaps &taps_h, const PhaseTaps &taps_w,
                            int ph_h, int ph_w, int n, int h0, int w0, const T *halo, const T *fs) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    const int ep = a.kp + 8, nr = taps_h.count[ph_h];
    float acc[SC_WARP_ROWS][NCG][4] = {};
    if (nr > 0) {
        const int ybase = taps_h.tap[ph_h][nr - 1].y;  // the lowest offset: the last tap's
        // ldmatrix: lane l addresses staged row ybase + 4 warp (+ x), column l % 16
        // (+ the tap's), channels 8 (l / 16) on; B: filter channel 8 cg + g of
        // channel group cg (zeros past C)
        const uint32_t a_lane = sm80::smem_u32(halo + ((ybase + SC_WARP_ROWS * warp) * a.halo_cols + lane % 16) * ep +
                                          (lane / 16) * 8);
        const unsigned short *fb = reinterpret_cast<const unsigned short *>(fs) + 2 * t;
        for (int is = 0; is < taps_w.count[ph_w]; ++is) {
            int2 tw = taps_w.tap[ph_w][is];
            const uint32_t col = a_lane + tw.y * ep * 2;
#pragma unroll 2
            for (int k = 0; k < a.kp; k += 16) {
                uint32_t b[NR][NCG][2];
#pragma unroll
                for (int jr = 0; jr < NR; ++jr)
#pragma unroll
                    for (int cg = 0; cg < NCG; ++cg) {
                        const unsigned short *f =
                            fb + ((taps_h.tap[ph_h][max(nr - 1 - jr, 0)].x * a.S + tw.x) * a.C +
                                  min(8 * cg + g, a.C - 1)) * ep + k;
                        bool live = jr < nr && 8 * cg + g < a.C;
                        b[jr][cg][0] = live ? *reinterpret_cast<const uint32_t *>(f) : 0;
                        b[jr][cg][1] = live ? *reinterpret_cast<const uint32_t *>(f + 8) : 0;
                    }
#pragma unroll
                for (int x = 0; x < SC_WARP_ROWS + NR - 1; ++x) {
                    if (x >= SC_WARP_ROWS + nr - 1) break;
                    uint32_t af[4];
                    sm80::ldsm_x4(col + (x * a.halo_cols * ep + k) * 2, af);
#pragma unroll
                    for (int jr = 0; jr < NR; ++jr) {
                        int i = x - jr;
                        if (i >= 0 && i < SC_WARP_ROWS && jr < nr)
#pragma unroll
                            for (int cg = 0; cg < NCG; ++cg) mma16816<T>(acc[i][cg], af, b[jr][cg][0], b[jr][cg][1]);
                    }
                }
            }
        }
    }
    // grad_I = alpha * acc + beta * grad_I for channels 8 cg + 2t, + 1 < C
    T *grad = reinterpret_cast<T *>(a.dI);
    const float alpha = (float)a.alpha, beta = (float)a.beta;
#pragma unroll
    for (int i = 0; i < SC_WARP_ROWS; ++i)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
            int h = ph_h + a.str_h * (h0 + SC_WARP_ROWS * warp + i);
            int w = ph_w + a.str_w * (w0 + g + 8 * hi);
            if (h >= a.H || w >= a.W) continue;
            T *pixel = grad + (((long long)n * a.H + h) * a.W + w) * a.C;
#pragma unroll
            for (int ce = 0; ce < 2 * NCG; ++ce) {
                int cg = ce / 2, e = ce % 2, c = 8 * cg + 2 * t + e;
                if (c >= a.C) continue;
                float v = __fmul_rn(alpha, acc[i][cg][2 * hi + e]);
                if (a.beta != 0.0) v = __fadd_rn(v, __fmul_rn(beta, to_f32(pixel[c])));
                pixel[c] = from_f32<T>(v);
            }
        }
}

template <typename T, int NCG, int NR>
__device__ void small_c_bprop(const SmallCBpropArgs &a) {
    extern __shared__ __align__(16) unsigned char smem[];
    // all dynamic (static shared memory would count against the 48 KB a
    // launch may take without the host raising the limit)
    T *halo = reinterpret_cast<T *>(smem);
    T *fs = reinterpret_cast<T *>(smem + a.halo_rows * a.halo_cols * (a.kp + 8) * 2);
    PhaseTaps &taps_h = *reinterpret_cast<PhaseTaps *>(fs + a.R * a.S * a.C * (a.kp + 8));
    PhaseTaps &taps_w = (&taps_h)[1];
    phase_taps(a.str_h, a.pad_h, a.R, a.dil_h, a.dr_lo, taps_h);
    phase_taps(a.str_w, a.pad_w, a.S, a.dil_w, a.ds_lo, taps_w);
    load_bprop_filters(a, fs);
    const int per_image = a.tiles_h * a.tiles_w;
    for (int index = blockIdx.x; index < a.N * per_image; index += gridDim.x) {
        int n = divide(a.by_image_tiles, index), rest = index - n * per_image;
        int th = divide(a.by_tiles_w, rest), tw = rest - th * a.tiles_w;
        __syncthreads();  // the previous tile's reads are done (and the tables written)
        stage_bprop_errors(a, n, th * SC_TH, tw * SC_TW, halo);
        for (int ph_h = 0; ph_h < a.str_h; ++ph_h)
            for (int ph_w = 0; ph_w < a.str_w; ++ph_w)
                bprop_phase<T, NCG, NR>(a, taps_h, taps_w, ph_h, ph_w, n, th * SC_TH, tw * SC_TW, halo, fs);
    }
}
