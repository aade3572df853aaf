/* The raw backend cycle for lockbench: see rawcycle.h.
 *
 * What a raw cycle does is the backend's minimal equivalent of one lockfs
 * lock cycle, on a connection opened once, the way lockfs keeps its own:
 *
 *   tinystore  REQUEST locks.hold {lock, name, key, owner 1, ttl, request id}
 *              (wait 0, a fresh request id each time, as lockfs sends it),
 *              then REQUEST locks.release {lease}: two round trips.
 *   ldap       an add of cn=bench-raw,BASE with the object classes lockfs
 *              gives a lock (top, organizationalRole, and dynamicObject when
 *              the server takes it and the configuration allows it) and a
 *              holder's worth of description values, then a delete of it:
 *              two round trips.
 *   etcd       one txn creating PREFIX bench-raw only if absent
 *              (create_revision = 0), attached to a lease granted once (as
 *              lockfs attaches every lock to its mount's lease), with a
 *              holder record as its value; then one txn deleting it only if
 *              its create revision is still the one created: two round trips
 *              on one keep-alive HTTP connection, through lockfs's own client
 *              (etcd_client.c: libcurl, json-glib).
 *
 * The configuration is read with lockfs's own code (config.c, and for LDAP
 * ll_config_load() from ldap_conn.c), so the raw client talks to the server
 * lockfs talks to, with the same credentials, TLS and timeouts. */
#include "rawcycle.h"

#include "backends/etcd/etcd_client.h"
#include "backends/etcd/etcd_record.h"
#include "backends/ldap/ldap_int.h"
#include "backends/tinystore/tinystore_conn.h"
#include "holder.h"

#include <errno.h>
#include <glib.h>
#include <inttypes.h>
#include <lber.h>
#include <ldap.h>
#include <lockfs/backends.h>
#include <lockfs/config.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define RAW_KEY "bench-raw"

enum raw_kind {
	RAW_TINYSTORE,
	RAW_LDAP,
	RAW_ETCD
};

struct raw_client {
	enum raw_kind kind;
	char *what; /* raw_describe() */
	int64_t timeout_us;

	/* tinystore */
	ts_target target;
	ts_conn *conn;
	char *lock_name;
	uint64_t ttl_ms;
	bool ts_held;
	uint8_t ts_lease[TS_ID_SIZE];

	/* ldap */
	ll_config lc;
	LDAP *ld;
	char *dn;
	bool dynamic;
	bool ldap_held;
	GPtrArray *desc; /* char *, the description values */

	/* etcd */
	etcd_client *ec;
	char *key;       /* PREFIX bench-raw */
	char *key_b64;   /* the same, base64 */
	char *value_b64; /* a holder record, base64 */
	int64_t lease_id;
	int64_t create_rev; /* of the key while held, else 0 */
};

static void seterr(char *err, size_t len, const char *fmt, ...) G_GNUC_PRINTF(3, 4);
static void seterr(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
}

/* ---- configuration, as lockfs reads it -------------------------------- */

static lockfs_config *load_config(const char *backend, const char *file, const char *opts,
                                  char *err, size_t errlen)
{
	lockfs_config *cfg;
	GError *e = NULL;
	bool for_fuse;

	lockfs_backends_register_config();
	cfg = lockfs_config_new();
	if (file && !lockfs_config_load_file(cfg, file, &e))
		goto fail;
	{
		char *o = g_strdup_printf("backend=%s", backend);
		bool ok = lockfs_config_set_option(cfg, o, &for_fuse, &e);

		g_free(o);
		if (!ok)
			goto fail;
	}
	if (opts) {
		/* Split as lockfs's main() splits -o: on commas, no escapes. */
		char **parts = g_strsplit(opts, ",", -1);
		bool ok = true;

		for (char **p = parts; ok && *p; p++)
			if (**p)
				ok = lockfs_config_set_option(cfg, *p, &for_fuse, &e);
		g_strfreev(parts);
		if (!ok)
			goto fail;
	}
	if (!lockfs_config_finish(cfg, &e))
		goto fail;
	return cfg;
fail:
	seterr(err, errlen, "configuration: %s", e->message);
	g_error_free(e);
	lockfs_config_free(cfg);
	return NULL;
}

/* ---- tinystore ---------------------------------------------------------- */

