#ifndef LIVEBUS_CNGHTTP2_SHIM_H
#define LIVEBUS_CNGHTTP2_SHIM_H
/* nghttp2 (Debian libnghttp2-dev): HTTP/2 framing without I/O, fed the bytes the libuv loop reads. */
#include <nghttp2/nghttp2.h>
_Static_assert(NGHTTP2_VERSION_NUM >= 0x013400, "LiveBus needs nghttp2 >= 1.52");
#endif
