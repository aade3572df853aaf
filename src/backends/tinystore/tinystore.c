/* The tinystore backend: locks are tinystore leases (locks.hold with wait 0,
 * renewed every renew interval), shared by every host that reaches the same
 * server, and by `tinystore lock DIR hold LOCK KEY` itself.  tinystore has
 * no way to ask who holds a key, so each holder also keeps a record in the
 * key-value store (bucket lockfs-holders, branch [lock_name], key = the lock
 * key) that expires with its lease; inspect, list and break_lock read those.
 *
 * A record costs a kv commit, so it is kept off the path of the lock calls:
 * a publisher thread (tinystore_publisher.c), on a connection of its own,
 * writes it once the lock has been held for PUBLISH_DELAY_US and deletes it
 * after the release.  A lock let go before then never gets one, and its
 * release is one locks.release (see ts_release for why that is safe).
 * A lockfs that stops leaves its leases held, and the next one takes them
 * back by id ("restart" below).
 * See docs/tinystore-protocol.md for every wire fact used here. */
#include "tinystore_int.h"

#include <errno.h>
#include <lockfs/backend_support.h>
#include <lockfs/backends.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define GROUP "tinystore"
#define BUCKET "lockfs-holders"
#define LIST_LIMIT 1000
#define LIST_MAX 100000 /* records one listing may return */
#define ATTEMPTS 3      /* sends of one request across reconnects */
#define PROBE_MS 3000
#define TTL_MIN_MS 1000 /* tinystore's lease bounds */
#define TTL_MAX_MS 3600000
#define KEY_MAX 1024
#define KV_PATH_MAX 1024
/* Restart grace (check_epoch): the marker's key, at the bucket's root (a
 * root key can never be a holder record: those live in branch lock_name),
 * and what the grace adds to ttl for the server's clock as we measure it
 * (WELCOME's now is whole ms). */
#define MARKER_PREFIX "epochs:"
/* Shares of one key held at once (backend.h, "Shared keys"): tinystore's
 * most for a semaphore. */
#define SHARE_LIMIT 1000
/* How long held() stands in line for a lock that may be held only by
 * another host's look, which holds it for a round trip and the time its
 * lockfs takes to send the release: on a loaded host that was seen to pass
 * 20 ms.  At most a quarter of network_timeout. */
#define LOOK_WAIT_MS 100
#define GRACE_MARGIN_MS 50

/* Conflict on a kv write guarded by ifVersion. */
#define E_CONFLICT (-EAGAIN)
/* The connection was gone or broke, and the request was not to be sent again. */
#define E_BROKEN (-EPIPE)

/* A request, built when it is sent: the bucket handle changes with the
 * connection. */
typedef struct {
	const char *key;
	const uint8_t *id; /* lease or request id */
	const void *value;
	size_t value_len;
	uint64_t ttl_ms;
	uint32_t limit;   /* locks.hold: 0 a lock, else a semaphore's ask */
	uint64_t wait_ms; /* locks.hold: 0 takes only a free key */
	const char *if_version;
	const char *after;
	bool root; /* a key at the bucket's root, not in branch lock_name */
} req;

static char *hex_id(const uint8_t id[TS_ID_SIZE])
{
	char *s = g_malloc(TS_ID_SIZE * 2 + 1);
	for (int i = 0; i < TS_ID_SIZE; i++)
		snprintf(s + 2 * i, 3, "%02x", id[i]);
	return s;
}

/* ---- the connections ---- */

static bool take_conn(ts_backend *tb, int64_t deadline)
{
	g_mutex_lock(&tb->mu);
	while (tb->busy) {
		tb->waiters++;
		bool woken = lockfs_cond_wait_until(&tb->cv, &tb->mu, deadline);
		tb->waiters--;
		if (!woken) {
			g_mutex_unlock(&tb->mu);
			return false;
		}
	}
	tb->busy = true;
	g_mutex_unlock(&tb->mu);
	return true;
}

/* A call's deadline, once it has the main connection; 0 when it had to wait
 * too long. */
static int64_t begin(ts_backend *tb)
{
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	return take_conn(tb, deadline) ? deadline : 0;
}

static void give_conn(ts_backend *tb)
{
	g_mutex_lock(&tb->mu);
	tb->busy = false;
	if (tb->waiters)
		g_cond_signal(&tb->cv);
	g_mutex_unlock(&tb->mu);
}

static void drop_conn(ts_link *l)
{
	ts_conn_close(l->conn);
	l->conn = NULL;
	l->handle = 0;
}

static void note_down(ts_link *l, const char *why)
{
	if (g_strcmp0(l->last_error, why) != 0)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "tinystore%s: %s", l->role, why);
	g_free(l->last_error);
	l->last_error = g_strdup(why);
}

static bool open_bucket(ts_link *l, ts_conn *c, int64_t deadline, GError **error)
{
	ts_enc e;
	ts_enc_init(&e);
	ts_enc_bucket_open(&e, BUCKET);
	ts_msg m;
	ts_failure f;
	ts_call_result r =
	        ts_conn_call(c, TS_KV_OPEN, e.buf.data, e.buf.size, deadline, &m, &f, error);
	ts_enc_clear(&e);
	bool ok = r == TS_CALL_OK && ts_handle_decode(&m, &l->handle, error);
	if (r == TS_CALL_FAILED)
		g_set_error(error, TS_ERROR, TS_ERROR_REFUSED, "opening bucket " BUCKET ": %s",
		            f.message);
	ts_failure_clear(&f);
	ts_msg_clear(&m);
	return ok;
}

/* Connect L (again) unless connected, trying up to TRIES times; failures
 * back off, bounded by the deadline. */
static bool ensure_conn(ts_backend *tb, ts_link *l, int64_t deadline, int tries)
{
	for (int i = 0; !l->conn; i++) {
		if (i == tries)
			return false;
		int64_t now = lockfs_mono_us();
		if (now < l->next_try_us) {
			if (l->next_try_us >= deadline)
				return false;
			g_usleep((gulong)(l->next_try_us - now));
		}
		if (lockfs_mono_us() >= deadline)
			return false;
		GError *e = NULL;
		ts_conn *c = ts_conn_open(&tb->target, deadline, &e);
		if (c && !open_bucket(l, c, deadline, &e)) {
			ts_conn_close(c);
			c = NULL;
		}
		if (c) {
			l->conn = c;
			l->gen++;
			__atomic_store_n(&tb->clock_offset_ms, ts_conn_server_ms(c, 0),
			                 __ATOMIC_RELAXED);
			l->backoff_ms = 0;
			l->next_try_us = 0;
			if (l->last_error)
				lockfs_log(G_LOG_LEVEL_INFO, NULL, "tinystore%s: connected again",
				           l->role);
			g_clear_pointer(&l->last_error, g_free);
			return true;
		}
		note_down(l, e->message);
		g_error_free(e);
		l->backoff_ms = CLAMP(l->backoff_ms * 2, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
		l->next_try_us = lockfs_mono_us() + l->backoff_ms * 1000;
	}
	return true;
}

static void build(ts_backend *tb, ts_link *l, uint16_t method, const req *q, ts_enc *e)
{
	switch (method) {
	case TS_LOCKS_HOLD:
		ts_enc_hold(e, tb->lock_name, q->key, q->limit, q->ttl_ms, q->wait_ms, q->id);
		break;
	case TS_LOCKS_RENEW:
		ts_enc_renew(e, q->id, q->ttl_ms);
		break;
	case TS_LOCKS_RELEASE:
		ts_enc_lease(e, q->id);
		break;
	case TS_KV_LIST:
		ts_enc_kv_list(e, l->handle, tb->lock_name, q->after, LIST_LIMIT);
		break;
	default:
		ts_enc_kv_call(e, l->handle, q->root ? NULL : tb->lock_name, q->key, q->value,
		               q->value_len, q->ttl_ms, q->if_version);
	}
}

/* Send Q on L and wait: 0 with *ANS, 1 with *FAIL, or -EIO.  A broken
 * connection is replaced and Q sent again (every request lockfs sends is
 * safe to repeat: holds by their request id; the rest are settled by the
 * callers), unless RESEND is false: then E_BROKEN, also when L has no
 * connection. */
static int rpc(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method, const req *q,
               ts_msg *ans, ts_failure *fail, bool resend)
{
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		if (!resend && !l->conn)
			return E_BROKEN;
		if (!ensure_conn(tb, l, deadline, G_MAXINT))
			return -EIO;
		ts_enc e;
		ts_enc_init(&e);
		build(tb, l, method, q, &e);
		GError *err = NULL;
		ts_call_result r = ts_conn_call(l->conn, method, e.buf.data, e.buf.size, deadline,
		                                ans, fail, &err);
		ts_enc_clear(&e);
		if (r == TS_CALL_OK)
			return 0;
		if (r == TS_CALL_FAILED) {
			/* The server is closing: ask a new connection. */
			if (strcmp(fail->code, "unavailable") != 0 &&
			    strcmp(fail->code, "closed") != 0)
				return 1;
			ts_failure_clear(fail);
			drop_conn(l);
			if (!resend)
				return E_BROKEN;
			continue;
		}
		bool garbage = err->code == TS_ERROR_PROTOCOL;
		note_down(l, err->message);
		g_error_free(err);
		drop_conn(l);
		/* A server that speaks garbage will do it again. */
		if (garbage)
			return -EIO;
		if (!resend)
			return E_BROKEN;
	}
	return -EIO;
}

/* Send Q: 0 with *M to decode, or what the server's Failure means to
 * lockfs (conflict, lost, in_use; invalid is -EINVAL; the rest, logged,
 * -EIO), or -EIO, or E_BROKEN (see rpc). */
static int call(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method, const req *q,
                const char *what, ts_msg *m, bool resend)
{
	static const struct {
		const char *code;
		int err;
	} known[] = { { "conflict", E_CONFLICT }, { "lost", -ESTALE }, { "in_use", -EEXIST } };
	ts_failure f;
	int r = rpc(tb, l, deadline, method, q, m, &f, resend);
	if (r != 1)
		return r;
	r = strcmp(f.code, "invalid") == 0 ? -EINVAL : -EIO;
	for (size_t i = 0; i < G_N_ELEMENTS(known); i++)
		if (strcmp(f.code, known[i].code) == 0)
			r = known[i].err;
	if (r == -EIO || r == -EINVAL)
		lockfs_log(G_LOG_LEVEL_WARNING, q->key, "tinystore: %s: %s (%s)", what, f.message,
		           f.code);
	ts_failure_clear(&f);
	return r;
}

/* An answer that does not decode: logged, -EIO. */
static int bad_answer(const char *key, const char *what, GError *e)
{
	lockfs_log(G_LOG_LEVEL_WARNING, key, "tinystore: %s: %s", what, e->message);
	g_error_free(e);
	return -EIO;
}

/* ---- lock calls (on the main connection) ---- */

