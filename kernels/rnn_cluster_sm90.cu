// rnn_cluster_sm90.cu: the persistent recurrent forward in thread-block
// clusters -- the weights in the cluster's shared memory for the whole
// sequence, the state passed between its blocks through distributed shared
// memory; no grid barrier, no state through L2.
//
// What it computes: rnn_persist.cu's forward (the same cells, Y, final states
// and reserve: rnn_common.cuh's cell_forward), for layers whose recurrent
// weights fit in one cluster's shared memory (gpuarray/rnn/persistent.py
// decides; ReLU fp16 up to H = 1152-1280 in clusters of 16).
//
// Work split: cluster c (blocks [c*CS, c*CS + CS)) takes samples
// [c*NS, c*NS + NS) of the batch and runs them through all T steps on its
// own; clusters never wait for each other.  Its block of rank r owns the
// hidden units [r*U, r*U + U) as rnn_persist.cu's forward blocks do (the G*U
// rows of R that produce their gates).  Every block keeps the whole state of
// the cluster's samples in shared memory twice: the previous step's, which
// its products read, and this step's, which the cell update writes.  After
// the update each block stores its units' slice of h into the same place in
// every other block of the cluster (st.async, 16 bytes a store, each counted
// on the receiver's mbarrier of that buffer), and a block starts its next
// step once its own mbarrier has counted the others' slices: no cluster
// barrier, and no release of the block's global stores (Y, the reserve),
// which a cluster barrier a step cost.  The exchange needs nothing more: a
// buffer read at step t is refilled at step t + 1 by blocks that received
// this block's h_t, which it sends after its step-t products.  The inputs of
// the next step load by cp.async during the current one.  One cluster
// barrier at the start makes every block resident and its mbarriers set up
// before the first store into it.
//
// Layouts: as rnn_persist.cu (X, W, Y, the states, the fp32 reserve).  The
// state buffers: NS rows of H fp32 (products on the FMAs), or of H + 8
// elements of T (on the tensor cores: matvec_mma's staging layout, the state
// rounded to T as there).
//
// Parameters: RnnArgs (rnn_common.cuh): T, N (the batch), H, U, NS, tc,
// x_f32 and the shared-memory layout -- the weights (w_bytes), then fp32
// arrays at float offsets: bias, the two state buffers (off_v; the second
// half-way to off_acc), acc, h and c of the block's units, the two buffers of
// prefetched inputs (off_byp, each G x NS x U sized for fp32), the two
// mbarriers (off_bar).  hbuf, barrier, KC and the backward's pointers are
// unused.  H % 8 == 0 (H % 64 == 0 on the
// tensor cores), U % 8 == 0.
//
// Launch shape: grid (CS * ceil(N / NS), 1, 1) in clusters of CS blocks along
// x (CS <= 16; above 8 the kernel must allow non-portable cluster sizes),
// block (256, 1, 1), the layout's dynamic shared memory.  A cluster's blocks
// are resident together by construction; nothing needs the whole grid
// resident, so an ordinary launch serves.
//
// Kernels: ga_rnn_cluster_fprop_{relu,tanh,gru,lstm}_{f32,f16,bf16}.
#include "rnn_common.cuh"
#include "sm80_ptx.cuh"
#include "sm90_ptx.cuh"

// Step s's projected input of the block's units (columns [j0, j0 + width))
// for its NL samples into xb (G x NL rows of U elements of X's type), by
// 16-byte cp.async in one commit group: the inputs load while the state
// arrives and the products run.
template <int G, typename T>
__device__ void prefetch_x(const RnnArgs &a, unsigned char *xb, int s, int n0, int NL, int j0,
                           int width) {
    const int esize = a.x_f32 ? 4 : sizeof(T), vec = 16 / esize, pieces = width / vec;
    const unsigned char *X = static_cast<const unsigned char *>(a.X);
    for (int p = threadIdx.x; p < G * NL * pieces; p += RNN_THREADS) {
        const int row = p / pieces, k = (p - row * pieces) * vec, g = row / NL, n = row - g * NL;
        const size_t e = ((size_t)s * a.N + n0 + n) * G * a.H + (size_t)g * a.H + j0 + k;
        sm80::cp_async16(sm80::smem_u32(xb + ((size_t)row * a.U + k) * esize), X + e * esize, 16);
    }
    sm80::cp_async_commit();
}

// Unit u of sample n of the prefetched inputs, G values.
template <int G, typename T>
__device__ __forceinline__ void staged_x(const RnnArgs &a, const unsigned char *xb, int NL, int u,
                                         int n, float (&x)[G]) {
    #pragma unroll
    for (int g = 0; g < G; ++g) {
        const int at = (g * NL + n) * a.U + u;
        x[g] = a.x_f32 ? reinterpret_cast<const float *>(xb)[at]
                       : to_f32(reinterpret_cast<const T *>(xb)[at]);
    }
}

// This block's units' columns [j0, j0 + width) of state rows [0, rows) (row
// stride ld elements of E) into the same place in every other block of the
// cluster, 16 bytes a store, each counted on the receiver's mbarrier at the
// same offset as `bar` here.
template <typename E>
__device__ void send_slice(const E *buf, int ld, int j0, int width, int rows, unsigned bar) {
    constexpr int VEC = 16 / sizeof(E);
    const unsigned cs = ga_cluster_size(), rank = ga_cluster_rank();
    const int pieces = width / VEC, per_peer = pieces * rows;
    __syncthreads();  // the block's slice is written
    for (int p = threadIdx.x; p < per_peer * (int)(cs - 1); p += RNN_THREADS) {
        const int peer = p / per_peer, rest = p - peer * per_peer, n = rest / pieces;
        const E *at = buf + n * ld + j0 + (rest - n * pieces) * VEC;
        const unsigned to = (rank + 1 + peer) % cs;
        ga_st_async128(ga_mapa(ga_smem_addr(at), to), *reinterpret_cast<const uint4 *>(at),
                       ga_mapa(bar, to));
    }
}

