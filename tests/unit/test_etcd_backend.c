/* The etcd backend against a real 3-member etcd cluster on loopback
 * (tests/lib/etcd.sh starts it on free ports, data under a temp directory):
 * the backend contract suite (backend_contract.c), then what is etcd's own —
 * holder records and content other hosts read at once, one lease per mount
 * whose loss loses every lock on it together, locks let go without a release,
 * a member paused (SIGSTOP) and the leader killed (-9) while locks are held,
 * every call bounded; a restart of lockfs (destroy() lets go of nothing, the
 * next instance resumes the mount lease and adopts its locks, or learns they
 * are lost; tokens it did not write refused).  Without etcd every test that
 * needs it skips, saying why. */
#include "backend_contract.h"
#include "backends/etcd/etcd_client.h"
#include "backends/etcd/etcd_record.h"
#include "fault_proxy.h"
#include "holder.h"
#include "log.h"
#include "test_util.h"

#include <errno.h>
#include <lockfs/backends.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *tmpdir, *cluster_dir;
static char *script; /* tests/lib/etcd.sh */
static char *skip_reason;
static char *endpoints;   /* "EP0;EP1;EP2" (a mount option splits at commas) */
static char *endpoint[3]; /* each member's */
static char *endpoints_opt, *prefix_opt;

/* ---- the cluster ---- */

/* etcd.sh CMD [N] on the test cluster; asserts success. */
static void cluster(const char *cmd, int member)
{
	g_autofree char *n = g_strdup_printf("%d", member);
	const char *args[] = { cmd, cluster_dir, member >= 0 ? n : NULL, NULL };
	g_autofree char *err = NULL;
	int rc = run_script(script, args, NULL, &err);
	if (rc != 0)
		g_error("etcd.sh %s failed (%d): %s", cmd, rc, err);
}

/* The index of the leader (waiting for one). */
static int leader(void)
{
	const char *args[] = { "leader", cluster_dir, NULL };
	g_autofree char *err = NULL;
	g_autofree char *out = NULL;
	int rc = run_script_output(script, args, &out, &err);
	g_assert_true(rc != -1); /* it ran */
	g_assert_true(rc == 0);
	int n = atoi(out);
	g_assert_true(n >= 0 && n <= 2);
	return n;
}

static void start_cluster(void)
{
	GHashTable *vars = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autofree char *err = NULL;
	cluster_dir = g_build_filename(tmpdir, "etcd", NULL);
	/* --watch: the members die with this process, however it ends. */
	g_autofree char *self = g_strdup_printf("%d", (int)getpid());
	const char *start[] = { "start", cluster_dir, "--watch", self, NULL };
	int rc = run_script(script, start, vars, &err);
	if (rc != 0) {
		skip_reason = g_strdup_printf("no etcd cluster: %s",
		                              err && *err ? err : "etcd.sh start failed");
		g_clear_pointer(&cluster_dir, g_free);
		g_hash_table_destroy(vars);
		return;
	}
	for (int i = 0; i < 3; i++) {
		g_autofree char *name = g_strdup_printf("ETCD_ENDPOINT_%d", i);
		endpoint[i] = g_strdup(g_hash_table_lookup(vars, name));
	}
	endpoints = g_strdup_printf("%s;%s;%s", endpoint[0], endpoint[1], endpoint[2]);
	g_hash_table_destroy(vars);
}

static void stop_cluster(void)
{
	if (!cluster_dir)
		return;
	const char *stop[] = { "stop", cluster_dir, NULL };
	g_autofree char *err = NULL;
	run_script(script, stop, NULL, &err);
}

static bool restart_cluster(void)
{
	const char *args[] = { "restart", cluster_dir, NULL };
	g_autofree char *err = NULL;
	int rc = run_script(script, args, NULL, &err);
	if (rc != 0)
		g_printerr("etcd.sh restart: %s\n", err);
	return rc == 0;
}

/* ---- backends ---- */

static const char *contract_options[4];
static const lockfs_contract etcd_contract = {
	.name = "etcd",
	.skip = (const char *const *)&skip_reason,
	.options = contract_options,
	.backend = "etcd",
	.shared = true,
	.restart = restart_cluster,
};

/* An instance on the test cluster with ENDPOINTS (NULL: all three). */
static lockfs_backend *backend_on(const char *eps, const char *mount, const char *ttl,
                                  const char *timeout)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	bool for_fuse;
	g_autofree char *e = g_strdup_printf("etcd_endpoints=%s", eps ? eps : endpoints);
	g_autofree char *t = g_strdup_printf("ttl=%s", ttl);
	g_autofree char *n = g_strdup_printf("network_timeout=%s", timeout);
	const char *opts[] = { "backend=etcd", e, prefix_opt, t, n, NULL };
	for (const char *const *o = opts; *o; o++)
		g_assert_true(lockfs_config_set_option(cfg, *o, &for_fuse, &err));
	g_assert_true(lockfs_config_finish(cfg, &err));
	lockfs_backend *be = lockfs_backend_type_find("etcd")->create(cfg, mount, &err);
	g_assert_no_error(err);
	g_assert_nonnull(be);
	g_assert_cmpuint(be->flags, ==, LOCKFS_BACKEND_SHARED | LOCKFS_BACKEND_LEASES);
	lockfs_config_free(cfg);
	return be;
}

static lockfs_lease *take(lockfs_backend *be, const char *key, const char *host,
                          const char *content)
{
	lockfs_holder h = lockfs_contract_holder(host, 4242);
	lockfs_lease *lease = NULL;
	g_assert_cmpint(
	        be->acquire(be, key, &h, content, content ? strlen(content) : 0, &lease, NULL), ==,
	        0);
	return lease;
}

/* ---- the record (no server) ---- */

