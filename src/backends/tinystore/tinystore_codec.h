/* The tinystore 0.5.1 wire codec (docs/tinystore-protocol.md): frames, the
 * MessagePack messages lockfs sends and reads, the SERVE file and lockfs's
 * holder records.  Pure functions, no I/O: everything a server or a store
 * hands us goes through here and is checked before it is believed. */
#ifndef LOCKFS_TINYSTORE_CODEC_H
#define LOCKFS_TINYSTORE_CODEC_H

#include <glib.h>
#include <lockfs/backend.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stdint.h>

#define TS_ERROR (ts_error_quark())
GQuark ts_error_quark(void);
typedef enum {
	TS_ERROR_PROTOCOL, /* a frame or message outside the protocol */
	TS_ERROR_IO,       /* the connection failed or timed out */
	TS_ERROR_REFUSED,  /* the server refused us (GOAWAY, proof, capability) */
	TS_ERROR_CONFIG,   /* a SERVE file or setting that cannot work */
} TsError;

/* Set *ERROR (domain TS_ERROR) and return false. */
bool ts_fail(GError **error, TsError code, const char *fmt, ...) G_GNUC_PRINTF(3, 4);

#define TS_HEADER_SIZE 12
/* The largest body we take: a 1 MiB kv value plus room for its entry. */
#define TS_MAX_BODY (1024 * 1024 + 64 * 1024)
#define TS_ID_SIZE 16    /* lease and request ids */
#define TS_PROOF_SIZE 32 /* HMAC-SHA256 */
#define TS_VERSION_MAX 40

enum {
	TS_HELLO = 1,
	TS_WELCOME,
	TS_REQUEST,
	TS_RESPONSE,
	TS_DATA,
	TS_CANCEL,
	TS_CREDIT,
	TS_PING,
	TS_PONG,
	TS_GOAWAY,
};
enum {
	TS_END = 1,
	TS_ERR = 2
};

enum {
	TS_KV_OPEN = 0x0101,
	TS_KV_GET = 0x0102,
	TS_KV_SET = 0x0104,
	TS_KV_CREATE = 0x0105,
	TS_KV_DELETE = 0x0107,
	TS_KV_EXPIRE = 0x0108,
	TS_KV_LIST = 0x010a,
	TS_LOCKS_HOLD = 0x0901,
	TS_LOCKS_RENEW = 0x0902,
	TS_LOCKS_RELEASE = 0x0903,
};

typedef struct {
	uint32_t len;
	uint8_t kind, flags;
	uint16_t method;
	uint32_t stream;
} ts_header;

/* A frame (header and body) appended to OUT. */
void ts_frame_append(GByteArray *out, uint8_t kind, uint8_t flags, uint16_t method, uint32_t stream,
                     const void *body, size_t len);
void ts_header_read(const uint8_t in[TS_HEADER_SIZE], ts_header *h);
/* Whether H is a frame a server may send us, with a body of at most MAX_BODY. */
bool ts_header_check(const ts_header *h, uint32_t max_body, GError **error);

/* ---- messages: one map keyed by field numbers below 128 ---- */

typedef struct {
	uint8_t *body; /* owned: strings point into it */
	msgpack_unpacked up;
	const msgpack_object *f[128];
} ts_msg;

/* Check BODY against the profile (bounded depth, lengths within the body,
 * no ext or float32, UTF-8 strings, one map of numbered fields) and decode
 * it.  Takes BODY (g_malloc'd) in every case. */
bool ts_msg_decode(ts_msg *m, uint8_t *body, size_t len, GError **error);
void ts_msg_clear(ts_msg *m);

/* Typed fields.  Absent fields read as their zero value; a present field of
 * another type is an error naming WHAT and the field. */
bool ts_msg_uint(const ts_msg *m, int field, const char *what, uint64_t *out, GError **error);
bool ts_msg_int(const ts_msg *m, int field, const char *what, bool *present, int64_t *out,
                GError **error);
bool ts_msg_bool(const ts_msg *m, int field, const char *what, bool *out, GError **error);
/* A str (or with BIN, a bin) as a pointer into the body; *len 0 when absent. */
bool ts_msg_bytes(const ts_msg *m, int field, const char *what, bool bin, const char **out,
                  size_t *len, GError **error);

/* Encoders: the request bodies lockfs sends, in the server's canonical form. */
typedef struct {
	msgpack_sbuffer buf;
	msgpack_packer pk;
} ts_enc;

void ts_enc_init(ts_enc *e);
void ts_enc_clear(ts_enc *e);
void ts_enc_hello(ts_enc *e, const char *client, const char *token,
                  const uint8_t *challenge /* NULL or 16 bytes */, uint32_t max_body);
/* LIMIT 0: a lock ("lock", limit 1); else a semaphore of LIMIT (1-1000),
 * whose limit is the ask's own: it is granted while fewer hold the key.
 * WAIT_MS 0 takes the key only if it is free; else the ask stands in line
 * that long. */
void ts_enc_hold(ts_enc *e, const char *name, const char *key, uint32_t limit, uint64_t ttl_ms,
                 uint64_t wait_ms, const uint8_t request[TS_ID_SIZE]);
void ts_enc_renew(ts_enc *e, const uint8_t lease[TS_ID_SIZE], uint64_t ttl_ms);
void ts_enc_lease(ts_enc *e, const uint8_t lease[TS_ID_SIZE]);
void ts_enc_bucket_open(ts_enc *e, const char *bucket);
/* kv.Call: OWNER NULL for the bucket's root, VALUE NULL for none, TTL_MS 0 for
 * none, IF_VERSION NULL for none. */
