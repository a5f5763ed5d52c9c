import LiveBusWire
import Testing

/// Topic and pattern checks (the one-pass check for plain ASCII names and the full check behind it): the verdict
/// and the message for each kind of problem, and names the one-pass check leaves to the full one (non-ASCII, CR).
struct TopicCheckTests {
    /// The end of every message about a character a topic may not hold.
    static let rule = "a topic is printable UTF-8 without whitespace or control characters (PROTOCOL.md §5.1)"

    static func message(_ body: () throws(WireError) -> Void) -> String? {
        do throws(WireError) {
            try body()
            return nil
        } catch {
            #expect(error.code == .invalidTopic)
            return error.message
        }
    }

    @Test func validNamesPass() throws {
        for t in ["orders/A1001", "a", "a/b/c", "orders/tp1100/3", "x-y_z.1/ä/日本", String(repeating: "a", count: 255)] {
            try Topic.validate(t)
        }
        for p in ["orders/>", "orders/*", ">", "*", "a/*/c", "*/*/>", "orders/A1001"] { try Topic.validatePattern(p) }
    }

    @Test func eachProblemIsNamed() {
        #expect(Self.message { () throws(WireError) in try Topic.validate("") } == "topic is empty")
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("a//b") } == "topic 'a//b' has an empty segment"
        )
        #expect(Self.message { () throws(WireError) in try Topic.validate("/a") } == "topic '/a' has an empty segment")
        #expect(Self.message { () throws(WireError) in try Topic.validate("a/") } == "topic 'a/' has an empty segment")
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("has space") }
                == "topic 'has space' contains whitespace U+0020 at byte 3; \(Self.rule)"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("a\tb") }
                == "topic 'a\\u{0009}b' contains whitespace U+0009 at byte 1; \(Self.rule)"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("a\nb") }
                == "topic 'a\\u{000A}b' contains whitespace U+000A at byte 1; \(Self.rule)"
        )
        for t in ["orders/*", "orders/>", "a/b*", "a>/b"] {
            #expect(
                Self.message { () throws(WireError) in try Topic.validate(t) }
                    == "topic '\(t)' contains a wildcard; wildcards are for SUBSCRIBE patterns"
            )
        }
        #expect(
            Self.message { () throws(WireError) in try Topic.validatePattern("a/b*") }
                == "pattern 'a/b*': a wildcard must be a whole segment"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validatePattern("a/>/b") }
                == "pattern 'a/>/b': '>' may only be the last segment"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validatePattern("a//>") }
                == "topic pattern 'a//>' has an empty segment"
        )
        let long = String(repeating: "a", count: 256)
        #expect(Self.message { () throws(WireError) in try Topic.validate(long) } == "topic is 256 bytes; at most 255")
        #expect(
            Self.message { () throws(WireError) in try Topic.validatePattern(long + "/>") }
                == "topic pattern is 258 bytes; at most 255"
        )
    }

    /// Names outside the one-pass check's ASCII: decided by the full check.
    @Test func nonASCIINamesGetTheFullCheck() {
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("ä/ b") }
                == "topic 'ä/ b' contains whitespace U+0020 at byte 3; \(Self.rule)"
        )
        #expect(Self.message { () throws(WireError) in try Topic.validate("日本/*") } != nil)
    }

    /// Control characters (C0, DEL, C1) and Unicode whitespace are refused in topics and patterns, each named by
    /// its code point and the byte offset of its first UTF-8 byte, shown escaped in the message (fresh-user review
    /// 2026-12-03: `orders/a\u{0}b` was accepted, stored cut at the NUL, and the data directory refused at the next
    /// start). Source: PROTOCOL.md §5.1, Unicode `White_Space`.
    @Test(arguments: [
        ("orders/a\u{0}b", "the control character U+0000 at byte 8", "orders/a\\u{0000}b"),
        ("orders/a\u{1}b", "the control character U+0001 at byte 8", "orders/a\\u{0001}b"),
        ("orders/\u{1B}[31m", "the control character U+001B at byte 7", "orders/\\u{001B}[31m"),
        ("orders/a\rb", "whitespace U+000D at byte 8", "orders/a\\u{000D}b"),
        ("orders/a\u{7F}", "the control character U+007F at byte 8", "orders/a\\u{007F}"),
        ("orders/a\u{85}b", "whitespace U+0085 at byte 8", "orders/a\\u{0085}b"),
        ("orders/a\u{9B}b", "the control character U+009B at byte 8", "orders/a\\u{009B}b"),
        ("orders/a\u{A0}b", "whitespace U+00A0 at byte 8", "orders/a\\u{00A0}b"),
        ("orders/é\u{2028}", "whitespace U+2028 at byte 9", "orders/é\\u{2028}"),
        ("orders/\u{3000}", "whitespace U+3000 at byte 7", "orders/\\u{3000}"),
        ("orders/a\u{200A}b", "whitespace U+200A at byte 8", "orders/a\\u{200A}b"),
    ])
    func controlCharactersAndUnicodeWhitespaceAreNamed(topic: String, what: String, shown: String) {
        #expect(
            Self.message { () throws(WireError) in try Topic.validate(topic) }
                == "topic '\(shown)' contains \(what); \(Self.rule)"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validatePattern(topic + "/>") }
                == "topic pattern '\(shown)/>' contains \(what); \(Self.rule)"
        )
    }

    /// Printable characters next to the refused ones still pass: `~` (U+007E), `¡` (U+00A1, after NBSP), and
    /// non-ASCII letters.
    @Test func printableNeighboursPass() throws {
        for t in ["orders/~", "orders/\u{A1}", "orders/\u{2027}", "orders/조리", "orders/!\"#$%&'()+,-.:;<=?@[\\]^_`{|}"]
        {
            try Topic.validate(t)
        }
    }

    /// An encoder given a topic over 255 bytes (the frame's limit, PROTOCOL.md §2) throws, in the validator's words,
    /// rather than writing a frame whose topic length is cut.
    @Test func encodersRefuseATopicOver255Bytes() throws {
        let long = "orders/" + String(repeating: "x", count: 249)
        let refusal = WireError(.invalidTopic, "topic is 256 bytes; at most 255")
        #expect(throws: refusal) { _ = try Frame(type: .publish, sequence: 1, topic: long, body: []).encoded() }
        #expect(throws: refusal) {
            _ = try EventTemplate(topic: long, sequence: 1, body: GoldenVectors.json(GoldenVectors.event))
        }
        #expect(Self.message { () throws(WireError) in try Topic.validate(long) } == refusal.message)
        _ = try Frame(type: .publish, sequence: 1, topic: String(long.dropLast()), body: []).encoded()
    }
}
