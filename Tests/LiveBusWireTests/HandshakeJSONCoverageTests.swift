import Foundation
import Testing

@testable import LiveBusWire

/// The Foundation-free HELLO reader skips keys it does not know, as JSONDecoder does, so a field added to a
/// `Codable` body but not to the reader would vanish without an error (review finding 2: `profile.bundleID` and
/// `profile.channels` did). This test holds a HELLO with every field of every nested body set: a new field fails
/// it until the sample sets it, and then the comparison fails until the reader reads it.
struct HandshakeJSONCoverageTests {
    static let everyField = #"""
        {"versions":[2],"client":"c","role":"session","name":"pro","device":"iphone-16-pro",
         "posture":{"foldState":"half-opened","orientation":"landscape","windowWidth":512,"windowHeight":700,
                    "hingeAngle":90,"keyboardHeight":300,"splitViewWidth":256},
         "appState":"background","os":"27.1","clientTime":1767225600000,
         "resume":{"token":"t","topics":{"orders/A1":3},"patterns":["orders/>"]},
         "profile":{"lowPowerMode":true,"frequentUpdates":true,"liveActivities":"denied",
                    "bundleID":"com.example.other","channels":["Yw=="]},
         "features":["sync"]}
        """#

    /// The paths of the `nil` optionals in `value`, nested structs included.
    static func nils(in value: Any, path: String = "hello") -> [String] {
        var out: [String] = []
        for child in Mirror(reflecting: value).children {
            let p = path + "." + (child.label ?? "?")
            let m = Mirror(reflecting: child.value)
            if m.displayStyle == .optional {
                guard let some = m.children.first?.value else {
                    out.append(p)
                    continue
                }
                if Mirror(reflecting: some).displayStyle == .struct { out += nils(in: some, path: p) }
            } else if m.displayStyle == .struct {
                out += nils(in: child.value, path: p)
            }
        }
        return out
    }

    @Test func theSampleSetsEveryFieldAndTheFastReaderReadsThemAll() throws {
        let bytes = Array(Self.everyField.utf8)
        let reference = try JSONDecoder().decode(HelloBody.self, from: Data(bytes))
        #expect(Self.nils(in: reference) == [], "set these in the sample (and read them in HandshakeJSON.swift)")
        let fast = WireJSON.fast(bytes, what: "Hello") { (r) throws(WireError) in try r.helloBody() }
        #expect(fast != nil, "the Foundation-free reader fell back on a plain HELLO")
        #expect(fast == reference)
    }
}
