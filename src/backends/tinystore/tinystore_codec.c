/* tinystore frames and MessagePack messages (docs/tinystore-protocol.md §2-6).
 *
 * Decoding is two passes: a walk over the bytes that enforces the server's
 * profile and bounds everything msgpack-c would allocate (a hostile count
 * can never make it reserve more than the body holds), then msgpack-c's
 * unpacker for the objects. */
#include "tinystore_codec.h"

#include <string.h>

G_DEFINE_QUARK(lockfs - tinystore - error - quark, ts_error)

#define MAX_DEPTH 16

static uint32_t get_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put_le32(uint8_t *p, uint32_t v)
{
	p[0] = v;
	p[1] = v >> 8;
	p[2] = v >> 16;
	p[3] = v >> 24;
}

void ts_frame_append(GByteArray *out, uint8_t kind, uint8_t flags, uint16_t method, uint32_t stream,
                     const void *body, size_t len)
{
	uint8_t h[TS_HEADER_SIZE];
	put_le32(h, (uint32_t)len);
	h[4] = kind;
	h[5] = flags;
	h[6] = method;
	h[7] = method >> 8;
	put_le32(h + 8, stream);
	g_byte_array_append(out, h, sizeof(h));
	if (len)
		g_byte_array_append(out, body, len);
}

void ts_header_read(const uint8_t in[TS_HEADER_SIZE], ts_header *h)
{
	h->len = get_le32(in);
	h->kind = in[4];
	h->flags = in[5];
	h->method = (uint16_t)(in[6] | in[7] << 8);
	h->stream = get_le32(in + 8);
}

bool ts_fail(GError **error, TsError code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	g_set_error_literal(error, TS_ERROR, code, msg);
	g_free(msg);
	return false;
}

#define proto_error(error, ...) ts_fail(error, TS_ERROR_PROTOCOL, __VA_ARGS__)

bool ts_header_check(const ts_header *h, uint32_t max_body, GError **error)
{
	/* Only what a server sends: it never sends HELLO, REQUEST or CANCEL. */
	static const uint8_t allowed_flags[] = {
		[TS_WELCOME] = 0,
		[TS_RESPONSE] = TS_END | TS_ERR,
		[TS_DATA] = TS_END | TS_ERR,
		[TS_CREDIT] = 0,
		[TS_PING] = 0,
		[TS_PONG] = 0,
		[TS_GOAWAY] = 0,
	};
	switch (h->kind) {
	case TS_WELCOME:
	case TS_RESPONSE:
	case TS_DATA:
	case TS_CREDIT:
	case TS_PING:
	case TS_PONG:
	case TS_GOAWAY:
		break;
	default:
		return proto_error(error, "a frame of kind %u from the server", h->kind);
	}
	if (h->flags & ~allowed_flags[h->kind])
		return proto_error(error, "flags 0x%02x on a frame of kind %u", h->flags, h->kind);
	if ((h->flags & TS_ERR) && !(h->flags & TS_END))
		return proto_error(error, "ERROR without END");
	if (h->method)
		return proto_error(error, "a method on a frame of kind %u", h->kind);
	bool on_stream = h->kind == TS_RESPONSE || h->kind == TS_DATA;
	if (on_stream && h->stream == 0)
		return proto_error(error, "stream 0 on a frame of kind %u", h->kind);
	if (!on_stream && h->kind != TS_CREDIT && h->stream != 0)
		return proto_error(error, "stream %u on a frame of kind %u", h->stream, h->kind);
	if ((h->kind == TS_CREDIT && h->len != 4) ||
	    ((h->kind == TS_PING || h->kind == TS_PONG) && h->len != 8))
		return proto_error(error, "a body of %u bytes on a frame of kind %u", h->len,
		                   h->kind);
	if (h->len > max_body)
		return proto_error(error, "a body of %u bytes, past the %u agreed", h->len,
		                   max_body);
	return true;
}

/* ---- the profile walk ---- */

typedef struct {
	const uint8_t *p, *end;
} cursor;

static bool take(cursor *c, size_t n, const uint8_t **out)
{
	if ((size_t)(c->end - c->p) < n)
		return false;
	if (out)
		*out = c->p;
	c->p += n;
	return true;
}

