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

/* ---- the registry ---- */

/* Every backend built in, in the order messages name them: adding a backend
 * is a line here (and its directory, and a subdir() in src/backends/). */
#define BACKEND_TYPES(X) \
	X(local)         \
	X(ldap)          \
	X(tinystore)     \
	X(etcd)          \
	/* end of the table */

#define DECLARE_TYPE(NAME) extern const lockfs_backend_type lockfs_##NAME##_backend_type;
BACKEND_TYPES(DECLARE_TYPE)
#define TYPE_ENTRY(NAME) &lockfs_##NAME##_backend_type,
static const lockfs_backend_type *const types[] = { BACKEND_TYPES(TYPE_ENTRY) };

/* A type built for another version of this interface is a build mistake:
 * said once per use, and the type is left out. */
static bool type_usable(const lockfs_backend_type *t)
{
	if (t->version == LOCKFS_BACKEND_TYPE_VERSION)
		return true;
	g_critical("backend '%s' was built for backend type version %u, this lockfs has %u; "
	           "rebuild it with this lockfs",
	           t->name, t->version, LOCKFS_BACKEND_TYPE_VERSION);
	return false;
}

const lockfs_backend_type *lockfs_backend_type_find(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
		if (strcmp(types[i]->name, name) == 0)
			return type_usable(types[i]) ? types[i] : NULL;
	return NULL;
}

char *lockfs_backend_names(void)
{
	GString *s = g_string_new(NULL);
	for (size_t i = 0; i < G_N_ELEMENTS(types); i++) {
		if (i)
			g_string_append(s, i + 1 == G_N_ELEMENTS(types) ? " or " : ", ");
		g_string_append(s, types[i]->name);
	}
	return g_string_free(s, FALSE);
}

void lockfs_backends_register_config(void)
{
	g_autofree char *names = lockfs_backend_names();
	lockfs_config_register_backends(names);
	for (size_t i = 0; i < G_N_ELEMENTS(types); i++)
		if (types[i]->group && type_usable(types[i]))
			lockfs_config_register_group(types[i]->group, types[i]->keys);
}

lockfs_backend *lockfs_backend_new(const lockfs_config *cfg, const char *mount_id, GError **error)
{
	const lockfs_settings *s = lockfs_config_settings(cfg);
	const lockfs_backend_type *t = lockfs_backend_type_find(s->backend);
	if (!t) {
		g_autofree char *names = lockfs_backend_names();
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
		            "backend '%s' is not built into this lockfs; use backend=%s",
		            s->backend, names);
		return NULL;
	}
	return lockfs_backend_new_of_type(t, cfg, mount_id, error);
}

lockfs_backend *lockfs_backend_new_of_type(const lockfs_backend_type *t, const lockfs_config *cfg,
                                           const char *mount_id, GError **error)
{
	lockfs_backend *be = t->create(cfg, mount_id, error);
	if (be && be->version != LOCKFS_BACKEND_VERSION) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
		            "backend '%s' implements backend interface version %u, this lockfs "
		            "calls version %u; rebuild it with this lockfs",
		            t->name, be->version, LOCKFS_BACKEND_VERSION);
		be->destroy(be);
		return NULL;
	}
	return be;
}

size_t lockfs_u64_digits(char buf[LOCKFS_DIGITS_MAX], uint64_t v, unsigned base)
{
	static const char digits[] = "0123456789abcdef";
	char b[LOCKFS_DIGITS_MAX];
	size_t n = sizeof(b);
	do {
		b[--n] = digits[v % base];
		v /= base;
	} while (v);
	memcpy(buf, b + n, sizeof(b) - n);
	return sizeof(b) - n;
}
