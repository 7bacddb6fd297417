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
 * The cache holds float32, or float16 (`half`: half the bytes a step streams at depth, as
 * llama.cpp's default cache; a row's K and V are rounded once, when written, and every query
 * reads them back from the cache, so the new rows of a call see what later steps will see).
 * Without the causal mask (`causal` 0: an image's tokens, `engine.fastpath.image_block`) a
 * row sees every key of its sequence but those a sliding window hides before it.
 *
 * Determinism: a logit sums its d in order in one lane, a weight sum and each value sum run
 * in key order, and chunks combine in order, so a row's bits depend on neither the number
 * of rows in the call (a decode step, a verified draft, a prefill), nor which rows or heads
 * shared an item, nor the thread count. */
#ifndef HEARTH_ATTENTION_H
#define HEARTH_ATTENTION_H

#include <math.h>
#include <pthread.h>
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
    void *kc, *vc;              /* caches (B, KV, BUF, D), written at the new positions */
    int half;                   /* the caches hold float16 (else float32) */
    int causal;                 /* 0: a row sees the keys after it too (an image's tokens) */
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

/* Element `at` of cache `c` (float32 or float16). */
static inline void *attn_at(const Attn *a, const void *c, int64_t at) {
    return (char *)(uintptr_t)c + at * (a->half ? 2 : 4);
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

#include "attention_simd.h" /* the inner loops and the float16 conversions */

/* --- a call's buffers, kept by its thread ---------------------------------------------------
 * A call needs three buffers (rotated queries, partial sums, per-slot scratch). Allocating
 * and freeing them each call cost 7-12 us of a 30-40 us decode call in the engine's process
 * (the real Qwen2.5-0.5B at ~170 tokens, two A/B rounds in one build; malloc's trimming was
 * not the cause: M_TRIM_THRESHOLD changed nothing). So each calling thread keeps buffers of up
 * to ATTN_KEEP_MAX bytes (a decode step's or a verify's) and reuses them; larger calls (a
 * prefill) allocate their own, which their work dwarfs. A thread's buffers are freed when it
 * exits. */
#define ATTN_KEEP_MAX (2 << 20)
typedef struct { void *p[3]; size_t bytes[3]; } AttnKeep;
static pthread_key_t attn_keep_key;
static pthread_once_t attn_keep_once = PTHREAD_ONCE_INIT;
static int attn_keep_ok;

static void attn_keep_free(void *p) {
    AttnKeep *k = p;
    for (int i = 0; i < 3; i++) free(k->p[i]);
    free(k);
}
static void attn_keep_init(void) { attn_keep_ok = pthread_key_create(&attn_keep_key, attn_keep_free) == 0; }

/* Buffer i of at least `bytes`: the thread's own (*owned 0) or, above ATTN_KEEP_MAX or
 * without thread keys, a fresh one the caller frees (*owned 1). NULL: out of memory. */
static void *attn_buffer(int i, size_t bytes, int *owned) {
    pthread_once(&attn_keep_once, attn_keep_init);
    AttnKeep *k = attn_keep_ok && bytes <= ATTN_KEEP_MAX ? pthread_getspecific(attn_keep_key) : NULL;
    if (k == NULL && attn_keep_ok && bytes <= ATTN_KEEP_MAX && (k = calloc(1, sizeof(AttnKeep))) != NULL &&
        pthread_setspecific(attn_keep_key, k) != 0) {
        free(k);
        k = NULL;
    }
    *owned = k == NULL;
    if (k == NULL) return malloc(bytes);
    if (k->bytes[i] < bytes) {
        free(k->p[i]);
        k->p[i] = malloc(bytes);
        k->bytes[i] = k->p[i] != NULL ? bytes : 0;
    }
    return k->p[i];
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
            const int64_t at = ((b * a->KV + g) * a->BUF + pos) * D;
            float key[ATTN_MAX_D];
            memcpy(key, a->k + r * a->kv_stride + g * D, (size_t)D * sizeof(float));
            if (a->rotary) attn_rotate(a, key, pos);
            attn_store(a->half, attn_at(a, a->kc, at), key, D);
            attn_store(a->half, attn_at(a, a->vc, at), a->v + r * a->kv_stride + g * D, D);
        }
        if (a->rotary)
            for (int64_t h = 0; h < a->H; h++) attn_rotate(a, qr + h * D, pos);
    }
}

