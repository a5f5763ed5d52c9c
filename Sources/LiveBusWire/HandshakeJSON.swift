/// The bodies every connect reads and writes, without Foundation: HELLO, SUBSCRIBE, PING and PONG decoded,
/// WELCOME and ERROR encoded (issue 15: Foundation's JSONDecoder and JSONEncoder were most of a connect's
/// instructions).
///
/// Decoding reads a valid body with ``JSONScanner`` and returns what ``WireJSON/decode(_:from:)`` returns for it.
/// Anything it does not read as plainly valid (a syntax error, a missing or mistyped field, a duplicate member, an
/// unknown role, a number an integer field cannot hold exactly) is handed to ``WireJSON/decode(_:from:)``, which
/// either accepts it the same way or throws its error: codes and messages are the reference decoder's, byte for
/// byte (HandshakeJSONTests checks both on the same inputs). Encoding writes what JSONEncoder writes with the wire's
/// settings (sorted keys, unescaped slashes).
extension WireJSON {
    /// Decodes a HELLO body and checks its instants.
    /// - Throws: as ``WireJSON/decode(_:from:)``: `invalidBody` naming the field, `invalidValue` for `clientTime`
    ///   outside PROTOCOL.md §3's range.
    /// - Complexity: O(body size); no Foundation for a valid body.
    public static func decodeHello(_ bytes: [UInt8]) throws(WireError) -> HelloBody {
        guard let h = fast(bytes, what: "Hello", { (r) throws(WireError) in try r.helloBody() }) else {
            return try decode(HelloBody.self, from: bytes)
        }
        try h.validate()
        return h
    }

    /// Decodes a SUBSCRIBE or UNSUBSCRIBE body.
    /// - Throws: as ``WireJSON/decode(_:from:)``.
    public static func decodeSubscribe(_ bytes: [UInt8]) throws(WireError) -> SubscribeBody {
        guard let s = fast(bytes, what: "Subscribe", { (r) throws(WireError) in try r.subscribeBody() }) else {
            return try decode(SubscribeBody.self, from: bytes)
        }
        return s
    }

    /// Decodes a PING body and checks `t1`.
    /// - Throws: as ``WireJSON/decode(_:from:)``.
    public static func decodePing(_ bytes: [UInt8]) throws(WireError) -> PingBody {
        guard let t = fast(bytes, what: "Ping", { (r) throws(WireError) in try r.instants(count: 1) }) else {
            return try decode(PingBody.self, from: bytes)
        }
        let p = PingBody(t1: t.0)
        try p.validate()
        return p
    }

    /// Decodes a PONG body and checks `t1`, `t2` and `t3`.
    /// - Throws: as ``WireJSON/decode(_:from:)``.
    public static func decodePong(_ bytes: [UInt8]) throws(WireError) -> PongBody {
        guard let t = fast(bytes, what: "Pong", { (r) throws(WireError) in try r.instants(count: 3) }) else {
            return try decode(PongBody.self, from: bytes)
        }
        let p = PongBody(t1: t.0, t2: t.1, t3: t.2)
        try p.validate()
        return p
    }

    /// The body read by `read` when the whole of `bytes` is one plainly valid body, else `nil`.
    static func fast<T>(
        _ bytes: [UInt8],
        what: StaticString,
        _ read: (inout JSONScanner) throws(WireError) -> T
    ) -> T? {
        bytes.withUnsafeBytes { raw -> T? in
            var r = JSONScanner(raw, what: "\(what)")
            do throws(WireError) {
                r.skipWhitespace()
                let v = try read(&r)
                r.skipWhitespace()
                return r.i == raw.count ? v : nil
            } catch {
                return nil
            }
        }
    }
}

// MARK: - Reader

extension JSONScanner {
    /// Any error: the reference decoder names it.
    fileprivate func unplain() -> WireError { WireError(.invalidBody, "not a plain body") }

    /// Marks member `bit` as read; a second one is left to the reference decoder.
    fileprivate func mark(_ seen: inout UInt32, _ bit: UInt32) throws(WireError) {
        guard seen & bit == 0 else { throw unplain() }
        seen |= bit
    }

    /// An integer without fraction or exponent that fits an `Int64`.
    fileprivate mutating func plainInt64() throws(WireError) -> Int64 { try readInt64() }

    /// A non-negative integer that fits an `Int64` (wider ones go to the reference decoder).
    fileprivate mutating func plainUInt64() throws(WireError) -> UInt64 {
        skipWhitespace()
        guard peek() != UInt8(ascii: "-") else { throw unplain() }
        return UInt64(try readInt64())
    }

