/* Decoding one weight row of the legacy, MXFP4 and K-quant types into the common form
 * (int8 values, a scale and an offset per 16 weights). Included by experts.c only. */
#ifndef HEARTH_BLOCKS_H
#define HEARTH_BLOCKS_H

#include "common.h"

/* --- legacy 32-blocks --------------------------------------------------------------- */

static void nibbles(const uint8_t *qs, int8_t *q, int bias) {
    for (int l = 0; l < 16; l++) {
        q[l] = (int8_t)((qs[l] & 15) - bias);
        q[l + 16] = (int8_t)((qs[l] >> 4) - bias);
    }
}

static void fifth_bits(const uint8_t *qh4, int8_t *q) {
    uint32_t qh;
    memcpy(&qh, qh4, 4);
    for (int l = 0; l < 32; l++) q[l] = (int8_t)(q[l] + (((qh >> l) & 1) << 4));
}

static void dec_q4_0(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 18) {
        nibbles(b + 2, r->q + 32 * i, 8);
        float d = fp16(b);
        group(r, 2 * i, d, 0.f), group(r, 2 * i + 1, d, 0.f);
    }
}

static void dec_q4_1(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 20) {
        nibbles(b + 4, r->q + 32 * i, 0);
        float d = fp16(b), m = fp16(b + 2);
        group(r, 2 * i, d, -m), group(r, 2 * i + 1, d, -m);
    }
}

static void dec_q5_0(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 22) {
        int8_t *q = r->q + 32 * i;
        nibbles(b + 6, q, 0);
        fifth_bits(b + 2, q);
        for (int l = 0; l < 32; l++) q[l] = (int8_t)(q[l] - 16);
        float d = fp16(b);
        group(r, 2 * i, d, 0.f), group(r, 2 * i + 1, d, 0.f);
    }
}

static void dec_q5_1(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 24) {
        int8_t *q = r->q + 32 * i;
        nibbles(b + 8, q, 0);
        fifth_bits(b + 4, q);
        float d = fp16(b), m = fp16(b + 2);
        group(r, 2 * i, d, -m), group(r, 2 * i + 1, d, -m);
    }
}

static void dec_q8_0(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 34) {
        memcpy(r->q + 32 * i, b + 2, 32);
        float d = fp16(b);
        group(r, 2 * i, d, 0.f), group(r, 2 * i + 1, d, 0.f);
    }
}

/* An E8M0 exponent's 2^(e-127), halved because MXFP4_VALUES holds doubled values. */
static inline float e8m0_half(uint8_t e) {
    if (e < 2) return ldexpf(1.f, (int)e - 128);  /* a subnormal result */
    uint32_t bits = (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static const int8_t MXFP4_VALUES[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

static void dec_mxfp4(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 17) {
        int8_t *q = r->q + 32 * i;
        for (int l = 0; l < 16; l++) {
            q[l] = MXFP4_VALUES[b[1 + l] & 15];
            q[l + 16] = MXFP4_VALUES[b[1 + l] >> 4];
        }
        float d = e8m0_half(b[0]);
        group(r, 2 * i, d, 0.f), group(r, 2 * i + 1, d, 0.f);
    }
}

/* --- K-quants: 256-blocks ------------------------------------------------------------- */

static void scale_min_k4(int j, const uint8_t *q, int *sc, int *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 15) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

/* Q4_K, and Q5_K (``fifth``: each code's fifth bit from qh). */
static inline void dec_k45(const uint8_t *b, int64_t nb, Row *r, int fifth) {
    for (int64_t i = 0; i < nb; i++, b += fifth ? 176 : 144) {
        float d = fp16(b), dmin = fp16(b + 2);
        const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + (fifth ? 48 : 16);
        int8_t *q = r->q + 256 * i;
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 32; l++) {
                int lo = qs[32 * j + l] & 15, hi = qs[32 * j + l] >> 4;
                if (fifth) lo += ((qh[l] >> (2 * j)) & 1) << 4, hi += ((qh[l] >> (2 * j + 1)) & 1) << 4;
                q[64 * j + l] = (int8_t)lo, q[64 * j + 32 + l] = (int8_t)hi;
            }
        }
        for (int s = 0; s < 8; s++) {
            int sc, m;
            scale_min_k4(s, scales, &sc, &m);
            group(r, 16 * i + 2 * s, d * sc, dmin * m);
            group(r, 16 * i + 2 * s + 1, d * sc, dmin * m);
        }
    }
}