static void test_record(void)
{
	etcd_record r = { 0 };
	r.holder = lockfs_contract_holder("h\"ost", 12);
	r.holder.command = (char *)"cmd with \\ and \n";
	r.mount = (char *)"/m";
	r.nonce = (char *)"abc";
	r.lease = 7587881234567890123;
	r.ttl_ms = 30000;
	r.server_ms = 1700000000000;
	r.idle_ms = 1500;
	r.content = (char *)"12\0"
	                    "34";
	r.content_len = 5;
	g_autofree char *json = etcd_record_encode(&r);
	etcd_record d;
	g_assert_true(etcd_record_decode(json, strlen(json), &d));
	g_assert_cmpstr(d.holder.host, ==, "h\"ost");
	g_assert_cmpstr(d.holder.command, ==, "cmd with \\ and \n");
	g_assert_cmpint(d.holder.pid, ==, 12);
	g_assert_cmpuint(d.holder.uid, ==, 1000);
	g_assert_cmpuint(d.holder.mode, ==, 0100644);
	g_assert_cmpint(d.lease, ==, 7587881234567890123);
	g_assert_cmpint(d.server_ms, ==, 1700000000000);
	g_assert_cmpmem(d.content, d.content_len,
	                "12\0"
	                "34",
	                5);
	/* Stale only when the server's clock says so, never overestimated. */
	g_assert_false(etcd_record_stale(&d, 1700000000000 + 3500, 5000));
	g_assert_true(etcd_record_stale(&d, 1700000000000 + 3501, 5000));
	g_assert_false(etcd_record_stale(&d, 1700000000000 + 99999, 0));
	d.server_ms = 0;
	g_assert_false(etcd_record_stale(&d, 1700000000000 + 99999, 5000));
	etcd_record_clear(&d);
	const char *bad[] = { "",
		              "{",
		              "[]",
		              "{\"v\":2}",
		              "{\"v\":1,\"uid\":-1}",
		              "{\"v\":1,\"pid\":\"x\"}",
		              "{\"v\":1,\"lease\":\"12x\"}" };
	for (size_t i = 0; i < G_N_ELEMENTS(bad); i++)
		g_assert_false(etcd_record_decode(bad[i], strlen(bad[i]), &d));
}

/* ---- configuration ---- */

static void expect_config_error(const char *const *opts, const char *part)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	bool for_fuse;
	for (const char *const *o = opts; *o; o++)
		g_assert_true(lockfs_config_set_option(cfg, *o, &for_fuse, &err));
	g_assert_true(lockfs_config_finish(cfg, &err));
	lockfs_backend *be = lockfs_backend_type_find("etcd")->create(cfg, "/m", &err);
	g_assert_null(be);
	g_assert_nonnull(err);
	g_assert_null(strchr(err->message, '\n'));
	if (!strstr(err->message, part))
		g_error("'%s' does not say '%s'", err->message, part);
	g_error_free(err);
	lockfs_config_free(cfg);
}

static void test_config(void)
{
	const char *no_scheme[] = { "backend=etcd", "etcd_endpoints=127.0.0.1:2379", NULL };
	expect_config_error(no_scheme, "write http://HOST:2379");
	g_autofree char *cert_opt = g_strdup_printf("etcd_cert_file=%s", script);
	const char *cert_only[] = { "backend=etcd", cert_opt, NULL };
	expect_config_error(cert_only, "needs both cert_file and key_file");
	const char *no_ca[] = { "backend=etcd", "etcd_ca_file=/nonexistent/ca.pem", NULL };
	expect_config_error(no_ca, "cannot read /nonexistent/ca.pem");
	const char *empty_prefix[] = { "backend=etcd", "etcd_prefix=", NULL };
	expect_config_error(empty_prefix, "the prefix is empty");
	g_autofree char *pw = g_build_filename(tmpdir, "password", NULL);
	g_assert_true(g_file_set_contents(pw, "secret\n", -1, NULL));
	g_assert_cmpint(chmod(pw, 0644), ==, 0);
	g_autofree char *pwopt = g_strdup_printf("etcd_password_file=%s", pw);
	const char *readable[] = { "backend=etcd", "etcd_user=lockfs", pwopt, NULL };
	expect_config_error(readable, "readable by group or others; make it private: chmod 600");
	const char *no_user[] = { "backend=etcd", pwopt, NULL };
	expect_config_error(no_user, "needs both user and password_file");
	/* Nobody listens on a port just freed: one line naming the endpoint. */
	const char *dead[] = { "backend=etcd", "etcd_endpoints=http://127.0.0.1:9",
		               "network_timeout=1s", NULL };
	expect_config_error(dead, "cannot get a lease from http://127.0.0.1:9");
}

/* ---- etcd's own ---- */

static void test_content_shared(void)
{
	NEED(skip_reason);
	lockfs_backend *a = backend_on(NULL, "/a", "3s", "2s");
	lockfs_backend *b = backend_on(NULL, "/b", "3s", "2s");
	g_autofree char *key = lockfs_contract_key("content.lock");
	lockfs_lease *l = take(a, key, "host-a", "1234\n");
	lockfs_lock_info info;
	g_assert_cmpint(b->inspect(b, key, &info), ==, 0);
	g_assert_cmpmem(info.content, info.content_len, "1234\n", 5);
	g_assert_cmpint(info.holder.mode, ==, 0100644);
	lockfs_lock_info_clear(&info);
	lockfs_beat beat = { .heartbeat_us = lockfs_now_us(),
		             .mode = 0100600,
		             .content = "5678\n",
		             .content_len = 5 };
	g_assert_cmpint(a->heartbeat(a, l, &beat), ==, 0);
	g_assert_cmpint(b->inspect(b, key, &info), ==, 0);
	g_assert_cmpmem(info.content, info.content_len, "5678\n", 5);
	g_assert_cmpint(info.holder.mode, ==, 0100600);
	g_assert_cmpstr(info.fence, ==, l->fence);
	lockfs_lock_info_clear(&info);
	/* A heartbeat after a break is refused and writes nothing back. */
	g_assert_cmpint(b->break_lock(b, key, l->fence, NULL, NULL), ==, 0);
	g_assert_cmpint(a->heartbeat(a, l, &beat), ==, -ESTALE);
	g_assert_cmpint(b->inspect(b, key, &info), ==, -ENOENT);
	g_assert_cmpint(a->release(a, l), ==, -ENOENT);
	a->lease_free(a, l);
	/* The clock: measured from the replies, within a second. */
	lockfs_clock_info ci;
	g_assert_cmpint(a->clock(a, &ci), ==, 0);
	g_assert_cmpint(ci.uncertainty_us, <=, 1000 * 1000);
	g_assert_cmpint(ABS(ci.offset_us), <, 3 * G_USEC_PER_SEC);
	a->destroy(a);
	b->destroy(b);
}

/* Every lock of a mount is on its one lease: when it runs out they are all
 * lost together, and all free for others. */