/* The token of a token file, as lockfs reads it: the last word of the first
 * line that is neither blank nor a comment. */
static char *read_token(const char *path, char *err, size_t errlen)
{
	char *text = NULL, *out = NULL;
	char **lines;
	GError *e = NULL;

	if (!g_file_get_contents(path, &text, NULL, &e)) {
		seterr(err, errlen, "token_file: %s", e->message);
		g_error_free(e);
		return NULL;
	}
	lines = g_strsplit(text, "\n", -1);
	for (char **l = lines; *l && !out; l++) {
		const char *word;

		g_strstrip(*l);
		if (!**l || **l == '#')
			continue;
		word = *l + strlen(*l);
		while (word > *l && !g_ascii_isspace(word[-1]))
			word--;
		out = g_strdup(word);
		break;
	}
	g_strfreev(lines);
	memset(text, 0, strlen(text));
	g_free(text);
	if (!out)
		seterr(err, errlen, "token_file %s holds no token", path);
	return out;
}

static bool ts_open(raw_client *c, const lockfs_config *cfg, char *err, size_t errlen)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	char *token_file = NULL, *ca_file = NULL;
	GError *e = NULL;
	bool ok = false;

	c->ttl_ms = (uint64_t)s->ttl_ms;
	if (!lockfs_config_get_string(cfg, "tinystore", "dir", NULL, &c->target.dir, &e) ||
	    !lockfs_config_get_string(cfg, "tinystore", "endpoint", NULL, &c->target.endpoint,
	                              &e) ||
	    !lockfs_config_get_string(cfg, "tinystore", "token_file", NULL, &token_file, &e) ||
	    !lockfs_config_get_string(cfg, "tinystore", "ca_file", NULL, &ca_file, &e) ||
	    !lockfs_config_get_bool(cfg, "tinystore", "verify", true, &c->target.verify, &e) ||
	    !lockfs_config_get_string(cfg, "tinystore", "lock_name", "lockfs", &c->lock_name, &e)) {
		seterr(err, errlen, "configuration: %s", e->message);
		g_error_free(e);
		goto out;
	}
	if (!c->target.dir == !c->target.endpoint) {
		seterr(err, errlen,
		       "tinystore: give one of tinystore_dir or tinystore_endpoint (in --lockfs-opts "
		       "or the --lockfs-config file)");
		goto out;
	}
	if (c->target.dir) {
		char *abs = g_canonicalize_filename(c->target.dir, NULL);

		g_free(c->target.dir);
		c->target.dir = abs;
	} else {
		if (token_file && !(c->target.token = read_token(token_file, err, errlen)))
			goto out;
		if (ca_file && !(c->target.ca = g_tls_file_database_new(ca_file, &e))) {
			seterr(err, errlen, "ca_file %s: %s", ca_file, e->message);
			g_error_free(e);
			goto out;
		}
	}
	c->target.client = g_strdup("lockbench/" LOCKFS_VERSION);
	c->conn = ts_conn_open(&c->target, lockfs_mono_us() + c->timeout_us, &e);
	if (!c->conn) {
		seterr(err, errlen, "tinystore %s: %s",
		       c->target.dir ? c->target.dir : c->target.endpoint, e->message);
		g_error_free(e);
		goto out;
	}
	c->what = g_strdup_printf("tinystore %s: locks.hold (wait 0) + locks.release of lock %s "
	                          "key " RAW_KEY ", one connection",
	                          c->target.dir ? c->target.dir : c->target.endpoint, c->lock_name);
	ok = true;
out:
	g_free(token_file);
	g_free(ca_file);
	return ok;
}

/* One call; its answer decoded into *HELD (a hold) or checked to be {} (HELD
 * NULL: a release).  false with ERR filled. */
