/* Quantizing activations to 8 bits and the row dots: straight from a row's blocks (AVX2,
 * per type) or from a decoded row. Included by experts.c only. */
#ifndef HEARTH_DOTS_H
#define HEARTH_DOTS_H

#include "blocks.h"
#include "iq.h"

/* --- activations and the dot ---------------------------------------------------------- */

#if defined(__AVX512BW__) && !defined(HEARTH_NO_AVX512)
/* The scalar `quantize` below in 512-bit vectors, bit for bit: the same max, the same
 * float d and 1/d, the same products rounded to nearest even (lrintf's default mode), the
 * same integer sums. */
static inline float amax_of(const float *v, int len) {  /* len: a multiple of 16 */
    const __m512 mask = _mm512_castsi512_ps(_mm512_set1_epi32(0x7fffffff));
    __m512 m = _mm512_setzero_ps();
    for (int j = 0; j < len; j += 16) m = _mm512_max_ps(m, _mm512_and_ps(_mm512_loadu_ps(v + j), mask));
    return _mm512_reduce_max_ps(m);
}
static inline void round_to(const float *v, int len, float id, int8_t *q) {
    const __m512 s = _mm512_set1_ps(id);
    for (int j = 0; j < len; j += 16)
        _mm_storeu_si128((__m128i *)(q + j),
                         _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(_mm512_mul_ps(_mm512_loadu_ps(v + j), s))));
}
/* The sums of each 8 of 64 int8 (as uint8 + 128 through vpsadbw, less 8 · 128). */
static inline void sums8(const int8_t *q, int64_t out[8]) {
    __m512i v = _mm512_xor_si512(_mm512_loadu_si512((const void *)q), _mm512_set1_epi8((char)0x80));
    _mm512_storeu_si512((void *)out, _mm512_sub_epi64(_mm512_sad_epu8(v, _mm512_setzero_si512()),
                                                      _mm512_set1_epi64(1024)));
}

static void quantize(const float *x, int64_t n, Act *a) {
    int64_t s8[8];
    for (int64_t b = 0; b < n / 32; b++) {
        const float *v = x + 32 * b;
        float amax = amax_of(v, 32);
        float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
        int8_t *q = a->q + 32 * b;
        round_to(v, 32, id, q);
        __m256i u = _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)q), _mm256_set1_epi8((char)0x80));
        _mm256_storeu_si256((__m256i *)s8, _mm256_sad_epu8(u, _mm256_setzero_si256()));
        int32_t sum0 = (int32_t)(s8[0] + s8[1] - 2048), sum1 = (int32_t)(s8[2] + s8[3] - 2048);
        a->d[b] = d;
        a->ms[2 * b] = d * (float)sum0;
        a->ms[2 * b + 1] = d * (float)sum1;
        a->ms32[b] = d * (float)(sum0 + sum1);
    }
    if (n % 256 || a->k == NULL) return;
    for (int64_t b = 0; b < n / 256; b++) {
        const float *v = x + 256 * b;
        float amax = amax_of(v, 256);
        float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
        int8_t *q = a->k + 256 * b;
        round_to(v, 256, id, q);
        for (int c = 0; c < 4; c++) {
            sums8(q + 64 * c, s8);
            for (int g = 0; g < 4; g++) a->ks[16 * b + 4 * c + g] = (int16_t)(s8[2 * g] + s8[2 * g + 1]);
        }
        for (int g = 0; g < 8; g++)
            a->ks32[8 * b + g] = (int16_t)(a->ks[16 * b + 2 * g] + a->ks[16 * b + 2 * g + 1]);
        a->kd[b] = d;
    }
}
#else
static void quantize(const float *x, int64_t n, Act *a) {
    for (int64_t b = 0; b < n / 32; b++) {
        const float *v = x + 32 * b;
        float amax = 0.f;
        for (int l = 0; l < 32; l++) amax = fmaxf(amax, fabsf(v[l]));
        float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
        int32_t sum0 = 0, sum1 = 0;
        int8_t *q = a->q + 32 * b;
        for (int l = 0; l < 32; l++) q[l] = (int8_t)lrintf(v[l] * id);
        for (int l = 0; l < 16; l++) sum0 += q[l], sum1 += q[l + 16];
        a->d[b] = d;
        a->ms[2 * b] = d * (float)sum0;
        a->ms[2 * b + 1] = d * (float)sum1;
        a->ms32[b] = d * (float)(sum0 + sum1);
    }
    if (n % 256 || a->k == NULL) return;
    for (int64_t b = 0; b < n / 256; b++) {  /* the per-256 form */
        const float *v = x + 256 * b;
        float amax = 0.f;
        for (int l = 0; l < 256; l++) amax = fmaxf(amax, fabsf(v[l]));
        float d = amax / 127.f, id = d > 0.f ? 1.f / d : 0.f;
        int8_t *q = a->k + 256 * b;
        for (int l = 0; l < 256; l++) q[l] = (int8_t)lrintf(v[l] * id);
        for (int g = 0; g < 16; g++) {
            int32_t sum = 0;
            for (int l = 0; l < 16; l++) sum += q[16 * g + l];
            a->ks[16 * b + g] = (int16_t)sum;  /* |sum| <= 16 * 127 */
        }
        for (int g = 0; g < 8; g++)
            a->ks32[8 * b + g] = (int16_t)(a->ks[16 * b + 2 * g] + a->ks[16 * b + 2 * g + 1]);
        a->kd[b] = d;
    }
}
#endif

