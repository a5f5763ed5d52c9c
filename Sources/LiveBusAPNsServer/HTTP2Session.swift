import CNghttp2
import Foundation
import LiveBusAPNs

/// Limits of the APNs endpoint's HTTP/2 connections (LiveBus's numbers; Apple publishes none but says a
/// connection accepts many concurrent streams: "APNs … supports multiple concurrent streams for each connection",
/// "Sending notification requests to APNs").
public struct HTTP2Limits: Sendable, Equatable {
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised; nghttp2 refuses streams beyond it (RST_STREAM REFUSED_STREAM).
    public var maxConcurrentStreams: UInt32 = 100
    /// A stream whose request has not ended after this many milliseconds is answered 400 `IdleTimeout` and reset.
    public var streamTimeoutMilliseconds: UInt64 = 10_000
    /// A connection that has not sent a complete HTTP/2 preface (or, on TLS, finished its handshake) within
    /// this many milliseconds is closed.
    public var handshakeTimeoutMilliseconds: UInt64 = 10_000
    /// Header bytes (names and values) one request may carry; beyond it the stream is reset.
    public var maxHeaderBytes: Int = 16_384
    /// Bytes written to a client and not yet taken by it; beyond it the connection stops being read until it
    /// drains.
    public var maxOutstandingBytes: Int = 1 << 20
    /// Creates the defaults.
    public init() {}
}

/// One server-side HTTP/2 session over nghttp2, without I/O: feed it the bytes a client sent, take the bytes to
/// send back, hear complete requests, answer them by stream id.
final class HTTP2Session {
    private var session: OpaquePointer?
    private let limits: HTTP2Limits
    /// Streams with a request in progress or an answer being sent.
    fileprivate var streams: [Int32: StreamState] = [:]
    /// Called with each complete request (its stream id); answer with ``respond(_:_:)``.
    var onRequest: ((Int32, APNsRequest) -> Void)?
    /// Called when a stream's request began (to arm its timeout).
    var onStreamOpened: ((Int32) -> Void)?
    /// Set when the session failed fatally (the connection should be closed after flushing).
    private(set) var failure: String?

    fileprivate final class StreamState {
        var method = ""
        var path = ""
        var headers: [(name: String, value: String)] = []
        var headerBytes = 0
        var body: [UInt8] = []
        var bodyLength = 0
        var complete = false
        /// Answered before its request ended (its body passed the payload limit): reset once the answer is out.
        var answeredEarly = false
        var responseBody: [UInt8] = []
        var responseOffset = 0
    }

