/* lockfsctl hold [OPTIONS] PATH CMD [ARG...] | -c 'SHELL COMMAND': run CMD
 * while holding the lock PATH.  The options and exit codes are flock(1)'s
 * where it has them (-n, -w SECS, -E N, -c, --verbose), so that scripts
 * written for flock read the same.
 *
 * In a lockfs mount the lock is taken by open(O_CREAT|O_EXCL) and its fence
 * passed to CMD in LOCKFS_FENCE.  In a plain directory it is a careful
 * dot-lock (a unique temp file link()ed to PATH, checked by link count and
 * inode) without a fence.  A watcher thread heartbeats every ttl/3 and checks
 * several times a second that the lock is still ours; the main thread runs
 * CMD, forwards signals and stops CMD (SIGTERM, SIGKILL 5 s later) when the
 * lock is lost or --max-hold passes.
 *
 * A restart of the mount's lockfs is no loss (issue 25): the mount goes
 * away and comes back with the lock under the same fence.  While it is
 * away nothing is done through the mount point (it shows the directory
 * underneath, where a create or touch would make or touch a real file),
 * and the lock is lost only when hold's deadline passes first: --ttl since
 * it was last confirmed, or the lease end the mount last reported. */
#include "ctl.h"
#include "view_format.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <lockfs/config.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#define FENCE_XATTR LOCKFS_XATTR_PREFIX "fence"
#define STATE_XATTR LOCKFS_XATTR_PREFIX "state"
#define LEASE_XATTR LOCKFS_XATTR_PREFIX "lease_left_ms"
#define CHECK_EVERY_US (150 * 1000) /* loss is noticed within this, plus POLL_US */
#define POLL_US (100 * 1000)        /* the main loop's tick */
#define BACKOFF_MAX_US (200 * 1000) /* waiting for a lock polls at least this often */
#define KILL_AFTER_US (5 * G_USEC_PER_SEC)
/* CMD is killed (SIGKILL) this long before the mount's lease could run out,
 * by the last lease end the mount reported, so that it is dead and reaped
 * before the backend could grant the lock to anyone else.  SIGTERM goes
 * when the lease left falls to a fifth of the longest seen (about the
 * mount's ttl: the mount itself declares the loss there), and at most
 * KILL_AFTER_US before the SIGKILL. */
#define KILL_MARGIN_US (500 * 1000)

/* The boot clock, as lockfs measures its leases: suspend counts. */
static int64_t boot_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (int64_t)ts.tv_sec * G_USEC_PER_SEC + ts.tv_nsec / 1000;
}

/* The lock once taken; the watcher thread and the main thread share it. */
typedef struct {
	char *path;
	bool lockfs;
	char *mount, *dir, *base; /* its mount root, directory and name (lockfs) */
	bool verbose;
	int64_t ttl_us; /* --ttl: unconfirmed this long, it is lost */
	dev_t dev;      /* the mount's: a restarted lockfs mounts anew */
	ino_t ino;
	bool rebind; /* on a new mount: ours again only by its fence */
	char *fence; /* NULL in a plain directory */
	int64_t beat_every_us;

	GMutex mu;
	GCond cond;
	bool stop;
	bool done; /* the watcher has ended */
	bool lost;
	char *why;          /* why it was lost */
	int64_t last_ok_us; /* monotonic: the last time it was confirmed ours */
	int last_err;       /* the last error that did not prove a loss */
	/* Boot clock: when the mount's lease could run out at the latest, as
	 * its last answer said (0: no lease, a plain directory or local). */
	int64_t lease_end_us;
	int64_t lease_max_us; /* the longest lease left it reported: its ttl */
	bool away;            /* its mount is away (lockfs stopped or killed) */
} held;

typedef struct {
	const char *arg;
	const char *wait_text, *ttl_text, *max_text; /* as given */
	int64_t wait_ms, ttl_ms, max_ms;
	bool nonblock, verbose;
	int conflict_rc; /* -E: the exit code when another holds it past the wait */
	char **cmd;
	char *sh_cmd[4]; /* -c: /bin/sh -c TEXT */
} hold_opts;

static void usage(void)
{
	printf("usage: lockfsctl hold [OPTIONS] PATH [--] CMD [ARG...]\n"
	       "       lockfsctl hold [OPTIONS] PATH -c 'SHELL COMMAND'\n"
	       "Runs CMD while holding the lock PATH, passes the fence in LOCKFS_FENCE,\n"
	       "heartbeats the lock, and stops CMD (SIGTERM, SIGKILL 5s later) when the lock\n"
	       "is lost or --max-hold passes.  Options (flock(1)'s where it has them):\n"
	       "  -n, --nonblock           fail at once if another holds the lock\n"
	       "  -w, --wait SECS          wait up to SECS for it (10; 0.5, 5s, 2m; 0 is -n)\n"
	       "  -E, --conflict-exit-code N   exit N (0-255) when another holds it (1)\n"
	       "  -c, --command TEXT       run TEXT with /bin/sh -c instead of CMD\n"
	       "      --verbose            say on stderr when waiting, holding, released\n"
	       "      --ttl D              heartbeat every D/3 (30s); unconfirmed for D: lost\n"
	       "      --max-hold D         stop CMD D after the lock was taken (no limit)\n"
	       "Exit status: CMD's (128+N if signal N ended it); 1 (or -E N) held by another\n"
	       "past the wait; 64 usage; 69 the lock could not be tried (its directory or\n"
	       "mount, the backend, not a lock name); 75 the lock was lost, CMD stopped;\n"
	       "124 held past --max-hold, CMD stopped; 126/127 CMD cannot run.\n");
}

/* ---------------------------------------------------------------- checks */

/* What an errno from looking at or touching our lock means: 1 lost (WHY
 * set), or -E for a failure that proves nothing by itself. */
