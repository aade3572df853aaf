/* metrics_file= (see metrics_file.h): a thread that copies .lockfs/metrics
 * out of the mount every renew interval. */
#include "metrics_file.h"
#include "fs_ops.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct {
	lfs *fs;
	char *path, *tmp;
	const char *tmp_name; /* tmp's last component, for the log */
	int64_t interval_us;
	GThread *thread;
	GMutex mu;
	GCond cond;
	bool stop;    /* mu */
	bool failing; /* warned: quiet until a write works (the writer's alone) */
} mf;

static bool write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return false;
		buf += n;
		len -= (size_t)n;
	}
	return true;
}

/* TEXT to mf.path, whole or not at all: the collector may read at any
 * moment, so the text goes to mf.tmp beside it (the same filesystem) and
 * is renamed over it.  0, or an errno with *STEP the call that failed. */
static int replace_file(const char *text, size_t len, const char **step)
{
	/* One a killed lockfs of this pid left, or a link someone made there:
	 * O_EXCL then writes through nothing but a file of our own. */
	unlink(mf.tmp);
	*step = "create";
	int fd = open(mf.tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return errno;
	int err = 0;
	/* Readable by the collector's user whatever lockfs's umask. */
	if (fchmod(fd, 0644) != 0 || !write_all(fd, text, len)) {
		err = errno;
		*step = "write";
	}
	if (close(fd) != 0 && !err) {
		err = errno;
		*step = "write";
	}
	if (!err && rename(mf.tmp, mf.path) != 0) {
		err = errno;
		*step = "rename";
	}
	if (err)
		unlink(mf.tmp);
	return err;
}

/* One write, and one warning for a run of failures. */
static void write_once(void)
{
	g_autofree char *text = lfs_metrics_text(mf.fs);
	const char *step = NULL;
	int err = replace_file(text, strlen(text), &step);
	if (err && !mf.failing)
		lockfs_log(G_LOG_LEVEL_WARNING, NULL,
		           "cannot write metrics_file %s: %s %s: %s; trying again every %g s, "
		           "with no other warning until it works",
		           mf.path, step, mf.tmp_name, g_strerror(err), mf.interval_us / 1e6);
	else if (err)
		lockfs_log(G_LOG_LEVEL_DEBUG, NULL,
		           "metrics_file %s: still cannot write it: %s %s: %s", mf.path, step,
		           mf.tmp_name, g_strerror(err));
	else if (mf.failing)
		lockfs_log(G_LOG_LEVEL_INFO, NULL, "metrics_file %s: written again", mf.path);
	mf.failing = err != 0;
}

static gpointer writer_main(gpointer data)
{
	(void)data;
	g_mutex_lock(&mf.mu);
	while (!mf.stop) {
		int64_t until = g_get_monotonic_time() + mf.interval_us;
		while (!mf.stop && g_cond_wait_until(&mf.cond, &mf.mu, until))
			;
		if (mf.stop)
			break;
		g_mutex_unlock(&mf.mu);
		write_once();
		g_mutex_lock(&mf.mu);
	}
	g_mutex_unlock(&mf.mu);
	return NULL;
}

void metrics_file_start(lfs *fs, const char *path, int64_t interval_ms)
{
	if (mf.thread)
		return;
	mf.fs = fs;
	mf.path = g_strdup(path);
	mf.tmp = g_strdup_printf("%s.tmp.%ld", path, (long)getpid());
	mf.tmp_name = strrchr(mf.tmp, '/') + 1; /* the path is absolute */
	mf.interval_us = interval_ms * 1000;
	mf.stop = false;
	mf.failing = false;
	/* At start from here: the file is there once lockfs says it is ready. */
	write_once();
	mf.thread = g_thread_new("lockfs-metrics", writer_main, NULL);
}

void metrics_file_stop(void)
{
	if (!mf.thread)
		return;
	g_mutex_lock(&mf.mu);
	mf.stop = true;
	g_cond_broadcast(&mf.cond);
	g_mutex_unlock(&mf.mu);
	g_thread_join(mf.thread);
	mf.thread = NULL;
	/* The counters as they end: a scrape after the exit sees the last of
	 * them, not those of up to a renew interval before. */
	write_once();
	g_free(mf.path);
	g_free(mf.tmp);
	mf.path = mf.tmp = NULL;
	mf.tmp_name = NULL;
	mf.fs = NULL;
}