static bool ts_call(raw_client *c, uint16_t method, const char *what, ts_enc *enc, ts_held *held,
                    char *err, size_t errlen)
{
	ts_msg m;
	ts_failure f;
	GError *e = NULL;
	ts_call_result r = ts_conn_call(c->conn, method, enc->buf.data, enc->buf.size,
	                                lockfs_mono_us() + c->timeout_us, &m, &f, &e);
	bool ok;

	if (r == TS_CALL_BROKEN) {
		seterr(err, errlen, "tinystore %s: %s", what, e->message);
		g_error_free(e);
		return false;
	}
	if (r == TS_CALL_FAILED) {
		seterr(err, errlen, "tinystore %s: %s (%s)", what, f.message, f.code);
		ts_failure_clear(&f);
		return false;
	}
	ok = held ? ts_held_decode(&m, true, held, &e) : ts_empty_decode(&m, &e);
	ts_msg_clear(&m);
	if (!ok) {
		seterr(err, errlen, "tinystore %s: %s", what, e->message);
		g_error_free(e);
	}
	return ok;
}

static bool ts_release_lease(raw_client *c, char *err, size_t errlen)
{
	ts_enc enc;
	bool ok;

	ts_enc_init(&enc);
	ts_enc_lease(&enc, c->ts_lease);
	ok = ts_call(c, TS_LOCKS_RELEASE, "locks.release", &enc, NULL, err, errlen);
	ts_enc_clear(&enc);
	if (ok)
		c->ts_held = false;
	return ok;
}

static int ts_cycles(raw_client *c, long n, volatile const sig_atomic_t *stop, char *err,
                     size_t errlen)
{
	for (long i = 0; i < n; i++) {
		uint8_t request[TS_ID_SIZE];
		ts_held held;
		ts_enc enc;
		bool ok;

		/* lockfs draws a new request id for every acquire. */
		if (getrandom(request, sizeof(request), 0) != sizeof(request)) {
			seterr(err, errlen, "getrandom: %s", strerror(errno));
			return -1;
		}
		ts_enc_init(&enc);
		ts_enc_hold(&enc, c->lock_name, RAW_KEY, 0, c->ttl_ms, 0, request);
		ok = ts_call(c, TS_LOCKS_HOLD, "locks.hold", &enc, &held, err, errlen);
		ts_enc_clear(&enc);
		if (!ok)
			return -1;
		if (!held.acquired) {
			seterr(err, errlen,
			       "tinystore locks.hold: key " RAW_KEY " of lock %s is "
			       "busy (someone else holds it)",
			       c->lock_name);
			return -1;
		}
		memcpy(c->ts_lease, held.lease, TS_ID_SIZE);
		c->ts_held = true;
		if (!ts_release_lease(c, err, errlen))
			return -1;
		if (*stop) {
			seterr(err, errlen, "interrupted");
			return -1;
		}
	}
	return 0;
}

/* ---- ldap --------------------------------------------------------------- */

static char *ldap_failure(LDAP *ld, const char *step, int rc)
{
	char *diag = NULL, *out;

	if (ld)
		ldap_get_option(ld, LDAP_OPT_DIAGNOSTIC_MESSAGE, &diag);
	out = g_strdup_printf("ldap %s: %s (%d)%s%s", step, ldap_err2string(rc), rc,
	                      diag && *diag ? ": " : "", diag && *diag ? diag : "");
	ldap_memfree(diag);
	return out;
}

/* The add: the classes and description values lockfs writes when it takes a
 * lock (ldap.c, ldap_names.c), with a pending-fence token like its first add. */
static int ldap_add_raw(raw_client *c)
{
	char *plain[] = { "top", "organizationalRole", NULL };
	char *dyn[] = { "top", "organizationalRole", "dynamicObject", NULL };
	char *cn_vals[] = { RAW_KEY, NULL };
	LDAPMod oc = { .mod_op = LDAP_MOD_ADD, .mod_type = "objectClass" };
	LDAPMod cn = { .mod_op = LDAP_MOD_ADD, .mod_type = "cn", .mod_values = cn_vals };
	LDAPMod desc = { .mod_op = LDAP_MOD_ADD,
		         .mod_type = "description",
		         .mod_values = (char **)c->desc->pdata };
	LDAPMod *mods[] = { &oc, &cn, &desc, NULL };

	oc.mod_values = c->dynamic ? dyn : plain;
	return ldap_add_ext_s(c->ld, c->dn, mods, NULL, NULL);
}

/* Connect and bind as lockfs does (ldap_conn.c conn_open): NULL, or why
 * not (to free). */
