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
 * Every row is computed on its own (its own activation scales, one fixed order of sums): an
 * expert with at most FUSED_MAX_ROWS rows dots them straight from the blocks, one with more
 * decodes or packs each weight row once for all of them (the AVX-512 VNNI GEMM, kgemm.h),
 * and every path sums a row's products in the same lanes and order, so a row's bits never
 * depend on how many rows the call has (the tests check each type).
 */
#include "common.h"
#include "pool.h"
#include "blocks.h"
#include "iq.h"
#include "dots.h"
#include "kdots.h"
#include "kgemm.h"

/* The key of the sources and flags this library was built from (build.py passes it), kept
 * as text in the file so that a cached or shipped library built from other sources is
 * recognised from its bytes before it is loaded: a stale one never shadows a source change. */
#ifndef HEARTH_BUILD_KEY
#define HEARTH_BUILD_KEY "unkeyed"
#endif
__attribute__((used, visibility("default"))) const char hearth_build_key[] =
    "HEARTH-KEY:" HEARTH_BUILD_KEY ";";

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

/* --- what the caller hands over: every size checked before a byte is read -------------------
 * The pointers come from Python (views of a mapped GGUF file) and the sizes from the file's
 * own tensor table, which a hostile or damaged file fills as it likes: a gate tensor holding
 * one expert beside a down tensor holding 64 once made the kernel read 63 experts' rows past
 * the tensor and the file (issue 34, A1). So each matrix carries how many experts its bytes
 * hold and each vector how many floats, and nothing is indexed past them. */

#define MAX_DIM ((int64_t)1 << 31)  /* rows, cols: a product of two stays far from overflow */

/* 0 when `m` holds at least `experts` whole experts of rows × cols of its type; -2 for a type
 * without a decoder; -1 for anything else. */
static int check_mat(const HMat *m, int64_t experts) {
    int64_t block, bytes;
    if (m == NULL || m->data == NULL) return -1;
    if (decoder(m->qtype, &block, &bytes) == NULL) return -2;
    if (m->rows < 1 || m->cols < 1 || m->rows > MAX_DIM || m->cols > MAX_DIM || m->cols % block)
        return -1;
    const int64_t row_bytes = m->cols / block * bytes;  /* < 2^39 */
    if (experts < 1 || m->experts < experts || m->expert_bytes < row_bytes ||
        m->expert_bytes / row_bytes < m->rows)  /* division: rows × row_bytes may overflow */
        return -1;
    return 0;
}

/* 0 when `v` is absent or holds at least `count` × `width` floats; -1 otherwise. */
static int check_vec(const HVec *v, int64_t count, int64_t width) {
    if (v == NULL || v->data == NULL) return 0;
    return v->n >= 0 && width > 0 && v->n / width >= count ? 0 : -1;
}

static const float *vec_data(const HVec *v) { return v == NULL ? NULL : v->data; }

/* 0 when a layer's experts agree with each other: `n_experts` experts in every matrix (the
 * router's width: ids index all of them), gate (or gate_up) and up reading the hidden width H
 * and giving F (2F) rows, down F → H, biases (E, F), (E, F), (E, H) and a scale (E,). */
static int check_experts(int64_t n_experts, const HMat *gate, const HMat *up, const HMat *down,
                         const HVec *gate_bias, const HVec *up_bias, const HVec *down_bias,
                         const HVec *out_scale) {
    const HMat *mats[3] = {gate, up, down};
    for (int i = 0; i < 3; i++) {
        if (i == 1 && up == NULL) continue;
        int rc = check_mat(mats[i], n_experts);
        if (rc != 0) return rc;
    }
    const int64_t H = down->rows, F = down->cols;
    if (H % 32 || F % 32 || gate->cols != H || gate->rows != (up == NULL ? 2 * F : F) ||
        (up != NULL && (up->cols != H || up->rows != F)))
        return -1;
    if (check_vec(gate_bias, n_experts, F) || check_vec(up_bias, n_experts, F) ||
        check_vec(down_bias, n_experts, H) || check_vec(out_scale, n_experts, 1))
        return -1;
    return 0;
}

/* --- matmul and the expert feed-forward -------------------------------------------------- */


