/* lockfs's command line through libfuse's fuse_opt_parse: see cmdline.h. */
#include "cmdline.h"

#include <fuse_lowlevel.h>
#include <fuse_opt.h>
#include <lockfs/options.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *to)
{
	fprintf(to, "usage: lockfs [SOURCE] MOUNTPOINT [-f] [-d] [-s] [-o OPTION[,OPTION...]]...\n"
	            "              [--config FILE]\n"
	            "       lockfs -h | -V\n"
	            "Mounts a directory in which creating NAME.lock takes a lock.\n"
	            "  SOURCE          ignored: the first field of an fstab line, which\n"
	            "                  mount.fuse3 passes on\n"
	            "  -f              stay in the foreground, log to stderr\n"
	            "  -d              foreground with FUSE debug output (-o debug)\n"
	            "  -s              single-threaded: serve one FUSE request at a time\n"
	            "  -o OPTIONS, -oOPTIONS\n"
	            "                  comma-separated, repeatable: keys of lockfs.conf(5)\n"
	            "                  (ttl=30s, ldap_uri=...), FUSE options (allow_other,\n"
	            "                  auto_unmount, ro, fsname=NAME) and mount(8)'s (nosuid,\n"
	            "                  _netdev, noauto, x-systemd.*); \\, is a comma in a value\n"
	            "  --config FILE   read the configuration from FILE (a GLib key file)\n"
	            "  -h, --help      print this help and exit\n"
	            "  -V, --version   print lockfs's and libfuse's versions and exit\n"
	            "Exit status: 0 unmounted cleanly (or detached); 1 bad usage or\n"
	            "configuration; 2 the mount failed; 3 the backend could not be set up.\n"
	            "See lockfs(8) and lockfs.conf(5).\n");
}

enum {
	KEY_HELP,
	KEY_VERSION,
	KEY_FOREGROUND,
	KEY_DEBUG,
	KEY_SINGLE,
	KEY_CONFIG
};

/* clang-format off */
static const struct fuse_opt templates[] = {
	FUSE_OPT_KEY("-h", KEY_HELP),
	FUSE_OPT_KEY("--help", KEY_HELP),
	FUSE_OPT_KEY("-V", KEY_VERSION),
	FUSE_OPT_KEY("--version", KEY_VERSION),
	FUSE_OPT_KEY("-f", KEY_FOREGROUND),
	FUSE_OPT_KEY("-d", KEY_DEBUG),
	FUSE_OPT_KEY("-s", KEY_SINGLE),
	/* "--config FILE" and "--config=FILE" (the proc strips the '='). */
	FUSE_OPT_KEY("--config ", KEY_CONFIG),
	FUSE_OPT_END,
};
/* clang-format on */

typedef struct {
	lockfs_cmdline *cl;
	const char *positional[2];
	int npos;
	bool help, version;
	char *error; /* the first one */
} parse_state;

static void parse_error(parse_state *st, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
static void parse_error(parse_state *st, const char *fmt, ...)
{
	if (st->error)
		return;
	va_list ap;
	va_start(ap, fmt);
	st->error = g_strdup_vprintf(fmt, ap);
	va_end(ap);
}

/* Every argument ends here, and none goes to OUTARGS: lockfs builds FUSE's
 * own arguments itself.  Errors are kept, not returned, so that -h and -V
 * still answer whatever else the line holds. */
static int proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	parse_state *st = data;
	(void)outargs;
	switch (key) {
	case KEY_HELP:
		st->help = true;
		break;
	case KEY_VERSION:
		st->version = true;
		break;
	case KEY_FOREGROUND:
		st->cl->foreground = true;
		break;
	case KEY_DEBUG:
		st->cl->debug = st->cl->foreground = true;
		break;
	case KEY_SINGLE:
		st->cl->single_thread = true;
		break;
	case KEY_CONFIG: {
		/* "--config=FILE", or "--config" and FILE joined by libfuse. */
		const char *v = arg + strlen("--config");
		if (*v == '=')
			v++;
		if (!*v)
			parse_error(st, "--config needs a file; see lockfs --help");
		g_free(st->cl->config_file);
		st->cl->config_file = g_strdup(v);
		break;
	}
	case FUSE_OPT_KEY_NONOPT:
		if (st->npos < 2)
			st->positional[st->npos++] = arg;
		else
			parse_error(st,
			            "too many arguments ('%s'); give [SOURCE] MOUNTPOINT, see "
			            "lockfs --help",
			            arg);
		break;
	case FUSE_OPT_KEY_OPT:
		/* An -o item, or a command-line argument no template matched
		 * (which starts with '-'; an -o item normally does not). */
		if (arg[0] == '-')
			parse_error(st, "unknown option '%s'; see lockfs --help", arg);
		else if (*arg)
			g_ptr_array_add(st->cl->options, g_strdup(arg));
		break;
	}
	return 0;
}

