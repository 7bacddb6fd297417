/* `HearthAttention`, the ONNX Runtime op over `attention.h`: its inputs, checks and outputs.
 *
 * Inputs (GroupQueryAttention's, with a fixed count): query, key, value (with `packed`, the
 * three are one tensor holding q | k | v per row), past_key, past_value (B, KV, BUF, D),
 * seqlens_k (B, int32), total_sequence_length (int32; unread: seqlens_k implies it), cos_cache, sin_cache (rows, half),
 * sinks ((H) sink logits, or an empty tensor). Attributes: num_heads, kv_num_heads, scale,
 * softcap, local_window_size, do_rotary, rotary_interleaved, packed, causal (0: an image's
 * tokens see each other both ways). Outputs: (B, S, H·D), present_key, present_value: the
 * runner binds them to the past buffers, so the new rows are written in place (where it does
 * not, the past is copied over first). `HearthAttentionHalf` is the same op over a float16
 * cache (past and present K/V float16). Included by ortops.h after the helpers it uses. */
#ifndef HEARTH_ATTENTION_OP_H
#define HEARTH_ATTENTION_OP_H

#include "attention.h"

#define ATTN_INPUTS 10
enum { ORT_TENSOR_INT32 = 6, ORT_TENSOR_FLOAT16 = 10 };

typedef struct {
    const OrtApiTable *api;
    int64_t H, KV, window, rotary, interleaved, packed, causal;
    float scale, softcap;
    int half; /* HearthAttentionHalf: the cache is float16 */
} AttnKernel;

static OrtStatus *create_any_attention(const OrtApiTable *api, const OrtKernelInfo *info,
                                       int half, void **out) {
    AttnKernel *k = calloc(1, sizeof(AttnKernel));
    if (k == NULL) return fail(api, "%s: out of memory", "HearthAttention");
    k->api = api, k->half = half;
    OrtStatus *st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "num_heads", &k->H);
    if (st == NULL) st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "kv_num_heads", &k->KV);
    if (st == NULL) st = ORT_FN(api, KernelInfoGetAttribute_float)(info, "scale", &k->scale);
    if (st == NULL) st = ORT_FN(api, KernelInfoGetAttribute_float)(info, "softcap", &k->softcap);
    const char *ints[] = {"local_window_size", "do_rotary", "rotary_interleaved", "packed",
                          "causal"};
    int64_t *into[] = {&k->window, &k->rotary, &k->interleaved, &k->packed, &k->causal};
    for (int i = 0; i < 5 && st == NULL; i++)
        st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, ints[i], into[i]);
    if (st == NULL && (k->H < 1 || k->KV < 1 || k->H % k->KV != 0 || k->H / k->KV > ATTN_QUERIES))
        st = fail(api, "%s: num_heads must be a multiple of kv_num_heads, at most 32 times it",
                  "HearthAttention");
    if (st != NULL) {
        free(k);
        return st;
    }
    *out = k;
    return NULL;
}

static OrtStatus *create_attention(const OrtCustomOp *op, const OrtApiTable *api,
                                   const OrtKernelInfo *info, void **out) {
    (void)op;
    return create_any_attention(api, info, 0, out);
}

static OrtStatus *create_attention_half(const OrtCustomOp *op, const OrtApiTable *api,
                                        const OrtKernelInfo *info, void **out) {
    (void)op;
    return create_any_attention(api, info, 1, out);
}