/* --- fused row dots (AVX2): one weight row against one activation row, no decode buffer -- */
#ifdef __AVX2__
static inline float hsum(__m256 v) {
    __m128 h = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    h = _mm_add_ps(h, _mm_movehl_ps(h, h));
    h = _mm_add_ss(h, _mm_movehdup_ps(h));
    return _mm_cvtss_f32(h);
}

/* 8 int32 partial sums of u (unsigned, < 128) times x (signed), 32 pairs. */
static inline __m256 udot(__m256i u, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_cvtepi32_ps(_mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x));
#elif defined(__AVXVNNI__)
    return _mm256_cvtepi32_ps(_mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, x));
#else
    return _mm256_cvtepi32_ps(
        _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
#endif
}

/* acc plus each lane's 4 products of u (unsigned, < 128) and x (signed): `udot`'s integers
 * before the conversion, from a starting sum. */
static inline __m256i udot_acc(__m256i acc, __m256i u, __m256i x) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, x);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(acc, u, x);
#else
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1)));
#endif
}

/* The same for signed w: |w| times x with w's sign. */
static inline __m256 sdot(__m256i w, __m256i x) {
    return udot(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w));
}

/* 16 bytes of nibbles → 32 values: the low nibbles, then the high ones. */
static inline __m256i nibbles32(const uint8_t *qs) {
    __m128i v = _mm_loadu_si128((const __m128i *)qs), m = _mm_set1_epi8(15);
    return _mm256_set_m128i(_mm_and_si128(_mm_srli_epi16(v, 4), m), _mm_and_si128(v, m));
}

/* The 32 bits of qh as 32 bytes of 0 or 16. */
static inline __m256i fifth32(const uint8_t *qh4) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    const __m256i pick = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                           0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)qh), pick), bit);
    return _mm256_and_si256(_mm256_cmpeq_epi8(v, bit), _mm256_set1_epi8(16));
}

/* A Q5_0 block's 32 signed codes: the nibbles at w + 6 with the fifth bits of w + 2, less 16.
 * With AVX-512 the fifth bits are a byte mask: 16 is taken from the bytes whose bit is 0
 * (n | 16 - 16 = n), two instructions where `fifth32`, or and sub take seven; the same bytes. */
static inline __m256i q5_0_codes(const uint8_t *w) {
#if defined(__AVX512BW__) && defined(__AVX512VL__) && !defined(HEARTH_NO_AVX512)
    uint32_t qh;
    memcpy(&qh, w + 2, 4);
    const __m256i n = nibbles32(w + 6);
    return _mm256_mask_sub_epi8(n, (__mmask32)~qh, n, _mm256_set1_epi8(16));
#else
    return _mm256_sub_epi8(_mm256_or_si256(nibbles32(w + 6), fifth32(w + 2)), _mm256_set1_epi8(16));
#endif
}

