/* LiveBus benchmark harness. Workloads:
 *
 *   fanout   P publisher threads, T topics, N subscriber sockets read by one epoll loop.
 *            --rate 0: closed loop (at most --window messages in flight end to end), measures the highest
 *            delivered msg/s without overrunning any subscriber; --rate R: open loop at R msg/s in total,
 *            measures publish-to-receive latency. Every payload carries its send instant (CLOCK_MONOTONIC,
 *            one clock for both ends, same process).
 *   sessions connects --count idle subscriber sessions one after another (handshake + subscribe confirmed),
 *            reports connects/s and the server's VmRSS before and after (--pid).
 *   resume   livebusd only: a session that missed --missed updates reconnects with its resume token;
 *            time from connect() to UPTODATE.
 *   publish  livebusd only: one publisher connection, no subscriber, at most --window PUBLISHes not yet
 *            acknowledged (written in batches of up to 64 frames per write); ACKs per second over the window.
 *   js-reset deletes the JetStream stream the federated livebusd keeps (--stream, default LIVEBUS) at --addr
 *            nats://HOST:PORT[,…] before a federated measurement: set-up, no output line.
 *   sqlite   the reference the issue names: SQLite (WAL, synchronous=--sync) committing --batch-row
 *            transactions of the same 265-byte body into a table like livebusd's, rows per second.
 *   fanout --allocs FILE: also reads the alloccount.so counters (alloccount.h) mapped from FILE at the start
 *            and the end of the measured window and reports allocations per delivered EVENT and per PUBLISH.
 *
 * Output: one line of key=value pairs per run (tools/bench collects them).
 */
#define _GNU_SOURCE
#include "common.h"
#include "alloccount.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sqlite3.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <nats/nats.h>

/* ---------------------------------------------------------------- helpers */

void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n");
    va_end(ap);
    exit(1);
}

int connect_unix(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    for (int attempt = 0; attempt < 200; attempt++) {
        if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) return fd;
        if (errno != EAGAIN && errno != ECONNREFUSED) break;
        usleep(5000); /* listen backlog full: retry, bounded */
    }
    fprintf(stderr, "bench: connect %s: %s\n", path, strerror(errno));
    close(fd);
    return -1;
}

int connect_tcp(const char *hostport) {
    char host[128];
    const char *colon = strrchr(hostport, ':');
    if (!colon) return -1;
    snprintf(host, sizeof host, "%.*s", (int)(colon - hostport), hostport);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    if (getaddrinfo(host, colon + 1, &hints, &ai) != 0) return -1;
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int rc = -1;
    for (int attempt = 0; attempt < 200 && rc < 0; attempt++) {
        rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
        if (rc < 0 && errno != ECONNREFUSED && errno != EAGAIN) break;
        if (rc < 0) usleep(5000);
    }
    freeaddrinfo(ai);
    if (rc < 0) {
        fprintf(stderr, "bench: connect tcp %s: %s\n", hostport, strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

int connect_addr(const char *addr) {
    if (strncmp(addr, "tcp:", 4) == 0) return connect_tcp(addr + 4);
    if (strncmp(addr, "unix:", 5) == 0) return connect_unix(addr + 5);
    return connect_unix(addr);
}

int write_all(int fd, const void *p, size_t n) {
    const char *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN) {
                struct pollfd pfd = {.fd = fd, .events = POLLOUT};
                poll(&pfd, 1, 100);
                continue;
            }
            return -1;
        }
        b += w;
        n -= (size_t)w;
    }
    return 0;
}

int read_more(conn_t *c, int timeout_ms) {
    if (c->len == c->cap) die("connection %d: input buffer full (%zu bytes)", c->index, c->cap);
    struct pollfd pfd = {.fd = c->fd, .events = POLLIN};
    int pr = poll(&pfd, 1, timeout_ms);
    if (pr <= 0) return -1;
    ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
    if (r < 0) return errno == EAGAIN ? 1 : -1;
    c->len += (size_t)r;
    return (int)r;
}

static void set_nonblocking(int fd) { fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK); }

static long vmrss_kb(int pid) {
    if (pid <= 0) return -1;
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = atol(line + 6);
    fclose(f);
    return kb;
}

/* livebusd federated through NATS JetStream (`livebusd --federate`, issue 19): the same client protocol, so the
 * same peer code under the name its rows carry (livebusd-fed: one JetStream node, livebusd-fed3: three). */
static peer_t peer_livebus_fed;

