#ifndef LIVEBUS_CLIBWEBSOCKETS_SHIM_H
#define LIVEBUS_CLIBWEBSOCKETS_SHIM_H
/* libwebsockets (Debian 12 libwebsockets-dev 4.1.6, built with LWS_WITH_LIBUV; the libuv event library is the
 * plugin libwebsockets-evlib_uv.so, package libwebsockets-evlib-uv) serving the dashboard's HTTP on the daemon's
 * own uv_loop_t ("foreign loop", LWS_SERVER_OPTION_LIBUV). The few helpers below keep the header juggling of
 * lws's HTTP API (LWS_PRE, header building, SSE) in C; the loop pointer is passed opaquely so that no second copy
 * of uv.h's types meets CLibUV's in Swift. */
#include <libwebsockets.h>
#include <stdlib.h>
#include <string.h>

#if !defined(LWS_WITH_LIBUV) || !defined(LWS_ROLE_H1) || !defined(LWS_WITH_UNIX_SOCK)
#error "LiveBus needs libwebsockets built with LWS_WITH_LIBUV, LWS_ROLE_H1 and LWS_WITH_UNIX_SOCK (Debian 12's is)"
#endif

/* One listening HTTP/1.1 server on `uvloop` (a uv_loop_t *): TCP on iface:port, or a Unix socket at `path` when
 * `unix_path` is non-zero (iface is then the path). Returns the context or NULL; `cb` gets every callback. */
static inline struct lws_context *livebus_lws_create(void *uvloop, const char *iface, int port, int unix_path,
                                                     void *user, lws_callback_function *cb) {
    struct lws_protocols *protocols = calloc(2, sizeof(struct lws_protocols));
    void **loops = calloc(1, sizeof(void *));
    if (!protocols || !loops) { free(protocols); free(loops); return NULL; }
    protocols[0].name = "livebus-dashboard";
    protocols[0].callback = cb;
    protocols[0].per_session_data_size = 0;
    protocols[0].rx_buffer_size = 0;
    loops[0] = uvloop;
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.port = unix_path ? 0 : port;
    info.iface = iface;
    info.protocols = protocols;
    info.foreign_loops = loops;
    info.user = user;
    info.timeout_secs = 20;
    info.options = LWS_SERVER_OPTION_LIBUV | LWS_SERVER_OPTION_DISABLE_IPV6 |
                   LWS_SERVER_OPTION_VALIDATE_UTF8;
    if (unix_path) info.options |= LWS_SERVER_OPTION_UNIX_SOCK;
    /* the daemon has its own log; lws's own notices would go to stderr in another format */
    lws_set_log_level(LLL_ERR, NULL);
    return lws_create_context(&info);
}

/* The port actually listened on (the first vhost's), or -1. */
static inline int livebus_lws_port(struct lws_context *ctx) {
    struct lws_vhost *vh = lws_get_vhost_by_name(ctx, "default");
    return vh ? lws_get_vhost_listen_port(vh) : -1;
}

/* Writes a complete response: status, content type, length, the security headers, an optional extra header
 * (`extra_name` like "set-cookie:"), then the body. Returns what lws_http_transaction_completed returns (non-zero:
 * close the connection) or -1 when lws refused a write. */
static inline int livebus_lws_respond(struct lws *wsi, unsigned int status, const char *content_type,
                                      const unsigned char *body, size_t len, const char *extra_name,
                                      const char *extra_value) {
    size_t cap = LWS_PRE + 2048 + len;
    unsigned char *buf = malloc(cap);
    if (!buf) return -1;
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + LWS_PRE + 2048;
    int bad = lws_add_http_common_headers(wsi, status, content_type, (lws_filepos_t)len, &p, end);
    static const char *const names[] = {"cache-control:", "x-content-type-options:", "referrer-policy:",
                                        "content-security-policy:"};
    static const char *const values[] = {"no-store", "nosniff", "no-referrer",
                                         "default-src 'self'; img-src 'self' data:; style-src 'self'; "
                                         "script-src 'self'; connect-src 'self'"};
    for (int i = 0; !bad && i < 4; i++)
        bad = lws_add_http_header_by_name(wsi, (const unsigned char *)names[i], (const unsigned char *)values[i],
                                          (int)strlen(values[i]), &p, end);
    if (!bad && extra_name && extra_value)
        bad = lws_add_http_header_by_name(wsi, (const unsigned char *)extra_name,
                                          (const unsigned char *)extra_value, (int)strlen(extra_value), &p, end);
    if (bad || lws_finalize_write_http_header(wsi, start, &p, end)) { free(buf); return -1; }
    if (len > 0) {
        memcpy(buf + LWS_PRE, body, len);
        if (lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_HTTP_FINAL) != (int)len) { free(buf); return -1; }
    }
    free(buf);
    return lws_http_transaction_completed(wsi);
}

/* Starts a Server-Sent Events stream (text/event-stream, no length, no timeout). 0 on success. */
static inline int livebus_lws_sse_start(struct lws *wsi) {
    unsigned char buf[LWS_PRE + 1024];
    unsigned char *start = buf + LWS_PRE, *p = start, *end = buf + sizeof buf;
    if (lws_add_http_common_headers(wsi, HTTP_STATUS_OK, "text/event-stream", LWS_ILLEGAL_HTTP_CONTENT_LEN, &p,
                                    end))
        return 1;
    if (lws_add_http_header_by_name(wsi, (const unsigned char *)"cache-control:", (const unsigned char *)"no-store",
                                    8, &p, end))
        return 1;
    if (lws_finalize_write_http_header(wsi, start, &p, end)) return 1;
    /* An HTTP/1.1 stream that stays open: no pending timeout (lws_http_mark_sse is for h2 substreams only). */
    lws_set_timeout(wsi, NO_PENDING_TIMEOUT, 0);
    return 0;
}

/* Writes one chunk of an SSE stream. 0 on success. */
static inline int livebus_lws_sse_write(struct lws *wsi, const unsigned char *data, size_t len) {
    unsigned char *buf = malloc(LWS_PRE + len);
    if (!buf) return 1;
    memcpy(buf + LWS_PRE, data, len);
    int n = lws_write(wsi, buf + LWS_PRE, len, LWS_WRITE_HTTP);
    free(buf);
    return n != (int)len;
}

/* The value of `name` ("token=") in the query string into buf, or NULL. */
static inline const char *livebus_lws_urlarg(struct lws *wsi, const char *name, char *buf, int len) {
    return lws_get_urlarg_by_name(wsi, name, buf, len);
}

/* 1 for a POST request. */
static inline int livebus_lws_is_post(struct lws *wsi) { return lws_hdr_total_length(wsi, WSI_TOKEN_POST_URI) > 0; }

/* Copies the Cookie header (0 = absent, -1 = too long) and the Host header. */
static inline int livebus_lws_cookie(struct lws *wsi, char *buf, int len) {
    return lws_hdr_copy(wsi, buf, len, WSI_TOKEN_HTTP_COOKIE);
}
static inline int livebus_lws_host(struct lws *wsi, char *buf, int len) {
    return lws_hdr_copy(wsi, buf, len, WSI_TOKEN_HOST);
}
#endif