static int classify(int e, bool heartbeat, char **why)
{
	switch (e) {
	case ENOENT:
		*why = g_strdup("its name is gone: it was broken or expired");
		return 1;
	case ESTALE:
		*why = g_strdup("lockfs reports it lost");
		return 1;
	case ENODATA:
		*why = g_strdup("lockfs has no holder record for it any more");
		return 1;
	case EPERM:
	case EACCES:
		if (heartbeat) {
			*why = g_strdup("its heartbeat was refused: another holds it now");
			return 1;
		}
		return -e;
	default:
		return -e;
	}
}

/* check_once's answer for a name that is still our inode and fence, which
 * the mount has declared lost: ours to unlink (that only drops the name). */
#define CHECK_OURS_LOST 2

/* DIR opened (O_PATH) when it is on the mount DEV: a descriptor, or
 * -ENOTCONN when it is not (the mount went away: the path now leads to the
 * directory underneath).  A call through the descriptor then fails with
 * ENOTCONN if the mount goes away meanwhile, and never reaches the
 * directory underneath: no name is created or removed there. */
static int open_on_mount(const char *dir, dev_t dev)
{
	int dfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? -ENOTCONN : -errno;
	struct stat st;
	if (fstat(dfd, &st) != 0 || st.st_dev != dev) {
		close(dfd);
		return -ENOTCONN;
	}
	return dfd;
}

/* Follow H's mount across a restart of its lockfs (issue 25): -ENOTCONN
 * while it is away, stopped or killed (nothing is asked of the path then);
 * else 0.  Back, the lock is ours again only by its fence (check_once): the
 * new mount may have another device number and inode, or reuse both. */
static int follow_mount(held *h)
{
	struct stat st;
	bool away =
	        stat(h->mount, &st) != 0 || (st.st_dev != h->dev && !ctl_is_lockfs_mount(h->mount));
	g_mutex_lock(&h->mu);
	bool was = h->away;
	h->away = away;
	g_mutex_unlock(&h->mu);
	if (away) {
		if (!was && h->verbose)
			ctl_err("the mount of %s went away; waiting for its lockfs to come back "
			        "with the lock",
			        h->path);
		return -ENOTCONN;
	}
	if (was || st.st_dev != h->dev) {
		h->dev = st.st_dev;
		h->rebind = true;
	}
	return 0;
}

/* H's name seen again on a new mount with our fence: ours. */
static void rebound(held *h, const struct stat *st)
{
	h->ino = st->st_ino;
	h->rebind = false;
	if (h->verbose) {
		g_autofree char *fence = ctl_escape(h->fence);
		ctl_err("the mount of %s came back with the lock (fence %s); holding on", h->path,
		        fence);
	}
}

/* Heartbeat H through its own mount only (see open_on_mount). */
static int beat_lock(held *h)
{
	if (!h->lockfs)
		return utimensat(AT_FDCWD, h->path, NULL, 0) == 0 ? 0 : errno;
	int dfd = open_on_mount(h->dir, h->dev);
	if (dfd < 0)
		return -dfd;
	int e = utimensat(dfd, h->base, NULL, 0) == 0 ? 0 : errno;
	close(dfd);
	return e;
}

/* 0 when H is still held (heart-beaten if BEAT), > 0 when it is lost (*WHY
 * says how), -errno when the mount could not tell (-ENOTCONN: it is away). */
static int check_once(held *h, bool beat, char **why)
{
	int64_t sent = boot_us(); /* the lease left counts from before asking */
	struct stat st;
	int r = h->lockfs ? follow_mount(h) : 0;
	if (r)
		return r;
	if (lstat(h->path, &st) != 0) {
		int e = errno;
		if (e == ENOENT && h->rebind) {
			*why = g_strdup("its lockfs came back without it");
			return 1;
		}
		return classify(e, false, why);
	}
	if (h->lockfs && st.st_dev != h->dev)
		return -ENOTCONN; /* the mount changed since follow_mount: look again */
	/* In a lockfs mount the fence tells ours from another's; another inode
	 * is a new mount's (a restart too fast to be seen away). */
	if (h->lockfs && st.st_ino != h->ino)
		h->rebind = true;
	if (st.st_dev != h->dev || (!h->lockfs && st.st_ino != h->ino)) {
		*why = g_strdup("its name now belongs to another lock");
		return 1;
	}
	if (h->lockfs) {
		char buf[128];
		ssize_t n = lgetxattr(h->path, FENCE_XATTR, buf, sizeof(buf) - 1);
		if (n < 0)
			return classify(errno, false, why);
		buf[n] = '\0';
		if (strcmp(buf, h->fence) != 0) {
			/* The attribute is raw: another holder's fence, shown escaped. */
			g_autofree char *theirs = ctl_escape(buf);
			g_autofree char *ours = ctl_escape(h->fence);
			*why = g_strdup_printf("it is held with fence %s now, not ours %s", theirs,
			                       ours);
			return 1;
		}
		if (h->rebind)
			rebound(h, &st);
		n = lgetxattr(h->path, STATE_XATTR, buf, sizeof(buf) - 1);
		if (n < 0)
			return classify(errno, false, why);
		buf[n] = '\0';
		if (!strcmp(buf, "lost")) {
			*why = g_strdup("lockfs reports it lost: its lease could not be kept");
			return CHECK_OURS_LOST;
		}
		n = lgetxattr(h->path, LEASE_XATTR, buf, sizeof(buf) - 1);
		if (n > 0) {
			buf[n] = '\0';
			gint64 left = -1;
			if (g_ascii_string_to_signed(buf, 10, -1, G_MAXINT64 / 1000, &left, NULL) &&
			    left >= 0) {
				g_mutex_lock(&h->mu);
				h->lease_end_us = sent + left * 1000;
				h->lease_max_us = MAX(h->lease_max_us, left * 1000);
				g_mutex_unlock(&h->mu);
			}
		}
	}
	/* By name, right after the checks: through the lock's own descriptor a
	 * broken lock's inode would take the touch without complaint. */
	int e = beat ? beat_lock(h) : 0;
	return e ? classify(e, true, why) : 0;
}