    fileprivate mutating func plainBool() throws(WireError) -> Bool {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "t"):
            try literal("true")
            return true
        case UInt8(ascii: "f"):
            try literal("false")
            return false
        default: throw unplain()
        }
    }

    /// `null` (read past) → `nil`, else the value `read` reads.
    fileprivate mutating func orNull<T>(
        _ read: (inout JSONScanner) throws(WireError) -> T
    ) throws(WireError) -> T? {
        if try readNull() { return nil }
        return try read(&self)
    }

    /// The elements of an array, each read by `element`.
    fileprivate mutating func array<T>(
        _ element: (inout JSONScanner) throws(WireError) -> T
    ) throws(WireError) -> [T] {
        skipWhitespace()
        guard peek() == UInt8(ascii: "[") else { throw unplain() }
        i += 1
        var out: [T] = []
        skipWhitespace()
        if peek() == UInt8(ascii: "]") {
            i += 1
            return out
        }
        while true {
            out.append(try element(&self))
            skipWhitespace()
            guard let c = peek() else { throw unplain() }
            i += 1
            if c == UInt8(ascii: "]") { return out }
            guard c == UInt8(ascii: ",") else { throw unplain() }
        }
    }

    mutating func helloBody() throws(WireError) -> HelloBody {
        var seen: UInt32 = 0
        var versions: [Int]?
        var client: String?
        var role: ClientRole?
        var name: String?
        var device: String?
        var posture: PostureBody?
        var appState: String?
        var os: String?
        var clientTime: Int64?
        var resume: ResumeBody?
        var profile: ProfileBody?
        var features: [String]?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "versions") {
                try r.mark(&seen, 1 << 0)
                versions = try r.array { (r) throws(WireError) in Int(try r.plainInt64()) }
            } else if Self.key(k, is: "client") {
                try r.mark(&seen, 1 << 1)
                client = try r.readString()
            } else if Self.key(k, is: "role") {
                try r.mark(&seen, 1 << 2)
                guard let v = ClientRole(rawValue: try r.readString()) else { throw r.unplain() }
                role = v
            } else if Self.key(k, is: "name") {
                try r.mark(&seen, 1 << 3)
                name = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "device") {
                try r.mark(&seen, 1 << 4)
                device = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "posture") {
                try r.mark(&seen, 1 << 5)
                posture = try r.orNull { (r) throws(WireError) in try r.postureBody() }
            } else if Self.key(k, is: "appState") {
                try r.mark(&seen, 1 << 6)
                appState = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "os") {
                try r.mark(&seen, 1 << 7)
                os = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "clientTime") {
                try r.mark(&seen, 1 << 8)
                clientTime = try r.plainInt64()
            } else if Self.key(k, is: "resume") {
                try r.mark(&seen, 1 << 9)
                resume = try r.orNull { (r) throws(WireError) in try r.resumeBody() }
            } else if Self.key(k, is: "profile") {
                try r.mark(&seen, 1 << 10)
                profile = try r.orNull { (r) throws(WireError) in try r.profileBody() }
            } else if Self.key(k, is: "features") {
                try r.mark(&seen, 1 << 11)
                features = try r.orNull { (r) throws(WireError) in
                    try r.array { (r) throws(WireError) in try r.readString() }
                }
            } else {
                try r.skipValue()
            }
        }
        guard let versions, let client, let role, let clientTime else { throw unplain() }
        return HelloBody(
            versions: versions,
            client: client,
            role: role,
            name: name,
            device: device,
            posture: posture,
            appState: appState,
            os: os,
            clientTime: clientTime,
            resume: resume,
            profile: profile,
            features: features
        )
    }

    fileprivate mutating func postureBody() throws(WireError) -> PostureBody {
        var seen: UInt32 = 0
        var fold: String?
        var orientation: String?
        var numbers: [Double?] = [nil, nil, nil, nil, nil]
        let keys: [StaticString] = ["windowWidth", "windowHeight", "hingeAngle", "keyboardHeight", "splitViewWidth"]
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "foldState") {
                try r.mark(&seen, 1 << 0)
                fold = try r.readString()
            } else if Self.key(k, is: "orientation") {
                try r.mark(&seen, 1 << 1)
                orientation = try r.readString()
            } else if let n = keys.firstIndex(where: { Self.key(k, is: $0) }) {
                try r.mark(&seen, 1 << UInt32(2 + n))
                numbers[n] = try r.orNull { (r) throws(WireError) in try r.readDouble() }
            } else {
                try r.skipValue()
            }
        }
        guard let fold, let orientation else { throw unplain() }
        return PostureBody(
            foldState: fold,
            orientation: orientation,
            windowWidth: numbers[0],
            windowHeight: numbers[1],
            hingeAngle: numbers[2],
            keyboardHeight: numbers[3],
            splitViewWidth: numbers[4]
        )
    }

    fileprivate mutating func profileBody() throws(WireError) -> ProfileBody {
        var seen: UInt32 = 0
        var p = ProfileBody()
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "lowPowerMode") {
                try r.mark(&seen, 1 << 0)
                p.lowPowerMode = try r.orNull { (r) throws(WireError) in try r.plainBool() }
            } else if Self.key(k, is: "frequentUpdates") {
                try r.mark(&seen, 1 << 1)
                p.frequentUpdates = try r.orNull { (r) throws(WireError) in try r.plainBool() }
            } else if Self.key(k, is: "liveActivities") {
                try r.mark(&seen, 1 << 2)
                p.liveActivities = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "bundleID") {
                try r.mark(&seen, 1 << 3)
                p.bundleID = try r.orNull { (r) throws(WireError) in try r.readString() }
            } else if Self.key(k, is: "channels") {
                try r.mark(&seen, 1 << 4)
                p.channels = try r.orNull { (r) throws(WireError) in
                    try r.array { (r) throws(WireError) in try r.readString() }
                }
            } else {
                try r.skipValue()
            }
        }
        return p
    }

    fileprivate mutating func resumeBody() throws(WireError) -> ResumeBody {
        var seen: UInt32 = 0
        var token: String?
        var topics: [String: UInt64]?
        var patterns: [String]?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "token") {
                try r.mark(&seen, 1 << 0)
                token = try r.readString()
            } else if Self.key(k, is: "topics") {
                try r.mark(&seen, 1 << 1)
                var t: [String: UInt64] = [:]
                try r.object { (r, topic) throws(WireError) in
                    let key = String(decoding: topic, as: UTF8.self)
                    guard t.updateValue(try r.plainUInt64(), forKey: key) == nil else { throw r.unplain() }
                }
                topics = t
            } else if Self.key(k, is: "patterns") {
                try r.mark(&seen, 1 << 2)
                patterns = try r.orNull { (r) throws(WireError) in
                    try r.array { (r) throws(WireError) in try r.readString() }
                }
            } else {
                try r.skipValue()
            }
        }
        guard let token, let topics else { throw unplain() }
        return ResumeBody(token: token, topics: topics, patterns: patterns)
    }

    fileprivate mutating func subscribeBody() throws(WireError) -> SubscribeBody {
        var patterns: [String]?
        try object { (r, k) throws(WireError) in
            if Self.key(k, is: "patterns") {
                guard patterns == nil else { throw r.unplain() }
                patterns = try r.array { (r) throws(WireError) in try r.readString() }
            } else {
                try r.skipValue()
            }
        }
        guard let patterns else { throw unplain() }
        return SubscribeBody(patterns: patterns)
    }

    /// `t1` (and `t2`, `t3` when `count` is 3) of a PING or PONG body.
    fileprivate mutating func instants(count: Int) throws(WireError) -> (Int64, Int64, Int64) {
        var t: [Int64?] = [nil, nil, nil]
        try object { (r, k) throws(WireError) in
            let n: Int? =
                Self.key(k, is: "t1") ? 0 : Self.key(k, is: "t2") ? 1 : Self.key(k, is: "t3") ? 2 : nil
            if let n, n < count {
                guard t[n] == nil else { throw r.unplain() }
                t[n] = try r.plainInt64()
            } else {
                try r.skipValue()
            }
        }
        guard let t1 = t[0] else { throw unplain() }
        guard count == 3 else { return (t1, 0, 0) }
        guard let t2 = t[1], let t3 = t[2] else { throw unplain() }
        return (t1, t2, t3)
    }
}

