/* The holder record: what an etcd lock key's value holds (JSON), and the
 * rule that says a holder is stale, on the server's clock.  No network. */
#ifndef LOCKFS_ETCD_RECORD_H
#define LOCKFS_ETCD_RECORD_H

#include <glib.h>
#include <lockfs/backend.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct {
	lockfs_holder holder; /* host, pid, uid, gid, user, command, times, mode */
	char *mount;          /* the holder's mount id */
	char *nonce;          /* drawn per acquisition: a retried grant knows itself */
	int64_t lease;        /* the etcd lease the key is attached to */
	int64_t ttl_ms;       /* the holder's ttl */
	/* The server's clock (unix ms, the high end of the holder's reading)
	 * when the holder wrote the record, and how long before that write it
	 * last heartbeated (its own clock, which never meets another). */
	int64_t server_ms;
	int64_t idle_ms;
	char *content; /* the lock file's bytes, or NULL */
	size_t content_len;
} etcd_record;

void etcd_record_clear(etcd_record *r);

/* The value's JSON text, to free. */
char *etcd_record_encode(const etcd_record *r);

/* Parse DATA (LEN bytes) into *R; false (R cleared) when it is not a record
 * of ours. */
bool etcd_record_decode(const void *data, size_t len, etcd_record *r);

/* Whether a holder that wrote R is stale: its last heartbeat is older than
 * STALE_AFTER_MS by the server's clock, NOW_LOW_MS being the low end of our
 * reading of it.  Never when stale_after is 0, nor without a stamp. */
bool etcd_record_stale(const etcd_record *r, int64_t now_low_ms, int64_t stale_after_ms);

#endif
