/* The prefill GEMM's K-quant side (HEARTH_GEMM512 only): how a tile of K-quant weight rows
 * is packed (`k_pack`), the tile kernels (`k_kernel`; `k_kernel_paired` for Q4_K, Q5_K and
 * Q6_K, summed by pairs of 32s as kpairs.h `kpair`), and the offsets' two sides (`k_act_t`,
 * `k_offsets`). Included by kgemm.h only, inside its HEARTH_GEMM512 section, after the
 * helpers it uses (`bcast256`, `dpwssd_acc`, `hsum_halves`, GEMM_RP). */
#ifndef HEARTH_KGEMM_K_H
#define HEARTH_KGEMM_K_H

/* K-quants (Q2_K to Q6_K) against the per-256 activations: per pair and 256-block, the
 * eight 32s' codes (8 × 64 bytes, unsigned: row A's 32 then row B's), each lane's integer
 * sub-scale twice as int16 (8 × 64: vpmaddubsw's pair sums times it, added by vpdpwssd: the
 * same int32 lanes as the fused dot's maddubs, madd and add) and the rows' block scales (16
 * floats: A's eight lanes, then B's). The offsets (Σ off · ks per block, then one float
 * step) go in a second pass, sixteen activation rows a vector (`k_offsets`). */
#define K_STEP 1088

/* Row half of each pair block, from the row in integer form (`kdec`: the decode step's
 * codes and scales, so one decoder per type serves both); its offsets and their scales
 * beside. */
static void k_pack(const KRow *w, int64_t nb, uint8_t *dst, int half, int16_t *off, float *od) {
    for (int64_t i = 0; i < nb; i++, dst += K_STEP) {
        for (int s = 0; s < 8; s++) {  /* a 32's sixteen sub-scale lanes: its eight int32 lanes */
            _mm256_storeu_si256((__m256i *)(dst + 64 * s + 32 * half),
                                _mm256_loadu_si256((const __m256i *)(w->q + 256 * i + 32 * s)));
            if (!w->paired || s % 2 == 0)  /* paired: a pair's scales in the slot of its first 32 */
                _mm256_storeu_si256((__m256i *)(dst + 512 + 64 * s + 32 * half),
                                    _mm256_loadu_si256((const __m256i *)(w->sv + 16 * (8 * i + s))));
        }
        _mm256_storeu_ps((float *)(dst + 1024) + 8 * half, _mm256_set1_ps(w->d[i]));
        od[i] = w->od[i];
    }
    memcpy(off, w->off, (size_t)(16 * nb) * sizeof(int16_t));
}

/* A block's float step for both kernels: acc += float(sum) · (the pair's d · the row's kd). */
static inline __attribute__((always_inline)) void k_block_step(const uint8_t *tile, int64_t nb, int64_t b,
                                                               const float *kdg, __m512i sum[GEMM_RP][4],
                                                               __m512 acc[GEMM_RP][4]) {
    for (int rp = 0; rp < GEMM_RP; rp++) {
        __m512 S = _mm512_load_ps((const float *)(tile + (rp * nb + b) * K_STEP + 1024));
        for (int p = 0; p < 4; p++)
            acc[rp][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum[rp][p]),
                                         _mm512_mul_ps(S, _mm512_set1_ps(kdg[4 * b + p])), acc[rp][p]);
    }
}

/* Both kernels' results: each pair's two rows from its accumulator's halves. */
static inline __attribute__((always_inline)) void k_tile_out(__m512 acc[GEMM_RP][4], float out[2 * GEMM_RP][4]) {
    for (int rp = 0; rp < GEMM_RP; rp++)
        for (int p = 0; p < 4; p++)
            hsum_halves(acc[rp][p], &out[2 * rp][p], &out[2 * rp + 1][p]);
}

/* out[2 rp + h][p] = Σ_b the pair's float steps (without the offsets), for the four
 * activation rows of group xg (per block and 32: the four rows' 32 values, each twice). */
__attribute__((noinline)) static void k_kernel(const uint8_t *tile, int64_t nb, const int8_t *xg,
                                               const float *kdg, float out[2 * GEMM_RP][4]) {
    __m512 acc[GEMM_RP][4];
    for (int p = 0; p < 4; p++)
        for (int rp = 0; rp < GEMM_RP; rp++) acc[rp][p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i sum[GEMM_RP][4];
        for (int rp = 0; rp < GEMM_RP; rp++)
            for (int p = 0; p < 4; p++) sum[rp][p] = _mm512_setzero_si512();
        for (int s = 0; s < 8; s++) {
            __m512i W[GEMM_RP], SC[GEMM_RP];
            for (int rp = 0; rp < GEMM_RP; rp++) {
                const uint8_t *t = tile + (rp * nb + b) * K_STEP;
                W[rp] = _mm512_load_si512((const void *)(t + 64 * s));
                SC[rp] = _mm512_load_si512((const void *)(t + 512 + 64 * s));
            }
            for (int p = 0; p < 4; p++) {
                __m512i X = _mm512_load_si512((const void *)(xg + ((b * 8 + s) * 4 + p) * 64));
                for (int rp = 0; rp < GEMM_RP; rp++)  /* pairs of products, then scale · (p0 + p1) */
                    dpwssd_acc(&sum[rp][p], _mm512_maddubs_epi16(W[rp], X), SC[rp]);
            }
        }
        k_block_step(tile, nb, b, kdg, sum, acc);
    }
    k_tile_out(acc, out);
}

