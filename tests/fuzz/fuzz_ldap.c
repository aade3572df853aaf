/* libFuzzer target for what the LDAP backend reads from a directory server:
 * a lock entry and the session entry it names (issue 14) -- holder notes
 * (description values "name=value", ll_notes_parse()), the server's stamps
 * (createTimestamp, modifyTimestamp, entryExpireTimestamp, entryCSN,
 * entryTtl), the entry's DN and its cn as a key -- then the stale rules over
 * them (ll_judge(), ll_lease_left_ms(), the server's clock of the entry);
 * and the session token a restart carries over (token_ok()).
 *
 * The input is LDIF-like text, one attribute a line, "attr: value" or
 * "attr:: base64" (any bytes); a blank line ends the lock entry, and what
 * follows is its session entry.  "now: GENERALIZEDTIME" sets the server's
 * clock (else 2026-01-02), "token: X" checks X as a session token.
 * entry_to_lock() (ldap_conn.c) needs a live LDAPMessage: mirror_entry()
 * below does what it does with the values, and must follow it.
 *
 * ldap_session.c is compiled into this file for its static token_ok();
 * ldap_names.c is compiled here too, with the fuzzer's coverage.
 *
 *   build-fuzz/tests/fuzz/fuzz_ldap -dict=tests/fuzz/ldap.dict tests/fuzz/corpus/ldap */
#include "../../src/backends/ldap/ldap_session.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct {
	GPtrArray *attrs, *values; /* names and values (NUL-free), in order */
} fz_entry;

static void fz_entry_init(fz_entry *e)
{
	e->attrs = g_ptr_array_new_with_free_func(g_free);
	e->values = g_ptr_array_new_with_free_func(g_free);
}

static void fz_entry_clear(fz_entry *e)
{
	g_ptr_array_free(e->attrs, TRUE);
	g_ptr_array_free(e->values, TRUE);
}

/* The values of ATTR (case-insensitive, as LDAP names are), NULL-ended. */
static GPtrArray *fz_values(const fz_entry *e, const char *attr)
{
	GPtrArray *out = g_ptr_array_new();
	for (guint i = 0; i < e->attrs->len; i++)
		if (g_ascii_strcasecmp(e->attrs->pdata[i], attr) == 0)
			g_ptr_array_add(out, e->values->pdata[i]);
	return out;
}

static const char *fz_first(const fz_entry *e, const char *attr)
{
	g_autoptr(GPtrArray) v = fz_values(e, attr);
	return v->len ? v->pdata[0] : NULL;
}

/* One line "attr: value" or "attr:: base64" into E; values holding a NUL
 * are left out, as values_of() leaves them. */
static void fz_line(fz_entry *e, const char *line)
{
	const char *colon = strchr(line, ':');
	if (!colon)
		return;
	char *value;
	if (colon[1] == ':') {
		gsize n = 0;
		g_autofree char *b64 = g_strstrip(g_strdup(colon + 2));
		guchar *raw = g_base64_decode(b64, &n);
		if (memchr(raw, '\0', n)) {
			g_free(raw);
			return;
		}
		value = g_strndup((char *)raw, n);
		g_free(raw);
	} else {
		value = g_strdup(colon[1] == ' ' ? colon + 2 : colon + 1);
	}
	g_ptr_array_add(e->attrs, g_strndup(line, (gsize)(colon - line)));
	g_ptr_array_add(e->values, value);
}

static int64_t fz_time(const fz_entry *e, const char *attr)
{
	const char *v = fz_first(e, attr);
	int64_t us = 0;
	if (v && !ll_gentime_parse(v, &us))
		us = 0;
	return us;
}

/* What entry_to_lock() makes of an entry's values. */
static void mirror_entry(const fz_entry *e, ll_lock *l)
{
	memset(l, 0, sizeof(*l));
	const char *dn = fz_first(e, "dn");
	l->dn = g_strdup(dn ? dn : "");
	g_autoptr(GPtrArray) desc = fz_values(e, "description");
	ll_notes_parse(l, (char **)desc->pdata, desc->len);
	l->create_us = fz_time(e, "createTimestamp");
	l->modify_us = fz_time(e, "modifyTimestamp");
	l->expire_us = fz_time(e, "entryExpireTimestamp");
	const char *csn = fz_first(e, "entryCSN");
	if (csn && !ll_csn_parse(csn, &l->csn_us))
		l->csn_us = 0;
	const char *ttl = fz_first(e, "entryTtl");
	l->ttl_s = -1;
	if (ttl) {
		char *end = NULL;
		int64_t t = g_ascii_strtoll(ttl, &end, 10);
		if (end != ttl && !*end && t >= 0 && t < G_MAXINT32)
			l->ttl_s = t;
	}
	g_autofree char *cn = ll_dn_cn(l->dn);
	if (cn && ll_cn_hashed(cn)) {
		g_autofree char *again = l->note_key ? ll_key_encode(l->note_key) : NULL;
		if (again && strcmp(again, cn) == 0)
			l->key = g_strdup(l->note_key);
	} else {
		l->key = ll_key_decode(cn);
	}
	if (!l->fence_value || !l->holder.host)
		g_clear_pointer(&l->key, g_free);
}

