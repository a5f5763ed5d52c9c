/* mosquitto peer: MQTT 3.1.1, QoS 0, over mosquitto's Unix socket listener (`listener 0 /path`, supported by
 * 2.0.11). Subscribers speak the packets by hand (CONNECT, SUBSCRIBE "<prefix>/#", PUBLISH parsing);
 * the publisher uses libmosquitto without its thread (mosquitto_publish writes at once). */
#define _GNU_SOURCE
#include "common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <poll.h>
#include <mosquitto.h>

static void mq_topic(char *out, size_t n, const char *prefix, int k) { snprintf(out, n, "%s/t%d", prefix, k); }

static size_t put_len(unsigned char *p, size_t v) {
    size_t i = 0;
    do {
        unsigned char b = v % 128;
        v /= 128;
        if (v) b |= 128;
        p[i++] = b;
    } while (v);
    return i;
}

static size_t put_str(unsigned char *p, const char *s) {
    size_t n = strlen(s);
    p[0] = (unsigned char)(n >> 8);
    p[1] = (unsigned char)n;
    memcpy(p + 2, s, n);
    return n + 2;
}

static size_t mq_parse(conn_t *c, msg_fn on_msg, void *arg) {
    size_t off = 0;
    unsigned char acks[4 * 256];
    size_t nack = 0;
    while (c->len - off >= 2) {
        const unsigned char *p = c->buf + off;
        size_t avail = c->len - off, rl = 0, i = 1;
        int mult = 1, complete = 0;
        while (i < avail && i < 5) {
            rl += (size_t)(p[i] & 127) * (size_t)mult;
            mult *= 128;
            if (!(p[i++] & 128)) { complete = 1; break; }
        }
        if (!complete || avail < i + rl) break;
        int type = p[0] >> 4;
        const unsigned char *v = p + i;
        if (type == 3) { /* PUBLISH */
            size_t tl = (size_t)v[0] << 8 | v[1];
            int qos = (p[0] >> 1) & 3;
            size_t h = 2 + tl + (qos ? 2 : 0);
            if (qos == 1) { /* PUBACK, batched */
                if (nack == sizeof acks) {
                    write_all(c->fd, acks, nack);
                    nack = 0;
                }
                acks[nack++] = 0x40;
                acks[nack++] = 2;
                acks[nack++] = v[2 + tl];
                acks[nack++] = v[3 + tl];
            }
            c->events++;
            if (on_msg) on_msg(c, v + h, rl - h, arg);
        } else if (type == 2 || type == 9) { /* CONNACK, SUBACK */
            c->uptodates++;
        }
        off += i + rl;
    }
    if (nack) write_all(c->fd, acks, nack);
    return off;
}

