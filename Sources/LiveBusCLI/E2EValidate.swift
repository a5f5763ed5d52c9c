import Foundation
import LiveBusActivity
import LiveBusDaemon
import LiveBusLayout
import LiveBusScenario
import LiveBusSimulator
import LiveBusWire

/// `livebus e2e --validate FILE…`: every check a run makes before starting, without starting anything; and which
/// kind of file each one is.
enum E2EValidate {
    /// The kinds of JSON file the project reads.
    enum Kind: String {
        case e2eScenario = "e2e scenario"
        case backendTimeline = "backend timeline"
        case deviceFile = "device file"
        case deviceCatalog = "device catalog"
        case activitySchema = "activity schema"
        case unknown = "unknown"

        /// Where a file of this kind belongs when it is not an e2e scenario.
        var belongs: String {
            switch self {
            case .e2eScenario: "livebus e2e FILE"
            case .backendTimeline:
                "livebusd --scenario FILE (or an e2e scenario's \"backend\": \"FILE\", Protocol/SCENARIOS.md)"
            case .deviceFile:
                "livebus layout --device-file FILE or livebus attach --device-file FILE (Protocol/DEVICES.md)"
            case .deviceCatalog:
                "the bundled catalog, Sources/LiveBusLayout/Resources/devices.json (Protocol/DEVICES.md)"
            case .activitySchema:
                "livebus attach --activity-schema FILE, livebus push --activity-schema FILE (Protocol/ACTIVITY-SCHEMA.md)"
            case .unknown: "nowhere known: an e2e scenario has version, name, duration and sessions (Protocol/E2E.md)"
            }
        }
    }

    /// Which kind of file `bytes` is, by its top-level fields (nil for text that is not a JSON object).
    static func kind(_ bytes: [UInt8]) -> Kind? {
        guard let root = try? LineJSON.parse(bytes), case .object(let members) = root.value else { return nil }
        let keys = Set(members.map(\.key))
        if keys.contains("sessions") { return .e2eScenario }
        if keys.contains("events") || keys.contains("settings") {
            return .backendTimeline
        }
        if keys.contains("attributesType") || keys.contains("contentState") { return .activitySchema }
        if keys.contains("devices") { return .deviceCatalog }
        if keys.contains("screens") { return .deviceFile }
        return .unknown
    }

