/* fs_ops.c: the FUSE operations, and the model as main.c and service.c see it. */
#ifndef LOCKFS_FS_OPS_H
#define LOCKFS_FS_OPS_H

#include "fs.h"

extern const struct fuse_lowlevel_ops lfs_ops;
lfs *lfs_new(const lockfs_settings *set, lockfs_backend *be, const char *mountpoint, int under_fd,
             bool passthrough);
/* SE is the session that serves FS (set once, before the loop starts). */
void lfs_attach_session(lfs *fs, struct fuse_session *se);
/* At exit, with every thread of the model stopped and the session destroyed:
 * frees the model and destroys the backend instance (letting go of nothing). */
void lfs_free(lfs *fs);
const char *lfs_mountpoint(const lfs *fs);
/* The backend's name, as the log and systemd's status say it. */
const char *lfs_backend_name(const lfs *fs);
/* What .lockfs/metrics shows now, to free: for metrics_file (metrics_file.c). */
char *lfs_metrics_text(lfs *fs);

#endif
