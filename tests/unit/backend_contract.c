/* The backend contract suite (see backend_contract.h): the rules of
 * include/lockfs/backend.h checked through the interface alone, so that
 * every backend is held to the same ones. */
#include "backend_contract.h"

#include "holder.h"
#include "test_util.h"

#include <errno.h>
#include <lockfs/backends.h>
#include <string.h>
#include <unistd.h>

/* Every test skips while the fixture says why it cannot run. */
#define NEED_SERVER(c) NEED((c)->skip ? *(c)->skip : NULL)

static int key_serial;

lockfs_backend *lockfs_contract_backend(const lockfs_contract *c, const char *mount_id,
                                        const char *ttl, const char *stale_after,
                                        const char *timeout)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	bool for_fuse;
	g_autofree char *t = g_strdup_printf("ttl=%s", ttl);
	g_autofree char *s = g_strdup_printf("stale_after=%s", stale_after);
	g_autofree char *n = g_strdup_printf("network_timeout=%s", timeout);
	const char *general[] = { t, s, n, "heartbeat_min_interval=100ms", NULL };
	bool ok = true;
	for (const char *const *o = c->options; ok && *o; o++)
		ok = lockfs_config_set_option(cfg, *o, &for_fuse, &err);
	for (const char *const *o = general; ok && *o; o++)
		ok = lockfs_config_set_option(cfg, *o, &for_fuse, &err);
	ok = ok && lockfs_config_finish(cfg, &err);
	g_assert_no_error(err);
	lockfs_backend *be = lockfs_backend_type_find(c->backend)->create(cfg, mount_id, &err);
	g_assert_no_error(err);
	g_assert_nonnull(be);
	g_assert_cmpuint(be->version, ==, LOCKFS_BACKEND_VERSION);
	lockfs_config_free(cfg);
	return be;
}

lockfs_holder lockfs_contract_holder(const char *host, int64_t pid)
{
	lockfs_holder h = { 0 };
	h.host = (char *)host;
	h.pid = pid;
	h.uid = 1000;
	h.gid = 100;
	h.user = (char *)"tester";
	h.command = (char *)"backend contract";
	h.acquired_us = h.heartbeat_us = lockfs_now_us();
	h.mode = 0100644;
	return h;
}

char *lockfs_contract_key(const char *name)
{
	return g_strdup_printf("c%d-%d/%s", (int)getpid(), g_atomic_int_add(&key_serial, 1), name);
}

static bool is_fence(const char *f)
{
	return *f && strspn(f, "0123456789") == strlen(f);
}

/* LEASE's fence made final where the backend confirms fences. */
static void confirmed(lockfs_backend *be, lockfs_lease *lease)
{
	if (be->confirm)
		g_assert_cmpint(be->confirm(be, lease, lease->fence), ==, 0);
}

/* Where a grant's holder record is published after it
 * (LOCKFS_BACKEND_UNDESCRIBED: tinystore's come some 50 ms later), wait,
 * bounded by 5 s, until BE's inspect shows KEY with FENCE; other backends'
 * records are there at the grant. */
static void described(lockfs_backend *be, const char *key, const char *fence)
{
	if (!(be->flags & LOCKFS_BACKEND_UNDESCRIBED))
		return;
	int64_t end = lockfs_mono_us() + 5 * G_USEC_PER_SEC;
	for (;;) {
		lockfs_lock_info info;
		if (be->inspect(be, key, &info) == 0) {
			bool there = strcmp(info.fence, fence) == 0;
			lockfs_lock_info_clear(&info);
			if (there)
				return;
		}
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_usleep(20 * 1000);
	}
}

/* Take KEY through BE: asserts a grant with a fence, returns the lease.
 * Where fences are final only once confirmed (LDAP), the fence is confirmed
 * at once and lease->fence is the final one, as the filesystem shows it. */
