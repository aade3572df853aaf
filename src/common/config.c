/* lockfs configuration: a GLib key file plus mount options, see config.h.
 *
 * Values are kept as text in two layers, the files and the mount options; a
 * lookup asks the mount options first, so they override the files whatever
 * the order of loading.  The general keys are checked when they are set (so
 * the error points at the line) and parsed again by lockfs_config_finish(),
 * which also applies the defaults and the rules between keys.  Backend keys
 * are typed only when a backend asks for them through the getters.
 */
#define G_LOG_DOMAIN "lockfs"

#include "lockfs/config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* clang-format off */
G_DEFINE_QUARK(lockfs-config-error-quark, lockfs_config_error)
/* clang-format on */

#define GENERAL_GROUP "lockfs"
#define SUFFIX_MAX 32
#define HOST_MAX 255
#define NAME_MAX_LEN 64
/* Larger than any sensible configuration; refusing it avoids reading a
 * device or a huge file by mistake. */
#define FILE_MAX (1024 * 1024)
/* Durations must stay representable in microseconds, which the rest of
 * lockfs uses for clocks: about 292,000 years. */
#define DURATION_MAX_MS (INT64_MAX / 1000)

typedef enum {
	KIND_BACKEND,
	KIND_SUFFIX,
	KIND_DURATION,
	KIND_HOST,
	KIND_PATH,
	KIND_COMMAND,
	KIND_MODE,
	KIND_UID,
	KIND_GID,
	KIND_PASSTHROUGH,
	KIND_BOOL,
	KIND_LOG_LEVEL,
	KIND_COUNT /* not a kind: how many there are */
} key_kind;

typedef struct {
	const char *name;
	key_kind kind;
	size_t offset;   /* of the field in lockfs_settings */
	const char *def; /* NULL: computed by default_text() */
	int64_t min_ms;  /* durations only */
} general_key;

#define FIELD(s, k, type) ((type *)(void *)((char *)(s) + (k)->offset))

/* clang-format off */
static const general_key general_keys[] = {
	{ .name = "backend", .kind = KIND_BACKEND,
	  .offset = offsetof(lockfs_settings, backend), .def = "local" },
	{ .name = "suffix", .kind = KIND_SUFFIX,
	  .offset = offsetof(lockfs_settings, suffix), .def = ".lock" },
	{ .name = "ttl", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, ttl_ms), .def = "30s", .min_ms = 1000 },
	{ .name = "renew_interval", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, renew_ms), .def = "0" },
	{ .name = "stale_after", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, stale_after_ms), .def = "300s" },
	{ .name = "network_timeout", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, network_timeout_ms), .def = "10s", .min_ms = 1 },
	{ .name = "heartbeat_min_interval", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, heartbeat_min_ms), .def = "2s" },
	{ .name = "list_cache", .kind = KIND_DURATION,
	  .offset = offsetof(lockfs_settings, list_cache_ms), .def = "200ms" },
	{ .name = "host", .kind = KIND_HOST, .offset = offsetof(lockfs_settings, host) },
	{ .name = "state_dir", .kind = KIND_PATH, .offset = offsetof(lockfs_settings, state_dir) },
	{ .name = "notify", .kind = KIND_COMMAND,
	  .offset = offsetof(lockfs_settings, notify), .def = "" },
	{ .name = "log_file", .kind = KIND_PATH,
	  .offset = offsetof(lockfs_settings, log_file), .def = "" },
	{ .name = "metrics_file", .kind = KIND_PATH,
	  .offset = offsetof(lockfs_settings, metrics_file), .def = "" },
	{ .name = "dir_mode", .kind = KIND_MODE,
	  .offset = offsetof(lockfs_settings, dir_mode), .def = "1777" },
	{ .name = "dir_uid", .kind = KIND_UID, .offset = offsetof(lockfs_settings, dir_uid) },
	{ .name = "dir_gid", .kind = KIND_GID, .offset = offsetof(lockfs_settings, dir_gid) },
	{ .name = "passthrough", .kind = KIND_PASSTHROUGH,
	  .offset = offsetof(lockfs_settings, passthrough), .def = "auto" },
	{ .name = "allow_other", .kind = KIND_BOOL,
	  .offset = offsetof(lockfs_settings, allow_other) },
	{ .name = "foreground", .kind = KIND_BOOL,
	  .offset = offsetof(lockfs_settings, foreground), .def = "false" },
	{ .name = "debug", .kind = KIND_BOOL,
	  .offset = offsetof(lockfs_settings, debug), .def = "false" },
	{ .name = "log_level", .kind = KIND_LOG_LEVEL,
	  .offset = offsetof(lockfs_settings, log_level), .def = "info" },
	{ .name = "audit", .kind = KIND_BOOL,
	  .offset = offsetof(lockfs_settings, audit), .def = "true" },
};
/* clang-format on */

/* Options that mount(8), systemd or FUSE itself consume: handed back to the
 * caller, never stored. */
/* clang-format off */
static const char *const fuse_flags[] = {
	"ro", "rw", "default_permissions", "auto_unmount", "allow_root", "blkdev",
	"atime", "noatime", "relatime", "norelatime", "strictatime", "nostrictatime",
	"lazytime", "nolazytime", "diratime", "nodiratime",
	"dev", "nodev", "suid", "nosuid", "exec", "noexec", "sync", "async", "dirsync",
	"_netdev", "nofail", "auto", "noauto", "user", "nouser", "users", "owner", "group",
	"defaults", NULL,
};
static const char *const fuse_valued[] = {
	"fsname", "subtype", "max_read", "blksize", "comment",
	"context", "fscontext", "defcontext", "rootcontext", NULL,
};
/* clang-format on */

/* Group name → NULL-terminated key list, for the whole process: backends
 * register once at start-up and configurations come and go. */
static GHashTable *registry;
/* The backend names for messages, from the backend registry. */
static char *backend_names;

typedef struct {
	char *value;
	char *origin; /* "FILE:LINE" or "mount option 'x=y'" */
	bool from_option;
	bool flag; /* a mount option without '=': only booleans accept it */
} entry;

struct lockfs_config {
	GHashTable *file_values;   /* "group/key" → entry */
	GHashTable *option_values; /* same, wins over file_values */
	lockfs_settings settings;
	bool finished;
};

