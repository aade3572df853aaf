/* metrics_file= (lockfs.conf(5)): what .lockfs/metrics shows, written to a
 * file that node_exporter's textfile collector reads, with no job copying
 * it out of the mount.
 *
 * The file is replaced whole (a temporary file beside it, renamed over it)
 * at start, every renew interval and once more at a clean exit.  A write
 * that fails is one warning until one works again; it never stops lockfs
 * and touches no lock.  One mount per process, as metrics.c counts. */
#ifndef LOCKFS_METRICS_FILE_H
#define LOCKFS_METRICS_FILE_H

#include "fs.h"

#include <stdint.h>

/* Write PATH now, then every INTERVAL_MS on a thread of its own. */
void metrics_file_start(lfs *fs, const char *path, int64_t interval_ms);

/* The thread ends and PATH is written a last time (nothing when not
 * started).  Before lfs_free. */
void metrics_file_stop(void);

#endif