static gpointer watcher(gpointer data)
{
	held *h = data;
	int64_t next_beat = boot_us() + h->beat_every_us;
	g_mutex_lock(&h->mu);
	while (!h->stop) {
		int64_t wake = g_get_monotonic_time() + CHECK_EVERY_US;
		while (!h->stop && g_cond_wait_until(&h->cond, &h->mu, wake))
			;
		if (h->stop)
			break;
		g_mutex_unlock(&h->mu);
		int64_t now = boot_us();
		bool beat = now >= next_beat;
		char *why = NULL;
		int r = check_once(h, beat, &why);
		if (beat && r == 0)
			next_beat = now + h->beat_every_us;
		g_mutex_lock(&h->mu);
		if (h->stop) { /* the main thread has moved on: leave it alone */
			g_free(why);
			break;
		}
		if (r > 0) {
			h->lost = true;
			h->why = why;
			break;
		}
		if (r == 0)
			h->last_ok_us = now;
		else
			h->last_err = -r;
	}
	h->done = true;
	g_cond_broadcast(&h->cond);
	g_mutex_unlock(&h->mu);
	return NULL;
}

/* ---------------------------------------------------------------- taking */

/* How long a release retries a backend that does not answer (EIO: the lock
 * is kept, and nobody else would ever unlink it). */
#define RELEASE_RETRY_US (3 * G_USEC_PER_SEC)

/* Unlink PATH while it is still the inode ST describes, retrying EIO for
 * RELEASE_RETRY_US: a take that could not read its fence (the backend
 * stopped answering right after the grant) must not leave the lock held by
 * the mount, renewed, with nobody to unlink it. */
static void unlink_if_same(const char *path, const struct stat *st)
{
	int64_t until = boot_us() + RELEASE_RETRY_US;
	for (;;) {
		struct stat now;
		int r = lstat(path, &now);
		if (r == 0 && (now.st_ino != st->st_ino || now.st_dev != st->st_dev))
			return;
		if (r == 0 && unlink(path) == 0)
			return;
		if (errno != EIO || boot_us() >= until)
			return;
		g_usleep(200 * 1000);
	}
}

/* In a lockfs mount: the create is the acquisition, the fence its proof. */
static int take_lockfs(held *h, char **error)
{
	/* Only through the mount: with its lockfs away (a restart) the path is
	 * the directory underneath, where a create would make a real file. */
	struct stat ms;
	if (stat(h->mount, &ms) != 0 || !ctl_is_lockfs_mount(h->mount))
		return ENOTCONN;
	int dfd = open_on_mount(h->dir, ms.st_dev);
	if (dfd < 0)
		return -dfd;
	int fd = openat(dfd, h->base, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOCTTY, 0644);
	int oe = errno;
	close(dfd);
	if (fd < 0)
		return oe;
	char pid[32], fence[128];
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	struct stat st;
	bool have_st = fstat(fd, &st) == 0;
	ssize_t n = 0;
	int e = 0;
	if (!have_st || write(fd, pid, len) != len ||
	    (n = fgetxattr(fd, FENCE_XATTR, fence, sizeof(fence) - 1)) < 0)
		e = errno ? errno : EIO;
	close(fd);
	if (e) {
		if (e == ENODATA || e == ENOTSUP)
			*error = g_strdup_printf("%s is not a lock name in its lockfs mount (locks "
			                         "end in the mount's suffix, .lock by default); "
			                         "choose a name like NAME.lock",
			                         h->path);
		else
			*error = g_strdup_printf("cannot take %s: %s right after creating it; see "
			                         "the mount's lockfs log",
			                         h->path, g_strerror(e));
		/* Remove what we made, unless it is no longer ours. */
		if (have_st)
			unlink_if_same(h->path, &st);
		return -1;
	}
	fence[n] = '\0';
	h->dev = st.st_dev;
	h->ino = st.st_ino;
	h->fence = g_strdup(fence);
	return 0;
}

/* In a plain directory: the dot-lock protocol that works even over NFS,
 * where link() may fail after succeeding: judge by the link count. */
