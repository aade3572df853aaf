/* The backend contract suite: what every backend must do through
 * include/lockfs/backend.h, written once and run with a fixture per backend
 * (a real server each; see test_etcd_backend.c for the etcd one).
 *
 * Tests (paths /contract/NAME/...): acquire-eexist, release-only-own,
 * break-with-fence, stale-broken-by-acquire, list-prefix, acquire-content
 * (shared backends), confirm,
 * renew-estale-after-loss (backends with leases), fences-across-hosts and
 * fences-across-restart (when the fixture can restart its server).
 *
 * Fixtures: etcd (test_etcd_backend.c), local (test_fence_store.c: one
 * instance, shared = false; a restart reopens its fence state file), LDAP
 * (test_ldap_backend.c) and tinystore (test_tinystore_backend.c), each in
 * the binary that already starts its server.  Two allowances: where holder
 * records come after the grant and go after the release
 * (LOCKFS_BACKEND_UNDESCRIBED: tinystore) the suite waits for them, bounded,
 * before it inspects or lists; after a restart it waits out EIO and EEXIST
 * (tinystore refuses grants for ttl: its restart grace). */
#ifndef LOCKFS_BACKEND_CONTRACT_H
#define LOCKFS_BACKEND_CONTRACT_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>
#include <stdbool.h>

typedef struct {
	const char *name; /* test paths are /contract/NAME/... */
	/* Why every test skips (e.g. no server), or NULL; read when each test
	 * runs, so the fixture may set it after adding the tests. */
	const char *const *skip;
	/* Mount options naming the backend and its server (NULL-terminated);
	 * the suite adds ttl, stale_after, network_timeout and
	 * heartbeat_min_interval. */
	const char *const *options;
	/* The backend type's name, as backend= names it (src/common/backend.c). */
	const char *backend;
	/* Instances made by construct() share their locks, like two hosts on
	 * one server (false for local: then the "other host" is the same
	 * instance). */
	bool shared;
	/* Stop and start the server on its data; false when it failed.  NULL:
	 * the restart tests skip. */
	bool (*restart)(void);
} lockfs_contract;

/* Add the suite's tests for C (kept by pointer: it must outlive the run). */
void lockfs_contract_add(const lockfs_contract *c);

/* A new instance of C's backend ("a host"): TTL, STALE_AFTER and TIMEOUT are
 * option values ("2s").  Fails the test when it cannot be made. */
lockfs_backend *lockfs_contract_backend(const lockfs_contract *c, const char *mount_id,
                                        const char *ttl, const char *stale_after,
                                        const char *timeout);

/* A holder record for tests (strings static), and a key no other test uses
 * (to free). */
lockfs_holder lockfs_contract_holder(const char *host, int64_t pid);
char *lockfs_contract_key(const char *name);

#endif
