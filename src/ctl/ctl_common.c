/* lockfsctl: finding lockfs mounts and reading the inspection view the daemon
 * serves (.lockfs/status, .lockfs/KEY). */
#include "ctl.h"
#include "view_format.h"

#include <errno.h>
#include <fcntl.h>
#include <lockfs/config.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#define FUSE_SUPER_MAGIC 0x65735546
#define TEXT_MAX (16 << 20) /* more than any status listing a sane mount makes */

const char *ctl_prog = "lockfsctl";

void ctl_err(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", ctl_prog, msg);
}

int ctl_usage_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_autofree char *msg = g_strdup_vprintf(fmt, ap);
	va_end(ap);
	fprintf(stderr, "%s: %s; see %s --help\n", ctl_prog, msg, ctl_prog);
	return CTL_EXIT_USAGE;
}

int ctl_opt_value(int argc, char **argv, int *i, const char *name, const char **out)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*out = a + n + 1;
		return 1;
	}
	if (a[n] != '\0')
		return 0;
	if (*i + 1 >= argc) {
		ctl_usage_error("%s needs a value", name);
		return -1;
	}
	*out = argv[++*i];
	return 1;
}

void ctl_lock_free(ctl_lock *l)
{
	if (!l)
		return;
	g_free(l->mount);
	g_free(l->key);
	g_free(l->path);
	g_free(l->state);
	g_free(l->fence);
	g_free(l->host);
	g_free(l->user);
	g_free(l->command);
	g_free(l->acquired);
	g_free(l->heartbeat);
	g_free(l->backend);
	g_free(l);
}

static ctl_lock *lock_new(const char *mount, const char *key)
{
	ctl_lock *l = g_new0(ctl_lock, 1);
	l->mount = g_strdup(mount);
	l->key = g_strdup(key);
	l->path = g_build_filename(mount, key, NULL);
	l->pid = l->uid = l->gid = -1;
	l->acquired_s = l->heartbeat_s = -1;
	l->age_s = l->heartbeat_age_s = -1;
	l->lease_left_ms = -1;
	return l;
}

char *ctl_read_text(const char *path, int *err)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		*err = errno;
		return NULL;
	}
	GString *s = g_string_new(NULL);
	char buf[8192];
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || s->len > TEXT_MAX) {
			*err = n < 0 ? errno : EFBIG;
			close(fd);
			g_string_free(s, TRUE);
			return NULL;
		}
		if (n == 0)
			break;
		g_string_append_len(s, buf, n);
	}
	close(fd);
	return g_string_free(s, FALSE);
}

char *ctl_escape(const char *s)
{
	return lockfs_escape(s);
}

char *ctl_escape_text(const char *s)
{
	return lockfs_escape_text(s);
}

static bool parse_i64(const char *s, int64_t *out)
{
	gint64 v;
	if (!s || !g_ascii_string_to_signed(s, 10, G_MININT64, G_MAXINT64, &v, NULL))
		return false;
	*out = v;
	return true;
}

static int64_t iso_to_unix(const char *s)
{
	if (!s)
		return -1;
	g_autoptr(GDateTime) t = g_date_time_new_from_iso8601(s, NULL);
	return t ? g_date_time_to_unix(t) : -1;
}

/* Move V's fields into L: text as it is, numbers parsed (-1 when absent or
 * not a number). */
static void lock_from_view(ctl_lock *l, lockfs_view *v)
{
	char **text[LOCKFS_VF_COUNT] = {
		[LOCKFS_VF_STATE] = &l->state,         [LOCKFS_VF_FENCE] = &l->fence,
		[LOCKFS_VF_HOST] = &l->host,           [LOCKFS_VF_USER] = &l->user,
		[LOCKFS_VF_COMMAND] = &l->command,     [LOCKFS_VF_ACQUIRED] = &l->acquired,
		[LOCKFS_VF_HEARTBEAT] = &l->heartbeat, [LOCKFS_VF_BACKEND] = &l->backend,
	};
	int64_t *num[LOCKFS_VF_COUNT] = {
		[LOCKFS_VF_PID] = &l->pid,
		[LOCKFS_VF_UID] = &l->uid,
		[LOCKFS_VF_GID] = &l->gid,
		[LOCKFS_VF_AGE] = &l->age_s,
		[LOCKFS_VF_HEARTBEAT_AGE] = &l->heartbeat_age_s,
		[LOCKFS_VF_LEASE_LEFT_MS] = &l->lease_left_ms,
	};
	for (int f = 0; f < LOCKFS_VF_COUNT; f++) {
		if (!v->v[f])
			continue;
		if (text[f]) {
			g_free(*text[f]);
			*text[f] = g_steal_pointer(&v->v[f]);
		} else if (num[f] && !parse_i64(v->v[f], num[f])) {
			*num[f] = -1;
		}
	}
	if (v->v[LOCKFS_VF_MINE])
		l->mine = !strcmp(v->v[LOCKFS_VF_MINE], "yes");
	lockfs_view_clear(v);
}

