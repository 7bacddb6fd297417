/* The kernel as native ONNX Runtime custom ops: `HearthExperts`, `HearthMatMul`,
 * `HearthDeltaNet` with its prefill `HearthDeltaRun`, and `HearthAttention`
 * (`attention_op.h`) (domain ai.onnx.contrib), with no Python
 * between the runtime and them.
 *
 * Owns the bindings (a name → what a node computes: one layer's experts, or one matrix; set
 * from Python with `hearth_bind_*`, which hands over pointers into the mapped GGUF), the
 * ops' kernels, the decode thread cap, and `RegisterCustomOps`, the entry point ONNX
 * Runtime calls when a session's options register this library
 * (`SessionOptions.register_custom_ops_library`). The library is the one Python loaded (the
 * runtime's dlopen of the same path returns the same handle),
 * so the runtime's kernels find the bindings Python made.
 *
 * Why: through onnxruntime-extensions' Python op each call cost ~45 us of Python (numpy
 * wrappers, the GIL, the call), and a decode step makes one per layer and projection group.
 *
 * A node names its binding by attributes: `key` (the file's content) and `layer`
 * (HearthExperts), or `key` and `names` (HearthMatMul: matrices, comma-separated, whose
 * outputs are concatenated). A binding Python has dropped stays in the table, marked dead: a
 * kernel that outlives it fails with a message rather than reading unmapped memory.
 * `exact` nodes (float activations, for parity tests) are not served here: Python's op runs
 * those graphs. Included at the end of experts.c (one translation unit). */
#ifndef HEARTH_ORTOPS_H
#define HEARTH_ORTOPS_H

#include <pthread.h>
#include <stdio.h>

#include "deltastep.h"
#include "ort_abi.h"

#define DOMAIN_NAME "ai.onnx.contrib"
#define MAX_NAMES 8 /* matrices one HearthMatMul node concatenates (q, k, v, gate: 4 today) */

typedef struct {
    char *name;
    int live;
    int64_t threads;
    int64_t n_experts;  /* experts: the layer's set */
    HMat gate, up, down;
    int has_up;
    HVec gate_bias, up_bias, down_bias, out_scale;  /* data NULL: none */
    int64_t act;
    HMat mat;  /* a matrix */
} Binding;

static Binding **bindings;
static int64_t n_bindings, cap_bindings;
static int64_t last_threads = 1; /* the last binding's threads: what HearthDeltaNet runs on */
static pthread_mutex_t bind_lock = PTHREAD_MUTEX_INITIALIZER;

/* The binding called `name`, made (dead) when absent; NULL when out of memory. Lock held. */
static Binding *binding_named(const char *name) {
    for (int64_t i = 0; i < n_bindings; i++)
        if (strcmp(bindings[i]->name, name) == 0) return bindings[i];
    if (n_bindings == cap_bindings) {
        int64_t cap = cap_bindings ? 2 * cap_bindings : 256;
        Binding **grown = realloc(bindings, (size_t)cap * sizeof(Binding *));
        if (grown == NULL) return NULL;
        bindings = grown, cap_bindings = cap;
    }
    Binding *b = calloc(1, sizeof(Binding));
    if (b == NULL || (b->name = strdup(name)) == NULL) {
        free(b);
        return NULL;
    }
    return bindings[n_bindings++] = b;
}

/* Bind `name` ("key/e/layer") to one layer's experts: the arguments of `hearth_routed_ffn`
 * that do not change from call to call, checked here (`check_experts`) so that a file whose
 * expert tensors disagree is refused when it opens, not at its first token.
 * Returns 0, or -1 (sizes that disagree), -2 (a type without a decoder), -3 (out of memory). */
int hearth_bind_experts(const char *name, int64_t n_experts, const HMat *gate, const HMat *up,
                        const HMat *down, const HVec *gate_bias, const HVec *up_bias,
                        const HVec *down_bias, const HVec *out_scale, int64_t act,
                        int64_t threads) {
    if (gate == NULL || down == NULL || act < ACT_SILU || act > ACT_GELU_TANH) return -1;
    int checked = check_experts(n_experts, gate, up, down, gate_bias, up_bias, down_bias,
                                out_scale);
    if (checked != 0) return checked;
    const HVec none = {NULL, 0};
    pthread_mutex_lock(&bind_lock);
    Binding *b = binding_named(name);
    if (b != NULL) {
        b->n_experts = n_experts, b->gate = *gate, b->down = *down, b->has_up = up != NULL;
        if (up != NULL) b->up = *up;
        b->gate_bias = gate_bias ? *gate_bias : none, b->up_bias = up_bias ? *up_bias : none;
        b->down_bias = down_bias ? *down_bias : none;
        b->out_scale = out_scale ? *out_scale : none;
        b->act = act, b->threads = threads, b->live = 1;
        last_threads = threads;
    }
    pthread_mutex_unlock(&bind_lock);
    return b == NULL ? -3 : 0;
}

