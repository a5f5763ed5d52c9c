// FreeType for LiveBusText (Debian libfreetype-dev, pkg-config freetype2).
#ifndef CFREETYPE_SHIM_H
#define CFREETYPE_SHIM_H
#include <ft2build.h>
#include FT_FREETYPE_H

/// FT_Set_Char_Size with the size in points at 72 dpi, so one pixel is one point.
static inline FT_Error CFreeType_setPointSize(FT_Face face, double points) {
    return FT_Set_Char_Size(face, 0, (FT_F26Dot6)(points * 64.0 + 0.5), 72, 72);
}

/// Line height (ascender − descender + gap) of the face's current size, in points.
static inline double CFreeType_lineHeight(FT_Face face) {
    return (double)face->size->metrics.height / 64.0;
}

_Static_assert(FREETYPE_MAJOR == 2, "LiveBusText needs FreeType 2");
#endif