static int take_plain(held *h, const char *dir, const char *base, char **error)
{
	g_autofree char *tmp = g_strdup_printf("%s/.%s.lockfsctl.XXXXXX", dir, base);
	int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
	if (fd < 0) {
		int e = errno;
		*error = g_strdup_printf("cannot create a temporary file in %s for %s: %s; check "
		                         "the directory's permissions",
		                         dir, h->path, g_strerror(e));
		return -1;
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	int e = 0;
	if (write(fd, pid, len) != len)
		e = errno ? errno : EIO;
	/* mkstemp makes 0600; others must be able to read whose lock it is. */
	if (!e && fchmod(fd, 0644) != 0)
		e = errno;
	close(fd);
	if (e) {
		unlink(tmp);
		*error = g_strdup_printf("cannot write a temporary file in %s for %s: %s", dir,
		                         h->path, g_strerror(e));
		return -1;
	}
	int le = link(tmp, h->path) == 0 ? 0 : errno;
	struct stat ts, ps;
	bool ours = stat(tmp, &ts) == 0 && ts.st_nlink == 2 && lstat(h->path, &ps) == 0 &&
	            ps.st_ino == ts.st_ino && ps.st_dev == ts.st_dev;
	unlink(tmp);
	if (ours) {
		h->dev = ps.st_dev;
		h->ino = ps.st_ino;
		return 0;
	}
	return le ? le : EEXIST;
}

/* "HOST:PID (user U)" of whoever holds T now, for the held-by line. */
static char *holder_of(const ctl_target *t)
{
	if (t->mount) {
		int e;
		g_autoptr(ctl_lock) l = ctl_read_lock(t->mount, t->key, &e);
		if (!l)
			return g_strdup("another");
		g_autofree char *host = ctl_escape(l->host ? l->host : "?");
		g_autofree char *user = ctl_escape(l->user ? l->user : "?");
		return g_strdup_printf("%s:%" G_GINT64_FORMAT " (user %s)", host, l->pid, user);
	}
	struct stat st;
	int e;
	g_autofree char *text = ctl_read_text(t->path, &e);
	gint64 pid = 0;
	if (text && !g_ascii_string_to_signed(g_strstrip(text), 10, 1, G_MAXINT32, &pid, NULL))
		pid = 0;
	struct passwd *pw = lstat(t->path, &st) == 0 ? getpwuid(st.st_uid) : NULL;
	if (pid)
		return g_strdup_printf("pid %" G_GINT64_FORMAT " (user %s)", (int64_t)pid,
		                       pw ? pw->pw_name : "?");
	return g_strdup_printf("another (user %s)", pw ? pw->pw_name : "?");
}

/* Sleep up to US, unless a signal of SET arrives: its number, or 0. */
static int sleep_for_signal(const sigset_t *set, int64_t us, siginfo_t *si)
{
	struct timespec ts = { us / G_USEC_PER_SEC, (us % G_USEC_PER_SEC) * 1000 };
	int sig = sigtimedwait(set, si, &ts);
	return sig < 0 ? 0 : sig;
}

/* ---------------------------------------------------------------- releasing */

/* Unlink PATH only if it is still ours: same inode, same fence.  Ours but
 * lost, it is unlinked too: the mount keeps a lost name until its holder
 * unlinks it, and until then nobody on this host could take the lock. */
/* Unlink H's name through its own mount only (see open_on_mount). */
static int unlink_lock(held *h)
{
	if (!h->lockfs)
		return unlink(h->path) == 0 ? 0 : errno;
	int dfd = open_on_mount(h->dir, h->dev);
	if (dfd < 0)
		return -dfd;
	int e = unlinkat(dfd, h->base, 0) == 0 ? 0 : errno;
	close(dfd);
	return e;
}

/* Until when a release waits for a mount that is away (a restart of its
 * lockfs) to come back: as long as the lock could still be ours. */
static int64_t away_deadline(held *h)
{
	g_mutex_lock(&h->mu);
	int64_t end = h->last_ok_us + h->ttl_us;
	if (h->lease_end_us)
		end = MIN(end, h->lease_end_us);
	g_mutex_unlock(&h->mu);
	return end;
}

static int release(held *h)
{
	int64_t until = boot_us() + RELEASE_RETRY_US;
	for (;;) {
		char *why = NULL;
		int r = check_once(h, false, &why);
		g_free(why);
		if (r > 0 && r != CHECK_OURS_LOST)
			return ENOENT;
		int e = r == -ENOTCONN ? ENOTCONN : unlink_lock(h);
		if (e == 0)
			return 0;
		if (e == ENOTCONN && h->lockfs && boot_us() < away_deadline(h)) {
			g_usleep(100 * 1000); /* away: released once it is back */
			continue;
		}
		if (e != EIO || boot_us() >= until)
			return e;
		g_usleep(200 * 1000);
	}
}

/* How long a release after a loss may wait for a mount that answers late. */
#define RELEASE_WAIT_US (RELEASE_RETRY_US + G_USEC_PER_SEC)
/* ... and when the mount did not even answer the last check. */
#define RELEASE_STUCK_WAIT_US (2 * G_USEC_PER_SEC)

typedef struct {
	held *h;
	GMutex mu;
	GCond cond;
	bool done, abandoned;
} release_job;

static gpointer release_main(gpointer data)
{
	release_job *j = data;
	release(j->h);
	g_mutex_lock(&j->mu);
	j->done = true;
	bool free_it = j->abandoned;
	g_cond_signal(&j->cond);
	g_mutex_unlock(&j->mu);
	if (free_it) { /* the caller gave up on us: what we use is left to exit */
		g_mutex_clear(&j->mu);
		g_cond_clear(&j->cond);
		g_free(j);
	}
	return NULL;
}

/* release(H), waiting at most US for a mount that may hang; false when it
 * gave up (H is then still in use and must be left alone). */
static bool release_within(held *h, int64_t us)
{
	release_job *j = g_new0(release_job, 1);
	j->h = h;
	g_mutex_init(&j->mu);
	g_cond_init(&j->cond);
	GThread *t = g_thread_new("lockfsctl-release", release_main, j);
	int64_t until = g_get_monotonic_time() + us;
	g_mutex_lock(&j->mu);
	while (!j->done && g_cond_wait_until(&j->cond, &j->mu, until))
		;
	bool done = j->done;
	if (!done)
		j->abandoned = true;
	g_mutex_unlock(&j->mu);
	if (done) {
		g_thread_join(t);
		g_mutex_clear(&j->mu);
		g_cond_clear(&j->cond);
		g_free(j);
	} else {
		g_thread_unref(t);
	}
	return done;
}

static int exit_code(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return CTL_EXIT_FAIL;
}

/* hold's options: flock(1)'s letters and long names, and its own. */
enum {
	OPT_TTL = 256,
	OPT_MAX_HOLD,
	OPT_VERBOSE
};
static const struct option hold_longs[] = {
	{ "nonblock", no_argument, NULL, 'n' },
	{ "nb", no_argument, NULL, 'n' }, /* flock's alias */
	{ "wait", required_argument, NULL, 'w' },
	{ "timeout", required_argument, NULL, 'w' }, /* flock's alias */
	{ "conflict-exit-code", required_argument, NULL, 'E' },
	{ "command", required_argument, NULL, 'c' },
	{ "verbose", no_argument, NULL, OPT_VERBOSE },
	{ "ttl", required_argument, NULL, OPT_TTL },
	{ "max-hold", required_argument, NULL, OPT_MAX_HOLD },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* One getopt_long pass over ARGV from its first word on, stopping at the
 * first word that is not an option (REQUIRE_ORDER, as flock's "+"): the
 * index of that word, or -1 (*RC set) to exit. */
static int parse_opts(int argc, char **argv, hold_opts *o, bool *dashdash, int *rc)
{
	const char *last_arg = NULL;
	opterr = 0;
	optind = 0; /* glibc: start afresh on this argv */
	int c;
	while ((c = getopt_long(argc, argv, "+:nw:E:c:h", hold_longs, NULL)) != -1) {
		last_arg = optarg;
		switch (c) {
		case 'n':
			o->nonblock = true;
			break;
		case 'w':
			o->wait_text = optarg;
			break;
		case 'E': {
			guint64 v;
			if (!g_ascii_string_to_unsigned(optarg, 10, 0, 255, &v, NULL)) {
				*rc = ctl_usage_error(
				        "-E/--conflict-exit-code '%s' is not a number "
				        "from 0 to 255",
				        optarg);
				return -1;
			}
			o->conflict_rc = (int)v;
			break;
		}
		case 'c':
			if (o->sh_cmd[0]) {
				*rc = ctl_usage_error(
				        "-c given twice; give the whole shell command "
				        "as one word");
				return -1;
			}
			o->sh_cmd[0] = "/bin/sh";
			o->sh_cmd[1] = "-c";
			o->sh_cmd[2] = optarg;
			break;
		case OPT_VERBOSE:
			o->verbose = true;
			break;
		case OPT_TTL:
			o->ttl_text = optarg;
			break;
		case OPT_MAX_HOLD:
			o->max_text = optarg;
			break;
		case 'h':
			usage();
			*rc = CTL_EXIT_OK;
			return -1;
		case ':':
			*rc = ctl_usage_error("%s needs a value", argv[optind - 1]);
			return -1;
		default:
			if (optopt && optopt < 256)
				*rc = ctl_usage_error("unknown option '-%c' (put the command after "
				                      "--)",
				                      optopt);
			else
				*rc = ctl_usage_error("unknown option '%s' (put the command after "
				                      "--)",
				                      argv[optind - 1]);
			return -1;
		}
	}
	/* "--" ends the options (and is not the value of the last one). */
	*dashdash = optind > 1 && !strcmp(argv[optind - 1], "--") && last_arg != argv[optind - 1];
	return optind;
}

static bool parse(int argc, char **argv, hold_opts *o, int *rc)
{
	*o = (hold_opts){ .wait_text = "10s", .ttl_text = "30s", .conflict_rc = CTL_EXIT_FAIL };
	/* Options before PATH, then, unless "--" came first, after it up to the
	 * command: "hold PATH --wait 2 -- CMD" and "hold PATH -c TEXT" work as
	 * they always did and as flock's "FILE -c CMD" does. */
	bool dashdash = false;
	int i = parse_opts(argc, argv, o, &dashdash, rc);
	if (i < 0)
		return false;
	if (i < argc) {
		o->arg = argv[i++];
		if (!dashdash && i < argc) {
			/* The rest, as an argv of its own: getopt starts at index 1. */
			int j = parse_opts(argc - i + 1, argv + i - 1, o, &dashdash, rc);
			if (j < 0)
				return false;
			i += j - 1;
		}
	}
	char **rest = argv + i;
	if (o->sh_cmd[0]) {
		if (*rest) {
			*rc = ctl_usage_error(
			        "-c takes the whole command as one word; '%s' follows "
			        "it (quote the command, or drop -c)",
			        *rest);
			return false;
		}
		o->cmd = o->sh_cmd;
	} else {
		o->cmd = rest;
	}
	if (!o->arg || !o->cmd[0]) {
		*rc = ctl_usage_error("give a lock and a command: lockfsctl hold PATH -- CMD "
		                      "[ARG...], or lockfsctl hold PATH -c 'SHELL COMMAND'");
		return false;
	}
	if (!ctl_parse_seconds(o->wait_text, &o->wait_ms)) {
		*rc = ctl_usage_error("-w/--wait '%s' is not a number of seconds or a duration; "
		                      "write e.g. 5, 0.5, 30s or 2m",
		                      o->wait_text);
		return false;
	}
	if (o->nonblock)
		o->wait_ms = 0; /* -n wins over -w, as in flock */
	struct {
		const char *name, *text;
		int64_t *ms;
	} d[] = { { "--ttl", o->ttl_text, &o->ttl_ms }, { "--max-hold", o->max_text, &o->max_ms } };
	for (size_t k = 0; k < G_N_ELEMENTS(d); k++) {
		if (!d[k].text)
			continue;
		if (!lockfs_parse_duration(d[k].text, d[k].ms)) {
			*rc = ctl_usage_error(
			        "%s '%s' is not a duration; write e.g. 500ms, 30s, 5m "
			        "or 1h",
			        d[k].name, d[k].text);
			return false;
		}
	}
	if (o->ttl_ms <= 0) {
		*rc = ctl_usage_error("--ttl must be longer than 0; write e.g. --ttl 30s");
		return false;
	}
	return true;
}

/* ---------------------------------------------------------------- running */

/* Run CMD; its exec failure comes back through a close-on-exec pipe.  0 with
 * *PID set, or the errno of the exec. */
static int spawn(char **cmd, char **envp, const sigset_t *old, bool own_group, pid_t *pid)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) != 0)
		return errno;
	pid_t child = fork();
	if (child < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		return e;
	}
	if (child == 0) {
		close(p[0]);
		if (own_group)
			setpgid(0, 0);
		sigprocmask(SIG_SETMASK, old, NULL);
		execvpe(cmd[0], cmd, envp);
		int e = errno;
		ssize_t w = write(p[1], &e, sizeof(e));
		(void)w;
		_exit(127);
	}
	close(p[1]);
	if (own_group)
		setpgid(child, child); /* as the child does: whichever runs first */
	int e = 0;
	ssize_t n;
	do
		n = read(p[0], &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(p[0]);
	if (n == sizeof(e)) {
		int status;
		waitpid(child, &status, 0);
		return e;
	}
	*pid = child;
	return 0;
}

enum {
	STOP_NONE,
	STOP_LOST,
	STOP_MAX_HOLD
};

/* What the phases of a hold share, from the options to the exit code. */
typedef struct {
	hold_opts o;
	ctl_target t;
	held h;
	sigset_t set, old; /* the signals taken synchronously; the mask before */
	int64_t started;   /* boot clock: when the wait began */
	int64_t taken;     /* ... and when the lock was ours */
	char *why;         /* why the lock could not be tried */
	char **envp;       /* CMD's environment */
	bool own_group;    /* CMD runs in a process group of its own */
	pid_t child;
	GThread *watch;
	int stop;     /* STOP_*: why CMD was stopped */
	int status;   /* CMD's, from waitpid */
	bool stuck;   /* the watcher did not end: its mount hangs */
	bool leave_h; /* H is still in use by a thread: not freed */
	int rc;
} hold_run;

/* The lock as it will be held, and the signals taken synchronously
 * (sigtimedwait) from here on, so that one during the wait or while CMD
 * runs is handled between checks. */
static void hold_init(hold_run *r)
{
	r->h = (held){ .path = g_strdup(r->t.path),
		       .lockfs = r->t.mount != NULL,
		       .mount = g_strdup(r->t.mount),
		       .dir = g_strdup(r->t.dir),
		       .base = g_strdup(r->t.base),
		       .verbose = r->o.verbose,
		       .ttl_us = r->o.ttl_ms * 1000 };
	g_mutex_init(&r->h.mu);
	g_cond_init(&r->h.cond);
	r->h.beat_every_us = MAX(r->o.ttl_ms * 1000 / 3, 50 * 1000);

	sigemptyset(&r->set);
	sigaddset(&r->set, SIGCHLD);
	sigaddset(&r->set, SIGINT);
	sigaddset(&r->set, SIGTERM);
	sigaddset(&r->set, SIGHUP);
	sigprocmask(SIG_BLOCK, &r->set, &r->old);
}

/* The --verbose line when the lock is not free at the first try. */
static void say_waiting(const hold_run *r, int e)
{
	g_autofree char *by = e == EEXIST ? holder_of(&r->t) : NULL;
	g_autofree char *upto = ctl_format_ms(r->o.wait_ms);
	if (by)
		ctl_err("waiting for %s, held by %s, up to %s", r->t.path, by, upto);
	else
		ctl_err("waiting for %s (%s), up to %s", r->t.path,
		        e == EIO ? "the lockfs backend failed" : "its lockfs mount is away", upto);
}

/* The wait is over and the last try failed with E: say why, return the
 * exit code. */
static int wait_expired(const hold_run *r, int e)
{
	if (e == ENOTCONN) {
		ctl_err("cannot take %s: its lockfs mount %s is away (not mounted); "
		        "start its lockfs",
		        r->t.path, r->t.mount);
		return CTL_EXIT_UNAVAILABLE;
	}
	if (e == EIO) {
		ctl_err("cannot take %s: %s (the lockfs backend failed); see the "
		        "mount's log and run lockfsctl check",
		        r->t.path, g_strerror(e));
		return CTL_EXIT_UNAVAILABLE;
	}
	g_autofree char *by = holder_of(&r->t);
	g_autofree char *waited = ctl_format_ms(r->o.wait_ms);
	ctl_err("%s is held by %s; --wait longer (waited %s)", r->t.path, by, waited);
	return r->o.conflict_rc;
}

/* Wait for the lock, polling with backoff: true once it is ours, false
 * (R->rc set) when it could not be had. */
static bool hold_wait(hold_run *r)
{
	r->started = boot_us();
	int64_t deadline = r->started + r->o.wait_ms * 1000;
	int64_t delay = 10 * 1000;
	bool said_waiting = false;
	for (;;) {
		int e = r->t.mount ? take_lockfs(&r->h, &r->why)
		                   : take_plain(&r->h, r->t.dir, r->t.base, &r->why);
		if (e == 0)
			return true;
		if (e < 0) {
			ctl_err("%s", r->why);
			r->rc = CTL_EXIT_UNAVAILABLE;
			return false;
		}
		/* EIO: the backend failed this time; ENOTCONN: the mount is away
		 * (its lockfs restarting).  Either may answer within the wait. */
		if (e != EEXIST && e != EIO && e != ENOTCONN) {
			ctl_err("cannot take %s: %s; check the path and the directory's "
			        "permissions",
			        r->t.path, g_strerror(e));
			r->rc = CTL_EXIT_UNAVAILABLE;
			return false;
		}
		int64_t left = deadline - boot_us();
		if (r->o.verbose && !said_waiting && left > 0) {
			say_waiting(r, e);
			said_waiting = true;
		}
		if (left <= 0) {
			r->rc = wait_expired(r, e);
			return false;
		}
		siginfo_t si;
		int sig = sleep_for_signal(&r->set, MIN(delay, left), &si);
		if (sig && sig != SIGCHLD) {
			ctl_err("%s while waiting for %s; the command was not run", strsignal(sig),
			        r->t.path);
			r->rc = 128 + sig;
			return false;
		}
		delay = MIN(delay * 2, BACKOFF_MAX_US);
	}
}

/* The lock is ours: confirm it with the mount's lease as it stands now,
 * before CMD runs.  False (R->rc set) when it was lost already. */
static bool hold_take(hold_run *r)
{
	r->taken = boot_us();
	r->h.last_ok_us = r->taken;
	char *w = NULL;
	if (r->h.lockfs && check_once(&r->h, false, &w) > 0) {
		ctl_err("the lock %s was lost (%s) right after it was taken; the command was "
		        "not run",
		        r->t.path, w);
		g_free(w);
		if (!release_within(&r->h, RELEASE_WAIT_US))
			r->leave_h = true;
		r->rc = CTL_EXIT_LOST;
		return false;
	}
	g_free(w);
	if (r->o.verbose) {
		g_autofree char *fence = r->h.fence ? ctl_escape(r->h.fence) : NULL;
		g_autofree char *cmd =
		        ctl_escape_text(r->o.cmd == r->o.sh_cmd ? r->o.cmd[2] : r->o.cmd[0]);
		ctl_err("holding %s (%s%s), got in %.3f s; running %s", r->t.path,
		        fence ? "fence " : "a plain dot-lock, no fence", fence ? fence : "",
		        (r->taken - r->started) / 1e6, cmd);
	}
	return true;
}

/* Start CMD with the fence in its environment.  False (the lock released,
 * R->rc set) when it cannot run. */
static bool hold_spawn(hold_run *r)
{
	/* Not run from an interactive shell (cron, systemd, scripts), CMD gets
	 * a process group of its own, and this process adopts its orphans, so
	 * that stopping it on a loss stops everything it started. */
	r->own_group = !(isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp());
	if (r->own_group)
		prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);

	/* An outer hold's fence must not leak into a plain directory's CMD. */
	r->envp = g_get_environ();
	r->envp = r->h.fence ? g_environ_setenv(r->envp, "LOCKFS_FENCE", r->h.fence, TRUE)
	                     : g_environ_unsetenv(r->envp, "LOCKFS_FENCE");
	r->child = -1;
	int e = spawn(r->o.cmd, r->envp, &r->old, r->own_group, &r->child);
	if (!e)
		return true;
	int rel = release(&r->h);
	ctl_err("cannot run %s: %s; check the command name and PATH (the lock %s was %s)",
	        r->o.cmd[0], g_strerror(e), r->t.path, rel ? "lost meanwhile" : "released");
	if (r->o.verbose && !rel)
		ctl_err("released %s", r->t.path);
	r->rc = e == ENOENT ? 127 : 126;
	return false;
}

