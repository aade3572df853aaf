#include "holder.h"

#include <fcntl.h>
#include <glib.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CMDLINE_MAX 1024
#define CMDLINE_CACHE_US (2 * G_USEC_PER_SEC)
#define CACHE_MAX 4096

static char *host_name;
static GMutex cache_mu;
static GHashTable *user_names; /* uid → name */
static GHashTable *cmdlines;   /* pid → struct cmd */
static GHashTable *tgids;      /* thread id → struct tgid */

struct cmd {
	char *text;
	int64_t at_mono;
};

/* How long a thread's process is believed without reading /proc again: a
 * thread id names another process only after the id space wraps. */
#define TGID_CACHE_US (1 * G_USEC_PER_SEC)

struct tgid {
	pid_t tgid;
	pid_t ppid; /* the process's parent, 0 unknown */
	int64_t at_mono;
};

static pid_t status_field(const char *buf, const char *name)
{
	const char *t = strstr(buf, name);
	long v = t ? strtol(t + strlen(name), NULL, 10) : 0;
	return v > 0 ? (pid_t)v : 0;
}

static pid_t read_tgid(pid_t tid, pid_t *ppid)
{
	char path[64], buf[512];
	*ppid = 0;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)tid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return tid;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return tid;
	buf[n] = '\0';
	*ppid = status_field(buf, "\nPPid:");
	pid_t v = status_field(buf, "\nTgid:");
	return v ? v : tid;
}

pid_t lockfs_tgid(pid_t tid)
{
	return lockfs_tgid_ppid(tid, NULL);
}

pid_t lockfs_tgid_ppid(pid_t tid, pid_t *ppid)
{
	pid_t unused;
	if (!ppid)
		ppid = &unused;
	*ppid = 0;
	if (tid <= 0)
		return tid;
	int64_t mono = lockfs_mono_us();
	g_mutex_lock(&cache_mu);
	if (!tgids)
		tgids = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
	struct tgid *t = g_hash_table_lookup(tgids, GINT_TO_POINTER(tid));
	if (t && mono - t->at_mono < TGID_CACHE_US) {
		pid_t r = t->tgid;
		*ppid = t->ppid;
		g_mutex_unlock(&cache_mu);
		return r;
	}
	g_mutex_unlock(&cache_mu);
	pid_t r = read_tgid(tid, ppid);
	g_mutex_lock(&cache_mu);
	if (g_hash_table_size(tgids) > CACHE_MAX)
		g_hash_table_remove_all(tgids);
	t = g_new0(struct tgid, 1);
	t->tgid = r;
	t->ppid = *ppid;
	t->at_mono = mono;
	g_hash_table_replace(tgids, GINT_TO_POINTER(tid), t);
	g_mutex_unlock(&cache_mu);
	return r;
}

bool lockfs_descends_from(pid_t pid, pid_t a, pid_t b, int generations)
{
	for (int g = 0; pid > 1 && g <= generations; g++) {
		if ((a > 1 && pid == a) || (b > 1 && pid == b))
			return true;
		pid_t parent;
		lockfs_tgid_ppid(pid, &parent);
		pid = parent;
	}
	return false;
}

static void cmd_free(gpointer p)
{
	struct cmd *c = p;
	g_free(c->text);
	g_free(c);
}

int64_t lockfs_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t lockfs_mono_us(void)
{
	/* CLOCK_BOOTTIME, not CLOCK_MONOTONIC: a host that was suspended must
	 * see its leases as old as they are, and staleness never moves with a
	 * step of the wall clock. */
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

gboolean lockfs_cond_wait_until(GCond *cond, GMutex *mu, int64_t deadline)
{
	/* GLib's condition deadlines are CLOCK_MONOTONIC; lockfs's are on the
	 * boot clock, which runs ahead by the time spent suspended. */
	return g_cond_wait_until(cond, mu, g_get_monotonic_time() + (deadline - lockfs_mono_us()));
}

void lockfs_holder_set_host(const char *host)
{
	g_free(host_name);
	host_name = g_strdup(host);
}

const char *lockfs_holder_host(void)
{
	if (!host_name) {
		char buf[256] = "";
		gethostname(buf, sizeof(buf) - 1);
		host_name = g_strdup(buf);
	}
	return host_name;
}

gboolean lockfs_holder_apply_beat(lockfs_holder *h, int64_t offset_us, const lockfs_beat *beat,
                                  void **content, size_t *content_len)
{
	/* 0 in a beat is "unchanged", never a time or a mode to record. */
	if (beat->heartbeat_us)
		h->heartbeat_us = beat->heartbeat_us + offset_us;
	if (beat->mtime_us)
		h->mtime_us = beat->mtime_us + offset_us;
	if (beat->atime_us)
		h->atime_us = beat->atime_us + offset_us;
	if (beat->ctime_us)
		h->ctime_us = beat->ctime_us + offset_us;
	if (beat->mode)
		h->mode = beat->mode;
	if (!beat->content)
		return FALSE;
	*content_len = MIN(beat->content_len, (size_t)LOCKFS_CONTENT_MAX);
	*content = g_memdup2(beat->content, *content_len); /* NULL when empty */
	return TRUE;
}

static char *read_cmdline(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return g_strdup("");
	char buf[CMDLINE_MAX];
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return g_strdup("");
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	/* Arguments are separated by spaces; every other byte stays as it was,
	 * for the view escapes all that could forge a line (view_format.h). */
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
	return g_utf8_make_valid(buf, n);
}

static char *user_name(uid_t uid)
{
	char *name = g_hash_table_lookup(user_names, GUINT_TO_POINTER(uid + 1));
	if (name)
		return g_strdup(name);
	struct passwd pw, *res = NULL;
	char buf[1024];
	if (getpwuid_r(uid, &pw, buf, sizeof(buf), &res) == 0 && res)
		name = g_strdup(res->pw_name);
	else
		name = g_strdup_printf("%u", (unsigned)uid);
	if (g_hash_table_size(user_names) > CACHE_MAX)
		g_hash_table_remove_all(user_names);
	g_hash_table_insert(user_names, GUINT_TO_POINTER(uid + 1), g_strdup(name));
	return name;
}

void lockfs_holder_fill(lockfs_holder *h, pid_t pid, uid_t uid, gid_t gid, mode_t mode,
                        int64_t now_us)
{
	memset(h, 0, sizeof(*h));
	h->host = g_strdup(lockfs_holder_host());
	h->pid = pid;
	h->uid = uid;
	h->gid = gid;
	h->mode = mode;
	h->acquired_us = now_us;
	h->heartbeat_us = now_us;

	g_mutex_lock(&cache_mu);
	if (!user_names) {
		user_names = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
		cmdlines = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, cmd_free);
	}
	h->user = user_name(uid);
	int64_t mono = lockfs_mono_us();
	struct cmd *c = g_hash_table_lookup(cmdlines, GINT_TO_POINTER(pid));
	if (!c || mono - c->at_mono > CMDLINE_CACHE_US) {
		if (g_hash_table_size(cmdlines) > CACHE_MAX)
			g_hash_table_remove_all(cmdlines);
		c = g_new0(struct cmd, 1);
		c->text = read_cmdline(pid);
		c->at_mono = mono;
		g_hash_table_replace(cmdlines, GINT_TO_POINTER(pid), c);
	}
	h->command = g_strdup(c->text);
	g_mutex_unlock(&cache_mu);
}