static char *ldap_connect_bind(raw_client *c, const ll_config *lc)
{
	struct timeval tv;
	int v3 = LDAP_VERSION3, rc;

	rc = ldap_initialize(&c->ld, lc->uri);
	if (rc != LDAP_SUCCESS)
		return ldap_failure(NULL, "ldap_initialize", rc);
	/* The options lockfs sets (ldap_conn.c conn_open); its per-call
	 * deadline is network_timeout here, set once. */
	tv.tv_sec = c->timeout_us / G_USEC_PER_SEC;
	tv.tv_usec = c->timeout_us % G_USEC_PER_SEC;
	ldap_set_option(c->ld, LDAP_OPT_PROTOCOL_VERSION, &v3);
	ldap_set_option(c->ld, LDAP_OPT_REFERRALS, LDAP_OPT_OFF);
	ldap_set_option(c->ld, LDAP_OPT_TIMEOUT, &tv);
	ldap_set_option(c->ld, LDAP_OPT_NETWORK_TIMEOUT, &tv);
	if (lc->scheme == LL_URI_LDAPS || lc->starttls) {
		int req = lc->verify ? LDAP_OPT_X_TLS_DEMAND : LDAP_OPT_X_TLS_NEVER, server = 0;

		ldap_set_option(c->ld, LDAP_OPT_X_TLS_REQUIRE_CERT, &req);
		if (lc->ca_file)
			ldap_set_option(c->ld, LDAP_OPT_X_TLS_CACERTFILE, lc->ca_file);
		ldap_set_option(c->ld, LDAP_OPT_X_TLS_NEWCTX, &server);
	}
	if ((rc = ldap_connect(c->ld)) != LDAP_SUCCESS)
		return ldap_failure(c->ld, "connect", rc);
	if (lc->starttls && (rc = ldap_start_tls_s(c->ld, NULL, NULL)) != LDAP_SUCCESS)
		return ldap_failure(c->ld, "StartTLS", rc);
	rc = LDAP_SUCCESS;
	if (lc->external) {
		struct berval none = { .bv_len = 0, .bv_val = "" };

		rc = ldap_sasl_bind_s(c->ld, NULL, "EXTERNAL", &none, NULL, NULL, NULL);
	} else if (lc->bind_dn) {
		struct berval cred = { .bv_len = strlen(lc->password), .bv_val = lc->password };

		rc = ldap_sasl_bind_s(c->ld, lc->bind_dn, LDAP_SASL_SIMPLE, &cred, NULL, NULL,
		                      NULL);
	}
	if (rc != LDAP_SUCCESS)
		return ldap_failure(c->ld, "bind", rc);
	return NULL;
}

/* The entry's DN and a holder's notes, as lockfs's first add of a lock
 * carries them. */
static void ldap_holder_notes(raw_client *c, const ll_config *lc)
{
	char *u, *started;

	c->dn = g_strdup_printf("cn=" RAW_KEY ",%s", lc->base);
	c->desc = g_ptr_array_new_with_free_func(g_free);
	started = ll_time_format(lockfs_now_us());
	u = g_strdup(g_get_user_name());
	g_ptr_array_add(c->desc, g_strconcat("host=", lc->host, NULL));
	g_ptr_array_add(c->desc, g_strdup_printf("pid=%d", (int)getpid()));
	g_ptr_array_add(c->desc, g_strconcat("user=", u, NULL));
	g_ptr_array_add(c->desc, g_strdup_printf("uid=%u", (unsigned)getuid()));
	g_ptr_array_add(c->desc, g_strdup_printf("gid=%u", (unsigned)getgid()));
	g_ptr_array_add(c->desc, g_strdup("command=lockbench"));
	g_ptr_array_add(c->desc, g_strconcat("started=", started, NULL));
	g_ptr_array_add(c->desc, g_strconcat("heartbeat=", started, NULL));
	g_ptr_array_add(c->desc, g_strconcat("renewed=", started, NULL));
	g_ptr_array_add(c->desc, g_strdup_printf("fence=pending-%08x%08x-%d", g_random_int(),
	                                         g_random_int(), (int)getpid()));
	g_ptr_array_add(c->desc, g_strdup("mode=644"));
	g_ptr_array_add(c->desc, NULL);
	g_free(started);
	g_free(u);
}

/* One add and delete of the entry, to learn whether the server takes
 * dynamic entries: NULL, or why it failed (to free). */
