/* See fault_proxy.h. */
#include "fault_proxy.h"

#include <glib.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static GPid proxy_pid;
static char *proxy_sock;

void fault_proxy_ctl(const char *cmd, const char *arg)
{
	const char *argv[] = { "python3", PROXY_PY, "ctl", proxy_sock, cmd, arg, NULL };
	int status = -1;
	g_autofree char *out = NULL, *err = NULL;
	g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL, G_SPAWN_SEARCH_PATH, NULL, NULL, &out,
	                           &err, &status, NULL));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		g_error("proxy.py ctl %s: %s%s", cmd, out ? out : "", err ? err : "");
}

int fault_proxy_start(const char *upstream, const char *dir)
{
	g_autofree char *port_file = g_build_filename(dir, "proxy.port", NULL);
	g_free(proxy_sock);
	proxy_sock = g_build_filename(dir, "proxy.sock", NULL);
	g_autofree char *self = g_strdup_printf("%d", (int)getpid());
	const char *argv[] = { "python3",   PROXY_PY,     "serve",       "--upstream", upstream,
		               "--control", proxy_sock,   "--port-file", port_file,    "--watch",
		               self,        "--deadline", "300",         NULL };
	GError *e = NULL;
	g_assert_true(g_spawn_async(NULL, (char **)argv, NULL,
	                            G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
	                            &proxy_pid, &e));
	g_assert_no_error(e);
	g_autofree char *port = NULL;
	for (int i = 0; i < 100 && !g_file_get_contents(port_file, &port, NULL, NULL); i++)
		g_usleep(50 * 1000);
	g_assert_nonnull(port);
	return atoi(port);
}

void fault_proxy_stop(void)
{
	fault_proxy_ctl("quit", NULL);
	waitpid(proxy_pid, NULL, 0);
	g_spawn_close_pid(proxy_pid);
}
