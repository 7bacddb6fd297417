/* One decode step of the gated delta rule (Qwen3.5's DeltaNet layers), fused.
 *
 * Per value head h, with the state S (d × d: rows by key index a, columns by value index b),
 * the step's q, k, v (d each), β and the log decay g:
 *     K = S · exp(g);  r_b = Σ_a k_a K_ab;  δ_b = (v_b − r_b) · β;
 *     S'_ab = K_ab + k_a δ_b;  o_b = Σ_a q_a S'_ab,
 * which is what the graph's ONNX ops compute (`engine.fastpath.deltanet._recurrent_step`),
 * in two passes over each head's 64 KB of state (one to recall, one to update and read out)
 * instead of ~15 ops that each stream the whole 1 MB state of the layer through memory.
 * Included by ortops.h only (the op's kernel is there). */
#ifndef HEARTH_DELTASTEP_H
#define HEARTH_DELTASTEP_H

#define DELTA_MAX_D 512 /* the head size the stack buffers hold (Qwen3.5: 128) */

/* q, k, v (nv, d), beta and decay (nv), past (nv, d, d) → out (nv, d), state (nv, d, d). */
static void delta_step(const float *q, const float *k, const float *v, const float *beta,
                       const float *decay, const float *past, int64_t nv, int64_t d,
                       float *out, float *state, int threads) {
#pragma omp parallel for schedule(static) num_threads(threads)
    for (int64_t h = 0; h < nv; h++) {
        const float *S = past + h * d * d, *kh = k + h * d, *qh = q + h * d, *vh = v + h * d;
        float *N = state + h * d * d, *oh = out + h * d;
        const float e = expf(decay[h]), b = beta[h];
        float r[DELTA_MAX_D], delta[DELTA_MAX_D];
        for (int64_t j = 0; j < d; j++) r[j] = 0.f, oh[j] = 0.f;
        for (int64_t a = 0; a < d; a++) {
            const float ka = kh[a];
            const float *row = S + a * d;
            for (int64_t j = 0; j < d; j++) r[j] += ka * (row[j] * e);
        }
        for (int64_t j = 0; j < d; j++) delta[j] = (vh[j] - r[j]) * b;
        for (int64_t a = 0; a < d; a++) {
            const float ka = kh[a], qa = qh[a];
            const float *row = S + a * d;
            float *to = N + a * d;
            for (int64_t j = 0; j < d; j++) {
                float s = row[j] * e + ka * delta[j];
                to[j] = s;
                oh[j] += qa * s;
            }
        }
    }
}

#endif