/* Bind `name` ("key/m/matrix name") to one matrix (its expert 0). Returns 0, or -1 (a
 * matrix whose bytes do not hold its rows), -2 (a type without a decoder), -3 (out of memory). */
int hearth_bind_matrix(const char *name, const HMat *mat, int64_t threads) {
    int checked = check_mat(mat, 1);
    if (checked != 0) return checked;
    pthread_mutex_lock(&bind_lock);
    Binding *b = binding_named(name);
    if (b != NULL) b->mat = *mat, b->threads = threads, b->live = 1, last_threads = threads;
    pthread_mutex_unlock(&bind_lock);
    return b == NULL ? -3 : 0;
}

/* Mark dead every binding whose name starts with `prefix` ("key/e/", "key/m/"): its weights
 * are unmapped. */
void hearth_unbind(const char *prefix) {
    size_t n = strlen(prefix);
    pthread_mutex_lock(&bind_lock);
    for (int64_t i = 0; i < n_bindings; i++)
        if (strncmp(bindings[i]->name, prefix, n) == 0) bindings[i]->live = 0;
    pthread_mutex_unlock(&bind_lock);
}

/* A cap on the threads of decode-sized calls (at most DECODE_ROWS rows), which Python sets
 * between decode steps (`engine.kernels.governor`); 0: none. Why: where another program holds
 * a core, a second thread helps a step's ~100 calls only when it runs (`pool.h`: the caller
 * no longer waits for it to arrive, only for a chunk it holds); with OpenMP's barriers a
 * descheduled thread stalled each call by a scheduler slice. Measured
 * here with a perplexity run beside it: a 0.6B step 532 ms on two threads, 78 on one. A
 * prefill's regions are long enough to absorb that, so they keep every thread. */
#define DECODE_ROWS 8
static int thread_cap;

void hearth_set_thread_cap(int cap) {
    __atomic_store_n(&thread_cap, cap > 0 ? cap : 0, __ATOMIC_RELAXED);
}

int hearth_thread_cap(void) { return __atomic_load_n(&thread_cap, __ATOMIC_RELAXED); }

/* The threads the ops without a binding of their own run on (HearthAttention, the DeltaNet
 * ops): a runner sets them as it opens, a binding as it is made. */
void hearth_set_op_threads(int threads) {
    pthread_mutex_lock(&bind_lock);
    last_threads = threads > 0 ? threads : 1;
    pthread_mutex_unlock(&bind_lock);
}

static int threads_for(int64_t threads, int64_t rows) {
    const int cap = __atomic_load_n(&thread_cap, __ATOMIC_RELAXED);
    return (int)(cap > 0 && rows <= DECODE_ROWS && cap < threads ? cap : threads);
}

/* --- the ops' kernels ---------------------------------------------------------------------- */

typedef struct {
    const OrtApiTable *api;
    int experts; /* HearthExperts, else HearthMatMul */
    int form;      /* HearthMatMul: its input's IN_* (int8, float or int8 twice) */
    int64_t glu;   /* HearthMatMul: an ACT_* the input's halves meet in first, or -1 (none) */
    int64_t tail;  /* HearthDeltaRun: the tail states are this many tokens before the end
                      (a shorter run's: after its first token) */
    int64_t n;   /* bindings */
    Binding *b[MAX_NAMES];
} Kernel;

static OrtStatus *fail(const OrtApiTable *api, const char *fmt, const char *detail) {
    char message[2600];
    snprintf(message, sizeof message, fmt, detail);
    return ORT_FN(api, CreateStatus)(ORT_RUNTIME_EXCEPTION, message);
}

