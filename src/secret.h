/* Secrets kept in files (a bind password, an etcd user's password): the
 * checks every backend makes before believing one. */
#ifndef LOCKFS_SECRET_H
#define LOCKFS_SECRET_H

/* The first line of PATH (without its line end), which must be a regular
 * file no group or other can read, and not empty.  NULL on failure, with
 * *CODE a LOCKFS_CONFIG_ERROR_* code and *WHY (to free) what is wrong and
 * what to do, for the caller to prefix with the key that named PATH. */
char *lockfs_secret_read(const char *path, int *code, char **why);

#endif