static void entry_free(gpointer p)
{
	entry *e = p;
	g_free(e->value);
	g_free(e->origin);
	g_free(e);
}

static char *entry_key(const char *group, const char *key)
{
	return g_strconcat(group, "/", key, NULL);
}

/* TEXT for a one-line message: control characters become \xNN. */
static char *printable(const char *text)
{
	GString *s = g_string_new(NULL);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			g_string_append_printf(s, "\\x%02x", *p);
		else
			g_string_append_c(s, (char)*p);
	}
	return g_string_free(s, FALSE);
}

/* 'TEXT', printable. */
static char *quote(const char *text)
{
	g_autofree char *p = printable(text);
	return g_strdup_printf("'%s'", p);
}

/* ---- names ---- */

static const general_key *find_general(const char *name)
{
	for (size_t i = 0; i < G_N_ELEMENTS(general_keys); i++)
		if (strcmp(general_keys[i].name, name) == 0)
			return &general_keys[i];
	return NULL;
}

static bool in_list(const char *const *list, const char *s)
{
	for (; list && *list; list++)
		if (strcmp(*list, s) == 0)
			return true;
	return false;
}

static const char *const *group_keys(const char *group)
{
	return registry ? g_hash_table_lookup(registry, group) : NULL;
}

static bool group_known(const char *group)
{
	return strcmp(group, GENERAL_GROUP) == 0 || group_keys(group) != NULL;
}

static bool key_known(const char *group, const char *key)
{
	if (strcmp(group, GENERAL_GROUP) == 0)
		return find_general(key) != NULL;
	return in_list(group_keys(group), key);
}

/* Group names become option prefixes ("ldap_uri"), so they have no '_' and
 * the first '_' of an option separates group from key. */
static bool valid_group_name(const char *s)
{
	if (!s || !g_ascii_islower(*s) || strlen(s) > NAME_MAX_LEN)
		return false;
	for (; *s; s++)
		if (!g_ascii_islower(*s) && !g_ascii_isdigit(*s) && *s != '-')
			return false;
	return true;
}

static bool valid_key_name(const char *s)
{
	if (!s || !g_ascii_islower(*s) || strlen(s) > NAME_MAX_LEN)
		return false;
	for (; *s; s++)
		if (!g_ascii_islower(*s) && !g_ascii_isdigit(*s) && *s != '_')
			return false;
	return true;
}

/* For g_ptr_array_sort(), which passes pointers to the elements. */
static gint compare_names(gconstpointer a, gconstpointer b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static GPtrArray *sorted_groups(void)
{
	GPtrArray *a = g_ptr_array_new();
	if (registry) {
		GHashTableIter it;
		gpointer k;
		g_hash_table_iter_init(&it, registry);
		while (g_hash_table_iter_next(&it, &k, NULL))
			g_ptr_array_add(a, k);
	}
	g_ptr_array_sort(a, compare_names);
	return a;
}

/* Edit distance, for "did you mean": short names only. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[NAME_MAX_LEN * 2 + 2];
	if (la > NAME_MAX_LEN * 2 || lb > NAME_MAX_LEN * 2)
		return G_MAXUINT;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		unsigned diag = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned up = row[j];
			unsigned best = diag + (a[i - 1] != b[j - 1]);
			best = MIN(best, up + 1);
			best = MIN(best, row[j - 1] + 1);
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

typedef struct {
	const char *typed;
	char *best;
	unsigned dist;
} suggestion;

static void consider(suggestion *sg, const char *candidate, const char *shown)
{
	/* Names are lower case: "TTL" is one typo away from "ttl", not three. */
	g_autofree char *lower = g_ascii_strdown(sg->typed, -1);
	unsigned d = edit_distance(sg->typed, candidate);
	unsigned dl = edit_distance(lower, candidate);
	if (dl < d)
		d = dl + 1;
	if (d < sg->dist && d <= 2 && d < strlen(sg->typed)) {
		g_free(sg->best);
		sg->best = g_strdup(shown);
		sg->dist = d;
	}
}

/* "; did you mean 'ttl'?" or the list of keys of GROUP. */
static char *unknown_key_hint(const char *group, const char *key)
{
	/* GKeyFile's per-locale values ("name[de]") make no sense here. */
	const char *bracket = strchr(key, '[');
	if (bracket) {
		g_autofree char *base = g_strndup(key, (size_t)(bracket - key));
		if (key_known(group, base))
			return g_strdup_printf("values per locale are not supported; write '%s' "
			                       "alone",
			                       base);
	}
	/* A key written in the wrong group is the likeliest mistake. */
	if (strcmp(group, GENERAL_GROUP) != 0 && find_general(key))
		return g_strdup_printf("'%s' belongs in [" GENERAL_GROUP "]", key);
	g_autoptr(GPtrArray) groups = sorted_groups();
	for (guint i = 0; i < groups->len; i++) {
		const char *g = groups->pdata[i];
		if (strcmp(g, group) != 0 && in_list(group_keys(g), key))
			return g_strdup_printf("'%s' belongs in [%s]", key, g);
	}

	suggestion sg = { .typed = key, .dist = G_MAXUINT };
	GString *list = g_string_new(NULL);
	if (strcmp(group, GENERAL_GROUP) == 0) {
		for (size_t i = 0; i < G_N_ELEMENTS(general_keys); i++) {
			consider(&sg, general_keys[i].name, general_keys[i].name);
			g_string_append_printf(list, "%s%s", i ? ", " : "", general_keys[i].name);
		}
	} else {
		const char *const *keys = group_keys(group);
		for (size_t i = 0; keys && keys[i]; i++) {
			consider(&sg, keys[i], keys[i]);
			g_string_append_printf(list, "%s%s", i ? ", " : "", keys[i]);
		}
	}
	char *hint;
	if (sg.best)
		hint = g_strdup_printf("did you mean '%s'?", sg.best);
	else if (list->len)
		hint = g_strdup_printf("the keys of [%s] are %s", group, list->str);
	else
		hint = g_strdup_printf("[%s] has no keys; remove the line", group);
	g_free(sg.best);
	g_string_free(list, TRUE);
	return hint;
}

