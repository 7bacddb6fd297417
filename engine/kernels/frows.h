/* Fused dots of up to FUSED_MANY activation rows at once (a speculative verify: 1 + k rows,
 * a short prefill): each weight block is loaded and unpacked once, then dotted with every
 * row, the rows' sums kept in registers. Per row, the arithmetic is the single-row fused
 * dot's (dots.h, kdots.h), step for step: the same integer lane sums (integer adds are exact
 * in any order, so VNNI's fused steps give the same lanes), the same float products and
 * fmas per block in the same order, the same final hsum; so a row's bits never depend on
 * how many rows its call has (tests/engine/kernels/test_expert_kernel.py).
 *
 * Why: one decode step reads every weight once and is about as much arithmetic as memory on
 * a laptop's cores; a verify of 1 + k rows took the single-row dot 1 + k times (each row
 * unpacking every block again), and above 3 rows the decode-then-dot or packed-GEMM paths,
 * which cost 4 and 14 plain steps for 5 and 9 rows on the real Qwen2.5-0.5B. Here what is
 * per row is only the row's own work: with VNNI a 32-block costs a row one dpbusd (the
 * codes taken as x + 128, unsigned, and the weights' 128 · Σq subtracted once for every
 * row), one convert and one fma; the scales' products are one multiply for 8 rows, and the
 * K types' offsets one vector of 8 rows. `many_setup` lays the rows out for that once per
 * call: each block's rows side by side. The types are those real GGUFs hold (Q4_K_M files:
 * Q4_K, Q5_K, Q6_K, and Q5_0 / Q8_0 where a width is not whole 256s; Q4_0); the others keep
 * the single-row loop up to FUSED_MAX_ROWS. Included by kdots.h only. */
#ifndef HEARTH_FROWS_H
#define HEARTH_FROWS_H

#define FUSED_MANY 9 /* 1 + a draft of 8 */

typedef struct Many Many;
/* y[j · ys] = the weight row w (nb blocks) · activation row j, for the rows `m` laid out. */
typedef void (*FusedMany)(const uint8_t *w, int64_t nb, const Many *m, float *y, int64_t ys);

/* n activation rows, each block's rows side by side (row j of block b at b · n + j):
 * x: the 32-block types' per-32 codes (+ 128 where VNNI takes them unsigned) or the K
 * types' per-256 codes; d: each block's row scales, 16 a block (a->d or a->kd; 0 past n);
 * s: the K types' group sums (ks32: 8 a row, Q4_K / Q5_K; ks: 16 a row, Q6_K). */
struct Many {
    FusedMany fn;
    int64_t n;
    int8_t *x;
    float *d;
    int16_t *s;
};

static void many_free(Many *m) { free(m->x), free(m->d), free(m->s); }

#ifdef __AVX2__

#if (defined(__AVX512VNNI__) && defined(__AVX512VL__)) || defined(__AVXVNNI__)
#define MANY_VNNI 1 /* codes + 128 into vpdpbusd: no per-row sign steps */
static inline __m256i dpbusd256(__m256i acc, __m256i u, __m256i s) {
#if defined(__AVX512VNNI__) && defined(__AVX512VL__)
    return _mm256_dpbusd_epi32(acc, u, s);
#else
    return _mm256_dpbusd_avx_epi32(acc, u, s);
#endif
}
#endif

#define ROWS_LOOP _Pragma("GCC unroll 16") for (int j = 0; j < n; j++)
#define AL32 __attribute__((aligned(32)))

