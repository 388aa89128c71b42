/* libmeshdock's C ABI from plain C99 (no C++ anywhere in this translation unit): version,
 * errors, reading a reference mesh, DLPack tensors and their deleters, building a mesh from
 * caller arrays (borrow + release callbacks), write + re-read, payloads, attach timeout and
 * interruption, the protocol cross-checks.
 *
 *   test_c_api DATA_DIR TMP_DIR      (ctest passes tests/data and the build's tests dir)
 *
 * Checks: c_check.h (each failure prints the expression, the line and meshdock_last_error());
 * the exit status is the number of failures (0: pass).
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c_check.h"
#include "meshdock/meshdock.h"

static const char* data_dir;
static const char* tmp_dir;

static int contains(const char* haystack, const char* needle) {
  return haystack && needle && strstr(haystack, needle) != NULL;
}

static meshdock_array_info array_info(const meshdock_mesh* m, const char* name) {
  meshdock_array_info a;
  size_t i = (size_t)-1;
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  CHECK_OK(meshdock_mesh_array_index(m, name, &i));
  CHECK_OK(meshdock_mesh_array(m, i, &a));
  return a;
}

static double sum_f64(const meshdock_array_info* a) {
  const double* p = (const double*)a->data;
  double s = 0;
  uint64_t i, n = a->nbytes / 8;
  for (i = 0; i < n; ++i) s += p[i];
  return s;
}

static double sum_i64(const meshdock_array_info* a) {
  const int64_t* p = (const int64_t*)a->data;
  double s = 0;
  uint64_t i, n = a->nbytes / 8;
  for (i = 0; i < n; ++i) s += (double)p[i];
  return s;
}

/* ---- version and errors ------------------------------------------------------------------- */
static void test_version_and_errors(void) {
  meshdock_mesh* m = (meshdock_mesh*)&m; /* poisoned: a failing call must set it to NULL */
  char path[4096];
  CHECK(meshdock_abi_version() == MESHDOCK_ABI_VERSION);
  CHECK((meshdock_abi_version() >> 16) == 1);
  CHECK((meshdock_abi_version() & 0xffff) >= 1); /* 1.1: the capsule helpers */
  CHECK(strcmp(meshdock_status_name(MESHDOCK_ERR_PRODUCER_GONE), "MESHDOCK_ERR_PRODUCER_GONE") ==
        0);
  CHECK(strcmp(meshdock_status_name(12345), "MESHDOCK_ERR_UNKNOWN") == 0);
  /* 1.3: the control plane's codes (libmeshdock_producer), and its failures in this channel. */
  CHECK((meshdock_abi_version() & 0xffff) >= 3);
  CHECK(strcmp(meshdock_status_name(MESHDOCK_ERR_UNAVAILABLE), "MESHDOCK_ERR_UNAVAILABLE") == 0);
  CHECK(strcmp(meshdock_status_name(MESHDOCK_ERR_REFUSED), "MESHDOCK_ERR_REFUSED") == 0);
  CHECK(meshdock_set_error(MESHDOCK_ERR_PERMISSION_DENIED, "a test's words") ==
        MESHDOCK_ERR_PERMISSION_DENIED);
  CHECK(meshdock_last_status() == MESHDOCK_ERR_PERMISSION_DENIED);
  CHECK(strcmp(meshdock_last_error(), "a test's words") == 0);
  CHECK(meshdock_set_error(MESHDOCK_ERR_RESOURCE_EXHAUSTED, NULL) ==
        MESHDOCK_ERR_RESOURCE_EXHAUSTED);
  CHECK(strcmp(meshdock_last_error(), "") == 0);

  CHECK(meshdock_mesh_read(NULL, NULL, &m) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(m == NULL);
  CHECK(contains(meshdock_last_error(), "path"));

  snprintf(path, sizeof path, "%s/meshes/no-such-file.msh", data_dir);
  CHECK(meshdock_mesh_read(path, "", &m) == MESHDOCK_ERR_READ);
  CHECK(m == NULL);
  CHECK(contains(meshdock_last_error(), "no-such-file.msh"));

  /* A successful call leaves the message alone. */
  CHECK(meshdock_abi_version() != 0);
  CHECK(contains(meshdock_last_error(), "no-such-file.msh"));

  CHECK(meshdock_mesh_array(NULL, 0, NULL) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "mesh"));
}

