/* A prefill's K-quant rows (Q2_K to Q6_K; the IQ2/IQ3 types' are in kiq.h) decoded
 * once into integer form (KRow) and dotted with several activation rows quantized per 256:
 * the codes, each 32's sub-scales spread over sixteen int16 lanes (as madd wants them), each
 * 16's integer offset and each block's two float scales. The sums stay integer within a
 * block (one float step per 256 per row), as in the decode step's dots; Q2_K and Q3_K's
 * decode-step dots are here too, and `fused`, the dispatch of them all. Included by experts.c
 * only. */
#ifndef HEARTH_KDOTS_H
#define HEARTH_KDOTS_H

#include "dots.h"
#include "kiq.h"

#ifdef __AVX2__
static void kdec_q4_K(const uint8_t *b, int64_t nb, KRow *r, int fifth) {
    const int64_t step = fifth ? 176 : 144;
    for (int64_t i = 0; i < nb; i++, b += step) {
        uint32_t scw[2], mw[2];
        k4_bytes(b + 4, scw, mw);
        const uint8_t *sc = (const uint8_t *)scw, *m = (const uint8_t *)mw;
        const uint8_t *qs = b + (fifth ? 48 : 16), *qh = b + 16;
        uint8_t *q = r->q + 256 * i;
        const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
        const __m256i h = fifth ? _mm256_loadu_si256((const __m256i *)qh) : _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * j));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * j), one), 4));
            hi = _mm256_or_si256(hi,
                                 _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * j + 1), one), 4));
            _mm256_storeu_si256((__m256i *)(q + 64 * j), lo);
            _mm256_storeu_si256((__m256i *)(q + 64 * j + 32), hi);
        }
        for (int s = 0; s < 8; s++) r->off[16 * i + 2 * s] = r->off[16 * i + 2 * s + 1] = (int16_t)m[s];
        for (int q = 0; q < 4; q++) kpair_sv(r, i, q, sc[2 * q], sc[2 * q], sc[2 * q + 1], sc[2 * q + 1]);
        r->d[i] = fp16(b), r->od[i] = fp16(b + 2);
    }
}

static void kdec_q6_K(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 210) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        uint8_t *q = r->q + 256 * i;
        const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
        for (int n = 0; n < 2; n++) {
            __m256i h = _mm256_loadu_si256((const __m256i *)(qh + 32 * n));
            __m256i l0 = _mm256_loadu_si256((const __m256i *)(ql + 64 * n));
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 64 * n + 32));
            __m256i low[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                              _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                              _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
            for (int t = 0; t < 4; t++) {
                __m256i high = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(h, 2 * t), m2), 4);
                _mm256_storeu_si256((__m256i *)(q + 128 * n + 32 * t), _mm256_or_si256(low[t], high));
            }
        }
        for (int g = 0; g < 16; g++) r->off[16 * i + g] = (int16_t)(32 * sc[g]);
        for (int q = 0; q < 4; q++) kpair_sv(r, i, q, sc[4 * q], sc[4 * q + 1], sc[4 * q + 2], sc[4 * q + 3]);
        float d = fp16(b + 208);
        r->d[i] = d, r->od[i] = d;
    }
}

/* Q2_K: codes 0-3, each 16's 4-bit scale and 4-bit offset (w = d·sc·q − dmin·m). */
static void kdec_q2_K(const uint8_t *b, int64_t nb, KRow *r) {
    const __m256i three = _mm256_set1_epi8(3);
    for (int64_t i = 0; i < nb; i++, b += 84) {
        const uint8_t *scales = b;
        uint8_t *q = r->q + 256 * i;
        for (int n = 0; n < 2; n++) {  /* 32 bytes: four 32s of codes, two bits each */
            __m256i v = _mm256_loadu_si256((const __m256i *)(b + 16 + 32 * n));
            for (int t = 0; t < 4; t++)
                _mm256_storeu_si256((__m256i *)(q + 128 * n + 32 * t),
                                    _mm256_and_si256(_mm256_srli_epi16(v, 2 * t), three));
        }
        for (int g = 0; g < 16; g++) kgroup(r, 16 * i + g, scales[g] & 15, scales[g] >> 4);
        r->d[i] = fp16(b + 80), r->od[i] = fp16(b + 82);
    }
}