static void test_lease_per_mount(void)
{
	NEED(skip_reason);
	lockfs_backend *a = backend_on(NULL, "/a", "2s", "1s");
	lockfs_backend *b = backend_on(NULL, "/b", "2s", "1s");
	enum {
		N = 10
	};
	lockfs_lease *l[N];
	char *keys[N];
	for (int i = 0; i < N; i++) {
		keys[i] = lockfs_contract_key("many.lock");
		l[i] = take(a, keys[i], "host-a", NULL);
	}
	for (int i = 0; i < N; i++)
		g_assert_cmpint(a->renew(a, l[i]), ==, 0);
	/* No renewal: wait (bounded) until host b is granted the first. */
	lockfs_holder who = lockfs_contract_holder("host-b", 1);
	lockfs_lease *got = NULL;
	int64_t end = lockfs_mono_us() + 20 * G_USEC_PER_SEC;
	int r;
	while ((r = b->acquire(b, keys[0], &who, NULL, 0, &got, NULL)) == -EEXIST) {
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(r, ==, 0);
	give(b, got);
	for (int i = 0; i < N; i++) {
		g_assert_cmpint(a->renew(a, l[i]), ==, -ESTALE);
		lockfs_lock_info info;
		g_assert_cmpint(b->inspect(b, keys[i], &info), ==, -ENOENT);
		a->lease_free(a, l[i]);
		g_free(keys[i]);
	}
	/* The mount takes a new lease for its next lock. */
	g_autofree char *k = lockfs_contract_key("after.lock");
	give(a, take(a, k, "host-a", NULL));
	a->destroy(a);
	b->destroy(b);
}

/* A lock the filesystem let go without a release (declared lost while the
 * lease lived on) is deleted before the lease is kept alive again. */
static void test_abandoned(void)
{
	NEED(skip_reason);
	lockfs_backend *a = backend_on(NULL, "/a", "3s", "2s");
	lockfs_backend *b = backend_on(NULL, "/b", "3s", "2s");
	g_autofree char *k1 = lockfs_contract_key("dropped.lock");
	g_autofree char *k2 = lockfs_contract_key("kept.lock");
	lockfs_lease *l1 = take(a, k1, "host-a", NULL);
	lockfs_lease *l2 = take(a, k2, "host-a", NULL);
	a->lease_free(a, l1);
	lockfs_lock_info info;
	int64_t end = lockfs_mono_us() + 10 * G_USEC_PER_SEC;
	while (b->inspect(b, k1, &info) == 0) {
		lockfs_lock_info_clear(&info);
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_assert_cmpint(a->renew(a, l2), ==, 0);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(b->inspect(b, k2, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, l2->fence);
	lockfs_lock_info_clear(&info);
	give(a, l2);
	a->destroy(a);
	b->destroy(b);
}

/* ---- a link that loses answers (tests/faults/proxy.py) ---- */

/* A proxy to member 0: its endpoint ("http://127.0.0.1:P"). */
static char *proxy_start(void)
{
	const char *up = strstr(endpoint[0], "://");
	g_assert_nonnull(up);
	return g_strdup_printf("http://127.0.0.1:%d", fault_proxy_start(up + 3, tmpdir));
}

/* A put that etcd applied but whose answer was lost (the fault run's
 * "Failure when receiving data"): its taker was told EIO, so nobody holds
 * the key, yet it sat on the mount lease that every keep-alive extends
 * until the stale rules broke it (8.2 s in the etcd long run).  The mount
 * deletes it, if it still holds that very put's value, before its next
 * keep-alive. */
static void test_unanswered_put(void)
{
	NEED(skip_reason);
	g_autofree char *via = proxy_start();
	lockfs_backend *a = backend_on(via, "/a", "6s", "1s");
	lockfs_backend *b = backend_on(NULL, "/b", "6s", "2s");
	g_autofree char *k1 = lockfs_contract_key("kept.lock");
	g_autofree char *k2 = lockfs_contract_key("unanswered.lock");
	lockfs_lease *l1 = take(a, k1, "host-a", NULL);
	/* Answers vanish: the put right after the grant reuses its keep-alive,
	 * reaches etcd and is applied, and its answer never comes. */
	fault_proxy_ctl("drop", "s2c");
	lockfs_holder who = lockfs_contract_holder("host-a", 7);
	lockfs_lease *l2 = NULL;
	g_assert_cmpint(a->acquire(a, k2, &who, NULL, 0, &l2, NULL), ==, -EIO);
	lockfs_lock_info info;
	g_assert_cmpint(b->inspect(b, k2, &info), ==, 0);
	g_assert_cmpstr(info.holder.host, ==, "host-a");
	lockfs_lock_info_clear(&info);
	fault_proxy_ctl("forward", NULL);
	/* The mount's renewals go on; the key must go within a keep-alive
	 * round or two (renewals every 2 s), far less than the stale rules. */
	int64_t t0 = lockfs_mono_us(), end = t0 + 8 * G_USEC_PER_SEC;
	int r;
	while ((r = b->inspect(b, k2, &info)) == 0) {
		lockfs_lock_info_clear(&info);
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_assert_cmpint(a->renew(a, l1), ==, 0);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(r, ==, -ENOENT);
	g_test_message("the unanswered put's key was deleted %.1f s after the link came back",
	               (double)(lockfs_mono_us() - t0) / G_USEC_PER_SEC);
	/* The lock it deleted was nobody's; the mount's own lock stays. */
	g_assert_cmpint(b->inspect(b, k1, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, l1->fence);
	lockfs_lock_info_clear(&info);
	give(a, l1);
	a->destroy(a);
	b->destroy(b);
	fault_proxy_stop();
}

/* Time CALL and assert it returned within the network timeout (plus
 * scheduling slack). */
#define BOUNDED(timeout_us, call)                                                  \
	({                                                                         \
		int64_t t0_ = lockfs_mono_us();                                    \
		int r_ = (call);                                                   \
		g_assert_cmpint(lockfs_mono_us() - t0_, <, (timeout_us) + 500000); \
		r_;                                                                \
	})

/* A follower, first in the list of endpoints, stops answering (SIGSTOP: it
 * keeps its sockets and answers nothing): every call still succeeds within
 * the timeout through the others, and later calls do not wait for it. */
static void test_member_paused(void)
{
	NEED(skip_reason);
	int lead = leader();
	int paused = (lead + 1) % 3, other = (lead + 2) % 3;
	g_autofree char *eps =
	        g_strdup_printf("%s;%s;%s", endpoint[paused], endpoint[lead], endpoint[other]);
	lockfs_backend *a = backend_on(eps, "/a", "6s", "3s");
	g_autofree char *held = lockfs_contract_key("held.lock");
	lockfs_lease *h = take(a, held, "host-a", NULL);
	cluster("pause", paused);
	int64_t t0 = lockfs_mono_us();
	for (int i = 0; i < 5; i++) {
		g_autofree char *k = lockfs_contract_key("paused.lock");
		lockfs_holder who = lockfs_contract_holder("host-a", i);
		lockfs_lease *l = NULL;
		g_assert_cmpint(BOUNDED(3000000, a->acquire(a, k, &who, NULL, 0, &l, NULL)), ==, 0);
		g_assert_cmpint(BOUNDED(3000000, a->renew(a, h)), ==, 0);
		g_assert_cmpint(BOUNDED(3000000, a->release(a, l)), ==, 0);
		a->lease_free(a, l);
	}
	/* Fifteen calls, of which only those after the member's 2 s in the
	 * penalty box try it again (a second each at most). */
	g_test_message("15 calls with a member paused took %.1f s",
	               (double)(lockfs_mono_us() - t0) / G_USEC_PER_SEC);
	cluster("resume", paused);
	cluster("wait", -1);
	give(a, h);
	a->destroy(a);
}

/* KEY taken by BE (released at once) or not: acquire's answer. */
static int try_take_eexist(lockfs_backend *be, const char *key)
{
	lockfs_holder who = lockfs_contract_holder("host-b", 3);
	lockfs_lease *l = NULL;
	int r = be->acquire(be, key, &who, NULL, 0, &l, NULL);
	if (r == 0)
		give(be, l);
	return r;
}

/* The leader is killed (-9) while a mount holds locks: every lock stays
 * held (no renewal says ESTALE; at worst EIO while the election runs),
 * acquisitions resume once a new leader is elected, every call bounded. */
static void test_leader_killed(void)
{
	NEED(skip_reason);
	const int64_t timeout_us = 2000000;
	lockfs_backend *a = backend_on(NULL, "/a", "6s", "2s");
	lockfs_backend *b = backend_on(NULL, "/b", "6s", "2s");
	enum {
		N = 5
	};
	lockfs_lease *l[N];
	char *keys[N];
	for (int i = 0; i < N; i++) {
		keys[i] = lockfs_contract_key("ha.lock");
		l[i] = take(a, keys[i], "host-a", NULL);
	}
	int dead = leader();
	int64_t killed = lockfs_mono_us();
	cluster("kill", dead);
	/* Until host b is granted a new lock and host a's renewals succeed
	 * again: bounded by 20 s. */
	bool granted = false, renewed = false;
	int64_t first_ok = 0;
	while (!granted || !renewed) {
		g_assert_cmpint(lockfs_mono_us() - killed, <, 20 * G_USEC_PER_SEC);
		renewed = true;
		for (int i = 0; i < N; i++) {
			int r = BOUNDED(timeout_us, a->renew(a, l[i]));
			g_assert_true(r == 0 || r == -EIO);
			renewed = renewed && r == 0;
		}
		if (!granted) {
			g_autofree char *k = lockfs_contract_key("after-election.lock");
			lockfs_holder who = lockfs_contract_holder("host-b", 2);
			lockfs_lease *got = NULL;
			int r = BOUNDED(timeout_us, b->acquire(b, k, &who, NULL, 0, &got, NULL));
			g_assert_true(r == 0 || r == -EIO);
			if (r == 0) {
				granted = true;
				first_ok = lockfs_mono_us();
				give(b, got);
			}
		}
		if (!granted || !renewed)
			g_usleep(100 * 1000);
	}
	g_test_message("acquisitions resumed %.1f s after the leader was killed",
	               (double)(first_ok - killed) / G_USEC_PER_SEC);
	for (int i = 0; i < N; i++) {
		lockfs_lock_info info;
		g_assert_cmpint(b->inspect(b, keys[i], &info), ==, 0);
		g_assert_cmpstr(info.fence, ==, l[i]->fence);
		g_assert_cmpstr(info.holder.host, ==, "host-a");
		lockfs_lock_info_clear(&info);
		g_assert_cmpint(try_take_eexist(b, keys[i]), ==, -EEXIST);
	}
	cluster("start-member", dead);
	cluster("wait", -1);
	for (int i = 0; i < N; i++) {
		give(a, l[i]);
		g_free(keys[i]);
	}
	a->destroy(a);
	b->destroy(b);
}

/* ---- restart: resume() and adopt() ---- */

/* What the filesystem records of a held lock for the next instance. */
typedef struct {
	char *identity;
	GString *session, *token;
	char fence[LOCKFS_FENCE_MAX];
} recorded;

/* Take KEY through a new instance of mount MOUNT, record what a restart
 * needs, and stop the instance as lockfs stops: the lease freed without a
 * release, then destroy(). */
static recorded take_and_stop(const char *mount, const char *key, const char *ttl,
                              const char *timeout)
{
	lockfs_backend *a = backend_on(NULL, mount, ttl, timeout);
	lockfs_lease *l = take(a, key, "host-a", "99\n");
	recorded r = { .session = g_string_new(NULL), .token = g_string_new(NULL) };
	r.identity = a->identity(a);
	g_assert_nonnull(r.identity);
	for (const char *c = r.identity; *c; c++)
		g_assert_true(*c >= 0x20 && *c <= 0x7e);
	g_assert_cmpint(a->session_token(a, r.session), ==, 0);
	g_assert_cmpint(a->lease_token(a, l, r.token), ==, 0);
	g_assert_cmpuint(r.session->len, <=, LOCKFS_TOKEN_MAX);
	g_assert_cmpuint(r.token->len, <=, LOCKFS_TOKEN_MAX);
	g_strlcpy(r.fence, l->fence, sizeof(r.fence));
	a->lease_free(a, l);
	a->destroy(a);
	return r;
}

static void recorded_clear(recorded *r)
{
	g_free(r->identity);
	g_string_free(r->session, TRUE);
	g_string_free(r->token, TRUE);
}

static int adopt(lockfs_backend *be, const char *key, const char *fence, const char *token,
                 lockfs_lease **out)
{
	lockfs_holder who = lockfs_contract_holder("host-a", 4242);
	*out = NULL;
	int r = be->adopt(be, key, fence, token, &who, "99\n", 3, out);
	if (r)
		g_assert_null(*out);
	return r;
}

/* KEY's holder as BE sees it: asserts FENCE and HOST. */
static void held_by(lockfs_backend *be, const char *key, const char *fence, const char *host)
{
	lockfs_lock_info info;
	g_assert_cmpint(be->inspect(be, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, fence);
	g_assert_cmpstr(info.holder.host, ==, host);
	lockfs_lock_info_clear(&info);
}

/* Lease ID's TTL as etcd says (-1: it has no such lease). */
static int64_t lease_ttl(const char *id)
{
	etcd_client_opts co = { 0 };
	co.endpoints = g_strsplit(endpoints, ";", -1);
	etcd_client *cl = etcd_client_new(&co);
	g_autofree char *body = g_strdup_printf("{\"ID\":\"%s\"}", id);
	JsonNode *out = NULL;
	g_autofree char *why = NULL;
	if (etcd_call(cl, "/v3/lease/timetolive", body, lockfs_mono_us() + 5 * G_USEC_PER_SEC, &out,
	              &why) != 0)
		g_error("timetolive %s: %s", id, why);
	int64_t ttl = etcd_json_int(json_node_get_object(out), "TTL", 0);
	json_node_unref(out);
	etcd_client_free(cl);
	return ttl;
}

/* A lock outlives its instance (destroy() lets go of nothing); the next
 * instance of the mount resumes the mount lease, adopts the lock and keeps
 * it past the lease's TTL; then releases it, for others to take. */
static void test_restart_adopt(void)
{
	NEED(skip_reason);
	g_autofree char *key = lockfs_contract_key("restart.lock");
	recorded rec = take_and_stop("/r", key, "3s", "1s");
	g_test_message("identity %s; session token %s; lease token %s", rec.identity,
	               rec.session->str, rec.token->str);
	lockfs_backend *c = backend_on(NULL, "/c", "3s", "1s");
	g_assert_cmpint(try_take_eexist(c, key), ==, -EEXIST);
	held_by(c, key, rec.fence, "host-a");

	lockfs_backend *a = backend_on(NULL, "/r", "3s", "1s");
	g_autofree char *id = a->identity(a);
	g_assert_cmpstr(id, ==, rec.identity);
	GString *fresh = g_string_new(NULL);
	g_assert_cmpint(a->session_token(a, fresh), ==, 0);
	g_assert_cmpint(lease_ttl(strchr(fresh->str, ':') + 1), >, 0);
	g_assert_cmpint(a->resume(a, rec.session->str), ==, 0);
	/* The lease the constructor took, unused, is revoked. */
	g_assert_cmpint(lease_ttl(strchr(fresh->str, ':') + 1), ==, -1);
	g_string_free(fresh, TRUE);
	lockfs_lease *l = NULL;
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &l), ==, 0);
	g_assert_cmpstr(l->key, ==, key);
	g_assert_cmpstr(l->fence, ==, rec.fence);
	GString *s = g_string_new(NULL), *t = g_string_new(NULL);
	g_assert_cmpint(a->session_token(a, s), ==, 0);
	g_assert_cmpstr(s->str, ==, rec.session->str);
	g_assert_cmpint(a->lease_token(a, l, t), ==, 0);
	g_assert_cmpstr(t->str, ==, rec.token->str);
	g_string_free(s, TRUE);
	g_string_free(t, TRUE);
	lockfs_lock_info info;
	g_assert_cmpint(a->inspect(a, key, &info), ==, 0);
	g_assert_true(info.mine);
	g_assert_cmpint(info.lease_left_ms, >, 0);
	g_assert_cmpmem(info.content, info.content_len, "99\n", 3);
	lockfs_lock_info_clear(&info);

	/* Renewed past the lease's TTL (4 s): the resumed lease is this
	 * instance's, kept alive by its renewals. */
	lockfs_beat beat = { .heartbeat_us = lockfs_now_us(),
		             .content = "100\n",
		             .content_len = 4 };
	int64_t end = lockfs_mono_us() + 6 * G_USEC_PER_SEC;
	while (lockfs_mono_us() < end) {
		g_assert_cmpint(a->renew(a, l), ==, 0);
		g_assert_cmpint(a->heartbeat(a, l, &beat), ==, 0);
		g_usleep(500 * 1000);
	}
	g_assert_cmpint(try_take_eexist(c, key), ==, -EEXIST);
	g_assert_cmpint(c->inspect(c, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, rec.fence);
	g_assert_cmpmem(info.content, info.content_len, "100\n", 4);
	lockfs_lock_info_clear(&info);
	give(a, l);
	give(c, take(c, key, "host-c", NULL));
	a->destroy(a);
	c->destroy(c);
	recorded_clear(&rec);
}

/* The previous instance's lease ran out: resume() answers ESTALE and adopt()
 * grants nothing; the instance takes a new lease for its next lock. */
static void test_resume_expired(void)
{
	NEED(skip_reason);
	g_autofree char *key = lockfs_contract_key("expired.lock");
	recorded rec = take_and_stop("/x", key, "2s", "1s");
	lockfs_backend *c = backend_on(NULL, "/c", "3s", "1s");
	/* Nothing keeps it alive: etcd deletes the key with the lease (3 s). */
	lockfs_lock_info info;
	int64_t end = lockfs_mono_us() + 20 * G_USEC_PER_SEC;
	int r;
	while ((r = c->inspect(c, key, &info)) == 0) {
		lockfs_lock_info_clear(&info);
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(r, ==, -ENOENT);
	lockfs_backend *a = backend_on(NULL, "/x", "2s", "1s");
	g_assert_cmpint(a->resume(a, rec.session->str), ==, -ESTALE);
	lockfs_lease *l = NULL;
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &l), ==, -ESTALE);
	g_assert_cmpint(c->inspect(c, key, &info), ==, -ENOENT);
	GString *s = g_string_new(NULL);
	g_assert_cmpint(a->session_token(a, s), ==, 0);
	g_assert_cmpstr(s->str, !=, rec.session->str);
	g_string_free(s, TRUE);
	l = take(a, key, "host-a", NULL);
	g_assert_cmpint(lockfs_fence_cmp(l->fence, rec.fence), >, 0);
	g_assert_cmpint(a->renew(a, l), ==, 0);
	give(a, l);
	a->destroy(a);
	c->destroy(c);
	recorded_clear(&rec);
}

/* A lease granted for a ttl far shorter than this instance's cannot carry
 * its locks to the deadlines it would promise: given up, never trusted. */
static void test_resume_short_lease(void)
{
	NEED(skip_reason);
	g_autofree char *key = lockfs_contract_key("short.lock");
	recorded rec = take_and_stop("/s", key, "2s", "1s"); /* a lease of 3 s */
	lockfs_backend *a = backend_on(NULL, "/s", "9s", "1s");
	g_assert_cmpint(a->resume(a, rec.session->str), ==, -ESTALE);
	lockfs_lease *l = NULL;
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &l), ==, -ESTALE);
	held_by(a, key, rec.fence, "host-a");
	a->destroy(a);
	recorded_clear(&rec);
}

/* The lock was broken and taken by another instance while no instance of
 * its mount ran: adopt() answers ESTALE and leaves the new holder's key. */
static void test_adopt_retaken(void)
{
	NEED(skip_reason);
	g_autofree char *key = lockfs_contract_key("retaken.lock");
	recorded rec = take_and_stop("/t", key, "3s", "1s");
	lockfs_backend *c = backend_on(NULL, "/c", "3s", "1s");
	g_assert_cmpint(c->break_lock(c, key, rec.fence, NULL, NULL), ==, 0);
	lockfs_lease *lc = take(c, key, "host-c", NULL);
	lockfs_backend *a = backend_on(NULL, "/t", "3s", "1s");
	g_assert_cmpint(a->resume(a, rec.session->str), ==, 0);
	lockfs_lease *l = NULL;
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &l), ==, -ESTALE);
	/* Nor with the new holder's fence: the token's revision is the old one. */
	g_assert_cmpint(adopt(a, key, lc->fence, rec.token->str, &l), ==, -ESTALE);
	held_by(a, key, lc->fence, "host-c");
	g_assert_cmpint(c->renew(c, lc), ==, 0);
	give(c, lc);
	a->destroy(a);
	c->destroy(c);
	recorded_clear(&rec);
}