static OrtStatus *compute_attention(void *kernel, OrtKernelContext *ctx) {
    const AttnKernel *k = kernel;
    const OrtApiTable *api = k->api;
    void *in[ATTN_INPUTS];
    int64_t dims[ATTN_INPUTS][8], count[ATTN_INPUTS];
    size_t rank[ATTN_INPUTS];
    for (size_t i = 0; i < ATTN_INPUTS; i++) {
        if (i == 6) { /* total_sequence_length: a scalar, implied by seqlens_k */
            in[i] = NULL, rank[i] = 0, count[i] = 1;
            continue;
        }
        OrtStatus *st = input(api, ctx, i, &in[i], dims[i], &rank[i]);
        if (st != NULL) return st;
        count[i] = 1;
        for (size_t d = 0; d < rank[i]; d++) count[i] *= dims[i][d];
    }
    const int64_t *cache = dims[3], H = k->H, KV = k->KV;
    const int64_t B = cache[0], BUF = cache[2], D = cache[3], S = rank[0] == 3 ? dims[0][1] : 0;
    const int64_t q_stride = k->packed ? (H + 2 * KV) * D : H * D;
    const int64_t kv_stride = k->packed ? q_stride : KV * D, half = rank[7] == 2 ? dims[7][1] : 0;
    int ok = rank[0] == 3 && dims[0][0] == B && dims[0][2] == q_stride && rank[3] == 4 &&
             cache[1] == KV && D % 16 == 0 && D <= ATTN_MAX_D && S >= 1 &&
             rank[4] == 4 && memcmp(dims[3], dims[4], 4 * sizeof(int64_t)) == 0 &&
             count[5] == B && count[6] == 1 && (count[9] == 0 || count[9] == H) &&
             (!k->rotary || (rank[7] == 2 && rank[8] == 2 && dims[8][0] == dims[7][0] &&
                             dims[8][1] == half && 2 * half <= D && half > 0));
    if (ok && !k->packed)
        ok = count[1] == B * S * KV * D && count[2] == count[1];
    if (!ok) return fail(api, "%s: inputs of mismatched shapes", "HearthAttention");
    const int32_t *seqlens = in[5];
    for (int64_t b = 0; b < B; b++) {
        const int64_t length = (int64_t)seqlens[b] + 1;
        if (length < 1 || length > BUF || (k->rotary && length > dims[7][0]))
            return fail(api, "%s: a sequence reaches past the cache or the rotary tables",
                        "HearthAttention");
    }
    const int64_t out_dims[3] = {B, S, H * D};
    float *out, *present_k, *present_v; /* the cache's: float16 where k->half */
    OrtStatus *st = output_at(api, ctx, 0, out_dims, 3, &out);
    if (st == NULL) st = output_at(api, ctx, 1, cache, 4, &present_k);
    if (st == NULL) st = output_at(api, ctx, 2, cache, 4, &present_v);
    if (st != NULL) return st;
    const size_t cache_bytes = (size_t)count[3] * (k->half ? 2 : 4);
    if (present_k != in[3]) memcpy(present_k, in[3], cache_bytes); /* not shared: copy over */
    if (present_v != in[4]) memcpy(present_v, in[4], cache_bytes);
    const float *q = in[0];
    Attn a = {
        .q = q, .k = k->packed ? q + H * D : in[1], .v = k->packed ? q + (H + KV) * D : in[2],
        .q_stride = q_stride, .kv_stride = kv_stride, .kc = present_k, .vc = present_v,
        .half = k->half, .causal = k->causal != 0,
        .B = B, .S = S, .H = H, .KV = KV, .D = D, .BUF = BUF, .seqlens = seqlens,
        .cos = in[7], .sin = in[8], .rot_half = half,
        .rot_rows = rank[7] == 2 ? dims[7][0] : 0, .rotary = (int)k->rotary,
        .interleaved = (int)k->interleaved, .sinks = count[9] ? in[9] : NULL,
        .scale = k->scale, .softcap = k->softcap, .window = k->window, .out = out,
    };
    if (attention(&a, threads_for(last_threads, S)) != 0)
        return fail(api, "%s: out of memory", "HearthAttention");
    return NULL;
}

static const char *attention_name(const OrtCustomOp *op) { (void)op; return "HearthAttention"; }
static const char *attention_half_name(const OrtCustomOp *op) {
    (void)op;
    return "HearthAttentionHalf";
}
static size_t attention_inputs(const OrtCustomOp *op) { (void)op; return ATTN_INPUTS; }
static int attention_input(const OrtCustomOp *op, size_t i) {
    (void)op;
    return i == 5 || i == 6 ? ORT_TENSOR_INT32 : ORT_TENSOR_FLOAT;
}
static int attention_half_input(const OrtCustomOp *op, size_t i) {
    return i == 3 || i == 4 ? ORT_TENSOR_FLOAT16 : attention_input(op, i);
}
static int attention_half_output(const OrtCustomOp *op, size_t i) {
    (void)op;
    return i == 0 ? ORT_TENSOR_FLOAT : ORT_TENSOR_FLOAT16;
}

#endif
