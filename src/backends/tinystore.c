/* The tinystore backend: locks are tinystore leases (locks.hold with wait 0,
 * renewed every renew interval), shared by every host that reaches the same
 * server, and by `tinystore lock DIR hold LOCK KEY` itself.  tinystore has
 * no way to ask who holds a key, so each holder also keeps a record in the
 * key-value store (bucket lockfs-holders, branch [lock_name], key = the lock
 * key) that expires with its lease; inspect, list and break_lock read those.
 * See docs/tinystore-protocol.md for every wire fact used here. */
#include "holder.h"
#include "log.h"
#include "tinystore_conn.h"

#include <errno.h>
#include <lockfs/backends.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#define GROUP "tinystore"
#define BUCKET "lockfs-holders"
#define LIST_LIMIT 1000
#define LIST_MAX 100000 /* records one listing may return */
#define ATTEMPTS 3      /* sends of one request across reconnects */
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define PROBE_MS 3000
#define TTL_MIN_MS 1000 /* tinystore's lease bounds */
#define TTL_MAX_MS 3600000
#define KEY_MAX 1024
#define KV_PATH_MAX 1024

/* Conflict on a kv write guarded by ifVersion. */
#define E_CONFLICT (-EAGAIN)

typedef struct {
	uint8_t request[TS_ID_SIZE];      /* the hold's idempotency id */
	char version[TS_VERSION_MAX + 1]; /* our record's */
	ts_record rec;
} ts_lease;

typedef struct {
	lockfs_backend base;
	ts_target target;
	char *lock_name;
	char *mount;
	int64_t ttl_ms, timeout_us, stale_after_us;
	size_t key_max;

	/* One caller at a time on the connection; waiting is bounded too. */
	GMutex mu;
	GCond cv;
	bool busy;
	ts_conn *conn;
	uint64_t handle; /* the bucket, on this connection */
	int64_t clock_offset_ms;
	int64_t next_try_us, backoff_ms;
	char *last_error; /* logged once per outage */

	GMutex mine_mu;
	GHashTable *mine; /* lease id (hex) of leases held through us */
} ts_backend;

/* A request, built when it is sent: the bucket handle changes with the
 * connection. */
typedef struct {
	const char *key;
	const uint8_t *id; /* lease or request id */
	const void *value;
	size_t value_len;
	uint64_t ttl_ms;
	const char *if_version;
	const char *after;
} req;

static char *hex_id(const uint8_t id[TS_ID_SIZE])
{
	char *s = g_malloc(TS_ID_SIZE * 2 + 1);
	for (int i = 0; i < TS_ID_SIZE; i++)
		snprintf(s + 2 * i, 3, "%02x", id[i]);
	return s;
}

/* ---- the connection ---- */

static bool take_conn(ts_backend *tb, int64_t deadline)
{
	g_mutex_lock(&tb->mu);
	while (tb->busy) {
		if (!g_cond_wait_until(&tb->cv, &tb->mu, deadline)) {
			g_mutex_unlock(&tb->mu);
			return false;
		}
	}
	tb->busy = true;
	g_mutex_unlock(&tb->mu);
	return true;
}

/* A call's deadline, once it has the connection; 0 when it had to wait too long. */
static int64_t begin(ts_backend *tb)
{
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	return take_conn(tb, deadline) ? deadline : 0;
}

static void give_conn(ts_backend *tb)
{
	g_mutex_lock(&tb->mu);
	tb->busy = false;
	g_cond_signal(&tb->cv);
	g_mutex_unlock(&tb->mu);
}

static void drop_conn(ts_backend *tb)
{
	ts_conn_close(tb->conn);
	tb->conn = NULL;
	tb->handle = 0;
}

static void note_down(ts_backend *tb, const char *why)
{
	if (g_strcmp0(tb->last_error, why) != 0)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL, "tinystore: %s", why);
	g_free(tb->last_error);
	tb->last_error = g_strdup(why);
}