/* Tokens this backend did not write: EINVAL, and nothing changes. */
static void test_bad_tokens(void)
{
	NEED(skip_reason);
	g_autofree char *key = lockfs_contract_key("tokens.lock");
	recorded rec = take_and_stop("/k", key, "3s", "1s");
	lockfs_backend *a = backend_on(NULL, "/k", "3s", "1s");
	GString *before = g_string_new(NULL), *after = g_string_new(NULL);
	g_assert_cmpint(a->session_token(a, before), ==, 0);
	const char *id = strchr(rec.session->str, ':') + 1;
	g_autofree char *lead0 = g_strdup_printf("etcd-lease:0%s", id);
	g_autofree char *space = g_strdup_printf("etcd-lease:%s ", id);
	g_autofree char *bare = g_strdup(id);
	const char *sessions[] = { "",
		                   "etcd-lease:",
		                   "etcd-lease:0",
		                   "etcd-lease:-5",
		                   "etcd-lease:+5",
		                   "etcd-lease:99999999999999999999",
		                   lead0,
		                   space,
		                   bare,
		                   rec.token->str,
		                   "ldap-session:5" };
	for (size_t i = 0; i < G_N_ELEMENTS(sessions); i++)
		if (a->resume(a, sessions[i]) != -EINVAL)
			g_error("resume('%s') did not answer EINVAL", sessions[i]);
	g_assert_cmpint(a->session_token(a, after), ==, 0);
	g_assert_cmpstr(after->str, ==, before->str);

	const char *nonce = strrchr(rec.token->str, ':') + 1;
	g_autofree char *upper = g_ascii_strup(rec.token->str, -1);
	g_autofree char *up = g_ascii_strup(nonce, -1);
	g_autofree char *nonce_upper = g_strdup_printf("etcd-key:%s:%s", rec.fence, up);
	g_autofree char *short_nonce = g_strndup(rec.token->str, rec.token->len - 1);
	g_autofree char *long_nonce = g_strdup_printf("%s0", rec.token->str);
	g_autofree char *zero_rev = g_strdup_printf("etcd-key:0:%s", nonce);
	g_autofree char *no_rev = g_strdup_printf("etcd-key::%s", nonce);
	const char *tokens[] = { "",     "etcd-key:", rec.fence,     rec.session->str,
		                 upper,  short_nonce, long_nonce,    zero_rev,
		                 no_rev, nonce_upper, "etcd-key:5:", "etcd-key:5" };
	lockfs_lease *l = NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(tokens); i++)
		if (adopt(a, key, rec.fence, tokens[i], &l) != -EINVAL)
			g_error("adopt(token '%s') did not answer EINVAL", tokens[i]);
	const char *fences[] = { "", "abc", "-1", "0", "012" };
	for (size_t i = 0; i < G_N_ELEMENTS(fences); i++)
		if (adopt(a, key, fences[i], rec.token->str, &l) != -EINVAL)
			g_error("adopt(fence '%s') did not answer EINVAL", fences[i]);
	g_assert_cmpint(adopt(a, "", rec.fence, rec.token->str, &l), ==, -EINVAL);
	held_by(a, key, rec.fence, "host-a");

	/* A token of the right form but another nonce: not this lock. */
	g_assert_cmpint(a->resume(a, rec.session->str), ==, 0);
	g_autofree char *other = g_strdup_printf("etcd-key:%s:%032x", rec.fence, 7);
	g_assert_cmpint(adopt(a, key, rec.fence, other, &l), ==, -ESTALE);
	held_by(a, key, rec.fence, "host-a");
	/* The true token still works, once. */
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &l), ==, 0);
	lockfs_lease *again = NULL;
	g_assert_cmpint(adopt(a, key, rec.fence, rec.token->str, &again), ==, -EINVAL);
	give(a, l);
	g_string_free(before, TRUE);
	g_string_free(after, TRUE);
	a->destroy(a);
	recorded_clear(&rec);
}

