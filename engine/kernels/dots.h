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

static float fdot_q8_0(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += 34) {
        PREFETCH1(w);
        __m256i q = _mm256_loadu_si256((const __m256i *)(w + 2));
        acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
    }
    return hsum(acc);
}

static float fdot_q4_0(const uint8_t *w, int64_t nb, const Act *a) {
    /* Signed codes (u - 8), as the decoded rows hold them: a row's bits never depend on how
     * many rows its matrix meets (fused here, decoded for longer prefills). */
    const __m256i eight = _mm256_set1_epi8(8);
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += 18) {
        PREFETCH1(w);
        __m256i q = _mm256_sub_epi8(nibbles32(w + 2), eight);
        acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
    }
    return hsum(acc);
}

static float fdot_q5_0(const uint8_t *w, int64_t nb, const Act *a) {
    const __m256i sixteen = _mm256_set1_epi8(16);  /* signed codes, as fdot_q4_0 */
    __m256 acc = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += 22) {
        PREFETCH1(w);
        __m256i q = _mm256_sub_epi8(_mm256_or_si256(nibbles32(w + 6), fifth32(w + 2)), sixteen);
        acc = _mm256_fmadd_ps(sdot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
    }
    return hsum(acc);
}

/* Q4_1 and Q5_1 (``fifth``): unsigned codes and an offset per block, summed exactly as
 * `dots` sums their decoded rows (the codes' products in the same lanes and order; the
 * offsets by 16-group in eight lanes, whole chunks of eight groups, then the rest one at a
 * time: `offsets`), so a row's bits never depend on how many rows its matrix meets. */
static inline float fdot_x_1(const uint8_t *w, int64_t nb, const Act *a, int fifth) {
    const int64_t step = fifth ? 24 : 20, groups = 2 * nb, whole = groups / 8 * 8;
    const uint8_t *start = w;
    __m256 acc = _mm256_setzero_ps(), off = _mm256_setzero_ps();
    float m8[8];
    for (int64_t b = 0; b < nb; b++, w += step) {
        PREFETCH1(w);
        __m256i q = fifth ? _mm256_or_si256(nibbles32(w + 8), fifth32(w + 4)) : nibbles32(w + 4);
        acc = _mm256_fmadd_ps(udot(q, XQ(b)), _mm256_set1_ps(fp16(w) * a->d[b]), acc);
        m8[(2 * b) % 8] = m8[(2 * b + 1) % 8] = -fp16(w + 2);
        if ((2 * b + 2) % 8 == 0 && 2 * b + 2 <= whole)
            off = _mm256_fmadd_ps(_mm256_loadu_ps(m8), _mm256_loadu_ps(a->ms + 2 * b - 6), off);
    }
    float total = hsum(off);
    for (int64_t g = whole; g < groups; g++) total += -fp16(start + (g / 2) * step + 2) * a->ms[g];
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

/* A K-block's eight 6-bit scales and mins (Q4_K, Q5_K) as bytes, without branches. */
static inline void k4_bytes(const uint8_t *packed, uint32_t sc[2], uint32_t m[2]) {
    uint32_t a, b, c;
    memcpy(&a, packed, 4), memcpy(&b, packed + 4, 4), memcpy(&c, packed + 8, 4);
    sc[0] = a & 0x3f3f3f3fu, sc[1] = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
    m[0] = b & 0x3f3f3f3fu, m[1] = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
}

/* Σ_s bytes[s] · sums[s] over eight unsigned bytes and eight int16 sums. */
static inline int32_t dot8(const uint32_t bytes[2], const int16_t *sums) {
    __m128i p = _mm_madd_epi16(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)bytes)),
                               _mm_loadu_si128((const __m128i *)sums));
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0x4e));
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0xb1));
    return _mm_cvtsi128_si32(p);
}

