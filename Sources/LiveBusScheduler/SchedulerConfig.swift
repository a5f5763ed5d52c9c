/// The numbers the refresh scheduler decides with. Durations are milliseconds.
///
/// Apple publishes no push budget, no refresh cadence and no silent-push limit beyond "two or three per hour";
/// every default below is **ours**, chosen so a 30-minute delivery shows each rule at work, and is configurable.
///
/// - Note: Source: "The per user 'budget' is not documented, and could change."
///   https://developer.apple.com/forums/thread/747624 (live-activities.md §2.4, §5 gap 1).
public struct SchedulerConfig: Sendable, Codable, Equatable, Hashable {
    /// Priority 10 Live Activity pushes allowed per budget window (rolling), frequent updates off. Default 12 (ours).
    /// Values below 1 are treated as 1.
    ///
    /// - Note: Source: "a certain budget of ActivityKit push notifications per hour" (Push article,
    ///   https://developer.apple.com/documentation/activitykit/starting-and-updating-live-activities-with-activitykit-push-notifications).
    public var priority10BudgetPerHour: Int
    /// Priority 10 pushes allowed per budget window with frequent updates on. Default 60 (ours).
    /// Values below 1 are treated as 1.
    ///
    /// - Note: Source: frequent updates give a "higher update budget" (WWDC23 10185).
    public var frequentUpdatesPriority10BudgetPerHour: Int
    /// Length of the rolling budget window, milliseconds. Default 3 600 000 (one hour, as Apple words it).
    public var budgetWindowMilliseconds: Int64
    /// A throttled push is retried no sooner than this after it was throttled, milliseconds. Default 60 000 (ours).
    /// It is never released before a budget slot frees either.
    public var throttleRetryDelayMilliseconds: Int64
    /// Minimum time between two background refresh windows, milliseconds. Default 900 000 (15 min, ours).
    ///
    /// - Note: Source: the system "decides the best time to launch your background task"
    ///   (https://developer.apple.com/documentation/backgroundtasks/choosing-background-strategies-for-your-app).
    public var refreshMinimumIntervalMilliseconds: Int64
    /// Minimum time between two refresh windows in Low Power Mode, milliseconds. Default 3 600 000 (ours).
    public var lowPowerRefreshMinimumIntervalMilliseconds: Int64
    /// Upper bound of the random delay added to every granted window, milliseconds, drawn from the seeded
    /// generator. Default 300 000 (5 min, ours).
    public var refreshJitterMilliseconds: Int64
    /// Refresh windows allowed per rolling day. Default 24 (ours). 0 denies every request.
    ///
    /// - Note: Source: "Each app has an energy and data budget which is slowly depleted during the day" (WWDC20 10063).
    public var dailyRefreshBudget: Int
    /// Refresh windows allowed per rolling day in Low Power Mode. Default 6 (ours). 0 denies every request.
    public var lowPowerDailyRefreshBudget: Int
    /// How long the app runs in a granted window (refresh or silent push), milliseconds. Default 30 000.
    ///
    /// - Note: Source: "provides your app up to 30 seconds of background runtime"
    ///   (https://developer.apple.com/documentation/backgroundtasks/choosing-background-strategies-for-your-app).
    public var windowRunTimeMilliseconds: Int64
    /// Silent (background) pushes delivered per rolling hour while the app is not in the foreground. Default 3.
    ///
    /// - Note: Source: "don't try to send more than two or three per hour"
    ///   (https://developer.apple.com/documentation/usernotifications/pushing-background-updates-to-your-app).
    public var silentPushesPerHour: Int
    /// An asleep device wakes on its own at least this often, milliseconds; held priority 5 pushes (and, in
    /// Low Power Mode, held priority 10 pushes) go out then at the latest. Default 900 000 (15 min, ours).
    ///
    /// - Note: Source: [Derived] live-activities.md §6 (priority 5 is delivered when the device is next awake).
    public var idleWakeIntervalMilliseconds: Int64
    /// In Low Power Mode, priority 10 pushes do not wake an asleep device. Default `true`.
    ///
    /// - Note: Source: "If the device is in low power mode, then even priority 10 may not be enough to wake it up"
    ///   (https://developer.apple.com/forums/thread/775340).
    public var lowPowerBlocksPriority10Wake: Bool
    /// How many decisions the explain log keeps (oldest dropped first). Default 64.
    public var explainLogCapacity: Int

    /// Creates a configuration; every parameter defaults to the documented default.
    public init(
        priority10BudgetPerHour: Int = 12,
        frequentUpdatesPriority10BudgetPerHour: Int = 60,
        budgetWindowMilliseconds: Int64 = 3_600_000,
        throttleRetryDelayMilliseconds: Int64 = 60_000,
        refreshMinimumIntervalMilliseconds: Int64 = 900_000,
        lowPowerRefreshMinimumIntervalMilliseconds: Int64 = 3_600_000,
        refreshJitterMilliseconds: Int64 = 300_000,
        dailyRefreshBudget: Int = 24,
        lowPowerDailyRefreshBudget: Int = 6,
        windowRunTimeMilliseconds: Int64 = 30_000,
        silentPushesPerHour: Int = 3,
        idleWakeIntervalMilliseconds: Int64 = 900_000,
        lowPowerBlocksPriority10Wake: Bool = true,
        explainLogCapacity: Int = 64
    ) {
        self.priority10BudgetPerHour = priority10BudgetPerHour
        self.frequentUpdatesPriority10BudgetPerHour = frequentUpdatesPriority10BudgetPerHour
        self.budgetWindowMilliseconds = budgetWindowMilliseconds
        self.throttleRetryDelayMilliseconds = throttleRetryDelayMilliseconds
        self.refreshMinimumIntervalMilliseconds = refreshMinimumIntervalMilliseconds
        self.lowPowerRefreshMinimumIntervalMilliseconds = lowPowerRefreshMinimumIntervalMilliseconds
        self.refreshJitterMilliseconds = refreshJitterMilliseconds
        self.dailyRefreshBudget = dailyRefreshBudget
        self.lowPowerDailyRefreshBudget = lowPowerDailyRefreshBudget
        self.windowRunTimeMilliseconds = windowRunTimeMilliseconds
        self.silentPushesPerHour = silentPushesPerHour
        self.idleWakeIntervalMilliseconds = idleWakeIntervalMilliseconds
        self.lowPowerBlocksPriority10Wake = lowPowerBlocksPriority10Wake
        self.explainLogCapacity = explainLogCapacity
    }

    /// The documented defaults (all ours where Apple gives no number).
    public static let `default` = SchedulerConfig()

    /// Length of the rolling day the refresh budget counts over, milliseconds (24 h).
    public static let refreshDayMilliseconds: Int64 = 86_400_000

    /// The hourly priority 10 budget that applies to `profile`, at least 1.
    public func priority10Budget(for profile: SessionProfile) -> Int {
        max(1, profile.frequentUpdates ? frequentUpdatesPriority10BudgetPerHour : priority10BudgetPerHour)
    }

    /// The minimum interval between refresh windows that applies to `profile`, milliseconds, at least 0.
    public func refreshMinimumInterval(for profile: SessionProfile) -> Int64 {
        max(0, profile.lowPowerMode ? lowPowerRefreshMinimumIntervalMilliseconds : refreshMinimumIntervalMilliseconds)
    }

    /// The daily refresh window budget that applies to `profile`, at least 0.
    public func dailyRefreshBudget(for profile: SessionProfile) -> Int {
        max(0, profile.lowPowerMode ? lowPowerDailyRefreshBudget : dailyRefreshBudget)
    }
}