/* Whether a type's decoded rows carry offsets (w = s·q − m with m ≠ 0). */
static int has_offsets(int64_t qtype) {
    return qtype == T_Q4_1 || qtype == T_Q5_1 || qtype == T_Q2_K || qtype == T_Q4_K ||
           qtype == T_Q5_K;
}

/* A thread's decoded-row buffers for rows of `cols` (`wf`: a float copy, where asked);
 * 0 when out of memory (the thread then still meets every worksharing loop, idle). */
static int row_alloc(Row *w, float **wf, int64_t cols) {
    w->q = malloc((size_t)cols);
    w->s4 = malloc((size_t)cols * sizeof(float));
    w->m = malloc((size_t)(cols / 16) * sizeof(float));
    if (wf != NULL) *wf = malloc((size_t)cols * sizeof(float));
    return w->q && w->s4 && w->m && (wf == NULL || *wf);
}

static void row_free(Row *w, float *wf) { free(w->q), free(w->s4), free(w->m), free(wf); }

/* --- a matrix's rows as `pool_for` items -------------------------------------------------- */

/* Rows of `chunk_bytes` of weights make a chunk, with at least two chunks a thread, so that a
 * descheduled worker holds at most a few tens of microseconds of work. Not smaller: with 32 KB
 * chunks (four a thread) an idle machine decoded the real Qwen2.5-0.5B at 44-45 tok/s against
 * 51-52 with OpenMP's static halves; 256 KB (two a thread) gave 50-52 idle, and beside two busy
 * processes the same as 32 KB (paired, load 1.5-2.5). */
static int64_t row_grain(int64_t rows, int64_t row_bytes, int threads) {
    const int64_t chunk_bytes = 256 << 10;
    int64_t grain = chunk_bytes / (row_bytes > 0 ? row_bytes : 1);
    const int64_t spread = (rows + 2 * threads - 1) / (2 * (int64_t)threads);
    if (grain > spread) grain = spread;
    return grain < 1 ? 1 : grain;
}

/* One matrix's call: what every chunk of its rows needs, and each slot's buffers. */
typedef struct {
    const HMat *mat;
    const uint8_t *base;
    int64_t row_bytes, nb, cols;
    const Act *a;
    int64_t n;
    float *y;
    int64_t ys;
    FusedDot fdot;
    Decoder dec;
    int64_t kr;  /* kdot_blocks: weight rows a block */
    /* many_rows: a weight row against all n activation rows `acts` at once (frows.h) */
    FusedMany many;
    const Many *acts;
    const uint8_t *xf;  /* MXFP4, one activation row: its `mxfp4_xform` for `kdot2_mxfp4` */
    int failed;
    void *scratch[POOL_MAX_THREADS];  /* each slot's, made when it first computes */
} RowJob;

static void fail_job(int *failed) { __atomic_store_n(failed, 1, __ATOMIC_RELAXED); }

/* Rows straight from the blocks (`fused`), one activation row at a time. */
static void fdot_rows(void *ctx, int64_t r0, int64_t r1, int slot) {
    const RowJob *j = ctx;
    (void)slot;
    FusedDot2 two = j->n == 1 ? fused2(j->mat->qtype) : NULL;
    if (two != NULL)  /* a decode step: two rows' dependent chains side by side */
        for (; r0 + 2 <= r1; r0 += 2) two(j->base + r0 * j->row_bytes, j->row_bytes, j->nb, j->a, j->y + r0);
#ifdef __AVX2__
    if (j->xf != NULL)
        for (; r0 + 2 <= r1; r0 += 2)
            kdot2_mxfp4(j->base + r0 * j->row_bytes, j->row_bytes, j->nb, j->a, j->xf, j->y + r0);
#endif
    for (int64_t r = r0; r < r1; r++)
        for (int64_t i = 0; i < j->n; i++) {
            Act ai = act_at(j->a, i, j->cols);
            j->y[i * j->ys + r] = j->fdot(j->base + r * j->row_bytes, j->nb, &ai);
        }
}

/* Rows each against every activation row in one pass (`many`). */
static void many_rows(void *ctx, int64_t r0, int64_t r1, int slot) {
    const RowJob *j = ctx;
    (void)slot;
    for (int64_t r = r0; r < r1; r++) j->many(j->base + r * j->row_bytes, j->nb, j->acts, j->y + r, j->ys);
}

