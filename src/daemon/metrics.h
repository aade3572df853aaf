/* .lockfs/metrics: counters, gauges and backend call latencies of this
 * mount, in the Prometheus text exposition format (version 0.0.4).
 *
 * Counters are relaxed atomic additions (one per event, no lock), so the
 * lock path pays a few nanoseconds; gauges are read from the model when the
 * file is opened.  One mount per process: the counters are process-wide. */
#ifndef LOCKFS_METRICS_H
#define LOCKFS_METRICS_H

#include <glib.h>
#include <lockfs/backend.h>
#include <stdatomic.h>
#include <stdint.h>

typedef enum {
	M_ACQ_GRANTED,   /* an acquisition granted */
	M_ACQ_HELD,      /* refused by lockfs: held by another */
	M_ACQ_ERROR,     /* refused: the backend failed (EIO) */
	M_RELEASES,      /* a holder let go (unlink, or at unmount) */
	M_BREAK_REQUEST, /* broken by a user: unlink by another uid, .lockfs/break */
	M_BREAK_STALE,   /* broken as stale: by lockfs, or by an acquisition */
	M_LOSSES,        /* a lease of this mount was lost */
	M_RENEWALS,      /* renewals that succeeded */
	M_RENEW_FAILED,  /* renewals that did not */
	M_HB_SENT,       /* heartbeats (and lock file changes) sent to the backend */
	M_HB_SKIPPED,    /* heartbeats held back by heartbeat_min_interval */
	M_WAIT_WATCHED,  /* a waiting flock/fcntl request tried at once: its key changed */
	M_COUNTERS
} metrics_counter;

extern _Atomic uint64_t lockfs_metrics_counters[M_COUNTERS];

static inline void metrics_count(metrics_counter c)
{
	atomic_fetch_add_explicit(&lockfs_metrics_counters[c], 1, memory_order_relaxed);
}

/* A backend whose every call is timed (lockfs_mono_us) into the latency
 * histogram and tells whether the backend answered; INNER does the work.
 * Its destroy() destroys INNER. */
lockfs_backend *metrics_wrap_backend(lockfs_backend *inner);

/* Whether the backend's last call failed (EIO) less than WITHIN_US ago and
 * none has answered since: a call now would most likely wait for nothing. */
bool metrics_backend_down_lately(int64_t within_us);

/* The gauges the model knows, for metrics_render. */
typedef struct {
	const char *mountpoint;
	const char *backend;
	unsigned locks_held;
	double renewal_age_s; /* the longest a held lease has gone unrenewed */
} metrics_gauges;

/* The whole file, appended to OUT. */
void metrics_render(const metrics_gauges *g, GString *out);

#endif
