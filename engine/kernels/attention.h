/* Causal attention over a KV cache, for the fast path's text runs (`HearthAttention`).
 *
 * Owns the arithmetic of one attention call: the new rows' rotary embedding, their K/V
 * written into the cache, and each query row's weighted sum of the cached values, with the
 * options the model families need (grouped KV heads, a sliding window, a logit softcap,
 * per-head sink logits). Its semantics are ONNX Runtime's GroupQueryAttention's (the graphs
 * used that op, and a test compares the two on random inputs), with the cache shared between
 * past and present. Does not own the op's inputs and outputs (`attention_op.h`), the cache's
 * allocation (the runner's buffers), or what happens before and after (projections, norms).
 *
 * Why its own: GroupQueryAttention weighs a decode step's few query rows with MLAS's SGEMM,
 * which first copies the cached K and V into its packed form, and it scores a sliding
 * layer's whole past before masking it: on a 0.5B Qwen2.5 at a 2,000-token context that was
 * 339 us a layer, 8 ms of a 34 ms step, where the cache itself is 2 MB a layer. Here each
 * query row streams the cache once, in place.
 *
 * How: keys in absolute chunks of ATTN_CHUNK positions, one item per (block of rows, KV head,
 * chunk). An item packs its keys sixteen at a time into a panel (d-major) and scores every
 * query of its rows and group against it, up to eight queries a pass (a GEMM micro-kernel:
 * a K load serves them all), then weighs the values two heads at a time. Each chunk leaves
 * its largest logit, Σ e^(logit − max) and Σ e^(logit − max)·v; a row's chunks are combined
 * in chunk order.
 *
 * Determinism: a logit sums its d in order in one lane, a weight sum and each value sum run
 * in key order, and chunks combine in order, so a row's bits depend on neither the number
 * of rows in the call (a decode step, a verified draft, a prefill), nor which rows or heads
 * shared an item, nor the thread count. */
#ifndef HEARTH_ATTENTION_H
#define HEARTH_ATTENTION_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define ATTN_CHUNK 256          /* keys per partial sum (absolute positions) */
#define ATTN_MAX_D 512          /* head sizes up to Gemma 4's global layers' */
#define ATTN_SCRATCH (16 << 20) /* bytes of partial sums one pass over rows may hold */
#define ATTN_QUERIES 32         /* (row, head) queries one item scores against a K panel */
#define ATTN_LOGITS (ATTN_CHUNK + 16)

typedef struct {
    const float *q, *k, *v;     /* the new rows: row r's head h at q + r·q_stride + h·D */
    int64_t q_stride, kv_stride;
    float *kc, *vc;             /* caches (B, KV, BUF, D), written at the new positions */
    int64_t B, S, H, KV, D, BUF;
    const int32_t *seqlens;     /* (B): each sequence's total length − 1 */
    const float *cos, *sin;     /* (rot_rows, rot_half): rotary tables, by position */
    int64_t rot_half, rot_rows;
    int rotary, interleaved;
    const float *sinks;         /* (H) sink logits, or NULL */
    float scale, softcap;       /* softcap 0: none */
    int64_t window;             /* > 0: a key at distance >= window is not seen (as in HF) */
    float *out;                 /* (B, S, H·D) */
    /* scratch, set by `attention` */
    float *qr;                  /* the rows' rotated queries (B·S, H·D) */
    float *part;                /* partial sums of one pass: (rows, H, chunks, D + 2) */
    float *scratch;             /* per thread slot: logits (ATTN_QUERIES, ATTN_LOGITS), then
                                   a K panel (D, 16) */
    int64_t slot_floats;
    int64_t chunks, row0, rows; /* chunks per row; the pass's first row and row count */
    int64_t block;              /* rows per item (queries: block × H/KV ≤ ATTN_QUERIES) */
} Attn;

/* The position of row s of sequence b, or -1 for a padding row (a first prompt shorter
 * than the run: GroupQueryAttention's right-padded batch). */
static inline int64_t attn_pos(const Attn *a, int64_t b, int64_t s) {
    const int64_t length = (int64_t)a->seqlens[b] + 1, past = length - a->S;
    if (past < 0) return s < length ? s : -1; /* a padded first prompt */
    return past + s;
}

/* t[0..D) rotated for `pos` in place: pairs (i, i + half) (neox) or (2i, 2i + 1). */
static void attn_rotate(const Attn *a, float *t, int64_t pos) {
    const float *c = a->cos + pos * a->rot_half, *s = a->sin + pos * a->rot_half;
    for (int64_t i = 0; i < a->rot_half; i++) {
        const int64_t x = a->interleaved ? 2 * i : i, y = a->interleaved ? 2 * i + 1 : i + a->rot_half;
        const float tx = t[x], ty = t[y];
        t[x] = tx * c[i] - ty * s[i];
        t[y] = ty * c[i] + tx * s[i];
    }
}