/* ---- read a reference mesh ---------------------------------------------------------------- */
static void test_read_reference(void) {
  /* tests/data/meshes/REFERENCE.json (meshio's reading): box.v41.msh has 300 float64 points
   * summing to 300.17935979290843, six triangle blocks (52, 52, 84, 84, 118, 118) and 935
   * tetra; block 0's connectivity sums to 8680, block 6's to 724000; field_data inlet [2, 2]. */
  static const int64_t block_cells[7] = {52, 52, 84, 84, 118, 118, 935};
  meshdock_mesh* m = NULL;
  meshdock_array_info pts, c0, c6, inlet;
  meshdock_block_info b;
  meshdock_region_info r;
  size_t i, n_regions;
  int found_inlet = 0;
  char path[4096];
  snprintf(path, sizeof path, "%s/meshes/box.v41.msh", data_dir);
  CHECK_OK(meshdock_mesh_read(path, NULL, &m));
  if (!m) return;

  pts = array_info(m, "points");
  CHECK(pts.role == MESHDOCK_ROLE_POINTS);
  CHECK(pts.ndim == 2 && pts.shape[0] == 300 && pts.shape[1] == 3);
  CHECK(pts.strides[0] == 3 && pts.strides[1] == 1);
  CHECK(pts.dtype.code == kDLFloat && pts.dtype.bits == 64 && pts.dtype.lanes == 1);
  CHECK(pts.device.device_type == kDLCPU);
  CHECK(pts.nbytes == 300 * 3 * 8);
  CHECK(fabs(sum_f64(&pts) - 300.17935979290843) < 1e-9);
  /* The first node of the file: (0, 0, 0.4). */
  CHECK(((const double*)pts.data)[0] == 0.0 && ((const double*)pts.data)[1] == 0.0 &&
        fabs(((const double*)pts.data)[2] - 0.4) < 1e-12);

  CHECK(meshdock_mesh_block_count(m) == 7);
  for (i = 0; i < 7 && i < meshdock_mesh_block_count(m); ++i) {
    b.struct_size = sizeof b;
    CHECK_OK(meshdock_mesh_block(m, i, &b));
    CHECK(strcmp(b.type, i < 6 ? "triangle" : "tetra") == 0);
    CHECK(b.num_cells == block_cells[i]);
    CHECK(b.connectivity >= 0 && b.offsets == -1 && b.face_offsets == -1);
  }
  b.struct_size = sizeof b;
  CHECK(meshdock_mesh_block(m, 7, &b) == MESHDOCK_ERR_NOT_FOUND);
  CHECK(contains(meshdock_last_error(), "block 7"));

  c0 = array_info(m, "cells/0");
  c6 = array_info(m, "cells/6");
  CHECK(c0.role == MESHDOCK_ROLE_CELLS && c0.block == 0);
  CHECK(c6.ndim == 2 && c6.shape[0] == 935 && c6.shape[1] == 4 && c6.block == 6);
  CHECK(c0.dtype.code == kDLInt && c0.dtype.bits == 64);
  CHECK(sum_i64(&c0) == 8680.0);
  CHECK(sum_i64(&c6) == 724000.0);

  inlet = array_info(m, "field_data/inlet");
  CHECK(inlet.role == MESHDOCK_ROLE_FIELD_DATA && strcmp(inlet.key, "inlet") == 0);
  CHECK(inlet.nbytes == 16 && ((const int64_t*)inlet.data)[0] == 2 &&
        ((const int64_t*)inlet.data)[1] == 2);

  /* Gmsh physical groups become regions. */
  n_regions = meshdock_mesh_region_count(m);
  CHECK(n_regions == 4);
  for (i = 0; i < n_regions; ++i) {
    r.struct_size = sizeof r;
    CHECK_OK(meshdock_mesh_region(m, i, &r));
    if (strcmp(r.name, "inlet") == 0) {
      meshdock_array_info e;
      found_inlet = 1;
      CHECK(r.dim == 2 && r.tag == 2 && strcmp(r.kind, "cell") == 0);
      e.struct_size = sizeof e;
      CHECK_OK(meshdock_mesh_array(m, (size_t)r.entries, &e));
      CHECK(e.role == MESHDOCK_ROLE_REGION && e.shape[0] == 52);
    }
  }
  CHECK(found_inlet);
  CHECK(meshdock_mesh_notes(m) != NULL);
  CHECK(meshdock_mesh_array_index(m, "nope", &i) == MESHDOCK_ERR_NOT_FOUND);
  CHECK(contains(meshdock_last_error(), "nope"));
  meshdock_mesh_release(m);
}

