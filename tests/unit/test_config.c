/* Unit tests for src/common/config.c: durations, key files, mount options, the rules
 * between keys and the getters backends use. */
#include "lockfs/config.h"

#include <glib/gstdio.h>
#include <string.h>
#include <unistd.h>

static char *tmpdir;

/* A file under the test's directory holding TEXT; the caller frees the path. */
static char *write_file(const char *name, const char *text)
{
	char *path = g_build_filename(tmpdir, name, NULL);
	g_assert_true(g_file_set_contents(path, text, -1, NULL));
	return path;
}

/* Load TEXT and expect error CODE with the message "PATH" + REST, or only
 * starting with it when REST ends with '*'. */
static void expect_file_error(const char *text, int code, const char *rest)
{
	g_autofree char *path = write_file("bad.conf", text);
	g_autofree char *want = g_strconcat(path, rest, NULL);
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	g_assert_false(lockfs_config_load_file(cfg, path, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, code);
	if (g_str_has_suffix(want, "*")) {
		want[strlen(want) - 1] = '\0';
		g_assert_true(g_str_has_prefix(err->message, want));
	} else {
		g_assert_cmpstr(err->message, ==, want);
	}
	g_assert_null(strchr(err->message, '\n'));
	g_error_free(err);
	lockfs_config_free(cfg);
}

/* Set OPTION and expect error CODE with message WANT. */
static void expect_option_error(lockfs_config *cfg, const char *option, int code, const char *want)
{
	GError *err = NULL;
	bool for_fuse = true;
	g_assert_false(lockfs_config_set_option(cfg, option, &for_fuse, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, code);
	g_assert_cmpstr(err->message, ==, want);
	g_assert_false(for_fuse);
	g_error_free(err);
}

static void set_option(lockfs_config *cfg, const char *option)
{
	GError *err = NULL;
	bool for_fuse = true;
	g_assert_true(lockfs_config_set_option(cfg, option, &for_fuse, &err));
	g_assert_no_error(err);
	g_assert_false(for_fuse);
}

static void load(lockfs_config *cfg, const char *path)
{
	GError *err = NULL;
	g_assert_true(lockfs_config_load_file(cfg, path, &err));
	g_assert_no_error(err);
}

/* ---- durations ---- */

static void test_duration_valid(void)
{
	static const struct {
		const char *text;
		int64_t ms;
	} cases[] = {
		{ "30s", 30000 },  { "500ms", 500 },    { "5m", 300000 },
		{ "1h", 3600000 }, { "2d", 172800000 }, { "1.5s", 1500 },
		{ "0", 0 },        { "0s", 0 },         { "10", 10000 },
		{ "0.001s", 1 },   { "1.25m", 75000 },  { "0.5h", 1800000 },
		{ "007s", 7000 },  { "2.000s", 2000 },  { "9223372036854775ms", INT64_MAX / 1000 },
	};
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		int64_t ms = -1;
		g_test_message("%s", cases[i].text);
		g_assert_true(lockfs_parse_duration(cases[i].text, &ms));
		g_assert_cmpint(ms, ==, cases[i].ms);
	}
}

static void test_duration_invalid(void)
{
	/* clang-format off */
	static const char *const cases[] = {
		"", "-1s", "+1s", "abc", "1x", "1.s", ".5s", "1 s", " 1s", "1s ", "1S",
		"0.5ms", "1.0001s", "1e3", "1ss", "s", "ms", "1.5.5s", "1m30s", "0x10",
		"99999999999999999999s", "9223372036854776ms", "106751992d", "1.0000000001s",
	};
	/* clang-format on */
	for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
		int64_t ms = 42;
		g_test_message("'%s'", cases[i]);
		g_assert_false(lockfs_parse_duration(cases[i], &ms));
		g_assert_cmpint(ms, ==, 42);
	}
	int64_t ms = 42;
	g_assert_false(lockfs_parse_duration(NULL, &ms));
}

/* ---- files ---- */

static void test_defaults(void)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	g_assert_true(lockfs_config_finish(cfg, &err));
	g_assert_no_error(err);
	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_assert_cmpstr(s->backend, ==, "local");
	g_assert_cmpstr(s->suffix, ==, ".lock");
	g_assert_cmpint(s->ttl_ms, ==, 30000);
	g_assert_cmpint(s->renew_ms, ==, 10000); /* ttl/3 */
	g_assert_cmpint(s->stale_after_ms, ==, 300000);
	g_assert_cmpint(s->network_timeout_ms, ==, 10000);
	g_assert_cmpint(s->heartbeat_min_ms, ==, 2000);
	g_assert_cmpint(s->list_cache_ms, ==, 200);
	g_assert_cmpstr(s->host, ==, g_get_host_name());
	g_assert_null(s->notify);
	g_assert_null(s->log_file);
	g_assert_null(s->metrics_file);
	g_assert_cmpint(s->dir_mode, ==, 01777);
	g_assert_cmpint(s->dir_uid, ==, getuid());
	g_assert_cmpint(s->dir_gid, ==, getgid());
	g_assert_cmpint(s->passthrough, ==, LOCKFS_PASSTHROUGH_AUTO);
	g_assert_cmpint(s->allow_other, ==, geteuid() == 0);
	g_assert_false(s->foreground);
	g_assert_false(s->debug);
	g_assert_cmpstr(s->log_level, ==, "info");
	g_assert_true(s->audit);
	const char *xdg = g_getenv("XDG_STATE_HOME");
	g_autofree char *state =
	        geteuid() == 0 ? g_strdup("/var/lib/lockfs")
	        : xdg && g_path_is_absolute(xdg)
	                ? g_build_filename(xdg, "lockfs", NULL)
	                : g_build_filename(g_get_home_dir(), ".local/state/lockfs", NULL);
	g_assert_cmpstr(s->state_dir, ==, state);
	g_assert_null(lockfs_config_origin(cfg, "lockfs", "ttl"));
	lockfs_config_free(cfg);
}