static const peer_t *find_peer(const char *name) {
    const peer_t *all[] = {&peer_livebus, &peer_redis, &peer_mqtt, &peer_nats, &peer_raw, &peer_raw1};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (strcmp(all[i]->name, name) == 0) return all[i];
    if (strcmp(name, "livebusd-fed") == 0 || strcmp(name, "livebusd-fed3") == 0) {
        peer_livebus_fed = peer_livebus;
        peer_livebus_fed.name = name;
        return &peer_livebus_fed;
    }
    if (strcmp(name, "raw") == 0) return &peer_raw;
    if (strcmp(name, "livebus") == 0) return &peer_livebus;
    if (strcmp(name, "mqtt") == 0) return &peer_mqtt;
    die("unknown peer '%s' (livebusd, livebusd-fed, livebusd-fed3, redis, mosquitto, nats, raw-socket)", name);
    return NULL;
}

/* ---------------------------------------------------------------- options */

static struct {
    const char *mode, *peer, *addr, *prefix, *allocs, *label, *sync, *db, *stream;
    int subs, topics, pubs, count, pid, missed, runs, window, batch;
    double rate, seconds, warmup;
} opt = {.prefix = "orders/bench", .stream = "LIVEBUS", .label = "", .sync = "normal", .subs = 1, .topics = 10, .pubs = 1,
         .count = 1000, .missed = 1000, .runs = 5, .window = 0, .batch = 100, .rate = 0, .seconds = 3,
         .warmup = 0.5};

static void parse_args(int argc, char **argv) {
    if (argc < 2) die("usage: bench fanout|sessions|resume|publish|sqlite|js-reset --peer P --addr A [options]");
    opt.mode = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) die("option %s needs a value", k);
        i++;
        if (!strcmp(k, "--peer")) opt.peer = v;
        else if (!strcmp(k, "--addr")) opt.addr = v;
        else if (!strcmp(k, "--prefix")) opt.prefix = v;
        else if (!strcmp(k, "--subs")) opt.subs = atoi(v);
        else if (!strcmp(k, "--topics")) opt.topics = atoi(v);
        else if (!strcmp(k, "--pubs")) opt.pubs = atoi(v);
        else if (!strcmp(k, "--count")) opt.count = atoi(v);
        else if (!strcmp(k, "--pid")) opt.pid = atoi(v);
        else if (!strcmp(k, "--missed")) opt.missed = atoi(v);
        else if (!strcmp(k, "--runs")) opt.runs = atoi(v);
        else if (!strcmp(k, "--window")) opt.window = atoi(v);
        else if (!strcmp(k, "--rate")) opt.rate = atof(v);
        else if (!strcmp(k, "--seconds")) opt.seconds = atof(v);
        else if (!strcmp(k, "--warmup")) opt.warmup = atof(v);
        else if (!strcmp(k, "--allocs")) opt.allocs = v;
        else if (!strcmp(k, "--label")) opt.label = v;
        else if (!strcmp(k, "--sync")) opt.sync = v;
        else if (!strcmp(k, "--db")) opt.db = v;
        else if (!strcmp(k, "--batch")) opt.batch = atoi(v);
        else if (!strcmp(k, "--stream")) opt.stream = v;
        else die("unknown option %s", k);
    }
    if (!opt.addr && strcmp(opt.mode, "sqlite") != 0) die("--addr is required");
}

/* ---------------------------------------------------------------- payload */

/* An order content state as livebusd's PUBLISH body (PROTOCOL.md §5.1); the same bytes go to every peer.
 * "T" + 19 digits inside detailEn carries the send instant in ns (CLOCK_MONOTONIC). */
static unsigned char payload_tpl[512];
static size_t payload_len;
static size_t stamp_off;

static void build_payload(void) {
    const char *tpl =
        "{\"contentState\":{\"etaTarget\":1767226800000,\"lastConfirmed\":1767225600000,\"progress\":0.25,"
        "\"status\":\"cooking\",\"summary\":{\"detailEn\":\"T0000000000000000000\",\"en\":\"Cooking\","
        "\"ko\":\"\xec\xa1\xb0\xeb\xa6\xac \xec\xa4\x91\"}},\"event\":\"update\",\"priority\":10,"
        "\"relevanceScore\":50,\"timestamp\":1767225600000}";
    payload_len = strlen(tpl);
    memcpy(payload_tpl, tpl, payload_len);
    stamp_off = (size_t)((unsigned char *)memmem(payload_tpl, payload_len, "\"T0", 3) - payload_tpl) + 2;
    raw_record = payload_len;
}

static void put_stamp(unsigned char *p, uint64_t ns) {
    for (int i = 18; i >= 0; i--) {
        p[stamp_off + (size_t)i] = (unsigned char)('0' + ns % 10);
        ns /= 10;
    }
}