/* Hold Q (key, request id, ttl, and a semaphore's limit or a wait when
 * asked): 0 granted (*HELD), -EEXIST busy, -EINVAL, -EIO. */
static int hold_on(ts_backend *tb, ts_link *l, int64_t deadline, const req *q, ts_held *held)
{
	const char *key = q->key;
	ts_msg m;
	int r = call(tb, l, deadline, TS_LOCKS_HOLD, q, "locks.hold", &m, true);
	if (r < 0)
		return r == -EEXIST || r == -EINVAL ? r : -EIO;
	GError *e = NULL;
	bool ok = ts_held_decode(&m, q->limit == 0, held, &e);
	ts_msg_clear(&m);
	if (!ok) {
		/* Drop the connection: whatever it says next is not to be trusted. */
		drop_conn(l);
		return bad_answer(key, "locks.hold", e);
	}
	return held->acquired ? 0 : -EEXIST;
}

/* The same on the main connection. */
static int hold_call(ts_backend *tb, int64_t deadline, const req *q, ts_held *held)
{
	return hold_on(tb, &tb->main, deadline, q, held);
}

/* The lock of KEY for this mount's ttl: 0 (*HELD), -EEXIST, -EINVAL, -EIO. */
static int do_hold(ts_backend *tb, int64_t deadline, const char *key, const uint8_t *request,
                   ts_held *held)
{
	req q = { .key = key, .id = request, .ttl_ms = (uint64_t)tb->ttl_ms };
	return hold_call(tb, deadline, &q, held);
}

/* Renew or release (they answer {}) on L: 0, -ESTALE (lost), -EIO, or
 * E_BROKEN when RESEND is false. */
static int lease_call(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method,
                      const char *key, const uint8_t *id, bool resend)
{
	req q = { .key = key, .id = id, .ttl_ms = (uint64_t)tb->ttl_ms };
	const char *what = method == TS_LOCKS_RENEW ? "locks.renew" : "locks.release";
	ts_msg m;
	int r = call(tb, l, deadline, method, &q, what, &m, resend);
	if (r < 0)
		return r == -ESTALE || r == E_BROKEN ? r : -EIO;
	GError *e = NULL;
	bool ok = ts_empty_decode(&m, &e);
	ts_msg_clear(&m);
	return ok ? 0 : bad_answer(key, what, e);
}

/* ---- kv calls ---- */

static void entry_clear(ts_entry *e)
{
	g_free(e->value);
	g_free(e->key);
	memset(e, 0, sizeof(*e));
}

/* 0 found (*E), -ENOENT, -EIO.  ROOT: KEY is at the bucket's root. */
static int kv_get_in(ts_backend *tb, ts_link *l, int64_t deadline, bool root, const char *key,
                     ts_entry *e)
{
	req q = { .key = key, .root = root };
	ts_msg m;
	int r = call(tb, l, deadline, TS_KV_GET, &q, "kv.get", &m, true);
	if (r < 0)
		return -EIO;
	GError *err = NULL;
	bool ok = ts_entry_decode(&m, e, &err);
	ts_msg_clear(&m);
	if (!ok)
		return bad_answer(key, "kv.get", err);
	if (!e->found) {
		entry_clear(e);
		return -ENOENT;
	}
	return 0;
}

static int kv_get(ts_backend *tb, ts_link *l, int64_t deadline, const char *key, ts_entry *e)
{
	return kv_get_in(tb, l, deadline, false, key, e);
}

/* kv.set / kv.create: 0 (*W), E_CONFLICT, -EIO.  ROOT: KEY is at the
 * bucket's root. */
static int kv_write_in(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method, bool root,
                       const char *key, const GByteArray *value, uint64_t ttl_ms,
                       const char *if_version, ts_written *w)
{
	req q = { .key = key,
		  .value = value->data,
		  .value_len = value->len,
		  .ttl_ms = ttl_ms,
		  .if_version = if_version && *if_version ? if_version : NULL,
		  .root = root };
	const char *what = method == TS_KV_SET ? "kv.set" : "kv.create";
	ts_msg m;
	int r = call(tb, l, deadline, method, &q, what, &m, true);
	if (r < 0)
		return r == E_CONFLICT ? r : -EIO;
	GError *e = NULL;
	bool ok = ts_written_decode(&m, w, &e);
	ts_msg_clear(&m);
	if (!ok)
		return bad_answer(key, what, e);
	if ((w->written || method == TS_KV_SET) && !w->version[0]) {
		lockfs_log(G_LOG_LEVEL_WARNING, key, "tinystore: %s: no version written", what);
		return -EIO;
	}
	return 0;
}

static int kv_write(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method, const char *key,
                    const GByteArray *value, uint64_t ttl_ms, const char *if_version, ts_written *w)
{
	return kv_write_in(tb, l, deadline, method, false, key, value, ttl_ms, if_version, w);
}

/* kv.expire / kv.delete guarded by IF_VERSION: 0 found, -ENOENT, E_CONFLICT, -EIO. */
static int kv_touch(ts_backend *tb, ts_link *l, int64_t deadline, uint16_t method, const char *key,
                    uint64_t ttl_ms, const char *if_version)
{
	req q = { .key = key, .ttl_ms = ttl_ms, .if_version = if_version };
	const char *what = method == TS_KV_DELETE ? "kv.delete" : "kv.expire";
	ts_msg m;
	int r = call(tb, l, deadline, method, &q, what, &m, true);
	if (r < 0)
		return r == E_CONFLICT ? r : -EIO;
	GError *e = NULL;
	bool found;
	bool ok = ts_found_decode(&m, &found, &e);
	ts_msg_clear(&m);
	if (!ok)
		return bad_answer(key, what, e);
	return found ? 0 : -ENOENT;
}

/* ---- holder records ---- */

/* Write VALUE, the record of the lease LEASE with fence FENCE, for KEY where
 * there may be none, a stale one, or (after a retry) ours already; never
 * over a newer holder's (-ESTALE); expiring in TTL_MS.  0 with the version
 * in VERSION. */
int ts_write_record(ts_backend *tb, ts_link *l, int64_t deadline, const char *key,
                    const GByteArray *value, uint64_t ttl_ms, const uint8_t lease[TS_ID_SIZE],
                    const char *fence, char version[TS_VERSION_MAX + 1])
{
	for (int i = 0; i < ATTEMPTS; i++) {
		ts_written w;
		int r = kv_write(tb, l, deadline, TS_KV_CREATE, key, value, ttl_ms, NULL, &w);
		if (r < 0 && r != E_CONFLICT)
			return r;
		if (r == 0 && w.written) {
			strcpy(version, w.version);
			return 0;
		}
		/* A live record is there: whose? */
		ts_entry e;
		r = kv_get(tb, l, deadline, key, &e);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		ts_record old;
		if (e.value && ts_record_decode(e.value, e.value_len, &old, NULL)) {
			bool ours = memcmp(old.lease, lease, TS_ID_SIZE) == 0;
			bool newer = lockfs_fence_cmp(old.fence, fence) > 0;
			ts_record_clear(&old);
			if (ours) {
				strcpy(version, e.version);
				entry_clear(&e);
				return 0;
			}
			if (newer) {
				entry_clear(&e);
				return -ESTALE;
			}
		}
		r = kv_write(tb, l, deadline, TS_KV_SET, key, value, ttl_ms, e.version, &w);
		entry_clear(&e);
		if (r == 0) {
			strcpy(version, w.version);
			return 0;
		}
		if (r != E_CONFLICT)
			return r;
	}
	lockfs_log(G_LOG_LEVEL_WARNING, key, "tinystore: the holder record keeps changing");
	return -EIO;
}

/* Our record was not at the version we knew: adopt it if it is still ours,
 * give up if a newer holder wrote it, else write VALUE again.  The caller is
 * LP's writer. */
static int repair_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp,
                         const GByteArray *value, bool lease_checked)
{
	ts_entry e;
	int r = kv_get(tb, l, deadline, lp->key, &e);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == 0) {
		ts_record old;
		bool decoded = e.value && ts_record_decode(e.value, e.value_len, &old, NULL);
		if (decoded && memcmp(old.lease, lp->rec.lease, TS_ID_SIZE) == 0) {
			strcpy(lp->version, e.version);
			ts_record_clear(&old);
			entry_clear(&e);
			return 0;
		}
		bool newer = decoded && lockfs_fence_cmp(old.fence, lp->rec.fence) > 0;
		if (decoded)
			ts_record_clear(&old);
		entry_clear(&e);
		if (newer)
			return -ESTALE;
	}
	if (!lease_checked) {
		r = lease_call(tb, l, deadline, TS_LOCKS_RENEW, lp->key, lp->rec.lease, true);
		if (r < 0)
			return r;
	}
	return ts_write_record(tb, l, deadline, lp->key, value, (uint64_t)tb->ttl_ms, lp->rec.lease,
	                       lp->rec.fence, lp->version);
}

/* Write VALUE over our record (kv.set at our version; TTL_MS 0 keeps its
 * expiry): 0, -ESTALE, -EIO.  The caller is LP's writer. */
int ts_rewrite_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp,
                      const GByteArray *value, uint64_t ttl_ms)
{
	int r = E_CONFLICT;
	for (int i = 0; i < 2 && r == E_CONFLICT; i++) {
		ts_written w;
		r = kv_write(tb, l, deadline, TS_KV_SET, lp->key, value, ttl_ms, lp->version, &w);
		if (r == 0)
			strcpy(lp->version, w.version);
		else if (r == E_CONFLICT &&
		         (r = repair_record(tb, l, deadline, lp, value, false)) == 0)
			r = E_CONFLICT; /* ours again, at a new version: write it */
	}
	return r == E_CONFLICT ? -EIO : r;
}

/* Refresh our record's expiry after a renewal: 0, -ESTALE, -EIO.  The caller
 * is LP's writer. */
static int expire_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp,
                         const GByteArray *value)
{
	int k = kv_touch(tb, l, deadline, TS_KV_EXPIRE, lp->key, (uint64_t)tb->ttl_ms, lp->version);
	if (k == E_CONFLICT || k == -ENOENT) {
		k = repair_record(tb, l, deadline, lp, value, true);
		if (k == 0)
			k = kv_touch(tb, l, deadline, TS_KV_EXPIRE, lp->key, (uint64_t)tb->ttl_ms,
			             lp->version);
	}
	return k == E_CONFLICT || k == -ENOENT ? -EIO : k;
}

/* Delete the record of a lease let go: at the version written when it is
 * KNOWN, else (a write whose answer never came) only if the record there is
 * ours.  0, or -EIO. */