static char *ldap_first_cycle(raw_client *c, const ll_config *lc)
{
	int rc;

	/* A leftover of an interrupted run on a long-lived server. */
	ldap_delete_ext_s(c->ld, c->dn, NULL, NULL);
	/* Dynamic like lockfs's locks when the server has dds, unless the
	 * configuration says dynamic = no; a server without dds refuses the
	 * class and the raw cycle uses plain entries, as lockfs then does. */
	c->dynamic = lc->dynamic != 0;
	rc = ldap_add_raw(c);
	if (rc != LDAP_SUCCESS && c->dynamic && lc->dynamic < 0) {
		c->dynamic = false;
		rc = ldap_add_raw(c);
	}
	if (rc != LDAP_SUCCESS)
		return ldap_failure(c->ld, "add", rc);
	rc = ldap_delete_ext_s(c->ld, c->dn, NULL, NULL);
	if (rc != LDAP_SUCCESS)
		return ldap_failure(c->ld, "delete", rc);
	return NULL;
}

static bool ldap_open(raw_client *c, const lockfs_config *cfg, char *err, size_t errlen)
{
	ll_config *lc = &c->lc;
	GError *e = NULL;
	char *why;
	const char *tls;

	if (!ll_config_load(lc, cfg, &e)) {
		seterr(err, errlen, "configuration: %s", e->message);
		g_error_free(e);
		return false;
	}
	why = ldap_connect_bind(c, lc);
	if (!why) {
		ldap_holder_notes(c, lc);
		why = ldap_first_cycle(c, lc);
	}
	if (why) {
		seterr(err, errlen, "%s: %s", lc->uri, why);
		g_free(why);
		return false;
	}
	tls = lc->scheme == LL_URI_LDAPS ? "ldaps" : lc->starttls ? "StartTLS" : "no TLS";
	c->what = g_strdup_printf("%s (%s, bind %s): add %s (%s, %u description values) + "
	                          "delete, one connection",
	                          lc->uri, tls,
	                          lc->external  ? "SASL EXTERNAL"
	                          : lc->bind_dn ? lc->bind_dn
	                                        : "anonymous",
	                          c->dn,
	                          c->dynamic ? "top organizationalRole dynamicObject"
	                                     : "top organizationalRole",
	                          c->desc->len - 1);
	return true;
}

static int ldap_cycles(raw_client *c, long n, volatile const sig_atomic_t *stop, char *err,
                       size_t errlen)
{
	for (long i = 0; i < n; i++) {
		char *why = NULL;
		int rc = ldap_add_raw(c);

		if (rc != LDAP_SUCCESS) {
			why = ldap_failure(c->ld, "add", rc);
		} else {
			c->ldap_held = true;
			rc = ldap_delete_ext_s(c->ld, c->dn, NULL, NULL);
			if (rc != LDAP_SUCCESS)
				why = ldap_failure(c->ld, "delete", rc);
			else
				c->ldap_held = false;
		}
		if (why) {
			seterr(err, errlen, "%s", why);
			g_free(why);
			return -1;
		}
		if (*stop) {
			seterr(err, errlen, "interrupted");
			return -1;
		}
	}
	return 0;
}

/* ---- etcd --------------------------------------------------------------- */

static int64_t etcd_deadline(const raw_client *c)
{
	return lockfs_mono_us() + c->timeout_us;
}

/* POST BODY to PATH; the reply's object in *OUT (to unref), or false with
 * ERR filled. */
static bool etcd_post(raw_client *c, const char *path, const char *body, JsonNode **out, char *err,
                      size_t errlen)
{
	char *why = NULL;
	if (etcd_call(c->ec, path, body, etcd_deadline(c), out, &why) == 0)
		return true;
	seterr(err, errlen, "etcd %s %s: %s", etcd_client_endpoint(c->ec), path, why);
	g_free(why);
	return false;
}

/* The create txn: true with c->create_rev set, or false with ERR filled
 * (also when the key exists: a leftover of another run, or a second bench). */
