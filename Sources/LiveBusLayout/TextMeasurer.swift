/// Font weight, as the Live Activity presentations use it.
public enum FontWeight: String, Codable, Sendable, CaseIterable {
    /// Regular (400).
    case regular
    /// Medium (500).
    case medium
    /// Semibold (600).
    case semibold
    /// Bold (700).
    case bold
}

/// A font request: size in points, weight, and whether digits must be monospaced (tabular figures).
public struct FontSpec: Codable, Sendable, Hashable {
    /// Point size.
    public var size: Double
    /// Weight.
    public var weight: FontWeight
    /// Tabular digits (`monospacedDigit()` in SwiftUI).
    public var monospacedDigits: Bool

    /// Creates a font request.
    public init(size: Double, weight: FontWeight = .regular, monospacedDigits: Bool = false) {
        self.size = size
        self.weight = weight
        self.monospacedDigits = monospacedDigits
    }
}

/// The measured extent of one line of text, in points.
public struct TextExtent: Codable, Sendable, Equatable {
    /// Advance width of the whole line in points.
    public var width: Double
    /// Line height (ascent + descent + line gap) in points.
    public var lineHeight: Double

    /// Creates an extent in points.
    public init(width: Double, lineHeight: Double) {
        self.width = width
        self.lineHeight = lineHeight
    }
}

/// Measures a single line of text. The layout engine asks it for every string it places, and reports a
/// truncation when the measured width exceeds the box instead of hiding the text.
///
/// Implementations must be pure and deterministic (same text and font → same extent).
public protocol TextMeasurer: Sendable {
    /// Name of the font engine and font file, reported with every truncation (e.g. "FreeType+HarfBuzz NanumGothic
    /// as a stand-in for SF Pro").
    var fontDescription: String { get }

    /// Measures `text` set on one line.
    ///
    /// - Parameters:
    ///   - text: the string, any script (Hangul included).
    ///   - font: size (points), weight and digit style.
    /// - Returns: the line's width and height in points.
    func measure(_ text: String, font: FontSpec) -> TextExtent
}

/// A stand-in measurer used until a font engine is wired in: it sums a documented advance per character class
/// (in ems of the point size), so results are deterministic but only approximate Apple's system font.
///
/// Advances (em): Hangul syllables, CJK and full-width forms 1.0; digits 0.6 (tabular, the same with
/// `monospacedDigits`); `:` 0.3 (0.6 with tabular digits); space 0.28; other ASCII letters and punctuation 0.55;
/// anything else 0.6. Weight adds 0, 0.02, 0.04, 0.06 em per character (regular…bold). Line height 1.2 em.
/// - Note: Source: engine estimate, not a font measurement. Clients and the CLI should pass the FreeType +
///   HarfBuzz measurer (`FontTextMeasurer` in the `LiveBusText` target) instead; this one keeps the pure target
///   free of C libraries and its tests independent of installed fonts.
public struct ApproximateTextMeasurer: TextMeasurer {
    /// Creates the stand-in measurer.
    public init() {}

    /// Says plainly that this is an estimate.
    public var fontDescription: String { "approximate per-character advances (no font engine)" }

    /// Sums per-character advances; see the type's documentation for the table.
    ///
    /// - Parameters:
    ///   - text: the string.
    ///   - font: size (points), weight and digit style.
    /// - Returns: the estimated extent in points.
    public func measure(_ text: String, font: FontSpec) -> TextExtent {
        let weightExtra: Double =
            switch font.weight {
            case .regular: 0
            case .medium: 0.02
            case .semibold: 0.04
            case .bold: 0.06
            }
        var ems = 0.0
        for scalar in text.unicodeScalars {
            let v = scalar.value
            let advance: Double
            switch v {
            case 0xAC00...0xD7A3, 0x1100...0x11FF, 0x3130...0x318F, 0x4E00...0x9FFF, 0x3040...0x30FF, 0xFF00...0xFFEF:
                advance = 1.0
            case 0x30...0x39:
                advance = 0.6
            case 0x3A:
                advance = font.monospacedDigits ? 0.6 : 0.3
            case 0x20:
                advance = 0.28
            case 0x21...0x7E:
                advance = 0.55
            default:
                advance = 0.6
            }
            ems += advance + weightExtra
        }
        return TextExtent(width: ems * font.size, lineHeight: 1.2 * font.size)
    }
}
