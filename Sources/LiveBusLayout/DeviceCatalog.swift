import Foundation
import Synchronization

/// How much a catalog figure can be trusted, as marked in `posture-and-devices.md`.
public enum SourceMark: String, Codable, Sendable, CaseIterable {
    /// Vendor documentation or vendor source code.
    case official
    /// A third party states it measured the value.
    case measured3rd = "measured-3rd"
    /// A community repo, blog or tool; plausible but not authoritative.
    case thirdParty = "3rd-party"
    /// Computed from cited inputs (the formula is in the `ref`).
    case derived
    /// Not verifiable; a placeholder.
    case estimate
}

/// Where one catalog figure comes from.
public struct Source: Codable, Sendable, Equatable {
    /// How much the figure can be trusted.
    public var mark: SourceMark
    /// Address, repo@commit path, or formula.
    public var ref: String
}

/// How a device's size classes are derived.
public enum SizeClassRule: String, Codable, Sendable {
    /// Apple iPhone rule: fixed per model, screen and orientation (the screen's `sizeClasses` table).
    case appleFixed = "apple-fixed"
    /// Apple iPad rule: regular × regular full screen; a window narrower than the catalog's
    /// `iPadRegularWidthFromPt` is compact width.
    case appleIPad = "apple-ipad"
    /// Non-Apple devices: the catalog's documented dp thresholds on the window size.
    case threshold
}

/// Horizontal and vertical size classes.
public struct SizeClassPair: Codable, Sendable, Equatable {
    /// Width size class.
    public var horizontal: SizeClass
    /// Height size class.
    public var vertical: SizeClass
}

/// Per-orientation values.
public struct PerOrientation<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
    /// Value in portrait.
    public var portrait: Value
    /// Value in landscape.
    public var landscape: Value

    /// The value for an orientation.
    public subscript(_ orientation: Orientation) -> Value {
        orientation == .portrait ? portrait : landscape
    }
}

/// The Dynamic Island in portrait screen coordinates (points).
public struct DynamicIslandSpec: Codable, Sendable, Equatable {
    /// Resting cutout, portrait screen coordinates.
    public var cutout: Rect
    /// Width of the island in the compact or minimal presentation (HIG: 230 or 250 pt).
    public var compactWidth: Double
    /// Width of the expanded presentation (HIG: 371 or 408 pt).
    public var expandedWidth: Double
    /// Corner radius (HIG: 44 pt).
    public var cornerRadius: Double
}

/// A Live Activity presentation box size from Apple's HIG "Specifications" table.
public struct PresentationSize: Codable, Sendable, Equatable {
    /// Width in points (the minimum width for `minimal`).
    public var width: Double
    /// Upper bound of the width (`minimal` only, 45 pt); nil when fixed.
    public var maxWidth: Double?
    /// Height in points (the minimum height for expanded and Lock Screen).
    public var height: Double
    /// Upper bound of the height (expanded and Lock Screen: 160 pt); nil when fixed.
    public var maxHeight: Double?
}

/// Live Activity presentation sizes of one screen.
public struct LiveActivitySpec: Codable, Sendable, Equatable {
    /// Compact leading region; nil without a Dynamic Island.
    public var compactLeading: PresentationSize?
    /// Compact trailing region; nil without a Dynamic Island.
    public var compactTrailing: PresentationSize?
    /// Minimal presentation; nil without a Dynamic Island.
    public var minimal: PresentationSize?
    /// Expanded presentation; nil without a Dynamic Island.
    public var expanded: PresentationSize?
    /// Lock Screen presentation.
    public var lockScreen: PresentationSize
}

/// A hinge (physical, between two panels) or fold (flexible screen), described in portrait coordinates.
public struct HingeSpec: Codable, Sendable, Equatable {
    /// `hinge` for a physical gap between panels (always separating and occluding), `fold` for a flexible screen.
    public enum Kind: String, Codable, Sendable { case hinge, fold }
    /// `vertical` when the band runs top to bottom in portrait (book), `horizontal` when it runs left to right (flip).
    public enum Axis: String, Codable, Sendable { case vertical, horizontal }
    /// Hinge or fold.
    public var kind: Kind
    /// Band direction in portrait.
    public var axisInPortrait: Axis
    /// Position of the band's centre along the perpendicular axis, portrait coordinates (points).
    public var centerInPortrait: Double
    /// Band thickness when flat (0 for a fold), points.
    public var flatWidth: Double
    /// Band thickness when half-opened (the division region), points.
    public var halfOpenedWidth: Double
}

