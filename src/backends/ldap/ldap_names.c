/* The LDAP backend's names and notes: keys as cn values, DNs through libldap's
 * DN functions, the holder notes kept as description values, and the rules that
 * judge a lock stale.  No network here. */
#include "ldap_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Longest description value written: Active Directory's limit is 1024. */
#define NOTE_MAX 1000
/* Content bytes per note: base64 of 750 bytes is 1000 characters. */
#define CONTENT_CHUNK 750

/* Bytes that stay as they are in an escaped cn: the directory's matching rules
 * leave lower-case letters, digits and ASCII punctuation alone. */
static bool byte_kept(unsigned char b)
{
	if (b >= 'a' && b <= 'z')
		return true;
	if (b >= '0' && b <= '9')
		return true;
	return b >= 0x21 && b <= 0x7e && !g_ascii_isupper(b) && b != '%';
}

char *ll_key_escape(const char *s)
{
	GString *out = g_string_new(NULL);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (byte_kept(*p))
			g_string_append_c(out, (char)*p);
		else
			g_string_append_printf(out, "%%%02x", *p);
	}
	return g_string_free(out, FALSE);
}

/* Whether KEY can be a cn value as it is: no other key may match it under
 * caseIgnoreMatch (case folding, Unicode normalisation, space folding).  Keys
 * that are their own normal form, without '%' (the escape), control or format
 * characters and with single spaces inside only, qualify. */
static bool key_plain(const char *key)
{
	if (!*key || !g_utf8_validate(key, -1, NULL) || key[0] == ' ')
		return false;
	size_t len = strlen(key);
	if (key[len - 1] == ' ')
		return false;
	for (const char *p = key; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (c < 0x80) {
			if (c < 0x20 || c == 0x7f || c == '%' || g_ascii_isupper(c))
				return false;
			if (c == ' ' && p[1] == ' ')
				return false;
			continue;
		}
		switch (g_unichar_type(c)) {
		case G_UNICODE_CONTROL:
		case G_UNICODE_FORMAT:
		case G_UNICODE_UNASSIGNED:
		case G_UNICODE_PRIVATE_USE:
		case G_UNICODE_SURROGATE:
		case G_UNICODE_LINE_SEPARATOR:
		case G_UNICODE_PARAGRAPH_SEPARATOR:
		case G_UNICODE_SPACE_SEPARATOR:
		case G_UNICODE_UPPERCASE_LETTER:
		case G_UNICODE_TITLECASE_LETTER:
			return false;
		default:
			break;
		}
	}
	g_autofree char *nfkc = g_utf8_normalize(key, -1, G_NORMALIZE_NFKC);
	if (!nfkc || strcmp(nfkc, key) != 0)
		return false;
	g_autofree char *folded = g_utf8_casefold(nfkc, -1);
	g_autofree char *again = g_utf8_normalize(folded, -1, G_NORMALIZE_NFKC);
	return again && strcmp(again, key) == 0;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Bytes of ENC's longest prefix of at most MAX bytes made of whole characters
 * and whole %xx escapes. */
size_t ll_cn_prefix_len(const char *enc, size_t max)
{
	const char *p = enc;
	while (*p) {
		const char *next = *p == '%' && p[1] && p[2] ? p + 3 : g_utf8_next_char(p);
		if ((size_t)(next - enc) > max)
			break;
		p = next;
	}
	return p - enc;
}

char *ll_key_encode(const char *key)
{
	char *enc = key_plain(key) ? g_strdup(key) : ll_key_escape(key);
	if (strlen(enc) <= LL_CN_MAX)
		return enc;
	/* Too long for some directories (AD: 64 characters; OpenLDAP's mdb: about
	 * 240 bytes): a readable start, then a hash of the key, which is kept
	 * whole in a note. */
	g_autofree char *sum = g_compute_checksum_for_string(G_CHECKSUM_SHA256, key, -1);
	char *out = g_strdup_printf("%.*s%%h%.*s", (int)ll_cn_prefix_len(enc, LL_CN_HASH_PREFIX),
	                            enc, LL_CN_HASH_HEX, sum);
	g_free(enc);
	return out;
}

/* "%h" and 32 hex digits at the end: '%' is followed by two hex digits in
 * escaped names and absent from plain ones, so no other cn ends so. */
bool ll_cn_hashed(const char *cn)
{
	size_t len = strlen(cn);
	if (len < LL_CN_HASH_HEX + 2 || cn[len - LL_CN_HASH_HEX - 2] != '%' ||
	    cn[len - LL_CN_HASH_HEX - 1] != 'h')
		return false;
	for (const char *p = cn + len - LL_CN_HASH_HEX; *p; p++)
		if (hexval(*p) < 0)
			return false;
	return true;
}

char *ll_key_decode(const char *cn)
{
	if (!cn || !*cn || ll_cn_hashed(cn))
		return NULL;
	GString *out = g_string_new(NULL);
	for (const char *p = cn; *p; p++) {
		if (*p != '%') {
			g_string_append_c(out, *p);
			continue;
		}
		int hi = hexval(p[1]), lo = hi < 0 ? -1 : hexval(p[2]);
		if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
			g_string_free(out, TRUE);
			return NULL;
		}
		g_string_append_c(out, (char)(hi << 4 | lo));
		p += 2;
	}
	char *key = g_string_free(out, FALSE);
	/* Only what ll_key_encode() writes is a lock (not a probe, a lock being
	 * broken, or someone else's entry). */
	g_autofree char *again = ll_key_encode(key);
	if (strcmp(again, cn) != 0) {
		g_free(key);
		return NULL;
	}
	return key;
}