GPtrArray *ctl_read_status(const char *mount, int *err)
{
	g_autofree char *path = g_build_filename(mount, LOCKFS_VIEW_DIR, LOCKFS_VIEW_STATUS, NULL);
	g_autofree char *text = ctl_read_text(path, err);
	if (!text)
		return NULL;
	GPtrArray *locks = g_ptr_array_new_with_free_func((GDestroyNotify)ctl_lock_free);
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		lockfs_view v;
		/* A line that does not parse names no lock: there is nothing to show. */
		if (lockfs_view_parse_status_line(p, len, &v)) {
			ctl_lock *l = lock_new(mount, v.v[LOCKFS_VF_LOCK]);
			lock_from_view(l, &v);
			g_ptr_array_add(locks, l);
		}
		lockfs_view_clear(&v);
		p += len + (nl ? 1 : 0);
	}
	return locks;
}

ctl_lock *ctl_read_lock(const char *mount, const char *key, int *err)
{
	g_autofree char *path = g_build_filename(mount, LOCKFS_VIEW_DIR, key, NULL);
	g_autofree char *text = ctl_read_text(path, err);
	if (!text)
		return NULL;
	lockfs_view v;
	if (!lockfs_view_parse_lock_text(text, &v)) { /* released between lookup and read */
		*err = ENOENT;
		return NULL;
	}
	ctl_lock *l = lock_new(mount, key);
	lock_from_view(l, &v);
	l->acquired_s = iso_to_unix(l->acquired);
	l->heartbeat_s = iso_to_unix(l->heartbeat);
	return l;
}

GPtrArray *ctl_read_all(const char *mount, int *err)
{
	GPtrArray *locks = ctl_read_status(mount, err);
	if (!locks)
		return NULL;
	for (guint i = 0; i < locks->len; i++) {
		ctl_lock *s = locks->pdata[i];
		int e;
		ctl_lock *full = ctl_read_lock(mount, s->key, &e);
		if (!full)
			continue; /* released since the listing: show what the listing said */
		/* The lock's own view adds the command, times, gid and backend. */
		if (!full->state)
			full->state = g_strdup(s->state);
		if (!full->fence)
			full->fence = g_strdup(s->fence);
		locks->pdata[i] = full;
		ctl_lock_free(s);
	}
	return locks;
}

bool ctl_is_lockfs_mount(const char *dir)
{
	struct statfs sfs;
	struct stat st;
	if (statfs(dir, &sfs) != 0 || (unsigned long)sfs.f_type != FUSE_SUPER_MAGIC)
		return false;
	g_autofree char *status = g_build_filename(dir, LOCKFS_VIEW_DIR, LOCKFS_VIEW_STATUS, NULL);
	return stat(status, &st) == 0 && S_ISREG(st.st_mode);
}

GPtrArray *ctl_list_mounts(void)
{
	GPtrArray *out = g_ptr_array_new_with_free_func(g_free);
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/self/mounts", &text, NULL, NULL))
		return out;
	g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
	for (int i = 0; lines[i]; i++) {
		g_auto(GStrv) f = g_strsplit(lines[i], " ", 4);
		if (g_strv_length(f) < 3 || strcmp(f[2], "fuse.lockfs") != 0)
			continue;
		/* The kernel escapes a mount point as .lockfs/status does. */
		char *mnt = lockfs_unescape(f[1], -1);
		if (mnt)
			g_ptr_array_add(out, mnt);
	}
	return out;
}