/* ---- DLPack ------------------------------------------------------------------------------- */
static void test_dlpack(void) {
  meshdock_mesh* m = NULL;
  DLManagedTensorVersioned* t = NULL;
  DLManagedTensor* legacy = NULL;
  DLManagedTensorVersioned* none = (DLManagedTensorVersioned*)&legacy;
  meshdock_array_info pts;
  size_t i = 0;
  double first_z;
  char path[4096];
  snprintf(path, sizeof path, "%s/meshes/box.v41.msh", data_dir);
  CHECK_OK(meshdock_mesh_read(path, "msh", &m));
  if (!m) return;
  pts = array_info(m, "points");
  CHECK_OK(meshdock_mesh_array_index(m, "points", &i));
  CHECK_OK(meshdock_mesh_array_dlpack(m, i, &t));
  CHECK_OK(meshdock_mesh_array_dlpack_legacy(m, i, &legacy));
  CHECK(meshdock_mesh_array_dlpack(m, 9999, &none) == MESHDOCK_ERR_NOT_FOUND);
  CHECK(none == NULL && contains(meshdock_last_error(), "9999"));
  meshdock_mesh_release(m); /* the tensors keep the buffer */
  CHECK(t != NULL && legacy != NULL);
  if (!t || !legacy) return;
  CHECK(t->version.major == 1 && t->version.minor == 0);
  CHECK(t->flags == 0); /* writable */
  CHECK(t->deleter != NULL && legacy->deleter != NULL);
  CHECK(t->dl_tensor.data == pts.data && legacy->dl_tensor.data == pts.data);
  CHECK(t->dl_tensor.device.device_type == kDLCPU && t->dl_tensor.device.device_id == 0);
  CHECK(t->dl_tensor.ndim == 2 && t->dl_tensor.shape[0] == 300 && t->dl_tensor.shape[1] == 3);
  CHECK(t->dl_tensor.strides[0] == 3 && t->dl_tensor.strides[1] == 1);
  CHECK(t->dl_tensor.dtype.code == kDLFloat && t->dl_tensor.dtype.bits == 64);
  CHECK(t->dl_tensor.byte_offset == 0);
  CHECK(legacy->dl_tensor.ndim == 2 && legacy->dl_tensor.shape[1] == 3);
  /* The memory is still there after the mesh is gone. */
  first_z = ((const double*)t->dl_tensor.data)[2];
  CHECK(fabs(first_z - 0.4) < 1e-12);
  t->deleter(t);
  CHECK(fabs(((const double*)legacy->dl_tensor.data)[2] - 0.4) < 1e-12);
  legacy->deleter(legacy);
}

/* ---- build a mesh from caller arrays, write it, read it back ------------------------------ */
static int released[16];
static void on_release(void* ctx) {
  ++released[(int)(size_t)ctx];
}

static DLTensor host_tensor(void* data, uint8_t code, uint8_t bits, int32_t ndim, int64_t* shape) {
  DLTensor t;
  memset(&t, 0, sizeof t);
  t.data = data;
  t.device.device_type = kDLCPU;
  t.device.device_id = 0;
  t.ndim = ndim;
  t.dtype.code = code;
  t.dtype.bits = bits;
  t.dtype.lanes = 1;
  t.shape = shape;
  t.strides = NULL;
  t.byte_offset = 0;
  return t;
}

