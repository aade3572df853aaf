/* lockbench: what lockfs costs per lock cycle compared with the floor.
 *
 * One run mounts noopfs (the floor, see noopfs.c) and lockfs side by side on
 * temporary mount points and times, on each, the two ways programs take a lock
 * file: a plain O_EXCL create, and liblockfile's link() dance.  Runs alternate
 * between the two mounts round after round so that load drift on the machine
 * hits both alike; each figure is the median of the rounds.  Then it holds
 * --locks locks on lockfs and times `ls -l` and reads the daemon's RSS.
 *
 * On a shared backend (--backend tinystore|ldap|etcd) lockfs cannot be cheaper
 * than the floor plus what the backend's server costs for one lock, so a
 * third participant joins the slices: the raw backend cycle (rawcycle.c), the
 * least a client does on the same server to take a lock and let it go.  The
 * target is then lockfs <= 1.15 x (floor + raw).
 *
 * It is a measurement, not a test: it exits 0 whenever it could measure, even
 * when a target is missed, and non-zero only when something failed to run.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <getopt.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rawcycle.h"

#define FUSE_MAGIC 0x65735546L
#define MOUNT_TIMEOUT_S 10.0
#define STOP_TIMEOUT_S 10.0
#define LS_RUNS 3

/* lockfs's FUSE loop (src/daemon/main.c): fuse_session_loop_mt without cloned
 * /dev/fuse fds, at most 16 workers.  The floor runs the same one. */
#define LOCKFS_LOOP_OPTS "clone_fd=0,max_threads=16"

/* The targets lockfs is held to: against the floor on the local backend,
 * against the floor plus the raw backend cycle on a shared one. */
/* Issue #29: with the defaults (audit on, restart record on), every cycle
 * within 1.10x of the floor (of floor + raw on a shared backend), and at
 * most 1 KiB of daemon memory (VmRSS less idle) per held lock. */
#define TARGET_RATIO 1.10
#define TARGET_SHARED_RATIO 1.10
#define TARGET_LS_S 0.5
#define TARGET_LOCK_BYTES 1024.0

extern char **environ;

/* The two mounts, and the raw backend cycle as a third participant; with
 * --baseline, another lockfs build on a mount of its own (its daemon is
 * d[NFS]) as a fourth. */
enum {
	FLOOR,
	LOCKFS,
	NFS,
	RAW = NFS,
	BASE,
	NPART
};
enum {
	CYC_EXCL,
	CYC_LOCKFILE,
	CYC_FLOCK,
	CYC_FCNTL,
	NCYC
};

static const char *const cycle_name[NCYC] = {
	"O_EXCL create+close+unlink",
	"liblockfile link cycle",
	"flock -n open+flock+unlock",
	"fcntl open+F_SETLK+close",
};
static const char *const cycle_key[NCYC] = { "o_excl", "liblockfile", "flock", "fcntl" };

struct daemon {
	const char *label;
	const char *bin;
	char *opts;         /* the -o argument, or NULL */
	const char *config; /* lockfs --config FILE, or NULL */
	char mnt[PATH_MAX];
	char log[PATH_MAX];
	pid_t pid;
	dev_t parent_dev; /* st_dev of the mount point before mounting */
	bool spawned;
};

struct cycle_result {
	double *us[NPART];     /* µs per cycle, one per round */
	double *cpu_us[NPART]; /* the daemon's CPU µs per cycle, one per round (mounts only) */
	double med[NPART];
	double ratio, ratio_lo, ratio_hi;
	bool failed;
	char err[1024 + 64]; /* g_err and a prefix */
};

struct big_result {
	bool ran, failed;
	char err[1024 + 64]; /* g_err and a prefix */
	double create_s[NFS], ls_s[NFS][LS_RUNS], ls_med[NFS], unlink_s[NFS];
	long rss_kb[NFS]; /* VmRSS while the locks are held (larger of two samples) */
	long hwm_kb[NFS]; /* VmHWM at that point */
};

static volatile sig_atomic_t g_stop;
static char g_err[1024];
static char g_host[65];

static void on_signal(int sig)
{
	(void)sig;
	g_stop = 1;
}

