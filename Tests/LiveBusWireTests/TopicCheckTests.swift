import LiveBusWire
import Testing

/// Topic and pattern checks (the one-pass check for plain ASCII names and the full check behind it): the verdict
/// and the message for each kind of problem, and names the one-pass check leaves to the full one (non-ASCII, CR).
struct TopicCheckTests {
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
                == "topic 'has space' contains whitespace"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("a\tb") } == "topic 'a\tb' contains whitespace"
        )
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("a\nb") } == "topic 'a\nb' contains whitespace"
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
        #expect(
            Self.message { () throws(WireError) in try Topic.validate(long) }?.hasSuffix("is over 255 bytes") == true
        )
    }

    /// Names outside the one-pass check's ASCII: decided by the full check.
    @Test func nonASCIINamesGetTheFullCheck() {
        #expect(
            Self.message { () throws(WireError) in try Topic.validate("ä/ b") } == "topic 'ä/ b' contains whitespace"
        )
        #expect(Self.message { () throws(WireError) in try Topic.validate("日本/*") } != nil)
    }
}
