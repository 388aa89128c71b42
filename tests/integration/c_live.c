/* The C ABI against a live slot (plain C99, meshdock.h only): slot getters, a frame's arrays and
 * manifest, tensors outliving their frame, a wait that times out (OK + NULL), a wait stopped by
 * the interrupt callback, bad indices and names naming the frame.
 *
 *   c_live NAME PREFIX      (c_consumer_test.sh runs it against a meshdockd publishing
 * box.v41b.msh)
 *   c_live NAME PREFIX tensor   (tests/python/test_tensor_publish.py: a single-array publish of
 * a (4, 3, 2) float32 tensor holding 0, 1, ..., 23)
 *
 * Exit status: the number of failed checks.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "c_check.h"
#include "meshdock/meshdock.h"

static int polls = 0;
static int stop_after_five(void* user) {
  (void)user;
  return ++polls >= 5;
}

/* Prints the outcome; the exit status is the number of failed checks. */
static int summary(void) {
  if (failures)
    fprintf(stderr, "c_live: %d check(s) failed\n", failures);
  else
    printf("c_live: all checks passed\n");
  return failures;
}

/* A single-array publish: one array, "tensor", role MESHDOCK_ROLE_TENSOR, adopted as DLPack. */
static int check_tensor_slot(const char* name, const char* prefix) {
  meshdock_attach_options o;
  meshdock_slot* slot = NULL;
  meshdock_frame* frame = NULL;
  DLManagedTensorVersioned* t = NULL;
  meshdock_array_info a;
  size_t i = 99;
  meshdock_attach_options_init(&o);
  o.prefix = prefix;
  o.timeout_ms = 5000;
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_OK);
  if (!slot) return 100;
  CHECK(meshdock_slot_wait(slot, 2000, &frame) == MESHDOCK_OK && frame != NULL);
  if (!frame) return 100;
  CHECK(meshdock_frame_array_count(frame) == 1);
  CHECK(meshdock_frame_array_index(frame, "tensor", &i) == MESHDOCK_OK && i == 0);
  CHECK(meshdock_frame_array_index(frame, "points", &i) == MESHDOCK_ERR_NOT_FOUND);
  a.struct_size = sizeof a;
  CHECK(meshdock_frame_array(frame, 0, &a) == MESHDOCK_OK);
  CHECK(a.role == MESHDOCK_ROLE_TENSOR && a.block == -1 && strcmp(a.name, "tensor") == 0);
  CHECK(a.ndim == 3 && a.shape[0] == 4 && a.shape[1] == 3 && a.shape[2] == 2);
  CHECK(a.dtype.code == kDLFloat && a.dtype.bits == 32 && a.nbytes == 96);
  CHECK(meshdock_frame_array_dlpack(frame, 0, &t) == MESHDOCK_OK);
  meshdock_frame_release(frame);
  if (t) {
    const float* v = (const float*)t->dl_tensor.data;
    int k, ok = 1;
    for (k = 0; k < 24; ++k) ok = ok && v[k] == (float)k;
    CHECK(ok);
    CHECK(t->dl_tensor.ndim == 3 && t->dl_tensor.shape[2] == 2);
    t->deleter(t);
  }
  meshdock_slot_release(slot);
  return summary();
}

