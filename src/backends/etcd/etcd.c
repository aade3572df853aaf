/* The etcd backend: a lock is a key under a prefix, created only if absent
 * (one txn comparing its create revision with 0) and attached to the mount's
 * one etcd lease; its fence is that create revision, which grows across the
 * whole cluster and its restarts.  The key's value is the holder record
 * (etcd_record.c), so other hosts read holder and content at once.
 *
 * One lease per mount: every renew() of any lock refreshes the shared lease
 * at most once per renew interval (a keep-alive sent within the last renew
 * interval serves every lock), and when etcd says the lease is gone every
 * lock on it is lost together.  Because a renew() may answer with a
 * keep-alive sent up to a renew interval before the call, the lease is
 * granted for ttl + renew interval: the mount declares a lock lost ttl less a
 * fifth after the call it believes renewed it, which is still a fifth of ttl
 * before etcd could expire the lease and grant the key to anyone else. */
#include "etcd_client.h"
#include "etcd_record.h"

#include <errno.h>
#include <inttypes.h>
#include <lockfs/backend_support.h>
#include <lockfs/backends.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GROUP "etcd"
/* Keys (prefix included) longer than this are refused (etcd takes 1.5 MiB
 * requests; lock names are paths). */
#define KEY_MAX 4096
/* Keys per page of a listing. */
#define PAGE 1000
/* At mount, how long to wait for the cluster at most. */
#define PROBE_MAX_US (5 * G_USEC_PER_SEC)

typedef struct {
	char *key; /* full etcd key, prefix included (raw bytes, no NUL inside) */
	int64_t create_rev, mod_rev, lease;
	char *value; /* NUL-terminated copy */
	size_t value_len;
} ekv;

typedef struct etcd_backend etcd_backend;

/* The backend's part of a lockfs_lease. */
typedef struct {
	etcd_record rec; /* what the key's value says, kept current */
	int64_t create_rev;
	int64_t lease_id; /* the mount lease it is attached to */
	gint broken;      /* broken through this instance (atomic) */
	bool released;    /* release() answered 0 or -ENOENT */
} etcd_priv;

/* A key to delete before the next keep-alive: a lock declared lost (by its
 * create revision), or one a put of ours may have taken although its
 * answer was lost (by the value put, which no other holder's can equal). */
typedef struct {
	char *key;
	int64_t create_rev;
	char *value; /* base64; the put's, or NULL */
	int rounds;  /* keep-alive rounds a put's key is still looked for */
} abandoned_key;

/* How many keep-alive rounds a put whose answer was lost is looked for: it
 * may still reach etcd after the call gave up (queued in a socket). */
#define UNANSWERED_ROUNDS 3

struct etcd_backend {
	lockfs_backend base;
	etcd_client *cl;
	char *prefix;
	size_t prefix_len;
	char *mount;
	char *identity; /* identity(): the cluster and the prefix */
	int64_t ttl_ms, timeout_us, stale_after_ms, reuse_us, lease_ttl_s;

	GMutex mu;
	GCond cv;
	/* The mount lease: its id (0: none yet), whether etcd said it is gone,
	 * when the last keep-alive (or grant) that succeeded was sent, and
	 * whether one is under way. */
	int64_t lease_id;
	bool lease_lost;
	int64_t ka_ok_sent;
	bool ka_busy;
	/* The mount lease's TTL (s) and how long a keep-alive serves renewals:
	 * lease_ttl_s and reuse_us for a lease granted here, less for a lease
	 * resumed from an instance with a shorter ttl. */
	int64_t cur_ttl_s, cur_reuse_us;
	/* Nothing was asked of the mount lease yet (create() grants it
	 * eagerly): resume() may revoke it. */
	bool lease_unused;
	GHashTable *mine;     /* full key → etcd_priv of a lease held here */
	GPtrArray *abandoned; /* abandoned_key: lost locks to delete before the next keep-alive */
	int64_t last_log_us;  /* rate limit of error lines */
};

/* ---- small helpers ---- */

static void ekv_clear(ekv *kv)
{
	g_free(kv->key);
	g_free(kv->value);
	memset(kv, 0, sizeof(*kv));
}

static bool ekv_from_json(JsonObject *o, ekv *kv)
{
	memset(kv, 0, sizeof(*kv));
	const char *k = etcd_json_str(o, "key");
	if (!k)
		return false;
	gsize n = 0;
	kv->key = (char *)g_base64_decode(k, &n);
	kv->key = g_realloc(kv->key, n + 1);
	kv->key[n] = '\0';
	kv->create_rev = etcd_json_int(o, "create_revision", 0);
	kv->mod_rev = etcd_json_int(o, "mod_revision", 0);
	kv->lease = etcd_json_int(o, "lease", 0);
	const char *v = etcd_json_str(o, "value");
	gsize vn = 0;
	guchar *bytes = v && *v ? g_base64_decode(v, &vn) : NULL;
	kv->value = g_malloc(vn + 1);
	if (vn)
		memcpy(kv->value, bytes, vn);
	kv->value[vn] = '\0';
	kv->value_len = vn;
	g_free(bytes);
	/* A NUL inside the key: not a key of ours. */
	if (strlen(kv->key) != n || kv->create_rev <= 0) {
		ekv_clear(kv);
		return false;
	}
	return true;
}

/* The first kv of a range response for the key WANT, or false (also when
 * the server answered with another key). */
static bool first_kv(JsonObject *range, const char *want, ekv *kv)
{
	JsonArray *kvs = etcd_json_array(range, "kvs");
	if (!kvs || json_array_get_length(kvs) == 0)
		return false;
	JsonNode *n = json_array_get_element(kvs, 0);
	if (!JSON_NODE_HOLDS_OBJECT(n) || !ekv_from_json(json_node_get_object(n), kv))
		return false;
	if (strcmp(kv->key, want) != 0) {
		ekv_clear(kv);
		return false;
	}
	return true;
}

/* The range response inside a txn's RESPONSES[i]. */
static JsonObject *txn_range(JsonObject *txn, guint i)
{
	JsonArray *a = etcd_json_array(txn, "responses");
	if (!a || json_array_get_length(a) <= i)
		return NULL;
	JsonNode *n = json_array_get_element(a, i);
	return JSON_NODE_HOLDS_OBJECT(n) ? etcd_json_obj(json_node_get_object(n), "response_range")
	                                 : NULL;
}

static char *full_key(etcd_backend *b, const char *key)
{
	return g_strconcat(b->prefix, key, NULL);
}

/* The end of the range of keys starting with P (etcd's "prefix end"). */
static char *prefix_end(const char *p, size_t *len)
{
	size_t n = strlen(p);
	char *e = g_strndup(p, n);
	while (n > 0) {
		if ((unsigned char)e[n - 1] < 0xff) {
			e[n - 1]++;
			e[n] = '\0';
			*len = n;
			return e;
		}
		n--;
	}
	/* Every byte 0xff: all keys from P on ("\0" means no end). */
	e[0] = '\0';
	*len = 1;
	return e;
}

static int64_t deadline_of(etcd_backend *b)
{
	return lockfs_mono_us() + b->timeout_us;
}

