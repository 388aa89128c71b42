/* meshdock.h: libmeshdock's stable C99 ABI (libmeshdock.so.1).
 *
 * The same implementation as the C++ API (meshdock/attach.hpp) and the daemon's mesh readers,
 * writers and payload builder, behind opaque handles, so any language with a C FFI (Python's
 * ctypes, Rust, Julia, ...) can attach to a slot, read or write a mesh file and hand arrays out
 * as DLPack 1.0 tensors.
 *
 *   meshdock_slot* slot;  meshdock_frame* frame;
 *   if (meshdock_slot_attach("bracket", NULL, &slot) != MESHDOCK_OK) {
 *     fprintf(stderr, "%s\n", meshdock_last_error());  return 1;
 *   }
 *   if (meshdock_slot_wait(slot, 5000, &frame) == MESHDOCK_OK && frame) {
 *     DLManagedTensorVersioned* t;
 *     meshdock_frame_array_dlpack(frame, 0, &t);   // keeps the frame's lease until t->deleter(t)
 *     meshdock_frame_release(frame);
 *     ...; t->deleter(t);
 *   }
 *   meshdock_slot_release(slot);
 *
 * ---- Conventions ------------------------------------------------------------------------------
 * Status. Every function that can fail returns an int status (enum meshdock_status); 0
 *   (MESHDOCK_OK) is success. On failure, pointer out-parameters (handles, tensors, owned
 *   strings) are set to NULL, other out-parameters are left untouched, and meshdock_last_error()
 *   returns a message naming the argument, file, slot, segment or array. Out-of-range indices
 *   are MESHDOCK_ERR_NOT_FOUND. Pure accessors of a valid handle that cannot fail (counts, names,
 *   numbers) return their value directly; given NULL they return 0 / NULL / -1 as documented.
 *   No C++ exception ever crosses this boundary (std::bad_alloc -> MESHDOCK_ERR_OOM, anything
 *   unexpected -> MESHDOCK_ERR_INTERNAL).
 * Ownership. A function named *_release / *_free takes ownership of what it is given (NULL is
 *   a no-op). Strings and arrays returned as `const` are BORROWED: they stay valid until the
 *   handle they came from is released. `char*` returned through an out-parameter is OWNED by
 *   the caller: free it with meshdock_free(). A DLPack tensor is owned by the caller, who calls
 *   its deleter exactly once; the tensor keeps alive everything it points into (frame and lease,
 *   mesh buffers, payload buffers), so the handle it came from may be released first.
 * Threads. Handles are not locked: use one handle from one thread at a time (a slot waiting on
 *   one thread while another releases it is undefined). Frames, meshes read from files and
 *   payloads are immutable once made and may be read from many threads at once. DLPack deleters
 *   and the caller's release callbacks may run on any thread. meshdock_last_error() is
 *   per thread.
 * Strings are UTF-8, NUL-terminated (the meshdock_debug_* functions take explicit lengths
 *   where the protocol allows any byte).
 * Versioning. meshdock_abi_version() is (major << 16) | minor. A minor bump only adds functions,
 *   enum values and trailing fields of size-prefixed structs; a major bump changes the SONAME
 *   (libmeshdock.so.<major>). Structs a caller passes in or gets filled start with
 *   `size_t struct_size` (set it to sizeof the struct you were compiled with; the library reads or
 *   fills only that many bytes, and defaults what it does not read). Use the *_init functions.
 */
#ifndef MESHDOCK_MESHDOCK_H_
#define MESHDOCK_MESHDOCK_H_

#include <stddef.h>
#include <stdint.h>

#include "meshdock/dlpack.h"

#if defined(_WIN32)
#define MESHDOCK_API
#elif defined(__GNUC__)
#define MESHDOCK_API __attribute__((visibility("default")))
#else
#define MESHDOCK_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Version --------------------------------------------------------------------------------- */
#define MESHDOCK_ABI_VERSION_MAJOR 1
#define MESHDOCK_ABI_VERSION_MINOR                    \
  3 /* 1.1: the Python capsule helpers; 1.2: sources; \
       1.3: the control plane's status codes */
#define MESHDOCK_ABI_VERSION ((MESHDOCK_ABI_VERSION_MAJOR << 16) | MESHDOCK_ABI_VERSION_MINOR)

/* The ABI the loaded library implements: (major << 16) | minor. A caller built against
 * MESHDOCK_ABI_VERSION works with any library of the same major and a minor >= its own. */
MESHDOCK_API uint32_t meshdock_abi_version(void);