int main(int argc, char** argv) {
  meshdock_attach_options o;
  meshdock_slot* slot = NULL;
  meshdock_frame* frame = NULL;
  meshdock_frame* again = (meshdock_frame*)&o;
  DLManagedTensorVersioned* t = NULL;
  DLManagedTensor* legacy = NULL;
  meshdock_array_info a;
  size_t i = 0, n;
  double t0, dt;
  const char* manifest;
  if (argc == 4 && strcmp(argv[3], "tensor") == 0) return check_tensor_slot(argv[1], argv[2]);
  if (argc != 3) {
    fprintf(stderr, "usage: %s NAME PREFIX [tensor]\n", argv[0]);
    return 100;
  }
  meshdock_attach_options_init(&o);
  o.prefix = argv[2];
  o.timeout_ms = 5000;
  o.interrupt = stop_after_five;
  CHECK(meshdock_slot_attach(argv[1], &o, &slot) == MESHDOCK_OK);
  if (!slot) return 100;
  polls = -1000000; /* attach done: do not stop the first waits */

  CHECK(strcmp(meshdock_slot_name(slot), argv[1]) == 0);
  CHECK(meshdock_slot_num_slots(slot) >= 1);
  CHECK(meshdock_slot_write_idx(slot) >= 1);
  CHECK(meshdock_slot_device_type(slot) == kDLCPU);
  CHECK(meshdock_slot_publish_time(slot) > 0.0);
  CHECK(meshdock_slot_reattaches(slot) == 0);
  CHECK(meshdock_slot_check_producer(slot) == MESHDOCK_OK);

  CHECK(meshdock_slot_wait(slot, 2000, &frame) == MESHDOCK_OK);
  CHECK(frame != NULL);
  if (!frame) return 100;
  CHECK(meshdock_frame_number(frame) == meshdock_slot_write_idx(slot));
  CHECK(meshdock_frame_slot_index(frame) < meshdock_slot_num_slots(slot));
  CHECK(meshdock_frame_device(frame).device_type == kDLCPU);
  manifest = meshdock_frame_manifest_json(frame);
  CHECK(manifest && strstr(manifest, "\"cell_types\":[\"triangle\""));
  CHECK(meshdock_frame_manifest_json(frame) == manifest); /* encoded once */
  n = meshdock_frame_array_count(frame);
  CHECK(n == 28);

  /* Roles and keys come from the manifest. */
  CHECK(meshdock_frame_array_index(frame, "cell_data/gmsh:physical/6", &i) == MESHDOCK_OK);
  a.struct_size = sizeof a;
  CHECK(meshdock_frame_array(frame, i, &a) == MESHDOCK_OK);
  CHECK(a.role == MESHDOCK_ROLE_CELL_DATA && a.block == 6 && strcmp(a.key, "gmsh:physical") == 0);
  CHECK(a.shape[0] == 935 && a.strides[0] == 1 && a.nbytes == 935 * 8);
  CHECK(meshdock_frame_array_index(frame, "regions/inlet", &i) == MESHDOCK_OK);
  CHECK(meshdock_frame_array(frame, i, &a) == MESHDOCK_OK);
  CHECK(a.role == MESHDOCK_ROLE_REGION && strcmp(a.key, "inlet") == 0 && a.shape[0] == 52);

  /* Errors name the frame and the array. */
  CHECK(meshdock_frame_array_index(frame, "nope", &i) == MESHDOCK_ERR_NOT_FOUND);
  CHECK(strstr(meshdock_last_error(), "nope") && strstr(meshdock_last_error(), argv[1]));
  CHECK(meshdock_frame_array(frame, n, &a) == MESHDOCK_ERR_NOT_FOUND);
  CHECK(meshdock_frame_order_after_upload(frame, 0) == MESHDOCK_OK); /* host: no-op */

  /* Tensors of the points outlive the frame handle: they hold the lease and the mapping. */
  CHECK(meshdock_frame_array_index(frame, "points", &i) == MESHDOCK_OK);
  CHECK(meshdock_frame_array_dlpack(frame, i, &t) == MESHDOCK_OK);
  CHECK(meshdock_frame_array_dlpack_legacy(frame, i, &legacy) == MESHDOCK_OK);
  meshdock_frame_release(frame);
  if (t && legacy) {
    double* p = (double*)t->dl_tensor.data;
    CHECK(t->version.major == 1 && t->flags == 0);
    CHECK(t->dl_tensor.shape[0] == 300 && legacy->dl_tensor.shape[1] == 3);
    CHECK(p[2] == 0.4);
    p[2] = -1.0; /* copy-on-write: private to this process */
    CHECK(((double*)legacy->dl_tensor.data)[2] == -1.0);
    t->deleter(t);
    legacy->deleter(legacy);
  }

  /* No new frame: OK and NULL, by the deadline. */
  t0 = now_s();
  CHECK(meshdock_slot_wait(slot, 200, &again) == MESHDOCK_OK);
  dt = now_s() - t0;
  CHECK(again == NULL);
  CHECK(dt >= 0.15 && dt < 2.0);

  /* latest: that same frame again, at once, under a lease of its own. */
  t0 = now_s();
  CHECK(meshdock_slot_latest(slot, 2000, &again) == MESHDOCK_OK && again != NULL);
  CHECK(now_s() - t0 < 0.5);
  if (again) {
    CHECK(meshdock_frame_number(again) == meshdock_slot_write_idx(slot));
    meshdock_frame_release(again);
    again = NULL;
  }
  CHECK(meshdock_slot_latest(NULL, 0, &again) == MESHDOCK_ERR_INVALID_ARGUMENT);

  /* The attach options' interrupt callback also stops a wait. */
  polls = 0;
  t0 = now_s();
  CHECK(meshdock_slot_wait(slot, 10000, &again) == MESHDOCK_ERR_INTERRUPTED);
  dt = now_s() - t0;
  CHECK(again == NULL && polls == 5 && dt < 1.0);
  CHECK(strstr(meshdock_last_error(), "interrupted") != NULL);

  /* A re-attach to the same slot sees the same (published) frame again. */
  meshdock_slot_release(slot);
  slot = NULL;
  o.interrupt = NULL;
  CHECK(meshdock_slot_attach(argv[1], &o, &slot) == MESHDOCK_OK);
  CHECK(meshdock_slot_wait(slot, 2000, &frame) == MESHDOCK_OK && frame != NULL);
  if (frame) {
    meshdock_array_info p;
    p.struct_size = sizeof p;
    CHECK(meshdock_frame_array_index(frame, "points", &i) == MESHDOCK_OK);
    CHECK(meshdock_frame_array(frame, i, &p) == MESHDOCK_OK);
    CHECK(((const double*)p.data)[2] == 0.4); /* our write above stayed private */
    meshdock_frame_release(frame);
  }
  meshdock_slot_release(slot);
  return summary();
}