/* A string attribute into buf (of size n); 0 when it is absent or longer. */
static int string_attr(const OrtApiTable *api, const OrtKernelInfo *info, const char *name,
                       char *buf, size_t n) {
    size_t size = n;
    OrtStatus *st = ORT_FN(api, KernelInfoGetAttribute_string)(info, name, buf, &size);
    if (st != NULL) {
        ORT_FN(api, ReleaseStatus)(st);
        return 0;
    }
    buf[size < n ? size : n - 1] = '\0';
    return 1;
}

/* The node's bindings, found by its attributes: they must be live when the session opens. */
static OrtStatus *create_kernel(const OrtApiTable *api, const OrtKernelInfo *info, int experts,
                                void **out) {
    char key[256], names[2048], name[2400];
    int64_t exact = 0, layer = 0;
    OrtStatus *st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "exact", &exact);
    if (st != NULL) ORT_FN(api, ReleaseStatus)(st), exact = 0;
    if (exact) return fail(api, "%s: float-reference nodes run on the Python op", "HearthOp");
    if (!string_attr(api, info, "key", key, sizeof key))
        return fail(api, "%s: the node has no key attribute", experts ? "HearthExperts" : "HearthMatMul");
    if (experts) {
        if ((st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "layer", &layer)) != NULL)
            return st;
        snprintf(names, sizeof names, "%lld", (long long)layer);
    } else if (!string_attr(api, info, "names", names, sizeof names)) {
        return fail(api, "%s: the node has no names attribute", "HearthMatMul");
    }
    Kernel *k = calloc(1, sizeof(Kernel));
    if (k == NULL) return fail(api, "%s: out of memory", "HearthOp");
    k->api = api, k->experts = experts;
    int64_t form = IN_INT8;  /* absent: int8 activations */
    if ((st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "float", &form)) != NULL)
        ORT_FN(api, ReleaseStatus)(st), form = IN_INT8;
    if (form < IN_INT8 || form > IN_TWICE) {
        free(k);
        char value[32];  /* `fail` takes a string: the number written into one */
        snprintf(value, sizeof value, "%lld", (long long)form);
        return fail(api, "HearthMatMul: activation form %s is not 0, 1 or 2", value);
    }
    k->form = (int)form;
    int64_t glu = -1;  /* absent: the input is the activations */
    if ((st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "glu", &glu)) != NULL)
        ORT_FN(api, ReleaseStatus)(st), glu = -1;
    if (glu < -1 || glu > ACT_GELU_TANH) {
        free(k);
        return fail(api, "%s: an activation the kernel does not know", "HearthMatMul");
    }
    k->glu = glu;
    pthread_mutex_lock(&bind_lock);
    for (char *part = names, *next; part != NULL; part = next) {
        next = strchr(part, ',');
        if (next != NULL) *next++ = '\0';
        snprintf(name, sizeof name, "%s/%s/%s", key, experts ? "e" : "m", part);
        Binding *b = NULL;
        for (int64_t i = 0; i < n_bindings && b == NULL; i++)
            if (strcmp(bindings[i]->name, name) == 0 && bindings[i]->live) b = bindings[i];
        if (b == NULL || k->n == MAX_NAMES) {
            pthread_mutex_unlock(&bind_lock);
            free(k);
            return fail(api, "no mapped weights for %s (the op's bindings were not set)", name);
        }
        k->b[k->n++] = b;
    }
    pthread_mutex_unlock(&bind_lock);
    *out = k;
    return NULL;
}

static OrtStatus *create_experts(const OrtCustomOp *op, const OrtApiTable *api,
                                 const OrtKernelInfo *info, void **out) {
    (void)op;
    return create_kernel(api, info, 1, out);
}

static OrtStatus *create_matmul(const OrtCustomOp *op, const OrtApiTable *api,
                                const OrtKernelInfo *info, void **out) {
    (void)op;
    return create_kernel(api, info, 0, out);
}

static void destroy_kernel(void *kernel) { free(kernel); }

/* Input `i`'s data, element count and shape (up to 8 dimensions). */
static OrtStatus *input(const OrtApiTable *api, OrtKernelContext *ctx, size_t i, void **data,
                        int64_t dims[8], size_t *rank) {
    const OrtValue *v;
    OrtShape *shape;
    OrtStatus *st = ORT_FN(api, KernelContext_GetInput)(ctx, i, &v);
    if (st == NULL) st = ORT_FN(api, GetTensorTypeAndShape)(v, &shape);
    if (st != NULL) return st;
    st = ORT_FN(api, GetDimensionsCount)(shape, rank);
    if (st == NULL && (*rank < 1 || *rank > 8))
        st = fail(api, "%s: inputs must have 1 to 8 dimensions", "HearthOp");
    if (st == NULL) st = ORT_FN(api, GetDimensions)(shape, dims, *rank);
    ORT_FN(api, ReleaseTensorTypeAndShapeInfo)(shape);
    if (st == NULL) st = ORT_FN(api, GetTensorMutableData)((OrtValue *)v, data);
    return st;
}

