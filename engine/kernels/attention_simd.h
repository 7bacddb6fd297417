/* The inner loops of `attention.h`: packing keys into a panel, scoring queries against it,
 * e^x on eight lanes, the weights' sum and the weighted values, with AVX2 (AVX-512's
 * registers where the build has them) and a plain C form for other machines; and a cache's
 * float16 values (F16C where the build has it, else the bit arithmetic below).
 *
 * Owns the order every sum runs in, which is what makes a row's bits independent of its run:
 * a logit sums its d in order in one lane, a weight sum runs in eight lanes then one fixed
 * tree, a weighted value in key order in one lane. Does not own which keys a row sees or how
 * chunks combine (`attention.h`). Included by attention.h after the `Attn` type. */
#ifndef HEARTH_ATTENTION_SIMD_H
#define HEARTH_ATTENTION_SIMD_H

#define ATTN_INLINE static inline __attribute__((always_inline))

/* float → float16, rounded to nearest even (overflow to ±inf, NaN kept a NaN). Without F16C:
 * the float is scaled so that its bits below float16's precision round off in a float add,
 * the classic branch-free form. */
static inline uint16_t attn_half_of(float f) {
#ifdef __F16C__
    return (uint16_t)_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
#else
    uint32_t w, bits;
    memcpy(&w, &f, 4);
    const uint32_t twice = w + w, sign = w & 0x80000000u;
    float base = (fabsf(f) * 0x1.0p+112f) * 0x1.0p-110f; /* overflows to inf where it should */
    uint32_t bias = twice & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u; /* subnormal halves: one fixed grid */
    const uint32_t add_bits = (bias >> 1) + 0x07800000u;
    float add;
    memcpy(&add, &add_bits, 4);
    base += add;
    memcpy(&bits, &base, 4);
    const uint32_t nonsign = ((bits >> 13) & 0x7C00u) + (bits & 0x0FFFu);
    return (uint16_t)((sign >> 16) | (twice > 0xFF000000u ? 0x7E00u : nonsign));
#endif
}

static inline float attn_float_of(uint16_t h) {
#ifdef __F16C__
    return _cvtsh_ss(h);
#else
    const uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    uint32_t bits;
    if (exp == 0) { /* zero or subnormal: man · 2^-24 */
        const float v = (float)man * 0x1.0p-24f;
        return sign ? -v : v;
    }
    bits = exp == 31 ? sign | 0x7f800000u | (man << 13) : sign | ((exp + 112) << 23) | (man << 13);
    float f;
    memcpy(&f, &bits, 4);
    return f;
#endif
}

/* src[0..n) written to a cache row: as floats, or rounded to float16. */
static void attn_store(int half, void *dst, const float *src, int64_t n) {
    if (!half) {
        memcpy(dst, src, (size_t)n * sizeof(float));
        return;
    }
    uint16_t *h = dst;
    int64_t i = 0;
#ifdef __F16C__
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(h + i), _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
    for (; i < n; i++) h[i] = attn_half_of(src[i]);
}

/* Value d of a cache row (float32 or float16). */
static inline float attn_value(const void *row, int half, int64_t d) {
    return half ? attn_float_of(((const uint16_t *)row)[d]) : ((const float *)row)[d];
}

#ifdef __AVX2__
/* Values d .. d + 7 of a cache row. */
ATTN_INLINE __m256 attn_load8(const void *row, int half, int64_t d) {
    if (!half) return _mm256_loadu_ps((const float *)row + d);
#ifdef __F16C__
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)row + d)));
#else
    float f[8];
    for (int i = 0; i < 8; i++) f[i] = attn_float_of(((const uint16_t *)row)[d + i]);
    return _mm256_loadu_ps(f);
#endif
}
#endif

