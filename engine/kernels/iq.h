/* Decoding the IQ codebook types (grids handed over by hearth_set_grids). Included by
 * experts.c only. */
#ifndef HEARTH_IQ_H
#define HEARTH_IQ_H

#include "common.h"

/* --- the IQ codebook types --------------------------------------------------------------
 * Their grids (each row 8 or 4 small positive integers) are gguf-py's, handed over once by
 * `hearth_set_grids` when the library loads (build.py); a weight is grid value × sign × a
 * per-16 or per-32 scale, so the common form holds them exactly. */
static int8_t GRID_2XXS[256 * 8], GRID_2XS[512 * 8], GRID_2S[1024 * 8], GRID_3XXS[256 * 4],
    GRID_3S[512 * 4];
static int8_t IQ4_VALUES[16];
static int grids_set = 0;

void hearth_set_grids(const int8_t *g2xxs, const int8_t *g2xs, const int8_t *g2s,
                      const int8_t *g3xxs, const int8_t *g3s, const int8_t *iq4) {
    memcpy(GRID_2XXS, g2xxs, sizeof GRID_2XXS), memcpy(GRID_2XS, g2xs, sizeof GRID_2XS);
    memcpy(GRID_2S, g2s, sizeof GRID_2S), memcpy(GRID_3XXS, g3xxs, sizeof GRID_3XXS);
    memcpy(GRID_3S, g3s, sizeof GRID_3S), memcpy(IQ4_VALUES, iq4, sizeof IQ4_VALUES);
    grids_set = 1;
}

/* 8 weights: a grid row with the low 8 bits of `signs` negating (bit j: weight j). */
static inline void signed8(int8_t *q, const int8_t *row, unsigned signs) {
#ifdef __AVX2__
    const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 0, 0, 0, 0, 0, 0, 0, 0);
    __m128i v = _mm_loadl_epi64((const __m128i *)row);
    __m128i neg = _mm_cmpeq_epi8(_mm_and_si128(_mm_set1_epi8((char)signs), bit), bit);
    _mm_storel_epi64((__m128i *)q, _mm_blendv_epi8(v, _mm_sub_epi8(_mm_setzero_si128(), v), neg));
#else
    for (int j = 0; j < 8; j++) q[j] = (int8_t)((signs >> j) & 1 ? -row[j] : row[j]);
#endif
}

/* A 7-bit sign index → 8 sign bits: the eighth makes the count of negatives even. */
static inline unsigned ksign(unsigned i) {
    return i | ((unsigned)__builtin_parity(i) << 7);
}

static void dec_iq2_xxs(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 66) {
        float d = fp16(b);
        int8_t *q = r->q + 256 * i;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t idx, aux;
            memcpy(&idx, b + 2 + 8 * ib, 4), memcpy(&aux, b + 6 + 8 * ib, 4);
            for (int l = 0; l < 4; l++)
                signed8(q + 32 * ib + 8 * l, GRID_2XXS + 8 * ((idx >> (8 * l)) & 255),
                        ksign((aux >> (7 * l)) & 127));
            float db = d * (0.5f + (float)(aux >> 28)) * 0.25f;
            group(r, 16 * i + 2 * ib, db, 0.f), group(r, 16 * i + 2 * ib + 1, db, 0.f);
        }
    }
}

static void dec_iq2_xs(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 74) {
        float d = fp16(b);
        const uint8_t *scales = b + 66;
        int8_t *q = r->q + 256 * i;
        for (int k = 0; k < 32; k++) {
            unsigned v = (unsigned)(b[2 + 2 * k] | (b[3 + 2 * k] << 8));
            signed8(q + 8 * k, GRID_2XS + 8 * (v & 511), ksign(v >> 9));
        }
        for (int g = 0; g < 16; g++)
            group(r, 16 * i + g, d * (0.5f + (float)((scales[g / 2] >> (4 * (g % 2))) & 15)) * 0.25f,
                  0.f);
    }
}

static void dec_iq2_s(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 82) {
        float d = fp16(b);
        const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66, *scales = b + 74;
        int8_t *q = r->q + 256 * i;
        for (int k = 0; k < 32; k++) {
            unsigned idx = qs[k] | (((qh[k / 4] >> (2 * (k % 4))) & 3u) << 8);
            signed8(q + 8 * k, GRID_2S + 8 * idx, signs[k]);
        }
        for (int g = 0; g < 16; g++)
            group(r, 16 * i + g, d * (0.5f + (float)((scales[g / 2] >> (4 * (g % 2))) & 15)) * 0.25f,
                  0.f);
    }
}

