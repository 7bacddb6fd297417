/* A Gated DeltaNet layer (Qwen3.5's linear-attention layers) fused from the input projection's
 * outputs to the gated, normalised output `ssm_out` reads: one decode step (`delta_layer`, the
 * op HearthDeltaNet), or a prefill of T tokens (`delta_run`, HearthDeltaRun) that equals its
 * T decode steps bit for bit.
 *
 * With C = 2·key + value channels (q | k | v after the projection), the conv's K taps and the
 * layer's two states (the conv's last K − 1 inputs, and the delta rule's (d × d) per value
 * head), each token does what the graph's ONNX ops do (`engine.fastpath.deltanet`:
 * `_causal_conv`, `_l2_heads`, the gates, `_recurrent_step`, the gated RMSNorm):
 *     c = silu(Σ_j w[c, j] · [past; x][j])          per channel, taps in order;
 *     q = c_q / √(Σ c_q² + ε) · d^-½,  k = c_k / √(Σ c_k² + ε)  per key head, key head h mod
 *     nk serving value head h (the converter's tiling);
 *     β = sigmoid(b),  e = exp(softplus(a + dt_bias) · A);
 *     r = e·(kᵀS),  δ = (v − r)·β,  S' = e·S + k·δᵀ,  o = qᵀS' = e·(qᵀS) + (qᵀk)·δ;
 *     out = o / √(mean(o²) + eps) · w_norm · silu(z)  per value head.
 * Column j of the state needs only column j (r_j, δ_j, S'_·j, o_j), so the rule runs in blocks
 * of DELTA_COLS columns: a prefill carries one 16 KB block through all its tokens in L1, one
 * pass over it a token (token t's update fused with token t + 1's read), and the decode step
 * takes the same functions per block. Every sum runs in the same order either way, and the
 * vector arithmetic (`deltamath.h`) is shared, hence the bitwise equality: a verified draft,
 * a replayed crop and a prefill agree with the decode steps they stand for.
 * Why: the ~35 small ONNX ops a step replaces cost a Qwen3.5-0.8B step ~4-5 ms of dispatch on
 * two cores, more than their arithmetic; a prefill's chunked form (~60 ONNX ops: matrix
 * products over chunks of 32 tokens) took ~37 ms a layer for 512 tokens on two threads, this
 * ~10-15. Included by ortops.h only (the ops' kernels are there). */
#ifndef HEARTH_DELTASTEP_H
#define HEARTH_DELTASTEP_H

#include <math.h>

#include "deltamath.h"

#define DELTA_MAX_D 512 /* the head size the stack buffers hold (Qwen3.5: 128) */
#define DELTA_COLS 32   /* state columns per block: 16 KB of a 128-row head */
#define DELTA_VECS (DELTA_COLS / 8) /* vectors of 8 per block */
#define DELTA_MAX_TAPS 16 /* conv taps the row tables hold (Qwen3.5: 4) */
#define L2_EPS 1e-6f    /* transformers' l2norm epsilon (flash-linear-attention's) */

typedef struct {
    const float *x;         /* (T, stride) the projection's q | k | v channels, pre-conv */
    const float *z;         /* (T, stride) the output gate, nv · d per row */
    const float *b, *a;     /* (T, 2·nv) β's logit and the decay's input */
    const float *past_conv; /* (K − 1, C) */
    const float *past_ssm;  /* (nv, d, d) */
    const float *conv_w;    /* (C, K) */
    const float *dt_bias, *A, *norm_w; /* (nv), (nv), (d) */
    int64_t nk, nv, d, taps;
    float eps; /* the output RMSNorm's */
    int64_t stride; /* floats from one token's projection row to the next (C + nv·d) */
} DeltaIn;

static inline float sigmoidf(float x) { return 1.f / (1.f + expf(-x)); }

/* log(1 + e^x) without overflow */
static inline float softplusf(float x) { return x > 20.f ? x : log1pf(expf(x)); }

/* Σ x² over n values: eight running sums (one vector), then the rest, then the lanes in order
 * (a single chain of adds was latency-bound: a head of 128 took ~512 cycles) */