/// The system's vertical bar: on iPhone Duo the status bar, navigation bar, toolbar and tab bar stack vertically
/// along one side edge (the outer display, and the inner display in landscape; the inner display in portrait keeps
/// horizontal bars).
///
/// - Note: Source: https://dev.classmethod.jp/en/articles/ios27-1-iphone-duo-vertical-bar/ [3rd-party, measured on
///   the iOS 27.2 simulator]; 84 pt width: `mirzaaghazadeh/iphone-duo-skills@b8b9d15b4dc987d0c35940265e07f4128ba79361
///   skills/iphone-duo-dual-pane-patterns/SKILL.md` [3rd-party].
public struct VerticalBarSpec: Codable, Sendable, Equatable {
    /// The physical side edge the bar runs along, in each listed orientation's frame.
    public enum Edge: String, Codable, Sendable, CaseIterable {
        /// The left edge.
        case left
        /// The right edge.
        case right
    }
    /// Which side edge.
    public var edge: Edge
    /// Bar width in points (the matching safe-area inset).
    public var width: Double
    /// Orientations in which the system uses the bar.
    public var orientations: [Orientation]
}

/// One physical display configuration of a device (a panel, a cover screen, or two panels spanned).
public struct DeviceScreen: Codable, Sendable, Equatable {
    /// Screen name, e.g. `main`, `cover`, `outer`, `inner`, `spanned`, `single`.
    public var name: String
    /// Fold states in which this screen is the active one.
    public var usedWhen: [FoldState]
    /// Size in the device's portrait orientation (points; dp on Android). May be wider than tall (iPhone Duo
    /// inner is landscape-native; `portrait` is then the upright hold).
    public var portrait: Size
    /// Native panel pixels in portrait, when known.
    public var pixels: Size?
    /// UIKit scale factor, or Android density ÷ 160.
    public var scale: Double
    /// Safe-area insets per orientation (points), in that orientation's frame.
    public var safeArea: PerOrientation<EdgeInsets>
    /// Size classes per orientation, for `apple-fixed` devices.
    public var sizeClasses: PerOrientation<SizeClassPair>?
    /// Dynamic Island, if the screen has one.
    public var dynamicIsland: DynamicIslandSpec?
    /// Live Activity presentation sizes, if published for this screen.
    public var liveActivity: LiveActivitySpec?
    /// Hinge or fold inside this screen, if any.
    public var hinge: HingeSpec?
    /// The system's vertical bar, if the screen has one (iPhone Duo).
    public var verticalBar: VerticalBarSpec?
    /// Documented multitasking window widths per orientation (points), largest first.
    public var windowWidths: PerOrientation<[Double]>?
    /// True for a foldable that reports no fold rect (Jetpack: no `FoldingFeature` in the window): it can be
    /// half-opened, but there is no band to avoid, so it lays out as flat. JSON key `noFoldRect`; absent = false.
    public var noFoldRect: Bool?
    /// Where the app's window starts in screen coordinates per orientation (points), when not at the screen's
    /// origin (a status bar above the window); absent = (0, 0). The full-screen window is the rest of the screen;
    /// safe areas, hinge, cutout and bar are converted from screen to window coordinates.
    public var windowOrigin: PerOrientation<Point>?
    /// Source of each figure, keyed by field name (`portrait`, `safeArea`, `hinge`…).
    public var sources: [String: Source]

    /// Screen size in an orientation (landscape = portrait transposed).
    public func size(in orientation: Orientation) -> Size {
        orientation == .portrait ? portrait : portrait.transposed
    }
}

/// A device in the catalog.
public struct Device: Codable, Sendable, Equatable {
    /// Stable id, e.g. `iphone-16-pro`.
    public var id: String
    /// Display name, e.g. `iPhone 16 Pro`.
    public var name: String
    /// `ios` or `android`.
    public var platform: String
    /// `pt` (Apple) or `dp` (Android; converted from pixels with `scale`).
    public var unit: String
    /// How the size classes are derived.
    public var sizeClassRule: SizeClassRule
    /// Screens, one per display configuration.
    public var screens: [DeviceScreen]

    /// Fold states this device supports, in `FoldState.allCases` order.
    public var supportedFoldStates: [FoldState] {
        FoldState.allCases.filter { state in screens.contains { $0.usedWhen.contains(state) } }
    }

    /// The screen active in a fold state, or nil when the state is impossible on this device.
    public func screen(for foldState: FoldState) -> DeviceScreen? {
        screens.first { $0.usedWhen.contains(foldState) }
    }
}