/* With H's mutex held: declare the lock lost when the lease the mount last
 * reported (ending at LEASE_END) may run out within TERM_BEFORE, or nothing
 * confirmed it for a whole --ttl. */
static void judge_lease(hold_run *r, int64_t now, int64_t lease_end, int64_t term_before)
{
	held *h = &r->h;
	if (!h->lost && lease_end && now >= lease_end - term_before) {
		/* The mount has not renewed, or not said so: by the last lease
		 * end it reported, the lease may run out soon.  Stop CMD in
		 * time, whatever the mount does. */
		h->lost = true;
		h->why = g_strdup_printf("its lease could run out in %" G_GINT64_FORMAT
		                         " ms and the mount has not reported it renewed%s",
		                         MAX(lease_end - now, 0) / 1000,
		                         h->away ? ": its lockfs mount went away and has not "
		                                   "come back"
		                                 : "");
	}
	if (!h->lost && now - h->last_ok_us > r->o.ttl_ms * 1000) {
		/* Unconfirmed for a whole ttl (a hung or failing mount): the
		 * lease may be gone. */
		h->lost = true;
		g_autofree char *ttl = ctl_format_ms(r->o.ttl_ms);
		if (h->away)
			h->why = g_strdup_printf("its lockfs mount went away and did not come "
			                         "back with it within --ttl %s",
			                         ttl);
		else
			h->why = g_strdup_printf("it could not be confirmed for --ttl %s: %s", ttl,
			                         h->last_err ? g_strerror(h->last_err)
			                                     : "the mount did not answer");
	}
}

