/* The few pieces of ONNX Runtime's C ABI that the kernel's custom ops use, declared by hand.
 *
 * ONNX Runtime's own C header is not shipped in its Python wheel, and the kernel is compiled on
 * the user's machine from this folder alone. Its ABI is stable by design: `OrtApi` is a table
 * of function pointers that only ever grows at the end (its slots below were fixed by version 1
 * of the API), and `OrtCustomOp` a struct whose `version` field tells the runtime how many of
 * its members to read. So this header names only what the ops call: each function by its slot
 * in the table (`ORT_SLOT_*`), with its signature as a typedef, and `OrtCustomOp` up to the
 * members of version 16 (the first whose kernels return a status). Everything else is opaque.
 * Included by ortops.h only. */
#ifndef HEARTH_ORT_ABI_H
#define HEARTH_ORT_ABI_H

#include <stddef.h>
#include <stdint.h>

typedef struct OrtStatus OrtStatus;
typedef struct OrtValue OrtValue;
typedef struct OrtKernelInfo OrtKernelInfo;
typedef struct OrtKernelContext OrtKernelContext;
typedef struct OrtSessionOptions OrtSessionOptions;
typedef struct OrtCustomOpDomain OrtCustomOpDomain;
typedef struct OrtTensorTypeAndShapeInfo OrtShape;
typedef void *OrtApiTable[];  /* the runtime's `OrtApi`, read slot by slot */

typedef struct {
    const OrtApiTable *(*GetApi)(uint32_t version);
    const char *(*GetVersionString)(void);
} OrtApiBase;

enum { ORT_API_WANTED = 16 };         /* KernelComputeV2 and CreateKernelV2 (ONNX Runtime 1.16) */
enum { ORT_FAIL = 1, ORT_RUNTIME_EXCEPTION = 6 };                    /* OrtErrorCode */
enum { ORT_TENSOR_FLOAT = 1, ORT_TENSOR_INT64 = 7 };   /* ONNXTensorElementDataType */

/* Slots of OrtApi (all in the table since version 1) and their signatures. */
enum {
    ORT_SLOT_CreateStatus = 0,
    ORT_SLOT_CreateCustomOpDomain = 26,
    ORT_SLOT_CustomOpDomain_Add = 27,
    ORT_SLOT_AddCustomOpDomain = 28,
    ORT_SLOT_GetTensorMutableData = 51,
    ORT_SLOT_GetDimensionsCount = 61,
    ORT_SLOT_GetDimensions = 62,
    ORT_SLOT_GetTensorTypeAndShape = 65,
    ORT_SLOT_KernelInfoGetAttribute_float = 85,
    ORT_SLOT_KernelInfoGetAttribute_int64 = 86,
    ORT_SLOT_KernelInfoGetAttribute_string = 87,
    ORT_SLOT_KernelContext_GetInput = 90,
    ORT_SLOT_KernelContext_GetOutput = 91,
    ORT_SLOT_ReleaseStatus = 93,
    ORT_SLOT_ReleaseTensorTypeAndShapeInfo = 99,
};
typedef OrtStatus *(*OrtCreateStatusFn)(int code, const char *message);
typedef OrtStatus *(*OrtCreateCustomOpDomainFn)(const char *domain, OrtCustomOpDomain **out);
typedef OrtStatus *(*OrtCustomOpDomain_AddFn)(OrtCustomOpDomain *domain, const void *op);
typedef OrtStatus *(*OrtAddCustomOpDomainFn)(OrtSessionOptions *options, OrtCustomOpDomain *d);
typedef OrtStatus *(*OrtGetTensorMutableDataFn)(OrtValue *value, void **out);
typedef OrtStatus *(*OrtGetDimensionsCountFn)(const OrtShape *info, size_t *out);
typedef OrtStatus *(*OrtGetDimensionsFn)(const OrtShape *info, int64_t *dims, size_t n);
typedef OrtStatus *(*OrtGetTensorTypeAndShapeFn)(const OrtValue *value, OrtShape **out);
typedef OrtStatus *(*OrtKernelInfoGetAttribute_floatFn)(const OrtKernelInfo *info, const char *name,
                                           float *out);
typedef OrtStatus *(*OrtKernelInfoGetAttribute_int64Fn)(const OrtKernelInfo *info, const char *name,
                                           int64_t *out);
typedef OrtStatus *(*OrtKernelInfoGetAttribute_stringFn)(const OrtKernelInfo *info, const char *name,
                                            char *out, size_t *size);
typedef OrtStatus *(*OrtKernelContext_GetInputFn)(const OrtKernelContext *context, size_t index,
                                     const OrtValue **out);
typedef OrtStatus *(*OrtKernelContext_GetOutputFn)(OrtKernelContext *context, size_t index,
                                      const int64_t *dims, size_t n, OrtValue **out);
typedef void (*OrtReleaseStatusFn)(OrtStatus *status);
typedef void (*OrtReleaseTensorTypeAndShapeInfoFn)(OrtShape *info);

/* A slot of the table as its function type. */
#define ORT_FN(api, name) ((Ort##name##Fn)(*(api))[ORT_SLOT_##name])

/* OrtCustomOp, members in the runtime's order, up to those of version 16. */
typedef struct OrtCustomOp {
    uint32_t version;
    void *(*CreateKernel)(const struct OrtCustomOp *op, const OrtApiTable *api,
                          const OrtKernelInfo *info);
    const char *(*GetName)(const struct OrtCustomOp *op);
    const char *(*GetExecutionProviderType)(const struct OrtCustomOp *op);
    int (*GetInputType)(const struct OrtCustomOp *op, size_t index);
    size_t (*GetInputTypeCount)(const struct OrtCustomOp *op);
    int (*GetOutputType)(const struct OrtCustomOp *op, size_t index);
    size_t (*GetOutputTypeCount)(const struct OrtCustomOp *op);
    void (*KernelCompute)(void *kernel, OrtKernelContext *context);
    void (*KernelDestroy)(void *kernel);
    int (*GetInputCharacteristic)(const struct OrtCustomOp *op, size_t index);
    int (*GetOutputCharacteristic)(const struct OrtCustomOp *op, size_t index);
    int (*GetInputMemoryType)(const struct OrtCustomOp *op, size_t index);
    int (*GetVariadicInputMinArity)(const struct OrtCustomOp *op);
    int (*GetVariadicInputHomogeneity)(const struct OrtCustomOp *op);
    int (*GetVariadicOutputMinArity)(const struct OrtCustomOp *op);
    int (*GetVariadicOutputHomogeneity)(const struct OrtCustomOp *op);
    OrtStatus *(*CreateKernelV2)(const struct OrtCustomOp *op, const OrtApiTable *api,
                                 const OrtKernelInfo *info, void **kernel);
    OrtStatus *(*KernelComputeV2)(void *kernel, OrtKernelContext *context);
} OrtCustomOp;

#endif
