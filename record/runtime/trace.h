/* One clock, and tracing zones on it (in the spirit of IREE's
 * IREE_TRACE_ZONE_BEGIN/END): a zone is a span of host time around a phase of
 * work, begun where the work begins and ended where each phase ends, so
 * consecutive phases share one reading of the clock.
 *
 * A zone is live only when its condition holds as it begins (an exec's
 * phase_timing, which crec_exec_profile() sets for its profiled replays), so
 * code outside a profile pays a branch. Built with -DCREC_TRACE=0 the zones
 * compile out entirely (and a profile's host phases then read as never taken). */
#ifndef CREC_TRACE_H
#define CREC_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* Nanoseconds of CLOCK_MONOTONIC: load times, communicator deadlines, zones. */
static inline uint64_t crec__now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#ifndef CREC_TRACE
#define CREC_TRACE 1
#endif

#if CREC_TRACE
typedef struct crec__zone {
  bool live;
  uint64_t start; /* when the phase in progress began */
} crec__zone;

/* Declares zone `z`, begun now when `on` holds (else dead: its ends do nothing). */
#define CREC__ZONE_BEGIN(z, on) crec__zone z = {(on), (on) ? crec__now_ns() : 0}
/* Whether zone `z` is live: what only a live zone does goes under it. */
#define CREC__ZONE_LIVE(z) ((z).live)
/* Ends the phase in progress of live zone `z`, adding its nanoseconds to the
 * uint64_t `ns`; the next phase begins now. */
#define CREC__ZONE_END(z, ns)                     \
  do {                                            \
    if ((z).live) {                               \
      uint64_t now_ = crec__now_ns();             \
      (ns) += now_ - (z).start;                   \
      (z).start = now_;                           \
    }                                             \
  } while (0)
#else
typedef struct crec__zone {
  char unused;
} crec__zone;
#define CREC__ZONE_BEGIN(z, on) crec__zone z = {0}
#define CREC__ZONE_LIVE(z) ((void)(z), false)
#define CREC__ZONE_END(z, ns) ((void)(z))
#endif

#endif
