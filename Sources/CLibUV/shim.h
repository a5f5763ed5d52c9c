#ifndef LIVEBUS_CLIBUV_SHIM_H
#define LIVEBUS_CLIBUV_SHIM_H
#include <uv.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <signal.h>

/* LiveBus is built and tested against libuv 1.44 (Debian 12 libuv1-dev). */
_Static_assert(UV_VERSION_MAJOR == 1 && UV_VERSION_MINOR >= 44, "LiveBus needs libuv >= 1.44");

static inline uv_handle_t *CLibUV_handle(void *p) { return (uv_handle_t *)p; }
static inline uv_stream_t *CLibUV_stream(void *p) { return (uv_stream_t *)p; }

/* Longest Unix socket path the kernel accepts (sun_path minus the terminating NUL).
 * libuv 1.44's uv_pipe_bind silently truncates longer paths, so we reject them first. */
static inline int CLibUV_max_socket_path(void) {
    struct sockaddr_un a;
    return (int)sizeof(a.sun_path) - 1;
}

/* Peer credentials of a connected Unix socket (SO_PEERCRED). Returns 0 and fills uid/pid, or -errno. */
struct CLibUV_ucred { int pid; unsigned int uid; unsigned int gid; };
static inline int CLibUV_peer_uid(int fd, unsigned int *uid, int *pid) {
    struct CLibUV_ucred cred; /* same layout as Linux struct ucred, which needs _GNU_SOURCE */
    socklen_t len = sizeof(cred);
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return -1;
    *uid = cred.uid;
    *pid = cred.pid;
    return 0;
}
/* Connection keeps a TCP stream in a uv_pipe_t-sized allocation (TCPListener, the APNs endpoint). */
_Static_assert(sizeof(uv_tcp_t) <= sizeof(uv_pipe_t), "uv_tcp_t must fit in a uv_pipe_t");
#endif