#define XQ(b) _mm256_loadu_si256((const __m256i *)(a->q + 32 * (b)))
/* The weights stream from memory once per token: ask for the lines PREFETCH_AHEAD bytes on
 * while this block computes (the hardware prefetcher stops at each 4 KB page). */
#ifndef PREFETCH_AHEAD
#define PREFETCH_AHEAD 2048
#endif
#define PREFETCH(p)                                                                            \
    do {                                                                                       \
        _mm_prefetch((const char *)(p) + PREFETCH_AHEAD, _MM_HINT_T0);                         \
        _mm_prefetch((const char *)(p) + PREFETCH_AHEAD + 64, _MM_HINT_T0);                    \
        _mm_prefetch((const char *)(p) + PREFETCH_AHEAD + 128, _MM_HINT_T0);                   \
    } while (0)
#define PREFETCH1(p) _mm_prefetch((const char *)(p) + PREFETCH_AHEAD, _MM_HINT_T0)

/* The 32-block types with one scale (Q8_0, Q4_0, Q5_0): a block's 32 signed codes. Q4_0 and
 * Q5_0's are the unsigned codes less 8 or 16, as the decoded rows hold them: a row's bits
 * never depend on how many rows its matrix meets (fused here, decoded for longer prefills). */
enum { X0_Q8_0, X0_Q4_0, X0_Q5_0 };
static const int64_t X0_STEP[3] = {34, 18, 22};  /* block bytes */
static inline __attribute__((always_inline)) __m256i x0_codes(const uint8_t *w, int kind) {
    switch (kind) {
    case X0_Q8_0: return _mm256_loadu_si256((const __m256i *)(w + 2));
    case X0_Q4_0: return _mm256_sub_epi8(nibbles32(w + 2), _mm256_set1_epi8(8));
    default: return q5_0_codes(w);
    }
}

/* A block's step into a row's sum: codes · activations times the two scales, one fma. The
 * two-row dots (kdot2.h) take the same step per row, so each row's bits are these. */
static inline __attribute__((always_inline)) __m256 x0_step(const uint8_t *w, int kind, __m256i x, float d,
                                                            __m256 acc) {
    return _mm256_fmadd_ps(sdot(x0_codes(w, kind), x), _mm256_set1_ps(fp16(w) * d), acc);
}

static inline __attribute__((always_inline)) float fdot_x0(const uint8_t *w, int64_t nb, const Act *a,
                                                           int kind) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += X0_STEP[kind]) {
        PREFETCH1(w);
        acc = x0_step(w, kind, XQ(b), a->d[b], acc);
    }
    return hsum(acc);
}
static float fdot_q8_0(const uint8_t *w, int64_t nb, const Act *a) { return fdot_x0(w, nb, a, X0_Q8_0); }
static float fdot_q4_0(const uint8_t *w, int64_t nb, const Act *a) { return fdot_x0(w, nb, a, X0_Q4_0); }
static float fdot_q5_0(const uint8_t *w, int64_t nb, const Act *a) { return fdot_x0(w, nb, a, X0_Q5_0); }

/* Q4_1 and Q5_1 (``fifth``): unsigned codes and an offset per block, summed exactly as
 * `dots` sums their decoded rows (the codes' products in the same lanes and order; the
 * offsets by 16-group in eight lanes, whole chunks of eight groups, then the rest one at a
 * time: `offsets`), so a row's bits never depend on how many rows its matrix meets. A chunk's
 * eight offsets (four blocks', each twice) are gathered in registers (`x_1_offsets`): written
 * to an array one by one and read back as a vector, they stalled every chunk on the failed
 * store forwarding (the bundled SmolLM2's 576-wide Q4_1 rows: 11 against Q4_0's 23 GMAC/s
 * on one thread). */
static inline __m256 x_1_offsets(const uint8_t *w, int64_t step) {
#ifdef __F16C__
    uint16_t h[4];
    for (int i = 0; i < 4; i++) memcpy(&h[i], w + i * step + 2, 2);
    const __m128 m = _mm_cvtph_ps(_mm_loadl_epi64((const __m128i *)h));
#else
    const __m128 m = _mm_setr_ps(fp16(w + 2), fp16(w + step + 2), fp16(w + 2 * step + 2),
                                 fp16(w + 3 * step + 2));
#endif
    const __m256 neg = _mm256_xor_ps(_mm256_castps128_ps256(m), _mm256_set1_ps(-0.f));
    return _mm256_permutevar8x32_ps(neg, _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3));
}