/* ---- TLS and users: a one-member cluster of its own ---- */

/* POST BODY to PATH through CL; asserts success. */
static void admin(etcd_client *cl, const char *path, const char *body)
{
	JsonNode *out = NULL;
	g_autofree char *why = NULL;
	if (etcd_call(cl, path, body, lockfs_mono_us() + 5 * G_USEC_PER_SEC, &out, &why) != 0)
		g_error("%s %s: %s", path, body, why);
	json_node_unref(out);
}

/* An instance from OPTS (NULL-terminated, after backend=etcd), or NULL with
 * the constructor's error in *ERR. */
static lockfs_backend *backend_opts(const char *const *opts, char **err)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *e = NULL;
	bool for_fuse;
	g_assert_true(lockfs_config_set_option(cfg, "backend=etcd", &for_fuse, &e));
	g_assert_true(lockfs_config_set_option(cfg, "network_timeout=2s", &for_fuse, &e));
	for (const char *const *o = opts; *o; o++)
		g_assert_true(lockfs_config_set_option(cfg, *o, &for_fuse, &e));
	g_assert_true(lockfs_config_finish(cfg, &e));
	lockfs_backend *be = lockfs_backend_type_find("etcd")->create(cfg, "/tls", &e);
	lockfs_config_free(cfg);
	if (!be) {
		g_assert_nonnull(e);
		g_assert_null(strchr(e->message, '\n'));
		*err = g_strdup(e->message);
		g_error_free(e);
	}
	return be;
}

