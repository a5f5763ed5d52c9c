#ifndef LIVEBUS_CZLIB_SHIM_H
#define LIVEBUS_CZLIB_SHIM_H
/* zlib's crc32, crc32_combine_gen and crc32_combine_op (zlib >= 1.2.12): the frame checksum (PROTOCOL.md §2). */
#include <zlib.h>
#endif
