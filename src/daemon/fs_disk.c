/* Disk nodes: the files of the directory lockfs is mounted over stay
 * reachable through the mount.  Each disk node keeps an O_PATH descriptor
 * taken before or through the mount, and operations reach the file through
 * /proc/self/fd, as libfuse's passthrough example does.  These are the
 * primitives on a node's descriptor, below the model (fs_nodes.c makes and
 * frees disk nodes, node_lookup_disk). */
#include "fs_disk.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

char *disk_proc_path(const lfs_node *n)
{
	return g_strdup_printf("/proc/self/fd/%d", n->fd);
}

int disk_getattr(lfs_node *n, struct stat *st)
{
	if (fstatat(n->fd, "", st, AT_EMPTY_PATH | AT_SYMLINK_NOFOLLOW) != 0)
		return -errno;
	return 0;
}

/* Open the disk file for I/O.  Reads never move atime (legacy tools judge
 * staleness by it), so O_NOATIME is asked for where the kernel allows it. */
int disk_open(lfs_node *n, int flags)
{
	g_autofree char *path = disk_proc_path(n);
	flags &= ~(O_CREAT | O_EXCL | O_NOFOLLOW | O_NOCTTY);
	int fd = open(path, flags | O_NOATIME | O_CLOEXEC);
	if (fd < 0 && errno == EPERM)
		fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}