/* Log WHY (at most every 10 s, the rest at debug). */
static void log_failure(etcd_backend *b, const char *key, const char *what, const char *why)
{
	int64_t now = lockfs_mono_us();
	g_mutex_lock(&b->mu);
	bool loud = now - b->last_log_us >= 10 * G_USEC_PER_SEC;
	if (loud)
		b->last_log_us = now;
	g_mutex_unlock(&b->mu);
	lockfs_log(loud ? G_LOG_LEVEL_WARNING : G_LOG_LEVEL_DEBUG, key,
	           "etcd: %s failed: %s; check that the etcd cluster is up and reachable", what,
	           why);
}

/* Call PATH and log a failure; -ESTALE when etcd says the lease is gone. */
static int call(etcd_backend *b, const char *key, const char *what, const char *path,
                const char *body, int64_t deadline, JsonNode **out)
{
	g_autofree char *why = NULL;
	int r = etcd_call(b->cl, path, body, deadline, out, &why);
	if (r == 0)
		return 0;
	if (why && strstr(why, "requested lease not found"))
		return -ESTALE;
	log_failure(b, key, what, why ? why : "unknown error");
	return r;
}

/* ---- the mount lease ---- */

/* Keep lease ID alive: 0 (*TTL_S, when not NULL, its TTL), -ESTALE when
 * etcd no longer has it, or -EIO. */
static int lease_keepalive(etcd_backend *b, int64_t id, int64_t deadline, int64_t *ttl_s)
{
	g_autofree char *body = g_strdup_printf("{\"ID\":\"%" PRId64 "\"}", id);
	JsonNode *out = NULL;
	int r = call(b, NULL, "renewing the mount lease", "/v3/lease/keepalive", body, deadline,
	             &out);
	if (r)
		return r;
	/* A lease etcd no longer has answers TTL 0 (left out). */
	int64_t ttl = etcd_json_int(json_node_get_object(out), "TTL", 0);
	json_node_unref(out);
	if (ttl_s)
		*ttl_s = ttl;
	return ttl > 0 ? 0 : -ESTALE;
}

static int lease_grant(etcd_backend *b, int64_t deadline, int64_t *id)
{
	g_autofree char *body = g_strdup_printf("{\"TTL\":\"%" PRId64 "\"}", b->lease_ttl_s);
	JsonNode *out = NULL;
	int r = call(b, NULL, "granting the mount lease", "/v3/lease/grant", body, deadline, &out);
	if (r)
		return r == -ESTALE ? -EIO : r;
	*id = etcd_json_int(json_node_get_object(out), "ID", 0);
	json_node_unref(out);
	if (*id == 0) {
		log_failure(b, NULL, "granting the mount lease", "the reply has no lease ID");
		return -EIO;
	}
	return 0;
}

static void abandoned_free(gpointer p)
{
	abandoned_key *a = p;
	g_free(a->key);
	g_free(a->value);
	g_free(a);
}

/* Delete the keys of locks the mount declared lost while the lease may live
 * on, and of puts whose answer was lost, so the shared lease does not keep
 * them for nobody (each only if still ours). */
static void delete_abandoned(etcd_backend *b, GPtrArray *keys, int64_t deadline)
{
	for (guint i = 0; i < keys->len; i++) {
		abandoned_key *a = keys->pdata[i];
		const char *key = a->key + b->prefix_len;
		g_autofree char *body = a->value ? etcd_txn_delete_value_body(a->key, a->value)
		                                 : etcd_txn_delete_body(a->key, a->create_rev, 0);
		JsonNode *out = NULL;
		int r = call(b, key,
		             a->value ? "deleting a lock taken by an unanswered put"
		                      : "deleting a lost lock",
		             "/v3/kv/txn", body, deadline, &out);
		bool done = r == 0 || r == -ESTALE;
		if (r == 0 && a->value) {
			if (etcd_json_bool(json_node_get_object(out), "succeeded"))
				lockfs_log(
				        G_LOG_LEVEL_WARNING, key,
				        "etcd: deleted %s: a put of this mount had taken it, but "
				        "its answer was lost and its taker was told EIO",
				        key);
			else
				done = --a->rounds <= 0;
		}
		if (out)
			json_node_unref(out);
		if (done) {
			abandoned_free(a);
			keys->pdata[i] = NULL;
		}
	}
	g_mutex_lock(&b->mu);
	for (guint i = 0; i < keys->len; i++)
		if (keys->pdata[i])
			g_ptr_array_add(b->abandoned, keys->pdata[i]);
	g_mutex_unlock(&b->mu);
	g_ptr_array_set_free_func(keys, NULL);
	g_ptr_array_free(keys, TRUE);
}

/* Keys checked per txn (etcd refuses more than --max-txn-ops, 128 by
 * default, compares or operations in one). */
#define VERIFY_CHUNK 100

typedef struct {
	char *key;
	int64_t create_rev;
} held_key;

static void mark_broken(etcd_backend *b, const char *key, int64_t create_rev)
{
	g_mutex_lock(&b->mu);
	etcd_priv *p = g_hash_table_lookup(b->mine, key);
	if (p && p->create_rev == create_rev)
		g_atomic_int_set(&p->broken, 1);
	g_mutex_unlock(&b->mu);
}

/* Mark the locks of this instance whose key is gone or another's (broken by
 * another host): their next renew() answers -ESTALE, as with the backends
 * whose renewal is per lock.  One txn per VERIFY_CHUNK locks comparing their
 * create revisions; only when one differs do its ranges say which. */
static void verify_mine(etcd_backend *b, int64_t deadline)
{
	GArray *held = g_array_new(FALSE, FALSE, sizeof(held_key));
	g_mutex_lock(&b->mu);
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, b->mine);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		etcd_priv *p = v;
		if (g_atomic_int_get(&p->broken) || p->released)
			continue;
		held_key h = { g_strdup(k), p->create_rev };
		g_array_append_val(held, h);
	}
	g_mutex_unlock(&b->mu);
	for (guint from = 0; from < held->len; from += VERIFY_CHUNK) {
		guint n = MIN(VERIFY_CHUNK, held->len - from);
		GString *cmp = g_string_new(NULL), *ranges = g_string_new(NULL);
		for (guint i = 0; i < n; i++) {
			held_key *h = &g_array_index(held, held_key, from + i);
			g_autofree char *k64 = etcd_b64(h->key, strlen(h->key));
			g_string_append_printf(cmp,
			                       "%s{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":"
			                       "\"EQUAL\",\"create_revision\":\"%" PRId64 "\"}",
			                       i ? "," : "", k64, h->create_rev);
			g_string_append_printf(ranges, "%s{\"request_range\":{\"key\":\"%s\"}}",
			                       i ? "," : "", k64);
		}
		g_autofree char *body = g_strdup_printf("{\"compare\":[%s],\"failure\":[%s]}",
		                                        cmp->str, ranges->str);
		g_string_free(cmp, TRUE);
		g_string_free(ranges, TRUE);
		JsonNode *out = NULL;
		if (call(b, NULL, "checking the locks held", "/v3/kv/txn", body, deadline, &out))
			break;
		JsonObject *o = json_node_get_object(out);
		if (!etcd_json_bool(o, "succeeded")) {
			for (guint i = 0; i < n; i++) {
				held_key *h = &g_array_index(held, held_key, from + i);
				ekv kv;
				bool have = first_kv(txn_range(o, i), h->key, &kv);
				if (!have || kv.create_rev != h->create_rev)
					mark_broken(b, h->key, h->create_rev);
				if (have)
					ekv_clear(&kv);
			}
		}
		json_node_unref(out);
	}
	for (guint i = 0; i < held->len; i++)
		g_free(g_array_index(held, held_key, i).key);
	g_array_free(held, TRUE);
}

