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

#endif
