// rnn_persist.cu: persistent recurrent kernels -- the recurrent weights stay in
// shared memory for the whole sequence; one launch runs every timestep.
//
// What it computes: cuDNN's recurrences (gate order and equations as
// gpuarray/rnn/cell.py, which is the reference), forward over t = 0..T-1
// (rnn_fprop) and backward over t = T-1..0 (rnn_bprop: the gradients of the
// projected input, of the recurrent pre-activations and of the initial
// states).  The weight gradient is one GEMM over the reserve afterwards
// (gpuarray/rnn/functions.py), not here.
//
//   relu/tanh  h = act(x + rec)                      rec = R h_prev + b  (G*H rows)
//   LSTM       i f g o = sig, sig, tanh, sig (x + rec);  c = f c_prev + i g;  h = o tanh(c)
//   GRU        r z = sig(x + rec);  n = tanh(x_n + r rec_n);  h = (1 - z) n + z h_prev
//
// Work split: block b owns the hidden units j in [b*U, b*U + U).  Forward it
// keeps the G*U rows of R that produce its units' gates (row g*H + j); backward
// it keeps the G*H x U columns of R that its units' h_prev gradients need
// (dh_prev[j] = sum_i drec[i] R[i][j]), transposed so that both passes walk
// their rows contiguously.  Each step the block reads the whole previous
// state (h_{t-1} forward, drec_{t+1} backward: N x L, through L2) in
// chunks of KC columns, forms its dot products, updates its units' cells and
// publishes its slice; a grid-wide barrier then ends the step.  The products
// run on tensor cores (mma.sync m16n8k16, fp32 accumulation) where the host
// asks (RnnArgs.tc: 16-bit types, H % 64 == 0), the state they read then
// published in the storage type; the others are fp32 FMAs (a warp per 2 rows
// and batches of 4, lanes striding 4 consecutive columns, a shuffle
// reduction) on fp32 state.  Only the block's own units' cell state (c, the GRU's
// bypass gradient) is needed across steps: it lives in shared memory.
//
// Layouts (row-major, contiguous): X and dX (T, N, G*H); W (G*H, H + 1), the
// recurrent weights with the bias as last column; Y and dY (T, N, H); the
// states (N, H); reserve fp32 (T, N, 2*G*H + 2*H): per position the gates
// after their nonlinearity, h, the extra value (LSTM c, GRU rec_n) and drec;
// hbuf fp32 (2, N, H), the published h of alternating steps forward (in T,
// packed, on tensor cores), and backward on tensor cores the published drec
// of alternating steps in T (2, N, G*H; absent otherwise); barrier one
// unsigned word, the grid barrier's arrivals, zero before the launch.  All of
// X, W, Y, the states, dX and dY are in the storage type T (float, __half,
// __nv_bfloat16), X optionally fp32 (RnnArgs.x_f32: a projection not rounded
// to T); the math and the reserve are fp32.  H % 8 == 0 (so that
// 4-column vectors never straddle a row's end and reserve rows are 16-byte
// aligned).
//
// Parameters: RnnArgs (rnn_common.cuh); null pointers for absent optional tensors
// (h0, c0, hy, cy, reserve forward; dh0, dc0, dhy, dcy backward -- backward
// needs the reserve).  The host (gpuarray/rnn/persistent.py) lays out the
// shared memory and passes the offsets.
//
// Launch shape: grid (ceil(H / U), 1, 1), block (256, 1, 1), the dynamic
// shared memory of the layout, launched cooperatively: every block must be
// resident at once for the grid barrier, which cuLaunchCooperativeKernel
// guarantees (or refuses the launch).
//
// Kernels: ga_rnn_{fprop,bprop}_{relu,tanh,gru,lstm}_{f32,f16,bf16}.
#include "rnn_grid.cuh"
#include "rnn_mma.cuh"

