/* A C99 consumer over libmeshdock's C ABI (meshdock/meshdock.h) alone: attach to a slot, wait
 * for a frame, print each array's name, dtype, shape and first values, take one as a DLPack
 * tensor, release everything.
 *
 *   build/bin/c_consumer NAME [PREFIX] [TIMEOUT_MS]
 *
 * Output, one line per array (the integration test checks it against the file):
 *   manifest {"arrays":[...],"block_bases":[0,52,...],"cell_types":["triangle",...],...}
 *   frame 1 slot 0 device 1:0 arrays 28
 *   points float64 (300, 3) first 0 0 0.4 0 0 0
 * Exit status: 0 on a frame, 2 when none came within the timeout, 1 on an error (the message
 * from meshdock_last_error() on stderr).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "meshdock/meshdock.h"

static const char* dtype_name(DLDataType t, char* buf, size_t size) {
  const char* kind = t.code == kDLInt             ? "int"
                     : t.code == kDLUInt          ? "uint"
                     : t.code == kDLFloat         ? "float"
                     : t.code == kDLBfloat        ? "bfloat"
                     : t.code == MESHDOCK_DL_BOOL ? "bool"
                                                  : "code";
  if (t.code == MESHDOCK_DL_BOOL) {
    snprintf(buf, size, "bool");
  } else {
    snprintf(buf, size, "%s%u", kind, (unsigned)t.bits);
  }
  return buf;
}

/* Element i of a host array as a double (integers and floats of 8..64 bits, bool). */
static double value_at(const meshdock_array_info* a, uint64_t i) {
  const unsigned char* p = (const unsigned char*)a->data + i * (a->dtype.bits / 8u);
  switch (a->dtype.code) {
    case kDLFloat:
      if (a->dtype.bits == 64) {
        double v;
        memcpy(&v, p, 8);
        return v;
      }
      if (a->dtype.bits == 32) {
        float v;
        memcpy(&v, p, 4);
        return v;
      }
      return 0.0; /* float16: not decoded here */
    case kDLInt:
      switch (a->dtype.bits) {
        case 8:
          return (double)*(const int8_t*)p;
        case 16: {
          int16_t v;
          memcpy(&v, p, 2);
          return v;
        }
        case 32: {
          int32_t v;
          memcpy(&v, p, 4);
          return v;
        }
        default: {
          int64_t v;
          memcpy(&v, p, 8);
          return (double)v;
        }
      }
    case kDLUInt:
    case MESHDOCK_DL_BOOL:
      switch (a->dtype.bits) {
        case 8:
          return (double)*p;
        case 16: {
          uint16_t v;
          memcpy(&v, p, 2);
          return v;
        }
        case 32: {
          uint32_t v;
          memcpy(&v, p, 4);
          return v;
        }
        default: {
          uint64_t v;
          memcpy(&v, p, 8);
          return (double)v;
        }
      }
    default:
      return 0.0;
  }
}

static int fail(const char* what, int status) {
  fprintf(stderr, "c_consumer: %s: %s (%s)\n", what, meshdock_last_error(),
          meshdock_status_name(status));
  return 1;
}

int main(int argc, char** argv) {
  meshdock_attach_options options;
  meshdock_slot* slot = NULL;
  meshdock_frame* frame = NULL;
  DLManagedTensorVersioned* tensor = NULL;
  int64_t timeout_ms = 5000;
  size_t i, n;
  int status;
  if (argc >= 2 && (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0)) {
    printf("usage: %s NAME [PREFIX] [TIMEOUT_MS]\n", argv[0]);
    return 0;
  }
  if (argc < 2 || argc > 4) {
    fprintf(stderr, "usage: %s NAME [PREFIX] [TIMEOUT_MS]\n", argv[0]);
    return 2;
  }
  if ((meshdock_abi_version() >> 16) != MESHDOCK_ABI_VERSION_MAJOR) {
    fprintf(stderr, "c_consumer: libmeshdock ABI %u.%u, built for %d.%d\n",
            (unsigned)(meshdock_abi_version() >> 16), (unsigned)(meshdock_abi_version() & 0xffffu),
            MESHDOCK_ABI_VERSION_MAJOR, MESHDOCK_ABI_VERSION_MINOR);
    return 1;
  }
  meshdock_attach_options_init(&options);
  if (argc > 2) options.prefix = argv[2];
  if (argc > 3) timeout_ms = strtoll(argv[3], NULL, 10);
  options.timeout_ms = timeout_ms;

  status = meshdock_slot_attach(argv[1], &options, &slot);
  if (status != MESHDOCK_OK) return fail("attach", status);
  status = meshdock_slot_wait(slot, timeout_ms, &frame);
  if (status != MESHDOCK_OK) {
    meshdock_slot_release(slot);
    return fail("wait", status);
  }
  if (!frame) {
    fprintf(stderr, "c_consumer: no frame within %" PRId64 " ms\n", timeout_ms);
    meshdock_slot_release(slot);
    return 2;
  }
  n = meshdock_frame_array_count(frame);
  printf("manifest %s\n", meshdock_frame_manifest_json(frame));
  printf("frame %" PRIu64 " slot %u device %d:%d arrays %zu\n", meshdock_frame_number(frame),
         (unsigned)meshdock_frame_slot_index(frame), (int)meshdock_frame_device(frame).device_type,
         (int)meshdock_frame_device(frame).device_id, n);
  for (i = 0; i < n; ++i) {
    meshdock_array_info a;
    char dt[16];
    int32_t k;
    uint64_t count = 1, j;
    a.struct_size = sizeof a;
    status = meshdock_frame_array(frame, i, &a);
    if (status != MESHDOCK_OK) break;
    printf("%s %s (", a.name, dtype_name(a.dtype, dt, sizeof dt));
    for (k = 0; k < a.ndim; ++k) {
      printf(k ? ", %" PRId64 : "%" PRId64, a.shape[k]);
      count *= (uint64_t)a.shape[k];
    }
    printf(a.ndim == 1 ? ",)" : ")");
    if (a.device.device_type == kDLCPU || a.device.device_type == kDLCUDAHost) {
      printf(" first");
      for (j = 0; j < count && j < 6; ++j) printf(" %.15g", value_at(&a, j));
    }
    printf("\n");
  }
  /* The points as a DLPack 1.0 tensor: it holds the frame's lease after the frame is gone. */
  if (status == MESHDOCK_OK && meshdock_frame_array_index(frame, "points", &i) == MESHDOCK_OK) {
    status = meshdock_frame_array_dlpack(frame, i, &tensor);
  }
  meshdock_frame_release(frame);
  if (tensor) {
    printf("dlpack points v%u.%u ndim %d shape0 %" PRId64 " flags %" PRIu64 "\n",
           (unsigned)tensor->version.major, (unsigned)tensor->version.minor,
           (int)tensor->dl_tensor.ndim, tensor->dl_tensor.shape[0], tensor->flags);
    tensor->deleter(tensor);
  }
  meshdock_slot_release(slot);
  if (status != MESHDOCK_OK) return fail("frame", status);
  return 0;
}
