/* Mount option lists: libfuse's own splitter, see lockfs/options.h.
 *
 * libfuse has no call that only splits a list, so this hands it an argument
 * vector "-o TEXT" and collects what its parser reports.  No template
 * matches an item (every template here is empty), so each item reaches
 * collect() as it is. */
#include "lockfs/options.h"

#include <fuse_opt.h>
#include <stdlib.h>

static int collect(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	GPtrArray *out = data;
	(void)outargs;
	if (key == FUSE_OPT_KEY_OPT && *arg)
		g_ptr_array_add(out, g_strdup(arg));
	return 0;
}

void lockfs_options_split(const char *text, GPtrArray *out)
{
	static const struct fuse_opt none[] = { FUSE_OPT_END };
	char *argv[] = { "lockfs", "-o", (char *)text, NULL };
	struct fuse_args args = FUSE_ARGS_INIT(3, argv);
	/* It fails only when malloc() does: GLib's rule for that is to abort. */
	if (fuse_opt_parse(&args, out, none, collect) != 0)
		g_error("out of memory splitting mount options");
	fuse_opt_free_args(&args);
}

void lockfs_options_append(GString *to, const char *item)
{
	char *esc = NULL;
	if (fuse_opt_add_opt_escaped(&esc, item) != 0)
		g_error("out of memory escaping a mount option");
	if (to->len)
		g_string_append_c(to, ',');
	g_string_append(to, esc);
	free(esc);
}