/* Q3_K's sixteen 6-bit scales (less 32) from their 12 packed bytes: the low four bits of
 * scale g in byte g % 8 (high nibble from g = 8), the top two in byte 8 + g % 4. */
static inline __m128i q3_scales(const uint8_t *packed) {
    uint32_t a0, a1, t, sc[4];
    memcpy(&a0, packed, 4), memcpy(&a1, packed + 4, 4), memcpy(&t, packed + 8, 4);
    sc[0] = (a0 & 0x0f0f0f0fu) | ((t & 0x03030303u) << 4);
    sc[1] = (a1 & 0x0f0f0f0fu) | (((t >> 2) & 0x03030303u) << 4);
    sc[2] = ((a0 >> 4) & 0x0f0f0f0fu) | (((t >> 4) & 0x03030303u) << 4);
    sc[3] = ((a1 >> 4) & 0x0f0f0f0fu) | (((t >> 6) & 0x03030303u) << 4);
    return _mm_sub_epi8(_mm_loadu_si128((const __m128i *)sc), _mm_set1_epi8(32));
}

/* Q3_K: codes -4..3 stored as code + 4 (0-7, unsigned for maddubs), so each 16's offset is
 * 4 · its signed 6-bit scale (w = d·sc·(q' − 4)), as Q6_K's is 32 · its scale. */
static void kdec_q3_K(const uint8_t *b, int64_t nb, KRow *r) {
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    for (int64_t i = 0; i < nb; i++, b += 110) {
        const uint8_t *packed = b + 96;
        uint8_t *q = r->q + 256 * i;
        const __m256i hm = _mm256_loadu_si256((const __m256i *)b);
        for (int n = 0; n < 2; n++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(b + 32 + 32 * n));
            for (int t = 0; t < 4; t++) {  /* the 32s' high bits: bit 4n + t of each hm byte */
                __m256i code = _mm256_and_si256(_mm256_srli_epi16(v, 2 * t), three);
                __m256i high = _mm256_and_si256(_mm256_srli_epi16(hm, 4 * n + t), one);
                _mm256_storeu_si256((__m256i *)(q + 128 * n + 32 * t),
                                    _mm256_or_si256(code, _mm256_slli_epi16(high, 2)));
            }
        }
        int8_t sc[16];
        _mm_storeu_si128((__m128i *)sc, q3_scales(packed));
        for (int g = 0; g < 16; g++) kgroup(r, 16 * i + g, sc[g], 4 * sc[g]);
        r->d[i] = r->od[i] = fp16(b + 108);
    }
}

/* Whether qtype has an integer-form decoder here. */
static int has_kdec(int64_t qtype) {
    return qtype == T_Q2_K || qtype == T_Q3_K || qtype == T_Q4_K || qtype == T_Q5_K ||
           qtype == T_Q6_K || qtype == T_IQ2_XXS || qtype == T_IQ2_XS || qtype == T_IQ2_S ||
           qtype == T_IQ3_XXS || qtype == T_IQ3_S;
}

static void kdec(int64_t qtype, const uint8_t *b, int64_t nb, KRow *r) {
    r->paired = qtype == T_Q4_K || qtype == T_Q5_K || qtype == T_Q6_K;
    switch (qtype) {
    case T_Q2_K: kdec_q2_K(b, nb, r); break;
    case T_Q3_K: kdec_q3_K(b, nb, r); break;
    case T_Q6_K: kdec_q6_K(b, nb, r); break;
    case T_IQ2_XXS: kdec_iq2_xxs(b, nb, r); break;  /* kiq.h */
    case T_IQ2_XS: kdec_iq2_xs(b, nb, r); break;
    case T_IQ2_S: kdec_iq2_s(b, nb, r); break;
    case T_IQ3_XXS: kdec_iq3_xxs(b, nb, r); break;
    case T_IQ3_S: kdec_iq3_s(b, nb, r); break;
    default: kdec_q4_K(b, nb, r, qtype == T_Q5_K);
    }
}

