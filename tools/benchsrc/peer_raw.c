/* Raw baseline: the physical limit of this machine for the same fan-out. No broker process and no protocol:
 * the publisher thread itself writes the messages' bytes to every subscriber's Unix socket and the same epoll
 * reader cuts the stream into fixed-size records. Whatever a broker adds on top of this is its cost.
 *   raw-socket  gathers the messages published back to back (up to 64 KiB, or until the harness flushes:
 *               when its in-flight window is full, and after every message at a fixed offered load) into one
 *               write() per subscriber: what DESIGN.md asks of the daemon per loop turn.
 *   raw-1write  one write() per message per subscriber. */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

size_t raw_record = 200;
static int listener = -1;
static int subs[65536];
static int nsubs;

static void raw_topic(char *out, size_t n, const char *prefix, int k) { snprintf(out, n, "%s/t%d", prefix, k); }

static int raw_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    (void)prefix;
    (void)ntopics;
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr;
    if (listener < 0) {
        unlink(path);
        listener = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
        if (bind(listener, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(listener, 4096) < 0)
            die("raw: cannot listen on %s", path);
    }
    c->fd = connect_unix(path);
    if (c->fd < 0) return -1;
    int s = accept(listener, NULL, NULL);
    if (s < 0 || nsubs >= (int)(sizeof subs / sizeof subs[0])) return -1;
    subs[nsubs++] = s;
    return 0;
}

static size_t raw_parse(conn_t *c, msg_fn on_msg, void *arg) {
    size_t off = 0;
    while (c->len - off >= raw_record) {
        c->events++;
        if (on_msg) on_msg(c, c->buf + off, raw_record, arg);
        off += raw_record;
    }
    return off;
}

typedef struct {
    int gather;
    size_t len;
    unsigned char buf[1 << 16];
} rawpub_t;

static void *raw_open(int gather) {
    rawpub_t *p = calloc(1, sizeof *p);
    p->gather = gather;
    return p;
}
static void *raw_pub_open(const char *addr, int index) { (void)addr; (void)index; return raw_open(1); }
static void *raw1_pub_open(const char *addr, int index) { (void)addr; (void)index; return raw_open(0); }

static void raw_pub_flush(void *pp) {
    rawpub_t *p = pp;
    if (!p->len) return;
    for (int i = 0; i < nsubs; i++) write_all(subs[i], p->buf, p->len);
    p->len = 0;
}

static int raw_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    rawpub_t *p = pp;
    (void)topic;
    if (p->len + len > sizeof p->buf) raw_pub_flush(p);
    memcpy(p->buf + p->len, payload, len);
    p->len += len;
    if (!p->gather) raw_pub_flush(p);
    return 0;
}

static void raw_pub_poll(void *p) { (void)p; }
static void raw_pub_close(void *p) { (void)p; }

const peer_t peer_raw = {
    .name = "raw-socket",
    .sub_connect = raw_sub_connect,
    .parse = raw_parse,
    .pub_open = raw_pub_open,
    .pub_send = raw_pub_send,
    .pub_poll = raw_pub_poll,
    .pub_close = raw_pub_close,
    .topic_name = raw_topic,
    .pub_flush = raw_pub_flush,
};

const peer_t peer_raw1 = {
    .name = "raw-1write",
    .sub_connect = raw_sub_connect,
    .parse = raw_parse,
    .pub_open = raw1_pub_open,
    .pub_send = raw_pub_send,
    .pub_poll = raw_pub_poll,
    .pub_close = raw_pub_close,
    .topic_name = raw_topic,
    .pub_flush = raw_pub_flush,
};