static void dec_iq3_xxs(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 98) {
        float d = fp16(b);
        const uint8_t *qs = b + 2;
        int8_t *q = r->q + 256 * i;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux;
            memcpy(&aux, b + 66 + 4 * ib, 4);
            for (int l = 0; l < 4; l++) {
                int8_t row[8];
                memcpy(row, GRID_3XXS + 4 * qs[8 * ib + 2 * l], 4);
                memcpy(row + 4, GRID_3XXS + 4 * qs[8 * ib + 2 * l + 1], 4);
                signed8(q + 32 * ib + 8 * l, row, ksign((aux >> (7 * l)) & 127));
            }
            float db = d * (0.5f + (float)(aux >> 28)) * 0.5f;
            group(r, 16 * i + 2 * ib, db, 0.f), group(r, 16 * i + 2 * ib + 1, db, 0.f);
        }
    }
}

static void dec_iq3_s(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 110) {
        float d = fp16(b);
        const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74, *scales = b + 106;
        int8_t *q = r->q + 256 * i;
        for (int k = 0; k < 32; k++) {  /* 8 weights: two grid rows of 4 */
            int8_t row[8];
            for (int h = 0; h < 2; h++) {
                int at = 2 * k + h;
                unsigned idx = qs[at] | (((qh[at / 8] >> (at % 8)) & 1u) << 8);
                memcpy(row + 4 * h, GRID_3S + 4 * idx, 4);
            }
            signed8(q + 8 * k, row, signs[k]);
        }
        for (int ib = 0; ib < 8; ib++) {
            float db = d * (float)(1 + 2 * ((scales[ib / 2] >> (4 * (ib % 2))) & 15));
            group(r, 16 * i + 2 * ib, db, 0.f), group(r, 16 * i + 2 * ib + 1, db, 0.f);
        }
    }
}

static void dec_iq4_nl(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 18) {
        int8_t *q = r->q + 32 * i;
        for (int l = 0; l < 16; l++)
            q[l] = IQ4_VALUES[b[2 + l] & 15], q[l + 16] = IQ4_VALUES[b[2 + l] >> 4];
        float d = fp16(b);
        group(r, 2 * i, d, 0.f), group(r, 2 * i + 1, d, 0.f);
    }
}

static void dec_iq4_xs(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 136) {
        float d = fp16(b);
        unsigned high = (unsigned)(b[2] | (b[3] << 8));
        const uint8_t *low = b + 4, *qs = b + 8;
        int8_t *q = r->q + 256 * i;
        for (int ib = 0; ib < 8; ib++) {
            for (int l = 0; l < 16; l++) {
                q[32 * ib + l] = IQ4_VALUES[qs[16 * ib + l] & 15];
                q[32 * ib + l + 16] = IQ4_VALUES[qs[16 * ib + l] >> 4];
            }
            int ls = ((low[ib / 2] >> (4 * (ib % 2))) & 15) | (int)(((high >> (2 * ib)) & 3) << 4);
            float dl = d * (float)(ls - 32);
            group(r, 16 * i + 2 * ib, dl, 0.f), group(r, 16 * i + 2 * ib + 1, dl, 0.f);
        }
    }
}

/* --- the same in integer form (KRow), for the per-256 activations ---------------------------
 * As llama.cpp dots them: a weight is d' · sc · v with v a grid value × sign (|v| <= 62), sc
 * the 16's or 32's scale as the integer 2s + 1, and d' the block's float16 scale over 8
 * (IQ2), 4 (IQ3_XXS) or 1 (IQ3_S): the float form's d · (0.5 + s) · 0.25 and so on, exactly.
 * Codes are stored as v + IQ_BIAS (unsigned, for maddubs), so each 16's offset is
 * IQ_BIAS · sc. */
#ifdef __AVX2__
#define IQ_BIAS 64

/* 32 weights: four grid rows of 8 (r[j]: weights 8j..8j+7), each negated where its bit of
 * `signs` is set (bit k: weight k), plus IQ_BIAS: one vector for what `signed8` does in four. */
static inline void ksigned32(uint8_t *q, const uint64_t r[4], uint32_t signs) {
    const __m256i pick = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                           0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_set_epi64x((long long)r[3], (long long)r[2], (long long)r[1], (long long)r[0]);
    __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)signs), pick), bit), bit);
    v = _mm256_sub_epi8(_mm256_xor_si256(v, neg), neg);  /* -v where neg (all ones) */
    _mm256_storeu_si256((__m256i *)q, _mm256_add_epi8(v, _mm256_set1_epi8(IQ_BIAS)));
}

static inline uint64_t grid8(const int8_t *grid, unsigned idx) {  /* a row of 8 */
    uint64_t v;
    memcpy(&v, grid + 8 * idx, 8);
    return v;
}

static inline uint64_t grid4x2(const int8_t *grid, unsigned lo, unsigned hi) {  /* two rows of 4 */
    uint32_t a, b;
    memcpy(&a, grid + 4 * lo, 4), memcpy(&b, grid + 4 * hi, 4);
    return a | (uint64_t)b << 32;
}