/* The K-quant dots against the per-256 activations: integer sums within a block, weighted
 * by the sub-blocks' integer scales (Q4_K, Q5_K and Q6_K by pairs of 32s, `kpair`; Q2_K and
 * Q3_K each 32 by maddubs and madd, kdots.h), one float multiply per 256. About half the
 * instructions of the per-32 form above. */

/* --- pairs of 32s (Q4_K, Q5_K, Q6_K) ------------------------------------------------------
 * Each 32's products summed by fours into int32 lanes (vpdpbusd), the two 32s' lanes packed
 * to int16 (|a sum of four| <= 4 · 63 · 127 < 2^15: packing is exact) and multiplied by
 * their sub-scales pairwise into the block's eight int32 lanes (vpdpwssd): three multiplies
 * for two 32s, where maddubs, madd by the scale and an add took four, on the pipes that
 * bound the prefill GEMM. After the pack, a 128-bit lane holds four lanes of the first 32
 * then four of the second, so block lane l sums the eight bytes 8l' .. 8l'+7 of one 32 (l'
 * = l within its half) times that 32's scale (or its 16-group's: Q6_K). Every path of these
 * types sums exactly these lanes (dots, frows, kdots, the GEMM), so a row's bits never
 * depend on the path. Without VNNI the sums of four are maddubs then madd by ones (pair
 * sums <= 2 · 63 · 127: no saturation), the same integers. */
static inline __m256i sum4x8(__m256i u, __m256i x) {  /* u: unsigned codes, x: signed */
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(_mm256_setzero_si256(), u, x);
#elif defined(__AVXVNNI__)
    return _mm256_dpbusd_avx_epi32(_mm256_setzero_si256(), u, x);
#else
    return _mm256_madd_epi16(_mm256_maddubs_epi16(u, x), _mm256_set1_epi16(1));
#endif
}
/* sum + the pair (q0 · x0, q1 · x1) times sc (per 128-bit lane: four int16 scales of the
 * first 32, then four of the second). */
static inline __m256i kpair(__m256i sum, __m256i q0, __m256i x0, __m256i q1, __m256i x1, __m256i sc) {
    const __m256i p = _mm256_packs_epi32(sum4x8(q0, x0), sum4x8(q1, x1));
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpwssd_epi32(sum, p, sc);
#elif defined(__AVXVNNI__)
    return _mm256_dpwssd_avx_epi32(sum, p, sc);
#else
    return _mm256_add_epi32(sum, _mm256_madd_epi16(p, sc));
#endif
}
/* Byte masks: from eight int16 scales in each 128-bit lane, words 0-3 <- scale a, 4-7 <- b
 * (low lane) and c, d (high lane). */
#define PAIR16(a, b, c, d)                                                                      \
    {2 * (a), 2 * (a) + 1, 2 * (a), 2 * (a) + 1, 2 * (a), 2 * (a) + 1, 2 * (a), 2 * (a) + 1,     \
     2 * (b), 2 * (b) + 1, 2 * (b), 2 * (b) + 1, 2 * (b), 2 * (b) + 1, 2 * (b), 2 * (b) + 1,     \
     2 * (c), 2 * (c) + 1, 2 * (c), 2 * (c) + 1, 2 * (c), 2 * (c) + 1, 2 * (c), 2 * (c) + 1,     \
     2 * (d), 2 * (d) + 1, 2 * (d), 2 * (d) + 1, 2 * (d), 2 * (d) + 1, 2 * (d), 2 * (d) + 1}
/* Q4_K / Q5_K pair j (32s 2j, 2j + 1; one scale a 32) from the eight scales in both lanes. */
static const uint8_t K45_PAIR[4][32] = {PAIR16(0, 1, 0, 1), PAIR16(2, 3, 2, 3), PAIR16(4, 5, 4, 5),
                                        PAIR16(6, 7, 6, 7)};
/* Q6_K: a half's pair (32s t, t + 1, t = 0 or 2) from its eight 16-group scales in both
 * lanes: a 32's first 16-group's scale in the low lane, its second's in the high. */
