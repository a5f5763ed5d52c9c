/// A protocol error: what went wrong with a frame or message, with the numeric code sent in ERROR frames.
///
/// Codes are defined once in `Protocol/errors.json`; a test checks this type against that file.
public struct WireError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code. Numeric values travel in ERROR frames.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        /// The number sent on the wire.
        public let rawValue: UInt16
        /// The stable camelCase name, as in `Protocol/errors.json`.
        public let name: String

        private init(_ rawValue: UInt16, _ name: String) {
            self.rawValue = rawValue
            self.name = name
        }

        /// The bytes do not form a frame (bad length field, reserved bits set, body not the declared shape).
        public static let malformedFrame = Code(1, "malformedFrame")
        /// The length field exceeds the negotiated maximum frame size.
        public static let frameTooLarge = Code(2, "frameTooLarge")
        /// The frame type byte is not one this version defines.
        public static let unknownFrameType = Code(3, "unknownFrameType")
        /// Neither side supports a common protocol version, or a frame carries an unknown version byte.
        public static let unsupportedVersion = Code(4, "unsupportedVersion")
        /// A frame other than HELLO arrived before the handshake completed.
        public static let handshakeRequired = Code(5, "handshakeRequired")
        /// The frame's CRC-32 does not match its contents.
        public static let checksumMismatch = Code(6, "checksumMismatch")
        /// The JSON body is missing a field, has a wrong type or an impossible value.
        public static let invalidBody = Code(7, "invalidBody")
        /// A topic or topic pattern is empty, over 255 bytes, holds whitespace or a control character, or has an invalid wildcard.
        public static let invalidTopic = Code(8, "invalidTopic")
        /// The session's outbound queue passed its hard limit; it may resume with its token.
        public static let slowConsumer = Code(9, "slowConsumer")
        /// The daemon is shutting down; reconnect later and resume.
        public static let shuttingDown = Code(10, "shuttingDown")
        /// The request needs the admin role (the daemon's own user).
        public static let notPermitted = Code(11, "notPermitted")
        /// The posture is impossible for the device (e.g. half-opened without a hinge).
        public static let invalidPosture = Code(12, "invalidPosture")
        /// The device model is not in the catalog.
        public static let unknownDevice = Code(13, "unknownDevice")
        /// The resume token is unknown or expired; start a fresh session.
        public static let resumeRejected = Code(14, "resumeRejected")
        /// A command or payload was understood but refused (unknown order, content state too large…).
        public static let rejected = Code(15, "rejected")
        /// A second HELLO on an established session.
        public static let duplicateHello = Code(16, "duplicateHello")
        /// The daemon failed internally; the message says what to report.
        public static let internalError = Code(17, "internalError")
        /// An instant or duration is outside the allowed range (PROTOCOL.md §3: ±100 years around the Unix epoch,
        /// in milliseconds); the message names the field.
        public static let invalidValue = Code(18, "invalidValue")
        /// The daemon's store refuses writes (a full disk or quota, an I/O error): the PUBLISH was not stored and took
        /// no sequence; the connection stays open, publish again once the store takes writes (PROTOCOL.md §5.7).
        public static let storeUnavailable = Code(19, "storeUnavailable")
        /// The session sent frames faster than its limit for longer than the grace period (frames per second, PROTOCOL.md §5.6).
        public static let messageRateTooHigh = Code(20, "messageRateTooHigh")
        /// A SUBSCRIBE, or a HELLO's resume (its `patterns` with the session's record), would take the session past its
        /// maximum number of topic patterns.
        public static let tooManySubscriptions = Code(21, "tooManySubscriptions")
        /// Replies (PONG, ACK, RESULT…) to the session stayed queued past their limit for longer than the grace period: it sends without reading.
        public static let replyQueueFull = Code(22, "replyQueueFull")
        /// No complete HELLO arrived within the handshake timeout after connecting.
        public static let handshakeTimeout = Code(23, "handshakeTimeout")
        /// Nothing at all arrived from the session within the idle timeout (a keepalive PING was sent after half of it).
        public static let idleTimeout = Code(24, "idleTimeout")
        /// The daemon serves its maximum number of connections; this one is refused, the others keep working.
        public static let tooManyConnections = Code(25, "tooManyConnections")
        /// New connections are refused for now by a `down` toxic (Protocol/FAULTS.md §3); the message names it. A
        /// client backs off and retries until it is removed, then attaches or resumes (FAULTS.md §6).
        public static let connectionsRefused = Code(26, "connectionsRefused")
        /// A federated daemon cannot reach its NATS JetStream cluster (lost, partitioned, or not yet joined): the
        /// PUBLISH was not stored; publish again once `livebus status` shows the federation connected (§5.8).
        public static let federationUnavailable = Code(30, "federationUnavailable")

        /// Every code, in numeric order.
        public static let all: [Code] = [
            .malformedFrame, .frameTooLarge, .unknownFrameType, .unsupportedVersion, .handshakeRequired,
            .checksumMismatch, .invalidBody, .invalidTopic, .slowConsumer, .shuttingDown, .notPermitted,
            .invalidPosture, .unknownDevice, .resumeRejected, .rejected, .duplicateHello, .internalError,
            .invalidValue, .storeUnavailable,
            // 20–29: resource limits (PROTOCOL.md §5.6).
            .messageRateTooHigh, .tooManySubscriptions, .replyQueueFull, .handshakeTimeout, .idleTimeout,
            .tooManyConnections, .connectionsRefused,
            // 30–39: federation (PROTOCOL.md §5.8).
            .federationUnavailable,
        ]

        /// The code for a wire number, or `nil` when unknown.
        public init?(rawValue: UInt16) {
            guard let c = Code.all.first(where: { $0.rawValue == rawValue }) else { return nil }
            self = c
        }

        /// The code with a given name, or `nil`.
        public init?(name: String) {
            guard let c = Code.all.first(where: { $0.name == name }) else { return nil }
            self = c
        }

        public var description: String { "\(name) (\(rawValue))" }
    }

    /// What kind of error.
    public var code: Code
    /// A sentence for a person: what was wrong and what to do.
    public var message: String

    /// Creates an error with a code and a message.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.name): \(message)" }
}