    init(limits: HTTP2Limits) {
        self.limits = limits
        var cbs: OpaquePointer?
        nghttp2_session_callbacks_new(&cbs)
        defer { nghttp2_session_callbacks_del(cbs) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs) { _, frame, user in
            let s = HTTP2Session.of(user)
            guard let frame, frame.pointee.hd.type == UInt8(NGHTTP2_HEADERS.rawValue),
                frame.pointee.headers.cat == NGHTTP2_HCAT_REQUEST
            else { return 0 }
            let id = frame.pointee.hd.stream_id
            s.streams[id] = StreamState()
            s.onStreamOpened?(id)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(cbs) {
            session,
            frame,
            name,
            namelen,
            value,
            valuelen,
            _,
            user in
            let s = HTTP2Session.of(user)
            guard let frame, let st = s.streams[frame.pointee.hd.stream_id] else { return 0 }
            st.headerBytes += namelen + valuelen
            if st.headerBytes > s.limits.maxHeaderBytes {
                return Int32(NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue)  // resets this stream only
            }
            let n = String(decoding: UnsafeBufferPointer(start: name, count: namelen), as: UTF8.self)
            let v = String(decoding: UnsafeBufferPointer(start: value, count: valuelen), as: UTF8.self)
            switch n {
            case ":method": st.method = v
            case ":path": st.path = v
            case ":scheme", ":authority": break
            default: st.headers.append((n, v))
            }
            _ = session
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs) { _, _, streamID, data, len, user in
            let s = HTTP2Session.of(user)
            guard let st = s.streams[streamID] else { return 0 }
            st.bodyLength += len
            let room = APNsLimits.storedBodyBytes - st.body.count
            if room > 0, let data {
                st.body.append(contentsOf: UnsafeBufferPointer(start: data, count: min(room, len)))
            }
            // A body past the largest payload its push type takes (5120 bytes for voip, else 4096) is answered as it
            // passes the limit (413 PayloadTooLarge once the headers pass), not after its end or the stream timeout.
            let limit =
                st.headers.contains { $0.name == "apns-push-type" && $0.value == "voip" }
                ? APNsLimits.voipPayloadBytes : APNsLimits.payloadBytes
            if !st.complete, st.bodyLength > limit, st.path.hasPrefix("/3/") || st.path.hasPrefix("/4/") {
                st.complete = true
                st.answeredEarly = true
                s.onRequest?(
                    streamID,
                    APNsRequest(
                        method: st.method,
                        path: st.path,
                        headers: st.headers,
                        body: st.body,
                        bodyLength: st.bodyLength
                    )
                )
            }
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs) { _, frame, user in
            let s = HTTP2Session.of(user)
            guard let frame else { return 0 }
            let type = frame.pointee.hd.type
            let endStream = frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
            guard endStream, type == UInt8(NGHTTP2_HEADERS.rawValue) || type == UInt8(NGHTTP2_DATA.rawValue) else {
                return 0
            }
            let id = frame.pointee.hd.stream_id
            guard let st = s.streams[id], !st.complete else { return 0 }
            st.complete = true
            let request = APNsRequest(
                method: st.method,
                path: st.path,
                headers: st.headers,
                body: st.body,
                bodyLength: st.bodyLength
            )
            s.onRequest?(id, request)
            return 0
        }
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs) { session, frame, user in
            // A response sent in full before its request ended (a timeout): reset the stream with NO_ERROR, as
            // RFC 9113 §8.1 allows, once the answer is out.
            let s = HTTP2Session.of(user)
            guard let frame, frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0,
                let st = s.streams[frame.pointee.hd.stream_id], !st.complete || st.answeredEarly
            else { return 0 }
            nghttp2_submit_rst_stream(
                session,
                UInt8(NGHTTP2_FLAG_NONE.rawValue),
                frame.pointee.hd.stream_id,
                NGHTTP2_NO_ERROR.rawValue
            )
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs) { _, streamID, _, user in
            HTTP2Session.of(user).streams[streamID] = nil
            return 0
        }
        var opt: OpaquePointer?
        nghttp2_option_new(&opt)
        defer { nghttp2_option_del(opt) }
        // Refuse, not queue, streams past the advertised limit even before the client saw our SETTINGS.
        nghttp2_option_set_max_reserved_remote_streams(opt, 0)
        nghttp2_session_server_new2(&session, cbs, Unmanaged.passUnretained(self).toOpaque(), opt)
        var settings = [
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS.rawValue),
                value: limits.maxConcurrentStreams
            ),
            nghttp2_settings_entry(
                settings_id: Int32(NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE.rawValue),
                value: UInt32(limits.maxHeaderBytes)
            ),
        ]
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), &settings, settings.count)
    }

    deinit { nghttp2_session_del(session) }

    private static func of(_ user: UnsafeMutableRawPointer?) -> HTTP2Session {
        Unmanaged<HTTP2Session>.fromOpaque(user!).takeUnretainedValue()
    }

    /// Feeds received bytes; `false` when the session failed (not HTTP/2, a protocol error): flush and close.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard failure == nil, let base = bytes.baseAddress else { return failure == nil }
        let rc = nghttp2_session_mem_recv(session, base.assumingMemoryBound(to: UInt8.self), bytes.count)
        if rc < 0 {
            failure = String(cString: nghttp2_strerror(Int32(rc)))
            return false
        }
        return true
    }

    /// The bytes nghttp2 wants sent now (frames it queued: SETTINGS, responses, GOAWAY …).
    func takeOutput() -> [UInt8] {
        var out: [UInt8] = []
        while true {
            var p: UnsafePointer<UInt8>?
            let n = nghttp2_session_mem_send(session, &p)
            if n <= 0 {
                if n < 0 { failure = String(cString: nghttp2_strerror(Int32(n))) }
                break
            }
            out.append(contentsOf: UnsafeBufferPointer(start: p, count: n))
        }
        return out
    }

    /// Whether the session is done (both sides finished, e.g. after GOAWAY).
    var isFinished: Bool { nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 }

    /// Whether stream `id` still waits for the end of its request.
    func isIncomplete(_ id: Int32) -> Bool { streams[id].map { !$0.complete } ?? false }

    /// Answers stream `id` with `response`.
    func respond(_ id: Int32, _ response: APNsResponse) {
        guard let st = streams[id] else { return }
        st.responseBody = response.body
        var fields: [(String, String)] = [(":status", String(response.status))]
        fields += response.headers.map { ($0.name, $0.value) }
        if !response.body.isEmpty { fields.append(("content-length", String(response.body.count))) }
        let buffers = fields.map { (Array($0.0.utf8), Array($0.1.utf8)) }
        var provider = nghttp2_data_provider(
            source: nghttp2_data_source(ptr: nil),
            read_callback: { _, streamID, buf, length, flags, _, user in
                let s = HTTP2Session.of(user)
                guard let st = s.streams[streamID], let buf else {
                    flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue
                    return 0
                }
                let n = min(length, st.responseBody.count - st.responseOffset)
                st.responseBody.withUnsafeBufferPointer { b in
                    if n > 0 { buf.update(from: b.baseAddress! + st.responseOffset, count: n) }
                }
                st.responseOffset += n
                if st.responseOffset >= st.responseBody.count { flags?.pointee |= NGHTTP2_DATA_FLAG_EOF.rawValue }
                return n
            }
        )
        let hasBody = !response.body.isEmpty
        withNV(buffers) { nva in
            withUnsafePointer(to: &provider) { p in
                _ = nghttp2_submit_response(session, id, nva.baseAddress, nva.count, hasBody ? p : nil)
            }
        }
    }

    /// Sends GOAWAY with `code` and APNs's JSON `{"reason": …}` as debug data, then no new streams are taken.
    func goAway(reason: APNsReason?, code: nghttp2_error_code = NGHTTP2_NO_ERROR) {
        let debug = reason.map { Array(#"{"reason":"\#($0.rawValue)"}"#.utf8) } ?? []
        let last = nghttp2_session_get_last_proc_stream_id(session)
        debug.withUnsafeBufferPointer { d in
            _ = nghttp2_submit_goaway(
                session,
                UInt8(NGHTTP2_FLAG_NONE.rawValue),
                last,
                code.rawValue,
                d.baseAddress,
                d.count
            )
        }
    }
}

/// Calls `body` with nghttp2_nv entries holding copies of `fields` (nghttp2 copies them again during the call).
private func withNV(_ fields: [([UInt8], [UInt8])], _ body: (UnsafeMutableBufferPointer<nghttp2_nv>) -> Void) {
    var allocations: [UnsafeMutablePointer<UInt8>] = []
    defer { for p in allocations { p.deallocate() } }
    func copy(_ bytes: [UInt8]) -> UnsafeMutablePointer<UInt8> {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: max(1, bytes.count))
        p.initialize(from: bytes, count: bytes.count)
        allocations.append(p)
        return p
    }
    var nva = fields.map { f in
        nghttp2_nv(
            name: copy(f.0),
            value: copy(f.1),
            namelen: f.0.count,
            valuelen: f.1.count,
            flags: UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        )
    }
    nva.withUnsafeMutableBufferPointer { body($0) }
}