static bool take_len(cursor *c, int width, uint64_t *n)
{
	const uint8_t *b;
	if (!take(c, width, &b))
		return false;
	*n = 0;
	for (int i = 0; i < width; i++)
		*n = *n << 8 | b[i];
	return true;
}

/* What a value is, as its marker says. */
typedef enum {
	V_SCALAR,
	V_STR,
	V_BIN,
	V_ARRAY,
	V_MAP,
} value_kind;

/* The rest of the header of marker M at C, within the profile: the
 * value's *KIND and, for a str, bin, array or map, its length or count *N
 * (a scalar's bytes are skipped). */
static bool marker_header(cursor *c, uint8_t m, value_kind *kind, uint64_t *n, GError **error)
{
	*kind = V_SCALAR;
	*n = 0;
	if (m <= 0x7f || m >= 0xe0 || m == 0xc0 || m == 0xc2 || m == 0xc3)
		return true;
	if (m >= 0x80 && m <= 0x8f) {
		*kind = V_MAP;
		*n = m & 0x0f;
		return true;
	}
	if (m >= 0x90 && m <= 0x9f) {
		*kind = V_ARRAY;
		*n = m & 0x0f;
		return true;
	}
	if (m >= 0xa0 && m <= 0xbf) {
		*kind = V_STR;
		*n = m & 0x1f;
		return true;
	}
	bool ok = true;
	switch (m) {
	case 0xcc:
	case 0xd0:
		ok = take(c, 1, NULL);
		break;
	case 0xcd:
	case 0xd1:
		ok = take(c, 2, NULL);
		break;
	case 0xce:
	case 0xd2:
		ok = take(c, 4, NULL);
		break;
	case 0xcf:
	case 0xd3:
	case 0xcb:
		ok = take(c, 8, NULL);
		break;
	case 0xc4:
	case 0xc5:
	case 0xc6:
		*kind = V_BIN;
		ok = take_len(c, 1 << (m - 0xc4), n);
		break;
	case 0xd9:
	case 0xda:
	case 0xdb:
		*kind = V_STR;
		ok = take_len(c, 1 << (m - 0xd9), n);
		break;
	case 0xdc:
	case 0xdd:
		*kind = V_ARRAY;
		ok = take_len(c, m == 0xdc ? 2 : 4, n);
		break;
	case 0xde:
	case 0xdf:
		*kind = V_MAP;
		ok = take_len(c, m == 0xde ? 2 : 4, n);
		break;
	default: /* c1, float32, ext */
		return proto_error(error, "marker 0x%02x, outside the profile", m);
	}
	return ok || proto_error(error, "a message cut short");
}

static bool walk(cursor *c, int depth, GError **error)
{
	if (depth > MAX_DEPTH)
		return proto_error(error, "values nested deeper than %d", MAX_DEPTH);
	const uint8_t *b;
	if (!take(c, 1, &b))
		return proto_error(error, "a message cut short");
	value_kind kind;
	uint64_t n;
	if (!marker_header(c, *b, &kind, &n, error))
		return false;
	if (kind == V_SCALAR)
		return true;
	size_t left = (size_t)(c->end - c->p);
	if (kind == V_STR || kind == V_BIN) {
		if (n > left)
			return proto_error(
			        error, "a length of %" G_GUINT64_FORMAT " past the %zu bytes left",
			        n, left);
		if (kind == V_STR && !g_utf8_validate_len((const char *)c->p, n, NULL))
			return proto_error(error, "a str that is not UTF-8");
		c->p += n;
		return true;
	}
	/* Every item takes a byte at least: a count past the bytes left is a lie. */
	uint64_t items = kind == V_MAP ? n * 2 : n;
	if (items > left)
		return proto_error(
		        error, "a count of %" G_GUINT64_FORMAT " past the %zu bytes left", n, left);
	for (uint64_t i = 0; i < items; i++)
		if (!walk(c, depth + 1, error))
			return false;
	return true;
}

