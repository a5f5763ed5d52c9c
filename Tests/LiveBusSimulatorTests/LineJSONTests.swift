import Testing

@testable import LiveBusSimulator

/// The line-tracking JSON reader (RFC 8259) behind scenario error messages.
struct LineJSONTests {
    func parse(_ s: String) throws(JSONSyntaxError) -> JSONNode { try LineJSON.parse(Array(s.utf8)) }

    /// Each value and key carries the line it starts on.
    @Test func valuesAndKeysKnowTheirLines() throws {
        let root = try parse("{\n  \"a\": 1,\n  \"b\": [\n    true,\n    \"x\"\n  ]\n}")
        guard case .object(let members) = root.value else {
            Issue.record("expected an object")
            return
        }
        #expect(root.line == 1)
        #expect(members.map(\.key) == ["a", "b"])
        #expect(members.map(\.keyLine) == [2, 3])
        guard case .array(let elements) = members[1].value.value else {
            Issue.record("expected an array")
            return
        }
        #expect(elements.map(\.line) == [4, 5])
        #expect(elements[1].value == .string("x"))
    }

    /// Escapes, including a UTF-16 surrogate pair, decode to the right scalars; numbers keep their text.
    @Test func escapesAndNumbers() throws {
        let node = try parse(#"["a\"b\\c\/\n\u00e9\ud83d\ude00", -0.5e2, 12345678901234567]"#)
        guard case .array(let e) = node.value else {
            Issue.record("expected an array")
            return
        }
        #expect(e[0].value == .string("a\"b\\c/\né😀"))
        #expect(e[1].value == .number(-50, text: "-0.5e2"))
        guard case .number(_, let text) = e[2].value else {
            Issue.record("expected a number")
            return
        }
        #expect(text == "12345678901234567")
    }

    struct Bad: Sendable, CustomTestStringConvertible {
        let text: String
        let line: Int
        var testDescription: String { text }
    }

    /// Malformed documents are rejected at the line of the problem.
    @Test(arguments: [
        Bad(text: "{\n\"a\": 1,\n}", line: 3),
        Bad(text: "[1,\n2\n3]", line: 3),
        Bad(text: "{\"a\"\n 1}", line: 2),
        Bad(text: "[01]", line: 1),
        Bad(text: "\n\n[\"abc", line: 3),
        Bad(text: "[\"a\nb\"]", line: 1),
        Bad(text: "[tru]", line: 1),
        Bad(text: "[1] 2", line: 1),
        Bad(text: "[\"\\ud800\"]", line: 1),
        Bad(text: "// comment\n{}", line: 1),
        Bad(text: "", line: 1),
    ])
    func syntaxErrorsNameTheLine(_ bad: Bad) {
        #expect {
            try parse(bad.text)
        } throws: { error in
            (error as? JSONSyntaxError)?.line == bad.line
        }
    }

    /// Nesting is limited, so a hostile file cannot exhaust the stack.
    @Test func nestingIsLimited() {
        let deep =
            String(repeating: "[", count: LineJSON.maximumDepth + 1)
            + String(repeating: "]", count: LineJSON.maximumDepth + 1)
        #expect(throws: JSONSyntaxError.self) { try parse(deep) }
        let ok =
            String(repeating: "[", count: LineJSON.maximumDepth) + String(repeating: "]", count: LineJSON.maximumDepth)
        #expect(throws: Never.self) { try parse(ok) }
    }

    /// Invalid UTF-8 inside a string is rejected.
    @Test func invalidUTF8() {
        #expect(throws: JSONSyntaxError.self) { try LineJSON.parse([0x22, 0xFF, 0x22]) }
    }
}
