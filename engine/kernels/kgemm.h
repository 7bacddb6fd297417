/* The prefill GEMM on AVX-512 VNNI (HEARTH_GEMM512): every activation row against every
 * weight row of a matrix in register tiles, bit for bit the decode step's dots (kdots.h,
 * dots.h, kpairs.h), so a row's result never depends on how many rows the call has. Serves
 * every type the kernel decodes (Q4_1 and Q5_1 where the width is whole 128s:
 * `gemm512_serves`): the 32-block types against per-32 activations, the K-quants and IQ2/IQ3
 * against per-256 ones.
 * Included by experts.c only, after kdots.h. */
#ifndef HEARTH_KGEMM_H
#define HEARTH_KGEMM_H

#include "kdots.h"

/* --- prefill GEMM (AVX-512 VNNI): two weight rows per 512-bit vector ------------------------
 * Lanes 0-7 hold one (weight row, activation row) pair's eight lanes, lanes 8-15 the next
 * weight row's against the same activation row: every instruction does, lane for lane, what
 * the 256-bit fused dot does for each pair (the same int32 lane sums, the same float steps
 * per block, the same final hsum), so a row's bits never depend on how many rows the call
 * has. Weight rows are packed once per tile of pairs; four activation rows at a time share
 * each loaded weight vector, the activations re-laid so that a group of four is one
 * sequential stream. The lanes are halves (K-quants) or interleaved (32-block types). */
#if defined(__AVX512BW__) && defined(__AVX512VNNI__) && !defined(HEARTH_NO_AVX512)
#define HEARTH_GEMM512 1
#define GEMM_RP 2 /* pairs of weight rows a tile: four rows (`k_offsets` assumes it) */

static inline __m512i bcast256(const void *p) {
    return _mm512_broadcast_i64x4(_mm256_loadu_si256((const __m256i *)p));
}

/* An in-place VNNI step (GCC otherwise copies the accumulator around each one). */
static inline void dpwssd_acc(__m512i *acc, __m512i a, __m512i b) {
    __asm__("vpdpwssd %2, %1, %0" : "+v"(*acc) : "v"(a), "v"(b));
}
/* `hsum` of both pairs of a vector at once, the same additions in the same order (l + l+4,
 * then 0+2 and 1+3, then 0+1): pairs in the halves (A lanes 0-7) or interleaved (A even). */
static inline void hsum_halves(__m512 v, float *a, float *b) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_movehdup_ps(v));
    *a = _mm512_cvtss_f32(v), *b = _mm_cvtss_f32(_mm512_extractf32x4_ps(v, 2));
}
static inline void hsum_interleaved(__m512 v, float *a, float *b) {
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(1, 0, 3, 2)));
    v = _mm512_add_ps(v, _mm512_shuffle_f32x4(v, v, _MM_SHUFFLE(2, 3, 0, 1)));
    v = _mm512_add_ps(v, _mm512_permute_ps(v, _MM_SHUFFLE(1, 0, 3, 2)));
    __m128 l = _mm512_castps512_ps128(v);
    *a = _mm_cvtss_f32(l), *b = _mm_cvtss_f32(_mm_movehdup_ps(l));
}

/* 32-blocks with one scale (Q8_0, Q4_0, Q5_0, MXFP4, IQ4_NL, IQ4_XS; Q4_1, Q5_1), four weight rows
 * (two pairs) against four activation rows at a time. Per pair and block, 128 bytes: the
 * two rows' codes interleaved by lane (pair A's four bytes of lane l at 8l, B's at 8l + 4:
 * their int32 sums land in lanes 2l and 2l + 1) and -128 · each lane's code sum (the
 * activations go in as x + 128, unsigned, for vpdpbusd; each 4 bytes twice). The 16 scale
 * products a block needs (4 weight rows × 4 activation rows) are one multiply; each pair's
 * two are then one 64-bit permute. Everything a step reuses stays in registers: the loads,
 * not the arithmetic, bounded the first form (-15%). */