static void row_scratch_free(void *p) {
    if (p != NULL) row_free(p, NULL);
    free(p);
}

/* Rows decoded into the common form, then dotted with every activation row (`dots`). */
static void dot_rows(void *ctx, int64_t r0, int64_t r1, int slot) {
    RowJob *j = ctx;
    Row *w = j->scratch[slot];
    if (w == NULL) {
        if ((w = calloc(1, sizeof(Row))) == NULL || !row_alloc(w, NULL, j->cols)) {
            row_scratch_free(w);
            fail_job(&j->failed);
            return;
        }
        j->scratch[slot] = w;
    }
    const int with_offsets = has_offsets(j->mat->qtype);
    for (int64_t r = r0; r < r1; r++) {
        j->dec(j->base + r * j->row_bytes, j->nb, w);
        dots(w, j->a, j->n, j->cols, with_offsets, j->y + r, j->ys);
    }
}

#ifdef __AVX2__
#if defined(__AVX512BW__) && !defined(HEARTH_NO_AVX512)
#define KDOTS kdots512
#else
#define KDOTS kdots
#endif
#define KR_ROWS 16

static void krows_free(void *p) {
    KRow *w = p;
    for (int k = 0; w != NULL && k < KR_ROWS; k++) krow_free(&w[k]);
    free(p);
}

/* Blocks of `kr` weight rows in the integer form, each against every 4 activation rows. */
static void kdot_blocks(void *ctx, int64_t b0, int64_t b1, int slot) {
    RowJob *j = ctx;
    KRow *w = j->scratch[slot];
    if (w == NULL) {
        int ok = (w = calloc(KR_ROWS, sizeof(KRow))) != NULL;
        for (int k = 0; ok && k < KR_ROWS; k++) ok = krow_alloc(&w[k], j->cols);
        if (!ok) {
            krows_free(w);
            fail_job(&j->failed);
            return;
        }
        j->scratch[slot] = w;
    }
    const int64_t rows = j->mat->rows, kr = j->kr;
    for (int64_t blk = b0; blk < b1; blk++) {
        const int64_t r0 = blk * kr, count = rows - r0 < kr ? rows - r0 : kr;
        for (int64_t k = 0; k < count; k++)
            kdec(j->mat->qtype, j->base + (r0 + k) * j->row_bytes, j->nb, &w[k]);
        for (int64_t i = 0; i < j->n; i += 4) {
            Act part = act_at(j->a, i, j->cols);
            const int64_t m = j->n - i < 4 ? j->n - i : 4;
            for (int64_t k = 0; k < count; k++)
                KDOTS(&w[k], &part, m, j->cols, j->y + i * j->ys + r0 + k, j->ys);
        }
    }
}
#endif

/* y[i * ys + r] = row r of expert e's matrix · activation row i, for the n rows of `a`
 * (ys >= rows: the caller's output may hold other matrices' columns beside these). */
