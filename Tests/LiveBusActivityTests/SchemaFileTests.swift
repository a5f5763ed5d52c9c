import LiveBusActivity
import Testing

/// A schema text around `contentState` and `types`, with a valid presentation.
private func schemaText(contentState: String, types: String = "{}") -> String {
    """
    {
      "attributesType": "A",
      "attributes": [],
      "contentState": \(contentState),
      "types": \(types),
      "presentation": {
        "countdownEnd": "end", "statusText": "s",
        "compactLeading": [], "compactTrailing": [], "minimal": [], "expanded": [], "lockScreen": []
      }
    }
    """
}

/// Bad schema files: (text, the error's description). Each names the file, the line and the field.
private let badSchemas: [(String, String)] = [
    (
        "{\n  \"attributesType\": \"A\",\n  \"attributes\": [,]\n}",
        "bad.json:3: json: not valid JSON: unexpected character ',', expected a value"
    ),
    (
        schemaText(contentState: #"[{"name": "end", "type": "Date"},\#n {"name": "s", "type": "Stauts"}]"#),
        "bad.json:5: contentState.s.type: unknown type Stauts; use String, Int, Double, Bool, Date, URL or a name "
            + "declared in types"
    ),
    (
        schemaText(
            contentState: #"[{"name": "end", "type": "Date"}, {"name": "s", "type": "String"}]"#,
            types: """
                {
                    "Node": {"struct": [{"name": "next", "type": "Link?"}]},
                    "Link": {"struct": [{"name": "node", "type": "Node"}]}
                  }
                """
        ),
        "bad.json:7: types.Link: circular: Link contains itself (node: Node → next: Link); a struct cannot contain "
            + "itself except through an array"
    ),
    (
        schemaText(
            contentState: #"[{"name": "end", "type": "Date", "dateDecoding": "unix"}, {"name": "s", "type": "String"}]"#
        ),
        "bad.json:4: contentState.end.dateDecoding: \"unix\" is not a date decoding; use one of deferredToDate, "
            + "secondsSince1970, millisecondsSince1970, iso8601, iso8601WithFractionalSeconds"
    ),
    (
        schemaText(contentState: #"[{"name": "end", "type": "String"}, {"name": "s", "type": "String"}]"#),
        "bad.json:7: presentation.countdownEnd: end is String; the countdown end must be a Date field"
    ),
]

struct SchemaFileTests {
    /// Invalid JSON, an unknown type, a circular struct, an unknown date decoding and a countdown on a non-Date field
    /// are refused with file:line: field: message.
    /// Source: issue 16 ("a clear error with the file, line and field").
    @Test(arguments: badSchemas)
    func badSchemaNamesFileLineAndField(text: String, expected: String) {
        #expect(throws: ActivitySchemaError.self) { try ActivitySchema.parse(bytes(text), file: "bad.json") }
        do {
            _ = try ActivitySchema.parse(bytes(text), file: "bad.json")
        } catch {
            #expect(error.description == expected)
        }
    }

    /// An array of itself is allowed (a struct may hold `[Self]`), and every type spelling reads.
    @Test func recursionThroughAnArrayAndTypeSpellings() throws {
        let schema = try ActivitySchema.parse(
            bytes(
                schemaText(
                    contentState:
                        #"[{"name": "end", "type": "Date", "dateDecoding": "iso8601"}, {"name": "s", "type": "Level"}, {"name": "tree", "type": "[Node]?"}, {"name": "u", "type": "URL?"}]"#,
                    types:
                        #"{"Node": {"struct": [{"name": "children", "type": "[Node]"}]}, "Level": {"rawType": "Int", "cases": [1, 2]}}"#
                )
            ),
            file: "ok.json"
        )
        #expect(schema.contentState.map(\.type.description) == ["Date", "Level", "[Node]?", "URL?"])
        #expect(schema.contentState[0].type == .date(.iso8601))
        #expect(schema.types["Level"] == .enumeration(rawType: .int, cases: ["1", "2"]))
    }
}