static void dec_q4_K(const uint8_t *b, int64_t nb, Row *r) { dec_k45(b, nb, r, 0); }
static void dec_q5_K(const uint8_t *b, int64_t nb, Row *r) { dec_k45(b, nb, r, 1); }

static void dec_q6_K(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 210) {
        const uint8_t *ql = b, *qh = b + 128;
        const int8_t *sc = (const int8_t *)(b + 192);
        float d = fp16(b + 208);
        int8_t *q = r->q + 256 * i;
        for (int n = 0; n < 2; n++) {
            const uint8_t *l_ = ql + 64 * n, *h_ = qh + 32 * n;
            int8_t *y = q + 128 * n;
            for (int l = 0; l < 32; l++) {
                y[l] = (int8_t)(((l_[l] & 15) | (((h_[l] >> 0) & 3) << 4)) - 32);
                y[l + 32] = (int8_t)(((l_[l + 32] & 15) | (((h_[l] >> 2) & 3) << 4)) - 32);
                y[l + 64] = (int8_t)(((l_[l] >> 4) | (((h_[l] >> 4) & 3) << 4)) - 32);
                y[l + 96] = (int8_t)(((l_[l + 32] >> 4) | (((h_[l] >> 6) & 3) << 4)) - 32);
            }
        }
        for (int g = 0; g < 16; g++) group(r, 16 * i + g, d * sc[g], 0.f);
    }
}

/* Q2_K: per 256, 16 bytes of (4-bit scale, 4-bit min) per 16 weights, 2-bit codes, d, dmin. */
static void dec_q2_K(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 84) {
        const uint8_t *scales = b, *qs = b + 16;
        float d = fp16(b + 80), dmin = fp16(b + 82);
        int8_t *q = r->q + 256 * i;
        for (int n = 0; n < 2; n++, qs += 32)
            for (int shift = 0; shift < 8; shift += 2) {  /* 32 codes: two 16-groups */
                int8_t *out = q + 128 * n + 16 * shift;
#ifdef __AVX2__
                __m256i v = _mm256_loadu_si256((const __m256i *)qs);
                v = _mm256_and_si256(_mm256_srli_epi16(v, shift), _mm256_set1_epi8(3));
                _mm256_storeu_si256((__m256i *)out, v);
#else
                for (int l = 0; l < 32; l++) out[l] = (int8_t)((qs[l] >> shift) & 3);
#endif
            }
        for (int g = 0; g < 16; g++)
            group(r, 16 * i + g, d * (scales[g] & 15), dmin * (scales[g] >> 4));
    }
}

/* Q3_K: per 256, a high-bit mask, 2-bit codes, sixteen 6-bit scales (minus 32), d; a code
 * whose high bit is clear is 4 lower. */
static void dec_q3_K(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 110) {
        const uint8_t *hm = b, *qs = b + 32, *packed = b + 96;
        float d = fp16(b + 108);
        int sc[16];
        for (int j = 0; j < 16; j++) {
            int low = j < 8 ? packed[j] & 15 : packed[j - 8] >> 4;
            int high = (packed[8 + (j & 3)] >> (2 * (j / 4))) & 3;
            sc[j] = (low | (high << 4)) - 32;
        }
        int8_t *q = r->q + 256 * i;
        int bit = 0;
        for (int n = 0; n < 2; n++, qs += 32)
            for (int shift = 0; shift < 8; shift += 2, bit++) {  /* 32 codes: two 16-groups */
                int8_t *out = q + 128 * n + 16 * shift;
#ifdef __AVX2__
                const __m256i three = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);
                __m256i code = _mm256_and_si256(
                    _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)qs), shift), three);
                __m256i high = _mm256_and_si256(
                    _mm256_srli_epi16(_mm256_loadu_si256((const __m256i *)hm), bit), one);
                /* code - 4 where the high bit is clear: code + 4·high - 4 */
                __m256i v = _mm256_sub_epi8(_mm256_add_epi8(code, _mm256_slli_epi16(high, 2)),
                                            _mm256_set1_epi8(4));
                _mm256_storeu_si256((__m256i *)out, v);
#else
                for (int k = 0; k < 32; k++)
                    out[k] = (int8_t)(((qs[k] >> shift) & 3) - ((hm[k] >> bit) & 1 ? 0 : 4));
#endif
            }
        for (int g = 0; g < 16; g++) group(r, 16 * i + g, d * sc[g], 0.f);
    }
}

#endif
