import Foundation
import LiveBusActivity
import LiveBusClock
import LiveBusLayout
import LiveBusText
import LiveBusWire

/// What a phone's layout looked like after a posture change or an update, as written to the JSON-lines log.
public struct AppliedLayout: Sendable, Codable, Equatable {
    /// Always `layout`.
    public var type = "layout"
    /// The session's name.
    public var session: String
    /// Device id.
    public var device: String
    /// `flat`, `half-opened` or `folded`.
    public var foldState: String
    /// `portrait` or `landscape`.
    public var orientation: String
    /// OS version the layout was computed for.
    public var os: String
    /// The arrangement chosen (`vertical`, `horizontal`, `column`, `fullScreen`…).
    public var arrangement: String
    /// Why it was chosen.
    public var reason: String
    /// Horizontal size class.
    public var horizontalSizeClass: String
    /// Whether every layout invariant held.
    public var invariantsHeld: Bool
    /// Names of failed invariants with details (empty when all held).
    public var failedInvariants: [String]
    /// The reserved region when half-opened, points `[x, y, width, height]`.
    public var reservedRegion: [Double]?
    /// Dynamic Island presentation per order (`compact`, `minimalAttached`, `minimalDetached`, `none`).
    public var island: [String: String]
    /// What triggered the layout: `attach`, `posture`, `update`.
    public var trigger: String
    /// The phone's clock, ms since the Unix epoch.
    public var clientTime: Int64
    /// The layout engine's named rects (`LayoutResult.rects`), `[x, y, width, height]` in window points; a name
    /// drawn twice keeps its first rect.
    public var rects: [String: [Double]] = [:]
    /// What overflows its space, one line each (`LiveActivityLayout.overflowLines`); empty when everything fits.
    public var overflow: [String] = []
    /// The orders on the Lock Screen, top first (`ActivityPlan.lockScreenOrder`).
    public var lockScreen: [String] = []

    /// Whether `other` shows the same thing (everything but `trigger` and `clientTime`): the client logs an
    /// update-triggered layout only when what it shows changed.
    public func showsSame(as other: AppliedLayout) -> Bool {
        var a = self
        a.trigger = other.trigger
        a.clientTime = other.clientTime
        return a == other
    }
}

/// Lays a phone out from what it holds: its posture, its activities, the order's markers.
public enum PhoneLayout {
    /// The text measurer: FreeType + HarfBuzz with NanumGothic when installed, else the approximate one (named in
    /// the result's `textMeasurer`).
    public static let measurer: any TextMeasurer = (try? FontTextMeasurer()) ?? ApproximateTextMeasurer()

    /// Computes the layout of `session`'s overlay map screen with its leading activity on the lock screen.
    /// - Returns: The input and result, or the error for an impossible posture.
    public static func compute(_ s: ClientSession) -> Result<(LayoutInput, LayoutResult), LayoutError> {
        compute(
            device: s.options.device,
            posture: s.options.posture,
            os: s.options.os,
            board: s.board,
            body: { s.replicas[$0]?.body },
            now: s.now()
        )
    }

