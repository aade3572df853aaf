/* The record of a mount's held locks in state_dir: see lockstate.h. */
#include "lockstate.h"
#include "view_format.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "lockfs-locks 1"
#define G_FIELDS 19
/* Rewrite once the appended bytes pass this and LIVE records' worth. */
#define REWRITE_MIN (256 * 1024)
#define REC_ESTIMATE 256

struct lockfs_lockstate {
	char *path;
	int fd; /* O_APPEND, flock()ed */
	char *header;
	uint64_t bytes; /* appended since the last rewrite */
};

void lockfs_lockrec_clear(lockfs_lockrec *r)
{
	g_free(r->key);
	g_free(r->token);
	g_free(r->content);
	lockfs_holder_clear(&r->holder);
	memset(r, 0, sizeof(*r));
}

void lockfs_lockrec_free(gpointer p)
{
	if (!p)
		return;
	lockfs_lockrec_clear(p);
	g_free(p);
}

void lockfs_lockstate_found_clear(lockfs_lockstate_found *f)
{
	if (f->locks)
		g_ptr_array_free(f->locks, TRUE);
	g_free(f->session);
	for (int i = 0; i < 5; i++)
		g_free(f->header[i]);
	memset(f, 0, sizeof(*f));
}

/* ---- escaping ---- */

static void esc(GString *out, const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	if (!s || !*s) {
		g_string_append_c(out, '%');
		return;
	}
	/* Runs of plain bytes at once; the rest as %XX (upper case). */
	const char *run = s;
	for (const unsigned char *p = (const unsigned char *)s;; p++) {
		if (*p > 0x20 && *p < 0x7f && *p != '%')
			continue;
		g_string_append_len(out, run, (gssize)((const char *)p - run));
		if (!*p)
			return;
		char e[3] = { '%', hex[*p >> 4], hex[*p & 15] };
		g_string_append_len(out, e, 3);
		run = (const char *)p + 1;
	}
}

/* The string FIELD escapes, or NULL for a bad escape or a NUL. */
static char *unesc(const char *field)
{
	if (strcmp(field, "%") == 0)
		return g_strdup("");
	GString *s = g_string_new(NULL);
	for (const char *p = field; *p; p++) {
		if (*p != '%') {
			g_string_append_c(s, *p);
			continue;
		}
		int hi = g_ascii_xdigit_value(p[1]), lo = hi < 0 ? -1 : g_ascii_xdigit_value(p[2]);
		if (hi < 0 || lo < 0 || (hi | lo) == 0) {
			g_string_free(s, TRUE);
			return NULL;
		}
		g_string_append_c(s, (char)(hi * 16 + lo));
		p += 2;
	}
	return g_string_free(s, FALSE);
}

char *lockfs_lockstate_path(const char *dir, const char *mount)
{
	GString *s = g_string_new("mount");
	for (const unsigned char *p = (const unsigned char *)mount; *p; p++) {
		if (g_ascii_isalnum(*p) || *p == '.' || *p == '_' || *p == '-')
			g_string_append_c(s, (char)*p);
		else
			g_string_append_printf(s, "%%%02X", *p);
	}
	g_string_append(s, ".locks");
	char *path = g_build_filename(dir, s->str, NULL);
	g_string_free(s, TRUE);
	return path;
}

/* ---- records ---- */

/* One G line.  Numbers without printf: a line is written at every grant,
 * and printf was most of what recording a grant cost (callgrind). */