static inline uint64_t get_stamp(const unsigned char *p, size_t len) {
    const unsigned char *m = memmem(p, len, "\"T", 2);
    if (!m || (size_t)(m - p) + 21 > len) return 0;
    uint64_t v = 0;
    for (int i = 2; i < 21; i++) v = v * 10 + (uint64_t)(m[i] - '0');
    return v;
}

/* ---------------------------------------------------------------- fan-out */

#define HIST_US 1000000
static uint64_t *hist_us;        /* 1 µs buckets below 1 s */
static uint64_t hist_ms[100000]; /* 1 ms buckets from 1 s */
static uint64_t lat_count, lat_max_us;

static _Atomic uint64_t published, delivered;
static _Atomic int stop_pub;
static uint64_t meas_start, meas_end, t_start;
static uint64_t recv_now;
static const peer_t *peer;
static char (*topics)[128];
static _Atomic uint64_t assumed_lost;
static uint64_t stalls;

static void on_msg(conn_t *c, const unsigned char *p, size_t len, void *arg) {
    (void)c;
    (void)arg;
    uint64_t s = get_stamp(p, len);
    if (s < meas_start || s >= meas_end) return;
    uint64_t us = recv_now > s ? (recv_now - s) / 1000 : 0;
    if (us < HIST_US) hist_us[us]++;
    else {
        uint64_t ms = us / 1000;
        hist_ms[ms < 100000 ? ms : 99999]++;
    }
    if (us > lat_max_us) lat_max_us = us;
    lat_count++;
}

static double percentile_us(double q) {
    if (!lat_count) return -1;
    uint64_t target = (uint64_t)(q * (double)lat_count);
    if (target >= lat_count) target = lat_count - 1;
    uint64_t acc = 0;
    for (uint64_t i = 0; i < HIST_US; i++) {
        acc += hist_us[i];
        if (acc > target) return (double)i;
    }
    for (uint64_t i = 0; i < 100000; i++) {
        acc += hist_ms[i];
        if (acc > target) return (double)i * 1000.0;
    }
    return (double)lat_max_us;
}

typedef struct {
    int index;
    void *pub;
} pubarg_t;

