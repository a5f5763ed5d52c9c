/* NATS core peer over TCP loopback (nats-server has no Unix socket listener). Subscribers speak the text
 * protocol by hand (CONNECT, SUB "<prefix>.>", PING/PONG, MSG parsing); the publisher is libnats with
 * SendAsap (one write per publish, no flusher delay). */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <nats/nats.h>

static void nt_topic(char *out, size_t n, const char *prefix, int k) { snprintf(out, n, "%s.t%d", prefix, k); }

static size_t nt_parse(conn_t *c, msg_fn on_msg, void *arg) {
    size_t off = 0;
    while (off < c->len) {
        unsigned char *p = c->buf + off;
        size_t avail = c->len - off;
        unsigned char *nl = memchr(p, '\n', avail);
        if (!nl) break;
        size_t ll = (size_t)(nl - p) + 1;
        if (avail >= 4 && memcmp(p, "MSG ", 4) == 0) {
            /* MSG <subject> <sid> [reply-to] <#bytes>\r\n : the size is the last token */
            unsigned char *q = nl - 1; /* '\r' */
            while (q > p && q[-1] != ' ') q--;
            size_t bytes = (size_t)atol((const char *)q);
            if (avail < ll + bytes + 2) break;
            c->events++;
            if (on_msg) on_msg(c, p + ll, bytes, arg);
            off += ll + bytes + 2;
        } else {
            if (avail >= 4 && memcmp(p, "PING", 4) == 0) write_all(c->fd, "PONG\r\n", 6);
            else if (avail >= 4 && memcmp(p, "PONG", 4) == 0) c->uptodates++;
            else if (avail >= 4 && memcmp(p, "-ERR", 4) == 0) fprintf(stderr, "nats: %.*s", (int)ll, p);
            off += ll;
        }
    }
    return off;
}

static int nt_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    (void)ntopics;
    c->fd = connect_addr(addr);
    if (c->fd < 0) return -1;
    char cmd[512];
    int n = snprintf(cmd, sizeof cmd,
                     "CONNECT {\"verbose\":false,\"pedantic\":false,\"lang\":\"c\",\"version\":\"bench\"}\r\n"
                     "SUB %s.> %d\r\nPING\r\n", prefix, c->index + 1);
    if (write_all(c->fd, cmd, (size_t)n) < 0) return -1;
    while (c->uptodates < 1) {
        if (read_more(c, 10000) <= 0) return -1;
        size_t used = nt_parse(c, NULL, NULL);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    return 0;
}

static void *nt_pub_open(const char *addr, int index) {
    (void)index;
    const char *hp = strncmp(addr, "tcp:", 4) == 0 ? addr + 4 : addr;
    char url[256];
    snprintf(url, sizeof url, "nats://%s", hp);
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    natsOptions_Create(&o);
    natsOptions_SetURL(o, url);
    natsOptions_SetSendAsap(o, true);
    natsStatus s = natsConnection_Connect(&nc, o);
    natsOptions_Destroy(o);
    if (s != NATS_OK) {
        fprintf(stderr, "nats: connect %s: %s\n", url, natsStatus_GetText(s));
        return NULL;
    }
    return nc;
}

static int nt_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    return natsConnection_Publish(pp, topic, payload, (int)len) == NATS_OK ? 0 : -1;
}

static void nt_pub_poll(void *pp) { (void)pp; }

static void nt_pub_close(void *pp) {
    if (!pp) return;
    natsConnection_FlushTimeout(pp, 2000);
    natsConnection_Destroy(pp);
}

const peer_t peer_nats = {
    .name = "nats",
    .sub_connect = nt_sub_connect,
    .parse = nt_parse,
    .pub_open = nt_pub_open,
    .pub_send = nt_pub_send,
    .pub_poll = nt_pub_poll,
    .pub_close = nt_pub_close,
    .topic_name = nt_topic,
};