/* Make sure the mount lease was kept alive by a keep-alive sent no earlier
 * than a renew interval before START (the call's start).  WANT: the lease
 * the caller's lock is on (-ESTALE when it is gone or replaced), or 0 for
 * any, granting a new lease when needed.  One keep-alive at a time: callers
 * that come meanwhile wait for it, and it serves all of them. */
static int lease_fresh(etcd_backend *b, int64_t start, int64_t deadline, int64_t want,
                       int64_t *id_out)
{
	g_mutex_lock(&b->mu);
	for (;;) {
		if (want && (b->lease_id != want || b->lease_lost)) {
			g_mutex_unlock(&b->mu);
			return -ESTALE;
		}
		if (b->lease_id && !b->lease_lost && b->ka_ok_sent >= start - b->cur_reuse_us) {
			if (id_out)
				*id_out = b->lease_id;
			g_mutex_unlock(&b->mu);
			return 0;
		}
		if (b->ka_busy) {
			if (!lockfs_cond_wait_until(&b->cv, &b->mu, deadline)) {
				g_mutex_unlock(&b->mu);
				log_failure(b, NULL, "renewing the mount lease",
				            "another renewal is still waiting for etcd");
				return -EIO;
			}
			continue;
		}
		b->ka_busy = true;
		int64_t id = b->lease_lost ? 0 : b->lease_id;
		GPtrArray *gone = b->abandoned;
		b->abandoned = g_ptr_array_new_with_free_func(abandoned_free);
		g_mutex_unlock(&b->mu);

		if (gone->len)
			delete_abandoned(b, gone, deadline);
		else
			g_ptr_array_free(gone, TRUE);
		int64_t sent = lockfs_mono_us();
		int64_t new_id = 0;
		int r = id ? lease_keepalive(b, id, deadline, NULL)
		           : lease_grant(b, deadline, &new_id);

		g_mutex_lock(&b->mu);
		b->ka_busy = false;
		g_cond_broadcast(&b->cv);
		if (r == 0) {
			if (!id) {
				b->lease_id = new_id;
				b->lease_lost = false;
				b->cur_ttl_s = b->lease_ttl_s;
				b->cur_reuse_us = b->reuse_us;
			}
			b->ka_ok_sent = sent;
			if (id) {
				/* Once per keep-alive round: which of our locks
				 * did someone else break? */
				g_mutex_unlock(&b->mu);
				verify_mine(b, deadline);
				g_mutex_lock(&b->mu);
			}
			continue;
		}
		if (r == -ESTALE) {
			if (!b->lease_lost)
				lockfs_log(G_LOG_LEVEL_WARNING, NULL,
				           "etcd: the mount lease %" PRId64
				           " expired at the server; "
				           "every lock of this mount on it is lost",
				           id);
			b->lease_lost = true;
			continue;
		}
		g_mutex_unlock(&b->mu);
		return r;
	}
}

/* ---- locks ---- */

static void stamp(etcd_backend *b, etcd_record *rec)
{
	int64_t low, high, age;
	rec->server_ms = etcd_client_server_now(b->cl, &low, &high, &age) ? high : 0;
	int64_t hb = rec->holder.heartbeat_us ? rec->holder.heartbeat_us : rec->holder.acquired_us;
	rec->idle_ms = hb ? MAX(lockfs_now_us() - hb, 0) / 1000 : 0;
}

static bool stale(etcd_backend *b, const etcd_record *rec)
{
	int64_t low, high, age;
	if (!etcd_client_server_now(b->cl, &low, &high, &age))
		return false;
	return etcd_record_stale(rec, low, b->stale_after_ms);
}

/* INFO from KV (its value parsed when it is a record of ours). */
static void fill_info(etcd_backend *b, const ekv *kv, lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	out->key = g_strdup(kv->key + b->prefix_len);
	snprintf(out->fence, sizeof(out->fence), "%" PRId64, kv->create_rev);
	out->lease_left_ms = -1;
	etcd_record rec;
	if (etcd_record_decode(kv->value, kv->value_len, &rec)) {
		out->holder = rec.holder;
		memset(&rec.holder, 0, sizeof(rec.holder));
		out->content = g_steal_pointer(&rec.content);
		out->content_len = rec.content_len;
		etcd_record tmp = { .server_ms = rec.server_ms, .idle_ms = rec.idle_ms };
		out->state = stale(b, &tmp) ? LOCKFS_STATE_STALE : LOCKFS_STATE_HELD;
		etcd_record_clear(&rec);
	}
	g_mutex_lock(&b->mu);
	etcd_priv *p = g_hash_table_lookup(b->mine, kv->key);
	if (p && p->create_rev == kv->create_rev) {
		out->mine = true;
		if (p->lease_id == b->lease_id && !b->lease_lost)
			out->lease_left_ms = MAX(b->ka_ok_sent + b->cur_ttl_s * G_USEC_PER_SEC -
			                                 lockfs_mono_us(),
			                         0) /
			                     1000;
		else
			out->lease_left_ms = 0;
	}
	g_mutex_unlock(&b->mu);
}

static bool key_ok(etcd_backend *b, const char *key)
{
	return key && *key && b->prefix_len + strlen(key) <= KEY_MAX;
}

/* One range of KEY: 0 with *KV, -ENOENT or -EIO. */
static int get_key(etcd_backend *b, const char *full, int64_t deadline, ekv *kv)
{
	g_autofree char *k = etcd_b64(full, strlen(full));
	g_autofree char *body = g_strdup_printf("{\"key\":\"%s\"}", k);
	JsonNode *out = NULL;
	int r = call(b, full + b->prefix_len, "reading a lock", "/v3/kv/range", body, deadline,
	             &out);
	if (r)
		return r == -ESTALE ? -EIO : r;
	bool found = first_kv(json_node_get_object(out), full, kv);
	json_node_unref(out);
	return found ? 0 : -ENOENT;
}

/* Delete FULL if its create (and, when not 0, mod) revision are still these:
 * 0, -ENOENT (it changed) or -EIO. */
static int delete_if(etcd_backend *b, const char *full, int64_t create_rev, int64_t mod_rev,
                     const char *what, int64_t deadline)
{
	g_autofree char *body = etcd_txn_delete_body(full, create_rev, mod_rev);
	JsonNode *out = NULL;
	int r = call(b, full + b->prefix_len, what, "/v3/kv/txn", body, deadline, &out);
	if (r)
		return r == -ESTALE ? -EIO : r;
	bool ok = etcd_json_bool(json_node_get_object(out), "succeeded");
	json_node_unref(out);
	return ok ? 0 : -ENOENT;
}

static void random_nonce(char out[33])
{
	for (int i = 0; i < 4; i++)
		snprintf(out + 8 * i, 9, "%08" PRIx32, g_random_int());
}

/* One acquisition: what its attempts share. */
typedef struct {
	etcd_backend *b;
	const char *key;  /* as the filesystem names it */
	const char *full; /* with the prefix */
	const char *k;    /* full, base64 */
	etcd_priv *p;     /* the lease's part, its record the value to put */
	char nonce[33];   /* the record's, to know our own put again */
	int64_t deadline;
	lockfs_acquire_result *res;
} etcd_take;

