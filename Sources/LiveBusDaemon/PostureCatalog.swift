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
