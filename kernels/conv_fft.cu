// conv_fft.cu: the transforms of FFT convolution (overlap-save tiles), fp32.
//
// What it computes.  An R x S, stride-1 convolution (cross-correlation)
// of an L x L input tile d with a filter g zero-padded to L x L is, at
// the TH x TW outputs whose taps do not wrap around (TH = L - R + 1,
// TW = L - S + 1),
//     y = IFFT2( FFT2(d) . conj(FFT2(g)) )              (. : elementwise)
// Summed over channels, the products at each of the L * (L/2 + 1) points
// of the real input's half spectrum become independent complex GEMMs, run
// by the caller with the exact-fp32 GEMM (gpuarray/gemm) as real GEMMs
// of twice the width:
//     fprop:  Y'[w] = [Dr Di] @ | Gr -Gi |      Y' = [Yr Yi]
//                               | Gi  Gr |
//     bprop:  the same over the output gradient E, the filters rotated by
//             180 degrees with C and K swapped, padding R - 1 - pad
//     update: Z[w] = E^H @ D over the tiles, two real GEMMs:
//             Re Z = [Er Ei]^T @ | Dr |    Im Z = [Er Ei]^T @ |  Di |
//                                | Di |                       | -Dr |
//             then each filter tap is an inverse DFT sum of Z
// The direct convolution needs R * S multiply-adds per output and channel
// pair; the GEMMs need 4 * L * (L/2 + 1) / (TH * TW) (2.8 for a 5x5
// filter and L = 32).  Every sum has a fixed order: the same bits on
// every run.
//
// Layouts (cuDNN names): images (N, H, W, C) and filters (K, R, S, C),
// channel innermost, fp32; filters contiguous, images with their positions
// src_ld or dst_ld elements apart (a channel slice of a wider tensor).
// Tile t = (n * TP + ty) * TQ + tx covers outputs ty * TH .. + TH - 1 and
// tx * TW .. + TW - 1 and reads the input window starting at
// (ty * TH - pad_h, tx * TW - pad_w), zeros outside the image.  Spectra:
// point w = fi * (L/2 + 1) + fj (fi: frequency along h, fj along w, the
// half spectrum fj <= L/2); element (w, t, part, c) at
// w * s_point + t * s_tile + part * s_part + c (part 0: real, 1: imaginary).
// Filter spectra G' are (points, 2 * Cin, 2 * Cout) as above; Z of update
// is (points, 2, K, C).
//
// Parameters: FftArgs below.  ga_fft_input<L> transforms the tiles of src
// (rows and columns past extent_h, extent_w of a window read as zeros:
// update's output-gradient tiles; parts = 3 adds the negated real part); ga_fft_filter<L> transforms (Cout, R,
// S, Cin) filters into G' (flip: bprop's rotated filters read from the
// layer's (K, R, S, C)); ga_fft_output<L> writes relu(alpha * y + bias[k])
// + beta * dst (beta != 0 only; bias may be null; relu keeps NaN), a tile
// whose spectrum is not all finite summed directly from image and filters
// instead (the transforms would spread an infinite or NaN input over the
// tile); ga_fft_filter_grad<L> writes dF = alpha * dF' + beta * dF.
//
// Launch shape: the tile kernels take block (FFT_CH * L, 1, 1) and grid
// (tiles or Cin, channel groups of FFT_CH, 1), static shared memory (the
// half spectra of FFT_CH channels, 35 KB at L = 32): a thread per
// (channel, row) transforms rows in registers, then a thread per
// (channel, column) columns, the channel fastest so that a warp's global
// loads and stores are 32-byte runs.  ga_fft_filter_grad takes block
// (256, 1, 1) and any grid: a thread per (k, r, c), threads striding
// over the rest.
#define FFT_CH 8
#define FFT_GRAD_THREADS 256
// the largest filter side (the filter gradient's sums are held in registers)
#define FFT_MAX_RS 7

struct FftArgs {
    const float *src;
    float *dst;
    const float *bias;     // ga_fft_output: (K,) or null
    const float *image;    // ga_fft_output: the convolution's input and filters,
    const float *filters;  // for the direct sums of non-finite tiles
    long long s_point, s_tile, s_part;  // spectra strides (elements)
    int H, W, C;           // src's (input) or dst's (output) image size and channels
    int Cin, Cout;         // filters: input and output channels of the convolution
    int R, S;              // filter size
    int TP, TQ, TH, TW;    // tiles per image along h and w; outputs per tile
    int pad_h, pad_w;      // the tile window's offset
    int extent_h, extent_w;  // ga_fft_input: rows and columns of a window read
    int src_ld, dst_ld;    // images: elements from one position to the next (src_ld:
                           // ga_fft_output's image)
    int image_H, image_W;  // ga_fft_output: the input's size
    float alpha, beta;
    int relu, flip;
    int parts;             // ga_fft_input: 3 also writes -real as part 2 (update's D)
};