static bool etcd_take(raw_client *c, char *err, size_t errlen)
{
	g_autofree char *body = etcd_txn_create_body(c->key_b64, c->value_b64, c->lease_id);
	JsonNode *out = NULL;
	if (!etcd_post(c, "/v3/kv/txn", body, &out, err, errlen))
		return false;
	JsonObject *o = json_node_get_object(out);
	bool ok = etcd_json_bool(o, "succeeded");
	c->create_rev = ok ? etcd_json_int(etcd_json_obj(o, "header"), "revision", 0) : 0;
	json_node_unref(out);
	if (!ok || c->create_rev <= 0) {
		seterr(err, errlen,
		       "etcd txn: key " RAW_KEY " is held by someone else (another "
		       "lockbench?); delete it or wait for its lease");
		return false;
	}
	return true;
}

static bool etcd_let_go(raw_client *c, char *err, size_t errlen)
{
	g_autofree char *body = etcd_txn_delete_body(c->key, c->create_rev, 0);
	JsonNode *out = NULL;
	if (!etcd_post(c, "/v3/kv/txn", body, &out, err, errlen))
		return false;
	bool ok = etcd_json_bool(json_node_get_object(out), "succeeded");
	json_node_unref(out);
	if (!ok) {
		seterr(err, errlen, "etcd txn: key " RAW_KEY " was no longer ours at its delete");
		return false;
	}
	c->create_rev = 0;
	return true;
}

static bool etcd_open(raw_client *c, const lockfs_config *cfg, char *err, size_t errlen)
{
	etcd_client_opts o = { 0 };
	g_autofree char *prefix = NULL;
	GError *e = NULL;
	if (!etcd_client_opts_read(cfg, &o, &prefix, &e)) {
		seterr(err, errlen, "configuration: %s", e->message);
		g_error_free(e);
		etcd_client_opts_clear(&o);
		return false;
	}
	guint n_endpoints = g_strv_length(o.endpoints);
	c->ec = etcd_client_new(&o);
	etcd_client_opts_clear(&o);

	/* One lease for the run, as a mount has one for all its locks. */
	int64_t ttl_s = MAX(lockfs_config_settings(cfg)->ttl_ms / 1000, 2);
	g_autofree char *grant = g_strdup_printf("{\"TTL\":\"%" PRId64 "\"}", ttl_s * 10);
	JsonNode *out = NULL;
	if (!etcd_post(c, "/v3/lease/grant", grant, &out, err, errlen))
		return false;
	c->lease_id = etcd_json_int(json_node_get_object(out), "ID", 0);
	json_node_unref(out);
	if (c->lease_id <= 0) {
		seterr(err, errlen, "etcd /v3/lease/grant: the reply has no lease ID");
		return false;
	}

	g_autofree char *key = g_strconcat(prefix, RAW_KEY, NULL);
	c->key = g_strdup(key);
	c->key_b64 = etcd_b64(key, strlen(key));
	/* A holder's record, as lockfs writes one into the key's value. */
	etcd_record rec = { 0 };
	g_autofree char *user = g_strdup(g_get_user_name());
	rec.holder.host = (char *)lockfs_config_settings(cfg)->host;
	rec.holder.pid = getpid();
	rec.holder.uid = getuid();
	rec.holder.gid = getgid();
	rec.holder.user = user;
	rec.holder.command = (char *)"lockbench";
	rec.holder.acquired_us = rec.holder.heartbeat_us = lockfs_now_us();
	rec.holder.mode = 0100644;
	rec.mount = (char *)"lockbench-raw";
	rec.nonce = (char *)"00000000000000000000000000000000";
	rec.lease = c->lease_id;
	rec.ttl_ms = ttl_s * 1000;
	g_autofree char *value = etcd_record_encode(&rec);
	c->value_b64 = etcd_b64(value, strlen(value));

	/* One cycle now: a leftover key or a refused txn shows before timing. */
	if (!etcd_take(c, err, errlen) || !etcd_let_go(c, err, errlen))
		return false;
	c->what = g_strdup_printf("etcd %s (%u endpoint%s): txn put %s" RAW_KEY " if absent, on a "
	                          "lease granted once (%zu-byte holder record) + txn delete if "
	                          "its create revision, one keep-alive connection",
	                          etcd_client_endpoint(c->ec), n_endpoints,
	                          n_endpoints == 1 ? "" : "s", prefix, strlen(value));
	return true;
}