/// Engine-wide thresholds kept with the catalog so they are documented in one place.
public struct CatalogDefaults: Codable, Sendable, Equatable {
    /// Margin added on each side of a hinge band to form the reserved region when half-opened (points).
    public var reservedRegionMargin: Double
    /// `threshold` devices: width at or above which the horizontal size class is regular (dp).
    public var regularWidthFrom: Double
    /// `threshold` devices: height at or above which the vertical size class is regular (dp).
    public var regularHeightFrom: Double
    /// `apple-ipad` devices: window width at or above which the horizontal size class is regular (points).
    public var iPadRegularWidthFrom: Double
    /// Smallest window edge the engine accepts (points).
    public var minimumWindowEdge: Double
    /// Source of each threshold.
    public var sources: [String: Source]
}

/// The device catalog: real devices with sourced geometry (see `Protocol/DEVICES.md`).
public struct DeviceCatalog: Codable, Sendable {
    /// Format version of the catalog file; this code reads version 1.
    public var version: Int
    /// Engine thresholds.
    public var defaults: CatalogDefaults
    /// The devices, in file order.
    public var devices: [Device]

    /// The first impossible figure of a screen: a size that is not positive, a negative or too large inset, a
    /// hinge outside the screen or thicker than it, a cutout or bar outside the screen.
    ///
    /// - Parameter screen: the screen.
    /// - Returns: the field (dotted path) and why it is impossible, or nil when the geometry is possible.
    static func geometryProblem(_ screen: DeviceScreen) -> (field: String, reason: String)? {
        let size = screen.portrait
        func bad(_ v: Double) -> Bool { !v.isFinite }
        if bad(size.width) || size.width <= 0 {
            return ("portrait.width", "\(format(size.width)) is not a width; give a positive number of points")
        }
        if bad(size.height) || size.height <= 0 {
            return ("portrait.height", "\(format(size.height)) is not a height; give a positive number of points")
        }
        if bad(screen.scale) || screen.scale <= 0 {
            return ("scale", "\(format(screen.scale)) is not a scale factor; give a positive number such as 2 or 2.625")
        }
        for orientation in Orientation.allCases {
            let inset = screen.safeArea[orientation]
            let frame = screen.size(in: orientation)
            let path = "safeArea.\(orientation.rawValue)"
            for (name, v) in [
                ("top", inset.top), ("left", inset.left), ("bottom", inset.bottom), ("right", inset.right),
            ]
            where bad(v) || v < 0 {
                return ("\(path).\(name)", "\(format(v)) is negative; an inset is 0 or more points")
            }
            if inset.left + inset.right >= frame.width {
                return (
                    "\(path)",
                    "left + right (\(format(inset.left + inset.right))) leave no width of \(format(frame.width))"
                )
            }
            if inset.top + inset.bottom >= frame.height {
                return (
                    "\(path)",
                    "top + bottom (\(format(inset.top + inset.bottom))) leave no height of \(format(frame.height))"
                )
            }
        }
        if let h = screen.hinge {
            let extent = h.axisInPortrait == .vertical ? size.width : size.height
            let axis = h.axisInPortrait == .vertical ? "width" : "height"
            for (name, w) in [("flatWidth", h.flatWidth), ("halfOpenedWidth", h.halfOpenedWidth)] {
                if bad(w) || w < 0 { return ("hinge.\(name)", "\(format(w)) is negative; a band is 0 or more points") }
                if w >= extent {
                    return (
                        "hinge.\(name)",
                        "\(format(w)) is as thick as the screen's \(axis) (\(format(extent))) or thicker"
                    )
                }
                if h.centerInPortrait - w / 2 < 0 || h.centerInPortrait + w / 2 > extent {
                    return (
                        "hinge.centerInPortrait",
                        "the band \(format(h.centerInPortrait - w / 2))...\(format(h.centerInPortrait + w / 2)) lies outside "
                            + "the screen (0...\(format(extent)) along its \(axis))"
                    )
                }
            }
            if h.centerInPortrait <= 0 || h.centerInPortrait >= extent {
                return (
                    "hinge.centerInPortrait",
                    "\(format(h.centerInPortrait)) is not inside the screen (0...\(format(extent)) along its \(axis))"
                )
            }
        }
        if let island = screen.dynamicIsland {
            let c = island.cutout
            if c.width <= 0 || c.height <= 0 || !Rect(size: size).contains(c) {
                return (
                    "dynamicIsland.cutout",
                    "\(describe(c)) is empty or outside the screen \(format(size.width))x\(format(size.height))"
                )
            }
        }
        if let bar = screen.verticalBar, bar.width < 0 || bar.width >= min(size.width, size.height) {
            return ("verticalBar.width", "\(format(bar.width)) is negative or leaves no screen")
        }
        return nil
    }