/* A KRow's buffers for rows of `cols`; 0 when out of memory (krow_free frees either way). */
static int krow_alloc(KRow *r, int64_t cols) {
    r->q = malloc((size_t)cols);
    r->sv = malloc((size_t)(cols / 32) * 16 * sizeof(int16_t));
    r->off = malloc((size_t)(cols / 16) * sizeof(int16_t));
    r->d = malloc((size_t)(cols / 256) * sizeof(float));
    r->od = malloc((size_t)(cols / 256) * sizeof(float));
    r->paired = 0;
    return r->q && r->sv && r->off && r->d && r->od;
}

static void krow_free(KRow *r) { free(r->q), free(r->sv), free(r->off), free(r->d), free(r->od); }

/* Σ of the eight int32 lanes (the offsets' integer sums: exact in any order). */
static inline int32_t hsum_i32(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4e));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
    return _mm_cvtsi128_si32(s);
}

/* Σ_g off[g] · ks[g] over a block's sixteen groups. */
static inline int32_t koffsets(const int16_t *off, const int16_t *ks) {
    return hsum_i32(_mm256_madd_epi16(_mm256_loadu_si256((const __m256i *)off),
                                      _mm256_loadu_si256((const __m256i *)ks)));
}

/* Q2_K and Q3_K's decode-step dots, straight from the blocks: `kdots`' sums on the rows
 * `kdec_q2_K` and `kdec_q3_K` decode (each 32's lanes: maddubs, madd by the two 16-groups'
 * scales, add; one fma per 256; the offsets' integer sum and one fmaf), so a row's bits do
 * not depend on how many rows the call has. sc16: the block's sixteen scales as int16. */
static inline __m256i k2_block(const uint8_t *qs, const uint8_t *hm, __m256i sc16, const int8_t *x) {
    const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
    __m256i sum = _mm256_setzero_si256();
    for (int n = 0; n < 2; n++) {
        __m256i v = _mm256_loadu_si256((const __m256i *)(qs + 32 * n));
        __m256i half = _mm256_permute4x64_epi64(sc16, n == 0 ? 0x44 : 0xee);
        for (int t = 0; t < 4; t++) {
            __m256i q = _mm256_and_si256(_mm256_srli_epi16(v, 2 * t), three);
            if (hm != NULL) {  /* Q3_K: code + 4 where the high bit is set */
                __m256i h = _mm256_and_si256(_mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)hm), 4 * n + t), one);
                q = _mm256_or_si256(q, _mm256_slli_epi16(h, 2));
            }
            __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(x + 128 * n + 32 * t)));
            __m256i s = _mm256_shuffle_epi8(half, _mm256_loadu_si256((const __m256i *)Q6_PICK[t]));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, s));
        }
    }
    return sum;
}

static float kdot_q2_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 84) {
        PREFETCH1(w);
        __m128i packed = _mm_loadu_si128((const __m128i *)w);
        __m256i sc16 = _mm256_cvtepu8_epi16(_mm_and_si128(packed, _mm_set1_epi8(15)));
        __m256i m16 = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(packed, 4), _mm_set1_epi8(15)));
        int32_t isum = hsum_i32(_mm256_madd_epi16(m16, _mm256_loadu_si256((const __m256i *)(a->ks + 16 * i))));
        __m256i sum = k2_block(w + 16, NULL, sc16, a->k + 256 * i);
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(fp16(w + 80) * a->kd[i]), acc);
        off = fmaf(fp16(w + 82) * a->kd[i], (float)isum, off);
    }
    return hsum(acc) - off;
}