static void test_build_write_reread(void) {
  double points[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  int64_t tet[1][4] = {{0, 1, 2, 3}};
  double temperature[4] = {10.5, 20.5, 30.5, 40.5};
  int64_t material[1] = {7};
  int64_t region_cells[1] = {0};
  int64_t shape_pts[2] = {4, 3}, shape_tet[2] = {1, 4}, shape_t[1] = {4}, shape_c[1] = {1};
  int64_t bad_strides[2] = {1, 4};
  DLTensor t_pts = host_tensor(points, kDLFloat, 64, 2, shape_pts);
  DLTensor t_tet = host_tensor(tet, kDLInt, 64, 2, shape_tet);
  DLTensor t_temp = host_tensor(temperature, kDLFloat, 64, 1, shape_t);
  DLTensor t_mat = host_tensor(material, kDLInt, 64, 1, shape_c);
  DLTensor t_reg = host_tensor(region_cells, kDLInt, 64, 1, shape_c);
  DLTensor t_bad = t_pts;
  meshdock_mesh *m = NULL, *back = NULL;
  meshdock_payload* p = NULL;
  meshdock_payload_options po;
  meshdock_write_options wo;
  meshdock_strings* notes = NULL;
  meshdock_array_info a;
  meshdock_block_info b;
  meshdock_region_info r;
  DLManagedTensorVersioned* t = NULL;
  char path[4096];
  size_t i;

  memset(released, 0, sizeof released);
  CHECK_OK(meshdock_mesh_new(&m));
  if (!m) return;
  CHECK(meshdock_mesh_array_count(m) == 0);

  /* A failing setter releases at once and leaves the mesh unchanged. */
  t_bad.strides = bad_strides;
  CHECK(meshdock_mesh_set_points(m, &t_bad, on_release, (void*)(size_t)9) ==
        MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "points") && contains(meshdock_last_error(), "contiguous"));
  CHECK(released[9] == 1);
  CHECK(meshdock_mesh_add_region(m, "r", "volume", 3, 1, &t_reg, on_release, (void*)(size_t)10) ==
        MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "volume"));
  CHECK(released[10] == 1);
  CHECK(meshdock_mesh_array_count(m) == 0);

  CHECK_OK(meshdock_mesh_set_points(m, &t_pts, on_release, (void*)(size_t)1));
  CHECK_OK(
      meshdock_mesh_add_cell_block(m, "tetra", &t_tet, NULL, NULL, on_release, (void*)(size_t)2));
  CHECK_OK(meshdock_mesh_set_point_data(m, "T", &t_temp, on_release, (void*)(size_t)3));
  CHECK_OK(meshdock_mesh_add_cell_data(m, "material", &t_mat, on_release, (void*)(size_t)4));
  CHECK_OK(
      meshdock_mesh_add_region(m, "solid", "cell", 3, 5, &t_reg, on_release, (void*)(size_t)5));
  CHECK(meshdock_mesh_array_count(m) == 5);
  CHECK(released[1] == 0 && released[2] == 0 && released[5] == 0); /* still borrowed */

  /* The mesh views the caller's memory (no copy). */
  a = array_info(m, "points");
  CHECK(a.data == (void*)points && a.shape[0] == 4);
  a = array_info(m, "cell_data/material/0");
  CHECK(a.role == MESHDOCK_ROLE_CELL_DATA && a.block == 0 && strcmp(a.key, "material") == 0);

  /* Write and read back through the C++ writers and readers. */
  snprintf(path, sizeof path, "%s/test_c_api_%ld.vtu", tmp_dir, (long)getpid());
  meshdock_write_options_init(&wo);
  wo.encoding = "ascii";
  CHECK_OK(meshdock_mesh_write(m, path, &wo, &notes));
  CHECK(notes != NULL);
  meshdock_strings_release(notes);
  wo.format = "bogus";
  CHECK(meshdock_mesh_write(m, path, &wo, NULL) != MESHDOCK_OK);
  CHECK(contains(meshdock_last_error(), "bogus"));
  CHECK_OK(meshdock_mesh_read(path, NULL, &back));
  if (back) {
    a = array_info(back, "points");
    CHECK(a.shape[0] == 4 && a.shape[1] == 3 && ((const double*)a.data)[9] == 0.0 &&
          ((const double*)a.data)[11] == 1.0 && ((const double*)a.data)[3] == 1.0);
    a = array_info(back, "cells/0");
    CHECK(a.nbytes == 32 && ((const int64_t*)a.data)[3] == 3);
    a = array_info(back, "point_data/T");
    CHECK(a.shape[0] == 4 && ((const double*)a.data)[3] == 40.5);
    CHECK(meshdock_mesh_region_count(back) == 1);
    r.struct_size = sizeof r;
    CHECK_OK(meshdock_mesh_region(back, 0, &r));
    CHECK(strcmp(r.name, "solid") == 0 && r.dim == 3 && r.tag == 5);
    b.struct_size = sizeof b;
    CHECK_OK(meshdock_mesh_block(back, 0, &b));
    CHECK(strcmp(b.type, "tetra") == 0 && b.num_cells == 1);
    meshdock_mesh_release(back);
  }
  remove(path);

  /* A payload: float32 casts (a copy, noted), int32 casts the connectivity. */
  meshdock_payload_options_init(&po);
  po.float32 = 1;
  po.int32 = 1;
  CHECK_OK(meshdock_payload_build(m, &po, &p));
  if (p) {
    CHECK(meshdock_payload_device(p).device_type == kDLCPU);
    CHECK_OK(meshdock_payload_array_index(p, "points", &i));
    a.struct_size = sizeof a;
    CHECK_OK(meshdock_payload_array(p, i, &a));
    CHECK(a.dtype.code == kDLFloat && a.dtype.bits == 32 && a.nbytes == 48);
    CHECK(((const float*)a.data)[11] == 1.0f);
    CHECK_OK(meshdock_payload_array_index(p, "cells/0", &i));
    CHECK_OK(meshdock_payload_array(p, i, &a));
    CHECK(a.dtype.bits == 32 && ((const int32_t*)a.data)[3] == 3);
    CHECK_OK(meshdock_payload_array_dlpack(p, i, &t));
    CHECK(meshdock_payload_block_count(p) == 1 && meshdock_payload_region_count(p) == 1);
    CHECK(meshdock_strings_count(meshdock_payload_list(p, MESHDOCK_PAYLOAD_NOTES)) > 0);
    CHECK(meshdock_payload_list(p, 99) == NULL);
    CHECK_OK(meshdock_payload_array_index(p, "block_bases", &i));
    meshdock_payload_release(p);
    p = NULL;
  }
  /* zero_copy_only with a downcast fails naming what it would copy. */
  po.zero_copy_only = 1;
  CHECK(meshdock_payload_build(m, &po, &p) == MESHDOCK_ERR_PAYLOAD);
  CHECK(p == NULL);
  CHECK(strlen(meshdock_last_error()) > 0);

  /* An uncast payload shares the caller's memory; releasing the mesh leaves it borrowed. */
  meshdock_payload_options_init(&po);
  CHECK_OK(meshdock_payload_build(m, &po, &p));
  meshdock_mesh_release(m);
  CHECK(released[1] == 0); /* the payload still shares the points */
  CHECK(released[4] == 1 || released[4] == 0);
  meshdock_payload_release(p);
  CHECK(released[1] == 1 && released[2] == 1 && released[3] == 1 && released[4] == 1 &&
        released[5] == 1);
  /* The int32 tensor outlived its payload and the mesh (it is a copy). */
  if (t) {
    CHECK(((const int32_t*)t->dl_tensor.data)[3] == 3);
    t->deleter(t);
  }
}

