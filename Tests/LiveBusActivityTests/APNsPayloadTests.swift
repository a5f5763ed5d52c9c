import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

/// (payload, expected error code, expected field) for payloads that must be rejected.
private let rejected: [(String, String, String)] = [
    (#"[1,2]"#, "wrongType", "payload"),
    (#"{"aps":"#, "malformedJSON", "aps"),
    (#"{"Simulator Target Bundle":"com.example.livebus"}"#, "missingField", "aps"),
    (#"{"aps":[]}"#, "wrongType", "aps"),
    (#"{"Simulator Target Bundle":7,"aps":{}}"#, "wrongType", "Simulator Target Bundle"),
    (
        #"{"aps":{"event":"update","content-state":{"status":"cooking","etaEnd":788919600}}}"#, "missingField",
        "aps.timestamp"
    ),
    (#"{"aps":{"timestamp":"1767225600","event":"update"}}"#, "wrongType", "aps.timestamp"),
    (#"{"aps":{"timestamp":1767225600,"event":"pause"}}"#, "invalidValue", "aps.event"),
    (#"{"aps":{"timestamp":1767225600,"event":"update"}}"#, "missingField", "aps.content-state"),
    (#"{"aps":{"timestamp":1767225600,"event":"update","content-state":[]}}"#, "typeMismatch", "aps.content-state"),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"etaEnd":788919600}}}"#, "keyNotFound",
        "aps.content-state.status"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"lost","etaEnd":788919600}}}"#,
        "dataCorrupted", "aps.content-state.status"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking"}}}"#, "keyNotFound",
        "aps.content-state.etaEnd"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":"2026-01-01T00:20:00Z"}}}"#,
        "typeMismatch", "aps.content-state.etaEnd"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":788919600,"progress":1.5}}}"#,
        "invalidValue", "aps.content-state.progress"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":788919600,"riderPosition":{"latitude":91,"longitude":0}}}}"#,
        "invalidValue", "aps.content-state.riderPosition.latitude"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","stale-date":"soon","content-state":{"status":"cooking","etaEnd":788919600}}}"#,
        "wrongType", "aps.stale-date"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","relevance-score":"high","content-state":{"status":"cooking","etaEnd":788919600}}}"#,
        "wrongType", "aps.relevance-score"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","alert":7,"content-state":{"status":"cooking","etaEnd":788919600}}}"#,
        "wrongType", "aps.alert"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"start","content-state":{"status":"cooking","etaEnd":788919600},"attributes-type":"OrderAttributes","attributes":{}}}"#,
        "missingField", "aps.alert"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"start","alert":"hi","content-state":{"status":"cooking","etaEnd":788919600},"attributes":{}}}"#,
        "missingField", "aps.attributes-type"
    ),
    (
        #"{"aps":{"timestamp":1767225600,"event":"start","alert":"hi","content-state":{"status":"cooking","etaEnd":788919600},"attributes-type":"OrderAttributes"}}"#,
        "missingField", "aps.attributes"
    ),
    (#"{"aps":{"timestamp":1767225600,"timestamp":1767225601,"event":"update"}}"#, "malformedJSON", "aps"),
    (
        #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":07}}}"#,
        "malformedJSON", "aps.content-state.etaEnd"
    ),
    (#"{"aps":{}} x"#, "malformedJSON", "payload"),
]

struct APNsPayloadTests {
    /// Apple's update example parses: Unix-second aps dates, content-state dates as seconds since 2001-01-01.
    /// Source: reference/live-activities.md §2.2 (WWDC23 10185 example), §1.9 (default JSON date decoding).
    @Test func parsesAnUpdate() throws {
        let text = """
            {"Simulator Target Bundle":"com.example.livebus","aps":{"timestamp":1767225605,"event":"update",\
            "stale-date":1767225900,"relevance-score":100,"sound":"default",\
            "alert":{"title":"배달 중","body":"라이더가 출발했어요"},\
            "content-state":{"status":"delivering","etaEnd":788919000.25,"progress":0.75,"lastConfirmed":788918404,\
            "riderPosition":{"latitude":37.5,"longitude":127.0},"unknownKey":[1,{"a":null}]}}}
            """
        let payload = try APNsPayload.parse(bytes(text))
        #expect(payload.simulatorTargetBundle == "com.example.livebus")
        #expect(payload.timestamp == server(5))
        #expect(payload.event == .update)
        #expect(payload.staleDate == server(300))
        #expect(payload.relevanceScore == 100)
        #expect(payload.alert == PushAlert(title: "배달 중", body: "라이더가 출발했어요"))
        #expect(payload.contentState.status == .delivering)
        #expect(payload.contentState.etaTarget == server(600, ms: 250))
        #expect(payload.contentState.progress == 0.75)
        #expect(payload.contentState.lastConfirmed == server(4))
        #expect(payload.contentState.riderPosition == Coordinate(latitude: 37.5, longitude: 127.0))
        #expect(payload.byteCount == text.utf8.count)
        let update = payload.activityUpdate(orderID: "A1001", toClient: Skew(skewMilliseconds: 1000).toClient)
        #expect(update.timestamp == server(5))
        #expect(update.timestampInClientClock == client(6))
        #expect(update.etaTarget == client(601, ms: 250))
        #expect(update.staleDate == client(301))
        #expect(update.lastConfirmed == client(5))
        #expect(update.relevanceScore == 100)
    }

    /// Without `lastConfirmed` the aps timestamp is the last confirmation; without `progress` it is 0; a plain
    /// string alert is its body; a dismissal date is kept only for end.
    /// Source: reference/live-activities.md §2.2.
    @Test func defaults() throws {
        let payload = try APNsPayload.parse(
            bytes(
                #"{"aps":{"timestamp":1767225660,"event":"update","alert":"hi","dismissal-date":1767229200,"content-state":{"status":"pickedUp","etaEnd":788919300}}}"#
            )
        )
        #expect(payload.contentState.lastConfirmed == server(60))
        #expect(payload.contentState.progress == 0)
        #expect(payload.alert == PushAlert(title: nil, body: "hi"))
        #expect(payload.dismissalDate == server(3600))
        #expect(payload.activityUpdate(orderID: "A1001", toClient: Skew().toClient).dismissalDate == nil)
    }

    /// Bad payloads are rejected with the field named (`field: message`).
    /// Source: issue text; reference/live-activities.md §2.8 (simctl push: object at the top level with an aps key).
    @Test(arguments: rejected)
    func rejectsWithTheFieldNamed(payload: String, code: String, field: String) {
        do {
            _ = try APNsPayload.parse(bytes(payload))
            Issue.record("accepted \(payload)")
        } catch {
            #expect(error.code.description == code)
            #expect(error.field == field)
            #expect(error.description.hasPrefix("\(field): "))
        }
    }

    /// A date in another unit is applied exactly as the phone reads it (never refused), with a lint naming the value
    /// most likely meant: (payload, the lints as "code field suggested", the instant read in ms since 1970 at `path`).
    /// Source: reference/live-activities.md §1.9 (https://github.com/home-assistant/iOS/pull/4677), issue 16.
    @Test(
        arguments: [
            (
                #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":1767226800}}}"#,
                ["unixSecondsInReferenceDate aps.content-state.etaEnd 788919600"], "etaEnd",
                (1_767_226_800 + 978_307_200) * 1000
            ),
            (
                #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":1767226800000}}}"#,
                ["millisecondsEpoch aps.content-state.etaEnd 788919600"], "etaEnd",
                (1_767_226_800_000 + 978_307_200) * 1000
            ),
            (
                #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":-5}}}"#,
                ["implausibleEpoch aps.content-state.etaEnd -"], "etaEnd", (978_307_200 - 5) * 1000
            ),
            (
                #"{"aps":{"timestamp":1767225600,"event":"update","content-state":{"status":"cooking","etaEnd":788919600,"lastConfirmed":1767225600}}}"#,
                ["unixSecondsInReferenceDate aps.content-state.lastConfirmed 788918400"], "lastConfirmed",
                (1_767_225_600 + 978_307_200) * 1000
            ),
            (
                #"{"aps":{"timestamp":788918400,"event":"update","content-state":{"status":"cooking","etaEnd":788919600}}}"#,
                ["implausibleEpoch aps.timestamp 1767225600"], "etaEnd", 1_767_226_800_000
            ),
            (
                #"{"aps":{"timestamp":0,"event":"update","content-state":{"status":"cooking","etaEnd":788919600}}}"#,
                ["implausibleEpoch aps.timestamp -"], "etaEnd", 1_767_226_800_000
            ),
        ] as [(String, [String], String, Int64)]
    )
    func dateInAnotherUnitIsAppliedWithALint(payload: String, lints: [String], path: String, milliseconds: Int64)
        throws
    {
        let parsed = try APNsPayload.parse(bytes(payload))
        #expect(parsed.lints.map { "\($0.code.rawValue) \($0.field) \($0.suggested ?? "-")" } == lints)
        #expect(parsed.fields.value(at: path) == .date(milliseconds))
    }

    /// The 4096-byte limit: 4097 bytes is refused before parsing, naming the whole payload.
    /// Source: https://developer.apple.com/documentation/usernotifications/sending-notification-requests-to-apns
    @Test func payloadLimit() throws {
        #expect(throws: PushPayloadError.self) { try APNsPayload.parse(bytes(Payloads.padded(to: 4097))) }
        do {
            _ = try APNsPayload.parse(bytes(Payloads.padded(to: 4097)))
        } catch {
            #expect(error.code == .payloadTooLarge)
            #expect(error.field == "payload")
        }
        #expect(try APNsPayload.parse(bytes(Payloads.padded(to: 4096))).byteCount == 4096)
    }

    /// The content-state JSON encoder writes Apple's default date form and reads back to the same content state.
    /// Source: reference/live-activities.md §1.9 (default encoding strategies).
    @Test func contentStateRoundTrip() throws {
        let state = ContentState(
            status: .delivering,
            etaTarget: server(600, ms: 250),
            progress: 0.5,
            riderPosition: Coordinate(latitude: 37.25, longitude: 127.5),
            lastConfirmed: server(5),
            summary: CustomerSummary(ko: "배달 \"중\"", en: "On the way", detailKo: "줄\n바꿈\u{01}", detailEn: "Out")
        )
        let json = String(decoding: ContentStateJSON.encode(state), as: UTF8.self)
        #expect(
            json
                == #"{"status":"delivering","etaEnd":788919000.25,"progress":0.5,"lastConfirmed":788918405,"riderPosition":{"latitude":37.25,"longitude":127.5},"summary":{"ko":"배달 \"중\"","en":"On the way","detailKo":"줄\n바꿈\u0001","detailEn":"Out"}}"#
        )
        let payload = try APNsPayload.parse(
            bytes(#"{"aps":{"timestamp":1767225605,"event":"update","content-state":"# + json + "}}")
        )
        #expect(payload.contentState == state)
        #expect(payload.contentStateByteCount == json.utf8.count)
        #expect(ContentStateJSON.referenceSeconds(ServerInstant(millisecondsSinceEpoch: 978_307_199_995)) == "-0.005")
    }

    /// JSON strings with escapes and surrogate pairs decode exactly; invalid escapes are refused.
    /// Source: RFC 8259 §7.
    @Test func stringEscapes() throws {
        let payload = try APNsPayload.parse(
            bytes(
                #"{"aps":{"timestamp":1767225600,"event":"update","alert":{"title":"\ubc30\ub2ec \"A\"\n\ud83d\udeb2"},"content-state":{"status":"cooking","etaEnd":788919600}}}"#
            )
        )
        #expect(payload.alert?.title == "배달 \"A\"\n🚲")
        #expect(throws: PushPayloadError.self) {
            try APNsPayload.parse(bytes(#"{"aps":{"timestamp":1767225600,"event":"update","alert":"\ud83d"}}"#))
        }
        #expect(throws: PushPayloadError.self) { try APNsPayload.parse([0x7B, 0x22, 0xFF, 0x22, 0x3A, 0x31, 0x7D]) }
    }
}
