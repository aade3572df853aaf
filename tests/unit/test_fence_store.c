/* Unit tests for src/common/fence_store.c and the local backend: fences never
 * repeat across reopenings, a state file that cannot be written refuses to
 * hand out a fence (and nothing repeats after), and a corrupt file is never
 * reset. */
#include "backend_contract.h"
#include "fence_store.h"
#include "log.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <lockfs/backends.h>
#include <signal.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static char *tmpdir;

/* The local backend in the contract suite: one instance is every "host"
 * (shared = false); its fence store is the state file under state_dir, so
 * a "restart" is the suite's own: it destroys the instance (closing the
 * store) and makes a new one that reopens the same file. */
static char *state_dir_opt;
static const char *contract_options[3];
static bool reopen_fence_store(void)
{
	return true;
}
static const lockfs_contract local_contract = {
	.name = "local",
	.options = contract_options,
	.backend = "local",
	.shared = false,
	.restart = reopen_fence_store,
};

static char *state_path(const char *name)
{
	return g_build_filename(tmpdir, name, NULL);
}

static void test_monotonic_across_reopen(void)
{
	g_autofree char *path = state_path("a.fence");
	uint64_t last = 0, f;
	for (int round = 0; round < 3; round++) {
		g_autoptr(GError) err = NULL;
		lockfs_fence_store *fs = lockfs_fence_store_open(path, 4, &err);
		g_assert_no_error(err);
		/* more than a block, so a new reservation is written mid-run */
		for (int i = 0; i < 10; i++) {
			g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, 0);
			g_assert_cmpuint(f, >, last);
			last = f;
		}
		lockfs_fence_store_close(fs);
	}
}

static void test_second_owner_refused(void)
{
	g_autofree char *path = state_path("b.fence");
	g_autoptr(GError) err = NULL;
	lockfs_fence_store *a = lockfs_fence_store_open(path, 4, &err);
	g_assert_no_error(err);
	lockfs_fence_store *b = lockfs_fence_store_open(path, 4, &err);
	g_assert_null(b);
	g_assert_nonnull(err);
	g_assert_nonnull(strstr(err->message, "in use by another lockfs"));
	lockfs_fence_store_close(a);
}

static void test_corrupt_refused(void)
{
	g_autofree char *path = state_path("c.fence");
	g_assert_true(g_file_set_contents(path, "garbage\n", -1, NULL));
	g_autoptr(GError) err = NULL;
	g_assert_null(lockfs_fence_store_open(path, 4, &err));
	g_assert_nonnull(err);
	g_assert_nonnull(strstr(err->message, "not a lockfs fence state file"));
	g_autofree char *text = NULL;
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_cmpstr(text, ==, "garbage\n"); /* left as it was */
}

/* Writes that fail (as on a full disk: here RLIMIT_FSIZE makes every write
 * of the state file fail) stop the counter instead of repeating it. */
static void test_unwritable_stops(void)
{
	g_autofree char *path = state_path("d.fence");
	g_autoptr(GError) err = NULL;
	lockfs_fence_store *fs = lockfs_fence_store_open(path, 3, &err);
	g_assert_no_error(err);
	uint64_t f = 0, last = 0;
	for (int i = 0; i < 3; i++) {
		g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, 0);
		last = f;
	}
	struct rlimit old, zero = { 0, 0 };
	getrlimit(RLIMIT_FSIZE, &old);
	zero.rlim_max = old.rlim_max;
	signal(SIGXFSZ, SIG_IGN);
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &zero), ==, 0);
	g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, -EIO);
	g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, -EIO);
	g_assert_cmpint(setrlimit(RLIMIT_FSIZE, &old), ==, 0);
	/* the file still holds the old reservation: it was replaced whole or not */
	g_autofree char *text = NULL;
	g_assert_true(g_file_get_contents(path, &text, NULL, NULL));
	g_assert_nonnull(strstr(text, "reserved 3\n"));
	g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, 0);
	g_assert_cmpuint(f, >, last);
	lockfs_fence_store_close(fs);
	fs = lockfs_fence_store_open(path, 3, &err);
	g_assert_no_error(err);
	g_assert_cmpint(lockfs_fence_store_next(fs, &f), ==, 0);
	g_assert_cmpuint(f, >, last + 1);
	lockfs_fence_store_close(fs);
}

/* An instance built for another interface version is refused, by the
 * registry's constructor, with a line saying to rebuild (and destroyed). */
static lockfs_backend *old_local(const lockfs_config *cfg, const char *mount_id, GError **error)
{
	lockfs_backend *be = lockfs_backend_type_find("local")->create(cfg, mount_id, error);
	if (be)
		be->version = LOCKFS_BACKEND_VERSION - 1;
	return be;
}

static void test_version_refused(void)
{
	lockfs_config *cfg = lockfs_config_new();
	g_autofree char *opt = g_strdup_printf("state_dir=%s", tmpdir);
	bool ff;
	g_autoptr(GError) err = NULL;
	g_assert_true(lockfs_config_set_option(cfg, opt, &ff, &err));
	g_assert_true(lockfs_config_finish(cfg, &err));
	const lockfs_backend_type old = { LOCKFS_BACKEND_TYPE_INIT("local"), .create = old_local };
	g_assert_null(lockfs_backend_new_of_type(&old, cfg, "/version", &err));
	g_assert_nonnull(err);
	g_autofree char *want = g_strdup_printf("backend 'local' implements backend interface "
	                                        "version %u, this lockfs calls version %u; "
	                                        "rebuild it with this lockfs",
	                                        LOCKFS_BACKEND_VERSION - 1, LOCKFS_BACKEND_VERSION);
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	/* Refused and destroyed: the same mount's state file opens again. */
	lockfs_backend *be = lockfs_backend_new_of_type(lockfs_backend_type_find("local"), cfg,
	                                                "/version", &err);
	g_assert_no_error(err);
	g_assert_cmpuint(be->version, ==, LOCKFS_BACKEND_VERSION);
	be->destroy(be);
	lockfs_config_free(cfg);
}