static void set_err(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(g_err, sizeof(g_err), fmt, ap);
	va_end(ap);
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* PID's CPU time (every thread, also those that ended) in µs, or -1. */
static double proc_cpu_us(pid_t pid)
{
	clockid_t clk;
	struct timespec ts;

	if (pid <= 0 || clock_getcpuclockid(pid, &clk) != 0 || clock_gettime(clk, &ts) != 0)
		return -1;
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* Polling interval while waiting for a mount or an exit; the wait itself is
 * bounded by a deadline, never by the sleep. */
static void pause_briefly(void)
{
	struct timespec ts = { 0, 2 * 1000 * 1000 };

	nanosleep(&ts, NULL);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(const double *v, int n)
{
	double *s = malloc(n * sizeof(*s));
	double m;

	if (!s)
		abort();
	memcpy(s, v, n * sizeof(*s));
	qsort(s, n, sizeof(*s), cmp_double);
	m = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
	free(s);
	return m;
}

static int join_path(char *out, const char *dir, const char *name)
{
	if (snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX) {
		set_err("path too long: %s/%s", dir, name);
		return -1;
	}
	return 0;
}

/* ---- the two lock cycles ---------------------------------------------- */

struct cycle_paths {
	char lock[PATH_MAX];
	char tmp[PATH_MAX];
	char file[PATH_MAX]; /* an ordinary file, for flock */
	char content[32];
	size_t content_len;
};

static int cycle_paths_init(struct cycle_paths *p, const char *dir)
{
	char tmpname[128];

	/* liblockfile's temporary name: ".lk", the pid in five digits, the host. */
	snprintf(tmpname, sizeof(tmpname), ".lk%05d%s", (int)getpid(), g_host);
	p->content_len = snprintf(p->content, sizeof(p->content), "%d\n", (int)getpid());
	if (join_path(p->lock, dir, "bench.lock") || join_path(p->tmp, dir, tmpname) ||
	    join_path(p->file, dir, "bench.flock"))
		return -1;
	return 0;
}

static int cycle_excl(const struct cycle_paths *p, long n)
{
	for (long i = 0; i < n; i++) {
		int fd = open(p->lock, O_CREAT | O_EXCL | O_WRONLY, 0644);

		if (fd < 0) {
			set_err("open(%s, O_CREAT|O_EXCL): %s", p->lock, strerror(errno));
			return -1;
		}
		if (close(fd) != 0) {
			set_err("close(%s): %s", p->lock, strerror(errno));
			return -1;
		}
		if (unlink(p->lock) != 0) {
			set_err("unlink(%s): %s", p->lock, strerror(errno));
			return -1;
		}
		if (g_stop)
			return -1;
	}
	return 0;
}

static int cycle_lockfile(const struct cycle_paths *p, long n)
{
	struct stat st_tmp, st_lock;

	for (long i = 0; i < n; i++) {
		int fd = open(p->tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);

		if (fd < 0) {
			set_err("open(%s, O_CREAT|O_EXCL): %s", p->tmp, strerror(errno));
			return -1;
		}
		if (write(fd, p->content, p->content_len) != (ssize_t)p->content_len) {
			set_err("write(%s): %s", p->tmp, strerror(errno));
			close(fd);
			return -1;
		}
		if (close(fd) != 0) {
			set_err("close(%s): %s", p->tmp, strerror(errno));
			return -1;
		}
		if (link(p->tmp, p->lock) != 0) {
			set_err("link(%s, %s): %s", p->tmp, p->lock, strerror(errno));
			return -1;
		}
		if (lstat(p->tmp, &st_tmp) != 0 || lstat(p->lock, &st_lock) != 0) {
			set_err("lstat after link: %s", strerror(errno));
			return -1;
		}
		/* liblockfile trusts the link only when both names are one inode. */
		if (st_tmp.st_ino != st_lock.st_ino) {
			set_err("link(%s, %s): inodes differ (%ju vs %ju)", p->tmp, p->lock,
			        (uintmax_t)st_tmp.st_ino, (uintmax_t)st_lock.st_ino);
			return -1;
		}
		if (unlink(p->tmp) != 0) {
			set_err("unlink(%s): %s", p->tmp, strerror(errno));
			return -1;
		}
		if (unlink(p->lock) != 0) {
			set_err("unlink(%s): %s", p->lock, strerror(errno));
			return -1;
		}
		if (g_stop)
			return -1;
	}
	return 0;
}

/* One lock of an open file and its release, as the two kinds of user do:
 * flock(1) -n flocks it without waiting and lets go (LOCK_UN); a lockf(3)
 * user takes a write lock without waiting (F_SETLK) and lets the close free
 * it.  0, or -1 with the error set. */
static int lock_open_file(const char *file, int fd, bool posix)
{
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };

	if (posix ? fcntl(fd, F_SETLK, &fl) != 0
	          : flock(fd, LOCK_EX | LOCK_NB) != 0 || flock(fd, LOCK_UN) != 0) {
		set_err("%s(%s): %s", posix ? "fcntl F_SETLK" : "flock", file, strerror(errno));
		return -1;
	}
	return 0;
}

/* N times: open (creating) the file, lock it (above), close.  The floor
 * (noopfs) grants flocks and POSIX locks at once, so the same lock requests
 * reach both. */
static int cycle_open_lock(const struct cycle_paths *p, long n, bool posix)
{
	for (long i = 0; i < n; i++) {
		int fd = open(p->file, O_RDWR | O_CREAT, 0644);

		if (fd < 0) {
			set_err("open(%s, O_CREAT): %s", p->file, strerror(errno));
			return -1;
		}
		if (lock_open_file(p->file, fd, posix)) {
			close(fd);
			return -1;
		}
		if (close(fd) != 0) {
			set_err("close(%s): %s", p->file, strerror(errno));
			return -1;
		}
		if (g_stop)
			return -1;
	}
	return 0;
}

/* Time N cycles in DIR; *us is µs per cycle.  On failure the names the cycle
 * uses are removed so later runs start clean. */
static int time_cycle(int cyc, const char *dir, long n, double *us)
{
	struct cycle_paths p;
	double t0;
	int rc;

	if (cycle_paths_init(&p, dir))
		return -1;
	t0 = mono();
	rc = cyc == CYC_EXCL       ? cycle_excl(&p, n)
	     : cyc == CYC_LOCKFILE ? cycle_lockfile(&p, n)
	                           : cycle_open_lock(&p, n, cyc == CYC_FCNTL);
	*us = (mono() - t0) * 1e6 / n;
	if (rc) {
		if (g_stop)
			set_err("interrupted");
		unlink(p.tmp);
		unlink(p.lock);
	}
	return rc;
}

/* ---- daemons ----------------------------------------------------------- */

static int spawn(const char *path, char *const argv[], char *const envp[], int out_fd, int err_fd,
                 bool own_group, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t none, def;
	int rc;

	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&at);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	if (out_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
	if (err_fd >= 0)
		posix_spawn_file_actions_adddup2(&fa, err_fd, 2);
	/* Our SIGPIPE is ignored and that would be inherited; a daemon in its own
	 * process group is not hit by the terminal's ^C, so we unmount it in
	 * order instead of racing it. */
	sigemptyset(&none);
	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigaddset(&def, SIGINT);
	sigaddset(&def, SIGTERM);
	sigaddset(&def, SIGHUP);
	posix_spawnattr_setsigmask(&at, &none);
	posix_spawnattr_setsigdefault(&at, &def);
	posix_spawnattr_setpgroup(&at, 0);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
	                                      (own_group ? POSIX_SPAWN_SETPGROUP : 0));
	rc = posix_spawn(pid, path, &fa, &at, argv, envp);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&at);
	if (rc) {
		set_err("cannot run %s: %s", path, strerror(rc));
		return -1;
	}
	return 0;
}

/* Run a command to completion; its exit status in *status. */
static int run_wait(const char *path, char *const argv[], int out_fd, int *status)
{
	pid_t pid;

	if (spawn(path, argv, environ, out_fd, -1, false, &pid))
		return -1;
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			set_err("waitpid: %s", strerror(errno));
			return -1;
		}
	}
	return 0;
}

static void print_log_tail(const struct daemon *d)
{
	char buf[4096];
	ssize_t len;
	off_t size;
	int fd = open(d->log, O_RDONLY);

	if (fd < 0)
		return;
	size = lseek(fd, 0, SEEK_END);
	lseek(fd, size > (off_t)sizeof(buf) - 1 ? size - (off_t)sizeof(buf) + 1 : 0, SEEK_SET);
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (len > 0) {
		buf[len] = '\0';
		fprintf(stderr, "---- %s output (%s) ----\n%s%s----\n", d->label, d->bin, buf,
		        buf[len - 1] == '\n' ? "" : "\n");
	}
}

static bool is_mounted(const struct daemon *d)
{
	struct stat st;

	if (stat(d->mnt, &st) != 0)
		return errno == ENOTCONN || errno == ECONNABORTED; /* daemon gone */
	return st.st_dev != d->parent_dev;
}

static int start_daemon(struct daemon *d)
{
	char *argv[8];
	struct stat st;
	int i = 0, logfd, rc;

	if (stat(d->mnt, &st) != 0) {
		set_err("stat(%s): %s", d->mnt, strerror(errno));
		return -1;
	}
	d->parent_dev = st.st_dev;
	logfd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (logfd < 0) {
		set_err("%s: %s", d->log, strerror(errno));
		return -1;
	}
	argv[i++] = (char *)d->bin;
	argv[i++] = d->mnt;
	argv[i++] = (char *)"-f";
	if (d->opts && *d->opts) {
		argv[i++] = (char *)"-o";
		argv[i++] = d->opts;
	}
	if (d->config) {
		argv[i++] = (char *)"--config";
		argv[i++] = (char *)d->config;
	}
	argv[i] = NULL;
	rc = spawn(d->bin, argv, environ, logfd, logfd, true, &d->pid);
	close(logfd);
	if (rc)
		return -1;
	d->spawned = true;
	return 0;
}

/* Poll until the mount point is a different filesystem (and, where statfs
 * answers, a FUSE one), the daemon dies, or the deadline passes. */
static int wait_mounted(struct daemon *d)
{
	double deadline = mono() + MOUNT_TIMEOUT_S;

	for (;;) {
		struct statfs sf;
		int status;

		if (is_mounted(d)) {
			if (statfs(d->mnt, &sf) == 0 && sf.f_type != FUSE_MAGIC) {
				set_err("%s: something other than FUSE is mounted (f_type 0x%lx)",
				        d->mnt, (long)sf.f_type);
				return -1;
			}
			return 0;
		}
		if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
			d->pid = 0;
			print_log_tail(d);
			set_err("%s (%s) exited before mounting (%s %d)", d->label, d->bin,
			        WIFEXITED(status) ? "status" : "signal",
			        WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status));
			return -1;
		}
		if (g_stop) {
			set_err("interrupted");
			return -1;
		}
		if (mono() > deadline) {
			print_log_tail(d);
			set_err("%s not mounted on %s after %.0f s", d->label, d->mnt,
			        MOUNT_TIMEOUT_S);
			return -1;
		}
		pause_briefly();
	}
}

/* Remove every name left on a mount (a flat directory), so lockfs releases
 * its locks properly before it is told to stop. */
static void unlink_all(const struct daemon *d)
{
	DIR *dir;
	struct dirent *de;
	char path[PATH_MAX];

	if (!d->spawned || !is_mounted(d) || !(dir = opendir(d->mnt)))
		return;
	while ((de = readdir(dir))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (join_path(path, d->mnt, de->d_name) == 0)
			unlink(path);
	}
	closedir(dir);
}

