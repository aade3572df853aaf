/* Secrets kept in files (a bind password, an etcd user's password): the
 * checks every backend makes before believing one. */
#ifndef LOCKFS_SECRET_H
#define LOCKFS_SECRET_H

#include <glib.h>
#include <lockfs/config.h>

/* The first line of PATH (without its line end), which must be a regular
 * file no group or other can read, and not empty; to free.  NULL with a
 * configuration error naming GROUP/KEY, the key that named PATH. */
char *lockfs_secret_read(const lockfs_config *cfg, const char *group, const char *key,
                         const char *path, GError **error);

#endif
