import CofferSync
import Foundation

/// Looking at a sync folder without a vault: for `clone DIR` and for
/// `sync DIR` on a machine that has no vault yet.
extension Replication {
    package static func bundlesInFolder(_ dir: String) throws(CofferError) -> [BundleInfo] {
        var out: [BundleInfo] = []
        for path in try syncFiles(in: dir) {
            if let info = try? inspectBundle(at: path) { out.append(info) }
        }
        return out
    }

    package static func newestFullBundle(_ bundles: [BundleInfo]) -> BundleInfo? {
        bundles.filter { $0.header.kind == .full }.max { ($0.header.createdAt, $0.path) < ($1.header.createdAt, $1.path) }
    }

    package static func isFolder(_ dir: String) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) && isDir.boolValue
    }

    @discardableResult
    package static func createSyncFolder(_ dir: String) throws(CofferError) -> Bool {
        if FileManager.default.fileExists(atPath: dir) { return false }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CofferError(.cannotCreate, "cannot create the sync folder \(dir)", hint: "check that its parent folder is writable, or create it yourself")
        }
        return true
    }
}
