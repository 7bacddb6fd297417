/* The IQ2/IQ3 codebook types (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S) in integer form, for
 * the per-256 activations: the row decoder the prefill GEMM packs from (`kdec_iq`) and the
 * decode step's dot straight from the blocks (`kdot_iq`), both from one description of a
 * block's 32-weight chunks (`kiq_chunk`), so their sums are the same, bit for bit.
 *
 * As llama.cpp dots them: a weight is d' · sc · v, v a grid value × sign (|v| <= 62), sc the
 * 16's or 32's scale as the integer 2s + 1 and d' the block's float16 scale over 8 (IQ2), 4
 * (IQ3_XXS) or 1 (IQ3_S): exactly the float form's d · (0.5 + s) · 0.25 and so on (iq.h).
 * Codes are v + IQ_BIAS (unsigned, for maddubs), so each 16's offset is IQ_BIAS · sc.
 * Included by experts.c only, through kdots.h. */
#ifndef HEARTH_KIQ_H
#define HEARTH_KIQ_H

#include "dots.h"

#ifdef __AVX2__
#define IQ_BIAS 64

/* Four grid rows of 8 (r[j]: weights 8j..8j+7), each weight negated where its bit of `signs`
 * is set (bit k: weight k), plus IQ_BIAS: what `signed8` does for 8, for 32 at once. */