/* ---- Status and errors ----------------------------------------------------------------------- */
/* One code per error type of the C++ layers (Python maps each to its exception class). */
/* clang-format off */
enum meshdock_status {
  MESHDOCK_OK = 0,
  MESHDOCK_ERR_SDK = 1,                   /* meshdock::SdkError not covered below (corrupt segment,
                                             lease table full, closed slot, ...)     -> SdkError */
  MESHDOCK_ERR_PRODUCER_GONE = 2,         /* shutdown flag, stale heartbeat          -> ProducerGone */
  MESHDOCK_ERR_ATTACH_TIMEOUT = 3,        /* not published within the attach timeout -> AttachTimeout */
  MESHDOCK_ERR_INTERRUPTED = 4,           /* the interrupt callback returned nonzero -> (KeyboardInterrupt) */
  MESHDOCK_ERR_UNTRUSTED_SEGMENT = 5,     /* a segment owned by an untrusted uid     -> UntrustedSegment */
  MESHDOCK_ERR_SEGMENT_ACCESS_DENIED = 6, /* EACCES opening a segment                -> SegmentAccessDenied */
  MESHDOCK_ERR_PROTOCOL = 7,              /* shm bytes fail validation (debug API)   -> ProtocolError */
  MESHDOCK_ERR_MESH = 8,                  /* inconsistent mesh (mesh::MeshError)     -> MeshError */
  MESHDOCK_ERR_READ = 9,                  /* a file cannot be read (mesh::ReadError) -> ReadError */
  MESHDOCK_ERR_WRITE = 10,                /* a file cannot be written (WriteError)   -> WriteError */
  MESHDOCK_ERR_PAYLOAD = 11,              /* payload::PayloadError (names the array) -> PayloadError */
  MESHDOCK_ERR_INVALID_ARGUMENT = 12,     /* NULL / out of range / malformed argument (names it) */
  MESHDOCK_ERR_NOT_FOUND = 13,            /* no array / entry of that name or index */
  MESHDOCK_ERR_OOM = 14,                  /* std::bad_alloc */
  MESHDOCK_ERR_UNSUPPORTED = 15,          /* valid request this build or handle cannot do */
  MESHDOCK_ERR_INTERNAL = 16,             /* any other failure (a bug: please report it) */
  /* Since ABI 1.3: the daemon's refusals, as libmeshdock_producer (meshdock/producer.h) returns
     them (gRPC status codes of the control plane, docs/protocol.md). */
  MESHDOCK_ERR_UNAVAILABLE = 17,          /* meshdockd is not answering at the address (UNAVAILABLE) */
  MESHDOCK_ERR_PERMISSION_DENIED = 18,    /* the daemon refused this caller (PERMISSION_DENIED,
                                             UNAUTHENTICATED: socket mode, group, token) */
  MESHDOCK_ERR_RESOURCE_EXHAUSTED = 19,   /* over a budget or limit of the daemon's (max_decoded_size,
                                             device memory, connections) */
  MESHDOCK_ERR_REFUSED = 20,              /* refused in the daemon's present state (FAILED_PRECONDITION,
                                             ALREADY_EXISTS, ABORTED: e.g. a mesh still loading, a
                                             CUDA device this host lacks), or its deadline passed
                                             (DEADLINE_EXCEEDED) */
};
/* clang-format on */

/* The message of the last failure on this thread ("" if none yet): names the argument, file,
 * slot or array. Valid until the next meshdock_* call that fails on this thread; successful
 * calls leave it unchanged. Never NULL. */
MESHDOCK_API const char* meshdock_last_error(void);

/* The status of the last failure on this thread (MESHDOCK_OK if none yet), for calls that
 * return a pointer rather than a status (the *_array_capsule functions). Since ABI 1.1. */
MESHDOCK_API int meshdock_last_status(void);

/* Records `status` and `message` as this thread's last failure (what meshdock_last_error and
 * meshdock_last_status then return) and returns `status`: for companion libraries
 * (libmeshdock_producer) whose failures are reported through this one channel. NULL message: "".
 * Since ABI 1.3. */
MESHDOCK_API int meshdock_set_error(int status, const char* message);

/* "MESHDOCK_OK", "MESHDOCK_ERR_PRODUCER_GONE", ...; "MESHDOCK_ERR_UNKNOWN" for other values.
 * Static storage. */
MESHDOCK_API const char* meshdock_status_name(int status);

/* Frees a char* the library returned through an out-parameter (NULL: no-op). */
MESHDOCK_API void meshdock_free(void* p);

/* ---- String lists ---------------------------------------------------------------------------- */
/* An immutable list of strings (notes, cell types, ...). Borrowed ones (from an accessor) live as
 * long as their handle; owned ones (from meshdock_mesh_write) are released by the caller. */
typedef struct meshdock_strings meshdock_strings;
MESHDOCK_API size_t meshdock_strings_count(const meshdock_strings* list); /* NULL: 0 */
MESHDOCK_API const char* meshdock_strings_get(const meshdock_strings* list,
                                              size_t i); /* out of range: NULL */
MESHDOCK_API void meshdock_strings_release(meshdock_strings* list);

/* ---- Arrays (shared by frames, meshes and payloads) ------------------------------------------ */
/* What an array is for. Names: see each handle's section. */
enum meshdock_role {
  MESHDOCK_ROLE_POINTS = 0,       /* (n, dim) */
  MESHDOCK_ROLE_CELLS = 1,        /* connectivity of block `block` */
  MESHDOCK_ROLE_OFFSETS = 2,      /* ragged block `block`: cell c is connectivity[o[c]..o[c+1]) */
  MESHDOCK_ROLE_FACE_OFFSETS = 3, /* polyhedron block `block`: face offsets */
  MESHDOCK_ROLE_BLOCK_BASES = 4,  /* (blocks + 1,): first global cell number of each block */
  MESHDOCK_ROLE_POINT_DATA = 5,   /* key: the field name */
  MESHDOCK_ROLE_CELL_DATA = 6,    /* key: the field name; the part for block `block` */
  MESHDOCK_ROLE_FIELD_DATA = 7,   /* key: the field name; always host memory */
  MESHDOCK_ROLE_REGION = 8,       /* key: the region name; its entries */
  MESHDOCK_ROLE_TENSOR = 9        /* a single-array publish: the slot's one array, "tensor" */
};