static void format_rec(GString *out, const lockfs_lockrec *r)
{
	const lockfs_holder *h = &r->holder;
	g_string_append(out, "G ");
	lockfs_append_u64(out, r->serial);
	g_string_append_c(out, ' ');
	esc(out, r->key);
	g_string_append_c(out, ' ');
	esc(out, r->fence);
	g_string_append_c(out, ' ');
	esc(out, r->token);
	const int64_t signed_nums[] = { h->pid, r->ppid };
	for (size_t i = 0; i < G_N_ELEMENTS(signed_nums); i++) {
		g_string_append_c(out, ' ');
		lockfs_append_i64(out, signed_nums[i]);
	}
	const uint64_t unsigned_nums[] = { r->start, h->uid, h->gid };
	for (size_t i = 0; i < G_N_ELEMENTS(unsigned_nums); i++) {
		g_string_append_c(out, ' ');
		lockfs_append_u64(out, unsigned_nums[i]);
	}
	g_string_append_c(out, ' ');
	lockfs_append_octal(out, h->mode);
	const int64_t times[] = { h->acquired_us, h->heartbeat_us, h->mtime_us, h->atime_us,
		                  h->ctime_us };
	for (size_t i = 0; i < G_N_ELEMENTS(times); i++) {
		g_string_append_c(out, ' ');
		lockfs_append_i64(out, times[i]);
	}
	g_string_append_c(out, ' ');
	esc(out, h->host);
	g_string_append_c(out, ' ');
	esc(out, h->user);
	g_string_append_c(out, ' ');
	esc(out, h->command);
	g_string_append_c(out, ' ');
	if (r->content_len) {
		g_autofree char *b64 = g_base64_encode((const guchar *)r->content, r->content_len);
		g_string_append(out, b64);
	} else {
		g_string_append_c(out, '%');
	}
	g_string_append_c(out, '\n');
}

static bool num_i64(const char *s, int64_t *out)
{
	return g_ascii_string_to_signed(s, 10, INT64_MIN, INT64_MAX, out, NULL);
}

static bool num_u64(const char *s, uint64_t max, uint64_t *out)
{
	return g_ascii_string_to_unsigned(s, 10, 0, max, out, NULL);
}

/* The numbers of a G line, fields 4..14. */
static bool parse_numbers(char **f, lockfs_lockrec *r)
{
	lockfs_holder *h = &r->holder;
	uint64_t uid, gid, mode;
	if (!num_i64(f[4], &h->pid) || !num_i64(f[5], &r->ppid) ||
	    !num_u64(f[6], UINT64_MAX, &r->start) || !num_u64(f[7], UINT32_MAX, &uid) ||
	    !num_u64(f[8], UINT32_MAX, &gid) ||
	    !g_ascii_string_to_unsigned(f[9], 8, 0, 07777777, &mode, NULL) ||
	    !num_i64(f[10], &h->acquired_us) || !num_i64(f[11], &h->heartbeat_us) ||
	    !num_i64(f[12], &h->mtime_us) || !num_i64(f[13], &h->atime_us) ||
	    !num_i64(f[14], &h->ctime_us))
		return false;
	h->uid = (uint32_t)uid;
	h->gid = (uint32_t)gid;
	h->mode = (uint32_t)mode;
	return true;
}

static bool parse_content(const char *f, lockfs_lockrec *r)
{
	if (strcmp(f, "%") == 0)
		return true;
	for (const char *p = f; *p; p++)
		if (!g_ascii_isalnum(*p) && *p != '+' && *p != '/' && *p != '=')
			return false;
	gsize len = 0;
	guchar *raw = g_base64_decode(f, &len);
	if (!len || len > LOCKFS_CONTENT_MAX) {
		g_free(raw);
		return false;
	}
	r->content = (char *)raw;
	r->content_len = len;
	return true;
}

/* A G line's fields into a new record, or NULL. */
static lockfs_lockrec *parse_grant(char **f)
{
	lockfs_lockrec *r = g_new0(lockfs_lockrec, 1);
	g_autofree char *fence = NULL;
	if (!num_u64(f[1], UINT64_MAX, &r->serial) || r->serial == 0 || !(r->key = unesc(f[2])) ||
	    !*r->key || !(fence = unesc(f[3])) || strlen(fence) >= LOCKFS_FENCE_MAX ||
	    !(r->token = unesc(f[4])))
		goto bad;
	g_strlcpy(r->fence, fence, sizeof(r->fence));
	/* The numbers follow the token: f[5..15]. */
	if (!parse_numbers(f + 1, r))
		goto bad;
	if (!(r->holder.host = unesc(f[16])) || !(r->holder.user = unesc(f[17])) ||
	    !(r->holder.command = unesc(f[18])) || !parse_content(f[19], r))
		goto bad;
	return r;
bad:
	lockfs_lockrec_free(r);
	return NULL;
}

/* ---- reading ---- */

