// HarfBuzz with its FreeType integration for LiveBusText (Debian libharfbuzz-dev, pkg-config harfbuzz).
#ifndef CHARFBUZZ_SHIM_H
#define CHARFBUZZ_SHIM_H
#include <hb.h>
#include <hb-ft.h>

_Static_assert(HB_VERSION_MAJOR >= 2, "LiveBusText needs HarfBuzz 2 or later");
#endif
