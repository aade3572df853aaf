/* The JSON tinystore and lockfs keep next to the wire: the server's SERVE
 * file and lockfs's holder records.  A small strict reader (no dependency
 * for two flat objects), bounded in depth, refusing what it does not know
 * how to read rather than guessing. */
#include "tinystore_codec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define JSON_DEPTH 8
#define RECORD_TYPE_JSON 0x03
#define RECORD_VERSION 1
/* Longer command lines are cut: a record stays a few KiB. */
#define RECORD_COMMAND_MAX 1024

typedef enum {
	J_NULL,
	J_BOOL,
	J_INT,
	J_NUM,
	J_STR,
	J_ARR,
	J_OBJ
} jtype;

typedef struct jv {
	jtype t;
	bool b;
	int64_t i;
	char *s;         /* J_STR */
	GPtrArray *keys; /* J_OBJ: char * */
	GPtrArray *vals; /* J_ARR, J_OBJ: jv * */
} jv;

static void jv_free(jv *v)
{
	if (!v)
		return;
	g_free(v->s);
	if (v->keys)
		g_ptr_array_free(v->keys, TRUE);
	if (v->vals)
		g_ptr_array_free(v->vals, TRUE);
	g_free(v);
}

typedef struct {
	const char *p, *end;
	GError **error;
} jparse;

static bool jfail(jparse *j, const char *why)
{
	if (j->error && !*j->error)
		g_set_error(j->error, TS_ERROR, TS_ERROR_PROTOCOL, "JSON: %s", why);
	return false;
}

static void skip_ws(jparse *j)
{
	while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r'))
		j->p++;
}

static bool lit(jparse *j, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(j->end - j->p) < n || memcmp(j->p, word, n) != 0)
		return jfail(j, "an unknown word");
	j->p += n;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool hex4(jparse *j, unsigned *out)
{
	if (j->end - j->p < 4)
		return jfail(j, "a \\u escape cut short");
	*out = 0;
	for (int k = 0; k < 4; k++) {
		int h = hexval(j->p[k]);
		if (h < 0)
			return jfail(j, "a bad \\u escape");
		*out = *out << 4 | (unsigned)h;
	}
	j->p += 4;
	return true;
}

/* A \u escape (J->p after the "u") appended to S: a pair of surrogates is
 * one character; a lone one, or NUL, is refused. */
static bool junicode(jparse *j, GString *s)
{
	unsigned u, lo;
	if (!hex4(j, &u))
		return false;
	if (u >= 0xd800 && u <= 0xdbff) {
		if (j->end - j->p < 2 || j->p[0] != '\\' || j->p[1] != 'u')
			return jfail(j, "a lone surrogate");
		j->p += 2;
		if (!hex4(j, &lo))
			return false;
		if (lo < 0xdc00 || lo > 0xdfff)
			return jfail(j, "a lone surrogate");
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	} else if ((u >= 0xdc00 && u <= 0xdfff) || u == 0) {
		/* NUL would cut C strings short. */
		return jfail(j, "a lone surrogate or NUL");
	}
	g_string_append_unichar(s, u);
	return true;
}

/* The escape after a backslash (J->p at its letter) appended to S. */
static bool jescape(jparse *j, GString *s)
{
	char e = *j->p++;
	switch (e) {
	case '"':
	case '\\':
	case '/':
		g_string_append_c(s, e);
		return true;
	case 'b':
		g_string_append_c(s, '\b');
		return true;
	case 'f':
		g_string_append_c(s, '\f');
		return true;
	case 'n':
		g_string_append_c(s, '\n');
		return true;
	case 'r':
		g_string_append_c(s, '\r');
		return true;
	case 't':
		g_string_append_c(s, '\t');
		return true;
	case 'u':
		return junicode(j, s);
	default:
		return jfail(j, "an unknown escape");
	}
}