static void take_give(lockfs_backend *be)
{
	g_autofree char *k = lockfs_contract_key("tls.lock");
	give(be, take(be, k, "host-tls", NULL));
}

/* The one-member TLS cluster of test_tls_users: etcd.sh's variables, and
 * the mount options naming its endpoint, CA and client certificate. */
typedef struct {
	GHashTable *vars;
	const char *url, *ca, *cert, *key;
	char *o_ep, *o_ca, *o_cert, *o_key;
} tls_cluster;

/* The CA and a client certificate: served; without a client certificate,
 * or with another CA, refused. */
static void tls_certificates(const tls_cluster *t)
{
	char *e = NULL;
	/* The CA and a client certificate: served. */
	const char *good[] = { t->o_ep, t->o_ca, t->o_cert, t->o_key, prefix_opt, NULL };
	lockfs_backend *be = backend_opts(good, &e);
	if (!be)
		g_error("TLS with CA and client certificate: %s", e);
	take_give(be);
	be->destroy(be);
	/* Without a client certificate the member refuses the handshake. */
	const char *no_cert[] = { t->o_ep, t->o_ca, NULL };
	g_assert_null(backend_opts(no_cert, &e));
	g_assert_nonnull(strstr(e, "cannot get a lease from https://"));
	g_clear_pointer(&e, g_free);
	/* Another CA (the system's) does not vouch for the member. */
	const char *other_ca[] = { t->o_ep, t->o_cert, t->o_key, NULL };
	g_assert_null(backend_opts(other_ca, &e));
	g_assert_nonnull(strstr(e, "cannot get a lease from https://"));
	g_clear_pointer(&e, g_free);
}