/* One array, where it is. Pointers are borrowed from the handle the info came from.
 * Set struct_size = sizeof(meshdock_array_info) before the call. */
typedef struct meshdock_array_info {
  size_t struct_size;
  const char* name; /* e.g. "cell_data/T/0"; unique within its handle except repeated
                       region names (see meshdock_mesh) */
  int32_t role;     /* enum meshdock_role */
  const char* key;  /* point/cell/field data or region name; "" otherwise */
  int32_t block;    /* cell block index, -1 when the array belongs to no block */
  void* data;       /* host address, or device pointer (device.device_type 2) */
  DLDevice device;  /* kDLCPU (1) or kDLCUDA (2), device id */
  DLDataType dtype; /* DLPack (code, bits, lanes); code 6 = bool */
  int32_t ndim;
  const int64_t* shape;   /* ndim entries (may be NULL when ndim is 0) */
  const int64_t* strides; /* ndim entries, in elements (C-contiguous here); NULL only when
                             ndim is 0 */
  uint64_t nbytes;        /* product(shape) * bits / 8 * lanes */
} meshdock_array_info;

/* ---- Attach: slots and frames ---------------------------------------------------------------- */
typedef struct meshdock_slot meshdock_slot;
typedef struct meshdock_frame meshdock_frame;

/* Polled on the waiting thread at least every 50 ms while attach looks for the segments and
 * while wait sleeps (and before each sleep); nonzero stops the call with
 * MESHDOCK_ERR_INTERRUPTED. Python passes a callback that checks for signals (Ctrl-C). */
typedef int (*meshdock_interrupt_fn)(void* user);

typedef struct meshdock_attach_options {
  size_t struct_size;          /* sizeof(meshdock_attach_options) */
  const char* prefix;          /* shared-memory name prefix; NULL: $MESHDOCK_PREFIX when set
                                  and not empty, else "meshdock." */
  int64_t timeout_ms;          /* attach: wait this long for the slot's segments (default
                                  5000; must be >= 0); its first frame may still be on its
                                  way: meshdock_slot_wait gives it */
  int64_t producer_timeout_ms; /* a heartbeat older than this = producer gone (default 1000) */
  int reattach;                /* nonzero: wait() rides over a producer restart (new frame
                                  numbers) instead of failing with PRODUCER_GONE */
  int has_owner_uid;           /* nonzero: segments must belong to owner_uid; zero: the
                                  default trust rule of attach.hpp ($MESHDOCK_DAEMON_UID, the
                                  socket's owner, this uid or root) */
  uint32_t owner_uid;
  meshdock_interrupt_fn interrupt; /* NULL: never interrupted; used by attach AND later waits */
  void* interrupt_user;            /* passed to interrupt; must outlive the slot */
} meshdock_attach_options;

/* Fills the defaults above and struct_size. */
MESHDOCK_API void meshdock_attach_options_init(meshdock_attach_options* options);

/* Attaches to slot `name` (shared memory /<prefix><name>), waiting up to options->timeout_ms
 * for it to be published. options NULL: defaults. Errors: ATTACH_TIMEOUT, UNTRUSTED_SEGMENT,
 * SEGMENT_ACCESS_DENIED, PRODUCER_GONE, INTERRUPTED, SDK (a corrupt segment: names the field),
 * INVALID_ARGUMENT (bad name, prefix or options). */
MESHDOCK_API int meshdock_slot_attach(const char* name, const meshdock_attach_options* options,
                                      meshdock_slot** out);

/* The newest frame this slot has not returned yet; sleeps on the futex until one is published.
 * timeout_ms < 0: wait without deadline (still interruptible). No frame by the deadline:
 * returns MESHDOCK_OK with *out = NULL. Errors: PRODUCER_GONE (with reattach: when no live
 * producer published the name again by the deadline), SDK (corrupt segment, lease table full),
 * INTERRUPTED. The frame holds a lease on its ring slot until it and every tensor made from it
 * are released. */
MESHDOCK_API int meshdock_slot_wait(meshdock_slot* slot, int64_t timeout_ms, meshdock_frame** out);

/* The newest frame published, whether or not this slot returned it already (a dataset reading
 * the current mesh for every item); waits like meshdock_slot_wait only while none is published
 * yet. Same results and errors as meshdock_slot_wait. */
MESHDOCK_API int meshdock_slot_latest(meshdock_slot* slot, int64_t timeout_ms,
                                      meshdock_frame** out);

/* MESHDOCK_OK while the producer is alive, else PRODUCER_GONE with the reason. */
MESHDOCK_API int meshdock_slot_check_producer(const meshdock_slot* slot);

/* Frames already taken (and their tensors) stay valid after the slot is released. */
MESHDOCK_API void meshdock_slot_release(meshdock_slot* slot);

