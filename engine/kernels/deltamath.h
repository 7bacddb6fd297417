/* The arithmetic `deltastep.h` shares between a DeltaNet decode step and a prefill, written so
 * that both round alike: an 8-float vector type (GCC/Clang vector extensions: AVX2 registers
 * on x86, two NEON registers elsewhere), e^x and the sigmoid as one polynomial in a scalar and
 * an 8-lane form of the same expressions, and the denormal flush both ops' jobs run under.
 * Why: libm's expf, called per element, was most of a prefill's conv (~3 M sigmoids a layer
 * for 512 tokens); a polynomial vectorises. Included by deltastep.h only. */
#ifndef HEARTH_DELTAMATH_H
#define HEARTH_DELTAMATH_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

typedef float DeltaVec __attribute__((vector_size(32)));
typedef int32_t DeltaInts __attribute__((vector_size(32)));

static inline DeltaVec vec_at(const float *p) {
    DeltaVec v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void vec_put(float *p, DeltaVec v) { memcpy(p, &v, sizeof v); }

static inline DeltaVec vec_all(float x) { return (DeltaVec){x, x, x, x, x, x, x, x}; }

/* Denormal results as zero (and denormal inputs read as zero) while a job runs, restored
 * after: where a layer's decay is near zero (e^g under 1e-38) the state products went
 * denormal, each a microcode assist of ~100 cycles (a synthetic Qwen3.5's prefill conv ran
 * 1.8x slower for it). Every job of both ops does so, so a prefill still rounds as its steps. */
static inline unsigned flush_denormals(void) {
#if defined(__SSE__)
    const unsigned old = _mm_getcsr();
    _mm_setcsr(old | 0x8040); /* FTZ | DAZ */
    return old;
#else
    return 0;
#endif
}

static inline void restore_denormals(unsigned old) {
#if defined(__SSE__)
    _mm_setcsr(old);
#else
    (void)old;
#endif
}

/* e^x, Cephes' expf polynomial (~2 ulp) with x clamped to [-87, 88] (e^x stays a normal
 * float, so 1 / (1 + e^-x) is exact at the ends too). x·log2(e) + 1.5·2^23 rounds n into the
 * low mantissa bits, which become 2^n's exponent. */
#define EXP_MAGIC 12582912.f
#define EXP_POLY(P, R)                                                                     \
    P = 1.9875691500E-4f * R + 1.3981999507E-3f, P = P * R + 8.3334519073E-3f,             \
    P = P * R + 4.1665795894E-2f, P = P * R + 1.6666665459E-1f, P = P * R + 5.0000001201E-1f

static inline float exp_one(float x) {
    x = x < -87.f ? -87.f : x > 88.f ? 88.f : x;
    const float t = x * 1.44269504088896341f + EXP_MAGIC, n = t - EXP_MAGIC;
    float r = x - n * 0.693359375f, p;
    r = r - n * -2.12194440e-4f;
    EXP_POLY(p, r);
    const float y = p * (r * r) + r + 1.f;
    int32_t bits, scale;
    memcpy(&bits, &t, sizeof bits);
    scale = (bits - 0x4B400000 + 127) << 23;
    float s;
    memcpy(&s, &scale, sizeof s);
    return y * s;
}

static inline DeltaVec exp_vec(DeltaVec x) {
    const DeltaInts low = x < vec_all(-87.f), high = x > vec_all(88.f);
    DeltaInts xb;
    memcpy(&xb, &x, sizeof xb);
    const DeltaVec lo = vec_all(-87.f), hi = vec_all(88.f);
    DeltaInts lob, hib;
    memcpy(&lob, &lo, sizeof lob);
    memcpy(&hib, &hi, sizeof hib);
    xb = (xb & ~(low | high)) | (lob & low) | (hib & high);
    memcpy(&x, &xb, sizeof x);
    const DeltaVec t = x * 1.44269504088896341f + EXP_MAGIC, n = t - EXP_MAGIC;
    DeltaVec r = x - n * 0.693359375f, p;
    r = r - n * -2.12194440e-4f;
    EXP_POLY(p, r);
    const DeltaVec y = p * (r * r) + r + 1.f;
    DeltaInts bits;
    memcpy(&bits, &t, sizeof bits);
    const DeltaInts scale = (bits - 0x4B400000 + 127) << 23;
    DeltaVec s;
    memcpy(&s, &scale, sizeof s);
    return y * s;
}

static inline float sigmoid_one(float x) { return 1.f / (1.f + exp_one(-x)); }

static inline DeltaVec sigmoid_vec(DeltaVec x) { return 1.f / (1.f + exp_vec(-x)); }

#endif