static float kdot_q3_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 110) {
        PREFETCH1(w);
        __m256i sc16 = _mm256_cvtepi8_epi16(q3_scales(w + 96));
        int32_t isum = hsum_i32(_mm256_madd_epi16(_mm256_slli_epi16(sc16, 2),  /* offsets: 4 · scale */
                                                  _mm256_loadu_si256((const __m256i *)(a->ks + 16 * i))));
        __m256i sum = k2_block(w + 32, w, sc16, a->k + 256 * i);
        float dd = fp16(w + 108) * a->kd[i];
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(dd), acc);
        off = fmaf(dd, (float)isum, off);
    }
    return hsum(acc) - off;
}

static FusedDot fused(int64_t qtype) {
    switch (qtype) {
    case T_Q8_0: return fdot_q8_0;
    case T_MXFP4: return fdot_mxfp4;
    case T_Q4_K: return kdot_q4_K;
    case T_Q6_K: return kdot_q6_K;
    case T_Q4_0: return fdot_q4_0;
    case T_Q5_0: return fdot_q5_0;
    case T_Q4_1: return fdot_q4_1;
    case T_Q5_1: return fdot_q5_1;
    case T_Q5_K: return kdot_q5_K;
    case T_Q2_K: return kdot_q2_K;
    case T_Q3_K: return kdot_q3_K;
    case T_IQ2_XXS: return grids_set ? kdot_iq2_xxs : NULL;  /* kiq.h */
    case T_IQ2_XS: return grids_set ? kdot_iq2_xs : NULL;
    case T_IQ2_S: return grids_set ? kdot_iq2_s : NULL;
    case T_IQ3_XXS: return grids_set ? kdot_iq3_xxs : NULL;
    case T_IQ3_S: return grids_set ? kdot_iq3_s : NULL;
    case T_IQ4_NL: return grids_set ? fdot_iq4_nl : NULL;
    case T_IQ4_XS: return grids_set ? fdot_iq4_xs : NULL;
    default: return NULL;
    }
}

static inline void kdots(const KRow *w, const Act *a, int64_t n, int64_t cols, float *y, int64_t stride);

#include "kdot2.h" /* a decode step's dots two rows at a time (K4/K5, Q8_0/Q4_0/Q5_0) */

#if defined(__AVX512BW__) && !defined(HEARTH_NO_AVX512)
/* The same with 512-bit vectors: two 32s (their sub-scales side by side) per instruction;
 * paired rows (Q4_K, Q5_K, Q6_K) take `kdots`, whose pairs already fill the multipliers. */
static void kdots512(const KRow *w, const Act *a, int64_t n, int64_t cols, float *y,
                     int64_t stride) {
    if (w->paired) {
        kdots(w, a, n, cols, y, stride);
        return;
    }
    const int64_t nb = cols / 256;
    for (int64_t i = 0; i < n; i += 4) {
        const int rows = n - i < 4 ? (int)(n - i) : 4;
        Act r[4];
        __m512 acc[4];
        float off[4] = {0.f, 0.f, 0.f, 0.f};
        for (int j = 0; j < 4; j++)
            r[j] = act_at(a, i + (j < rows ? j : rows - 1), cols), acc[j] = _mm512_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            __m512i sum[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(),
                              _mm512_setzero_si512(), _mm512_setzero_si512()};
            for (int t = 0; t < 8; t += 2) {
                __m512i q = _mm512_loadu_si512((const void *)(w->q + 256 * b + 32 * t));
                __m512i s = _mm512_loadu_si512((const void *)(w->sv + 16 * (8 * b + t)));
                for (int j = 0; j < 4; j++) {
                    __m512i x = _mm512_loadu_si512((const void *)(r[j].k + 256 * b + 32 * t));
                    sum[j] = _mm512_add_epi32(sum[j], _mm512_madd_epi16(_mm512_maddubs_epi16(q, x), s));
                }
            }
            for (int j = 0; j < rows; j++) {
                float kd = r[j].kd[b];
                /* the two halves added first: the same int32 sum as kdots' 256-bit lanes */
                __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sum[j]),
                                              _mm512_extracti64x4_epi64(sum[j], 1));
                __m256 f = _mm256_cvtepi32_ps(s8);
                acc[j] = _mm512_castps256_ps512(_mm256_fmadd_ps(
                    f, _mm256_set1_ps(w->d[b] * kd), _mm512_castps512_ps256(acc[j])));
                off[j] = fmaf(w->od[b] * kd, (float)koffsets(w->off + 16 * b, r[j].ks + 16 * b), off[j]);
            }
        }
        for (int j = 0; j < rows; j++)
            y[(i + j) * stride] = hsum(_mm512_castps512_ps256(acc[j])) - off[j];
    }
}
#endif