static const uint8_t Q6_PAIR[2][32] = {PAIR16(0, 2, 1, 3), PAIR16(4, 6, 5, 7)};
#undef PAIR16

/* A K-block's eight 6-bit scales then eight mins as the 16 bytes of a vector (`k4_bytes`
 * in nine vector instructions, where the scalar form and its moves into a vector took ~25;
 * the decode dot's block went from ~100 instructions to 77). Reads the 16 bytes at
 * ``packed`` (12 of them the scales; the rest are the block's own, unused). */
static inline __m128i k4_vec(const uint8_t *packed) {
    const __m128i v = _mm_loadu_si128((const __m128i *)packed);  /* words a, b, c */
    const __m128i lo = _mm_and_si128(v, _mm_set1_epi8(0x3f));   /* sc[0], m[0] */
    const __m128i c = _mm_srlv_epi32(_mm_shuffle_epi32(v, 0xaa), _mm_setr_epi32(0, 4, 0, 0));
    const __m128i hi = _mm_or_si128(_mm_and_si128(c, _mm_set1_epi8(0x0f)),        /* sc[1], m[1] */
                                    _mm_and_si128(_mm_srli_epi32(v, 2), _mm_set1_epi8(0x30)));
    return _mm_unpacklo_epi32(lo, hi);
}

/* Σ of four int32 lanes as a float (exact: a K block's offset sum is below 2^24). */
static inline float hsum4_i32(__m128i p) {
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0x4e));
    p = _mm_add_epi32(p, _mm_shuffle_epi32(p, 0xb1));
    return (float)_mm_cvtsi128_si32(p);
}

/* A Q4_K / Q5_K block's 32s 2j and 2j + 1 as unsigned codes (lo, hi), with their fifth
 * bits from qh where ``fifth`` (Q5_K). Shared by the one-row and two-row decode dots. */
static inline __attribute__((always_inline)) void k45_codes(const uint8_t *w, int64_t codes, __m256i qh,
                                                            int j, int fifth, __m256i *lo, __m256i *hi) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const __m256i v = _mm256_loadu_si256((const __m256i *)(w + codes + 32 * j));
    *lo = _mm256_and_si256(v, m4), *hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    if (fifth) {
        *lo = _mm256_or_si256(*lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4));
        *hi = _mm256_or_si256(*hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4));
    }
}

/* A Q4_K / Q5_K block's float step, every path's rounding: d · kd and dmin · kd (two lanes
 * of one multiply: the same products), one fma of the integer sums into acc, one of the
 * offsets (mins · the activations' 32-sums ks32, from `k4_vec`'s sm) into off. */
static inline __attribute__((always_inline)) void k45_step(const uint8_t *w, __m256i sum, __m128i sm,
                                                           float kd, const int16_t *ks32, __m256 *acc,
                                                           float *off) {
    uint32_t dm;
    memcpy(&dm, w, 4);
    const __m128 dd = _mm_mul_ps(_mm_cvtph_ps(_mm_cvtsi32_si128((int)dm)), _mm_set1_ps(kd));
    *acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_broadcastss_ps(dd), *acc);
    const __m128i mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(sm, sm));
    const float isum = hsum4_i32(_mm_madd_epi16(mins, _mm_loadu_si128((const __m128i *)ks32)));
    *off = fmaf(_mm_cvtss_f32(_mm_movehdup_ps(dd)), isum, *off);  /* one fma: as `gemm512` */
}

