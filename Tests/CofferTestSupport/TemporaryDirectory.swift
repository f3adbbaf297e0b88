import Foundation

/// A fresh folder under the system's temporary directory, removed with
/// everything in it when the object goes away: keep it alive (a stored
/// property or a local) as long as anything uses a file inside it.
public final class TemporaryDirectory: @unchecked Sendable {
    public let url: URL

    /// Creates `<tmp>/<prefix>-<random>` (the prefix names the test area in
    /// a listing of /tmp).
    public init(prefix: String = "coffer-test") {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString.prefix(12))")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit { try? FileManager.default.removeItem(at: url) }

    /// The path of `name` inside the folder (not created).
    public func path(_ name: String) -> String { url.appendingPathComponent(name).path }
}
