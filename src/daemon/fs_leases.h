/* fs_leases.c: renewing the leases of shared backends. */
#ifndef LOCKFS_FS_LEASES_H
#define LOCKFS_FS_LEASES_H

#include "fs.h"

void leases_start(lfs *fs);
void leases_stop(lfs *fs);

#endif
