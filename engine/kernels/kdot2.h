/* A decode step's dots two weight rows at a time (Q4_K, Q5_K; Q8_0, Q4_0, Q5_0; MXFP4).
 *
 * Owns `kdot2_k45`, `kdot2_x0`, `kdot2_mxfp4` (with `mxfp4_xform`) and `fused2` (which types
 * have them). Does not own the one-row dots whose arithmetic each row here repeats
 * (`kdot_k45`, kpairs.h; `fdot_x0`, `fdot_mxfp4`, dots.h), or
 * how rows are shared between threads (`fdot_rows`, experts.c). Included by kdots.h, in its
 * AVX2 part.
 *
 * Why: one row's block is a chain of dependent multiplies (K-quants: sums of four, a pack, a
 * multiply by the sub-scales, four pairs deep; the 32-block types: one fma per 32 into one
 * accumulator) that the core waits on; cutting the K block's instructions by a quarter
 * (`k4_vec`) gained 3 %, so the bound is that chain, not the instruction count. Two rows'
 * chains side by side give the core independent work, and the activation codes load once for
 * both: Q4_K one thread 37 -> 43 GMAC/s, in cache and from memory, the real
 * Qwen2.5-Coder-1.5B's decode on one thread 18.7 -> 20.8 tok/s; Q8_0 23.7 -> 31.8 GMAC/s from
 * memory (the Q8_0 output matrices of Gemma 3 270M and Qwen2.5-0.5B). Q6_K the same way ran
 * slower from memory (24.7 against 28.9 GMAC/s), so it keeps one row. */
#ifndef HEARTH_KDOT2_H
#define HEARTH_KDOT2_H

/* For two rows read side by side (`kdot2_*`): the pair is one span of 2 · stride bytes, so
 * sweep the next pair's span at the pace of this one's blocks, PREFETCH_AHEAD further on.
 * Each row's own stream prefetched as `PREFETCH` does ran a 65,536-row Q4_K matrix from
 * memory at half the single-row speed (17-21 against 37 GMAC/s): its lines came too late. */
static inline void pair_prefetch(const uint8_t *row0, int64_t stride, int64_t step, int64_t i) {
    const char *c = (const char *)row0 + 2 * stride + 2 * step * i + PREFETCH_AHEAD;
    /* 2 · step bytes: five lines (Q4_K), six (Q5_K). The builtin, not `_mm_prefetch`: GCC
     * 12 left no prefetch of `_mm_prefetch`'s in this function's object code (13 GMAC/s). */
    __builtin_prefetch(c, 0, 3);
    __builtin_prefetch(c + 64, 0, 3);
    __builtin_prefetch(c + 128, 0, 3);
    __builtin_prefetch(c + 192, 0, 3);
    __builtin_prefetch(c + 256, 0, 3);
    if (2 * step > 320) __builtin_prefetch(c + 320, 0, 3);
}

/* Two consecutive rows of Q4_K / Q5_K, ``stride`` bytes apart, against one activation row,
 * into y[0], y[1]: each row's arithmetic is `kdot_k45`'s (the same `k45_codes`, `kpair` and
 * `k45_step`), so its bits are the same whichever path computes it. */
