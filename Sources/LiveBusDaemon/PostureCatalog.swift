import LiveBusLayout
import LiveBusWire

/// Checks postures and device ids from HELLO and POSTURE frames against the bundled device catalog.
enum PostureCatalog {
    /// The catalog, loaded once per process.
    static let catalog: Result<DeviceCatalog, LayoutError> = Result { () throws(LayoutError) in
        try DeviceCatalog.bundled()
    }

    /// Throws when the device is unknown or the fold state is impossible on it.
    /// - Throws: ``WireError`` `unknownDevice` (listing valid ids) or `invalidPosture`.
    static func check(posture p: PostureBody, device: String?) throws(WireError) {
        guard let device else { return }
        let catalog: DeviceCatalog
        switch Self.catalog {
        case .success(let c): catalog = c
        case .failure(let e): throw WireError(.internalError, "device catalog unavailable: \(e)")
        }
        let d: Device
        do { d = try catalog.device(device) } catch { throw WireError(.unknownDevice, error.message) }
        guard let fold = FoldState(rawValue: p.foldState), d.screen(for: fold) != nil else {
            let valid = d.supportedFoldStates.map(\.rawValue).joined(separator: ", ")
            throw WireError(
                .invalidPosture,
                "\(d.name) cannot be '\(p.foldState)'; its fold states are: \(valid)"
            )
        }
        // Windows and keyboards are checked by the layout engine itself, with the valid range in the message.
        var window: Size?
        if let w = p.windowWidth, let h = p.windowHeight { window = Size(width: w, height: h) }
        let posture = Posture(
            deviceID: device,
            foldState: fold,
            orientation: Orientation(rawValue: p.orientation) ?? .portrait,
            windowSize: window,
            keyboardHeight: p.keyboardHeight ?? 0
        )
        do { _ = try resolve(posture, in: catalog) } catch { throw WireError(.invalidPosture, error.message) }
    }

    /// Throws when the OS version cannot be read.
    /// - Throws: ``WireError`` `invalidBody` naming the field.
    static func check(os: String) throws(WireError) {
        do { _ = try OSVersion.parse(os) } catch {
            throw WireError(.invalidBody, "HELLO body: field 'os': \(error.message)")
        }
    }

    /// Throws when the device id is unknown.
    /// - Throws: ``WireError`` `unknownDevice`.
    static func check(device: String) throws(WireError) {
        guard case .success(let catalog) = Self.catalog else { return }
        do { _ = try catalog.device(device) } catch { throw WireError(.unknownDevice, error.message) }
    }
}

/// The postures a HELLO or POSTURE report named that passed ``Daemon/validate(posture:device:)``, per device: a phone
/// attaching with a posture checked before (most do: a fleet shares a few) skips resolving it in the catalog again
/// (9 k instructions of a connect's 12 k posture check, callgrind, sessions workload). Only passes are kept; a
/// refusal is worded afresh each time. The catalog is fixed for the process's life, so a verdict never goes stale.
///
/// Loop-bound: used on the daemon's loop thread only.
final class PostureVerdicts {
    /// Device id (`""` for none) → postures that passed on it.
    private var passed: [String: Set<PostureBody>] = [:]
    private var count = 0
    /// Postures kept at most (all are forgotten past it, so a client naming ever new window sizes costs nothing).
    static let capacity = 1024

    /// Throws exactly what ``Daemon/validate(posture:device:)`` throws for `p` on `device`.
    /// - Throws: ``WireError`` `invalidPosture` or `unknownDevice`.
    func validate(_ p: PostureBody, device: String?) throws(WireError) {
        let key = device ?? ""
        if passed[key]?.contains(p) == true { return }
        try Daemon.validate(posture: p, device: device)
        if count >= Self.capacity {
            passed.removeAll()
            count = 0
        }
        if passed[key, default: []].insert(p).inserted { count += 1 }
    }
}