// acc = init + w . state for every row and batch: `src` is state row n at
// src + n * ld (fp32, in global memory, written by other blocks before the
// last barrier).
template <typename T>
__device__ Sums matvec(const T *w, int L, int rows, const float *src, size_t ld, float *v,
                       int KC, int N, float *acc, const float *init, bool init_per_row) {
    for (int c0 = 0; c0 < L; c0 += KC) {
        const int kc = min(KC, L - c0);
        if (c0) __syncthreads();  // the previous chunk's readers are done
        stage<8>(src, ld, c0, kc, v, KC, N);
        dot_chunk(w, L, rows, c0, kc, v, KC, N, acc, init, init_per_row);
    }
    __syncthreads();
    return Sums{acc, nullptr, N, 0, 0, false};
}

// matvec on the tensor cores: `src` holds the state in T (row n at
// src + n * ld); `v` is the staging area, used as T with rows KC + 8 apart.
// The products' parts go to slices after acc's rows * N floats (rounded up
// to 4); a chunk before the last adds its parts into acc (the first one to
// init), and the last chunk's parts are left for the cells to add (the host
// sizes v and acc so: gpuarray/rnn/persistent.py).  (The wide tiles' parts
// added to acc in turns, a block barrier each, took a third of the grid
// LSTM's step, each turn's warps reading, adding and writing 16 sums a lane
// one after another; one pass adding them after every chunk, 13%.)
template <typename T>
__device__ Sums matvec_mma(const T *w, int L, int rows, const T *src, size_t ld, float *v, int KC,
                           int N, const MmaShape &shape, float *acc, const float *init,
                           bool init_per_row) {
    T *vt = reinterpret_cast<T *>(v);
    const int ldv = KC + 8, count = rows * N;
    float *part = acc + ((count + 3) & ~3);
    Sums sums;
    for (int c0 = 0; c0 < L; c0 += KC) {
        const int kc = min(KC, L - c0), log_splits = mma_log_splits(shape, kc);
        if (c0) __syncthreads();  // the previous chunk's readers are done
        // 16 loads in flight: 5% faster a step than 8 at N = 32 (64 KB of
        // state); the FMAs keep 8 (at N = 4, 16 cost 0.3 us a step)
        stage<16>(src, ld, c0, kc, vt, ldv, N);
        mma_parts(w, L, rows, c0, kc, vt, ldv, N, shape, log_splits, part);
        sums = c0 ? Sums{acc, part, N, count, 1 << log_splits, false}
                  : Sums{init, part, N, count, 1 << log_splits, init_per_row};
        if (c0 + kc < L) {
            __syncthreads();
            for (int i = threadIdx.x; i < count; i += RNN_THREADS) {
                const int r = i / N;
                acc[i] = sums.at(r, i - r * N);
            }
        }
    }
    __syncthreads();
    return sums;
}

// A step's products, init + w . state, the state's row n at src + n * ld: in
// T on the tensor cores (tc; their tiles as `shape`, made once a launch),
// else in fp32 on the FMAs; returned as where the cells find them.
template <typename T>
__device__ __forceinline__ Sums products(bool tc, const T *w, int L, int rows, const float *src,
                                         size_t ld, float *v, int KC, int N, const MmaShape &shape,
                                         float *acc, const float *init, bool init_per_row) {
    if constexpr (sizeof(T) == 2) {
        if (tc)
            return matvec_mma(w, L, rows, reinterpret_cast<const T *>(src), ld, v, KC, N, shape,
                              acc, init, init_per_row);
    }
    return matvec(w, L, rows, src, ld, v, KC, N, acc, init, init_per_row);
}