void ts_enc_kv_call(ts_enc *e, uint64_t handle, const char *owner, const char *key,
                    const void *value, size_t value_len, uint64_t ttl_ms, const char *if_version);
void ts_enc_kv_list(ts_enc *e, uint64_t handle, const char *owner, const char *after,
                    uint64_t limit);

/* ---- answers ---- */

typedef struct {
	char *server, *capability;
	uint64_t max_body, in_flight, conn_credit;
	int64_t now_ms;
	bool has_proof;
	uint8_t proof[TS_PROOF_SIZE];
} ts_welcome;

typedef struct {
	char *code, *message;
} ts_failure;

typedef struct {
	bool acquired;
	uint8_t lease[TS_ID_SIZE];
	char fence[LOCKFS_FENCE_MAX];
} ts_held;

typedef struct {
	bool found;
	uint8_t *value; /* NULL when absent */
	size_t value_len;
	char version[TS_VERSION_MAX + 1];
	bool has_expires;
	int64_t expires_ms;
	char *key; /* in pages */
} ts_entry;

typedef struct {
	bool written;
	char version[TS_VERSION_MAX + 1];
} ts_written;

typedef struct {
	GPtrArray *entries; /* ts_entry *, owned */
	char *next;         /* NULL: the last page */
} ts_page;

bool ts_welcome_decode(const ts_msg *m, ts_welcome *w, GError **error);
void ts_welcome_clear(ts_welcome *w);
bool ts_failure_decode(const ts_msg *m, ts_failure *f, GError **error);
void ts_failure_clear(ts_failure *f);
/* Held, or busy ({}): a grant needs acquired, a 16-byte lease and, when
 * FENCED (a lock's; a semaphore's has none), a fence. */
bool ts_held_decode(const ts_msg *m, bool fenced, ts_held *h, GError **error);
bool ts_handle_decode(const ts_msg *m, uint64_t *handle, GError **error);
bool ts_found_decode(const ts_msg *m, bool *found, GError **error);
bool ts_written_decode(const ts_msg *m, ts_written *w, GError **error);
bool ts_entry_decode(const ts_msg *m, ts_entry *e, GError **error);
void ts_entry_free(ts_entry *e);
bool ts_page_decode(const ts_msg *m, ts_page *p, GError **error);
void ts_page_clear(ts_page *p);
/* Exactly {}: the answer of renew and release. */
bool ts_empty_decode(const ts_msg *m, GError **error);
bool ts_credit_decode(const uint8_t *body, size_t len, uint32_t *credit, GError **error);

/* A decimal fence of 1 to 39 digits. */
bool ts_fence_valid(const char *s, size_t len);
/* A fence's epoch, its high 64 bits (protocol §5.8: the server's unix ms
 * when its locks engine opened; it grows with every server start): false
 * when FENCE is not a decimal u128. */
bool ts_fence_epoch(const char *fence, uint64_t *epoch);

/* ---- the SERVE file and holder records (JSON) ---- */

typedef struct {
	char *endpoint; /* endpoints[0], the local socket: "unix:///..." */
	uint8_t secret[32];
} ts_serve;

bool ts_serve_parse(const char *text, size_t len, ts_serve *s, GError **error);
void ts_serve_clear(ts_serve *s);

/* What lockfs keeps at bucket lockfs-holders, branch [lock_name], key KEY:
 * a kv value 03 + JSON that anyone may read, and break_lock needs. */
typedef struct {
	lockfs_holder holder;
	char *mount;
	char fence[LOCKFS_FENCE_MAX];
	uint8_t lease[TS_ID_SIZE];
	int64_t ttl_ms;
	/* The holder's last write (acquire, heartbeat) by the server's clock
	 * (unix ms, as the holder measured it at WELCOME), or 0: hosts judge
	 * staleness by it without trusting each other's clocks. */
	int64_t server_ms;
	uint8_t *content; /* NULL when the holder wrote nothing */
	size_t content_len;
} ts_record;

/* The kv value (type byte 03 and JSON). */
GByteArray *ts_record_encode(const ts_record *r);
bool ts_record_decode(const uint8_t *value, size_t len, ts_record *r, GError **error);
void ts_record_clear(ts_record *r);

/* The restart marker, at bucket lockfs-holders, root key "epochs:LOCK_NAME"
 * (03 + JSON, kept forever): the last server epoch lockfs mounts took locks
 * under, and how long grants of it must wait after that server started (see
 * tinystore.c, "Restart grace"). */
typedef struct {
	int64_t epoch;       /* the latest epoch a mount was granted a lock under */
	int64_t prev;        /* the one before it, 0: none (for the log) */
	int64_t ttl_ms;      /* the largest ttl of the mounts that used epoch */
	int64_t grace_until; /* server unix ms before which no grant of epoch is used; 0 */
} ts_marker;

GByteArray *ts_marker_encode(const ts_marker *m);
bool ts_marker_decode(const uint8_t *value, size_t len, ts_marker *m, GError **error);

/* base64url without padding, as SERVE's secret is written. */
bool ts_base64url_decode(const char *s, uint8_t *out, size_t out_len);
/* HMAC-SHA256(SECRET, CHALLENGE) compared with PROOF in constant time. */
bool ts_proof_ok(const uint8_t secret[32], const uint8_t challenge[TS_ID_SIZE],
                 const uint8_t proof[TS_PROOF_SIZE]);

#endif
