/* A connection to a tinystore server (docs/tinystore-protocol.md §1-2).
 *
 * Connecting and the TLS handshake use GIO's asynchronous calls on a
 * private main context, cancelled at the deadline; after that every read and
 * write is non-blocking and every wait is a poll() on the socket bounded by
 * the deadline.  A server that sends garbage, too much, or nothing gets the
 * connection closed, never a wait past the deadline. */
#include "tinystore_conn.h"

#include <errno.h>
#include <fcntl.h>
#include <lockfs/backend_support.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

/* Before WELCOME a server has no business sending large frames. */
#define WELCOME_MAX_BODY 65536
#define SERVE_MAX 65536

struct ts_conn {
	GIOStream *io; /* the socket connection, or TLS over it */
	GSocket *sock;
	int fd;
	GPollableInputStream *in;
	GPollableOutputStream *out;
	uint32_t max_body;
	uint64_t credit;
	uint32_t next_stream;
	bool closing; /* the server said GOAWAY */
	int64_t clock_offset_ms;
	/* WELCOME's now (the server's unix ms) and our monotonic clock when it
	 * came: the server's time later without trusting our wall clock. */
	int64_t welcome_server_ms, welcome_mono_us;
};

#define io_error(error, ...) ts_fail(error, TS_ERROR_IO, __VA_ARGS__)

/* ---- bounded waits ---- */

static bool wait_fd(int fd, short events, int64_t deadline, GError **error)
{
	for (;;) {
		int64_t left = deadline - lockfs_mono_us();
		if (left <= 0)
			return io_error(error, "no answer within the network timeout");
		struct pollfd p = { .fd = fd, .events = events };
		int r = poll(&p, 1, (int)MIN((left + 999) / 1000, G_MAXINT));
		if (r > 0)
			return true; /* errors and hang-ups show in the next read */
		if (r < 0 && errno != EINTR)
			return io_error(error, "poll: %s", g_strerror(errno));
	}
}

static bool read_exact(ts_conn *c, uint8_t *buf, size_t n, int64_t deadline, GError **error)
{
	size_t got = 0;
	while (got < n) {
		GError *e = NULL;
		gssize r = g_pollable_input_stream_read_nonblocking(c->in, buf + got, n - got, NULL,
		                                                    &e);
		if (r > 0) {
			got += (size_t)r;
		} else if (r == 0) {
			return io_error(error, "the server closed the connection");
		} else if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
			g_error_free(e);
			if (!wait_fd(c->fd, POLLIN, deadline, error))
				return false;
		} else {
			io_error(error, "read: %s", e->message);
			g_error_free(e);
			return false;
		}
	}
	return true;
}

static bool write_all(ts_conn *c, const uint8_t *buf, size_t n, int64_t deadline, GError **error)
{
	size_t put = 0;
	while (put < n) {
		GError *e = NULL;
		gssize r = g_pollable_output_stream_write_nonblocking(c->out, buf + put, n - put,
		                                                      NULL, &e);
		if (r > 0) {
			put += (size_t)r;
		} else if (r < 0 && g_error_matches(e, G_IO_ERROR, G_IO_ERROR_WOULD_BLOCK)) {
			g_error_free(e);
			if (!wait_fd(c->fd, POLLOUT, deadline, error))
				return false;
		} else {
			io_error(error, "write: %s", e ? e->message : "no progress");
			g_clear_error(&e);
			return false;
		}
	}
	return true;
}

/* One frame, its header checked before its body is read. */
static bool recv_frame(ts_conn *c, ts_header *h, uint8_t **body, int64_t deadline, GError **error)
{
	uint8_t head[TS_HEADER_SIZE];
	*body = NULL;
	if (!read_exact(c, head, sizeof(head), deadline, error))
		return false;
	ts_header_read(head, h);
	if (!ts_header_check(h, c->max_body, error))
		return false;
	*body = g_malloc(h->len ? h->len : 1);
	if (!read_exact(c, *body, h->len, deadline, error)) {
		g_clear_pointer(body, g_free);
		return false;
	}
	return true;
}

static bool send_frame(ts_conn *c, uint8_t kind, uint8_t flags, uint16_t method, uint32_t stream,
                       const void *body, size_t len, int64_t deadline, GError **error)
{
	GByteArray *f = g_byte_array_sized_new(TS_HEADER_SIZE + len);
	ts_frame_append(f, kind, flags, method, stream, body, len);
	bool ok = write_all(c, f->data, f->len, deadline, error);
	g_byte_array_free(f, TRUE);
	return ok;
}