/* ---- Python capsule helpers (ABI 1.1), with a stand-in for CPython's capsule API --------- */
typedef struct fake_capsule {
  void* pointer;
  const char* name;
  void (*destructor)(void*);
} fake_capsule;
static fake_capsule capsules[4];
static int capsules_made = 0;
static int fail_new = 0;

static int fake_is_valid(void* c, const char* name) {
  fake_capsule* f = (fake_capsule*)c;
  return f && f->pointer && f->name && strcmp(f->name, name) == 0;
}
static void* fake_pointer(void* c, const char* name) {
  return fake_is_valid(c, name) ? ((fake_capsule*)c)->pointer : NULL;
}
static void* fake_new(void* pointer, const char* name, void (*destructor)(void*)) {
  fake_capsule* f;
  if (fail_new || capsules_made == 4) return NULL; /* CPython: MemoryError set */
  f = &capsules[capsules_made++];
  f->pointer = pointer;
  f->name = name;
  f->destructor = destructor;
  return f;
}
static const char* raised_type = NULL;
static char raised[256];
static void fake_set_string(void* type, const char* message) {
  raised_type = (const char*)type;
  snprintf(raised, sizeof raised, "%s", message);
}
static void fake_collect(fake_capsule* f) { /* what CPython does when the refcount drops */
  if (f->destructor) f->destructor(f);
}