MESHDOCK_API const char* meshdock_slot_name(const meshdock_slot* slot);
MESHDOCK_API uint32_t meshdock_slot_write_idx(const meshdock_slot* slot); /* frames published */
MESHDOCK_API uint32_t meshdock_slot_num_slots(const meshdock_slot* slot);
MESHDOCK_API int32_t meshdock_slot_device_type(const meshdock_slot* slot); /* 1 host, 2 CUDA */
/* The producer's CLOCK_MONOTONIC seconds at its newest publish. */
MESHDOCK_API double meshdock_slot_publish_time(const meshdock_slot* slot);
/* How many times wait() attached again to a new producer (reattach only). */
MESHDOCK_API uint32_t meshdock_slot_reattaches(const meshdock_slot* slot);

/* Drops this handle; the lease is held until every tensor made from the frame is gone too. */
MESHDOCK_API void meshdock_frame_release(meshdock_frame* frame);

MESHDOCK_API uint64_t meshdock_frame_number(const meshdock_frame* frame);
MESHDOCK_API uint32_t meshdock_frame_slot_index(const meshdock_frame* frame);
MESHDOCK_API DLDevice meshdock_frame_device(const meshdock_frame* frame);
/* The frame's manifest, canonical JSON (shm/manifest.hpp; protocol.py decodes it): arrays,
 * cell_types, block_bases, regions (name, kind, dim, tag, array), field_data, notes, derived,
 * dropped. Borrowed. */
MESHDOCK_API const char* meshdock_frame_manifest_json(const meshdock_frame* frame);

/* Arrays, in manifest order; names as the manifest has them ("points", "cells/0",
 * "block_bases", "point_data/<name>", "cell_data/<name>/<block>", the region arrays named in
 * the manifest's regions). */
MESHDOCK_API size_t meshdock_frame_array_count(const meshdock_frame* frame);
MESHDOCK_API int meshdock_frame_array(const meshdock_frame* frame, size_t index,
                                      meshdock_array_info* info);
/* NOT_FOUND naming the array when the frame has none of that name. */
MESHDOCK_API int meshdock_frame_array_index(const meshdock_frame* frame, const char* name,
                                            size_t* index);
/* A new DLPack 1.0 tensor of array `index` (one allocation; no lookups by name). Its deleter
 * keeps the frame and its lease alive. flags = 0: host slots are mapped copy-on-write, so
 * in-place writes work and stay private to this process (never READ_ONLY). */
MESHDOCK_API int meshdock_frame_array_dlpack(const meshdock_frame* frame, size_t index,
                                             DLManagedTensorVersioned** out);
/* The same as a pre-1.0 DLManagedTensor, for consumers that only take "dltensor" capsules. */
MESHDOCK_API int meshdock_frame_array_dlpack_legacy(const meshdock_frame* frame, size_t index,
                                                    DLManagedTensor** out);
/* CUDA slots: makes `stream` (a cudaStream_t; 0 or 1 = the legacy default stream, 2 = the
 * calling thread's per-thread default stream) wait for the slot's upload event, without a host
 * synchronisation. Host slots: no-op, MESHDOCK_OK. The stream is remembered: when the frame's
 * last owner goes (meshdock_frame_release, the last DLPack deleter), the frame's lease is kept
 * until the work queued on it by then is done (the slot's next wait / latest looks; the slot's
 * last owner, meshdock_slot_release or the last frame, waits for it). Stream 2 ordered on one
 * thread and ended on another is waited for on the legacy default stream. */
MESHDOCK_API int meshdock_frame_order_after_upload(const meshdock_frame* frame, uintptr_t stream);

/* ---- In-process meshes ----------------------------------------------------------------------- */
/* A Mesh (DESIGN.md "Data model"): read from a file, or built from the caller's arrays.
 * Array names: "points", "cells/<b>", "cells/<b>/offsets", "cells/<b>/face_offsets",
 * "point_data/<name>", "cell_data/<name>/<b>", "field_data/<name>", "regions/<name>" (a region
 * name may repeat across dimensions: *_array_index finds the first; reach a region's entries by
 * index through meshdock_mesh_region). All host memory (kDLCPU). */
typedef struct meshdock_mesh meshdock_mesh;

/* Reads `path` with the C++ readers; `format` ("msh", "vtu", "vtp", "vts", "vtr", "vti",
 * "pvtu", "pvtp", "pvts", "pvtr", "pvti" (their pieces beside them), "vtk", "stl", "obj", "ply",
 * "off", "mesh" / "meshb" / "medit" (Medit: ascii or binary, told by content), "inp" (Abaqus, its
 * *INCLUDEs beside it, or AVS UCD as deal.II writes it: told by content), "abaqus", "avs" / "ucd" /
 * "avsucd" (AVS UCD ascii), "su2" (SU2: zone 1 of a multi-zone file), "e" / "exo" / "ex2" /
 * "exodus" (Exodus II, netCDF classic; a netCDF-4 / HDF5 file is a READ error saying how to
 * convert it), "bdf" / "nas" / "fem" / "nastran" (Nastran bulk data), "node" / "ele" / "tetgen"
 * (TetGen: the .node and .ele files of one base name, read from either; the other beside it),
 * "dat" / "tec" / "tecplot" (Tecplot ASCII: finite-element and ordered I, J, K zones, every zone
 * a block), "ugrid" (UGRID: ascii, or binary by the name's suffix: x.b8.ugrid, x.lb4.ugrid,
 * x.r8.ugrid ...), "f3grid" / "flac3d" (FLAC3D grid, ascii or binary told by content),
 * "vol" / "netgen" (Netgen; x.vol.gz gzipped, inflated to at most the daemon's max_bytes),
 * "ansys" / "fluent" (ANSYS Fluent mesh; a .msh whose first byte is '(' is read as one),
 * "mdpa" (Kratos Multiphysics model part; SubModelParts as point and cell regions),
 * "xml" / "dolfin-xml" (DOLFIN XML, x.xml.gz gzipped; the mesh functions x_<name>.xml beside
 * x.xml too), "post" / "dato" / "permas" (PERMAS; x.post.gz / x.dato.gz gzipped; $NSET / $ESET
 * as point / cell regions), "neuroglancer" (Neuroglancer's legacy precomputed mesh; such files
 * have no extension, so the format must be given))
 * NULL or "": by extension.
 * Errors: READ (names the file and line or byte offset), INVALID_ARGUMENT, OOM. */
