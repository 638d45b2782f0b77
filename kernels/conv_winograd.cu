// conv_winograd.cu: the transforms of Winograd's F(2x2, 3x3) convolution, fp32.
//
// What it computes.  A 3x3, stride-1 convolution computes each 2x2 block of
// outputs from a 4x4 tile of input as
//     Y = A^T [ (G g G^T) . (B^T d B) ] A          (. : elementwise)
// with g the 3x3 filter, d the tile and (Lavin and Gray, 2015)
//     B^T = | 1  0 -1  0 |    G = | 1    0    0  |    A^T = | 1  1  1  0 |
//           | 0  1  1  0 |        | 1/2  1/2  1/2|          | 0  1 -1 -1 |
//           | 0 -1  1  0 |        | 1/2 -1/2  1/2|
//           | 0  1  0 -1 |        | 0    0    1  |
// Summed over channels, the 16 elementwise products of a tile become 16
// independent GEMMs (one per point xi of the 4x4 transform domain), run by
// the caller with the exact-fp32 GEMM (gpuarray/gemm):
//     fprop:  M[xi] = V[xi] @ W[xi]        V = B^T d B of I, W = (G g G^T)^T
//     bprop:  the same over E, with the filters flipped and C and K swapped
//     update: dU[xi] = E'[xi]^T @ V[xi]    E' = A dY A^T, then dF = G^T dU G
// 2.25 times fewer multiply-adds than the direct convolution, for the
// memory traffic of the transformed tiles.  Every sum has a fixed order:
// the same bits on every run.
//
// Layouts (cuDNN names): images (N, H, W, C) and filters (K, 3, 3, C),
// channel innermost, fp32; filters contiguous, images with their positions
// src_ld or dst_ld elements apart (a channel slice of a wider tensor: a
// concatenation's branch reads and writes its slice in place).  Transform-domain tensors are
// (16, tiles, channels) -- V, M, E' -- and (16, K, C) -- U, dU -- or, with
// cmajor, (16, C, K) -- W = U^T, fprop's GEMM operand -- with
// tile t = (n * TP + ty) * TQ + tx; a tile's outputs are rows 2*ty, 2*ty+1
// and columns 2*tx, 2*tx+1 (the last row or column may lie outside).
//
// Parameters: WinogradArgs below.  ga_winograd_input reads the 4x4 tiles
// of src (an (N, H, W, C) image batch, zeros outside it, the first tile
// starting at -pad_h, -pad_w); ga_winograd_output writes the 2x2 blocks of
// an (N, H, W, C) output: relu(alpha * y + bias[c]) + beta * dst (beta != 0
// only; bias may be null; relu keeps NaN); ga_winograd_grad_output reads
// 2x2 blocks of an (N, H, W, C) output gradient into E'; a tile whose 16
// values are not all finite is summed directly from image and filters
// instead (the transforms would make NaN of an infinite input);
// ga_winograd_filter transforms (K, 3, 3, C) filters into U (flip: the
// taps rotated by 180 degrees, for bprop; cmajor: into W);
// ga_winograd_filter_grad writes dF = alpha * G^T dU G + beta * dF (beta
// != 0 only).
//
// Launch shape: block (256, 1, 1), any grid (threads stride over the
// work), no shared memory.  One thread per (tile, channel) -- per (k, c)
// for the filter kernels -- with the channel fastest (k for cmajor), so
// that a warp's loads and stores of one tile are contiguous.
#define WINOGRAD_THREADS 256

struct WinogradArgs {
    const float *src;
    float *dst;
    const float *bias;     // ga_winograd_output: (C,) or null
    const float *image;    // ga_winograd_output: the convolution's input and filters,
    const float *filters;  // for the direct sums of tiles whose transforms are not finite
    long long tiles;    // N * TP * TQ
    int H, W;           // image (input, grad_output) or output (output) size
    int C;              // channels of src (input, grad_output, filters) or dst (output)
    int K;              // filters (filter kernels)
    int TP, TQ;         // tiles per image along h and w
    int pad_h, pad_w;   // ga_winograd_input: padding
    int src_ld, dst_ld; // images: elements from one position to the next (>= C)
    int image_H, image_W, image_C, image_ld;  // ga_winograd_output: the input's sizes
    float alpha, beta;
    int relu, flip;
    int cmajor;         // ga_winograd_filter: write W (16, C, K)
};

// a grid-stride loop of i over the work items 0 .. total - 1
#define FOR_EACH_ITEM(i, total) \
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (total); \
         i += (long long)gridDim.x * blockDim.x)

// work item i of a (tile, channel) kernel: channel c of tile (n, ty, tx)
struct TileItem {
    int n, ty, tx, c;
};