/* The local backend through the interface: EEXIST, release only if own,
 * breaks by fence, stale locks broken by the next acquisition. */
static void test_local_backend(void)
{
	lockfs_config *cfg = lockfs_config_new();
	g_autofree char *opt = g_strdup_printf("state_dir=%s", tmpdir);
	bool ff;
	g_autoptr(GError) err = NULL;
	g_assert_true(lockfs_config_set_option(cfg, opt, &ff, &err));
	g_assert_true(lockfs_config_set_option(cfg, "ttl=1s", &ff, &err));
	g_assert_true(lockfs_config_set_option(cfg, "network_timeout=500ms", &ff, &err));
	g_assert_true(lockfs_config_set_option(cfg, "heartbeat_min_interval=100ms", &ff, &err));
	g_assert_true(lockfs_config_set_option(cfg, "stale_after=2s", &ff, &err));
	g_assert_true(lockfs_config_finish(cfg, &err));
	lockfs_backend *be = lockfs_backend_new(cfg, "/unit", &err);
	g_assert_no_error(err);
	g_assert_cmpuint(be->version, ==, LOCKFS_BACKEND_VERSION);

	lockfs_holder who = { .host = "h",
		              .pid = 1,
		              .uid = 1000,
		              .user = "u",
		              .command = "c",
		              .acquired_us = g_get_real_time(),
		              .heartbeat_us = g_get_real_time() };
	lockfs_lease *a = NULL, *b = NULL;
	lockfs_acquire_result res;
	g_assert_cmpint(be->acquire(be, "x.lock", &who, NULL, 0, &a, &res), ==, 0);
	g_assert_false(res.broke);
	g_assert_cmpint(be->acquire(be, "x.lock", &who, NULL, 0, &b, &res), ==, -EEXIST);
	lockfs_lock_info info;
	g_assert_cmpint(be->inspect(be, "x.lock", &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, a->fence);
	lockfs_lock_info_clear(&info);

	/* a break by fence, then the old lease's release finds nothing */
	g_assert_cmpint(be->break_lock(be, "x.lock", "999999", NULL, NULL), ==, -ENOENT);
	g_assert_cmpint(be->break_lock(be, "x.lock", a->fence, NULL, &info), ==, 0);
	lockfs_lock_info_clear(&info);
	g_assert_cmpint(be->acquire(be, "x.lock", &who, NULL, 0, &b, &res), ==, 0);
	g_assert_cmpint(lockfs_fence_cmp(b->fence, a->fence), >, 0);
	g_assert_cmpint(be->release(be, a), ==, -ENOENT);
	g_assert_cmpint(be->heartbeat(be, a,
	                              &(lockfs_beat){ .heartbeat_us = g_get_real_time(),
	                                              .content = NULL,
	                                              .content_len = 0 }),
	                ==, -ESTALE);
	g_assert_cmpint(be->inspect(be, "x.lock", &info), ==, 0); /* b's, untouched */
	g_assert_cmpstr(info.fence, ==, b->fence);
	lockfs_lock_info_clear(&info);

	/* stale: a holder whose heartbeat is older than stale_after */
	lockfs_holder old = who;
	old.heartbeat_us = g_get_real_time() - 3 * G_USEC_PER_SEC;
	lockfs_lease *c = NULL, *d = NULL;
	g_assert_cmpint(be->acquire(be, "s.lock", &old, NULL, 0, &c, &res), ==, 0);
	g_assert_cmpint(be->acquire(be, "s.lock", &who, NULL, 0, &d, &res), ==, 0);
	g_assert_true(res.broke);
	g_assert_cmpstr(res.previous.fence, ==, c->fence);
	lockfs_lock_info_clear(&res.previous);
	g_assert_cmpint(be->release(be, c), ==, -ENOENT);
	g_assert_cmpint(be->release(be, d), ==, 0);
	g_assert_cmpint(be->release(be, b), ==, 0);
	g_assert_cmpint(be->inspect(be, "x.lock", &info), ==, -ENOENT);
	be->lease_free(be, a);
	be->lease_free(be, b);
	be->lease_free(be, c);
	be->lease_free(be, d);
	be->destroy(be);
	lockfs_config_free(cfg);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	lockfs_log_init("test", true, "error");
	tmpdir = g_dir_make_tmp("lockfs-fence-XXXXXX", NULL);
	g_test_add_func("/fence/monotonic-across-reopen", test_monotonic_across_reopen);
	g_test_add_func("/fence/second-owner-refused", test_second_owner_refused);
	g_test_add_func("/fence/corrupt-refused", test_corrupt_refused);
	g_test_add_func("/fence/unwritable-stops", test_unwritable_stops);
	g_test_add_func("/local/backend", test_local_backend);
	g_test_add_func("/registry/version-refused", test_version_refused);
	state_dir_opt = g_strdup_printf("state_dir=%s", tmpdir);
	contract_options[0] = "backend=local";
	contract_options[1] = state_dir_opt;
	lockfs_contract_add(&local_contract);
	int r = g_test_run();
	g_autofree char *cmd = g_strdup_printf("rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		r = 1;
	return r;
}
