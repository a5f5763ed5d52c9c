import Foundation
import LiveBusActivity
import LiveBusClock
import LiveBusSimulator
import Testing

/// The repository's `Protocol/` directory.
private let protocolDirectory = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Protocol").path

/// A second app's schema (`Protocol/activity-schemas/ride.json`): a nested struct (`driver`), an enum (`phase`), an
/// optional URL (`tracking_url`) and two Dates, `pickup_at` default-decoded and `arrives_at` in seconds since 1970.
private let ride: ActivitySchema = try! ActivitySchema.load(path: "\(protocolDirectory)/activity-schemas/ride.json")

/// A ride content state; `replacing` swaps `"key":value` texts, `extra` is appended inside the object.
private func rideContent(_ replacements: [String: String] = [:], extra: String = "") -> String {
    var fields: [(String, String)] = [
        ("phase", #""arriving""#),
        ("driver", #"{"name":"Mina","plate":"12가 3456","rating":4.9}"#),
        ("pickup_at", "788918700"),  // T0+300 as seconds since 2001
        ("arrives_at", "1767226500"),  // T0+900 as Unix seconds
        ("tracking_url", #""https://ride.example/t/R7""#),
        ("status_line", #""Mina is 5 min away""#),
    ]
    fields = fields.compactMap { key, value in
        guard let replacement = replacements[key] else { return (key, value) }
        return replacement.isEmpty ? nil : (key, replacement)
    }
    return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + extra + "}"
}

private func ridePush(at seconds: String, event: String = "update", content: String, aps extra: String = "") -> [UInt8]
{
    bytes(#"{"aps":{"timestamp":\#(seconds),"event":"\#(event)","content-state":\#(content)\#(extra)}}"#)
}

/// A board using the ride schema, with R7's activity started at T0 from `rideContent()`.
private func rideBoard() -> ActivityBoard {
    var board = ActivityBoard(profile: DeviceProfile())
    board.schema = ride
    let start = try! APNsPayload.parse(ridePush(at: "1767225600", content: rideContent()), schema: ride)
        .activityUpdate(orderID: "R7", toClient: Skew().toClient)
    precondition(board.orderCreated(start, origin: .orderCreation, at: client(0)).applied)
    return board
}

private func lintTexts(_ verdict: Verdict) -> [String] {
    verdict.lints.map { "\($0.code.rawValue) \($0.field) \($0.suggested ?? "-")" }
}

struct SchemaVerdictTests {
    /// The second app's payload with an extra key (and an extra key in the nested struct) is applied: the countdown
    /// follows `arrives_at` (seconds since 1970), `pickup_at` reads seconds since 2001; no lint.
    /// Source: https://developer.apple.com/documentation/foundation/jsondecoder (unknown keys ignored), issue 16.
    @Test func secondAppsPayloadWithAnExtraKeyIsApplied() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(
                at: "1767225660",
                content: rideContent(
                    ["driver": #"{"name":"Mina","plate":"12가 3456","car":"blue"}"#, "arrives_at": "1767226560"],
                    extra: #","surge":1.4"#
                )
            ),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(verdict.applied)
        #expect(verdict.reason == nil)
        #expect(verdict.lints.isEmpty)
        let activity = board.activity("R7")
        #expect(activity?.etaTarget == client(960))
        #expect(activity?.content.summary.en == "Mina is 5 min away")
        #expect(activity?.fields.value(at: "pickup_at") == .date(t0Milliseconds + 300_000))
        #expect(activity?.fields.value(at: "driver.rating") == nil)
        #expect(activity?.fields.value(at: "tracking_url") == .url("https://ride.example/t/R7"))
        #expect(activity?.fields.value(at: "phase") == .enumCase("arriving"))
    }

    /// A missing required key (`driver.plate`) drops the update, naming the key and its type; the phone shows the
    /// previous content.
    /// Source: https://developer.apple.com/documentation/swift/decodingerror/keynotfound(_:_:) , issue 16.
    @Test func missingRequiredKeyDropsTheUpdate() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(
                at: "1767225660",
                content: rideContent(
                    ["driver": #"{"name":"Mina"}"#, "arrives_at": "1767226560"],
                    extra: #","surge":1"#
                )
            ),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(!verdict.applied)
        #expect(verdict.reason?.code == "keyNotFound")
        #expect(
            verdict.reason?.message
                == "aps.content-state.driver.plate: keyNotFound: the key \"plate\" (String) is missing; the phone "
                + "drops the update and shows nothing new"
        )
        #expect(verdict.lints.isEmpty)
        #expect(board.activity("R7")?.etaTarget == client(900))
        // A missing optional key is nil, not an error.
        var second = rideBoard()
        let optional = second.push(
            ridePush(at: "1767225660", content: rideContent(["tracking_url": ""])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(optional.applied)
        #expect(second.activity("R7")?.fields.value(at: "tracking_url") == nil)
    }

    /// An ISO-8601 string in a default-decoded Date drops the update, naming the field and the expected type.
    /// Source: reference/live-activities.md §2.2 ("decoded with default JSONDecoder strategies").
    @Test func isoStringInADefaultDateIsDropped() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(at: "1767225660", content: rideContent(["pickup_at": #""2026-01-01T00:05:00Z""#])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(!verdict.applied)
        #expect(verdict.reason?.code == "typeMismatch")
        #expect(
            verdict.reason?.message
                == "aps.content-state.pickup_at: typeMismatch: expected Date (seconds since 2001-01-01), found a "
                + "string; a string (ISO 8601) is not read by this decoding, send a number; the update is dropped"
        )
        #expect(verdict.lints.isEmpty)
    }

    /// A content date in Unix seconds is applied 31 years ahead, with a lint suggesting the reference-date value.
    /// Source: https://github.com/home-assistant/iOS/pull/4677 (reference/live-activities.md §1.9), issue 16.
    @Test func unixSecondsInAContentDateIsApplied31YearsAhead() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(at: "1767225660", content: rideContent(["pickup_at": "1767225900"])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(verdict.applied)
        #expect(lintTexts(verdict) == ["unixSecondsInReferenceDate aps.content-state.pickup_at 788918700"])
        let shown = board.activity("R7")?.fields.value(at: "pickup_at")
        #expect(shown == .date((1_767_225_900 + APNsPayload.referenceDateUnixSeconds) * 1000))
        // 978 307 200 s later: 31 years (and 8 leap days).
        #expect(APNsPayload.referenceDateUnixSeconds / 86_400 == 31 * 365 + 8)
    }

    /// `aps.timestamp` in milliseconds is applied (read as seconds, thousands of years ahead) with a lint; a later
    /// correct update is then ignored as older, and its verdict says why.
    /// Source: update(_:alertConfiguration:timestamp:) ("If this is older than a previous update … ignores"),
    /// PROTOCOL.md §9.6 (our choice: the 8-hour rule does not drop a millisecond timestamp), issue 16.
    @Test func millisecondTimestampThenACorrectUpdate() {
        var board = rideBoard()
        let first = board.push(
            ridePush(at: "1767225660000", content: rideContent(["status_line": #""first""#])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(first.applied)
        #expect(lintTexts(first) == ["millisecondsEpoch aps.timestamp 1767225660"])
        #expect(first.warning == nil)
        let second = board.push(
            ridePush(at: "1767225720", content: rideContent(["status_line": #""second""#])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(120)
        )
        #expect(!second.applied)
        #expect(second.reason?.code == "olderTimestamp")
        #expect(
            second.reason?.message
                == "the update is older than the content already shown; send a newer timestamp; the timestamp applied "
                + "earlier, 1767225660000, was Unix milliseconds read as seconds (lint millisecondsEpoch), so every "
                + "update stamped in seconds is older than it until the activity ends"
        )
        #expect(board.activity("R7")?.content.summary.en == "first")
        // An end carrying the same mistakes is applied, not lost.
        let end = board.push(
            ridePush(at: "1767225780000", event: "end", content: rideContent(["arrives_at": "1767226800000"])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(180)
        )
        #expect(end.applied)
        #expect(
            lintTexts(end) == [
                "millisecondsEpoch aps.timestamp 1767225780",
                "millisecondsEpoch aps.content-state.arrives_at 1767226800",
            ]
        )
        #expect(board.activity("R7")?.state == .ended)
    }

    /// An end without a dismissal date stays until its timestamp + 4 h (counted from the timestamp, not from when it
    /// was applied), then leaves: the verdict reports the removal time; 1 ms before it is still on the lock screen.
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/default ("up to four
    /// hours after it ended"), PROTOCOL.md §9.7.
    @Test func endWithoutDismissalDateAtTheFourHourBoundary() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(at: "1767225700", event: "end", content: rideContent(["phase": #""completed""#])),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(250)
        )
        #expect(verdict.applied)
        #expect(verdict.removalAt == client(100 + 14_400))
        #expect(verdict.lints.isEmpty)
        #expect(verdict.json.contains(#""removalAt":\#(t0Milliseconds + 14_500_000)"#))
        #expect(board.nextDeadline == client(14_500))
        #expect(board.tick(at: client(14_500, ms: -1)).isEmpty)
        #expect(board.activity("R7")?.state == .ended)
        #expect(
            board.tick(at: client(14_500)) == [ActivityTransition(orderID: "R7", kind: .dismissed, at: client(14_500))]
        )
        #expect(board.activity("R7")?.state == .dismissed)
    }

    /// A dismissal date more than 4 h after the end's timestamp is clamped to 4 h, with a hint.
    /// Source: https://developer.apple.com/documentation/activitykit/activityuidismissalpolicy/after(_:)
    @Test func dismissalDateBeyondFourHoursIsClamped() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(at: "1767225700", event: "end", content: rideContent(), aps: #","dismissal-date":1767254500"#),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(100)
        )
        #expect(verdict.applied)
        #expect(lintTexts(verdict) == ["dismissalDateClamped aps.dismissal-date 1767240100"])
        #expect(verdict.removalAt == client(14_500))
    }

    /// An update carrying a dismissal date and start-only keys is applied; each key gets its lint.
    /// Source: reference/live-activities.md §2.2 (dismissal-date with end; attributes, attributes-type,
    /// input-push-channel with start).
    @Test func updateWithDismissalDateAndStartOnlyKeys() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(
                at: "1767225660",
                content: rideContent(),
                aps:
                    #","dismissal-date":1767229200,"attributes-type":"RideAttributes","attributes":{"ride_id":"R7","passenger_name":"Ada"},"input-push-channel":"c1""#
            ),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(60)
        )
        #expect(verdict.applied)
        #expect(
            lintTexts(verdict) == [
                "startOnlyKeyOnUpdate aps.attributes -", "startOnlyKeyOnUpdate aps.attributes-type -",
                "startOnlyKeyOnUpdate aps.input-push-channel -", "dismissalDateOnUpdate aps.dismissal-date -",
            ]
        )
        #expect(board.activity("R7")?.state == .active)
    }

    /// Every other lint of the list, each listed (not only the first): content-available, unknown aps keys, a
    /// fractional timestamp, a stale date before the timestamp, an empty alert title and body.
    /// Source: reference/live-activities.md §2.2 (the keys a Live Activity push reads), issue 16.
    @Test func everyLintIsListed() {
        var board = rideBoard()
        let verdict = board.push(
            ridePush(
                at: "1767225660.5",
                content: rideContent(),
                aps:
                    #","content-available":1,"badge":3,"sound":"default","stale-date":1767225600,"alert":{"title":"","body":""}"#
            ),
            orderID: "R7",
            toClient: Skew().toClient,
            at: client(61)
        )
        #expect(verdict.applied)
        #expect(
            lintTexts(verdict) == [
                "fractionalTimestamp aps.timestamp 1767225660",
                "contentAvailableInLiveActivity aps.content-available -",
                "unknownApsKey aps.badge -", "unknownApsKey aps.sound -",
                "staleDateBeforeTimestamp aps.stale-date -", "emptyAlertText aps.alert.title -",
                "emptyAlertText aps.alert.body -",
            ]
        )
        #expect(board.activity("R7")?.state == .stale)
    }

    /// JSON with a comment or a trailing comma is rejected as APNs rejects it, with the line and column.
    /// Source: RFC 8259 (no comments, no trailing commas).
    @Test func commentsAndTrailingCommasAreRejectedWithLineAndColumn() {
        var board = rideBoard()
        let text = """
            {"aps":{"timestamp":1767225660, // now
              "event":"update","content-state":\(rideContent()),
            }}
            """
        let verdict = board.push(bytes(text), orderID: "R7", toClient: Skew().toClient, at: client(60))
        #expect(!verdict.applied)
        #expect(verdict.reason?.code == "malformedPayload")
        #expect(verdict.reason?.message.hasPrefix("aps: not valid JSON at line 1, column 33") == true)
        #expect(verdict.lints.map(\.code) == [.jsonComment, .jsonTrailingComma])
        let commaColumn = "  \"event\":\"update\",\"content-state\":\(rideContent())".utf8.count + 1
        #expect(
            verdict.lints.map(\.message) == [
                "a comment at line 1, column 33: JSON has no comments and APNs rejects the payload; remove it",
                "a trailing comma at line 2, column \(commaColumn): JSON allows none and APNs rejects the payload; "
                    + "remove it",
            ]
        )
    }

    /// `Protocol/lints.json` lists exactly the codes ``LintCode`` has.
    @Test func lintsFileListsEveryCode() throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: "\(protocolDirectory)/lints.json"))
        let root = try JSONSerialization.jsonObject(with: data) as? [String: Any]
        let codes = (root?["lints"] as? [[String: Any]])?.compactMap { $0["code"] as? String }
        #expect(codes == LintCode.allCases.map(\.rawValue))
    }

    /// The built-in delivery schema is the file shipped in `Protocol/activity-schemas/delivery.json`.
    @Test func deliverySchemaIsTheProtocolFile() throws {
        let shipped = try ActivitySchema.load(path: "\(protocolDirectory)/activity-schemas/delivery.json")
        #expect(shipped.contentState == ActivitySchema.delivery.contentState)
        #expect(shipped.types == ActivitySchema.delivery.types)
        #expect(shipped.presentation == ActivitySchema.delivery.presentation)
        #expect(shipped.readsAsDelivery)
        #expect(!ride.readsAsDelivery)
    }
}

/// A start push's `attributes` decode with the schema's attributes too.
struct SchemaAttributesTests {
    /// A start whose attributes lack a non-optional key fails with keyNotFound naming `aps.attributes.…`.
    /// Source: reference/live-activities.md §2.2 (attributes: the static attributes JSON, start only).
    @Test func startAttributesDecodeWithTheSchema() {
        let text =
            #"{"aps":{"timestamp":1767225600,"event":"start","alert":{"title":"Ride","body":"On the way"},"attributes-type":"RideAttributes","attributes":{"ride_id":"R7"},"content-state":\#(rideContent())}}"#
        #expect(throws: PushPayloadError.self) { try APNsPayload.parse(bytes(text), schema: ride) }
        do {
            _ = try APNsPayload.parse(bytes(text), schema: ride)
        } catch {
            #expect(error.code == .keyNotFound)
            #expect(error.field == "aps.attributes.passenger_name")
            #expect(error.expectedType == "String")
        }
        let complete = text.replacingOccurrences(
            of: #"{"ride_id":"R7"}"#,
            with: #"{"ride_id":"R7","passenger_name":"Ada"}"#
        )
        #expect((try? APNsPayload.parse(bytes(complete), schema: ride))?.attributesType == "RideAttributes")
    }
}

struct EndTimestampTests {
    /// An end whose timestamp was milliseconds read as seconds still leaves the lock screen 12 hours after the start
    /// at the latest. Source: https://developer.apple.com/documentation/activitykit/displaying-live-data-with-live-activities
    /// ("up to 12 hours"), PROTOCOL.md §9.7.
    @Test func removalNeverLaterThanTwelveHoursAfterTheStart() {
        var board = startedBoard()
        let end =
            #"{"aps":{"timestamp":1767225700000,"event":"end","content-state":{"status":"delivered","etaEnd":788919600}}}"#
        let verdict = board.push(bytes(end), orderID: "A1001", toClient: Skew().toClient, at: client(100))
        #expect(verdict.applied)
        #expect(verdict.lintCodes == ["millisecondsEpoch"])
        #expect(verdict.removalAt == client(12 * 3600))
    }
}

struct PresentationStyleTests {
    /// The built-in delivery schema's text styles are the field report's fonts (12 pt semibold status, 15 pt timer
    /// in the compact boxes, 17 pt semibold headline), so the default layout is unchanged by reading it from the file.
    @Test func deliveryPresentationStyles() {
        let p = ActivitySchema.delivery.presentation
        #expect(p.compactLeading == [PresentationItem(content: .statusText, style: .caption, width: 56)])
        #expect(p.compactTrailing == [PresentationItem(content: .countdown, style: .subheadline, width: 44)])
        #expect(p.expanded.map(\.style) == [.headline, .headline, .footnote])
        #expect(p.lockScreen.map(\.style) == [.headline, .headline, .subheadline])
    }
}
