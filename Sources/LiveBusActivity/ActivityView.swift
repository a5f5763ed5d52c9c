import LiveBusClock
import LiveBusSimulator

/// Formats a countdown the way a Live Activity timer counting down to a date shows it: `m:ss`, or `h:mm:ss` from
/// one hour on; never negative.
///
/// Partial seconds round up, so the text reads `0:00` exactly when the target is reached and from then on (a
/// `Text(timerInterval:)` timer stops at its upper bound instead of counting up).
/// - Parameter remainingMilliseconds: Target minus the client's now, in milliseconds (client clock).
/// - Returns: For example `"4:05"`, `"1:02:03"`, `"0:00"` at or after zero.
/// - Note: Source: https://developer.apple.com/documentation/swiftui/text/init(timerinterval:pausetime:countsdown:showshours:)
///   ("showsHours" over 60 minutes), reference/live-activities.md §1.9, §6 (clamp at 0:00).
public func formatCountdown(remainingMilliseconds: Int64) -> String {
    guard remainingMilliseconds > 0 else { return "0:00" }
    let seconds = remainingMilliseconds / 1000 + (remainingMilliseconds % 1000 > 0 ? 1 : 0)
    let hours = seconds / 3600
    let minutes = (seconds % 3600) / 60
    let secs = seconds % 60
    func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
    if hours > 0 { return "\(hours):\(two(minutes)):\(two(secs))" }
    return "\(minutes):\(two(secs))"
}

/// The language of the activity's text.
public enum ActivityLanguage: String, Sendable, Equatable, CaseIterable {
    /// Korean (해요체), as in the Delivery Lab field report.
    case korean
    /// English.
    case english
}

/// The fixed phrases of the activity views.
///
/// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt (이전 상태, 마지막 예상 기준, 업데이트를 기다리고 있어요).
public enum ActivityPhrase: String, Sendable, CaseIterable {
    /// The short stale mark under the compact status.
    case previousStatus
    /// The countdown is based on the last estimate (stale, or at zero).
    case basedOnLastEstimate
    /// No fresh update yet.
    case waitingForUpdate
    /// Prefix of the last confirmed time.
    case lastConfirmed
    /// Prefix of the countdown line.
    case arrivingIn
    /// Prefix of the progress line.
    case progress

    /// The phrase in `language`.
    /// - Parameter language: Korean or English.
    /// - Returns: The text.
    public func text(_ language: ActivityLanguage) -> String {
        switch (self, language) {
        case (.previousStatus, .korean): "이전 상태"
        case (.previousStatus, .english): "Previous status"
        case (.basedOnLastEstimate, .korean): "마지막 예상 기준"
        case (.basedOnLastEstimate, .english): "Based on last estimate"
        case (.waitingForUpdate, .korean): "업데이트를 기다리고 있어요"
        case (.waitingForUpdate, .english): "Waiting for an update"
        case (.lastConfirmed, .korean): "마지막 확인"
        case (.lastConfirmed, .english): "Last confirmed"
        case (.arrivingIn, .korean): "도착까지"
        case (.arrivingIn, .english): "Arriving in"
        case (.progress, .korean): "진행률"
        case (.progress, .english): "Progress"
        }
    }
}

/// The text of one activity in every presentation at one instant (text only; pixel layout is the layout target's).
///
/// - Compact leading: the short summary (`ContentState.summary`), plus the stale mark (이전 상태 / Previous status)
///   while stale.
/// - Compact trailing: the countdown.
/// - Minimal: the status icon (an SF Symbols name).
/// - Expanded and lock screen: short summary, countdown line, detail line, (lock screen) progress, and while stale
///   or at zero the "based on last estimate" line; while stale also "waiting for an update" and the last confirmed
///   time.
/// The countdown keeps counting to the last estimate while stale and stops at `0:00`; the status never changes by
/// itself. Ended activities leave the Dynamic Island and keep their final status on the lock screen; dismissed ones
/// show nothing.
///
/// - Note: Source: reference/field-reports/001_df7ae4e21a8ebe10.txt ; https://developer.apple.com/documentation/widgetkit/activityviewcontext/isstale ;
///   https://developer.apple.com/design/human-interface-guidelines/live-activities
public struct ActivityView: Sendable, Equatable {
    /// The activity state the view was drawn for.
    public var state: ActivityState
    /// Target − now in milliseconds (client clock), clamped at 0.
    public var remainingMilliseconds: Int64
    /// The countdown text, or `nil` when no countdown is shown (ended, dismissed, or a final status).
    public var countdown: String?
    /// `true` while the stale lines are shown.
    public var showsStaleLines: Bool
    /// `true` while the "based on last estimate" line is shown (stale, or the countdown reached zero).
    public var showsLastEstimateLine: Bool
    /// Compact leading lines (status, then the stale mark); empty outside the Dynamic Island.
    public var compactLeading: [String]
    /// Compact trailing text (the countdown), or `nil`.
    public var compactTrailing: String?
    /// The minimal presentation's icon (SF Symbols name), or `nil` outside the Dynamic Island.
    public var minimal: String?
    /// Expanded presentation lines; empty outside the Dynamic Island.
    public var expanded: [String]
    /// Lock screen lines; empty once dismissed.
    public var lockScreen: [String]
    /// For an ended activity, when it leaves the lock screen (client clock: the dismissal date, at most 4 h after
    /// the end's timestamp, PROTOCOL.md §9.7); else `nil`.
    public var removalAt: ClientInstant? = nil