/* The GOAWAY body as an error: the server is closing or refused us. */
static void goaway_error(const uint8_t *body, size_t len, GError **error)
{
	ts_msg m;
	ts_failure f = { 0 };
	GError *e = NULL;
	if (ts_msg_decode(&m, g_memdup2(body, len), len, &e) && ts_failure_decode(&m, &f, &e))
		g_set_error(error, TS_ERROR, TS_ERROR_REFUSED, "the server said GOAWAY %s: %s",
		            f.code, f.message);
	else
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL, "a bad GOAWAY: %s", e->message);
	g_clear_error(&e);
	ts_failure_clear(&f);
	ts_msg_clear(&m);
}

/* Frames that are not an answer: credit, ping, goaway.  False when the
 * connection cannot go on. */
static bool handle_other(ts_conn *c, const ts_header *h, const uint8_t *body, int64_t deadline,
                         GError **error)
{
	uint32_t n;
	switch (h->kind) {
	case TS_CREDIT:
		if (!ts_credit_decode(body, h->len, &n, error))
			return false;
		if (h->stream == 0)
			c->credit = MIN(c->credit + n, (uint64_t)1 << 40);
		return true;
	case TS_PING:
		return send_frame(c, TS_PONG, 0, 0, 0, body, h->len, deadline, error);
	case TS_PONG:
		return true;
	case TS_GOAWAY: {
		/* Streams already running may still finish: note it and go on. */
		GError *e = NULL;
		goaway_error(body, h->len, &e);
		bool protocol = e->code == TS_ERROR_PROTOCOL;
		if (protocol)
			g_propagate_error(error, e);
		else
			g_error_free(e);
		c->closing = true;
		return !protocol;
	}
	default:
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a frame of kind %u where an answer was due", h->kind);
		return false;
	}
}

/* ---- connecting ---- */

typedef struct {
	GAsyncResult *res;
} waiter;

static void on_done(GObject *src, GAsyncResult *res, gpointer user)
{
	(void)src;
	((waiter *)user)->res = g_object_ref(res);
}

static gboolean on_deadline(gpointer cancel)
{
	g_cancellable_cancel(cancel);
	return G_SOURCE_REMOVE;
}

/* Run CTX until W's operation ends; CANCEL it at DEADLINE. */
static void wait_async(GMainContext *ctx, waiter *w, GCancellable *cancel, int64_t deadline)
{
	int64_t left = MAX(deadline - lockfs_mono_us(), 0);
	GSource *t = g_timeout_source_new((guint)MIN((left + 999) / 1000, G_MAXUINT));
	g_source_set_callback(t, on_deadline, cancel, NULL);
	g_source_attach(t, ctx);
	while (!w->res)
		g_main_context_iteration(ctx, TRUE);
	g_source_destroy(t);
	g_source_unref(t);
}

/* A timed-out operation reads as cancelled: say what happened instead. */
static void async_error(GError **error, GError *e, const char *what, const char *where)
{
	if (g_error_matches(e, G_IO_ERROR, G_IO_ERROR_CANCELLED))
		io_error(error, "%s %s: no answer within the network timeout", what, where);
	else
		io_error(error, "%s %s: %s", what, where, e->message);
	g_error_free(e);
}

static gboolean accept_any(GTlsConnection *conn, GTlsCertificate *cert, GTlsCertificateFlags errors,
                           gpointer user)
{
	(void)conn;
	(void)cert;
	(void)errors;
	(void)user;
	return TRUE; /* verify = false: the operator chose this */
}