static bool jstring(jparse *j, char **out)
{
	j->p++; /* the opening quote */
	GString *s = g_string_new(NULL);
	while (j->p < j->end && *j->p != '"') {
		unsigned char c = (unsigned char)*j->p;
		if (c < 0x20) {
			jfail(j, "a control character in a string");
			goto bad;
		}
		if (c != '\\') {
			g_string_append_c(s, (char)c);
			j->p++;
			continue;
		}
		if (++j->p >= j->end)
			break;
		if (!jescape(j, s))
			goto bad;
	}
	if (j->p >= j->end) {
		jfail(j, "a string cut short");
		goto bad;
	}
	j->p++;
	if (!g_utf8_validate_len(s->str, s->len, NULL)) {
		jfail(j, "a string that is not UTF-8");
		goto bad;
	}
	*out = g_string_free(s, FALSE);
	return true;
bad:
	g_string_free(s, TRUE);
	return false;
}

static bool jnumber(jparse *j, jv *v)
{
	const char *start = j->p;
	if (j->p < j->end && *j->p == '-')
		j->p++;
	if (j->p >= j->end || !g_ascii_isdigit(*j->p))
		return jfail(j, "a bad number");
	if (*j->p == '0' && j->p + 1 < j->end && g_ascii_isdigit(j->p[1]))
		return jfail(j, "a number with a leading zero");
	while (j->p < j->end && g_ascii_isdigit(*j->p))
		j->p++;
	bool integral = true;
	if (j->p < j->end && *j->p == '.') {
		integral = false;
		j->p++;
		if (j->p >= j->end || !g_ascii_isdigit(*j->p))
			return jfail(j, "a bad number");
		while (j->p < j->end && g_ascii_isdigit(*j->p))
			j->p++;
	}
	if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
		integral = false;
		j->p++;
		if (j->p < j->end && (*j->p == '+' || *j->p == '-'))
			j->p++;
		if (j->p >= j->end || !g_ascii_isdigit(*j->p))
			return jfail(j, "a bad number");
		while (j->p < j->end && g_ascii_isdigit(*j->p))
			j->p++;
	}
	v->t = J_NUM;
	if (integral) {
		char buf[32];
		size_t n = (size_t)(j->p - start);
		if (n < sizeof(buf)) {
			memcpy(buf, start, n);
			buf[n] = '\0';
			errno = 0;
			char *endp;
			long long x = strtoll(buf, &endp, 10);
			if (errno == 0 && *endp == '\0') {
				v->t = J_INT;
				v->i = x;
			}
		}
	}
	return true;
}

static jv *jvalue(jparse *j, int depth);

/* An object's key and its colon (J->p at the key) into V's keys. */
static bool jkey(jparse *j, jv *v)
{
	char *key = NULL;
	if (j->p >= j->end || *j->p != '"' || !jstring(j, &key))
		return false;
	for (guint k = 0; k < v->keys->len; k++)
		if (strcmp(v->keys->pdata[k], key) == 0) {
			g_free(key);
			return jfail(j, "a key twice");
		}
	g_ptr_array_add(v->keys, key);
	skip_ws(j);
	if (j->p >= j->end || *j->p != ':')
		return jfail(j, "a key without a value");
	j->p++;
	return true;
}

/* An object or an array (J->p at its opening bracket), at DEPTH, into V. */
static bool jcontainer(jparse *j, jv *v, int depth)
{
	bool obj = *j->p == '{';
	v->t = obj ? J_OBJ : J_ARR;
	v->vals = g_ptr_array_new_with_free_func((GDestroyNotify)jv_free);
	if (obj)
		v->keys = g_ptr_array_new_with_free_func(g_free);
	j->p++;
	skip_ws(j);
	if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
		j->p++;
		return true;
	}
	for (;;) {
		skip_ws(j);
		if (obj && !jkey(j, v))
			return false;
		jv *item = jvalue(j, depth + 1);
		if (!item)
			return false;
		g_ptr_array_add(v->vals, item);
		skip_ws(j);
		if (j->p < j->end && *j->p == ',') {
			j->p++;
			continue;
		}
		if (j->p < j->end && *j->p == (obj ? '}' : ']')) {
			j->p++;
			return true;
		}
		return jfail(j, "a missing comma or bracket");
	}
}