static int etcd_cycles(raw_client *c, long n, volatile const sig_atomic_t *stop, char *err,
                       size_t errlen)
{
	/* Keep the run's lease alive, as the mount's keep-alive does: once per
	 * slice, one round trip among thousands, so a run longer than the
	 * lease's TTL does not fail on a lease that ran out. */
	g_autofree char *ka = g_strdup_printf("{\"ID\":\"%" PRId64 "\"}", c->lease_id);
	JsonNode *out = NULL;
	if (!etcd_post(c, "/v3/lease/keepalive", ka, &out, err, errlen))
		return -1;
	json_node_unref(out);
	for (long i = 0; i < n; i++) {
		if (!etcd_take(c, err, errlen) || !etcd_let_go(c, err, errlen))
			return -1;
		if (*stop) {
			seterr(err, errlen, "interrupted");
			return -1;
		}
	}
	return 0;
}

static void etcd_close(raw_client *c)
{
	char ignored[256];
	if (!c->ec)
		return;
	if (c->create_rev)
		etcd_let_go(c, ignored, sizeof(ignored));
	if (c->lease_id) {
		g_autofree char *body = g_strdup_printf("{\"ID\":\"%" PRId64 "\"}", c->lease_id);
		JsonNode *out = NULL;
		if (etcd_post(c, "/v3/lease/revoke", body, &out, ignored, sizeof(ignored)))
			json_node_unref(out);
	}
	etcd_client_free(c->ec);
	g_free(c->key);
	g_free(c->key_b64);
	g_free(c->value_b64);
}

/* ---- the interface ---------------------------------------------------- */

raw_client *raw_open(const char *backend, const char *config_file, const char *opts, char *err,
                     size_t errlen)
{
	raw_client *c;
	lockfs_config *cfg;
	bool ok;

	if (strcmp(backend, "tinystore") != 0 && strcmp(backend, "ldap") != 0 &&
	    strcmp(backend, "etcd") != 0) {
		seterr(err, errlen, "no raw cycle for backend %s", backend);
		return NULL;
	}
	cfg = load_config(backend, config_file, opts, err, errlen);
	if (!cfg)
		return NULL;
	c = g_new0(raw_client, 1);
	c->kind = strcmp(backend, "ldap") == 0   ? RAW_LDAP
	          : strcmp(backend, "etcd") == 0 ? RAW_ETCD
	                                         : RAW_TINYSTORE;
	c->timeout_us = lockfs_config_settings(cfg)->network_timeout_ms * 1000;
	lockfs_holder_set_host(lockfs_config_settings(cfg)->host);
	ok = c->kind == RAW_LDAP   ? ldap_open(c, cfg, err, errlen)
	     : c->kind == RAW_ETCD ? etcd_open(c, cfg, err, errlen)
	                           : ts_open(c, cfg, err, errlen);
	lockfs_config_free(cfg);
	if (!ok) {
		raw_close(c);
		return NULL;
	}
	return c;
}

int raw_cycles(raw_client *c, long n, volatile const sig_atomic_t *stop, char *err, size_t errlen)
{
	switch (c->kind) {
	case RAW_LDAP:
		return ldap_cycles(c, n, stop, err, errlen);
	case RAW_ETCD:
		return etcd_cycles(c, n, stop, err, errlen);
	default:
		return ts_cycles(c, n, stop, err, errlen);
	}
}

const char *raw_describe(const raw_client *c)
{
	return c->what ? c->what : "?";
}

void raw_close(raw_client *c)
{
	char ignored[256];

	if (!c)
		return;
	if (c->conn) {
		if (c->ts_held)
			ts_release_lease(c, ignored, sizeof(ignored));
		ts_conn_close(c->conn);
	}
	g_free(c->target.dir);
	g_free(c->target.endpoint);
	if (c->target.token)
		memset(c->target.token, 0, strlen(c->target.token));
	g_free(c->target.token);
	g_clear_object(&c->target.ca);
	g_free(c->target.client);
	g_free(c->lock_name);
	if (c->ld) {
		if (c->ldap_held)
			ldap_delete_ext_s(c->ld, c->dn, NULL, NULL);
		ldap_unbind_ext_s(c->ld, NULL, NULL);
	}
	if (c->kind == RAW_LDAP)
		ll_config_clear(&c->lc);
	etcd_close(c);
	g_free(c->dn);
	if (c->desc)
		g_ptr_array_free(c->desc, TRUE);
	g_free(c->what);
	g_free(c);
}