int ts_delete_record(ts_backend *tb, ts_link *l, int64_t deadline, ts_lease *lp, bool known)
{
	if (known)
		return kv_touch(tb, l, deadline, TS_KV_DELETE, lp->key, 0, lp->version) == -EIO
		               ? -EIO
		               : 0;
	ts_entry e;
	int r = kv_get(tb, l, deadline, lp->key, &e);
	if (r < 0)
		return r == -ENOENT ? 0 : r;
	ts_record old;
	if (e.value && ts_record_decode(e.value, e.value_len, &old, NULL)) {
		if (memcmp(old.lease, lp->rec.lease, TS_ID_SIZE) == 0)
			r = kv_touch(tb, l, deadline, TS_KV_DELETE, lp->key, 0, e.version);
		ts_record_clear(&old);
	}
	entry_clear(&e);
	return r == -EIO ? -EIO : 0;
}

/* ---- what this instance holds, and records it let go of ---- */

void ts_lease_unref(ts_lease *lp)
{
	if (!g_atomic_int_dec_and_test(&lp->refs))
		return;
	ts_record_clear(&lp->rec);
	g_free(lp->key);
	g_free(lp);
}

static bool is_mine(ts_backend *tb, const uint8_t lease[TS_ID_SIZE])
{
	g_autofree char *id = hex_id(lease);
	g_mutex_lock(&tb->st_mu);
	bool mine = g_hash_table_contains(tb->mine, id);
	g_mutex_unlock(&tb->st_mu);
	return mine;
}

/* st_mu held. */
void ts_forget(ts_backend *tb, ts_lease *lp)
{
	g_autofree char *id = hex_id(lp->rec.lease);
	if (g_hash_table_lookup(tb->mine, id) == lp)
		g_hash_table_remove(tb->mine, id);
}

/* A record of a lease this instance let go of is no lock, though it may be
 * read until the publisher has deleted it (or it expired). */
static bool is_released(ts_backend *tb, const uint8_t lease[TS_ID_SIZE])
{
	g_autofree char *id = hex_id(lease);
	g_mutex_lock(&tb->st_mu);
	int64_t *until = g_hash_table_lookup(tb->released, id);
	bool released = until && *until > lockfs_mono_us();
	if (until && !released)
		g_hash_table_remove(tb->released, id);
	g_mutex_unlock(&tb->st_mu);
	return released;
}

/* LP's record reads as no lock until UNTIL_MONO.  st_mu held. */
void ts_set_released_until(ts_backend *tb, ts_lease *lp, int64_t until_mono)
{
	int64_t now = lockfs_mono_us();
	if (g_hash_table_size(tb->released) >= 64) {
		GHashTableIter it;
		gpointer v;
		g_hash_table_iter_init(&it, tb->released);
		while (g_hash_table_iter_next(&it, NULL, &v))
			if (*(int64_t *)v <= now)
				g_hash_table_iter_remove(&it);
	}
	int64_t *until = g_new(int64_t, 1);
	*until = until_mono;
	g_hash_table_replace(tb->released, hex_id(lp->rec.lease), until);
}

/* ---- what we tell the filesystem ---- */

/* Now by the server's clock, as measured at WELCOME (unix ms). */
static int64_t server_now_ms(ts_backend *tb)
{
	return lockfs_mono_us() / 1000 + __atomic_load_n(&tb->clock_offset_ms, __ATOMIC_RELAXED);
}

/* Silent past stale_after: by the server's clock when the holder gave it,
 * so two hosts' clocks never meet; else by the holder's. */
static bool is_stale(ts_backend *tb, const ts_record *r)
{
	if (!tb->stale_after_us)
		return false;
	if (r->server_ms)
		return (server_now_ms(tb) - r->server_ms) * 1000 > tb->stale_after_us;
	return lockfs_now_us() - r->holder.heartbeat_us > tb->stale_after_us;
}

static void copy_content(lockfs_lock_info *out, const ts_record *r)
{
	if (!r->content)
		return;
	/* NUL-terminated past its length, as the filesystem keeps content. */
	out->content = g_malloc(r->content_len + 1);
	memcpy(out->content, r->content, r->content_len);
	out->content[r->content_len] = '\0';
	out->content_len = r->content_len;
}

static void fill_info(ts_backend *tb, const char *key, const ts_record *r, const ts_entry *e,
                      lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	out->key = g_strdup(key);
	lockfs_holder_copy(&out->holder, &r->holder);
	g_strlcpy(out->fence, r->fence, sizeof(out->fence));
	/* The record expires with the lease (a set's latency later): near enough. */
	out->lease_left_ms = -1;
	if (e && e->has_expires)
		out->lease_left_ms = MAX(e->expires_ms - server_now_ms(tb), 0);
	out->state = is_stale(tb, r) ? LOCKFS_STATE_STALE : LOCKFS_STATE_HELD;
	out->mine = is_mine(tb, r->lease);
	copy_content(out, r);
}

/* What we know of our own lease LP, from memory.  st_mu held. */
static void fill_own_info(ts_backend *tb, const ts_lease *lp, lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	out->key = g_strdup(lp->key);
	lockfs_holder_copy(&out->holder, &lp->rec.holder);
	g_strlcpy(out->fence, lp->rec.fence, sizeof(out->fence));
	out->lease_left_ms = MAX(lp->renewed_us + tb->ttl_ms * 1000 - lockfs_mono_us(), 0) / 1000;
	out->state = is_stale(tb, &lp->rec) ? LOCKFS_STATE_STALE : LOCKFS_STATE_HELD;
	out->mine = true;
	copy_content(out, &lp->rec);
}

static bool key_ok(ts_backend *tb, const char *key)
{
	size_t n = key ? strlen(key) : 0;
	return n > 0 && n <= tb->key_max && g_utf8_validate(key, (gssize)n, NULL);
}

/* The record of KEY: 0, -ENOENT (also the record of a lease we let go of),
 * -EIO (a record we cannot read). */
static int read_record(ts_backend *tb, int64_t deadline, const char *key, ts_entry *e, ts_record *r)
{
	int rc = kv_get(tb, &tb->main, deadline, key, e);
	if (rc < 0)
		return rc;
	GError *err = NULL;
	if (!e->value) {
		g_set_error(&err, TS_ERROR, TS_ERROR_PROTOCOL, "a holder record without a value");
	} else if (ts_record_decode(e->value, e->value_len, r, &err)) {
		if (!is_released(tb, r->lease))
			return 0;
		ts_record_clear(r);
		entry_clear(e);
		return -ENOENT;
	}
	entry_clear(e);
	return bad_answer(key, "holder record", err);
}

/* Break KEY's holder: release the lease its record names, then the record. */
static int break_holder(ts_backend *tb, int64_t deadline, const char *key, const ts_record *r,
                        const ts_entry *e)
{
	int rc = lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, r->lease, true);
	if (rc < 0 && rc != -ESTALE)
		return rc;
	rc = kv_touch(tb, &tb->main, deadline, TS_KV_DELETE, key, 0, e->version);
	if (rc == E_CONFLICT) {
		/* The holder wrote again meanwhile: its record, its lease, gone. */
		ts_entry again;
		ts_record now;
		if (read_record(tb, deadline, key, &again, &now) == 0) {
			if (memcmp(now.lease, r->lease, TS_ID_SIZE) == 0)
				kv_touch(tb, &tb->main, deadline, TS_KV_DELETE, key, 0,
				         again.version);
			ts_record_clear(&now);
			entry_clear(&again);
		}
	}
	return rc == -EIO ? -EIO : 0;
}

/* ---- restart grace ----
 *
 * A server that restarts forgets every lease (protocol §5.9), while their
 * holders go on believing in them until their next renewal answers lost, or
 * until ttl less a fifth after their last renewal was sent, which was before
 * the restart.  A key granted to someone else meanwhile has two holders.  So,
 * like a Chubby master after a fail-over, lockfs uses no grant of a restarted
 * server until ttl has passed since the restart: such a grant is released at
 * once and acquire answers -EEXIST (the key may well still be held, by a
 * holder from before the restart who has not learnt of it yet).
 *
 * Every grant says which start of the server made it: its fence's epoch
 * (§5.8), chosen at each start and growing.  An instance that meets an epoch
 * it has not settled yet reads the marker the mounts keep in the store (one
 * kv.get per epoch, with the main connection held: later grants cost
 * nothing):
 *  - no marker: no lockfs lock was ever taken on this store (or it was
 *    wiped), so nobody can believe in one: the marker is created, no grace;
 *  - an older epoch: the server restarted since lockfs last took a lock: the
 *    marker moves to this epoch, with grace_until = the server's now (at the
 *    grant, which is after the restart) + the marker's ttl (the largest ttl
 *    of the mounts that took locks under the old epoch) + a margin;
 *  - this epoch: its grace_until holds; a mount whose ttl is larger than the
 *    marker's writes its own in before it uses a grant, so the next restart
 *    waits for its leases too;
 *  - a newer epoch: the server restarted after this grant, which is gone
 *    already: -EIO.
 * Writes are kv.create or kv.set at the version read; a conflict (another
 * mount at the same moment) reads again.  The grace is measured on our
 * monotonic clock from the connection's WELCOME (ts_conn_server_ms), so it
 * never ends early by a step of our wall clock.  Why it is enough, and its
 * limits: docs/backends.md, "Server restart grace". */

/* Bring the marker to EPOCH (see above), NOW_MS being the server's time at
 * the grant: 0 with *UNTIL (server ms before which no grant of EPOCH is used,
 * or 0) and *PREV (the epoch lockfs used before, or 0); -EIO. */
static int settle_marker(ts_backend *tb, int64_t deadline, int64_t epoch, int64_t now_ms,
                         int64_t *until, int64_t *prev)
{
	for (int i = 0; i < ATTEMPTS; i++) {
		ts_entry e = { 0 };
		int r = kv_get_in(tb, &tb->main, deadline, true, tb->marker_key, &e);
		if (r < 0 && r != -ENOENT)
			return -EIO;
		bool found = r == 0;
		ts_marker m, next;
		GError *err = NULL;
		if (!found) {
			next = (ts_marker){ .epoch = epoch, .ttl_ms = tb->ttl_ms };
		} else if (!e.value || !ts_marker_decode(e.value, e.value_len, &m, &err)) {
			/* Whether the server restarted is unknown: as if it had,
			 * for as long as our own leases last. */
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "tinystore: restart marker %s unreadable (%s): written anew",
			           tb->marker_key, err ? err->message : "no value");
			g_clear_error(&err);
			next = (ts_marker){ .epoch = epoch,
				            .ttl_ms = tb->ttl_ms,
				            .grace_until = now_ms + tb->ttl_ms + GRACE_MARGIN_MS };
		} else if (m.epoch > epoch) {
			entry_clear(&e);
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "tinystore: a grant of server epoch %" G_GINT64_FORMAT
			           ", but the server has restarted since (epoch %" G_GINT64_FORMAT
			           "): not used",
			           epoch, m.epoch);
			return -EIO;
		} else if (m.epoch == epoch) {
			if (m.ttl_ms >= tb->ttl_ms) {
				entry_clear(&e);
				*until = m.grace_until;
				*prev = m.prev;
				return 0;
			}
			next = m;
			next.ttl_ms = tb->ttl_ms;
		} else {
			next = (ts_marker){ .epoch = epoch,
				            .prev = m.epoch,
				            .ttl_ms = tb->ttl_ms,
				            .grace_until = MAX(m.grace_until,
				                               MAX(epoch, now_ms) + m.ttl_ms +
				                                       GRACE_MARGIN_MS) };
		}
		GByteArray *value = ts_marker_encode(&next);
		ts_written w;
		r = kv_write_in(tb, &tb->main, deadline, found ? TS_KV_SET : TS_KV_CREATE, true,
		                tb->marker_key, value, 0, found ? e.version : NULL, &w);
		g_byte_array_unref(value);
		entry_clear(&e);
		if (r == 0 && (found || w.written)) {
			*until = next.grace_until;
			*prev = next.prev;
			return 0;
		}
		if (r < 0 && r != E_CONFLICT)
			return -EIO;
	}
	lockfs_log(G_LOG_LEVEL_WARNING, NULL, "tinystore: the restart marker %s keeps changing",
	           tb->marker_key);
	return -EIO;
}

