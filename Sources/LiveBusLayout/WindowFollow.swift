/// What the window becomes when a phone's posture changes: it follows the screen on every change of the active
/// screen (fold state or orientation), unless the session pinned a split-view width.
///
/// Rules (sizes in points; dp on Android):
/// - Same screen and orientation: the window stays as it was.
/// - A pinned split-view width: the window keeps that width, clamped to the new screen's width (with a note),
///   and takes the new screen's height; the pin itself stays, so unfolding again restores the width.
/// - Otherwise a window given for the old screen follows the new one: full screen, with a note. (Jetpack
///   WindowManager reports new window metrics after a fold change; keeping the old size is the Android bug
///   "window size not updated after unfold".)
///
/// - Note: Source: LiveBus issue 18 (windows that follow the fold); reference/posture-and-devices.md §1.2
///   ("viewport might change from a COMPACT all the way to an EXPANDED").
public enum WindowFollow {
    /// The window after a posture change.
    public struct Outcome: Sendable, Equatable {
        /// The window for the new posture; nil = the whole screen.
        public var window: Size?
        /// The pinned split-view width, unchanged (nil when none).
        public var splitViewWidth: Double?
        /// What happened to the window, for the person who changed the posture; nil when nothing did.
        public var note: String?

        /// Creates an outcome.
        public init(window: Size?, splitViewWidth: Double?, note: String?) {
            self.window = window
            self.splitViewWidth = splitViewWidth
            self.note = note
        }
    }

    /// The window of a newly pinned split-view width: that width (clamped to the screen, with a note) and the
    /// screen's height.
    ///
    /// - Parameters:
    ///   - device: the catalog device.
    ///   - posture: the fold state and orientation.
    ///   - width: the split-view width to pin (points; dp on Android).
    /// - Returns: the window, the pin and a note when clamped; the pin alone when the fold state is impossible.
    public static func pinned(device: Device, posture: (FoldState, Orientation), width: Double) -> Outcome {
        guard let screen = device.screen(for: posture.0) else {
            return Outcome(window: nil, splitViewWidth: width, note: nil)
        }
        let size = screen.size(in: posture.1)
        let w = min(width, size.width)
        return Outcome(
            window: Size(width: w, height: size.height),
            splitViewWidth: width,
            note: w < width - 0.005
                ? "pinned split-view width \(format(width)) clamped to \(format(w)), the width of the \(screen.name) "
                    + "screen (\(format(size.width))x\(format(size.height)) \(device.unit))"
                : nil
        )
    }

    /// The window after moving `device` from one fold state and orientation to another.
    ///
    /// - Parameters:
    ///   - device: the catalog device.
    ///   - from: the fold state and orientation before.
    ///   - window: the window before (nil = full screen).
    ///   - splitViewWidth: the pinned split-view width, if any (points; dp on Android).
    ///   - to: the fold state and orientation after.
    /// - Returns: the new window, the pin and a note; the window is unchanged when `to` is a fold state the
    ///   device does not have (the posture check reports that).
    public static func next(
        device: Device,
        from: (FoldState, Orientation),
        window: Size?,
        splitViewWidth: Double?,
        to: (FoldState, Orientation)
    ) -> Outcome {
        guard let old = device.screen(for: from.0), let new = device.screen(for: to.0) else {
            return Outcome(window: window, splitViewWidth: splitViewWidth, note: nil)
        }
        let oldSize = old.size(in: from.1)
        let newSize = new.size(in: to.1)
        if old.name == new.name && oldSize == newSize {
            return Outcome(window: window, splitViewWidth: splitViewWidth, note: nil)
        }
        let screenText = "the \(new.name) screen (\(format(newSize.width))x\(format(newSize.height)) \(device.unit))"
        if let pinned = splitViewWidth {
            let width = min(pinned, newSize.width)
            let clamped = width < pinned - 0.005
            return Outcome(
                window: Size(width: width, height: newSize.height),
                splitViewWidth: pinned,
                note: clamped
                    ? "pinned split-view width \(format(pinned)) clamped to \(format(width)), the width of \(screenText)"
                    : "pinned split-view width \(format(pinned)) kept on \(screenText)"
            )
        }
        guard let window else { return Outcome(window: nil, splitViewWidth: nil, note: nil) }
        return Outcome(
            window: nil,
            splitViewWidth: nil,
            note: "window \(format(window.width))x\(format(window.height)) followed the screen: full screen on "
                + screenText
        )
    }
}