static inline float square_sum(const float *x, int64_t n) {
    DeltaVec lanes = vec_all(0.f);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        const DeltaVec v = vec_at(x + j);
        lanes += v * v;
    }
    float s = 0.f;
    for (; j < n; j++) s += x[j] * x[j];
    for (int l = 0; l < 8; l++) s += lanes[l];
    return s;
}

/* 1 / √(Σ x² + eps) over n values */
static inline float inv_norm(const float *x, int64_t n, float eps) {
    return 1.f / sqrtf(square_sum(x, n) + eps);
}

/* A head's q (query: scaled by d^-½ too) or k, L2-normalised, into to (may be from). */
static inline void unit_head(const float *from, float *to, int64_t d, int query) {
    const float n = inv_norm(from, d, L2_EPS), s = query ? n / sqrtf((float)d) : n;
    for (int64_t j = 0; j < d; j++) to[j] = from[j] * s;
}

/* e^g of value head h for a token whose gate inputs are a[h] (the decay) */
static inline float decay_of(const DeltaIn *in, const float *a, int64_t h) {
    return expf(softplusf(a[h] + in->dt_bias[h]) * in->A[h]);
}

/* Channel ch of the causal conv for one token, SiLU'd: rows[j] is the j-th of its K inputs,
 * w the channel's K taps (`conv_eight` is the same for eight channels). */
static inline float conv_one(const float *w, const float *const *rows, int64_t taps, int64_t ch) {
    float s = 0.f;
    for (int64_t t = 0; t < taps; t++) s += w[t] * rows[t][ch];
    return s * sigmoid_one(s);
}

/* Channels ch..ch+7 of the causal conv, SiLU'd; wt holds the taps transposed, (K, C). */
static inline DeltaVec conv_eight(const float *wt, const float *const *rows, int64_t taps,
                                  int64_t C, int64_t ch) {
    DeltaVec s = vec_all(0.f);
    for (int64_t t = 0; t < taps; t++) s += vec_at(wt + t * C + ch) * vec_at(rows[t] + ch);
    return s * sigmoid_vec(s);
}

/* q · k over d values, eight running sums as `square_sum` */
static inline float dot_sum(const float *x, const float *y, int64_t d) {
    DeltaVec lanes = vec_all(0.f);
    for (int64_t j = 0; j < d; j += 8) lanes += vec_at(x + j) * vec_at(y + j);
    float s = 0.f;
    for (int l = 0; l < 8; l++) s += lanes[l];
    return s;
}

/* The rule per block of columns, in the form o = e·(qᵀS) + (qᵀk)·δ and r = e·(kᵀS): one read
 * of S gives both sums (two products an element), and the update S' = e·S + k·δᵀ (two more)
 * writes the state; a prefill fuses token t's update with token t + 1's read (one pass over
 * the state a token). A block is `n` vectors of 8 columns; each column sums over the rows in
 * order, and a decode step takes the same functions, so a prefill rounds as its steps. */
typedef struct {
    DeltaVec r[DELTA_VECS], p[DELTA_VECS]; /* kᵀS, qᵀS; then δ, o */
} DeltaSums;

/* The sums from the block at S (d rows of stride ld), for the token with k and q. */
static inline __attribute__((always_inline)) void cols_read(
    const float *S, int64_t ld, const float *k, const float *q, int64_t d, int n, DeltaSums *a) {
    for (int u = 0; u < n; u++) a->r[u] = vec_all(0.f), a->p[u] = vec_all(0.f);
    for (int64_t i = 0; i < d; i++) {
        const float *row = S + i * ld;
        const float ki = k[i], qi = q[i];
        for (int u = 0; u < n; u++) {
            const DeltaVec x = vec_at(row + 8 * u);
            a->r[u] += ki * x;
            a->p[u] += qi * x;
        }
    }
}

