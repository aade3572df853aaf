/* user.lockfs.* extended attributes on lock files: the facts .lockfs/ shows
 * (fs_control.c), one attribute each.  Never part of a lock file's content:
 * tools read their own bytes back (legacy-clients.md §7.3). */
#include "fs_xattr.h"
#include "fs_locks.h"
#include "fs_nodes.h"
#include "fs_remote.h"
#include "holder.h"
#include "view_format.h"

#include <errno.h>
#include <string.h>

static const char *const xattr_names[] = { "fence",  "state",        "host",     "pid",
	                                   "user",   "command",      "acquired", "heartbeat",
	                                   "holder", "lease_left_ms" };

int xattr_get(lfs *fs, lfs_node *n, const char *name, GString *out)
{
	lfs_dentry *d = node_lock_dentry(fs, n);
	if ((!d || !d->lease) && !n->remote && !n->lost_info)
		return -ENODATA;
	if (!g_str_has_prefix(name, LOCKFS_XATTR_PREFIX))
		return -ENODATA;
	const char *k = name + strlen(LOCKFS_XATTR_PREFIX);
	lockfs_lock_info i;
	if (d && d->lease)
		locks_info_of(fs, d, &i);
	else
		remote_info_copy(&i, n->remote ? n->remote : n->lost_info);
	const lockfs_holder *h = &i.holder;
	int r = 0;
	if (!strcmp(k, "fence"))
		g_string_append(out, i.fence);
	else if (!strcmp(k, "state"))
		g_string_append(out, lockfs_state_name(i.state));
	else if (!strcmp(k, "host"))
		g_string_append(out, h->host ? h->host : "");
	else if (!strcmp(k, "pid"))
		g_string_append_printf(out, "%" G_GINT64_FORMAT, h->pid);
	else if (!strcmp(k, "user"))
		g_string_append(out, h->user ? h->user : "");
	else if (!strcmp(k, "command"))
		g_string_append(out, h->command ? h->command : "");
	else if (!strcmp(k, "acquired"))
		g_string_append_printf(out, "%" G_GINT64_FORMAT, h->acquired_us / G_USEC_PER_SEC);
	else if (!strcmp(k, "heartbeat"))
		g_string_append_printf(out, "%" G_GINT64_FORMAT, h->heartbeat_us / G_USEC_PER_SEC);
	else if (!strcmp(k, "lease_left_ms")) /* -1: no lease (local backend) */
		g_string_append_printf(out, "%" G_GINT64_FORMAT, i.lease_left_ms);
	else if (!strcmp(k, "holder"))
		g_string_append_printf(out, "%s:%" G_GINT64_FORMAT, h->host ? h->host : "", h->pid);
	else
		r = -ENODATA;
	lockfs_lock_info_clear(&i);
	return r;
}

void xattr_list(lfs *fs, lfs_node *n, GString *out)
{
	lfs_dentry *d = node_lock_dentry(fs, n);
	if ((!d || !d->lease) && !n->remote && !n->lost_info)
		return;
	for (size_t i = 0; i < G_N_ELEMENTS(xattr_names); i++) {
		g_string_append(out, LOCKFS_XATTR_PREFIX);
		g_string_append(out, xattr_names[i]);
		g_string_append_c(out, '\0');
	}
}