static int matmul(const HMat *mat, int64_t e, const Act *a, int64_t n, float *y, int64_t ys,
                  int threads) {
    int64_t block, bytes;
    Decoder dec = decoder(mat->qtype, &block, &bytes);
    if (dec == NULL) return -2;
    if (mat->cols % block) return -1;  /* rows are whole blocks */
    const int64_t cols = mat->cols, nb = cols / block, row_bytes = nb * bytes;
    const uint8_t *base = mat->data + e * mat->expert_bytes;
    Many many;  /* frows.h: up to FUSED_MANY rows in one pass over the weights */
    if (many_setup(&many, mat->qtype, a, n, cols)) {
        RowJob job = {mat, base, row_bytes, nb, cols, a, n, y, ys, NULL, NULL, 0, many.fn, &many, NULL, 0, {0}};
        pool_for(threads, mat->rows, row_grain(mat->rows, row_bytes, threads), many_rows, &job);
        many_free(&many);
        return 0;
    }
    FusedDot fdot = n <= FUSED_MAX_ROWS ? fused(mat->qtype) : NULL;
    if (fdot != NULL) {
        RowJob job = {mat, base, row_bytes, nb, cols, a, n, y, ys, fdot, NULL, 0, NULL, NULL, NULL, 0, {0}};
        uint8_t *xf = NULL;
#ifdef __AVX2__
        /* Out of memory: one row at a time, the same bits. */
        if (n == 1 && mat->qtype == T_MXFP4 && (xf = malloc((size_t)(nb * MXF_STEP))) != NULL)
            mxfp4_xform(a, nb, xf), job.xf = xf;
#endif
        pool_for(threads, mat->rows, row_grain(mat->rows, row_bytes, threads), fdot_rows, &job);
        free(xf);
        return 0;
    }
#ifdef HEARTH_GEMM512  /* AVX-512 VNNI: bit for bit the fused dots, ~2x this file's paths below */
    if (gemm512_serves(mat->qtype, cols, a))
        return gemm512(mat, base, row_bytes, a, n, y, ys, threads);
#endif
#ifdef __AVX2__
    if (a->k != NULL && has_kdec(mat->qtype)) {  /* the integer form, per-256 activations */
        /* For a long prefill, KR_ROWS weight rows decoded at a time, then every 4 activation
         * rows against each of them: the 4 rows (14 KB at width 3584) stay in L1 across the
         * block rather than all n rows streaming from L2 once per weight row (512 rows of a
         * 7B's width: 31-33 -> 37-41 GMAC/s a thread; 32-128 rows: no gain, so one row). */
        const int64_t kr = n > 64 ? KR_ROWS : 1;  /* few rows: they stay in L1 anyway */
        const int64_t blocks = (mat->rows + kr - 1) / kr;
        RowJob job = {mat, base, row_bytes, nb, cols, a, n, y, ys, NULL, NULL, kr, NULL, NULL, NULL, 0, {0}};
        pool_for(threads, blocks, 1, kdot_blocks, &job);
        for (int s = 0; s < POOL_MAX_THREADS; s++) krows_free(job.scratch[s]);
        const int failed = job.failed;
        return failed ? -3 : 0;
    }
#endif
    RowJob job = {mat, base, row_bytes, nb, cols, a, n, y, ys, NULL, dec, 0, NULL, NULL, NULL, 0, {0}};
    pool_for(threads, mat->rows, row_grain(mat->rows, row_bytes, threads), dot_rows, &job);
    for (int s = 0; s < POOL_MAX_THREADS; s++) row_scratch_free(job.scratch[s]);
    return job.failed ? -3 : 0;
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
    a->k = NULL, a->kd = NULL, a->ks = NULL, a->ks32 = NULL;
    if (cols % 256 == 0) {
        a->k = malloc((size_t)(n * cols));
        a->kd = malloc((size_t)(n * cols / 256) * sizeof(float));
        a->ks = malloc((size_t)(n * cols / 16) * sizeof(int16_t));
        a->ks32 = malloc((size_t)(n * cols / 32) * sizeof(int16_t));
        if (!a->k || !a->kd || !a->ks || !a->ks32) return 0;
    }
    return a->q && a->d && a->ms && a->ms32;
}

static void free_act(Act *a) {
    free(a->q), free(a->d), free(a->ms), free(a->ms32);
    free(a->k), free(a->kd), free(a->ks), free(a->ks32);
}

/* Row i of src into row j of dst (both of `cols`). */
static void copy_act(Act *dst, int64_t j, const Act *src, int64_t i, int64_t cols) {
    Act s = act_at(src, i, cols), d = act_at(dst, j, cols);
    memcpy(d.q, s.q, (size_t)cols);
    memcpy(d.d, s.d, (size_t)(cols / 32) * sizeof(float));
    memcpy(d.ms, s.ms, (size_t)(cols / 16) * sizeof(float));
    memcpy(d.ms32, s.ms32, (size_t)(cols / 32) * sizeof(float));
    if (s.k != NULL && d.k != NULL) {
        memcpy(d.k, s.k, (size_t)cols);
        memcpy(d.kd, s.kd, (size_t)(cols / 256) * sizeof(float));
        memcpy(d.ks, s.ks, (size_t)(cols / 16) * sizeof(int16_t));
        memcpy(d.ks32, s.ks32, (size_t)(cols / 32) * sizeof(int16_t));
    }
}

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
    for (int64_t i = 0; i < n; i++) copy_act(&mine, i, xa, rows[i], cols);  /* gathered */
    if (up == NULL) {  /* fused: gate rows, then up rows */
        if ((rc = matmul(gate, e, &mine, n, gu, gate->rows, threads)) != 0) goto done;
    } else {
        float *g1 = malloc((size_t)(n * F) * sizeof(float)), *u1 = malloc((size_t)(n * F) * sizeof(float));
        rc = (!g1 || !u1) ? -3 : matmul(gate, e, &mine, n, g1, F, threads);
        if (rc == 0) rc = matmul(up, e, &mine, n, u1, F, threads);
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
            float gv = g[f] + (biases[0] ? biases[0][e * F + f] : 0.f);  /* checked: (E, F) */
            float uv = u[f] + (biases[1] ? biases[1][e * F + f] : 0.f);
            h[i * F + f] = activate(gv, uv, act);
        }
        Act hi = act_at(&ha, i, F);
        quantize(h + i * F, F, &hi);
    }
    rc = matmul(down, e, &ha, n, y, down->rows, threads);