/* δ = (v − e·r)·β into r, o = e·p + qk·δ into p (then stored at o + j0). */
static inline __attribute__((always_inline)) void cols_finish(
    DeltaSums *a, const float *v, float e, float beta, float qk, int64_t j0, int n, float *o) {
    for (int u = 0; u < n; u++) {
        a->r[u] = (vec_at(v + j0 + 8 * u) - e * a->r[u]) * beta;
        a->p[u] = e * a->p[u] + qk * a->r[u];
        vec_put(o + j0 + 8 * u, a->p[u]);
    }
}

/* S' = e·S + k·δᵀ (δ in `done`'s r) into N (may be S; both blocks of stride ld); with
 * k2/q2, the next token's sums from S' too (into `next`). */
static inline __attribute__((always_inline)) void cols_update(
    const float *S, float *N, int64_t ld, const float *k, float e, const DeltaSums *done,
    const float *k2, const float *q2, int64_t d, int n, DeltaSums *next) {
    if (next != NULL)
        for (int u = 0; u < n; u++) next->r[u] = vec_all(0.f), next->p[u] = vec_all(0.f);
    for (int64_t i = 0; i < d; i++) {
        const float *row = S + i * ld;
        float *to = N + i * ld;
        const float ki = k[i];
        DeltaVec x[DELTA_VECS];
        for (int u = 0; u < n; u++) x[u] = vec_at(row + 8 * u);
        for (int u = 0; u < n; u++) {
            const DeltaVec y = x[u] * e + ki * done->r[u];
            vec_put(to + 8 * u, y);
            if (next != NULL) {
                next->r[u] += k2[i] * y;
                next->p[u] += q2[i] * y;
            }
        }
    }
}

/* One token for the block of columns j0.. (n vectors; S, N: its rows, of stride ld): the
 * sums were read (`a`); finish, write o, and update S into N, reading the next token's sums
 * (k2, q2 not NULL) on the way. */
static inline __attribute__((always_inline)) void block_token(
    DeltaSums *a, const float *S, float *N, int64_t ld, const float *k, const float *v, float e,
    float beta, float qk, const float *k2, const float *q2, int64_t d, int64_t j0, int n,
    float *o) {
    cols_finish(a, v, e, beta, qk, j0, n, o);
    DeltaSums next;
    if (k2 != NULL) {
        cols_update(S, N, ld, k, e, a, k2, q2, d, n, &next);
        *a = next;
    } else {
        cols_update(S, N, ld, k, e, a, NULL, NULL, d, n, NULL);
    }
}

/* o → o / √(mean(o²) + eps) · w_norm · silu(z), into out (may be o). */
static inline void gated_norm(const DeltaIn *in, const float *o, const float *z, float *out) {
    const int64_t d = in->d;
    const float scale = 1.f / sqrtf(square_sum(o, d) / (float)d + in->eps);
    int64_t j = 0;
    for (; j + 8 <= d; j += 8) {
        const DeltaVec zv = vec_at(z + j);
        const DeltaVec silu = zv * sigmoid_vec(zv);
        vec_put(out + j, vec_at(o + j) * scale * vec_at(in->norm_w + j) * silu);
    }
    for (; j < d; j++) out[j] = o[j] * scale * in->norm_w[j] * (z[j] * sigmoid_one(z[j]));
}

/* ------------------------------------------------------------------ one token (decode) */

/* The block of columns j0.. (n vectors) through one token, S into N (rows of stride d). */
static inline __attribute__((always_inline)) void step_block(
    const float *S, float *N, const float *k, const float *q, const float *v, float e,
    float beta, float qk, int64_t d, int64_t j0, int n, float *o) {
    DeltaSums a;
    cols_read(S + j0, d, k, q, d, n, &a);
    block_token(&a, S + j0, N + j0, d, k, v, e, beta, qk, NULL, NULL, d, j0, n, o);
}