struct cfloat {
    float re, im;
};

__device__ __forceinline__ cfloat cmul(cfloat a, cfloat b) {
    return {fmaf(a.re, b.re, -a.im * b.im), fmaf(a.re, b.im, a.im * b.re)};
}

__host__ __device__ constexpr int bit_reverse(int i, int bits) {
    int r = 0;
    for (int b = 0; b < bits; ++b)
        r |= ((i >> b) & 1) << (bits - 1 - b);
    return r;
}

__host__ __device__ constexpr int log2_of(int n) {
    return n <= 1 ? 0 : 1 + log2_of(n / 2);
}

// tw[j] = exp(-2 pi i j / L), j < L, for the block
template <int L>
__device__ __forceinline__ void load_twiddles(cfloat *tw) {
    for (int j = threadIdx.x; j < L; j += blockDim.x) {
        float s, c;
        sincospif(-2.0f * j / L, &s, &c);
        tw[j] = {c, s};
    }
}

// x = DFT(x) in place (inverse: the unnormalised inverse DFT): radix-2,
// decimation in time, fully unrolled so that x stays in registers
template <int L>
__device__ __forceinline__ void fft(cfloat (&x)[L], const cfloat *tw, bool inverse) {
    constexpr int bits = log2_of(L);
#pragma unroll
    for (int i = 0; i < L; ++i) {
        const int j = bit_reverse(i, bits);
        if (i < j) {
            const cfloat t = x[i];
            x[i] = x[j];
            x[j] = t;
        }
    }
#pragma unroll
    for (int stage = 0; stage < bits; ++stage) {
        const int half = 1 << stage;
        // butterfly b pairs x[i] and x[i + half]; a fixed trip count, so
        // that both loops unroll and x stays in registers
#pragma unroll
        for (int b = 0; b < L / 2; ++b) {
            const int j = b % half, i = (b - j) * 2 + j;
            cfloat w = tw[j * (L / (2 * half))];
            if (inverse)
                w.im = -w.im;
            const cfloat u = x[i], v = cmul(x[i + half], w);
            x[i] = {u.re + v.re, u.im + v.im};
            x[i + half] = {u.re - v.re, u.im - v.im};
        }
    }
}

// the filter tap (o, i, r, s) of the convolution run: the layer's
// (Cout, R, S, Cin) filters, or with flip bprop's, read from the layer's
// (Cin, R, S, Cout) filters rotated by 180 degrees
__device__ __forceinline__ float tap(const FftArgs &a, int o, int i, int r, int s) {
    return a.flip ? a.filters[(((long long)i * a.R + a.R - 1 - r) * a.S + a.S - 1 - s) * a.Cout + o]
                  : a.filters[(((long long)o * a.R + r) * a.S + s) * a.Cin + i];
}

// the shared state of a 2-D transform over FFT_CH channels
template <int L>
struct Planes {
    static constexpr int F = L / 2 + 1;
    cfloat tw[L];
    cfloat half[L][F][FFT_CH];  // [row][column frequency][channel]
};

// the second half of a forward 2-D transform: a thread per (channel,
// column) transforms the column and hands the spectrum to store(fi, fj, value)
template <int L, class Store>
__device__ __forceinline__ void forward_columns(Planes<L> &p, int lane, int rows, Store store) {
    const int fj = threadIdx.x / FFT_CH;
    if (fj >= Planes<L>::F)
        return;
    cfloat x[L];
#pragma unroll
    for (int i = 0; i < L; ++i)
        x[i] = i < rows ? p.half[i][fj][lane] : cfloat{0.f, 0.f};
    fft<L>(x, p.tw, false);
#pragma unroll
    for (int fi = 0; fi < L; ++fi)
        store(fi, fj, x[fi]);
}

// the first half: the row of thread (lane, row) is value(j) for j < L;
// its half spectrum goes to p.half[row]
template <int L, class Value>
__device__ __forceinline__ void forward_row(Planes<L> &p, int lane, int row, Value value) {
    cfloat x[L];
#pragma unroll
    for (int j = 0; j < L; ++j)
        x[j] = {value(j), 0.f};
    fft<L>(x, p.tw, false);
#pragma unroll
    for (int fj = 0; fj < Planes<L>::F; ++fj)
        p.half[row][fj][lane] = x[fj];
}