/* clang-format off */
static const char good_file[] =
	"# lockfs test configuration\n"
	"\n"
	"[lockfs]\n"
	"backend = ldap\n"
	"suffix=.lck\n"
	"ttl = 1m   \n"
	"renew_interval=15s\n"
	"stale_after=0\n"
	"network_timeout=2.5s\n"
	"heartbeat_min_interval=1s\n"
	"list_cache=0\n"
	"host=node1.example.org\n"
	"state_dir=/srv/lockfs\n"
	"notify=/usr/local/bin/lock-alert --quiet\n"
	"dir_mode=0755\n"
	"dir_uid=root\n"
	"dir_gid=1234\n"
	"passthrough=yes\n"
	"allow_other=false\n"
	"foreground=true\n"
	"debug=false\n"
	"log_level=DEBUG\n"
	"  # indented comment\n"
	"[ldap]\r\n"
	"uri = ldaps://ldap.example.org\r\n"
	"base_dn=ou=locks,\\sdc=example\n";
/* clang-format on */

static void test_file_good(void)
{
	g_autofree char *path = write_file("good.conf", good_file);
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	load(cfg, path);
	g_assert_true(lockfs_config_finish(cfg, &err));
	g_assert_no_error(err);

	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_assert_cmpstr(s->backend, ==, "ldap");
	g_assert_cmpstr(s->suffix, ==, ".lck");
	g_assert_cmpint(s->ttl_ms, ==, 60000);
	g_assert_cmpint(s->renew_ms, ==, 15000);
	g_assert_cmpint(s->stale_after_ms, ==, 0);
	g_assert_cmpint(s->network_timeout_ms, ==, 2500);
	g_assert_cmpint(s->heartbeat_min_ms, ==, 1000);
	g_assert_cmpint(s->list_cache_ms, ==, 0);
	g_assert_cmpstr(s->host, ==, "node1.example.org");
	g_assert_cmpstr(s->state_dir, ==, "/srv/lockfs");
	g_assert_cmpstr(s->notify, ==, "/usr/local/bin/lock-alert --quiet");
	g_assert_cmpint(s->dir_mode, ==, 0755);
	g_assert_cmpint(s->dir_uid, ==, 0);
	g_assert_cmpint(s->dir_gid, ==, 1234);
	g_assert_cmpint(s->passthrough, ==, LOCKFS_PASSTHROUGH_YES);
	g_assert_false(s->allow_other);
	g_assert_true(s->foreground);
	g_assert_false(s->debug);
	g_assert_cmpstr(s->log_level, ==, "debug");

	g_autofree char *o_ttl = g_strdup_printf("%s:6", path);
	g_autofree char *o_uri = g_strdup_printf("%s:25", path);
	g_assert_cmpstr(lockfs_config_origin(cfg, "lockfs", "ttl"), ==, o_ttl);
	g_assert_cmpstr(lockfs_config_origin(cfg, "ldap", "uri"), ==, o_uri);
	g_assert_null(lockfs_config_origin(cfg, "ldap", "starttls"));

	char *v = NULL;
	g_assert_true(lockfs_config_get_string(cfg, "ldap", "uri", NULL, &v, &err));
	g_assert_cmpstr(v, ==, "ldaps://ldap.example.org");
	g_free(v);
	/* GKeyFile escapes work; '=' in a value is kept. */
	g_assert_true(lockfs_config_get_string(cfg, "ldap", "base_dn", NULL, &v, &err));
	g_assert_cmpstr(v, ==, "ou=locks, dc=example");
	g_free(v);
	lockfs_config_free(cfg);
}

