#include "fence_store.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAGIC "lockfs-fence-state 1\n"

struct lockfs_fence_store {
	char *path;
	int lock_fd;       /* flock'd: one process per state file */
	uint64_t next;     /* next fence to hand out */
	uint64_t reserved; /* durable: every fence <= reserved may be in use */
	uint64_t block;
};

/* Write "reserved" to a temp file, fsync it, rename it over the state file and
 * fsync the directory: a crash leaves the old or the new file, never half. */
static int save(lockfs_fence_store *fs, uint64_t reserved, GError **error)
{
	g_autofree char *tmp = g_strdup_printf("%s.tmp", fs->path);
	g_autofree char *dir = g_path_get_dirname(fs->path);
	char buf[64];
	int len = snprintf(buf, sizeof(buf), MAGIC "reserved %" PRIu64 "\n", reserved);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	int err = 0;
	if (fd < 0) {
		err = errno;
		goto fail;
	}
	if (write(fd, buf, len) != len) {
		err = errno ? errno : ENOSPC;
		close(fd);
		goto fail_unlink;
	}
	if (fsync(fd) != 0 || close(fd) != 0) {
		err = errno;
		goto fail_unlink;
	}
	if (rename(tmp, fs->path) != 0) {
		err = errno;
		goto fail_unlink;
	}
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	fs->reserved = reserved;
	return 0;
fail_unlink:
	unlink(tmp);
fail:
	g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(err),
	            "cannot save the fence counter to %s: %s; free space or fix permissions there",
	            fs->path, g_strerror(err));
	return -EIO;
}

bool lockfs_fence_state_parse(const char *text, uint64_t *reserved)
{
	if (strncmp(text, MAGIC, strlen(MAGIC)) != 0)
		return false;
	const char *p = text + strlen(MAGIC);
	if (strncmp(p, "reserved ", 9) != 0)
		return false;
	p += 9;
	/* Digits only: strtoull alone would take a sign or leading spaces. */
	if (!g_ascii_isdigit(*p))
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (errno || (*end != '\n' && *end != '\0'))
		return false;
	*reserved = v;
	return true;
}

lockfs_fence_store *lockfs_fence_store_open(const char *path, uint64_t block, GError **error)
{
	g_autofree char *dir = g_path_get_dirname(path);
	g_autofree char *lockpath = g_strdup_printf("%s.lock-owner", path);
	g_autofree char *text = NULL;
	g_autoptr(GError) rerr = NULL;
	uint64_t reserved = 0;
	lockfs_fence_store *fs = g_new0(lockfs_fence_store, 1);
	fs->path = g_strdup(path);
	fs->block = block ? block : 1;
	fs->lock_fd = -1;

	if (g_mkdir_with_parents(dir, 0700) != 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
		            "cannot create state directory %s: %s; set state_dir to a writable "
		            "directory",
		            dir, g_strerror(errno));
		goto fail;
	}
	fs->lock_fd = open(lockpath, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fs->lock_fd < 0) {
		g_set_error(error, G_FILE_ERROR, g_file_error_from_errno(errno),
		            "cannot open %s: %s; set state_dir to a writable directory", lockpath,
		            g_strerror(errno));
		goto fail;
	}
	if (flock(fs->lock_fd, LOCK_EX | LOCK_NB) != 0) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_EXIST,
		            "%s is in use by another lockfs; give each mount its own state_dir",
		            path);
		goto fail;
	}

	if (g_file_get_contents(path, &text, NULL, &rerr)) {
		if (!lockfs_fence_state_parse(text, &reserved)) {
			g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
			            "%s is not a lockfs fence state file; restore it from backup "
			            "(deleting it would let fences repeat)",
			            path);
			goto fail;
		}
	} else if (!g_error_matches(rerr, G_FILE_ERROR, G_FILE_ERROR_NOENT)) {
		g_set_error(error, G_FILE_ERROR, rerr->code, "cannot read %s: %s", path,
		            rerr->message);
		goto fail;
	}
	if (reserved > UINT64_MAX - 2 * fs->block) {
		g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_INVAL,
		            "%s: the fence counter is exhausted", path);
		goto fail;
	}
	fs->next = reserved + 1;
	if (save(fs, reserved + fs->block, error) != 0)
		goto fail;
	return fs;
fail:
	lockfs_fence_store_close(fs);
	return NULL;
}

int lockfs_fence_store_next(lockfs_fence_store *fs, uint64_t *out)
{
	if (fs->next > fs->reserved) {
		g_autoptr(GError) err = NULL;
		if (fs->reserved > UINT64_MAX - fs->block ||
		    save(fs, fs->reserved + fs->block, &err)) {
			lockfs_log(G_LOG_LEVEL_CRITICAL, NULL, "%s",
			           err ? err->message : "the fence counter is exhausted");
			return -EIO;
		}
	}
	*out = fs->next++;
	return 0;
}

void lockfs_fence_store_close(lockfs_fence_store *fs)
{
	if (!fs)
		return;
	if (fs->lock_fd >= 0)
		close(fs->lock_fd);
	g_free(fs->path);
	g_free(fs);
}

char *lockfs_local_state_name(const char *mount_id)
{
	GString *s = g_string_new("local");
	for (const unsigned char *p = (const unsigned char *)mount_id; *p; p++) {
		if (g_ascii_isalnum(*p) || *p == '.' || *p == '_' || *p == '-')
			g_string_append_c(s, *p);
		else
			g_string_append_printf(s, "%%%02X", *p);
	}
	g_string_append(s, ".fence");
	return g_string_free(s, FALSE);
}