static void stop_daemon(struct daemon *d)
{
	if (d->pid > 0) {
		double deadline = mono() + STOP_TIMEOUT_S;
		int status;
		pid_t r;

		kill(d->pid, SIGTERM);
		while ((r = waitpid(d->pid, &status, WNOHANG)) == 0 && mono() < deadline)
			pause_briefly();
		if (r == 0) {
			fprintf(stderr, "lockbench: %s did not exit on SIGTERM; killing it\n",
			        d->label);
			kill(d->pid, SIGKILL);
			waitpid(d->pid, &status, 0);
		}
		d->pid = 0;
	}
	if (d->spawned && is_mounted(d)) {
		char *argv[] = { (char *)"fusermount3", (char *)"-u", d->mnt, NULL };
		char *lazy[] = { (char *)"fusermount3", (char *)"-u", (char *)"-z", d->mnt, NULL };
		int status;

		if (run_wait("/usr/bin/fusermount3", argv, -1, &status) != 0 || status != 0)
			run_wait("/usr/bin/fusermount3", lazy, -1, &status);
	}
}

static long proc_status_kb(pid_t pid, const char *field)
{
	char path[64], line[256];
	size_t flen = strlen(field);
	long kb = -1;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, field, flen) && line[flen] == ':') {
			kb = strtol(line + flen + 1, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kb;
}

/* ---- many locks ---------------------------------------------------------- */

static int make_locks(const char *dir, long n, double *secs)
{
	char path[PATH_MAX];
	double t0 = mono();

	for (long i = 0; i < n; i++) {
		int fd;

		snprintf(path, sizeof(path), "%s/lock-%05ld.lock", dir, i);
		fd = open(path, O_CREAT | O_EXCL | O_WRONLY, 0644);
		if (fd < 0) {
			set_err("open(%s, O_CREAT|O_EXCL): %s", path, strerror(errno));
			return -1;
		}
		close(fd);
		if (g_stop) {
			set_err("interrupted");
			return -1;
		}
	}
	*secs = mono() - t0;
	return 0;
}

static int remove_locks(const char *dir, long n, double *secs)
{
	char path[PATH_MAX];
	double t0 = mono();

	for (long i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/lock-%05ld.lock", dir, i);
		if (unlink(path) != 0) {
			set_err("unlink(%s): %s", path, strerror(errno));
			return -1;
		}
	}
	*secs = mono() - t0;
	return 0;
}

/* Wall time of `ls -l DIR` with its output thrown away, as a user sees it. */
static int time_ls(const char *dir, double *secs)
{
	char *argv[] = { (char *)"ls", (char *)"-l", (char *)dir, NULL };
	char *envp[] = { (char *)"LC_ALL=C", (char *)"PATH=/usr/bin:/bin", NULL };
	int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	double t0;
	pid_t pid;
	int status, rc;

	if (devnull < 0) {
		set_err("/dev/null: %s", strerror(errno));
		return -1;
	}
	t0 = mono();
	rc = spawn("/bin/ls", argv, envp, devnull, -1, false, &pid);
	close(devnull);
	if (rc)
		return -1;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*secs = mono() - t0;
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		set_err("ls -l %s failed (status 0x%x)", dir, status);
		return -1;
	}
	return 0;
}

static void run_big(struct daemon *d, long n, struct big_result *b)
{
	long rss;
	int fs, k;

	b->ran = true;
	for (fs = 0; fs < NFS; fs++) {
		fprintf(stderr, "lockbench: creating %ld locks on %s\n", n, d[fs].label);
		if (make_locks(d[fs].mnt, n, &b->create_s[fs]))
			goto fail;
		b->rss_kb[fs] = proc_status_kb(d[fs].pid, "VmRSS");
	}
	for (k = 0; k < LS_RUNS; k++) {
		for (int j = 0; j < NFS; j++) {
			fs = k % 2 ? NFS - 1 - j : j;
			if (time_ls(d[fs].mnt, &b->ls_s[fs][k]))
				goto fail;
		}
	}
	for (fs = 0; fs < NFS; fs++) {
		/* Sampled again after ls: listing may have grown the daemon. */
		rss = proc_status_kb(d[fs].pid, "VmRSS");
		if (rss > b->rss_kb[fs])
			b->rss_kb[fs] = rss;
		b->hwm_kb[fs] = proc_status_kb(d[fs].pid, "VmHWM");
		b->ls_med[fs] = median(b->ls_s[fs], LS_RUNS);
	}
	for (fs = 0; fs < NFS; fs++)
		if (remove_locks(d[fs].mnt, n, &b->unlink_s[fs]))
			goto fail;
	return;
fail:
	b->failed = true;
	snprintf(b->err, sizeof(b->err), "%s", g_err);
}

/* ---- the work directory ------------------------------------------------ */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP)
		rmdir(path);
	else
		unlink(path);
	return 0;
}

/* FTW_MOUNT: never descend into a mount that failed to go away. */
static void remove_tree(const char *path)
{
	nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

static const char *fs_name(long type)
{
	static char buf[32];

	switch (type) {
	case 0xEF53:
		return "ext2/3/4";
	case 0x01021994:
		return "tmpfs";
	case 0x794c7630:
		return "overlayfs";
	case 0x58465342:
		return "xfs";
	case (long)0x9123683E:
		return "btrfs";
	default:
		snprintf(buf, sizeof(buf), "f_type 0x%lx", type);
		return buf;
	}
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = *s;

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void json_array(FILE *f, const double *v, int n)
{
	fputc('[', f);
	for (int i = 0; i < n; i++)
		fprintf(f, "%s%.3f", i ? "," : "", v[i]);
	fputc(']', f);
}

/* ---- options ------------------------------------------------------------- */

struct options {
	long iterations, rounds, locks;
	long slices; /* alternations per round */
	long cpu;    /* -1: no pinning */
	const char *lockfs, *noopfs, *lockfs_opts, *floor_opts;
	const char *baseline;      /* another lockfs binary to compare with, or NULL */
	const char *backend;       /* "local", "tinystore", "ldap" or "etcd" */
	const char *lockfs_config; /* lockfs --config FILE, or NULL */
	bool shared;               /* a shared backend: a raw cycle, zero timeouts */
	bool json, stand_in;
};

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
	        "usage: %s [options]\n"
	        "  --backend B      lockfs's backend: local (default), tinystore, ldap or etcd;\n"
	        "                   on a shared one a raw backend cycle on the same server\n"
	        "                   is timed too, and the floor caches nothing, as lockfs\n"
	        "  --lockfs-config FILE  lockfs --config FILE (e.g. the [ldap] keys); the raw\n"
	        "                   cycle reads it too\n"
	        "  --iterations N   cycles per run (default 20000; 2000 on a shared backend)\n"
	        "  --rounds R       interleaved rounds; medians are reported (default 5)\n"
	        "  --slices S       floor/lockfs(/raw) alternations within a round (default 10)\n"
	        "  --locks N        locks held for the ls/RSS check, 0 to skip (default 10000;\n"
	        "                   0 on a shared backend)\n"
	        "  --lockfs PATH    lockfs binary (default $LOCKFS_BIN, else ../src/lockfs\n"
	        "                   next to this program)\n"
	        "  --noopfs PATH    floor binary (default $NOOPFS_BIN, else ./noopfs next to\n"
	        "                   this program)\n"
	        "  --lockfs-opts O  extra lockfs -o options, after backend=local,state_dir=...\n"
	        "                   (or backend=B), e.g. tinystore_dir=STORE; the raw cycle\n"
	        "                   reads them too\n"
	        "  --floor-opts O   more noopfs -o options, after (and overriding) the floor's\n"
	        "                   defaults: allow_other as root, lockfs's loop\n"
	        "                   (clone_fd=0,max_threads=16) and its cache policy on the\n"
	        "                   backend (attr/entry_timeout 1 on local, 0 on shared)\n"
	        "  --stand-in       the --lockfs binary is a noopfs stand-in: give it the\n"
	        "                   floor's options, with --lockfs-opts instead of\n"
	        "                   --floor-opts (for checking the bench itself)\n"
	        "  --baseline PATH  another lockfs build (e.g. the commit before a change),\n"
	        "                   mounted beside lockfs with its options and a state_dir\n"
	        "                   of its own; it joins the slices and the report adds\n"
	        "                   lockfs/baseline per cycle\n"
	        "  --cpu N          pin this program and both daemons to CPU N (steadier\n"
	        "                   numbers where cross-CPU wake-ups are costly, e.g. VMs)\n"
	        "  --json           also print one JSON object at the end\n",
	        prog);
}