/* Claim: the holder record WHO puts on the mount lease LEASE_ID. */
static etcd_priv *claim(etcd_backend *b, const lockfs_holder *who, const void *content,
                        size_t content_len, int64_t lease_id, char nonce[33])
{
	etcd_priv *p = g_new0(etcd_priv, 1);
	lockfs_holder_copy(&p->rec.holder, who);
	p->rec.mount = g_strdup(b->mount);
	random_nonce(nonce);
	p->rec.nonce = g_strdup(nonce);
	p->rec.lease = lease_id;
	p->rec.ttl_ms = b->ttl_ms;
	if (content && content_len) {
		size_t n = MIN(content_len, LOCKFS_CONTENT_MAX);
		p->rec.content = g_memdup2(content, n);
		p->rec.content_len = n;
	}
	p->lease_id = lease_id;
	return p;
}

/* The lease ran out between the keep-alive and the put (nothing of ours
 * was on it): take a new one. */
static int regrant(etcd_take *t)
{
	etcd_backend *b = t->b;
	int64_t lease_id = t->p->lease_id;
	g_mutex_lock(&b->mu);
	if (b->lease_id == lease_id)
		b->lease_lost = true;
	g_mutex_unlock(&b->mu);
	int r = lease_fresh(b, lockfs_mono_us(), t->deadline, 0, &lease_id);
	if (r)
		return r;
	t->p->lease_id = t->p->rec.lease = lease_id;
	return 0;
}

/* etcd may have applied the put of V (base64) and its answer been lost: the
 * key would stay, on the mount lease every keep-alive extends, held for
 * nobody.  Delete it if it holds this very value, before the next
 * keep-alive. */
static void abandon_put(etcd_take *t, const char *v)
{
	abandoned_key *a = g_new0(abandoned_key, 1);
	a->key = g_strdup(t->full);
	a->value = g_strdup(v);
	a->rounds = UNANSWERED_ROUNDS;
	g_mutex_lock(&t->b->mu);
	g_ptr_array_add(t->b->abandoned, a);
	g_mutex_unlock(&t->b->mu);
}

/* Break KV, the stale holder judged (only that one): 0 (try again, whether
 * it was deleted or had changed) or -EIO. */
static int break_stale(etcd_take *t, ekv *kv)
{
	lockfs_lock_info prev;
	fill_info(t->b, kv, &prev);
	int d = delete_if(t->b, kv->key, kv->create_rev, kv->mod_rev, "breaking a stale lock",
	                  t->deadline);
	ekv_clear(kv);
	if (d == 0 && t->res && !t->res->broke) {
		t->res->broke = true;
		t->res->previous = prev;
	} else {
		lockfs_lock_info_clear(&prev);
	}
	return d == -EIO ? -EIO : 0;
}

/* KV, the key a put found held (its compare refused): our own put (0), a
 * holder to break (*AGAIN), or another's (-EEXIST).  The first ATTEMPT
 * alone breaks.  Clears KV. */
static int held_by(etcd_take *t, ekv *kv, int attempt, bool *again)
{
	etcd_record rec;
	bool parsed = etcd_record_decode(kv->value, kv->value_len, &rec);
	if (parsed && rec.nonce && strcmp(rec.nonce, t->nonce) == 0) {
		/* Our own put, whose answer was lost and the call retried. */
		t->p->create_rev = kv->create_rev;
		etcd_record_clear(&rec);
		ekv_clear(kv);
		return 0;
	}
	bool is_stale = parsed && stale(t->b, &rec);
	etcd_record_clear(&rec);
	if (!is_stale || attempt > 0) {
		ekv_clear(kv);
		return -EEXIST;
	}
	*again = true;
	return break_stale(t, kv);
}

/* The backend call: put the record where the key is absent (breaking a
 * stale holder once, taking a new mount lease once): 0 with the key's
 * create revision in the record, or an error. */
static int put_record(etcd_take *t)
{
	etcd_priv *p = t->p;
	bool regranted = false;
	for (int attempt = 0;; attempt++) {
		stamp(t->b, &p->rec);
		g_autofree char *value = etcd_record_encode(&p->rec);
		g_autofree char *v = etcd_b64(value, strlen(value));
		g_autofree char *body = etcd_txn_create_body(t->k, v, p->lease_id);
		JsonNode *reply = NULL;
		int r = call(t->b, t->key, "taking a lock", "/v3/kv/txn", body, t->deadline,
		             &reply);
		if (r == -ESTALE && !regranted) {
			regranted = true; /* once */
			r = regrant(t);
			if (r)
				return r;
			attempt--;
			continue;
		}
		if (r == -ESTALE)
			return -EIO;
		if (r) {
			abandon_put(t, v);
			return r;
		}
		JsonObject *o = json_node_get_object(reply);
		if (etcd_json_bool(o, "succeeded")) {
			p->create_rev = etcd_json_int(etcd_json_obj(o, "header"), "revision", 0);
			json_node_unref(reply);
			return p->create_rev > 0 ? 0 : -EIO;
		}
		ekv kv;
		bool have = first_kv(txn_range(o, 0), t->full, &kv);
		json_node_unref(reply);
		if (!have) /* deleted between the compare and the range: cannot be */
			return -EIO;
		bool again = false;
		r = held_by(t, &kv, attempt, &again);
		if (r || !again)
			return r;
	}
}

/* Install: the lease of the key put, known as ours. */
static lockfs_lease *install(etcd_take *t)
{
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(t->key);
	snprintf(lease->fence, sizeof(lease->fence), "%" PRId64, t->p->create_rev);
	lease->priv = t->p;
	g_mutex_lock(&t->b->mu);
	g_hash_table_replace(t->b->mine, g_strdup(t->full), t->p);
	g_mutex_unlock(&t->b->mu);
	return lease;
}

static int etcd_acquire(lockfs_backend *be, const char *key, const lockfs_holder *who,
                        const void *content, size_t content_len, lockfs_lease **out,
                        lockfs_acquire_result *res)
{
	etcd_backend *b = (etcd_backend *)be;
	int64_t start = lockfs_mono_us(), deadline = start + b->timeout_us;
	if (res)
		memset(res, 0, sizeof(*res));
	if (!key_ok(b, key))
		return -EINVAL;
	g_mutex_lock(&b->mu);
	b->lease_unused = false; /* the put may reach etcd whatever we hear */
	g_mutex_unlock(&b->mu);
	int64_t lease_id = 0;
	int r = lease_fresh(b, start, deadline, 0, &lease_id);
	if (r)
		return r == -ESTALE ? -EIO : r;

	etcd_take t = { .b = b, .key = key, .deadline = deadline, .res = res };
	t.p = claim(b, who, content, content_len, lease_id, t.nonce);
	g_autofree char *full = full_key(b, key);
	g_autofree char *k = etcd_b64(full, strlen(full));
	t.full = full;
	t.k = k;
	r = put_record(&t);
	if (r) {
		etcd_record_clear(&t.p->rec);
		g_free(t.p);
		return r;
	}
	*out = install(&t);
	return 0;
}