/* Value head h: the delta rule and the gated RMSNorm; c holds the conv's output. */
static void delta_head(const DeltaIn *in, const float *c, int64_t h, float *out, float *state) {
    const int64_t d = in->d, key = in->nk * d, kh = h % in->nk;
    const float *S = in->past_ssm + h * d * d;
    float q[DELTA_MAX_D], k[DELTA_MAX_D], o[DELTA_MAX_D];
    unit_head(c + kh * d, q, d, 1);
    unit_head(c + key + kh * d, k, d, 0);
    const float e = decay_of(in, in->a, h), beta = sigmoidf(in->b[h]), qk = dot_sum(q, k, d);
    const float *v = c + 2 * key + h * d;
    float *N = state + h * d * d;
    for (int64_t j0 = 0; j0 < d; j0 += DELTA_COLS) {
        /* a constant width per call: the sums stay in registers */
        switch ((int)((d - j0 < DELTA_COLS ? d - j0 : DELTA_COLS) / 8)) {
        case 1: step_block(S, N, k, q, v, e, beta, qk, d, j0, 1, o); break;
        case 2: step_block(S, N, k, q, v, e, beta, qk, d, j0, 2, o); break;
        case 3: step_block(S, N, k, q, v, e, beta, qk, d, j0, 3, o); break;
        default: step_block(S, N, k, q, v, e, beta, qk, d, j0, 4, o); break;
        }
    }
    gated_norm(in, o, in->z + h * d, out + h * d);
}

typedef struct {
    const DeltaIn *in;
    float *out, *ssm_state, *scratch;
} DeltaJob;

/* Channels c0..c1 of the causal conv, then SiLU, into scratch. */
static void conv_channels(void *ctx, int64_t c0, int64_t c1, int slot) {
    const DeltaJob *j = ctx;
    const DeltaIn *in = j->in;
    const int64_t taps = in->taps, C = 2 * in->nk * in->d + in->nv * in->d;
    const float *rows[DELTA_MAX_TAPS];
    (void)slot;
    for (int64_t t = 0; t + 1 < taps; t++) rows[t] = in->past_conv + t * C;
    rows[taps - 1] = in->x;
    for (int64_t ch = c0; ch < c1; ch++)
        j->scratch[ch] = conv_one(in->conv_w + ch * taps, rows, taps, ch);
}

static void step_heads(void *ctx, int64_t h0, int64_t h1, int slot) {
    const DeltaJob *j = ctx;
    (void)slot;
    for (int64_t h = h0; h < h1; h++) delta_head(j->in, j->scratch, h, j->out, j->ssm_state);
}

/* A pool job with denormals flushed (`flush_denormals`). */
#define FLUSHED(NAME, BODY)                                                \
    static void NAME(void *ctx, int64_t begin, int64_t end, int slot) {     \
        const unsigned csr = flush_denormals();                            \
        BODY(ctx, begin, end, slot);                                       \
        restore_denormals(csr);                                            \
    }
FLUSHED(delta_conv, conv_channels)
FLUSHED(delta_heads, step_heads)

/* The step: out (nv · d), conv_state (K − 1, C), ssm_state (nv, d, d); scratch holds C
 * floats. The outputs must not alias the inputs (the runner binds two buffer sets). */
static void delta_layer(const DeltaIn *in, float *out, float *conv_state, float *ssm_state,
                        float *scratch, int threads) {
    const int64_t taps = in->taps, C = 2 * in->nk * in->d + in->nv * in->d;
    DeltaJob job = {in, out, ssm_state, scratch};
    pool_for(threads, C, (C + 4 * threads - 1) / (4 * threads), delta_conv, &job);
    pool_for(threads, in->nv, 1, delta_heads, &job);  /* after every channel: heads read them */
    /* the state slides one input on: rows 1.. of the past, then x */
    if (taps > 2)
        memcpy(conv_state, in->past_conv + C, (size_t)((taps - 2) * C) * sizeof(float));
    if (taps > 1) memcpy(conv_state + (taps - 2) * C, in->x, (size_t)C * sizeof(float));
}

/* ------------------------------------------------------------------ T tokens (prefill) */

typedef struct {
    const DeltaIn *in;
    int64_t T, tail_at; /* tokens; the state after the first tail_at of them is kept too */
    float *c;           /* (T, C) the conv's output, q and k heads normalised in place */
    const float *wt;    /* (K, C) the conv's taps, transposed */
    float *gates;       /* (T, nv, 2) e and β */
    float *qk;          /* (T, nk) qᵀk per key head */
    float *work;        /* (nv, d, d), 64-byte aligned: each block's state while it runs */
    float *out;         /* (T, nv · d) */
    float *ssm_state, *tail_ssm; /* (nv, d, d) each */
} DeltaRun;