MESHDOCK_API int meshdock_mesh_read(const char* path, const char* format, meshdock_mesh** out);
/* An empty mesh to fill with the setters below. */
MESHDOCK_API int meshdock_mesh_new(meshdock_mesh** out);
/* Arrays already handed out as tensors stay valid; borrowed arrays are released (callbacks run)
 * when nothing made from the mesh uses them any more. */
MESHDOCK_API void meshdock_mesh_release(meshdock_mesh* mesh);

MESHDOCK_API size_t meshdock_mesh_array_count(const meshdock_mesh* mesh);
MESHDOCK_API int meshdock_mesh_array(const meshdock_mesh* mesh, size_t index,
                                     meshdock_array_info* info);
MESHDOCK_API int meshdock_mesh_array_index(const meshdock_mesh* mesh, const char* name,
                                           size_t* index);
/* Tensors share the array's buffer (no copy) and keep it alive; flags 0 (writable). */
MESHDOCK_API int meshdock_mesh_array_dlpack(const meshdock_mesh* mesh, size_t index,
                                            DLManagedTensorVersioned** out);
MESHDOCK_API int meshdock_mesh_array_dlpack_legacy(const meshdock_mesh* mesh, size_t index,
                                                   DLManagedTensor** out);

/* One cell block. Array fields are indices into the mesh's (or payload's) arrays, -1 absent. */
typedef struct meshdock_block_info {
  size_t struct_size;
  const char* type; /* meshio's name: "tetra", "hexahedron27", "polygon", "polyhedron" */
  int64_t num_cells;
  int64_t connectivity; /* fixed: (n, nodes_per_cell); ragged: flat (total,) */
  int64_t offsets;      /* ragged blocks (polygon, polyhedron) only */
  int64_t face_offsets; /* polyhedron blocks only */
} meshdock_block_info;

/* One named set. kind: "point" | "cell" | "side" (side entries are (cell, local facet) pairs). */
typedef struct meshdock_region_info {
  size_t struct_size;
  const char* name;
  const char* kind;
  int32_t dim;
  int64_t tag;
  int64_t entries; /* array index, -1 when absent */
} meshdock_region_info;

MESHDOCK_API size_t meshdock_mesh_block_count(const meshdock_mesh* mesh);
MESHDOCK_API int meshdock_mesh_block(const meshdock_mesh* mesh, size_t block,
                                     meshdock_block_info* info);
MESHDOCK_API size_t meshdock_mesh_region_count(const meshdock_mesh* mesh);
MESHDOCK_API int meshdock_mesh_region(const meshdock_mesh* mesh, size_t region,
                                      meshdock_region_info* info);
/* Lossy steps the reader took (Python warns them). Borrowed. */
MESHDOCK_API const meshdock_strings* meshdock_mesh_notes(const meshdock_mesh* mesh);

/* -- Building a mesh from the caller's arrays (no copies) --
 * Each setter BORROWS the host memory `t` describes (kDLCPU or kDLCUDAHost; C-contiguous:
 * strides NULL or contiguous; byte_offset honoured; lanes 1; any dtype code, including complex
 * (5): the writer or payload builder that cannot take it names the array). The library reads
 * t's fields during the call only; the memory itself must stay valid until `release(ctx)` runs.
 * `release` (may be NULL) is called exactly once, on any thread, when the library no longer
 * uses the memory: when the mesh and everything made from it (payloads, tensors) are gone, or
 * before the setter returns when it fails. A setter that fails leaves the mesh unchanged.
 * Errors: INVALID_ARGUMENT naming the array ("point_data 'T' is not C-contiguous"). */
typedef void (*meshdock_release_fn)(void* ctx);

MESHDOCK_API int meshdock_mesh_set_points(meshdock_mesh* mesh, const DLTensor* t,
                                          meshdock_release_fn release, void* ctx);
/* Appends a block. offsets / face_offsets NULL unless ragged. `release(ctx)` runs once, after the
 * last of the (up to) three arrays is dropped. */
MESHDOCK_API int meshdock_mesh_add_cell_block(meshdock_mesh* mesh, const char* type,
                                              const DLTensor* connectivity, const DLTensor* offsets,
                                              const DLTensor* face_offsets,
                                              meshdock_release_fn release, void* ctx);