static long parse_long(const char *s, const char *name, long min)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < min) {
		fprintf(stderr, "lockbench: %s: expected an integer >= %ld, got '%s'\n", name, min,
		        s);
		exit(2);
	}
	return v;
}

static const struct option longopts[] = {
	{ "iterations", required_argument, NULL, 'i' },
	{ "backend", required_argument, NULL, 'b' },
	{ "lockfs-config", required_argument, NULL, 'C' },
	{ "rounds", required_argument, NULL, 'r' },
	{ "slices", required_argument, NULL, 's' },
	{ "locks", required_argument, NULL, 'n' },
	{ "lockfs", required_argument, NULL, 'L' },
	{ "noopfs", required_argument, NULL, 'N' },
	{ "lockfs-opts", required_argument, NULL, 'O' },
	{ "floor-opts", required_argument, NULL, 'F' },
	{ "stand-in", no_argument, NULL, 'S' },
	{ "baseline", required_argument, NULL, 'B' },
	{ "cpu", required_argument, NULL, 'c' },
	{ "json", no_argument, NULL, 'j' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* After the options: refuse what does not go together, and fill in the
 * defaults that depend on the backend. */
static void settle_options(struct options *o)
{
	if (strcmp(o->backend, "local") != 0 && strcmp(o->backend, "tinystore") != 0 &&
	    strcmp(o->backend, "ldap") != 0 && strcmp(o->backend, "etcd") != 0) {
		fprintf(stderr, "lockbench: --backend: local, tinystore, ldap or etcd, not '%s'\n",
		        o->backend);
		exit(2);
	}
	o->shared = strcmp(o->backend, "local") != 0;
	/* A shared backend's cycle costs a server round trip or more: fewer
	 * cycles take as long.  The many-locks check is off there unless asked
	 * for: its targets are the local backend's. */
	if (o->iterations < 0)
		o->iterations = o->shared ? 2000 : 20000;
	if (o->locks < 0)
		o->locks = o->shared ? 0 : 10000;
	if (o->slices > o->iterations)
		o->slices = o->iterations;
	if (o->baseline && o->stand_in) {
		fprintf(stderr, "lockbench: --baseline and --stand-in do not go together\n");
		exit(2);
	}
}

static void parse_options(int argc, char **argv, struct options *o)
{
	int c;

	*o = (struct options){
		.iterations = -1,
		.rounds = 5,
		.slices = 10,
		.locks = -1,
		.cpu = -1,
		.backend = "local",
	};
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case 'i':
			o->iterations = parse_long(optarg, "--iterations", 1);
			break;
		case 'b':
			o->backend = optarg;
			break;
		case 'C':
			o->lockfs_config = optarg;
			break;
		case 'r':
			o->rounds = parse_long(optarg, "--rounds", 1);
			break;
		case 's':
			o->slices = parse_long(optarg, "--slices", 1);
			break;
		case 'n':
			o->locks = parse_long(optarg, "--locks", 0);
			break;
		case 'L':
			o->lockfs = optarg;
			break;
		case 'N':
			o->noopfs = optarg;
			break;
		case 'O':
			o->lockfs_opts = optarg;
			break;
		case 'F':
			o->floor_opts = optarg;
			break;
		case 'S':
			o->stand_in = true;
			break;
		case 'B':
			o->baseline = optarg;
			break;
		case 'c':
			o->cpu = parse_long(optarg, "--cpu", 0);
			break;
		case 'j':
			o->json = true;
			break;
		case 'h':
			usage(stdout, argv[0]);
			exit(0);
		default:
			usage(stderr, argv[0]);
			exit(2);
		}
	}
	if (optind < argc) {
		usage(stderr, argv[0]);
		exit(2);
	}
	settle_options(o);
}

/* Defaults are found relative to this program, so build/bench/lockbench
 * finds build/bench/noopfs and build/src/lockfs wherever the build dir is. */