/* Row r's (b·S + s) query heads rotated into qr, its K (rotated) and V into the cache. */
static void attn_prepare(void *ctx, int64_t r0, int64_t r1, int slot) {
    const Attn *a = ctx;
    (void)slot;
    const int64_t D = a->D;
    for (int64_t r = r0; r < r1; r++) {
        const int64_t b = r / a->S, pos = attn_pos(a, b, r % a->S);
        float *qr = a->qr + r * a->H * D;
        memcpy(qr, a->q + r * a->q_stride, (size_t)(a->H * D) * sizeof(float));
        if (pos < 0) continue;
        for (int64_t g = 0; g < a->KV; g++) {
            float *kc = a->kc + ((b * a->KV + g) * a->BUF + pos) * D;
            float *vc = a->vc + ((b * a->KV + g) * a->BUF + pos) * D;
            memcpy(kc, a->k + r * a->kv_stride + g * D, (size_t)D * sizeof(float));
            memcpy(vc, a->v + r * a->kv_stride + g * D, (size_t)D * sizeof(float));
            if (a->rotary) attn_rotate(a, kc, pos);
        }
        if (a->rotary)
            for (int64_t h = 0; h < a->H; h++) attn_rotate(a, qr + h * D, pos);
    }
}

/* The keys row `pos` sees in chunk c: [*lo, *hi). Empty when lo >= hi. */
static inline void attn_keys(const Attn *a, int64_t pos, int64_t c, int64_t *lo, int64_t *hi) {
    int64_t first = a->window > 0 && pos >= a->window ? pos - a->window + 1 : 0;
    *lo = c * ATTN_CHUNK > first ? c * ATTN_CHUNK : first;
    *hi = (c + 1) * ATTN_CHUNK < pos + 1 ? (c + 1) * ATTN_CHUNK : pos + 1;
}

#define ATTN_INLINE static inline __attribute__((always_inline))

/* Keys j0..j0+15 (each clamped into [lo, hi)) as a panel: panel[16·d + t] = k_t[d]. */
static void attn_pack(const float *kc, int64_t D, int64_t j0, int64_t lo, int64_t hi,
                      float *panel) {
    const float *k[16];
    for (int t = 0; t < 16; t++) {
        const int64_t j = j0 + t < lo ? lo : j0 + t >= hi ? hi - 1 : j0 + t;
        k[t] = kc + j * D;
    }
#ifdef __AVX2__
    for (int64_t d = 0; d < D; d += 8)
        for (int half = 0; half < 2; half++) { /* keys 8·half .. 8·half + 7: an 8×8 transpose */
            __m256 r[8], u[8];
            for (int t = 0; t < 8; t++) r[t] = _mm256_loadu_ps(k[8 * half + t] + d);
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
                _mm256_storeu_ps(panel + 16 * (d + i) + 8 * half,
                                 _mm256_permute2f128_ps(r[i], r[i + 4], 0x20));
                _mm256_storeu_ps(panel + 16 * (d + i + 4) + 8 * half,
                                 _mm256_permute2f128_ps(r[i], r[i + 4], 0x31));
            }
        }
