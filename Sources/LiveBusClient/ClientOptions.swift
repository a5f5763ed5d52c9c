import LiveBusActivity
import LiveBusWire

/// How a simulated phone attaches to the bus.
public struct ClientOptions: Sendable {
    /// The daemon's Unix socket path.
    public var socketPath: String
    /// Session name (unique among live sessions), or `nil` for one assigned by the daemon.
    public var name: String?
    /// Device id from the catalog, e.g. `iphone-16-pro`.
    public var device: String
    /// The device posture.
    public var posture: PostureBody
    /// `foreground`, `background`, `suspended` or `terminated`.
    public var appState: String
    /// The OS version, e.g. `27.1`.
    public var os: String?
    /// How far this phone's wall clock is ahead of true time, milliseconds (negative: behind).
    public var clockSkewMilliseconds: Int64
    /// How fast this phone's clock runs, parts per million (positive: fast).
    public var clockDriftPPM: Double
    /// Topic patterns to subscribe to.
    public var patterns: [String]
    /// Reconnect and resume after an unexpected disconnect.
    public var reconnect: Bool
    /// Client software name sent in HELLO.
    public var clientName: String
    /// Device settings that change outcomes (low-power mode, frequent updates, Live Activities authorization).
    public var profile: ProfileBody
    /// The app's activity schema (`--activity-schema`): how pushed content decodes. `nil`: the daemon's
    /// (`livebusd --activity-schema`, relayed with each push), else the built-in delivery activity.
    public var activitySchema: ActivitySchema?

    /// Creates options.
    public init(
        socketPath: String,
        name: String? = nil,
        device: String = "iphone-16-pro",
        posture: PostureBody = PostureBody(foldState: "flat", orientation: "portrait"),
        appState: String = "foreground",
        os: String? = nil,
        clockSkewMilliseconds: Int64 = 0,
        clockDriftPPM: Double = 0,
        patterns: [String] = ["orders/>"],
        reconnect: Bool = true,
        clientName: String = "livebus-swift/0.1",
        profile: ProfileBody = ProfileBody()
    ) {
        self.socketPath = socketPath
        self.name = name
        self.device = device
        self.posture = posture
        self.appState = appState
        self.os = os
        self.clockSkewMilliseconds = clockSkewMilliseconds
        self.clockDriftPPM = clockDriftPPM
        self.patterns = patterns
        self.reconnect = reconnect
        self.clientName = clientName
        self.profile = profile
    }
}
