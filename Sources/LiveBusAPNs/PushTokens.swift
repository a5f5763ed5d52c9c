import COpenSSL

/// The push tokens LiveBus gives its simulated phones' activities: 32 bytes shown as 64 lower-case hex characters,
/// like ActivityKit's `pushToken` (Apple, "Starting and updating Live Activities with ActivityKit push
/// notifications": "the push token … as a hexadecimal string").
///
/// A per-activity token is SHA-256 of `livebus-activity/<phone name>/<order id>` (UTF-8): ours, so that a phone
/// that reconnects, or a restarted daemon, keeps the token of an activity (Apple's tokens are opaque; this one can
/// be computed: `printf 'livebus-activity/pro/A1001' | sha256sum`).
public enum LiveBusPushTokens {
    /// The token of the activity for `order` on the phone named `phone`.
    public static func activityToken(phone: String, order: String) -> String {
        sha256Hex(Array("livebus-activity/\(phone)/\(order)".utf8))
    }

    /// SHA-256 of `bytes` as 64 lower-case hex characters.
    public static func sha256Hex(_ bytes: [UInt8]) -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        var length: UInt32 = 0
        _ = bytes.withUnsafeBufferPointer { b in EVP_Digest(b.baseAddress, b.count, &digest, &length, EVP_sha256(), nil)
        }
        let hex = Array("0123456789abcdef".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(64)
        for d in digest {
            out.append(hex[Int(d >> 4)])
            out.append(hex[Int(d & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }
}

extension LiveBusPushTokens {
    /// The bundle id of the app every simulated phone runs unless its profile names another (`livebus attach
    /// --bundle-id`): ours, matching the examples' topic `com.example.delivery.push-type.liveactivity`.
    public static let defaultBundleID = "com.example.delivery"

    /// The push-to-start token of the app `bundleID` on the phone named `phone` (ActivityKit's
    /// `Activity<T>.pushToStartToken`, iOS 17.2 and later): SHA-256 of `livebus-push-to-start/<phone>/<bundle id>`
    /// (UTF-8), ours, so that it survives reconnects and daemon restarts as Apple's does across app launches.
    public static func pushToStartToken(phone: String, bundleID: String) -> String {
        sha256Hex(Array("livebus-push-to-start/\(phone)/\(bundleID)".utf8))
    }
}