static inline __attribute__((always_inline)) void kdot2_k45(const uint8_t *w, int64_t stride, int64_t nb,
                                                            const Act *a, int fifth, float *y) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t step = fifth ? 176 : 144, codes = fifth ? 48 : 16;
    float off0 = 0.f, off1 = 0.f;
    const uint8_t *w1 = w + stride;
    for (int64_t i = 0; i < nb; i++, w += step, w1 += step) {
        pair_prefetch(w - i * step, stride, step, i);
        const __m128i sm0 = k4_vec(w + 4), sm1 = k4_vec(w1 + 4);
        const __m256i sc0 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm0));
        const __m256i sc1 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(sm1));
        const int8_t *x = a->k + 256 * i;
        const __m256i qh0 = fifth ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
        const __m256i qh1 = fifth ? _mm256_loadu_si256((const __m256i *)(w1 + 16)) : _mm256_setzero_si256();
        __m256i s0 = _mm256_setzero_si256(), s1 = _mm256_setzero_si256();
        for (int j = 0; j < 4; j++) {
            const __m256i x0 = _mm256_loadu_si256((const __m256i *)(x + 64 * j));
            const __m256i x1 = _mm256_loadu_si256((const __m256i *)(x + 64 * j + 32));
            const __m256i pick = _mm256_loadu_si256((const __m256i *)K45_PAIR[j]);
            __m256i lo0, hi0, lo1, hi1;
            k45_codes(w, codes, qh0, j, fifth, &lo0, &hi0);
            k45_codes(w1, codes, qh1, j, fifth, &lo1, &hi1);
            s0 = kpair(s0, lo0, x0, hi0, x1, _mm256_shuffle_epi8(sc0, pick));
            s1 = kpair(s1, lo1, x0, hi1, x1, _mm256_shuffle_epi8(sc1, pick));
        }
        k45_step(w, s0, sm0, a->kd[i], a->ks32 + 8 * i, &acc0, &off0);
        k45_step(w1, s1, sm1, a->kd[i], a->ks32 + 8 * i, &acc1, &off1);
    }
    y[0] = hsum(acc0) - off0;
    y[1] = hsum(acc1) - off1;
}
static void kdot2_q4_K(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, float *y) {
    kdot2_k45(w, stride, nb, a, 0, y);
}
static void kdot2_q5_K(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, float *y) {
    kdot2_k45(w, stride, nb, a, 1, y);
}

/* Two rows of a 32-block type with one scale (Q8_0, Q4_0, Q5_0): each row's arithmetic is
 * `fdot_x0`'s (the same `x0_step`), and the activation codes load once for both. */
static inline __attribute__((always_inline)) void kdot2_x0(const uint8_t *w, int64_t stride, int64_t nb,
                                                           const Act *a, int kind, float *y) {
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    const int64_t step = X0_STEP[kind];
    const uint8_t *w0 = w, *w1 = w + stride;
    for (int64_t b = 0; b < nb; b++, w += step, w1 += step) {
        if ((b & 3) == 0) pair_prefetch(w0, stride, step, b);  /* 8 blocks' bytes, <= 320 */
        const __m256i x = _mm256_loadu_si256((const __m256i *)(a->q + 32 * b));
        acc0 = x0_step(w, kind, x, a->d[b], acc0);
        acc1 = x0_step(w1, kind, x, a->d[b], acc1);
    }
    y[0] = hsum(acc0);
    y[1] = hsum(acc1);
}
static void kdot2_q8_0(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, float *y) {
    kdot2_x0(w, stride, nb, a, X0_Q8_0, y);
}
static void kdot2_q4_0(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, float *y) {
    kdot2_x0(w, stride, nb, a, X0_Q4_0, y);
}
static void kdot2_q5_0(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, float *y) {
    kdot2_x0(w, stride, nb, a, X0_Q5_0, y);
}

/* --- MXFP4 (gpt-oss's experts), two rows at a time ----------------------------------------
 * Each row's arithmetic is `fdot_mxfp4`'s, lane for lane: the same int32 sum of each 4 codes
 * times their 4 activations, the same float fma per block with the block's E8M0 scale times
 * the activations', the same `hsum`; so a row's bits are the same whichever path computes it.
 * What changes is how the integers are formed. The codes go through a table of their values
 * plus 12 (unsigned, 0..24, which vpdpbusd takes as they are: no sign trick, two instructions
 * fewer a row), and each lane starts from -12 times its activations' sum, which cancels the
 * 12s exactly. Both rows' 16 code bytes load as one vector, so their low and high nibbles
 * split, and look up, once for the pair: lanes 0-3 of `il` are row 0's first 16 codes, lanes
 * 4-7 row 1's, and `ih` holds the last 16. The activations' halves twice over and the
 * starting sums are laid out once a call (`mxfp4_xform`). One thread, gpt-oss-20b's experts'
 * width: 25-27 -> 29-31 GMAC/s, in cache and from memory; four rows a call ran 27 from
 * memory, and 512-bit vectors no faster than two halves. */