static char *beside_self(const char *rel)
{
	char self[PATH_MAX], *slash, *out;
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (len <= 0)
		return NULL;
	self[len] = '\0';
	slash = strrchr(self, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	if (asprintf(&out, "%s/%s", self, rel) < 0)
		return NULL;
	return out;
}

static const char *resolve_bin(const char *given, const char *env, const char *rel)
{
	const char *e = getenv(env);
	char *p, *real;

	if (given)
		return given;
	if (e && *e)
		return e;
	p = beside_self(rel);
	if (p && (real = realpath(p, NULL))) {
		free(p);
		return real;
	}
	return p;
}

/* ---- report -------------------------------------------------------------- */

static const char *verdict(bool ok)
{
	return ok ? "PASS" : "MISS";
}

/* What was run: the cycles, the pinning and each participant's command. */
static void report_header(const struct options *o, const struct daemon *d, const raw_client *raw,
                          const char *lf)
{
	printf("\nlockbench: %ld cycles per mount per round in %ld alternating slices, "
	       "%ld rounds, median of rounds\n",
	       o->iterations, o->slices, o->rounds);
	if (o->cpu >= 0)
		printf("  everything pinned to CPU %ld\n", o->cpu);
	printf("  floor  : %s -o %s (noopfs)\n", d[FLOOR].bin,
	       d[FLOOR].opts && *d[FLOOR].opts ? d[FLOOR].opts : "(none)");
	printf("  %-7s: %s -o %s%s%s%s\n", lf, d[LOCKFS].bin,
	       d[LOCKFS].opts && *d[LOCKFS].opts ? d[LOCKFS].opts : "(none)",
	       d[LOCKFS].config ? " --config " : "", d[LOCKFS].config ? d[LOCKFS].config : "",
	       o->stand_in ? "\n  * stand-in: a second noopfs, not lockfs" : "");
	if (raw)
		printf("  raw    : %s\n", raw_describe(raw));
	if (o->baseline)
		printf("  baseline: %s -o %s%s%s\n", d[NFS].bin,
		       d[NFS].opts ? d[NFS].opts : "(none)", d[NFS].config ? " --config " : "",
		       d[NFS].config ? d[NFS].config : "");
}

/* The table of cycles: floor (raw), lockfs, their ratio against TARGET. */
static void report_cycle_table(const struct options *o, const struct cycle_result *cr,
                               const char *lf, double target)
{
	if (!o->shared) {
		printf("\n%-28s %10s %10s %7s %-13s %8s %s\n", "cycle (µs per cycle)", "floor", lf,
		       "ratio", " rounds", "target", "result");
	} else {
		printf("\nbackend %s: target %s <= %.2f x (floor + raw)\n", o->backend, lf,
		       TARGET_SHARED_RATIO);
		printf("%-28s %9s %9s %9s %7s %-13s %8s %s\n", "cycle (µs per cycle)", "floor",
		       "raw", lf, "ratio", " rounds", "target", "result");
	}
	for (int c = 0; c < NCYC; c++) {
		if (cr[c].failed) {
			printf("%-28s %s\n", cycle_name[c], "ERROR");
			printf("    %s\n", cr[c].err);
			continue;
		}
		if (!o->shared)
			printf("%-28s %10.1f %10.1f %6.2fx  %4.2f-%4.2f   %6s %4.2fx %s\n",
			       cycle_name[c], cr[c].med[FLOOR], cr[c].med[LOCKFS], cr[c].ratio,
			       cr[c].ratio_lo, cr[c].ratio_hi, "<=", TARGET_RATIO,
			       verdict(cr[c].ratio <= TARGET_RATIO));
		else
			printf("%-28s %9.1f %9.1f %9.1f %6.2fx  %4.2f-%4.2f   %6s %4.2fx %s\n",
			       cycle_name[c], cr[c].med[FLOOR], cr[c].med[RAW], cr[c].med[LOCKFS],
			       cr[c].ratio, cr[c].ratio_lo, cr[c].ratio_hi, "<=", target,
			       verdict(cr[c].ratio <= target));
	}
}

/* Under the table on a shared backend: the stand-in's check of the bench,
 * or what the target leaves lockfs; then a cycle below the floor, if any. */
static void report_cycle_notes(const struct options *o, const struct cycle_result *cr, int r,
                               const char *lf, double target)
{
	if (o->shared && o->stand_in) {
		/* The stand-in checks the bench: against the floor it is ≈ 1.0. */
		for (int c = 0; c < NCYC; c++)
			if (!cr[c].failed)
				printf("  stand-in check, %s: lockfs*/floor = %.2fx (expect ~1.0)\n",
				       cycle_key[c], cr[c].med[LOCKFS] / cr[c].med[FLOOR]);
	} else if (o->shared) {
		/* What the target leaves lockfs, to compare with what it spends. */
		for (int c = 0; c < NCYC; c++)
			if (!cr[c].failed)
				printf("  %s: lockfs - (floor + raw) = %.1f µs per cycle; the "
				       "target allows %.1f µs\n",
				       cycle_key[c],
				       cr[c].med[LOCKFS] - cr[c].med[FLOOR] - cr[c].med[RAW],
				       (target - 1) * (cr[c].med[FLOOR] + cr[c].med[RAW]));
	}
	for (int c = 0; c < NCYC; c++) {
		/* Below the floor by more than noise means the two mounts do not
		 * get the same requests: the comparison is off, not lockfs fast. */
		bool below = !cr[c].failed;

		for (int k = 0; below && k < r; k++)
			below = cr[c].us[LOCKFS][k] < 0.9 * cr[c].us[FLOOR][k];
		if (below) {
			printf("NOTE: %s is below the floor in every round: the kernel sends\n"
			       "      it fewer requests (it lets the kernel cache something, e.g.\n"
			       "      attributes), so this floor is not its floor; match it with\n"
			       "      --floor-opts (e.g. attr_timeout=1), see bench/README.md\n",
			       lf);
			break;
		}
	}
}

/* --baseline: lockfs against the other build, in wall time. */
static void report_baseline_time(const struct options *o, const struct cycle_result *cr, int r,
                                 const char *lf)
{
	printf("\n%-28s %10s %10s %9s %-13s %12s\n", "against the baseline (µs)", "baseline", lf,
	       "lockfs/b", " rounds", "baseline/floor");
	for (int c = 0; c < NCYC; c++) {
		double lo = 1e9, hi = 0, fl;

		if (cr[c].failed)
			continue;
		for (int k = 0; k < r; k++) {
			double q = cr[c].us[LOCKFS][k] / cr[c].us[BASE][k];

			lo = q < lo ? q : lo;
			hi = q > hi ? q : hi;
		}
		fl = cr[c].med[FLOOR] + (o->shared ? cr[c].med[RAW] : 0);
		printf("%-28s %10.1f %10.1f %8.2fx  %4.2f-%4.2f   %11.2fx\n", cycle_name[c],
		       cr[c].med[BASE], cr[c].med[LOCKFS], cr[c].med[LOCKFS] / cr[c].med[BASE], lo,
		       hi, cr[c].med[BASE] / fl);
	}
}

/* --baseline: the daemons' CPU time, far less disturbed by other load than
 * wall time. */
static void report_baseline_cpu(const struct cycle_result *cr, int r, const char *lf)
{
	printf("\n%-28s %10s %10s %10s %9s %-13s\n", "daemon CPU (µs per cycle)", "floor",
	       "baseline", lf, "lockfs/b", " rounds");
	for (int c = 0; c < NCYC; c++) {
		double lo = 1e9, hi = 0, q[3];

		if (cr[c].failed)
			continue;
		for (int k = 0; k < r; k++) {
			double x = cr[c].cpu_us[LOCKFS][k] / cr[c].cpu_us[BASE][k];

			lo = x < lo ? x : lo;
			hi = x > hi ? x : hi;
		}
		q[0] = median(cr[c].cpu_us[FLOOR], r);
		q[1] = median(cr[c].cpu_us[BASE], r);
		q[2] = median(cr[c].cpu_us[LOCKFS], r);
		printf("%-28s %10.1f %10.1f %10.1f %8.2fx  %4.2f-%4.2f\n", cycle_name[c], q[0],
		       q[1], q[2], q[2] / q[1], lo, hi);
	}
}

/* Daemon memory per held lock: VmRSS holding them less VmRSS idle, or -1. */
static double lock_bytes(const struct big_result *b, long rss_idle_kb, long locks)
{
	if (b->rss_kb[LOCKFS] < 0 || rss_idle_kb < 0 || locks <= 0)
		return -1;
	return (b->rss_kb[LOCKFS] - rss_idle_kb) * 1024.0 / (double)locks;
}

/* The many-locks check: create, ls -l, RSS, unlink. */
static void report_big(const struct options *o, const struct big_result *b, long rss_idle_kb,
                       const char *lf)
{
	printf("\n%ld locks held%s:\n", o->locks,
	       o->shared ? " (the targets are the local backend's, for reference)" : "");
	if (b->failed) {
		printf("  ERROR: %s\n", b->err);
		return;
	}
	double rss_b = b->rss_kb[LOCKFS] * 1024.0;
	double per_lock = lock_bytes(b, rss_idle_kb, o->locks);

	printf("  %-22s floor %7.3f s   %s %7.3f s\n", "create (O_EXCL)", b->create_s[FLOOR], lf,
	       b->create_s[LOCKFS]);
	printf("  %-22s floor %7.3f s   %s %7.3f s   target < %.1f s     %s\n",
	       "ls -l (median of 3)", b->ls_med[FLOOR], lf, b->ls_med[LOCKFS], TARGET_LS_S,
	       verdict(b->ls_med[LOCKFS] < TARGET_LS_S));
	printf("  %-22s floor %7.1f MB  %s %7.1f MB\n", "daemon VmRSS",
	       b->rss_kb[FLOOR] * 1024.0 / 1e6, lf, rss_b / 1e6);
	printf("  %-22s %s %.1f MB idle, VmHWM %.1f MB\n", "", lf, rss_idle_kb * 1024.0 / 1e6,
	       b->hwm_kb[LOCKFS] * 1024.0 / 1e6);
	printf("  %-22s %s %7.0f B (VmRSS less idle)  target <= %.0f B  %s\n", "per held lock", lf,
	       per_lock, TARGET_LOCK_BYTES,
	       verdict(per_lock >= 0 && per_lock <= TARGET_LOCK_BYTES));
	printf("  %-22s floor %7.3f s   %s %7.3f s\n", "unlink", b->unlink_s[FLOOR], lf,
	       b->unlink_s[LOCKFS]);
}

/* --json: one cycle's object, without its key. */
static void json_cycle(const struct options *o, const struct cycle_result *cr, int r, double target)
{
	printf("{");
	if (cr->failed) {
		printf("\"error\":");
		json_str(stdout, cr->err);
		printf("}");
		return;
	}
	printf("\"floor_us\":%.3f,\"lockfs_us\":%.3f,", cr->med[FLOOR], cr->med[LOCKFS]);
	if (o->shared)
		printf("\"raw_us\":%.3f,", cr->med[RAW]);
	printf("\"ratio\":%.4f,\"ratio_min\":%.4f,\"ratio_max\":%.4f,"
	       "\"ratio_of\":\"%s\",\"target\":%.2f,\"pass\":%s,"
	       "\"floor_rounds_us\":",
	       cr->ratio, cr->ratio_lo, cr->ratio_hi, o->shared ? "floor+raw" : "floor", target,
	       cr->ratio <= target ? "true" : "false");
	json_array(stdout, cr->us[FLOOR], r);
	if (o->shared) {
		printf(",\"raw_rounds_us\":");
		json_array(stdout, cr->us[RAW], r);
	}
	printf(",\"lockfs_rounds_us\":");
	json_array(stdout, cr->us[LOCKFS], r);
	if (o->baseline) {
		printf(",\"baseline_us\":%.3f,\"baseline_rounds_us\":", cr->med[BASE]);
		json_array(stdout, cr->us[BASE], r);
		printf(",\"cpu_rounds_us\":{\"floor\":");
		json_array(stdout, cr->cpu_us[FLOOR], r);
		printf(",\"baseline\":");
		json_array(stdout, cr->cpu_us[BASE], r);
		printf(",\"lockfs\":");
		json_array(stdout, cr->cpu_us[LOCKFS], r);
		printf("}");
	}
	printf("}");
}

/* --json: the many-locks check's fields, after a comma, when it ran. */
static void json_held(const struct options *o, const struct big_result *b, long rss_idle_kb)
{
	if (b->ran && b->failed) {
		printf(",\"held\":{\"error\":");
		json_str(stdout, b->err);
		printf("}");
	} else if (b->ran) {
		printf(",\"held\":{\"create_s\":{\"floor\":%.4f,\"lockfs\":%.4f},"
		       "\"ls_s\":{\"floor\":%.4f,\"lockfs\":%.4f,\"floor_runs\":",
		       b->create_s[FLOOR], b->create_s[LOCKFS], b->ls_med[FLOOR],
		       b->ls_med[LOCKFS]);
		json_array(stdout, b->ls_s[FLOOR], LS_RUNS);
		printf(",\"lockfs_runs\":");
		json_array(stdout, b->ls_s[LOCKFS], LS_RUNS);
		printf(",\"target\":%.2f,\"pass\":%s},", TARGET_LS_S,
		       b->ls_med[LOCKFS] < TARGET_LS_S ? "true" : "false");
		double per_lock = lock_bytes(b, rss_idle_kb, o->locks);
		printf("\"rss_kb\":{\"floor\":%ld,\"lockfs\":%ld,\"lockfs_hwm\":%ld},"
		       "\"lock_bytes\":{\"lockfs\":%.0f,\"target\":%.0f,\"pass\":%s},",
		       b->rss_kb[FLOOR], b->rss_kb[LOCKFS], b->hwm_kb[LOCKFS], per_lock,
		       TARGET_LOCK_BYTES,
		       per_lock >= 0 && per_lock <= TARGET_LOCK_BYTES ? "true" : "false");
		printf("\"unlink_s\":{\"floor\":%.4f,\"lockfs\":%.4f}}", b->unlink_s[FLOOR],
		       b->unlink_s[LOCKFS]);
	}
}

/* --json: everything the report says, as one object on one line. */
static void report_json(const struct options *o, const struct daemon *d, const raw_client *raw,
                        const struct cycle_result *cr, const double *ref_us, const char *ref_dir,
                        const char *ref_fs, long rss_idle_kb, const struct big_result *b)
{
	int r = (int)o->rounds;
	double target = o->shared ? TARGET_SHARED_RATIO : TARGET_RATIO;

	printf("{\"backend\":");
	json_str(stdout, o->backend);
	printf(",\"iterations\":%ld,\"rounds\":%ld,\"slices\":%ld,\"locks\":%ld,\"cpu\":%ld,"
	       "\"stand_in\":%s,",
	       o->iterations, o->rounds, o->slices, o->locks, o->cpu,
	       o->stand_in ? "true" : "false");
	if (raw) {
		printf("\"raw\":");
		json_str(stdout, raw_describe(raw));
		printf(",");
	}
	printf("\"floor_bin\":");
	json_str(stdout, d[FLOOR].bin);
	printf(",\"lockfs_bin\":");
	json_str(stdout, d[LOCKFS].bin);
	printf(",\"cycles\":{");
	for (int c = 0; c < NCYC; c++) {
		printf("%s\"%s\":", c ? "," : "", cycle_key[c]);
		json_cycle(o, &cr[c], r, target);
	}
	printf("},\"reference_o_excl\":{\"dir\":");
	json_str(stdout, ref_dir);
	printf(",\"fs\":");
	json_str(stdout, ref_fs);
	printf(",\"us\":%.3f,\"rounds_us\":", median(ref_us, r));
	json_array(stdout, ref_us, r);
	printf("},\"lockfs_rss_idle_kb\":%ld", rss_idle_kb);
	json_held(o, b, rss_idle_kb);
	printf("}\n");
}

static void report(const struct options *o, const struct daemon *d, const raw_client *raw,
                   struct cycle_result *cr, const double *ref_us, const char *ref_dir,
                   const char *ref_fs, long rss_idle_kb, const struct big_result *b)
{
	int r = (int)o->rounds;
	double ref_med = median(ref_us, r);
	double target = o->shared ? TARGET_SHARED_RATIO : TARGET_RATIO;
	const char *lf = o->stand_in ? "lockfs*" : "lockfs";

	report_header(o, d, raw, lf);
	report_cycle_table(o, cr, lf, target);
	report_cycle_notes(o, cr, r, lf, target);
	if (o->baseline) {
		report_baseline_time(o, cr, r, lf);
		report_baseline_cpu(cr, r, lf);
	}
	printf("\nreference, not a target: O_EXCL cycle on %s (%s): %.1f µs\n", ref_dir, ref_fs,
	       ref_med);
	if (b->ran)
		report_big(o, b, rss_idle_kb, lf);
	if (o->shared)
		printf("(ratio = median %s / (median floor + median raw), rounds = per-round "
		       "range)\n",
		       lf);
	else
		printf("(MB = 10^6 bytes; ratio = median %s / median floor, rounds = per-round "
		       "range)\n",
		       lf);

	if (o->json)
		report_json(o, d, raw, cr, ref_us, ref_dir, ref_fs, rss_idle_kb, b);
}

/* ---- main ---------------------------------------------------------------- */

static void mark_failed(struct cycle_result *cr, const char *label)
{
	cr->failed = true;
	snprintf(cr->err, sizeof(cr->err), "on %s: %s", label, g_err);
}

/* "a,b,c" of the non-empty parts; NULL when out of memory. */
static char *join_opts(const char *const *parts, int n)
{
	size_t len = 1;
	char *out;

	for (int i = 0; i < n; i++)
		len += parts[i] ? strlen(parts[i]) + 1 : 0;
	if (!(out = malloc(len)))
		return NULL;
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (!parts[i] || !*parts[i])
			continue;
		if (out[0])
			strcat(out, ",");
		strcat(out, parts[i]);
	}
	return out;
}