static void sleep_until(uint64_t t) {
    struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull), .tv_nsec = (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

static void *publisher(void *a) {
    pubarg_t *pa = a;
    unsigned char msg[512];
    memcpy(msg, payload_tpl, payload_len);
    prctl(PR_SET_TIMERSLACK, 1UL);
    uint64_t k = 0, n = (uint64_t)opt.subs;
    uint64_t window = (uint64_t)opt.window;
    double interval = opt.rate > 0 ? 1e9 * opt.pubs / opt.rate : 0;
    uint64_t first = t_start + (uint64_t)pa->index * (uint64_t)(interval / opt.pubs);
    while (!atomic_load_explicit(&stop_pub, memory_order_relaxed)) {
        if (interval > 0) {
            uint64_t due = first + (uint64_t)((double)k * interval);
            if (now_ns() < due) sleep_until(due);
        } else {
            /* closed loop: at most `window` messages in flight end to end */
            uint64_t wait_start = 0, seen = atomic_load(&delivered);
            for (;;) {
                uint64_t pubd = atomic_load(&published), del = atomic_load(&delivered);
                uint64_t lost = atomic_load(&assumed_lost);
                if (pubd * n <= del + lost + window * n) break;
                if (atomic_load(&stop_pub)) break;
                if (peer->pub_flush) peer->pub_flush(pa->pub);
                uint64_t t = now_ns();
                if (!wait_start || del != seen) {
                    wait_start = t;
                    seen = del;
                } else if (t - wait_start > 3000000000ull) {
                    /* no delivery for 3 s: the peer dropped messages; count them lost and go on (a daemon that
                     * spends a long loop turn on one read batch delivers nothing for a while: not a loss) */
                    atomic_store(&assumed_lost, pubd * n - del);
                    stalls++;
                }
                struct timespec ts = {0, 20000};
                nanosleep(&ts, NULL);
            }
        }
        int t = (int)((k * (uint64_t)opt.pubs + (uint64_t)pa->index) % (uint64_t)opt.topics);
        put_stamp(msg, now_ns());
        if (peer->pub_send(pa->pub, topics[t], msg, payload_len) < 0) die("publish failed");
        /* raw-socket at a fixed load: flush when caught up with the schedule, gather while behind it (what an
         * event loop does: one write per loop turn of whatever is pending) */
        if (interval > 0 && peer->pub_flush && now_ns() < first + (uint64_t)((double)(k + 1) * interval))
            peer->pub_flush(pa->pub);
        atomic_fetch_add_explicit(&published, 1, memory_order_relaxed);
        k++;
        if ((k & 63) == 0) peer->pub_poll(pa->pub);
    }
    return NULL;
}

static conn_t *make_conns(int n, size_t cap) {
    conn_t *cs = calloc((size_t)n, sizeof *cs);
    for (int i = 0; i < n; i++) {
        cs[i].index = i;
        cs[i].cap = cap;
        cs[i].buf = malloc(cap);
    }
    return cs;
}

/* Reads every readable connection, parses, compacts. Returns messages delivered. */
static uint64_t pump(int ep, int timeout_ms) {
    struct epoll_event evs[512];
    int ne = epoll_wait(ep, evs, 512, timeout_ms);
    uint64_t got = 0;
    recv_now = now_ns();
    for (int i = 0; i < ne; i++) {
        conn_t *c = evs[i].data.ptr;
        for (int rounds = 0; rounds < 4; rounds++) {
            ssize_t r = read(c->fd, c->buf + c->len, c->cap - c->len);
            if (r <= 0) {
                if (r == 0) {
                    fprintf(stderr, "bench: %s closed subscriber %d\n", peer->name, c->index);
                    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
                }
                break;
            }
            c->len += (size_t)r;
            uint64_t before = c->events;
            size_t used = peer->parse(c, on_msg, NULL);
            got += c->events - before;
            if (used) {
                memmove(c->buf, c->buf + used, c->len - used);
                c->len -= used;
            }
            if ((size_t)r < 65536) break;
        }
    }
    if (got) atomic_fetch_add_explicit(&delivered, got, memory_order_relaxed);
    return got;
}

/* The alloccount.so counters of the measured process (alloccount.h), mapped from --allocs FILE. */
static struct lb_alloc_counters *alloc_map(void) {
    if (!opt.allocs) return NULL;
    int fd = open(opt.allocs, O_RDWR | O_CLOEXEC);
    if (fd < 0) die("--allocs %s: %s", opt.allocs, strerror(errno));
    void *p = mmap(NULL, sizeof(struct lb_alloc_counters), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (p == MAP_FAILED) die("--allocs %s: mmap: %s", opt.allocs, strerror(errno));
    struct lb_alloc_counters *m = p;
    if (!atomic_load(&m->attached))
        die("--allocs %s: the server did not map it (started without LD_PRELOAD=alloccount.so "
            "LIVEBUS_ALLOC_COUNTERS=%s?)", opt.allocs, opt.allocs);
    return m;
}

static int run_fanout(void) {
    hist_us = calloc(HIST_US, sizeof *hist_us);
    struct lb_alloc_counters *am = alloc_map();
    uint64_t a0 = 0, a1 = 0, b0 = 0, b1 = 0;
    if (opt.window <= 0) opt.window = opt.subs <= 100 ? 256 : 64;
    topics = calloc((size_t)opt.topics, sizeof *topics);
    for (int k = 0; k < opt.topics; k++) peer->topic_name(topics[k], sizeof topics[k], opt.prefix, k);

    conn_t *cs = make_conns(opt.subs, BENCH_BUF);
    int ep = epoll_create1(0);
    uint64_t t0 = now_ns();
    for (int i = 0; i < opt.subs; i++) {
        if (peer->sub_connect(&cs[i], opt.addr, opt.prefix, opt.topics) < 0)
            die("%s: subscriber %d could not connect/subscribe", peer->name, i);
        set_nonblocking(cs[i].fd);
        int sz = 1 << 20;
        setsockopt(cs[i].fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof sz);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    }
    double setup_s = (double)(now_ns() - t0) / 1e9;

    pthread_t *th = calloc((size_t)opt.pubs, sizeof *th);
    pubarg_t *pa = calloc((size_t)opt.pubs, sizeof *pa);
    for (int p = 0; p < opt.pubs; p++) {
        pa[p].index = p;
        pa[p].pub = peer->pub_open(opt.addr, p);
        if (!pa[p].pub) die("%s: publisher %d could not connect", peer->name, p);
    }
    t_start = now_ns() + 1000000;
    meas_start = t_start + (uint64_t)(opt.warmup * 1e9);
    meas_end = meas_start + (uint64_t)(opt.seconds * 1e9);
    for (int p = 0; p < opt.pubs; p++) pthread_create(&th[p], NULL, publisher, &pa[p]);

    uint64_t c0 = 0, c1 = 0, tw0 = 0, tw1 = 0, pub0 = 0, pub1 = 0;
    while (!tw1) {
        pump(ep, 1);
        if (!tw0 && recv_now >= meas_start) {
            tw0 = recv_now;
            c0 = atomic_load(&delivered);
            pub0 = atomic_load(&published);
            if (am) a0 = atomic_load(&am->allocations), b0 = atomic_load(&am->bytes), atomic_store(&am->sampling, 1);
        }
        /* closed loop: the window also lasts until one full in-flight window was delivered in it (at most 10 s
         * more), so that a daemon whose loop turns are longer than the window still gets a rate, not 0 */
        if (tw0 && recv_now >= meas_end &&
            (opt.rate > 0 || atomic_load(&delivered) - c0 >= (uint64_t)opt.window * (uint64_t)opt.subs ||
             recv_now >= meas_end + 10000000000ull)) {
            tw1 = recv_now;
            c1 = atomic_load(&delivered);
            pub1 = atomic_load(&published);
            if (am) a1 = atomic_load(&am->allocations), b1 = atomic_load(&am->bytes), atomic_store(&am->sampling, 0);
        }
    }
    atomic_store(&stop_pub, 1);
    for (int p = 0; p < opt.pubs; p++) pthread_join(th[p], NULL);
    for (int p = 0; p < opt.pubs; p++)
        if (peer->pub_flush) peer->pub_flush(pa[p].pub);
    /* drain: until everything published arrived, or 2 s */
    uint64_t total = atomic_load(&published) * (uint64_t)opt.subs;
    uint64_t drain_end = now_ns() + 2000000000ull;
    while (atomic_load(&delivered) < total && now_ns() < drain_end) pump(ep, 5);
    for (int p = 0; p < opt.pubs; p++) peer->pub_close(pa[p].pub);

    double secs = (double)(tw1 - tw0) / 1e9;
    uint64_t del = atomic_load(&delivered), extra = 0;
    for (int i = 0; i < opt.subs; i++) extra += cs[i].extra;
    /* with --allocs only the allocation line: the shim slows the server, so its rates are not results */
    if (!am)
    printf("peer=%s mode=%s subs=%d topics=%d pubs=%d rate=%.0f window=%d bytes=%zu setup_s=%.3f "
           "published_per_s=%.0f delivered_per_s=%.0f published=%llu delivered=%llu expected=%llu "
           "loss=%.6f stalls=%llu resent=%llu lat_n=%llu p50_us=%.0f p99_us=%.0f p999_us=%.0f max_us=%llu\n",
           peer->name, opt.rate > 0 ? "latency" : "throughput", opt.subs, opt.topics, opt.pubs, opt.rate,
           opt.window, payload_len, setup_s, (double)(pub1 - pub0) / secs, (double)(c1 - c0) / secs,
           (unsigned long long)atomic_load(&published), (unsigned long long)del, (unsigned long long)total,
           total ? 1.0 - (double)del / (double)total : 0.0, (unsigned long long)stalls, (unsigned long long)extra,
           (unsigned long long)lat_count, percentile_us(0.50), percentile_us(0.99), percentile_us(0.999),
           (unsigned long long)lat_max_us);
    if (am) {
        /* the window's allocations over its deliveries (c1 - c0) and PUBLISHes (pub1 - pub0); the latter are
         * counted as handed to the socket, the former as read: at a closed loop's steady state they match */
        double dn = (double)(c1 - c0), pn = (double)(pub1 - pub0);
        printf("peer=%s mode=allocs subs=%d topics=%d seconds=%.2f loss=%.6f resent=%llu window_published=%llu window_delivered=%llu "
               "window_allocs=%llu window_alloc_bytes=%llu allocs_per_delivery=%.4f allocs_per_publish=%.3f "
               "alloc_bytes_per_delivery=%.1f\n",
               peer->name, opt.subs, opt.topics, secs, total ? 1.0 - (double)del / (double)total : 0.0,
               (unsigned long long)extra, (unsigned long long)(pub1 - pub0), (unsigned long long)(c1 - c0),
               (unsigned long long)(a1 - a0), (unsigned long long)(b1 - b0), dn > 0 ? (double)(a1 - a0) / dn : -1,
               pn > 0 ? (double)(a1 - a0) / pn : -1, dn > 0 ? (double)(b1 - b0) / dn : -1);
    }
    fflush(stdout);
    for (int i = 0; i < opt.subs; i++) close(cs[i].fd);
    return 0;
}

/* ---------------------------------------------------------------- sessions */

static int run_sessions(void) {
    conn_t *cs = make_conns(opt.count, 16384);
    long rss0 = vmrss_kb(opt.pid);
    uint64_t t0 = now_ns();
    int ep = epoll_create1(0);
    for (int i = 0; i < opt.count; i++) {
        char prefix[160];
        snprintf(prefix, sizeof prefix, "%s", opt.prefix);
        if (peer->sub_connect(&cs[i], opt.addr, prefix, 1) < 0) die("%s: session %d failed", peer->name, i);
        set_nonblocking(cs[i].fd);
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &cs[i]};
        epoll_ctl(ep, EPOLL_CTL_ADD, cs[i].fd, &ev);
    }
    uint64_t t1 = now_ns();
    /* idle for 2 s, answering the peer's keepalives/clock probes as a real client would */
    while (now_ns() < t1 + 2000000000ull) pump(ep, 10);
    long rss1 = vmrss_kb(opt.pid);
    double secs = (double)(t1 - t0) / 1e9;
    printf("peer=%s mode=sessions count=%d connect_s=%.3f connects_per_s=%.0f rss_before_kb=%ld "
           "rss_after_kb=%ld rss_per_session_kb=%.2f\n",
           peer->name, opt.count, secs, opt.count / secs, rss0, rss1,
           rss0 >= 0 ? (double)(rss1 - rss0) / opt.count : -1.0);
    fflush(stdout);
    for (int i = 0; i < opt.count; i++) close(cs[i].fd);
    return 0;
}

/* ---------------------------------------------------------------- resume (livebusd) */

static void lb_read_until(conn_t *c, uint64_t events, uint64_t uptodates, int timeout_ms) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        size_t used = peer_livebus.parse(c, NULL, NULL);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
        if (c->events >= events && c->uptodates >= uptodates) return;
        uint64_t t = now_ns();
        if (t >= deadline || read_more(c, (int)((deadline - t) / 1000000ull) + 1) <= 0)
            die("resume: timed out (events %llu/%llu, uptodate %llu/%llu)", (unsigned long long)c->events,
                (unsigned long long)events, (unsigned long long)c->uptodates, (unsigned long long)uptodates);
    }
}

