/* Routed experts of a mixture-of-experts layer, straight from a GGUF file's quantized blocks.
 *
 * Owns: decoding one weight row of a supported ggml type into a common form (int8 values,
 * a float scale and a float offset per 16 weights: w = s*q - m), the int8 dot of such a row
 * with 8-bit-quantized activations (per 32 values: a float scale, as llama.cpp's q8_0), and
 * the expert feed-forward (gate and up, activation, down, weighted sum over each row's k
 * experts). The weights are read where they lie (the caller passes pointers into the mapped
 * file), so a layer's experts cost the file's own bytes. Does not own routing (the caller
 * passes each row's expert ids and weights) or anything else of the model.
 *
 * Every row is computed on its own (its own activation scales, one fixed order of sums): its
 * result depends on the other rows of the call only through the path its experts take (an
 * expert with at most FUSED_MAX_ROWS rows dots them straight from the blocks, sums in another
 * order, so the last bits may differ from a longer prefill's).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#ifdef __AVX2__
#include <immintrin.h>
#endif

/* ggml type ids (ggml.h's enum ggml_type, as in the GGUF file). */
enum { T_Q4_0 = 2, T_Q4_1 = 3, T_Q5_0 = 6, T_Q5_1 = 7, T_Q8_0 = 8,
       T_Q2_K = 10, T_Q3_K = 11, T_Q4_K = 12, T_Q5_K = 13, T_Q6_K = 14,
       T_IQ2_XXS = 16, T_IQ2_XS = 17, T_IQ3_XXS = 18, T_IQ4_NL = 20, T_IQ3_S = 21,
       T_IQ2_S = 22, T_IQ4_XS = 23, T_MXFP4 = 39 };

enum { ACT_SILU = 0, ACT_SWIGLU_OAI = 1, ACT_GELU_TANH = 2 };

typedef struct {
    int64_t qtype;
    const uint8_t *data;  /* expert 0's first block */
    int64_t expert_bytes; /* bytes from one expert to the next */
    int64_t rows;         /* outputs */
    int64_t cols;         /* inputs: a multiple of the type's block size */
} HMat;

/* A weight row in the common form: q[cols], s4[cols/4] (each 16-group's scale, four times),
 * m[cols/16] (each 16-group's offset). */
typedef struct { int8_t *q; float *s4; float *m; } Row;

/* Activations, quantized: q[cols], d[cols/32] (scale per 32), ms[cols/16] (d * sum of the
 * group's 16 values: what an offset m multiplies), ms32[cols/32] (the same per 32). */
typedef struct { int8_t *q; float *d; float *ms; float *ms32; } Act;