#define Q32_STEP 128
static int is_q32(int64_t qtype) {
    return qtype == T_Q8_0 || qtype == T_Q4_0 || qtype == T_Q5_0 || qtype == T_MXFP4 ||
           qtype == T_IQ4_NL || qtype == T_IQ4_XS;
}

/* Q4_1 and Q5_1: unsigned codes (signed int8 to vpdpbusd all the same), one scale a 32, and
 * an offset per 32 that `fdot_x_1` sums apart (`q32_offsets`). */
static int is_q32_offset(int64_t qtype) { return qtype == T_Q4_1 || qtype == T_Q5_1; }

/* Whether gemm512 serves a matrix: the 32-block types (those with offsets where cols is a
 * multiple of 128: `offsets` sums a tail of groups serially) and the K types. */
static int gemm512_serves(int64_t qtype, int64_t cols, const Act *a) {
    return is_q32(qtype) || (is_q32_offset(qtype) && cols % 128 == 0) || (a->k != NULL && has_kdec(qtype));
}

/* Row half of each pair block: a 32's signed codes and scale, as the type's fused dot forms
 * them (IQ4_XS: eight 32s a 136-byte block, each scale d · (ls - 32)); Q4_1 and Q5_1's
 * offsets, per 16-group, into m. */
static void q32_pack(int64_t qtype, const uint8_t *w, int64_t nb, uint8_t *dst, int half, float *wdv,
                     int k, float *m) {
    const __m256i iq4 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)IQ4_VALUES));
    const __m256i fp4 = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)MXFP4_VALUES));
    for (int64_t b = 0; b < nb; b++, dst += Q32_STEP) {
        __m256i q;
        float d;
        if (qtype == T_Q8_0 || qtype == T_Q4_0 || qtype == T_Q5_0) {  /* the decode dots' codes */
            const int kind = qtype == T_Q8_0 ? X0_Q8_0 : qtype == T_Q4_0 ? X0_Q4_0 : X0_Q5_0;
            d = fp16(w), q = x0_codes(w, kind), w += X0_STEP[kind];
        } else if (qtype == T_MXFP4) {
            d = e8m0_half(w[0]), q = _mm256_shuffle_epi8(fp4, nibbles32(w + 1)), w += 17;
        } else if (qtype == T_IQ4_NL) {
            d = fp16(w), q = _mm256_shuffle_epi8(iq4, nibbles32(w + 2)), w += 18;
        } else if (qtype == T_Q4_1) {
            d = fp16(w), m[2 * b] = m[2 * b + 1] = -fp16(w + 2), q = nibbles32(w + 4), w += 20;
        } else if (qtype == T_Q5_1) {
            d = fp16(w), m[2 * b] = m[2 * b + 1] = -fp16(w + 2);
            q = _mm256_or_si256(nibbles32(w + 8), fifth32(w + 4)), w += 24;
        } else {  /* IQ4_XS */
            const int ib = (int)(b % 8);
            const unsigned high = (unsigned)(w[2] | (w[3] << 8));
            const int ls = ((w[4 + ib / 2] >> (4 * (ib % 2))) & 15) | (int)(((high >> (2 * ib)) & 3) << 4);
            d = fp16(w) * (float)(ls - 32), q = _mm256_shuffle_epi8(iq4, nibbles32(w + 8 + 16 * ib));
            if (ib == 7) w += 136;
        }
        _mm256_storeu_si256((__m256i *)(dst + 32 * half), q);
        for (int p = 0; p < 4; p++) wdv[16 * b + 4 * p + k] = d;
    }
}

static void q32_corr(uint8_t *dst, int64_t nb) {  /* interleave the pair, then the sums */
    const __m512i idx = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    for (int64_t b = 0; b < nb; b++, dst += Q32_STEP) {
        __m512i q = _mm512_permutex2var_epi32(
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)dst)), idx,
            _mm512_castsi256_si512(_mm256_loadu_si256((const __m256i *)(dst + 32))));
        __m512i s = _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8((char)0x80), q);
        _mm512_storeu_si512((void *)dst, q);
        _mm512_storeu_si512((void *)(dst + 64), _mm512_sub_epi32(_mm512_setzero_si512(), s));
    }
}

