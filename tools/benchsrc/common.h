/* Shared pieces of the LiveBus benchmark harness (tools/bench builds these with cc -O2).
 *
 * One harness, five "peers": livebusd, Redis pub/sub, mosquitto (MQTT QoS 0), NATS core, and a raw
 * Unix-socket writer/reader pair with no protocol. Subscribers of every peer are plain sockets read by one
 * epoll loop and parsed by a small hand-written parser per peer (the same cost model for all); publishers use
 * the peers' own C client libraries (hiredis, libmosquitto, libnats) and a hand-written framer for livebusd.
 */
#ifndef LIVEBUS_BENCH_COMMON_H
#define LIVEBUS_BENCH_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdatomic.h>
#include <time.h>

#define BENCH_BUF (1 << 18)

static inline uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline int64_t wall_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One subscriber connection: socket and its unparsed input. */
typedef struct conn {
    int fd;
    int index;
    unsigned char *buf;
    size_t len;
    size_t cap;
    /* counters a parser may bump */
    uint64_t events;
    uint64_t uptodates;
    uint64_t extra;          /* livebusd: re-sent EVENTs (flag reconvert): not counted as deliveries */
    uint64_t last_seq;       /* livebusd: sequence of the last EVENT */
    char token[80];          /* livebusd: resume token from WELCOME */
    int version;             /* livebusd: protocol version WELCOME named (0 before it: frames go out as v1) */
} conn_t;

/* Called by a parser for every delivered application message (the payload bytes). */
typedef void (*msg_fn)(conn_t *c, const unsigned char *payload, size_t len, void *arg);

typedef struct peer {
    const char *name;
    /* Connects subscriber `index` to `addr`, subscribes to every topic under `prefix` (ntopics topics) and
     * returns 0 once the peer confirmed the subscription; leftover input stays in c->buf. */
    int (*sub_connect)(conn_t *c, const char *addr, const char *prefix, int ntopics);
    /* Parses complete messages in c->buf[0..len); returns bytes consumed. May write replies (PONG) to c->fd. */
    size_t (*parse)(conn_t *c, msg_fn on_msg, void *arg);
    /* Publisher side. */
    void *(*pub_open)(const char *addr, int index);
    int (*pub_send)(void *p, const char *topic, const unsigned char *payload, size_t len);
    void (*pub_poll)(void *p);
    void (*pub_close)(void *p);
    /* Optional: writes out anything the publisher batched (raw baseline only). */
    void (*pub_flush)(void *p);
    /* Topic name of topic k under prefix. */
    void (*topic_name)(char *out, size_t n, const char *prefix, int k);
} peer_t;

extern const peer_t peer_livebus, peer_redis, peer_mqtt, peer_nats, peer_raw, peer_raw1;

/* helpers in bench.c */
int connect_unix(const char *path);
int connect_tcp(const char *hostport);
int connect_addr(const char *addr);           /* "unix:/path" or "tcp:host:port" or a bare path */
int write_all(int fd, const void *p, size_t n);
/* Reads more bytes into c->buf, waiting at most timeout_ms; returns bytes read, 0 on EOF, -1 on error/timeout. */
int read_more(conn_t *c, int timeout_ms);
void die(const char *fmt, ...);

/* raw peer: size of one record (the payload length) */
extern size_t raw_record;

/* livebusd framing, shared with the resume and session workloads */
size_t lb_frame(unsigned char *out, int version, int type, uint64_t seq, const char *topic,
                const unsigned char *body, size_t blen);
/* connect + HELLO (role session, optional resume member) + WELCOME; 0 on success */
int lb_connect_session(conn_t *c, const char *addr, const char *resume_json);
/* publish workload: one publisher, at most `window` PUBLISHes unacknowledged; prints its key=value line */
int lb_publish_bench(const char *addr, const char *topic, const unsigned char *payload, size_t len, int window,
                     double warmup_s, double seconds, const char *label);

#endif