    /// Computes the layout of a phone's overlay map screen with its leading activity on the lock screen, from its
    /// parts: what the phone itself does (``compute(_:)``) and what the daemon's dashboard does with its mirror of
    /// each phone (the same call, so the page draws the same rects as `attach --json` and the SVG).
    /// - Parameters:
    ///   - device: catalog device id.
    ///   - p: the phone's posture (points for window and keyboard).
    ///   - os: OS version (`27.1`), nil for the newest.
    ///   - board: the phone's activities.
    ///   - body: the latest event body of a topic (`orders/<id>`), for the map's markers.
    ///   - now: the phone's clock.
    /// - Returns: The input and result, or the error for an impossible posture.
    public static func compute(
        device: String,
        posture p: PostureBody,
        os: String?,
        board: ActivityBoard,
        body: (String) -> EventBody?,
        now: ClientInstant
    ) -> Result<(LayoutInput, LayoutResult), LayoutError> {
        do {
            let catalog = try DeviceCatalog.bundled()
            var window: Size?
            if let w = p.windowWidth, let h = p.windowHeight { window = Size(width: w, height: h) }
            let posture = Posture(
                deviceID: device,
                foldState: FoldState(rawValue: p.foldState) ?? .flat,
                orientation: Orientation(rawValue: p.orientation) ?? .portrait,
                windowSize: window,
                keyboardHeight: p.keyboardHeight ?? 0,
                osVersion: (try? OSVersion.parse(os ?? "newest")) ?? .newest
            )
            let resolved = try resolve(posture, in: catalog)
            let lead = plan(board).lockScreenOrder.first.flatMap { board.activity($0) }
            var content: LiveActivityContent?
            var markers: [MapMarker] = []
            if let a = lead {
                let v = ActivityView(activity: a, at: now, language: .korean)
                let schema = board.schema
                content = LiveActivityContent(
                    statusText: schema.readsAsDelivery
                        ? a.content.summary.ko
                        : (a.fields.value(at: schema.presentation.statusText)?.text ?? a.content.summary.ko),
                    statusSymbol: ActivityView.symbol(a.content.status),
                    timerText: v.countdown ?? "",
                    progress: a.content.progress,
                    lastConfirmedText: v.lockScreen.last { $0.hasPrefix("마지막 확인") } ?? "",
                    staleLines: v.showsStaleLines ? Array(v.lockScreen.suffix(3)) : []
                )
                content?.boxes = Self.boxes(schema.presentation)
                if let body = body("orders/\(a.orderID)") {
                    if let p = body.places?.store {
                        markers.append(MapMarker(kind: .store, latitude: p.latitude, longitude: p.longitude))
                    }
                    if let p = body.places?.customer {
                        markers.append(MapMarker(kind: .customer, latitude: p.latitude, longitude: p.longitude))
                    }
                    if let p = body.contentState.riderPosition {
                        markers.append(MapMarker(kind: .rider, latitude: p.latitude, longitude: p.longitude))
                    }
                }
            }
            // A keyboard (posture --keyboard) means the tag sheet's text field has focus: the sheet is up and rides
            // on the keyboard.
            let typing = resolved.keyboardHeight > 0
            let input = LayoutInput(
                posture: resolved,
                screen: .overlay,
                textFieldFocused: typing,
                markers: markers,
                showSheet: typing,
                liveActivity: content,
                measurer: measurer
            )
            return .success((input, LayoutEngine.layout(input)))
        } catch {
            return .failure(error)
        }
    }

    /// The posture `next` with its window following the screen from `current` (``WindowFollow``): on a fold or
    /// orientation change an unpinned window becomes full screen, a pinned split-view width is kept (clamped to
    /// the new screen). A `next` that names its own window or pin is returned as it is.
    ///
    /// - Parameters:
    ///   - current: the posture before.
    ///   - next: the posture asked for.
    ///   - device: the catalog device id.
    /// - Returns: the posture to apply and a note when the window changed.
    public static func following(_ current: PostureBody, to next: PostureBody, device: String) -> (PostureBody, String?)
    {
        guard next.windowWidth == current.windowWidth, next.windowHeight == current.windowHeight,
            next.splitViewWidth == current.splitViewWidth,
            let catalog = try? DeviceCatalog.bundled(), let d = try? catalog.device(device),
            let fromFold = FoldState(rawValue: current.foldState),
            let fromOrientation = Orientation(rawValue: current.orientation),
            let toFold = FoldState(rawValue: next.foldState),
            let toOrientation = Orientation(rawValue: next.orientation)
        else { return (next, nil) }
        var window: Size?
        if let w = current.windowWidth, let h = current.windowHeight { window = Size(width: w, height: h) }
        let follow = WindowFollow.next(
            device: d,
            from: (fromFold, fromOrientation),
            window: window,
            splitViewWidth: current.splitViewWidth,
            to: (toFold, toOrientation)
        )
        var out = next
        out.windowWidth = follow.window?.width
        out.windowHeight = follow.window?.height
        out.splitViewWidth = follow.splitViewWidth
        return (out, follow.note)
    }

    /// Which Dynamic Island presentation and lock-screen position each activity gets.
    /// Source: ../shared/reference/live-activities.md §1.1, §4.1.
    public static func plan(_ s: ClientSession) -> ActivityPlan { plan(s.board) }