done:
    free(gu), free(h), free_act(&mine), free_act(&ha);
    return rc;
}

/* A layer's chosen experts as `pool_for` items, each on one thread. */
typedef struct {
    const HMat *gate, *up, *down;
    const Act *xa;
    const int64_t *chosen, *start, *rows;
    const float *const *biases;
    int act, inner;
    float *y;
    int64_t H;
    int rc;
} ExpertsJob;

static void experts_run(void *ctx, int64_t c0, int64_t c1, int slot) {
    ExpertsJob *j = ctx;
    (void)slot;
    for (int64_t c = c0; c < c1; c++) {
        const int64_t e = j->chosen[c], p = j->start[e];
        const int r = expert(j->gate, j->up, j->down, e, j->xa, j->rows + p, j->start[e + 1] - p,
                             j->biases, j->act, j->inner, j->y + p * j->H);
        if (r != 0) __atomic_store_n(&j->rc, r, __ATOMIC_RELAXED);
    }
}

/* out (T, H) = Σ_j wts[t, j] · expert_{ids[t, j]}(x[t]). `up` NULL: `gate` holds gate rows
 * then up rows. Biases (gate, up: (E, F); down: (E, H)) and out_scale (E,) may be NULL.
 * Every size is checked first (`check_experts`), every id against `n_experts`.
 * Returns 0, or -1 (bad shapes or ids), -2 (a type without a decoder), -3 (out of memory). */
int hearth_routed_ffn(const float *x, int64_t T, const int64_t *ids, const float *wts, int64_t k,
                      int64_t n_experts, const HMat *gate, const HMat *up, const HMat *down,
                      const HVec *gate_bias_v, const HVec *up_bias_v, const HVec *down_bias_v,
                      const HVec *out_scale_v, int64_t act, int64_t threads, float *out) {
    if (T < 0 || k < 0 || gate == NULL || down == NULL || act < ACT_SILU || act > ACT_GELU_TANH)
        return -1;
    int checked = check_experts(n_experts, gate, up, down, gate_bias_v, up_bias_v, down_bias_v,
                                out_scale_v);
    if (checked != 0) return checked;
    const int64_t H = down->rows;
    for (int64_t i = 0; i < T * k; i++)
        if (ids[i] < 0 || ids[i] >= n_experts) return -1;
    const HMat *mats[3] = {gate, up, down};
    const float *gate_bias = vec_data(gate_bias_v), *up_bias = vec_data(up_bias_v);
    const float *down_bias = vec_data(down_bias_v), *out_scale = vec_data(out_scale_v);
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
    ExpertsJob job = {gate, up, down, &xa, chosen, start, rows, biases, (int)act, inner, y, H, 0};
    pool_for(outer, n_chosen, 1, experts_run, &job);
    rc = job.rc;
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

/* The float form of the few matrices whose inputs int8 would round too coarsely (a DeltaNet
 * layer's output projection and gates): a decoded row (w = s·q − m per 16 weights) as
 * floats wf = s·q, then Σ_j wf_j x_j − Σ_g m_g xs_g against float activations x (whose
 * per-16 sums are xs). One routine for any number of rows, four at a time sharing each
 * loaded weight, so a row's bits never depend on how many rows the call has. */
static void float_row(const Row *w, float *wf, int64_t cols) {
#ifdef __AVX2__
    for (int64_t j = 0; j < cols; j += 16) {
        __m128i q = _mm_loadu_si128((const __m128i *)(w->q + j));
        __m256 s = _mm256_set1_ps(w->s4[j / 4]);
        _mm256_storeu_ps(wf + j, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), s));
        _mm256_storeu_ps(wf + j + 8, _mm256_mul_ps(
            _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_srli_si128(q, 8))), s));
    }