/* May a grant with FENCE, answered at AT_MONO (our monotonic µs) =
 * AT_SERVER (the server's ms), be used?  0 yes, -EEXIST not yet (restart
 * grace), -EIO.  The main connection is held. */
static int check_epoch(ts_backend *tb, int64_t deadline, const char *key, const char *fence,
                       int64_t at_mono, int64_t at_server)
{
	uint64_t epoch;
	if (!ts_fence_epoch(fence, &epoch) || epoch > INT64_MAX) {
		lockfs_log(G_LOG_LEVEL_WARNING, key, "tinystore: fence %s has no epoch", fence);
		return -EIO;
	}
	if (epoch < tb->epoch) {
		lockfs_log(G_LOG_LEVEL_WARNING, key,
		           "tinystore: a grant of server epoch %" G_GUINT64_FORMAT
		           ", older than epoch %" G_GUINT64_FORMAT " seen before: not used",
		           epoch, tb->epoch);
		return -EIO;
	}
	if (epoch > tb->epoch) {
		int64_t until = 0, prev = 0;
		if (settle_marker(tb, deadline, (int64_t)epoch, at_server, &until, &prev) < 0)
			return -EIO;
		tb->epoch = epoch;
		tb->grace_end_us = until > at_server ? at_mono + (until - at_server) * 1000 : 0;
		if (tb->grace_end_us > lockfs_mono_us()) {
			g_autofree char *before =
			        prev ? g_strdup_printf(", lockfs's last %" G_GINT64_FORMAT, prev)
			             : g_strdup("");
			int64_t left = tb->grace_end_us - lockfs_mono_us();
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "tinystore: the server has restarted (epoch %" G_GUINT64_FORMAT
			           "%s): no lock is granted for %.1f s more, ttl after the "
			           "restart, as holders from before it may still believe they "
			           "hold their locks",
			           epoch, before, (double)left / G_USEC_PER_SEC);
		} else {
			tb->grace_end_us = 0;
		}
	}
	if (!tb->grace_end_us)
		return 0;
	if (lockfs_mono_us() < tb->grace_end_us)
		return -EEXIST;
	tb->grace_end_us = 0;
	lockfs_log(G_LOG_LEVEL_INFO, NULL,
	           "tinystore: restart grace over (lock epoch %" G_GUINT64_FORMAT
	           "): locks are granted again",
	           tb->epoch);
	return 0;
}

/* The length of the G of a share "G//ID" (backend.h, "Shared keys"), 0
 * for a key that is no share. */
static size_t share_group_len(const char *key)
{
	const char *sep = strstr(key, "//");
	return sep && sep > key && sep[2] ? (size_t)(sep - key) : 0;
}

/* A fence for the share KEY, whose semaphore grant came without one: a
 * lock of KEY itself (no one else's key) taken and let go.  tinystore's
 * fences are one sequence for every key, so this one comes after those of
 * every grant before the share's and before those of every grant after it.
 * 0 (*HELD's fence), or what do_hold answers; main connection held. */
static int mint_fence(ts_backend *tb, int64_t deadline, const char *key, ts_held *held)
{
	uint8_t request[TS_ID_SIZE];
	if (getrandom(request, sizeof(request), 0) != sizeof(request))
		return -EIO;
	req q = { .key = key, .id = request, .ttl_ms = TTL_MIN_MS };
	ts_held f;
	int r = hold_call(tb, deadline, &q, &f);
	if (r)
		return r == -EEXIST ? -EIO : r; /* a key of its own: never held */
	g_strlcpy(held->fence, f.fence, sizeof(held->fence));
	/* Left to its second of ttl if this fails: it is nobody's lock. */
	lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, f.lease, true);
	return 0;
}

/* ---- the interface ---- */

/* A lease of KEY for WHO, its record to be (CONTENT, a linked temp file's
 * bytes, or what a previous instance recorded), not granted yet. */
static ts_lease *lease_new(ts_backend *tb, const char *key, const lockfs_holder *who,
                           const void *content, size_t content_len)
{
	ts_lease *lp = g_new0(ts_lease, 1);
	lp->refs = 1;
	lp->key = g_strdup(key);
	lockfs_holder_copy(&lp->rec.holder, who);
	if (content) {
		lp->rec.content_len = MIN(content_len, LOCKFS_CONTENT_MAX);
		lp->rec.content = g_memdup2(content, lp->rec.content_len);
	}
	lp->rec.mount = g_strdup(tb->mount);
	lp->rec.ttl_ms = tb->ttl_ms;
	return lp;
}

/* A share of KEY, whose group is its first GLEN bytes: a place in the
 * semaphore of its group (many at once), with a fence minted for it.  Main
 * connection held. */
static int hold_share(ts_backend *tb, int64_t deadline, const char *key, size_t glen, ts_lease *lp,
                      ts_held *held)
{
	g_autofree char *group = g_strndup(key, glen);
	req q = { .key = group,
		  .id = lp->request,
		  .ttl_ms = (uint64_t)tb->ttl_ms,
		  .limit = SHARE_LIMIT };
	int r = hold_call(tb, deadline, &q, held);
	if (r == 0) {
		r = mint_fence(tb, deadline, key, held);
		if (r < 0)
			lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, held->lease,
			           true);
	}
	return r;
}

/* KEY is held by another: a holder silent past stale_after is broken, as
 * the local backend and the legacy tools do, and KEY held again (*SENT
 * when).  -EEXIST when it is not stale.  Main connection held. */
static int break_stale(ts_backend *tb, int64_t deadline, const char *key, ts_lease *lp,
                       ts_held *held, int64_t *sent, lockfs_acquire_result *res)
{
	ts_entry e;
	ts_record old;
	if (read_record(tb, deadline, key, &e, &old) != 0)
		return -EEXIST;
	int r = -EEXIST;
	if (is_stale(tb, &old) && break_holder(tb, deadline, key, &old, &e) == 0) {
		if (res) {
			res->broke = true;
			fill_info(tb, key, &old, &e, &res->previous);
		}
		*sent = lockfs_mono_us();
		r = do_hold(tb, deadline, key, lp->request, held);
	}
	ts_record_clear(&old);
	entry_clear(&e);
	return r;
}

/* HELD, the grant of a hold sent at SENT, into the lease's record; its
 * epoch checked.  A grant not used is released.  Main connection held. */
static int take_grant(ts_backend *tb, int64_t deadline, const char *key, ts_lease *lp,
                      const ts_held *held, int64_t sent)
{
	int64_t at = lockfs_mono_us();
	if (!tb->main.conn) {
		/* The connection that answered was dropped since (a later frame
		 * timed out): no server clock to judge the grant's epoch by, so
		 * it is not used -- let go of it, or left to its ttl. */
		lockfs_log(G_LOG_LEVEL_WARNING, key,
		           "tinystore: the connection of a grant was lost before it could be "
		           "checked: not used");
		lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, held->lease, true);
		return -EIO;
	}
	int64_t at_server = ts_conn_server_ms(tb->main.conn, at);
	lp->rec.server_ms = server_now_ms(tb);
	memcpy(lp->rec.lease, held->lease, TS_ID_SIZE);
	g_strlcpy(lp->rec.fence, held->fence, sizeof(lp->rec.fence));
	lp->renewed_us = sent;
	lp->gen = tb->main.gen; /* the connection that answered */
	int r = check_epoch(tb, deadline, key, held->fence, at, at_server);
	/* Not used: the key is free again at once, not at the ttl (a failed
	 * release only leaves it to its ttl). */
	if (r < 0)
		lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, held->lease, true);
	return r;
}

/* Install: the lease of LP, granted, known as ours; its record to be
 * published. */
static lockfs_lease *install(ts_backend *tb, const char *key, ts_lease *lp)
{
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	g_strlcpy(lease->fence, lp->rec.fence, sizeof(lease->fence));
	lease->priv = lp;
	/* The record comes later, from the publisher: a grant no longer
	 * waits for a kv commit. */
	g_mutex_lock(&tb->st_mu);
	g_hash_table_insert(tb->mine, hex_id(lp->rec.lease), lp);
	ts_queue_publish(tb, lp, lockfs_mono_us() + PUBLISH_DELAY_US);
	g_mutex_unlock(&tb->st_mu);
	return lease;
}

static int ts_acquire(lockfs_backend *be, const char *key, const lockfs_holder *who,
                      const void *content, size_t content_len, lockfs_lease **out,
                      lockfs_acquire_result *res)
{
	ts_backend *tb = (ts_backend *)be;
	if (res)
		memset(res, 0, sizeof(*res));
	if (!key_ok(tb, key))
		return -EINVAL;
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	/* Claim: the lease and its record to be, under a request id of its
	 * own. */
	ts_lease *lp = lease_new(tb, key, who, content, content_len);
	if (getrandom(lp->request, sizeof(lp->request), 0) != sizeof(lp->request)) {
		ts_lease_unref(lp);
		return -EIO;
	}
	if (!take_conn(tb, deadline)) {
		ts_lease_unref(lp);
		return -EIO;
	}
	int64_t sent = lockfs_mono_us();
	ts_held held;
	size_t glen = share_group_len(key);
	int r = glen ? hold_share(tb, deadline, key, glen, lp, &held)
	             : do_hold(tb, deadline, key, lp->request, &held);
	if (r == -EEXIST && tb->stale_after_us && !glen)
		r = break_stale(tb, deadline, key, lp, &held, &sent, res);
	if (r == 0)
		r = take_grant(tb, deadline, key, lp, &held, sent);
	give_conn(tb);
	if (r < 0) {
		ts_lease_unref(lp);
		return r;
	}
	*out = install(tb, key, lp);
	return 0;
}