static char *known_groups_text(void)
{
	g_autoptr(GPtrArray) groups = sorted_groups();
	GString *s = g_string_new("[" GENERAL_GROUP "]");
	for (guint i = 0; i < groups->len; i++)
		g_string_append_printf(s, ", [%s]", (const char *)groups->pdata[i]);
	return g_string_free(s, FALSE);
}

/* Bad names are bugs in a backend, reported even with G_DISABLE_CHECKS. */
#define REFUSE_IF(cond, ...)                                                      \
	do {                                                                      \
		if (cond) {                                                       \
			g_critical("lockfs_config_register_group: " __VA_ARGS__); \
			return;                                                   \
		}                                                                 \
	} while (0)

void lockfs_config_register_group(const char *group, const char *const *keys)
{
	REFUSE_IF(!valid_group_name(group), "group name '%s' is not [a-z][a-z0-9-]*",
	          group ? group : "(null)");
	REFUSE_IF(strcmp(group, GENERAL_GROUP) == 0, "[" GENERAL_GROUP "] is built in");
	REFUSE_IF(!keys, "no key list for [%s]", group);
	for (const char *const *k = keys; *k; k++) {
		REFUSE_IF(!valid_key_name(*k), "key name '%s' of [%s] is not [a-z][a-z0-9_]*", *k,
		          group);
		/* "dir" + "mode" would read as the general key dir_mode. */
		g_autofree char *opt = g_strconcat(group, "_", *k, NULL);
		REFUSE_IF(find_general(opt),
		          "key '%s' of [%s] would make the mount option %s, "
		          "a key of [" GENERAL_GROUP "]",
		          *k, group, opt);
		REFUSE_IF(in_list(fuse_flags, opt) || in_list(fuse_valued, opt),
		          "key '%s' of [%s] would make the mount option %s, a FUSE option", *k,
		          group, opt);
	}
	if (!registry)
		registry = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
		                                 (GDestroyNotify)g_strfreev);
	/* Registering again replaces the keys: start-up code may run twice in
	 * tests. */
	g_hash_table_replace(registry, g_strdup(group), g_strdupv((char **)keys));
}

void lockfs_config_register_backends(const char *names)
{
	g_free(backend_names);
	backend_names = g_strdup(names);
}

/* ---- values ---- */

bool lockfs_parse_duration(const char *text, int64_t *out_ms)
{
	/* clang-format off */
	static const struct {
		const char *suffix;
		int64_t ms;
	} units[] = {
		{ "ms", 1 }, { "s", 1000 }, { "m", 60 * 1000 }, { "h", 3600 * 1000 },
		{ "d", 86400 * 1000 }, { "", 1000 },
	};
	/* clang-format on */
	g_return_val_if_fail(out_ms != NULL, false);
	if (!text || !g_ascii_isdigit(*text))
		return false;

	const char *p = text;
	int64_t whole = 0, frac = 0, scale = 1;
	for (; g_ascii_isdigit(*p); p++) {
		int d = *p - '0';
		if (whole > (DURATION_MAX_MS - d) / 10)
			return false;
		whole = whole * 10 + d;
	}
	if (*p == '.') {
		p++;
		if (!g_ascii_isdigit(*p))
			return false;
		for (; g_ascii_isdigit(*p); p++) {
			/* A millisecond is 1e-8 days: more digits cannot matter. */
			if (scale >= 1000000000)
				return false;
			frac = frac * 10 + (*p - '0');
			scale *= 10;
		}
	}
	int64_t unit = 0;
	for (size_t i = 0; i < G_N_ELEMENTS(units); i++)
		if (strcmp(p, units[i].suffix) == 0) {
			unit = units[i].ms;
			break;
		}
	if (!unit || whole > DURATION_MAX_MS / unit)
		return false;
	/* frac < 1e9 and unit <= 8.64e7: the product fits in int64. */
	if ((frac * unit) % scale != 0)
		return false; /* finer than a millisecond */
	int64_t ms = whole * unit + frac * unit / scale;
	if (ms > DURATION_MAX_MS)
		return false;
	*out_ms = ms;
	return true;
}

static bool parse_bool(const char *text, bool *out)
{
	static const char *const yes[] = { "true", "yes", "on", "1", NULL };
	static const char *const no[] = { "false", "no", "off", "0", NULL };
	for (size_t i = 0; yes[i]; i++) {
		if (g_ascii_strcasecmp(text, yes[i]) == 0) {
			*out = true;
			return true;
		}
		if (g_ascii_strcasecmp(text, no[i]) == 0) {
			*out = false;
			return true;
		}
	}
	return false;
}

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static bool parse_id(const char *text, bool user, uint32_t *out)
{
	/* (uid_t)-1 means "unchanged" to chown() and is no one's id. */
	if (g_ascii_isdigit(*text)) {
		guint64 n;
		if (!g_ascii_string_to_unsigned(text, 10, 0, G_MAXUINT32 - 1, &n, NULL))
			return false;
		*out = (uint32_t)n;
		return true;
	}
	if (user) {
		struct passwd *pw = getpwnam(text);
		if (pw)
			*out = pw->pw_uid;
		return pw != NULL;
	}
	struct group *gr = getgrnam(text);
	if (gr)
		*out = gr->gr_gid;
	return gr != NULL;
}

static void set_string(char **field, const char *value)
{
	g_free(*field);
	*field = g_strdup(value);
}

/* One parser per key kind: VALUE of general key K into S.  On failure *WHY
 * says what is wrong and what to do, separated by "; ". */
typedef bool (*kind_parser)(const general_key *k, const char *value, lockfs_settings *s,
                            char **why);

static bool parse_backend(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	if (!valid_group_name(value)) {
		g_autofree char *q = quote(value);
		*why = g_strdup_printf("%s is not a backend name; write %s", q,
		                       backend_names ? backend_names : "local");
		return false;
	}
	set_string(FIELD(s, k, char *), value);
	return true;
}