    /// Loads and validates `Resources/devices.json` from the module bundle.
    ///
    /// - Returns: the validated catalog.
    ///
    /// - Throws: ``LayoutError`` with code ``LayoutError/Code-swift.struct/catalogUnreadable`` when the file is
    ///   missing or malformed, ``LayoutError/Code-swift.struct/catalogInvalid`` when it breaks a rule in DEVICES.md.
    public static func bundled() throws(LayoutError) -> DeviceCatalog {
        var catalog = try bundledFileOnce.get()
        for device in UserDevices.shared.devices {
            catalog.devices.removeAll { $0.id == device.id }
            catalog.devices.append(device)
        }
        return catalog
    }

    /// Adds a user's own device (`--device-file`) to this process's catalog: from now on ``bundled()`` holds it
    /// (validated like the bundled devices; an id already there is replaced). `livebus layout`, `attach` and
    /// `livebusd` call it at start.
    ///
    /// - Parameter data: UTF-8 JSON of one device object in the catalog's format.
    /// - Returns: the device's id.
    /// - Throws: ``LayoutError`` as ``adding(deviceFile:)``.
    @discardableResult
    public static func register(deviceFile data: Data) throws(LayoutError) -> String {
        let (catalog, id) = try bundled().adding(deviceFile: data)
        if let device = catalog.devices.first(where: { $0.id == id }) { UserDevices.shared.add(device) }
        return id
    }

    /// `devices.json`, read and validated once per process: a client computes a layout per update and a daemon
    /// checks a posture per HELLO, and decoding the 64 KiB file with `JSONDecoder` costs ~150 M instructions
    /// (callgrind, release build), 40 ms or more per call.
    private static let bundledFileOnce: Result<DeviceCatalog, LayoutError> = Result { () throws(LayoutError) in
        try bundledFile()
    }

    /// How many times this process read `devices.json` (tests: once, however many catalogs were asked for).
    static let bundledFileReads = Atomic<Int>(0)