static int ts_heartbeat(lockfs_backend *be, lockfs_lease *lease, const lockfs_beat *beat)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	g_mutex_lock(&tb->st_mu);
	if (lp->lost) {
		g_mutex_unlock(&tb->st_mu);
		return -ESTALE;
	}
	void *content;
	size_t content_len;
	if (lockfs_holder_apply_beat(&lp->rec.holder, 0, beat, &content, &content_len)) {
		g_free(lp->rec.content);
		lp->rec.content = content;
		lp->rec.content_len = content_len;
	}
	/* server_ms dates the last heartbeat, which staleness goes by: a
	 * change of shown attributes alone does not move it. */
	if (beat->heartbeat_us)
		lp->rec.server_ms = server_now_ms(tb);
	if (lp->state != PUB_PUBLISHED || lp->writer != W_NONE || lp->releasing) {
		/* Not written yet: its first write takes the latest.  Being
		 * written: written again after that. */
		if (lp->attempted)
			lp->dirty = true;
		ts_after_write(tb, lp);
		g_mutex_unlock(&tb->st_mu);
		return 0;
	}
	lp->writer = W_CALLER;
	lp->dirty = false;
	GByteArray *value = ts_record_encode(&lp->rec);
	g_mutex_unlock(&tb->st_mu);
	int64_t deadline = begin(tb);
	int r = -EIO;
	if (deadline) {
		/* No ttl: the record keeps the expiry renewals give it. */
		r = ts_rewrite_record(tb, &tb->main, deadline, lp, value, 0);
		give_conn(tb);
	}
	g_byte_array_unref(value);
	g_mutex_lock(&tb->st_mu);
	lp->writer = W_NONE;
	if (r == -ESTALE) {
		lp->lost = true;
		lp->state = PUB_DONE;
	} else if (r < 0) {
		lp->dirty = true;
	}
	ts_after_write(tb, lp);
	g_mutex_unlock(&tb->st_mu);
	return r;
}

/* A renewal connection, held (one call at a time on it): the first free,
 * or else the next in turn, waited for (its call is bounded by its own
 * deadline).  Give it back with g_mutex_unlock(&tb->renew_mu[*i]). */
static ts_link *take_renew_link(ts_backend *tb, unsigned *i)
{
	unsigned start = __atomic_fetch_add(&tb->renew_next, 1, __ATOMIC_RELAXED);
	for (unsigned k = 0; k < RENEW_CONNS; k++) {
		*i = (start + k) % RENEW_CONNS;
		if (g_mutex_trylock(&tb->renew_mu[*i]))
			return &tb->renl[*i];
	}
	*i = start % RENEW_CONNS;
	g_mutex_lock(&tb->renew_mu[*i]);
	return &tb->renl[*i];
}

static int ts_renew(lockfs_backend *be, lockfs_lease *lease)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	unsigned li;
	ts_link *link = take_renew_link(tb, &li);
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	/* The lease runs from when the renewal was sent, not answered. */
	int64_t sent = lockfs_mono_us();
	int r = lease_call(tb, link, deadline, TS_LOCKS_RENEW, lease->key, lp->rec.lease, true);
	if (r == 0) {
		GByteArray *value = NULL;
		bool dirty = false;
		g_mutex_lock(&tb->st_mu);
		lp->renewed_us = sent;
		/* Not the lock connection: a release goes the general way
		 * (ts_release's one-call release needs the very connection). */
		lp->gen = 0;
		if (lp->state == PUB_PUBLISHED && lp->writer == W_NONE && !lp->releasing) {
			/* The record goes on with the lease. */
			lp->writer = W_CALLER;
			dirty = lp->dirty;
			lp->dirty = false;
			value = ts_record_encode(&lp->rec);
		} else if (lp->state == PUB_PUBLISHED) {
			lp->dirty = true; /* the write under way is followed by one with the ttl */
		} else if (lp->state == PUB_PENDING && (!lp->queued || lp->failures)) {
			/* Not written because the lease might have run out, or the
			 * server could not be reached: now. */
			ts_queue_publish(tb, lp, lockfs_mono_us());
		}
		g_mutex_unlock(&tb->st_mu);
		if (value) {
			int k = dirty ? ts_rewrite_record(tb, link, deadline, lp, value,
			                                  (uint64_t)tb->ttl_ms)
			              : expire_record(tb, link, deadline, lp, value);
			g_byte_array_unref(value);
			/* The lease is what counts; the record is only its description. */
			if (k < 0)
				lockfs_log(G_LOG_LEVEL_WARNING, lease->key,
				           "tinystore: lease renewed, holder record not (%s)",
				           g_strerror(-k));
			g_mutex_lock(&tb->st_mu);
			lp->writer = W_NONE;
			if (k < 0 && dirty)
				lp->dirty = true;
			ts_after_write(tb, lp);
			g_mutex_unlock(&tb->st_mu);
		}
	} else if (r == -ESTALE) {
		g_mutex_lock(&tb->st_mu);
		lp->lost = true;
		if (lp->state == PUB_PENDING) {
			lp->state = PUB_DONE;
			ts_unqueue_publish(lp);
		}
		g_mutex_unlock(&tb->st_mu);
	}
	g_mutex_unlock(&tb->renew_mu[li]);
	return r;
}

/* Releasing.  tinystore's locks.release answers {} for any lease, held or
 * not, so in general a renewal first tells whether this one still holds its
 * key (lost: -ENOENT, and nothing is deleted), and the record, if any, is
 * deleted afterwards by the publisher.
 *
 * A lease whose record was never written (nor is being written: the pending
 * publication is cancelled here, under st_mu) is released with one
 * locks.release, answered 0, when both of these hold:
 *  - nobody else can have ended it: a lease ends only by its ttl, by a
 *    server restart, or by a release naming its 16-byte id, and the id is
 *    known only to this process until the record publishes it;
 *  - neither of the others can have happened: the release goes out on the
 *    very connection that answered the hold or the last renewal (a restarted
 *    server would have closed it), and the call ends within the network
 *    timeout, before ttl less a fifth has passed since that hold or renewal
 *    was sent (the margin the filesystem itself declares loss at).
 * If that connection is gone or breaks during the call, the general way
 * decides. */
static int ts_release(lockfs_backend *be, lockfs_lease *lease)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	g_mutex_lock(&tb->st_mu);
	lp->releasing = true;
	bool unwritten = lp->state == PUB_PENDING && !lp->attempted;
	bool fast = unwritten && !lp->lost && tb->main.conn && lp->gen == tb->main.gen &&
	            !ts_may_have_expired(tb, lp, deadline);
	g_mutex_unlock(&tb->st_mu);
	int r = E_BROKEN;
	if (fast)
		r = lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, lease->key, lp->rec.lease,
		               false);
	if (r == E_BROKEN) {
		r = lease_call(tb, &tb->main, deadline, TS_LOCKS_RENEW, lease->key, lp->rec.lease,
		               true);
		if (r == 0)
			r = lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, lease->key,
			               lp->rec.lease, true);
	}
	g_mutex_lock(&tb->st_mu);
	if (r == 0) {
		ts_let_go(tb, lp);
	} else if (r == -ESTALE) {
		lp->lost = true;
		lp->state = PUB_DONE;
		ts_unqueue_publish(lp);
	} else {
		/* Kept: published as if nothing happened. */
		lp->releasing = false;
		if (lp->state == PUB_PENDING)
			ts_queue_publish(tb, lp, lockfs_mono_us());
		ts_after_write(tb, lp);
	}
	g_mutex_unlock(&tb->st_mu);
	give_conn(tb);
	return r == -ESTALE ? -ENOENT : r;
}

/* A lock of KEY held through this instance (with FENCE, when given), that
 * is neither lost nor being let go.  st_mu held. */
static ts_lease *own_lease(ts_backend *tb, const char *key, const char *fence)
{
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, tb->mine);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		ts_lease *lp = v;
		if (strcmp(lp->key, key) == 0 && !lp->lost && !lp->releasing &&
		    lp->state != PUB_DONE &&
		    (!fence || lockfs_fence_cmp(fence, lp->rec.fence) == 0))
			return lp;
	}
	return NULL;
}

static int ts_break(lockfs_backend *be, const char *key, const char *fence,
                    const lockfs_holder *breaker, lockfs_lock_info *broken)
{
	(void)breaker;
	ts_backend *tb = (ts_backend *)be;
	if (!key_ok(tb, key))
		return -EINVAL;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	/* Our own lock (its record may not be written yet): we know its
	 * lease. */
	g_mutex_lock(&tb->st_mu);
	ts_lease *own = own_lease(tb, key, fence);
	if (own) {
		g_atomic_int_inc(&own->refs);
		own->releasing = true;
	}
	g_mutex_unlock(&tb->st_mu);
	if (own) {
		int rc = lease_call(tb, &tb->main, deadline, TS_LOCKS_RELEASE, key, own->rec.lease,
		                    true);
		g_mutex_lock(&tb->st_mu);
		if (rc == 0) {
			if (broken)
				fill_own_info(tb, own, broken);
			ts_let_go(tb, own);
		} else {
			own->releasing = false;
			if (own->state == PUB_PENDING)
				ts_queue_publish(tb, own, lockfs_mono_us());
			ts_after_write(tb, own);
		}
		g_mutex_unlock(&tb->st_mu);
		ts_lease_unref(own);
		give_conn(tb);
		return rc == 0 ? 0 : -EIO;
	}
	ts_entry e;
	ts_record r;
	int rc = read_record(tb, deadline, key, &e, &r);
	if (rc == 0) {
		if (fence && lockfs_fence_cmp(fence, r.fence) != 0)
			rc = -ENOENT;
		else
			rc = break_holder(tb, deadline, key, &r, &e);
		if (rc == 0 && broken)
			fill_info(tb, key, &r, &e, broken);
		ts_record_clear(&r);
		entry_clear(&e);
	}
	give_conn(tb);
	return rc;
}

static int ts_inspect(lockfs_backend *be, const char *key, lockfs_lock_info *out)
{
	ts_backend *tb = (ts_backend *)be;
	if (!key_ok(tb, key))
		return -ENOENT; /* no such key can be held */
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	ts_entry e;
	ts_record r;
	int rc = read_record(tb, deadline, key, &e, &r);
	give_conn(tb);
	if (rc == 0) {
		fill_info(tb, key, &r, &e, out);
		ts_record_clear(&r);
		entry_clear(&e);
	}
	return rc;
}

/* Add E's record to INFOS (unless it is of a lease we let go of). */
static void list_entry(ts_backend *tb, const char *key, const ts_entry *e, GPtrArray *infos)
{
	ts_record r;
	GError *err = NULL;
	if (!e->value || !ts_record_decode(e->value, e->value_len, &r, &err)) {
		lockfs_log(G_LOG_LEVEL_DEBUG, key, "tinystore: skipping an unreadable record: %s",
		           err ? err->message : "no value");
		g_clear_error(&err);
		return;
	}
	if (!is_released(tb, r.lease)) {
		lockfs_lock_info *info = g_new(lockfs_lock_info, 1);
		fill_info(tb, key, &r, e, info);
		g_ptr_array_add(infos, info);
	}
	ts_record_clear(&r);
}

