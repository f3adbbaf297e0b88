import CofferSync
import Foundation

/// Looking at a sync folder without a vault: for `clone DIR` and for
/// `sync DIR` on a machine that has no vault yet.
extension Vault {
    /// The clear headers of every bundle in `dir` (regular, non-hidden
    /// files), sorted by file name. Files that are not bundles, or whose
    /// header is damaged, are left out. Needs no key.
    public static func bundlesInFolder(_ dir: String) throws(CofferError) -> [BundleInfo] {
        var out: [BundleInfo] = []
        for path in try syncFiles(in: dir) {
            if let info = try? inspectBundle(at: path) { out.append(info) }
        }
        return out
    }

    /// The bundle a clone should start from: the newest full bundle (by
    /// the time in its header, then by path). Nil when there is none.
    public static func newestFullBundle(_ bundles: [BundleInfo]) -> BundleInfo? {
        bundles.filter { $0.header.kind == .full }.max { ($0.header.createdAt, $0.path) < ($1.header.createdAt, $1.path) }
    }

    /// Whether `dir` exists and is a folder.
    public static func isFolder(_ dir: String) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: dir, isDirectory: &isDir) && isDir.boolValue
    }

    /// Creates the sync folder `dir` (and its missing parents); the folder
    /// itself gets mode 0700. Returns false when it already existed.
    @discardableResult
    public static func createSyncFolder(_ dir: String) throws(CofferError) -> Bool {
        if FileManager.default.fileExists(atPath: dir) { return false }
        do {
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw CofferError(.cannotCreate, "cannot create the sync folder \(dir)", hint: "check that its parent folder is writable, or create it yourself")
        }
        return true
    }
}