/* The 32-block types with one scale (Q8_0, Q4_0, Q5_0): `fdot_q8_0` & co. for n rows. */
#define T_ROWS_Q8_0 X0_Q8_0 /* the codes and block bytes of dots.h `x0_codes` */
#define T_ROWS_Q4_0 X0_Q4_0
#define T_ROWS_Q5_0 X0_Q5_0
static inline __attribute__((always_inline)) void rows32(const uint8_t *w, int64_t nb, const Many *m,
                                                         float *y, int64_t ys, const int n,
                                                         const int kind) {
    const int64_t step = X0_STEP[kind];
    const int8_t *xb = m->x;
    const float *db = m->d;
    __m256 acc[FUSED_MANY];
    ROWS_LOOP acc[j] = _mm256_setzero_ps();
    for (int64_t b = 0; b < nb; b++, w += step, xb += 32 * n, db += 16) {
        PREFETCH1(w);
        const __m256i q = x0_codes(w, kind);
        /* each row's d · a->d[b] (the single-row dot's scalar product), 8 rows a multiply */
        const __m256 dw = _mm256_set1_ps(fp16(w));
        float s[16] AL32;
        _mm256_store_ps(s, _mm256_mul_ps(dw, _mm256_loadu_ps(db)));
        if (n > 8) _mm256_store_ps(s + 8, _mm256_mul_ps(dw, _mm256_loadu_ps(db + 8)));
#ifdef MANY_VNNI
        /* Σ (x + 128) · q − 128 · Σ q = Σ x · q, lane for lane */
        const __m256i corr = _mm256_sub_epi32(
            _mm256_setzero_si256(), dpbusd256(_mm256_setzero_si256(), _mm256_set1_epi8((char)0x80), q));
        ROWS_LOOP {
            __m256i p = dpbusd256(corr, _mm256_loadu_si256((const __m256i *)(xb + 32 * j)), q);
            acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(s + j), acc[j]);
        }
#else
        const __m256i uq = _mm256_sign_epi8(q, q);
        ROWS_LOOP {
            __m256i x = _mm256_loadu_si256((const __m256i *)(xb + 32 * j));
            acc[j] = _mm256_fmadd_ps(udot(uq, _mm256_sign_epi8(x, q)), _mm256_broadcast_ss(s + j), acc[j]);
        }
#endif
    }
    ROWS_LOOP y[j * ys] = hsum(acc[j]);
}

/* Σ of each of 8 rows' four int32 (p[j]: row j), as one vector of 8 (exact in any order). */
static inline __m256i hsum4_rows(const __m128i p[8]) {
    __m128i a = _mm_hadd_epi32(_mm_hadd_epi32(p[0], p[1]), _mm_hadd_epi32(p[2], p[3]));
    __m128i b = _mm_hadd_epi32(_mm_hadd_epi32(p[4], p[5]), _mm_hadd_epi32(p[6], p[7]));
    return _mm256_set_m128i(b, a);
}

/* The K types' per-block tail for n rows: acc[j] += float(sum[j]) · (d · kd_j) and
 * off += od · kd_j · offs_j as `kdot_k45` / `kdot_q6_K` round them (rows 0-7 a vector, the
 * ninth a scalar). isum: rows' integer offsets (p4: four int32 a row to add). */
static inline __attribute__((always_inline)) void k_tail(const __m256i *sum, __m256 *acc, __m256 *off,
                                                         float *off8, const __m128i *p4, float d,
                                                         float od, const float *kd, const int n,
                                                         const int shift) {
    float s[8] AL32;
    const __m256 kdv = _mm256_loadu_ps(kd);
    _mm256_store_ps(s, _mm256_mul_ps(_mm256_set1_ps(d), kdv));
    ROWS_LOOP if (j < 8) acc[j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_broadcast_ss(s + j), acc[j]);
    __m128i p[8];
    for (int j = 0; j < 8; j++) p[j] = j < n ? p4[j] : _mm_setzero_si128();
    __m256i isum = _mm256_slli_epi32(hsum4_rows(p), shift);
    *off = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_set1_ps(od), kdv), _mm256_cvtepi32_ps(isum), *off);
    if (n > 8) {
        acc[8] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[8]), _mm256_set1_ps(d * kd[8]), acc[8]);
        __m128i q = _mm_add_epi32(p4[8], _mm_shuffle_epi32(p4[8], 0x4e));
        q = _mm_add_epi32(q, _mm_shuffle_epi32(q, 0xb1));
        *off8 = fmaf(od * kd[8], (float)(_mm_cvtsi128_si32(q) * (1 << shift)), *off8);
    }
}

static inline __attribute__((always_inline)) void k_out(const __m256 *acc, __m256 off, float off8,
                                                        float *y, int64_t ys, const int n) {
    float o[8] AL32;
    _mm256_store_ps(o, off);
    ROWS_LOOP y[j * ys] = hsum(acc[j]) - (j < 8 ? o[j] : off8);
}

