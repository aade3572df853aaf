/* The tinystore backend's publisher: a thread, started at the first grant,
 * that writes each lock's holder record once the lock has been held for
 * PUBLISH_DELAY_US, rewrites it when a heartbeat changed it, and deletes it
 * after the release, on a connection of its own (tb->pub) so lock calls
 * never wait behind a kv commit.  Its queues and every lease's publication
 * state are guarded by tb->st_mu. */
#include "tinystore_int.h"

#include <lockfs/backend_support.h>
#include <string.h>

static gpointer publisher_main(gpointer data);

/* Work for the publisher at DUE (INT64_MIN: now).  st_mu held. */
static void wake_publisher(ts_backend *tb, int64_t due)
{
	if (!tb->publisher && !tb->stop)
		tb->publisher = g_thread_new("lockfs-records", publisher_main, tb);
	else if (due < tb->pub_sleep_until)
		g_cond_signal(&tb->st_cv);
}

static gint by_due(gconstpointer a, gconstpointer b, gpointer unused)
{
	(void)unused;
	const ts_lease *x = a, *y = b;
	if (x->due_us != y->due_us)
		return x->due_us < y->due_us ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Publish LP's record at DUE (or earlier, if it is queued for sooner). st_mu held. */
void ts_queue_publish(ts_backend *tb, ts_lease *lp, int64_t due)
{
	if (tb->stop)
		return;
	if (lp->queued) {
		if (due >= lp->due_us)
			return;
		g_sequence_remove(lp->queued);
	} else {
		g_atomic_int_inc(&lp->refs);
	}
	lp->due_us = due;
	lp->seq = tb->pub_seq++;
	lp->queued = g_sequence_insert_sorted(tb->pubq, lp, by_due, NULL);
	tb->last_queued_us = lockfs_mono_us();
	wake_publisher(tb, due);
}

/* st_mu held; the caller holds a reference too. */
void ts_unqueue_publish(ts_lease *lp)
{
	if (!lp->queued)
		return;
	g_sequence_remove(lp->queued);
	lp->queued = NULL;
	ts_lease_unref(lp);
}

/* Rewrite or delete LP's record now.  st_mu held. */
void ts_queue_work(ts_backend *tb, ts_lease *lp)
{
	if (lp->in_work)
		return;
	lp->in_work = true;
	g_atomic_int_inc(&lp->refs);
	g_queue_push_tail(&tb->work, lp);
	wake_publisher(tb, INT64_MIN);
}

/* A write of LP's record ended well: what it still needs.  st_mu held. */
void ts_after_write(ts_backend *tb, ts_lease *lp)
{
	if ((lp->state == PUB_DONE && lp->delete_wanted) ||
	    (lp->state == PUB_PUBLISHED && lp->dirty && !lp->releasing))
		ts_queue_work(tb, lp);
}

/* LP's lease was let go (released, or broken here): no record is written
 * any more, and one that may exist is the publisher's to delete (after a
 * write under way), read as no lock meanwhile.  st_mu held. */
void ts_let_go(ts_backend *tb, ts_lease *lp)
{
	lp->state = PUB_DONE;
	ts_unqueue_publish(lp);
	ts_forget(tb, lp);
	if (lp->attempted) {
		lp->delete_wanted = true;
		ts_set_released_until(tb, lp, lockfs_mono_us() + tb->ttl_ms * 1000);
		if (lp->writer == W_NONE)
			ts_queue_work(tb, lp);
	}
}

/* The lease may have run out already by our clock (ttl less a fifth since
 * the last renewal was sent, the filesystem's own margin): nothing is
 * written for it, and no release may take its word. */
bool ts_may_have_expired(ts_backend *tb, const ts_lease *lp, int64_t at)
{
	int64_t ttl = tb->ttl_ms * 1000;
	return at >= lp->renewed_us + ttl - ttl / 5;
}

/* The first write of LP's record.  st_mu held; let go meanwhile. */
static void publish(ts_backend *tb, ts_lease *lp)
{
	if (lp->state != PUB_PENDING || lp->releasing || lp->writer != W_NONE)
		return;
	/* Its renewal queues it again. */
	if (ts_may_have_expired(tb, lp, lockfs_mono_us()))
		return;
	lp->writer = W_PUBLISHER;
	lp->attempted = true;
	lp->dirty = false;
	GByteArray *value = ts_record_encode(&lp->rec);
	g_mutex_unlock(&tb->st_mu);
	char version[TS_VERSION_MAX + 1];
	/* A ttl from now: the record outlives the lease by the time since
	 * the grant, never the other way round. */
	int r = ts_write_record(tb, &tb->pub, lockfs_mono_us() + tb->timeout_us, lp->key, value,
	                        (uint64_t)tb->ttl_ms, lp->rec.lease, lp->rec.fence, version);
	g_byte_array_unref(value);
	g_mutex_lock(&tb->st_mu);
	lp->writer = W_NONE;
	if (r == 0) {
		strcpy(lp->version, version);
		lp->written = true;
		if (lp->failures)
			lockfs_log(G_LOG_LEVEL_INFO, lp->key,
			           "tinystore: the holder record of %s is written", lp->key);
		lp->failures = 0;
		if (lp->state == PUB_PENDING)
			lp->state = PUB_PUBLISHED;
		ts_after_write(tb, lp);
		return;
	}
	if (r == -ESTALE) {
		/* Our lease ran out and the key went on: its renewal will say so. */
		lockfs_log(G_LOG_LEVEL_WARNING, lp->key,
		           "tinystore: a newer holder's record of %s is there; not written",
		           lp->key);
		lp->lost = true;
		lp->delete_wanted = false;
		lp->state = PUB_DONE;
		return;
	}
	if (lp->state == PUB_DONE) {
		if (lp->delete_wanted)
			ts_queue_work(tb, lp); /* the write may have landed */
		return;
	}
	if (lp->releasing)
		return; /* the release decides */
	if (lp->failures++ == 0)
		lockfs_log(G_LOG_LEVEL_WARNING, lp->key,
		           "tinystore: cannot write the holder record of %s; the lock is held, "
		           "but other hosts do not see it until the record is written (retrying)",
		           lp->key);
	int64_t backoff = MIN((int64_t)BACKOFF_MIN_MS << MIN(lp->failures - 1, 5), BACKOFF_MAX_MS);
	ts_queue_publish(tb, lp, lockfs_mono_us() + backoff * 1000);
}

/* Rewrite or delete LP's record, within DEADLINE.  st_mu held; let go
 * meanwhile. */
static void work(ts_backend *tb, ts_lease *lp, int64_t deadline)
{
	if (lp->writer != W_NONE)
		return; /* a heartbeat or renewal writes the latest itself */
	if (lp->state == PUB_DONE && lp->delete_wanted) {
		lp->delete_wanted = false;
		lp->writer = W_PUBLISHER;
		bool known = lp->written;
		g_mutex_unlock(&tb->st_mu);
		int r = ts_delete_record(tb, &tb->pub, deadline, lp, known);
		g_mutex_lock(&tb->st_mu);
		lp->writer = W_NONE;
		lp->written = false;
		/* Still read as released for a while: a list may have fetched the
		 * record just before it went, and looks at it only now. */
		if (r == 0)
			ts_set_released_until(tb, lp, lockfs_mono_us() + tb->timeout_us);
		if (r < 0)
			lockfs_log(
			        G_LOG_LEVEL_WARNING, lp->key,
			        "tinystore: released %s; its holder record stays until it expires",
			        lp->key);
		return;
	}
	if (lp->state != PUB_PUBLISHED || !lp->dirty || lp->releasing)
		return;
	lp->writer = W_PUBLISHER;
	lp->dirty = false;
	GByteArray *value = ts_record_encode(&lp->rec);
	g_mutex_unlock(&tb->st_mu);
	int r = ts_rewrite_record(tb, &tb->pub, deadline, lp, value, (uint64_t)tb->ttl_ms);
	g_byte_array_unref(value);
	g_mutex_lock(&tb->st_mu);
	lp->writer = W_NONE;
	if (r == 0) {
		ts_after_write(tb, lp);
	} else if (r == -ESTALE) {
		lp->lost = true;
		lp->delete_wanted = false;
		lp->state = PUB_DONE;
	} else {
		lp->dirty = true; /* the next renewal writes it */
		if (lp->state == PUB_DONE && lp->delete_wanted)
			ts_queue_work(tb, lp);
	}
}

static gpointer publisher_main(gpointer data)
{
	ts_backend *tb = data;
	g_mutex_lock(&tb->st_mu);
	while (!tb->stop) {
		ts_lease *lp = g_queue_pop_head(&tb->work);
		if (lp) {
			lp->in_work = false;
			work(tb, lp, lockfs_mono_us() + tb->timeout_us);
			ts_lease_unref(lp);
			continue;
		}
		GSequenceIter *first = g_sequence_get_begin_iter(tb->pubq);
		int64_t now = lockfs_mono_us();
		if (g_sequence_iter_is_end(first)) {
			/* While grants keep coming, look again a publication
			 * delay on by ourselves, before any of them is due. */
			tb->pub_sleep_until = now - tb->last_queued_us < G_USEC_PER_SEC
			                              ? now + PUBLISH_DELAY_US
			                              : INT64_MAX;
			if (tb->pub_sleep_until == INT64_MAX)
				g_cond_wait(&tb->st_cv, &tb->st_mu);
			else
				lockfs_cond_wait_until(&tb->st_cv, &tb->st_mu, tb->pub_sleep_until);
			tb->pub_sleep_until = INT64_MIN;
			continue;
		}
		lp = g_sequence_get(first);
		if (lp->due_us > now) {
			tb->pub_sleep_until = lp->due_us;
			lockfs_cond_wait_until(&tb->st_cv, &tb->st_mu, lp->due_us);
			tb->pub_sleep_until = INT64_MIN;
			continue;
		}
		g_sequence_remove(first);
		lp->queued = NULL;
		publish(tb, lp);
		ts_lease_unref(lp);
	}
	/* Unmounting: the records of locks let go are deleted until one
	 * network timeout after destroy began, a write under way included
	 * (they would expire with their ttl anyway); what was not published
	 * yet never will be. */
	int64_t end = tb->stop_deadline;
	ts_lease *lp;
	while ((lp = g_queue_pop_head(&tb->work))) {
		lp->in_work = false;
		if (lp->state == PUB_DONE && lp->delete_wanted && lockfs_mono_us() < end)
			work(tb, lp, end);
		ts_lease_unref(lp);
	}
	g_mutex_unlock(&tb->st_mu);
	return NULL;
}