/* Whether CMD must be stopped now (STOP_*), CMD still running. */
static int stop_reason(hold_run *r, int64_t now, int64_t lease_end, int64_t term_before)
{
	g_mutex_lock(&r->h.mu);
	judge_lease(r, now, lease_end, term_before);
	bool lost = r->h.lost;
	g_mutex_unlock(&r->h.mu);
	if (lost)
		return STOP_LOST;
	if (r->o.max_ms > 0 && now - r->taken >= r->o.max_ms * 1000)
		return STOP_MAX_HOLD;
	return STOP_NONE;
}

/* Run the watcher while CMD runs: forward signals to CMD, and stop it
 * (SIGTERM, then SIGKILL in time before the lease could run out) when the
 * lock is lost or --max-hold passes.  Returns once CMD has ended. */
static void hold_supervise(hold_run *r)
{
	r->watch = g_thread_new("lockfsctl-watch", watcher, &r->h);
	pid_t target = r->own_group ? -r->child : r->child; /* what signals go to */
	int64_t kill_at = 0;
	bool killed = false;
	for (;;) {
		siginfo_t si;
		int sig = sleep_for_signal(&r->set, POLL_US, &si);
		/* A terminal's signal reached CMD too (same process group); one sent
		 * with kill(1) reached only us. */
		if ((sig == SIGINT || sig == SIGTERM || sig == SIGHUP) &&
		    (r->own_group || si.si_code != SI_KERNEL))
			kill(target, sig);
		pid_t w = waitpid(r->child, &r->status, WNOHANG);
		if (w == r->child || (w < 0 && errno == ECHILD))
			break;
		int64_t now = boot_us();
		g_mutex_lock(&r->h.mu);
		int64_t lease_end = r->h.lease_end_us;
		int64_t term_before = CLAMP(r->h.lease_max_us / 5, KILL_MARGIN_US,
		                            KILL_MARGIN_US + KILL_AFTER_US);
		g_mutex_unlock(&r->h.mu);
		if (r->stop == STOP_NONE) {
			r->stop = stop_reason(r, now, lease_end, term_before);
			if (r->stop) {
				kill(target, SIGTERM);
				kill_at = now + KILL_AFTER_US;
				if (lease_end)
					kill_at = MIN(kill_at, lease_end - KILL_MARGIN_US);
			}
		}
		if (r->stop != STOP_NONE && !killed &&
		    (now >= kill_at || (lease_end && now >= lease_end - KILL_MARGIN_US))) {
			kill(target, SIGKILL);
			killed = true;
			/* Said when sent, not at exit (a release after a loss may
			 * wait for the mount): a log can tell when CMD died. */
			if (r->o.verbose)
				ctl_err("stopped the command with SIGKILL, %" G_GINT64_FORMAT
				        " ms before the lease could run out",
				        lease_end ? (lease_end - now) / 1000 : (int64_t)-1);
		}
	}
}