// The backward's products, acc = init + w . state (init per element): on
// the tensor cores (TC) staged through registers with the parts added in
// turns, else on the FMAs staged by cp.async (stage_async); returned as
// where the cells find them (acc).
template <bool TC, typename T>
__device__ __forceinline__ Sums bwd_products(const T *w, int L, int rows, const float *src,
                                             size_t ld, float *v, int KC, int N,
                                             const MmaShape &shape, float *acc, const float *init) {
    for (int c0 = 0; c0 < L; c0 += KC) {
        const int kc = min(KC, L - c0);
        if (c0) __syncthreads();  // the previous chunk's readers are done
        if constexpr (TC) {
            T *vt = reinterpret_cast<T *>(v);
            stage<16>(reinterpret_cast<const T *>(src), ld, c0, kc, vt, KC + 8, N);
            mma_chunk_turns(w, L, rows, c0, kc, vt, KC + 8, N, shape, acc, init, false);
        } else {
            stage_async(src, ld, c0, kc, v, KC, N);
            dot_chunk(w, L, rows, c0, kc, v, KC, N, acc, init, false);
        }
    }
    __syncthreads();
    return Sums{acc, nullptr, N, 0, 0, false};
}

template <int MODE, typename T>
__device__ void rnn_fprop(const RnnArgs &a) {
    constexpr int G = Mode<MODE>::G;
    extern __shared__ __align__(16) unsigned char smem[];
    const int H = a.H, N = a.N, U = a.U, rows = G * U, j0 = blockIdx.x * U;
    T *w = reinterpret_cast<T *>(smem);
    float *f = reinterpret_cast<float *>(smem + a.w_bytes);
    float *bias = f + a.off_bias, *v = f + a.off_v, *acc = f + a.off_acc;
    float *h_own = f + a.off_h, *c_own = f + a.off_c;
    const bool tc = sizeof(T) == 2 && a.tc;
    stage_forward_weights<G, 16>(static_cast<const T *>(a.W), w, bias, H, U, j0, tc);
    // a thread's (unit, sample) i as n = i / U, u = i - n * U: no division a step
    const FastDiv by_U = fast_divisor(U);
    const MmaShape shape = mma_shape(rows, H, N);
    const int n_first = divide(by_U, threadIdx.x), u_first = threadIdx.x - n_first * U;
    // step 0 reads h_{-1} = h0 from hbuf[1], as step t reads hbuf[(t + 1) % 2]
    for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
        const int u = i % U, n = i / U, j = j0 + u;
        if (j >= H) continue;
        h_own[i] = load_or_zero<T>(a.h0, (size_t)n * H + j);
        c_own[i] = load_or_zero<T>(a.c0, (size_t)n * H + j);
        publish<T>(a.hbuf + (size_t)N * H, tc, (size_t)n * H + j, h_own[i]);
    }
    unsigned barriers = 0;
    grid_sync(a.barrier, ++barriers * gridDim.x);
    for (int t = 0; t < a.T; ++t) {
        // the thread's first (unit, sample): its inputs load while the state is staged
        unsigned first[G];
        const bool mine = threadIdx.x < U * N && j0 + u_first < H;
        if (mine) load_x_bits<G, T>(a.X, a.x_f32, t, n_first, j0 + u_first, N, H, first);
        const Sums rec_sums = products(tc, w, H, rows, a.hbuf + (size_t)((t + 1) & 1) * N * H, H, v,
                                       a.KC, N, shape, acc, bias, true);
        float *h_out = a.hbuf + (size_t)(t & 1) * N * H;
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int n = divide(by_U, i), u = i - n * U, j = j0 + u;
            if (j >= H) continue;
            float pre[G];
            if (i == threadIdx.x) {
                #pragma unroll
                for (int g = 0; g < G; ++g) pre[g] = x_value<T>(first[g], a.x_f32);
            } else {
                load_x<G, T>(a.X, a.x_f32, t, n, j, N, H, pre);
            }
            float rec[G];
            #pragma unroll
            for (int g = 0; g < G; ++g) rec[g] = rec_sums.at(g * U + u, n);
            const float h = cell_forward<MODE, T>(a, t, j, n, pre, rec, c_own[i], h_own[i]);
            h_own[i] = h;
            publish<T>(h_out, tc, (size_t)n * H + j, h);
        }
        if (t + 1 < a.T) grid_sync(a.barrier, ++barriers * gridDim.x);
    }
}

