/// The OS version a session runs, `major.minor.patch` (iOS numbering; Android devices carry it but no rule reads it).
///
/// Parsed from `27`, `27.1` or `27.1.2` (an optional `iOS ` prefix is accepted); missing parts are 0. Compared
/// part by part, so `26.4 < 27.0 < 27.1 < 27.1.1`. Encoded in JSON as its text, e.g. `"27.1"`.
///
/// - Note: Source: field report 000 ("iOS 27 분기 관리하기": `if #available(iOS 27.1, *)` around
///   `ArrangementView`, older versions keep the old result); Apple symbol docs give `ArrangementView` and
///   `toolbarVerticalEdge` as iOS 27.1 (https://developer.apple.com/documentation/swiftui/arrangementview ,
///   https://developer.apple.com/documentation/swiftui/environmentvalues/toolbarverticaledge).
public struct OSVersion: Comparable, Codable, Sendable, Hashable, CustomStringConvertible {
    /// Major version, e.g. 27.
    public var major: Int
    /// Minor version, e.g. 1.
    public var minor: Int
    /// Patch version, e.g. 0.
    public var patch: Int

    /// Creates a version from its parts (each 0 or more).
    public init(_ major: Int, _ minor: Int = 0, _ patch: Int = 0) {
        self.major = major
        self.minor = minor
        self.patch = patch
    }

    /// Parses `MAJOR[.MINOR[.PATCH]]`, optionally prefixed by `iOS ` or `ios`; nil when it is anything else.
    ///
    /// - Parameter text: e.g. `27.1`, `26.4.1`, `iOS 27`.
    public init?(_ text: String) {
        var body = Substring(text)
        for prefix in ["iOS ", "ios ", "iOS", "ios"] where body.hasPrefix(prefix) {
            body = body.dropFirst(prefix.count)
            break
        }
        let parts = body.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...3).contains(parts.count) else { return nil }
        var numbers: [Int] = []
        for part in parts {
            guard !part.isEmpty, part.count <= 4, part.allSatisfy({ $0.isASCII && $0.isNumber }), let n = Int(part)
            else { return nil }
            numbers.append(n)
        }
        while numbers.count < 3 { numbers.append(0) }
        self.init(numbers[0], numbers[1], numbers[2])
    }

    /// The newest version the engine knows rules for (iOS 27.1); the default when a session declares none.
    public static let newest = OSVersion(27, 1)

    /// The first version with `ArrangementView` (split arrangement on an unfolded foldable) and the vertical-edge
    /// toolbar (`toolbarVerticalEdge`): iOS 27.1.
    ///
    /// - Note: Source: https://developer.apple.com/documentation/swiftui/arrangementview (iOS 27.1, not 27.0);
    ///   https://developer.apple.com/documentation/swiftui/environmentvalues/toolbarverticaledge (iOS 27.1);
    ///   field report 000 (`if #available(iOS 27.1, *)`).
    public static let arrangementAPI = OSVersion(27, 1)

    /// `27.1` or `26.4.1`: the patch is written only when it is not 0.
    public var description: String {
        patch == 0 ? "\(major).\(minor)" : "\(major).\(minor).\(patch)"
    }

    /// Part-by-part order.
    public static func < (a: OSVersion, b: OSVersion) -> Bool {
        (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
    }

    /// Decodes the text form (`"27.1"`).
    ///
    /// - Parameter decoder: the decoder.
    /// - Throws: `DecodingError.dataCorrupted` when the text is not a version.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        guard let v = OSVersion(text) else {
            throw DecodingError.dataCorruptedError(
                in: container,
                debugDescription: "'\(text)' is not an OS version; give MAJOR.MINOR[.PATCH] such as 27.1"
            )
        }
        self = v
    }

    /// Encodes the text form (`"27.1"`).
    ///
    /// - Parameter encoder: the encoder.
    /// - Throws: what the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}
