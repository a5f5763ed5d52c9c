/// The state of one session's app, as iOS sees it.
///
/// - `foreground`: on screen; its own connection carries a live stream.
/// - `background`: just left the screen; no live stream (it may run only inside a granted window).
/// - `suspended`: in memory but not running; it runs only inside a granted window.
/// - `terminated`: force-quit from the app switcher; no background refresh and no silent pushes,
///   but Live Activity pushes still reach its activity.
///
/// - Note: Source: https://developer.apple.com/documentation/backgroundtasks/choosing-background-strategies-for-your-app ;
///   force quit: https://developer.apple.com/forums/thread/719222 (live-activities.md §3.1, §3.4).
public enum AppState: String, Sendable, Codable, CaseIterable {
    case foreground
    case background
    case suspended
    case terminated

    /// `true` for `background` and `suspended`: the app may run only inside a granted window.
    public var isBackgrounded: Bool { self == .background || self == .suspended }
}

/// The path an update takes to the phone.
///
/// - `appConnection`: the app's own connection (a live stream in the foreground, a fetch in a background window).
/// - `activityPush`: the Live Activity push channel; reaches the activity whatever the app state,
///   subject to priority and budget.
/// - `silentPush`: a background (`content-available`) push to the app; rate-limited, none after force quit.
///
/// - Note: Source: https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications ;
///   https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app
public enum Channel: String, Sendable, Codable, CaseIterable, Hashable {
    case appConnection
    case activityPush
    case silentPush
}

/// Per-session device and user settings that change how the scheduler decides.
public struct SessionProfile: Sendable, Codable, Equatable, Hashable {
    /// Low Power Mode is on: fewer refresh windows, and (with
    /// ``SchedulerConfig/lowPowerBlocksPriority10Wake``) even priority 10 pushes do not wake the device.
    ///
    /// - Note: Source: https://developer.apple.com/forums/thread/775340 ;
    ///   https://developer.apple.com/documentation/foundation/processinfo/islowpowermodeenabled
    public var lowPowerMode: Bool
    /// The app declares `NSSupportsLiveActivitiesFrequentUpdates` and the user left it on: a higher hourly budget.
    ///
    /// - Note: Source: https://developer.apple.com/documentation/bundleresources/information-property-list/nssupportsliveactivitiesfrequentupdates
    public var frequentUpdates: Bool
    /// The user's Background App Refresh switch for this app. Off: refresh requests are denied (`unavailable`).
    ///
    /// - Note: Source: https://developer.apple.com/documentation/backgroundtasks/bgtaskscheduler/submittaskrequest(_:completionhandler:)
    public var backgroundAppRefreshEnabled: Bool

    /// Creates a profile. Defaults: Low Power Mode off, frequent updates off, Background App Refresh on.
    public init(lowPowerMode: Bool = false, frequentUpdates: Bool = false, backgroundAppRefreshEnabled: Bool = true) {
        self.lowPowerMode = lowPowerMode
        self.frequentUpdates = frequentUpdates
        self.backgroundAppRefreshEnabled = backgroundAppRefreshEnabled
    }

    /// The default profile: Low Power Mode off, frequent updates off, Background App Refresh on.
    public static let `default` = SessionProfile()
}