static void test_capsules(void) {
  double points[4][3] = {{0, 0, 0}, {1, 0, 0}, {0, 1, 0}, {0, 0, 1}};
  int64_t shape_pts[2] = {4, 3};
  DLTensor t_pts = host_tensor(points, kDLFloat, 64, 2, shape_pts);
  meshdock_mesh* m = NULL;
  fake_capsule *v, *l, *used;
  DLManagedTensor* taken;

  memset(released, 0, sizeof released);
  CHECK_OK(meshdock_mesh_new(&m));
  if (!m) return;
  CHECK_OK(meshdock_mesh_set_points(m, &t_pts, on_release, (void*)(size_t)11));
  /* Before the binding hands over CPython's functions: UNSUPPORTED, and the destructor is a
   * no-op. */
  CHECK(meshdock_mesh_array_capsule(m, 0, 1) == NULL);
  CHECK(meshdock_last_status() == MESHDOCK_ERR_UNSUPPORTED);
  CHECK(contains(meshdock_last_error(), "meshdock_dlpack_capsule_api"));
  meshdock_dlpack_capsule_destructor(NULL);

  meshdock_dlpack_capsule_api(fake_is_valid, fake_pointer, fake_new);
  v = (fake_capsule*)meshdock_mesh_array_capsule(m, 0, 1);
  l = (fake_capsule*)meshdock_mesh_array_capsule(m, 0, 0);
  used = (fake_capsule*)meshdock_mesh_array_capsule(m, 0, 0);
  CHECK(v && l && used);
  if (!v || !l || !used) return;
  CHECK(strcmp(v->name, "dltensor_versioned") == 0 && strcmp(l->name, "dltensor") == 0);
  CHECK(v->destructor == meshdock_dlpack_capsule_destructor);
  CHECK(((DLManagedTensorVersioned*)v->pointer)->version.major == 1);
  CHECK(((DLManagedTensorVersioned*)v->pointer)->dl_tensor.data == (void*)points);
  CHECK(((DLManagedTensor*)l->pointer)->dl_tensor.data == (void*)points);
  /* A bad index: NULL with the status and a message naming it; nothing leaks. */
  CHECK(meshdock_mesh_array_capsule(m, 77, 1) == NULL);
  CHECK(meshdock_last_status() == MESHDOCK_ERR_NOT_FOUND && contains(meshdock_last_error(), "77"));
  /* With the binding's error hook, the failure is raised as its exception with the message. */
  meshdock_dlpack_capsule_errors(fake_set_string, (void*)"CapsuleError");
  CHECK(meshdock_mesh_array_capsule(m, 78, 0) == NULL);
  CHECK(raised_type && strcmp(raised_type, "CapsuleError") == 0 && contains(raised, "78"));
  meshdock_dlpack_capsule_errors(NULL, NULL);
  raised_type = NULL;
  /* capsule_new failing (MemoryError in CPython): NULL, the tensor deleted at once, OOM. */
  fail_new = 1;
  CHECK(meshdock_mesh_array_capsule(m, 0, 1) == NULL);
  CHECK(meshdock_last_status() == MESHDOCK_ERR_OOM && raised_type == NULL);
  fail_new = 0;

  meshdock_mesh_release(m); /* the three capsules keep the borrowed points */
  CHECK(released[11] == 0);
  /* A consumer takes `used` the DLPack way: renames it and calls the deleter itself later. */
  taken = (DLManagedTensor*)used->pointer;
  used->name = "used_dltensor";
  fake_collect(used); /* must not run the deleter: the consumer owns it */
  fake_collect(v);
  fake_collect(l);
  CHECK(released[11] == 0);
  taken->deleter(taken);
  CHECK(released[11] == 1); /* exactly once: no double delete through the renamed capsule */
  meshdock_dlpack_capsule_api(NULL, NULL, NULL);
  CHECK(meshdock_mesh_array_capsule(NULL, 0, 1) == NULL);
}

