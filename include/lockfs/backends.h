/* One constructor per backend.  Each reads its keys from the configuration
 * (its own group, e.g. [ldap]) and fails with a one-line error naming the key
 * and what to do. */
#ifndef LOCKFS_BACKENDS_H
#define LOCKFS_BACKENDS_H

#include <glib.h>
#include <lockfs/backend.h>
#include <lockfs/config.h>

G_BEGIN_DECLS

/* MOUNT_ID names the mount's durable state (e.g. the mount point). */
lockfs_backend *lockfs_local_backend_new(const lockfs_config *cfg, const char *mount_id,
                                         GError **error);

/* Locks as tinystore leases, shared with every host reaching the same server
 * (group [tinystore]: dir or endpoint, token_file, ca_file, verify,
 * lock_name).  MOUNT_ID is recorded in the holder records. */
lockfs_backend *lockfs_tinystore_backend_new(const lockfs_config *cfg, const char *mount_id,
                                             GError **error);

/* Locks as entries under a base in an LDAP directory, shared with every host
 * binding to the same server (group [ldap]: uri, bind_dn, password_file,
 * sasl_mech, starttls, ca_file, verify, base, dynamic). */
lockfs_backend *lockfs_ldap_backend_new(const lockfs_config *cfg, const char *mount_id,
                                        GError **error);

/* The backend the configuration names. */
lockfs_backend *lockfs_backend_new(const lockfs_config *cfg, const char *mount_id,
                                   GError **error);

/* Register every backend's configuration group; call before loading a file. */
void lockfs_backends_register_config(void);

G_END_DECLS
#endif