static void info_free(gpointer p)
{
	lockfs_lock_info_clear(p);
	g_free(p);
}

/* Every record under PREFIX, in key order: keys with a prefix follow it
 * directly, so the listing starts after it and stops at the first other. */
static int list_records(ts_backend *tb, int64_t deadline, const char *prefix, GPtrArray *infos)
{
	g_autofree char *after = NULL;
	if (*prefix) {
		if (!key_ok(tb, prefix))
			return 0;
		ts_entry e;
		int r = kv_get(tb, &tb->main, deadline, prefix, &e);
		if (r == 0) {
			list_entry(tb, prefix, &e, infos);
			entry_clear(&e);
		} else if (r != -ENOENT) {
			return r;
		}
		after = g_strdup(prefix);
	}
	for (;;) {
		req q = { .after = after };
		ts_msg m;
		if (call(tb, &tb->main, deadline, TS_KV_LIST, &q, "kv.list", &m, true) < 0)
			return -EIO;
		ts_page page;
		GError *err = NULL;
		bool ok = ts_page_decode(&m, &page, &err);
		ts_msg_clear(&m);
		if (!ok)
			return bad_answer(NULL, "kv.list", err);
		bool done = page.next == NULL;
		const char *last = after;
		for (guint i = 0; i < page.entries->len; i++) {
			ts_entry *e = page.entries->pdata[i];
			if (last && strcmp(e->key, last) <= 0) {
				/* Going backwards would never end. */
				ts_page_clear(&page);
				lockfs_log(G_LOG_LEVEL_WARNING, NULL,
				           "tinystore: kv.list went back to key %s", e->key);
				return -EIO;
			}
			if (!g_str_has_prefix(e->key, prefix)) {
				done = true;
				break;
			}
			list_entry(tb, e->key, e, infos);
			last = e->key;
		}
		/* next is the last key listed: it must move on. */
		if (!done && (strcmp(page.next, last ? last : "") < 0 ||
		              (after && strcmp(page.next, after) <= 0))) {
			ts_page_clear(&page);
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "tinystore: kv.list does not advance");
			return -EIO;
		}
		g_free(after);
		after = g_steal_pointer(&page.next);
		ts_page_clear(&page);
		if (done)
			return 0;
		if (infos->len > LIST_MAX) {
			lockfs_log(G_LOG_LEVEL_WARNING, NULL,
			           "tinystore: more than %d holder records", LIST_MAX);
			return -EIO;
		}
	}
}

static int ts_list(lockfs_backend *be, const char *prefix, lockfs_list_cb cb, void *user)
{
	ts_backend *tb = (ts_backend *)be;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	GPtrArray *infos = g_ptr_array_new_with_free_func(info_free);
	int r = list_records(tb, deadline, prefix ? prefix : "", infos);
	give_conn(tb);
	/* Called back without the connection: callbacks may call us. */
	for (guint i = 0; r == 0 && i < infos->len; i++)
		cb(infos->pdata[i], user);
	g_ptr_array_free(infos, TRUE);
	return r;
}

/* Asked of the locks themselves, as the records lag the grants: a lock is
 * looked at by taking it and letting it go; a group "G//" by asking its
 * semaphore for a place with limit MINE + 1, which is granted only while
 * no more than MINE hold one.  The lock's look stands in line up to
 * LOOK_WAIT_MS, so that another host's look, which holds the lock for a
 * round trip, is waited out rather than taken for a holder. */
static int ts_look(lockfs_backend *be, const char *key, unsigned mine)
{
	ts_backend *tb = (ts_backend *)be;
	size_t n = strlen(key);
	bool group = n > 2 && strcmp(key + n - 2, "//") == 0;
	g_autofree char *place = g_strndup(key, group ? n - 2 : n);
	if (!key_ok(tb, place) || mine >= SHARE_LIMIT)
		return -EIO;
	uint8_t request[TS_ID_SIZE];
	if (getrandom(request, sizeof(request), 0) != sizeof(request))
		return -EIO;
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	req q = { .key = place, .id = request, .ttl_ms = TTL_MIN_MS };
	if (group)
		q.limit = mine + 1;
	else
		q.wait_ms = (uint64_t)MIN(LOOK_WAIT_MS, MAX(tb->timeout_us / 4000, 1));
	ts_held h;
	g_mutex_lock(&tb->look_mu);
	int r = hold_on(tb, &tb->lookl, deadline, &q, &h);
	int64_t at = lockfs_mono_us(), at_server = 0;
	if (r == 0 && !tb->lookl.conn)
		r = -EIO; /* its connection was dropped since: no server clock; the
		           * hold runs out with its ttl */
	if (r == 0) {
		at_server = ts_conn_server_ms(tb->lookl.conn, at);
		/* Left to its second of ttl if this fails: a refusal meanwhile. */
		lease_call(tb, &tb->lookl, deadline, TS_LOCKS_RELEASE, place, h.lease, true);
	}
	g_mutex_unlock(&tb->look_mu);
	if (r != 0)
		return r == -EEXIST ? 1 : -EIO;
	if (group)
		return 0;
	/* A lock granted in a restart's grace may still be held by a holder
	 * from before the restart.  The epoch is the main connection's to
	 * settle; it is held a moment only, unless the epoch is new. */
	if (!take_conn(tb, deadline))
		return -EIO;
	int g = check_epoch(tb, deadline, place, h.fence, at, at_server);
	give_conn(tb);
	return g == -EEXIST ? 1 : g < 0 ? -EIO : 0;
}

/* tinystore has no watch, but a hold that stands in line is a blocking
 * primitive: granted the moment KEY is let go.  It is let go at once (the
 * waiters then ask acquire() as after any hint), on its own connection so
 * that no lock call waits behind it. */
static int ts_wait_free(lockfs_backend *be, const char *key, int timeout_ms)
{
	ts_backend *tb = (ts_backend *)be;
	if (!key_ok(tb, key) || timeout_ms <= 0)
		return -EIO;
	uint8_t request[TS_ID_SIZE];
	if (getrandom(request, sizeof(request), 0) != sizeof(request))
		return -EIO;
	g_mutex_lock(&tb->wait_mu);
	int64_t deadline = lockfs_mono_us() + (int64_t)timeout_ms * 1000 + tb->timeout_us;
	req q = {
		.key = key, .id = request, .ttl_ms = TTL_MIN_MS, .wait_ms = (uint64_t)timeout_ms
	};
	ts_held h;
	int r = hold_on(tb, &tb->waitl, deadline, &q, &h);
	if (r == 0) {
		/* Left to its second of ttl if this fails: a refusal meanwhile. */
		lease_call(tb, &tb->waitl, lockfs_mono_us() + tb->timeout_us, TS_LOCKS_RELEASE, key,
		           h.lease, true);
		r = 1;
	} else {
		r = r == -EEXIST ? 0 : -EIO;
	}
	g_mutex_unlock(&tb->wait_mu);
	return r;
}

/* A lease the filesystem is done with.  Released or not (a lost lock, or
 * one left at the backend at an unmount), no record is written for it any
 * more; one written stays until it expires, or until a later instance
 * adopts the lease, unless the release handed it to the publisher. */
static void ts_lease_free(lockfs_backend *be, lockfs_lease *lease)
{
	if (!lease)
		return;
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	g_mutex_lock(&tb->st_mu);
	ts_forget(tb, lp);
	if (lp->state == PUB_PENDING)
		lp->state = PUB_DONE;
	ts_unqueue_publish(lp);
	g_mutex_unlock(&tb->st_mu);
	ts_lease_unref(lp);
	g_free(lease->key);
	g_free(lease);
}

static void target_clear(ts_target *t)
{
	g_free(t->dir);
	g_free(t->endpoint);
	if (t->token)
		memset(t->token, 0, strlen(t->token));
	g_free(t->token);
	g_clear_object(&t->ca);
	g_free(t->client);
}

static void ts_destroy(lockfs_backend *be)
{
	ts_backend *tb = (ts_backend *)be;
	/* Nothing held is let go (backend.h, "Restart"): no lease is
	 * released, and the publisher deletes only the records of leases
	 * released already (let_go); unpublished records are left to a
	 * later instance's adopt().  The publisher ends within one network
	 * timeout. */
	g_mutex_lock(&tb->st_mu);
	tb->stop = true;
	tb->stop_deadline = lockfs_mono_us() + tb->timeout_us;
	g_cond_broadcast(&tb->st_cv);
	GThread *publisher = tb->publisher;
	g_mutex_unlock(&tb->st_mu);
	if (publisher)
		g_thread_join(publisher);
	g_mutex_lock(&tb->st_mu);
	ts_lease *lp;
	while (!g_sequence_is_empty(tb->pubq)) {
		GSequenceIter *first = g_sequence_get_begin_iter(tb->pubq);
		lp = g_sequence_get(first);
		g_sequence_remove(first);
		lp->queued = NULL;
		ts_lease_unref(lp);
	}
	while ((lp = g_queue_pop_head(&tb->work))) {
		lp->in_work = false;
		ts_lease_unref(lp);
	}
	g_mutex_unlock(&tb->st_mu);
	g_sequence_free(tb->pubq);
	drop_conn(&tb->main);
	drop_conn(&tb->pub);
	drop_conn(&tb->waitl);
	g_free(tb->waitl.last_error);
	g_mutex_clear(&tb->wait_mu);
	drop_conn(&tb->lookl);
	g_free(tb->lookl.last_error);
	g_mutex_clear(&tb->look_mu);
	for (int i = 0; i < RENEW_CONNS; i++) {
		drop_conn(&tb->renl[i]);
		g_free(tb->renl[i].last_error);
		g_mutex_clear(&tb->renew_mu[i]);
	}
	target_clear(&tb->target);
	g_free(tb->lock_name);
	g_free(tb->mount);
	g_free(tb->main.last_error);
	g_free(tb->pub.last_error);
	g_hash_table_destroy(tb->mine);
	g_hash_table_destroy(tb->released);
	g_free(tb->marker_key);
	g_mutex_clear(&tb->mu);
	g_cond_clear(&tb->cv);
	g_mutex_clear(&tb->st_mu);
	g_cond_clear(&tb->st_cv);
	g_free(tb);
}

/* ---- restart (backend.h, "Restart") ----
 *
 * tinystore leases are per lock and belong to no connection: a later
 * instance renews one by its id (protocol §5.6).  What it needs besides key
 * and fence is the lease token: "ts1." LEASE "." REQUEST "." TAG, the lease
 * id and the hold's request id as 32 lowercase hex digits each, and TAG
 * the first 16 hex digits of SHA-256 over "LEASE.REQUEST.KEY", so that a
 * token edited, cut or filed under another key is refused (-EINVAL) before
 * it reaches the server. */