template <int MODE, typename T>
__device__ void rnn_cluster_fprop(const RnnArgs &a) {
    constexpr int G = Mode<MODE>::G;
    extern __shared__ __align__(16) unsigned char smem[];
    const int H = a.H, U = a.U, rows = G * U, cs = ga_cluster_size();
    const int j0 = ga_cluster_rank() * U, n0 = blockIdx.x / cs * a.NS, NL = min(a.NS, a.N - n0);
    const int width = max(0, min(U, H - j0));
    T *w = reinterpret_cast<T *>(smem);
    float *f = reinterpret_cast<float *>(smem + a.w_bytes);
    float *bias = f + a.off_bias, *acc = f + a.off_acc, *h_own = f + a.off_h, *c_own = f + a.off_c;
    // the state buffer and the inputs' buffer of step parity p (inputs sized for fp32)
    auto state = [&](int p) { return f + a.off_v + p * ((a.off_acc - a.off_v) / 2); };
    auto xb = [&](int p) { return reinterpret_cast<unsigned char *>(f + a.off_byp + p * G * a.NS * U); };
    // bar(p): the arrivals of the other blocks' slices in state(p)
    auto bar = [&](int p) { return ga_smem_addr(f + a.off_bar) + 8 * p; };
    const bool tc = sizeof(T) == 2 && a.tc;
    const int ld = tc ? H + 8 : H;
    const unsigned incoming = NL * (H - width) * (tc ? sizeof(T) : 4);
    if (threadIdx.x == 0) {
        ga_mbar_init(bar(0), 1);
        ga_mbar_init(bar(1), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        // state(1) gets h0 before step 0; state(0) gets h_0 at step 0 where a step 1 follows
        ga_mbar_expect_tx(bar(1), incoming);
        if (a.T > 1) ga_mbar_expect_tx(bar(0), incoming);
    }
    prefetch_x<G, T>(a, xb(0), 0, n0, NL, j0, width);
    // a cluster's block holds 8x the rows of a grid block's: 64 loads in flight
    // (16: 36 us for ReLU H = 1024 fp16, a launch's first step)
    stage_forward_weights<G, 64>(static_cast<const T *>(a.W), w, bias, H, U, j0, tc);
    // every block has started and set up its barriers before any writes into it
    ga_cluster_sync();
    for (int i = threadIdx.x; i < U * NL; i += RNN_THREADS) {
        const int u = i % U, n = i / U, j = j0 + u;
        if (u >= width) continue;
        h_own[i] = load_or_zero<T>(a.h0, (size_t)(n0 + n) * H + j);
        c_own[i] = load_or_zero<T>(a.c0, (size_t)(n0 + n) * H + j);
        publish<T>(state(1), tc, n * ld + j, h_own[i]);
    }
    if (tc) send_slice(reinterpret_cast<const T *>(state(1)), ld, j0, width, NL, bar(1));
    else send_slice(state(1), ld, j0, width, NL, bar(1));
    for (int t = 0; t < a.T; ++t) {
        // xb((t + 1) & 1) was last read at step t - 1, before its send_slice's barrier
        if (t + 1 < a.T) prefetch_x<G, T>(a, xb((t + 1) & 1), t + 1, n0, NL, j0, width);
        // step t reads state((t + 1) & 1), filled for the (t / 2)-th time
        ga_mbar_wait(bar((t + 1) & 1), (t >> 1) & 1);
        // its next fill is h_{t+1}, sent at step t + 1 where a step t + 2 follows
        if (threadIdx.x == 0 && t + 2 < a.T) ga_mbar_expect_tx(bar((t + 1) & 1), incoming);
        const float *in = state((t + 1) & 1);
        if constexpr (sizeof(T) == 2) {
            if (tc) mma_chunk(w, H, rows, 0, H, reinterpret_cast<const T *>(in), ld, NL, acc, bias, true);
            else dot_chunk(w, H, rows, 0, H, in, ld, NL, acc, bias, true);
        } else {
            dot_chunk(w, H, rows, 0, H, in, ld, NL, acc, bias, true);
        }
        if (t + 1 < a.T) sm80::cp_async_wait<1>();
        else sm80::cp_async_wait<0>();
        __syncthreads();  // acc and step t's inputs are in
        float *out = state(t & 1);
        for (int i = threadIdx.x; i < U * NL; i += RNN_THREADS) {
            const int u = i % U, n = i / U;
            if (u >= width) continue;
            float pre[G];
            staged_x<G, T>(a, xb(t & 1), NL, u, n, pre);
            const float h = cell_forward<MODE, T>(a, t, j0 + u, n0 + n, pre, acc, u, n, U, NL, c_own[i],
                                                  h_own[i]);
            h_own[i] = h;
            publish<T>(out, tc, n * ld + j0 + u, h);
        }
        // the last step's h is read by no one
        if (t + 1 < a.T) {
            if (tc) send_slice(reinterpret_cast<const T *>(out), ld, j0, width, NL, bar(t & 1));
            else send_slice(out, ld, j0, width, NL, bar(t & 1));
        }
    }
}

#define RNN_CLUSTER_KERNEL(MODE, NAME, T, TNAME)                                                \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_cluster_fprop_##NAME##_##TNAME(const RnnArgs a) { rnn_cluster_fprop<MODE, T>(a); }

RNN_INSTANTIATE(RNN_CLUSTER_KERNEL)