/* Keys j0..j0+15 (each clamped into [lo, hi)) as a panel: panel[16·d + t] = k_t[d]. */
static void attn_pack(const void *kc, int half, int64_t D, int64_t j0, int64_t lo, int64_t hi,
                      float *panel) {
    const void *k[16];
    for (int t = 0; t < 16; t++) {
        const int64_t j = j0 + t < lo ? lo : j0 + t >= hi ? hi - 1 : j0 + t;
        k[t] = (const char *)kc + j * D * (half ? 2 : 4);
    }
#ifdef __AVX2__
    for (int64_t d = 0; d < D; d += 8)
        for (int part = 0; part < 2; part++) { /* keys 8·part .. 8·part + 7: an 8×8 transpose */
            __m256 r[8], u[8];
            for (int t = 0; t < 8; t++) r[t] = attn_load8(k[8 * part + t], half, d);
            for (int t = 0; t < 8; t += 2) {
                u[t] = _mm256_unpacklo_ps(r[t], r[t + 1]);
                u[t + 1] = _mm256_unpackhi_ps(r[t], r[t + 1]);
            }
            for (int t = 0; t < 8; t += 4) {
                r[t] = _mm256_shuffle_ps(u[t], u[t + 2], 0x44);
                r[t + 1] = _mm256_shuffle_ps(u[t], u[t + 2], 0xEE);
                r[t + 2] = _mm256_shuffle_ps(u[t + 1], u[t + 3], 0x44);
                r[t + 3] = _mm256_shuffle_ps(u[t + 1], u[t + 3], 0xEE);
            }
            /* r[0..3]: dims 0,1,2,3 (keys 0-3 | 0-3 of the upper lane's dims 4-7) */
            for (int i = 0; i < 4; i++) {
                _mm256_storeu_ps(panel + 16 * (d + i) + 8 * part,
                                 _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
                _mm256_storeu_ps(panel + 16 * (d + i + 4) + 8 * part,
                                 _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
            }
        }
#else
    for (int t = 0; t < 16; t++)
        for (int64_t d = 0; d < D; d++) panel[16 * d + t] = attn_value(k[t], half, d);
#endif
}

#ifdef __AVX2__
/* exp_poly on eight lanes, the same steps. */
ATTN_INLINE __m256 attn_exp8(__m256 x) {
    x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.f)), _mm256_set1_ps(88.f));
    const __m256 round = _mm256_set1_ps(12582912.f);
    const __m256 n = _mm256_sub_ps(_mm256_fmadd_ps(x, _mm256_set1_ps(1.44269504088896341f), round), round);
    __m256 r = _mm256_fmadd_ps(n, _mm256_set1_ps(-0.693359375f), x);
    r = _mm256_fmadd_ps(n, _mm256_set1_ps(2.12194440e-4f), r);
    __m256 p = _mm256_set1_ps(1.9875691500e-4f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
    p = _mm256_add_ps(_mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r), _mm256_set1_ps(1.f));
    const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
    return _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(p), e));
}

/* Logits scaled, capped (cap·tanh(x/cap), tanh(y) = 1 − 2/(e^(2y) + 1)) and −inf for keys
 * outside [lo, hi) (idx: the lanes' key positions). */
ATTN_INLINE __m256 attn_finish(const Attn *a, __m256 x, __m256i idx, int64_t lo, int64_t hi) {
    x = _mm256_mul_ps(x, _mm256_set1_ps(a->scale));
    if (a->softcap > 0.f) {
        const __m256 cap = _mm256_set1_ps(a->softcap), one = _mm256_set1_ps(1.f);
        const __m256 e = attn_exp8(_mm256_div_ps(_mm256_add_ps(x, x), cap));
        x = _mm256_mul_ps(cap, _mm256_sub_ps(one, _mm256_div_ps(_mm256_set1_ps(2.f), _mm256_add_ps(e, one))));
    }
    const __m256i seen = _mm256_and_si256(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1)),
                                          _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx));
    return _mm256_blendv_ps(_mm256_set1_ps(-INFINITY), x, _mm256_castsi256_ps(seen));
}

