// conv_loads.cuh: the implicit-GEMM convolution's operand loads for the
// Hopper GEMM body (gemm_sm90.cuh): the passes (the kernel's CONV argument),
// the layer's geometry (ConvGeom, in the kernel arguments after GemmArgs)
// and the TMA copies of one K-tile -- the im2col gather of the activations
// and the tiled or mirrored filter loads.  What each pass computes, the
// tensor maps and their boxes: conv_sm90.cu's header.
#pragma once
#include "fastdiv.cuh"
#include "sm90_ptx.cuh"

// Implicit-GEMM convolution passes (conv_sm90.cu), the kernel's CONV argument
#define GA_CONV_NONE 0
#define GA_CONV_FPROP 1   // C's rows are output positions; A gathered by im2col
#define GA_CONV_UPDATE 2  // the reduction runs over output positions; B gathered
#define GA_CONV_BPROP 3   // fprop of E with the filters read flipped ("n"-major B)
#define GA_CONV_FPROP_T 4 // fprop transposed: C's rows are filters, its columns output
                          // positions (B gathered by im2col); C stored transposed

// Geometry of an implicit-GEMM convolution.  fprop: K-tiles walk the filter
// taps (r, s) and, within a tap, chunks of 64 channels.  update: K-tiles are
// 64 output positions; each 64-wide panel of B's columns is one tap's
// channels c0 .. c0 + 63, a tap's columns padded to cchunks * 64 (channels
// past C read as zeros; the caller copies the C real ones out of a padded
// result when C % 64 != 0).  The producer splits indices by
// multiply-shifts: one thread issues every load, and with hardware divisions
// (ten a K-tile in the update) it was the update's bottleneck.
struct ConvGeom {
    int P, Q;              // output height, width
    int R, S;              // filter height, width
    int cchunks;           // 64-channel chunks per tap: ceil(C / 64)
    int C;                 // input channels
    int str_h, str_w, pad_h, pad_w, dil_h, dil_w;
    FastDiv by_pq, by_q, by_s, by_cchunks, by_cpad;  // divisions by P*Q, Q, S, cchunks, 64 cchunks
};

// Input position (w, h) of image n where the window of output position m
// (in (n, p, q) order) starts.
GA_D void ga_conv_origin(const ConvGeom &cg, int m, int &w, int &h, int &n) {
    n = divide(cg.by_pq, m);
    const int pq = m - n * cg.by_pq.d, oh = divide(cg.by_q, pq);
    w = (pq - oh * cg.Q) * cg.str_w - cg.pad_w;
    h = oh * cg.str_h - cg.pad_h;
}

// The loads of one K-tile kt of an implicit-GEMM convolution: filter tap
// (r, s) and 64 channels from c0.  A (im2col): output rows m0 .. m0 + BM - 1
// from the input position of row m0's window; B: filters n0 .. n0 + BN - 1
// at that tap ("k"-major), or for bprop the original filters at the
// mirrored tap R*S - 1 - tap, "n"-major panels of 64 of their channels
// (a 96-wide tile's second panel: the 32 it uses, then 32 it does not
// read).  The transposed fprop (GA_CONV_FPROP_T) makes the same copies
// with the operands' roles exchanged: A, filters m0 .. m0 + BM - 1 at the
// tap; B (im2col), output positions n0 .. n0 + BN - 1.  Channels past C
// (and rows past N*P*Q) are zero-filled.
template <int BN, int CONV>
GA_D void ga_conv_loads(const ConvGeom &cg, const GemmArgs &p, unsigned sa, unsigned sb, unsigned full, int kt,
                        int m0, int n0) {
    const int tap = divide(cg.by_cchunks, kt), c0 = (kt - tap * cg.cchunks) * 64;
    const int fr = divide(cg.by_s, tap), fs = tap - fr * cg.S;
    int w, h, n;
    if constexpr (CONV == GA_CONV_FPROP_T) {
        ga_conv_origin(cg, n0, w, h, n);
        ga_tma_load(sa, &p.tmap_a, full, c0, m0, tap);
        ga_tma_load_im2col(sb, &p.tmap_b, full, c0, w, h, n, fs * cg.dil_w, fr * cg.dil_h);
        return;
    }
    ga_conv_origin(cg, m0, w, h, n);
    ga_tma_load_im2col(sa, &p.tmap_a, full, c0, w, h, n, fs * cg.dil_w, fr * cg.dil_h);
    if constexpr (CONV == GA_CONV_BPROP) {
        #pragma unroll
        for (int j = 0; j < (BN + 63) / 64; ++j)
            ga_tma_load(sb + j * 8192, &p.tmap_b, full, n0 + 64 * j, c0, cg.R * cg.S - 1 - tap);
    } else {
        ga_tma_load(sb, &p.tmap_b, full, c0, n0, tap);
    }
}

// The loads of one K-tile kt of the filter gradient: A (E^T, "m"-major
// panels of 64 filters) at output positions kt*64 ..; B's panel j (64
// output positions x 64 channels) gathered at tap (n0 + 64 j) / (64 cchunks).
// With multicast pairs (MC > 1: the cluster's blocks hold vertically
// adjacent tiles, the same B) the block of cluster rank r (blockIdx.x mod
// MC: clusters run along x; a register fewer than asking for the rank,
// which the 40-register producer would spill) gathers panels j = r mod MC
// into every block of the cluster.
template <int BM, int BN, int MC>
GA_D void ga_conv_update_loads(const ConvGeom &cg, const GemmArgs &p, unsigned sa, unsigned sb, unsigned full,
                               int kt, int m0, int n0) {
    const int m = kt * 64;
    #pragma unroll
    for (int c = 0; c < BM / 64; ++c) ga_tma_load(sa + c * 8192, &p.tmap_a, full, m0 + 64 * c, m, 0);
    int w, h, n;
    ga_conv_origin(cg, m, w, h, n);
    #pragma unroll
    for (int j = 0; j < BN / 64; ++j) {
        if (MC > 1 && j % MC != (int)(blockIdx.x % MC)) continue;
        const int col = n0 + 64 * j, tap = divide(cg.by_cpad, col), c0 = col - tap * cg.by_cpad.d;
        const int fr = divide(cg.by_s, tap), fs = tap - fr * cg.S;
        if constexpr (MC > 1) {
            ga_tma_load_im2col_multicast(sb + j * 8192, &p.tmap_b, full, c0, w, h, n, fs * cg.dil_w,
                                         fr * cg.dil_h, (1u << MC) - 1);
        } else {
            ga_tma_load_im2col(sb + j * 8192, &p.tmap_b, full, c0, w, h, n, fs * cg.dil_w, fr * cg.dil_h);
        }
    }
}