#define TOKEN_PREFIX "ts1."
#define TOKEN_TAG 16
#define TOKEN_LEN (sizeof(TOKEN_PREFIX) - 1 + 2 * (2 * TS_ID_SIZE + 1) + TOKEN_TAG)

static char *ts_identity(lockfs_backend *be)
{
	ts_backend *tb = (ts_backend *)be;
	/* The token is a credential, not a place: left out. */
	const char *where = tb->target.dir ? tb->target.dir : tb->target.endpoint;
	g_autofree char *escaped = g_strescape(where, NULL);
	return g_strdup_printf("tinystore %s=%s bucket=" BUCKET " lock=%s",
	                       tb->target.dir ? "dir" : "endpoint", escaped, tb->lock_name);
}

/* The tag of a token: binds its ids to each other and to KEY. */
static char *token_tag(const char *ids, size_t ids_len, const char *key)
{
	GChecksum *sum = g_checksum_new(G_CHECKSUM_SHA256);
	g_checksum_update(sum, (const guchar *)ids, (gssize)ids_len);
	g_checksum_update(sum, (const guchar *)".", 1);
	g_checksum_update(sum, (const guchar *)key, (gssize)strlen(key));
	char *tag = g_strndup(g_checksum_get_string(sum), TOKEN_TAG);
	g_checksum_free(sum);
	return tag;
}

static int ts_lease_token(lockfs_backend *be, const lockfs_lease *lease, GString *out)
{
	(void)be;
	const ts_lease *lp = lease->priv;
	g_autofree char *id = hex_id(lp->rec.lease), *request = hex_id(lp->request);
	g_autofree char *ids = g_strconcat(id, ".", request, NULL);
	g_autofree char *tag = token_tag(ids, strlen(ids), lease->key);
	g_string_append_printf(out, TOKEN_PREFIX "%s.%s", ids, tag);
	return 0;
}

/* 32 lowercase hex digits at S into ID. */
static bool hex_to_id(const char *s, uint8_t id[TS_ID_SIZE])
{
	for (int i = 0; i < 2 * TS_ID_SIZE; i++) {
		char c = s[i];
		int v = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
		if (v < 0)
			return false;
		if (i % 2 == 0)
			id[i / 2] = (uint8_t)(v << 4);
		else
			id[i / 2] |= (uint8_t)v;
	}
	return true;
}

/* TOKEN as ts_lease_token wrote it for KEY, and nothing else: its ids. */
static bool parse_token(const char *token, const char *key, uint8_t lease[TS_ID_SIZE],
                        uint8_t request[TS_ID_SIZE])
{
	const size_t pre = sizeof(TOKEN_PREFIX) - 1, id = 2 * TS_ID_SIZE;
	if (!token || strnlen(token, TOKEN_LEN + 1) != TOKEN_LEN ||
	    strncmp(token, TOKEN_PREFIX, pre) != 0)
		return false;
	const char *ids = token + pre;
	if (!hex_to_id(ids, lease) || ids[id] != '.' || !hex_to_id(ids + id + 1, request) ||
	    ids[2 * id + 1] != '.')
		return false;
	g_autofree char *tag = token_tag(ids, 2 * id + 1, key);
	return strcmp(ids + 2 * id + 2, tag) == 0;
}

/* Whether LEASE, granted to the hold REQUEST, still holds KEY with FENCE:
 * renewed by its id (lost: -ESTALE, and nothing was granted), then asked
 * again by the request id, which answers the same lease and fence while
 * that lease lives and moves its deadline as a renewal does (protocol
 * §5.5): so the server itself vouches for the fence.  A share's semaphore
 * place has no fence of its own (mint_fence): only its lease is checked.
 * 0, -ESTALE, -EIO; *SENT: when the renewal was sent. */
static int adopt_confirm(ts_backend *tb, ts_link *l, int64_t deadline, const char *key,
                         const uint8_t lease[TS_ID_SIZE], const uint8_t request[TS_ID_SIZE],
                         const char *fence, int64_t *sent)
{
	*sent = lockfs_mono_us();
	int r = lease_call(tb, l, deadline, TS_LOCKS_RENEW, key, lease, true);
	if (r < 0)
		return r == -ESTALE ? -ESTALE : -EIO;
	size_t glen = share_group_len(key);
	g_autofree char *group = glen ? g_strndup(key, glen) : NULL;
	req q = { .key = glen ? group : key,
		  .id = request,
		  .ttl_ms = (uint64_t)tb->ttl_ms,
		  .limit = glen ? SHARE_LIMIT : 0 };
	ts_held held;
	r = hold_on(tb, l, deadline, &q, &held);
	if (r == -EEXIST) /* broken and taken by another since the renewal */
		return -ESTALE;
	if (r < 0)
		return -EIO;
	if (memcmp(held.lease, lease, TS_ID_SIZE) != 0) {
		/* The lease ended since the renewal and the request was
		 * forgotten: a new grant, nobody's, let go at once. */
		lease_call(tb, l, deadline, TS_LOCKS_RELEASE, q.key, held.lease, true);
		return -ESTALE;
	}
	if (!glen && strcmp(held.fence, fence) != 0) {
		lockfs_log(G_LOG_LEVEL_WARNING, key,
		           "tinystore: the lease recorded for %s has fence %s, not %s: not "
		           "taken back",
		           key, held.fence, fence);
		return -ESTALE;
	}
	return 0;
}

/* What KEY's holder record says of LEASE with FENCE: 0 with VERSION the
 * record's when it is LEASE's, else "" (none, or an older holder's: written
 * over); -ESTALE when it names LEASE with another fence, or another lease
 * not older; -EIO. */
static int adopt_record(ts_backend *tb, ts_link *l, int64_t deadline, const char *key,
                        const uint8_t lease[TS_ID_SIZE], const char *fence,
                        char version[TS_VERSION_MAX + 1])
{
	version[0] = '\0';
	ts_entry e;
	int r = kv_get(tb, l, deadline, key, &e);
	if (r == -ENOENT)
		return 0;
	if (r < 0)
		return r;
	ts_record old;
	if (e.value && ts_record_decode(e.value, e.value_len, &old, NULL)) {
		bool ours = memcmp(old.lease, lease, TS_ID_SIZE) == 0;
		int cmp = lockfs_fence_cmp(old.fence, fence);
		if (ours && cmp == 0)
			g_strlcpy(version, e.version, TS_VERSION_MAX + 1);
		else if (ours || cmp >= 0)
			r = -ESTALE;
		ts_record_clear(&old);
	}
	entry_clear(&e);
	return r;
}

/* The adopted lease's epoch settled with the restart marker as a grant's
 * is: the marker then covers this instance's ttl, which may be longer than
 * the one that took the lease, so that a server restart waits for it.  The
 * grace itself is for new grants: this one was taken before, and is alive
 * at the server, so the server has not restarted since. */
static int adopt_epoch(ts_backend *tb, const char *key, const char *fence)
{
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	if (!take_conn(tb, deadline))
		return -EIO;
	int64_t at = lockfs_mono_us();
	int r = check_epoch(tb, deadline, key, fence, at, server_now_ms(tb));
	give_conn(tb);
	return r == -EEXIST ? 0 : r;
}

/* LP, adopted, registered as acquire registers a grant; its record written
 * again from what the filesystem recorded: over ours at VERSION, or anew.
 * false when the lease is registered already. */
static bool adopt_register(ts_backend *tb, ts_lease *lp, const char *version)
{
	g_autofree char *id = hex_id(lp->rec.lease);
	g_mutex_lock(&tb->st_mu);
	bool twice = g_hash_table_contains(tb->mine, id);
	if (!twice) {
		g_hash_table_insert(tb->mine, g_steal_pointer(&id), lp);
		if (*version) {
			/* Published by the previous instance: rewritten with
			 * WHO and CONTENT, and a ttl from now. */
			strcpy(lp->version, version);
			lp->attempted = lp->written = lp->dirty = true;
			lp->state = PUB_PUBLISHED;
			ts_queue_work(tb, lp);
		} else {
			ts_queue_publish(tb, lp, lockfs_mono_us());
		}
	}
	g_mutex_unlock(&tb->st_mu);
	return !twice;
}

static int ts_adopt(lockfs_backend *be, const char *key, const char *fence, const char *token,
                    const lockfs_holder *who, const void *content, size_t content_len,
                    lockfs_lease **out)
{
	ts_backend *tb = (ts_backend *)be;
	uint8_t id[TS_ID_SIZE], request[TS_ID_SIZE];
	if (!key_ok(tb, key) || !fence ||
	    !ts_fence_valid(fence, strnlen(fence, LOCKFS_FENCE_MAX)) ||
	    !parse_token(token, key, id, request))
		return -EINVAL;
	if (is_mine(tb, id))
		return -EINVAL; /* adopted twice: the second is not one we wrote */
	unsigned li;
	ts_link *link = take_renew_link(tb, &li);
	int64_t deadline = lockfs_mono_us() + tb->timeout_us, sent = 0;
	char version[TS_VERSION_MAX + 1] = "";
	int r = adopt_confirm(tb, link, deadline, key, id, request, fence, &sent);
	if (r == 0)
		r = adopt_record(tb, link, deadline, key, id, fence, version);
	g_mutex_unlock(&tb->renew_mu[li]);
	if (r == 0)
		r = adopt_epoch(tb, key, fence);
	if (r < 0)
		return r; /* the lease, if alive, is left to run out */
	ts_lease *lp = lease_new(tb, key, who, content, content_len);
	memcpy(lp->request, request, TS_ID_SIZE);
	memcpy(lp->rec.lease, id, TS_ID_SIZE);
	g_strlcpy(lp->rec.fence, fence, sizeof(lp->rec.fence));
	/* The silence while no lockfs ran is not the holder's: staleness
	 * counts from now, as from a grant. */
	lp->rec.server_ms = server_now_ms(tb);
	lp->renewed_us = sent;
	/* Its id may be published: a release goes the general way. */
	lp->gen = 0;
	if (!adopt_register(tb, lp, version)) {
		ts_lease_unref(lp);
		return -EINVAL;
	}
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	g_strlcpy(lease->fence, fence, sizeof(lease->fence));
	lease->priv = lp;
	*out = lease;
	return 0;
}

/* ---- configuration ---- */

#define key_error lockfs_config_key_error