bool ts_msg_decode(ts_msg *m, uint8_t *body, size_t len, GError **error)
{
	memset(m, 0, sizeof(*m));
	m->body = body;
	msgpack_unpacked_init(&m->up);
	if (len == 0)
		return proto_error(error, "an empty body");
	cursor c = { body, body + len };
	if (!walk(&c, 0, error))
		return false;
	if (c.p != c.end)
		return proto_error(error, "bytes after the message");
	size_t off = 0;
	if (msgpack_unpack_next(&m->up, (const char *)body, len, &off) != MSGPACK_UNPACK_SUCCESS ||
	    off != len)
		return proto_error(error, "a message msgpack cannot read");
	const msgpack_object *root = &m->up.data;
	if (root->type != MSGPACK_OBJECT_MAP)
		return proto_error(error, "a message that is not a map");
	for (uint32_t i = 0; i < root->via.map.size; i++) {
		const msgpack_object_kv *kv = &root->via.map.ptr[i];
		if (kv->key.type != MSGPACK_OBJECT_POSITIVE_INTEGER || kv->key.via.u64 >= 128)
			return proto_error(error, "a field that is not a number below 128");
		if (m->f[kv->key.via.u64])
			return proto_error(error, "field %u twice", (unsigned)kv->key.via.u64);
		m->f[kv->key.via.u64] = &kv->val;
	}
	return true;
}

void ts_msg_clear(ts_msg *m)
{
	msgpack_unpacked_destroy(&m->up);
	g_free(m->body);
	memset(m, 0, sizeof(*m));
}

static bool type_error(GError **error, const char *what, int field, const char *type)
{
	return proto_error(error, "%s (field %d) is not %s", what, field, type);
}

static bool obj_uint(const msgpack_object *o, const char *what, int field, uint64_t *out,
                     GError **error)
{
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return type_error(error, what, field, "a uint");
	*out = o->via.u64;
	return true;
}

static bool obj_bytes(const msgpack_object *o, const char *what, int field, bool bin,
                      const char **out, size_t *len, GError **error)
{
	if (bin ? o->type != MSGPACK_OBJECT_BIN : o->type != MSGPACK_OBJECT_STR)
		return type_error(error, what, field, bin ? "a bin" : "a str");
	*len = bin ? o->via.bin.size : o->via.str.size;
	/* msgpack-c may leave an empty str or bin without a pointer. */
	*out = *len ? (bin ? o->via.bin.ptr : o->via.str.ptr) : "";
	return true;
}

bool ts_msg_uint(const ts_msg *m, int field, const char *what, uint64_t *out, GError **error)
{
	*out = 0;
	return !m->f[field] || obj_uint(m->f[field], what, field, out, error);
}

bool ts_msg_int(const ts_msg *m, int field, const char *what, bool *present, int64_t *out,
                GError **error)
{
	const msgpack_object *o = m->f[field];
	*out = 0;
	*present = o != NULL;
	if (!o)
		return true;
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return true;
	}
	if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER || o->via.u64 > INT64_MAX)
		return type_error(error, what, field, "an int");
	*out = (int64_t)o->via.u64;
	return true;
}

bool ts_msg_bool(const ts_msg *m, int field, const char *what, bool *out, GError **error)
{
	const msgpack_object *o = m->f[field];
	*out = false;
	if (!o)
		return true;
	if (o->type != MSGPACK_OBJECT_BOOLEAN)
		return type_error(error, what, field, "a bool");
	*out = o->via.boolean;
	return true;
}

bool ts_msg_bytes(const ts_msg *m, int field, const char *what, bool bin, const char **out,
                  size_t *len, GError **error)
{
	*out = "";
	*len = 0;
	return !m->f[field] || obj_bytes(m->f[field], what, field, bin, out, len, error);
}

static bool msg_strdup(const ts_msg *m, int field, const char *what, char **out, GError **error)
{
	const char *s;
	size_t n;
	if (!ts_msg_bytes(m, field, what, false, &s, &n, error))
		return false;
	*out = g_strndup(s, n); /* the walk refused NULs in str */
	return true;
}

/* ---- encoders ---- */

void ts_enc_init(ts_enc *e)
{
	msgpack_sbuffer_init(&e->buf);
	msgpack_packer_init(&e->pk, &e->buf, msgpack_sbuffer_write);
}