    private static func bundledFile() throws(LayoutError) -> DeviceCatalog {
        bundledFileReads.add(1, ordering: .relaxed)
        guard let url = Bundle.module.url(forResource: "devices", withExtension: "json") else {
            throw LayoutError(
                .catalogUnreadable,
                "devices.json is missing from the LiveBusLayout bundle; rebuild the package"
            )
        }
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw LayoutError(.catalogUnreadable, "cannot read \(url.path): \(error)")
        }
        return try decode(data)
    }

    /// A decoding failure in words, with the JSON path of the field (`screens[0].size`), instead of Foundation's
    /// debug description (review finding: "DecodingError.keyNotFound: … CodingKeys(stringValue: …").
    static func words(_ error: any Error) -> String {
        func path(_ keys: [any CodingKey]) -> String {
            let p = keys.map { k in k.intValue.map { "[\($0)]" } ?? ".\(k.stringValue)" }.joined()
            return p.hasPrefix(".") ? String(p.dropFirst()) : p
        }
        guard let e = error as? DecodingError else { return "\(error)" }
        switch e {
        case .keyNotFound(let key, let c): return "'\(path(c.codingPath + [key]))' is missing"
        case .typeMismatch(let type, let c): return "'\(path(c.codingPath))' is not \(type) as the format says"
        case .valueNotFound(let type, let c): return "'\(path(c.codingPath))' is null; it must be \(type)"
        case .dataCorrupted(let c):
            return c.codingPath.isEmpty ? "not valid JSON" : "'\(path(c.codingPath))': \(c.debugDescription)"
        @unknown default: return "\(error)"
        }
    }

    /// Decodes and validates a catalog from JSON bytes (the `devices.json` format).
    ///
    /// - Parameter data: UTF-8 JSON.
    /// - Returns: the validated catalog.
    /// - Throws: ``LayoutError`` with code `catalog-unreadable` or `catalog-invalid`.
    public static func decode(_ data: Data) throws(LayoutError) -> DeviceCatalog {
        let catalog: DeviceCatalog
        do {
            catalog = try JSONDecoder().decode(DeviceCatalog.self, from: data)
        } catch {
            throw LayoutError(
                .catalogUnreadable,
                "devices.json does not match the format in Protocol/DEVICES.md: \(words(error))"
            )
        }
        try catalog.validate()
        return catalog
    }

    /// This catalog with a user's own device (`--device-file`), in the catalog's device format, validated like
    /// the bundled ones; a device with an id already in the catalog replaces it.
    ///
    /// - Parameter data: UTF-8 JSON of one device object (`{"id", "name", "platform", "unit", "sizeClassRule",
    ///   "screens"}`).
    /// - Returns: the catalog with the device, and the device's id.
    /// - Throws: ``LayoutError`` `catalog-unreadable` when the JSON does not match the format (with the decoder's
    ///   path), `catalog-invalid` naming the field and the reason.
    public func adding(deviceFile data: Data) throws(LayoutError) -> (catalog: DeviceCatalog, id: String) {
        let device: Device
        do {
            device = try JSONDecoder().decode(Device.self, from: data)
        } catch {
            throw LayoutError(
                .catalogUnreadable,
                "the device file does not match the device format in Protocol/DEVICES.md: \(Self.words(error))"
            )
        }
        var copy = self
        copy.devices.removeAll { $0.id == device.id }
        copy.devices.append(device)
        try copy.validate()
        return (copy, device.id)
    }

    /// The device with this id.
    ///
    /// - Parameter id: a catalog id such as `iphone-16-pro`.
    /// - Returns: the device.
    /// - Throws: ``LayoutError`` with code `unknown-device`, listing the valid ids.
    public func device(_ id: String) throws(LayoutError) -> Device {
        guard let device = devices.first(where: { $0.id == id }) else {
            throw LayoutError(
                .unknownDevice,
                "unknown device id '\(id)'"
                    + (NearMatch.closest(id, among: devices.map(\.id), limit: 1).first.map {
                        " (did you mean '\($0)'?)"
                    }
                        ?? "")
                    + "; valid ids: \(devices.map(\.id).joined(separator: ", "))"
            )
        }
        return device
    }

    func validate() throws(LayoutError) {
        guard version == 1 else {
            throw LayoutError(
                .catalogInvalid,
                "catalog version \(version) is not supported; this build reads version 1"
            )
        }
        var seen = Set<String>()
        for device in devices {
            guard seen.insert(device.id).inserted else {
                throw LayoutError(.catalogInvalid, "duplicate device id '\(device.id)'")
            }
            guard device.screen(for: .flat) != nil else {
                throw LayoutError(.catalogInvalid, "device '\(device.id)' has no screen used when flat")
            }
            for screen in device.screens {
                if let problem = Self.geometryProblem(screen) {
                    throw LayoutError(
                        .catalogInvalid,
                        "device '\(device.id)' screen '\(screen.name)' field '\(problem.field)': \(problem.reason)"
                    )
                }
                if let o = screen.windowOrigin {
                    for orientation in Orientation.allCases {
                        let p = o[orientation]
                        let size = screen.size(in: orientation)
                        if !(p.x >= 0 && p.y >= 0 && p.x < size.width && p.y < size.height) {
                            throw LayoutError(
                                .catalogInvalid,
                                "device '\(device.id)' screen '\(screen.name)' field 'windowOrigin.\(orientation.rawValue)': "
                                    + "(\(format(p.x)), \(format(p.y))) is outside the screen \(format(size.width))x\(format(size.height))"
                            )
                        }
                    }
                }
                if device.sizeClassRule == .appleFixed && screen.sizeClasses == nil {
                    throw LayoutError(
                        .catalogInvalid,
                        "device '\(device.id)' screen '\(screen.name)' uses apple-fixed but has no sizeClasses"
                    )
                }
                if screen.usedWhen.contains(.halfOpened) && screen.hinge == nil && screen.noFoldRect != true {
                    throw LayoutError(
                        .catalogInvalid,
                        "device '\(device.id)' screen '\(screen.name)' is used half-opened but has no hinge; give "
                            + "'hinge', or 'noFoldRect': true for a foldable that reports no fold rect"
                    )
                }
                for field in ["portrait", "scale", "safeArea"] where screen.sources[field] == nil {
                    throw LayoutError(
                        .catalogInvalid,
                        "device '\(device.id)' screen '\(screen.name)' has no source for '\(field)'"
                    )
                }
            }
        }
    }
}

/// The devices registered from `--device-file` in this process (see ``DeviceCatalog/register(deviceFile:)``).
private final class UserDevices: @unchecked Sendable {
    static let shared = UserDevices()
    private let lock = NSLock()
    private var list: [Device] = []

    var devices: [Device] { lock.withLock { list } }

    func add(_ device: Device) {
        lock.withLock {
            list.removeAll { $0.id == device.id }
            list.append(device)
        }
    }
}