// grid (tiles, channel groups): the spectra of the tiles of src
template <int L>
__device__ void input_transform(const FftArgs &a) {
    __shared__ Planes<L> p;
    load_twiddles<L>(p.tw);
    __syncthreads();
    const int lane = threadIdx.x % FFT_CH, row = threadIdx.x / FFT_CH;
    const long long t = blockIdx.x;
    const int c = blockIdx.y * FFT_CH + lane;
    const int tx = (int)(t % a.TQ), ty = (int)(t / a.TQ % a.TP);
    const long long n = t / ((long long)a.TQ * a.TP);
    const int h = ty * a.TH - a.pad_h + row, w0 = tx * a.TW - a.pad_w;
    const bool live = c < a.C && row < a.extent_h && h >= 0 && h < a.H;
    const float *line = a.src + (live ? ((n * a.H + h) * a.W) * a.src_ld + c : 0);
    forward_row<L>(p, lane, row, [&](int j) {
        const int w = w0 + j;
        return live && j < a.extent_w && w >= 0 && w < a.W ? line[(long long)w * a.src_ld] : 0.f;
    });
    __syncthreads();
    if (c >= a.C)
        return;
    float *out = a.dst + t * a.s_tile + c;
    forward_columns<L>(p, lane, L, [&](int fi, int fj, cfloat v) {
        float *o = out + (fi * Planes<L>::F + fj) * a.s_point;
        o[0] = v.re;
        o[a.s_part] = v.im;
        if (a.parts == 3)
            o[2 * a.s_part] = -v.re;
    });
}

// grid (Cin, Cout groups): G' (points, 2 Cin, 2 Cout) of the filters
template <int L>
__device__ void filter_transform(const FftArgs &a) {
    __shared__ Planes<L> p;
    load_twiddles<L>(p.tw);
    __syncthreads();
    const int lane = threadIdx.x % FFT_CH, row = threadIdx.x / FFT_CH;
    const int i = blockIdx.x, o = blockIdx.y * FFT_CH + lane;
    if (row < a.R)
        forward_row<L>(p, lane, row, [&](int s) {
            return o < a.Cout && s < a.S ? tap(a, o, i, row, s) : 0.f;
        });
    __syncthreads();
    if (o >= a.Cout)
        return;
    const long long width = 2LL * a.Cout, point = 2LL * a.Cin * width;
    float *re_row = a.dst + (long long)i * width + o, *im_row = re_row + a.Cin * width;
    forward_columns<L>(p, lane, a.R, [&](int fi, int fj, cfloat v) {
        const long long w = (fi * Planes<L>::F + fj) * point;
        re_row[w] = v.re;
        re_row[w + a.Cout] = -v.im;
        im_row[w] = v.im;
        im_row[w + a.Cout] = v.re;
    });
}

// output (n, y, x, o) of the convolution of a.image (zeros outside it,
// the window offset by the padding) summed directly
__device__ float direct_sum(const FftArgs &a, long long n, int y, int x, int o) {
    float sum = 0.f;
    for (int r = 0; r < a.R; ++r) {
        const int h = y + r - a.pad_h;
        for (int s = 0; s < a.S; ++s) {
            const int v = x + s - a.pad_w;
            if (h < 0 || h >= a.image_H || v < 0 || v >= a.image_W)
                continue;
            const float *in = a.image + ((n * a.image_H + h) * a.image_W + v) * a.src_ld;
            for (int i = 0; i < a.Cin; ++i)
                sum = fmaf(in[i], tap(a, o, i, r, s), sum);
        }
    }
    return sum;
}

// grid (tiles, output channel groups): the outputs of the tiles from
// the spectra Y' in src
template <int L>
__device__ void output_transform(const FftArgs &a) {
    constexpr int F = Planes<L>::F;
    __shared__ Planes<L> p;
    __shared__ int finite[FFT_CH];
    load_twiddles<L>(p.tw);
    if (threadIdx.x < FFT_CH)
        finite[threadIdx.x] = 1;
    __syncthreads();
    const int lane = threadIdx.x % FFT_CH, part = threadIdx.x / FFT_CH;
    const long long t = blockIdx.x;
    const int k = blockIdx.y * FFT_CH + lane;
    if (part < F && k < a.C) {
        // columns: the inverse transform along h of column frequency fj = part
        const float *in = a.src + t * a.s_tile + part * a.s_point + k;
        cfloat x[L];
        bool ok = true;
#pragma unroll
        for (int fi = 0; fi < L; ++fi) {
            x[fi] = {in[fi * F * a.s_point], in[fi * F * a.s_point + a.s_part]};
            ok = ok && isfinite(x[fi].re) && isfinite(x[fi].im);
        }
        if (!ok)
            atomicAnd(&finite[lane], 0);  // any of the block's columns
        fft<L>(x, p.tw, true);
#pragma unroll
        for (int u = 0; u < L; ++u)
            p.half[u][part][lane] = x[u];
    }
    __syncthreads();
    const int u = part, tx = (int)(t % a.TQ), ty = (int)(t / a.TQ % a.TP);
    const long long n = t / ((long long)a.TQ * a.TP);
    const int y = ty * a.TH + u;
    if (k >= a.C || u >= a.TH || y >= a.H)
        return;
    const float bias = a.bias ? a.bias[k] : 0.f;
    float *row = a.dst + ((n * a.H + y) * a.W) * a.dst_ld + k;
    auto store = [&](int xo, float sum) {
        float value = a.alpha * sum + bias;
        if (a.relu && value < 0.f)
            value = 0.f;
        float *dst = row + (long long)xo * a.dst_ld;
        *dst = a.beta != 0.f ? value + a.beta * *dst : value;
    };
    const int x0 = tx * a.TW, x1 = min(x0 + a.TW, a.W);
    if (!finite[lane]) {  // rare: the direct sums, kept out of the unrolled path
        for (int xo = x0; xo < x1; ++xo)
            store(xo, direct_sum(a, n, y, xo, k));
        return;
    }
    // rows: the inverse transform along w of the Hermitian row
    cfloat x[L];
#pragma unroll
    for (int j = 0; j < L; ++j) {
        const cfloat v = p.half[u][j < F ? j : L - j][lane];
        x[j] = j < F ? v : cfloat{v.re, -v.im};
    }
    fft<L>(x, p.tw, true);
#pragma unroll
    for (int v = 0; v < L; ++v) {
        if (x0 + v < x1)
            store(x0 + v, x[v].re * (1.f / (L * L)));
    }
}