static int etcd_heartbeat(lockfs_backend *be, lockfs_lease *lease, const lockfs_beat *beat)
{
	etcd_backend *b = (etcd_backend *)be;
	etcd_priv *p = lease->priv;
	int64_t deadline = deadline_of(b);
	void *content;
	size_t content_len;
	if (lockfs_holder_apply_beat(&p->rec.holder, 0, beat, &content, &content_len)) {
		g_free(p->rec.content);
		p->rec.content = content;
		p->rec.content_len = content_len;
	}
	if (g_atomic_int_get(&p->broken) || p->released)
		return -ESTALE;
	g_mutex_lock(&b->mu);
	bool gone = p->lease_id != b->lease_id || b->lease_lost;
	g_mutex_unlock(&b->mu);
	if (gone)
		return -ESTALE;
	stamp(b, &p->rec);
	g_autofree char *full = full_key(b, lease->key);
	g_autofree char *k = etcd_b64(full, strlen(full));
	g_autofree char *value = etcd_record_encode(&p->rec);
	g_autofree char *v = etcd_b64(value, strlen(value));
	g_autofree char *body = g_strdup_printf(
	        "{\"compare\":[{\"key\":\"%s\",\"target\":\"CREATE\",\"result\":\"EQUAL\","
	        "\"create_revision\":\"%" PRId64 "\"}],"
	        "\"success\":[{\"request_put\":{\"key\":\"%s\",\"value\":\"%s\","
	        "\"lease\":\"%" PRId64 "\"}}]}",
	        k, p->create_rev, k, v, p->lease_id);
	JsonNode *out = NULL;
	int r = call(b, lease->key, "recording a heartbeat", "/v3/kv/txn", body, deadline, &out);
	if (r)
		return r;
	bool ok = etcd_json_bool(json_node_get_object(out), "succeeded");
	json_node_unref(out);
	return ok ? 0 : -ESTALE;
}

static int etcd_renew(lockfs_backend *be, lockfs_lease *lease)
{
	etcd_backend *b = (etcd_backend *)be;
	etcd_priv *p = lease->priv;
	int64_t start = lockfs_mono_us();
	if (g_atomic_int_get(&p->broken) || p->released)
		return -ESTALE;
	int r = lease_fresh(b, start, start + b->timeout_us, p->lease_id, NULL);
	if (r == 0 && g_atomic_int_get(&p->broken))
		return -ESTALE; /* found broken by the round just made */
	return r;
}

static int etcd_release(lockfs_backend *be, lockfs_lease *lease)
{
	etcd_backend *b = (etcd_backend *)be;
	etcd_priv *p = lease->priv;
	if (p->released)
		return -ENOENT;
	g_autofree char *full = full_key(b, lease->key);
	/* Only the key we created: a late release never deletes a newer
	 * holder's key. */
	int r = delete_if(b, full, p->create_rev, 0, "releasing a lock", deadline_of(b));
	if (r == 0 || r == -ENOENT) {
		p->released = true;
		g_mutex_lock(&b->mu);
		if (g_hash_table_lookup(b->mine, full) == p)
			g_hash_table_remove(b->mine, full);
		g_mutex_unlock(&b->mu);
	}
	return r;
}

static int etcd_break(lockfs_backend *be, const char *key, const char *fence,
                      const lockfs_holder *breaker, lockfs_lock_info *broken)
{
	(void)breaker;
	etcd_backend *b = (etcd_backend *)be;
	int64_t deadline = deadline_of(b);
	if (!key_ok(b, key))
		return -EINVAL;
	g_autofree char *full = full_key(b, key);
	ekv kv;
	int r = get_key(b, full, deadline, &kv);
	if (r)
		return r;
	char f[LOCKFS_FENCE_MAX];
	snprintf(f, sizeof(f), "%" PRId64, kv.create_rev);
	if (fence && lockfs_fence_cmp(f, fence) != 0) {
		ekv_clear(&kv);
		return -ENOENT;
	}
	r = delete_if(b, full, kv.create_rev, 0, "breaking a lock", deadline);
	if (r == 0) {
		if (broken)
			fill_info(b, &kv, broken);
		g_mutex_lock(&b->mu);
		etcd_priv *p = g_hash_table_lookup(b->mine, full);
		if (p && p->create_rev == kv.create_rev)
			g_atomic_int_set(&p->broken, 1);
		g_mutex_unlock(&b->mu);
	}
	ekv_clear(&kv);
	return r;
}

static int etcd_inspect(lockfs_backend *be, const char *key, lockfs_lock_info *out)
{
	etcd_backend *b = (etcd_backend *)be;
	if (!key_ok(b, key))
		return -ENOENT;
	g_autofree char *full = full_key(b, key);
	ekv kv;
	int r = get_key(b, full, deadline_of(b), &kv);
	if (r)
		return r;
	fill_info(b, &kv, out);
	ekv_clear(&kv);
	return 0;
}

static int etcd_list(lockfs_backend *be, const char *prefix, lockfs_list_cb cb, void *user)
{
	etcd_backend *b = (etcd_backend *)be;
	int64_t deadline = deadline_of(b);
	g_autofree char *from = full_key(b, prefix ? prefix : "");
	size_t end_len = 0;
	g_autofree char *end = prefix_end(from, &end_len);
	g_autofree char *e64 = etcd_b64(end, end_len);
	GPtrArray *infos = g_ptr_array_new();
	char *start = g_strdup(from);
	size_t start_len = strlen(from);
	int r = 0;
	for (;;) {
		g_autofree char *s64 = etcd_b64(start, start_len);
		g_autofree char *body = g_strdup_printf(
		        "{\"key\":\"%s\",\"range_end\":\"%s\",\"limit\":\"%d\"}", s64, e64, PAGE);
		JsonNode *out = NULL;
		r = call(b, NULL, "listing locks", "/v3/kv/range", body, deadline, &out);
		if (r) {
			r = r == -ESTALE ? -EIO : r;
			break;
		}
		JsonObject *o = json_node_get_object(out);
		JsonArray *kvs = etcd_json_array(o, "kvs");
		guint n = kvs ? json_array_get_length(kvs) : 0;
		g_autofree char *last = NULL;
		for (guint i = 0; i < n; i++) {
			JsonNode *el = json_array_get_element(kvs, i);
			ekv kv;
			if (!JSON_NODE_HOLDS_OBJECT(el) ||
			    !ekv_from_json(json_node_get_object(el), &kv))
				continue;
			g_free(last);
			last = g_strdup(kv.key);
			if (strlen(kv.key) > b->prefix_len) {
				lockfs_lock_info *info = g_new(lockfs_lock_info, 1);
				fill_info(b, &kv, info);
				g_ptr_array_add(infos, info);
			}
			ekv_clear(&kv);
		}
		bool more = etcd_json_bool(o, "more");
		json_node_unref(out);
		if (!more || !last)
			break;
		/* The next page starts right after the last key: KEY + "\0". */
		g_free(start);
		start_len = strlen(last) + 1;
		start = g_malloc0(start_len + 1);
		memcpy(start, last, start_len - 1);
	}
	g_free(start);
	/* Call back once every page is in: callbacks may call us. */
	for (guint i = 0; i < infos->len; i++) {
		lockfs_lock_info *info = infos->pdata[i];
		if (r == 0)
			cb(info, user);
		lockfs_lock_info_clear(info);
		g_free(info);
	}
	g_ptr_array_free(infos, TRUE);
	return r;
}

/* watch(): etcd's watch stream on the prefix's range.  Its first reply says
 * the watch was created; each later one carries events, whose keys (the
 * prefix taken off) go to the callback.  An error or a cancel ends it. */
typedef struct {
	etcd_backend *b;
	lockfs_watch_cb changed;
	void *user;
} watch_ctx;

