import Foundation
import Testing

@testable import LiveBusWire

/// The connect path's bodies without Foundation (HandshakeJSON.swift) against the reference decoder and encoder on
/// the same inputs: the same value for every body the reference accepts, the same error (code and message) for
/// every one it refuses; WELCOME and ERROR byte for byte what JSONEncoder writes.
struct HandshakeJSONTests {
    static func same<T: Equatable>(
        _ json: String,
        fast: ([UInt8]) throws(WireError) -> T,
        reference: T.Type,
        sourceLocation: SourceLocation = #_sourceLocation
    ) where T: Decodable {
        let bytes = Array(json.utf8)
        let a: Result<T, WireError> = Result { () throws(WireError) in try fast(bytes) }
        let b: Result<T, WireError> = Result { () throws(WireError) in try WireJSON.decode(T.self, from: bytes) }
        switch (a, b) {
        case (.success(let x), .success(let y)): #expect(x == y, "\(json)", sourceLocation: sourceLocation)
        case (.failure(let x), .failure(let y)): #expect(x == y, "\(json)", sourceLocation: sourceLocation)
        default: Issue.record("\(json): fast \(a), reference \(b)", sourceLocation: sourceLocation)
        }
    }

    static let hellos: [String] = [
        #"{"appState":"foreground","client":"livebus-bench/0.1","clientTime":1767225600000,"device":"iphone-16-pro","posture":{"foldState":"flat","orientation":"portrait"},"role":"session","versions":[2]}"#,
        #"{"versions":[1,2],"client":"x","role":"observer","clientTime":-5}"#,
        #" { "versions" : [ 2 ] , "client" : "\u00e9\n\"q\"" , "role" : "admin" , "clientTime" : 0 } "#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"name":"pro","os":"27.1","profile":{"lowPowerMode":true,"frequentUpdates":false,"liveActivities":"denied"}}"#,
        // The APNs settings too (review finding 2: the fast decoder skipped them, so `attach --channel` was lost).
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"profile":{"bundleID":"com.example.other","channels":["SduQyGp4Jsh6EoeeNbrRaQ=="]}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"profile":{"bundleID":null,"channels":null}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"resume":{"token":"abc","topics":{"orders/A1":3,"orders/\u0042":0}}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"posture":{"foldState":"half-opened","orientation":"landscape","windowWidth":512.5,"windowHeight":700,"hingeAngle":1e2,"keyboardHeight":null,"splitViewWidth":-0.0}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"name":null,"device":null,"posture":null,"appState":null,"os":null,"resume":null,"profile":null}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"future":{"a":[1,{"b":null}],"c":"d"}}"#,
        // refused: each with the reference decoder's own error
        #"{"versions":[1],"client":"x","role":"session"}"#,
        #"{"versions":[1],"client":"x","role":"root","clientTime":1}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":1,"posture":7}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":1,"posture":{"foldState":3,"orientation":"portrait"}}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":1.5}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":1e3}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":9223372036854775808}"#,
        #"{"versions":[1],"client":"x","role":"session","clientTime":3155760000001}"#,
        #"{"versions":[18446744073709551616],"client":"x","role":"session","clientTime":1}"#,
        #"{"versions":"2","client":"x","role":"session","clientTime":1}"#,
        #"{"versions":[2],"client":null,"role":"session","clientTime":1}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"resume":{"token":"t","topics":{"a":-1}}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"resume":{"token":"t"}}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,"profile":{"lowPowerMode":1}}"#,
        #"{"versions":[2],"client":"x","client":"y","role":"session","clientTime":1}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1,}"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":1} x"#,
        #"{"versions":[2],"client":"x","role":"session","clientTime":01}"#,
        #"[1,2]"#, "", "{", "\u{1}\u{2}", "null",
    ]

    @Test func helloDecodesAsTheReferenceDecoderDoes() {
        for json in Self.hellos { Self.same(json, fast: WireJSON.decodeHello, reference: HelloBody.self) }
    }

    /// Valid bodies are read by the Foundation-free reader itself (a reader that always fell back would pass the
    /// test above); the refused ones are left to the reference decoder.
    @Test func validHellosAreReadWithoutFallingBack() throws {
        for (k, json) in Self.hellos.enumerated() {
            let fast = WireJSON.fast(Array(json.utf8), what: "Hello") { (r) throws(WireError) in try r.helloBody() }
            // The first 10 are valid; a clientTime out of range is read, then refused by the range check.
            #expect((fast != nil) == (k < 10 || json.contains("3155760000001")), "\(json)")
        }
        let h = try WireJSON.decodeHello(Array(Self.hellos[0].utf8))
        #expect(h.posture == PostureBody(foldState: "flat", orientation: "portrait"))
        #expect(h.device == "iphone-16-pro" && h.clientTime == 1_767_225_600_000 && h.versions == [2])
    }

    @Test func subscribePingAndPongDecodeAsTheReferenceDecoderDoes() {
        for json in [
            #"{"patterns":["orders/>","a/*/c"]}"#, #"{"patterns":[]}"#, #"{"patterns":["\u00e9"],"x":1}"#,
            #"{"patterns":"orders/>"}"#, #"{"patterns":[1]}"#, #"{}"#, #"{"patterns":["a"],"patterns":["b"]}"#,
            "{oops",
        ] {
            Self.same(json, fast: WireJSON.decodeSubscribe, reference: SubscribeBody.self)
        }
        for json in [#"{"t1":1767225600000}"#, #"{"t1":-1,"t2":4}"#, #"{"t1":"1"}"#, #"{"t1":3155760000001}"#, "{}"] {
            Self.same(json, fast: WireJSON.decodePing, reference: PingBody.self)
        }
        for json in [
            #"{"t1":1,"t2":2,"t3":3}"#, #"{"t3":3,"t1":1,"t2":2,"t4":4}"#, #"{"t1":1,"t2":2}"#,
            #"{"t1":1,"t2":2.5,"t3":3}"#, #"{"t1":1,"t2":2,"t3":-3155760000001}"#, #"{"t1":1,"t1":2,"t2":2,"t3":3}"#,
        ] {
            Self.same(json, fast: WireJSON.decodePong, reference: PongBody.self)
        }
    }

    static func foundation(_ v: some Encodable) throws -> [UInt8] {
        let e = JSONEncoder()
        e.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try e.encode(v))
    }

    static let strings = [
        "", "pro", "s1", "한글 이름", "a/b\\c\"d", "tab\there\nnew\r\u{8}\u{c}", "\u{0}\u{1f}\u{7f}", "😀", "\u{2028}",
    ]

    @Test func welcomeAndErrorAreWhatJSONEncoderWrites() throws {
        for s in Self.strings {
            for resumed in [false, true] {
                let w = WelcomeBody(
                    version: 2,
                    session: "s\(s.utf8.count)",
                    name: s,
                    resumeToken: s + "tok",
                    serverTime: resumed ? -1_767_225_600_000 : .max,
                    resumed: resumed,
                    maxFrameSize: 65_536
                )
                #expect(w.compactJSON() == (try Self.foundation(w)), "\(s)")
                #expect(try WireJSON.encode(w) == Self.foundation(w))
                let e = ErrorBody(WireError(.invalidBody, "field '\(s)' is wrong"), fatal: resumed)
                #expect(e.compactJSON() == (try Self.foundation(e)), "\(s)")
            }
        }
    }
}