static lockfs_lease *take(lockfs_backend *be, const char *key, const char *host)
{
	lockfs_holder h = lockfs_contract_holder(host, 4242);
	lockfs_lease *lease = NULL;
	lockfs_acquire_result res;
	g_assert_cmpint(be->acquire(be, key, &h, NULL, 0, &lease, &res), ==, 0);
	g_assert_nonnull(lease);
	g_assert_false(res.broke);
	g_assert_cmpstr(lease->key, ==, key);
	confirmed(be, lease);
	g_assert_true(is_fence(lease->fence));
	described(be, key, lease->fence);
	return lease;
}

static int try_take(lockfs_backend *be, const char *key, const char *host)
{
	lockfs_holder h = lockfs_contract_holder(host, 77);
	lockfs_lease *lease = NULL;
	int r = be->acquire(be, key, &h, NULL, 0, &lease, NULL);
	if (r == 0) {
		g_assert_cmpint(be->release(be, lease), ==, 0);
		be->lease_free(be, lease);
	} else {
		g_assert_null(lease);
	}
	return r;
}

/* Release LEASE; where records are published after the fact
 * (LOCKFS_BACKEND_UNDESCRIBED), their removal too: wait, bounded by 5 s,
 * until VIEW (another host) no longer shows LEASE's record. */
static void give_seen(lockfs_backend *be, lockfs_lease *lease, lockfs_backend *view)
{
	g_autofree char *key = g_strdup(lease->key);
	char fence[LOCKFS_FENCE_MAX];
	g_strlcpy(fence, lease->fence, sizeof(fence));
	g_assert_cmpint(be->release(be, lease), ==, 0);
	be->lease_free(be, lease);
	int64_t end = lockfs_mono_us() + 5 * G_USEC_PER_SEC;
	while (view->flags & LOCKFS_BACKEND_UNDESCRIBED) {
		lockfs_lock_info info;
		if (view->inspect(view, key, &info) != 0)
			return;
		bool gone = strcmp(info.fence, fence) != 0;
		lockfs_lock_info_clear(&info);
		if (gone)
			return;
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_usleep(20 * 1000);
	}
}

/* give_seen with BE its own view (test_util.h's give waits for nothing). */
static void give_own(lockfs_backend *be, lockfs_lease *lease)
{
	give_seen(be, lease, be);
}

typedef struct {
	lockfs_backend *a, *b; /* two hosts (one instance when not shared) */
} hosts;

static hosts two_hosts(const lockfs_contract *c, const char *ttl, const char *stale)
{
	hosts h;
	/* The network timeout must be shorter than ttl: 1 s does for all. */
	h.a = lockfs_contract_backend(c, "/contract/a", ttl, stale, "1s");
	h.b = c->shared ? lockfs_contract_backend(c, "/contract/b", ttl, stale, "1s") : h.a;
	return h;
}

static void hosts_free(hosts *h)
{
	if (h->b != h->a)
		h->b->destroy(h->b);
	h->a->destroy(h->a);
}

/* ---- the tests ---- */

static void test_acquire_eexist(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *key = lockfs_contract_key("busy.lock");
	lockfs_lease *l = take(h.a, key, "host-a");
	g_assert_cmpint(try_take(h.a, key, "host-a"), ==, -EEXIST);
	g_assert_cmpint(try_take(h.b, key, "host-b"), ==, -EEXIST);
	lockfs_lock_info info;
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
	g_assert_cmpstr(info.key, ==, key);
	g_assert_cmpstr(info.fence, ==, l->fence);
	g_assert_cmpstr(info.holder.host, ==, "host-a");
	g_assert_cmpint(info.holder.pid, ==, 4242);
	g_assert_cmpint(info.state, ==, LOCKFS_STATE_HELD);
	g_assert_true(info.mine == !c->shared);
	lockfs_lock_info_clear(&info);
	g_assert_cmpint(h.a->inspect(h.a, key, &info), ==, 0);
	g_assert_true(info.mine);
	lockfs_lock_info_clear(&info);
	give_seen(h.a, l, h.b);
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, -ENOENT);
	g_assert_cmpint(try_take(h.b, key, "host-b"), ==, 0);
	hosts_free(&h);
}

