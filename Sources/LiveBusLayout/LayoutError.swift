/// An error from the layout target: an unreadable catalog or an impossible posture.
///
/// The message names what was wrong and lists what is valid, so a CLI can print it as is.
public struct LayoutError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Stable error codes; new codes may be added.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        private enum Wrapped: String, Sendable, Hashable {
            case catalogUnreadable = "catalog-unreadable"
            case catalogInvalid = "catalog-invalid"
            case unknownDevice = "unknown-device"
            case unsupportedFoldState = "unsupported-fold-state"
            case windowTooLarge = "window-too-large"
            case windowTooSmall = "window-too-small"
            case invalidKeyboardHeight = "invalid-keyboard-height"
            case invalidArgument = "invalid-argument"
            case invalidOSVersion = "invalid-os-version"
        }
        private let wrapped: Wrapped
        private init(_ wrapped: Wrapped) { self.wrapped = wrapped }

        /// The bundled `devices.json` could not be found or decoded.
        public static let catalogUnreadable = Code(.catalogUnreadable)
        /// The catalog decoded but breaks a documented rule (duplicate id, missing screen for a fold state…).
        public static let catalogInvalid = Code(.catalogInvalid)
        /// The posture names a device id that is not in the catalog.
        public static let unknownDevice = Code(.unknownDevice)
        /// The fold state is impossible on this device (half-opened without a hinge, folded without a cover screen).
        public static let unsupportedFoldState = Code(.unsupportedFoldState)
        /// The window is larger than the active screen in this orientation.
        public static let windowTooLarge = Code(.windowTooLarge)
        /// The window is smaller than the engine's documented minimum.
        public static let windowTooSmall = Code(.windowTooSmall)
        /// The keyboard height is negative or taller than 40% of the window.
        public static let invalidKeyboardHeight = Code(.invalidKeyboardHeight)
        /// A command-line word (fold state, orientation, window, screen, tags) could not be parsed.
        public static let invalidArgument = Code(.invalidArgument)
        /// An OS version (`--os`, handshake `os`, scenario file) is not `MAJOR[.MINOR[.PATCH]]` or `newest`.
        public static let invalidOSVersion = Code(.invalidOSVersion)

        /// The code as a kebab-case string, e.g. `unknown-device`.
        public var description: String { wrapped.rawValue }
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// What went wrong and what to do, listing the valid values.
    public var message: String

    /// Creates an error with a code and a message that says what to do.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// `code: message`.
    public var description: String { "\(code): \(message)" }
}