static float fp16(const uint8_t *p) {
    uint16_t h = (uint16_t)(p[0] | (p[1] << 8));
#ifdef __F16C__
    return _cvtsh_ss(h);
#endif
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, bits;
    if (exp == 0) {
        float v = ldexpf((float)man, -24);
        return sign ? -v : v;
    }
    if (exp == 31) bits = sign | 0x7f800000u | (man << 13);
    else bits = sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

static void group(Row *r, int64_t g, float scale, float offset) {
    r->s4[4 * g] = r->s4[4 * g + 1] = r->s4[4 * g + 2] = r->s4[4 * g + 3] = scale;
    r->m[g] = offset;
}

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

static void dec_q4_K(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 144) {
        float d = fp16(b), dmin = fp16(b + 2);
        const uint8_t *scales = b + 4, *qs = b + 16;
        int8_t *q = r->q + 256 * i;
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 32; l++) {
                q[64 * j + l] = (int8_t)(qs[32 * j + l] & 15);
                q[64 * j + 32 + l] = (int8_t)(qs[32 * j + l] >> 4);
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

static void dec_q5_K(const uint8_t *b, int64_t nb, Row *r) {
    for (int64_t i = 0; i < nb; i++, b += 176) {
        float d = fp16(b), dmin = fp16(b + 2);
        const uint8_t *scales = b + 4, *qh = b + 16, *qs = b + 48;
        int8_t *q = r->q + 256 * i;
        for (int j = 0; j < 4; j++) {
            for (int l = 0; l < 32; l++) {
                q[64 * j + l] = (int8_t)((qs[32 * j + l] & 15) + (((qh[l] >> (2 * j)) & 1) << 4));
                q[64 * j + 32 + l] =
                    (int8_t)((qs[32 * j + l] >> 4) + (((qh[l] >> (2 * j + 1)) & 1) << 4));
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

typedef void (*Decoder)(const uint8_t *, int64_t, Row *);

/* The decoder of a type, its block size and bytes, or NULL where it has none. */
static Decoder decoder(int64_t qtype, int64_t *block, int64_t *bytes) {
    switch (qtype) {
    case T_Q4_0: *block = 32, *bytes = 18; return dec_q4_0;
    case T_Q4_1: *block = 32, *bytes = 20; return dec_q4_1;
    case T_Q5_0: *block = 32, *bytes = 22; return dec_q5_0;
    case T_Q5_1: *block = 32, *bytes = 24; return dec_q5_1;
    case T_Q8_0: *block = 32, *bytes = 34; return dec_q8_0;
    case T_MXFP4: *block = 32, *bytes = 17; return dec_mxfp4;
    case T_IQ2_XXS: *block = 256, *bytes = 66; return grids_set ? dec_iq2_xxs : NULL;
    case T_IQ2_XS: *block = 256, *bytes = 74; return grids_set ? dec_iq2_xs : NULL;
    case T_IQ2_S: *block = 256, *bytes = 82; return grids_set ? dec_iq2_s : NULL;
    case T_IQ3_XXS: *block = 256, *bytes = 98; return grids_set ? dec_iq3_xxs : NULL;
    case T_IQ3_S: *block = 256, *bytes = 110; return grids_set ? dec_iq3_s : NULL;
    case T_IQ4_NL: *block = 32, *bytes = 18; return grids_set ? dec_iq4_nl : NULL;
    case T_IQ4_XS: *block = 256, *bytes = 136; return grids_set ? dec_iq4_xs : NULL;
    case T_Q2_K: *block = 256, *bytes = 84; return dec_q2_K;
    case T_Q3_K: *block = 256, *bytes = 110; return dec_q3_K;
    case T_Q4_K: *block = 256, *bytes = 144; return dec_q4_K;
    case T_Q5_K: *block = 256, *bytes = 176; return dec_q5_K;
    case T_Q6_K: *block = 256, *bytes = 210; return dec_q6_K;
    default: return NULL;
    }
}

int hearth_supports(int64_t qtype) {
    int64_t block, bytes;
    return decoder(qtype, &block, &bytes) != NULL;
}

/* --- activations and the dot ---------------------------------------------------------- */

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
}

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
    __m256 acc = _mm256_setzero_ps();
    float off = 0.f;
    for (int64_t b = 0; b < nb; b++, w += 18) {
        PREFETCH1(w);
        float d = fp16(w);
        acc = _mm256_fmadd_ps(udot(nibbles32(w + 2), XQ(b)), _mm256_set1_ps(d * a->d[b]), acc);
        off += d * (a->ms[2 * b] + a->ms[2 * b + 1]);
    }
    return hsum(acc) - 8.f * off;
}

static float fdot_q5_0(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    float off = 0.f;
    for (int64_t b = 0; b < nb; b++, w += 22) {
        PREFETCH1(w);
        float d = fp16(w);
        __m256i u = _mm256_or_si256(nibbles32(w + 6), fifth32(w + 2));
        acc = _mm256_fmadd_ps(udot(u, XQ(b)), _mm256_set1_ps(d * a->d[b]), acc);
        off += d * (a->ms[2 * b] + a->ms[2 * b + 1]);
    }
    return hsum(acc) - 16.f * off;
}

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

static float fdot_q4_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(15);
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 144) {
        PREFETCH(w);
        float d = fp16(w), dmin = fp16(w + 2);
        for (int j = 0; j < 4; j++) {
            int sc0, m0, sc1, m1;
            scale_min_k4(2 * j, w + 4, &sc0, &m0);
            scale_min_k4(2 * j + 1, w + 4, &sc1, &m1);
            int64_t b = 8 * i + 2 * j;
            __m256i v = _mm256_loadu_si256((const __m256i *)(w + 16 + 32 * j));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            acc = _mm256_fmadd_ps(udot(lo, XQ(b)), _mm256_set1_ps(d * sc0 * a->d[b]), acc);
            acc = _mm256_fmadd_ps(udot(hi, XQ(b + 1)), _mm256_set1_ps(d * sc1 * a->d[b + 1]), acc);
            off += dmin * (m0 * a->ms32[b] + m1 * a->ms32[b + 1]);
        }
    }
    return hsum(acc) - off;
}

static float fdot_q5_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 176) {
        PREFETCH(w);
        float d = fp16(w), dmin = fp16(w + 2);
        __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 16));
        for (int j = 0; j < 4; j++) {
            int sc0, m0, sc1, m1;
            scale_min_k4(2 * j, w + 4, &sc0, &m0);
            scale_min_k4(2 * j + 1, w + 4, &sc1, &m1);
            int64_t b = 8 * i + 2 * j;
            __m256i v = _mm256_loadu_si256((const __m256i *)(w + 48 + 32 * j));
            __m256i h0 = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j), one), 4);
            __m256i h1 =
                _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * j + 1), one), 4);
            __m256i lo = _mm256_or_si256(_mm256_and_si256(v, m4), h0);
            __m256i hi = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), h1);
            acc = _mm256_fmadd_ps(udot(lo, XQ(b)), _mm256_set1_ps(d * sc0 * a->d[b]), acc);
            acc = _mm256_fmadd_ps(udot(hi, XQ(b + 1)), _mm256_set1_ps(d * sc1 * a->d[b + 1]), acc);
            off += dmin * (m0 * a->ms32[b] + m1 * a->ms32[b + 1]);
        }
    }
    return hsum(acc) - off;
}