/* CMD has ended: kill and reap what it left behind if it was stopped, and
 * stop the watcher. */
static void hold_stop(hold_run *r)
{
	if (r->stop != STOP_NONE && r->own_group) {
		/* Whatever CMD started goes with it, reaped (we are its subreaper). */
		kill(-r->child, SIGKILL);
		int64_t reap_until = boot_us() + G_USEC_PER_SEC;
		while (boot_us() < reap_until) {
			pid_t w = waitpid(-1, NULL, WNOHANG);
			if (w < 0)
				break; /* no children left */
			if (w == 0)
				g_usleep(10 * 1000);
		}
	}
	/* A watcher stuck in a call to a hung mount is left behind (the process
	 * ends soon), and so is what it uses. */
	g_mutex_lock(&r->h.mu);
	r->h.stop = true;
	g_cond_broadcast(&r->h.cond);
	int64_t until = g_get_monotonic_time() + G_USEC_PER_SEC;
	while (!r->h.done && g_cond_wait_until(&r->h.cond, &r->h.mu, until))
		;
	r->stuck = !r->h.done;
	g_mutex_unlock(&r->h.mu);
	if (r->stuck)
		g_thread_unref(r->watch);
	else
		g_thread_join(r->watch);
	r->leave_h = r->stuck;
}

