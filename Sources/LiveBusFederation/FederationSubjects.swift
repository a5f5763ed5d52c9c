import Foundation

/// How the bus's names map to NATS subjects in the federation's stream (pure; PROTOCOL.md §5.8).
///
/// A NATS subject token may hold any byte but `.`, `*`, `>` and whitespace; the mapping keeps `A–Z a–z 0–9 -` and
/// writes every other byte as `_` and two upper-case hex digits (`_` itself is `_5F`), so it is reversible and a
/// topic's `/` segments become subject tokens: `orders/A1001` → `<prefix>.ev.orders.A1001`.
/// Source: https://docs.nats.io/nats-concepts/subjects ("Characters allowed and recommended for subject names").
public enum FederationSubjects {
    /// One name as one subject token.
    /// - Parameter name: Any string (a segment, a resume token, a metadata key); `""` maps to `_`.
    /// - Returns: The token.
    public static func token(_ name: String) -> String {
        if name.isEmpty { return "_" }
        var out = ""
        out.reserveCapacity(name.utf8.count)
        for b in name.utf8 {
            switch b {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"):
                out.unicodeScalars.append(Unicode.Scalar(b))
            default:
                out += "_" + String(b >> 4, radix: 16, uppercase: true) + String(b & 15, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// The name a token came from, or `nil` when it is not one ``token(_:)`` writes.
    /// - Parameter token: A subject token.
    /// - Returns: The name.
    public static func name(_ token: Substring) -> String? {
        if token == "_" { return "" }
        var bytes: [UInt8] = []
        var it = token.utf8.makeIterator()
        while let b = it.next() {
            if b == UInt8(ascii: "_") {
                guard let h = it.next(), let l = it.next(), let hi = hex(h), let lo = hex(l) else { return nil }
                bytes.append(hi << 4 | lo)
            } else {
                bytes.append(b)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hex(_ c: UInt8) -> UInt8? {
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return c - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return c - UInt8(ascii: "A") + 10
        default: return nil
        }
    }

    /// The subject of a topic's events: `<prefix>.ev.<segment>.<segment>…`.
    /// - Parameters:
    ///   - topic: A valid topic (non-empty segments).
    ///   - prefix: The federation's subject prefix, e.g. `livebus`.
    /// - Returns: The subject.
    public static func event(_ topic: String, prefix: String) -> String {
        prefix + ".ev."
            + topic.split(separator: "/", omittingEmptySubsequences: false).map { token(String($0)) }
            .joined(separator: ".")
    }

    /// The subject of a resume record: `<prefix>.rs.<token>`.
    public static func resume(_ token: String, prefix: String) -> String { prefix + ".rs." + Self.token(token) }
    /// The subject of a metadata value: `<prefix>.mt.<key>`.
    public static func meta(_ key: String, prefix: String) -> String { prefix + ".mt." + token(key) }
    /// The subject of one daemon's simulator state: `<prefix>.sim.<daemon>`.
    /// - Parameters:
    ///   - prefix: The federation's subject prefix.
    ///   - daemon: The daemon's identity (``FederationOptions/daemonID``).
    /// - Returns: The subject.
    public static func simulator(prefix: String, daemon: String) -> String { prefix + ".sim." + token(daemon) }

    /// What a subject of the federation's stream holds.
    public enum Kind: Equatable, Sendable {
        /// A topic's event.
        case event(topic: String)
        /// A resume record (or its removal).
        case resume(token: String)
        /// A metadata value.
        case meta(key: String)
        /// A daemon's simulator state (`nil`: `<prefix>.sim`, written by versions that kept one for the federation).
        case simulator(daemon: String?)
    }

    /// Reads a subject back.
    /// - Parameters:
    ///   - subject: A subject of the stream.
    ///   - prefix: The federation's subject prefix.
    /// - Returns: What it holds, or `nil` for a subject the mapping does not write.
    public static func kind(of subject: String, prefix: String) -> Kind? {
        guard subject.hasPrefix(prefix + ".") else { return nil }
        let rest = subject.dropFirst(prefix.count + 1)
        let parts = rest.split(separator: ".", omittingEmptySubsequences: false)
        guard let head = parts.first else { return nil }
        switch head {
        case "ev":
            guard parts.count >= 2 else { return nil }
            var segments: [String] = []
            for p in parts.dropFirst() {
                guard let n = name(p), !n.isEmpty else { return nil }
                segments.append(n)
            }
            return .event(topic: segments.joined(separator: "/"))
        case "rs":
            guard parts.count == 2, let n = name(parts[1]) else { return nil }
            return .resume(token: n)
        case "mt":
            guard parts.count == 2, let n = name(parts[1]) else { return nil }
            return .meta(key: n)
        case "sim":
            if parts.count == 1 { return .simulator(daemon: nil) }
            guard parts.count == 2, let n = name(parts[1]) else { return nil }
            return .simulator(daemon: n)
        default:
            return nil
        }
    }
}