/* Users: root, and lockfs with read-write on the test prefix only; then
 * authentication on. */
static void tls_add_users(const tls_cluster *t)
{
	const char *prefix = strchr(prefix_opt, '=') + 1;
	size_t end_len = strlen(prefix);
	g_autofree char *end = g_strdup(prefix);
	end[end_len - 1]++;
	g_autofree char *p64 = etcd_b64(prefix, strlen(prefix));
	g_autofree char *e64 = etcd_b64(end, end_len);
	etcd_client_opts co = { 0 };
	co.endpoints = g_new0(char *, 2);
	co.endpoints[0] = g_strdup(t->url);
	co.ca_file = g_strdup(t->ca);
	co.cert_file = g_strdup(t->cert);
	co.key_file = g_strdup(t->key);
	etcd_client *cl = etcd_client_new(&co);
	admin(cl, "/v3/auth/user/add", "{\"name\":\"root\",\"password\":\"rootpw\"}");
	admin(cl, "/v3/auth/role/add", "{\"name\":\"root\"}");
	admin(cl, "/v3/auth/user/grant", "{\"user\":\"root\",\"role\":\"root\"}");
	admin(cl, "/v3/auth/role/add", "{\"name\":\"lockfs\"}");
	g_autofree char *perm = g_strdup_printf(
	        "{\"name\":\"lockfs\",\"perm\":{\"permType\":\"READWRITE\",\"key\":\"%s\","
	        "\"range_end\":\"%s\"}}",
	        p64, e64);
	admin(cl, "/v3/auth/role/grant", perm);
	admin(cl, "/v3/auth/user/add", "{\"name\":\"lockfs\",\"password\":\"lockfs pw\"}");
	admin(cl, "/v3/auth/user/grant", "{\"user\":\"lockfs\",\"role\":\"lockfs\"}");
	admin(cl, "/v3/auth/enable", "{}");
	etcd_client_free(cl);
}

/* A file in tmpdir named NAME holding TEXT, mode 0600: its path. */
static char *secret_file(const char *name, const char *text)
{
	char *path = g_build_filename(tmpdir, name, NULL);
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	g_assert_cmpint(chmod(path, 0600), ==, 0);
	return path;
}

/* User lockfs with its password: served, with a certificate without a
 * CommonName, inside the prefix it may write; refused with a wrong
 * password; refused the grant outside the prefix. */
