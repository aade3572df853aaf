/* fs_control.c: .lockfs/: the inspection view's files. */
#ifndef LOCKFS_FS_CONTROL_H
#define LOCKFS_FS_CONTROL_H

#include "fs.h"

int control_lookup(lfs *fs, lfs_node *dir, const char *name, lfs_node **out);
/* The content of control file N; *ERR -EIO (and empty content) when the
 * backend could not say what it shows. */
char *control_render(lfs *fs, lfs_node *n, size_t *len, int *err);
/* .lockfs/metrics: the counters, and the gauges read from the model now
 * (fs->mu held), appended to OUT. */
void control_metrics(lfs *fs, GString *out);
int control_readdir_names(lfs *fs, lfs_node *dir, GPtrArray *names, GArray *types);

#endif