/* Sets (replaces) point_data[name]. */
MESHDOCK_API int meshdock_mesh_set_point_data(meshdock_mesh* mesh, const char* name,
                                              const DLTensor* t, meshdock_release_fn release,
                                              void* ctx);
/* Appends the next part (block order) of cell_data[name]. */
MESHDOCK_API int meshdock_mesh_add_cell_data(meshdock_mesh* mesh, const char* name,
                                             const DLTensor* t, meshdock_release_fn release,
                                             void* ctx);
/* Sets (replaces) field_data[name]. */
MESHDOCK_API int meshdock_mesh_set_field_data(meshdock_mesh* mesh, const char* name,
                                              const DLTensor* t, meshdock_release_fn release,
                                              void* ctx);
/* Appends a region; kind "point" | "cell" | "side"; entries may be NULL (no entries array). */
MESHDOCK_API int meshdock_mesh_add_region(meshdock_mesh* mesh, const char* name, const char* kind,
                                          int32_t dim, int64_t tag, const DLTensor* entries,
                                          meshdock_release_fn release, void* ctx);

typedef struct meshdock_write_options {
  size_t struct_size;   /* sizeof(meshdock_write_options) */
  const char* format;   /* "vtu" | "vtp" | "msh" (4.1) | "msh22" (2.2) | "vtk" | "stl" | "obj" |
                           "ply" | "off" | "mesh" / "meshb" (Medit ascii / binary; "medit": by
                           the extension) | "inp" (Abaqus) | "su2" | "exo" / "e" / "ex2"
                           (Exodus II, netCDF CDF-2) | "bdf" (Nastran, free field) | "dat" /
                           "tec" (Tecplot ASCII) | "avs" / "ucd" / "avsucd" (AVS UCD) | "node" /
                           "ele" / "tetgen" (TetGen: x.node and x.ele both written) | "ugrid"
                           (the variant by the name: x.b8.ugrid ...) | "f3grid" / "flac3d"
                           (FLAC3D grid) | "vol" / "netgen" (Netgen; x.vol.gz gzipped) |
                           "ansys" (ANSYS Fluent as meshio writes it: no faces) | "fluent"
                           (as Fluent writes it: faces with their cells; both never by .msh,
                           Gmsh's) |
                           "mdpa" (Kratos as meshio writes it; regions as SubModelParts) |
                           "kratos" (.mdpa as Kratos' ModelPartIO reads it: generic Elements
                           and Conditions, Kratos' data lines);
                           NULL or "": the path's extension */
  const char* encoding; /* vtu, vtp: "ascii" | "raw" | "zlib" (default); msh, msh22, vtk, stl, ply:
                           "ascii" | "binary" (default); obj, off, inp, su2, bdf, dat, avs, node,
                           vol, mdpa: "ascii"; exo: "binary"; ugrid: the name's; f3grid: "ascii"
                           (default) | "binary"; ansys: "binary" (default) | "ascii"; NULL or
                           "": the default */
  int zlib_level;       /* default 6 */
} meshdock_write_options;
MESHDOCK_API void meshdock_write_options_init(meshdock_write_options* options);

/* Writes `mesh` to `path` (replacing it) with the C++ writers; options NULL: defaults.
 * *notes (may be NULL: not returned) receives an OWNED list of the steps that could not keep
 * something; release it. Errors: MESH (inconsistent mesh, names the array), WRITE (names the
 * path, block or value), INVALID_ARGUMENT. */
MESHDOCK_API int meshdock_mesh_write(const meshdock_mesh* mesh, const char* path,
                                     const meshdock_write_options* options,
                                     meshdock_strings** notes);

/* Gives the host buffers the allocator keeps for reuse back to the system; *released (may be
 * NULL) receives their size in bytes. */
MESHDOCK_API int meshdock_release_host_cache(uint64_t* released);

/* ---- Payloads -------------------------------------------------------------------------------- */
/* A host DevicePayload built from a mesh by the C++ builder (DESIGN.md "Data model"). Arrays
 * share memory with the mesh unless a cast copies them. Array names: "points", "cells/<b>",
 * "block_bases", "point_data/<name>", "cell_data/<name>/<b>", "field_data/<name>",
 * "regions/<name>" (see meshdock_mesh for repeated region names). */
typedef struct meshdock_payload meshdock_payload;

typedef struct meshdock_payload_options {
  size_t struct_size; /* sizeof(meshdock_payload_options) */
  int float32;        /* cast every float array to float32 */
  int int32;          /* cast connectivity, block_bases, region entries to int32 (range-checked) */
  int zero_copy_only; /* fail rather than copy */
} meshdock_payload_options;
MESHDOCK_API void meshdock_payload_options_init(meshdock_payload_options* options);

/* options NULL: defaults (all 0). Every array's dtype is checked here: an unsupported one fails
 * now with PAYLOAD naming the array. Errors: PAYLOAD, MESH, INVALID_ARGUMENT, OOM. The payload
 * keeps what it shares with the mesh alive; the mesh may be released first. */
MESHDOCK_API int meshdock_payload_build(const meshdock_mesh* mesh,
                                        const meshdock_payload_options* options,
                                        meshdock_payload** out);
MESHDOCK_API void meshdock_payload_release(meshdock_payload* payload);