    /// Draws `activity` at `now`.
    /// - Parameters:
    ///   - activity: The activity.
    ///   - now: The client's now (client clock); the countdown is `etaTarget − now`.
    ///   - language: Korean (default) or English.
    ///   - utcOffsetMinutes: The client's time zone offset for the last confirmed time (540 for Korea), minutes.
    public init(
        activity: Activity,
        at now: ClientInstant,
        language: ActivityLanguage = .korean,
        utcOffsetMinutes: Int = 0
    ) {
        let status = activity.content.status
        let words = activity.content.summary
        let summary = language == .korean ? words.ko : words.en
        let detail = language == .korean ? words.detailKo : words.detailEn
        let remaining = max(0, now.milliseconds(to: activity.etaTarget))
        let stale = activity.state == .stale
        state = activity.state
        remainingMilliseconds = remaining
        showsStaleLines = stale
        let lastConfirmedLine =
            "\(ActivityPhrase.lastConfirmed.text(language)) \(Self.timeOfDay(activity.lastConfirmed, utcOffsetMinutes: utcOffsetMinutes))"
        switch activity.state {
        case .dismissed:
            countdown = nil
            showsLastEstimateLine = false
            compactLeading = []
            compactTrailing = nil
            minimal = nil
            expanded = []
            lockScreen = []
            showsStaleLines = false
            return
        case .ended:
            countdown = nil
            showsLastEstimateLine = false
            compactLeading = []
            compactTrailing = nil
            minimal = nil
            expanded = []
            lockScreen = [summary, detail, lastConfirmedLine]
            removalAt = activity.removalInstant
            return
        case .active, .stale:
            break
        }
        let timer = status.isTerminal ? nil : formatCountdown(remainingMilliseconds: remaining)
        countdown = timer
        showsLastEstimateLine = timer != nil && (stale || remaining == 0)
        compactLeading = stale ? [summary, ActivityPhrase.previousStatus.text(language)] : [summary]
        compactTrailing = timer
        minimal = Self.symbol(status)
        var lines = [summary]
        if let timer { lines.append("\(ActivityPhrase.arrivingIn.text(language)) \(timer)") }
        lines.append(detail)
        var trailer: [String] = []
        if showsLastEstimateLine { trailer.append(ActivityPhrase.basedOnLastEstimate.text(language)) }
        if stale {
            trailer.append(ActivityPhrase.waitingForUpdate.text(language))
            trailer.append(lastConfirmedLine)
        }
        expanded = lines + trailer
        let percent = Int((min(max(activity.content.progress, 0), 1) * 100).rounded())
        lockScreen = lines + ["\(ActivityPhrase.progress.text(language)) \(percent)%"] + trailer
    }

    /// The SF Symbols name of the status icon shown in the minimal presentation.
    /// - Parameter status: The order status.
    /// - Returns: For example `bicycle` for delivering.
    public static func symbol(_ status: OrderStatus) -> String {
        switch status {
        case .created: "receipt"
        case .cooking: "frying.pan"
        case .awaitingPickup: "bag"
        case .pickedUp: "takeoutbag.and.cup.and.straw"
        case .delivering: "bicycle"
        case .delivered: "checkmark.circle"
        case .canceled: "xmark.circle"
        }
    }

    /// `HH:mm` of a client instant in the client's time zone.
    /// - Parameters:
    ///   - instant: Client clock.
    ///   - utcOffsetMinutes: The time zone offset, minutes.
    /// - Returns: For example `"09:05"`.
    public static func timeOfDay(_ instant: ClientInstant, utcOffsetMinutes: Int) -> String {
        let dayMinutes: Int64 = 24 * 60
        let minutes = instant.millisecondsSinceEpoch.floorDivided(by: 60_000) + Int64(utcOffsetMinutes)
        let ofDay = ((minutes % dayMinutes) + dayMinutes) % dayMinutes
        let h = ofDay / 60
        let m = ofDay % 60
        return (h < 10 ? "0\(h)" : "\(h)") + ":" + (m < 10 ? "0\(m)" : "\(m)")
    }
}

extension Int64 {
    /// Division rounding toward negative infinity.
    fileprivate func floorDivided(by divisor: Int64) -> Int64 {
        let quotient = self / divisor
        return (self % divisor != 0 && (self < 0) != (divisor < 0)) ? quotient - 1 : quotient
    }
}