static inline __m256i ksigned32(const uint64_t r[4], uint32_t signs) {
    const __m256i pick = _mm256_set_epi64x(0x0303030303030303LL, 0x0202020202020202LL,
                                           0x0101010101010101LL, 0x0000000000000000LL);
    const __m256i bit = _mm256_set1_epi64x((long long)0x8040201008040201ULL);
    __m256i v = _mm256_set_epi64x((long long)r[3], (long long)r[2], (long long)r[1], (long long)r[0]);
    __m256i neg = _mm256_cmpeq_epi8(_mm256_and_si256(_mm256_shuffle_epi8(_mm256_set1_epi32((int)signs), pick), bit), bit);
    v = _mm256_sub_epi8(_mm256_xor_si256(v, neg), neg);  /* -v where neg (all ones) */
    return _mm256_add_epi8(v, _mm256_set1_epi8(IQ_BIAS));
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

/* `ksign` of four 7-bit sign indices, one a byte of s: every byte's parity folded into its
 * bit 0 at once (the shifts stay within the byte's own bits there), then set as its bit 7. */
static inline uint32_t ksign4(uint32_t s) {
    uint32_t t = s ^ (s >> 4);
    t ^= t >> 2, t ^= t >> 1;
    return s | (t & 0x01010101u) << 7;
}

/* Four 7-bit sign indices (bits 0-27 of aux) as 32 sign bits. */
static inline uint32_t ksigns4(uint32_t aux) {
    return ksign4((aux & 0x7fu) | ((aux << 1) & 0x7f00u) | ((aux << 2) & 0x7f0000u) | ((aux << 3) & 0x7f000000u));
}

/* A block's bytes, and its d' (the float16 scale over 8, 4 or 1). */
static inline int64_t kiq_bytes(int64_t qtype) {
    return qtype == T_IQ2_XXS ? 66 : qtype == T_IQ2_XS ? 74 : qtype == T_IQ2_S ? 82 : qtype == T_IQ3_XXS ? 98 : 110;
}
static inline float kiq_d(int64_t qtype, const uint8_t *b) {
    return fp16(b) * (qtype == T_IQ3_S ? 1.f : qtype == T_IQ3_XXS ? 0.25f : 0.125f);
}

/* Chunk ib (weights 32·ib..32·ib+31) of block b: its biased codes, and the integer scales of
 * its two 16-groups. Inlined into a function per type (a constant qtype: no switch left). */
static inline __m256i kiq_chunk(int64_t qtype, const uint8_t *b, int ib, int *lo, int *hi) {
    uint64_t rows[4];
    uint32_t signs, aux, idx;
    switch (qtype) {
    case T_IQ2_XXS:  /* per 32: four 8-bit grid indices, then four sign indices and the scale */
        memcpy(&idx, b + 2 + 8 * ib, 4), memcpy(&aux, b + 6 + 8 * ib, 4);
        for (int l = 0; l < 4; l++) rows[l] = grid8(GRID_2XXS, (idx >> (8 * l)) & 255);
        *lo = *hi = 2 * (int)(aux >> 28) + 1;
        return ksigned32(rows, ksigns4(aux));
    case T_IQ2_XS: {  /* per 8: a 16-bit 9-bit index and 7-bit sign index; a 4-bit scale per 16 */
        uint64_t u, t;
        memcpy(&u, b + 2 + 8 * ib, 8);
        for (int l = 0; l < 4; l++) rows[l] = grid8(GRID_2XS, (unsigned)(u >> (16 * l)) & 511);
        t = u >> 9;  /* sign index l at bits 16l..16l+6, to bits 8l..8l+6 */
        signs = ksign4((uint32_t)((t & 0x7fu) | ((t >> 8) & 0x7f00u) | ((t >> 16) & 0x7f0000u) | ((t >> 24) & 0x7f000000u)));
        *lo = 2 * (b[66 + ib] & 15) + 1, *hi = 2 * (b[66 + ib] >> 4) + 1;
        return ksigned32(rows, signs);
    }
    case T_IQ2_S:  /* per 8: a 10-bit index (two bits in qh) and a sign byte */
        for (int l = 0; l < 4; l++) rows[l] = grid8(GRID_2S, b[2 + 4 * ib + l] | (((b[66 + ib] >> (2 * l)) & 3u) << 8));
        memcpy(&signs, b + 34 + 4 * ib, 4);
        *lo = 2 * (b[74 + ib] & 15) + 1, *hi = 2 * (b[74 + ib] >> 4) + 1;
        return ksigned32(rows, signs);
    case T_IQ3_XXS:  /* per 4: an 8-bit index; per 32: four sign indices and the scale */
        memcpy(&aux, b + 66 + 4 * ib, 4);
        for (int l = 0; l < 4; l++) rows[l] = grid4x2(GRID_3XXS, b[2 + 8 * ib + 2 * l], b[3 + 8 * ib + 2 * l]);
        *lo = *hi = 2 * (int)(aux >> 28) + 1;
        return ksigned32(rows, ksigns4(aux));
    default: {  /* IQ3_S: per 4, a 9-bit index (the 9th bits: qh[ib]); per 8, a sign byte */
        const uint8_t *qs = b + 2 + 8 * ib, h = b[66 + ib];
        for (int l = 0; l < 4; l++)
            rows[l] = grid4x2(GRID_3S, qs[2 * l] | (((h >> (2 * l)) & 1u) << 8),
                              qs[2 * l + 1] | (((h >> (2 * l + 1)) & 1u) << 8));
        memcpy(&signs, b + 74 + 4 * ib, 4);
        *lo = *hi = 2 * ((b[106 + ib / 2] >> (4 * (ib % 2))) & 15) + 1;
        return ksigned32(rows, signs);
    }
    }
}

static inline void kdec_iq(int64_t qtype, const uint8_t *b, int64_t nb, KRow *r) {
    const int64_t step = kiq_bytes(qtype);
    for (int64_t i = 0; i < nb; i++, b += step) {
        for (int ib = 0; ib < 8; ib++) {
            int lo, hi;
            _mm256_storeu_si256((__m256i *)(r->q + 256 * i + 32 * ib), kiq_chunk(qtype, b, ib, &lo, &hi));
            kgroup(r, 16 * i + 2 * ib, lo, IQ_BIAS * lo), kgroup(r, 16 * i + 2 * ib + 1, hi, IQ_BIAS * hi);
        }
        r->d[i] = r->od[i] = kiq_d(qtype, b);
    }
}

/* `kdots`' sums on the row `kdec_iq` decodes, straight from the blocks: each 32's lanes
 * (maddubs, madd by the two 16-groups' scales, add), one fma per 256, the offsets' integer
 * sum and one fmaf. */
static inline float kdot_iq(int64_t qtype, const uint8_t *w, int64_t nb, const Act *a) {
    const int64_t step = kiq_bytes(qtype);
    __m256 acc = _mm256_setzero_ps();
    float off = 0.f;
    for (int64_t i = 0; i < nb; i++, w += step) {
        PREFETCH1(w);
        const int8_t *x = a->k + 256 * i;
        const int16_t *ks = a->ks + 16 * i;
        __m256i sum = _mm256_setzero_si256();
        int32_t isum = 0;
        for (int ib = 0; ib < 8; ib++) {
            int lo, hi;
            __m256i q = kiq_chunk(qtype, w, ib, &lo, &hi);
            __m256i p = _mm256_maddubs_epi16(q, _mm256_loadu_si256((const __m256i *)(x + 32 * ib)));
            __m256i s = _mm256_set_m128i(_mm_set1_epi16((short)hi), _mm_set1_epi16((short)lo));
            sum = _mm256_add_epi32(sum, _mm256_madd_epi16(p, s));
            isum += lo * ks[2 * ib] + hi * ks[2 * ib + 1];
        }
        float dd = kiq_d(qtype, w) * a->kd[i];
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(dd), acc);
        off = fmaf(dd, (float)(IQ_BIAS * isum), off);
    }
    return hsum(acc) - off;
}

/* One of each per type, the switch folded away. */
#define KIQ(name, T)                                                                             \
    static void kdec_##name(const uint8_t *b, int64_t nb, KRow *r) { kdec_iq(T, b, nb, r); }   \
    static float kdot_##name(const uint8_t *w, int64_t nb, const Act *a) { return kdot_iq(T, w, nb, a); }
KIQ(iq2_xxs, T_IQ2_XXS)
KIQ(iq2_xs, T_IQ2_XS)
KIQ(iq2_s, T_IQ2_S)
KIQ(iq3_xxs, T_IQ3_XXS)
KIQ(iq3_s, T_IQ3_S)
#undef KIQ
#endif

#endif