    /// Which Dynamic Island presentation and lock-screen position each activity of `board` gets.
    /// Source: ../shared/reference/live-activities.md §1.1, §4.1.
    public static func plan(_ board: ActivityBoard) -> ActivityPlan {
        let summaries = board.activities.sorted { $0.startedAt < $1.startedAt }.enumerated().map { i, a in
            ActivitySummary(
                id: a.orderID,
                relevanceScore: a.relevanceScore,
                startOrdinal: i,
                isOngoing: a.state == .active || a.state == .stale
            )
        }
        return ActivityPresentationPlanner.plan(summaries)
    }

    /// The log record of a layout.
    public static func record(_ s: ClientSession, _ r: LayoutResult, trigger: String) -> AppliedLayout {
        let failed = r.invariants.filter { !$0.holds }
        let reserved = r.rects.first { $0.name == "reservedRegion" }?.rect
        let p = plan(s)
        var island: [String: String] = [:]
        for a in p.assignments { island[a.id] = a.island.rawValue }
        var rects: [String: [Double]] = [:]
        for n in r.rects where rects[n.name] == nil {
            rects[n.name] = [n.rect.x, n.rect.y, n.rect.width, n.rect.height]
        }
        var out = AppliedLayout(
            session: s.name,
            device: s.options.device,
            foldState: s.options.posture.foldState,
            orientation: s.options.posture.orientation,
            os: r.osVersion.description,
            arrangement: "\(r.arrangement)",
            reason: r.reason,
            horizontalSizeClass: r.horizontalSizeClass.rawValue,
            invariantsHeld: failed.isEmpty,
            failedInvariants: failed.map { "\($0.name): \($0.detail)" },
            reservedRegion: reserved.map { [$0.x, $0.y, $0.width, $0.height] },
            island: island,
            trigger: trigger,
            clientTime: s.now().millisecondsSinceEpoch
        )
        out.rects = rects
        out.overflow = LiveActivityLayout.overflowLines(r.truncations)
        out.lockScreen = p.lockScreenOrder
        return out
    }
}

extension PhoneLayout {
    /// The compact boxes an app's schema presentation gives: the width and text style of the first `statusText` item
    /// of compact leading and the first `countdown` item of compact trailing (monospaced digits), each falling back
    /// to the field report's (56 pt caption status, 44 pt timer) when the schema gives none.
    /// - Parameter presentation: The schema's presentation.
    /// - Returns: The boxes for ``LiveActivityLayout``.
    public static func boxes(_ presentation: ActivityPresentation) -> LiveActivityBoxes {
        var boxes = LiveActivityBoxes.fieldReport
        if let item = presentation.compactLeading.first(where: { $0.content != .countdown }) {
            if let width = item.width { boxes.statusWidth = width }
            if let font = LiveActivityBoxes.font(textStyle: item.style.rawValue) {
                boxes.statusFont = FontSpec(size: font.size, weight: .semibold)
            }
        }
        if let item = presentation.compactTrailing.first(where: { $0.content == .countdown }) {
            if let width = item.width { boxes.timerWidth = width }
            if let font = LiveActivityBoxes.font(textStyle: item.style.rawValue, monospacedDigits: true) {
                boxes.timerFont = FontSpec(size: font.size, weight: .semibold, monospacedDigits: true)
            }
        }
        // Expanded and lock screen: the text style of their status and countdown items.
        func font(_ items: [PresentationItem], _ content: PresentationItem.Content, mono: Bool) -> FontSpec? {
            items.first { $0.content == content }.flatMap {
                LiveActivityBoxes.font(textStyle: $0.style.rawValue, monospacedDigits: mono)
            }
        }
        boxes.expandedStatusFont = font(presentation.expanded, .statusText, mono: false)
        boxes.expandedTimerFont = font(presentation.expanded, .countdown, mono: true)
        boxes.lockScreenStatusFont = font(presentation.lockScreen, .statusText, mono: false)
        boxes.lockScreenTimerFont = font(presentation.lockScreen, .countdown, mono: true)
        return boxes
    }
}