/* The keys row `pos` of sequence b sees in chunk c: [*lo, *hi). Empty when lo >= hi. */
static inline void attn_keys(const Attn *a, int64_t b, int64_t pos, int64_t c, int64_t *lo,
                             int64_t *hi) {
    const int64_t first = a->window > 0 && pos >= a->window ? pos - a->window + 1 : 0;
    const int64_t end = a->causal ? pos + 1 : (int64_t)a->seqlens[b] + 1;
    *lo = c * ATTN_CHUNK > first ? c * ATTN_CHUNK : first;
    *hi = (c + 1) * ATTN_CHUNK < end ? (c + 1) * ATTN_CHUNK : end;
}

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
            if (pos >= 0) attn_keys(a, b, pos, c, &l, &h);
            for (int64_t i = 0; i < per; i++, nq++)
                q[nq] = a->qr + r * a->H * D + (g * per + i) * D, lo[nq] = l, hi[nq] = h;
            if (l < h) first = l < first ? l : first, last = h > last ? h : last;
        }
        const int64_t b = r0 / a->S; /* an item's rows are of one sequence (block divides S) */
        const void *kc = attn_at(a, a->kc, (b * a->KV + g) * a->BUF * D);
        const void *vc = attn_at(a, a->vc, (b * a->KV + g) * a->BUF * D);
        const int64_t base = first < last ? first / 16 * 16 : 0;
        for (int64_t i = 0; i < nq; i++) out[i] = logits + i * ATTN_LOGITS;
        for (int64_t j0 = base; j0 < last; j0 += 16) {
            attn_pack(kc, a->half, D, j0, first, last, panel);
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
            attn_pv_any((const float *const *)out + i, M, base, vc, a->half, D, first, last,
                        acc + i);
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
    /* small calls on one thread: a pool wake costs more than they do (a 0.5B qwen2 decode
     * step below ~290 keys; at 100, 44 against 61 us a layer in the engine's profile) */
    const int many = longest * a->H * D * rows >= (1 << 18) ? threads : 1;
    a->slot_floats = ATTN_QUERIES * ATTN_LOGITS + 16 * D;
    int owned[3];
    a->qr = attn_buffer(0, (size_t)(rows * a->H * D) * sizeof(float), &owned[0]);
    a->part = attn_buffer(1, (size_t)((per_pass < rows ? per_pass : rows) * row_bytes), &owned[1]);
    a->scratch = attn_buffer(2, (size_t)(many * a->slot_floats) * sizeof(float), &owned[2]);
    void *const got[3] = {a->qr, a->part, a->scratch};
    int ok = 1;
    for (int i = 0; i < 3; i++) ok = ok && got[i] != NULL;
    if (!ok) {
        for (int i = 0; i < 3; i++)
            if (owned[i]) free(got[i]);
        return -3;
    }
    pool_for(rows > 1 ? many : 1, rows, 1, attn_prepare, a);
    for (a->row0 = 0; a->row0 < rows; a->row0 += per_pass) {
        a->rows = rows - a->row0 < per_pass ? rows - a->row0 : per_pass;
        const int64_t blocks = (a->rows + a->block - 1) / a->block;
        pool_for(many, blocks * a->KV * a->chunks, 1, attn_chunk, a);
        pool_for(many, a->rows * a->H, 1, attn_combine, a);
    }
    for (int i = 0; i < 3; i++)
        if (owned[i]) free(got[i]);
    return 0;
}

#endif
