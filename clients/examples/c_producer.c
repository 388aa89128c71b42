/* A producer in C99 with libmeshdock_producer alone (meshdock/producer.h): streams FRAMES frames of
 * a float64 array into meshdockd, as a solver would stream a field of its mesh each step.
 *
 *   c_producer [--addr ADDR] [--frames N] [--every MS] [--buffer] [--device DEV] NAME FIELD ROWS
 * [COLS]
 *
 * FIELD is "point_data/NAME" or "cell_data/NAME" of the loaded mesh NAME (ROWS: its points or
 * cells), or "tensor" for an array in a slot of its own (made on DEV by the first frame).
 * Frame k holds value k * 1000 + row + col / 4 at (row, col). --buffer writes each frame into the
 * producer's shared-memory buffer (zero copy on this side) instead of an array of its own;
 * --every MS sleeps MS milliseconds between frames (a simulation's step).
 * Prints "frame F" per publish; on failure the status and the daemon's words, exit status 1. */
#define _POSIX_C_SOURCE 199309L /* nanosleep */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "meshdock/producer.h"

static const char kUsage[] =
    "usage: c_producer [--addr ADDR] [--frames N] [--every MS] [--buffer] [--device DEV] NAME "
    "FIELD ROWS [COLS]\n";

static int usage(void) {
  fputs(kUsage, stderr);
  return 2;
}

static void fill(double* v, int64_t rows, int64_t cols, int k) {
  int64_t r, c;
  for (r = 0; r < rows; ++r)
    for (c = 0; c < cols; ++c) v[r * cols + c] = k * 1000.0 + (double)r + (double)c / 4.0;
}

static int failed(const char* what) {
  fprintf(stderr, "c_producer: %s: %s: %s\n", what, meshdock_status_name(meshdock_last_status()),
          meshdock_last_error());
  return 1;
}

int main(int argc, char** argv) {
  const char* addr = NULL;
  const char* device = NULL;
  const char* pos[4];
  int npos = 0, frames = 1, every_ms = 0, use_buffer = 0, i, k, rc = 0;
  int64_t shape[2];
  size_t bytes;
  double* own = NULL;
  void* buffer = NULL;
  meshdock_producer* p = NULL;
  for (i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--help") == 0) {
      fputs(kUsage, stdout);
      return 0;
    } else if (strcmp(argv[i], "--addr") == 0 && i + 1 < argc) {
      addr = argv[++i];
    } else if (strcmp(argv[i], "--frames") == 0 && i + 1 < argc) {
      frames = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--every") == 0 && i + 1 < argc) {
      every_ms = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      device = argv[++i];
    } else if (strcmp(argv[i], "--buffer") == 0) {
      use_buffer = 1;
    } else if (argv[i][0] == '-' || npos == 4) {
      return usage();
    } else {
      pos[npos++] = argv[i];
    }
  }
  if (npos < 3 || frames < 1 || every_ms < 0) return usage();
  shape[0] = atoll(pos[2]);
  shape[1] = npos == 4 ? atoll(pos[3]) : 1;
  if (shape[0] < 1 || shape[1] < 1) return usage();
  bytes = (size_t)(shape[0] * shape[1]) * sizeof(double);

  if (meshdock_producer_open(addr, NULL, &p) != MESHDOCK_OK) return failed("open");
  if (use_buffer) {
    if (meshdock_producer_buffer(p, pos[0], pos[1], 0, bytes, &buffer) != MESHDOCK_OK) {
      rc = failed("buffer");
      goto done;
    }
  } else if (!(own = malloc(bytes))) {
    fprintf(stderr, "c_producer: out of memory\n");
    rc = 1;
    goto done;
  }
  for (k = 0; k < frames; ++k) {
    DLTensor t;
    uint32_t frame = 0;
    int status;
    memset(&t, 0, sizeof t);
    t.data = use_buffer ? buffer : (void*)own;
    t.device.device_type = kDLCPU;
    t.ndim = npos == 4 ? 2 : 1;
    t.dtype.code = kDLFloat;
    t.dtype.bits = 64;
    t.dtype.lanes = 1;
    t.shape = shape;
    fill((double*)t.data, shape[0], shape[1], k); /* after the last publish returned */
    status = strcmp(pos[1], "tensor") == 0
                 ? meshdock_producer_publish_tensor(p, pos[0], &t, device, 0, &frame)
                 : meshdock_producer_publish(p, pos[0], pos[1], 0, &t, &frame);
    if (status != MESHDOCK_OK) {
      rc = failed("publish");
      goto done;
    }
    printf("frame %u\n", frame);
    fflush(stdout);
    if (every_ms && k + 1 < frames) {
      struct timespec pause;
      pause.tv_sec = every_ms / 1000;
      pause.tv_nsec = (long)(every_ms % 1000) * 1000000L;
      nanosleep(&pause, NULL);
    }
  }
done:
  free(own);
  meshdock_producer_close(p); /* unlinks the buffer's object */
  return rc;
}