static float fdot_q6_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc[2] = {_mm256_setzero_ps(), _mm256_setzero_ps()};  /* two chains */
    const __m256i m4 = _mm256_set1_epi8(15), m2 = _mm256_set1_epi8(3);
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += 210) {
        PREFETCH(w);
        const int8_t *sc = (const int8_t *)(w + 192);
        float d = fp16(w + 208);
        for (int n = 0; n < 2; n++) {
            const uint8_t *ql = w + 64 * n;
            __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * n));
            __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
            __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
            __m256i q[4] = {_mm256_and_si256(l0, m4), _mm256_and_si256(l1, m4),
                            _mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
                            _mm256_and_si256(_mm256_srli_epi16(l1, 4), m4)};
            for (int t = 0; t < 4; t++) {
                __m256i h = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), m2), 4);
                int64_t b = 8 * i + 4 * n + t, g = 8 * n + 2 * t;
                float s0 = d * sc[g], s1 = d * sc[g + 1];
                __m256 s = _mm256_set_m128(_mm_set1_ps(s1 * a->d[b]), _mm_set1_ps(s0 * a->d[b]));
                acc[t & 1] = _mm256_fmadd_ps(udot(_mm256_or_si256(q[t], h), XQ(b)), s, acc[t & 1]);
                off += s0 * a->ms[2 * b] + s1 * a->ms[2 * b + 1];
            }
        }
    }
    return hsum(_mm256_add_ps(acc[0], acc[1])) - 32.f * off;
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
#undef XQ

typedef float (*FusedDot)(const uint8_t *, int64_t, const Act *);