/* `k_kernel` for paired rows (Q4_K, Q5_K, Q6_K: kpairs.h `kpair`): per pair of 32s s, s + 1
 * and activation row, two vpdpbusd, one pack and one vpdpwssd by the pair's scales (in the
 * slot of s; `kpair_sv`), three multiplies where the unpaired form takes four. On 512-bit
 * vectors each 128-bit lane does what the 256-bit `kpair` does to its row's lanes. */
__attribute__((noinline)) static void k_kernel_paired(const uint8_t *tile, int64_t nb, const int8_t *xg,
                                                      const float *kdg, float out[2 * GEMM_RP][4]) {
    __m512 acc[GEMM_RP][4];
    for (int p = 0; p < 4; p++)
        for (int rp = 0; rp < GEMM_RP; rp++) acc[rp][p] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i sum[GEMM_RP][4];
        for (int rp = 0; rp < GEMM_RP; rp++)
            for (int p = 0; p < 4; p++) sum[rp][p] = _mm512_setzero_si512();
        for (int s = 0; s < 8; s += 2) {
            __m512i W0[GEMM_RP], W1[GEMM_RP], SC[GEMM_RP];
            for (int rp = 0; rp < GEMM_RP; rp++) {
                const uint8_t *t = tile + (rp * nb + b) * K_STEP;
                W0[rp] = _mm512_load_si512((const void *)(t + 64 * s));
                W1[rp] = _mm512_load_si512((const void *)(t + 64 * s + 64));
                SC[rp] = _mm512_load_si512((const void *)(t + 512 + 64 * s));
            }
            for (int p = 0; p < 4; p++) {
                const __m512i X0 = _mm512_load_si512((const void *)(xg + ((b * 8 + s) * 4 + p) * 64));
                const __m512i X1 = _mm512_load_si512((const void *)(xg + ((b * 8 + s + 1) * 4 + p) * 64));
                for (int rp = 0; rp < GEMM_RP; rp++)
                    dpwssd_acc(&sum[rp][p],
                               _mm512_packs_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), W0[rp], X0),
                                                  _mm512_dpbusd_epi32(_mm512_setzero_si512(), W1[rp], X1)),
                               SC[rp]);
            }
        }
        k_block_step(tile, nb, b, kdg, sum, acc);
    }
    k_tile_out(acc, out);
}

/* The activations' side of the offsets for 16 rows from i0 (the last repeated): kdT[b][16]
 * and ksT[b][8][16] (each lane: the int16 pair ks[2k], ks[2k+1]). */
static void k_act_t(const Act *a, int64_t n, int64_t i0, int64_t cols, float *kdT, int32_t *ksT) {
    const int64_t nb = cols / 256;
    for (int l = 0; l < 16; l++) {
        int64_t i = i0 + l < n ? i0 + l : n - 1;
        for (int64_t b = 0; b < nb; b++) {
            kdT[16 * b + l] = a->kd[i * nb + b];
            for (int k = 0; k < 8; k++) {
                int32_t v;
                memcpy(&v, a->ks + i * (cols / 16) + 16 * b + 2 * k, 4);
                ksT[(8 * b + k) * 16 + l] = v;
            }
        }
    }
}

/* Σ_b fma(od · kd, Σ_g off[g] ks[g], ·) for four weight rows (off, od: row k at k · nb · 16
 * and k · nb) and 16 activation rows: o[k]. */
static inline void k_offsets(const int16_t *off, const float *od, int64_t nb, const float *kdT,
                             const int32_t *ksT, __m512 o[4]) {
    for (int k = 0; k < 4; k++) o[k] = _mm512_setzero_ps();
    for (int64_t b = 0; b < nb; b++) {
        __m512i I[4] = {_mm512_setzero_si512(), _mm512_setzero_si512(), _mm512_setzero_si512(),
                        _mm512_setzero_si512()};
        for (int j = 0; j < 8; j++) {
            __m512i ks = _mm512_loadu_si512((const void *)(ksT + (8 * b + j) * 16));
            for (int k = 0; k < 4; k++) {
                int32_t wv;
                memcpy(&wv, off + k * nb * 16 + 16 * b + 2 * j, 4);
                dpwssd_acc(&I[k], ks, _mm512_set1_epi32(wv));
            }
        }
        __m512 kd = _mm512_loadu_ps(kdT + 16 * b);
        for (int k = 0; k < 4; k++)
            o[k] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_set1_ps(od[k * nb + b]), kd), _mm512_cvtepi32_ps(I[k]), o[k]);
    }
}

#endif