static int64_t leading(const int64_t *dims, size_t rank) {
    int64_t n = 1;
    for (size_t i = 0; i + 1 < rank; i++) n *= dims[i];
    return n;
}

static OrtStatus *output_at(const OrtApiTable *api, OrtKernelContext *ctx, size_t index,
                            const int64_t *dims, size_t rank, float **data) {
    OrtValue *v;
    OrtStatus *st = ORT_FN(api, KernelContext_GetOutput)(ctx, index, dims, rank, &v);
    return st != NULL ? st : ORT_FN(api, GetTensorMutableData)(v, (void **)data);
}

static OrtStatus *output(const OrtApiTable *api, OrtKernelContext *ctx, const int64_t *dims,
                         size_t rank, float **data) {
    return output_at(api, ctx, 0, dims, rank, data);
}

static const char *kernel_error(int rc) {
    return rc == -1 ? "shapes or expert ids out of range"
         : rc == -2 ? "a weight type the kernel has no decoder for"
         : rc == -3 ? "out of memory" : "an unknown error";
}

/* x (…, H), ids (…, k) int64, weights (…, k) → (…, H); ids and weights of one row apply to
 * every row (a dense MLP as one expert: engine.fastpath.dense_op). */
static OrtStatus *compute_experts(void *kernel, OrtKernelContext *ctx) {
    Kernel *k = kernel;
    const OrtApiTable *api = k->api;
    Binding *b = k->b[0];
    if (!b->live) return fail(api, "the experts of %s are no longer mapped", b->name);
    void *x, *ids, *wts;
    int64_t xd[8], id[8], wd[8];
    size_t xr, ir, wr;
    OrtStatus *st = input(api, ctx, 0, &x, xd, &xr);
    if (st == NULL) st = input(api, ctx, 1, &ids, id, &ir);
    if (st == NULL) st = input(api, ctx, 2, &wts, wd, &wr);
    if (st != NULL) return st;
    const int64_t T = leading(xd, xr), topk = id[ir - 1], rows = leading(id, ir);
    if (xd[xr - 1] != b->down.rows || wd[wr - 1] != topk || leading(wd, wr) != rows ||
        (rows != T && rows != 1))
        return fail(api, "HearthExperts %s: inputs of mismatched shapes", b->name);
    float *y;
    if ((st = output(api, ctx, xd, xr, &y)) != NULL) return st;
    if (T == 0) return NULL;
    const int64_t *row_ids = ids;
    const float *row_wts = wts;
    int64_t *many_ids = NULL;
    float *many_wts = NULL;
    if (rows == 1 && T > 1) {  /* one choice for every row */
        many_ids = malloc((size_t)(T * topk) * sizeof(int64_t));
        many_wts = malloc((size_t)(T * topk) * sizeof(float));
        if (many_ids == NULL || many_wts == NULL) {
            free(many_ids), free(many_wts);
            return fail(api, "HearthExperts %s: out of memory", b->name);
        }
        for (int64_t t = 0; t < T; t++)
            for (int64_t j = 0; j < topk; j++)
                many_ids[t * topk + j] = row_ids[j], many_wts[t * topk + j] = row_wts[j];
        row_ids = many_ids, row_wts = many_wts;
    }
    int rc = hearth_routed_ffn(x, T, row_ids, row_wts, topk, b->n_experts, &b->gate,
                               b->has_up ? &b->up : NULL, &b->down, &b->gate_bias, &b->up_bias,
                               &b->down_bias, &b->out_scale, b->act, threads_for(b->threads, T), y);
    free(many_ids), free(many_wts);
    return rc == 0 ? NULL : fail(api, "the expert kernel failed: %s", kernel_error(rc));
}