/* Input row r of [past conv; x] (r < K − 1: the past). */
static inline const float *conv_row(const DeltaIn *in, int64_t r, int64_t C) {
    const int64_t K1 = in->taps - 1;
    return r < K1 ? in->past_conv + r * C : in->x + (r - K1) * in->stride;
}

/* Tokens t0..t1: the conv and SiLU, then their q and k heads normalised. */
static void conv_tokens(void *ctx, int64_t t0, int64_t t1, int slot) {
    const DeltaRun *r = ctx;
    const DeltaIn *in = r->in;
    const int64_t taps = in->taps, d = in->d, key = in->nk * d, C = 2 * key + in->nv * d;
    const float *rows[DELTA_MAX_TAPS];
    (void)slot;
    for (int64_t t = t0; t < t1; t++) {
        float *c = r->c + t * C;
        for (int64_t j = 0; j < taps; j++) rows[j] = conv_row(in, t + j, C);
        int64_t ch = 0;
        for (; ch + 8 <= C; ch += 8) vec_put(c + ch, conv_eight(r->wt, rows, taps, C, ch));
        for (; ch < C; ch++) c[ch] = conv_one(in->conv_w + ch * taps, rows, taps, ch);
        for (int64_t h = 0; h < in->nk; h++) {
            unit_head(c + h * d, c + h * d, d, 1);
            unit_head(c + key + h * d, c + key + h * d, d, 0);
            r->qk[t * in->nk + h] = dot_sum(c + h * d, c + key + h * d, d);
        }
        const float *b = in->b + t * 2 * in->nv;
        for (int64_t h = 0; h < in->nv; h++) {
            r->gates[2 * (t * in->nv + h)] = decay_of(in, b + in->nv, h);
            r->gates[2 * (t * in->nv + h) + 1] = sigmoidf(b[h]);
        }
    }
}

/* d rows of 8·n floats from `from` (row stride lf) to `to` (row stride lt) */
static inline void copy_rows(const float *from, int64_t lf, float *to, int64_t lt, int64_t d,
                             int n) {
    for (int64_t i = 0; i < d; i++)
        memcpy(to + i * lt, from + i * lf, (size_t)(8 * n) * sizeof(float));
}

/* Head h's columns j0.. (n vectors) through every token, as T decode steps would take them.
 * The block runs in its own 64-byte-aligned stretch of scratch (rows of 8·n floats), copied
 * in from the past state and out to the new one: the runner's state buffers sit at any
 * 16-byte offset, and updating them in place split every other vector across cache lines
 * (a layer's rule took 20-40 ms on two threads where aligned ones took 10). */
static inline __attribute__((always_inline)) void rule_block(const DeltaRun *r, int64_t h,
                                                             int64_t j0, int n) {
    const DeltaIn *in = r->in;
    const int64_t d = in->d, key = in->nk * d, C = 2 * key + in->nv * d, nv = in->nv;
    const int64_t kh = h % in->nk, T = r->T, ld = 8 * n, at = h * d * d + j0;
    float *W = r->work + h * d * d + j0 * d; /* the block's d rows, contiguous */
    copy_rows(in->past_ssm + at, d, W, ld, d, n);
    if (r->tail_at == 0) copy_rows(W, ld, r->tail_ssm + at, d, d, n);
    DeltaSums a;
    cols_read(W, ld, r->c + key + kh * d, r->c + kh * d, d, n, &a);
    for (int64_t t = 0; t < T; t++) {
        const float *c = r->c + t * C, *next = c + C;
        const float *gates = r->gates + 2 * (t * nv + h);
        const int more = t + 1 < T;
        block_token(&a, W, W, ld, c + key + kh * d, c + 2 * key + h * d, gates[0], gates[1],
                    r->qk[t * in->nk + kh], more ? next + key + kh * d : NULL,
                    more ? next + kh * d : NULL, d, j0, n, r->out + (t * nv + h) * d);
        if (t + 1 == r->tail_at) copy_rows(W, ld, r->tail_ssm + at, d, d, n);
    }
    copy_rows(W, ld, r->ssm_state + at, d, d, n);
}

