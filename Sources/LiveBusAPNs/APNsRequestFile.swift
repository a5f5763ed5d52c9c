/// The two files a push is written in outside code: a request file (an optional request line, header lines, a blank
/// line, the body: what curl users keep beside `curl -H @headers -d @body`, and what `.http` REST-client files hold)
/// and the Simulator's `.apns` file (a payload with a top-level `Simulator Target Bundle` key naming the app, read by
/// `xcrun simctl push`). `livebus push` reads both.
public enum APNsRequestFile {
    /// A request read from a request file.
    public struct Request: Equatable, Sendable {
        /// `POST` unless the request line names another method.
        public var method: String
        /// The request line's path (`/3/device/<token>`, `/4/broadcasts/apps/<bundle-id>`), from a path or a full
        /// `https://host[:port]/…` URL; `nil` without a request line.
        public var path: String?
        /// The header lines in order, names lower-cased, values trimmed.
        public var headers: [(name: String, value: String)]
        /// The bytes after the first blank line.
        public var body: [UInt8]

        public static func == (a: Request, b: Request) -> Bool {
            a.method == b.method && a.path == b.path && a.body == b.body
                && a.headers.map { "\($0.name):\($0.value)" } == b.headers.map { "\($0.name):\($0.value)" }
        }
    }

    /// Why a request file cannot be read.
    public struct Failure: Error, Equatable, CustomStringConvertible {
        /// The 1-based line the problem is on.
        public var line: Int
        /// What is wrong, and what is expected.
        public var message: String
        public var description: String { "line \(line): \(message)" }
    }

    /// The request file's parts.
    ///
    /// Lines end in LF or CRLF. The first line is a request line when it starts with an HTTP method
    /// (`POST /3/device/…`, optionally followed by `HTTP/2`) or with `/` or `https://`; `#` lines before the body are
    /// comments. Each following line up to the first blank one is `name: value`.
    /// - Parameter bytes: The file's bytes (UTF-8).
    /// - Returns: The request.
    /// - Throws: ``Failure`` naming the line: a header line without `:`, a header name that is not a token, a request
    ///   line whose target is not a path or an https URL, or no blank line before a body.
    public static func parse(_ bytes: [UInt8]) throws(Failure) -> Request {
        var lines: [(text: String, end: Int)] = []  // each header-part line and the offset just past its newline
        var start = 0
        var bodyStart: Int?
        while start < bytes.count {
            var end = start
            while end < bytes.count && bytes[end] != UInt8(ascii: "\n") { end += 1 }
            var lineEnd = end
            if lineEnd > start && bytes[lineEnd - 1] == UInt8(ascii: "\r") { lineEnd -= 1 }
            let text = String(decoding: bytes[start..<lineEnd], as: UTF8.self)
            let next = min(end + 1, bytes.count)
            if text.allSatisfy({ $0 == " " || $0 == "\t" }) {
                bodyStart = next
                break
            }
            lines.append((text, next))
            start = next
        }
        var request = Request(method: "POST", path: nil, headers: [], body: [])
        var first = true
        for (i, l) in lines.enumerated() {
            let n = i + 1
            if l.text.hasPrefix("#") { continue }
            if first {
                first = false
                if let (method, path) = try requestLine(l.text, line: n) {
                    request.method = method
                    request.path = path
                    continue
                }
            }
            guard let colon = l.text.firstIndex(of: ":") else {
                throw Failure(
                    line: n,
                    message:
                        "'\(l.text.prefix(80))' is not a header line (name: value); the body goes after one blank line"
                )
            }
            let name = l.text[..<colon].trimmingCharacters(" \t").lowercased()
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else {
                throw Failure(line: n, message: "'\(name.prefix(80))' is not a header name (letters, digits, - and _)")
            }
            request.headers.append((name, l.text[l.text.index(after: colon)...].trimmingCharacters(" \t")))
        }
        if let b = bodyStart { request.body = Array(bytes[b...]) }
        return request
    }

    /// The payload of a Simulator `.apns` file without its `Simulator Target Bundle` key, and that key's value.
    ///
    /// Only the top-level key is removed; the rest of the bytes is kept as written (key order, spacing). A body
    /// without the key comes back unchanged with a `nil` bundle.
    /// - Parameter body: The file's JSON object.
    /// - Returns: The payload to send, and the app's bundle id when the file names one.
    public static func simulatorPayload(_ body: [UInt8]) -> (payload: [UInt8], bundleID: String?) {
        guard let range = topLevelMember(named: "Simulator Target Bundle", in: body) else { return (body, nil) }
        var out = Array(body[..<range.member.lowerBound])
        out += body[range.member.upperBound...]
        return (out, range.value)
    }

