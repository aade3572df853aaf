/* The tinystore backend's own types, shared by its files (tinystore.c, the
 * interface; tinystore_publisher.c, the holder records' publisher).  Not for
 * anything outside src/backends/tinystore/. */
#ifndef LOCKFS_TINYSTORE_INT_H
#define LOCKFS_TINYSTORE_INT_H

#include "tinystore_conn.h"

#include <lockfs/backend.h>

#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
/* A lock gets its holder record once it has been held this long (µs).  Most
 * locks (a mailbox rewritten, a job's guard) are let go sooner than another
 * host could look; they cost no kv commit at all. */
#define PUBLISH_DELAY_US 50000
/* Connections for renewals (and their records' refresh), beside the lock
 * connection: a renewal is two round trips, one call at a time on a
 * connection, and with thousands of locks held one connection cannot
 * carry them within a renew interval (bench/holdmany). */
#define RENEW_CONNS 8

/* A connection and what belongs to it. */
typedef struct {
	const char *role; /* for the log */
	ts_conn *conn;
	uint64_t handle; /* the bucket, on this connection */
	uint64_t gen;    /* connections made so far: names the current one */
	int64_t next_try_us, backoff_ms;
	char *last_error; /* logged once per outage */
} ts_link;

/* Where a lock's holder record stands. */
typedef enum {
	PUB_PENDING,   /* not written (queued, or waiting for a renewal) */
	PUB_PUBLISHED, /* written, at version */
	PUB_DONE,      /* released, broken or lost: never written again */
} pub_state;

typedef enum {
	W_NONE,
	W_PUBLISHER,
	W_CALLER
} pub_writer;

/* A lease held through this backend.  The filesystem's lockfs_lease holds one
 * reference, each publisher queue it is in one more.  key, request, rec.lease
 * and rec.fence never change after acquire; version belongs to the writer of
 * the moment; everything else is guarded by tb->st_mu. */
typedef struct {
	gint refs;
	char *key;
	uint8_t request[TS_ID_SIZE];      /* the hold's idempotency id */
	char version[TS_VERSION_MAX + 1]; /* our record's */
	ts_record rec;                    /* the latest: what the next write writes */
	pub_state state;
	pub_writer writer;     /* who is writing the record right now */
	bool attempted;        /* a write of the record was sent: it may exist */
	bool written;          /* a write of it succeeded (at version) */
	bool dirty;            /* rec changed since it was last written */
	bool releasing;        /* a release or a break is under way: publish nothing */
	bool delete_wanted;    /* released: the publisher deletes the record */
	bool lost;             /* the lease is gone (renewal, or a newer holder's record) */
	int failures;          /* publications that failed in a row */
	int64_t due_us;        /* when to publish it (monotonic) */
	uint64_t seq;          /* ties between equal due times */
	int64_t renewed_us;    /* when the last successful hold or renew was sent */
	uint64_t gen;          /* the main connection that answered it; 0 another */
	GSequenceIter *queued; /* its place in the publication queue */
	bool in_work;          /* in the work queue */
} ts_lease;

typedef struct {
	lockfs_backend base;
	ts_target target;
	char *lock_name;
	char *mount;
	int64_t ttl_ms, timeout_us, stale_after_us;
	size_t key_max;
	/* The server's clock (unix ms) less our boot clock (ms), from the last
	 * WELCOME (atomic): the server's now goes by our boot clock, so a step
	 * of our wall clock moves no judgement of another host's lock. */
	int64_t clock_offset_ms;

	/* Lock calls, inspect and list: one caller at a time on this
	 * connection; waiting for it is bounded too. */
	GMutex mu;
	GCond cv;
	bool busy;
	int waiters; /* for the connection: signalled only when there are */
	ts_link main;

	/* Holder records: the publisher thread, started at the first grant
	 * (a mount that takes no lock needs none), with a connection of its
	 * own so lock calls never wait behind a commit. */
	ts_link pub;
	GThread *publisher;

	/* wait_free()'s holds, which stand in line at the server: a
	 * connection of their own, one wait at a time. */
	GMutex wait_mu;
	ts_link waitl;

	/* held()'s looks, which stand in line up to LOOK_WAIT_MS: a
	 * connection of their own, one look at a time, so that renewals never
	 * wait behind them (clients polling a held flock would starve them). */
	GMutex look_mu;
	ts_link lookl;

	/* Renewals: RENEW_CONNS connections, each one call at a time; a
	 * renewal takes the first that is free (renew_next spreads them). */
	GMutex renew_mu[RENEW_CONNS];
	ts_link renl[RENEW_CONNS];
	unsigned renew_next; /* atomic */
	GMutex st_mu;        /* guards the rest, and the leases' publication state */
	GCond st_cv;
	bool stop;
	int64_t stop_deadline; /* destroy waits for the publisher until then */
	/* When the publisher wakes up by itself: INT64_MIN while it runs (it
	 * looks at its queues before it sleeps again), INT64_MAX when it waits
	 * for a signal.  A grant due later needs no signal: a thread wake-up
	 * per lock cycle is a measurable part of one. */
	int64_t pub_sleep_until;
	int64_t last_queued_us; /* the last publication queued */
	GSequence *pubq;        /* leases to publish, by due time */
	GQueue work;            /* leases whose record to rewrite or delete now */
	uint64_t pub_seq;
	GHashTable *mine;     /* lease id (hex) → ts_lease held through us */
	GHashTable *released; /* lease id (hex) → monotonic µs: records let go of */

	/* Restart grace (check_epoch); touched only with the main connection
	 * held.  The server epoch this instance last settled with the marker,
	 * and until when (monotonic µs) its grants are not used, 0: they are. */
	char *marker_key;
	uint64_t epoch;
	int64_t grace_end_us;
} ts_backend;

/* ---- what this instance holds, and records it let go of (tinystore.c) ---- */

/* Drop a reference to LP; the last frees it. */
void ts_lease_unref(ts_lease *lp);
/* LP is no longer held through TB.  st_mu held. */
void ts_forget(ts_backend *tb, ts_lease *lp);
/* LP's record reads as no lock until UNTIL_MONO.  st_mu held. */
void ts_set_released_until(ts_backend *tb, ts_lease *lp, int64_t until_mono);

/* ---- holder records (tinystore.c) ---- */

int ts_write_record(ts_backend *tb, ts_link *l, int64_t deadline, const char *key,
                    const GByteArray *value, uint64_t ttl_ms, const uint8_t lease[TS_ID_SIZE],
                    const char *fence, char version[TS_VERSION_MAX + 1]);
int ts_rewrite_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp,
                      const GByteArray *value, uint64_t ttl_ms);
int ts_delete_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp, bool known);

/* ---- the publisher (tinystore_publisher.c) ---- */

/* Publish LP's record at DUE (or earlier, if it is queued for sooner). st_mu held. */
void ts_queue_publish(ts_backend *tb, ts_lease *lp, int64_t due);
/* st_mu held; the caller holds a reference too. */
void ts_unqueue_publish(ts_lease *lp);
/* Rewrite or delete LP's record now.  st_mu held. */
void ts_queue_work(ts_backend *tb, ts_lease *lp);
/* A write of LP's record ended well: what it still needs.  st_mu held. */
void ts_after_write(ts_backend *tb, ts_lease *lp);
/* LP's lease was let go (released, or broken here).  st_mu held. */
void ts_let_go(ts_backend *tb, ts_lease *lp);
/* The lease may have run out already by our clock. */
bool ts_may_have_expired(ts_backend *tb, const ts_lease *lp, int64_t at);

#endif