static GIOStream *connect_remote(const ts_target *t, int64_t deadline, GError **error)
{
	bool tls = g_str_has_prefix(t->endpoint, "tls://");
	const char *hostport = t->endpoint + strlen("tcp://");
	GError *e = NULL;
	GSocketConnectable *addr = g_network_address_parse(hostport, 0, &e);
	if (!addr) {
		io_error(error, "endpoint %s: %s", t->endpoint, e->message);
		g_error_free(e);
		return NULL;
	}
	GMainContext *ctx = g_main_context_new();
	g_main_context_push_thread_default(ctx);
	GCancellable *cancel = g_cancellable_new();
	GSocketClient *client = g_socket_client_new();
	waiter w = { 0 };
	g_socket_client_connect_async(client, addr, cancel, on_done, &w);
	wait_async(ctx, &w, cancel, deadline);
	GSocketConnection *conn = g_socket_client_connect_finish(client, w.res, &e);
	g_clear_object(&w.res);
	GIOStream *io = conn ? G_IO_STREAM(conn) : NULL;
	if (!conn)
		async_error(error, e, "connecting to", t->endpoint);
	if (io && tls) {
		GIOStream *ts = g_tls_client_connection_new(io, addr, &e);
		if (!ts) {
			io_error(error, "TLS to %s: %s", t->endpoint, e->message);
			g_error_free(e);
			g_io_stream_close(io, NULL, NULL);
			g_clear_object(&io);
		} else {
			if (t->ca)
				g_tls_connection_set_database(G_TLS_CONNECTION(ts), t->ca);
			if (!t->verify)
				g_signal_connect(ts, "accept-certificate", G_CALLBACK(accept_any),
				                 NULL);
			g_tls_connection_handshake_async(G_TLS_CONNECTION(ts), G_PRIORITY_DEFAULT,
			                                 cancel, on_done, &w);
			wait_async(ctx, &w, cancel, deadline);
			bool ok =
			        g_tls_connection_handshake_finish(G_TLS_CONNECTION(ts), w.res, &e);
			g_clear_object(&w.res);
			if (!ok) {
				async_error(error, e, "TLS handshake with", t->endpoint);
				g_io_stream_close(io, NULL, NULL);
				g_clear_object(&ts);
			}
			g_object_unref(io); /* the TLS stream holds its base */
			io = ts;
		}
	}
	g_object_unref(client);
	g_object_unref(cancel);
	g_object_unref(addr);
	/* Let whatever the cancelled operations left behind finish here. */
	while (g_main_context_iteration(ctx, FALSE))
		;
	g_main_context_pop_thread_default(ctx);
	g_main_context_unref(ctx);
	return io;
}