bool ctl_target_resolve(const char *path, ctl_target *t, GError **error)
{
	memset(t, 0, sizeof(*t));
	g_autofree char *base = g_path_get_basename(path);
	g_autofree char *dir = g_path_get_dirname(path);
	size_t len = strlen(path);
	if (!*path || path[len - 1] == '/' || !strcmp(base, ".") || !strcmp(base, "..") ||
	    !strcmp(base, "/")) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
		            "'%s' does not name a lock file; give its path, e.g. /var/lock/x.lock",
		            path);
		return false;
	}
	char *real = realpath(dir, NULL);
	if (!real) {
		int e = errno;
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(e),
		            "cannot reach the directory %s of %s: %s; check the path", dir, path,
		            g_strerror(e));
		return false;
	}
	t->dir = real;
	t->base = g_steal_pointer(&base);
	t->path = g_build_filename(t->dir, t->base, NULL);

	/* Only a FUSE directory can be in a lockfs mount; then walk up, within
	 * the same filesystem, to the directory that serves .lockfs/status. */
	struct statfs sfs;
	struct stat st;
	if (statfs(t->dir, &sfs) != 0 || (unsigned long)sfs.f_type != FUSE_SUPER_MAGIC ||
	    stat(t->dir, &st) != 0)
		return true;
	dev_t dev = st.st_dev;
	g_autofree char *cur = g_strdup(t->dir);
	for (;;) {
		g_autofree char *status =
		        g_build_filename(cur, LOCKFS_VIEW_DIR, LOCKFS_VIEW_STATUS, NULL);
		if (stat(status, &st) == 0 && S_ISREG(st.st_mode)) {
			t->mount = g_strdup(cur);
			break;
		}
		if (!strcmp(cur, "/"))
			break;
		char *up = g_path_get_dirname(cur);
		if (stat(up, &st) != 0 || st.st_dev != dev) {
			g_free(up);
			break;
		}
		g_free(cur);
		cur = up;
	}
	if (t->mount) {
		const char *rel = t->dir + strlen(t->mount);
		while (*rel == '/')
			rel++;
		t->key = *rel ? g_strconcat(rel, "/", t->base, NULL) : g_strdup(t->base);
	}
	return true;
}

void ctl_target_clear(ctl_target *t)
{
	g_free(t->path);
	g_free(t->dir);
	g_free(t->base);
	g_free(t->mount);
	g_free(t->key);
	memset(t, 0, sizeof(*t));
}

bool ctl_parse_seconds(const char *text, int64_t *ms)
{
	/* Decimal seconds as flock takes them ("5", "0.5", ".007"); finer than a
	 * millisecond rounds up, so that a wait given stays a wait. */
	const char *p = text;
	int64_t whole = 0, frac = 0;
	int digits = 0, fdigits = 0;
	bool finer = false;
	for (; g_ascii_isdigit(*p); p++, digits++) {
		if (whole > (G_MAXINT64 / 1000 - 1000) / 10)
			return false;
		whole = whole * 10 + (*p - '0');
	}
	if (*p == '.')
		for (p++; g_ascii_isdigit(*p); p++, fdigits++) {
			if (fdigits < 3)
				frac = frac * 10 + (*p - '0');
			else if (*p != '0')
				finer = true;
		}
	if (*p || (!digits && !fdigits))
		return lockfs_parse_duration(text, ms); /* "500ms", "2m", or nothing */
	for (int k = fdigits; k < 3; k++)
		frac *= 10;
	*ms = whole * 1000 + frac + (finer ? 1 : 0);
	return true;
}

char *ctl_format_age(int64_t s)
{
	if (s < 0)
		return g_strdup("?");
	if (s < 60)
		return g_strdup_printf("%" G_GINT64_FORMAT "s", s);
	if (s < 3600)
		return g_strdup_printf("%" G_GINT64_FORMAT "m%" G_GINT64_FORMAT "s", s / 60,
		                       s % 60);
	if (s < 86400)
		return g_strdup_printf("%" G_GINT64_FORMAT "h%" G_GINT64_FORMAT "m", s / 3600,
		                       s % 3600 / 60);
	return g_strdup_printf("%" G_GINT64_FORMAT "d%" G_GINT64_FORMAT "h", s / 86400,
	                       s % 86400 / 3600);
}

