#include "view_format.h"

#include <lockfs/backend.h>
#include <stdarg.h>
#include <string.h>

/* ---- escaping ---- */

bool lockfs_unichar_unsafe(gunichar c)
{
	return c < 0x21 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029 || c == 0x200e ||
	       c == 0x200f || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

/* The length of the well-formed UTF-8 sequence at S (LEN > 0 bytes there)
 * and its code point; 0 when S does not start one.  Written out rather than
 * taken from GLib so that what is escaped never depends on its version. */
static size_t utf8_seq(const unsigned char *s, size_t len, gunichar *cp)
{
	unsigned char c = s[0];
	size_t n;
	gunichar v, min;
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		n = 2, v = c & 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		n = 3, v = c & 0x0f, min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4, v = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = v << 6 | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

static void octal(GString *out, unsigned char c)
{
	char buf[4] = { '\\', (char)('0' + (c >> 6)), (char)('0' + (c >> 3 & 7)),
		        (char)('0' + (c & 7)) };
	g_string_append_len(out, buf, 4);
}

/* Printable ASCII other than the backslash, and the space where kept: what
 * lockfs_escape_append copies as it is. */
static bool plain_byte(unsigned char c, unsigned flags)
{
	return (c > ' ' && c < 0x7f && c != '\\') ||
	       (c == ' ' && (flags & LOCKFS_ESCAPE_KEEP_SPACE));
}

void lockfs_escape_append(GString *out, const char *s, size_t len, unsigned flags)
{
	const unsigned char *p = (const unsigned char *)s;
	for (size_t i = 0; i < len;) {
		/* A run of plain bytes, the common case (every audit line goes
		 * through here), is copied at once. */
		size_t run = i;
		while (run < len && plain_byte(p[run], flags))
			run++;
		if (run > i) {
			g_string_append_len(out, s + i, (gssize)(run - i));
			i = run;
			continue;
		}
		gunichar c;
		size_t n = utf8_seq(p + i, len - i, &c);
		if (!n) { /* one byte of a bad sequence; the rest are judged on their own */
			octal(out, p[i++]);
			continue;
		}
		bool esc;
		if (c == ' ')
			esc = !(flags & LOCKFS_ESCAPE_KEEP_SPACE);
		else
			esc = c == '\\' || lockfs_unichar_unsafe(c);
		for (size_t j = 0; j < n; j++) {
			if (esc)
				octal(out, p[i + j]);
			else
				g_string_append_c(out, (char)p[i + j]);
		}
		i += n;
	}
}

char *lockfs_escape(const char *s)
{
	GString *out = g_string_new(NULL);
	if (s)
		lockfs_escape_append(out, s, strlen(s), 0);
	return g_string_free(out, FALSE);
}

char *lockfs_escape_text(const char *s)
{
	GString *out = g_string_sized_new(s ? strlen(s) : 0);
	if (s)
		lockfs_escape_append(out, s, strlen(s), LOCKFS_ESCAPE_KEEP_SPACE);
	return g_string_free(out, FALSE);
}

static void append_base(GString *out, uint64_t v, unsigned base)
{
	char b[LOCKFS_DIGITS_MAX];
	g_string_append_len(out, b, (gssize)lockfs_u64_digits(b, v, base));
}

void lockfs_append_u64(GString *out, uint64_t v)
{
	append_base(out, v, 10);
}

void lockfs_append_i64(GString *out, int64_t v)
{
	if (v < 0)
		g_string_append_c(out, '-');
	/* Negated in unsigned arithmetic: INT64_MIN has no positive twin. */
	append_base(out, v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, 10);
}

void lockfs_append_octal(GString *out, uint32_t v)
{
	append_base(out, v, 8);
}

void lockfs_append_hex(GString *out, uint64_t v)
{
	append_base(out, v, 16);
}

static bool is_octal(char c)
{
	return c >= '0' && c <= '7';
}

bool lockfs_unescape_append(GString *out, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (s[i] != '\\') {
			g_string_append_c(out, s[i]);
			continue;
		}
		if (len - i < 4 || s[i + 1] < '0' || s[i + 1] > '3' || !is_octal(s[i + 2]) ||
		    !is_octal(s[i + 3]))
			return false;
		int b = (s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0');
		g_string_append_c(out, (char)b);
		i += 3;
	}
	return true;
}

char *lockfs_unescape(const char *s, gssize len)
{
	size_t n = len < 0 ? strlen(s) : (size_t)len;
	GString *out = g_string_sized_new(n);
	if (!lockfs_unescape_append(out, s, n) || memchr(out->str, '\0', out->len)) {
		g_string_free(out, TRUE);
		return NULL;
	}
	return g_string_free(out, FALSE);
}

/* ---- one lock's fields ---- */

static const char *const field_names[LOCKFS_VF_COUNT] = {
	[LOCKFS_VF_LOCK] = "lock",
	[LOCKFS_VF_STATE] = "state",
	[LOCKFS_VF_FENCE] = "fence",
	[LOCKFS_VF_HOST] = "host",
	[LOCKFS_VF_PID] = "pid",
	[LOCKFS_VF_UID] = "uid",
	[LOCKFS_VF_GID] = "gid",
	[LOCKFS_VF_USER] = "user",
	[LOCKFS_VF_COMMAND] = "command",
	[LOCKFS_VF_ACQUIRED] = "acquired",
	[LOCKFS_VF_HEARTBEAT] = "heartbeat",
	[LOCKFS_VF_AGE] = "age",
	[LOCKFS_VF_HEARTBEAT_AGE] = "heartbeat_age",
	[LOCKFS_VF_LEASE_LEFT_MS] = "lease_left_ms",
	[LOCKFS_VF_BACKEND] = "backend",
	[LOCKFS_VF_MINE] = "mine",
};

/* The fields of a status line after its key, in order (the command last: it
 * is the longest). */
static const lockfs_view_field status_fields[] = {
	LOCKFS_VF_STATE, LOCKFS_VF_FENCE, LOCKFS_VF_HOST,          LOCKFS_VF_PID,     LOCKFS_VF_UID,
	LOCKFS_VF_USER,  LOCKFS_VF_AGE,   LOCKFS_VF_HEARTBEAT_AGE, LOCKFS_VF_COMMAND,
};

const char *lockfs_view_field_name(lockfs_view_field f)
{
	return (unsigned)f < LOCKFS_VF_COUNT ? field_names[f] : NULL;
}

int lockfs_view_field_find(const char *name, size_t len)
{
	for (int f = 0; f < LOCKFS_VF_COUNT; f++)
		if (strlen(field_names[f]) == len && !memcmp(field_names[f], name, len))
			return f;
	return -1;
}

void lockfs_view_set(lockfs_view *v, lockfs_view_field f, const char *value)
{
	g_free(v->v[f]);
	v->v[f] = g_strdup(value);
}

void lockfs_view_setf(lockfs_view *v, lockfs_view_field f, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	g_free(v->v[f]);
	v->v[f] = g_strdup_vprintf(fmt, ap);
	va_end(ap);
}

void lockfs_view_clear(lockfs_view *v)
{
	for (int f = 0; f < LOCKFS_VF_COUNT; f++)
		g_free(v->v[f]);
	memset(v, 0, sizeof(*v));
}

static void append_escaped(GString *out, const char *s)
{
	lockfs_escape_append(out, s, strlen(s), 0);
}

void lockfs_view_status_line(const lockfs_view *v, GString *out)
{
	append_escaped(out, v->v[LOCKFS_VF_LOCK] ? v->v[LOCKFS_VF_LOCK] : "");
	for (size_t i = 0; i < G_N_ELEMENTS(status_fields); i++) {
		const char *value = v->v[status_fields[i]];
		if (!value)
			continue;
		g_string_append_c(out, ' ');
		g_string_append(out, field_names[status_fields[i]]);
		g_string_append_c(out, '=');
		append_escaped(out, value);
	}
	g_string_append_c(out, '\n');
}

void lockfs_view_lock_text(const lockfs_view *v, GString *out)
{
	for (int f = 0; f < LOCKFS_VF_COUNT; f++) {
		if (!v->v[f])
			continue;
		g_string_append(out, field_names[f]);
		g_string_append(out, ": ");
		append_escaped(out, v->v[f]);
		g_string_append_c(out, '\n');
	}
}

/* Field NAME (NLEN bytes) = the escaped VALUE (VLEN bytes), unless unknown,
 * already set or malformed. */
static bool set_escaped(lockfs_view *v, const char *name, size_t nlen, const char *value,
                        size_t vlen)
{
	int f = lockfs_view_field_find(name, nlen);
	if (f < 0 || v->v[f])
		return false;
	v->v[f] = lockfs_unescape(value, vlen);
	return v->v[f] != NULL;
}

bool lockfs_view_parse_status_line(const char *line, size_t len, lockfs_view *v)
{
	memset(v, 0, sizeof(*v));
	const char *end = line + len;
	const char *sp = memchr(line, ' ', len);
	const char *word_end = sp ? sp : end;
	if (word_end == line)
		return false;
	v->v[LOCKFS_VF_LOCK] = lockfs_unescape(line, word_end - line);
	if (!v->v[LOCKFS_VF_LOCK])
		return false;
	for (const char *p = word_end; p < end;) {
		p++; /* the space */
		const char *next = memchr(p, ' ', end - p);
		const char *w_end = next ? next : end;
		const char *eq = memchr(p, '=', w_end - p);
		/* The key is not a field: a "lock=" among them is ignored. */
		if (eq && !(eq - p == 4 && !memcmp(p, "lock", 4)))
			set_escaped(v, p, eq - p, eq + 1, w_end - eq - 1);
		p = w_end;
	}
	return true;
}

bool lockfs_view_parse_lock_text(const char *text, lockfs_view *v)
{
	memset(v, 0, sizeof(*v));
	bool any = false;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		const char *sep = g_strstr_len(p, len, ": ");
		if (sep && set_escaped(v, p, sep - p, sep + 2, len - (sep + 2 - p)))
			any = true;
		p += len + (nl ? 1 : 0);
	}
	return any;
}

/* ---- break requests ---- */

char *lockfs_view_break_request(const char *key, const char *fence)
{
	GString *out = g_string_new(NULL);
	append_escaped(out, key);
	if (fence)
		g_string_append_printf(out, " %s", fence);
	g_string_append_c(out, '\n');
	return g_string_free(out, FALSE);
}

bool lockfs_view_parse_break(const char *buf, size_t len, char **key, char **fence)
{
	*key = *fence = NULL;
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == ' '))
		len--;
	if (!len || memchr(buf, '\n', len) || memchr(buf, '\0', len))
		return false;
	const char *sp = memchr(buf, ' ', len);
	size_t klen = sp ? (size_t)(sp - buf) : len;
	if (!klen)
		return false;
	if (sp) {
		const char *f = sp + 1;
		size_t flen = len - klen - 1;
		if (!flen || flen >= LOCKFS_FENCE_MAX)
			return false;
		for (size_t i = 0; i < flen; i++)
			if (!g_ascii_isdigit(f[i]))
				return false;
	}
	char *k = lockfs_unescape(buf, klen);
	if (!k || !*k) {
		g_free(k);
		return false;
	}
	*key = k;
	*fence = sp ? g_strndup(sp + 1, len - klen - 1) : NULL;
	return true;
}