static void publish_and_wait(void *pub, const char *topic, int n) {
    unsigned char msg[512];
    memcpy(msg, payload_tpl, payload_len);
    for (int i = 0; i < n; i++) {
        put_stamp(msg, now_ns());
        if (peer_livebus.pub_send(pub, topic, msg, payload_len) < 0) die("resume: publish failed");
    }
    /* the publisher counts ACKs in its poll; wait for all */
    extern uint64_t lb_pub_acks(void *);
    uint64_t deadline = now_ns() + 10000000000ull;
    while (lb_pub_acks(pub) < (uint64_t)n && now_ns() < deadline) {
        peer_livebus.pub_poll(pub);
        usleep(200);
    }
}

static int run_resume(void) {
    void *pub = peer_livebus.pub_open(opt.addr, 0);
    if (!pub) die("resume: publisher could not connect");
    extern void lb_pub_reset_acks(void *);
    for (int r = 0; r < opt.runs; r++) {
        char prefix[200], topic[256];
        snprintf(prefix, sizeof prefix, "%s/r%d", opt.prefix, r);
        snprintf(topic, sizeof topic, "%s/t0", prefix);
        lb_pub_reset_acks(pub);
        publish_and_wait(pub, topic, 1);
        conn_t *c = make_conns(1, 1 << 21);
        if (peer_livebus.sub_connect(c, opt.addr, prefix, 1) < 0) die("resume: session failed");
        lb_read_until(c, 1, 1, 5000);
        uint64_t last = c->last_seq;
        char token[80];
        snprintf(token, sizeof token, "%s", c->token);
        close(c->fd);
        usleep(100000); /* the daemon sees the close and keeps the session for resume */
        lb_pub_reset_acks(pub);
        publish_and_wait(pub, topic, opt.missed);
        c->len = 0;
        c->events = c->uptodates = 0;
        char resume[512];
        snprintf(resume, sizeof resume, "\"resume\":{\"token\":\"%s\",\"topics\":{\"%s\":%llu}}", token, topic,
                 (unsigned long long)last);
        uint64_t t0 = now_ns();
        if (lb_connect_session(c, opt.addr, resume) < 0) die("resume: resume HELLO failed");
        uint64_t tw = now_ns();
        lb_read_until(c, (uint64_t)opt.missed, 1, 10000);
        uint64_t t1 = now_ns();
        printf("peer=livebusd mode=resume attempt=%d missed=%d replayed=%llu last_seq=%llu welcome_ms=%.3f "
               "caught_up_ms=%.3f\n",
               r, opt.missed, (unsigned long long)c->events, (unsigned long long)c->last_seq,
               (double)(tw - t0) / 1e6, (double)(t1 - t0) / 1e6);
        fflush(stdout);
        close(c->fd);
        free(c->buf);
        free(c);
    }
    peer_livebus.pub_close(pub);
    return 0;
}

