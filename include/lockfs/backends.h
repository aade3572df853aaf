/* The backends built into lockfs, chosen by name from the table of
 * lockfs_backend_type in src/common/backend.c. */
#ifndef LOCKFS_BACKENDS_H
#define LOCKFS_BACKENDS_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>

G_BEGIN_DECLS

/* The backend the configuration names (backend=). */
lockfs_backend *lockfs_backend_new(const lockfs_config *cfg, const char *mount_id, GError **error);

/* An instance of type T (as lockfs_backend_new makes it): NULL with a
 * one-line error when the constructor fails or made an instance of another
 * LOCKFS_BACKEND_VERSION (which is then destroyed). */
lockfs_backend *lockfs_backend_new_of_type(const lockfs_backend_type *t, const lockfs_config *cfg,
                                           const char *mount_id, GError **error);

/* The type named NAME, or NULL when it is not built in (or was built for
 * another LOCKFS_BACKEND_TYPE_VERSION: a critical warning says so). */
const lockfs_backend_type *lockfs_backend_type_find(const char *name);

/* The names of the backends built in, for messages: "local, ldap or
 * tinystore".  Free it. */
char *lockfs_backend_names(void);

/* Register every backend's configuration group; call before loading a file. */
void lockfs_backends_register_config(void);

G_END_DECLS
#endif