    // MARK: - Internals

    private static let methods: Set<String> = ["POST", "GET", "DELETE", "PUT", "PATCH", "HEAD", "OPTIONS"]

    private static func requestLine(_ text: String, line: Int) throws(Failure) -> (String, String)? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard let head = parts.first else { return nil }
        var method = "POST"
        var target: String
        if methods.contains(head) {
            guard parts.count >= 2 else {
                throw Failure(
                    line: line,
                    message: "the request line '\(text)' names no path (e.g. POST /3/device/TOKEN)"
                )
            }
            method = head
            target = parts[1]
        } else if head.hasPrefix("/") || head.hasPrefix("https://") || head.hasPrefix("http://") {
            target = head
        } else {
            return nil
        }
        if let scheme = ["https://", "http://"].first(where: { target.hasPrefix($0) }) {
            let rest = target.dropFirst(scheme.count)
            guard let slash = rest.firstIndex(of: "/") else {
                throw Failure(line: line, message: "the URL '\(target)' has no path (e.g. https://host/3/device/TOKEN)")
            }
            target = String(rest[slash...])
        }
        guard target.hasPrefix("/") else {
            throw Failure(line: line, message: "the request target '\(target)' is not a path or an https URL")
        }
        return (method, target)
    }

    private static func isTokenByte(_ b: UInt8) -> Bool {
        (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || b == 0x5F
    }

    /// The byte range of the top-level member `name` of a JSON object (with one neighbouring comma, so that what
    /// is left stays valid JSON) and its string value.
    private static func topLevelMember(named name: String, in b: [UInt8]) -> (member: Range<Int>, value: String?)? {
        var i = 0
        func skipSpace() { while i < b.count, b[i] == 0x20 || b[i] == 0x0A || b[i] == 0x0D || b[i] == 0x09 { i += 1 } }
        func skipString() -> Range<Int>? {  // at '"': past the closing quote; the contents' range
            guard i < b.count, b[i] == 0x22 else { return nil }
            let s = i + 1
            i += 1
            while i < b.count, b[i] != 0x22 {
                if b[i] == 0x5C { i += 1 }
                i += 1
            }
            guard i < b.count else { return nil }
            i += 1
            return s..<(i - 1)
        }
        func skipValue() -> Bool {
            skipSpace()
            guard i < b.count else { return false }
            if b[i] == 0x22 { return skipString() != nil }
            if b[i] == 0x7B || b[i] == 0x5B {
                var depth = 0
                while i < b.count {
                    switch b[i] {
                    case 0x22: if skipString() == nil { return false } else { continue }
                    case 0x7B, 0x5B: depth += 1
                    case 0x7D, 0x5D:
                        depth -= 1
                        if depth == 0 {
                            i += 1
                            return true
                        }
                    default: break
                    }
                    i += 1
                }
                return false
            }
            while i < b.count, b[i] != 0x2C, b[i] != 0x7D, b[i] != 0x20, b[i] != 0x0A, b[i] != 0x0D, b[i] != 0x09 {
                i += 1
            }
            return true
        }
        skipSpace()
        guard i < b.count, b[i] == 0x7B else { return nil }
        i += 1
        var previousEnd: Int?  // just past the previous member's value
        while true {
            skipSpace()
            guard i < b.count, b[i] != 0x7D else { return nil }
            let memberStart = i
            guard let key = skipString() else { return nil }
            skipSpace()
            guard i < b.count, b[i] == 0x3A else { return nil }
            i += 1
            skipSpace()
            let valueStart = i
            guard skipValue() else { return nil }
            let valueEnd = i
            skipSpace()
            let hasComma = i < b.count && b[i] == 0x2C
            if String(decoding: b[key], as: UTF8.self) == name {
                var value: String?
                if b[valueStart] == 0x22 {
                    value = String(decoding: b[(valueStart + 1)..<(valueEnd - 1)], as: UTF8.self)
                }
                if hasComma { return (memberStart..<(i + 1), value) }
                if let p = previousEnd { return (p..<valueEnd, value) }  // the last member: take the comma before it
                return (memberStart..<valueEnd, value)
            }
            guard hasComma else { return nil }
            i += 1
            previousEnd = valueEnd
        }
    }
}

extension StringProtocol {
    fileprivate func trimmingCharacters(_ set: String) -> String {
        var s = Substring(self)
        while let f = s.first, set.contains(f) { s = s.dropFirst() }
        while let l = s.last, set.contains(l) { s = s.dropLast() }
        return String(s)
    }
}