MESHDOCK_API DLDevice meshdock_payload_device(const meshdock_payload* payload);
MESHDOCK_API size_t meshdock_payload_array_count(const meshdock_payload* payload);
MESHDOCK_API int meshdock_payload_array(const meshdock_payload* payload, size_t index,
                                        meshdock_array_info* info);
MESHDOCK_API int meshdock_payload_array_index(const meshdock_payload* payload, const char* name,
                                              size_t* index);
/* A new tensor per call; it keeps its buffer alive. flags 0. */
MESHDOCK_API int meshdock_payload_array_dlpack(const meshdock_payload* payload, size_t index,
                                               DLManagedTensorVersioned** out);
MESHDOCK_API int meshdock_payload_array_dlpack_legacy(const meshdock_payload* payload, size_t index,
                                                      DLManagedTensor** out);
/* Kept blocks (offsets / face_offsets always -1: ragged blocks are dropped). */
MESHDOCK_API size_t meshdock_payload_block_count(const meshdock_payload* payload);
MESHDOCK_API int meshdock_payload_block(const meshdock_payload* payload, size_t block,
                                        meshdock_block_info* info);
/* Regions, entries renumbered to the payload's block-major order. */
MESHDOCK_API size_t meshdock_payload_region_count(const meshdock_payload* payload);
MESHDOCK_API int meshdock_payload_region(const meshdock_payload* payload, size_t region,
                                         meshdock_region_info* info);

enum meshdock_payload_list {
  MESHDOCK_PAYLOAD_NOTES = 0,   /* lossy or copying steps: warnings */
  MESHDOCK_PAYLOAD_DERIVED = 1, /* facts, never warned */
  MESHDOCK_PAYLOAD_DROPPED = 2, /* blocks left out ("cells[3] (polyhedron): 12 cells") */
  MESHDOCK_PAYLOAD_SHARED = 3   /* arrays sharing memory with the mesh ("points", ...) */
};
/* Borrowed; NULL for an unknown `which`. */
MESHDOCK_API const meshdock_strings* meshdock_payload_list(const meshdock_payload* payload,
                                                           int which);

/* ---- Python DLPack capsules (since ABI 1.1) -------------------------------------------------- */
/* For a binding that calls this library through a foreign-function layer (Python's ctypes): the
 * capsule protocol needs a PyCapsule per tensor and a destructor when it dies, and making both in
 * C saves two interpreter round trips per array. libmeshdock never links Python: the binding
 * passes the three CPython functions once. Every function here requires the GIL.
 *   is_valid    = PyCapsule_IsValid      (int (PyObject*, const char*))
 *   get_pointer = PyCapsule_GetPointer   (void* (PyObject*, const char*))
 *   capsule_new = PyCapsule_New          (PyObject* (void*, const char*, PyCapsule_Destructor))
 * They are kept for the life of the process (one interpreter per process); NULLs clear them. */
typedef int (*meshdock_pycapsule_is_valid_fn)(void* capsule, const char* name);
typedef void* (*meshdock_pycapsule_pointer_fn)(void* capsule, const char* name);
typedef void* (*meshdock_pycapsule_new_fn)(void* pointer, const char* name,
                                           void (*destructor)(void* capsule));
MESHDOCK_API void meshdock_dlpack_capsule_api(meshdock_pycapsule_is_valid_fn is_valid,
                                              meshdock_pycapsule_pointer_fn get_pointer,
                                              meshdock_pycapsule_new_fn capsule_new);
/* A PyCapsule destructor: an unconsumed "dltensor" / "dltensor_versioned" capsule runs its
 * tensor's deleter; a consumed one (renamed "used_*") is left alone. Never touches the Python
 * exception state, so it is safe while an exception is pending. No-op before
 * meshdock_dlpack_capsule_api. */
MESHDOCK_API void meshdock_dlpack_capsule_destructor(void* capsule);
/* How a failure to make a tensor reaches Python: set_string = PyErr_SetString and an exception
 * type of the binding's (kept alive by it). ctypes cannot take a NULL object result without a
 * Python error set (CPython 3.9-3.11 crash on it), so a binding declaring the capsule functions'
 * result as a Python object must call this. NULLs clear it. */
typedef void (*meshdock_pyerr_set_string_fn)(void* exception_type, const char* message);
MESHDOCK_API void meshdock_dlpack_capsule_errors(meshdock_pyerr_set_string_fn set_string,
                                                 void* exception_type);
/* A new capsule (a new reference) owning a new tensor of array `index`: "dltensor_versioned"
 * (DLManagedTensorVersioned*) when `versioned`, else "dltensor" (DLManagedTensor*), with the
 * destructor above. NULL on failure, always with meshdock_last_status() / meshdock_last_error()
 * saying why (UNSUPPORTED before meshdock_dlpack_capsule_api); a Python error is set too: the
 * binding's exception type with that message (meshdock_dlpack_capsule_errors), or whatever
 * capsule_new raised (the tensor is then deleted). */
MESHDOCK_API void* meshdock_frame_array_capsule(const meshdock_frame* frame, size_t index,
                                                int versioned);
MESHDOCK_API void* meshdock_mesh_array_capsule(const meshdock_mesh* mesh, size_t index,
                                               int versioned);