char *ll_dn(const char *cn, const char *base)
{
	LDAPAVA ava = {
		.la_attr = { .bv_len = 2, .bv_val = "cn" },
		.la_value = { .bv_len = strlen(cn), .bv_val = (char *)cn },
		.la_flags = LDAP_AVA_STRING,
	};
	LDAPAVA *rdn[] = { &ava, NULL };
	char *s = NULL;
	if (ldap_rdn2str(rdn, &s, LDAP_DN_FORMAT_LDAPV3 | LDAP_DN_PRETTY) != LDAP_SUCCESS)
		return NULL;
	char *dn = g_strconcat(s, ",", base, NULL);
	ldap_memfree(s);
	return dn;
}

char *ll_dn_cn(const char *dn)
{
	LDAPDN ldn = NULL;
	if (ldap_str2dn(dn, &ldn, LDAP_DN_FORMAT_LDAPV3) != LDAP_SUCCESS || !ldn || !ldn[0])
		return NULL;
	char *cn = NULL;
	LDAPAVA *ava = ldn[0][0];
	if (ava && !ldn[0][1] && !(ava->la_flags & LDAP_AVA_BINARY) && ava->la_attr.bv_len == 2 &&
	    g_ascii_strncasecmp(ava->la_attr.bv_val, "cn", 2) == 0 && ava->la_value.bv_val &&
	    !memchr(ava->la_value.bv_val, '\0', ava->la_value.bv_len))
		cn = g_strndup(ava->la_value.bv_val, ava->la_value.bv_len);
	ldap_dnfree(ldn);
	return cn;
}

/* "%stale%" and "%probe%" cannot occur in ll_key_encode()'s output ('%' is
 * always followed by two hex digits there), so these are never a lock's name. */
char *ll_stale_cn(const char *key, const char *host, int64_t now_us, guint seq)
{
	/* Short: the name must fit where the lock's did (AD: 64). */
	g_autofree char *enc = ll_key_encode(key);
	g_autofree char *h = ll_key_escape(host);
	return g_strdup_printf("%.*s%%stale%%%.*s-%" G_GINT64_FORMAT "-%d-%u",
	                       (int)ll_cn_prefix_len(enc, 16), enc, (int)ll_cn_prefix_len(h, 12), h,
	                       now_us / G_USEC_PER_SEC, (int)getpid(), seq % 10000);
}

char *ll_probe_cn(const char *host)
{
	g_autofree char *h = ll_key_escape(host);
	return g_strdup_printf("%%probe%%%.*s-%d-%08x", (int)ll_cn_prefix_len(h, 32), h,
	                       (int)getpid(), g_random_int());
}