static inline float fdot_x_1(const uint8_t *w, int64_t nb, const Act *a, int fifth) {
    const int64_t step = fifth ? 24 : 20, groups = 2 * nb, whole = groups / 8 * 8;
    const uint8_t *start = w;
    __m256 acc = _mm256_setzero_ps(), off = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += step) {
        PREFETCH1(w);
        __m256i q = fifth ? _mm256_or_si256(nibbles32(w + 8), fifth32(w + 4)) : nibbles32(w + 4);
        acc = _mm256_fmadd_ps(udot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
        if ((2 * b + 2) % 8 == 0 && 2 * b + 2 <= whole)  /* blocks b - 3 .. b: a whole chunk */
            off = _mm256_fmadd_ps(x_1_offsets(w - 3 * step, step), _mm256_loadu_ps(a->ms + 2 * b - 6), off);
    }
    float total = hsum(off);
    for (int64_t g = whole; g < groups; g++)  /* `offsets`' tail, the same fused steps */
        total = fmaf(-fp16(start + (g / 2) * step + 2), a->ms[g], total);
    return hsum(acc) - total;
}

static float fdot_q4_1(const uint8_t *w, int64_t nb, const Act *a) { return fdot_x_1(w, nb, a, 0); }
static float fdot_q5_1(const uint8_t *w, int64_t nb, const Act *a) { return fdot_x_1(w, nb, a, 1); }

static float fdot_mxfp4(const uint8_t *w, int64_t nb, const Act *a) {
    const __m256i table = _mm256_broadcastsi128_si256(
        _mm_loadu_si128((const __m128i *)MXFP4_VALUES));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += 17) {
        PREFETCH1(w);
        __m256i q = _mm256_shuffle_epi8(table, nibbles32(w + 1));
        float d = e8m0_half(w[0]);
        acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(d * a->d[b]), acc);
    }
    return hsum(acc);
}

static float fdot_iq4_nl(const uint8_t *w, int64_t nb, const Act *a) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)IQ4_VALUES));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += 18) {
        PREFETCH1(w);
        __m256i q = _mm256_shuffle_epi8(table, nibbles32(w + 2));
        acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
    }
    return hsum(acc);
}