static bool parse_suffix(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	g_autofree char *q = quote(value);
	if (!*value) {
		*why = g_strdup("the suffix is empty; write one such as .lock");
	} else if (strchr(value, '/')) {
		*why = g_strdup_printf("%s contains '/'; a suffix ends a file name, write "
		                       "one such as .lock",
		                       q);
	} else if (strlen(value) > SUFFIX_MAX) {
		*why = g_strdup_printf("%s is %zu bytes long; write at most %d bytes", q,
		                       strlen(value), SUFFIX_MAX);
	} else if (has_control(value) || !g_utf8_validate(value, -1, NULL)) {
		*why = g_strdup_printf("%s is not printable UTF-8 text; write one such "
		                       "as .lock",
		                       q);
	} else {
		set_string(FIELD(s, k, char *), value);
		return true;
	}
	return false;
}

static bool parse_duration_key(const general_key *k, const char *value, lockfs_settings *s,
                               char **why)
{
	g_autofree char *q = quote(value);
	int64_t ms;
	if (!lockfs_parse_duration(value, &ms)) {
		*why = g_strdup_printf("%s is not a duration; write a number with a unit "
		                       "such as 500ms, 30s, 5m, 1h or 2d (a bare number "
		                       "is seconds)",
		                       q);
		return false;
	}
	if (ms < k->min_ms) {
		if (k->min_ms == 1)
			*why = g_strdup_printf("%s is zero; write a positive duration", q);
		else
			*why = g_strdup_printf("%s is shorter than %" G_GINT64_FORMAT
			                       "ms; write at least %" G_GINT64_FORMAT "ms",
			                       q, k->min_ms, k->min_ms);
		return false;
	}
	*FIELD(s, k, int64_t) = ms;
	return true;
}

static bool parse_host(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	if (!*value) {
		*why = g_strdup("the host name is empty; write this host's name or remove "
		                "the key to use the system's");
	} else if (strlen(value) > HOST_MAX) {
		*why = g_strdup_printf("the host name is %zu bytes long; write at most %d "
		                       "bytes",
		                       strlen(value), HOST_MAX);
	} else if (has_control(value) || strpbrk(value, " \t") ||
	           !g_utf8_validate(value, -1, NULL)) {
		g_autofree char *q = quote(value);
		*why = g_strdup_printf("%s has spaces, control characters or invalid "
		                       "UTF-8; write a plain host name",
		                       q);
	} else {
		set_string(FIELD(s, k, char *), value);
		return true;
	}
	return false;
}

static bool parse_path(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	/* A path whose default is "" may be left empty: none. */
	if (!*value && k->def && !*k->def) {
		set_string(FIELD(s, k, char *), NULL);
		return true;
	}
	if (!g_path_is_absolute(value)) {
		g_autofree char *q = quote(value);
		*why = g_strdup_printf("%s is not an absolute path; write one starting "
		                       "with /",
		                       q);
		return false;
	}
	set_string(FIELD(s, k, char *), value);
	return true;
}

static bool parse_command(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	(void)why;
	/* Empty means no command. */
	set_string(FIELD(s, k, char *), *value ? value : NULL);
	return true;
}

static bool parse_mode(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	guint64 n;
	if (!g_ascii_string_to_unsigned(value, 8, 0, 07777, &n, NULL)) {
		g_autofree char *q = quote(value);
		*why = g_strdup_printf("%s is not an octal mode; write one such as 1777 "
		                       "or 0755",
		                       q);
		return false;
	}
	*FIELD(s, k, mode_t) = (mode_t)n;
	return true;
}

/* KIND_UID and KIND_GID: a number or a name this host knows. */
static bool parse_owner(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	bool user = k->kind == KIND_UID;
	const char *id_name = user ? "uid" : "gid";
	uint32_t id = 0;
	if (!parse_id(value, user, &id)) {
		g_autofree char *q = quote(value);
		if (g_ascii_isdigit(*value))
			*why = g_strdup_printf("%s is not a valid %s; write a number below "
			                       "4294967295 or a name",
			                       q, id_name);
		else
			*why = g_strdup_printf("no %s named %s on this host; write a %s name "
			                       "or a numeric %s",
			                       user ? "user" : "group", q, user ? "user" : "group",
			                       id_name);
		return false;
	}
	if (user)
		*FIELD(s, k, uid_t) = (uid_t)id;
	else
		*FIELD(s, k, gid_t) = (gid_t)id;
	return true;
}

static bool parse_passthrough(const general_key *k, const char *value, lockfs_settings *s,
                              char **why)
{
	bool b;
	if (g_ascii_strcasecmp(value, "auto") == 0) {
		*FIELD(s, k, lockfs_passthrough_mode) = LOCKFS_PASSTHROUGH_AUTO;
		return true;
	}
	if (parse_bool(value, &b)) {
		*FIELD(s, k, lockfs_passthrough_mode) =
		        b ? LOCKFS_PASSTHROUGH_YES : LOCKFS_PASSTHROUGH_NO;
		return true;
	}
	g_autofree char *q = quote(value);
	*why = g_strdup_printf("%s is not auto, yes or no; write one of them", q);
	return false;
}

static bool parse_bool_key(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	bool b;
	if (!parse_bool(value, &b)) {
		g_autofree char *q = quote(value);
		*why = g_strdup_printf("%s is not a boolean; write true or false", q);
		return false;
	}
	*FIELD(s, k, bool) = b;
	return true;
}

static bool parse_log_level(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	static const char *const levels[] = { "error", "warning", "info", "debug", NULL };
	for (size_t i = 0; levels[i]; i++)
		if (g_ascii_strcasecmp(value, levels[i]) == 0) {
			set_string(FIELD(s, k, char *), levels[i]);
			return true;
		}
	g_autofree char *q = quote(value);
	*why = g_strdup_printf("%s is not a log level; write error, warning, info or "
	                       "debug",
	                       q);
	return false;
}

/* The parser of each kind of general_keys' rows. */
static const kind_parser kind_parsers[] = {
	[KIND_BACKEND] = parse_backend,
	[KIND_SUFFIX] = parse_suffix,
	[KIND_DURATION] = parse_duration_key,
	[KIND_HOST] = parse_host,
	[KIND_PATH] = parse_path,
	[KIND_COMMAND] = parse_command,
	[KIND_MODE] = parse_mode,
	[KIND_UID] = parse_owner,
	[KIND_GID] = parse_owner,
	[KIND_PASSTHROUGH] = parse_passthrough,
	[KIND_BOOL] = parse_bool_key,
	[KIND_LOG_LEVEL] = parse_log_level,
};
G_STATIC_ASSERT(G_N_ELEMENTS(kind_parsers) == KIND_COUNT);

