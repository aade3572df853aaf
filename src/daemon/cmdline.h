/* lockfs's command line, parsed as every libfuse program parses its own
 * (fuse_opt_parse):
 *   lockfs [SOURCE] MOUNTPOINT [-f] [-d] [-s] [-o OPTIONS]... [--config FILE]
 *   lockfs -h | -V
 * "-o OPTIONS" and "-oOPTIONS", repeatable, split as lockfs/options.h says.
 * SOURCE is the first word of an fstab line: mount.fuse3 runs
 * "lockfs SOURCE MOUNTPOINT -o OPTIONS". */
#ifndef LOCKFS_CMDLINE_H
#define LOCKFS_CMDLINE_H

#include <glib.h>
#include <lockfs/config.h>
#include <stdbool.h>

typedef struct {
	const char *source;     /* NULL, or mount(8)'s SOURCE (unused) */
	const char *mountpoint; /* as given */
	char *config_file;      /* --config, or NULL */
	GPtrArray *options;     /* the -o items, in order */
	bool foreground;        /* -f */
	bool debug;             /* -d */
	bool single_thread;     /* -s: fuse_session_loop, not _mt */
} lockfs_cmdline;

typedef enum {
	LOCKFS_CMDLINE_RUN,   /* mount */
	LOCKFS_CMDLINE_DONE,  /* -h or -V answered on stdout: exit 0 */
	LOCKFS_CMDLINE_USAGE, /* a one-line error is on stderr: exit with the usage status */
} lockfs_cmdline_result;

/* Parse ARGV into CL (cleared first; free it with lockfs_cmdline_clear()). */
lockfs_cmdline_result lockfs_cmdline_parse(int argc, char **argv, lockfs_cmdline *cl);
void lockfs_cmdline_clear(lockfs_cmdline *cl);

/* Give the -o items (and -f) to CFG, and append to FUSE_OPTS, escaped, those
 * that FUSE takes (mount(8)'s and systemd's own words are dropped).  The
 * error names the option. */
bool lockfs_cmdline_apply(const lockfs_cmdline *cl, lockfs_config *cfg, GString *fuse_opts,
                          GError **error);

#endif