static bool open_bucket(ts_backend *tb, ts_conn *c, int64_t deadline, GError **error)
{
	ts_enc e;
	ts_enc_init(&e);
	ts_enc_bucket_open(&e, BUCKET);
	ts_msg m;
	ts_failure f;
	ts_call_result r =
	        ts_conn_call(c, TS_KV_OPEN, e.buf.data, e.buf.size, deadline, &m, &f, error);
	ts_enc_clear(&e);
	bool ok = r == TS_CALL_OK && ts_handle_decode(&m, &tb->handle, error);
	if (r == TS_CALL_FAILED)
		g_set_error(error, TS_ERROR, TS_ERROR_REFUSED, "opening bucket " BUCKET ": %s",
		            f.message);
	ts_failure_clear(&f);
	ts_msg_clear(&m);
	return ok;
}

/* Connect (again) unless connected, trying up to TRIES times; failures
 * back off, bounded by the deadline. */
static bool ensure_conn(ts_backend *tb, int64_t deadline, int tries)
{
	for (int i = 0; !tb->conn; i++) {
		if (i == tries)
			return false;
		int64_t now = lockfs_mono_us();
		if (now < tb->next_try_us) {
			if (tb->next_try_us >= deadline)
				return false;
			g_usleep((gulong)(tb->next_try_us - now));
		}
		if (lockfs_mono_us() >= deadline)
			return false;
		GError *e = NULL;
		ts_conn *c = ts_conn_open(&tb->target, deadline, &e);
		if (c && !open_bucket(tb, c, deadline, &e)) {
			ts_conn_close(c);
			c = NULL;
		}
		if (c) {
			tb->conn = c;
			tb->clock_offset_ms = ts_conn_clock_offset_ms(c);
			tb->backoff_ms = 0;
			tb->next_try_us = 0;
			if (tb->last_error)
				lockfs_log(G_LOG_LEVEL_INFO, NULL, "tinystore: connected again");
			g_clear_pointer(&tb->last_error, g_free);
			return true;
		}
		note_down(tb, e->message);
		g_error_free(e);
		tb->backoff_ms = CLAMP(tb->backoff_ms * 2, BACKOFF_MIN_MS, BACKOFF_MAX_MS);
		tb->next_try_us = lockfs_mono_us() + tb->backoff_ms * 1000;
	}
	return true;
}

static void build(ts_backend *tb, uint16_t method, const req *q, ts_enc *e)
{
	switch (method) {
	case TS_LOCKS_HOLD:
		ts_enc_hold(e, tb->lock_name, q->key, q->ttl_ms, q->id);
		break;
	case TS_LOCKS_RENEW:
		ts_enc_renew(e, q->id, q->ttl_ms);
		break;
	case TS_LOCKS_RELEASE:
		ts_enc_lease(e, q->id);
		break;
	case TS_KV_LIST:
		ts_enc_kv_list(e, tb->handle, tb->lock_name, q->after, LIST_LIMIT);
		break;
	default:
		ts_enc_kv_call(e, tb->handle, tb->lock_name, q->key, q->value, q->value_len,
		               q->ttl_ms, q->if_version);
	}
}

/* Send Q and wait: 0 with *ANS, 1 with *FAIL, or -EIO.  A broken connection
 * is replaced and Q sent again: every request lockfs sends is safe to
 * repeat (holds by their request id; the rest are settled by the callers). */
static int rpc(ts_backend *tb, int64_t deadline, uint16_t method, const req *q, ts_msg *ans,
               ts_failure *fail)
{
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		if (!ensure_conn(tb, deadline, G_MAXINT))
			return -EIO;
		ts_enc e;
		ts_enc_init(&e);
		build(tb, method, q, &e);
		GError *err = NULL;
		ts_call_result r = ts_conn_call(tb->conn, method, e.buf.data, e.buf.size, deadline,
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
			drop_conn(tb);
			continue;
		}
		bool garbage = err->code == TS_ERROR_PROTOCOL;
		note_down(tb, err->message);
		g_error_free(err);
		drop_conn(tb);
		/* A server that speaks garbage will do it again. */
		if (garbage)
			return -EIO;
	}
	return -EIO;
}

/* Send Q: 0 with *M to decode, or what the server's Failure means to
 * lockfs (conflict, lost, in_use; invalid is -EINVAL; the rest, logged,
 * -EIO), or -EIO. */