#else
    for (int64_t j = 0; j < cols; j++) wf[j] = w->s4[j / 4] * (float)w->q[j];
#endif
}

/* y[i * ys] for the n rows of x against one float row wf (and its offsets m, or NULL for a
 * type without offsets). */
static void float_dots(const float *wf, const float *m, const float *x, const float *xs,
                       int64_t n, int64_t cols, float *y, int64_t ys) {
    for (int64_t i0 = 0; i0 < n; i0 += 4) {
        const int64_t k = n - i0 < 4 ? n - i0 : 4;
        float sums[4];
#ifdef __AVX2__
        __m256 lo[4], hi[4];
        for (int64_t t = 0; t < 4; t++) lo[t] = hi[t] = _mm256_setzero_ps();
        for (int64_t j = 0; j < cols; j += 16) {
            __m256 wl = _mm256_loadu_ps(wf + j), wh = _mm256_loadu_ps(wf + j + 8);
            for (int64_t t = 0; t < k; t++) {
                const float *xt = x + (i0 + t) * cols + j;
                lo[t] = _mm256_fmadd_ps(wl, _mm256_loadu_ps(xt), lo[t]);
                hi[t] = _mm256_fmadd_ps(wh, _mm256_loadu_ps(xt + 8), hi[t]);
            }
        }
        for (int64_t t = 0; t < k; t++) sums[t] = hsum(_mm256_add_ps(lo[t], hi[t]));
#else
        for (int64_t t = 0; t < k; t++) {
            float sum = 0.f;
            for (int64_t j = 0; j < cols; j++) sum += wf[j] * x[(i0 + t) * cols + j];
            sums[t] = sum;
        }
#endif
        for (int64_t t = 0; t < k; t++) {
            float offsets = 0.f;
            if (m != NULL) {  /* eight lanes, then the rest: a serial sum is a latency chain */
                const float *xst = xs + (i0 + t) * (cols / 16);
                int64_t g = 0;
#ifdef __AVX2__
                __m256 acc = _mm256_setzero_ps();
                for (; g + 8 <= cols / 16; g += 8)
                    acc = _mm256_fmadd_ps(_mm256_loadu_ps(m + g), _mm256_loadu_ps(xst + g), acc);
                offsets = hsum(acc);
#endif
                for (; g < cols / 16; g++) offsets += m[g] * xst[g];
            }
            y[(i0 + t) * ys] = sums[t] - offsets;
        }
    }
}

/* `matmul_float`'s call: a `RowJob` with float activations x and their per-16 sums xs. */
typedef struct {
    RowJob rows;
    const float *x, *xs;
} FloatJob;

typedef struct {
    Row w;
    float *wf;
} FloatScratch;

static void float_scratch_free(void *p) {
    FloatScratch *f = p;
    if (f != NULL) row_free(&f->w, f->wf);
    free(f);
}

static void float_rows(void *ctx, int64_t r0, int64_t r1, int slot) {
    FloatJob *j = ctx;
    FloatScratch *f = j->rows.scratch[slot];
    if (f == NULL) {
        if ((f = calloc(1, sizeof(FloatScratch))) == NULL || !row_alloc(&f->w, &f->wf, j->rows.cols)) {
            float_scratch_free(f);
            fail_job(&j->rows.failed);
            return;
        }
        j->rows.scratch[slot] = f;
    }
    const RowJob *m = &j->rows;
    const int with_offsets = has_offsets(m->mat->qtype);  /* the others' m are 0 */
    for (int64_t r = r0; r < r1; r++) {
        m->dec(m->base + r * m->row_bytes, m->nb, &f->w);
        float_row(&f->w, f->wf, m->cols);
        float_dots(f->wf, with_offsets ? f->w.m : NULL, j->x, j->xs, m->n, m->cols, m->y + r, m->ys);
    }
}