#define MXF_STEP 128 /* bytes of `mxfp4_xform` a block: x[0:16] twice, x[16:32] twice, two starts */
static const int8_t MXFP4_PLUS12[16] = {12, 13, 14, 15, 16, 18, 20, 24, 12, 11, 10, 9, 8, 6, 4, 0};

/* One activation row in the form `kdot2_mxfp4` reads, `nb` blocks of MXF_STEP bytes. */
static void mxfp4_xform(const Act *a, int64_t nb, uint8_t *xf) {
    const __m256i twelve = _mm256_set1_epi8(12), zero = _mm256_setzero_si256();
    for (int64_t b = 0; b < nb; b++, xf += MXF_STEP) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(a->q + 32 * b));
        const __m256i xl = _mm256_permute4x64_epi64(x, 0x44), xh = _mm256_permute4x64_epi64(x, 0xEE);
        _mm256_storeu_si256((__m256i *)xf, xl);
        _mm256_storeu_si256((__m256i *)(xf + 32), xh);
        _mm256_storeu_si256((__m256i *)(xf + 64), _mm256_sub_epi32(zero, udot_acc(zero, twelve, xl)));
        _mm256_storeu_si256((__m256i *)(xf + 96), _mm256_sub_epi32(zero, udot_acc(zero, twelve, xh)));
    }
}

/* Two consecutive MXFP4 rows, ``stride`` bytes apart, against the activation row `a` whose
 * `mxfp4_xform` is `xf`, into y[0], y[1]. */
static void kdot2_mxfp4(const uint8_t *w, int64_t stride, int64_t nb, const Act *a, const uint8_t *xf,
                        float *y) {
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)MXFP4_PLUS12));
    const __m256i m4 = _mm256_set1_epi8(15);
    __m256 accl = _mm256_setzero_ps(), acch = _mm256_setzero_ps();
    const uint8_t *w0 = w, *w1 = w + stride;
    const float *d = a->d;
    for (int64_t b = 0; b < nb; b++, w += 17, w1 += 17, xf += MXF_STEP) {
        if ((b & 3) == 0) pair_prefetch(w0, stride, 17, b);
        const __m256i v = _mm256_loadu2_m128i((const __m128i *)(w1 + 1), (const __m128i *)(w + 1));
        const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, m4));
        const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), m4));
        const __m256i il = udot_acc(_mm256_loadu_si256((const __m256i *)(xf + 64)), lo,
                                    _mm256_loadu_si256((const __m256i *)xf));
        const __m256i ih = udot_acc(_mm256_loadu_si256((const __m256i *)(xf + 96)), hi,
                                    _mm256_loadu_si256((const __m256i *)(xf + 32)));
        const float s0 = e8m0_half(w[0]) * d[b], s1 = e8m0_half(w1[0]) * d[b];
        const __m256 s = _mm256_set_m128(_mm_set1_ps(s1), _mm_set1_ps(s0));
        accl = _mm256_fmadd_ps(_mm256_cvtepi32_ps(il), s, accl);
        acch = _mm256_fmadd_ps(_mm256_cvtepi32_ps(ih), s, acch);
    }
    /* Row 0's eight lanes are accl's low four then acch's, row 1's the high fours. */
    y[0] = hsum(_mm256_permute2f128_ps(accl, acch, 0x20));
    y[1] = hsum(_mm256_permute2f128_ps(accl, acch, 0x31));
}

/* The types whose decode step dots two rows at a time; NULL: one at a time (MXFP4 has its own
 * call, `kdot2_mxfp4`, which needs the activations laid out first). */
static FusedDot2 fused2(int64_t qtype) {
    switch (qtype) {
    case T_Q4_K: return kdot2_q4_K;
    case T_Q5_K: return kdot2_q5_K;
    case T_Q8_0: return kdot2_q8_0;
    case T_Q4_0: return kdot2_q4_0;
    case T_Q5_0: return kdot2_q5_0;
    default: return NULL;
    }
}

#endif
