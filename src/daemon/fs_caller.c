/* Who asks: the process behind a FUSE request, and what the kernel's
 * permission checks would let its credentials do to a node of the model,
 * for the checks lockfs makes itself (a create that finds the name taken,
 * a break request). */
#include "fs_caller.h"
#include "fs_nodes.h"
#include "fs_rules.h"
#include "holder.h"

struct lfs_caller caller_of(fuse_req_t req)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	struct lfs_caller c = { .uid = ctx->uid, .gid = ctx->gid };
	c.pid = lockfs_tgid_ppid(ctx->pid, &c.ppid);
	return c;
}

/* The rwx bits of ST that apply to the caller of REQ (not root). */
static mode_t access_bits(fuse_req_t req, const struct stat *st)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (ctx->uid == st->st_uid)
		return (st->st_mode >> 6) & 07;
	gid_t groups[64];
	int n = fuse_req_getgroups(req, G_N_ELEMENTS(groups), groups);
	bool member = ctx->gid == st->st_gid;
	for (int i = 0; i < n && i < (int)G_N_ELEMENTS(groups) && !member; i++)
		member = groups[i] == st->st_gid;
	return member ? (st->st_mode >> 3) & 07 : st->st_mode & 07;
}

/* Whether the caller could unlink a name of DIR owned by OWNER: what the
 * kernel checks for unlink(2), done here for a break request. */
bool caller_may_delete(lfs *fs, fuse_req_t req, lfs_node *dir, uid_t owner)
{
	const struct fuse_ctx *ctx = fuse_req_ctx(req);
	if (ctx->uid == 0)
		return true;
	struct stat st;
	if (!dir || node_getattr(fs, dir, &st) != 0)
		return false;
	return rules_may_delete(ctx->uid, access_bits(req, &st), st.st_mode, st.st_uid, owner);
}

/* Whether the caller could open N for writing: what the kernel checks at
 * open(2), done here when a create finds the name taken (lfs_create). */
bool caller_may_write(lfs *fs, fuse_req_t req, lfs_node *n)
{
	struct stat st;
	if (node_getattr(fs, n, &st) != 0)
		return false;
	return fuse_req_ctx(req)->uid == 0 || (access_bits(req, &st) & 02);
}