/* Persistent-session resume (MQTT 3.1.1 clean session 0, QoS 1): the broker queues what the session missed. */
int mq_session_connect(conn_t *c, const char *addr, const char *client_id, const char *filter, int subscribe) {
    c->fd = connect_addr(addr);
    if (c->fd < 0) return -1;
    unsigned char pkt[512], v[480];
    size_t n = 0, m = 0;
    n += put_str(v + n, "MQTT");
    v[n++] = 4;
    v[n++] = 0x00; /* clean session 0: keep subscriptions and queued QoS 1 messages while away */
    v[n++] = 600 >> 8;
    v[n++] = 600 & 255;
    n += put_str(v + n, client_id);
    pkt[m++] = 0x10;
    m += put_len(pkt + m, n);
    memcpy(pkt + m, v, n);
    m += n;
    uint64_t want = 1;
    if (subscribe) {
        n = 0;
        v[n++] = 0;
        v[n++] = 1;
        n += put_str(v + n, filter);
        v[n++] = 1; /* QoS 1 */
        pkt[m++] = 0x82;
        m += put_len(pkt + m, n);
        memcpy(pkt + m, v, n);
        m += n;
        want = 2;
    }
    if (write_all(c->fd, pkt, m) < 0) return -1;
    c->uptodates = 0;
    while (c->uptodates < want) {
        if (read_more(c, 10000) <= 0) return -1;
        size_t used = mq_parse(c, NULL, NULL);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    return 0;
}

size_t mq_parse_acking(conn_t *c) { return mq_parse(c, NULL, NULL); }

void mq_disconnect(conn_t *c) {
    static const unsigned char d[2] = {0xE0, 0x00};
    write_all(c->fd, d, 2);
    close(c->fd);
}

/* QoS 1 publisher: publishes n messages and waits for every PUBACK. */
static int acked;
static void on_publish(struct mosquitto *m, void *obj, int mid) { (void)m; (void)obj; (void)mid; acked++; }

int mq_publish_qos1(void *pp, const char *topic, const unsigned char *payload, size_t len, int n) {
    struct mosquitto *m = pp;
    mosquitto_publish_callback_set(m, on_publish);
    acked = 0;
    for (int i = 0; i < n; i++) {
        if (mosquitto_publish(m, NULL, topic, (int)len, payload, 1, false) != MOSQ_ERR_SUCCESS) return -1;
        while (mosquitto_want_write(m)) mosquitto_loop_write(m, 1);
        if ((i & 15) == 0) mosquitto_loop_read(m, 1);
    }
    for (int spin = 0; acked < n && spin < 5000; spin++) mosquitto_loop(m, 2, 1);
    return acked == n ? 0 : -1;
}

static int mq_sub_connect(conn_t *c, const char *addr, const char *prefix, int ntopics) {
    (void)ntopics;
    c->fd = connect_addr(addr);
    if (c->fd < 0) return -1;
    unsigned char pkt[512], v[480];
    char id[64];
    snprintf(id, sizeof id, "bench-sub-%d-%d", (int)getpid(), c->index);
    /* CONNECT: protocol "MQTT" level 4, clean session, keepalive 600 s */
    size_t n = 0;
    n += put_str(v + n, "MQTT");
    v[n++] = 4;
    v[n++] = 0x02;
    v[n++] = 600 >> 8;
    v[n++] = 600 & 255;
    n += put_str(v + n, id);
    size_t m = 0;
    pkt[m++] = 0x10;
    m += put_len(pkt + m, n);
    memcpy(pkt + m, v, n);
    m += n;
    /* SUBSCRIBE packet id 1, "<prefix>/#" QoS 0 */
    char filter[256];
    snprintf(filter, sizeof filter, "%s/#", prefix);
    n = 0;
    v[n++] = 0;
    v[n++] = 1;
    n += put_str(v + n, filter);
    v[n++] = 0;
    pkt[m++] = 0x82;
    m += put_len(pkt + m, n);
    memcpy(pkt + m, v, n);
    m += n;
    if (write_all(c->fd, pkt, m) < 0) return -1;
    while (c->uptodates < 2) {
        if (read_more(c, 10000) <= 0) return -1;
        size_t used = mq_parse(c, NULL, NULL);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
    }
    return 0;
}

static int lib_ready;

static void *mq_pub_open(const char *addr, int index) {
    if (!lib_ready) {
        mosquitto_lib_init();
        lib_ready = 1;
    }
    const char *path = strncmp(addr, "unix:", 5) == 0 ? addr + 5 : addr;
    char id[64];
    snprintf(id, sizeof id, "bench-pub-%d-%d", (int)getpid(), index);
    struct mosquitto *m = mosquitto_new(id, true, NULL);
    if (!m) return NULL;
    int rc = mosquitto_connect(m, path, 0, 600); /* port 0: host is a Unix socket path */
    if (rc != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "mosquitto: connect %s: %s\n", path, mosquitto_strerror(rc));
        return NULL;
    }
    /* wait for CONNACK */
    for (int i = 0; i < 50; i++) mosquitto_loop(m, 20, 1);
    return m;
}

static int mq_pub_send(void *pp, const char *topic, const unsigned char *payload, size_t len) {
    struct mosquitto *m = pp;
    int rc = mosquitto_publish(m, NULL, topic, (int)len, payload, 0, false);
    if (rc != MOSQ_ERR_SUCCESS) return -1;
    while (mosquitto_want_write(m)) {
        struct pollfd pfd = {.fd = mosquitto_socket(m), .events = POLLOUT};
        poll(&pfd, 1, 10);
        if (mosquitto_loop_write(m, 1) != MOSQ_ERR_SUCCESS) return -1;
    }
    return 0;
}

static void mq_pub_poll(void *pp) { mosquitto_loop_misc(pp); }

static void mq_pub_close(void *pp) {
    if (!pp) return;
    mosquitto_disconnect(pp);
    mosquitto_destroy(pp);
}

const peer_t peer_mqtt = {
    .name = "mosquitto",
    .sub_connect = mq_sub_connect,
    .parse = mq_parse,
    .pub_open = mq_pub_open,
    .pub_send = mq_pub_send,
    .pub_poll = mq_pub_poll,
    .pub_close = mq_pub_close,
    .topic_name = mq_topic,
};