static FusedDot fused(int64_t qtype) {
    switch (qtype) {
    case T_Q8_0: return fdot_q8_0;
    case T_MXFP4: return fdot_mxfp4;
    case T_Q4_K: return fdot_q4_K;
    case T_Q6_K: return fdot_q6_K;
    case T_Q4_0: return fdot_q4_0;
    case T_Q5_0: return fdot_q5_0;
    case T_Q5_K: return fdot_q5_K;
    case T_IQ4_NL: return grids_set ? fdot_iq4_nl : NULL;
    case T_IQ4_XS: return grids_set ? fdot_iq4_xs : NULL;
    default: return NULL;
    }
}
#else
typedef float (*FusedDot)(const uint8_t *, int64_t, const Act *);
static FusedDot fused(int64_t qtype) { (void)qtype; return NULL; }
#endif

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
             base->ms32 + i * (cols / 32)};
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

/* --- matmul and the expert feed-forward -------------------------------------------------- */


/* y[i, r] = row r of expert e's matrix · activation row i, for the n rows of `a`. */
static int matmul(const HMat *mat, int64_t e, const Act *a, int64_t n, float *y, int threads) {
    int64_t block, bytes;
    Decoder dec = decoder(mat->qtype, &block, &bytes);
    if (dec == NULL) return -2;
    if (mat->cols % block) return -1;  /* rows are whole blocks */
    const int64_t cols = mat->cols, nb = cols / block, row_bytes = nb * bytes;
    const uint8_t *base = mat->data + e * mat->expert_bytes;
    FusedDot fdot = n <= FUSED_MAX_ROWS ? fused(mat->qtype) : NULL;
    if (fdot != NULL) {
#pragma omp parallel for schedule(static) num_threads(threads)
        for (int64_t r = 0; r < mat->rows; r++)
            for (int64_t i = 0; i < n; i++) {
                Act ai = act_at(a, i, cols);
                y[i * mat->rows + r] = fdot(base + r * row_bytes, nb, &ai);
            }
        return 0;
    }
    const int with_offsets = mat->qtype == T_Q4_1 || mat->qtype == T_Q5_1 ||
                             mat->qtype == T_Q2_K || mat->qtype == T_Q4_K ||
                             mat->qtype == T_Q5_K;
    int failed = 0;
#pragma omp parallel num_threads(threads)
    {
        Row w = {malloc((size_t)cols), malloc((size_t)cols * sizeof(float)),
                 malloc((size_t)(cols / 16) * sizeof(float))};
        if (w.q == NULL || w.s4 == NULL || w.m == NULL) {
#pragma omp atomic write
            failed = 1;
        } else {
#pragma omp for schedule(static)
            for (int64_t r = 0; r < mat->rows; r++) {
                dec(base + r * row_bytes, nb, &w);
                dots(&w, a, n, cols, with_offsets, y + r, mat->rows);
            }
        }
        free(w.q), free(w.s4), free(w.m);
    }
    return failed ? -3 : 0;
}

static float activate(float g, float u, int act) {
    if (act == ACT_SWIGLU_OAI) {
        g = fminf(g, 7.f);
        u = fminf(fmaxf(u, -7.f), 7.f);
        return g / (1.f + expf(-1.702f * g)) * (u + 1.f);
    }
    if (act == ACT_GELU_TANH) {
        float inner = 0.7978845608028654f * (g + 0.044715f * g * g * g);
        return 0.5f * g * (1.f + tanhf(inner)) * u;
    }
    return g / (1.f + expf(-g)) * u;
}

static int alloc_act(Act *a, int64_t n, int64_t cols) {
    a->q = malloc((size_t)(n * cols));
    a->d = malloc((size_t)(n * cols / 32) * sizeof(float));
    a->ms = malloc((size_t)(n * cols / 16) * sizeof(float));
    a->ms32 = malloc((size_t)(n * cols / 32) * sizeof(float));
    return a->q && a->d && a->ms && a->ms32;
}

static void free_act(Act *a) { free(a->q), free(a->d), free(a->ms), free(a->ms32); }

