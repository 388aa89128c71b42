/* DLPack 1.0 for meshdock's C ABI, written from the public specification
 * (https://dmlc.github.io/dlpack/latest/c_api.html, dlpack.h v1.0, Apache-2.0 structures).
 *
 * Debian 12 ships dlpack 0.6, which has DLTensor / DLManagedTensor but no
 * DLManagedTensorVersioned. This header works with either include order:
 *
 *   - nothing DLPack included yet: defines the whole DLPack 1.0 C API under upstream's own include
 *     guard (DLPACK_DLPACK_H_), so a later #include <dlpack/dlpack.h> (0.6 or 1.x) is a no-op;
 *   - <dlpack/dlpack.h> 1.x already included (DLPACK_MAJOR_VERSION defined): adds nothing;
 *   - <dlpack/dlpack.h> 0.x already included (DLPACK_VERSION < 100, as libmeshdock's C++ side
 *     does): adds only what 1.0 introduced (DLPackVersion, DLManagedTensorVersioned, the flag
 *     bits) under a meshdock guard. The layouts of DLDevice, DLDataType, DLTensor and
 *     DLManagedTensor are the same in 0.6 and 1.0.
 *
 * Plain C99; no C++ types.
 */
#ifndef MESHDOCK_DLPACK_H_
#define MESHDOCK_DLPACK_H_

#include <stddef.h>
#include <stdint.h>

#if !defined(DLPACK_DLPACK_H_)
#define DLPACK_DLPACK_H_
#define MESHDOCK_DLPACK_OWN_BASE 1

#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0
#define DLPACK_ABI_VERSION 1

#ifdef __cplusplus
#define DLPACK_EXTERN_C extern "C"
#else
#define DLPACK_EXTERN_C
#endif
#ifndef DLPACK_DLL
#define DLPACK_DLL
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  kDLCPU = 1,
  kDLCUDA = 2,
  kDLCUDAHost = 3,
  kDLOpenCL = 4,
  kDLVulkan = 7,
  kDLMetal = 8,
  kDLVPI = 9,
  kDLROCM = 10,
  kDLROCMHost = 11,
  kDLExtDev = 12,
  kDLCUDAManaged = 13,
  kDLOneAPI = 14,
  kDLWebGPU = 15,
  kDLHexagon = 16,
  kDLMAIA = 17
} DLDeviceType;

typedef struct {
  DLDeviceType device_type;
  int32_t device_id;
} DLDevice;

typedef enum {
  kDLInt = 0U,
  kDLUInt = 1U,
  kDLFloat = 2U,
  kDLOpaqueHandle = 3U,
  kDLBfloat = 4U,
  kDLComplex = 5U,
  kDLBool = 6U
} DLDataTypeCode;

typedef struct {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
} DLDataType;

typedef struct {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides; /* elements; NULL: C-contiguous */
  uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensor* self);
} DLManagedTensor;

#ifdef __cplusplus
}
#endif

#endif /* !DLPACK_DLPACK_H_ */

/* What DLPack 1.0 added, when the dlpack.h in scope predates it (or is this one). */
#if !defined(MESHDOCK_DLPACK_VERSIONED_DEFINED) && \
    (defined(MESHDOCK_DLPACK_OWN_BASE) || !defined(DLPACK_MAJOR_VERSION))
#define MESHDOCK_DLPACK_VERSIONED_DEFINED 1
#ifdef __cplusplus
extern "C" {
#endif
typedef struct DLPackVersion {
  uint32_t major;
  uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#define DLPACK_FLAG_BITMASK_IS_COPIED (1UL << 1UL)

typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void* manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned* self);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;
#ifdef __cplusplus
}
#endif
#endif

/* The DLPack version meshdock's DLManagedTensorVersioned tensors carry. */
#define MESHDOCK_DLPACK_MAJOR 1u
#define MESHDOCK_DLPACK_MINOR 0u
/* kDLBool (DLPack >= 0.8), usable whichever dlpack.h is in scope. */
#define MESHDOCK_DL_BOOL 6u
/* kDLComplex, likewise (present in 0.6 too). */
#define MESHDOCK_DL_COMPLEX 5u

#endif /* MESHDOCK_DLPACK_H_ */