/* As `matmul`, with the activations x (n, cols) kept in float (`float_dots`). */
static int matmul_float(const HMat *mat, int64_t e, const float *x, const float *xs, int64_t n,
                        float *y, int64_t ys, int threads) {
    int64_t block, bytes;
    Decoder dec = decoder(mat->qtype, &block, &bytes);
    if (dec == NULL) return -2;
    if (mat->cols % block) return -1;
    const int64_t cols = mat->cols, nb = cols / block, row_bytes = nb * bytes;
    const uint8_t *base = mat->data + e * mat->expert_bytes;
    FloatJob job = {{mat, base, row_bytes, nb, cols, NULL, n, y, ys, NULL, dec, 0, NULL, NULL, NULL, 0, {0}}, x, xs};
    pool_for(threads, mat->rows, row_grain(mat->rows, row_bytes, threads), float_rows, &job);
    for (int s = 0; s < POOL_MAX_THREADS; s++) float_scratch_free(job.rows.scratch[s]);
    return job.rows.failed ? -3 : 0;
}

/* Activation rows `begin`..`end` quantized (`quantize`, row by row: any split gives the same
 * bytes). A prefill's rows were quantized on one thread while the others waited: 128 rows of
 * Gemma 4 E2B's 12,288-wide ffn_down input are 1.5 M values a call. */
typedef struct { const float *x; const Act *a; int64_t cols; } QuantJob;

static void quantize_rows(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const QuantJob *j = ctx;
    for (int64_t i = begin; i < end; i++) {
        Act ai = act_at(j->a, i, j->cols);
        quantize(j->x + i * j->cols, j->cols, &ai);
    }
}

/* Values below which one thread quantizes (a decode step's or a verify's few rows: a pool
 * wake-up there costs more than it saves, and a step has ~100 of them already). */
#define QUANT_PARALLEL_MIN (1 << 18)

/* Rows a `quantize_rows` item: about 16 K values (a few microseconds). */
static int64_t quant_grain(int64_t cols) { return cols >= 16384 ? 1 : 16384 / cols; }

/* Row i of x's activations a second time: what the first quantization `a` left over, each
 * form (per 32, per 256) from its own remainder, quantized again into row i of `r`. The two
 * rows' dots sum to the product with ~15-bit activations (the remainder of a 127-step grid
 * on a 127-step grid of its own): near the float form's error, at the int8 dots' speed.
 * `tmp` holds cols floats; `scratch`, one row of Act for the per-256 form. */
static void remainder_row(const float *x, const Act *a, Act *r, int64_t cols, float *tmp,
                          Act *scratch) {
    for (int64_t j = 0; j < cols; j++) tmp[j] = x[j] - a->d[j / 32] * (float)a->q[j];
    quantize(tmp, cols, r);
    if (a->k == NULL) return;
    for (int64_t j = 0; j < cols; j++) tmp[j] = x[j] - a->kd[j / 256] * (float)a->k[j];
    quantize(tmp, cols, scratch);
    memcpy(r->k, scratch->k, (size_t)cols);
    memcpy(r->kd, scratch->kd, (size_t)(cols / 256) * sizeof(float));
    memcpy(r->ks, scratch->ks, (size_t)(cols / 16) * sizeof(int16_t));
    memcpy(r->ks32, scratch->ks32, (size_t)(cols / 32) * sizeof(int16_t));
}

/* The n rows of x quantized into rows 0..n-1 of `a` and, with `twice`, their remainders
 * (`remainder_row`) into rows n..2n-1. */
static int quantize_all(const float *x, int64_t n, int64_t cols, Act *a, int twice,
                        int64_t threads) {
    QuantJob job = {x, a, cols};
    pool_for(n * cols >= QUANT_PARALLEL_MIN ? (int)threads : 1, n, quant_grain(cols),
             quantize_rows, &job);
    if (!twice) return 1;
    Act scratch = {0};
    float *tmp = malloc((size_t)cols * sizeof(float));
    int ok = tmp != NULL && alloc_act(&scratch, 1, cols);
    for (int64_t i = 0; ok && i < n; i++) {
        Act ai = act_at(a, i, cols), ri = act_at(a, n + i, cols);
        remainder_row(x + i * cols, &ai, &ri, cols, tmp, &scratch);
    }
    free(tmp), free_act(&scratch);
    return ok;
}