/* e^x, |relative error| < 1e-7 on [-87, 88] (clamped there): Cody-Waite reduction by ln 2
 * and Cephes' degree-6 polynomial, the power of two added to the exponent bits. Written so
 * that GCC vectorizes a loop over it (no libm call; `no-trapping-math` lets the clamps be
 * selects on AVX2 too): a gated MLP's 12,288 activations took 184 us through tanhf, 48
 * through expf, and take 6-10 us this way. */
#define NO_TRAP __attribute__((optimize("no-trapping-math")))
NO_TRAP static inline float exp_poly(float x) {
    x = x < -87.f ? -87.f : x;
    x = x > 88.f ? 88.f : x;
    const float round = 12582912.f; /* 1.5 · 2^23: adding it rounds to an integer */
    const float n = (x * 1.44269504088896341f + round) - round;
    float r = fmaf(n, -0.693359375f, x);
    r = fmaf(n, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    p = fmaf(p, r * r, r) + 1.f;
    int32_t bits;
    memcpy(&bits, &p, sizeof bits);
    bits += (int32_t)n * (1 << 23);
    memcpy(&p, &bits, sizeof p);
    return p;
}

/* One row: h = act(g) · u. gelu_tanh as g · sigmoid(2 · inner), the same function as
 * 0.5 · g · (1 + tanh(inner)) without its cancellation near 0. */
NO_TRAP static void glu_row(const float *g, const float *u, float *h, int64_t K, int act) {
    if (act == ACT_GELU_TANH) {
        for (int64_t j = 0; j < K; j++) {
            const float inner = 0.7978845608028654f * (g[j] + 0.044715f * g[j] * g[j] * g[j]);
            h[j] = g[j] / (1.f + exp_poly(-2.f * inner)) * u[j];
        }
    } else if (act == ACT_SILU) {
        for (int64_t j = 0; j < K; j++) h[j] = g[j] / (1.f + exp_poly(-g[j])) * u[j];
    } else {
        for (int64_t j = 0; j < K; j++) h[j] = activate(g[j], u[j], act);
    }
}

/* act(x[:, :K]) · x[:, K:] for n rows of width 2K (a gated MLP's two halves); NULL when out
 * of memory. One pass, in the op, where the graph had a Split, an activation and a Mul. */
typedef struct {
    const float *x;
    float *h;
    int64_t K;
    int act;
} GluJob;

static void glu_part(void *ctx, int64_t i0, int64_t i1, int slot) {
    const GluJob *j = ctx;
    (void)slot;
    for (int64_t i = i0; i < i1; i++)
        glu_row(j->x + i * 2 * j->K, j->x + i * 2 * j->K + j->K, j->h + i * j->K, j->K, j->act);
}

static float *glu_rows(const float *x, int64_t n, int64_t K, int act, int threads) {
    float *h = malloc((size_t)(n * K) * sizeof(float));
    if (h == NULL) return NULL;
    GluJob job = {x, h, K, act};
    pool_for(n * K >= (1 << 16) ? threads : 1, n, 1, glu_part, &job);
    return h;
}

/* x (…, K) → (…, Σ rows): the node's matrices side by side; with `glu`, x (…, 2K) is a
 * gated MLP's gate | up and the matrices read act(gate) · up. */
static OrtStatus *compute_matmul(void *kernel, OrtKernelContext *ctx) {
    Kernel *k = kernel;
    const OrtApiTable *api = k->api;
    const HMat *mats[MAX_NAMES];
    int64_t width = 0;
    for (int64_t j = 0; j < k->n; j++) {
        if (!k->b[j]->live) return fail(api, "the matrix %s is no longer mapped", k->b[j]->name);
        mats[j] = &k->b[j]->mat;
        width += mats[j]->rows;
    }
    void *x;
    int64_t dims[8];
    size_t rank;
    OrtStatus *st = input(api, ctx, 0, &x, dims, &rank);
    if (st != NULL) return st;
    if (dims[rank - 1] != (k->glu >= 0 ? 2 : 1) * mats[0]->cols)
        return fail(api, "HearthMatMul %s: the input's width is not the matrix's", k->b[0]->name);
    const int64_t n = leading(dims, rank);
    dims[rank - 1] = width;
    float *y, *h = NULL;
    if ((st = output(api, ctx, dims, rank, &y)) != NULL) return st;
    if (n == 0) return NULL;
    const int threads = threads_for(k->b[0]->threads, n);
    if (k->glu >= 0 && (h = glu_rows(x, n, mats[0]->cols, (int)k->glu, threads)) == NULL)
        return fail(api, "%s: out of memory", "HearthMatMul");
    int rc = matmul_many(mats, k->n, 0, h != NULL ? h : x, n, y, threads, k->form);
    free(h);
    return rc == 0 ? NULL : fail(api, "the matrix kernel failed: %s", kernel_error(rc));
}

/* A Gated DeltaNet layer's decode step (`delta_layer`). Inputs: the input projection's
 * output (1, 1, C + nv·d: the q|k|v channels, then the gate z) and the gates' (1, 1, 2·nv:
 * β's logits, then the decay's input), both whole as the projections leave them, the past
 * conv state (1, K−1, C) and delta-rule state (1, nv, d, d), the conv weight (C, K),
 * dt_bias and A (nv), the norm weight (d) and its epsilon (1). Outputs: (1, 1, nv·d), the
 * two new states. */
static OrtStatus *create_delta(const OrtCustomOp *op, const OrtApiTable *api,
                               const OrtKernelInfo *info, void **out) {
    (void)op, (void)info;
    Kernel *k = calloc(1, sizeof(Kernel));
    if (k == NULL) return fail(api, "%s: out of memory", "HearthDeltaNet");
    k->api = api;
    *out = k;
    return NULL;
}

#define DELTA_INPUTS 9

/* The inputs of `HearthDeltaNet` (one token) or `HearthDeltaRun` (T >= 1 tokens, `run`) as a
 * DeltaIn, their shapes checked; the states' shapes into conv (3) and ssm (4). */
static OrtStatus *delta_args(const OrtApiTable *api, OrtKernelContext *ctx, int run, DeltaIn *args,
                             int64_t *T, int64_t conv[3], int64_t ssm[4]) {
    void *in[DELTA_INPUTS];
    int64_t dims[DELTA_INPUTS][8], count[DELTA_INPUTS];
    size_t rank[DELTA_INPUTS];
    for (size_t i = 0; i < DELTA_INPUTS; i++) {
        OrtStatus *st = input(api, ctx, i, &in[i], dims[i], &rank[i]);
        if (st != NULL) return st;
        count[i] = leading(dims[i], rank[i]) * dims[i][rank[i] - 1];
    }
    memcpy(conv, dims[2], 3 * sizeof(int64_t)), memcpy(ssm, dims[3], 4 * sizeof(int64_t));
    const int64_t nv = ssm[1], d = ssm[3], C = rank[2] == 3 ? conv[2] : 0;
    const int64_t taps = rank[2] == 3 ? conv[1] + 1 : 0, nk = d > 0 ? (C / d - nv) / 2 : 0;
    *T = run ? (rank[0] == 3 && dims[0][0] == 1 ? dims[0][1] : 0) : 1;
    const int rows_ok = run ? rank[0] == 3 && dims[0][2] == C + nv * d && rank[1] == 3 &&
                                  dims[1][0] == 1 && dims[1][1] == *T && dims[1][2] == 2 * nv
                            : count[0] == C + nv * d && count[1] == 2 * nv;
    if (rank[3] != 4 || ssm[0] != 1 || ssm[2] != d || d < 8 || d % 8 != 0 ||
        d > DELTA_MAX_D || nk < 1 || nv % nk != 0 || C != (2 * nk + nv) * d || taps < 1 ||
        taps > DELTA_MAX_TAPS || conv[0] != 1 || *T < 1 || !rows_ok || count[4] != C * taps ||
        count[5] != nv || count[6] != nv || count[7] != d || count[8] != 1)
        return fail(api, "%s: inputs of mismatched shapes (one sequence)",
                    run ? "HearthDeltaRun" : "HearthDeltaNet (one token)");
    const float *proj = in[0], *gates = in[1];
    const DeltaIn made = {proj, proj + C, gates, gates + nv, in[2], in[3], in[4], in[5], in[6],
                          in[7], nk, nv, d, taps, *(const float *)in[8], C + nv * d};
    *args = made;
    return NULL;
}

static OrtStatus *compute_delta(void *kernel, OrtKernelContext *ctx) {
    const OrtApiTable *api = ((Kernel *)kernel)->api;
    DeltaIn args;
    int64_t T, conv[3], ssm[4];
    OrtStatus *st = delta_args(api, ctx, 0, &args, &T, conv, ssm);
    if (st != NULL) return st;
    const int64_t nv = args.nv, d = args.d, C = args.stride - nv * d;
    const int64_t out_dims[3] = {1, 1, nv * d};
    float *out, *conv_state, *ssm_state;
    st = output_at(api, ctx, 0, out_dims, 3, &out);
    if (st == NULL) st = output_at(api, ctx, 1, conv, 3, &conv_state);
    if (st == NULL) st = output_at(api, ctx, 2, ssm, 4, &ssm_state);
    if (st != NULL) return st;
    float *scratch = malloc((size_t)C * sizeof(float));
    if (scratch == NULL) return fail(api, "%s: out of memory", "HearthDeltaNet");
    const int64_t bytes = nv * d * d * (int64_t)sizeof(float);
    const int threads = bytes >= PARALLEL_MIN_BYTES ? threads_for(last_threads, 1) : 1;
    delta_layer(&args, out, conv_state, ssm_state, scratch, threads);
    free(scratch);
    return NULL;
}

/* A Gated DeltaNet layer over T >= 1 tokens (`delta_run`, a prefill): the decode step's
 * inputs with (1, T, ·) projections; its attribute `tail` (> 0) picks the extra states, those
 * after the first T − tail tokens, or, in a run of at most `tail` tokens (a speculative
 * verify: a sampled token and its draft), after the first token: the state a draft rejected
 * from its first id goes back to, with nothing run again. Outputs: (1, T, nv·d), the two new
 * states, the two tail states. Equals T decode steps (`compute_delta`) bit for bit. */
static OrtStatus *create_delta_run(const OrtCustomOp *op, const OrtApiTable *api,
                                   const OrtKernelInfo *info, void **out) {
    (void)op;
    int64_t tail = 0;
    OrtStatus *st = ORT_FN(api, KernelInfoGetAttribute_int64)(info, "tail", &tail);
    if (st != NULL) return st;
    if (tail < 1) return fail(api, "%s: its tail must be at least 1", "HearthDeltaRun");
    Kernel *k = calloc(1, sizeof(Kernel));
    if (k == NULL) return fail(api, "%s: out of memory", "HearthDeltaRun");
    k->api = api, k->tail = tail;
    *out = k;
    return NULL;
}

static OrtStatus *compute_delta_run(void *kernel, OrtKernelContext *ctx) {
    const Kernel *k = kernel;
    const OrtApiTable *api = k->api;
    DeltaIn args;
    int64_t T, conv[3], ssm[4];
    OrtStatus *st = delta_args(api, ctx, 1, &args, &T, conv, ssm);
    if (st != NULL) return st;
    const int64_t out_dims[3] = {1, T, args.nv * args.d};
    float *out, *conv_state, *ssm_state, *tail_conv, *tail_ssm;
    st = output_at(api, ctx, 0, out_dims, 3, &out);
    if (st == NULL) st = output_at(api, ctx, 1, conv, 3, &conv_state);
    if (st == NULL) st = output_at(api, ctx, 2, ssm, 4, &ssm_state);
    if (st == NULL) st = output_at(api, ctx, 3, conv, 3, &tail_conv);
    if (st == NULL) st = output_at(api, ctx, 4, ssm, 4, &tail_ssm);
    if (st != NULL) return st;
    float *scratch = malloc((size_t)delta_run_scratch(&args, T) * sizeof(float));
    if (scratch == NULL) return fail(api, "%s: out of memory", "HearthDeltaRun");
    const int64_t tail_at = T > k->tail ? T - k->tail : 1;
    delta_run(&args, T, tail_at, out, conv_state, ssm_state, tail_conv, tail_ssm, scratch,
              threads_for(last_threads, T));
    free(scratch);
    return NULL;
}

#include "attention_op.h" /* HearthAttention (after the helpers it uses) */

/* --- the ops' descriptions ----------------------------------------------------------------- */

static const char *experts_name(const OrtCustomOp *op) { (void)op; return "HearthExperts"; }
static const char *matmul_name(const OrtCustomOp *op) { (void)op; return "HearthMatMul"; }
static const char *on_cpu(const OrtCustomOp *op) { (void)op; return NULL; }
static size_t three(const OrtCustomOp *op) { (void)op; return 3; }
static const char *delta_name(const OrtCustomOp *op) { (void)op; return "HearthDeltaNet"; }
static size_t delta_inputs(const OrtCustomOp *op) { (void)op; return DELTA_INPUTS; }
static const char *delta_run_name(const OrtCustomOp *op) { (void)op; return "HearthDeltaRun"; }
static size_t five(const OrtCustomOp *op) { (void)op; return 5; }
static size_t one(const OrtCustomOp *op) { (void)op; return 1; }
static int experts_input(const OrtCustomOp *op, size_t i) {
    (void)op;
    return i == 1 ? ORT_TENSOR_INT64 : ORT_TENSOR_FLOAT;
}
static int float_type(const OrtCustomOp *op, size_t i) { (void)op, (void)i; return ORT_TENSOR_FLOAT; }
static int required(const OrtCustomOp *op, size_t i) { (void)op, (void)i; return 0; }
static int default_memory(const OrtCustomOp *op, size_t i) { (void)op, (void)i; return 0; }
static int min_arity(const OrtCustomOp *op) { (void)op; return 1; }
static int homogeneous(const OrtCustomOp *op) { (void)op; return 1; }

/* Version 16 with the V1 create and compute left NULL: the runtime then calls the V2 pair,
 * whose status carries the kernel's errors back to Python as an exception. */
#define HEARTH_OP(NAME, INPUT_TYPE, INPUTS, OUTPUTS, CREATE, COMPUTE)                        \
    HEARTH_TYPED_OP(NAME, INPUT_TYPE, INPUTS, float_type, OUTPUTS, CREATE, COMPUTE)
#define HEARTH_TYPED_OP(NAME, INPUT_TYPE, INPUTS, OUTPUT_TYPE, OUTPUTS, CREATE, COMPUTE)       \
    {.version = ORT_API_WANTED, .GetName = NAME, .GetExecutionProviderType = on_cpu,       \
     .GetInputType = INPUT_TYPE, .GetInputTypeCount = INPUTS, .GetOutputType = OUTPUT_TYPE, \
     .GetOutputTypeCount = OUTPUTS, .KernelDestroy = destroy_kernel,                       \
     .GetInputCharacteristic = required, .GetOutputCharacteristic = required,              \
     .GetInputMemoryType = default_memory, .GetVariadicInputMinArity = min_arity,          \
     .GetVariadicInputHomogeneity = homogeneous, .GetVariadicOutputMinArity = min_arity,   \
     .GetVariadicOutputHomogeneity = homogeneous, .CreateKernelV2 = CREATE,                \
     .KernelComputeV2 = COMPUTE}

static OrtCustomOp experts_op = HEARTH_OP(experts_name, experts_input, three, one,
                                          create_experts, compute_experts);
static OrtCustomOp matmul_op = HEARTH_OP(matmul_name, float_type, one, one, create_matmul,
                                         compute_matmul);
static OrtCustomOp delta_op = HEARTH_OP(delta_name, float_type, delta_inputs, three, create_delta,
                                        compute_delta);
static OrtCustomOp delta_run_op = HEARTH_OP(delta_run_name, float_type, delta_inputs, five,
                                            create_delta_run, compute_delta_run);
static OrtCustomOp attention_op = HEARTH_OP(attention_name, attention_input, attention_inputs,
                                            three, create_attention, compute_attention);
static OrtCustomOp attention_half_op = HEARTH_TYPED_OP(attention_half_name, attention_half_input,
                                                       attention_inputs, attention_half_output,
                                                       three, create_attention_half,
                                                       compute_attention);

/* What ONNX Runtime calls when a session's options register this library: its six ops, in
 * their own domain object (one per registration; the runtime keeps it with the options). */
__attribute__((visibility("default"))) OrtStatus *RegisterCustomOps(OrtSessionOptions *options,
                                                                   const OrtApiBase *base) {
    const OrtApiTable *api = base->GetApi(ORT_API_WANTED);
    if (api == NULL) return NULL;  /* a runtime before 1.16: Python checks the version first */
    OrtCustomOpDomain *domain;
    OrtStatus *st = ORT_FN(api, CreateCustomOpDomain)(DOMAIN_NAME, &domain);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &experts_op);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &matmul_op);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &delta_op);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &delta_run_op);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &attention_op);
    if (st == NULL) st = ORT_FN(api, CustomOpDomain_Add)(domain, &attention_half_op);
    if (st == NULL) st = ORT_FN(api, AddCustomOpDomain)(options, domain);
    return st;
}

#endif