/* Time N cycles of kind CYC for participant P (a mount, or the raw backend
 * cycle); *us is µs per cycle. */
static int time_part(int p, int cyc, const struct daemon *d, raw_client *raw, long n, double *us)
{
	double t0;
	int rc;

	if (p == BASE)
		return time_cycle(cyc, d[NFS].mnt, n, us);
	if (p != RAW)
		return time_cycle(cyc, d[p].mnt, n, us);
	t0 = mono();
	rc = raw_cycles(raw, n, &g_stop, g_err, sizeof(g_err));
	*us = (mono() - t0) * 1e6 / n;
	return rc;
}

/* What the steps of a run share. */
struct bench {
	struct options o;
	struct daemon d[NFS + 1];
	int parts[NPART], np; /* who takes part in each slice, in order */
	struct cycle_result cr[NCYC];
	struct big_result big;
	char work[PATH_MAX], ref_dir[PATH_MAX], state[PATH_MAX], state_base[PATH_MAX];
	const char *tmpdir, *ref_fs;
	double *ref_us; /* the reference O_EXCL cycle, one per round */
	long rss_idle_kb;
	bool any_failed;
	raw_client *raw;
};

static const char *const part_label[NPART] = { "floor", "lockfs", "raw", "baseline" };

/* The mounts of this run: floor and lockfs, and the baseline if given. */
static int ndaemons(const struct bench *b)
{
	return NFS + (b->o.baseline != NULL);
}

