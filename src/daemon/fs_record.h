/* fs_record.c: the record of this mount's locks in state_dir, for a restart. */
#ifndef LOCKFS_FS_RECORD_H
#define LOCKFS_FS_RECORD_H

#include "fs.h"

/* Record D's grant or its new state (fs->mu held): 0 or a negative errno. */
int record_lock(lfs *fs, lfs_dentry *d);
/* D leaves the namespace (fs->mu held). */
void record_forget(lfs *fs, lfs_dentry *d);
/* After a grant, without fs->mu: LEASE's token and (*SESSION) the
 * backend's session token, both g_free'd, NULL when there is none. */
char *record_token(lfs *fs, lockfs_lease *lease, char **session);
/* Record SESSION (owned) if it is new (fs->mu held). */
void record_session(lfs *fs, char *session);
/* Rewrite the record whole, from what is held now (fs->mu held). */
void record_rewrite(lfs *fs);
void record_start_anew(lfs *fs);
void record_session_resumed(lfs *fs, const char *session);
/* STATE is the record of this mount (set once, before the mount). */
void record_attach(lfs *fs, struct lockfs_lockstate *state);
const char *record_file(lfs *fs);

#endif