/* One expert on the n rows `rows` (indices into x's rows) with weights `w`: out += ... */
static int expert(const HMat *gate, const HMat *up, const HMat *down, int64_t e,
                  const Act *xa, const int64_t *rows, int64_t n, const float *const biases[2],
                  int act, int threads, float *y) {
    const int64_t F = down->cols, cols = gate->cols;
    int rc = -3;
    Act mine = {0}, ha = {0};
    float *gu = malloc((size_t)(n * 2 * F) * sizeof(float));
    float *h = malloc((size_t)(n * F) * sizeof(float));
    if (!gu || !h || !alloc_act(&mine, n, cols) || !alloc_act(&ha, n, F)) goto done;
    for (int64_t i = 0; i < n; i++) {  /* this expert's rows, gathered */
        Act src = act_at(xa, rows[i], cols), dst = act_at(&mine, i, cols);
        memcpy(dst.q, src.q, (size_t)cols);
        memcpy(dst.d, src.d, (size_t)(cols / 32) * sizeof(float));
        memcpy(dst.ms, src.ms, (size_t)(cols / 16) * sizeof(float));
        memcpy(dst.ms32, src.ms32, (size_t)(cols / 32) * sizeof(float));
    }
    if (up == NULL) {  /* fused: gate rows, then up rows */
        if ((rc = matmul(gate, e, &mine, n, gu, threads)) != 0) goto done;
    } else {
        float *g1 = malloc((size_t)(n * F) * sizeof(float)), *u1 = malloc((size_t)(n * F) * sizeof(float));
        rc = (!g1 || !u1) ? -3 : matmul(gate, e, &mine, n, g1, threads);
        if (rc == 0) rc = matmul(up, e, &mine, n, u1, threads);
        for (int64_t i = 0; rc == 0 && i < n; i++) {
            memcpy(gu + i * 2 * F, g1 + i * F, (size_t)F * sizeof(float));
            memcpy(gu + i * 2 * F + F, u1 + i * F, (size_t)F * sizeof(float));
        }
        free(g1), free(u1);
        if (rc != 0) goto done;
    }
    for (int64_t i = 0; i < n; i++) {
        float *g = gu + i * 2 * F, *u = g + F;
        for (int64_t f = 0; f < F; f++) {
            float gv = g[f] + (biases[0] ? biases[0][e * F + f] : 0.f);
            float uv = u[f] + (biases[1] ? biases[1][e * F + f] : 0.f);
            h[i * F + f] = activate(gv, uv, act);
        }
        Act hi = act_at(&ha, i, F);
        quantize(h + i * F, F, &hi);
    }
    rc = matmul(down, e, &ha, n, y, threads);
done:
    free(gu), free(h), free_act(&mine), free_act(&ha);
    return rc;
}

/* out (T, H) = Σ_j wts[t, j] · expert_{ids[t, j]}(x[t]). `up` NULL: `gate` holds gate rows
 * then up rows. Biases (gate, up: (E, F); down: (E, H)) and out_scale (E,) may be NULL.
 * Returns 0, or -1 (bad shapes or ids), -2 (a type without a decoder), -3 (out of memory). */