char *ll_session_cn(const char *host)
{
	g_autofree char *h = ll_key_escape(host);
	return g_strdup_printf("%%session%%%.*s-%d-%08x%08x", (int)ll_cn_prefix_len(h, 28), h,
	                       (int)getpid(), g_random_int(), g_random_int());
}

bool ll_is_session_cn(const char *cn)
{
	return cn && g_str_has_prefix(cn, "%session%") && strlen(cn) <= LL_CN_MAX;
}

/* ---- times ---- */

char *ll_time_format(int64_t us)
{
	time_t s = (time_t)(us / G_USEC_PER_SEC);
	struct tm tm;
	gmtime_r(&s, &tm);
	char buf[32];
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	return g_strdup_printf("%s.%06dZ", buf, (int)(us % G_USEC_PER_SEC));
}

/* Digits of S[0..n) as a number, or -1. */
static int digits(const char *s, int n)
{
	int v = 0;
	for (int i = 0; i < n; i++) {
		if (!g_ascii_isdigit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static bool to_us(int y, int mo, int d, int h, int mi, int sec, const char *frac, int64_t *us)
{
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60)
		return false;
	struct tm tm = { .tm_year = y - 1900,
		         .tm_mon = mo - 1,
		         .tm_mday = d,
		         .tm_hour = h,
		         .tm_min = mi,
		         .tm_sec = sec };
	int64_t f = 0, scale = G_USEC_PER_SEC;
	if (*frac == '.' || *frac == ',') {
		frac++;
		if (!g_ascii_isdigit(*frac))
			return false;
		for (; g_ascii_isdigit(*frac); frac++) {
			if (scale > 1) {
				scale /= 10;
				f += (*frac - '0') * scale;
			}
		}
	}
	if (strcmp(frac, "Z") != 0)
		return false;
	*us = (int64_t)timegm(&tm) * G_USEC_PER_SEC + f;
	return true;
}

bool ll_time_parse(const char *s, int64_t *us)
{
	/* 2026-01-02T03:04:05.123456Z */
	if (strlen(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' ||
	    s[16] != ':')
		return false;
	return to_us(digits(s, 4), digits(s + 5, 2), digits(s + 8, 2), digits(s + 11, 2),
	             digits(s + 14, 2), digits(s + 17, 2), s + 19, us);
}

bool ll_gentime_parse(const char *s, int64_t *us)
{
	/* GeneralizedTime as servers write it: 20260102030405Z, 20260102030405.0Z */
	if (strlen(s) < 15)
		return false;
	return to_us(digits(s, 4), digits(s + 4, 2), digits(s + 6, 2), digits(s + 8, 2),
	             digits(s + 10, 2), digits(s + 12, 2), s + 14, us);
}

bool ll_csn_parse(const char *s, int64_t *us)
{
	/* entryCSN (OpenLDAP): 20260102030405.123456Z#000000#000#000000 */
	const char *hash = strchr(s, '#');
	if (!hash || hash - s < 15 || hash - s > 30)
		return false;
	g_autofree char *t = g_strndup(s, hash - s);
	return ll_gentime_parse(t, us);
}

/* ---- notes ---- */

/* VALUE as valid UTF-8 of at most MAX bytes, cut at a character boundary. */
static char *note_text(const char *value, size_t max)
{
	g_autofree char *valid = g_utf8_make_valid(value ? value : "", -1);
	const char *end = valid;
	while (*end) {
		const char *next = g_utf8_next_char(end);
		if ((size_t)(next - valid) > max)
			break;
		end = next;
	}
	return g_strndup(valid, end - valid);
}

GPtrArray *ll_notes_build(const char *key, const lockfs_holder *h, const char *fence_value,
                          const char *session, int64_t renewed_us, int64_t idle_us, GBytes *content)
{
	GPtrArray *d = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *cn = ll_key_encode(key);
	if (ll_cn_hashed(cn)) {
		g_autofree char *b64 = g_base64_encode((const guchar *)key, strlen(key));
		g_ptr_array_add(d, g_strconcat("key64=", b64, NULL));
	}
	g_autofree char *host = note_text(h->host, NOTE_MAX);
	g_autofree char *user = note_text(h->user, NOTE_MAX);
	g_autofree char *cmd = note_text(h->command, NOTE_MAX - 8);
	g_autofree char *started = ll_time_format(h->acquired_us);
	g_autofree char *hb = ll_time_format(h->heartbeat_us);
	g_autofree char *renewed = ll_time_format(renewed_us);
	g_ptr_array_add(d, g_strconcat("host=", host, NULL));
	g_ptr_array_add(d, g_strdup_printf("pid=%" G_GINT64_FORMAT, h->pid));
	g_ptr_array_add(d, g_strconcat("user=", user, NULL));
	g_ptr_array_add(d, g_strdup_printf("uid=%u", h->uid));
	g_ptr_array_add(d, g_strdup_printf("gid=%u", h->gid));
	if (*cmd)
		g_ptr_array_add(d, g_strconcat("command=", cmd, NULL));
	g_ptr_array_add(d, g_strconcat("started=", started, NULL));
	g_ptr_array_add(d, g_strconcat("heartbeat=", hb, NULL));
	g_ptr_array_add(d, g_strconcat("renewed=", renewed, NULL));
	/* The heartbeat's age at this write by our monotonic clock: others
	 * date the heartbeat by the server's stamp of this write less it, so
	 * no two hosts' wall clocks are ever compared. */
	if (idle_us >= 0)
		g_ptr_array_add(d, g_strdup_printf("idle_ms=%" G_GINT64_FORMAT, idle_us / 1000));
	g_ptr_array_add(d, g_strdup(fence_value));
	if (session)
		g_ptr_array_add(d, g_strconcat("session=", session, NULL));
	g_ptr_array_add(d, g_strdup_printf("mode=%o", h->mode));
	/* Times the holder set apart from its heartbeats (utimes, touch -d). */
	const struct {
		const char *name;
		int64_t us;
	} shown[] = { { "mtime=", h->mtime_us },
		      { "atime=", h->atime_us },
		      { "ctime=", h->ctime_us } };
	for (size_t i = 0; i < G_N_ELEMENTS(shown); i++)
		if (shown[i].us > 0) {
			g_autofree char *t = ll_time_format(shown[i].us);
			g_ptr_array_add(d, g_strconcat(shown[i].name, t, NULL));
		}
	gsize len = 0;
	const guchar *data = content ? g_bytes_get_data(content, &len) : NULL;
	for (gsize off = 0, i = 0; off < len; off += CONTENT_CHUNK, i++) {
		g_autofree char *b64 = g_base64_encode(data + off, MIN(CONTENT_CHUNK, len - off));
		if (i == 0)
			g_ptr_array_add(d, g_strconcat("content=", b64, NULL));
		else
			g_ptr_array_add(d, g_strdup_printf("content.%zu=%s", (size_t)i, b64));
	}
	return d;
}

static int chunk_cmp(gconstpointer a, gconstpointer b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	long i = x[7] == '.' ? strtol(x + 8, NULL, 10) : 0;
	long j = y[7] == '.' ? strtol(y + 8, NULL, 10) : 0;
	return (i > j) - (i < j);
}

static bool fence_digits(const char *s)
{
	if (!*s || strlen(s) >= LOCKFS_FENCE_MAX)
		return false;
	for (const char *p = s; *p; p++)
		if (!g_ascii_isdigit(*p))
			return false;
	return true;
}

/* Is the note V, whose name is NL bytes long, the note NAME? */
#define IS(name) (nl == strlen(name) && strncmp(v, name, nl) == 0)

/* The note V (name NL bytes long, value VAL) into L's holder: who holds it,
 * since when, and the lock file's attributes.  False when it is no such
 * note. */
static bool holder_note(ll_lock *l, const char *v, size_t nl, const char *val)
{
	int64_t t;
	if (IS("host")) {
		g_free(l->holder.host);
		l->holder.host = g_strdup(val);
	} else if (IS("pid")) {
		l->holder.pid = g_ascii_strtoll(val, NULL, 10);
	} else if (IS("user")) {
		g_free(l->holder.user);
		l->holder.user = g_strdup(val);
	} else if (IS("uid")) {
		l->holder.uid = (uint32_t)g_ascii_strtoull(val, NULL, 10);
	} else if (IS("gid")) {
		l->holder.gid = (uint32_t)g_ascii_strtoull(val, NULL, 10);
	} else if (IS("command")) {
		g_free(l->holder.command);
		l->holder.command = g_strdup(val);
	} else if (IS("started")) {
		if (ll_time_parse(val, &t))
			l->holder.acquired_us = t;
	} else if (IS("heartbeat")) {
		if (ll_time_parse(val, &t)) {
			l->holder.heartbeat_us = t;
			g_free(l->heartbeat_value);
			l->heartbeat_value = g_strdup(v);
		}
	} else if (IS("mtime")) {
		if (ll_time_parse(val, &t))
			l->holder.mtime_us = t;
	} else if (IS("atime")) {
		if (ll_time_parse(val, &t))
			l->holder.atime_us = t;
	} else if (IS("ctime")) {
		if (ll_time_parse(val, &t))
			l->holder.ctime_us = t;
	} else if (IS("mode")) {
		l->holder.mode = (uint32_t)g_ascii_strtoull(val, NULL, 8);
	} else {
		return false;
	}
	return true;
}

/* The note V (name NL bytes long, value VAL) into L: the lock's own notes
 * (its fence, key, session, renewals); a content chunk goes to CHUNKS. */
static void lock_note(ll_lock *l, const char *v, size_t nl, const char *val, GPtrArray *chunks)
{
	int64_t t;
	if (IS("renewed")) {
		if (ll_time_parse(val, &t)) {
			l->renewed_us = t;
			g_free(l->renewed_value);
			l->renewed_value = g_strdup(v);
		}
	} else if (IS("idle_ms")) {
		char *end = NULL;
		int64_t ms = g_ascii_strtoll(val, &end, 10);
		if (end != val && !*end && ms >= 0 && ms < G_MAXINT64 / 1000)
			l->idle_us = ms * 1000;
	} else if (IS("fence")) {
		g_free(l->fence_value);
		l->fence_value = g_strdup(v);
		if (fence_digits(val))
			g_strlcpy(l->fence, val, sizeof(l->fence));
		else
			l->fence[0] = '\0';
	} else if (IS("key64")) {
		gsize len = 0;
		g_autofree guchar *raw = g_base64_decode(val, &len);
		g_free(l->note_key);
		l->note_key = raw && !memchr(raw, '\0', len) ? g_strndup((char *)raw, len) : NULL;
	} else if (IS("session")) {
		g_free(l->session);
		l->session = g_strdup(val);
	} else if (IS("lease_ms")) {
		char *end = NULL;
		int64_t ms = g_ascii_strtoll(val, &end, 10);
		if (end != val && !*end && ms > 0 && ms < G_MAXINT64 / 1000)
			l->lease_us = ms * 1000;
	} else if (IS("content") || (nl > 8 && strncmp(v, "content.", 8) == 0)) {
		g_ptr_array_add(chunks, (gpointer)v);
	}
}

#undef IS

/* L's content: the chunks, in their order, decoded and joined. */
static void join_content(ll_lock *l, GPtrArray *chunks)
{
	g_ptr_array_sort(chunks, chunk_cmp);
	GByteArray *bytes = g_byte_array_new();
	for (guint i = 0; i < chunks->len; i++) {
		gsize len = 0;
		g_autofree guchar *raw = g_base64_decode(strchr(chunks->pdata[i], '=') + 1, &len);
		g_byte_array_append(bytes, raw, len);
	}
	if (l->content)
		g_bytes_unref(l->content);
	l->content = g_byte_array_free_to_bytes(bytes);
}

void ll_notes_parse(ll_lock *l, char **values, size_t n)
{
	g_autoptr(GPtrArray) chunks = g_ptr_array_new();
	l->idle_us = -1;
	l->lease_us = -1;
	for (size_t i = 0; i < n; i++) {
		const char *v = values[i];
		const char *eq = strchr(v, '=');
		if (!eq)
			continue;
		if (!holder_note(l, v, eq - v, eq + 1))
			lock_note(l, v, eq - v, eq + 1, chunks);
	}
	if (!l->holder.heartbeat_us)
		l->holder.heartbeat_us = l->holder.acquired_us;
	if (chunks->len)
		join_content(l, chunks);
}

void ll_lock_clear(ll_lock *l)
{
	g_free(l->dn);
	g_free(l->key);
	lockfs_holder_clear(&l->holder);
	g_free(l->fence_value);
	g_free(l->heartbeat_value);
	g_free(l->renewed_value);
	g_free(l->note_key);
	g_free(l->session);
	if (l->content)
		g_bytes_unref(l->content);
	memset(l, 0, sizeof(*l));
}

/* ---- the stale rules ---- */

int64_t ll_server_last(const ll_lock *l, int64_t *res_us)
{
	int64_t ts = MAX(l->modify_us, l->create_us);
	/* OpenLDAP's modifyTimestamp is its entryCSN cut to the second: when
	 * they agree, the CSN dates the write to the microsecond. */
	if (ts && l->csn_us >= ts && l->csn_us < ts + G_USEC_PER_SEC) {
		*res_us = 1000;
		return l->csn_us;
	}
	*res_us = ts ? G_USEC_PER_SEC : 0;
	return ts;
}

/* How long the holder had not heartbeaten when it last wrote: its idle_ms=
 * note, or for older holders the gap between its own renewed= and
 * heartbeat= notes (one clock, the holder's). */
static int64_t holder_idle(const ll_lock *l)
{
	if (l->idle_us >= 0)
		return l->idle_us;
	if (l->renewed_us && l->holder.heartbeat_us && l->renewed_us > l->holder.heartbeat_us)
		return l->renewed_us - l->holder.heartbeat_us;
	return 0;
}

/* Every time here is the server's: the last write by its stamp W (rounded up
 * to its resolution), its clock now at least NOW->lo.  The lease ran out when
 * more than ttl passed since W; the holder is stale when its heartbeat, W
 * less the holder's idle time, is older than stale_after.  The holder
 * declares its lease lost ttl less a fifth after it *sent* its last renewal
 * (before W) by its monotonic clock, so no wall clock — ours or the
 * holder's — can make a live lease look expired.  With a session, W of the
 * lease is the session entry's last write and the lease its lease_ms= (ttl
 * and a renew interval: a renewal may count on a session write sent up to a
 * renew interval before it); the lock entry's own W still dates its
 * heartbeat. */
ll_verdict ll_judge(const ll_lock *l, const ll_server_now *now, int64_t ttl_us,
                    int64_t stale_after_us)
{
	int64_t res = 0, w = ll_server_last(l, &res);
	if (!w || !now->hi_us)
		return LL_UNSURE;
	if (w > now->hi_us)
		return LL_UNSURE; /* written in the server's future: a reading is wrong */
	int64_t since = now->lo_us - (w + res);
	if (l->session) {
		if (l->sess_state == LL_SESS_GONE)
			return LL_EXPIRED;
		if (l->sess_state != LL_SESS_LIVE || l->sess_last_us > now->hi_us)
			return LL_UNSURE;
		if (now->lo_us - (l->sess_last_us + l->sess_res_us) > l->sess_lease_us)
			return LL_EXPIRED;
	} else if (since > ttl_us) {
		return LL_EXPIRED;
	}
	if (stale_after_us > 0 && since > stale_after_us - holder_idle(l))
		return LL_STALE;
	return LL_HELD;
}

int64_t ll_lease_left_ms(const ll_lock *l, const ll_server_now *now, int64_t ttl_us)
{
	int64_t res = 0, w = ll_server_last(l, &res);
	if (l->session) {
		if (l->sess_state == LL_SESS_GONE)
			return 0;
		if (l->sess_state != LL_SESS_LIVE)
			return ttl_us / 1000;
		w = l->sess_last_us;
		res = l->sess_res_us;
		ttl_us = l->sess_lease_us;
	}
	if (!w || !now->hi_us)
		return ttl_us / 1000;
	int64_t mid = now->lo_us + (now->hi_us - now->lo_us) / 2;
	int64_t left = ttl_us - MAX(mid - (w + res / 2), 0); /* a write in the future: all of it */
	if (l->ttl_s >= 0 && !l->session)
		left = MIN(left, l->ttl_s * G_USEC_PER_SEC);
	return CLAMP(left, 0, ttl_us) / 1000;
}