static void tls_users_sign_in(const tls_cluster *t)
{
	char *e = NULL;
	g_autofree char *pw = secret_file("etcd.password", "lockfs pw\n");
	g_autofree char *bad = secret_file("etcd.bad-password", "wrong\n");
	/* With authentication on, etcd refuses gateway requests whose client
	 * certificate has a CommonName (which would name the user): */
	const char *cn[] = { t->o_ep, t->o_ca, t->o_cert, t->o_key, NULL };
	g_assert_null(backend_opts(cn, &e));
	g_assert_nonnull(strstr(e, "CommonName of client"));
	g_clear_pointer(&e, g_free);
	/* users go with a certificate without one. */
	g_autofree char *o_cert_nocn = g_strdup_printf(
	        "etcd_cert_file=%s", (char *)g_hash_table_lookup(t->vars, "ETCD_NOCN_CERT_FILE"));
	g_autofree char *o_key_nocn = g_strdup_printf(
	        "etcd_key_file=%s", (char *)g_hash_table_lookup(t->vars, "ETCD_NOCN_KEY_FILE"));
	g_autofree char *o_pw = g_strdup_printf("etcd_password_file=%s", pw);
	g_autofree char *o_bad = g_strdup_printf("etcd_password_file=%s", bad);
	const char *user[] = { t->o_ep,    t->o_ca,    o_cert_nocn,
		               o_key_nocn, prefix_opt, "etcd_user=lockfs",
		               o_pw,       NULL };
	lockfs_backend *be = backend_opts(user, &e);
	if (!be)
		g_error("a user with a password file: %s", e);
	take_give(be);
	be->destroy(be);
	const char *wrong[] = { t->o_ep, t->o_ca, o_cert_nocn, o_key_nocn, "etcd_user=lockfs",
		                o_bad,   NULL };
	g_assert_null(backend_opts(wrong, &e));
	g_assert_nonnull(strstr(e, "authenticating as etcd user lockfs"));
	g_clear_pointer(&e, g_free);
	/* A prefix the user may not write: the grant is refused, as an error. */
	const char *outside[] = { t->o_ep,
		                  t->o_ca,
		                  o_cert_nocn,
		                  o_key_nocn,
		                  "etcd_prefix=/elsewhere/",
		                  "etcd_user=lockfs",
		                  o_pw,
		                  NULL };
	be = backend_opts(outside, &e);
	g_assert_nonnull(be);
	g_autofree char *k = lockfs_contract_key("denied.lock");
	lockfs_holder who = lockfs_contract_holder("host-tls", 1);
	lockfs_lease *l = NULL;
	g_assert_cmpint(be->acquire(be, k, &who, NULL, 0, &l, NULL), ==, -EIO);
	g_assert_null(l);
	be->destroy(be);
}

static void test_tls_users(void)
{
	NEED(skip_reason);
	GHashTable *vars = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
	g_autofree char *err = NULL;
	g_autofree char *dir = g_build_filename(tmpdir, "etcd-tls", NULL);
	g_autofree char *self = g_strdup_printf("%d", (int)getpid());
	const char *start[] = { "start", dir, "--members", "1", "--tls", "--watch", self, NULL };
	if (run_script(script, start, vars, &err) != 0) {
		g_hash_table_destroy(vars);
		g_autofree char *why = g_strdup_printf("no TLS etcd: %s", err);
		g_test_skip(why);
		return;
	}
	tls_cluster t = { .vars = vars };
	t.url = g_hash_table_lookup(vars, "ETCD_ENDPOINT_0");
	t.ca = g_hash_table_lookup(vars, "ETCD_CA_FILE");
	t.cert = g_hash_table_lookup(vars, "ETCD_CERT_FILE");
	t.key = g_hash_table_lookup(vars, "ETCD_KEY_FILE");
	g_assert_true(g_str_has_prefix(t.url, "https://"));
	g_autofree char *o_ep G_GNUC_UNUSED = t.o_ep = g_strdup_printf("etcd_endpoints=%s", t.url);
	g_autofree char *o_ca G_GNUC_UNUSED = t.o_ca = g_strdup_printf("etcd_ca_file=%s", t.ca);
	g_autofree char *o_cert G_GNUC_UNUSED = t.o_cert =
	        g_strdup_printf("etcd_cert_file=%s", t.cert);
	g_autofree char *o_key G_GNUC_UNUSED = t.o_key = g_strdup_printf("etcd_key_file=%s", t.key);
	tls_certificates(&t);
	tls_add_users(&t);
	tls_users_sign_in(&t);

	const char *stop[] = { "stop", dir, NULL };
	g_clear_pointer(&err, g_free);
	run_script(script, stop, NULL, &err);
	g_hash_table_destroy(vars);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);
	lockfs_log_init("test_etcd_backend", true,
	                g_getenv("LOCKFS_TEST_VERBOSE") ? "debug" : "error");
	lockfs_backends_register_config();
	tmpdir = g_build_filename(g_get_tmp_dir(), "lockfs-etcd-XXXXXX", NULL);
	g_assert_nonnull(g_mkdtemp(tmpdir));
	script = g_strdup(ETCD_SH);
	start_cluster();
	if (endpoints) {
		endpoints_opt = g_strdup_printf("etcd_endpoints=%s", endpoints);
		/* Each run has keys of its own, whatever an earlier run left. */
		prefix_opt = g_strdup_printf("etcd_prefix=/lockfs-test-%d/", (int)getpid());
	} else {
		endpoints_opt = g_strdup("etcd_endpoints=http://127.0.0.1:9");
		prefix_opt = g_strdup("etcd_prefix=/lockfs-test/");
	}
	contract_options[0] = "backend=etcd";
	contract_options[1] = endpoints_opt;
	contract_options[2] = prefix_opt;
	contract_options[3] = NULL;

	g_test_add_func("/etcd/record", test_record);
	g_test_add_func("/etcd/config", test_config);
	lockfs_contract_add(&etcd_contract);
	g_test_add_func("/etcd/content-shared", test_content_shared);
	g_test_add_func("/etcd/lease-per-mount", test_lease_per_mount);
	g_test_add_func("/etcd/abandoned", test_abandoned);
	g_test_add_func("/etcd/unanswered-put", test_unanswered_put);
	g_test_add_func("/etcd/member-paused", test_member_paused);
	g_test_add_func("/etcd/leader-killed", test_leader_killed);
	g_test_add_func("/etcd/restart-adopt", test_restart_adopt);
	g_test_add_func("/etcd/resume-expired", test_resume_expired);
	g_test_add_func("/etcd/resume-short-lease", test_resume_short_lease);
	g_test_add_func("/etcd/adopt-retaken", test_adopt_retaken);
	g_test_add_func("/etcd/bad-tokens", test_bad_tokens);
	g_test_add_func("/etcd/tls-users", test_tls_users);
	int rc = g_test_run();

	stop_cluster();
	if (!g_getenv("LOCKFS_TEST_KEEP")) {
		const char *rm[] = { "rm", "-rf", tmpdir, NULL };
		g_spawn_sync(NULL, (char **)rm, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, NULL, NULL,
		             NULL, NULL);
	}
	return rc;
}