/* mosquitto: the same reconnect with a persistent session (clean session 0) and QoS 1, which is how MQTT
 * keeps what a session missed. Redis pub/sub and NATS core have no resume: what is published while a
 * subscriber is away is lost (NATS needs JetStream for it). */
int mq_session_connect(conn_t *c, const char *addr, const char *client_id, const char *filter, int subscribe);
size_t mq_parse_acking(conn_t *c);
void mq_disconnect(conn_t *c);
int mq_publish_qos1(void *pp, const char *topic, const unsigned char *payload, size_t len, int n);

static void mq_read_until(conn_t *c, uint64_t events, int timeout_ms) {
    uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ull;
    for (;;) {
        size_t used = mq_parse_acking(c);
        memmove(c->buf, c->buf + used, c->len - used);
        c->len -= used;
        if (c->events >= events) return;
        uint64_t t = now_ns();
        if (t >= deadline || read_more(c, (int)((deadline - t) / 1000000ull) + 1) <= 0)
            die("mosquitto resume: timed out (%llu/%llu messages)", (unsigned long long)c->events,
                (unsigned long long)events);
    }
}

static int run_resume_mqtt(void) {
    void *pub = peer_mqtt.pub_open(opt.addr, 0);
    if (!pub) die("mosquitto resume: publisher could not connect");
    unsigned char msg[512];
    memcpy(msg, payload_tpl, payload_len);
    for (int r = 0; r < opt.runs; r++) {
        char topic[256], filter[256], id[64];
        snprintf(topic, sizeof topic, "%s/r%d/t0", opt.prefix, r);
        snprintf(filter, sizeof filter, "%s/r%d/#", opt.prefix, r);
        snprintf(id, sizeof id, "bench-resume-%d-%d", (int)getpid(), r);
        conn_t *c = make_conns(1, 1 << 21);
        if (mq_session_connect(c, opt.addr, id, filter, 1) < 0) die("mosquitto resume: session failed");
        if (mq_publish_qos1(pub, topic, msg, payload_len, 1) < 0) die("mosquitto resume: publish failed");
        mq_read_until(c, 1, 5000);
        mq_disconnect(c);
        usleep(100000);
        if (mq_publish_qos1(pub, topic, msg, payload_len, opt.missed) < 0) die("mosquitto resume: publish failed");
        c->len = 0;
        c->events = 0;
        uint64_t t0 = now_ns();
        if (mq_session_connect(c, opt.addr, id, filter, 0) < 0) die("mosquitto resume: reconnect failed");
        uint64_t tw = now_ns();
        mq_read_until(c, (uint64_t)opt.missed, 10000);
        uint64_t t1 = now_ns();
        printf("peer=mosquitto mode=resume attempt=%d missed=%d replayed=%llu welcome_ms=%.3f caught_up_ms=%.3f\n", r,
               opt.missed, (unsigned long long)c->events, (double)(tw - t0) / 1e6, (double)(t1 - t0) / 1e6);
        fflush(stdout);
        mq_disconnect(c);
        free(c->buf);
        free(c);
    }
    peer_mqtt.pub_close(pub);
    return 0;
}