/* out[k][p]: the tile's four rows against four activation rows (xg: per block, their
 * x + 128, each lane's four bytes twice; dT: per block, their scales four times each). */
__attribute__((noinline)) static void q32_kernel(const uint8_t *tile, const float *wdv, int64_t nb, const uint8_t *xg,
                              const float *dT, float out[4][4]) {
    __m512 acc[2][4];
    for (int p = 0; p < 4; p++) acc[0][p] = acc[1][p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        const uint8_t *t0 = tile + b * Q32_STEP, *t1 = tile + (nb + b) * Q32_STEP;
        __m512i W0 = _mm512_loadu_si512((const void *)t0), W1 = _mm512_loadu_si512((const void *)t1);
        __m512i C0 = _mm512_loadu_si512((const void *)(t0 + 64)), C1 = _mm512_loadu_si512((const void *)(t1 + 64));
        __m512d PR = _mm512_castps_pd(_mm512_mul_ps(_mm512_loadu_ps(wdv + 16 * b), _mm512_loadu_ps(dT + 16 * b)));
        for (int p = 0; p < 4; p++) {
            __m512i X = _mm512_load_si512((const void *)(xg + 256 * b + 64 * p));
            __m512 s0 = _mm512_castpd_ps(_mm512_permutexvar_pd(_mm512_set1_epi64(2 * p), PR)),
                   s1 = _mm512_castpd_ps(_mm512_permutexvar_pd(_mm512_set1_epi64(2 * p + 1), PR));
            acc[0][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(C0, X, W0)), s0, acc[0][p]);
            acc[1][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_dpbusd_epi32(C1, X, W1)), s1, acc[1][p]);
        }
    }
    for (int rp = 0; rp < 2; rp++)
        for (int p = 0; p < 4; p++)
            hsum_interleaved(acc[rp][p], &out[2 * rp][p], &out[2 * rp + 1][p]);
}

/* The per-16 activation sums for `q32_offsets`: per 16 activation rows from i0 (the last
 * repeated) and 16-group, one vector. */
static void q32_ms_t(const Act *a, int64_t n, int64_t i0, int64_t cols, float *msT) {
    const int64_t wg = cols / 16;
    for (int l = 0; l < 16; l++) {
        const int64_t i = i0 + l < n ? i0 + l : n - 1;
        for (int64_t g = 0; g < wg; g++) msT[g * 16 + l] = a->ms[i * wg + g];
    }
}

/* `offsets` (the fused dots' sum of Q4_1 and Q5_1's offsets) for four weight rows (m: row k
 * at k · wg) against 16 activation rows: o[k], lane l for row l. Each of its eight lanes is a
 * vector here (the same fmas in the same order), then `hsum`'s additions: (0 + 4) + (2 + 6),
 * plus (1 + 5) + (3 + 7). wg, the 16-groups: a multiple of 8. */
static void q32_offsets(const float *m, int64_t wg, const float *msT, __m512 o[4]) {
    for (int k = 0; k < 4; k++) {
        __m512 acc[8];
        for (int j = 0; j < 8; j++) acc[j] = _mm512_setzero_ps();
        for (int64_t g = 0; g < wg; g += 8)
            for (int j = 0; j < 8; j++)
                acc[j] = _mm512_fmadd_ps(_mm512_set1_ps(m[k * wg + g + j]), _mm512_loadu_ps(msT + (g + j) * 16), acc[j]);
        __m512 h[4];
        for (int j = 0; j < 4; j++) h[j] = _mm512_add_ps(acc[j], acc[j + 4]);
        o[k] = _mm512_add_ps(_mm512_add_ps(h[0], h[2]), _mm512_add_ps(h[1], h[3]));
    }
}

#include "kgemm_k.h"

