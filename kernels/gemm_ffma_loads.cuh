// gemm_ffma_loads.cuh: how gemm_ffma.cu's exact-fp32 GEMM feeds its main
// loop -- an operand seen as an MN x K matrix, its K-tiles brought into
// shared memory through registers (TileLoader: float4 loads, transposed
// stores, or element by element where unaligned) or by cp.async
// (AsyncLoader), and Feed, which keeps each operand's own position on the
// K axis.
//
// In: the operands in global memory (Operand: pointer, strides, extent);
// out: BX x BK tiles in shared memory, stored [BK][BX + 4].  Layouts and
// launch shapes: gemm_ffma.cu's header.  No kernel is defined here.
#pragma once
#include "cluster.cuh"
#include "gemm_common.cuh"

namespace ga_ffma {

enum Contig { CONTIG_K, CONTIG_MN };  // the operand's unit-stride dimension

template <bool B, class T, class F> struct Pick { typedef T type; };
template <class T, class F> struct Pick<false, T, F> { typedef F type; };

// One operand (A or B) in global memory, seen as an MN x K matrix.
struct Operand {
    const float *x;
    long long mn_stride, k_stride, batch_stride;
    int extent;  // M for A, N for B
};

// A BX x BK tile of an operand that goes through registers: global ->
// registers (issued a K-tile early) -> shared memory stored [BK][BX + 4].
// Aligned operands here are contiguous in k (float4 loads, transposed
// stores); aligned contiguous-mn ones take AsyncLoader.  The 4 padding
// floats put consecutive k rows 4 banks apart, so the 4 words of a
// transposed float4 land in distinct banks.  The loader keeps running
// pointers into the current K-tile, so moving to the next tile is one
// 64-bit add (the K-loop's overhead competes with the FFMAs for issue slots).
template <int BX, int BK, int THREADS, Contig C, bool ALIGNED>
struct TileLoader {
    static constexpr int LD = BX + 4;
    static constexpr int ELEMS = BX * BK / THREADS;
    static constexpr int VECS = ELEMS / 4;
    // aligned (contiguous k): vector v is (row lx + v * RSTEP, k lk .. lk + 3)
    static constexpr int KV = BK / 4, RSTEP = THREADS / KV;
    // unaligned: element j is (lx + j * URSTEP, lk) or (lx, lk + j * UKSTEP),
    // so that neighbouring threads read neighbouring elements
    static constexpr int URSTEP = THREADS / BK, UKSTEP = THREADS / BX;
    static_assert(ELEMS * THREADS == BX * BK && (!ALIGNED || VECS * 4 == ELEMS), "tile split");
    static_assert(!ALIGNED || (C == CONTIG_K && THREADS % KV == 0), "vector map");
    static_assert(ALIGNED || (C == CONTIG_K ? THREADS % BK == 0 : THREADS % BX == 0), "element map");

    float r[ELEMS];
    const float *q[ALIGNED ? VECS : 1];  // vector v (unaligned: element 0) in the current K-tile
    long long step;                      // unaligned: from element j to j + 1
    int lx, lk;                          // tile-relative x and k of vector / element 0
    int xa;                              // absolute x of vector / element 0

    // Point at the K-tile starting at k0 of data batch db, for the tile of
    // rows/columns starting at x0.
    GA_D void init(const Operand &o, int x0, int tid, int db, int k0) {
        const float *base = o.x + db * o.batch_stride;
        if (ALIGNED) {
            lx = tid / KV;
            lk = (tid % KV) * 4;
            #pragma unroll
            for (int v = 0; v < VECS; ++v)
                q[v] = base + (long long)min(x0 + lx + v * RSTEP, o.extent - 1) * o.mn_stride + (k0 + lk);
        } else if (C == CONTIG_K) {
            lx = tid / BK;
            lk = tid % BK;
            q[0] = base + (long long)(x0 + lx) * o.mn_stride + (long long)(k0 + lk) * o.k_stride;
            step = (long long)URSTEP * o.mn_stride;
        } else {
            lx = tid % BX;
            lk = tid / BX;
            q[0] = base + (long long)(x0 + lx) * o.mn_stride + (long long)(k0 + lk) * o.k_stride;
            step = (long long)UKSTEP * o.k_stride;
        }
        xa = x0 + lx;
    }

    GA_D void advance(long long delta) {
        #pragma unroll
        for (int v = 0; v < (ALIGNED ? VECS : 1); ++v) q[v] += delta;
    }

    // Issue the loads of a K-tile that lies wholly inside K (the common case):
    // no k checks; rows are clamped, or checked once per element.
    GA_D void load_full(int extent) {
        if (ALIGNED) {
            #pragma unroll
            for (int v = 0; v < VECS; ++v) {
                float4 f = __ldg((const float4 *)q[v]);
                r[4 * v] = f.x; r[4 * v + 1] = f.y; r[4 * v + 2] = f.z; r[4 * v + 3] = f.w;
            }
        } else {
            #pragma unroll
            for (int j = 0; j < ELEMS; ++j) {
                const bool ok = C == CONTIG_K ? xa + j * URSTEP < extent : xa < extent;
                r[j] = ok ? __ldg(q[0] + j * step) : 0.f;
            }
        }
    }