// What step t's backward reads of (unit, sample) number i besides dh: dY, the
// gates, h and the extra value (LSTM c, GRU rec_n) of the reserve, and the
// previous step's c (LSTM) or h (GRU) -- c0 or h0 at t = 0.
template <int G> struct BwdIn { float dy, gate[G], h, extra, prev; };

template <int MODE, typename T>
__device__ __forceinline__ void load_bwd(const RnnArgs &a, const FastDiv &by_U, int t, int i,
                                         BwdIn<Mode<MODE>::G> &in) {
    constexpr int G = Mode<MODE>::G;
    const int H = a.H, N = a.N, U = a.U, GH = G * H, n = divide(by_U, i), u = i - n * U;
    const int j = blockIdx.x * U + u;
    if (i >= U * N || j >= H) return;
    const size_t ldr = 2 * (size_t)GH + 2 * H, pos = (size_t)t * N + n;
    const float *rs = a.reserve + pos * ldr;
    in.dy = to_f32(static_cast<const T *>(a.dY)[pos * H + j]);
    #pragma unroll
    for (int g = 0; g < G; ++g) in.gate[g] = rs[g * H + j];
    in.h = rs[GH + j];
    in.extra = rs[GH + H + j];
    const float *previous = t ? rs - N * ldr : nullptr;
    if (MODE == LSTM)
        in.prev = t ? previous[GH + H + j] : load_or_zero<T>(a.c0, (size_t)n * H + j);
    if (MODE == GRU)
        in.prev = t ? previous[GH + j] : load_or_zero<T>(a.h0, (size_t)n * H + j);
}