static void test_release_only_own(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *key = lockfs_contract_key("own.lock");
	lockfs_lease *old = take(h.a, key, "host-a");
	lockfs_holder breaker = lockfs_contract_holder("host-b", 9);
	g_assert_cmpint(h.b->break_lock(h.b, key, old->fence, &breaker, NULL), ==, 0);
	lockfs_lease *newer = take(h.b, key, "host-b");
	g_assert_cmpint(lockfs_fence_cmp(newer->fence, old->fence), >, 0);
	/* A late release with the old fence deletes nothing. */
	g_assert_cmpint(h.a->release(h.a, old), ==, -ENOENT);
	h.a->lease_free(h.a, old);
	lockfs_lock_info info;
	g_assert_cmpint(h.a->inspect(h.a, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, newer->fence);
	g_assert_cmpstr(info.holder.host, ==, "host-b");
	lockfs_lock_info_clear(&info);
	g_assert_cmpint(try_take(h.a, key, "host-a"), ==, -EEXIST);
	give_own(h.b, newer);
	hosts_free(&h);
}

static void test_break_with_fence(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *key = lockfs_contract_key("break.lock");
	lockfs_lease *l = take(h.a, key, "host-a");
	lockfs_holder breaker = lockfs_contract_holder("host-b", 9);
	g_autofree char *wrong = g_strconcat(l->fence, "0", NULL);
	lockfs_lock_info broken = { 0 };
	g_assert_cmpint(h.b->break_lock(h.b, key, wrong, &breaker, &broken), ==, -ENOENT);
	lockfs_lock_info info;
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, l->fence);
	lockfs_lock_info_clear(&info);
	g_assert_cmpint(h.b->break_lock(h.b, key, l->fence, &breaker, &broken), ==, 0);
	g_assert_cmpstr(broken.fence, ==, l->fence);
	g_assert_cmpstr(broken.holder.host, ==, "host-a");
	lockfs_lock_info_clear(&broken);
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, -ENOENT);
	g_assert_cmpint(h.b->break_lock(h.b, key, NULL, &breaker, NULL), ==, -ENOENT);
	/* The broken holder learns it at a renewal (within a renew interval,
	 * a second here: bounded by 10 s). */
	if (h.a->flags & LOCKFS_BACKEND_LEASES) {
		int64_t end = lockfs_mono_us() + 10 * G_USEC_PER_SEC;
		int r;
		while ((r = h.a->renew(h.a, l)) == 0) {
			g_assert_cmpint(lockfs_mono_us(), <, end);
			g_usleep(100 * 1000);
		}
		g_assert_cmpint(r, ==, -ESTALE);
	}
	/* The broken holder's release deletes nothing and says so. */
	lockfs_lease *next = take(h.b, key, "host-b");
	g_assert_cmpint(h.a->release(h.a, l), ==, -ENOENT);
	h.a->lease_free(h.a, l);
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, next->fence);
	lockfs_lock_info_clear(&info);
	give_own(h.b, next);
	hosts_free(&h);
}