typedef struct {
	const char *name;
	lockfs_lockstate_found *found;
	GHashTable *live; /* serial → lockfs_lockrec (owned) */
	int line;
	bool header_done;
	int header_seen;
} reader;

static bool refuse(reader *rd, GError **error, const char *what)
{
	g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
	            "%s:%d: %s; it is not a lock record lockfs wrote: move it aside (the locks "
	            "it recorded then run out with their leases, at once on the local backend)",
	            rd->name, rd->line, what);
	return false;
}

static const char *const header_words[5] = { "mount", "host", "backend", "server", "boot" };

/* A header line "WORD VALUE", in order. */
static bool header_line(reader *rd, char **f, guint n, GError **error)
{
	int i = rd->header_seen;
	if (n != 2 || i >= 5 || strcmp(f[0], header_words[i]) != 0)
		return refuse(rd, error, "not a lockfs lock record header line");
	if (!(rd->found->header[i] = unesc(f[1])))
		return refuse(rd, error, "a bad escape in the header");
	rd->header_done = ++rd->header_seen == 5;
	return true;
}

bool lockfs_lockstate_check(const char *name, const lockfs_lockstate_found *found,
                            const lockfs_lockstate_id *id, GError **error)
{
	const char *want[4] = { id->mount, id->host, id->backend, id->server };
	for (int i = 0; i < 4 && found->locks && found->locks->len; i++) {
		if (!want[i] || !found->header[i] || strcmp(want[i], found->header[i]) == 0)
			continue;
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
		            "%s records %u lock%s of %s '%s', not '%s': stop the lockfs they "
		            "belong to first, or move the file aside (they then run out with their "
		            "leases, at once on the local backend)",
		            name, found->locks->len, found->locks->len == 1 ? "" : "s",
		            header_words[i], found->header[i], want[i]);
		return false;
	}
	return true;
}

static bool record_line(reader *rd, char **f, guint n, GError **error)
{
	if (strcmp(f[0], "G") == 0 && n == G_FIELDS + 1) {
		lockfs_lockrec *r = parse_grant(f);
		if (!r)
			return refuse(rd, error, "a lock record that does not parse");
		g_hash_table_replace(rd->live, &r->serial, r);
		return true;
	}
	uint64_t serial;
	if (strcmp(f[0], "R") == 0 && n == 2 && num_u64(f[1], UINT64_MAX, &serial)) {
		g_hash_table_remove(rd->live, &serial);
		return true;
	}
	if (strcmp(f[0], "session") == 0 && n == 2) {
		char *t = unesc(f[1]);
		if (!t)
			return refuse(rd, error, "a bad session token");
		g_free(rd->found->session);
		rd->found->session = *t ? t : (g_free(t), NULL);
		return true;
	}
	return refuse(rd, error, "not a lockfs lock record line");
}

static gint by_serial(gconstpointer a, gconstpointer b)
{
	const lockfs_lockrec *x = *(lockfs_lockrec *const *)a, *y = *(lockfs_lockrec *const *)b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static bool read_line(reader *rd, char *line, GError **error)
{
	rd->line++;
	if (rd->line == 1)
		return strcmp(line, MAGIC) == 0 ||
		       refuse(rd, error, "is not a lockfs lock record file (no '" MAGIC "')");
	g_auto(GStrv) f = g_strsplit(line, " ", G_FIELDS + 2);
	guint n = g_strv_length(f);
	for (guint i = 0; i < n; i++)
		if (!*f[i])
			return refuse(rd, error, "an empty field");
	if (!n)
		return refuse(rd, error, "an empty line");
	return rd->header_done ? record_line(rd, f, n, error) : header_line(rd, f, n, error);
}

bool lockfs_lockstate_parse(const char *name, const char *text, size_t len,
                            lockfs_lockstate_found *found, GError **error)
{
	memset(found, 0, sizeof(*found));
	reader rd = { .name = name, .found = found };
	rd.live = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL, lockfs_lockrec_free);
	bool ok = true;
	size_t pos = 0;
	while (ok && pos < len) {
		const char *nl = memchr(text + pos, '\n', len - pos);
		if (!nl) { /* torn by a full disk: what it began was never granted */
			found->skipped++;
			break;
		}
		g_autofree char *line = g_strndup(text + pos, nl - (text + pos));
		if (strlen(line) != (size_t)(nl - (text + pos)))
			ok = refuse(&rd, error, "a NUL byte");
		else
			ok = read_line(&rd, line, error);
		pos = nl + 1 - text;
	}
	if (ok && !rd.header_done)
		ok = len == 0 || refuse(&rd, error, "the header is incomplete");
	found->locks = g_ptr_array_new_with_free_func(lockfs_lockrec_free);
	GHashTableIter it;
	gpointer v;
	g_hash_table_iter_init(&it, rd.live);
	while (g_hash_table_iter_next(&it, NULL, &v)) {
		g_ptr_array_add(found->locks, v);
		g_hash_table_iter_steal(&it);
	}
	g_hash_table_destroy(rd.live);
	g_ptr_array_sort(found->locks, by_serial);
	if (!ok)
		lockfs_lockstate_found_clear(found);
	return ok;
}

