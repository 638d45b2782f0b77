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
// before the first store into it.  (Each warp sending its own cells' pieces
// as soon as they were done, without the block barrier before the sends,
// measured slower: ReLU H = 1024 N = 32 fp16 2.93 against 2.72 us a step;
// and compute-sanitizer's racecheck cannot see that a warp's sends order its
// reads of acc before the next step's products.)
//
// Layouts: as rnn_persist.cu (X, W, Y, the states, the fp32 reserve).  The
// state buffers: NS rows of H fp32 (products on the FMAs), or of H + 8
// elements of T (on the tensor cores: matvec_mma's staging layout, the state
// rounded to T as there).
//
// Parameters: RnnArgs (rnn_common.cuh): T, N (the batch), H, U, NS, tc,
// x_f32 and the shared-memory layout -- the weights (w_bytes), then fp32
// arrays at float offsets: bias, the two state buffers (off_v; the second
// half-way to off_acc), acc (the products; on the tensor cores their parts,
// G*U*NL*parts floats: rnn_mma.cuh's mma_parts), h and c of the
// block's units, the two buffers of prefetched inputs (off_byp, each
// G x NS x U sized for fp32), the two mbarriers (off_bar).  hbuf, barrier,
// KC and the backward's pointers are unused.  H % 8 == 0 (H % 64 == 0 on
// the tensor cores), U % 8 == 0.
//
// Launch shape: grid (CS * ceil(N / NS), 1, 1) in clusters of CS blocks along
// x (CS <= 16; above 8 the kernel must allow non-portable cluster sizes),
// block (256, 1, 1), the layout's dynamic shared memory.  A cluster's blocks
// are resident together by construction; nothing needs the whole grid
// resident, so an ordinary launch serves.
//
// Kernels: ga_rnn_cluster_fprop_{relu,tanh,gru,lstm}_{f32,f16,bf16}.
#include "rnn_mma.cuh"
#include "sm80_ptx.cuh"
#include "sm90_ptx.cuh"

// The 16-byte pieces of the block's inputs a step loads: G x NL rows of the
// block's `width` units, `vec` elements a piece.  Made once, so a step's
// loads pay no integer divisions.
struct XPieces {
    int vec, pieces, count;
    FastDiv by_pieces, by_NL;
};

__device__ __forceinline__ XPieces x_pieces(const RnnArgs &a, int G, int NL, int width) {
    XPieces x;
    x.vec = a.x_f32 ? 4 : 8;
    x.pieces = width / x.vec;
    x.count = G * NL * x.pieces;
    x.by_pieces = fast_divisor(max(x.pieces, 1));
    x.by_NL = fast_divisor(max(NL, 1));
    return x;
}