/* M queries' logits for the panel's sixteen keys (at j0): each sums d in order in one lane. */
#if defined(__AVX512F__)
#define ATTN_MR 8
#else
#define ATTN_MR 6 /* sixteen registers: 12 sums, two panel rows, one broadcast */
#endif
ATTN_INLINE void attn_qk(const Attn *a, const float *const *q, const int64_t *lo,
                         const int64_t *hi, int M, const float *panel, int64_t j0,
                         float *const *out) {
    __m256 s0[ATTN_MR], s1[ATTN_MR];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) s0[i] = s1[i] = _mm256_setzero_ps();
    for (int64_t d = 0; d < a->D; d++) {
        const __m256 p0 = _mm256_loadu_ps(panel + 16 * d), p1 = _mm256_loadu_ps(panel + 16 * d + 8);
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) {
            const __m256 x = _mm256_broadcast_ss(q[i] + d);
            s0[i] = _mm256_fmadd_ps(x, p0, s0[i]);
            s1[i] = _mm256_fmadd_ps(x, p1, s1[i]);
        }
    }
    const __m256i idx = _mm256_add_epi32(_mm256_set1_epi32((int)j0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i idx8 = _mm256_add_epi32(idx, _mm256_set1_epi32(8));
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        _mm256_storeu_ps(out[i], attn_finish(a, s0[i], idx, lo[i], hi[i]));
        _mm256_storeu_ps(out[i] + 8, attn_finish(a, s1[i], idx8, lo[i], hi[i]));
    }
}

static void attn_qk_any(const Attn *a, const float *const *q, const int64_t *lo,
                        const int64_t *hi, int M, const float *panel, int64_t j0,
                        float *const *out) {
    switch (M) { /* each a constant, so its sums stay in registers */
    case 1: attn_qk(a, q, lo, hi, 1, panel, j0, out); break;
    case 2: attn_qk(a, q, lo, hi, 2, panel, j0, out); break;
    case 3: attn_qk(a, q, lo, hi, 3, panel, j0, out); break;
    case 4: attn_qk(a, q, lo, hi, 4, panel, j0, out); break;
    case 5: attn_qk(a, q, lo, hi, 5, panel, j0, out); break;
    case 6: attn_qk(a, q, lo, hi, 6, panel, j0, out); break;
#if ATTN_MR == 8
    case 7: attn_qk(a, q, lo, hi, 7, panel, j0, out); break;
    case 8: attn_qk(a, q, lo, hi, 8, panel, j0, out); break;
#endif
    default: break;
    }
}
#else
/* Without AVX2: the same sums, one lane at a time (this build's bits are its own). */
static void attn_qk_any(const Attn *a, const float *const *q, const int64_t *lo,
                        const int64_t *hi, int M, const float *panel, int64_t j0,
                        float *const *out) {
    for (int i = 0; i < M; i++)
        for (int t = 0; t < 16; t++) {
            float x = 0.f;
            for (int64_t d = 0; d < a->D; d++) x += q[i][d] * panel[16 * d + t];
            x *= a->scale;
            if (a->softcap > 0.f)
                x = a->softcap * (1.f - 2.f / (exp_poly(2.f * x / a->softcap) + 1.f));
            out[i][t] = j0 + t >= lo[i] && j0 + t < hi[i] ? x : -INFINITY;
        }
}
#define ATTN_MR 6
#endif

/* logits[0..n) (n a multiple of 8; −inf: a key not seen) become e^(logit − m), summed in
 * eight lanes in order and then one fixed tree; returns the sum. */
NO_TRAP static float attn_weights(float *logits, int64_t n, float m) {
    float lanes[8] = {0};
#ifdef __AVX2__
    __m256 sum = _mm256_setzero_ps();
    const __m256 mv = _mm256_set1_ps(m), none = _mm256_set1_ps(-INFINITY);
    for (int64_t j = 0; j < n; j += 8) {
        const __m256 x = _mm256_loadu_ps(logits + j);
        const __m256 w = _mm256_and_ps(attn_exp8(_mm256_sub_ps(x, mv)), _mm256_cmp_ps(x, none, _CMP_NEQ_OQ));
        _mm256_storeu_ps(logits + j, w);
        sum = _mm256_add_ps(sum, w);
    }
    _mm256_storeu_ps(lanes, sum);
#else
    for (int64_t j = 0; j < n; j++) {
        const float w = logits[j] != -INFINITY ? exp_poly(logits[j] - m) : 0.f;
        logits[j] = w;
        lanes[j % 8] += w;
    }
#endif
    return ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) +
           ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
}

