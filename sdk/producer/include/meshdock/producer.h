/* libmeshdock_producer: publish arrays into meshdockd's slots from C (or any language with an FFI)
 * without speaking gRPC: a field of a loaded mesh (a solver streaming its temperature each step)
 * or a tensor of its own slot (an image, a state vector), which consumers then take as DLPack
 * tensors. The control plane's Publish (proto meshdock/v1) under a C99 ABI; the bytes of a large
 * array travel in a shared-memory object of this process's (meshdock_source, meshdock.h), never
 * in messages, when the daemon is on its Unix socket.
 *
 *   meshdock_producer* p;
 *   if (meshdock_producer_open(NULL, NULL, &p) != MESHDOCK_OK) {   // $MESHDOCK_ADDR or the system socket
 *     fprintf(stderr, "%s\n", meshdock_last_error());
 *     return 1;
 *   }
 *   int64_t shape[1] = {n};
 *   DLTensor t = {temperature, {kDLCPU, 0}, 1, {kDLFloat, 64, 1}, shape, NULL, 0};
 *   uint32_t frame;
 *   meshdock_producer_publish(p, "bracket", "point_data/T", 0, &t, &frame);
 *   meshdock_producer_close(p);
 *
 * Zero copy: meshdock_producer_buffer gives a writable buffer in shared memory; write the array
 * there (a solver's own output array can live in it) and publish a DLTensor whose data points
 * into it: only its name crosses the socket, and the daemon copies the bytes once, into the slot
 * its consumers map.
 *
 * Errors: every call returns MESHDOCK_OK or a meshdock_status (meshdock.h), and sets
 * meshdock_last_error() / meshdock_last_status() (libmeshdock's, thread-local) to what went
 * wrong, naming the slot and field: INVALID_ARGUMENT (an argument of this call; nothing sent),
 * UNSUPPORTED (device memory: copy it to the host first), and the daemon's refusals by its gRPC
 * status: NOT_FOUND (no mesh of that name, no such field), INVALID_ARGUMENT (shape or dtype wrong
 * for the field), RESOURCE_EXHAUSTED (max_decoded_size, device memory), PERMISSION_DENIED (the
 * socket's group, a token), UNAVAILABLE (no daemon answering: the message says why, e.g. the
 * socket's path is missing), REFUSED (a mesh still loading, a CUDA device this host lacks, a
 * deadline passed), SDK (a shared-memory object could not be made: /dev/shm full). No C++
 * exception crosses this ABI.
 *
 * Threads: one handle may be used from several threads; its calls take turns (each publish
 * holds the handle until its reply). Fork: a child must open its own handle.
 *
 * Link with -lmeshdock_producer -lmeshdock (pkg-config meshdock-producer; find_package(meshdock):
 * meshdock::producer). Since libmeshdock ABI 1.3. C++: meshdock/producer.hpp; Fortran:
 * meshdock_producer.f90 (installed beside this header). */
#ifndef MESHDOCK_PRODUCER_H
#define MESHDOCK_PRODUCER_H

#include <stdint.h>

#include "meshdock/meshdock.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct meshdock_producer meshdock_producer;

/* A producer talking to meshdockd at `target`: "unix:PATH" or "HOST:PORT" (NULL or "":
 * $MESHDOCK_ADDR, else unix:/run/meshdock/meshdockd.sock), sending `token` as its bearer token
 * (NULL: $MESHDOCK_TOKEN; "": none). Nothing is sent yet: a daemon that is not there fails the
 * first publish (UNAVAILABLE). Errors: INVALID_ARGUMENT naming a malformed target. */
MESHDOCK_API int meshdock_producer_open(const char* target, const char* token,
                                        meshdock_producer** out);

/* Closes the connection and unlinks this producer's shared-memory objects (the buffers of
 * meshdock_producer_buffer are gone then). NULL: no-op. */
MESHDOCK_API void meshdock_producer_close(meshdock_producer* producer);

/* Seconds each call may take before it fails with REFUSED ("DEADLINE_EXCEEDED"); 0 (the default):
 * no limit. Negative or not finite: INVALID_ARGUMENT. */
MESHDOCK_API int meshdock_producer_set_timeout(meshdock_producer* producer, double seconds);

/* Publishes `array` as `field` of the mesh `name`: "point_data/NAME" (one row per point) or
 * "cell_data/NAME" (one row per cell of block `block`; on a mesh of several blocks, block 0 with
 * a row per cell of every block is the whole field), replacing what the frame had, or as the
 * tensor of slot `name` with field "tensor" (its first publish makes the slot: see
 * meshdock_producer_publish_tensor). *frame (may be NULL): the frame number consumers see.
 *
 * `array`: host memory (kDLCPU or kDLCUDAHost), 1 to 4 dimensions, C order (strides NULL or
 * compact), dtype int/uint 8-64, float 16-64, bfloat16 or bool with one lane; data + byte_offset.
 * Where the data lies in a buffer of meshdock_producer_buffer, only its name is sent. Otherwise,
 * on the daemon's Unix socket an array over 256 KiB is copied into a shared-memory object this
 * producer keeps for (name, field, block) and reuses, and anything else goes in gRPC messages;
 * when the daemon cannot read this producer's objects (another /dev/shm, not in its group) they
 * are dropped for messages, for good, at the first refusal. The array may be changed once this
 * returns. */
MESHDOCK_API int meshdock_producer_publish(meshdock_producer* producer, const char* name,
                                           const char* field, uint32_t block,
                                           const DLTensor* array, uint32_t* frame);

/* A tensor in a slot of its own (field "tensor"): an image (512, 512, 4) float32 is read by
 * cuda-link's consumers as a texture. Its first publish makes slot `name` on `device` ("auto",
 * "cpu", "cuda:N"; NULL or "": the daemon's default) with `num_slots` ring slots (0: the
 * daemon's default); later ones replace the array, any shape or dtype (device and num_slots are
 * not looked at then). A loaded mesh's name is refused (INVALID_ARGUMENT). */
MESHDOCK_API int meshdock_producer_publish_tensor(meshdock_producer* producer, const char* name,
                                                  const DLTensor* array, const char* device,
                                                  uint32_t num_slots, uint32_t* frame);

/* A writable buffer of at least `bytes` bytes (0: 1) in shared memory, this producer's for
 * (name, field, block): publish a DLTensor whose data lies in it and no bytes are copied on this
 * side. The same buffer comes back for the same key while it is large enough; a larger request,
 * or one after a publish from it failed (the daemon may still be reading it), gives a fresh one,
 * and the old pointer stays valid until then only. Write the next frame after the publish
 * returns. The daemon's Unix socket only (UNSUPPORTED on TCP). Errors: RESOURCE_EXHAUSTED when
 * `bytes` is over the daemon's max_decoded_size (asked with a Stats call), SDK when the object
 * cannot be made (/dev/shm full: "No space left on device"). */
MESHDOCK_API int meshdock_producer_buffer(meshdock_producer* producer, const char* name,
                                          const char* field, uint32_t block, uint64_t bytes,
                                          void** out);

#ifdef __cplusplus
}
#endif

#endif /* MESHDOCK_PRODUCER_H */