void ts_enc_clear(ts_enc *e)
{
	msgpack_sbuffer_destroy(&e->buf);
}

static void pack_str(ts_enc *e, int field, const char *s)
{
	size_t n = strlen(s);
	msgpack_pack_uint8(&e->pk, field);
	msgpack_pack_str(&e->pk, n);
	msgpack_pack_str_body(&e->pk, s, n);
}

static void pack_bin(ts_enc *e, int field, const void *b, size_t n)
{
	msgpack_pack_uint8(&e->pk, field);
	msgpack_pack_bin(&e->pk, n);
	msgpack_pack_bin_body(&e->pk, b, n);
}

static void pack_uint(ts_enc *e, int field, uint64_t v)
{
	msgpack_pack_uint8(&e->pk, field);
	msgpack_pack_uint64(&e->pk, v);
}

/* The branch ["OWNER"]. */
/* OWNER NULL: the bucket's root. */
static void pack_under(ts_enc *e, const char *owner)
{
	msgpack_pack_uint8(&e->pk, 2);
	msgpack_pack_array(&e->pk, owner != NULL);
	if (!owner)
		return;
	size_t n = strlen(owner);
	msgpack_pack_str(&e->pk, n);
	msgpack_pack_str_body(&e->pk, owner, n);
}

void ts_enc_hello(ts_enc *e, const char *client, const char *token, const uint8_t *challenge,
                  uint32_t max_body)
{
	msgpack_pack_map(&e->pk, 2 + (token != NULL) + (max_body != 0) + (challenge != NULL));
	pack_uint(e, 1, 1);
	pack_str(e, 2, client);
	if (token)
		pack_str(e, 3, token);
	if (max_body)
		pack_uint(e, 4, max_body);
	if (challenge)
		pack_bin(e, 6, challenge, TS_ID_SIZE);
}

void ts_enc_hold(ts_enc *e, const char *name, const char *key, uint32_t limit, uint64_t ttl_ms,
                 uint64_t wait_ms, const uint8_t request[TS_ID_SIZE])
{
	/* wait (7) 0 is left out: take the key only if it is free. */
	msgpack_pack_map(&e->pk, wait_ms ? 7 : 6);
	pack_str(e, 1, limit ? "semaphore" : "lock");
	pack_str(e, 2, name);
	pack_str(e, 3, key);
	pack_uint(e, 4, limit ? limit : 1);
	pack_uint(e, 5, ttl_ms);
	if (wait_ms)
		pack_uint(e, 7, wait_ms);
	pack_bin(e, 8, request, TS_ID_SIZE);
}

void ts_enc_renew(ts_enc *e, const uint8_t lease[TS_ID_SIZE], uint64_t ttl_ms)
{
	msgpack_pack_map(&e->pk, 2);
	pack_bin(e, 1, lease, TS_ID_SIZE);
	pack_uint(e, 2, ttl_ms);
}

void ts_enc_lease(ts_enc *e, const uint8_t lease[TS_ID_SIZE])
{
	msgpack_pack_map(&e->pk, 1);
	pack_bin(e, 1, lease, TS_ID_SIZE);
}

void ts_enc_bucket_open(ts_enc *e, const char *bucket)
{
	msgpack_pack_map(&e->pk, 1);
	pack_str(e, 1, bucket);
}

void ts_enc_kv_call(ts_enc *e, uint64_t handle, const char *owner, const char *key,
                    const void *value, size_t value_len, uint64_t ttl_ms, const char *if_version)
{
	msgpack_pack_map(&e->pk, 3 + (value != NULL) + (ttl_ms != 0) + (if_version != NULL));
	pack_uint(e, 1, handle);
	pack_under(e, owner);
	pack_str(e, 3, key);
	if (value)
		pack_bin(e, 4, value, value_len);
	if (ttl_ms)
		pack_uint(e, 5, ttl_ms);
	if (if_version)
		pack_bin(e, 7, if_version, strlen(if_version));
}

void ts_enc_kv_list(ts_enc *e, uint64_t handle, const char *owner, const char *after,
                    uint64_t limit)
{
	msgpack_pack_map(&e->pk, 3 + (after != NULL));
	pack_uint(e, 1, handle);
	pack_under(e, owner);
	if (after)
		pack_str(e, 3, after);
	pack_uint(e, 4, limit);
}

