/* One decode step of a Gated DeltaNet layer (Qwen3.5's linear-attention layers), fused from
 * the input projection's outputs to the gated, normalised output `ssm_out` reads.
 *
 * With C = 2·key + value channels (q | k | v after the projection), the conv's K taps and the
 * layer's two states (the conv's last K − 1 inputs, and the delta rule's (d × d) per value
 * head), one token does what the graph's ONNX ops do for T = 1
 * (`engine.fastpath.deltanet`: `_causal_conv`, `_l2_heads`, the gates, `_recurrent_step`,
 * the gated RMSNorm):
 *     c = silu(Σ_j w[c, j] · [past; x][j])          per channel, taps in order;
 *     q = c_q / √(Σ c_q² + ε) · d^-½,  k = c_k / √(Σ c_k² + ε)  per key head, key head h mod
 *     nk serving value head h (the converter's tiling);
 *     β = sigmoid(b),  g = softplus(a + dt_bias) · A;
 *     K = S · e^g;  r_j = Σ_i k_i K_ij;  δ_j = (v_j − r_j) · β;
 *     S'_ij = K_ij + k_i δ_j;  o_j = Σ_i q_i S'_ij;
 *     out = o / √(mean(o²) + eps) · w_norm · silu(z)  per value head.
 * Why: the ~35 small ONNX ops this replaces cost a Qwen3.5-0.8B step ~4-5 ms of dispatch on
 * two cores, more than their arithmetic; and the delta rule makes two passes over each head's
 * 64 KB state instead of ~15 ops each streaming the layer's whole 1 MB state through memory.
 * Included by ortops.h only (the op's kernel is there). */
#ifndef HEARTH_DELTASTEP_H
#define HEARTH_DELTASTEP_H

#include <math.h>

#define DELTA_MAX_D 512 /* the head size the stack buffers hold (Qwen3.5: 128) */
#define L2_EPS 1e-6f    /* transformers' l2norm epsilon (flash-linear-attention's) */

typedef struct {
    const float *x;         /* (C) the projection's q | k | v channels, before the conv */
    const float *z;         /* (nv · d) the output gate */
    const float *b, *a;     /* (nv) β's logit and the decay's input */
    const float *past_conv; /* (K − 1, C) */
    const float *past_ssm;  /* (nv, d, d) */
    const float *conv_w;    /* (C, K) */
    const float *dt_bias, *A, *norm_w; /* (nv), (nv), (d) */
    int64_t nk, nv, d, taps;
    float eps; /* the output RMSNorm's */
} DeltaIn;

static inline float sigmoidf(float x) { return 1.f / (1.f + expf(-x)); }

/* log(1 + e^x) without overflow */
static inline float softplusf(float x) { return x > 20.f ? x : log1pf(expf(x)); }

/* 1 / √(Σ x² + eps) over n values */
static inline float inv_norm(const float *x, int64_t n, float eps) {
    float s = 0.f;
    for (int64_t j = 0; j < n; j++) s += x[j] * x[j];
    return 1.f / sqrtf(s + eps);
}

/* Value head h: the delta rule and the gated RMSNorm; c holds the conv's output. */
static void delta_head(const DeltaIn *in, const float *c, int64_t h, float *out, float *state) {
    const int64_t d = in->d, key = in->nk * d, kh = h % in->nk;
    const float *qc = c + kh * d, *kc = c + key + kh * d, *vh = c + 2 * key + h * d;
    const float *S = in->past_ssm + h * d * d, *zh = in->z + h * d;
    float *N = state + h * d * d, *oh = out + h * d;
    const float qs = inv_norm(qc, d, L2_EPS) / sqrtf((float)d), ks = inv_norm(kc, d, L2_EPS);
    const float e = expf(softplusf(in->a[h] + in->dt_bias[h]) * in->A[h]);
    const float beta = sigmoidf(in->b[h]);
    float q[DELTA_MAX_D], k[DELTA_MAX_D], r[DELTA_MAX_D], delta[DELTA_MAX_D], o[DELTA_MAX_D];
    for (int64_t j = 0; j < d; j++) q[j] = qc[j] * qs, k[j] = kc[j] * ks, r[j] = 0.f, o[j] = 0.f;
    for (int64_t i = 0; i < d; i++) {
        const float ki = k[i];
        const float *row = S + i * d;
        for (int64_t j = 0; j < d; j++) r[j] += ki * (row[j] * e);
    }
    for (int64_t j = 0; j < d; j++) delta[j] = (vh[j] - r[j]) * beta;
    for (int64_t i = 0; i < d; i++) {
        const float ki = k[i], qi = q[i];
        const float *row = S + i * d;
        float *to = N + i * d;
        for (int64_t j = 0; j < d; j++) {
            float s = row[j] * e + ki * delta[j];
            to[j] = s;
            o[j] += qi * s;
        }
    }
    float ms = 0.f;
    for (int64_t j = 0; j < d; j++) ms += o[j] * o[j];
    const float scale = 1.f / sqrtf(ms / (float)d + in->eps);
    for (int64_t j = 0; j < d; j++)
        oh[j] = o[j] * scale * in->norm_w[j] * (zh[j] * sigmoidf(zh[j]));
}

typedef struct {
    const DeltaIn *in;
    float *out, *ssm_state, *scratch;
} DeltaJob;

/* Channels c0..c1 of the causal conv, then SiLU, into scratch. */
static void delta_conv(void *ctx, int64_t c0, int64_t c1, int slot) {
    const DeltaJob *j = ctx;
    const DeltaIn *in = j->in;
    const int64_t taps = in->taps, C = 2 * in->nk * in->d + in->nv * in->d;
    (void)slot;
    for (int64_t ch = c0; ch < c1; ch++) {
        const float *w = in->conv_w + ch * taps;
        float s = 0.f;
        for (int64_t t = 0; t + 1 < taps; t++) s += w[t] * in->past_conv[t * C + ch];
        s += w[taps - 1] * in->x[ch];
        j->scratch[ch] = s * sigmoidf(s);
    }
}

static void delta_heads(void *ctx, int64_t h0, int64_t h1, int slot) {
    const DeltaJob *j = ctx;
    (void)slot;
    for (int64_t h = h0; h < h1; h++) delta_head(j->in, j->scratch, h, j->out, j->ssm_state);
}

/* The step: out (nv · d), conv_state (K − 1, C), ssm_state (nv, d, d); scratch holds C
 * floats. The outputs must not alias the inputs (the runner binds two buffer sets). */
static void delta_layer(const DeltaIn *in, float *out, float *conv_state, float *ssm_state,
                        float *scratch, int threads) {
    const int64_t taps = in->taps, C = 2 * in->nk * in->d + in->nv * in->d;
    DeltaJob job = {in, out, ssm_state, scratch};
    pool_for(threads, C, (C + 4 * threads - 1) / (4 * threads), delta_conv, &job);
    pool_for(threads, in->nv, 1, delta_heads, &job);  /* after every channel: heads read them */
    /* the state slides one input on: rows 1.. of the past, then x */
    if (taps > 2) memcpy(conv_state, in->past_conv + C, (size_t)((taps - 2) * C) * sizeof(float));
    if (taps > 1) memcpy(conv_state + (taps - 2) * C, in->x, (size_t)C * sizeof(float));
}

#endif