/* Release the lock, say how the hold ended and set the exit code. */
static void hold_report(hold_run *r)
{
	held *h = &r->h;
	int64_t wait_us = r->stuck ? RELEASE_STUCK_WAIT_US : RELEASE_WAIT_US;
	int rel;
	if (r->stop == STOP_MAX_HOLD) {
		rel = release(h);
		g_autofree char *max = ctl_format_ms(r->o.max_ms);
		ctl_err("the lock %s was held past --max-hold %s, so the command was stopped%s",
		        r->t.path, max,
		        rel && rel != ENOENT ? "; releasing it failed: run lockfsctl unlock" : "");
		if (r->o.verbose && !rel)
			ctl_err("released %s", r->t.path);
		r->rc = CTL_EXIT_MAX_HOLD;
	} else if (r->stop == STOP_LOST) {
		/* Declared lost on failing checks, it may in fact still be ours
		 * (a mount that only answered late): let it go then, or it stays
		 * held, renewed, with nobody to unlink it.  A mount that still
		 * hangs is given a few seconds. */
		if (!release_within(h, wait_us))
			r->leave_h = true;
		ctl_err("the lock %s was lost (%s), so the command was stopped: another "
		        "may hold it now",
		        r->t.path, h->why ? h->why : "?");
		r->rc = CTL_EXIT_LOST;
	} else if (h->lost || check_once(h, false, &h->why) > 0) {
		/* Lost in the instant before CMD ended: its end was unprotected.
		 * Its lost name is dropped all the same. */
		if (!release_within(h, wait_us))
			r->leave_h = true;
		ctl_err("the lock %s was lost (%s) before the command ended: another may hold it "
		        "now",
		        r->t.path, h->why ? h->why : "?");
		r->rc = CTL_EXIT_LOST;
	} else {
		rel = release(h);
		if (rel && rel != ENOENT)
			ctl_err("cannot release %s: %s; remove it with lockfsctl unlock %s",
			        r->t.path, g_strerror(rel), r->t.path);
		else if (r->o.verbose && !rel)
			ctl_err("released %s", r->t.path);
		r->rc = exit_code(r->status);
	}
}

/* Restore the signal mask and free what no thread still uses. */
static void hold_finish(hold_run *r)
{
	sigprocmask(SIG_SETMASK, &r->old, NULL);
	g_strfreev(r->envp);
	if (!r->leave_h) {
		g_free(r->h.path);
		g_free(r->h.mount);
		g_free(r->h.dir);
		g_free(r->h.base);
		g_free(r->h.fence);
		g_free(r->h.why);
		g_mutex_clear(&r->h.mu);
		g_cond_clear(&r->h.cond);
	}
	ctl_target_clear(&r->t);
	g_free(r->why);
}

/* The phases: wait for the lock, take it, spawn CMD, supervise it, stop
 * what is left, report how it ended.  R lives on this stack frame: a thread
 * left behind on a hung mount (leave_h) uses it until the process exits. */
int ctl_hold(int argc, char **argv)
{
	hold_run r = { .rc = CTL_EXIT_OK };
	if (!parse(argc, argv, &r.o, &r.rc))
		return r.rc;

	g_autoptr(GError) error = NULL;
	if (!ctl_target_resolve(r.o.arg, &r.t, &error)) {
		ctl_err("%s", error->message);
		return CTL_EXIT_UNAVAILABLE;
	}
	hold_init(&r);
	if (hold_wait(&r) && hold_take(&r) && hold_spawn(&r)) {
		hold_supervise(&r);
		hold_stop(&r);
		hold_report(&r);
	}
	hold_finish(&r);
	if (r.leave_h) {
		/* A thread left behind on a hung mount still uses R, on this
		 * frame: end the process here, before the frame goes, and
		 * without exit()'s handlers, which would wait on that thread
		 * (a leak checker stops every thread first). */
		fflush(NULL);
		_exit(r.rc);
	}
	return r.rc;
}
