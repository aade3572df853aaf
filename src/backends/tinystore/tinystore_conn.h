/* One connection to a tinystore server: reaching it (the store directory's
 * Unix socket with the server's proof, or TCP/TLS with a token), HELLO and
 * WELCOME, and one call at a time.  Every wait is bounded by a deadline on
 * the monotonic clock (µs, lockfs_mono_us()); not thread-safe: the backend
 * serialises its calls. */
#ifndef LOCKFS_TINYSTORE_CONN_H
#define LOCKFS_TINYSTORE_CONN_H

#include "tinystore_codec.h"

#include <gio/gio.h>

typedef struct {
	char *dir;      /* a store directory (its SERVE names the socket), or */
	char *endpoint; /* "tcp://HOST:PORT" or "tls://HOST:PORT" */
	char *token;
	GTlsDatabase *ca; /* tls: NULL for the system's */
	bool verify;      /* tls: check the certificate */
	char *client;     /* "lockfs/VERSION", for the server's log */
} ts_target;

typedef struct ts_conn ts_conn;

typedef enum {
	TS_CALL_OK,     /* *answer holds the reply */
	TS_CALL_FAILED, /* *failure holds the server's Failure */
	TS_CALL_BROKEN, /* the connection is unusable (error set): close it */
} ts_call_result;

ts_conn *ts_conn_open(const ts_target *t, int64_t deadline, GError **error);
/* Says GOAWAY (without waiting) and closes. */
void ts_conn_close(ts_conn *c);

/* Send one request and wait for its final RESPONSE. */
ts_call_result ts_conn_call(ts_conn *c, uint16_t method, const void *body, size_t len,
                            int64_t deadline, ts_msg *answer, ts_failure *failure, GError **error);

/* The server's clock minus ours at WELCOME, in ms. */
int64_t ts_conn_clock_offset_ms(const ts_conn *c);
/* The server's clock (unix ms) at MONO_US on our monotonic clock, counted
 * from WELCOME's now: behind the server's by the time WELCOME was on its
 * way (and the two clocks' drift since), never ahead; our wall clock, stepped
 * or not, plays no part. */
int64_t ts_conn_server_ms(const ts_conn *c, int64_t mono_us);

#endif