/* Weight tiles one work item packs, then computes against its chunk's activation rows four
 * at a time, every tile of the set per group of four: a wide matrix's group (Gemma 4 E2B's
 * ffn_down, 12,288 inputs: 96 KB) is then read from L3 once per set rather than once per
 * tile, the set's tiles staying in L2. Each (tile, group) is the same `k_kernel` /
 * `q32_kernel` call on the same bytes whatever the set: results are unchanged. 2 threads,
 * 128 x (1536 x 12288), load 2: Q4_K 18.6 -> 16.7 ms, Q6_K 19.3 -> 17.4 (sets of 8: 17.5,
 * 17.8); 1,536 and 2,048 wide unchanged (no sets there). */
#ifndef GEMM_TILE_SET
#define GEMM_TILE_SET 4
#endif

/* A thread's buffers for `gemm_tiles`: per tile of a set, its packed rows and offsets. */
typedef struct {
    uint8_t *tile;
    int16_t *off;  /* the K offsets */
    float *od;     /* the K offsets' scales, or the q32 scales */
    float *offs;
    KRow kr;       /* a K row decoded, then packed */
    float *mw;     /* Q4_1/Q5_1 offsets */
} GemmScratch;

typedef struct {
    const HMat *mat;
    const uint8_t *base;
    int64_t row_bytes;
    float *y;
    int64_t ys, n, q1, kq, cols, rows, wg, nb, step, chunk, tr, tiles, groups, set, sets;
    const uint8_t *xu;
    const float *dT, *kdT, *kd4, *msT;
    const int8_t *ku;
    const int32_t *ksT;
    int failed;
    GemmScratch *scratch[POOL_MAX_THREADS];  /* each slot's, made when it first computes */
} GemmJob;

/* Per tile of a set: bytes of packed rows, and floats / int16s of each other buffer. */
#define TILE_BYTES(j) ((j)->tr / 2 * (j)->nb * (j)->step)
#define TILE_OD(j) ((j)->tr * (j)->nb * 16)
#define TILE_OFFS(j) ((j)->tr * (j)->groups * 16)

static void gemm_scratch_free(GemmScratch *s) {
    if (s == NULL) return;
    free(s->tile), free(s->off), free(s->od), free(s->offs), free(s->mw), krow_free(&s->kr);
    free(s);
}

static GemmScratch *gemm_scratch(GemmJob *j, int slot) {
    if (j->scratch[slot] != NULL) return j->scratch[slot];
    GemmScratch *s = calloc(1, sizeof(GemmScratch));
    if (s == NULL) return NULL;
    const int64_t set = j->set, cols = j->cols;
    s->tile = aligned_alloc(64, (size_t)(set * TILE_BYTES(j)));
    s->off = malloc((size_t)(set * TILE_OD(j)) * sizeof(int16_t));
    s->od = aligned_alloc(64, (size_t)(set * TILE_OD(j)) * sizeof(float));
    s->offs = aligned_alloc(64, (size_t)(set * TILE_OFFS(j)) * sizeof(float));
    s->mw = j->q1 ? malloc((size_t)(set * 4 * j->wg) * sizeof(float)) : NULL;
    const int ok = s->tile && s->off && s->od && s->offs && (!j->kq || krow_alloc(&s->kr, cols)) &&
                   (!j->q1 || s->mw);
    if (!ok) {
        gemm_scratch_free(s);
        return NULL;
    }
    return j->scratch[slot] = s;
}