/* Parse VALUE of general key K into S with the parser of its kind. */
static bool parse_general(const general_key *k, const char *value, lockfs_settings *s, char **why)
{
	g_assert((size_t)k->kind < G_N_ELEMENTS(kind_parsers) && kind_parsers[k->kind]);
	return kind_parsers[k->kind](k, value, s, why);
}

static void settings_clear(lockfs_settings *s)
{
	g_free(s->backend);
	g_free(s->suffix);
	g_free(s->host);
	g_free(s->state_dir);
	g_free(s->notify);
	g_free(s->log_file);
	g_free(s->metrics_file);
	g_free(s->log_level);
	memset(s, 0, sizeof(*s));
}

/* Check VALUE for general key K without keeping it. */
static bool check_general(const general_key *k, const char *value, char **why)
{
	lockfs_settings scratch = { 0 };
	bool ok = parse_general(k, value, &scratch, why);
	settings_clear(&scratch);
	return ok;
}

static char *default_text(const general_key *k)
{
	if (k->def)
		return g_strdup(k->def);
	switch (k->kind) {
	case KIND_HOST:
		return g_strdup(g_get_host_name());
	case KIND_PATH: {
		if (geteuid() == 0)
			return g_strdup("/var/lib/lockfs");
		/* The XDG spec says to ignore a relative XDG_STATE_HOME.  Not
		 * g_get_user_state_dir(): it needs GLib 2.72 and caches. */
		const char *xdg = g_getenv("XDG_STATE_HOME");
		if (xdg && g_path_is_absolute(xdg))
			return g_build_filename(xdg, "lockfs", NULL);
		return g_build_filename(g_get_home_dir(), ".local", "state", "lockfs", NULL);
	}
	case KIND_UID:
		return g_strdup_printf("%u", (unsigned)getuid());
	case KIND_GID:
		return g_strdup_printf("%u", (unsigned)getgid());
	case KIND_BOOL: /* allow_other: others reach root's mounts only */
		return g_strdup(geteuid() == 0 ? "true" : "false");
	default:
		g_assert_not_reached();
		return NULL;
	}
}

/* ---- the configuration ---- */

lockfs_config *lockfs_config_new(void)
{
	lockfs_config *cfg = g_new0(lockfs_config, 1);
	cfg->file_values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entry_free);
	cfg->option_values = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entry_free);
	return cfg;
}

void lockfs_config_free(lockfs_config *cfg)
{
	if (!cfg)
		return;
	g_hash_table_destroy(cfg->file_values);
	g_hash_table_destroy(cfg->option_values);
	settings_clear(&cfg->settings);
	g_free(cfg);
}

static const entry *lookup(const lockfs_config *cfg, const char *group, const char *key)
{
	g_autofree char *k = entry_key(group, key);
	const entry *e = g_hash_table_lookup(cfg->option_values, k);
	return e ? e : g_hash_table_lookup(cfg->file_values, k);
}

const char *lockfs_config_origin(const lockfs_config *cfg, const char *group, const char *key)
{
	g_return_val_if_fail(cfg && group && key, NULL);
	const entry *e = lookup(cfg, group, key);
	return e ? e->origin : NULL;
}

/* The start of an error about E: "FILE:LINE: key 'k' in [g]" or
 * "mount option 'g_k=v'" (which names the key already). */
static char *where(const entry *e, const char *group, const char *key)
{
	if (!e)
		return g_strdup_printf("key '%s' in [%s] (default)", key, group);
	if (e->from_option)
		return g_strdup(e->origin);
	return g_strdup_printf("%s: key '%s' in [%s]", e->origin, key, group);
}

static void set_entry_error(GError **error, int code, const entry *e, const char *group,
                            const char *key, const char *why)
{
	g_autofree char *w = where(e, group, key);
	g_set_error(error, LOCKFS_CONFIG_ERROR, code, "%s: %s", w, why);
}

bool lockfs_config_key_error(const lockfs_config *cfg, const char *group, const char *key,
                             GError **error, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *why = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	set_entry_error(error, code, lookup(cfg, group, key), group, key, why);
	return false;
}

/* ---- files ---- */

typedef struct {
	char *group;
	char *key;
	int line;
} scanned;

static void scanned_free(gpointer p)
{
	scanned *s = p;
	g_free(s->group);
	g_free(s->key);
	g_free(s);
}

static bool read_file(const char *path, GString *out, GError **error)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO,
		            "%s: cannot open the configuration file: %s; check the path and its "
		            "permissions",
		            path, g_strerror(e));
		return false;
	}
	char buf[8192];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int e = errno;
			close(fd);
			g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO,
			            "%s: cannot read the configuration file: %s; give a regular "
			            "file",
			            path, g_strerror(e));
			return false;
		}
		if (n == 0)
			break;
		g_string_append_len(out, buf, n);
		if (out->len > FILE_MAX) {
			close(fd);
			g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO,
			            "%s: larger than %d bytes, not a lockfs configuration; give "
			            "the right file",
			            path, FILE_MAX);
			return false;
		}
	}
	close(fd);
	return true;
}

static int line_of(const char *text, const char *at)
{
	int line = 1;
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	return line;
}

/* What scan() carries from line to line. */
typedef struct {
	const char *path;
	GHashTable *group_lines; /* group → its line */
	GHashTable *key_lines;   /* "group/key" → its line */
	char *group;             /* the current group, NULL before the first */
	GPtrArray *keys;         /* of scanned */
} scan_state;

/* "[name]" at line LINENO (S, its text without the leading blanks). */
static bool scan_group(scan_state *st, char *s, int lineno, GError **error)
{
	char *close = strchr(s, ']');
	const char *after = close ? close + 1 : NULL;
	while (after && (*after == ' ' || *after == '\t'))
		after++;
	if (!close || *after) {
		g_autofree char *q = quote(s);
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: %s is not a group header; write [name] alone on "
		            "the line",
		            st->path, lineno, q);
		return false;
	}
	*close = '\0';
	const char *name = s + 1;
	if (!group_known(name)) {
		g_autofree char *known = known_groups_text();
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN,
		            "%s:%d: group [%s]: unknown group; the groups are %s", st->path, lineno,
		            name, known);
		return false;
	}
	gpointer first = g_hash_table_lookup(st->group_lines, name);
	if (first) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: group [%s]: appears again (first at line %d); "
		            "merge the two into one",
		            st->path, lineno, name, GPOINTER_TO_INT(first));
		return false;
	}
	g_hash_table_insert(st->group_lines, g_strdup(name), GINT_TO_POINTER(lineno));
	g_free(st->group);
	st->group = g_strdup(name);
	return true;
}