#else
    for (int t = 0; t < 16; t++)
        for (int64_t d = 0; d < D; d++) panel[16 * d + t] = k[t][d];
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
ATTN_INLINE void attn_pv(const float *const *w, int M, int64_t base, const float *vc, int64_t D,
                         int64_t d0, int64_t lo, int64_t hi, float *const *acc) {
    __m256 s0[ATTN_MR], s1[ATTN_MR];
#pragma GCC unroll 8
    for (int i = 0; i < M; i++) s0[i] = s1[i] = _mm256_setzero_ps();
    for (int64_t j = lo; j < hi; j++) {
        const __m256 v0 = _mm256_loadu_ps(vc + j * D + d0), v1 = _mm256_loadu_ps(vc + j * D + d0 + 8);
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

static void attn_pv_any(const float *const *w, int M, int64_t base, const float *vc, int64_t D,
                        int64_t lo, int64_t hi, float *const *acc) {
    for (int64_t d0 = 0; d0 < D; d0 += 16) switch (M) { /* each a constant: sums in registers */
        case 1: attn_pv(w, 1, base, vc, D, d0, lo, hi, acc); break;
        case 2: attn_pv(w, 2, base, vc, D, d0, lo, hi, acc); break;
        case 3: attn_pv(w, 3, base, vc, D, d0, lo, hi, acc); break;
        case 4: attn_pv(w, 4, base, vc, D, d0, lo, hi, acc); break;
        case 5: attn_pv(w, 5, base, vc, D, d0, lo, hi, acc); break;
        case 6: attn_pv(w, 6, base, vc, D, d0, lo, hi, acc); break;
#if ATTN_MR == 8
        case 7: attn_pv(w, 7, base, vc, D, d0, lo, hi, acc); break;
        case 8: attn_pv(w, 8, base, vc, D, d0, lo, hi, acc); break;
#endif
        default: break;
        }
}
#else
static void attn_pv_any(const float *const *w, int M, int64_t base, const float *vc, int64_t D,
                        int64_t lo, int64_t hi, float *const *acc) {
    for (int i = 0; i < M; i++)
        for (int64_t d = 0; d < D; d++) {
            float x = 0.f;
            for (int64_t j = lo; j < hi; j++) x += w[i][j - base] * vc[j * D + d];
            acc[i][d] = x;
        }
}
#endif

/* One item, (block of rows, KV head, chunk): for each query (row, head of the group), the
 * chunk's largest logit m, Σ e^(logit − m) and Σ e^(logit − m)·v into its slot of `part`:
 * (m, sum, acc[D]); m = −inf and sum 0 where the row sees no key of the chunk. */
NO_TRAP static void attn_chunk(void *ctx, int64_t i0, int64_t i1, int slot) {
    const Attn *a = ctx;
    const int64_t D = a->D, per = a->H / a->KV;
    float *logits = a->scratch + slot * a->slot_floats, *panel = logits + ATTN_QUERIES * ATTN_LOGITS;
    for (int64_t item = i0; item < i1; item++) {
        const int64_t c = item % a->chunks, g = (item / a->chunks) % a->KV;
        const int64_t rb = item / (a->chunks * a->KV);
        const int64_t r0 = a->row0 + rb * a->block;
        const int64_t r1 = r0 + a->block < a->row0 + a->rows ? r0 + a->block : a->row0 + a->rows;
        const float *q[ATTN_QUERIES];
        float *out[ATTN_QUERIES];
        int64_t lo[ATTN_QUERIES], hi[ATTN_QUERIES], first = INT64_MAX, last = 0, nq = 0;
        for (int64_t r = r0; r < r1; r++) {
            const int64_t b = r / a->S, pos = attn_pos(a, b, r % a->S);
            int64_t l = 0, h = 0;
            if (pos >= 0) attn_keys(a, pos, c, &l, &h);
            for (int64_t i = 0; i < per; i++, nq++)
                q[nq] = a->qr + r * a->H * D + (g * per + i) * D, lo[nq] = l, hi[nq] = h;
            if (l < h) first = l < first ? l : first, last = h > last ? h : last;
        }
        const int64_t b = r0 / a->S; /* an item's rows are of one sequence (block divides S) */
        const float *kc = a->kc + (b * a->KV + g) * a->BUF * D;
        const float *vc = a->vc + (b * a->KV + g) * a->BUF * D;
        const int64_t base = first < last ? first / 16 * 16 : 0;
        for (int64_t i = 0; i < nq; i++) out[i] = logits + i * ATTN_LOGITS;
        for (int64_t j0 = base; j0 < last; j0 += 16) {
            attn_pack(kc, D, j0, first, last, panel);
            for (int64_t i = 0; i < nq; i += ATTN_MR) {
                float *dest[ATTN_MR];
                const int M = (int)(nq - i < ATTN_MR ? nq - i : ATTN_MR);
                for (int m = 0; m < M; m++) dest[m] = out[i + m] + (j0 - base);
                attn_qk_any(a, q + i, lo + i, hi + i, M, panel, j0, dest);
            }
        }
        const int64_t n = (last - base + 15) / 16 * 16;
        for (int64_t i = 0; i < nq; i++) {
            const int64_t r = r0 + i / per, h = g * per + i % per;
            float *p = a->part + (((r - a->row0) * a->H + h) * a->chunks + c) * (D + 2);
            p[0] = -INFINITY, p[1] = 0.f;
            if (lo[i] >= hi[i]) { /* weighs every key 0 (its slot's sum 0: combine skips it) */
                memset(out[i], 0, (size_t)n * sizeof(float));
                continue;
            }
            float m = -INFINITY;
            for (int64_t j = lo[i]; j < hi[i]; j++) m = out[i][j - base] > m ? out[i][j - base] : m;
            p[0] = m, p[1] = attn_weights(out[i], n, m);
        }
        if (first >= last) continue;
        float *acc[ATTN_QUERIES];
        for (int64_t i = 0; i < nq; i++) {
            const int64_t r = r0 + i / per, h = g * per + i % per;
            acc[i] = a->part + (((r - a->row0) * a->H + h) * a->chunks + c) * (D + 2) + 2;
        }
        /* every query over the keys any of them sees: the others weigh 0, adding exact zeros */
        for (int64_t i = 0; i < nq; i += ATTN_MR) {
            const int M = (int)(nq - i < ATTN_MR ? nq - i : ATTN_MR);
            attn_pv_any((const float *const *)out + i, M, base, vc, D, first, last, acc + i);
        }
    }
}

/* One (row, head) item: its chunks' partial sums combined in chunk order (and the sink's
 * logit in the denominator), into `out`. */
NO_TRAP static void attn_combine(void *ctx, int64_t i0, int64_t i1, int slot) {
    const Attn *a = ctx;
    (void)slot;
    const int64_t D = a->D;
    for (int64_t item = i0; item < i1; item++) {
        const int64_t h = item % a->H, r = a->row0 + item / a->H;
        const float *p = a->part + ((r - a->row0) * a->H + h) * a->chunks * (D + 2);
        float *o = a->out + r * a->H * D + h * D;
        float m = a->sinks != NULL ? a->sinks[h] : -INFINITY;
        for (int64_t c = 0; c < a->chunks; c++) m = p[c * (D + 2)] > m ? p[c * (D + 2)] : m;
        memset(o, 0, (size_t)D * sizeof(float));
        if (m == -INFINITY) continue; /* a padding row: nothing seen */
        float sum = a->sinks != NULL ? exp_poly(a->sinks[h] - m) : 0.f;
        for (int64_t c = 0; c < a->chunks; c++) {
            const float *pc = p + c * (D + 2);
            if (pc[1] == 0.f) continue;
            const float f = exp_poly(pc[0] - m);
            sum += f * pc[1];
            for (int64_t d = 0; d < D; d++) o[d] += f * pc[2 + d];
        }
        const float inv = 1.f / sum;
        for (int64_t d = 0; d < D; d++) o[d] *= inv;
    }
}

/* The whole call on up to `threads` threads; 0, or -3 when out of memory. The caller has
 * checked the shapes (positions inside the cache and the rotary tables, D % 16 == 0,
 * H % KV == 0, H/KV <= ATTN_QUERIES). */
static int attention(Attn *a, int threads) {
    const int64_t rows = a->B * a->S, D = a->D, per = a->H / a->KV;
    int64_t longest = 0;
    for (int64_t b = 0; b < a->B; b++) longest = a->seqlens[b] + 1 > longest ? a->seqlens[b] + 1 : longest;
    a->chunks = (longest + ATTN_CHUNK - 1) / ATTN_CHUNK;
    if (a->chunks < 1) a->chunks = 1;
    /* rows per item: as many as ATTN_QUERIES queries hold, of one sequence (a divisor of S) */
    a->block = ATTN_QUERIES / per;
    while (a->S % a->block) a->block--;
    const int64_t row_bytes = a->H * a->chunks * (D + 2) * (int64_t)sizeof(float);
    int64_t per_pass = ATTN_SCRATCH / row_bytes > a->block ? ATTN_SCRATCH / row_bytes : a->block;
    per_pass = per_pass / a->block * a->block;
    /* small calls on one thread: a pool wake costs more than they do */
    const int many = longest * a->H * D * rows >= (1 << 16) ? threads : 1;
    a->slot_floats = ATTN_QUERIES * ATTN_LOGITS + 16 * D;
    a->qr = malloc((size_t)(rows * a->H * D) * sizeof(float));
    a->part = malloc((size_t)((per_pass < rows ? per_pass : rows) * row_bytes));
    a->scratch = malloc((size_t)(many * a->slot_floats) * sizeof(float));
    if (a->qr == NULL || a->part == NULL || a->scratch == NULL) {
        free(a->qr), free(a->part), free(a->scratch);
        return -3;
    }
    pool_for(rows > 1 ? many : 1, rows, 1, attn_prepare, a);
    for (a->row0 = 0; a->row0 < rows; a->row0 += per_pass) {
        a->rows = rows - a->row0 < per_pass ? rows - a->row0 : per_pass;
        const int64_t blocks = (a->rows + a->block - 1) / a->block;
        pool_for(many, blocks * a->KV * a->chunks, 1, attn_chunk, a);
        pool_for(many, a->rows * a->H, 1, attn_combine, a);
    }
    free(a->qr), free(a->part), free(a->scratch);
    return 0;
}

#endif