static void test_file_unknown(void)
{
	expect_file_error("[lockfs]\nttl=30s\n\nttll=5s\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":4: key 'ttll' in [lockfs]: unknown key; did you mean 'ttl'?");
	expect_file_error("[lockfs]\nSTATE_DIR=/x\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":2: key 'STATE_DIR' in [lockfs]: unknown key; did you mean "
	                  "'state_dir'?");
	expect_file_error("[lockfs]\nfrobnicate=1\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":2: key 'frobnicate' in [lockfs]: unknown key; the keys of "
	                  "[lockfs] are backend, suffix, ttl, renew_interval, stale_after, "
	                  "network_timeout, heartbeat_min_interval, list_cache, host, "
	                  "state_dir, notify, log_file, metrics_file, dir_mode, dir_uid, dir_gid, "
	                  "passthrough, "
	                  "allow_other, foreground, debug, log_level, audit");
	/* A key in the wrong group is pointed to the right one. */
	expect_file_error("[ldap]\nttl=30s\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":2: key 'ttl' in [ldap]: unknown key; 'ttl' belongs in [lockfs]");
	expect_file_error("[lockfs]\nuri=ldap://x\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":2: key 'uri' in [lockfs]: unknown key; 'uri' belongs in [ldap]");
	expect_file_error("# c\n[lockfs]\n[nfs]\nserver=x\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":3: group [nfs]: unknown group; the groups are [lockfs], [ldap], "
	                  "[tinystore]*"); /* and what other tests registered */
	/* Localised keys are not ours either. */
	expect_file_error("[lockfs]\nhost[de]=x\n", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                  ":2: key 'host[de]' in [lockfs]: unknown key; values per locale "
	                  "are not supported; write 'host' alone");
}

static void test_file_bad_value(void)
{
	expect_file_error("# comment\n\n[lockfs]\nbackend=local\n\n# ttl:\nttl = abc\n",
	                  LOCKFS_CONFIG_ERROR_VALUE,
	                  ":7: key 'ttl' in [lockfs]: 'abc' is not a duration; write a number "
	                  "with a unit such as 500ms, 30s, 5m, 1h or 2d (a bare number is "
	                  "seconds)");
	expect_file_error("[lockfs]\nttl=500ms\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'ttl' in [lockfs]: '500ms' is shorter than 1000ms; write at "
	                  "least 1000ms");
	expect_file_error("[lockfs]\nnetwork_timeout=0\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'network_timeout' in [lockfs]: '0' is zero; write a "
	                  "positive duration");
	expect_file_error("[lockfs]\nsuffix=\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'suffix' in [lockfs]: the suffix is empty; write one such "
	                  "as .lock");
	expect_file_error("[lockfs]\nsuffix=a/b\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'suffix' in [lockfs]: 'a/b' contains '/'; a suffix ends a "
	                  "file name, write one such as .lock");
	expect_file_error("[lockfs]\nsuffix=.123456789012345678901234567890123\n",
	                  LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'suffix' in [lockfs]: '.123456789012345678901234567890123' "
	                  "is 34 bytes long; write at most 32 bytes");
	/* A newline written as an escape stays on one line in the message. */
	expect_file_error("[lockfs]\nhost=a\\nb\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'host' in [lockfs]: 'a\\x0ab' has spaces, control "
	                  "characters or invalid UTF-8; write a plain host name");
	expect_file_error("[lockfs]\nstate_dir=var/lib\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'state_dir' in [lockfs]: 'var/lib' is not an absolute path; "
	                  "write one starting with /");
	expect_file_error("[lockfs]\nlog_file=lockfs.log\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'log_file' in [lockfs]: 'lockfs.log' is not an absolute "
	                  "path; write one starting with /");
	expect_file_error("[lockfs]\nmetrics_file=lockfs.prom\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'metrics_file' in [lockfs]: 'lockfs.prom' is not an "
	                  "absolute path; write one starting with /");
	/* Only an optional path may be empty. */
	expect_file_error("[lockfs]\nstate_dir=\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'state_dir' in [lockfs]: '' is not an absolute path; "
	                  "write one starting with /");
	expect_file_error("[lockfs]\ndir_mode=1778\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'dir_mode' in [lockfs]: '1778' is not an octal mode; write "
	                  "one such as 1777 or 0755");
	expect_file_error("[lockfs]\ndir_mode=17777\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'dir_mode' in [lockfs]: '17777' is not an octal mode; write "
	                  "one such as 1777 or 0755");
	expect_file_error("[lockfs]\ndir_uid=no-such-user-lockfs\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'dir_uid' in [lockfs]: no user named 'no-such-user-lockfs' "
	                  "on this host; write a user name or a numeric uid");
	expect_file_error("[lockfs]\ndir_gid=4294967295\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'dir_gid' in [lockfs]: '4294967295' is not a valid gid; "
	                  "write a number below 4294967295 or a name");
	expect_file_error("[lockfs]\npassthrough=sometimes\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'passthrough' in [lockfs]: 'sometimes' is not auto, yes or "
	                  "no; write one of them");
	expect_file_error("[lockfs]\nallow_other=maybe\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'allow_other' in [lockfs]: 'maybe' is not a boolean; write "
	                  "true or false");
	expect_file_error("[lockfs]\nlog_level=verbose\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'log_level' in [lockfs]: 'verbose' is not a log level; "
	                  "write error, warning, info or debug");
	expect_file_error("[lockfs]\nbackend=LDAP!\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'backend' in [lockfs]: 'LDAP!' is not a backend name; "
	                  "write local, ldap or tinystore");
	expect_file_error("[lockfs]\nnotify=\\q\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":2: key 'notify' in [lockfs]: invalid escape sequence; the escapes "
	                  "are \\s (space), \\n, \\t, \\r and \\\\ (a backslash)");
	expect_file_error("[lockfs]\n\n[ldap]\nuri=ldap://x\\\n", LOCKFS_CONFIG_ERROR_VALUE,
	                  ":4: key 'uri' in [ldap]: invalid escape sequence; the escapes "
	                  "are \\s (space), \\n, \\t, \\r and \\\\ (a backslash)");
}

static void test_file_duplicates(void)
{
	expect_file_error("[lockfs]\nttl=30s\n[ldap]\nuri=x\n[lockfs]\nsuffix=.l\n",
	                  LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":5: group [lockfs]: appears again (first at line 1); merge the two "
	                  "into one");
	expect_file_error("[lockfs]\nttl=30s\n# again\nttl = 40s\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":4: key 'ttl' in [lockfs]: set again (first at line 2); keep one");
}

static void test_file_syntax(void)
{
	expect_file_error("[lockfs]\nttl 30s\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":2: 'ttl 30s' is not a key=value line, a [group] header or a # "
	                  "comment; fix or remove it");
	expect_file_error("[lockfs]\n=30s\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":2: '=30s' is not a key=value line, a [group] header or a # "
	                  "comment; fix or remove it");
	expect_file_error("# no group\nttl=30s\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":2: key 'ttl' comes before any group; put it under [lockfs] or a "
	                  "backend's group");
	expect_file_error("\n[lockfs\nttl=30s\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":2: '[lockfs' is not a group header; write [name] alone on the line");
	expect_file_error("[lockfs] x\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":1: '[lockfs] x' is not a group header; write [name] alone on the "
	                  "line");
	expect_file_error("[lockfs]\n\nhost=\xff\n", LOCKFS_CONFIG_ERROR_SYNTAX,
	                  ":3: invalid UTF-8; save the file as UTF-8 text");

	/* A NUL byte cannot be written through write_file(). */
	g_autofree char *path = g_build_filename(tmpdir, "nul.conf", NULL);
	g_assert_true(g_file_set_contents(path, "[lockfs]\nttl=3\0s\n", 17, NULL));
	g_autofree char *want =
	        g_strconcat(path, ":2: a NUL byte; save the file as UTF-8 text", NULL);
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	g_assert_false(lockfs_config_load_file(cfg, path, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_SYNTAX);
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);

	/* Missing files and directories are I/O errors naming the path. */
	g_autofree char *missing = g_build_filename(tmpdir, "missing.conf", NULL);
	g_assert_false(lockfs_config_load_file(cfg, missing, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO);
	g_assert_true(g_str_has_prefix(err->message, missing));
	g_assert_nonnull(strstr(err->message, "No such file or directory"));
	g_clear_error(&err);
	g_assert_false(lockfs_config_load_file(cfg, tmpdir, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_IO);
	g_assert_true(g_str_has_prefix(err->message, tmpdir));
	g_clear_error(&err);
	lockfs_config_free(cfg);
}

/* A file with an error leaves the configuration as it was. */
static void test_file_atomic(void)
{
	g_autofree char *bad = write_file("half.conf", "[lockfs]\nttl=45s\nsuffix=\n");
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	g_assert_false(lockfs_config_load_file(cfg, bad, &err));
	g_clear_error(&err);
	g_assert_null(lockfs_config_origin(cfg, "lockfs", "ttl"));
	g_assert_true(lockfs_config_finish(cfg, &err));
	g_assert_cmpint(lockfs_config_settings(cfg)->ttl_ms, ==, 30000);
	lockfs_config_free(cfg);
}

/* ---- mount options ---- */

static void test_options_override(void)
{
	g_autofree char *path = write_file("o.conf", "[lockfs]\nttl=60s\nsuffix=.f\n"
	                                             "[ldap]\nuri=ldap://file\n");
	/* Options set before and after loading win alike. */
	for (int before = 0; before < 2; before++) {
		lockfs_config *cfg = lockfs_config_new();
		GError *err = NULL;
		if (!before)
			load(cfg, path);
		set_option(cfg, "ttl=20s");
		set_option(cfg, "ldap_uri=ldap://option");
		set_option(cfg, "allow_other");
		set_option(cfg, "debug");
		if (before)
			load(cfg, path);
		g_assert_true(lockfs_config_finish(cfg, &err));
		g_assert_no_error(err);
		const lockfs_settings *s = lockfs_config_settings(cfg);
		g_assert_cmpint(s->ttl_ms, ==, 20000);
		g_assert_cmpint(s->renew_ms, ==, 20000 / 3);
		g_assert_cmpstr(s->suffix, ==, ".f");
		g_assert_true(s->allow_other);
		g_assert_true(s->debug);
		g_assert_true(s->foreground); /* debug implies it */
		g_assert_cmpstr(lockfs_config_origin(cfg, "lockfs", "ttl"), ==,
		                "mount option 'ttl=20s'");
		g_assert_cmpstr(lockfs_config_origin(cfg, "ldap", "uri"), ==,
		                "mount option 'ldap_uri=ldap://option'");
		char *uri = NULL;
		g_assert_true(lockfs_config_get_string(cfg, "ldap", "uri", NULL, &uri, &err));
		g_assert_cmpstr(uri, ==, "ldap://option");
		g_free(uri);
		lockfs_config_free(cfg);
	}

	/* The last of repeated options wins; booleans take values too. */
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	set_option(cfg, "ttl=20s");
	set_option(cfg, "ttl=40s");
	set_option(cfg, "allow_other=no");
	set_option(cfg, "passthrough=no");
	set_option(cfg, "notify=");
	g_assert_true(lockfs_config_finish(cfg, &err));
	g_assert_cmpint(lockfs_config_settings(cfg)->ttl_ms, ==, 40000);
	g_assert_false(lockfs_config_settings(cfg)->allow_other);
	g_assert_cmpint(lockfs_config_settings(cfg)->passthrough, ==, LOCKFS_PASSTHROUGH_NO);
	g_assert_null(lockfs_config_settings(cfg)->notify);
	lockfs_config_free(cfg);
}

static void test_options_fuse(void)
{
	/* clang-format off */
	static const char *const fuse[] = {
		"ro", "rw", "default_permissions", "fsname=locks", "subtype=lockfs",
		"max_read=131072", "auto_unmount", "noatime", "nodev", "nosuid", "dev", "suid",
		"exec", "noexec", "atime", "relatime", "_netdev", "nofail", "noauto", "auto",
		"user", "users", "defaults", "x-systemd.requires=network-online.target",
		"x-systemd.automount", "x-gvfs-hide",
	};
	/* clang-format on */
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	for (size_t i = 0; i < G_N_ELEMENTS(fuse); i++) {
		bool for_fuse = false;
		g_test_message("%s", fuse[i]);
		g_assert_true(lockfs_config_set_option(cfg, fuse[i], &for_fuse, &err));
		g_assert_no_error(err);
		g_assert_true(for_fuse);
	}

	/* Ours, not FUSE's: the daemon hands allow_other to FUSE itself. */
	/* clang-format off */
	static const char *const ours[] = {
		"allow_other", "foreground", "debug", "ttl=30s", "suffix=.lock",
		"ldap_starttls", "ldap_retries=3",
	};
	/* clang-format on */
	for (size_t i = 0; i < G_N_ELEMENTS(ours); i++) {
		g_test_message("%s", ours[i]);
		set_option(cfg, ours[i]);
	}

	expect_option_error(cfg, "ro=1", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'ro=1': the FUSE option 'ro' takes no value; "
	                    "write ro");
	expect_option_error(cfg, "fsname", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'fsname': the FUSE option 'fsname' needs a value; "
	                    "write fsname=VALUE");
	expect_option_error(cfg, "ttl", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'ttl': needs a value; write ttl=VALUE");
	expect_option_error(cfg, "tll=5s", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                    "mount option 'tll=5s': unknown option; did you mean 'ttl'?");
	expect_option_error(cfg, "ldap_uir=x", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                    "mount option 'ldap_uir=x': unknown option; did you mean "
	                    "'ldap_uri'?");
	expect_option_error(cfg, "nfs_server=x", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                    "mount option 'nfs_server=x': unknown option; write a key of "
	                    "[lockfs] (ttl=30s), a backend key prefixed with its group "
	                    "(ldap_uri=...) or a FUSE option");
	expect_option_error(cfg, "", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                    "mount option '': unknown option; write a key of [lockfs] "
	                    "(ttl=30s), a backend key prefixed with its group (ldap_uri=...) "
	                    "or a FUSE option");
	lockfs_config_free(cfg);
}

static void test_options_bad_value(void)
{
	lockfs_config *cfg = lockfs_config_new();
	expect_option_error(cfg, "ttl=abc", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'ttl=abc': 'abc' is not a duration; write a number "
	                    "with a unit such as 500ms, 30s, 5m, 1h or 2d (a bare number is "
	                    "seconds)");
	expect_option_error(cfg, "allow_other=perhaps", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'allow_other=perhaps': 'perhaps' is not a boolean; "
	                    "write true or false");
	expect_option_error(cfg, "suffix=.a/b", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'suffix=.a/b': '.a/b' contains '/'; a suffix ends a "
	                    "file name, write one such as .lock");
	/* Nothing was stored. */
	g_assert_null(lockfs_config_origin(cfg, "lockfs", "ttl"));
	lockfs_config_free(cfg);
}

/* ---- rules between keys ---- */

/* Finish with FILE (may be NULL) and OPTIONS, expecting a conflict WANT; a
 * "%s" in WANT stands for the file's path. */
static void expect_conflict(const char *file, const char *const *options, const char *want)
{
	lockfs_config *cfg = lockfs_config_new();
	g_autofree char *path = NULL;
	GError *err = NULL;
	if (file) {
		path = write_file("rules.conf", file);
		load(cfg, path);
	}
	for (; options && *options; options++)
		set_option(cfg, *options);
	g_assert_false(lockfs_config_finish(cfg, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_CONFLICT);
	/* Not g_string_replace(): it needs GLib 2.68. */
	g_auto(GStrv) parts = g_strsplit(want, "%s", -1);
	g_autofree char *w = g_strjoinv(path ? path : "", parts);
	g_assert_cmpstr(err->message, ==, w);
	g_error_free(err);
	lockfs_config_free(cfg);
}

static void test_rules(void)
{
	expect_conflict(
	        "[lockfs]\nttl=30s\nrenew_interval=30s\n", NULL,
	        "%s:3: key 'renew_interval' in [lockfs]: renew_interval=30s (%s:3) must "
	        "be shorter than four fifths of ttl=30s (%s:2); lower renew_interval (0 means ttl/3) "
	        "or raise ttl");
	/* Renewing after the loss would be declared (ttl less a fifth) is too late. */
	expect_conflict(
	        "[lockfs]\nttl=30s\nrenew_interval=25s\n", NULL,
	        "%s:3: key 'renew_interval' in [lockfs]: renew_interval=25s (%s:3) must "
	        "be shorter than four fifths of ttl=30s (%s:2); lower renew_interval (0 means ttl/3) "
	        "or raise ttl");
	/* The default network_timeout (10s) is blamed on the ttl that was set. */
	expect_conflict("[lockfs]\n\nttl=5s\n", NULL,
	                "%s:3: key 'ttl' in [lockfs]: network_timeout=10s (default) must be "
	                "shorter than ttl=5s (%s:3); lower network_timeout or raise ttl");
	expect_conflict(NULL, (const char *const[]){ "network_timeout=30s", NULL },
	                "mount option 'network_timeout=30s': network_timeout=30s (mount "
	                "option) must be shorter than ttl=30s (default); lower "
	                "network_timeout or raise ttl");
	expect_conflict("[lockfs]\nstale_after=20s\n", NULL,
	                "%s:2: key 'stale_after' in [lockfs]: stale_after=20s (%s:2) must be "
	                "0 (never) or longer than ttl=30s (default); raise stale_after or "
	                "lower ttl");
	expect_conflict("[lockfs]\nttl=10m\nnetwork_timeout=1m\n", NULL,
	                "%s:2: key 'ttl' in [lockfs]: stale_after=300s (default) must be 0 "
	                "(never) or longer than ttl=10m (%s:2); raise stale_after or lower ttl");
	expect_conflict("[lockfs]\nstale_after=40s\n",
	                (const char *const[]){ "heartbeat_min_interval=1m", NULL },
	                "mount option 'heartbeat_min_interval=1m': heartbeat_min_interval=1m "
	                "(mount option) must be shorter than stale_after=40s (%s:2); lower "
	                "heartbeat_min_interval or raise stale_after");

	/* stale_after=0 means never, and then heartbeats may be rare. */
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	set_option(cfg, "stale_after=0");
	set_option(cfg, "heartbeat_min_interval=1h");
	set_option(cfg, "ttl=1s");
	set_option(cfg, "network_timeout=999ms");
	g_assert_true(lockfs_config_finish(cfg, &err));
	g_assert_no_error(err);
	g_assert_cmpint(lockfs_config_settings(cfg)->renew_ms, ==, 333);

	/* A later option can break what finished before. */
	set_option(cfg, "renew_interval=1s");
	g_assert_false(lockfs_config_finish(cfg, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_CONFLICT);
	g_clear_error(&err);
	lockfs_config_free(cfg);
}

/* ---- backend groups and getters ---- */

/* The values of g.conf (test_getters) through each getter, and a default for
 * a key it does not set. */
static void getters_from_file(lockfs_config *cfg)
{
	GError *err = NULL;
	char *str = NULL;
	bool b = false;
	int64_t n = 0;
	g_assert_true(lockfs_config_get_string(cfg, "ldap", "uri", "ldap://def", &str, &err));
	g_assert_cmpstr(str, ==, "ldap://a");
	g_free(str);
	g_assert_true(lockfs_config_get_string(cfg, "ldap", "base_dn", "dc=def", &str, &err));
	g_assert_cmpstr(str, ==, "dc=def");
	g_free(str);
	str = (char *)"untouched";
	g_assert_true(lockfs_config_get_string(cfg, "ldap", "base_dn", NULL, &str, &err));
	g_assert_null(str);
	g_assert_true(lockfs_config_get_bool(cfg, "ldap", "starttls", false, &b, &err));
	g_assert_true(b);
	g_assert_true(lockfs_config_get_int(cfg, "ldap", "retries", 3, 0, 10, &n, &err));
	g_assert_cmpint(n, ==, 7);
	g_assert_true(lockfs_config_get_duration(cfg, "ldap", "timeout", 0, &n, &err));
	g_assert_cmpint(n, ==, 1500);
	g_assert_true(lockfs_config_get_string(cfg, "tinystore", "endpoint", NULL, &str, &err));
	g_assert_cmpstr(str, ==, "http://t");
	g_free(str);
	g_assert_no_error(err);
}

/* Range and type errors name the key and its origin (PATH's line). */
static void getters_errors_name_origin(lockfs_config *cfg, const char *path)
{
	GError *err = NULL;
	bool b = false;
	int64_t n = 0;
	g_autofree char *want = g_strdup_printf("%s:4: key 'retries' in [ldap]: '7' is not a "
	                                        "whole number from 0 to 5; write one in that "
	                                        "range",
	                                        path);
	g_assert_false(lockfs_config_get_int(cfg, "ldap", "retries", 3, 0, 5, &n, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE);
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(g_steal_pointer(&want));
	want = g_strdup_printf("%s:2: key 'uri' in [ldap]: 'ldap://a' is not a boolean; write "
	                       "true or false",
	                       path);
	g_assert_false(lockfs_config_get_bool(cfg, "ldap", "uri", false, &b, &err));
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
	g_free(g_steal_pointer(&want));
	want = g_strdup_printf("%s:2: key 'uri' in [ldap]: 'ldap://a' is not a duration; "
	                       "write a number with a unit such as 500ms, 30s, 5m, 1h or 2d "
	                       "(a bare number is seconds)",
	                       path);
	g_assert_false(lockfs_config_get_duration(cfg, "ldap", "uri", 0, &n, &err));
	g_assert_cmpstr(err->message, ==, want);
	g_clear_error(&err);
}

/* Mount options override and keep their own origin; a flag is true for a
 * boolean and refused for anything else. */
static void getters_mount_options(lockfs_config *cfg)
{
	GError *err = NULL;
	char *str = NULL;
	bool b = false;
	int64_t n = 0;
	set_option(cfg, "ldap_retries=-2");
	g_assert_false(lockfs_config_get_int(cfg, "ldap", "retries", 3, 0, 10, &n, &err));
	g_assert_cmpstr(err->message, ==,
	                "mount option 'ldap_retries=-2': '-2' is not a whole "
	                "number from 0 to 10; write one in that range");
	g_clear_error(&err);
	g_assert_true(lockfs_config_get_int(cfg, "ldap", "retries", 3, -5, 10, &n, &err));
	g_assert_cmpint(n, ==, -2);
	set_option(cfg, "ldap_retries=abc");
	g_assert_false(lockfs_config_get_int(cfg, "ldap", "retries", 3, 0, 10, &n, &err));
	g_assert_cmpstr(err->message, ==,
	                "mount option 'ldap_retries=abc': 'abc' is not a "
	                "whole number from 0 to 10; write one in that range");
	g_clear_error(&err);

	/* A flag is true for a boolean and refused for anything else. */
	set_option(cfg, "ldap_starttls");
	set_option(cfg, "ldap_timeout");
	set_option(cfg, "ldap_uri");
	g_assert_true(lockfs_config_get_bool(cfg, "ldap", "starttls", false, &b, &err));
	g_assert_true(b);
	g_assert_cmpstr(lockfs_config_origin(cfg, "ldap", "starttls"), ==,
	                "mount option 'ldap_starttls'");
	g_assert_false(lockfs_config_get_duration(cfg, "ldap", "timeout", 0, &n, &err));
	g_assert_cmpstr(err->message, ==,
	                "mount option 'ldap_timeout': needs a value; write "
	                "ldap_timeout=VALUE");
	g_clear_error(&err);
	g_assert_false(lockfs_config_get_string(cfg, "ldap", "uri", NULL, &str, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_VALUE);
	g_assert_null(str);
	g_clear_error(&err);
}

/* Absent keys give the defaults; asking for a key nobody registered is a
 * programming error, reported. */
static void getters_absent_and_unregistered(void)
{
	GError *err = NULL;
	char *str = NULL;
	bool b = false;
	int64_t n = 0;
	lockfs_config *empty = lockfs_config_new();
	g_assert_true(lockfs_config_get_bool(empty, "ldap", "starttls", true, &b, &err));
	g_assert_true(b);
	g_assert_true(lockfs_config_get_int(empty, "ldap", "retries", 3, 0, 5, &n, &err));
	g_assert_cmpint(n, ==, 3);
	g_assert_true(lockfs_config_get_duration(empty, "ldap", "timeout", 2500, &n, &err));
	g_assert_cmpint(n, ==, 2500);
	g_assert_null(lockfs_config_origin(empty, "ldap", "timeout"));

	/* Asking for a key nobody registered is a programming error, reported. */
	g_assert_false(lockfs_config_get_string(empty, "ldap", "password", NULL, &str, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN);
	g_assert_cmpstr(err->message, ==,
	                "key 'password' in [ldap] is not registered; list it "
	                "in lockfs_config_register_group()");
	g_clear_error(&err);
	g_assert_false(lockfs_config_get_bool(empty, "nfs", "x", false, &b, &err));
	g_assert_error(err, LOCKFS_CONFIG_ERROR, LOCKFS_CONFIG_ERROR_UNKNOWN);
	g_clear_error(&err);
	lockfs_config_free(empty);
}

static void test_getters(void)
{
	g_autofree char *path = write_file("g.conf", "[ldap]\n"
	                                             "uri=ldap://a\n"
	                                             "starttls=yes\n"
	                                             "retries=7\n"
	                                             "timeout=1.5s\n"
	                                             "[tinystore]\n"
	                                             "endpoint=http://t\n");
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	int64_t n = 0;
	load(cfg, path);
	getters_from_file(cfg);
	getters_errors_name_origin(cfg, path);
	getters_mount_options(cfg);
	getters_absent_and_unregistered();

	/* The general keys are readable the same way. */
	g_assert_true(lockfs_config_get_duration(cfg, "lockfs", "ttl", 123, &n, &err));
	g_assert_cmpint(n, ==, 123);
	lockfs_config_free(cfg);
}

static void test_register(void)
{
	/* Registering again replaces the keys. */
	lockfs_config_register_group("tmpgroup", (const char *const[]){ "a", NULL });
	lockfs_config_register_group("tmpgroup", (const char *const[]){ "b", "c_d", NULL });
	lockfs_config *cfg = lockfs_config_new();
	set_option(cfg, "tmpgroup_c_d=1");
	expect_option_error(cfg, "tmpgroup_a=1", LOCKFS_CONFIG_ERROR_UNKNOWN,
	                    "mount option 'tmpgroup_a=1': unknown option; did you mean "
	                    "'tmpgroup_b'?");
	int64_t n = 0;
	GError *err = NULL;
	g_assert_true(lockfs_config_get_int(cfg, "tmpgroup", "c_d", 0, 0, 9, &n, &err));
	g_assert_cmpint(n, ==, 1);
	lockfs_config_free(cfg);

	/* Names that would make options ambiguous are refused. */
	g_test_expect_message("lockfs", G_LOG_LEVEL_CRITICAL, "*group name 'my_backend'*");
	lockfs_config_register_group("my_backend", (const char *const[]){ "x", NULL });
	g_test_assert_expected_messages();
	g_test_expect_message("lockfs", G_LOG_LEVEL_CRITICAL, "*mount option dir_mode*");
	lockfs_config_register_group("dir", (const char *const[]){ "mode", NULL });
	g_test_assert_expected_messages();
	g_test_expect_message("lockfs", G_LOG_LEVEL_CRITICAL, "*[lockfs] is built in*");
	lockfs_config_register_group("lockfs", (const char *const[]){ "x", NULL });
	g_test_assert_expected_messages();
	g_test_expect_message("lockfs", G_LOG_LEVEL_CRITICAL, "*key name 'Bad-Key' of [okay]*");
	lockfs_config_register_group("okay", (const char *const[]){ "Bad-Key", NULL });
	g_test_assert_expected_messages();
}

static void test_ids_by_name(void)
{
	lockfs_config *cfg = lockfs_config_new();
	GError *err = NULL;
	set_option(cfg, "dir_uid=root");
	set_option(cfg, "dir_gid=root");
	set_option(cfg, "dir_mode=01777");
	set_option(cfg, "log_level=Warning");
	set_option(cfg, "audit=no");
	set_option(cfg, "state_dir=/tmp/x");
	set_option(cfg, "log_file=/tmp/x.log");
	set_option(cfg, "metrics_file=/tmp/x.prom");
	set_option(cfg, "host=h");
	g_assert_true(lockfs_config_finish(cfg, &err));
	const lockfs_settings *s = lockfs_config_settings(cfg);
	g_assert_cmpint(s->dir_uid, ==, 0);
	g_assert_cmpint(s->dir_gid, ==, 0);
	g_assert_cmpint(s->dir_mode, ==, 01777);
	g_assert_cmpstr(s->log_level, ==, "warning");
	g_assert_false(s->audit);
	g_assert_cmpstr(s->state_dir, ==, "/tmp/x");
	g_assert_cmpstr(s->log_file, ==, "/tmp/x.log");
	g_assert_cmpstr(s->metrics_file, ==, "/tmp/x.prom");
	g_assert_cmpstr(s->host, ==, "h");
	expect_option_error(cfg, "dir_gid=no-such-group-lockfs", LOCKFS_CONFIG_ERROR_VALUE,
	                    "mount option 'dir_gid=no-such-group-lockfs': no group named "
	                    "'no-such-group-lockfs' on this host; write a group name or a "
	                    "numeric gid");
	lockfs_config_free(cfg);
}

int main(int argc, char **argv)
{
	g_test_init(&argc, &argv, NULL);

	/* What the backends would register at start-up. */
	lockfs_config_register_backends("local, ldap or tinystore");
	lockfs_config_register_group("ldap", (const char *const[]){ "uri", "base_dn", "starttls",
	                                                            "retries", "timeout", NULL });
	lockfs_config_register_group("tinystore", (const char *const[]){ "endpoint", NULL });

	GError *err = NULL;
	tmpdir = g_dir_make_tmp("lockfs-test-config-XXXXXX", &err);
	g_assert_no_error(err);

	g_test_add_func("/config/duration/valid", test_duration_valid);
	g_test_add_func("/config/duration/invalid", test_duration_invalid);
	g_test_add_func("/config/defaults", test_defaults);
	g_test_add_func("/config/file/good", test_file_good);
	g_test_add_func("/config/file/unknown", test_file_unknown);
	g_test_add_func("/config/file/bad-value", test_file_bad_value);
	g_test_add_func("/config/file/duplicates", test_file_duplicates);
	g_test_add_func("/config/file/syntax", test_file_syntax);
	g_test_add_func("/config/file/atomic", test_file_atomic);
	g_test_add_func("/config/options/override", test_options_override);
	g_test_add_func("/config/options/fuse", test_options_fuse);
	g_test_add_func("/config/options/bad-value", test_options_bad_value);
	g_test_add_func("/config/rules", test_rules);
	g_test_add_func("/config/getters", test_getters);
	g_test_add_func("/config/register", test_register);
	g_test_add_func("/config/ids-by-name", test_ids_by_name);
	int rc = g_test_run();

	/* Remove what write_file() left. */
	GDir *dir = g_dir_open(tmpdir, 0, NULL);
	const char *name;
	while (dir && (name = g_dir_read_name(dir))) {
		g_autofree char *p = g_build_filename(tmpdir, name, NULL);
		g_unlink(p);
	}
	if (dir)
		g_dir_close(dir);
	g_rmdir(tmpdir);
	g_free(tmpdir);
	return rc;
}