/* "key=value" at line LINENO (S, as in scan_group). */
static bool scan_key(scan_state *st, char *s, int lineno, GError **error)
{
	char *eq = strchr(s, '=');
	if (!eq || eq == s) {
		g_autofree char *q = quote(s);
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: %s is not a key=value line, a [group] header or a "
		            "# comment; fix or remove it",
		            st->path, lineno, q);
		return false;
	}
	*eq = '\0';
	const char *key = g_strchomp(s);
	g_autofree char *qkey = quote(key);
	if (!st->group) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: key %s comes before any group; put it under "
		            "[" GENERAL_GROUP "] or a backend's group",
		            st->path, lineno, qkey);
		return false;
	}
	if (!key_known(st->group, key)) {
		g_autofree char *hint = unknown_key_hint(st->group, key);
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN,
		            "%s:%d: key %s in [%s]: unknown key; %s", st->path, lineno, qkey,
		            st->group, hint);
		return false;
	}
	char *ek = entry_key(st->group, key);
	gpointer first = g_hash_table_lookup(st->key_lines, ek);
	if (first) {
		g_free(ek);
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: key %s in [%s]: set again (first at line %d); keep one",
		            st->path, lineno, qkey, st->group, GPOINTER_TO_INT(first));
		return false;
	}
	g_hash_table_insert(st->key_lines, ek, GINT_TO_POINTER(lineno));
	scanned *sk = g_new0(scanned, 1);
	sk->group = g_strdup(st->group);
	sk->key = g_strdup(key);
	sk->line = lineno;
	g_ptr_array_add(st->keys, sk);
	return true;
}

/* Walk the lines as GKeyFile does, to learn the line of every group and key
 * (GKeyFile does not keep them) and to refuse unknown names, duplicates and
 * syntax errors with a line number.  Appends a scanned for every key. */
static bool scan(const char *path, const char *text, size_t len, GPtrArray *keys, GError **error)
{
	g_autoptr(GHashTable) group_lines =
	        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	g_autoptr(GHashTable) key_lines =
	        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
	scan_state st = {
		.path = path, .group_lines = group_lines, .key_lines = key_lines, .keys = keys
	};
	const char *p = text, *end = text + len;
	bool ok = true;

	for (int lineno = 1; ok && p < end; lineno++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *eol = nl ? nl : end;
		g_autofree char *line = g_strndup(p, (size_t)(eol - p));
		p = nl ? nl + 1 : end;

		char *s = g_strchug(line);
		if (*s == '\0' || *s == '#')
			continue;
		size_t n = strlen(s);
		if (s[n - 1] == '\r') /* GKeyFile drops it too */
			s[n - 1] = '\0';
		ok = *s == '[' ? scan_group(&st, s, lineno, error)
		               : scan_key(&st, s, lineno, error);
	}
	g_free(st.group);
	return ok;
}

/* The value of a scanned key, unescaped by GKeyFile, or NULL when an escape
 * is invalid.  Trailing blanks are dropped first (GKeyFile keeps them) so
 * "ttl = 30s " works; "\s" still writes a trailing space. */
static char *file_value(GKeyFile *kf, const scanned *sk)
{
	g_autofree char *raw = g_key_file_get_value(kf, sk->group, sk->key, NULL);
	if (!raw)
		return NULL;
	g_strchomp(raw);
	g_key_file_set_value(kf, sk->group, sk->key, raw);
	/* On a bad escape GKeyFile returns a string and sets the error. */
	GError *local = NULL;
	char *value = g_key_file_get_string(kf, sk->group, sk->key, &local);
	if (local) {
		g_error_free(local);
		g_free(value);
		return NULL;
	}
	return value;
}

bool lockfs_config_load_file(lockfs_config *cfg, const char *path, GError **error)
{
	g_return_val_if_fail(cfg && path, false);
	g_autoptr(GString) text = g_string_new(NULL);
	if (!read_file(path, text, error))
		return false;

	const char *bad;
	if (!g_utf8_validate(text->str, (gssize)text->len, &bad)) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s:%d: %s; save the file as UTF-8 text", path, line_of(text->str, bad),
		            *bad ? "invalid UTF-8" : "a NUL byte");
		return false;
	}

	g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(scanned_free);
	if (!scan(path, text->str, text->len, keys, error))
		return false;

	g_autoptr(GKeyFile) kf = g_key_file_new();
	GError *local = NULL;
	if (!g_key_file_load_from_data(kf, text->str, text->len, G_KEY_FILE_NONE, &local)) {
		/* scan() refuses what GKeyFile refuses, so this is unexpected. */
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX,
		            "%s: %s; fix the syntax", path, local->message);
		g_error_free(local);
		return false;
	}

	/* Collect everything first: a file with an error changes nothing. */
	g_autoptr(GHashTable) values =
	        g_hash_table_new_full(g_str_hash, g_str_equal, g_free, entry_free);
	for (guint i = 0; i < keys->len; i++) {
		const scanned *sk = keys->pdata[i];
		entry *e = g_new0(entry, 1);
		e->origin = g_strdup_printf("%s:%d", path, sk->line);
		g_hash_table_insert(values, entry_key(sk->group, sk->key), e);

		e->value = file_value(kf, sk);
		if (!e->value) {
			set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, sk->group, sk->key,
			                "invalid escape sequence; the escapes are \\s (space), "
			                "\\n, \\t, \\r and \\\\ (a backslash)");
			return false;
		}
		const general_key *gk =
		        strcmp(sk->group, GENERAL_GROUP) == 0 ? find_general(sk->key) : NULL;
		g_autofree char *why = NULL;
		if (gk && !check_general(gk, e->value, &why)) {
			set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, sk->group, sk->key,
			                why);
			return false;
		}
	}

	GHashTableIter it;
	gpointer k, v;
	g_hash_table_iter_init(&it, values);
	while (g_hash_table_iter_next(&it, &k, &v)) {
		g_hash_table_iter_steal(&it);
		g_hash_table_replace(cfg->file_values, k, v);
	}
	cfg->finished = false;
	return true;
}