    // Issue the loads of a K-tile of which only kv = K - k0 < BK k lie inside K.
    GA_D void load_ragged(int extent, int kv) {
        if (ALIGNED) {
            #pragma unroll
            for (int v = 0; v < VECS; ++v)
                #pragma unroll
                for (int j = 0; j < 4; ++j) r[4 * v + j] = lk + j < kv ? __ldg(q[v] + j) : 0.f;
        } else {
            #pragma unroll
            for (int j = 0; j < ELEMS; ++j) {
                const bool ok = C == CONTIG_K ? xa + j * URSTEP < extent && lk < kv : xa < extent && lk + j * UKSTEP < kv;
                r[j] = ok ? __ldg(q[0] + j * step) : 0.f;
            }
        }
    }

    // Store the staged registers into the shared-memory buffer xs[BK][LD].
    GA_D void store(float *xs) const {
        if (ALIGNED) {
            #pragma unroll
            for (int v = 0; v < VECS; ++v)
                #pragma unroll
                for (int j = 0; j < 4; ++j) xs[(lk + j) * LD + lx + v * RSTEP] = r[4 * v + j];
        } else if (C == CONTIG_K) {
            #pragma unroll
            for (int j = 0; j < ELEMS; ++j) xs[lk * LD + lx + j * URSTEP] = r[j];
        } else {
            #pragma unroll
            for (int j = 0; j < ELEMS; ++j) xs[(lk + j * UKSTEP) * LD + lx] = r[j];
        }
    }
};

// cp.async (sm_80+): 16 bytes global -> shared without registers; src_bytes
// < 16 fills the rest of the destination with zeros (0: nothing is read).
GA_D void cp_async16(unsigned dst, const float *src, int src_bytes) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}
GA_D void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N> GA_D void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory"); }

// An aligned operand whose contiguous dimension is mn: its BX x BK tile goes
// by 16-byte cp.async straight into shared memory [BK][BX + 4] (the layout
// it has in global memory), no registers and no store instructions.  An
// operand contiguous in k needs a transpose, which 4-byte copies would do
// at a quarter of the rate: it takes the TileLoader path instead.
template <int BX, int BK, int THREADS>
struct AsyncLoader {
    static constexpr int LD = BX + 4;
    static constexpr int VECS = BX * BK / THREADS / 4;
    static constexpr int XV = BX / 4, KSTEP = THREADS / XV;  // vector v is (x lx .. lx + 3, k lk + v * KSTEP)
    static_assert(VECS * 4 * THREADS == BX * BK && THREADS % XV == 0, "vector map");

    const float *q[VECS];  // vector v in the K-tile to copy next
    unsigned dst;          // byte offset of vector 0 in a tile
    int lk;                // k of vector 0 in the tile
    int x_bytes;           // bytes of the vector inside the extent (0..16)

    GA_D void init(const Operand &o, int x0, int tid, int db, int k0) {
        const float *base = o.x + db * o.batch_stride;
        lk = tid / XV;
        const int lx = (tid % XV) * 4;
        #pragma unroll
        for (int v = 0; v < VECS; ++v) q[v] = base + (long long)(k0 + lk + v * KSTEP) * o.k_stride + x0 + lx;
        dst = (lk * LD + lx) * 4;
        x_bytes = 4 * min(max(o.extent - x0 - lx, 0), 4);
    }

    GA_D void advance(long long delta) {
        #pragma unroll
        for (int v = 0; v < VECS; ++v) q[v] += delta;
    }

    // Copy the K-tile into the tile at shared address s; kv = K - k0 of its k
    // lie inside K, the rest read as zero.
    GA_D void copy(unsigned s, int kv) const {
        #pragma unroll
        for (int v = 0; v < VECS; ++v) {
            cp_async16(s + dst + v * KSTEP * LD * 4, q[v], lk + v * KSTEP < kv ? x_bytes : 0);
        }
    }
};

// One operand of the main loop: its loader and its own position on the
// virtual K axis (a cp.async operand runs STAGES - 1 K-tiles ahead of the
// math, a register-staged one a single K-tile).
template <int BX, int BK, int THREADS, Contig C, bool ALIGNED>
struct Feed {
    static constexpr bool ASYNC = ALIGNED && C == CONTIG_MN;
    typedef typename Pick<ASYNC, AsyncLoader<BX, BK, THREADS>, TileLoader<BX, BK, THREADS, C, ALIGNED>>::type Loader;
    Loader l;
    int k0;  // first k of the next K-tile to load, in its data batch

    GA_D void init(const Operand &o, int x0, int db, int k) {
        k0 = k;
        l.init(o, x0, threadIdx.x, db, k);
    }
    // step to the next K-tile: the same data batch, or (rarely, so the step
    // is computed only then) from the last K-tile of a batch to the first of
    // the next; step = BK * k_stride
    GA_D void next(int K, long long step, long long batch_stride) {
        k0 += BK;
        if (k0 < K) {
            l.advance(step);
        } else {
            k0 = 0;
            l.advance(batch_stride - (long long)((K - 1) / BK) * step);
        }
    }
    // cp.async operand: copy the next K-tile into the tile at shared address s
    GA_D void copy(unsigned s, int K, long long step, long long batch_stride) {
        if constexpr (ASYNC) {
            l.copy(s, K - k0);
            next(K, step, batch_stride);
        }
    }
    // register-staged operand: load the next K-tile into registers ...
    GA_D void fetch(int extent, int K, long long step, long long batch_stride) {
        if constexpr (!ASYNC) {
            if (K - k0 >= BK) l.load_full(extent);
            else l.load_ragged(extent, K - k0);
            next(K, step, batch_stride);
        }
    }
    // ... and store them into the tile at xs
    GA_D void put(float *xs) const {
        if constexpr (!ASYNC) l.store(xs);
    }
};

}  // namespace ga_ffma