/* Blocks b0..b1 (head b / blocks, columns (b % blocks) · DELTA_COLS on) through every token. */
static void rule_blocks(void *ctx, int64_t b0, int64_t b1, int slot) {
    const DeltaRun *r = ctx;
    const int64_t d = r->in->d, blocks = (d + DELTA_COLS - 1) / DELTA_COLS;
    (void)slot;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t h = b / blocks, j0 = (b % blocks) * DELTA_COLS;
        switch ((int)((d - j0 < DELTA_COLS ? d - j0 : DELTA_COLS) / 8)) {  /* as `delta_head` */
        case 1: rule_block(r, h, j0, 1); break;
        case 2: rule_block(r, h, j0, 2); break;
        case 3: rule_block(r, h, j0, 3); break;
        default: rule_block(r, h, j0, 4); break;
        }
    }
}

/* Tokens t0..t1: the gated RMSNorm of each head's output, in place. */
static void norm_tokens(void *ctx, int64_t t0, int64_t t1, int slot) {
    const DeltaRun *r = ctx;
    const DeltaIn *in = r->in;
    const int64_t d = in->d, nv = in->nv;
    (void)slot;
    for (int64_t t = t0; t < t1; t++)
        for (int64_t h = 0; h < nv; h++) {
            float *o = r->out + (t * nv + h) * d;
            gated_norm(in, o, in->z + t * in->stride + h * d, o);
        }
}

FLUSHED(run_conv, conv_tokens)
FLUSHED(run_rule, rule_blocks)
FLUSHED(run_norm, norm_tokens)

/* Floats of `delta_run`'s scratch for T tokens. */
static inline int64_t delta_run_scratch(const DeltaIn *in, int64_t T) {
    const int64_t C = 2 * in->nk * in->d + in->nv * in->d;
    return (T + in->taps) * C + T * (2 * in->nv + in->nk) + in->nv * in->d * in->d + 16;
}

/* T tokens: out (T, nv · d), the states after them and after the first tail_at (< T) of them:
 * conv (K − 1, C), ssm (nv, d, d) each; c holds `delta_run_scratch` floats. Outputs must
 * not alias inputs. */
static void delta_run(const DeltaIn *in, int64_t T, int64_t tail_at, float *out,
                      float *conv_state, float *ssm_state, float *tail_conv, float *tail_ssm,
                      float *c, int threads) {
    const int64_t C = 2 * in->nk * in->d + in->nv * in->d, K1 = in->taps - 1;
    const int64_t blocks = (in->d + DELTA_COLS - 1) / DELTA_COLS;
    float *wt = c + T * C; /* the taps transposed: eight channels' tap j are one load */
    for (int64_t ch = 0; ch < C; ch++)
        for (int64_t j = 0; j < in->taps; j++) wt[j * C + ch] = in->conv_w[ch * in->taps + j];
    float *gates = wt + in->taps * C, *qk = gates + 2 * T * in->nv;
    float *work = (float *)(((uintptr_t)(qk + T * in->nk) + 63) & ~(uintptr_t)63);
    DeltaRun run = {in, T, tail_at, c, wt, gates, qk, work, out, ssm_state, tail_ssm};
    pool_for(threads, T, (T + 4 * threads - 1) / (4 * threads), run_conv, &run);
    pool_for(threads, in->nv * blocks, 1, run_rule, &run);
    pool_for(threads, T, (T + 4 * threads - 1) / (4 * threads), run_norm, &run);
    for (int64_t r = 0; r < K1; r++) {  /* the last K − 1 inputs, and those before tail_at */
        memcpy(conv_state + r * C, conv_row(in, T + r, C), (size_t)C * sizeof(float));
        memcpy(tail_conv + r * C, conv_row(in, tail_at + r, C), (size_t)C * sizeof(float));
    }
}

#endif
