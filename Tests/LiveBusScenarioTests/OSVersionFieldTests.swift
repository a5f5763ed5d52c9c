import LiveBusScenario
import Testing

/// Sessions declare the OS version they run (`os`, Protocol/E2E.md §2.2): valid versions decode, anything else is
/// rejected with file:line:field, and the `layout` invariant checks the iPhone Duo's OS rule on client layouts.
struct OSVersionFieldTests {
    static func scenario(os: String) -> String {
        """
        {"version": 1, "name": "x", "duration": "1s", "sessions": [
        {"name": "a", "device": "iphone-duo", "os": \(os)},
        {"name": "b"}]}
        """
    }

    static func decode(_ text: String) throws(E2EScenarioError) -> E2EScenario {
        try E2EScenarioDecoder.decode(Array(text.utf8), file: "Protocol/scenarios/x.json", knownDevices: nil)
    }

    /// `26.4`, `27.1`, `27.1.2` and `newest` decode; an absent `os` stays nil.
    @Test(arguments: [
        ("\"26.4\"", "26.4", E2EOSVersion(26, 4)),
        ("\"27.1\"", "27.1", E2EOSVersion(27, 1)),
        ("\"27.1.2\"", "27.1.2", E2EOSVersion(27, 1, 2)),
        ("\"newest\"", "newest", nil),
    ])
    func validVersionsDecode(json: String, text: String, version: E2EOSVersion?) throws {
        let s = try Self.decode(Self.scenario(os: json))
        #expect(s.sessions[0].os == text)
        #expect(s.sessions[0].osVersion == version)
        #expect(s.sessions[1].os == nil)
        #expect(s.sessions[1].osVersion == nil)
    }

    /// Versions that are not MAJOR.MINOR[.PATCH] or `newest` name the file, the line and the field.
    @Test(arguments: [
        ("\"27\"", "is not an OS version"),
        ("\"iOS 27.1\"", "is not an OS version"),
        ("\"27.1.2.3\"", "is not an OS version"),
        ("\"27.x\"", "is not an OS version"),
        ("\"27..1\"", "is not an OS version"),
        ("\"latest\"", "is not an OS version"),
        ("\"\"", "is not an OS version"),
        ("27.1", "expected a string"),
    ])
    func invalidVersionsNameFileLineAndField(json: String, message: String) {
        var e: E2EScenarioError?
        do { _ = try Self.decode(Self.scenario(os: json)) } catch { e = error }
        #expect(e?.line == 2)
        #expect(e?.field == "sessions[0].os")
        #expect(e?.message.contains(message) == true, "\(e?.description ?? "no error")")
        #expect(e?.description.hasPrefix("Protocol/scenarios/x.json:2: field 'sessions[0].os': ") == true)
    }

    /// Versions order part by part, a missing patch being 0.
    @Test func versionsOrder() {
        #expect(E2EOSVersion("26.4")! < E2EOSVersion.arrangementAPI)
        #expect(E2EOSVersion("27.0")! < E2EOSVersion.arrangementAPI)
        #expect(E2EOSVersion("27.1")! == E2EOSVersion.arrangementAPI)
        #expect(E2EOSVersion("27.1.1")! > E2EOSVersion.arrangementAPI)
        #expect(E2EOSVersion("26.10")! > E2EOSVersion("26.4")!)
        #expect(E2EOSVersion("27.1.2")!.description == "27.1.2")
        #expect(E2EOSVersion("27.1.0")!.description == "27.1")
    }

    /// A client layout line as the Swift client writes it.
    static func clientLayout(os: String, arrangement: String, fold: String = "flat") -> E2ELayoutRecord {
        var s = E2ESessionLog(name: "duo")
        s.appendLog(
            """
            {"type":"layout","session":"duo","device":"iphone-duo","foldState":"\(fold)","orientation":"portrait","os":"\(os)","arrangement":"\(arrangement)","reason":"r","horizontalSizeClass":"regular","invariantsHeld":true,"failedInvariants":[],"island":{},"trigger":"attach","clientTime":1800000000000}
            """
        )
        return s.layouts[0]
    }