static float fdot_iq4_xs(const uint8_t *w, int64_t nb, const Act *a) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)IQ4_VALUES));
    __m256 acc = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++, w += 136) {
        PREFETCH(w);
        float d = fp16(w);
        unsigned high = (unsigned)(w[2] | (w[3] << 8));
        for (int ib = 0; ib < 8; ib++) {
            int ls = ((w[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (int)(((high >> (2 * ib)) & 3) << 4);
            __m256i q = _mm256_shuffle_epi8(table, nibbles32(w + 8 + 16 * ib));
            int64_t b = 8 * i + ib;
            acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(d * (float)(ls - 32) * a->d[b]),
                                  acc);
        }
    }
    return hsum(acc);
}

#include "kpairs.h" /* the K-quant decode-step dots, by pairs of 32s */
#undef XQ

#endif

/* A row dotted straight from its blocks with one activation row (the dispatch, `fused`, is
 * in kdots.h, beside the last of them). */
typedef float (*FusedDot)(const uint8_t *, int64_t, const Act *);
/* Two rows ``stride`` bytes apart against one activation row, into y[0], y[1] (kdot2.h). */
typedef void (*FusedDot2)(const uint8_t *, int64_t stride, int64_t nb, const Act *, float *y);


/* Below this many weight bytes a call runs on one thread: waking a second one costs ~10 us
 * on an idle machine and up to a scheduler slice (ms) on a busy one, more than ~60 us of
 * reading (a 1 MB layer step, e.g. small experts at top-6) gains. */
#define PARALLEL_MIN_BYTES (1 << 20)

/* Rows of activations at or below which a row is dotted straight from its blocks; above,
 * it is decoded once and the decoded form is dotted with every activation row. */
#ifndef FUSED_MAX_ROWS
#define FUSED_MAX_ROWS 3
#endif

static Act act_at(const Act *base, int64_t i, int64_t cols) {
    Act a = {base->q + i * cols, base->d + i * (cols / 32), base->ms + i * (cols / 16),
             base->ms32 + i * (cols / 32), NULL, NULL, NULL, NULL};
    if (base->k != NULL) {
        a.k = base->k + i * cols, a.kd = base->kd + i * (cols / 256);
        a.ks = base->ks + i * (cols / 16), a.ks32 = base->ks32 + i * (cols / 32);
    }
    return a;
}

/* Σ over 16-groups of the row's offsets times the activations' scaled sums (types with
 * offsets only: Q4_1, Q5_1, Q4_K, Q5_K; the rest have none). Eight lanes: a serial float sum
 * here was a 4-cycle chain per 16 weights, slower than the dot itself. */
static float offsets(const Row *w, const Act *a, int64_t groups) {
    float total = 0.f;
    int64_t g = 0;
#ifdef __AVX2__
    __m256 acc = _mm256_setzero_ps();
    for (; g + 8 <= groups; g += 8)
        acc = _mm256_fmadd_ps(_mm256_loadu_ps(w->m + g), _mm256_loadu_ps(a->ms + g), acc);
    total = hsum(acc);
#endif
    /* One fused step a group, written out: GCC contracted this loop and `fdot_x_1`'s tail
     * differently (a row of 6, 7, 10, ... 32-blocks rounded apart between a decode step and
     * a prefill), so neither is left to the compiler. */
    for (; g < groups; g++) total = fmaf(w->m[g], a->ms[g], total);
    return total;
}

/* A decoded row w against the n activation rows of a: y[i * stride]. Four activation rows
 * at a time share each loaded weight block (a prefill's expert sees many rows). */
static void dots(const Row *w, const Act *a, int64_t n, int64_t cols, int with_offsets,
                 float *y, int64_t stride) {
    const int64_t nb = cols / 32, groups = cols / 16;
    (void)nb;  /* the vector path's */
    int64_t i = 0;
#ifdef __AVX2__
    for (; i + 4 <= n; i += 4) {
        Act r[4];
        __m256 acc[4];
        for (int j = 0; j < 4; j++)
            r[j] = act_at(a, i + j < n ? i + j : n - 1, cols), acc[j] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(w->q + 32 * b));
            __m256i uq = _mm256_sign_epi8(q, q);
            __m256 s = _mm256_loadu_ps(w->s4 + 8 * b);
            for (int j = 0; j < 4; j++) {
                __m256i x = _mm256_loadu_si256((const __m256i *)(r[j].q + 32 * b));
                __m256 sj = _mm256_mul_ps(s, _mm256_set1_ps(r[j].d[b]));
                acc[j] = _mm256_fmadd_ps(udot(uq, _mm256_sign_epi8(x, q)), sj, acc[j]);
            }
        }
        for (int j = 0; j < 4; j++)
            y[(i + j) * stride] = hsum(acc[j]) - (with_offsets ? offsets(w, &r[j], groups) : 0.f);
    }
    for (; i < n; i++) {  /* the last 1-3 rows one at a time */
        Act r = act_at(a, i, cols);
        __m256 acc = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            __m256i q = _mm256_loadu_si256((const __m256i *)(w->q + 32 * b));
            __m256i x = _mm256_loadu_si256((const __m256i *)(r.q + 32 * b));
            __m256 sj = _mm256_mul_ps(_mm256_loadu_ps(w->s4 + 8 * b), _mm256_set1_ps(r.d[b]));
            acc = _mm256_fmadd_ps(udot(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q)), sj, acc);
        }
        y[i * stride] = hsum(acc) - (with_offsets ? offsets(w, &r, groups) : 0.f);
    }
#endif
    for (; i < n; i++) {
        Act r = act_at(a, i, cols);
        float sum = 0.f;
        for (int64_t g = 0; g < groups; g++) {
            int32_t t = 0;
            for (int l = 0; l < 16; l++) t += (int32_t)w->q[16 * g + l] * r.q[16 * g + l];
            sum += w->s4[4 * g] * r.d[g / 2] * (float)t;
        }
        y[i * stride] = sum - (with_offsets ? offsets(w, &r, groups) : 0.f);
    }
}

#endif