/* y (n, Σ rows) = each of the m matrices' expert e · each of the n rows of x (n, cols), their
 * outputs side by side in each row of y; the activations quantized once, as in
 * `hearth_routed_ffn`. The matrices share `cols`. `form`: IN_INT8, IN_FLOAT (`float_dots`)
 * or IN_TWICE (int8 twice, `remainder_row`: the 2n rows in one pass over each weight row,
 * then each row's two outputs summed). */
static int matmul_many(const HMat *const *mats, int64_t m, int64_t e, const float *x, int64_t n,
                       float *y, int64_t threads, int form) {
    int64_t width = 0, weight_bytes = 0;
    if (m < 1 || n < 0 || e < 0 || form < IN_INT8 || form > IN_TWICE) return -1;
    for (int64_t j = 0; j < m; j++) {
        int64_t block = 32, bytes = 0;  /* check_mat has refused a type without a decoder */
        int rc = check_mat(mats[j], e + 1);  /* expert e's rows lie inside the matrix */
        if (rc != 0) return rc;
        if (mats[j]->cols != mats[0]->cols || mats[j]->cols % 32) return -1;
        decoder(mats[j]->qtype, &block, &bytes);
        width += mats[j]->rows;
        weight_bytes += mats[j]->rows * (mats[j]->cols / block) * bytes;
    }
    /* A small projection: waking a thread costs more than it saves. Float activations
     * decode every weight row to floats first, ~15x the time a byte costs the int8 dots
     * (a Qwen3.5 MoE's ssm_out, 1.2 MB: 706 us a step on one thread), so they share
     * their rows from a sixteenth of the size; int8 twice dots twice the rows. */
    const int64_t rows_dotted = form == IN_TWICE ? 2 * n : n;
    const int64_t parallel_min =
        PARALLEL_MIN_BYTES * (rows_dotted > 1 ? 4 : 1) / (form == IN_FLOAT ? 16 : 1);
    if (rows_dotted * weight_bytes < parallel_min) threads = 1;
    const int64_t cols = mats[0]->cols;
    if (form == IN_FLOAT) {  /* the activations' per-16 sums, then each matrix in float */
        float *xs = malloc((size_t)(n * cols / 16) * sizeof(float));
        if (xs == NULL) return -3;
        for (int64_t g = 0; g < n * cols / 16; g++) {
            float sum = 0.f;
            for (int64_t j = 0; j < 16; j++) sum += x[16 * g + j];
            xs[g] = sum;
        }
        int rc = 0;
        for (int64_t j = 0, at = 0; rc == 0 && j < m; at += mats[j]->rows, j++)
            rc = matmul_float(mats[j], e, x, xs, n, y + at, width, (int)threads);
        free(xs);
        return rc;
    }
    Act a = {0};
    float *both = form == IN_TWICE ? malloc((size_t)(2 * n * width) * sizeof(float)) : y;
    int rc = -3;
    if (both != NULL && alloc_act(&a, rows_dotted, cols) &&
        quantize_all(x, n, cols, &a, form == IN_TWICE, threads)) {
        rc = 0;
        for (int64_t j = 0, at = 0; rc == 0 && j < m; at += mats[j]->rows, j++)
            rc = matmul(mats[j], e, &a, rows_dotted, both + at, width, (int)threads);
        if (rc == 0 && form == IN_TWICE)
            for (int64_t i = 0; i < n * width; i++) y[i] = both[i] + both[n * width + i];
    }
    if (both != y) free(both);
    free_act(&a);
    return rc;
}

/* y (n, rows) = expert e's matrix · each of the n rows of x (n, cols), the activations
 * quantized as in `hearth_routed_ffn`: the kernel's matmul alone, for tests and benches. */
int hearth_matmul(const HMat *mat, int64_t e, const float *x, int64_t n, float *y,
                  int64_t threads) {
    return matmul_many(&mat, 1, e, x, n, y, threads, IN_INT8);
}

/* As `hearth_matmul` with the activations in `form`: IN_FLOAT (`float_dots`) or IN_TWICE
 * (int8 twice, `remainder_row`). */
int hearth_matmul_float(const HMat *mat, int64_t e, const float *x, int64_t n, float *y,
                        int64_t threads, int64_t form) {
    return matmul_many(&mat, 1, e, x, n, y, threads, (int)form);
}

#include "ortops.h"