int hearth_routed_ffn(const float *x, int64_t T, const int64_t *ids, const float *wts, int64_t k,
                      int64_t n_experts, const HMat *gate, const HMat *up, const HMat *down,
                      const float *gate_bias, const float *up_bias, const float *down_bias,
                      const float *out_scale, int64_t act, int64_t threads, float *out) {
    const int64_t H = down->rows, F = down->cols;
    const int64_t gate_rows = up == NULL ? 2 * F : F;
    if (H % 32 || F % 32 || gate->cols != H || gate->rows != gate_rows ||
        (up && (up->cols != H || up->rows != F)))
        return -1;
    for (int64_t i = 0; i < T * k; i++)
        if (ids[i] < 0 || ids[i] >= n_experts) return -1;
    const HMat *mats[3] = {gate, up, down};
    for (int i = 0; i < 3; i++) {
        int64_t block, bytes;
        if (mats[i] == NULL) continue;
        if (decoder(mats[i]->qtype, &block, &bytes) == NULL) return -2;
        if (mats[i]->cols % block || mats[i]->expert_bytes < mats[i]->rows * mats[i]->cols / block * bytes)
            return -1;
    }
    memset(out, 0, (size_t)(T * H) * sizeof(float));
    Act xa = {0};
    int64_t *start = calloc((size_t)n_experts + 1, sizeof(int64_t));
    int64_t *fill = malloc((size_t)n_experts * sizeof(int64_t));
    int64_t *chosen = malloc((size_t)n_experts * sizeof(int64_t));
    int64_t *rows = malloc((size_t)(T * k) * sizeof(int64_t));
    float *w = malloc((size_t)(T * k) * sizeof(float));
    float *y = malloc((size_t)(T * k * H) * sizeof(float));  /* each (row, expert) pair's output */
    int rc = -3;
    if (!start || !fill || !chosen || !rows || !w || !y || !alloc_act(&xa, T, H)) goto done;
    for (int64_t t = 0; t < T; t++) {
        Act at = act_at(&xa, t, H);
        quantize(x + t * H, H, &at);
    }
    /* The pairs grouped by expert (a counting sort that keeps row order). */
    for (int64_t i = 0; i < T * k; i++) start[ids[i] + 1]++;
    int64_t n_chosen = 0;
    for (int64_t e = 0; e < n_experts; e++) {
        if (start[e + 1]) chosen[n_chosen++] = e;
        start[e + 1] += start[e];
        fill[e] = start[e];
    }
    for (int64_t t = 0; t < T; t++)
        for (int64_t j = 0; j < k; j++) {
            int64_t p = fill[ids[t * k + j]]++;
            rows[p] = t, w[p] = wts[t * k + j];
        }
    /* Experts in parallel when there are enough of them (a decode step's k), else each
     * expert's rows in parallel; either way every output is summed below in one order. */
    int64_t work = 0;  /* weight bytes this call reads */
    for (int i = 0; i < 3; i++)
        if (mats[i] != NULL) work += n_chosen * mats[i]->expert_bytes;
    if (work < PARALLEL_MIN_BYTES) threads = 1;
    const int outer = n_chosen >= 2 * threads ? (int)threads : 1;
    const int inner = outer == 1 ? (int)threads : 1;
    const float *const biases[2] = {gate_bias, up_bias};
    rc = 0;
#pragma omp parallel for schedule(dynamic, 1) num_threads(outer)
    for (int64_t c = 0; c < n_chosen; c++) {
        int64_t e = chosen[c], p = start[e];
        int r = expert(gate, up, down, e, &xa, rows + p, start[e + 1] - p, biases, (int)act,
                       inner, y + p * H);
        if (r != 0) {
#pragma omp atomic write
            rc = r;
        }
    }
    for (int64_t c = 0; rc == 0 && c < n_chosen; c++) {
        int64_t e = chosen[c];
        for (int64_t p = start[e]; p < start[e + 1]; p++) {
            float scale = w[p] * (out_scale ? out_scale[e] : 1.f);
            float *o = out + rows[p] * H;
            const float *yp = y + p * H, *bias = down_bias ? down_bias + e * H : NULL;
            for (int64_t h = 0; h < H; h++) o[h] += scale * (yp[h] + (bias ? bias[h] : 0.f));
        }
    }
done:
    free(start), free(fill), free(chosen), free(rows), free(w), free(y), free_act(&xa);
    return rc;
}

/* y (n, rows) = expert e's matrix · each of the n rows of x (n, cols), the activations
 * quantized as in `hearth_routed_ffn`: the kernel's matmul alone, for tests and benches. */
int hearth_matmul(const HMat *mat, int64_t e, const float *x, int64_t n, float *y,
                  int64_t threads) {
    if (mat->cols % 32) return -1;
    Act a = {0};
    int rc = -3;
    if (alloc_act(&a, n, mat->cols)) {
        for (int64_t i = 0; i < n; i++) {
            Act ai = act_at(&a, i, mat->cols);
            quantize(x + i * mat->cols, mat->cols, &ai);
        }
        rc = matmul(mat, e, &a, n, y, (int)threads);
    }
    free_act(&a);
    return rc;
}
