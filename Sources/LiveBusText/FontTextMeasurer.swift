import CFreeType
import CHarfBuzz
import LiveBusLayout
import Synchronization

/// An error loading a font.
public struct FontTextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes.
    public enum Code: String, Sendable {
        /// FreeType could not start.
        case freetypeInit = "freetype-init"
        /// The font file is missing or not a font FreeType can read.
        case fontUnreadable = "font-unreadable"
    }
    /// What failed.
    public var code: Code
    /// What failed and what to do.
    public var message: String
    /// `code: message`.
    public var description: String { "\(code.rawValue): \(message)" }
}

/// Measures text with a real font engine: FreeType loads the face and gives line metrics, HarfBuzz shapes the
/// string (kerning, ligatures, Hangul) and gives the advances. A Debian font stands in for Apple's system font,
/// so widths are realistic but not Apple's exact ones.
///
/// Weights map to two files: regular and medium → `regularPath`; semibold and bold → `boldPath`.
/// Monospaced digits request the OpenType `tnum` feature and, for fonts without it, give every digit the
/// widest digit's advance (what `monospacedDigit()` does visually).
///
/// Thread safety: FreeType faces are not thread-safe, so every call runs inside one `Mutex`.
public final class FontTextMeasurer: TextMeasurer, @unchecked Sendable {
    // @unchecked: `state` (FreeType library, faces, HarfBuzz fonts) is only touched inside `state.withLock`,
    // and the pointers never escape it.
    private let state: Mutex<FontState>
    /// e.g. "FreeType+HarfBuzz NanumGothic.ttf/NanumGothicBold.ttf as a stand-in for SF Pro".
    public let fontDescription: String

    /// Default Debian paths of NanumGothic (package `fonts-nanum`), a font covering Hangul.
    public static let nanumGothicRegular = "/usr/share/fonts/truetype/nanum/NanumGothic.ttf"
    /// Bold companion of ``nanumGothicRegular``.
    public static let nanumGothicBold = "/usr/share/fonts/truetype/nanum/NanumGothicBold.ttf"

    /// Loads two font files.
    ///
    /// - Parameters:
    ///   - regularPath: font file for regular and medium.
    ///   - boldPath: font file for semibold and bold.
    ///   - standInFor: the font this one stands in for, for the description.
    /// - Throws: ``FontTextError`` with code `freetype-init` or `font-unreadable` (install `fonts-nanum` or pass
    ///   another path).
    public init(
        regularPath: String = FontTextMeasurer.nanumGothicRegular,
        boldPath: String = FontTextMeasurer.nanumGothicBold,
        standInFor: String = "SF Pro"
    ) throws(FontTextError) {
        var library: FT_Library?
        guard FT_Init_FreeType(&library) == 0, let library else {
            throw FontTextError(code: .freetypeInit, message: "FT_Init_FreeType failed")
        }
        func load(_ path: String) throws(FontTextError) -> Face {
            var face: FT_Face?
            guard FT_New_Face(library, path, 0, &face) == 0, let face else {
                throw FontTextError(
                    code: .fontUnreadable,
                    message: "cannot load \(path); install the Debian package fonts-nanum or pass another font file"
                )
            }
            guard let font = hb_ft_font_create_referenced(face) else {
                throw FontTextError(code: .fontUnreadable, message: "HarfBuzz cannot use \(path)")
            }
            return Face(face: face, font: font)
        }
        let regular: Face
        let bold: Face
        do {
            regular = try load(regularPath)
            bold = try load(boldPath)
        } catch {
            FT_Done_FreeType(library)
            throw error
        }
        let name = { (p: String) in p.split(separator: "/").last.map(String.init) ?? p }
        fontDescription =
            "FreeType+HarfBuzz \(name(regularPath))/\(name(boldPath)) as a stand-in for \(standInFor)"
        state = Mutex(FontState(library: library, regular: regular, bold: bold))
    }

    deinit {
        state.withLock { s in
            for f in [s.regular, s.bold] {
                hb_font_destroy(f.font)
            }
            FT_Done_FreeType(s.library)
        }
    }

    /// Shapes `text` on one line and sums the advances.
    ///
    /// - Parameters:
    ///   - text: any string (UTF-8 is passed to HarfBuzz as is).
    ///   - font: size (points), weight and digit style.
    /// - Returns: width and line height in points.
    public func measure(_ text: String, font: FontSpec) -> TextExtent {
        state.withLock { s in
            let face = (font.weight == .semibold || font.weight == .bold) ? s.bold : s.regular
            _ = CFreeType_setPointSize(face.face, font.size)
            hb_ft_font_changed(face.font)
            let lineHeight = CFreeType_lineHeight(face.face)
            let digitGlyphs = Set((0x30...0x39).map { FT_Get_Char_Index(face.face, FT_ULong($0)) })
            var widestDigit: hb_position_t = 0
            if font.monospacedDigits {
                for d in 0...9 {
                    widestDigit = max(
                        widestDigit,
                        Self.advances("\(d)", face.font, tabular: true).map(\.advance).reduce(0, +)
                    )
                }
            }
            var width: hb_position_t = 0
            for glyph in Self.advances(text, face.font, tabular: font.monospacedDigits) {
                if font.monospacedDigits && digitGlyphs.contains(glyph.id) {
                    width += widestDigit
                } else {
                    width += glyph.advance
                }
            }
            return TextExtent(width: Double(width) / 64, lineHeight: lineHeight)
        }
    }

    /// Shapes `text` and returns (glyph id, x advance in 26.6 points) per glyph.
    private static func advances(_ text: String, _ font: OpaquePointer, tabular: Bool) -> [(
        id: UInt32, advance: hb_position_t
    )] {
        guard let buffer = hb_buffer_create() else { return [] }
        defer { hb_buffer_destroy(buffer) }
        hb_buffer_add_utf8(buffer, text, -1, 0, -1)
        hb_buffer_guess_segment_properties(buffer)
        var feature = hb_feature_t()
        if tabular {
            _ = hb_feature_from_string("tnum", -1, &feature)
            hb_shape(font, buffer, &feature, 1)
        } else {
            hb_shape(font, buffer, nil, 0)
        }
        var count: UInt32 = 0
        guard let infos = hb_buffer_get_glyph_infos(buffer, &count),
            let positions = hb_buffer_get_glyph_positions(buffer, &count)
        else { return [] }
        return (0..<Int(count)).map { (infos[$0].codepoint, positions[$0].x_advance) }
    }
}

/// A FreeType face and the HarfBuzz font made from it.
struct Face {
    var face: FT_Face
    var font: OpaquePointer
}

/// Everything FreeType and HarfBuzz own; lives inside the measurer's mutex.
struct FontState {
    var library: FT_Library
    var regular: Face
    var bold: Face
}