/* ---- writing ---- */

static int write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(fd, buf, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -ENOSPC;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}

static char *make_header(const lockfs_lockstate_id *id)
{
	GString *h = g_string_new(MAGIC "\nmount ");
	esc(h, id->mount);
	g_string_append(h, "\nhost ");
	esc(h, id->host);
	g_string_append(h, "\nbackend ");
	esc(h, id->backend);
	g_string_append(h, "\nserver ");
	esc(h, id->server);
	g_string_append(h, "\nboot ");
	esc(h, lockfs_boot_id());
	g_string_append_c(h, '\n');
	return g_string_free(h, FALSE);
}

static int append(lockfs_lockstate *st, GString *line)
{
	int r = write_all(st->fd, line->str, line->len);
	if (r == 0)
		st->bytes += line->len;
	return r;
}

int lockfs_lockstate_grant(lockfs_lockstate *st, const lockfs_lockrec *rec)
{
	g_autoptr(GString) line = g_string_sized_new(256);
	format_rec(line, rec);
	return append(st, line);
}

int lockfs_lockstate_release(lockfs_lockstate *st, uint64_t serial)
{
	g_autoptr(GString) line = g_string_new("R ");
	lockfs_append_u64(line, serial);
	g_string_append_c(line, '\n');
	return append(st, line);
}

int lockfs_lockstate_session(lockfs_lockstate *st, const char *token)
{
	g_autoptr(GString) line = g_string_new("session ");
	esc(line, token);
	g_string_append_c(line, '\n');
	return append(st, line);
}

bool lockfs_lockstate_wants_rewrite(const lockfs_lockstate *st, guint live)
{
	return st->bytes > REWRITE_MIN && st->bytes > 4 * (uint64_t)live * REC_ESTIMATE;
}

/* Write TEXT to a temp file beside the state file and rename it over; the
 * new descriptor replaces the old (the flock goes with the new file). */
int lockfs_lockstate_rewrite(lockfs_lockstate *st, GPtrArray *locks, const char *session)
{
	g_autoptr(GString) text = g_string_new(st->header);
	if (session) {
		g_string_append(text, "session ");
		esc(text, session);
		g_string_append_c(text, '\n');
	}
	for (guint i = 0; locks && i < locks->len; i++)
		format_rec(text, locks->pdata[i]);
	g_autofree char *tmp = g_strdup_printf("%s.tmp", st->path);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	int r = flock(fd, LOCK_EX | LOCK_NB) ? -errno : write_all(fd, text->str, text->len);
	if (r == 0 && rename(tmp, st->path) != 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		close(fd);
		return r;
	}
	close(st->fd);
	st->fd = fd;
	st->bytes = 0;
	return 0;
}

/* ---- opening ---- */

static bool lock_file(int fd, const char *path, int wait_ms, GError **error)
{
	int64_t until = g_get_monotonic_time() + (int64_t)wait_ms * 1000;
	while (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		if (errno != EWOULDBLOCK || g_get_monotonic_time() >= until) {
			g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
			            "%s is in use by another lockfs of this mount point (%s); stop "
			            "it first, or give each lockfs its own state_dir",
			            path, errno == EWOULDBLOCK ? "locked" : g_strerror(errno));
			return false;
		}
		g_usleep(20 * 1000);
	}
	return true;
}