/* ---------------------------------------------------------------- publish, sqlite */

static int run_publish(void) {
    if (peer != &peer_livebus) die("publish: livebusd only (the peers acknowledge nothing durable)");
    char topic[200];
    snprintf(topic, sizeof topic, "%s/t0", opt.prefix);
    return lb_publish_bench(opt.addr, topic, payload_tpl, payload_len, opt.window > 0 ? opt.window : 256,
                            opt.warmup, opt.seconds, opt.label[0] ? opt.label : "default");
}

/* SQLite committing --batch-row transactions (WAL, synchronous=--sync) of the same body, into a table shaped like
 * livebusd's event log (topic, sequence, body): the rate the issue compares the publisher with. */
static int run_sqlite(void) {
    if (!opt.db) die("sqlite: --db PATH is required (a file on the disk livebusd's data directory is on)");
    char wal[1100], shm[1100];
    snprintf(wal, sizeof wal, "%s-wal", opt.db);
    snprintf(shm, sizeof shm, "%s-shm", opt.db);
    unlink(opt.db), unlink(wal), unlink(shm);
    sqlite3 *db;
    if (sqlite3_open(opt.db, &db) != SQLITE_OK) die("sqlite: open %s: %s", opt.db, sqlite3_errmsg(db));
    char pragma[128];
    snprintf(pragma, sizeof pragma, "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s;",
             strcmp(opt.sync, "full") == 0 ? "FULL" : "NORMAL");
    char *err = NULL;
    if (sqlite3_exec(db, pragma, NULL, NULL, &err) != SQLITE_OK ||
        sqlite3_exec(db,
                     "CREATE TABLE events(topic TEXT NOT NULL, sequence INTEGER NOT NULL, body BLOB NOT NULL, "
                     "PRIMARY KEY(topic, sequence)) WITHOUT ROWID",
                     NULL, NULL, &err) != SQLITE_OK)
        die("sqlite: %s", err);
    sqlite3_stmt *ins;
    if (sqlite3_prepare_v2(db, "INSERT INTO events(topic, sequence, body) VALUES(?1, ?2, ?3)", -1, &ins, NULL) !=
        SQLITE_OK)
        die("sqlite: prepare: %s", sqlite3_errmsg(db));
    char topic[200];
    snprintf(topic, sizeof topic, "%s/t0", opt.prefix);
    uint64_t seq = 0, rows0 = 0, t0 = now_ns(), tw0 = 0, tw1 = 0;
    uint64_t m0 = t0 + (uint64_t)(opt.warmup * 1e9), m1 = m0 + (uint64_t)(opt.seconds * 1e9);
    while (!tw1) {
        if (sqlite3_exec(db, "BEGIN", NULL, NULL, &err) != SQLITE_OK) die("sqlite: %s", err);
        for (int i = 0; i < opt.batch; i++) {
            seq++;
            put_stamp(payload_tpl, seq);
            sqlite3_bind_text(ins, 1, topic, -1, SQLITE_STATIC);
            sqlite3_bind_int64(ins, 2, (sqlite3_int64)seq);
            sqlite3_bind_blob(ins, 3, payload_tpl, (int)payload_len, SQLITE_STATIC);
            if (sqlite3_step(ins) != SQLITE_DONE) die("sqlite: insert: %s", sqlite3_errmsg(db));
            sqlite3_reset(ins);
        }
        if (sqlite3_exec(db, "COMMIT", NULL, NULL, &err) != SQLITE_OK) die("sqlite: %s", err);
        uint64_t t = now_ns();
        if (!tw0 && t >= m0) tw0 = t, rows0 = seq;
        if (tw0 && t >= m1) tw1 = t;
    }
    double secs = (double)(tw1 - tw0) / 1e9;
    printf("peer=sqlite mode=sqlite sync=%s batch=%d bytes=%zu seconds=%.2f rows_per_s=%.0f rows=%llu\n", opt.sync,
           opt.batch, payload_len, secs, (double)(seq - rows0) / secs, (unsigned long long)(seq - rows0));
    fflush(stdout);
    sqlite3_finalize(ins);
    sqlite3_close(db);
    unlink(opt.db), unlink(wal), unlink(shm);
    return 0;
}