static jv *jvalue(jparse *j, int depth)
{
	skip_ws(j);
	if (depth > JSON_DEPTH) {
		jfail(j, "nested too deep");
		return NULL;
	}
	if (j->p >= j->end) {
		jfail(j, "a value cut short");
		return NULL;
	}
	jv *v = g_new0(jv, 1);
	char c = *j->p;
	bool ok;
	if (c == '{' || c == '[') {
		ok = jcontainer(j, v, depth);
	} else if (c == '"') {
		v->t = J_STR;
		ok = jstring(j, &v->s);
	} else if (c == 't' || c == 'f') {
		v->t = J_BOOL;
		v->b = c == 't';
		ok = lit(j, v->b ? "true" : "false");
	} else if (c == 'n') {
		v->t = J_NULL;
		ok = lit(j, "null");
	} else {
		ok = jnumber(j, v);
	}
	if (ok)
		return v;
	/* Said only when nothing more precise was: a key that is not a
	 * string. */
	jfail(j, "an object key that is not a string");
	jv_free(v);
	return NULL;
}

/* One JSON value filling TEXT (whitespace around it allowed). */
static jv *json_parse(const char *text, size_t len, GError **error)
{
	jparse j = { text, text + len, error };
	jv *v = jvalue(&j, 0);
	if (!v)
		return NULL;
	skip_ws(&j);
	if (j.p != j.end) {
		jfail(&j, "bytes after the value");
		jv_free(v);
		return NULL;
	}
	return v;
}

static const jv *member(const jv *obj, const char *key)
{
	for (guint k = 0; k < obj->keys->len; k++)
		if (strcmp(obj->keys->pdata[k], key) == 0)
			return obj->vals->pdata[k];
	return NULL;
}

static bool field_error(GError **error, const char *what, const char *key, const char *want)
{
	g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL, "%s: \"%s\" is not %s", what, key, want);
	return false;
}

/* Optional members: absent leaves *OUT alone. */
static bool get_str(const jv *obj, const char *what, const char *key, char **out, GError **error)
{
	const jv *v = member(obj, key);
	if (!v)
		return true;
	if (v->t != J_STR)
		return field_error(error, what, key, "a string");
	g_free(*out);
	*out = g_strdup(v->s);
	return true;
}

static bool get_int(const jv *obj, const char *what, const char *key, int64_t min, int64_t max,
                    int64_t *out, GError **error)
{
	const jv *v = member(obj, key);
	if (!v)
		return true;
	if (v->t != J_INT || v->i < min || v->i > max)
		return field_error(error, what, key, "a whole number in range");
	*out = v->i;
	return true;
}

/* ---- base64url and the proof ---- */

bool ts_base64url_decode(const char *s, uint8_t *out, size_t out_len)
{
	size_t n = strlen(s);
	/* Unpadded base64 of OUT_LEN bytes has exactly this many characters. */
	if (n != (out_len * 4 + 2) / 3)
		return false;
	GString *std = g_string_sized_new(n + 3);
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (c == '-')
			c = '+';
		else if (c == '_')
			c = '/';
		else if (!g_ascii_isalnum(c)) {
			g_string_free(std, TRUE);
			return false;
		}
		g_string_append_c(std, c);
	}
	while (std->len % 4)
		g_string_append_c(std, '=');
	gsize got = 0;
	guchar *bytes = g_base64_decode(std->str, &got);
	g_string_free(std, TRUE);
	bool ok = got == out_len;
	if (ok)
		memcpy(out, bytes, out_len);
	g_free(bytes);
	return ok;
}

bool ts_proof_ok(const uint8_t secret[32], const uint8_t challenge[TS_ID_SIZE],
                 const uint8_t proof[TS_PROOF_SIZE])
{
	GHmac *h = g_hmac_new(G_CHECKSUM_SHA256, secret, 32);
	g_hmac_update(h, challenge, TS_ID_SIZE);
	uint8_t want[TS_PROOF_SIZE];
	gsize n = sizeof(want);
	g_hmac_get_digest(h, want, &n);
	g_hmac_unref(h);
	uint8_t diff = 0;
	for (size_t i = 0; i < sizeof(want); i++)
		diff |= want[i] ^ proof[i];
	return diff == 0;
}

/* ---- SERVE ---- */

void ts_serve_clear(ts_serve *s)
{
	g_free(s->endpoint);
	memset(s, 0, sizeof(*s));
}

