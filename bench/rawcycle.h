/* The raw backend cycle lockbench compares lockfs with on a shared backend:
 * the least a client can do on the same server to take a lock and let it go,
 * with no filesystem in between.
 *
 *   tinystore  locks.hold (wait 0) + locks.release on one connection, through
 *              lockfs's own client (tinystore_conn.c, tinystore_codec.c)
 *   ldap       ldap_add_ext_s of cn=bench-raw,BASE + ldap_delete_ext_s on one
 *              libldap connection (StartTLS and bind as lockfs does them)
 *   etcd       txn create-if-absent on a lease granted once + txn delete-if-
 *              same-create-revision, through lockfs's own client (etcd_client.c)
 *
 * The server and credentials come from the same configuration lockfs is
 * given (--config FILE and -o options), read by lockfs's own parser. */
#ifndef LOCKBENCH_RAWCYCLE_H
#define LOCKBENCH_RAWCYCLE_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct raw_client raw_client;

/* Connect to BACKEND's server ("tinystore", "ldap" or "etcd") as configured by
 * CONFIG_FILE (or NULL) and OPTS (lockfs -o options, comma-separated, or
 * NULL).  NULL with ERR filled on failure. */
raw_client *raw_open(const char *backend, const char *config_file, const char *opts, char *err,
                     size_t errlen);

/* N lock cycles; 0, or -1 with ERR filled (the client is then unusable).
 * STOP is polled between cycles (it makes the call fail with "interrupted"). */
int raw_cycles(raw_client *c, long n, volatile const sig_atomic_t *stop, char *err, size_t errlen);

/* One line saying what a cycle does, for the report. */
const char *raw_describe(const raw_client *c);

/* Let go of anything still held and disconnect. */
void raw_close(raw_client *c);

#endif