/* M queries' Σ w[j − base]·v_j[d0 .. d0 + 16) over keys [lo, hi) (w: 0 for a key a query
 * does not see), into acc[i] + d0: each sum in key order, in one lane. */
#ifdef __AVX2__
ATTN_INLINE void attn_pv(const float *const *w, int M, int64_t base, const void *vc, int half,
                         int64_t D, int64_t d0, int64_t lo, int64_t hi, float *const *acc) {
    const int64_t row = D * (half ? 2 : 4);
    __m256 s0[ATTN_MR], s1[ATTN_MR];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) s0[i] = s1[i] = _mm256_setzero_ps();
    for (int64_t j = lo; j < hi; j++) {
        const void *v = (const char *)vc + j * row;
        const __m256 v0 = attn_load8(v, half, d0), v1 = attn_load8(v, half, d0 + 8);
#pragma GCC unroll 8
        for (int i = 0; i < M; i++) {
            const __m256 x = _mm256_broadcast_ss(w[i] + j - base);
            s0[i] = _mm256_fmadd_ps(x, v0, s0[i]);
            s1[i] = _mm256_fmadd_ps(x, v1, s1[i]);
        }
    }
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) {
        _mm256_storeu_ps(acc[i] + d0, s0[i]);
        _mm256_storeu_ps(acc[i] + d0 + 8, s1[i]);
    }
}

/* M a constant in each case (sums in registers); half a constant in each of attn_pv_any's
 * two calls, so that its loads specialize. */
ATTN_INLINE void attn_pv_m(const float *const *w, int M, int64_t base, const void *vc, int half,
                           int64_t D, int64_t d0, int64_t lo, int64_t hi, float *const *acc) {
    switch (M) {
    case 1: attn_pv(w, 1, base, vc, half, D, d0, lo, hi, acc); break;
    case 2: attn_pv(w, 2, base, vc, half, D, d0, lo, hi, acc); break;
    case 3: attn_pv(w, 3, base, vc, half, D, d0, lo, hi, acc); break;
    case 4: attn_pv(w, 4, base, vc, half, D, d0, lo, hi, acc); break;
    case 5: attn_pv(w, 5, base, vc, half, D, d0, lo, hi, acc); break;
    case 6: attn_pv(w, 6, base, vc, half, D, d0, lo, hi, acc); break;
#if ATTN_MR == 8
    case 7: attn_pv(w, 7, base, vc, half, D, d0, lo, hi, acc); break;
    case 8: attn_pv(w, 8, base, vc, half, D, d0, lo, hi, acc); break;
#endif
    default: break;
    }
}

static void attn_pv_any(const float *const *w, int M, int64_t base, const void *vc, int half,
                        int64_t D, int64_t lo, int64_t hi, float *const *acc) {
    for (int64_t d0 = 0; d0 < D; d0 += 16) {
        if (half) attn_pv_m(w, M, base, vc, 1, D, d0, lo, hi, acc);
        else attn_pv_m(w, M, base, vc, 0, D, d0, lo, hi, acc);
    }
}
#else
static void attn_pv_any(const float *const *w, int M, int64_t base, const void *vc, int half,
                        int64_t D, int64_t lo, int64_t hi, float *const *acc) {
    const int64_t row = D * (half ? 2 : 4);
    for (int i = 0; i < M; i++)
        for (int64_t d = 0; d < D; d++) {
            float x = 0.f;
            for (int64_t j = lo; j < hi; j++)
                x += w[i][j - base] * attn_value((const char *)vc + j * row, half, d);
            acc[i][d] = x;
        }
}
#endif

#endif
