/* The local backend: locks live in this lockfs process (one host), their
 * fences come from a counter kept durable in a state file. */

#include <errno.h>
#include <inttypes.h>
#include <lockfs/backend_support.h>
#include <lockfs/backends.h>
#include <stdio.h>
#include <string.h>

#define FENCE_BLOCK 65536

typedef struct {
	lockfs_holder holder;
	uint64_t fence;
	/* Last heartbeat on the boot clock: staleness is never moved by a
	 * step of the wall clock (NTP, date -s), and counts suspend. */
	int64_t beat_boot;
} local_lock;

typedef struct {
	lockfs_backend base;
	GMutex mu;
	GHashTable *locks; /* key → local_lock */
	lockfs_fence_store *fences;
	int64_t stale_after_us; /* 0: never stale */
} local_backend;

/* FENCE in decimal into OUT, without snprintf (a tenth of the local
 * backend's part of a lock cycle); 20 digits fit LOCKFS_FENCE_MAX. */
static void fence_text(char out[LOCKFS_FENCE_MAX], uint64_t fence)
{
	char b[LOCKFS_DIGITS_MAX];
	size_t n = lockfs_u64_digits(b, fence, 10);
	memcpy(out, b, n);
	out[n] = '\0';
}

static void local_lock_free(gpointer p)
{
	local_lock *l = p;
	lockfs_holder_clear(&l->holder);
	g_free(l);
}

static lockfs_lock_state state_of(local_backend *lb, const local_lock *l, int64_t now_boot)
{
	if (lb->stale_after_us && now_boot - l->beat_boot > lb->stale_after_us)
		return LOCKFS_STATE_STALE;
	return LOCKFS_STATE_HELD;
}

static void fill_info(local_backend *lb, const char *key, const local_lock *l,
                      lockfs_lock_info *out)
{
	memset(out, 0, sizeof(*out));
	out->key = g_strdup(key);
	lockfs_holder_copy(&out->holder, &l->holder);
	fence_text(out->fence, l->fence);
	out->lease_left_ms = -1;
	out->state = state_of(lb, l, lockfs_mono_us());
	out->mine = true;
}

/* The lock KEY if LEASE (its fence) still holds it. */
static local_lock *owned(local_backend *lb, const lockfs_lease *lease)
{
	local_lock *l = g_hash_table_lookup(lb->locks, lease->key);
	if (!l)
		return NULL;
	char f[LOCKFS_FENCE_MAX];
	fence_text(f, l->fence);
	return strcmp(f, lease->fence) == 0 ? l : NULL;
}

/* KEY held for WHO with FENCE (lb->mu held): its lease. */
static lockfs_lease *install(local_backend *lb, const char *key, const lockfs_holder *who,
                             uint64_t fence)
{
	local_lock *l = g_new0(local_lock, 1);
	lockfs_holder_copy(&l->holder, who);
	l->fence = fence;
	/* The holder's last heartbeat as given (now, for a fresh grant; the
	 * recorded one, for a lock taken back), on the boot clock from here on. */
	l->beat_boot = lockfs_mono_us() - MAX(lockfs_now_us() - who->heartbeat_us, 0);
	g_hash_table_insert(lb->locks, g_strdup(key), l);
	lockfs_lease *lease = g_new0(lockfs_lease, 1);
	lease->key = g_strdup(key);
	fence_text(lease->fence, fence);
	return lease;
}

/* CONTENT is not kept: the filesystem keeps local content itself. */
static int local_acquire(lockfs_backend *be, const char *key, const lockfs_holder *who,
                         const void *content, size_t content_len, lockfs_lease **out,
                         lockfs_acquire_result *res)
{
	(void)content;
	(void)content_len;
	local_backend *lb = (local_backend *)be;
	if (res)
		memset(res, 0, sizeof(*res));
	g_mutex_lock(&lb->mu);
	local_lock *l = g_hash_table_lookup(lb->locks, key);
	if (l) {
		if (state_of(lb, l, lockfs_mono_us()) != LOCKFS_STATE_STALE) {
			g_mutex_unlock(&lb->mu);
			return -EEXIST;
		}
		if (res) {
			res->broke = true;
			fill_info(lb, key, l, &res->previous);
		}
		g_hash_table_remove(lb->locks, key);
	}
	uint64_t fence;
	if (lockfs_fence_store_next(lb->fences, &fence) != 0) {
		g_mutex_unlock(&lb->mu);
		return -EIO;
	}
	*out = install(lb, key, who, fence);
	g_mutex_unlock(&lb->mu);
	return 0;
}

static int local_heartbeat(lockfs_backend *be, lockfs_lease *lease, const lockfs_beat *beat)
{
	/* The filesystem keeps local content and attributes itself. */
	local_backend *lb = (local_backend *)be;
	g_mutex_lock(&lb->mu);
	local_lock *l = owned(lb, lease);
	if (l && beat->heartbeat_us) {
		l->holder.heartbeat_us = beat->heartbeat_us;
		l->beat_boot = lockfs_mono_us() - MAX(lockfs_now_us() - beat->heartbeat_us, 0);
	}
	g_mutex_unlock(&lb->mu);
	return l ? 0 : -ESTALE;
}

static int local_renew(lockfs_backend *be, lockfs_lease *lease)
{
	local_backend *lb = (local_backend *)be;
	g_mutex_lock(&lb->mu);
	local_lock *l = owned(lb, lease);
	g_mutex_unlock(&lb->mu);
	if (!l)
		return -ESTALE;
	return 0;
}