/* A key read back is one ll_key_encode() writes, and names the same DN. */
static void check_key(const ll_lock *l)
{
	if (!l->key)
		return;
	g_autofree char *cn = ll_key_encode(l->key);
	g_autofree char *dn = ll_dn(cn, "ou=locks,dc=example");
	g_autofree char *back = dn ? ll_dn_cn(dn) : NULL;
	if (!back || strcmp(back, cn) != 0)
		abort();
}

/* A token token_ok() lets through is a session cn that makes a DN. */
static void check_token(ll_backend *be, const char *token)
{
	if (!token_ok(be, token))
		return;
	g_autofree char *dn = ll_dn(token, "ou=locks,dc=example");
	g_autofree char *back = dn ? ll_dn_cn(dn) : NULL;
	if (!ll_is_session_cn(token) || !back || strcmp(back, token) != 0)
		abort();
}

/* The session entry as ll_session_resolve() takes it. */
static void resolve(ll_lock *l, const fz_entry *sess, bool have)
{
	l->sess_state = LL_SESS_UNREAD;
	if (!ll_is_session_cn(l->session))
		return;
	if (!have) {
		l->sess_state = LL_SESS_GONE;
		return;
	}
	ll_lock s;
	mirror_entry(sess, &s);
	if (s.lease_us > 0) {
		l->sess_last_us = ll_server_last(&s, &l->sess_res_us);
		l->sess_lease_us = s.lease_us;
		if (l->sess_last_us)
			l->sess_state = LL_SESS_LIVE;
	}
	ll_lock_clear(&s);
}

static void judge(ll_backend *be, ll_lock *l)
{
	l->read_sent_mono_us = l->read_recv_mono_us = lockfs_mono_us();
	ll_server_now now;
	ll_server_now_of(be, l, &now);
	(void)ll_judge(l, &now, 30 * G_USEC_PER_SEC, 300 * G_USEC_PER_SEC);
	(void)ll_judge(l, &now, G_MAXINT64 / 4, 0);
	int64_t left = ll_lease_left_ms(l, &now, 30 * G_USEC_PER_SEC);
	if (left < 0)
		abort();
	int64_t res;
	(void)ll_server_last(l, &res);
}

static void fz_backend(ll_backend *be, const fz_entry *lock)
{
	memset(be, 0, sizeof(*be));
	g_mutex_init(&be->clock_mu);
	be->cfg.host = g_strdup("host1.example");
	be->cfg.base = g_strdup("ou=locks,dc=example");
	int64_t now = 0;
	const char *v = fz_first(lock, "now");
	if (!v || !ll_gentime_parse(v, &now))
		now = (int64_t)1767323045 * G_USEC_PER_SEC; /* 2026-01-02T03:04:05Z */
	int64_t m = lockfs_mono_us();
	be->clock = (ll_clock_sample){ .srv_us = now,
		                       .res_us = G_USEC_PER_SEC,
		                       .sent_mono_us = m,
		                       .recv_mono_us = m,
		                       .sent_wall_us = now,
		                       .recv_wall_us = now };
}

static void fz_backend_clear(ll_backend *be)
{
	g_free(be->cfg.host);
	g_free(be->cfg.base);
	g_mutex_clear(&be->clock_mu);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	g_autofree char *text = g_strndup((const char *)data, size);
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	fz_entry e[2];
	fz_entry_init(&e[0]);
	fz_entry_init(&e[1]);
	int at = 0;
	for (char **p = lines; *p; p++) {
		if (!**p && at == 0)
			at = 1;
		else
			fz_line(&e[at], *p);
	}
	ll_backend be;
	fz_backend(&be, &e[0]);
	ll_lock l;
	mirror_entry(&e[0], &l);
	check_key(&l);
	for (int i = 0; i < 2; i++) {
		g_autoptr(GPtrArray) tokens = fz_values(&e[i], "token");
		for (guint j = 0; j < tokens->len; j++)
			check_token(&be, tokens->pdata[j]);
	}
	resolve(&l, &e[1], at == 1);
	judge(&be, &l);
	ll_lock_clear(&l);
	fz_backend_clear(&be);
	fz_entry_clear(&e[0]);
	fz_entry_clear(&e[1]);
	return 0;
}
