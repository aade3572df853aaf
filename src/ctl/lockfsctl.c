/* lockfsctl: inspect, check, break, release and hold lockfs locks.  See lockfsctl(1). */
#include "ctl.h"

#include <locale.h>
#include <stdio.h>
#include <string.h>

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *synopsis;
} commands[] = {
	{ "status", ctl_status, "status [--json] [MOUNT...]" },
	{ "check", ctl_check, "check [--config FILE] [-o OPTIONS] [MOUNT...]" },
	{ "unlock", ctl_unlock, "unlock [--yes] PATH" },
	{ "release", ctl_release, "release --all [--yes] [--config FILE] [-o OPTIONS] MOUNT" },
	{ "hold", ctl_hold,
	  "hold [-n] [-w SECS] [-E N] [--verbose] [--ttl D] [--max-hold D] PATH\n"
	  "        ([--] CMD [ARG...] | -c 'SHELL COMMAND')" },
};

static void usage(FILE *to)
{
	fprintf(to, "usage:\n");
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++)
		fprintf(to, "  lockfsctl %s\n", commands[i].synopsis);
	fprintf(to, "  lockfsctl COMMAND --help\n"
	            "Durations are like 500ms, 30s, 5m, 1h.  See lockfsctl(1).\n");
}

int main(int argc, char **argv)
{
	setlocale(LC_ALL, "");
	if (argc < 2)
		return ctl_usage_error("give a command: status, check, unlock, release or hold");
	const char *cmd = argv[1];
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help")) {
		usage(stdout);
		return CTL_EXIT_OK;
	}
	if (!strcmp(cmd, "--version")) {
		printf("lockfsctl %s\n", LOCKFS_VERSION);
		return CTL_EXIT_OK;
	}
	for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
		if (strcmp(cmd, commands[i].name) != 0)
			continue;
		ctl_prog = g_strconcat("lockfsctl ", cmd, NULL);
		return commands[i].run(argc - 1, argv + 1);
	}
	return ctl_usage_error("unknown command '%s'; the commands are status, check, unlock, "
	                       "release and hold",
	                       cmd);
}