// Step s's projected input of the block's units (columns [j0, j0 + width))
// for its NL samples into xb (G x NL rows of U elements of X's type), by
// 16-byte cp.async in one commit group: the inputs load while the state
// arrives and the products run.
template <int G, typename T>
__device__ void prefetch_x(const RnnArgs &a, unsigned char *xb, int s, int n0, int j0, const XPieces &x) {
    const int esize = 16 / x.vec;
    const unsigned char *X = static_cast<const unsigned char *>(a.X);
    for (int p = threadIdx.x; p < x.count; p += RNN_THREADS) {
        const int row = divide(x.by_pieces, p), k = (p - row * x.pieces) * x.vec;
        const int g = divide(x.by_NL, row), n = row - g * x.by_NL.d;
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

// Which pieces of the block's slice of the state (NL rows of `width`
// elements, 16 bytes a piece) a thread sends to which peers: pieces q0,
// q0 + q_step, ... < per_peer, each to peers peer0, peer0 + peer_step, ...
// < cs - 1 (peer p is rank rank + 1 + p mod cs).  Where a peer's share has
// at most one piece a thread, the threads holding the same piece take the
// peers in turns: every thread sends, each piece read once.  Made once.
struct SendPlan {
    int pieces, per_peer, q0, q_step, peer0, peer_step;
    FastDiv by_pieces;
};

template <typename E>
__device__ __forceinline__ SendPlan send_plan(int width, int NL) {
    SendPlan p;
    p.pieces = width * (int)sizeof(E) / 16;
    p.per_peer = p.pieces * NL;
    p.by_pieces = fast_divisor(max(p.pieces, 1));
    if (p.per_peer > 0 && p.per_peer <= RNN_THREADS) {
        p.peer_step = RNN_THREADS / p.per_peer;
        p.q0 = threadIdx.x % p.per_peer;
        p.peer0 = threadIdx.x / p.per_peer;
        p.q_step = p.per_peer;
        if (p.peer0 >= p.peer_step) p.q0 = p.per_peer;  // beyond the last group: idle
    } else {
        p.peer_step = 1;
        p.peer0 = 0;
        p.q0 = threadIdx.x;
        p.q_step = RNN_THREADS;
    }
    return p;
}

// This block's units' columns [j0, j0 + width) of the state rows (row stride
// ld elements of E) into the same place in every other block of the
// cluster, as `plan` shares them out, each store counted on the receiver's
// mbarrier at the same offset as `bar` here.
template <typename E>
__device__ void send_slice(const E *buf, int ld, int j0, const SendPlan &plan, unsigned bar) {
    constexpr int VEC = 16 / sizeof(E);
    const int cs = ga_cluster_size(), rank = ga_cluster_rank();
    __syncthreads();  // the block's slice is written
    for (int q = plan.q0; q < plan.per_peer; q += plan.q_step) {
        const int n = divide(plan.by_pieces, q);
        const E *at = buf + n * ld + j0 + (q - n * plan.pieces) * VEC;
        const uint4 piece = *reinterpret_cast<const uint4 *>(at);
        const unsigned local = ga_smem_addr(at);
        for (int peer = plan.peer0; peer < cs - 1; peer += plan.peer_step) {
            int to = rank + 1 + peer;
            if (to >= cs) to -= cs;
            ga_st_async128(ga_mapa(local, to), piece, ga_mapa(bar, to));
        }
    }
}

// A step's products, acc = bias + w . state (the state's NL rows in `in`, ld
// elements apart): on tensor cores as parts (mma_parts), else on the FMAs.
template <typename T>
__device__ __forceinline__ void products(bool tc, const T *w, int H, int rows, const float *in, int ld,
                                         int NL, const MmaShape &shape, int log_splits, float *acc,
                                         const float *bias) {
    if constexpr (sizeof(T) == 2) {
        if (tc) {
            mma_parts(w, H, rows, 0, H, reinterpret_cast<const T *>(in), ld, NL, shape, log_splits, acc);
            return;
        }
    }
    dot_chunk(w, H, rows, 0, H, in, ld, NL, acc, bias, true);
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
    // the step's fixed shares of work, made once: the products' tiles, the
    // inputs' and the state's pieces, the cells' (unit, sample) split
    const MmaShape shape = mma_shape(rows, H, NL);
    const int log_splits = mma_log_splits(shape, H);
    // the cells' recurrent sums: bias + the parts (tensor cores), or acc as dot_chunk left it
    const Sums sums = tc ? Sums{bias, acc, NL, rows * NL, 1 << log_splits, true}
                         : Sums{acc, nullptr, NL, 0, 0, false};
    const XPieces xp = x_pieces(a, G, NL, width);
    const SendPlan sends = tc ? send_plan<T>(width, NL) : send_plan<float>(width, NL);
    const FastDiv by_U = fast_divisor(U);
    auto send = [&](const float *buf, int p) {
        if (tc) send_slice(reinterpret_cast<const T *>(buf), ld, j0, sends, bar(p));
        else send_slice(buf, ld, j0, sends, bar(p));
    };
    if (threadIdx.x == 0) {
        ga_mbar_init(bar(0), 1);
        ga_mbar_init(bar(1), 1);
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        // state(1) gets h0 before step 0; state(0) gets h_0 at step 0 where a step 1 follows
        ga_mbar_expect_tx(bar(1), incoming);
        if (a.T > 1) ga_mbar_expect_tx(bar(0), incoming);
    }
    prefetch_x<G, T>(a, xb(0), 0, n0, j0, xp);
    // a cluster's block holds 8x the rows of a grid block's: 64 loads in flight
    // (16: 36 us for ReLU H = 1024 fp16, a launch's first step)
    stage_forward_weights<G, 64>(static_cast<const T *>(a.W), w, bias, H, U, j0, tc);
    // every block has started and set up its barriers before any writes into it
    ga_cluster_sync();
    for (int i = threadIdx.x; i < U * NL; i += RNN_THREADS) {
        const int n = divide(by_U, i), u = i - n * U, j = j0 + u;
        if (u >= width) continue;
        h_own[i] = load_or_zero<T>(a.h0, (size_t)(n0 + n) * H + j);
        c_own[i] = load_or_zero<T>(a.c0, (size_t)(n0 + n) * H + j);
        publish<T>(state(1), tc, n * ld + j, h_own[i]);
    }
    send(state(1), 1);
    for (int t = 0; t < a.T; ++t) {
        // xb((t + 1) & 1) was last read at step t - 1, before its send's barrier
        if (t + 1 < a.T) prefetch_x<G, T>(a, xb((t + 1) & 1), t + 1, n0, j0, xp);
        // step t reads state((t + 1) & 1), filled for the (t / 2)-th time
        ga_mbar_wait(bar((t + 1) & 1), (t >> 1) & 1);
        // its next fill is h_{t+1}, sent at step t + 1 where a step t + 2 follows
        if (threadIdx.x == 0 && t + 2 < a.T) ga_mbar_expect_tx(bar((t + 1) & 1), incoming);
        products(tc, w, H, rows, state((t + 1) & 1), ld, NL, shape, log_splits, acc, bias);
        if (t + 1 < a.T) sm80::cp_async_wait<1>();
        else sm80::cp_async_wait<0>();
        __syncthreads();  // acc and step t's inputs are in
        float *out = state(t & 1);
        for (int i = threadIdx.x; i < U * NL; i += RNN_THREADS) {
            const int n = divide(by_U, i), u = i - n * U;
            if (u >= width) continue;
            float pre[G], rec[G];
            staged_x<G, T>(a, xb(t & 1), NL, u, n, pre);
            #pragma unroll
            for (int g = 0; g < G; ++g) rec[g] = sums.at(g * U + u, n);
            const float h = cell_forward<MODE, T>(a, t, j0 + u, n0 + n, pre, rec, c_own[i], h_own[i]);
            h_own[i] = h;
            publish<T>(out, tc, n * ld + j0 + u, h);
        }
        // the last step's h is read by no one; the send's block barrier also
        // keeps the next step's products (which rewrite acc) and prefetch
        // (into xb((t + 2) & 1) = xb(t & 1)) behind every warp's cells
        if (t + 1 < a.T) send(out, t & 1);
    }
}

#define RNN_CLUSTER_KERNEL(MODE, NAME, T, TNAME)                                                \
    extern "C" __global__ void __launch_bounds__(RNN_THREADS, 1)                                \
        ga_rnn_cluster_fprop_##NAME##_##TNAME(const RnnArgs a) { rnn_cluster_fprop<MODE, T>(a); }

RNN_INSTANTIATE(RNN_CLUSTER_KERNEL)