static void test_stale_broken_by_acquire(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "2s", "3s");
	g_autofree char *key = lockfs_contract_key("stale.lock");
	lockfs_lease *l = take(h.a, key, "host-a");
	g_assert_cmpint(try_take(h.b, key, "host-b"), ==, -EEXIST);
	/* The holder keeps its lease but never heartbeats: stale after 3 s
	 * (by the backend's clock, at a second's resolution at worst). */
	lockfs_lock_state state = LOCKFS_STATE_HELD;
	int64_t end = lockfs_mono_us() + 15 * G_USEC_PER_SEC;
	while (state != LOCKFS_STATE_STALE) {
		g_assert_cmpint(lockfs_mono_us(), <, end);
		if (h.a->flags & LOCKFS_BACKEND_LEASES)
			g_assert_cmpint(h.a->renew(h.a, l), ==, 0);
		lockfs_lock_info info;
		g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
		g_assert_cmpstr(info.fence, ==, l->fence);
		state = info.state;
		lockfs_lock_info_clear(&info);
		if (state != LOCKFS_STATE_STALE)
			g_usleep(100 * 1000);
	}
	lockfs_holder who = lockfs_contract_holder("host-b", 5);
	lockfs_lease *next = NULL;
	lockfs_acquire_result res;
	g_assert_cmpint(h.b->acquire(h.b, key, &who, NULL, 0, &next, &res), ==, 0);
	confirmed(h.b, next);
	g_assert_true(res.broke);
	described(h.b, key, next->fence);
	g_assert_cmpstr(res.previous.fence, ==, l->fence);
	g_assert_cmpstr(res.previous.holder.host, ==, "host-a");
	lockfs_lock_info_clear(&res.previous);
	g_assert_cmpint(lockfs_fence_cmp(next->fence, l->fence), >, 0);
	g_assert_cmpint(h.a->release(h.a, l), ==, -ENOENT);
	h.a->lease_free(h.a, l);
	give_own(h.b, next);
	hosts_free(&h);
}

typedef struct {
	GPtrArray *keys;
	GHashTable *fences;
} seen;

static void on_lock(const lockfs_lock_info *info, void *user)
{
	seen *s = user;
	g_ptr_array_add(s->keys, g_strdup(info->key));
	g_hash_table_insert(s->fences, g_strdup(info->key), g_strdup(info->fence));
}

static guint list_keys(lockfs_backend *be, const char *prefix, seen *s)
{
	g_ptr_array_set_size(s->keys, 0);
	g_hash_table_remove_all(s->fences);
	g_assert_cmpint(be->list(be, prefix, on_lock, s), ==, 0);
	return s->keys->len;
}

static bool listed(seen *s, const char *key, const char *fence)
{
	const char *f = g_hash_table_lookup(s->fences, key);
	return f && strcmp(f, fence) == 0;
}

static void test_list_prefix(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *dir = lockfs_contract_key("list");
	const char *names[] = { "a/1.lock", "a/2.lock", "b/3.lock", "ab.lock" };
	lockfs_lease *l[4];
	char *keys[4];
	for (int i = 0; i < 4; i++) {
		keys[i] = g_strdup_printf("%s/%s", dir, names[i]);
		l[i] = take(h.a, keys[i], "host-a");
	}
	seen s = { g_ptr_array_new_with_free_func(g_free),
		   g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free) };
	g_autofree char *pa = g_strdup_printf("%s/a/", dir);
	g_assert_cmpuint(list_keys(h.b, pa, &s), ==, 2);
	g_assert_true(listed(&s, keys[0], l[0]->fence));
	g_assert_true(listed(&s, keys[1], l[1]->fence));
	g_autofree char *pd = g_strdup_printf("%s/", dir);
	g_assert_cmpuint(list_keys(h.b, pd, &s), ==, 4);
	for (int i = 0; i < 4; i++)
		g_assert_true(listed(&s, keys[i], l[i]->fence));
	give_seen(h.a, l[1], h.b);
	g_assert_cmpuint(list_keys(h.b, pa, &s), ==, 1);
	g_assert_true(listed(&s, keys[0], l[0]->fence));
	for (int i = 0; i < 4; i++) {
		if (i != 1)
			give_seen(h.a, l[i], h.b);
		g_free(keys[i]);
	}
	g_assert_cmpuint(list_keys(h.b, pd, &s), ==, 0);
	g_ptr_array_free(s.keys, TRUE);
	g_hash_table_destroy(s.fences);
	hosts_free(&h);
}