// TC: the products on tensor cores (16-bit T where RnnArgs.tc), a separate
// instance of the backward (sharing one, its FMA step measured 0.1-0.2 us
// slower at N = 4: LSTM H = 1024 4.61 against 4.43; the forward's
// tensor-core step measured 3-9% slower as an instance of its own, and
// shares one).
template <int MODE, typename T, bool TC>
__device__ void rnn_bprop(const RnnArgs &a) {
    constexpr int G = Mode<MODE>::G;
    extern __shared__ __align__(16) unsigned char smem[];
    const int H = a.H, N = a.N, U = a.U, GH = G * H, j0 = blockIdx.x * U;
    const size_t ldr = 2 * (size_t)GH + 2 * H;
    T *w = reinterpret_cast<T *>(smem);
    float *f = reinterpret_cast<float *>(smem + a.w_bytes);
    float *v = f + a.off_v, *acc = f + a.off_acc, *dc = f + a.off_c, *bypass = f + a.off_byp;
    const T *W = static_cast<const T *>(a.W);
    constexpr bool tc = TC;
    // w[u][i] = R[i][j0 + u]: the columns of the block's units, read a row's U at a time
    // (swizzled for the tensor cores)
    const FastDiv by_U = fast_divisor(U);
    const MmaShape shape = tc ? mma_shape(U, GH, N, 1) : MmaShape{};
    stage_weights<16>(W, w, U * GH, [&](int f, long long &src, int &dst) {
        const int row = divide(by_U, f), u = f - row * U, j = j0 + u;
        src = j < H ? (long long)row * (H + 1) + j : -1;
        dst = tc ? swizzled(u, row, GH) : u * GH + row;
    });
    // step s's drec: fp32 in the reserve, or published in T in hbuf's slot s % 2
    auto drec_of = [&](int s) {
        return tc ? a.hbuf + (size_t)(s & 1) * N * GH : a.reserve + (size_t)s * N * ldr + GH + 2 * H;
    };
    const size_t ld_drec = tc ? GH : ldr;
    // bypass and acc are indexed [u][n] (the dot products' layout), dc [n][u]
    for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
        const int u = i % U, n = i / U, j = j0 + u;
        bypass[u * N + n] = 0.f;
        dc[i] = j < H ? load_or_zero<T>(a.dcy, (size_t)n * H + j) : 0.f;
    }
    __syncthreads();
    T *dX = static_cast<T *>(a.dX);
    for (int t = a.T - 1; t >= 0; --t) {
        // the thread's first (unit, sample): its inputs load while the state is staged
        BwdIn<G> first;
        load_bwd<MODE, T>(a, by_U, t, threadIdx.x, first);
        Sums dh_sums{};
        if (t + 1 < a.T)
            dh_sums = bwd_products<TC>(w, GH, U, drec_of(t + 1), ld_drec, v, a.KC, N, shape, acc,
                                       bypass);
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int n = divide(by_U, i), u = i - n * U, j = j0 + u;
            if (j >= H) continue;
            const size_t pos = (size_t)t * N + n;
            BwdIn<G> in = first;
            if (i != threadIdx.x) load_bwd<MODE, T>(a, by_U, t, i, in);
            const float dh = in.dy + (t + 1 < a.T ? dh_sums.at(u, n)
                                                  : load_or_zero<T>(a.dhy, (size_t)n * H + j));
            float d[G], dx_last;
            if (MODE == RELU || MODE == TANH) {
                d[0] = MODE == RELU ? (in.h > 0.f ? dh : 0.f) : dh * (1.f - in.h * in.h);
                dx_last = d[0];
            } else if (MODE == LSTM) {
                const float gi = in.gate[0], gf = in.gate[1], gg = in.gate[2], go = in.gate[3];
                const float tc = tanhf(in.extra);
                const float dcv = dc[i] + dh * go * (1.f - tc * tc);
                d[0] = dcv * gg * gi * (1.f - gi);
                d[1] = dcv * in.prev * gf * (1.f - gf);
                d[2] = dcv * gi * (1.f - gg * gg);
                d[3] = dh * tc * go * (1.f - go);
                dc[i] = dcv * gf;
                dx_last = d[3];
            } else {
                const float r = in.gate[0], z = in.gate[1], nn = in.gate[2];
                const float dn = dh * (1.f - z) * (1.f - nn * nn);
                d[0] = dn * in.extra * r * (1.f - r);
                d[1] = dh * (in.prev - nn) * z * (1.f - z);
                d[2] = dn * r;
                dx_last = dn;
                bypass[u * N + n] = dh * z;
            }
            float *drec = a.reserve + pos * ldr + GH + 2 * H;
            #pragma unroll
            for (int g = 0; g < G; ++g) {
                drec[g * H + j] = d[g];
                if (tc) publish<T>(drec_of(t), true, (size_t)n * GH + g * H + j, d[g]);
                dX[pos * GH + g * H + j] = from_f32<T>(g == G - 1 ? dx_last : d[g]);
            }
        }
        grid_sync(a.barrier, (a.T - t) * gridDim.x);
    }
    if (a.dh0) {
        const Sums sums = bwd_products<TC>(w, GH, U, drec_of(0), ld_drec, v, a.KC, N, shape, acc,
                                           bypass);
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j < H) static_cast<T *>(a.dh0)[(size_t)n * H + j] = from_f32<T>(sums.at(u, n));
        }
    }
    if (a.dc0) {
        for (int i = threadIdx.x; i < U * N; i += RNN_THREADS) {
            const int u = i % U, n = i / U, j = j0 + u;
            if (j < H) static_cast<T *>(a.dc0)[(size_t)n * H + j] = from_f32<T>(dc[i]);
        }
    }
}

#define RNN_KERNELS(MODE, NAME, T, TNAME)                                                       \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_fprop_##NAME##_##TNAME(const RnnArgs a) { rnn_fprop<MODE, T>(a); }               \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_bprop_##NAME##_##TNAME(const RnnArgs a) {                                        \
        if (sizeof(T) == 2 && a.tc) rnn_bprop<MODE, T, sizeof(T) == 2>(a);                     \
        else rnn_bprop<MODE, T, false>(a);                                                      \
    }

RNN_INSTANTIATE(RNN_KERNELS)