lockfs_cmdline_result lockfs_cmdline_parse(int argc, char **argv, lockfs_cmdline *cl)
{
	memset(cl, 0, sizeof(*cl));
	cl->options = g_ptr_array_new_with_free_func(g_free);

	/* libfuse's own words for a missing value ("fuse: missing argument
	 * after `-o'"), said as lockfs says errors.  Only the last argument
	 * can lack one. */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--config")) {
			if (i + 1 == argc) {
				fprintf(stderr, "lockfs: %s needs a value; see lockfs --help\n",
				        argv[i]);
				return LOCKFS_CMDLINE_USAGE;
			}
			i++;
		}
	}

	parse_state st = { .cl = cl };
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	int r = fuse_opt_parse(&args, &st, templates, proc);
	fuse_opt_free_args(&args);
	if (r != 0)
		parse_error(&st, "cannot parse the command line (out of memory?)");

	lockfs_cmdline_result res = LOCKFS_CMDLINE_RUN;
	if (st.help) {
		usage(stdout);
		res = LOCKFS_CMDLINE_DONE;
	} else if (st.version) {
		/* fuse_lowlevel_version() prints the kernel interface's version
		 * and runs "fusermount3 -V": line by line, the lines stay in
		 * order in a pipe too. */
		setvbuf(stdout, NULL, _IOLBF, 0);
		printf("lockfs %s\nFUSE library version %s\n", LOCKFS_VERSION, fuse_pkgversion());
		fuse_lowlevel_version();
		res = LOCKFS_CMDLINE_DONE;
	} else if (st.error) {
		fprintf(stderr, "lockfs: %s\n", st.error);
		res = LOCKFS_CMDLINE_USAGE;
	} else if (st.npos == 0) {
		fprintf(stderr, "lockfs: no mount point given; run lockfs MOUNTPOINT, see "
		                "lockfs --help\n");
		res = LOCKFS_CMDLINE_USAGE;
	} else {
		cl->source = st.npos == 2 ? st.positional[0] : NULL;
		cl->mountpoint = st.positional[st.npos - 1];
	}
	g_free(st.error);
	return res;
}

void lockfs_cmdline_clear(lockfs_cmdline *cl)
{
	g_clear_pointer(&cl->config_file, g_free);
	g_clear_pointer(&cl->options, g_ptr_array_unref);
}

/* Options that mount(8) and systemd read from fstab lines, not for the kernel. */
static bool fstab_only(const char *opt)
{
	/* clang-format off */
	static const char *const words[] = {"defaults", "default_permissions", "_netdev", "nofail",
	                                    "noauto", "auto", "user", "users", "nouser", "owner",
	                                    "group"};
	/* clang-format on */
	for (size_t i = 0; i < G_N_ELEMENTS(words); i++)
		if (strcmp(opt, words[i]) == 0)
			return true;
	return g_str_has_prefix(opt, "x-") || g_str_has_prefix(opt, "comment=");
}

bool lockfs_cmdline_apply(const lockfs_cmdline *cl, lockfs_config *cfg, GString *fuse_opts,
                          GError **error)
{
	for (guint i = 0; i < cl->options->len; i++) {
		const char *o = cl->options->pdata[i];
		bool for_fuse = false;
		if (!lockfs_config_set_option(cfg, o, &for_fuse, error))
			return false;
		if (for_fuse && !fstab_only(o))
			lockfs_options_append(fuse_opts, o);
	}
	bool ignored;
	if (cl->foreground && !lockfs_config_set_option(cfg, "foreground", &ignored, error))
		return false;
	return true;
}