/* ---- mount options ---- */

/* NAME (VALUE NULL without '=') as an option that mount(8), systemd or FUSE
 * consume: 1 theirs (*FOR_FUSE set), 0 not theirs, -1 theirs but wrong. */
static int fuse_option(const char *name, const char *value, const char *origin, bool *for_fuse,
                       GError **error)
{
	const char *problem = NULL;
	if (in_list(fuse_flags, name)) {
		if (!value) {
			*for_fuse = true;
			return 1;
		}
		problem = "takes no value";
	} else if (in_list(fuse_valued, name)) {
		if (value) {
			*for_fuse = true;
			return 1;
		}
		problem = "needs a value";
	} else if (g_str_has_prefix(name, "x-")) {
		/* x-systemd.requires=... and friends, for systemd and mount(8). */
		*for_fuse = true;
		return 1;
	}
	if (!problem)
		return 0;
	g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
	            "%s: the FUSE option '%s' %s; write %s%s", origin, name, problem, name,
	            value ? "" : "=VALUE");
	return -1;
}

/* Ours: a general key (*GK set), or GROUP_key of a registered group.  The
 * group (NULL when NAME is neither) and *KEY, which points into NAME. */
static char *option_key(const char *name, const general_key **gk, const char **key)
{
	*gk = find_general(name);
	if (*gk) {
		*key = name;
		return g_strdup(GENERAL_GROUP);
	}
	const char *us = strchr(name, '_');
	if (!us)
		return NULL;
	char *group = g_strndup(name, (size_t)(us - name));
	*key = us + 1;
	if (!group_keys(group) || !in_list(group_keys(group), *key))
		g_clear_pointer(&group, g_free);
	return group;
}

/* NAME is no option of ours: say so, with the nearest name there is. */
static void unknown_option(const char *name, const char *origin, GError **error)
{
	suggestion sg = { .typed = name, .dist = G_MAXUINT };
	for (size_t i = 0; i < G_N_ELEMENTS(general_keys); i++)
		consider(&sg, general_keys[i].name, general_keys[i].name);
	g_autoptr(GPtrArray) groups = sorted_groups();
	for (guint i = 0; i < groups->len; i++) {
		const char *g = groups->pdata[i];
		for (const char *const *k = group_keys(g); *k; k++) {
			g_autofree char *full = g_strconcat(g, "_", *k, NULL);
			consider(&sg, full, full);
		}
	}
	g_autofree char *best = sg.best;
	g_autofree char *hint =
	        best ? g_strdup_printf("did you mean '%s'?", best)
	             : g_strdup("write a key of [" GENERAL_GROUP "] (ttl=30s), a backend key "
	                        "prefixed with its group (ldap_uri=...) or a "
	                        "FUSE option");
	g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN,
	            "%s: unknown option; %s", origin, hint);
}

bool lockfs_config_set_option(lockfs_config *cfg, const char *option, bool *for_fuse,
                              GError **error)
{
	g_return_val_if_fail(cfg && option && for_fuse, false);
	*for_fuse = false;

	const char *eq = strchr(option, '=');
	g_autofree char *name = eq ? g_strndup(option, (size_t)(eq - option)) : g_strdup(option);
	const char *value = eq ? eq + 1 : NULL;
	g_autofree char *qopt = quote(option);
	g_autofree char *origin = g_strdup_printf("mount option %s", qopt);

	int fuse = fuse_option(name, value, origin, for_fuse, error);
	if (fuse)
		return fuse > 0;

	const general_key *gk;
	const char *key = NULL;
	g_autofree char *group = option_key(name, &gk, &key);
	if (!group) {
		unknown_option(name, origin, error);
		return false;
	}

	if (!value && gk && gk->kind != KIND_BOOL) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE,
		            "%s: needs a value; write %s=VALUE", origin, name);
		return false;
	}
	g_autofree char *why = NULL;
	if (gk && value && !check_general(gk, value, &why)) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE, "%s: %s", origin,
		            why);
		return false;
	}

	/* Backend keys are typed only by their getter: a flag is stored as
	 * "true" and marked, so that a getter for a string can refuse it. */
	entry *e = g_new0(entry, 1);
	e->value = g_strdup(value ? value : "true");
	e->origin = g_steal_pointer(&origin);
	e->from_option = true;
	e->flag = value == NULL;
	/* The last of repeated options wins, as with mount(8). */
	g_hash_table_replace(cfg->option_values, entry_key(group, key), e);
	cfg->finished = false;
	return true;
}

/* ---- finish ---- */

/* "ttl=30s (FILE:3)", "ttl=30s (mount option)" or "ttl=30s (default)". */
static char *describe(const lockfs_config *cfg, const char *key)
{
	const entry *e = lookup(cfg, GENERAL_GROUP, key);
	g_autofree char *def = e ? NULL : default_text(find_general(key));
	g_autofree char *v = printable(e ? e->value : def);
	return g_strdup_printf("%s=%s (%s)", key, v,
	                       !e               ? "default"
	                       : e->from_option ? "mount option"
	                                        : e->origin);
}

/* Refuse when BAD: KEY must be RELATION OTHER.  The error points at KEY when
 * it was set, else at OTHER (the defaults agree with each other). */
static bool check_rule(const lockfs_config *cfg, bool bad, const char *key, const char *relation,
                       const char *other, const char *fix, GError **error)
{
	if (!bad)
		return true;
	const char *blamed = lookup(cfg, GENERAL_GROUP, key) ? key : other;
	g_autofree char *w = where(lookup(cfg, GENERAL_GROUP, blamed), GENERAL_GROUP, blamed);
	g_autofree char *dk = describe(cfg, key);
	g_autofree char *dother = describe(cfg, other);
	g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_CONFLICT,
	            "%s: %s must be %s %s; %s", w, dk, relation, dother, fix);
	return false;
}