/* Tile t's rows packed into the set's slot g, and its offsets for the chunk c0..c1. */
static void gemm_pack(const GemmJob *j, GemmScratch *s, int64_t t, int64_t g, int64_t c0, int64_t c1) {
    const int64_t q1 = j->q1, kq = j->kq, nb = j->nb, tr = j->tr, rows = j->rows, step = j->step;
    const int64_t groups = j->groups, wg = j->wg, r0 = t * tr;
    uint8_t *const tile = s->tile + g * TILE_BYTES(j);
    int16_t *const off = s->off + g * TILE_OD(j);
    float *const od = s->od + g * TILE_OD(j), *const offs = s->offs + g * TILE_OFFS(j);
    float *const mw = q1 ? s->mw + g * 4 * wg : NULL;
    for (int64_t k = 0; k < tr; k++) {
        const int64_t r = r0 + k < rows ? r0 + k : rows - 1;
        uint8_t *dst = tile + (k / 2) * nb * step;
        if (kq) {
            kdec(j->mat->qtype, j->base + r * j->row_bytes, nb, &s->kr);
            k_pack(&s->kr, nb, dst, (int)(k % 2), off + k * nb * 16, od + k * nb);
        } else {
            q32_pack(j->mat->qtype, j->base + r * j->row_bytes, nb, dst, (int)(k % 2), od, (int)k,
                     q1 ? mw + k * wg : NULL);
        }
    }
    if (!kq) {
        for (int rp = 0; rp < 2; rp++) q32_corr(tile + rp * nb * step, nb);
        for (int64_t gr = c0 / 16; q1 && gr < (c1 + 15) / 16; gr++) {
            __m512 o[4];
            q32_offsets(mw, wg, j->msT + gr * wg * 16, o);
            for (int k = 0; k < 4; k++) _mm512_store_ps(offs + k * 16 * groups + 16 * gr, o[k]);
        }
    } else {  /* the offsets first, then each result less its offset */
        for (int64_t gr = c0 / 16; gr < (c1 + 15) / 16; gr++) {
            __m512 o[4];
            k_offsets(off, od, nb, j->kdT + gr * nb * 16, j->ksT + gr * nb * 128, o);
            for (int k = 0; k < 4; k++) _mm512_store_ps(offs + k * 16 * groups + 16 * gr, o[k]);
        }
    }
}

/* Activation rows i..i+3 (below c1) against tile t, packed in the set's slot g. */
static void gemm_group(const GemmJob *j, const GemmScratch *s, int64_t t, int64_t g, int64_t i, int64_t c1) {
    const int64_t nb = j->nb, tr = j->tr, rows = j->rows, ys = j->ys, groups = j->groups, r0 = t * tr;
    const uint8_t *const tile = s->tile + g * TILE_BYTES(j);
    const float *const od = s->od + g * TILE_OD(j), *const offs = s->offs + g * TILE_OFFS(j);
    float *const y = j->y;
    if (!j->kq) {
        float out[4][4];
        q32_kernel(tile, od, nb, j->xu + (i / 4) * nb * 256, j->dT + (i / 4) * nb * 16, out);
        for (int64_t k = 0; k < 4 && r0 + k < rows; k++)
            for (int p = 0; p < 4 && i + p < c1; p++)  /* `fdot_x_1`: hsum less offsets */
                y[(i + p) * ys + r0 + k] = j->q1 ? out[k][p] - offs[k * 16 * groups + i + p] : out[k][p];
    } else {
        float out[2 * GEMM_RP][4];
        const int paired = j->mat->qtype == T_Q4_K || j->mat->qtype == T_Q5_K || j->mat->qtype == T_Q6_K;
        (paired ? k_kernel_paired : k_kernel)(tile, nb, j->ku + (i / 4) * nb * 2048, j->kd4 + (i / 4) * nb * 4, out);
        for (int64_t k = 0; k < tr && r0 + k < rows; k++)
            for (int p = 0; p < 4 && i + p < c1; p++)
                y[(i + p) * ys + r0 + k] = out[k][p] - offs[k * 16 * groups + i + p];
    }
}

/* Items `begin`..`end` of `gemm512`: item = chunk × sets + set, up to `set` weight tiles (tr
 * rows each, packed here) against one chunk of activation rows. */
static void gemm_tiles(void *ctx, int64_t begin, int64_t end, int slot) {
    GemmJob *j = ctx;
    GemmScratch *s = gemm_scratch(j, slot);
    if (s == NULL) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t item = begin; item < end; item++) {
        const int64_t c0 = item / j->sets * j->chunk, t0 = item % j->sets * j->set;
        const int64_t c1 = c0 + j->chunk < j->n ? c0 + j->chunk : j->n;
        const int64_t t1 = t0 + j->set < j->tiles ? t0 + j->set : j->tiles;
        for (int64_t t = t0; t < t1; t++) gemm_pack(j, s, t, t - t0, c0, c1);
        for (int64_t i = c0; i < c1; i += 4)
            for (int64_t t = t0; t < t1; t++) gemm_group(j, s, t, t - t0, i, c1);
    }
}