__device__ __forceinline__ TileItem tile_item(long long i, const WinogradArgs &a) {
    TileItem w;
    w.c = (int)(i % a.C);
    const long long t = i / a.C;
    w.tx = (int)(t % a.TQ);
    w.ty = (int)(t / a.TQ % a.TP);
    w.n = (int)(t / a.TQ / a.TP);
    return w;
}

extern "C" __global__ void __launch_bounds__(WINOGRAD_THREADS)
ga_winograd_input(WinogradArgs a) {
    const long long total = a.tiles * a.C;
    const long long plane = total;  // elements of one transform point
    FOR_EACH_ITEM(i, total) {
        const TileItem w = tile_item(i, a);
        const int n = w.n, ty = w.ty, tx = w.tx, c = w.c;
        float d[4][4];
#pragma unroll
        for (int r = 0; r < 4; ++r) {
            const int y = 2 * ty - a.pad_h + r;
#pragma unroll
            for (int s = 0; s < 4; ++s) {
                const int x = 2 * tx - a.pad_w + s;
                const bool inside = y >= 0 && y < a.H && x >= 0 && x < a.W;
                d[r][s] = inside ? a.src[(((long long)n * a.H + y) * a.W + x) * a.src_ld + c] : 0.f;
            }
        }
        float b[4][4];  // B^T d
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            b[0][s] = d[0][s] - d[2][s];
            b[1][s] = d[1][s] + d[2][s];
            b[2][s] = d[2][s] - d[1][s];
            b[3][s] = d[1][s] - d[3][s];
        }
        float *out = a.dst + i;
#pragma unroll
        for (int r = 0; r < 4; ++r) {  // (B^T d) B
            out[(4 * r + 0) * plane] = b[r][0] - b[r][2];
            out[(4 * r + 1) * plane] = b[r][1] + b[r][2];
            out[(4 * r + 2) * plane] = b[r][2] - b[r][1];
            out[(4 * r + 3) * plane] = b[r][1] - b[r][3];
        }
    }
}

// output (n, y, x, c) of the 3x3 convolution of a.image (padding pad_h,
// pad_w: zeros, multiplied like the gather route's) with a.filters, summed
// directly; with flip, the data gradient's rotated filters (K, 3, 3, C)
__device__ float direct_sum(const WinogradArgs &a, int n, int y, int x, int c) {
    float sum = 0.f;
    for (int r = 0; r < 3; ++r) {
        const int h = y + r - a.pad_h;
        for (int s = 0; s < 3; ++s) {
            const int v = x + s - a.pad_w;
            const bool inside = h >= 0 && h < a.image_H && v >= 0 && v < a.image_W;
            const float *in = a.image + (((long long)n * a.image_H + h) * a.image_W + v) * a.image_ld;
            for (int k = 0; k < a.image_C; ++k) {
                const float f = a.flip ? a.filters[((long long)k * 9 + (2 - r) * 3 + (2 - s)) * a.C + c]
                                       : a.filters[((long long)c * 9 + r * 3 + s) * a.image_C + k];
                sum = fmaf(inside ? in[k] : 0.f, f, sum);
            }
        }
    }
    return sum;
}

extern "C" __global__ void __launch_bounds__(WINOGRAD_THREADS)
ga_winograd_output(WinogradArgs a) {
    const long long total = a.tiles * a.C;
    const long long plane = total;
    FOR_EACH_ITEM(i, total) {
        const TileItem w = tile_item(i, a);
        const int n = w.n, ty = w.ty, tx = w.tx, c = w.c;
        float m[4][4];
        bool finite = true;
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            m[k / 4][k % 4] = a.src[k * plane + i];
            finite = finite && isfinite(m[k / 4][k % 4]);
        }
        float r[2][4];  // A^T m
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            r[0][s] = m[0][s] + m[1][s] + m[2][s];
            r[1][s] = m[1][s] - m[2][s] - m[3][s];
        }
        const float bias = a.bias ? a.bias[c] : 0.f;
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            const int y = 2 * ty + p;
            if (y >= a.H)
                continue;
            const float y0 = r[p][0] + r[p][1] + r[p][2];  // (A^T m) A
            const float y1 = r[p][1] - r[p][2] - r[p][3];
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int x = 2 * tx + q;
                if (x >= a.W)
                    continue;
                // an infinite input makes inf - inf in the transforms: NaN where
                // the direct sum is +-inf, so such tiles are summed directly
                const float sum = finite ? (q == 0 ? y0 : y1) : direct_sum(a, n, y, x, c);
                float v = a.alpha * sum + bias;
                if (a.relu && v < 0.f)
                    v = 0.f;
                float *dst = a.dst + (((long long)n * a.H + y) * a.W + x) * a.dst_ld + c;
                if (a.beta != 0.f)
                    v += a.beta * *dst;
                *dst = v;
            }
        }
    }
}

