import Testing

@testable import LiveBusAPNs

/// `livebus push --request FILE` and Simulator `.apns` files (APNsRequestFile).
@Suite struct RequestFileTests {
    @Test func requestLineHeadersAndBody() throws {
        let text =
            "POST https://api.push.apple.com:443/3/device/ab12\r\napns-topic: com.x.push-type.liveactivity\r\n"
            + "# a comment\r\nAPNS-Priority:5\r\n\r\n{\"aps\":{}}\n"
        let r = try APNsRequestFile.parse(Array(text.utf8))
        #expect(r.method == "POST")
        #expect(r.path == "/3/device/ab12")
        #expect(r.headers.map(\.name) == ["apns-topic", "apns-priority"])
        #expect(r.headers.map(\.value) == ["com.x.push-type.liveactivity", "5"])
        #expect(String(decoding: r.body, as: UTF8.self) == "{\"aps\":{}}\n")
    }

    @Test func headersOnlyAndAPathRequestLine() throws {
        let bare = try APNsRequestFile.parse(Array("apns-push-type: liveactivity\n\n{}".utf8))
        #expect(bare.path == nil && bare.headers.count == 1 && bare.body == Array("{}".utf8))
        let path = try APNsRequestFile.parse(Array("/4/broadcasts/apps/com.x HTTP/2\napns-channel-id: Yw==\n\n{}".utf8))
        #expect(path.path == "/4/broadcasts/apps/com.x")
    }

    @Test func errorsNameTheLine() {
        #expect(
            throws: APNsRequestFile.Failure(
                line: 2,
                message: "'oops' is not a header line (name: value); the body goes after one blank line"
            )
        ) {
            try APNsRequestFile.parse(Array("POST /3/device/a\noops\n\n{}".utf8))
        }
        #expect(throws: APNsRequestFile.Failure.self) { try APNsRequestFile.parse(Array("POST\n\n{}".utf8)) }
        #expect(throws: APNsRequestFile.Failure.self) {
            try APNsRequestFile.parse(Array("POST https://host\n\n{}".utf8))
        }
        #expect(throws: APNsRequestFile.Failure.self) { try APNsRequestFile.parse(Array("bad name: x\n\n{}".utf8)) }
    }

    @Test func simulatorTargetBundleIsTakenOutWherever() {
        let cases: [(String, String)] = [
            (#"{"Simulator Target Bundle":"com.x","aps":{"a":1}}"#, #"{"aps":{"a":1}}"#),
            (#"{"aps":{"a":[1,{"b":"}"}]}, "Simulator Target Bundle" : "com.x" }"#, #"{"aps":{"a":[1,{"b":"}"}]} }"#),
            (#"{"aps":{}, "Simulator Target Bundle":"com.x", "z":2}"#, #"{"aps":{},  "z":2}"#),
        ]
        for (input, output) in cases {
            let r = APNsRequestFile.simulatorPayload(Array(input.utf8))
            #expect(r.bundleID == "com.x", "\(input)")
            #expect(String(decoding: r.payload, as: UTF8.self) == output, "\(input)")
        }
        let plain = Array(#"{"aps":{"Simulator Target Bundle":"inner"}}"#.utf8)
        #expect(APNsRequestFile.simulatorPayload(plain).payload == plain)
        #expect(APNsRequestFile.simulatorPayload(plain).bundleID == nil)
    }
}