/* ---- answers ---- */

void ts_welcome_clear(ts_welcome *w)
{
	g_free(w->server);
	g_free(w->capability);
	memset(w, 0, sizeof(*w));
}

bool ts_welcome_decode(const ts_msg *m, ts_welcome *w, GError **error)
{
	memset(w, 0, sizeof(*w));
	uint64_t protocol;
	bool has_now;
	if (!ts_msg_uint(m, 1, "protocol", &protocol, error) ||
	    !msg_strdup(m, 2, "server", &w->server, error) ||
	    !msg_strdup(m, 4, "capability", &w->capability, error) ||
	    !ts_msg_uint(m, 5, "maxBody", &w->max_body, error) ||
	    !ts_msg_uint(m, 6, "inFlight", &w->in_flight, error) ||
	    !ts_msg_uint(m, 7, "connectionCredit", &w->conn_credit, error) ||
	    !ts_msg_int(m, 10, "now", &has_now, &w->now_ms, error))
		goto bad;
	if (protocol != 1) {
		proto_error(error, "WELCOME speaks protocol %" G_GUINT64_FORMAT ", not 1",
		            protocol);
		goto bad;
	}
	if (w->in_flight == 0) {
		proto_error(error, "WELCOME allows no stream in flight");
		goto bad;
	}
	const msgpack_object *engines = m->f[9];
	if (engines) {
		if (engines->type != MSGPACK_OBJECT_ARRAY) {
			type_error(error, "engines", 9, "an array");
			goto bad;
		}
		bool kv = false, locks = false;
		for (uint32_t i = 0; i < engines->via.array.size; i++) {
			const msgpack_object *o = &engines->via.array.ptr[i];
			if (o->type != MSGPACK_OBJECT_STR) {
				type_error(error, "an engine", 9, "a str");
				goto bad;
			}
			kv |= o->via.str.size == 2 && memcmp(o->via.str.ptr, "kv", 2) == 0;
			locks |= o->via.str.size == 5 && memcmp(o->via.str.ptr, "locks", 5) == 0;
		}
		if (!kv || !locks) {
			g_set_error(error, TS_ERROR, TS_ERROR_REFUSED,
			            "the server has no %s engine", kv ? "locks" : "kv");
			goto bad;
		}
	}
	const char *proof;
	size_t n;
	if (!ts_msg_bytes(m, 11, "proof", true, &proof, &n, error))
		goto bad;
	if (m->f[11]) {
		if (n != TS_PROOF_SIZE) {
			proto_error(error, "a proof of %zu bytes, not 32", n);
			goto bad;
		}
		w->has_proof = true;
		memcpy(w->proof, proof, n);
	}
	return true;
bad:
	ts_welcome_clear(w);
	return false;
}

void ts_failure_clear(ts_failure *f)
{
	g_free(f->code);
	g_free(f->message);
	memset(f, 0, sizeof(*f));
}

bool ts_failure_decode(const ts_msg *m, ts_failure *f, GError **error)
{
	memset(f, 0, sizeof(*f));
	if (!msg_strdup(m, 1, "code", &f->code, error) ||
	    !msg_strdup(m, 2, "message", &f->message, error)) {
		ts_failure_clear(f);
		return false;
	}
	if (!*f->code) {
		ts_failure_clear(f);
		return proto_error(error, "a failure without a code");
	}
	/* Field 3 (what) is for people; it is not read. */
	return true;
}

