/* Helpers shared by every backend, and the choice of backend by name. */
#include <lockfs/backend.h>
#include <lockfs/backends.h>

#include <stdlib.h>
#include <string.h>

void lockfs_holder_clear(lockfs_holder *h)
{
	g_free(h->host);
	g_free(h->user);
	g_free(h->command);
	memset(h, 0, sizeof(*h));
}

void lockfs_holder_copy(lockfs_holder *dst, const lockfs_holder *src)
{
	*dst = *src;
	dst->host = g_strdup(src->host);
	dst->user = g_strdup(src->user);
	dst->command = g_strdup(src->command);
	dst->initial_content = NULL; /* borrowed for one acquire() */
	dst->initial_content_len = 0;
}

void lockfs_lock_info_clear(lockfs_lock_info *info)
{
	g_free(info->key);
	g_free(info->content);
	lockfs_holder_clear(&info->holder);
	memset(info, 0, sizeof(*info));
}

const char *lockfs_state_name(lockfs_lock_state s)
{
	switch (s) {
	case LOCKFS_STATE_HELD:
		return "held";
	case LOCKFS_STATE_STALE:
		return "stale";
	case LOCKFS_STATE_LOST:
		return "lost";
	}
	return "unknown";
}

/* Decimal strings without leading zeros compare by length first. */
int lockfs_fence_cmp(const char *a, const char *b)
{
	while (*a == '0' && a[1])
		a++;
	while (*b == '0' && b[1])
		b++;
	size_t la = strlen(a), lb = strlen(b);
	if (la != lb)
		return la < lb ? -1 : 1;
	int c = strcmp(a, b);
	return c < 0 ? -1 : c > 0;
}

void lockfs_backends_register_config(void)
{
	/* The local backend has no keys of its own: state_dir is general. */
	static const char *const tinystore[] = {"dir",     "endpoint", "token_file", "ca_file",
	                                        "verify", "lock_name", NULL};
	lockfs_config_register_group("tinystore", tinystore);
	static const char *const ldap[] = {"uri",     "bind_dn", "password_file", "sasl_mech",
	                                   "starttls", "ca_file", "verify",        "base",
	                                   "dynamic",  "max_clock_offset", NULL};
	lockfs_config_register_group("ldap", ldap);
}

lockfs_backend *lockfs_backend_new(const lockfs_config *cfg, const char *mount_id, GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	if (strcmp(s->backend, "local") == 0)
		return lockfs_local_backend_new(cfg, mount_id, error);
	if (strcmp(s->backend, "tinystore") == 0)
		return lockfs_tinystore_backend_new(cfg, mount_id, error);
	if (strcmp(s->backend, "ldap") == 0)
		return lockfs_ldap_backend_new(cfg, mount_id, error);
	g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
	            "backend '%s' is not built into this lockfs; use backend=local, ldap or "
	            "tinystore",
	            s->backend);
	return NULL;
}