/* Q4_K and Q5_K (`kdot_k45`) for n rows. */
static inline __attribute__((always_inline)) void rows_k45(const uint8_t *w, int64_t nb, const Many *m,
                                                           float *y, int64_t ys, const int n,
                                                           const int fifth) {
    const __m256i m4 = _mm256_set1_epi8(15), one = _mm256_set1_epi8(1);
    const int64_t step = fifth ? 176 : 144, codes = fifth ? 48 : 16;
    const int8_t *xb = m->x;
    const float *db = m->d;
    const int16_t *sb = m->s;
    __m256 acc[FUSED_MANY], off = _mm256_setzero_ps();
    float off8 = 0.f;
    ROWS_LOOP acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++, w += step, xb += 256 * n, db += 16, sb += 8 * n) {
        PREFETCH(w);
        uint32_t scw[2], mw[2];
        k4_bytes(w + 4, scw, mw);
        const __m256i sc16 = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)scw)));
        const __m256i qh = fifth ? _mm256_loadu_si256((const __m256i *)(w + 16)) : _mm256_setzero_si256();
        __m256i sum[FUSED_MANY];
        ROWS_LOOP sum[j] = _mm256_setzero_si256();
        for (int t = 0; t < 4; t++) {
            __m256i v = _mm256_loadu_si256((const __m256i *)(w + codes + 32 * t));
            __m256i lo = _mm256_and_si256(v, m4), hi = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
            if (fifth) {
                lo = _mm256_or_si256(lo, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t), one), 4));
                hi = _mm256_or_si256(
                    hi, _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(qh, 2 * t + 1), one), 4));
            }
            const __m256i sp = _mm256_shuffle_epi8(sc16, _mm256_loadu_si256((const __m256i *)K45_PAIR[t]));
            ROWS_LOOP {
                const int8_t *x = xb + 256 * j + 64 * t;
                sum[j] = kpair(sum[j], lo, _mm256_loadu_si256((const __m256i *)x), hi,
                               _mm256_loadu_si256((const __m256i *)(x + 32)), sp);
            }
        }
        /* the offsets: Σ_s mins[s] · ks32[s] per row (as dot8) */
        const __m128i mins = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)mw));
        __m128i p4[FUSED_MANY];
        ROWS_LOOP p4[j] = _mm_madd_epi16(mins, _mm_loadu_si128((const __m128i *)(sb + 8 * j)));
        k_tail(sum, acc, &off, &off8, p4, fp16(w), fp16(w + 2), db, n, 0);
    }
    k_out(acc, off, off8, y, ys, n);
}

/* Q6_K (`kdot_q6_K`) for n rows. */
static inline __attribute__((always_inline)) void rows_q6_K(const uint8_t *w, int64_t nb, const Many *m,
                                                            float *y, int64_t ys, const int n) {
    const int8_t *xb = m->x;
    const float *db = m->d;
    const int16_t *sb = m->s;
    __m256 acc[FUSED_MANY], off = _mm256_setzero_ps();
    float off8 = 0.f;
    ROWS_LOOP acc[j] = _mm256_setzero_ps();
    for (int64_t i = 0; i < nb; i++, w += 210, xb += 256 * n, db += 16, sb += 16 * n) {
        PREFETCH(w);
        const __m256i sc16 = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 192)));
        const __m256i halves[2] = {_mm256_permute4x64_epi64(sc16, 0x44), _mm256_permute4x64_epi64(sc16, 0xee)};
        __m256i sum[FUSED_MANY];
        ROWS_LOOP sum[j] = _mm256_setzero_si256();
        for (int h = 0; h < 2; h++) {
            __m256i q[4];
            q6_codes(w, h, q);
            for (int t = 0; t < 4; t += 2) {  /* `kpair`: the 32s t and t + 1 */
                const __m256i s = _mm256_shuffle_epi8(halves[h], _mm256_loadu_si256((const __m256i *)Q6_PAIR[t / 2]));
                ROWS_LOOP {
                    const int8_t *x = xb + 256 * j + 128 * h + 32 * t;
                    sum[j] = kpair(sum[j], q[t], _mm256_loadu_si256((const __m256i *)x), q[t + 1],
                                   _mm256_loadu_si256((const __m256i *)(x + 32)), s);
                }
            }
        }
        /* the offsets: 32 · Σ_g scale[g] · ks[g] per row */
        __m128i p4[FUSED_MANY];
        ROWS_LOOP {
            __m256i sp = _mm256_madd_epi16(sc16, _mm256_loadu_si256((const __m256i *)(sb + 16 * j)));
            p4[j] = _mm_add_epi32(_mm256_castsi256_si128(sp), _mm256_extracti128_si256(sp, 1));
        }
        const float dw = fp16(w + 208);
        k_tail(sum, acc, &off, &off8, p4, dw, dw, db, n, 5);
    }
    k_out(acc, off, off8, y, ys, n);
}
#undef ROWS_LOOP

/* One function per type and row count (constant n: the rows' sums stay in registers). */
#define ROWS_FN(name, n, call)                                                                     \
    static void name##_##n(const uint8_t *w, int64_t nb, const Many *m, float *y, int64_t ys) {  \
        call;                                                                                      \
    }
