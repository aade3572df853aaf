/* setlkw.c — a C client of fcntl(2) record locks for 41-posix-locks.t.
 *
 *     setlkw posix|ofd FILE LOG PROCS THREADS N
 *
 * Forks PROCS processes of THREADS threads each; every thread takes a write
 * lock of the whole of FILE N times with a blocking call, logs "S ..." and
 * "E ..." lines around a short critical section (one write(2) each to LOG,
 * O_APPEND: a linear history), and unlocks.
 *   posix  F_SETLKW on one descriptor per process.  The lock is the
 *          process's, shared by its threads (POSIX), so the threads of one
 *          process take turns by a mutex and the lock excludes processes.
 *   ofd    F_OFD_SETLKW on a descriptor per thread: each open file
 *          description is its own owner, so the lock excludes every thread.
 * Exit 0 when every call worked; a failed call is printed and counted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *mode, *file;
static int logfd, n_sections, proc_fd = -1;
static pthread_mutex_t turn = PTHREAD_MUTEX_INITIALIZER;
static int failures;

static void note(const char *what, int i)
{
	char line[128];
	int len = snprintf(line, sizeof(line), "%s %d %ld %d\n", what, (int)getpid(),
	                   (long)syscall(SYS_gettid), i);
	if (write(logfd, line, (size_t)len) != len)
		__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
}

static int lock(int fd, int cmd, short type)
{
	struct flock fl;
	memset(&fl, 0, sizeof(fl)); /* l_pid 0, as F_OFD_* require */
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	int r;
	do
		r = fcntl(fd, cmd, &fl);
	while (r < 0 && errno == EINTR);
	return r;
}

static void *worker(void *arg)
{
	(void)arg;
	bool ofd = strcmp(mode, "ofd") == 0;
	int fd = ofd ? open(file, O_RDWR) : proc_fd;
	if (fd < 0) {
		perror("open");
		__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
		return NULL;
	}
	struct timespec work = { 0, 2 * 1000 * 1000 };
	for (int i = 0; i < n_sections; i++) {
		if (!ofd)
			pthread_mutex_lock(&turn);
		if (lock(fd, ofd ? F_OFD_SETLKW : F_SETLKW, F_WRLCK) < 0) {
			perror("lock");
			__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
		} else {
			note("S", i);
			nanosleep(&work, NULL);
			note("E", i);
			if (lock(fd, ofd ? F_OFD_SETLK : F_SETLK, F_UNLCK) < 0) {
				perror("unlock");
				__atomic_add_fetch(&failures, 1, __ATOMIC_SEQ_CST);
			}
		}
		if (!ofd)
			pthread_mutex_unlock(&turn);
	}
	if (ofd)
		close(fd);
	return NULL;
}

static int process(int threads)
{
	if (strcmp(mode, "posix") == 0 && (proc_fd = open(file, O_RDWR)) < 0) {
		perror("open");
		return 1;
	}
	pthread_t t[64];
	for (int i = 0; i < threads; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	return failures ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 7 || (strcmp(argv[1], "posix") && strcmp(argv[1], "ofd"))) {
		fprintf(stderr, "usage: setlkw posix|ofd FILE LOG PROCS THREADS N\n");
		return 2;
	}
	mode = argv[1];
	file = argv[2];
	int procs = atoi(argv[4]), threads = atoi(argv[5]);
	n_sections = atoi(argv[6]);
	if (procs < 1 || threads < 1 || threads > 64 || n_sections < 1) {
		fprintf(stderr, "setlkw: PROCS >= 1, 1 <= THREADS <= 64, N >= 1\n");
		return 2;
	}
	if ((logfd = open(argv[3], O_WRONLY | O_APPEND | O_CREAT, 0644)) < 0) {
		perror(argv[3]);
		return 2;
	}
	pid_t pids[64];
	int started = 0;
	for (int p = 0; p < procs && p < 64; p++) {
		pids[p] = fork();
		if (pids[p] == 0)
			_exit(process(threads));
		if (pids[p] > 0)
			started++;
	}
	int bad = started < procs;
	for (int p = 0; p < started; p++) {
		int st;
		if (waitpid(pids[p], &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			bad++;
	}
	return bad ? 1 : 0;
}