bool ts_serve_parse(const char *text, size_t len, ts_serve *s, GError **error)
{
	memset(s, 0, sizeof(*s));
	jv *v = json_parse(text, len, error);
	if (!v)
		return false;
	bool ok = false;
	char *secret = NULL;
	int64_t protocol = 0;
	const jv *eps;
	if (v->t != J_OBJ) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL, "SERVE is not a JSON object");
		goto out;
	}
	if (!get_int(v, "SERVE", "protocol", INT64_MIN, INT64_MAX, &protocol, error) ||
	    !get_str(v, "SERVE", "secret", &secret, error))
		goto out;
	if (protocol != 1) {
		g_set_error(error, TS_ERROR, TS_ERROR_CONFIG,
		            "SERVE names protocol %" G_GINT64_FORMAT ", not 1", protocol);
		goto out;
	}
	if (!secret || !ts_base64url_decode(secret, s->secret, sizeof(s->secret))) {
		field_error(error, "SERVE", "secret", "32 bytes of base64url");
		goto out;
	}
	eps = member(v, "endpoints");
	if (!eps || eps->t != J_ARR || eps->vals->len == 0 ||
	    ((jv *)eps->vals->pdata[0])->t != J_STR ||
	    !g_str_has_prefix(((jv *)eps->vals->pdata[0])->s, "unix:///")) {
		field_error(error, "SERVE", "endpoints", "a list starting with unix:///PATH");
		goto out;
	}
	s->endpoint = g_strdup(((jv *)eps->vals->pdata[0])->s);
	ok = true;
out:
	g_free(secret);
	jv_free(v);
	return ok;
}

/* ---- holder records ---- */

static void json_str(GString *out, const char *key, const char *s)
{
	g_autofree char *valid = g_utf8_make_valid(s ? s : "", -1);
	g_string_append_printf(out, "\"%s\":\"", key);
	for (const unsigned char *p = (const unsigned char *)valid; *p; p++) {
		if (*p == '"' || *p == '\\')
			g_string_append_printf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			g_string_append_printf(out, "\\u%04x", *p);
		else
			g_string_append_c(out, (char)*p);
	}
	g_string_append(out, "\",");
}

GByteArray *ts_record_encode(const ts_record *r)
{
	const lockfs_holder *h = &r->holder;
	GString *s = g_string_new(NULL);
	g_string_append_c(s, RECORD_TYPE_JSON);
	g_string_append_printf(s, "{\"v\":%d,", RECORD_VERSION);
	json_str(s, "host", h->host);
	json_str(s, "mount", r->mount);
	g_string_append_printf(s,
	                       "\"pid\":%" G_GINT64_FORMAT ",\"uid\":%u,\"gid\":%u,"
	                       "\"mode\":%u,",
	                       h->pid, h->uid, h->gid, h->mode);
	json_str(s, "user", h->user);
	/* A valid UTF-8 prefix: the cut must not split a character. */
	const char *cmd = h->command ? h->command : "";
	size_t n = strlen(cmd);
	if (n > RECORD_COMMAND_MAX) {
		const char *end = cmd + RECORD_COMMAND_MAX;
		const char *valid;
		g_utf8_validate_len(cmd, RECORD_COMMAND_MAX, &valid);
		n = (size_t)((valid < end ? valid : end) - cmd);
	}
	g_autofree char *cut = g_strndup(cmd, n);
	json_str(s, "command", cut);
	g_string_append_printf(s,
	                       "\"acquired_us\":%" G_GINT64_FORMAT
	                       ",\"heartbeat_us\":%" G_GINT64_FORMAT ",\"ttl_ms\":%" G_GINT64_FORMAT
	                       ",\"server_ms\":%" G_GINT64_FORMAT ",",
	                       h->acquired_us, h->heartbeat_us, r->ttl_ms, r->server_ms);
	/* Shown times, where the holder set them apart from its heartbeats. */
	if (h->mtime_us)
		g_string_append_printf(s, "\"mtime_us\":%" G_GINT64_FORMAT ",", h->mtime_us);
	if (h->atime_us)
		g_string_append_printf(s, "\"atime_us\":%" G_GINT64_FORMAT ",", h->atime_us);
	if (h->ctime_us)
		g_string_append_printf(s, "\"ctime_us\":%" G_GINT64_FORMAT ",", h->ctime_us);
	json_str(s, "fence", r->fence);
	g_autofree char *lease = g_malloc(TS_ID_SIZE * 2 + 1);
	for (int i = 0; i < TS_ID_SIZE; i++)
		snprintf(lease + 2 * i, 3, "%02x", r->lease[i]);
	json_str(s, "lease", lease);
	if (r->content) {
		g_autofree char *b64 = g_base64_encode(r->content, r->content_len);
		json_str(s, "content", b64);
	}
	s->str[s->len - 1] = '}'; /* the last comma */
	gsize len = s->len;
	return g_byte_array_new_take((guint8 *)g_string_free(s, FALSE), len);
}