static bool read_all(int fd, const char *path, GString *out, GError **error)
{
	char buf[65536];
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)out->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
			            "cannot read %s: %s", path, g_strerror(errno));
			return false;
		}
		if (n == 0)
			return true;
		g_string_append_len(out, buf, n);
	}
}

lockfs_lockstate *lockfs_lockstate_open(const char *dir, const lockfs_lockstate_id *id, int wait_ms,
                                        lockfs_lockstate_found *found, GError **error)
{
	memset(found, 0, sizeof(*found));
	g_autofree char *path = lockfs_lockstate_path(dir, id->mount);
	if (g_mkdir_with_parents(dir, 0755) != 0 && errno != EEXIST) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
		            "cannot make state_dir %s: %s; make it, or set state_dir", dir,
		            g_strerror(errno));
		return NULL;
	}
	int fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
		            "cannot open lock record %s: %s; lockfs must be able to write "
		            "state_dir",
		            path, g_strerror(errno));
		return NULL;
	}
	g_autoptr(GString) text = g_string_new(NULL);
	if (!lock_file(fd, path, wait_ms, error) || !read_all(fd, path, text, error) ||
	    !lockfs_lockstate_parse(path, text->str, text->len, found, error) ||
	    !lockfs_lockstate_check(path, found, id, error)) {
		lockfs_lockstate_found_clear(found);
		close(fd);
		return NULL;
	}
	found->other_boot = found->header[4] && strcmp(found->header[4], lockfs_boot_id()) != 0;
	lockfs_lockstate *st = g_new0(lockfs_lockstate, 1);
	st->path = g_steal_pointer(&path);
	st->fd = fd;
	st->header = make_header(id);
	if (text->len == 0) {
		g_autoptr(GString) h = g_string_new(st->header);
		int r = append(st, h);
		if (r) {
			g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(-r),
			            "cannot write lock record %s: %s; free space in state_dir or "
			            "set state_dir to a writable directory",
			            st->path, g_strerror(-r));
			lockfs_lockstate_close(st);
			return NULL;
		}
	}
	return st;
}

void lockfs_lockstate_set_id(lockfs_lockstate *st, const lockfs_lockstate_id *id)
{
	g_free(st->header);
	st->header = make_header(id);
}

const char *lockfs_lockstate_file(const lockfs_lockstate *st)
{
	return st->path;
}

void lockfs_lockstate_close(lockfs_lockstate *st)
{
	if (!st)
		return;
	close(st->fd);
	g_free(st->path);
	g_free(st->header);
	g_free(st);
}

const char *lockfs_boot_id(void)
{
	static char id[64];
	static gsize once;
	if (g_once_init_enter(&once)) {
		g_autofree char *s = NULL;
		if (g_file_get_contents("/proc/sys/kernel/random/boot_id", &s, NULL, NULL))
			g_strlcpy(id, g_strstrip(s), sizeof(id));
		g_once_init_leave(&once, 1);
	}
	return id;
}

uint64_t lockfs_pid_start(int64_t pid)
{
	if (pid <= 0)
		return 0;
	/* Read at every flock and fcntl grant: one read(2) into the stack, no
	 * file API, no split (they were a fifth of a flock cycle's cost). */
	char path[40];
	snprintf(path, sizeof(path), "/proc/%" PRId64 "/stat", pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	char buf[4096];
	ssize_t n;
	do /* as g_file_get_contents did: a signal must not make it 0 */
		n = read(fd, buf, sizeof(buf) - 1);
	while (n < 0 && errno == EINTR);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* After the command, which may hold spaces and parentheses: "...) S ...";
	 * field 22 is the start time. */
	const char *f = strrchr(buf, ')');
	for (int field = 2; f && field < 22; field++) {
		f = strchr(f, ' ');
		if (f)
			f++;
	}
	if (!f || !g_ascii_isdigit(*f))
		return 0;
	char *end;
	errno = 0;
	uint64_t start = g_ascii_strtoull(f, &end, 10);
	if (errno || (*end != ' ' && *end != '\n' && *end != '\0'))
		return 0;
	return start;
}