    /// Reads and checks one e2e scenario as a run does before starting (decoder, devices, postures, OS versions,
    /// the backend timeline it names).
    /// - Throws: `invalidScenario` (exit 2) naming file, line and field; for a file of another kind, what it is
    ///   and where it belongs.
    static func scenario(_ file: String, catalog: DeviceCatalog) throws(CLIError) -> E2EScenario {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw CLIError("invalidScenario", "\(file): cannot read the file", exit: .usage)
        }
        let bytes = Array(data)
        if let k = kind(bytes), k != .e2eScenario, k != .unknown {
            throw CLIError(
                "invalidScenario",
                "\(file): this is a \(k.rawValue), not an e2e scenario",
                recovery: "use it with \(k.belongs)",
                exit: .usage
            )
        }
        let s: E2EScenario
        do {
            s = try E2EScenarioDecoder.decode(bytes, file: file, knownDevices: Set(catalog.devices.map(\.id)))
            try E2ECommand.preflight(s, file: file, catalog: catalog)
        } catch {
            throw CLIError("invalidScenario", error.description, recovery: "see Protocol/E2E.md", exit: .usage)
        }
        if case .timeline(let path) = s.backend {
            do throws(ScenarioError) { _ = try Scenario.load(contentsOf: path) } catch {
                throw CLIError(
                    "invalidScenario",
                    "\(file): field 'backend': the backend timeline \(path) is invalid: \(error)",
                    recovery:
                        "fix the timeline (Protocol/SCENARIOS.md), or check it alone: livebus e2e --validate \(path)",
                    exit: .usage
                )
            }
        }
        return s
    }

    /// Checks one file of another kind as its own reader does; nil when it is valid, else the error.
    static func checkOther(_ k: Kind, file: String, bytes: [UInt8]) -> String? {
        switch k {
        case .backendTimeline:
            do throws(ScenarioError) { _ = try Scenario.load(json: bytes, fileName: file) } catch { return "\(error)" }
        case .activitySchema:
            do throws(ActivitySchemaError) { _ = try ActivitySchema.parse(bytes, file: file) } catch {
                return "\(error)"
            }
        case .deviceFile:
            do throws(LayoutError) { _ = try DeviceCatalog.register(deviceFile: Data(bytes)) } catch {
                return "\(file): \(error.message)"
            }
        case .deviceCatalog, .e2eScenario, .unknown:
            break
        }
        return nil
    }

    /// `--validate`: one line per file, `FILE: valid e2e scenario (…)` or what is wrong; exit 0 only when every file
    /// is a valid e2e scenario, 2 otherwise (a file of another kind is named, checked as that kind, and pointed to
    /// where it belongs).
    static func run(_ files: [String], catalog: DeviceCatalog, json: Bool) throws(CLIError) -> Int32 {
        var lines: [String] = []
        var items: [JSONValue] = []
        var allOK = true
        for file in files {
            var item: [String: JSONValue] = ["file": .string(file)]
            guard let data = FileManager.default.contents(atPath: file) else {
                allOK = false
                lines.append("\(file): cannot read the file")
                item["kind"] = .null
                item["valid"] = .bool(false)
                item["error"] = .string("cannot read the file")
                items.append(.object(item))
                continue
            }
            let bytes = Array(data)
            let k = kind(bytes)
            item["kind"] = k.map { .string($0.rawValue) } ?? .null
            if k == nil || k == .e2eScenario || k == .unknown {
                do throws(CLIError) {
                    let s = try scenario(file, catalog: catalog)
                    let text =
                        "\(file): valid e2e scenario '\(s.name)': \(s.sessions.count) sessions, \(s.actions.count) actions, \(s.assertions.count) assertion steps, backend \(s.backend.daemonArgument ?? "none")\(s.federation.map { ", federation of \($0.natsNodes) NATS nodes (replicas \($0.replicas)) and \($0.daemons.count) daemons" } ?? "")"
                    lines.append(text)
                    item["kind"] = .string(Kind.e2eScenario.rawValue)
                    item["valid"] = .bool(true)
                    item["sessions"] = .number(Double(s.sessions.count))
                    item["actions"] = .number(Double(s.actions.count))
                    item["steps"] = .number(Double(s.assertions.count))
                } catch {
                    allOK = false
                    let prefix = k == .unknown ? "(not a known kind of file) " : ""
                    lines.append("error: \(prefix)\(error.message)")
                    item["valid"] = .bool(false)
                    item["error"] = .string(error.message)
                }
            } else if let k {
                allOK = false
                if let e = checkOther(k, file: file, bytes: bytes) {
                    lines.append("error: \(file): a \(k.rawValue), and invalid: \(e)")
                    item["valid"] = .bool(false)
                    item["error"] = .string(e)
                } else {
                    lines.append("\(file): a valid \(k.rawValue), not an e2e scenario; it belongs to \(k.belongs)")
                    item["valid"] = .bool(true)
                }
                item["belongs"] = .string(k.belongs)
            }
            items.append(.object(item))
        }
        if json {
            Output(json: true).printJSON(
                JSONValue.object(["ok": .bool(allOK), "data": .object(["files": .array(items)])])
            )
        } else {
            for l in lines {
                if l.hasPrefix("error: ") {
                    StandardStream.write(Array((l + "\n").utf8), to: 2)
                } else {
                    print(l)
                }
            }
        }
        return allOK ? 0 : ExitCode.usage.rawValue
    }
}