void ts_record_clear(ts_record *r)
{
	lockfs_holder_clear(&r->holder);
	g_free(r->mount);
	g_free(r->content);
	memset(r, 0, sizeof(*r));
}

/* A holder record's members that are checked before they go in. */
typedef struct {
	int64_t version, pid, uid, gid, mode, acq, hb, ttl;
	char *fence, *lease, *content;
} record_members;

/* The members of the holder record object V, into R (the strings and what
 * needs no check) and M (the rest). */
static bool record_members_get(const jv *v, ts_record *r, record_members *m, GError **error)
{
	const char *what = "holder record";
	lockfs_holder *h = &r->holder;
	if (!get_int(v, what, "v", 1, INT64_MAX, &m->version, error) ||
	    !get_str(v, what, "host", &h->host, error) ||
	    !get_str(v, what, "mount", &r->mount, error) ||
	    !get_int(v, what, "pid", INT64_MIN, INT64_MAX, &m->pid, error) ||
	    !get_int(v, what, "uid", 0, UINT32_MAX, &m->uid, error) ||
	    !get_int(v, what, "gid", 0, UINT32_MAX, &m->gid, error) ||
	    !get_int(v, what, "mode", 0, UINT32_MAX, &m->mode, error) ||
	    !get_str(v, what, "user", &h->user, error) ||
	    !get_str(v, what, "command", &h->command, error) ||
	    !get_int(v, what, "acquired_us", INT64_MIN, INT64_MAX, &m->acq, error) ||
	    !get_int(v, what, "heartbeat_us", INT64_MIN, INT64_MAX, &m->hb, error) ||
	    !get_int(v, what, "mtime_us", INT64_MIN, INT64_MAX, &h->mtime_us, error) ||
	    !get_int(v, what, "atime_us", INT64_MIN, INT64_MAX, &h->atime_us, error) ||
	    !get_int(v, what, "ctime_us", INT64_MIN, INT64_MAX, &h->ctime_us, error) ||
	    !get_int(v, what, "ttl_ms", 0, INT64_MAX, &m->ttl, error) ||
	    !get_int(v, what, "server_ms", 0, INT64_MAX / 1000, &r->server_ms, error) ||
	    !get_str(v, what, "fence", &m->fence, error) ||
	    !get_str(v, what, "lease", &m->lease, error) ||
	    !get_str(v, what, "content", &m->content, error))
		return false;
	if (!member(v, "v"))
		return field_error(error, what, "v", "present");
	return true;
}