static bool on_watch_line(const char *line, size_t len, void *user)
{
	watch_ctx *w = user;
	g_autoptr(JsonParser) p = json_parser_new();
	if (!json_parser_load_from_data(p, line, (gssize)len, NULL))
		return false;
	JsonNode *root = json_parser_get_root(p);
	if (!root || !JSON_NODE_HOLDS_OBJECT(root))
		return false;
	JsonObject *res = etcd_json_obj(json_node_get_object(root), "result");
	if (!res || etcd_json_bool(res, "canceled"))
		return false;
	if (etcd_json_bool(res, "created"))
		w->changed(NULL, w->user);
	JsonArray *evs = etcd_json_array(res, "events");
	for (guint i = 0; evs && i < json_array_get_length(evs); i++) {
		JsonNode *el = json_array_get_element(evs, i);
		JsonObject *kv = JSON_NODE_HOLDS_OBJECT(el)
		                         ? etcd_json_obj(json_node_get_object(el), "kv")
		                         : NULL;
		const char *k64 = kv ? etcd_json_str(kv, "key") : NULL;
		gsize n = 0;
		g_autofree char *key = k64 ? (char *)g_base64_decode(k64, &n) : NULL;
		if (!key || n <= w->b->prefix_len || memchr(key, '\0', n) ||
		    memcmp(key, w->b->prefix, w->b->prefix_len) != 0) {
			w->changed(NULL, w->user); /* a key it cannot name: anything */
			continue;
		}
		key = g_realloc(key, n + 1);
		key[n] = '\0';
		w->changed(key + w->b->prefix_len, w->user);
	}
	return true;
}

static int etcd_watch(lockfs_backend *be, const char *prefix, int timeout_ms,
                      lockfs_watch_cb changed, void *user)
{
	etcd_backend *b = (etcd_backend *)be;
	g_autofree char *from = full_key(b, prefix ? prefix : "");
	size_t end_len = 0;
	g_autofree char *end = prefix_end(from, &end_len);
	g_autofree char *s64 = etcd_b64(from, strlen(from));
	g_autofree char *e64 = etcd_b64(end, end_len);
	g_autofree char *body = g_strdup_printf(
	        "{\"create_request\":{\"key\":\"%s\",\"range_end\":\"%s\"}}", s64, e64);
	watch_ctx w = { b, changed, user };
	g_autofree char *why = NULL;
	int r = etcd_client_stream(b->cl, "/v3/watch", body, (int64_t)timeout_ms * 1000,
	                           on_watch_line, &w, &why);
	if (r)
		g_debug("etcd: watching %s: %s", from, why);
	return r;
}

/* ---- restart (backend.h, "Restart") ----
 * The session token is the mount lease's ID; a lease token is the key's
 * create revision (its fence) and the nonce its record was written with,
 * which no other acquisition of the key can have drawn.  Both are tagged,
 * so neither passes for the other, nor for another backend's. */
#define SESSION_TAG "etcd-lease:"
#define LEASE_TAG "etcd-key:"
#define NONCE_LEN 32

/* A positive int64 in plain decimal (no sign, no leading zero), all of S. */
static bool parse_positive(const char *s, size_t len, int64_t *out)
{
	if (len == 0 || len > 19 || s[0] == '0' || strspn(s, "0123456789") < len)
		return false;
	char buf[20];
	memcpy(buf, s, len);
	buf[len] = '\0';
	errno = 0;
	char *end = NULL;
	gint64 v = g_ascii_strtoll(buf, &end, 10);
	if (errno || !end || *end || v <= 0)
		return false;
	*out = v;
	return true;
}

static bool parse_lease_token(const char *token, int64_t *rev, char nonce[NONCE_LEN + 1])
{
	if (!token || !g_str_has_prefix(token, LEASE_TAG))
		return false;
	const char *s = token + strlen(LEASE_TAG);
	const char *colon = strchr(s, ':');
	if (!colon || !parse_positive(s, (size_t)(colon - s), rev))
		return false;
	const char *n = colon + 1;
	if (strlen(n) != NONCE_LEN || strspn(n, "0123456789abcdef") != NONCE_LEN)
		return false;
	memcpy(nonce, n, NONCE_LEN + 1);
	return true;
}

static char *etcd_identity(lockfs_backend *be)
{
	return g_strdup(((etcd_backend *)be)->identity);
}

static int etcd_session_token(lockfs_backend *be, GString *out)
{
	etcd_backend *b = (etcd_backend *)be;
	g_mutex_lock(&b->mu);
	int64_t id = b->lease_lost ? 0 : b->lease_id;
	g_mutex_unlock(&b->mu);
	if (!id)
		return -ENOENT;
	g_string_printf(out, SESSION_TAG "%" PRId64, id);
	return 0;
}

static int etcd_lease_token(lockfs_backend *be, const lockfs_lease *lease, GString *out)
{
	(void)be;
	const etcd_priv *p = lease->priv;
	if (!p->rec.nonce || strlen(p->rec.nonce) != NONCE_LEN)
		return -EIO;
	g_string_printf(out, LEASE_TAG "%" PRId64 ":%s", p->create_rev, p->rec.nonce);
	return 0;
}

/* Revoke lease ID, nothing being on it (best effort: it runs out anyway). */
static void lease_revoke(etcd_backend *b, int64_t id)
{
	g_autofree char *body = g_strdup_printf("{\"ID\":\"%" PRId64 "\"}", id);
	JsonNode *out = NULL;
	if (call(b, NULL, "revoking an unused lease", "/v3/lease/revoke", body, deadline_of(b),
	         &out) == 0)
		json_node_unref(out);
}

static int etcd_resume(lockfs_backend *be, const char *token)
{
	etcd_backend *b = (etcd_backend *)be;
	int64_t id = 0, ttl_s = 0;
	if (!token || !g_str_has_prefix(token, SESSION_TAG) ||
	    !parse_positive(token + strlen(SESSION_TAG), strlen(token + strlen(SESSION_TAG)), &id))
		return -EINVAL;
	int64_t sent = lockfs_mono_us();
	int r = lease_keepalive(b, id, sent + b->timeout_us, &ttl_s);
	if (r == -ESTALE) {
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "etcd: the mount lease %" PRId64 " of the previous instance ran out; "
		           "every lock on it is lost",
		           id);
		return -ESTALE;
	}
	if (r)
		return -EIO;
	/* A keep-alive may serve renewals only while the lease outlives the
	 * mount's deadline (top of this file): TTL − ttl.  A lease of an
	 * instance with a much shorter ttl cannot carry this one's locks;
	 * they are given up, and run out with it. */
	int64_t reuse = MIN(b->reuse_us, ttl_s * G_USEC_PER_SEC - b->ttl_ms * 1000);
	if (reuse < 0) {
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "etcd: the mount lease %" PRId64
		           " of the previous instance lasts %" PRId64 " s, less than ttl (%" PRId64
		           " ms): its locks are given up; they are free once it runs out",
		           id, ttl_s, b->ttl_ms);
		return -ESTALE;
	}
	g_mutex_lock(&b->mu);
	int64_t old = b->lease_id;
	bool revoke = b->lease_unused && old && old != id && !b->lease_lost;
	b->lease_id = id;
	b->lease_lost = false;
	b->ka_ok_sent = sent;
	b->cur_ttl_s = ttl_s;
	b->cur_reuse_us = reuse;
	b->lease_unused = false;
	g_mutex_unlock(&b->mu);
	/* The lease create() granted: nothing was put on it. */
	if (revoke)
		lease_revoke(b, old);
	return 0;
}