/* Four 7-bit sign indices (bits 0-27 of aux) as 32 sign bits. */
static inline uint32_t ksigns4(uint32_t aux) {
    uint32_t s = 0;
    for (int l = 0; l < 4; l++) s |= ksign((aux >> (7 * l)) & 127) << (8 * l);
    return s;
}

static inline void kiq_groups(KRow *r, int64_t g, int sc, int count) {  /* count 16-groups from g */
    for (int k = 0; k < count; k++) kgroup(r, g + k, sc, IQ_BIAS * sc);
}

static void kdec_iq2_xxs(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 66) {
        for (int ib = 0; ib < 8; ib++) {
            uint32_t idx, aux;
            memcpy(&idx, b + 2 + 8 * ib, 4), memcpy(&aux, b + 6 + 8 * ib, 4);
            uint64_t rows[4];
            for (int l = 0; l < 4; l++) rows[l] = grid8(GRID_2XXS, (idx >> (8 * l)) & 255);
            ksigned32(r->q + 256 * i + 32 * ib, rows, ksigns4(aux));
            kiq_groups(r, 16 * i + 2 * ib, 2 * (int)(aux >> 28) + 1, 2);
        }
        r->d[i] = r->od[i] = fp16(b) * 0.125f;
    }
}

static void kdec_iq2_xs(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 74) {
        for (int ib = 0; ib < 8; ib++) {
            uint64_t rows[4];
            uint32_t signs = 0;
            for (int l = 0; l < 4; l++) {
                const int k = 4 * ib + l;
                unsigned v = (unsigned)(b[2 + 2 * k] | (b[3 + 2 * k] << 8));
                rows[l] = grid8(GRID_2XS, v & 511), signs |= ksign(v >> 9) << (8 * l);
            }
            ksigned32(r->q + 256 * i + 32 * ib, rows, signs);
        }
        for (int g = 0; g < 16; g++) kiq_groups(r, 16 * i + g, 2 * ((b[66 + g / 2] >> (4 * (g % 2))) & 15) + 1, 1);
        r->d[i] = r->od[i] = fp16(b) * 0.125f;
    }
}

static void kdec_iq2_s(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 82) {
        const uint8_t *qs = b + 2, *signs = b + 34, *qh = b + 66;
        for (int ib = 0; ib < 8; ib++) {
            uint64_t rows[4];
            uint32_t s;
            for (int l = 0; l < 4; l++)
                rows[l] = grid8(GRID_2S, qs[4 * ib + l] | (((qh[ib] >> (2 * l)) & 3u) << 8));
            memcpy(&s, signs + 4 * ib, 4);
            ksigned32(r->q + 256 * i + 32 * ib, rows, s);
        }
        for (int g = 0; g < 16; g++) kiq_groups(r, 16 * i + g, 2 * ((b[74 + g / 2] >> (4 * (g % 2))) & 15) + 1, 1);
        r->d[i] = r->od[i] = fp16(b) * 0.125f;
    }
}

static void kdec_iq3_xxs(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 98) {
        const uint8_t *qs = b + 2;
        for (int ib = 0; ib < 8; ib++) {
            uint32_t aux;
            memcpy(&aux, b + 66 + 4 * ib, 4);
            uint64_t rows[4];
            for (int l = 0; l < 4; l++)
                rows[l] = grid4x2(GRID_3XXS, qs[8 * ib + 2 * l], qs[8 * ib + 2 * l + 1]);
            ksigned32(r->q + 256 * i + 32 * ib, rows, ksigns4(aux));
            kiq_groups(r, 16 * i + 2 * ib, 2 * (int)(aux >> 28) + 1, 2);
        }
        r->d[i] = r->od[i] = fp16(b) * 0.25f;
    }
}

static void kdec_iq3_s(const uint8_t *b, int64_t nb, KRow *r) {
    for (int64_t i = 0; i < nb; i++, b += 110) {
        const uint8_t *qs = b + 2, *qh = b + 66, *signs = b + 74;
        for (int ib = 0; ib < 8; ib++) {  /* 32 weights: eight grid rows of 4, qh[ib] their 9th bits */
            uint64_t rows[4];
            uint32_t s;
            for (int l = 0; l < 4; l++) {
                const int at = 8 * ib + 2 * l;
                rows[l] = grid4x2(GRID_3S, qs[at] | (((qh[ib] >> (2 * l)) & 1u) << 8),
                                  qs[at + 1] | (((qh[ib] >> (2 * l + 1)) & 1u) << 8));
            }
            memcpy(&s, signs + 4 * ib, 4);
            ksigned32(r->q + 256 * i + 32 * ib, rows, s);
        }
        for (int ib = 0; ib < 8; ib++) kiq_groups(r, 16 * i + 2 * ib, 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 15) + 1, 2);
        r->d[i] = r->od[i] = fp16(b);
    }
}
#endif

#endif