static bool valid_lock_name(const char *s)
{
	size_t n = strlen(s);
	if (n < 1 || n > 64 || !(g_ascii_islower(s[0]) || g_ascii_isdigit(s[0])))
		return false;
	for (size_t i = 1; i < n; i++)
		if (!(g_ascii_islower(s[i]) || g_ascii_isdigit(s[i]) || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

/* The token: the file's first line that is not blank or a comment; its last
 * word, so a line of a server's tokens file ("data TOKEN") works too. */
static bool read_token(const lockfs_config *cfg, const char *path, char **out, GError **error)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return key_error(cfg, GROUP, "token_file", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "%s: %s", path, g_strerror(errno));
	if (st.st_mode & (S_IRGRP | S_IROTH))
		return key_error(cfg, GROUP, "token_file", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "%s is readable by others (mode %03o); chmod 600 %s", path,
		                 (unsigned)(st.st_mode & 0777), path);
	g_autofree char *text = NULL;
	GError *e = NULL;
	if (!g_file_get_contents(path, &text, NULL, &e)) {
		key_error(cfg, GROUP, "token_file", error, LOCKFS_CONFIG_ERROR_VALUE, "%s",
		          e->message);
		g_error_free(e);
		return false;
	}
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l; l++) {
		g_strstrip(*l);
		if (!**l || **l == '#')
			continue;
		const char *word = *l + strlen(*l);
		while (word > *l && !g_ascii_isspace(word[-1]))
			word--;
		bool ok = strlen(word) == 43;
		for (const char *p = word; ok && *p; p++)
			ok = g_ascii_isalnum(*p) || *p == '-' || *p == '_';
		if (!ok)
			break;
		*out = g_strdup(word);
		memset(text, 0, strlen(text));
		return true;
	}
	return key_error(cfg, GROUP, "token_file", error, LOCKFS_CONFIG_ERROR_VALUE,
	                 "%s holds no token (43 characters of [A-Za-z0-9_-], as "
	                 "'tinystore token new data' prints)",
	                 path);
}

/* A store on this host, DIR: reached through its socket, nothing of a
 * remote endpoint set. */
static bool read_local_store(const lockfs_config *cfg, ts_target *t, GError **error)
{
	const char *only[] = { "token_file", "ca_file", "verify" };
	for (size_t i = 0; i < G_N_ELEMENTS(only); i++)
		if (lockfs_config_origin(cfg, GROUP, only[i]))
			return key_error(cfg, GROUP, only[i], error, LOCKFS_CONFIG_ERROR_CONFLICT,
			                 "is for a remote endpoint; a local store (dir) is "
			                 "reached through its socket");
	char *abs = g_canonicalize_filename(t->dir, NULL);
	g_free(t->dir);
	t->dir = abs;
	if (!g_file_test(t->dir, G_FILE_TEST_IS_DIR))
		return key_error(cfg, GROUP, "dir", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "%s is not a directory; create the store with "
		                 "'tinystore serve %s'",
		                 t->dir, t->dir);
	return true;
}

/* TLS for a tls:// endpoint: GIO's support, and the CA of CA_FILE if set. */
static bool read_tls(const lockfs_config *cfg, ts_target *t, const char *ca_file, GError **error)
{
	if (!g_tls_backend_supports_tls(g_tls_backend_get_default()))
		return key_error(cfg, GROUP, "endpoint", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "tls:// needs GIO's TLS support: install glib-networking");
	if (ca_file) {
		GError *e = NULL;
		t->ca = g_tls_file_database_new(ca_file, &e);
		if (!t->ca) {
			key_error(cfg, GROUP, "ca_file", error, LOCKFS_CONFIG_ERROR_VALUE, "%s: %s",
			          ca_file, e->message);
			g_error_free(e);
			return false;
		}
	}
	if (!t->verify)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "tinystore: verify=false: %s is not authenticated", t->endpoint);
	return true;
}

/* A remote endpoint: its address, the token of TOKEN_FILE, and TLS (the CA
 * of CA_FILE) for tls://. */
static bool read_remote(const lockfs_config *cfg, ts_target *t, const char *token_file,
                        const char *ca_file, GError **error)
{
	bool tls = g_str_has_prefix(t->endpoint, "tls://");
	GError *e = NULL;
	GSocketConnectable *addr = NULL;
	if (tls || g_str_has_prefix(t->endpoint, "tcp://"))
		addr = g_network_address_parse(t->endpoint + 6, 0, &e);
	if (!addr || g_network_address_get_port(G_NETWORK_ADDRESS(addr)) == 0) {
		key_error(cfg, GROUP, "endpoint", error, LOCKFS_CONFIG_ERROR_VALUE,
		          "'%s' is not tcp://HOST:PORT or tls://HOST:PORT%s%s", t->endpoint,
		          e ? ": " : "", e ? e->message : "");
		g_clear_error(&e);
		g_clear_object(&addr);
		return false;
	}
	g_object_unref(addr);
	if (!token_file)
		return key_error(cfg, GROUP, "endpoint", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "a remote endpoint needs a token: set tinystore_token_file to a "
		                 "file holding a 'data' token");
	if (!read_token(cfg, token_file, &t->token, error))
		return false;
	if (tls)
		return read_tls(cfg, t, ca_file, error);
	const char *only[] = { "ca_file", "verify" };
	for (size_t i = 0; i < G_N_ELEMENTS(only); i++)
		if (lockfs_config_origin(cfg, GROUP, only[i]))
			return key_error(cfg, GROUP, only[i], error, LOCKFS_CONFIG_ERROR_CONFLICT,
			                 "is for tls:// endpoints; tcp:// has no TLS");
	return true;
}

static bool read_target(const lockfs_config *cfg, ts_target *t, GError **error)
{
	g_autofree char *token_file = NULL, *ca_file = NULL;
	if (!lockfs_config_get_string(cfg, GROUP, "dir", NULL, &t->dir, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "endpoint", NULL, &t->endpoint, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "token_file", NULL, &token_file, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "ca_file", NULL, &ca_file, error) ||
	    !lockfs_config_get_bool(cfg, GROUP, "verify", true, &t->verify, error))
		return false;
	if (!t->dir == !t->endpoint) {
		g_set_error(error, LOCKFS_CONFIG_ERROR,
		            t->dir ? LOCKFS_CONFIG_ERROR_CONFLICT : LOCKFS_CONFIG_ERROR_VALUE,
		            "backend 'tinystore' needs one of [tinystore] dir (a store on this "
		            "host: tinystore_dir=/srv/store) or endpoint "
		            "(tinystore_endpoint=tls://HOST:PORT)%s",
		            t->dir ? ", not both" : "");
		return false;
	}
	if (t->dir)
		return read_local_store(cfg, t, error);
	return read_remote(cfg, t, token_file, ca_file, error);
}

/* Parse options: the ttl tinystore can grant, and the lock name
 * (*LOCK_NAME). */
static bool read_lock_options(const lockfs_config *cfg, const lockfs_settings *s, char **lock_name,
                              GError **error)
{
	if (s->ttl_ms < TTL_MIN_MS || s->ttl_ms > TTL_MAX_MS) {
		key_error(cfg, "lockfs", "ttl", error, LOCKFS_CONFIG_ERROR_VALUE,
		          "tinystore leases last 1s to 1h; write a ttl in that range");
		return false;
	}
	if (!lockfs_config_get_string(cfg, GROUP, "lock_name", "lockfs", lock_name, error))
		return false;
	if (!valid_lock_name(*lock_name)) {
		key_error(cfg, GROUP, "lock_name", error, LOCKFS_CONFIG_ERROR_VALUE,
		          "'%s' is not a tinystore lock name; write 1 to 64 of [a-z0-9_-], "
		          "starting with a letter or digit",
		          *lock_name);
		return false;
	}
	return true;
}

/* Fill the vtable: a backend with nothing set but its operations. */
static ts_backend *backend_alloc(void)
{
	ts_backend *tb = g_new0(ts_backend, 1);
	tb->base = (lockfs_backend){
		LOCKFS_BACKEND_INIT("tinystore", LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES |
		                                         LOCKFS_BACKEND_UNDESCRIBED),
		.acquire = ts_acquire,
		.heartbeat = ts_heartbeat,
		.renew = ts_renew,
		.release = ts_release,
		.break_lock = ts_break,
		.inspect = ts_inspect,
		.list = ts_list,
		.lease_free = ts_lease_free,
		.destroy = ts_destroy,
		.held = ts_look,
		.wait_free = ts_wait_free,
		.identity = ts_identity,
		.lease_token = ts_lease_token,
		.adopt = ts_adopt,
	};
	return tb;
}

/* The locks, connections, queues and tables of TB, empty. */
static void state_init(ts_backend *tb)
{
	g_mutex_init(&tb->mu);
	g_cond_init(&tb->cv);
	tb->main.role = "";
	tb->pub.role = " (holder records)";
	tb->waitl.role = " (waits)";
	g_mutex_init(&tb->wait_mu);
	tb->lookl.role = " (looks)";
	g_mutex_init(&tb->look_mu);
	for (int i = 0; i < RENEW_CONNS; i++) {
		tb->renl[i].role = " (renewals)";
		g_mutex_init(&tb->renew_mu[i]);
	}
	g_mutex_init(&tb->st_mu);
	g_cond_init(&tb->st_cv);
	tb->pub_sleep_until = INT64_MIN;
	tb->pubq = g_sequence_new(NULL);
	g_queue_init(&tb->work);
	tb->mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	tb->released = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
}

static lockfs_backend *tinystore_backend_new(const lockfs_config *cfg, const char *mount_id,
                                             GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_autofree char *lock_name = NULL;
	if (!read_lock_options(cfg, s, &lock_name, error))
		return NULL;
	ts_target t = { 0 };
	if (!read_target(cfg, &t, error)) {
		target_clear(&t);
		return NULL;
	}
	t.client = g_strdup("lockfs/" LOCKFS_VERSION);

	ts_backend *tb = backend_alloc();
	tb->target = t;
	tb->lock_name = g_steal_pointer(&lock_name);
	tb->marker_key = g_strconcat(MARKER_PREFIX, tb->lock_name, NULL);
	tb->mount = g_strdup(mount_id ? mount_id : "");
	tb->ttl_ms = s->ttl_ms;
	tb->timeout_us = s->network_timeout_ms * 1000;
	tb->stale_after_us = s->stale_after_ms * 1000;
	/* Lock keys are 1 to 1024 bytes; a kv path holds 01 NAME 00 02 KEY. */
	tb->key_max = MIN(KEY_MAX, KV_PATH_MAX - 3 - strlen(tb->lock_name));
	state_init(tb);

	/* Connect: say now if the server cannot be reached (it may come
	 * later). */
	int64_t deadline = lockfs_mono_us() + MIN(tb->timeout_us, PROBE_MS * 1000);
	if (take_conn(tb, deadline)) {
		ensure_conn(tb, &tb->main, deadline, 1);
		give_conn(tb);
	}
	return &tb->base;
}

/* Locks as tinystore leases, shared with every host reaching the same server;
 * MOUNT_ID is recorded in the holder records. */
const lockfs_backend_type lockfs_tinystore_backend_type = {
	LOCKFS_BACKEND_TYPE_INIT("tinystore"),
	.group = GROUP,
	.keys = (const char *const[]){ "dir", "endpoint", "token_file", "ca_file", "verify",
	                               "lock_name", NULL },
	.create = tinystore_backend_new,
};