/* The activations re-laid for the tiles (`k_kernel`, `q32_kernel`, the offsets), per 16
 * rows an item: pure copies, so any split lays the same bytes. On one thread, a 128-row
 * call 12,288 wide (Gemma 4 E2B's ffn_down) laid 3 MB while the other threads waited. */
#define LAY_PARALLEL_MIN (1 << 18) /* values: below, one thread (decode steps, verifies) */
typedef struct {
    const Act *a;
    int64_t n, cols, nb;
    float *kdT;
    int32_t *ksT;
    int8_t *ku;
    float *kd4;
    uint8_t *xu;
    float *dT, *msT;
    int64_t q1;
} LayJob;

static void k_lay(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const LayJob *j = ctx;
    const Act *a = j->a;
    const int64_t n = j->n, cols = j->cols, nb = j->nb, g4 = (n + 3) / 4;
    for (int64_t grp = begin; grp < end; grp++) {
        k_act_t(a, n, 16 * grp, cols, j->kdT + grp * nb * 16, j->ksT + grp * nb * 128);
        for (int64_t g = 4 * grp; g < 4 * grp + 4 && g < g4; g++)
            for (int64_t b = 0; b < nb; b++)
                for (int p = 0; p < 4; p++) {
                    const int64_t i = 4 * g + p < n ? 4 * g + p : n - 1;
                    j->kd4[(g * nb + b) * 4 + p] = a->kd[i * nb + b];
                    for (int s = 0; s < 8; s++)
                        _mm512_store_si512((void *)(j->ku + (((g * nb + b) * 8 + s) * 4 + p) * 64),
                                           bcast256(a->k + i * cols + 256 * b + 32 * s));
                }
    }
}

static void q32_lay(void *ctx, int64_t begin, int64_t end, int slot) {
    (void)slot;
    const LayJob *j = ctx;
    const Act *a = j->a;
    const int64_t n = j->n, cols = j->cols, nb = j->nb, g4 = (n + 3) / 4, wg = cols / 16;
    const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
    const __m256i flip = _mm256_set1_epi8((char)0x80);
    for (int64_t grp = begin; grp < end; grp++) {
        /* by groups of four rows, each block's four rows side by side: one sequential stream */
        for (int64_t g = 4 * grp; g < 4 * grp + 4 && g < g4; g++)
            for (int64_t b = 0; b < nb; b++) {
                for (int p = 0; p < 4; p++) {
                    const int64_t i = 4 * g + p < n ? 4 * g + p : n - 1;
                    _mm512_store_si512((void *)(j->xu + ((g * nb + b) * 4 + p) * 64),
                                       _mm512_permutexvar_epi32(dup, _mm512_castsi256_si512(_mm256_xor_si256(
                                           _mm256_loadu_si256((const __m256i *)(a->q + i * cols + 32 * b)), flip))));
                }
                for (int l = 0; l < 16; l++) {
                    const int64_t i = 4 * g + l / 4 < n ? 4 * g + l / 4 : n - 1;
                    j->dT[(g * nb + b) * 16 + l] = a->d[i * nb + b];
                }
            }
        if (j->q1) q32_ms_t(a, n, 16 * grp, cols, j->msT + grp * wg * 16);
    }
}

