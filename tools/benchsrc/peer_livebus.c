/* livebusd peer: the LiveBus wire protocol v1 (Protocol/PROTOCOL.md) over its Unix socket, by hand.
 * Frame: u32 length | u8 version | u8 type | u16 flags | u64 sequence | u16 topicLength | u16 reserved |
 *        u32 crc32(bytes 4..19, topic, body) | topic | body. Big-endian. */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <zlib.h>

enum { T_HELLO = 1, T_WELCOME = 2, T_SUBSCRIBE = 3, T_PUBLISH = 5, T_EVENT = 6, T_ACK = 7, T_PING = 8,
       T_PONG = 9, T_ERROR = 10, T_BYE = 11, T_UPTODATE = 14 };

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t lb_frame(unsigned char *out, int type, uint64_t seq, const char *topic, const unsigned char *body,
                size_t blen) {
    size_t tl = topic ? strlen(topic) : 0;
    put32(out, (uint32_t)(20 + tl + blen));
    out[4] = 1;
    out[5] = (unsigned char)type;
    out[6] = out[7] = 0;
    for (int i = 0; i < 8; i++) out[8 + i] = (unsigned char)(seq >> (56 - 8 * i));
    out[16] = (unsigned char)(tl >> 8);
    out[17] = (unsigned char)tl;
    out[18] = out[19] = 0;
    if (tl) memcpy(out + 24, topic, tl);
    if (blen) memcpy(out + 24 + tl, body, blen);
    uLong crc = crc32(0L, out + 4, 16);
    crc = crc32(crc, out + 24, (uInt)(tl + blen));
    put32(out + 20, (uint32_t)crc);
    return 24 + tl + blen;
}

static int send_frame(int fd, int type, uint64_t seq, const char *topic, const char *body) {
    unsigned char f[4096];
    size_t n = lb_frame(f, type, seq, topic, (const unsigned char *)body, strlen(body));
    return write_all(fd, f, n);
}

/* Reads frames until one of `want` arrives; other frames are handled (PING answered, WELCOME token kept).
 * Returns the frame type found, -1 on error. Leftover input stays in c->buf. */
static size_t lb_parse(conn_t *c, msg_fn on_msg, void *arg);
static int lb_wait(conn_t *c, int want, int timeout_ms) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        /* scan complete frames at the front for `want` */
        size_t off = 0;
        while (c->len - off >= 24) {
            uint32_t flen = get32(c->buf + off) + 4;
            if (c->len - off < flen) break;
            int type = c->buf[off + 5];
            if (type == want || type == T_ERROR) {
                unsigned char *f = c->buf + off;
                if (type == T_WELCOME) {
                    const char *k = memmem(f + 24, flen - 24, "\"resumeToken\":\"", 15);
                    if (k) {
                        k += 15;
                        size_t i = 0;
                        while (i < sizeof c->token - 1 && k[i] != '"') { c->token[i] = k[i]; i++; }
                        c->token[i] = 0;
                    }
                }
                if (type == T_ERROR)
                    fprintf(stderr, "livebusd ERROR: %.*s\n", (int)(flen - 24), (const char *)f + 24);
                /* consume everything up to and including this frame; earlier frames go through the parser */
                conn_t tmp = *c;
                tmp.len = off;
                lb_parse(&tmp, NULL, NULL);
                c->events = tmp.events;
                c->uptodates = tmp.uptodates;
                c->last_seq = tmp.last_seq;
                memmove(c->buf, c->buf + off + flen, c->len - off - flen);
                c->len -= off + flen;
                return type == want ? type : -1;
            }
            off += flen;
        }
        uint64_t t = now_ns();
        if (t >= deadline) return -1;
        if (read_more(c, (int)((deadline - t) / 1000000ull) + 1) <= 0) return -1;
    }
}

int lb_hello_session(conn_t *c, const char *resume_json) {
    char body[1024];
    snprintf(body, sizeof body,
             "{\"appState\":\"foreground\",\"client\":\"livebus-bench/0.1\",\"clientTime\":%lld,"
             "\"device\":\"iphone-16-pro\",\"posture\":{\"foldState\":\"flat\",\"orientation\":\"portrait\"},"
             "%s%s\"role\":\"session\",\"versions\":[1]}",
             (long long)wall_ms(), resume_json ? resume_json : "", resume_json ? "," : "");
    if (send_frame(c->fd, T_HELLO, 0, NULL, body) < 0) return -1;
    return lb_wait(c, T_WELCOME, 10000) == T_WELCOME ? 0 : -1;
}

static int lb_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    (void)ntopics;
    c->fd = connect_addr(addr);
    if (c->fd < 0) return -1;
    if (lb_hello_session(c, NULL) < 0) return -1;
    char body[512];
    snprintf(body, sizeof body, "{\"patterns\":[\"%s/>\"]}", prefix);
    if (send_frame(c->fd, T_SUBSCRIBE, 0, NULL, body) < 0) return -1;
    /* SUBSCRIBE has no reply when no topic exists yet; a PING behind it is answered after it was applied. */
    snprintf(body, sizeof body, "{\"t1\":%lld}", (long long)wall_ms());
    if (send_frame(c->fd, T_PING, 0, NULL, body) < 0) return -1;
    return lb_wait(c, T_PONG, 10000) == T_PONG ? 0 : -1;
}