static int call(ts_backend *tb, int64_t deadline, uint16_t method, const req *q, const char *what,
                ts_msg *m)
{
	static const struct {
		const char *code;
		int err;
	} known[] = { { "conflict", E_CONFLICT }, { "lost", -ESTALE }, { "in_use", -EEXIST } };
	ts_failure f;
	int r = rpc(tb, deadline, method, q, m, &f);
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

/* ---- lock calls ---- */

/* 0 granted (*HELD), -EEXIST busy, -EINVAL, -EIO. */
static int do_hold(ts_backend *tb, int64_t deadline, const char *key, const uint8_t *request,
                   ts_held *held)
{
	req q = { .key = key, .id = request, .ttl_ms = (uint64_t)tb->ttl_ms };
	ts_msg m;
	int r = call(tb, deadline, TS_LOCKS_HOLD, &q, "locks.hold", &m);
	if (r < 0)
		return r == -EEXIST || r == -EINVAL ? r : -EIO;
	GError *e = NULL;
	bool ok = ts_held_decode(&m, held, &e);
	ts_msg_clear(&m);
	if (!ok) {
		/* Drop the connection: whatever it says next is not to be trusted. */
		drop_conn(tb);
		return bad_answer(key, "locks.hold", e);
	}
	return held->acquired ? 0 : -EEXIST;
}

/* Renew or release (they answer {}): 0, -ESTALE (lost), -EIO. */
static int lease_call(ts_backend *tb, int64_t deadline, uint16_t method, const char *key,
                      const uint8_t *id)
{
	req q = { .key = key, .id = id, .ttl_ms = (uint64_t)tb->ttl_ms };
	const char *what = method == TS_LOCKS_RENEW ? "locks.renew" : "locks.release";
	ts_msg m;
	int r = call(tb, deadline, method, &q, what, &m);
	if (r < 0)
		return r == -ESTALE ? r : -EIO;
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

/* 0 found (*E), -ENOENT, -EIO. */
static int kv_get(ts_backend *tb, int64_t deadline, const char *key, ts_entry *e)
{
	req q = { .key = key };
	ts_msg m;
	int r = call(tb, deadline, TS_KV_GET, &q, "kv.get", &m);
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

/* kv.set / kv.create: 0 (*W), E_CONFLICT, -EIO. */
static int kv_write(ts_backend *tb, int64_t deadline, uint16_t method, const char *key,
                    const GByteArray *value, uint64_t ttl_ms, const char *if_version, ts_written *w)
{
	req q = { .key = key,
		  .value = value->data,
		  .value_len = value->len,
		  .ttl_ms = ttl_ms,
		  .if_version = if_version && *if_version ? if_version : NULL };
	const char *what = method == TS_KV_SET ? "kv.set" : "kv.create";
	ts_msg m;
	int r = call(tb, deadline, method, &q, what, &m);
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

/* kv.expire / kv.delete guarded by IF_VERSION: 0 found, -ENOENT, E_CONFLICT, -EIO. */
static int kv_touch(ts_backend *tb, int64_t deadline, uint16_t method, const char *key,
                    uint64_t ttl_ms, const char *if_version)
{
	req q = { .key = key, .ttl_ms = ttl_ms, .if_version = if_version };
	const char *what = method == TS_KV_DELETE ? "kv.delete" : "kv.expire";
	ts_msg m;
	int r = call(tb, deadline, method, &q, what, &m);
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

/* Write LP's record for KEY where there may be none, a stale one, or (after
 * a retry) our own already; never over a newer holder's (-ESTALE). */
static int write_record(ts_backend *tb, int64_t deadline, const char *key, ts_lease *lp)
{
	g_autoptr(GByteArray) value = ts_record_encode(&lp->rec);
	for (int i = 0; i < ATTEMPTS; i++) {
		ts_written w;
		int r = kv_write(tb, deadline, TS_KV_CREATE, key, value, (uint64_t)tb->ttl_ms, NULL,
		                 &w);
		if (r < 0 && r != E_CONFLICT)
			return r;
		if (r == 0 && w.written) {
			strcpy(lp->version, w.version);
			return 0;
		}
		/* A live record is there: whose? */
		ts_entry e;
		r = kv_get(tb, deadline, key, &e);
		if (r == -ENOENT)
			continue;
		if (r < 0)
			return r;
		ts_record old;
		if (e.value && ts_record_decode(e.value, e.value_len, &old, NULL)) {
			bool ours = memcmp(old.lease, lp->rec.lease, TS_ID_SIZE) == 0;
			bool newer = lockfs_fence_cmp(old.fence, lp->rec.fence) > 0;
			ts_record_clear(&old);
			if (ours) {
				strcpy(lp->version, e.version);
				entry_clear(&e);
				return 0;
			}
			if (newer) {
				entry_clear(&e);
				return -ESTALE;
			}
		}
		r = kv_write(tb, deadline, TS_KV_SET, key, value, (uint64_t)tb->ttl_ms, e.version,
		             &w);
		entry_clear(&e);
		if (r == 0) {
			strcpy(lp->version, w.version);
			return 0;
		}
		if (r != E_CONFLICT)
			return r;
	}
	lockfs_log(G_LOG_LEVEL_WARNING, key, "tinystore: the holder record keeps changing");
	return -EIO;
}

/* Our record was not at the version we knew: adopt it if it is still ours,
 * give up if a newer holder wrote it, else write it again. */
static int repair_record(ts_backend *tb, int64_t deadline, const char *key, ts_lease *lp,
                         bool lease_checked)
{
	ts_entry e;
	int r = kv_get(tb, deadline, key, &e);
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
		r = lease_call(tb, deadline, TS_LOCKS_RENEW, key, lp->rec.lease);
		if (r < 0)
			return r;
	}
	return write_record(tb, deadline, key, lp);
}

/* ---- what we tell the filesystem ---- */

static bool is_mine(ts_backend *tb, const uint8_t lease[TS_ID_SIZE])
{
	g_autofree char *id = hex_id(lease);
	g_mutex_lock(&tb->mine_mu);
	bool mine = g_hash_table_contains(tb->mine, id);
	g_mutex_unlock(&tb->mine_mu);
	return mine;
}

/* Now by the server's clock, as measured at WELCOME (unix ms). */
static int64_t server_now_ms(ts_backend *tb)
{
	return lockfs_now_us() / 1000 + tb->clock_offset_ms;
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
	if (r->content) {
		/* NUL-terminated past its length, as the filesystem keeps content. */
		out->content = g_malloc(r->content_len + 1);
		memcpy(out->content, r->content, r->content_len);
		out->content[r->content_len] = '\0';
		out->content_len = r->content_len;
	}
	out->server_time_us = r->server_ms * 1000;
}

static bool key_ok(ts_backend *tb, const char *key)
{
	size_t n = key ? strlen(key) : 0;
	return n > 0 && n <= tb->key_max && g_utf8_validate(key, (gssize)n, NULL);
}

/* The record of KEY: 0, -ENOENT, -EIO (a record we cannot read). */
static int read_record(ts_backend *tb, int64_t deadline, const char *key, ts_entry *e, ts_record *r)
{
	int rc = kv_get(tb, deadline, key, e);
	if (rc < 0)
		return rc;
	GError *err = NULL;
	if (!e->value) {
		g_set_error(&err, TS_ERROR, TS_ERROR_PROTOCOL, "a holder record without a value");
	} else if (ts_record_decode(e->value, e->value_len, r, &err)) {
		return 0;
	}
	entry_clear(e);
	return bad_answer(key, "holder record", err);
}

/* Break KEY's holder: release the lease its record names, then the record. */
static int break_holder(ts_backend *tb, int64_t deadline, const char *key, const ts_record *r,
                        const ts_entry *e)
{
	int rc = lease_call(tb, deadline, TS_LOCKS_RELEASE, key, r->lease);
	if (rc < 0 && rc != -ESTALE)
		return rc;
	rc = kv_touch(tb, deadline, TS_KV_DELETE, key, 0, e->version);
	if (rc == E_CONFLICT) {
		/* The holder wrote again meanwhile: its record, its lease, gone. */
		ts_entry again;
		ts_record now;
		if (read_record(tb, deadline, key, &again, &now) == 0) {
			if (memcmp(now.lease, r->lease, TS_ID_SIZE) == 0)
				kv_touch(tb, deadline, TS_KV_DELETE, key, 0, again.version);
			ts_record_clear(&now);
			entry_clear(&again);
		}
	}
	return rc == -EIO ? -EIO : 0;
}

/* ---- the interface ---- */

static int ts_acquire(lockfs_backend *be, const char *key, const lockfs_holder *who,
                      lockfs_lease **out, lockfs_acquire_result *res)
{
	ts_backend *tb = (ts_backend *)be;
	if (res)
		memset(res, 0, sizeof(*res));
	if (!key_ok(tb, key))
		return -EINVAL;
	int64_t deadline = lockfs_mono_us() + tb->timeout_us;
	ts_lease *lp = g_new0(ts_lease, 1);
	if (getrandom(lp->request, sizeof(lp->request), 0) != sizeof(lp->request)) {
		g_free(lp);
		return -EIO;
	}
	lockfs_holder_copy(&lp->rec.holder, who);
	lp->rec.mount = g_strdup(tb->mount);
	lp->rec.ttl_ms = tb->ttl_ms;
	if (!take_conn(tb, deadline)) {
		ts_record_clear(&lp->rec);
		g_free(lp);
		return -EIO;
	}
	int64_t sent = lockfs_mono_us();
	ts_held held;
	int r = do_hold(tb, deadline, key, lp->request, &held);
	if (r == -EEXIST && tb->stale_after_us) {
		/* A holder silent past stale_after is broken, as the local
		 * backend and the legacy tools do. */
		ts_entry e;
		ts_record old;
		if (read_record(tb, deadline, key, &e, &old) == 0) {
			if (is_stale(tb, &old) && break_holder(tb, deadline, key, &old, &e) == 0) {
				if (res) {
					res->broke = true;
					fill_info(tb, key, &old, &e, &res->previous);
				}
				sent = lockfs_mono_us();
				r = do_hold(tb, deadline, key, lp->request, &held);
			}
			ts_record_clear(&old);
			entry_clear(&e);
		}
	}
	if (r == 0) {
		lp->rec.server_ms = server_now_ms(tb);
		memcpy(lp->rec.lease, held.lease, TS_ID_SIZE);
		g_strlcpy(lp->rec.fence, held.fence, sizeof(lp->rec.fence));
		r = write_record(tb, deadline, key, lp);
		if (r < 0) {
			/* No record, no grant: others could neither see nor break it. */
			lease_call(tb, deadline, TS_LOCKS_RELEASE, key, lp->rec.lease);
			r = r == -ESTALE ? -EEXIST : -EIO;
		}
	}
	give_conn(tb);
	if (r < 0) {
		ts_record_clear(&lp->rec);
		g_free(lp);
		return r;
	}
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	g_strlcpy(lease->fence, lp->rec.fence, sizeof(lease->fence));
	lease->renewed_mono_us = sent;
	lease->priv = lp;
	g_mutex_lock(&tb->mine_mu);
	g_hash_table_add(tb->mine, hex_id(lp->rec.lease));
	g_mutex_unlock(&tb->mine_mu);
	*out = lease;
	return 0;
}

static int ts_heartbeat(lockfs_backend *be, lockfs_lease *lease, int64_t now_us,
                        const void *content, size_t len)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	lp->rec.holder.heartbeat_us = now_us;
	lp->rec.server_ms = server_now_ms(tb);
	if (content) {
		g_free(lp->rec.content);
		lp->rec.content_len = MIN(len, LOCKFS_CONTENT_MAX);
		lp->rec.content = g_memdup2(content, lp->rec.content_len);
	}
	g_autoptr(GByteArray) value = ts_record_encode(&lp->rec);
	int r = E_CONFLICT;
	for (int i = 0; i < 2 && r == E_CONFLICT; i++) {
		ts_written w;
		/* No ttl: the record keeps the expiry renewals give it. */
		r = kv_write(tb, deadline, TS_KV_SET, lease->key, value, 0, lp->version, &w);
		if (r == 0)
			strcpy(lp->version, w.version);
		else if (r == E_CONFLICT &&
		         (r = repair_record(tb, deadline, lease->key, lp, false)) == 0)
			r = E_CONFLICT; /* ours again, at a new version: write it */
	}
	give_conn(tb);
	return r == E_CONFLICT ? -EIO : r;
}

static int ts_renew(lockfs_backend *be, lockfs_lease *lease)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	/* The lease runs from when the renewal was sent, not answered. */
	int64_t sent = lockfs_mono_us();
	int r = lease_call(tb, deadline, TS_LOCKS_RENEW, lease->key, lp->rec.lease);
	if (r == 0) {
		lease->renewed_mono_us = sent;
		int k = kv_touch(tb, deadline, TS_KV_EXPIRE, lease->key, (uint64_t)tb->ttl_ms,
		                 lp->version);
		if (k == E_CONFLICT || k == -ENOENT) {
			k = repair_record(tb, deadline, lease->key, lp, true);
			if (k == 0)
				k = kv_touch(tb, deadline, TS_KV_EXPIRE, lease->key,
				             (uint64_t)tb->ttl_ms, lp->version);
		}
		/* The lease is what counts; the record is only its description. */
		if (k < 0)
			lockfs_log(G_LOG_LEVEL_WARNING, lease->key,
			           "tinystore: lease renewed, holder record not (%s)",
			           g_strerror(-k));
	}
	give_conn(tb);
	return r;
}

static void forget(ts_backend *tb, const uint8_t lease[TS_ID_SIZE])
{
	g_autofree char *id = hex_id(lease);
	g_mutex_lock(&tb->mine_mu);
	g_hash_table_remove(tb->mine, id);
	g_mutex_unlock(&tb->mine_mu);
}

static int ts_release(lockfs_backend *be, lockfs_lease *lease)
{
	ts_backend *tb = (ts_backend *)be;
	ts_lease *lp = lease->priv;
	int64_t deadline = begin(tb);
	if (!deadline)
		return -EIO;
	/* tinystore's release answers {} for any lease, held or not: a renewal
	 * first tells whether this one still holds its key. */
	int r = lease_call(tb, deadline, TS_LOCKS_RENEW, lease->key, lp->rec.lease);
	if (r == 0)
		r = lease_call(tb, deadline, TS_LOCKS_RELEASE, lease->key, lp->rec.lease);
	if (r == 0 && kv_touch(tb, deadline, TS_KV_DELETE, lease->key, 0, lp->version) == -EIO)
		lockfs_log(G_LOG_LEVEL_WARNING, lease->key,
		           "tinystore: released; the holder record stays until it expires");
	give_conn(tb);
	if (r == 0)
		forget(tb, lp->rec.lease);
	return r == -ESTALE ? -ENOENT : r;
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

/* Add E's record to INFOS if its key starts with PREFIX. */
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
	lockfs_lock_info *info = g_new(lockfs_lock_info, 1);
	fill_info(tb, key, &r, e, info);
	ts_record_clear(&r);
	g_ptr_array_add(infos, info);
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
		int r = kv_get(tb, deadline, prefix, &e);
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
		if (call(tb, deadline, TS_KV_LIST, &q, "kv.list", &m) < 0)
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

static void ts_lease_free(lockfs_backend *be, lockfs_lease *lease)
{
	if (!lease)
		return;
	ts_lease *lp = lease->priv;
	forget((ts_backend *)be, lp->rec.lease);
	ts_record_clear(&lp->rec);
	g_free(lp);
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
	drop_conn(tb);
	target_clear(&tb->target);
	g_free(tb->lock_name);
	g_free(tb->mount);
	g_free(tb->last_error);
	g_hash_table_destroy(tb->mine);
	g_mutex_clear(&tb->mu);
	g_cond_clear(&tb->cv);
	g_mutex_clear(&tb->mine_mu);
	g_free(tb);
}

/* ---- configuration ---- */

static bool key_error(const lockfs_config *cfg, const char *group, const char *key, GError **error,
                      int code, const char *fmt, ...) G_GNUC_PRINTF(6, 7);
static bool key_error(const lockfs_config *cfg, const char *group, const char *key, GError **error,
                      int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	const char *origin = lockfs_config_origin(cfg, group, key);
	if (!origin)
		g_set_error(error, LOCKFS_CONFIG_ERROR, code, "key '%s' in [%s]: %s", key, group,
		            why);
	else if (g_str_has_prefix(origin, "mount option"))
		g_set_error(error, LOCKFS_CONFIG_ERROR, code, "%s: %s", origin, why);
	else
		g_set_error(error, LOCKFS_CONFIG_ERROR, code, "%s: key '%s' in [%s]: %s", origin,
		            key, group, why);
	return false;
}

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
	if (t->dir) {
		const char *only[] = { "token_file", "ca_file", "verify" };
		for (size_t i = 0; i < G_N_ELEMENTS(only); i++)
			if (lockfs_config_origin(cfg, GROUP, only[i]))
				return key_error(cfg, GROUP, only[i], error,
				                 LOCKFS_CONFIG_ERROR_CONFLICT,
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
	if (!tls) {
		const char *only[] = { "ca_file", "verify" };
		for (size_t i = 0; i < G_N_ELEMENTS(only); i++)
			if (lockfs_config_origin(cfg, GROUP, only[i]))
				return key_error(cfg, GROUP, only[i], error,
				                 LOCKFS_CONFIG_ERROR_CONFLICT,
				                 "is for tls:// endpoints; tcp:// has no TLS");
		return true;
	}
	if (!g_tls_backend_supports_tls(g_tls_backend_get_default()))
		return key_error(cfg, GROUP, "endpoint", error, LOCKFS_CONFIG_ERROR_VALUE,
		                 "tls:// needs GIO's TLS support: install glib-networking");
	if (ca_file) {
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

lockfs_backend *lockfs_tinystore_backend_new(const lockfs_config *cfg, const char *mount_id,
                                             GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	if (s->ttl_ms < TTL_MIN_MS || s->ttl_ms > TTL_MAX_MS) {
		key_error(cfg, "lockfs", "ttl", error, LOCKFS_CONFIG_ERROR_VALUE,
		          "tinystore leases last 1s to 1h; write a ttl in that range");
		return NULL;
	}
	g_autofree char *lock_name = NULL;
	if (!lockfs_config_get_string(cfg, GROUP, "lock_name", "lockfs", &lock_name, error))
		return NULL;
	if (!valid_lock_name(lock_name)) {
		key_error(cfg, GROUP, "lock_name", error, LOCKFS_CONFIG_ERROR_VALUE,
		          "'%s' is not a tinystore lock name; write 1 to 64 of [a-z0-9_-], "
		          "starting with a letter or digit",
		          lock_name);
		return NULL;
	}
	ts_target t = { 0 };
	if (!read_target(cfg, &t, error)) {
		target_clear(&t);
		return NULL;
	}
	t.client = g_strdup("lockfs/" LOCKFS_VERSION);

	ts_backend *tb = g_new0(ts_backend, 1);
	tb->base = (lockfs_backend){
		.version = LOCKFS_BACKEND_VERSION,
		.name = "tinystore",
		.flags = LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES | LOCKFS_BACKEND_UNDESCRIBED,
		.acquire = ts_acquire,
		.heartbeat = ts_heartbeat,
		.renew = ts_renew,
		.release = ts_release,
		.break_lock = ts_break,
		.inspect = ts_inspect,
		.list = ts_list,
		.lease_free = ts_lease_free,
		.destroy = ts_destroy,
	};
	tb->target = t;
	tb->lock_name = g_steal_pointer(&lock_name);
	tb->mount = g_strdup(mount_id ? mount_id : "");
	tb->ttl_ms = s->ttl_ms;
	tb->timeout_us = s->network_timeout_ms * 1000;
	tb->stale_after_us = s->stale_after_ms * 1000;
	/* Lock keys are 1 to 1024 bytes; a kv path holds 01 NAME 00 02 KEY. */
	tb->key_max = MIN(KEY_MAX, KV_PATH_MAX - 3 - strlen(tb->lock_name));
	g_mutex_init(&tb->mu);
	g_cond_init(&tb->cv);
	g_mutex_init(&tb->mine_mu);
	tb->mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);

	/* Say now if the server cannot be reached (it may come later). */
	int64_t deadline = lockfs_mono_us() + MIN(tb->timeout_us, PROBE_MS * 1000);
	if (take_conn(tb, deadline)) {
		ensure_conn(tb, deadline, 1);
		give_conn(tb);
	}
	return &tb->base;
}
