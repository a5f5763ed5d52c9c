import Foundation
import LiveBusWire

/// `livebus dashboard`: opens or prints the URL of the daemon's dashboard (`livebusd --http`).
enum DashboardCommand {
    static func run(_ argv: [String], out: Output) throws(CLIError) -> Int32 {
        let a = try Arguments(argv, command: "dashboard", options: ["socket"], flags: ["json", "print"])
        try a.allowPositionals(0)
        let socket = a.value("socket") ?? defaultSocketPath()
        let file = DashboardFile.path(socket: socket)
        // A URL another user put there (a link, their file) is never opened (fresh-user review F1).
        if let e = DashboardFile.readRefusal(socket: socket) { throw e }
        guard let data = FileManager.default.contents(atPath: file),
            let url = String(data: data, encoding: .utf8)?.trimmingCharacters(in: .whitespacesAndNewlines),
            !url.isEmpty
        else {
            throw CLIError(
                "noDashboard",
                "no dashboard URL at \(file): the daemon at \(socket) serves no dashboard",
                recovery: "start it with livebusd --socket \(socket) --http 127.0.0.1:8421",
                exit: .daemonUnreachable
            )
        }
        let env = ProcessInfo.processInfo.environment
        let display = !(env["DISPLAY"] ?? "").isEmpty || !(env["WAYLAND_DISPLAY"] ?? "").isEmpty
        var opened = false
        if display && !a.flag("print") && !a.flag("json") && url.hasPrefix("http://") {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            p.arguments = ["xdg-open", url]
            if (try? p.run()) != nil {
                p.waitUntilExit()
                opened = p.terminationStatus == 0
            }
        }
        out.success(opened ? "opened \(url)" : url, data: .object(["url": .string(url), "opened": .bool(opened)]))
        return 0
    }
}
