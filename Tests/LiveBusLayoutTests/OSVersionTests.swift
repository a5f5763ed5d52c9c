import Foundation
import Testing

@testable import LiveBusLayout

struct OSVersionTests {
    /// `MAJOR[.MINOR[.PATCH]]`, an optional `iOS` prefix, missing parts 0. Source: LiveBus issue 11 ("a session
    /// declares the OS version it runs").
    @Test(arguments: [
        ("27.1", OSVersion(27, 1, 0)),
        ("26.4", OSVersion(26, 4, 0)),
        ("27", OSVersion(27, 0, 0)),
        ("27.1.2", OSVersion(27, 1, 2)),
        ("iOS 26.4.1", OSVersion(26, 4, 1)),
        ("ios27.1", OSVersion(27, 1, 0)),
    ])
    func parsesVersions(text: String, expected: OSVersion) {
        #expect(OSVersion(text) == expected)
    }

    /// Anything else is not a version.
    @Test(arguments: ["", "27.", ".1", "27.1.2.3", "27.x", "-1", "27 .1", "latest", "٢٧.١", "27.1 "])
    func rejectsNonVersions(text: String) {
        #expect(OSVersion(text) == nil)
    }

    /// Part-by-part order: 26.4 < 27.0 < 27.1 < 27.1.1 < 27.2; 27.1 is the first with ArrangementView. Source:
    /// https://developer.apple.com/documentation/swiftui/arrangementview (iOS 27.1, not 27.0).
    @Test func ordersPartByPart() {
        let sorted = ["27.2", "27.1.1", "26.4", "27.1", "27.0", "9.9.9"].compactMap { OSVersion($0) }.sorted()
        #expect(sorted.map(\.description) == ["9.9.9", "26.4", "27.0", "27.1", "27.1.1", "27.2"])
        #expect(OSVersion.arrangementAPI == OSVersion(27, 1))
        #expect(OSVersion(27, 0) < .arrangementAPI)
        #expect(OSVersion.newest >= .arrangementAPI)
    }

    /// `newest`, `latest` and an empty word mean the newest version; a bad word names the fix. Source: LiveBus issue
    /// 11 (default the newest; clear error).
    @Test func parseForSessions() throws {
        #expect(try OSVersion.parse("newest") == .newest)
        #expect(try OSVersion.parse(" Latest ") == .newest)
        #expect(try OSVersion.parse("") == .newest)
        #expect(try OSVersion.parse(" 26.4 ") == OSVersion(26, 4))
        do {
            _ = try OSVersion.parse("twenty-seven")
            Issue.record("accepted a word")
        } catch {
            #expect(error.code == .invalidOSVersion)
            #expect(
                error.message
                    == "OS version 'twenty-seven' is not MAJOR.MINOR[.PATCH]; give e.g. 26.4 or 27.1 (ArrangementView "
                    + "and the vertical-edge toolbar need 27.1), or 'newest' for 27.1"
            )
        }
    }

    /// JSON carries the version as text; a posture without `osVersion` (written before it existed) decodes as the
    /// newest. Source: LiveBus issue 11 (keep existing postures working).
    @Test func codable() throws {
        let posture = Posture(
            deviceID: "iphone-duo",
            foldState: .flat,
            orientation: .landscape,
            osVersion: OSVersion(26, 4)
        )
        let data = try JSONEncoder().encode(posture)
        #expect(String(decoding: data, as: UTF8.self).contains("\"osVersion\":\"26.4\""))
        #expect(try JSONDecoder().decode(Posture.self, from: data) == posture)
        let old = #"{"deviceID":"iphone-16","foldState":"flat","orientation":"portrait","keyboardHeight":0}"#
        let decoded = try JSONDecoder().decode(Posture.self, from: Data(old.utf8))
        #expect(decoded.osVersion == .newest)
        #expect(decoded == Posture(deviceID: "iphone-16"))
        let bad =
            #"{"deviceID":"iphone-16","foldState":"flat","orientation":"portrait","keyboardHeight":0,"osVersion":"x"}"#
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(Posture.self, from: Data(bad.utf8)) }
    }
}