/* js-reset: deletes the JetStream stream --stream (default LIVEBUS) at --addr (nats://HOST:PORT[,…]), so that the
 * next federated livebusd starts on an empty stream as every other peer starts empty. No stream there: nothing to
 * do. Prints nothing on success (it is set-up, not a measurement). */
static int run_js_reset(void) {
    natsOptions *o = NULL;
    natsConnection *nc = NULL;
    jsCtx *js = NULL;
    jsErrCode jerr = 0;
    char *urls = strdup(opt.addr), *save = NULL, *list[8];
    int n = 0;
    for (char *t = strtok_r(urls, ",", &save); t && n < 8; t = strtok_r(NULL, ",", &save)) list[n++] = t;
    natsStatus s = natsOptions_Create(&o);
    if (s == NATS_OK) s = natsOptions_SetServers(o, (const char **)list, n);
    if (s == NATS_OK) s = natsConnection_Connect(&nc, o);
    if (s == NATS_OK) s = natsConnection_JetStream(&js, nc, NULL);
    if (s == NATS_OK) {
        s = js_DeleteStream(js, opt.stream, NULL, &jerr);
        if (s == NATS_NOT_FOUND || jerr == JSStreamNotFoundErr) s = NATS_OK;
    }
    if (s != NATS_OK)
        fprintf(stderr, "bench: js-reset %s at %s: %s (JetStream error %d)\n", opt.stream, opt.addr,
                nats_GetLastError(NULL) ? nats_GetLastError(NULL) : natsStatus_GetText(s), (int)jerr);
    jsCtx_Destroy(js);
    natsConnection_Destroy(nc);
    natsOptions_Destroy(o);
    free(urls);
    return s == NATS_OK ? 0 : 1;
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    build_payload();
    peer = find_peer(opt.peer ? opt.peer : "livebusd");
    if (!strcmp(opt.mode, "fanout")) return run_fanout();
    if (!strcmp(opt.mode, "sessions")) return run_sessions();
    if (!strcmp(opt.mode, "resume")) return peer == &peer_mqtt ? run_resume_mqtt() : run_resume();
    if (!strcmp(opt.mode, "publish")) return run_publish();
    if (!strcmp(opt.mode, "sqlite")) return run_sqlite();
    if (!strcmp(opt.mode, "js-reset")) return run_js_reset();
    die("unknown mode %s", opt.mode);
    return 1;
}