/* Q4_K, and Q5_K (``fifth``: each code's fifth bit from qh), per-256 activations. */
static inline float kdot_k45(const uint8_t *w, int64_t nb, const Act *a, int fifth) {
    __m256 acc = _mm256_setzero_ps();
    const int64_t step = fifth ? 176 : 144, codes = fifth ? 48 : 16;
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += step) {
        PREFETCH(w);
        const __m128i sm = k4_vec(w + 4);
        /* the eight scales as int16 in both lanes; `K45_PAIR[j]` spreads pair j's two (one
         * shuffle, where a set1 from a byte took three instructions) */
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm));
        const int8_t *x = a->k + 256 * i;
        const __m256i qh = fifth ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
        /* two chains of pairs (0, 2 and 1, 3), added at the end: the same integers, half
         * the chain of dependent multiplies a block waits on */
        __m256i sums[2] = {_mm256_setzero_si256(), _mm256_setzero_si256()};
        for (int j = 0; j < 4; j++) {
            __m256i lo, hi;
            k45_codes(w, codes, qh, j, fifth, &lo, &hi);
            sums[j & 1] = kpair(sums[j & 1], lo, _mm256_loadu_si256((const __m256i *)(x + 64 * j)), hi,
                                _mm256_loadu_si256((const __m256i *)(x + 64 * j + 32)),
                                _mm256_shuffle_epi8(sc16, _mm256_loadu_si256((const __m256i *)K45_PAIR[j])));
        }
        k45_step(w, _mm256_add_epi32(sums[0], sums[1]), sm, a->kd[i], a->ks32 + 8 * i, &acc, &off);
    }
    return hsum(acc) - off;
}

static float kdot_q4_K(const uint8_t *w, int64_t nb, const Act *a) { return kdot_k45(w, nb, a, 0); }
static float kdot_q5_K(const uint8_t *w, int64_t nb, const Act *a) { return kdot_k45(w, nb, a, 1); }

/* Byte masks that spread int16 number 2t over a lane of eight and 2t+1 over the other. */
static const uint8_t Q6_PICK[4][32] = {
    {0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3},
    {4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 4, 5, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7, 6, 7},
    {8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9, 8, 9,
     10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11, 10, 11},
    {12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13, 12, 13,
     14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15, 14, 15},
};

static float kdot_q6_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(15), m30 = _mm256_set1_epi8(0x30);
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 210) {
        PREFETCH(w);
        const int8_t *sc = (const int8_t *)(w + 192);
        const int8_t *x = a->k + 256 * i;
        __m256i sum = _mm256_setzero_si256();
        __m256i sp = _mm256_madd_epi16(
            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc)),
            _mm256_loadu_si256((const __m256i *)(a->ks + 16 * i)));  /* Σ scale · sum */
        __m128i s4 = _mm_add_epi32(_mm256_castsi256_si128(sp), _mm256_extracti128_si256(sp, 1));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0x4e));
        s4 = _mm_add_epi32(s4, _mm_shuffle_epi32(s4, 0xb1));
        int32_t ssum = _mm_cvtsi128_si32(s4);
        __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)sc));
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = w + 64 * n;
            /* This half's eight scales in both lanes; `Q6_PAIR` spreads a pair's four. */
            __m256i half = _mm256_permute4x64_epi64(sc16, n == 0 ? 0x44 : 0xee);
            __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * n));
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i q[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                            _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
            /* chunk t's two high bits (bits 2t, 2t + 1 of each qh byte) moved to bits 4-5 in
             * one shift and one mask: within a byte, so a 16-bit shift is exact here */
            const __m256i h[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), m30),
                                  _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30),
                                  _mm256_and_si256(qh, m30),
                                  _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)};
            for (int t = 0; t < 4; t += 2)
                sum = kpair(sum, _mm256_or_si256(q[t], h[t]), _mm256_loadu_si256((const __m256i *)(x + 128 * n + 32 * t)),
                            _mm256_or_si256(q[t + 1], h[t + 1]),
                            _mm256_loadu_si256((const __m256i *)(x + 128 * n + 32 * t + 32)),
                            _mm256_shuffle_epi8(half, _mm256_loadu_si256((const __m256i *)Q6_PAIR[t / 2])));
        }
        float dd = fp16(w + 208) * a->kd[i];
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(dd), acc);
        off = fmaf(dd, (float)(32 * ssum), off);  /* as kdots rounds it: a row's bits never depend on n */
    }
    return hsum(acc) - off;
}
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
    for (; g < groups; g++) total += w->m[g] * a->ms[g];
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