/* The local socket SERVE names, and the secret its server proves it knows. */
static GIOStream *connect_local(const ts_target *t, ts_serve *serve, GError **error)
{
	g_autofree char *path = g_build_filename(t->dir, "server", "SERVE", NULL);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0) {
		io_error(error,
		         "no tinystore server serves %s (%s: %s); start one with "
		         "'tinystore serve %s'",
		         t->dir, path, g_strerror(errno), t->dir);
		return NULL;
	}
	struct stat st;
	char buf[SERVE_MAX];
	ssize_t n = fstat(fd, &st) == 0 ? read(fd, buf, sizeof(buf)) : -1;
	int err = errno;
	close(fd);
	if (n < 0) {
		io_error(error, "%s: %s", path, g_strerror(err));
		return NULL;
	}
	if (st.st_mode & (S_IRWXG | S_IRWXO)) {
		g_set_error(error, TS_ERROR, TS_ERROR_CONFIG,
		            "%s is open to others (mode %03o): its secret proves nothing", path,
		            (unsigned)(st.st_mode & 0777));
		return NULL;
	}
	GError *e = NULL;
	if (!ts_serve_parse(buf, (size_t)n, serve, &e)) {
		io_error(error, "%s: %s", path, e->message);
		g_error_free(e);
		return NULL;
	}
	const char *sock_path = serve->endpoint + strlen("unix://");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(sock_path) >= sizeof(sa.sun_path)) {
		io_error(error, "%s: socket path too long", path);
		return NULL;
	}
	strcpy(sa.sun_path, sock_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		/* ENOENT, ECONNREFUSED: SERVE is left over from a server now gone. */
		io_error(error, "connecting to %s: %s", serve->endpoint, g_strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	GSocket *sock = g_socket_new_from_fd(fd, &e);
	if (!sock) {
		close(fd);
		io_error(error, "socket: %s", e->message);
		g_error_free(e);
		return NULL;
	}
	GIOStream *io = G_IO_STREAM(g_socket_connection_factory_create_connection(sock));
	g_object_unref(sock);
	return io;
}

static bool handshake(ts_conn *c, const ts_target *t, const ts_serve *serve, int64_t deadline,
                      GError **error)
{
	uint8_t challenge[TS_ID_SIZE];
	if (serve && getrandom(challenge, sizeof(challenge), 0) != sizeof(challenge))
		return io_error(error, "getrandom: %s", g_strerror(errno));
	ts_enc enc;
	ts_enc_init(&enc);
	ts_enc_hello(&enc, t->client, serve ? NULL : t->token, serve ? challenge : NULL,
	             TS_MAX_BODY);
	bool ok = send_frame(c, TS_HELLO, 0, 0, 0, enc.buf.data, enc.buf.size, deadline, error);
	ts_enc_clear(&enc);
	if (!ok)
		return false;

	ts_header h;
	uint8_t *body;
	c->max_body = WELCOME_MAX_BODY;
	if (!recv_frame(c, &h, &body, deadline, error))
		return false;
	if (h.kind == TS_GOAWAY) {
		goaway_error(body, h.len, error);
		g_free(body);
		return false;
	}
	if (h.kind != TS_WELCOME) {
		g_free(body);
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL, "a frame of kind %u before WELCOME",
		            h.kind);
		return false;
	}
	int64_t now_ms = lockfs_now_us() / 1000;
	int64_t mono_us = lockfs_mono_us();
	ts_msg m;
	ts_welcome w;
	ok = ts_msg_decode(&m, body, h.len, error) && ts_welcome_decode(&m, &w, error);
	ts_msg_clear(&m);
	if (!ok) {
		g_prefix_error(error, "WELCOME: ");
		return false;
	}
	if (serve && (!w.has_proof || !ts_proof_ok(serve->secret, challenge, w.proof))) {
		g_set_error(error, TS_ERROR, TS_ERROR_REFUSED,
		            "the server at %s cannot prove it serves %s (%s proof)",
		            serve->endpoint, t->dir, w.has_proof ? "a wrong" : "no");
		ok = false;
	} else if (strcmp(w.capability, "admin") != 0 && strcmp(w.capability, "data") != 0) {
		g_set_error(error, TS_ERROR, TS_ERROR_REFUSED,
		            "the token gives capability '%s'; locks need a 'data' or 'admin' token",
		            w.capability);
		ok = false;
	} else if (w.max_body < 4096) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "WELCOME allows bodies of %" G_GUINT64_FORMAT " bytes", w.max_body);
		ok = false;
	}
	c->max_body = (uint32_t)MIN(w.max_body, TS_MAX_BODY);
	c->credit = w.conn_credit;
	c->clock_offset_ms = w.now_ms ? w.now_ms - now_ms : 0;
	c->welcome_server_ms = w.now_ms ? w.now_ms : now_ms;
	c->welcome_mono_us = mono_us;
	ts_welcome_clear(&w);
	return ok;
}

ts_conn *ts_conn_open(const ts_target *t, int64_t deadline, GError **error)
{
	ts_serve serve = { 0 };
	GIOStream *io =
	        t->dir ? connect_local(t, &serve, error) : connect_remote(t, deadline, error);
	if (!io) {
		ts_serve_clear(&serve);
		return NULL;
	}
	ts_conn *c = g_new0(ts_conn, 1);
	c->io = io;
	GIOStream *base = g_object_ref(io);
	if (G_IS_TLS_CONNECTION(io)) {
		g_object_unref(base);
		g_object_get(io, "base-io-stream", &base, NULL);
	}
	c->sock = g_socket_connection_get_socket(G_SOCKET_CONNECTION(base));
	g_object_unref(base); /* IO keeps it, and it keeps the socket */
	c->fd = g_socket_get_fd(c->sock);
	/* A safety net under GIO's own blocking paths (TLS close_notify). */
	g_socket_set_timeout(c->sock, 1);
	c->in = G_POLLABLE_INPUT_STREAM(g_io_stream_get_input_stream(io));
	c->out = G_POLLABLE_OUTPUT_STREAM(g_io_stream_get_output_stream(io));
	c->next_stream = 1;
	bool ok = handshake(c, t, t->dir ? &serve : NULL, deadline, error);
	ts_serve_clear(&serve);
	if (!ok) {
		ts_conn_close(c);
		return NULL;
	}
	return c;
}