char *ctl_format_ms(int64_t ms)
{
	if (ms % 1000)
		return g_strdup_printf("%" G_GINT64_FORMAT "ms", ms);
	int64_t s = ms / 1000;
	if (s && s % 3600 == 0)
		return g_strdup_printf("%" G_GINT64_FORMAT "h", s / 3600);
	if (s && s % 60 == 0)
		return g_strdup_printf("%" G_GINT64_FORMAT "m", s / 60);
	if (s > 60)
		return g_strdup_printf("%" G_GINT64_FORMAT "m%" G_GINT64_FORMAT "s", s / 60,
		                       s % 60);
	return g_strdup_printf("%" G_GINT64_FORMAT "s", s);
}

char *ctl_iso(int64_t s)
{
	g_autoptr(GDateTime) t = g_date_time_new_from_unix_utc(s);
	return t ? g_date_time_format(t, "%Y-%m-%dT%H:%M:%SZ") : g_strdup("?");
}

void ctl_json_string(GString *out, const char *s)
{
	if (!s) {
		g_string_append(out, "null");
		return;
	}
	/* Another host's notes may not be UTF-8; JSON must be.  Characters
	 * escaped in the text view are \u escapes here, so that the JSON too is
	 * safe to print (U+2028 and U+2029 also end lines in JavaScript). */
	g_autofree char *v = g_utf8_make_valid(s, -1);
	g_string_append_c(out, '"');
	for (const char *p = v; *p; p = g_utf8_next_char(p)) {
		gunichar c = g_utf8_get_char(p);
		if (c == '"' || c == '\\')
			g_string_append_printf(out, "\\%c", (char)c);
		else if (c == '\n')
			g_string_append(out, "\\n");
		else if (c == '\t')
			g_string_append(out, "\\t");
		else if (c != ' ' && lockfs_unichar_unsafe(c))
			g_string_append_printf(out, "\\u%04x", (unsigned)c);
		else
			g_string_append_len(out, p, g_utf8_next_char(p) - p);
	}
	g_string_append_c(out, '"');
}

static int64_t boot_time_s(void)
{
	g_autofree char *text = NULL;
	if (!g_file_get_contents("/proc/stat", &text, NULL, NULL))
		return -1;
	const char *p = strstr(text, "\nbtime ");
	int64_t v;
	if (!p)
		return -1;
	g_autofree char *num = g_strndup(p + 7, strcspn(p + 7, "\n"));
	return parse_i64(num, &v) ? v : -1;
}

bool ctl_proc_info(int64_t pid, int64_t *start_s, char **comm)
{
	if (pid <= 0 || pid > G_MAXINT32)
		return false;
	g_autofree char *path = g_strdup_printf("/proc/%" G_GINT64_FORMAT "/stat", pid);
	g_autofree char *text = NULL;
	if (!g_file_get_contents(path, &text, NULL, NULL))
		return false;
	/* "PID (COMM) S ..." where COMM may hold spaces and parentheses. */
	char *open = strchr(text, '('), *close = strrchr(text, ')');
	if (!open || !close || close < open)
		return false;
	g_auto(GStrv) f = g_strsplit(close + 2, " ", -1);
	if (g_strv_length(f) < 20 || !strcmp(f[0], "Z"))
		return false; /* a zombie holds nothing */
	int64_t ticks, boot = boot_time_s();
	long hz = sysconf(_SC_CLK_TCK);
	if (!parse_i64(f[19], &ticks) || boot < 0 || hz <= 0)
		*start_s = -1;
	else
		*start_s = boot + ticks / hz;
	if (comm)
		*comm = g_strndup(open + 1, close - open - 1);
	return true;
}

bool ctl_confirm(const char *question)
{
	fprintf(stderr, "%s [y/N] ", question);
	fflush(stderr);
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, stdin);
	bool yes = false;
	if (n > 0) {
		g_strstrip(line);
		yes = !g_ascii_strcasecmp(line, "y") || !g_ascii_strcasecmp(line, "yes");
	} else {
		fputc('\n', stderr);
	}
	free(line);
	return yes;
}

int ctl_request_break(const char *mount, const char *key, const char *fence)
{
	g_autofree char *path = g_build_filename(mount, LOCKFS_VIEW_DIR, LOCKFS_VIEW_BREAK, NULL);
	g_autofree char *line = lockfs_view_break_request(key, fence);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return errno;
	ssize_t n = write(fd, line, strlen(line));
	int e = n < 0 ? errno : 0;
	close(fd);
	return e;
}