    static func layoutResult(
        declared: String?,
        device: String = "iphone-duo",
        window: Bool = false,
        _ layouts: [E2ELayoutRecord]
    ) -> E2EInvariantResult {
        let posture = E2EPosture(
            foldState: "flat",
            orientation: "portrait",
            windowWidth: window ? 600 : nil,
            windowHeight: window ? 600 : nil
        )
        let scenario = E2EScenario(
            name: "unit",
            sessions: [E2ESessionSpec(name: "duo", device: device, posture: posture, os: declared)]
        )
        let logs = E2ERunLogs(sessions: [E2ESessionLog(name: "duo", layouts: layouts)])
        return E2EInvariantChecker.check(logs, scenario: scenario).first { $0.name == "layout" }!
    }

    /// The engine's rule holds: vertical before 27.1, horizontal from 27.1.
    @Test func osRulePasses() {
        #expect(Self.layoutResult(declared: "26.4", [Self.clientLayout(os: "26.4", arrangement: "vertical")]).passed)
        #expect(
            Self.layoutResult(
                declared: "26.4",
                [Self.clientLayout(os: "26.4", arrangement: "vertical", fold: "half-opened")]
            ).passed
        )
        #expect(Self.layoutResult(declared: "27.1", [Self.clientLayout(os: "27.1", arrangement: "horizontal")]).passed)
        #expect(
            Self.layoutResult(declared: "27.1.1", [Self.clientLayout(os: "27.1.1", arrangement: "horizontal")]).passed
        )
        // Folded: the outer display has no hinge, the rule does not apply.
        #expect(
            Self.layoutResult(
                declared: "27.1",
                [Self.clientLayout(os: "27.1", arrangement: "vertical", fold: "folded")]
            ).passed
        )
        // Another device, a window, or no declared version: not checked.
        #expect(
            Self.layoutResult(
                declared: "27.1",
                device: "iphone-16-pro",
                [Self.clientLayout(os: "27.1", arrangement: "vertical")]
            ).passed
        )
        #expect(
            Self.layoutResult(declared: "27.1", window: true, [Self.clientLayout(os: "27.1", arrangement: "vertical")])
                .passed
        )
        #expect(Self.layoutResult(declared: nil, [Self.clientLayout(os: "26.4", arrangement: "horizontal")]).passed)
        #expect(Self.layoutResult(declared: "newest", [Self.clientLayout(os: "27.1", arrangement: "vertical")]).passed)
    }

    /// An iPhone Duo on 26.4 that splits, one on 27.1 that does not, and a client that ignored `--os` all fail.
    @Test func osRuleFails() {
        let early = Self.layoutResult(declared: "26.4", [Self.clientLayout(os: "26.4", arrangement: "horizontal")])
        #expect(!early.passed)
        #expect(
            early.counterexample?.hasPrefix(
                "session duo (iphone-duo flat/portrait, iOS 26.4 < 27.1): arrangement horizontal, but ArrangementView is unavailable before 27.1"
            ) == true,
            "\(early.counterexample ?? "")"
        )

        let late = Self.layoutResult(
            declared: "27.1",
            [Self.clientLayout(os: "27.1", arrangement: "vertical", fold: "half-opened")]
        )
        #expect(!late.passed)
        #expect(
            late.counterexample?.hasPrefix(
                "session duo (iphone-duo half-opened/portrait, iOS 27.1 >= 27.1): arrangement vertical, expected the horizontal split"
            ) == true,
            "\(late.counterexample ?? "")"
        )

        let ignored = Self.layoutResult(declared: "26.4", [Self.clientLayout(os: "27.1", arrangement: "vertical")])
        #expect(!ignored.passed)
        #expect(
            ignored.counterexample?.hasPrefix("session duo: declared os 26.4 but the client laid out for 27.1") == true,
            "\(ignored.counterexample ?? "")"
        )
    }
}