void ts_conn_close(ts_conn *c)
{
	if (!c)
		return;
	/* GOAWAY lets the server end the session at once (no 10 s drain). */
	static const uint8_t empty = 0x80;
	GByteArray *f = g_byte_array_new();
	ts_frame_append(f, TS_GOAWAY, 0, 0, 0, &empty, 1);
	g_pollable_output_stream_write_nonblocking(c->out, f->data, f->len, NULL, NULL);
	g_byte_array_free(f, TRUE);
	g_socket_close(c->sock, NULL);
	g_object_unref(c->io);
	g_free(c);
}

int64_t ts_conn_clock_offset_ms(const ts_conn *c)
{
	return c->clock_offset_ms;
}

int64_t ts_conn_server_ms(const ts_conn *c, int64_t mono_us)
{
	return c->welcome_server_ms + (mono_us - c->welcome_mono_us) / 1000;
}

/* Frames already waiting (a GOAWAY, the server's EOF), read without
 * waiting, so a dead connection is found before a request goes out. */
static bool drain(ts_conn *c, GError **error)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };
	for (int n = 0; !c->closing && poll(&p, 1, 0) > 0; n++) {
		if (n == 64)
			return io_error(error, "the server sends frames nobody asked for");
		ts_header h;
		uint8_t *body;
		/* Whole frames arrive together: a short wait is enough. */
		if (!recv_frame(c, &h, &body, lockfs_mono_us() + 100000, error))
			return false;
		bool ok = h.kind != TS_RESPONSE && h.kind != TS_DATA &&
		          handle_other(c, &h, body, lockfs_mono_us() + 100000, error);
		g_free(body);
		if (!ok) {
			if (error && !*error)
				g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
				            "an answer to no request");
			return false;
		}
	}
	if (c->closing)
		return io_error(error, "the server is closing the connection");
	return true;
}

ts_call_result ts_conn_call(ts_conn *c, uint16_t method, const void *body, size_t len,
                            int64_t deadline, ts_msg *answer, ts_failure *failure, GError **error)
{
	memset(answer, 0, sizeof(*answer));
	memset(failure, 0, sizeof(*failure));
	if (!drain(c, error))
		return TS_CALL_BROKEN;
	if (len > c->max_body) {
		g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
		            "a request of %zu bytes, past the %u agreed", len, c->max_body);
		return TS_CALL_BROKEN;
	}
	ts_header h;
	uint8_t *in;
	while (c->credit < len) {
		if (lockfs_mono_us() >= deadline) {
			io_error(error, "no credit from the server within the network timeout");
			return TS_CALL_BROKEN;
		}
		if (!recv_frame(c, &h, &in, deadline, error))
			return TS_CALL_BROKEN;
		bool ok = handle_other(c, &h, in, deadline, error);
		g_free(in);
		if (!ok)
			return TS_CALL_BROKEN;
	}
	uint32_t stream = c->next_stream;
	c->next_stream = c->next_stream == UINT32_MAX ? 1 : c->next_stream + 1;
	if (!send_frame(c, TS_REQUEST, TS_END, method, stream, body, len, deadline, error))
		return TS_CALL_BROKEN;
	c->credit -= len;
	for (;;) {
		/* Frames that keep coming (pings, credit) must not outlast it either. */
		if (lockfs_mono_us() >= deadline) {
			io_error(error, "no answer within the network timeout");
			return TS_CALL_BROKEN;
		}
		if (!recv_frame(c, &h, &in, deadline, error))
			return TS_CALL_BROKEN;
		if (h.kind == TS_RESPONSE || h.kind == TS_DATA) {
			/* One request at a time: anything else is no answer of ours. */
			if (h.kind != TS_RESPONSE || h.stream != stream || !(h.flags & TS_END)) {
				g_free(in);
				g_set_error(error, TS_ERROR, TS_ERROR_PROTOCOL,
				            "a frame of kind %u on stream %u while waiting for %u",
				            h.kind, h.stream, stream);
				return TS_CALL_BROKEN;
			}
			ts_msg m;
			if (!ts_msg_decode(&m, in, h.len, error)) {
				ts_msg_clear(&m);
				return TS_CALL_BROKEN;
			}
			if (!(h.flags & TS_ERR)) {
				*answer = m;
				return TS_CALL_OK;
			}
			bool ok = ts_failure_decode(&m, failure, error);
			ts_msg_clear(&m);
			return ok ? TS_CALL_FAILED : TS_CALL_BROKEN;
		}
		bool ok = handle_other(c, &h, in, deadline, error);
		g_free(in);
		if (!ok)
			return TS_CALL_BROKEN;
	}
}
