/* etcd's v3 API as JSON over HTTP (the gRPC gateway every etcd >= 3.4 serves
 * at /v3/ on its client port), with libcurl and json-glib: endpoints tried in
 * turn (a member that fails or stops answering is left for the next), TLS,
 * user/password tokens, and the server's clock read from each reply's Date
 * header.  Private to the etcd backend. */
#ifndef LOCKFS_ETCD_CLIENT_H
#define LOCKFS_ETCD_CLIENT_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <lockfs/config.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
	char **endpoints; /* "http://host:port" or "https://…", NULL-terminated */
	char *ca_file;    /* PEM bundle the servers' certificates must chain to, or NULL */
	char *cert_file;  /* client certificate (PEM), or NULL */
	char *key_file;   /* its private key (PEM), or NULL */
	char *user;       /* etcd user, or NULL: no authentication */
	char *password;   /* its password */
} etcd_client_opts;

typedef struct etcd_client etcd_client;

/* Read [etcd] endpoints, prefix, TLS files, user and password_file of CFG into
 * O and *PREFIX (both the caller's to clear), checked as the backend checks
 * them; in etcd.c.  Also lockbench's raw cycle reads its server with it. */
bool etcd_client_opts_read(const lockfs_config *cfg, etcd_client_opts *o, char **prefix,
                           GError **error);
void etcd_client_opts_clear(etcd_client_opts *o);

/* Takes over the strings of O (clears it).  Connects to nothing yet. */
etcd_client *etcd_client_new(etcd_client_opts *o);
void etcd_client_free(etcd_client *c);

/* POST the JSON BODY to PATH ("/v3/kv/txn").  Transport failures and
 * "unavailable" answers (no leader, request timed out: HTTP 503) move on to
 * the next endpoint and try again until DEADLINE (lockfs_mono_us()), so the
 * request must be safe to repeat.  0 with the reply's object in *OUT (to
 * json_node_unref), or -EIO with *WHY (to free) saying what failed. */
int etcd_call(etcd_client *c, const char *path, const char *body, int64_t deadline, JsonNode **out,
              char **why);

/* A streaming call (a watch): POST BODY to PATH on the member calls go to,
 * for TIMEOUT_US, giving ON_LINE each line of the reply (one JSON object) as
 * it arrives; it returns false to end the stream.  0 when the time ran out
 * with the stream whole, -EIO with *WHY (to free) when it could not be made,
 * broke off or was ended by ON_LINE.  No failover: the caller starts another
 * (calls move the member on when it fails). */
typedef bool (*etcd_line_cb)(const char *line, size_t len, void *user);
int etcd_client_stream(etcd_client *c, const char *path, const char *body, int64_t timeout_us,
                       etcd_line_cb on_line, void *user, char **why);

/* The server's unix time in ms now is within [*LOW, *HIGH], from the latest
 * reply's Date header (1 s resolution) carried on our monotonic clock; *AGE_US
 * since it was read.  False before any reply had one. */
bool etcd_client_server_now(etcd_client *c, int64_t *low, int64_t *high, int64_t *age_us);

/* The endpoint the next call starts with (for messages). */
const char *etcd_client_endpoint(etcd_client *c);

/* JSON helpers: an int64 member that the gateway writes as a string (or a
 * number), DEF when absent; a bool member, false when absent (the gateway
 * leaves out zero values). */
int64_t etcd_json_int(JsonObject *o, const char *member, int64_t def);
bool etcd_json_bool(JsonObject *o, const char *member);
/* The object, array or string member MEMBER, or NULL when absent or of
 * another type (a reply is not trusted to have the types it should). */
JsonObject *etcd_json_obj(JsonObject *o, const char *member);
JsonArray *etcd_json_array(JsonObject *o, const char *member);
const char *etcd_json_str(JsonObject *o, const char *member);
/* The bodies of the two txns a lock is: put KEY_B64 = VALUE_B64 on LEASE
 * only if the key does not exist (create revision 0), else read it; and
 * delete KEY only if its create revision is CREATE_REV (and, when MOD_REV
 * is not 0, its mod revision MOD_REV), so a late release never deletes a
 * newer holder's key.  To free.  (The backend's, and lockbench's raw cycle.) */
char *etcd_txn_create_body(const char *key_b64, const char *value_b64, int64_t lease);
char *etcd_txn_delete_body(const char *key, int64_t create_rev, int64_t mod_rev);
/* A txn deleting KEY only while its value is still exactly VALUE_B64. */
char *etcd_txn_delete_value_body(const char *key, const char *value_b64);
/* Base64 of LEN bytes of DATA, to free. */
char *etcd_b64(const void *data, size_t len);

#endif
