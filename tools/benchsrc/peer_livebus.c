/* livebusd peer: the LiveBus wire protocol (Protocol/PROTOCOL.md) over its Unix socket, by hand.
 * Frame (v1): u32 length | u8 version | u8 type | u16 flags | u64 sequence | u16 topicLength | u16 reserved |
 *             u32 crc32(bytes 4..19, topic, body) | topic | body. Big-endian.
 * v2: the same, with bytes 18–19 `trailerLength` (EVENT: the per-session trailer after the body; else 0), and
 *     the CRC over bytes 4..19 and everything after it (topic, body, trailer).
 *
 * What depends on the protocol version, so that a change of the wire (v2: a fixed per-session trailer after the
 * EVENT body) is one edit here:
 *   - frames are read by their length field only (lb_frame_at); nothing else assumes where a frame ends;
 *   - the HELLO offers LB_VERSIONS and is framed with the newest version the daemon accepted so far in this
 *     process: first 2, and on an unsupportedVersion ERROR (or a close) before WELCOME, once more as 1 on a new
 *     connection (lb_connect_hello); the answer is kept, so only the process's first connection can pay the retry.
 *     Every later frame this side sends carries the version WELCOME named;
 *   - an EVENT's parts (sequence, flags, body) are taken apart in one function, lb_event(); it is the only
 *     place that knows where an EVENT's body ends, and the only reader of EVENT flags;
 *   - CRCs are computed in lb_frame() only (for what this side sends: HELLO, SUBSCRIBE, PING, PONG, PUBLISH);
 *     received CRCs are not checked (client cost, not daemon cost; see BENCHMARKS.md).
 * The send instant the harness reads from each body is found by searching for its marker, so even a reader
 * that took the trailer for part of the body would measure the same. */
#define _GNU_SOURCE
#include "common.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

enum { T_HELLO = 1, T_WELCOME = 2, T_SUBSCRIBE = 3, T_PUBLISH = 5, T_EVENT = 6, T_ACK = 7, T_PING = 8,
       T_PONG = 9, T_ERROR = 10, T_BYE = 11, T_UPTODATE = 14 };

/* Versions offered in HELLO (PROTOCOL.md §4.1). A daemon that speaks only 1 accepts [1, 2] (it needs 1 in the
 * list) and answers version 1; one that speaks 2 answers 2. */
#define LB_VERSIONS "[1,2]"
/* v2 EVENT (the `wire` branch's PROTOCOL.md §2, 2026-12-01): header bytes 18–19, `reserved` in v1, are
 * `trailerLength`, the bytes of the per-session trailer at the end of the frame (v2 writes 48). Only lb_event()
 * reads it, and only for the body's length (the harness's stamp search does not need it). */
/* Frame version of the next HELLO: the newest first, the one that worked afterwards. */
static int lb_hello_frame_version = 2;
static int lb_refused_version; /* the last ERROR before WELCOME was unsupportedVersion */
#define LB_HEADER 24
#define LB_MAX_FRAME 65536

static void put32(unsigned char *p, uint32_t v) { p[0] = v >> 24; p[1] = v >> 16; p[2] = v >> 8; p[3] = v; }
static uint32_t get32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