/* The record's lease id from LEASE, 32 hex digits. */
static bool record_lease(ts_record *r, const char *lease, GError **error)
{
	if (!lease || strlen(lease) != TS_ID_SIZE * 2)
		return field_error(error, "holder record", "lease", "32 hex digits");
	for (int i = 0; i < TS_ID_SIZE; i++) {
		int hi = hexval(lease[2 * i]), lo = hexval(lease[2 * i + 1]);
		if (hi < 0 || lo < 0)
			return field_error(error, "holder record", "lease", "32 hex digits");
		r->lease[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}

/* The record's content from CONTENT, base64 of at most LOCKFS_CONTENT_MAX
 * bytes, or NULL: none. */
static bool record_content(ts_record *r, const char *content, GError **error)
{
	if (!content)
		return true;
	size_t n = strlen(content);
	bool b64 = n % 4 == 0 && n <= (LOCKFS_CONTENT_MAX + 2) / 3 * 4;
	for (size_t i = 0; b64 && i < n; i++)
		b64 = g_ascii_isalnum(content[i]) || content[i] == '+' || content[i] == '/' ||
		      (content[i] == '=' && i >= n - 2);
	gsize got = 0;
	if (b64)
		r->content = g_base64_decode(content, &got);
	r->content_len = got;
	if (!b64 || got > LOCKFS_CONTENT_MAX)
		return field_error(error, "holder record", "content",
		                   "base64 of at most 4096 bytes");
	return true;
}

/* The holder record object V into R. */
static bool record_from(const jv *v, ts_record *r, GError **error)
{
	record_members m = { 0 };
	bool ok = false;
	lockfs_holder *h = &r->holder;
	if (v->t != J_OBJ) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a holder record that is not an object");
		goto out;
	}
	if (!record_members_get(v, r, &m, error))
		goto out;
	h->pid = m.pid;
	h->uid = (uint32_t)m.uid;
	h->gid = (uint32_t)m.gid;
	h->mode = (uint32_t)m.mode;
	h->acquired_us = m.acq;
	h->heartbeat_us = m.hb;
	r->ttl_ms = m.ttl;
	if (!m.fence || !ts_fence_valid(m.fence, strlen(m.fence))) {
		field_error(error, "holder record", "fence", "1 to 39 digits");
		goto out;
	}
	strcpy(r->fence, m.fence);
	ok = record_lease(r, m.lease, error) && record_content(r, m.content, error);
out:
	g_free(m.fence);
	g_free(m.lease);
	g_free(m.content);
	return ok;
}

bool ts_record_decode(const uint8_t *value, size_t len, ts_record *r, GError **error)
{
	memset(r, 0, sizeof(*r));
	if (len < 1 || value[0] != RECORD_TYPE_JSON) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a holder record that is not JSON (type byte 03)");
		return false;
	}
	jv *v = json_parse((const char *)value + 1, len - 1, error);
	if (!v)
		return false;
	bool ok = record_from(v, r, error);
	jv_free(v);
	if (!ok)
		ts_record_clear(r);
	return ok;
}

/* ---- the restart marker ---- */

GByteArray *ts_marker_encode(const ts_marker *m)
{
	GString *s = g_string_new(NULL);
	g_string_append_c(s, RECORD_TYPE_JSON);
	g_string_append_printf(s,
	                       "{\"v\":%d,\"epoch\":%" G_GINT64_FORMAT ",\"prev\":%" G_GINT64_FORMAT
	                       ",\"ttl_ms\":%" G_GINT64_FORMAT ",\"grace_until\":%" G_GINT64_FORMAT
	                       "}",
	                       RECORD_VERSION, m->epoch, m->prev, m->ttl_ms, m->grace_until);
	gsize len = s->len;
	return g_byte_array_new_take((guint8 *)g_string_free(s, FALSE), len);
}

bool ts_marker_decode(const uint8_t *value, size_t len, ts_marker *m, GError **error)
{
	memset(m, 0, sizeof(*m));
	if (len < 1 || value[0] != RECORD_TYPE_JSON) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a restart marker that is not JSON (type byte 03)");
		return false;
	}
	jv *v = json_parse((const char *)value + 1, len - 1, error);
	if (!v)
		return false;
	const char *what = "restart marker";
	int64_t version = 0;
	bool ok = false;
	if (v->t != J_OBJ)
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a restart marker that is not an object");
	else if (get_int(v, what, "v", 1, INT64_MAX, &version, error) &&
	         get_int(v, what, "epoch", 0, INT64_MAX, &m->epoch, error) &&
	         get_int(v, what, "prev", 0, INT64_MAX, &m->prev, error) &&
	         get_int(v, what, "ttl_ms", 0, INT64_MAX / 1000, &m->ttl_ms, error) &&
	         get_int(v, what, "grace_until", 0, INT64_MAX / 1000, &m->grace_until, error)) {
		const char *need = !member(v, "v") ? "v" : !member(v, "epoch") ? "epoch" : NULL;
		ok = !need || field_error(error, what, need, "present");
	}
	jv_free(v);
	if (!ok)
		memset(m, 0, sizeof(*m));
	return ok;
}
