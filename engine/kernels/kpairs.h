/* The K-quant decode-step dots by pairs of 32s (Q4_K, Q5_K, Q6_K), one row at a time, and
 * the pieces of their blocks that other paths share (`k4_bytes`, `sum4x8`, `kpair`, the pair
 * masks, `k45_codes`, `k45_step`).
 *
 * Owns the block arithmetic every path of these types repeats, so that a row's bits never
 * depend on the path. Does not own the activations (`quantize`, dots.h), the two-row dots
 * (kdot2.h), the prefill's decoded rows (kdots.h, frows.h) or the GEMM (kgemm_k.h). Included
 * by dots.h only, in its AVX2 part, where `XQ`, `PREFETCH` and `hsum` are defined. */
#ifndef HEARTH_KPAIRS_H
#define HEARTH_KPAIRS_H
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

/* Half h's 128 six-bit codes of the Q6_K block at w, as four vectors of 32 (the block's 32s
 * 4h .. 4h + 3): bits 0-3 the low or high nibbles of ql (w + 64h), bits 4-5 the bits 2t, 2t + 1
 * of each qh byte (w + 128 + 32h) for the 32 t. Every path of Q6_K takes its codes here.
 * With GFNI and AVX-512VL an affine byte map (one instruction) moves a 32's two high bits to
 * bits 4-5 with the others zero, and a ternary op merges them under the nibble mask: 10
 * instructions a half where shifts, masks and ors took 17; the same bytes. */
#if defined(__GFNI__) && defined(__AVX512VL__) && !defined(HEARTH_NO_AVX512)
/* Output bit 4 <- input bit 2t, bit 5 <- 2t + 1 (row i of the matrix is byte 7 - i). */
#define Q6_HIGH(t) _mm256_set1_epi64x((long long)((1ULL << (2 * (t) + 24)) | (1ULL << (2 * (t) + 1 + 16))))
#endif
static inline void q6_codes(const uint8_t *w, int h, __m256i q[4]) {
    const __m256i m4 = _mm256_set1_epi8(15);
    const __m256i l0 = _mm256_loadu_si256((const __m256i *)(w + 64 * h));
    const __m256i l1 = _mm256_loadu_si256((const __m256i *)(w + 64 * h + 32));
    const __m256i qh = _mm256_loadu_si256((const __m256i *)(w + 128 + 32 * h));
    /* the high nibbles by a 16-bit shift: the mask below drops what crossed from the next byte */
    const __m256i lo[4] = {l0, l1, _mm256_srli_epi16(l0, 4), _mm256_srli_epi16(l1, 4)};
#if defined(__GFNI__) && defined(__AVX512VL__) && !defined(HEARTH_NO_AVX512)
    for (int t = 0; t < 4; t++)  /* (lo & m4) | high: 0xEC */
        q[t] = _mm256_ternarylogic_epi32(lo[t], _mm256_gf2p8affine_epi64_epi8(qh, Q6_HIGH(t), 0), m4, 0xEC);
#else
    /* chunk t's two high bits moved to bits 4-5 in one shift and one mask: within a byte, so a
     * 16-bit shift is exact here */
    const __m256i m30 = _mm256_set1_epi8(0x30);
    const __m256i hi[4] = {_mm256_and_si256(_mm256_slli_epi16(qh, 4), m30),
                           _mm256_and_si256(_mm256_slli_epi16(qh, 2), m30), _mm256_and_si256(qh, m30),
                           _mm256_and_si256(_mm256_srli_epi16(qh, 2), m30)};
    for (int t = 0; t < 4; t++)
        q[t] = _mm256_or_si256(_mm256_and_si256(lo[t], m4), hi[t]);
#endif
}

static float kdot_q6_K(const uint8_t *w, int64_t nb, const Act *a) {
    __m256 acc = _mm256_setzero_ps();
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
            /* This half's eight scales in both lanes; `Q6_PAIR` spreads a pair's four. */
            __m256i half = _mm256_permute4x64_epi64(sc16, n == 0 ? 0x44 : 0xee);
            __m256i q[4];
            q6_codes(w, n, q);
            for (int t = 0; t < 4; t += 2)
                sum = kpair(sum, q[t], _mm256_loadu_si256((const __m256i *)(x + 128 * n + 32 * t)), q[t + 1],
                            _mm256_loadu_si256((const __m256i *)(x + 128 * n + 32 * t + 32)),
                            _mm256_shuffle_epi8(half, _mm256_loadu_si256((const __m256i *)Q6_PAIR[t / 2])));
        }
        float dd = fp16(w + 208) * a->kd[i];
        acc = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum), _mm256_set1_ps(dd), acc);
        off = fmaf(dd, (float)(32 * ssum), off);  /* as kdots rounds it: a row's bits never depend on n */
    }
    return hsum(acc) - off;
}

#endif