/* Whether KV is the lock granted with REV and NONCE on lease WANT, its
 * record then in *REC (to clear). */
static bool adoptable(const ekv *kv, int64_t rev, const char *nonce, int64_t want, etcd_record *rec)
{
	if (kv->create_rev != rev || kv->lease != want ||
	    !etcd_record_decode(kv->value, kv->value_len, rec))
		return false;
	if (rec->nonce && strcmp(rec->nonce, nonce) == 0 && rec->lease == want)
		return true;
	etcd_record_clear(rec);
	return false;
}

/* WHO and CONTENT go unused: the key's value is the holder record, written
 * with the key and as new as the last heartbeat, which the caller's copy may
 * not be. */
static int etcd_adopt(lockfs_backend *be, const char *key, const char *fence, const char *token,
                      const lockfs_holder *who, const void *content, size_t content_len,
                      lockfs_lease **out)
{
	(void)who, (void)content, (void)content_len;
	etcd_backend *b = (etcd_backend *)be;
	int64_t rev = 0, f = 0, start = lockfs_mono_us(), deadline = start + b->timeout_us;
	char nonce[NONCE_LEN + 1];
	if (!key_ok(b, key) || !fence || !parse_positive(fence, strlen(fence), &f) ||
	    !parse_lease_token(token, &rev, nonce))
		return -EINVAL;
	g_autofree char *full = full_key(b, key);
	g_mutex_lock(&b->mu);
	int64_t want = b->lease_lost ? 0 : b->lease_id;
	bool twice = g_hash_table_contains(b->mine, full);
	g_mutex_unlock(&b->mu);
	if (twice)
		return -EINVAL; /* held through this instance already */
	if (!want || f != rev)
		return -ESTALE;
	/* Renewed now: a keep-alive within the renew interval, as acquire(). */
	int r = lease_fresh(b, start, deadline, want, NULL);
	if (r)
		return r;
	ekv kv;
	r = get_key(b, full, deadline, &kv);
	if (r)
		return r == -ENOENT ? -ESTALE : r;
	etcd_priv *p = g_new0(etcd_priv, 1);
	bool ok = adoptable(&kv, rev, nonce, want, &p->rec);
	ekv_clear(&kv);
	if (!ok) {
		g_free(p);
		return -ESTALE;
	}
	p->create_rev = rev;
	p->lease_id = want;
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	snprintf(lease->fence, sizeof(lease->fence), "%" PRId64, rev);
	lease->priv = p;
	g_mutex_lock(&b->mu);
	g_hash_table_replace(b->mine, g_strdup(full), p);
	g_mutex_unlock(&b->mu);
	*out = lease;
	return 0;
}

static void etcd_lease_free(lockfs_backend *be, lockfs_lease *lease)
{
	etcd_backend *b = (etcd_backend *)be;
	if (!lease)
		return;
	etcd_priv *p = lease->priv;
	if (p) {
		g_autofree char *full = full_key(b, lease->key);
		g_mutex_lock(&b->mu);
		if (g_hash_table_lookup(b->mine, full) == p)
			g_hash_table_remove(b->mine, full);
		/* A lock let go without a release (declared lost) must not live
		 * on with the shared lease: delete it before the next keep-alive. */
		if (!p->released && !g_atomic_int_get(&p->broken) && p->lease_id == b->lease_id &&
		    !b->lease_lost) {
			abandoned_key *a = g_new0(abandoned_key, 1);
			a->key = g_steal_pointer(&full);
			a->create_rev = p->create_rev;
			g_ptr_array_add(b->abandoned, a);
		}
		g_mutex_unlock(&b->mu);
		etcd_record_clear(&p->rec);
		g_free(p);
	}
	g_free(lease->key);
	g_free(lease);
}

static int etcd_clock(lockfs_backend *be, lockfs_clock_info *out)
{
	etcd_backend *b = (etcd_backend *)be;
	int64_t low, high, age;
	if (!etcd_client_server_now(b->cl, &low, &high, &age))
		return -ENOENT;
	memset(out, 0, sizeof(*out));
	int64_t mid_us = (low + high) * 1000 / 2;
	out->offset_us = mid_us - lockfs_now_us();
	out->uncertainty_us = (high - low) * 1000 / 2;
	out->age_us = age;
	out->bound_us = 0; /* hosts' clocks play no part in breaking */
	return 0;
}

/* Lets go of nothing (backend.h, "Restart"): the mount lease is neither
 * revoked nor kept alive, so every key on it stays held until it runs out,
 * unless a later instance resumes it.  Keys queued as abandoned are not
 * deleted either: they too run out with the lease. */
static void etcd_destroy(lockfs_backend *be)
{
	etcd_backend *b = (etcd_backend *)be;
	etcd_client_free(b->cl);
	g_hash_table_destroy(b->mine);
	g_ptr_array_free(b->abandoned, TRUE);
	g_mutex_clear(&b->mu);
	g_cond_clear(&b->cv);
	g_free(b->prefix);
	g_free(b->mount);
	g_free(b->identity);
	g_free(b);
}

/* ---- configuration ---- */

/* An error about KEY of [etcd] in the form of every configuration error. */
#define key_error(error, cfg, key, code, ...) \
	lockfs_config_key_error(cfg, GROUP, key, error, code, __VA_ARGS__)

/* Endpoints separated by commas, semicolons or spaces (mount options are
 * split at commas, so there a semicolon separates them). */
static char **parse_endpoints(const lockfs_config *cfg, const char *text, GError **error)
{
	g_auto(GStrv) parts = g_strsplit_set(text, ",; \t", -1);
	GPtrArray *out = g_ptr_array_new();
	for (char **p = parts; *p; p++) {
		if (!**p)
			continue;
		char *e = *p;
		if (!g_str_has_prefix(e, "http://") && !g_str_has_prefix(e, "https://")) {
			key_error(error, cfg, "endpoints", LOCKFS_CONFIG_ERROR_VALUE,
			          "'%s' is not an etcd client URL; write http://HOST:2379 or "
			          "https://HOST:2379, several separated by commas",
			          e);
			g_ptr_array_free(out, TRUE);
			return NULL;
		}
		size_t n = strlen(e);
		while (n && e[n - 1] == '/')
			e[--n] = '\0';
		g_ptr_array_add(out, g_strdup(e));
	}
	if (out->len == 0) {
		key_error(error, cfg, "endpoints", LOCKFS_CONFIG_ERROR_VALUE,
		          "no endpoint given; write http://HOST:2379, several separated by commas");
		g_ptr_array_free(out, TRUE);
		return NULL;
	}
	g_ptr_array_add(out, NULL);
	return (char **)g_ptr_array_free(out, FALSE);
}

static bool read_file_key(const lockfs_config *cfg, const char *key, char **out, GError **error)
{
	if (!lockfs_config_get_string(cfg, GROUP, key, NULL, out, error))
		return false;
	if (*out && access(*out, R_OK) != 0) {
		key_error(error, cfg, key, LOCKFS_CONFIG_ERROR_IO, "cannot read %s: %s", *out,
		          g_strerror(errno));
		return false;
	}
	return true;
}

