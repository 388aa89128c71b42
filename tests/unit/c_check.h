/* The check harness of the plain-C tests of the C ABI (test_c_api.c, c_live.c): each failed
 * CHECK prints the expression, the line and meshdock_last_error() and counts in `failures`; the
 * tests exit with that count. Header-only: each test is one translation unit. */
#ifndef MESHDOCK_TESTS_C_CHECK_H_
#define MESHDOCK_TESTS_C_CHECK_H_

#include <stdio.h>
#include <time.h>

#include "meshdock/meshdock.h"

static int failures = 0;

#define CHECK(cond)                                                                           \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; last error: %s\n", __FILE__, __LINE__, #cond, \
              meshdock_last_error());                                                         \
      ++failures;                                                                             \
    }                                                                                         \
  } while (0)

#define CHECK_OK(expr)                                                          \
  do {                                                                          \
    int rc_ = (expr);                                                           \
    if (rc_ != MESHDOCK_OK) {                                                   \
      fprintf(stderr, "%s:%d: %s returned %s: %s\n", __FILE__, __LINE__, #expr, \
              meshdock_status_name(rc_), meshdock_last_error());                \
      ++failures;                                                               \
    }                                                                           \
  } while (0)

/* CLOCK_MONOTONIC seconds (the files define _POSIX_C_SOURCE before including this). */
static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

#endif /* MESHDOCK_TESTS_C_CHECK_H_ */