/* B's record of KEY holds CONTENT (NUL-terminated text). */
static void shows_content(lockfs_backend *b, const char *key, const char *content)
{
	lockfs_lock_info info;
	g_assert_cmpint(b->inspect(b, key, &info), ==, 0);
	g_assert_cmpmem(info.content, info.content_len, content, strlen(content));
	lockfs_lock_info_clear(&info);
}

/* What the lock file held when it was linked is what other hosts read from
 * the grant on; heartbeats then change it, or leave it (content NULL). */
static void test_acquire_content(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	if (!c->shared) {
		g_test_skip("no other host reads this backend's locks: the filesystem keeps "
		            "their content");
		return;
	}
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *key = lockfs_contract_key("content.lock");
	lockfs_holder who = lockfs_contract_holder("host-a", 4242);
	lockfs_lease *l = NULL;
	g_assert_cmpint(h.a->acquire(h.a, key, &who, "4242\n", 5, &l, NULL), ==, 0);
	confirmed(h.a, l);
	described(h.b, key, l->fence);
	shows_content(h.b, key, "4242\n");
	lockfs_beat beat = { .heartbeat_us = lockfs_now_us(), .content = "77\n", .content_len = 3 };
	g_assert_cmpint(h.a->heartbeat(h.a, l, &beat), ==, 0);
	shows_content(h.b, key, "77\n");
	beat = (lockfs_beat){ .heartbeat_us = lockfs_now_us() };
	g_assert_cmpint(h.a->heartbeat(h.a, l, &beat), ==, 0);
	shows_content(h.b, key, "77\n");
	give_seen(h.a, l, h.b);
	/* Without content, nothing is recorded. */
	l = take(h.a, key, "host-a");
	lockfs_lock_info info;
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
	g_assert_cmpuint(info.content_len, ==, 0);
	lockfs_lock_info_clear(&info);
	give_seen(h.a, l, h.b);
	hosts_free(&h);
}