// MARK: - Writer

extension WelcomeBody: CompactWireBody {
    /// The body's JSON: what JSONEncoder writes with sorted keys and unescaped slashes, without Foundation.
    public func compactJSON() -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(160 + name.utf8.count + session.utf8.count + resumeToken.utf8.count)
        w.raw("{\"maxFrameSize\":")
        w.integer(maxFrameSize)
        w.raw(",\"name\":")
        w.string(name)
        w.raw(",\"resumeToken\":")
        w.string(resumeToken)
        w.raw(",\"resumed\":")
        if resumed { w.raw("true") } else { w.raw("false") }
        w.raw(",\"serverTime\":")
        w.integer(serverTime)
        w.raw(",\"session\":")
        w.string(session)
        w.raw(",\"version\":")
        w.integer(version)
        w.out.append(UInt8(ascii: "}"))
        return w.out
    }
}

extension ErrorBody: CompactWireBody {
    /// The body's JSON: what JSONEncoder writes with sorted keys and unescaped slashes, without Foundation.
    public func compactJSON() -> [UInt8] {
        var w = JSONWriter()
        w.out.reserveCapacity(64 + name.utf8.count + message.utf8.count)
        w.raw("{\"code\":")
        w.integer(code)
        w.raw(",\"fatal\":")
        if fatal { w.raw("true") } else { w.raw("false") }
        w.raw(",\"message\":")
        w.string(message)
        w.raw(",\"name\":")
        w.string(name)
        w.out.append(UInt8(ascii: "}"))
        return w.out
    }
}