/* y[i · ys + r] for every row r and activation row i, for a matrix `gemm512_serves`. */
static int gemm512(const HMat *mat, const uint8_t *base, int64_t row_bytes, const Act *a,
                   int64_t n, float *y, int64_t ys, int threads) {
    const int64_t q1 = is_q32_offset(mat->qtype), kq = !is_q32(mat->qtype) && !q1;
    const int64_t cols = mat->cols, rows = mat->rows, wg = cols / 16;
    const int64_t nb = kq ? cols / 256 : cols / 32, step = kq ? K_STEP : Q32_STEP;
#ifndef GEMM_CHUNK_BYTES
#define GEMM_CHUNK_BYTES (512 << 10)
#endif
#ifndef GEMM_MIN_ROWS
#define GEMM_MIN_ROWS 128
#endif
    /* A multiple of 16 rows, and at least GEMM_MIN_ROWS: each chunk decodes and packs every
     * weight tile again, so a wide matrix (Gemma 4 E2B's ffn_down, 12,288 inputs: 16-row
     * chunks by bytes alone) spent its time re-packing; at 128 rows, 1 thread, Q4_K/Q6_K
     * 128 x (1536 x 12288) ran ~1.5x faster (load 9, bench kernels --native). Rows for
     * each (chunk, tile) are computed alike whatever the chunk: results are unchanged. */
    int64_t chunk = GEMM_CHUNK_BYTES / (2 * cols) / 16 * 16;
    if (chunk < GEMM_MIN_ROWS) chunk = GEMM_MIN_ROWS;
    const int64_t tr = kq ? 2 * GEMM_RP : 4, tiles = (rows + tr - 1) / tr, groups = (n + 15) / 16;
    uint8_t *xu = NULL;
    float *kdT = NULL, *dT = NULL, *kd4 = NULL, *msT = NULL;
    int8_t *ku = NULL;
    int32_t *ksT = NULL;
    if (kq) {
        kdT = malloc((size_t)(groups * nb * 16) * sizeof(float));
        ksT = malloc((size_t)(groups * nb * 128) * sizeof(int32_t));
        if (!kdT || !ksT) { free(kdT), free(ksT); return -3; }
        const int64_t g4 = (n + 3) / 4;
        ku = aligned_alloc(64, (size_t)(g4 * 4 * 2 * cols));
        kd4 = malloc((size_t)(g4 * 4 * nb) * sizeof(float));
        if (!ku || !kd4) { free(kdT), free(ksT), free(ku), free(kd4); return -3; }
        LayJob lay = {a, n, cols, nb, kdT, ksT, ku, kd4, NULL, NULL, NULL, 0};
        pool_for(n * cols >= LAY_PARALLEL_MIN ? threads : 1, groups, 1, k_lay, &lay);
    } else {
        const int64_t g4 = (n + 3) / 4;
        dT = malloc((size_t)(g4 * nb * 16) * sizeof(float));
        if (!dT) return -3;
        xu = aligned_alloc(64, (size_t)(g4 * 4 * 2 * cols));
        if (!xu) { free(dT); return -3; }
        if (q1 && (msT = malloc((size_t)(groups * wg * 16) * sizeof(float))) == NULL) {
            free(xu), free(dT);
            return -3;
        }
        LayJob lay = {a, n, cols, nb, NULL, NULL, NULL, NULL, xu, dT, msT, q1};
        pool_for(n * cols >= LAY_PARALLEL_MIN ? threads : 1, groups, 1, q32_lay, &lay);
    }
    /* a set of tiles where a 4-row group would not stay in L2 across them (past 2,048 wide) */
    const int64_t set = cols > 2048 ? GEMM_TILE_SET : 1, sets = (tiles + set - 1) / set;
    GemmJob job = {mat, base, row_bytes, y, ys, n, q1, kq, cols, rows, wg, nb, step, chunk, tr,
                   tiles, groups, set, sets, xu, dT, kdT, kd4, msT, ku, ksT, 0, {0}};
    /* every weight tile against one chunk of activation rows, then the next chunk: a
     * chunk's re-laid rows, ~512 KB (more for matrices wider than 2,048), stay in cache across
     * the tiles */
    pool_for(threads, (n + chunk - 1) / chunk * sets, 1, gemm_tiles, &job);
    for (int s = 0; s < POOL_MAX_THREADS; s++) gemm_scratch_free(job.scratch[s]);
    const int failed = job.failed;
    free(xu), free(dT), free(kdT), free(ksT), free(ku), free(kd4), free(msT);
    return failed ? -3 : 0;
}
#endif

#endif