/* y[i · stride] = the decoded row w · activation row i (per-256 form), for the n rows. */
static inline void kdots(const KRow *w, const Act *a, int64_t n, int64_t cols, float *y, int64_t stride) {
    const int64_t nb = cols / 256;
    for (int64_t i = 0; i < n; i += 4) {
        const int rows = n - i < 4 ? (int)(n - i) : 4;
        Act r[4];
        __m256 acc[4];
        float off[4] = {0.f, 0.f, 0.f, 0.f};
        for (int j = 0; j < 4; j++)
            r[j] = act_at(a, i + (j < rows ? j : rows - 1), cols), acc[j] = _mm256_setzero_ps();
        for (int64_t b = 0; b < nb; b++) {
            __m256i sum[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(),
                              _mm256_setzero_si256(), _mm256_setzero_si256()};
            if (w->paired) {
                for (int t = 0; t < 8; t += 2) {  /* `kpair`: the 32s t and t + 1 */
                    __m256i q0 = _mm256_loadu_si256((const __m256i *)(w->q + 256 * b + 32 * t));
                    __m256i q1 = _mm256_loadu_si256((const __m256i *)(w->q + 256 * b + 32 * t + 32));
                    __m256i s = _mm256_loadu_si256((const __m256i *)(w->sv + 16 * (8 * b + t)));
                    for (int j = 0; j < 4; j++) {
                        const int8_t *x = r[j].k + 256 * b + 32 * t;
                        sum[j] = kpair(sum[j], q0, _mm256_loadu_si256((const __m256i *)x), q1,
                                       _mm256_loadu_si256((const __m256i *)(x + 32)), s);
                    }
                }
            } else {
#pragma GCC unroll 2  /* fully unrolled, GCC's reordered sums spilled to the stack */
                for (int t = 0; t < 8; t++) {
                    __m256i q = _mm256_loadu_si256((const __m256i *)(w->q + 256 * b + 32 * t));
                    __m256i s = _mm256_loadu_si256((const __m256i *)(w->sv + 16 * (8 * b + t)));
                    for (int j = 0; j < 4; j++) {  /* a padded row repeats the last one */
                        __m256i x = _mm256_loadu_si256((const __m256i *)(r[j].k + 256 * b + 32 * t));
                        sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(_mm256_maddubs_epi16(q, x), s));
                    }
                }
            }
            for (int j = 0; j < 4; j++) {  /* all four (constant bounds keep sum and acc in
                                             * registers: a padded row's result goes unused) */
                float kd = r[j].kd[b];
                acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_set1_ps(w->d[b] * kd), acc[j]);
                off[j] = fmaf(w->od[b] * kd, (float)koffsets(w->off + 16 * b, r[j].ks + 16 * b), off[j]);
            }
        }
        for (int j = 0; j < rows; j++) y[(i + j) * stride] = hsum(acc[j]) - off[j];
    }
}

#else
static inline int has_kdec(int64_t qtype) { (void)qtype; return 0; }
static FusedDot fused(int64_t qtype) { (void)qtype; return NULL; }
static FusedDot2 fused2(int64_t qtype) { (void)qtype; return NULL; }
#endif

#include "frows.h" /* the same dots for up to FUSED_MANY rows at once */

#endif