bool etcd_client_opts_read(const lockfs_config *cfg, etcd_client_opts *o, char **prefix,
                           GError **error)
{
	g_autofree char *endpoints = NULL, *pwfile = NULL;
	if (!lockfs_config_get_string(cfg, GROUP, "endpoints", "http://127.0.0.1:2379", &endpoints,
	                              error) ||
	    !lockfs_config_get_string(cfg, GROUP, "prefix", "/lockfs/", prefix, error) ||
	    !read_file_key(cfg, "ca_file", &o->ca_file, error) ||
	    !read_file_key(cfg, "cert_file", &o->cert_file, error) ||
	    !read_file_key(cfg, "key_file", &o->key_file, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "user", NULL, &o->user, error) ||
	    !lockfs_config_get_string(cfg, GROUP, "password_file", NULL, &pwfile, error))
		return false;
	if (!**prefix) {
		key_error(error, cfg, "prefix", LOCKFS_CONFIG_ERROR_VALUE,
		          "the prefix is empty; write one such as /lockfs/ so locks do not mix "
		          "with other keys");
		return false;
	}
	if (strlen(*prefix) > KEY_MAX / 2) {
		key_error(error, cfg, "prefix", LOCKFS_CONFIG_ERROR_VALUE,
		          "the prefix is longer than %d bytes; write a shorter one", KEY_MAX / 2);
		return false;
	}
	if (!!o->cert_file != !!o->key_file) {
		key_error(error, cfg, o->cert_file ? "cert_file" : "key_file",
		          LOCKFS_CONFIG_ERROR_CONFLICT,
		          "a client certificate needs both cert_file and key_file; set both");
		return false;
	}
	if (!!o->user != !!pwfile) {
		key_error(error, cfg, o->user ? "user" : "password_file",
		          LOCKFS_CONFIG_ERROR_CONFLICT,
		          "etcd authentication needs both user and password_file (mode 600); set "
		          "both");
		return false;
	}
	if (pwfile &&
	    !(o->password = lockfs_secret_read(cfg, GROUP, "password_file", pwfile, error)))
		return false;
	if (!(o->endpoints = parse_endpoints(cfg, endpoints, error)))
		return false;
	return true;
}

void etcd_client_opts_clear(etcd_client_opts *o)
{
	g_strfreev(o->endpoints);
	g_free(o->ca_file);
	g_free(o->cert_file);
	g_free(o->key_file);
	g_free(o->user);
	g_free(o->password);
	memset(o, 0, sizeof(*o));
}

/* identity(): the cluster by its ID (from the header of REPLY, the mount
 * lease's grant), so that the same cluster named by other endpoints is the
 * same; by its endpoints, sorted, should a reply have no ID.  Then the
 * prefix, escaped to printable ASCII. */
static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *identity_of(etcd_backend *b, JsonObject *reply, char **endpoints)
{
	const char *cid = etcd_json_str(etcd_json_obj(reply, "header"), "cluster_id");
	g_autofree char *prefix = g_strescape(b->prefix, NULL);
	if (cid && *cid && strspn(cid, "0123456789") == strlen(cid))
		return g_strdup_printf("etcd cluster=%s prefix=\"%s\"", cid, prefix);
	g_auto(GStrv) sorted = g_strdupv(endpoints);
	qsort(sorted, g_strv_length(sorted), sizeof(char *), cmp_str);
	g_autofree char *eps = g_strjoinv(",", sorted);
	g_autofree char *esc = g_strescape(eps, NULL);
	return g_strdup_printf("etcd endpoints=%s prefix=\"%s\"", esc, prefix);
}

static lockfs_backend *etcd_backend_new(const lockfs_config *cfg, const char *mount_id,
                                        GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	etcd_client_opts o = { 0 };
	g_autofree char *prefix = NULL;
	if (!etcd_client_opts_read(cfg, &o, &prefix, error)) {
		etcd_client_opts_clear(&o);
		return NULL;
	}
	g_autofree char *first = g_strdup(o.endpoints[0]);
	g_auto(GStrv) o_endpoints = g_strdupv(o.endpoints);
	guint n_endpoints = g_strv_length(o.endpoints);
	etcd_backend *b = g_new0(etcd_backend, 1);
	b->base = (lockfs_backend){
		LOCKFS_BACKEND_INIT("etcd", LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES),
		.acquire = etcd_acquire,
		.heartbeat = etcd_heartbeat,
		.renew = etcd_renew,
		.release = etcd_release,
		.break_lock = etcd_break,
		.inspect = etcd_inspect,
		.list = etcd_list,
		.lease_free = etcd_lease_free,
		.destroy = etcd_destroy,
		.clock = etcd_clock,
		.watch = etcd_watch,
		.identity = etcd_identity,
		.session_token = etcd_session_token,
		.resume = etcd_resume,
		.lease_token = etcd_lease_token,
		.adopt = etcd_adopt,
	};
	b->cl = etcd_client_new(&o);
	b->prefix = g_steal_pointer(&prefix);
	b->prefix_len = strlen(b->prefix);
	b->mount = g_strdup(mount_id ? mount_id : "");
	b->ttl_ms = s->ttl_ms;
	b->timeout_us = s->network_timeout_ms * 1000;
	b->stale_after_ms = s->stale_after_ms;
	int64_t renew_ms = s->renew_ms ? s->renew_ms : s->ttl_ms / 3;
	b->reuse_us = renew_ms * 1000;
	/* See the top of this file: ttl + renew interval, whole seconds. */
	b->lease_ttl_s = (s->ttl_ms + renew_ms + 999) / 1000;
	g_mutex_init(&b->mu);
	g_cond_init(&b->cv);
	b->mine = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	b->abandoned = g_ptr_array_new_with_free_func(abandoned_free);

	/* The mount lease now: a cluster that cannot be reached fails the
	 * mount with one line, as the LDAP backend does. */
	int64_t start = lockfs_mono_us();
	int64_t deadline = start + MIN(b->timeout_us, PROBE_MAX_US);
	int64_t id = 0;
	g_autofree char *why = NULL;
	g_autofree char *body = g_strdup_printf("{\"TTL\":\"%" PRId64 "\"}", b->lease_ttl_s);
	JsonNode *out = NULL;
	if (etcd_call(b->cl, "/v3/lease/grant", body, deadline, &out, &why) == 0) {
		id = etcd_json_int(json_node_get_object(out), "ID", 0);
		b->identity = identity_of(b, json_node_get_object(out), o_endpoints);
		json_node_unref(out);
		if (!id)
			why = g_strdup("the grant has no lease ID");
	}
	if (!id) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO,
		            "etcd: cannot get a lease from %s%s: %s; check [etcd] endpoints, TLS "
		            "and user, and that the cluster is up",
		            first, n_endpoints > 1 ? " or the other endpoints" : "",
		            why ? why : "no answer");
		etcd_destroy(&b->base);
		return NULL;
	}
	b->lease_id = id;
	b->ka_ok_sent = start;
	b->cur_ttl_s = b->lease_ttl_s;
	b->cur_reuse_us = b->reuse_us;
	b->lease_unused = true;
	return &b->base;
}

/* Locks as keys under a prefix in an etcd cluster, attached to one etcd
 * lease per mount. */
const lockfs_backend_type lockfs_etcd_backend_type = {
	LOCKFS_BACKEND_TYPE_INIT("etcd"),
	.group = GROUP,
	.keys = (const char *const[]){ "endpoints", "prefix", "ca_file", "cert_file", "key_file",
	                               "user", "password_file", NULL },
	.create = etcd_backend_new,
};
