// What the fake CUDA runtime (fake_cudart.cpp) holds now, for tests that check the daemon's and
// the SDK's CUDA code leaves nothing behind. Only in builds with MESHDOCK_WITH_CUDA=FAKE.
#pragma once

#ifdef __cplusplus
extern "C" {
#endif

typedef struct meshdock_fake_cuda_stats {
  long device_allocations;  // cudaMalloc'd, not cudaFree'd
  long ipc_mappings;        // cudaIpcOpenMemHandle'd, not closed (each handle counted once)
  long events;              // cudaEventCreate*'d or cudaIpcOpenEventHandle'd, not destroyed
  long pinned;              // cudaHostAlloc'd, not cudaFreeHost'd
  long streams;             // cudaStreamCreate*'d, not destroyed
  long refused;             // calls that returned an error since the process started
  long stream_waits;        // cudaStreamWaitEvent calls on an interprocess event
  long waits_that_waited;   // of those, waits whose stream found the event not reached yet
  char last_refused[96];    // the last refused call and its error code ("cudaSetDevice: 35")
} meshdock_fake_cuda_stats;

void meshdock_fake_cuda_get_stats(meshdock_fake_cuda_stats* out);

#ifdef __cplusplus
}
#endif