static void test_confirm(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	if (!h.a->confirm) {
		g_test_skip("this backend's fences are final at the grant (confirm is NULL)");
		hosts_free(&h);
		return;
	}
	g_autofree char *key = lockfs_contract_key("confirm.lock");
	lockfs_lease *l = take(h.a, key, "host-a");
	char fence[LOCKFS_FENCE_MAX];
	g_assert_cmpint(h.a->confirm(h.a, l, fence), ==, 0);
	g_assert_true(is_fence(fence));
	lockfs_lock_info info;
	g_assert_cmpint(h.b->inspect(h.b, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, fence);
	lockfs_lock_info_clear(&info);
	give_own(h.a, l);
	hosts_free(&h);
}

static void test_renew_estale_after_loss(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	if (!c->shared) {
		g_test_skip("needs two hosts on one server");
		return;
	}
	hosts h = two_hosts(c, "2s", "300s");
	if (!(h.a->flags & LOCKFS_BACKEND_LEASES)) {
		g_test_skip("this backend's grants are no leases");
		hosts_free(&h);
		return;
	}
	g_autofree char *key = lockfs_contract_key("lost.lock");
	lockfs_lease *l = take(h.a, key, "host-a");
	int64_t renewed = lockfs_mono_us();
	g_assert_cmpint(h.a->renew(h.a, l), ==, 0);
	/* No more renewals: the other host is refused until the lease runs
	 * out at the server, and never before the holder's own deadline (ttl
	 * less a fifth after the renewal it sent last). */
	lockfs_holder who = lockfs_contract_holder("host-b", 6);
	lockfs_lease *next = NULL;
	int64_t end = renewed + 20 * G_USEC_PER_SEC;
	for (;;) {
		int64_t sent = lockfs_mono_us();
		g_assert_cmpint(sent, <, end);
		int r = h.b->acquire(h.b, key, &who, NULL, 0, &next, NULL);
		if (r == 0) {
			confirmed(h.b, next);
			described(h.b, key, next->fence);
			break;
		}
		g_assert_cmpint(r, ==, -EEXIST);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(lockfs_mono_us() - renewed, >=, 2 * G_USEC_PER_SEC * 4 / 5);
	g_assert_cmpint(h.a->renew(h.a, l), ==, -ESTALE);
	g_assert_cmpint(h.a->release(h.a, l), ==, -ENOENT);
	h.a->lease_free(h.a, l);
	lockfs_lock_info info;
	g_assert_cmpint(h.a->inspect(h.a, key, &info), ==, 0);
	g_assert_cmpstr(info.fence, ==, next->fence);
	g_assert_cmpstr(info.holder.host, ==, "host-b");
	lockfs_lock_info_clear(&info);
	give_own(h.b, next);
	hosts_free(&h);
}

static void test_fences_across_hosts(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	hosts h = two_hosts(c, "3s", "300s");
	g_autofree char *key = lockfs_contract_key("fence.lock");
	char last[LOCKFS_FENCE_MAX] = "0";
	for (int i = 0; i < 6; i++) {
		lockfs_backend *be = i % 2 ? h.b : h.a;
		lockfs_lease *l = take(be, key, i % 2 ? "host-b" : "host-a");
		g_assert_cmpint(lockfs_fence_cmp(l->fence, last), >, 0);
		g_strlcpy(last, l->fence, sizeof(last));
		give_own(be, l);
	}
	hosts_free(&h);
}

static void test_fences_across_restart(gconstpointer data)
{
	const lockfs_contract *c = data;
	NEED_SERVER(c);
	if (!c->restart) {
		g_test_skip("this fixture cannot restart its server");
		return;
	}
	g_autofree char *key = lockfs_contract_key("restart.lock");
	lockfs_backend *a = lockfs_contract_backend(c, "/contract/a", "3s", "300s", "2s");
	lockfs_lease *l = take(a, key, "host-a");
	char before[LOCKFS_FENCE_MAX];
	g_strlcpy(before, l->fence, sizeof(before));
	give_own(a, l);
	a->destroy(a);
	g_assert_true(c->restart());
	/* The server may take a moment to serve again: EIO until it does;
	 * EEXIST while it refuses grants for a restart grace (tinystore's,
	 * for ttl: nobody holds the key, which was released before). */
	a = lockfs_contract_backend(c, "/contract/a", "3s", "300s", "2s");
	lockfs_holder who = lockfs_contract_holder("host-a", 1);
	int64_t end = lockfs_mono_us() + 20 * G_USEC_PER_SEC;
	int r;
	while ((r = a->acquire(a, key, &who, NULL, 0, &l, NULL)) == -EIO || r == -EEXIST) {
		g_assert_cmpint(lockfs_mono_us(), <, end);
		g_usleep(100 * 1000);
	}
	g_assert_cmpint(r, ==, 0);
	confirmed(a, l);
	g_assert_cmpint(lockfs_fence_cmp(l->fence, before), >, 0);
	give_own(a, l);
	a->destroy(a);
}

void lockfs_contract_add(const lockfs_contract *c)
{
	static const struct {
		const char *name;
		GTestDataFunc fn;
	} tests[] = {
		{ "acquire-eexist", test_acquire_eexist },
		{ "release-only-own", test_release_only_own },
		{ "break-with-fence", test_break_with_fence },
		{ "stale-broken-by-acquire", test_stale_broken_by_acquire },
		{ "list-prefix", test_list_prefix },
		{ "acquire-content", test_acquire_content },
		{ "confirm", test_confirm },
		{ "renew-estale-after-loss", test_renew_estale_after_loss },
		{ "fences-across-hosts", test_fences_across_hosts },
		{ "fences-across-restart", test_fences_across_restart },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(tests); i++) {
		g_autofree char *path = g_strdup_printf("/contract/%s/%s", c->name, tests[i].name);
		g_test_add_data_func(path, c, tests[i].fn);
	}
}