bool lockfs_config_finish(lockfs_config *cfg, GError **error)
{
	g_return_val_if_fail(cfg, false);
	lockfs_settings s = { 0 };

	for (size_t i = 0; i < G_N_ELEMENTS(general_keys); i++) {
		const general_key *k = &general_keys[i];
		const entry *e = lookup(cfg, GENERAL_GROUP, k->name);
		g_autofree char *def = e ? NULL : default_text(k);
		g_autofree char *why = NULL;
		if (!parse_general(k, e ? e->value : def, &s, &why)) {
			set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, GENERAL_GROUP, k->name,
			                why);
			settings_clear(&s);
			return false;
		}
	}

	/* A lease must be renewed before its loss is declared (ttl less a
	 * fifth after the last renewal sent), and a backend call give up before
	 * it expires; a live holder must not look stale between heartbeats. */
	if (!check_rule(cfg, s.renew_ms != 0 && s.renew_ms >= s.ttl_ms - s.ttl_ms / 5,
	                "renew_interval", "shorter than four fifths of", "ttl",
	                "lower renew_interval (0 means ttl/3) or raise ttl", error) ||
	    !check_rule(cfg, s.network_timeout_ms >= s.ttl_ms, "network_timeout", "shorter than",
	                "ttl", "lower network_timeout or raise ttl", error) ||
	    !check_rule(cfg, s.stale_after_ms != 0 && s.stale_after_ms <= s.ttl_ms, "stale_after",
	                "0 (never) or longer than", "ttl", "raise stale_after or lower ttl",
	                error) ||
	    !check_rule(cfg, s.stale_after_ms != 0 && s.heartbeat_min_ms >= s.stale_after_ms,
	                "heartbeat_min_interval", "shorter than", "stale_after",
	                "lower heartbeat_min_interval or raise stale_after", error)) {
		settings_clear(&s);
		return false;
	}

	if (s.renew_ms == 0)
		s.renew_ms = s.ttl_ms / 3;
	if (s.debug)
		s.foreground = true;
	settings_clear(&cfg->settings);
	cfg->settings = s;
	cfg->finished = true;
	return true;
}

const lockfs_settings *lockfs_config_settings(const lockfs_config *cfg)
{
	g_return_val_if_fail(cfg && cfg->finished, NULL);
	return &cfg->settings;
}

/* ---- typed getters ---- */

/* The entry of GROUP/KEY, NULL when absent.  False when KEY was never
 * registered: a programming error, reported like a configuration one. */
static bool get_entry(const lockfs_config *cfg, const char *group, const char *key,
                      const entry **out, GError **error)
{
	if (!group_known(group) || !key_known(group, key)) {
		g_set_error(error, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN,
		            "key '%s' in [%s] is not registered; list it in "
		            "lockfs_config_register_group()",
		            key, group);
		return false;
	}
	*out = lookup(cfg, group, key);
	return true;
}

/* The value of E for a getter that needs one: flags only work for booleans. */
static const char *need_value(const entry *e, const char *group, const char *key, GError **error)
{
	if (!e->flag)
		return e->value;
	g_autofree char *why =
	        strcmp(group, GENERAL_GROUP) == 0
	                ? g_strdup_printf("needs a value; write %s=VALUE", key)
	                : g_strdup_printf("needs a value; write %s_%s=VALUE", group, key);
	set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, group, key, why);
	return NULL;
}

bool lockfs_config_get_string(const lockfs_config *cfg, const char *group, const char *key,
                              const char *def, char **out, GError **error)
{
	g_return_val_if_fail(cfg && group && key && out, false);
	const entry *e;
	if (!get_entry(cfg, group, key, &e, error))
		return false;
	const char *v = e ? need_value(e, group, key, error) : def;
	if (e && !v)
		return false;
	*out = g_strdup(v);
	return true;
}

bool lockfs_config_get_bool(const lockfs_config *cfg, const char *group, const char *key, bool def,
                            bool *out, GError **error)
{
	g_return_val_if_fail(cfg && group && key && out, false);
	const entry *e;
	if (!get_entry(cfg, group, key, &e, error))
		return false;
	if (!e) {
		*out = def;
		return true;
	}
	if (!parse_bool(e->value, out)) {
		g_autofree char *q = quote(e->value);
		g_autofree char *why =
		        g_strdup_printf("%s is not a boolean; write true or false", q);
		set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, group, key, why);
		return false;
	}
	return true;
}

bool lockfs_config_get_duration(const lockfs_config *cfg, const char *group, const char *key,
                                int64_t def_ms, int64_t *out_ms, GError **error)
{
	g_return_val_if_fail(cfg && group && key && out_ms, false);
	const entry *e;
	if (!get_entry(cfg, group, key, &e, error))
		return false;
	if (!e) {
		*out_ms = def_ms;
		return true;
	}
	const char *v = need_value(e, group, key, error);
	if (!v)
		return false;
	if (!lockfs_parse_duration(v, out_ms)) {
		g_autofree char *q = quote(v);
		g_autofree char *why = g_strdup_printf("%s is not a duration; write a number with "
		                                       "a unit such as 500ms, 30s, 5m, 1h or 2d "
		                                       "(a bare number is seconds)",
		                                       q);
		set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, group, key, why);
		return false;
	}
	return true;
}

bool lockfs_config_get_int(const lockfs_config *cfg, const char *group, const char *key,
                           int64_t def, int64_t min, int64_t max, int64_t *out, GError **error)
{
	g_return_val_if_fail(cfg && group && key && out && min <= max, false);
	const entry *e;
	if (!get_entry(cfg, group, key, &e, error))
		return false;
	if (!e) {
		*out = def;
		return true;
	}
	const char *v = need_value(e, group, key, error);
	if (!v)
		return false;
	gint64 n;
	if (!g_ascii_string_to_signed(v, 10, min, max, &n, NULL)) {
		g_autofree char *q = quote(v);
		g_autofree char *why =
		        g_strdup_printf("%s is not a whole number from %" G_GINT64_FORMAT
		                        " to %" G_GINT64_FORMAT "; write one in that range",
		                        q, (gint64)min, (gint64)max);
		set_entry_error(error, LOCKFS_CONFIG_ERROR_VALUE, e, group, key, why);
		return false;
	}
	*out = n;
	return true;
}
