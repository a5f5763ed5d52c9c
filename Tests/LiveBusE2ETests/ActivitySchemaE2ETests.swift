import Foundation
import LiveBusWire
import Testing

/// `livebusd --activity-schema` and `livebus attach --activity-schema` over real processes: a bad file stops the
/// daemon from starting (exit 2, file:line: field); a good one makes `livebus push` judge the user's own content state.
/// Source: issue 16.
@Suite(.serialized)
struct ActivitySchemaE2ETests {
    static let ride = E2ECLIGoldenTests.root.appendingPathComponent("Protocol/activity-schemas/ride.json").path

    /// A circular schema: the daemon does not start, and the message names file, line and field.
    @Test func badSchemaKeepsTheDaemonFromStarting() throws {
        let dir = temporaryDirectory("lbsch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let bad = dir + "/bad.json"
        let text = try String(contentsOfFile: Self.ride, encoding: .utf8).replacingOccurrences(
            of: #"{ "name": "rating", "type": "Double?" }"#,
            with: #"{ "name": "rating", "type": "Driver?" }"#
        )
        try text.write(toFile: bad, atomically: true, encoding: .utf8)
        let sock = dir + "/bus.sock"
        let d = try E2ECLIGoldenTests.run(
            ["--socket", sock, "--memory", "--activity-schema", bad],
            tool: "livebusd"
        )
        #expect(d.exit == 2, "\(d.stderr)")
        #expect(d.stderr.contains("\(bad):21: types.Driver: circular: Driver contains itself"), "\(d.stderr)")
        #expect(!FileManager.default.fileExists(atPath: sock))
        let a = try E2ECLIGoldenTests.run(["attach", "--socket", sock, "--activity-schema", dir + "/missing.json"])
        #expect(a.exit == 2 && a.stderr.contains("cannot read the activity schema"), "\(a.stderr)")
    }

    /// With the ride schema on the daemon, a phone without its own judges pushes with it: a ride payload with an
    /// extra key is applied (the status text shown), one missing `driver.plate` is dropped naming the key, and a
    /// Unix-seconds `pickup_at` is applied with its lint.
    @Test func pushIsJudgedWithTheDaemonsSchema() throws {
        let dir = temporaryDirectory("lbsch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let sock = dir + "/bus.sock"
        let d = try DaemonChild(
            [
                "--socket", sock, "--memory", "--scenario", "demo-120s", "--log-level", "warning",
                "--activity-schema", Self.ride,
            ],
            log: dir + "/d.log"
        )
        defer { d.terminate() }
        for _ in 0..<300 where !FileManager.default.fileExists(atPath: sock) { usleep(10_000) }
        let attach = Process()
        attach.executableURL = URL(fileURLWithPath: E2ECLIGoldenTests.bin + "/livebus")
        attach.arguments = ["attach", "--socket", sock, "--name", "rider", "--json", "--duration", "30s"]
        attach.standardOutput = FileHandle.nullDevice
        attach.standardError = FileHandle.nullDevice
        try attach.run()
        defer { attach.terminate() }
        usleep(1_000_000)
        let now = Int(Date().timeIntervalSince1970) + 30
        func payload(_ driver: String, pickup: Int) -> String {
            #"{"aps":{"timestamp":\#(now),"event":"update","content-state":{"phase":"arriving","driver":\#(driver),"pickup_at":\#(pickup),"arrives_at":\#(now + 600),"status_line":"Mina is 10 min away","surge":2}}}"#
        }
        // Exit 0 when a phone applied or judged it, 2 when every phone found the content state undecodable (the
        // push exit rule, `livebus help push`).
        func push(_ text: String, exit: Int32 = 0) throws -> JSONValue? {
            let r = try E2ECLIGoldenTests.run(
                ["push", "rider", "-", "--order", "A1001", "--socket", sock, "--json"],
                stdin: text
            )
            #expect(r.exit == exit, "\(r.stdout) \(r.stderr)")
            guard case .array(let results)? = r.json?["data"]?["results"] else { return nil }
            return results.first?["data"]
        }
        let applied = try push(payload(#"{"name":"Mina","plate":"12가 3456"}"#, pickup: now - 978_307_200 + 60))
        #expect(applied?["applied"] == .bool(true), "\(String(describing: applied))")
        #expect(applied?["status"]?.stringValue == "Mina is 10 min away")
        #expect(applied?["lints"] == nil)
        let dropped = try push(payload(#"{"name":"Mina"}"#, pickup: now - 978_307_200), exit: 2)
        #expect(dropped?["applied"] == .bool(false))
        #expect(dropped?["reason"]?.stringValue == "keyNotFound")
        #expect(dropped?["message"]?.stringValue?.hasPrefix("aps.content-state.driver.plate: keyNotFound") == true)
        let unix = try push(payload(#"{"name":"Mina","plate":"12가 3456"}"#, pickup: now + 60))
        #expect(unix?["applied"] == .bool(true))
        guard case .array(let lints)? = unix?["lints"] else {
            Issue.record("no lints: \(String(describing: unix))")
            return
        }
        #expect(lints.map { $0["code"]?.stringValue } == ["unixSecondsInReferenceDate"])
        #expect(lints.first?["suggested"]?.stringValue == String(now + 60 - 978_307_200))
    }

    /// `livebus layout --remaining --status` checks a countdown offline: `2:20:13` on the 393-pt-wide iPhone 16
    /// overflows the 44 pt trailing box (in --json, the text and the SVG); `12:34` does not.
    @Test func layoutChecksTheRemainingTimeOffline() throws {
        let dir = temporaryDirectory("lbsch")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let long = try E2ECLIGoldenTests.run([
            "layout", "--device", "iphone-16", "--remaining", "2h20m13s", "--status", "Mina", "--json",
        ])
        #expect(long.exit == 0, "\(long.stderr)")
        guard case .array(let truncations)? = long.json?["data"]?["truncations"] else {
            Issue.record("no truncations: \(long.stdout)")
            return
        }
        let timer = truncations.first { $0["element"]?.stringValue == "compactTrailing.timer" }
        #expect(timer?["text"]?.stringValue == "2:20:13")
        #expect(timer?["available"]?.doubleValue == 44)
        let short = try E2ECLIGoldenTests.run([
            "layout", "--device", "iphone-16", "--remaining", "12m34s", "--svg", dir + "/short.svg",
        ])
        #expect(!short.stdout.contains("overflow compactTrailing.timer"), "\(short.stdout)")
        #expect(short.stdout.contains("overflow compactLeading.statusBox"), "\(short.stdout)")
        let svg = try E2ECLIGoldenTests.run([
            "layout", "--device", "iphone-16", "--remaining", "2h20m13s", "--svg", dir + "/long.svg",
        ])
        #expect(svg.stdout.contains("overflow compactTrailing.timer \"2:20:13\""), "\(svg.stdout)")
        let picture = try String(contentsOfFile: dir + "/long.svg", encoding: .utf8)
        #expect(picture.contains("overflow compactTrailing.timer &quot;2:20:13&quot;"))
        let schema = try E2ECLIGoldenTests.run([
            "layout", "--device", "iphone-16", "--remaining", "2h20m13s", "--activity-schema", Self.ride,
        ])
        #expect(schema.exit == 0 && schema.stdout.contains("overflow compactTrailing.timer"), "\(schema.stderr)")
    }

    static let fixtures = E2ECLIGoldenTests.root.appendingPathComponent("Tests/Fixtures/ActivityAttributes").path

    static func imported(_ file: String, _ extra: [String] = []) throws -> (E2ECLIGoldenTests.Run, JSONValue?) {
        let r = try E2ECLIGoldenTests.run(["schema", "import", "\(fixtures)/\(file)", "--json"] + extra)
        return (r, r.json?["data"]?["schema"])
    }

    static func fields(_ schema: JSONValue?, _ list: String) -> [String] {
        guard case .array(let items)? = schema?[list] else { return [] }
        return items.map { item in
            var text =
                "\(item["key"]?.stringValue ?? item["name"]?.stringValue ?? "?"):\(item["type"]?.stringValue ?? "?")"
            if let d = item["dateDecoding"]?.stringValue { text += ":\(d)" }
            return text
        }
    }

    /// `livebus schema import` on a food-delivery app: CodingKeys, a String enum with a custom raw value, a nested
    /// optional struct, an array of structs and an optional URL, read with the compiler's parser.
    @Test func importsCodingKeysEnumsAndNestedStructs() throws {
        let (r, schema) = try Self.imported("FoodOrderAttributes.swift")
        #expect(r.exit == 0, "\(r.stdout) \(r.stderr)")
        #expect(schema?["attributesType"]?.stringValue == "FoodOrderAttributes")
        #expect(Self.fields(schema, "attributes") == ["orderNumber:String", "restaurant:String", "isPriority:Bool"])
        #expect(
            Self.fields(schema, "contentState") == [
                "stage:Stage", "courier:Courier?", "items:[Item]", "promised_by:Date", "tracking_link:URL?",
                "headline:String", "minutes_late:Int",
            ]
        )
        #expect(
            schema?["types"]?["Stage"]?["cases"]
                == .array(["placed", "preparing", "on_the_way", "delivered"].map { .string($0) })
        )
        #expect(
            Self.fields(schema?["types"]?["Courier"], "struct") == ["name:String", "vehicle:String", "rating:Double?"]
        )
        #expect(schema?["presentation"]?["countdownEnd"]?.stringValue == "promised_by")
        #expect(schema?["presentation"]?["statusText"]?.stringValue == "stage")
        #expect(r.json?["data"]?["skipped"] == .array([]))
    }

    /// A custom `init(from:)`: Unix seconds, milliseconds (`/ 1000`) and ISO 8601 with fractional seconds are read
    /// from how it builds each Date; an Int enum keeps its raw values. The written file starts a daemon.
    @Test func importsACustomInitFromDecoder() throws {
        let dir = temporaryDirectory("lbimp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (r, schema) = try Self.imported("FlightAttributes.swift")
        #expect(r.exit == 0, "\(r.stdout) \(r.stderr)")
        #expect(
            Self.fields(schema, "contentState") == [
                "gate:String", "boarding:BoardingState", "departs_at:Date:secondsSince1970",
                "updated_ms:Date:millisecondsSince1970", "lands_at:Date?:iso8601WithFractionalSeconds", "delay:Int",
            ]
        )
        #expect(schema?["types"]?["BoardingState"]?["rawType"]?.stringValue == "Int")
        #expect(schema?["types"]?["BoardingState"]?["cases"] == .array([0, 1, 2, 9].map { .number($0) }))
        let written = try E2ECLIGoldenTests.run([
            "schema", "import", "\(Self.fixtures)/FlightAttributes.swift", "--output", dir + "/flight.json",
        ])
        #expect(written.exit == 0 && written.stdout.contains("written to"), "\(written.stderr)")
        let layout = try E2ECLIGoldenTests.run([
            "layout", "--device", "iphone-16", "--remaining", "1m", "--activity-schema", dir + "/flight.json",
        ])
        #expect(layout.exit == 0, "\(layout.stderr)")
    }

    /// What the importer cannot read is listed and nothing is written (exit 2); --allow-partial writes the rest and
    /// lists it again; a Swift syntax error is the compiler's message.
    @Test func importSaysWhatItCouldNotRead() throws {
        let dir = temporaryDirectory("lbimp")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let (r, _) = try Self.imported("MatchAttributes.swift")
        #expect(r.exit == 2)
        #expect(r.json?["error"]?["code"]?.stringValue == "importIncomplete")
        let message = r.json?["error"]?["message"]?.stringValue ?? ""
        #expect(
            message.hasSuffix(
                "nothing was written:\n  ContentState.period: enum Period has no String or Int raw type (its JSON form "
                    + "is not a plain value)\n  ContentState.score: the type (dictionary) has no schema form"
            ),
            "\(message)"
        )
        let partial = try E2ECLIGoldenTests.run([
            "schema", "import", "\(Self.fixtures)/MatchAttributes.swift", "--allow-partial", "--output",
            dir + "/m.json",
        ])
        #expect(partial.exit == 0)
        #expect(partial.stderr.components(separatedBy: "skipped: ").count == 3, "\(partial.stderr)")
        try "struct Broken {\n".write(toFile: dir + "/Broken.swift", atomically: true, encoding: .utf8)
        let broken = try E2ECLIGoldenTests.run(["schema", "import", dir + "/Broken.swift"])
        #expect(broken.exit == 2 && broken.stderr.contains("swiftc could not parse"), "\(broken.stderr)")
    }
}