static int local_release(lockfs_backend *be, lockfs_lease *lease)
{
	local_backend *lb = (local_backend *)be;
	g_mutex_lock(&lb->mu);
	local_lock *l = owned(lb, lease);
	if (l)
		g_hash_table_remove(lb->locks, lease->key);
	g_mutex_unlock(&lb->mu);
	return l ? 0 : -ENOENT;
}

static int local_break(lockfs_backend *be, const char *key, const char *fence,
                       const lockfs_holder *breaker, lockfs_lock_info *broken)
{
	(void)breaker;
	local_backend *lb = (local_backend *)be;
	g_mutex_lock(&lb->mu);
	local_lock *l = g_hash_table_lookup(lb->locks, key);
	char f[LOCKFS_FENCE_MAX] = "";
	if (l)
		fence_text(f, l->fence);
	if (!l || (fence && strcmp(f, fence) != 0)) {
		g_mutex_unlock(&lb->mu);
		return -ENOENT;
	}
	if (broken)
		fill_info(lb, key, l, broken);
	g_hash_table_remove(lb->locks, key);
	g_mutex_unlock(&lb->mu);
	return 0;
}

static int local_inspect(lockfs_backend *be, const char *key, lockfs_lock_info *out)
{
	local_backend *lb = (local_backend *)be;
	g_mutex_lock(&lb->mu);
	local_lock *l = g_hash_table_lookup(lb->locks, key);
	if (l)
		fill_info(lb, key, l, out);
	g_mutex_unlock(&lb->mu);
	return l ? 0 : -ENOENT;
}

static int local_list(lockfs_backend *be, const char *prefix, lockfs_list_cb cb, void *user)
{
	local_backend *lb = (local_backend *)be;
	/* Copy under the lock, call back outside it: callbacks may call us. */
	GPtrArray *infos = g_ptr_array_new();
	g_mutex_lock(&lb->mu);
	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, lb->locks);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		if (!g_str_has_prefix(k, prefix))
			continue;
		lockfs_lock_info *info = g_new(lockfs_lock_info, 1);
		fill_info(lb, k, v, info);
		g_ptr_array_add(infos, info);
	}
	g_mutex_unlock(&lb->mu);
	for (guint i = 0; i < infos->len; i++) {
		lockfs_lock_info *info = infos->pdata[i];
		cb(info, user);
		lockfs_lock_info_clear(info);
		g_free(info);
	}
	g_ptr_array_free(infos, TRUE);
	return 0;
}

/* The local backend's locks live in this process: its lease token says
 * only whose it is; the record in state_dir (the daemon's fs_record.c) is what keeps a
 * lock across a restart, given back here through adopt(). */
#define LOCAL_TOKEN "local"

static char *local_identity(lockfs_backend *be)
{
	(void)be;
	return g_strdup("local");
}

static int local_lease_token(lockfs_backend *be, const lockfs_lease *lease, GString *out)
{
	(void)be;
	(void)lease;
	g_string_assign(out, LOCAL_TOKEN);
	return 0;
}

/* KEY, granted with FENCE by the previous lockfs of this mount, held again
 * for WHO: its heartbeat counts from when it was recorded. */
static int local_adopt(lockfs_backend *be, const char *key, const char *fence, const char *token,
                       const lockfs_holder *who, const void *content, size_t content_len,
                       lockfs_lease **out)
{
	(void)content;
	(void)content_len;
	local_backend *lb = (local_backend *)be;
	uint64_t f;
	if (strcmp(token, LOCAL_TOKEN) != 0 || !*key ||
	    !g_ascii_string_to_unsigned(fence, 10, 1, UINT64_MAX, &f, NULL))
		return -EINVAL;
	g_mutex_lock(&lb->mu);
	if (g_hash_table_contains(lb->locks, key)) {
		g_mutex_unlock(&lb->mu);
		return -ESTALE; /* recorded twice: the first record holds it */
	}
	*out = install(lb, key, who, f);
	g_mutex_unlock(&lb->mu);
	return 0;
}

static void local_lease_free(lockfs_backend *be, lockfs_lease *lease)
{
	(void)be;
	if (!lease)
		return;
	g_free(lease->key);
	g_free(lease);
}

static void local_destroy(lockfs_backend *be)
{
	local_backend *lb = (local_backend *)be;
	g_hash_table_destroy(lb->locks);
	lockfs_fence_store_close(lb->fences);
	g_mutex_clear(&lb->mu);
	g_free(lb);
}

static lockfs_backend *local_backend_new(const lockfs_config *cfg, const char *mount_id,
                                         GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_autofree char *name = lockfs_local_state_name(mount_id ? mount_id : "");
	g_autofree char *path = g_build_filename(s->state_dir, name, NULL);
	lockfs_fence_store *fences = lockfs_fence_store_open(path, FENCE_BLOCK, error);
	if (!fences)
		return NULL;
	local_backend *lb = g_new0(local_backend, 1);
	lb->base = (lockfs_backend){
		LOCKFS_BACKEND_INIT("local", 0), /* one host, and no leases */
		.acquire = local_acquire,
		.heartbeat = local_heartbeat,
		.renew = local_renew,
		.release = local_release,
		.break_lock = local_break,
		.inspect = local_inspect,
		.list = local_list,
		.lease_free = local_lease_free,
		.destroy = local_destroy,
		.identity = local_identity,
		.lease_token = local_lease_token,
		.adopt = local_adopt,
	};
	g_mutex_init(&lb->mu);
	lb->locks = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, local_lock_free);
	lb->fences = fences;
	lb->stale_after_us = s->stale_after_ms * 1000;
	return &lb->base;
}

/* No keys of its own: state_dir is general. */
const lockfs_backend_type lockfs_local_backend_type = {
	LOCKFS_BACKEND_TYPE_INIT("local"),
	.create = local_backend_new,
};