/* ---- attach ------------------------------------------------------------------------------- */
static int interrupt_calls = 0;
static int interrupt_after_three(void* user) {
  int* calls = (int*)user;
  return ++*calls >= 3;
}

static void test_attach_timeout_and_interrupt(void) {
  meshdock_attach_options o;
  meshdock_slot* slot = (meshdock_slot*)&o;
  char name[64];
  double t0, dt;
  snprintf(name, sizeof name, "c-api-missing-%ld", (long)getpid());

  meshdock_attach_options_init(&o);
  CHECK(o.struct_size == sizeof o && o.timeout_ms == 5000 && o.producer_timeout_ms == 1000);
  o.prefix = "tcapi.";
  o.timeout_ms = 300;
  t0 = now_s();
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_ATTACH_TIMEOUT);
  dt = now_s() - t0;
  CHECK(slot == NULL);
  CHECK(dt >= 0.25 && dt < 2.0);
  CHECK(contains(meshdock_last_error(), name));

  o.timeout_ms = 10000;
  o.interrupt = interrupt_after_three;
  o.interrupt_user = &interrupt_calls;
  t0 = now_s();
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_INTERRUPTED);
  dt = now_s() - t0;
  CHECK(slot == NULL);
  CHECK(interrupt_calls == 3);
  CHECK(dt < 1.0); /* polled every <= 50 ms: three polls, well under a second */
  CHECK(contains(meshdock_last_error(), "interrupted"));

  /* prefix NULL: $MESHDOCK_PREFIX, as a deployment sets it (the timeout names the segment). */
  setenv("MESHDOCK_PREFIX", "tcapienv.", 1);
  o.prefix = NULL;
  o.timeout_ms = 100;
  o.interrupt = NULL;
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_ATTACH_TIMEOUT);
  CHECK(contains(meshdock_last_error(), "tcapienv."));
  unsetenv("MESHDOCK_PREFIX");
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_ATTACH_TIMEOUT);
  CHECK(contains(meshdock_last_error(), "meshdock.") &&
        !contains(meshdock_last_error(), "tcapienv."));

  /* Bad arguments name themselves. */
  CHECK(meshdock_slot_attach(NULL, NULL, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "name"));
  CHECK(meshdock_slot_attach("a/b", &o, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "a/b"));
  setenv("MESHDOCK_PREFIX", "uxknosuch", 1); /* no separator: names would run into it */
  CHECK(meshdock_slot_attach(name, NULL, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "$MESHDOCK_PREFIX 'uxknosuch'"));
  unsetenv("MESHDOCK_PREFIX");
  /* A C caller's prefix is meshdock_attach_options.prefix: the message says so (it named the
   * C++ API's AttachOptions::prefix, which a C program does not have). */
  o.prefix = "uxknosuch";
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "meshdock_attach_options.prefix 'uxknosuch'") &&
        contains(meshdock_last_error(), "'uxknosuch.'"));
  CHECK(!contains(meshdock_last_error(), "AttachOptions::"));
  o.prefix = "bad/prefix.";
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "meshdock_attach_options.prefix: prefix 'bad/prefix.'"));
  o.prefix = NULL;
  o.timeout_ms = -1;
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "timeout_ms"));
  o.struct_size = 0;
  CHECK(meshdock_slot_attach(name, &o, &slot) == MESHDOCK_ERR_INVALID_ARGUMENT);
  CHECK(contains(meshdock_last_error(), "struct_size"));
  CHECK(meshdock_slot_wait(NULL, 0, NULL) == MESHDOCK_ERR_INVALID_ARGUMENT);
}