/* The binaries, the configuration file and the CPU: 0, or the exit code. */
static int check_setup(struct bench *b)
{
	struct daemon *d = b->d;

	d[FLOOR].bin = resolve_bin(b->o.noopfs, "NOOPFS_BIN", "noopfs");
	d[LOCKFS].bin = resolve_bin(b->o.lockfs, "LOCKFS_BIN", "../src/lockfs");
	d[NFS].bin = b->o.baseline;
	for (int fs = 0; fs < ndaemons(b); fs++) {
		if (!d[fs].bin || access(d[fs].bin, X_OK) != 0) {
			fprintf(stderr, "lockbench: no %s binary at %s%s\n", d[fs].label,
			        d[fs].bin ? d[fs].bin : "(unknown)",
			        fs == LOCKFS ? " (build it, or pass --lockfs or set LOCKFS_BIN)"
			                     : "");
			return 2;
		}
	}
	if (b->o.lockfs_config && access(b->o.lockfs_config, R_OK) != 0) {
		fprintf(stderr, "lockbench: --lockfs-config %s: %s\n", b->o.lockfs_config,
		        strerror(errno));
		return 2;
	}
	if (b->o.cpu >= 0) {
		/* Set before spawning: the daemons inherit it. */
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(b->o.cpu, &set);
		if (b->o.cpu >= CPU_SETSIZE || sched_setaffinity(0, sizeof(set), &set) != 0) {
			fprintf(stderr, "lockbench: cannot pin to CPU %ld: %s\n", b->o.cpu,
			        strerror(errno));
			return 2;
		}
	}
	return 0;
}

static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

/* The floor's options (and the stand-in's): 0, or the exit code. */
static int floor_options(struct bench *b)
{
	const char *base_opts, *policy;

	/* The floor keeps lockfs's cache policy, so the kernel sends both the
	 * same requests: on the local backend names and attributes are cached
	 * for 1 s (and listed with readdirplus); on a shared backend nothing
	 * is, since other hosts change the directory (src/daemon/fs_ops.c lfs_new).
	 * It also runs lockfs's loop (src/daemon/main.c): no cloned /dev/fuse fds, at
	 * most 16 workers.  --floor-opts come last and override either. */
	policy = b->o.shared ? "attr_timeout=0,entry_timeout=0" : "attr_timeout=1,entry_timeout=1";
	/* The floor and lockfs get the same FUSE options (lockfs defaults to
	 * allow_other when root), so the kernel treats both mounts alike. */
	base_opts = geteuid() == 0 ? "allow_other" : "";
	const char *fl[] = { base_opts, LOCKFS_LOOP_OPTS, policy, b->o.floor_opts };
	const char *si[] = { base_opts, LOCKFS_LOOP_OPTS, policy, b->o.lockfs_opts };

	if (!(b->d[FLOOR].opts = join_opts(fl, 4)) ||
	    (b->o.stand_in && !(b->d[LOCKFS].opts = join_opts(si, 4)))) {
		fprintf(stderr, "lockbench: out of memory\n");
		return 2;
	}
	return 0;
}

/* The participants of each slice and room for the results: 0, or the exit
 * code. */
static int alloc_results(struct bench *b)
{
	/* Who takes part in each slice: the raw cycle sits between the mounts
	 * (floor, raw, lockfs, then lockfs, raw, floor). */
	b->parts[b->np++] = FLOOR;
	if (b->o.shared)
		b->parts[b->np++] = RAW;
	if (b->o.baseline)
		b->parts[b->np++] = BASE;
	b->parts[b->np++] = LOCKFS;
	for (int c = 0; c < NCYC; c++)
		for (int fs = 0; fs < NPART; fs++)
			if (!(b->cr[c].us[fs] = calloc(b->o.rounds, sizeof(double))) ||
			    !(b->cr[c].cpu_us[fs] = calloc(b->o.rounds, sizeof(double))))
				return 2;
	if (!(b->ref_us = calloc(b->o.rounds, sizeof(double))))
		return 2;
	return 0;
}

/* The working directory under $TMPDIR: 0, or the exit code. */
static int make_work(struct bench *b)
{
	b->tmpdir = getenv("TMPDIR");
	if (!b->tmpdir || !*b->tmpdir)
		b->tmpdir = "/tmp";
	snprintf(b->work, sizeof(b->work), "%s/lockbench.XXXXXX", b->tmpdir);
	if (!mkdtemp(b->work)) {
		fprintf(stderr, "lockbench: mkdtemp(%s): %s\n", b->work, strerror(errno));
		return 2;
	}
	return 0;
}

/* lockfs's and the baseline's -o: its backend, its own state_dir on the
 * local one, then --lockfs-opts.  -1 (g_err set) when out of memory. */
static int lockfs_options(struct bench *b)
{
	const struct options *o = &b->o;
	struct daemon *d = b->d;
	int n = o->shared
	                ? asprintf(&d[LOCKFS].opts, "backend=%s%s%s", o->backend,
	                           o->lockfs_opts ? "," : "", o->lockfs_opts ? o->lockfs_opts : "")
	                : asprintf(&d[LOCKFS].opts, "backend=local,state_dir=%s%s%s", b->state,
	                           o->lockfs_opts ? "," : "", o->lockfs_opts ? o->lockfs_opts : "");

	if (n < 0) {
		d[LOCKFS].opts = NULL;
		set_err("out of memory");
		return -1;
	}
	d[LOCKFS].config = o->lockfs_config;
	/* The baseline: lockfs's options, its own state_dir. */
	n = o->shared ? asprintf(&d[NFS].opts, "%s", d[LOCKFS].opts)
	              : asprintf(&d[NFS].opts, "backend=local,state_dir=%s%s%s", b->state_base,
	                         o->lockfs_opts ? "," : "", o->lockfs_opts ? o->lockfs_opts : "");
	if (n < 0) {
		d[NFS].opts = NULL;
		set_err("out of memory");
		return -1;
	}
	d[NFS].config = o->lockfs_config;
	return 0;
}

/* The paths and directories in the working directory, the daemons'
 * options: 0, or -1 (g_err set). */
static int prepare(struct bench *b)
{
	struct daemon *d = b->d;
	const char *work = b->work;
	struct statfs sf;

	if (join_path(b->state, work, "state") || join_path(b->ref_dir, work, "ref") ||
	    join_path(d[FLOOR].mnt, work, "floor") || join_path(d[LOCKFS].mnt, work, "lockfs") ||
	    join_path(d[FLOOR].log, work, "floor.log") ||
	    join_path(d[LOCKFS].log, work, "lockfs.log") ||
	    join_path(b->state_base, work, "state-base") ||
	    join_path(d[NFS].mnt, work, "baseline") || join_path(d[NFS].log, work, "baseline.log"))
		return -1;
	if (!b->o.stand_in && lockfs_options(b))
		return -1;
	if (b->o.baseline && (mkdir(b->state_base, 0700) || mkdir(d[NFS].mnt, 0755))) {
		set_err("mkdir in %s: %s", work, strerror(errno));
		return -1;
	}
	if (mkdir(b->state, 0700) || mkdir(b->ref_dir, 0755) || mkdir(d[FLOOR].mnt, 0755) ||
	    mkdir(d[LOCKFS].mnt, 0755)) {
		set_err("mkdir in %s: %s", work, strerror(errno));
		return -1;
	}
	if (statfs(b->ref_dir, &sf) == 0)
		b->ref_fs = fs_name((long)sf.f_type);
	return 0;
}

/* Start and mount every daemon, then open the raw client on a shared
 * backend: 0, or -1 (g_err set). */