bool ts_fence_valid(const char *s, size_t len)
{
	if (len == 0 || len >= LOCKFS_FENCE_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool ts_fence_epoch(const char *fence, uint64_t *epoch)
{
	unsigned __int128 v = 0;
	const unsigned __int128 max = ~(unsigned __int128)0;
	if (!ts_fence_valid(fence, strlen(fence)))
		return false;
	for (const char *p = fence; *p; p++) {
		unsigned d = (unsigned)(*p - '0');
		if (v > (max - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*epoch = (uint64_t)(v >> 64);
	return true;
}

bool ts_held_decode(const ts_msg *m, bool fenced, ts_held *h, GError **error)
{
	memset(h, 0, sizeof(*h));
	const char *lease, *fence;
	size_t nl, nf;
	if (!ts_msg_bool(m, 1, "acquired", &h->acquired, error) ||
	    !ts_msg_bytes(m, 2, "lease", true, &lease, &nl, error) ||
	    !ts_msg_bytes(m, 3, "fence", false, &fence, &nf, error))
		return false;
	if (!h->acquired) {
		/* Busy: anything more would be a grant we cannot trust. */
		if (m->f[2] || m->f[3])
			return proto_error(error, "a busy answer with a lease or fence");
		return true;
	}
	if (nl != TS_ID_SIZE)
		return proto_error(error, "a lease of %zu bytes, not 16", nl);
	if (!fenced) {
		/* A semaphore's grant: a fence would be a lock's answer. */
		if (nf)
			return proto_error(error, "a semaphore's grant with a fence");
		memcpy(h->lease, lease, TS_ID_SIZE);
		h->fence[0] = '\0';
		return true;
	}
	if (!ts_fence_valid(fence, nf))
		return proto_error(error, "a fence that is not 1 to 39 digits");
	memcpy(h->lease, lease, TS_ID_SIZE);
	memcpy(h->fence, fence, nf);
	h->fence[nf] = '\0';
	return true;
}

bool ts_handle_decode(const ts_msg *m, uint64_t *handle, GError **error)
{
	if (!ts_msg_uint(m, 1, "handle", handle, error))
		return false;
	return *handle ? true : proto_error(error, "a bucket handle of 0");
}

bool ts_found_decode(const ts_msg *m, bool *found, GError **error)
{
	return ts_msg_bool(m, 1, "found", found, error);
}

static bool version_of(const msgpack_object *o, const char *what, int field, char *out,
                       GError **error)
{
	const char *v = "";
	size_t n = 0;
	out[0] = '\0';
	if (!o)
		return true;
	if (!obj_bytes(o, what, field, true, &v, &n, error))
		return false;
	if (n == 0 || n > TS_VERSION_MAX)
		return proto_error(error, "a version of %zu bytes", n);
	for (size_t i = 0; i < n; i++)
		if (v[i] < '0' || v[i] > '9')
			return proto_error(error, "a version that is not decimal");
	memcpy(out, v, n);
	out[n] = '\0';
	return true;
}

bool ts_written_decode(const ts_msg *m, ts_written *w, GError **error)
{
	memset(w, 0, sizeof(*w));
	return ts_msg_bool(m, 1, "written", &w->written, error) &&
	       version_of(m->f[2], "version", 2, w->version, error);
}

void ts_entry_free(ts_entry *e)
{
	if (!e)
		return;
	g_free(e->value);
	g_free(e->key);
	g_free(e);
}

/* kv.Entry from the map O (a whole message or an item of a page). */
static bool entry_from(const msgpack_object *o, bool in_page, ts_entry *e, GError **error)
{
	const msgpack_object *f[6] = { 0 };
	for (uint32_t i = 0; i < o->via.map.size; i++) {
		const msgpack_object_kv *kv = &o->via.map.ptr[i];
		if (kv->key.type != MSGPACK_OBJECT_POSITIVE_INTEGER || kv->key.via.u64 >= 128)
			return proto_error(error, "an entry field that is not a number below 128");
		uint64_t k = kv->key.via.u64;
		if (k < 6) {
			if (f[k])
				return proto_error(error, "entry field %u twice", (unsigned)k);
			f[k] = &kv->val;
		}
	}
	if (f[1] && f[1]->type != MSGPACK_OBJECT_BOOLEAN)
		return type_error(error, "found", 1, "a bool");
	e->found = f[1] && f[1]->via.boolean;
	if (f[2]) {
		/* Rows are nil, an integer or a bin: only a bin can be a record. */
		if (f[2]->type == MSGPACK_OBJECT_BIN) {
			const char *v;
			obj_bytes(f[2], "value", 2, true, &v, &e->value_len, NULL);
			e->value = g_malloc(e->value_len + 1); /* not NULL when empty */
			memcpy(e->value, v, e->value_len);
		} else if (f[2]->type != MSGPACK_OBJECT_NIL &&
		           f[2]->type != MSGPACK_OBJECT_POSITIVE_INTEGER &&
		           f[2]->type != MSGPACK_OBJECT_NEGATIVE_INTEGER) {
			return type_error(error, "value", 2, "nil, an integer or a bin");
		}
	}
	if (!version_of(f[3], "version", 3, e->version, error))
		return false;
	if (f[4]) {
		if (f[4]->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
			e->expires_ms = f[4]->via.i64;
		else if (f[4]->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
		         f[4]->via.u64 <= INT64_MAX)
			e->expires_ms = (int64_t)f[4]->via.u64;
		else
			return type_error(error, "expiresAt", 4, "an int");
		e->has_expires = true;
	}
	if (f[5]) {
		const char *k = "";
		size_t n = 0;
		if (!obj_bytes(f[5], "key", 5, false, &k, &n, error))
			return false;
		e->key = g_strndup(k, n);
	}
	if (e->found && !e->version[0])
		return proto_error(error, "an entry found without a version");
	if (in_page && (!e->found || !e->key || !*e->key))
		return proto_error(error, "a page entry without its key");
	return true;
}

bool ts_entry_decode(const ts_msg *m, ts_entry *e, GError **error)
{
	memset(e, 0, sizeof(*e));
	if (entry_from(&m->up.data, false, e, error))
		return true;
	g_free(e->value);
	g_free(e->key);
	memset(e, 0, sizeof(*e));
	return false;
}

void ts_page_clear(ts_page *p)
{
	if (p->entries)
		g_ptr_array_free(p->entries, TRUE);
	g_free(p->next);
	memset(p, 0, sizeof(*p));
}

bool ts_page_decode(const ts_msg *m, ts_page *p, GError **error)
{
	memset(p, 0, sizeof(*p));
	p->entries = g_ptr_array_new_with_free_func((GDestroyNotify)ts_entry_free);
	const msgpack_object *list = m->f[1];
	if (list && list->type != MSGPACK_OBJECT_ARRAY) {
		type_error(error, "entries", 1, "an array");
		goto bad;
	}
	for (uint32_t i = 0; list && i < list->via.array.size; i++) {
		const msgpack_object *o = &list->via.array.ptr[i];
		if (o->type != MSGPACK_OBJECT_MAP) {
			type_error(error, "an entry", 1, "a map");
			goto bad;
		}
		ts_entry *e = g_new0(ts_entry, 1);
		g_ptr_array_add(p->entries, e);
		if (!entry_from(o, true, e, error))
			goto bad;
	}
	const msgpack_object *next = m->f[2];
	if (next) {
		/* A key: a str, a bin of UTF-8 or an integer, read as decimal. */
		const char *k = "";
		size_t n = 0;
		if (next->type == MSGPACK_OBJECT_STR || next->type == MSGPACK_OBJECT_BIN) {
			obj_bytes(next, "next", 2, next->type == MSGPACK_OBJECT_BIN, &k, &n, NULL);
			if (!g_utf8_validate_len(k, n, NULL)) {
				proto_error(error, "a next key that is not UTF-8");
				goto bad;
			}
			p->next = g_strndup(k, n);
		} else if (next->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
			p->next = g_strdup_printf("%" G_GUINT64_FORMAT, next->via.u64);
		} else if (next->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
			p->next = g_strdup_printf("%" G_GINT64_FORMAT, next->via.i64);
		} else {
			type_error(error, "next", 2, "a key");
			goto bad;
		}
		if (!*p->next) {
			proto_error(error, "an empty next key");
			goto bad;
		}
	}
	return true;
bad:
	ts_page_clear(p);
	return false;
}

bool ts_empty_decode(const ts_msg *m, GError **error)
{
	for (int i = 0; i < 128; i++)
		if (m->f[i])
			return proto_error(error, "field %d in an answer that has none", i);
	return true;
}

bool ts_credit_decode(const uint8_t *body, size_t len, uint32_t *credit, GError **error)
{
	if (len != 4)
		return proto_error(error, "a CREDIT of %zu bytes, not 4", len);
	*credit = get_le32(body);
	return true;
}