static void answer_ping(conn_t *c, const unsigned char *body, size_t blen) {
    const char *k = memmem(body, blen, "\"t1\":", 5);
    long long t1 = k ? atoll(k + 5) : 0;
    long long now = (long long)wall_ms();
    char b[128];
    snprintf(b, sizeof b, "{\"t1\":%lld,\"t2\":%lld,\"t3\":%lld}", t1, now, now);
    send_frame(c->fd, T_PONG, 0, NULL, b);
}

static size_t lb_parse(conn_t *c, msg_fn on_msg, void *arg) {
    size_t off = 0;
    while (c->len - off >= 24) {
        const unsigned char *f = c->buf + off;
        uint32_t flen = get32(f) + 4;
        if (flen < 24 || flen > 65536) die("livebusd: bad frame length %u", flen);
        if (c->len - off < flen) break;
        int type = f[5];
        size_t tl = (size_t)f[16] << 8 | f[17];
        const unsigned char *body = f + 24 + tl;
        size_t blen = flen - 24 - tl;
        switch (type) {
        case T_EVENT: {
            if (f[7] & 0x08) { /* reconvert: the same event again with re-converted instants (client clock moved) */
                c->extra++;
                break;
            }
            uint64_t seq = 0;
            for (int i = 0; i < 8; i++) seq = seq << 8 | f[8 + i];
            c->last_seq = seq;
            c->events++;
            if (on_msg) on_msg(c, body, blen, arg);
            break;
        }
        case T_PING: answer_ping(c, body, blen); break;
        case T_UPTODATE: c->uptodates++; break;
        case T_ERROR: fprintf(stderr, "livebusd ERROR to %d: %.*s\n", c->index, (int)blen, (const char *)body); break;
        default: break;
        }
        off += flen;
    }
    return off;
}

static void lb_topic(char *out, size_t n, const char *prefix, int k) { snprintf(out, n, "%s/t%d", prefix, k); }

/* ---- publisher ---- */
typedef struct {
    conn_t c;
    uint64_t next_id;
    uint64_t acks;
    unsigned char frame[8192];
} lbpub_t;

static void *lb_pub_open(const char *addr, int index) {
    lbpub_t *p = calloc(1, sizeof *p);
    p->c.buf = malloc(BENCH_BUF);
    p->c.cap = BENCH_BUF;
    p->c.index = -1 - index;
    p->c.fd = connect_addr(addr);
    if (p->c.fd < 0) return NULL;
    char body[256];
    snprintf(body, sizeof body,
             "{\"client\":\"livebus-bench/0.1\",\"clientTime\":%lld,\"role\":\"publisher\",\"versions\":[1]}",
             (long long)wall_ms());
    if (send_frame(p->c.fd, T_HELLO, 0, NULL, body) < 0) return NULL;
    if (lb_wait(&p->c, T_WELCOME, 10000) != T_WELCOME) return NULL;
    p->next_id = 1;
    return p;
}

static void lb_pub_poll(void *pp) {
    lbpub_t *p = pp;
    for (;;) {
        ssize_t r = recv(p->c.fd, p->c.buf + p->c.len, p->c.cap - p->c.len, MSG_DONTWAIT);
        if (r <= 0) break;
        p->c.len += (size_t)r;
        size_t off = 0;
        while (p->c.len - off >= 24) {
            const unsigned char *f = p->c.buf + off;
            uint32_t flen = get32(f) + 4;
            if (p->c.len - off < flen) break;
            if (f[5] == T_ACK) p->acks++;
            else if (f[5] == T_ERROR) fprintf(stderr, "livebusd ERROR to publisher: %.*s\n", (int)(flen - 24), f + 24);
            off += flen;
        }
        memmove(p->c.buf, p->c.buf + off, p->c.len - off);
        p->c.len -= off;
    }
}

static int lb_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    lbpub_t *p = pp;
    size_t n = lb_frame(p->frame, T_PUBLISH, p->next_id++, topic, payload, len);
    int r = write_all(p->c.fd, p->frame, n);
    if ((p->next_id & 31) == 0) lb_pub_poll(p);
    return r;
}

static void lb_pub_close(void *pp) {
    lbpub_t *p = pp;
    if (!p) return;
    lb_pub_poll(p);
    close(p->c.fd);
}

const peer_t peer_livebus = {
    .name = "livebusd",
    .sub_connect = lb_sub_connect,
    .parse = lb_parse,
    .pub_open = lb_pub_open,
    .pub_send = lb_pub_send,
    .pub_poll = lb_pub_poll,
    .pub_close = lb_pub_close,
    .topic_name = lb_topic,
};

/* ACK bookkeeping for the resume workload */
uint64_t lb_pub_acks(void *pp) { return ((lbpub_t *)pp)->acks; }
void lb_pub_reset_acks(void *pp) { ((lbpub_t *)pp)->acks = 0; }