static int mount_all(struct bench *b)
{
	struct utsname un;

	for (int fs = 0; fs < ndaemons(b); fs++)
		if (start_daemon(&b->d[fs]))
			return -1;
	for (int fs = 0; fs < ndaemons(b); fs++)
		if (wait_mounted(&b->d[fs]))
			return -1;
	b->rss_idle_kb = proc_status_kb(b->d[LOCKFS].pid, "VmRSS");
	if (uname(&un) == 0)
		fprintf(stderr, "lockbench: both mounted under %s (kernel %s)\n", b->work,
		        un.release);
	if (!b->o.shared)
		return 0;
	/* After lockfs mounted: it creates what it needs on the server (the
	 * LDAP base).  The stand-in takes noopfs options, so then the raw
	 * client reads only the configuration file. */
	b->raw = raw_open(b->o.backend, b->o.lockfs_config, b->o.stand_in ? NULL : b->o.lockfs_opts,
	                  g_err, sizeof(g_err));
	if (!b->raw) {
		char why[sizeof(g_err)];

		memcpy(why, g_err, sizeof(why));
		set_err("raw %s client: %s", b->o.backend, why);
		return -1;
	}
	fprintf(stderr, "lockbench: raw cycle: %s\n", raw_describe(b->raw));
	return 0;
}

/* Warm-up: thread pools, page cache, allocator, connections; not measured.
 * -1 when interrupted. */
static int warm_up(struct bench *b)
{
	for (int c = 0; c < NCYC; c++) {
		long n = b->o.iterations / 10 ? b->o.iterations / 10 : 1;
		double us;

		for (int j = 0; j < b->np && !b->cr[c].failed; j++)
			if (time_part(b->parts[j], c, b->d, b->raw, n, &us))
				mark_failed(&b->cr[c], part_label[b->parts[j]]);
		if (g_stop)
			return -1;
	}
	return 0;
}

/* Round R of cycle C: a round is cut into slices that alternate between
 * the participants (ABBA), so a burst of load lasting a second or two lands
 * on all of them instead of on one whole run.  -1 when interrupted. */
static int run_slices(struct bench *b, int r, int c)
{
	const struct options *o = &b->o;
	struct cycle_result *cr = &b->cr[c];
	double total[NPART] = { 0 }, cpu[NPART] = { 0 };

	for (int s = 0; s < o->slices && !cr->failed; s++) {
		long n = o->iterations / o->slices + (s < o->iterations % o->slices);

		for (int j = 0; j < b->np && !cr->failed; j++) {
			int p = b->parts[(r + s) % 2 ? b->np - 1 - j : j];
			pid_t pid = p == RAW ? 0 : b->d[p == BASE ? NFS : p].pid;
			double us, c0 = proc_cpu_us(pid);

			if (time_part(p, c, b->d, b->raw, n, &us))
				mark_failed(cr, part_label[p]);
			total[p] += us * n;
			if (pid > 0)
				cpu[p] += proc_cpu_us(pid) - c0;
		}
		if (g_stop)
			return -1;
	}
	for (int j = 0; j < b->np; j++) {
		cr->us[b->parts[j]][r] = total[b->parts[j]] / o->iterations;
		cr->cpu_us[b->parts[j]][r] = cpu[b->parts[j]] / o->iterations;
	}
	return 0;
}

/* The line on stderr after round R. */
static void say_round(const struct bench *b, int r)
{
	fprintf(stderr, "lockbench: round %d/%ld:", r + 1, b->o.rounds);
	for (int c = 0; c < NCYC; c++) {
		const struct cycle_result *cr = &b->cr[c];

		if (cr->failed)
			continue;
		fprintf(stderr, " %s floor %.1f", cycle_key[c], cr->us[FLOOR][r]);
		if (b->o.shared)
			fprintf(stderr, " raw %.1f", cr->us[RAW][r]);
		if (b->o.baseline)
			fprintf(stderr, " baseline %.1f", cr->us[BASE][r]);
		fprintf(stderr, " lockfs %.1f µs;", cr->us[LOCKFS][r]);
	}
	fprintf(stderr, " %s %.1f µs\n", b->ref_fs, b->ref_us[r]);
}

/* Every round: floor first in even rounds, lockfs first in odd ones, so
 * neither always runs in the other's wake.  -1 when interrupted or the
 * reference cycle failed. */
static int run_rounds(struct bench *b)
{
	for (int r = 0; r < b->o.rounds; r++) {
		for (int c = 0; c < NCYC; c++)
			if (run_slices(b, r, c))
				return -1;
		if (time_cycle(CYC_EXCL, b->ref_dir, b->o.iterations, &b->ref_us[r]))
			return -1;
		say_round(b, r);
	}
	return 0;
}

/* The medians of each cycle and lockfs's ratio, with its range over the
 * rounds; a failed cycle marks the run failed. */
static void compute_ratios(struct bench *b)
{
	const struct options *o = &b->o;

	for (int c = 0; c < NCYC; c++) {
		struct cycle_result *cr = &b->cr[c];
		double *ratios = calloc(o->rounds, sizeof(double));

		if (!ratios)
			abort();
		if (cr->failed) {
			b->any_failed = true;
			free(ratios);
			continue;
		}
		for (int j = 0; j < b->np; j++)
			cr->med[b->parts[j]] = median(cr->us[b->parts[j]], o->rounds);
		/* Against the floor, plus the raw cycle on a shared backend:
		 * lockfs cannot do less than both. */
		cr->ratio = cr->med[LOCKFS] / (cr->med[FLOOR] + (o->shared ? cr->med[RAW] : 0));
		for (int r = 0; r < o->rounds; r++)
			ratios[r] = cr->us[LOCKFS][r] /
			            (cr->us[FLOOR][r] + (o->shared ? cr->us[RAW][r] : 0));
		qsort(ratios, o->rounds, sizeof(double), cmp_double);
		cr->ratio_lo = ratios[0];
		cr->ratio_hi = ratios[o->rounds - 1];
		free(ratios);
	}
}

/* Say what failed, close, unmount and clean up: the exit code. */
static int finish(struct bench *b, int status)
{
	fflush(stdout);
	if (status && g_err[0] && !b->any_failed)
		fprintf(stderr, "lockbench: %s\n", g_err);
	if (g_stop)
		status = 130;
	raw_close(b->raw);
	for (int fs = 0; fs < ndaemons(b); fs++)
		unlink_all(&b->d[fs]);
	for (int fs = 0; fs < ndaemons(b); fs++)
		stop_daemon(&b->d[fs]);
	for (int fs = 0; fs < ndaemons(b); fs++) {
		if (b->d[fs].spawned && is_mounted(&b->d[fs])) {
			fprintf(stderr, "lockbench: %s still mounted; leaving %s in place\n",
			        b->d[fs].mnt, b->work);
			return status ? status : 1;
		}
	}
	remove_tree(b->work);
	return status;
}

/* Measure (steps above), report, clean up.  The bench lives in static
 * storage: its results are large. */
int main(int argc, char **argv)
{
	static struct bench b = {
		.d = { { .label = "floor" }, { .label = "lockfs" }, { .label = "baseline" } },
		.ref_fs = "?",
		.rss_idle_kb = -1,
	};
	int status = 1, rc;

	parse_options(argc, argv, &b.o);
	if (gethostname(g_host, sizeof(g_host) - 1) != 0)
		strcpy(g_host, "localhost");
	if ((rc = check_setup(&b)))
		return rc;
	catch_signals();
	if ((rc = floor_options(&b)) || (rc = alloc_results(&b)) || (rc = make_work(&b)))
		return rc;
	if (prepare(&b) || mount_all(&b) || warm_up(&b) || run_rounds(&b))
		return finish(&b, status);
	compute_ratios(&b);
	if (b.o.locks > 0) {
		run_big(b.d, b.o.locks, &b.big);
		if (g_stop)
			return finish(&b, status);
		b.any_failed |= b.big.failed;
	}
	report(&b.o, b.d, b.raw, b.cr, b.ref_us, b.tmpdir, b.ref_fs, b.rss_idle_kb, &b.big);
	status = b.any_failed ? 1 : 0;
	return finish(&b, status);
}
