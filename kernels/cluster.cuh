// cluster.cuh: thread-block cluster primitives (sm_90 and newer) that the
// GEMM kernels and the clustered recurrent forward share.
//
// What it holds: the cluster's size, the two halves of the cluster barrier,
// the address of a shared-memory location in another block of the cluster
// (distributed shared memory) and 16-byte loads and stores through it
// (plain, or counted on the receiver's mbarrier), 16-byte shared-memory
// stores, and the cluster K-split's share of a tile's K-tiles.
// (ga_cluster_rank and ga_cluster_sync come with the fusion prelude.)  A
// launch without cluster dimensions runs as clusters of one block.  Every
// function here needs sm_90: callers built for older targets too keep
// their calls behind __CUDA_ARCH__ >= 900.  No kernel is defined here.
#pragma once
#include "gemm_common.cuh"

GA_D unsigned ga_cluster_size() {
    unsigned n;
    asm("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
    return n;
}
// The two halves of the cluster barrier, for threads that may get there
// apart (not .aligned): every thread of every block of the cluster arrives
// (releasing its earlier shared-memory writes), then waits before its next
// arrival (acquiring the others').
GA_D void ga_cluster_arrive() { asm volatile("barrier.cluster.arrive.release;" ::: "memory"); }
GA_D void ga_cluster_wait() { asm volatile("barrier.cluster.wait.acquire;" ::: "memory"); }
// The address of the same shared-memory location in block `rank` of the cluster.
GA_D unsigned ga_mapa(unsigned addr, unsigned rank) {
    unsigned r;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(addr), "r"(rank));
    return r;
}
GA_D void ga_sts128f(unsigned addr, float x, float y, float z, float w) {
    asm volatile("st.shared.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(addr), "f"(x), "f"(y), "f"(z), "f"(w) : "memory");
}
// 16 bytes into another block's shared memory (an address from ga_mapa):
// the thread goes on without waiting for the store.
GA_D void ga_st_cluster128f(unsigned remote, float x, float y, float z, float w) {
    asm volatile("st.shared::cluster.v4.f32 [%0], {%1, %2, %3, %4};" ::"r"(remote), "f"(x), "f"(y), "f"(z), "f"(w)
                 : "memory");
}
// 16 bytes into another block's shared memory (an address from ga_mapa),
// counted as 16 transaction bytes on that block's mbarrier at remote_bar
// (also from ga_mapa): the receiver waits on its own mbarrier, no cluster
// barrier and no release of this thread's other writes needed.
GA_D void ga_st_async128(unsigned remote, uint4 v, unsigned remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.v4.b32 [%0], {%1, %2, %3, %4}, [%5];"
                 ::"r"(remote), "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w), "r"(remote_bar) : "memory");
}
// 16 bytes of another block's shared memory (an address from ga_mapa).
GA_D float4 ga_ld_cluster128f(unsigned remote) {
    float4 v;
    asm volatile("ld.shared::cluster.v4.f32 {%0, %1, %2, %3}, [%4];"
                 : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w) : "r"(remote) : "memory");
    return v;
}
// The cluster K-split: K-tiles [kt0, kt1) of a tile narrowed to block
// `rank`'s share of a cluster of `cs` (shares differ by at most one K-tile).
GA_D void ga_cluster_k_range(int &kt0, int &kt1, unsigned rank, unsigned cs) {
    const int n = kt1 - kt0, first = kt0;
    kt0 = first + (int)(n * rank / cs);
    kt1 = first + (int)(n * (rank + 1) / cs);
}