#define ROWS_ALL(name, body)                                                                       \
    ROWS_FN(name, 1, body(1)) ROWS_FN(name, 2, body(2)) ROWS_FN(name, 3, body(3))                  \
    ROWS_FN(name, 4, body(4)) ROWS_FN(name, 5, body(5)) ROWS_FN(name, 6, body(6))                  \
    ROWS_FN(name, 7, body(7)) ROWS_FN(name, 8, body(8)) ROWS_FN(name, 9, body(9))                  \
    static const FusedMany name[FUSED_MANY] = {name##_1, name##_2, name##_3, name##_4, name##_5,   \
                                               name##_6, name##_7, name##_8, name##_9};
#define B_Q8_0(n) rows32(w, nb, m, y, ys, n, T_ROWS_Q8_0)
#define B_Q4_0(n) rows32(w, nb, m, y, ys, n, T_ROWS_Q4_0)
#define B_Q5_0(n) rows32(w, nb, m, y, ys, n, T_ROWS_Q5_0)
#define B_Q4_K(n) rows_k45(w, nb, m, y, ys, n, 0)
#define B_Q5_K(n) rows_k45(w, nb, m, y, ys, n, 1)
#define B_Q6_K(n) rows_q6_K(w, nb, m, y, ys, n)
ROWS_ALL(frows_q8_0, B_Q8_0)
ROWS_ALL(frows_q4_0, B_Q4_0)
ROWS_ALL(frows_q5_0, B_Q5_0)
ROWS_ALL(frows_q4_K, B_Q4_K)
ROWS_ALL(frows_q5_K, B_Q5_K)
ROWS_ALL(frows_q6_K, B_Q6_K)

/* Lays the n rows of `a` out for qtype's n-row dot into m (`many_free` after); 0 where the
 * type has none (or out of memory: the caller's other paths then serve). The K types need the
 * per-256 activations (`a->k`), as their single-row dots do. */
static int many_setup(Many *m, int64_t qtype, const Act *a, int64_t n, int64_t cols) {
    m->x = NULL, m->d = NULL, m->s = NULL, m->fn = NULL, m->n = n;
    if (n < 2 || n > FUSED_MANY) return 0;  /* one row: the single-row dot (kdots.h `fused`) */
    const int k_type = qtype == T_Q4_K || qtype == T_Q5_K || qtype == T_Q6_K;
    if (k_type && a->k == NULL) return 0;
    switch (qtype) {
    case T_Q8_0: m->fn = frows_q8_0[n - 1]; break;
    case T_Q4_0: m->fn = frows_q4_0[n - 1]; break;
    case T_Q5_0: m->fn = frows_q5_0[n - 1]; break;
    case T_Q4_K: m->fn = frows_q4_K[n - 1]; break;
    case T_Q5_K: m->fn = frows_q5_K[n - 1]; break;
    case T_Q6_K: m->fn = frows_q6_K[n - 1]; break;
    default: return 0;
    }
    const int64_t B = k_type ? 256 : 32, nb = cols / B, groups = qtype == T_Q6_K ? 16 : 8;
    m->x = malloc((size_t)(n * cols));
    m->d = calloc((size_t)(nb * 16), sizeof(float));
    if (k_type) m->s = malloc((size_t)(nb * n * groups) * sizeof(int16_t));
    if (m->x == NULL || m->d == NULL || (k_type && m->s == NULL)) {
        many_free(m);
        return 0;
    }
    for (int64_t j = 0; j < n; j++) {
        const Act r = act_at(a, j, cols);
        for (int64_t b = 0; b < nb; b++) {
            int8_t *x = m->x + (b * n + j) * B;
            memcpy(x, (k_type ? r.k : r.q) + b * B, (size_t)B);
#ifdef MANY_VNNI
            if (!k_type)
                for (int l = 0; l < 32; l++) x[l] = (int8_t)(x[l] ^ 0x80);  /* + 128, unsigned */
#endif
            m->d[16 * b + j] = k_type ? r.kd[b] : r.d[b];
            if (k_type)
                memcpy(m->s + (b * n + j) * groups, (qtype == T_Q6_K ? r.ks : r.ks32) + b * groups,
                       (size_t)groups * sizeof(int16_t));
        }
    }
    return 1;
}
#else
static int many_setup(Many *m, int64_t qtype, const Act *a, int64_t n, int64_t cols) {
    (void)qtype, (void)a, (void)n, (void)cols;
    m->x = NULL, m->d = NULL, m->s = NULL, m->fn = NULL;
    return 0;
}
#endif

#endif