MESHDOCK_API void* meshdock_payload_array_capsule(const meshdock_payload* payload, size_t index,
                                                  int versioned);

/* ---- Producer sources (since ABI 1.2) ----------------------------------------------------------
 */
/* A producer's shared buffer for Publish's source_shm (meshdock/source.hpp; proto
 * meshdock/v1 PublishChunk): write the array into meshdock_source_data(), then send a PublishSmall
 * whose header names meshdock_source_name() instead of carrying the bytes. The daemon reads the
 * object (only if this process's uid owns it, over its Unix socket) before it replies; rewrite
 * it for the next publish once the reply is in, and make a fresh one after a failed call. The
 * object is /dev/shm/meshdock-src.<pid>.<hex>, readable by the daemon only (mode 0600, or 0640
 * with the daemon's group when the daemon runs as another, non-root user), its pages allocated
 * at once, and unlinked by meshdock_source_release in the process that made it. */
typedef struct meshdock_source meshdock_source;

/* A fresh source of `bytes` (0: 1). `daemon_socket`: the daemon's Unix socket path, whose owner
 * and group say who must read the object (NULL: this user). `dir`: NULL for /dev/shm (tests
 * pass a directory of theirs). Errors: SDK naming the object and the reason (/dev/shm full:
 * "No space left on device"; not a member of the daemon's group), INVALID_ARGUMENT. */
MESHDOCK_API int meshdock_source_create(uint64_t bytes, const char* daemon_socket, const char* dir,
                                        meshdock_source** out);
MESHDOCK_API void* meshdock_source_data(meshdock_source* source);          /* NULL: NULL */
MESHDOCK_API uint64_t meshdock_source_size(const meshdock_source* source); /* NULL: 0 */
/* "meshdock-src.4242.0123456789abcdef": PublishChunk.source_shm. Borrowed. NULL: NULL. */
MESHDOCK_API const char* meshdock_source_name(const meshdock_source* source);
/* Unmaps it, and unlinks it when called in the process that made it. */
MESHDOCK_API void meshdock_source_release(meshdock_source* source);
/* Removes this user's source objects in `dir` (NULL: /dev/shm) that no live process holds and
 * that are older than min_age_seconds (a killed producer's); *removed: how many. SDK naming
 * `dir` when it cannot be read (missing, not a directory, no permission). */
MESHDOCK_API int meshdock_source_sweep(const char* dir, double min_age_seconds, uint64_t* removed);

/* ---- Devices --------------------------------------------------------------------------------- */
/* Which CUDA devices answer this process, as OWNED JSON text (meshdock_free it):
 * {"built_with_cuda":bool,"cuda_status":"ok"|why,"runtime_version":int,"driver_version":int,
 *  "devices":[{"id":0,"name":"...","total_memory":N,"capability":[major,minor]}]}.
 * Never fails except OOM. */
MESHDOCK_API int meshdock_probe_devices(char** json);

/* ---- Protocol cross-checks (tests, debugging) ------------------------------------------------ */
/* The C++ validators of shm_protocol, so a test can check that another implementation (the
 * pure-Python mirror) accepts and rejects exactly the same bytes. JSON results are OWNED
 * (meshdock_free); bytes fields (handles, socket address, manifest) are lowercase hex strings.
 * Validation failures return MESHDOCK_ERR_PROTOCOL with the validator's message. */

/* {"num_slots","version","write_idx","shutdown","metadata":{"width","height","num_comps",
 *  "format_kind","bits","flags","data_size"},"timestamp","mem_handles":[hex],
 *  "event_handles":[hex]} */
MESHDOCK_API int meshdock_debug_validate_control_block(const void* bytes, size_t size, char** json);
/* {"num_slots","page_size","lease_capacity","daemon_pid","device_type","device_id",
 *  "heartbeat_ns","futex","total_size","daemon_uid","socket":hex,
 *  "pages":[{"seq","frame","data_size","buffer_version","manifest":hex}],
 *  "device_uuid":hex (16 bytes; all zero: no GPU named)} */
MESHDOCK_API int meshdock_debug_validate_catalog(const void* bytes, size_t size, char** json);
/* Checks a manifest against a slot buffer of data_size bytes; *canonical: OWNED, re-encoded by
 * the C++ encoder. */
MESHDOCK_API int meshdock_debug_decode_manifest(const char* text, size_t text_size,
                                                uint64_t data_size, char** canonical);
MESHDOCK_API int meshdock_debug_control_block_size(uint32_t num_slots, uint64_t* size);
/* MESHDOCK_OK, or PROTOCOL with the exact message of the C++ rule. */
MESHDOCK_API int meshdock_debug_validate_name(const char* name, size_t name_size);
/* *out: OWNED "<prefix>d<16 hex>.s<slot>.v<8 hex>". */
MESHDOCK_API int meshdock_debug_data_object_name(const char* prefix, size_t prefix_size,
                                                 const char* name, size_t name_size, uint32_t slot,
                                                 uint64_t version, char** out);
MESHDOCK_API uint32_t meshdock_debug_control_magic(void);          /* 0x43495044 ("CIPD") */
MESHDOCK_API uint32_t meshdock_debug_catalog_layout_version(void); /* 2 */

#ifdef __cplusplus
}
#endif

#endif /* MESHDOCK_MESHDOCK_H_ */