size_t lb_frame(unsigned char *out, int version, int type, uint64_t seq, const char *topic,
                const unsigned char *body, size_t blen) {
    size_t tl = topic ? strlen(topic) : 0;
    put32(out, (uint32_t)(20 + tl + blen));
    out[4] = (unsigned char)(version > 0 ? version : 1);
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

/* The complete frame at buf[0..avail), by its length field: its total size, 0 when incomplete. A length the
 * protocol cannot have is fatal (the stream is lost). */
static size_t lb_frame_at(const unsigned char *buf, size_t avail) {
    if (avail < 4) return 0;
    size_t flen = (size_t)get32(buf) + 4;
    if (flen < LB_HEADER || flen > LB_MAX_FRAME) die("livebusd: bad frame length %zu", flen);
    return avail >= flen ? flen : 0;
}

static size_t lb_topic_len(const unsigned char *f) { return (size_t)f[16] << 8 | f[17]; }
/* What follows the topic: the body of every frame but a v2 EVENT (which adds its trailer). */
static const unsigned char *lb_rest(const unsigned char *f, size_t flen, size_t *n) {
    size_t tl = lb_topic_len(f);
    if (LB_HEADER + tl > flen) die("livebusd: topic length %zu past the frame (%zu bytes)", tl, flen);
    *n = flen - LB_HEADER - tl;
    return f + LB_HEADER + tl;
}

typedef struct {
    uint64_t seq;
    int reconvert; /* flag bit 3: the same event again with re-converted instants */
    const unsigned char *body;
    size_t blen;
} lb_event_t;

/* The only reader of EVENT frames' layout (see the top of this file). */
static void lb_event(const unsigned char *f, size_t flen, lb_event_t *e) {
    e->seq = 0;
    for (int i = 0; i < 8; i++) e->seq = e->seq << 8 | f[8 + i];
    e->reconvert = (f[7] & 0x08) != 0;
    e->body = lb_rest(f, flen, &e->blen);
    if (f[4] >= 2) {
        size_t trailer = (size_t)f[18] << 8 | f[19];
        if (trailer > e->blen) die("livebusd: EVENT trailerLength %zu past the frame (%zu bytes)", trailer, flen);
        e->blen -= trailer;
    }
}

static int send_frame(conn_t *c, int type, uint64_t seq, const char *topic, const char *body) {
    unsigned char f[4096];
    size_t n = lb_frame(f, type == T_HELLO ? lb_hello_frame_version : c->version, type, seq, topic,
                        (const unsigned char *)body, strlen(body));
    return write_all(c->fd, f, n);
}

static void lb_welcome(conn_t *c, const unsigned char *f, size_t flen) {
    size_t blen;
    const unsigned char *b = lb_rest(f, flen, &blen);
    const char *k = memmem(b, blen, "\"resumeToken\":\"", 15);
    if (k) {
        k += 15;
        size_t i = 0;
        while (i < sizeof c->token - 1 && (const unsigned char *)k + i < b + blen && k[i] != '"') {
            c->token[i] = k[i];
            i++;
        }
        c->token[i] = 0;
    }
    const char *v = memmem(b, blen, "\"version\":", 10);
    c->version = v ? atoi(v + 10) : 1;
    if (c->version < 1) c->version = 1;
}

/* Reads frames until one of `want` arrives; other frames are handled (PING answered, WELCOME token kept).
 * Returns the frame type found, -1 on error. Leftover input stays in c->buf. */
static size_t lb_parse(conn_t *c, msg_fn on_msg, void *arg);
static int lb_wait(conn_t *c, int want, int timeout_ms) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        /* scan complete frames at the front for `want` */
        size_t off = 0, flen;
        while ((flen = lb_frame_at(c->buf + off, c->len - off)) > 0) {
            int type = c->buf[off + 5];
            if (type == want || type == T_ERROR) {
                unsigned char *f = c->buf + off;
                if (type == T_WELCOME) lb_welcome(c, f, flen);
                if (type == T_ERROR) {
                    size_t blen;
                    const unsigned char *b = lb_rest(f, flen, &blen);
                    lb_refused_version = memmem(b, blen, "unsupportedVersion", 18) != NULL;
                    if (!lb_refused_version) fprintf(stderr, "livebusd ERROR: %.*s\n", (int)blen, (const char *)b);
                }
                /* consume everything up to and including this frame; earlier frames go through the parser */
                conn_t tmp = *c;
                tmp.len = off;
                lb_parse(&tmp, NULL, NULL);
                c->events = tmp.events;
                c->uptodates = tmp.uptodates;
                c->last_seq = tmp.last_seq;
                c->extra = tmp.extra;
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

/* Connects c to addr and sends the HELLO body (its clientTime is filled in here); 0 once WELCOME arrived. */
static int lb_connect_hello(conn_t *c, const char *addr, const char *body_fmt, const char *resume_json) {
    static int version_known;
    for (int attempt = 0; attempt < 2; attempt++) {
        char body[1024];
        snprintf(body, sizeof body, body_fmt, (long long)wall_ms(), resume_json ? resume_json : "",
                 resume_json ? "," : "");
        c->fd = connect_addr(addr);
        if (c->fd < 0) return -1;
        c->version = 0;
        c->len = 0;
        lb_refused_version = 0;
        if (send_frame(c, T_HELLO, 0, NULL, body) == 0 && lb_wait(c, T_WELCOME, 10000) == T_WELCOME) {
            version_known = 1;
            return 0;
        }
        close(c->fd);
        c->fd = -1;
        if (version_known || lb_hello_frame_version == 1) break;
        /* a daemon of protocol v1 refuses a v2-framed HELLO (unsupportedVersion, then closes) */
        lb_hello_frame_version = 1;
    }
    fprintf(stderr, "bench: livebusd did not answer HELLO with WELCOME (framed as version %d)\n",
            lb_hello_frame_version);
    return -1;
}

static const char SESSION_HELLO[] =
    "{\"appState\":\"foreground\",\"client\":\"livebus-bench/0.1\",\"clientTime\":%lld,"
    "\"device\":\"iphone-16-pro\",\"posture\":{\"foldState\":\"flat\",\"orientation\":\"portrait\"},"
    "%s%s\"role\":\"session\",\"versions\":" LB_VERSIONS "}";

int lb_connect_session(conn_t *c, const char *addr, const char *resume_json) {
    return lb_connect_hello(c, addr, SESSION_HELLO, resume_json);
}

static int lb_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    (void)ntopics;
    if (lb_connect_session(c, addr, NULL) < 0) return -1;
    char body[512];
    snprintf(body, sizeof body, "{\"patterns\":[\"%s/>\"]}", prefix);
    if (send_frame(c, T_SUBSCRIBE, 0, NULL, body) < 0) return -1;
    /* SUBSCRIBE has no reply when no topic exists yet; a PING behind it is answered after it was applied. */
    snprintf(body, sizeof body, "{\"t1\":%lld}", (long long)wall_ms());
    if (send_frame(c, T_PING, 0, NULL, body) < 0) return -1;
    return lb_wait(c, T_PONG, 10000) == T_PONG ? 0 : -1;
}

static void answer_ping(conn_t *c, const unsigned char *body, size_t blen) {
    const char *k = memmem(body, blen, "\"t1\":", 5);
    long long t1 = k ? atoll(k + 5) : 0;
    long long now = (long long)wall_ms();
    char b[128];
    snprintf(b, sizeof b, "{\"t1\":%lld,\"t2\":%lld,\"t3\":%lld}", t1, now, now);
    send_frame(c, T_PONG, 0, NULL, b);
}

static size_t lb_parse(conn_t *c, msg_fn on_msg, void *arg) {
    size_t off = 0, flen;
    while ((flen = lb_frame_at(c->buf + off, c->len - off)) > 0) {
        const unsigned char *f = c->buf + off;
        size_t blen;
        const unsigned char *body;
        switch (f[5]) {
        case T_EVENT: {
            lb_event_t e;
            lb_event(f, flen, &e);
            if (e.reconvert) { /* the same event again, instants re-converted (client clock moved) */
                c->extra++;
                break;
            }
            c->last_seq = e.seq;
            c->events++;
            if (on_msg) on_msg(c, e.body, e.blen, arg);
            break;
        }
        case T_PING:
            body = lb_rest(f, flen, &blen);
            answer_ping(c, body, blen);
            break;
        case T_UPTODATE: c->uptodates++; break;
        case T_ERROR:
            body = lb_rest(f, flen, &blen);
            fprintf(stderr, "livebusd ERROR to %d: %.*s\n", c->index, (int)blen, (const char *)body);
            break;
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
    /* the resume slot is unused: "%s%s" stays empty */
    if (lb_connect_hello(&p->c, addr,
                         "{\"client\":\"livebus-bench/0.1\",\"clientTime\":%lld,%s%s\"role\":\"publisher\","
                         "\"versions\":" LB_VERSIONS "}",
                         NULL) < 0)
        return NULL;
    p->next_id = 1;
    return p;
}

/* Reads what is there (MSG_DONTWAIT), counts ACKs, answers nothing (a publisher gets no PING). */
static void lb_pub_poll(void *pp) {
    lbpub_t *p = pp;
    for (;;) {
        ssize_t r = recv(p->c.fd, p->c.buf + p->c.len, p->c.cap - p->c.len, MSG_DONTWAIT);
        if (r <= 0) break;
        p->c.len += (size_t)r;
        size_t off = 0, flen;
        while ((flen = lb_frame_at(p->c.buf + off, p->c.len - off)) > 0) {
            const unsigned char *f = p->c.buf + off;
            if (f[5] == T_ACK) p->acks++;
            else if (f[5] == T_ERROR) {
                size_t blen;
                const unsigned char *b = lb_rest(f, flen, &blen);
                fprintf(stderr, "livebusd ERROR to publisher: %.*s\n", (int)blen, (const char *)b);
            }
            off += flen;
        }
        memmove(p->c.buf, p->c.buf + off, p->c.len - off);
        p->c.len -= off;
    }
}

static int lb_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    lbpub_t *p = pp;
    size_t n = lb_frame(p->frame, p->c.version, T_PUBLISH, p->next_id++, topic, payload, len);
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

/* ---- publish workload: durable PUBLISH → ACK per second of one publisher ---- */
int lb_publish_bench(const char *addr, const char *topic, const unsigned char *payload, size_t len, int window,
                     double warmup_s, double seconds, const char *label) {
    lbpub_t *p = lb_pub_open(addr, 0);
    if (!p) die("publish: publisher could not connect");
    enum { BATCH = 64 };
    size_t one = 24 + strlen(topic) + len;
    unsigned char *out = malloc(one * BATCH);
    unsigned char stamped[512];
    memcpy(stamped, payload, len);
    uint64_t sent = 0, writes = 0;
    uint64_t t0 = now_ns(), m0 = t0 + (uint64_t)(warmup_s * 1e9), m1 = m0 + (uint64_t)(seconds * 1e9);
    uint64_t acks0 = 0, acks1 = 0, tw0 = 0, tw1 = 0, last_ack = 0, last_ack_t = t0;
    while (!tw1) {
        /* fill the window: up to BATCH frames per write, as a pipelining client does */
        while (sent - p->acks < (uint64_t)window) {
            size_t n = 0, k = 0;
            while (k < BATCH && sent + k - p->acks < (uint64_t)window) {
                n += lb_frame(out + n, p->c.version, T_PUBLISH, p->next_id++, topic, stamped, len);
                k++;
            }
            if (write_all(p->c.fd, out, n) < 0) die("publish: write failed: %s", strerror(errno));
            sent += k;
            writes++;
        }
        struct pollfd pfd = {.fd = p->c.fd, .events = POLLIN};
        poll(&pfd, 1, 100);
        lb_pub_poll(p);
        uint64_t t = now_ns();
        if (p->acks != last_ack) last_ack = p->acks, last_ack_t = t;
        else if (t - last_ack_t > 10000000000ull)
            die("publish: no ACK for 10 s (%llu sent, %llu acknowledged)", (unsigned long long)sent,
                (unsigned long long)p->acks);
        if (!tw0 && t >= m0) tw0 = t, acks0 = p->acks;
        /* the window lasts until one full window of ACKs arrived in it (at most 10 s more): a daemon whose turn
         * of `window` PUBLISHes takes longer than the window still gets a rate, not 0 */
        if (tw0 && t >= m1 && (p->acks - acks0 >= (uint64_t)window || t >= m1 + 10000000000ull))
            tw1 = t, acks1 = p->acks;
    }
    /* the rest of the window is acknowledged before the connection closes (nothing is left half-done) */
    uint64_t drain = now_ns() + 5000000000ull;
    while (p->acks < sent && now_ns() < drain) {
        struct pollfd pfd = {.fd = p->c.fd, .events = POLLIN};
        poll(&pfd, 1, 50);
        lb_pub_poll(p);
    }
    double secs = (double)(tw1 - tw0) / 1e9;
    printf("peer=livebusd mode=publish sync=%s window=%d bytes=%zu seconds=%.2f acks_per_s=%.0f sent=%llu "
           "acked=%llu writes=%llu\n",
           label, window, len, secs, (double)(acks1 - acks0) / secs, (unsigned long long)sent,
           (unsigned long long)p->acks, (unsigned long long)writes);
    fflush(stdout);
    free(out);
    lb_pub_close(p);
    return p->acks == sent ? 0 : 1;
}
