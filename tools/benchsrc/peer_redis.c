/* Redis pub/sub peer: SUBSCRIBE over redis-server's unixsocket (RESP2 parsed by hand on the subscriber side),
 * PUBLISH through hiredis with pipelining (replies drained in batches). */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hiredis/hiredis.h>

static void rd_topic(char *out, size_t n, const char *prefix, int k) { snprintf(out, n, "%s.t%d", prefix, k); }

/* Parses one RESP bulk string "$<n>\r\n<data>\r\n" at p (end e). Returns pointer past it, NULL if incomplete. */
static const unsigned char *bulk(const unsigned char *p, const unsigned char *e, const unsigned char **data,
                                 size_t *n) {
    if (p >= e) return NULL;
    if (*p != '$') die("redis: expected bulk string, got '%c'", *p);
    const unsigned char *q = memchr(p, '\n', (size_t)(e - p));
    if (!q) return NULL;
    long len = atol((const char *)p + 1);
    q++;
    if (e - q < len + 2) return NULL;
    *data = q;
    *n = (size_t)len;
    return q + len + 2;
}

/* Push messages: *3 $7 message $chan $payload, or *3 $9 subscribe $chan :count. */
static size_t rd_parse(conn_t *c, msg_fn on_msg, void *arg) {
    const unsigned char *p = c->buf, *e = c->buf + c->len;
    while (p < e) {
        const unsigned char *start = p;
        if (*p != '*') die("redis: unexpected reply '%.*s'", (int)(e - p > 60 ? 60 : e - p), p);
        const unsigned char *q = memchr(p, '\n', (size_t)(e - p));
        if (!q) return (size_t)(start - c->buf);
        p = q + 1;
        const unsigned char *kind, *chan, *data;
        size_t kn, cn, dn;
        if (!(p = bulk(p, e, &kind, &kn))) return (size_t)(start - c->buf);
        if (!(p = bulk(p, e, &chan, &cn))) return (size_t)(start - c->buf);
        if (kn == 7 && memcmp(kind, "message", 7) == 0) {
            if (!(p = bulk(p, e, &data, &dn))) return (size_t)(start - c->buf);
            c->events++;
            if (on_msg) on_msg(c, data, dn, arg);
        } else {
            /* subscribe confirmation: ":<count>\r\n" */
            if (p >= e) return (size_t)(start - c->buf);
            q = memchr(p, '\n', (size_t)(e - p));
            if (!q) return (size_t)(start - c->buf);
            p = q + 1;
            c->uptodates++;
        }
    }
    return (size_t)(p - c->buf);
}

static int rd_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    c->fd = connect_addr(addr);
    if (c->fd < 0) return -1;
    /* SUBSCRIBE t0 … t(T-1) as one RESP array */
    size_t cap = 64 + (size_t)ntopics * 80, n = 0;
    char *cmd = malloc(cap);
    n += (size_t)snprintf(cmd + n, cap - n, "*%d\r\n$9\r\nSUBSCRIBE\r\n", ntopics + 1);
    for (int k = 0; k < ntopics; k++) {
        char t[128];
        rd_topic(t, sizeof t, prefix, k);
        n += (size_t)snprintf(cmd + n, cap - n, "$%zu\r\n%s\r\n", strlen(t), t);
    }
    int r = write_all(c->fd, cmd, n);
    free(cmd);
    if (r < 0) return -1;
    while (c->uptodates < (uint64_t)ntopics) {
        if (read_more(c, 10000) <= 0) return -1;
        size_t used = rd_parse(c, NULL, NULL);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    return 0;
}

typedef struct {
    redisContext *ctx;
    int pending;
} rdpub_t;

static void *rd_pub_open(const char *addr, int index) {
    (void)index;
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr;
    rdpub_t *p = calloc(1, sizeof *p);
    p->ctx = redisConnectUnix(path);
    if (!p->ctx || p->ctx->err) {
        fprintf(stderr, "redis: connect %s: %s\n", path, p->ctx ? p->ctx->errstr : "?");
        return NULL;
    }
    return p;
}

static void rd_drain(rdpub_t *p, int keep) {
    while (p->pending > keep) {
        void *reply = NULL;
        if (redisGetReply(p->ctx, &reply) != REDIS_OK) die("redis: publish reply: %s", p->ctx->errstr);
        freeReplyObject(reply);
        p->pending--;
    }
}

static int rd_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    rdpub_t *p = pp;
    redisAppendCommand(p->ctx, "PUBLISH %s %b", topic, payload, len);
    int done = 0;
    do {
        if (redisBufferWrite(p->ctx, &done) != REDIS_OK) return -1;
    } while (!done);
    p->pending++;
    if (p->pending >= 64) rd_drain(p, 0);
    return 0;
}

static void rd_pub_poll(void *pp) { (void)pp; }

static void rd_pub_close(void *pp) {
    rdpub_t *p = pp;
    if (!p) return;
    rd_drain(p, 0);
    redisFree(p->ctx);
}

const peer_t peer_redis = {
    .name = "redis",
    .sub_connect = rd_sub_connect,
    .parse = rd_parse,
    .pub_open = rd_pub_open,
    .pub_send = rd_pub_send,
    .pub_poll = rd_pub_poll,
    .pub_close = rd_pub_close,
    .topic_name = rd_topic,
};
