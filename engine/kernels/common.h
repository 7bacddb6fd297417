/* The expert kernel's shared pieces: ggml type ids, the matrix, weight-row and activation
 * forms, float16. Included by experts.c only (one translation unit). */
#ifndef HEARTH_COMMON_H
#define HEARTH_COMMON_H

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
/* How a projection's input (its activations) meets the weights: quantized to int8, kept in
 * float, or quantized to int8 twice (the value, then what the first grid left over). */
enum { IN_INT8 = 0, IN_FLOAT = 1, IN_TWICE = 2 };

typedef struct {
    int64_t qtype;
    const uint8_t *data;  /* expert 0's first block */
    int64_t expert_bytes; /* bytes from one expert to the next */
    int64_t rows;         /* outputs */
    int64_t cols;         /* inputs: a multiple of the type's block size */
    int64_t experts;      /* experts `data` holds: it spans experts × expert_bytes bytes */
} HMat;

/* A float vector the caller hands over (a bias or a scale) and how many floats it holds;
 * a NULL HVec pointer or data: none. Every index into it is checked against n first. */
typedef struct {
    const float *data;
    int64_t n;
} HVec;

/* A weight row in the common form: q[cols], s4[cols/4] (each 16-group's scale, four times),
 * m[cols/16] (each 16-group's offset). */
typedef struct { int8_t *q; float *s4; float *m; } Row;

/* Activations, quantized: q[cols], d[cols/32] (scale per 32), ms[cols/16] (d * sum of the
 * group's 16 values: what an offset m multiplies), ms32[cols/32] (the same per 32); and the
 * per-256 form below. */
typedef struct {
    int8_t *q;
    float *d, *ms, *ms32;
    /* The same values quantized per 256 (llama.cpp's q8_K), for the K-quant dots: k[cols],
     * kd[cols/256], ks[cols/16] and ks32[cols/32] (each 16's and 32's sum of k). Only where
     * cols is a multiple of 256. */
    int8_t *k;
    float *kd;
    int16_t *ks, *ks32;
} Act;

/* A weight row in integer form, for the per-256 activations (K-quants, IQ2/IQ3: kdots.h,
 * iq.h): w = d·sc·q − od·off per 16, with unsigned codes q, integer scales sc and offsets. */
#ifdef __AVX2__
typedef struct {
    uint8_t *q;    /* cols unsigned codes */
    int16_t *sv;   /* cols/32 × 16: the 32's two 16-group scales, eight lanes each (paired: kpair_sv) */
    int16_t *off;  /* cols/16: each 16-group's integer offset */
    float *d, *od; /* cols/256: the block's scale and offset scale */
    int paired;    /* Q4_K, Q5_K, Q6_K: summed by pairs of 32s (kpairs.h `kpair`), sv as `kpair_sv` */
} KRow;

static inline void kgroup(KRow *r, int64_t g, int scale, int offset) {
    /* g's eight lanes: 16·(g/2) + 8·(g%2) */
    _mm_storeu_si128((__m128i *)(r->sv + 8 * g), _mm_set1_epi16((short)scale));
    r->off[g] = (int16_t)offset;
}

/* A paired row's scales for block i's pair of 32s q (2q, 2q + 1), in the slot of 32 2q (the
 * slot of 2q + 1 goes unused): as `kpair` takes them, per 128-bit lane four lanes of the
 * first 32's scale, then four of the second's; the low lane for the 32s' first 16-groups
 * (a0, b0), the high for their second (a1, b1). */
static inline void kpair_sv(KRow *r, int64_t i, int q, int a0, int a1, int b0, int b1) {
    _mm256_storeu_si256((__m256i *)(r->sv + 16 * (8 * i + 2 * q)),
                        _mm256_setr_epi16((short)a0, (short)a0, (short)a0, (short)a0, (short)b0, (short)b0,
                                          (short)b0, (short)b0, (short)a1, (short)a1, (short)a1, (short)a1,
                                          (short)b1, (short)b1, (short)b1, (short)b1));
}
#else
typedef struct { int unused; } KRow;
#endif

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

#endif