/* ---- devices, host cache and protocol cross-checks ---------------------------------------- */
static void test_misc(void) {
  char* json = NULL;
  char* s = NULL;
  uint64_t size = 0, bytes = 1;
  CHECK_OK(meshdock_probe_devices(&json));
  CHECK(contains(json, "\"built_with_cuda\"") && contains(json, "\"devices\""));
  meshdock_free(json);
  CHECK_OK(meshdock_release_host_cache(&bytes));
  CHECK_OK(meshdock_debug_control_block_size(3, &size));
  CHECK(size == 433);
  CHECK(meshdock_debug_control_magic() == 0x43495044u);
  CHECK_OK(meshdock_debug_validate_name("bracket", 7));
  CHECK(meshdock_debug_validate_name("a b", 3) == MESHDOCK_ERR_PROTOCOL);
  CHECK(contains(meshdock_last_error(), "slot name"));
  CHECK(meshdock_debug_validate_name("nul\0byte", 8) == MESHDOCK_ERR_PROTOCOL);
  CHECK_OK(meshdock_debug_data_object_name("meshdock.", 9, "golden", 6, 0, 1, &s));
  CHECK(s && strncmp(s, "meshdock.d", 10) == 0 && contains(s, ".s0.v00000001"));
  meshdock_free(s);
  CHECK(meshdock_debug_decode_manifest("{", 1, 4096, &s) == MESHDOCK_ERR_PROTOCOL);
  CHECK(s == NULL && contains(meshdock_last_error(), "manifest"));
  {
    const char* text = "{\"v\":1,\"arrays\":[]}";
    CHECK_OK(meshdock_debug_decode_manifest(text, strlen(text), 4096, &s));
  }
  CHECK(contains(s, "\"arrays\":[]"));
  meshdock_free(s);
  CHECK(meshdock_debug_validate_control_block("xx", 2, &s) == MESHDOCK_ERR_PROTOCOL);
}

/* A producer source (ABI 1.2): a fresh object named for the daemon, writable, its bytes in the
 * file, unlinked when released; sweep leaves a live one alone. */
static void test_source(void) {
  meshdock_source* src = NULL;
  char path[512];
  uint64_t removed = 7;
  FILE* f;
  char back[6] = {0};
  CHECK((meshdock_abi_version() & 0xffff) >= 2);
  CHECK_OK(meshdock_source_create(5, NULL, tmp_dir, &src));
  CHECK(src && strncmp(meshdock_source_name(src), "meshdock-src.", 13) == 0);
  CHECK(meshdock_source_size(src) == 5);
  memcpy(meshdock_source_data(src), "hello", 5);
  snprintf(path, sizeof path, "%s/%s", tmp_dir, meshdock_source_name(src));
  f = fopen(path, "rb");
  CHECK(f != NULL);
  if (f) {
    CHECK(fread(back, 1, 5, f) == 5 && strcmp(back, "hello") == 0);
    fclose(f);
  }
  CHECK_OK(meshdock_source_sweep(tmp_dir, 0.0, &removed));
  CHECK(removed == 0 && access(path, F_OK) == 0); /* held by its maker */
  meshdock_source_release(src);
  CHECK(access(path, F_OK) != 0);
  meshdock_source_release(NULL);
  CHECK(meshdock_source_name(NULL) == NULL && meshdock_source_size(NULL) == 0);
  CHECK(meshdock_source_create(5, NULL, "/nonexistent-dir", &src) == MESHDOCK_ERR_SDK);
  CHECK(src == NULL && contains(meshdock_last_error(), "/nonexistent-dir/meshdock-src."));
  CHECK(meshdock_source_create(5, "/nonexistent.sock", tmp_dir, &src) ==
        MESHDOCK_ERR_INVALID_ARGUMENT);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s DATA_DIR TMP_DIR\n", argv[0]);
    return 2;
  }
  data_dir = argv[1];
  tmp_dir = argv[2];
  test_version_and_errors();
  test_read_reference();
  test_dlpack();
  test_build_write_reread();
  test_capsules();
  test_attach_timeout_and_interrupt();
  test_misc();
  test_source();
  if (failures) {
    fprintf(stderr, "test_c_api: %d check(s) failed\n", failures);
    return failures > 100 ? 100 : failures;
  }
  printf("test_c_api: all checks passed\n");
  return 0;
}
