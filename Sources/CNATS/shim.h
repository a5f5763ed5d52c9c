#ifndef LIVEBUS_CNATS_SHIM_H
#define LIVEBUS_CNATS_SHIM_H
/* libnats (nats.c 3.4.1, Debian libnats-dev): the synchronous core and JetStream API only. The libuv adapter
 * (nats/adapters/libuv.h) is not used: the federation store calls libnats from its own threads and hands results
 * to the daemon's loop (Sources/LiveBusFederation/JetStreamStore.swift says why). */
#include <nats/nats.h>
#endif