extern "C" __global__ void __launch_bounds__(WINOGRAD_THREADS)
ga_winograd_grad_output(WinogradArgs a) {
    const long long total = a.tiles * a.C;
    const long long plane = total;
    FOR_EACH_ITEM(i, total) {
        const TileItem w = tile_item(i, a);
        const int n = w.n, ty = w.ty, tx = w.tx, c = w.c;
        float e[2][2];
#pragma unroll
        for (int p = 0; p < 2; ++p) {
            const int y = 2 * ty + p;
#pragma unroll
            for (int q = 0; q < 2; ++q) {
                const int x = 2 * tx + q;
                e[p][q] = y < a.H && x < a.W
                    ? a.src[(((long long)n * a.H + y) * a.W + x) * a.src_ld + c] : 0.f;
            }
        }
        float s[4][2];  // A e, A = (A^T)^T
#pragma unroll
        for (int q = 0; q < 2; ++q) {
            s[0][q] = e[0][q];
            s[1][q] = e[0][q] + e[1][q];
            s[2][q] = e[0][q] - e[1][q];
            s[3][q] = -e[1][q];
        }
        float *out = a.dst + i;
#pragma unroll
        for (int r = 0; r < 4; ++r) {  // (A e) A^T
            out[(4 * r + 0) * plane] = s[r][0];
            out[(4 * r + 1) * plane] = s[r][0] + s[r][1];
            out[(4 * r + 2) * plane] = s[r][0] - s[r][1];
            out[(4 * r + 3) * plane] = -s[r][1];
        }
    }
}

extern "C" __global__ void __launch_bounds__(WINOGRAD_THREADS)
ga_winograd_filter(WinogradArgs a) {
    const long long total = (long long)a.K * a.C;
    FOR_EACH_ITEM(i, total) {
        const int c = (int)(a.cmajor ? i / a.K : i % a.C);
        const long long k = a.cmajor ? i % a.K : i / a.C;
        float g[3][3];
#pragma unroll
        for (int r = 0; r < 3; ++r)
#pragma unroll
            for (int s = 0; s < 3; ++s) {
                const int tap = a.flip ? (2 - r) * 3 + (2 - s) : r * 3 + s;
                g[r][s] = a.src[(k * 9 + tap) * a.C + c];
            }
        float h[4][3];  // G g
#pragma unroll
        for (int s = 0; s < 3; ++s) {
            h[0][s] = g[0][s];
            h[1][s] = 0.5f * (g[0][s] + g[1][s] + g[2][s]);
            h[2][s] = 0.5f * (g[0][s] - g[1][s] + g[2][s]);
            h[3][s] = g[2][s];
        }
        float *out = a.dst + i;
        const long long plane = total;
#pragma unroll
        for (int r = 0; r < 4; ++r) {  // (G g) G^T
            out[(4 * r + 0) * plane] = h[r][0];
            out[(4 * r + 1) * plane] = 0.5f * (h[r][0] + h[r][1] + h[r][2]);
            out[(4 * r + 2) * plane] = 0.5f * (h[r][0] - h[r][1] + h[r][2]);
            out[(4 * r + 3) * plane] = h[r][2];
        }
    }
}

extern "C" __global__ void __launch_bounds__(WINOGRAD_THREADS)
ga_winograd_filter_grad(WinogradArgs a) {
    const long long total = (long long)a.K * a.C;
    FOR_EACH_ITEM(i, total) {
        const int c = (int)(i % a.C);
        const long long k = i / a.C;
        float u[4][4];
#pragma unroll
        for (int x = 0; x < 16; ++x)
            u[x / 4][x % 4] = a.src[x * total + i];
        float w[3][4];  // G^T dU
#pragma unroll
        for (int s = 0; s < 4; ++s) {
            w[0][s] = u[0][s] + 0.5f * (u[1][s] + u[2][s]);
            w[1][s] = 0.5f * (u[1][s] - u[2][s]);
            w[2][s] = 0.5f * (u[1][s] + u[2][s]) + u[3][s];
        }
#pragma unroll
        for (int r = 0; r < 3; ++r) {  // (G^T dU) G
            float v[3];
            v[0] = w[r][0] + 0.5f * (w[r][1] + w[r][2]);
            v[1] = 0.5f * (w[r][1] - w[r][2]);
            v[2] = 0.5f * (w[r][1] + w[r][2]) + w[r][3];
#pragma unroll
            for (int s = 0; s < 3; ++s) {
                float *dst = a.dst + (k * 9 + r * 3 + s) * a.C + c;
                float value = a.alpha * v[s];
                if (a.beta != 0.f)
                    value += a.beta * *dst;
                *dst = value;
            }
        }
    }
}