// a thread per (k, r, c): dF[k, r, s, c] = alpha / L^2 * sum over the
// spectrum of Re(Z exp(+2 pi i (fi r + fj s) / L)), the half spectrum's
// columns 0 < fj < L/2 counted twice (for their conjugates), + beta * dF;
// the threads of a block share k and read the same Z (L1 hits)
template <int L>
__device__ void filter_grad(const FftArgs &a) {
    constexpr int F = Planes<L>::F;
    __shared__ cfloat tw[L];
    load_twiddles<L>(tw);
    __syncthreads();
    const long long plane = (long long)a.Cout * a.Cin, total = plane * a.R;
    for (long long item = blockIdx.x * (long long)blockDim.x + threadIdx.x; item < total;
         item += (long long)gridDim.x * blockDim.x) {
        const int c = (int)(item % a.Cin);
        const long long kr = item / a.Cin;
        const int r = (int)(kr % a.R), k = (int)(kr / a.R);
        const float *zk = a.src + (long long)k * a.Cin + c;
        float acc[FFT_MAX_RS] = {};
        for (int fj = 0; fj < F; ++fj) {
            cfloat col = {0.f, 0.f};  // sum over fi of Z exp(+2 pi i fi r / L)
#pragma unroll 8
            for (int fi = 0; fi < L; ++fi) {
                const float *z = zk + (fi * F + fj) * 2 * plane;
                const cfloat v = {z[0], z[plane]}, w = tw[(fi * r) % L];
                col = {col.re + v.re * w.re + v.im * w.im, col.im + v.im * w.re - v.re * w.im};
            }
            const float weight = fj == 0 || fj == L / 2 ? 1.f : 2.f;
#pragma unroll
            for (int s = 0; s < FFT_MAX_RS; ++s) {
                const cfloat w = tw[(fj * s) % L];  // Re(col * conj(w))
                acc[s] += weight * (col.re * w.re + col.im * w.im);
            }
        }
#pragma unroll
        for (int s = 0; s < FFT_MAX_RS; ++s) {
            if (s >= a.S)
                continue;
            float *dst = a.dst + (((long long)k * a.R + r) * a.S + s) * a.Cin + c;
            const float value = a.alpha * acc[s] * (1.f / (L * L));
            *dst = a.beta != 0.f ? value + a.beta * *dst : value;
        }
    }
}

// the output transform asks for 2 blocks per multiprocessor: left to
// itself, ptxas gives it 80 registers and spills (93 with the bound, none spilled)
#define FFT_TILE_KERNEL(name, L, body, blocks)                                  \
    extern "C" __global__ void __launch_bounds__(FFT_CH * L, blocks)             \
    name##_##L(FftArgs a) {                                                      \
        body<L>(a);                                                              \
    }
#define FFT_KERNELS(L)                                                           \
    FFT_TILE_KERNEL(ga_fft_input, L, input_transform, 1)                         \
    FFT_TILE_KERNEL(ga_fft_filter, L, filter_transform, 1)                       \
    FFT_TILE_KERNEL(ga_fft_output, L, output_transform, 2)                       \
    extern "C" __global__ void __launch_bounds__(FFT_GRAD_THREADS)               \
    ga_fft_filter_grad_##L(FftArgs a) {                                          \
        filter_grad<L>(a);                                                       \
    }

FFT_KERNELS(16)
FFT_KERNELS(32)
